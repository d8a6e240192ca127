//! A two-input job (an interval join) reads the log through a `TwoInputReader`
//! (pipeline/two_inputs.rs): the operator takes records and watermarks in the order Flink's
//! two-input task reads them, its watermark the minimum of the two inputs'. The oracle is told
//! of a record when the operator reads it, so both see the same order.

use super::EngineError;
use super::job::JobRunner;
use crate::config::Millis;
use crate::model::event::Event;
use crate::pipeline::output::origin;
use crate::pipeline::two_inputs::Read;

impl JobRunner<'_> {
    /// One step of a two-input job: the operator takes elements until it has processed a
    /// record (watermarks on the way). False once the source is exhausted and nothing is left
    /// in the gate.
    pub(super) fn step_two_inputs(&mut self) -> Result<bool, EngineError> {
        loop {
            match self.take_element()? {
                None => return Ok(false),
                Some(true) => return Ok(true),
                Some(false) => {}
            }
        }
    }

    /// The operator takes the next element: Some(true) a record, Some(false) a watermark; None
    /// when there is none.
    fn take_element(&mut self) -> Result<Option<bool>, EngineError> {
        let checked = self.checked();
        let Some(reader) = self.two_inputs.as_mut() else {
            return Ok(None);
        };
        let oracle = &mut self.oracle;
        let next = reader.next(&mut self.consumer, &mut self.watermark, checked, |e, at| {
            oracle.on_event(e, at)
        })?;
        match next {
            None => Ok(None),
            Some(Read::Record { event, truth }) => {
                self.process(&event, truth)?;
                Ok(Some(true))
            }
            Some(Read::Watermark(wm)) => {
                self.emit_watermark(wm)?;
                Ok(Some(false))
            }
        }
    }

    /// Everything read ahead, in the task's order: before a checkpoint's snapshot (each input's
    /// records before its barrier are processed first) and at the end.
    pub(super) fn drain_inputs(&mut self) -> Result<(), EngineError> {
        let Some(reader) = self.two_inputs.as_mut() else {
            return Ok(());
        };
        // Read nothing more off the log meanwhile.
        let limit = reader.limit.replace(reader.read());
        let drained = (|| {
            while self.take_element()?.is_some() {}
            Ok(())
        })();
        if let Some(reader) = self.two_inputs.as_mut() {
            reader.limit = limit;
        }
        drained
    }

    /// The operator processes one record (the truth first, when it is told of it now).
    fn process(&mut self, event: &Event, truth: bool) -> Result<(), EngineError> {
        let now = self.consumer.now();
        if truth && self.checked() {
            self.oracle.on_event(event, now)?;
        }
        let start = self.ctx.state.latency.start();
        self.ctx.set_now(now);
        if self.ctx.sink.is_tracked() {
            self.ctx
                .sink
                .set_origin(origin(u64::from(event.partition), event.offset));
        }
        self.job.on_event(event, &mut self.ctx)?;
        self.forward_emitted(now)?;
        self.run_chain(false)?;
        self.processed += 1;
        self.late_events += u64::from(event.event_time <= self.forwarded);
        self.ctx
            .state
            .latency
            .stop(super::snapshot::Op::Event, start);
        Ok(())
    }

    /// A bounded two-input source ends: what is read ahead is processed, then each partition
    /// reports its end some time after its last record, each source's final watermark going to
    /// its input (one source's: to both).
    pub(super) fn end_two_inputs(&mut self, delay: Millis) -> Result<(), EngineError> {
        self.drain_inputs()?;
        let Some(reader) = self.two_inputs.as_ref() else {
            return Ok(());
        };
        for mut end in reader.partition_ends(&self.watermark, delay.0 as i64) {
            if end.partition == usize::MAX {
                // "No more splits" once every partition has ended.
                end.at = self.ctx.now;
            }
            // The replay clock never goes back (TTL reads it).
            self.ctx.set_now(self.ctx.now.max(end.at));
            if let Some(reader) = self.two_inputs.as_mut() {
                reader.finish(&mut self.watermark, end);
            }
            self.drain_inputs()?;
        }
        Ok(())
    }
}
