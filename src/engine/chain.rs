//! The operators of a job after its first: a chain in one slot (Flink: `source -> keyBy -> op0
//! -> keyBy -> op1 ...`, parallelism 1, slot sharing). Each is its own RocksDB instance (its own
//! `RocksDBKeyedStateBackend`) with its own context; they share the slot's managed memory and
//! the one serving store, which is lent to the operator that runs.
//!
//! Operator i's records go to operator i+1's input after each `on_event`, and after each
//! watermark (its timers fired), then the watermark: what Flink's `InternalTimeServiceManager`
//! `.advanceWatermark` followed by `output.emitWatermark` delivers downstream. Operators after
//! the first work through their input a few items per record of the first (see `Chain::run`);
//! every input is drained before a checkpoint, a savepoint, a comparison and the end.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::backend::{AccessCounters, StateBackend};
pub use crate::durability::checkpoint::OperatorMeta;
use crate::durability::delivery::Delivery;
use crate::durability::sink::MemorySink;
use crate::pipeline::PipelineError;
use crate::pipeline::downstream::Intake;
use crate::pipeline::operators::{self, Context, JobMode, KeyedOperator};
use crate::pipeline::output::origin;
use crate::pipeline::source::Event;

/// The stream ids of records into operator `index` >= 1 (a source partition's id is its
/// number): the results a downstream record causes get an origin from (operator, offset), the
/// same after a restore, so exactly-once delivery recognises a replayed one.
const DOWNSTREAM_STREAM: u64 = 1 << 63;

/// One operator after the first.
pub struct Stage<'a> {
    pub index: usize,
    pub ctx: Context<'a, Delivery>,
    pub op: Box<dyn KeyedOperator<'a, Delivery> + 'a>,
    /// Records it received (its downstream offsets) and the last watermark it took.
    pub intake: Intake,
}

/// What waits at an operator's input: a record, or a watermark, each with the processing time
/// it was sent at.
enum Input {
    Record(Event),
    Watermark(i64, i64),
}

/// The operators after the first, in chain order (empty for a single operator).
#[derive(Default)]
pub struct Chain<'a> {
    pub stages: Vec<Stage<'a>>,
    /// Each operator's input: what the one before it sent and it has not processed yet.
    inputs: Vec<VecDeque<Input>>,
    /// Scratch for the records an operator emits.
    out: Vec<Event>,
}

/// A serving store that is never written: what a context holds while it does not run.
pub fn placeholder_sink() -> Delivery {
    Delivery::passthrough(Box::new(MemorySink::default()))
}

impl<'a> Chain<'a> {
    /// Operators 1.. of `workload`'s job on `backends[1..]`, restored from `resume` (their
    /// state at a barrier) when given.
    pub fn build(
        backends: &'a [Arc<StateBackend>],
        workload: &crate::config::Workload,
        mode: JobMode,
        now: i64,
        resume: &[OperatorMeta],
    ) -> Result<Chain<'a>, PipelineError> {
        let specs = workload.operators();
        let bases = workload.slot_bases();
        let mut stages = Vec::new();
        for (index, backend) in backends.iter().enumerate().skip(1) {
            let layout = operators::layout(&specs[index]);
            let mut ctx =
                Context::new(backend, &layout, placeholder_sink())?.with_slot_base(bases[index]);
            ctx.set_now(now);
            let mut op = operators::build(backend, workload, index, mode)?;
            let mut records_in = 0;
            if let Some(meta) = resume.iter().find(|m| m.index == index) {
                op.restore_counters(meta.counters);
                op.restore_results(&meta.results);
                records_in = meta.records_in;
            }
            stages.push(Stage {
                index,
                ctx,
                op,
                intake: Intake::new(records_in),
            });
        }
        Ok(Chain {
            inputs: stages.iter().map(|_| VecDeque::new()).collect(),
            stages,
            out: Vec::new(),
        })
    }

    /// Where every operator after the first stands (for a checkpoint).
    pub fn meta(&self) -> Vec<OperatorMeta> {
        self.stages
            .iter()
            .map(|s| OperatorMeta {
                index: s.index,
                counters: s.op.counters(),
                results: s.op.results_snapshot(),
                records_in: s.intake.records_in,
            })
            .collect()
    }

    /// Sends `records` (what the first operator emitted, drained) to the second operator's
    /// input at processing time `now`.
    pub fn push(&mut self, records: &mut Vec<Event>, now: i64) {
        let Some(input) = self.inputs.first_mut() else {
            records.clear();
            return;
        };
        for mut record in records.drain(..) {
            record.append_time = now;
            input.push_back(Input::Record(record));
        }
    }

    /// Sends watermark `wm` (after the records before it) to the second operator's input.
    pub fn advance(&mut self, wm: i64, now: i64) {
        if let Some(input) = self.inputs.first_mut() {
            input.push_back(Input::Watermark(wm, now));
        }
    }

    /// True when no operator has input waiting.
    pub fn is_idle(&self) -> bool {
        self.inputs.iter().all(VecDeque::is_empty)
    }

    /// Lets each operator after the first process up to `budget` of its waiting inputs (None:
    /// all, and what that sends on, until every input is empty), in chain order, with `sink`
    /// lent to the one that runs. Flink runs each keyed operator of a chain separated by
    /// `keyBy` in a task thread of its own: a window's results, fired at a watermark, reach the
    /// next operator while the first goes on with its next records, so their writes to the
    /// shared WriteBufferManager interleave (and whichever writes when it is over its limit
    /// flushes). Processing a few inputs per record of the first operator keeps that
    /// interleaving; each operator still sees its inputs in order, each record before the
    /// watermark that follows it, at the processing time it was sent at.
    pub fn run(&mut self, sink: &mut Delivery, budget: Option<usize>) -> Result<(), PipelineError> {
        loop {
            for s in 0..self.stages.len() {
                let mut done = 0;
                while budget.is_none_or(|b| done < b) {
                    let Some(input) = self.inputs[s].pop_front() else {
                        break;
                    };
                    done += 1;
                    let stage = &mut self.stages[s];
                    let out = &mut self.out;
                    let watermark = lend(stage, sink, |stage| {
                        let operator = (stage.op.as_mut(), &mut stage.ctx);
                        let forwarded = match input {
                            Input::Record(record) => {
                                let stream = DOWNSTREAM_STREAM | stage.index as u64;
                                stage.intake.record(record, operator, |ctx, record| {
                                    if ctx.sink.is_tracked() {
                                        ctx.sink.set_origin(origin(stream, record.offset));
                                    }
                                })?;
                                None
                            }
                            Input::Watermark(wm, at) => stage
                                .intake
                                .watermark((wm, at), operator)?
                                .then_some((wm, at)),
                        };
                        out.append(&mut stage.ctx.emitted);
                        Ok(forwarded)
                    })?;
                    match self.inputs.get_mut(s + 1) {
                        Some(next) => {
                            // Stamped with the processing time they were emitted at.
                            for record in self.out.drain(..) {
                                next.push_back(Input::Record(record));
                            }
                            if let Some((wm, at)) = watermark {
                                next.push_back(Input::Watermark(wm, at));
                            }
                        }
                        // Behind the last operator: nobody reads what it emits.
                        None => self.out.clear(),
                    }
                }
            }
            if budget.is_some() || self.is_idle() {
                return Ok(());
            }
        }
    }

    /// Writes out every operator's buffered timer changes.
    pub fn flush_timers(&mut self) -> Result<(), PipelineError> {
        self.stages
            .iter_mut()
            .try_for_each(|s| s.ctx.flush_timers())
    }

    /// RocksDB operations of the operators after the first, summed.
    pub fn ops(&self) -> AccessCounters {
        self.stages.iter().fold(AccessCounters::default(), |a, s| {
            a.plus(&s.ctx.state.counters)
        })
    }

    /// Timers registered and fired by the operators after the first.
    pub fn timer_counts(&self) -> (u64, u64) {
        self.stages.iter().fold((0, 0), |(r, f), s| {
            let (sr, sf) = s.ctx.timer_counts();
            (r + sr, f + sf)
        })
    }
}

/// Runs `f` on `stage` with the serving store lent to its context.
fn lend<'a, T>(
    stage: &mut Stage<'a>,
    sink: &mut Delivery,
    f: impl FnOnce(&mut Stage<'a>) -> Result<T, PipelineError>,
) -> Result<T, PipelineError> {
    std::mem::swap(sink, &mut stage.ctx.sink);
    let result = f(stage);
    std::mem::swap(sink, &mut stage.ctx.sink);
    result
}
