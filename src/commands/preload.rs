//! `statebench preload list|rm|gc`: the kept bases, and removing them.

use std::path::Path;

use anyhow::Context;

use crate::UsageError;
use crate::cli::preload::PreloadDirArgs;
use crate::config::units::human_bytes;
use crate::preload::Manifest;

/// One folder of the preload directory.
enum Entry {
    /// A complete base.
    Base {
        name: String,
        manifest: Box<Manifest>,
    },
    /// A build under way (its process alive) or left behind (gone).
    Building { name: String, pid: u32, alive: bool },
    /// A folder without a manifest: a build that died before it was complete.
    Partial { name: String },
}

fn entries(dir: &Path) -> anyhow::Result<Vec<(Entry, u64)>> {
    let mut out = Vec::new();
    let read = std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    for e in read.flatten() {
        let path = e.path();
        if !path.is_dir() {
            continue;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        let bytes = disk_bytes(&path);
        // A build's folder, or the preload bench's (`<BENCH_FOLDER><pid>-<random>`).
        let bench = name
            .strip_prefix(crate::preload::BENCH_FOLDER)
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok());
        let entry = if let Some(pid) = bench.or_else(|| {
            name.rsplit_once(".building-")
                .filter(|(key, _)| is_key(key.trim_start_matches('.')))
                .and_then(|(_, pid)| pid.parse::<u32>().ok())
        }) {
            Entry::Building {
                alive: Path::new(&format!("/proc/{pid}")).exists(),
                name,
                pid,
            }
        } else if let Some(manifest) = Manifest::read(&path) {
            Entry::Base {
                name,
                manifest: Box::new(manifest),
            }
        } else if is_key(&name) {
            Entry::Partial { name }
        } else {
            // Not statebench's: never listed as a base, never removed.
            continue;
        };
        out.push((entry, bytes));
    }
    out.sort_by(|a, b| name_of(&a.0).cmp(name_of(&b.0)));
    Ok(out)
}

/// A base's key as a build names its folder: `<workload>-<32 hex digits>`.
fn is_key(name: &str) -> bool {
    name.rsplit_once('-').is_some_and(|(workload, hash)| {
        !workload.is_empty() && hash.len() == 32 && hash.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

fn name_of(e: &Entry) -> &str {
    match e {
        Entry::Base { name, .. } | Entry::Building { name, .. } | Entry::Partial { name } => name,
    }
}

/// Bytes of the files under `dir` (a clone's hard links count where they are).
pub(crate) fn disk_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |read| {
        read.flatten()
            .map(|e| match e.metadata() {
                Ok(m) if m.is_dir() => disk_bytes(&e.path()),
                Ok(m) => m.len(),
                Err(_) => 0,
            })
            .sum()
    })
}

pub fn list(args: &PreloadDirArgs) -> anyhow::Result<()> {
    let dir = super::preload_dir(args.preload_dir.as_deref())?;
    let all = entries(&dir)?;
    println!("bases in {}:", dir.display());
    if all.is_empty() {
        println!("  none");
    }
    let mut total = 0;
    for (entry, bytes) in &all {
        total += bytes;
        match entry {
            Entry::Base { name, manifest: m } => println!(
                "  {name}\n      {} on '{}', {} records, {} of SST files, {} on disk{}",
                m.workload,
                m.profile,
                m.records,
                human_bytes(m.file_bytes() as f64),
                human_bytes(*bytes as f64),
                m.derived_from
                    .as_ref()
                    .map_or(String::new(), |from| format!(", written again from {from}")),
            ),
            Entry::Building { name, pid, alive } => println!(
                "  {name}\n      {} ({} on disk)",
                if *alive {
                    format!("being built by process {pid}")
                } else {
                    format!(
                        "left by process {pid}, which is gone: `statebench preload gc` removes it"
                    )
                },
                human_bytes(*bytes as f64)
            ),
            Entry::Partial { name } => println!(
                "  {name}\n      incomplete (no manifest; {} on disk): `statebench preload gc` removes it",
                human_bytes(*bytes as f64)
            ),
        }
    }
    println!("{} in all", human_bytes(total as f64));
    Ok(())
}

pub fn rm(keys: &[String], args: &PreloadDirArgs) -> anyhow::Result<()> {
    let dir = super::preload_dir(args.preload_dir.as_deref())?;
    let all = entries(&dir)?;
    // Every key checked before anything is removed.
    for key in keys {
        let known = all
            .iter()
            .any(|(e, _)| matches!(e, Entry::Base { name, .. } if name == key));
        if !known {
            let bases: Vec<&str> = all
                .iter()
                .filter(|(e, _)| matches!(e, Entry::Base { .. }))
                .map(|(e, _)| name_of(e))
                .collect();
            return Err(UsageError(format!(
                "no base '{key}' in {} (bases: {})",
                dir.display(),
                if bases.is_empty() {
                    "none".to_string()
                } else {
                    bases.join(", ")
                }
            ))
            .into());
        }
    }
    for key in keys {
        let path = dir.join(key);
        let bytes = disk_bytes(&path);
        std::fs::remove_dir_all(&path)
            .with_context(|| format!("cannot remove {}", path.display()))?;
        println!("removed {key} ({})", human_bytes(bytes as f64));
    }
    Ok(())
}

pub fn gc(args: &PreloadDirArgs) -> anyhow::Result<()> {
    let dir = super::preload_dir(args.preload_dir.as_deref())?;
    let mut freed = 0;
    for (entry, bytes) in entries(&dir)? {
        let name = match &entry {
            Entry::Building {
                name, alive: false, ..
            }
            | Entry::Partial { name } => name,
            Entry::Building { .. } | Entry::Base { .. } => continue,
        };
        let path = dir.join(name);
        std::fs::remove_dir_all(&path)
            .with_context(|| format!("cannot remove {}", path.display()))?;
        println!("removed {name} ({})", human_bytes(bytes as f64));
        freed += bytes;
    }
    println!("{} freed", human_bytes(freed as f64));
    Ok(())
}
