//! statebench: a workbench for tuning the RocksDB state backend of keyed stream processors.

pub mod advisor;
pub mod backend;
pub mod cli;
pub mod commands;
pub mod config;
pub mod durability;
pub mod engine;
pub mod export;
pub mod flink;
pub mod model;
pub mod output;
pub mod pipeline;
pub mod preload;
pub mod profiler;
mod progress;
pub mod report;
pub mod reproduce;
pub mod suites;
pub mod summary;
pub mod tui;
pub mod util;

use cli::{Cli, Command, ProfilesCommand, TraceCommand, WorkloadsCommand};
pub use commands::UsageError;
use config::ConfigError;

/// Runs one CLI command.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(args) => commands::run::run(args),
        Command::Tui(args) => commands::tui::run(args),
        Command::Profiles(ProfilesCommand::List { dir }) => {
            commands::profiles::list(dir.as_deref())
        }
        Command::Profiles(ProfilesCommand::Show {
            name, flink: true, ..
        }) => commands::profiles::show_flink(&name),
        Command::Profiles(ProfilesCommand::Show {
            name,
            derived,
            taskmanager,
            ..
        }) => commands::profiles::show(&name, derived, &taskmanager),
        Command::Workloads(WorkloadsCommand::List) => commands::workloads::list(),
        Command::Workloads(WorkloadsCommand::Show { name }) => commands::workloads::show(&name),
        Command::Preload(cli::preload::PreloadCommand::List(dir)) => commands::preload::list(&dir),
        Command::Preload(cli::preload::PreloadCommand::Rm { keys, dir }) => {
            commands::preload::rm(&keys, &dir)
        }
        Command::Preload(cli::preload::PreloadCommand::Gc(dir)) => commands::preload::gc(&dir),
        Command::Trace(TraceCommand::Convert(args)) => commands::trace::convert(*args),
        Command::Trace(TraceCommand::Check(args)) => commands::trace::check(args),
        Command::Reproduce(args) => commands::reproduce::run(args),
        Command::Tune(args) => commands::tune::run(args),
        Command::Advise { report, json } => commands::advise::run(&report, json),
        Command::Diagnose(args) => commands::diagnose::run(args),
        Command::Flink(cli::FlinkCommand::Run(args)) => commands::flink::run(args),
        Command::Bench(args) => commands::bench::run(args),
        Command::Compare {
            reports,
            all,
            repeat,
        } => commands::compare::run(&reports, repeat as usize, all),
        Command::ReplayOps { log, profile, json } => commands::replay::run(&log, &profile, json),
        Command::Export {
            profile,
            format,
            taskmanager,
            into,
            output,
        } => commands::export::run(
            &profile,
            format,
            &taskmanager,
            into.as_deref(),
            output.as_deref(),
        ),
    }
}

/// Exit code for an error: 2 for bad input (configuration, arguments), 3 when Flink's REST API
/// did not answer as a running job's would, 1 for anything else.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    // A URL statebench cannot use (https://, no host) is bad input, not a REST API's answer.
    if err.chain().any(|e| {
        matches!(
            e.downcast_ref::<flink::diagnose::DiagnoseError>(),
            Some(flink::diagnose::DiagnoseError::Rest(
                flink::diagnose::rest::RestError::Http(util::http::HttpError::Url { .. })
            ))
        ) || matches!(
            e.downcast_ref::<flink::diagnose::rest::RestError>(),
            Some(flink::diagnose::rest::RestError::Http(
                util::http::HttpError::Url { .. }
            ))
        )
    }) {
        return 2;
    }
    // Flink's REST API did not answer as a running job's would (down, no such job, no metrics).
    if err.chain().any(|e| {
        e.is::<flink::diagnose::rest::RestError>()
            || matches!(
                e.downcast_ref::<flink::run::FlinkError>(),
                Some(flink::run::FlinkError::Rest(_))
            )
            || matches!(
                e.downcast_ref::<flink::diagnose::DiagnoseError>(),
                Some(flink::diagnose::DiagnoseError::Rest(_))
            )
    }) {
        return 3;
    }
    // A run the user cancelled (Ctrl-C), as a shell reports SIGINT.
    if err.chain().any(|e| {
        matches!(
            e.downcast_ref::<flink::run::FlinkError>(),
            Some(flink::run::FlinkError::Cancelled)
        ) || matches!(
            e.downcast_ref::<engine::EngineError>(),
            Some(engine::EngineError::PreloadCancelled)
        )
    }) {
        return 130;
    }
    if err
        .chain()
        .any(|e| e.is::<ConfigError>() || e.is::<UsageError>() || data_dir_in_use(e))
    {
        2
    } else {
        1
    }
}

/// Whether `e` says the data directory belongs to another process (a usage error: exit 2).
fn data_dir_in_use(e: &(dyn std::error::Error + 'static)) -> bool {
    use crate::backend::BackendError;
    use crate::engine::EngineError;
    use crate::pipeline::PipelineError;
    let backend = match e.downcast_ref::<EngineError>() {
        Some(EngineError::Backend(b)) => Some(b),
        Some(EngineError::Pipeline(PipelineError::Backend(b))) => Some(b),
        _ => e.downcast_ref::<BackendError>(),
    };
    matches!(backend, Some(BackendError::InUse(_)))
}
