"""The Triton python-backend model of every asrdec model in serving/models (each model's 1/model.py links here):
asrdec_triton.StreamingModel when the config has a sequence batcher, else asrdec_triton.OfflineModel. The parameter
python_path (written by scripts/serve) puts asrdec_triton and the environment holding asrdec on sys.path; the python
backend's stub does not take PYTHONPATH."""

import json
import sys


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        paths = config.get("parameters", {}).get("python_path", {}).get("string_value", "")
        for path in reversed([p for p in paths.split(":") if p]):
            if path not in sys.path:
                sys.path.insert(0, path)
        import asrdec_triton

        model = asrdec_triton.StreamingModel if "sequence_batching" in config else asrdec_triton.OfflineModel
        self.model = model()
        self.model.initialize(args)

    def execute(self, requests):
        return self.model.execute(requests)

    def finalize(self):
        if hasattr(self.model, "finalize"):
            self.model.finalize()
