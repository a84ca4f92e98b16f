"""Builds a CTC decoding graph (TLG) from the sample lexicon and word 3-gram, then decodes the sample CTC outputs
through it with timed words.

    python examples/python/wfst_decoding.py [examples/data] [output folder]
"""

import pathlib
import sys
import tempfile

import numpy as np

import asrdec

data = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1] / "data")
out = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp())
graph, words = out / "TLG.fst", out / "words.txt"
summary = asrdec.build_ctc_graph(str(data / "tokens.txt"), str(data / "wfst" / "lexicon.txt"),
                                 str(data / "wfst" / "words_3gram.arpa.gz"), str(graph), str(words))
print(summary)

vocab = asrdec.Vocabulary.load(str(data / "tokens.txt"))
table = asrdec.SymbolTable.load(str(words))
decoder = asrdec.WfstDecoder(asrdec.WfstGraph.load(str(graph)), "cpu", beam=17.0,
                             word_start_columns=vocab.word_start_ids())
results = decoder.decode(np.load(data / "ctc" / "logprobs.npy"), np.load(data / "ctc" / "lengths.npy"))
for r in results[:3]:
    timed = asrdec.word_timings(r, table, 0.08)
    print(asrdec.join_words(timed), f"(cost {r.cost:.2f})", [(w.word, w.start_frame, w.end_frame) for w in timed][:3])
