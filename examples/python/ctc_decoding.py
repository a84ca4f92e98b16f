"""CTC greedy and beam search with a token LM on the sample log-probabilities (examples/data/ctc).

    python examples/python/ctc_decoding.py [examples/data]
"""

import pathlib
import sys

import numpy as np

import asrdec

data = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1] / "data")
logprobs = np.load(data / "ctc" / "logprobs.npy")  # [B, T, V+1], blank last; float16 here
lengths = np.load(data / "ctc" / "lengths.npy")
vocab = asrdec.Vocabulary.load(str(data / "tokens.txt"))

greedy = asrdec.CtcGreedyDecoder("cpu").decode(logprobs, lengths)
lm = asrdec.NgramLm.load(str(data / "lm" / "tokens_4gram.arpa.gz"), vocab_size=len(vocab))
beam = asrdec.CtcBeamDecoder("cpu", beam=8, lm=lm, lm_weight=0.3).decode(logprobs, lengths)
for g, b in list(zip(greedy, beam))[:3]:
    print("greedy:", vocab.detokenize(g.tokens))
    print("beam+LM:", vocab.detokenize(b.tokens), f"(score {b.score:.2f} = am {b.am_score:.2f} + lm {b.lm_score:.2f})")
words = asrdec.word_timings(beam[0], vocab, 0.08)
print("words of utterance 0:", [(w.word, round(w.start_seconds, 2), round(w.end_seconds, 2)) for w in words])
