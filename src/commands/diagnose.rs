//! `statebench diagnose DIR`: a Flink job's RocksDB LOG and OPTIONS files as evidence.

use super::UsageError;
use crate::cli::DiagnoseArgs;
use crate::flink::diagnose::{self, DiagnoseError};

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
    let url = dir.to_string_lossy().into_owned();
    let by_url = url.starts_with("http://") || url.starts_with("https://");
    if by_url && rest.is_some() {
        return Err(UsageError(format!(
            "{url} is Flink's REST address already: --rest goes with a directory of RocksDB LOG files"
        ))
        .into());
    }
    if by_url && (like.is_some() || workload_out.is_some()) {
        let flag = if like.is_some() {
            "--like"
        } else {
            "--workload-out"
        };
        return Err(UsageError(format!(
            "{flag} needs a RocksDB LOG (the workload is derived from its flushes), which {url} does not serve: give the directory of the job's LOG files, with --rest {url} for its metrics"
        ))
        .into());
    }
    if !by_url && !dir.is_dir() {
        return Err(UsageError(format!(
            "{}: not a directory: give the directory of a RocksDB instance (its LOG and OPTIONS files), or one holding several",
            dir.display()
        ))
        .into());
    }
    let mut like = like.map(crate::config::Workload::load).transpose()?;
    // A trace's workload takes its keys, events and span from its trace.
    if let Some(w) = like.as_mut() {
        crate::pipeline::trace::Trace::load_into(w).map_err(|e| UsageError(e.to_string()))?;
    }
    if job.is_some() && rest.is_none() && !by_url {
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
    let diagnosis = if by_url {
        diagnose::diagnose_url(&url, diagnose::Sources { job, ..sources })
    } else {
        diagnose::diagnose(dir, sources)
    }
    .map_err(|e| match e {
        // A directory the user gave that holds no usable evidence is a usage error; a running
        // cluster's configuration statebench cannot read as a profile is not (exit 1).
        DiagnoseError::NoLog(_) => anyhow::Error::new(UsageError(e.to_string())),
        DiagnoseError::Profile { .. } if !by_url => anyhow::Error::new(UsageError(e.to_string())),
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
