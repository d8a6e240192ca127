"""The event rate a Flink parity run processed at: the trace's events over the time its RocksDB
instance was open (first to last line of its LOG files), not over `env.execute`'s wall time,
which also holds the MiniCluster's start (about 2.5 s of a 28 s run here) and would pace
statebench below the rate Flink's writer really met its flushes at.

usage: flink_rate.py FLINK_OUT_DIR TRACE_CSV JOB_SECONDS
Prints events per second, rounded; JOB_SECONDS is the fallback when no LOG is there."""

import glob
import os
import re
import sys
from datetime import datetime

STAMP = re.compile(r"^(\d{4}/\d{2}/\d{2}-\d{2}:\d{2}:\d{2}\.\d{6}) ")


def stamps(path):
    """The first and last timestamped lines of one RocksDB LOG file."""
    first = last = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = STAMP.match(line)
            if m:
                t = datetime.strptime(m.group(1), "%Y/%m/%d-%H:%M:%S.%f").timestamp()
                first = t if first is None else first
                last = t
    return first, last


def main():
    out, trace, job_secs = sys.argv[1], sys.argv[2], float(sys.argv[3] or 0)
    with open(trace, encoding="utf-8") as f:
        events = sum(1 for line in f if line.strip())
    spans = [stamps(p) for p in glob.glob(os.path.join(out, "flink-LOG*"))]
    firsts = [a for a, _ in spans if a is not None]
    lasts = [b for _, b in spans if b is not None]
    secs = max(lasts) - min(firsts) if firsts and lasts else job_secs
    if secs <= 0:
        secs = job_secs
    print(max(1, round(events / max(secs, 0.001))))


if __name__ == "__main__":
    main()
