//! The CPU profiler: samples every thread of the process (RocksDB's background threads too)
//! with `pprof`, symbolizes RocksDB's C++ frames and statebench's, and buckets each stack by
//! cause (`buckets`). A `Session` owns the sampler on a thread of its own; each engine holds a
//! `CpuTap` and takes, at every snapshot, the samples since its last take as a `CpuSample`
//! (plain data: bucket shares and top frames) for the snapshot, keeping the run's whole profile
//! for the flamegraph and the pprof protobuf (`protobuf`) written beside the report.

pub mod buckets;
pub mod protobuf;
mod session;

use crate::util::fs::write_atomically;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use crate::model::cpu::{BucketShare, CpuSample, FrameShare, OwnShares};
pub use buckets::Bucket;
pub use session::{CpuTap, Session};

/// Samples per second of CPU time. The kernel's timer tick caps SIGPROF near 200 per second of
/// the process's CPU time; 199 stays off the tick's multiples.
pub const FREQUENCY: i32 = 199;

/// The sampler's own thread (its stacks are `this profiler`).
pub const THREAD_NAME: &str = "statebench-cpu";

/// The name of a frame without a symbol (pprof's word for it).
const UNKNOWN: &str = "Unknown";

pub use crate::model::cpu::TOP_FRAMES;

#[derive(Debug, thiserror::Error)]
pub enum ProfilerError {
    #[error("cannot start the CPU profiler: {0}")]
    Start(String),
    #[error("cannot start the CPU profiler's thread: {0}")]
    Spawn(std::io::Error),
}

/// The summary's lines for a run's CPU samples: (label, value).
pub fn summary_lines(cpu: &CpuSample) -> Vec<(String, String)> {
    let mut buckets: Vec<&BucketShare> = cpu.buckets.iter().filter(|b| b.samples > 0).collect();
    buckets.sort_by_key(|b| std::cmp::Reverse(b.samples));
    let list = |items: Vec<String>| {
        if items.is_empty() {
            "none".to_string()
        } else {
            items.join(", ")
        }
    };
    let unsymbolized: f64 = cpu
        .top_frames
        .iter()
        .filter(|f| f.frame.starts_with(UNKNOWN))
        .map(|f| f.share)
        .sum();
    let own = cpu.shares_without_profiler();
    let mut lines = vec![
        (
            format!("CPU by cause ({} samples)", cpu.samples),
            list(
                buckets
                    .iter()
                    .map(|b| format!("{} {:.1}%", b.bucket.label(), b.share * 100.0))
                    .collect(),
            ),
        ),
        (
            "CPU in RocksDB / statebench".to_string(),
            format!(
                "{:.1}% / {:.1}% (other {:.1}%; this profiler's own {:.1}% apart)",
                own.rocksdb * 100.0,
                own.statebench * 100.0,
                own.other * 100.0,
                own.profiler * 100.0
            ),
        ),
        (
            "CPU top frames (self)".to_string(),
            list(
                cpu.top_frames
                    .iter()
                    .take(4)
                    .map(|f| format!("{} {:.1}%", f.frame, f.share * 100.0))
                    .collect(),
            ),
        ),
    ];
    if unsymbolized > 0.5 {
        // Symbols are read from the executable's file when first needed.
        lines.push((
            "CPU profile warning".to_string(),
            format!(
                "{:.0}% of samples have no symbols: was the executable replaced or deleted during the run?",
                unsymbolized * 100.0
            ),
        ));
    }
    lines
}

/// A symbolized stack: its thread, its frames leaf first, and its bucket.
#[derive(Debug)]
pub struct Stack {
    pub thread: Arc<str>,
    pub frames: Vec<Arc<str>>,
    pub bucket: Bucket,
}

impl Stack {
    /// The function that ran: the leaf, or for code without symbols (the vDSO's clock, a
    /// stripped library) its caller's name.
    pub fn leaf(&self) -> String {
        match self.frames.as_slice() {
            [] => UNKNOWN.to_string(),
            [leaf, caller, ..] if leaf.as_ref() == UNKNOWN => {
                format!("{UNKNOWN} (called from {caller})")
            }
            [leaf, ..] => leaf.to_string(),
        }
    }

    /// Whether the stack is inside a state iterator's seek or step (RocksDB's `DBIter`, which
    /// skips deleted and overwritten entries), not a flush's or compaction's own iterators.
    pub fn in_state_iterator(&self) -> bool {
        !matches!(self.bucket, Bucket::Flush | Bucket::Compaction)
            && self.frames.iter().any(|f| {
                f.contains("rocksdb::DBIter::") || f.contains("rocksdb::ArenaWrappedDBIter::")
            })
    }

    pub fn new(thread: &str, frames: Vec<Arc<str>>) -> Stack {
        Stack {
            bucket: buckets::classify(thread, &frames),
            thread: thread.into(),
            frames,
        }
    }
}

/// Samples per stack: one interval's or a whole run's.
#[derive(Debug, Clone, Default)]
pub struct CpuProfile {
    /// By the sampler's id for the stack.
    stacks: HashMap<u64, (Arc<Stack>, u64)>,
    /// Wall time the samples were taken over.
    pub duration: Duration,
}

impl CpuProfile {
    pub fn samples(&self) -> u64 {
        self.stacks.values().map(|(_, n)| n).sum()
    }

    /// Each stack with its samples.
    pub fn stacks(&self) -> impl Iterator<Item = (&Stack, u64)> {
        self.stacks.values().map(|(s, n)| (s.as_ref(), *n))
    }

    fn add_stack(&mut self, id: u64, stack: &Arc<Stack>, samples: u64) {
        self.stacks
            .entry(id)
            .or_insert_with(|| (stack.clone(), 0))
            .1 += samples;
    }

    pub fn add(&mut self, other: &CpuProfile) {
        for (id, (stack, samples)) in &other.stacks {
            self.add_stack(*id, stack, *samples);
        }
        self.duration += other.duration;
    }

    /// A profile of the given stacks (tests, and reading a profile back).
    pub fn from_stacks(stacks: impl IntoIterator<Item = (Stack, u64)>) -> CpuProfile {
        let mut profile = CpuProfile::default();
        for (id, (stack, samples)) in stacks.into_iter().enumerate() {
            profile.add_stack(id as u64, &Arc::new(stack), samples);
        }
        profile
    }

    /// The bucket shares and top self frames.
    pub fn sample(&self) -> CpuSample {
        let mut buckets: HashMap<Bucket, u64> = HashMap::new();
        let mut frames: HashMap<(String, Bucket), u64> = HashMap::new();
        let mut iteration = 0;
        for (stack, samples) in self.stacks() {
            *buckets.entry(stack.bucket).or_default() += samples;
            *frames.entry((stack.leaf(), stack.bucket)).or_default() += samples;
            if stack.in_state_iterator() {
                iteration += samples;
            }
        }
        CpuSample {
            iteration_samples: iteration,
            ..CpuSample::from_counts(
                self.samples(),
                &buckets,
                frames.iter().map(|((f, b), n)| (f.as_str(), *b, *n)),
            )
        }
    }

    /// The stacks as folded lines (`thread;root;...;leaf count`), what flamegraphs are drawn
    /// from, sorted.
    pub fn folded(&self) -> Vec<String> {
        let clean = |s: &str| s.replace(';', ":");
        let mut lines: Vec<String> = self
            .stacks()
            .map(|(stack, samples)| {
                let mut line = clean(&stack.thread);
                for frame in stack.frames.iter().rev() {
                    line.push(';');
                    line.push_str(&clean(frame));
                }
                format!("{line} {samples}")
            })
            .collect();
        lines.sort();
        lines
    }

    /// A flamegraph SVG of the profile, titled `title`.
    pub fn flamegraph(&self, title: &str) -> std::io::Result<Vec<u8>> {
        let lines = self.folded();
        let mut options = pprof::flamegraph::Options::default();
        options.title = title.to_string();
        options.count_name = "samples".to_string();
        let mut svg = Vec::new();
        pprof::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut svg)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(svg)
    }

    /// The profile in pprof's protobuf format (`go tool pprof` reads it).
    pub fn pprof(&self) -> Vec<u8> {
        protobuf::encode(self, FREQUENCY)
    }

    /// Writes `<report stem>.cpu.svg` and `<report stem>.cpu.pb` beside `report`, each
    /// atomically, and returns their paths.
    pub fn write_beside(&self, report: &Path, title: &str) -> std::io::Result<[PathBuf; 2]> {
        let svg = report.with_extension("cpu.svg");
        let pb = report.with_extension("cpu.pb");
        write_atomically(&svg, &self.flamegraph(title)?)?;
        write_atomically(&pb, &self.pprof())?;
        Ok([svg, pb])
    }
}

/// A demangled name without its return type, argument list, qualifiers, clone suffix or Rust
/// hash: `unsigned int rocksdb::crc32c::ExtendImpl<&DefaultCRC32(unsigned long*)>(unsigned
/// int, char const*, unsigned long) [clone .constprop.0]` -> `rocksdb::crc32c::ExtendImpl<..>`
/// (template arguments kept), `statebench::x::y::h0123456789abcdef` -> `statebench::x::y`.
pub fn short_name(name: &str) -> &str {
    let mut name = name.trim();
    // Rust's legacy mangling ends in a hash segment.
    if let Some(at) = name.rfind("::h")
        && name.len() - at == 19
        && name[at + 3..].bytes().all(|b| b.is_ascii_hexdigit())
    {
        return &name[..at];
    }
    // GCC's specialised copies: `f(int) [clone .constprop.0] [clone .isra.0]`.
    while let Some(head) = name.strip_suffix(']')
        && let Some(at) = head.rfind(" [clone ")
    {
        name = &head[..at];
    }
    for qualifier in [" const", " volatile", " &&", " &", " noexcept"] {
        name = name.strip_suffix(qualifier).unwrap_or(name);
    }
    // The argument list: the last balanced parenthesis group, when the name ends in one.
    if name.ends_with(')') {
        let mut depth = 0usize;
        for (at, c) in name.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        name = &name[..at];
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    // The return type of a template function: whatever precedes the last space outside
    // brackets (`operator new` and other operators keep theirs).
    let mut depth = 0i32;
    let mut cut = None;
    for (at, c) in name.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ' ' if depth == 0 && !name[..at].ends_with("operator") => cut = Some(at + 1),
            _ => {}
        }
    }
    match cut {
        Some(at) if at < name.len() && !name[..at].contains("operator") => &name[at..],
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_drop_arguments_and_hashes() {
        assert_eq!(
            short_name(
                "rocksdb::BlockFetcher::ReadBlockContents(rocksdb::ReadOptions const&) const"
            ),
            "rocksdb::BlockFetcher::ReadBlockContents"
        );
        assert_eq!(
            short_name("statebench::pipeline::oracle::Oracle::compare::h0123456789abcdef"),
            "statebench::pipeline::oracle::Oracle::compare"
        );
        assert_eq!(
            short_name("rocksdb::(anonymous namespace)::Foo::bar(int)"),
            "rocksdb::(anonymous namespace)::Foo::bar"
        );
        assert_eq!(short_name("XXH3_64bits"), "XXH3_64bits");
        // Recorded from an hours-monolithic-filter run.
        assert_eq!(
            short_name(
                "unsigned int rocksdb::crc32c::ExtendImpl<&rocksdb::crc32c::DefaultCRC32(unsigned long*, unsigned char const**)>(unsigned int, char const*, unsigned long)"
            ),
            "rocksdb::crc32c::ExtendImpl<&rocksdb::crc32c::DefaultCRC32(unsigned long*, unsigned char const**)>"
        );
        assert_eq!(
            short_name(
                "std::enable_if<((rocksdb::ParsedFullFilterBlock::kCacheEntryRole)==((rocksdb::CacheEntryRole)13))||(true), rocksdb::Status>::type rocksdb::BlockBasedTable::RetrieveBlock<rocksdb::ParsedFullFilterBlock>(rocksdb::FilePrefetchBuffer*, rocksdb::ReadOptions const&) const"
            ),
            "rocksdb::BlockBasedTable::RetrieveBlock<rocksdb::ParsedFullFilterBlock>"
        );
        assert_eq!(
            short_name(
                "rocksdb::(anonymous namespace)::MemTableInserter::DeleteImpl(unsigned int, rocksdb::Slice const&, rocksdb::Slice const&, rocksdb::ValueType, rocksdb::ProtectionInfoKVOS<unsigned long> const*) [clone .constprop.0]"
            ),
            "rocksdb::(anonymous namespace)::MemTableInserter::DeleteImpl"
        );
        assert_eq!(
            short_name(
                "bool rocksdb::InlineSkipList<rocksdb::MemTableRep::KeyComparator const&>::Insert<false>(char const*)"
            ),
            "rocksdb::InlineSkipList<rocksdb::MemTableRep::KeyComparator const&>::Insert<false>"
        );
        assert_eq!(short_name("operator new(unsigned long)"), "operator new");
        assert_eq!(
            short_name("rocksdb::Foo::operator()(int) const"),
            "rocksdb::Foo::operator()"
        );
    }

    fn stack(thread: &str, frames: &[&str]) -> Stack {
        Stack::new(thread, frames.iter().map(|f| Arc::from(*f)).collect())
    }

    #[test]
    fn the_summary_warns_when_most_samples_have_no_symbols() {
        let lost = CpuProfile::from_stacks([
            (stack("statebench-engi", &["Unknown", "Unknown"]), 90),
            (stack("rocksdb:high", &["Unknown"]), 10),
        ])
        .sample();
        let lines = summary_lines(&lost);
        assert!(
            lines
                .iter()
                .any(|(label, value)| label == "CPU profile warning"
                    && value.starts_with("100% of samples have no symbols"))
        );
        let fine =
            CpuProfile::from_stacks([(stack("statebench-engi", &["rocksdb::MemTable::Add"]), 9)])
                .sample();
        assert_eq!(
            summary_lines(&fine)[0],
            (
                "CPU by cause (9 samples)".to_string(),
                "memtable insert/lookup 100.0%".to_string()
            )
        );
        assert!(
            summary_lines(&fine)
                .iter()
                .all(|(l, _)| l != "CPU profile warning")
        );
    }

    #[test]
    fn code_without_symbols_is_named_by_its_caller() {
        let vdso = stack(
            "statebench-engi",
            &[
                "Unknown",
                "__GI___clock_gettime",
                "<std::time::Instant>::elapsed",
                "statebench::backend::StateAccess::get",
            ],
        );
        assert_eq!(vdso.leaf(), "Unknown (called from __GI___clock_gettime)");
        assert_eq!(vdso.bucket, Bucket::MetricsSampling);
        assert_eq!(stack("main", &["Unknown"]).leaf(), "Unknown");
    }

    #[test]
    fn a_profile_shares_its_samples_by_bucket_and_leaf() {
        let profile = CpuProfile::from_stacks([
            (
                stack(
                    "statebench-engine",
                    &[
                        "XXH3_64bits",
                        "rocksdb::VerifyBlockChecksum",
                        "rocksdb::FullFilterBlockReader::MayMatch",
                    ],
                ),
                6,
            ),
            (stack("statebench-engine", &["rocksdb::MemTable::Add"]), 3),
            (stack("main", &["poll"]), 1),
        ]);
        let sample = profile.sample();
        assert_eq!(sample.samples, 10);
        assert_eq!(sample.buckets.len(), Bucket::ALL.len());
        assert!((sample.share(Bucket::FilterBlockReads) - 0.6).abs() < 1e-9);
        assert!((sample.share(Bucket::Memtable) - 0.3).abs() < 1e-9);
        assert!((sample.share(Bucket::Other) - 0.1).abs() < 1e-9);
        assert_eq!(
            sample.largest().map(|b| b.bucket),
            Some(Bucket::FilterBlockReads)
        );
        assert_eq!(sample.top_frames[0].frame, "XXH3_64bits");
        assert_eq!(sample.top_frames[0].samples, 6);
        let total: f64 = sample.buckets.iter().map(|b| b.share).sum();
        assert!((total - 1.0).abs() < 1e-9);

        let merged = CpuSample::merge([&sample, &sample]);
        assert_eq!(merged.samples, 20);
        assert!((merged.share(Bucket::Memtable) - 0.3).abs() < 1e-9);
        assert_eq!(merged.top_frames[0].samples, 12);

        let folded = profile.folded();
        assert!(folded.contains(
            &"statebench-engine;rocksdb::FullFilterBlockReader::MayMatch;rocksdb::VerifyBlockChecksum;XXH3_64bits 6"
                .to_string()
        ));
    }
}
