//! A preload's warm-up: the job's own operator reads the log's first records with its state in
//! memory (`StateAccess::in_memory`), the keys of a range of key groups at a time, while every
//! record moves the watermark as the live job's do. The operator does to its in-memory state
//! exactly what it does to RocksDB, so the state it leaves is the state a job that read that
//! history holds (timers, TTL timestamps and merged lists included).

use std::ops::Range;

use super::PreloadError;
use super::history::{Advance, BatchRecords, Spilled, Spiller, Watermarks};
use crate::backend::StateBackend;
use crate::backend::keys::key_group;
use crate::backend::memstore::{EPOCHS, MemStore};
use crate::backend::ttl_filter::TtlFilterConfig;
use crate::config::Workload;
use crate::config::job::OperatorSpec;
use crate::durability::delivery::Delivery;
use crate::model::layout::CfRole;
use crate::pipeline::PipelineError;
use crate::pipeline::downstream::Intake;
use crate::pipeline::operators::{self, Context, JobMode, KeyedOperator};
use crate::pipeline::oracle::thread::OracleThread;
use crate::pipeline::source::{Consumer, Event, KeyNames, Log, Offsets, ReadPlan};
use crate::pipeline::two_inputs::{Read, TwoInputReader};
use crate::pipeline::watermark::WATERMARK_EVERY_EVENTS;
use crate::pipeline::watermark::WatermarkValve;

/// How far a warm-up pass reads.
#[derive(Debug, Clone, Copy)]
pub enum Until {
    /// The log's first N records.
    Records(u64),
    /// Until the state held reaches this many bytes, scaled by the share of key groups the
    /// pass holds (a sizing pass), or `cap` records.
    StateBytes { bytes: u64, cap: u64 },
}

/// What one pass leaves.
pub struct Pass {
    /// The state of the pass's key groups.
    pub state: MemStore,
    /// Records read (of every key group).
    pub records: u64,
    /// Records the operator processed (its key groups').
    pub processed: u64,
    /// Where the log stands after them.
    pub offsets: Offsets,
    /// Results the operator keeps outside its state.
    pub results: Vec<(u64, usize, i64)>,
    /// True when `Until::StateBytes` stopped at its cap rather than at the size.
    pub capped: bool,
    /// The processing time the pass's first and last records were read at (ms): a state TTL's
    /// clock (`i64::MAX` and `i64::MIN` without a record).
    pub read_at: (i64, i64),
    /// HEAP timers pending after the history, as Flink's raw keyed state stream (None: ROCKSDB
    /// timers, which are in `state`).
    pub heap_timers: Option<Vec<u8>>,
    /// The operators after the first (a chain's), in chain order. Their results are in
    /// `results`, in the job's slot numbering (`Workload::slot_bases`).
    pub downstream: Vec<DownstreamPass>,
}

/// What an operator after the first (a chain's) holds after a pass.
pub struct DownstreamPass {
    /// The state of the pass's key groups: a record keeps its key down the chain, so the
    /// records an operator reads are of the key groups of the source's records that made them.
    pub state: MemStore,
    /// Records it received (of the pass's key groups).
    pub records_in: u64,
    /// Its HEAP timers, as [`Pass::heap_timers`].
    pub heap_timers: Option<Vec<u8>>,
}

impl Pass {
    /// Bytes of keys and values every operator's state holds.
    pub fn state_bytes(&self) -> u64 {
        self.state.bytes() + self.downstream.iter().map(|d| d.state.bytes()).sum::<u64>()
    }

    /// Entries every operator's state holds.
    pub fn entries(&self) -> u64 {
        (self.state.len() + self.downstream.iter().map(|d| d.state.len()).sum::<usize>()) as u64
    }

    /// Every operator's state, in chain order (taken: the pass is left with empty ones).
    pub fn take_states(&mut self) -> Vec<MemStore> {
        std::iter::once(std::mem::take(&mut self.state))
            .chain(
                self.downstream
                    .iter_mut()
                    .map(|d| std::mem::take(&mut d.state)),
            )
            .collect()
    }
}

/// The plan a warm-up reads the log with: from its first record, with the processing time the
/// live job's plan has.
pub fn plan(log: &Log, live: &ReadPlan, stop_time: Option<i64>) -> ReadPlan {
    ReadPlan {
        group: live.group.clone(),
        start: vec![0; log.partitions()],
        start_reason: "a preload's history".to_string(),
        stop_time,
        deployed_at: live.deployed_at,
        truth_start: vec![0; log.partitions()],
        covered: None,
    }
}

/// What a pass does besides building the state (a `levels: full` build's).
pub enum Layering<'c> {
    None,
    /// Note which keys change in which of `EPOCHS` stretches of a history of `records` records
    /// (the sizing pass that places the cuts).
    Epochs {
        records: u64,
    },
    /// Hand each column family's state to `hand` before the records each of its cuts counts
    /// (`hand(cf, i, state)` for its cut `i`: `at[cf][i]`), and once more at the end (`i` = its
    /// number of cuts).
    Cuts {
        at: &'c [Vec<u64>],
        hand: &'c mut Hand<'c>,
    },
}

/// Takes a column family's layer `i` from the state (`layers::Writers::write`).
pub type Hand<'c> = dyn FnMut(usize, usize, &mut MemStore) -> Result<(), PreloadError> + 'c;

/// The keys a pass holds, and what it does besides.
pub struct Part<'c> {
    pub groups: Range<u16>,
    pub layering: Layering<'c>,
    /// The operator's own results kept: of the keys of one in this many
    /// (`oracle::checked`; 1: all).
    pub checked: u64,
    /// Writes every record the pass reads (of every key group) and every watermark: a pass
    /// over the log that reads the whole history (the sizing pass) spills it for the batches.
    pub spill: Option<&'c mut Spiller>,
}

impl Part<'_> {
    pub fn groups(groups: Range<u16>) -> Self {
        Part {
            groups,
            layering: Layering::None,
            checked: 1,
            spill: None,
        }
    }
}

/// Where a pass reads its records.
pub enum Source<'l> {
    /// The log from its start (`plan`): every record, the pass keeps its key groups'.
    Log(&'l Log, ReadPlan),
    /// The same, generated a few thousand records ahead by a thread of its own: for a pass
    /// that runs alone (sizing, the history's files), whose reading of the log (generating the
    /// records, the partitions' order, the watermarks) then takes the core that would idle.
    /// A two-input job's is read as [`Source::Log`].
    Ahead(&'l Log, ReadPlan),
    /// Key groups of a history spilled once (`history::Spiller`): their records only, and
    /// every watermark the whole log moves.
    Spilled(&'l Spilled, Range<u16>),
}

/// What a pass meets next: a record, or the watermark the job forwards after one.
pub(super) enum Step {
    Record { index: u64, now: i64, event: Event },
    Advance(Advance),
}

/// A [`Source`] as the [`Step`]s in the log's order (`limit`: records of the log at most).
pub(super) enum Steps<'l> {
    Log {
        consumer: Box<Consumer>,
        watermark: WatermarkValve,
        forwarded: i64,
        read: u64,
        /// Records it reads at most: the log stands right after them.
        limit: u64,
        pending: Option<Advance>,
        /// A two-input job reads its inputs as the live job does (its records then come in the
        /// task's order; `read` counts them as the operator takes them).
        two: Option<Box<TwoInputReader>>,
        /// The processing time of the record the operator took last: a two-input job forwards
        /// a watermark at it (the live job's `ctx.now`), however far its reader has read ahead.
        took_at: i64,
    },
    /// A single-input log read ahead by a thread of its own ([`Source::Ahead`]).
    Ahead {
        /// Chunks of steps, the last one said so (`true`): a channel closed before it is a
        /// thread that died, not the log's end.
        chunks: std::sync::mpsc::Receiver<Result<(Vec<Step>, bool), PreloadError>>,
        chunk: std::vec::IntoIter<Step>,
        /// Each partition's next offset after the records handed out: where the log stands
        /// for this pass, whatever the thread has read beyond.
        position: Offsets,
        /// The last chunk came.
        ended: bool,
    },
    Spilled {
        history: &'l Spilled,
        records: BatchRecords,
        next: Option<(u64, i64, Event)>,
        watermarks: Watermarks,
        advance: Option<Advance>,
    },
}

impl<'l> Steps<'l> {
    pub(super) fn new(
        workload: &Workload,
        source: Source<'l>,
        limit: u64,
    ) -> Result<Self, PreloadError> {
        Ok(match source {
            Source::Ahead(log, plan) if !workload.operator().two_inputs() => {
                let position = plan.start.clone();
                Steps::ahead(Steps::from_log(workload, log, plan, limit), position)?
            }
            Source::Log(log, plan) | Source::Ahead(log, plan) => {
                Steps::from_log(workload, log, plan, limit)
            }
            Source::Spilled(history, groups) => {
                let mut records = history.batch(groups)?;
                let next = records.next()?;
                let mut watermarks = history.watermarks()?;
                let advance = watermarks.next()?;
                Steps::Spilled {
                    history,
                    records,
                    next,
                    watermarks,
                    advance,
                }
            }
        })
    }

    /// A [`Source::Log`]'s steps: nothing borrowed, so they may move to a thread of their own.
    fn from_log(workload: &Workload, log: &Log, plan: ReadPlan, limit: u64) -> Steps<'static> {
        let consumer = Box::new(Consumer::new(log, plan));
        let watermark = WatermarkValve::for_workload(workload, consumer.now());
        let two = TwoInputReader::for_workload(workload, log, consumer.now()).map(|mut r| {
            r.limit = Some(limit);
            Box::new(r)
        });
        let took_at = consumer.now();
        Steps::Log {
            consumer,
            watermark,
            forwarded: i64::MIN,
            read: 0,
            limit,
            pending: None,
            two,
            took_at,
        }
    }

    /// `steps` (a single-input log's) read by a thread of its own, a few chunks ahead.
    fn ahead(mut steps: Steps<'static>, position: Offsets) -> Result<Steps<'l>, PreloadError> {
        const CHUNK: usize = 4096;
        let (send, chunks) = std::sync::mpsc::sync_channel(4);
        std::thread::Builder::new()
            .name("statebench-preload-reader".into())
            .spawn(move || {
                let mut chunk = Vec::with_capacity(CHUNK);
                loop {
                    match steps.next() {
                        Ok(Some(step)) => {
                            chunk.push(step);
                            if chunk.len() < CHUNK {
                                continue;
                            }
                            let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK));
                            // The pass ended (it has what it needs, or it stopped): so does this.
                            if send.send(Ok((full, false))).is_err() {
                                return;
                            }
                        }
                        Ok(None) => {
                            let _ = send.send(Ok((chunk, true)));
                            return;
                        }
                        Err(e) => {
                            let _ = send.send(Err(e));
                            return;
                        }
                    }
                }
            })
            .map_err(|e| PreloadError::Preload(format!("cannot start a thread: {e}")))?;
        Ok(Steps::Ahead {
            chunks,
            chunk: Vec::new().into_iter(),
            position,
            ended: false,
        })
    }

    /// True when every record is of the pass's key groups.
    fn batched(&self) -> bool {
        matches!(self, Steps::Spilled { .. })
    }

    /// Records of the whole history, where only the batch's are read.
    fn records(&self) -> Option<u64> {
        match self {
            Steps::Spilled { history, .. } => Some(history.records),
            Steps::Log { .. } | Steps::Ahead { .. } => None,
        }
    }

    pub(super) fn offsets(&self) -> Offsets {
        match self {
            Steps::Spilled { history, .. } => history.offsets.clone(),
            Steps::Log { consumer, .. } => consumer.position().clone(),
            Steps::Ahead { position, .. } => position.clone(),
        }
    }

    pub(super) fn next(&mut self) -> Result<Option<Step>, PreloadError> {
        match self {
            Steps::Log {
                consumer,
                watermark,
                forwarded,
                read,
                limit,
                pending,
                two,
                took_at,
            } => {
                if let Some(a) = pending.take() {
                    return Ok(Some(Step::Advance(a)));
                }
                if let Some(reader) = two {
                    // Reads ahead within `limit`, then what it holds: the history ends as a
                    // savepoint's barrier leaves the job.
                    loop {
                        let next = reader.next(consumer, watermark, false, |_, _| Ok::<_, ()>(()));
                        let now = consumer.now();
                        match next {
                            Ok(Some(Read::Record { event, .. })) => {
                                let index = *read;
                                *read += 1;
                                *took_at = now;
                                return Ok(Some(Step::Record { index, now, event }));
                            }
                            Ok(Some(Read::Watermark(wm))) if wm > *forwarded => {
                                *forwarded = wm;
                                return Ok(Some(Step::Advance(Advance {
                                    after: read.saturating_sub(1),
                                    watermark: wm,
                                    now: *took_at,
                                })));
                            }
                            Ok(Some(Read::Watermark(_))) => {}
                            Ok(None) | Err(()) => return Ok(None),
                        }
                    }
                }
                if *read >= *limit {
                    return Ok(None);
                }
                let Some(event) = consumer.next(|_| {}) else {
                    return Ok(None);
                };
                let now = consumer.now();
                let index = *read;
                watermark.on_record(event.partition as usize, event.event_time, now);
                *read += 1;
                if read.is_multiple_of(WATERMARK_EVERY_EVENTS) {
                    let wm = watermark.advance(now);
                    if wm > *forwarded {
                        *forwarded = wm;
                        *pending = Some(Advance {
                            after: index,
                            watermark: wm,
                            now,
                        });
                    }
                }
                Ok(Some(Step::Record { index, now, event }))
            }
            Steps::Ahead {
                chunks,
                chunk,
                position,
                ended,
            } => loop {
                if let Some(step) = chunk.next() {
                    if let Step::Record { event, .. } = &step {
                        super::history::read_past(position, event);
                    }
                    return Ok(Some(step));
                }
                if *ended {
                    return Ok(None);
                }
                match chunks.recv() {
                    Ok(Ok((next, last))) => {
                        *chunk = next.into_iter();
                        *ended = last;
                    }
                    Ok(Err(e)) => return Err(e),
                    // After the last chunk the thread sends nothing more: closed before it,
                    // the thread died (a panic), and the history would end short.
                    Err(_) => {
                        return Err(PreloadError::Preload(
                            "the thread reading the log stopped before the history's end".into(),
                        ));
                    }
                }
            },
            Steps::Spilled {
                records,
                next,
                watermarks,
                advance,
                ..
            } => {
                // A watermark moved after an earlier record comes before this one.
                if let Some(a) = *advance
                    && next.as_ref().is_none_or(|(index, _, _)| a.after < *index)
                {
                    *advance = watermarks.next()?;
                    return Ok(Some(Step::Advance(a)));
                }
                let Some((index, now, event)) = next.take() else {
                    return Ok(None);
                };
                *next = records.next()?;
                Ok(Some(Step::Record { index, now, event }))
            }
        }
    }
}

/// Per column family of every operator's database (`backends`, in chain order: each one's
/// `StateBackend::column_families`, one after the other), the TTL compaction filter Flink puts
/// on it: a state whose TTL is cleaned in compactions.
pub fn ttl_filters(backends: &[StateBackend], workload: &Workload) -> Vec<Option<TtlFilterConfig>> {
    backends
        .iter()
        .zip(workload.operators())
        .flat_map(|(backend, spec)| ttl_filters_of(backend, &spec))
        .collect()
}

/// [`ttl_filters`] of one operator (`spec`) on its database.
fn ttl_filters_of(backend: &StateBackend, spec: &OperatorSpec) -> Vec<Option<TtlFilterConfig>> {
    let layout = operators::layout(spec);
    backend
        .column_families()
        .iter()
        .map(|name| {
            let decl = layout.cfs.iter().find(|c| c.name == *name)?;
            let CfRole::State { ttl: Some(t), .. } = decl.role else {
                return None;
            };
            backend.ttl_of(name).filter(|(_, cleaned)| *cleaned)?;
            Some(TtlFilterConfig {
                ttl_ms: t.ttl_ms,
                query_time_after: t.query_time_after,
                layout: t.layout,
            })
        })
        .collect()
}

/// A running job's compactions drop its expired entries as they go: the pass drops them too,
/// every half TTL of processing time (its memory and a `size` stay the live state's). A state
/// that has stopped growing over a TTL of history is as big as the TTL keeps it.
struct Expiry {
    filters: Vec<Option<TtlFilterConfig>>,
    /// The shortest TTL.
    ttl: i64,
    next: Option<i64>,
    /// Processing time and bytes held after each purge.
    held: Vec<(i64, u64)>,
}

impl Expiry {
    fn new(filters: Vec<Option<TtlFilterConfig>>) -> Option<Expiry> {
        let ttl = filters.iter().flatten().map(|f| f.ttl_ms).min()?;
        Some(Expiry {
            filters,
            ttl: ttl.max(1),
            next: None,
            held: Vec::new(),
        })
    }

    /// Drops what expired by `now` once half a TTL has passed since the last time.
    fn at(&mut self, now: i64, state: &mut MemStore) {
        let next = *self.next.get_or_insert(now.saturating_add(self.ttl));
        if now < next {
            return;
        }
        for (cf, filter) in self.filters.iter().enumerate() {
            if let Some(f) = filter {
                state.expire(cf, |v| f.drops(v, now));
            }
        }
        self.held.push((now, state.bytes()));
        self.next = Some(now.saturating_add(self.ttl / 2));
    }

    /// True once the state, two TTLs of history on, holds under 5 % more than a TTL before.
    fn settled(&self) -> bool {
        let Some(&(now, bytes)) = self.held.last() else {
            return false;
        };
        let Some(&(first, _)) = self.held.first() else {
            return false;
        };
        if now - first < self.ttl {
            return false;
        }
        self.held
            .iter()
            .rev()
            .find(|(t, _)| *t <= now - self.ttl)
            .is_some_and(|(_, before)| (bytes as f64) < *before as f64 * 1.05)
    }
}

/// An operator after the first (a chain's) in a pass: it reads what the one before it emits,
/// each record at the processing time it was sent at and each watermark after the records sent
/// before it, as `engine::chain` feeds it in the live job.
struct Downstream<'b> {
    ctx: Context<'b, Delivery>,
    job: Box<dyn KeyedOperator<'b, Delivery> + 'b>,
    expiry: Option<Expiry>,
    intake: Intake,
}

impl Downstream<'_> {
    /// Processes `input` (drained) and then `watermark` (with the processing time it was sent
    /// at), appending what it emits to `out`; the watermark it forwards, if it moved.
    fn take(
        &mut self,
        input: &mut Vec<Event>,
        watermark: Option<(i64, i64)>,
        out: &mut Vec<Event>,
    ) -> Result<Option<(i64, i64)>, PipelineError> {
        for record in input.drain(..) {
            let expiry = &mut self.expiry;
            self.intake
                .record(record, (self.job.as_mut(), &mut self.ctx), |ctx, _| {
                    if let (Some(e), Some(mem)) = (expiry, ctx.state.memory_mut()) {
                        e.at(ctx.now, mem);
                    }
                })?;
            out.append(&mut self.ctx.emitted);
        }
        let Some(wm) = watermark else {
            return Ok(None);
        };
        let moved = self
            .intake
            .watermark(wm, (self.job.as_mut(), &mut self.ctx))?;
        out.append(&mut self.ctx.emitted);
        Ok(moved.then_some(wm))
    }
}

/// Sends `emitted` (what the first operator emitted at processing time `now`, drained) and
/// then `watermark` down the chain `stages`, with `sink` lent to the operator that runs.
fn send_down(
    stages: &mut [Downstream<'_>],
    emitted: &mut Vec<Event>,
    (now, watermark): (i64, Option<i64>),
    sink: &mut Delivery,
    scratch: &mut Vec<Event>,
) -> Result<(), PipelineError> {
    if stages.is_empty() {
        emitted.clear();
        return Ok(());
    }
    for record in emitted.iter_mut() {
        record.append_time = now;
    }
    let mut watermark = watermark.map(|wm| (wm, now));
    for stage in stages {
        std::mem::swap(sink, &mut stage.ctx.sink);
        let taken = stage.take(emitted, watermark, scratch);
        std::mem::swap(sink, &mut stage.ctx.sink);
        watermark = taken?;
        // What it emitted is the next one's input.
        std::mem::swap(emitted, scratch);
    }
    // Behind the last operator: nobody reads what it emits.
    emitted.clear();
    Ok(())
}

/// One pass over the log (`plan`) for the keys in key groups `part.groups`: the job's
/// operators, each built on its database in `backends` (chain order; their column families
/// name the state), process them into memory; results go to `sink`, which comes back.
pub fn pass(
    backends: &[StateBackend],
    workload: &Workload,
    source: Source<'_>,
    until: Until,
    part: Part<'_>,
    sink: Delivery,
) -> Result<(Pass, Delivery), PreloadError> {
    let Part {
        groups,
        mut layering,
        checked,
        mut spill,
    } = part;
    let specs = workload.operators();
    let (Some(backend), true) = (backends.first(), backends.len() == specs.len()) else {
        return Err(PreloadError::Preload(format!(
            "{} databases for a job of {} operators",
            backends.len(),
            specs.len()
        )));
    };
    let layout = operators::layout(&specs[0]);
    let mut ctx = Context::in_memory(backend, &layout, sink)?;
    let mut job = operators::build(backend, workload, 0, JobMode::Streaming)?;
    job.tally_only(checked);
    let bases = workload.slot_bases();
    let mut stages = Vec::new();
    for (index, backend) in backends.iter().enumerate().skip(1) {
        let layout = operators::layout(&specs[index]);
        let placeholder =
            Delivery::passthrough(Box::new(crate::durability::sink::MemorySink::default()));
        let ctx = Context::in_memory(backend, &layout, placeholder)?.with_slot_base(bases[index]);
        let mut job = operators::build(backend, workload, index, JobMode::Streaming)?;
        job.tally_only(checked);
        stages.push(Downstream {
            ctx,
            job,
            expiry: match layering {
                Layering::None => Expiry::new(ttl_filters_of(backend, &specs[index])),
                _ => None,
            },
            intake: Intake::new(0),
        });
    }
    // Scratch for the records the operators after the first emit.
    let mut scratch = Vec::new();
    let names = KeyNames::of(workload);
    let limit = match until {
        Until::Records(n) => n,
        Until::StateBytes { .. } => u64::MAX,
    };
    let mut steps = Steps::new(workload, source, limit)?;
    let scale = 256.0 / f64::from((groups.end - groups.start).max(1));
    let mut key = String::new();
    let (mut records, mut processed, mut capped) = (0u64, 0u64, false);
    let mut read_at = (i64::MAX, i64::MIN);
    // Levels cut from the history note every change; expiry is left to the final write there.
    let mut expiry = match layering {
        Layering::None => Expiry::new(ttl_filters_of(backend, &specs[0])),
        _ => None,
    };
    // Every column family's cuts in the order the records reach them.
    let mut cuts: Vec<(u64, usize, usize)> = match &layering {
        Layering::Cuts { at, .. } => at
            .iter()
            .enumerate()
            .flat_map(|(cf, at)| at.iter().enumerate().map(move |(i, r)| (*r, cf, i)))
            .collect(),
        _ => Vec::new(),
    };
    cuts.sort_unstable();
    let mut next_cut = 0;
    if let (Layering::Epochs { .. }, Some(mem)) = (&layering, ctx.state.memory_mut()) {
        mem.track_changes();
    }
    while let Some(step) = steps.next()? {
        // The record's index, or the one the watermark moves after.
        let at = match &step {
            Step::Record { index, .. } => *index,
            Step::Advance(a) => a.after,
        };
        if at.is_multiple_of(super::CANCEL_EVERY)
            && let Err(stopped) = super::check_cancel()
        {
            // The process ends on a stop: the state's memory goes with it, at once, where
            // freeing its millions of entries one by one takes seconds.
            std::mem::forget(ctx);
            std::mem::forget(stages);
            return Err(stopped);
        }
        if let Until::Records(n) = until
            && at >= n
        {
            break;
        }
        match &mut layering {
            Layering::Cuts { hand, .. } => {
                while let Some((_, cf, i)) = cuts.get(next_cut).filter(|c| at >= c.0) {
                    cut(&mut ctx, (*cf, *i), hand)?;
                    next_cut += 1;
                }
            }
            Layering::Epochs { records: total } if at.is_multiple_of(256) => {
                let epoch =
                    (u128::from(at) * EPOCHS as u128 / u128::from((*total).max(1))) as usize;
                if let Some(mem) = ctx.state.memory_mut() {
                    mem.set_epoch(epoch);
                }
            }
            _ => {}
        }
        match step {
            Step::Record { index, now, event } => {
                if let Some(e) = &mut expiry
                    && let Some(mem) = ctx.state.memory_mut()
                {
                    e.at(now, mem);
                }
                if let Until::StateBytes { bytes, cap } = until
                    && index.is_multiple_of(1024)
                {
                    let held = std::iter::once(&ctx)
                        .chain(stages.iter().map(|s| &s.ctx))
                        .map(|c| c.state.memory().map_or(0, MemStore::bytes))
                        .sum::<u64>() as f64
                        * scale;
                    if held >= bytes as f64 {
                        break;
                    }
                    if index >= cap || expiry.as_ref().is_some_and(Expiry::settled) {
                        capped = true;
                        break;
                    }
                }
                read_at = (read_at.0.min(now), read_at.1.max(now));
                ctx.set_now(now);
                let group = (!steps.batched()).then(|| {
                    names.write(event.user, &mut key);
                    key_group(&key)
                });
                if let (Some(out), Some(g)) = (spill.as_deref_mut(), group) {
                    out.record(g, index, now, &event)?;
                }
                let mine = group.is_none_or(|g| groups.contains(&g));
                if mine {
                    job.on_event(&event, &mut ctx)?;
                    send_down(
                        &mut stages,
                        &mut ctx.emitted,
                        (now, None),
                        &mut ctx.sink,
                        &mut scratch,
                    )?;
                    processed += 1;
                }
                records = index + 1;
            }
            Step::Advance(a) => {
                if let Some(out) = spill.as_deref_mut() {
                    out.advance(&a)?;
                }
                ctx.set_now(a.now);
                ctx.advance_watermark(job.as_mut(), a.watermark)?;
                send_down(
                    &mut stages,
                    &mut ctx.emitted,
                    (a.now, Some(a.watermark)),
                    &mut ctx.sink,
                    &mut scratch,
                )?;
            }
        }
    }
    ctx.flush_timers()?;
    for stage in &mut stages {
        stage.ctx.flush_timers()?;
    }
    if let Layering::Cuts { at, hand } = &mut layering {
        // Cuts the log did not reach, then each column family's last stretch.
        for (_, cf, i) in cuts.iter().skip(next_cut) {
            cut(&mut ctx, (*cf, *i), hand)?;
        }
        for (cf, at) in at.iter().enumerate() {
            cut(&mut ctx, (cf, at.len()), hand)?;
        }
    }
    ctx.sink.flush().map_err(PipelineError::from)?;
    let state = ctx.state.take_memory().unwrap_or_default();
    let keep = |key| crate::pipeline::oracle::checked(key, checked);
    let mut results = job.results_of(&keep);
    let mut downstream = Vec::new();
    for stage in stages {
        let base = stage.ctx.slot_base;
        results.extend(
            stage
                .job
                .results_of(&keep)
                .into_iter()
                .map(|(key, slot, value)| (key, base + slot, value)),
        );
        let heap_timers = stage.ctx.timers.as_ref().and_then(|t| t.raw_keyed_state());
        let mut ctx = stage.ctx;
        downstream.push(DownstreamPass {
            state: ctx.state.take_memory().unwrap_or_default(),
            records_in: stage.intake.records_in,
            heap_timers,
        });
    }
    let heap_timers = ctx.timers.as_ref().and_then(|t| t.raw_keyed_state());
    Ok((
        Pass {
            state,
            records: steps.records().unwrap_or(records),
            processed,
            offsets: steps.offsets(),
            results,
            capped,
            read_at,
            heap_timers,
            downstream,
        },
        ctx.sink,
    ))
}

/// Hands the state as it stands (timers written out) to `hand` as column family `cf`'s cut `i`.
fn cut(
    ctx: &mut Context<'_, Delivery>,
    (cf, i): (usize, usize),
    hand: &mut Hand<'_>,
) -> Result<(), PreloadError> {
    ctx.flush_timers()?;
    match ctx.state.memory_mut() {
        Some(mem) => hand(cf, i, mem),
        None => Ok(()),
    }
}

/// Feeds `oracle` the log's first `records` records and the watermarks a job reading them
/// emits, as the live job would have: the truth of the preloaded history. Returns the last
/// watermark it saw. `tail` keeps the keys of the history's last records (a warm cache's).
pub fn prime_oracle(
    oracle: &mut OracleThread,
    workload: &Workload,
    log: &Log,
    plan: ReadPlan,
    records: u64,
    mut tail: Option<&mut super::warm::Tail>,
) -> Result<i64, PreloadError> {
    let mut consumer = Consumer::new(log, plan);
    let mut watermark = WatermarkValve::for_workload(workload, consumer.now());
    let mut forwarded = i64::MIN;
    // A two-input job's truth reads the inputs in the order its operator does.
    if let Some(mut reader) = TwoInputReader::for_workload(workload, log, consumer.now()) {
        reader.limit = Some(records);
        while let Some(read) = reader.next(&mut consumer, &mut watermark, true, |e, at| {
            oracle.on_event(e, at)
        })? {
            match read {
                Read::Record { event, truth } => {
                    if truth {
                        oracle.on_event(&event, consumer.now())?;
                    }
                    if let Some(tail) = tail.as_deref_mut() {
                        tail.push(event.user);
                    }
                }
                Read::Watermark(wm) => {
                    if wm > forwarded {
                        forwarded = wm;
                        oracle.on_watermark(wm)?;
                    }
                }
            }
        }
        oracle.sync()?;
        return Ok(forwarded);
    }
    for read in 1..=records {
        let mut gone = Ok(());
        let mut now = consumer.now();
        let next = consumer.next(|e| {
            now = now.max(e.append_time);
            if gone.is_ok() {
                gone = oracle.on_event(e, now);
            }
        });
        gone?;
        let Some(event) = next else { break };
        if let Some(tail) = tail.as_deref_mut() {
            tail.push(event.user);
        }
        let now = consumer.now();
        watermark.on_record(event.partition as usize, event.event_time, now);
        if read.is_multiple_of(WATERMARK_EVERY_EVENTS) {
            let wm = watermark.advance(now);
            if wm > forwarded {
                forwarded = wm;
                oracle.on_watermark(wm)?;
            }
        }
    }
    oracle.sync()?;
    Ok(forwarded)
}
