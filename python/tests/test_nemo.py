"""asrdec.nemo: a NeMo model's decoder side exported and decoded, and NeMo's decoding config mapped to asrdec's.

No NeMo or torch here: the "NeMo model" is the sample model's tensors under NeMo's names, behind the two methods
asrdec.nemo reads (state_dict, cfg)."""

import numpy as np
import pytest

import asrdec
import asrdec.nemo
from conftest import DATA, transducer_input

safetensors_numpy = pytest.importorskip("safetensors.numpy")
LM = str(DATA / "lm" / "tokens_4gram.arpa.gz")


class Tensor:
    """What NeMo's state dict holds, as far as asrdec.nemo reads it."""

    def __init__(self, array):
        self.array = array

    def detach(self):
        return self

    def float(self):
        return Tensor(self.array.astype(np.float32))

    def cpu(self):
        return self

    def numpy(self):
        return self.array


class FakeNemoModel:
    def __init__(self, state, cfg):
        self._state, self.cfg = state, cfg

    def state_dict(self):
        return {k: Tensor(v) for k, v in self._state.items()}


def nemo_transducer(kind, decoding=None):
    t = safetensors_numpy.load_file(str(DATA / kind / "model.safetensors"))
    state = {"decoder.prediction.embed.weight": t["predictor.embedding.weight"],
             "joint.pred.weight": t["joint.pred.weight"], "joint.pred.bias": t["joint.pred.bias"],
             "joint.joint_net.2.weight": t["joint.out.weight"], "joint.joint_net.2.bias": t["joint.out.bias"],
             "joint.enc.weight": np.ones((64, 32), np.float32), "joint.enc.bias": np.zeros(64, np.float32)}
    for part in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        state[f"decoder.prediction.dec_rnn.lstm.{part}_l0"] = t[f"predictor.lstm.0.{part}"]
    cfg = {"joint": {"jointnet": {"activation": "relu"}}, "decoder": {"normalization_mode": None}}
    if kind == "tdt":
        cfg["model_defaults"] = {"tdt_durations": [0, 1, 2, 3, 4]}
    if decoding is not None:
        cfg["decoding"] = decoding
    return FakeNemoModel(state, cfg)


def same(a, b):
    return [(h.tokens, h.timestamps, h.durations, h.score) for h in a] == [
        (h.tokens, h.timestamps, h.durations, h.score) for h in b]


@pytest.mark.parametrize("kind", ["rnnt", "tdt"])
def test_exported_model_decodes_as_the_original(kind, tmp_path):
    x, n = transducer_input(kind)
    original = asrdec.TransducerModel.load(str(DATA / kind / "model.safetensors"))
    want = asrdec.TransducerGreedyDecoder(original).decode(x, n)
    # The model's own decoding config (greedy_batch with max_symbols) is used when none is given.
    decoder = asrdec.nemo.decoder(nemo_transducer(kind, {"strategy": "greedy_batch", "greedy": {"max_symbols": 10}}),
                                  output=tmp_path / "exported.safetensors")
    assert isinstance(decoder, asrdec.TransducerGreedyDecoder) and "label-looping" in repr(decoder)
    assert same(decoder.decode(x, n), want)
    meta = asrdec.nemo.export(nemo_transducer(kind), tmp_path / "again.safetensors")
    assert meta["model_type"] == kind and meta["vocab_size"] == "256" and meta["blank_id"] == "256"


def test_beam_config_with_an_lm_maps_to_asrdec():
    x, n = transducer_input("tdt")
    decoding = {"strategy": "malsd_batch", "beam": {"beam_size": 3, "max_symbols": 5, "score_norm": False,
                                                    "ngram_lm_model": LM, "ngram_lm_alpha": 0.3,
                                                    "pruning_mode": "early", "blank_lm_score_mode": "no_score"}}
    decoder = asrdec.nemo.decoder(nemo_transducer("tdt"), decoding)
    model = asrdec.TransducerModel.load(str(DATA / "tdt" / "model.safetensors"))
    lm = asrdec.NgramLm.load(LM, vocab_size=model.vocab_size)
    direct = asrdec.TransducerBeamDecoder(model, algorithm="alsd++", beam=3, max_symbols_per_frame=5,
                                          length_normalized=False, lm=lm, lm_weight=0.3, pruning="early",
                                          blank_scoring="none")
    assert repr(decoder) == repr(direct)
    assert same(decoder.decode(x, n), direct.decode(x, n))
    name, kwargs = asrdec.nemo.decoding_kwargs(
        {"strategy": "maes_batch", "beam": {"beam_size": 2, "maes_num_steps": 3, "maes_expansion_gamma": 1.5}}, 256)
    assert name == "TransducerBeamDecoder"
    assert (kwargs["algorithm"], kwargs["beam"], kwargs["aes_num_steps"], kwargs["aes_expansion_gamma"]) == (
        "aes++", 2, 3, 1.5)
    assert asrdec.nemo.decoding_kwargs({"strategy": "greedy", "greedy": {"loop_labels": False}}, 256)[1] == {
        "algorithm": "frame_looping"}


def test_ctc_models_need_no_export(ctc_input):
    x, n = ctc_input
    model = FakeNemoModel({"decoder.decoder_layers.0.weight": np.zeros((257, 8, 1), np.float32)},
                          {"decoder": {"num_classes": 256}})
    decoder = asrdec.nemo.decoder(model, {"strategy": "beam_batch", "beam": {"beam_size": 4, "beam_beta": 0.5,
                                                                             "ngram_lm_model": LM,
                                                                             "ngram_lm_alpha": 0.4}})
    direct = asrdec.CtcBeamDecoder(beam=4, beam_beta=0.5, lm=asrdec.NgramLm.load(LM, vocab_size=256), lm_weight=0.4)
    assert repr(decoder) == repr(direct) and same(decoder.decode(x, n), direct.decode(x, n))
    assert isinstance(asrdec.nemo.decoder(model), asrdec.CtcGreedyDecoder)


def test_unknown_strategies_and_sources_are_refused():
    with pytest.raises(asrdec.Unsupported, match="'tsd'"):
        asrdec.nemo.decoding_kwargs({"strategy": "tsd"}, 256)
    with pytest.raises(asrdec.Unsupported, match="'pyctcdecode'"):
        asrdec.nemo.decoding_kwargs({"strategy": "pyctcdecode"}, 256, transducer=False)
    with pytest.raises(TypeError, match="NeMo model"):
        asrdec.nemo.decoder(42)
    bad = nemo_transducer("rnnt")
    del bad._state["joint.pred.weight"]
    with pytest.raises(ValueError, match="joint.pred.weight"):
        asrdec.nemo.decoder(bad)
