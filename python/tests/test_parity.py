"""Every decoder family's Python results on examples/data equal the CLI's JSON, field for field (scores as float32,
bit for bit)."""

import filecmp

import numpy as np
import pytest

import asrdec
from conftest import DATA, transducer_input

LM = DATA / "lm" / "tokens_4gram.arpa.gz"
FRAME_SHIFT = 0.08  # the CLI's --frame-shift-ms default
SCORES = ("score", "am_score", "lm_score", "boost_score", "ranking_score")


def f32(values):
    return np.asarray(values, dtype=np.float32)


def expect_hypothesis(h, j, vocab, what):
    assert h.tokens == j["tokens"], what
    assert h.timestamps == j["timestamps"], what
    assert h.durations == j["durations"], what
    if "token_scores" in j:
        assert np.array_equal(f32(h.token_scores), f32(j["token_scores"])), what
    for key in SCORES:
        assert f32(getattr(h, key)) == f32(j[key]), f"{what}: {key} {getattr(h, key)} != {j[key]}"
    assert vocab.detokenize(h.tokens) == j["text"], what
    if "words" in j:
        words = asrdec.word_timings(h, vocab, FRAME_SHIFT)
        assert [(w.word, w.start_frame, w.end_frame, w.start_seconds, w.end_seconds) for w in words] == [
            (w["word"], w["start_frame"], w["end_frame"], w["start"], w["end"]) for w in j["words"]], what


def expect_results(hyps, lines, vocab, what, nbest=None, nbest_wanted=3):
    assert len(hyps) == len(lines) == 40, what
    for b, (h, j) in enumerate(zip(hyps, lines)):
        expect_hypothesis(h, j, vocab, f"{what}, utterance {b}")
        if nbest is not None:
            assert len(j["nbest"]) == min(nbest_wanted, len(nbest[b])) > 0, what
            for n, (hn, jn) in enumerate(zip(nbest[b], j["nbest"])):
                expect_hypothesis(hn, jn, vocab, f"{what}, utterance {b}, n-best {n}")


def test_version_is_the_libraries(cli):
    from importlib.metadata import version
    assert asrdec.__version__ == asrdec.version() == version("asrdec")
    import subprocess
    out = subprocess.run([cli.path, "--version"], check=True, capture_output=True, text=True).stdout
    assert asrdec.__version__ in out.split()[1]


def ctc_sample(sample):
    return np.load(DATA / sample / "logprobs.npy"), np.load(DATA / sample / "lengths.npy")


@pytest.mark.parametrize("sample", ["ctc", "real"])
@pytest.mark.parametrize("fused", [False, True])
def test_ctc_greedy(cli, vocab, sample, fused):
    x, n = ctc_sample(sample)
    args = ["decode", "ctc-greedy", "--logprobs", DATA / sample / "logprobs.npy", "--lengths",
            DATA / sample / "lengths.npy", "--vocab", DATA / "tokens.txt"]
    kwargs = {}
    if fused:
        args += ["--lm", LM, "--lm-weight", 0.3]
        kwargs = dict(lm=asrdec.NgramLm.load(str(LM), vocab_size=x.shape[2] - 1), lm_weight=0.3)
    expect_results(asrdec.CtcGreedyDecoder("cpu", **kwargs).decode(x, n), cli(*args), vocab, "ctc-greedy")


@pytest.mark.parametrize("sample", ["ctc", "real"])
@pytest.mark.parametrize("fused", [False, True])
def test_ctc_beam(cli, vocab, sample, fused):
    x, n = ctc_sample(sample)
    args = ["decode", "ctc-beam", "--logprobs", DATA / sample / "logprobs.npy", "--lengths",
            DATA / sample / "lengths.npy", "--vocab", DATA / "tokens.txt", "--beam", 4, "--nbest", 3]
    kwargs = dict(beam=4)
    if fused:
        args += ["--lm", LM, "--lm-weight", 0.3]
        kwargs.update(lm=asrdec.NgramLm.load(str(LM), vocab_size=x.shape[2] - 1), lm_weight=0.3)
    decoder = asrdec.CtcBeamDecoder(**kwargs)
    expect_results(decoder.decode(x, n), cli(*args), vocab, "ctc-beam", nbest=decoder.decode_nbest(x, n))


def transducer_args(sample):
    """The CLI's arguments for a transducer sample (rnnt, tdt, or real: an RNN-T model)."""
    return ["decode", "tdt" if sample == "tdt" else "rnnt", "--model", DATA / sample / "model.safetensors", "--enc",
            DATA / sample / "enc_proj.npy", "--lengths", DATA / sample / "lengths.npy", "--vocab", DATA / "tokens.txt"]


@pytest.mark.parametrize("kind,algorithm,fused", [
    ("rnnt", "frame-looping", False), ("rnnt", "label-looping", False), ("rnnt", "wind", False),
    ("rnnt", "label-looping", True), ("tdt", "frame-looping", False), ("tdt", "label-looping", True),
    ("real", "label-looping", False), ("real", "wind", True)])
def test_transducer_greedy(cli, vocab, kind, algorithm, fused):
    model = asrdec.TransducerModel.load(str(DATA / kind / "model.safetensors"))
    x, n = transducer_input(kind)
    args = transducer_args(kind) + ["--algo", algorithm]
    kwargs = dict(algorithm=algorithm)
    if fused:
        args += ["--lm", LM, "--lm-weight", 0.3]
        kwargs.update(lm=asrdec.NgramLm.load(str(LM), vocab_size=model.vocab_size), lm_weight=0.3)
    hyps = asrdec.TransducerGreedyDecoder(model, **kwargs).decode(x, n)
    expect_results(hyps, cli(*args), vocab, f"{kind} {algorithm}")


@pytest.mark.parametrize("kind,algorithm,extra,fused", [
    ("rnnt", "alsd++", {}, False), ("rnnt", "aes++", {}, True), ("rnnt", "wind-beam", {"wind_window": 2}, False),
    ("tdt", "alsd++", {}, True), ("real", "alsd++", {}, True), ("real", "aes++", {}, False)])
def test_transducer_beam(cli, vocab, kind, algorithm, extra, fused):
    model = asrdec.TransducerModel.load(str(DATA / kind / "model.safetensors"))
    x, n = transducer_input(kind)
    args = transducer_args(kind) + ["--algo", algorithm, "--beam", 3, "--nbest", 3]
    if "wind_window" in extra:
        args += ["--window", extra["wind_window"]]
    kwargs = dict(algorithm=algorithm, beam=3, **extra)
    if fused:
        args += ["--lm", LM, "--lm-weight", 0.3]
        kwargs.update(lm=asrdec.NgramLm.load(str(LM), vocab_size=model.vocab_size), lm_weight=0.3)
    decoder = asrdec.TransducerBeamDecoder(model, **kwargs)
    expect_results(decoder.decode(x, n), cli(*args), vocab, f"{kind} {algorithm}", nbest=decoder.decode_nbest(x, n))


@pytest.mark.parametrize("sample", ["ctc", "real"])
def test_wfst(cli, vocab, sample, wfst_graph, tmp_path):
    graph, words, summary = wfst_graph
    # The graph equals the CLI's from the same files, byte for byte.
    cli_graph, cli_words = tmp_path / "TLG.fst", tmp_path / "words.txt"
    import subprocess
    subprocess.run([cli.path, "graph", "build", "--tokens", DATA / "tokens.txt", "--lexicon",
                    DATA / "wfst/lexicon.txt", "--arpa", DATA / "wfst/words_3gram.arpa.gz", "-o", cli_graph,
                    "--words-out", cli_words], check=True, capture_output=True)
    assert filecmp.cmp(graph, cli_graph, shallow=False) and filecmp.cmp(words, cli_words, shallow=False)
    assert summary.tlg_states > 0 and summary.words > 0 and "TLG" in str(summary)

    x, n = ctc_sample(sample)
    table = asrdec.SymbolTable.load(str(words))
    decoder = asrdec.WfstDecoder(asrdec.WfstGraph.load(str(graph)), "cpu", word_start_columns=vocab.word_start_ids())
    results = decoder.decode(x, n)
    lines = cli("decode", "ctc-wfst", "--graph", graph, "--words", words, "--logprobs", DATA / sample / "logprobs.npy",
                "--lengths", DATA / sample / "lengths.npy", "--tokens", DATA / "tokens.txt")
    assert len(results) == len(lines) == 40
    for b, (r, j) in enumerate(zip(results, lines)):
        assert r.words == j["word_ids"], b
        for key in ("cost", "graph_cost", "acoustic_cost", "score"):
            assert f32(getattr(r, key)) == f32(j[key]), (b, key)
        assert (r.reached_final, r.overflow) == (j["reached_final"], j["overflow"]), b
        timed = asrdec.word_timings(r, table, FRAME_SHIFT)
        assert [(w.word, w.start_frame, w.end_frame, w.start_seconds, w.end_seconds) for w in timed] == [
            (w["word"], w["start_frame"], w["end_frame"], w["start"], w["end"]) for w in j["words"]], b
        assert asrdec.join_words(timed) == j["text"], b


@pytest.mark.parametrize("kind", ["ctc", "rnnt"])
def test_endpoints_equal_the_clis(cli, ctc_input, kind):
    """A server loop in Python (every utterance in chunks of 4 frames, detect_endpoint after each) finds the CLI's
    --endpoint results; the frame-level overload agrees with the Hypothesis one."""
    if kind == "ctc":
        data, lengths = ctc_input
        decoder = asrdec.CtcGreedyDecoder("cpu")
        args = ["decode", "ctc-greedy", "--logprobs", DATA / "ctc/logprobs.npy"]
    else:
        data, lengths = transducer_input("rnnt")
        decoder = asrdec.TransducerGreedyDecoder(asrdec.TransducerModel.load(str(DATA / "rnnt/model.safetensors")))
        args = ["decode", "rnnt", "--model", DATA / "rnnt/model.safetensors", "--enc", DATA / "rnnt/enc_proj.npy"]
    want = cli(*args, "--lengths", DATA / kind / "lengths.npy", "--chunk", 4, "--endpoint", "--endpoint-silence", 0.4,
               "--endpoint-max-length", 3.2)
    config = asrdec.EndpointConfig()
    config.rule2 = asrdec.EndpointRule(0.4, must_contain_speech=True)
    config.rule3 = asrdec.EndpointRule(min_utterance_length=3.2)
    fired = 0
    for u, line in enumerate(want):
        got = None
        length = int(lengths[u])
        for start in range(0, max(length, 1), 4):
            size = min(4, length - start)
            result = decoder.decode_chunks([asrdec.ChunkRow(u, start == 0, start + size == length)],
                                           data[u:u + 1, start:start + 4], [size])[0]
            rule = asrdec.detect_endpoint(config, result, start + size)
            speech_end = result.timestamps[-1] + 1 if result.tokens else -1
            assert rule == asrdec.detect_endpoint(config, start + size, speech_end)
            if rule and got is None:
                got = {"rule": rule, "frame": start + size}
        decoder.cancel(u)
        expected = line["endpoint"]
        assert (got is None) == (expected is None), (u, got, expected)
        if got is not None:
            assert (got["rule"], got["frame"]) == (expected["rule"], expected["frame"]), u
            fired += 1
    assert fired > 0
    with pytest.raises(asrdec.InvalidArgument, match="min_trailing_silence must be finite and >= 0"):
        bad = asrdec.EndpointConfig()
        bad.rule1 = asrdec.EndpointRule(-1.0)
        asrdec.detect_endpoint(bad, 10, -1)
