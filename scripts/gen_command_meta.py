#!/usr/bin/env python3
"""Generates densekv's command metadata from Redis 7.0.15's command JSON files.

COMMAND INFO, COMMAND DOCS, COMMAND LIST and COMMAND GETKEYS reply from
crates/server/src/commands/introspect/commands.json, which this script writes: one line per
command and subcommand densekv implements (the names in the `table!` lines under
crates/server/src/commands/), holding what redis-server 7.0.15 replies for it. The script does
what Redis's own generator (utils/generate-command-code.py) and its start-up
(`populateCommandStructure`, `setImplicitACLCategories`, `populateCommandLegacyRangeSpec` in
src/server.c) do to the JSON, so the data is reply-ready:

* `flags`: the command flags as COMMAND INFO names them, in its order, hidden ones left out and
  `movablekeys` added where the key specs make the keys movable;
* `acl_categories`: the JSON's categories plus the implicit ones (@write, @read, @admin,
  @dangerous, @pubsub, @fast, @blocking, else @slow), in ACL order, with their `@`;
* `key_range`: the legacy first key, last key and step;
* `tips` and argument names lower-cased, argument tokens upper-cased, key-spec and argument
  flags in reply order, the group's reply name.

`command_flags` keeps the JSON's flag names (minus SENTINEL and ONLY_SENTINEL, which densekv has
no use for): a unit test holds every table line's flags to them, and its arity to `arity`.

Subcommands densekv has that Redis 7.0.15 lacks (CLIENT SETINFO and NO-TOUCH, Redis 7.2's) take
their metadata from scripts/command_meta_extra.json, written for densekv in the same schema.

This runs on a developer's machine, not in CI (a clean clone has no ../shared):

    scripts/gen_command_meta.py [--redis-src ../shared/redis-7.0.15/src]

It fails when a table names a command no JSON describes. Commit the regenerated file.
"""

import argparse
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "crates/server/src/commands/introspect/commands.json")
EXTRA = os.path.join(ROOT, "scripts/command_meta_extra.json")

# addReplyFlagsForCommand's order; None marks the flags Redis hides from COMMAND INFO.
REPLY_FLAGS = [
    ("WRITE", "write"),
    ("READONLY", "readonly"),
    ("DENYOOM", "denyoom"),
    ("MODULE", "module"),
    ("ADMIN", "admin"),
    ("PUBSUB", "pubsub"),
    ("NOSCRIPT", "noscript"),
    ("BLOCKING", "blocking"),
    ("LOADING", "loading"),
    ("STALE", "stale"),
    ("SKIP_MONITOR", "skip_monitor"),
    ("SKIP_SLOWLOG", "skip_slowlog"),
    ("ASKING", "asking"),
    ("FAST", "fast"),
    ("NO_AUTH", "no_auth"),
    ("MAY_REPLICATE", None),
    ("SENTINEL", None),
    ("ONLY_SENTINEL", None),
    ("NO_MANDATORY_KEYS", "no_mandatory_keys"),
    ("PROTECTED", None),
    ("NO_ASYNC_LOADING", "no_async_loading"),
    ("NO_MULTI", "no_multi"),
    ("MOVABLE_KEYS", "movablekeys"),
    ("ALLOW_BUSY", "allow_busy"),
    ("TOUCHES_ARBITRARY_KEYS", None),
]
SENTINEL_ONLY = {"SENTINEL", "ONLY_SENTINEL"}

# ACLCommandCategories' order (src/acl.c).
ACL_CATEGORIES = [
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
    "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
    "connection", "transaction", "scripting",
]

# addReplyFlagsForKeyArgs' order: JSON name -> reply name.
KEY_FLAGS = [
    ("RO", "RO"), ("RW", "RW"), ("OW", "OW"), ("RM", "RM"), ("ACCESS", "access"),
    ("UPDATE", "update"), ("INSERT", "insert"), ("DELETE", "delete"), ("NOT_KEY", "not_key"),
    ("INCOMPLETE", "incomplete"), ("VARIABLE_FLAGS", "variable_flags"),
]

ARG_FLAGS = ["optional", "multiple", "multiple_token"]
DOC_FLAGS = [("DEPRECATED", "deprecated"), ("SYSCMD", "syscmd")]
GROUPS = {"sorted_set": "sorted-set"}

# Table lines: `"name", arity, …` (command.rs's `table!`).
TABLE_LINE = re.compile(r'^\s*"([a-z0-9_|-]+)",\s*-?\d+,', re.MULTILINE)


def densekv_names():
    """Every command and subcommand name in densekv's command tables."""
    names = set()
    pattern = os.path.join(ROOT, "crates/server/src/commands/**/*.rs")
    for path in glob.glob(pattern, recursive=True):
        with open(path, encoding="utf-8") as f:
            names.update(TABLE_LINE.findall(f.read()))
    return names


def load_json(paths):
    """Full name (`get`, `config|get`) -> the command's JSON object."""
    commands = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for name, command in json.load(f).items():
                full = name.lower()
                if "container" in command:
                    full = command["container"].lower() + "|" + full
                commands[full] = command
    return commands


def legacy_range(specs):
    """populateCommandLegacyRangeSpec: (first, last, step), and whether the keys are movable."""
    ranges = ["index" in s["begin_search"] and "range" in s["find_keys"] for s in specs]
    movable = False
    if not specs:
        return (0, 0, 0), movable
    if len(specs) == 1 and ranges[0]:
        spec = specs[0]
        first = spec["begin_search"]["index"]["pos"]
        last = spec["find_keys"]["range"]["lastkey"]
        movable = "INCOMPLETE" in spec["flags"]
        return (first, last + first if last >= 0 else last, spec["find_keys"]["range"]["step"]), movable
    first, last, prev_last = None, 0, 0
    for spec, is_range in zip(specs, ranges):
        if not is_range:
            movable = True
            continue
        pos = spec["begin_search"]["index"]["pos"]
        rng = spec["find_keys"]["range"]
        if rng["step"] != 1 or (prev_last and prev_last != pos - 1):
            movable = True
            continue
        if "INCOMPLETE" in spec["flags"]:
            movable = True
        first = pos if first is None else min(first, pos)
        absolute = rng["lastkey"] + pos if rng["lastkey"] >= 0 else rng["lastkey"]
        # Redis compares as unsigned, so a negative (count-from-the-end) last key wins.
        last = max(last, absolute, key=lambda v: v & 0xFFFFFFFF)
        prev_last = last
    if first is None:
        return (0, 0, 0), True
    return (first, last, 1), movable


def acl_categories(command, flags):
    """setImplicitACLCategories over the JSON's categories, in ACL order, with their `@`."""
    cats = {c.lower() for c in command.get("acl_categories", [])}
    if "WRITE" in flags:
        cats.add("write")
    if "READONLY" in flags and "scripting" not in cats:
        cats.add("read")
    if "ADMIN" in flags:
        cats.update(("admin", "dangerous"))
    if "PUBSUB" in flags:
        cats.add("pubsub")
    if "FAST" in flags:
        cats.add("fast")
    if "BLOCKING" in flags:
        cats.add("blocking")
    if "fast" not in cats:
        cats.add("slow")
    unknown = cats - set(ACL_CATEGORIES)
    if unknown:
        sys.exit(f"unknown ACL categories {unknown}")
    return ["@" + c for c in ACL_CATEGORIES if c in cats]


def key_spec(spec):
    out = {}
    if "notes" in spec:
        out["notes"] = spec["notes"]
    out["flags"] = [reply for name, reply in KEY_FLAGS if name in spec["flags"]]
    out["begin_search"] = spec["begin_search"]
    out["find_keys"] = spec["find_keys"]
    return out


def argument(arg):
    # Redis's generator lower-cases argument names (CLIENT TRACKING's `BCAST` is `bcast`).
    out = {"name": arg["name"].lower(), "type": arg["type"]}
    for field in ("key_spec_index", "token", "summary", "since", "deprecated_since"):
        if field in arg:
            out[field] = arg[field]
    if "token" in out:
        # Redis's generator upper-cases tokens (`normal` of CLIENT KILL TYPE is `NORMAL`).
        out["token"] = out["token"].upper()
    flags = [f for f in ARG_FLAGS if arg.get(f)]
    if flags:
        out["flags"] = flags
    if arg["type"] in ("oneof", "block"):
        out["arguments"] = [argument(a) for a in arg.get("arguments", [])]
    return out


def entry(name, command):
    json_flags = command.get("command_flags", [])
    specs = command.get("key_specs", [])
    key_range, movable = legacy_range(specs)
    reply_flags = set(json_flags) | ({"MOVABLE_KEYS"} if movable else set())
    out = {
        "name": name,
        "arity": command["arity"],
        "command_flags": [f for f in json_flags if f not in SENTINEL_ONLY],
        "flags": [reply for flag, reply in REPLY_FLAGS if reply and flag in reply_flags],
        "acl_categories": acl_categories(command, json_flags),
        "key_range": list(key_range),
        "tips": [t.lower() for t in command.get("command_tips", [])],
        "key_specs": [key_spec(s) for s in specs],
    }
    if "get_keys_function" in command:
        out["get_keys_function"] = command["get_keys_function"]
    out["summary"] = command["summary"]
    out["since"] = command["since"]
    out["group"] = GROUPS.get(command["group"], command["group"])
    if "complexity" in command:
        out["complexity"] = command["complexity"]
    doc_flags = [reply for flag, reply in DOC_FLAGS if flag in command.get("doc_flags", [])]
    if doc_flags:
        out["doc_flags"] = doc_flags
    for field in ("deprecated_since", "replaced_by"):
        if field in command:
            out[field] = command[field]
    if command.get("history"):
        out["history"] = command["history"]
    if command.get("arguments"):
        out["arguments"] = [argument(a) for a in command["arguments"]]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--redis-src",
        default=os.path.join(ROOT, "..", "shared", "redis-7.0.15", "src"),
        help="Redis 7.0.15's src directory (its commands/*.json are read)",
    )
    args = parser.parse_args()
    paths = sorted(glob.glob(os.path.join(args.redis_src, "commands", "*.json")))
    if not paths:
        sys.exit(f"no command JSON under {args.redis_src}/commands")
    redis = load_json(paths)
    extra = load_json([EXTRA])
    overlap = redis.keys() & extra.keys()
    if overlap:
        sys.exit(f"{EXTRA} describes commands Redis already has: {sorted(overlap)}")
    known = {**redis, **extra}
    names = densekv_names()
    missing = sorted(names - known.keys())
    if missing:
        sys.exit(f"densekv's tables name commands no JSON describes: {missing}")
    lines = [json.dumps(entry(n, known[n]), ensure_ascii=False, separators=(",", ":"))
             for n in sorted(names)]
    with open(OUTPUT, "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(lines) + "\n]\n")
    print(f"wrote {len(lines)} commands to {os.path.relpath(OUTPUT, ROOT)}")


if __name__ == "__main__":
    main()
