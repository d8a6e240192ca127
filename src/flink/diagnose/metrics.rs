//! Flink's native RocksDB metrics as a Prometheus scrape (`state.backend.rocksdb.metrics.*`
//! through Flink's PrometheusReporter): `flink_..._rocksdb_<metric>{labels} value` lines, with
//! the column family as a label (`state.backend.rocksdb.metrics.column-family-as-variable`) or
//! in the name.

use std::collections::BTreeMap;

/// One sample of a RocksDB metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The metric after `rocksdb_`, with underscores (`estimate_num_keys`, `block_cache_hit`).
    pub metric: String,
    /// The column family, for per-column-family properties.
    pub column_family: Option<String>,
    /// The subtask (and operator) it came from: the labels other than the column family.
    pub instance: String,
    pub value: f64,
    /// The largest of the subtasks' values, where `value` is a sum over them (Flink's REST
    /// API aggregates); `value` itself for one subtask's sample.
    pub max: f64,
}

/// Every RocksDB sample of one or more scrapes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NativeMetrics {
    pub samples: Vec<Sample>,
    pub files: Vec<std::path::PathBuf>,
}

/// `a="x",b="y"` -> pairs (values unescaped for `\"` and `\\`).
fn labels(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some((name, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, next)) = chars.next() {
                        value.push(next);
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        out.push((name.trim_start_matches(',').trim().to_string(), value));
        rest = &after[end..];
    }
    out
}

impl NativeMetrics {
    /// Adds one scrape's text.
    pub fn add(&mut self, text: &str) {
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, labels_text, rest) = match line.split_once('{') {
                Some((name, after)) => match after.rsplit_once('}') {
                    Some((l, rest)) => (name, l, rest),
                    None => continue,
                },
                None => match line.split_once(' ') {
                    Some((name, rest)) => (name, "", rest),
                    None => continue,
                },
            };
            let Some(at) = name.find("rocksdb_") else {
                continue;
            };
            let Some(value) = rest
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
            else {
                continue;
            };
            let pairs = labels(labels_text);
            // Without the column family as a label, Flink puts it in the name, before rocksdb.
            let in_name = name[..at]
                .trim_end_matches('_')
                .rsplit_once("_operator_")
                .map(|(_, cf)| cf.to_string())
                .filter(|cf| !cf.is_empty());
            let column_family = pairs
                .iter()
                .find(|(k, _)| k == "column_family")
                .map(|(_, v)| v.clone())
                .or(in_name);
            let instance = pairs
                .iter()
                .filter(|(k, _)| k != "column_family")
                .filter(|(k, _)| {
                    matches!(
                        k.as_str(),
                        "tm_id" | "job_id" | "task_id" | "subtask_index" | "operator_id"
                    )
                })
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",");
            self.samples.push(Sample {
                metric: name[at + "rocksdb_".len()..].to_string(),
                column_family,
                instance,
                value,
                max: value,
            });
        }
    }

    /// The sum of `metric` over every sample.
    pub fn sum(&self, metric: &str) -> Option<f64> {
        let mut found = false;
        let total = self
            .samples
            .iter()
            .filter(|s| s.metric == metric)
            .inspect(|_| found = true)
            .map(|s| s.value)
            .sum();
        found.then_some(total)
    }

    /// `metric` summed per column family.
    pub fn by_column_family(&self, metric: &str) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for s in self.samples.iter().filter(|s| s.metric == metric) {
            if let Some(cf) = &s.column_family {
                *out.entry(cf.clone()).or_default() += s.value;
            }
        }
        out
    }

    /// The largest value one subtask's column family (or instance) reported for `metric`.
    pub fn max_of_one(&self, metric: &str) -> Option<f64> {
        self.samples
            .iter()
            .filter(|s| s.metric == metric)
            .map(|s| s.max)
            .reduce(f64::max)
    }

    /// Block cache hits / (hits + misses), when both were reported.
    pub fn cache_hit_rate(&self) -> Option<(f64, f64, f64)> {
        let (hit, miss) = (self.sum("block_cache_hit")?, self.sum("block_cache_miss")?);
        (hit + miss > 0.0).then(|| (hit / (hit + miss), hit, miss))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names and labels as Flink 1.20.1's PrometheusReporter served them for the parity job
    /// (`column-family-as-variable: true`; values made up here, real ones in tests/diagnose.rs).
    #[test]
    fn flinks_lines_give_metric_column_family_and_subtask() {
        let labels = |cf: &str| {
            format!(
                "{{job_id=\"8d85\",{cf}task_id=\"90be\",task_attempt_id=\"2166_0_0\",host=\"\",operator_id=\"90be\",operator_name=\"frequency\",task_name=\"frequency____Sink:_Writer\",task_attempt_num=\"0\",job_name=\"statebench_parity\",tm_id=\"t1\",subtask_index=\"0\",}}"
            )
        };
        let cf = |name: &str| format!("column_family=\"{name}\",");
        let mut m = NativeMetrics::default();
        m.add(&format!(
            "# HELP flink_taskmanager_job_task_operator_column_family_rocksdb_estimate_num_keys estimate-num-keys (scope: taskmanager_job_task_operator_column_family)\n\
             # TYPE flink_taskmanager_job_task_operator_column_family_rocksdb_estimate_num_keys gauge\n\
             flink_taskmanager_job_task_operator_column_family_rocksdb_estimate_num_keys{} 1234.0\n\
             flink_taskmanager_job_task_operator_column_family_rocksdb_estimate_num_keys{} 10.0\n\
             flink_taskmanager_job_task_operator_rocksdb_block_cache_hit{} 90.0\n\
             flink_taskmanager_job_task_operator_rocksdb_block_cache_miss{} 10.0\n\
             flink_taskmanager_job_task_operator_window_stats_rocksdb_is_write_stopped{} 1.0\n\
             flink_jobmanager_numRunningJobs 1.0\n",
            labels(&cf("window_stats")),
            labels(&cf("timer_state")),
            labels(""),
            labels(""),
            labels(""),
        ));
        assert_eq!(m.samples.len(), 5);
        assert_eq!(
            m.by_column_family("estimate_num_keys")["window_stats"],
            1234.0
        );
        assert_eq!(m.sum("estimate_num_keys"), Some(1244.0));
        assert_eq!(m.cache_hit_rate(), Some((0.9, 90.0, 10.0)));
        assert_eq!(
            m.samples[0].instance,
            "job_id=8d85,task_id=90be,operator_id=90be,tm_id=t1,subtask_index=0"
        );
        // Without the column family as a label, Flink puts it in the name.
        assert_eq!(m.by_column_family("is_write_stopped")["window_stats"], 1.0);
        assert_eq!(m.sum("stall_micros"), None);
    }
}
