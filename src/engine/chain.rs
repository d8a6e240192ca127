//! The operators of a job after its first: a chain in one slot (Flink: `source -> keyBy -> op0
//! -> keyBy -> op1 ...`, parallelism 1, slot sharing). Each is its own RocksDB instance (its own
//! `RocksDBKeyedStateBackend`) with its own context; they share the slot's managed memory and
//! the one serving store, which is lent to the operator that runs.
//!
//! Operator i's records go to operator i+1 after each `on_event`, and after each watermark
//! (its timers fired), then the watermark: what Flink's `InternalTimeServiceManager`
//! `.advanceWatermark` followed by `output.emitWatermark` delivers downstream.

use std::sync::Arc;

use crate::backend::{AccessCounters, StateBackend};
pub use crate::durability::checkpoint::OperatorMeta;
use crate::durability::delivery::{Delivery, origin};
use crate::durability::sink::MemorySink;
use crate::pipeline::PipelineError;
use crate::pipeline::operators::{self, Context, JobMode, KeyedOperator};
use crate::pipeline::source::Event;

/// The stream ids of records into operator `index` >= 1 (a source partition's id is its
/// number): the results a downstream record causes get an origin from (operator, offset), the
/// same after a restore, so exactly-once delivery recognises a replayed one.
const DOWNSTREAM_STREAM: u64 = 1 << 63;

/// One operator after the first.
pub struct Stage<'a> {
    pub index: usize,
    pub ctx: Context<'a>,
    pub op: Box<dyn KeyedOperator<'a> + 'a>,
    /// The last watermark forwarded to it.
    forwarded: i64,
    /// Records it received: its downstream offsets.
    pub records_in: u64,
}

/// The operators after the first, in chain order (empty for a single operator).
#[derive(Default)]
pub struct Chain<'a> {
    pub stages: Vec<Stage<'a>>,
    /// Scratch for the records between two operators.
    spare: Vec<Vec<Event>>,
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
                forwarded: i64::MIN,
                records_in,
            });
        }
        Ok(Chain {
            spare: vec![Vec::new(); stages.len()],
            stages,
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
                records_in: s.records_in,
            })
            .collect()
    }

    /// Feeds `records` (what the operator before the chain emitted, drained) down the chain at
    /// processing time `now`, with `sink` lent to each operator while it runs.
    pub fn push(
        &mut self,
        sink: &mut Delivery,
        records: &mut Vec<Event>,
        now: i64,
    ) -> Result<(), PipelineError> {
        push(&mut self.stages, &mut self.spare, sink, records, now)
    }

    /// Forwards watermark `wm` down the chain: each operator fires its timers, its records go
    /// on, then the watermark.
    pub fn advance(&mut self, sink: &mut Delivery, wm: i64, now: i64) -> Result<(), PipelineError> {
        advance(&mut self.stages, &mut self.spare, sink, wm, now)
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

fn push<'a>(
    stages: &mut [Stage<'a>],
    spare: &mut [Vec<Event>],
    sink: &mut Delivery,
    records: &mut Vec<Event>,
    now: i64,
) -> Result<(), PipelineError> {
    let (Some((stage, rest)), Some((out, rest_spare))) =
        (stages.split_first_mut(), spare.split_first_mut())
    else {
        // Behind the last operator: nobody reads what it emits.
        records.clear();
        return Ok(());
    };
    for mut record in records.drain(..) {
        record.offset = stage.records_in;
        record.append_time = now;
        stage.records_in += 1;
        lend(stage, sink, |stage| {
            stage.ctx.set_now(stage.ctx.now.max(now));
            if stage.ctx.sink.is_tracked() {
                stage.ctx.sink.set_origin(origin(
                    DOWNSTREAM_STREAM | stage.index as u64,
                    record.offset,
                ));
            }
            stage.op.on_event(&record, &mut stage.ctx)?;
            out.append(&mut stage.ctx.emitted);
            Ok(())
        })?;
        if !out.is_empty() {
            push(rest, rest_spare, sink, out, now)?;
        }
    }
    Ok(())
}

fn advance<'a>(
    stages: &mut [Stage<'a>],
    spare: &mut [Vec<Event>],
    sink: &mut Delivery,
    wm: i64,
    now: i64,
) -> Result<(), PipelineError> {
    let (Some((stage, rest)), Some((out, rest_spare))) =
        (stages.split_first_mut(), spare.split_first_mut())
    else {
        return Ok(());
    };
    if wm <= stage.forwarded {
        return Ok(());
    }
    stage.forwarded = wm;
    lend(stage, sink, |stage| {
        stage.ctx.set_now(stage.ctx.now.max(now));
        stage.ctx.advance_watermark(stage.op.as_mut(), wm)?;
        out.append(&mut stage.ctx.emitted);
        Ok(())
    })?;
    push(rest, rest_spare, sink, out, now)?;
    advance(rest, rest_spare, sink, wm, now)
}
