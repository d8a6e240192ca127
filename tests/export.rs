//! `statebench export`: what each format holds, checked against Flink's own key list and
//! against RocksDB loading the OPTIONS file back.

use std::collections::{HashMap, HashSet};

use clap::Parser as _;
use rocksdb::{Cache, ColumnFamilyDescriptor, DB, Env, Options};
use statebench::backend::options_file::{OptionsFile, verify};
use statebench::backend::{ALL_COLUMN_FAMILIES, STATE_COLUMN_FAMILIES};
use statebench::cli::Cli;
use statebench::config::Profile;
use statebench::config::profile::BUILTIN;
use statebench::export::{self, FlinkVersion};

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
            // Flink's own formulas on the exported values give the memory statebench derives
            // (RocksDBMemoryControllerUtils, the same bytecode in 1.20.1 and 2.0.0).
            let m = statebench::config::ByteSize::parse(
                values["state.backend.rocksdb.memory.fixed-per-slot"],
            )
            .unwrap()
            .0 as f64;
            let r: f64 = values["state.backend.rocksdb.memory.write-buffer-ratio"]
                .parse()
                .unwrap();
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
    let v2_values: HashMap<&str, &str> = key_values(&v2).into_iter().collect();
    assert_eq!(v2_values[export::TTL_QUERY_TIME_KEY], "1000");
    assert_eq!(v2_values[export::TTL_PERIODIC_COMPACTION_KEY], "30d");
    assert!(v1.contains(
        "# TTL compaction filter (as statebench reproduces it): Flink 1.20 takes its settings \
         from each state's\n# StateTtlConfig (cleanupInRocksdbCompactFilter; defaults 1000 \
         entries, 30 days).\n"
    ));
    assert!(v2.contains(
        "# TTL compaction filter (as statebench reproduces it); a state's StateTtlConfig \
         overrides these:\n"
    ));
    // The options factory's interface moved package in 2.0.
    let factory_1 = "org.apache.flink.contrib.streaming.state.RocksDBOptionsFactory";
    let factory_2 = "org.apache.flink.state.rocksdb.RocksDBOptionsFactory";
    assert!(v1.contains(factory_1) && !v1.contains(factory_2));
    assert!(v2.contains(factory_2) && !v2.contains(factory_1));
    assert!(v2.contains("#   io.rate-limit-per-sec: 3mb  ->  DBOptions.setRateLimiter"));
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
    for name in [
        "flink-default",
        "hours-partitioned-filter",
        "minutes-wbm-starved",
    ] {
        let profile = Profile::load(name).unwrap();
        let text = export::rocksdb_options(&profile).unwrap();
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
        let mismatches = verify(&profile, &written, &ALL_COLUMN_FAMILIES);
        assert!(mismatches.is_empty(), "{name}: {mismatches:#?}");
    }
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
