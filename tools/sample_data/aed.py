"""Simulated attention encoder-decoder (AED) model: a tiny Transformer
decoder (the network of asrdec's TransformerDecoderStep, docs/model-format.md)
whose weights are built, not trained, and encoder outputs that drive it.

Encoder frame i tells the decoder what to say at generated step i: a
position code (one-hot of the decoder position that reads it) and a content
code, a·code(winner) + b·code(runner-up), over random unit token codes. The
decoder's cross-attention query is its own position, so at each step it
attends to its frame; the value carries the content code into the residual
stream, and the classifier (rows = the token codes) turns it into logits.
The codes are not orthogonal (128 dimensions for 259 tokens), which gives
every token some noise. Self-attention, feed-forward layers and token
embeddings are small random weights: they perturb, but do not decide.

Errors are planted per reference token by the shared error model
(substitutions with the reference as runner-up at the drawn margin;
deletions are realised as the next token winning with the deleted one as
runner-up; insertions as an extra step), then the whole network is run in
NumPy on every prefix, without a cache, to check that greedy decoding gives
exactly the planted tokens, and to write the expected result.
"""

import json
import os

import numpy as np

from . import errors, writers

N_POS = 64        # decoder positions (prompt included)
CODE = 128        # content-code width
FFN = 64
QUERY_SCALE = 30.0
WINNER = 16.0     # content weight of the planted winner
MIN_MARGIN = 0.05  # greedy's winner leads by at least this (nats), so no executor meets a near tie
SPECIALS = ["<|startoftranscript|>", "<|endoftext|>", "<|transcribe|>"]


def specials(vocab_size):
    bos, eos, task = vocab_size, vocab_size + 1, vocab_size + 2
    return bos, eos, task


def _layer_norm(x):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5)


def build_model(vocab, rng):
    """The weights, as the safetensors names of TransformerDecoderStep."""
    d = N_POS + CODE
    codes = rng.standard_normal((vocab, CODE))
    codes /= np.linalg.norm(codes, axis=1, keepdims=True)
    w = {}
    tok = np.zeros((vocab, d))
    tok[:, N_POS:] = 0.05 * rng.standard_normal((vocab, CODE))
    w["embedding.tokens"] = tok
    w["embedding.positions"] = np.eye(N_POS, d)
    p = "layers.0."

    def small(shape, scale=0.02):
        return scale * rng.standard_normal(shape)

    for norm in ("self_norm", "cross_norm", "ffn_norm"):
        w[p + norm + ".weight"] = np.ones(d)
        w[p + norm + ".bias"] = np.zeros(d)
    for name in ("query", "key", "value", "out"):
        w[p + "self_attn.%s.weight" % name] = small((d, d))
        w[p + "self_attn.%s.bias" % name] = np.zeros(d)
    q = np.zeros((d, d))
    q[:N_POS, :N_POS] = QUERY_SCALE * np.eye(N_POS)
    w[p + "cross_attn.query.weight"] = q
    k = np.zeros((d, d))
    k[:N_POS, :N_POS] = np.eye(N_POS) * np.sqrt(d)
    w[p + "cross_attn.key.weight"] = k
    v = np.zeros((d, d))
    v[N_POS:, N_POS:] = np.eye(CODE)
    w[p + "cross_attn.value.weight"] = v
    w[p + "cross_attn.out.weight"] = np.eye(d)
    for name in ("query", "key", "value", "out"):
        w[p + "cross_attn.%s.bias" % name] = np.zeros(d)
    w[p + "ffn.in.weight"] = small((FFN, d))
    w[p + "ffn.in.bias"] = np.zeros(FFN)
    w[p + "ffn.out.weight"] = small((d, FFN))
    w[p + "ffn.out.bias"] = np.zeros(d)
    w["final_norm.weight"] = np.ones(d)
    w["final_norm.bias"] = np.zeros(d)
    cls = np.zeros((vocab, d))
    cls[:, N_POS:] = codes
    w["classifier.weight"] = cls
    w["classifier.bias"] = np.zeros(vocab)
    return {k_: np.asarray(v_, dtype=np.float32) for k_, v_ in w.items()}, codes


def _attention(q, k, v):
    scores = q @ k.T / np.sqrt(q.shape[-1])
    if k.shape[0] == 0:
        return np.zeros_like(q)
    scores = scores - scores.max(axis=-1, keepdims=True)
    a = np.exp(scores)
    return (a / a.sum(axis=-1, keepdims=True)) @ v


def forward(w, tokens, encoder):
    """Log-probabilities of the next token after the whole sequence
    `tokens` (positions 0..n-1), recomputed without a cache, in float64."""
    W = {k_: v_.astype(np.float64) for k_, v_ in w.items()}
    n = len(tokens)
    x = W["embedding.tokens"][tokens] + W["embedding.positions"][:n]
    p = "layers.0."

    def lin(name, h):
        return h @ W[name + ".weight"].T + W[name + ".bias"]

    h = _layer_norm(x)
    q, k, v = (lin(p + "self_attn." + s, h) for s in ("query", "key", "value"))
    causal = np.array([_attention(q[i:i + 1], k[:i + 1], v[:i + 1])[0]
                       for i in range(n)])
    x = x + lin(p + "self_attn.out", causal)
    h = _layer_norm(x)
    enc = encoder.astype(np.float64)
    q = lin(p + "cross_attn.query", h)
    ck, cv = lin(p + "cross_attn.key", enc), lin(p + "cross_attn.value", enc)
    x = x + lin(p + "cross_attn.out", _attention(q, ck, cv))
    h = _layer_norm(x)
    x = x + lin(p + "ffn.out", np.maximum(lin(p + "ffn.in", h), 0.0))
    logits = lin("classifier", _layer_norm(x)[-1])
    logits -= logits.max()
    return logits - np.log(np.exp(logits).sum())


def _frames(plan, codes, prompt_len, rng):
    """Encoder frames for a plan of (winner, runner-up, margin) steps."""
    d = N_POS + CODE
    out = np.zeros((len(plan), d))
    for i, (winner, runner, margin) in enumerate(plan):
        out[i, prompt_len - 1 + i] = 1.0
        out[i, N_POS:] = WINNER * codes[winner] + \
            (WINNER - margin) * codes[runner] + \
            0.3 * rng.standard_normal(CODE)
    return out


def plan_steps(events, similar, eos, rng):
    """(winner, runner-up, margin) per generated step, eos last."""
    steps = []
    for k, ev in enumerate(events):
        if ev.kind == "del":
            continue  # the next step's winner follows; the deleted token is its runner-up
        runner = ev.ref if ev.kind == "sub" else None
        margin = ev.margin if ev.kind in ("sub", "ins") else float(rng.uniform(3.0, 8.0))
        if k > 0 and events[k - 1].kind == "del":
            runner, margin = events[k - 1].ref, events[k - 1].margin
        if runner is None or runner == ev.emit:
            pool = [t for t in similar[ev.emit] if t != ev.emit] or [eos]
            runner = pool[int(rng.integers(len(pool)))]
        steps.append((ev.emit, runner, margin))
    steps.append((eos, steps[-1][0] if steps else 0, float(rng.uniform(3.0, 8.0))))
    return steps


def greedy(w, prompt, encoder, eos, limit):
    tokens, score = [], 0.0
    for _ in range(limit):
        lp = forward(w, prompt + tokens, encoder)
        t = int(np.argmax(lp))
        score += float(lp[t])
        if t == eos:
            break
        tokens.append(t)
    return {"tokens": tokens, "timestamps": list(range(len(tokens))), "score": score}


def build_sample_aed(out, ref_tokens, refs, em, vocab_size, rng_model, rng_errors, rng_frames):
    folder = os.path.join(out, "aed")
    os.makedirs(folder, exist_ok=True)
    bos, eos, task = specials(vocab_size)
    vocab = vocab_size + len(SPECIALS)
    prompt = [bos, task]
    w, codes = build_model(vocab, rng_model)
    events = errors.plan_errors(ref_tokens, rng_errors, em)
    plans = [plan_steps(ev, em.similar, eos, rng_frames) for ev in events]
    longest = max(len(p) for p in plans)
    if longest + len(prompt) > N_POS:
        raise AssertionError("an utterance needs more than %d positions" % N_POS)
    enc = np.zeros((len(plans), longest, N_POS + CODE), dtype=np.float32)
    lengths = np.array([len(p) for p in plans], dtype=np.int32)
    outputs, margins, bumped = [], [], 0
    for u, plan in enumerate(plans):
        # The other tokens' codes and the small random layers perturb every logit; a planted margin that they
        # overturn (or leave closer than MIN_MARGIN) is widened (by 0.5 nats at a time) until greedy decoding gives the planted tokens.
        for _attempt in range(20):
            enc[u] = 0.0
            enc[u, :len(plan)] = _frames(plan, codes, len(prompt), rng_frames)
            planted = [s_[0] for s_ in plan[:-1]]
            wrong = []
            for i in range(len(plan)):
                lp = forward(w, prompt + planted[:i], enc[u, :lengths[u]])
                top2 = np.sort(lp)[-2:]
                if int(np.argmax(lp)) != plan[i][0] or top2[1] - top2[0] < MIN_MARGIN:
                    wrong.append(i)
            if not wrong:
                break
            bumped += len(wrong)
            plan = [(a, b, m + 0.5) if i in wrong else (a, b, m) for i, (a, b, m) in enumerate(plan)]
        else:
            raise AssertionError("AED utterance %d: planted tokens are not realisable" % u)
        o = greedy(w, prompt, enc[u, :lengths[u]], eos, N_POS - len(prompt))
        if o["tokens"] != planted:
            raise AssertionError("AED utterance %d decodes to %r, planted %r" % (u, o["tokens"], planted))
        for i in range(len(plan)):
            lp = np.sort(forward(w, prompt + planted[:i], enc[u, :lengths[u]]))
            margins.append(lp[-1] - lp[-2])
        outputs.append(o)
    metadata = {"heads": "1", "bos_id": str(bos), "eos_id": str(eos),
                "prompt": ",".join(map(str, prompt)),
                "special_tokens": ",".join(SPECIALS)}
    from safetensors.numpy import save_file
    save_file(w, os.path.join(folder, "model.safetensors"), metadata=metadata)
    writers.write_npy(os.path.join(folder, "encoder.npy"), enc, "f4")
    writers.write_npy(os.path.join(folder, "lengths.npy"), lengths, "i4")
    writers.write_lines(os.path.join(folder, "refs.txt"), refs)
    writers.write_expected(os.path.join(folder, "expected_greedy.jsonl"), outputs)
    ter_errors = sum(e.kind != "ok" for ev in events for e in ev)
    return ["aed: %d utterances, %d generated steps (T_max %d), V=%d (specials %s), prompt %s; planted "
            "token errors %d; margins widened %d times; smallest greedy log-prob margin %.3f" % (
                len(plans), int(lengths.sum()), longest, vocab, json.dumps(SPECIALS), prompt, ter_errors,
                bumped, float(min(margins)))]
