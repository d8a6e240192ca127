//! `statebench diagnose DIR`: a Flink job's RocksDB LOG and OPTIONS files as evidence.

use std::path::Path;

use super::UsageError;
use crate::diagnose::{self, DiagnoseError};

pub fn run(dir: &Path, profile_out: Option<&Path>, json: bool) -> anyhow::Result<()> {
    if !dir.is_dir() {
        return Err(UsageError(format!(
            "{}: not a directory: give the directory of a RocksDB instance (its LOG and OPTIONS files), or one holding several",
            dir.display()
        ))
        .into());
    }
    let diagnosis = diagnose::diagnose(dir).map_err(|e| match e {
        DiagnoseError::NoLog(_) | DiagnoseError::Profile { .. } => {
            anyhow::Error::new(UsageError(e.to_string()))
        }
        other => anyhow::Error::new(other),
    })?;
    if let Some(path) = profile_out {
        crate::util::fs::write_atomically(path, diagnosis.profile_yaml.as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot write the profile to {}: {e}", path.display()))?;
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&diagnose::to_json(&diagnosis))?
        );
    } else {
        print!("{}", diagnose::render(&diagnosis, profile_out));
    }
    Ok(())
}
