"""Shared fixtures: the sample data, the asrdec CLI whose JSON the Python results must equal, and a WFST graph."""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import asrdec

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "examples" / "data"


def _find_cli():
    path = os.environ.get("ASRDEC_CLI")
    if path:
        if not os.access(path, os.X_OK):
            raise RuntimeError(f"ASRDEC_CLI={path} is not an executable")
        return path
    for build in ("build", "build-cuda"):
        candidate = ROOT / build / "bin" / "asrdec"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


@pytest.fixture(scope="session")
def cli():
    """Runs the asrdec CLI with --json on the CPU and returns one dict per utterance."""
    path = _find_cli()
    if path is None:
        pytest.skip("the asrdec CLI is not built (set ASRDEC_CLI or build build/bin/asrdec)")

    def run(*args):
        out = subprocess.run([path, *map(str, args), "--json", "--device", "cpu"], check=True, capture_output=True,
                             text=True).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    run.path = path
    return run


@pytest.fixture(scope="session")
def vocab():
    return asrdec.Vocabulary.load(str(DATA / "tokens.txt"))


@pytest.fixture(scope="session")
def ctc_input():
    return np.load(DATA / "ctc" / "logprobs.npy"), np.load(DATA / "ctc" / "lengths.npy")


def transducer_input(kind):
    return np.load(DATA / kind / "enc_proj.npy"), np.load(DATA / kind / "lengths.npy")


@pytest.fixture(scope="session")
def wfst_graph(tmp_path_factory):
    """A TLG built from the sample lexicon and word LM by build_ctc_graph: (graph path, words path, summary)."""
    where = tmp_path_factory.mktemp("wfst")
    graph, words = where / "TLG.fst", where / "words.txt"
    summary = asrdec.build_ctc_graph(str(DATA / "tokens.txt"), str(DATA / "wfst" / "lexicon.txt"),
                                     str(DATA / "wfst" / "words_3gram.arpa.gz"), str(graph), str(words))
    return graph, words, summary
