"""Speech for training and testing: KJV sentences spoken by espeak-ng.

The test set is the 40 held-out sentences of the simulated samples (the same references, so the real and simulated
samples compare one to one), spoken by voices that never speak in training: a voice is an espeak-ng accent (a base
voice) with a variant, and the test voices use bases and variants that no training voice uses. Training sentences
come from the training text only (the test verses are removed from it, tools/sample_data/corpus.py).

Every draw comes from a generator keyed by the seed and its purpose, so the audio is a pure function of the seed and
the espeak-ng build. Audio is 16 kHz mono 16-bit PCM (espeak-ng speaks at 22,050 Hz; sox resamples), with white
noise at a random signal-to-noise ratio mixed into part of it.
"""

import json
import os
import subprocess
import wave

import numpy as np

from tools.sample_data import corpus
from tools.sample_data.generate import keyed_rng

SAMPLE_RATE = 16000

TRAIN_BASES = ["en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-029"]
TRAIN_VARIANTS = ["m1", "m2", "m3", "m4", "m6", "f1", "f2", "f3", "f4", "adam", "Andy", "Annie", "david", "edward",
                  "john", "linda", "max", "paul", "rob", "robert", "steph"]
TEST_BASES = ["en-gb-x-gbclan", "en-gb-x-gbcwmd"]
TEST_VARIANTS = ["m5", "m7", "f5", "Alicia"]


def training_sentences(train_lines, count, rng):
    """`count` sentences of 6-14 words and at most 70 characters cut from the training verses (a verse gives one)."""
    order = rng.permutation(len(train_lines))
    out = []
    for i in order:
        words = train_lines[int(i)].split()
        if len(words) < corpus.MIN_WORDS:
            continue
        n = int(rng.integers(corpus.MIN_WORDS, corpus.MAX_WORDS + 1))
        start = int(rng.integers(0, max(1, len(words) - n + 1)))
        cut = words[start:start + n]
        while len(" ".join(cut)) > corpus.MAX_CHARS and len(cut) > corpus.MIN_WORDS:
            cut = cut[:-1]
        if len(" ".join(cut)) <= corpus.MAX_CHARS:
            out.append(" ".join(cut))
        if len(out) == count:
            return out
    raise ValueError("the training text gave only %d sentences" % len(out))


def speak(text, voice, rate, pitch, path):
    """Writes `text` spoken by espeak-ng `voice` (base+variant) at `rate` words/min and `pitch` (0-99) to `path`,
    resampled to 16 kHz."""
    raw = path + ".22k.wav"
    try:
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(rate), "-p", str(pitch), "-w", raw, text], check=True,
                       capture_output=True)
        subprocess.run(["sox", raw, "-r", str(SAMPLE_RATE), "-b", "16", path], check=True, capture_output=True)
    except FileNotFoundError as exc:
        raise SystemExit("espeak-ng and sox are needed: apt-get install espeak-ng sox") from exc
    finally:
        if os.path.exists(raw):
            os.remove(raw)


def read_wav(path):
    """16-bit mono PCM as float32 in [-1, 1)."""
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise ValueError("%s: expected 16-bit mono PCM" % path)
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        return data.astype(np.float32) / 32768.0, w.getframerate()


def write_wav(path, samples):
    pcm = np.clip(np.round(samples * 32768.0), -32768, 32767).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(pcm.tobytes())


def add_noise(path, snr_db, rng):
    samples, _ = read_wav(path)
    power = float(np.mean(samples ** 2)) + 1e-12
    noise = rng.standard_normal(len(samples)).astype(np.float32) * np.sqrt(power / 10 ** (snr_db / 10))
    write_wav(path, samples + noise)


def _utterance(rng, bases, variants):
    return {
        "voice": "%s+%s" % (bases[int(rng.integers(len(bases)))], variants[int(rng.integers(len(variants)))]),
        "rate": int(rng.integers(130, 191)),
        "pitch": int(rng.integers(25, 76)),
        "snr_db": float(rng.uniform(15.0, 40.0)) if rng.random() < 0.5 else None,
    }


def synthesize(out, seed, train_count):
    """Writes out/{train,test}/NNNNN.wav and out/{train,test}.jsonl (text, voice, rate, pitch, snr_db, path)."""
    text = corpus.load_corpus(40, keyed_rng(seed, "corpus"))  # the simulated samples' test sentences
    sets = {
        "test": (text["test"], TEST_BASES, TEST_VARIANTS),
        "train": (training_sentences(text["train"], train_count, keyed_rng(seed, "real-train-text")), TRAIN_BASES,
                  TRAIN_VARIANTS),
    }
    for name, (sentences, bases, variants) in sets.items():
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        rng = keyed_rng(seed, "real-voices", name)
        noise_rng = keyed_rng(seed, "real-noise", name)
        with open(os.path.join(out, name + ".jsonl"), "w") as manifest:
            for i, sentence in enumerate(sentences):
                u = _utterance(rng, bases, variants)
                u["text"] = sentence
                u["path"] = os.path.join(name, "%05d.wav" % i)
                speak(sentence, u["voice"], u["rate"], u["pitch"], os.path.join(out, u["path"]))
                if u["snr_db"] is not None:
                    add_noise(os.path.join(out, u["path"]), u["snr_db"], noise_rng)
                manifest.write(json.dumps(u) + "\n")
        yield "%s: %d utterances" % (name, len(sentences))


def read_manifest(out, name):
    with open(os.path.join(out, name + ".jsonl")) as f:
        return [json.loads(line) for line in f]
