"""Lexicon and word-level LM for WFST (TLG) decoding of the CTC sample (examples/data/wfst).

- lexicon.txt: every word of the King James Bible (training text and the 40 held-out sentences alike, so the
  references have no out-of-vocabulary word), spelled with the samples' BPE model: `word piece piece ...`, pieces
  as in tokens.txt, words in byte order.
- words_3gram.arpa.gz: a word-level 3-gram trained with IRSTLM on the training text only (the sample sentences
  are held out), improved Kneser-Ney, singletons pruned, then entropy-pruned to keep the file near 2 MB. A
  lexicon word that occurs only in the held-out sentences is scored as <unk> by the graph builder.
"""

import os

from . import lm

ORDER = 3
PRUNE = "1e-7"


def build_sample_wfst(out, train_lines, test_lines, sp):
    folder = os.path.join(out, "wfst")
    os.makedirs(folder, exist_ok=True)
    vocabulary = sorted({w for line in train_lines + test_lines for w in line.split()})
    lexicon = os.path.join(folder, "lexicon.txt")
    with open(lexicon, "w") as f:
        for word in vocabulary:
            f.write(word + " " + " ".join(sp.encode(word, out_type=str)) + "\n")
    arpa = os.path.join(folder, "words_3gram.arpa.gz")
    clamped = lm.build_arpa(train_lines, ORDER, arpa, prune=PRUNE)
    train_words = {w for line in train_lines for w in line.split()}
    unseen = sum(1 for w in vocabulary if w not in train_words)
    return ["wfst: %s, %d words (%d only in the held-out sentences); %s, %d-gram, %.2f MB, "
            "%d positive log probabilities written as 0" % (
                lexicon, len(vocabulary), unseen, arpa, ORDER, os.path.getsize(arpa) / 1e6, clamped)]
