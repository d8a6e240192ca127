//! What one RocksDB instance's LOG says: the events RocksDB writes as `EVENT_LOG_v1` JSON
//! (flushes with their reason and size, compactions with their output level and LSM shape, SST
//! files created and deleted with their table properties), its write stalls and stops with
//! their cause, and its block caches. FRocksDB 6.20 (Flink 1.20) and RocksDB 11 write the same
//! events; a line either does not know is skipped.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

/// One SST file the LOG saw created, and where it is now.
#[derive(Debug, Clone, PartialEq)]
pub struct SstFile {
    pub cf: String,
    pub level: u32,
    pub size: u64,
    pub entries: u64,
    pub filter_bytes: u64,
    pub index_bytes: u64,
    /// Raw (uncompressed) key and value bytes, for the entries' sizes.
    pub raw_key_bytes: u64,
    pub raw_value_bytes: u64,
    pub filter_policy: String,
    /// Partitioned index (a two-level index has more than one partition).
    pub index_partitions: u64,
}

/// One flush: the column family, why, and how much memtable data it wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Flush {
    pub cf: String,
    pub reason: String,
    /// `total_data_size`: the memtables' data (keys and values) flushed.
    pub data_bytes: u64,
    pub memtables: u64,
    pub micros: u64,
}

/// Everything one LOG file says that `diagnose` uses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogEvidence {
    /// Seconds between the first and the last timestamped line.
    pub span_secs: f64,
    pub flushes: Vec<Flush>,
    /// SST bytes written by flushes and by compactions.
    pub flush_bytes: u64,
    pub compaction_bytes: u64,
    pub compactions: u64,
    /// Live SST files at the end of the LOG, by file number.
    pub files: BTreeMap<u64, SstFile>,
    /// The largest file ever created (filters and index are per file).
    pub biggest_file: Option<SstFile>,
    /// Per column family, the most levels with files (L0 included) any event's `lsm_state`
    /// showed.
    pub active_levels: BTreeMap<String, u32>,
    /// "Stalling writes because ..." and "Stopping writes because ..." lines, by cause.
    pub stalls: BTreeMap<String, u64>,
    pub stops: BTreeMap<String, u64>,
    /// Block cache capacities printed in the table options, and the distinct caches (by
    /// address) the column families use.
    pub cache_capacities: Vec<u64>,
    pub caches: usize,
    pub high_pri_pool_ratio: Option<f64>,
    /// Whether index and filter blocks live in the block cache (`cache_index_and_filter_blocks`
    /// of the table options printed for the column families: true if any says so), the LOG's
    /// word where no OPTIONS file is beside it.
    pub cache_index_and_filter_blocks: Option<bool>,
    /// Column families the LOG names, in the order it first names them.
    pub column_families: Vec<String>,
    /// The database's path (`Options.wal_dir`, the database's own by default): Flink names
    /// it after the job, the operator and the subtask, wherever the LOG was copied to.
    pub db_path: Option<String>,
}

/// A LOG line's timestamp (`2026/12/02-10:53:26.061465`) in microseconds of a calendar that
/// only differences within a run are taken of (months as 31 days).
fn timestamp(line: &str) -> Option<i64> {
    let stamp = line.get(..26)?;
    let (date, time) = stamp.split_once('-')?;
    let mut d = date.split('/').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':');
    let (h, min) = (
        t.next()?.parse::<i64>().ok()?,
        t.next()?.parse::<i64>().ok()?,
    );
    let (s, frac) = t.next()?.split_once('.')?;
    let (s, micros) = (s.parse::<i64>().ok()?, frac.parse::<i64>().ok()?);
    let days = y * 372 + (m - 1) * 31 + day - 1;
    Some(((days * 24 + h) * 60 + min) * 60_000_000 + s * 1_000_000 + micros)
}

/// The cause of a stall line: "Stalling writes because we have 4 immutable memtables (waiting
/// for flush), max_write_buffer_number is set to 5" -> "immutable memtables (waiting for
/// flush)". Numbers are dropped so that one cause counts as one.
fn cause(rest: &str) -> String {
    let text = rest.split(", max_").next().unwrap_or(rest);
    let text = text.split(" rate ").next().unwrap_or(text);
    let words: Vec<&str> = text
        .split_whitespace()
        .filter(|w| !w.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .collect();
    words
        .join(" ")
        .trim_start_matches("we have ")
        .trim()
        .to_string()
}

/// `[name]` right after the source location (`[/column_family.cc:900] [window-stats] ...`).
fn cf_of(line: &str) -> Option<&str> {
    let after = line.split("] [").nth(1)?;
    after.split(']').next()
}

impl LogEvidence {
    /// Reads one LOG's text.
    pub fn parse(text: &str) -> LogEvidence {
        let mut ev = LogEvidence::default();
        let (mut first, mut last) = (None, None);
        // Jobs: the column family each flush job names, and each compaction's output level.
        let mut job_cf: HashMap<u64, String> = HashMap::new();
        let mut flush_jobs: HashMap<u64, usize> = HashMap::new();
        // Files a job created, until it finishes and says their level.
        let mut pending: HashMap<u64, Vec<u64>> = HashMap::new();
        let mut caches = std::collections::BTreeSet::new();
        let mut table_cf: Option<String> = None;
        for line in text.lines() {
            if let Some(t) = timestamp(line) {
                first.get_or_insert(t);
                last = Some(t);
            }
            if ev.db_path.is_none()
                && let Some(path) = line.split("Options.wal_dir: ").nth(1)
            {
                ev.db_path = Some(path.trim().to_string());
            }
            if let Some(json) = line.split("EVENT_LOG_v1 ").nth(1) {
                let Ok(e) = serde_json::from_str::<Value>(json) else {
                    continue;
                };
                ev.event(&e, &mut job_cf, &mut flush_jobs, &mut pending);
                continue;
            }
            for (word, into) in [
                ("Stalling writes because ", 0),
                ("Stopping writes because ", 1),
            ] {
                if let Some(rest) = line.split(word).nth(1) {
                    let map = if into == 0 {
                        &mut ev.stalls
                    } else {
                        &mut ev.stops
                    };
                    *map.entry(cause(rest)).or_default() += 1;
                }
            }
            if let Some(rest) = line.split("[JOB ").nth(1)
                && let Some(cf) = cf_of(line)
                && let Some(job) = rest.split(']').next().and_then(|j| j.parse::<u64>().ok())
            {
                job_cf.entry(job).or_insert_with(|| cf.to_string());
            }
            // Table options are printed per column family: "Options for column family [x]:".
            if let Some(rest) = line.split("Options for column family [").nth(1) {
                let cf = rest.split(']').next().unwrap_or("").to_string();
                if !ev.column_families.contains(&cf) {
                    ev.column_families.push(cf.clone());
                }
                table_cf = Some(cf);
            }
            let trimmed = line.trim();
            if let Some(addr) = trimmed.strip_prefix("block_cache: ") {
                if table_cf.is_some() {
                    caches.insert(addr.to_string());
                }
            } else if let Some(cap) = trimmed.strip_prefix("capacity : ") {
                if let Ok(c) = cap.trim().parse::<u64>() {
                    ev.cache_capacities.push(c);
                }
            } else if let Some(r) = trimmed.strip_prefix("high_pri_pool_ratio: ") {
                ev.high_pri_pool_ratio = r.trim().parse().ok();
            } else if let Some(v) = trimmed.strip_prefix("cache_index_and_filter_blocks: ") {
                let on = v.trim() == "1";
                ev.cache_index_and_filter_blocks =
                    Some(on || ev.cache_index_and_filter_blocks.unwrap_or(false));
            }
            // A trivial move: "[cf] Moving #12 to level-2 4096 bytes".
            if let Some(rest) = line.split("Moving #").nth(1) {
                let mut parts = rest.split_whitespace();
                let number = parts.next().and_then(|n| n.parse::<u64>().ok());
                let level = parts
                    .nth(1)
                    .and_then(|l| l.strip_prefix("level-"))
                    .and_then(|l| l.parse::<u32>().ok());
                if let (Some(n), Some(l)) = (number, level)
                    && let Some(f) = ev.files.get_mut(&n)
                {
                    f.level = l;
                }
            }
        }
        ev.caches = caches.len();
        ev.span_secs = match (first, last) {
            (Some(a), Some(b)) => (b - a).max(0) as f64 / 1e6,
            _ => 0.0,
        };
        ev
    }

    fn event(
        &mut self,
        e: &Value,
        job_cf: &mut HashMap<u64, String>,
        flush_jobs: &mut HashMap<u64, usize>,
        pending: &mut HashMap<u64, Vec<u64>>,
    ) {
        let num = |k: &str| e.get(k).and_then(Value::as_u64).unwrap_or(0);
        let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let job = num("job");
        match e.get("event").and_then(Value::as_str).unwrap_or("") {
            "flush_started" => {
                let cf = e
                    .get("cf_name")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or_else(|| job_cf.get(&job).cloned())
                    .unwrap_or_default();
                flush_jobs.insert(job, self.flushes.len());
                self.flushes.push(Flush {
                    cf,
                    reason: text("flush_reason"),
                    data_bytes: num("total_data_size"),
                    memtables: num("num_memtables"),
                    micros: num("time_micros"),
                });
            }
            "flush_finished" | "compaction_finished" => {
                let level = if e["event"] == "compaction_finished" {
                    self.compactions += 1;
                    self.compaction_bytes += num("total_output_size");
                    num("output_level") as u32
                } else {
                    0
                };
                for number in pending.remove(&job).unwrap_or_default() {
                    if let Some(f) = self.files.get_mut(&number) {
                        f.level = level;
                    }
                }
                if let (Some(cf), Some(state)) = (
                    job_cf.get(&job).cloned(),
                    e.get("lsm_state").and_then(Value::as_array),
                ) {
                    let active =
                        state.iter().filter(|n| n.as_u64().unwrap_or(0) > 0).count() as u32;
                    let best = self.active_levels.entry(cf).or_default();
                    *best = (*best).max(active);
                }
            }
            "table_file_creation" => {
                let cf = text("cf_name");
                job_cf.entry(job).or_insert_with(|| cf.clone());
                if let Some(i) = flush_jobs.get(&job)
                    && self.flushes[*i].cf.is_empty()
                {
                    self.flushes[*i].cf = cf.clone();
                }
                let props = &e["table_properties"];
                let prop = |k: &str| props.get(k).and_then(Value::as_u64).unwrap_or(0);
                let file = SstFile {
                    cf,
                    level: 0,
                    size: num("file_size"),
                    entries: prop("num_entries"),
                    filter_bytes: prop("filter_size"),
                    index_bytes: prop("index_size"),
                    raw_key_bytes: prop("raw_key_size"),
                    raw_value_bytes: prop("raw_value_size"),
                    filter_policy: props
                        .get("filter_policy")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    index_partitions: prop("index_partitions"),
                };
                if flush_jobs.contains_key(&job) {
                    self.flush_bytes += file.size;
                }
                if self
                    .biggest_file
                    .as_ref()
                    .is_none_or(|b| b.size < file.size)
                {
                    self.biggest_file = Some(file.clone());
                }
                let number = num("file_number");
                self.files.insert(number, file);
                pending.entry(job).or_default().push(number);
            }
            "table_file_deletion" => {
                self.files.remove(&num("file_number"));
            }
            _ => {}
        }
    }

    /// Live bytes and files per level of column family `cf` at the end of the LOG.
    pub fn levels(&self, cf: &str) -> BTreeMap<u32, (u64, u64)> {
        let mut out: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for f in self.files.values().filter(|f| f.cf == cf) {
            let e = out.entry(f.level).or_default();
            e.0 += 1;
            e.1 += f.size;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_cause_counts_once_whatever_its_numbers() {
        assert_eq!(
            cause(
                "we have 2 immutable memtables (waiting for flush), max_write_buffer_number is set to 2"
            ),
            "immutable memtables (waiting for flush)"
        );
        assert_eq!(
            cause("of too many level-0 files (20 >= 20) rate 16777216"),
            "of too many level-0 files (20 >= 20)"
        );
    }

    #[test]
    fn events_become_flushes_files_and_levels() {
        let log = "\
2026/12/02-10:53:26.000000 7f [/flush_job.cc:1] [window-stats] [JOB 2] Flushing memtable with next log file: 13
2026/12/02-10:53:26.000001 7f EVENT_LOG_v1 {\"time_micros\": 1, \"job\": 2, \"event\": \"flush_started\", \"num_memtables\": 1, \"total_data_size\": 25430, \"flush_reason\": \"Write Buffer Manager\"}
2026/12/02-10:53:26.000002 7f EVENT_LOG_v1 {\"time_micros\": 2, \"cf_name\": \"window-stats\", \"job\": 2, \"event\": \"table_file_creation\", \"file_number\": 16, \"file_size\": 7461, \"table_properties\": {\"filter_size\": 545, \"index_size\": 129, \"num_entries\": 394, \"filter_policy\": \"rocksdb.BuiltinBloomFilter\"}}
2026/12/02-10:53:26.000003 7f EVENT_LOG_v1 {\"time_micros\": 3, \"job\": 2, \"event\": \"flush_finished\", \"lsm_state\": [1, 0, 0, 0, 0, 0, 0]}
2026/12/02-10:53:27.000000 7f [WARN] [/column_family.cc:900] [window-stats] Stopping writes because we have 2 immutable memtables (waiting for flush), max_write_buffer_number is set to 2
2026/12/02-10:53:28.500000 7f EVENT_LOG_v1 {\"time_micros\": 4, \"cf_name\": \"window-stats\", \"job\": 11, \"event\": \"table_file_creation\", \"file_number\": 30, \"file_size\": 6435, \"table_properties\": {}}
2026/12/02-10:53:28.500001 7f EVENT_LOG_v1 {\"time_micros\": 5, \"job\": 11, \"event\": \"compaction_finished\", \"output_level\": 1, \"total_output_size\": 6435, \"lsm_state\": [3, 1, 0, 0, 0, 0, 0]}
2026/12/02-10:53:28.500002 7f EVENT_LOG_v1 {\"time_micros\": 6, \"job\": 11, \"event\": \"table_file_deletion\", \"file_number\": 16}
";
        let ev = LogEvidence::parse(log);
        assert_eq!(ev.flushes.len(), 1);
        assert_eq!(ev.flushes[0].cf, "window-stats");
        assert_eq!(ev.flushes[0].reason, "Write Buffer Manager");
        assert_eq!(ev.flushes[0].data_bytes, 25430);
        assert_eq!(
            (ev.flush_bytes, ev.compaction_bytes, ev.compactions),
            (7461, 6435, 1)
        );
        assert_eq!(
            ev.levels("window-stats").into_iter().collect::<Vec<_>>(),
            vec![(1, (1, 6435))]
        );
        assert_eq!(ev.active_levels["window-stats"], 2);
        assert_eq!(ev.stops["immutable memtables (waiting for flush)"], 1);
        assert_eq!(ev.biggest_file.unwrap().filter_bytes, 545);
        assert!((ev.span_secs - 2.500002).abs() < 1e-6, "{}", ev.span_secs);
    }
}
