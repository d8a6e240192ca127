//! Which RocksDB instances shared a slot: each slot has its own WriteBufferManager and block
//! cache (Flink's managed memory per slot), so a budget is judged per slot, and a workload is
//! one slot's. From a LOG, Flink's path names the job and subtask of each instance; through the
//! REST API, one subtask of every vertex shares a slot.

use std::collections::{BTreeMap, BTreeSet};

use super::Instance;
use super::metrics::NativeMetrics;

/// What `per_slot` found.
pub(super) struct PerSlot {
    /// State column families sharing the fullest slot's WriteBufferManager.
    pub column_families: usize,
    /// The instances (operators) in that slot, where the slots are known: one operator's
    /// states cannot be split.
    pub operators: Option<usize>,
    /// The slot whose instances wrote most (indices into the instances): the workload is one
    /// slot's, its events and its rate.
    pub busiest: Vec<usize>,
    /// Said when the instances ran in several slots, or belong to several jobs.
    pub note: Option<String>,
}

/// What tells instances apart: the database's path its LOG names, else its first LOG file
/// (in a shared log directory every instance has the same directory, not the same LOG).
pub(super) fn instance_id(i: &Instance) -> String {
    match (&i.log.db_path, i.logs.first()) {
        (Some(path), _) => path.clone(),
        (None, Some(log)) => log.display().to_string(),
        (None, None) => i.dir.display().to_string(),
    }
}

/// The job and subtask an instance's LOG names, if its database is a Flink operator's.
pub(super) fn flink_slot(i: &Instance) -> Option<(String, u32)> {
    i.log.db_path.as_deref().and_then(flink_subtask)
}

/// The job and subtask number of a Flink RocksDB instance's path
/// (`job_<job id>_op_<operator>_<operator id>__<subtask + 1>_<parallelism>__uuid_<uuid>`).
fn flink_subtask(path: &str) -> Option<(String, u32)> {
    let name = path
        .split('/')
        .find(|c| c.starts_with("job_") && c.contains("_op_") && c.contains("__uuid_"))?;
    let job = name.strip_prefix("job_")?.split("_op_").next()?;
    let (rest, parallelism) = name.split("__uuid_").next()?.rsplit_once('_')?;
    let (_, subtask) = rest.rsplit_once("__")?;
    parallelism.parse::<u32>().ok()?;
    Some((job.to_string(), subtask.parse().ok()?))
}

/// The instances grouped by the slot they ran in (indices into `instances`), and whether the
/// slots are known. Flink's path names an instance's job and subtask: one subtask of every
/// operator shares a slot (slot sharing), so the same job and subtask number is one slot. An
/// instance whose path does not say is taken as a slot of its own.
fn slots(instances: &[Instance]) -> (Vec<Vec<usize>>, bool) {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut known = true;
    for (i, inst) in instances.iter().enumerate() {
        let slot = match flink_slot(inst) {
            Some((job, subtask)) => format!("job {job}, subtask {subtask}"),
            None => {
                known = false;
                instance_id(inst)
            }
        };
        groups.entry(slot).or_default().push(i);
    }
    (groups.into_values().collect(), known)
}

/// The instances' slots, as the budget and the workload read them.
pub(super) fn per_slot(instances: &[Instance]) -> PerSlot {
    let (groups, known) = slots(instances);
    let cfs = |g: &Vec<usize>| {
        g.iter()
            .map(|&i| super::column_family_names(&instances[i].log).len())
            .sum::<usize>()
    };
    let flushed = |g: &Vec<usize>| {
        g.iter()
            .flat_map(|&i| &instances[i].log.flushes)
            .map(|f| f.data_bytes)
            .sum::<u64>()
    };
    let files = |g: &Vec<usize>| {
        g.iter()
            .map(|&i| instances[i].log.files.len())
            .sum::<usize>()
    };
    // The first of equals (max_by_key keeps the last).
    let first_max = |key: &dyn Fn(&Vec<usize>) -> (u64, usize)| {
        groups
            .iter()
            .enumerate()
            .max_by_key(|(n, g)| (key(g), std::cmp::Reverse(*n)))
            .map(|(_, g)| g.clone())
            .unwrap_or_default()
    };
    let fullest = first_max(&|g| (cfs(g) as u64, files(g)));
    let most = cfs(&fullest).max(1);
    // The operators (instances) in that slot, where the slots are known: one operator's states
    // cannot be split.
    let operators = known.then_some(fullest.len());
    let busiest = first_max(&|g| (flushed(g), files(g)));
    let jobs: BTreeSet<String> = instances
        .iter()
        .filter_map(flink_slot)
        .map(|(job, _)| job)
        .collect();
    let several_jobs = (jobs.len() > 1).then(|| {
        format!(
            "the instances are of {} different jobs ({}): one job's directory at a time gives one job's answer",
            jobs.len(),
            jobs.iter().cloned().collect::<Vec<_>>().join(", ")
        )
    });
    let note = (groups.len() > 1).then(|| {
        format!(
            "{} instances in {} slots ({}): each slot has its own WriteBufferManager and cache, so the budget is judged for the slot with the most state column families ({most}), and the workload is the busiest slot's ({})",
            instances.len(),
            groups.len(),
            if known {
                "by their paths: Flink's job and subtask"
            } else {
                "a path without Flink's job and subtask is taken as a slot of its own"
            },
            busiest
                .iter()
                .map(|&i| instances[i].dir.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    });
    let note = match (note, several_jobs) {
        (Some(n), Some(j)) => Some(format!("{n}; {j}")),
        (n, j) => n.or(j),
    };
    PerSlot {
        column_families: most,
        operators,
        busiest,
        note,
    }
}

/// How many column families hold state in one slot (every vertex's, through the REST API), as
/// a LOG's flushed ones would show: each takes a share of the WriteBufferManager. Every native
/// property metric is per column family, so any one names them; with `estimate-num-keys`
/// enabled, an empty one (no writes, no memtable) does not count. Without any per-column-family
/// metric the count is unknown: 1 is assumed, and the note says so (it overstates each one's
/// share of the budget).
pub(super) fn state_column_families(metrics: &NativeMetrics) -> (usize, Option<String>) {
    let keys = metrics.by_column_family("estimate_num_keys");
    let mut per_instance: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for s in &metrics.samples {
        let Some(cf) = s.column_family.as_deref() else {
            continue;
        };
        if cf == "default" || keys.get(cf).is_some_and(|k| *k <= 0.0) {
            continue;
        }
        per_instance.entry(&s.instance).or_default().insert(cf);
    }
    // Through the REST API an instance is a vertex (its subtasks summed): one subtask of each
    // shares a slot (slot sharing), so their column families add up.
    let n = per_instance.values().map(BTreeSet::len).sum::<usize>();
    if n > 0 {
        return (n, None);
    }
    (
        1,
        Some(
            "no per-column-family metric was reported: 1 state column family assumed, which overstates each one's share of the WriteBufferManager (enable e.g. state.backend.rocksdb.metrics.estimate-num-keys)"
                .to_string(),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::NativeMetrics;

    #[test]
    fn state_column_families_are_counted_from_any_per_column_family_metric() {
        let count = |scrape: &str| {
            let mut m = NativeMetrics::default();
            m.add(scrape);
            super::state_column_families(&m)
        };
        // One vertex's metric (the REST API sums its subtasks) for column family `cf`.
        let cf = |metric: &str, cf: &str, vertex: &str, v: f64| {
            format!(
                "flink_taskmanager_job_task_operator_column_family_rocksdb_{metric}{{column_family=\"{cf}\",operator_id=\"{vertex}\"}} {v}\n"
            )
        };
        // estimate-num-keys off (Flink's default): the stop gauges name the column families.
        let stops = ["window_stats", "timer_state", "default"]
            .iter()
            .map(|c| cf("is_write_stopped", c, "op1", 0.0))
            .collect::<String>();
        assert_eq!(count(&stops), (2, None));
        // With it, an empty one (processing-time timers never set) takes no memtable.
        let keys = stops.clone()
            + &cf("estimate_num_keys", "window_stats", "op1", 10.0)
            + &cf("estimate_num_keys", "timer_state", "op1", 0.0);
        assert_eq!(count(&keys), (1, None));
        // A second stateful vertex: one subtask of each shares a slot, and its budget.
        let two = stops.clone() + &cf("is_write_stopped", "dedup_state", "op2", 0.0);
        assert_eq!(count(&two), (3, None));
        // No per-column-family metric at all: 1, said.
        let (n, note) = count(
            "flink_taskmanager_job_task_operator_rocksdb_stall_micros{subtask_index=\"0\"} 5\n",
        );
        assert_eq!(n, 1);
        assert!(note.unwrap().contains("assumed"));
    }
}
