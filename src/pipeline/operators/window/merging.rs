//! Flink's `MergingWindowSet`: for a merging assigner (sessions), the in-flight windows of the
//! current key and the state window each keeps its contents in, stored as the ListState
//! `merging-window-set` (`Tuple2<TimeWindow, TimeWindow>` per entry, VoidNamespace), read whole
//! per element and per timer and written back (`update`: a put, or a delete when empty) only
//! when the mapping changed.

use std::collections::BTreeMap;

use super::assign::{TimeWindow, WINDOW_BYTES, java_hash_set_order};
use crate::backend::BackendError;

/// One merge `MergingWindowSet.addWindow` reports to its `MergeFunction`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merge {
    /// `mergeResult`: the window the merged ones became.
    pub result: TimeWindow,
    /// `mergedWindows` without the new window, in the `HashSet`'s order.
    pub merged_windows: Vec<TimeWindow>,
    /// `stateWindowResult`: the state window the merge result keeps.
    pub state_window_result: TimeWindow,
    /// `mergedStateWindows`: the state windows whose contents move into it.
    pub merged_state_windows: Vec<TimeWindow>,
}

/// Flink's list merge operator's delimiter between list entries.
const DELIMITER: u8 = b',';
const ENTRY_BYTES: usize = 2 * WINDOW_BYTES;

#[derive(Debug, Clone, Default)]
pub struct MergingWindowSet {
    mapping: BTreeMap<TimeWindow, TimeWindow>,
    initial: BTreeMap<TimeWindow, TimeWindow>,
}

impl MergingWindowSet {
    /// The set as `new MergingWindowSet(assigner, state)` restores it from the state's value
    /// (`None`: the key has no entry).
    pub fn from_state(value: Option<&[u8]>) -> Result<MergingWindowSet, BackendError> {
        let mut mapping = BTreeMap::new();
        if let Some(bytes) = value {
            let mut at = 0;
            while at < bytes.len() {
                let entry = bytes.get(at..at + ENTRY_BYTES).ok_or_else(|| {
                    BackendError::Corrupt("merging-window-set: a short entry".into())
                })?;
                let (w, s) = entry.split_at(WINDOW_BYTES);
                let (Some(w), Some(s)) = (TimeWindow::from_bytes(w), TimeWindow::from_bytes(s))
                else {
                    return Err(BackendError::Corrupt(
                        "merging-window-set: bad window".into(),
                    ));
                };
                mapping.insert(w, s);
                at += ENTRY_BYTES;
                if at < bytes.len() {
                    if bytes[at] != DELIMITER {
                        return Err(BackendError::Corrupt(
                            "merging-window-set: missing list delimiter".into(),
                        ));
                    }
                    at += 1;
                }
            }
        }
        Ok(MergingWindowSet {
            initial: mapping.clone(),
            mapping,
        })
    }

    /// What `persist()` writes: `None` when the mapping is unchanged (no write), else the new
    /// list value (`ListDelimitedSerializer.serializeList`), empty for a delete (`update` of an
    /// empty list clears the state).
    pub fn persist(&self, out: &mut Vec<u8>) -> Option<()> {
        if self.mapping == self.initial {
            return None;
        }
        out.clear();
        let keys: Vec<TimeWindow> = self.mapping.keys().copied().collect();
        for (i, w) in java_hash_set_order(&keys).iter().enumerate() {
            if i > 0 {
                out.push(DELIMITER);
            }
            out.extend_from_slice(&w.to_bytes());
            if let Some(s) = self.mapping.get(w) {
                out.extend_from_slice(&s.to_bytes());
            }
        }
        Some(())
    }

    /// `getStateWindow`.
    pub fn state_window(&self, window: &TimeWindow) -> Option<TimeWindow> {
        self.mapping.get(window).copied()
    }

    /// `retireWindow`: false when the window is not in flight (Flink throws).
    pub fn retire(&mut self, window: &TimeWindow) -> bool {
        self.mapping.remove(window).is_some()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.mapping.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.mapping.is_empty()
    }

    /// `addWindow(newWindow, mergeFunction)`: the window the new one ended up in and the merges
    /// the merge function is called with, in order.
    pub fn add_window(&mut self, new: TimeWindow) -> (TimeWindow, Vec<Merge>) {
        // TimeWindow.mergeWindows: the in-flight windows and the new one, sorted by start
        // (a stable sort: the new window, added last, after an in-flight one of equal start),
        // swept into groups of intersecting windows; each group of more than one window
        // (a HashSet: equal windows count once) is a merge.
        let mut sorted: Vec<TimeWindow> = self.mapping.keys().copied().collect();
        sorted.push(new);
        sorted.sort_by_key(|w| w.start);
        let mut groups: Vec<(TimeWindow, Vec<TimeWindow>)> = Vec::new();
        for w in sorted {
            match groups.last_mut() {
                Some((cover, members)) if cover.intersects(&w) => {
                    *cover = cover.cover(&w);
                    members.push(w);
                }
                _ => groups.push((w, vec![w])),
            }
        }
        let merge_results: Vec<(TimeWindow, Vec<TimeWindow>)> = groups
            .into_iter()
            .map(|(cover, members)| (cover, java_hash_set_order(&members)))
            .filter(|(_, members)| members.len() > 1)
            .collect();
        // mergeResults is a HashMap keyed by the merge result: its iteration order.
        let order = java_hash_set_order(&merge_results.iter().map(|(r, _)| *r).collect::<Vec<_>>());
        let mut result_window = new;
        let mut merged_new_window = false;
        let mut merges = Vec::new();
        for result in &order {
            let Some((_, members)) = merge_results.iter().find(|(r, _)| r == result) else {
                continue;
            };
            let mut merged_windows = members.clone();
            if let Some(i) = merged_windows.iter().position(|w| *w == new) {
                merged_windows.remove(i);
                merged_new_window = true;
                result_window = *result;
            }
            // Pick the first merged window's state window as the merge result's.
            let Some(merged_state_window) = merged_windows
                .first()
                .and_then(|w| self.mapping.get(w).copied())
            else {
                continue;
            };
            let mut merged_state_windows: Vec<TimeWindow> = merged_windows
                .iter()
                .filter_map(|w| self.mapping.remove(w))
                .collect();
            self.mapping.insert(*result, merged_state_window);
            if let Some(i) = merged_state_windows
                .iter()
                .position(|s| *s == merged_state_window)
            {
                merged_state_windows.remove(i);
            }
            // Not a merge when one in-flight window only took in the new one unchanged.
            if !(merged_windows.contains(result) && merged_windows.len() == 1) {
                merges.push(Merge {
                    result: *result,
                    merged_windows,
                    state_window_result: merged_state_window,
                    merged_state_windows,
                });
            }
        }
        if merge_results.is_empty() || (result_window == new && !merged_new_window) {
            self.mapping.insert(result_window, result_window);
        }
        (result_window, merges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(start: i64, end: i64) -> TimeWindow {
        TimeWindow::new(start, end)
    }

    #[test]
    fn a_new_window_alone_maps_to_itself_and_persists() {
        let mut set = MergingWindowSet::from_state(None).unwrap();
        let mut out = Vec::new();
        assert_eq!(set.persist(&mut out), None);
        assert_eq!(set.add_window(w(0, 30)), (w(0, 30), vec![]));
        assert_eq!(set.persist(&mut out), Some(()));
        assert_eq!(out.len(), 32);
        let restored = MergingWindowSet::from_state(Some(&out)).unwrap();
        assert_eq!(restored.state_window(&w(0, 30)), Some(w(0, 30)));
        let mut again = Vec::new();
        assert_eq!(restored.persist(&mut again), None, "unchanged: no write");
    }

    #[test]
    fn a_bridging_window_merges_two_sessions_into_one_state_window() {
        let mut set = MergingWindowSet::default();
        set.add_window(w(0, 30));
        set.add_window(w(50, 80));
        let (actual, merges) = set.add_window(w(25, 55));
        assert_eq!(actual, w(0, 80));
        assert_eq!(merges.len(), 1);
        let m = &merges[0];
        assert_eq!(m.result, w(0, 80));
        let mut merged = m.merged_windows.clone();
        merged.sort();
        assert_eq!(merged, [w(0, 30), w(50, 80)]);
        // The first window in HashSet order keeps its state window; the other one's moves.
        assert_eq!(m.state_window_result, m.merged_windows[0]);
        assert_eq!(m.merged_state_windows, [m.merged_windows[1]]);
        assert_eq!(set.state_window(&w(0, 80)), Some(m.merged_windows[0]));
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn a_window_inside_an_in_flight_one_is_no_merge() {
        let mut set = MergingWindowSet::default();
        set.add_window(w(0, 30));
        let (actual, merges) = set.add_window(w(20, 50));
        assert_eq!(actual, w(0, 50));
        assert_eq!(merges.len(), 1, "extending a window is a merge");
        assert_eq!(merges[0].merged_state_windows, Vec::<TimeWindow>::new());
        let (actual, merges) = set.add_window(w(10, 40));
        assert_eq!(actual, w(0, 50));
        assert!(merges.is_empty());
        assert_eq!(set.state_window(&w(0, 50)), Some(w(0, 30)));
        // The same (unextended) window again: no merge either.
        let (actual, merges) = set.add_window(w(100, 130));
        assert_eq!((actual, merges.len()), (w(100, 130), 0));
        let (actual, merges) = set.add_window(w(100, 130));
        assert_eq!((actual, merges.len()), (w(100, 130), 0));
        assert_eq!(set.state_window(&w(100, 130)), Some(w(100, 130)));
        let mut out = Vec::new();
        assert_eq!(set.persist(&mut out), Some(()));
        // Restored from its state, then emptied: an empty list, which update writes as a delete.
        let mut set = MergingWindowSet::from_state(Some(&out)).unwrap();
        assert_eq!(set.len(), 2);
        assert!(set.retire(&w(0, 50)));
        assert!(!set.retire(&w(0, 50)), "not in flight any more");
        assert!(set.retire(&w(100, 130)));
        assert!(set.is_empty());
        let mut out = vec![1];
        assert_eq!(set.persist(&mut out), Some(()));
        assert!(out.is_empty(), "an empty list: update clears the state");
    }
}
