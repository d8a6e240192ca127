//! The job's progress mark: how many records it has processed, rewritten in place as it goes
//! (`<data-dir>/progress`). Not synced: it must survive a `kill -9` (the page cache does), not a
//! power loss. A `--restore` in a new process reads it to tell the records it reads again (those
//! the killed process had processed after its last checkpoint) from those it reads first.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// One fixed-width line: rewriting it in place never leaves a longer, older tail behind.
const WIDTH: usize = 20;

pub struct ProgressMark {
    file: File,
}

impl ProgressMark {
    pub fn path(data_dir: &Path) -> PathBuf {
        data_dir.join("progress")
    }

    /// The count the data directory's job last marked; None without a readable mark.
    pub fn read(data_dir: &Path) -> Option<u64> {
        std::fs::read_to_string(Self::path(data_dir))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    pub fn create(data_dir: &Path) -> std::io::Result<ProgressMark> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(Self::path(data_dir))?;
        Ok(ProgressMark { file })
    }

    /// Marks `processed` records. A mark that cannot be written only leaves a later restore's
    /// count of replayed records short: it is not worth ending the job for.
    pub fn write(&self, processed: u64) {
        let line = format!("{processed:0WIDTH$}\n");
        let _ = self.file.write_all_at(line.as_bytes(), 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_mark_is_read_back() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(ProgressMark::read(dir.path()), None);
        let mark = ProgressMark::create(dir.path()).unwrap();
        mark.write(123_456);
        mark.write(64);
        assert_eq!(ProgressMark::read(dir.path()), Some(64));
    }
}
