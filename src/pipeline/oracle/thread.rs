//! The oracle on a thread of its own. The job hands it what it reads (events and watermarks)
//! in batches and waits only when it asks for a comparison, so the engine thread, whose speed
//! the run reports, does the job's work and not the measurement's (a Flink job has no oracle).

use super::{Oracle, ResultError, checked};
use crate::model::counters::Count;
use crate::pipeline::source::Event;
use crate::util::worker::{Worker, WorkerGone};

/// Notes per batch sent to the oracle's thread: 4,096 of 24 bytes, under glibc's 128 KiB mmap
/// threshold, so that a batch is not mapped, faulted in and unmapped each time.
const BATCH: usize = 4096;
/// Batches in flight before the job waits for the oracle (a bound on memory, never reached
/// while the oracle keeps up: it does a few percent of the job's work).
const IN_FLIGHT: usize = 8;

/// What the job tells the oracle, in the order the job saw it.
#[derive(Debug, Clone, Copy)]
enum Note {
    Event { event: Event, now: i64 },
    Watermark(i64),
}

enum Request {
    Notes(Vec<Note>),
    Track(Vec<Count>),
    CompareChanges(Vec<Count>),
    Compare(Vec<Count>),
    CompareAllExpired(Vec<Count>),
    /// Answers once everything sent before it is handled.
    Sync,
}

/// The oracle on its own thread, and what the job has noted for it since the last batch.
pub struct OracleThread {
    notes: Vec<Note>,
    worker: Worker<Request, Option<ResultError>>,
    tracking: bool,
    /// Only the keys of one in `sample` are checked (1: every key); see [`checked`].
    sample: u64,
}

fn handle(oracle: &mut Oracle, request: Request) -> Option<Option<ResultError>> {
    Some(match request {
        Request::Notes(notes) => {
            for note in notes {
                match note {
                    Note::Event { event, now } => oracle.on_event(&event, now),
                    Note::Watermark(wm) => oracle.on_watermark(wm),
                }
            }
            return None;
        }
        Request::Track(all) => Some(oracle.track(all)),
        Request::CompareChanges(changes) => oracle.compare_changes(changes),
        Request::Compare(all) => Some(oracle.compare(all)),
        Request::CompareAllExpired(all) => Some(oracle.all_expired().compare(all)),
        Request::Sync => None,
    })
}

impl OracleThread {
    /// Runs `oracle` (the truth of the job's operator, see `operators::oracle`) on its own
    /// thread.
    pub fn start(oracle: Oracle) -> Result<OracleThread, std::io::Error> {
        Ok(OracleThread {
            notes: Vec::with_capacity(BATCH),
            worker: Worker::spawn("oracle", IN_FLIGHT, oracle, handle)?,
            tracking: false,
            sample: 1,
        })
    }

    /// From now on, the truth of only the keys of one in `sample` (`checked`): the oracle
    /// hears nothing of the others, and comparisons leave them out. Set before the first event.
    pub fn sampled(mut self, sample: u64) -> OracleThread {
        self.sample = sample.max(1);
        self
    }

    /// Results of the keys this oracle checks.
    fn only_checked(&self, mut all: Vec<Count>) -> Vec<Count> {
        if self.sample > 1 {
            all.retain(|(key, _, _)| checked(*key, self.sample));
        }
        all
    }

    /// A record the job reads, with the processing time its operator sees for it.
    #[inline]
    pub fn on_event(&mut self, event: &Event, now: i64) -> Result<(), WorkerGone> {
        if !checked(event.user, self.sample) {
            return Ok(());
        }
        self.note(Note::Event { event: *event, now })
    }

    pub fn on_watermark(&mut self, watermark: i64) -> Result<(), WorkerGone> {
        self.note(Note::Watermark(watermark))
    }

    #[inline]
    fn note(&mut self, note: Note) -> Result<(), WorkerGone> {
        self.notes.push(note);
        if self.notes.len() >= BATCH {
            self.send_notes()?;
        }
        Ok(())
    }

    fn send_notes(&mut self) -> Result<(), WorkerGone> {
        if self.notes.is_empty() {
            return Ok(());
        }
        let notes = std::mem::replace(&mut self.notes, Vec::with_capacity(BATCH));
        self.worker.send(Request::Notes(notes))
    }

    /// Sends what is noted and `request`, and waits for the answer.
    fn ask(&mut self, request: Request) -> Result<Option<ResultError>, WorkerGone> {
        self.send_notes()?;
        self.worker.ask(request)
    }

    /// The answer to a request that always has one.
    fn ask_error(&mut self, request: Request) -> Result<ResultError, WorkerGone> {
        self.ask(request)?.ok_or_else(|| WorkerGone {
            what: "oracle",
            why: "gave no comparison".to_string(),
        })
    }

    /// Waits until the oracle has handled everything noted so far.
    pub fn sync(&mut self) -> Result<(), WorkerGone> {
        self.ask(Request::Sync).map(|_| ())
    }

    /// Whether a baseline for [`OracleThread::compare_changes`] exists.
    pub fn is_tracking(&self) -> bool {
        self.tracking
    }

    /// [`Oracle::track`].
    pub fn track(&mut self, all: Vec<Count>) -> Result<ResultError, WorkerGone> {
        let all = self.only_checked(all);
        let error = self.ask_error(Request::Track(all))?;
        self.tracking = true;
        Ok(error)
    }

    /// [`Oracle::compare_changes`].
    pub fn compare_changes(
        &mut self,
        changes: Vec<Count>,
    ) -> Result<Option<ResultError>, WorkerGone> {
        let changes = self.only_checked(changes);
        self.ask(Request::CompareChanges(changes))
    }

    /// [`Oracle::compare`].
    pub fn compare(&mut self, all: Vec<Count>) -> Result<ResultError, WorkerGone> {
        let all = self.only_checked(all);
        self.ask_error(Request::Compare(all))
    }

    /// [`Oracle::compare`] against the end-of-input truth: every window expired.
    pub fn compare_all_expired(&mut self, all: Vec<Count>) -> Result<ResultError, WorkerGone> {
        let all = self.only_checked(all);
        self.ask_error(Request::CompareAllExpired(all))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threaded_oracle_answers_as_the_oracle_does() {
        let windows = [10, 100];
        let mut local = Oracle::new(&windows);
        let mut remote = OracleThread::start(Oracle::new(&windows)).unwrap();
        // More notes than a batch, so batches cross to the thread before the question.
        for i in 0..(2 * BATCH as i64 + 7) {
            let user = (i % 13) as u64;
            local.on_event(&crate::pipeline::oracle::tests::ev(user, i), 0);
            remote
                .on_event(&crate::pipeline::oracle::tests::ev(user, i), 0)
                .unwrap();
            if i % 50 == 0 {
                local.on_watermark(i - 20);
                remote.on_watermark(i - 20).unwrap();
            }
        }
        let results: Vec<Count> = (0..13u64).map(|u| (u, 0, 1)).collect();
        assert!(!remote.is_tracking());
        assert_eq!(
            remote.compare(results.clone()).unwrap(),
            local.compare(results.clone())
        );
        assert_eq!(
            remote.track(results.clone()).unwrap(),
            local.track(results.clone())
        );
        assert!(remote.is_tracking());
        let changes = vec![(3, 1, 7), (99, 0, 2)];
        assert_eq!(
            remote.compare_changes(changes.clone()).unwrap(),
            local.compare_changes(changes)
        );
        assert_eq!(
            remote.compare_all_expired(results.clone()).unwrap(),
            local.all_expired().compare(results)
        );
    }
}
