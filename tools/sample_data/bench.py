"""Benchmark-size transducers (V=1024, E=P=J=640) with matching inputs.

Same format, construction and checks as the shipped samples; only the
sizes differ, and the planted token sequences are random (Zipf-distributed
ids, so frequent tokens dominate as with a real BPE vocabulary) because a
benchmark needs no text; they are written as ref_tokens.txt (one utterance
per line, space-separated ids). Not for the repository: ~80 MB.
"""

import os
import time

import numpy as np

from . import errors, generate, writers
from . import transducer_model as tm
from . import transducer_sim as ts

VOCAB = 1024
DIM = 640
UTTERANCES = 32
FRAMES = (108, 240)
FRAMES_PER_TOKEN = 3.1


def _token_sequences(rng):
    ranks = np.arange(1, VOCAB)
    p = 1.0 / (ranks + 10.0)
    p /= p.sum()
    seqs = []
    for _ in range(UTTERANCES):
        n = int(round(rng.uniform(*FRAMES) / FRAMES_PER_TOKEN))
        seqs.append([int(t) for t in rng.choice(ranks, size=n, p=p)])
    return seqs


def _confusions(rng):
    """Without piece strings, "similar" is an arbitrary fixed neighbourhood
    of six ids per token."""
    table = [[]]
    for t in range(1, VOCAB):
        cand = rng.choice(np.arange(1, VOCAB - 1), size=6, replace=False)
        table.append([int(c) + int(c >= t) for c in cand])
    return table


def build_bench(out, seed):
    lines = []
    rng = generate.keyed_rng(seed, "bench-text")
    seqs = _token_sequences(rng)
    similar = _confusions(rng)
    em = errors.ErrorModel(similar=similar, insertable=list(range(1, 101)))
    for model_type in ("rnnt", "tdt"):
        t0 = time.time()
        folder = os.path.join(out, model_type)
        os.makedirs(folder, exist_ok=True)
        model = tm.random_model(model_type, VOCAB, DIM, DIM, DIM,
                                generate.keyed_rng(seed, "bench-model",
                                                   model_type),
                                confusions=similar)

        base = errors.plan_errors(
            seqs, generate.keyed_rng(seed, "bench-errors", model_type), em)
        res = ts.simulate(
            model, base,
            lambda ev, rng_: errors.relabel(ev, rng_, em),
            lambda u, a: generate.keyed_rng(seed, "bench-frames", model_type,
                                            u, a))
        writers.write_lines(os.path.join(folder, "ref_tokens.txt"),
                            [" ".join(map(str, q)) for q in seqs])
        lines += generate._finish_transducer(folder, model, res, None, seqs,
                                             None, "bench-" + model_type)
        lines.append("  time %.1f s" % (time.time() - t0))
    return lines
