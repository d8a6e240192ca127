//! A base for another profile from one kept for the same history. The warm-up (the job's own
//! operator over the history: most of a build's time) does not depend on RocksDB's options;
//! only the files do (their format, filters, compression, how they are cut and the level they
//! go to). So when a base of the same history is kept, its state is read back through RocksDB
//! and written again with this profile's options: a case study's "before" and "after" profiles
//! share one warm-up.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::PreloadError;
use super::base::io;
use super::base::{self, Manifest, SstOut};
use crate::backend::StateBackend;
use crate::backend::memory::SharedMemory;
use crate::config::{Profile, Workload};
use crate::pipeline::operators;

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
/// size, for the level a tree of that size ends in under `profile`; the results are linked.
pub(super) fn derive(
    (from_dir, from): (&Path, &Manifest),
    workload: &Workload,
    profile: &Profile,
    dir: &Path,
    scratch: &Path,
    key: &str,
) -> Result<Manifest, PreloadError> {
    let started = Instant::now();
    let memory = Arc::new(SharedMemory::for_profile(profile)?);
    let layout = operators::layout(&workload.operator());
    let _ = std::fs::remove_dir_all(scratch);
    let backend = StateBackend::open_shared(scratch, profile, &layout, &memory)?;
    // Read where the ingest puts the files (the last level): no refit needed to read them.
    let as_ingested = Manifest {
        level: base::NUM_LEVELS - 1,
        column_families: from
            .column_families
            .iter()
            .map(|cf| base::CfFiles {
                level: None,
                ..cf.clone()
            })
            .collect(),
        ..from.clone()
    };
    base::clone_into(from_dir, &as_ingested, &backend, &scratch.join("staging"))?;
    let k = &profile.knobs;
    let mut column_families = Vec::new();
    for (i, name) in backend.column_families().iter().enumerate() {
        let options = backend.cf_options(name).ok_or_else(|| {
            PreloadError::Preload(format!("no options for column family '{name}'"))
        })?;
        let mut out = SstOut::new(dir, i, name, options, k.target_file_size_base.0);
        backend.read_all(backend.cf(name)?, |key, value| out.put(key, value))?;
        column_families.push(out.finish()?);
    }
    drop(backend);
    let _ = std::fs::remove_dir_all(scratch);
    for name in
        std::iter::once(base::RESULTS).chain(from.heap_timer_files.iter().map(String::as_str))
    {
        std::fs::hard_link(from_dir.join(name), dir.join(name))
            .or_else(|_| std::fs::copy(from_dir.join(name), dir.join(name)).map(|_| ()))
            .map_err(io(format!("link {name} into {}", dir.display())))?;
    }
    let level = base::place(&mut column_families, k);
    let manifest = Manifest {
        key: key.to_string(),
        profile: profile.name.clone(),
        level,
        batches: 0,
        column_families,
        derived_from: Some(from.key.clone()),
        sizing_secs: 0.0,
        warm_up_secs: 0.0,
        write_secs: started.elapsed().as_secs_f64(),
        ..from.clone()
    };
    manifest.write(dir)?;
    Ok(manifest)
}
