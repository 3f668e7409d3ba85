#!/usr/bin/env python3
"""Cheap client behaviours that used to take a server down, measured on densekv and redis-server
side by side (the figures of the connection-loop work; the tests in
crates/server/tests/connections.rs assert the outcomes, this prints the numbers).

    scripts/connection_probes.py <probe> [densekv|redis ...]

probes:
  halfclosed     200 clients send a partial request and close at once: connected_clients and
                 CLOSE-WAIT sockets 3 s later
  halfclose_ping a client sends PING and shuts its write side: reply, then EOF?
  bigheaders     6 clients announce 512 MB arguments and send 70 KB: RSS growth, PING latency
  blocked_death  a client blocked in BLPOP closes, another pushes at once: elements lost of 20
  timeouts       BLPOP with odd timeouts: the reply and how long it took
  idle           5,000 idle connections, 12 rounds: RSS held, and after they close
  all            every probe above

The densekv binary is $DENSEKV_BIN (default target/release/densekv); redis-server comes from PATH.
"""

import os
import random
import resource
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rss(pid):
    for line in open(f'/proc/{pid}/status'):
        if line.startswith('VmRSS'):
            return int(line.split()[1]) * 1024
    return 0


def start(kind):
    port = free_port()
    if kind == 'densekv':
        binary = os.environ.get('DENSEKV_BIN', os.path.join(ROOT, 'target/release/densekv'))
        args = [binary, '--port', str(port), '--save', '']
    else:
        args = ['redis-server', '--port', str(port), '--save', '', '--appendonly', 'no']
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         stdin=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(('127.0.0.1', port)).close()
            return p, port
        except OSError:
            time.sleep(0.05)
    p.kill()
    raise SystemExit(f'{kind} did not start')


def encode(*args):
    parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return b'*%d\r\n' % len(parts) + b''.join(b'$%d\r\n%s\r\n' % (len(a), a) for a in parts)


def readline(s):
    buf = b''
    while not buf.endswith(b'\r\n'):
        c = s.recv(1)
        if not c:
            raise EOFError
        buf += c
    return buf


def reply(s):
    line = readline(s)
    if line[:1] == b'$' and int(line[1:-2]) >= 0:
        n = int(line[1:-2])
        data = b''
        while len(data) < n + 2:
            data += s.recv(n + 2 - len(data))
        return line + data
    if line[:1] == b'*':
        return line + b''.join(reply(s) for _ in range(max(int(line[1:-2]), 0)))
    return line


def cmd(s, *args):
    s.sendall(encode(*args))
    return reply(s)


def info_field(s, section, field):
    for line in cmd(s, 'INFO', section).decode().split('\r\n'):
        if line.startswith(field + ':'):
            return line.split(':', 1)[1]
    return None


def halfclosed(kind):
    p, port = start(kind)
    try:
        for _ in range(200):
            c = socket.create_connection(('127.0.0.1', port))
            c.sendall(b'*2\r\n$3\r\nGET')
            c.close()
        time.sleep(3)
        s = socket.create_connection(('127.0.0.1', port))
        n = info_field(s, 'clients', 'connected_clients')
        out = subprocess.run(['ss', '-tan', 'state', 'close-wait', f'( sport = :{port} )'],
                             capture_output=True, text=True).stdout
        print(f'{kind}: connected_clients 3 s later = {n}, '
              f'CLOSE-WAIT sockets = {out.count(chr(10)) - 1}')
    finally:
        p.kill()
        p.wait()


def halfclose_ping(kind):
    p, port = start(kind)
    try:
        c = socket.create_connection(('127.0.0.1', port))
        c.sendall(b'PING\r\n')
        c.shutdown(socket.SHUT_WR)
        c.settimeout(3)
        data = b''
        try:
            while True:
                d = c.recv(100)
                if not d:
                    break
                data += d
            print(f'{kind}: half-closed client got {data!r}, then EOF')
        except socket.timeout:
            print(f'{kind}: half-closed client got {data!r}; still open after 3 s')
    finally:
        p.kill()
        p.wait()


def bigheaders(kind):
    p, port = start(kind)
    try:
        time.sleep(0.3)
        before = rss(p.pid)
        uploads = []
        for _ in range(6):
            c = socket.create_connection(('127.0.0.1', port))
            c.sendall(b'*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870000\r\n' + b'x' * 70000)
            uploads.append(c)
        time.sleep(0.5)
        s = socket.create_connection(('127.0.0.1', port))
        t = time.time()
        r = cmd(s, 'PING')
        dt = time.time() - t
        time.sleep(0.5)
        print(f'{kind}: RSS growth {(rss(p.pid) - before) / 2**20:.1f} MiB, '
              f'PING {dt * 1000:.1f} ms ({r!r})')
    finally:
        p.kill()
        p.wait()


def blocked_death(kind, tries=20):
    p, port = start(kind)
    lost = 0
    try:
        pusher = socket.create_connection(('127.0.0.1', port))
        for _ in range(tries):
            cmd(pusher, 'DEL', 'q')
            b = socket.create_connection(('127.0.0.1', port))
            b.sendall(encode('BLPOP', 'q', '0'))
            time.sleep(0.05)
            b.close()
            cmd(pusher, 'LPUSH', 'q', 'x')
            if cmd(pusher, 'LLEN', 'q') != b':1\r\n':
                lost += 1
        print(f'{kind}: elements lost {lost} of {tries}')
    finally:
        p.kill()
        p.wait()


def timeouts(kind):
    p, port = start(kind)
    try:
        for t in ['9223372036854775807', '1e300', '1e17', 'inf', '1e-300', '0.001', '-1', 'abc']:
            s = socket.create_connection(('127.0.0.1', port))
            s.settimeout(3)
            t0 = time.time()
            try:
                r = cmd(s, 'BLPOP', 'nokey', t)
            except socket.timeout:
                r = b'(still blocked after 3 s)'
            print(f'{kind}: BLPOP nokey {t} -> {r!r} in {(time.time() - t0) * 1000:.0f} ms')
            s.close()
    finally:
        p.kill()
        p.wait()


def idle(kind, n=5000, rounds=12):
    p, port = start(kind)
    try:
        time.sleep(0.3)
        base = rss(p.pid)
        for r in range(rounds):
            socks = []
            for _ in range(n):
                c = socket.create_connection(('127.0.0.1', port))
                c.sendall(b'PING\r\n')
                socks.append(c)
            for c in socks:
                c.recv(100)
            time.sleep(0.3)
            held = rss(p.pid)
            for c in socks:
                c.close()
            time.sleep(1.0)
            if r in (0, rounds - 1):
                print(f'{kind}: round {r + 1}: {n} idle connections hold '
                      f'{(held - base) / 2**20:.1f} MiB; after they close '
                      f'{(rss(p.pid) - base) / 2**20:.1f} MiB over the idle server '
                      f'(RSS {rss(p.pid) / 2**20:.1f} MiB)')
    finally:
        p.kill()
        p.wait()


PROBES = [halfclosed, halfclose_ping, bigheaders, blocked_death, timeouts, idle]


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in [f.__name__ for f in PROBES] + ['all']:
        print(__doc__)
        sys.exit(2)
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    probes = PROBES if sys.argv[1] == 'all' else [globals()[sys.argv[1]]]
    kinds = sys.argv[2:] or ['densekv', 'redis']
    random.seed(1)
    for probe in probes:
        for kind in kinds:
            probe(kind)


if __name__ == '__main__':
    main()
