//! `statebench diagnose DIR`: what a Flink job's RocksDB left behind (each instance's `LOG` and
//! `OPTIONS-*` file) read as evidence: the profile it ran with, the advisor's findings on that
//! evidence and the case study each matches. The LSM's shape feeds the advisor's own rules (as
//! a run's samples would); what only a LOG shows (why each flush happened and how big it was, a
//! filter's size per file, the stall lines) has rules of its own here, with the advisor's ids.

mod evidence_rules;
pub mod log;
pub mod metrics;
mod profile;
mod render;
pub mod rest;
mod slots;
pub mod workload;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::advisor::{self, Finding};
use crate::backend::metrics::{ColumnFamilyLsm, LevelSample};
use crate::backend::options_file::OptionsFile;
use crate::config::Profile;
use crate::engine::MetricsSnapshot;
use crate::summary::Summary;

pub use log::LogEvidence;
pub use metrics::NativeMetrics;
pub use render::{render, to_json};

/// One RocksDB instance's evidence: its directory, LOG (with its older LOG files before it) and
/// newest OPTIONS file.
#[derive(Debug, Clone)]
pub struct Instance {
    pub dir: PathBuf,
    pub logs: Vec<PathBuf>,
    pub log: LogEvidence,
    pub options_path: Option<PathBuf>,
    pub options: Option<OptionsFile>,
}

/// What `diagnose` found.
#[derive(Debug)]
pub struct Diagnosis {
    pub instances: Vec<Instance>,
    /// The profile the evidence says the job ran with, as statebench YAML, and how each value
    /// was found (or why it was assumed).
    pub profile_yaml: String,
    pub profile: Profile,
    pub profile_notes: Vec<String>,
    pub findings: Vec<Finding>,
    /// Flink's native RocksDB metrics, if the evidence holds a Prometheus scrape (`*.prom`,
    /// `metrics.txt`).
    pub metrics: Option<NativeMetrics>,
    /// The workload the evidence describes, or why none could be derived.
    pub workload: Result<workload::DerivedWorkload, String>,
    /// The running job the metrics were read from through Flink's REST API (`--rest`).
    pub rest: Option<RestJob>,
}

/// The job `--rest` read: Flink's version, its id, name and state.
#[derive(Debug, Clone)]
pub struct RestJob {
    pub url: String,
    pub flink_version: String,
    pub job_id: String,
    pub job_name: String,
    pub job_state: String,
}

/// What `diagnose` reads besides the evidence directory.
#[derive(Debug, Default, Clone, Copy)]
pub struct Sources<'a> {
    /// The job's own workload, for what a LOG does not show (windows, event time).
    pub like: Option<&'a crate::config::Workload>,
    /// Flink's REST API, for the running job's native RocksDB metrics.
    pub rest: Option<&'a str>,
    /// The job to read there (None: the only running one).
    pub job: Option<&'a str>,
}

#[derive(Debug, thiserror::Error)]
pub enum DiagnoseError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{0}: no RocksDB LOG file found (looked for LOG, LOG.old.*, flink-LOG* and a log directory's <db path>_LOG in it and in the directories below it, up to three levels down): give the directory of a RocksDB instance (Flink: the operator's db/ under state.backend.rocksdb.localdir or io.tmp.dirs), or a directory holding several"
    )]
    NoLog(PathBuf),
    #[error("{path}: {why}")]
    Profile { path: PathBuf, why: String },
    #[error(transparent)]
    Rest(#[from] rest::RestError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> DiagnoseError + '_ {
    move |source| DiagnoseError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A RocksDB info LOG, and the instance it belongs to: its prefix before `LOG`. A database's
/// own LOG and LOG.old.* have none; Flink's parity copies `flink-`; with `db_log_dir`
/// (Flink's `state.backend.rocksdb.log.dir`) every instance's LOG sits in one directory, named
/// after its database's path (`_tmp_flink-io-..._db_LOG`, `..._db_LOG.old.<micros>`).
fn log_prefix(name: &str) -> Option<&str> {
    let at = name.find("LOG")?;
    let (prefix, rest) = name.split_at(at);
    let rest = &rest[3..];
    let suffix_ok = rest.is_empty() || rest.starts_with(".old.");
    let prefix_ok = prefix.is_empty() || prefix == "flink-" || prefix.ends_with('_');
    (suffix_ok && prefix_ok).then_some(prefix)
}

fn is_options(name: &str) -> bool {
    (name.starts_with("OPTIONS-") && !name.ends_with(".dbtmp"))
        || name == "OPTIONS"
        || name.ends_with(".OPTIONS")
}

/// The instances whose LOG is in `dir`: one, or (a shared log directory) one per prefix. The
/// newest OPTIONS file belongs to the instance when the directory holds only one.
pub fn instances_in(dir: &Path) -> Result<Vec<Instance>, DiagnoseError> {
    let mut logs: std::collections::BTreeMap<String, Vec<PathBuf>> = Default::default();
    let mut options = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !entry.path().is_file() {
            continue;
        }
        if let Some(prefix) = log_prefix(&name) {
            logs.entry(prefix.to_string())
                .or_default()
                .push(entry.path());
        } else if is_options(&name) {
            options.push(entry.path());
        }
    }
    // The newest OPTIONS file: RocksDB numbers them.
    options.sort_by_key(|p| {
        p.file_name()
            .and_then(|n| n.to_string_lossy().rsplit('-').next().map(str::to_string))
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    });
    let options_path = if logs.len() == 1 { options.pop() } else { None };
    let mut out = Vec::new();
    for (_, mut files) in logs {
        // Oldest first: LOG.old.<micros> in order, the current LOG last.
        files.sort_by_key(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            (name.as_deref().is_some_and(|n| n.ends_with("LOG")), name)
        });
        let mut text = String::new();
        for log in &files {
            let bytes = std::fs::read(log).map_err(io(log))?;
            text.push_str(&String::from_utf8_lossy(&bytes));
            text.push('\n');
        }
        let options = match &options_path {
            Some(p) => Some(OptionsFile::parse(
                &std::fs::read_to_string(p).map_err(io(p))?,
            )),
            None => None,
        };
        out.push(Instance {
            dir: dir.to_path_buf(),
            logs: files,
            log: LogEvidence::parse(&text),
            options_path: options_path.clone(),
            options,
        });
    }
    Ok(out)
}

/// How far below the directory given instances are looked for: Flink keeps each in
/// `<localdir>/flink-io-<uuid>/job_<...>_op_<...>__uuid_<...>/db`.
const SEARCH_DEPTH: usize = 3;

/// The instances under `dir`: itself, or the directories below it (up to `SEARCH_DEPTH`
/// levels, not below one that holds an instance).
fn instances(dir: &Path) -> Result<(Vec<Instance>, Vec<String>), DiagnoseError> {
    let mut notes = Vec::new();
    let found = instances_below(dir, SEARCH_DEPTH, &mut notes)?;
    if found.is_empty() {
        return Err(DiagnoseError::NoLog(dir.to_path_buf()));
    }
    // The same instance twice (a copy beside the original, LOG files found twice): once.
    let mut seen = BTreeSet::new();
    let found: Vec<Instance> = found
        .into_iter()
        .filter(|i| seen.insert(slots::instance_id(i)))
        .collect();
    // Where some instances are Flink's (named by job and subtask) and others not, the others
    // are some other RocksDB's (a directory like /tmp holds many): left out, and said.
    let (flink, other): (Vec<Instance>, Vec<Instance>) = found
        .into_iter()
        .partition(|i| slots::flink_slot(i).is_some());
    let out = if flink.is_empty() || other.is_empty() {
        flink.into_iter().chain(other).collect()
    } else {
        notes.push(format!(
            "left out {} RocksDB instance(s) whose path is not a Flink operator's ({}): not this job's",
            other.len(),
            other
                .iter()
                .map(|i| i.dir.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        flink
    };
    Ok((out, notes))
}

/// Instances in `dir` or below it; a directory below that cannot be read is skipped (a note
/// says so): a directory like /tmp holds other users' private ones.
fn instances_below(
    dir: &Path,
    depth: usize,
    notes: &mut Vec<String>,
) -> Result<Vec<Instance>, DiagnoseError> {
    let here = instances_in(dir)?;
    if !here.is_empty() || depth == 0 {
        return Ok(here);
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    let mut out = Vec::new();
    for sub in subdirs {
        match instances_below(&sub, depth - 1, notes) {
            Ok(found) => out.extend(found),
            Err(DiagnoseError::Io { path, source }) => {
                notes.push(format!("skipped {}: {source}", path.display()))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// The column families a LOG shows (its flushed ones and its live files'), as a run's LSM.
pub(super) fn column_family_names(log: &LogEvidence) -> Vec<&String> {
    let mut names: Vec<&String> = log.active_levels.keys().collect();
    for f in log.files.values() {
        if !names.contains(&&f.cf) {
            names.push(&f.cf);
        }
    }
    names
}

/// The Prometheus scrapes in `dir` and the instances' directories (`*.prom`, `metrics.txt`).
fn native_metrics(
    dir: &Path,
    instances: &[Instance],
) -> Result<Option<NativeMetrics>, DiagnoseError> {
    let mut dirs: Vec<&Path> = vec![dir];
    for inst in instances {
        if !dirs.contains(&inst.dir.as_path()) {
            dirs.push(&inst.dir);
        }
    }
    let mut metrics = NativeMetrics::default();
    for d in dirs {
        let mut files: Vec<PathBuf> = std::fs::read_dir(d)
            .map_err(io(d))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.is_file()
                    && (p.extension().is_some_and(|x| x == "prom")
                        || p.file_name().is_some_and(|n| n == "metrics.txt"))
            })
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(io(&file))?;
            metrics.add(&text);
            metrics.files.push(file);
        }
    }
    Ok((!metrics.samples.is_empty()).then_some(metrics))
}

/// The LSM the LOG leaves (live files per level of each column family) and what the LOG
/// counted, as the summary and one sample of a run: what the advisor's rules read.
fn as_run(instances: &[Instance]) -> (Summary, Vec<MetricsSnapshot>) {
    let mut summary = Summary::default();
    let mut snapshot = MetricsSnapshot::default();
    let mut flushed = 0;
    for inst in instances {
        let log = &inst.log;
        summary.flushes += log.flushes.len() as u64;
        summary.compactions += log.compactions;
        summary.flush_bytes_written += log.flush_bytes;
        summary.compaction_bytes_written += log.compaction_bytes;
        flushed += log.flushes.iter().map(|f| f.data_bytes).sum::<u64>();
        snapshot.elapsed_secs = snapshot.elapsed_secs.max(log.span_secs);
        for cf in column_family_names(log) {
            let levels: Vec<LevelSample> = log
                .levels(cf)
                .into_iter()
                .map(|(level, (files, bytes))| LevelSample {
                    level,
                    files,
                    bytes,
                    ..LevelSample::default()
                })
                .collect();
            // The most levels any event showed, or the live files' (whichever is more).
            let active = (levels.len() as u32).max(log.active_levels.get(cf).copied().unwrap_or(0));
            snapshot.rocksdb.lsm.active_levels = snapshot.rocksdb.lsm.active_levels.max(active);
            snapshot.rocksdb.lsm.column_families.push(ColumnFamilyLsm {
                name: cf.clone(),
                levels,
                ..ColumnFamilyLsm::default()
            });
        }
    }
    summary.active_levels_max = snapshot.rocksdb.lsm.active_levels;
    // The memtables' data flushed stands for the bytes the job wrote (what overwrites in a
    // memtable saved is not in the LOG).
    summary.user_bytes_written = flushed;
    if flushed > 0 {
        summary.write_amplification = (summary.flush_bytes_written
            + summary.compaction_bytes_written) as f64
            / flushed as f64;
    }
    summary.processing_secs = snapshot.elapsed_secs;
    (summary, vec![snapshot])
}

/// The slot's memory as Flink divides it, for the profile read: what the findings' fixes are
/// computed for, with the write-buffer ratio it holds at (assumed where no configuration said).
fn budget_note(
    profile: &Profile,
    d: &crate::config::profile::Derived,
    from_config: bool,
) -> Option<String> {
    let h = |b: u64| crate::config::units::human_bytes(b as f64);
    d.shared.then(|| {
        format!(
            "the slot's budget: managed memory {} at memory.write-buffer-ratio {}{} gives a block cache of {} and a WriteBufferManager of {} for {} state column families, about {} each",
            h(profile.knobs.managed_memory.0),
            profile.knobs.write_buffer_ratio,
            if from_config { "" } else { " (assumed)" },
            h(d.block_cache_capacity),
            h(d.write_buffer_manager_capacity),
            d.state_column_families,
            h(d.write_buffer_budget_per_column_family)
        )
    })
}

/// Reads the evidence under `dir` (and the running job's metrics through Flink's REST API, if
/// `sources` names it) and diagnoses it.
pub fn diagnose(dir: &Path, sources: Sources) -> Result<Diagnosis, DiagnoseError> {
    let (instances, found_notes) = instances(dir)?;
    let found = profile::from_evidence(dir, &instances);
    let profile = found.profile.map_err(|why| DiagnoseError::Profile {
        path: dir.to_path_buf(),
        why,
    })?;
    let mut metrics = native_metrics(dir, &instances)?;
    let mut rest_job = None;
    if let Some(url) = sources.rest {
        let read = rest::fetch(url, sources.job)?;
        let m = metrics.get_or_insert_with(NativeMetrics::default);
        m.samples.extend(read.metrics.samples);
        rest_job = Some(RestJob {
            url: url.to_string(),
            flink_version: read.flink_version,
            job_id: read.job_id,
            job_name: read.job_name,
            job_state: read.job_state,
        });
    }
    let (mut summary, snapshots) = as_run(&instances);
    if let Some(stall) = metrics.as_ref().and_then(|m| m.sum("stall_micros")) {
        summary.stall_micros = stall as u64;
    }
    let slots::PerSlot {
        column_families: state_cfs,
        operators,
        busiest,
        note: slots_note,
    } = slots::per_slot(&instances);
    let mut profile_notes = found.notes;
    profile_notes.extend(found_notes);
    profile_notes.extend(slots_note);
    let derived = profile.derived(state_cfs);
    profile_notes.extend(budget_note(&profile, &derived, found.memory_from_config));
    let input = advisor::Input {
        profile: &profile,
        derived: &derived,
        summary: &summary,
        snapshots: &snapshots,
    };
    // The advisor's rules that read what a LOG holds (the LSM's shape); the others read
    // samples a LOG does not have and stay silent on it.
    let mut findings: Vec<Finding> = advisor::advise(&input)
        .into_iter()
        .filter(|f| LSM_RULES.contains(&f.id))
        .collect();
    findings.extend(evidence_rules::check(
        &instances,
        &profile,
        (&derived, operators),
        found.memory_from_config,
        metrics.as_ref(),
    ));
    // The LOG's own rules and the advisor's propose apart: one value per knob across them.
    advisor::resolve::resolve(&mut findings, &advisor::rule_order());
    let one_slot: Vec<Instance> = busiest.iter().map(|&i| instances[i].clone()).collect();
    let workload =
        workload::derive(&one_slot, &profile, sources.like).map_err(|e| format!("{e:#}"));
    Ok(Diagnosis {
        rest: rest_job,
        workload,
        instances,
        profile_yaml: found.yaml,
        profile,
        profile_notes,
        findings,
        metrics,
    })
}

/// A running job through Flink's REST API alone (`diagnose URL`): its native RocksDB metrics,
/// and the profile its cluster's configuration gives. Without a LOG there is no LSM, no flush
/// reason and no workload; what the metrics show is judged (`evidence_rules`).
pub fn diagnose_url(url: &str, sources: Sources) -> Result<Diagnosis, DiagnoseError> {
    let read = rest::fetch(url, sources.job)?;
    let config = rest::cluster_config(url)?;
    // The TaskManagers' own memory, where they answer; else the JobManager's configuration's.
    let (per_slot, unread) = match rest::cluster_managed_per_slot(url) {
        Ok(per_slot) => (per_slot, None),
        Err(e) => (
            None,
            Some(format!(
                "the TaskManagers' memory could not be read ({e}): the JobManager's configuration's is taken"
            )),
        ),
    };
    let mut found = profile::from_cluster_config(url, &config, per_slot);
    found.notes.extend(unread);
    let profile = found.profile.map_err(|why| DiagnoseError::Profile {
        path: PathBuf::from(url),
        why,
    })?;
    let metrics = read.metrics;
    let (state_cfs, assumed) = slots::state_column_families(&metrics);
    // The job's vertices with RocksDB metrics: its stateful operators.
    let operators = Some(
        metrics
            .samples
            .iter()
            .map(|s| s.instance.as_str())
            .collect::<BTreeSet<_>>()
            .len()
            .max(1),
    );
    found.notes.extend(assumed);
    let derived = profile.derived(state_cfs);
    let findings: Vec<Finding> =
        evidence_rules::stalls_under_a_short_budget(&profile, &derived, &metrics, operators)
            .into_iter()
            .collect();
    Ok(Diagnosis {
        rest: Some(RestJob {
            url: url.to_string(),
            flink_version: read.flink_version,
            job_id: read.job_id,
            job_name: read.job_name,
            job_state: read.job_state,
        }),
        workload: Err(
            "no LOG: the workload is derived from a RocksDB LOG's flushes (diagnose DIR)"
                .to_string(),
        ),
        instances: Vec::new(),
        profile_yaml: found.yaml,
        profile,
        profile_notes: found.notes,
        findings,
        metrics: Some(metrics),
    })
}

/// The advisor's rules a LOG feeds: they read the LSM's levels and files.
const LSM_RULES: &[&str] = &["level-sizing"];

/// The case study a finding matches (`../shared/CASE-STUDIES.md`, `statebench reproduce`).
pub fn case_study(id: &str) -> Option<(u32, &'static str)> {
    match id {
        "wbm-budget" => Some((1, "wbm-stall")),
        "filter-reads" => Some((2, "filter-reads")),
        "level-sizing" => Some((3, "level-sizing")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::log_prefix;

    #[test]
    fn a_log_file_names_its_instance() {
        assert_eq!(log_prefix("LOG"), Some(""));
        assert_eq!(log_prefix("LOG.old.1796211778841204"), Some(""));
        assert_eq!(log_prefix("flink-LOG"), Some("flink-"));
        assert_eq!(log_prefix("_tmp_io_db_LOG"), Some("_tmp_io_db_"));
        assert_eq!(log_prefix("_tmp_io_db_LOG.old.17"), Some("_tmp_io_db_"));
        for not in ["LOGO", "CATALOG", "OPTIONS-000007", "LOG.txt", "xLOG"] {
            assert_eq!(log_prefix(not), None, "{not}");
        }
    }
}
