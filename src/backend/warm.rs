//! A cache warmed as a long-running job's is: the blocks its latest lookups read, read again
//! through the database (the job's own reads, so RocksDB's own caching decides what stays).

use super::{BackendError, StateBackend};

impl StateBackend {
    /// Reads what a lookup of each key `next` writes (until it returns false) reads in column
    /// family `cf`: a point get (its filter and index blocks, and its data block if the filter
    /// lets it through) and a seek to the key (the data block it is in, or would be). Returns
    /// the keys read.
    pub fn warm_cache(
        &self,
        cf: &str,
        mut next: impl FnMut(&mut Vec<u8>) -> bool,
    ) -> Result<u64, BackendError> {
        let handle = self.cf(cf)?.raw();
        let mut iter = self.db.raw_iterator_cf(handle);
        let (mut key, mut read) = (Vec::new(), 0u64);
        while {
            key.clear();
            next(&mut key)
        } {
            self.db.get_pinned_cf_opt(handle, &key, &self.read_opts)?;
            iter.seek(&key);
            iter.status()?;
            read += 1;
        }
        Ok(read)
    }
}
