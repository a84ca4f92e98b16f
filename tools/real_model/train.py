"""Training: RNN-T loss + 0.3 x CTC loss on the synthesized training set, Adam, on the CPU.

Features are computed once (the model's own front end, before normalisation) and kept in memory; the normalisation's
mean and standard deviation are the training set's. Batches hold utterances of similar length; SpecAugment masks
two frequency bands and two time spans of every training utterance. Every draw comes from seeded generators,
torch runs on `threads` threads and the schedule counts steps (not time), so a run repeats on one machine
(floating-point sums may differ across machines and thread counts).
"""

import math
import os
import time

import numpy as np
import sentencepiece as spm
import torch

from . import model as m
from . import speech
from .rnnt_loss import rnnt_loss

CTC_WEIGHT = 0.3


def load_set(folder, name, front_end, sp):
    """Features [T, 80] (float32, not normalised), token ids, texts of one manifest."""
    feats, tokens, texts = [], [], []
    with torch.no_grad():
        for u in speech.read_manifest(folder, name):
            audio, rate = speech.read_wav(os.path.join(folder, u["path"]))
            if rate != m.SAMPLE_RATE:
                raise ValueError("%s: %d Hz, expected %d" % (u["path"], rate, m.SAMPLE_RATE))
            feats.append(front_end.raw(torch.from_numpy(audio)[None])[0].numpy())
            tokens.append(sp.EncodeAsIds(u["text"]))
            texts.append(u["text"])
    return feats, tokens, texts


def spec_augment(x, rng):
    """Two frequency masks (≤ 15 bins) and two time masks (≤ 5% of the frames, ≤ 40) of one [T, 80] utterance."""
    x = x.copy()
    for _ in range(2):
        w = int(rng.integers(0, 16))
        f = int(rng.integers(0, m.N_MELS - w + 1))
        x[:, f:f + w] = 0.0
    for _ in range(2):
        w = int(rng.integers(0, max(1, min(40, len(x) // 20)) + 1))
        t = int(rng.integers(0, max(1, len(x) - w + 1)))
        x[t:t + w] = 0.0
    return x


def batches(lengths, batch_frames, rng):
    """Lists of utterance indices of similar length, about `batch_frames` padded frames each, in random order."""
    order = np.argsort(np.asarray(lengths) + rng.uniform(0, 50, len(lengths)), kind="stable")
    out, current = [], []
    for i in order:
        if current and (len(current) + 1) * lengths[i] > batch_frames:
            out.append(current)
            current = []
        current.append(int(i))
    if current:
        out.append(current)
    rng.shuffle(out)
    return out


def step_loss(net, feats, tokens, normalise):
    """The batch's loss: features normalised here (the model's LogMel.forward does the same on audio)."""
    B = len(feats)
    T = max(len(f) for f in feats)
    U = max(len(t) for t in tokens)
    x = torch.zeros(B, T, m.N_MELS)
    labels = torch.zeros(B, U, dtype=torch.long)
    for b, (f, t) in enumerate(zip(feats, tokens)):
        x[b, :len(f)] = normalise(torch.from_numpy(f))
        labels[b, :len(t)] = torch.tensor(t)
    frames = torch.tensor([m.encoder_frames(len(f)) for f in feats])
    counts = torch.tensor([len(t) for t in tokens])
    h = net.encoder.encode(x)
    enc_proj = net.encoder.enc(h)
    ctc_logp = torch.log_softmax(net.encoder.ctc(h), dim=-1)
    ctc = torch.nn.functional.ctc_loss(ctc_logp.transpose(0, 1), labels, frames, counts, blank=net.predictor.blank,
                                       reduction="mean", zero_infinity=True)
    logp = net.joint(enc_proj, net.predictor(labels))
    rnnt = rnnt_loss(logp, labels, frames, counts, net.predictor.blank)
    return rnnt + CTC_WEIGHT * ctc, rnnt.item(), ctc.item()


def ctc_greedy_texts(net, feats, sp, normalise):
    """CTC greedy transcripts (a quick progress measure)."""
    out = []
    with torch.no_grad():
        for f in feats:
            h = net.encoder.encode(normalise(torch.from_numpy(f))[None])
            best = net.encoder.ctc(h)[0].argmax(-1).tolist()
            ids = [k for i, k in enumerate(best) if k != net.predictor.blank and (i == 0 or k != best[i - 1])]
            out.append(sp.DecodeIds(ids))
    return out


def word_error_rate(refs, hyps):
    errors = words = 0
    for r, h in zip(refs, hyps):
        r, h = r.split(), h.split()
        d = list(range(len(h) + 1))
        for i in range(1, len(r) + 1):
            prev, d[0] = d[0], i
            for j in range(1, len(h) + 1):
                prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (r[i - 1] != h[j - 1]))
        errors += d[len(h)]
        words += len(r)
    return errors / max(words, 1)


def train(speech_dir, bpe_model, out, seed=2026, epochs=28, threads=2, batch_frames=12000, lr=1.5e-3, log=print):
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    rng = np.random.default_rng(seed)
    sp = spm.SentencePieceProcessor(model_file=bpe_model)
    net = m.TinyModel(vocab=sp.GetPieceSize())
    start = time.time()
    train_feats, train_tokens, _ = load_set(speech_dir, "train", net.encoder.features, sp)
    test_feats, _, test_texts = load_set(speech_dir, "test", net.encoder.features, sp)
    stacked = np.concatenate(train_feats)
    net.encoder.features.mean.copy_(torch.from_numpy(stacked.mean(0)))
    net.encoder.features.std.copy_(torch.from_numpy(stacked.std(0) + 1e-3))
    del stacked
    features = net.encoder.features
    normalise = lambda f: (f - features.mean) / features.std  # noqa: E731
    log("features: %d training and %d test utterances in %.0f s; %d parameters" % (
        len(train_feats), len(test_feats), time.time() - start, sum(p.numel() for p in net.parameters())))
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    warmup = 300
    lengths = [len(f) for f in train_feats]
    steps_per_epoch = len(batches(lengths, batch_frames, np.random.default_rng(0)))
    total = epochs * steps_per_epoch  # about: batches per epoch vary by one or two
    step = 0
    history = []
    for epoch in range(1, epochs + 1):
        net.train()
        losses = []
        for batch in batches(lengths, batch_frames, rng):
            progress = min(1.0, step / total)
            scale = min(1.0, (step + 1) / warmup) * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress)))
            for group in optimizer.param_groups:
                group["lr"] = lr * scale
            feats = [spec_augment(train_feats[i], rng) for i in batch]
            loss, rnnt, ctc = step_loss(net, feats, [train_tokens[i] for i in batch], normalise)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
            optimizer.step()
            losses.append((rnnt, ctc))
            step += 1
        net.eval()
        wer = word_error_rate(test_texts, ctc_greedy_texts(net, test_feats, sp, normalise))
        mean = np.mean(losses, axis=0)
        history.append({"epoch": epoch, "steps": step, "rnnt": float(mean[0]), "ctc": float(mean[1]),
                        "test_ctc_greedy_wer": wer, "minutes": (time.time() - start) / 60})
        log("epoch %d (%d of %d batches, step %d): rnnt %.3f ctc %.3f, test CTC greedy WER %.1f%%, %.1f min" % (
            epoch, len(losses), steps_per_epoch, step, mean[0], mean[1], 100 * wer, (time.time() - start) / 60))
        torch.save({"model": net.state_dict(), "history": history, "seed": seed}, out)
    return net, history
