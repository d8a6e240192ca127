//! A preload's base on disk, and its clone into a run's database.
//!
//! A base is a folder: `base.json` (what history it holds and where the log stands after it),
//! each state's SST files (`<cf index>-<n>.sst`, written with the column family's own options,
//! key-sorted and cut at the size the level they go to cuts its files at), and `results.bin`
//! (the serving store's results and the operator's own after that history). It is built in a
//! temporary folder beside it and renamed into place when complete, so a crash never leaves a
//! half-built base that a later run would use.
//!
//! A clone hard-links the files into the run's data directory and ingests them
//! (`IngestExternalFile` with `move_files`): RocksDB adopts the links, nothing is copied, and
//! the base stays as it was for the next run.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::PreloadError;
use crate::backend::{BackendError, CfOptions, SstWriter, StateBackend};
use crate::pipeline::source::Offsets;
use crate::util::varint;

/// The base's description (`base.json`).
pub const MANIFEST: &str = "base.json";
/// Results after the history: the serving store's, then the operator's own.
pub const RESULTS: &str = "results.bin";
/// Levels of the LSM tree: RocksDB's default, which neither Flink nor statebench changes.
pub const NUM_LEVELS: u32 = 7;
/// Bumped when what a base holds changes meaning: older bases are rebuilt, not misread.
/// (5: `results.bin` holds the checked keys' results, delta- and varint-encoded.)
pub const FORMAT: u32 = 5;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    /// The hash of everything that decides the base's bytes (its folder's name).
    pub key: String,
    pub workload: String,
    pub profile: String,
    /// Records of history the state holds (the log's first).
    pub records: u64,
    /// Where the log stands after them: the live job starts here.
    pub offsets: Offsets,
    /// Keys and values, in bytes, before SST encoding; and entries.
    pub state_bytes: u64,
    pub entries: u64,
    /// Results the serving store holds after the history (one per key and result slot) of the
    /// keys `results.bin` keeps: one key in `results_sample`.
    pub results: u64,
    /// `results.bin` keeps the results of the keys of one in this many (`oracle::checked`): a
    /// run checks those or a sample of them, never all of a history of millions.
    #[serde(default = "one")]
    pub results_sample: u64,
    /// The level the files go to (the last level of an LSM tree of this size).
    pub level: u32,
    /// Key-group batches the warm-up ran in.
    pub batches: u32,
    /// Each state's files, in key order.
    pub column_families: Vec<CfFiles>,
    /// Seconds: finding the history's length and size, the warm-up, writing the files.
    pub sizing_secs: f64,
    pub warm_up_secs: f64,
    pub write_secs: f64,
    /// The name of its history whatever the profile (empty for a `size=` amount): a base of
    /// another profile with the same history is derived from this one, not warmed up again.
    #[serde(default)]
    pub history: String,
    /// The base whose state it was written from, if it was derived rather than warmed up.
    #[serde(default)]
    pub derived_from: Option<String>,
    /// HEAP timers pending after the history: one raw keyed state stream per batch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heap_timer_files: Vec<String>,
    /// The levels above each state's last (`levels: full`), in the order they are ingested
    /// (each state's deepest first): each with what the history changed after the level below
    /// it was taken.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upper: Vec<CfFiles>,
    /// The operators after the first (a chain's), in chain order: where each stood after the
    /// history. Their files are in `column_families`, each named with its operator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub downstream: Vec<Downstream>,
}

/// Where an operator after the first (a chain's) stood after the history.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Downstream {
    /// Records it had received: the next one's offset.
    pub records_in: u64,
    /// Its HEAP timers pending after the history: one raw keyed state stream per batch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heap_timer_files: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CfFiles {
    pub name: String,
    pub files: Vec<String>,
    /// Bytes of the files, and entries in them.
    pub bytes: u64,
    pub entries: u64,
    /// The level they go to (None: the manifest's `level`, as bases before it had).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u32>,
    /// The operator of the chain whose database holds it (0: the first, a single operator's).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub operator: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Manifest {
    /// Every level's files, the last level's first.
    fn all_files(&self) -> impl Iterator<Item = &CfFiles> {
        self.column_families.iter().chain(&self.upper)
    }

    /// The levels that hold files, top first (one for a base all in its last level).
    pub fn levels(&self) -> Vec<u32> {
        let levels: std::collections::BTreeSet<u32> = self
            .all_files()
            .filter(|c| !c.files.is_empty())
            .map(|c| c.level.unwrap_or(self.level))
            .collect();
        levels.into_iter().collect()
    }

    pub fn file_bytes(&self) -> u64 {
        self.all_files().map(|c| c.bytes).sum()
    }

    pub fn files(&self) -> usize {
        self.all_files().map(|c| c.files.len()).sum()
    }

    /// The complete base in `dir`, if there is one of this format.
    pub fn read(dir: &Path) -> Option<Manifest> {
        let bytes = std::fs::read(dir.join(MANIFEST)).ok()?;
        serde_json::from_slice::<Manifest>(&bytes)
            .ok()
            .filter(|m| m.format == FORMAT)
    }

    /// Writes the manifest into `dir`, last: a base is complete once it has one.
    pub fn write(&self, dir: &Path) -> Result<(), PreloadError> {
        let text =
            serde_json::to_vec_pretty(self).map_err(|e| PreloadError::Preload(format!("{e}")))?;
        crate::util::fs::write_atomically(&dir.join(MANIFEST), &text)
            .map_err(io(format!("write {}", MANIFEST)))
    }
}

fn one() -> u64 {
    1
}

pub(super) fn io(what: String) -> impl FnOnce(std::io::Error) -> PreloadError {
    move |e| PreloadError::Preload(format!("cannot {what}: {e}"))
}

/// The level a leveled LSM tree of `bytes` keeps its last data in: the last level with
/// `level_compaction_dynamic_level_bytes` (RocksDB fills the tree from the bottom), else the
/// first level whose target size (`max_bytes_for_level_base` times the multiplier per level
/// from L1) with the ones above it holds `bytes`.
pub fn last_level(bytes: u64, dynamic: bool, base: u64, multiplier: f64, num_levels: u32) -> u32 {
    let bottom = num_levels.saturating_sub(1).max(1);
    if dynamic {
        return bottom;
    }
    let mut capacity = 0.0;
    let mut target = base.max(1) as f64;
    for level in 1..bottom {
        capacity += target;
        if capacity >= bytes as f64 {
            return level;
        }
        target *= multiplier.max(1.0);
    }
    bottom
}

/// Puts each state's files at the level a tree of their size ends in under knobs `k` (each
/// column family is a tree of its own: [`last_level`] of its files' size); the deepest.
pub fn place(column_families: &mut [CfFiles], k: &crate::config::profile::Knobs) -> u32 {
    let mut deepest = 1;
    for cf in column_families {
        let level = last_level(
            cf.bytes,
            k.dynamic_level_bytes,
            k.max_bytes_for_level_base.0,
            k.max_bytes_for_level_multiplier,
            NUM_LEVELS,
        );
        cf.level = Some(level);
        deepest = deepest.max(level);
    }
    deepest
}

/// Sorted entries of one column family into SST files of about `target` bytes each.
pub struct SstOut<'o> {
    dir: PathBuf,
    prefix: String,
    index: usize,
    options: &'o CfOptions,
    target: u64,
    writer: Option<SstWriter<'o>>,
    pub files: CfFiles,
}

impl<'o> SstOut<'o> {
    pub fn new(dir: &Path, index: usize, name: &str, options: &'o CfOptions, target: u64) -> Self {
        SstOut {
            dir: dir.to_path_buf(),
            prefix: String::new(),
            index,
            options,
            target: target.max(1 << 20),
            writer: None,
            files: CfFiles {
                name: name.to_string(),
                files: Vec::new(),
                bytes: 0,
                entries: 0,
                level: None,
                operator: 0,
            },
        }
    }

    /// Its files are of operator `operator`'s database (a chain's).
    pub fn for_operator(mut self, operator: usize) -> Self {
        self.files.operator = operator;
        self
    }

    /// Names its files `<prefix><index>-<n>.sst` (the levels of one base apart).
    pub fn with_prefix(mut self, prefix: &str) -> Self {
        self.prefix = prefix.to_string();
        self
    }

    /// Adds an entry; keys must come in ascending order.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), BackendError> {
        self.add(key, Some(value))
    }

    /// Adds a deletion of `key` (a level above the one holding it).
    pub fn delete(&mut self, key: &[u8]) -> Result<(), BackendError> {
        self.add(key, None)
    }

    fn add(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), BackendError> {
        let writer = match &mut self.writer {
            Some(w) => w,
            None => {
                let name = format!(
                    "{}{}-{:06}.sst",
                    self.prefix,
                    self.index,
                    self.files.files.len() + 1
                );
                let w = SstWriter::create(self.options, &self.dir.join(&name))?;
                self.files.files.push(name);
                self.writer.insert(w)
            }
        };
        match value {
            Some(v) => writer.put(key, v)?,
            None => writer.delete(key)?,
        }
        self.files.entries += 1;
        // A stop (Ctrl-C) ends the writing; find_or_build reports it as the build's stop.
        if self.files.entries.is_multiple_of(super::CANCEL_EVERY) && super::check_cancel().is_err()
        {
            return Err(BackendError::Setup(
                "the preload's build was stopped".into(),
            ));
        }
        if writer.file_size() >= self.target {
            self.finish_file()?;
        }
        Ok(())
    }

    fn finish_file(&mut self) -> Result<(), BackendError> {
        if let Some(mut w) = self.writer.take() {
            w.finish()?;
            self.files.bytes += w.file_size();
        }
        Ok(())
    }

    /// Closes the last file.
    pub fn finish(mut self) -> Result<CfFiles, BackendError> {
        self.finish_file()?;
        Ok(self.files)
    }
}

/// Writes the results (serving store's, then the operator's own) to `dir/results.bin`: each
/// list's length, then its results in key order, each as the key's distance from the one before,
/// the slot and the value (zigzag), varint-encoded: 3-6 bytes a result where a fixed layout took
/// 20 (a history's results were most of a base's bytes on disk).
pub fn write_results(
    dir: &Path,
    sink: &[(u64, usize, i64)],
    own: &[(u64, usize, i64)],
) -> Result<(), PreloadError> {
    let mut out = Vec::with_capacity(16 + (sink.len() + own.len()) * 6);
    for list in [sink, own] {
        let mut sorted = list.to_vec();
        sorted.sort_unstable();
        varint::put(&mut out, sorted.len() as u64);
        let mut last = 0u64;
        for (key, slot, value) in sorted {
            varint::put(&mut out, key.wrapping_sub(last));
            varint::put(&mut out, slot as u64);
            varint::put(&mut out, varint::zigzag(value));
            last = key;
        }
    }
    let path = dir.join(RESULTS);
    let mut f = std::fs::File::create(&path).map_err(io(format!("create {}", path.display())))?;
    f.write_all(&out)
        .and_then(|()| f.sync_all())
        .map_err(io(format!("write {}", path.display())))
}

/// Reads `dir/results.bin` as `write_results` wrote it: each of the serving store's results
/// to `sink` as it is read, the operator's own returned.
pub fn read_results(
    dir: &Path,
    mut sink: impl FnMut(u64, usize, i64) -> Result<(), PreloadError>,
) -> Result<Vec<(u64, usize, i64)>, PreloadError> {
    let path = dir.join(RESULTS);
    let file = std::fs::File::open(&path).map_err(io(format!("read {}", path.display())))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let corrupt = || PreloadError::Preload(format!("{} is damaged", path.display()));
    let mut number = || -> Result<u64, PreloadError> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let mut byte = [0u8; 1];
            reader.read_exact(&mut byte).map_err(|_| corrupt())?;
            n |= u64::from(byte[0] & 0x7f) << shift;
            if byte[0] < 0x80 {
                return Ok(n);
            }
        }
        Err(corrupt())
    };
    let mut own = Vec::new();
    for list in 0..2 {
        let n = number()?;
        let mut key = 0u64;
        for _ in 0..n {
            key = key.wrapping_add(number()?);
            let slot = usize::try_from(number()?).map_err(|_| corrupt())?;
            let value = varint::unzigzag(number()?);
            if list == 0 {
                sink(key, slot, value)?;
            } else {
                own.push((key, slot, value));
            }
        }
    }
    Ok(own)
}

/// Loads base `dir` into `backends` (each operator's fresh database, in chain order, opened
/// with its column families): each state's files hard-linked into `staging` and ingested into
/// its operator's, then moved to the base's level.
pub fn clone_into<B: std::ops::Deref<Target = StateBackend>>(
    dir: &Path,
    manifest: &Manifest,
    backends: &[B],
    staging: &Path,
) -> Result<(), PreloadError> {
    std::fs::create_dir_all(staging).map_err(io(format!("create {}", staging.display())))?;
    let backend = |cf: &CfFiles| {
        backends.get(cf.operator).ok_or_else(|| {
            PreloadError::Preload(format!(
                "the base {} holds files of operator {} ('{}'); the job has {} operator(s)",
                dir.display(),
                cf.operator,
                cf.name,
                backends.len()
            ))
        })
    };
    for cf in &manifest.column_families {
        let backend = backend(cf)?;
        if ingest(dir, cf, backend, staging)? {
            move_to_level(backend, &cf.name, cf.level.unwrap_or(manifest.level))?;
        }
    }
    // Each level above, deepest first: its files overlap the keys of the level below, so
    // RocksDB puts them in the level right above it, with newer sequence numbers.
    for cf in &manifest.upper {
        ingest(dir, cf, backend(cf)?, staging)?;
    }
    let _ = std::fs::remove_dir_all(staging);
    Ok(())
}

/// Hard-links `cf`'s files from `dir` into `staging` and ingests them; false if it has none.
fn ingest(
    dir: &Path,
    cf: &CfFiles,
    backend: &StateBackend,
    staging: &Path,
) -> Result<bool, PreloadError> {
    if cf.files.is_empty() {
        return Ok(false);
    }
    let mut links = Vec::with_capacity(cf.files.len());
    for file in &cf.files {
        let link = staging.join(file);
        // A link left by an interrupted clone is replaced.
        let _ = std::fs::remove_file(&link);
        std::fs::hard_link(dir.join(file), &link)
            .or_else(|_| std::fs::copy(dir.join(file), &link).map(|_| ()))
            .map_err(io(format!("link {} into {}", file, staging.display())))?;
        links.push(link);
    }
    backend.ingest(backend.cf(&cf.name)?, links)?;
    Ok(true)
}

/// Moves column family `name`'s files (all in the last level after an ingest into an empty
/// database) to `level` without rewriting them (see [`StateBackend::move_to_level`]).
fn move_to_level(backend: &StateBackend, name: &str, level: u32) -> Result<(), PreloadError> {
    let handle = backend.cf(name)?;
    if level >= NUM_LEVELS - 1 {
        return Ok(());
    }
    backend.move_to_level(handle, level);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_level_is_where_a_tree_of_that_size_ends() {
        const MB: u64 = 1 << 20;
        // Flink's defaults: 256 MB at L1, x10 per level, 7 levels, not dynamic.
        assert_eq!(last_level(100 * MB, false, 256 * MB, 10.0, 7), 1);
        assert_eq!(last_level(300 * MB, false, 256 * MB, 10.0, 7), 2);
        assert_eq!(last_level(10 * 1024 * MB, false, 256 * MB, 10.0, 7), 3);
        assert_eq!(last_level(u64::MAX, false, 256 * MB, 10.0, 7), 6);
        assert_eq!(last_level(100 * MB, true, 256 * MB, 10.0, 7), 6);
    }

    #[test]
    fn results_come_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let sink = vec![(7, 0, 3), (u64::MAX, 2, -5), (u64::MAX, 3, i64::MIN)];
        let own = vec![(0, 0, 0), (1, 1, 1), (2, 7, i64::MAX)];
        write_results(dir.path(), &sink, &own).unwrap();
        let mut read = Vec::new();
        let own_read = read_results(dir.path(), |k, s, v| {
            read.push((k, s, v));
            Ok(())
        })
        .unwrap();
        assert_eq!((read, own_read), (sink, own));
        std::fs::write(dir.path().join(RESULTS), [1, 2, 3]).unwrap();
        let e = read_results(dir.path(), |_, _, _| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("damaged"), "{e}");
    }
}
