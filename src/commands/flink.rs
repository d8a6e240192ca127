//! `statebench flink run`: the workload on a real Flink cluster beside statebench's own run.

use std::sync::atomic::Ordering;

use super::UsageError;
use crate::cli::{FlinkRunArgs, Judge};
use crate::config::Workload;
use crate::flink::run::{self as flink, FlinkError, Verdict};

pub fn run(args: FlinkRunArgs) -> anyhow::Result<()> {
    let mut workload = Workload::load(&args.workload)?;
    // A trace's workload: its records are the job's (read and checked before anything is built).
    let trace = crate::pipeline::trace::Trace::load_into(&mut workload)
        .map_err(|e| UsageError(e.to_string()))?;
    let mut profiles = vec![super::load_profile(&args.profile)?];
    if let Some(other) = &args.compare {
        profiles.push(super::load_profile(other)?);
    }
    let json = args.json;
    let judge = args.judge;
    let events = args
        .events
        .unwrap_or(workload.spec.events)
        .min(trace.as_ref().map_or(u64::MAX, |t| t.len() as u64));
    if events == 0 {
        return Err(UsageError("--events must be at least 1".to_string()).into());
    }
    let cancel = flink::cancel_flag();
    let flag = cancel.clone();
    // Ctrl-C: the running Flink job is cancelled and the embedded cluster stopped (statebench's
    // own run finishes first). A second Ctrl-C ends the process at once.
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            flink::cluster::kill_all();
            std::process::exit(130);
        }
        eprintln!(
            "\n[flink run] stopping: cancelling the Flink job and stopping the cluster (Ctrl-C again to abort)"
        );
    });
    let options = flink::Options {
        workload,
        trace,
        profiles,
        events,
        parallelism: args.parallelism,
        taskmanagers: args.taskmanagers,
        cluster: args.cluster,
        dist: args.flink_dist,
        work: args.work,
        cancel,
        subtask: args.subtask,
    };
    let progress = |line: &str| eprintln!("[flink run] {line}");
    let runs = flink::run(&options, &progress).map_err(|e| match e {
        FlinkError::Setup(_) => anyhow::Error::new(UsageError(e.to_string())),
        other => anyhow::Error::new(other),
    })?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&flink::to_json(&runs, options.parallelism))?
        );
    } else {
        print!("{}", flink::render(&runs, options.parallelism));
    }
    if let [a, b] = &runs[..] {
        let judged = |c: &flink::Change| match judge {
            Judge::All => true,
            Judge::Write => !c.read_path,
            Judge::Read => c.read_path,
        };
        let missed: Vec<&str> = flink::evidence_changes(a, b)
            .into_iter()
            .filter(|c| c.verdict == Verdict::NotAsPredicted && judged(c))
            .map(|c| c.metric)
            .collect();
        if !missed.is_empty() {
            anyhow::bail!(
                "Flink's RocksDB did not move as statebench predicted: {}",
                missed.join(", ")
            );
        }
    }
    Ok(())
}
