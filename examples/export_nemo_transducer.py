#!/usr/bin/env python3
"""Write the decoder and joint of a NeMo RNN-T or TDT checkpoint into asrdec's transducer format.

    python3 examples/export_nemo_transducer.py model.nemo model.safetensors [--durations 0,1,2,3,4]
    python3 examples/export_nemo_transducer.py weights.ckpt model.safetensors --config model_config.yaml

The encoder is not exported: engines run it themselves and hand asrdec enc_proj, the encoder output passed
through the joint's encoder projection (joint.enc). That projection is written too, as encoder_projection.weight
and encoder_projection.bias, for engines that want to apply it outside the encoder; asrdec ignores it.

Supported: NeMo's RNNTDecoder (LSTM prediction network without layer norm or projection) and
StatelessTransducerDecoder, with RNNTJoint. Needs torch (to read the checkpoint), numpy, pyyaml and safetensors.
See docs/export-nemo.md.
"""

import argparse
import io
import re
import sys
import tarfile

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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint", help=".nemo archive, or a state-dict checkpoint with --config")
    parser.add_argument("output", help="output .safetensors")
    parser.add_argument("--config", help="model_config.yaml (for plain checkpoints)")
    parser.add_argument("--durations", help="TDT durations, e.g. 0,1,2,3,4 (default: from the config)")
    parser.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], default="float32")
    args = parser.parse_args(argv)

    from safetensors.numpy import save_file

    state, config = read_checkpoint(args.checkpoint, args.config)
    durations = [int(d) for d in args.durations.split(",")] if args.durations else None
    tensors, meta = convert(state, config, durations)
    if args.dtype != "float32":
        import ml_dtypes  # noqa: F401  (bfloat16 for numpy)
        dtype = np.float16 if args.dtype == "float16" else np.dtype("bfloat16")
        tensors = {k: v.astype(dtype) for k, v in tensors.items()}
    save_file(tensors, args.output, metadata=meta)
    print(f"{args.output}: {meta['model_type']}, V={meta['vocab_size']}, predictor={meta['predictor']}, "
          f"{len(tensors)} tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
