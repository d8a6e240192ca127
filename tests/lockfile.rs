//! Dependency facts the build relies on, read from Cargo.lock.

/// The `dependencies` of the locked package `name`, as Cargo.lock lists them.
fn locked_dependencies(lock: &str, name: &str) -> Option<Vec<String>> {
    let header = format!("name = \"{name}\"\n");
    let block = lock
        .split("[[package]]\n")
        .find(|block| block.starts_with(&header))?;
    let list = block.split_once("dependencies = [\n")?.1.split_once(']')?.0;
    Some(
        list.lines()
            .map(|line| {
                line.trim()
                    .trim_end_matches(',')
                    .trim_matches('"')
                    .to_string()
            })
            .filter(|dep| !dep.is_empty())
            .collect(),
    )
}

/// gungraun accepts derive_more 0.99 to 2. With 2, derive_more's proc macro turns on syn's
/// `visit` feature; syn is shared with bindgen (a build dependency of librocksdb-sys), so every
/// dev build (clippy --all-targets, tests, benches) would compile RocksDB's C++ a second time,
/// apart from the release build's. `cargo update` re-resolves gungraun to derive_more 2: restore
/// the pin by hand in Cargo.lock (gungraun's dependency "derive_more 0.99.20", a package entry
/// for derive_more 0.99.20, crossterm's "derive_more 2.1.1").
#[test]
fn gungraun_uses_derive_more_0_99_so_rocksdb_is_built_once() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock"))
        .expect("Cargo.lock next to Cargo.toml");
    let deps = locked_dependencies(&lock, "gungraun").expect("gungraun in Cargo.lock");
    let derive_more: Vec<&String> = deps
        .iter()
        .filter(|d| d.starts_with("derive_more"))
        .collect();
    assert_eq!(
        derive_more,
        ["derive_more 0.99.20"],
        "gungraun must depend on derive_more 0.99 (see this test's comment)"
    );
}
