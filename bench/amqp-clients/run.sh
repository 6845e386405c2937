#!/usr/bin/env bash
# Three AMQP clients' CPU per delivery in the drain's pattern, alternated
# round by round in one sitting (bench/notes/2026-12-04-three-amqp-clients.md).
#
#   bench/amqp-clients/run.sh [--cap] [ROUNDS] [MESSAGES] [PREFETCH]
#
# --cap runs each drain in a cgroup capped at 128 MB's CPU share (7,235 µs
# per 100,000 µs; root and cgroup v1's cpu controller), as Lambda runs it.
# Defaults: 5 rounds of 10,000 messages of 500 bytes, prefetch 100 (the
# function's default). The broker: AMQP_ADDR, default 127.0.0.1:5672
# (guest/guest, vhost /). Prints each run, then the median per client.
set -euo pipefail
cd "$(dirname "$0")"
cap=no
if [ "${1:-}" = --cap ]; then cap=yes; shift; fi
rounds=${1:-5} messages=${2:-10000} prefetch=${3:-100}
cargo build --quiet --release
bin="${CARGO_TARGET_DIR:-$PWD/target}/release/amqp-clients"
queue="amqp-clients-$$"
run=("$bin")
if [ "$cap" = yes ]; then
  group=/sys/fs/cgroup/cpu/amqp-clients-$$
  mkdir "$group"
  echo 100000 > "$group/cpu.cfs_period_us"
  echo 7235 > "$group/cpu.cfs_quota_us"
  run=(sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$group" "$bin")
fi
out=$(mktemp)
trap 'rm -f "$out"; "$bin" delete "$queue" || true; [ -z "${group:-}" ] || rmdir "$group" 2>/dev/null || true' EXIT
for round in $(seq "$rounds"); do
  for client in lapin amqprs raw; do
    "$bin" fill "$queue" "$messages" 500
    "${run[@]}" "$client" "$queue" "$messages" "$prefetch" | tee -a "$out"
  done
done
echo "median of $rounds rounds, $messages × 500 B, prefetch $prefetch, capped: $cap"
for client in lapin amqprs raw; do
  grep "^$client:" "$out" | sed -E 's/.*\(drain\), ([0-9.]+) µs \(process\); context switches ([0-9]+) voluntary, ([0-9]+) involuntary/\1 \2 \3/' |
    sort -n | awk -v c="$client" '{v[NR]=$0} END {split(v[int((NR+1)/2)], m, " "); printf "  %-7s %6.2f µs CPU per delivery (process); context switches in that run: %d voluntary, %d involuntary\n", c, m[1], m[2], m[3]}'
done
