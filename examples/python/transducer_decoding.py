"""RNN-T greedy decoding (label looping) and ALSD++ beam search on the sample encoder projections.

    python examples/python/transducer_decoding.py [examples/data]
"""

import pathlib
import sys

import numpy as np

import asrdec

data = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1] / "data")
model = asrdec.TransducerModel.load(str(data / "rnnt" / "model.safetensors"), device="cpu")
enc_proj = np.load(data / "rnnt" / "enc_proj.npy")  # [B, T, J] projected encoder output
lengths = np.load(data / "rnnt" / "lengths.npy")
vocab = asrdec.Vocabulary.load(str(data / "tokens.txt"))
print(model)

greedy = asrdec.TransducerGreedyDecoder(model, algorithm="label_looping").decode(enc_proj, lengths)
nbest = asrdec.TransducerBeamDecoder(model, algorithm="alsd++", beam=4).decode_nbest(enc_proj, lengths)
for g, n in list(zip(greedy, nbest))[:3]:
    print("greedy:", vocab.detokenize(g.tokens), f"({g.score:.2f})")
    for rank, h in enumerate(n[:2]):
        print(f"  beam #{rank}:", vocab.detokenize(h.tokens), f"({h.score:.2f})")
