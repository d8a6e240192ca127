#!/usr/bin/env python3
"""`export --into`: does Flink load the merged config.yaml as the user's file with the export's keys
set, and nothing else changed?

Compares what Flink 1.20.1 loaded (GlobalConfiguration.loadConfiguration: `key: value` lines in key
order, as ConfigDump and ParityJob write them) from the user's file before the merge and from the
merged file: every key of the export (its fragment's live `key: value` lines) has the export's
value, every other key the user's. Exits non-zero on any difference.

  into_check.py --name NAME --before LOADED --after LOADED --fragment FRAGMENT

Standard library only; the loaded configuration's parsing is compare.py's.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (parity/compare.py: Flink's loaded configuration)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--name", required=True)
    p.add_argument("--before", required=True, help="Flink's loading of the user's file")
    p.add_argument("--after", required=True, help="Flink's loading of the merged file")
    p.add_argument("--fragment", required=True, help="the export without --into")
    a = p.parse_args()
    before, after = compare.load_flink_config(a.before), compare.load_flink_config(a.after)
    exported = {}
    with open(a.fragment, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                k, v = line.split(": ", 1)
                exported[k] = v
    expected = dict(before)
    expected.update(exported)
    bad = []
    print(f"== export --into: {a.name} ==")
    for key in sorted(set(expected) | set(after)):
        was, want, got = before.get(key), expected.get(key), after.get(key)
        ok = want == got
        source = "export" if key in exported else "user's"
        print(f"  {key:<56} before {was!s:<16} merged {got!s:<16} ({source}) {'yes' if ok else 'NO'}")
        if not ok:
            bad.append(f"{key}: expected {want!r}, Flink loaded {got!r}")
    replaced = [k for k in exported if k in before]
    if not replaced:
        bad.append("the user's file sets none of the export's keys: nothing was merged")
    if bad:
        print(f"FAIL (into {a.name}): " + "; ".join(bad))
        return 1
    print(f"PASS (into {a.name}): {len(after)} keys loaded by Flink, {len(replaced)} of the user's replaced by the export, "
          f"{len(exported) - len(replaced)} added, {len(before) - len(replaced)} kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
