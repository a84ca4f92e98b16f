"""Real speech end to end: WAV audio -> the tiny real model's encoder (ONNX, log-mel front end included) -> every
asrdec decoder family -> text with word times and confidences.

    python examples/python/real_speech.py [audio.wav ...] [--data examples/data]

Without arguments it decodes the committed audio of examples/data/real/audio (16 kHz, mono, 16-bit PCM). Needs the
asrdec module, numpy and onnxruntime (PyPI). The model is tiny and trained on synthetic speech (docs/real-speech.md):
it shows the path from audio to text, not an accuracy to expect from a real model.
"""

import argparse
import pathlib
import tempfile
import wave

import numpy as np
import onnxruntime

import asrdec

FRAME_SHIFT = 0.08  # 10 ms features, 8x subsampling


def read_wav(path):
    with wave.open(str(path), "rb") as w:
        if (w.getnchannels(), w.getsampwidth(), w.getframerate()) != (1, 2, 16000):
            raise SystemExit(f"{path}: expected 16 kHz mono 16-bit PCM (sox in.wav -r 16000 -c 1 -b 16 out.wav)")
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("audio", nargs="*", help="WAV files (default: examples/data/real/audio/*.wav)")
    parser.add_argument("--data", default=str(pathlib.Path(__file__).parents[1] / "data"))
    args = parser.parse_args()
    data = pathlib.Path(args.data)
    real = data / "real"
    files = [pathlib.Path(a) for a in args.audio] or sorted((real / "audio").glob("*.wav"))

    # The encoder: one utterance at a time (a BiLSTM would read a padded batch's padding).
    encoder = onnxruntime.InferenceSession(str(real / "encoder.onnx"), providers=["CPUExecutionProvider"])
    outputs = [encoder.run(None, {"audio": read_wav(f)[None]}) for f in files]
    lengths = np.array([lp.shape[1] for lp, _ in outputs], dtype=np.int32)
    logprobs = np.zeros((len(files), lengths.max(), outputs[0][0].shape[2]), dtype=np.float32)
    enc_proj = np.zeros((len(files), lengths.max(), outputs[0][1].shape[2]), dtype=np.float32)
    for b, (lp, ep) in enumerate(outputs):
        logprobs[b, :lengths[b]] = lp[0]
        enc_proj[b, :lengths[b]] = ep[0]

    vocab = asrdec.Vocabulary.load(str(data / "tokens.txt"))
    lm = asrdec.NgramLm.load(str(data / "lm" / "tokens_4gram.arpa.gz"), vocab_size=len(vocab))
    model = asrdec.TransducerModel.load(str(real / "model.safetensors"))
    graph_dir = pathlib.Path(tempfile.mkdtemp())
    asrdec.build_ctc_graph(str(data / "tokens.txt"), str(data / "wfst" / "lexicon.txt"),
                           str(data / "wfst" / "words_3gram.arpa.gz"), str(graph_dir / "TLG.fst"),
                           str(graph_dir / "words.txt"))
    words = asrdec.SymbolTable.load(str(graph_dir / "words.txt"))
    token_decoders = {
        "CTC greedy": (asrdec.CtcGreedyDecoder(), logprobs),
        "CTC beam 8 + LM": (asrdec.CtcBeamDecoder(beam=8, lm=lm, lm_weight=0.5, beam_beta=1.0), logprobs),
        "RNN-T greedy": (asrdec.TransducerGreedyDecoder(model), enc_proj),
        "RNN-T ALSD++ beam 4 + LM": (asrdec.TransducerBeamDecoder(model, beam=4, lm=lm, lm_weight=0.3), enc_proj),
    }
    results = {name: d.decode(x, lengths) for name, (d, x) in token_decoders.items()}
    wfst = asrdec.WfstDecoder(asrdec.WfstGraph.load(str(graph_dir / "TLG.fst")), "cpu", beam=17.0,
                              acoustic_scale=2.0, word_start_columns=vocab.word_start_ids())
    wfst_results = wfst.decode(logprobs, lengths)

    for b, f in enumerate(files):
        print(f"{f} ({lengths[b]} frames)")
        for name, hyps in results.items():
            timed = asrdec.word_timings(hyps[b], vocab, FRAME_SHIFT, "min")
            print(f"  {name:26} {asrdec.join_words(timed)}")
            times = " ".join(f"{w.word}@{w.start_seconds:.2f}s({w.confidence:.2f})" for w in timed)
            print(f"  {'':26} {times}")
        timed = asrdec.word_timings(wfst_results[b], words, FRAME_SHIFT)
        print(f"  {'CTC WFST (TLG)':26} {asrdec.join_words(timed)}")


if __name__ == "__main__":
    main()
