#!/usr/bin/env bash
# The TUI's cost: events/s of the same workload headless (`statebench run`) and in the TUI at its
# default refresh (driven in tmux), alternating, N pairs; prints each run and the medians, and
# the CPU time of the TUI's own threads against the engine thread's (a count noise barely moves).
# Usage: benches/tui_overhead.sh [WORKLOAD] [EVENTS] [PAIRS]   (needs tmux and a release build)
set -euo pipefail
workload="${1:-ads-minutes}"
events="${2:-100000}"
pairs="${3:-5}"
bin="${CARGO_TARGET_DIR:-target}/release/statebench"
out="$(mktemp -d)"
trap 'tmux kill-session -t sb-bench 2>/dev/null || true; rm -rf "$out"' EXIT

rate() { python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['summary']['events_per_sec']))" "$1"; }

headless=(); tui=()
for i in $(seq "$pairs"); do
  "$bin" run -w "$workload" --events "$events" --quiet --report "$out/run-$i.json" >/dev/null
  headless+=("$(rate "$out/run-$i.json")")

  tmux new-session -d -s sb-bench -x 100 -y 30 \
    "exec $bin tui -w $workload --events $events --report $out/tui-$i.json"
  pid="$(tmux display-message -p -t sb-bench '#{pane_pid}')"
  until tmux capture-pane -p -t sb-bench | grep -q FINISHED; do sleep 0.5; done
  # CPU time per thread (utime + stime, clock ticks): the TUI's own threads against the engine's.
  cpu="$(for t in /proc/"$pid"/task/*; do
           comm="$(cat "$t/comm" 2>/dev/null)"
           set -- $(cut -d' ' -f14,15 < "$t/stat" 2>/dev/null || echo 0 0)
           echo "$comm $(( $1 + $2 ))"; done)"
  ui_ticks="$(echo "$cpu" | awk '$1=="statebench" || $1=="statebench-keys" {s+=$2} END {print s+0}')"
  # The whole process, threads that already ended (the engine) included.
  set -- $(cut -d' ' -f14,15 < /proc/"$pid"/stat); all_ticks=$(( $1 + $2 ))
  tmux send-keys -t sb-bench q
  until [ -s "$out/tui-$i.json" ]; do sleep 0.2; done
  sleep 0.5
  tmux kill-session -t sb-bench 2>/dev/null || true
  tui+=("$(rate "$out/tui-$i.json")")
  echo "pair $i: headless ${headless[-1]} events/s, tui ${tui[-1]} events/s; tui threads ${ui_ticks} of ${all_ticks} CPU ticks"
done
python3 - "${headless[*]}" "${tui[*]}" <<'PY'
import statistics, sys
h = [int(x) for x in sys.argv[1].split()]
t = [int(x) for x in sys.argv[2].split()]
mh, mt = statistics.median(h), statistics.median(t)
print(f"median headless {mh:.0f} events/s, tui {mt:.0f} events/s, tui/headless {mt/mh:.3f}")
PY
