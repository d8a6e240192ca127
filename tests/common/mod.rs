//! Helpers shared by the integration tests that kill a running `statebench run`.

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

/// Checkpoints completed in the run's data directory `dir`.
pub fn completed_checkpoints(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("checkpoints"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().to_string();
                    name.starts_with("chk-") && !name.ends_with(".inprogress")
                })
                .count()
        })
        .unwrap_or(0)
}

/// Kills `child` (SIGKILL) once two checkpoints completed and the broker committed offsets, and
/// `settle` later; asserts it had not ended on its own and died of the kill.
pub fn kill_once_checkpointed(child: &mut Child, data: &Path, settle: Duration) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while completed_checkpoints(data) < 2 || !data.join("broker.json").exists() {
        assert!(Instant::now() < deadline, "no checkpoint completed in 60 s");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(settle);
    child.kill().unwrap(); // SIGKILL
    assert!(!child.wait().unwrap().success());
}
