"""densekv with an unmodified redis-py client, over RESP2 and RESP3 connections.

The fixture starts its own densekv on an ephemeral loopback port (binary from DENSEKV_BIN,
default target/release/densekv, built with `cargo build --release -p server` when missing) and
kills it by pid at the end. Run: python3 -m pytest tests/python -q
"""

import time

import pytest
import redis

def test_protocol_negotiated(r):
    proto = r.connection_pool.connection_kwargs.get("protocol", 2)
    hello = r.execute_command("HELLO", proto)
    if isinstance(hello, list):  # RESP2: a flat key, value list
        hello = dict(zip(hello[::2], hello[1::2]))
    assert hello["proto"] == proto
    assert hello["server"] == "redis"
    assert hello["version"] == "7.0.15"
    assert hello["mode"] == "standalone"
    assert hello["role"] == "master"


def test_strings(r):
    assert r.set("k", "v") is True
    assert r.get("k") == "v"
    assert r.get("missing") is None
    assert r.set("k", "w", nx=True) is None
    assert r.set("k", "w", xx=True, get=True) == "v"
    assert r.mset({"a": "1", "b": "2"}) is True
    assert r.mget("a", "b", "missing") == ["1", "2", None]
    assert r.incr("a") == 2
    assert r.incrby("a", 40) == 42
    assert r.decr("a") == 41
    assert r.append("b", "xyz") == 4
    assert r.getrange("b", 1, -1) == "xyz"
    assert r.setrange("b", 6, "!") == 7
    assert r.get("b") == "2xyz\x00\x00!"
    assert r.strlen("b") == 7
    assert r.getdel("b") == "2xyz\x00\x00!"
    assert r.exists("b") == 0


def test_incrbyfloat(r):
    assert r.incrbyfloat("f", 10.5) == 10.5
    assert r.incrbyfloat("f", 1.5) == 12.0
    assert r.get("f") == "12"
    assert r.incrbyfloat("f", -0.25) == 11.75
    r.set("f", "abc")
    with pytest.raises(redis.exceptions.ResponseError, match="not a valid float"):
        r.incrbyfloat("f", 1)


def test_set_with_expiry(r):
    assert r.set("e", "v", ex=100) is True
    assert 99 <= r.ttl("e") <= 100
    assert r.set("e", "v", px=50_000) is True
    assert 49_000 <= r.pttl("e") <= 50_000
    assert r.set("e", "w", keepttl=True) is True
    assert r.ttl("e") > 0
    assert r.persist("e") is True
    assert r.ttl("e") == -1
    assert r.expire("e", 100, gt=True) is False
    assert r.expire("e", 100, nx=True) is True
    assert r.expiretime("e") > time.time()
    assert r.getex("e", persist=True) == "w"
    assert r.ttl("e") == -1
    assert r.ttl("missing") == -2


def test_binary_values(server):
    client = redis.Redis(port=server, protocol=3)
    value = bytes(range(256)) + b"\r\n\x00"
    client.set(b"bin\x00key", value)
    assert client.get(b"bin\x00key") == value
    client.close()


def test_pipeline_without_transaction(r):
    pipe = r.pipeline(transaction=False)
    for i in range(200):
        pipe.set(f"p{i}", i)
    pipe.get("p7").incr("p7").get("missing")
    replies = pipe.execute()
    assert replies[:200] == [True] * 200
    assert replies[200:] == ["7", 8, None]


def test_pipeline_with_transaction(r):
    pipe = r.pipeline()  # transaction=True: MULTI ... EXEC
    pipe.set("t", 1).incr("t").incrby("t", 10).get("t")
    assert pipe.execute() == [True, 2, 12, "12"]


def test_transaction_runtime_error_is_returned(r):
    r.set("s", "not a number")
    pipe = r.pipeline()
    pipe.incr("s").set("s2", "ok")
    replies = pipe.execute(raise_on_error=False)
    assert isinstance(replies[0], redis.exceptions.ResponseError)
    assert replies[1] is True
    assert r.get("s2") == "ok"


def test_watch_multi_exec(r, server):
    r.set("counter", 10)
    other = redis.Redis(port=server, decode_responses=True)
    with r.pipeline() as pipe:
        pipe.watch("counter")
        current = int(pipe.get("counter"))
        other.set("counter", 100)  # a concurrent write dirties the WATCH
        pipe.multi()
        pipe.set("counter", current + 1)
        with pytest.raises(redis.exceptions.WatchError):
            pipe.execute()
    assert r.get("counter") == "100"

    def increment(pipe):
        value = int(pipe.get("counter"))
        pipe.multi()
        pipe.set("counter", value + 1)

    assert r.transaction(increment, "counter") == [True]
    assert r.get("counter") == "101"
    other.close()


def test_scan_iter_and_keys(r):
    names = {f"scan:{i}" for i in range(1000)}
    r.mset({name: "x" for name in names})
    r.set("other", "y")
    assert set(r.scan_iter(match="scan:*", count=50)) == names
    assert set(r.scan_iter()) == names | {"other"}
    assert set(r.keys("scan:99*")) == {"scan:99", *{f"scan:99{i}" for i in range(10)}}
    assert r.dbsize() == 1001
    assert r.type("other") == "string"
    assert r.randomkey() in names | {"other"}


def test_keys_commands(r):
    r.set("src", "v", ex=1000)
    assert r.rename("src", "dst") is True
    assert r.ttl("dst") > 0
    assert r.copy("dst", "cpy") is True
    assert r.copy("dst", "cpy") is False
    assert r.copy("dst", "cpy", replace=True) is True
    assert r.move("cpy", 1) is True
    assert r.exists("cpy") == 0
    assert r.delete("dst", "missing") == 1
    assert r.unlink("nothing") == 0


def test_info(r):
    info = r.info()
    assert info["redis_version"] == "7.0.15"
    assert info["role"] == "master"
    assert "used_memory" in info
    assert "connected_clients" in info
    r.set("k", "v")
    keyspace = r.info("keyspace")
    assert keyspace["db0"]["keys"] >= 1
    assert isinstance(r.info("stats")["total_commands_processed"], int)


def test_errors_are_raised(r):
    with pytest.raises(redis.exceptions.ResponseError, match="unknown command"):
        r.execute_command("NOSUCHCOMMAND")
    with pytest.raises(redis.exceptions.ResponseError, match="wrong number of arguments"):
        r.execute_command("GET")
    r.set("k", "v")
    with pytest.raises(redis.exceptions.ResponseError, match="not an integer"):
        r.incr("k")


def test_client_name_and_id(r):
    assert r.client_setname("tester") is True
    assert r.client_getname() == "tester"
    assert isinstance(r.client_id(), int)
    assert r.ping() is True
    assert r.echo("hi") == "hi"
