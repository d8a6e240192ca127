#!/usr/bin/env python3
"""Writes a parity trace, seeded and deterministic.

Default (v1, what parity/run replays): CSV `user,event_time`. Shaped like the field report's
minutes app: many users with a skewed (Zipf-like) share of the traffic, event time advancing at
a steady pace, every event up to 3 s out of order and about 1 % late by up to 2 minutes (the job
still counts them; their past-due timers fire at the next watermark).

`--v2` (what parity/run-kinds replays): CSV `key,event_time,partition,value_size,input`, the
same keys and event times as v1 with the same arguments (its extra columns come from a second
random stream), plus per event a value size (`--value-size N` or `--value-size A-B`, uniform)
and an input (`--right-share F`: that share of events goes to input 1, the join's right side;
each input its own partition, 0 and 1).
"""
import argparse
import random

START = 1767225600000  # 2026-01-01T00:00:00Z


def value_range(text):
    """`N` or `A-B` (bytes) -> (A, B)."""
    try:
        if "-" in text:
            lo, hi = (int(v) for v in text.split("-", 1))
        else:
            lo = hi = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--value-size: expected N or A-B (bytes), got {text!r}")
    if lo < 0 or hi < lo:
        raise argparse.ArgumentTypeError(f"--value-size: need 0 <= A <= B, got {text!r}")
    return lo, hi


def share(text):
    f = float(text)
    if not 0.0 <= f < 1.0:
        raise argparse.ArgumentTypeError(f"--right-share must be in [0, 1), got {text!r}")
    return f


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--events", type=int, default=40_000)
    p.add_argument("--users", type=int, default=4_000)
    p.add_argument("--span-ms", type=int, default=2 * 3600 * 1000)
    p.add_argument("--seed", type=int, default=20250101)
    p.add_argument("--max-lag-ms", type=int, default=120_000,
                   help="a late event (1 %%) lags by 3,001 ms up to this")
    p.add_argument("--v2", action="store_true",
                   help="write trace v2: key,event_time,partition,value_size,input")
    p.add_argument("--value-size", type=value_range, default=(16, 16), help="v2: N or A-B bytes")
    p.add_argument("--right-share", type=share, default=0.0,
                   help="v2: share of events on input 1 (a join's right side, partition 1)")
    p.add_argument("--partitions-per-input", type=int, default=1,
                   help="v2: partitions of each input (input i's are i*N .. i*N+N-1, drawn per event)")
    a = p.parse_args()
    rng = random.Random(a.seed)
    # v2's extra columns: their own stream, so keys and times equal v1's for the same arguments.
    extra = random.Random(a.seed ^ 0x5EED)
    spread = random.Random(a.seed ^ 0x9A27)
    if a.partitions_per_input < 1:
        p.error(f"--partitions-per-input must be at least 1, not {a.partitions_per_input}")
    weights = [1.0 / (rank ** 0.9) for rank in range(1, a.users + 1)]
    cumulative = []
    total = 0.0
    for w in weights:
        total += w
        cumulative.append(total)
    users = rng.choices(range(a.users), cum_weights=cumulative, k=a.events)
    step = a.span_ms / a.events
    with open(a.out, "w", encoding="ascii") as f:
        for i, user in enumerate(users):
            nominal = START + int(i * step)
            if rng.random() < 0.01:
                lag = rng.randint(3_001, a.max_lag_ms)
            else:
                lag = rng.randint(0, 3_000)
            if not a.v2:
                f.write(f"u-{user},{nominal - lag}\n")
                continue
            size = extra.randint(*a.value_size)
            side = 1 if a.right_share > 0 and extra.random() < a.right_share else 0
            partition = side
            if a.partitions_per_input > 1:
                # Its own stream, so the other columns equal one partition per input's.
                partition = side * a.partitions_per_input + spread.randrange(a.partitions_per_input)
            f.write(f"u-{user},{nominal - lag},{partition},{size},{side}\n")


if __name__ == "__main__":
    main()
