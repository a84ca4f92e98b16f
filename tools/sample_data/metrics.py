"""Word error rate, computed the way ASR papers report it: edit operations
summed over the whole set, divided by the number of reference words."""


def edit_ops(ref, hyp):
    """(substitutions, deletions, insertions) of a minimal word alignment."""
    # Each cell holds (cost, subs, dels, ins); ties prefer substitutions,
    # which is the usual convention and gives stable counts.
    prev = [(j, 0, 0, j) for j in range(len(hyp) + 1)]
    for i in range(1, len(ref) + 1):
        cur = [(i, 0, i, 0)]
        for j in range(1, len(hyp) + 1):
            c, s, d, n = prev[j - 1]
            diag = (c + (ref[i - 1] != hyp[j - 1]),
                    s + (ref[i - 1] != hyp[j - 1]), d, n)
            c, s, d, n = prev[j]
            up = (c + 1, s, d + 1, n)
            c, s, d, n = cur[j - 1]
            left = (c + 1, s, d, n + 1)
            cur.append(min(diag, up, left, key=lambda x: x[0]))
        prev = cur
    return prev[-1][1:]


def corpus_wer(refs, hyps):
    """Return dict with wer, subs, dels, ins, ref_words."""
    subs = dels = ins = words = 0
    for r, h in zip(refs, hyps):
        s, d, n = edit_ops(r.split(), h.split())
        subs, dels, ins, words = subs + s, dels + d, ins + n, words + len(r.split())
    return {"wer": (subs + dels + ins) / max(words, 1), "subs": subs,
            "dels": dels, "ins": ins, "ref_words": words}
