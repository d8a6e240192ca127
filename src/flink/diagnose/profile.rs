//! The profile a job ran with, from its instances' OPTIONS files (every option a knob sets) and
//! LOGs (the block caches, which no OPTIONS file holds): `extends: flink-default` and the knobs
//! whose value differs, each said where it came from.

use super::Instance;
use crate::config::Profile;
use crate::config::profile::{Form, Knob, NOT_SET, OptionInfo, RocksOption, Section, in_section};
use crate::config::units::human_bytes;

/// The profile found, its YAML, and how each value was found or why it was assumed.
pub(super) struct Found {
    pub(super) profile: Result<Profile, String>,
    /// Memory came from the job's Flink configuration, not from the LOG at an assumed ratio.
    pub(super) memory_from_config: bool,
    pub(super) yaml: String,
    pub(super) notes: Vec<String>,
}

/// The knobs an OPTIONS file holds as written (their plain and bytes rows of the knobs' RocksDB
/// options): column-family options first, then the database's and the table's.
fn plain_options() -> impl Iterator<Item = &'static OptionInfo> {
    [Section::Cf, Section::Db, Section::Table]
        .into_iter()
        .flat_map(in_section)
        .filter(|o| o.form != Form::Derived)
}

/// The job's Flink configuration, if the evidence holds it (`config.yaml` or
/// `flink-conf.yaml` in the directory given or an instance's): read as statebench reads any
/// Flink configuration (its memory keys are exact where the LOG has only the cache's size).
fn flink_config(dir: &std::path::Path, instances: &[Instance]) -> Option<std::path::PathBuf> {
    std::iter::once(dir)
        .chain(instances.iter().map(|i| i.dir.as_path()))
        .flat_map(|d| ["config.yaml", "flink-conf.yaml"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

pub(super) fn from_evidence(dir: &std::path::Path, instances: &[Instance]) -> Found {
    let mut edits: Vec<(String, String)> = Vec::new();
    let mut notes = Vec::new();
    let config = flink_config(dir, instances);
    // The instance whose LOG saw the most files: its column families hold the state.
    let Some(inst) = instances
        .iter()
        .max_by_key(|i| (i.options.is_some(), i.log.files.len()))
    else {
        return Found {
            profile: Err("no instance".into()),
            memory_from_config: false,
            yaml: String::new(),
            notes,
        };
    };
    let log = &inst.log;
    let cf = log
        .files
        .values()
        .map(|f| f.cf.clone())
        .next()
        .or_else(|| {
            log.column_families
                .iter()
                .find(|c| *c != "default")
                .cloned()
        })
        .unwrap_or_else(|| "default".to_string());
    // Index and filter blocks in the one cache: the OPTIONS file says it, else the LOG's table
    // options, else one cache for all column families is taken as Flink's shared one.
    let mut shared = log.cache_index_and_filter_blocks.unwrap_or(log.caches <= 1);
    match &inst.options {
        None => notes.push(format!(
            "{}: no OPTIONS file: every RocksDB option is Flink's default here",
            inst.dir.display()
        )),
        Some(file) => {
            for option in plain_options() {
                let Some(value) = file.option(&cf, option.option) else {
                    continue;
                };
                let value =
                    if option.form == Form::Bytes && value.chars().all(|c| c.is_ascii_digit()) {
                        format!("{value}b")
                    } else {
                        value.to_string()
                    };
                edits.push((option.knob.key().to_string(), value));
            }
            if let Some(version) = file.get("Version", "rocksdb_version") {
                // FRocksDB 6.20 (Flink 1.20) wrote it, or a RocksDB with 6.20's arena block
                // (write_buffer_size / 8: statebench's target flink-1.20 on RocksDB 11).
                let number = |o| file.option(&cf, o).and_then(|v| v.parse::<u64>().ok());
                let arena_620 = matches!(
                    (
                        number(RocksOption::ArenaBlockSize),
                        number(RocksOption::WriteBufferSize)
                    ),
                    (Some(a), Some(w)) if a == (w / 8).div_ceil(4096) * 4096
                );
                let target = if version.starts_with("6.20") || arena_620 {
                    "flink-1.20"
                } else {
                    "rocksdb-11.8"
                };
                edits.push((Knob::Target.key().into(), target.into()));
                notes.push(format!(
                    "target {target}: the OPTIONS file was written by RocksDB {version}{}",
                    if arena_620 && !version.starts_with("6.20") {
                        ", with FRocksDB 6.20's arena block (write_buffer_size / 8)"
                    } else {
                        ""
                    }
                ));
            }
            let filter = file
                .option(&cf, RocksOption::FilterPolicy)
                .unwrap_or(NOT_SET);
            let bloom = filter != NOT_SET;
            edits.push((Knob::UseBloomFilter.key().into(), bloom.to_string()));
            if bloom
                && let Some(b) = &log.biggest_file
                && b.entries > 0
                && b.filter_bytes > 0
            {
                let bits = (b.filter_bytes as f64 * 8.0 / b.entries as f64).round();
                edits.push((Knob::BloomBitsPerKey.key().into(), format!("{bits}")));
                notes.push(format!(
                    "bloom-filter.bits-per-key {bits}: the biggest SST file's filter ({} bytes for {} entries)",
                    b.filter_bytes, b.entries
                ));
            }
            shared = file.option(&cf, RocksOption::CacheIndexAndFilterBlocks) == Some("true");
            let partitioned = file.option(&cf, RocksOption::PartitionFilters) == Some("true");
            if shared {
                edits.push((
                    Knob::PartitionedIndexFilters.key().into(),
                    partitioned.to_string(),
                ));
            }
        }
    }
    // Without the job's configuration the LOG's block cache is all that tells its memory, with
    // or without an OPTIONS file (Flink may have moved the LOG away from it).
    let ratio_assumed = config.is_none() && memory(log, shared, &mut edits, &mut notes);
    let base = match &config {
        Some(path) => {
            notes.push(format!(
                "memory from the job's Flink configuration {} (the LOG has only the block cache's size); RocksDB's options from the OPTIONS file",
                path.display()
            ));
            path.display().to_string()
        }
        None => "flink-default".to_string(),
    };
    let mut profile = Profile::load(&base).map_err(|e| format!("{base}: {e}"));
    if let (Ok(p), Some(capacity), Some(_)) = (
        &profile,
        log.cache_capacities.iter().copied().max(),
        &config,
    ) && p.knobs.memory_mode.is_shared()
        && log.caches <= 1
    {
        let derived = p.derived(1).block_cache_capacity;
        // Half a percent apart is rounding (Flink's and statebench's), not other memory.
        if derived.abs_diff(capacity) as f64 > 0.005 * capacity as f64 {
            // The LOG's cache is what the job ran with: managed memory from it (Flink: cache =
            // (3 - r) / 3 of it), at the configuration's write-buffer ratio.
            let r = p.knobs.write_buffer_ratio;
            let managed = (capacity as f64 * 3.0 / (3.0 - r)).round() as u64;
            edits.push((Knob::ManagedMemory.key().into(), format!("{managed}b")));
            notes.push(format!(
                "the configuration gives a block cache of {derived} bytes, the LOG shows {capacity}: the job ran with other memory than this configuration says (-D settings, or another file); memory.managed-size {} from the LOG's cache at the configuration's ratio {r}",
                human_bytes(managed as f64)
            ));
        }
    }
    for (key, value) in &edits {
        profile = profile.and_then(|p| {
            p.edited(key, value)
                .map_err(|e| format!("{key}: {value} (from the evidence): {e}"))
        });
    }
    // Self-contained: flink-default and every knob the evidence gives another value.
    let mut yaml = String::from(
        "# The profile a Flink job's RocksDB ran with, read by `statebench diagnose` from its\n\
         # OPTIONS file and LOG (and its Flink configuration, if the evidence held one).\n\
         description: diagnosed from a job's RocksDB LOG and OPTIONS\n\
         extends: flink-default\n",
    );
    if let (Ok(p), Ok(default)) = (&profile, Profile::load("flink-default")) {
        for (key, _, value) in p.knob_differences(&default) {
            yaml.push_str(&format!("{key}: {value}\n"));
        }
        // The ratio the managed memory was derived at, written even where it is the default's:
        // the memory above holds only with it.
        if ratio_assumed && !yaml.contains("\nmemory.write-buffer-ratio:") {
            yaml.push_str(&format!(
                "memory.write-buffer-ratio: {}   # assumed (Flink's default): the LOG does not say it\n",
                p.knobs.write_buffer_ratio
            ));
        }
    }
    let profile = profile.map(|mut p| {
        p.name = "diagnosed".to_string();
        p
    });
    Found {
        profile,
        memory_from_config: config.is_some(),
        yaml,
        notes,
    }
}

/// The profile a running job's cluster configuration gives (`diagnose URL`: `GET
/// /jobmanager/config` as `key: value` lines), read as statebench reads any Flink configuration.
/// `managed_per_slot` is what the TaskManagers report (`GET /taskmanagers`): a TaskManager
/// started with settings of its own has memory the JobManager's configuration does not show.
pub(super) fn from_cluster_config(url: &str, text: &str, managed_per_slot: Option<u64>) -> Found {
    let mut notes = vec![format!(
        "memory and RocksDB options from the cluster's configuration ({url}/jobmanager/config); options the job sets in its own code or configuration, and an options factory's, are not in it"
    )];
    let profile = tempfile::Builder::new()
        .prefix("statebench-diagnose-")
        .tempdir()
        .map_err(|e| format!("a temporary folder: {e}"))
        .and_then(|dir| {
            let path = dir.path().join("flink-conf.yaml");
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            Profile::load(&path.display().to_string())
                .map_err(|e| format!("{url}/jobmanager/config: {e}"))
        })
        .and_then(|p| match managed_per_slot {
            // Under a MiB apart is rounding, not a TaskManager of its own.
            Some(per_slot)
                if p.knobs.memory_mode == crate::config::profile::MemoryMode::Managed
                    && per_slot.abs_diff(p.knobs.managed_memory.0) >= 1 << 20 =>
            {
                notes.push(format!(
                    "memory.managed-size {}: the managed memory per slot the TaskManagers report ({url}/taskmanagers), not the {} the JobManager's configuration gives",
                    human_bytes(per_slot as f64),
                    human_bytes(p.knobs.managed_memory.0 as f64)
                ));
                p.edited(Knob::ManagedMemory.key(), &format!("{per_slot}b"))
                    .map_err(|e| format!("{url}/taskmanagers: {e}"))
            }
            _ => Ok(p),
        });
    let mut yaml = String::from(
        "# The profile a running Flink job's cluster configuration gives, read by `statebench\n\
         # diagnose URL` from the JobManager's /jobmanager/config.\n\
         description: diagnosed from a running job's cluster configuration\n\
         extends: flink-default\n",
    );
    if let (Ok(p), Ok(default)) = (&profile, Profile::load("flink-default")) {
        for (key, _, value) in p.knob_differences(&default) {
            yaml.push_str(&format!("{key}: {value}\n"));
        }
    }
    Found {
        profile: profile.map(|mut p| {
            p.name = "diagnosed".to_string();
            p
        }),
        memory_from_config: true,
        yaml,
        notes,
    }
}

/// The memory knobs from the LOG's block caches: one shared cache (Flink's managed memory, or
/// fixed-per-slot) or one per column family (`memory.managed: false`). True when managed memory
/// was derived at an assumed write-buffer ratio.
fn memory(
    log: &super::LogEvidence,
    shared: bool,
    edits: &mut Vec<(String, String)>,
    notes: &mut Vec<String>,
) -> bool {
    let Some(capacity) = log.cache_capacities.iter().copied().max() else {
        let default = Profile::load("flink-default").ok();
        let (managed, ratio) = default.map_or((String::from("?"), 0.5), |p| {
            (
                human_bytes(p.knobs.managed_memory.0 as f64),
                p.knobs.write_buffer_ratio,
            )
        });
        notes.push(format!(
            "no block cache capacity in the LOG: memory is assumed flink-default's (memory.managed-size {managed} a slot, memory.write-buffer-ratio {ratio}): the budgets below hold only for it; put the job's config.yaml beside the evidence for its own"
        ));
        return false;
    };
    if log.caches > 1 && !shared {
        edits.push((Knob::MemoryMode.key().into(), "unmanaged".into()));
        edits.push((Knob::BlockCacheSize.key().into(), format!("{capacity}b")));
        notes.push(format!(
            "memory.mode unmanaged: {} column families each with a cache of their own of {capacity} bytes, index and filter blocks outside them",
            log.caches
        ));
        return false;
    }
    // Flink: cache = (3 - r) * M / 3; the ratio r is not in the LOG: Flink's default 0.5.
    let ratio = 0.5;
    let managed = (capacity as f64 * 3.0 / (3.0 - ratio)).ceil() as u64;
    let managed = managed.div_ceil(1 << 20) << 20;
    edits.push((
        Knob::ManagedMemory.key().into(),
        format!("{}mb", managed >> 20),
    ));
    if let Some(r) = log.high_pri_pool_ratio {
        edits.push((Knob::HighPrioPoolRatio.key().into(), format!("{r}")));
    }
    notes.push(format!(
        "memory.managed-size {} MiB: one block cache of {capacity} bytes shared by the column families is (3 - r) / 3 of managed memory; r, memory.write-buffer-ratio, is not in the LOG: Flink's default 0.5 assumed",
        managed >> 20
    ));
    true
}

#[cfg(test)]
mod tests {
    use super::from_cluster_config;

    /// The JobManager's configuration of parity/rest-evidence's cluster (18 MB managed), as
    /// `rest::cluster_config` turns it into lines.
    fn cluster_config() -> String {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/flink-rest/jobmanager-config.json"
        );
        let entries: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        entries
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                format!(
                    "{}: {}\n",
                    e["key"].as_str().unwrap(),
                    e["value"].as_str().unwrap()
                )
            })
            .collect()
    }

    #[test]
    fn the_taskmanagers_own_managed_memory_wins_over_the_jobmanagers_configuration() {
        let text = cluster_config();
        let same = from_cluster_config("http://jm:8081", &text, Some(18 << 20));
        assert_eq!(same.profile.unwrap().knobs.managed_memory.0, 18 << 20);
        assert_eq!(same.notes.len(), 1);
        // A TaskManager started with -Dtaskmanager.memory.managed.size of its own.
        let own = from_cluster_config("http://jm:8081", &text, Some(128 << 20));
        assert_eq!(own.profile.unwrap().knobs.managed_memory.0, 128 << 20);
        assert!(
            own.notes[1].contains("the TaskManagers report"),
            "{:?}",
            own.notes
        );
        assert!(
            own.yaml.contains("memory.managed-size: 128"),
            "{}",
            own.yaml
        );
    }
}
