//! Savepoints: self-contained copies of a job's state under `savepoints/<name>/`, which never
//! reference the shared files of checkpoints.

use std::path::{Path, PathBuf};
use std::{fs, io};

use super::error::{StoreError, io_err};
use super::folder::{check_name, remove, sync_dir, with_record, write_metadata};
use super::pacer::{Pacer, Source, put_file};
use super::{CheckpointStore, INPROGRESS, SAVEPOINTS, SavepointInfo, StoreRecord};

impl CheckpointStore {
    /// Writes a self-contained savepoint: copies each `(local file, name)` into
    /// `savepoints/<name>/` at the upload bandwidth, then `_metadata` (the caller's `metadata`
    /// plus a [`StoreRecord`] with no id and no shared files). It is built in
    /// `savepoints/<name>.inprogress` and renamed when complete; on an error that is deleted.
    pub fn write_savepoint(
        &self,
        name: &str,
        files: &[(PathBuf, String)],
        metadata: &serde_json::Value,
    ) -> Result<SavepointInfo, StoreError> {
        let parent = self.root.join(SAVEPOINTS);
        check_name(&parent, name)?;
        if name.ends_with(INPROGRESS) {
            return Err(StoreError::InvalidName {
                dir: parent,
                name: name.to_owned(),
                reason: "'.inprogress' marks an unfinished savepoint",
            });
        }
        let path = parent.join(name);
        if path.try_exists().map_err(io_err(&path, "stat"))? {
            return Err(StoreError::AlreadyExists { path });
        }
        let tmp = parent.join(format!("{name}{INPROGRESS}"));
        fs::create_dir(&tmp).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                StoreError::AlreadyExists { path: tmp.clone() }
            } else {
                io_err(&tmp, "create")(e)
            }
        })?;
        let written = self
            .fill_savepoint(&tmp, files, metadata)
            .and_then(|bytes| {
                fs::rename(&tmp, &path).map_err(io_err(&tmp, "rename into place"))?;
                sync_dir(&parent)?;
                Ok(bytes)
            });
        match written {
            Ok(bytes) => Ok(SavepointInfo { path, bytes }),
            Err(e) => {
                // The error that matters is the one returned; open deletes what is left.
                let _ = remove(&tmp, true);
                Err(e)
            }
        }
    }

    fn fill_savepoint(
        &self,
        dir: &Path,
        files: &[(PathBuf, String)],
        metadata: &serde_json::Value,
    ) -> Result<u64, StoreError> {
        let mut pacer = Pacer::new(self.config.upload_bytes_per_sec);
        let mut record = StoreRecord::default();
        let mut bytes = 0;
        for (local, name) in files {
            bytes += put_file(
                dir,
                &mut record.private,
                name,
                Source::File(local),
                &mut pacer,
            )?;
        }
        write_metadata(dir, &with_record(metadata, &record, dir)?)?;
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::PathBuf;

    use super::super::tests::{POOL, config, contents, local_files, names_in, set};
    use super::super::{CheckpointStore, METADATA, StoreError, materialize};

    #[test]
    fn savepoints_are_self_contained() {
        let local = local_files();
        let root = tempfile::tempdir().unwrap();
        let store = CheckpointStore::open(root.path(), config(1)).unwrap();
        let files: Vec<(PathBuf, String)> = POOL[..2]
            .iter()
            .map(|n| (local.path().join(n), n.to_string()))
            .collect();
        let saved = store
            .write_savepoint(
                "before-upgrade",
                &files,
                &serde_json::json!({ "job": "freq" }),
            )
            .unwrap();
        assert_eq!(saved.path, store.savepoint_dir("before-upgrade"));
        assert_eq!(names_in(&saved.path), set(&[POOL[0], POOL[1], METADATA]));
        assert!(names_in(&store.shared_dir()).is_empty());
        let record = CheckpointStore::read_record(&saved.path).unwrap();
        assert_eq!(record.id, None);
        assert!(record.shared.is_empty());

        let restore = tempfile::tempdir().unwrap();
        let bytes = materialize(&saved.path, &store.shared_dir(), restore.path()).unwrap();
        assert_eq!(bytes, saved.bytes);
        assert_eq!(
            fs::read(restore.path().join(POOL[1])).unwrap(),
            contents(POOL[1])
        );

        let again = store
            .write_savepoint("before-upgrade", &files, &serde_json::json!({}))
            .unwrap_err();
        assert!(matches!(again, StoreError::AlreadyExists { .. }), "{again}");
        // A failed savepoint leaves nothing behind.
        let missing = vec![(local.path().join("nope"), "nope".to_string())];
        assert!(
            store
                .write_savepoint("broken", &missing, &serde_json::json!({}))
                .is_err()
        );
        assert_eq!(
            names_in(&root.path().join("savepoints")),
            set(&["before-upgrade"])
        );
    }
}
