//! `run --preload`: start a run from the steady state a job holds after a long history, built
//! in minutes rather than replayed for hours.
//!
//! The history is the log's first records (how many: `events`, `span` of event time, or until
//! the state reaches `size`). The job's own operator reads them with its state in memory
//! (`warmup`), a range of key groups at a time so that memory stays bounded; the state is
//! written out key-sorted as SST files with each state's own options, into the level an LSM
//! tree of that size keeps its data in (`base`). That base is kept under the preload folder,
//! named by everything that decides its bytes; each run clones it (hard links) into its fresh
//! database, puts the history's results into the serving store, feeds the same history to the
//! oracle, and reads on from the record after it. So the live part meets the state, the
//! timers and the results a job that had read the whole log would have, and its results are
//! checked against the truth of the whole log.

pub mod base;
mod build;
mod derive;
mod history;
mod layers;
mod warm;
mod warmup;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::backend::StateBackend;
use crate::config::workload::PreloadSpec;
use crate::config::{Profile, Workload};
use crate::durability::delivery::Delivery;
pub use crate::model::summary::PreloadReport;
use crate::pipeline::operators;
use crate::pipeline::oracle::thread::OracleThread;
use crate::pipeline::source::{Log, ReadPlan};
pub use base::Manifest;

/// What a preload failed with. The engine reports each as it reports its own errors of the
/// same kind (`PreloadError`'s `Preload`, `Pipeline`, `Backend`, `Source`, `Spawn`).
#[derive(Debug, thiserror::Error)]
pub enum PreloadError {
    #[error(transparent)]
    Pipeline(#[from] crate::pipeline::PipelineError),
    #[error(transparent)]
    Backend(#[from] crate::backend::BackendError),
    #[error("cannot start the engine thread: {0}")]
    Spawn(std::io::Error),
    #[error("cannot start reading the log: {0}")]
    Source(String),
    #[error(transparent)]
    WorkerGone(#[from] crate::util::worker::WorkerGone),
    #[error("preload: {0}")]
    Preload(String),
    /// Ctrl-C (or SIGTERM) during a build: the build stopped and its folder is removed.
    #[error("preload: the build was stopped (Ctrl-C); its partial files are removed")]
    Cancelled,
}

/// A stop asked for while a base is built ([`cancel`]); the build's loops look at it.
static CANCEL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// A base is being built now.
static BUILDING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Stops a build under way within a second or so (the signal handler's call); true when one was.
pub fn cancel() -> bool {
    CANCEL.store(true, std::sync::atomic::Ordering::SeqCst);
    BUILDING.load(std::sync::atomic::Ordering::SeqCst)
}

/// Err(Cancelled) once [`cancel`] was called: the build's loops call it every few thousand
/// records or entries.
pub(crate) fn check_cancel() -> Result<(), PreloadError> {
    if CANCEL.load(std::sync::atomic::Ordering::Relaxed) {
        Err(PreloadError::Cancelled)
    } else {
        Ok(())
    }
}

/// The start of the temporary folder `bench --suite preload` builds in, inside the preload
/// folder: `<this><pid>-<random>`.
pub const BENCH_FOLDER: &str = ".statebench-bench-preload-";

/// Records or entries between two looks at [`check_cancel`].
pub(crate) const CANCEL_EVERY: u64 = 4096;

/// Key groups a sizing pass holds (of 256) at most: its state times 256/8 estimates the whole.
const SIZING_GROUPS: u16 = 8;

/// Bytes of memory a sizing pass holds per byte of SST its key groups' state will be written
/// as: the keys and values (about 3x their SST for 36-byte ids), the in-memory store's records
/// and table, and the operator's results (measured: 1.08 GB of peak RSS sizing dedup-ids-10g's
/// 2 GiB in 8 key groups, 67 MB of their SST).
const SIZING_MEMORY_PER_SST_BYTE: u64 = 16;

/// Key groups the sizing pass of `spec` holds: 8, or fewer where 8 of a `size=` state would
/// not fit the build's memory (one, 1/256 of the keys, at 10 GiB with the default 1 GiB).
/// A history given by `events=` or `span=` is sized in 8: its size is what the pass finds out.
fn sizing_groups(spec: &PreloadSpec, memory: u64) -> u16 {
    let Some(size) = spec.size else {
        return SIZING_GROUPS;
    };
    let per_group = (size.0 / u64::from(crate::backend::keys::MAX_PARALLELISM))
        .saturating_mul(SIZING_MEMORY_PER_SST_BYTE)
        .max(1);
    (memory / per_group).clamp(1, u64::from(SIZING_GROUPS)) as u16
}

/// One database per operator of `workload`'s job (chain order) under `scratch` (emptied
/// first), for the column families' handles and options: a build's state stays in memory.
fn open_backends(
    scratch: &Path,
    profile: &Profile,
    workload: &Workload,
    memory: &Arc<crate::backend::memory::SharedMemory>,
) -> Result<Vec<StateBackend>, PreloadError> {
    let _ = std::fs::remove_dir_all(scratch);
    let mut backends = Vec::new();
    for (i, spec) in workload.operators().iter().enumerate() {
        let path = match i {
            0 => scratch.join("db"),
            _ => scratch.join(format!("db-op{i}")),
        };
        let layout = operators::layout(spec);
        backends.push(StateBackend::open_shared(&path, profile, &layout, memory)?);
    }
    Ok(backends)
}

/// Runs `task(i)` for every `i` in `0..tasks` on a thread per core (as many as there are
/// tasks at most), each taking the next task when done with one, until `failed()` says a task
/// failed (a failing task calls `fail()` first). Every thread is joined before an error is
/// looked at: the results in task order, or every task's error (`first` picks the one to
/// report; a panic is an error too).
fn on_every_core<T: Send>(
    tasks: usize,
    (failed, fail): (&(dyn Fn() -> bool + Sync), &(dyn Fn() + Sync)),
    task: &(dyn Fn(usize) -> Result<T, PreloadError> + Sync),
    first: impl FnMut(&PreloadError) -> bool,
) -> Result<Vec<T>, PreloadError> {
    let workers = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let joined: Vec<Result<Vec<(usize, T)>, PreloadError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.min(tasks))
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    while !failed() {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        if i >= tasks {
                            break;
                        }
                        // A panic stops the others as an error does (a batch waiting for the
                        // turn of one that panicked would wait for good).
                        let done =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task(i)))
                                .unwrap_or_else(|_| {
                                    Err(PreloadError::Preload(format!(
                                        "a preload task ({i}) panicked"
                                    )))
                                });
                        match done {
                            Ok(done) => mine.push((i, done)),
                            Err(e) => {
                                fail();
                                return Err(e);
                            }
                        }
                    }
                    Ok(mine)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(PreloadError::Preload("a preload thread panicked".into()))
                })
            })
            .collect()
    });
    let mut done = Vec::new();
    let mut errors = Vec::new();
    for result in joined {
        match result {
            Ok(some) => done.extend(some),
            Err(e) => errors.push(e),
        }
    }
    let mut first = first;
    errors.sort_by_key(|e| !first(e));
    if let Some(e) = errors.into_iter().next() {
        return Err(e);
    }
    done.sort_by_key(|(i, _)| *i);
    Ok(done.into_iter().map(|(_, t)| t).collect())
}

/// A run's preload: how much history, and where bases are kept.
#[derive(Debug, Clone)]
pub struct PreloadConfig {
    pub spec: PreloadSpec,
    /// The folder bases are kept in.
    pub dir: PathBuf,
    /// Build the base again even if one is there.
    pub rebuild: bool,
    /// Print what the build does to stderr (a headless run; not the TUI).
    pub progress: bool,
    /// Check the keys of one in this many, not `check_sample`'s choice.
    pub check_sample: Option<u64>,
}

/// A base found or built for a run.
pub struct Base {
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// Seconds this run took to build it (None: an earlier run's).
    pub build_secs: Option<f64>,
}

/// What the engine needs from a preload before the live job starts.
pub struct Preloaded {
    pub manifest: Manifest,
    pub report: PreloadReport,
    pub own_results: Vec<(u64, usize, i64)>,
    pub oracle: OracleThread,
    pub oracle_watermark: i64,
    /// HEAP timers pending after the history, as raw keyed state streams with the operator
    /// (chain order) whose timer service takes them once it is open.
    pub heap_timers: Vec<(usize, Vec<u8>)>,
    /// Where the operators after the first (a chain's) stood after the history: their
    /// records in, and their own results (counters start at zero, as the first's do).
    pub downstream: Vec<crate::durability::checkpoint::OperatorMeta>,
}

/// Results a run's oracle and in-process store keep at most (about): above, they keep a
/// deterministic sample of the keys (`pipeline::oracle::checked`), so that their memory stays
/// bounded whatever the state's size.
pub const CHECKED_RESULTS: u64 = 1 << 20;

/// One key in how many a run whose history left `results` results checks: 1 up to
/// `CHECKED_RESULTS`, then the power of two that brings it under.
pub fn check_sample(results: u64) -> u64 {
    results.div_ceil(CHECKED_RESULTS).max(1).next_power_of_two()
}

/// Why a run cannot preload (said before anything is built): `restarts` when it restores,
/// injects failures or records its operations. Checkpoints and savepoints it may take.
pub fn refusal(workload: &Workload, restarts: bool) -> Option<String> {
    if restarts {
        return Some(
            "--restore, injected failures and --record-ops cannot start from a preload yet (checkpoints and savepoints can)"
                .into(),
        );
    }
    if workload.spec.phases.is_some() {
        return Some("a workload with phases (backfill and catch-up) cannot be preloaded".into());
    }
    None
}

/// The base for this run: found under `config.dir`, or built there.
pub fn find_or_build(
    config: &PreloadConfig,
    workload: &Workload,
    profile: &Profile,
    trace: Option<Arc<Vec<crate::pipeline::source::Event>>>,
    scratch: &Path,
) -> Result<Base, PreloadError> {
    let key = build::base_key(config, workload, profile)?;
    let dir = config.dir.join(&key);
    if !config.rebuild
        && let Some(manifest) = Manifest::read(&dir).filter(|m| serves(m, config.check_sample))
    {
        return Ok(Base {
            dir,
            manifest,
            build_secs: None,
        });
    }
    let started = Instant::now();
    let tmp = config
        .dir
        .join(format!(".{key}.building-{}", std::process::id()));
    let io = |what: String| {
        move |e: std::io::Error| PreloadError::Preload(format!("cannot {what}: {e}"))
    };
    let _ = std::fs::remove_dir_all(&tmp);
    check_cancel()?;
    std::fs::create_dir_all(&tmp).map_err(io(format!("create {}", tmp.display())))?;
    BUILDING.store(true, std::sync::atomic::Ordering::SeqCst);
    // The same history kept for another profile: its state is written again, not warmed up.
    let sibling = match build::history_key(config, workload, profile)? {
        Some(history) if !config.rebuild => {
            derive::find(&config.dir, &history).filter(|(_, m)| serves(m, config.check_sample))
        }
        _ => None,
    };
    let built = match &sibling {
        Some((from_dir, from)) => {
            if config.progress {
                eprintln!(
                    "preload: the same history is kept as {}: writing its state again with this profile's options",
                    from.key
                );
            }
            let derived = derive::derive((from_dir, from), workload, profile, &tmp, scratch, &key);
            if let (Ok(m), true) = (&derived, config.progress) {
                eprintln!(
                    "preload: base {key}: {} in {} SST files for L{}, written in {:.1} s",
                    crate::config::units::human_bytes(m.file_bytes() as f64),
                    m.files(),
                    m.level,
                    m.write_secs
                );
            }
            derived
        }
        None => build::build(config, workload, profile, trace, &tmp, scratch, &key),
    };
    BUILDING.store(false, std::sync::atomic::Ordering::SeqCst);
    // A stop that came as the build finished: nothing is kept either.
    // A stop shows as whatever error the loop it reached returned: reported as the stop.
    let built = built.and_then(|m| check_cancel().map(|()| m));
    let built = built.map_err(|e| match check_cancel() {
        Err(cancelled) => cancelled,
        Ok(()) => e,
    });
    let manifest = match built {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    // Another run may have finished the same base meanwhile, and be cloning it: keep its (the
    // same bytes) rather than replace files under it. Only a folder without a manifest (a
    // build that died, or --preload-rebuild's old base) is replaced.
    if !config.rebuild
        && let Some(theirs) = Manifest::read(&dir).filter(|m| serves(m, config.check_sample))
    {
        let _ = std::fs::remove_dir_all(&tmp);
        // Reported as a kept base: this run's own build was discarded.
        return Ok(Base {
            dir,
            manifest: theirs,
            build_secs: None,
        });
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&tmp, &dir).map_err(io(format!("move the base to {}", dir.display())))?;
    Ok(Base {
        dir,
        manifest,
        build_secs: Some(started.elapsed().as_secs_f64()),
    })
}

/// Whether base `m` keeps the results of every key a run checking one in `sample` checks (its
/// kept keys are one in `results_sample`: a run checks a multiple of that, or all it keeps).
fn serves(m: &Manifest, sample: Option<u64>) -> bool {
    sample.is_none_or(|s| s.max(1).is_multiple_of(m.results_sample.max(1)))
}

/// The sample a run from base `m` checks: `asked` (which [`serves`] held), else the default
/// for its history's results, at least the base's own.
fn run_sample(m: &Manifest, asked: Option<u64>) -> u64 {
    asked.unwrap_or_else(|| {
        check_sample(m.results.saturating_mul(m.results_sample)).max(m.results_sample)
    })
}

/// Loads `base` into `backends` (the run's fresh databases, one per operator in chain order),
/// its results into `sink`, and its history into a new oracle (`run`: the workload, its log and
/// the live job's plan).
pub fn load(
    base: Base,
    backends: &[Arc<StateBackend>],
    staging: &Path,
    run: (&Workload, &Log, &ReadPlan),
    sink: &mut Delivery,
    (sample, warm): (Option<u64>, bool),
) -> Result<Preloaded, PreloadError> {
    let (workload, log, live) = run;
    let Base {
        dir,
        manifest,
        build_secs,
    } = base;
    let dir = dir.as_path();
    let t = Instant::now();
    if manifest.downstream.len() + 1 != backends.len() {
        return Err(PreloadError::Preload(format!(
            "the base {} holds the state of {} operator(s); the job has {}",
            dir.display(),
            manifest.downstream.len() + 1,
            backends.len()
        )));
    }
    base::clone_into(dir, &manifest, backends, staging)?;
    let clone_secs = t.elapsed().as_secs_f64();
    // The serving store gets the history's results (at scale it keeps only the checked
    // keys': a real store keeps all; the oracle checks the same sample either way).
    let sample = run_sample(&manifest, sample);
    let sampled_store = sink.sink_mut().keep_only(sample).is_some_and(|n| n > 1);
    let mut own_results = base::read_results(dir, |key, slot, value| {
        sink.sink_mut()
            .write(key, slot, value)
            .map_err(|e| PreloadError::Pipeline(e.into()))
    })?;
    // The operator's own totals (what Flink keeps downstream) go on only for the checked keys
    // when the store keeps only theirs: the others' results are counted, never stored or
    // compared, and a total per key of the history would be most of statebench's memory.
    if sampled_store {
        own_results.retain(|(key, _, _)| crate::pipeline::oracle::checked(*key, sample));
    }
    // A chain's operators keep theirs in the job's slot numbering: each gets its own back in
    // its own.
    let bases = workload.slot_bases();
    let mut downstream: Vec<_> = manifest
        .downstream
        .iter()
        .enumerate()
        .map(|(i, d)| crate::durability::checkpoint::OperatorMeta {
            index: i + 1,
            counters: Default::default(),
            results: Vec::new(),
            records_in: d.records_in,
        })
        .collect();
    if !downstream.is_empty() {
        for (key, slot, value) in std::mem::take(&mut own_results) {
            let op = bases.iter().rposition(|b| *b <= slot).unwrap_or(0);
            let own = (key, slot - bases[op], value);
            match op.checked_sub(1).and_then(|i| downstream.get_mut(i)) {
                Some(d) => d.results.push(own),
                None => own_results.push(own),
            }
        }
    }
    sink.sink_mut()
        .flush()
        .map_err(|e| PreloadError::Pipeline(e.into()))?;
    let t = Instant::now();
    let mut oracle = OracleThread::start(operators::oracle(workload))
        .map_err(PreloadError::Spawn)?
        .sampled(sample);
    let mut tail = warm.then(|| warm::Tail::new(warm::WARM_RECORDS));
    let oracle_watermark = warmup::prime_oracle(
        &mut oracle,
        workload,
        log,
        warmup::plan(log, live, None),
        manifest.records,
        tail.as_mut(),
    )?;
    let oracle_secs = t.elapsed().as_secs_f64();
    // In a thread of its own: the job's thread's perf context counts only the job's reads.
    let warmed = match &tail {
        Some(tail) => std::thread::scope(|scope| {
            scope
                .spawn(|| warm::warm(backends, workload, tail))
                .join()
                .unwrap_or_else(|_| Err(PreloadError::Preload("warming the cache panicked".into())))
        })?,
        None => warm::Warmed::default(),
    };
    let report = PreloadReport {
        base: dir.display().to_string(),
        built: build_secs.is_some(),
        derived: manifest.derived_from.is_some(),
        records: manifest.records,
        state_bytes: manifest.state_bytes,
        entries: manifest.entries,
        file_bytes: manifest.file_bytes(),
        files: manifest.files() as u64,
        level: manifest.level,
        levels: manifest.levels(),
        batches: manifest.batches,
        build_secs: build_secs.unwrap_or(0.0),
        clone_secs,
        oracle_secs,
        check_sample: sample,
        warmed_records: warmed.records,
        warm_lookups: warmed.lookups,
        warm_secs: warmed.secs,
    };
    let heap_timers = std::iter::once(&manifest.heap_timer_files)
        .chain(manifest.downstream.iter().map(|d| &d.heap_timer_files))
        .enumerate()
        .flat_map(|(op, files)| files.iter().map(move |name| (op, name)))
        .map(|(op, name)| {
            std::fs::read(dir.join(name))
                .map(|raw| (op, raw))
                .map_err(|e| {
                    PreloadError::Preload(format!("cannot read {}: {e}", dir.join(name).display()))
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Preloaded {
        manifest,
        report,
        own_results,
        oracle,
        oracle_watermark,
        heap_timers,
        downstream,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_histories_are_checked_whole_and_large_ones_on_a_sample_under_the_bound() {
        assert_eq!(check_sample(0), 1);
        assert_eq!(check_sample(CHECKED_RESULTS), 1);
        assert_eq!(check_sample(CHECKED_RESULTS + 1), 2);
        assert_eq!(check_sample(20_900_000), 32);
        for results in [3_000_000u64, 20_900_000, 400_000_000] {
            assert!(results / check_sample(results) <= CHECKED_RESULTS);
        }
        // The sample is a fixed share of the keys, chosen by their hash.
        let sample = 16;
        let kept = (0..160_000u64)
            .filter(|k| crate::pipeline::oracle::checked(*k, sample))
            .count();
        assert!((9_000..11_000).contains(&kept), "{kept}");
    }

    #[test]
    fn a_big_size_is_sized_in_fewer_key_groups_within_the_builds_memory() {
        let size = |bytes: u64| PreloadSpec {
            size: Some(crate::config::units::ByteSize(bytes)),
            ..PreloadSpec::default()
        };
        let gib = 1u64 << 30;
        assert_eq!(sizing_groups(&size(100 << 20), gib), SIZING_GROUPS);
        assert_eq!(sizing_groups(&size(2 * gib), gib), 8);
        assert_eq!(sizing_groups(&size(4 * gib), gib), 4);
        assert_eq!(sizing_groups(&size(10 * gib), gib), 1);
        assert_eq!(sizing_groups(&size(100 * gib), gib), 1);
        // More memory, more groups; a history by events is what the pass finds out.
        assert_eq!(sizing_groups(&size(10 * gib), 4 * gib), 6);
        let events = PreloadSpec {
            events: Some(1 << 40),
            ..PreloadSpec::default()
        };
        assert_eq!(sizing_groups(&events, gib), SIZING_GROUPS);
    }
}
