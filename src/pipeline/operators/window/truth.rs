//! The window kind's exact results, computed from the records alone (no RocksDB): windows in
//! memory, fired when the watermark passes their end or when an element arrives after that
//! (allowed lateness), cleaned at `end - 1 + allowed lateness`, sessions merged as they touch.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::assign::{TimeWindow, assign_windows, cleanup_time};
use super::contents::Summary;
use super::{SLOT_DIGEST, SLOT_ELEMENTS, SLOT_FIRED};
use crate::config::job::window::{Assigner, WindowSpec};
use crate::pipeline::operators::mix;
use crate::pipeline::oracle::{TruthModel, Truths};
use crate::pipeline::source::Event;

/// What happens to a window at a time: it fires (its end passed), or it is cleaned up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    Fire,
    Cleanup,
}

#[derive(Debug, Clone)]
pub struct WindowTruth {
    assigner: Assigner,
    lateness: i64,
    watermark: i64,
    /// Per key: its windows in flight and what they hold.
    windows: HashMap<u64, BTreeMap<TimeWindow, Summary>>,
    /// What is due when, per key and window. An entry of a window no longer in flight (merged
    /// into a larger one, or cleaned) does nothing.
    schedule: BTreeSet<(i64, Due, u64, TimeWindow)>,
    assigned: Vec<TimeWindow>,
}

impl WindowTruth {
    pub fn new(spec: &WindowSpec) -> Result<WindowTruth, String> {
        Ok(WindowTruth {
            assigner: spec.assigner()?,
            lateness: spec.allowed_lateness_ms(),
            watermark: i64::MIN,
            windows: HashMap::new(),
            schedule: BTreeSet::new(),
            assigned: Vec::new(),
        })
    }

    fn emit(key: u64, window: &TimeWindow, s: Summary, t: &mut Truths) {
        t.set(key, SLOT_FIRED, t.get(key, SLOT_FIRED) + 1);
        t.set(key, SLOT_ELEMENTS, t.get(key, SLOT_ELEMENTS) + s.count);
        let digest =
            t.get(key, SLOT_DIGEST)
                .wrapping_add(mix(window.start, window.end, s.count, s.sum));
        t.set(key, SLOT_DIGEST, digest);
    }

    /// A window comes into flight: it will fire when the watermark passes its end (unless it
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
            windows.insert(new, Summary::default());
            self.schedule(key, new);
            return Some(new);
        }
        if members.len() == 1 && members[0] == cover {
            // Inside an in-flight window: it takes the element unchanged.
            return Some(cover);
        }
        let mut merged = Summary::default();
        for w in &members {
            if let Some(s) = windows.remove(w) {
                merged.count += s.count;
                merged.sum += s.sum;
            }
        }
        windows.insert(cover, merged);
        self.schedule(key, cover);
        Some(cover)
    }
}

impl TruthModel for WindowTruth {
    fn on_event(&mut self, e: &Event, _now: i64, t: &mut Truths) {
        let key = e.user;
        let mut assigned = std::mem::take(&mut self.assigned);
        assign_windows(&self.assigner, e.event_time, &mut assigned);
        for window in &assigned {
            let actual = match self.assigner {
                Assigner::Session { .. } => match self.session_window(key, *window) {
                    Some(w) => w,
                    None => continue,
                },
                _ => {
                    if cleanup_time(window, self.lateness) <= self.watermark {
                        continue;
                    }
                    let windows = self.windows.entry(key).or_default();
                    if !windows.contains_key(window) {
                        windows.insert(*window, Summary::default());
                        self.schedule(key, *window);
                    }
                    *window
                }
            };
            let Some(s) = self.windows.get_mut(&key).and_then(|w| w.get_mut(&actual)) else {
                continue;
            };
            s.count += 1;
            s.sum += i64::from(e.value_size);
            let s = *s;
            // A late element (within the allowed lateness) fires its window at once.
            if actual.max_timestamp() <= self.watermark {
                Self::emit(key, &actual, s, t);
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
            let Some(windows) = self.windows.get_mut(&key) else {
                continue;
            };
            match due {
                Due::Fire => {
                    if let Some(s) = windows.get(&window) {
                        Self::emit(key, &window, *s, t);
                    }
                }
                Due::Cleanup => {
                    windows.remove(&window);
                    if windows.is_empty() {
                        self.windows.remove(&key);
                    }
                }
            }
        }
    }

    fn boxed_clone(&self) -> Box<dyn TruthModel> {
        Box::new(self.clone())
    }
}
