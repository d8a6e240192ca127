//! The memory of a `flink` export: managed memory or fixed-per-slot for the TaskManager's slots,
//! Flink's whole memory derivation and whether the profile fits.

use super::fit;
use crate::config::flink_in::SetKey;
use crate::config::profile::{FIXED_PER_SLOT_KEY, Knob, MemoryMode};
use crate::config::tm_memory::{
    CONSUMER_WEIGHTS_KEY, MANAGED_FRACTION_KEY, MANAGED_SIZE_KEY, PROCESS_SIZE_KEY, SLOTS_KEY,
    TASK_OFF_HEAP_KEY, TmMemory, TmMemoryConfig, format_memory_size,
};
use crate::config::{Profile, units::human_bytes};

/// The TaskManager a `flink` export is sized for (`--slots`, `--taskmanager-process-size`,
/// `--taskmanager-memory FILE`). The default: nothing known, Flink's default of one slot.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// The memory keys of the cluster's own configuration file, if one was given.
    pub config: TmMemoryConfig,
    /// That file, as the user named it.
    pub file: Option<String>,
    /// `--taskmanager-process-size`: written live, it is the user's.
    pub process_size: Option<u64>,
    /// `--slots`: written live.
    pub slots: Option<u32>,
    /// Every key of that file (the export says which of its keys the file sets already).
    pub set: Vec<SetKey>,
}

impl Cluster {
    /// The cluster's memory configuration with the command line's values over the file's.
    pub fn effective(&self) -> TmMemoryConfig {
        let mut config = self.config.clone();
        if let Some(size) = self.process_size {
            config.process_size = Some(size);
        }
        if let Some(slots) = self.slots {
            config.slots = Some(slots);
        }
        config
    }

    /// Slots per TaskManager: given, the file's, or Flink's default 1.
    pub fn slots(&self) -> u32 {
        self.effective().slots.unwrap_or(1)
    }

    /// Whether anything says how big the TaskManager is (a derivation is possible).
    pub(super) fn has_size(&self) -> bool {
        let c = self.effective();
        c.process_size.is_some()
            || c.flink_size.is_some()
            || (c.task_heap.is_some() && c.managed_size.is_some())
    }

    pub(super) fn describe(&self) -> String {
        match (&self.file, self.process_size) {
            (Some(file), _) => file.clone(),
            (None, Some(size)) => {
                format!("--taskmanager-process-size {}", format_memory_size(size))
            }
            (None, None) => "the command line".to_string(),
        }
    }
}

/// The export's memory: live lines, the TaskManager report, the verdict.
pub(super) struct MemoryLines {
    pub(super) text: String,
    pub(super) report: String,
    pub(super) misfit: Option<String>,
    pub(super) warnings: Vec<String>,
    pub(super) taskmanager: Option<TmMemory>,
}

/// How the profile's memory per slot is deployed on `cluster`, and whether it fits.
pub(super) fn memory_lines(profile: &Profile, cluster: &Cluster) -> MemoryLines {
    let k = &profile.knobs;
    let per_slot = k.managed_memory.0;
    let slots = cluster.slots();
    let sets_memory = profile.sets(Knob::ManagedMemory) || profile.sets(Knob::MemoryMode);
    let mut text = String::new();
    // The user's own sizes, given on the command line, are written with the lines that depend
    // on them.
    if let Some(size) = cluster.process_size {
        text.push_str(&format!(
            "{PROCESS_SIZE_KEY}: {}\n",
            format_memory_size(size)
        ));
    }
    if let Some(n) = cluster.slots {
        text.push_str(&format!("{SLOTS_KEY}: {n}\n"));
    }
    // The cluster as it would run with the export pasted in.
    let before = cluster.effective();
    let mut after = before.clone();
    if sets_memory {
        let total = per_slot.saturating_mul(u64::from(slots));
        let slots_said = if cluster.slots.is_some() || before.slots.is_some() {
            format!("{slots} slots")
        } else {
            format!("1 slot ({SLOTS_KEY} unset: Flink's default; export with --slots N for N)")
        };
        // The cluster's own configuration already gives each slot this much (a fraction of a
        // sized TaskManager, say): written again as a size, it would only pin what the
        // fraction says, and drift from it when the TaskManager is resized.
        let already = before
            .derive()
            .ok()
            .filter(|m| m.managed_per_slot().abs_diff(per_slot) < 1 << 10);
        match k.memory_mode {
            MemoryMode::Managed if already.is_some() && cluster.file.is_some() => {
                text.push_str(&format!(
                    "# memory.managed-size {} per slot, as managed memory (memory.mode: managed): what {} gives\n\
                     # each of its {slots_said} already: not written again.\n",
                    format_memory_size(per_slot),
                    cluster.describe()
                ));
            }
            MemoryMode::Managed => {
                text.push_str(&format!(
                    "# memory.managed-size {} per slot, as managed memory (memory.mode: managed): {slots_said}.\n\
                     # A streaming job's RocksDB gets all of its slot's managed memory when nothing else in the\n\
                     # slot declares any ({CONSUMER_WEIGHTS_KEY}: Flink's default, STATE_BACKEND:70).\n",
                    format_memory_size(per_slot)
                ));
                if let Some(own) = before.managed_size.filter(|own| *own != total) {
                    text.push_str(&format!(
                        "# (replaces {MANAGED_SIZE_KEY}: {} of {})\n",
                        format_memory_size(own),
                        cluster.describe()
                    ));
                } else if before.managed_size.is_none()
                    && let Some(fraction) = before.managed_fraction
                {
                    text.push_str(&format!(
                        "# (replaces {MANAGED_FRACTION_KEY}: {fraction} of {}: a size takes precedence)\n",
                        cluster.describe()
                    ));
                }
                text.push_str(&format!(
                    "{MANAGED_SIZE_KEY}: {}\n",
                    format_memory_size(total)
                ));
                after.managed_size = Some(total);
            }
            MemoryMode::Unmanaged => {
                text.push_str(&format!(
                    "# memory.mode: unmanaged: RocksDB takes no managed memory and has no budget. Every column family\n\
                     # gets its own block cache (state.backend.rocksdb.block.cache-size, Flink's default 8 MB) and\n\
                     # memtables with no WriteBufferManager; index and filter blocks stay outside any cache and grow\n\
                     # with the state. The TaskManager reserves none of it: it comes out of the JVM overhead, while\n\
                     # the slots' managed memory goes unused by RocksDB ({slots_said}).\n"
                ));
                text.push_str("state.backend.rocksdb.memory.managed: false\n");
            }
            MemoryMode::FixedPerSlot => {
                let off_heap = before.task_off_heap.unwrap_or(0).saturating_add(total);
                text.push_str(&format!(
                    "# memory.managed-size {} per slot, fixed per slot (memory.mode: fixed-per-slot): {slots_said}.\n\
                     # Flink takes it outside managed memory; the TaskManager's task off-heap memory must cover it\n\
                     # ({} x {}{}). Managed memory RocksDB no longer uses can shrink ({MANAGED_SIZE_KEY}: 0 with no\n\
                     # other consumer).\n",
                    format_memory_size(per_slot),
                    slots,
                    format_memory_size(per_slot),
                    before
                        .task_off_heap
                        .filter(|b| *b > 0)
                        .map(|b| format!(" + the {} already set", format_memory_size(b)))
                        .unwrap_or_default(),
                ));
                if cluster.file.is_none() && before.task_off_heap.is_none() {
                    // Nothing says what the job's own code already takes off-heap.
                    text.push_str(&format!(
                        "# The size below is RocksDB's alone: add any {TASK_OFF_HEAP_KEY} your job already\n\
                         # sets (or export with --taskmanager-memory FILE, your cluster's configuration).\n"
                    ));
                }
                text.push_str(&format!(
                    "{FIXED_PER_SLOT_KEY}: {}\n",
                    format_memory_size(per_slot)
                ));
                text.push_str(&format!(
                    "{TASK_OFF_HEAP_KEY}: {}\n",
                    format_memory_size(off_heap)
                ));
                after.task_off_heap = Some(off_heap);
            }
        }
    }
    if !cluster.has_size() {
        return MemoryLines {
            text,
            report: String::new(),
            misfit: None,
            warnings: Vec::new(),
            taskmanager: None,
        };
    }
    let mut report = format!(
        "# TaskManager memory as Flink 1.20 derives it ({}{}):\n",
        cluster.describe(),
        if sets_memory {
            ", with the lines above"
        } else {
            ""
        }
    );
    let mut misfit = None;
    let mut warnings = Vec::new();
    let derived = match after.derive() {
        Ok(m) => Some(m),
        Err(e) => {
            // The cluster's own configuration may be what Flink refuses.
            let own = before.derive().err();
            let reason = match own {
                Some(own) => format!("Flink refuses the TaskManager configuration itself: {own}"),
                None => format!(
                    "with memory.managed-size {} x {slots} slots Flink refuses the TaskManager: {e}",
                    format_memory_size(per_slot)
                ),
            };
            report.push_str(&format!("#   DOES NOT FIT: {reason}\n"));
            misfit = Some(reason);
            None
        }
    };
    if let Some(m) = &derived {
        // What the export takes from the job's own memory and Flink's, against the cluster as it
        // was: its own file's sizes (before a --taskmanager-process-size resizes it), else
        // Flink's defaults for the size given.
        let original = cluster
            .config
            .derive()
            .ok()
            .filter(|_| cluster.file.is_some())
            .or_else(|| before.derive().ok());
        let squeezed = original
            .as_ref()
            .map(|o| fit::squeezes(o, m))
            .unwrap_or_default();
        let squeeze = if squeezed.is_empty() {
            None
        } else {
            let parts: Vec<String> = squeezed.iter().map(fit::Squeeze::describe).collect();
            let keep = original
                .as_ref()
                .filter(|o| squeezed.iter().any(|s| s.what == "task heap") && o.task_heap > 0)
                .and_then(|o| {
                    fit::size_keeping_task_heap(&after, o)
                        .map(|(key, size)| fit::keeping(key, size, o.task_heap))
                });
            warnings.extend(
                squeezed
                    .iter()
                    .map(|s| format!("the export squeezes the {}", s.describe())),
            );
            Some(format!(
                "it squeezes the job's memory: {}{}",
                parts.join(", "),
                keep.map(|k| format!("; {k}")).unwrap_or_default()
            ))
        };
        for (key, bytes) in m.flink_sizes() {
            report.push_str(&format!(
                "#   {key:<44} {:>12}  ({bytes} bytes)\n",
                human_bytes(bytes as f64)
            ));
        }
        report.push_str(&format!(
            "#   JVM flags: -Xmx{heap} -Xms{heap} -XX:MaxDirectMemorySize={direct} -XX:MaxMetaspaceSize={meta}\n",
            heap = m.jvm_heap(),
            direct = m.jvm_direct(),
            meta = m.jvm_metaspace
        ));
        let rocksdb = match k.memory_mode {
            MemoryMode::Managed => m.state_backend_per_slot(),
            MemoryMode::FixedPerSlot => per_slot,
            MemoryMode::Unmanaged => 0,
        };
        let verdict = match (sets_memory, k.memory_mode) {
            (false, _) => format!(
                "#   each slot's RocksDB gets {} of managed memory ({} / {} slots); the profile sets none\n\
                 #   (statebench measured it with {})\n",
                human_bytes(rocksdb as f64),
                human_bytes(m.managed as f64),
                m.slots,
                human_bytes(per_slot as f64)
            ),
            (true, MemoryMode::Managed) => {
                let fits = rocksdb >= per_slot && squeeze.is_none();
                if rocksdb < per_slot {
                    misfit = Some(format!(
                        "each slot's RocksDB gets {} of managed memory, less than memory.managed-size {}",
                        human_bytes(rocksdb as f64),
                        human_bytes(per_slot as f64)
                    ));
                } else if let Some(squeeze) = &squeeze {
                    misfit = Some(squeeze.clone());
                }
                format!(
                    "#   fits: {}: managed {} = {} slots x {} for each slot's RocksDB; task heap left {}\n",
                    if fits { "yes" } else { "NO" },
                    human_bytes(m.managed as f64),
                    m.slots,
                    human_bytes(rocksdb as f64),
                    human_bytes(m.task_heap as f64)
                )
            }
            (true, MemoryMode::Unmanaged) => format!(
                "#   fits: unknown: RocksDB has no budget; whatever it holds per slot comes out of the JVM overhead\n\
                 #   ({} for the TaskManager's {} slots, shared with the JVM's own native memory); managed memory\n\
                 #   {} goes unused by RocksDB; task heap left {}\n",
                human_bytes(m.jvm_overhead as f64),
                m.slots,
                human_bytes(m.managed as f64),
                human_bytes(m.task_heap as f64)
            ),
            (true, MemoryMode::FixedPerSlot) => {
                let covered = m.task_off_heap_per_slot() >= per_slot;
                let fits = covered && squeeze.is_none();
                if !covered {
                    misfit = Some(format!(
                        "task off-heap memory per slot {} does not cover fixed-per-slot {}",
                        human_bytes(m.task_off_heap_per_slot() as f64),
                        human_bytes(per_slot as f64)
                    ));
                } else if let Some(squeeze) = &squeeze {
                    misfit = Some(squeeze.clone());
                }
                format!(
                    "#   fits: {}: task off-heap {} = {} slots x {} covers fixed-per-slot {}; task heap left {}\n",
                    if fits { "yes" } else { "NO" },
                    human_bytes(m.task_off_heap as f64),
                    m.slots,
                    human_bytes(m.task_off_heap_per_slot() as f64),
                    human_bytes(per_slot as f64),
                    human_bytes(m.task_heap as f64)
                )
            }
        };
        report.push_str(&verdict);
        if let Some(squeeze) = &squeeze {
            report.push_str(&format!("#   {}\n", wrap_comment(squeeze)));
        }
    }
    MemoryLines {
        text,
        report,
        misfit,
        warnings,
        taskmanager: derived,
    }
}

/// A sentence as comment lines of the TaskManager report (`#   ` each, about 100 columns).
fn wrap_comment(text: &str) -> String {
    let mut out = String::new();
    let mut width = 0;
    for word in text.split(' ') {
        if width > 0 && width + word.len() > 92 {
            out.push_str("\n#   ");
            width = 0;
        } else if width > 0 {
            out.push(' ');
            width += 1;
        }
        out.push_str(word);
        width += word.len();
    }
    out
}
