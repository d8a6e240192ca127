//! The sampling session: pprof's process-wide sampler on a thread of its own, and the taps
//! through which each engine takes its intervals' samples, symbolized and bucketed.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{
    CpuProfile, CpuSample, FREQUENCY, ProfilerError, Stack, THREAD_NAME, UNKNOWN, short_name,
};

/// How long a take waits for the sampler thread before the interval goes without CPU data.
const TAKE_TIMEOUT: Duration = Duration::from_secs(10);

enum Request {
    Register(u64),
    Take(u64, SyncSender<CpuProfile>),
    Forget(u64),
}

/// The process's CPU sampler: one at a time (pprof's signal handler is process-wide). Dropping
/// it stops sampling.
pub struct Session {
    requests: Option<Sender<Request>>,
    thread: Option<JoinHandle<()>>,
    next_tap: AtomicU64,
}

impl Session {
    /// Starts sampling every thread at `FREQUENCY`.
    pub fn start() -> Result<Session, ProfilerError> {
        let (requests, receiver) = mpsc::channel();
        let (started_tx, started) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name(THREAD_NAME.into())
            .spawn(move || sampler_thread(receiver, started_tx))
            .map_err(ProfilerError::Spawn)?;
        match started.recv() {
            Ok(Ok(())) => Ok(Session {
                requests: Some(requests),
                thread: Some(thread),
                next_tap: AtomicU64::new(0),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(ProfilerError::Start(e))
            }
            Err(_) => {
                let _ = thread.join();
                Err(ProfilerError::Start("the sampler thread ended".to_string()))
            }
        }
    }

    /// A new reader of the samples, starting now (one per engine).
    pub fn tap(&self) -> CpuTap {
        let id = self.next_tap.fetch_add(1, Ordering::Relaxed);
        let requests = self.requests.clone();
        if let Some(r) = &requests {
            let _ = r.send(Request::Register(id));
        }
        CpuTap {
            id,
            requests,
            run: CpuProfile::default(),
        }
    }

    /// Stops sampling and returns once it has stopped, so that a new session can start. Every
    /// tap must be gone (an engine's ends with its run): a tap still held would keep the
    /// sampler's thread, and this call, waiting.
    pub fn stop(mut self) {
        self.requests.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // The thread ends when every sender is gone: taps still held only stop getting data.
        self.requests.take();
        if let Some(thread) = self.thread.take() {
            // Taps may outlive the session (an engine still finishing): do not wait on them.
            drop(thread);
        }
    }
}

/// One engine's reader of the process's samples.
pub struct CpuTap {
    id: u64,
    requests: Option<Sender<Request>>,
    run: CpuProfile,
}

impl CpuTap {
    /// The samples since this tap's last take, bucketed; with `keep`, they count in the run's
    /// profile too (a paused side of an A/B leaves the other side's samples out). None when the
    /// sampler is gone or does not answer.
    pub fn take(&mut self, keep: bool) -> Option<CpuSample> {
        let requests = self.requests.as_ref()?;
        let (reply, answer) = mpsc::sync_channel(1);
        requests.send(Request::Take(self.id, reply)).ok()?;
        let interval = answer.recv_timeout(TAKE_TIMEOUT).ok()?;
        if !keep {
            return None;
        }
        self.run.add(&interval);
        Some(interval.sample())
    }

    /// The run's profile: every sample this tap kept.
    pub fn into_profile(mut self) -> CpuProfile {
        std::mem::take(&mut self.run)
    }
}

impl Drop for CpuTap {
    fn drop(&mut self) {
        if let Some(r) = &self.requests {
            let _ = r.send(Request::Forget(self.id));
        }
    }
}

/// The sampler thread: owns pprof's guard, and on each take turns the samples since the last
/// one into stacks for every tap.
fn sampler_thread(requests: Receiver<Request>, started: SyncSender<Result<(), String>>) {
    let guard = match pprof::ProfilerGuardBuilder::default()
        .frequency(FREQUENCY)
        .build()
    {
        Ok(guard) => guard,
        Err(e) => {
            let _ = started.send(Err(e.to_string()));
            return;
        }
    };
    let _ = started.send(Ok(()));
    let mut collector = Collector::default();
    let mut pending: HashMap<u64, CpuProfile> = HashMap::new();
    for request in requests.iter() {
        match request {
            Request::Register(id) => {
                // Samples before the tap existed are not its own.
                collector.refresh(&guard, &mut pending);
                pending.insert(id, CpuProfile::default());
            }
            Request::Take(id, reply) => {
                collector.refresh(&guard, &mut pending);
                let interval = pending.get_mut(&id).map(std::mem::take).unwrap_or_default();
                let _ = reply.send(interval);
            }
            Request::Forget(id) => {
                pending.remove(&id);
            }
        }
    }
}

/// A stack the collector has seen: its id, its symbols, and the samples handed out so far.
struct Seen {
    id: u64,
    stack: Arc<Stack>,
    handed_out: u64,
}

/// pprof's counts are cumulative per distinct stack: the collector remembers what it has
/// handed out, and the symbols of every address it has seen.
#[derive(Default)]
struct Collector {
    /// By (thread id, the frames' function addresses), as pprof tells stacks apart.
    seen: HashMap<(u64, Vec<usize>), Seen>,
    symbols: Symbols,
    last: Option<Instant>,
}

impl Collector {
    /// Hands the samples taken since the last refresh to every pending profile.
    fn refresh(&mut self, guard: &pprof::ProfilerGuard, pending: &mut HashMap<u64, CpuProfile>) {
        let now = Instant::now();
        let elapsed = self
            .last
            .replace(now)
            .map_or(Duration::ZERO, |t| now.duration_since(t));
        for profile in pending.values_mut() {
            profile.duration += elapsed;
        }
        let Ok(report) = guard.report().build_unresolved() else {
            return;
        };
        for (frames, count) in &report.data {
            let key = (
                frames.thread_id,
                frames
                    .frames
                    .iter()
                    .map(|f| f.symbol_address() as usize)
                    .collect::<Vec<_>>(),
            );
            let next_id = self.seen.len() as u64;
            let seen = match self.seen.entry(key) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let thread =
                        String::from_utf8_lossy(&frames.thread_name[..frames.thread_name_length])
                            .into_owned();
                    let mut names: Vec<Arc<str>> = frames
                        .frames
                        .iter()
                        .flat_map(|f| self.symbols.resolve(f))
                        .collect();
                    // The leaf end is pprof's signal handler and the kernel's signal
                    // trampoline: the interrupted code starts after them.
                    if let Some(at) = names
                        .iter()
                        .position(|n| n.as_ref() == "perf_signal_handler")
                    {
                        names.drain(..(at + 2).min(names.len()));
                    }
                    e.insert(Seen {
                        id: next_id,
                        stack: Arc::new(Stack::new(&thread, names)),
                        handed_out: 0,
                    })
                }
            };
            let count = (*count).max(0) as u64;
            let delta = count.saturating_sub(seen.handed_out);
            seen.handed_out = count;
            if delta > 0 {
                for profile in pending.values_mut() {
                    profile.add_stack(seen.id, &seen.stack, delta);
                }
            }
        }
    }
}

/// Symbol names by instruction address, demangled and cut to `namespace::function`.
#[derive(Default)]
struct Symbols {
    by_ip: HashMap<usize, Vec<Arc<str>>>,
    names: std::collections::HashSet<Arc<str>>,
}

impl Symbols {
    fn resolve(&mut self, frame: &backtrace::Frame) -> Vec<Arc<str>> {
        let ip = frame.ip() as usize;
        if let Some(names) = self.by_ip.get(&ip) {
            return names.clone();
        }
        let mut raw: Vec<Vec<u8>> = Vec::new();
        backtrace::resolve_frame(frame, |symbol| {
            raw.push(
                symbol
                    .name()
                    .map_or_else(|| UNKNOWN.as_bytes().to_vec(), |n| n.as_bytes().to_vec()),
            );
        });
        if raw.is_empty() {
            raw.push(UNKNOWN.as_bytes().to_vec());
        }
        let names: Vec<Arc<str>> = raw
            .into_iter()
            .map(|name| {
                let demangled = pprof::Symbol {
                    name: Some(name),
                    addr: None,
                    lineno: None,
                    filename: None,
                }
                .name();
                self.intern(short_name(&demangled))
            })
            .collect();
        self.by_ip.insert(ip, names.clone());
        names
    }

    fn intern(&mut self, name: &str) -> Arc<str> {
        if let Some(n) = self.names.get(name) {
            return n.clone();
        }
        let n: Arc<str> = name.into();
        self.names.insert(n.clone());
        n
    }
}
