//! SST files written outside the database and adopted by it (a preload's base): written with
//! a column family's own options, ingested, moved to the level they belong in, and read back.

use std::path::{Path, PathBuf};

use rocksdb::{
    BottommostLevelCompaction, CompactOptions, IngestExternalFileOptions, Options, ReadOptions,
    SstFileWriter,
};

use super::{BackendError, Cf, StateBackend};

/// A column family's options as the database was opened with them
/// ([`StateBackend::cf_options`]): SST files written outside it use them.
pub struct CfOptions(pub(super) Options);

/// One SST file being written; keys must come in ascending order.
pub struct SstWriter<'o>(SstFileWriter<'o>);

impl<'o> SstWriter<'o> {
    /// Starts the file at `path`, written with `options`.
    pub fn create(options: &'o CfOptions, path: &Path) -> Result<Self, BackendError> {
        let writer = SstFileWriter::create(&options.0);
        writer.open(path)?;
        Ok(SstWriter(writer))
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), BackendError> {
        Ok(self.0.put(key, value)?)
    }

    /// A deletion of `key` (for a level above the one holding it).
    pub fn delete(&mut self, key: &[u8]) -> Result<(), BackendError> {
        Ok(self.0.delete(key)?)
    }

    /// Bytes written so far.
    pub fn file_size(&self) -> u64 {
        self.0.file_size()
    }

    /// Completes the file.
    pub fn finish(&mut self) -> Result<(), BackendError> {
        Ok(self.0.finish()?)
    }
}

unsafe extern "C" {
    fn statebench_sst_read(
        path: *const std::ffi::c_char,
        ctx: *mut std::ffi::c_void,
        entry: extern "C" fn(*mut std::ffi::c_void, *const u8, usize, *const u8, usize, i32) -> i32,
        error: *mut *mut std::ffi::c_char,
    ) -> i32;
    fn statebench_free(p: *mut std::ffi::c_char);
}

/// What [`read_sst`] hands each entry to: its key, and its value (None: a deletion).
pub type SstEntry<'f> = dyn FnMut(&[u8], Option<&[u8]>) -> Result<(), BackendError> + 'f;

/// What [`read_sst`]'s callback sees, and what it failed with.
struct ReadCtx<'f> {
    f: &'f mut SstEntry<'f>,
    failed: Option<BackendError>,
}

extern "C" fn read_entry(
    ctx: *mut std::ffi::c_void,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    is_delete: i32,
) -> i32 {
    // SAFETY: `ctx` is the `ReadCtx` read_sst passed in, alive and borrowed by nothing else
    // while the shim runs; `key` and `value` point at `key_len` and `value_len` bytes of the
    // table iterator's current entry, valid until this call returns (a zero length may come
    // with any pointer, so it is not dereferenced).
    let ctx = unsafe { &mut *ctx.cast::<ReadCtx<'_>>() };
    let slice = |p: *const u8, n: usize| {
        if n == 0 {
            &[][..]
        } else {
            unsafe { std::slice::from_raw_parts(p, n) }
        }
    };
    let (key, value) = (slice(key, key_len), slice(value, value_len));
    let value = (is_delete == 0).then_some(value);
    // A panic must not unwind into C++: it ends the reading as an error.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (ctx.f)(key, value)))
        .unwrap_or_else(|_| Err(BackendError::Setup("reading an SST file panicked".into())));
    match result {
        Ok(()) => 0,
        Err(e) => {
            ctx.failed = Some(e);
            1
        }
    }
}

/// Reads every entry of the SST file at `path` in key order, deletions included (RocksDB's
/// `SstFileReader::NewTableIterator`; the C API's readers show only live keys): `f(key,
/// Some(value))` for a put, `f(key, None)` for a deletion. The first error `f` returns ends it.
pub fn read_sst(path: &Path, f: &mut SstEntry<'_>) -> Result<(), BackendError> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| BackendError::Setup(format!("{}: a NUL in the path", path.display())))?;
    let mut ctx = ReadCtx { f, failed: None };
    let mut error: *mut std::ffi::c_char = std::ptr::null_mut();
    // SAFETY: the path is a NUL-terminated string alive for the call; `ctx` outlives it and
    // `read_entry` is the only user of it; the shim sets `error` only with a malloc'd string,
    // freed below with its own free.
    let rc = unsafe {
        statebench_sst_read(
            c_path.as_ptr(),
            (&raw mut ctx).cast(),
            read_entry,
            &raw mut error,
        )
    };
    if let Some(e) = ctx.failed {
        return Err(e);
    }
    if rc < 0 {
        let why = if error.is_null() {
            "unknown error".to_string()
        } else {
            // SAFETY: a NUL-terminated string the shim malloc'd; freed once, here.
            let text = unsafe { std::ffi::CStr::from_ptr(error) }
                .to_string_lossy()
                .into_owned();
            unsafe { statebench_free(error) };
            text
        };
        return Err(BackendError::Setup(format!(
            "cannot read the SST file {}: {why}",
            path.display()
        )));
    }
    Ok(())
}

impl StateBackend {
    /// Ingests SST `files` into `cf`, moving them (RocksDB adopts the files, nothing is
    /// copied).
    pub fn ingest(&self, cf: &Cf, files: Vec<PathBuf>) -> Result<(), BackendError> {
        let mut opts = IngestExternalFileOptions::default();
        opts.set_move_files(true);
        Ok(self
            .db
            .ingest_external_file_cf_opts(cf.raw(), &opts, files)?)
    }

    /// Moves `cf`'s files (all in the last level after an ingest into an empty database) to
    /// `level` without rewriting them: a manual compaction that skips the bottommost level and
    /// then refits its files to the target level.
    pub fn move_to_level(&self, cf: &Cf, level: u32) {
        let mut opts = CompactOptions::default();
        opts.set_change_level(true);
        opts.set_target_level(level as i32);
        opts.set_bottommost_level_compaction(BottommostLevelCompaction::Skip);
        opts.set_exclusive_manual_compaction(true);
        self.db
            .compact_range_cf_opt(cf.raw(), None::<&[u8]>, None::<&[u8]>, &opts);
    }

    /// Calls `each` with every key and value of `cf`, in key order, read ahead 4 MiB at a time
    /// and without filling the block cache (the whole state read once, to be written again).
    pub fn read_all(
        &self,
        cf: &Cf,
        mut each: impl FnMut(&[u8], &[u8]) -> Result<(), BackendError>,
    ) -> Result<(), BackendError> {
        let mut read = ReadOptions::default();
        read.fill_cache(false);
        read.set_readahead_size(4 << 20);
        let mut it = self.db.raw_iterator_cf_opt(cf.raw(), read);
        it.seek_to_first();
        while let (Some(key), Some(value)) = (it.key(), it.value()) {
            each(key, value)?;
            it.next();
        }
        Ok(it.status()?)
    }
}
