"""What a decode() call costs from Python beyond the same call made in C++, at batch 1 (issue goal: < 20 us).

Both loops run in this process on the same decoder and tensors: `_time_cpp_decode` makes the calls in C++ on
tensors converted once; the Python loop makes them through the binding (DLPack import of both tensors, argument
parsing, GIL release, result conversion). Medians of repeats; writes JSON when given a path.

    python python/bench/call_overhead.py [examples/data] [out.json]
"""

import json
import pathlib
import platform
import statistics
import sys
import time

import numpy as np

import asrdec
from asrdec import _asrdec

data = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2] / "examples" / "data")
CALLS, REPEATS = 2000, 15


def measure(name, decoder, x, lengths):
    decoder.decode(x, lengths)  # warm-up: buffers sized
    cpp, py = [], []
    for _ in range(REPEATS):
        cpp.append(_asrdec._time_cpp_decode(decoder, x, lengths, CALLS) / CALLS)
        start = time.perf_counter()
        for _ in range(CALLS):
            decoder.decode(x, lengths)
        py.append((time.perf_counter() - start) / CALLS)
    row = {"case": name, "cpp_us": statistics.median(cpp) * 1e6, "python_us": statistics.median(py) * 1e6}
    row["overhead_us"] = row["python_us"] - row["cpp_us"]
    row["ratio"] = row["python_us"] / row["cpp_us"]
    print(f"{name}: C++ {row['cpp_us']:.2f} us, Python {row['python_us']:.2f} us, "
          f"overhead {row['overhead_us']:.2f} us ({row['ratio']:.2f}x)")
    return row


logprobs = np.ascontiguousarray(np.load(data / "ctc" / "logprobs.npy")[:1].astype(np.float32))
ctc_lengths = np.load(data / "ctc" / "lengths.npy")[:1]
model = asrdec.TransducerModel.load(str(data / "rnnt" / "model.safetensors"))
enc = np.ascontiguousarray(np.load(data / "rnnt" / "enc_proj.npy")[:1])
enc_lengths = np.load(data / "rnnt" / "lengths.npy")[:1]
rows = [
    measure("ctc_greedy/cpu/B=1", asrdec.CtcGreedyDecoder("cpu", threads=1), logprobs, ctc_lengths),
    measure("rnnt_label_looping/cpu/B=1", asrdec.TransducerGreedyDecoder(model, threads=1), enc, enc_lengths),
]
if len(sys.argv) > 2:
    pathlib.Path(sys.argv[2]).write_text(json.dumps({
        "context": {"asrdec": asrdec.__version__, "build": asrdec.build_info(), "python": platform.python_version(),
                    "machine": platform.processor() or platform.machine(), "calls": CALLS, "repeats": REPEATS},
        "benchmarks": rows}, indent=2) + "\n")
