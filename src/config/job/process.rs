//! `kind: process`: a KeyedProcessFunction described as data — its states and, per element and
//! per timer, the actions it takes with their probabilities (docs/jobs.md "process").

use serde::{Deserialize, Serialize};

use super::dedup::{Cleanup, TtlSettings, TtlUpdate, ttl_settings};
use crate::config::Millis;

/// Largest value a state may be given (bytes).
pub const MAX_VALUE_SIZE: u32 = 16 << 20;
/// Largest map key space.
pub const MAX_KEY_SPACE: u64 = 1 << 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StateKind {
    /// `ValueState<byte[]>`.
    Value,
    /// `ListState<byte[]>`: appends are RocksDB merges.
    List,
    /// `MapState<Long, byte[]>`.
    Map,
}

impl StateKind {
    fn name(self) -> &'static str {
        match self {
            StateKind::Value => "value",
            StateKind::List => "list",
            StateKind::Map => "map",
        }
    }
}

/// A value size: fixed (`64`) or uniform in a range (`{min: 16, max: 256}`), drawn per write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "a size in bytes (64) or a range ({min: 16, max: 256})"
)]
pub enum SizeSpec {
    Fixed(u32),
    Range { min: u32, max: u32 },
}

impl SizeSpec {
    pub fn bounds(self) -> (u32, u32) {
        match self {
            SizeSpec::Fixed(n) => (n, n),
            SizeSpec::Range { min, max } => (min, max),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct StateDecl {
    /// The state's descriptor name, which is its column family's.
    pub name: String,
    #[serde(rename = "type")]
    pub kind: StateKind,
    /// Bytes of each value written (list: of each element).
    pub value_size: SizeSpec,
    /// Map states: user keys are 0 .. key-space-1 (Longs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_space: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Millis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_update: Option<TtlUpdate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<Cleanup>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_time_after: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionKind {
    /// value: `value()`; list: `get()` (the whole list).
    Get,
    /// value: `update(bytes)`; list: `update(List.of(bytes))`.
    Update,
    /// list: `add(bytes)` (a RocksDB merge).
    Append,
    MapGet,
    MapPut,
    MapRemove,
    /// map: read up to `entries` entries through `entries().iterator()`.
    Iterate,
    /// `clear()` on any state.
    Clear,
    /// `registerEventTimeTimer(time + after)` (on-event only).
    Timer,
}

impl ActionKind {
    fn name(self) -> &'static str {
        match self {
            ActionKind::Get => "get",
            ActionKind::Update => "update",
            ActionKind::Append => "append",
            ActionKind::MapGet => "map-get",
            ActionKind::MapPut => "map-put",
            ActionKind::MapRemove => "map-remove",
            ActionKind::Iterate => "iterate",
            ActionKind::Clear => "clear",
            ActionKind::Timer => "timer",
        }
    }

    /// The state kinds the action applies to (empty: it takes no state).
    fn applies_to(self) -> &'static [StateKind] {
        match self {
            ActionKind::Get | ActionKind::Update => &[StateKind::Value, StateKind::List],
            ActionKind::Append => &[StateKind::List],
            ActionKind::MapGet | ActionKind::MapPut | ActionKind::MapRemove => &[StateKind::Map],
            ActionKind::Iterate => &[StateKind::Map],
            ActionKind::Clear => &[StateKind::Value, StateKind::List, StateKind::Map],
            ActionKind::Timer => &[],
        }
    }
}

fn one() -> f64 {
    1.0
}

fn is_one(p: &f64) -> bool {
    *p == 1.0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ActionSpec {
    pub action: ActionKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Probability that the action runs for an element (drawn from the element's own fields).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub p: f64,
    /// iterate: how many entries to read at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<u32>,
    /// timer: the timer's distance from the element's event time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Millis>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ProcessSpec {
    pub states: Vec<StateDecl>,
    #[serde(default)]
    pub on_event: Vec<ActionSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on_timer: Vec<ActionSpec>,
}

impl ProcessSpec {
    pub fn validate(&self) -> Result<(), String> {
        if self.on_event.is_empty() {
            return Err("job.on-event must list at least one action".to_string());
        }
        for (i, s) in self.states.iter().enumerate() {
            let f = format!("job.states[{i}]");
            if s.name.is_empty() || s.name.starts_with("_timer_state") || s.name == "default" {
                return Err(format!(
                    "{f}.name ('{}') must be a non-empty name, not 'default' nor starting with \
                     '_timer_state'",
                    s.name
                ));
            }
            if self.states[..i].iter().any(|o| o.name == s.name) {
                return Err(format!(
                    "{f}.name ('{}') is used by an earlier state",
                    s.name
                ));
            }
            let (min, max) = s.value_size.bounds();
            if min > max || max > MAX_VALUE_SIZE {
                return Err(format!(
                    "{f}.value-size ({min}..{max}) must have min <= max <= {MAX_VALUE_SIZE}"
                ));
            }
            match (s.kind, s.key_space) {
                (StateKind::Map, None) => {
                    return Err(format!(
                        "{f}.key-space is required for a map state (user keys 0..key-space-1)"
                    ));
                }
                (StateKind::Map, Some(n)) if n == 0 || n > MAX_KEY_SPACE => {
                    return Err(format!(
                        "{f}.key-space ({n}) must be between 1 and {MAX_KEY_SPACE}"
                    ));
                }
                (StateKind::Value | StateKind::List, Some(_)) => {
                    return Err(format!(
                        "{f}.key-space applies only to map states, not {}",
                        s.kind.name()
                    ));
                }
                _ => {}
            }
            if s.kind == StateKind::List && s.ttl.is_some() {
                return Err(format!(
                    "{f}.ttl: state TTL on list states is not supported yet (value and map \
                     states only)"
                ));
            }
            ttl_settings(&f, s.ttl, s.ttl_update, s.cleanup, s.query_time_after)?;
        }
        self.check_actions("on-event", &self.on_event)?;
        self.check_actions("on-timer", &self.on_timer)?;
        Ok(())
    }

    fn check_actions(&self, list: &str, actions: &[ActionSpec]) -> Result<(), String> {
        for (i, a) in actions.iter().enumerate() {
            let f = format!("job.{list}[{i}]");
            if !(0.0..=1.0).contains(&a.p) {
                return Err(format!("{f}.p ({}) must be between 0 and 1", a.p));
            }
            let kinds = a.action.applies_to();
            match (&a.state, kinds.is_empty()) {
                (Some(_), true) => {
                    return Err(format!(
                        "{f}.state: a {} action takes no state",
                        a.action.name()
                    ));
                }
                (None, false) => {
                    return Err(format!(
                        "{f}.state is required for a {} action",
                        a.action.name()
                    ));
                }
                (Some(name), false) => {
                    let Some(s) = self.states.iter().find(|s| &s.name == name) else {
                        let names: Vec<&str> =
                            self.states.iter().map(|s| s.name.as_str()).collect();
                        return Err(format!(
                            "{f}.state ('{name}') names no state in job.states ({})",
                            names.join(", ")
                        ));
                    };
                    if !kinds.contains(&s.kind) {
                        let valid: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
                        return Err(format!(
                            "{f}.action: {} applies to {} states, and '{name}' is a {} state",
                            a.action.name(),
                            valid.join(" or "),
                            s.kind.name()
                        ));
                    }
                }
                (None, true) => {}
            }
            match (a.action, a.entries) {
                (ActionKind::Iterate, None | Some(0)) => {
                    return Err(format!("{f}.entries (at least 1) is required for iterate"));
                }
                (ActionKind::Iterate, Some(_)) | (_, None) => {}
                (_, Some(_)) => {
                    return Err(format!("{f}.entries applies only to iterate"));
                }
            }
            match (a.action, a.after) {
                (ActionKind::Timer, None) | (ActionKind::Timer, Some(Millis(0))) => {
                    return Err(format!(
                        "{f}.after (a positive duration) is required for timer"
                    ));
                }
                (ActionKind::Timer, Some(_)) if list == "on-timer" => {
                    return Err(format!(
                        "{f}.action: timer only in job.on-event (a timer that registers timers \
                         would never end at the final watermark)"
                    ));
                }
                (ActionKind::Timer, Some(_)) | (_, None) => {}
                (_, Some(_)) => return Err(format!("{f}.after applies only to timer")),
            }
        }
        Ok(())
    }

    /// The TTL of state number `i` (validated).
    pub fn ttl_of(&self, i: usize) -> Option<TtlSettings> {
        let s = &self.states[i];
        ttl_settings("job", s.ttl, s.ttl_update, s.cleanup, s.query_time_after)
            .ok()
            .flatten()
    }

    pub fn state_index(&self, name: &str) -> Option<usize> {
        self.states.iter().position(|s| s.name == name)
    }

    pub fn result_labels(&self) -> Vec<String> {
        vec!["events".into(), "digest".into()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "
states:
  - {name: last, type: value, value-size: 64, ttl: 1h}
  - {name: history, type: list, value-size: {min: 8, max: 32}}
  - {name: items, type: map, value-size: 16, key-space: 100}
on-event:
  - {action: get, state: last}
  - {action: update, state: last, p: 0.5}
  - {action: append, state: history, p: 0.3}
  - {action: map-put, state: items}
  - {action: iterate, state: items, entries: 10, p: 0.1}
  - {action: timer, after: 10m, p: 0.2}
on-timer:
  - {action: get, state: history}
  - {action: clear, state: history}
";

    fn parse(yaml: &str) -> Result<ProcessSpec, String> {
        let spec: ProcessSpec = serde_norway::from_str(yaml).map_err(|e| e.to_string())?;
        spec.validate()?;
        Ok(spec)
    }

    #[test]
    fn a_full_spec_parses() {
        let s = parse(GOOD).unwrap();
        assert_eq!(s.states.len(), 3);
        assert_eq!(s.states[1].value_size, SizeSpec::Range { min: 8, max: 32 });
        assert_eq!(s.ttl_of(0).unwrap().ttl_ms, 3_600_000);
        assert_eq!(s.ttl_of(1), None);
        assert_eq!(s.on_event[1].p, 0.5);
        assert_eq!(s.result_labels(), ["events", "digest"]);
    }

    #[test]
    fn bad_input_names_the_field() {
        let cases = [
            (
                GOOD.replace("state: history, p: 0.3", "state: items, p: 0.3"),
                "job.on-event[2].action: append applies to list states, and 'items' is a map state",
            ),
            (
                GOOD.replace("key-space: 100", "ttl-update: on-read-and-write"),
                "job.states[2].key-space is required",
            ),
            (
                GOOD.replace("value-size: 64, ttl: 1h", "ttl: 1h"),
                "value-size",
            ),
            (
                GOOD.replace(
                    "value-size: {min: 8, max: 32}",
                    "value-size: {min: 40, max: 32}",
                ),
                "job.states[1].value-size (40..32)",
            ),
            (
                GOOD.replace("state: last, p: 0.5", "state: lost, p: 0.5"),
                "job.on-event[1].state ('lost') names no state",
            ),
            (GOOD.replace("p: 0.5", "p: 1.5"), "job.on-event[1].p (1.5)"),
            (GOOD.replace("entries: 10, ", ""), "job.on-event[4].entries"),
            (GOOD.replace("after: 10m, ", ""), "job.on-event[5].after"),
            (
                GOOD.replace(
                    "{action: clear, state: history}",
                    "{action: timer, after: 1s}",
                ),
                "job.on-timer[1].action: timer only in job.on-event",
            ),
            (
                GOOD.replace(
                    "{name: history, type: list, value-size: {min: 8, max: 32}}",
                    "{name: history, type: list, value-size: 8, ttl: 1h}",
                ),
                "job.states[1].ttl",
            ),
            (
                GOOD.replace("name: items", "name: last"),
                "job.states[2].name ('last') is used",
            ),
            (GOOD.replace("type: map", "type: set"), "set"),
        ];
        for (yaml, want) in cases {
            let e = parse(&yaml).unwrap_err();
            assert!(e.contains(want), "{want}: got {e}");
        }
    }
}
