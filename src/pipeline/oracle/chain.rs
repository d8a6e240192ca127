//! A chain's oracle: each operator's model fed what the one before it emits.

use super::{TruthModel, Truths};
use crate::pipeline::source::Event;

/// One operator of a chain in the oracle: its model and where its result slots start.
struct Stage {
    model: Box<dyn TruthModel>,
    base: usize,
    /// Records fed to this operator so far (a downstream record's `offset`).
    offset: u64,
}

/// A chain's model: operator 0's model reads the job's records, and what model i emits feeds
/// model i + 1 as the engine feeds the operators (after each record or watermark of model i,
/// its emitted records in order, then the watermark); each model writes its truths at its
/// slot base.
pub struct ChainModel {
    stages: Vec<Stage>,
}

impl ChainModel {
    /// The chain of `stages`: each model with its slot base, in chain order.
    pub fn new(stages: Vec<(Box<dyn TruthModel>, usize)>) -> ChainModel {
        ChainModel {
            stages: stages
                .into_iter()
                .map(|(model, base)| Stage {
                    model,
                    base,
                    offset: 0,
                })
                .collect(),
        }
    }

    /// Runs `first` on the first stage, then each stage's emitted records (and `watermark`,
    /// when given) through the next.
    fn run(
        &mut self,
        first: Option<&Event>,
        watermark: Option<i64>,
        now: i64,
        truths: &mut Truths,
    ) {
        let mut batch: Vec<Event> = first.cloned().into_iter().collect();
        let mut out = Vec::new();
        for (i, stage) in self.stages.iter_mut().enumerate() {
            truths.base = stage.base;
            for record in &mut batch {
                if i > 0 {
                    // As the engine numbers a downstream record.
                    record.offset = stage.offset;
                    record.append_time = now;
                    stage.offset += 1;
                }
                stage.model.on_event(record, now, truths);
                stage.model.drain_emitted(&mut out);
            }
            if let Some(watermark) = watermark {
                stage.model.on_watermark(watermark, now, truths);
                stage.model.drain_emitted(&mut out);
            }
            batch.clear();
            std::mem::swap(&mut batch, &mut out);
        }
        truths.base = 0;
    }
}

impl TruthModel for ChainModel {
    fn on_event(&mut self, event: &Event, now: i64, truths: &mut Truths) {
        self.run(Some(event), None, now, truths);
    }

    fn on_watermark(&mut self, watermark: i64, now: i64, truths: &mut Truths) {
        self.run(None, Some(watermark), now, truths);
    }

    fn boxed_clone(&self) -> Box<dyn TruthModel> {
        Box::new(ChainModel {
            stages: self
                .stages
                .iter()
                .map(|s| Stage {
                    model: s.model.boxed_clone(),
                    base: s.base,
                    offset: s.offset,
                })
                .collect(),
        })
    }
}
