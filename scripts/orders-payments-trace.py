#!/usr/bin/env python3
"""Writes the orders x payments trace of workloads/orders-payments.yaml (issue 33's first job),
seeded and deterministic: the same arguments write the same bytes.

Orders arrive at a steady pace over the span (uniform times, in order); each has a UUID (36
characters, version 4, from the seeded generator) as its key. All but `--unpaid` of them get a
payment with the same key `--pay-min` to `--pay-max` after the order (uniform). Orders are the
join's left input (input 0, partitions 0 and 1), payments its right (input 1, partitions 2 and
3), each key's records in one partition of each input (by a hash of the key), so each input has
watermarks of its own, as two Kafka topics give a two-input operator. Records are written in
event-time order: no record is out of order. Values are `--order-bytes` and `--payment-bytes`.

The defaults give about 985 K records over 6 h (500,000 orders, 485,000 payments, 3 % unpaid),
a CSV of about 58 MB: too big for git, so the workload's trace is written on demand:

    python3 scripts/orders-payments-trace.py            # -> workloads/orders-payments.csv

Format: docs/trace.md (`key,event_time,partition,value_size,input`, with a header line).
"""
import argparse
import os
import random
import sys
import uuid
import zlib

START = 1767225600000  # 2026-01-01T00:00:00Z, the workloads' default event-time start
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "workloads", "orders-payments.csv")


def duration_ms(text):
    """`30s`, `8m`, `6h` or milliseconds -> milliseconds."""
    units = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
    for suffix in ("ms", "s", "m", "h"):
        if text.endswith(suffix) and text[: -len(suffix)].isdigit():
            return int(text[: -len(suffix)]) * units[suffix]
    if text.isdigit():
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a duration such as 30s, 8m or 6h, got {text!r}")


def fraction(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction from 0 to 1, got {text!r}")
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a fraction from 0 to 1 (1 excluded), got {text!r}")
    return value


def positive(text):
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(text)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--orders", type=positive, default=500_000, help="orders (default 500000)")
    p.add_argument("--unpaid", type=fraction, default=0.03, help="share of orders never paid (default 0.03)")
    p.add_argument("--span", type=duration_ms, default=duration_ms("6h"), help="event time the orders cover (default 6h)")
    p.add_argument("--pay-min", type=duration_ms, default=duration_ms("30s"), help="earliest payment after its order (default 30s)")
    p.add_argument("--pay-max", type=duration_ms, default=duration_ms("8m"), help="latest payment after its order (default 8m)")
    p.add_argument("--order-bytes", type=int, default=300, help="an order's value size (default 300)")
    p.add_argument("--payment-bytes", type=int, default=150, help="a payment's value size (default 150)")
    p.add_argument("--seed", type=int, default=33, help="random seed (default 33)")
    p.add_argument("--out", default=DEFAULT_OUT, help="the trace to write (default workloads/orders-payments.csv)")
    a = p.parse_args()
    if a.pay_max < a.pay_min:
        p.error(f"--pay-max ({a.pay_max} ms) must not be below --pay-min ({a.pay_min} ms)")
    if a.order_bytes < 0 or a.payment_bytes < 0:
        p.error("--order-bytes and --payment-bytes must not be negative")

    rng = random.Random(a.seed)
    records = []  # (event_time, sequence, key, partition, value_size, input)
    for n in range(a.orders):
        key = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        # Each input's two partitions: a key stays in one of each (Kafka keyed by order id).
        half = zlib.crc32(key.encode()) & 1
        at = START + (n * a.span) // a.orders + rng.randrange(max(1, a.span // a.orders))
        records.append((at, len(records), key, half, a.order_bytes, 0))
        if rng.random() >= a.unpaid:
            paid = at + rng.randint(a.pay_min, a.pay_max)
            records.append((paid, len(records), key, 2 + half, a.payment_bytes, 1))
    records.sort()
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        f.write("key,event_time,partition,value_size,input\n")
        for at, _, key, part, size, side in records:
            f.write(f"{key},{at},{part},{size},{side}\n")
    os.replace(tmp, a.out)  # whole or not at all
    payments = sum(1 for r in records if r[5] == 1)
    print(
        f"{a.out}: {len(records)} records ({a.orders} orders, {payments} payments), "
        f"{os.path.getsize(a.out) / 1e6:.1f} MB",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
