"""Writes the tiny ARPA models the LM tests load: hand-chosen n-grams that cover the edge cases of KenLM's rules
(backoff chains of full length, absent and explicit-zero backoffs, tokens missing from the unigrams, <unk>
present or absent and inside higher orders, </s> at every order, <s> contexts, highest-order hits, a pruned
model with missing suffix n-grams, order 1, a word-level model). Token-level models use NeMo's convention: token
t is the character chr(t + 100), so tokens 0..7 are d..k. Run from this folder; the output is committed."""


def write(path, grams, header_comment=None):
    order = max(len(g[1].split()) for g in grams)
    by_order = {n: [g for g in grams if len(g[1].split()) == n] for n in range(1, order + 1)}
    lines = []
    if header_comment:
        lines += [header_comment, ""]
    lines.append("\\data\\")
    lines += [f"ngram {n}={len(by_order[n])}" for n in range(1, order + 1)]
    lines.append("")
    for n in range(1, order + 1):
        lines.append(f"\\{n}-grams:")
        for g in by_order[n]:
            prob, words = g[0], g[1]
            fields = [f"{prob}", words] + ([f"{g[2]}"] if len(g) > 2 else [])
            lines.append("\t".join(fields))
        lines.append("")
    lines.append("\\end\\")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


# Order 3, tokens 0..7 (d..k); j (6) and k (7) are not listed, so they score as <unk>.
tokens_3gram = [
    (-1.2, "<unk>", -0.1),
    (-99, "<s>", -0.5),
    (-0.9, "</s>"),
    (-0.7, "d", -0.3),
    (-0.8, "e", 0),          # explicit zero backoff
    (-1.0, "f"),             # no backoff column
    (-1.1, "g", -0.2),
    (-1.3, "h", -0.4),
    (-1.5, "i", -0.25),
    (-0.2, "<s> d", -0.15),
    (-0.4, "d e", -0.35),
    (-0.6, "e f", -0.05),
    (-0.3, "d </s>"),
    (-0.5, "f <unk>", -0.45),
    (-0.9, "<unk> d", -0.1),
    (-0.45, "g h", -0.6),
    (-0.55, "h </s>"),
    (-0.1, "<s> d e"),
    (-0.25, "d e f"),
    (-0.35, "e f </s>"),
    (-0.15, "f <unk> d"),
    (-0.65, "<unk> d e"),
    (-0.75, "g h i"),        # pruned: the suffix "h i" is not listed
]
write("arpa/tokens_3gram.arpa", tokens_3gram, "free text before the data section is allowed")

# The same without <unk>: missing tokens then score -100 (log10) plus the context backoffs.
write("arpa/tokens_3gram_no_unk.arpa",
      [g for g in tokens_3gram if "<unk>" not in g[1].split()])

# Order 4: a backoff chain of full length and highest-order hits.
tokens_4gram = [
    (-1.0, "<s>", -0.3), (-1.1, "</s>"), (-0.6, "d", -0.2), (-0.7, "e", -0.25), (-0.8, "f", -0.1), (-0.9, "g", -0.05),
    (-0.3, "<s> d", -0.1), (-0.4, "d e", -0.2), (-0.5, "e f", -0.15), (-0.55, "f g", -0.35), (-0.45, "e </s>"),
    (-0.2, "<s> d e", -0.05), (-0.3, "d e f", -0.4), (-0.35, "e f g", -0.12), (-0.25, "d e </s>"),
    (-0.1, "<s> d e f"), (-0.15, "d e f g"), (-0.05, "e f g </s>"),
]
write("arpa/tokens_4gram.arpa", tokens_4gram)

# Order 1: a unigram model (KenLM refuses these; asrdec accepts them).
write("arpa/tokens_1gram.arpa", [(-0.5, "<s>"), (-0.6, "</s>"), (-0.7, "d"), (-0.8, "e"), (-1.9, "<unk>")])

# Word-level, order 3.
write("arpa/words_3gram.arpa", [
    (-1.0, "<unk>"), (-99, "<s>", -0.4), (-1.2, "</s>"), (-0.9, "the", -0.3), (-1.3, "cat", -0.2),
    (-1.4, "sat", -0.1), (-1.6, "on"), (-1.7, "mat", 0),
    (-0.3, "<s> the", -0.2), (-0.5, "the cat", -0.3), (-0.6, "cat sat", -0.25), (-0.7, "sat on", -0.05),
    (-0.4, "on the", -0.15), (-0.8, "the mat", -0.1), (-0.2, "mat </s>"),
    (-0.1, "<s> the cat"), (-0.2, "the cat sat"), (-0.3, "on the mat"), (-0.05, "the mat </s>"),
])


# ---- malformed files: one defect each; the tests check the message of each ----
import gzip
import os

os.makedirs("arpa/malformed", exist_ok=True)
base = open("arpa/tokens_3gram.arpa").read().split("\n")
base = base[2:]  # without the free-text preamble


def variant(name, lines):
    with open(f"arpa/malformed/{name}.arpa", "w") as f:
        f.write("\n".join(lines))


def replace(old, new, count=1):
    text = "\n".join(base)
    assert old in text, old
    return text.replace(old, new, count).split("\n")


variant("no_data_section", [line for line in base if line != "\\data\\"])
variant("empty", [""])
variant("bad_count_line", replace("ngram 2=8", "ngram 2=eight"))
variant("order_gap", replace("ngram 2=8", "ngram 3=8"))
variant("count_too_high", replace("ngram 2=8", "ngram 2=9"))
variant("count_too_low", replace("ngram 2=8", "ngram 2=7"))
variant("positive_probability", replace("-0.4\td e\t-0.35", "0.4\td e\t-0.35"))
variant("nan_probability", replace("-0.4\td e\t-0.35", "nan\td e\t-0.35"))
variant("inf_backoff", replace("-0.4\td e\t-0.35", "-0.4\td e\tinf"))
variant("not_a_number", replace("-0.4\td e\t-0.35", "-0.4x\td e\t-0.35"))
variant("unknown_word", replace("-0.4\td e\t-0.35", "-0.4\td q\t-0.35"))
write("arpa/malformed/missing_bos.arpa", [g for g in tokens_3gram if "<s>" not in g[1].split()])
write("arpa/malformed/missing_eos.arpa", [g for g in tokens_3gram if "</s>" not in g[1].split()])
variant("backoff_at_highest_order", replace("-0.25\td e f", "-0.25\td e f\t-0.5"))
variant("too_many_fields", replace("-0.25\td e f", "-0.25\td e f\t0\t1"))
variant("too_few_words", replace("-0.25\td e f", "-0.25\td e"))
variant("wrong_section_header", replace("\\2-grams:", "\\two-grams:"))
variant("missing_end", [line for line in base if line != "\\end\\"])
variant("text_after_end", base + ["garbage"])
variant("duplicate_unigram", replace("-1.0\tf", "-1.0\te"))
variant("duplicate_bigram", replace("-0.6\te f\t-0.05", "-0.6\td e\t-0.05"))
variant("missing_context", replace("-0.25\td e f", "-0.25\tf d e"))
write("arpa/malformed/multi_character_token.arpa", tokens_3gram + [(-2.0, "ii")])
write("arpa/malformed/token_outside_vocabulary.arpa", tokens_3gram + [(-2.0, "\u0190")])  # token 300
variant("truncated_in_section", base[:base.index("\\2-grams:") + 3])
with open("arpa/malformed/truncated.arpa.gz", "wb") as f:
    f.write(gzip.compress("\n".join(base).encode())[:-40])

# The same model compressed and with CRLF line ends must load to identical scores.
text = "\n".join(base)
with open("arpa/tokens_3gram_crlf.arpa", "w", newline="") as f:
    f.write(text.replace("\n", "\r\n"))
with gzip.GzipFile("arpa/tokens_3gram.arpa.gz", "wb", mtime=0) as f:
    f.write(text.encode())
