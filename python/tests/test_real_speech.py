"""Real speech end to end on the committed tiny model (examples/data/real, docs/real-speech.md): the ONNX encoder
turns the committed audio into exactly the committed samples' rows, and the example decodes audio with every
decoder family."""

import importlib.util
import subprocess
import sys

import numpy as np
import onnxruntime  # run-python-tests installs it: the example's one dependency besides asrdec and numpy

import asrdec
from conftest import DATA, ROOT

REAL = DATA / "real"
AUDIO = sorted((REAL / "audio").glob("*.wav"))
EXAMPLE = ROOT / "examples" / "python" / "real_speech.py"


def example_module():
    spec = importlib.util.spec_from_file_location("real_speech", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_encoder_gives_the_committed_samples():
    assert len(AUDIO) == 3
    session = onnxruntime.InferenceSession(str(REAL / "encoder.onnx"), providers=["CPUExecutionProvider"])
    logprobs, enc_proj = np.load(REAL / "logprobs.npy"), np.load(REAL / "enc_proj.npy")
    lengths = np.load(REAL / "lengths.npy")
    read_wav = example_module().read_wav  # the example's reader: 16 kHz mono 16-bit PCM, else an error
    for b, path in enumerate(AUDIO):
        lp, ep = session.run(None, {"audio": read_wav(path)[None]})
        assert lp.shape[1] == ep.shape[1] == lengths[b], path
        # The CTC sample is stored as float16: equal to its rounding.
        assert np.allclose(lp[0], logprobs[b, :lengths[b]].astype(np.float32), rtol=2 ** -10, atol=1e-3), path
        assert np.allclose(ep[0], enc_proj[b, :lengths[b]], rtol=1e-4, atol=1e-4), path
        assert np.allclose(np.exp(lp[0]).sum(axis=1), 1.0, atol=1e-4), "log-probabilities over V + 1 columns"


def test_the_example_decodes_audio_with_every_decoder_family():
    out = subprocess.run([sys.executable, str(EXAMPLE), *map(str, AUDIO)],
                         check=True, capture_output=True, text=True).stdout
    for name in ("CTC greedy", "CTC beam 8 + LM", "RNN-T greedy", "RNN-T ALSD++ beam 4 + LM", "CTC WFST (TLG)"):
        assert out.count(name) == len(AUDIO), (name, out)
    # Its RNN-T greedy transcripts are the samples' (the same encoder, one utterance at a time).
    vocab = asrdec.Vocabulary.load(str(DATA / "tokens.txt"))
    model = asrdec.TransducerModel.load(str(REAL / "model.safetensors"))
    hyps = asrdec.TransducerGreedyDecoder(model).decode(np.load(REAL / "enc_proj.npy"), np.load(REAL / "lengths.npy"))
    lines = [line.split("RNN-T greedy", 1)[1].strip() for line in out.splitlines() if "RNN-T greedy" in line]
    assert lines == [vocab.detokenize(h.tokens) for h in hyps[:len(AUDIO)]]


def test_the_example_refuses_audio_it_cannot_read(tmp_path):
    import wave
    path = tmp_path / "22k.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(22050)
        w.writeframes(np.zeros(22050, dtype="<i2").tobytes())
    run = subprocess.run([sys.executable, str(EXAMPLE), str(path)], capture_output=True, text=True)
    assert run.returncode != 0
    assert f"{path}: expected 16 kHz mono 16-bit PCM" in run.stderr, run.stderr
