//! What the layers above hold of RocksDB: a column family's handle and a write batch. The
//! backend's own types, each the RocksDB value itself under another name (same layout, the
//! same calls inlined), so the job's per-event state access costs nothing more for them.

use librocksdb_sys::rocksdb_column_family_handle_t;
use rocksdb::{AsColumnFamilyRef, ColumnFamily, WriteBatch};

/// A column family of the job's database, found by name with [`super::StateBackend::cf`]:
/// operators hold `&Cf` and hand it to [`super::StateAccess`] on every state access.
#[repr(transparent)]
pub struct Cf(ColumnFamily);

impl Cf {
    #[inline]
    pub(super) fn of(cf: &ColumnFamily) -> &Cf {
        // SAFETY: `Cf` is `#[repr(transparent)]` over `ColumnFamily` (same layout and
        // alignment), and the reference keeps `cf`'s lifetime.
        unsafe { &*std::ptr::from_ref(cf).cast::<Cf>() }
    }

    /// RocksDB's handle.
    #[inline]
    pub(super) fn raw(&self) -> &ColumnFamily {
        &self.0
    }
}

/// RocksDB's calls take a `&Cf` as they take a `&ColumnFamily` (the backend's own code, and
/// tests that look into the database).
impl AsColumnFamilyRef for Cf {
    #[inline]
    fn inner(&self) -> *mut rocksdb_column_family_handle_t {
        self.0.inner()
    }
}

/// Writes applied together in one RocksDB write (Flink's `RocksDBWriteBatchWrapper`): see
/// [`super::StateAccess::write_batch`].
#[derive(Default)]
pub struct Batch(pub(super) WriteBatch);

impl Batch {
    #[inline]
    pub fn put_cf(&mut self, cf: &Cf, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.0.put_cf(cf.raw(), key, value);
    }

    #[inline]
    pub fn delete_cf(&mut self, cf: &Cf, key: impl AsRef<[u8]>) {
        self.0.delete_cf(cf.raw(), key);
    }

    /// Entries in the batch.
    #[inline]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
