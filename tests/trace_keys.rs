//! A replayed trace's records are keyed by the trace's own key strings, end to end through the
//! same `run` the binary calls (docs/trace.md, "Keys"): RocksDB's state and timer keys carry
//! the Strings as Flink serializes them (read back from the run's database), the results name
//! them and equal the oracle's, and against the same trace keyed `user-N` (the old keying) the
//! operation counts are equal while the key bytes are not.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use clap::Parser;
use rocksdb::{DB, IteratorMode, Options};
use statebench::backend::keys::{self, KEY_GROUP_PREFIX_BYTES};
use statebench::cli::Cli;

fn run(args: &[&str]) {
    let mut argv = vec!["statebench"];
    argv.extend_from_slice(args);
    statebench::run(Cli::try_parse_from(argv).unwrap()).unwrap();
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// SplitMix64: the trace's deterministic draws.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 60 UUIDs (event ids, as a dedup keys by), 30 CJK keys, 30 with an emoji (a surrogate pair)
/// and a two-byte char.
fn trace_keys() -> Vec<String> {
    (0..120u64)
        .map(|i| {
            let (a, b) = (mix(i), mix(i + 1000));
            match i % 4 {
                0 | 1 => format!(
                    "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
                    a >> 32,
                    (a >> 16) & 0xffff,
                    a & 0xfff,
                    (b >> 48) & 0x3fff | 0x8000,
                    b & 0xffff_ffff_ffff
                ),
                2 => format!("注文-{i}"),
                _ => format!("😀Zürich-{i}"),
            }
        })
        .collect()
}

/// 3,000 records of the keys (or of `rename`'s names for them), 0-2 s out of order, as JSON
/// Lines.
fn write_trace(path: &Path, names: &[String], rename: Option<&dyn Fn(usize) -> String>) {
    let mut text = String::new();
    let mut t = 1_767_225_600_000i64;
    for i in 0..3_000u64 {
        let k = (mix(i ^ 0xabc) % names.len() as u64) as usize;
        t += (mix(i ^ 0xdef) % 900) as i64;
        let key = match rename {
            Some(f) => f(k),
            None => names[k].clone(),
        };
        let time = t - (mix(i) % 2_000) as i64;
        let size = 8 + mix(i ^ 0x123) % 56;
        text.push_str(&format!(
            "{{\"key\": {}, \"event_time\": {time}, \"value_size\": {size}}}\n",
            serde_json::Value::String(key)
        ));
    }
    std::fs::write(path, text).unwrap();
}

/// Each key's id in order of first appearance in the trace (as the trace numbers them).
fn first_appearance(path: &Path) -> Vec<String> {
    let mut seen = Vec::new();
    let mut set = HashSet::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let k = v["key"].as_str().unwrap().to_string();
        if set.insert(k.clone()) {
            seen.push(k);
        }
    }
    seen
}

const JOBS: [(&str, &str); 2] = [
    (
        "session-aggregate",
        "job:\n  kind: window\n  assigner: session\n  gap: 1m\n  function: aggregate\n",
    ),
    ("frequency", "windows: [1m, 5m]\ntimer-state-ttl: 1d\n"),
];

struct Ran {
    summary: serde_json::Value,
    /// `key,label,value` lines of --final-counts by key.
    results: BTreeMap<String, Vec<String>>,
    /// (column family, key) of every key in the run's database.
    db_keys: Vec<(String, Vec<u8>)>,
}

fn run_job(dir: &Path, name: &str, job: &str, trace: &Path) -> Ran {
    let workload = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &workload,
        format!(
            "keys:\n  count: 120\npartitions: 2\nevent-time:\n  span: 45m\n  out-of-orderness: 3s\n{job}events: 3000\ntrace: {}\n",
            s(trace)
        ),
    )
    .unwrap();
    let data = dir.join(format!("{name}-data"));
    let report = dir.join(format!("{name}.json"));
    let counts = dir.join(format!("{name}.csv"));
    run(&[
        "run",
        "-w",
        &s(&workload),
        "--quiet",
        "--data-dir",
        &s(&data),
        "--report",
        &s(&report),
        "--final-counts",
        &s(&counts),
    ]);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let mut results: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in std::fs::read_to_string(&counts).unwrap().lines() {
        let mut f = line.rsplitn(3, ',');
        let (value, label, key) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        results
            .entry(key.to_string())
            .or_default()
            .push(format!("{label},{value}"));
    }
    let db_path = data.join("db");
    let cfs = DB::list_cf(&Options::default(), &db_path).unwrap();
    let db = DB::open_cf_for_read_only(&Options::default(), &db_path, &cfs, false).unwrap();
    let mut db_keys = Vec::new();
    for cf in &cfs {
        let handle = db.cf_handle(cf).unwrap();
        for kv in db.iterator_cf(handle, IteratorMode::Start) {
            db_keys.push((cf.clone(), kv.unwrap().0.to_vec()));
        }
    }
    Ran {
        summary: json["segments"][0]["summary"].clone(),
        results,
        db_keys,
    }
}

/// The String key in a state key (after the key group) or a timer key (after the timestamp),
/// checked to be in the key group of its String with its exact serialized bytes.
fn key_of(cf: &str, key: &[u8]) -> String {
    let start = if cf.starts_with("_timer_state/") {
        KEY_GROUP_PREFIX_BYTES + 8
    } else {
        KEY_GROUP_PREFIX_BYTES
    };
    let (name, used) = keys::read_string(&key[start..])
        .unwrap_or_else(|| panic!("{cf}: no String key in {key:02x?}"));
    let mut bytes = Vec::new();
    keys::write_string(&mut bytes, &name);
    assert_eq!(&key[start..start + used], &bytes[..], "{cf}: {name}");
    assert_eq!(
        u16::from_be_bytes([key[0], key[1]]),
        keys::key_group(&name),
        "{cf}: the key group of '{name}'"
    );
    name.into_owned()
}

#[test]
fn a_trace_is_keyed_by_its_own_strings_in_rocksdb_and_results() {
    let dir = tempfile::tempdir().unwrap();
    let names = trace_keys();
    let own = dir.path().join("own.jsonl");
    write_trace(&own, &names, None);
    let order = first_appearance(&own);
    // The same records keyed as the old replay keyed them: `user-N`, N in order of first
    // appearance.
    let ids: std::collections::HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    let generated = dir.path().join("generated.jsonl");
    let rename = |k: usize| format!("user-{}", ids[names[k].as_str()]);
    write_trace(&generated, &names, Some(&rename));
    let trace: HashSet<&str> = names.iter().map(String::as_str).collect();

    for (job, spec) in JOBS {
        let a = run_job(dir.path(), &format!("{job}-own"), spec, &own);
        let b = run_job(dir.path(), &format!("{job}-generated"), spec, &generated);
        for (ran, what) in [(&a, "own"), (&b, "user-N")] {
            for k in ["over", "under", "missing"] {
                assert_eq!(ran.summary["result_error"][k], 0, "{job} {what}: {k}");
            }
        }

        // RocksDB's state and timer keys hold the trace's Strings.
        assert!(!a.db_keys.is_empty(), "{job}: an empty database");
        let mut state_keys = HashSet::new();
        for (cf, key) in &a.db_keys {
            let name = key_of(cf, key);
            assert!(trace.contains(name.as_str()), "{job}: {cf}: '{name}'");
            state_keys.insert(name);
        }
        assert!(
            state_keys.iter().any(|k| !k.is_ascii()) && state_keys.iter().any(|k| k.len() == 36),
            "{job}: UUID and non-ASCII keys in state"
        );
        // The old keying stored `user-N`: the check above fails on it.
        for (cf, key) in &b.db_keys {
            let name = key_of(cf, key);
            assert!(name.starts_with("user-"), "{job}: {cf}: '{name}'");
            assert!(!trace.contains(name.as_str()));
        }

        // The results name the trace's keys; renamed back they are the user-N run's, so the
        // timers fired for the right keys.
        assert!(
            a.results.keys().all(|k| trace.contains(k.as_str())),
            "{job}"
        );
        let renamed: BTreeMap<String, Vec<String>> = a
            .results
            .iter()
            .map(|(k, v)| (format!("user-{}", ids[k.as_str()]), v.clone()))
            .collect();
        assert_eq!(renamed, b.results, "{job}");

        // One state key per trace key either way: the same state operations and timers, other
        // key bytes. (RocksDB's keys written may differ: Flink's RocksDBCachingPriorityQueueSet
        // skips the write of a timer already in its per-key-group cache, and which timers are
        // there follows the timer keys' byte order.)
        for k in ["gets", "puts", "deletes", "timers_fired"] {
            assert_eq!(a.summary[k], b.summary[k], "{job}: {k}");
        }
        let bytes = |r: &Ran| r.summary["user_bytes_written"].as_u64().unwrap();
        assert!(
            bytes(&a) > bytes(&b),
            "{job}: {} bytes written with the trace's keys, {} with user-N",
            bytes(&a),
            bytes(&b)
        );
    }
}

/// The generator's padded key length does not apply to a trace's own keys: an error, not
/// silently ignored.
#[test]
fn keys_size_with_a_trace_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    std::fs::write(&trace, "k-1,1000\n").unwrap();
    let workload = dir.path().join("w.yaml");
    std::fs::write(
        &workload,
        format!(
            "keys:\n  count: 10\n  size: 12\nevent-time:\n  span: 1m\n  out-of-orderness: 1s\nwindows: [1m]\nevents: 1\ntrace: {}\n",
            s(&trace)
        ),
    )
    .unwrap();
    let err = statebench::config::Workload::load(&s(&workload))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("'keys.size' cannot be combined with 'trace'"),
        "{err}"
    );
}

/// Non-ASCII and UUID keys across two failures, restored from checkpoints, with ROCKSDB and
/// HEAP timers (the heap's timers travel in the checkpoint as raw keyed state and are read
/// back as Strings): every timer fires once for its own key, the results stay exact.
#[test]
fn trace_keys_survive_failures_and_restores_with_either_timer_service() {
    use statebench::config::{Profile, Workload};
    use statebench::engine::{self, EngineConfig, FailureSpec};
    use statebench::pipeline::trace::Trace;

    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("own.jsonl");
    write_trace(&trace, &trace_keys(), None);
    for (job, spec) in JOBS {
        for timers in ["ROCKSDB", "HEAP"] {
            let yaml = dir.path().join(format!("{job}.yaml"));
            std::fs::write(
                &yaml,
                format!(
                    "keys:\n  count: 120\npartitions: 2\nrate: 2000\nevent-time:\n  span: 45m\n  out-of-orderness: 3s\n{spec}events: 3000\ntrace: {}\n",
                    s(&trace)
                ),
            )
            .unwrap();
            let mut w = Workload::load(&s(&yaml)).unwrap();
            let events = Trace::load_into(&mut w).unwrap();
            assert!(w.trace_keys.is_some() && events.is_some());
            let mut profile = Profile::load("flink-default").unwrap();
            for (k, v) in [
                ("timer-service.factory", timers),
                ("execution.checkpointing.interval", "50ms"),
                ("execution.checkpointing.incremental", "true"),
            ] {
                profile = profile.edited(k, v).unwrap();
            }
            let data = tempfile::tempdir().unwrap();
            let outcome = engine::run_to_completion(EngineConfig {
                events: 3_000,
                trace: events,
                failures: FailureSpec {
                    at_events: vec![1_000, 2_000],
                    ..FailureSpec::default()
                },
                ..EngineConfig::new(w, profile, data.path())
            })
            .unwrap();
            let what = format!("{job}, {timers} timers");
            assert!(
                outcome.result_error.is_exact(),
                "{what}: {:?}",
                outcome.result_error
            );
            assert!(outcome.result_error.compared > 0, "{what}");
            let restores = &outcome.checkpoints.as_ref().unwrap().restores;
            assert_eq!(restores.len(), 2, "{what}");
            assert!(
                restores.iter().any(|r| r.checkpoint.is_some()),
                "{what}: a restore from a completed checkpoint: {restores:?}"
            );
        }
    }
}
