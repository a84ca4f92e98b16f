"""The Triton streaming model's logic (serving/asrdec_triton.py) without Triton: a stand-in for the python
backend's utilities feeds it chunked requests of the CTC sample, and its responses must hold the decoder's results
so far and, in ENDPOINT, the endpointing rule that detect_endpoint gives for them (the tests under serving/ run the
same models in a real Triton server where one is installed)."""

import json
import sys
import types

import numpy as np

import asrdec
from conftest import DATA

SERVING = DATA.parents[1] / "serving"


class _Tensor:
    def __init__(self, name, array):
        self.name, self.array = name, np.asarray(array)

    def as_numpy(self):
        return self.array


class _Response:
    def __init__(self, output_tensors, error=None):
        self.outputs = {t.name: t.array for t in output_tensors}
        self.error = error


def _stub_backend(monkeypatch):
    """A minimal triton_python_backend_utils: tensors by name, responses, errors."""
    stub = types.ModuleType("triton_python_backend_utils")
    stub.Tensor = _Tensor
    stub.InferenceResponse = _Response
    stub.TritonError = lambda message: message
    stub.get_input_tensor_by_name = lambda request, name: request[name]
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", stub)
    monkeypatch.syspath_prepend(str(SERVING))
    sys.modules.pop("asrdec_triton", None)
    import asrdec_triton
    return asrdec_triton


def _request(frames, start, end, corrid):
    return {"LOGPROBS": _Tensor("LOGPROBS", frames[None]), "START": _Tensor("START", [[int(start)]]),
            "END": _Tensor("END", [[int(end)]]), "CORRID": _Tensor("CORRID", [[corrid]])}


def test_streaming_model_reports_results_and_endpoints(monkeypatch, ctc_input):
    asrdec_triton = _stub_backend(monkeypatch)
    config = {"max_batch_size": 8, "sequence_batching": {"max_sequence_idle_microseconds": 5000000},
              "parameters": {"decoder": {"string_value": "ctc_greedy"},
                             "endpoint_silence": {"string_value": "0.4"},
                             "endpoint_max_length": {"string_value": "3.2"}}}
    model = asrdec_triton.StreamingModel()
    model.initialize({"model_config": json.dumps(config), "model_instance_kind": "CPU"})
    x, lengths = ctc_input
    utterances = [x[b, :lengths[b]].astype(np.float32) for b in range(6)]
    whole = asrdec.CtcGreedyDecoder("cpu").decode(x[:6], lengths[:6])
    reference = asrdec.CtcGreedyDecoder("cpu")
    rules = asrdec.EndpointConfig()
    rules.rule2.min_trailing_silence = 0.4
    rules.rule3.min_utterance_length = 3.2
    # Every call carries the next 4 frames of each of the six sequences, as the sequence batcher would.
    offsets = [0] * len(utterances)
    seen = set()
    while any(o < len(u) or o == 0 for o, u in zip(offsets, utterances)):
        requests, rows, pieces, order = [], [], [], []
        for b, u in enumerate(utterances):
            if offsets[b] >= len(u) and offsets[b] > 0:
                continue
            piece = u[offsets[b]:offsets[b] + 4]
            first, last = offsets[b] == 0, offsets[b] + len(piece) >= len(u)
            requests.append(_request(piece, first, last, 100 + b))
            rows.append(asrdec.ChunkRow(b, first, last))
            pieces.append(piece)
            order.append(b)
            offsets[b] += len(piece)
        responses = model.execute(requests)
        padded = np.zeros((len(pieces), 4, x.shape[2]), np.float32)
        for r, p in enumerate(pieces):
            padded[r, :len(p)] = p
        want = reference.decode_chunks(rows, padded, [len(p) for p in pieces])
        for response, hypothesis, b in zip(responses, want, order):
            assert response.error is None, response.error
            assert response.outputs["TOKENS"][0].tolist() == hypothesis.tokens
            rule = asrdec.detect_endpoint(rules, hypothesis, offsets[b])
            assert response.outputs["ENDPOINT"][0][0] == rule, (b, offsets[b])
            seen.add(rule)
            if rows[order.index(b)].last:
                assert response.outputs["TOKENS"][0].tolist() == whole[b].tokens
    assert seen >= {0, 2}, seen  # speech goes on, then a pause ends it by rule 2
    assert model.frames == {} and model.last_seen == {}
