"""A Triton server on asrdec's repository for the serving tests: ASRDEC_TRITON_URL (host:port of gRPC) names a
running one; otherwise scripts/serve is started on free ports and stopped after the tests."""

import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "serving"))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server():
    import tritonclient.grpc as grpcclient

    url = os.environ.get("ASRDEC_TRITON_URL")
    process = None
    if not url:
        ports = {name: str(_free_port()) for name in ("ASRDEC_HTTP_PORT", "ASRDEC_GRPC_PORT", "ASRDEC_METRICS_PORT")}
        log = open(ROOT / "build" / "serving" / "test-server.log", "w")
        process = subprocess.Popen([str(ROOT / "scripts" / "serve")], env={**os.environ, **ports}, stdout=log,
                                   stderr=subprocess.STDOUT)
        url = f"127.0.0.1:{ports['ASRDEC_GRPC_PORT']}"
    client = grpcclient.InferenceServerClient(url)
    deadline = time.monotonic() + 600
    while True:
        try:
            if client.is_server_ready():
                break
        except Exception:  # noqa: BLE001 - not up yet
            pass
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"scripts/serve exited ({process.returncode}); see build/serving/test-server.log")
        if time.monotonic() > deadline:
            raise RuntimeError("the Triton server did not become ready in 600 s")
        time.sleep(1)
    yield client
    if process is not None:
        process.terminate()
        process.wait(timeout=60)


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("ASRDEC_CLI") or str(ROOT / "build" / "bin" / "asrdec")
    if not os.access(path, os.X_OK):
        pytest.skip(f"no asrdec CLI at {path} (set ASRDEC_CLI)")

    def run(*args):
        out = subprocess.run([path, *map(str, args), "--json", "--device", "cpu"], check=True, capture_output=True,
                             text=True).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    return run
