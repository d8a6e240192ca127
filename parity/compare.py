#!/usr/bin/env python3
"""Compares repeated parity runs of Flink 1.20.1 and of statebench on the same trace and profile.

Prints a table (metric, Flink, statebench, ratio, verdict) and the OPTIONS differences, and exits
non-zero unless: keys read and written per event, state gets / puts / deletes, timer-queue
entries, timers fired, iterator seeks, the last watermark and the final counts are exactly equal
(every run of a side doing the same state work as its first); with --timing gate, statebench's
medians of what background timing moves lie near the range Flink's runs span (TIMING_GATES
says how near, and why); under Kryo, bytes
written per event are within 5 %; both LOGs show the same block-cache high-priority pool; Flink
knows every configuration key it was given; and every OPTIONS difference is listed in the
explanations file.

Standard library only.
"""
import argparse
import statistics
import glob
import json
import os
import re
import sys

BYTES_TOLERANCE = 0.05

# What background timing moves, and how near Flink's range statebench's median must lie. Both
# sides' flush counts follow how fast they write against how fast they flush: FRocksDB 6.20's
# WriteBufferManager (and statebench's emulation of it) also switches a column family whose
# flush is pending, more often the slower flushes run. For one profile and trace, Flink's own
# median flush count was 3,867, 4,578, 5,047 and 7,441 on different occasions on one 2-core
# machine, so no tolerance tighter than that spread holds in CI. The gates below hold the parts
# that spread less, and catch a different regime (3 flushes against 3,867 before the arena fix;
# RocksDB 11's own WriteBufferManager choice: 0.48 of Flink's flushes under load):
#   - switches of a column family with no flush pending: mostly what the WriteBufferManager's
#     memory accounting decides (Flink's medians 2,367-3,205 across those occasions, statebench
#     0.87-0.96 of Flink's side by side; on the CI machine kind since December 2026 0.59-0.80 for
#     flink-default-64mb-pojo with statebench unpaced, e.g. 2,199 against Flink's 2,911-3,145;
#     0.77 since parity/run caps statebench at the event rate Flink's run reached, an open
#     difference; paced, full CI runs have since read 0.669 and 0.678 (statebench 2,073-2,638
#     against Flink's 3,393-3,667) and 0.754-0.808 on the same commits, so 30 % failed one CI
#     run in two on the machine's spread): within 40 %, which still catches the regimes above;
#   - flushes and bytes flushed: within a factor of 2
#     of the range Flink's runs span (statebench 0.90-1.38 of Flink's side by side; before the
#     6.20 flush choice was modelled, 0.48 and 0.56 under load). 1.5 until 2 December 2026, when
#     Flink's own median flush count on this machine moved from 7,305-7,720 to 8,927-9,938
#     within an hour (flink-default-64mb POJO) while statebench, paced at Flink's rate, made
#     5,303: 0.563, and bytes compacted 0.494 of Flink's range; a gate tighter than the
#     machine's own spread fails on the machine, not on statebench.
#   - bytes compacted per flush: within a factor of 1.5. Bytes compacted follow the flush count
#     (each flush adds an L0 file; every few, an L0 compaction rewrites the level below), so
#     gating their total gated the flush count's timing a second time and more tightly: on the
#     CI machine kind statebench's total was 0.451 of Flink's (flushes 0.548; the CI run of
#     99222d5) and 0.460 (flushes 0.575; a9b858f), failing a factor of 2, while per flush it was
#     0.82 and 0.80 (0.97 side by side on a development machine). Per flush, the gate holds what
#     the compaction options and the data decide, and the total is shown.
# Compaction counts are shown: they follow the flush count, and RocksDB 11 cuts compactions
# differently from 6.20 (more, smaller ones for about the same bytes).
TIMING_GATES = {
    "fresh_switches": ("pct", 0.40),
    "flushes": ("factor", 2.0),
    "bytes": ("factor", 2.0),
    "compaction_per_flush": ("factor", 1.5),
}


# ---------------------------------------------------------------------------------------------
# Inputs


def read_counts(path):
    """`key,window,count` lines -> {(key, window): count}."""
    counts = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                key, window, count = line.rsplit(",", 2)
                counts[(key, window)] = int(count)
    return counts


EVENT = re.compile(r"EVENT_LOG_v1 (\{.*\})\s*$")
HIGH_PRI = re.compile(r"^\s*high_pri_pool_ratio: ([0-9.]+)\s*$")


SWITCH = re.compile(r"New memtable created with log file: #\d+\. Immutable memtables: (\d+)")


def statebench_logs(data_dir):
    """RocksDB's LOG files of a statebench --data-dir: RocksDB works in its db/ folder."""
    return sorted(glob.glob(os.path.join(data_dir, "db", "LOG*")) or glob.glob(os.path.join(data_dir, "LOG*")))


def log_events(paths):
    """RocksDB LOG files -> flush and compaction events (FRocksDB 6.20 and RocksDB 11 write the
    same EVENT_LOG_v1 lines). Flushes caused by closing the database (reason `Shutdown`) are
    counted apart: the Flink job is measured while its database is open."""
    out = {"high_pri_pool_ratio": set(), "flush_started": 0, "flush_finished": 0, "compaction_started": 0,
           "compaction_finished": 0, "shutdown_flushes": 0, "flush_reasons": {},
           "flushed_entries": 0, "flushed_deletes": 0, "switches": 0, "switches_onto_pending": 0}
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                # A memtable switch logs how many immutable memtables of that column family
                # were still unflushed: FRocksDB 6.20's WriteBufferManager flush also picks a
                # column family whose flush is pending (a write stop when it then has 2);
                # RocksDB 7+ skips such column families.
                w = SWITCH.search(line)
                if w:
                    out["switches"] += 1
                    out["switches_onto_pending"] += int(w.group(1)) > 0
                    continue
                m = EVENT.search(line)
                if not m:
                    # The block cache's options, printed with each column family's table options
                    # (the OPTIONS file shows the cache in neither version).
                    r = HIGH_PRI.search(line)
                    if r:
                        out["high_pri_pool_ratio"].add(float(r.group(1)))
                    continue
                try:
                    ev = json.loads(m.group(1))
                except ValueError:
                    continue
                kind = ev.get("event")
                if kind == "flush_started":
                    reason = ev.get("flush_reason", "?")
                    if reason.replace(" ", "") == "Shutdown":
                        out["shutdown_flushes"] += 1
                        continue
                    out["flush_started"] += 1
                    out["flush_reasons"][reason] = out["flush_reasons"].get(reason, 0) + 1
                    out["flushed_entries"] += ev.get("num_entries", 0)
                    out["flushed_deletes"] += ev.get("num_deletes", 0)
                elif kind in ("flush_finished", "compaction_started", "compaction_finished"):
                    out[kind] += 1
    # flush_finished has no reason: take off the shutdown flushes (they come last).
    out["flush_finished"] = max(0, out["flush_finished"] - out["shutdown_flushes"])
    return out


def parse_options(path):
    """A RocksDB OPTIONS file -> {section: {option: value}}."""
    sections = {}
    current = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("[") and line.endswith("]"):
                current = line[1:-1]
                sections.setdefault(current, {})
                continue
            if current is not None and "=" in line:
                key, value = line.split("=", 1)
                sections[current][key.strip()] = value.strip()
    return sections


def column_family_order(path):
    """The column families of an OPTIONS file in its order (RocksDB writes them by id: the order
    they were created in), RocksDB's `default` first."""
    order = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            m = re.match(r'^\[CFOptions "(.*)"\]$', raw.strip())
            if m:
                order.append(m.group(1))
    return order


def section_kind(section):
    """`CFOptions "timer-state"` -> (`CFOptions`, `timer-state`)."""
    m = re.match(r'^(\S+)(?:\s+"(.*)")?$', section)
    if not m:
        return section, None
    return m.group(1), m.group(2)


def read_explanations(path):
    """`option | why` lines. `option` is `Kind.option` (Kind: Version, DBOptions, CFOptions,
    TableOptions/BlockBasedTable), `Kind[cf].option` for one column family, or
    `section:<section name>` for a section only one side has."""
    explained = {}
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if "|" not in line:
                sys.exit(f"{path} line {number}: expected 'option | why', got {line!r}")
            key, why = (part.strip() for part in line.split("|", 1))
            if not why:
                sys.exit(f"{path} line {number}: '{key}' has no explanation")
            explained[key] = why
    return explained


# ---------------------------------------------------------------------------------------------
# Comparison


class Table:
    def __init__(self):
        self.rows = []
        self.failed = []

    def add(self, metric, flink, statebench, rule, note=""):
        """rule: 'exact', 'zero', 'within5' (5 %), ('range', lo, hi, gate) (near Flink's runs, as
        TIMING_GATES[gate] says), or 'info' (shown, not gated)."""
        ratio = ""
        if isinstance(flink, (int, float)) and isinstance(statebench, (int, float)):
            if flink:
                ratio = f"{statebench / flink:.3f}"
            elif statebench == 0:
                ratio = "1.000"
            else:
                ratio = "inf"
        if rule == "exact":
            ok = flink == statebench
            verdict = "ok" if ok else "FAIL (must be equal)"
        elif isinstance(rule, tuple) and rule[0] == "range":
            _, lo, hi, gate = rule
            kind, amount = TIMING_GATES[gate]
            if kind == "pct":
                low, high, what = (1 - amount) * lo, (1 + amount) * hi, f"{amount:.0%}"
            else:
                low, high, what = lo / amount, hi * amount, f"a factor of {amount:g}"
            ok = low <= statebench <= high
            verdict = "ok" if ok else f"FAIL (must be within {what} of Flink's runs, {lo:,}-{hi:,})"
        elif rule == "within5":
            ok = flink != 0 and abs(statebench - flink) <= BYTES_TOLERANCE * flink
            verdict = "ok" if ok else f"FAIL (must be within {BYTES_TOLERANCE:.0%})"
        elif rule == "zero":
            ok = flink == 0 and statebench == 0
            verdict = "ok" if ok else "FAIL (must be 0 on both sides)"
        elif rule == "missing":
            ok = False
            verdict = "FAIL (not measured)"
        else:
            ok = True
            verdict = "info"
        if not ok:
            self.failed.append(metric)
        self.rows.append((metric, fmt(flink), fmt(statebench), ratio, verdict + (f"  {note}" if note else "")))

    def render(self):
        header = ("metric", "Flink 1.20.1", "statebench", "sb/flink", "verdict")
        widths = [max(len(r[i]) for r in self.rows + [header]) for i in range(4)]
        lines = []
        for r in [header] + self.rows:
            lines.append("  ".join(r[i].ljust(widths[i]) if i == 0 else r[i].rjust(widths[i])
                                   for i in range(4)) + "  " + r[4])
            if r is header:
                lines.append("-" * (sum(widths) + 8 + 24))
        return "\n".join(lines)


def fmt(v):
    if isinstance(v, float):
        return f"{v:.4f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


EVENT_TIMERS = "_timer_state/event_"


def align_timer_sections(flink, ours):
    """The event-time timer column family is `_timer_state/event_<timer service name>`. When the
    two sides name their timer service differently, compare its options under Flink's name and
    report the name itself as one difference (`cf-name:<statebench's name>`)."""
    def timer_cfs(sections):
        return {section_kind(s)[1] for s in sections if (section_kind(s)[1] or "").startswith(EVENT_TIMERS)}
    a, b = timer_cfs(flink), timer_cfs(ours)
    if len(a) != 1 or len(b) != 1 or a == b:
        return ours, []
    (fname,), (oname,) = a, b
    renamed = {}
    for section, options in ours.items():
        kind, cf = section_kind(section)
        renamed[f'{kind} "{fname}"' if cf == oname else section] = options
    return renamed, [(f"cf-name:{oname}", f"Flink's event-timer column family is '{fname}', statebench's '{oname}'")]


NUM_LEVELS = 7


def per_level(value):
    """compression_per_level as the compression of each of the 7 levels: RocksDB applies a
    list's last entry to every deeper level (6.20 and 11 write the list differently)."""
    if value is None:
        return None
    items = [v.strip("{} ") for v in value.split(":") if v.strip("{} ")]
    if not items:
        return []
    return (items + [items[-1]] * NUM_LEVELS)[:NUM_LEVELS]


def compare_options(flink_path, statebench_path, explained):
    """Differences between the two OPTIONS files, each with its explanation or None."""
    flink = parse_options(flink_path)
    ours, renamed = align_timer_sections(flink, parse_options(statebench_path))
    diffs = [(key, shown, explained.get(key)) for key, shown in renamed]
    for section in sorted(set(flink) | set(ours)):
        kind, cf = section_kind(section)
        if section not in ours or section not in flink:
            side = "Flink" if section in flink else "statebench"
            key = f"section:{section}"
            diffs.append((key, f"only {side} has [{section}]", explained.get(key)))
            continue
        a, b = flink[section], ours[section]
        for option in sorted(set(a) | set(b)):
            va, vb = a.get(option), b.get(option)
            if va == vb or (option == "compression_per_level" and per_level(va) == per_level(vb)):
                continue
            scoped = f"{kind}[{cf}].{option}" if cf is not None else f"{kind}.{option}"
            # `option=value` explains only statebench's value named there.
            why = (explained.get(f"{scoped}={vb}") or explained.get(f"{kind}.{option}={vb}")
                   or explained.get(scoped) or explained.get(f"{kind}.{option}"))
            shown = (f"Flink {va if va is not None else '(no such option)'}, "
                     f"statebench {vb if vb is not None else '(no such option)'}")
            diffs.append((scoped, shown, why))
    return diffs


def grouped(diffs):
    """One line per option and pair of values, naming every column family that has it."""
    groups = {}
    for key, shown, _ in diffs:
        m = re.match(r"^(.*)\[(.*)\]\.(.*)$", key)
        if m:
            kind, cf, option = m.groups()
            groups.setdefault((f"{kind}[%s].{option}", shown), []).append(cf)
        else:
            groups.setdefault((key, shown), [])
    return [(pattern % ", ".join(cfs) if cfs else pattern, shown) for (pattern, shown), cfs in groups.items()]


def load_flink_config(path):
    """A configuration as Flink loaded it (`key: value` lines: ParityJob's flink-loaded-config.txt,
    ConfigDump's output) -> {key: value}."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if ": " in line:
                k, v = line.rstrip("\n").split(": ", 1)
                out[k] = v
    return out


def load_flink(directory):
    with open(os.path.join(directory, "flink.json"), encoding="utf-8") as f:
        return json.load(f)


def load_report(path):
    """statebench's JSON report -> its (last) segment: profile, summary, snapshots. A headless
    run has one; schema 1 reports had those at the top level."""
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    return report["segments"][-1] if "segments" in report else report


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--name", required=True, help="what is compared (profile, serializer)")
    p.add_argument("--flink", required=True, action="append",
                   help="the Flink job's output directory (repeat for repeated runs)")
    p.add_argument("--report", required=True, action="append",
                   help="statebench's JSON report (repeat for repeated runs)")
    p.add_argument("--statebench-counts", required=True, help="statebench run --final-counts")
    p.add_argument("--statebench-data", required=True, action="append",
                   help="statebench's --data-dir (its LOG), one per --report")
    p.add_argument("--explained", required=True, help="parity/options-explained.txt")
    p.add_argument("--json", help="write the comparison here as JSON")
    p.add_argument("--timing", choices=["gate", "info"], default="gate",
                   help="gate what background timing moves (TIMING_GATES) or only show it")
    p.add_argument("--serializer", choices=["pojo", "kryo"], default="pojo",
                   help="the job's serializer (kryo gates bytes written per event)")
    a = p.parse_args()
    if len(a.report) != len(a.statebench_data):
        p.error("give one --statebench-data per --report")
    # Exact quantities are deterministic: the first run of each side is compared. Flush and
    # compaction counts depend on when background flushes finish against the writes (they
    # varied by +-20 % between runs of either side here), so their medians over the runs are.
    runs_f = [load_flink(d) for d in a.flink]
    runs_s = [load_report(r) for r in a.report]
    a.flink, a.flink_rest = a.flink[0], a.flink[1:]
    fl = runs_f[0]
    report = runs_s[0]
    summary = report["summary"]
    last = report["snapshots"][-1]
    job = fl["job"]
    tick = fl["tickers"]
    sb_tick = last["rocksdb"]["tickers"]
    ops = last["ops"]

    events_f, events_s = job["events"], summary["events"]
    t = Table()
    t.add("events", events_f, events_s, "exact")
    # Every run of a side must do exactly the same state work; only its timing may differ.
    def work(flink_run=None, report_run=None):
        if flink_run is not None:
            j, k = flink_run["job"], flink_run["tickers"]
            return (j["events"], j["last_watermark"], j["timers_fired"], k["NUMBER_KEYS_READ"],
                    k["NUMBER_KEYS_WRITTEN"], k["BYTES_WRITTEN"])
        sm, sn = report_run["summary"], report_run["snapshots"][-1]
        return (sm["events"], sn["pipeline"]["watermark"], sm["timers_fired"], sm["rocksdb_keys_read"],
                sm["rocksdb_keys_written"], sn["rocksdb"]["tickers"]["bytes_written"])
    t.add("runs that did other state work than run 1",
          sum(work(flink_run=r) != work(flink_run=runs_f[0]) for r in runs_f),
          sum(work(report_run=r) != work(report_run=runs_s[0]) for r in runs_s), "zero",
          f"({len(runs_f)} / {len(runs_s)} runs: events, watermark, timers, keys and bytes written)")
    t.add("last watermark", job["last_watermark"], last["pipeline"]["watermark"], "exact")

    def per_event(v, n):
        return v / n if n else 0.0

    t.add("RocksDB keys read / event", per_event(tick["NUMBER_KEYS_READ"], events_f),
          per_event(summary["rocksdb_keys_read"], events_s), "exact")
    t.add("RocksDB keys written / event", per_event(tick["NUMBER_KEYS_WRITTEN"], events_f),
          per_event(summary["rocksdb_keys_written"], events_s), "exact")
    gets_f = job["window_stats_gets"] + job["timer_state_gets"]
    puts_f = job["window_stats_puts"] + job["timer_state_puts"]
    dels_f = job["window_stats_deletes"] + job["timer_state_deletes"]
    t.add("state gets", gets_f, summary["gets"], "exact")
    t.add("state puts", puts_f, summary["puts"], "exact")
    t.add("state deletes", dels_f, summary["deletes"], "exact")
    # Flink: every key RocksDB wrote that was not a state put or delete is a timer-queue entry.
    timer_entries_f = tick["NUMBER_KEYS_WRITTEN"] - puts_f - dels_f
    t.add("timer-queue entries written", timer_entries_f, ops["batch_entries"], "exact")
    t.add("timers fired", job["timers_fired"], summary["timers_fired"], "exact")
    t.add("gets seen by RocksDB = state gets", tick["NUMBER_KEYS_READ"] - gets_f,
          summary["rocksdb_keys_read"] - summary["gets"], "exact",
          "(0 on both sides: no other point lookups)")

    fc = read_counts(os.path.join(a.flink, "flink-final-counts.csv"))
    sc = read_counts(a.statebench_counts)
    mismatched = sum(1 for k in set(fc) | set(sc) if fc.get(k) != sc.get(k))
    t.add("final (user, window) entries", len(fc), len(sc), "exact")
    t.add("final counts, sum", sum(fc.values()), sum(sc.values()), "exact")
    t.add("final counts that differ", 0, mismatched, "exact")

    logs_f = [log_events(sorted(glob.glob(os.path.join(d, "flink-LOG*")))) for d in [a.flink] + a.flink_rest]
    logs_s = [log_events(statebench_logs(d)) for d in a.statebench_data]
    lf, ls = logs_f[0], logs_s[0]

    def timed(name, flink_values, statebench_values, gate, note=""):
        # One Flink run is not the reference: statebench's median is held against the range
        # Flink's runs span (TIMING_GATES).
        lo, hi = min(flink_values), max(flink_values)
        spread = (f"(medians of {len(flink_values)} / {len(statebench_values)} runs; "
                  f"Flink {lo:,}-{hi:,}, statebench {min(statebench_values):,}-{max(statebench_values):,})")
        rule = ("range", lo, hi, gate) if a.timing == "gate" and gate else "info"
        t.add(name, statistics.median(flink_values), statistics.median(statebench_values), rule,
              (note + " " + spread).strip())

    timed("memtable switches, no flush pending (LOG)",
          [l["switches"] - l["switches_onto_pending"] for l in logs_f],
          [l["switches"] - l["switches_onto_pending"] for l in logs_s], "fresh_switches",
          "(the WriteBufferManager's memory accounting)")
    timed("memtable switches onto a pending flush (LOG)", [l["switches_onto_pending"] for l in logs_f],
          [l["switches_onto_pending"] for l in logs_s], None,
          "(FRocksDB 6.20's WriteBufferManager also switches a column family whose flush is "
          "pending, which stops writes at 2; statebench's target flink-1.20 does it as 6.20 does; "
          "how often follows write speed against flush speed)")
    timed("flushes (FLUSH_TIME count)", [f["histograms"]["FLUSH_TIME_count"] for f in runs_f],
          [r["summary"]["flushes"] for r in runs_s], "flushes")
    timed("flushes (LOG flush_finished)", [l["flush_finished"] for l in logs_f],
          [l["flush_finished"] for l in logs_s], "flushes", "(statebench's closing flushes left out)")
    timed("flush bytes written", [f["tickers"]["FLUSH_WRITE_BYTES"] for f in runs_f],
          [r["snapshots"][-1]["rocksdb"]["tickers"]["flush_write_bytes"] for r in runs_s], "bytes")
    timed("compaction bytes written", [f["tickers"]["COMPACT_WRITE_BYTES"] for f in runs_f],
          [r["snapshots"][-1]["rocksdb"]["tickers"]["compact_write_bytes"] for r in runs_s], None,
          "(follows the flush count: gated per flush, below)")
    # What the LSM does with the files it is given: each flush adds an L0 file, and every few of
    # them an L0 compaction rewrites what lies below, so compaction bytes follow the flush count
    # (timing) times what each flush costs the levels (compaction options and data).
    timed("compaction bytes written per flush",
          [round(f["tickers"]["COMPACT_WRITE_BYTES"] / max(1, f["histograms"]["FLUSH_TIME_count"]))
           for f in runs_f],
          [round(r["snapshots"][-1]["rocksdb"]["tickers"]["compact_write_bytes"]
                 / max(1, r["summary"]["flushes"])) for r in runs_s], "compaction_per_flush")
    timed("compactions (COMPACTION_TIME count)", [f["histograms"]["COMPACTION_TIME_count"] for f in runs_f],
          [r["summary"]["compactions"] for r in runs_s], None)
    timed("compactions (LOG compaction_finished)", [l["compaction_finished"] for l in logs_f],
          [l["compaction_finished"] for l in logs_s], None)
    timed("stall micros", [f["tickers"]["STALL_MICROS"] for f in runs_f],
          [r["snapshots"][-1]["rocksdb"]["tickers"]["stall_micros"] for r in runs_s], None)
    def ratios(found):
        return ",".join(f"{v:g}" for v in sorted(found)) or "-"
    hp_f, hp_s = ratios(lf["high_pri_pool_ratio"]), ratios(ls["high_pri_pool_ratio"])
    t.add("block cache high_pri_pool_ratio (LOG)", hp_f, hp_s, "exact" if "-" not in (hp_f, hp_s) else "missing",
          "" if "-" not in (hp_f, hp_s) else "(not found in a LOG: RocksDB's LOG format changed?)")
    # Kryo: statebench's generic serializer writes Kryo's bytes, so RocksDB must see the same
    # bytes (within 5 %). POJO: the compact serializer writes the Stats POJO as Flink does but a
    # timerState value in its own layout (Flink's POJO holds a Kryo-serialized HashMap), so
    # the figure is shown, not gated.
    t.add("bytes written / event", per_event(tick["BYTES_WRITTEN"], events_f),
          per_event(sb_tick["bytes_written"], events_s), "within5" if a.serializer == "kryo" else "info")
    t.add("iterator seeks", tick["NUMBER_DB_SEEK"], ops["iterator_seeks"], "exact",
          "(both scan the event- and processing-time timer queues' key-group heads at open)")
    t.add("block cache hits", tick["BLOCK_CACHE_HIT"], sb_tick["block_cache_hit"], "info")
    t.add("block cache misses", tick["BLOCK_CACHE_MISS"], sb_tick["block_cache_miss"], "info")

    unknown = []
    check = os.path.join(a.flink, "flink-config-check.txt")
    with open(check, encoding="utf-8") as f:
        for line in f:
            if line.startswith("unknown_keys"):
                unknown = line.split()[1:]
    t.add("profile keys Flink 1.20.1 does not know", len(unknown), 0, "exact",
          ("(" + ", ".join(unknown) + ")") if unknown else "")

    # Creation order: a timer service's processing-time queue before its event-time one, as
    # InternalTimeServiceManagerImpl.registerOrGetTimerService creates them.
    order_f = column_family_order(os.path.join(a.flink, "flink.OPTIONS"))
    order_s = column_family_order(report["rocksdb_options_file"])
    t.add("column families in creation order", " ".join(order_f), " ".join(order_s), "exact")

    explained = read_explanations(a.explained)
    diffs = compare_options(os.path.join(a.flink, "flink.OPTIONS"), report["rocksdb_options_file"], explained)
    unexplained = [d for d in diffs if d[2] is None]

    print(f"== parity: {a.name} ==")
    print(t.render())
    print(f"\nflush reasons  Flink: {lf['flush_reasons']}  statebench: {ls['flush_reasons']}"
          f" (+{ls['shutdown_flushes']} at close)")
    lines = grouped(unexplained)
    print(f"\nOPTIONS: {len(diffs)} differences (per column family), {len(diffs) - len(unexplained)} "
          f"explained in {os.path.basename(a.explained)}, {len(unexplained)} unexplained "
          f"({len(lines)} options):")
    for key, shown in lines:
        print(f"  UNEXPLAINED  {key}: {shown}")
    failed = list(t.failed)
    if unexplained:
        failed.append(f"{len(lines)} unexplained OPTIONS differences")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"name": a.name, "rows": t.rows, "failed": failed,
                       "flush_reasons": {"flink": lf["flush_reasons"], "statebench": ls["flush_reasons"]},
                       "options_differences": [{"option": k, "values": s, "explained": w} for k, s, w in diffs]},
                      f, indent=2)
            f.write("\n")
    if failed:
        print(f"\nFAIL ({a.name}): " + "; ".join(failed))
        return 1
    print(f"\nPASS ({a.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
