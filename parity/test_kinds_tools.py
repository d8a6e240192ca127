#!/usr/bin/env python3
"""Self-tests of the kinds' parity tools (run by parity/run-kinds before anything else):
trace.py's default output is what parity/run has always replayed, its v2 columns leave keys and
times alone, and compare_kinds.py passes equal runs and fails every kind of difference.

Standard library only: `python3 parity/test_kinds_tools.py`.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
# sha256 of `trace.py OUT` (40,000 events) as parity/run has replayed it since before trace v2.
DEFAULT_TRACE_SHA256 = "69d63cb3ce3033206108a0a31cf05e0db2e80922dcdbae61de75fe055c5942a9"


def run(*args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True)


class TraceTest(unittest.TestCase):
    def test_default_output_unchanged(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "t.csv")
            self.assertEqual(run(os.path.join(HERE, "trace.py"), out).returncode, 0)
            with open(out, "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), DEFAULT_TRACE_SHA256)

    def test_v2_columns_and_same_keys_and_times(self):
        with tempfile.TemporaryDirectory() as d:
            v1, v2 = os.path.join(d, "v1.csv"), os.path.join(d, "v2.csv")
            run(os.path.join(HERE, "trace.py"), "--events", "2000", "--users", "50", v1)
            r = run(os.path.join(HERE, "trace.py"), "--v2", "--events", "2000", "--users", "50",
                    "--value-size", "8-64", "--right-share", "0.5", v2)
            self.assertEqual(r.returncode, 0, r.stderr)
            rows1 = [line.split(",") for line in open(v1).read().split()]
            rows2 = [line.split(",") for line in open(v2).read().split()]
            self.assertEqual([r[:2] for r in rows1], [r[:2] for r in rows2])
            sizes = {int(r[3]) for r in rows2}
            self.assertTrue(min(sizes) >= 8 and max(sizes) <= 64 and len(sizes) > 20)
            inputs = [int(r[4]) for r in rows2]
            self.assertTrue(all(r[2] == r[4] for r in rows2), "partition = input")
            self.assertTrue(800 < sum(inputs) < 1200)

    def test_bad_value_size_refused(self):
        r = run(os.path.join(HERE, "trace.py"), "--v2", "--value-size", "9-3", "/dev/null")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--value-size", r.stderr)


FLINK = {
    "job": {"events": 10, "gets": 7, "puts": 5, "deletes": 1, "merges": 3, "timers_fired": 2},
    "tickers": {"NUMBER_KEYS_READ": 7, "NUMBER_KEYS_WRITTEN": 12, "NUMBER_DB_SEEK": 4, "NUMBER_DB_NEXT": 6},
    "column_families": {"s": {"gets": 7}},
}
REPORT = {"segments": [{
    "summary": {"events": 10, "rocksdb_keys_read": 7, "rocksdb_keys_written": 12, "gets": 7, "puts": 5,
                "deletes": 1, "timers_fired": 2},
    "snapshots": [{"ops": {"merges": 3, "iterator_seeks": 4, "iterator_nexts": 6},
                   "rocksdb": {"tickers": {"iterator_seeks": 4, "iterator_nexts": 6}}}],
}]}
RESULTS = "user-0,fired,2\nuser-0,digest,-5\nuser-1,fired,1\n"


class CompareTest(unittest.TestCase):
    def compare(self, flink=FLINK, report=REPORT, flink_results=RESULTS, sb_results=RESULTS, options=None,
                extra=()):
        """options: (Flink's OPTIONS text, statebench's), or None for no OPTIONS files."""
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "f"))
            extra = list(extra)
            if options is not None:
                with open(os.path.join(d, "f", "flink.OPTIONS"), "w") as f:
                    f.write(options[0])
                with open(os.path.join(d, "s.OPTIONS"), "w") as f:
                    f.write(options[1])
                extra += ["--statebench-options", os.path.join(d, "s.OPTIONS")]
            with open(os.path.join(d, "f", "flink.json"), "w") as f:
                json.dump(flink, f)
            with open(os.path.join(d, "f", "flink-results.csv"), "w") as f:
                f.write(flink_results)
            with open(os.path.join(d, "r.json"), "w") as f:
                json.dump(report, f)
            with open(os.path.join(d, "s.csv"), "w") as f:
                f.write(sb_results)
            return run(os.path.join(HERE, "compare_kinds.py"), "--name", "t", "--flink", os.path.join(d, "f"),
                       "--report", os.path.join(d, "r.json"), "--statebench-results", os.path.join(d, "s.csv"), *extra)

    def test_equal_passes(self):
        r = self.compare()
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("PASS (t)", r.stdout)

    def test_each_counter_difference_fails(self):
        for path in [("summary", "rocksdb_keys_written"), ("summary", "gets"), ("summary", "timers_fired"),
                     ("ops", "merges"), ("ops", "iterator_seeks"), ("ops", "iterator_nexts"),
                     ("tickers", "iterator_seeks"), ("tickers", "iterator_nexts")]:
            report = json.loads(json.dumps(REPORT))
            seg = report["segments"][0]
            last = seg["snapshots"][-1]
            where = {"summary": seg["summary"], "ops": last["ops"], "tickers": last["rocksdb"]["tickers"]}[path[0]]
            where[path[1]] += 1
            r = self.compare(report=report)
            self.assertEqual(r.returncode, 1, f"{path}: {r.stdout}")
            self.assertIn("FAIL", r.stdout)

    def test_missing_figure_fails(self):
        report = json.loads(json.dumps(REPORT))
        del report["segments"][0]["snapshots"][-1]["ops"]["merges"]
        r = self.compare(report=report)
        self.assertEqual(r.returncode, 1)
        self.assertIn("does not report", r.stdout)

    def test_result_difference_fails(self):
        r = self.compare(sb_results=RESULTS.replace("user-0,digest,-5", "user-0,digest,-6"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("result differs: user-0 digest", r.stdout)
        r = self.compare(sb_results=RESULTS + "user-2,fired,1\n")
        self.assertEqual(r.returncode, 1)

    def test_heap_timers_allow_no_timer_entries(self):
        # FLINK/REPORT write 12 keys: 5 puts + 1 delete + 3 merges + 3 timer-queue entries.
        r = self.compare(extra=["--heap-timers"])
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("HEAP timers", r.stdout)
        flink = json.loads(json.dumps(FLINK))
        flink["tickers"]["NUMBER_KEYS_WRITTEN"] = 9
        report = json.loads(json.dumps(REPORT))
        report["segments"][0]["summary"]["rocksdb_keys_written"] = 9
        r = self.compare(flink=flink, report=report, extra=["--heap-timers"])
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_chain_operators_compared_where_statebench_reports_them(self):
        flink = json.loads(json.dumps(FLINK))
        flink["operators"] = [
            {"index": 0, "kind": "dedup", "emitted": 4, "job": {"events": 10, "gets": 7, "puts": 5, "deletes": 1,
                                                              "merges": 0, "timers_fired": 0}},
            {"index": 1, "kind": "window", "emitted": 2, "job": {"events": 4, "gets": 0, "puts": 0, "deletes": 0,
                                                               "merges": 3, "timers_fired": 2}}]
        r = self.compare(flink=flink)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("statebench: not reported", r.stdout)
        report = json.loads(json.dumps(REPORT))
        report["segments"][0]["summary"]["operators"] = [
            {"index": 0, "kind": "dedup", "events_in": 10, "emitted": 4, "ops": {"gets": 7, "puts": 5, "deletes": 1,
                                                                              "merges": 0}, "timers_fired": 0},
            {"index": 1, "kind": "window", "events_in": 4, "emitted": 2, "ops": {"gets": 0, "puts": 0, "deletes": 0,
                                                                              "merges": 3}, "timers_fired": 2}]
        r = self.compare(flink=flink, report=report)
        self.assertEqual(r.returncode, 0, r.stdout)
        report["segments"][0]["summary"]["operators"][1]["emitted"] = 3
        r = self.compare(flink=flink, report=report)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("op1 (window): records emitted", r.stdout)

    def test_column_family_order_compared(self):
        flink = '[CFOptions "default"]\n[CFOptions "seen"]\n[CFOptions "_timer_state/processing_t"]\n' \
                '[CFOptions "_timer_state/event_t"]\n'
        r = self.compare(options=(flink, flink))
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("creation order (op0)", r.stdout)
        swapped = flink.replace("processing_t", "X").replace("event_t", "processing_t").replace("X", "event_t")
        r = self.compare(options=(flink, swapped))
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("column families, creation order (op0)", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=1)
