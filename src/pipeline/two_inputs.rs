//! A two-input task's reading of its inputs (Flink 1.20's `TwoInputStreamTask`: one
//! `StreamTaskNetworkInput` and watermark valve per input, `StreamMultipleInputProcessor` choosing
//! between them): records and watermarks of the log, in the order the operator sees them, with
//! the operator's watermark the minimum of the two inputs' (`IndexedCombinedWatermarkStatus`).
//! docs/notes/flink-two-inputs.md has Flink's source for every rule here.
//!
//! With both inputs backed up (`ReadOrder::Alternate`) the task reads one element, record or
//! watermark, from each input in turn, the first input first; an input with nothing buffered is
//! skipped, and read next once it has something again. The source runs ahead of the join until
//! each input has an element buffered or one input holds `capacity` bytes (Flink's backpressure:
//! the source stops when one of its outputs has no free network buffer). `ReadOrder::Arrival`
//! reads the elements in the order they were written.

use std::collections::VecDeque;

use crate::config::Workload;
use crate::config::job::OperatorSpec;
use crate::config::job::interval_join::{JoinSources, ReadOrder};
use crate::model::event::Event;
use crate::pipeline::source::{Consumer, Log};
use crate::pipeline::watermark::{WATERMARK_EVERY_EVENTS, WatermarkValve};

/// Bytes buffered per input before the source stops: Flink's default backpressure depth of an
/// output (10 network buffers, `taskmanager.memory.segment-size` 32 KiB, at parallelism 1).
pub const INPUT_CAPACITY: u64 = 10 * 32 * 1024;

/// A record's bytes on the wire beyond its value: the length (4), the tag (1), the timestamp (8)
/// and the key (about 8).
const RECORD_OVERHEAD: u64 = 21;
/// A watermark's bytes on the wire: length, tag, timestamp.
const WATERMARK_BYTES: u64 = 13;

/// One element of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Element {
    /// A record, and whether the oracle is told of it when the operator reads it.
    Record(Event, bool),
    /// A watermark of this input, or the input turning idle (`WatermarkStatus.IDLE`: it no
    /// longer holds the combined watermark back) when `idle`.
    Watermark { wm: i64, idle: bool },
}

/// What the operator gets next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivered {
    /// A record, and whether the oracle is told of it (as given to `push_record`).
    Record(Event, bool),
    /// The operator's (combined) watermark moved to this.
    Watermark(i64),
    /// An element that moved nothing (a watermark not above its input's last, or one that left
    /// the minimum where it was): a turn of the task all the same.
    Nothing,
}

/// The two inputs' buffers and watermarks.
#[derive(Debug, Clone)]
pub struct Gate {
    order: ReadOrder,
    capacity: u64,
    /// Per input: its elements, each with its sequence number (the order written).
    queues: [VecDeque<(u64, Element)>; 2],
    bytes: [u64; 2],
    written: u64,
    /// The input read last (`lastReadInputIndex`: 1 at the start, so input 0 comes first).
    last: usize,
    /// Per input: the last watermark its valve forwarded, and whether it is idle.
    input_wm: [i64; 2],
    idle: [bool; 2],
    /// The operator's watermark: the minimum over the active inputs, never going back.
    combined: i64,
}

impl Gate {
    pub fn new(order: ReadOrder, capacity: u64) -> Gate {
        Gate {
            order,
            capacity: capacity.max(1),
            queues: [VecDeque::new(), VecDeque::new()],
            bytes: [0; 2],
            written: 0,
            last: 1,
            input_wm: [i64::MIN; 2],
            idle: [false; 2],
            combined: i64::MIN,
        }
    }

    /// A record for its input (`event.input`: 0 left, else right); `truth`: the oracle is told
    /// of it when the operator reads it.
    pub fn push_record(&mut self, event: Event, truth: bool) {
        let input = usize::from(event.input.min(1));
        self.bytes[input] += RECORD_OVERHEAD + u64::from(event.value_size);
        self.push(input, Element::Record(event, truth));
    }

    /// A watermark of `input`'s source (None: one source's watermark, to both inputs).
    pub fn push_watermark(&mut self, input: Option<usize>, wm: i64) {
        self.push_status(input, wm, false);
    }

    /// `input` turned idle (None: both): it stops holding the operator's watermark back until
    /// its next watermark.
    pub fn push_idle(&mut self, input: Option<usize>) {
        self.push_status(input, i64::MIN, true);
    }

    fn push_status(&mut self, input: Option<usize>, wm: i64, idle: bool) {
        let inputs = match input {
            Some(i) => i.min(1)..i.min(1) + 1,
            None => 0..2,
        };
        for i in inputs {
            self.bytes[i] += WATERMARK_BYTES;
            self.push(i, Element::Watermark { wm, idle });
        }
    }

    fn push(&mut self, input: usize, element: Element) {
        self.queues[input].push_back((self.written, element));
        self.written += 1;
    }

    /// True while the source should read on before the operator takes its next element: in
    /// arrival order while nothing is buffered; backed up while an input has nothing buffered
    /// and neither is full.
    pub fn wants_more(&self) -> bool {
        let [a, b] = &self.queues;
        match self.order {
            ReadOrder::Arrival => a.is_empty() && b.is_empty(),
            ReadOrder::Alternate => {
                (a.is_empty() || b.is_empty()) && self.bytes.iter().all(|b| *b < self.capacity)
            }
        }
    }

    /// `position` (the log's next offset per partition) less the records buffered: where the
    /// operator (and its truth) stands.
    pub fn taken(&self, mut position: Vec<u64>) -> Vec<u64> {
        for (_, element) in self.queues.iter().flatten() {
            if let Element::Record(e, _) = element
                && let Some(p) = position.get_mut(e.partition as usize)
            {
                *p = (*p).min(e.offset);
            }
        }
        position
    }

    /// The next element the operator sees; None when nothing is buffered.
    pub fn pop(&mut self) -> Option<Delivered> {
        let input = self.next_input()?;
        self.last = input;
        let (_, element) = self.queues[input].pop_front()?;
        Some(match element {
            Element::Record(event, truth) => {
                self.bytes[input] -= RECORD_OVERHEAD + u64::from(event.value_size);
                Delivered::Record(event, truth)
            }
            Element::Watermark { wm, idle } => {
                self.bytes[input] -= WATERMARK_BYTES;
                self.on_status(input, wm, idle)
            }
        })
    }

    /// `fairSelectNextIndex`: of the inputs with something buffered, the one not read last; in
    /// arrival order, the element written first.
    fn next_input(&self) -> Option<usize> {
        let [a, b] = &self.queues;
        match (a.front(), b.front()) {
            (None, None) => None,
            (Some(_), None) => Some(0),
            (None, Some(_)) => Some(1),
            (Some((sa, _)), Some((sb, _))) => Some(match self.order {
                ReadOrder::Alternate => 1 - self.last,
                ReadOrder::Arrival => usize::from(sb < sa),
            }),
        }
    }

    /// `StatusWatermarkValve` per input (strictly rising), then `CombinedWatermarkStatus`: the
    /// minimum over the inputs that are not idle, forwarded when it rises.
    fn on_status(&mut self, input: usize, wm: i64, idle: bool) -> Delivered {
        if idle {
            self.idle[input] = true;
        } else {
            self.idle[input] = false;
            if wm <= self.input_wm[input] {
                return Delivered::Nothing;
            }
            self.input_wm[input] = wm;
        }
        let min = (0..2)
            .filter(|i| !self.idle[*i])
            .map(|i| self.input_wm[i])
            .min();
        match min {
            Some(min) if min > self.combined => {
                self.combined = min;
                Delivered::Watermark(min)
            }
            _ => Delivered::Nothing,
        }
    }
}

/// What a two-input job's reading hands the operator next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// A record; `truth`: the oracle learns of it now (it learnt of the records the consumer
    /// skipped when they were passed over).
    Record { event: Event, truth: bool },
    /// The operator's watermark moved to this.
    Watermark(i64),
}

/// A two-input job's reading of the log (an interval join): the source reads records ahead
/// into the `Gate`, each to its input, and its watermark after every
/// `WATERMARK_EVERY_EVENTS` records (`sources: one`: the job's valve over every partition, to
/// both inputs; `two`: each input's source over its own partitions, after every 64 of its own
/// records); the operator takes the gate's elements. The engine's job, the preload's history
/// and the oracles of both read through it, so they see one order.
#[derive(Debug, Clone)]
pub struct TwoInputReader {
    gate: Gate,
    /// A source per input; None: one source, the caller's valve.
    sources: Option<[InputSource; 2]>,
    /// Records read off the log.
    read: u64,
    /// Per input (index 0 for one source): the last watermark sent, and whether it is idle.
    sent: [i64; 2],
    idle: [bool; 2],
    /// The workload marks idle partitions (`idleness`).
    idleness: bool,
    /// Records read off the log at most (the job's `--events`, a preload's history).
    pub limit: Option<u64>,
    /// What the consumer passed over while reading one record (reused).
    seen: Vec<(Event, i64)>,
}

/// One input's own source.
#[derive(Debug, Clone)]
struct InputSource {
    valve: WatermarkValve,
    /// Per log partition: its index in `valve`, when it carries this input's records.
    local: Vec<Option<usize>>,
    read: u64,
}

impl InputSource {
    fn new(partitions: &[u32], all: usize, workload: &Workload, now: i64) -> InputSource {
        let mut local = vec![None; all];
        for (i, p) in partitions.iter().enumerate() {
            if let Some(slot) = local.get_mut(*p as usize) {
                *slot = Some(i);
            }
        }
        let spec = &workload.spec;
        InputSource {
            valve: WatermarkValve::with_readers(
                partitions.len(),
                spec.source.readers.map_or(partitions.len(), |r| r as usize),
                spec.event_time.out_of_orderness.0 as i64,
                spec.idleness.map(|i| i.0 as i64),
                now,
            ),
            local,
            read: 0,
        }
    }
}

/// Where a bounded source's partition ends: at `at`, partition `partition` of `input`'s source
/// (None: the one source's), `usize::MAX` for "no more splits".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PartitionEnd {
    pub at: i64,
    pub input: Option<usize>,
    pub partition: usize,
}

impl TwoInputReader {
    /// The reading of `workload`'s job when its first operator has two inputs.
    pub fn for_workload(workload: &Workload, log: &Log, now: i64) -> Option<TwoInputReader> {
        let OperatorSpec::IntervalJoin(spec) = workload.operator() else {
            return None;
        };
        let inputs = workload.spec.inputs.as_deref();
        // Said by the workload's loading (Workload::from_spec).
        let sources = (spec.sources == Some(JoinSources::Two)).then(|| {
            let all = workload.spec.partitions;
            let [left, right] = log.input_partitions().unwrap_or_else(|| {
                let left = inputs.and_then(|i| i.first()).map(|i| i.partitions);
                let (l, r) = spec.input_partitions(all, left);
                [l.collect(), r.collect()]
            });
            [
                InputSource::new(&left, all as usize, workload, now),
                InputSource::new(&right, all as usize, workload, now),
            ]
        });
        Some(TwoInputReader {
            gate: Gate::new(spec.read, INPUT_CAPACITY),
            sources,
            read: 0,
            sent: [i64::MIN; 2],
            idle: [false; 2],
            idleness: workload.spec.idleness.is_some(),
            limit: None,
            seen: Vec::new(),
        })
    }

    /// The next element the operator takes, reading the log ahead as the gate wants; None once
    /// the log (or `limit`) is read and the gate is empty. `valve`: the job's valve over every
    /// partition (one source's watermarks; with a source per input only fed, for what the job
    /// shows). `skipped` learns of the records the consumer passes over, with their time, when
    /// `checked`.
    pub fn next<E>(
        &mut self,
        consumer: &mut Consumer,
        valve: &mut WatermarkValve,
        checked: bool,
        mut skipped: impl FnMut(&Event, i64) -> Result<(), E>,
    ) -> Result<Option<Read>, E> {
        loop {
            self.read_ahead(consumer, valve, checked, &mut skipped)?;
            match self.gate.pop() {
                None => return Ok(None),
                Some(Delivered::Record(event, truth)) => {
                    return Ok(Some(Read::Record { event, truth }));
                }
                Some(Delivered::Watermark(wm)) => return Ok(Some(Read::Watermark(wm))),
                Some(Delivered::Nothing) => {}
            }
        }
    }

    /// Reads records off the log into the gate while it wants more.
    fn read_ahead<E>(
        &mut self,
        consumer: &mut Consumer,
        valve: &mut WatermarkValve,
        checked: bool,
        skipped: &mut impl FnMut(&Event, i64) -> Result<(), E>,
    ) -> Result<(), E> {
        while self.gate.wants_more() && self.limit.is_none_or(|l| self.read < l) {
            let mut now = consumer.now();
            let seen = &mut self.seen;
            let next = consumer.next(|e| {
                now = now.max(e.append_time);
                if checked {
                    seen.push((*e, now));
                }
            });
            // The truth learns of skipped records now, of the one read when the operator
            // reads it.
            let deferred = next.is_some_and(|e| {
                self.seen
                    .last()
                    .is_some_and(|(s, _)| (s.partition, s.offset) == (e.partition, e.offset))
            });
            let passed = self.seen.len() - usize::from(deferred);
            for (e, at) in self.seen.drain(..passed) {
                skipped(&e, at)?;
            }
            self.seen.clear();
            let Some(event) = next else {
                break;
            };
            let now = consumer.now();
            self.gate.push_record(event, deferred);
            valve.on_record(event.partition as usize, event.event_time, now);
            self.read += 1;
            let every = self.read.is_multiple_of(WATERMARK_EVERY_EVENTS);
            let Some(sources) = &mut self.sources else {
                if every {
                    let wm = valve.advance(now);
                    self.send(None, wm, false);
                }
                continue;
            };
            if every {
                valve.advance(now);
            }
            let i = usize::from(event.input.min(1));
            let source = &mut sources[i];
            if let Some(Some(local)) = source.local.get(event.partition as usize) {
                source.valve.on_record(*local, event.event_time, now);
            }
            source.read += 1;
            let mut due = [false; 2];
            due[i] = source.read.is_multiple_of(WATERMARK_EVERY_EVENTS);
            // A source without records turns idle on its own clock: looked at as often as the
            // other emits.
            if every && self.idleness {
                due[1 - i] = true;
            }
            let mut sends = [None; 2];
            for (k, due) in due.into_iter().enumerate() {
                if due {
                    let valve = &mut sources[k].valve;
                    sends[k] = Some((valve.advance(now), valve.all_idle()));
                }
            }
            for (k, send) in sends.into_iter().enumerate() {
                if let Some((wm, idle)) = send {
                    self.send(Some(k), wm, idle);
                }
            }
        }
        Ok(())
    }

    /// A source's watermark (`input` None: the one source's, to both inputs), sent when it
    /// rose; an idle source sends its idleness once.
    fn send(&mut self, input: Option<usize>, wm: i64, idle: bool) {
        let k = input.unwrap_or(0);
        if idle {
            if !self.idle[k] {
                self.idle[k] = true;
                self.gate.push_idle(input);
            }
        } else if wm > self.sent[k] || self.idle[k] {
            self.idle[k] = false;
            self.sent[k] = self.sent[k].max(wm);
            self.gate.push_watermark(input, wm);
        }
    }

    /// Where the operator stands in the log: the consumer's `position` less what is read ahead.
    pub fn taken(&self, position: &[u64]) -> Vec<u64> {
        self.gate.taken(position.to_vec())
    }

    /// Records read off the log so far.
    pub fn read(&self) -> u64 {
        self.read
    }

    /// A bounded source's ends, in time order: each partition `delay` after its last record,
    /// then each source's "no more splits". Read the gate empty first (`next`).
    pub fn partition_ends(&self, valve: &WatermarkValve, delay: i64) -> Vec<PartitionEnd> {
        let mut ends: Vec<PartitionEnd> = match &self.sources {
            None => valve
                .last_record_times()
                .iter()
                .enumerate()
                .map(|(partition, at)| PartitionEnd {
                    at: at + delay,
                    input: None,
                    partition,
                })
                .collect(),
            Some(sources) => sources
                .iter()
                .enumerate()
                .flat_map(|(i, s)| {
                    s.valve.last_record_times().into_iter().enumerate().map(
                        move |(partition, at)| PartitionEnd {
                            at: at + delay,
                            input: Some(i),
                            partition,
                        },
                    )
                })
                .collect(),
        };
        ends.sort();
        let last = ends.last().map_or(i64::MIN, |e| e.at);
        let inputs: &[Option<usize>] = match self.sources {
            Some(_) => &[Some(0), Some(1)],
            None => &[None],
        };
        ends.extend(inputs.iter().map(|input| PartitionEnd {
            at: last,
            input: *input,
            partition: usize::MAX,
        }));
        ends
    }

    /// A partition (or a source) ends: its source's watermark goes into the gate; `next` hands
    /// the operator what that moves.
    pub fn finish(&mut self, valve: &mut WatermarkValve, end: PartitionEnd) {
        let valve = match (end.input, self.sources.as_mut()) {
            (Some(i), Some(sources)) => &mut sources[i].valve,
            _ => valve,
        };
        if end.partition == usize::MAX {
            valve.on_source_finished(end.at);
        } else {
            valve.on_partition_finished(end.partition, end.at);
        }
        let wm = valve.advance(end.at);
        let idle = end.input.is_some() && valve.all_idle();
        self.send(end.input, wm, idle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(input: u8, time: i64) -> Event {
        Event {
            user: 1,
            event_time: time,
            partition: u32::from(input),
            offset: 0,
            append_time: 0,
            value_size: 10,
            input,
        }
    }

    fn drain(gate: &mut Gate) -> Vec<String> {
        std::iter::from_fn(|| gate.pop())
            .map(|d| match d {
                Delivered::Record(e, _) => {
                    format!("{}{}", ["L", "R"][usize::from(e.input)], e.event_time)
                }
                Delivered::Watermark(wm) => format!("W{wm}"),
                Delivered::Nothing => "-".to_string(),
            })
            .collect()
    }

    #[test]
    fn backed_up_inputs_take_turns_from_the_first_and_skip_an_empty_one() {
        let mut gate = Gate::new(ReadOrder::Alternate, INPUT_CAPACITY);
        for (input, time) in [(0, 1), (0, 2), (0, 3), (1, 10), (1, 11), (0, 4)] {
            gate.push_record(record(input, time), true);
        }
        assert_eq!(drain(&mut gate), ["L1", "R10", "L2", "R11", "L3", "L4"]);
        // The input read last was the left: the right goes first once both have data.
        gate.push_record(record(0, 5), true);
        gate.push_record(record(1, 12), true);
        assert_eq!(drain(&mut gate), ["R12", "L5"]);
    }

    #[test]
    fn arrival_order_is_the_order_written() {
        let mut gate = Gate::new(ReadOrder::Arrival, INPUT_CAPACITY);
        for (input, time) in [(1, 10), (0, 1), (0, 2), (1, 11)] {
            gate.push_record(record(input, time), true);
        }
        assert_eq!(drain(&mut gate), ["R10", "L1", "L2", "R11"]);
    }

    #[test]
    fn the_operator_watermark_is_the_minimum_of_the_inputs_and_only_rises() {
        let mut gate = Gate::new(ReadOrder::Alternate, INPUT_CAPACITY);
        gate.push_watermark(Some(0), 100);
        gate.push_watermark(Some(0), 300);
        gate.push_watermark(Some(1), 200);
        gate.push_watermark(Some(1), 150);
        gate.push_watermark(Some(1), 400);
        // L100 (the right input has none yet), R200 (the left's 100 is the minimum), L300,
        // R150 (not above the right's 200), R400.
        assert_eq!(drain(&mut gate), ["-", "W100", "W200", "-", "W300"]);
        // One source's watermark reaches both inputs: the operator's reaches it when the
        // second copy is read.
        gate.push_watermark(None, 500);
        assert_eq!(drain(&mut gate), ["W400", "W500"]);
        let mut gate = Gate::new(ReadOrder::Alternate, INPUT_CAPACITY);
        gate.push_watermark(None, 500);
        assert_eq!(drain(&mut gate), ["-", "W500"]);
    }

    #[test]
    fn an_idle_input_holds_nothing_back() {
        let mut gate = Gate::new(ReadOrder::Arrival, INPUT_CAPACITY);
        gate.push_watermark(Some(0), 100);
        gate.push_idle(Some(1));
        gate.push_watermark(Some(0), 200);
        gate.push_watermark(Some(1), 150);
        assert_eq!(drain(&mut gate), ["-", "W100", "W200", "-"]);
    }

    #[test]
    fn the_source_reads_ahead_until_each_input_has_an_element_or_one_is_full() {
        let mut gate = Gate::new(ReadOrder::Alternate, 3 * (RECORD_OVERHEAD + 10));
        assert!(gate.wants_more());
        gate.push_record(record(0, 1), true);
        gate.push_record(record(0, 2), true);
        assert!(gate.wants_more(), "the right input has nothing yet");
        gate.push_record(record(0, 3), true);
        assert!(
            !gate.wants_more(),
            "the left input is full: the source waits"
        );
        gate.pop();
        assert!(gate.wants_more());
        gate.push_record(record(1, 10), true);
        assert!(!gate.wants_more());
        let mut arrival = Gate::new(ReadOrder::Arrival, INPUT_CAPACITY);
        arrival.push_record(record(0, 1), true);
        assert!(!arrival.wants_more());
    }
}
