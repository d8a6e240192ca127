//! Building a base: how long a history, the warm-up in key-group batches, the SST files.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::base::{self, Manifest, SstOut};
use super::history;
use super::layers;
use super::sizing_groups;
use super::warmup::{self, Until};
use super::{PreloadConfig, PreloadError};
use crate::backend::memory::SharedMemory;
use crate::backend::memstore::MemStore;
use crate::backend::{StateBackend, keys::MAX_PARALLELISM};
use crate::config::profile::{KNOBS, Live};
use crate::config::workload::{Levels, PreloadSpec};
use crate::config::{Profile, Workload};
use crate::durability::delivery::Delivery;
use crate::durability::sink::{MemorySink, Sink as _};
use crate::pipeline::operators;
use crate::pipeline::source::{Log, ReadPlan};

/// Memory the warm-up holds state in at once, unless `preload.memory` says otherwise.
const DEFAULT_MEMORY: u64 = 1 << 30;
/// Bytes of memory an entry of the warm-up's state takes besides its key and value (a B-tree
/// slot, two boxed slices and the allocator's rounding), measured as RSS on this machine.
const ENTRY_OVERHEAD: u64 = 96;
/// A batch's share of the state at most (its bytes and [`ENTRY_OVERHEAD`] per entry), so that
/// its hash tables fit the CPU's caches.
const CACHE_BATCH: u64 = 8 << 20;

/// The name of the base: a hash of everything that decides its bytes (the workload's job,
/// keys, event time, partitions, values, seed and source; how much history; the profile's knobs
/// but its memory split; the trace's identity; the base format).
pub(super) fn base_key(
    config: &PreloadConfig,
    workload: &Workload,
    profile: &Profile,
) -> Result<String, PreloadError> {
    key_of(config, workload, Some(profile))
}

/// The name of the history a base holds, whatever the profile: the same as [`base_key`]'s
/// without the knobs but where timers are kept. A `size` history is as long as the first
/// profile's files took to reach the size: another profile's base written from it holds the
/// same history, its files that history under its own options (a filter adds its bytes).
/// A `levels: full` history is cut where the profile's level sizes say: its name holds them
/// (the levels' targets and the write buffer an L0 file is), so that only a profile with the
/// same level sizing writes its levels again; other table options (a filter, the block size,
/// the index, compression) keep the first profile's cuts, each level holding the same keys.
pub(super) fn history_key(
    config: &PreloadConfig,
    workload: &Workload,
    profile: &Profile,
) -> Result<Option<String>, PreloadError> {
    let k = &profile.knobs;
    // Where the timers are is part of the history: in the state (ROCKSDB) or beside it (HEAP).
    let timers = format!("{:?}", k.timer_service_factory).to_lowercase();
    let levels = match config.spec.levels {
        Some(Levels::Full) => format!(
            "-levels-{}-{}-{}-{}",
            k.max_bytes_for_level_base.0,
            k.max_bytes_for_level_multiplier,
            if k.dynamic_level_bytes {
                "dynamic"
            } else {
                "static"
            },
            k.write_buffer_size.0
        ),
        _ => String::new(),
    };
    key_of(config, workload, None).map(|key| Some(format!("{key}-{timers}{levels}")))
}

fn key_of(
    config: &PreloadConfig,
    workload: &Workload,
    profile: Option<&Profile>,
) -> Result<String, PreloadError> {
    let mut spec =
        serde_json::to_value(&workload.spec).map_err(|e| PreloadError::Preload(format!("{e}")))?;
    // A state TTL's clock is processing time, which the rate paces: its timestamps, and which
    // entries expired by the history's end, follow the rate.
    let ttl = workload.operators().iter().any(|op| {
        operators::layout(op).cfs.iter().any(|c| {
            matches!(
                c.role,
                crate::model::layout::CfRole::State { ttl: Some(_), .. }
            )
        })
    });
    if let Some(map) = spec.as_object_mut() {
        for timing_only in [
            "rate",
            "duration",
            "sample-interval",
            "description",
            "preload",
        ] {
            if !(ttl && timing_only == "rate") {
                map.remove(timing_only);
            }
        }
    }
    let amount = PreloadSpec {
        memory: None,
        // The default said or not, one base.
        levels: config.spec.levels.filter(|l| *l != Levels::Last),
        // Warming the cache is the run's, after the clone: the same base.
        warm: false,
        ..config.spec
    };
    let trace = match &workload.spec.trace {
        Some(path) => {
            let meta = std::fs::metadata(path).ok();
            format!(
                "{} {:?} {:?}",
                path.display(),
                meta.as_ref().map(std::fs::Metadata::len),
                meta.and_then(|m| m.modified().ok())
            )
        }
        None => String::new(),
    };
    let mut text = serde_json::json!({
        "format": base::FORMAT,
        "workload": spec,
        "amount": amount,
        "knobs": profile.map(file_knobs),
        "trace": trace,
    });
    // Full trees with L0 files are not the ones built before (without), whose keys stay.
    if amount.levels == Some(Levels::Full) {
        text["l0_files"] = serde_json::json!(super::layers::L0_FILES);
    }
    let text = text.to_string();
    let hash = |seed: u64| {
        text.bytes().fold(seed, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    Ok(format!(
        "{}-{:016x}{:016x}",
        sanitize(&workload.name),
        hash(0xcbf2_9ce4_8422_2325),
        hash(0x8422_2325_cbf2_9ce4)
    ))
}

/// The knobs that decide a base's files: all but the memory split (managed memory, the write
/// buffer ratio, which resize the cache and the WriteBufferManager of a run, never an SST), so
/// a fix of memory alone starts from the same base.
fn file_knobs(profile: &Profile) -> Vec<(&'static str, String)> {
    profile
        .knobs
        .values()
        .into_iter()
        .filter(|(key, _)| {
            KNOBS
                .iter()
                .find(|k| k.key == *key)
                .is_none_or(|k| k.live != Live::Memory)
                && !JOB_ONLY.iter().any(|prefix| key.starts_with(prefix))
        })
        .collect()
}

/// Knobs of the job around the state (checkpoints, the changelog, the sink): they change
/// neither the SST files nor the history, so the same base serves every setting of them.
const JOB_ONLY: [&str; 4] = [
    "execution.checkpointing.",
    "state.changelog.",
    "checkpoint.",
    "sink.",
];

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect()
}

/// Builds a base in `dir`: sizes the history, runs the warm-up in key-group batches and writes
/// each batch's state into the SST files.
pub(super) fn build(
    config: &PreloadConfig,
    workload: &Workload,
    profile: &Profile,
    trace: Option<Arc<Vec<crate::pipeline::source::Event>>>,
    dir: &Path,
    scratch: &Path,
    key: &str,
) -> Result<Manifest, PreloadError> {
    let say = |line: String| {
        if config.progress {
            eprintln!("preload: {line}");
        }
    };
    if workload.is_chain() && config.spec.levels == Some(Levels::Full) {
        return Err(PreloadError::Preload(
            "levels=full builds the levels of one operator's state; a chain's base is written into each state's last level (drop levels=full)".into(),
        ));
    }
    // A database per operator for the column families' handles and options; the state stays
    // in memory.
    let memory = Arc::new(SharedMemory::for_profile(profile)?);
    let backends = super::open_backends(scratch, profile, workload, &memory)?;
    let log = Log::new(workload, trace, u64::MAX);
    let live = ReadPlan::from_workload(&log, &Default::default()).map_err(PreloadError::Source)?;
    if live.start.iter().any(|o| *o > 0) {
        return Err(PreloadError::Preload(format!(
            "a preload builds the history the job read from the log's start; this job starts at {} (source.starting-offsets: earliest)",
            live.start_reason
        )));
    }

    // Sizing: the history's length, and the state's size from 8 of the 256 key groups (fewer
    // for a big `size=`).
    let started = Instant::now();
    let (until, stop_time) = match config.spec {
        PreloadSpec {
            events: Some(n), ..
        } => (Until::Records(n), None),
        PreloadSpec { span: Some(s), .. } => (
            Until::Records(u64::MAX),
            Some(log.start_time().saturating_add(s.0 as i64)),
        ),
        PreloadSpec {
            size: Some(bytes), ..
        } => (
            Until::StateBytes {
                bytes: bytes.0,
                cap: workload.spec.keys.count.saturating_mul(64).max(10_000_000),
            },
            None,
        ),
        _ => {
            return Err(PreloadError::Preload(
                PreloadSpec::default().check().err().unwrap_or_default(),
            ));
        }
    };
    say(format!("sizing the history ({})", describe(&config.spec)));
    // The serving store of a pass, keeping the results of one key in `sample`.
    let sink = |sample: u64| {
        let mut store = MemorySink::new(workload.result_labels());
        store.keep_only(sample);
        Delivery::passthrough(Box::new(store))
    };
    let results_seen = std::cell::Cell::new(0u64);
    let memory_budget = config.spec.memory.map_or(DEFAULT_MEMORY, |m| m.0);
    let groups = sizing_groups(&config.spec, memory_budget);
    let sizing_pass = |until, spill: Option<&mut history::Spiller>| {
        warmup::pass(
            &backends,
            workload,
            warmup::Source::Ahead(&log, warmup::plan(&log, &live, stop_time)),
            until,
            warmup::Part {
                spill,
                ..warmup::Part::groups(0..groups)
            },
            sink(1),
        )
        .and_then(|(mut pass, mut delivery)| {
            let store = delivery
                .sink_mut()
                .read_all()
                .map_err(crate::pipeline::PipelineError::from)?;
            results_seen.set(store.len().max(pass.results.len()) as u64);
            // Counted, not kept: the history's results come from the batches (a 10 GiB
            // build held 570 MB of the sizing pass's to its end).
            pass.results = Vec::new();
            Ok(pass)
        })
    };
    let trial = dir.join("trial");
    // The pass that reads the whole history writes it for the batches as it goes
    // (`history::Spiller`): the only one with `events` or `span`, the second with `size`
    // (the first learns how much the files hold per byte of state). Not a two-input job's:
    // its reader takes the inputs in the task's order, and the log's position after the
    // history is the reader's (`history::spill`).
    let history_dir = dir.join("history");
    let one_input = !workload.operator().two_inputs();
    let spiller = || history::Spiller::create(&history_dir, log.partitions());
    let mut spilling = match until {
        Until::Records(_) if one_input => Some(spiller()?),
        _ => None,
    };
    let mut sizing = sizing_pass(until, spilling.as_mut())?;
    let (mut raw, mut held) = (sizing.state_bytes(), sizing.entries());
    let (mut ratio, mut per_cf) = sst_ratio(&backends, &mut sizing, &trial)?;
    if let (Until::StateBytes { cap, .. }, Some(target)) = (until, config.spec.size)
        && ratio < 0.95
        && !sizing.capped
    {
        // `size` is the SST files' size: they hold less than the keys and values (shared
        // key prefixes, compression), so size the history again for `size / ratio` of them.
        spilling = if one_input { Some(spiller()?) } else { None };
        sizing = sizing_pass(
            Until::StateBytes {
                bytes: (target.0 as f64 / ratio) as u64,
                cap,
            },
            spilling.as_mut(),
        )?;
        (raw, held) = (sizing.state_bytes(), sizing.entries());
        (ratio, per_cf) = sst_ratio(&backends, &mut sizing, &trial)?;
    }
    let records = sizing.records;
    let spilled = match spilling {
        Some(out) => {
            let history = out.finish()?;
            // The spiller saw every record the pass read, and the pass stopped where it did.
            if history.records != records {
                return Err(PreloadError::Preload(format!(
                    "the history written into {} while sizing holds {} records where the sizing read {records}",
                    history_dir.display(),
                    history.records
                )));
            }
            Some(history)
        }
        None => None,
    };
    // The processing time of the history's first and last records: a state TTL's clock.
    let (history_start, history_end) = sizing.read_at;
    if records == 0 {
        return Err(PreloadError::Preload(
            "the history is empty (the log has no record before the preload's end)".to_string(),
        ));
    }
    let scale = f64::from(MAX_PARALLELISM) / f64::from(groups);
    let est_bytes = (raw as f64 * scale) as u64;
    let est_entries = (held as f64 * scale) as u64;
    // The base keeps the results of the keys a run checks (one in `check_sample` of them):
    // a history's millions of results held and written whole were most of a big build's
    // memory and of its base on disk. A run asking to check more keys (`check_sample`) than
    // that builds the base again for them (`serves`).
    let results_sample = results_sample(
        (results_seen.get() as f64 * scale) as u64,
        config.check_sample,
    );
    let est_sst = (est_bytes as f64 * ratio) as u64;
    // Each state's TTL compaction filter, if Flink puts one on it.
    let expire = warmup::ttl_filters(&backends, workload);
    if sizing.capped {
        let human = crate::config::units::human_ms;
        let why = match expire.iter().flatten().map(|f| f.ttl_ms).min() {
            Some(ttl) => format!(
                " in {} of processing time: its TTL of {} keeps the keys of the last {} only, as Flink's compaction filter leaves them; a bigger state needs more keys per TTL (a higher 'rate' or a longer 'ttl'), or lower 'size'",
                human(sizing.read_at.1.saturating_sub(sizing.read_at.0)),
                human(ttl),
                human(ttl)
            ),
            None => format!(
                ": the job's windows and TTL keep no more of {} keys; lower 'size' or raise 'keys.count'",
                workload.spec.keys.count
            ),
        };
        return Err(PreloadError::Preload(format!(
            "after {records} records the state holds about {} ({} of SST files) and grows no further toward {} of SST files{why}",
            crate::config::units::human_bytes(est_bytes as f64),
            crate::config::units::human_bytes(est_sst as f64),
            config
                .spec
                .size
                .map_or(String::new(), |s| crate::config::units::human_bytes(
                    s.0 as f64
                )),
        )));
    }
    // Batches run side by side, one per core, each in its share of the memory.
    let workers = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as u64;
    // Batches of a few MiB at most, however much memory there is: the state's hash tables
    // then stay in the CPU's caches, where a table of millions of keys is a cache miss or two
    // per record (`dedup-ids` at 100 MiB of SST: 2 batches of 128 key groups built in 5.6 s,
    // 64 batches in 3.8 s, a third of the memory). Only then in the memory's share.
    let budget = (memory_budget / workers).min(CACHE_BATCH);
    let need = est_bytes + est_entries * ENTRY_OVERHEAD;
    // A whole number of rounds of one batch per core: a state that fits one batch still
    // builds on every core, and no core waits through a last round alone.
    let batches = need
        .div_ceil(budget.max(1))
        .next_multiple_of(workers.max(1))
        .min(u64::from(MAX_PARALLELISM)) as u16;
    let sizing_secs = started.elapsed().as_secs_f64();
    say(format!(
        "{records} records of history, about {} of state in {est_entries} entries ({} of SST files): {batches} batch(es) of key groups",
        crate::config::units::human_bytes(est_bytes as f64),
        crate::config::units::human_bytes(est_sst as f64),
    ));

    let k = &profile.knobs;
    // Every operator's states, numbered one after the other: (operator, its own number, name).
    let names: Vec<(usize, usize, &str)> = backends
        .iter()
        .enumerate()
        .flat_map(|(op, b)| {
            b.column_families()
                .iter()
                .enumerate()
                .map(move |(i, name)| (op, i, name.as_str()))
        })
        .collect();
    let sst_out = |cf: usize, prefix: &str, target: u64| {
        let (op, _, name) = names.get(cf).copied().unwrap_or((0, 0, ""));
        let options = backends[op].cf_options(name).ok_or_else(|| {
            PreloadError::Preload(format!("no options for column family '{name}'"))
        })?;
        Ok::<_, PreloadError>(
            SstOut::new(dir, cf, name, options, target)
                .with_prefix(prefix)
                .for_operator(op),
        )
    };
    // `levels: full`: each state's levels (the last first) and the records before each cut.
    let (levels, cuts) = if config.spec.levels == Some(Levels::Full) {
        layers::plan(
            (&backends[0], k),
            (workload, &log, &live),
            records,
            (groups, &per_cf),
            &say,
        )?
    } else {
        (Vec::new(), Vec::new())
    };
    // Every state's files: its levels (the last first; one, its last, unless `levels: full`),
    // each written by the batches in turn so that its files stay in key order.
    let layered = !levels.is_empty();
    let mut cfs = Vec::new();
    for cf in 0..names.len() {
        let mut outs = Vec::new();
        match levels.get(cf) {
            Some(levels) => {
                for (j, level) in levels.iter().enumerate() {
                    // An L0 file is one flush, whatever its size: one file per layer.
                    let (prefix, target) = match (j, level) {
                        (0, _) => (String::new(), k.target_file_size_base.0),
                        (_, 0) => (format!("L0-{j}-"), u64::MAX),
                        _ => (format!("L{level}-"), k.target_file_size_base.0),
                    };
                    outs.push((*level, sst_out(cf, &prefix, target)?));
                }
            }
            // Placed by the files' size once they are written (`base::place`).
            None => outs.push((0, sst_out(cf, "", k.target_file_size_base.0)?)),
        }
        cfs.push(outs);
    }
    // A state whose TTL Flink's compaction filter cleans is written as a compaction at the
    // history's end leaves it: without what expired by then (a job that ran for a TTL or more
    // has compacted its files through the filter; the live run's compactions drop what expires
    // after).
    let longest_ttl = expire.iter().flatten().map(|t| t.ttl_ms).max();
    if let Some(ttl) = longest_ttl {
        let span = history_end.saturating_sub(history_start).max(0);
        if span < ttl {
            say(format!(
                "the history spans {} of processing time, less than the state's TTL of {}: no entry has expired yet, the state is a young job's (a job that ran for a TTL holds about {:.1}x as many keys where every record brings a new one); a longer history (span= or events=) reaches the steady state",
                crate::config::units::human_ms(span),
                crate::config::units::human_ms(ttl),
                ttl as f64 / span.max(1) as f64
            ));
        } else {
            say(format!(
                "the history spans {} of processing time, {:.1} TTLs of {}: the states are written without what had expired at its end, as Flink's compaction filter leaves them",
                crate::config::units::human_ms(span),
                span as f64 / ttl as f64,
                crate::config::units::human_ms(ttl)
            ));
        }
    }
    let writers = layers::Writers::new(cfs).expiring(expire, history_end);

    // Key groups shared out evenly (18 batches: 14 or 15 each, not 15 and a last of 1).
    let share = |b: u16| (u32::from(b) * u32::from(MAX_PARALLELISM) / u32::from(batches)) as u16;
    let all: Vec<_> = (0..batches)
        .map(|b| share(b)..share(b + 1))
        .filter(|g| !g.is_empty())
        .collect();
    // More than two rounds of batches: the history is read from the log once, each batch's
    // records into a file of its own (every batch reading the log again was most of a big
    // build's time). One or two rounds read the log as fast side by side as one pass alone
    // writes the files.
    let t = Instant::now();
    let spilled = match spilled {
        Some(history) => Some(history),
        None if all.len() > 2 * workers as usize => {
            say(format!(
                "reading the history once into its key groups' files for {} batches",
                all.len()
            ));
            let history = history::spill(
                workload,
                &log,
                warmup::plan(&log, &live, None),
                records,
                &history_dir,
            )?;
            say(format!(
                "history read in {:.1} s: {} records, {} watermarks",
                t.elapsed().as_secs_f64(),
                history.records,
                history.watermarks
            ));
            Some(history)
        }
        None => None,
    };
    let spill_secs = t.elapsed().as_secs_f64();
    // Each core takes the next batch when it is done with one: it warms the batch's key groups
    // up (their records, and every watermark), sorts their state and writes it in its turn
    // (batch `i` after batch `i - 1`: the states are disjoint, in key-group order), then frees
    // it. Sorting and freeing, most of the writing's time, run side by side.
    let finished = std::sync::atomic::AtomicUsize::new(0);
    let run_batch = |batch: usize, groups: &std::ops::Range<u16>| {
        let t = Instant::now();
        let source = match &spilled {
            Some(history) => warmup::Source::Spilled(history, groups.clone()),
            None => warmup::Source::Log(&log, warmup::plan(&log, &live, None)),
        };
        let mut hand = |cf, layer, state: &mut MemStore| writers.write(cf, layer, batch, state);
        let layering = if layered {
            warmup::Layering::Cuts {
                at: &cuts,
                hand: &mut hand,
            }
        } else {
            warmup::Layering::None
        };
        let (mut pass, mut delivery) = warmup::pass(
            &backends,
            workload,
            source,
            Until::Records(records),
            warmup::Part {
                groups: groups.clone(),
                layering,
                // The operator's own results of the checked keys only: a batch's whole
                // results (a dedup's one per id, 24 bytes each), kept until the build's end,
                // were 18 GiB of a 10 GiB build's 19 GiB peak.
                checked: results_sample,
                spill: None,
            },
            sink(results_sample),
        )?;
        let warm_up = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let held = (pass.state_bytes(), pass.entries());
        let mut states = pass.take_states();
        // With every level written, the batch's levels are in the files already.
        if !layered {
            for (cf, (op, own, _)) in names.iter().enumerate() {
                writers.write_from(cf, 0, batch, (&mut states[*op], *own))?;
            }
        }
        let sink_results = delivery
            .sink_mut()
            .read_all()
            .map_err(crate::pipeline::PipelineError::from)?;
        // Freed here, beside the other batches' work.
        drop(states);
        let done = finished.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        say(format!(
            "batch {done}/{}: key groups {}..{}, {} records processed ({:.1} s so far)",
            all.len(),
            groups.start,
            groups.end,
            pass.processed,
            started.elapsed().as_secs_f64()
        ));
        Ok::<_, PreloadError>(Batch {
            pass,
            sink_results,
            held,
            secs: (warm_up, t.elapsed().as_secs_f64()),
        })
    };
    // The batch that failed first is reported, not the others it stopped.
    let done = super::on_every_core(
        all.len(),
        (&|| writers.failed(), &|| writers.fail()),
        &|batch| run_batch(batch, &all[batch]),
        |e| !layers::Writers::stopped_by_another(e),
    )?;
    let (mut warm_up_secs, mut write_secs) = (spill_secs, 0.0);
    let (mut own_results, mut sink_results) = (Vec::new(), Vec::new());
    let (mut state_bytes, mut entries) = (0u64, 0u64);
    let mut heap_timer_files = Vec::new();
    let mut downstream = vec![base::Downstream::default(); backends.len() - 1];
    let mut offsets = Vec::new();
    for (batch, mut b) in done.into_iter().enumerate() {
        for (i, (d, pass)) in downstream
            .iter_mut()
            .zip(&mut b.pass.downstream)
            .enumerate()
        {
            d.records_in += pass.records_in;
            if let Some(raw) = pass.heap_timers.take() {
                let name = format!("op{}-heap-timers-{batch:03}.raw", i + 1);
                std::fs::write(dir.join(&name), raw).map_err(base::io(format!("write {name}")))?;
                d.heap_timer_files.push(name);
            }
        }
        offsets = b.pass.offsets.clone();
        own_results.append(&mut b.pass.results);
        sink_results.append(&mut b.sink_results);
        state_bytes += b.held.0;
        entries += b.held.1;
        warm_up_secs += b.secs.0;
        write_secs += b.secs.1;
        if let Some(raw) = b.pass.heap_timers.take() {
            let name = format!("heap-timers-{batch:03}.raw");
            std::fs::write(dir.join(&name), raw).map_err(base::io(format!("write {name}")))?;
            heap_timer_files.push(name);
        }
    }
    if let Some(history) = spilled {
        history.remove();
        let _ = std::fs::remove_dir(dir.join("history"));
    }
    let t = Instant::now();
    let mut column_families = Vec::new();
    let mut upper = Vec::new();
    let (dropped, dropped_bytes) = writers.dropped();
    entries -= dropped.min(entries);
    state_bytes -= dropped_bytes.min(state_bytes);
    if dropped > 0 {
        say(format!(
            "{dropped} expired entries ({}) left out, as the compaction filter drops them",
            crate::config::units::human_bytes(dropped_bytes as f64)
        ));
    }
    for mut levels in writers.finish()? {
        if levels.is_empty() {
            continue;
        }
        column_families.push(levels.remove(0));
        upper.extend(levels);
    }
    // The level an LSM tree of the files' size keeps its data in (a base derived for another
    // profile is placed by its files' size the same way); a full tree's levels are its own.
    let level = if layered {
        column_families
            .iter()
            .filter_map(|c| c.level)
            .max()
            .unwrap_or(1)
    } else {
        base::place(&mut column_families, k)
    };
    base::write_results(dir, &sink_results, &own_results)?;
    write_secs += t.elapsed().as_secs_f64();
    drop(backends);
    let _ = std::fs::remove_dir_all(scratch);
    release_freed_memory();
    let manifest = Manifest {
        format: base::FORMAT,
        key: key.to_string(),
        workload: workload.name.clone(),
        profile: profile.name.clone(),
        records,
        offsets,
        state_bytes,
        entries,
        results: sink_results.len() as u64,
        results_sample,
        level,
        batches: u32::from(batches),
        column_families,
        sizing_secs,
        warm_up_secs,
        write_secs,
        history: history_key(config, workload, profile)?.unwrap_or_default(),
        derived_from: None,
        heap_timer_files,
        upper,
        downstream,
    };
    manifest.write(dir)?;
    say(format!(
        "base {key}: {} of state, {} in {} SST files for L{level}, in {:.1} s",
        crate::config::units::human_bytes(state_bytes as f64),
        crate::config::units::human_bytes(manifest.file_bytes() as f64),
        manifest.files(),
        started.elapsed().as_secs_f64()
    ));
    Ok(manifest)
}

/// What a batch of key groups leaves once its state is written: its pass (the state taken),
/// the serving store's results, the bytes and entries its state held, and its seconds warming
/// up and writing.
struct Batch {
    pass: warmup::Pass,
    sink_results: Vec<(u64, usize, i64)>,
    held: (u64, u64),
    secs: (f64, f64),
}

/// One key in how many a base keeps the results of: the sample a run checks of a history of
/// about `results` results (`check_sample`), or the largest power of two dividing both that
/// and the sample a run asked for (`asked`: 1, every key, keeps all), so that the kept keys
/// hold every key the run checks.
pub(super) fn results_sample(results: u64, asked: Option<u64>) -> u64 {
    let default = super::check_sample(results);
    match asked {
        Some(asked) => 1u64 << asked.max(1).trailing_zeros().min(default.trailing_zeros()),
        None => default,
    }
}

/// SST file bytes per byte of keys and values, from the states of `pass` (every operator's,
/// each on its database in `backends`) written out with the column families' options into
/// `dir` (removed after), 1 for an empty state; and each column family's bytes of keys and
/// values and of SST files, every operator's one after the other. The states are left empty.
fn sst_ratio(
    backends: &[StateBackend],
    pass: &mut warmup::Pass,
    dir: &Path,
) -> Result<(f64, Vec<(u64, u64)>), PreloadError> {
    let raw = pass.state_bytes();
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)
        .map_err(|e| PreloadError::Preload(format!("cannot create {}: {e}", dir.display())))?;
    let mut per_cf = Vec::new();
    for (backend, state) in backends.iter().zip(pass.take_states()) {
        for i in 0..state.column_families() {
            let Some(options) = backend
                .column_families()
                .get(i)
                .and_then(|name| backend.cf_options(name))
            else {
                per_cf.push((0, 0));
                continue;
            };
            let entries = state.sorted(i);
            let bytes: u64 = entries
                .iter()
                .map(|(k, v)| (k.len() + v.len()) as u64)
                .sum();
            let mut out = SstOut::new(dir, per_cf.len(), "trial", options, u64::MAX);
            for (key, value) in &entries {
                out.put(key, value)?;
            }
            per_cf.push((bytes, out.finish()?.bytes));
        }
    }
    let _ = std::fs::remove_dir_all(dir);
    let files: u64 = per_cf.iter().map(|(_, f)| f).sum();
    let ratio = if raw == 0 {
        1.0
    } else {
        (files as f64 / raw as f64).clamp(0.01, 4.0)
    };
    Ok((ratio, per_cf))
}

/// Hands the memory the build freed back to the system: glibc keeps freed small blocks (the
/// warm-up's millions of keys and values) in its heap, where they would count in the run's
/// resident memory for its whole life.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: glibc's malloc_trim takes a byte count and only returns free heap pages to
        // the kernel; it touches no memory the program holds.
        unsafe {
            malloc_trim(0);
        }
    }
}

fn describe(spec: &PreloadSpec) -> String {
    match (spec.events, spec.span, spec.size) {
        (Some(n), _, _) => format!("the first {n} records"),
        (_, Some(s), _) => format!("the first {s} of event time"),
        (_, _, Some(b)) => format!(
            "until the state holds {}",
            crate::config::units::human_bytes(b.0 as f64)
        ),
        _ => "nothing".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::workload::PreloadSpec;

    fn key(edits: &[(&str, &str)]) -> String {
        let mut profile = Profile::load("flink-default").unwrap();
        for (k, v) in edits {
            profile = profile.edited(k, v).unwrap();
        }
        let config = PreloadConfig {
            spec: PreloadSpec::parse("size=1gib").unwrap(),
            dir: std::path::PathBuf::new(),
            rebuild: false,
            progress: false,
            check_sample: None,
        };
        base_key(&config, &Workload::load("ads-days").unwrap(), &profile).unwrap()
    }

    #[test]
    fn checkpoints_and_memory_share_a_base_and_file_knobs_do_not() {
        let plain = key(&[]);
        assert_eq!(
            plain,
            key(&[
                ("execution.checkpointing.interval", "5s"),
                ("execution.checkpointing.incremental", "true"),
                ("state.changelog.enabled", "true"),
                ("sink.delivery-guarantee", "EXACTLY_ONCE"),
                ("memory.managed-size", "1gb"),
            ])
        );
        assert_ne!(
            plain,
            key(&[("compaction.level.target-file-size-base", "32mb")])
        );
        assert_ne!(plain, key(&[("use-bloom-filter", "true")]));
    }
}
