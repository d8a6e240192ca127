//! Flink's shared managed memory: one LRU block cache (with Flink's high-priority pool ratio)
//! and the WriteBufferManager that charges every memtable to it, built by the C++ shim
//! (`flink_shim.cc`) because RocksDB's C API cannot set the cache's high-priority pool.

use std::ptr::NonNull;

use rocksdb::{AsColumnFamilyRef, AsRawPtr, ColumnFamily, DB, Options};

use super::BackendError;

#[repr(C)]
struct RawMemory {
    _private: [u8; 0],
}

#[repr(C)]
struct RawInstance {
    _private: [u8; 0],
}

unsafe extern "C" {
    fn statebench_memory_create(
        cache_capacity: usize,
        high_pri_pool_ratio: f64,
        wbm_capacity: usize,
    ) -> *mut RawMemory;
    fn statebench_memory_destroy(memory: *mut RawMemory);
    fn statebench_memory_set_cache_capacity(memory: *mut RawMemory, capacity: usize);
    fn statebench_memory_set_wbm_capacity(memory: *mut RawMemory, capacity: usize);
    fn statebench_memory_wbm_usage(memory: *const RawMemory) -> usize;
    fn statebench_memory_wbm_capacity(memory: *const RawMemory) -> usize;
    fn statebench_options_set_memory(
        options: *mut librocksdb_sys::rocksdb_options_t,
        memory: *const RawMemory,
    );
    fn statebench_instance_create(memory: *const RawMemory) -> *mut RawInstance;
    fn statebench_instance_destroy(instance: *mut RawInstance);
    fn statebench_options_track_seals(
        options: *mut librocksdb_sys::rocksdb_options_t,
        instance: *const RawInstance,
    );
    fn statebench_instance_attach(
        instance: *mut RawInstance,
        db: *mut librocksdb_sys::rocksdb_t,
        cfs: *const *mut librocksdb_sys::rocksdb_column_family_handle_t,
        n: usize,
    ) -> i32;
    fn statebench_wbm620_before_write(instance: *mut RawInstance) -> i32;
    fn statebench_instance_wbm_flushes(
        instance: *mut RawInstance,
        flushes: *mut u64,
        bytes: *mut u64,
    );
    fn statebench_options_set_table(
        options: *mut librocksdb_sys::rocksdb_options_t,
        memory: *const RawMemory,
        decouple_partitioned_filters: u8,
    ) -> i32;
    fn statebench_options_set_own_table(
        options: *mut librocksdb_sys::rocksdb_options_t,
        capacity: usize,
        decouple_partitioned_filters: u8,
    ) -> i32;
}

/// The block cache and WriteBufferManager every column family of every RocksDB instance of a
/// slot shares. Flink: `ManagedMemoryUseCase.STATE_BACKEND` has slot scope, and
/// `MemoryManager.getSharedMemoryResourceForManagedMemory` hands every RocksDB state backend of
/// the slot the same `RocksDBSharedResources` (one cache, one WriteBufferManager), sized by the
/// slot's whole managed memory (`RocksDBOperationUtils.allocateSharedCachesIfConfigured`).
///
/// With `memory.mode: unmanaged` (Flink's `memory.managed: false` and no fixed size) there is
/// nothing to share: `own_caches` holds the capacity of the block cache each column family gets
/// of its own, no WriteBufferManager is installed, and the shared objects stay unused.
pub struct SharedMemory {
    raw: NonNull<RawMemory>,
    own_caches: Option<u64>,
}

// The shim's object holds two shared_ptrs to RocksDB's thread-safe Cache and
// WriteBufferManager; every function it exposes is safe to call from any thread.
unsafe impl Send for SharedMemory {}
unsafe impl Sync for SharedMemory {}

impl SharedMemory {
    /// A cache of `cache_capacity` bytes reserving `high_pri_pool_ratio` for index and filter
    /// blocks, and a non-stalling WriteBufferManager of `wbm_capacity` bytes charged to it.
    pub fn new(
        cache_capacity: u64,
        high_pri_pool_ratio: f64,
        wbm_capacity: u64,
    ) -> Result<SharedMemory, BackendError> {
        // SAFETY: plain values in; the shim returns an owned object or null.
        let raw = unsafe {
            statebench_memory_create(
                cache_capacity as usize,
                high_pri_pool_ratio,
                wbm_capacity as usize,
            )
        };
        NonNull::new(raw)
            .map(|raw| SharedMemory {
                raw,
                own_caches: None,
            })
            .ok_or_else(|| {
                BackendError::Setup(format!(
                    "RocksDB refused an LRU cache of {cache_capacity} bytes with high-priority pool ratio {high_pri_pool_ratio}"
                ))
            })
    }

    /// No shared memory: every column family gets a block cache of `cache_capacity` bytes of
    /// its own and memtables with no WriteBufferManager.
    pub fn unshared(cache_capacity: u64) -> Result<SharedMemory, BackendError> {
        let mut memory = SharedMemory::new(0, 0.5, 0)?;
        memory.own_caches = Some(cache_capacity);
        Ok(memory)
    }

    /// Whether the slot's instances share this cache and WriteBufferManager (false:
    /// [`SharedMemory::unshared`]).
    pub fn is_shared(&self) -> bool {
        self.own_caches.is_none()
    }

    /// Charges the memtables of a database opened with `opts` to this WriteBufferManager
    /// (nothing when unshared).
    pub fn install_write_buffer_manager(&self, opts: &mut Options) {
        if self.is_shared() {
            // SAFETY: both pointers are alive for the call; the shim copies a shared_ptr.
            unsafe { statebench_options_set_memory(opts.as_raw_ptr(), self.raw.as_ptr()) }
        }
    }

    /// Rebuilds the block-based table factory of column-family options `opts` with this
    /// cache and `decouple_partitioned_filters`.
    pub fn install_table(
        &self,
        opts: &mut Options,
        decouple_partitioned_filters: bool,
    ) -> Result<(), BackendError> {
        // SAFETY: both pointers are alive for the call; the shim copies the table options.
        let rc = unsafe {
            match self.own_caches {
                None => statebench_options_set_table(
                    opts.as_raw_ptr(),
                    self.raw.as_ptr(),
                    u8::from(decouple_partitioned_filters),
                ),
                Some(capacity) => statebench_options_set_own_table(
                    opts.as_raw_ptr(),
                    capacity as usize,
                    u8::from(decouple_partitioned_filters),
                ),
            }
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(BackendError::Setup(
                "column-family options without a block-based table factory".to_string(),
            ))
        }
    }

    pub fn set_cache_capacity(&self, capacity: u64) {
        // SAFETY: the object is alive while self is.
        unsafe { statebench_memory_set_cache_capacity(self.raw.as_ptr(), capacity as usize) }
    }

    pub fn set_write_buffer_manager_capacity(&self, capacity: u64) {
        // SAFETY: the object is alive while self is.
        unsafe { statebench_memory_set_wbm_capacity(self.raw.as_ptr(), capacity as usize) }
    }

    /// Bytes of memtable memory the WriteBufferManager counts (arena blocks allocated).
    pub fn write_buffer_manager_usage(&self) -> u64 {
        // SAFETY: the object is alive while self is.
        unsafe { statebench_memory_wbm_usage(self.raw.as_ptr()) as u64 }
    }

    pub fn write_buffer_manager_capacity(&self) -> u64 {
        // SAFETY: the object is alive while self is.
        unsafe { statebench_memory_wbm_capacity(self.raw.as_ptr()) as u64 }
    }
}

/// One RocksDB instance's part of FRocksDB 6.20's flush choice under the shared
/// WriteBufferManager (see `flink_shim.cc`): the order it sealed its memtables in and its
/// column families. FRocksDB asks the shared WriteBufferManager before each write of each
/// database and flushes a column family of the database that writes, so each instance has
/// its own.
pub struct FlushChoice {
    raw: NonNull<RawInstance>,
}

// The shim's object holds a shared_ptr to the thread-safe WriteBufferManager, a mutex-guarded
// seal order and the database's handles; RocksDB calls the seal listener from its threads.
unsafe impl Send for FlushChoice {}
unsafe impl Sync for FlushChoice {}

impl FlushChoice {
    /// A flush choice on `memory`'s WriteBufferManager, for one database.
    pub fn new(memory: &SharedMemory) -> Result<FlushChoice, BackendError> {
        // SAFETY: `memory` is alive for the call; the shim copies its shared_ptr.
        let raw = unsafe { statebench_instance_create(memory.raw.as_ptr()) };
        NonNull::new(raw)
            .map(|raw| FlushChoice { raw })
            .ok_or_else(|| BackendError::Setup("out of memory for the flush choice".to_string()))
    }

    /// Makes RocksDB report to this object when it seals a memtable (DB options), for
    /// [`FlushChoice::switch_as_frocksdb_620`].
    pub fn track_seals(&self, opts: &mut Options) {
        // SAFETY: both pointers are alive for the call; the shim copies a shared_ptr.
        unsafe { statebench_options_track_seals(opts.as_raw_ptr(), self.raw.as_ptr()) }
    }

    /// Tells this object the database opened with [`FlushChoice::track_seals`] and its column
    /// families in creation order. `db` must outlive every later call of
    /// [`FlushChoice::switch_as_frocksdb_620`] (StateBackend drops its database first and
    /// never calls it after).
    pub fn attach(&self, db: &DB, column_families: &[&ColumnFamily]) -> Result<(), BackendError> {
        let handles: Vec<_> = column_families.iter().map(|cf| cf.inner()).collect();
        // SAFETY: the database and handle pointers are alive; the shim copies the C++ pointers
        // they wrap, which stay valid as long as `db` is open.
        let rc = unsafe {
            statebench_instance_attach(
                self.raw.as_ptr(),
                db.as_raw_ptr(),
                handles.as_ptr(),
                handles.len(),
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(BackendError::Setup(
                "could not record the column families for the WriteBufferManager".to_string(),
            ))
        }
    }

    /// Before a write: where FRocksDB 6.20's WriteBufferManager would switch a column family
    /// whose flush is pending (RocksDB 11 skips those), switch it. True when it did.
    pub fn switch_as_frocksdb_620(&self) -> bool {
        // SAFETY: the object is alive while self is, and the database it was attached to is
        // open (see `attach`); the shim catches every C++ exception.
        unsafe { statebench_wbm620_before_write(self.raw.as_ptr()) == 1 }
    }

    /// The flushes the WriteBufferManager forced since the database opened (FRocksDB 6.20's
    /// switches included, which RocksDB names manual), and the memtable data they wrote.
    pub fn wbm_flushes(&self) -> (u64, u64) {
        let (mut flushes, mut bytes) = (0, 0);
        // SAFETY: the object is alive while self is; the shim only reads its counters, under
        // their mutex.
        unsafe { statebench_instance_wbm_flushes(self.raw.as_ptr(), &mut flushes, &mut bytes) };
        (flushes, bytes)
    }
}

impl Drop for FlushChoice {
    fn drop(&mut self) {
        // SAFETY: created by statebench_instance_create and dropped once; the listener it gave
        // RocksDB is a shared_ptr of its own.
        unsafe { statebench_instance_destroy(self.raw.as_ptr()) }
    }
}

impl Drop for SharedMemory {
    fn drop(&mut self) {
        // SAFETY: created by statebench_memory_create and dropped once; RocksDB's options and
        // database hold their own shared_ptrs, so the cache outlives this handle if still used.
        unsafe { statebench_memory_destroy(self.raw.as_ptr()) }
    }
}
