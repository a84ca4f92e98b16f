"""Plain numpy reference greedy decoders (the oracle for expected_greedy.jsonl).

Deliberately naive: one utterance at a time, one frame at a time, no
batching and no knowledge of how the data was planted, so that agreement
with the planted emissions is a real check. np.argmax returns the first
maximum, which is the tie rule the C++ library follows.
"""

import numpy as np

MAX_SYMBOLS = 10


def ctc_greedy(logprobs, length, blank):
    """Per-frame argmax, collapse repeats, drop blanks.

    Timestamp = first frame of the token's run. Score = sum over valid
    frames of the frame maximum, float16 -> float32 values summed in float64.
    """
    rows = np.asarray(logprobs[:length], dtype=np.float32)
    best = rows.argmax(axis=1)
    score = float(np.sum(rows.max(axis=1).astype(np.float64)))
    tokens, stamps = [], []
    prev = blank
    for t, k in enumerate(best.tolist()):
        if k != blank and k != prev:
            tokens.append(k)
            stamps.append(t)
        prev = k
    return {"tokens": tokens, "timestamps": stamps, "score": score}


def _log_softmax(x):
    """log-softmax in float64 (the score oracle; the argmax is taken on the
    float32 logits)."""
    x = np.asarray(x, dtype=np.float64)
    m = x.max()
    return x - (m + np.log(np.sum(np.exp(x - m))))


def rnnt_greedy(model, enc, length, max_symbols=MAX_SYMBOLS):
    """Frame-synchronous RNN-T greedy search. Score = log-probability of the
    path: the log-softmax (over the V+1 token columns) of every label and
    every blank chosen; the move after max_symbols labels is not scored (no
    joint evaluation is made)."""
    blank = model.blank
    pred, h, c = model.initial_state(1)
    tokens, stamps, score = [], [], 0.0
    for t in range(int(length)):
        for _ in range(max_symbols):
            logits = model.joint(enc[t][None, :], pred)[0]
            k = int(np.argmax(logits[:blank + 1]))
            score += float(_log_softmax(logits[:blank + 1])[k])
            if k == blank:
                break
            tokens.append(k)
            stamps.append(t)
            pred, h, c = model.predictor_step(np.array([k]), h, c)
    return {"tokens": tokens, "timestamps": stamps, "score": score}


def tdt_greedy(model, enc, length, max_symbols=MAX_SYMBOLS):
    """TDT greedy search: token and duration argmax taken independently.

    Score = log-probability of the path: for every joint evaluation, the
    log-softmax of the chosen token (over the V+1 token columns) plus that of
    the chosen duration (over the duration columns). Blank with duration 0
    advances one frame. A run of zero-duration
    emissions on one frame is cut after `max_symbols` by moving to t + 1.
    """
    blank = model.blank
    durations = model.durations
    pred, h, c = model.initial_state(1)
    tokens, stamps, durs, score = [], [], [], 0.0
    t, on_frame = 0, 0
    while t < length:
        logits = model.joint(enc[t][None, :], pred)[0]
        k = int(np.argmax(logits[:blank + 1]))
        di = int(np.argmax(logits[blank + 1:]))
        d = durations[di]
        score += float(_log_softmax(logits[:blank + 1])[k]
                       + _log_softmax(logits[blank + 1:])[di])
        if k == blank:
            d = max(d, 1)
        else:
            tokens.append(k)
            stamps.append(t)
            durs.append(d)
            pred, h, c = model.predictor_step(np.array([k]), h, c)
            if d == 0:
                on_frame += 1
                if on_frame >= max_symbols:
                    d = 1
        if d > 0:
            on_frame = 0
        t += d
    return {"tokens": tokens, "timestamps": stamps, "durations": durs,
            "score": score}
