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

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SinkCounters {
    pub writes: u64,
    pub bytes: u64,
    pub flushes: u64,
}

/// The serving-store key of a result, as the seeds' job names its Redis keys.
pub fn store_key(user: u64, window_label: &str) -> String {
    format!("freq:user-{user}:{window_label}")
}

/// The embedded in-process store.
#[derive(Debug, Default)]
pub struct MemorySink {
    values: HashMap<(u64, usize), i64>,
    counters: SinkCounters,
}

impl Sink for MemorySink {
    fn write(&mut self, user: u64, window: usize, count: i64) -> Result<(), SinkError> {
        self.values.insert((user, window), count);
        self.counters.writes += 1;
        // What a Redis SET of this key and value would carry.
        self.counters.bytes += (20 + 8) as u64;
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
    }
}
