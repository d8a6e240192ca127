//! `statebench preload ...`'s arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum PreloadCommand {
    /// The kept bases, each with its workload, profile, records and size on disk, and builds
    /// under way or left behind by a process that is gone.
    List(PreloadDirArgs),
    /// Remove bases by key (as `list` shows them). A run that cloned one keeps its own links.
    Rm {
        /// The bases' keys.
        #[arg(required = true)]
        keys: Vec<String>,
        #[command(flatten)]
        dir: PreloadDirArgs,
    },
    /// Remove what no run can use: builds whose process is gone, and folders without a
    /// manifest (a build that died before it was complete).
    Gc(PreloadDirArgs),
}

#[derive(Debug, Args)]
pub struct PreloadDirArgs {
    /// Where preloaded bases are kept. Default: $XDG_CACHE_HOME/statebench/preload (or
    /// ~/.cache/statebench/preload), as `run --preload`.
    #[arg(long, value_name = "DIR")]
    pub preload_dir: Option<PathBuf>,
}
