#!/usr/bin/env python3
"""Compares one operator kind's run on Flink 1.20.1 (parity/job/.../kinds/KindsJob) with
statebench's on the same trace v2 and workload (parity/run-kinds).

Exact on: events, RocksDB keys read and written (tickers), state gets / puts / deletes / merges
(Flink: counted at the backend's RocksDB handle; RocksDB has no merge ticker), iterator seeks and
nexts (tickers), timers fired, and every result per (key, label) (DESIGN-19's results: Flink's
from what its operator emitted, statebench's from `run --final-counts`). Every further run of a
side must do exactly what its first did. Prints a table; exits 1 on any difference and on a
figure statebench's report does not carry (it must report what is compared).

Standard library only.
"""
import argparse
import json
import os
import sys


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_results(path):
    """`key,label,value` lines -> {(key, label): value}."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                key, label, value = line.rsplit(",", 2)
                out[(key, label)] = int(value)
            except ValueError:
                sys.exit(f"{path} line {number}: expected key,label,value, got {line!r}")
    return out


def segment(report):
    return report["segments"][-1] if "segments" in report else report


def dig(obj, path):
    """'a.b.c' -> obj[a][b][c], or None."""
    for part in path.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def first(obj, paths):
    """The first of several places a figure may be reported (None: reported in none)."""
    for p in paths:
        v = dig(obj, p)
        if v is not None:
            return v
    return None


# Where statebench reports each compared figure (the report's last segment; `last` = its last
# snapshot). The first path found is used.
STATEBENCH = {
    "events": ["summary.events"],
    "keys_read": ["summary.rocksdb_keys_read", "last.rocksdb.tickers.keys_read"],
    "keys_written": ["summary.rocksdb_keys_written", "last.rocksdb.tickers.keys_written"],
    "gets": ["summary.gets", "last.ops.gets"],
    "puts": ["summary.puts", "last.ops.puts"],
    "deletes": ["summary.deletes", "last.ops.deletes"],
    "merges": ["summary.merges", "last.ops.merges"],
    "seeks": ["last.rocksdb.tickers.iterator_seeks"],
    "nexts": ["last.rocksdb.tickers.iterator_nexts"],
    "access_seeks": ["last.ops.iterator_seeks"],
    "access_nexts": ["last.ops.iterator_nexts"],
    "timers_fired": ["summary.timers_fired", "last.pipeline.timers_fired"],
    "flushes": ["summary.flushes", "last.rocksdb.tickers.flushes"],
    "compactions": ["summary.compactions", "last.rocksdb.tickers.compactions"],
}


def column_family_order(path):
    """The column families of a RocksDB OPTIONS file in its order (by id: creation order)."""
    order = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.strip()
            if line.startswith('[CFOptions "') and line.endswith('"]'):
                order.append(line[len('[CFOptions "'):-2])
    return order


def ttl_filter_column_families(path):
    """The column families whose compaction filter is Flink's TTL filter (FlinkCompactionFilterFactory)."""
    out, cf = [], None
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.strip()
            if line.startswith("["):
                cf = line[len('[CFOptions "'):-2] if line.startswith('[CFOptions "') else None
            elif cf is not None and line.replace(" ", "") == "compaction_filter_factory=FlinkCompactionFilterFactory":
                out.append(cf)
    return out


def options_files(flink_dir, sb_options):
    """Per RocksDB instance (operator 0 first): Flink's OPTIONS copy and statebench's."""
    flink = [os.path.join(flink_dir, "flink.OPTIONS")]
    i = 1
    while os.path.exists(os.path.join(flink_dir, f"flink.op{i}.OPTIONS")):
        flink.append(os.path.join(flink_dir, f"flink.op{i}.OPTIONS"))
        i += 1
    return flink, list(sb_options)


# Figures that depend on timing (background flushes and compactions), not on the state work.
TIMING = ("flushes", "compactions")


def flink_figures(run):
    j, t = run["job"], run["tickers"]
    return {
        "events": j["events"],
        "keys_read": t["NUMBER_KEYS_READ"],
        "keys_written": t["NUMBER_KEYS_WRITTEN"],
        "gets": j["gets"],
        "puts": j["puts"],
        "deletes": j["deletes"],
        "merges": j["merges"],
        "seeks": t["NUMBER_DB_SEEK"],
        "nexts": t["NUMBER_DB_NEXT"],
        # statebench's own count of the seeks and nexts it asked for, against what Flink's RocksDB did.
        "access_seeks": t["NUMBER_DB_SEEK"],
        "access_nexts": t["NUMBER_DB_NEXT"],
        "timers_fired": j["timers_fired"],
        "flushes": run.get("histograms", {}).get("FLUSH_TIME_count"),
        "compactions": run.get("histograms", {}).get("COMPACTION_TIME_count"),
    }


# A chain's per-operator figures: Flink's operators[i] (Chain.java) against statebench's
# summary.operators[i] (DESIGN-CHAIN: index, kind, events_in, emitted, ops).
OPERATOR_ROWS = [
    ("events", "records in"),
    ("emitted", "records emitted"),
    ("gets", "state gets"),
    ("puts", "state puts"),
    ("deletes", "state deletes"),
    ("merges", "state merges"),
    ("timers_fired", "timers fired"),
]
OPERATOR_PATHS = {
    "events": ["events_in", "events"],
    "emitted": ["emitted"],
    "gets": ["ops.gets", "gets"],
    "puts": ["ops.puts", "puts"],
    "deletes": ["ops.deletes", "deletes"],
    "merges": ["ops.merges", "merges"],
    "timers_fired": ["timers_fired", "ops.timers_fired"],
}


def statebench_operator(report, index):
    """statebench's summary.operators entry of operator `index`, or None."""
    ops = segment(report).get("summary", {}).get("operators") or []
    for op in ops:
        if isinstance(op, dict) and op.get("index", -1) == index:
            return op
    return ops[index] if index < len(ops) and isinstance(ops[index], dict) else None


def statebench_figures(report):
    seg = segment(report)
    view = {"summary": seg.get("summary", {}), "last": (seg.get("snapshots") or [{}])[-1]}
    return {name: first(view, paths) for name, paths in STATEBENCH.items()}


ROWS = [
    ("events", "events"),
    ("keys_read", "RocksDB keys read (ticker)"),
    ("keys_written", "RocksDB keys written (ticker)"),
    ("gets", "state gets"),
    ("puts", "state puts"),
    ("deletes", "state deletes"),
    ("merges", "state merges (list appends)"),
    ("seeks", "iterator seeks (ticker)"),
    ("nexts", "iterator nexts (ticker)"),
    ("access_seeks", "iterator seeks (statebench: StateAccess)"),
    ("access_nexts", "iterator nexts (statebench: StateAccess)"),
    ("timers_fired", "timers fired"),
]


def fmt(v):
    if v is None:
        return "(not reported)"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--name", required=True)
    p.add_argument("--flink", action="append", required=True, help="KindsJob's --out directory (repeat per run)")
    p.add_argument("--report", action="append", default=[], help="statebench's JSON report (repeat per run)")
    p.add_argument("--statebench-results", help="statebench run --final-counts (key,label,value)")
    p.add_argument("--statebench-options", action="append", default=[],
                   help="statebench's OPTIONS file of a RocksDB instance (repeat per operator, in order)")
    p.add_argument("--heap-timers", action="store_true",
                   help="the profile keeps timers on the heap: no timer-queue entry may reach RocksDB")
    p.add_argument("--no-background-work", action="store_true",
                   help="gate: no flush and no compaction ran on either side (a TTL compaction filter "
                        "then dropped nothing before a read: the state calls do not depend on timing)")
    p.add_argument("--flink-range", action="append", default=[], metavar="KEY=MIN-MAX",
                   help="a figure where Flink does not repeat itself: statebench and every Flink run "
                        "within Flink's own min-max over its measured runs (the workload's "
                        "`# parity-flink-range:` line says which runs)")
    p.add_argument("--json", help="write the comparison here")
    a = p.parse_args()
    ranges = {}
    for r in a.flink_range:
        key, _, span = r.partition("=")
        lo, _, hi = span.partition("-")
        ranges[key] = (int(lo), int(hi))

    flink_runs = [load_json(f"{d}/flink.json") for d in a.flink]
    fl = flink_figures(flink_runs[0])
    fres = read_results(f"{a.flink[0]}/flink-results.csv")
    flink_only = not a.report
    sb_runs = [load_json(r) for r in a.report]
    sb = statebench_figures(sb_runs[0]) if sb_runs else {k: None for k in STATEBENCH}
    sres = read_results(a.statebench_results) if a.statebench_results else None

    rows, failed, missing = [], [], []

    def row(metric, f, s, rule="exact", note=""):
        if flink_only:
            verdict = "(Flink only)"
        elif rule == "info":
            verdict = "info"
        elif s is None:
            verdict = "FAIL (statebench does not report it)"
            missing.append(metric)
        elif isinstance(rule, tuple):
            lo, hi = rule
            if lo <= f <= hi and lo <= s <= hi:
                verdict = f"ok (within Flink's own {lo:,}-{hi:,})"
            else:
                verdict = f"FAIL (outside Flink's own {lo:,}-{hi:,})"
                failed.append(metric)
        elif f == s:
            verdict = "ok"
        else:
            diff = s - f if isinstance(f, int) and isinstance(s, int) else ""
            verdict = f"FAIL (statebench {diff:+,})" if diff != "" else "FAIL"
            failed.append(metric)
        rows.append((metric, fmt(f), "" if flink_only else fmt(s), verdict + (f"  {note}" if note else "")))

    for key, label in ROWS:
        row(label, fl[key], sb[key], rule=ranges.get(key, "exact"))
    # Every run of a side does the same state work (only timing may differ).
    if len(flink_runs) > 1 or len(sb_runs) > 1:
        def work(f):
            return {k: v for k, v in f.items() if k not in TIMING and k not in ranges}
        other_f = sum(work(flink_figures(r)) != work(fl) for r in flink_runs[1:])
        other_s = sum(work(statebench_figures(r)) != work(sb) for r in sb_runs[1:])
        row("runs that did other work than run 1", other_f, other_s if sb_runs else None,
            note=f"({len(flink_runs)} / {len(sb_runs)} runs)")
        other_fr = sum(read_results(f"{d}/flink-results.csv") != fres for d in a.flink[1:])
        if other_fr:
            failed.append("Flink's results differ between its runs")
    # Flushes and compactions (timing: shown; gated to 0 with --no-background-work).
    for key, label in (("flushes", "flushes during the run"), ("compactions", "compactions during the run")):
        if a.no_background_work:
            row(label + " (must be 0)", fl[key], sb[key])
            if fl[key] != 0:
                failed.append(f"Flink ran {label}: a TTL filter's drops would depend on timing")
        else:
            row(label, fl[key], sb[key], rule="info")
    # What RocksDB wrote besides the states' calls: the timer queues' batch entries.
    def timer_entries(f):
        if None in (f["keys_written"], f["puts"], f["deletes"], f["merges"]):
            return None
        return f["keys_written"] - f["puts"] - f["deletes"] - f["merges"]
    note = "(HEAP timers: must be 0)" if a.heap_timers else ""
    row("timer-queue entries written (keys written - puts - deletes - merges)", timer_entries(fl),
        timer_entries(sb), note=note)
    if a.heap_timers and timer_entries(fl) != 0:
        failed.append("Flink wrote timer-queue entries to RocksDB under HEAP timers")
    if a.heap_timers and not flink_only and timer_entries(sb) not in (0, None):
        failed.append("statebench wrote timer-queue entries to RocksDB under HEAP timers")
    row("RocksDB keys read - state gets", fl["keys_read"] - fl["gets"],
        None if sb["keys_read"] is None or sb["gets"] is None else sb["keys_read"] - sb["gets"],
        note="(0: no point lookups but the states')")
    # A chain: every operator's own figures (Flink: its Probe; statebench: its summary's
    # operators[i], where the report carries them). Gated where statebench reports the figure.
    for op in flink_runs[0].get("operators", []):
        i = op["index"]
        sb_op = statebench_operator(sb_runs[0], i) if sb_runs else None
        for key, label in OPERATOR_ROWS:
            f = op.get("emitted") if key == "emitted" else op["job"].get(key)
            s_v = None if sb_op is None else first(sb_op, OPERATOR_PATHS[key])
            if s_v is None and not flink_only:
                row(f"op{i} ({op['kind']}): {label}", f, None, rule="info", note="(statebench: not reported)")
            else:
                row(f"op{i} ({op['kind']}): {label}", f, s_v)
    # Column families in creation order, per RocksDB instance (operator): Flink's OPTIONS file
    # copied from its open instance against statebench's.
    flink_opts, sb_opts = options_files(a.flink[0], a.statebench_options)
    for i, fo in enumerate(flink_opts):
        if not os.path.exists(fo):
            continue
        order_f = " ".join(column_family_order(fo))
        order_s = None
        if i < len(sb_opts) and os.path.exists(sb_opts[i]):
            order_s = " ".join(column_family_order(sb_opts[i]))
        row(f"column families, creation order (op{i})", order_f, order_s)
        filters_s = None
        if order_s is not None:
            filters_s = " ".join(ttl_filter_column_families(sb_opts[i])) or "(none)"
        # Flink attaches FlinkCompactionFilterFactory to every TTL state's column family and
        # configures it only with cleanupInRocksdbCompactFilter (RocksDbTtlCompactFiltersManager);
        # statebench does the same (unconfigured: it keeps every entry).
        row(f"TTL compaction filter factory (op{i})", " ".join(ttl_filter_column_families(fo)) or "(none)", filters_s)
    row("results (key, label)", len(fres), None if sres is None else len(sres))
    if sres is not None:
        differ = sorted(k for k in set(fres) | set(sres) if fres.get(k) != sres.get(k))
        row("results that differ", 0, len(differ))
    else:
        differ = []
    labels = sorted({label for _, label in fres})
    for label in labels:
        if label == "digest" or label.endswith(".digest"):
            continue
        row(f"results: sum of '{label}'", sum(v for (_, l), v in fres.items() if l == label),
            None if sres is None else sum(v for (_, l), v in sres.items() if l == label))

    widths = [max(len(r[i]) for r in rows + [("metric", "Flink 1.20.1", "statebench", "")]) for i in range(3)]
    print(f"== parity: {a.name} ==")
    header = ("metric", "Flink 1.20.1", "statebench", "verdict")
    for r in [header] + rows:
        print(r[0].ljust(widths[0]) + "  " + r[1].rjust(widths[1]) + "  " + r[2].rjust(widths[2]) + "  " + r[3])
        if r is header:
            print("-" * (sum(widths) + 20))
    cfs = flink_runs[0].get("column_families", {})
    if cfs:
        print("Flink per column family (calls on the backend's RocksDB handle; timers go through batches):")
        for cf, c in sorted(cfs.items()):
            print(f"  {cf:<40} " + "  ".join(f"{k} {v:,}" for k, v in sorted(c.items())))
    compacted = flink_runs[0].get("compaction_at_end")
    if compacted:
        print(f"Flink after the run, a flush and a manual compaction of each state (TTL filter at clock "
              f"{compacted.get('clock')}; statebench has no such step: shown, not compared):")
        for cf, c in sorted((k, v) for k, v in compacted.items() if isinstance(v, dict)):
            print(f"  {cf:<40} keys {c['keys_before']:,} -> {c['keys_after']:,}, "
                  f"dropped by the compaction filter {c['dropped_by_filter']:,}")
    for k in differ[:10]:
        print(f"  result differs: {k[0]} {k[1]}: Flink {fres.get(k)}, statebench {sres.get(k)}")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"name": a.name, "rows": rows, "failed": failed, "missing": missing,
                       "differing_results": [list(k) for k in differ[:100]]}, f, indent=2)
            f.write("\n")
    if flink_only:
        print(f"\nFLINK ONLY ({a.name})")
        return 0
    if failed or missing:
        print(f"\nFAIL ({a.name}): " + "; ".join(failed + [f"{m}: not reported" for m in missing]))
        return 1
    print(f"\nPASS ({a.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
