//! The process's own memory, as the kernel counts it (`/proc/self/status`): what a container's
//! memory limit sees, beside what RocksDB accounts for.

pub use crate::model::metrics::ProcessMemory;

/// This process's memory now.
pub fn read() -> ProcessMemory {
    std::fs::read_to_string("/proc/self/status")
        .map(|text| parse(&text))
        .unwrap_or_default()
}

/// The `VmRSS` line of a `/proc/<pid>/status` text (`VmRSS:    1234 kB`).
fn parse(status: &str) -> ProcessMemory {
    let rss_bytes = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .map_or(0, |n| n * 1024);
    ProcessMemory { rss_bytes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rss_in_bytes() {
        let text =
            "Name:\tstatebench\nVmPeak:\t  900 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\n";
        assert_eq!(
            parse(text),
            ProcessMemory {
                rss_bytes: 1024 * 1024
            }
        );
        assert_eq!(parse("Name: x\n"), ProcessMemory::default());
    }

    #[test]
    fn this_process_has_resident_memory() {
        if cfg!(target_os = "linux") {
            assert!(read().rss_bytes > 0);
        }
    }
}
