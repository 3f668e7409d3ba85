#!/usr/bin/env python3
"""RDB save and load speed, densekv against redis-server in the same run.

    scripts/rdb_speed.py [N] [ROUNDS]        (defaults: 1,000,000 keys, 3 rounds)

Each round, for each server: a fresh server in its own temporary directory, DEBUG POPULATE N
keys of 16-byte values, SAVE (timed at the client), then a restart on that file, timed from
the process start to the first PING answered, and the server's own "DB loaded from disk"
figure (both servers log it). Each server also loads the other's file, which checks that the
files move both ways. Prints the medians and the ratios densekv / redis-server (below 1.0:
densekv is faster).

The densekv binary is $DENSEKV_BIN (default target/release/densekv); redis-server comes from
PATH. Every process started is stopped by its pid.
"""

import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DENSEKV = os.environ.get("DENSEKV_BIN", os.path.join(ROOT, "target/release/densekv"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def command(sock, *args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(out)
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed")
        data += chunk
    return data


def start(kind, directory, log):
    port = free_port()
    binary = DENSEKV if kind == "densekv" else "redis-server"
    args = [binary, "--port", str(port), "--dir", directory, "--save", "",
            "--enable-debug-command", "yes", "--logfile", log]
    if kind == "redis":
        args += ["--appendonly", "no"]
    started = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{kind} exited: {open(log).read()[-2000:]}")
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=120)
            if command(sock, "PING") == b"+PONG\r\n":
                return proc, sock, time.monotonic() - started
            sock.close()
        except OSError:
            pass
        time.sleep(0.005)


def stop(proc):
    proc.kill()
    proc.wait()


def loaded_seconds(log):
    found = re.findall(r"DB loaded from disk: ([0-9.]+) seconds", open(log).read())
    return float(found[-1]) if found else float("nan")


def one_round(kind, n, work):
    directory = tempfile.mkdtemp(prefix=f"rdb-speed-{kind}-", dir=work)
    log = os.path.join(directory, "log")
    proc, sock, _ = start(kind, directory, log)
    command(sock, "DEBUG", "POPULATE", n, "key", 16)
    t = time.monotonic()
    assert command(sock, "SAVE") == b"+OK\r\n"
    save = time.monotonic() - t
    stop(proc)
    proc, sock, ready = start(kind, directory, log)
    assert command(sock, "DBSIZE") == b":%d\r\n" % n, "every key loaded"
    stop(proc)
    return save, ready, loaded_seconds(log), directory


def cross_load(kind, directory, work, n):
    """Starts `kind` on a copy of the other server's file; returns its load seconds."""
    target = tempfile.mkdtemp(prefix=f"rdb-cross-{kind}-", dir=work)
    shutil.copy(os.path.join(directory, "dump.rdb"), os.path.join(target, "dump.rdb"))
    log = os.path.join(target, "log")
    proc, sock, _ = start(kind, target, log)
    assert command(sock, "DBSIZE") == b":%d\r\n" % n, f"{kind} loads the other's file"
    stop(proc)
    return loaded_seconds(log)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    work = tempfile.mkdtemp(prefix="rdb-speed-")
    results = {"densekv": [], "redis": []}
    cross = {"densekv": [], "redis": []}
    try:
        for _ in range(rounds):
            dirs = {}
            for kind in ("densekv", "redis"):
                save, ready, loaded, directory = one_round(kind, n, work)
                results[kind].append((save, ready, loaded))
                dirs[kind] = directory
            cross["densekv"].append(cross_load("densekv", dirs["redis"], work, n))
            cross["redis"].append(cross_load("redis", dirs["densekv"], work, n))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{n} keys of 16-byte values, {rounds} rounds (medians)")
    med = {k: [statistics.median(x[i] for x in v) for i in range(3)] for k, v in results.items()}
    names = ["SAVE seconds", "start to first PING seconds", "logged load seconds"]
    for i, name in enumerate(names):
        d, r = med["densekv"][i], med["redis"][i]
        print(f"  {name:28} densekv {d:8.3f}   redis-server {r:8.3f}   ratio {d / r:5.2f}")
    for kind, other in (("densekv", "redis-server"), ("redis", "densekv")):
        print(f"  {kind} loading {other}'s file: {statistics.median(cross[kind]):.3f} s (logged)")


if __name__ == "__main__":
    main()
