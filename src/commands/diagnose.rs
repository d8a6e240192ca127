//! `statebench diagnose DIR`: a Flink job's RocksDB LOG and OPTIONS files as evidence.

use super::UsageError;
use crate::cli::DiagnoseArgs;
use crate::diagnose::{self, DiagnoseError};

pub fn run(args: DiagnoseArgs) -> anyhow::Result<()> {
    let DiagnoseArgs {
        dir,
        profile_out,
        workload_out,
        like,
        rest,
        job,
        json,
    } = args;
    let (dir, profile_out, workload_out) = (
        dir.as_path(),
        profile_out.as_deref(),
        workload_out.as_deref(),
    );
    let (like, rest, job) = (like.as_deref(), rest.as_deref(), job.as_deref());
    if dir.to_string_lossy().starts_with("http") {
        return Err(UsageError(format!(
            "{}: a URL: give the directory of the job's RocksDB LOG and OPTIONS files, and Flink's REST address with --rest {} (its running job's native RocksDB metrics are read from there)",
            dir.display(),
            dir.display()
        ))
        .into());
    }
    if !dir.is_dir() {
        return Err(UsageError(format!(
            "{}: not a directory: give the directory of a RocksDB instance (its LOG and OPTIONS files), or one holding several",
            dir.display()
        ))
        .into());
    }
    let like = like.map(crate::config::Workload::load).transpose()?;
    if job.is_some() && rest.is_none() {
        return Err(UsageError(
            "--job names a job of the REST API: give --rest URL too".to_string(),
        )
        .into());
    }
    let sources = diagnose::Sources {
        like: like.as_ref(),
        rest,
        job,
    };
    let diagnosis = diagnose::diagnose(dir, sources).map_err(|e| match e {
        DiagnoseError::NoLog(_) | DiagnoseError::Profile { .. } => {
            anyhow::Error::new(UsageError(e.to_string()))
        }
        other => anyhow::Error::new(other),
    })?;
    if let Some(path) = profile_out {
        crate::util::fs::write_atomically(path, diagnosis.profile_yaml.as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot write the profile to {}: {e}", path.display()))?;
    }
    if let Some(path) = workload_out {
        let w = diagnosis
            .workload
            .as_ref()
            .map_err(|why| anyhow::anyhow!("no workload to write to {}: {why}", path.display()))?;
        let text = format!("# {}\n{}", w.notes.join("\n# "), w.yaml);
        crate::util::fs::write_atomically(path, text.as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot write the workload to {}: {e}", path.display()))?;
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&diagnose::to_json(&diagnosis))?
        );
    } else {
        print!(
            "{}",
            diagnose::render(&diagnosis, profile_out, workload_out)
        );
    }
    Ok(())
}
