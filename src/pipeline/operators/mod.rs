//! The keyed operators a job can run, one file per kind behind one small interface: the column
//! families it declares ([`Layout`]), what it does per record and per timer
//! ([`KeyedOperator`]), and what its oracle computes ([`oracle`]).
//!
//! Every kind does to RocksDB what Flink 1.20's own runtime operator does, call for call; each
//! file names the Flink classes it mirrors.

pub mod aggregate;
mod context;
pub mod dedup;
pub mod frequency;
pub mod interval_join;
pub mod process;
mod process_map;
mod process_truth;
pub mod ttl;
pub mod valgen;
pub mod window;

pub use crate::model::layout::{CfDecl, CfRole, Layout, TtlDecl};
pub use context::Context;
pub use frequency::{FrequencyJob, JobMode};

use super::PipelineError;
use super::oracle::{ChainModel, Oracle, TruthModel};
use super::output::Output;
use super::source::Event;
use super::timers::Timer;
use crate::backend::StateBackend;
use crate::config::Workload;
use crate::config::job::OperatorSpec;
pub use crate::model::counters::JobCounters;

/// A keyed stream operator: what it does per record, per timer and per watermark.
/// Its results go to `S`, whatever implements the pipeline's [`Output`].
pub trait KeyedOperator<'a, S: Output> {
    fn on_event(&mut self, event: &Event, ctx: &mut Context<'a, S>) -> Result<(), PipelineError>;

    fn on_timer(&mut self, _timer: &Timer, _ctx: &mut Context<'a, S>) -> Result<(), PipelineError> {
        Ok(())
    }

    fn on_watermark(
        &mut self,
        _watermark: i64,
        _ctx: &mut Context<'a, S>,
    ) -> Result<(), PipelineError> {
        Ok(())
    }

    /// The job's counters (at least `events`).
    fn counters(&self) -> JobCounters;

    /// Goes on from a checkpoint's counters.
    fn restore_counters(&mut self, counters: JobCounters);

    /// Results the operator keeps outside Flink state, as (key, slot, value): running totals of
    /// what it emitted (a join's pairs), which Flink would keep in the downstream operator's
    /// checkpointed state. A checkpoint carries them; none by default.
    fn results_snapshot(&self) -> Vec<(u64, usize, i64)> {
        self.results_of(&|_| true)
    }

    /// [`KeyedOperator::results_snapshot`] of the keys `keep` picks only (a preload's batch
    /// keeps its checked keys': the whole was 24 bytes a key beside its state).
    fn results_of(&self, _keep: &dyn Fn(u64) -> bool) -> Vec<(u64, usize, i64)> {
        Vec::new()
    }

    /// Goes on from a checkpoint's [`KeyedOperator::results_snapshot`].
    fn restore_results(&mut self, _results: &[(u64, usize, i64)]) {}

    /// Keeps the results outside Flink state (above), and writes them to the serving store,
    /// for the keys of one in `sample` only (`oracle::checked`): a preload's batch reads no
    /// other key's, and a dedup's tally of every key was a hash table as big as its state, a
    /// cache miss per new key. The state in RocksDB is the same.
    fn tally_only(&mut self, _sample: u64) {}

    /// The frequency counter, for its backfill's sync and its checks.
    fn as_frequency(&self) -> Option<&FrequencyJob<'a>> {
        None
    }
}

/// The column families `spec`'s operator creates, in Flink's creation order.
pub fn layout(spec: &OperatorSpec) -> Layout {
    match spec {
        OperatorSpec::Frequency(f) => frequency::layout(f),
        OperatorSpec::Dedup(d) => dedup::layout(d),
        OperatorSpec::Aggregate(a) => aggregate::layout(a),
        OperatorSpec::Process(p) => process::layout(p),
        OperatorSpec::Window(w) => window::layout(w),
        OperatorSpec::IntervalJoin(j) => interval_join::layout(j),
    }
}

/// Operator `index` of the workload's chain (`Workload::operators`; 0 for a single operator)
/// on `backend` (opened with [`layout`]'s column families).
pub fn build<'a, S: Output>(
    backend: &'a StateBackend,
    workload: &Workload,
    index: usize,
    mode: JobMode,
) -> Result<Box<dyn KeyedOperator<'a, S> + 'a>, PipelineError> {
    let operators = workload.operators();
    let Some(spec) = operators.into_iter().nth(index) else {
        return Err(PipelineError::NoSuchOperator(index));
    };
    match spec {
        OperatorSpec::Frequency(_) => {
            Ok(Box::new(FrequencyJob::with_mode(backend, workload, mode)?))
        }
        OperatorSpec::Dedup(d) => Ok(Box::new(dedup::Dedup::new(&d, backend, workload)?)),
        OperatorSpec::Aggregate(a) => {
            Ok(Box::new(aggregate::Aggregate::new(&a, backend, workload)?))
        }
        OperatorSpec::Process(p) => Ok(Box::new(process::Process::new(&p, backend, workload)?)),
        OperatorSpec::Window(w) => Ok(Box::new(window::WindowOperator::new(
            &w, backend, workload,
        )?)),
        OperatorSpec::IntervalJoin(j) => Ok(Box::new(interval_join::IntervalJoin::new(
            backend, workload, &j,
        )?)),
    }
}

/// The exact oracle of the workload's job: its operator's, or a chain's (every operator's
/// model fed what the one before it emits, as the engine feeds the operators).
pub fn oracle(workload: &Workload) -> Oracle {
    let operators = workload.operators();
    if let [OperatorSpec::Frequency(f)] = operators.as_slice() {
        let windows: Vec<i64> = f.windows.iter().map(|w| w.0 as i64).collect();
        return Oracle::new(&windows);
    }
    if let [one] = operators.as_slice() {
        return Oracle::with_model(one.result_labels().len(), truth(one, workload));
    }
    let bases = workload.slot_bases();
    let slots = workload.result_labels().len();
    let stages = operators
        .iter()
        .zip(bases)
        .map(|(op, base)| (truth(op, workload), base))
        .collect();
    Oracle::with_model(slots, Box::new(ChainModel::new(stages)))
}

/// The truth model of one operator (`spec`) of `workload`'s job, writing its results in its own
/// slot numbering. (The frequency counter's model is the oracle's own, and it runs only alone.)
pub fn truth(spec: &OperatorSpec, workload: &Workload) -> Box<dyn TruthModel> {
    match spec {
        OperatorSpec::Frequency(_) => Box::new(Nothing),
        OperatorSpec::Dedup(d) => Box::new(dedup::DedupTruth::new(d)),
        OperatorSpec::Aggregate(a) => Box::new(
            aggregate::AggregateTruth::new(a).with_keys(super::source::KeyNames::of(workload)),
        ),
        OperatorSpec::Process(p) => Box::new(process_truth::ProcessTruth::new(
            p,
            super::source::KeyNames::of(workload),
        )),
        OperatorSpec::Window(w) => match window::WindowTruth::new(w) {
            Ok(model) => Box::new(model.with_keys(super::source::KeyNames::of(workload))),
            // A spec that does not validate never runs.
            Err(_) => Box::new(Nothing),
        },
        OperatorSpec::IntervalJoin(j) => Box::new(interval_join::JoinTruth::new(j)),
    }
}

/// A record an operator emits for the next one in a chain: keyed by the same key `user`, at
/// `timestamp` (its StreamRecord's), of `value_size` bytes. The engine numbers it (`offset`:
/// the record's sequence into the next operator) and stamps the processing time
/// (`append_time`); partition and input are 0.
pub fn record(user: u64, timestamp: i64, value_size: u32) -> Event {
    Event {
        user,
        event_time: timestamp,
        partition: 0,
        offset: 0,
        append_time: 0,
        value_size,
        input: 0,
    }
}

/// The model of a kind not built yet: no results.
#[derive(Clone)]
struct Nothing;

impl super::oracle::TruthModel for Nothing {
    fn on_event(&mut self, _: &Event, _: i64, _: &mut super::oracle::Truths) {}
    fn on_watermark(&mut self, _: i64, _: i64, _: &mut super::oracle::Truths) {}
    fn boxed_clone(&self) -> Box<dyn super::oracle::TruthModel> {
        Box::new(self.clone())
    }
}

/// Bytes of `s` as Flink's StringSerializer writes it (`StringValue.writeString`): the length
/// + 1 as a 7-bit varint, then each UTF-16 char in 1 (below 0x80), 2 (below 0x4000) or 3 bytes.
pub fn string_size(s: &str) -> u32 {
    let mut chars = 0u32;
    let mut bytes = 0u32;
    for c in s.encode_utf16() {
        chars += 1;
        bytes += match c {
            0..0x80 => 1,
            0x80..0x4000 => 2,
            _ => 3,
        };
    }
    let mut len = chars + 1;
    let mut varint = 1;
    while len >= 0x80 {
        len >>= 7;
        varint += 1;
    }
    varint + bytes
}

/// Bytes of a `Tuple3<String key, Long, Long>` (TupleSerializer: the fields one after the
/// other): what a reduce over `(key, count, sum)` emits.
pub fn reduced_tuple_size(key: &str) -> u32 {
    string_size(key) + 16
}

/// Bytes of a `Tuple2<Long, Long>` (count, sum): an aggregate function's accumulator/result.
pub const ACCUMULATOR_SIZE: u32 = 16;

/// Bytes of a record a process operator emits per timer fired: the timer's timestamp (a Long).
pub const TIMER_RECORD_SIZE: u32 = 8;

/// SplitMix64's finalizer: a well-mixed 64-bit hash of `x` (also the value-size draw).
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The results' digest of four numbers (DESIGN: the same in the Flink parity job):
/// `h = a; h = h * 1000003 ^ b; h = h * 1000003 ^ c; h = h * 1000003 ^ d; splitmix64(h)`.
pub fn mix(a: i64, b: i64, c: i64, d: i64) -> i64 {
    let mut h = a as u64;
    for x in [b, c, d] {
        h = h.wrapping_mul(1_000_003) ^ (x as u64);
    }
    splitmix64(h) as i64
}

#[cfg(test)]
mod tests;
