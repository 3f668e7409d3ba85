#!/usr/bin/env bash
# Requests per second and CPU, side by side: densekv at each busy-poll budget in SPINS
# (`--busy-poll-us`, default "0 20 100") and redis-server, a fresh set of servers per round, each
# test run on every server in turn (redis-benchmark -c 50 -r 1000000).
#
#   scripts/busy_poll_ab.sh TEST [ROUNDS]        e.g. N=20000 scripts/busy_poll_ab.sh lrange_500 5
#
# N (default 200000) is the requests per run, P (default 1) the pipeline depth. Per server the
# line shows rps / server CPU ms / client CPU ms (redis-benchmark's user + system time); the
# last column of a round is each densekv budget's rps over redis-server's, and the closing line
# the median of those ratios over the rounds.
# Needs GNU time at /usr/bin/time (Debian package `time`).
set -euo pipefail
cd "$(dirname "$0")/.."
test=$1; rounds=${2:-3}; n=${N:-200000}; pipeline=${P:-1}; read -ra spins <<<"${SPINS:-0 20 100}"
densekv=${DENSEKV_BIN:-target/release/densekv}
# shellcheck source=scripts/bench_lib.sh
. scripts/bench_lib.sh
times=$(mktemp); ratios=$(mktemp)
trap 'rm -f "$times" "$ratios"' EXIT
echo "round: $(printf 'spin=%s ' "${spins[@]}")redis  (rps/srv ms/cli ms) | rps ratios to redis"
for round in $(seq "$rounds"); do
  ports=(); pids=()
  for s in "${spins[@]}"; do
    p=$(free_port); "$densekv" --busy-poll-us "$s" --port "$p" --save '' >/dev/null 2>&1 & pids+=($!); ports+=("$p")
  done
  p=$(free_port); redis-server --port "$p" --save '' --appendonly no >/dev/null 2>&1 & pids+=($!); ports+=("$p")
  sleep 0.5
  line="$round:"; rates=()
  for i in "${!ports[@]}"; do
    c0=$(ticks "${pids[$i]}")
    rps=$(/usr/bin/time -f "%U %S" -o "$times" redis-benchmark -p "${ports[$i]}" -c 50 -n "$n" \
      -r 1000000 -P "$pipeline" -t "$test" --csv | tail -1 | cut -d, -f2 | tr -d '"')
    c1=$(ticks "${pids[$i]}")
    cli=$(awk '{printf "%d", ($1 + $2) * 1000}' "$times")
    line="$line ${rps%.*}/$(( (c1 - c0) * 1000 / hz ))/$cli"; rates+=("$rps")
  done
  r=$(printf '%s\n' "${rates[@]}" | awk '{v[NR]=$1} END {for (i = 1; i < NR; i++) printf "%.3f ", v[i] / v[NR]}')
  echo "$line | $r"; echo "$r" >>"$ratios"
  kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true
done
# Median per column (per budget) of the per-round ratios.
line="median ratio:"
for col in $(seq "${#spins[@]}"); do
  line="$line $(cut -d' ' -f"$col" "$ratios" | median)"
done
echo "$line"
