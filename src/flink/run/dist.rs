//! What `statebench flink run` needs from the machine: a Flink 1.20 distribution's jars, a JDK,
//! and the job jar, compiled here from the parity job's sources (built into this binary) against
//! that distribution, once per distribution and source version.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::FlinkError;

/// The Flink version the job and its configuration are written for.
pub const FLINK_VERSION: &str = "1.20";

/// The parity jobs' sources (parity/job): the field reports' frequency counter on Flink's own
/// `KeyedProcessOperator`, and the kinds job (Flink's own operator for every other kind), each
/// measuring RocksDB when its bounded input ends. Paths under `statebench/parity/`.
const SOURCES: [(&str, &str); 30] = [
    (
        "AdsFrequencyStats.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/AdsFrequencyStats.java"),
    ),
    (
        "EveryNthEventWatermarks.java",
        include_str!(
            "../../../parity/job/src/main/java/statebench/parity/EveryNthEventWatermarks.java"
        ),
    ),
    (
        "FrequencyFunction.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/FrequencyFunction.java"),
    ),
    (
        "ObservingOptionsFactory.java",
        include_str!(
            "../../../parity/job/src/main/java/statebench/parity/ObservingOptionsFactory.java"
        ),
    ),
    (
        "OptionsFileCheck.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/OptionsFileCheck.java"),
    ),
    (
        "ParityJob.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/ParityJob.java"),
    ),
    (
        "ParityOperator.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/ParityOperator.java"),
    ),
    (
        "RocksDBFiles.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/RocksDBFiles.java"),
    ),
    (
        "TimerDecrement.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/TimerDecrement.java"),
    ),
    (
        "TraceEvent.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/TraceEvent.java"),
    ),
    (
        "TraceSource.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/TraceSource.java"),
    ),
    (
        "kinds/Chain.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/kinds/Chain.java"),
    ),
    (
        "kinds/CountingRocksDB.java",
        include_str!(
            "../../../parity/job/src/main/java/statebench/parity/kinds/CountingRocksDB.java"
        ),
    ),
    (
        "kinds/Functions.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/kinds/Functions.java"),
    ),
    (
        "kinds/KEvent.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/kinds/KEvent.java"),
    ),
    (
        "kinds/KindsJob.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/kinds/KindsJob.java"),
    ),
    (
        "kinds/KindsSource.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/kinds/KindsSource.java"),
    ),
    (
        "kinds/Mix.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/kinds/Mix.java"),
    ),
    (
        "kinds/Operators.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/kinds/Operators.java"),
    ),
    (
        "kinds/PartitionWatermarks.java",
        include_str!(
            "../../../parity/job/src/main/java/statebench/parity/kinds/PartitionWatermarks.java"
        ),
    ),
    (
        "kinds/ProbedTwoInputIntervalJoin.java",
        include_str!(
            "../../../parity/job/src/main/java/statebench/parity/kinds/ProbedTwoInputIntervalJoin.java"
        ),
    ),
    (
        "kinds/Out.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/kinds/Out.java"),
    ),
    (
        "kinds/Probe.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/kinds/Probe.java"),
    ),
    (
        "kinds/ProbedIntervalJoinOperator.java",
        include_str!(
            "../../../parity/job/src/main/java/statebench/parity/kinds/ProbedIntervalJoinOperator.java"
        ),
    ),
    (
        "kinds/ProbedKeyedProcessOperator.java",
        include_str!(
            "../../../parity/job/src/main/java/statebench/parity/kinds/ProbedKeyedProcessOperator.java"
        ),
    ),
    (
        "kinds/ProbedReduceOperator.java",
        include_str!(
            "../../../parity/job/src/main/java/statebench/parity/kinds/ProbedReduceOperator.java"
        ),
    ),
    (
        "kinds/ProbedWindowOperator.java",
        include_str!(
            "../../../parity/job/src/main/java/statebench/parity/kinds/ProbedWindowOperator.java"
        ),
    ),
    (
        "kinds/ProcessInterpreter.java",
        include_str!(
            "../../../parity/job/src/main/java/statebench/parity/kinds/ProcessInterpreter.java"
        ),
    ),
    (
        "kinds/ResultSink.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/kinds/ResultSink.java"),
    ),
    (
        "kinds/Spec.java",
        include_str!("../../../parity/job/src/main/java/statebench/parity/kinds/Spec.java"),
    ),
];

/// The jobs' entry classes: the frequency counter, and every other operator kind.
pub const ENTRY_CLASS: &str = "statebench.parity.ParityJob";
pub const KINDS_ENTRY_CLASS: &str = "statebench.parity.kinds.KindsJob";

/// The opens Flink's own launch scripts pass to a Java 17 JVM (Kryo and reflection).
pub const JAVA_OPENS: [&str; 10] = [
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/java.text=ALL-UNNAMED",
    "--add-opens=java.base/java.time=ALL-UNNAMED",
];

/// A Flink distribution: the directory of its jars, and Flink's TaskManager memory calculator
/// (`bin/bash-java-utils.jar`, what `taskmanager.sh` runs).
#[derive(Debug, Clone)]
pub struct Dist {
    pub lib: PathBuf,
    pub bash_java_utils: PathBuf,
    /// flink-dist's version, from its file name.
    pub version: String,
}

impl Dist {
    /// `lib/*`, as Flink's scripts put it on the classpath.
    pub fn classpath(&self) -> String {
        format!("{}/*", self.lib.display())
    }
}

/// Where to look, in order: `explicit` (`--flink-dist`), `$FLINK_HOME`, and the cache
/// parity/setup.sh fills (`~/.cache/flink/1.20.1`, PyPI's apache-flink-libraries).
pub fn locate(explicit: Option<&Path>) -> Result<Dist, FlinkError> {
    let mut tried = Vec::new();
    let candidates: Vec<PathBuf> = match explicit {
        Some(dir) => vec![dir.to_path_buf()],
        None => {
            let mut c = Vec::new();
            if let Some(home) = std::env::var_os("FLINK_HOME") {
                c.push(PathBuf::from(home));
            }
            let cache = std::env::var_os("PARITY_CACHE")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/flink"))
                });
            if let Some(cache) = cache {
                c.push(cache.join("1.20.1"));
            }
            c
        }
    };
    for dir in candidates {
        // A distribution (DIR/lib, DIR/bin) or parity's cache (DIR holds the jars, DIR-bin the
        // calculator).
        let (lib, bin) = if dir.join("lib").is_dir() {
            (dir.join("lib"), dir.join("bin"))
        } else {
            let mut bin = dir.clone().into_os_string();
            bin.push("-bin");
            (dir.clone(), PathBuf::from(bin))
        };
        let Some(version) = dist_version(&lib) else {
            tried.push(format!("{} (no lib/flink-dist-*.jar)", dir.display()));
            continue;
        };
        if !version.starts_with(FLINK_VERSION) {
            return Err(FlinkError::Setup(format!(
                "{}: Flink {version}; statebench's job and exported configuration are for Flink {FLINK_VERSION}.x: give a {FLINK_VERSION} distribution with --flink-dist",
                lib.display()
            )));
        }
        let bash_java_utils = bin.join("bash-java-utils.jar");
        if !bash_java_utils.is_file() {
            return Err(FlinkError::Setup(format!(
                "{}: missing; a Flink distribution has it in bin/ (Flink's TaskManager memory calculator, which the embedded cluster runs as taskmanager.sh does)",
                bash_java_utils.display()
            )));
        }
        return Ok(Dist {
            lib,
            bash_java_utils,
            version,
        });
    }
    Err(FlinkError::Setup(format!(
        "no Flink {FLINK_VERSION} distribution found (looked in: {}). Give one with --flink-dist DIR (DIR/lib/flink-dist-*.jar and DIR/bin/bash-java-utils.jar), set FLINK_HOME, or fetch PyPI's apache-flink-libraries 1.20.1 into ~/.cache/flink as parity/setup.sh does",
        if tried.is_empty() {
            "nowhere: no --flink-dist, FLINK_HOME or HOME".to_string()
        } else {
            tried.join("; ")
        }
    )))
}

fn dist_version(lib: &Path) -> Option<String> {
    std::fs::read_dir(lib).ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        name.strip_prefix("flink-dist-")
            .and_then(|v| v.strip_suffix(".jar"))
            .map(str::to_string)
    })
}

/// java, javac and jar are on PATH, or a clear error naming the JDK to install.
pub fn check_jdk() -> Result<(), FlinkError> {
    for tool in ["java", "javac", "jar"] {
        // Found on PATH: it starts (each of them knows --version).
        if Command::new(tool).arg("--version").output().is_err() {
            return Err(FlinkError::Setup(format!(
                "'{tool}' not found: Flink {FLINK_VERSION} needs a JDK 11 or 17 on PATH (Debian: apt-get install openjdk-17-jdk-headless)"
            )));
        }
    }
    Ok(())
}

/// The job jar for `dist`: built into `cache` on first use (javac, then jar), reused after.
pub fn job_jar(dist: &Dist, cache: &Path) -> Result<PathBuf, FlinkError> {
    let key = {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for (name, text) in SOURCES {
            for b in name.bytes().chain(text.bytes()).chain(dist.version.bytes()) {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
        h
    };
    let dir = cache.join(format!("job-{key:016x}"));
    let jar = dir.join("statebench-flink-job.jar");
    if jar.is_file() {
        return Ok(jar);
    }
    let io = |what: &str, e: std::io::Error| FlinkError::Setup(format!("{what}: {e}"));
    std::fs::create_dir_all(cache).map_err(|e| io(&cache.display().to_string(), e))?;
    let tmp = tempfile::Builder::new()
        .prefix("job-build-")
        .tempdir_in(cache)
        .map_err(|e| io(&cache.display().to_string(), e))?;
    let src = tmp.path().join("src/statebench/parity");
    let classes = tmp.path().join("classes");
    std::fs::create_dir_all(src.join("kinds")).map_err(|e| io("the job's sources", e))?;
    std::fs::create_dir_all(&classes).map_err(|e| io("the job's classes", e))?;
    let mut files = Vec::new();
    for (name, text) in SOURCES {
        let path = src.join(name);
        std::fs::write(&path, text).map_err(|e| io(&path.display().to_string(), e))?;
        files.push(path);
    }
    run_tool(
        Command::new("javac")
            .args(["-nowarn", "-Xlint:-options", "-d"])
            .arg(&classes)
            .arg("-cp")
            .arg(dist.classpath())
            .args(&files),
        "javac (compiling the job against the distribution's lib/)",
    )?;
    let built = tmp.path().join("job.jar");
    run_tool(
        Command::new("jar")
            .arg("cf")
            .arg(&built)
            .arg("-C")
            .arg(&classes)
            .arg("statebench"),
        "jar",
    )?;
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir.display().to_string(), e))?;
    // Into place whole: a build interrupted leaves no jar to reuse.
    std::fs::rename(&built, &jar).map_err(|e| io(&jar.display().to_string(), e))?;
    Ok(jar)
}

fn run_tool(cmd: &mut Command, what: &str) -> Result<(), FlinkError> {
    use std::os::unix::process::CommandExt;
    // Its own process group: a Ctrl-C reaches statebench, which stops after the build.
    let out = cmd
        .process_group(0)
        .output()
        .map_err(|e| FlinkError::Setup(format!("{what}: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = text.lines().rev().take(15).collect();
    Err(FlinkError::Setup(format!(
        "{what} failed ({}):\n{}",
        out.status,
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    )))
}
