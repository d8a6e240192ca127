//! `kind: frequency`, the reference keyed job: the seeds' ad frequency counter.
//!
//! keyBy(user); `MapState<String window, Stats>` per user; for each event and each window:
//! get -> deserialize -> +1 -> serialize -> put, and an event-time timer at
//! `eventTime + window` whose firing applies the -1. `timerState`
//! (`MapState<Long timer, Decrement>`) records what each timer must decrement.

use super::{Context, JobCounters, KeyedOperator, Layout};
use crate::backend::keys::{self, CompositeKey};
use crate::backend::serializer::{CodecError, Decrement, Stats, ValueSerializer};
use crate::backend::{
    BackendError, CF_TIMER_STATE, CF_WINDOW_STATS, Cf, StateAccess, StateBackend,
};
use crate::config::Workload;
use crate::config::job::frequency::FrequencySpec;
use crate::config::workload::WriteCondition;
use crate::pipeline::PipelineError;
use crate::pipeline::output::Output;
use crate::pipeline::source::{Event, KeyNames};
use crate::pipeline::timers::Timer;

/// The counter's column families in the order its job creates them: the window stats, the
/// timerState (with the TTL filter when it has a TTL), then the timer service's queues.
pub fn layout(spec: &FrequencySpec) -> Layout {
    crate::model::layout::frequency(spec.timer_state_ttl.map(|t| t.0 as i64))
}

/// Which of the seed's jobs the operator is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobMode {
    /// The real-time job: +1 now, -1 at expiry, every change written to the serving store.
    Streaming,
    /// The backfill: for each window, +1 for events inside it before the switch; no timers, no
    /// timerState, no writes (the store is synced once at the end).
    Backfill { switch: i64 },
    /// The catch-up: the streaming job, but a change reaches the serving store only from the
    /// switch on, decided by `condition`.
    CatchUp {
        switch: i64,
        condition: WriteCondition,
    },
}

pub struct FrequencyJob<'a> {
    mode: JobMode,
    stats_cf: &'a Cf,
    timer_state_cf: &'a Cf,
    /// timerState TTL in processing-time ms (None: no TTL).
    ttl: Option<i64>,
    windows: Vec<i64>,
    labels: Vec<String>,
    serializer: ValueSerializer,
    key: CompositeKey,
    /// How the job names a key id: `user-N` (the counter has no key size) or a trace's key.
    keys: KeyNames,
    user: String,
    value: Vec<u8>,
    pub counters: JobCounters,
}

impl<'a> FrequencyJob<'a> {
    pub fn new(backend: &'a StateBackend, workload: &Workload) -> Result<Self, PipelineError> {
        Self::with_mode(backend, workload, JobMode::Streaming)
    }

    pub fn with_mode(
        backend: &'a StateBackend,
        workload: &Workload,
        mode: JobMode,
    ) -> Result<Self, PipelineError> {
        let labels = workload.window_labels();
        Ok(FrequencyJob {
            mode,
            stats_cf: backend.cf(CF_WINDOW_STATS)?,
            timer_state_cf: backend.cf(CF_TIMER_STATE)?,
            ttl: workload.spec.timer_state_ttl.map(|t| t.0 as i64),
            windows: workload.spec.windows.iter().map(|w| w.0 as i64).collect(),
            serializer: ValueSerializer::new(workload.spec.serializer, &labels),
            labels,
            key: CompositeKey::default(),
            keys: match KeyNames::of(workload) {
                KeyNames::Generated { .. } => KeyNames::Generated { size: None },
                trace => trace,
            },
            user: String::new(),
            value: Vec::with_capacity(128),
            counters: JobCounters::default(),
        })
    }

    /// Every (user, window index, count) in state, by a full scan of the window-stats column
    /// family, for comparison with the oracle.
    pub fn state_counts(
        &self,
        state: &mut StateAccess,
    ) -> Result<Vec<(u64, usize, i64)>, PipelineError> {
        let serializer = &self.serializer;
        let mut out = Vec::new();
        state.for_each(self.stats_cf, |key, value| {
            let parsed = keys::split_string_map_key(key).and_then(|(user, label)| {
                let id = self.keys.id(&user)?;
                let window = self.labels.iter().position(|l| *l == *label)?;
                Some((id, window))
            });
            let Some((id, window)) = parsed else {
                return Err(BackendError::Corrupt(format!(
                    "window-stats key {key:02x?}"
                )));
            };
            out.push((id, window, serializer.decode_stats(value)?.count));
            Ok(())
        })?;
        Ok(out)
    }

    /// The backfill's one sync of the serving store: every count in state, written once.
    /// Returns the number of counts written.
    pub fn sync_to_sink<S: Output>(&self, ctx: &mut Context<'_, S>) -> Result<u64, PipelineError> {
        let counts = self.state_counts(&mut ctx.state)?;
        for (user, window, count) in &counts {
            ctx.write(*user, *window, *count)?;
        }
        ctx.sink.flush()?;
        Ok(counts.len() as u64)
    }

    /// Whether a count that changed at event time `at` goes to the serving store.
    fn writes<S: Output>(&self, at: i64, ctx: &Context<'_, S>) -> bool {
        match self.mode {
            JobMode::Streaming => true,
            JobMode::Backfill { .. } => false,
            JobMode::CatchUp {
                switch,
                condition: WriteCondition::EventTime,
            } => at >= switch,
            JobMode::CatchUp {
                switch,
                condition: WriteCondition::Watermark,
            } => ctx.watermark >= switch,
        }
    }

    /// MapState<String, Stats>.get -> +1 -> put for window number `window` of the current key;
    /// returns the new count.
    fn increment<S: Output>(
        &mut self,
        window: usize,
        event_time: i64,
        ctx: &mut Context<'_, S>,
    ) -> Result<i64, PipelineError> {
        let serializer = &self.serializer;
        let k = self.key.with_string_user_key(&self.labels[window]);
        let mut stats = ctx
            .state
            .get(self.stats_cf, k, |v| Ok(serializer.decode_stats(v)?))?
            .unwrap_or(Stats {
                count: 0,
                first_event_time: event_time,
                last_event_time: event_time,
            });
        stats.count += 1;
        stats.last_event_time = stats.last_event_time.max(event_time);
        serializer.encode_stats(&stats, &mut self.value);
        ctx.state.put(self.stats_cf, k, &self.value)?;
        Ok(stats.count)
    }

    /// The backfill's +1 for every window the event falls in, counted as of the switch.
    fn backfill_event<S: Output>(
        &mut self,
        event: &Event,
        switch: i64,
        ctx: &mut Context<'_, S>,
    ) -> Result<(), PipelineError> {
        self.keys.write(event.user, &mut self.user);
        self.key.set_key(&self.user);
        for i in 0..self.windows.len() {
            let window = self.windows[i];
            if event.event_time < switch - window || event.event_time >= switch {
                continue;
            }
            self.increment(i, event.event_time, ctx)?;
            self.counters.increments += 1;
        }
        self.counters.events += 1;
        Ok(())
    }

    /// Reads the user's current count in window number `window` (for tests and checks).
    pub fn count(
        &mut self,
        state: &mut StateAccess,
        user: &str,
        window: usize,
    ) -> Result<i64, PipelineError> {
        self.key.set_key(user);
        let serializer = &self.serializer;
        let k = self.key.with_string_user_key(&self.labels[window]);
        Ok(state
            .get(self.stats_cf, k, |v| Ok(serializer.decode_stats(v)?))?
            .map_or(0, |s| s.count))
    }
}

impl<'a, S: Output> KeyedOperator<'a, S> for FrequencyJob<'a> {
    fn on_event(&mut self, event: &Event, ctx: &mut Context<'a, S>) -> Result<(), PipelineError> {
        if let JobMode::Backfill { switch } = self.mode {
            return self.backfill_event(event, switch, ctx);
        }
        let write = self.writes(event.event_time, ctx);
        self.keys.write(event.user, &mut self.user);
        self.key.set_key(&self.user);
        for i in 0..self.windows.len() {
            let window = self.windows[i];
            let count = self.increment(i, event.event_time, ctx)?;
            if write {
                ctx.write(event.user, i, count)?;
            }
            let serializer = &self.serializer;

            // timerState: remember what the timer at eventTime + window must decrement.
            let fire_at = event.event_time + window;
            let k = self.key.with_long_user_key(fire_at);
            let mut decrement = read_decrement(
                ctx,
                self.timer_state_cf,
                k,
                serializer,
                self.ttl,
                &mut self.counters,
            )?
            .unwrap_or_default();
            decrement.add(i as u8, 1);
            encode_with_ttl(self.ttl, ctx.now, &mut self.value, |out| {
                serializer.encode_decrement(&decrement, out)
            })
            .map_err(BackendError::from)?;
            ctx.state.put(self.timer_state_cf, k, &self.value)?;

            ctx.register_timer(&self.key, fire_at)?;
        }
        self.counters.events += 1;
        self.counters.increments += self.windows.len() as u64;
        Ok(())
    }

    fn on_timer(&mut self, timer: &Timer, ctx: &mut Context<'a, S>) -> Result<(), PipelineError> {
        self.key.set_key(&timer.key);
        let serializer = &self.serializer;
        let k = self.key.with_long_user_key(timer.timestamp);
        let decrement = read_decrement(
            ctx,
            self.timer_state_cf,
            k,
            serializer,
            self.ttl,
            &mut self.counters,
        )?;
        // The field report's onTimer removes the timerState entry in a `finally`, whatever it
        // read: also when the entry was missing, and again after the TTL wrapper removed an
        // expired one.
        ctx.state.delete(self.timer_state_cf, k)?;
        let Some(decrement) = decrement else {
            self.counters.missing_decrements += 1;
            return Ok(());
        };
        let user = self.keys.id(&timer.key).ok_or_else(|| {
            PipelineError::Backend(BackendError::Corrupt(format!("user key '{}'", timer.key)))
        })?;
        let write = self.writes(timer.timestamp, ctx);
        for (window, n) in decrement.windows {
            let Some(label) = self.labels.get(usize::from(window)) else {
                continue;
            };
            let k = self.key.with_string_user_key(label);
            let Some(mut stats) = ctx
                .state
                .get(self.stats_cf, k, |v| Ok(serializer.decode_stats(v)?))?
            else {
                self.counters.missing_decrements += 1;
                continue;
            };
            stats.count -= i64::from(n);
            if stats.count < 0 {
                self.counters.negative_counts += 1;
            }
            self.counters.decrements += u64::from(n);
            if write {
                ctx.write(user, usize::from(window), stats.count)?;
            }
            if stats.count <= 0 {
                // An empty window needs no state: keeps the state as small as the job's real one.
                ctx.state.delete(self.stats_cf, k)?;
            } else {
                serializer.encode_stats(&stats, &mut self.value);
                ctx.state.put(self.stats_cf, k, &self.value)?;
            }
        }
        Ok(())
    }

    fn counters(&self) -> JobCounters {
        self.counters
    }

    fn restore_counters(&mut self, counters: JobCounters) {
        self.counters = counters;
    }

    fn as_frequency(&self) -> Option<&FrequencyJob<'a>> {
        Some(self)
    }
}

/// Flink's TTL value layout: the last-write timestamp (8 bytes, big-endian), then the value.
fn encode_with_ttl(
    ttl: Option<i64>,
    now: i64,
    out: &mut Vec<u8>,
    encode: impl FnOnce(&mut Vec<u8>) -> Result<(), CodecError>,
) -> Result<(), CodecError> {
    match ttl {
        None => encode(out),
        Some(_) => {
            // The map value is written null-sensitively around Flink's TtlValue:
            // [not-null flag][last-write timestamp][user value]; the timestamp goes in after
            // the encoder's null flag, in place.
            encode(out)?;
            let len = out.len().max(1);
            out.resize(len + 8, 0);
            out.copy_within(1..len, 9);
            out[1..9].copy_from_slice(&now.to_be_bytes());
            Ok(())
        }
    }
}

/// Reads a timerState entry; with a TTL, an entry last written `ttl` or longer ago reads as
/// null (Flink's `NeverReturnExpired`), as the seed's job saw it, and is removed, as Flink's
/// TTL decorator clears an expired entry it reads.
fn read_decrement<S: Output>(
    ctx: &mut Context<'_, S>,
    cf: &Cf,
    key: &[u8],
    serializer: &ValueSerializer,
    ttl: Option<i64>,
    counters: &mut JobCounters,
) -> Result<Option<Decrement>, PipelineError> {
    let now = ctx.now;
    let read = ctx.state.get(cf, key, |v| match ttl {
        None => Ok(Some(serializer.decode_decrement(v)?)),
        Some(ttl) => {
            let corrupt =
                || BackendError::Corrupt("timerState value without its TTL timestamp".to_string());
            let (&flag, rest) = v.split_first().ok_or_else(corrupt)?;
            let (ts, body) = rest.split_at_checked(8).ok_or_else(corrupt)?;
            if flag != 0 {
                return Err(corrupt());
            }
            let mut b = [0u8; 8];
            b.copy_from_slice(ts);
            if now.saturating_sub(i64::from_be_bytes(b)) >= ttl {
                Ok(None)
            } else {
                Ok(Some(serializer.decode_decrement_body(body)?))
            }
        }
    })?;
    match read {
        Some(None) => {
            counters.expired_timer_state += 1;
            ctx.state.delete(cf, key)?;
            Ok(None)
        }
        Some(value) => Ok(value),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Profile;
    use crate::durability::delivery::Delivery;
    use crate::pipeline::source::Generator;
    use crate::pipeline::watermark::BoundedOutOfOrderness;
    use std::collections::HashMap;

    fn freq_spec(w: &Workload) -> FrequencySpec {
        match w.operator() {
            crate::config::job::OperatorSpec::Frequency(f) => f,
            _ => unreachable!(),
        }
    }

    #[test]
    fn ttl_values_have_flinks_layout() {
        for kind in [
            crate::config::workload::SerializerKind::Compact,
            crate::config::workload::SerializerKind::Generic,
        ] {
            let serializer = ValueSerializer::new(kind, &["1m", "5m"]);
            let d = Decrement {
                windows: vec![(1, 2)].into(),
            };
            let mut plain = Vec::new();
            serializer.encode_decrement(&d, &mut plain).unwrap();
            // A buffer holding an earlier, longer value.
            let mut with_ttl = vec![7; 64];
            encode_with_ttl(Some(60_000), 1_234, &mut with_ttl, |out| {
                serializer.encode_decrement(&d, out)
            })
            .unwrap();
            // [not null][timestamp][value without its own null flag]
            assert_eq!(with_ttl.len(), plain.len() + 8);
            assert_eq!(with_ttl[0], 0);
            assert_eq!(with_ttl[1..9], 1_234i64.to_be_bytes());
            assert_eq!(with_ttl[9..], plain[1..]);
            assert_eq!(serializer.decode_decrement_body(&with_ttl[9..]), Ok(d));
        }
    }

    #[test]
    fn counts_equal_events_inside_each_sliding_window() {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::load("flink-default").unwrap();
        let mut workload = Workload::load("smoke").unwrap();
        workload.spec.keys.count = 50;
        workload.spec.events = 4_000;
        for serializer in [
            crate::config::workload::SerializerKind::Compact,
            crate::config::workload::SerializerKind::Generic,
        ] {
            workload.spec.serializer = serializer;
            let path = dir.path().join(format!("{serializer:?}"));
            let backend = StateBackend::open(&path, &profile).unwrap();
            let mut ctx = Context::new(
                &backend,
                &layout(&freq_spec(&workload)),
                Delivery::passthrough(Box::new(crate::durability::sink::MemorySink::default())),
            )
            .unwrap();
            let mut job = FrequencyJob::new(&backend, &workload).unwrap();
            let mut wm =
                BoundedOutOfOrderness::new(workload.spec.event_time.out_of_orderness.0 as i64);
            let events: Vec<Event> = Generator::new(&workload).take(4_000).collect();
            for (i, e) in events.iter().enumerate() {
                job.on_event(e, &mut ctx).unwrap();
                wm.on_event(e.event_time);
                if i % 64 == 63 {
                    ctx.advance_watermark(&mut job, wm.current()).unwrap();
                }
            }
            let watermark = wm.current();
            ctx.advance_watermark(&mut job, watermark).unwrap();
            ctx.flush_timers().unwrap();
            // Expected: events whose timer (t + window) has not fired yet, i.e. t + window > watermark.
            for (w, window) in workload.spec.windows.iter().enumerate() {
                let mut expected: HashMap<u64, i64> = HashMap::new();
                for e in &events {
                    if e.event_time + window.0 as i64 > watermark {
                        *expected.entry(e.user).or_default() += 1;
                    }
                }
                for user in 0..50u64 {
                    let got = job
                        .count(&mut ctx.state, &format!("user-{user}"), w)
                        .unwrap();
                    assert_eq!(
                        got,
                        expected.get(&user).copied().unwrap_or(0),
                        "user {user} window {window}"
                    );
                }
            }
            assert!(job.counters.decrements > 0, "timers must have fired");
            assert_eq!(job.counters.missing_decrements, 0);
            assert_eq!(job.counters.negative_counts, 0);
        }
    }
}
