#!/usr/bin/env python3
"""Blank-first copies of the samples, for the test that a model whose blank is column 0 (wav2vec2's and icefall's
layout) decodes with the sample LM and phrase list exactly as its blank-last original.

    blank_first_copy.py <examples/data> <output dir>

Writes into the output dir:
- ctc_logprobs.npy: the CTC sample's log-probabilities with the last column (the blank) moved first;
- rnnt.safetensors, tdt.safetensors: the transducer samples with blank_id 0: the rows of joint.out.weight,
  joint.out.bias and the predictor's embedding tables that belong to token columns rotate by one (the blank row
  first, token t at column t + 1); duration columns stay where they are;
- tokens.txt: "<blk>" followed by the sample's tokens, so line numbers are the copy's columns.
The Python standard library is enough: every change is a rotation of whole rows, done on the files' bytes
(.npy: a header, then C-order data; safetensors: an 8-byte header length, a JSON header, the data)."""

import ast
import json
import struct
import sys
from pathlib import Path

ITEM_BYTES = {"F32": 4, "F16": 2, "BF16": 2}


def blank_first_rows(blob, row_bytes, vocab):
    """Rows 0..V (tokens, then the blank) of a row-major table become the blank, then the tokens; later rows
    (TDT durations) stay."""
    tokens, blank, rest = blob[: vocab * row_bytes], blob[vocab * row_bytes : (vocab + 1) * row_bytes], blob[
        (vocab + 1) * row_bytes :
    ]
    return blank + tokens + rest


def blank_first_npy(source, target):
    """The last column of every row of a C-order .npy array moved first."""
    raw = Path(source).read_bytes()
    assert raw[:6] == b"\x93NUMPY", f"{source} is not a .npy file"
    size_bytes = 2 if raw[6] == 1 else 4
    header_len = int.from_bytes(raw[8 : 8 + size_bytes], "little")
    data_start = 8 + size_bytes + header_len
    header = ast.literal_eval(raw[8 + size_bytes : data_start].decode("latin1"))
    assert not header["fortran_order"] and header["descr"] in ("<f4", "<f2"), header
    item = int(header["descr"][2])
    row = header["shape"][-1] * item
    data = raw[data_start:]
    rows = (data[i : i + row] for i in range(0, len(data), row))
    Path(target).write_bytes(raw[:data_start] + b"".join(r[-item:] + r[:-item] for r in rows))


def blank_first_safetensors(source, target):
    raw = Path(source).read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    metadata = header.pop("__metadata__")
    vocab = int(metadata["vocab_size"])
    assert int(metadata["blank_id"]) == vocab, "the samples put the blank last"
    data = raw[8 + size :]
    out_header = {"__metadata__": dict(metadata, blank_id="0")}
    chunks, offset = [], 0
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        blob = data[begin:end]
        if name in ("joint.out.weight", "joint.out.bias", "predictor.embedding.weight") or name.startswith(
            "predictor.embeds."
        ):
            width = entry["shape"][1] if len(entry["shape"]) > 1 else 1
            blob = blank_first_rows(blob, width * ITEM_BYTES[entry["dtype"]], vocab)
        out_header[name] = dict(entry, data_offsets=[offset, offset + len(blob)])
        chunks.append(blob)
        offset += len(blob)
    encoded = json.dumps(out_header).encode()
    Path(target).write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(chunks))


def main():
    data, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    blank_first_npy(data / "ctc" / "logprobs.npy", out / "ctc_logprobs.npy")
    for model in ("rnnt", "tdt"):
        blank_first_safetensors(data / model / "model.safetensors", out / f"{model}.safetensors")
    tokens = (data / "tokens.txt").read_text(encoding="utf-8")
    (out / "tokens.txt").write_text("<blk>\n" + tokens, encoding="utf-8")


if __name__ == "__main__":
    main()
