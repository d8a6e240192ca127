//! A profile in the formats users deploy: Flink configuration, a RocksDB OPTIONS file, and
//! statebench's own YAML.

use std::path::Path;

use crate::backend::ttl_filter::QUERY_TIME_AFTER_NUM_ENTRIES;
use crate::backend::{BackendError, StateBackend};
use crate::config::flink::{FACTORY_PREFIX, flink_config};
use crate::config::profile::{FLINK_PARTITIONED_BLOOM_BITS, KNOBS, Knob, MemoryMode};
use crate::config::target::Target;
use crate::config::tm_memory::{
    CONSUMER_WEIGHTS_KEY, MANAGED_FRACTION_KEY, MANAGED_SIZE_KEY, PROCESS_SIZE_KEY, SLOTS_KEY,
    TASK_OFF_HEAP_KEY, TmMemory, TmMemoryConfig, format_memory_size,
};
use crate::config::{Profile, units::human_bytes};

/// What `export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A Flink `config.yaml` fragment (`state.backend.*` keys), for `--flink-version`.
    Flink,
    /// The OPTIONS file RocksDB writes for the profile (RocksDB's INI format), as FRocksDB 6.20.3
    /// loads it for target flink-1.20.
    RocksdbOptions,
    /// statebench's own profile YAML: `extends: flink-default`, the knobs the profile sets, the
    /// others as comments.
    Yaml,
}

/// The Flink release a `flink` export is for. Their RocksDB keys are listed, as extracted from
/// each release's `flink-dist` jar by `parity/flink-keys`, in `src/config/flink-1.20.1-keys.txt`
/// and `src/config/flink-2.0.0-keys.txt`. Every key a profile sets kept its name and meaning in
/// Flink 2.0 (and its RocksDBResourceContainer and memory formulas compile to the same
/// bytecode); what changed is the options factory's package and the TTL compaction filter's
/// settings, which became configuration keys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum FlinkVersion {
    /// Flink 1.20 (FRocksDB 6.20.3), the release statebench imitates.
    #[default]
    #[value(name = "1.20")]
    V1_20,
    /// Flink 2.x (FRocksDB 8.10.0 in 2.0), keys checked against Flink 2.0.0.
    #[value(name = "2.x")]
    V2,
}

impl FlinkVersion {
    /// As users name it (`1.20`, `2.x`).
    pub fn name(self) -> &'static str {
        match self {
            FlinkVersion::V1_20 => "1.20",
            FlinkVersion::V2 => "2.x",
        }
    }

    /// The interface `state.backend.rocksdb.options-factory` names a class of: Flink 2.0 moved
    /// the RocksDB backend to `org.apache.flink.state.rocksdb` (the old interface is deprecated).
    fn options_factory(self) -> &'static str {
        match self {
            FlinkVersion::V1_20 => "org.apache.flink.contrib.streaming.state.RocksDBOptionsFactory",
            FlinkVersion::V2 => "org.apache.flink.state.rocksdb.RocksDBOptionsFactory",
        }
    }
}

/// Flink 2.x's keys for the TTL compaction filter it attaches to states with a TTL; Flink 1.20
/// takes both from each state's `StateTtlConfig` only.
pub const TTL_QUERY_TIME_KEY: &str =
    "state.backend.rocksdb.compaction.filter.query-time-after-num-entries";
pub const TTL_PERIODIC_COMPACTION_KEY: &str =
    "state.backend.rocksdb.compaction.filter.periodic-compaction-time";
/// The filter's periodic compaction: Flink's default in both releases (`StateTtlConfig`'s in
/// 1.20, the key's in 2.x), and what statebench's column family with its TTL filter gets
/// (RocksDB's own default with a compaction filter): `periodic_compaction_seconds=2592000` in
/// both OPTIONS files.
const TTL_PERIODIC_COMPACTION_DAYS: u32 = 30;

/// Where a job setting (sink, checkpoint storage) is made instead of Flink's configuration.
fn job_setter(key: &str) -> &'static str {
    match key {
        "sink.delivery-guarantee" => {
            "KafkaSink.builder().setDeliveryGuarantee(DeliveryGuarantee.…)"
        }
        "sink.transaction-timeout" => {
            "the producer's transaction.timeout.ms (at most the broker's transaction.max.timeout.ms)"
        }
        "sink.idempotent" => "an upserting sink keyed by record id (dedupe on write)",
        "sink.reader-isolation" => "the downstream consumers' isolation.level",
        "checkpoint.upload-rate-per-sec" => "the bandwidth to the checkpoint storage (HDFS/S3)",
        _ => "the job's code",
    }
}

/// How an options factory sets a knob Flink's configuration has no key for (RocksJava).
fn factory_setter(key: &str) -> &'static str {
    match key {
        "use-direct-reads" => "DBOptions.setUseDirectReads",
        "use-direct-io-for-flush-and-compaction" => "DBOptions.setUseDirectIoForFlushAndCompaction",
        "io.rate-limit-per-sec" => "DBOptions.setRateLimiter(new RateLimiter(bytesPerSecond))",
        "compaction.level.multiplier" => "ColumnFamilyOptions.setMaxBytesForLevelMultiplier",
        "compaction.level0-slowdown-writes-trigger" => {
            "ColumnFamilyOptions.setLevel0SlowdownWritesTrigger"
        }
        "compaction.level0-stop-writes-trigger" => "ColumnFamilyOptions.setLevel0StopWritesTrigger",
        "compaction.soft-pending-compaction-bytes-limit" => {
            "ColumnFamilyOptions.setSoftPendingCompactionBytesLimit"
        }
        "compaction.hard-pending-compaction-bytes-limit" => {
            "ColumnFamilyOptions.setHardPendingCompactionBytesLimit"
        }
        "compaction.disable-auto-compactions" => "ColumnFamilyOptions.setDisableAutoCompactions",
        _ => "a RocksDBOptionsFactory",
    }
}

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
    fn has_size(&self) -> bool {
        let c = self.effective();
        c.process_size.is_some()
            || c.flink_size.is_some()
            || (c.task_heap.is_some() && c.managed_size.is_some())
    }

    fn describe(&self) -> String {
        match (&self.file, self.process_size) {
            (Some(file), _) => file.clone(),
            (None, Some(size)) => {
                format!("--taskmanager-process-size {}", format_memory_size(size))
            }
            (None, None) => "the command line".to_string(),
        }
    }
}

/// The profile as a Flink 1.20 `config.yaml` fragment (see [`flink_for`]).
pub fn flink(profile: &Profile) -> String {
    flink_for(profile, FlinkVersion::V1_20)
}

/// The profile as a `config.yaml` fragment for `version`, for a TaskManager of Flink's default
/// one slot (see [`flink_sized`]).
pub fn flink_for(profile: &Profile, version: FlinkVersion) -> String {
    flink_sized(profile, version, &Cluster::default()).text
}

/// A `flink` export and whether the profile fits the TaskManager it was sized for.
#[derive(Debug, Clone)]
pub struct FlinkExport {
    pub text: String,
    /// `Some(reason)` when the profile's memory does not fit the given TaskManager (the export
    /// says so in a comment too).
    pub misfit: Option<String>,
    /// The TaskManager's memory as Flink derives it with the export's lines in place.
    pub taskmanager: Option<TmMemory>,
}

/// The profile as a `config.yaml` fragment for `version` and `cluster`: only what the profile
/// sets (itself or through a profile other than `flink-default` it extends) is a live line;
/// every key it merely inherits keeps Flink's default, which `flink-default` holds. Memory is
/// managed memory sized for the cluster's slots (`memory.mode: managed`, Flink's default) or
/// `fixed-per-slot` with the task off-heap memory that must cover it; knobs Flink has no key
/// for are comments naming the options-factory call that applies them; values Flink overrides
/// are said where they stand; with a TaskManager size, Flink's whole memory derivation and
/// whether the profile fits.
pub fn flink_sized(profile: &Profile, version: FlinkVersion, cluster: &Cluster) -> FlinkExport {
    let k = &profile.knobs;
    let derived = profile.derived(crate::backend::STATE_COLUMN_FAMILIES.len());
    let mut out = format!(
        "# statebench profile '{}' as Flink {} configuration (config.yaml).\n\
         # Only what the profile sets is written; every other key keeps Flink's default (statebench's flink-default).\n\
         # Flink derives from it: block cache {}, WriteBufferManager {} ({} per state column family) per slot.\n",
        profile.name,
        version.name(),
        human_bytes(derived.block_cache_capacity as f64),
        human_bytes(derived.write_buffer_manager_capacity as f64),
        human_bytes(derived.write_buffer_budget_per_column_family as f64),
    );
    if version == FlinkVersion::V2 {
        // statebench's targets are Flink 1.20's FRocksDB and RocksDB 11.8, neither of them 2.0's.
        out.push_str(&format!(
            "# Flink 2.0 embeds FRocksDB 8.10.0; statebench measured the profile with target '{}'.\n",
            k.target.name()
        ));
    }
    out.push_str("state.backend.type: rocksdb\n");
    let memory = memory_lines(profile, cluster);
    out.push_str(&memory.text);
    let mut factory = Vec::new();
    let mut job = Vec::new();
    let mut inherited = 0;
    for ((key, value), info) in flink_config(profile).into_iter().zip(KNOBS) {
        let knob = info.key;
        if matches!(
            info.knob,
            Knob::ManagedMemory | Knob::MemoryMode | Knob::Target
        ) {
            // Memory is written above; `target` is statebench's own (which RocksDB to imitate).
            continue;
        }
        if !profile.sets(info.knob) {
            inherited += 1;
            continue;
        }
        if info.is_job_setting() {
            job.push(format!("#   {knob}: {value}  ->  {}", job_setter(knob)));
            continue;
        }
        if info.knob == Knob::CheckpointInterval && k.checkpoint_interval.0 == 0 {
            // Flink's checkpointing is off while the key is unset.
            out.push_str("# execution.checkpointing.interval: unset (checkpointing off)\n");
            continue;
        }
        if key.starts_with(FACTORY_PREFIX) {
            factory.push(format!("#   {knob}: {value}  ->  {}", factory_setter(knob)));
            continue;
        }
        out.push_str(&format!("{key}: {value}\n"));
        // Both releases build the partitioned filter with `new BloomFilter(10.0, false)`
        // (RocksDBResourceContainer, read from either jar).
        if info.knob == Knob::BloomBitsPerKey
            && k.use_bloom_filter
            && k.partitioned_index_filters
            && k.bloom_bits_per_key != FLINK_PARTITIONED_BLOOM_BITS
        {
            out.push_str(&format!(
                "# ^ not applied: with partitioned index/filters Flink {} uses {FLINK_PARTITIONED_BLOOM_BITS} bits per key\n",
                version.name()
            ));
        }
    }
    if inherited > 0 {
        out.push_str(&format!(
            "# {inherited} more knobs are Flink's defaults here: not written (`statebench profiles show {}` lists them).\n",
            profile.name
        ));
    }
    // The TTL compaction filter Flink attaches to states with a TTL; target rocksdb-11.8
    // measures without it.
    let modelled = if profile.target_options().ttl_compaction_filter {
        "as statebench reproduces it"
    } else {
        "statebench's target attaches none"
    };
    match version {
        FlinkVersion::V1_20 => out.push_str(&format!(
            "# TTL compaction filter ({modelled}): Flink 1.20 takes its settings from each state's\n\
             # StateTtlConfig (cleanupInRocksdbCompactFilter; defaults {QUERY_TIME_AFTER_NUM_ENTRIES} entries, {TTL_PERIODIC_COMPACTION_DAYS} days).\n"
        )),
        FlinkVersion::V2 => out.push_str(&format!(
            "# TTL compaction filter ({modelled}); Flink 2.x's defaults, which a state's StateTtlConfig overrides:\n\
             # {TTL_QUERY_TIME_KEY}: {QUERY_TIME_AFTER_NUM_ENTRIES}\n\
             # {TTL_PERIODIC_COMPACTION_KEY}: {TTL_PERIODIC_COMPACTION_DAYS}d\n"
        )),
    }
    if !job.is_empty() {
        out.push_str("# Settings of the job's sink and its checkpoint storage, not of Flink's configuration:\n");
        for line in job {
            out.push_str(&line);
            out.push('\n');
        }
    }
    if !factory.is_empty() {
        out.push_str(&format!(
            "# Not settable from Flink's configuration: a RocksDBOptionsFactory\n\
             # ({}, named by\n\
             # state.backend.rocksdb.options-factory) must apply these:\n",
            version.options_factory()
        ));
        for line in factory {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out.push_str(&memory.report);
    FlinkExport {
        text: out,
        misfit: memory.misfit,
        taskmanager: memory.taskmanager,
    }
}

/// The export's memory: live lines, the TaskManager report, the verdict.
struct MemoryLines {
    text: String,
    report: String,
    misfit: Option<String>,
    taskmanager: Option<TmMemory>,
}

/// How the profile's memory per slot is deployed on `cluster`, and whether it fits.
fn memory_lines(profile: &Profile, cluster: &Cluster) -> MemoryLines {
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
        match k.memory_mode {
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
                text.push_str(&format!(
                    "state.backend.rocksdb.memory.fixed-per-slot: {}\n",
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
                let fits = rocksdb >= per_slot;
                if !fits {
                    misfit = Some(format!(
                        "each slot's RocksDB gets {} of managed memory, less than memory.managed-size {}",
                        human_bytes(rocksdb as f64),
                        human_bytes(per_slot as f64)
                    ));
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
            (true, MemoryMode::FixedPerSlot) => {
                let fits = m.task_off_heap_per_slot() >= per_slot;
                if !fits {
                    misfit = Some(format!(
                        "task off-heap memory per slot {} does not cover fixed-per-slot {}",
                        human_bytes(m.task_off_heap_per_slot() as f64),
                        human_bytes(per_slot as f64)
                    ));
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
    }
    MemoryLines {
        text,
        report,
        misfit,
        taskmanager: derived,
    }
}

/// The OPTIONS file RocksDB writes when it opens the profile's column families (in a temporary
/// directory): the options really in effect, in RocksDB's own INI format.
pub fn rocksdb_options(profile: &Profile) -> Result<String, BackendError> {
    let dir = tempfile::Builder::new()
        .prefix("statebench-export-")
        .tempdir()
        .map_err(|e| BackendError::Setup(format!("cannot create a temporary directory: {e}")))?;
    let backend = StateBackend::open(dir.path(), profile)?;
    let path = backend
        .latest_options_file()?
        .ok_or_else(|| BackendError::Corrupt("RocksDB wrote no OPTIONS file".to_string()))?;
    let text = read(&path)?;
    // RocksDB writes its bloom filter policy by name alone (`filter_policy=bloomfilter`), which
    // LoadOptionsFromFile turns into no filter at all: write the form it loads, with the bits
    // per key RocksDB really uses.
    let text = match profile.knobs.effective_bloom_bits_per_key() {
        Some(bits) => text.replace(
            "filter_policy=bloomfilter\n",
            &format!("filter_policy=bloomfilter:{bits}:false\n"),
        ),
        None => text,
    };
    if profile.knobs.target == Target::Flink120 {
        // Flink 1.20's FRocksDB 6.20.3 refuses options it does not know (and a newer version
        // header does not make it lenient): its version, its options only.
        let (text, dropped) = for_frocksdb_6_20(&text);
        let mut listed = String::from("#  ");
        let mut width = 3;
        for (i, name) in dropped.iter().enumerate() {
            let item = if i + 1 < dropped.len() {
                format!(" {name},")
            } else {
                format!(" {name}")
            };
            if width + item.len() > 100 {
                listed.push_str("\n#  ");
                width = 3;
            }
            width += item.len();
            listed.push_str(&item);
        }
        return Ok(format!(
            "# statebench profile '{}' (target {}): the OPTIONS file RocksDB wrote for it, as FRocksDB 6.20.3\n\
             # (Flink 1.20) reads it: its version header, only the options it knows. Left out, {} options\n\
             # of RocksDB 11.8 that 6.20.3 does not have:\n{listed}\n{text}",
            profile.name,
            profile.knobs.target.name(),
            dropped.len(),
        ));
    }
    // Its [Version] section names the RocksDB that wrote it.
    Ok(format!(
        "# statebench profile '{}' (target {}): the OPTIONS file RocksDB wrote for it.\n{text}",
        profile.name,
        profile.knobs.target.name(),
    ))
}

/// The OPTIONS file FRocksDB 6.20.3 writes (parity/job's `OptionsFileCheck template`): the
/// option names it knows per section and the fields of its struct-valued options.
const FROCKSDB_6_20_OPTIONS: &str = include_str!("config/frocksdb-6.20.3-OPTIONS");

/// The kind of an OPTIONS section header (`[CFOptions "default"]` -> `CFOptions`).
fn section_kind(line: &str) -> Option<&str> {
    let inner = line.trim().strip_prefix('[')?.strip_suffix(']')?;
    Some(inner.split(' ').next().unwrap_or(inner))
}

/// The `a=1;b={x=2;};` fields of a struct value (braces stripped), split at the top level.
fn struct_fields(value: &str) -> Option<Vec<&str>> {
    let inner = value.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut fields = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ';' if depth == 0 => {
                if i > start {
                    fields.push(&inner[start..i]);
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < inner.len() {
        fields.push(&inner[start..]);
    }
    Some(fields)
}

/// Options the export takes from FRocksDB 6.20.3's own file rather than from the RocksDB 11.8
/// statebench runs: 11.8's default, which 6.20 does not keep when it opens a database with it,
/// and no profile or target sets. (section kind, option, why)
const FROCKSDB_6_20_OWN: &[(&str, &str, &str)] = &[(
    "DBOptions",
    "write_dbid_to_manifest",
    "where the DB id is recorded; 6.20 loads true but opens with false",
)];

/// An option's value in FRocksDB 6.20.3's own file.
fn template_value(kind: &str, key: &str) -> Option<String> {
    let mut current = "";
    for line in FROCKSDB_6_20_OPTIONS.lines() {
        if let Some(k) = section_kind(line) {
            current = k;
            continue;
        }
        if current == kind
            && let Some((k, v)) = line.trim().split_once('=')
            && k == key
        {
            return Some(v.to_string());
        }
    }
    None
}

/// Section kind -> option -> the fields 6.20 knows of a struct-valued option (None: a plain
/// value).
type KnownOptions =
    std::collections::HashMap<String, std::collections::HashMap<String, Option<Vec<String>>>>;

fn frocksdb_6_20_options() -> KnownOptions {
    let mut known = KnownOptions::new();
    let mut kind = String::new();
    for line in FROCKSDB_6_20_OPTIONS.lines() {
        if let Some(k) = section_kind(line) {
            kind = k.to_string();
            continue;
        }
        let Some((key, value)) = line.trim().split_once('=') else {
            continue;
        };
        let fields = struct_fields(value).map(|fields| {
            fields
                .iter()
                .filter_map(|f| f.split_once('=').map(|(name, _)| name.to_string()))
                .collect()
        });
        known
            .entry(kind.clone())
            .or_default()
            .insert(key.to_string(), fields);
    }
    known
}

/// RocksDB 11.8's OPTIONS text as FRocksDB 6.20.3 loads it: 6.20.3's version header, only the
/// options (and struct fields) 6.20.3 knows. Returns the text and the options left out.
fn for_frocksdb_6_20(text: &str) -> (String, Vec<String>) {
    let known = frocksdb_6_20_options();
    let mut out = String::new();
    let mut dropped: Vec<String> = Vec::new();
    let mut kind = String::new();
    for line in text.lines() {
        if let Some(k) = section_kind(line) {
            kind = k.to_string();
            out.push_str(line);
            out.push('\n');
            if kind == "Version" {
                out.push_str("  rocksdb_version=6.20.3\n  options_file_version=1.1\n");
            }
            continue;
        }
        let Some((key, value)) = line.trim().split_once('=') else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        if kind == "Version" {
            continue;
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        if let Some(value) = FROCKSDB_6_20_OWN
            .iter()
            .find(|(k, o, _)| *k == kind && *o == key)
            .and_then(|_| template_value(&kind, key))
        {
            out.push_str(&format!("{indent}{key}={value}\n"));
            continue;
        }
        match known.get(&kind).and_then(|options| options.get(key)) {
            None => {
                let name = format!("{kind}.{key}");
                if !dropped.contains(&name) {
                    dropped.push(name);
                }
            }
            Some(Some(fields)) => {
                let kept: Vec<&str> = struct_fields(value)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|f| {
                        f.split_once('=')
                            .is_some_and(|(name, _)| fields.iter().any(|k| k == name))
                    })
                    .collect();
                let body: String = kept.iter().map(|f| format!("{f};")).collect();
                out.push_str(&format!("{indent}{key}={{{body}}}\n"));
            }
            Some(None) => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    (out, dropped)
}

fn read(path: &Path) -> Result<String, BackendError> {
    std::fs::read_to_string(path)
        .map_err(|e| BackendError::Setup(format!("cannot read {}: {e}", path.display())))
}

/// The profile as statebench YAML (see [`Profile::to_yaml`]).
pub fn yaml(profile: &Profile) -> String {
    let description = profile
        .description
        .clone()
        .unwrap_or_else(|| format!("{} (exported by statebench)", profile.name));
    profile.to_yaml(&description)
}

/// The profile in `format` (Flink 1.20's configuration for `flink`).
pub fn export(profile: &Profile, format: Format) -> Result<String, BackendError> {
    export_for(profile, format, FlinkVersion::default())
}

/// The profile in `format`, Flink configuration for `flink_version`.
pub fn export_for(
    profile: &Profile,
    format: Format,
    flink_version: FlinkVersion,
) -> Result<String, BackendError> {
    Ok(match format {
        Format::Flink => flink_for(profile, flink_version),
        Format::RocksdbOptions => rocksdb_options(profile)?,
        Format::Yaml => yaml(profile),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::profile::KNOBS;

    #[test]
    fn factory_only_knobs_are_comments_with_the_call_that_sets_them() {
        let text = flink(&Profile::load("hours-monolithic-filter").unwrap());
        assert!(text.contains("state.backend.type: rocksdb\n"));
        assert!(text.contains("#   use-direct-reads: true  ->  DBOptions.setUseDirectReads"));
        assert!(!text.lines().any(|l| l.starts_with(FACTORY_PREFIX)));
        // Every knob the profile sets is a Flink key or a comment: nothing is lost silently.
        let profile = Profile::load("hours-monolithic-filter").unwrap();
        for info in KNOBS.iter().filter(|k| profile.sets(k.knob)) {
            let found = match (info.knob, info.flink_key) {
                (Knob::ManagedMemory, _) => text.contains("taskmanager.memory.managed.size: 32mb"),
                (_, Some(key)) => text.contains(key),
                (_, None) => text.contains(&format!("#   {}: ", info.key)),
            };
            assert!(found, "{}: {text}", info.key);
        }
    }
}
