//! `bench --suite preload`: per case, a base built fresh (`run --preload`'s build) in a
//! temporary folder inside the preload folder, then its entries read back into memory and
//! written again by RocksDB's own SstFileWriter with the same options; both timed in the
//! process's CPU seconds. The table and the verdict are `suites::preload`'s.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, bail};

use crate::backend::memory::SharedMemory;
use crate::backend::{BackendError, StateBackend};
use crate::cli::BenchArgs;
use crate::commands::UsageError;
use crate::config::units::human_bytes;
use crate::config::workload::PreloadSpec;
use crate::config::{Profile, Workload};
use crate::engine::EngineError;
use crate::pipeline::operators::{self, Layout};
use crate::preload::base::{self, CfFiles, Manifest, SstOut};
use crate::preload::{PreloadConfig, PreloadError};
use crate::suites::Case;
use crate::suites::preload::{self as suite, PreloadRow};

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    if args.baseline.is_some() || args.save_baseline.is_some() || args.timings {
        bail!(UsageError(
            "the preload suite judges the preload against RocksDB's SstFileWriter in the same run, not a baseline: drop --baseline, --save-baseline and --timings"
                .to_string()
        ));
    }
    if args.list {
        for c in suite::CASES {
            println!("{:<20} {}", c.name, suite::describe(c, c.profile));
        }
        return Ok(());
    }
    if let Some(path) = args.json.as_deref() {
        crate::commands::check_report_dir(Some(path))?;
    }
    let dir = crate::commands::preload_dir(args.preload_dir.as_deref())?;
    let override_profile = args
        .profile
        .as_deref()
        .map(crate::commands::load_profile)
        .transpose()?;
    // The long cases only when named.
    let cases: Vec<&Case> = suite::CASES
        .iter()
        .filter(|c| {
            if args.case.is_empty() {
                !suite::ON_REQUEST.contains(&c.name)
            } else {
                args.case.iter().any(|n| n == c.name)
            }
        })
        .collect();
    stop_on_ctrl_c();
    let mut rows = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let profile = case.profile(override_profile.as_ref())?;
        eprintln!(
            "bench {}/{}: {} ({}) ...",
            i + 1,
            cases.len(),
            case.name,
            suite::describe(case, &profile.name)
        );
        let row =
            measure(case, &profile, &dir).with_context(|| format!("bench case {}", case.name))?;
        rows.push(row);
    }
    print!("{}", suite::render(&rows));
    if let Some(path) = &args.json {
        super::write_json(path, &suite::json(&rows))?;
    }
    for row in &rows {
        println!("{}", row.verdict());
    }
    let below = rows.iter().filter(|r| !r.passes()).count();
    if below > 0 {
        bail!(
            "{below} of {} cases below the floor of {}x of RocksDB's SstFileWriter per CPU-second",
            rows.len(),
            suite::FLOOR
        );
    }
    Ok(())
}

/// Ctrl-C (or SIGTERM) stops the build or the SstFileWriter within a second or so, through
/// the preload's stop flag; the temporary folders go with the error. A second one exits.
fn stop_on_ctrl_c() {
    let stopping = std::sync::atomic::AtomicBool::new(false);
    let _ = ctrlc::set_handler(move || {
        if stopping.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::process::exit(130);
        }
        crate::preload::cancel();
        eprintln!("\nstopping: the bench stops and removes its temporary folders");
    });
}

/// One case: the build, then the SstFileWriter on the same entries.
fn measure(case: &Case, profile: &Profile, dir: &Path) -> anyhow::Result<PreloadRow> {
    let mut workload = Workload::load(case.workload)?;
    let trace = crate::commands::load_trace(&mut workload)?;
    let amount = case.preload.unwrap_or("size=100MiB");
    let spec = PreloadSpec::parse(amount).map_err(|e| UsageError(format!("'{amount}': {e}")))?;
    // Removed when it goes out of scope, on an error too (the databases in it close first);
    // named with this process's id, so that `preload gc` removes it once the process is gone
    // (killed before it could).
    let prefix = format!("{}{}-", crate::preload::BENCH_FOLDER, std::process::id());
    let work = tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(dir)
        .with_context(|| format!("cannot create a temporary folder in {}", dir.display()))?;
    let config = PreloadConfig {
        spec,
        dir: work.path().to_path_buf(),
        rebuild: true,
        progress: true,
        check_sample: None,
    };

    let cpu = cpu_seconds()?;
    let started = Instant::now();
    let built = crate::preload::find_or_build(
        &config,
        &workload,
        profile,
        trace,
        &work.path().join("scratch"),
    )
    .map_err(stopped_or_failed)?;
    let build_secs = started.elapsed().as_secs_f64();
    let build_cpu_secs = cpu_seconds()? - cpu;
    // Nothing big ran in this process before the build: its peak so far is the build's.
    let build_peak_rss_bytes = crate::util::process_memory::peak_rss_bytes().unwrap_or(0);
    let manifest = built.manifest;
    let disk_bytes = crate::commands::preload::disk_bytes(&built.dir);
    if !manifest.upper.is_empty() {
        bail!(
            "the base has levels above its last (levels=full): the preload suite compares a plain base only"
        );
    }

    let layout = operators::layout(&workload.operator());
    let state = read_back(
        (&built.dir, &manifest),
        profile,
        &layout,
        &work.path().join("read"),
    )?;
    eprintln!(
        "preload suite: {} entries in memory; RocksDB's SstFileWriter writes them",
        state.iter().map(|s| s.lens.len()).sum::<usize>()
    );
    let written = write_again(
        &state,
        &manifest.column_families,
        profile,
        &layout,
        work.path(),
    )?;
    let entries: u64 = written.files.iter().map(|f| f.entries).sum();
    let given: u64 = state.iter().map(|s| s.lens.len() as u64).sum();
    if entries != given || given > manifest.entries || given == 0 {
        bail!(
            "RocksDB's SstFileWriter wrote {entries} entries of the {given} it was given; the base holds {}",
            manifest.entries
        );
    }
    Ok(PreloadRow {
        case: case.name.to_string(),
        preload: amount.to_string(),
        records: manifest.records,
        entries: manifest.entries,
        build_secs,
        build_cpu_secs,
        sizing_secs: manifest.sizing_secs,
        warm_up_secs: manifest.warm_up_secs,
        write_secs: manifest.write_secs,
        build_peak_rss_bytes,
        yardstick_entries: entries,
        yardstick_secs: written.secs,
        yardstick_cpu_secs: written.cpu_secs,
        sst_bytes: manifest.file_bytes(),
        disk_bytes,
        yardstick_sst_bytes: written.files.iter().map(|f| f.bytes).sum(),
    })
}

/// The process's CPU seconds so far.
fn cpu_seconds() -> anyhow::Result<f64> {
    crate::util::process_cpu::seconds()
        .context("this system does not report the process's CPU time (/proc/self/stat)")
}

/// A preload's error as the engine reports it: a stop (Ctrl-C) exits 130.
fn stopped_or_failed(e: PreloadError) -> anyhow::Error {
    anyhow::Error::new(EngineError::from(e))
}

/// A backend error, or the stop it came from.
fn stopped_or(e: BackendError) -> anyhow::Error {
    match crate::preload::check_cancel() {
        Err(stopped) => stopped_or_failed(stopped),
        Ok(()) => e.into(),
    }
}

/// One column family's entries in key order, in one buffer: each key and then its value, their
/// lengths beside.
#[derive(Default)]
struct Sorted {
    bytes: Vec<u8>,
    lens: Vec<(u32, u32)>,
}

impl Sorted {
    fn push(&mut self, key: &[u8], value: &[u8]) -> Result<(), BackendError> {
        let len = |b: &[u8]| {
            u32::try_from(b.len())
                .map_err(|_| BackendError::Setup(format!("an entry of {} bytes", b.len())))
        };
        self.lens.push((len(key)?, len(value)?));
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(value);
        Ok(())
    }

    fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let mut at = 0;
        self.lens.iter().map(move |&(k, v)| {
            let (k, v) = (k as usize, v as usize);
            let entry = (&self.bytes[at..at + k], &self.bytes[at + k..at + k + v]);
            at += k + v;
            entry
        })
    }
}

/// Every entry of the base's column families, read through RocksDB (its files ingested into
/// a scratch database at `scratch`, closed and removed before this returns).
fn read_back(
    (dir, manifest): (&Path, &Manifest),
    profile: &Profile,
    layout: &Layout,
    scratch: &Path,
) -> anyhow::Result<Vec<Sorted>> {
    // Offsets beside the keys and values: 8 bytes an entry. A bigger state gives the
    // SstFileWriter its first entries up to the bound (its rate is per CPU-second).
    let need = manifest.state_bytes + manifest.entries * 8;
    let mut room = need.min(suite::YARDSTICK_MEMORY);
    if let Some(available) = crate::flink::run::cluster::available_memory() {
        room = room.min(available / 2);
    }
    eprintln!(
        "preload suite: reading {} of the base's {} entries back ({})",
        if room < need { "the first" } else { "all" },
        manifest.entries,
        human_bytes(room as f64)
    );
    let memory = Arc::new(SharedMemory::for_profile(profile)?);
    let backend = StateBackend::open_shared(scratch, profile, layout, &memory)?;
    // Read where the ingest puts the files (the last level): no refit needed to read them.
    let as_ingested = Manifest {
        level: base::NUM_LEVELS - 1,
        column_families: manifest
            .column_families
            .iter()
            .map(|cf| CfFiles {
                level: None,
                ..cf.clone()
            })
            .collect(),
        ..manifest.clone()
    };
    base::clone_into(
        dir,
        &as_ingested,
        std::slice::from_ref(&&backend),
        &scratch.join("staging"),
    )
    .map_err(stopped_or_failed)?;
    let mut state = Vec::with_capacity(manifest.column_families.len());
    for cf in &manifest.column_families {
        let share = (manifest.state_bytes as f64 * cf.entries as f64
            / manifest.entries.max(1) as f64) as u64;
        let mut sorted = Sorted {
            bytes: Vec::with_capacity(share.min(room) as usize),
            lens: Vec::with_capacity(cf.entries.min(room / 16) as usize),
        };
        let mut read = 0u64;
        let full = "the SstFileWriter's input is full";
        let done = backend.read_all(backend.cf(&cf.name)?, |key, value| {
            read += 1;
            if read.is_multiple_of(crate::preload::CANCEL_EVERY)
                && crate::preload::check_cancel().is_err()
            {
                return Err(BackendError::Setup("the bench was stopped".into()));
            }
            if (sorted.bytes.len() + sorted.lens.len() * 8 + key.len() + value.len() + 8) as u64
                > room
            {
                return Err(BackendError::Setup(full.into()));
            }
            sorted.push(key, value)
        });
        match done {
            Err(BackendError::Setup(m)) if m == full => {}
            other => other.map_err(stopped_or)?,
        }
        room = room.saturating_sub((sorted.bytes.len() + sorted.lens.len() * 8) as u64);
        state.push(sorted);
    }
    // No RocksDB thread runs while the SstFileWriter is timed.
    drop(backend);
    drop(memory);
    let _ = std::fs::remove_dir_all(scratch);
    Ok(state)
}

/// What RocksDB's SstFileWriter wrote, and the seconds it took.
struct Written {
    files: Vec<CfFiles>,
    secs: f64,
    cpu_secs: f64,
}

/// `state` written by RocksDB's SstFileWriter into `work/sst`, each column family with the
/// options a database of `profile` and `layout` gives it, cut at the profile's target file size
/// (as the preload writes them); only the writing is timed.
fn write_again(
    state: &[Sorted],
    column_families: &[CfFiles],
    profile: &Profile,
    layout: &Layout,
    work: &Path,
) -> anyhow::Result<Written> {
    // A database for the column families' options (as the build holds one); empty, so its
    // background threads have nothing to do.
    let memory = Arc::new(SharedMemory::for_profile(profile)?);
    let backend = StateBackend::open_shared(&work.join("options"), profile, layout, &memory)?;
    let out = work.join("sst");
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut options = Vec::with_capacity(column_families.len());
    for cf in column_families {
        options.push(
            backend
                .cf_options(&cf.name)
                .with_context(|| format!("no options for column family '{}'", cf.name))?,
        );
    }
    let target = profile.knobs.target_file_size_base.0;
    let cpu = cpu_seconds()?;
    let started = Instant::now();
    let mut files = Vec::with_capacity(state.len());
    for (i, ((cf, entries), options)) in column_families.iter().zip(state).zip(options).enumerate()
    {
        let mut writer = SstOut::new(&out, i, &cf.name, options, target);
        for (key, value) in entries.iter() {
            writer.put(key, value).map_err(stopped_or)?;
        }
        files.push(writer.finish().map_err(stopped_or)?);
    }
    let secs = started.elapsed().as_secs_f64();
    let cpu_secs = cpu_seconds()? - cpu;
    Ok(Written {
        files,
        secs,
        cpu_secs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_entries_come_back_as_pushed() {
        let mut s = Sorted::default();
        s.push(b"a", b"").unwrap();
        s.push(b"bc", b"value").unwrap();
        s.push(b"", b"x").unwrap();
        let back: Vec<_> = s.iter().collect();
        assert_eq!(
            back,
            vec![
                (&b"a"[..], &b""[..]),
                (&b"bc"[..], &b"value"[..]),
                (&b""[..], &b"x"[..])
            ]
        );
    }
}
