//! The process's CPU time as the kernel counts it (`/proc/self/stat`): every thread's user and
//! system time, the job's and RocksDB's background threads alike.

/// Linux reports `/proc` times in USER_HZ ticks, which the kernel fixes at 100 per second for
/// every architecture's user-space ABI (`sysconf(_SC_CLK_TCK)` returns it).
const TICKS_PER_SEC: f64 = 100.0;

/// CPU seconds this process has used so far; None where the system does not say.
pub fn seconds() -> Option<f64> {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|text| parse(&text))
}

/// utime + stime of a `/proc/<pid>/stat` line, in seconds. The command name (field 2) is in
/// parentheses and may hold spaces: the fields are counted after its closing one.
fn parse(stat: &str) -> Option<f64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // After the name: state (3), ..., utime (14), stime (15): the 12th and 13th here.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / TICKS_PER_SEC)
}

/// CPU seconds used while `f` ran (None where the system does not say), and its result.
pub fn measure<T>(f: impl FnOnce() -> T) -> (T, Option<f64>) {
    let start = seconds();
    let out = f();
    let used = start.zip(seconds()).map(|(a, b)| (b - a).max(0.0));
    (out, used)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_user_and_system_ticks_after_a_name_with_spaces() {
        let line =
            "4242 (state bench) S 1 4242 4242 0 -1 4194304 900 0 0 0 250 50 0 0 20 0 9 0 1 2 3";
        assert_eq!(parse(line), Some(3.0));
        assert_eq!(parse("garbage"), None);
    }

    #[test]
    fn work_shows_as_cpu_time() {
        // Spin until the kernel counts 0.2 s of this process's CPU (a shared machine gives the
        // thread less than wall time), at most 10 s: the counter advances with work, and
        // `measure` reports what it counted.
        let start = std::time::Instant::now();
        let first = seconds().unwrap();
        let (_, used) = measure(|| {
            let mut x = 0u64;
            while seconds().is_some_and(|s| s - first < 0.2)
                && start.elapsed() < std::time::Duration::from_secs(10)
            {
                for _ in 0..100_000 {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                }
            }
        });
        assert!(used.is_some_and(|s| s >= 0.19), "{used:?}");
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
    }
}
