//! What an operator sees: counted state access, its timer service, processing time, the
//! watermark and the serving store.

use super::{KeyedOperator, Layout};
use crate::backend::keys::CompositeKey;
use crate::backend::oplog::OpRecorder;
use crate::backend::{StateAccess, StateBackend};
use crate::pipeline::PipelineError;
use crate::pipeline::output::{Output, OutputError, origin};
use crate::pipeline::source::Event;
use crate::pipeline::timers::TimerService;

/// What an operator sees: counted state access and its timer service.
pub struct Context<'a, S: Output> {
    pub state: StateAccess<'a>,
    /// The event-time queue of the operator's timer service (None: the operator has none).
    pub timers: Option<TimerService<'a>>,
    /// Processing time (the engine's replay clock), for state TTL.
    pub now: i64,
    /// The serving store the job writes its results to.
    pub sink: S,
    /// The operator's current watermark (already advanced when timers fire, as in Flink).
    pub watermark: i64,
    /// Where the operator's result slots start in the job's numbering (0 for a single operator
    /// and a chain's first; then the slots of every operator before it).
    pub slot_base: usize,
    /// Records the operator emitted for the next operator of a chain, in order (Flink's
    /// `output.collect`); the engine drains them (or clears them behind a chain's last).
    pub emitted: Vec<Event>,
}

impl<'a, S: Output> Context<'a, S> {
    /// The context of an operator with `layout`'s column families on `backend`.
    pub fn new(backend: &'a StateBackend, layout: &Layout, sink: S) -> Result<Self, PipelineError> {
        Self::recorded(backend, layout, sink, None)
    }

    /// The same, its every state operation recorded to `recorder` from the first on (the timer
    /// service's startup scans too).
    pub fn recorded(
        backend: &'a StateBackend,
        layout: &Layout,
        sink: S,
        recorder: Option<OpRecorder>,
    ) -> Result<Self, PipelineError> {
        let mut state = StateAccess::new(backend);
        if let Some(r) = recorder {
            state.record_to(r);
        }
        Self::with_state(backend, layout, sink, state)
    }

    /// The context of an operator whose state lives in memory (`StateAccess::in_memory`): a
    /// preload's warm-up.
    pub fn in_memory(
        backend: &'a StateBackend,
        layout: &Layout,
        sink: S,
    ) -> Result<Self, PipelineError> {
        Self::with_state(backend, layout, sink, StateAccess::in_memory(backend))
    }

    fn with_state(
        backend: &'a StateBackend,
        layout: &Layout,
        sink: S,
        mut state: StateAccess<'a>,
    ) -> Result<Self, PipelineError> {
        // ROCKSDB or HEAP timers, as the backend's profile says.
        let timers = match layout.event_timers() {
            Some(cf) => Some(TimerService::open(
                backend,
                cf,
                layout.processing_timers(),
                &mut state,
            )?),
            None => None,
        };
        Ok(Context {
            state,
            timers,
            now: 0,
            sink,
            watermark: i64::MIN,
            slot_base: 0,
            emitted: Vec::new(),
        })
    }

    /// The same context for an operator whose result slots start at `slot_base`.
    pub fn with_slot_base(mut self, slot_base: usize) -> Self {
        self.slot_base = slot_base;
        self
    }

    /// Writes the operator's result `slot` (its own numbering) of `key` to the serving store.
    pub fn write(&mut self, key: u64, slot: usize, value: i64) -> Result<(), OutputError> {
        self.sink.write(key, self.slot_base + slot, value)
    }

    /// A record for the next operator of the chain (Flink's `output.collect`).
    pub fn emit(&mut self, event: Event) {
        self.emitted.push(event);
    }

    /// Moves processing time (the replay clock, which TTL reads) to `now`.
    pub fn set_now(&mut self, now: i64) {
        self.now = now;
        self.state.set_processing_time(now);
    }

    /// Registers an event-time timer at `timestamp` for `key`'s current key and namespace.
    pub fn register_timer(
        &mut self,
        key: &CompositeKey,
        timestamp: i64,
    ) -> Result<(), PipelineError> {
        match &mut self.timers {
            Some(timers) => timers.register(&mut self.state, key, timestamp),
            None => Err(PipelineError::NoTimerService),
        }
    }

    /// Writes out buffered timer changes (before a snapshot or at the end of a run).
    pub fn flush_timers(&mut self) -> Result<(), PipelineError> {
        match &mut self.timers {
            Some(timers) => timers.flush(&mut self.state),
            None => Ok(()),
        }
    }

    /// Timers registered and fired so far.
    pub fn timer_counts(&self) -> (u64, u64) {
        self.timers
            .as_ref()
            .map_or((0, 0), |t| (t.registered(), t.fired()))
    }

    /// Fires every timer at or before `watermark` on `op`.
    pub fn advance_watermark(
        &mut self,
        op: &mut (dyn KeyedOperator<'a, S> + 'a),
        watermark: i64,
    ) -> Result<(), PipelineError> {
        self.watermark = self.watermark.max(watermark);
        while let Some(timers) = &mut self.timers {
            let Some(timer) = timers.poll_due(&mut self.state, watermark)? else {
                break;
            };
            if self.sink.is_tracked() {
                // A fired timer's results are the same records whoever fires it, after a
                // restore too: their ids come from the timer.
                let mut id = key_hash(timer.key.as_bytes());
                if timer.namespace != [crate::backend::keys::VOID_NAMESPACE] {
                    id ^= key_hash(&timer.namespace).rotate_left(1);
                }
                self.sink.set_origin(origin(timer.timestamp as u64, id));
            }
            op.on_timer(&timer, self)?;
            if let Some(timers) = &mut self.timers {
                timers.recycle(timer);
            }
        }
        op.on_watermark(watermark, self)
    }
}

/// FNV-1a of a timer's key: part of its results' record ids.
fn key_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
