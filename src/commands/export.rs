//! `statebench export -p PROFILE --format flink|rocksdb-options|yaml [--flink-version 1.20|2.x]
//! [--slots N] [--taskmanager-process-size SIZE | --taskmanager-memory FILE] [-o FILE]`.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context as _, bail};

use super::UsageError;
use crate::cli::{ExportFormat, TaskManagerArgs};
use crate::config::tm_memory::{TmMemoryConfig, parse_memory_size};
use crate::export::{self, Cluster, Format};
use crate::util::fs::write_atomically;

pub fn run(
    profile: &str,
    format: ExportFormat,
    taskmanager: &TaskManagerArgs,
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
    let profile = super::load_profile(profile)?;
    let cluster = cluster_for(&profile, taskmanager, format == Format::Flink)?;
    let text = match format {
        Format::Flink => {
            let export = export::flink_sized(&profile, flink_version.unwrap_or_default(), &cluster);
            if let Some(misfit) = &export.misfit {
                eprintln!("warning: profile '{}' does not fit: {misfit}", profile.name);
            }
            export.text
        }
        other => export::export_for(&profile, other, flink_version.unwrap_or_default())
            .with_context(|| format!("cannot export profile '{}'", profile.name))?,
    };
    match output {
        Some(path) => {
            super::check_report_dir(Some(path))?;
            write_atomically(path, text.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("written: {}", path.display());
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

/// The TaskManager the command line describes.
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
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let pairs = flink_config_pairs(&text)
            .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
        let config =
            TmMemoryConfig::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
        cluster.config = config;
        cluster.file = Some(path.display().to_string());
    }
    Ok(cluster)
}

/// A Flink configuration file's `(key, value)` pairs: `config.yaml` in Flink 1.19+'s standard
/// YAML, nested (`taskmanager: {memory: {process: {size: 4g}}}`) or flat, or a legacy
/// `flink-conf.yaml` (`key: value` lines, which need not be valid YAML).
pub fn flink_config_pairs(text: &str) -> Result<Vec<(String, String)>, String> {
    match serde_norway::from_str::<serde_norway::Value>(text) {
        Ok(serde_norway::Value::Mapping(map)) => {
            let mut out = Vec::new();
            flatten("", &serde_norway::Value::Mapping(map), &mut out);
            Ok(out)
        }
        Ok(serde_norway::Value::Null) => Ok(Vec::new()),
        Ok(_) => Err("not a Flink configuration (a mapping of keys to values)".to_string()),
        Err(yaml) => {
            // flink-conf.yaml: `key: value` per line, `#` comments.
            let mut out = Vec::new();
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let Some((key, value)) = line.split_once(':') else {
                    return Err(format!(
                        "line {} is neither YAML ({yaml}) nor 'key: value'",
                        n + 1
                    ));
                };
                out.push((key.trim().to_string(), value.trim().to_string()));
            }
            Ok(out)
        }
    }
}

fn flatten(prefix: &str, value: &serde_norway::Value, out: &mut Vec<(String, String)>) {
    use serde_norway::Value;
    match value {
        Value::Mapping(map) => {
            for (k, v) in map {
                let key = match k {
                    Value::String(s) => s.clone(),
                    other => scalar(other),
                };
                let full = if prefix.is_empty() {
                    key
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&full, v, out);
            }
        }
        other => out.push((prefix.to_string(), scalar(other))),
    }
}

fn scalar(value: &serde_norway::Value) -> String {
    use serde_norway::Value;
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Null => String::new(),
        Value::Sequence(items) => items.iter().map(scalar).collect::<Vec<_>>().join(";"),
        other => serde_norway::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_string(),
    }
}
