"""Every model of serving/models answers on the sample data with the CLI's results (streaming models chunked
through the sequence batcher), bad requests get Triton errors and leave the instance serving, and a client that
vanishes mid-sequence leaves the other sequences exact."""

import threading

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from client import DATA, decode, decode_stream, samples
from conftest import ROOT

LM = DATA / "lm" / "tokens_4gram.arpa.gz"
GRAPH = ROOT / "build" / "serving"


def cli_results(cli, model):
    ctc = ["--logprobs", DATA / "ctc/logprobs.npy", "--lengths", DATA / "ctc/lengths.npy"]
    kind = "tdt" if model.startswith("tdt") else "rnnt"
    transducer = [kind, "--model", DATA / kind / "model.safetensors", "--enc", DATA / kind / "enc_proj.npy",
                  "--lengths", DATA / kind / "lengths.npy", "--vocab", DATA / "tokens.txt"]
    base = model.removesuffix("_stream")
    args = {
        "ctc_greedy": ["decode", "ctc-greedy", *ctc, "--vocab", DATA / "tokens.txt"],
        "ctc_beam": ["decode", "ctc-beam", *ctc, "--vocab", DATA / "tokens.txt", "--beam", 4, "--lm", LM,
                     "--lm-weight", 0.3],
        "ctc_wfst": ["decode", "ctc-wfst", *ctc, "--graph", GRAPH / "TLG.fst", "--words", GRAPH / "words.txt",
                     "--tokens", DATA / "tokens.txt"],
        "rnnt_greedy": ["decode", *transducer, "--algo", "label-looping"],
        "tdt_greedy": ["decode", *transducer, "--algo", "label-looping"],
        "rnnt_beam": ["decode", *transducer, "--algo", "alsd++", "--beam", 4],
    }[base]
    return cli(*args)


def expect_equal(got, want, what):
    tokens = want["word_ids"] if "word_ids" in want else want["tokens"]
    stamps = [w["start_frame"] for w in want["words"]] if "word_ids" in want else want["timestamps"]
    assert got["tokens"] == tokens, what
    assert got["timestamps"] == stamps, what
    assert got["text"] == want["text"], what
    assert np.float32(got["score"]) == np.float32(want["score"]), what


def endpoint_rule(model, result, frames, shift=0.08):
    """The default endpointing rules (docs/streaming.md#endpointing) on a final result, written out here; WFST
    results carry word start frames only, so any rule is accepted for them."""
    if model.startswith("ctc_wfst"):
        return result["endpoint"] if result["endpoint"] in (0, 1, 2, 3) else -1
    speech = bool(result["tokens"])
    silence = (frames - (result["timestamps"][-1] + 1 if speech else 0)) * shift
    length = frames * shift
    for rule, hit in ((1, not speech and silence >= 2.4 - 1e-6), (2, speech and silence >= 1.2 - 1e-6),
                      (3, length >= 20 - 1e-6)):
        if hit:
            return rule
    return 0


OFFLINE = ["ctc_greedy", "ctc_beam", "ctc_wfst", "rnnt_greedy", "tdt_greedy", "rnnt_beam"]
STREAMING = ["ctc_greedy_stream", "ctc_wfst_stream", "rnnt_greedy_stream"]


@pytest.mark.parametrize("model", OFFLINE)
def test_offline_models_equal_the_cli(server, cli, model):
    utterances = samples(model)
    want = cli_results(cli, model)
    got = [None] * len(utterances)

    def work(first):  # concurrent requests, so that Triton batches them
        for b in range(first, len(utterances), 4):
            got[b] = decode(server, model, utterances[b])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for b, (g, w) in enumerate(zip(got, want)):
        expect_equal(g, w, f"{model}, utterance {b}")


@pytest.mark.parametrize("model", STREAMING)
def test_streaming_models_equal_the_cli(server, cli, model):
    utterances = samples(model)
    want = cli_results(cli, model)
    got = [None] * len(utterances)

    def work(first):  # several sequences in flight, chunks of 1 to 4 frames
        for b in range(first, len(utterances), 4):
            got[b] = decode_stream(server, model, utterances[b], 1 + b % 4, sequence_id=10000 + b)
            assert got[b]["endpoint"] == endpoint_rule(model, got[b], len(utterances[b])), b

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for b, (g, w) in enumerate(zip(got, want)):
        expect_equal(g, w, f"{model}, utterance {b}")


def request(model, frames):
    x = grpcclient.InferInput("ENC_PROJ" if model.startswith("rnnt") else "LOGPROBS", [1, *frames.shape], "FP32")
    x.set_data_from_numpy(np.ascontiguousarray(frames[None], dtype=np.float32))
    return [x]


def test_bad_requests_get_errors_and_the_instance_keeps_serving(server, cli):
    frames = samples("rnnt_greedy")[0]
    bad = frames.copy()
    bad[3, 5] = np.nan
    with pytest.raises(InferenceServerException, match="NaN"):
        server.infer("rnnt_greedy", request("rnnt_greedy", bad))
    with pytest.raises(InferenceServerException, match="enc_proj"):
        server.infer("rnnt_greedy", request("rnnt_greedy", frames[:, :7]))  # the wrong width
    with pytest.raises(InferenceServerException):
        x = grpcclient.InferInput("ENC_PROJ", [1, 4], "FP32")  # a wrong rank: refused by Triton's own checks
        x.set_data_from_numpy(np.zeros((1, 4), np.float32))
        server.infer("rnnt_greedy", [x])
    # A chunk of a sequence that never started, and an END without START: errors, no state kept.
    with pytest.raises(InferenceServerException, match="not open|START"):
        server.infer("rnnt_greedy_stream", request("rnnt_greedy_stream", frames[:4]), sequence_id=777,
                     sequence_start=False, sequence_end=True)
    with pytest.raises(InferenceServerException, match="not open|START"):
        server.infer("rnnt_greedy_stream", request("rnnt_greedy_stream", frames[:4]), sequence_id=778)
    want = cli_results(cli, "rnnt_greedy")[0]
    expect_equal(decode(server, "rnnt_greedy", frames), want, "after the errors")
    expect_equal(decode_stream(server, "rnnt_greedy_stream", frames, 3, sequence_id=779), want, "after the errors")


def test_a_client_gone_mid_sequence_leaves_the_others_exact(server, cli):
    utterances = samples("rnnt_greedy_stream")
    want = cli_results(cli, "rnnt_greedy_stream")
    # Sequence 5000 sends half its chunks and vanishes (no END); the others run beside it and after it.
    gone = utterances[0]
    for i, start in enumerate(range(0, len(gone) // 2, 2)):
        server.infer("rnnt_greedy_stream", request("rnnt_greedy_stream", gone[start:start + 2]), sequence_id=5000,
                     sequence_start=i == 0)
    for b in (1, 2, 3):
        expect_equal(decode_stream(server, "rnnt_greedy_stream", utterances[b], 2, sequence_id=5000 + b), want[b],
                     f"utterance {b} beside an abandoned sequence")
