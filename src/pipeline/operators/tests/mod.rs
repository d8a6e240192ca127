//! The operators' tests that span kinds: the rig every kind's tests use (`kit`), chains of
//! operators against their oracle, a trace's own key strings in state, and the layouts.

mod chain;
pub(super) mod kit;
mod trace_keys;

use super::*;

#[test]
fn mix_matches_the_java_definition() {
    // Computed with Java longs: mix(1767225600000L, 1767225660000L, 3L, 96L).
    assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
    let a = mix(1_767_225_600_000, 1_767_225_660_000, 3, 96);
    assert_eq!(a, mix(1_767_225_600_000, 1_767_225_660_000, 3, 96));
    assert_ne!(a, mix(1_767_225_600_000, 1_767_225_660_000, 96, 3));
}

#[test]
fn a_timer_service_creates_its_processing_time_queue_first() {
    // Flink 1.20.1's OPTIONS of a KeyedProcessOperator with ValueState "seen" (parity/run-kinds,
    // dedup-first): default, seen, _timer_state/processing_user-timers, _timer_state/event_user-timers.
    let layout = Layout::default()
        .state("seen", None, false)
        .timer_service("user-timers");
    assert_eq!(
        layout.names(),
        [
            "seen",
            "_timer_state/processing_user-timers",
            "_timer_state/event_user-timers"
        ]
    );
    assert_eq!(layout.cfs[1].role, CfRole::ProcessingTimers);
    assert_eq!(layout.cfs[2].role, CfRole::EventTimers);
    assert_eq!(
        layout.event_timers(),
        Some("_timer_state/event_user-timers")
    );
    assert_eq!(
        layout.processing_timers(),
        Some("_timer_state/processing_user-timers")
    );
}
