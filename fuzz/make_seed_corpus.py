#!/usr/bin/env python3
"""Writes the committed seed corpora of the fuzz targets (fuzz/corpus/<target>/): small valid inputs of every
layout each reader accepts, plus a few near misses. Standard library only, except the LM images, which are made
by the asrdec CLI given as the first argument. Usage: fuzz/make_seed_corpus.py ASRDEC"""

import gzip
import json
import os
import random
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
ASRDEC = sys.argv[1]
rng = random.Random(17)


def put(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def copy(target, source, name=None):
    with open(source, "rb") as f:
        put(target, name or os.path.basename(source), f.read())


def npy(descr, shape, data):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join(f"{d}, " for d in shape) if len(shape) != 1 else f"{shape[0]},")
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


# ---- npy: the reader's fixtures, and small CTC log-probabilities with ties, -inf and blank-heavy frames.
for name in ["f16_4.npy", "f32_2x3.npy", "f32_empty_0x5.npy", "f32_scalar.npy", "f32_v2.npy", "i32_3.npy",
             "i64_2x2.npy"]:
    copy("npy", os.path.join(ROOT, "tests", "data", "npy", name))
values = [rng.choice([0.0, -1.0, -2.5, -float("inf"), -0.5]) for _ in range(2 * 4 * 5)]
put("npy", "logits_2x4x5_f32.npy", npy("<f4", [2, 4, 5], struct.pack("<40f", *values)))
put("npy", "logits_1x3x3_f16.npy", npy("<f2", [1, 3, 3], struct.pack("<9e", *[-1.0, 0.0, -2.0] * 3)))

# ---- safetensors_model: tiny RNN-T (LSTM), TDT and stateless models in asrdec's transducer-v1 format.


def safetensors(tensors, metadata):
    header, data = {"__metadata__": metadata}, b""
    for name, (shape, values) in tensors.items():
        blob = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def weights(*shape):
    count = 1
    for d in shape:
        count *= d
    return (list(shape), [round(rng.uniform(-1, 1), 3) for _ in range(count)])


V, E, P, J = 4, 3, 3, 4
for kind, durations in [("rnnt", ""), ("tdt", "0,1,2")]:
    D = 0 if not durations else 3
    put("safetensors_model", f"{kind}_lstm.safetensors", safetensors({
        "predictor.embedding.weight": weights(V + 1, E),
        "predictor.lstm.0.weight_ih": weights(4 * P, E), "predictor.lstm.0.weight_hh": weights(4 * P, P),
        "predictor.lstm.0.bias_ih": weights(4 * P), "predictor.lstm.0.bias_hh": weights(4 * P),
        "joint.pred.weight": weights(J, P), "joint.pred.bias": weights(J),
        "joint.out.weight": weights(V + 1 + D, J), "joint.out.bias": weights(V + 1 + D),
    }, {"asrdec.format": "transducer-v1", "model_type": kind, "vocab_size": str(V), "durations": durations}))
put("safetensors_model", "rnnt_stateless.safetensors", safetensors({
    "predictor.embeds.0.weight": weights(V + 1, 2), "predictor.embeds.1.weight": weights(V + 1, 2),
    "joint.pred.weight": weights(J, 4), "joint.pred.bias": weights(J),
    "joint.out.weight": weights(V + 1, J), "joint.out.bias": weights(V + 1),
}, {"asrdec.format": "transducer-v1", "model_type": "rnnt", "vocab_size": str(V), "predictor": "stateless",
    "predictor_context": "2", "predictor_norm": "layer", "joint_activation": "tanh"}))
copy("safetensors_model", os.path.join(ROOT, "tests", "data", "safetensors", "small.safetensors"))

# ---- arpa: word models of orders 1-3, gzip'd, CRLF, with and without <unk>.
arpa_dir = os.path.join(ROOT, "tests", "data", "arpa")
for name in ["words_3gram.arpa", "tokens_1gram.arpa", "tokens_3gram_crlf.arpa", "tokens_3gram_no_unk.arpa",
             "tokens_3gram.arpa.gz"]:
    copy("arpa", os.path.join(arpa_dir, name))
put("arpa", "bigram.arpa", "\\data\\\nngram 1=4\nngram 2=2\n\n\\1-grams:\n-1\t<s>\t-0.3\n-1.2\t</s>\n-0.5\ta\t-0.2\n"
                           "-0.7\tb\n\n\\2-grams:\n-0.2\t<s> a\n-0.4\ta b\n\n\\end\\\n")

# ---- lm_image: the images of some of those models, made by `asrdec lm convert`.
os.makedirs(os.path.join(CORPUS, "lm_image"), exist_ok=True)
for source, options, name in [("words_3gram.arpa", [], "words_3gram.lm"),
                              ("tokens_3gram.arpa", ["--tokens", "8"], "tokens_3gram.lm"),
                              ("tokens_1gram.arpa", ["--tokens", "5"], "tokens_1gram.lm")]:
    subprocess.run([ASRDEC, "lm", "convert", "--lm", os.path.join(arpa_dir, source), "-o",
                    os.path.join(CORPUS, "lm_image", name)] + options, check=True, stderr=subprocess.DEVNULL)

# ---- openfst_graph: vector and const FSTs (aligned too), with ε-arcs, words, final weights, symbol tables.


def fst_string(s):
    return struct.pack("<i", len(s)) + s.encode()


def symbol_table():
    out = struct.pack("<i", 2125658996) + fst_string("words") + struct.pack("<qq", 3, 3)
    for key, word in enumerate(["<eps>", "hello", "world"]):
        out += fst_string(word) + struct.pack("<q", key)
    return out


def fst(kind, arcs_of_state, finals, flags=0, version=2):
    arc_count = sum(len(a) for a in arcs_of_state)
    out = struct.pack("<i", 2125659606) + fst_string(kind) + fst_string("standard") + struct.pack(
        "<iiQqqq", version, flags, 0, 0, len(finals), arc_count)
    if flags & 1:
        out += symbol_table()
    if flags & 2:
        out += symbol_table()
    if kind == "vector":
        for arcs, final in zip(arcs_of_state, finals):
            out += struct.pack("<fq", final, len(arcs))
            for arc in arcs:
                out += struct.pack("<iifi", *arc)
        return out
    aligned = version == 1 or flags & 4
    if aligned:
        out += b"\0" * ((16 - len(out) % 16) % 16)
    pos = 0
    for arcs, final in zip(arcs_of_state, finals):
        out += struct.pack("<fIIII", final, pos, len(arcs), 0, 0)
        pos += len(arcs)
    if aligned:
        out += b"\0" * ((16 - len(out) % 16) % 16)
    for arcs in arcs_of_state:
        for arc in arcs:
            out += struct.pack("<iifi", *arc)
    return out


inf = float("inf")
graph = [[(1, 1, 0.5, 1), (2, 0, 0.25, 0), (0, 0, 1.0, 2)], [(3, 2, 0.2, 1), (0, 0, 0.1, 2)], [(1, 0, 0.0, 2)]]
finals = [inf, 0.0, 0.5]
put("openfst_graph", "vector.fst", fst("vector", graph, finals))
put("openfst_graph", "vector_symbols.fst", fst("vector", graph, finals, flags=3))
put("openfst_graph", "const.fst", fst("const", graph, finals))
put("openfst_graph", "const_aligned.fst", fst("const", graph, finals, flags=4))
put("openfst_graph", "const_v1.fst", fst("const", graph, finals, version=1))

# ---- text_tables: the first byte picks the reader (0 lines, 1 tokens, 2 symbols, 3 lexicon, 4 boosts, 5 phrases).
tables = [
    (0, "lines.txt", "a b\r\n\nc\nlast"),
    (1, "tokens.txt", "<unk>\n\u2581the\ns\r\nx\n"),
    (1, "tokens_ids.txt", "<blk> 0\n\u2581a 1\nb 2\n"),
    (2, "words.txt", "<eps> 0\nhello 1\n\nworld\t3\n"),
    (2, "words_list.txt", "alpha\nbeta gamma\n"),
    (3, "lexicon.txt", "the \u2581th e\r\ncat \u2581c a t\n\nsat \u2581s a t\n"),
    (4, "boosts.txt", "hello 2.5\r\n\n  world\t-1\n"),
    (5, "phrases.txt", "# comment\r\n  new york \r\n\n\tlos angeles\n"),
]
for mode, name, text in tables:
    put("text_tables", name, bytes([mode]) + text.encode())

# ---- sentencepiece_model: the sample BPE model.
copy("sentencepiece_model", os.path.join(ROOT, "examples", "data", "bpe.model"))
# ---- safetensors_model, again: a tiny AED Transformer decoder (TransformerDecoderStep's format). Its own generator,
# so the seeds above do not change.
aed_rng = random.Random(23)


def aed_weights(*shape):
    count = 1
    for d in shape:
        count *= d
    return (list(shape), [round(aed_rng.uniform(-1, 1), 3) for _ in range(count)])


AV, AD, AE, AF, AP = 6, 4, 3, 5, 8  # tokens, width, encoder width, feed-forward width, positions
aed = {"embedding.tokens": aed_weights(AV, AD), "embedding.positions": aed_weights(AP, AD)}
for norm in ("self_norm", "cross_norm", "ffn_norm"):
    aed[f"layers.0.{norm}.weight"], aed[f"layers.0.{norm}.bias"] = aed_weights(AD), aed_weights(AD)
for attn, width in (("self_attn", AD), ("cross_attn", AE)):
    for proj in ("query", "key", "value", "out"):
        cols = width if proj in ("key", "value") else AD
        aed[f"layers.0.{attn}.{proj}.weight"], aed[f"layers.0.{attn}.{proj}.bias"] = aed_weights(AD, cols), aed_weights(AD)
aed["layers.0.ffn.in.weight"], aed["layers.0.ffn.in.bias"] = aed_weights(AF, AD), aed_weights(AF)
aed["layers.0.ffn.out.weight"], aed["layers.0.ffn.out.bias"] = aed_weights(AD, AF), aed_weights(AD)
aed["final_norm.weight"], aed["final_norm.bias"] = aed_weights(AD), aed_weights(AD)
aed["classifier.weight"], aed["classifier.bias"] = aed_weights(AV, AD), aed_weights(AV)
put("safetensors_model", "aed_tiny.safetensors", safetensors(aed, {"heads": "2", "bos_id": "4", "eos_id": "5",
                                                                   "prompt": "4,1"}))
# ---- safetensors_model, again: a tiny RNN-T whose tensors start at offsets that are not multiples of their element
# sizes, as the format allows: a BF16 tensor of odd length first moves every float32 tensor after it by 6 bytes (read
# through aligned copies). Its own generator, so the seeds above do not change.
odd_rng = random.Random(29)


def odd_weights(*shape):
    count = 1
    for d in shape:
        count *= d
    return (list(shape), [round(odd_rng.uniform(-1, 1), 3) for _ in range(count)])


odd_header, odd_data = {"__metadata__": {"asrdec.format": "transducer-v1", "model_type": "rnnt", "vocab_size": str(V),
                                         "predictor": "stateless", "predictor_context": "1"}}, b""
odd_header["extra.odd_bf16"] = {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}
odd_data += struct.pack("<3H", 0x3F80, 0xC000, 0x3F00)
for name, (shape, values) in {"predictor.embeds.0.weight": odd_weights(V + 1, 3), "joint.pred.weight": odd_weights(J, 3),
                              "joint.pred.bias": odd_weights(J), "joint.out.weight": odd_weights(V + 1, J),
                              "joint.out.bias": odd_weights(V + 1)}.items():
    blob = struct.pack(f"<{len(values)}f", *values)
    odd_header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(odd_data), len(odd_data) + len(blob)]}
    odd_data += blob
odd_text = json.dumps(odd_header).encode()
odd_text += b" " * ((8 - len(odd_text) % 8) % 8)
put("safetensors_model", "rnnt_unaligned.safetensors", struct.pack("<Q", len(odd_text)) + odd_text + odd_data)
print("seed corpora written to", CORPUS)
