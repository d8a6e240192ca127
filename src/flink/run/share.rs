//! The job's trace and a subtask's share of it: the workload's events written as the Flink
//! job's CSV trace, the subtask whose RocksDB is compared, and the share statebench replays.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{FlinkError, FlinkJob};
use crate::config::Workload;

/// The operator index Flink gives key group `kg` (KeyGroupRangeAssignment).
pub(super) fn operator_index(kg: u16, parallelism: u32) -> u32 {
    (u32::from(kg) * parallelism) / u32::from(crate::backend::keys::MAX_PARALLELISM)
}

/// Writes the workload's first `events` events (generated, or its `trace`'s) as the job's
/// trace (`key,event_time,0`, one partition, as the job's one source; or trace v2); every
/// subtask's event count.
pub(super) fn write_trace(
    workload: &Workload,
    trace: Option<Arc<Vec<crate::pipeline::source::Event>>>,
    job: &FlinkJob,
    events: u64,
    parallelism: u32,
    dir: &Path,
) -> Result<Vec<u64>, FlinkError> {
    use std::io::Write;
    let all = dir.join("trace.csv");
    let mut a = std::io::BufWriter::new(std::fs::File::create(&all).map_err(|e| io(&all, e))?);
    let mut per_subtask = vec![0u64; parallelism as usize];
    // The key strings the workload's job keys by (zero-padded to its key size, if it has one).
    let names = crate::pipeline::source::KeyNames::of(workload);
    let mut key = String::new();
    for e in crate::pipeline::source::EventSource::new(workload, trace).take(events as usize) {
        names.write(e.user, &mut key);
        if job.v2 {
            // key,event_time,partition,value_size,input: one source, a join's inputs apart.
            let partition = if job.join { e.input } else { 0 };
            writeln!(
                a,
                "{key},{},{partition},{},{}",
                e.event_time, e.value_size, e.input
            )
        } else {
            writeln!(a, "{key},{},0", e.event_time)
        }
        .map_err(|e| io(&all, e))?;
        let index = operator_index(crate::backend::keys::key_group(&key), parallelism);
        per_subtask[index as usize] += 1;
    }
    a.flush().map_err(|e| io(&all, e))?;
    Ok(per_subtask)
}

/// Whether `key` reads back as itself from the job's CSV trace.
pub(super) fn csv_safe(key: &str) -> bool {
    !key.is_empty()
        && key.trim() == key
        && !key.contains([',', '\n', '\r'])
        && !key.starts_with(['#', '{'])
        && key != "key"
        && key != "user"
}

/// The subtask compared, and its share of the trace.
pub(super) struct Share {
    pub(super) subtask: u32,
    pub(super) trace: PathBuf,
}

/// `subtask`'s share of the trace (the lines whose key its key groups hold), for statebench.
pub(super) fn write_share(dir: &Path, parallelism: u32, subtask: u32) -> Result<Share, FlinkError> {
    use std::io::{BufRead, Write};
    let (all, share) = (
        dir.join("trace.csv"),
        dir.join(format!("trace-subtask-{subtask}.csv")),
    );
    let read = std::io::BufReader::new(std::fs::File::open(&all).map_err(|e| io(&all, e))?);
    let mut s = std::io::BufWriter::new(std::fs::File::create(&share).map_err(|e| io(&share, e))?);
    for line in read.lines() {
        let line = line.map_err(|e| io(&all, e))?;
        // Keys are the generator's names: no comma in them.
        let key = line.split(',').next().unwrap_or_default();
        if operator_index(crate::backend::keys::key_group(key), parallelism) == subtask {
            writeln!(s, "{line}").map_err(|e| io(&share, e))?;
        }
    }
    s.flush().map_err(|e| io(&share, e))?;
    Ok(Share {
        subtask,
        trace: share,
    })
}

fn io(p: &Path, e: std::io::Error) -> FlinkError {
    FlinkError::Setup(format!("{}: {e}", p.display()))
}

/// The subtask with the most events (the first of those).
pub(super) fn busiest(per_subtask: &[u64]) -> u32 {
    let most = per_subtask.iter().copied().max().unwrap_or(0);
    per_subtask.iter().position(|n| *n == most).unwrap_or(0) as u32
}

/// The workload statebench runs on a subtask's share of the job's trace (`trace`): the share
/// replayed, from one source as the Flink job's, a join's two inputs each in a partition of its
/// own. What the share's records already carry is not the generator's to make again: their
/// padded keys (`keys.size`) and their inputs (`inputs:`).
pub(super) fn share_workload(workload: &Workload, trace: &Path) -> Workload {
    let mut workload = workload.clone();
    workload.spec.trace = Some(trace.to_path_buf());
    let join = workload.operator().kind() == "interval-join";
    workload.spec.partitions = if join { 2 } else { 1 };
    workload.spec.idle_partitions = Vec::new();
    workload.spec.keys.size = None;
    workload.spec.inputs = None;
    workload
}

#[cfg(test)]
mod tests {
    /// statebench's side replays a subtask's share of the job's trace: a workload with padded
    /// keys or generated inputs loads it (the share's records carry both), as every shipped
    /// workload flink run accepts does.
    #[test]
    fn a_subtasks_share_loads_for_every_workload_flink_run_takes() {
        let dir = tempfile::tempdir().unwrap();
        // As write_trace writes them: a join's inputs in partitions 0 and 1, else partition 0.
        let key = "user-0000000000000000000000000000042";
        let (one, two) = (dir.path().join("one.csv"), dir.path().join("two.csv"));
        let write = |path: &std::path::Path, second: &str| {
            let text = format!("{key},1767225600000,0,300,0\n{key},1767225660000,{second}\n");
            std::fs::write(path, text).unwrap();
        };
        write(&one, "0,30,0");
        write(&two, "1,150,1");
        for name in [
            "dedup-24h",
            "dedup-ids",
            "orders-payments-generated",
            "ads-minutes",
        ] {
            let w = crate::config::Workload::load(name).unwrap();
            let join = w.operator().kind() == "interval-join";
            let mut w = super::share_workload(&w, if join { &two } else { &one });
            crate::pipeline::trace::Trace::load_into(&mut w)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert!(super::csv_safe("order-7"));
        for bad in ["a,b", " a", "#a", "{a", "key", "user", "a\nb", ""] {
            assert!(!super::csv_safe(bad), "{bad:?}");
        }
    }

    #[test]
    fn the_busiest_subtask_is_compared_and_its_share_holds_its_keys_alone() {
        assert_eq!(super::busiest(&[10, 30, 30, 5]), 1);
        assert_eq!(super::busiest(&[7]), 0);
        let dir = tempfile::tempdir().unwrap();
        let keys: Vec<String> = (0..200).map(|i| format!("user-{i}")).collect();
        let lines: String = keys.iter().map(|k| format!("{k},1000,0\n")).collect();
        std::fs::write(dir.path().join("trace.csv"), &lines).unwrap();
        let mut seen = 0;
        for subtask in 0..3 {
            let share = super::write_share(dir.path(), 3, subtask).unwrap();
            let text = std::fs::read_to_string(share.trace).unwrap();
            for line in text.lines() {
                let key = line.split(',').next().unwrap();
                let kg = crate::backend::keys::key_group(key);
                assert_eq!(super::operator_index(kg, 3), subtask, "{line}");
                seen += 1;
            }
        }
        assert_eq!(seen, keys.len(), "every line in exactly one share");
    }

    #[test]
    fn key_groups_spread_over_subtasks_as_flink_assigns_them() {
        // KeyGroupRangeAssignment: 256 key groups, parallelism 2: 0-127 -> 0, 128-255 -> 1.
        assert_eq!(super::operator_index(0, 2), 0);
        assert_eq!(super::operator_index(127, 2), 0);
        assert_eq!(super::operator_index(128, 2), 1);
        assert_eq!(super::operator_index(255, 2), 1);
        assert_eq!(super::operator_index(255, 1), 0);
    }
}
