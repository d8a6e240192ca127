//! A preload's history read from the log once. A build in several key-group batches needs each
//! batch's records and every watermark the whole log moves; reading the log again for every
//! batch (generating every record, naming its key and hashing it to its key group) was most of
//! a big build's time (51 batches of 170 M records for 10 GiB of days-app state). So one pass
//! writes each record, with the processing time it was read at, to its batch's file, and
//! notes every watermark the job would forward and when, in a file of its own too (at most one
//! every 64 records: 3.3 M of them, 79 MB, in a 10 GiB dedup's 848 M records); each batch then
//! reads its own file and the watermarks'.

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

/// The history, split by batch.
pub struct Spilled {
    files: Vec<PathBuf>,
    /// Every watermark the job forwards, in the log's order.
    advances: PathBuf,
    /// How many.
    pub watermarks: u64,
    /// Records of history (of every batch).
    pub records: u64,
    /// Where the log stands after them.
    pub offsets: Offsets,
}

/// A record in a batch's file: its length in a byte, then its fields as varints, each the
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

/// Partitions a batch's file may name (a damaged file names more).
const MAX_PARTITIONS: u32 = 1 << 20;

/// Bytes an [`Advance`] takes in the watermarks' file.
const ADVANCE: usize = 8 + 8 + 8;

/// Reads the log's first `records` records (`plan`) once into a file per batch of key groups
/// (`batches`) under `dir`, and the watermarks they move.
pub fn spill(
    workload: &Workload,
    log: &Log,
    plan: ReadPlan,
    records: u64,
    batches: &[Range<u16>],
    dir: &Path,
) -> Result<Spilled, PreloadError> {
    std::fs::create_dir_all(dir).map_err(io(format!("create {}", dir.display())))?;
    let mut batch_of = vec![0usize; usize::from(MAX_PARALLELISM)];
    for (b, groups) in batches.iter().enumerate() {
        for g in groups.clone() {
            if let Some(slot) = batch_of.get_mut(usize::from(g)) {
                *slot = b;
            }
        }
    }
    let files: Vec<PathBuf> = (0..batches.len())
        .map(|b| dir.join(format!("batch-{b:03}.records")))
        .collect();
    let mut outs = files
        .iter()
        .map(|f| {
            File::create(f)
                .map(|f| BufWriter::with_capacity(256 << 10, f))
                .map_err(io(format!("create {}", f.display())))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let advances = dir.join("watermarks");
    let mut advances_out = File::create(&advances)
        .map(|f| BufWriter::with_capacity(256 << 10, f))
        .map_err(io(format!("create {}", advances.display())))?;
    let names = KeyNames::of(workload);
    // The records and watermarks as a pass reading the log meets them.
    let mut steps = Steps::new(workload, Source::Log(log, plan), records)?;
    let (mut watermarks, mut read) = (0u64, 0u64);
    let mut key = String::new();
    let mut buf = Vec::with_capacity(80);
    let mut deltas: Vec<Delta> = (0..batches.len()).map(|_| Delta::default()).collect();
    while let Some(step) = steps.next()? {
        if read.is_multiple_of(super::CANCEL_EVERY) {
            super::check_cancel()?;
        }
        let (index, now, event) = match step {
            Step::Record { index, now, event } => (index, now, event),
            Step::Advance(a) => {
                let mut buf = [0u8; ADVANCE];
                buf[..8].copy_from_slice(&a.after.to_le_bytes());
                buf[8..16].copy_from_slice(&a.watermark.to_le_bytes());
                buf[16..].copy_from_slice(&a.now.to_le_bytes());
                // The error's text only on an error: formatting a path per record was most
                // of this pass's time.
                advances_out
                    .write_all(&buf)
                    .map_err(|e| io(format!("write {}", advances.display()))(e))?;
                watermarks += 1;
                continue;
            }
        };
        names.write(event.user, &mut key);
        let batch = batch_of
            .get(usize::from(key_group(&key)))
            .copied()
            .unwrap_or(0);
        if let (Some(out), Some(delta)) = (outs.get_mut(batch), deltas.get_mut(batch)) {
            delta.encode(index, now, &event, &mut buf);
            out.write_all(&buf)
                .map_err(|e| io(format!("write {}", files[batch].display()))(e))?;
        }
        read = index + 1;
    }
    // Scratch files, read back by this build only: flushed, not synced.
    for (out, f) in outs.iter_mut().zip(&files) {
        out.flush().map_err(io(format!("write {}", f.display())))?;
    }
    advances_out
        .flush()
        .map_err(io(format!("write {}", advances.display())))?;
    let offsets = steps.offsets();
    Ok(Spilled {
        files,
        advances,
        watermarks,
        records: read,
        offsets,
    })
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

/// One batch's records in the log's order: (index, processing time, record).
pub struct BatchRecords {
    reader: BufReader<File>,
    path: PathBuf,
    delta: Delta,
    buf: Vec<u8>,
}

impl Spilled {
    pub fn batch(&self, b: usize) -> Result<BatchRecords, PreloadError> {
        let path =
            self.files.get(b).cloned().ok_or_else(|| {
                PreloadError::Preload(format!("no records spilled for batch {b}"))
            })?;
        let file = File::open(&path).map_err(io(format!("read {}", path.display())))?;
        Ok(BatchRecords {
            reader: BufReader::with_capacity(256 << 10, file),
            path,
            delta: Delta::default(),
            buf: vec![0; 256],
        })
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
                &batches,
                &dir.path().join(format!("{name}-history")),
            )
            .unwrap();
            assert_eq!(history.records, records);
            assert!(history.watermarks > 0);
            let sink =
                || Delivery::passthrough(Box::new(MemorySink::new(workload.result_labels())));
            for (b, groups) in batches.iter().enumerate() {
                let (mut from_log, _) = warmup::pass(
                    &backend,
                    &workload,
                    Source::Log(&log, warmup::plan(&log, &live, None)),
                    Until::Records(records),
                    Part::groups(groups.clone()),
                    sink(),
                )
                .unwrap();
                let (mut spilled, _) = warmup::pass(
                    &backend,
                    &workload,
                    Source::Spilled(&history, b),
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
