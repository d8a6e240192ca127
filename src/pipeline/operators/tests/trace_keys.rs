//! Every operator kind keys a replayed trace's records by the trace's own key strings: the
//! state and timer keys RocksDB holds carry the String as Flink's `StringSerializer` writes it,
//! in the key group of its `hashCode`; timers fire for the right keys (read back from their
//! timer keys, non-ASCII too), and every result equals the oracle's.

use std::collections::HashMap;
use std::sync::Arc;

use super::super::{CfRole, JobMode, build, oracle};
use super::kit::{self as testkit, Rig};
use crate::backend::keys::{self, KEY_GROUP_PREFIX_BYTES};
use crate::config::Workload;
use crate::durability::delivery::Delivery;
use crate::durability::sink::MemorySink;
use crate::pipeline::source::{Event, TraceKeys};

/// UUIDs, as a dedup of event ids keys by: 36 chars, 37 bytes serialized.
fn uuid_keys(n: u64) -> Vec<String> {
    (0..n)
        .map(|i| {
            let a = super::splitmix64(i);
            let b = super::splitmix64(a);
            format!(
                "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
                a >> 32,
                (a >> 16) & 0xffff,
                a & 0xfff,
                (b >> 48) & 0x3fff | 0x8000,
                b & 0xffff_ffff_ffff
            )
        })
        .collect()
}

/// Keys with chars of two and three bytes in Flink's encoding, and a surrogate pair.
fn non_ascii_keys(n: u64) -> Vec<String> {
    (0..n)
        .map(|i| match i % 4 {
            0 => format!("注文-{i}"),
            1 => format!("Zürich-{i}"),
            2 => format!("😀{i}"),
            _ => format!("héllo €{i}"),
        })
        .collect()
}

/// `job` (YAML of a `job:` section; None: the frequency counter of `smoke`) with a trace's
/// keys: what `commands::Job::load` gives the engine for a workload with a `trace:`.
fn traced(job: Option<&str>, names: &[String]) -> Workload {
    let mut w = match job {
        Some(job) => testkit::workload(job, names.len() as u64),
        None => {
            let mut w = Workload::load("smoke").unwrap();
            w.spec.keys.count = names.len() as u64;
            w
        }
    };
    w.trace_keys = Some(Arc::new(TraceKeys::new(names.to_vec())));
    w
}

const KINDS: [Option<&str>; 7] = [
    None,
    Some("{kind: dedup, keep: first, ttl: 20m}"),
    Some("{kind: aggregate, function: aggregate}"),
    Some("{kind: window, assigner: session, gap: 2m, function: aggregate}"),
    Some("{kind: window, assigner: tumbling, size: 1m, function: reduce}"),
    Some("{kind: interval-join, lower: -2m, upper: 1m}"),
    Some(
        "{kind: process, states: [{name: v, type: value, value-size: 16}, {name: m, type: map, value-size: 8, key-space: 5}], on-event: [{action: update, state: v}, {action: map-put, state: m, p: 0.5}, {action: timer, after: 2m, p: 0.3}], on-timer: [{action: get, state: v}, {action: clear, state: m}]}",
    ),
];

/// What RocksDB holds of one key string: its key group and serialized bytes.
struct Seen {
    state_keys: u64,
    timer_keys: u64,
}

/// Every key of every column family of `rig`: each names one of `names`, in the key group of
/// its String and with its exact serialized bytes right after the key-group prefix (a state
/// key) or the timestamp (a timer key).
fn check_keys(rig: &Rig, names: &HashMap<String, ()>, what: &str) -> Seen {
    let mut seen = Seen {
        state_keys: 0,
        timer_keys: 0,
    };
    for cf in &rig.layout.cfs {
        let start = match cf.role {
            CfRole::State { .. } => KEY_GROUP_PREFIX_BYTES,
            CfRole::EventTimers | CfRole::ProcessingTimers => KEY_GROUP_PREFIX_BYTES + 8,
        };
        for key in testkit::keys(rig, &cf.name) {
            let (name, used) = keys::read_string(&key[start..])
                .unwrap_or_else(|| panic!("{what}: {}: no String key in {key:02x?}", cf.name));
            assert!(
                names.contains_key(name.as_ref()),
                "{what}: {}: key '{name}' is not one of the trace's",
                cf.name
            );
            let mut bytes = Vec::new();
            keys::write_string(&mut bytes, &name);
            assert_eq!(&key[start..start + used], &bytes[..], "{what}: {name}");
            let group = u16::from_be_bytes([key[0], key[1]]);
            assert_eq!(group, keys::key_group(&name), "{what}: key group of {name}");
            match cf.role {
                CfRole::State { .. } => seen.state_keys += 1,
                _ => seen.timer_keys += 1,
            }
        }
    }
    seen
}

/// Runs `events` through the workload's operator against its oracle (a watermark every 16
/// records), checks RocksDB's keys before the final watermark fires the timers left, and
/// returns what it saw and the results compared (all exact).
fn run(w: &Workload, events: &[Event], what: &str) -> (Seen, u64) {
    let rig = Rig::with_workload(w.clone());
    let sink = MemorySink::new(w.result_labels());
    let mut ctx = super::Context::new(
        &rig.backend,
        &rig.layout,
        Delivery::passthrough(Box::new(sink)),
    )
    .unwrap();
    let mut op = build(&rig.backend, w, 0, JobMode::Streaming).unwrap();
    let mut truth = oracle(w);
    let (mut now, mut wm) = (i64::MIN, i64::MIN);
    for (i, e) in events.iter().enumerate() {
        now = now.max(e.event_time);
        ctx.set_now(now);
        truth.on_event(e, now);
        op.on_event(e, &mut ctx).unwrap();
        if i % 16 == 15 && now - 1_000 > wm {
            wm = now - 1_000;
            ctx.advance_watermark(op.as_mut(), wm).unwrap();
            truth.on_watermark(wm);
        }
    }
    ctx.flush_timers().unwrap();
    let names: HashMap<String, ()> = match &w.trace_keys {
        Some(k) => (0..k.len() as u64)
            .map(|id| (k.name(id).unwrap().to_string(), ()))
            .collect(),
        None => HashMap::new(),
    };
    let seen = check_keys(&rig, &names, what);
    let (_, fired_before) = ctx.timer_counts();
    ctx.advance_watermark(op.as_mut(), i64::MAX).unwrap();
    let (registered, fired) = ctx.timer_counts();
    if seen.timer_keys > 0 {
        assert!(
            fired > fired_before,
            "{what}: the final watermark fires timers"
        );
        assert!(registered > 0);
    }
    let results = ctx.sink.sink_mut().read_all().unwrap();
    let compared = results.len() as u64;
    let error = truth.all_expired().compare(results);
    assert!(error.is_exact(), "{what}: {error:?}");
    (seen, compared)
}

#[test]
fn every_kind_keys_a_trace_by_its_own_uuid_and_non_ascii_keys() {
    for (set, names) in [("uuid", uuid_keys(60)), ("non-ascii", non_ascii_keys(60))] {
        assert_eq!(
            names.iter().collect::<std::collections::HashSet<_>>().len(),
            60
        );
        for job in KINDS {
            let w = traced(job, &names);
            let events = testkit::events(&w, 3_000);
            let what = format!("{set} keys, job {}", job.unwrap_or("frequency"));
            let (seen, compared) = run(&w, &events, &what);
            assert!(seen.state_keys > 0, "{what}: no state keys");
            assert!(compared > 0, "{what}: no results");
            // Every kind but aggregate keeps timers (dedup with TTL has none either).
            let timers = job
                .is_none_or(|j| j.contains("window") || j.contains("join") || j.contains("timer"));
            assert_eq!(seen.timer_keys > 0, timers, "{what}: timer keys");
        }
    }
}

/// The old keying (`user-N` whatever the trace) stored other bytes: what the test above
/// checks fails on it.
#[test]
fn generated_keys_are_not_the_traces() {
    let names = uuid_keys(20);
    let trace: HashMap<String, ()> = names.iter().map(|n| (n.clone(), ())).collect();
    let mut w = traced(Some("{kind: aggregate, function: aggregate}"), &names);
    w.trace_keys = None;
    let rig = Rig::with_workload(w.clone());
    rig.run_against_oracle(&testkit::events(&w, 500));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        check_keys(&rig, &trace, "user-N")
    }));
    assert!(result.is_err(), "user-N keys pass as the trace's");
}

/// A key's bytes and key group are its String's: a UUID is 37 bytes after the key group
/// (`user-7` would be 7) and most land in another key group than their `user-N`.
#[test]
fn uuid_keys_are_37_bytes_in_their_own_key_groups() {
    let names = uuid_keys(200);
    let w = traced(Some("{kind: aggregate}"), &names);
    let rig = Rig::with_workload(w.clone());
    rig.run_against_oracle(&testkit::events(&w, 2_000));
    let state = testkit::keys(&rig, "_op_state");
    assert!(!state.is_empty());
    for key in &state {
        // key group (2), the UUID (1 + 36), VoidNamespace (1)
        assert_eq!(key.len(), 2 + 37 + 1, "{key:02x?}");
    }
    let moved = (0..200u64)
        .filter(|id| {
            keys::key_group(&names[*id as usize]) != keys::key_group(&format!("user-{id}"))
        })
        .count();
    assert!(moved > 180, "only {moved} of 200 keys change key group");
}
