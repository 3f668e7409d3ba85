"""densekv's pub/sub with redis-py's unmodified PubSub, over RESP2 and RESP3 connections.

RESP2 exercises the subscribed mode (confirmations and messages as arrays, PING's array
reply); RESP3 the push path (redis-py reads pushes with its push handler and the same
get_message API). The fixture starts its own densekv on an ephemeral loopback port (binary from
DENSEKV_BIN, default target/release/densekv, built with `cargo build --release -p server` when
missing) and kills it by pid at the end (conftest.py). Run:
python3 -m pytest tests/python/test_pubsub.py -q
"""

import threading
import time

import redis

def messages(p, count, timeout=5.0, **kwargs):
    """The next `count` messages get_message returns (None polls are skipped)."""
    got = []
    deadline = time.time() + timeout
    while len(got) < count and time.time() < deadline:
        m = p.get_message(timeout=0.1, **kwargs)
        if m is not None:
            got.append(m)
    assert len(got) == count, got
    return got


def no_message(p, wait=0.2):
    m = p.get_message(timeout=wait)
    assert m is None, m


def wait_numsub(r, channel, want):
    deadline = time.time() + 5
    while time.time() < deadline:
        if dict(r.pubsub_numsub(channel))[channel] == want:
            return
        time.sleep(0.01)
    assert dict(r.pubsub_numsub(channel))[channel] == want


def wait_idle(r):
    """Waits until no channel or pattern is registered: a PubSub closed by an earlier test
    leaves when the server has seen its connection close."""
    deadline = time.time() + 5
    while (r.pubsub_channels() or r.pubsub_numpat()) and time.time() < deadline:
        time.sleep(0.01)
    assert r.pubsub_channels() == [] and r.pubsub_numpat() == 0


def test_subscribe_psubscribe_get_message(r):
    wait_idle(r)
    p = r.pubsub()
    p.subscribe("a")
    p.psubscribe("b*")
    assert messages(p, 2) == [
        {"type": "subscribe", "pattern": None, "channel": "a", "data": 1},
        {"type": "psubscribe", "pattern": None, "channel": "b*", "data": 2},
    ]
    assert r.publish("a", "hello") == 1
    assert r.publish("bee", "buzz") == 1
    assert r.publish("c", "nobody") == 0
    assert messages(p, 2) == [
        {"type": "message", "pattern": None, "channel": "a", "data": "hello"},
        {"type": "pmessage", "pattern": "b*", "channel": "bee", "data": "buzz"},
    ]
    no_message(p)
    assert r.pubsub_channels() == ["a"]
    assert r.pubsub_numsub("a", "bee") == [("a", 1), ("bee", 0)]
    assert r.pubsub_numpat() == 1
    p.unsubscribe()
    p.punsubscribe()
    assert messages(p, 2) == [
        {"type": "unsubscribe", "pattern": None, "channel": "a", "data": 1},
        {"type": "punsubscribe", "pattern": None, "channel": "b*", "data": 0},
    ]
    assert r.publish("a", "gone") == 0
    assert r.pubsub_channels() == []
    assert r.pubsub_numpat() == 0
    p.close()


def test_unsubscribe_all_of_several_channels(r):
    wait_idle(r)
    p = r.pubsub(ignore_subscribe_messages=True)
    p.subscribe("x", "y", "z")
    p.psubscribe("p1*", "p2*")
    assert r.publish("y", "1") == 1
    assert messages(p, 1) == [
        {"type": "message", "pattern": None, "channel": "y", "data": "1"}
    ]
    p.unsubscribe()
    p.punsubscribe()
    # Five confirmations come (ignored, one per get_message); then the client knows it left.
    deadline = time.time() + 5
    while p.subscribed and time.time() < deadline:
        assert p.get_message(timeout=0.1) is None
    assert p.subscribed is False
    no_message(p)
    assert r.pubsub_channels() == []
    assert r.pubsub_numpat() == 0
    p.close()


def test_ping_while_subscribed(server):
    """RESP2 answers PING in subscribed mode with a ["pong", arg] array, which redis-py's
    PubSub turns into a "pong" message. (RESP3 answers +PONG, which redis-py 8.1's
    get_message cannot take apart: it fails the same way on redis-server; the RESP3 test below
    reads it from the connection.)"""
    r = redis.Redis(port=server, protocol=2, decode_responses=True)
    p = r.pubsub()
    p.subscribe("ping-channel")
    messages(p, 1)
    p.ping()
    assert messages(p, 1) == [
        {"type": "pong", "pattern": None, "channel": None, "data": ""}
    ]
    p.ping("hi")
    assert messages(p, 1)[0]["data"] == "hi"
    p.close()
    r.close()


def test_run_in_thread_with_handlers(r):
    got = []
    done = threading.Event()

    def on_message(message):
        got.append((message["type"], message["channel"], message["data"]))
        if len(got) == 20:
            done.set()

    p = r.pubsub()
    p.subscribe(**{"events": on_message})
    p.psubscribe(**{"ev*": on_message})
    worker = p.run_in_thread(sleep_time=0.01, daemon=True)
    try:
        wait_numsub(r, "events", 1)
        for i in range(10):
            assert r.publish("events", str(i)) == 2
        assert done.wait(5), got
    finally:
        worker.stop()
        worker.join(5)
    channel = [m for m in got if m[0] == "message"]
    pattern = [m for m in got if m[0] == "pmessage"]
    assert channel == [("message", "events", str(i)) for i in range(10)]
    assert pattern == [("pmessage", "events", str(i)) for i in range(10)]
    p.close()
    wait_numsub(r, "events", 0)


def test_shard_channels(r):
    p = r.pubsub()
    p.ssubscribe("s1", "s2")
    confirmations = [p.get_sharded_message(timeout=1) for _ in range(2)]
    assert [c["type"] for c in confirmations] == ["ssubscribe", "ssubscribe"]
    assert [c["data"] for c in confirmations] == [1, 2]
    assert r.spublish("s1", "sharded") == 1
    assert r.publish("s1", "not sharded") == 0
    m = None
    deadline = time.time() + 5
    while m is None and time.time() < deadline:
        m = p.get_sharded_message(timeout=0.1)
    assert m == {"type": "smessage", "pattern": None, "channel": "s1", "data": "sharded"}
    assert sorted(r.pubsub_shardchannels()) == ["s1", "s2"]
    assert r.pubsub_shardnumsub("s1") == [("s1", 1)]
    p.sunsubscribe()
    p.close()


def test_binary_channels_and_payloads(server):
    for protocol in (2, 3):
        r = redis.Redis(port=server, protocol=protocol)
        p = r.pubsub(ignore_subscribe_messages=True)
        channel = b"bin\x00\r\n\xff"
        p.subscribe(channel)
        wait_numsub(r, channel, 1)
        for payload in (b"", b"\x00", b"a\r\nb", bytes(range(256)), b"x" * 100_000):
            assert r.publish(channel, payload) == 1
            (m,) = messages(p, 1)
            assert (m["channel"], m["data"]) == (channel, payload)
        p.close()
        r.close()


def test_resp3_commands_beside_subscriptions(server):
    """RESP3: the connection that subscribed still runs ordinary commands."""
    r = redis.Redis(port=server, protocol=3, decode_responses=True)
    p = r.pubsub()
    p.subscribe("mine")
    messages(p, 1)
    # The pubsub connection's own commands get their replies; the pushes still come.
    p.connection.send_command("SET", "k", "v")
    assert p.connection.read_response() == "OK"
    p.connection.send_command("PING")
    assert p.connection.read_response() == "PONG"
    p.connection.send_command("PUBLISH", "mine", "to myself")
    # Redis sends the push before PUBLISH's reply; redis-py hands pushes to the handler.
    pushes = []
    p.connection._parser.set_pubsub_push_handler(pushes.append)
    assert p.connection.read_response() == 1
    assert pushes == [["message", "mine", "to myself"]]
    p.close()
    r.close()


def test_many_messages_keep_their_order(r):
    p = r.pubsub(ignore_subscribe_messages=True)
    p.subscribe("ordered")
    wait_numsub(r, "ordered", 1)
    with r.pipeline(transaction=False) as pipe:
        for i in range(2000):
            pipe.publish("ordered", str(i))
        assert pipe.execute() == [1] * 2000
    got = [m["data"] for m in messages(p, 2000, timeout=10)]
    assert got == [str(i) for i in range(2000)]
    p.close()


def test_closed_pubsub_leaves_the_registry(r):
    p = r.pubsub()
    p.subscribe("leaving")
    p.psubscribe("leav*")
    messages(p, 2)
    assert dict(r.pubsub_numsub("leaving")) == {"leaving": 1}
    p.close()
    wait_numsub(r, "leaving", 0)
    deadline = time.time() + 5
    while r.pubsub_numpat() != 0 and time.time() < deadline:
        time.sleep(0.01)
    assert r.pubsub_numpat() == 0
