"""CTC beam search with an n-gram LM against flashlight-text's LexiconFreeDecoder on random inputs.

With merge_before_prune (flashlight merges equal hypotheses, then keeps the beam), its per-frame token pruning
(beam_size_token) and threshold, and max or log-add merging, asrdec's CTC beam search must find flashlight's
hypotheses with its scores. flashlight-text's wheels carry no KenLM, so its LM here is a flashlight ``LM``
subclass that asks asrdec's NgramLm one token at a time (the scores the two decoders fuse are the same numbers);
its states are flashlight's own prefix trie (``LMState.child``), so flashlight merges hypotheses by prefix.
"""

import os
import random

import numpy as np
import pytest

import asrdec

fl = pytest.importorskip("flashlight.lib.text.decoder",
                         reason="flashlight-text is not installed (pip install flashlight-text)")


class AsrdecLm(fl.LM):
    """flashlight's LM interface over an asrdec NgramLm; scores are natural logs, as asrdec fuses them."""

    def __init__(self, lm):
        fl.LM.__init__(self)
        self.lm = lm
        self.info = {}  # flashlight state -> (asrdec state, score of the token that led to it)

    def start(self, start_with_nothing):
        state = fl.LMState()
        self.info[state] = (asrdec.NgramLm.bos_state(), 0.0)
        return state

    def score(self, state, token):
        child = state.child(token)
        if child not in self.info:
            score, nxt = self.lm.score(self.info[state][0], token)
            self.info[child] = (nxt, score)
        return child, self.info[child][1]

    def finish(self, state):
        return state, self.lm.final_score(self.info[state][0])


def random_arpa(path, vocab, rng):
    """A random token-level trigram ARPA over `vocab` tokens (token t is the character U+(t+100))."""
    sym = [chr(t + 100) for t in range(vocab)]
    unigrams = sym + ["<s>", "</s>", "<unk>"]
    bigrams = {(a, b) for a in sym + ["<s>"] for b in sym + ["</s>"] if rng.random() < 0.5}
    trigrams = {(a, b, c) for (a, b) in bigrams if b != "</s>" for c in sym + ["</s>"] if rng.random() < 0.3}
    bigram_contexts = {(a, b) for (a, b, _) in trigrams}
    lines = ["\\data\\", "ngram 1=%d" % len(unigrams), "ngram 2=%d" % len(bigrams), "ngram 3=%d" % len(trigrams), "",
             "\\1-grams:"]
    for w in unigrams:
        prob = -99.0 if w == "<s>" else rng.uniform(-2.5, -0.3)
        lines.append("%.4f\t%s\t%.4f" % (prob, w, rng.uniform(-0.8, 0.0)) if w != "</s>" else "%.4f\t%s" % (prob, w))
    lines += ["", "\\2-grams:"]
    for a, b in sorted(bigrams):
        if (a, b) in bigram_contexts:
            lines.append("%.4f\t%s %s\t%.4f" % (rng.uniform(-2.0, -0.1), a, b, rng.uniform(-0.6, 0.0)))
        else:
            lines.append("%.4f\t%s %s" % (rng.uniform(-2.0, -0.1), a, b))
    lines += ["", "\\3-grams:"]
    for a, b, c in sorted(trigrams):
        lines.append("%.4f\t%s %s %s" % (rng.uniform(-1.5, -0.05), a, b, c))
    lines += ["", "\\end\\", ""]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def collapse(labels, blank):
    out, previous = [], blank
    for label in labels:
        if label != blank and label != previous:
            out.append(label)
        previous = label
    return out


def flashlight_nbest(logprobs, lm, beam, beam_size_token, threshold, lm_weight, log_add):
    T, C = logprobs.shape
    blank = C - 1
    options = fl.LexiconFreeDecoderOptions(beam, beam_size_token, threshold, lm_weight, 0.0, log_add,
                                           fl.CriterionType.CTC)
    decoder = fl.LexiconFreeDecoder(options, lm, blank, blank, [])  # silence = blank with a 0 silence score
    emissions = np.ascontiguousarray(logprobs, dtype=np.float32)
    results = decoder.decode(emissions.ctypes.data, T, C)
    # tokens holds the start (silence), one label per frame, and the end (silence).
    return [(collapse(list(r.tokens)[1:-1], blank), r.score) for r in results]


@pytest.mark.parametrize("log_add", [False, True], ids=["max", "log_add"])
def test_ctc_beam_with_lm_equals_flashlight(tmp_path, log_add):
    seed = int(os.environ.get("ASRDEC_TEST_SEED", random.randrange(2**32)))
    print("random seed %d (replay with ASRDEC_TEST_SEED=%d)" % (seed, seed))
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    compared = changed = 0
    for case in range(40):
        vocab = rng.randint(2, 8)
        C = vocab + 1
        T = rng.randint(1, 25)
        path = str(tmp_path / ("lm%d.arpa" % case))
        random_arpa(path, vocab, rng)
        lm = asrdec.NgramLm.load(path, vocab_size=vocab)
        beam = rng.randint(1, 12)
        beam_size_token = rng.choice([C, rng.randint(1, C)])
        threshold = rng.choice([25.0, 8.0, 3.0])
        lm_weight = rng.choice([0.0, 0.3, 0.8, 1.5])
        logits = nprng.normal(0.0, 2.0, size=(T, C))
        logprobs = (logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))).astype(np.float32)
        want = flashlight_nbest(logprobs, AsrdecLm(lm), beam, beam_size_token, threshold, lm_weight, log_add)
        decoder = asrdec.CtcBeamDecoder("cpu", beam=beam, beam_threshold=threshold, merge_before_prune=True,
                                        beam_size_token=beam_size_token if beam_size_token < C else 0,
                                        log_add=log_add, lm=lm, lm_weight=lm_weight)
        got = decoder.decode_nbest(logprobs[None], np.array([T], dtype=np.int32))[0]
        what = "case %d: V=%d T=%d beam=%d beam_size_token=%d threshold=%g lm_weight=%g" % (
            case, vocab, T, beam, beam_size_token, threshold, lm_weight)
        assert want, what
        assert len(got) == len(want), "%s: %d hypotheses, flashlight %d" % (what, len(got), len(want))
        n = len(want)
        for k in range(n):
            assert got[k].tokens == want[k][0], "%s, hypothesis %d: %s vs flashlight %s" % (
                what, k, got[k].tokens, want[k][0])
            assert abs(got[k].score - want[k][1]) <= 1e-4 * max(1.0, abs(want[k][1])), "%s, hypothesis %d: %r vs %r" % (
                what, k, got[k].score, want[k][1])
        compared += n
        plain = asrdec.CtcBeamDecoder("cpu", beam=beam, merge_before_prune=True).decode(
            logprobs[None], np.array([T], dtype=np.int32))[0]
        changed += plain.tokens != got[0].tokens
    assert compared > 100
    assert changed > 0, "the LM never changed a transcript"
