//! The workload a job's evidence describes, so that the diagnosed profile can be run here (and
//! its fix A/B'd, tuned and exported): the operator kind from the column families' state names,
//! the key count from the live entries, the events from the bytes the memtables took, their rate
//! from the LOG's span. What a LOG cannot say (window lengths, the keys' skew, the event-time
//! span) comes from the shipped workload of the same kind, and the notes say so.

use std::collections::BTreeSet;

use super::Instance;
use crate::config::workload::{Distribution, Rate};
use crate::config::{Profile, Workload};
use crate::engine::{self, EngineConfig};

/// Events the calibration run reads to learn the bytes an event writes.
const CALIBRATION_EVENTS: u64 = 5_000;
/// The workload runs this many times the events the LOG accounts for: the history, then the
/// job going on (a LOG is a snapshot of a job that keeps running; what its state is about to do,
/// e.g. grow past a level's target, shows only then).
const GOING_ON: u64 = 2;
/// Bytes a memtable entry takes besides what the write batch carried (its 8-byte sequence
/// number and type, less the batch's own tag and column family id).
const MEMTABLE_ENTRY_OVERHEAD: f64 = 6.0;

/// A workload derived from evidence.
#[derive(Debug)]
pub struct DerivedWorkload {
    pub workload: Workload,
    pub yaml: String,
    /// How each value was found, or why it was assumed.
    pub notes: Vec<String>,
}

/// The shipped workload whose operator keeps the state these column families name, and what
/// gave it away.
fn kind_of(cfs: &BTreeSet<&str>) -> Option<(&'static str, &'static str)> {
    let has = |name: &str| cfs.contains(name);
    if has(crate::backend::CF_WINDOW_STATS) && has(crate::backend::CF_TIMER_STATE) {
        Some((
            "ads-minutes",
            "the field reports' frequency counter (window-stats, timer-state)",
        ))
    } else if has("seen") {
        Some(("dedup-24h", "a dedup (ValueState 'seen')"))
    } else if has("LEFT_BUFFER") && has("RIGHT_BUFFER") {
        Some((
            "interval-join",
            "an interval join (LEFT_BUFFER, RIGHT_BUFFER)",
        ))
    } else if has("merging-window-set") {
        Some((
            "sessions-aggregate",
            "session windows (window-contents, merging-window-set)",
        ))
    } else if has("window-contents") {
        Some(("sliding-aggregate", "windows (window-contents)"))
    } else {
        None
    }
}

/// Live entries of `cf` at the end of the LOGs (files counted once per instance; versions of
/// one key in several levels count apiece, the memtables' not at all).
fn live_entries(instances: &[Instance], cf: &str) -> u64 {
    instances
        .iter()
        .flat_map(|i| i.log.files.values())
        .filter(|f| f.cf == cf)
        .map(|f| f.entries)
        .sum()
}

/// The key count `k` for which `events` uniform draws see `seen` distinct keys
/// (`seen = k (1 - e^(-events/k))`), by bisection; `seen` itself when the draws would see
/// every key.
fn universe(seen: f64, events: f64) -> f64 {
    if seen <= 0.0 || events <= seen {
        return seen.max(1.0);
    }
    let distinct = |k: f64| k * (1.0 - (-events / k).exp());
    let (mut lo, mut hi) = (seen, seen * 1e3);
    if distinct(hi) < seen {
        return hi;
    }
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if distinct(mid) < seen {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// Derives the workload: the shipped one of the same kind (or `like`, the job's own), with the
/// evidence's keys, events and rate. `profile` is the diagnosed one (the calibration run uses
/// its timers' place).
pub fn derive(
    instances: &[Instance],
    profile: &Profile,
    like: Option<&Workload>,
) -> anyhow::Result<DerivedWorkload> {
    let cfs: BTreeSet<&str> = instances
        .iter()
        .flat_map(|i| i.log.column_families.iter().map(String::as_str))
        .collect();
    let Some((base, why)) = kind_of(&cfs) else {
        anyhow::bail!(
            "the column families ({}) do not name a state of an operator kind statebench runs (frequency, dedup, interval-join, windows): start from the shipped workload closest to the job (`statebench workloads`) with the diagnosed profile",
            cfs.iter().copied().collect::<Vec<_>>().join(", ")
        );
    };
    let shipped = Workload::load(base)?;
    let (mut workload, mut notes) = match like {
        Some(w) => {
            if std::mem::discriminant(&w.operator()) != std::mem::discriminant(&shipped.operator())
            {
                anyhow::bail!(
                    "--like {}: its job is not the kind the column families name ({why}, as in '{base}')",
                    w.name
                );
            }
            (
                w.clone(),
                vec![format!(
                    "operator: {why}, with the windows, event-time span and serializer of '{}' (--like)",
                    w.name
                )],
            )
        }
        None => (
            shipped,
            vec![format!(
                "operator: {why}, so the shipped '{base}' with its windows, event-time span and serializer (a LOG does not show them: --like WORKLOAD gives the job's own)"
            )],
        ),
    };
    let flushed: u64 = instances
        .iter()
        .flat_map(|i| &i.log.flushes)
        .map(|f| f.data_bytes)
        .sum();
    let span = instances
        .iter()
        .map(|i| i.log.span_secs)
        .fold(0.0, f64::max);
    let keyed = if base == "ads-minutes" {
        let windows = workload.spec.windows.len().max(1) as f64;
        live_entries(instances, crate::backend::CF_WINDOW_STATS) as f64 / windows
    } else {
        cfs.iter()
            .filter(|cf| !cf.starts_with("_timer_state/") && **cf != "default")
            .map(|cf| live_entries(instances, cf))
            .max()
            .unwrap_or(0) as f64
    };
    if flushed == 0 {
        // Nothing flushed: the job's writes still fit in its memtables.
        let per_event = calibrate(&workload, profile, None)?;
        let events = ((profile.knobs.write_buffer_size.0 as f64 / 2.0 / per_event) as u64).max(1);
        workload.spec.events = events;
        notes.push(format!(
            "events: {events}, half a write buffer ({}) of the {per_event:.0} bytes an event of this job writes into a memtable here: the LOG shows no flush, so the job's writes still fit in its memtables; keys: {} (the workload's)",
            crate::config::units::human_bytes(profile.knobs.write_buffer_size.0 as f64),
            workload.spec.keys.count
        ));
    } else {
        // What an event writes depends on how often its key comes again (a timer or window
        // already there is not written twice): calibrate on the shipped keys, estimate the
        // evidence's events and keys, and calibrate again on that many events per key.
        let mut per_event = calibrate(&workload, profile, None)?;
        let mut estimate = (0, 0);
        for round in 0..2 {
            let events = (flushed as f64 / per_event).round().max(1.0);
            let keys = universe(keyed, events).round().max(1.0);
            estimate = (events as u64, keys as u64);
            if round == 0 && keyed > 0.0 {
                per_event = calibrate(&workload, profile, Some(keys / events))?;
            }
        }
        let (events, keys) = estimate;
        workload.spec.events = events * GOING_ON;
        notes.push(format!(
            "events: {}, twice the {events} the LOG accounts for (the job's history, then as much again: what it does next): the {} the memtables flushed over the {per_event:.0} bytes an event of this job writes into a memtable here (a {CALIBRATION_EVENTS}-event run with as many events per key); writes still in memtables at the end are not in a LOG",
            events * GOING_ON,
            crate::config::units::human_bytes(flushed as f64),
        ));
        if span >= 1.0 {
            // The LOG's pace: its events over its span.
            let rate = (events as f64 / span).round().max(1.0) as u64;
            workload.spec.rate = Rate::PerSecond(rate);
            notes.push(format!("rate: {rate} events/s, over the LOG's {span:.1} s"));
        }
        if keyed > 0.0 {
            workload.spec.keys.count = keys;
            workload.spec.keys.distribution = Distribution::Uniform;
            workload.spec.keys.zipf_exponent = None;
            notes.push(format!(
                "keys: {keys}, uniform: the live SST files hold about {keyed:.0} keys, which {events} uniform draws see from {keys} (a LOG does not show the skew)"
            ));
        } else {
            notes.push(format!(
                "keys: {} (the shipped workload's): no SST file of the keyed state is live",
                workload.spec.keys.count
            ));
        }
    }
    workload.spec.description = Some(format!("diagnosed from a job's RocksDB LOG: {why}"));
    workload.name = "diagnosed".to_string();
    let yaml = serde_norway::to_string(&workload.spec)?;
    Ok(DerivedWorkload {
        workload,
        yaml,
        notes,
    })
}

/// Bytes one event of `workload` puts into memtables here: a short run's bytes written (what
/// its write batches carried) and each entry's memtable overhead; on uniform keys, `keys_per_event`
/// of them per event, if given.
fn calibrate(
    workload: &Workload,
    profile: &Profile,
    keys_per_event: Option<f64>,
) -> anyhow::Result<f64> {
    let dir = tempfile::Builder::new()
        .prefix("statebench-diagnose-")
        .tempdir()?;
    let mut w = workload.clone();
    w.spec.events = CALIBRATION_EVENTS;
    w.spec.rate = Rate::Max;
    if let Some(ratio) = keys_per_event {
        w.spec.keys.count = ((CALIBRATION_EVENTS as f64 * ratio).round() as u64).max(1);
        w.spec.keys.distribution = Distribution::Uniform;
        w.spec.keys.zipf_exponent = None;
    }
    let profile = profile.clone();
    let outcome = engine::run_to_completion(EngineConfig {
        events: CALIBRATION_EVENTS,
        ..EngineConfig::new(w, profile, dir.path())
    })?;
    let s = crate::summary::Summary::new(&outcome);
    let entries = (s.puts + s.deletes + s.merges) as f64;
    let events = s.events.max(1) as f64;
    Ok((s.user_bytes_written as f64 + entries * MEMTABLE_ENTRY_OVERHEAD) / events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn universe_inverts_the_distinct_keys_of_uniform_draws() {
        // 200,000 draws over 1,000,000 keys see 181,269 of them.
        let k = universe(181_269.0, 200_000.0);
        assert!((k - 1e6).abs() < 1e3, "{k}");
        // Every key seen many times over: the keys seen are the universe.
        let k = universe(4_000.0, 40_000.0);
        assert!((k - 4_000.0).abs() < 5.0, "{k}");
        assert_eq!(universe(10.0, 5.0), 10.0);
    }
}
