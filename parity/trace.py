#!/usr/bin/env python3
"""Writes the parity trace: CSV `user,event_time`, seeded and deterministic.

Shaped like the field report's minutes app: many users with a skewed (Zipf-like) share of the
traffic, event time advancing at a steady pace, every event up to 3 s out of order and about 1 %
late by up to 2 minutes (the job still counts them; their past-due timers fire at the next
watermark).
"""
import argparse
import random

START = 1767225600000  # 2026-01-01T00:00:00Z


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("out")
    p.add_argument("--events", type=int, default=40_000)
    p.add_argument("--users", type=int, default=4_000)
    p.add_argument("--span-ms", type=int, default=2 * 3600 * 1000)
    p.add_argument("--seed", type=int, default=20250101)
    a = p.parse_args()
    rng = random.Random(a.seed)
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
                lag = rng.randint(3_001, 120_000)
            else:
                lag = rng.randint(0, 3_000)
            f.write(f"u-{user},{nominal - lag}\n")


if __name__ == "__main__":
    main()
