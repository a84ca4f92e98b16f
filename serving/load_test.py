"""Load test of asrdec's Triton models: N concurrent clients, streaming (real-time pacing: each client sends the next
160 ms chunk of its utterance every 160 ms) or offline (each client sends whole utterances back to back). Reports
throughput, p50/p99 request latency and errors, and writes them as JSON.

    python serving/load_test.py --mode stream --clients 64 --seconds 30 --out result.json
"""

import argparse
import json
import platform
import threading
import time

import numpy as np
import tritonclient.grpc as grpcclient

from client import _request, samples

FRAME_SECONDS = 0.08


def run(args):
    utterances = samples(args.model)
    latencies, errors, audio, lag = [], [], [0.0], [0.0]
    lock = threading.Lock()
    stop = time.monotonic() + args.seconds
    chunk = max(1, round(args.chunk_ms / 1000 / FRAME_SECONDS))

    def client_loop(c):
        client = grpcclient.InferenceServerClient(args.url)
        u, sequence = c, 1 + c * 1000000
        while time.monotonic() < stop:
            frames = utterances[u % len(utterances)]
            u += args.clients
            sequence += 1
            starts = list(range(0, len(frames), chunk)) if args.mode == "stream" else [0]
            tick = time.monotonic()
            for i, start in enumerate(starts):
                piece = frames[start:start + chunk] if args.mode == "stream" else frames
                kwargs = {}
                if args.mode == "stream":
                    kwargs = dict(sequence_id=sequence, sequence_start=i == 0, sequence_end=i == len(starts) - 1)
                begin = time.monotonic()
                try:
                    client.infer(args.model, _request(args.model, piece), **kwargs)
                except Exception as e:  # noqa: BLE001 - counted and reported
                    with lock:
                        errors.append(str(e)[:200])
                    break
                end = time.monotonic()
                with lock:
                    latencies.append(end - begin)
                    audio[0] += len(piece) * FRAME_SECONDS
                if args.mode == "stream":  # real time: the next chunk is ready one chunk duration later
                    tick += len(piece) * FRAME_SECONDS
                    behind = time.monotonic() - tick
                    if behind > 0:
                        with lock:
                            lag[0] = max(lag[0], behind)
                    time.sleep(max(0.0, -behind))

    threads = [threading.Thread(target=client_loop, args=(c,)) for c in range(args.clients)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    ms = np.array(latencies) * 1000 if latencies else np.zeros(1)
    return {"model": args.model, "mode": args.mode, "clients": args.clients, "seconds": round(wall, 2),
            "chunk_ms": args.chunk_ms if args.mode == "stream" else None, "requests": len(latencies),
            "requests_per_second": round(len(latencies) / wall, 1), "audio_seconds_per_second": round(audio[0] / wall, 1),
            "max_behind_real_time_ms": round(lag[0] * 1000, 1) if args.mode == "stream" else None,
            "p50_latency_ms": round(float(np.percentile(ms, 50)), 2),
            "p99_latency_ms": round(float(np.percentile(ms, 99)), 2), "errors": len(errors),
            "first_errors": errors[:3]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="localhost:8001")
    parser.add_argument("--mode", choices=["stream", "offline"], default="stream")
    parser.add_argument("--model", default=None, help="default: rnnt_greedy_stream (stream), rnnt_greedy (offline)")
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--chunk-ms", type=int, default=160)
    parser.add_argument("--out", help="JSON file for the results")
    args = parser.parse_args()
    args.model = args.model or ("rnnt_greedy_stream" if args.mode == "stream" else "rnnt_greedy")
    result = run(args)
    result["machine"] = {"processor": platform.processor() or platform.machine(), "cpus": __import__("os").cpu_count()}
    print(json.dumps(result, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
