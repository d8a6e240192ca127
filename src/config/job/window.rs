//! `kind: window`: Flink's `WindowOperator` with an event-time assigner (tumbling, sliding,
//! session), a window function (reduce, aggregate, process) and allowed lateness.

use serde::{Deserialize, Serialize};

use crate::config::Millis;

/// Which of Flink's event-time window assigners.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AssignerKind {
    /// `TumblingEventTimeWindows.of(size, offset)`.
    Tumbling,
    /// `SlidingEventTimeWindows.of(size, slide, offset)`.
    Sliding,
    /// `EventTimeSessionWindows.withGap(gap)` (merging windows).
    Session,
}

/// What the window keeps and how it is computed when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FunctionKind {
    /// `.reduce(ReduceFunction, ProcessWindowFunction)`: a `ReducingState`, read-modify-written
    /// per element.
    Reduce,
    /// `.aggregate(AggregateFunction, ProcessWindowFunction)`: an `AggregatingState`,
    /// read-modify-written per element.
    Aggregate,
    /// `.process(ProcessWindowFunction)`: a `ListState` of the elements, appended with RocksDB's
    /// merge operator, read whole when the window fires.
    Process,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct WindowSpec {
    pub assigner: AssignerKind,
    /// Window length (tumbling, sliding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Millis>,
    /// Distance between window starts (sliding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slide: Option<Millis>,
    /// Session gap (session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap: Option<Millis>,
    /// Window start offset (tumbling, sliding); default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<Millis>,
    pub function: FunctionKind,
    /// `.allowedLateness(...)`; default 0.
    #[serde(default = "zero", skip_serializing_if = "is_zero")]
    pub allowed_lateness: Millis,
    /// `.evictor(...)`: Flink's `EvictingWindowOperator` (the window keeps every element).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evictor: Option<EvictorSpec>,
}

/// An evictor: `count: N` is `CountEvictor.of(N)` (keep the last N elements when the window
/// fires).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct EvictorSpec {
    pub count: u64,
}

fn zero() -> Millis {
    Millis(0)
}

fn is_zero(m: &Millis) -> bool {
    m.0 == 0
}

/// A validated assigner, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assigner {
    Tumbling { size: i64, offset: i64 },
    Sliding { size: i64, slide: i64, offset: i64 },
    Session { gap: i64 },
}

/// Event-time spans above this (about 292 thousand years) are refused: window arithmetic stays
/// far from `i64` overflow.
const MAX_SPAN_MS: u64 = 1 << 53;

impl WindowSpec {
    /// The result slots: per key, over every window result emitted so far.
    pub fn result_labels(&self) -> Vec<String> {
        ["fired", "elements", "digest"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    pub fn validate(&self) -> Result<(), String> {
        if let Some(e) = self.evictor
            && !(1..=i64::MAX as u64).contains(&e.count)
        {
            return Err(format!(
                "job.evictor.count is {} but must be at least 1",
                e.count
            ));
        }
        self.assigner().map(|_| ())
    }

    /// `CountEvictor`'s count, when the window has an evictor.
    pub fn evictor_count(&self) -> Option<i64> {
        self.evictor.map(|e| e.count.min(i64::MAX as u64) as i64)
    }

    /// The assigner with its parameters, or a message naming the field at fault.
    pub fn assigner(&self) -> Result<Assigner, String> {
        let name = match self.assigner {
            AssignerKind::Tumbling => "tumbling",
            AssignerKind::Sliding => "sliding",
            AssignerKind::Session => "session",
        };
        let field = |value: Option<Millis>, field: &str, wanted: bool| -> Result<i64, String> {
            match (value, wanted) {
                (None, true) => Err(format!(
                    "job.{field} is required for assigner '{name}' (a duration such as 10m)"
                )),
                (Some(v), false) => Err(format!(
                    "job.{field} ({v}) does not apply to assigner '{name}'; {}",
                    match self.assigner {
                        AssignerKind::Tumbling => "tumbling takes size and offset",
                        AssignerKind::Sliding => "sliding takes size, slide and offset",
                        AssignerKind::Session => "session takes gap",
                    }
                )),
                (None, false) => Ok(0),
                (Some(v), true) if v.0 == 0 => Err(format!("job.{field} must be greater than 0")),
                (Some(v), true) if v.0 > MAX_SPAN_MS => {
                    Err(format!("job.{field} ({v}) is too large"))
                }
                (Some(v), true) => Ok(v.0 as i64),
            }
        };
        if self.allowed_lateness.0 > MAX_SPAN_MS {
            return Err(format!(
                "job.allowed-lateness ({}) is too large",
                self.allowed_lateness
            ));
        }
        let offset = |bound: i64, bound_field: &str| -> Result<i64, String> {
            match self.offset {
                Some(o) if o.0 as i64 >= bound || o.0 > MAX_SPAN_MS => Err(format!(
                    "job.offset ({o}) must be less than job.{bound_field} ({})",
                    Millis(bound as u64)
                )),
                Some(o) => Ok(o.0 as i64),
                None => Ok(0),
            }
        };
        match self.assigner {
            AssignerKind::Tumbling => {
                let size = field(self.size, "size", true)?;
                field(self.slide, "slide", false)?;
                field(self.gap, "gap", false)?;
                let offset = offset(size, "size")?;
                Ok(Assigner::Tumbling { size, offset })
            }
            AssignerKind::Sliding => {
                let size = field(self.size, "size", true)?;
                let slide = field(self.slide, "slide", true)?;
                field(self.gap, "gap", false)?;
                if slide > size {
                    return Err(format!(
                        "job.slide ({}) must not exceed job.size ({}): windows would leave gaps \
                         whose elements no window keeps",
                        Millis(slide as u64),
                        Millis(size as u64)
                    ));
                }
                let offset = offset(slide, "slide")?;
                Ok(Assigner::Sliding {
                    size,
                    slide,
                    offset,
                })
            }
            AssignerKind::Session => {
                let gap = field(self.gap, "gap", true)?;
                field(self.size, "size", false)?;
                field(self.slide, "slide", false)?;
                if let Some(o) = self.offset {
                    return Err(format!(
                        "job.offset ({o}) does not apply to assigner 'session'; session takes gap"
                    ));
                }
                Ok(Assigner::Session { gap })
            }
        }
    }

    pub fn allowed_lateness_ms(&self) -> i64 {
        // validate() bounds it far below i64::MAX.
        self.allowed_lateness.0.min(MAX_SPAN_MS) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<WindowSpec, String> {
        let spec: WindowSpec = serde_norway::from_str(yaml).map_err(|e| e.to_string())?;
        spec.validate()?;
        Ok(spec)
    }

    #[test]
    fn valid_specs_resolve_their_assigner() {
        let s = parse("assigner: sliding\nsize: 10m\nslide: 1m\nfunction: aggregate\n").unwrap();
        assert_eq!(
            s.assigner().unwrap(),
            Assigner::Sliding {
                size: 600_000,
                slide: 60_000,
                offset: 0
            }
        );
        assert_eq!(s.allowed_lateness_ms(), 0);
        let s = parse("assigner: session\ngap: 30m\nfunction: process\nallowed-lateness: 1m\n")
            .unwrap();
        assert_eq!(s.assigner().unwrap(), Assigner::Session { gap: 1_800_000 });
        assert_eq!(s.allowed_lateness_ms(), 60_000);
        let s = parse("assigner: tumbling\nsize: 1h\noffset: 15m\nfunction: reduce\n").unwrap();
        assert_eq!(
            s.assigner().unwrap(),
            Assigner::Tumbling {
                size: 3_600_000,
                offset: 900_000
            }
        );
        assert_eq!(s.result_labels(), ["fired", "elements", "digest"]);
    }

    #[test]
    fn bad_specs_name_the_field() {
        for (yaml, expected) in [
            (
                "assigner: sliding\nsize: 10m\nfunction: reduce\n",
                "job.slide is required for assigner 'sliding'",
            ),
            (
                "assigner: sliding\nsize: 1m\nslide: 2m\nfunction: reduce\n",
                "job.slide (2m) must not exceed job.size (1m)",
            ),
            (
                "assigner: tumbling\nfunction: reduce\n",
                "job.size is required for assigner 'tumbling'",
            ),
            (
                "assigner: tumbling\nsize: 0s\nfunction: reduce\n",
                "job.size must be greater than 0",
            ),
            (
                "assigner: tumbling\nsize: 5m\noffset: 5m\nfunction: reduce\n",
                "job.offset (5m) must be less than job.size (5m)",
            ),
            (
                "assigner: session\nfunction: process\n",
                "job.gap is required for assigner 'session'",
            ),
            (
                "assigner: session\ngap: 5m\nsize: 5m\nfunction: process\n",
                "job.size (5m) does not apply to assigner 'session'",
            ),
            (
                "assigner: tumbling\nsize: 5m\ngap: 5m\nfunction: process\n",
                "job.gap (5m) does not apply to assigner 'tumbling'",
            ),
            (
                "assigner: hopping\nsize: 5m\nfunction: reduce\n",
                "unknown variant `hopping`",
            ),
            (
                "assigner: tumbling\nsize: 5m\nfunction: fold\n",
                "unknown variant `fold`",
            ),
            (
                "assigner: tumbling\nsize: 5m\nfunction: reduce\nlateness: 1m\n",
                "unknown field `lateness`",
            ),
        ] {
            let err = parse(yaml).unwrap_err();
            assert!(err.contains(expected), "{yaml:?}: got '{err}'");
        }
    }

    #[test]
    fn a_workload_with_a_bad_window_names_its_file_and_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let shipped = include_str!("../../../workloads/sliding-aggregate.yaml");
        for (from, to, expected) in [
            (
                "  slide: 1m\n",
                "  slide: 20m\n",
                "job.slide (20m) must not exceed job.size (10m)",
            ),
            (
                "  slide: 1m\n",
                "",
                "job.slide is required for assigner 'sliding'",
            ),
            (
                "  size: 10m\n",
                "  size: 10m\n  gap: 1m\n",
                "job.gap (1m) does not apply",
            ),
        ] {
            let path = dir.path().join("bad.yaml");
            std::fs::write(&path, shipped.replace(from, to)).unwrap();
            let err = crate::config::Workload::load(path.to_str().unwrap())
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("bad.yaml") && err.contains(expected),
                "got '{err}'"
            );
        }
    }
}
