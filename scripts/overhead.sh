#!/usr/bin/env bash
# statebench's overhead budget, measured side by side (README, "Overhead"):
#   (a) statebench's own share of CPU: `perf record` of a run, samples bucketed into RocksDB's
#       work and statebench's own by scripts/perf-buckets.py;
#   (b) the run's events/s against a replay of exactly the RocksDB operations it issued
#       (`run --record-ops`, then `replay-ops` on a fresh database, no pipeline): runs and
#       replays alternate, the ratio is taken pair by pair, the median is reported;
#   (c) metrics sampling every 1 s against sampling off (a 1 h interval: never during the run):
#       alternating runs, median ratio of events/s.
# usage: scripts/overhead.sh [ROUNDS]   (env: STATEBENCH=path/to/binary, WORKLOAD, PROFILE, EVENTS)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${STATEBENCH:-${CARGO_TARGET_DIR:-$here/../target}/release/statebench}
workload=${WORKLOAD:-ads-minutes}
profile=${PROFILE:-flink-default}
events=${EVENTS:-100000}
rounds=${1:-5}
work=$(mktemp -d /tmp/statebench-overhead.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The workload twice: sampling every second, and sampling off.
"$bin" workloads show "$workload" > "$work/w-1s.yaml"
sed -i '/^sample-interval:/d' "$work/w-1s.yaml"
cp "$work/w-1s.yaml" "$work/w-off.yaml"
echo "sample-interval: 1s" >> "$work/w-1s.yaml"
echo "sample-interval: 1h" >> "$work/w-off.yaml"

run() { # workload-file report-file [extra args]
  local w=$1 r=$2; shift 2
  "$bin" run -w "$w" -p "$profile" --events "$events" --quiet --report "$r" "$@" > /dev/null
}
secs() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["segments"][0]["summary"]; print(s["processing_secs"], s["rocksdb_ops_per_event"])' "$1"; }

echo "== $workload, $profile, $events events, $rounds rounds; $("$bin" --version)"
run "$work/w-1s.yaml" "$work/rec.json" --record-ops "$work/ops.log"
echo "recorded $(du -h "$work/ops.log" | cut -f1) of RocksDB operations"

: > "$work/pairs-b"; : > "$work/pairs-c"
for i in $(seq "$rounds"); do
  run "$work/w-1s.yaml" "$work/a.json"
  read -r run_secs ops_a < <(secs "$work/a.json")
  replay_secs=$("$bin" replay-ops "$work/ops.log" -p "$profile" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["marked_secs"])')
  run "$work/w-off.yaml" "$work/b.json"
  read -r off_secs ops_b < <(secs "$work/b.json")
  echo "round $i: run ${run_secs}s (ops/event $ops_a), replay ${replay_secs}s, sampling off ${off_secs}s (ops/event $ops_b)"
  echo "$replay_secs $run_secs" >> "$work/pairs-b"
  echo "$off_secs $run_secs" >> "$work/pairs-c"
done

python3 - "$work/pairs-b" "$work/pairs-c" <<'PY'
import statistics, sys
def ratios(path):
    return [float(a) / float(b) for a, b in (l.split() for l in open(path))]
b, c = ratios(sys.argv[1]), ratios(sys.argv[2])
print(f"(b) run events/s / replay events/s: median {statistics.median(b):.3f} "
      f"(min {min(b):.3f}, max {max(b):.3f}); budget >= 0.9")
cost = [1 - r for r in c]
print(f"(c) cost of sampling every 1 s vs off: median {100 * statistics.median(cost):+.2f} % "
      f"(min {100 * min(cost):+.2f}, max {100 * max(cost):+.2f}); budget <= 1 %")
PY

if command -v perf > /dev/null && perf record -e cpu-clock -o /dev/null true 2> /dev/null; then
  perf record -e cpu-clock -F 999 --call-graph dwarf,8192 -o "$work/perf.data" \
    "$bin" run -w "$work/w-1s.yaml" -p "$profile" --events "$events" --quiet > /dev/null 2>&1
  perf script -F comm,tid,ip,sym,dso -i "$work/perf.data" 2> /dev/null > "$work/perf.txt"
  echo "(a) CPU samples bucketed (budget: statebench <= 10 %):"
  python3 "$here/perf-buckets.py" < "$work/perf.txt" | sed -n '1,/by kind/p'
else
  echo "(a) needs perf (Debian: apt-get install linux-perf)"
fi
