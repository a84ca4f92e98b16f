"""A streaming server loop: utterances join a running batch as lanes free up, each call brings the next chunk of
every utterance in flight, and every final result equals decoding the whole utterance.

    python examples/python/streaming_server.py [examples/data]
"""

import pathlib
import sys

import numpy as np

import asrdec

data = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1] / "data")
model = asrdec.TransducerModel.load(str(data / "rnnt" / "model.safetensors"))
enc_proj = np.load(data / "rnnt" / "enc_proj.npy")
lengths = np.load(data / "rnnt" / "lengths.npy")
chunk, lanes = 7, 5  # frames per call, utterances in flight

decoder = asrdec.TransducerGreedyDecoder(model, max_batch=lanes)
whole = asrdec.TransducerGreedyDecoder(model).decode(enc_proj, lengths)
waiting = list(range(len(lengths)))
offset = {}  # utterance -> frames already sent
finals = {}
while waiting or offset:
    while waiting and len(offset) < lanes:  # a lane is free: the next utterance joins
        offset[waiting.pop(0)] = 0
    rows, sizes = [], []
    piece = np.zeros((len(offset), chunk, enc_proj.shape[2]), dtype=enc_proj.dtype)
    for r, (u, start) in enumerate(offset.items()):
        size = min(chunk, int(lengths[u]) - start)
        piece[r, :size] = enc_proj[u, start:start + size]
        rows.append(asrdec.ChunkRow(u, first=start == 0, last=start + size == lengths[u]))
        sizes.append(size)
    for row, size, hyp in zip(rows, sizes, decoder.decode_chunks(rows, piece, np.array(sizes))):
        offset[row.utterance] += size
        if hyp.is_final:
            finals[row.utterance] = hyp
            del offset[row.utterance]
same = sum(finals[u].tokens == whole[u].tokens and finals[u].score == whole[u].score for u in finals)
print(f"{len(finals)} utterances streamed in chunks of {chunk} frames over {lanes} lanes; "
      f"{same} of {len(finals)} equal to whole-utterance decoding")
sys.exit(0 if same == len(finals) == len(lengths) else 1)
