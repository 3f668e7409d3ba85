"""The fixture every client test shares: a densekv of its own per test module, started on an
ephemeral loopback port (binary from DENSEKV_BIN, default target/release/densekv, built with
`cargo build --release -p server` when missing) and killed by pid at the end; and `r`, a
redis-py client over RESP2 and over RESP3 on a flushed server.
"""

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parents[2]


def densekv_binary() -> Path:
    path = Path(os.environ.get("DENSEKV_BIN", ROOT / "target" / "release" / "densekv"))
    if not path.is_absolute():
        path = ROOT / path
    if not path.exists():
        subprocess.run(
            ["cargo", "build", "--release", "-p", "server"], cwd=ROOT, check=True
        )
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    binary = densekv_binary()
    for _ in range(10):
        port = free_port()
        proc = subprocess.Popen(
            [str(binary), "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.time() + 10
        while time.time() < deadline and proc.poll() is None:
            try:
                info = redis.Redis(port=port, socket_timeout=1).info("server")
                if info["process_id"] == proc.pid:
                    break
            except redis.exceptions.ConnectionError:
                time.sleep(0.02)
        else:
            proc.kill()
            proc.wait()
            continue
        try:
            yield port
        finally:
            proc.kill()
            proc.wait()
        return
    raise RuntimeError("densekv did not start")


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(server, request):
    client = redis.Redis(port=server, protocol=request.param, decode_responses=True)
    client.flushall()
    yield client
    client.close()
