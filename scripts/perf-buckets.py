#!/usr/bin/env python3
"""Buckets the CPU samples of a `perf record --call-graph dwarf` profile of statebench into
RocksDB's work and statebench's own.

Each sample belongs to the first frame, from the leaf up, that is RocksDB's (its C++ code, its
C API, the rust-rocksdb wrapper, its compression and checksum libraries) or statebench's (a
`statebench::` function). Frames of libc, libstdc++, the vDSO, the kernel and generic Rust
libraries (core, alloc, std, hashbrown, hdrhistogram, rand) belong to whoever called them: a
memcmp inside the memtable's skip list is RocksDB's, a hash-map insert inside the oracle or a
clock read inside StateAccess is statebench's. RocksDB's background threads are RocksDB's.

usage: perf script -F comm,tid,ip,sym,dso -i perf.data | scripts/perf-buckets.py [--json]
"""
import collections
import json
import re
import sys

ROCKSDB = re.compile(
    r"^(rocksdb::|rocksdb_|librocksdb_sys|snappy::|LZ4|lz4|ZSTD|ZSTD_|XXH|crc32c|"
    r"rocksdb_[a-z]|<rocksdb::|non-virtual thunk to rocksdb::|virtual thunk to rocksdb::|"
    r"statebench_shim|bz_|BZ2_|compress|deflate|inflate)"
)
STATEBENCH = re.compile(r"statebench::([a-z_]+)(?:::([a-z_]+))?")


def owner(frames):
    """(owner, component, path) of one sample; frames leaf first as (sym, dso)."""
    for i, (sym, dso) in enumerate(frames):
        if ROCKSDB.match(sym) or "rocksdb::" in sym.split("<", 1)[0]:
            return "rocksdb", None, frames[: i + 1]
        m = STATEBENCH.search(sym)
        if m and not sym.startswith(("core::", "alloc::", "std::", "hashbrown::")):
            module = m.group(1) + ("::" + m.group(2) if m.group(2) else "")
            return "statebench", module, frames[: i + 1]
    return None, None, frames


def kind(path):
    """What statebench's sample was doing at its leaf: a finer cut of the component."""
    names = " ".join(sym for sym, _ in path[:-1])
    if "clock_gettime" in names or "gettimeofday" in names or "Instant" in names:
        return "clock reads"
    if "hdrhistogram" in names:
        return "histograms"
    if "hash::sip" in names or "SipHasher" in names:
        return "siphash"
    if "hashbrown" in names:
        return "hash maps"
    if "btree" in names or "BinaryHeap" in names or "binary_heap" in names:
        return "btree/heap"
    if "malloc" in names or "free" in names or "realloc" in names:
        return "allocation"
    return "own code"


# Work whose cost is measured with everything it calls, RocksDB's property reads included.
INCLUSIVE = {
    "metrics sampling (publish)": "engine::job::JobRunner::publish",
    "oracle comparisons": "engine::job::JobRunner::compare_sink",
    "full scans of state (end of run)": "backend::StateAccess::for_each",
}


def main():
    as_json = "--json" in sys.argv
    total = 0
    buckets = collections.Counter()
    components = collections.Counter()
    kinds = collections.Counter()
    leaves = collections.Counter()
    # The engine thread alone (where the pipeline runs; RocksDB's background threads apart).
    engine = collections.Counter()
    # Samples with one of these frames anywhere on the stack (their callees included).
    inclusive = collections.Counter()
    comm = None
    frames = []

    def flush():
        nonlocal total
        if comm is None:
            return
        total += 1
        if comm.startswith("rocksdb:"):
            buckets["rocksdb"] += 1
            return
        names = " ".join(sym for sym, _ in frames)
        for label, frame in INCLUSIVE.items():
            if frame in names:
                inclusive[label] += 1
        who, component, path = owner(frames)
        if comm.startswith("statebench-eng"):
            engine[who or "unattributed"] += 1
        if who is None:
            buckets["unattributed"] += 1
            leaves["(unattributed) " + (frames[0][0] if frames else "?")] += 1
            return
        buckets[who] += 1
        if who == "statebench":
            components[component] += 1
            kinds[kind(path)] += 1
            leaves[path[0][0]] += 1

    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line.strip():
            flush()
            comm, frames = None, []
            continue
        if not line.startswith(("\t", " ")):
            flush()
            parts = line.split()
            comm, frames = " ".join(parts[:-1]) or parts[0], []
            continue
        m = re.match(r"\s*[0-9a-f]+ (.*) \((.*)\)$", line)
        if m:
            frames.append((m.group(1), m.group(2)))
    flush()

    share = lambda n: 100.0 * n / total if total else 0.0
    out = {
        "samples": total,
        "rocksdb_pct": share(buckets["rocksdb"]),
        "statebench_pct": share(buckets["statebench"]),
        "unattributed_pct": share(buckets["unattributed"]),
        "statebench_components_pct": {k: share(v) for k, v in components.most_common()},
        "statebench_kinds_pct": {k: share(v) for k, v in kinds.most_common()},
        "statebench_top_leaves_pct": {k: share(v) for k, v in leaves.most_common(25)},
        "engine_thread_statebench_pct": 100.0 * engine["statebench"] / max(1, sum(engine.values())),
        "inclusive_pct": {k: share(inclusive[k]) for k in INCLUSIVE},
    }
    if as_json:
        json.dump(out, sys.stdout, indent=2)
        print()
        return
    print(f"samples {total}")
    for b in ("rocksdb", "statebench", "unattributed"):
        print(f"  {b:<14} {share(buckets[b]):5.1f} %")
    e = sum(engine.values())
    print(f"engine thread alone: {e} samples, statebench {100.0 * engine['statebench'] / max(1, e):.1f} %")
    print("with their callees (RocksDB's included):")
    for k in INCLUSIVE:
        print(f"  {k:<44} {share(inclusive[k]):5.2f} %")
    print("statebench by module:")
    for k, v in components.most_common():
        print(f"  {k:<28} {share(v):5.2f} %")
    print("statebench by kind of work:")
    for k, v in kinds.most_common():
        print(f"  {k:<28} {share(v):5.2f} %")
    print("top leaf symbols (statebench's samples, and unattributed ones):")
    for k, v in leaves.most_common(25):
        print(f"  {share(v):5.2f} %  {k[:110]}")


if __name__ == "__main__":
    main()
