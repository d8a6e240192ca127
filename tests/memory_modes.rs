//! `memory.mode: unmanaged` (Flink's `state.backend.rocksdb.memory.managed: false` with no fixed
//! size) against Flink's default shared budget: every column family's own block cache of
//! `block.cache-size`, memtables with no WriteBufferManager, index and filter blocks held by the
//! table readers outside any cache, and a report that says RocksDB had no budget.

use std::process::Command;

use statebench::backend::options_file::{OptionsFile, verify};
use statebench::backend::{ALL_COLUMN_FAMILIES, CF_WINDOW_STATS, StateBackend};
use statebench::config::Profile;

fn profile(mode: &str) -> Profile {
    let p = Profile::load("flink-default")
        .unwrap()
        .edited("use-bloom-filter", "true")
        .unwrap()
        .edited("memory.managed-size", "64mb")
        .unwrap()
        .edited("memory.mode", mode)
        .unwrap();
    if mode == "unmanaged" {
        p.edited("block.cache-size", "16mb").unwrap()
    } else {
        p
    }
}

fn cf_int(backend: &StateBackend, cf: &str, property: &str) -> u64 {
    backend
        .db()
        .property_int_value_cf(backend.cf(cf).unwrap(), property)
        .unwrap()
        .unwrap()
}

/// What one mode does with 24 MB written to one state and read back: (memtable bytes before
/// the flush, SST files before it, table readers' bytes after it, the cache usage of the state
/// read and of another state).
fn measure(mode: &str) -> (u64, u64, u64, u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let profile = profile(mode);
    let backend = StateBackend::open(dir.path(), &profile).unwrap();
    let options = backend.latest_options_file().unwrap().unwrap();
    let file = OptionsFile::parse(&std::fs::read_to_string(options).unwrap());
    let mismatches = verify(&profile, &file, &ALL_COLUMN_FAMILIES);
    assert!(mismatches.is_empty(), "{mode}: {mismatches:#?}");
    let shared = (mode != "unmanaged").to_string();
    assert_eq!(
        file.table(CF_WINDOW_STATS, "cache_index_and_filter_blocks"),
        Some(shared.as_str())
    );
    let other = ALL_COLUMN_FAMILIES
        .iter()
        .find(|c| **c != CF_WINDOW_STATS)
        .unwrap();
    for cf in std::iter::once("default").chain(ALL_COLUMN_FAMILIES.iter().copied()) {
        let capacity = cf_int(&backend, cf, "rocksdb.block-cache-capacity");
        if mode == "unmanaged" {
            assert_eq!(
                capacity,
                16 << 20,
                "{cf}: its own cache of block.cache-size"
            );
        } else {
            assert_eq!(capacity, profile.derived(1).block_cache_capacity, "{cf}");
        }
    }
    let (db, cf) = (backend.db(), backend.cf(CF_WINDOW_STATS).unwrap());
    let mut value = vec![0u8; 1024];
    for i in 0..24_000u32 {
        // Incompressible enough that the memtable holds the bytes written.
        for (j, b) in value.iter_mut().enumerate() {
            *b = (i
                .wrapping_mul(2_654_435_761)
                .wrapping_add(j as u32 * 40_503)
                >> 13) as u8;
        }
        db.put_cf_opt(cf, i.to_be_bytes(), &value, backend.write_options())
            .unwrap();
    }
    // Let the flushes the writes set off finish (a WriteBufferManager's), then look.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while (cf_int(&backend, CF_WINDOW_STATS, "rocksdb.mem-table-flush-pending") > 0
        || cf_int(&backend, CF_WINDOW_STATS, "rocksdb.num-running-flushes") > 0)
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let memtables = cf_int(&backend, CF_WINDOW_STATS, "rocksdb.cur-size-all-mem-tables");
    let files = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "sst"))
        .count() as u64;
    db.flush_cf(cf).unwrap();
    for i in (0..24_000u32).step_by(7) {
        assert!(db.get_cf(cf, i.to_be_bytes()).unwrap().is_some());
    }
    let readers = cf_int(
        &backend,
        CF_WINDOW_STATS,
        "rocksdb.estimate-table-readers-mem",
    );
    let used = cf_int(&backend, CF_WINDOW_STATS, "rocksdb.block-cache-usage");
    let other_used = cf_int(&backend, other, "rocksdb.block-cache-usage");
    (memtables, files, readers, used, other_used)
}

#[test]
fn unmanaged_memory_has_a_cache_per_column_family_no_write_buffer_manager_and_index_outside() {
    let (mem_shared, files_shared, readers_shared, used_shared, other_shared) = measure("managed");
    let (mem_own, files_own, readers_own, used_own, other_own) = measure("unmanaged");
    // Shared: 64 MB of managed memory gives a 21 MB WriteBufferManager, which flushes the state
    // long before 24 MB; unmanaged, the 64 MB write buffer holds all of it.
    assert!(
        files_shared >= 1 && mem_shared < 20 << 20,
        "managed: the WriteBufferManager flushes ({files_shared} files, memtables {mem_shared})"
    );
    assert!(
        files_own == 0 && mem_own > 22 << 20,
        "unmanaged: no WriteBufferManager ({files_own} files, memtables {mem_own})"
    );
    // Index and filter blocks: charged to the shared cache, or held by the table readers.
    assert!(
        readers_own > 50 << 10 && readers_own > 4 * readers_shared,
        "table readers: unmanaged {readers_own}, managed {readers_shared}"
    );
    // One cache for every state, or one each: another state's cache saw none of the reads.
    assert_eq!(used_shared, other_shared, "one shared cache");
    assert!(
        used_own > 1 << 20 && other_own < 4096,
        "own caches: {used_own} / {other_own}"
    );
}

#[test]
fn a_run_without_a_budget_reports_every_cache_and_no_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let profile_file = tmp.path().join("unmanaged.yaml");
    std::fs::write(
        &profile_file,
        "extends: flink-default\nmemory.mode: unmanaged\nblock.cache-size: 16mb\nwritebuffer.size: 1mb\n",
    )
    .unwrap();
    let report = tmp.path().join("r.json");
    let out = Command::new(env!("CARGO_BIN_EXE_statebench"))
        .args(["run", "-w", "smoke", "-p"])
        .arg(&profile_file)
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .arg("--report")
        .arg(&report)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let segment = &r["segments"][0];
    let last = segment["snapshots"].as_array().unwrap().last().unwrap();
    let memory = &last["rocksdb"]["memory"];
    assert_eq!(memory["unshared"], true, "{memory}");
    assert_eq!(memory["wbm_capacity"], 0, "{memory}");
    // Every column family's own cache: smoke's five are the default one, window-stats,
    // timer-state and the two timer queues (the processing-time one empty).
    assert_eq!(
        memory["block_cache_capacity"].as_u64().unwrap(),
        5 * (16 << 20),
        "{memory}"
    );
    assert!(
        memory["table_readers_bytes"].as_u64().unwrap() > 0,
        "{memory}"
    );
    let summary = &segment["summary"];
    assert_eq!(summary["rocksdb_memory_unbudgeted"], true);
    assert_eq!(summary["rocksdb_memory_budget_bytes"], 0);
    assert!(summary["flushes"].as_u64().unwrap() > 0, "{summary}");
}
