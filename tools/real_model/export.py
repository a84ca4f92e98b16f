"""Export: the decoder side in asrdec's transducer format, the encoder (with its log-mel front end) as ONNX, and the
test set's model outputs as asrdec samples (examples/data/real, docs/real-speech.md).

The samples are the ONNX encoder's outputs, computed with ONNX Runtime one utterance at a time (the BiLSTM reads a
batch's padding otherwise), exactly as a user running the exported encoder gets them.
"""

import json
import os
import shutil

import numpy as np
import torch
from safetensors.numpy import save_file

from . import model as m
from . import speech

AUDIO_EXAMPLES = 3  # utterances whose audio is committed


class OnnxEncoder(torch.nn.Module):
    """audio [1, N] float32 at 16 kHz -> logprobs [1, T, V+1], enc_proj [1, T, J]."""

    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder

    def forward(self, audio):
        return self.encoder(audio)


def nemo_state(net):
    """The decoder side under NeMo's names (RNNTDecoder's prediction network, RNNTJoint with its encoder projection
    and a joint_net of [ReLU, Linear]) and the model config asrdec.nemo reads: the model is exported the way a user
    exports a NeMo model (docs/export-nemo.md)."""
    p, j, e = net.predictor, net.joint, net.encoder
    t = {
        "decoder.prediction.embed.weight": p.embedding.weight,
        "decoder.prediction.dec_rnn.lstm.weight_ih_l0": p.lstm.weight_ih_l0,
        "decoder.prediction.dec_rnn.lstm.weight_hh_l0": p.lstm.weight_hh_l0,
        "decoder.prediction.dec_rnn.lstm.bias_ih_l0": p.lstm.bias_ih_l0,
        "decoder.prediction.dec_rnn.lstm.bias_hh_l0": p.lstm.bias_hh_l0,
        "joint.pred.weight": p.pred.weight,
        "joint.pred.bias": p.pred.bias,
        "joint.enc.weight": e.enc.weight,
        "joint.enc.bias": e.enc.bias,
        "joint.joint_net.1.weight": j.out.weight,
        "joint.joint_net.1.bias": j.out.bias,
    }
    state = {k: np.ascontiguousarray(v.detach().numpy().astype(np.float32)) for k, v in t.items()}
    return state, {"joint": {"jointnet": {"activation": "relu"}}}


def asrdec_nemo():
    """python/asrdec/nemo.py from the checkout, loaded by path: the training environment need not have asrdec built
    (the module needs only numpy to convert a state dict)."""
    import importlib.util

    path = os.path.join(os.path.dirname(__file__), "..", "..", "python", "asrdec", "nemo.py")
    spec = importlib.util.spec_from_file_location("asrdec_nemo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def decoder_tensors(net):
    """asrdec's transducer tensors and metadata of the model, by asrdec.nemo's conversion of its NeMo-named state."""
    state, config = nemo_state(net)
    return asrdec_nemo().convert(state, config)


def ctc_greedy(logprobs, blank):
    """NumPy CTC greedy decoding of one utterance [T, V+1] (the first maximum; repeats folded; blank dropped): tokens,
    the frame each starts on, and the path's log-probability, as the simulated samples' expected_greedy.jsonl."""
    best = logprobs.argmax(axis=1)
    tokens, timestamps = [], []
    for t, k in enumerate(best.tolist()):
        if k != blank and (t == 0 or k != best[t - 1]):
            tokens.append(k)
            timestamps.append(t)
    return {"tokens": tokens, "timestamps": timestamps, "score": float(logprobs[np.arange(len(best)), best].sum())}


def rnnt_greedy(enc_proj, tensors, blank, max_symbols=10):
    """NumPy (float64) RNN-T greedy decoding of one utterance [T, J] with the exported decoder tensors, by the
    reference semantics of docs/model-format.md: tokens, the frame each was emitted on, and the path's
    log-probability (every chosen label and blank; the move forced after max_symbols adds nothing)."""
    w = {k: v.astype(np.float64) for k, v in tensors.items()}
    hidden = w["predictor.lstm.0.weight_hh"].shape[1]
    sigmoid = lambda x: 1.0 / (1.0 + np.exp(-x))  # noqa: E731

    def step(label, h, c):
        x = w["predictor.embedding.weight"][label]
        gates = (w["predictor.lstm.0.weight_ih"] @ x + w["predictor.lstm.0.bias_ih"]
                 + w["predictor.lstm.0.weight_hh"] @ h + w["predictor.lstm.0.bias_hh"])
        i, f, g, o = (gates[k * hidden:(k + 1) * hidden] for k in range(4))
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        return w["joint.pred.weight"] @ h + w["joint.pred.bias"], h, c

    pred, h, c = step(blank, np.zeros(hidden), np.zeros(hidden))
    tokens, timestamps, score = [], [], 0.0
    for t in range(len(enc_proj)):
        for _ in range(max_symbols):
            hidden_joint = np.maximum(enc_proj[t].astype(np.float64) + pred, 0.0)
            logits = w["joint.out.weight"] @ hidden_joint + w["joint.out.bias"]
            k = int(np.argmax(logits))
            score += float(logits[k] - (logits.max() + np.log(np.exp(logits - logits.max()).sum())))
            if k == blank:
                break
            tokens.append(k)
            timestamps.append(t)
            pred, h, c = step(k, h, c)
    return {"tokens": tokens, "timestamps": timestamps, "score": score}


def export(checkpoint, speech_dir, bpe_model, out):
    import onnxruntime
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=bpe_model)
    net = m.TinyModel(vocab=sp.GetPieceSize())
    state = torch.load(checkpoint, map_location="cpu")
    net.load_state_dict(state["model"])
    net.eval()
    os.makedirs(os.path.join(out, "audio"), exist_ok=True)

    tensors, metadata = decoder_tensors(net)
    save_file(tensors, os.path.join(out, "model.safetensors"), metadata=metadata)

    onnx_path = os.path.join(out, "encoder.onnx")
    example = torch.zeros(1, 16000)
    torch.onnx.export(OnnxEncoder(net.encoder), (example,), onnx_path, input_names=["audio"],
                      output_names=["logprobs", "enc_proj"], opset_version=17, dynamo=False,
                      dynamic_axes={"audio": {1: "samples"}, "logprobs": {1: "frames"}, "enc_proj": {1: "frames"}})
    net.eval()  # the exporter may leave the modules in training mode (LSTM dropout)
    session = onnxruntime.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])

    tests = speech.read_manifest(speech_dir, "test")
    logprobs, enc_proj, worst = [], [], 0.0
    for i, u in enumerate(tests):
        audio, _ = speech.read_wav(os.path.join(speech_dir, u["path"]))
        lp, ep = session.run(None, {"audio": audio[None]})
        with torch.no_grad():
            want_lp, _ = net.encoder(torch.from_numpy(audio)[None])
        worst = max(worst, float(np.abs(lp - want_lp.numpy()).max()))
        logprobs.append(lp[0])
        enc_proj.append(ep[0])
        if i < AUDIO_EXAMPLES:
            shutil.copyfile(os.path.join(speech_dir, u["path"]), os.path.join(out, "audio", "%02d.wav" % i))
    lengths = np.array([len(x) for x in logprobs], dtype=np.int32)
    T = int(lengths.max())

    def padded(arrays):
        a = np.zeros((len(arrays), T, arrays[0].shape[1]), dtype=np.float32)
        for b, x in enumerate(arrays):
            a[b, :len(x)] = x
        return a

    stored = padded(logprobs).astype(np.float16)
    np.save(os.path.join(out, "logprobs.npy"), stored)
    with open(os.path.join(out, "expected_ctc_greedy.jsonl"), "w") as f:
        for b in range(len(tests)):
            f.write(json.dumps(ctc_greedy(stored[b, :lengths[b]].astype(np.float64), sp.GetPieceSize())) + "\n")
    with open(os.path.join(out, "expected_rnnt_greedy.jsonl"), "w") as f:
        for b in range(len(tests)):
            f.write(json.dumps(rnnt_greedy(enc_proj[b], tensors, sp.GetPieceSize())) + "\n")
    np.save(os.path.join(out, "enc_proj.npy"), padded(enc_proj))
    np.save(os.path.join(out, "lengths.npy"), lengths)
    with open(os.path.join(out, "refs.txt"), "w") as f:
        for u in tests:
            f.write(u["text"] + "\n")
    with open(os.path.join(out, "voices.txt"), "w") as f:
        for u in tests:
            f.write("%s rate=%d pitch=%d snr_db=%s\n" % (u["voice"], u["rate"], u["pitch"],
                                                       "none" if u["snr_db"] is None else "%.1f" % u["snr_db"]))
    sizes = {name: os.path.getsize(os.path.join(out, name)) for name in sorted(os.listdir(out))
             if os.path.isfile(os.path.join(out, name))}
    yield "ONNX Runtime against PyTorch: largest log-probability difference %.2e" % worst
    yield "%d test utterances, %d frames (T_max %d); files: %s" % (
        len(tests), int(lengths.sum()), T, ", ".join("%s %.1f MB" % (k, v / 1e6) for k, v in sizes.items()))
    last = state["history"][-1]
    yield "trained %d epochs (%d steps) in %.0f min; test CTC greedy WER %.1f%%" % (
        last["epoch"], last["steps"], last["minutes"], 100 * last["test_ctc_greedy_wer"])
