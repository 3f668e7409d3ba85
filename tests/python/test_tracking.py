"""Client-side caching with an unmodified redis-py: its RESP3 cache (`cache_config`) kept
coherent by densekv's invalidation pushes, and RESP2 invalidations through a redirect to a
Pub/Sub connection.

redis-py (>= 5.1) enables its cache only against a server that says it is Redis 7.4 or later;
densekv answers as 7.0.15, whose CLIENT TRACKING is all the cache uses (`CLIENT TRACKING ON`,
then `invalidate` pushes), so the tests lower that gate. The fixture starts its own densekv
(binary from DENSEKV_BIN, default target/release/densekv, built when missing) on an ephemeral
loopback port and kills it by pid at the end. Run: python3 -m pytest tests/python -q
"""

import time

import pytest
import redis

try:
    from redis.cache import CacheConfig
    from redis.connection import CacheProxyConnection
except ImportError:  # redis-py < 5.1 has no client-side cache
    CacheConfig = None
    CacheProxyConnection = None


@pytest.fixture
def other(server):
    client = redis.Redis(port=server, decode_responses=True)
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def cached(server, other, monkeypatch):
    if CacheConfig is None:
        pytest.fail("redis-py has no client-side cache: pip install -U 'redis>=5.1'")
    monkeypatch.setattr(CacheProxyConnection, "MIN_ALLOWED_VERSION", "7.0.0")
    client = redis.Redis(
        port=server, protocol=3, cache_config=CacheConfig(), decode_responses=True
    )
    yield client
    client.close()


def get_calls(other) -> int:
    stats = other.info("commandstats")
    return stats.get("cmdstat_get", {}).get("calls", 0)


def test_cache_serves_repeated_reads_and_is_invalidated(cached, other):
    cached.set("foo", "bar")
    assert cached.get("foo") == "bar"
    calls = get_calls(other)
    for _ in range(5):
        assert cached.get("foo") == "bar"
    assert get_calls(other) == calls, "repeated reads come from the local cache"
    assert cached.get_cache().size >= 1
    tracking = other.info("clients")["tracking_clients"]
    assert tracking >= 1

    other.set("foo", "baz")  # densekv pushes `invalidate [foo]` to the caching connection
    deadline = time.time() + 5
    while cached.get("foo") != "baz":
        assert time.time() < deadline, "the cached value was never invalidated"
        time.sleep(0.01)
    assert get_calls(other) > calls


def test_cache_follows_writes_of_its_own_connection(cached):
    cached.set("k", "1")
    assert cached.get("k") == "1"
    cached.incr("k")  # the invalidation follows the reply, on the same connection
    assert cached.get("k") == "2"
    cached.delete("k")
    assert cached.get("k") is None


def test_cache_is_flushed_by_flushall(cached, other):
    cached.mset({"a": "1", "b": "2"})
    assert cached.get("a") == "1"
    assert cached.get("b") == "2"
    other.flushall()  # a null invalidation: everything goes
    deadline = time.time() + 5
    while cached.get("a") is not None:
        assert time.time() < deadline, "FLUSHALL did not empty the cache"
        time.sleep(0.01)
    assert cached.get("b") is None


def test_cache_sees_expiry(cached, other):
    cached.set("e", "v", px=100)
    assert cached.get("e") == "v"
    deadline = time.time() + 5
    while cached.get("e") is not None:
        assert time.time() < deadline, "the expired key stayed cached"
        time.sleep(0.02)


def test_resp2_redirect_to_pubsub(server, other):
    # RESP2 on both ends (redis-py 8 defaults to RESP3, where the listener would get pushes).
    listener = redis.Redis(port=server, protocol=2, decode_responses=True)
    pubsub = listener.pubsub()
    pubsub.subscribe("__redis__:invalidate")
    assert pubsub.get_message(timeout=2)["type"] == "subscribe"
    ids = [
        c["id"]
        for c in other.client_list()
        if c["cmd"] == "subscribe" and "P" in c["flags"]
    ]
    assert len(ids) == 1
    tracker = redis.Redis(port=server, protocol=2, decode_responses=True)
    assert tracker.client_tracking_on(clientid=ids[0]) == "OK"
    assert tracker.client_getredir() == int(ids[0])
    info = tracker.client_trackinginfo()
    assert "on" in info[1]
    tracker.get("rk")
    other.set("rk", "v")
    message = pubsub.get_message(timeout=2)
    assert message == {
        "type": "message",
        "pattern": None,
        "channel": "__redis__:invalidate",
        "data": ["rk"],
    }
    other.flushall()
    message = pubsub.get_message(timeout=2)
    assert message["channel"] == "__redis__:invalidate"
    assert message["data"] is None
    assert tracker.client_tracking_off() == "OK"
    assert tracker.client_getredir() == -1
    tracker.close()
    pubsub.close()
    listener.close()


def test_bcast_prefixes(server, other):
    client = redis.Redis(port=server, protocol=3, decode_responses=True)
    received = []
    conn = client.connection_pool.get_connection()
    conn._parser.set_invalidation_push_handler(received.append)
    conn.send_command("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:")
    assert conn.read_response() == "OK"
    other.mset({"user:1": "a", "user:2": "b", "item:1": "c"})
    conn.send_command("PING")
    deadline = time.time() + 5
    while not received:
        assert time.time() < deadline, "no BCAST invalidation"
        conn.read_response(push_request=True, timeout=0.1)
    assert received[0][0] == "invalidate"
    assert sorted(received[0][1]) == ["user:1", "user:2"]
    client.connection_pool.release(conn)
    client.close()
