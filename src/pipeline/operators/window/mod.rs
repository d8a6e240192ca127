//! `kind: window`: Flink 1.20's `WindowOperator` with an event-time assigner and the
//! `EventTimeTrigger`, call for call against RocksDB.
//!
//! Column families in Flink's creation order (`WindowOperator.open`): the timer service
//! "window-timers" (`_timer_state/processing_window-timers`, then
//! `_timer_state/event_window-timers`), the window state `window-contents`, and for a merging
//! assigner the `merging-window-set` ListState. Window state keys are
//! `key-group | key | window`; timers carry the window as their namespace.
//!
//! Per element (`WindowOperator.processElement`), for each window the assigner gives: skip it if
//! late (`isWindowLate`: `maxTimestamp + allowedLateness <= watermark`); `windowState.add`;
//! `EventTimeTrigger.onElement` (FIRE when `maxTimestamp <= watermark`, else a timer at
//! `maxTimestamp`); on FIRE `windowState.get` and emit; `registerCleanupTimer`
//! (`maxTimestamp + allowedLateness`). Sessions first read the `MergingWindowSet`, let
//! `addWindow` merge (trigger `onMerge`, the merged windows' trigger and cleanup timers deleted,
//! `mergeNamespaces` of their state) and persist it when it changed.
//!
//! Per timer (`onEventTime`): sessions read the set and drop a timer of a window no longer in
//! flight; FIRE when the timer is at `maxTimestamp` (get, emit); at cleanup time
//! `clearAllState` (clear, `EventTimeTrigger.clear` deletes its timer, the set retires the window
//! and persists, and persists again after).

mod assign;
mod contents;
mod merging;
mod truth;

use std::collections::HashMap;

pub use assign::TimeWindow;
pub use contents::Summary;
pub use truth::WindowTruth;

use self::assign::{assign_windows, cleanup_time};
use self::contents::Contents;
use self::merging::MergingWindowSet;
use super::{CfDecl, CfRole, Context, JobCounters, KeyedOperator, Layout, mix, record};
use crate::backend::keys::CompositeKey;
use crate::backend::{BackendError, Cf, StateAccess, StateBackend};
use crate::config::Workload;
use crate::config::job::window::{Assigner, FunctionKind, WindowSpec};
use crate::pipeline::PipelineError;
use crate::pipeline::output::Output;
use crate::pipeline::source::{Event, KeyNames};
use crate::pipeline::timers::Timer;

/// The timer service's name (`getInternalTimerService("window-timers", ...)`).
pub const TIMER_SERVICE: &str = "window-timers";
pub const CF_PROCESSING_TIMERS: &str = "_timer_state/processing_window-timers";
pub const CF_EVENT_TIMERS: &str = "_timer_state/event_window-timers";
/// `WindowOperatorBuilder.WINDOW_STATE_NAME`.
pub const CF_CONTENTS: &str = "window-contents";
/// The merging assigner's `ListStateDescriptor("merging-window-set", ...)`.
pub const CF_MERGING_SET: &str = "merging-window-set";

/// Result slots (`WindowSpec::result_labels`).
pub const SLOT_FIRED: usize = 0;
pub const SLOT_ELEMENTS: usize = 1;
pub const SLOT_DIGEST: usize = 2;

/// The column families a window operator creates, in Flink's order: `open()` gets the timer
/// service first (`InternalTimeServiceManagerImpl.registerOrGetTimerService` creates the
/// processing-time queue, then the event-time one), then the window state, then the merging
/// window set. With an evictor, `EvictingWindowOperator.open()` creates its window state after
/// `WindowOperator.open()` has created the merging window set.
pub fn layout(spec: &WindowSpec) -> Layout {
    let list = spec.function == FunctionKind::Process || spec.evictor.is_some();
    let contents = CfDecl {
        name: CF_CONTENTS.to_string(),
        role: CfRole::State {
            ttl: None,
            merge: list,
        },
    };
    let mut cfs = vec![
        CfDecl {
            name: CF_PROCESSING_TIMERS.to_string(),
            role: CfRole::ProcessingTimers,
        },
        CfDecl {
            name: CF_EVENT_TIMERS.to_string(),
            role: CfRole::EventTimers,
        },
    ];
    if spec.evictor.is_none() {
        cfs.push(contents.clone());
    }
    if matches!(spec.assigner(), Ok(Assigner::Session { .. })) {
        cfs.push(CfDecl {
            name: CF_MERGING_SET.to_string(),
            role: CfRole::State {
                ttl: None,
                merge: true,
            },
        });
    }
    if spec.evictor.is_some() {
        cfs.push(contents);
    }
    Layout { cfs }
}

/// Per key, over every window result emitted so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub fired: i64,
    pub elements: i64,
    pub digest: i64,
}

impl Totals {
    /// Adds one emitted result `(window, contents)`.
    pub fn add(&mut self, window: &TimeWindow, s: Summary) {
        self.fired += 1;
        self.elements += s.count;
        self.digest = self
            .digest
            .wrapping_add(mix(window.start, window.end, s.count, s.sum));
    }
}

pub struct WindowOperator<'a> {
    assigner: Assigner,
    lateness: i64,
    contents: Contents<'a>,
    /// Sessions: the `merging-window-set` state.
    merging_cf: Option<&'a Cf>,
    composite: CompositeKey,
    /// The current key's string.
    key: String,
    /// How the job names a key id (`user-N` or a trace's own key).
    keys: KeyNames,
    function: FunctionKind,
    windows: Vec<TimeWindow>,
    value: Vec<u8>,
    /// Per key id: its results so far (what the sink holds).
    totals: HashMap<u64, Totals>,
    /// Restored from a checkpoint: the totals are read back from the serving store (its
    /// committed results are the checkpoint's) before the first record or timer.
    counters: JobCounters,
}

fn setup(message: String) -> PipelineError {
    PipelineError::Backend(BackendError::Setup(message))
}

impl<'a> WindowOperator<'a> {
    pub fn new(
        spec: &WindowSpec,
        backend: &'a StateBackend,
        workload: &Workload,
    ) -> Result<Self, PipelineError> {
        let assigner = spec.assigner().map_err(setup)?;
        let merging_cf = match assigner {
            Assigner::Session { .. } => Some(backend.cf(CF_MERGING_SET)?),
            _ => None,
        };
        Ok(WindowOperator {
            assigner,
            lateness: spec.allowed_lateness_ms(),
            contents: Contents::new(
                backend.cf(CF_CONTENTS)?,
                spec.function,
                spec.evictor_count(),
            ),
            merging_cf,
            composite: CompositeKey::default(),
            key: String::new(),
            keys: KeyNames::of(workload),
            function: spec.function,
            windows: Vec::new(),
            value: Vec::new(),
            totals: HashMap::new(),
            counters: JobCounters::default(),
        })
    }

    /// The results emitted so far for key id `key`.
    pub fn totals(&self, key: u64) -> Totals {
        self.totals.get(&key).copied().unwrap_or_default()
    }

    fn cleanup_time(&self, window: &TimeWindow) -> i64 {
        cleanup_time(window, self.lateness)
    }

    /// `isWindowLate` (event time).
    fn is_window_late(&self, window: &TimeWindow, watermark: i64) -> bool {
        self.cleanup_time(window) <= watermark
    }

    /// The state key of the current key in `window`'s namespace (the composite key is left in
    /// that namespace, for the window's timers).
    fn state_key(&mut self, window: &TimeWindow) -> Vec<u8> {
        self.composite.set_namespace(&window.to_bytes());
        self.composite.prefix().to_vec()
    }

    fn emit<S: Output>(
        &mut self,
        key_id: u64,
        window: &TimeWindow,
        s: Summary,
        ctx: &mut Context<'a, S>,
    ) -> Result<(), PipelineError> {
        let totals = self.totals.entry(key_id).or_default();
        totals.add(window, s);
        let t = *totals;
        self.counters.emitted += 1;
        // emitWindowContents: setAbsoluteTimestamp(window.maxTimestamp()), one result.
        let size = contents::result_size(self.function, &self.key);
        ctx.emit(record(key_id, window.max_timestamp(), size));
        ctx.write(key_id, SLOT_FIRED, t.fired)?;
        ctx.write(key_id, SLOT_ELEMENTS, t.elements)?;
        ctx.write(key_id, SLOT_DIGEST, t.digest)?;
        Ok(())
    }

    /// `InternalTimerService.registerEventTimeTimer(window, timestamp)`.
    fn register<S: Output>(
        &mut self,
        window: &TimeWindow,
        timestamp: i64,
        ctx: &mut Context<'a, S>,
    ) -> Result<(), PipelineError> {
        self.composite.set_namespace(&window.to_bytes());
        ctx.register_timer(&self.composite, timestamp)
    }

    /// `InternalTimerService.deleteEventTimeTimer(window, timestamp)`.
    fn delete_timer<S: Output>(
        &mut self,
        window: &TimeWindow,
        timestamp: i64,
        ctx: &mut Context<'a, S>,
    ) -> Result<(), PipelineError> {
        let namespace = window.to_bytes();
        self.composite.set_namespace(&namespace);
        let timers = ctx.timers.as_mut().ok_or(PipelineError::NoTimerService)?;
        timers.remove(&mut ctx.state, &self.composite, &namespace, timestamp)?;
        Ok(())
    }

    /// `registerCleanupTimer` (none for a cleanup time of `Long.MAX_VALUE`).
    fn register_cleanup_timer<S: Output>(
        &mut self,
        window: &TimeWindow,
        ctx: &mut Context<'a, S>,
    ) -> Result<(), PipelineError> {
        let at = self.cleanup_time(window);
        if at == i64::MAX {
            return Ok(());
        }
        self.register(window, at, ctx)
    }

    /// `deleteCleanupTimer`.
    fn delete_cleanup_timer<S: Output>(
        &mut self,
        window: &TimeWindow,
        ctx: &mut Context<'a, S>,
    ) -> Result<(), PipelineError> {
        let at = self.cleanup_time(window);
        if at == i64::MAX {
            return Ok(());
        }
        self.delete_timer(window, at, ctx)
    }

    /// `EventTimeTrigger.onElement`: FIRE when the watermark is past the window's end, else a
    /// timer at its max timestamp. True for FIRE.
    fn trigger_on_element<S: Output>(
        &mut self,
        window: &TimeWindow,
        ctx: &mut Context<'a, S>,
    ) -> Result<bool, PipelineError> {
        if window.max_timestamp() <= ctx.watermark {
            return Ok(true);
        }
        self.register(window, window.max_timestamp(), ctx)?;
        Ok(false)
    }

    /// The merging window set's key: the current key in VoidNamespace.
    fn set_key(&mut self) -> Vec<u8> {
        self.composite
            .set_namespace(&[crate::backend::keys::VOID_NAMESPACE]);
        self.composite.prefix().to_vec()
    }

    /// `getMergingWindowSet()`: the set read from its ListState (one get).
    fn read_merging_set(
        &mut self,
        state: &mut StateAccess,
    ) -> Result<MergingWindowSet, PipelineError> {
        let cf = self
            .merging_cf
            .ok_or_else(|| setup("a merging window set without its column family".into()))?;
        let k = self.set_key();
        let value = state.get(cf, &k, |v| Ok(v.to_vec()))?;
        Ok(MergingWindowSet::from_state(value.as_deref())?)
    }

    /// `MergingWindowSet.persist()`: `update` of the list when the mapping changed (a put, or a
    /// delete when it is empty).
    fn persist(
        &mut self,
        set: &MergingWindowSet,
        state: &mut StateAccess,
    ) -> Result<(), BackendError> {
        let Some(cf) = self.merging_cf else {
            return Ok(());
        };
        let mut value = std::mem::take(&mut self.value);
        let result = if set.persist(&mut value).is_none() {
            Ok(())
        } else {
            let k = self.set_key();
            if value.is_empty() {
                state.delete(cf, &k)
            } else {
                state.put(cf, &k, &value)
            }
        };
        self.value = value;
        result
    }

    /// The rest of `processElement` for one window the element goes to: `windowState.add` in
    /// its state window, the trigger, FIRE, `registerCleanupTimer`.
    fn add_to_window<S: Output>(
        &mut self,
        event: &Event,
        window: &TimeWindow,
        state_window: &TimeWindow,
        ctx: &mut Context<'a, S>,
    ) -> Result<(), PipelineError> {
        let k = self.state_key(state_window);
        self.contents.add(
            &mut ctx.state,
            &k,
            &self.key,
            event.event_time,
            event.value_size,
        )?;
        if self.trigger_on_element(window, ctx)?
            && let Some(s) = self.contents.fire(&mut ctx.state, &k)?
        {
            self.emit(event.user, window, s, ctx)?;
        }
        self.register_cleanup_timer(window, ctx)
    }

    /// The non-merging path of `processElement`; true when every window was late.
    fn on_element_aligned<S: Output>(
        &mut self,
        event: &Event,
        ctx: &mut Context<'a, S>,
    ) -> Result<bool, PipelineError> {
        let mut skipped = true;
        let mut windows = std::mem::take(&mut self.windows);
        assign_windows(&self.assigner, event.event_time, &mut windows);
        let mut result = Ok(());
        for window in &windows {
            if self.is_window_late(window, ctx.watermark) {
                continue;
            }
            skipped = false;
            result = self.add_to_window(event, window, window, ctx);
            if result.is_err() {
                break;
            }
        }
        self.windows = windows;
        result.map(|()| skipped)
    }

    /// The merging (session) path of `processElement`; true when the window was late.
    fn on_element_merging<S: Output>(
        &mut self,
        event: &Event,
        ctx: &mut Context<'a, S>,
    ) -> Result<bool, PipelineError> {
        let mut skipped = true;
        let mut set = self.read_merging_set(&mut ctx.state)?;
        let mut windows = std::mem::take(&mut self.windows);
        assign_windows(&self.assigner, event.event_time, &mut windows);
        let mut result = Ok(());
        for window in &windows {
            result = self.merge_and_add(event, window, &mut set, &mut skipped, ctx);
            if result.is_err() {
                break;
            }
        }
        self.windows = windows;
        result?;
        self.persist(&set, &mut ctx.state)?;
        Ok(skipped)
    }

    fn merge_and_add<S: Output>(
        &mut self,
        event: &Event,
        window: &TimeWindow,
        set: &mut MergingWindowSet,
        skipped: &mut bool,
        ctx: &mut Context<'a, S>,
    ) -> Result<(), PipelineError> {
        let (actual, merges) = set.add_window(*window);
        for m in merges {
            self.on_merge(&m, ctx)?;
        }
        if self.is_window_late(&actual, ctx.watermark) {
            set.retire(&actual);
            return Ok(());
        }
        *skipped = false;
        let state_window = set.state_window(&actual).ok_or_else(|| {
            setup(format!(
                "window {actual:?} is not in the in-flight window set"
            ))
        })?;
        self.add_to_window(event, &actual, &state_window, ctx)
    }

    /// The `MergeFunction` of `processElement`: `EventTimeTrigger.onMerge` (a timer for the
    /// merged window unless the watermark is past it), then per merged window
    /// `EventTimeTrigger.clear` and `deleteCleanupTimer`, then `mergeNamespaces`.
    fn on_merge<S: Output>(
        &mut self,
        m: &merging::Merge,
        ctx: &mut Context<'a, S>,
    ) -> Result<(), PipelineError> {
        // Flink throws when a merge would end an event-time window before the watermark; a
        // merge result covers an in-flight window, whose cleanup time is past the watermark.
        if self.is_window_late(&m.result, ctx.watermark) {
            return Err(setup(format!(
                "a merge ended the window {:?} before the watermark {}",
                m.result, ctx.watermark
            )));
        }
        if m.result.max_timestamp() > ctx.watermark {
            self.register(&m.result, m.result.max_timestamp(), ctx)?;
        }
        for w in &m.merged_windows {
            self.delete_timer(w, w.max_timestamp(), ctx)?;
            self.delete_cleanup_timer(w, ctx)?;
        }
        self.contents.merge_namespaces(
            &mut ctx.state,
            &mut self.composite,
            &self.key,
            &m.state_window_result,
            &m.merged_state_windows,
        )?;
        Ok(())
    }
}

impl<'a, S: Output> KeyedOperator<'a, S> for WindowOperator<'a> {
    fn on_event(&mut self, event: &Event, ctx: &mut Context<'a, S>) -> Result<(), PipelineError> {
        self.keys.write(event.user, &mut self.key);
        self.composite.set_key(&self.key);
        let skipped = match self.assigner {
            Assigner::Session { .. } => self.on_element_merging(event, ctx)?,
            _ => self.on_element_aligned(event, ctx)?,
        };
        // isElementLate: Flink counts it in numLateRecordsDropped.
        if skipped && event.event_time.saturating_add(self.lateness) <= ctx.watermark {
            self.counters.dropped_late += 1;
        }
        self.counters.events += 1;
        Ok(())
    }

    fn on_timer(&mut self, timer: &Timer, ctx: &mut Context<'a, S>) -> Result<(), PipelineError> {
        let window = TimeWindow::from_bytes(&timer.namespace).ok_or_else(|| {
            PipelineError::CorruptTimer(format!("window namespace {:02x?}", timer.namespace))
        })?;
        let key_id = self
            .keys
            .id(&timer.key)
            .ok_or_else(|| PipelineError::CorruptTimer(format!("timer key '{}'", timer.key)))?;
        self.key.clear();
        self.key.push_str(&timer.key);
        self.composite.set_key(&self.key);
        let mut set = None;
        let state_window = if self.merging_cf.is_some() {
            let s = self.read_merging_set(&mut ctx.state)?;
            let Some(state_window) = s.state_window(&window) else {
                // A timer of a window no longer in flight: nothing to do.
                return Ok(());
            };
            set = Some(s);
            state_window
        } else {
            window
        };
        let k = self.state_key(&state_window);
        // EventTimeTrigger.onEventTime: FIRE at the window's max timestamp.
        if timer.timestamp == window.max_timestamp()
            && let Some(s) = self.contents.fire(&mut ctx.state, &k)?
        {
            self.emit(key_id, &window, s, ctx)?;
        }
        if timer.timestamp == self.cleanup_time(&window) {
            // clearAllState: windowState.clear(), EventTimeTrigger.clear (deletes its timer),
            // the set retires the window and persists.
            self.contents.clear(&mut ctx.state, &k)?;
            self.delete_timer(&window, window.max_timestamp(), ctx)?;
            if let Some(s) = set.as_mut() {
                s.retire(&window);
                self.persist(s, &mut ctx.state)?;
            }
        }
        if let Some(s) = &set {
            self.persist(s, &mut ctx.state)?;
        }
        Ok(())
    }

    fn counters(&self) -> JobCounters {
        self.counters
    }

    fn restore_counters(&mut self, c: JobCounters) {
        self.counters = c;
    }

    /// The totals per key: what Flink's downstream accumulates from the emitted results, kept
    /// in its checkpointed state, so a checkpoint carries them (exact whatever the delivery
    /// guarantee; without them a restore reads the serving store's committed values).
    fn results_of(&self, keep: &dyn Fn(u64) -> bool) -> Vec<(u64, usize, i64)> {
        let mut out: Vec<(u64, usize, i64)> = self
            .totals
            .iter()
            .filter(|(key, _)| keep(**key))
            .flat_map(|(key, t)| {
                [
                    (*key, SLOT_FIRED, t.fired),
                    (*key, SLOT_ELEMENTS, t.elements),
                    (*key, SLOT_DIGEST, t.digest),
                ]
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// Empty results are a checkpoint taken before any window fired: the totals start at zero
    /// (not from the serving store, which without exactly-once delivery holds results written
    /// after the checkpoint).
    fn restore_results(&mut self, results: &[(u64, usize, i64)]) {
        self.totals.clear();
        for &(key, slot, value) in results {
            let t = self.totals.entry(key).or_default();
            match slot {
                SLOT_FIRED => t.fired = value,
                SLOT_ELEMENTS => t.elements = value,
                SLOT_DIGEST => t.digest = value,
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests;
