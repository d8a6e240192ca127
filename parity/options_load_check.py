#!/usr/bin/env python3
"""Does FRocksDB 6.20.3 (Flink 1.20) apply `statebench export --format rocksdb-options`?

Compares the exported OPTIONS file with the one FRocksDB 6.20.3 wrote after loading it
(OptionsUtil.loadOptionsFromFile with unknown options refused) and opening a database with it
(parity/job's OptionsFileCheck load): every option of every section must read back as exported,
in 6.20's spelling. Options that name objects or places rather than settings are listed in
NOT_SETTINGS. Exits non-zero on any difference.

Standard library only; OPTIONS parsing is compare.py's.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

# Where the database is, not how RocksDB runs: the loading side's own paths and host.
NOT_SETTINGS = {"wal_dir", "db_log_dir", "db_host_id", "db_paths"}


def normalized(option, value):
    """6.20 writes a bloom filter policy by its class name and its lists as `a:{b}:{c}`; the
    export writes the forms it loads (`bloomfilter:10:false`, `a:b:c`)."""
    if value is None:
        return None
    if option == "filter_policy":
        return "bloom" if "bloom" in value.lower() else value
    if option == "compression_per_level":
        return ":".join(compare.per_level(value) or [])
    if option == "max_bytes_for_level_multiplier_additional":
        return value.replace("{", "").replace("}", "")
    if value.startswith("{") and value.endswith("}"):
        # Struct fields in any order.
        return ";".join(sorted(f for f in value[1:-1].split(";") if f))
    return value


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--name", required=True)
    p.add_argument("--exported", required=True)
    p.add_argument("--written", required=True, help="the OPTIONS file FRocksDB wrote back")
    a = p.parse_args()
    exported = compare.parse_options(a.exported)
    written = compare.parse_options(a.written)
    compared, differences = 0, []
    for section, options in exported.items():
        if section == "Version":
            continue
        back = written.get(section)
        if back is None:
            differences.append(f"[{section}] missing from what FRocksDB wrote")
            continue
        for option, value in options.items():
            if option in NOT_SETTINGS:
                continue
            compared += 1
            if normalized(option, value) != normalized(option, back.get(option)):
                differences.append(f"[{section}] {option}: exported {value}, FRocksDB 6.20.3 has {back.get(option)}")
    version = written.get("Version", {}).get("rocksdb_version")
    for d in differences:
        print(f"  {d}")
    if differences or version != "6.20.3":
        print(f"FAIL rocksdb-options ({a.name}): {len(differences)} of {compared} options differ "
              f"(written by RocksDB {version})")
        return 1
    print(f"PASS rocksdb-options ({a.name}): FRocksDB {version} loaded it with unknown options refused; "
          f"{compared} options of {len(exported) - 1} sections read back as exported")
    return 0


if __name__ == "__main__":
    sys.exit(main())
