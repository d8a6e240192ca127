//! `statebench profiles list|show`: the shipped profiles, one profile's knobs, derived memory
//! and Flink configuration.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use super::UsageError;
use crate::cli::TaskManagerArgs;
use crate::config::{self, Profile};

pub fn list(dir: Option<&Path>) -> anyhow::Result<()> {
    // An explicit --dir must exist; the default folder is listed only where there is one.
    let dir = match dir {
        Some(d) if !d.is_dir() => bail!(UsageError(format!(
            "--dir '{}' is not a folder (give a folder of profile YAML files)",
            d.display()
        ))),
        Some(d) => d,
        None => Path::new("profiles"),
    };
    println!("built-in:");
    for (name, _) in config::profile::BUILTIN {
        let p = Profile::load(name)?;
        println!("  {name:<26} {}", p.description.as_deref().unwrap_or(""));
    }
    if dir.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("cannot list {}", dir.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        files.sort();
        if !files.is_empty() {
            println!("in {}:", dir.display());
        }
        for path in files {
            match Profile::load(&path.to_string_lossy()) {
                Ok(p) => println!(
                    "  {:<26} {}",
                    path.display(),
                    p.description.as_deref().unwrap_or("")
                ),
                Err(e) => println!("  {:<26} INVALID: {e}", path.display()),
            }
        }
    }
    Ok(())
}

pub fn show(name: &str, derived: bool, taskmanager: &TaskManagerArgs) -> anyhow::Result<()> {
    let sized = taskmanager.slots.is_some()
        || taskmanager.taskmanager_process_size.is_some()
        || taskmanager.taskmanager_memory.is_some();
    if sized && !derived {
        bail!(UsageError(
            "--slots, --taskmanager-process-size and --taskmanager-memory apply with --derived"
                .to_string()
        ));
    }
    let cluster = super::export::cluster(taskmanager)?;
    let profile = Profile::load(name)?;
    println!("# {} ({})", profile.name, profile.source);
    if !profile.extends_chain.is_empty() {
        println!("# extends: {}", profile.extends_chain.join(" -> "));
    }
    if let Some(d) = &profile.description {
        println!("# {d}");
    }
    print_flink_import(&profile);
    for (key, value) in profile.knobs.values() {
        let info = config::profile::KNOBS.iter().find(|k| k.key == key);
        let flink = match info.and_then(|k| k.flink_key) {
            // Flink's default is managed memory: fixed-per-slot only when the profile asks.
            Some(_)
                if key == "memory.managed-size"
                    && profile.knobs.memory_mode == config::profile::MemoryMode::Managed =>
            {
                "  # a slot's managed memory: taskmanager.memory.managed.size / taskmanager.numberOfTaskSlots"
                    .to_string()
            }
            Some(_)
                if key == "memory.managed-size"
                    && profile.knobs.memory_mode == config::profile::MemoryMode::Unmanaged =>
            {
                "  # not applied: memory.mode unmanaged gives RocksDB no budget".to_string()
            }
            Some(f) => format!("  # {f}"),
            // Not a RocksDB option: which Flink's RocksDB the run imitates.
            None if key == "target" => "  # statebench only: whose RocksDB to imitate".to_string(),
            None if key == "memory.mode" => {
                "  # taskmanager.memory.managed.size per slot, state.backend.rocksdb.memory.fixed-per-slot, or (unmanaged) state.backend.rocksdb.memory.managed: false"
                    .to_string()
            }
            None if info.is_some_and(|i| i.is_job_setting()) => {
                "  # the job's sink or checkpoint storage, not Flink configuration".to_string()
            }
            None => "  # no Flink key: set it in a RocksDBOptionsFactory".to_string(),
        };
        println!("{key}: {value}{flink}");
    }
    if derived {
        println!(
            "\nderived (Flink's managed-memory math, M = {}, r = {}):",
            profile.knobs.managed_memory, profile.knobs.write_buffer_ratio
        );
        print!(
            "{}",
            profile.derived(crate::model::layout::frequency_data_column_families())
        );
        if sized {
            // The export's TaskManager report, without the export.
            let export = crate::export::flink_sized(&profile, Default::default(), &cluster);
            let report: Vec<&str> = export
                .text
                .lines()
                .skip_while(|l| !l.starts_with("# TaskManager memory"))
                .collect();
            if report.is_empty() {
                println!(
                    "\nTaskManager: {} slot(s), no size given (--taskmanager-process-size or --taskmanager-memory)",
                    cluster.slots()
                );
            }
            for line in report {
                let line = line.trim_start_matches("# ").trim_start_matches('#');
                println!(
                    "{}",
                    line.replace("with the lines above", "with the profile's memory")
                );
            }
            if let Some(misfit) = &export.misfit {
                eprintln!("warning: profile '{}' does not fit: {misfit}", profile.name);
            }
        }
    }
    Ok(())
}

/// The effective profile as Flink configuration lines (`profiles show --flink`).
pub fn show_flink(name: &str) -> anyhow::Result<()> {
    let profile = Profile::load(name)?;
    println!(
        "# profile '{}' ({}) as Flink 1.20 configuration",
        profile.name, profile.source
    );
    print_flink_import(&profile);
    println!(
        "# {}*: knobs Flink has no key for, to be set in a RocksDBOptionsFactory",
        config::flink::FACTORY_PREFIX
    );
    for ((key, value), info) in config::flink::flink_config(&profile)
        .into_iter()
        .zip(config::profile::KNOBS)
    {
        if info.is_job_setting() {
            // The job's sink and checkpoint storage: not Flink configuration.
            println!(
                "# {}: {value}  (the job's, not Flink configuration)",
                info.key
            );
        } else if info.knob == config::profile::Knob::CheckpointInterval
            && profile.knobs.checkpoint_interval.0 == 0
        {
            println!("# {key}: unset (checkpointing off)");
        } else {
            println!("{key}: {value}");
        }
    }
    Ok(())
}

/// What reading a Flink configuration found, as comments above the knobs.
fn print_flink_import(profile: &Profile) {
    if let Some(import) = &profile.flink_import {
        for line in import.lines(&profile.source) {
            println!("# {line}");
        }
    }
}
