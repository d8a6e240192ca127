//! `levels: full`: a base that fills every level of the LSM tree as a tree of its size holds
//! it in its steady state, not only the last one.
//!
//! A leveled tree keeps each level above the last at about its target size, and what is in a
//! level is what the job wrote after what is in the levels below it: the last level holds the
//! state as it was some time ago, each level above the values of the keys the history changed
//! after that (new values, and deletions of keys the levels below still hold), the newest at
//! the top. So the build cuts the history: the whole state at the first cut goes to the last
//! level, and the keys each stretch after it changed go, with their values at its end, to the
//! level above the previous stretch's. Where the cuts fall comes from the sizing pass, which
//! notes in which of [`EPOCHS`] stretches of the history each key changed: each stretch is as
//! long as it takes its changes to reach its level's target size, counted from the top.
//!
//! Above the top level, L0 holds [`L0_FILES`] files of about a write buffer of changes each,
//! the newest last: a long-running job's L0 is somewhere in its cycle between two L0
//! compactions (RocksDB compacts it at `level0_file_num_compaction_trigger` files, 4 under
//! Flink), and a base with an empty L0 meets its first L0 compaction a whole cycle late.
//!
//! Written so, a run meets levels that are full, and its first compactions cascade down as a
//! long-running job's do, instead of filling empty upper levels first.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

use super::PreloadError;
use super::base::{self, CfFiles, SstOut};
use super::warmup::{self, Until};
use crate::backend::StateBackend;
use crate::backend::keys::MAX_PARALLELISM;
use crate::backend::memstore::{EPOCHS, MemStore};
use crate::backend::ttl_filter::TtlFilterConfig;
use crate::config::Workload;
use crate::config::profile::Knobs;
use crate::durability::delivery::Delivery;
use crate::durability::sink::MemorySink;
use crate::pipeline::source::{Log, ReadPlan};

/// Each state's cuts of the history ([`cuts`]).
pub type Cuts = Vec<Vec<u64>>;
/// How full each level above the last is made, of its target size (the sample's estimate
/// is off by some either way).
const FILL: f64 = 0.95;
/// L0 files of a full tree: the middle of the cycle between two L0 compactions, half of
/// RocksDB's `level0_file_num_compaction_trigger` (4; Flink does not set it).
pub const L0_FILES: usize = 2;

/// The levels a tree of `total` SST bytes under knobs `k` has: its last level, and each level
/// above it that holds data with its target size in bytes, deepest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    pub last: u32,
    pub upper: Vec<(u32, u64)>,
}

impl Shape {
    /// Every layer above the last level, deepest first, with its target size in bytes: the
    /// upper levels', then [`L0_FILES`] of L0 of a write buffer each (SST bytes for a level,
    /// keys and values for a flushed memtable).
    fn layers(&self, k: &Knobs) -> impl Iterator<Item = (u32, u64)> + '_ {
        let flush = k.write_buffer_size.0;
        self.upper
            .iter()
            .copied()
            .chain(std::iter::repeat_n((0, flush), L0_FILES))
    }
}

/// [`Shape`] as RocksDB sizes its levels (`VersionStorageInfo::CalculateBaseBytes`): static,
/// L1 at `max_bytes_for_level_base` and each level below times the multiplier, the last level
/// the first that holds the rest; dynamic, the last level (L6) the data and each level above
/// it a multiplier smaller, up to the base level (the first at most `max_bytes_for_level_base`),
/// none smaller than `max_bytes_for_level_base`.
pub fn shape(total: u64, k: &Knobs) -> Shape {
    let base = k.max_bytes_for_level_base.0.max(1);
    let m = k.max_bytes_for_level_multiplier.max(1.0);
    let bottom = base::NUM_LEVELS - 1;
    if !k.dynamic_level_bytes {
        let last = base::last_level(total, false, base, m, base::NUM_LEVELS);
        let upper = (1..last)
            .rev()
            .map(|level| (level, (base as f64 * m.powi(level as i32 - 1)) as u64))
            .collect();
        return Shape { last, upper };
    }
    // The last level as a tree of geometric levels holds it: all but a multiplier's share.
    let last_size = total as f64 * (1.0 - 1.0 / m);
    let (mut level, mut cur) = (bottom, last_size);
    let mut sizes = Vec::new();
    while level > 1 && cur > base as f64 {
        level -= 1;
        cur /= m;
        sizes.push(level);
    }
    // Each level's target: the base level's size times the multiplier per level below it.
    let mut upper: Vec<(u32, u64)> = sizes
        .into_iter()
        .map(|l| {
            (
                l,
                (cur * m.powi((l - level) as i32)).max(base as f64) as u64,
            )
        })
        .collect();
    // Keep no upper levels that would hold as much as the last one.
    while upper.iter().map(|(_, s)| s).sum::<u64>() >= total / 2 && !upper.is_empty() {
        upper.pop();
    }
    Shape {
        last: bottom,
        upper,
    }
}

/// The records read before each of column family `cf`'s cuts, ascending: the first is where
/// its last level's state is taken, each next where the stretch for the level above begins; the
/// last stretch ends with the history. `sample` is a sizing pass's state over `records` records
/// that noted its changes by epoch; `targets` the upper levels' sizes (deepest first) in the
/// sample's bytes.
pub fn cuts(sample: &MemStore, cf: usize, targets: &[u64], records: u64) -> Vec<u64> {
    let mut lows = Vec::with_capacity(targets.len());
    let mut high = EPOCHS;
    for target in targets.iter().rev() {
        // Bytes of the keys changed in [lo, high), by the latest epoch each changed in there.
        let mut by_epoch = vec![0u64; EPOCHS];
        for (changed, bytes) in sample.changed(cf) {
            if let Some(e) = changed.last_before(high) {
                by_epoch[e] += bytes;
            }
        }
        // The stretch whose changes come nearest the target, at least one epoch.
        let mut low = 0;
        let mut sum = 0;
        for e in (0..high).rev() {
            let with = sum + by_epoch[e];
            if with > *target {
                low = if with - target < target - sum {
                    e
                } else {
                    (e + 1).min(high - 1)
                };
                break;
            }
            sum = with;
        }
        lows.push(low);
        high = low;
    }
    lows.reverse();
    lows.iter()
        .map(|e| (*e as u64).saturating_mul(records) / EPOCHS as u64)
        .collect()
}

/// A batch's error when it stopped because another batch failed.
const ANOTHER_FAILED: &str = "another batch of the build failed";

/// One level of one column family, written by several key-group batches at once, each batch's
/// in turn (batch `i` waits for batch `i - 1`), so its files stay in key order.
struct LevelOut<'o> {
    turn: Mutex<(usize, SstOut<'o>)>,
    moved: Condvar,
}

/// Every column family's levels' files, the last level first; a failed batch ends the others'
/// waits.
pub struct Writers<'o> {
    cfs: Vec<Vec<(u32, LevelOut<'o>)>>,
    failed: AtomicBool,
    /// Per column family, the TTL compaction filter its whole state is written through (a
    /// state of one level), and the processing time it judges at ([`Writers::expiring`]).
    expire: Vec<Option<TtlFilterConfig>>,
    now: i64,
    /// Entries and bytes of keys and values the filter dropped.
    dropped: (AtomicU64, AtomicU64),
}

impl<'o> Writers<'o> {
    /// `cfs`: each column family's levels, the last first, each with its files' writer.
    pub fn new(cfs: Vec<Vec<(u32, SstOut<'o>)>>) -> Self {
        Writers {
            cfs: cfs
                .into_iter()
                .map(|levels| {
                    levels
                        .into_iter()
                        .map(|(level, out)| {
                            let out = LevelOut {
                                turn: Mutex::new((0, out)),
                                moved: Condvar::new(),
                            };
                            (level, out)
                        })
                        .collect()
                })
                .collect(),
            failed: AtomicBool::new(false),
            expire: Vec::new(),
            now: i64::MIN,
            dropped: (AtomicU64::new(0), AtomicU64::new(0)),
        }
    }

    /// Writes each state of one level whose TTL Flink's compaction filter cleans (`expire`,
    /// per column family) as a compaction at processing time `now` leaves it: without the
    /// entries expired by then.
    pub fn expiring(mut self, expire: Vec<Option<TtlFilterConfig>>, now: i64) -> Self {
        self.expire = expire;
        self.now = now;
        self
    }

    /// Entries, and bytes of their keys and values, that the TTL filter dropped.
    pub fn dropped(&self) -> (u64, u64) {
        (
            self.dropped.0.load(Ordering::SeqCst),
            self.dropped.1.load(Ordering::SeqCst),
        )
    }

    /// Ends every wait: a batch failed and will not take its turn.
    pub fn fail(&self) {
        self.failed.store(true, Ordering::SeqCst);
        for (_, l) in self.cfs.iter().flatten() {
            let _guard = l.turn.lock();
            l.moved.notify_all();
        }
    }

    /// True once a batch failed: the others stop.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// Whether `e` is a batch's stop because another failed (sorted after the failure itself).
    pub fn stopped_by_another(e: &PreloadError) -> bool {
        matches!(e, PreloadError::Preload(m) if m == ANOTHER_FAILED)
    }

    /// Column family `cf`'s layer `layer` of batch `batch` from `state`, in its turn: 0 its
    /// whole state (its last level), then the changes since its previous layer.
    pub fn write(
        &self,
        cf: usize,
        layer: usize,
        batch: usize,
        state: &mut MemStore,
    ) -> Result<(), PreloadError> {
        self.write_from(cf, layer, batch, (state, cf))
    }

    /// [`Writers::write`] of a state whose column family `cf` is its own number `own` (a
    /// chain's operators number their states one after the other; each holds its own).
    pub fn write_from(
        &self,
        cf: usize,
        layer: usize,
        batch: usize,
        (state, own): (&mut MemStore, usize),
    ) -> Result<(), PreloadError> {
        let Some(levels) = self.cfs.get(cf) else {
            return Ok(());
        };
        let Some((_, out)) = levels.get(layer) else {
            return Ok(());
        };
        // Sorted before the batch's turn: the batches sort side by side, and only write in turn.
        enum Layer<'s> {
            Whole(Vec<(&'s [u8], &'s [u8])>),
            Changes(crate::backend::memstore::ChangedEntries),
        }
        let entries = if layer == 0 {
            let whole = match (self.expire.get(cf), levels.len()) {
                (Some(Some(filter)), 1) => {
                    let dropped = std::cell::Cell::new((0u64, 0u64));
                    let whole = state.sorted_where(own, &|k, v| {
                        let drops = filter.drops(v, self.now);
                        if drops {
                            let (n, bytes) = dropped.get();
                            dropped.set((n + 1, bytes + (k.len() + v.len()) as u64));
                        }
                        !drops
                    });
                    let (n, bytes) = dropped.get();
                    self.dropped.0.fetch_add(n, Ordering::SeqCst);
                    self.dropped.1.fetch_add(bytes, Ordering::SeqCst);
                    whole
                }
                _ => state.sorted(own),
            };
            Layer::Whole(whole)
        } else {
            Layer::Changes(state.take_changes(own))
        };
        let poisoned = || PreloadError::Preload("a warm-up thread panicked".into());
        let mut turn = out.turn.lock().map_err(|_| poisoned())?;
        while turn.0 != batch {
            if self.failed.load(Ordering::SeqCst) {
                return Err(PreloadError::Preload(ANOTHER_FAILED.into()));
            }
            turn = out.moved.wait(turn).map_err(|_| poisoned())?;
        }
        let file = &mut turn.1;
        match &entries {
            Layer::Whole(entries) => {
                // The entries are in key order, not in their order in memory: each one's
                // record is fetched a few entries ahead of its writing.
                for (i, (k, v)) in entries.iter().enumerate() {
                    if let Some((k, v)) = entries.get(i + 8) {
                        crate::util::prefetch::prefetch(k.as_ptr());
                        crate::util::prefetch::prefetch(v.as_ptr());
                    }
                    file.put(k, v)?;
                }
            }
            Layer::Changes(changes) => {
                for (key, value) in changes {
                    match value {
                        Some(v) => file.put(key, v)?,
                        None => file.delete(key)?,
                    }
                }
            }
        }
        turn.0 += 1;
        out.moved.notify_all();
        drop(turn);
        drop(entries);
        // The changes after the whole state, for the levels above (a base of one level has none).
        if layer == 0 && levels.len() > 1 {
            state.restart_changes(cf);
        }
        Ok(())
    }

    /// Closes every file: each column family's levels, the last first.
    pub fn finish(self) -> Result<Vec<Vec<CfFiles>>, PreloadError> {
        self.cfs
            .into_iter()
            .map(|levels| {
                levels
                    .into_iter()
                    .map(|(level, l)| {
                        let (_, out) = l.turn.into_inner().map_err(|_| {
                            PreloadError::Preload("a warm-up thread panicked".into())
                        })?;
                        let mut files = out.finish()?;
                        files.level = Some(level);
                        Ok(files)
                    })
                    .collect::<Result<Vec<_>, PreloadError>>()
            })
            .collect()
    }
}

/// The levels of a `levels: full` base: each state's (the last first) as a tree of its size
/// has them, and the records before each of its cuts, from a pass over the sizing key groups
/// (the first `groups`) that notes when each key changes. `per_cf`: the sizing groups' bytes of keys and values and
/// of SST files, per state.
pub(super) fn plan(
    (backend, k): (&StateBackend, &Knobs),
    (workload, log, live): (&Workload, &Log, &ReadPlan),
    records: u64,
    (groups, per_cf): (u16, &[(u64, u64)]),
    say: &dyn Fn(String),
) -> Result<(Vec<Vec<u32>>, Cuts), PreloadError> {
    let scale = f64::from(MAX_PARALLELISM) / f64::from(groups);
    let shapes: Vec<Shape> = per_cf
        .iter()
        .map(|(_, sst)| shape((*sst as f64 * scale) as u64, k))
        .collect();
    let levels = shapes
        .iter()
        .map(|s| {
            std::iter::once(s.last)
                .chain(s.layers(k).map(|(l, _)| l))
                .collect()
        })
        .collect();
    let sink = Delivery::passthrough(Box::new(MemorySink::new(workload.result_labels())));
    let (tracked, _) = warmup::pass(
        std::slice::from_ref(backend),
        workload,
        warmup::Source::Ahead(log, warmup::plan(log, live, None)),
        Until::Records(records),
        warmup::Part {
            groups: 0..groups,
            layering: warmup::Layering::Epochs { records },
            checked: 1,
            spill: None,
        },
        sink,
    )?;
    let mut all = Vec::new();
    for (cf, (shape, (raw, sst))) in shapes.iter().zip(per_cf).enumerate() {
        // A level's target in the sizing groups' bytes of keys and values, aimed a little
        // under it ([`FILL`]): a long-running tree's levels sit at their targets, each byte in
        // pushing one down, and one over its target compacts before the run's first write.
        let to_sample =
            |t: u64| (t as f64 * FILL / scale * (*raw as f64 / (*sst).max(1) as f64)) as u64;
        // An L0 file is a flushed memtable: a write buffer of keys and values already (the
        // memtable's own overhead per entry left aside).
        let targets: Vec<u64> = shape
            .layers(k)
            .map(|(level, t)| match level {
                0 => (t as f64 * FILL / scale) as u64,
                _ => to_sample(t),
            })
            .collect();
        let at = cuts(&tracked.state, cf, &targets, records);
        if *raw == 0 || at.first() == Some(&0) {
            // Empty in the sample (a processing-time timer queue), or too small for its layers:
            // its last level taken at the start would be empty, and RocksDB would put the
            // layers above it into the deepest level they fit. All of it goes to its last level:
            // cuts the log never reaches are made, in order, after its end.
            if *raw > 0 {
                say(format!(
                    "levels of '{}': all in L{} (its changes do not fill the levels above it)",
                    backend.column_families().get(cf).map_or("", String::as_str),
                    shape.last
                ));
            }
            all.push(vec![u64::MAX; at.len()]);
            continue;
        }
        say(format!(
            "levels of '{}': L{} the state after {} of {records} records; {}",
            backend.column_families().get(cf).map_or("", String::as_str),
            shape.last,
            at.first().copied().unwrap_or(records),
            shape
                .layers(k)
                .zip(&at)
                .map(|((l, t), from)| format!(
                    "L{l} ({}) the changes after {from}",
                    crate::config::units::human_bytes(t as f64)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        all.push(at);
    }
    Ok((levels, all))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::units::ByteSize;

    const MB: u64 = 1 << 20;

    fn knobs(base: u64, dynamic: bool) -> Knobs {
        Knobs {
            max_bytes_for_level_base: ByteSize(base),
            dynamic_level_bytes: dynamic,
            ..Knobs::default()
        }
    }

    #[test]
    fn static_levels_are_full_down_to_the_one_that_holds_the_rest() {
        // The seed's "before": 256 MB at L1, x10, not dynamic; 3 GB ends in L3.
        let s = shape(3 * 1024 * MB, &knobs(256 * MB, false));
        assert_eq!(s.last, 3);
        assert_eq!(s.upper, vec![(2, 2560 * MB), (1, 256 * MB)]);
        assert_eq!(shape(100 * MB, &knobs(256 * MB, false)).upper, vec![]);
    }

    #[test]
    fn dynamic_levels_grow_from_the_last_up_to_the_base_level() {
        // The seed's "after": 1 GB base, dynamic; 3 GB is L6 and a base level L5 of at least
        // 1 GB (RocksDB sizes no level under max_bytes_for_level_base).
        let s = shape(3 * 1024 * MB, &knobs(1024 * MB, true));
        assert_eq!(s.last, 6);
        assert_eq!(s.upper.len(), 1);
        assert_eq!(s.upper[0].0, 5);
        assert!(s.upper[0].1 >= 1024 * MB, "{:?}", s.upper);
        // 256 MB base, dynamic: 3 GB needs two levels above the last.
        let s = shape(3 * 1024 * MB, &knobs(256 * MB, true));
        assert_eq!(
            s.upper.iter().map(|(l, _)| *l).collect::<Vec<_>>(),
            vec![5, 4]
        );
        // Smaller than the base: all of it in the last level.
        assert_eq!(shape(200 * MB, &knobs(256 * MB, true)).upper, vec![]);
    }

    #[test]
    fn cuts_give_each_level_its_size_counted_from_the_newest_changes() {
        let mut s = MemStore::new(1);
        s.track_changes();
        // 256 epochs over 2560 records; a new 10-byte key (9 + 1) every record.
        for r in 0..2560u64 {
            s.set_epoch((r * EPOCHS as u64 / 2560) as usize);
            s.put(0, format!("k{r:08}").as_bytes(), b"v");
        }
        // 100 bytes = 10 records = 1 epoch at the top, 1,000 bytes = 10 epochs below it; each
        // stretch the one whose bytes come nearest its target.
        assert_eq!(cuts(&s, 0, &[1000, 100], 2560), vec![2450, 2550]);
        assert_eq!(cuts(&s, 0, &[1040, 160], 2560), vec![2440, 2540]);
        assert_eq!(cuts(&s, 0, &[960, 140], 2560), vec![2450, 2550]);
        assert_eq!(
            cuts(&s, 1, &[1000], 2560),
            vec![0],
            "no changes: all of it above"
        );
    }
}
