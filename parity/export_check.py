#!/usr/bin/env python3
"""Knob by knob: does Flink, started from `statebench export --format flink`'s config.yaml, run
RocksDB with the options statebench runs it with for the same profile?

For every knob of the profile (as statebench's report lists them) it compares the RocksDB
option(s) the knob maps to, on both sides: in the OPTIONS files (every column family,
DBOptions, BlockBasedTable options), in the LOGs (the block cache, which neither OPTIONS file
shows), and where neither file says it, in what each side reads back from its RocksDB objects
(the WriteBufferManager's capacity, the rate limiter, the bloom bits per key of a flushed SST
file). Prints a table (knob, RocksDB option, Flink, statebench, equal) and exits non-zero on any
difference, on a knob this script has no mapping for, on an exported key Flink did not load as
written, and on an OPTIONS difference parity/options-explained.txt does not explain.

Standard library only; the OPTIONS and LOG parsing is compare.py's.
"""
import argparse
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (parity/compare.py: OPTIONS and LOG parsing)

CF, TABLE, DB = "CFOptions", "TableOptions/BlockBasedTable", "DBOptions"

# Each knob of statebench's knob table -> what it sets in RocksDB: (where, option). `where` is an
# OPTIONS section kind (compared in every column family), or one of the observations below.
KNOB_OPTIONS = {
    "memory.managed-size": [("log", "block cache capacity"), ("object", "WriteBufferManager capacity")],
    "memory.write-buffer-ratio": [("log", "block cache capacity"), ("object", "WriteBufferManager capacity")],
    # managed memory or fixed-per-slot: how Flink provides memory.managed-size, the same cache and
    # WBM; unmanaged (memory.managed: false): a cache per column family and no WBM.
    "memory.mode": [("log", "block cache capacity"), ("log", "block caches per instance"),
                    ("object", "WriteBufferManager capacity")],
    "block.cache-size": [("log", "block cache capacity"), ("log", "block caches per instance")],
    "memory.high-prio-pool-ratio": [("log", "high_pri_pool_ratio")],
    "memory.partitioned-index-filters": [(TABLE, "index_type"), (TABLE, "partition_filters")],
    "writebuffer.size": [(CF, "write_buffer_size"), (CF, "arena_block_size")],
    "writebuffer.count": [(CF, "max_write_buffer_number")],
    "writebuffer.number-to-merge": [(CF, "min_write_buffer_number_to_merge")],
    "use-bloom-filter": [(TABLE, "filter_policy")],
    "bloom-filter.bits-per-key": [("sst", "bloom bits per key")],
    "block.blocksize": [(TABLE, "block_size")],
    "block.metadata-blocksize": [(TABLE, "metadata_block_size")],
    # RocksDB 6.x's SanitizeOptions gives direct reads a 2 MB compaction readahead when it is 0.
    "use-direct-reads": [(DB, "use_direct_reads"), (DB, "compaction_readahead_size")],
    "use-direct-io-for-flush-and-compaction": [(DB, "use_direct_io_for_flush_and_compaction")],
    "compaction.level.target-file-size-base": [(CF, "target_file_size_base")],
    "compaction.level.max-size-level-base": [(CF, "max_bytes_for_level_base")],
    "compaction.level.multiplier": [(CF, "max_bytes_for_level_multiplier")],
    "compaction.level.use-dynamic-size": [(CF, "level_compaction_dynamic_level_bytes")],
    "compression.per.level": [(CF, "compression_per_level")],
    "thread.num": [(DB, "max_background_jobs")],
    "files.open": [(DB, "max_open_files")],
    "compaction.level0-slowdown-writes-trigger": [(CF, "level0_slowdown_writes_trigger")],
    "compaction.level0-stop-writes-trigger": [(CF, "level0_stop_writes_trigger")],
    "compaction.soft-pending-compaction-bytes-limit": [(CF, "soft_pending_compaction_bytes_limit")],
    "compaction.hard-pending-compaction-bytes-limit": [(CF, "hard_pending_compaction_bytes_limit")],
    "compaction.disable-auto-compactions": [(CF, "disable_auto_compactions")],
    "io.rate-limit-per-sec": [("object", "rate limiter bytes/s")],
    # What the target fixes (format version, checksum, arena, filter memory, ...): every other
    # option of the two OPTIONS files, each difference explained in options-explained.txt.
    "target": [("options", "every other option")],
}

CAPACITY = re.compile(r"^\s*capacity : (\d+)\s*$")
CACHE = re.compile(r"^\s*block_cache: (0x[0-9a-f]+)\s*$")
RATE_LIMITER = re.compile(r"Options\.rate_limiter: (\S+)")
SIZES = {"b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40}


def size(text):
    """statebench's size syntax (`3mb`, `0b`) -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", str(text).lower())
    if not m:
        sys.exit(f"cannot read size {text!r}")
    return int(m.group(1)) * SIZES[m.group(2) or "b"]


def log_facts(paths):
    """Block cache capacities, rate limiter pointers, and how many distinct block caches one
    instance's column families use (one shared, or one each), printed in RocksDB LOGs."""
    capacities, limiters, caches = set(), set(), set()
    for path in paths:
        pointers = set()
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = CACHE.match(line)
                if m:
                    pointers.add(m.group(1))
                m = CAPACITY.match(line)
                if m:
                    capacities.add(int(m.group(1)))
                m = RATE_LIMITER.search(line)
                if m:
                    limiters.add("none" if m.group(1) in ("(nil)", "0x0", "nullptr") else "set")
        if pointers:
            caches.add(len(pointers))
    return capacities, limiters, caches


def bloom_bits(table_properties):
    """Filter bytes * 8 / filter entries of RocksDB's aggregated table properties text (the
    formula statebench reports as measured_bloom_bits_per_key). FRocksDB 6.20 has no
    `# entries for filter` property: its `# entries` stands in, the same count for the SST files
    of one flush (each key once, deletions included, no merge operands)."""
    if not table_properties:
        return None
    props = {}
    for item in table_properties.split(";"):
        if "=" in item:
            k, v = item.split("=", 1)
            props[k.strip()] = v.strip()
    entries = props.get("# entries for filter", props.get("# entries"))
    filter_size = props.get("filter block size")
    if entries is None or filter_size is None or int(entries) == 0 or int(filter_size) == 0:
        return None
    return int(filter_size) * 8 / int(entries)


def normalized(option, value):
    """One spelling for what both RocksDB versions mean alike: a bloom filter policy is named
    `rocksdb.BuiltinBloomFilter` by 6.20 and `bloomfilter` by 11; 6.20 and 11 write the
    compression list differently (compare.per_level)."""
    if value is None:
        return None
    if option == "filter_policy":
        return "bloom" if "bloom" in value.lower() else value
    if option == "compression_per_level":
        # Runs of one compression collapsed: `kSnappyCompression x7`.
        runs = []
        for c in compare.per_level(value):
            if runs and runs[-1][0] == c:
                runs[-1][1] += 1
            else:
                runs.append([c, 1])
        return ":".join(f"{c} x{n}" for c, n in runs)
    return value


def yaml_value(value):
    """A knob's value from the report's JSON as the profile YAML writes it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ";".join(map(yaml_value, value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def shown(values):
    """{cf: value} -> one value when every column family has it, else cf=value pairs."""
    distinct = set(values.values())
    if len(distinct) == 1:
        return next(iter(distinct)) or "(none)"
    return ", ".join(f"{cf}={v}" for cf, v in sorted(values.items()))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--name", required=True)
    p.add_argument("--config", required=True, help="the exported config.yaml")
    p.add_argument("--flink", required=True, help="the parity job's --out directory")
    p.add_argument("--report", required=True, help="statebench's JSON report")
    p.add_argument("--statebench-data", required=True, help="statebench's --data-dir (its LOG)")
    p.add_argument("--reopened", required=True,
                   help="report of a statebench run reopening that data directory (its SST files' bloom bits)")
    p.add_argument("--explained", required=True, help="parity/options-explained.txt")
    a = p.parse_args()

    report = compare.load_report(a.report)
    reopened = compare.load_report(a.reopened)
    flink = compare.load_flink(a.flink)
    knobs = report["profile"]["knobs"]
    failed = []
    rows = []

    def row(knob, option, f, s, equal):
        rows.append((knob, option, str(f), str(s), "yes" if equal else "NO"))
        if not equal:
            failed.append(f"{knob} ({option})")

    # Flink read the exported file itself: every key in it is in Flink's loaded configuration,
    # with the value written, and Flink 1.20.1 knows every RocksDB key.
    exported = {}
    with open(a.config, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                k, v = line.split(":", 1)
                exported[k.strip()] = v.strip()
    loaded = compare.load_flink_config(os.path.join(a.flink, "flink-loaded-config.txt"))
    as_written = [k for k, v in exported.items() if loaded.get(k) == v]
    row("(config.yaml)", "keys Flink loaded as written", len(as_written), len(exported),
        len(as_written) == len(exported))
    notes = [f"config.yaml: '{k}: {v}' was loaded by Flink as {loaded.get(k)!r}"
             for k, v in exported.items() if loaded.get(k) != v]
    unknown = []
    with open(os.path.join(a.flink, "flink-config-check.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("unknown_keys"):
                unknown = line.split()[1:]
    row("(config.yaml)", "keys Flink 1.20.1 does not know", len(unknown), 0, not unknown)

    # Both OPTIONS files, the event-time timer column family under Flink's name.
    fo = compare.parse_options(os.path.join(a.flink, "flink.OPTIONS"))
    so, _ = compare.align_timer_sections(fo, compare.parse_options(report["rocksdb_options_file"]))

    def per_cf(sections, kind, option):
        if kind == DB:
            return {"": normalized(option, sections.get(DB, {}).get(option))}
        out = {}
        for section, options in sections.items():
            skind, cf = compare.section_kind(section)
            if skind == kind:
                out[cf] = normalized(option, options.get(option))
        return out

    flink_logs = sorted(glob.glob(os.path.join(a.flink, "flink-LOG*")))
    sb_logs = compare.statebench_logs(a.statebench_data)
    f_cap, f_lim, f_caches = log_facts(flink_logs)
    s_cap, s_lim, s_caches = log_facts(sb_logs)
    f_hp = compare.log_events(flink_logs)["high_pri_pool_ratio"]
    s_hp = compare.log_events(sb_logs)["high_pri_pool_ratio"]
    checks = flink["export_check"]
    sb_memory = report["snapshots"][-1]["rocksdb"]["memory"]
    explained = compare.read_explanations(a.explained)

    def fmt_set(values):
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in sorted(values)) or "-"

    # Checkpointing's keys are Flink configuration, not RocksDB options: the loaded-config row
    # above checks them; the sink's and the checkpoint store's are not Flink configuration. The
    # timer service's keys choose whether the timer column families exist: the OPTIONS files'
    # comparison ("every other option") shows that, and the loaded-config row the keys.
    not_rocksdb = ("execution.checkpointing.", "state.changelog.", "sink.", "checkpoint.",
                   "timer-service.")
    unmapped = [k for k in knobs if k not in KNOB_OPTIONS and not k.startswith(not_rocksdb)]
    for knob in knobs:
        for where, option in KNOB_OPTIONS.get(knob, []):
            label = f"{knob}: {yaml_value(knobs[knob])}"
            if where in (CF, TABLE, DB):
                fv, sv = per_cf(fo, where, option), per_cf(so, where, option)
                cfs = sorted(set(fv) | set(sv))
                equal = bool(cfs) and all(fv.get(cf) is not None and fv.get(cf) == sv.get(cf) for cf in cfs)
                scope = "DBOptions" if where == DB else f"{len(cfs)} {'CFs' if where == CF else 'tables'}"
                row(label, f"{option} ({scope})", shown(fv), shown(sv), equal)
            elif (where, option) == ("log", "block cache capacity"):
                row(label, "block cache capacity (LOG)", fmt_set(f_cap), fmt_set(s_cap), len(f_cap) == 1 and f_cap == s_cap)
            elif (where, option) == ("log", "block caches per instance"):
                row(label, "distinct block caches per instance (LOG)", fmt_set(f_caches), fmt_set(s_caches),
                    len(f_caches) == 1 and f_caches == s_caches)
            elif (where, option) == ("log", "high_pri_pool_ratio"):
                row(label, "block cache high_pri_pool_ratio (LOG)", fmt_set(f_hp), fmt_set(s_hp), len(f_hp) == 1 and f_hp == s_hp)
            elif (where, option) == ("object", "WriteBufferManager capacity"):
                # Without shared memory Flink sets none (null) and statebench installs none (0).
                fv = checks["write_buffer_manager_capacity"]
                sv = sb_memory["wbm_capacity"] if not sb_memory.get("unshared") else None
                row(label, "WriteBufferManager capacity", "none" if fv is None else fv,
                    "none" if sv is None else sv, fv == sv)
            elif (where, option) == ("object", "rate limiter bytes/s"):
                # Flink: read back from the RateLimiter on its DBOptions; statebench: the rate it
                # gives RocksDB. The LOG shows whether each instance has a limiter at all.
                fv, sv = checks["rate_limiter_bytes_per_second"], size(knobs[knob])
                f_set, s_set = fmt_set(f_lim), fmt_set(s_lim)
                row(label, "rate limiter bytes/s (LOG: limiter)", f"{fv} ({f_set})", f"{sv} ({s_set})",
                    fv == sv and f_lim == s_lim and len(f_lim) == 1 and (fv > 0) == (f_lim == {"set"}))
            elif where == "sst":
                fv = bloom_bits(checks.get("window_stats_table_properties"))
                sv = reopened["snapshots"][-1]["rocksdb"].get("measured_bloom_bits_per_key")
                fs = "-" if fv is None else f"{fv:.4f}"
                ss = "-" if sv is None else f"{sv:.4f}"
                row(label, "bloom bits/key, window-stats SST", fs, ss, fs == ss)
            elif where == "options":
                diffs = compare.compare_options(os.path.join(a.flink, "flink.OPTIONS"),
                                                report["rocksdb_options_file"], explained)
                unexplained = [d for d in diffs if d[2] is None]
                notes.extend(f"UNEXPLAINED  {key}: {text}" for key, text in compare.grouped(unexplained))
                row(label, "every other option", f"{len(diffs)} differences",
                    f"{len(diffs) - len(unexplained)} explained", not unexplained)
    for knob in unmapped:
        row(knob, "(no mapping in export_check.py)", "?", "?", False)

    header = ("knob", "RocksDB option", "Flink 1.20.1", "statebench", "equal")
    widths = [min(cap, max(len(r[i]) for r in rows + [header])) for i, cap in enumerate((54, 50, 24, 24))]
    print(f"== export check: {a.name} ==")
    for r in [header] + rows:
        print("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4])
    for note in notes:
        print(f"  {note}")
    if failed:
        print(f"FAIL ({a.name}): " + "; ".join(failed))
        return 1
    print(f"PASS ({a.name}): {len(knobs)} knobs, {len(rows)} comparisons")
    return 0


if __name__ == "__main__":
    sys.exit(main())
