//! One answer per knob. Rules propose fixes on their own; this picks, across every finding of a
//! report, one value for each profile key, cheapest fix first, and says in the finding that
//! gave way what it gave up and why.
//!
//! Order: the most severe finding first (its harm was measured); at equal severity the fix that
//! costs least (table and layout options, then write buffers and compaction, then memory); then
//! the rules' own order (`RULES`: a cause before its symptoms, the WriteBufferManager's budget
//! before what its forced flushes leave behind). A knob keeps the first value given to it; a
//! later finding's recommendation or alternative that sets it to another value is overruled.
//! A finding whose recommendation is overruled takes its first alternative that agrees with what
//! was chosen, or is left with no fix (its diagnosis stands).

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Change, Finding, Fix, Severity};

/// What a fix costs, cheapest first: what the issue calls "cheapest fix first".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CostClass {
    /// Table and layout options: filters, block sizes, index and filter partitioning and cache
    /// priority, compression. No memory, no extra writes.
    Table,
    /// Write buffers, level sizing, background threads: more flushes or compactions perhaps,
    /// no memory.
    WritePath,
    /// A change to the job, not the profile (its function, serializer, TTL cleanup).
    Job,
    /// More managed memory (or an unmanaged cache larger).
    Memory,
}

impl CostClass {
    /// The class of one profile key.
    pub fn of_key(key: &str) -> CostClass {
        match key {
            "memory.managed-size" | "block.cache-size" => CostClass::Memory,
            "use-bloom-filter"
            | "bloom-filter.bits-per-key"
            | "block.blocksize"
            | "block.metadata-blocksize"
            | "memory.partitioned-index-filters"
            | "memory.high-prio-pool-ratio"
            | "compression.per.level" => CostClass::Table,
            _ => CostClass::WritePath,
        }
    }

    /// The class of a set of changes: its most expensive key; a fix with managed memory is a
    /// memory fix whatever its keys; no changes at all is a change to the job.
    pub fn of(changes: &[Change], memory_cost: u64) -> CostClass {
        if memory_cost > 0 {
            return CostClass::Memory;
        }
        changes
            .iter()
            .map(|c| CostClass::of_key(&c.key))
            .max()
            .unwrap_or(CostClass::Job)
    }

    pub fn label(self) -> &'static str {
        match self {
            CostClass::Table => "a table option, no memory",
            CostClass::WritePath => "write path, no memory",
            CostClass::Job => "a change to the job",
            CostClass::Memory => "more memory",
        }
    }
}

/// A proposal the resolver turned down: the changes, which finding's value won, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overruled {
    pub changes: Vec<Change>,
    /// Whether it was the finding's recommendation (else one of its alternatives).
    pub was_recommendation: bool,
    /// The rule whose value for the knob stands.
    pub by: &'static str,
    pub reason: String,
}

/// Who set a knob first, and why that finding came first.
struct Chosen {
    value: String,
    /// Set by one of the finding's alternatives, not its recommendation.
    alternative: bool,
    by: &'static str,
    severity: Severity,
    cost: CostClass,
}

/// The order findings are resolved (and reported) in: severity, then cost, then rule order.
fn rank(f: &Finding, rule_order: &[&str]) -> (std::cmp::Reverse<Severity>, CostClass, usize) {
    let position = rule_order
        .iter()
        .position(|id| *id == f.id)
        .unwrap_or(usize::MAX);
    (std::cmp::Reverse(f.severity), f.cost_class(), position)
}

/// Resolves `findings` in place: sorted most severe and cheapest first, one value per knob.
/// Recommendations bind first, in that order; then alternatives, in that order. A finding's
/// alternatives may differ from its own recommendation (they are its ranked "or" list), never
/// from another finding's.
pub fn resolve(findings: &mut [Finding], rule_order: &[&str]) {
    findings.sort_by_key(|f| rank(f, rule_order));
    let mut chosen: BTreeMap<String, Chosen> = BTreeMap::new();
    for f in findings.iter_mut() {
        if let Some(key) = first_conflict(&f.recommendation, &chosen, f.id) {
            let winner = &chosen[&key];
            let reason = reason(winner, &key, (f.severity, false), f.cost_class());
            f.overruled.push(Overruled {
                changes: std::mem::take(&mut f.recommendation),
                was_recommendation: true,
                by: winner.by,
                reason,
            });
            // The first alternative that agrees with what stands takes its place.
            let promoted = f.alternatives.iter().position(|alt| {
                !alt.changes.is_empty() && first_conflict(&alt.changes, &chosen, f.id).is_none()
            });
            match promoted {
                Some(i) => {
                    let Fix {
                        changes,
                        memory_cost,
                        effect,
                    } = f.alternatives.remove(i);
                    f.recommendation = changes;
                    f.memory_cost = memory_cost;
                    f.effect = Some(effect);
                }
                None => {
                    f.memory_cost = 0;
                    f.effect = None;
                }
            }
        }
        let cost = f.cost_class();
        for c in &f.recommendation {
            stand(&mut chosen, c, (f.id, false), f.severity, cost);
        }
    }
    for f in findings.iter_mut() {
        let mut kept = Vec::with_capacity(f.alternatives.len());
        for alt in std::mem::take(&mut f.alternatives) {
            let cost = CostClass::of(&alt.changes, alt.memory_cost);
            match first_conflict(&alt.changes, &chosen, f.id) {
                Some(key) => {
                    let winner = &chosen[&key];
                    f.overruled.push(Overruled {
                        reason: reason(winner, &key, (f.severity, true), cost),
                        by: winner.by,
                        changes: alt.changes,
                        was_recommendation: false,
                    });
                }
                None => {
                    for c in &alt.changes {
                        stand(&mut chosen, c, (f.id, true), f.severity, cost);
                    }
                    kept.push(alt);
                }
            }
        }
        f.alternatives = kept;
    }
}

/// `c`'s value stands for its key unless one already does.
fn stand(
    chosen: &mut BTreeMap<String, Chosen>,
    c: &Change,
    (by, alternative): (&'static str, bool),
    severity: Severity,
    cost: CostClass,
) {
    chosen.entry(c.key.clone()).or_insert_with(|| Chosen {
        value: c.value.clone(),
        alternative,
        by,
        severity,
        cost,
    });
}

/// The first key of `changes` that another finding than `own` already gives another value.
fn first_conflict(
    changes: &[Change],
    chosen: &BTreeMap<String, Chosen>,
    own: &str,
) -> Option<String> {
    changes
        .iter()
        .find(|c| {
            chosen
                .get(&c.key)
                .is_some_and(|w| w.by != own && w.value != c.value)
        })
        .map(|c| c.key.clone())
}

fn reason(
    winner: &Chosen,
    key: &str,
    (severity, alternative): (Severity, bool),
    cost: CostClass,
) -> String {
    let sev = |s: Severity| format!("{s:?}").to_lowercase();
    let why = if alternative && !winner.alternative {
        "a recommendation stands before any finding's alternatives".to_string()
    } else if winner.severity > severity {
        format!(
            "its harm is measured as {}, this finding's as {}",
            sev(winner.severity),
            sev(severity)
        )
    } else if winner.cost < cost {
        format!(
            "it is the cheaper fix ({} against {})",
            winner.cost.label(),
            cost.label()
        )
    } else {
        "it comes first in the rules' order (a cause before the symptoms it leaves)".to_string()
    };
    let verb = if winner.alternative { "offers" } else { "sets" };
    format!("{} {verb} {key}: {} ({why})", winner.by, winner.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(
        id: &'static str,
        severity: Severity,
        rec: &[(&str, &str)],
        alts: &[&[(&str, &str)]],
    ) -> Finding {
        let changes = |c: &[(&str, &str)]| c.iter().map(|(k, v)| Change::new(k, v)).collect();
        Finding {
            id,
            severity,
            diagnosis: String::new(),
            evidence: Vec::new(),
            from_secs: 0.0,
            to_secs: 0.0,
            recommendation: changes(rec),
            memory_cost: 0,
            job_changes: Vec::new(),
            note: None,
            effect: Some(format!("{id} effect")),
            alternatives: alts
                .iter()
                .map(|a| Fix {
                    changes: changes(a),
                    memory_cost: 0,
                    effect: "alt".to_string(),
                })
                .collect(),
            cost: None,
            overruled: Vec::new(),
        }
    }

    /// Every knob's values over the findings' recommendations and alternatives, across findings.
    fn values_per_knob(findings: &[Finding]) -> BTreeMap<String, Vec<(&'static str, String)>> {
        let mut out: BTreeMap<String, Vec<(&'static str, String)>> = BTreeMap::new();
        for f in findings {
            let mut mine: BTreeMap<String, String> = BTreeMap::new();
            for c in f
                .recommendation
                .iter()
                .chain(f.alternatives.iter().flat_map(|a| &a.changes))
            {
                mine.entry(c.key.clone()).or_insert_with(|| c.value.clone());
            }
            for (k, v) in mine {
                out.entry(k).or_default().push((f.id, v));
            }
        }
        out
    }

    const ORDER: &[&str] = &["wbm-budget", "iterator-tombstones"];

    #[test]
    fn the_join_report_gives_writebuffer_size_one_value_and_names_the_one_it_overruled() {
        // The orders x payments join: wbm-budget's 28mb and iterator-tombstones' 1mb, both info.
        let mut fs = vec![
            finding(
                "iterator-tombstones",
                Severity::Info,
                &[("writebuffer.size", "1mb")],
                &[],
            ),
            finding(
                "wbm-budget",
                Severity::Info,
                &[("writebuffer.size", "28mb")],
                &[&[("memory.managed-size", "576mb")]],
            ),
        ];
        resolve(&mut fs, ORDER);
        assert_eq!(fs[0].id, "wbm-budget");
        let t = &fs[1];
        assert!(t.recommendation.is_empty(), "{:?}", t.recommendation);
        assert_eq!(t.effect, None);
        assert_eq!(t.overruled.len(), 1);
        assert_eq!(t.overruled[0].by, "wbm-budget");
        assert!(t.overruled[0].was_recommendation);
        assert_eq!(
            t.overruled[0].reason,
            "wbm-budget sets writebuffer.size: 28mb (it comes first in the rules' order (a cause before the symptoms it leaves))"
        );
        for (knob, values) in values_per_knob(&fs) {
            assert_eq!(values.len(), 1, "{knob}: {values:?}");
        }
    }

    #[test]
    fn a_measured_harm_wins_over_rule_order_and_an_agreeing_alternative_is_promoted() {
        let mut fs = vec![
            finding(
                "wbm-budget",
                Severity::Info,
                &[("writebuffer.size", "28mb")],
                &[&[("memory.managed-size", "576mb")]],
            ),
            finding(
                "iterator-tombstones",
                Severity::Warning,
                &[("writebuffer.size", "1mb")],
                &[],
            ),
        ];
        resolve(&mut fs, ORDER);
        assert_eq!(fs[0].id, "iterator-tombstones");
        let w = &fs[1];
        assert_eq!(
            w.recommendation,
            vec![Change::new("memory.managed-size", "576mb")]
        );
        assert_eq!(w.effect.as_deref(), Some("alt"));
        assert!(
            w.overruled[0]
                .reason
                .contains("harm is measured as warning"),
            "{:?}",
            w.overruled
        );
    }

    #[test]
    fn the_free_fix_comes_before_the_memory_fix_at_equal_severity() {
        let mut memory = finding(
            "cache-hit-low",
            Severity::Warning,
            &[("memory.managed-size", "2gb")],
            &[],
        );
        memory.memory_cost = 1 << 30;
        let free = finding(
            "bloom-off",
            Severity::Warning,
            &[("use-bloom-filter", "true")],
            &[],
        );
        let mut fs = vec![memory, free];
        resolve(&mut fs, &["cache-hit-low", "bloom-off"]);
        assert_eq!(fs[0].id, "bloom-off");
        // Different knobs: both stand.
        assert_eq!(fs[1].recommendation.len(), 1);
        assert!(fs[1].overruled.is_empty());
    }

    #[test]
    fn the_same_value_from_two_rules_is_no_conflict() {
        let mut fs = vec![
            finding(
                "bloom-off",
                Severity::Warning,
                &[("use-bloom-filter", "true")],
                &[],
            ),
            finding(
                "cache-hit-low",
                Severity::Warning,
                &[("use-bloom-filter", "true")],
                &[],
            ),
        ];
        resolve(&mut fs, &["bloom-off", "cache-hit-low"]);
        assert!(
            fs.iter()
                .all(|f| f.overruled.is_empty() && !f.recommendation.is_empty())
        );
    }
}
