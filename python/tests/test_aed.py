"""AED decoding from Python: the built-in Transformer step's results equal the CLI's JSON on the sample, and a
decoder step written in Python (a table model) gives the results of a plain beam search written here."""

import math
import os
import random

import numpy as np
import pytest

import asrdec
from conftest import DATA
from test_parity import expect_results

AED = DATA / "aed"
LM = DATA / "lm" / "tokens_4gram.arpa.gz"


@pytest.fixture(scope="module")
def sample():
    step = asrdec.TransformerDecoderStep.load(str(AED / "model.safetensors"))
    return step, np.load(AED / "encoder.npy"), np.load(AED / "lengths.npy")


@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_transformer_step_equals_the_cli(cli, sample, search):
    step, encoder, lengths = sample
    specials = ["<|startoftranscript|>", "<|endoftext|>", "<|transcribe|>"]
    tokens = [line.rstrip("\n") for line in open(DATA / "tokens.txt", encoding="utf-8")]
    vocab = asrdec.Vocabulary(tokens + specials)
    args = ["decode", "aed", "--model", AED / "model.safetensors", "--encoder", AED / "encoder.npy", "--lengths",
            AED / "lengths.npy", "--vocab", DATA / "tokens.txt", "--algo", search, "--lm", LM, "--lm-weight", "0.5",
            "--length-penalty", "1"]
    kwargs = dict(search=search, eos_id=step.eos_id, length_penalty=1.0,
                  lm=asrdec.NgramLm.load(str(LM), vocab_size=step.vocab_size), lm_weight=0.5)
    if search == "beam":
        args += ["--beam", "3", "--nbest", "3"]
        kwargs["beam_size"] = 3
    decoder = asrdec.AedDecoder(step, **kwargs)
    nbest = decoder.decode_nbest(encoder, lengths, [step.default_prompt])
    best = [l[0] for l in nbest]
    expect_results(best, cli(*args), vocab, "aed " + search, nbest=nbest if search == "beam" else None)


class TableStep:
    """A decoder step in Python: log-probabilities from a hash of (utterance, prompt, prefix); it follows its rows'
    parents to know each row's prefix, as an engine's cache would."""

    vocab_size = 7
    max_positions = 12
    eos = 5

    def __init__(self, seed):
        self.seed = seed
        self.calls = 0

    def logprobs(self, utterance, prompt, prefix):
        rng = random.Random(hash((self.seed, utterance, tuple(prompt), tuple(prefix))))
        logits = [rng.gauss(0.0, 2.0) for _ in range(self.vocab_size)]
        logits[self.eos] += 0.7 * len(prefix) - 2.0
        top = max(logits)
        total = math.log(sum(math.exp(x - top) for x in logits))
        return [x - top - total for x in logits]

    def start(self, encoder, encoder_lengths, prompts):
        assert np.shape(encoder)[0] == len(prompts) == len(encoder_lengths)
        self.prompts = [list(p) for p in prompts]
        self.rows = [(b, []) for b in range(len(prompts))]
        return np.array([self.logprobs(b, self.prompts[b], []) for b in range(len(prompts))], dtype=np.float32)

    def step(self, parents, tokens, positions, active):
        self.calls += 1
        rows, out = [], np.zeros((len(parents), self.vocab_size), dtype=np.float32)
        for r in range(len(parents)):
            if not active[r]:
                rows.append(None)
                continue
            utterance, prefix = self.rows[parents[r]]
            prefix = prefix + [int(tokens[r])]
            assert positions[r] == len(self.prompts[utterance]) + len(prefix) - 1
            rows.append((utterance, prefix))
            out[r] = self.logprobs(utterance, self.prompts[utterance], prefix)
        self.rows = rows
        return out


def plain_beam_search(step, utterance, prompt, beam, limit):
    """Beam search written for clarity: every extension of every live hypothesis, finished ones carried as they are,
    ranked by score (length penalty 0), ties by (parent, token)."""
    f32 = np.float32
    hyps = [([], f32(0.0), False)]
    while any(not done for _, _, done in hyps):
        candidates = []
        for k, (tokens, score, done) in enumerate(hyps):
            if done:
                candidates.append((score, k, -1))
                continue
            lp = np.array(step.logprobs(utterance, prompt, tokens), dtype=np.float32)
            candidates += [(f32(score + lp[v]), k, v) for v in range(step.vocab_size)]
        candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
        next_hyps = []
        for score, k, v in candidates[:beam]:
            tokens = hyps[k][0]
            if v < 0:
                next_hyps.append(hyps[k])
            elif v == step.eos:
                next_hyps.append((tokens, score, True))
            else:
                next_hyps.append((tokens + [v], score, len(tokens) + 1 >= limit))
        hyps = next_hyps
    return sorted(hyps, key=lambda h: -h[1])


def test_a_python_step_gives_a_plain_beam_searchs_results():
    seed = int(os.environ.get("ASRDEC_TEST_SEED", random.randrange(2**32)))
    print("random seed %d (replay with ASRDEC_TEST_SEED=%d)" % (seed, seed))
    rng = random.Random(seed)
    calls = 0
    for case in range(10):
        step = TableStep(rng.randrange(2**32))
        batch = rng.randint(1, 4)
        beam = rng.randint(1, 4)
        prompts = [[rng.randrange(5)] for _ in range(batch)]
        encoder = np.zeros((batch, 3, 2), dtype=np.float32)
        decoder = asrdec.AedDecoder(step, search="beam", beam_size=beam, eos_id=TableStep.eos)
        got = decoder.decode_nbest(encoder, np.full(batch, 3), prompts)
        calls += step.calls  # none when every hypothesis ends at the first token (end of sentence)
        for b in range(batch):
            want = plain_beam_search(step, b, prompts[b], beam, TableStep.max_positions - 1)
            assert [h.tokens for h in got[b]] == [w[0] for w in want], f"case {case}, utterance {b}"
            assert np.allclose([h.score for h in got[b]], [w[1] for w in want], rtol=1e-5, atol=1e-5)
    assert calls > 0, "the Python step was never called"


def test_bad_steps_and_arguments_raise_typed_errors(sample):
    step, encoder, lengths = sample
    with pytest.raises(asrdec.InvalidArgument, match="eos_id"):
        asrdec.AedDecoder(step)  # no eos_id
    with pytest.raises(TypeError, match="beam"):
        asrdec.AedDecoder(step, eos_id=step.eos_id, beam=4)  # the field is beam_size

    class Wrong(TableStep):
        def start(self, encoder, encoder_lengths, prompts):
            return np.zeros((len(prompts), 3), dtype=np.float32)

    decoder = asrdec.AedDecoder(Wrong(1), eos_id=TableStep.eos)
    with pytest.raises(asrdec.InvalidArgument, match=r"start\(\) must return scores \[2, 7\]"):
        decoder.decode(np.zeros((2, 3, 2), dtype=np.float32), np.array([3, 3]), [[0]])

    class Fails(TableStep):
        def step(self, parents, tokens, positions, active):
            raise RuntimeError("engine failed")

    decoder = asrdec.AedDecoder(Fails(1), eos_id=TableStep.eos, search="beam", beam_size=2)
    with pytest.raises(RuntimeError, match="engine failed"):
        decoder.decode(np.zeros((1, 3, 2), dtype=np.float32), np.array([3]), [[0]])
