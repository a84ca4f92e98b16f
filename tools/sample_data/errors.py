"""Token-level error model shared by the CTC and transducer simulations.

Errors are decided per reference token before any frames exist, so the three
sample sets share one notion of "what went wrong" and the greedy WER can be
steered with three rates (exact counts per set, random places). Each event records what the model emits, what the
reference says, and by how much the model prefers its mistake: the frame
synthesis makes the reference the runner-up at that distance.

The distance matters for realism. If every error were a near tie, any LM
would repair nearly all of them (shallow fusion with a token trigram took
the CTC sample from 10 % to 1.6 % WER in an early version); real models make
many confident errors, and many of their substitutions are real words that
an LM does not object to. Hence a spread of margins and a preference for
substitutions that spell a known word; with these, the same LM roughly
halves the CTC WER (docs/sample-data.md).
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ErrorRates:
    sub: float = 0.032   # similar-token substitution
    dele: float = 0.014  # token lost to blank
    ins: float = 0.010   # spurious short token after a reference token


# Margin (nats, or logits for transducers) by which an error beats the
# reference: (probability, low, high) bands.
MARGIN_BANDS = ((0.30, 0.1, 1.0), (0.30, 1.0, 3.0), (0.40, 3.0, 8.0))
REF_RUNNER_UP = 0.85    # CTC: share of error frames where the reference is 2nd
REAL_WORD_PREF = 0.7    # substitutions: prefer a confusion spelling a word


@dataclass(frozen=True)
class Event:
    kind: str            # "ok", "sub", "del", "ins"; "none": dropped "ins"
    emit: int            # token the model emits; -1 for "del"
    ref: int             # reference token; -1 for "ins"
    margin: float = 0.0  # how far the error beats the reference
    ref_second: bool = True


@dataclass
class ErrorModel:
    similar: list        # similar[t]: plausible confusions of token t
    insertable: list     # pool of spurious insertions
    rates: ErrorRates = field(default_factory=ErrorRates)
    # real_word(ref_ids, k, w): does putting w at position k spell a known
    # word? None: no text, no preference.
    real_word: object = None


def _margin(rng):
    u = rng.random()
    for p, lo, hi in MARGIN_BANDS:
        if u < p:
            return float(rng.uniform(lo, hi))
        u -= p
    return float(rng.uniform(MARGIN_BANDS[-1][1], MARGIN_BANDS[-1][2]))


def _substitute(ref_ids, k, rng, em):
    cands = em.similar[ref_ids[k]]
    if em.real_word is not None and rng.random() < REAL_WORD_PREF:
        words = [w for w in cands if em.real_word(ref_ids, k, w)]
        if words:
            cands = words
    return cands[int(rng.integers(len(cands)))]


def _error(kind, emit, ref, rng):
    return Event(kind, emit, ref, _margin(rng), bool(rng.random() <
                                                     REF_RUNNER_UP))


def plan_errors(ref_lists, rng, em):
    """Error events for a whole set of reference token sequences.

    The counts are fixed (rate x tokens, rounded) and only the places are
    random, so the three sample sets, drawn independently, still end up
    with comparable error rates on a set this small. The second of two
    equal tokens is never substituted or deleted: a transducer has just
    emitted it and (see transducer_model) no longer offers it as a
    runner-up, so the error could not be realised. The first and last
    tokens of an utterance are never deleted, keeping every utterance
    non-empty and its edges anchored.
    """
    total = sum(len(r) for r in ref_lists)
    sub_ok, del_ok, ins_ok = [], [], []
    for u, ref in enumerate(ref_lists):
        for k, y in enumerate(ref):
            repeated = k > 0 and ref[k - 1] == y
            if not repeated and em.similar[y]:
                sub_ok.append((u, k))
            if not repeated and 0 < k < len(ref) - 1:
                del_ok.append((u, k))
            if k < len(ref) - 1:
                ins_ok.append((u, k))

    def pick(pool, count, taken=frozenset()):
        pool = [p for p in pool if p not in taken]
        idx = rng.choice(len(pool), size=min(count, len(pool)), replace=False)
        return {pool[i] for i in sorted(idx)}

    subs = pick(sub_ok, round(em.rates.sub * total))
    dels = pick(del_ok, round(em.rates.dele * total), subs)
    inss = pick(ins_ok, round(em.rates.ins * total))
    out = []
    for u, ref in enumerate(ref_lists):
        events = []
        for k, y in enumerate(ref):
            if (u, k) in subs:
                events.append(_error("sub", _substitute(ref, k, rng, em), y,
                                     rng))
            elif (u, k) in dels:
                events.append(_error("del", -1, y, rng))
            else:
                events.append(Event("ok", y, y))
            if (u, k) in inss:
                w = em.insertable[int(rng.integers(len(em.insertable)))]
                events.append(_error("ins", w, -1, rng))
        out.append(events)
    return out


def emitted(events):
    return [e.emit for e in events if e.kind not in ("del", "none")]


def relabel(events, rng, em):
    """Same error kinds, places and margins, with fresh confusion labels.

    Used when a transducer cannot realise an error in context: drawing new
    positions instead would favour utterances with fewer errors and bias
    the error rate down.
    """
    refs = [e.ref for e in events if e.kind not in ("ins", "none")]
    out = []
    k = 0
    for e in events:
        if e.kind == "sub" and len(em.similar[e.ref]) > 1:
            w = _substitute(refs, k, rng, em)
            out.append(Event("sub", w, e.ref, e.margin, e.ref_second))
        elif e.kind == "ins":
            w = em.insertable[int(rng.integers(len(em.insertable)))]
            out.append(Event("ins", w, -1, e.margin, e.ref_second))
        else:
            out.append(e)
        if e.kind not in ("ins", "none"):
            k += 1
    return out


def drop(events, indices):
    """Make the given events correct, keeping positions (an insertion
    becomes "none"), so event indices stay valid."""
    out = list(events)
    for i in indices:
        e = out[i]
        if e.kind == "ins":
            out[i] = Event("none", -1, -1)
        elif e.kind in ("sub", "del"):
            out[i] = Event("ok", e.ref, e.ref)
    return out


def without_errors(events):
    """The error-free reading: last resort for an unrealisable utterance."""
    return [Event("ok", e.ref, e.ref) for e in events
            if e.kind not in ("ins", "none")]
