"""Text corpus: the King James Bible from the Debian `bible-kjv` package.

The public-domain KJV is large enough (~790k words) to train a BPE model and
an n-gram LM, and its archaic but regular English gives decoders and language
models something real to work on. Test sentences are held out of the training
text so that an LM built from it does not simply memorise the references.
"""

import re
import subprocess


FULL_RANGE = "Gen1:1-Rev22:21"

_VERSE_START = re.compile(r"^\s+(\d+)\s+(.*)$")
# Clause boundaries used to cut long verses into sentence-sized utterances.
_CLAUSE_SPLIT = re.compile(r"[,;:.?!()]")
_NON_WORD = re.compile(r"[^a-z']+")

MIN_WORDS = 6
MAX_WORDS = 14
# Long names make some 14-word sentences twice as long as others; capping
# characters keeps utterances within ~6 s and the padded arrays small.
MAX_CHARS = 70


def read_bible_text():
    """Raw text of the whole Bible as printed by the `bible` program."""
    try:
        out = subprocess.run(["bible", FULL_RANGE], check=True,
                             capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin:/usr/local/bin",
                                  "LANG": "C.UTF-8"})
    except FileNotFoundError as exc:
        raise SystemExit("the `bible` program is missing; install the Debian "
                         "package bible-kjv") from exc
    return out.stdout


def parse_verses(text):
    """Return a list of (chapter_heading, verse_number, raw_text).

    The printout wraps verses over lines without indentation, and chapter
    headings follow a blank line; a heading is therefore recognised by
    position, not by its shape (book names such as "1 John" start with a
    digit, like a verse).
    """
    verses = []
    heading = None
    after_blank = True
    for line in text.split("\n"):
        if not line.strip():
            after_blank = True
            continue
        m = _VERSE_START.match(line)
        if after_blank and not m:
            heading = line.strip()
        elif m:
            verses.append([heading, int(m.group(1)), m.group(2).strip()])
        else:
            if not verses:
                raise ValueError("continuation line before any verse: %r" % line)
            verses[-1][2] += " " + line.strip()
        after_blank = False
    if len(verses) < 30000:
        raise ValueError("parsed only %d verses; unexpected `bible` output"
                         % len(verses))
    return [tuple(v) for v in verses]


def normalise(raw):
    """Lowercase words of letters and apostrophes; everything else separates.

    Hyphenated names (Beer-sheba) become two words, as an ASR transcript
    would usually write them. Leading apostrophes never occur in the KJV but
    are stripped so a stray quote cannot create an odd word.
    """
    words = []
    for w in _NON_WORD.split(raw.lower()):
        w = w.lstrip("'")
        if w:
            words.append(w)
    return words


def _fits(words):
    return (MIN_WORDS <= len(words) <= MAX_WORDS
            and len(" ".join(words)) <= MAX_CHARS)


def candidate_sentences(raw):
    """Sentence-sized pieces of one verse: the verse itself if it fits,
    otherwise runs of consecutive clauses that fit."""
    words = normalise(raw)
    if _fits(words):
        return [" ".join(words)]
    clauses = [normalise(c) for c in _CLAUSE_SPLIT.split(raw)]
    clauses = [c for c in clauses if c]
    out = []
    for i in range(len(clauses)):
        run = []
        for j in range(i, len(clauses)):
            run = run + clauses[j]
            if len(run) > MAX_WORDS:
                break
            if len(run) >= MIN_WORDS:
                if _fits(run):
                    out.append(" ".join(run))
                break
    return out


def split_corpus(verses, n_test, rng):
    """Pick `n_test` held-out sentences; return (test_sentences, train_lines).

    One sentence per verse at most, and the verse it came from is removed
    from training entirely. A candidate whose exact word sequence still
    occurs in the remaining training text (the KJV repeats many formulae)
    is rejected, so the references are genuinely unseen.
    """
    norm = [" ".join(normalise(v[2])) for v in verses]
    order = rng.permutation(len(verses))
    chosen = {}
    for vi in order:
        cands = candidate_sentences(verses[vi][2])
        if not cands:
            continue
        chosen[int(vi)] = cands[int(rng.integers(len(cands)))]
        if len(chosen) >= n_test * 3:
            break
    # A sentence is unseen when every occurrence in the whole text lies in
    # its own verse (which is then removed from training).
    blob = " " + " \n ".join(norm) + " "
    picked = []
    for vi, sent in chosen.items():
        key = " " + sent + " "
        if blob.count(key) != (" " + norm[vi] + " ").count(key):
            continue
        if sent in (s for _, s in picked):
            continue
        picked.append((vi, sent))
        if len(picked) == n_test:
            break
    if len(picked) < n_test:
        raise ValueError("could not find %d unseen test sentences" % n_test)
    picked_verses = {vi for vi, _ in picked}
    train = [norm[i] for i in range(len(norm))
             if i not in picked_verses and norm[i]]
    return [s for _, s in picked], train


def load_corpus(n_test, rng):
    verses = parse_verses(read_bible_text())
    test, train = split_corpus(verses, n_test, rng)
    return {"verses": len(verses), "test": test, "train": train}
