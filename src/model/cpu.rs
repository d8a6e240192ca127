//! Where the CPU went, as plain data: buckets of causes and each one's share of an interval's
//! samples. The profiler samples and buckets them; snapshots, the summary and the UI read them.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// Frames listed per interval in a snapshot's `top_frames`.
pub const TOP_FRAMES: usize = 8;

/// Why the CPU was busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bucket {
    FilterBlockReads,
    IndexAndDataBlockReads,
    ChecksumVerification,
    Decompression,
    Memtable,
    Flush,
    Compaction,
    Serialization,
    Timers,
    Operator,
    OracleAndSink,
    MetricsSampling,
    Profiler,
    Other,
}

impl Bucket {
    /// Every bucket, in the order reports list them.
    pub const ALL: [Bucket; 14] = [
        Bucket::FilterBlockReads,
        Bucket::IndexAndDataBlockReads,
        Bucket::ChecksumVerification,
        Bucket::Decompression,
        Bucket::Memtable,
        Bucket::Flush,
        Bucket::Compaction,
        Bucket::Serialization,
        Bucket::Timers,
        Bucket::Operator,
        Bucket::OracleAndSink,
        Bucket::MetricsSampling,
        Bucket::Profiler,
        Bucket::Other,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Bucket::FilterBlockReads => "filter-block reads",
            Bucket::IndexAndDataBlockReads => "index and data block reads",
            Bucket::ChecksumVerification => "checksum verification",
            Bucket::Decompression => "decompression",
            Bucket::Memtable => "memtable insert/lookup",
            Bucket::Flush => "flush",
            Bucket::Compaction => "compaction",
            Bucket::Serialization => "serialization",
            Bucket::Timers => "timers",
            Bucket::Operator => "operator",
            Bucket::OracleAndSink => "oracle and sink",
            Bucket::MetricsSampling => "metrics sampling",
            Bucket::Profiler => "this profiler",
            Bucket::Other => "other",
        }
    }

    /// The kebab-case name the JSON report and the pprof labels use.
    pub fn key(self) -> &'static str {
        match self {
            Bucket::FilterBlockReads => "filter-block-reads",
            Bucket::IndexAndDataBlockReads => "index-and-data-block-reads",
            Bucket::ChecksumVerification => "checksum-verification",
            Bucket::Decompression => "decompression",
            Bucket::Memtable => "memtable",
            Bucket::Flush => "flush",
            Bucket::Compaction => "compaction",
            Bucket::Serialization => "serialization",
            Bucket::Timers => "timers",
            Bucket::Operator => "operator",
            Bucket::OracleAndSink => "oracle-and-sink",
            Bucket::MetricsSampling => "metrics-sampling",
            Bucket::Profiler => "profiler",
            Bucket::Other => "other",
        }
    }

    /// RocksDB's work rather than statebench's (the pipeline, its checks and its metrics).
    pub fn is_rocksdb(self) -> bool {
        matches!(
            self,
            Bucket::FilterBlockReads
                | Bucket::IndexAndDataBlockReads
                | Bucket::ChecksumVerification
                | Bucket::Decompression
                | Bucket::Memtable
                | Bucket::Flush
                | Bucket::Compaction
        )
    }

    /// statebench's own work: the pipeline, its checks and its metrics (not this profiler,
    /// which a run without `--profile-cpu` does not have, nor unattributed samples).
    pub fn is_statebench(self) -> bool {
        matches!(
            self,
            Bucket::Serialization
                | Bucket::Timers
                | Bucket::Operator
                | Bucket::OracleAndSink
                | Bucket::MetricsSampling
        )
    }
}

/// One bucket's part of an interval's samples.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BucketShare {
    pub bucket: Bucket,
    pub samples: u64,
    /// Of all samples in the interval, 0..1.
    pub share: f64,
}

/// A function's self samples (the leaf of the stack: the code that ran).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FrameShare {
    pub frame: String,
    pub bucket: Bucket,
    pub samples: u64,
    pub share: f64,
}

/// The process's CPU samples in one interval (or a whole run), bucketed: what a snapshot and
/// the report carry.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct CpuSample {
    /// Samples of every thread; each stands for 1/FREQUENCY s of CPU time.
    pub samples: u64,
    /// Every bucket in `Bucket::ALL` order, shares summing to 1 (empty without samples).
    pub buckets: Vec<BucketShare>,
    /// The functions with the most self samples, most first.
    pub top_frames: Vec<FrameShare>,
    /// Samples inside a state iterator's seek or step (`rocksdb::DBIter`, inclusive) outside
    /// flushes and compactions: what map iteration, and the tombstones it walks, cost.
    pub iteration_samples: u64,
}

impl CpuSample {
    /// The share of `bucket` (0 without samples).
    pub fn share(&self, bucket: Bucket) -> f64 {
        self.buckets
            .iter()
            .find(|b| b.bucket == bucket)
            .map_or(0.0, |b| b.share)
    }

    /// Shares of RocksDB, statebench and unattributed samples (`Other`), of the samples this
    /// profiler's own work leaves: what a run without the profiler spends. Zero without samples.
    pub fn shares_without_profiler(&self) -> OwnShares {
        let of = |f: &dyn Fn(Bucket) -> bool| -> u64 {
            self.buckets
                .iter()
                .filter(|b| f(b.bucket))
                .map(|b| b.samples)
                .sum()
        };
        let profiler = of(&|b| b == Bucket::Profiler);
        let rest = self.samples.saturating_sub(profiler);
        let share = |n: u64| {
            if rest == 0 {
                0.0
            } else {
                n as f64 / rest as f64
            }
        };
        OwnShares {
            rocksdb: share(of(&Bucket::is_rocksdb)),
            statebench: share(of(&Bucket::is_statebench)),
            other: share(of(&|b| b == Bucket::Other)),
            metrics_sampling: share(of(&|b| b == Bucket::MetricsSampling)),
            profiler: if self.samples == 0 {
                0.0
            } else {
                profiler as f64 / self.samples as f64
            },
            samples: rest,
        }
    }

    /// The share of the samples this profiler's own work leaves spent in state iterators
    /// (`iteration_samples`); `None` without samples.
    pub fn iteration_share(&self) -> Option<f64> {
        let rest = self.shares_without_profiler().samples;
        (rest > 0).then(|| self.iteration_samples as f64 / rest as f64)
    }

    /// The bucket with the most samples.
    pub fn largest(&self) -> Option<&BucketShare> {
        self.buckets
            .iter()
            .filter(|b| b.samples > 0)
            .max_by_key(|b| b.samples)
    }

    /// Several intervals as one: samples added, shares and top frames recomputed.
    pub fn merge<'a>(samples: impl IntoIterator<Item = &'a CpuSample>) -> CpuSample {
        let mut buckets: HashMap<Bucket, u64> = HashMap::new();
        let mut frames: HashMap<(&str, Bucket), u64> = HashMap::new();
        let mut total = 0;
        let mut iteration = 0;
        for s in samples {
            total += s.samples;
            iteration += s.iteration_samples;
            for b in &s.buckets {
                *buckets.entry(b.bucket).or_default() += b.samples;
            }
            for f in &s.top_frames {
                *frames.entry((f.frame.as_str(), f.bucket)).or_default() += f.samples;
            }
        }
        CpuSample {
            iteration_samples: iteration,
            ..CpuSample::from_counts(
                total,
                &buckets,
                frames.into_iter().map(|((f, b), n)| (f, b, n)),
            )
        }
    }

    pub fn from_counts<'a>(
        total: u64,
        buckets: &HashMap<Bucket, u64>,
        frames: impl Iterator<Item = (&'a str, Bucket, u64)>,
    ) -> CpuSample {
        if total == 0 {
            return CpuSample::default();
        }
        let share = |n: u64| n as f64 / total as f64;
        let mut top: Vec<(&str, Bucket, u64)> = frames.collect();
        top.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(b.0)));
        top.truncate(TOP_FRAMES);
        CpuSample {
            samples: total,
            buckets: Bucket::ALL
                .iter()
                .map(|&bucket| {
                    let samples = buckets.get(&bucket).copied().unwrap_or(0);
                    BucketShare {
                        bucket,
                        samples,
                        share: share(samples),
                    }
                })
                .collect(),
            top_frames: top
                .into_iter()
                .map(|(frame, bucket, samples)| FrameShare {
                    frame: frame.to_string(),
                    bucket,
                    samples,
                    share: share(samples),
                })
                .collect(),
            iteration_samples: 0,
        }
    }
}

/// Who the CPU worked for, without this profiler (see [`CpuSample::shares_without_profiler`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OwnShares {
    pub rocksdb: f64,
    pub statebench: f64,
    /// Samples no rule claims (stacks the unwinder could not follow).
    pub other: f64,
    /// Metrics sampling's part of `statebench`.
    pub metrics_sampling: f64,
    /// This profiler's own share of all samples.
    pub profiler: f64,
    /// Samples the shares are of (all but the profiler's).
    pub samples: u64,
}
