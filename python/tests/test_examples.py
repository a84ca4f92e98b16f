"""The Python examples (examples/python) run on the samples and print what they promise."""

import subprocess
import sys

import pytest

from conftest import DATA, ROOT

EXAMPLES = ROOT / "examples" / "python"


@pytest.mark.parametrize("script,expect", [
    ("ctc_decoding.py", "beam+LM: here is the patience of the saints"),
    ("transducer_decoding.py", "beam #0:"),
    ("wfst_decoding.py", "here is the patience of the saints (cost"),
    ("streaming_server.py", "40 of 40 equal to whole-utterance decoding"),
])
def test_example(script, expect, tmp_path):
    args = [sys.executable, str(EXAMPLES / script), str(DATA)] + ([str(tmp_path)] if script == "wfst_decoding.py" else [])
    out = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert expect in out.stdout, out.stdout
