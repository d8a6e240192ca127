//! Progress of a headless run on stderr: a bar on a terminal, plain lines otherwise.

use std::io::IsTerminal;
use std::time::Duration;

use crate::engine::{MetricsSnapshot, Phase};

/// A progress bar on a terminal, plain lines otherwise.
pub enum Progress {
    Bar(indicatif::ProgressBar),
    Lines,
    Quiet,
}

impl Progress {
    pub fn new(events: u64, quiet: bool) -> Progress {
        if quiet {
            return Progress::Quiet;
        }
        if !std::io::stderr().is_terminal() {
            return Progress::Lines;
        }
        let bar = indicatif::ProgressBar::new(events);
        let style = indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} events ({eta} left) {msg}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(250));
        Progress::Bar(bar)
    }

    pub fn update(&self, s: &MetricsSnapshot) {
        let r = &s.rocksdb;
        // With backfill and catch-up, say which job the numbers belong to.
        let job = match s.pipeline.phase {
            Phase::Streaming => String::new(),
            phase => format!("[{}] ", phase.name()),
        };
        let msg = format!(
            "{job}{:>8.0} ev/s  put p99 {:>7.1} µs  stall {:>5.1} %  L0 {:>2}  cache {}",
            s.events_per_sec,
            s.latency.put_latency.p99_us,
            r.stall.share * 100.0,
            r.lsm.l0_files,
            r.cache
                .overall
                .rate
                .map_or("   -".to_string(), |v| format!("{:>4.1} %", v * 100.0)),
        );
        match self {
            Progress::Bar(bar) => {
                bar.set_position(s.events);
                bar.set_message(msg);
            }
            Progress::Lines => {
                eprintln!("[{:>6.1}s] {:>10} events  {msg}", s.elapsed_secs, s.events)
            }
            Progress::Quiet => {}
        }
    }

    pub fn finish(&self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}
