//! `statebench export`: what each format holds, checked against Flink's own key list and
//! against RocksDB loading the OPTIONS file back.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use clap::Parser as _;
use rocksdb::{Cache, ColumnFamilyDescriptor, DB, Env, Options};
use statebench::backend::options_file::{OptionsFile, verify};
use statebench::backend::{ALL_COLUMN_FAMILIES, STATE_COLUMN_FAMILIES};
use statebench::cli::Cli;
use statebench::config::Profile;
use statebench::config::profile::BUILTIN;
use statebench::config::profile::Knob;
use statebench::export::{self, Cluster, FlinkVersion};

/// A Flink release's current configuration keys (first column of the list `parity/flink-keys`
/// generated from its jar, rows of kind `key`: no deprecated alias, no fallback key).
fn flink_keys(version: FlinkVersion) -> HashSet<String> {
    let file = match version {
        FlinkVersion::V1_20 => "src/config/flink-1.20.1-keys.txt",
        FlinkVersion::V2 => "src/config/flink-2.0.0-keys.txt",
    };
    let keys: HashSet<String> = std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|fields| fields.get(2) == Some(&"key"))
        .map(|fields| fields[0].to_string())
        .collect();
    assert!(keys.len() > 200, "{file} holds only {} keys", keys.len());
    keys
}

/// `key: value` lines of a `flink` export (comments left out).
fn key_values(text: &str) -> Vec<(&str, &str)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|line| line.split_once(": ").unwrap())
        .collect()
}

#[test]
fn the_flink_export_of_every_shipped_profile_holds_only_flink_keys_and_its_memory() {
    for version in [FlinkVersion::V1_20, FlinkVersion::V2] {
        let keys = flink_keys(version);
        for (name, _) in BUILTIN {
            let profile = Profile::load(name).unwrap();
            let text = export::flink_for(&profile, version);
            let values: HashMap<&str, &str> = key_values(&text).into_iter().collect();
            for key in values.keys() {
                assert!(
                    keys.contains(*key),
                    "{name}: '{key}' is not a Flink {} key",
                    version.name()
                );
            }
            assert_eq!(values["state.backend.type"], "rocksdb");
            // Memory as managed memory (one slot: Flink's default), never fixed-per-slot for a
            // profile that does not ask for it; a profile that sets none leaves it to Flink.
            assert!(!values.contains_key("state.backend.rocksdb.memory.fixed-per-slot"));
            let Some(managed) = values.get("taskmanager.memory.managed.size") else {
                assert!(!profile.sets(Knob::ManagedMemory), "{name}");
                continue;
            };
            // Flink's own formulas on the exported values (Flink's default ratio 0.5 where the
            // profile sets none) give the memory statebench derives (RocksDBMemoryControllerUtils,
            // the same bytecode in 1.20.1 and 2.0.0).
            let m = statebench::config::ByteSize::parse(managed).unwrap().0 as f64;
            let r: f64 = values
                .get("state.backend.rocksdb.memory.write-buffer-ratio")
                .map_or(0.5, |r| r.parse().unwrap());
            let derived = profile.derived(STATE_COLUMN_FAMILIES.len());
            assert_eq!(
                ((3.0 - r) * m / 3.0) as u64,
                derived.block_cache_capacity,
                "{name}"
            );
            assert_eq!(
                (2.0 * m * r / 3.0) as u64,
                derived.write_buffer_manager_capacity,
                "{name}"
            );
        }
    }
}

/// Issue 18: `flink-default` exported `state.backend.rocksdb.memory.fixed-per-slot: 256mb`
/// (memory outside managed memory, which the TaskManager's off-heap budget must cover) and
/// `execution.checkpointing.incremental: false`, `num-retained: 1`, `min-pause: 0ms`, which
/// pasted into a job's config.yaml turn off its incremental checkpoints.
#[test]
fn flink_defaults_export_changes_nothing_a_cluster_already_has() {
    let text = export::flink(&Profile::load("flink-default").unwrap());
    assert!(!text.contains("fixed-per-slot"), "{text}");
    let live: Vec<(&str, &str)> = key_values(&text);
    assert_eq!(live, [("state.backend.type", "rocksdb")], "{text}");
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("execution.checkpointing."))
    );
}

/// A profile that extends flink-default with one knob exports that knob live and nothing else
/// of the profile (the rest is Flink's default, left out).
#[test]
fn a_profile_with_one_knob_exports_that_knob_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bigger-blocks.yaml");
    std::fs::write(&path, "extends: flink-default\nblock.blocksize: 16kb\n").unwrap();
    let profile = Profile::load(&path.to_string_lossy()).unwrap();
    let text = export::flink(&profile);
    assert_eq!(
        key_values(&text),
        [
            ("state.backend.type", "rocksdb"),
            ("state.backend.rocksdb.block.blocksize", "16kb")
        ],
        "{text}"
    );
    // Through a non-default parent the parent's knobs are the profile's too.
    let child = dir.path().join("child.yaml");
    std::fs::write(&child, "extends: bigger-blocks\nwritebuffer.count: 3\n").unwrap();
    let text = export::flink(&Profile::load(&child.to_string_lossy()).unwrap());
    assert_eq!(
        key_values(&text),
        [
            ("state.backend.type", "rocksdb"),
            ("state.backend.rocksdb.writebuffer.count", "3"),
            ("state.backend.rocksdb.block.blocksize", "16kb")
        ],
        "{text}"
    );
    // And the YAML export keeps what is set: it reads back setting the same knobs.
    let yaml = dir.path().join("again.yaml");
    std::fs::write(&yaml, export::yaml(&profile)).unwrap();
    let back = Profile::load(&yaml.to_string_lossy()).unwrap();
    assert_eq!(back.knobs, profile.knobs);
    assert_eq!(back.set_knobs, [Knob::BlockSize]);
}

/// Managed memory is exported for the cluster's slots; fixed-per-slot only on request, with the
/// task off-heap memory that covers it.
#[test]
fn memory_is_exported_the_way_the_cluster_is_sized() {
    let profile = Profile::load("minutes-wbm-sized").unwrap(); // 42mb per slot
    let four = Cluster {
        slots: Some(4),
        ..Cluster::default()
    };
    let text = export::flink_sized(&profile, FlinkVersion::V1_20, &four).text;
    let values: HashMap<&str, &str> = key_values(&text).into_iter().collect();
    assert_eq!(values["taskmanager.numberOfTaskSlots"], "4");
    assert_eq!(values["taskmanager.memory.managed.size"], "168mb");
    assert!(!values.contains_key("state.backend.rocksdb.memory.fixed-per-slot"));
    // Without --slots: Flink's default of one slot, said in a comment, the slot count not set.
    let one = export::flink(&profile);
    assert!(
        one.contains("taskmanager.memory.managed.size: 42mb\n"),
        "{one}"
    );
    assert!(!one.contains("\ntaskmanager.numberOfTaskSlots"), "{one}");
    assert!(one.contains("export with --slots N for N"), "{one}");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fixed.yaml");
    std::fs::write(
        &path,
        "extends: minutes-wbm-sized\nmemory.mode: fixed-per-slot\n",
    )
    .unwrap();
    let fixed = Profile::load(&path.to_string_lossy()).unwrap();
    let text = export::flink_sized(&fixed, FlinkVersion::V1_20, &four).text;
    let values: HashMap<&str, &str> = key_values(&text).into_iter().collect();
    assert_eq!(
        values["state.backend.rocksdb.memory.fixed-per-slot"],
        "42mb"
    );
    assert_eq!(values["taskmanager.memory.task.off-heap.size"], "168mb");
    assert!(!values.contains_key("taskmanager.memory.managed.size"));
    assert!(text.contains("outside managed memory"), "{text}");
}

/// `--taskmanager-process-size SIZE --slots N`: Flink's whole derivation and the verdict.
#[test]
fn the_taskmanager_derivation_says_whether_the_profile_fits() {
    let profile = Profile::load("flink-default").unwrap();
    let edited = profile.edited("memory.managed-size", "300mb").unwrap();
    let cluster = |size: u64, slots| Cluster {
        process_size: Some(size),
        slots: Some(slots),
        ..Cluster::default()
    };
    // 4 GiB, 4 slots: managed 1200mb leaves task heap; Flink's sizes are listed by key.
    let fits = export::flink_sized(&edited, FlinkVersion::V1_20, &cluster(4 << 30, 4));
    assert_eq!(fits.misfit, None, "{}", fits.text);
    assert!(
        fits.text
            .contains("taskmanager.memory.managed.size: 1200mb\n")
    );
    assert!(fits.text.contains("taskmanager.memory.process.size: 4gb\n"));
    let tm = fits.taskmanager.unwrap();
    assert_eq!(tm.managed, 1200 << 20);
    assert_eq!(tm.total_process(), 4 << 30);
    assert_eq!(tm.state_backend_per_slot(), 300 << 20);
    assert!(fits.text.contains("fits: yes"), "{}", fits.text);
    for key in [
        "taskmanager.memory.task.heap.size",
        "taskmanager.memory.network.min",
        "taskmanager.memory.jvm-overhead.min",
        "taskmanager.memory.jvm-metaspace.size",
    ] {
        assert!(fits.text.contains(&format!("#   {key} ")), "{key}");
    }
    // 1 GiB, 4 slots: 1200mb of managed memory cannot fit; Flink's own words say why.
    let misfit = export::flink_sized(&edited, FlinkVersion::V1_20, &cluster(1 << 30, 4));
    let reason = misfit.misfit.expect("does not fit");
    assert!(
        reason.contains("exceed configured Total Flink Memory"),
        "{reason}"
    );
    assert!(misfit.text.contains("DOES NOT FIT"), "{}", misfit.text);
    // flink-default sets no memory: the cluster's own managed memory per slot is reported.
    let own = export::flink_sized(&profile, FlinkVersion::V1_20, &cluster(1728 << 20, 4));
    assert_eq!(own.misfit, None);
    assert!(
        own.text
            .contains("each slot's RocksDB gets 128.0 MiB of managed memory"),
        "{}",
        own.text
    );
}

/// `--taskmanager-memory FILE`: a cluster's config.yaml, nested as Flink 1.19+ writes it.
#[test]
fn a_clusters_config_file_sizes_the_export() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("config.yaml");
    std::fs::write(
        &conf,
        "taskmanager:\n  numberOfTaskSlots: 2\n  memory:\n    process:\n      size: 2g\n    managed:\n      fraction: 0.3\njobmanager.rpc.address: localhost\n",
    )
    .unwrap();
    let out = dir.path().join("export.yaml");
    let argv = [
        "statebench",
        "export",
        "-p",
        "minutes-wbm-sized",
        "--format",
        "flink",
        "--taskmanager-memory",
        &conf.to_string_lossy(),
        "-o",
        &out.to_string_lossy(),
    ]
    .map(str::to_string);
    statebench::run(Cli::try_parse_from(argv).unwrap()).unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    // 2 slots from the file: 84mb, replacing the file's fraction; the file's keys not repeated.
    assert!(
        text.contains("taskmanager.memory.managed.size: 84mb\n"),
        "{text}"
    );
    assert!(
        text.contains("replaces taskmanager.memory.managed.fraction: 0.3"),
        "{text}"
    );
    assert!(
        !text.contains("\ntaskmanager.memory.process.size:"),
        "{text}"
    );
    assert!(text.contains("fits: yes"), "{text}");
    // Only the Flink format is sized.
    let argv = [
        "statebench",
        "export",
        "-p",
        "flink-default",
        "--format",
        "yaml",
        "--slots",
        "2",
    ]
    .map(str::to_string);
    let err = statebench::run(Cli::try_parse_from(argv).unwrap()).unwrap_err();
    assert_eq!(statebench::exit_code(&err), 2, "{err}");
}

/// A profile read from a cluster's Flink configuration (or extending one) is exported for that
/// cluster's TaskManager: its slots, not one. Written for one slot, a 4-slot TaskManager's
/// managed memory would shrink 4 times when the export is pasted back.
#[test]
fn a_profile_from_a_flink_configuration_is_exported_for_its_taskmanager() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("config.yaml");
    std::fs::write(
        &conf,
        "taskmanager:\n  numberOfTaskSlots: 4\n  memory:\n    process:\n      size: 4g\nstate.backend.rocksdb.writebuffer.size: 64mb\n",
    )
    .unwrap();
    let export = |profile: &Path| {
        let out = dir.path().join("export.yaml");
        let argv = [
            "statebench",
            "export",
            "-p",
            &profile.to_string_lossy(),
            "--format",
            "flink",
            "-o",
            &out.to_string_lossy(),
        ]
        .map(str::to_string);
        statebench::run(Cli::try_parse_from(argv).unwrap()).unwrap();
        std::fs::read_to_string(&out).unwrap()
    };
    // The configuration's own managed memory (its fraction of 4g, over 4 slots): not pinned.
    let text = export(&conf);
    assert!(
        !text.contains("\ntaskmanager.memory.managed.size:"),
        "{text}"
    );
    assert!(text.contains("each of its 4 slots already"), "{text}");
    // A profile that extends it and sets 512mb a slot: 2gb for the TaskManager's 4 slots.
    let tuned = dir.path().join("tuned.yaml");
    std::fs::write(
        &tuned,
        format!("extends: {}\nmemory.managed-size: 512mb\n", conf.display()),
    )
    .unwrap();
    let text = export(&tuned);
    assert!(
        text.contains("taskmanager.memory.managed.size: 2gb\n"),
        "{text}"
    );
}

#[test]
fn what_changed_in_flink_2_is_written_for_each_release_as_it_has_it() {
    let (keys_1, keys_2) = (
        flink_keys(FlinkVersion::V1_20),
        flink_keys(FlinkVersion::V2),
    );
    let profile = Profile::load("minutes-wbm-starved").unwrap();
    let v1 = export::flink_for(&profile, FlinkVersion::V1_20);
    let v2 = export::flink_for(&profile, FlinkVersion::V2);
    assert_eq!(export::flink(&profile), v1, "1.20 is the default");
    // The TTL compaction filter's settings are keys in 2.x only: 1.20 reads them from each
    // state's StateTtlConfig, and its export says so in a comment.
    for key in [
        export::TTL_QUERY_TIME_KEY,
        export::TTL_PERIODIC_COMPACTION_KEY,
    ] {
        assert!(keys_2.contains(key) && !keys_1.contains(key), "{key}");
        assert!(!v1.contains(key), "{key} in the 1.20 export");
    }
    // Flink 2.x's defaults, which the profile does not set: comments, not live lines.
    assert!(v2.contains(&format!("# {}: 1000\n", export::TTL_QUERY_TIME_KEY)));
    assert!(v2.contains(&format!("# {}: 30d\n", export::TTL_PERIODIC_COMPACTION_KEY)));
    assert!(v1.contains(
        "# TTL compaction filter (as statebench reproduces it): Flink 1.20 takes its settings \
         from each state's\n# StateTtlConfig (cleanupInRocksdbCompactFilter; defaults 1000 \
         entries, 30 days).\n"
    ));
    assert!(v2.contains(
        "# TTL compaction filter (as statebench reproduces it); Flink 2.x's defaults, which a \
         state's StateTtlConfig overrides:\n"
    ));
    // The options factory's interface moved package in 2.0.
    let factory_1 = "org.apache.flink.contrib.streaming.state.RocksDBOptionsFactory";
    let factory_2 = "org.apache.flink.state.rocksdb.RocksDBOptionsFactory";
    let direct = Profile::load("hours-monolithic-filter").unwrap();
    let (d1, d2) = (
        export::flink_for(&direct, FlinkVersion::V1_20),
        export::flink_for(&direct, FlinkVersion::V2),
    );
    assert!(d1.contains(factory_1) && !d1.contains(factory_2));
    assert!(d2.contains(factory_2) && !d2.contains(factory_1));
    // The rate limiter is the disk statebench measured with: said as that, not to deploy.
    assert!(v2.contains("#   io.rate-limit-per-sec: 3mb  ->  DBOptions.setRateLimiter"));
    assert!(v2.contains("not a setting to deploy") && !v2.contains("must apply"));
    // Every other line is the same: no profile key changed name in 2.0.
    let shared = |text: &str| -> Vec<String> {
        key_values(text)
            .into_iter()
            .filter(|(k, _)| !k.starts_with("state.backend.rocksdb.compaction.filter."))
            .map(|(k, v)| format!("{k}: {v}"))
            .collect()
    };
    assert_eq!(shared(&v1), shared(&v2));
    assert!(
        v1.starts_with("# statebench profile 'minutes-wbm-starved' as Flink 1.20 configuration")
    );
    assert!(
        v2.starts_with("# statebench profile 'minutes-wbm-starved' as Flink 2.x configuration")
    );
}

#[test]
fn the_flink_version_is_checked_on_the_command_line() {
    let argv = |version: &str, format: &str| {
        [
            "statebench",
            "export",
            "-p",
            "flink-default",
            "--format",
            format,
            "--flink-version",
            version,
        ]
        .map(str::to_string)
    };
    let err = Cli::try_parse_from(argv("2.0.0", "flink")).unwrap_err();
    assert_eq!(err.kind(), clap::error::ErrorKind::InvalidValue);
    let text = err.to_string();
    assert!(
        text.contains("invalid value '2.0.0' for '--flink-version")
            && text.contains("[possible values: 1.20, 2.x]"),
        "{text}"
    );
    // Only the Flink format has a release: with another, the flag is a usage error (exit 2).
    let err = statebench::run(Cli::try_parse_from(argv("2.x", "yaml")).unwrap()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "--flink-version applies to --format flink only"
    );
    assert_eq!(statebench::exit_code(&err), 2);
    // Written to a file: the 2.x export, as `flink_for` makes it.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("config.yaml");
    let mut args = argv("2.x", "flink").to_vec();
    args.extend(["-o".to_string(), out.to_string_lossy().into_owned()]);
    statebench::run(Cli::try_parse_from(args).unwrap()).unwrap();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        export::flink_for(&Profile::load("flink-default").unwrap(), FlinkVersion::V2)
    );
}

#[test]
fn the_exported_options_file_loads_back_into_rocksdb_with_every_knob_in_effect() {
    let dir = tempfile::tempdir().unwrap();
    let rocksdb_11 = dir.path().join("rocksdb-11.yaml");
    std::fs::write(
        &rocksdb_11,
        "extends: hours-partitioned-filter\ntarget: rocksdb-11.8\n",
    )
    .unwrap();
    for name in [
        "flink-default",
        "hours-partitioned-filter",
        "minutes-wbm-starved",
        &rocksdb_11.to_string_lossy(),
    ] {
        let profile = Profile::load(name).unwrap();
        let text = export::rocksdb_options(&profile).unwrap();
        let file = OptionsFile::parse(&text);
        // RocksDB's LoadLatestOptions reads a DB folder's newest OPTIONS-NNNNNN file.
        let exported = tempfile::tempdir().unwrap();
        std::fs::write(exported.path().join("OPTIONS-000007"), &text).unwrap();
        let (mut opts, cfs) = Options::load_latest(
            exported.path(),
            Env::new().unwrap(),
            false,
            Cache::new_lru_cache(8 << 20),
        )
        .unwrap_or_else(|e| panic!("{name}: RocksDB cannot load the export: {e}"));
        let names: Vec<String> = cfs.iter().map(|c| c.name().to_string()).collect();
        for cf in ALL_COLUMN_FAMILIES {
            assert!(
                names.iter().any(|n| n == cf),
                "{name}: {cf} missing from {names:?}"
            );
        }
        // A database opened with the loaded options writes them back: every knob in effect.
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let reopened = tempfile::tempdir().unwrap();
        let descriptors: Vec<ColumnFamilyDescriptor> = cfs;
        let db = DB::open_cf_descriptors(&opts, reopened.path(), descriptors).unwrap();
        drop(db);
        let latest = std::fs::read_dir(reopened.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("OPTIONS-")
            })
            .max()
            .unwrap();
        let written = OptionsFile::parse(&std::fs::read_to_string(latest).unwrap());
        // Target flink-1.20's file holds only what FRocksDB 6.20.3 knows: an option it lacks
        // (RocksDB 8's decoupled filter partitions, ...) takes RocksDB 11.8's default here.
        let mismatches: Vec<_> = verify(&profile, &written, &ALL_COLUMN_FAMILIES)
            .into_iter()
            .filter(|m| file.get(&m.section, &m.option).is_some())
            .collect();
        assert!(mismatches.is_empty(), "{name}: {mismatches:#?}");
    }
}

/// Flink 1.20's FRocksDB 6.20.3 refuses an option it does not know, and today's OPTIONS export
/// was RocksDB 11.8's file ("Could not find option: : async_wal_precreate"): target flink-1.20
/// writes 6.20.3's version and only options its own OPTIONS file has (parity/export-check loads
/// it with RocksJava's OptionsUtil.loadOptionsFromFile from Flink 1.20.1's jar); target
/// rocksdb-11.8 keeps RocksDB 11.8's file.
#[test]
fn the_options_export_for_flink_1_20_holds_only_what_frocksdb_6_20_knows() {
    let template = OptionsFile::parse(include_str!("../src/config/frocksdb-6.20.3-OPTIONS"));
    let kind = |section: &str| section.split(' ').next().unwrap().to_string();
    let known: HashSet<(String, String)> = template
        .sections
        .iter()
        .flat_map(|(section, options)| {
            options
                .keys()
                .map(move |option| (kind(section), option.clone()))
        })
        .collect();
    for (name, _) in BUILTIN {
        let text = export::rocksdb_options(&Profile::load(name).unwrap()).unwrap();
        let file = OptionsFile::parse(&text);
        assert_eq!(
            file.get("Version", "rocksdb_version"),
            Some("6.20.3"),
            "{name}"
        );
        for (section, options) in &file.sections {
            for option in options.keys() {
                if section != "Version" {
                    assert!(
                        known.contains(&(kind(section), option.clone())),
                        "{name}: [{section}] {option} is not an option of FRocksDB 6.20.3"
                    );
                }
            }
        }
        assert!(
            text.contains("async_wal_precreate"),
            "the header lists what is left out"
        );
        assert!(!text.contains("async_wal_precreate="));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.yaml");
    std::fs::write(&path, "extends: flink-default\ntarget: rocksdb-11.8\n").unwrap();
    let text = export::rocksdb_options(&Profile::load(&path.to_string_lossy()).unwrap()).unwrap();
    let file = OptionsFile::parse(&text);
    assert!(
        file.get("Version", "rocksdb_version")
            .is_some_and(|v| v.starts_with("11.8")),
        "{text}"
    );
    assert!(text.contains("async_wal_precreate="));
}

#[test]
fn yaml_export_reads_back_as_the_same_profile() {
    let dir = tempfile::tempdir().unwrap();
    for (name, _) in BUILTIN {
        let profile = Profile::load(name).unwrap();
        let path = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&path, export::yaml(&profile)).unwrap();
        let back = Profile::load(&path.to_string_lossy()).unwrap();
        assert_eq!(back.knobs, profile.knobs, "{name}");
    }
}

#[test]
fn the_tui_saves_a_profile_in_each_format_never_over_a_file() {
    use statebench::export::Format;
    use statebench::tui::save_profile;
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile::load("minutes-wbm-sized").unwrap();
    let names: Vec<String> = [
        Format::Yaml,
        Format::Flink,
        Format::RocksdbOptions,
        Format::Yaml,
    ]
    .into_iter()
    .map(|f| {
        let path = save_profile(&profile, f, dir.path()).unwrap();
        path.file_name().unwrap().to_string_lossy().into_owned()
    })
    .collect();
    assert_eq!(
        names,
        [
            "minutes-wbm-sized-tuned.yaml",
            "minutes-wbm-sized-tuned-flink.yaml",
            "minutes-wbm-sized-tuned.OPTIONS",
            "minutes-wbm-sized-tuned-2.yaml",
        ]
    );
    let flink = std::fs::read_to_string(dir.path().join(&names[1])).unwrap();
    assert!(flink.contains("state.backend.type: rocksdb"));
    let options = std::fs::read_to_string(dir.path().join(&names[2])).unwrap();
    assert!(options.contains("[CFOptions \"window-stats\"]"));
}

/// Bad TaskManager input is refused with the flag or file, the key and what is valid; a cluster
/// configuration Flink itself refuses is said to be the cluster's, not the profile's.
#[test]
fn bad_taskmanager_input_names_what_is_wrong() {
    let run = |extra: &[&str]| {
        let mut argv = vec![
            "statebench",
            "export",
            "-p",
            "minutes-wbm-sized",
            "--format",
            "flink",
        ];
        argv.extend_from_slice(extra);
        statebench::run(Cli::try_parse_from(argv).unwrap())
    };
    let err = run(&["--taskmanager-process-size", "1.5g"]).unwrap_err();
    assert_eq!(statebench::exit_code(&err), 2);
    assert!(
        err.to_string()
            .starts_with("--taskmanager-process-size '1.5g': a memory size in Flink's syntax"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("config.yaml");
    std::fs::write(&conf, "taskmanager.memory.managed.fraction: lots\n").unwrap();
    let err = run(&["--taskmanager-memory", &conf.to_string_lossy()]).unwrap_err();
    assert_eq!(statebench::exit_code(&err), 2);
    let text = err.to_string();
    assert!(
        text.contains("config.yaml")
            && text.contains("'taskmanager.memory.managed.fraction: lots'"),
        "{text}"
    );
    // Metaspace above the whole process: Flink refuses the cluster's own configuration.
    let cluster = Cluster {
        config: statebench::config::tm_memory::TmMemoryConfig::from_pairs([(
            "taskmanager.memory.jvm-metaspace.size",
            "2g",
        )])
        .unwrap(),
        process_size: Some(1 << 30),
        ..Cluster::default()
    };
    let profile = Profile::load("minutes-wbm-sized").unwrap();
    let export = export::flink_sized(&profile, FlinkVersion::V1_20, &cluster);
    let misfit = export.misfit.unwrap();
    assert!(
        misfit.starts_with(
            "Flink refuses the TaskManager configuration itself: Sum of configured JVM Metaspace"
        ),
        "{misfit}"
    );
}

/// `statebench export ARGS` as a process: (exit code, stdout, stderr).
fn export_process(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_statebench"))
        .arg("export")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `statebench export -p PROFILE --format flink --into INTO EXTRA...` as a process.
fn export_into(profile: &str, into: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["-p", profile, "--format", "flink", "--into", into];
    args.extend_from_slice(extra);
    export_process(&args)
}

/// The user's case: a flat config.yaml that sets state.backend.type, the slots and the process
/// size. The fragment appended to it set them twice (Flink 1.20.1: "found duplicate key");
/// `--into` sets each once, in place, keeps the comments and lists old -> new on stderr.
#[test]
fn export_into_a_flat_config_sets_every_key_once_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("config.yaml");
    let input = "# production TaskManagers\njobmanager.rpc.address: jm.internal\ntaskmanager.numberOfTaskSlots: 2\ntaskmanager.memory.process.size: 4g   # r5.large\nstate.backend.type: hashmap\nstate.checkpoints.dir: s3://bucket/checkpoints\nstate.backend.rocksdb.writebuffer.size: 64mb\n";
    std::fs::write(&conf, input).unwrap();
    let path = conf.to_string_lossy();
    let (code, merged, stderr) = export_into(
        "minutes-wbm-starved",
        &path,
        &["--slots", "4", "--taskmanager-process-size", "8g"],
    );
    assert_eq!(code, 0, "{stderr}");
    // The input is untouched without -o naming it.
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), input);
    let lines: Vec<&str> = merged.lines().collect();
    assert_eq!(
        lines[..7],
        [
            "# production TaskManagers",
            "jobmanager.rpc.address: jm.internal",
            "taskmanager.numberOfTaskSlots: 4",
            "taskmanager.memory.process.size: 8gb   # r5.large",
            "state.backend.type: rocksdb",
            "state.checkpoints.dir: s3://bucket/checkpoints",
            "state.backend.rocksdb.writebuffer.size: 4mb",
        ]
    );
    // Every key once: the live lines' keys are distinct, and the added ones are there.
    let keys: Vec<&str> = key_values(&merged).into_iter().map(|(k, _)| k).collect();
    let distinct: HashSet<&str> = keys.iter().copied().collect();
    assert_eq!(keys.len(), distinct.len(), "{merged}");
    assert!(merged.contains("\ntaskmanager.memory.managed.size: 72mb\n"));
    for said in [
        "  taskmanager.numberOfTaskSlots: 2 -> 4 (line 3)",
        "  taskmanager.memory.process.size: 4g -> 8gb (line 4)",
        "  state.backend.type: hashmap -> rocksdb (line 5)",
        "  state.backend.rocksdb.writebuffer.size: 64mb -> 4mb (line 7)",
        "  taskmanager.memory.managed.size: 72mb (added)",
    ] {
        assert!(stderr.contains(&format!("{said}\n")), "{said}: {stderr}");
    }
    // The merged file's TaskManager: 8g, 4 slots, 72mb of managed memory, as derived in it.
    assert!(
        merged.contains(
            "#   taskmanager.memory.managed.size                  72.0 MiB  (75497472 bytes)"
        ),
        "{merged}"
    );
    // -o naming the input: merged in place, atomically; the result reads back the same way.
    let (code, _, stderr) = export_into("minutes-wbm-starved", &path, &["-o", &path]);
    assert_eq!(code, 0, "{stderr}");
    let again = std::fs::read_to_string(&conf).unwrap();
    assert!(again.starts_with("# production TaskManagers\n"), "{again}");
    assert!(again.contains("\nstate.backend.type: rocksdb\n"));
    assert!(!again.contains("hashmap"));
}

/// A key set nested (`state: backend: type:`) is the key the export writes flat: replaced where
/// it stands, in the nested file's own layout, its comments kept.
#[test]
fn export_into_a_nested_config_replaces_the_nested_keys() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("config.yaml");
    std::fs::write(
        &conf,
        "taskmanager:\n  numberOfTaskSlots: 4   # four cores\n  memory:\n    process:\n      size: 8g\nstate:\n  backend:\n    type: hashmap\n    rocksdb:\n      writebuffer:\n        size: 64mb\n  checkpoints:\n    dir: file:///tmp/cp\n",
    )
    .unwrap();
    let out = dir.path().join("merged").join("config.yaml");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let (code, stdout, stderr) = export_into(
        "minutes-wbm-starved",
        &conf.to_string_lossy(),
        &["-o", &out.to_string_lossy()],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "");
    let merged = std::fs::read_to_string(&out).unwrap();
    assert!(
        merged.starts_with("taskmanager:\n  numberOfTaskSlots: 4   # four cores\n  memory:\n    process:\n      size: 8g\nstate:\n  backend:\n    type: rocksdb\n    rocksdb:\n      writebuffer:\n        size: 4mb\n  checkpoints:\n    dir: file:///tmp/cp\n"),
        "{merged}"
    );
    // Not written a second time, flat, below.
    assert!(!merged.contains("\nstate.backend.type: "), "{merged}");
    assert!(!merged.contains("\nstate.backend.rocksdb.writebuffer.size: "));
    assert!(
        stderr.contains("  state.backend.type: hashmap -> rocksdb (line 8)\n"),
        "{stderr}"
    );
    // The merged file read as a profile is the profile exported, for its 4 slots.
    let profile = Profile::load(&out.to_string_lossy()).unwrap();
    let starved = Profile::load("minutes-wbm-starved").unwrap();
    assert_eq!(
        profile.knobs.write_buffer_size,
        starved.knobs.write_buffer_size
    );
    assert_eq!(profile.knobs.managed_memory, starved.knobs.managed_memory);
}

/// A legacy flink-conf.yaml: lines Flink skips stay, a key set twice keeps its last line (the
/// one Flink reads) and the first is commented out, the deprecated `state.backend` becomes
/// `state.backend.type`.
#[test]
fn export_into_a_legacy_flink_conf_keeps_every_other_line_verbatim() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("flink-conf.yaml");
    std::fs::write(
        &conf,
        "# legacy\nstate.backend: filesystem\ntaskmanager.numberOfTaskSlots: 2 # two\nnot a key value line\nstate.backend.rocksdb.writebuffer.size: 64mb\nstate.backend.rocksdb.writebuffer.size: 32mb\n",
    )
    .unwrap();
    let (code, merged, stderr) = export_into("minutes-wbm-starved", &conf.to_string_lossy(), &[]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = merged.lines().collect();
    assert_eq!(lines[0], "# legacy");
    assert_eq!(lines[1], "state.backend.type: rocksdb");
    assert_eq!(lines[2], "taskmanager.numberOfTaskSlots: 2 # two");
    assert_eq!(lines[3], "not a key value line");
    assert!(lines[4].starts_with("# state.backend.rocksdb.writebuffer.size: 64mb  # statebench"));
    assert_eq!(lines[5], "state.backend.rocksdb.writebuffer.size: 4mb");
    assert!(
        stderr.contains("state.backend.type: filesystem -> rocksdb (was set as state.backend, its deprecated name, line 2)"),
        "{stderr}"
    );
    // 2 slots from the file: 36mb of managed memory.
    assert!(
        merged.contains("\ntaskmanager.memory.managed.size: 36mb\n"),
        "{merged}"
    );
}

/// An input that is not a Flink configuration is an error naming the file and the line, and
/// nothing is written.
#[test]
fn export_into_an_invalid_or_missing_file_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("config.yaml");
    std::fs::write(
        &conf,
        "state.backend.type: rocksdb\ntaskmanager:\n  memory: [4g\n",
    )
    .unwrap();
    let out = dir.path().join("out.yaml");
    let (code, _, stderr) = export_into(
        "minutes-wbm-starved",
        &conf.to_string_lossy(),
        &["-o", &out.to_string_lossy()],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!("{} line ", conf.display())),
        "{stderr}"
    );
    assert!(!out.exists());
    let missing = dir.path().join("nowhere.yaml");
    let (code, _, stderr) = export_into("minutes-wbm-starved", &missing.to_string_lossy(), &[]);
    assert_ne!(code, 0);
    assert!(stderr.contains("nowhere.yaml"), "{stderr}");
    // Only the Flink format merges.
    let (code, _, stderr) = export_process(&[
        "-p",
        "minutes-wbm-starved",
        "--format",
        "yaml",
        "--into",
        &conf.to_string_lossy(),
    ]);
    assert_eq!(code, 2, "{stderr}");
}

/// The fragment's header says which of its keys the target configuration sets already when it
/// knows that file, and otherwise which a config.yaml commonly sets, pointing at --into.
#[test]
fn the_fragment_names_the_keys_it_would_set_twice() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("config.yaml");
    std::fs::write(
        &conf,
        "state:\n  backend:\n    type: hashmap\ntaskmanager.numberOfTaskSlots: 4\ntaskmanager.memory.process.size: 8g\n",
    )
    .unwrap();
    let (code, text, stderr) = export_process(&[
        "-p",
        "minutes-wbm-starved",
        "--format",
        "flink",
        "--taskmanager-memory",
        &conf.to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        text.contains(&format!("# Keys {} sets already, which this fragment replaces:\n#   state.backend.type (line 3: hashmap -> rocksdb)\n", conf.display())),
        "{text}"
    );
    assert!(text.contains("'found duplicate key'"), "{text}");
    let (_, text, _) = export_process(&[
        "-p",
        "minutes-wbm-starved",
        "--format",
        "flink",
        "--slots",
        "2",
    ]);
    assert!(
        text.contains("# Appending this fragment to a config.yaml that sets one of its keys already (a cluster's\n# often sets state.backend.type, taskmanager.numberOfTaskSlots, taskmanager.memory.managed.size) sets it twice:\n"),
        "{text}"
    );
    assert!(text.contains("--into FILE"), "{text}");
}

/// The memory fix for a 4-slot, 8 GB TaskManager: about 1.4 GB of managed memory a
/// slot wrote `taskmanager.memory.managed.size: 5970004616b` and said "fits: yes" with 455.7 MiB
/// of task heap left (3.2 GiB before). Now it says what it squeezes and what size keeps it.
#[test]
fn a_managed_size_that_squeezes_the_task_heap_does_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("config.yaml");
    std::fs::write(
        &conf,
        "taskmanager.numberOfTaskSlots: 4\ntaskmanager.memory.process.size: 8g\n",
    )
    .unwrap();
    let profile = dir.path().join("big.yaml");
    std::fs::write(
        &profile,
        "extends: flink-default\nmemory.managed-size: 1492501154b\n",
    )
    .unwrap();
    let (code, merged, stderr) =
        export_into(&profile.to_string_lossy(), &conf.to_string_lossy(), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(merged.contains("\ntaskmanager.memory.managed.size: 5970004616b\n"));
    assert!(!merged.contains("fits: yes"), "{merged}");
    assert!(
        merged.contains("#   fits: NO: managed 5.6 GiB = 4 slots x 1.4 GiB for each slot's RocksDB; task heap left 455.7 MiB\n"),
        "{merged}"
    );
    let squeeze = "it squeezes the job's memory: task heap 3.2 GiB -> 455.7 MiB (-86 %; 113.9 MiB a slot, under 256.0 MiB); taskmanager.memory.process.size: 11560mb keeps the task heap at 3.2 GiB";
    assert!(
        stderr.contains(&format!("does not fit: {squeeze}")),
        "{stderr}"
    );
    // The size it names keeps the task heap: exported for it, nothing is squeezed.
    let (code, text, stderr) = export_into(
        &profile.to_string_lossy(),
        &conf.to_string_lossy(),
        &["--taskmanager-process-size", "11560mb"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(text.contains("#   fits: yes"), "{text}");
    assert!(!stderr.contains("does not fit"), "{stderr}");
}
