"""SentencePiece BPE tokenizer and the token-similarity table.

A 256-piece BPE vocabulary is the size a small streaming ASR model might use;
it is also small enough that the CTC log-prob tensor stays a few MB.
"""

import io

import sentencepiece as spm

VOCAB_SIZE = 256
WORD_START = "\u2581"  # the SentencePiece word-boundary marker


def train_bpe(train_lines, vocab_size=VOCAB_SIZE):
    """Train BPE in memory and return the serialised model (bytes).

    Every option that could make two runs differ is pinned: one thread, the
    whole input in the given order (no sampling, no shuffling), identity
    normalisation (the text is already plain lowercase ASCII, and NFKC would
    also embed a large precompiled character map in the model file).
    """
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(train_lines),
        model_writer=model,
        model_type="bpe",
        vocab_size=vocab_size,
        character_coverage=1.0,
        normalization_rule_name="identity",
        remove_extra_whitespaces=True,
        unk_id=0, bos_id=-1, eos_id=-1, pad_id=-1,
        byte_fallback=False,
        split_digits=False,
        num_threads=1,
        input_sentence_size=0,
        shuffle_input_sentence=False,
        max_sentence_length=4096,
        minloglevel=2,
    )
    return model.getvalue()


def load_processor(model_bytes):
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(model_bytes)
    return sp


def pieces(sp):
    return [sp.IdToPiece(i) for i in range(sp.GetPieceSize())]


def encode(sp, sentence):
    ids = sp.EncodeAsIds(sentence)
    if 0 in ids:
        raise ValueError("reference contains <unk>: %r" % sentence)
    return ids


def detokenise(piece_list, ids):
    """Text of a token sequence the way an ASR front end would show it."""
    text = "".join(piece_list[i] for i in ids).replace(WORD_START, " ")
    return " ".join(text.split())


def _edit_distance(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1,
                           prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def similar_tokens(piece_list):
    """For each token id, the ids an acoustic model would plausibly confuse
    it with: same word-boundary status (so a substitution rarely splits or
    merges words) and the smallest edit distance between the letters.

    `<unk>` is never a confusion target, and never has one.
    """
    n = len(piece_list)
    body = [p.lstrip(WORD_START) for p in piece_list]
    start = [p.startswith(WORD_START) for p in piece_list]
    table = [[] for _ in range(n)]
    for i in range(1, n):
        dists = []
        for j in range(1, n):
            if j == i or start[j] != start[i]:
                continue
            dists.append((_edit_distance(body[i], body[j]), j))
        best = min(d for d, _ in dists)
        table[i] = [j for d, j in dists if d == best]
    return table


def short_tokens(piece_list):
    """Tokens of at most two letters: what spurious insertions look like
    (breath noise decoded as "a", "s", "the" fragments)."""
    return [i for i, p in enumerate(piece_list)
            if i > 0 and 1 <= len(p.lstrip(WORD_START)) <= 2]


def real_word_checker(piece_list, words):
    """real_word(ref_ids, k, w): whether replacing token k by w still spells
    a word of `words`, i.e. a substitution an LM would not flag as a typo."""
    starts = [p.startswith(WORD_START) for p in piece_list]

    def real_word(ref_ids, k, w):
        i = k
        while i > 0 and not starts[ref_ids[i]]:
            i -= 1
        j = k + 1
        while j < len(ref_ids) and not starts[ref_ids[j]]:
            j += 1
        spelled = "".join(piece_list[w if n == k else t]
                          for n, t in enumerate(ref_ids[i:j], i))
        return spelled.lstrip(WORD_START) in words

    return real_word
