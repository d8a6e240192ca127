//! The exact model of `kind: process`: the same draws as the operator over in-memory states,
//! with Flink's TTL semantics (an expired value reads as null and is removed; OnReadAndWrite
//! renews a value read), and event-time timers fired by the watermark.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::process::{ActionPlan, DIGEST, Draw, EVENTS, Plan, StatePlan, term};
use super::valgen::{first8, java_hash, payload};
use crate::config::job::process::{ActionKind, ProcessSpec};
use crate::pipeline::oracle::{TruthModel, Truths};
use crate::pipeline::source::{Event, KeyNames};

/// A value as the model keeps it: its length, first 8 bytes and last access time.
#[derive(Debug, Clone, Copy)]
struct Val {
    len: u32,
    f8: i64,
    ts: i64,
}

#[derive(Debug, Clone)]
enum Slot {
    Value(Option<Val>),
    List(Vec<Val>),
    Map(BTreeMap<u64, Val>),
}

#[derive(Debug, Clone)]
struct KeyState {
    h: i64,
    slots: Vec<Slot>,
}

#[derive(Debug, Clone)]
pub struct ProcessTruth {
    plan: Plan,
    keys: HashMap<u64, KeyState>,
    /// (timestamp, key) of the timers registered and not yet fired.
    timers: BTreeSet<(i64, u64)>,
    names: KeyNames,
    key_str: String,
}

impl ProcessTruth {
    /// The model of `spec`'s function (validated) for keys named by `keys` (its draws hash the
    /// key string, as the operator's do).
    pub fn new(spec: &ProcessSpec, keys: KeyNames) -> Self {
        let plan = Plan::new(spec).unwrap_or(Plan {
            states: Vec::new(),
            on_event: Vec::new(),
            on_timer: Vec::new(),
        });
        ProcessTruth {
            plan,
            keys: HashMap::new(),
            timers: BTreeSet::new(),
            names: keys,
            key_str: String::new(),
        }
    }

    /// Runs `actions` for `key`; returns the digest term.
    fn run(&mut self, key: u64, on_timer: bool, d: Draw, now: i64) -> i64 {
        let actions = if on_timer {
            &self.plan.on_timer
        } else {
            &self.plan.on_event
        };
        let Some(ks) = self.keys.get_mut(&key) else {
            return 0;
        };
        let mut digest = 0i64;
        for a in actions {
            if !a.runs(d) {
                continue;
            }
            if a.kind == ActionKind::Timer {
                self.timers.insert((d.t.wrapping_add(a.after), key));
                continue;
            }
            let s = &self.plan.states[a.state];
            let t = exec(a, s, &mut ks.slots[a.state], d, now);
            digest = digest.wrapping_add(t);
        }
        digest
    }
}

fn written(a: &ActionPlan, s: &StatePlan, d: Draw, now: i64) -> Val {
    let len = a.size(s, d);
    let mut head = Vec::with_capacity(8);
    payload(a.seed(d), (len as usize).min(8), &mut head);
    Val {
        len,
        f8: first8(&head),
        ts: now,
    }
}

/// A TTL-aware read of `v`: None when absent or expired (then removed); renewed on read.
fn live(s: &StatePlan, v: &mut Option<Val>, now: i64) -> Option<Val> {
    let val = (*v)?;
    if s.codec.expired(Some(val.ts), now) {
        *v = None;
        return None;
    }
    if s.codec.ttl.is_some_and(|t| t.update_on_read)
        && let Some(x) = v.as_mut()
    {
        x.ts = now;
    }
    Some(val)
}

fn exec(a: &ActionPlan, s: &StatePlan, slot: &mut Slot, d: Draw, now: i64) -> i64 {
    match (a.kind, slot) {
        (ActionKind::Get, Slot::Value(v)) => {
            term::value(a.id, live(s, v, now).map(|x| (x.len, x.f8)))
        }
        (ActionKind::Get, Slot::List(l)) => {
            if l.is_empty() {
                return term::list_empty(a.id);
            }
            l.iter().enumerate().fold(0i64, |acc, (j, x)| {
                acc.wrapping_add(term::list_element(a.id, j, x.len, x.f8))
            })
        }
        (ActionKind::Update, Slot::Value(v)) => {
            *v = Some(written(a, s, d, now));
            0
        }
        (ActionKind::Update, Slot::List(l)) => {
            *l = vec![written(a, s, d, now)];
            0
        }
        (ActionKind::Append, Slot::List(l)) => {
            l.push(written(a, s, d, now));
            0
        }
        (ActionKind::MapGet, Slot::Map(m)) => {
            let uk = a.user_key(s, d);
            let mut v = m.get(&uk).copied();
            let read = live(s, &mut v, now);
            match v {
                Some(x) => m.insert(uk, x),
                None => m.remove(&uk),
            };
            term::map_entry(a.id, uk, read.map(|x| (x.len, x.f8)))
        }
        (ActionKind::MapPut, Slot::Map(m)) => {
            m.insert(a.user_key(s, d), written(a, s, d, now));
            0
        }
        (ActionKind::MapRemove, Slot::Map(m)) => {
            m.remove(&a.user_key(s, d));
            0
        }
        (ActionKind::Iterate, Slot::Map(m)) => {
            let mut digest = 0i64;
            let mut read = 0u32;
            let mut gone = Vec::new();
            for (uk, x) in m.iter_mut() {
                if read == a.entries {
                    break;
                }
                if s.codec.expired(Some(x.ts), now) {
                    gone.push(*uk);
                    continue;
                }
                if s.codec.ttl.is_some_and(|t| t.update_on_read) {
                    x.ts = now;
                }
                digest = digest.wrapping_add(term::map_entry(a.id, *uk, Some((x.len, x.f8))));
                read += 1;
            }
            for uk in gone {
                m.remove(&uk);
            }
            digest.wrapping_add(term::iterated(a.id, read))
        }
        (ActionKind::Clear, Slot::Value(v)) => {
            *v = None;
            0
        }
        (ActionKind::Clear, Slot::List(l)) => {
            l.clear();
            0
        }
        (ActionKind::Clear, Slot::Map(m)) => {
            m.clear();
            0
        }
        // Validation rules out the other pairs.
        _ => 0,
    }
}

impl TruthModel for ProcessTruth {
    fn on_event(&mut self, e: &Event, now: i64, t: &mut Truths) {
        self.names.write(e.user, &mut self.key_str);
        let h = java_hash(&self.key_str);
        let plan = &self.plan;
        self.keys.entry(e.user).or_insert_with(|| KeyState {
            h,
            slots: plan
                .states
                .iter()
                .map(|s| match s.kind {
                    crate::config::job::process::StateKind::Value => Slot::Value(None),
                    crate::config::job::process::StateKind::List => Slot::List(Vec::new()),
                    crate::config::job::process::StateKind::Map => Slot::Map(BTreeMap::new()),
                })
                .collect(),
        });
        let d = Draw {
            h,
            t: e.event_time,
            v: i64::from(e.value_size),
        };
        let term = self.run(e.user, false, d, now);
        t.add(e.user, EVENTS, 1);
        let digest = t.get(e.user, DIGEST).wrapping_add(term);
        t.set(e.user, DIGEST, digest);
    }

    fn on_watermark(&mut self, wm: i64, now: i64, t: &mut Truths) {
        while let Some(&(ts, key)) = self.timers.first() {
            if ts > wm {
                break;
            }
            self.timers.pop_first();
            let h = self.keys.get(&key).map_or(0, |k| k.h);
            let term = self.run(key, true, Draw { h, t: ts, v: -1 }, now);
            let digest = t.get(key, DIGEST).wrapping_add(term);
            t.set(key, DIGEST, digest);
        }
    }

    fn boxed_clone(&self) -> Box<dyn TruthModel> {
        Box::new(self.clone())
    }
}
