#!/usr/bin/env bash
# Server CPU per request and requests per second, densekv against redis-server, one fresh pair of
# servers per round, each test run on both in turn (redis-benchmark -c 50 -r 1000000).
# CPU is the server process's user + system time from /proc/<pid>/stat over the test, which moves
# far less than the request rate on a shared machine. densekv runs with `--busy-poll-us 0`: the
# figure is the work a request costs, not the time a loop spends polling for the next one.
#
#   scripts/cpu_per_request.sh TESTS PIPELINE [ROUNDS]     e.g. scripts/cpu_per_request.sh set,incr,hset 16 5
#
# DENSEKV_BIN overrides target/release/densekv; N (default 500000) is the requests per test and R
# (default 1000000) the key range (`-r`): R=1000 makes nearly every write an update, R=100000000
# nearly every write an insert. BASE_BIN, if set, is another densekv build run beside them in
# every round (as server `base`): how a change moved the CPU per request.
# Prints one line per test and server: the rounds' values, then their median.
set -euo pipefail
cd "$(dirname "$0")/.."
tests=$1; pipeline=$2; rounds=${3:-5}; n=${N:-500000}; range=${R:-1000000}
densekv=${DENSEKV_BIN:-target/release/densekv}
# shellcheck source=scripts/bench_lib.sh
. scripts/bench_lib.sh
out=$(mktemp)
trap 'rm -f "$out"' EXIT
servers="densekv redis"
[ -n "${BASE_BIN:-}" ] && servers="base densekv redis"
for _ in $(seq "$rounds"); do
  pd=$(free_port); "$densekv" --busy-poll-us 0 --port "$pd" --save '' >/dev/null 2>&1 & d=$!
  pr=$(free_port); redis-server --port "$pr" --save '' --appendonly no >/dev/null 2>&1 & r=$!
  pb=""; b=""
  if [ -n "${BASE_BIN:-}" ]; then
    pb=$(free_port); "$BASE_BIN" --busy-poll-us 0 --port "$pb" --save '' >/dev/null 2>&1 & b=$!
  fi
  sleep 0.5
  for t in ${tests//,/ }; do
    for server in $servers; do
      case $server in
        densekv) port=$pd; pid=$d ;;
        base) port=$pb; pid=$b ;;
        *) port=$pr; pid=$r ;;
      esac
      c0=$(ticks "$pid")
      rps=$(redis-benchmark -p "$port" -c 50 -n "$n" -r "$range" -P "$pipeline" -t "$t" --csv \
        | tail -1 | cut -d, -f2 | tr -d '"')
      c1=$(ticks "$pid")
      echo "$t $server ${rps%.*} $(( (c1 - c0) * 1000000000 / hz / n ))" >> "$out"
    done
  done
  kill "$d" "$r" ${b:+"$b"}; wait "$d" "$r" ${b:+"$b"} 2>/dev/null || true
done
for key in $(awk '{print $1 "/" $2}' "$out" | sort -u); do
  t=${key%/*}; server=${key#*/}
  rps=$(awk -v t="$t" -v s="$server" '$1 == t && $2 == s {printf "%s ", $3}' "$out")
  cpu=$(awk -v t="$t" -v s="$server" '$1 == t && $2 == s {printf "%s ", $4}' "$out")
  printf '%-12s %-8s rps %s(median %s)   cpu ns/request %s(median %s)\n' "$t" "$server" \
    "$rps" "$(echo $rps | median)" "$cpu" "$(echo $cpu | median)"
done
