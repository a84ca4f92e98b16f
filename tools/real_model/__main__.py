"""Command line: python3 -m tools.real_model {speech,train,export,all} (docs/real-speech.md)."""

import argparse
import os
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m tools.real_model",
                                     description="Synthesize speech, train the tiny real model, export it and the "
                                                 "real samples (see docs/real-speech.md).")
    parser.add_argument("stage", choices=["speech", "train", "export", "all"])
    parser.add_argument("--work", default="build/real-model", help="speech, features and checkpoints")
    parser.add_argument("--out", default="examples/data/real", help="where export writes the model and samples")
    parser.add_argument("--bpe", default="examples/data/bpe.model")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--train-utterances", type=int, default=6000)
    parser.add_argument("--epochs", type=int, default=28, help="training epochs (about 1.5 min each on 2 cores)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    speech_dir = os.path.join(args.work, "speech")
    checkpoint = os.path.join(args.work, "checkpoint.pt")

    def log(line):
        print(line, flush=True)

    if args.stage in ("speech", "all"):
        from . import speech
        for line in speech.synthesize(speech_dir, args.seed, args.train_utterances):
            log(line)
    if args.stage in ("train", "all"):
        from . import train
        train.train(speech_dir, args.bpe, checkpoint, seed=args.seed, epochs=args.epochs, threads=args.threads,
                    log=log)
    if args.stage in ("export", "all"):
        from . import export
        for line in export.export(checkpoint, speech_dir, args.bpe, args.out):
            log(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
