"""WFST decoding with min_active against Kaldi's FasterDecoder (kaldi-decoder on PyPI) on the CTC sample.

Kaldi's min_active keeps at least that many tokens per frame when the beam keeps fewer; asrdec's
WfstDecoderConfig.min_active follows Kaldi's GetCutoff. At tight beams both decoders find the same words for the
sample's utterances and both lose them the same way without min_active. (Kaldi also widens its next frame's beam by
its beam_delta and visits arcs in hash order, so an utterance may differ.)
"""

import os
import subprocess

import numpy as np
import pytest

import asrdec

kd = pytest.importorskip("kaldi_decoder", reason="kaldi-decoder is not installed (pip install kaldi-decoder)")
kaldifst = pytest.importorskip("kaldifst", reason="kaldifst is not installed (pip install kaldifst)")

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
DATA = os.path.join(ROOT, "examples", "data")


@pytest.fixture(scope="module")
def tlg(tmp_path_factory):
    out = tmp_path_factory.mktemp("wfst")
    cli = os.environ.get("ASRDEC_CLI")
    if not cli:
        pytest.skip("ASRDEC_CLI (the asrdec command of the C++ build) is not set")
    subprocess.run([cli, "graph", "build", "--tokens", os.path.join(DATA, "tokens.txt"), "--lexicon",
                    os.path.join(DATA, "wfst", "lexicon.txt"), "--arpa", os.path.join(DATA, "wfst", "words_3gram.arpa.gz"),
                    "-o", str(out / "TLG.fst"), "--words-out", str(out / "words.txt")],
                   check=True, capture_output=True)
    return str(out / "TLG.fst")


def kaldi_words(fst, logprobs, lengths, scale, beam, min_active):
    decoder = kd.FasterDecoder(fst, kd.FasterDecoderOptions(beam=beam, max_active=10000, min_active=min_active))
    out = []
    for u in range(len(lengths)):
        decoder.decode(kd.DecodableCtc(scale * logprobs[u, :lengths[u]]))
        ok, best = decoder.get_best_path()
        assert ok
        _, _, olabels, _ = kaldifst.get_linear_symbol_sequence(best)
        out.append([o for o in olabels if o != 0])
    return out


def test_min_active_changes_results_as_kaldis_does(tlg):
    fst = kaldifst.StdVectorFst.read(tlg)
    graph = asrdec.WfstGraph.load(tlg)
    logprobs = np.load(os.path.join(DATA, "ctc", "logprobs.npy")).astype(np.float32)
    lengths = np.load(os.path.join(DATA, "ctc", "lengths.npy"))
    scale = 2.0
    exact = kaldi_words(fst, logprobs, lengths, scale, 17.0, 20)
    for beam in (4.0, 3.0, 2.0):
        lost = {}
        for min_active in (0, 20):
            want = kaldi_words(fst, logprobs, lengths, scale, beam, min_active)
            decoder = asrdec.WfstDecoder(graph, beam=beam, min_active=min_active, acoustic_scale=scale)
            got = [r.words for r in decoder.decode(logprobs, lengths)]
            same = sum(g == w for g, w in zip(got, want))
            assert same >= len(lengths) - 2, "beam %g, min_active %d: %d of %d utterances equal Kaldi's" % (
                beam, min_active, same, len(lengths))
            lost[min_active] = sum(g != e for g, e in zip(got, exact))
        # The tight beam loses the wide beam's words; min_active recovers most of them, for both decoders.
        assert lost[0] > 5 and lost[20] < lost[0] / 3, (beam, lost)


def test_nbest_lists_distinct_word_sequences_best_first(tlg):
    graph = asrdec.WfstGraph.load(tlg)
    logprobs = np.load(os.path.join(DATA, "ctc", "logprobs.npy")).astype(np.float32)[:8]
    lengths = np.load(os.path.join(DATA, "ctc", "lengths.npy"))[:8]
    decoder = asrdec.WfstDecoder(graph, acoustic_scale=2.0)
    best = decoder.decode(logprobs, lengths)
    lists = decoder.decode_nbest(logprobs, lengths, 4)
    assert sum(len(l) > 1 for l in lists) >= 4
    for b, l in zip(best, lists):
        assert 1 <= len(l) <= 4
        assert l[0].words == b.words and l[0].cost == b.cost
        assert len({tuple(r.words) for r in l}) == len(l)
        assert all(x.cost <= y.cost for x, y in zip(l, l[1:]))
    with pytest.raises(asrdec.InvalidArgument, match="n must be at least 1"):
        decoder.decode_nbest(logprobs, lengths, 0)
    # The CUDA executor's memory and fallback counters read 0 on the CPU.
    assert (decoder.device_bytes, decoder.lane_device_bytes, decoder.host_fallbacks) == (0, 0, 0)
