//! A base for another profile from one kept for the same history. The warm-up (the job's own
//! operator over the history: most of a build's time) does not depend on RocksDB's options;
//! only the files do (their format, filters, compression, how they are cut and the level they
//! go to). So when a base of the same history is kept, its files are read back entry by entry
//! (RocksDB's own `SstFileReader`, deletions included) and written again with this profile's
//! options: a case study's "before" and "after" profiles share one warm-up. A `levels: full`
//! base keeps its levels, each written again as it was cut (only a profile of the same level
//! sizing shares its history: `build::history_key`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::PreloadError;
use super::base::io;
use super::base::{self, CfFiles, Manifest, SstOut};
use crate::backend::memory::SharedMemory;
use crate::backend::read_sst;
use crate::config::{Profile, Workload};

/// A complete base under `dir` whose history is `history`, if one is kept.
pub(super) fn find(dir: &Path, history: &str) -> Option<(PathBuf, Manifest)> {
    let entries = std::fs::read_dir(dir).ok()?;
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        // Folders being built start with a dot and have no manifest yet.
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .filter_map(|p| Manifest::read(&p).map(|m| (p, m)))
        .find(|(_, m)| m.format == base::FORMAT && m.history == history)
}

/// Writes `from`'s state again into `dir` with `profile`'s options, cut at its target file
/// size, for the level a tree of that size ends in under `profile` (a full tree: each level
/// where it was); the results and HEAP timers are linked.
pub(super) fn derive(
    (from_dir, from): (&Path, &Manifest),
    workload: &Workload,
    profile: &Profile,
    dir: &Path,
    scratch: &Path,
    key: &str,
) -> Result<Manifest, PreloadError> {
    let started = Instant::now();
    // Databases only for each state's options under this profile.
    let memory = Arc::new(SharedMemory::for_profile(profile)?);
    let backends = super::open_backends(scratch, profile, workload, &memory)?;
    let k = &profile.knobs;
    // Each state's files, entry by entry as the first profile wrote them (a level above the
    // last holds deletions too), into files of this profile's options, cut at its target size.
    let rewrite = |cf: &CfFiles, index: usize, prefix: &str| -> Result<CfFiles, PreloadError> {
        let backend = backends.get(cf.operator).ok_or_else(|| {
            PreloadError::Preload(format!(
                "{} holds files of operator {} ('{}'); the job has {} operator(s)",
                from_dir.display(),
                cf.operator,
                cf.name,
                backends.len()
            ))
        })?;
        let options = backend.cf_options(&cf.name).ok_or_else(|| {
            PreloadError::Preload(format!("no options for column family '{}'", cf.name))
        })?;
        // An L0 file is one flush, whatever its size: one file per layer.
        let target = match cf.level {
            Some(0) => u64::MAX,
            _ => k.target_file_size_base.0,
        };
        let mut out = SstOut::new(dir, index, &cf.name, options, target)
            .with_prefix(prefix)
            .for_operator(cf.operator);
        for file in &cf.files {
            read_sst(&from_dir.join(file), &mut |key, value| match value {
                Some(value) => out.put(key, value),
                None => out.delete(key),
            })?;
        }
        Ok(CfFiles {
            level: cf.level,
            ..out.finish()?
        })
    };
    let mut column_families = Vec::new();
    for (index, cf) in from.column_families.iter().enumerate() {
        column_families.push(rewrite(cf, index, "")?);
    }
    // The levels above the last (`levels: full`) stay as they were cut, each its own files.
    let mut upper = Vec::new();
    for (j, cf) in from.upper.iter().enumerate() {
        let index = from
            .column_families
            .iter()
            .position(|c| c.name == cf.name && c.operator == cf.operator)
            .unwrap_or(0);
        upper.push(rewrite(cf, index, &format!("U{j}-"))?);
    }
    drop(backends);
    let _ = std::fs::remove_dir_all(scratch);
    let heap_timer_files = from
        .heap_timer_files
        .iter()
        .chain(from.downstream.iter().flat_map(|d| &d.heap_timer_files));
    for name in std::iter::once(base::RESULTS).chain(heap_timer_files.map(String::as_str)) {
        std::fs::hard_link(from_dir.join(name), dir.join(name))
            .or_else(|_| std::fs::copy(from_dir.join(name), dir.join(name)).map(|_| ()))
            .map_err(io(format!("link {name} into {}", dir.display())))?;
    }
    // A full tree's levels are its own (the same level sizing: `build::history_key`); a base
    // all in its last level goes where a tree of its files' size under this profile ends.
    let level = if upper.is_empty() {
        base::place(&mut column_families, k)
    } else {
        from.level
    };
    let manifest = Manifest {
        key: key.to_string(),
        profile: profile.name.clone(),
        level,
        batches: 0,
        column_families,
        upper,
        derived_from: Some(from.key.clone()),
        sizing_secs: 0.0,
        warm_up_secs: 0.0,
        write_secs: started.elapsed().as_secs_f64(),
        ..from.clone()
    };
    manifest.write(dir)?;
    Ok(manifest)
}
