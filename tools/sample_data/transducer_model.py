"""A randomly initialised RNN-T / TDT transducer and its safetensors format.

The weights are random (no training happens anywhere in this package), but
their scales are chosen so that the predictor output and the encoder
projection contribute comparably to the joint, as in a trained model: that
makes the predictor state matter to the joint, which is what decoders exercise.
See docs/model-format.md for the format and the exact math.
"""

import json
import struct
from dataclasses import dataclass

import numpy as np
from safetensors.numpy import load_file, save

FORMAT = "transducer-v1"
TDT_DURATIONS = (0, 1, 2, 3, 4)
CONFUSION_WEIGHT = 0.5


@dataclass
class TransducerModel:
    model_type: str          # "rnnt" or "tdt"
    vocab_size: int          # V, not counting blank; blank id == V
    durations: tuple         # () for RNN-T
    embedding: np.ndarray    # [V+1, E], blank row zero
    w_ih: np.ndarray         # [4P, E], gate rows i, f, g, o
    w_hh: np.ndarray         # [4P, P]
    b_ih: np.ndarray         # [4P]
    b_hh: np.ndarray         # [4P]
    w_pred: np.ndarray       # [J, P]
    b_pred: np.ndarray       # [J]
    w_out: np.ndarray        # [V+1+D, J], rows: tokens | blank | durations
    b_out: np.ndarray        # [V+1+D]

    @property
    def blank(self):
        return self.vocab_size

    @property
    def hidden(self):
        return self.w_hh.shape[1]

    @property
    def joint_hidden(self):
        return self.w_pred.shape[0]

    def predictor_step(self, labels, h, c):
        """One LSTM step for a batch of labels; returns (pred, h', c')."""
        x = self.embedding[labels]
        gates = x @ self.w_ih.T + self.b_ih + h @ self.w_hh.T + self.b_hh
        p = self.hidden
        i = _sigmoid(gates[:, 0 * p:1 * p])
        f = _sigmoid(gates[:, 1 * p:2 * p])
        g = np.tanh(gates[:, 2 * p:3 * p])
        o = _sigmoid(gates[:, 3 * p:4 * p])
        c2 = f * c + i * g
        h2 = o * np.tanh(c2)
        return h2 @ self.w_pred.T + self.b_pred, h2, c2

    def initial_state(self, batch):
        """Predictor output after the start symbol (blank, zero embedding)
        from a zero state, plus that state."""
        z = np.zeros((batch, self.hidden), dtype=np.float32)
        return self.predictor_step(np.full(batch, self.blank), z, z)

    def joint(self, enc, pred):
        return np.maximum(enc + pred, 0.0) @ self.w_out.T + self.b_out

    def tensors(self):
        return {
            "predictor.embedding.weight": self.embedding,
            "predictor.lstm.0.weight_ih": self.w_ih,
            "predictor.lstm.0.weight_hh": self.w_hh,
            "predictor.lstm.0.bias_ih": self.b_ih,
            "predictor.lstm.0.bias_hh": self.b_hh,
            "joint.pred.weight": self.w_pred,
            "joint.pred.bias": self.b_pred,
            "joint.out.weight": self.w_out,
            "joint.out.bias": self.b_out,
        }

    def metadata(self):
        return {
            "asrdec.format": FORMAT,
            "model_type": self.model_type,
            "vocab_size": str(self.vocab_size),
            "blank_id": str(self.blank),
            "durations": ",".join(str(d) for d in self.durations),
            "joint_activation": "relu",
            "predictor": "lstm",
            "predictor_layers": "1",
            "embedding_dim": str(self.embedding.shape[1]),
            "predictor_hidden": str(self.hidden),
            "joint_hidden": str(self.joint_hidden),
        }


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def random_model(model_type, vocab_size, emb_dim, hidden, joint_hidden, rng,
                 confusions=None):
    """Random weights at trained-model-like scales (float32), with the one
    piece of structure every trained transducer has: after emitting a token
    the joint stops asking for it.

    * Embeddings ~N(0,1); blank row zero (the start symbol).
    * LSTM input weights ~N(0, 9/E), recurrent ~N(0, 0.25/P), forget-gate
      bias +1: the state is dominated by the last token or two, as trained
      predictors are (they act much like low-order n-gram models).
    * W_pred gain 6, so the predictor output is comparable in size to the
      encoder projection (per-unit std ~1.5).
    * Token rows of W_out are 0.6 random + 0.8 times the negated, centred
      predictor output after that token (from the zero state). Emitting y
      then pushes relu(enc + pred) away from y's row, which is what lets one
      encoder frame first give y and then blank. Without it (and with the
      LSTM scaled like the others) the shaping in transducer_sim failed on
      about a third of emitting frames in a test; with it, on ~1 %. Given a
      confusion table, the direction also leans (weight 0.5) against the
      predictor outputs after the tokens y is confused with.
    * W_out gain 2.5 (logit std ~2-3 before shaping); blank bias +1, the
      prior a trained model learns from mostly-blank frames.
    """
    durations = TDT_DURATIONS if model_type == "tdt" else ()
    n_lab = vocab_size + 1
    n_out = n_lab + len(durations)
    f32 = np.float32

    def normal(shape, std):
        return (rng.standard_normal(shape) * std).astype(f32)

    emb = normal((n_lab, emb_dim), 1.0)
    emb[vocab_size] = 0.0
    b_ih = normal(4 * hidden, 0.1)
    b_ih[hidden:2 * hidden] += 1.0
    b_out = normal(n_out, 0.5)
    b_out[vocab_size] += 1.0
    model = TransducerModel(
        model_type=model_type, vocab_size=vocab_size, durations=durations,
        embedding=emb,
        w_ih=normal((4 * hidden, emb_dim), 3.0 / np.sqrt(emb_dim)),
        w_hh=normal((4 * hidden, hidden), 0.5 / np.sqrt(hidden)),
        b_ih=b_ih,
        b_hh=normal(4 * hidden, 0.1),
        w_pred=normal((joint_hidden, hidden), 6.0 / np.sqrt(hidden)),
        b_pred=normal(joint_hidden, 0.1),
        w_out=normal((n_out, joint_hidden), 2.5 / np.sqrt(joint_hidden)),
        b_out=b_out,
    )
    zero = np.zeros((vocab_size, hidden), dtype=f32)
    after, _, _ = model.predictor_step(np.arange(vocab_size), zero, zero)
    after = after - after.mean(axis=0)
    away = -after
    if confusions is not None:
        # Acoustic evidence is shared: emitting w also quiets the tokens
        # that sound like it, so a substitution can close its frame.
        for t in range(vocab_size):
            if confusions[t]:
                away[t] -= CONFUSION_WEIGHT * after[confusions[t]].mean(axis=0)
    away /= np.linalg.norm(away, axis=1, keepdims=True)
    rows = model.w_out[:vocab_size]
    scale = np.linalg.norm(rows, axis=1, keepdims=True)
    model.w_out[:vocab_size] = (0.6 * rows + 0.8 * scale * away).astype(f32)
    return model


def to_bytes(model):
    """safetensors bytes with a canonical header.

    The safetensors writer keeps metadata in a hash map, so the key order
    (and therefore the file's bytes) changes from run to run. Re-serialising
    the JSON header with sorted metadata keys gives the same bytes every
    time; the header length is unchanged because only the order differs.
    """
    tensors = {k: np.ascontiguousarray(v, dtype="<f4")
               for k, v in model.tensors().items()}
    raw = save(tensors, metadata=model.metadata())
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__")
    canon = {"__metadata__": dict(sorted(meta.items()))}
    canon.update(sorted(header.items()))
    text = json.dumps(canon, separators=(",", ":")).encode("ascii")
    if len(text) > n:
        raise AssertionError("canonical safetensors header grew")
    text += b" " * (n - len(text))
    return raw[:8] + text + raw[8 + n:]


def write(model, path):
    with open(path, "wb") as f:
        f.write(to_bytes(model))


def read(path):
    """Load a model written by `write` (used to check the round trip)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        meta = json.loads(f.read(n))["__metadata__"]
    t = load_file(path)
    durations = tuple(int(d) for d in meta["durations"].split(",") if d)
    return TransducerModel(
        model_type=meta["model_type"], vocab_size=int(meta["vocab_size"]),
        durations=durations,
        embedding=t["predictor.embedding.weight"],
        w_ih=t["predictor.lstm.0.weight_ih"],
        w_hh=t["predictor.lstm.0.weight_hh"],
        b_ih=t["predictor.lstm.0.bias_ih"],
        b_hh=t["predictor.lstm.0.bias_hh"],
        w_pred=t["joint.pred.weight"], b_pred=t["joint.pred.bias"],
        w_out=t["joint.out.weight"], b_out=t["joint.out.bias"])
