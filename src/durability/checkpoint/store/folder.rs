//! The store's folders: their names, listing, sizes, deletion, and `_metadata`, written last and
//! atomically.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::error::{StoreError, io_err};
use super::{INPROGRESS, METADATA, METADATA_TMP, RECORD_KEY, StoreRecord};

/// Makes a folder's entries durable.
pub(super) fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir, "sync"))
}

/// The caller's `metadata` (a JSON object) with `record` under [`RECORD_KEY`].
pub(super) fn with_record(
    metadata: &serde_json::Value,
    record: &StoreRecord,
    dir: &Path,
) -> Result<serde_json::Value, StoreError> {
    let invalid = |reason: String| StoreError::InvalidMetadata {
        dir: dir.to_path_buf(),
        reason,
    };
    let serde_json::Value::Object(map) = metadata else {
        return Err(invalid("the metadata must be a JSON object".to_owned()));
    };
    if map.contains_key(RECORD_KEY) {
        return Err(invalid(format!("the key '{RECORD_KEY}' is the store's")));
    }
    let mut map = map.clone();
    let record = serde_json::to_value(record).map_err(|e| invalid(e.to_string()))?;
    map.insert(RECORD_KEY.to_owned(), record);
    Ok(serde_json::Value::Object(map))
}

/// Writes `_metadata` into `dir` atomically (a temporary file, synced, renamed), after the
/// folder's other entries are durable, and syncs the folder.
pub(super) fn write_metadata(dir: &Path, value: &serde_json::Value) -> Result<(), StoreError> {
    sync_dir(dir)?;
    let text = serde_json::to_vec_pretty(value).map_err(|e| StoreError::InvalidMetadata {
        dir: dir.to_path_buf(),
        reason: e.to_string(),
    })?;
    let tmp = dir.join(METADATA_TMP);
    let mut file = File::create(&tmp).map_err(io_err(&tmp, "create"))?;
    file.write_all(&text).map_err(io_err(&tmp, "write"))?;
    file.sync_all().map_err(io_err(&tmp, "sync"))?;
    drop(file);
    let path = dir.join(METADATA);
    fs::rename(&tmp, &path).map_err(io_err(&path, "rename into place"))?;
    sync_dir(dir)
}

/// Checks that `name` can be a file of the folder `dir`: one path component, not a temporary
/// file's name (they start with '.'), not `_metadata`.
pub(super) fn check_name(dir: &Path, name: &str) -> Result<(), StoreError> {
    // A chain's operator i >= 1 keeps its private files in the checkpoint's `op<i>/`.
    if let Some((folder, file)) = name.split_once('/')
        && is_operator_folder(folder)
        && !file.contains('/')
    {
        return check_name(&dir.join(folder), file);
    }
    let reason = if name.is_empty() {
        "it is empty"
    } else if name.contains(['/', '\\', '\0']) {
        "it is not a single path component"
    } else if name.starts_with('.') {
        "names starting with '.' are the store's temporary files"
    } else if name == METADATA {
        "'_metadata' is the store's"
    } else {
        return Ok(());
    };
    Err(StoreError::InvalidName {
        dir: dir.to_path_buf(),
        name: name.to_owned(),
        reason,
    })
}

/// `op<i>` (i >= 1): the folder of a chain's operator i in a checkpoint or savepoint.
pub fn is_operator_folder(name: &str) -> bool {
    name.strip_prefix("op").is_some_and(|n| {
        !n.is_empty() && !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit())
    })
}

/// True when the store at `root` holds a completed checkpoint (a `chk-<id>` folder with its
/// `_metadata`). Reads only: unlike [`CheckpointStore::open`] it cleans nothing up.
pub fn has_completed(root: &Path) -> bool {
    fs::read_dir(root).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|e| {
            e.file_name()
                .to_str()
                .and_then(parse_checkpoint_dir)
                .is_some_and(|(_, inprogress)| !inprogress)
                && e.path().join(METADATA).is_file()
        })
    })
}

/// The id of a folder named `chk-<id>`, and whether it is `chk-<id>.inprogress`.
pub(super) fn parse_checkpoint_dir(name: &str) -> Option<(u64, bool)> {
    let rest = name.strip_prefix("chk-")?;
    let (digits, inprogress) = match rest.strip_suffix(INPROGRESS) {
        Some(digits) => (digits, true),
        None => (rest, false),
    };
    let id: u64 = digits.parse().ok()?;
    // Only the store's own spelling ("+5" and "05" parse too).
    (digits == id.to_string()).then_some((id, inprogress))
}

/// An entry of a folder: its name (None if not UTF-8), path, and whether it is a folder.
pub(super) struct Entry {
    pub(super) name: Option<String>,
    pub(super) path: PathBuf,
    pub(super) is_dir: bool,
}

pub(super) fn entries(dir: &Path) -> Result<Vec<Entry>, StoreError> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err(dir, "list"))? {
        let entry = entry.map_err(io_err(dir, "list"))?;
        let path = entry.path();
        let is_dir = entry.file_type().map_err(io_err(&path, "stat"))?.is_dir();
        out.push(Entry {
            name: entry.file_name().into_string().ok(),
            path,
            is_dir,
        });
    }
    Ok(out)
}

/// Deletes a file or a folder with everything in it; one already gone is fine.
pub(super) fn remove(path: &Path, is_dir: bool) -> Result<(), StoreError> {
    let removed = if is_dir {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    match removed {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err(path, "delete")(e)),
        _ => Ok(()),
    }
}

/// Bytes of the files under `dir`, recursively; entries deleted meanwhile count 0.
pub(super) fn dir_bytes(dir: &Path) -> Result<u64, StoreError> {
    let list = match fs::read_dir(dir) {
        Ok(list) => list,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io_err(dir, "list")(e)),
    };
    let mut total = 0;
    for entry in list {
        let entry = entry.map_err(io_err(dir, "list"))?;
        let path = entry.path();
        match entry.metadata() {
            Ok(meta) if meta.is_dir() => total += dir_bytes(&path)?,
            Ok(meta) => total += meta.len(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&path, "stat")(e)),
        }
    }
    Ok(total)
}

/// Copies `src` to the new file `dst`, checking it has the size `_metadata` recorded.
pub(super) fn copy_checked(src: &Path, dst: &Path, expected: u64) -> Result<u64, StoreError> {
    // An operator's file of a chain goes into its own folder.
    if let Some(parent) = dst.parent() {
        fs::create_dir_all(parent).map_err(io_err(parent, "create"))?;
    }
    let found = fs::copy(src, dst).map_err(io_err(src, "copy"))?;
    if found != expected {
        return Err(StoreError::SizeMismatch {
            path: src.to_path_buf(),
            expected,
            found,
        });
    }
    Ok(found)
}
