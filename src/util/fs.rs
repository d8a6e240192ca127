//! Files written whole or not at all.

use std::io::Write;
use std::path::Path;

/// The directory a file will be written in (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Writes `bytes` to `path` whole or not at all: a synced temporary file in the same directory,
/// renamed into place. A path that is not a file (`/dev/null`, `/dev/stdout`, a pipe) is written
/// into as it is: a rename would put a file in the device's place.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let mut out = std::fs::OpenOptions::new().write(true).open(path)?;
        return out.write_all(bytes);
    }
    let mut tmp = tempfile::NamedTempFile::new_in(parent_dir(path))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipe (as `/dev/null` or `/dev/stdout` would be) is written into and stays a pipe.
    #[test]
    fn a_path_that_is_not_a_file_is_written_into_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_atomically(&fifo, b"report").unwrap();
        // Checked before the reader is joined: a pipe renamed over would leave it waiting.
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(reader.join().unwrap(), b"report");
        // A file is still replaced whole.
        let file = dir.path().join("r.json");
        std::fs::write(&file, b"old").unwrap();
        write_atomically(&file, b"new").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"new");
    }
}
