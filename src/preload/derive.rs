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
    // A state's files (`files`, of `cf`), entry by entry as the first profile wrote them (a
    // level above the last holds deletions too), into files of this profile's options, cut at
    // `target`.
    let rewrite = |cf: &CfFiles, files: &[String], target: u64, (index, prefix): (usize, &str)| {
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
        let mut out = SstOut::new(dir, index, &cf.name, options, target)
            .with_prefix(prefix)
            .for_operator(cf.operator);
        // Read (blocks checked and decompressed) by a thread of its own, a few chunks ahead of
        // the writing (blocks built, filtered, compressed and checked): the file's two halves
        // of work side by side.
        std::thread::scope(|scope| {
            let (send, chunks) = std::sync::mpsc::sync_channel::<Chunk>(4);
            let reader = scope.spawn(move || {
                files
                    .iter()
                    .try_for_each(|file| read_chunks(&from_dir.join(file), &send))
            });
            for chunk in chunks {
                chunk.entries(|key, value| match value {
                    Some(value) => out.put(key, value),
                    None => out.delete(key),
                })?;
            }
            // The channel closed: the reader is done, or failed (its error said here).
            reader.join().unwrap_or_else(|_| {
                Err(PreloadError::Preload(
                    "a thread reading files panicked".into(),
                ))
            })
        })?;
        Ok::<_, PreloadError>(out.finish()?)
    };
    // The last level's files, then the levels above (`levels: full`, each kept as it was cut).
    let groups: Vec<(&CfFiles, usize, String)> = from
        .column_families
        .iter()
        .enumerate()
        .map(|(index, cf)| (cf, index, String::new()))
        .chain(from.upper.iter().enumerate().map(|(j, cf)| {
            let index = from
                .column_families
                .iter()
                .position(|c| c.name == cf.name && c.operator == cf.operator)
                .unwrap_or(0);
            (cf, index, format!("U{j}-"))
        }))
        .collect();
    // A state's files are written again one after the other, cut at this profile's target; or,
    // where the first profile cut them at that same target, each by itself into one file, the
    // files side by side, one per core (a state's files hold disjoint key ranges in order, so
    // the new files stay in key order, each about its old one's entries: a fresh build cuts at
    // the target in this profile's bytes, a few entries earlier or later).
    let mut tasks: Vec<(usize, std::ops::Range<usize>, u64)> = Vec::new();
    for (g, (cf, ..)) in groups.iter().enumerate() {
        // An L0 file is one flush, whatever its size: one file per layer.
        let target = match cf.level {
            Some(0) => u64::MAX,
            _ => k.target_file_size_base.0,
        };
        let sizes: Vec<u64> = cf
            .files
            .iter()
            .map(|f| std::fs::metadata(from_dir.join(f)).map_or(0, |m| m.len()))
            .collect();
        let cut_alike = sizes.len() > 1
            && sizes[..sizes.len() - 1]
                .iter()
                .all(|s| (*s as f64) >= target as f64 * 0.9 && (*s as f64) < target as f64 * 1.5);
        if cut_alike {
            tasks.extend((0..cf.files.len()).map(|f| (g, f..f + 1, u64::MAX)));
        } else {
            tasks.push((g, 0..cf.files.len(), target));
        }
    }
    let failed = std::sync::atomic::AtomicBool::new(false);
    let done = super::on_every_core(
        tasks.len(),
        (
            &|| failed.load(std::sync::atomic::Ordering::SeqCst),
            &|| failed.store(true, std::sync::atomic::Ordering::SeqCst),
        ),
        &|t| {
            let (g, files, target) = &tasks[t];
            let (cf, index, prefix) = &groups[*g];
            let prefix = format!("{prefix}f{}-", files.start);
            rewrite(cf, &cf.files[files.clone()], *target, (*index, &prefix))
        },
        |_| true,
    )?;
    // Each state's (and level's) new files, in its old files' order.
    let mut rewritten: Vec<CfFiles> = groups
        .iter()
        .map(|(cf, ..)| CfFiles {
            files: Vec::new(),
            bytes: 0,
            entries: 0,
            ..(*cf).clone()
        })
        .collect();
    for (t, part) in done.into_iter().enumerate() {
        let into = &mut rewritten[tasks[t].0];
        into.files.extend(part.files);
        into.bytes += part.bytes;
        into.entries += part.entries;
    }
    let upper = rewritten.split_off(from.column_families.len());
    let mut column_families = rewritten;
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

/// Entries of an SST file read ahead of their writing: each as its key's length (u32), its
/// value's length (u32, `u32::MAX` for a deletion), its key and its value.
#[derive(Default)]
struct Chunk(Vec<u8>);

/// Bytes of entries a [`Chunk`] holds (about).
const CHUNK: usize = 1 << 20;

impl Chunk {
    fn push(&mut self, key: &[u8], value: Option<&[u8]>) {
        let len = |n: usize| u32::try_from(n).unwrap_or(u32::MAX - 1).to_le_bytes();
        self.0.extend_from_slice(&len(key.len()));
        self.0
            .extend_from_slice(&value.map_or(u32::MAX.to_le_bytes(), |v| len(v.len())));
        self.0.extend_from_slice(key);
        self.0.extend_from_slice(value.unwrap_or_default());
    }

    /// Each entry in order, as `push` took it.
    fn entries(
        &self,
        mut f: impl FnMut(&[u8], Option<&[u8]>) -> Result<(), crate::backend::BackendError>,
    ) -> Result<(), PreloadError> {
        fn take<'c>(rest: &mut &'c [u8], n: usize) -> Result<&'c [u8], PreloadError> {
            let (head, tail) = rest
                .split_at_checked(n)
                .ok_or_else(|| PreloadError::Preload("a chunk of entries ends short".into()))?;
            *rest = tail;
            Ok(head)
        }
        let len = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let mut rest = self.0.as_slice();
        while !rest.is_empty() {
            let key = len(take(&mut rest, 4)?) as usize;
            let value = len(take(&mut rest, 4)?);
            let key = take(&mut rest, key)?;
            let value = match value {
                u32::MAX => None,
                n => Some(take(&mut rest, n as usize)?),
            };
            f(key, value)?;
        }
        Ok(())
    }
}

/// Reads the SST file at `path` into chunks of entries sent to `send`, until the file ends or
/// the receiver is gone (the writing failed).
fn read_chunks(path: &Path, send: &std::sync::mpsc::SyncSender<Chunk>) -> Result<(), PreloadError> {
    let mut chunk = Chunk::default();
    let mut gone = false;
    read_sst(path, &mut |key, value| {
        chunk.push(key, value);
        if chunk.0.len() >= CHUNK {
            let full = std::mem::replace(&mut chunk, Chunk(Vec::with_capacity(CHUNK + 4096)));
            if send.send(full).is_err() {
                gone = true;
                return Err(crate::backend::BackendError::Setup(
                    "the writing stopped".into(),
                ));
            }
        }
        Ok(())
    })
    .or_else(|e| if gone { Ok(()) } else { Err(e) })?;
    // A closed receiver here is a writing that failed: its own error is reported.
    let _ = send.send(chunk);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_gives_back_its_entries_deletions_and_empty_values_included() {
        let entries: Vec<(Vec<u8>, Option<Vec<u8>>)> = vec![
            (b"a".to_vec(), Some(b"1".to_vec())),
            (b"b".to_vec(), None),
            (b"c".to_vec(), Some(Vec::new())),
            (Vec::new(), Some(vec![7; 300])),
        ];
        let mut chunk = Chunk::default();
        for (k, v) in &entries {
            chunk.push(k, v.as_deref());
        }
        let mut back = Vec::new();
        chunk
            .entries(|k, v| {
                back.push((k.to_vec(), v.map(<[u8]>::to_vec)));
                Ok(())
            })
            .unwrap();
        assert_eq!(back, entries);
        chunk.0.pop();
        let e = chunk.entries(|_, _| Ok(())).unwrap_err().to_string();
        assert!(e.contains("ends short"), "{e}");
    }
}
