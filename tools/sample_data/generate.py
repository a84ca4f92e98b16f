"""Build examples/data: tokenizer, CTC sample, RNN-T and TDT samples.

Every random draw comes from a generator keyed by (seed, purpose, ...), so
one part can change without reshuffling the others, and a run is a pure
function of the seed (on a given numpy/BLAS build).
"""

import os
import time
import zlib
from collections import Counter

import numpy as np

from . import aed, bpe, corpus, ctc, errors, greedy, lm, metrics, wfst, writers
from . import transducer_model as tm
from . import transducer_sim as ts

EMB_DIM = HIDDEN = JOINT = 64


def keyed_rng(seed, *keys):
    ints = [zlib.crc32(k.encode()) if isinstance(k, str) else int(k)
            for k in keys]
    return np.random.default_rng([seed] + ints)


def _hyp_texts(piece_list, outputs):
    return [bpe.detokenise(piece_list, o["tokens"]) for o in outputs]


def _mb(n):
    return "%.2f MB" % (n / 1e6) if n >= 1e5 else "%.1f kB" % (n / 1e3)


def _error_counts(events_per_utt):
    c = Counter(e.kind for evs in events_per_utt for e in evs)
    return "S/D/I %d/%d/%d" % (c["sub"], c["del"], c["ins"])


def _ter(ref_tokens, outputs):
    errs = sum(sum(metrics.edit_ops(r, o["tokens"]))
               for r, o in zip(ref_tokens, outputs))
    return errs / sum(len(r) for r in ref_tokens)


def _summary(name, folder, lengths, ref_tokens, outputs, refs, piece_list,
             events, extra):
    frames = int(lengths.sum())
    n_ref = sum(len(r) for r in ref_tokens)
    n_hyp = sum(len(o["tokens"]) for o in outputs)
    w = metrics.corpus_wer(refs, _hyp_texts(piece_list, outputs))
    sizes = writers.file_sizes(folder)
    lines = [
        "%s: %d utterances, %d frames (T_max %d), %d reference tokens, "
        "%d emitted, %.2f frames/token" % (
            name, len(lengths), frames, int(lengths.max()), n_ref, n_hyp,
            frames / n_ref),
        "  planted token errors %s; greedy token error rate %.2f%%; "
        "greedy WER %.2f%% (S %d, D %d, I %d of %d words)" % (
            _error_counts(events), 100 * _ter(ref_tokens, outputs),
            100 * w["wer"], w["subs"], w["dels"], w["ins"], w["ref_words"]),
    ]
    lines += ["  " + e for e in extra]
    lines.append("  files: " + ", ".join(
        "%s %s" % (k, _mb(v)) for k, v in sizes.items()))
    return lines


def build_ctc(out, seed, refs, ref_tokens, piece_list, em):
    folder = os.path.join(out, "ctc")
    os.makedirs(folder, exist_ok=True)
    blank = bpe.VOCAB_SIZE
    events = errors.plan_errors(ref_tokens, keyed_rng(seed, "ctc-errors"), em)
    logprobs, lengths, planted = ctc.simulate(
        events, em.similar, blank, keyed_rng(seed, "ctc-frames"))
    outputs = [greedy.ctc_greedy(logprobs[u], lengths[u], blank)
               for u in range(len(lengths))]
    for u, (o, (tok, st)) in enumerate(zip(outputs, planted)):
        if o["tokens"] != tok or o["timestamps"] != st:
            raise AssertionError("CTC utterance %d decodes differently" % u)
        if tok != errors.emitted(events[u]):
            raise AssertionError("CTC utterance %d lost an event" % u)
    writers.write_npy(os.path.join(folder, "logprobs.npy"), logprobs, "f2")
    writers.write_npy(os.path.join(folder, "lengths.npy"), lengths, "i4")
    writers.write_lines(os.path.join(folder, "refs.txt"), refs)
    writers.write_expected(os.path.join(folder, "expected_greedy.jsonl"),
                           outputs)
    # Decode the files as written, not the arrays in memory.
    lp = np.load(os.path.join(folder, "logprobs.npy"))
    ln = np.load(os.path.join(folder, "lengths.npy"))
    again = [greedy.ctc_greedy(lp[u], ln[u], blank) for u in range(len(ln))]
    if again != outputs:
        raise AssertionError("CTC files do not reproduce expected output")
    valid = np.concatenate([lp[u, :ln[u]] for u in range(len(ln))])
    v32 = valid.astype(np.float32)
    srt = np.sort(v32, axis=1)
    blank_frames = float(np.mean(v32.argmax(axis=1) == blank))
    extra = ["blank-argmax frames %.1f%%; smallest top-1/top-2 log-prob gap "
             "%.3f; frames with gap < 1 nat: %.1f%%" % (
                 100 * blank_frames, float((srt[:, -1] - srt[:, -2]).min()),
                 100 * float(np.mean(srt[:, -1] - srt[:, -2] < 1.0)))]
    return _summary("ctc", folder, ln, ref_tokens, outputs, refs, piece_list,
                    events, extra)


def build_transducer(out, seed, model_type, refs, ref_tokens, piece_list,
                     em):
    folder = os.path.join(out, model_type)
    os.makedirs(folder, exist_ok=True)
    model = tm.random_model(model_type, bpe.VOCAB_SIZE, EMB_DIM, HIDDEN,
                            JOINT, keyed_rng(seed, model_type + "-model"),
                            confusions=em.similar)

    base = errors.plan_errors(ref_tokens,
                              keyed_rng(seed, model_type + "-errors"), em)
    res = ts.simulate(
        model, base,
        lambda ev, rng: errors.relabel(ev, rng, em),
        lambda u, a: keyed_rng(seed, model_type + "-frames", u, a))
    return _finish_transducer(folder, model, res, refs, ref_tokens,
                              piece_list, model_type)


def _finish_transducer(folder, model, res, refs, ref_tokens, piece_list,
                       name):
    """Write one transducer set, re-decode the files as written, summarise."""
    tm.write(model, os.path.join(folder, "model.safetensors"))
    writers.write_npy(os.path.join(folder, "enc_proj.npy"), res["enc_proj"],
                      "f4")
    writers.write_npy(os.path.join(folder, "lengths.npy"), res["lengths"],
                      "i4")
    if refs is not None:
        writers.write_lines(os.path.join(folder, "refs.txt"), refs)
    writers.write_expected(os.path.join(folder, "expected_greedy.jsonl"),
                           res["outputs"])
    loaded = tm.read(os.path.join(folder, "model.safetensors"))
    enc = np.load(os.path.join(folder, "enc_proj.npy"))
    ln = np.load(os.path.join(folder, "lengths.npy"))
    decode = greedy.tdt_greedy if loaded.model_type == "tdt" \
        else greedy.rnnt_greedy
    for u in range(len(ln)):
        if decode(loaded, enc[u], ln[u]) != res["outputs"][u]:
            raise AssertionError("%s utterance %d: files do not reproduce "
                                 "the expected output" % (name, u))
    margin = min(ts.min_margin(loaded, enc[u], res["plans"][u])
                 for u in range(len(ln)))
    if margin < ts.MIN_MARGIN:
        raise AssertionError("%s: an argmax wins by only %.4f" % (name,
                                                                  margin))
    replans = sum(a - 1 for a in res["attempts"])
    alt = [ts.alternatives_held(loaded, enc[u], res["plans"][u])
           for u in range(len(ln))]
    extra = ["smallest argmax logit margin %.3f; re-planned utterances %d "
             "(%d re-plans); unrealisable errors dropped: %d; utterances "
             "stripped of all errors: %d" % (
                 margin, sum(a > 1 for a in res["attempts"]), replans,
                 res["errors_dropped"], len(res["errors_removed"])),
             "error-correcting alternative paths: %d of %d evaluations hold"
             % (sum(a[0] for a in alt), sum(a[1] for a in alt))]
    if loaded.model_type == "tdt":
        hist = Counter(d for o in res["outputs"] for d in o["durations"])
        extra.append("token durations " + ", ".join(
            "%d:%d" % (d, hist[d]) for d in loaded.durations))
        evaluated = sum(len({e.t for e in p.evals}) for p in res["plans"])
        extra.append("evaluated frames %d of %d" % (evaluated, int(ln.sum())))
    else:
        multi = sum(sum(1 for c in Counter(o["timestamps"]).values() if c > 1)
                    for o in res["outputs"])
        extra.append("frames emitting 2+ tokens: %d" % multi)
    if refs is None:
        # Benchmark sets have no text: token error rate against the
        # planted reference token sequences instead of a WER.
        n_ref = sum(len(r) for r in ref_tokens)
        ter = _ter(ref_tokens, res["outputs"])
        return ["%s: %d utterances, %d frames (lengths %d-%d), %d reference "
                "tokens, %.2f frames/token" % (
                    name, len(ln), int(ln.sum()), int(ln.min()),
                    int(ln.max()), n_ref, ln.sum() / n_ref),
                "  planted token errors %s; greedy token error rate %.2f%%"
                % (_error_counts(res["events"]), 100 * ter)] + \
            ["  " + e for e in extra] + \
            ["  files: " + ", ".join("%s %s" % (k, _mb(v)) for k, v in
                                     writers.file_sizes(folder).items())]
    return _summary(name, folder, ln, ref_tokens, res["outputs"], refs,
                    piece_list, res["events"], extra)


def build_test_lms(out, seed, n_utts):
    text = corpus.load_corpus(n_utts, keyed_rng(seed, "corpus"))
    return lm.build_test_lms(out, text["train"])


def build_sample_data(out, seed, n_utts, with_lm=False, with_wfst=False):
    t0 = time.time()
    os.makedirs(out, exist_ok=True)
    text = corpus.load_corpus(n_utts, keyed_rng(seed, "corpus"))
    model_bytes = bpe.train_bpe(text["train"])
    sp = bpe.load_processor(model_bytes)
    piece_list = bpe.pieces(sp)
    if len(piece_list) != bpe.VOCAB_SIZE or piece_list[0] != "<unk>":
        raise AssertionError("unexpected BPE vocabulary")
    writers.write_bytes(os.path.join(out, "bpe.model"), model_bytes)
    writers.write_lines(os.path.join(out, "tokens.txt"), piece_list)
    refs = text["test"]
    ref_tokens = [bpe.encode(sp, s) for s in refs]
    for s, ids in zip(refs, ref_tokens):
        if bpe.detokenise(piece_list, ids) != s:
            raise AssertionError("BPE does not round-trip %r" % s)
    train_words = {w for line in text["train"] for w in line.split()}
    em = errors.ErrorModel(
        similar=bpe.similar_tokens(piece_list),
        insertable=bpe.short_tokens(piece_list),
        real_word=bpe.real_word_checker(piece_list, train_words))
    n_train_words = sum(len(l.split()) for l in text["train"])
    lines = ["text: %d verses parsed; %d training lines (%d words); %d test "
             "sentences (%d words, %.2f tokens/word)" % (
                 text["verses"], len(text["train"]), n_train_words, len(refs),
                 sum(len(s.split()) for s in refs),
                 sum(map(len, ref_tokens)) / sum(len(s.split())
                                                 for s in refs))]
    timings = []
    t = time.time()
    lines += build_ctc(out, seed, refs, ref_tokens, piece_list, em)
    timings.append(("ctc", time.time() - t))
    for model_type in ("rnnt", "tdt"):
        t = time.time()
        lines += build_transducer(out, seed, model_type, refs, ref_tokens,
                                  piece_list, em)
        timings.append((model_type, time.time() - t))
    t = time.time()
    lines += aed.build_sample_aed(out, ref_tokens, refs, em, bpe.VOCAB_SIZE,
                                  keyed_rng(seed, "aed-model"),
                                  keyed_rng(seed, "aed-errors"),
                                  keyed_rng(seed, "aed-frames"))
    timings.append(("aed", time.time() - t))
    if with_lm:
        t = time.time()
        lines += lm.build_sample_lm(out, text["train"], sp)
        timings.append(("lm", time.time() - t))
    if with_wfst:
        t = time.time()
        lines += wfst.build_sample_wfst(out, text["train"], refs, sp)
        timings.append(("wfst", time.time() - t))
    total = sum(writers.file_sizes(out).values())
    lines.append("total size of %s: %s" % (out, _mb(total)))
    lines.append("time: " + ", ".join("%s %.1f s" % kv for kv in timings) +
                 ", total %.1f s" % (time.time() - t0))
    return lines
