"""NeMo models as asrdec decoders: export the decoder side of a NeMo RNN-T/TDT model (prediction network and joint)
into asrdec's transducer format, and build a ready decoder from NeMo's decoding config.

    import asrdec.nemo
    decoder = asrdec.nemo.decoder("parakeet-tdt.nemo", {"strategy": "malsd_batch", "beam": {"beam_size": 4}})
    decoder = asrdec.nemo.decoder(nemo_model)               # a loaded NeMo model object: its own cfg.decoding
    python -m asrdec.nemo model.nemo model.safetensors [--durations 0,1,2,3,4] [--config model_config.yaml]

The encoder is not exported: engines run it themselves and hand asrdec enc_proj, the encoder output passed
through the joint's encoder projection (joint.enc). That projection is written too, as encoder_projection.weight
and encoder_projection.bias, for engines that want to apply it outside the encoder; asrdec ignores it.

Supported: NeMo's RNNTDecoder (LSTM prediction network without layer norm or projection) and
StatelessTransducerDecoder, with RNNTJoint; CTC models need no export (their decoder is a CTC decoder of the
log-probabilities). torch (to read checkpoints or models), pyyaml or omegaconf (configs) and safetensors (to write
the model) are imported only when needed. See docs/export-nemo.md and docs/python.md.
"""

import argparse
import io
import os
import re
import sys
import tarfile
import tempfile

import numpy as np

FORMAT = "transducer-v1"


def convert(state, config, durations=None):
    """Maps a NeMo state dict (name -> numpy array) and model config (dict) to asrdec tensors and metadata."""
    tensors, meta = {}, {"asrdec.format": FORMAT}

    def take(name):
        if name not in state:
            raise ValueError(f"checkpoint has no tensor '{name}'")
        return np.ascontiguousarray(state[name])

    # Joint: pred / enc projections and the last Linear of joint_net (an optional Dropout shifts its index).
    outs = sorted(int(m.group(1)) for k in state for m in [re.match(r"joint\.joint_net\.(\d+)\.weight$", k)] if m)
    if not outs:
        raise ValueError("checkpoint has no joint.joint_net.<k>.weight (not an RNNTJoint?)")
    tensors["joint.out.weight"] = take(f"joint.joint_net.{outs[-1]}.weight")
    tensors["joint.out.bias"] = take(f"joint.joint_net.{outs[-1]}.bias")
    tensors["joint.pred.weight"] = take("joint.pred.weight")
    tensors["joint.pred.bias"] = take("joint.pred.bias")
    if "joint.enc.weight" in state:
        tensors["encoder_projection.weight"] = take("joint.enc.weight")
        tensors["encoder_projection.bias"] = take("joint.enc.bias")

    joint_cfg = (config.get("joint") or {}).get("jointnet") or {}
    meta["joint_activation"] = str(joint_cfg.get("activation", "relu")).lower()

    decoder_cfg = config.get("decoder") or {}
    if any(k.startswith("decoder.prediction.embeds.") for k in state):
        context = len([k for k in state if re.match(r"decoder\.prediction\.embeds\.\d+\.weight$", k)])
        for i in range(context):
            tensors[f"predictor.embeds.{i}.weight"] = take(f"decoder.prediction.embeds.{i}.weight")
        vocab_rows = tensors["predictor.embeds.0.weight"].shape[0]
        meta["predictor"] = "stateless"
        meta["predictor_context"] = str(context)
        norm = decoder_cfg.get("normalization_mode")
        meta["predictor_norm"] = "layer" if norm == "layer" else "none"
    else:
        tensors["predictor.embedding.weight"] = take("decoder.prediction.embed.weight")
        vocab_rows = tensors["predictor.embedding.weight"].shape[0]
        layers = 0
        while f"decoder.prediction.dec_rnn.lstm.weight_hh_l{layers}" in state:
            for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                tensors[f"predictor.lstm.{layers}.{kind}"] = take(f"decoder.prediction.dec_rnn.lstm.{kind}_l{layers}")
            layers += 1
        if layers == 0:
            raise ValueError("no decoder.prediction.dec_rnn.lstm.* tensors: a layer-normalised or projected LSTM "
                             "prediction network is not supported")
        meta["predictor"] = "lstm"
        meta["predictor_layers"] = str(layers)

    vocab = vocab_rows - 1
    extra = tensors["joint.out.weight"].shape[0] - vocab_rows
    if extra < 0:
        raise ValueError(f"joint has {tensors['joint.out.weight'].shape[0]} outputs, fewer than the {vocab_rows} labels")
    if extra > 0:
        if durations is None:
            durations = (config.get("model_defaults") or {}).get("tdt_durations")
        if durations is None:
            raise ValueError(f"the joint has {extra} extra outputs (TDT) but no durations: pass --durations")
        durations = [int(d) for d in durations]
        if len(durations) != extra:
            raise ValueError(f"{len(durations)} durations given for {extra} duration outputs")
    meta["model_type"] = "tdt" if extra > 0 else "rnnt"
    meta["durations"] = ",".join(str(d) for d in durations) if extra > 0 else ""
    meta["vocab_size"] = str(vocab)
    meta["blank_id"] = str(vocab)  # NeMo puts the blank last
    return tensors, meta


def read_checkpoint(path, config_path=None):
    import torch
    import yaml

    config = {}
    if tarfile.is_tarfile(path):
        with tarfile.open(path) as archive:
            members = {m.name.split("/")[-1]: m for m in archive.getmembers()}
            state = torch.load(io.BytesIO(archive.extractfile(members["model_weights.ckpt"]).read()),
                               map_location="cpu")
            if "model_config.yaml" in members:
                config = yaml.safe_load(archive.extractfile(members["model_config.yaml"]).read())
    else:
        state = torch.load(path, map_location="cpu")
        state = state.get("state_dict", state)
    if config_path:
        with open(config_path) as f:
            config = yaml.safe_load(f)
    return {k: v.float().numpy() for k, v in state.items() if hasattr(v, "numpy")}, config


def _state_and_config(source, config_path=None):
    """(state dict as numpy arrays, model config as a dict) of a .nemo/.ckpt path or a loaded NeMo model."""
    if isinstance(source, (str, os.PathLike)):
        return read_checkpoint(os.fspath(source), config_path)
    if not (hasattr(source, "state_dict") and hasattr(source, "cfg")):
        raise TypeError(f"expected a .nemo or checkpoint path, or a NeMo model object, got {type(source).__name__}")
    state = {k: v.detach().float().cpu().numpy() for k, v in source.state_dict().items() if hasattr(v, "detach")}
    try:
        from omegaconf import OmegaConf
        config = OmegaConf.to_container(source.cfg, resolve=True)
    except ImportError:
        config = dict(source.cfg)
    return state, config


def _is_transducer(state):
    return any(k.startswith("joint.") for k in state)


def export(source, output, durations=None, dtype="float32", config_path=None):
    """Writes the decoder side of a NeMo RNN-T/TDT model (a .nemo or checkpoint path, or a loaded model) to `output`
    (.safetensors) and returns its metadata."""
    state, config = _state_and_config(source, config_path)
    return _write(state, config, output, durations, dtype)


def _write(state, config, output, durations=None, dtype="float32"):
    from safetensors.numpy import save_file

    tensors, meta = convert(state, config, durations)
    if dtype != "float32":
        import ml_dtypes  # noqa: F401  (bfloat16 for numpy)
        to = np.float16 if dtype == "float16" else np.dtype("bfloat16")
        tensors = {k: v.astype(to) for k, v in tensors.items()}
    save_file(tensors, os.fspath(output), metadata=meta)
    return meta


def _section(config, name):
    value = config.get(name) if isinstance(config, dict) else None
    return value if isinstance(value, dict) else {}


def _lm_kwargs(section, vocab_size, device):
    import asrdec

    path = section.get("ngram_lm_model")
    if not path:
        return {}
    return {"lm": asrdec.NgramLm.load(str(path), device=device, vocab_size=vocab_size),
            "lm_weight": float(section.get("ngram_lm_alpha", 0.0) or 0.0)}


# NeMo's blank_lm_score_mode and pruning_mode spellings, as asrdec's.
_BLANK_SCORING = {"no_score": "none", "none": "none", "lm_weighted_full": "lm_weighted_full"}


def decoding_kwargs(decoding, vocab_size, transducer=True, device="cpu"):
    """Maps NeMo's decoding config (a dict, e.g. cfg.decoding) to an asrdec decoder class name and its keyword
    arguments: greedy/greedy_batch (loop_labels: label looping, else frame looping; max_symbols), malsd_batch
    (ALSD++) and maes_batch (AES++) with beam_size, max_symbols, score_norm, ngram_lm_model, ngram_lm_alpha,
    pruning_mode, blank_lm_score_mode, maes_num_steps, maes_expansion_beta, maes_expansion_gamma; for CTC,
    greedy/greedy_batch and beam_batch (beam_size, beam_beta, beam_threshold, ngram_lm_model, ngram_lm_alpha).
    Raises asrdec.Unsupported for another strategy."""
    import asrdec

    decoding = dict(decoding or {})
    strategy = decoding.get("strategy", "greedy_batch")
    greedy, beam = _section(decoding, "greedy"), _section(decoding, "beam")
    if transducer:
        if strategy in ("greedy", "greedy_batch"):
            kwargs = {"algorithm": "label_looping" if greedy.get("loop_labels", True) else "frame_looping"}
            symbols = greedy.get("max_symbols", greedy.get("max_symbols_per_step"))
            if symbols is not None:
                kwargs["max_symbols_per_frame"] = int(symbols)
            return "TransducerGreedyDecoder", kwargs
        if strategy in ("malsd_batch", "maes_batch"):
            kwargs = {"algorithm": "alsd++" if strategy == "malsd_batch" else "aes++",
                      "beam": int(beam.get("beam_size", 4)),
                      "length_normalized": bool(beam.get("score_norm", True)),
                      "pruning": str(beam.get("pruning_mode", "late")),
                      "blank_scoring": _BLANK_SCORING[str(beam.get("blank_lm_score_mode", "lm_weighted_full"))]}
            symbols = beam.get("max_symbols", beam.get("max_symbols_per_step"))
            if symbols is not None:
                kwargs["max_symbols_per_frame"] = int(symbols)
            for nemo_name, name, cast in (("maes_num_steps", "aes_num_steps", int),
                                          ("maes_expansion_beta", "aes_expansion_beta", int),
                                          ("maes_expansion_gamma", "aes_expansion_gamma", float)):
                if nemo_name in beam:
                    kwargs[name] = cast(beam[nemo_name])
            kwargs.update(_lm_kwargs(beam, vocab_size, device))
            return "TransducerBeamDecoder", kwargs
        raise asrdec.Unsupported(f"NeMo decoding strategy '{strategy}': asrdec serves greedy, greedy_batch, "
                                 "malsd_batch and maes_batch for transducers")
    if strategy in ("greedy", "greedy_batch"):
        return "CtcGreedyDecoder", _lm_kwargs(greedy, vocab_size, device)
    if strategy == "beam_batch":
        kwargs = {"beam": int(beam.get("beam_size", 4)), "beam_beta": float(beam.get("beam_beta", 1.0)),
                  "beam_threshold": float(beam.get("beam_threshold", 20.0))}
        kwargs.update(_lm_kwargs(beam, vocab_size, device))
        return "CtcBeamDecoder", kwargs
    raise asrdec.Unsupported(f"NeMo decoding strategy '{strategy}': asrdec serves greedy, greedy_batch and "
                             "beam_batch for CTC")


def decoder(source, decoding=None, device="cpu", output=None, durations=None, **overrides):
    """A ready asrdec decoder for a NeMo RNN-T/TDT/CTC model (a .nemo or checkpoint path, or a loaded model):
    transducers are exported to `output` (default: a temporary file) and loaded on `device`; `decoding` is NeMo's
    decoding config (default: the model's own cfg.decoding, else greedy_batch); `overrides` are asrdec keyword
    arguments applied last."""
    import asrdec

    state, config = _state_and_config(source)
    if decoding is None:
        decoding = _section(config, "decoding")
    if not _is_transducer(state):
        decoder_cfg = _section(config, "decoder")
        vocab = decoder_cfg.get("num_classes") or len(decoder_cfg.get("vocabulary") or [])
        name, kwargs = decoding_kwargs(decoding, int(vocab), transducer=False, device=device)
        kwargs.update(overrides)
        return getattr(asrdec, name)(device, **kwargs)
    if output is None:
        output = os.path.join(tempfile.mkdtemp(prefix="asrdec-nemo-"), "model.safetensors")
    meta = _write(state, config, output, durations)
    model = asrdec.TransducerModel.load(os.fspath(output), device=device)
    name, kwargs = decoding_kwargs(decoding, int(meta["vocab_size"]), transducer=True, device=device)
    kwargs.update(overrides)
    return getattr(asrdec, name)(model, **kwargs)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint", help=".nemo archive, or a state-dict checkpoint with --config")
    parser.add_argument("output", help="output .safetensors")
    parser.add_argument("--config", help="model_config.yaml (for plain checkpoints)")
    parser.add_argument("--durations", help="TDT durations, e.g. 0,1,2,3,4 (default: from the config)")
    parser.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], default="float32")
    args = parser.parse_args(argv)

    durations = [int(d) for d in args.durations.split(",")] if args.durations else None
    meta = export(args.checkpoint, args.output, durations, args.dtype, args.config)
    print(f"{args.output}: {meta['model_type']}, V={meta['vocab_size']}, predictor={meta['predictor']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
