//! Paced writes: every file of an upload shares one bandwidth limit (the upload rate to the
//! HDFS or S3 bucket the store stands in for), and a cancelled upload stops between chunks.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::CHUNK;
use super::error::{StoreError, io_err};
use super::folder::check_name;

/// Paces writes to a bandwidth: after each chunk it sleeps until the bytes so far would have
/// taken that long at the limit. Idle time earns no credit, so a pause buys no burst.
#[derive(Debug)]
pub(super) struct Pacer {
    bytes_per_sec: Option<u64>,
    /// When the bytes sent so far are paid for.
    due: Option<Instant>,
    /// Set by the caller to stop a copy between two chunks (a timed-out or abandoned upload).
    pub(super) cancel: Option<Arc<AtomicBool>>,
}

impl Pacer {
    pub(super) fn new(bytes_per_sec: Option<u64>) -> Self {
        Pacer {
            bytes_per_sec,
            due: None,
            cancel: None,
        }
    }

    fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
    }

    fn sent(&mut self, bytes: usize) {
        let Some(limit) = self.bytes_per_sec else {
            return;
        };
        let nanos = (bytes as u128 * 1_000_000_000) / u128::from(limit.max(1));
        let cost = Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
        let now = Instant::now();
        let start = self.due.map_or(now, |due| due.max(now));
        match start.checked_add(cost) {
            Some(due) => {
                self.due = Some(due);
                if due > now {
                    std::thread::sleep(due - now);
                }
            }
            None => {
                self.due = None;
                std::thread::sleep(cost);
            }
        }
    }
}

/// Copies `reader` (read from `src`) into the new file `dst` chunk by chunk at the pacer's rate,
/// then syncs it; the bytes written.
pub(super) fn write_paced(
    reader: &mut dyn Read,
    src: &Path,
    dst: &Path,
    pacer: &mut Pacer,
) -> Result<u64, StoreError> {
    let mut out = File::create_new(dst).map_err(io_err(dst, "create"))?;
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(src, "read")(e)),
        };
        if pacer.cancelled() {
            return Err(StoreError::Cancelled {
                path: dst.to_path_buf(),
            });
        }
        let chunk = buf.get(..n).unwrap_or(&buf);
        out.write_all(chunk).map_err(io_err(dst, "write"))?;
        total += chunk.len() as u64;
        pacer.sent(chunk.len());
    }
    out.sync_all().map_err(io_err(dst, "sync"))?;
    Ok(total)
}

/// Where a file to put comes from.
pub(super) enum Source<'a> {
    File(&'a Path),
    Bytes(&'a [u8]),
}

/// Writes `source` as the private file `name` of the folder `dir`, at the pacer's rate, and
/// records it in `files`; the bytes written.
pub(super) fn put_file(
    dir: &Path,
    files: &mut BTreeMap<String, u64>,
    name: &str,
    source: Source<'_>,
    pacer: &mut Pacer,
) -> Result<u64, StoreError> {
    check_name(dir, name)?;
    if files.contains_key(name) {
        return Err(StoreError::Duplicate {
            dir: dir.to_path_buf(),
            name: name.to_owned(),
        });
    }
    let dst = dir.join(name);
    // A chain's operator folder (`op<i>/`) is made with its first file.
    if let Some(parent) = dst.parent()
        && parent != dir
    {
        std::fs::create_dir_all(parent).map_err(io_err(parent, "create"))?;
    }
    let bytes = match source {
        Source::File(local) => {
            let mut file = File::open(local).map_err(io_err(local, "open"))?;
            write_paced(&mut file, local, &dst, pacer)?
        }
        Source::Bytes(bytes) => write_paced(&mut &*bytes, &dst, &dst, pacer)?,
    };
    files.insert(name.to_owned(), bytes);
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    use super::super::{CheckpointStore, StoreConfig, StoreError};

    #[test]
    fn bandwidth_limit_paces_all_files_of_an_upload() {
        let root = tempfile::tempdir().unwrap();
        let limited = StoreConfig {
            retained: 1,
            upload_bytes_per_sec: Some(4 << 20),
        };
        let mut store = CheckpointStore::open(root.path(), limited).unwrap();
        let mut upload = store.begin(1).unwrap();
        let half = vec![7u8; 512 << 10];
        let start = Instant::now();
        upload.put_private_bytes("first", &half).unwrap();
        upload.put_private_bytes("second", &half).unwrap();
        let took = start.elapsed();
        // 1 MiB at 4 MiB/s is 250 ms; only the lower bound is the limit's doing.
        assert!(took >= Duration::from_millis(230), "took {took:?}");
        assert_eq!(upload.bytes_uploaded(), 1 << 20);
        assert_eq!(upload.files_uploaded(), 2);
    }

    #[test]
    fn a_cancelled_upload_stops_inside_a_paced_copy() {
        let root = tempfile::tempdir().unwrap();
        let limited = StoreConfig {
            retained: 1,
            upload_bytes_per_sec: Some(1 << 20),
        };
        let mut store = CheckpointStore::open(root.path(), limited).unwrap();
        let mut upload = store.begin(1).unwrap();
        let cancel = Arc::new(AtomicBool::new(false));
        upload.cancel_with(Arc::clone(&cancel));
        let flag = Arc::clone(&cancel);
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        // 8 MiB at 1 MiB/s would take 8 s; cancelled, it stops a chunk or two later.
        let result = upload.put_private_bytes("big", &vec![1u8; 8 << 20]);
        setter.join().unwrap();
        assert!(
            matches!(result, Err(StoreError::Cancelled { .. })),
            "{result:?}"
        );
        assert!(upload.bytes_uploaded() < 8 << 20);
        store.abort(upload).unwrap();
    }
}
