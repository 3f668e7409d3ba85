"""Lua scripting through an unmodified redis-py, over RESP2 and RESP3 connections: EVAL and
EVALSHA with the SCRIPT commands, redis-py's `Script` helper (NOSCRIPT fallback, pipelines),
its distributed `Lock` (built on SET NX PX and three Lua scripts), and the FUNCTION / FCALL
helpers. Every value asserted is one Redis 7.0 gives; a test that fails here is a densekv bug,
not a test to relax.

Run: DENSEKV_BIN=target/release/densekv python3 -m pytest tests/python/test_scripting.py -q
"""

import hashlib
import threading
import time

import pytest
import redis
from redis.exceptions import LockError, LockNotOwnedError, NoScriptError, ResponseError

LIBRARY = """#!lua name=mylib
redis.register_function('myset', function(keys, args)
  return redis.call('SET', keys[1], args[1])
end)
redis.register_function{
  function_name = 'myget',
  callback = function(keys, args) return redis.call('GET', keys[1]) end,
  flags = {'no-writes'},
  description = 'reads a key',
}
"""

LIBRARY_V2 = """#!lua name=mylib
redis.register_function('myset', function(keys, args)
  return redis.call('SET', keys[1], args[1] .. ':v2')
end)
"""


def protocol(client):
    return client.connection_pool.connection_kwargs.get("protocol", 2)


def second_client(server, client):
    """Another connection to the same server, speaking the same protocol as `client`."""
    return redis.Redis(port=server, protocol=protocol(client), decode_responses=True)


def as_dict(value):
    """A RESP3 map as redis-py gives it, or the same map as a RESP2 flat list."""
    if isinstance(value, dict):
        return value
    return dict(zip(value[::2], value[1::2]))


@pytest.fixture(autouse=True)
def no_scripts_or_functions(r):
    """Keys are flushed by `r`; the script cache and the libraries are flushed here."""
    assert r.script_flush() is True
    assert r.function_flush() is True
    yield


# ===== EVAL, EVALSHA, SCRIPT =====


def test_eval_keys_args_and_conversions(r):
    got = r.eval("return {KEYS[1], ARGV[1], #KEYS, #ARGV}", 1, "k", "a", "b")
    assert got == ["k", "a", 1, 2]
    # Numbers are truncated to integers, true is 1, false and nil end up as null; an array
    # stops at its first nil.
    assert r.eval("return {1, 2.9, -3.7, 'x', true, false}", 0) == [1, 2, -3, "x", 1, None]
    assert r.eval("return {1, nil, 3}", 0) == [1]
    assert r.eval("return redis.status_reply('FINE')", 0) == "FINE"
    assert r.eval("return {ok = 'STATUS'}", 0) == "STATUS"
    assert r.eval("return redis.call('ECHO', ARGV[1])", 0, "héllo") == "héllo"
    assert r.eval("return nil", 0) is None
    assert r.eval("return false", 0) is None
    assert r.eval("return true", 0) == 1


def test_eval_setresp3_replies_follow_the_caller_protocol(r):
    script = "redis.setresp(3); return {double = 3.5}"
    if protocol(r) == 3:
        assert r.eval(script, 0) == 3.5
        assert r.eval("redis.setresp(3); return {map = {a = 1}}", 0) == {"a": 1}
        # redis-py gives a RESP3 set as a list.
        assert r.eval("redis.setresp(3); return {set = {x = true}}", 0) == ["x"]
        assert r.eval("redis.setresp(3); return true", 0) is True
    else:
        assert r.eval(script, 0) == "3.5"
        assert r.eval("redis.setresp(3); return {map = {a = 1}}", 0) == ["a", 1]
        assert r.eval("redis.setresp(3); return {set = {x = true}}", 0) == ["x"]
        assert r.eval("redis.setresp(3); return true", 0) == 1
    r.hset("h", "f", "v")
    got = r.eval("redis.setresp(3); local m = redis.call('HGETALL', KEYS[1]); return m.map.f", 1, "h")
    assert got == "v"


def test_eval_errors(r):
    with pytest.raises(ResponseError, match="Number of keys can't be greater than number of args"):
        r.eval("return 1", 2, "only-one")
    with pytest.raises(ResponseError, match="Number of keys can't be negative"):
        r.eval("return 1", -1)
    with pytest.raises(ResponseError, match="^Error compiling script"):
        r.eval("return (", 0)
    with pytest.raises(ResponseError, match="^MY custom error$"):
        r.eval("return redis.error_reply('MY custom error')", 0)
    with pytest.raises(ResponseError, match="user_script:1: Script attempted to access nonexistent global variable 'nope'"):
        r.eval("return nope", 0)
    r.set("s", "string")
    with pytest.raises(ResponseError, match="^WRONGTYPE Operation against a key holding the wrong kind of value"):
        r.eval("return redis.call('LPUSH', KEYS[1], 'x')", 1, "s")
    # redis.pcall hands the error to the script, which returns it inside an array: redis-py
    # gives it back as an exception object, not raised.
    got = r.eval("return {redis.pcall('LPUSH', KEYS[1], 'x'), 'after'}", 1, "s")
    assert isinstance(got[0], ResponseError)
    assert str(got[0]).startswith("WRONGTYPE")
    assert got[1] == "after"
    with pytest.raises(ResponseError, match="Unknown Redis command called from script"):
        r.eval("return redis.call('NOSUCH')", 0)
    with pytest.raises(ResponseError, match="This Redis command is not allowed from script"):
        r.eval("return redis.call('SCRIPT', 'FLUSH')", 0)


def test_evalsha_and_script_commands(r):
    body = "return redis.call('INCRBY', KEYS[1], ARGV[1])"
    sha = r.script_load(body)
    assert sha == hashlib.sha1(body.encode()).hexdigest()
    assert r.evalsha(sha, 1, "n", 5) == 5
    assert r.evalsha(sha.upper(), 1, "n", 2) == 7
    assert r.script_exists(sha, "0" * 40, "short") == [True, False, False]
    # EVAL caches what it runs, so EVALSHA finds it afterwards.
    eval_sha = hashlib.sha1(b"return 'cached'").hexdigest()
    assert r.script_exists(eval_sha) == [False]
    assert r.eval("return 'cached'", 0) == "cached"
    assert r.script_exists(eval_sha) == [True]
    assert r.evalsha(eval_sha, 0) == "cached"
    assert r.script_flush("ASYNC") is True
    assert r.script_exists(sha, eval_sha) == [False, False]
    with pytest.raises(NoScriptError):
        r.evalsha(sha, 1, "n", 1)
    assert r.get("n") == "7"
    assert r.script_flush("SYNC") is True
    with pytest.raises(ResponseError, match="NOTBUSY No scripts in execution right now."):
        r.script_kill()


def test_eval_ro_and_evalsha_ro(r):
    r.set("k", "v")
    assert r.eval_ro("return redis.call('GET', KEYS[1])", 1, "k") == "v"
    with pytest.raises(ResponseError, match="Write commands are not allowed from read-only scripts"):
        r.eval_ro("return redis.call('SET', KEYS[1], 'w')", 1, "k")
    sha = r.script_load("return redis.call('DEL', KEYS[1])")
    with pytest.raises(ResponseError, match="Write commands are not allowed from read-only scripts"):
        r.evalsha_ro(sha, 1, "k")
    assert r.get("k") == "v"
    with pytest.raises(ResponseError, match="Can not execute a script with write flag using \\*_ro command"):
        r.eval_ro("#!lua\nreturn redis.call('GET', KEYS[1])", 1, "k")
    assert r.eval_ro("#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", 1, "k") == "v"


# ===== redis-py's Script helper =====


def test_register_script_falls_back_after_noscript(r):
    incr_by = r.register_script("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    assert incr_by.sha == hashlib.sha1(incr_by.script.encode()).hexdigest()
    assert r.script_exists(incr_by.sha) == [False]
    # The first call gets NOSCRIPT from EVALSHA, loads the script and runs it again.
    assert incr_by(keys=["n"], args=[5]) == 5
    assert r.script_exists(incr_by.sha) == [True]
    assert incr_by(keys=["n"], args=[-2]) == 3
    r.script_flush()
    assert incr_by(keys=["n"], args=[10]) == 13
    assert r.get("n") == "13"


def test_script_runs_on_another_client(r, server):
    other = second_client(server, r)
    try:
        echo = r.register_script("return {KEYS[1], ARGV[1], ARGV[2]}")
        assert echo(keys=["k"], args=["a", 2], client=other) == ["k", "a", "2"]
        assert other.script_exists(echo.sha) == [True]
    finally:
        other.close()


@pytest.mark.parametrize("transaction", [True, False], ids=["multi", "plain"])
def test_scripts_in_pipelines(r, transaction):
    add = r.register_script("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    fail = r.register_script("return redis.error_reply('BAD script failed')")
    with r.pipeline(transaction=transaction) as pipe:
        pipe.set("a", 1)
        add(keys=["a"], args=[10], client=pipe)
        pipe.get("a")
        add(keys=["a"], args=[-1], client=pipe)
        # The pipeline loads the scripts it has not seen on the server before it sends them.
        assert pipe.execute() == [True, 11, "11", 10]
    assert r.script_exists(add.sha) == [True]
    r.script_flush()
    with r.pipeline(transaction=transaction) as pipe:
        add(keys=["b"], args=[2], client=pipe)
        fail(client=pipe)
        pipe.get("b")
        results = pipe.execute(raise_on_error=False)
    assert results[0] == 2
    assert isinstance(results[1], ResponseError)
    assert str(results[1]) == "BAD script failed"
    assert results[2] == "2"


# ===== redis-py's Lock =====


def test_lock_acquire_extend_reacquire_release(r):
    lock = r.lock("lk", timeout=10)
    assert lock.acquire(blocking=False) is True
    assert lock.locked() is True
    assert lock.owned() is True
    assert r.get("lk") == lock.local.token.decode()
    assert 9_000 < r.pttl("lk") <= 10_000
    assert lock.extend(5) is True
    assert 14_000 < r.pttl("lk") <= 15_000
    assert lock.extend(3, replace_ttl=True) is True
    assert 2_000 < r.pttl("lk") <= 3_000
    assert lock.reacquire() is True
    assert 9_000 < r.pttl("lk") <= 10_000
    assert lock.acquire(blocking=False) is False  # not reentrant: the key is there
    lock.release()
    assert r.exists("lk") == 0
    assert lock.locked() is False
    with pytest.raises(LockError, match="not owned or is already unlocked"):
        lock.release()
    with pytest.raises(LockError, match="Cannot extend an unlocked lock"):
        lock.extend(1)
    with pytest.raises(LockError, match="Cannot reacquire an unlocked lock"):
        lock.reacquire()


def test_lock_without_timeout(r):
    lock = r.lock("forever")
    assert lock.acquire(blocking=False) is True
    assert r.ttl("forever") == -1
    with pytest.raises(LockError, match="Cannot extend a lock with no timeout"):
        lock.extend(1)
    with pytest.raises(LockError, match="Cannot reacquire a lock with no timeout"):
        lock.reacquire()
    lock.release()
    assert r.exists("forever") == 0


def test_lock_blocking_between_two_clients(r, server):
    other = second_client(server, r)
    try:
        # Released from a timer thread: the token must not be thread-local.
        mine = r.lock("shared", timeout=5, thread_local=False)
        theirs = other.lock("shared", timeout=5, sleep=0.01)
        assert mine.acquire(blocking=False) is True
        started = time.monotonic()
        assert theirs.acquire(blocking=True, blocking_timeout=0.2) is False
        assert time.monotonic() - started >= 0.15
        assert theirs.owned() is False

        releaser = threading.Timer(0.2, mine.release)
        releaser.start()
        started = time.monotonic()
        assert theirs.acquire(blocking=True, blocking_timeout=3) is True
        waited = time.monotonic() - started
        releaser.join()
        assert 0.15 <= waited < 3
        assert theirs.owned() is True
        assert mine.owned() is False
        assert r.get("shared") == theirs.local.token.decode()
        theirs.release()
        assert r.exists("shared") == 0
    finally:
        other.close()


def test_lock_lost_to_expiry_is_not_owned(r, server):
    other = second_client(server, r)
    try:
        mine = r.lock("brief", timeout=0.1)
        assert mine.acquire(blocking=False) is True
        time.sleep(0.25)
        assert r.exists("brief") == 0
        theirs = other.lock("brief", timeout=5)
        assert theirs.acquire(blocking=False) is True
        assert mine.owned() is False
        with pytest.raises(LockNotOwnedError, match="Cannot extend a lock that's no longer owned"):
            mine.extend(1)
        with pytest.raises(LockNotOwnedError, match="Cannot reacquire a lock that's no longer owned"):
            mine.reacquire()
        with pytest.raises(LockNotOwnedError, match="Cannot release a lock that's no longer owned"):
            mine.release()
        # The failed release left the other owner's lock alone.
        assert theirs.owned() is True
        assert 4_000 < r.pttl("brief") <= 5_000
        theirs.release()
    finally:
        other.close()


def test_lock_token_replaced_behind_its_back(r):
    lock = r.lock("swapped", timeout=5)
    assert lock.acquire(blocking=False, token="mine") is True
    assert r.get("swapped") == "mine"
    r.set("swapped", "someone-else")
    assert lock.owned() is False
    with pytest.raises(LockNotOwnedError):
        lock.release()
    assert r.get("swapped") == "someone-else"


def test_lock_context_manager(r, server):
    with r.lock("cm", timeout=5, blocking_timeout=0.1) as lock:
        assert lock.owned() is True
        assert r.exists("cm") == 1
        other = second_client(server, r)
        try:
            with pytest.raises(LockError, match="Unable to acquire lock"):
                with other.lock("cm", timeout=5, blocking_timeout=0.1):
                    pass
        finally:
            other.close()
    assert r.exists("cm") == 0


# ===== FUNCTION and FCALL =====


def test_function_load_replace_and_fcall(r):
    assert r.function_load(LIBRARY) == "mylib"
    with pytest.raises(ResponseError, match="Library 'mylib' already exists"):
        r.function_load(LIBRARY)
    assert r.fcall("myset", 1, "k", "v") == "OK"
    assert r.fcall("myget", 1, "k") == "v"
    assert r.fcall_ro("myget", 1, "k") == "v"
    with pytest.raises(ResponseError, match="Can not execute a script with write flag using \\*_ro command"):
        r.fcall_ro("myset", 1, "k", "w")
    with pytest.raises(ResponseError, match="Function not found"):
        r.fcall("nosuch", 0)
    assert r.function_load(LIBRARY_V2, replace=True) == "mylib"
    assert r.fcall("myset", 1, "k", "w") == "OK"
    assert r.get("k") == "w:v2"
    with pytest.raises(ResponseError, match="Function not found"):
        r.fcall("myget", 1, "k")
    with pytest.raises(ResponseError, match="Missing library metadata"):
        r.function_load("return 1")
    with pytest.raises(ResponseError, match="No functions registered"):
        r.function_load("#!lua name=empty\nlocal x = 1")


def test_function_list(r):
    assert r.function_list() == []
    r.function_load(LIBRARY)
    (library,) = [as_dict(lib) for lib in r.function_list()]
    assert library["library_name"] == "mylib"
    assert library["engine"] == "LUA"
    assert "library_code" not in library
    functions = {f["name"]: f for f in (as_dict(f) for f in library["functions"])}
    assert sorted(functions) == ["myget", "myset"]
    assert functions["myget"]["flags"] == ["no-writes"] or functions["myget"]["flags"] == {"no-writes"}
    assert functions["myget"]["description"] == "reads a key"
    assert functions["myset"]["description"] is None
    assert list(functions["myset"]["flags"]) == []
    (with_code,) = [as_dict(lib) for lib in r.function_list(withcode=True)]
    assert with_code["library_code"] == LIBRARY
    assert [as_dict(lib)["library_name"] for lib in r.function_list(library="my*")] == ["mylib"]
    assert r.function_list(library="other*") == []


def test_function_dump_and_restore_policies(r):
    r.function_load(LIBRARY)
    payload = r.function_dump()
    assert isinstance(payload, bytes) and len(payload) > 10
    assert r.function_flush() is True
    assert r.function_list() == []
    assert r.function_restore(payload) is True
    assert r.fcall("myset", 1, "k", "v") == "OK"
    # FUNCTION RESTORE names the library without the quotes FUNCTION LOAD puts around it.
    with pytest.raises(ResponseError, match="^Library mylib already exists$"):
        r.function_restore(payload)  # APPEND is the default policy
    with pytest.raises(ResponseError, match="^Library mylib already exists$"):
        r.function_restore(payload, "APPEND")
    r.function_load(LIBRARY_V2, replace=True)
    assert r.function_restore(payload, "REPLACE") is True
    assert r.fcall("myget", 1, "k") == "v"  # the dumped version is back
    r.function_load("#!lua name=other\nredis.register_function('o', function() return 1 end)")
    assert r.function_restore(payload, "FLUSH") is True
    assert [as_dict(lib)["library_name"] for lib in r.function_list()] == ["mylib"]
    with pytest.raises(ResponseError, match="Wrong restore policy given"):
        r.function_restore(payload, "BOGUS")
    with pytest.raises(ResponseError, match="payload version or checksum are wrong"):
        r.function_restore(b"not a payload")


def test_function_delete_and_flush(r):
    r.function_load(LIBRARY)
    assert r.function_delete("mylib") is True
    with pytest.raises(ResponseError, match="Library not found"):
        r.function_delete("mylib")
    with pytest.raises(ResponseError, match="Function not found"):
        r.fcall("myget", 1, "k")
    r.function_load(LIBRARY)
    assert r.function_flush("ASYNC") is True
    assert r.function_list() == []
    r.function_load(LIBRARY)
    assert r.function_flush("SYNC") is True
    assert r.function_list() == []


def test_function_stats(r):
    stats = as_dict(r.function_stats())
    assert stats["running_script"] is None
    assert as_dict(as_dict(stats["engines"])["LUA"]) == {"libraries_count": 0, "functions_count": 0}
    r.function_load(LIBRARY)
    stats = as_dict(r.function_stats())
    assert as_dict(as_dict(stats["engines"])["LUA"]) == {"libraries_count": 1, "functions_count": 2}
    with pytest.raises(ResponseError, match="NOTBUSY No scripts in execution right now."):
        r.function_kill()


# ===== Busy scripts =====


def wait_until_busy(client):
    """Pings until the server answers -BUSY; fails after 5 s."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            client.ping()
        except ResponseError as e:
            assert str(e).startswith("BUSY Redis is busy running a script.")
            return str(e)
        time.sleep(0.02)
    pytest.fail("the script never made the server busy")


@pytest.mark.parametrize("kind", ["eval", "function"])
def test_kill_a_busy_script_from_another_client(r, server, kind):
    """A script past busy-reply-threshold makes other clients get -BUSY until SCRIPT KILL or
    FUNCTION KILL (sent with redis-py's helpers) stops it; its caller gets the kill error."""
    other = second_client(server, r)
    r.config_set("busy-reply-threshold", 50)
    if kind == "function":
        r.function_load("#!lua name=spin\nredis.register_function('spin', function() while true do end end)")
        run, kill, other_kill = (lambda: other.fcall("spin", 0)), r.function_kill, r.script_kill
        killed = "OK"  # redis-py has no reply callback for FUNCTION KILL
    else:
        run, kill, other_kill = (lambda: other.eval("while true do end", 0)), r.script_kill, r.function_kill
        killed = True
    outcome = []

    def caller():
        try:
            outcome.append(run())
        except ResponseError as e:
            outcome.append(e)

    thread = threading.Thread(target=caller)
    thread.start()
    try:
        busy = wait_until_busy(r)
        if kind == "function":
            assert busy.endswith("You can only call FUNCTION KILL or SHUTDOWN NOSAVE.")
            running = as_dict(as_dict(r.function_stats())["running_script"])
            assert running["name"] == "spin"
            assert running["command"] == ["FCALL", "spin", "0"]
            assert running["duration_ms"] >= 50
        else:
            assert busy.endswith("You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
            # Redis 7.0 answers FUNCTION STATS with -BUSY while an EVAL script runs.
            with pytest.raises(ResponseError, match="^BUSY Redis is busy running a script"):
                r.function_stats()
        # The other kind of KILL is refused while this kind of script runs.
        with pytest.raises(ResponseError, match="^BUSY Redis is busy running a script"):
            other_kill()
        assert kill() == killed
        thread.join(5)
        assert not thread.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], ResponseError)
        assert "killed by user" in str(outcome[0])
        assert r.ping() is True
    finally:
        if thread.is_alive():
            for stop in (r.script_kill, r.function_kill):
                try:
                    stop()
                except ResponseError:
                    pass
            thread.join(5)
        r.config_set("busy-reply-threshold", 5000)
        other.close()
