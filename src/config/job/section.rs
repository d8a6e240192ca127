//! The `job:` section as the workload file spells it: one operator (a mapping, `kind: ...`) or
//! a chain of them (a list), and what the section's errors say (its field, `job[i].<field>`,
//! and its line).
//!
//! A chain is Flink's `source -> keyBy -> op0 -> keyBy -> op1 -> ...` in one slot: operator 0
//! reads the source, operator i + 1 what operator i emits.

use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::OperatorSpec;
use crate::config::ConfigError;

/// The longest chain.
pub const MAX_OPERATORS: usize = 4;

/// The job's operators, in chain order (one for a job of a single operator).
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    /// Never empty: built by [`JobSpec::one`], [`JobSpec::chain`] or the deserializer, which
    /// all refuse an empty list.
    operators: Vec<OperatorSpec>,
}

impl JobSpec {
    /// A job of one operator.
    pub fn one(operator: OperatorSpec) -> JobSpec {
        JobSpec {
            operators: vec![operator],
        }
    }

    /// A chain of `operators` (None: an empty list).
    pub fn chain(operators: Vec<OperatorSpec>) -> Option<JobSpec> {
        (!operators.is_empty()).then_some(JobSpec { operators })
    }

    /// The operators, in chain order (at least one).
    pub fn operators(&self) -> &[OperatorSpec] {
        &self.operators
    }

    /// The operators, for edits (the chain's length stays).
    pub fn operators_mut(&mut self) -> &mut [OperatorSpec] {
        &mut self.operators
    }

    /// The operator that reads the source.
    pub fn first(&self) -> &OperatorSpec {
        // Invariant: `operators` is never empty (see the field).
        &self.operators[0]
    }

    /// The operator that reads the source, for edits.
    pub fn first_mut(&mut self) -> &mut OperatorSpec {
        // Invariant: `operators` is never empty (see the field).
        &mut self.operators[0]
    }

    /// Whether the job chains more than one operator.
    pub fn is_chain(&self) -> bool {
        self.operators.len() > 1
    }
}

impl From<OperatorSpec> for JobSpec {
    fn from(operator: OperatorSpec) -> JobSpec {
        JobSpec::one(operator)
    }
}

impl Serialize for JobSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // One operator keeps the mapping form (reports and saved workloads unchanged).
        match self.operators.as_slice() {
            [one] => one.serialize(serializer),
            many => many.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for JobSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Section;
        impl<'de> Visitor<'de> for Section {
            type Value = JobSpec;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "one operator (a mapping with 'kind') or a chain (a list of up to 4 operators)",
                )
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<JobSpec, A::Error> {
                let one =
                    OperatorSpec::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(JobSpec::one(one))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<JobSpec, A::Error> {
                let mut operators = Vec::new();
                while let Some(op) = seq.next_element::<OperatorSpec>()? {
                    operators.push(op);
                }
                JobSpec::chain(operators).ok_or_else(|| {
                    serde::de::Error::custom(
                        "'job' is an empty list; give one operator or a chain of 1 to 4",
                    )
                })
            }
        }
        deserializer.deserialize_any(Section)
    }
}

/// One thing wrong with the section: operator `index`'s `field` (None: the section itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub index: Option<usize>,
    pub field: String,
    pub message: String,
}

impl Problem {
    /// The field's path as the file spells it: `job`, `job.kind` (one operator) or
    /// `job[1].kind` (a chain).
    pub fn path(&self, chain: bool) -> String {
        match (self.index, chain) {
            (None, _) => "job".to_string(),
            (Some(_), false) => format!("job.{}", self.field),
            (Some(i), true) => format!("job[{i}].{}", self.field),
        }
    }
}

/// What is wrong with the section's chain and with each of its operators' parameters (each
/// kind's own `validate`, its messages naming `job[i].<field>` in a chain).
pub fn problems(job: &JobSpec) -> Vec<Problem> {
    let chain = job.is_chain();
    let mut problems = Vec::new();
    if job.operators.len() > MAX_OPERATORS {
        problems.push(Problem {
            index: Some(MAX_OPERATORS),
            field: "kind".to_string(),
            message: format!(
                "a chain has at most {MAX_OPERATORS} operators, this one {}",
                job.operators.len()
            ),
        });
    }
    for (i, op) in job.operators.iter().enumerate() {
        let at = |field: &str, message: String| Problem {
            index: Some(i),
            field: field.to_string(),
            message,
        };
        if chain && matches!(op, OperatorSpec::Frequency(_)) {
            problems.push(at(
                "kind",
                format!("job[{i}].kind: frequency runs only as the job's only operator"),
            ));
            continue;
        }
        if i > 0 && op.two_inputs() {
            problems.push(at(
                "kind",
                format!(
                    "job[{i}].kind: interval-join runs only as the chain's first operator \
                     (job[0]): it reads the source's two inputs"
                ),
            ));
            continue;
        }
        if let Err(message) = op.validate() {
            let message = if chain {
                message.replace("job.", &format!("job[{i}]."))
            } else {
                message
            };
            let field = field_named(&message).unwrap_or_else(|| "kind".to_string());
            problems.push(at(&field, message));
        }
    }
    problems
}

/// The first field a message names (`job.lower ...` or `job[1].gap ...`), without the path.
fn field_named(message: &str) -> Option<String> {
    let at = message.find("job.").map(|a| a + 4).or_else(|| {
        let start = message.find("job[")?;
        message[start..].find("].").map(|e| start + e + 2)
    })?;
    let field: String = message[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    (!field.is_empty()).then_some(field)
}

/// The line ranges (0-based, end exclusive) of the section: the `job:` line and, per operator,
/// the lines it spans (a list's items; the mapping's body for one operator). None without a
/// block `job:` section.
fn layout(text: &str) -> Option<(usize, Vec<std::ops::Range<usize>>)> {
    let lines: Vec<&str> = text.lines().collect();
    let job = lines.iter().position(|l| l.starts_with("job:"))?;
    let mut items: Vec<std::ops::Range<usize>> = Vec::new();
    // (indentation, whether the section is a list)
    let mut shape: Option<(usize, bool)> = None;
    for (i, line) in lines.iter().enumerate().skip(job + 1) {
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let indent = line.len() - t.len();
        let dash = t == "-" || t.starts_with("- ");
        match shape {
            None => {
                if indent == 0 && !dash {
                    break;
                }
                shape = Some((indent, dash));
                items.push(i..i + 1);
            }
            Some((n, list)) => {
                if indent < n || (indent == n && list && !dash) || (indent == 0 && !dash) {
                    break;
                }
                match items.last_mut() {
                    Some(last) if !(list && indent == n) => last.end = i + 1,
                    _ => items.push(i..i + 1),
                }
            }
        }
    }
    Some((job, items))
}

/// The line (1-based) of operator `index`'s `field` in `text`: the field's own line inside the
/// operator, else the operator's first line, else the `job:` line (a flow-style section).
pub fn line_of(text: &str, index: Option<usize>, field: &str) -> usize {
    let Some((job, items)) = layout(text) else {
        return 0;
    };
    let Some(range) = index.and_then(|i| items.get(i)).cloned() else {
        return job + 1;
    };
    let own = text
        .lines()
        .enumerate()
        .skip(range.start)
        .take(range.len())
        .find(|(_, l)| {
            !field.is_empty()
                && l.trim_start()
                    .trim_start_matches("- ")
                    .starts_with(&format!("{field}:"))
        })
        .map(|(i, _)| i);
    own.unwrap_or(range.start) + 1
}

/// A chain's first problem as an error that names `job[i].<field>` and its line (a single
/// operator's problems stay the workload's validation messages, as before chains).
pub fn chain_error(text: &str, origin: &str, job: &JobSpec) -> Option<ConfigError> {
    if !job.is_chain() {
        return None;
    }
    let problem = problems(job).into_iter().next()?;
    let path = problem.path(true);
    let message = problem
        .message
        .strip_prefix(&format!("{path}: "))
        .unwrap_or(&problem.message)
        .to_string();
    Some(ConfigError::Parse {
        origin: origin.to_string(),
        line: line_of(text, problem.index, &problem.field),
        key: Some(path),
        message,
    })
}

/// serde cannot say where inside `job:` (an internally tagged section) a key is missing or
/// wrong: it points at the file's first line. A `job:` section that fails on its own is that
/// error, named after `job` (`job[i]` in a chain) and placed at its line.
pub fn job_error(text: &str, error: ConfigError) -> ConfigError {
    let Some((job_line, _)) = layout(text) else {
        return error;
    };
    // (operator index in a chain, serde's message without its location)
    let fails_alone = || -> Option<(Option<usize>, String)> {
        let value = serde_norway::from_str::<serde_norway::Value>(text).ok()?;
        let section = value.get("job")?;
        let alone = |v: &serde_norway::Value| -> Option<String> {
            let text = serde_norway::to_string(v).ok()?;
            let e = serde_norway::from_str::<OperatorSpec>(&text).err()?;
            let full = e.to_string();
            Some(full.split(" at line ").next().unwrap_or(&full).to_string())
        };
        match section.as_sequence() {
            Some(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, item)| alone(item).map(|m| (Some(i), m))),
            None => alone(section).map(|m| (None, m)),
        }
    };
    match error {
        ConfigError::Parse { origin, .. } if let Some((index, message)) = fails_alone() => {
            let (line, key) = match index {
                Some(i) => (line_of(text, Some(i), ""), format!("job[{i}]")),
                None => (job_line + 1, "job".to_string()),
            };
            ConfigError::Parse {
                origin,
                line,
                key: Some(key),
                message: format!("in the job section: {message}"),
            }
        }
        ConfigError::UnknownKey {
            origin,
            key,
            suggestion,
            ..
        } if let Some((index, _)) = fails_alone() => {
            // The unknown key's own line inside the job section (inside its operator).
            let line = match index {
                Some(i) => line_of(text, Some(i), &key),
                None => text
                    .lines()
                    .enumerate()
                    .skip(job_line)
                    .find(|(_, l)| {
                        l.trim_start()
                            .trim_start_matches("- ")
                            .starts_with(&format!("{key}:"))
                    })
                    .map_or(job_line + 1, |(i, _)| i + 1),
            };
            ConfigError::UnknownKey {
                origin,
                line,
                key,
                suggestion,
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAIN: &str = "keys:\n  count: 10\njob:\n  - kind: dedup\n    ttl: 1h\n\n  # then\n  - kind: window\n    assigner: session\n    gap: 30m\n    function: aggregate\nevents: 10\n";

    #[test]
    fn a_list_is_a_chain_and_a_mapping_one_operator() {
        #[derive(Deserialize)]
        struct W {
            job: JobSpec,
        }
        let w: W = serde_norway::from_str(CHAIN.split("events").next().unwrap()).unwrap();
        assert_eq!(w.job.operators().len(), 2);
        assert_eq!(w.job.first().kind(), "dedup");
        assert_eq!(w.job.operators()[1].kind(), "window");
        let one: W = serde_norway::from_str("job:\n  kind: dedup\n").unwrap();
        assert!(!one.job.is_chain());
        // One operator serializes as a mapping, a chain as a list.
        let text = serde_norway::to_string(&one.job).unwrap();
        assert!(text.starts_with("kind: dedup"), "{text}");
        let text = serde_norway::to_string(&w.job).unwrap();
        assert!(text.starts_with("- kind: dedup"), "{text}");
    }

    #[test]
    fn lines_of_a_chains_operators_and_fields() {
        assert_eq!(line_of(CHAIN, Some(0), ""), 4);
        assert_eq!(line_of(CHAIN, Some(0), "ttl"), 5);
        assert_eq!(line_of(CHAIN, Some(1), ""), 8);
        assert_eq!(line_of(CHAIN, Some(1), "function"), 11);
        assert_eq!(line_of(CHAIN, Some(1), "ttl"), 8);
        assert_eq!(line_of(CHAIN, None, ""), 3);
        // A list at column 0 under `job:`.
        let flat = "job:\n- kind: dedup\n- kind: aggregate\n  ttl: 1h\nevents: 1\n";
        assert_eq!(line_of(flat, Some(1), "ttl"), 4);
        assert_eq!(line_of(flat, Some(2), ""), 1);
    }

    #[test]
    fn field_named_reads_the_first_path() {
        assert_eq!(
            field_named("job.lower (1s) must ...").as_deref(),
            Some("lower")
        );
        assert_eq!(
            field_named("job[2].assigner.gap must ...").as_deref(),
            Some("assigner")
        );
        assert_eq!(field_named("nothing here"), None);
    }
}
