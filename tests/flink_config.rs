//! `-p path/to/config.yaml`: a Flink configuration read as a profile, in the flat and nested
//! layouts of Flink 1.19+/2.x's `config.yaml` and in Flink 1.x's legacy `flink-conf.yaml`; the
//! export of every shipped profile reads back as the same profile; bad input names the file,
//! the line, the key and what is valid.

use std::path::Path;
use std::process::Command;

use statebench::config::flink_in::Layout;
use statebench::config::profile::{BUILTIN, CheckpointingMode, Compression, MemoryMode};
use statebench::config::{ByteSize, Millis, Profile};
use statebench::export::{self, FlinkVersion};

fn ignored(profile: &Profile) -> Vec<(String, Option<String>)> {
    profile
        .flink_import
        .as_ref()
        .expect("read as a Flink configuration")
        .ignored
        .iter()
        .map(|i| (i.key.clone(), i.why.clone()))
        .collect()
}

fn ignored_keys(profile: &Profile) -> Vec<String> {
    ignored(profile).into_iter().map(|(k, _)| k).collect()
}

#[test]
fn the_flink_export_of_every_shipped_profile_reads_back_as_the_same_profile() {
    let dir = tempfile::tempdir().unwrap();
    for (name, _) in BUILTIN {
        let profile = Profile::load(name).unwrap();
        for version in [FlinkVersion::V1_20, FlinkVersion::V2] {
            let text = export::flink_for(&profile, version);
            // The same text as a config.yaml (standard YAML) and as a legacy flink-conf.yaml.
            for file in ["config.yaml", "flink-conf.yaml"] {
                let sub = dir.path().join(format!("{name}-{}", version.name()));
                std::fs::create_dir_all(&sub).unwrap();
                let path = sub.join(file);
                std::fs::write(&path, &text).unwrap();
                let back = Profile::load(&path.to_string_lossy()).unwrap_or_else(|e| {
                    panic!("{name}, Flink {}, {file}: {e}\n{text}", version.name())
                });
                assert_eq!(
                    back.knobs,
                    profile.knobs,
                    "{name}, Flink {}, {file}:\n{text}",
                    version.name()
                );
                // No RocksDB or statebench key the export writes is lost, but the TTL filter's
                // keys of Flink 2.x (statebench's filter has Flink's defaults). TaskManager
                // memory keys that do not size RocksDB's budget may be ignored.
                let lost: Vec<String> = ignored_keys(&back)
                    .into_iter()
                    .filter(|k| {
                        (k.starts_with("state.")
                            || k.starts_with("statebench.")
                            || k.starts_with("execution."))
                            && !k.starts_with("state.backend.rocksdb.compaction.filter.")
                    })
                    .collect();
                assert!(lost.is_empty(), "{name}: ignored {lost:?}\n{text}");
            }
        }
        // `profiles show --flink`'s lines: every knob, those Flink has no key for as
        // `statebench.<knob>`.
        let lines: String = statebench::config::flink::flink_config(&profile)
            .into_iter()
            .map(|(k, v)| format!("{k}: {v}\n"))
            .collect();
        let path = dir.path().join(format!("{name}-flink-lines.yaml"));
        std::fs::write(&path, &lines).unwrap();
        let back = Profile::load(&path.to_string_lossy()).unwrap();
        assert_eq!(back.knobs, profile.knobs, "{name}:\n{lines}");
    }
}

#[test]
fn a_nested_config_yaml_maps_rocksdb_checkpointing_and_memory_keys() {
    let p = Profile::load("tests/fixtures/valid/flink/config.yaml").unwrap();
    // Flink's configuration folder is read as Flink reads it: its config.yaml.
    let folder = Profile::load("tests/fixtures/valid/flink").unwrap();
    assert_eq!(folder.knobs, p.knobs);
    let import = p.flink_import.as_ref().unwrap();
    assert_eq!(import.layout, Layout::Nested);
    assert_eq!(import.detected_by, "its name is config.yaml");
    let k = &p.knobs;
    // taskmanager.memory.managed.size 1gb among 4 slots, all of it the state backend's.
    assert_eq!(k.managed_memory, ByteSize(256 << 20));
    assert!(
        import
            .memory
            .starts_with("256mb = taskmanager.memory.managed.size 1gb / 4 slot(s)")
    );
    assert_eq!(k.write_buffer_ratio, 0.25);
    assert_eq!(k.write_buffer_size, ByteSize(8 << 20));
    assert_eq!(k.max_write_buffer_number, 4);
    assert!(k.use_bloom_filter);
    assert_eq!(
        k.compression_per_level,
        [Compression::None, Compression::Snappy, Compression::Lz4]
    );
    assert_eq!(k.block_size, ByteSize(16 << 10));
    assert_eq!(k.checkpoint_interval, Millis(30_000));
    assert!(k.incremental_checkpoints);
    // Unset keys are Flink's defaults.
    assert_eq!(k.target_file_size_base, ByteSize(64 << 20));
    assert_eq!(p.extends_chain, ["flink-default"]);
    assert_eq!(
        ignored(&p),
        [
            ("jobmanager.rpc.address".to_string(), None),
            ("jobmanager.memory.process.size".to_string(), None),
            ("parallelism.default".to_string(), None),
            ("execution.checkpointing.dir".to_string(), None),
        ]
    );
}

#[test]
fn a_flat_config_reads_deprecated_keys_statebench_keys_and_flags_typos() {
    let p = Profile::load("tests/fixtures/valid/flink-flat.yaml").unwrap();
    let import = p.flink_import.as_ref().unwrap();
    assert_eq!(import.layout, Layout::Flat);
    assert_eq!(
        import.detected_by,
        "key 'state.backend.type' (line 2) is Flink's, not a statebench profile's"
    );
    let k = &p.knobs;
    // fixed-per-slot overrides managed memory, as in Flink.
    assert_eq!(k.managed_memory, ByteSize(128 << 20));
    assert_eq!(k.write_buffer_size, ByteSize(16 << 20));
    assert!(k.dynamic_level_bytes);
    assert_eq!(
        k.compression_per_level,
        [Compression::Snappy, Compression::Zstd]
    );
    assert_eq!(k.background_jobs, 4);
    assert!(k.incremental_checkpoints, "state.backend.incremental");
    assert_eq!(k.checkpoints_retained, 3, "state.checkpoints.num-retained");
    assert_eq!(k.checkpoint_interval, Millis(60_000));
    assert_eq!(k.checkpointing_mode, CheckpointingMode::AtLeastOnce);
    assert!(k.use_direct_reads, "statebench.use-direct-reads");
    assert_eq!(
        ignored(&p),
        [
            (
                "state.backend.rocksdb.writebuffer.sise".to_string(),
                Some(
                    "not a Flink 1.20/2.0 key: did you mean state.backend.rocksdb.writebuffer.size?"
                        .to_string()
                )
            ),
            (
                "taskmanager.memory.managed.size".to_string(),
                Some(
                    "fixed-per-slot is set: RocksDB's budget is outside managed memory".to_string()
                )
            ),
        ]
    );
    assert!(
        import
            .notes
            .iter()
            .any(|n| n.contains("'state.backend.incremental' is deprecated")),
        "{:?}",
        import.notes
    );
}

#[test]
fn a_legacy_flink_conf_is_read_line_by_line_as_flink_1_reads_it() {
    let p = Profile::load("tests/fixtures/valid/legacy-flink-conf.yaml").unwrap();
    let import = p.flink_import.as_ref().unwrap();
    assert_eq!(import.layout, Layout::Legacy);
    let k = &p.knobs;
    // 512m (the comment after it is not part of the value) between 2 slots.
    assert_eq!(k.managed_memory, ByteSize(256 << 20));
    assert_eq!(k.block_size, ByteSize(8 << 10));
    assert!(k.use_bloom_filter);
    assert_eq!(k.bloom_bits_per_key, 14.0);
    assert_eq!(
        k.compression_per_level,
        [Compression::None, Compression::Lz4]
    );
    // The later line wins, as in Flink.
    assert_eq!(k.checkpoint_interval, Millis(20_000));
    assert_eq!(
        ignored(&p),
        [
            ("jobmanager.rpc.address".to_string(), None),
            ("rest.bind-address".to_string(), None),
            (
                "execution.checkpointing.interval".to_string(),
                Some("set again on line 12, which counts".to_string())
            ),
        ]
    );
    let notes = import.notes.join("\n");
    assert!(notes.contains("line 13 skipped"), "{notes}");
    assert!(
        notes.contains("'state.backend' is deprecated: read as state.backend.type"),
        "{notes}"
    );
}

fn error(path: &str) -> String {
    Profile::load(path).expect_err(path).to_string()
}

#[test]
fn bad_flink_values_name_the_file_the_line_the_key_and_what_is_valid() {
    assert_eq!(
        error("tests/fixtures/invalid/flink-bad-size.yaml"),
        "tests/fixtures/invalid/flink-bad-size.yaml line 3, key 'state.backend.rocksdb.writebuffer.size': invalid value '64 xb': Flink expects a whole number of bytes with an optional unit (b, k/kb, m/mb, g/gb, t/tb, any case, a space allowed), e.g. '64 mb', '64mb' or '67108864'"
    );
    let msg = error("tests/fixtures/invalid/flink-nested-bad-compression.yaml");
    assert!(
        msg.starts_with("tests/fixtures/invalid/flink-nested-bad-compression.yaml line 5, key 'state.backend.rocksdb.compression.per.level': invalid compression 'snappy' in 'snappy;lz4': Flink expects CompressionType names"),
        "{msg}"
    );
    let msg = error("tests/fixtures/invalid/bad-duration-flink-conf.yaml");
    assert!(
        msg.starts_with("tests/fixtures/invalid/bad-duration-flink-conf.yaml line 3, key 'execution.checkpointing.interval': invalid value '10 parsecs': Flink expects a whole number with an optional unit (ms, s"),
        "{msg}"
    );
    let msg = error("tests/fixtures/invalid/flink-yaml-error/config.yaml");
    assert!(
        msg.starts_with("tests/fixtures/invalid/flink-yaml-error/config.yaml line 3: "),
        "{msg}"
    );
    // A combination Flink refuses, said with Flink's key.
    let msg = error("tests/fixtures/invalid/flink-bad-ratio.yaml");
    assert!(
        msg.starts_with("tests/fixtures/invalid/flink-bad-ratio.yaml: 'state.backend.rocksdb.memory.write-buffer-ratio' is 1.5 but must be between 0 and 1"),
        "{msg}"
    );
}

#[test]
fn a_profile_stays_a_profile_and_a_flink_key_in_one_points_to_the_knob() {
    let dir = tempfile::tempdir().unwrap();
    // Checkpointing keys are the same in both: a file of only those is a profile.
    let path = dir.path().join("checkpoints.yaml");
    std::fs::write(&path, "execution.checkpointing.interval: 10s\n").unwrap();
    let p = Profile::load(&path.to_string_lossy()).unwrap();
    assert!(p.flink_import.is_none());
    assert_eq!(p.knobs.checkpoint_interval, Millis(10_000));
    // `extends:` makes it a profile, where Flink's spelling is an unknown key.
    let path = dir.path().join("mixed.yaml");
    std::fs::write(
        &path,
        "extends: flink-default\nstate.backend.rocksdb.writebuffer.size: 8mb\n",
    )
    .unwrap();
    let msg = Profile::load(&path.to_string_lossy())
        .unwrap_err()
        .to_string();
    assert!(
        msg.ends_with("line 2 (did you mean 'writebuffer.size'?)"),
        "{msg}"
    );
    // A profile may extend a Flink configuration (what `tune` writes for one), which extends
    // flink-default.
    let flink = std::fs::canonicalize("tests/fixtures/valid/flink/config.yaml").unwrap();
    let path = dir.path().join("tuned.yaml");
    std::fs::write(
        &path,
        format!(
            "description: tuned\nextends: {}\nwritebuffer.count: 6\n",
            flink.display()
        ),
    )
    .unwrap();
    let p = Profile::load(&path.to_string_lossy()).unwrap();
    assert!(p.flink_import.is_none());
    assert_eq!(p.extends_chain, ["config", "flink-default"]);
    assert_eq!(p.knobs.max_write_buffer_number, 6);
    assert_eq!(p.knobs.write_buffer_size, ByteSize(8 << 20));
    assert_eq!(p.knobs.managed_memory, ByteSize(256 << 20));
}

#[test]
fn managed_memory_comes_from_the_taskmanager_as_flink_divides_it() {
    let dir = tempfile::tempdir().unwrap();
    let load = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        Profile::load(&path.to_string_lossy())
    };
    // Slots default to 1; consumer weights count only whether the state backend has one.
    let p = load(
        "one-slot.yaml",
        "taskmanager.memory.managed.size: 96m\ntaskmanager.memory.managed.consumer-weights: OPERATOR:70,STATE_BACKEND:70,PYTHON:30\n",
    )
    .unwrap();
    assert_eq!(p.knobs.managed_memory, ByteSize(96 << 20));
    // A nested map of weights is read as Flink reads it; STATE_BACKEND 0 gives RocksDB nothing.
    let err = load(
        "config.yaml",
        "taskmanager:\n  memory:\n    managed:\n      size: 1g\n      consumer-weights:\n        OPERATOR: 70\n        STATE_BACKEND: 0\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("gives the state backend (STATE_BACKEND, or DATAPROC) no weight"),
        "{err}"
    );
    // Without a shared budget Flink gives each column family its own: fixed-per-tm is split
    // among the slots.
    let p = load(
        "per-tm.yaml",
        "state.backend.rocksdb.memory.managed: false\nstate.backend.rocksdb.memory.fixed-per-tm: 1gb\ntaskmanager.numberOfTaskSlots: 8\n",
    )
    .unwrap();
    assert_eq!(p.knobs.managed_memory, ByteSize(128 << 20));
    // Without any budget: each column family's own cache (memory.mode unmanaged), and the
    // TaskManager's managed memory is read but not RocksDB's.
    let p = load(
        "unmanaged.yaml",
        "state.backend.rocksdb.memory.managed: false
state.backend.rocksdb.block.cache-size: 32mb
taskmanager.memory.managed.size: 1g
",
    )
    .unwrap();
    assert_eq!(p.knobs.memory_mode, MemoryMode::Unmanaged);
    assert_eq!(p.knobs.block_cache_size, ByteSize(32 << 20));
    assert!(ignored_keys(&p).contains(&"taskmanager.memory.managed.size".to_string()));
    assert!(
        p.derived(3).notes[0].contains("no budget bounds RocksDB"),
        "{:?}",
        p.derived(3).notes
    );
    // With a shared budget Flink replaces the column families' caches: read, said not to count.
    let p = load(
        "shared.yaml",
        "state.backend.rocksdb.block.cache-size: 32mb
taskmanager.memory.managed.size: 1g
",
    )
    .unwrap();
    assert_eq!(p.knobs.memory_mode, MemoryMode::Managed);
    assert_eq!(p.knobs.block_cache_size, ByteSize(8 << 20));
    assert!(
        ignored(&p)
            .iter()
            .any(|(k, why)| k == "state.backend.rocksdb.block.cache-size"
                && why.as_deref().is_some_and(|w| w.contains("replaces"))),
        "{:?}",
        ignored(&p)
    );
    // No memory key at all: flink-default's, said so.
    let p = load("no-memory.yaml", "state.backend.type: rocksdb\n").unwrap();
    assert_eq!(p.knobs.managed_memory, ByteSize(256 << 20));
    assert!(
        p.flink_import
            .unwrap()
            .memory
            .starts_with("no TaskManager memory key is set")
    );
    // From the TaskManager's process size: total Flink memory (minus metaspace and overhead),
    // 0.4 of it managed, as Flink 1.20 derives it (its calculator prints managed 536870920 b).
    let p = load(
        "process.yaml",
        "taskmanager.memory.process.size: 1728m\ntaskmanager.numberOfTaskSlots: 4\n",
    )
    .unwrap();
    assert_eq!(p.knobs.managed_memory, ByteSize(536_870_920 / 4));
    let memory = p.flink_import.unwrap().memory;
    assert!(
        memory.contains("taskmanager.memory.managed.fraction 0.4 (Flink's default) of total Flink memory 1280mb, derived from taskmanager.memory.process.size 1728mb"),
        "{memory}"
    );
    // From total Flink memory and a fraction, nested.
    let p = load(
        "flink-size.yaml",
        "taskmanager:\n  numberOfTaskSlots: 2\n  memory:\n    flink.size: 2g\n    managed.fraction: 0.5\n",
    )
    .unwrap();
    assert_eq!(p.knobs.managed_memory, ByteSize(512 << 20));
    // A TaskManager Flink would refuse to start is refused with Flink's reason.
    let err = load("small.yaml", "taskmanager.memory.process.size: 300m\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with("small.yaml line 1, key 'taskmanager.memory.process.size': Flink refuses this TaskManager memory configuration: Sum of configured JVM Metaspace (256.000 MiB) and JVM Overhead (192.000 MiB) exceed configured Total Process Memory (300.000 MiB)."),
        "{err}"
    );
    // A fraction with nothing to take it of.
    let err = load(
        "fraction.yaml",
        "taskmanager.memory.managed.fraction: 0.3\n",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("managed memory cannot be derived"), "{err}");
    // Sizes in bytes, rounded down per slot as Flink's MemorySize#divide does.
    let p = load(
        "odd.yaml",
        "taskmanager.memory.managed.size: 100000001\ntaskmanager.numberOfTaskSlots: 3\n",
    )
    .unwrap();
    assert_eq!(p.knobs.managed_memory, ByteSize(33_333_333));
}

fn statebench(args: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_statebench"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_commands_say_what_was_detected_derived_and_ignored() {
    let (_, err) = statebench(&[
        "export",
        "-p",
        "tests/fixtures/valid/flink/config.yaml",
        "--format",
        "yaml",
    ]);
    assert!(
        err.contains("profile: tests/fixtures/valid/flink/config.yaml read as a Flink configuration (config.yaml format (Flink 1.19+/2.x standard YAML), nested keys), because its name is config.yaml"),
        "{err}"
    );
    assert!(
        err.contains("profile: read but ignored: jobmanager.rpc.address, jobmanager.memory.process.size, parallelism.default, execution.checkpointing.dir\n"),
        "{err}"
    );
    let (out, _) = statebench(&["profiles", "show", "tests/fixtures/valid/flink-flat.yaml"]);
    assert!(
        out.contains("# read but ignored: state.backend.rocksdb.writebuffer.sise (not a Flink 1.20/2.0 key: did you mean state.backend.rocksdb.writebuffer.size?)"),
        "{out}"
    );
    assert!(out.contains("memory.managed-size: 128mb"), "{out}");
}

/// The form the export is moving to: only what the profile sets, memory as the TaskManager's
/// managed memory and its slots (or fixed-per-slot with the off-heap memory that covers it),
/// inherited Flink defaults and knobs Flink has no key for as comments.
#[test]
fn an_export_with_managed_memory_and_commented_defaults_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let expected = Profile::load("minutes-wbm-starved").unwrap();
    let managed =
        "# statebench profile 'minutes-wbm-starved' as Flink 1.20 configuration (config.yaml).
state.backend.type: rocksdb
# Managed memory for 4 slots of 18mb each:
taskmanager.memory.managed.size: 72mb
taskmanager.numberOfTaskSlots: 4
state.backend.rocksdb.memory.write-buffer-ratio: 0.25
state.backend.rocksdb.writebuffer.size: 4mb
state.backend.rocksdb.compaction.level.target-file-size-base: 4mb
state.backend.rocksdb.compaction.level.max-size-level-base: 16mb
# Flink's defaults, which the profile inherits:
# state.backend.rocksdb.writebuffer.count: 2
# execution.checkpointing.incremental: false
# Not settable from Flink's configuration: a RocksDBOptionsFactory must apply these:
# statebench.io.rate-limit-per-sec: 3mb
";
    let fixed = "state.backend.type: rocksdb
state.backend.rocksdb.memory.fixed-per-slot: 18mb
taskmanager.memory.task.off-heap.size: 18mb
state.backend.rocksdb.memory.write-buffer-ratio: 0.25
state.backend.rocksdb.writebuffer.size: 4mb
state.backend.rocksdb.compaction.level.target-file-size-base: 4mb
state.backend.rocksdb.compaction.level.max-size-level-base: 16mb
#   io.rate-limit-per-sec: 3mb  ->  DBOptions.setRateLimiter(new RateLimiter(bytesPerSecond))
";
    for (name, text) in [("managed", managed), ("fixed", fixed)] {
        let sub = dir.path().join(name);
        std::fs::create_dir(&sub).unwrap();
        let path = sub.join("config.yaml");
        std::fs::write(&path, text).unwrap();
        let back = Profile::load(&path.to_string_lossy()).unwrap();
        // Where the budget lives (the knob `memory.mode`, in builds that have it) follows the
        // file; every other knob is the profile's.
        let differences: Vec<_> = back
            .knob_differences(&expected)
            .into_iter()
            .filter(|(key, _, _)| *key != "memory.mode")
            .collect();
        assert!(differences.is_empty(), "{name}: {differences:?}");
        let mode = back
            .knobs
            .values()
            .into_iter()
            .find(|(k, _)| *k == "memory.mode");
        if let Some((_, mode)) = mode {
            assert_eq!(
                mode,
                if name == "fixed" {
                    "fixed-per-slot"
                } else {
                    "managed"
                }
            );
        }
        let import = back.flink_import.unwrap();
        assert_eq!(
            import.from_comments,
            ["io.rate-limit-per-sec: 3mb"],
            "{name}"
        );
    }
}
