//! Compiles the small C++ shim (src/backend/flink_shim.cc) that sets what RocksDB's C API
//! cannot: the block cache's high-priority pool ratio and decouple_partitioned_filters.
//! It is compiled against the headers of the RocksDB that librocksdb-sys builds, whose
//! sources librocksdb-sys exports to its dependents as `DEP_ROCKSDB_CARGO_MANIFEST_DIR`.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src/backend/flink_shim.cc");
    println!("cargo:rerun-if-env-changed=DEP_ROCKSDB_CARGO_MANIFEST_DIR");
    let Some(sys_dir) = std::env::var_os("DEP_ROCKSDB_CARGO_MANIFEST_DIR") else {
        eprintln!(
            "librocksdb-sys did not export DEP_ROCKSDB_CARGO_MANIFEST_DIR: the C++ shim needs its RocksDB headers"
        );
        std::process::exit(1);
    };
    // The shim relies on the bundled RocksDB's struct layouts: a system RocksDB linked instead
    // (librocksdb-sys's ROCKSDB_LIB_DIR) could differ from the headers it compiles against.
    println!("cargo:rerun-if-env-changed=ROCKSDB_LIB_DIR");
    println!("cargo:rerun-if-env-changed=ROCKSDB_CXX_STD");
    if std::env::var_os("ROCKSDB_LIB_DIR").is_some() {
        eprintln!(
            "ROCKSDB_LIB_DIR is set: statebench's C++ shim needs the RocksDB librocksdb-sys builds from its own sources; unset it"
        );
        std::process::exit(1);
    }
    let std = std::env::var("ROCKSDB_CXX_STD").map_or_else(
        |_| "-std=c++20".to_string(),
        |s| {
            if s.starts_with("-std=") {
                s
            } else {
                format!("-std={s}")
            }
        },
    );
    let include = PathBuf::from(sys_dir).join("rocksdb").join("include");
    cc::Build::new()
        .cpp(true)
        .file("src/backend/flink_shim.cc")
        .include(&include)
        // The same language level and release define as librocksdb-sys's build of RocksDB.
        .flag(&std)
        .define("NDEBUG", Some("1"))
        .warnings(true)
        .compile("statebench_flink_shim");
}
