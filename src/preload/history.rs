//! A preload's history read from the log once. A build in several key-group batches needs each
//! batch's records and every watermark the whole log moves; reading the log again for every
//! batch (generating every record, naming its key and hashing it to its key group) was most of
//! a big build's time (51 batches of 170 M records for 10 GiB of days-app state). So the
//! history is written once, each record with the processing time it was read at into its key
//! group's file, and every watermark the job would forward and when into a file of its own
//! (at most one every 64 records: 3.3 M of them, 79 MB, in a 10 GiB dedup's 848 M records);
//! each batch then reads its key groups' files, merged back into the log's order, and the
//! watermarks'. The sizing pass, which reads the whole history anyway, writes them as it goes
//! ([`Spiller`]); a separate pass ([`spill`]) only where it cannot.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read as _, Write as _};
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::PreloadError;
use super::base::io;
use super::warmup::{Source, Step, Steps};
use crate::backend::keys::{MAX_PARALLELISM, key_group};
use crate::config::Workload;
use crate::pipeline::source::{Event, KeyNames, Log, Offsets, ReadPlan};
use crate::util::varint;

/// A watermark the job forwards after record `after` (its index in the log's order), with the
/// processing time of that record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Advance {
    pub after: u64,
    pub watermark: i64,
    pub now: i64,
}

/// The history, split by key group.
pub struct Spilled {
    /// One file per key group.
    files: Vec<PathBuf>,
    /// Every watermark the job forwards, in the log's order.
    advances: PathBuf,
    /// How many.
    pub watermarks: u64,
    /// Records of history (of every key group).
    pub records: u64,
    /// Where the log stands after them.
    pub offsets: Offsets,
}

/// A record in a key group's file: its length in a byte, then its fields as varints, each the
/// difference from the file's previous record where that is small (its index, processing
/// and event time, its partition's offset): 15-20 bytes where the fields whole took 57 (the
/// 10 GiB dedup's 848 M records were 48 GB of files, written and read back at disk speed).
#[derive(Default)]
struct Delta {
    index: u64,
    now: i64,
    event_time: i64,
    /// Each partition's last offset.
    offsets: Vec<u64>,
}

/// Partitions a key group's file may name (a damaged file names more).
const MAX_PARTITIONS: u32 = 1 << 20;

/// Bytes an [`Advance`] takes in the watermarks' file.
const ADVANCE: usize = 8 + 8 + 8;

/// Buffer of each of the 256 files written or read at once.
const FILE_BUFFER: usize = 64 << 10;

/// Writes a history as it is read: each record into its key group's file, each watermark into
/// the watermarks' file, and where the log stands after the records.
pub struct Spiller {
    files: Vec<PathBuf>,
    outs: Vec<BufWriter<File>>,
    deltas: Vec<Delta>,
    advances: PathBuf,
    advances_out: BufWriter<File>,
    watermarks: u64,
    records: u64,
    /// Each partition's next offset after the records written.
    position: Offsets,
    buf: Vec<u8>,
}

impl Spiller {
    /// Files under `dir` (made) for a log of `partitions` partitions read from its start.
    pub fn create(dir: &Path, partitions: usize) -> Result<Spiller, PreloadError> {
        std::fs::create_dir_all(dir).map_err(io(format!("create {}", dir.display())))?;
        let files: Vec<PathBuf> = (0..MAX_PARALLELISM)
            .map(|g| dir.join(format!("group-{g:03}.records")))
            .collect();
        let outs = files
            .iter()
            .map(|f| {
                File::create(f)
                    .map(|f| BufWriter::with_capacity(FILE_BUFFER, f))
                    .map_err(io(format!("create {}", f.display())))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let advances = dir.join("watermarks");
        let advances_out = File::create(&advances)
            .map(|f| BufWriter::with_capacity(FILE_BUFFER, f))
            .map_err(io(format!("create {}", advances.display())))?;
        Ok(Spiller {
            deltas: files.iter().map(|_| Delta::default()).collect(),
            files,
            outs,
            advances,
            advances_out,
            watermarks: 0,
            records: 0,
            position: vec![0; partitions],
            buf: Vec::with_capacity(80),
        })
    }

    /// Record `index` of the log, read at processing time `now`, of key group `group`.
    pub fn record(
        &mut self,
        group: u16,
        index: u64,
        now: i64,
        event: &Event,
    ) -> Result<(), PreloadError> {
        let g = usize::from(group);
        let (Some(out), Some(delta), Some(file)) = (
            self.outs.get_mut(g),
            self.deltas.get_mut(g),
            self.files.get(g),
        ) else {
            return Err(PreloadError::Preload(format!(
                "record {index} is of key group {group}, past the history's {} files",
                self.files.len()
            )));
        };
        delta.encode(index, now, event, &mut self.buf);
        // The error's text only on an error: formatting a path per record was most of this
        // pass's time.
        out.write_all(&self.buf)
            .map_err(|e| io(format!("write {}", file.display()))(e))?;
        read_past(&mut self.position, event);
        self.records = index + 1;
        Ok(())
    }

    /// A watermark the job forwards.
    pub fn advance(&mut self, a: &Advance) -> Result<(), PreloadError> {
        let mut buf = [0u8; ADVANCE];
        buf[..8].copy_from_slice(&a.after.to_le_bytes());
        buf[8..16].copy_from_slice(&a.watermark.to_le_bytes());
        buf[16..].copy_from_slice(&a.now.to_le_bytes());
        self.advances_out
            .write_all(&buf)
            .map_err(|e| io(format!("write {}", self.advances.display()))(e))?;
        self.watermarks += 1;
        Ok(())
    }

    /// The history written: its records, and the log's position after them.
    pub fn finish(mut self) -> Result<Spilled, PreloadError> {
        // Scratch files, read back by this build only: flushed, not synced.
        for (out, f) in self.outs.iter_mut().zip(&self.files) {
            out.flush().map_err(io(format!("write {}", f.display())))?;
        }
        self.advances_out
            .flush()
            .map_err(io(format!("write {}", self.advances.display())))?;
        Ok(Spilled {
            files: self.files,
            advances: self.advances,
            watermarks: self.watermarks,
            records: self.records,
            offsets: self.position,
        })
    }
}

/// Moves `position` (each partition's next offset) past `event`, as the log's consumer does.
pub(super) fn read_past(position: &mut Offsets, event: &Event) {
    let p = event.partition as usize;
    if position.len() <= p {
        position.resize(p + 1, 0);
    }
    position[p] = event.offset + 1;
}

/// Reads the log's first `records` records (`plan`) once into a file per key group under
/// `dir`, and the watermarks they move.
pub fn spill(
    workload: &Workload,
    log: &Log,
    plan: ReadPlan,
    records: u64,
    dir: &Path,
) -> Result<Spilled, PreloadError> {
    let mut out = Spiller::create(dir, log.partitions())?;
    let names = KeyNames::of(workload);
    // The records and watermarks as a pass reading the log meets them.
    let mut steps = Steps::new(workload, Source::Ahead(log, plan), records)?;
    let mut key = String::new();
    while let Some(step) = steps.next()? {
        match step {
            Step::Record { index, now, event } => {
                if index.is_multiple_of(super::CANCEL_EVERY) {
                    super::check_cancel()?;
                }
                names.write(event.user, &mut key);
                out.record(key_group(&key), index, now, &event)?;
            }
            Step::Advance(a) => out.advance(&a)?,
        }
    }
    let mut spilled = out.finish()?;
    // Where the log's reader stands: a two-input job's reader takes its inputs in the task's
    // order, not the log's.
    spilled.offsets = steps.offsets();
    Ok(spilled)
}

impl Delta {
    /// `out`: the record's length byte and its fields.
    fn encode(&mut self, index: u64, now: i64, e: &Event, out: &mut Vec<u8>) {
        out.clear();
        out.push(0);
        varint::put(out, index.wrapping_sub(self.index));
        varint::put(out, varint::zigzag(now.wrapping_sub(self.now)));
        varint::put(out, e.user);
        varint::put(
            out,
            varint::zigzag(e.event_time.wrapping_sub(self.event_time)),
        );
        varint::put(out, u64::from(e.partition));
        let p = e.partition as usize;
        if self.offsets.len() <= p {
            self.offsets.resize(p + 1, 0);
        }
        varint::put(out, e.offset.wrapping_sub(self.offsets[p]));
        varint::put(out, varint::zigzag(e.append_time.wrapping_sub(now)));
        varint::put(out, u64::from(e.value_size));
        out.push(e.input);
        // At most 9 varints of 10 bytes and a byte: within a length byte.
        out[0] = (out.len() - 1) as u8;
        (self.index, self.now, self.event_time) = (index, now, e.event_time);
        self.offsets[p] = e.offset;
    }

    /// The record `encode` wrote as `bytes` (after its length byte); None for damaged bytes.
    fn decode(&mut self, mut bytes: &[u8]) -> Option<(u64, i64, Event)> {
        let b = &mut bytes;
        let index = self.index.wrapping_add(varint::take(b)?);
        let now = self.now.wrapping_add(varint::unzigzag(varint::take(b)?));
        let user = varint::take(b)?;
        let event_time = self
            .event_time
            .wrapping_add(varint::unzigzag(varint::take(b)?));
        let partition = u32::try_from(varint::take(b)?)
            .ok()
            .filter(|p| *p < MAX_PARTITIONS)?;
        let p = partition as usize;
        if self.offsets.len() <= p {
            self.offsets.resize(p + 1, 0);
        }
        let offset = self.offsets[p].wrapping_add(varint::take(b)?);
        let append_time = now.wrapping_add(varint::unzigzag(varint::take(b)?));
        let value_size = u32::try_from(varint::take(b)?).ok()?;
        let (&input, rest) = b.split_first()?;
        if !rest.is_empty() {
            return None;
        }
        (self.index, self.now, self.event_time) = (index, now, event_time);
        self.offsets[p] = offset;
        Some((
            index,
            now,
            Event {
                user,
                event_time,
                partition,
                offset,
                append_time,
                value_size,
                input,
            },
        ))
    }
}

/// One key group's records in the log's order: (index, processing time, record).
struct GroupRecords {
    reader: BufReader<File>,
    path: PathBuf,
    delta: Delta,
    buf: Vec<u8>,
}

/// A batch's records (its key groups' files merged) in the log's order.
pub struct BatchRecords {
    groups: Vec<GroupRecords>,
    /// Each group's next record, and the groups by the index of their next record.
    next: Vec<Option<(u64, i64, Event)>>,
    order: BinaryHeap<Reverse<(u64, usize)>>,
}

impl Spilled {
    /// The records of key groups `groups`.
    pub fn batch(&self, groups: Range<u16>) -> Result<BatchRecords, PreloadError> {
        let mut batch = BatchRecords {
            groups: Vec::new(),
            next: Vec::new(),
            order: BinaryHeap::new(),
        };
        for g in groups {
            let path = self.files.get(usize::from(g)).cloned().ok_or_else(|| {
                PreloadError::Preload(format!("no records spilled for key group {g}"))
            })?;
            let file = File::open(&path).map_err(io(format!("read {}", path.display())))?;
            let mut group = GroupRecords {
                reader: BufReader::with_capacity(FILE_BUFFER, file),
                path,
                delta: Delta::default(),
                buf: vec![0; 256],
            };
            let first = group.next()?;
            if let Some((index, _, _)) = &first {
                batch.order.push(Reverse((*index, batch.groups.len())));
            }
            batch.next.push(first);
            batch.groups.push(group);
        }
        Ok(batch)
    }

    /// Every watermark the job forwards, in the log's order.
    pub fn watermarks(&self) -> Result<Watermarks, PreloadError> {
        let file =
            File::open(&self.advances).map_err(io(format!("read {}", self.advances.display())))?;
        Ok(Watermarks {
            reader: BufReader::with_capacity(64 << 10, file),
            path: self.advances.clone(),
        })
    }

    /// Removes the batches' files and the watermarks'.
    pub fn remove(self) {
        for f in self.files {
            let _ = std::fs::remove_file(f);
        }
        let _ = std::fs::remove_file(self.advances);
    }
}

/// The watermarks of a spilled history, read in order.
pub struct Watermarks {
    reader: BufReader<File>,
    path: PathBuf,
}

impl Watermarks {
    pub fn next(&mut self) -> Result<Option<Advance>, PreloadError> {
        let mut buf = [0u8; ADVANCE];
        match self.reader.read_exact(&mut buf) {
            Ok(()) => {
                let word = |at: usize| {
                    let mut w = [0u8; 8];
                    w.copy_from_slice(&buf[at..at + 8]);
                    w
                };
                Ok(Some(Advance {
                    after: u64::from_le_bytes(word(0)),
                    watermark: i64::from_le_bytes(word(8)),
                    now: i64::from_le_bytes(word(16)),
                }))
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
            Err(e) => Err(PreloadError::Preload(format!(
                "cannot read {}: {e}",
                self.path.display()
            ))),
        }
    }
}

impl BatchRecords {
    pub fn next(&mut self) -> Result<Option<(u64, i64, Event)>, PreloadError> {
        let Some(Reverse((_, g))) = self.order.pop() else {
            return Ok(None);
        };
        let (Some(group), Some(slot)) = (self.groups.get_mut(g), self.next.get_mut(g)) else {
            return Ok(None);
        };
        let following = group.next()?;
        if let Some((index, _, _)) = &following {
            self.order.push(Reverse((*index, g)));
        }
        Ok(std::mem::replace(slot, following))
    }
}

impl GroupRecords {
    fn next(&mut self) -> Result<Option<(u64, i64, Event)>, PreloadError> {
        let cannot = |e: std::io::Error| {
            PreloadError::Preload(format!("cannot read {}: {e}", self.path.display()))
        };
        let mut len = [0u8; 1];
        match self.reader.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(cannot(e)),
        }
        let record = &mut self.buf[..usize::from(len[0])];
        self.reader.read_exact(record).map_err(cannot)?;
        self.delta
            .decode(record)
            .map(Some)
            .ok_or_else(|| PreloadError::Preload(format!("{} is damaged", self.path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::backend::StateBackend;
    use crate::backend::memory::SharedMemory;
    use crate::config::{Profile, Workload};
    use crate::durability::delivery::Delivery;
    use crate::durability::sink::MemorySink;
    use crate::pipeline::operators;
    use crate::preload::warmup::{self, Part, Source, Until};
    use std::sync::Arc;

    /// Each batch read from the spilled history holds exactly the state, results and timers
    /// the same batch read from the log does, and the history ends where the log stands.
    #[test]
    fn a_batch_of_the_spilled_history_builds_what_the_log_builds() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["smoke", "sessions-process"] {
            let workload = Workload::load(name).unwrap();
            let profile = Profile::load("flink-default").unwrap();
            let memory = Arc::new(SharedMemory::for_profile(&profile).unwrap());
            let layout = operators::layout(&workload.operator());
            let scratch = dir.path().join(name);
            let backend = StateBackend::open_shared(&scratch, &profile, &layout, &memory).unwrap();
            let log = Log::new(&workload, None, u64::MAX);
            let live = ReadPlan::from_workload(&log, &Default::default()).unwrap();
            let batches = [0..100, 100..101, 101..256];
            let records = 9_000;
            let history = spill(
                &workload,
                &log,
                warmup::plan(&log, &live, None),
                records,
                &dir.path().join(format!("{name}-history")),
            )
            .unwrap();
            assert_eq!(history.records, records);
            assert!(history.watermarks > 0);
            // A pass over the log (a sizing pass's) writes the same history as it reads.
            let mut spiller =
                Spiller::create(&dir.path().join(format!("{name}-sized")), log.partitions())
                    .unwrap();
            let (sized, _) = warmup::pass(
                std::slice::from_ref(&backend),
                &workload,
                Source::Log(&log, warmup::plan(&log, &live, None)),
                Until::Records(records),
                Part {
                    spill: Some(&mut spiller),
                    ..Part::groups(0..8)
                },
                Delivery::passthrough(Box::new(MemorySink::new(workload.result_labels()))),
            )
            .unwrap();
            let while_sizing = spiller.finish().unwrap();
            assert_eq!(while_sizing.records, sized.records);
            assert_eq!(
                (while_sizing.records, while_sizing.watermarks),
                (history.records, history.watermarks)
            );
            assert_eq!(while_sizing.offsets, history.offsets);
            for (a, b) in history.files.iter().zip(&while_sizing.files) {
                assert!(
                    std::fs::read(a).unwrap() == std::fs::read(b).unwrap(),
                    "{name}: {} and {} differ",
                    a.display(),
                    b.display()
                );
            }
            assert_eq!(
                std::fs::read(&history.advances).unwrap(),
                std::fs::read(&while_sizing.advances).unwrap()
            );
            let sink =
                || Delivery::passthrough(Box::new(MemorySink::new(workload.result_labels())));
            for (b, groups) in batches.iter().enumerate() {
                let (mut from_log, _) = warmup::pass(
                    std::slice::from_ref(&backend),
                    &workload,
                    Source::Log(&log, warmup::plan(&log, &live, None)),
                    Until::Records(records),
                    Part::groups(groups.clone()),
                    sink(),
                )
                .unwrap();
                let (mut spilled, _) = warmup::pass(
                    std::slice::from_ref(&backend),
                    &workload,
                    Source::Spilled(&history, groups.clone()),
                    Until::Records(records),
                    Part::groups(groups.clone()),
                    sink(),
                )
                .unwrap();
                assert_eq!(spilled.records, from_log.records, "{name} batch {b}");
                assert_eq!(spilled.processed, from_log.processed, "{name} batch {b}");
                assert_eq!(spilled.offsets, from_log.offsets, "{name} batch {b}");
                assert_eq!(spilled.results, from_log.results, "{name} batch {b}");
                assert_eq!(spilled.heap_timers, from_log.heap_timers);
                let (a, b_) = (spilled.state.take(), from_log.state.take());
                assert!(a.iter().map(Vec::len).sum::<usize>() > 0 || b == 1);
                assert!(a == b_, "{name} batch {b}: the states differ");
            }
        }
    }

    #[test]
    fn records_come_back_as_they_were_written_in_a_few_bytes() {
        let event = |user, event_time, partition, offset, append_time| Event {
            user,
            event_time,
            partition,
            offset,
            append_time,
            value_size: 1024,
            input: 1,
        };
        let records = [
            (
                42,
                -1,
                event(u64::MAX - 3, -7, 5, 1 << 40, 1_700_000_000_000),
            ),
            (
                43,
                1_700_000_000_000,
                event(7, 1_700_000_000_500, 0, 0, 1_700_000_000_000),
            ),
            (
                90,
                1_700_000_000_001,
                event(8, 1_700_000_000_400, 5, (1 << 40) + 1, 1_700_000_000_001),
            ),
            (91, 1_700_000_000_001, event(9, i64::MIN, 5, 3, i64::MAX)),
        ];
        let (mut writer, mut reader, mut out) = (Delta::default(), Delta::default(), Vec::new());
        for (i, (index, now, e)) in records.iter().enumerate() {
            writer.encode(*index, *now, e, &mut out);
            assert_eq!(usize::from(out[0]), out.len() - 1);
            if i == 2 {
                // Close to the record before it: small differences, a 5-byte id.
                assert!(out.len() <= 16, "{} bytes", out.len());
            }
            let (back_index, back_now, back) = reader.decode(&out[1..]).unwrap();
            assert_eq!((back_index, back_now), (*index, *now));
            assert_eq!(format!("{back:?}"), format!("{e:?}"));
        }
        // Damaged bytes are said to be, not read as a record.
        assert!(Delta::default().decode(&out[1..out.len() - 1]).is_none());
        assert!(Delta::default().decode(&[0x80]).is_none());
    }
}
