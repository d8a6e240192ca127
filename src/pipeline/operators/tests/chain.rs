//! What each kind emits for the next operator of a chain equals what its truth model emits,
//! and chains run through their operators give exactly the chain oracle's results.

use super::kit::{Rig, chain_workload, events, run_chain};
use crate::pipeline::source::Event;

const PROCESS: &str = "{kind: process, states: [{name: v, type: value, value-size: 10}, \
    {name: l, type: list, value-size: 8}], on-event: [{action: get, state: v}, \
    {action: update, state: v, p: 0.5}, {action: append, state: l, p: 0.5}, \
    {action: timer, after: 3s, p: 0.3}], on-timer: [{action: get, state: l}, \
    {action: clear, state: l}]}";

/// Every single-operator spec whose emission is checked.
const KINDS: &[&str] = &[
    "{kind: dedup}",
    "{kind: dedup, ttl: 5s}",
    "{kind: dedup, keep: last}",
    "{kind: aggregate}",
    "{kind: aggregate, function: aggregate, ttl: 4s}",
    "{kind: window, assigner: tumbling, size: 5s, function: reduce}",
    "{kind: window, assigner: tumbling, size: 5s, function: aggregate, allowed-lateness: 3s}",
    "{kind: window, assigner: sliding, size: 10s, slide: 5s, function: process}",
    "{kind: window, assigner: session, gap: 2s, function: aggregate, allowed-lateness: 2s}",
    "{kind: window, assigner: session, gap: 2s, function: process, evictor: {count: 2}}",
    "{kind: window, assigner: sliding, size: 6s, slide: 2s, function: reduce, evictor: {count: 3}}",
    PROCESS,
    "{kind: interval-join, lower: -2s, upper: 3s}",
];

/// The workload of `job` alone: 40 keys, values of 1 to 64 bytes, 5 % late records.
fn alone(job: &str) -> crate::config::Workload {
    let mut w = chain_workload(&[job], 40);
    w.spec.event_time.late_fraction = 0.05;
    w.spec.event_time.out_of_orderness = crate::config::Millis(1_500);
    w
}

#[test]
fn every_kind_emits_what_its_truth_model_emits() {
    for job in KINDS {
        let w = alone(job);
        let rig = Rig::with_workload(w.clone());
        let steps = rig.emissions(&events(&w, 1_500));
        let mut emitted = 0;
        for (i, (got, want)) in steps.iter().enumerate() {
            assert_eq!(got, want, "{job}: step {i}");
            emitted += got.len();
        }
        assert!(emitted >= 40, "{job}: only {emitted} records emitted");
    }
}

/// The records' timestamps and sizes as Flink's operators collect them (DESIGN-CHAIN).
#[test]
fn emitted_records_carry_flinks_timestamps_and_sizes() {
    let all = |job: &str| -> (Vec<Event>, Vec<Event>) {
        let w = alone(job);
        let input = events(&w, 1_500);
        let rig = Rig::with_workload(w);
        let out = rig
            .emissions(&input)
            .into_iter()
            .flat_map(|s| s.0)
            .collect();
        (input, out)
    };
    // dedup keep-last: every record, as read.
    let (input, out) = all("{kind: dedup, keep: last}");
    let strip = |e: &Event| (e.user, e.event_time, e.value_size);
    assert_eq!(
        out.iter().map(strip).collect::<Vec<_>>(),
        input.iter().map(strip).collect::<Vec<_>>()
    );
    // aggregate: per element, the input's time; reduce: the Tuple3 (key "user-N", 2 longs).
    let (input, out) = all("{kind: aggregate}");
    assert_eq!(out.len(), input.len());
    for (i, o) in input.iter().zip(&out) {
        assert_eq!((o.user, o.event_time), (i.user, i.event_time));
        let key = format!("user-{}", i.user);
        assert_eq!(o.value_size, key.len() as u32 + 1 + 16, "{key}");
    }
    let (_, out) = all("{kind: aggregate, function: aggregate}");
    assert!(out.iter().all(|o| o.value_size == 16));
    // tumbling windows of 5 s: one record per fire at the window's max timestamp.
    let (_, out) = all("{kind: window, assigner: tumbling, size: 5s, function: aggregate}");
    assert!(!out.is_empty());
    assert!(
        out.iter()
            .all(|o| (o.event_time + 1) % 5_000 == 0 && o.value_size == 16)
    );
    // join: at the later time of the pair, both values' bytes.
    let (_, out) = all("{kind: interval-join, lower: -2s, upper: 3s}");
    assert!(!out.is_empty());
    // process: the input per element, 8 bytes per timer fired.
    let (input, out) = all(PROCESS);
    assert!(out.len() > input.len(), "timers fired");
    assert!(out.iter().any(|o| o.value_size == 8));
}

/// Chains of two (and three) operators run through the operators directly give exactly the
/// chain oracle's results for every operator.
#[test]
fn chains_run_through_their_operators_equal_the_chain_oracle() {
    let chains: &[&[&str]] = &[
        &[
            "{kind: dedup, ttl: 5s}",
            "{kind: window, assigner: session, gap: 3s, function: aggregate}",
        ],
        &[
            "{kind: window, assigner: tumbling, size: 5s, function: reduce}",
            "{kind: aggregate, function: aggregate}",
        ],
        &[
            "{kind: aggregate}",
            "{kind: window, assigner: sliding, size: 10s, slide: 5s, function: process, allowed-lateness: 2s}",
        ],
        &[PROCESS, "{kind: dedup, keep: last}"],
        &[
            "{kind: interval-join, lower: -2s, upper: 3s}",
            "{kind: window, assigner: tumbling, size: 4s, function: process, evictor: {count: 3}}",
        ],
        &[
            "{kind: dedup, keep: last}",
            "{kind: window, assigner: session, gap: 2s, function: reduce, allowed-lateness: 1s}",
            "{kind: aggregate, ttl: 3s, function: aggregate}",
        ],
    ];
    for jobs in chains {
        let mut w = chain_workload(jobs, 40);
        w.spec.event_time.late_fraction = 0.05;
        let input = events(&w, 1_500);
        let (error, compared, read) = run_chain(&w, &input);
        assert!(error.is_exact(), "{jobs:?}: {error:?}");
        assert!(compared > 40, "{jobs:?}: {compared} results");
        assert!(
            read.iter().skip(1).all(|n| *n > 20),
            "{jobs:?}: records read per operator {read:?}"
        );
        let labels = w.result_labels();
        assert!(
            labels[0].starts_with("op0.")
                && labels
                    .last()
                    .unwrap()
                    .starts_with(&format!("op{}.", jobs.len() - 1))
        );
    }
}

/// The shipped chain runs through its operators with exactly the oracle's results (the engine
/// runs it whole once chains are in the engine).
#[test]
fn the_shipped_chain_equals_its_oracle() {
    let w = crate::config::Workload::load("dedup-then-sessions").unwrap();
    assert_eq!(w.operators().len(), 2);
    let (error, compared, read) = run_chain(&w, &events(&w, 3_000));
    assert!(error.is_exact(), "{error:?}");
    assert!(
        compared > 100 && read[1] > 100,
        "{compared} results, {read:?} read"
    );
}
