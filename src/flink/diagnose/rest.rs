//! Flink's native RocksDB metrics from a running job, through Flink's REST API (`diagnose DIR
//! --rest URL`): the job (the only running one, or `--job ID`), each of its vertices' RocksDB
//! metric ids (`GET /jobs/:id/vertices/:vid/subtasks/metrics`), and their values summed over
//! the subtasks (`?get=...`). Ids as Flink 1.20.1 serves them: `<operator>.column_family.<cf>
//! .rocksdb_<property>` per column family (`column-family-as-variable: true`),
//! `<operator>.<cf>.rocksdb_<property>` without it, `<operator>.rocksdb_<ticker>` for RocksDB's
//! statistics.

use std::time::Duration;

use serde_json::Value;

use super::metrics::{NativeMetrics, Sample};
use crate::util::http::{self, HttpError};

const TIMEOUT: Duration = Duration::from_secs(10);
/// Metric ids asked for in one request (the URL stays short).
const IDS_PER_REQUEST: usize = 40;

#[derive(Debug, thiserror::Error)]
pub enum RestError {
    // Not a `source`: its text is in the message already.
    #[error("{}", http_message(.0))]
    Http(HttpError),
    #[error("{url}: HTTP {status}: {why}")]
    Status {
        url: String,
        status: u16,
        why: String,
    },
    #[error("{url}: {why}")]
    Answer { url: String, why: String },
}

fn http_message(e: &HttpError) -> String {
    match e {
        HttpError::Url { .. } => e.to_string(),
        e => format!(
            "{e} (is the JobManager running, and is this its REST address, rest.address:rest.port?)"
        ),
    }
}

impl From<HttpError> for RestError {
    fn from(e: HttpError) -> Self {
        RestError::Http(e)
    }
}

/// The job's RocksDB metrics, and what was read (for the report).
#[derive(Debug)]
pub struct RestMetrics {
    pub metrics: NativeMetrics,
    pub flink_version: String,
    pub job_id: String,
    pub job_name: String,
    pub job_state: String,
}

fn get_json(base: &str, path: &str) -> Result<Value, RestError> {
    let r = http::get(base, path, TIMEOUT)?;
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let parsed: Option<Value> = serde_json::from_str(&r.body).ok();
    if r.status != 200 {
        // Flink answers errors as {"errors": ["<exception>: <message>\n\tat ..."]}: its first line.
        let why = parsed
            .as_ref()
            .and_then(|v| v["errors"][0].as_str())
            .and_then(|e| e.lines().next())
            .map(|e| {
                e.rsplit_once("Exception: ")
                    .map_or(e, |(_, m)| m)
                    .to_string()
            })
            .unwrap_or_else(|| r.body.chars().take(200).collect());
        return Err(RestError::Status {
            url,
            status: r.status,
            why,
        });
    }
    parsed.ok_or_else(|| RestError::Answer {
        url,
        why: "the answer is not JSON: is this Flink's REST port?".to_string(),
    })
}

/// A metric id's column family, if any, and its metric in the scrape's spelling
/// (`estimate_num_keys`, `stall_micros`).
fn parse_id(id: &str) -> Option<(Option<String>, String)> {
    let (scope, metric) = id.rsplit_once(".rocksdb_")?;
    let metric = metric.replace('-', "_");
    let column_family = match scope.split_once(".column_family.") {
        Some((_, cf)) => Some(cf.to_string()),
        // `<operator>.<cf>` without the variable; the operator's own statistics have none.
        None => scope.split_once('.').map(|(_, cf)| cf.to_string()),
    };
    Some((column_family, metric))
}

/// Managed memory per slot of the TaskManagers in a `GET /taskmanagers` answer (the smallest,
/// if they differ); None if none is registered.
pub fn managed_per_slot(taskmanagers: &Value) -> Option<u64> {
    taskmanagers["taskmanagers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tm| {
            let managed = tm["memoryConfiguration"]["managedMemory"].as_u64()?;
            let slots = tm["slotsNumber"].as_u64().filter(|n| *n > 0)?;
            Some(managed / slots)
        })
        .min()
}

/// The managed memory per slot the cluster's TaskManagers really have: each may have been
/// started with settings of its own, which `/jobmanager/config` does not show.
pub fn cluster_managed_per_slot(base: &str) -> Result<Option<u64>, RestError> {
    Ok(managed_per_slot(&get_json(base, "/taskmanagers")?))
}

/// The cluster's configuration as its JobManager serves it (`GET /jobmanager/config`:
/// `[{"key", "value"}]`), as `key: value` lines of a Flink configuration file.
pub fn cluster_config(base: &str) -> Result<String, RestError> {
    let answer = get_json(base, "/jobmanager/config")?;
    let entries = answer.as_array().ok_or_else(|| RestError::Answer {
        url: format!("{}/jobmanager/config", base.trim_end_matches('/')),
        why: "not a list of keys and values".to_string(),
    })?;
    Ok(entries
        .iter()
        .filter_map(|e| {
            Some(format!(
                "{}: {}\n",
                e["key"].as_str()?,
                e["value"].as_str()?
            ))
        })
        .collect())
}

/// Reads the RocksDB metrics of `job` (None: the only running job) from the REST API at `base`.
pub fn fetch(base: &str, job: Option<&str>) -> Result<RestMetrics, RestError> {
    let config = get_json(base, "/config")?;
    let flink_version = config["flink-version"]
        .as_str()
        .unwrap_or("unknown")
        .to_string();
    let job_id = match job {
        Some(id) => id.to_string(),
        None => {
            let jobs = get_json(base, "/jobs")?;
            let running: Vec<&str> = jobs["jobs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|j| j["status"] == "RUNNING")
                .filter_map(|j| j["id"].as_str())
                .collect();
            match running.as_slice() {
                [one] => (*one).to_string(),
                [] => {
                    return Err(RestError::Answer {
                        url: format!("{}/jobs", base.trim_end_matches('/')),
                        why: "no job is running: a job's RocksDB metrics exist only while it runs"
                            .to_string(),
                    });
                }
                many => {
                    return Err(RestError::Answer {
                        url: format!("{}/jobs", base.trim_end_matches('/')),
                        why: format!(
                            "{} jobs are running ({}): choose one with --job ID",
                            many.len(),
                            many.join(", ")
                        ),
                    });
                }
            }
        }
    };
    let detail = get_json(base, &format!("/jobs/{job_id}"))?;
    let mut metrics = NativeMetrics::default();
    for vertex in detail["vertices"].as_array().into_iter().flatten() {
        let Some(vid) = vertex["id"].as_str() else {
            continue;
        };
        let path = format!("/jobs/{job_id}/vertices/{vid}/subtasks/metrics");
        let ids: Vec<String> = get_json(base, &path)?
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["id"].as_str())
            .filter(|id| id.contains(".rocksdb_"))
            .map(str::to_string)
            .collect();
        for chunk in ids.chunks(IDS_PER_REQUEST) {
            let values = get_json(base, &format!("{path}?get={}&agg=sum,max", chunk.join(",")))?;
            for m in values.as_array().into_iter().flatten() {
                let (Some(id), Some(sum)) = (m["id"].as_str(), m["sum"].as_f64()) else {
                    continue;
                };
                if let Some((column_family, metric)) = parse_id(id) {
                    metrics.samples.push(Sample {
                        metric,
                        column_family,
                        instance: format!("job_id={job_id},vertex={vid}"),
                        value: sum,
                        max: m["max"].as_f64().unwrap_or(sum),
                    });
                }
            }
        }
    }
    let state = detail["state"].as_str().unwrap_or("unknown").to_string();
    if metrics.samples.is_empty() {
        return Err(RestError::Answer {
            url: format!("{}/jobs/{job_id}", base.trim_end_matches('/')),
            why: format!(
                "the job ({state}) reports no RocksDB metric: switch Flink's on (state.backend.rocksdb.metrics.*, e.g. stall-micros, block-cache-hit, block-cache-miss, estimate-num-keys, with column-family-as-variable: true); Flink reads them every 5 s, the REST API up to 10 s later"
            ),
        });
    }
    Ok(RestMetrics {
        metrics,
        flink_version,
        job_name: detail["name"].as_str().unwrap_or("").to_string(),
        job_id,
        job_state: state,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_id_gives_its_column_family_and_metric() {
        assert_eq!(
            parse_id("frequency.column_family.window-stats.rocksdb_estimate-num-keys"),
            Some((
                Some("window-stats".to_string()),
                "estimate_num_keys".to_string()
            ))
        );
        assert_eq!(
            parse_id(
                "frequency.column_family._timer_state/event_user-timers.rocksdb_num-files-at-level0"
            ),
            Some((
                Some("_timer_state/event_user-timers".to_string()),
                "num_files_at_level0".to_string()
            ))
        );
        assert_eq!(
            parse_id("frequency.rocksdb_stall_micros"),
            Some((None, "stall_micros".to_string()))
        );
        assert_eq!(
            parse_id("frequency.window-stats.rocksdb_is-write-stopped"),
            Some((
                Some("window-stats".to_string()),
                "is_write_stopped".to_string()
            ))
        );
        assert_eq!(parse_id("frequency.numRecordsIn"), None);
    }
}
