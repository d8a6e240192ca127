//! The process's own memory, as the kernel counts it (`/proc/self/status`): what a container's
//! memory limit sees, beside what RocksDB accounts for.

use serde::{Deserialize, Serialize};

/// Resident memory now and at its peak, bytes (0 where the system does not say).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct ProcessMemory {
    /// `VmRSS`.
    pub rss_bytes: u64,
    /// `VmHWM`: the peak resident set so far.
    pub rss_peak_bytes: u64,
}

/// This process's memory now.
pub fn read() -> ProcessMemory {
    std::fs::read_to_string("/proc/self/status")
        .map(|text| parse(&text))
        .unwrap_or_default()
}

/// The `VmRSS` and `VmHWM` lines of a `/proc/<pid>/status` text (`VmRSS:    1234 kB`).
fn parse(status: &str) -> ProcessMemory {
    let kib = |field: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|rest| rest.trim().strip_suffix("kB"))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .map_or(0, |n| n * 1024)
    };
    ProcessMemory {
        rss_bytes: kib("VmRSS:"),
        rss_peak_bytes: kib("VmHWM:"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rss_and_its_peak_in_bytes() {
        let text =
            "Name:\tstatebench\nVmPeak:\t  900 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\n";
        assert_eq!(
            parse(text),
            ProcessMemory {
                rss_bytes: 1024 * 1024,
                rss_peak_bytes: 2048 * 1024
            }
        );
        assert_eq!(parse("Name: x\n"), ProcessMemory::default());
    }

    #[test]
    fn this_process_has_resident_memory_at_least_its_peak_bounds() {
        let m = read();
        if cfg!(target_os = "linux") {
            assert!(m.rss_bytes > 0 && m.rss_peak_bytes >= m.rss_bytes, "{m:?}");
        }
    }
}
