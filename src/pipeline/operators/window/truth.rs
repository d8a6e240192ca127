//! The window kind's exact results, computed from the records alone (no RocksDB): windows in
//! memory, fired when the watermark passes their end or when an element arrives after that
//! (allowed lateness), cleaned at `end - 1 + allowed lateness`, sessions merged as they touch.
//! With a count evictor a window keeps its elements in Flink's list order and a firing keeps
//! the last N; the order of merged sessions' elements is Flink's (the kept state window's
//! elements first, then the others'), so those sessions follow `MergingWindowSet`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::assign::{TimeWindow, assign_windows, cleanup_time};
use super::contents::result_size;
use super::merging::MergingWindowSet;
use super::{SLOT_DIGEST, SLOT_ELEMENTS, SLOT_FIRED};
use crate::config::job::window::{Assigner, FunctionKind, WindowSpec};
use crate::pipeline::operators::{mix, record};
use crate::pipeline::oracle::{TruthModel, Truths};
use crate::pipeline::source::{Event, Generator};

/// What happens to a window at a time: it fires (its end passed), or it is cleaned up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    Fire,
    Cleanup,
}

/// A key's sessions when element order matters (an evictor): the in-flight windows and their
/// state windows, and each state window's elements (value sizes) in list order.
#[derive(Debug, Clone, Default)]
struct Sessions {
    set: MergingWindowSet,
    lists: HashMap<TimeWindow, Vec<i64>>,
}

#[derive(Debug, Clone)]
pub struct WindowTruth {
    assigner: Assigner,
    lateness: i64,
    evictor: Option<i64>,
    watermark: i64,
    /// Per key: its windows in flight and their elements' value sizes.
    windows: HashMap<u64, BTreeMap<TimeWindow, Vec<i64>>>,
    /// Sessions with an evictor, per key.
    sessions: HashMap<u64, Sessions>,
    /// What is due when, per key and window. An entry of a window no longer in flight (merged
    /// into a larger one, or cleaned) does nothing.
    schedule: BTreeSet<(i64, Due, u64, TimeWindow)>,
    assigned: Vec<TimeWindow>,
    function: FunctionKind,
    key_size: Option<u32>,
    /// Results emitted and not drained yet (one record per fire).
    out: Vec<Event>,
}

impl WindowTruth {
    pub fn new(spec: &WindowSpec) -> Result<WindowTruth, String> {
        Ok(WindowTruth {
            assigner: spec.assigner()?,
            lateness: spec.allowed_lateness_ms(),
            evictor: spec.evictor_count(),
            watermark: i64::MIN,
            windows: HashMap::new(),
            sessions: HashMap::new(),
            schedule: BTreeSet::new(),
            assigned: Vec::new(),
            function: spec.function,
            key_size: None,
            out: Vec::new(),
        })
    }

    /// The model of a workload whose keys are `key_size` bytes (`keys.size`).
    pub fn with_key_size(mut self, key_size: Option<u32>) -> Self {
        self.key_size = key_size;
        self
    }

    /// The record a fire of `key`'s `window` emits (WindowOperator.emitWindowContents).
    fn result(
        function: FunctionKind,
        key_size: Option<u32>,
        key: u64,
        window: &TimeWindow,
    ) -> Event {
        let mut key_str = String::new();
        Generator::sized_key(key, key_size, &mut key_str);
        record(key, window.max_timestamp(), result_size(function, &key_str))
    }

    fn ordered_sessions(&self) -> bool {
        self.evictor.is_some() && matches!(self.assigner, Assigner::Session { .. })
    }

    /// Emits what `list` holds (with an evictor: only its last N elements, which stay).
    fn emit(
        evictor: Option<i64>,
        key: u64,
        window: &TimeWindow,
        list: &mut Vec<i64>,
        t: &mut Truths,
    ) {
        if let Some(max) = evictor {
            let evicted = list
                .len()
                .saturating_sub(usize::try_from(max).unwrap_or(usize::MAX));
            list.drain(..evicted);
        }
        let count = list.len() as i64;
        let sum: i64 = list.iter().sum();
        t.set(key, SLOT_FIRED, t.get(key, SLOT_FIRED) + 1);
        t.set(key, SLOT_ELEMENTS, t.get(key, SLOT_ELEMENTS) + count);
        let digest =
            t.get(key, SLOT_DIGEST)
                .wrapping_add(mix(window.start, window.end, count, sum));
        t.set(key, SLOT_DIGEST, digest);
    }

    /// A window takes an element: it will fire when the watermark passes its end (unless it
    /// already has) and be cleaned up at its cleanup time.
    fn schedule(&mut self, key: u64, window: TimeWindow) {
        if window.max_timestamp() > self.watermark {
            self.schedule
                .insert((window.max_timestamp(), Due::Fire, key, window));
        }
        let cleanup = cleanup_time(&window, self.lateness);
        if cleanup != i64::MAX {
            self.schedule.insert((cleanup, Due::Cleanup, key, window));
        }
    }

    /// The window of the element in flight after merging (sessions), or `None` when late.
    fn session_window(&mut self, key: u64, new: TimeWindow) -> Option<TimeWindow> {
        let windows = self.windows.entry(key).or_default();
        // The in-flight windows a new one merges with: every one it (transitively) touches.
        let mut cover = new;
        let mut members: Vec<TimeWindow> = Vec::new();
        loop {
            let before = members.len();
            for w in windows.keys() {
                if !members.contains(w) && w.intersects(&cover) {
                    members.push(*w);
                    cover = cover.cover(w);
                }
            }
            if members.len() == before {
                break;
            }
        }
        if members.is_empty() {
            if cleanup_time(&new, self.lateness) <= self.watermark {
                return None;
            }
            windows.insert(new, Vec::new());
            return Some(new);
        }
        if members.len() == 1 && members[0] == cover {
            // Inside an in-flight window: it takes the element unchanged.
            return Some(cover);
        }
        let mut merged = Vec::new();
        for w in &members {
            if let Some(list) = windows.remove(w) {
                merged.extend(list);
            }
        }
        windows.insert(cover, merged);
        Some(cover)
    }

    /// Sessions in Flink's list order: the window set's merges move the merged state windows'
    /// lists behind the kept one's.
    fn ordered_session_window(&mut self, key: u64, new: TimeWindow) -> Option<TimeWindow> {
        let s = self.sessions.entry(key).or_default();
        let (actual, merges) = s.set.add_window(new);
        for m in merges {
            for source in &m.merged_state_windows {
                let moved = s.lists.remove(source).unwrap_or_default();
                s.lists
                    .entry(m.state_window_result)
                    .or_default()
                    .extend(moved);
            }
        }
        if cleanup_time(&actual, self.lateness) <= self.watermark {
            s.set.retire(&actual);
            return None;
        }
        Some(actual)
    }

    /// The elements of in-flight window `window` of `key`.
    fn list(&mut self, key: u64, window: &TimeWindow) -> Option<&mut Vec<i64>> {
        if self.ordered_sessions() {
            let s = self.sessions.get_mut(&key)?;
            let state_window = s.set.state_window(window)?;
            Some(s.lists.entry(state_window).or_default())
        } else {
            self.windows.get_mut(&key)?.get_mut(window)
        }
    }

    fn cleanup(&mut self, key: u64, window: &TimeWindow) {
        if self.ordered_sessions() {
            if let Some(s) = self.sessions.get_mut(&key)
                && let Some(state_window) = s.set.state_window(window)
            {
                s.set.retire(window);
                s.lists.remove(&state_window);
            }
        } else if let Some(windows) = self.windows.get_mut(&key) {
            windows.remove(window);
            if windows.is_empty() {
                self.windows.remove(&key);
            }
        }
    }
}

impl TruthModel for WindowTruth {
    fn on_event(&mut self, e: &Event, _now: i64, t: &mut Truths) {
        let key = e.user;
        let mut assigned = std::mem::take(&mut self.assigned);
        assign_windows(&self.assigner, e.event_time, &mut assigned);
        for window in &assigned {
            let actual = match self.assigner {
                Assigner::Session { .. } if self.ordered_sessions() => {
                    match self.ordered_session_window(key, *window) {
                        Some(w) => w,
                        None => continue,
                    }
                }
                Assigner::Session { .. } => match self.session_window(key, *window) {
                    Some(w) => w,
                    None => continue,
                },
                _ => {
                    if cleanup_time(window, self.lateness) <= self.watermark {
                        continue;
                    }
                    self.windows
                        .entry(key)
                        .or_default()
                        .entry(*window)
                        .or_default();
                    *window
                }
            };
            // The trigger's timer and the cleanup timer, registered per element.
            self.schedule(key, actual);
            let late = actual.max_timestamp() <= self.watermark;
            let evictor = self.evictor;
            let Some(list) = self.list(key, &actual) else {
                continue;
            };
            list.push(i64::from(e.value_size));
            // A late element (within the allowed lateness) fires its window at once.
            if late {
                Self::emit(evictor, key, &actual, list, t);
                let r = Self::result(self.function, self.key_size, key, &actual);
                self.out.push(r);
            }
        }
        self.assigned = assigned;
    }

    fn on_watermark(&mut self, wm: i64, _now: i64, t: &mut Truths) {
        if wm <= self.watermark {
            return;
        }
        self.watermark = wm;
        while let Some(&(at, due, key, window)) = self.schedule.first() {
            if at > wm {
                break;
            }
            self.schedule.pop_first();
            match due {
                Due::Fire => {
                    let evictor = self.evictor;
                    if let Some(list) = self.list(key, &window) {
                        Self::emit(evictor, key, &window, list, t);
                        let r = Self::result(self.function, self.key_size, key, &window);
                        self.out.push(r);
                    }
                }
                Due::Cleanup => self.cleanup(key, &window),
            }
        }
    }

    fn boxed_clone(&self) -> Box<dyn TruthModel> {
        Box::new(self.clone())
    }

    fn drain_emitted(&mut self, out: &mut Vec<Event>) {
        out.append(&mut self.out);
    }
}
