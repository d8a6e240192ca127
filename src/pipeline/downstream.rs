//! What an operator after a chain's first does with an input, the same for the live job
//! (`engine::chain`) and a preload's warm-up: Flink runs each keyed operator of a chain
//! separated by `keyBy` in a task of its own, which takes the records sent to it in order, each
//! at the processing time it was sent at, and a watermark after the records sent before it.

use super::PipelineError;
use super::operators::{Context, KeyedOperator};
use super::output::Output;
use super::source::Event;

/// Where an operator after the first stands in its input.
#[derive(Debug, Clone, Copy)]
pub struct Intake {
    /// Records it received: the next one's offset.
    pub records_in: u64,
    /// The last watermark it took.
    pub forwarded: i64,
}

impl Intake {
    pub fn new(records_in: u64) -> Self {
        Intake {
            records_in,
            forwarded: i64::MIN,
        }
    }

    /// `op` processes `record` (sent at its `append_time`) with `ctx`, its processing time
    /// moved there first; `before` sees the context and the record (numbered) just before
    /// the operator does. What it emits is stamped with its processing time.
    pub fn record<'a, S: Output>(
        &mut self,
        mut record: Event,
        (op, ctx): (&mut (dyn KeyedOperator<'a, S> + 'a), &mut Context<'a, S>),
        before: impl FnOnce(&mut Context<'a, S>, &Event),
    ) -> Result<(), PipelineError> {
        ctx.set_now(ctx.now.max(record.append_time));
        record.offset = self.records_in;
        self.records_in += 1;
        before(ctx, &record);
        op.on_event(&record, ctx)?;
        stamp(ctx);
        Ok(())
    }

    /// `op` takes watermark `wm`, sent at processing time `at`: its timers fire (what they emit
    /// stamped); false (nothing done) when it is not past the last one it took, which then
    /// goes no further down the chain.
    pub fn watermark<'a, S: Output>(
        &mut self,
        (wm, at): (i64, i64),
        (op, ctx): (&mut (dyn KeyedOperator<'a, S> + 'a), &mut Context<'a, S>),
    ) -> Result<bool, PipelineError> {
        if wm <= self.forwarded {
            return Ok(false);
        }
        self.forwarded = wm;
        ctx.set_now(ctx.now.max(at));
        ctx.advance_watermark(op, wm)?;
        stamp(ctx);
        Ok(true)
    }
}

/// What the operator emitted goes on at its processing time.
fn stamp<S: Output>(ctx: &mut Context<'_, S>) {
    let now = ctx.now;
    for record in &mut ctx.emitted {
        record.append_time = now;
    }
}
