"""Command line: python3 -m tools.sample_data --out examples/data"""

import argparse
import os
import sys

# Threaded BLAS would make float rounding, and so the output bytes, depend
# on the thread count; these must be set before numpy is imported.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m tools.sample_data",
        description="Generate simulated ASR decoder sample data "
                    "(see docs/sample-data.md).")
    parser.add_argument("--out", help="output folder, e.g. examples/data")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--utterances", type=int, default=40,
                        help="number of test utterances (default 40)")
    parser.add_argument("--lm", action="store_true",
                        help="also build the sample LM into OUT/lm (needs IRSTLM)")
    parser.add_argument("--wfst", action="store_true",
                        help="also build the WFST lexicon and word LM into "
                             "OUT/wfst (needs IRSTLM)")
    parser.add_argument("--test-lms", metavar="DIR",
                        help="build the LMs the tests load into DIR (needs IRSTLM)")
    parser.add_argument("--bench-models", metavar="DIR",
                        help="also write benchmark-size random models and "
                             "inputs to DIR (not for the repository)")
    args = parser.parse_args(argv)
    if not args.out and not args.bench_models and not args.test_lms:
        parser.error("give --out, --test-lms and/or --bench-models")

    from . import bench, generate
    if args.out:
        for line in generate.build_sample_data(args.out, args.seed,
                                               args.utterances, args.lm,
                                               args.wfst):
            print(line, flush=True)
    if args.test_lms:
        for line in generate.build_test_lms(args.test_lms, args.seed,
                                            args.utterances):
            print(line, flush=True)
    if args.bench_models:
        for line in bench.build_bench(args.bench_models, args.seed):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
