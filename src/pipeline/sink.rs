//! The serving store the job writes its results to: `(user, window) -> count`, as the seeds'
//! Redis STRING keys. The embedded default keeps them in process.

use std::collections::HashMap;

/// Errors from a sink backend.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("sink: {0}")]
    Backend(String),
}

/// Where results go. Writes are upserts; `flush` makes buffered writes visible.
pub trait Sink: Send {
    fn write(&mut self, user: u64, window: usize, count: i64) -> Result<(), SinkError>;

    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    /// Every (user, window index, count) the store holds.
    fn read_all(&mut self) -> Result<Vec<(u64, usize, i64)>, SinkError>;

    /// Writes and bytes sent so far.
    fn counters(&self) -> SinkCounters;
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SinkCounters {
    pub writes: u64,
    pub bytes: u64,
    /// Round trips (pipeline flushes) to the store.
    pub flushes: u64,
    /// Time spent waiting for the store's round trips, in microseconds.
    pub round_trip_micros: u64,
}

impl SinkCounters {
    /// What happened since `base` (an earlier reading of the same store).
    pub fn since(&self, base: &SinkCounters) -> SinkCounters {
        SinkCounters {
            writes: self.writes.saturating_sub(base.writes),
            bytes: self.bytes.saturating_sub(base.bytes),
            flushes: self.flushes.saturating_sub(base.flushes),
            round_trip_micros: self
                .round_trip_micros
                .saturating_sub(base.round_trip_micros),
        }
    }
}

/// The serving-store key of a result, as the seeds' job names its Redis keys.
pub fn store_key(user: u64, window_label: &str) -> String {
    format!("freq:user-{user}:{window_label}")
}

/// The embedded in-process store.
#[derive(Debug, Default)]
pub struct MemorySink {
    values: HashMap<(u64, usize), i64>,
    /// Window labels, to count the bytes a store key would take.
    labels: Vec<String>,
    counters: SinkCounters,
}

impl MemorySink {
    pub fn new(labels: Vec<String>) -> MemorySink {
        MemorySink {
            labels,
            ..MemorySink::default()
        }
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
        self.values.insert((user, window), count);
        self.counters.writes += 1;
        let label = self.labels.get(window).map_or("?", String::as_str);
        self.counters.bytes += payload_bytes(store_key_len(user, label), count);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        self.counters.flushes += 1;
        Ok(())
    }

    fn read_all(&mut self) -> Result<Vec<(u64, usize, i64)>, SinkError> {
        Ok(self.values.iter().map(|((u, w), c)| (*u, *w, *c)).collect())
    }

    fn counters(&self) -> SinkCounters {
        self.counters
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
}
