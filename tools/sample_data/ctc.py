"""Simulated output of an 8x-subsampled CTC model (80 ms frames).

A trained CTC model is "peaky": each token fires on one or two frames and
blank owns everything else, with the neighbouring tokens as runners-up on
the blank frames. Errors are planted as frames whose winner is wrong and
whose runner-up is usually right, behind by a margin drawn per error
(errors.MARGIN_BANDS): small margins are what beam search with a language
model can repair, large ones it cannot.
"""

import numpy as np

# Token-run and gap lengths: ~1.3 token frames plus ~1.5 blank frames per
# token, plus silence and forced blanks, gives ~3 frames per token, i.e.
# ~4 tokens/s of speech at 80 ms.
TOKEN_FRAMES = ([1, 2], [0.7, 0.3])
GAP_BLANKS = ([0, 1, 2, 3], [0.15, 0.35, 0.35, 0.15])
INS_GAP_BLANKS = ([0, 1, 2], [0.3, 0.5, 0.2])
SILENCE = (1, 4)  # leading/trailing silence frames, [lo, hi)

# Log-prob margin that the frame winner keeps over the runner-up after
# float16 rounding; decoders must never see an argmax tie.
MIN_MARGIN = 0.05


def _choice(rng, spec):
    values, probs = spec
    return values[int(rng.choice(len(values), p=probs))]


def _error_labels(ev, label, blank, similar, rng):
    """(runner-up, third) for an error frame: the reference's stand-in
    (the reference token, or blank for an insertion) is usually the
    runner-up, otherwise third behind another confusion."""
    ref = ev.ref if ev.kind != "ins" else blank
    if ev.ref_second:
        return ref, -1
    base = ev.ref if ev.kind != "ins" else ev.emit
    others = [t for t in similar[base] if t not in (label, ref)]
    if not others:
        return ref, -1
    return others[int(rng.integers(len(others)))], ref


def plan_frames(events, blank, similar, rng):
    """Frame-level plan: for every frame the winning label, the intended
    runner-up (-1: decided later from context), a kind selecting the
    confidence distribution, the winner's margin (error frames) and a label
    forced into third place (-1: none). Also returns the planted
    emissions."""
    frames = []
    tokens, stamps = [], []

    def blank_frame(kind, second=-1):
        frames.append([blank, second, kind, 0.0, -1])

    for _ in range(int(rng.integers(*SILENCE))):
        blank_frame("sil")
    for ev in events:
        if ev.kind == "del":
            # The token's frames exist acoustically but blank wins them.
            second, third = _error_labels(ev, blank, blank, similar, rng)
            for _ in range(_choice(rng, TOKEN_FRAMES)):
                frames.append([blank, second, "err", ev.margin, third])
            gap = GAP_BLANKS
        else:
            label = ev.emit
            if frames and frames[-1][0] == label:
                # Without a blank between them CTC would merge two equal
                # tokens into one.
                blank_frame("gap")
            if ev.kind == "ok":
                run, gap = _choice(rng, TOKEN_FRAMES), GAP_BLANKS
                spec = [-1, "tok", 0.0, -1]
            else:
                run, gap = ((1, INS_GAP_BLANKS) if ev.kind == "ins" else
                            (_choice(rng, TOKEN_FRAMES), GAP_BLANKS))
                second, third = _error_labels(ev, label, blank, similar, rng)
                spec = [second, "err", ev.margin, third]
            tokens.append(label)
            stamps.append(len(frames))
            for _ in range(run):
                frames.append([label] + spec)
        for _ in range(_choice(rng, gap)):
            blank_frame("gap")
    for _ in range(int(rng.integers(*SILENCE))):
        blank_frame("sil")
    return frames, tokens, stamps


def _loguniform(rng, lo, hi):
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _top_two(rng, kind, margin):
    """(p_winner, p_runner_up) for a frame kind."""
    p1, p2 = _draw_top_two(rng, kind, margin)
    # A hesitant winner must still beat the runner-up clearly enough to
    # survive float16 rounding.
    return p1, min(p2, p1 * np.exp(-3 * MIN_MARGIN))


def _draw_top_two(rng, kind, margin):
    if kind == "err":
        # The error wins by the planned margin; the two share most mass.
        total = rng.uniform(0.8, 0.98)
        p1 = total / (1.0 + np.exp(-margin))
        return p1, total - p1
    if kind == "tok":
        if rng.random() < 0.12:
            p1 = rng.uniform(0.45, 0.75)       # hesitant but correct
        else:
            p1 = 1.0 - _loguniform(rng, 2e-3, 0.25)
        return p1, (1.0 - p1) * rng.uniform(0.5, 0.95)
    if kind == "gap":
        if rng.random() < 0.08:
            p1 = rng.uniform(0.5, 0.8)         # a token almost fired here
        else:
            p1 = 1.0 - _loguniform(rng, 1e-3, 0.3)
        return p1, (1.0 - p1) * rng.uniform(0.6, 0.95)
    # "sil": confident blank far from any speech.
    p1 = 1.0 - _loguniform(rng, 1e-5, 1e-2)
    return p1, (1.0 - p1) * rng.uniform(0.3, 0.9)


def _runner_up(frames, i, similar, blank, rng, n_tokens):
    top, second, kind = frames[i][:3]
    if second >= 0:
        return second
    if kind == "tok":
        if rng.random() < 0.7 or not similar[top]:
            return blank
        return similar[top][int(rng.integers(len(similar[top])))]
    # Blank frames: the acoustically nearest token is the runner-up.
    for j in (i - 1, i + 1, i - 2, i + 2):
        if 0 <= j < len(frames) and frames[j][0] != blank:
            return frames[j][0]
    return int(rng.integers(1, n_tokens))


def synthesise(frames, similar, blank, rng):
    """Float16 log-softmax rows [T, blank+1] realising the frame plan."""
    n_labels = blank + 1
    out = np.empty((len(frames), n_labels), dtype=np.float16)
    for i, (top, _, kind, margin, third) in enumerate(frames):
        second = _runner_up(frames, i, similar, blank, rng, blank)
        p1, p2 = _top_two(rng, kind, margin)
        rest = max(1.0 - p1 - p2, 1e-12)
        # The long tail: a few plausible labels and many hopeless ones.
        tail = rng.normal(0.0, 2.5, n_labels)
        tail[[top, second]] = -np.inf
        tail = np.exp(tail - tail.max())
        logp = np.log(np.maximum(rest * tail / tail.sum(), 1e-300))
        logp = np.minimum(logp, np.log(p2) - 0.3)
        logp[top], logp[second] = np.log(p1), np.log(p2)
        if third >= 0:
            logp[third] = np.log(p2) - rng.uniform(0.1, 0.5)
        logp = np.maximum(logp, -60.0)  # keep the tail inside float16 range
        m = logp.max()
        logp -= m + np.log(np.exp(logp - m).sum())
        row = logp.astype(np.float16)
        srt = np.sort(row.astype(np.float32))
        if int(np.argmax(row)) != top or srt[-1] - srt[-2] < MIN_MARGIN:
            raise AssertionError("frame %d lost its planned winner" % i)
        out[i] = row
    return out


def simulate(events_per_utt, similar, blank, rng):
    """All utterances: padded log-probs, lengths and planted emissions."""
    utts = []
    for events in events_per_utt:
        frames, tokens, stamps = plan_frames(events, blank, similar, rng)
        utts.append((synthesise(frames, similar, blank, rng), tokens, stamps))
    t_max = max(u[0].shape[0] for u in utts)
    logprobs = np.zeros((len(utts), t_max, blank + 1), dtype="<f2")
    lengths = np.zeros(len(utts), dtype="<i4")
    for n, (lp, _, _) in enumerate(utts):
        logprobs[n, :lp.shape[0]] = lp
        lengths[n] = lp.shape[0]
    planted = [(tok, st) for _, tok, st in utts]
    return logprobs, lengths, planted
