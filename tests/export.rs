//! `statebench export`: what each format holds, checked against Flink's own key list and
//! against RocksDB loading the OPTIONS file back.

use std::collections::HashSet;

use rocksdb::{Cache, ColumnFamilyDescriptor, DB, Env, Options};
use statebench::backend::options_file::{OptionsFile, verify};
use statebench::backend::{ALL_COLUMN_FAMILIES, STATE_COLUMN_FAMILIES};
use statebench::config::Profile;
use statebench::config::profile::BUILTIN;
use statebench::export;

/// Flink 1.20.1's configuration keys (first column of the list generated from its jar).
fn flink_keys() -> HashSet<String> {
    std::fs::read_to_string("src/config/flink-1.20.1-keys.txt")
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split('\t').next().map(str::to_string))
        .collect()
}

#[test]
fn the_flink_export_of_every_shipped_profile_holds_only_flink_keys_and_its_memory() {
    let keys = flink_keys();
    for (name, _) in BUILTIN {
        let profile = Profile::load(name).unwrap();
        let text = export::flink(&profile);
        let mut values = std::collections::HashMap::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let (key, value) = line.split_once(": ").unwrap();
            assert!(
                keys.contains(key),
                "{name}: '{key}' is not a Flink 1.20.1 key"
            );
            values.insert(key, value);
        }
        assert_eq!(values["state.backend.type"], "rocksdb");
        // Flink's own formulas on the exported values give the memory statebench derives.
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
