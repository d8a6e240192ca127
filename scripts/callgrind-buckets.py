#!/usr/bin/env python3
"""Splits a callgrind profile of statebench into RocksDB's instructions and statebench's own.

RocksDB's are everything its C API functions (`rocksdb_*`, which the rust-rocksdb wrapper
calls) and its background threads execute, inclusive; the C++ shim's entry points
(`statebench_*`, which call into RocksDB) count as RocksDB's too. The rest is statebench's:
the pipeline, the oracle, the sink, metrics, latency recording, clock reads, start-up.
Instruction counts do not move with machine noise, so two builds compare exactly.

usage: scripts/callgrind-buckets.py callgrind.out [...]
"""
import re
import subprocess
import sys

ENTRY = re.compile(
    r"^\s*([\d,]+) \([ \d.]+%\)\s+\S*:(rocksdb_[a-z0-9_]+|statebench_[a-z0-9_]+|"
    r"rocksdb::ThreadPoolImpl::Impl::BGThreadWrapper\(void\*\)) "
)
TOTAL = re.compile(r"^\s*([\d,]+) \(100.0%\)\s+PROGRAM TOTALS")


def split(path):
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
        capture_output=True, text=True, check=True,
    ).stdout
    total = rocksdb = 0
    for line in text.splitlines():
        m = TOTAL.match(line)
        if m:
            total = int(m.group(1).replace(",", ""))
            continue
        m = ENTRY.match(line)
        if m:
            rocksdb += int(m.group(1).replace(",", ""))
    return total, rocksdb


for path in sys.argv[1:]:
    total, rocksdb = split(path)
    own = total - rocksdb
    print(f"{path}: total {total:,} Ir; rocksdb {rocksdb:,} ({100 * rocksdb / total:.1f} %); "
          f"statebench {own:,} ({100 * own / total:.1f} %)")
