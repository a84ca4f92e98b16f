"""File writers. Everything goes through here so that byte-level
determinism (explicit little-endian dtypes, fixed JSON formatting, '\n'
line ends) is decided in one place."""

import json
import os

import numpy as np


def write_npy(path, array, dtype):
    arr = np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<"))
    with open(path, "wb") as f:
        np.save(f, arr, allow_pickle=False)


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")


def write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


def write_expected(path, outputs):
    """One JSON object per utterance. Scores are written with Python's
    shortest round-trip float repr, so a reader gets the exact double."""
    lines = []
    for out in outputs:
        obj = {"tokens": [int(t) for t in out["tokens"]],
               "timestamps": [int(t) for t in out["timestamps"]]}
        if "durations" in out:
            obj["durations"] = [int(d) for d in out["durations"]]
        obj["score"] = float(out["score"])
        lines.append(json.dumps(obj))
    write_lines(path, lines)


def file_sizes(folder):
    sizes = {}
    for root, _, files in os.walk(folder):
        for name in sorted(files):
            p = os.path.join(root, name)
            sizes[os.path.relpath(p, folder)] = os.path.getsize(p)
    return sizes
