//! The Kafka stand-in: the partitioned log a run reads, the offsets consumer groups committed,
//! where a job starts reading (read plans) and the consumer that reads it.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Event, EventSource};
use crate::config::Workload;
use crate::config::workload::{OffsetReset, StartingOffsets};
pub use crate::model::counters::Offsets;

/// The broker's record of committed offsets per consumer group (Kafka's `__consumer_offsets`).
/// A streaming job commits when a checkpoint completes; a bounded one at its end. With a file,
/// every commit is durable before `commit` returns, so a later run on the same data directory
/// sees it.
#[derive(Debug, Clone, Default)]
pub struct OffsetStore {
    groups: BTreeMap<String, Offsets>,
    file: Option<std::path::PathBuf>,
}

impl OffsetStore {
    /// The broker kept in `file` (JSON, `{group: [offset per partition]}`): what earlier runs
    /// committed, or nothing if the file does not exist yet.
    pub fn open(file: &std::path::Path) -> Result<OffsetStore, String> {
        let groups = match std::fs::read(file) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                format!(
                    "{}: not a broker's committed offsets ({e}); remove it to start afresh",
                    file.display()
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
        };
        Ok(OffsetStore {
            groups,
            file: Some(file.to_path_buf()),
        })
    }

    pub fn committed(&self, group: &str) -> Option<&Offsets> {
        self.groups.get(group)
    }

    /// Commits `offsets` for `group`; with a file, written through a temporary file, synced
    /// and renamed over the old one (a crash leaves the old commit or the new, never half).
    pub fn commit(&mut self, group: &str, offsets: Offsets) -> Result<(), String> {
        self.groups.insert(group.to_string(), offsets);
        let Some(file) = &self.file else {
            return Ok(());
        };
        let write = || -> std::io::Result<()> {
            let tmp = file.with_extension("json.tmp");
            let bytes = serde_json::to_vec_pretty(&self.groups)?;
            let mut f = std::fs::File::create(&tmp)?;
            std::io::Write::write_all(&mut f, &bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, file)?;
            if let Some(dir) = file.parent() {
                std::fs::File::open(dir)?.sync_all()?;
            }
            Ok(())
        };
        write().map_err(|e| format!("cannot commit offsets to {}: {e}", file.display()))
    }
}

/// The partitioned log a run reads: `len` records of the generator (or the whole trace), in the
/// order they were written. Every reader replays it from the beginning, deterministically.
#[derive(Clone)]
pub struct Log {
    workload: Workload,
    trace: Option<Arc<Vec<Event>>>,
    len: u64,
}

impl Log {
    pub fn new(workload: &Workload, trace: Option<Arc<Vec<Event>>>, len: u64) -> Log {
        let len = trace.as_ref().map_or(len, |t| t.len() as u64);
        Log {
            workload: workload.clone(),
            trace,
            len,
        }
    }

    pub fn partitions(&self) -> usize {
        self.workload.spec.partitions as usize
    }

    /// A trace's partitions that carry each input's records (a partition may carry both);
    /// None for the generator, whose inputs have the partitions the join's spec gives them.
    pub fn input_partitions(&self) -> Option<[Vec<u32>; 2]> {
        let trace = self.trace.as_ref()?;
        let mut carries = vec![[false; 2]; self.partitions()];
        for e in trace.iter() {
            if let Some(c) = carries.get_mut(e.partition as usize) {
                c[usize::from(e.input.min(1))] = true;
            }
        }
        let of = |i: usize| {
            (0..carries.len() as u32)
                .filter(|p| carries[*p as usize][i])
                .collect()
        };
        Some([of(0), of(1)])
    }

    /// Event time of the oldest record the log retains.
    pub fn start_time(&self) -> i64 {
        match &self.trace {
            Some(t) => t.first().map_or(0, |e| e.event_time),
            None => self.workload.spec.event_time.start as i64,
        }
    }

    fn records(&self) -> impl Iterator<Item = Event> + use<> {
        EventSource::new(&self.workload, self.trace.clone()).take(self.len as usize)
    }

    /// The end offsets of the log as it was at `time`: per partition, the offset of the first
    /// record written at or after it (Kafka's `offsetsForTimes`, with the log's end for none).
    pub fn offsets_at(&self, time: i64) -> Offsets {
        let mut offsets = vec![0; self.partitions()];
        for e in self.records() {
            if e.append_time >= time {
                break;
            }
            offsets[e.partition as usize] = e.offset + 1;
        }
        offsets
    }
}

/// Where one job reads: resolved starting offsets, an optional stop, its deploy time.
#[derive(Debug, Clone)]
pub struct ReadPlan {
    pub group: String,
    pub start: Offsets,
    /// How the start was chosen, for the report ("committed offsets of group 'x'", ...).
    pub start_reason: String,
    /// Records written at or after this time are past the end (bounded by time).
    pub stop_time: Option<i64>,
    /// Processing time when the job starts: the backlog before it is read "now".
    pub deployed_at: i64,
    /// The oracle counts from here: what a correct job would read. At or before `start`; after
    /// it for a job restarted after a failure, whose truth has seen the records up to here.
    pub truth_start: Offsets,
    /// Records before these offsets are in the state the job restored: not read, not skipped.
    /// None: nothing restored.
    pub covered: Option<Offsets>,
}

impl ReadPlan {
    /// The plan for a single streaming job from the workload's `source:` section, against the
    /// committed offsets in `store`. Starting offsets apply because there is no checkpoint.
    pub fn from_workload(log: &Log, store: &OffsetStore) -> Result<ReadPlan, String> {
        let spec = &log.workload.spec.source;
        let start_time = log.start_time();
        let deployed_at = start_time + spec.deployed_at.map_or(0, |d| d.0 as i64);
        let group = spec
            .group
            .clone()
            .unwrap_or_else(|| "statebench".to_string());
        let (start, start_reason) = resolve_start(
            log,
            store,
            &group,
            spec.starting_offsets,
            spec.committed_fallback.unwrap_or_default(),
            spec.starting_timestamp.map(|t| start_time + t.0 as i64),
            deployed_at,
        )?;
        Ok(ReadPlan {
            group,
            truth_start: start.clone(),
            covered: None,
            start,
            start_reason,
            stop_time: spec.stop_at.map(|t| start_time + t.0 as i64),
            deployed_at,
        })
    }
}

/// Resolves a job's starting offsets (they apply only when it has no checkpoint).
pub fn resolve_start(
    log: &Log,
    store: &OffsetStore,
    group: &str,
    how: StartingOffsets,
    fallback: OffsetReset,
    timestamp: Option<i64>,
    deployed_at: i64,
) -> Result<(Offsets, String), String> {
    let earliest = || (vec![0; log.partitions()], "earliest".to_string());
    let latest = || (log.offsets_at(deployed_at), "latest".to_string());
    Ok(match how {
        StartingOffsets::Earliest => earliest(),
        StartingOffsets::Latest => latest(),
        StartingOffsets::Timestamp => {
            // Kafka's offsetsForTimes on the log as it is at deploy time: a timestamp past its
            // end resolves to the end (Flink's TimestampOffsetsInitializer falls back to it).
            let at = timestamp.unwrap_or(deployed_at);
            (
                log.offsets_at(at.min(deployed_at)),
                format!("timestamp {at}"),
            )
        }
        StartingOffsets::Committed => match store.committed(group) {
            Some(offsets) => (
                offsets.clone(),
                format!("committed offsets of group '{group}'"),
            ),
            None => {
                let (offsets, name) = match fallback {
                    OffsetReset::Earliest => earliest(),
                    OffsetReset::Latest => latest(),
                    OffsetReset::None => {
                        return Err(format!(
                            "consumer group '{group}' has no committed offsets and \
                             'source.committed-fallback' is none"
                        ));
                    }
                };
                (
                    offsets,
                    format!("{name} (group '{group}' has no committed offsets)"),
                )
            }
        },
    })
}

/// One job's consumer: reads the log from the plan's starting offsets up to its end or stop
/// time, keeps its position per partition, and tells the oracle about records a correct job
/// would have read but this one skips.
pub struct Consumer {
    records: std::iter::Peekable<Box<dyn Iterator<Item = Event> + Send>>,
    plan: ReadPlan,
    position: Offsets,
    /// The log's end offsets at deploy time: the backlog.
    head: Offsets,
    now: i64,
    exhausted: bool,
    skipped: u64,
}

impl Consumer {
    pub fn new(log: &Log, plan: ReadPlan) -> Consumer {
        let head = log.offsets_at(plan.deployed_at);
        Consumer {
            records: (Box::new(log.records()) as Box<dyn Iterator<Item = Event> + Send>).peekable(),
            position: plan.start.clone(),
            head,
            now: plan.deployed_at,
            exhausted: false,
            skipped: 0,
            plan,
        }
    }

    /// The next record for the job; `truth` sees every record from `truth_start` on, read or
    /// skipped. None once the log (or the bounded range) is read to its end.
    pub fn next(&mut self, mut truth: impl FnMut(&Event)) -> Option<Event> {
        if self.exhausted {
            return None;
        }
        loop {
            let Some(e) = self.records.next() else {
                self.exhausted = true;
                return None;
            };
            if self
                .plan
                .stop_time
                .is_some_and(|stop| e.append_time >= stop)
            {
                self.exhausted = true;
                return None;
            }
            let p = e.partition as usize;
            let read = e.offset >= self.plan.start[p];
            if e.offset >= self.plan.truth_start[p] {
                truth(&e);
                let covered = self.plan.covered.as_ref().is_some_and(|c| e.offset < c[p]);
                self.skipped += u64::from(!read && !covered);
            }
            if read {
                self.position[p] = e.offset + 1;
                self.now = self.now.max(e.append_time);
                return Some(e);
            }
        }
    }

    /// Processing time: the deploy time while the backlog is read, then the write time of the
    /// newest record (the job keeps up with the log).
    pub fn now(&self) -> i64 {
        self.now
    }

    /// Records a correct job would have read (from `truth_start`) that this one skipped.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// True when the job has read everything it will ever read: the log's end or, bounded by
    /// time, its stop.
    pub fn exhausted(&mut self) -> bool {
        if !self.exhausted {
            let stop = self.plan.stop_time;
            self.exhausted = match self.records.peek() {
                None => true,
                Some(e) => stop.is_some_and(|s| e.append_time >= s),
            };
        }
        self.exhausted
    }

    pub fn plan(&self) -> &ReadPlan {
        &self.plan
    }

    /// The next offset per partition: what a checkpoint (and a commit) records.
    pub fn position(&self) -> &Offsets {
        &self.position
    }

    /// Records per partition between the position and the log's head at deploy time.
    pub fn backlog(&self) -> Vec<u64> {
        self.head
            .iter()
            .zip(&self.position)
            .map(|(head, pos)| head.saturating_sub(*pos))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Millis;

    fn small_log() -> Log {
        let mut w = Workload::load("smoke").unwrap();
        w.spec.events = 4_000;
        w.spec.event_time.span = Millis(400_000); // one record per 100 ms
        Log::new(&w, None, 4_000)
    }

    fn read_all(log: &Log, plan: ReadPlan) -> (Vec<Event>, u64, Consumer) {
        let mut consumer = Consumer::new(log, plan);
        let mut truth = 0;
        let mut read = Vec::new();
        while let Some(e) = consumer.next(|_| truth += 1) {
            read.push(e);
        }
        (read, truth, consumer)
    }

    #[test]
    fn starting_offsets_resolve_against_the_log_and_the_group() {
        let log = small_log();
        let start = log.start_time();
        let mut store = OffsetStore::default();
        let resolve = |store: &OffsetStore, how, fallback| {
            resolve_start(
                &log,
                store,
                "g",
                how,
                fallback,
                Some(start + 100_000),
                start + 200_000,
            )
        };
        let (earliest, _) =
            resolve(&store, StartingOffsets::Earliest, OffsetReset::Earliest).unwrap();
        assert_eq!(earliest, vec![0; 4]);
        // Latest: the log's end at deploy time, 2000 records in; timestamp: 1000 records in.
        let (latest, _) = resolve(&store, StartingOffsets::Latest, OffsetReset::Earliest).unwrap();
        assert_eq!(latest.iter().sum::<u64>(), 2_000);
        let (at, _) = resolve(&store, StartingOffsets::Timestamp, OffsetReset::Earliest).unwrap();
        assert_eq!(at.iter().sum::<u64>(), 1_000);
        // Committed: the fallback without a commit, the commit with one.
        let (fallback, why) =
            resolve(&store, StartingOffsets::Committed, OffsetReset::Latest).unwrap();
        assert_eq!(
            (fallback, why.contains("no committed")),
            (latest.clone(), true)
        );
        let err = resolve(&store, StartingOffsets::Committed, OffsetReset::None).unwrap_err();
        assert!(err.contains("group 'g' has no committed offsets"), "{err}");
        store.commit("g", at.clone()).unwrap();
        let (committed, _) =
            resolve(&store, StartingOffsets::Committed, OffsetReset::None).unwrap();
        assert_eq!(committed, at);
    }

    #[test]
    fn a_consumer_reads_from_its_start_to_its_stop_and_tells_the_truth_what_it_skips() {
        let log = small_log();
        let start = log.start_time();
        let from = log.offsets_at(start + 100_000);
        let plan = ReadPlan {
            covered: None,
            group: "g".into(),
            start: from.clone(),
            start_reason: "test".into(),
            stop_time: Some(start + 300_000),
            deployed_at: start + 200_000,
            truth_start: vec![0; 4],
        };
        let (read, truth, mut consumer) = read_all(&log, plan);
        // Records written in [100 s, 300 s): 2000 of them, in write order, each from its start.
        assert_eq!(read.len(), 2_000);
        assert!(read.iter().all(|e| e.offset >= from[e.partition as usize]));
        assert!(
            read.windows(2)
                .all(|w| w[0].append_time <= w[1].append_time)
        );
        assert_eq!(truth, 3_000, "the truth also sees the 1000 skipped records");
        assert_eq!(consumer.skipped(), 1_000);
        assert!(consumer.exhausted());
        assert_eq!(consumer.position(), &log.offsets_at(start + 300_000));
        // Processing time: the deploy time while reading the backlog, then the write time.
        assert_eq!(consumer.now(), read.last().unwrap().append_time);
        assert!(consumer.backlog().iter().all(|b| *b == 0));
    }

    #[test]
    fn the_backlog_shrinks_while_a_late_job_catches_up() {
        let log = small_log();
        let start = log.start_time();
        let plan = ReadPlan {
            covered: None,
            group: "g".into(),
            start: vec![0; 4],
            start_reason: "earliest".into(),
            stop_time: None,
            deployed_at: start + 200_000,
            truth_start: vec![0; 4],
        };
        let mut consumer = Consumer::new(&log, plan);
        assert_eq!(consumer.backlog().iter().sum::<u64>(), 2_000);
        for _ in 0..500 {
            consumer.next(|_| {});
            assert_eq!(
                consumer.now(),
                start + 200_000,
                "reading the backlog takes no time"
            );
        }
        assert_eq!(consumer.backlog().iter().sum::<u64>(), 1_500);
    }
}
