"""The tiny acoustic model: 16 kHz audio -> 80-dim log-mel -> 8x subsampling -> BiLSTM encoder -> a CTC head and an
RNN-T decoder side in asrdec's transducer format (docs/model-format.md).

The log-mel front end is part of the model (an STFT as a strided convolution with DFT kernels, a mel matrix, a fixed
per-feature normalisation), so the exported ONNX encoder takes raw audio and no feature code has to be kept in step
between training and the example that runs it.
"""

import math

import numpy as np
import torch
from torch import nn

SAMPLE_RATE = 16000
N_FFT = 512
WINDOW = 400  # 25 ms
HOP = 160  # 10 ms
N_MELS = 80
SUBSAMPLING = 8


def mel_matrix(n_fft=N_FFT, n_mels=N_MELS, sample_rate=SAMPLE_RATE, fmin=0.0, fmax=8000.0):
    """Triangular filters on the HTK mel scale, [n_fft/2+1, n_mels] (Slaney-style area normalisation)."""
    def to_mel(f):
        return 2595.0 * np.log10(1.0 + f / 700.0)

    def to_hz(m):
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)

    bins = np.linspace(0.0, sample_rate / 2, n_fft // 2 + 1)
    edges = to_hz(np.linspace(to_mel(fmin), to_mel(fmax), n_mels + 2))
    out = np.zeros((n_fft // 2 + 1, n_mels), dtype=np.float64)
    for m in range(n_mels):
        lo, mid, hi = edges[m], edges[m + 1], edges[m + 2]
        rise = (bins - lo) / (mid - lo)
        fall = (hi - bins) / (hi - mid)
        out[:, m] = np.maximum(0.0, np.minimum(rise, fall)) * (2.0 / (hi - lo))
    return out.astype(np.float32)


class LogMel(nn.Module):
    """[B, N] audio -> [B, T, 80] normalised log-mel, T = (N - 400) // 160 + 1 frames."""

    def __init__(self):
        super().__init__()
        n = np.arange(WINDOW)
        window = 0.5 - 0.5 * np.cos(2 * math.pi * n / WINDOW)  # periodic Hann
        k = np.arange(N_FFT // 2 + 1)[:, None]
        angle = 2 * math.pi * k * n[None, :] / N_FFT
        kernels = np.concatenate([np.cos(angle) * window, -np.sin(angle) * window]).astype(np.float32)
        self.register_buffer("dft", torch.from_numpy(kernels)[:, None, :])  # [2(K), 1, WINDOW]
        self.register_buffer("mel", torch.from_numpy(mel_matrix()))
        self.register_buffer("mean", torch.zeros(N_MELS))
        self.register_buffer("std", torch.ones(N_MELS))

    def raw(self, audio):
        spec = nn.functional.conv1d(audio[:, None, :], self.dft, stride=HOP)  # [B, 2K, T]
        half = spec.shape[1] // 2
        power = spec[:, :half] ** 2 + spec[:, half:] ** 2
        return torch.log(torch.matmul(power.transpose(1, 2), self.mel) + 1e-6)  # [B, T, 80]

    def forward(self, audio):
        return (self.raw(audio) - self.mean) / self.std


def feature_frames(samples):
    return (samples - WINDOW) // HOP + 1


def encoder_frames(frames):
    """Frames after the three stride-2 convolutions (kernel 3, padding 1)."""
    for _ in range(3):
        frames = (frames - 1) // 2 + 1
    return frames


class Encoder(nn.Module):
    def __init__(self, channels=32, hidden=192, layers=3, vocab=256, joint=160):
        super().__init__()
        self.features = LogMel()
        convs = []
        for i in range(3):
            convs += [nn.Conv2d(1 if i == 0 else channels, channels, 3, stride=2, padding=1), nn.ReLU()]
        self.subsample = nn.Sequential(*convs)
        self.inp = nn.Linear(channels * 10, 2 * hidden)  # 80 mel bins -> 10 after three halvings
        self.lstm = nn.LSTM(2 * hidden, hidden, num_layers=layers, bidirectional=True, batch_first=True, dropout=0.1)
        self.ctc = nn.Linear(2 * hidden, vocab + 1)  # blank last
        self.enc = nn.Linear(2 * hidden, joint)  # the joint's encoder projection

    def encode(self, feats):
        x = self.subsample(feats[:, None])  # [B, C, T/8, 10]
        b, c, t, f = x.shape
        x = self.inp(x.permute(0, 2, 1, 3).reshape(b, t, c * f))
        return self.lstm(x)[0]

    def forward(self, audio):
        """[1, N] audio -> CTC log-probabilities [1, T, V+1] and encoder projections [1, T, J]."""
        h = self.encode(self.features(audio))
        return torch.log_softmax(self.ctc(h), dim=-1), self.enc(h)


class Predictor(nn.Module):
    """Embedding (blank's row zero: the start symbol) and one LSTM layer, as asrdec's transducer-v1."""

    def __init__(self, vocab=256, embed=128, hidden=256, joint=160):
        super().__init__()
        self.blank = vocab
        self.embedding = nn.Embedding(vocab + 1, embed, padding_idx=vocab)
        self.lstm = nn.LSTM(embed, hidden, batch_first=True)
        self.pred = nn.Linear(hidden, joint)

    def forward(self, labels):
        """[B, U] labels -> [B, U+1, J]: the output before each label and after the last."""
        start = torch.full((labels.shape[0], 1), self.blank, dtype=labels.dtype)
        return self.pred(self.lstm(self.embedding(torch.cat([start, labels], dim=1)))[0])


class Joint(nn.Module):
    def __init__(self, vocab=256, joint=160):
        super().__init__()
        self.out = nn.Linear(joint, vocab + 1)

    def forward(self, enc_proj, pred):
        """[B, T, J] and [B, U+1, J] -> log-probabilities [B, T, U+1, V+1] (relu joint)."""
        return torch.log_softmax(self.out(torch.relu(enc_proj[:, :, None] + pred[:, None])), dim=-1)


class TinyModel(nn.Module):
    def __init__(self, vocab=256):
        super().__init__()
        self.encoder = Encoder(vocab=vocab)
        self.predictor = Predictor(vocab=vocab)
        self.joint = Joint(vocab=vocab)
