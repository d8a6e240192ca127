#!/usr/bin/env bash
# A second sampler for the overhead budget's figure (a), statebench's own share of CPU: `perf
# record` of a run, its samples bucketed into RocksDB's work and statebench's own by
# scripts/perf-buckets.py (with a per-module and per-symbol breakdown). The three figures
# themselves, side by side against their budgets, are `statebench bench --suite overhead`
# (README, "Overhead").
# usage: scripts/overhead.sh   (env: STATEBENCH=path/to/binary, WORKLOAD, PROFILE, EVENTS)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${STATEBENCH:-${CARGO_TARGET_DIR:-$here/../target}/release/statebench}
workload=${WORKLOAD:-ads-minutes}
profile=${PROFILE:-flink-default}
events=${EVENTS:-100000}
work=$(mktemp -d /tmp/statebench-overhead.XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! command -v perf > /dev/null || ! perf record -e cpu-clock -o /dev/null true 2> /dev/null; then
  echo "needs perf (Debian: apt-get install linux-perf)" >&2
  exit 2
fi
echo "== $workload, $profile, $events events; $("$bin" --version)"
perf record -e cpu-clock -F 999 --call-graph dwarf,8192 -o "$work/perf.data" \
  "$bin" run -w "$workload" -p "$profile" --events "$events" --quiet > /dev/null 2>&1
perf script -F comm,tid,ip,sym,dso -i "$work/perf.data" 2> /dev/null > "$work/perf.txt"
python3 "$here/perf-buckets.py" < "$work/perf.txt"
