#!/usr/bin/env bash
# Requests per second and CPU, side by side: densekv with busy polling off (`--busy-poll-us 0`),
# densekv with it on (`--busy-poll-us SPIN`, default 20) and redis-server, a fresh set of servers
# per round, each test run on the three in turn (redis-benchmark -c 50 -r 1000000).
#
#   scripts/busy_poll_ab.sh TEST [ROUNDS]        e.g. N=40000 scripts/busy_poll_ab.sh lrange_100 3
#
# N (default 200000) is the requests per run, P (default 1) the pipeline depth. Per server the
# line shows rps / server CPU ms / client CPU ms (redis-benchmark's user + system time).
# Needs GNU time at /usr/bin/time (Debian package `time`).
set -euo pipefail
cd "$(dirname "$0")/.."
test=$1; rounds=${2:-3}; n=${N:-200000}; pipeline=${P:-1}; spin=${SPIN:-20}
densekv=${DENSEKV_BIN:-target/release/densekv}
# shellcheck source=scripts/bench_lib.sh
. scripts/bench_lib.sh
times=$(mktemp)
trap 'rm -f "$times"' EXIT
echo "round: off(rps/srv ms/cli ms)  on  redis"
for round in $(seq "$rounds"); do
  p0=$(free_port); "$densekv" --busy-poll-us 0 --port "$p0" >/dev/null 2>&1 & s0=$!
  p1=$(free_port); "$densekv" --busy-poll-us "$spin" --port "$p1" >/dev/null 2>&1 & s1=$!
  p2=$(free_port); redis-server --port "$p2" --save '' --appendonly no >/dev/null 2>&1 & s2=$!
  sleep 0.5
  line="$round:"
  for i in 0 1 2; do
    port=$(eval echo "\$p$i"); pid=$(eval echo "\$s$i")
    c0=$(ticks "$pid")
    rps=$(/usr/bin/time -f "%U %S" -o "$times" redis-benchmark -p "$port" -c 50 -n "$n" \
      -r 1000000 -P "$pipeline" -t "$test" --csv | tail -1 | cut -d, -f2 | tr -d '"')
    c1=$(ticks "$pid")
    cli=$(awk '{printf "%d", ($1 + $2) * 1000}' "$times")
    line="$line ${rps%.*}/$(( (c1 - c0) * 1000 / hz ))/$cli"
  done
  echo "$line"
  kill "$s0" "$s1" "$s2"; wait "$s0" "$s1" "$s2" 2>/dev/null || true
done
