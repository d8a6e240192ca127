//! The process's own memory, as the kernel counts it (`/proc/self/status`): what a container's
//! memory limit sees, beside what RocksDB accounts for.

pub use crate::model::metrics::ProcessMemory;

/// This process's memory now.
pub fn read() -> ProcessMemory {
    std::fs::read_to_string("/proc/self/status")
        .map(|text| parse(&text))
        .unwrap_or_default()
}

/// The most resident memory this process has had so far (the kernel's `VmHWM`), in bytes;
/// None where the system does not say.
pub fn peak_rss_bytes() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|text| kb_line(&text, "VmHWM:"))
}

/// The `VmRSS` line of a `/proc/<pid>/status` text (`VmRSS:    1234 kB`).
fn parse(status: &str) -> ProcessMemory {
    ProcessMemory {
        rss_bytes: kb_line(status, "VmRSS:").unwrap_or(0),
    }
}

/// The value of a `/proc/<pid>/status` line `name   N kB`, in bytes.
fn kb_line(status: &str, name: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .map(|n| n * 1024)
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
        assert_eq!(kb_line(text, "VmHWM:"), Some(2048 * 1024));
        assert_eq!(kb_line("Name: x\n", "VmHWM:"), None);
    }

    #[test]
    fn this_process_has_resident_memory() {
        if cfg!(target_os = "linux") {
            assert!(read().rss_bytes > 0);
        }
    }
}
