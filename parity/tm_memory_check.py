#!/usr/bin/env python3
"""TaskManager memory: statebench's derivation (src/config/tm_memory.rs) against Flink 1.20.1's own
calculator, `BashJavaUtils GET_TM_RESOURCE_PARAMS` (what Flink's taskmanager.sh runs before it
starts a TaskManager), for every configuration in SETTINGS.

For each: writes DIR/<name>/config.yaml, runs Flink's calculator on it (its `-D key=<bytes>b`
line), runs `statebench export -p flink-default --format flink --taskmanager-memory
DIR/<name>/config.yaml` (its `#   <key>  ...  (<bytes> bytes)` lines), and compares every size
byte for byte. Prints a table; exits non-zero on any difference.

  tm_memory_check.py --statebench BIN --java-classpath CP --work DIR [--config NAME=FILE ...]
  (--config: also a whole Flink configuration file as it is, e.g. one `export --into` merged)
  tm_memory_check.py --flink-only ...   prints Flink's values as the Rust table (tm_memory.rs)

Standard library only.
"""
import argparse
import os
import re
import subprocess
import sys

# name -> Flink configuration (keys as a user writes them in config.yaml).
SETTINGS = [
    ("default-1728m-4-slots", {"taskmanager.memory.process.size": "1728m", "taskmanager.numberOfTaskSlots": "4"}),
    ("process-4g-fraction-0.5", {"taskmanager.memory.process.size": "4g", "taskmanager.memory.managed.fraction": "0.5",
                                 "taskmanager.numberOfTaskSlots": "4"}),
    ("process-8g-managed-3g", {"taskmanager.memory.process.size": "8g", "taskmanager.memory.managed.size": "3g",
                               "taskmanager.numberOfTaskSlots": "4"}),
    ("flink-size-2g", {"taskmanager.memory.flink.size": "2g", "taskmanager.numberOfTaskSlots": "2"}),
    ("fine-grained-heap-1g-managed-2g", {"taskmanager.memory.task.heap.size": "1g",
                                         "taskmanager.memory.managed.size": "2g"}),
    ("process-16g-tuned-ranges", {"taskmanager.memory.process.size": "16g",
                                  "taskmanager.memory.jvm-overhead.max": "2g",
                                  "taskmanager.memory.jvm-overhead.fraction": "0.15",
                                  "taskmanager.memory.jvm-metaspace.size": "512m",
                                  "taskmanager.memory.network.fraction": "0.15",
                                  "taskmanager.memory.network.min": "128m",
                                  "taskmanager.memory.network.max": "2g",
                                  "taskmanager.numberOfTaskSlots": "8"}),
    ("process-1g-small", {"taskmanager.memory.process.size": "1g"}),
    ("process-6g-and-flink-5g", {"taskmanager.memory.process.size": "6g", "taskmanager.memory.flink.size": "5g"}),
    ("process-3000m-off-heap", {"taskmanager.memory.process.size": "3000m",
                                "taskmanager.memory.task.off-heap.size": "512m",
                                "taskmanager.memory.framework.off-heap.size": "256m",
                                "taskmanager.memory.managed.fraction": "0.35",
                                "taskmanager.numberOfTaskSlots": "3"}),
    ("process-32g-overhead-capped", {"taskmanager.memory.process.size": "32g", "taskmanager.numberOfTaskSlots": "16"}),
    ("flink-4g-task-heap-1g", {"taskmanager.memory.flink.size": "4g", "taskmanager.memory.task.heap.size": "1g"}),
    ("process-2g-deprecated-keys", {"taskmanager.memory.process.size": "2g", "taskmanager.memory.size": "700m",
                                    "taskmanager.network.memory.fraction": "0.2"}),
]

# Flink's -D keys, in the order tm_memory.rs's FLINK_TABLE lists them.
FIELDS = [
    "taskmanager.memory.framework.heap.size",
    "taskmanager.memory.task.heap.size",
    "taskmanager.memory.framework.off-heap.size",
    "taskmanager.memory.task.off-heap.size",
    "taskmanager.memory.network.min",
    "taskmanager.memory.network.max",
    "taskmanager.memory.managed.size",
    "taskmanager.memory.jvm-metaspace.size",
    "taskmanager.memory.jvm-overhead.min",
    "taskmanager.memory.jvm-overhead.max",
]
FLINK_D = re.compile(r"-D (taskmanager\.memory\.[a-z.-]+)=(\d+)b")
STATEBENCH = re.compile(r"^#\s+(taskmanager\.memory\.[a-z.-]+)\s.*\((\d+) bytes\)")


def flink_sizes(classpath, conf_dir):
    out = subprocess.run(
        ["java", "-cp", classpath, "org.apache.flink.runtime.util.bash.BashJavaUtils",
         "GET_TM_RESOURCE_PARAMS", "--configDir", conf_dir],
        capture_output=True, text=True)
    sizes = {}
    for line in out.stdout.splitlines():
        if line.startswith("BASH_JAVA_UTILS_EXEC_RESULT:-D"):
            sizes.update({k: int(v) for k, v in FLINK_D.findall(line)})
    if not sizes:
        sys.exit(f"Flink's calculator printed no sizes for {conf_dir}:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return sizes


def statebench_sizes(statebench, config):
    out = subprocess.run(
        [statebench, "export", "-p", "flink-default", "--format", "flink", "--taskmanager-memory", config],
        capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": out.stderr.strip()}
    sizes = {}
    for line in out.stdout.splitlines():
        m = STATEBENCH.match(line)
        if m:
            sizes[m.group(1)] = int(m.group(2))
    return sizes


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--statebench")
    p.add_argument("--java-classpath", required=True, help="bash-java-utils.jar and Flink's lib/*")
    p.add_argument("--work", required=True)
    p.add_argument("--flink-only", action="store_true")
    p.add_argument("--config", action="append", default=[], metavar="NAME=FILE",
                   help="a Flink configuration file compared as it is")
    a = p.parse_args()

    failed = []
    cases = [(name, conf, None) for name, conf in SETTINGS]
    for given in a.config:
        name, _, path = given.partition("=")
        cases.append((name, {"file": path}, path))
    for name, conf, path in cases:
        d = os.path.join(a.work, name)
        os.makedirs(d, exist_ok=True)
        config = os.path.join(d, "config.yaml")
        if path is not None:
            with open(path, encoding="utf-8") as src, open(config, "w", encoding="utf-8") as f:
                f.write(src.read())
        else:
            with open(config, "w", encoding="utf-8") as f:
                for k, v in conf.items():
                    f.write(f"{k}: {v}\n")
        flink = flink_sizes(a.java_classpath, d)
        if a.flink_only:
            if path is None:
                pairs = ", ".join(f'("{k}", "{v}")' for k, v in conf.items())
                values = ", ".join(str(flink[k]) for k in FIELDS if k not in (
                    "taskmanager.memory.network.max", "taskmanager.memory.jvm-overhead.max"))
                print(f"    (&[{pairs}], [{values}]),")
            continue
        sb = statebench_sizes(a.statebench, config)
        if "error" in sb:
            print(f"{name}: statebench failed: {sb['error']}")
            failed.append(name)
            continue
        print(f"== {name}: " + ", ".join(f"{k}: {v}" for k, v in conf.items()))
        bad = []
        for k in FIELDS:
            equal = flink.get(k) == sb.get(k)
            print(f"  {k:<44} Flink {flink.get(k)!s:>12}  statebench {sb.get(k)!s:>12}  {'yes' if equal else 'NO'}")
            if not equal:
                bad.append(k)
        if bad:
            failed.append(f"{name} ({', '.join(bad)})")
    if a.flink_only:
        return 0
    if failed:
        print("FAIL tm-memory: " + "; ".join(failed))
        return 1
    print(f"PASS tm-memory: {len(cases)} configurations, {len(FIELDS)} sizes each, equal to the byte")
    return 0


if __name__ == "__main__":
    sys.exit(main())
