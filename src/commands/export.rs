//! `statebench export -p PROFILE --format flink|rocksdb-options|yaml [--flink-version 1.20|2.x]
//! [--slots N] [--taskmanager-process-size SIZE | --taskmanager-memory FILE] [-o FILE]`.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context as _, bail};

use super::UsageError;
use crate::cli::{ExportFormat, TaskManagerArgs};
use crate::config::Origin;
use crate::config::flink_in::{self, FlinkFile};
use crate::config::tm_memory::{TmMemoryConfig, parse_memory_size};
use crate::export::{self, Cluster, Format};
use crate::util::fs::write_atomically;

pub fn run(
    profile: &str,
    format: ExportFormat,
    taskmanager: &TaskManagerArgs,
    into: Option<&Path>,
    output: Option<&Path>,
) -> anyhow::Result<()> {
    let ExportFormat {
        format,
        flink_version,
    } = format;
    if flink_version.is_some() && format != Format::Flink {
        // Only the Flink configuration depends on the release: say so rather than ignore it.
        bail!(UsageError(
            "--flink-version applies to --format flink only".to_string()
        ));
    }
    let sized = taskmanager.slots.is_some()
        || taskmanager.taskmanager_process_size.is_some()
        || taskmanager.taskmanager_memory.is_some();
    if sized && format != Format::Flink {
        bail!(UsageError(
            "--slots, --taskmanager-process-size and --taskmanager-memory apply to --format flink only"
                .to_string()
        ));
    }
    if into.is_some() && format != Format::Flink {
        bail!(UsageError(
            "--into applies to --format flink only".to_string()
        ));
    }
    let profile = super::load_profile(profile)?;
    let cluster = match into {
        // The merged file's TaskManager: its own sizes where the profile sets none.
        Some(path) => {
            let cluster = cluster(&TaskManagerArgs {
                taskmanager_memory: Some(path.to_path_buf()),
                ..taskmanager.clone()
            })?;
            eprintln!(
                "export: sized for the TaskManager of {} ({} slot(s)), the file it merges into",
                path.display(),
                cluster.slots()
            );
            cluster
        }
        None => cluster_for(&profile, taskmanager, format == Format::Flink)?,
    };
    let text = match format {
        Format::Flink => {
            let export = export::flink_sized(&profile, flink_version.unwrap_or_default(), &cluster);
            if let Some(misfit) = &export.misfit {
                eprintln!("warning: profile '{}' does not fit: {misfit}", profile.name);
            }
            match into {
                Some(path) => merged(path, &export)?,
                None => export.text,
            }
        }
        other => export::export_for(&profile, other, flink_version.unwrap_or_default())
            .with_context(|| format!("cannot export profile '{}'", profile.name))?,
    };
    match output {
        Some(path) => {
            super::check_report_dir(Some(path))?;
            write_atomically(path, text.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            if into.is_some_and(|i| same_file(i, path)) {
                eprintln!("written: {} (merged in place)", path.display());
            } else {
                eprintln!("written: {}", path.display());
            }
        }
        None => {
            // A write that fails (a full disk behind `>`) is an error, not a truncated config
            // with status 0; a reader that closed the pipe ends the command quietly (main).
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .context("cannot write the export to standard output")?;
        }
    }
    Ok(())
}

/// `export` merged into the Flink configuration at `path`, what it changed said on stderr; the
/// TaskManager derivation of the merged file checked against the export's.
fn merged(path: &Path, export: &export::FlinkExport) -> anyhow::Result<String> {
    let input =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let origin = Origin::File(path.to_path_buf());
    // A file the reader refuses is the user's to fix (exit 2); a merge that does not read back
    // is statebench's fault.
    flink_in::read_keys(&origin, &input).map_err(|e| UsageError(e.to_string()))?;
    let fragment = export.text.replacen(&export.note, "", 1);
    let merged = export::merge_into(&origin, &input, &fragment, &export.keys)
        .with_context(|| format!("cannot merge the export into {}", path.display()))?;
    if let Some(expected) = &export.taskmanager {
        let derived = memory_config(path, &merged.file)?.derive().ok();
        if derived.as_ref() != Some(expected) {
            bail!(
                "the merged {}'s TaskManager memory ({derived:?}) differs from the export's ({expected:?}); nothing written",
                path.display()
            );
        }
    }
    let changed = merged.changes.iter().filter(|c| c.changed()).count();
    let added = merged.changes.iter().filter(|c| c.old.is_none()).count();
    let kept = match &merged.rewritten {
        None => "its comments and every other line kept".to_string(),
        Some(why) => format!("rewritten from its parsed YAML, its comments lost ({why})"),
    };
    eprintln!(
        "export --into {}: {} key(s) of the export, {changed} changed, {added} added, {} already set so; {kept}",
        path.display(),
        merged.changes.len(),
        merged.changes.len() - changed - added,
    );
    for change in &merged.changes {
        eprintln!("  {}", change.describe());
    }
    Ok(merged.text)
}

/// The cluster an export is for: the command line's, else the TaskManager of the Flink
/// configuration the profile is or extends (its slots and sizes: a per-slot size exported for
/// one slot would shrink a 4-slot TaskManager's managed memory 4 times), said on stderr.
fn cluster_for(
    profile: &crate::config::Profile,
    args: &TaskManagerArgs,
    flink: bool,
) -> anyhow::Result<Cluster> {
    match (&profile.flink_config, &args.taskmanager_memory) {
        (Some(path), None) if flink => {
            let mut cluster = cluster(&TaskManagerArgs {
                taskmanager_memory: Some(path.clone()),
                ..args.clone()
            })?;
            eprintln!(
                "export: sized for the TaskManager of {} ({} slot(s)), the Flink configuration profile '{}' comes from; --taskmanager-memory FILE or --slots N for another",
                path.display(),
                cluster.slots(),
                profile.name
            );
            cluster.file = Some(format!("{} (the profile's own)", path.display()));
            Ok(cluster)
        }
        _ => cluster(args),
    }
}

pub(crate) fn cluster(args: &TaskManagerArgs) -> anyhow::Result<Cluster> {
    let mut cluster = Cluster {
        slots: args.slots,
        ..Cluster::default()
    };
    if let Some(size) = &args.taskmanager_process_size {
        cluster.process_size = Some(parse_memory_size(size).map_err(|expects| {
            UsageError(format!("--taskmanager-process-size '{size}': {expects}"))
        })?);
    }
    if let Some(path) = &args.taskmanager_memory {
        let file = read_flink_file(path)?;
        cluster.config = memory_config(path, &file)?;
        cluster.file = Some(path.display().to_string());
        cluster.set = file.keys;
    }
    Ok(cluster)
}

/// A Flink configuration file (config.yaml, flat or nested, or a legacy flink-conf.yaml) read
/// by the one reader of Flink configurations: errors name the file and the line.
fn read_flink_file(path: &Path) -> anyhow::Result<FlinkFile> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    flink_in::read_keys(&Origin::File(path.to_path_buf()), &text)
        .map_err(|e| UsageError(e.to_string()).into())
}

/// The TaskManager memory keys of `file` (read from `path`).
fn memory_config(path: &Path, file: &FlinkFile) -> anyhow::Result<TmMemoryConfig> {
    TmMemoryConfig::from_pairs(file.keys.iter().map(|k| (k.key.as_str(), k.value.as_str())))
        .map_err(|e| UsageError(format!("{}: {e}", path.display())).into())
}

/// Whether two paths name one file (the merged input rewritten by `-o`).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
