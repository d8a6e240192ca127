#!/usr/bin/env python3
"""Reads `statebench workloads show` output and prints the Flink job's arguments:
`label=ms,...` windows, out-of-orderness ms and timerState TTL ms, space-separated."""
import re
import sys

UNITS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def millis(text):
    m = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", text.strip().strip("'\""))
    if not m:
        sys.exit(f"cannot read duration {text!r}")
    return int(m.group(1)) * UNITS[m.group(2) or "ms"]


def main():
    windows, ooo, ttl = [], None, None
    lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("windows:"):
            rest = line.split(":", 1)[1].strip()
            if rest.startswith("["):
                windows = [w.strip() for w in rest.strip("[]").split(",") if w.strip()]
            else:
                for item in lines[i + 1:]:
                    if not item.startswith("- "):
                        break
                    windows.append(item[2:].strip())
        elif line.strip().startswith("out-of-orderness:"):
            ooo = millis(line.split(":", 1)[1])
        elif line.startswith("timer-state-ttl:"):
            ttl = millis(line.split(":", 1)[1])
    if not windows or ooo is None or ttl is None:
        sys.exit(f"{sys.argv[1]}: windows, event-time.out-of-orderness and timer-state-ttl are needed")
    labels = [w.strip("'\"") for w in windows]
    print(",".join(f"{w}={millis(w)}" for w in labels), ooo, ttl)


if __name__ == "__main__":
    main()
