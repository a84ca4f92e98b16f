"""n-gram language models for the samples and the tests, built with IRSTLM (Debian package irstlm).

- The sample LM (examples/data/lm/tokens_4gram.arpa.gz): a token-level 4-gram over the samples' BPE vocabulary
  (V = 256) in NeMo's convention (token t is the character chr(t + 100)), trained on the KJV training text —
  the same domain as the sample sentences, which are held out of it. Improved Kneser-Ney, singletons pruned,
  then entropy-pruned to keep the file small.
- The test LMs (tests/data/arpa): a token-level 6-gram over a separate BPE vocabulary of 1024 and a word-level
  3-gram, each from a slice of the training text, unpruned.

IRSTLM rounds some log probabilities to tiny positive values (e.g. 3.8e-07); those are written as 0, as KenLM's
build_binary -i reads them. Files are gzip-compressed with a fixed timestamp so that runs are reproducible.
"""

import gzip
import os
import re
import shutil
import subprocess
import tempfile

from . import bpe, corpus

IRSTLM = "/usr/lib/irstlm"
SAMPLE_ORDER = 4
SAMPLE_PRUNE = "1.5e-6"
TEST_TOKEN_VOCAB = 1024
TEST_TOKEN_LINES = 800
TEST_WORD_LINES = 1500


def _irstlm(tool):
    path = os.path.join(IRSTLM, "bin", tool)
    if not os.path.exists(path):
        raise SystemExit("IRSTLM is missing: install the Debian package irstlm")
    return path


def build_arpa(lines, order, out_path, prune=None, singletons=True):
    """Trains an ARPA model on `lines` (already in the LM's symbols) and writes it gzip-compressed."""
    env = dict(os.environ, IRSTLM=IRSTLM)
    with tempfile.TemporaryDirectory() as work:
        text = os.path.join(work, "train.txt")
        with open(text, "w") as f:
            for line in lines:
                f.write("<s> " + line + " </s>\n")
        model = os.path.join(work, "lm.ilm.gz")
        command = [_irstlm("build-lm.sh"), "-i", text, "-n", str(order), "-o", model, "-k", "1",
                   "-s", "improved-kneser-ney", "-t", os.path.join(work, "tmp")]
        if singletons:
            command.append("-p")
        subprocess.run(command, check=True, env=env, capture_output=True)
        arpa = os.path.join(work, "lm.arpa")
        if prune:
            subprocess.run([_irstlm("prune-lm"), "-t=" + prune, model, arpa], check=True, env=env,
                           capture_output=True)
        else:
            subprocess.run([_irstlm("compile-lm"), "--text=yes", model, arpa], check=True, env=env,
                           capture_output=True)
        clamped = 0
        positive = re.compile(r"^[0-9.]+(e-?[0-9]+)?\t")
        with open(arpa) as f, gzip.GzipFile(out_path, "wb", mtime=0) as out:
            for line in f:
                if positive.match(line):
                    line = "0" + line[line.index("\t"):]
                    clamped += 1
                out.write(line.encode())
    return clamped


def token_lines(sp, lines):
    return [" ".join(chr(i + 100) for i in sp.encode(line)) for line in lines]


def build_sample_lm(out, train_lines, sp):
    folder = os.path.join(out, "lm")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "tokens_4gram.arpa.gz")
    clamped = build_arpa(token_lines(sp, train_lines), SAMPLE_ORDER, path, prune=SAMPLE_PRUNE)
    return ["lm: %s, %d-gram, %d training lines, %.2f MB, %d positive log probabilities written as 0" % (
        path, SAMPLE_ORDER, len(train_lines), os.path.getsize(path) / 1e6, clamped)]


def build_test_lms(out, train_lines):
    os.makedirs(out, exist_ok=True)
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_proto=bpe.train_bpe(train_lines, vocab_size=TEST_TOKEN_VOCAB))
    lines = []
    tokens = os.path.join(out, "kjv_tokens_6gram_v1024.arpa.gz")
    build_arpa(token_lines(sp, train_lines[:TEST_TOKEN_LINES]), 6, tokens, singletons=False)
    words = os.path.join(out, "kjv_words_3gram.arpa.gz")
    build_arpa(train_lines[:TEST_WORD_LINES], 3, words, singletons=False)
    for path in (tokens, words):
        lines.append("test LM: %s, %.2f MB" % (path, os.path.getsize(path) / 1e6))
    return lines
