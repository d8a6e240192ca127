//! The serving store the job writes its results to: `(user, window) -> count`, as the seeds'
//! Redis STRING keys. The embedded default keeps them in process.

pub use crate::model::counters::{Count, SinkCounters};
use crate::util::bits::BitSet;
use crate::util::hash::{FastMap, UserIndex};
use crate::util::worker::{Worker, WorkerGone};

/// Errors from a sink backend.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("sink: {0}")]
    Backend(String),
}

impl From<SinkError> for crate::pipeline::PipelineError {
    fn from(e: SinkError) -> Self {
        crate::pipeline::PipelineError::Output(Box::new(e))
    }
}

/// Where results go. Writes are upserts; `flush` makes buffered writes visible.
pub trait Sink: Send {
    fn write(&mut self, user: u64, window: usize, count: i64) -> Result<(), SinkError>;

    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    /// Every (user, window index, count) the store holds, each pair once.
    fn read_all(&mut self) -> Result<Vec<(u64, usize, i64)>, SinkError>;

    /// Every pair written since the last call (since the store opened, the first time), each
    /// once, with the count the store holds now; other pairs may come too, with theirs. Only a
    /// store that can tell without reading everything answers (the in-process one; it never
    /// removes a pair); None when only `read_all` can. The oracle's incremental comparison is
    /// its one reader.
    fn read_changes(&mut self) -> Result<Option<Vec<Count>>, SinkError> {
        Ok(None)
    }

    /// Writes and bytes sent so far.
    fn counters(&self) -> SinkCounters;

    /// Keeps the results of only the keys of one in `sample` (`pipeline::oracle::checked`: the
    /// keys a sampled oracle checks), counting every write as before; None when this store
    /// keeps everything it is sent (a real one).
    fn keep_only(&mut self, _sample: u64) -> Option<u64> {
        None
    }
}

impl SinkCounters {
    /// One SET of `count` for `user`'s window number `window`, and the bytes its key and value
    /// would take in Redis (what the in-process stores count; labels name the windows).
    fn count_write(&mut self, labels: &[String], user: u64, window: usize, count: i64) {
        self.writes += 1;
        let label = labels.get(window).map_or("?", String::as_str);
        self.bytes += payload_bytes(store_key_len(user, label), count);
    }
}

/// The serving-store key of a result, as the seeds' job names its Redis keys.
pub fn store_key(user: u64, window_label: &str) -> String {
    format!("freq:user-{user}:{window_label}")
}

/// The embedded in-process store. A job writes every window of one user in a row, so counts
/// are kept per user: one map lookup finds a row of all the user's windows.
#[derive(Debug, Default)]
pub struct MemorySink {
    /// user -> row; row `r` holds `counts[r * width..][..width]`.
    rows: UserIndex,
    /// row -> user.
    users: Vec<u64>,
    /// Per pair (`row * width + window`): the count, if `written`.
    counts: Vec<i64>,
    /// Per pair: ever written.
    written: BitSet,
    /// Windows per row: the labels' (at least one).
    width: usize,
    /// Per row: listed in `changed`.
    flagged: BitSet,
    /// Rows written since the last `read_changes`.
    changed: Vec<u32>,
    /// Counts of windows past the labels (no job writes them): read back in full every time.
    overflow: FastMap<(u64, usize), i64>,
    /// Window labels, to count the bytes a store key would take.
    labels: Vec<String>,
    counters: SinkCounters,
    /// Keeps the results of the keys of one in `sample` (0 or 1: all); see `Sink::keep_only`.
    sample: u64,
}

impl MemorySink {
    pub fn new(labels: Vec<String>) -> MemorySink {
        MemorySink {
            width: labels.len().max(1),
            labels,
            ..MemorySink::default()
        }
    }

    fn width(&self) -> usize {
        self.width.max(1)
    }

    /// The row of `user`, added if new.
    fn row(&mut self, user: u64) -> usize {
        let (row, new) = self.rows.number(user);
        if new {
            self.users.push(user);
            self.counts.resize(self.counts.len() + self.width(), 0);
        }
        row as usize
    }

    /// Every count of `rows` (and every overflow count).
    fn counts_of(&self, rows: impl ExactSizeIterator<Item = usize>) -> Vec<(u64, usize, i64)> {
        let width = self.width();
        let mut out = Vec::with_capacity(rows.len() * width + self.overflow.len());
        for row in rows {
            let user = self.users[row];
            for window in 0..width {
                let pair = row * width + window;
                if self.written.contains(pair) {
                    out.push((user, window, self.counts[pair]));
                }
            }
        }
        out.extend(self.overflow.iter().map(|((u, w), c)| (*u, *w, *c)));
        out
    }
}

/// Writes per batch sent to the store's thread.
/// (4,096 writes of 24 bytes: under glibc's 128 KiB mmap threshold, see `engine::truth`.)
const STORE_BATCH: usize = 4096;
/// Batches in flight before the job waits for the store.
const STORE_IN_FLIGHT: usize = 8;

enum StoreRequest {
    Writes(Vec<Count>),
    ReadAll,
    ReadChanges,
}

/// The in-process store on a thread of its own, as a real serving store is another process:
/// the job's side batches its writes and counts them (a client's work), the store's thread
/// applies them, and a read waits for every write before it. The job's thread, whose speed
/// the run reports, no longer does the store's work (a Flink job's sink does not either).
pub struct ThreadedMemorySink {
    pending: Vec<Count>,
    labels: Vec<String>,
    counters: SinkCounters,
    worker: Worker<StoreRequest, Vec<Count>>,
    /// Keeps the results of the keys of one in `sample` (1: all); see `Sink::keep_only`.
    sample: u64,
}

impl From<WorkerGone> for SinkError {
    fn from(gone: WorkerGone) -> Self {
        SinkError::Backend(gone.to_string())
    }
}

fn serve(store: &mut MemorySink, request: StoreRequest) -> Option<Vec<Count>> {
    // The in-process store's calls cannot fail.
    match request {
        StoreRequest::Writes(writes) => {
            for (user, window, count) in writes {
                let _ = store.write(user, window, count);
            }
            None
        }
        StoreRequest::ReadAll => Some(store.read_all().unwrap_or_default()),
        StoreRequest::ReadChanges => Some(store.read_changes().ok().flatten().unwrap_or_default()),
    }
}

impl ThreadedMemorySink {
    pub fn start(labels: Vec<String>) -> Result<ThreadedMemorySink, std::io::Error> {
        let store = MemorySink::new(labels.clone());
        Ok(ThreadedMemorySink {
            pending: Vec::with_capacity(STORE_BATCH),
            labels,
            counters: SinkCounters::default(),
            worker: Worker::spawn("store", STORE_IN_FLIGHT, store, serve)?,
            sample: 1,
        })
    }

    fn send_pending(&mut self) -> Result<(), SinkError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let writes = std::mem::replace(&mut self.pending, Vec::with_capacity(STORE_BATCH));
        Ok(self.worker.send(StoreRequest::Writes(writes))?)
    }

    /// Every pending write, then `request`, and its answer.
    fn read(&mut self, request: StoreRequest) -> Result<Vec<Count>, SinkError> {
        self.send_pending()?;
        Ok(self.worker.ask(request)?)
    }
}

impl Sink for ThreadedMemorySink {
    fn write(&mut self, user: u64, window: usize, count: i64) -> Result<(), SinkError> {
        self.counters.count_write(&self.labels, user, window, count);
        if !crate::pipeline::oracle::checked(user, self.sample) {
            return Ok(());
        }
        self.pending.push((user, window, count));
        if self.pending.len() >= STORE_BATCH {
            self.send_pending()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.counters.flushes += 1;
        self.send_pending()
    }

    fn read_all(&mut self) -> Result<Vec<Count>, SinkError> {
        self.read(StoreRequest::ReadAll)
    }

    fn read_changes(&mut self) -> Result<Option<Vec<Count>>, SinkError> {
        self.read(StoreRequest::ReadChanges).map(Some)
    }

    fn counters(&self) -> SinkCounters {
        self.counters
    }

    fn keep_only(&mut self, sample: u64) -> Option<u64> {
        self.sample = sample.max(1);
        Some(self.sample)
    }
}

fn decimal_digits(n: u64) -> usize {
    n.checked_ilog10().unwrap_or(0) as usize + 1
}

/// Length of `store_key(user, label)`, without building it (this runs for every write).
fn store_key_len(user: u64, window_label: &str) -> usize {
    "freq:user-".len() + decimal_digits(user) + 1 + window_label.len()
}

/// Bytes of a SET's key and value (the count as Redis stores it: decimal text).
fn payload_bytes(key_len: usize, count: i64) -> u64 {
    (key_len + decimal_digits(count.unsigned_abs()) + usize::from(count < 0)) as u64
}

impl Sink for MemorySink {
    fn write(&mut self, user: u64, window: usize, count: i64) -> Result<(), SinkError> {
        // A sampled store counts every write and keeps the checked keys' results.
        let kept = crate::pipeline::oracle::checked(user, self.sample);
        if kept && window < self.width() {
            let row = self.row(user);
            let pair = row * self.width() + window;
            self.counts[pair] = count;
            self.written.insert(pair);
            if self.flagged.insert(row) {
                self.changed.push(row as u32);
            }
        } else if kept {
            self.overflow.insert((user, window), count);
        }
        self.counters.count_write(&self.labels, user, window, count);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.counters.flushes += 1;
        Ok(())
    }

    fn read_all(&mut self) -> Result<Vec<(u64, usize, i64)>, SinkError> {
        Ok(self.counts_of(0..self.users.len()))
    }

    /// Every count of the users written since the last call: those written, and their other
    /// windows (unchanged, which a reader may re-read at no harm).
    fn read_changes(&mut self) -> Result<Option<Vec<Count>>, SinkError> {
        let rows = std::mem::take(&mut self.changed);
        for row in &rows {
            self.flagged.remove(*row as usize);
        }
        Ok(Some(self.counts_of(rows.iter().map(|r| *r as usize))))
    }

    fn counters(&self) -> SinkCounters {
        self.counters
    }

    fn keep_only(&mut self, sample: u64) -> Option<u64> {
        self.sample = sample.max(1);
        if self.sample > 1 && self.users.is_empty() {
            // One key in `sample`, of ids spread over all of them.
            self.rows = UserIndex::sparse();
        }
        Some(self.sample)
    }
}

/// A real Redis server as the serving store: one STRING key per user x window, written with
/// pipelining (a round trip per `PIPELINE_DEPTH` writes and at every flush).
pub struct RedisSink {
    con: redis::Connection,
    prefix: String,
    labels: Vec<String>,
    pipe: redis::Pipeline,
    pending: usize,
    counters: SinkCounters,
}

/// Writes buffered before a pipeline round trip.
pub const PIPELINE_DEPTH: usize = 1_000;

/// Escapes Redis glob characters so a prefix matches only itself.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn redis_err(e: redis::RedisError) -> SinkError {
    SinkError::Backend(e.to_string())
}

impl RedisSink {
    /// Connects to `url` (e.g. `redis://127.0.0.1:6379`). Keys are `PREFIX` + `freq:user-N:W`;
    /// a run uses its own prefix so it never overwrites another run's results.
    pub fn connect(url: &str, prefix: &str, labels: Vec<String>) -> Result<RedisSink, SinkError> {
        let client = redis::Client::open(url)
            .map_err(|e| SinkError::Backend(format!("invalid Redis URL '{url}': {e}")))?;
        let mut con = client
            .get_connection_with_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| SinkError::Backend(format!("cannot connect to {url}: {e}")))?;
        // A stalled server must not hang the engine thread forever.
        let timeout = Some(std::time::Duration::from_secs(30));
        con.set_read_timeout(timeout).map_err(redis_err)?;
        con.set_write_timeout(timeout).map_err(redis_err)?;
        redis::cmd("PING")
            .query::<String>(&mut con)
            .map_err(redis_err)?;
        Ok(RedisSink {
            con,
            prefix: prefix.to_string(),
            labels,
            pipe: redis::pipe(),
            pending: 0,
            counters: SinkCounters::default(),
        })
    }
}

impl Sink for RedisSink {
    fn write(&mut self, user: u64, window: usize, count: i64) -> Result<(), SinkError> {
        let label = self.labels.get(window).map(String::as_str).unwrap_or("?");
        let key = format!("{}{}", self.prefix, store_key(user, label));
        self.counters.bytes += payload_bytes(key.len(), count);
        self.pipe.cmd("SET").arg(key).arg(count).ignore();
        self.counters.writes += 1;
        self.pending += 1;
        if self.pending >= PIPELINE_DEPTH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        if self.pending > 0 {
            let start = std::time::Instant::now();
            self.pipe.query::<()>(&mut self.con).map_err(redis_err)?;
            self.counters.round_trip_micros += start.elapsed().as_micros() as u64;
            self.pipe.clear();
            self.pending = 0;
            self.counters.flushes += 1;
        }
        Ok(())
    }

    fn read_all(&mut self) -> Result<Vec<(u64, usize, i64)>, SinkError> {
        self.flush()?;
        let pattern = format!("{}freq:*", glob_escape(&self.prefix));
        // SCAN may return a key more than once: collect them in a set.
        let mut keys: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
        let mut cursor: u64 = 0;
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query(&mut self.con)
                .map_err(redis_err)?;
            keys.extend(batch);
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        let keys: Vec<String> = keys.into_iter().collect();
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(1000) {
            let values: Vec<Option<i64>> = redis::cmd("MGET")
                .arg(chunk)
                .query(&mut self.con)
                .map_err(redis_err)?;
            for (key, value) in chunk.iter().zip(values) {
                let parsed = key
                    .strip_prefix(&self.prefix)
                    .and_then(|k| k.strip_prefix("freq:user-"))
                    .and_then(|k| k.split_once(':'))
                    .and_then(|(id, label)| {
                        Some((
                            id.parse::<u64>().ok()?,
                            self.labels.iter().position(|l| l == label)?,
                        ))
                    });
                match (parsed, value) {
                    (Some((user, window)), Some(count)) => out.push((user, window, count)),
                    _ => {
                        return Err(SinkError::Backend(format!(
                            "unexpected key or value at '{key}'"
                        )));
                    }
                }
            }
        }
        Ok(out)
    }

    fn counters(&self) -> SinkCounters {
        self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threaded_store_holds_and_counts_what_the_in_process_one_does() {
        let labels: Vec<String> = vec!["1m".into(), "5m".into()];
        let mut local = MemorySink::new(labels.clone());
        let mut threaded = ThreadedMemorySink::start(labels).unwrap();
        // More writes than a batch, and a window past the labels.
        for i in 0..(2 * STORE_BATCH as u64 + 5) {
            for s in [&mut local as &mut dyn Sink, &mut threaded] {
                s.write(i % 97, (i % 3) as usize, i as i64).unwrap();
            }
        }
        let sorted = |mut v: Vec<Count>| {
            v.sort_unstable();
            v
        };
        assert_eq!(
            sorted(threaded.read_changes().unwrap().unwrap()),
            sorted(local.read_changes().unwrap().unwrap())
        );
        threaded.write(5, 1, -3).unwrap();
        local.write(5, 1, -3).unwrap();
        assert_eq!(
            sorted(threaded.read_changes().unwrap().unwrap()),
            sorted(local.read_changes().unwrap().unwrap())
        );
        assert_eq!(
            sorted(threaded.read_all().unwrap()),
            sorted(local.read_all().unwrap())
        );
        threaded.flush().unwrap();
        local.flush().unwrap();
        assert_eq!(threaded.counters(), local.counters());
    }

    #[test]
    fn memory_sink_upserts() {
        let mut s = MemorySink::default();
        s.write(1, 0, 3).unwrap();
        s.write(1, 0, 2).unwrap();
        s.write(2, 1, 1).unwrap();
        let mut all = s.read_all().unwrap();
        all.sort();
        assert_eq!(all, vec![(1, 0, 2), (2, 1, 1)]);
        assert_eq!(s.counters().writes, 3);
        assert_eq!(store_key(7, "1m"), "freq:user-7:1m");
        for (user, label) in [(0, "1m"), (7, "10m"), (123_456, "1h"), (u64::MAX, "30m")] {
            assert_eq!(store_key_len(user, label), store_key(user, label).len());
        }
        assert_eq!(payload_bytes(14, 0), 15);
        assert_eq!(payload_bytes(14, -12), 17);
        assert_eq!(payload_bytes(14, 100), 17);
    }

    #[test]
    fn memory_sink_reports_what_changed_since_it_was_last_asked() {
        let mut s = MemorySink::new(vec!["1m".into(), "5m".into()]);
        s.write(1, 0, 3).unwrap();
        s.write(2, 1, 4).unwrap();
        s.write(3, 7, 1).unwrap(); // a window past the labels
        let sorted = |mut v: Vec<(u64, usize, i64)>| {
            v.sort();
            v
        };
        let first = sorted(s.read_changes().unwrap().unwrap());
        assert_eq!(first, vec![(1, 0, 3), (2, 1, 4), (3, 7, 1)]);
        // Nothing written since: only the overflow, which is always read back.
        assert_eq!(s.read_changes().unwrap().unwrap(), vec![(3, 7, 1)]);
        s.write(1, 1, 9).unwrap();
        s.write(1, 1, 8).unwrap();
        // User 1's row, both windows, once, with the counts held now.
        assert_eq!(
            sorted(s.read_changes().unwrap().unwrap()),
            vec![(1, 0, 3), (1, 1, 8), (3, 7, 1)]
        );
        assert_eq!(
            sorted(s.read_all().unwrap()),
            vec![(1, 0, 3), (1, 1, 8), (2, 1, 4), (3, 7, 1)]
        );
    }
}
