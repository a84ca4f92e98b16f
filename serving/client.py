"""A Triton client of asrdec's models (tritonclient, gRPC): whole utterances to an offline model, or chunks of one
utterance through a streaming model's sequence batcher. Prints transcripts of the sample data.

    python serving/client.py --model rnnt_greedy
    python serving/client.py --model rnnt_greedy_stream --chunk 2      # 2 frames = 160 ms a request
"""

import argparse
import pathlib

import numpy as np
import tritonclient.grpc as grpcclient

DATA = pathlib.Path(__file__).resolve().parents[1] / "examples" / "data"


def _outputs(result):
    out = {"tokens": result.as_numpy("TOKENS")[0].tolist(), "timestamps": result.as_numpy("TIMESTAMPS")[0].tolist(),
           "text": result.as_numpy("TEXT")[0][0].decode(), "score": float(result.as_numpy("SCORE")[0][0])}
    endpoint = result.as_numpy("ENDPOINT")  # streaming models: the endpointing rule that fires (0: none)
    if endpoint is not None:
        out["endpoint"] = int(endpoint[0][0])
    return out


def input_name(model):
    return "ENC_PROJ" if model.startswith(("rnnt", "tdt")) else "LOGPROBS"


def _request(model, frames):
    x = grpcclient.InferInput(input_name(model), [1, *frames.shape], "FP32")
    x.set_data_from_numpy(np.ascontiguousarray(frames[None], dtype=np.float32))
    return [x]


def decode(client, model, frames):
    """One utterance [T, D] through an offline model: {tokens, timestamps, text, score}."""
    return _outputs(client.infer(model, _request(model, frames)))


def decode_stream(client, model, frames, chunk, sequence_id, on_partial=None):
    """One utterance through a streaming model, `chunk` frames a request; returns the final result."""
    starts = list(range(0, max(len(frames), 1), chunk)) or [0]
    result = None
    for i, start in enumerate(starts):
        piece = frames[start:start + chunk]
        result = _outputs(client.infer(model, _request(model, piece), sequence_id=sequence_id,
                                       sequence_start=i == 0, sequence_end=i == len(starts) - 1))
        if on_partial is not None:
            on_partial(result)
    return result


def samples(model):
    """The sample utterances of a model's family: a list of [T, D] arrays."""
    folder = "ctc" if model.startswith("ctc") else ("tdt" if model.startswith("tdt") else "rnnt")
    name = "logprobs.npy" if folder == "ctc" else "enc_proj.npy"
    x, lengths = np.load(DATA / folder / name), np.load(DATA / folder / "lengths.npy")
    return [x[b, :lengths[b]].astype(np.float32) for b in range(len(lengths))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="localhost:8001")
    parser.add_argument("--model", default="rnnt_greedy")
    parser.add_argument("--chunk", type=int, default=2, help="frames per request (streaming models)")
    parser.add_argument("--count", type=int, default=3, help="utterances to decode")
    args = parser.parse_args()
    client = grpcclient.InferenceServerClient(args.url)
    for b, frames in enumerate(samples(args.model)[:args.count]):
        if args.model.endswith("_stream"):
            result = decode_stream(client, args.model, frames, args.chunk, sequence_id=1000 + b)
        else:
            result = decode(client, args.model, frames)
        print(f"{b}: {result['text']}  (score {result['score']:.2f}, {len(result['tokens'])} tokens)")


if __name__ == "__main__":
    main()
