//! With a correct configuration the serving store and the state equal the oracle exactly, for
//! random workloads: skewed keys, out-of-order and late events, idle partitions with idleness set,
//! bounded and unbounded sources, both serializers.

use proptest::prelude::*;
use statebench::config::workload::{Distribution, SerializerKind};
use statebench::config::{Millis, Profile, Workload};
use statebench::engine::{self, EngineConfig};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn sink_and_state_equal_the_oracle(
        keys in 50u64..400,
        zipf in proptest::bool::ANY,
        partitions in 1u32..6,
        idle in proptest::bool::ANY,
        out_of_orderness_s in 0u64..30,
        late_fraction in prop_oneof![Just(0.0), 0.0f64..0.05],
        bounded in proptest::bool::ANY,
        generic in proptest::bool::ANY,
        seed in any::<u64>(),
        events in 500u64..4_000,
    ) {
        let mut w = Workload::load("smoke").unwrap();
        w.spec.keys.count = keys;
        if zipf {
            w.spec.keys.distribution = Distribution::Zipf;
            w.spec.keys.zipf_exponent = Some(1.1);
        }
        w.spec.partitions = partitions;
        // Idleness always on: with few users a partition may get none.
        w.spec.idleness = Some(Millis(60_000));
        if idle && partitions > 1 {
            w.spec.idle_partitions = vec![partitions - 1];
        }
        w.spec.event_time.out_of_orderness = Millis(out_of_orderness_s * 1000);
        w.spec.event_time.late_fraction = late_fraction;
        w.spec.bounded_end_delay = bounded.then_some(Millis(2_000));
        w.spec.serializer = if generic { SerializerKind::Generic } else { SerializerKind::Compact };
        w.spec.seed = seed;
        // Dense event time so that windows expire within a short run.
        w.spec.events = events;
        w.spec.event_time.span = Millis(events * 500);
        let w = Workload::from_spec("random", "proptest", w.spec).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load("minutes-wbm-starved").unwrap();
        let outcome = engine::run_to_completion(EngineConfig {
            events,
            ..EngineConfig::new(w, profile, dir.path())
        }).unwrap();
        prop_assert!(outcome.result_error.is_exact(), "sink: {:?}", outcome.result_error);
        prop_assert!(outcome.state_error.is_exact(), "state: {:?}", outcome.state_error);
        let last = outcome.snapshots.last().unwrap();
        prop_assert!(last.pipeline.timers_fired > 0, "windows must expire in the run");
        if late_fraction > 0.02 && events > 2_000 {
            prop_assert!(last.pipeline.late_events > 0, "late events were generated");
        }
        prop_assert!(last.pipeline.sink.writes > last.pipeline.job.increments, "every +1 and every -1 is written");
        if bounded {
            prop_assert_eq!(last.pipeline.watermark, i64::MAX);
            // Read to its end, a bounded run has one right answer: every window expired.
            let end = outcome.end_of_input_error.expect("a bounded run read to its end");
            prop_assert!(end.is_exact(), "vs end of input: {:?}", end);
        } else {
            prop_assert!(outcome.end_of_input_error.is_none());
        }
    }
}

/// A run long enough for several comparisons while it goes: after the first (a full read of
/// the store) each compares only what changed, and every one, the last included, is exact and
/// covers every count the store holds.
#[test]
fn comparisons_during_a_run_are_exact() {
    let mut w = Workload::load("smoke").unwrap();
    w.spec.sample_interval = Millis(50);
    let dir = tempfile::tempdir().unwrap();
    let outcome = engine::run_to_completion(EngineConfig {
        events: 40_000,
        ..EngineConfig::new(w, Profile::load("flink-default").unwrap(), dir.path())
    })
    .unwrap();
    let during: Vec<_> = outcome
        .snapshots
        .iter()
        .filter_map(|s| s.pipeline.result_error)
        .collect();
    assert!(
        during.len() >= 3,
        "{} comparisons during the run",
        during.len()
    );
    for e in &during {
        assert!(e.is_exact(), "{e:?}");
    }
    // The store only grows: each comparison covers at least the counts the one before did.
    for pair in during.windows(2) {
        assert!(pair[1].compared >= pair[0].compared, "{during:?}");
    }
    assert!(
        outcome.result_error.is_exact(),
        "{:?}",
        outcome.result_error
    );
    // The final state holds every pair whose count is above zero; the store holds those and
    // the pairs counted down to zero since.
    let nonzero = outcome
        .final_state
        .iter()
        .filter(|(_, _, c)| *c > 0)
        .count() as u64;
    assert!(outcome.result_error.compared >= nonzero);
}
