#!/usr/bin/env python3
"""Every asrdec command against hostile files and arguments, as an engine's user might hand them over.

Each case crafts its input here (standard library only), runs the CLI and requires: exit status 1 with
"asrdec: error:" and the expected words on stderr (never a crash, "unexpected error", or success on garbage),
within 10 s and, unless run under a sanitizer, within 300 MB of memory. Valid inputs that look unusual (CRLF text,
gzip'd files, const FSTs) must still be accepted. Usage: hostile_inputs_test.py ASRDEC DATA_DIR [--sanitized]
"""

import gzip
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib

ASRDEC, DATA = sys.argv[1], sys.argv[2]
SANITIZED = "--sanitized" in sys.argv
TIME_LIMIT_S = 10.0
RSS_LIMIT_MB = 300
WORK = tempfile.mkdtemp(prefix="asrdec_hostile_")
failures = []


def path(name):
    return os.path.join(WORK, name)


def write(name, data):
    with open(path(name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return path(name)


def run(args, stdin=b""):
    """Runs asrdec; returns (status, stderr, seconds, max RSS in MB)."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as inp:
        inp.write(stdin)
        inp.seek(0)
        proc = subprocess.Popen([ASRDEC] + args, stdin=inp, stdout=subprocess.DEVNULL, stderr=err)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid != 0:
                break
            if time.monotonic() - start > TIME_LIMIT_S:
                proc.send_signal(signal.SIGKILL)
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.005)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return proc.returncode, err.read().decode(errors="replace"), time.monotonic() - start, usage.ru_maxrss / 1024


def check(name, args, expect, stdin=b"", ok=False, option=False):
    """ok: must succeed; option: a bad command-line value, refused by the option parser (its own exit status)."""
    status, stderr, seconds, rss = run(args, stdin)
    problems = []
    if seconds > TIME_LIMIT_S:
        problems.append(f"took {seconds:.1f} s")
    if not SANITIZED and rss > RSS_LIMIT_MB:
        problems.append(f"used {rss:.0f} MB")
    if ok:
        if status != 0:
            problems.append(f"exit {status}, expected success")
    elif option:
        if status <= 0 or status == 2 or expect not in stderr:
            problems.append(f"exit {status}; expected the option parser to refuse it with {expect!r}")
    else:
        if status != 1:
            problems.append(f"exit {status}, expected 1")
        if "asrdec: error:" not in stderr or "unexpected error" in stderr:
            problems.append("no typed error message")
        if expect not in stderr:
            problems.append(f"message lacks {expect!r}")
    if problems:
        failures.append(name)
        print(f"FAIL {name}: {'; '.join(problems)}\n  stderr: {stderr.strip()[-600:]}")
    else:
        print(f"ok   {name} ({seconds:.2f} s, {rss:.0f} MB)")


# ---- .npy ---------------------------------------------------------------------------------------------------------

def npy(descr, shape, data=b"", version=1, header_len=None):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join(f"{d}, " for d in shape) if len(shape) != 1 else f"{shape[0]},")
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    size = len(header) if header_len is None else header_len
    if version == 1:
        prefix = b"\x93NUMPY\x01\x00" + struct.pack("<H", size)
    else:
        prefix = b"\x93NUMPY\x02\x00" + struct.pack("<I", size)
    return prefix + header.encode() + data


ctc = ["decode", "ctc-greedy", "--device", "cpu", "--logprobs"]
logits = f"{DATA}/ctc/logprobs.npy"
# 2^62 float32 elements are 2^64 bytes: the byte count wrapped to 0, and the CLI wrote 2^62 default lengths.
check("npy byte count wraps", ctc + [write("wrap.npy", npy("<f4", [2**62, 1, 1]))], "overflows 64 bits")
check("npy huge shape", ctc + [write("huge.npy", npy("<f4", [2**20, 2**20, 4]))], "truncated")
check("npy header length 2^31", ctc + [write("header.npy", npy("<f4", [1, 1, 2], version=2, header_len=2**31))],
      "larger than the")
check("npy int64 logits", ctc + [write("int.npy", npy("<i8", [1, 2, 3], bytes(48)))], "as float32 or float16")
check("npy /dev/zero", ctc + ["/dev/zero"], "not a .npy file")
check("npy empty file", ctc + [write("empty.npy", b"")], "not a .npy file")
lengths_f16 = write("lengths_f16.npy", npy("<f2", [40], bytes(80)))
check("float16 lengths", ctc + [logits, "--lengths", lengths_f16], "lengths must be int32 or int64, got float16")
bad_lengths = write("bad_lengths.npy", npy("<i4", [40], struct.pack("<40i", *([87] * 39 + [-3]))))
long_lengths = write("long_lengths.npy", npy("<i4", [40], struct.pack("<40i", *([5000] + [87] * 39))))
check("negative length", ctc + [logits, "--lengths", bad_lengths], "lengths[39] = -3 is outside [0, 87]")
check("length beyond T, ctc-beam", ["decode", "ctc-beam", "--device", "cpu", "--logprobs", logits, "--lengths",
                                    long_lengths], "lengths[0] = 5000 is outside [0, 87]")
rnnt = ["decode", "rnnt", "--device", "cpu", "--model", f"{DATA}/rnnt/model.safetensors", "--enc",
        f"{DATA}/rnnt/enc_proj.npy"]
check("length beyond T, chunked rnnt (was clamped)", rnnt + ["--chunk", "5", "--lengths", long_lengths],
      "lengths[0] = 5000 is outside")

# ---- safetensors model -------------------------------------------------------------------------------------------

with open(f"{DATA}/rnnt/model.safetensors", "rb") as f:
    model = f.read()
header_size = struct.unpack("<Q", model[:8])[0]
header = json.loads(model[8:8 + header_size])
body = model[8 + header_size:]


def model_with(change, extra=b""):
    h = json.loads(json.dumps(header))
    change(h)
    text = json.dumps(h).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + body + extra


def set_meta(key, value):
    return lambda h: h["__metadata__"].__setitem__(key, value)


check("model blank_id 2^32 (became 0)", rnnt[:-4] + ["--model", write("blank.st", model_with(set_meta("blank_id", "4294967296"))),
                                                      "--enc", f"{DATA}/rnnt/enc_proj.npy"], "metadata 'blank_id'")
check("model trailing bytes", rnnt[:-4] + ["--model", write("trailing.st", model_with(lambda h: None, b"junk" * 2)),
                                           "--enc", f"{DATA}/rnnt/enc_proj.npy"], "unexpected bytes after")
check("model truncated", rnnt[:-4] + ["--model", write("cut.st", model[: len(model) // 2]), "--enc",
                                      f"{DATA}/rnnt/enc_proj.npy"], "truncated")
check("--window 1e9 (ran for minutes)", rnnt + ["--algo", "wind", "--window", "1000000000"], "window must be in [1, 64]")
check("--max-symbols 1e9 (bad_alloc)", rnnt + ["--max-symbols", "1000000000"], "max_symbols_per_frame must be in [1, 100]")
check("--frame-shift-ms nan", ctc + [logits, "--frame-shift-ms", "nan"], "must be a finite number above 0",
      option=True)

# ---- ARPA ----------------------------------------------------------------------------------------------------------

def arpa(count="3", extra_unigram="-0.7\td", backoff=""):
    return (f"\\data\\\nngram 1={count}\n\n\\1-grams:\n-0.5\t<s>\n-0.6\t</s>\n{extra_unigram}{backoff}\n\n\\end\\\n")


score = ["lm", "score", "--tokens", "8", "--lm"]
check("ARPA count 1e12 (bad_alloc)", score + [write("c12.arpa", arpa("1000000000000"))], "n-gram count 1000000000000")
check("ARPA count 1e300 (undefined cast)", score + [write("c300.arpa", arpa("1e300"))], "not a non-negative integer")
check("ARPA backoff 1e39 (inf as float)", score + [write("b39.arpa", arpa(backoff="\t1e39"))], "outside [-1e+06")
check("ARPA NUL byte (glued lines)", score + [write("nul.arpa", arpa(extra_unigram="-0.7\td\x00-0.8\te"))], "NUL byte")
check("ARPA /dev/zero (spun forever)", score + ["/dev/zero"], "NUL byte")
# Written in pieces: the test's own memory is inherited by the children's high-water mark.
with gzip.open(path("bomb.arpa.gz"), "wb", 9) as bomb:
    bomb.write(b"\\data\\\nngram 1=3\n\n\\1-grams:\n-0.5\t")
    for _ in range(64):
        bomb.write(b"x" * (1 << 20))
check(f"ARPA gzip bomb line ({os.path.getsize(path('bomb.arpa.gz')) // 1024} KB holding 64 MB)",
      score + [path("bomb.arpa.gz")], "line longer than 1048576 bytes")
check("decode --lm with ARPA backoff 1e39", ctc + [logits, "--lm", path("b39.arpa")], "outside [-1e+06")
lexicon = write("lexicon.txt", "the th e\ncat c a t\n")
tokens = write("tokens.txt", "th\ne\nc\na\nt\n")
def build(lexicon_path, arpa_path):
    return ["graph", "build", "--tokens", tokens, "--lexicon", lexicon_path, "-o", path("g.fst"), "--words-out",
            path("g_words.txt"), "--arpa", arpa_path]


big_backoff = ("\\data\\\nngram 1=5\nngram 2=1\n\n\\1-grams:\n-1\t<unk>\n-99\t<s>\t1e39\n-1.2\t</s>\n-0.9\tthe\n"
               "-1.3\tcat\n\n\\2-grams:\n-0.3\t<s> the\n\n\\end\\\n")
check("graph build with backoff 1e39 (OpenFst exit(1))", build(lexicon, write("g39.arpa", big_backoff)),
      "outside [-1e+06")
good_arpa = big_backoff.replace("\t1e39", "\t-0.4")
check("graph build, CRLF lexicon and gzip ARPA (valid)",
      build(write("lexicon_crlf.txt", "the th e\r\ncat c a t\r\n"),
            write("good.arpa.gz", gzip.compress(good_arpa.encode()))), "", ok=True)
with open(path("g_words.txt")) as f:
    if "\r" in f.read():
        failures.append("CRLF lexicon")
        print("FAIL CRLF lexicon: the words table kept a \\r")

# ---- LM image -------------------------------------------------------------------------------------------------------

image = path("lm.bin")
status, stderr, _, _ = run(["lm", "convert", "--tokens", "8", "--lm", f"{DATA}/../../tests/data/arpa/tokens_3gram.arpa",
                            "-o", image])
assert status == 0, stderr
with open(image, "rb") as f:
    good_image = f.read()


def image_with(offset, fmt, value, fix_crc=True):
    data = bytearray(good_image)
    struct.pack_into(fmt, data, offset, value)
    if fix_crc:
        struct.pack_into("<I", data, 24, 0)
        crc = zlib.crc32(bytes(data[128:]), zlib.crc32(bytes(data[:128])))
        struct.pack_into("<I", data, 24, crc)
    return bytes(data)


states = struct.unpack_from("<q", good_image, 48)[0]
score_image = ["lm", "score", "--tokens", "8", "--lm"]
check("LM image vocabulary byte (SIGSEGV)", score_image + [write("v.bin", image_with(36, "<i", 7, fix_crc=False))],
      "header field vocabulary = 7")
check("LM image payload byte", score_image + [write("p.bin", good_image[:-9] + bytes([good_image[-9] ^ 1]) +
                                                    good_image[-8:])], "checksum mismatch")
check("LM image vocabulary kind, CRC recomputed", score_image + [write("v2.bin", image_with(36, "<i", 7))],
      "header field vocabulary = 7")
check("LM image states + 2^60, CRC recomputed", score_image + [write("s.bin", image_with(48, "<q", states + 2**60))],
      "header field states")
check("LM image misaligned header_bytes", score_image + [write("h.bin", image_with(12, "<I", 129))],
      "header field header_bytes = 129")
check("LM image NaN missing_offset", score_image + [write("n.bin", image_with(40, "<f", float("nan")))],
      "missing_offset = nan")
check("lm score --tokens 0 (became word level)", ["lm", "score", "--tokens", "0", "--lm", image], "--tokens must be at least 1")
check("lm score --tokens -5", ["lm", "score", "--tokens", "-5", "--lm", image], "--tokens must be at least 1")
copy = write("copy.bin", good_image)
check("lm convert -o onto its input", ["lm", "convert", "--tokens", "8", "--lm", copy, "-o", copy], "is the input")
with open(copy, "rb") as f:
    if f.read() != good_image:
        failures.append("lm convert -o")
        print("FAIL lm convert -o: the input was changed")

# ---- OpenFst graphs and words tables ------------------------------------------------------------------------------

def fst_string(s):
    return struct.pack("<i", len(s)) + s.encode()


def fst_header(fst_type, states, arcs, start=0, flags=0, version=2, type_len=None):
    kind = fst_string(fst_type) if type_len is None else struct.pack("<i", type_len) + fst_type.encode()
    return (struct.pack("<i", 2125659606) + kind + fst_string("standard") + struct.pack("<iiQqqq", version, flags, 0,
                                                                                          start, states, arcs))


def vector_fst(arcs_of_state, finals, num_states=None):
    out = fst_header("vector", len(finals) if num_states is None else num_states, 0)
    for arcs, final in zip(arcs_of_state, finals):
        out += struct.pack("<fq", final, len(arcs))
        for (i, o, w, n) in arcs:
            out += struct.pack("<iifi", i, o, w, n)
    return out


def const_fst(arcs_of_state, finals, corrupt_state=None):
    states, arcs, pos = b"", b"", 0
    for s, (a, final) in enumerate(zip(arcs_of_state, finals)):
        count = len(a)
        record_pos = 0xFFFFFFF0 if s == corrupt_state else pos
        states += struct.pack("<fIIII", final, record_pos, count, 0, 0)
        for (i, o, w, n) in a:
            arcs += struct.pack("<iifi", i, o, w, n)
        pos += count
    return fst_header("const", len(finals), pos) + states + arcs


inf = float("inf")
graph_arcs = [[(1, 1, 0.5, 1), (2, 0, 0.1, 0)], [(3, 2, 0.2, 1)]]
graph_finals = [inf, 0.0]
words = write("words.txt", "<eps> 0\nhello 1\nworld 2\n")
wfst = ["decode", "ctc-wfst", "--device", "cpu", "--logprobs", logits, "--words", words, "--graph"]
check("graph vector (valid)", wfst + [write("ok.fst", vector_fst(graph_arcs, graph_finals))], "", ok=True)
check("graph const (valid)", wfst + [write("ok_const.fst", const_fst(graph_arcs, graph_finals))], "", ok=True)
check("graph 8-byte file (90 s, 4 GB)", wfst + [write("eight.fst", vector_fst(graph_arcs, graph_finals)[:8])],
      "truncated")
check("graph 10^9 declared states (bad_alloc)",
      wfst + [write("billion.fst", vector_fst(graph_arcs, graph_finals, num_states=10**9))], "1000000000 × 12 bytes")
check("graph 2^40 declared states", wfst + [write("t40.fst", vector_fst(graph_arcs, graph_finals, num_states=2**40))],
      "header field numstates")
check("graph const with a corrupted state record (out of bounds)",
      wfst + [write("corrupt.fst", const_fst(graph_arcs, graph_finals, corrupt_state=1))], "state 1 claims arcs")
check("graph type string naming a library (dlopen)",
      wfst + [write("dl.fst", fst_header("libevil", 1, 0) + struct.pack("<fq", 0.0, 0))],
      "FST type 'libevil' is not supported")
check("graph type string of 2^31 - 1 bytes", wfst + [write("long.fst", fst_header("vector", 1, 0, type_len=2**31 - 1))],
      "a string of 2147483647 bytes")
check("graph /dev/zero", wfst + ["/dev/zero"], "not a regular file")
check("words table with id 2^31 - 1 (16 GB)",
      ["decode", "ctc-wfst", "--device", "cpu", "--logprobs", logits, "--graph", path("ok.fst"), "--words",
       write("huge_words.txt", "<eps> 0\nword 2147483647\n")], "beyond what a 24-byte table can number")
check("ctc-wfst --tokens of another width", wfst + [path("ok.fst"), "--tokens", tokens], "vocabulary mismatch")
check("ctc-wfst length beyond T, chunked (was clamped)", wfst + [path("ok.fst"), "--chunk", "5", "--lengths",
                                                                 long_lengths], "lengths[0] = 5000 is outside")
check("ctc-wfst --frame-shift-ms nan", wfst + [path("ok.fst"), "--frame-shift-ms", "nan"],
      "must be a finite number above 0", option=True)
check("ctc-wfst --frame-shift-ms -1", wfst + [path("ok.fst"), "--frame-shift-ms", "-1"],
      "must be a finite number above 0", option=True)
check("ctc-wfst CRLF boost list (valid)", wfst + [path("ok.fst"), "--boost", write("boost.txt", "hello 2.5\r\n")], "",
      ok=True)
check("ctc-wfst boost list with a NaN score", wfst + [path("ok.fst"), "--boost", write("nan.txt", "hello nan\n")],
      "finite score")

# ---- text tables -------------------------------------------------------------------------------------------------

check("token table /dev/zero", ctc + [logits, "--vocab", "/dev/zero"], "NUL byte")
check("references with a NUL byte", ctc + [logits, "--vocab", f"{DATA}/tokens.txt", "--refs",
                                           write("refs.txt", "a\x00b\n")], "NUL byte")
check("boost phrases /dev/zero", rnnt + ["--boost", "/dev/zero", "--bpe", f"{DATA}/bpe.model"], "NUL byte")
check("SentencePiece model of garbage", rnnt + ["--boost", write("phrases.txt", "hello\n"), "--bpe",
                                                write("garbage.model", b"\x0a\xff\xff\xff\xff\x0f")],
      "cannot load the SentencePiece model")

print(f"{len(failures)} of the cases failed" if failures else "all cases passed")
sys.exit(1 if failures else 0)
