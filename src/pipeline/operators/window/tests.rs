//! The window operator against hand-checked RocksDB call sequences, and against its oracle.

use super::*;
use crate::backend::AccessCounters;
use crate::config::Profile;
use crate::config::job::OperatorSpec;
use crate::durability::delivery::Delivery;
use crate::durability::sink::MemorySink;
use crate::pipeline::oracle::Oracle;

fn spec(yaml: &str) -> WindowSpec {
    let s: WindowSpec = serde_norway::from_str(yaml).unwrap();
    s.validate().unwrap();
    s
}

fn workload(spec: &WindowSpec) -> Workload {
    let mut w = Workload::load("smoke").unwrap();
    w.spec.job = Some(OperatorSpec::Window(spec.clone()).into());
    w
}

fn event(user: u64, event_time: i64, value_size: u32) -> Event {
    Event {
        user,
        event_time,
        partition: 0,
        offset: 0,
        append_time: event_time,
        value_size,
        input: 0,
    }
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Event(u64, i64, u32),
    Watermark(i64),
}

/// RocksDB calls of one step, the timer batch written out after it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Calls {
    gets: u64,
    puts: u64,
    deletes: u64,
    merges: u64,
    /// Timer-queue puts and deletes (write-batch entries).
    timer_writes: u64,
    seeks: u64,
}

fn calls(gets: u64, puts: u64, deletes: u64, merges: u64, timer_writes: u64) -> Calls {
    Calls {
        gets,
        puts,
        deletes,
        merges,
        timer_writes,
        seeks: 0,
    }
}

fn delta(before: &AccessCounters, after: &AccessCounters) -> Calls {
    Calls {
        gets: after.gets - before.gets,
        puts: after.puts - before.puts,
        deletes: after.deletes - before.deletes,
        merges: after.merges - before.merges,
        timer_writes: after.batch_entries - before.batch_entries,
        seeks: after.iterator_seeks - before.iterator_seeks,
    }
}

/// Runs `steps` through a window operator of `spec`; the calls of each step and the results
/// per key at the end (after a final `Long.MAX_VALUE` watermark when `finish`).
fn run(spec: &WindowSpec, steps: &[Step], finish: bool) -> (Vec<Calls>, HashMap<u64, Totals>) {
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::load("flink-default").unwrap();
    let layout = layout(spec);
    let backend = StateBackend::open_for(dir.path(), &profile, &layout).unwrap();
    let sink = Delivery::passthrough(Box::new(MemorySink::new(spec.result_labels())));
    let mut ctx = Context::new(&backend, &layout, sink).unwrap();
    let w = workload(spec);
    let mut op = WindowOperator::new(spec, &backend, &w).unwrap();
    let mut out = Vec::new();
    let mut steps: Vec<Step> = steps.to_vec();
    if finish {
        steps.push(Step::Watermark(i64::MAX));
    }
    for step in &steps {
        let before = ctx.state.counters;
        match *step {
            Step::Event(user, ts, size) => op.on_event(&event(user, ts, size), &mut ctx).unwrap(),
            Step::Watermark(wm) => ctx.advance_watermark(&mut op, wm).unwrap(),
        }
        ctx.flush_timers().unwrap();
        out.push(delta(&before, &ctx.state.counters));
    }
    (out, op.totals.clone())
}

fn totals(events: &[(i64, TimeWindow, i64, i64)]) -> Totals {
    let mut t = Totals::default();
    for (_, w, count, sum) in events {
        t.add(
            w,
            Summary {
                count: *count,
                sum: *sum,
            },
        );
    }
    t
}

#[test]
fn the_layout_is_flinks_column_families_in_creation_order() {
    let s = spec("assigner: session\ngap: 30m\nfunction: process\n");
    assert_eq!(
        layout(&s).names(),
        [
            "_timer_state/processing_window-timers",
            "_timer_state/event_window-timers",
            "window-contents",
            "merging-window-set"
        ]
    );
    assert!(matches!(
        layout(&s).cfs[2].role,
        CfRole::State { merge: true, .. }
    ));
    let s = spec("assigner: tumbling\nsize: 1m\nfunction: reduce\n");
    assert_eq!(layout(&s).cfs.len(), 3);
    assert!(matches!(
        layout(&s).cfs[2].role,
        CfRole::State { merge: false, .. }
    ));
}

#[test]
fn tumbling_reduce_reads_and_writes_per_element_and_fires_once() {
    let s = spec("assigner: tumbling\nsize: 10ms\nfunction: reduce\n");
    let (c, t) = run(
        &s,
        &[
            Step::Event(1, 5, 3),
            Step::Event(1, 7, 4),
            Step::Watermark(9),
        ],
        false,
    );
    // Element 1: get + put of the accumulator, the trigger's timer at 9 (the cleanup timer is
    // the same one: already in the cache, no second write).
    assert_eq!(c[0], calls(1, 1, 0, 0, 1));
    assert_eq!(c[1], calls(1, 1, 0, 0, 0));
    // The timer: out of the queue (a batch delete), FIRE (a get), cleanup (a delete); the
    // trigger's clear finds its key group empty: no delete.
    assert_eq!(c[2], calls(1, 0, 1, 0, 1));
    assert_eq!(t[&1], totals(&[(0, TimeWindow::new(0, 10), 2, 7)]));
}

#[test]
fn tumbling_process_appends_by_merge_and_reads_the_list_at_fire() {
    let s = spec("assigner: tumbling\nsize: 10ms\nfunction: process\n");
    let (c, t) = run(
        &s,
        &[
            Step::Event(1, 5, 3),
            Step::Event(1, 7, 4),
            Step::Watermark(9),
        ],
        false,
    );
    assert_eq!(c[0], calls(0, 0, 0, 1, 1));
    assert_eq!(c[1], calls(0, 0, 0, 1, 0));
    assert_eq!(c[2], calls(1, 0, 1, 0, 1));
    assert_eq!(t[&1], totals(&[(0, TimeWindow::new(0, 10), 2, 7)]));
}

#[test]
fn sliding_aggregate_works_every_window_and_deletes_a_fired_timer_again() {
    let s = spec("assigner: sliding\nsize: 10ms\nslide: 5ms\nfunction: aggregate\n");
    let (c, t) = run(
        &s,
        &[
            Step::Event(1, 7, 2),
            Step::Watermark(9),
            Step::Watermark(14),
        ],
        false,
    );
    // Windows [5, 15) and [0, 10): two read-modify-writes, two timers.
    assert_eq!(c[0], calls(2, 2, 0, 0, 2));
    // [0, 10) fires: the timer out of the queue, a get, the contents deleted, and
    // EventTimeTrigger.clear deletes the fired timer again: its key group still holds the
    // timer of [5, 15), so RocksDBCachingPriorityQueueSet.remove writes a delete.
    assert_eq!(c[1], calls(1, 0, 1, 0, 2));
    // [5, 15) fires: now the key group is empty, the second delete is skipped.
    assert_eq!(c[2], calls(1, 0, 1, 0, 1));
    assert_eq!(
        t[&1],
        totals(&[
            (0, TimeWindow::new(0, 10), 1, 2),
            (0, TimeWindow::new(5, 15), 1, 2)
        ])
    );
}

#[test]
fn allowed_lateness_fires_late_elements_at_once_and_cleans_up_later() {
    let s = spec("assigner: tumbling\nsize: 10ms\nfunction: aggregate\nallowed-lateness: 5ms\n");
    let (c, t) = run(
        &s,
        &[
            Step::Event(1, 5, 1),
            Step::Watermark(9),
            Step::Event(1, 6, 2),
            Step::Watermark(14),
            Step::Event(1, 3, 4),
        ],
        false,
    );
    // The trigger's timer at 9 and the cleanup timer at 14.
    assert_eq!(c[0], calls(1, 1, 0, 0, 2));
    // 9: FIRE, no cleanup.
    assert_eq!(c[1], calls(1, 0, 0, 0, 1));
    // A late element within the lateness: added, and FIRE at once (get); its cleanup timer is
    // already queued.
    assert_eq!(c[2], calls(2, 1, 0, 0, 0));
    // 14: no FIRE, cleanup (delete); the trigger's timer at 9 is gone already and the key group
    // is empty: no delete.
    assert_eq!(c[3], calls(0, 0, 1, 0, 1));
    // Past the cleanup time: dropped without touching RocksDB.
    assert_eq!(c[4], Calls::default());
    let w = TimeWindow::new(0, 10);
    assert_eq!(t[&1], totals(&[(0, w, 1, 1), (0, w, 2, 3)]));
}

fn bridging_steps() -> Vec<Step> {
    vec![
        Step::Event(1, 0, 1),
        Step::Event(1, 50, 2),
        // [25, 55) touches both [0, 30) and [50, 80): one session [0, 80).
        Step::Event(1, 25, 4),
        Step::Watermark(79),
    ]
}

#[test]
fn a_bridging_element_merges_two_aggregate_sessions() {
    let s = spec("assigner: session\ngap: 30ms\nfunction: aggregate\n");
    let (c, t) = run(&s, &bridging_steps(), false);
    // A new session: the merging window set read, the accumulator read and written, its timer,
    // the set written.
    assert_eq!(c[0], calls(2, 2, 0, 0, 1));
    assert_eq!(c[1], calls(2, 2, 0, 0, 1));
    // The merge: the set read; a timer for [0, 80); per merged window its trigger timer and
    // cleanup timer deleted (the same timer twice: two batch deletes each); mergeNamespaces
    // (a get + delete of the other state window, a get + put of the kept one); then the
    // element's get + put and the set written.
    assert_eq!(c[2], calls(4, 3, 1, 0, 5));
    // The session closes: its timer out of the queue; the set read; FIRE (get); cleanup
    // (delete); the set retired, written twice (now empty: two deletes).
    assert_eq!(c[3], calls(2, 0, 3, 0, 1));
    assert_eq!(t[&1], totals(&[(0, TimeWindow::new(0, 80), 3, 7)]));
}

#[test]
fn a_bridging_element_merges_two_process_sessions_by_list_merges() {
    let s = spec("assigner: session\ngap: 30ms\nfunction: process\n");
    let (c, t) = run(&s, &bridging_steps(), false);
    assert_eq!(c[0], calls(1, 1, 0, 1, 1));
    assert_eq!(c[1], calls(1, 1, 0, 1, 1));
    // mergeNamespaces of a list: a get + delete of the other state window and a merge of its
    // whole list into the kept one; then the element's merge.
    assert_eq!(c[2], calls(2, 1, 1, 2, 5));
    assert_eq!(c[3], calls(2, 0, 3, 0, 1));
    assert_eq!(t[&1], totals(&[(0, TimeWindow::new(0, 80), 3, 7)]));
}

#[test]
fn a_session_inside_another_merges_no_state() {
    let s = spec("assigner: session\ngap: 30ms\nfunction: reduce\n");
    let (c, t) = run(
        &s,
        &[
            Step::Event(1, 0, 1),
            Step::Event(1, 10, 1),
            Step::Event(1, 5, 1),
        ],
        true,
    );
    // [10, 40) extends [0, 30) to [0, 40): a merge with no state to move (the new window has
    // none); the old window's two timer deletes and the new window's timer.
    assert_eq!(c[1], calls(2, 2, 0, 0, 3));
    // [5, 35) lies inside [0, 40): no merge; the set unchanged, not written.
    assert_eq!(c[2], calls(2, 1, 0, 0, 0));
    assert_eq!(t[&1], totals(&[(0, TimeWindow::new(0, 40), 3, 3)]));
}

/// A small pseudo-random stream: keys 0..8, event time moving forward with disorder and a few
/// very late records, watermarks every 16 records.
fn random_steps(seed: u64, n: usize) -> Vec<Step> {
    let mut x = seed;
    let mut next = move || {
        x = crate::pipeline::operators::splitmix64(x);
        x
    };
    let mut steps = Vec::new();
    let mut time = 1_000i64;
    let mut max_seen = i64::MIN;
    for i in 0..n {
        time += (next() % 12) as i64;
        let disorder = (next() % 20) as i64;
        let late = if next() % 25 == 0 { 150 } else { 0 };
        let ts = time - disorder - late;
        max_seen = max_seen.max(ts);
        steps.push(Step::Event(next() % 8, ts, (next() % 50) as u32));
        if i % 16 == 15 {
            steps.push(Step::Watermark(max_seen - 10 - 1));
        }
    }
    steps
}

#[test]
fn the_oracle_equals_the_operator_for_every_assigner_function_and_lateness() {
    let assigners = [
        "assigner: tumbling\nsize: 100ms\n",
        "assigner: tumbling\nsize: 100ms\noffset: 30ms\n",
        "assigner: sliding\nsize: 100ms\nslide: 30ms\n",
        "assigner: session\ngap: 40ms\n",
    ];
    for assigner in assigners {
        for function in ["reduce", "aggregate", "process"] {
            for (lateness, evictor) in [
                ("0ms", ""),
                ("60ms", ""),
                ("0ms", "evictor:\n  count: 3\n"),
                ("60ms", "evictor:\n  count: 2\n"),
            ] {
                let s = spec(&format!(
                    "{assigner}function: {function}\nallowed-lateness: {lateness}\n{evictor}"
                ));
                for seed in 0..3 {
                    let steps = random_steps(seed, 600);
                    let (_, got) = run(&s, &steps, true);
                    let mut oracle = Oracle::with_model(3, Box::new(WindowTruth::new(&s).unwrap()));
                    for step in &steps {
                        match *step {
                            Step::Event(user, ts, size) => {
                                oracle.on_event(&event(user, ts, size), ts)
                            }
                            Step::Watermark(wm) => oracle.on_watermark(wm),
                        }
                    }
                    oracle.on_watermark(i64::MAX);
                    let results: Vec<(u64, usize, i64)> = got
                        .iter()
                        .flat_map(|(k, t)| {
                            [
                                (*k, SLOT_FIRED, t.fired),
                                (*k, SLOT_ELEMENTS, t.elements),
                                (*k, SLOT_DIGEST, t.digest),
                            ]
                        })
                        .collect();
                    let error = oracle.compare(results);
                    assert!(
                        error.is_exact(),
                        "{assigner:?} {function} lateness {lateness} {evictor:?} seed {seed}: {error:?}"
                    );
                    let fired: i64 = got.values().map(|t| t.fired).sum();
                    assert!(fired > 8, "windows must fire ({fired})");
                }
            }
        }
    }
}

/// A restore takes the totals (what Flink's downstream has summed) from the checkpoint, not from
/// the serving store: without exactly-once delivery the store holds results written after the
/// checkpoint, which the restored job emits again. Also when no window had fired at the
/// checkpoint (its results are empty: the totals start at zero).
#[test]
fn results_go_on_from_the_checkpoint_after_a_restore() {
    let s = spec("assigner: session\ngap: 40ms\nfunction: process\nallowed-lateness: 30ms\n");
    let steps = random_steps(7, 400);
    let (_, whole) = run(&s, &steps, true);
    // The store as a failed attempt left it: every result of the whole stream written.
    let mut written = Vec::new();
    for (key, t) in &whole {
        written.extend([
            (*key, SLOT_FIRED, t.fired),
            (*key, SLOT_ELEMENTS, t.elements),
            (*key, SLOT_DIGEST, t.digest),
        ]);
    }
    // Checkpoints before the first step, and after a watermark halfway.
    let half = (0..steps.len() / 2)
        .rev()
        .find(|i| matches!(steps[*i], Step::Watermark(_)))
        .unwrap()
        + 1;
    for split in [0, half] {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load("flink-default").unwrap();
        let layout = layout(&s);
        let backend = StateBackend::open_for(dir.path(), &profile, &layout).unwrap();
        let w = workload(&s);
        let (counters, results) = {
            let sink = Delivery::passthrough(Box::new(MemorySink::new(s.result_labels())));
            let mut ctx = Context::new(&backend, &layout, sink).unwrap();
            let mut op = WindowOperator::new(&s, &backend, &w).unwrap();
            drive(&mut op, &mut ctx, &steps[..split]);
            let op: &dyn KeyedOperator<Delivery> = &op;
            (op.counters(), op.results_snapshot())
        };
        assert_eq!(results.is_empty(), split == 0);
        let mut store = MemorySink::new(s.result_labels());
        for &(key, slot, value) in &written {
            crate::durability::sink::Sink::write(&mut store, key, slot, value).unwrap();
        }
        let mut ctx =
            Context::new(&backend, &layout, Delivery::passthrough(Box::new(store))).unwrap();
        let mut op = WindowOperator::new(&s, &backend, &w).unwrap();
        KeyedOperator::<Delivery>::restore_counters(&mut op, counters);
        KeyedOperator::<Delivery>::restore_results(&mut op, &results);
        if let Some(Step::Watermark(last)) = split.checked_sub(1).map(|i| steps[i]) {
            ctx.advance_watermark(&mut op, last).unwrap();
        }
        let mut rest = steps[split..].to_vec();
        rest.push(Step::Watermark(i64::MAX));
        drive(&mut op, &mut ctx, &rest);
        assert_eq!(op.totals, whole, "restored after step {split}");
    }
}

fn drive<'a>(op: &mut WindowOperator<'a>, ctx: &mut Context<'a, Delivery>, steps: &[Step]) {
    for step in steps {
        match *step {
            Step::Event(user, ts, size) => op.on_event(&event(user, ts, size), ctx).unwrap(),
            Step::Watermark(wm) => ctx.advance_watermark(op, wm).unwrap(),
        }
    }
    ctx.flush_timers().unwrap();
}

#[test]
fn a_count_evictor_reads_the_list_and_writes_back_what_it_keeps() {
    let s = spec("assigner: tumbling\nsize: 10ms\nfunction: aggregate\nevictor:\n  count: 2\n");
    let (c, t) = run(
        &s,
        &[
            Step::Event(1, 5, 1),
            Step::Event(1, 6, 2),
            Step::Event(1, 7, 4),
            Step::Watermark(9),
        ],
        false,
    );
    // EvictingWindowOperator: a list of StreamRecords whatever the function, a merge each.
    assert_eq!(c[0], calls(0, 0, 0, 1, 1));
    assert_eq!(c[2], calls(0, 0, 0, 1, 0));
    // FIRE: the list read, the first element evicted, the kept two written back (update: a
    // put), then the cleanup's delete.
    assert_eq!(c[3], calls(1, 1, 1, 0, 1));
    assert_eq!(t[&1], totals(&[(0, TimeWindow::new(0, 10), 2, 6)]));
    let s = spec("assigner: session\ngap: 30ms\nfunction: reduce\nevictor:\n  count: 2\n");
    assert_eq!(
        layout(&s).names()[2..],
        ["merging-window-set", "window-contents"],
        "EvictingWindowOperator.open creates its state after WindowOperator.open's"
    );
}
