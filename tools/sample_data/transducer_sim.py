"""Encoder projections that make a random transducer decode a planned way.

The predictor output depends only on the tokens emitted so far, so once the
emissions are planned every joint evaluation greedy decoding will perform is
known in advance: (frame, predictor state, required winner). Each evaluated
frame's encoder vector is then shaped independently, by Adam on hinge losses
over the logit margins, starting from a smooth random "encoder-like"
trajectory. Frames a TDT model jumps over keep their random start.

Each planted error also gets its error-correcting path shaped (see
alternative_evals), so beam search and LM fusion can repair it.

What greedy decoding of the result produces is checked by the independent
oracle in greedy.py; an utterance whose frames cannot all be satisfied is
re-planned (new timing, new error labels; see simulate), so the recorded
emissions are always the ones decoding really yields.
"""

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from . import errors, greedy

# Emission timing. RNN-T: one emitting frame per token plus ~1.95 blank
# frames; now and then a second token on the same frame.
RNNT_GAP = ([0, 1, 2, 3, 4], [0.10, 0.25, 0.35, 0.20, 0.10])
RNNT_SAME_FRAME = 0.08
# TDT: token durations average ~2 frames, plus ~0.38 blanks per token of
# ~2 frames each; 0-duration tokens (next token on the same frame) ~10 %.
TDT_TOKEN_DUR = ([0, 1, 2, 3, 4], [0.10, 0.25, 0.32, 0.21, 0.12])
TDT_BLANK_DUR = ([1, 2, 3, 4], [0.35, 0.35, 0.20, 0.10])
TDT_GAP_BLANKS = ([0, 1, 2], [0.65, 0.32, 0.03])
TDT_MAX_ZERO_RUN = 2
SILENCE = (1, 4)

# Every argmax the decoder takes wins by at least this many logits, so
# float32 rounding differences (other summation orders, GPU GEMMs) cannot
# flip a decision. Every hinge target below is larger.
MIN_MARGIN = 0.25
ERROR_MARGIN = 0.3      # lowest margin asked of any evaluation
ERROR_WINDOW = 0.25     # error's lead over the reference: margin +- this
RUNNER_UP_GAP = 0.3     # runner-up ahead of the third label
DUR_SPREAD = 3.0        # duration winner's lead is in [dlo, dlo + this]
ENC_STD = 1.0           # scale of the random encoder trajectory
ENC_CORR = 0.6          # frame-to-frame correlation of that trajectory

ADAM_LR = 0.1
MAX_STEPS = 600
RETRY_STEPS = 300       # per restart of the frames that failed
RETRY_ROUNDS = 4
SHARPNESS = 4.0         # of the soft-max hinge
# The gradient passes ReLUs that are off with this slope, so that a unit
# switched off by the predictor can still be switched on by the encoder.
DEAD_UNIT_SLOPE = 0.2
MAX_ATTEMPTS = 8
SOFT_ATTEMPTS = 4


class Eval(NamedTuple):
    """One joint evaluation greedy decoding will perform."""
    t: int               # frame
    k: int               # predictor index = tokens emitted before
    target: int          # winning label
    second: int          # required runner-up, or -1
    kind: str            # selects the margin distribution
    dur: int = -1        # TDT: winning duration index
    margin: float = 0.0  # error evaluations: planned lead over the reference
    ev: int = -1         # error evaluations: index of the error event


@dataclass
class Plan:
    length: int = 0
    evals: list = field(default_factory=list)   # of Eval, in decoding order
    tokens: list = field(default_factory=list)
    stamps: list = field(default_factory=list)
    durs: list = field(default_factory=list)


def _choice(rng, spec):
    values, probs = spec
    return values[int(rng.choice(len(values), p=probs))]


def _second_for(ev, blank):
    if ev.kind == "sub":
        return ev.ref, "sub"
    if ev.kind == "ins":
        return blank, "ins"
    return -1, "tok"


def _mark_pre_emission_blanks(plan, blank):
    """A blank right before an emission has that token as runner-up, as in
    a real model where the token's evidence builds up over frames."""
    ev = plan.evals
    for i in range(len(ev) - 1):
        nxt = ev[i + 1]
        if ev[i].kind == "gap" and nxt.target != blank and nxt.t > ev[i].t:
            ev[i] = ev[i]._replace(second=nxt.target, kind="pre")


def plan_rnnt(events, blank, rng, shared_frames=True):
    plan = Plan()
    frames = []          # per frame: list of Evals
    k = 0

    def close():
        if frames and frames[-1][-1].target != blank:
            frames[-1].append(Eval(len(frames) - 1, k, blank, -1, "close"))

    def blank_frame(kind, second=-1, margin=0.0, idx=-1):
        close()
        frames.append([Eval(len(frames), k, blank, second, kind,
                            margin=margin, ev=idx)])

    for _ in range(int(rng.integers(*SILENCE))):
        blank_frame("sil")
    open_frame = False
    for idx, ev in enumerate(events):
        if ev.kind == "none":
            continue
        share = (open_frame and ev.kind != "del"
                 and rng.random() < RNNT_SAME_FRAME and shared_frames)
        if not share:
            for _ in range(_choice(rng, RNNT_GAP)):
                blank_frame("gap")
            if ev.kind == "del":
                blank_frame("del", ev.ref, ev.margin, idx)
                open_frame = False
                continue
            close()
            frames.append([])
        second, kind = _second_for(ev, blank)
        frames[-1].append(Eval(len(frames) - 1, k, ev.emit, second, kind,
                               margin=ev.margin,
                               ev=idx if ev.kind != "ok" else -1))
        plan.tokens.append(ev.emit)
        plan.stamps.append(len(frames) - 1)
        k += 1
        open_frame = True
    for _ in range(int(rng.integers(*SILENCE))):
        blank_frame("sil")
    close()
    plan.length = len(frames)
    plan.evals = [e for fr in frames for e in fr]
    _mark_pre_emission_blanks(plan, blank)
    return plan


def plan_tdt(events, blank, durations, rng, shared_frames=True):
    plan = Plan()
    d_index = {d: i for i, d in enumerate(durations)}
    t, k, zero_run = 0, 0, 0

    def blank_eval(kind, dur, second=-1, margin=0.0, idx=-1):
        nonlocal t
        plan.evals.append(Eval(t, k, blank, second, kind, d_index[dur],
                               margin, idx))
        t += dur

    blank_eval("sil", int(rng.integers(2, 5)))
    last = max(i for i, ev in enumerate(events) if ev.kind != "none")
    for i, ev in enumerate(events):
        if ev.kind == "none":
            continue
        if zero_run == 0:
            for _ in range(_choice(rng, TDT_GAP_BLANKS)):
                blank_eval("gap", _choice(rng, TDT_BLANK_DUR))
        if ev.kind == "del":
            blank_eval("del", int(rng.integers(1, 4)), ev.ref, ev.margin, i)
            zero_run = 0
            continue
        d = _choice(rng, TDT_TOKEN_DUR)
        if d == 0 and (zero_run >= TDT_MAX_ZERO_RUN or i == last
                       or not shared_frames):
            d = int(rng.integers(1, 5))
        second, kind = _second_for(ev, blank)
        plan.evals.append(Eval(t, k, ev.emit, second, kind, d_index[d],
                               ev.margin, i if ev.kind != "ok" else -1))
        plan.tokens.append(ev.emit)
        plan.stamps.append(t)
        plan.durs.append(d)
        k += 1
        zero_run = zero_run + 1 if d == 0 else 0
        t += d
    for _ in range(int(rng.integers(1, 3))):
        blank_eval("sil", _choice(rng, TDT_BLANK_DUR))
    plan.length = t
    _mark_pre_emission_blanks(plan, blank)
    return plan


def _margins(ev, rng):
    """(lowest, highest) winner-over-runner-up logit gap for an evaluation."""
    kind = ev.kind
    if kind in ("sub", "ins", "del"):
        # The error leads the reference (the runner-up) by about the
        # planned margin (errors.MARGIN_BANDS).
        return (max(ERROR_MARGIN, ev.margin - ERROR_WINDOW),
                max(ERROR_MARGIN, ev.margin) + ERROR_WINDOW)
    if kind == "tok":
        if rng.random() < 0.15:
            lo = rng.uniform(0.4, 1.2)     # correct but hesitant
            return lo, lo + 0.8
        lo = rng.uniform(2.0, 6.0)
        return lo, lo + 3.0
    if kind == "pre":
        lo = rng.uniform(1.0, 4.0)
        return lo, lo + 2.0
    if kind == "sil":
        lo = rng.uniform(4.0, 8.0)
        return lo, lo + 4.0
    lo = rng.uniform(2.0, 6.0)             # "gap", "close"
    return lo, lo + 4.0


def _trajectory(length, dim, rng):
    """AR(1) random walk: encoder outputs of neighbouring frames look alike."""
    noise = rng.standard_normal((length, dim)) * ENC_STD
    out = np.empty((length, dim))
    out[0] = noise[0]
    keep = np.sqrt(1.0 - ENC_CORR ** 2)
    for t in range(1, length):
        out[t] = ENC_CORR * out[t - 1] + keep * noise[t]
    return out.astype(np.float32)


def alternative_evals(plan, blank, tdt):
    """Evaluations along the path that corrects each planted error.

    A real model that misrecognises a token still continues sensibly if a
    beam search or an LM picks the runner-up instead; without that, LM
    fusion could never repair a transducer error. For each error the
    corrected path takes the runner-up decision (the reference token for a
    substitution or deletion, blank for an insertion), lands on the same
    frame as the planted path (TDT: the duration argmax is shared), and
    must then repeat all later planted decisions under its own predictor
    history. Returns (paths, evals): one corrected token sequence per
    error, and (frame, path, history length, target label, duration index)
    tuples, the history being that many leading tokens of the path.
    """
    evs = plan.evals
    toks = plan.tokens
    paths, out = [], []
    for i, (t, k, tgt, sec, kind, d, _, _) in enumerate(evs):
        extra = []
        if kind == "sub":
            path, shift = toks[:k] + [sec] + toks[k + 1:], 0
        elif kind == "del":
            path, shift = toks[:k] + [sec] + toks[k:], 1
            if not tdt:
                extra = [(t, len(paths), k + 1, blank, -1)]
        elif kind == "ins":
            if tdt and plan.durs[k] == 0:
                continue      # blank would move on a frame: paths diverge
            if not tdt and any(e.t == t and e.target != blank
                               for e in evs[i + 1:i + 3]):
                continue      # the planted frame emits more; blank skips it
            path, shift = toks[:k] + toks[k + 1:], -1
        else:
            continue
        pid = len(paths)
        paths.append(path)
        out.extend(extra)
        for e in evs[i + 1:]:
            if kind == "ins" and not tdt and e.t == t:
                continue      # the planted frame's closing blank
            out.append((e.t, pid, e.k + shift, e.target, e.dur))
    return paths, out


class _Problem:
    """All joint evaluations of a batch of plans as flat arrays.

    Planted evaluations must hold; alternative-path ones (see
    alternative_evals) are optional and dropped for a frame that cannot
    meet them, as is a blank frame's preferred runner-up.
    """

    def __init__(self, model, plans, rngs):
        blank = model.blank
        j = model.joint_hidden
        tdt = model.model_type == "tdt"
        self.n_tok = blank + 1
        preds = _prefix_predictions(model, [p.tokens for p in plans])
        var_of, var_init, rows = {}, [], []
        self.inits = []
        for u, (plan, rng) in enumerate(zip(plans, rngs)):
            traj = _trajectory(plan.length, j, rng)
            self.inits.append(traj)
            for e in plan.evals:
                if (u, e.t) not in var_of:
                    var_of[(u, e.t)] = len(var_init)
                    var_init.append(traj[e.t])
                lo, hi = _margins(e, rng)
                dlo = rng.uniform(0.5, 3.0) if e.dur >= 0 else 0.0
                rows.append((var_of[(u, e.t)], preds[u][e.k], e.target,
                             e.second, lo, hi, e.dur, dlo, e.kind == "pre",
                             False))
            paths, alts = alternative_evals(plan, blank, tdt)
            if alts:
                path_preds = _prefix_predictions(model, paths)
            for (t, pid, n_hist, tgt, d) in alts:
                lo = rng.uniform(ERROR_MARGIN, 1.0)
                dlo = rng.uniform(ERROR_MARGIN, 1.0) if d >= 0 else 0.0
                rows.append((var_of[(u, t)], path_preds[pid][n_hist], tgt, -1,
                             lo, np.inf, d, dlo, False, True))
        self.var_key = list(var_of)
        self.rngs = rngs
        self.x = np.array(var_init, dtype=np.float32)
        r = rows
        self.var = np.array([e[0] for e in r])
        self.pred = np.stack([e[1] for e in r]).astype(np.float32)
        self.tgt = np.array([e[2] for e in r])
        self.sec = np.array([e[3] for e in r])
        self.lo = np.array([e[4] for e in r], dtype=np.float32)
        self.hi = np.array([e[5] for e in r], dtype=np.float32)
        self.dur = np.array([e[6] for e in r])
        self.dlo = np.array([e[7] for e in r], dtype=np.float32)
        self.soft_second = np.array([e[8] for e in r], dtype=bool)
        self.optional = np.array([e[9] for e in r], dtype=bool)
        order = np.argsort(self.var, kind="stable")
        for name in ("var", "pred", "tgt", "sec", "lo", "hi", "dur", "dlo",
                     "soft_second", "optional"):
            setattr(self, name, getattr(self, name)[order])


def _prefix_predictions(model, token_lists):
    """preds[u][k]: predictor output after the first k planted tokens."""
    n = len(token_lists)
    longest = max(len(t) for t in token_lists)
    lab = np.full((n, longest), model.blank)
    for u, toks in enumerate(token_lists):
        lab[u, :len(toks)] = toks
    pred, h, c = model.initial_state(n)
    steps = [pred]
    for s in range(longest):
        pred, h, c = model.predictor_step(lab[:, s], h, c)
        steps.append(pred)
    steps = np.stack(steps, axis=1)
    return [steps[u, :len(toks) + 1] for u, toks in enumerate(token_lists)]


def _margin_grad(logits, tgt, sec, lo, hi):
    """Gradient of the margin losses w.r.t. one label group's logits, and
    whether each evaluation violates any margin.

    Winner ahead of every other label by `lo` (a soft-max weighted hinge,
    which concentrates on the strongest rivals); if a runner-up is named,
    it trails the winner by at most `hi` and leads the rest by
    RUNNER_UP_GAP; otherwise the winner's lead over the best other label is
    at most `hi` (a confidence spread, not arbitrarily peaky frames).
    """
    n = logits.shape[0]
    ar = np.arange(n)
    ly = logits[ar, tgt]
    a = logits + (lo - ly)[:, None]
    a[ar, tgt] = -np.inf
    amax = a.max(axis=1)
    bad = amax > 0
    e = np.exp(a - amax[:, None])
    lse = amax + np.log(e.sum(axis=1))
    weight = 0.5 * (1.0 + np.tanh(0.5 * SHARPNESS * lse))
    g = e / e.sum(axis=1, keepdims=True) * weight[:, None]
    g[ar, tgt] = -weight

    named = sec >= 0
    s = np.where(named, sec, 0)
    ls = logits[ar, s]
    too_far = named & (ly - ls > hi)
    g[ar, tgt] += too_far
    g[ar, s] -= too_far
    behind = named[:, None] & ((RUNNER_UP_GAP - ls[:, None] + logits) > 0)
    behind[ar, tgt] = False
    behind[ar, s] = False
    g += behind
    g[ar, s] -= behind.sum(axis=1)

    others = logits.copy()
    others[ar, tgt] = -np.inf
    jmax = others.argmax(axis=1)
    peaky = ~named & (ly - others[ar, jmax] > hi)
    g[ar, tgt] += peaky
    g[ar, jmax] -= peaky
    return g, bad | too_far | behind.any(axis=1) | peaky


def _shape(model, prob):
    """Adam over the frame vectors until every margin is met.

    A frame whose margins are all met is frozen, so it stays met, and the
    cost per step shrinks as frames converge. Frames still failing after
    MAX_STEPS restart from a fresh random vector with their margins halved
    (never below ERROR_MARGIN) and get RETRY_STEPS more, up to
    RETRY_ROUNDS times; what still fails is returned as a per-variable
    mask.
    """
    w = model.w_out
    b = model.b_out
    nt = prob.n_tok
    x = prob.x
    tdt = model.model_type == "tdt"
    active = np.ones(len(x), dtype=bool)
    for rnd in range(RETRY_ROUNDS + 1):
        if rnd:
            _restart(prob, active, last=rnd == RETRY_ROUNDS)
        m = np.zeros_like(x)
        v = np.zeros_like(x)
        for step in range(1, (RETRY_STEPS if rnd else MAX_STEPS) + 1):
            sel = np.flatnonzero(active[prob.var])
            var = prob.var[sel]
            pre = x[var] + prob.pred[sel]
            logits = np.maximum(pre, 0.0) @ w.T + b
            g = np.zeros_like(logits)
            g[:, :nt], bad = _margin_grad(logits[:, :nt], prob.tgt[sel],
                                          prob.sec[sel], prob.lo[sel],
                                          prob.hi[sel])
            if tdt:
                g[:, nt:], bad_d = _margin_grad(
                    logits[:, nt:], prob.dur[sel], np.full(sel.size, -1),
                    prob.dlo[sel], prob.dlo[sel] + DUR_SPREAD)
                bad |= bad_d
            var_bad = np.zeros(len(x), dtype=bool)
            var_bad[var[bad]] = True
            active &= var_bad
            if not active.any():
                return active
            gx = (g @ w) * np.where(pre > 0, 1.0, DEAD_UNIT_SLOPE).astype(
                np.float32)
            starts = np.flatnonzero(np.r_[True, var[1:] != var[:-1]])
            gsum = np.add.reduceat(gx, starts, axis=0)
            ids = var[starts]
            keep = active[ids]
            ids, gsum = ids[keep], gsum[keep]
            # Every active frame has been active since this round began, so
            # one step counter serves all of them.
            m[ids] = 0.9 * m[ids] + 0.1 * gsum
            v[ids] = 0.999 * v[ids] + 0.001 * gsum * gsum
            mh = m[ids] / (1 - 0.9 ** step)
            vh = v[ids] / (1 - 0.999 ** step)
            x[ids] -= (ADAM_LR * mh / (np.sqrt(vh) + 1e-8)).astype(np.float32)
    return active


def _restart(prob, failing, last):
    """Fresh start for failing frames, with lower margins; on the last
    round a failing frame also gives up its optional wishes: a blank
    frame's preferred runner-up (the upcoming token) and the
    alternative-path evaluations. Error frames keep their runner-up."""
    ids = np.flatnonzero(failing)
    for i in ids:
        rng = prob.rngs[prob.var_key[i][0]]
        prob.x[i] = (rng.standard_normal(prob.x.shape[1]) * ENC_STD).astype(
            np.float32)
    ev = failing[prob.var]
    spread = prob.hi[ev] - prob.lo[ev]
    prob.lo[ev] = np.maximum(prob.lo[ev] * 0.5, ERROR_MARGIN)
    prob.hi[ev] = prob.lo[ev] + spread
    prob.dlo[ev] = np.maximum(prob.dlo[ev] * 0.5, ERROR_MARGIN)
    if last:
        prob.sec[ev & prob.soft_second] = -1
        drop = ev & prob.optional
        prob.lo[drop] = -1e9
        prob.dlo[drop] = -1e9


def _decode(model, enc, length):
    if model.model_type == "tdt":
        return greedy.tdt_greedy(model, enc, length)
    return greedy.rnnt_greedy(model, enc, length)


def _matches(plan, out, tdt):
    ok = out["tokens"] == plan.tokens and out["timestamps"] == plan.stamps
    return ok and (not tdt or out["durations"] == plan.durs)


def simulate(model, base_events, relabel, rng_for):
    """Shape enc_proj for all utterances.

    `base_events[u]` are utterance u's planned errors; `relabel(events,
    rng)` redraws their labels. `rng_for(u, attempt)` gives the generator
    for one utterance's attempt, so re-planning one utterance never
    disturbs the others. Returns a dict with enc_proj [N, T_max, J]
    float32, lengths int32, the oracle's outputs, the final plans and
    events, the attempts each utterance needed, and the utterances that
    had to lose their errors.
    """
    tdt = model.model_type == "tdt"
    n = len(base_events)
    done = [None] * n
    attempts = [0] * n
    hard = [set() for _ in range(n)]   # error events whose frame failed
    pending = list(range(n))
    best = {}    # u -> (alternatives held, result) of a decodable attempt
    for attempt in range(MAX_ATTEMPTS):
        if attempt == SOFT_ATTEMPTS:
            # Enough tries for full error-correcting paths: settle for the
            # attempt where most of them held.
            for u in [u for u in pending if u in best]:
                done[u] = best.pop(u)[1]
                pending.remove(u)
        if not pending:
            break
        plans, rngs, evs = [], [], []
        for u in pending:
            rng = rng_for(u, attempt)
            # Re-plans escalate: new timing and new error labels (some
            # errors cannot be produced in context by a random joint); then
            # the errors whose frames failed are dropped and no frame emits
            # twice; finally no errors at all.
            events = base_events[u]
            if attempt == MAX_ATTEMPTS - 1:
                events = errors.without_errors(events)
            elif attempt >= 2:
                events = relabel(errors.drop(events, sorted(hard[u])), rng)
            elif attempt == 1:
                events = relabel(events, rng)
            shared = attempt < 2
            plan = (plan_tdt(events, model.blank, model.durations, rng,
                             shared) if tdt
                    else plan_rnnt(events, model.blank, rng, shared))
            plans.append(plan)
            rngs.append(rng)
            evs.append(events)
            attempts[u] = attempt + 1
        prob = _Problem(model, plans, rngs)
        failed_vars = _shape(model, prob)
        failed = set()
        for vi in np.flatnonzero(failed_vars):
            i, t = prob.var_key[vi]
            failed.add(i)
            hard[pending[i]].update(e.ev for e in plans[i].evals
                                    if e.t == t and e.ev >= 0)
        encs = [p.copy() for p in prob.inits]
        for vi, (i, t) in enumerate(prob.var_key):
            encs[i][t] = prob.x[vi]
        still = []
        for i, u in enumerate(pending):
            out = None if i in failed else _decode(model, encs[i],
                                                   plans[i].length)
            result = (encs[i], out, plans[i], evs[i])
            if out is None or not _matches(plans[i], out, tdt):
                still.append(u)
                continue
            held, total = alternatives_held(model, encs[i], plans[i])
            if held == total or attempt >= SOFT_ATTEMPTS:
                done[u] = result
                continue
            # Decodes as planned, but some error-correcting paths fail.
            if u not in best or held / total > best[u][0]:
                best[u] = (held / total, result)
            still.append(u)
        pending = still
    if pending:
        raise RuntimeError("could not realise utterances %s" % pending)
    t_max = max(d[0].shape[0] for d in done)
    enc_proj = np.zeros((n, t_max, model.joint_hidden), dtype="<f4")
    lengths = np.zeros(n, dtype="<i4")
    for u, d in enumerate(done):
        enc_proj[u, :d[0].shape[0]] = d[0]
        lengths[u] = d[0].shape[0]
    return {"enc_proj": enc_proj, "lengths": lengths,
            "outputs": [d[1] for d in done], "plans": [d[2] for d in done],
            "events": [d[3] for d in done], "attempts": attempts,
            "errors_removed": [u for u in range(n)
                               if attempts[u] == MAX_ATTEMPTS],
            "errors_dropped": sum(
                sum(e.kind != "ok" for e in base_events[u]) -
                sum(e.kind not in ("ok", "none") for e in done[u][3])
                for u in range(n))}


def min_margin(model, enc, plan):
    """Smallest winner-over-runner-up logit gap over every argmax greedy
    decoding takes on this utterance (token and, for TDT, duration)."""
    preds = _prefix_predictions(model, [plan.tokens])[0]
    nt = model.blank + 1
    ev = plan.evals
    logits = model.joint(enc[[e.t for e in ev]], preds[[e.k for e in ev]])
    worst = np.inf
    for row, e in zip(logits, ev):
        for group, win in ((row[:nt], e.target), (row[nt:], e.dur)):
            if win < 0:
                continue
            rest = np.delete(group, win)
            worst = min(worst, float(group[win] - rest.max()))
    return worst


def alternatives_held(model, enc, plan):
    """(held, total): alternative-path evaluations whose decision holds."""
    paths, alts = alternative_evals(plan, model.blank,
                                    model.model_type == "tdt")
    if not alts:
        return 0, 0
    path_preds = _prefix_predictions(model, paths)
    nt = model.blank + 1
    frames = np.array([a[0] for a in alts])
    preds = np.stack([path_preds[a[1]][a[2]] for a in alts])
    logits = model.joint(enc[frames], preds)
    tgt = np.array([a[3] for a in alts])
    dur = np.array([a[4] for a in alts])
    ok = logits[:, :nt].argmax(axis=1) == tgt
    if (dur >= 0).any():
        ok &= logits[:, nt:].argmax(axis=1) == dur
    held = int(ok.sum())
    return held, len(alts)
