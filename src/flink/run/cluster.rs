//! An embedded Flink session cluster on localhost, started from a distribution's jars as Flink's
//! scripts would: one JobManager (`StandaloneSessionClusterEntrypoint`) and N TaskManager
//! processes (`TaskManagerRunner`, with the JVM flags and `-D` memory settings Flink's own
//! calculator, `BashJavaUtils GET_TM_RESOURCE_PARAMS`, derives from the configuration). Every
//! process is stopped when the cluster is dropped, also on an error or Ctrl-C.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::FlinkError;
use super::dist::{Dist, JAVA_OPENS};
use super::rest::Rest;

/// How long the JobManager and the TaskManagers may take to come up.
const START_TIMEOUT: Duration = Duration::from_secs(180);

pub struct Cluster<'a> {
    processes: Vec<(String, Child)>,
    pub rest: Rest,
    logs: PathBuf,
    /// Ctrl-C: stop waiting (dropping the cluster stops its processes).
    cancel: &'a AtomicBool,
}

/// The cluster's own settings, appended to the profile's exported configuration: localhost,
/// one slot per TaskManager (one subtask, one RocksDB instance, one slot's managed memory each),
/// the REST and RPC ports (free ones: another Flink on this machine keeps its 6123), and where
/// uploads and temporary files go. The other ports are Flink's default 0: any free one.
pub fn cluster_settings(rest_port: u16, rpc_port: u16, dir: &Path, managed: u64) -> String {
    // Flink's default 1 GB TaskManager, grown by the slot's managed memory so the profile's
    // memory fits beside the heap, network and JVM overhead it had.
    let process_mib = 1024 + managed.div_ceil(1 << 20);
    format!(
        "\n# --- statebench flink run: an embedded session cluster on localhost, 1 slot per TaskManager\n\
         jobmanager.rpc.address: localhost\n\
         jobmanager.rpc.port: {rpc_port}\n\
         jobmanager.bind-host: localhost\n\
         jobmanager.memory.process.size: 1024m\n\
         taskmanager.host: localhost\n\
         taskmanager.bind-host: localhost\n\
         taskmanager.numberOfTaskSlots: 1\n\
         taskmanager.memory.process.size: {process_mib}m\n\
         rest.address: localhost\n\
         rest.bind-address: localhost\n\
         rest.port: {rest_port}\n\
         web.upload.dir: {}\n\
         io.tmp.dirs: {}\n",
        dir.join("upload").display(),
        dir.join("tmp").display(),
    )
}

const LOG4J: &str = "rootLogger.level = INFO\n\
rootLogger.appenderRef.file.ref = file\n\
appender.file.type = File\n\
appender.file.name = file\n\
appender.file.fileName = ${sys:log.file}\n\
appender.file.layout.type = PatternLayout\n\
appender.file.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n\n";

/// `N` distinct free TCP ports on localhost (the REST and RPC endpoints): each held until all
/// are found, so none is given twice.
pub fn free_ports<const N: usize>() -> Result<[u16; N], FlinkError> {
    let no = |e: std::io::Error| FlinkError::Setup(format!("no free port on localhost: {e}"));
    let mut held = Vec::with_capacity(N);
    let mut ports = [0u16; N];
    for port in &mut ports {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(no)?;
        *port = listener.local_addr().map_err(no)?.port();
        held.push(listener);
    }
    Ok(ports)
}

impl<'a> Cluster<'a> {
    /// Starts the JobManager and `taskmanagers` TaskManagers with `conf` (a directory holding
    /// config.yaml, whose rest.port is `rest_port`), logs under `dir/logs`; returns once every
    /// TaskManager has registered its slot. `progress` is told each step.
    pub fn start(
        dist: &Dist,
        conf: &Path,
        rest_port: u16,
        taskmanagers: u32,
        dir: &Path,
        cancel: &'a AtomicBool,
        progress: &dyn Fn(&str),
    ) -> Result<Cluster<'a>, FlinkError> {
        let logs = dir.join("logs");
        for d in [&logs, &dir.join("upload"), &dir.join("tmp")] {
            std::fs::create_dir_all(d)
                .map_err(|e| FlinkError::Setup(format!("{}: {e}", d.display())))?;
        }
        let log4j = conf.join("log4j.properties");
        std::fs::write(&log4j, LOG4J)
            .map_err(|e| FlinkError::Setup(format!("{}: {e}", log4j.display())))?;
        let url = format!("http://localhost:{rest_port}");
        let mut cluster = Cluster {
            processes: Vec::new(),
            rest: Rest::new(&url),
            logs: logs.clone(),
            cancel,
        };
        if cluster.rest.overview().is_ok() {
            return Err(FlinkError::Setup(format!(
                "something already answers on {url}: not starting a second cluster there"
            )));
        }
        let log_config = format!("-Dlog4j.configurationFile=file:{}", log4j.display());
        progress(&format!("starting the JobManager (REST on {url})"));
        let mut jm = Command::new("java");
        jm.args(JAVA_OPENS)
            .args(["-Xmx512m", "-Xms512m", &log_config])
            .arg(format!(
                "-Dlog.file={}",
                logs.join("jobmanager.log").display()
            ))
            .arg("-cp")
            .arg(dist.classpath())
            .arg("org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint")
            .arg("--configDir")
            .arg(conf);
        cluster.spawn("jobmanager", &mut jm)?;
        // Flink's TaskManager memory calculation, as taskmanager.sh runs it.
        let params = Command::new("java")
            .process_group(0)
            .arg("-cp")
            .arg(format!(
                "{}:{}",
                dist.bash_java_utils.display(),
                dist.classpath()
            ))
            .arg("org.apache.flink.runtime.util.bash.BashJavaUtils")
            .arg("GET_TM_RESOURCE_PARAMS")
            .arg("--configDir")
            .arg(conf)
            .output()
            .map_err(|e| FlinkError::Setup(format!("BashJavaUtils: {e}")))?;
        if cancel.load(Ordering::Relaxed) {
            return Err(FlinkError::Cancelled);
        }
        let text = String::from_utf8_lossy(&params.stdout).into_owned()
            + &String::from_utf8_lossy(&params.stderr);
        let results: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("BASH_JAVA_UTILS_EXEC_RESULT:"))
            .collect();
        let [jvm, dynamic] = results[..] else {
            let tail: Vec<&str> = text.lines().rev().take(10).collect();
            return Err(FlinkError::Setup(format!(
                "Flink's TaskManager memory calculator (BashJavaUtils GET_TM_RESOURCE_PARAMS) rejected the configuration in {}:\n{}",
                conf.display(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )));
        };
        cluster.wait("the JobManager's REST endpoint", |c| {
            c.rest.overview().is_ok()
        })?;
        for i in 0..taskmanagers {
            progress(&format!(
                "starting TaskManager {} of {taskmanagers} ({jvm})",
                i + 1
            ));
            let mut tm = Command::new("java");
            tm.args(JAVA_OPENS)
                .args(jvm.split_whitespace())
                .arg(&log_config)
                .arg(format!(
                    "-Dlog.file={}",
                    logs.join(format!("taskmanager-{i}.log")).display()
                ))
                .arg("-cp")
                .arg(dist.classpath())
                .arg("org.apache.flink.runtime.taskexecutor.TaskManagerRunner")
                .arg("--configDir")
                .arg(conf)
                .args(dynamic.split_whitespace());
            cluster.spawn(&format!("taskmanager-{i}"), &mut tm)?;
        }
        cluster.wait(
            &format!("{taskmanagers} TaskManagers registered with a slot each"),
            |c| {
                c.rest
                    .overview()
                    .is_ok_and(|o| o["slots-total"].as_u64() >= Some(u64::from(taskmanagers)))
            },
        )?;
        Ok(cluster)
    }

    fn spawn(&mut self, name: &str, cmd: &mut Command) -> Result<(), FlinkError> {
        let out = std::fs::File::create(self.logs.join(format!("{name}.out")))
            .map_err(|e| FlinkError::Setup(format!("{}: {e}", self.logs.display())))?;
        let err = out
            .try_clone()
            .map_err(|e| FlinkError::Setup(format!("{}: {e}", self.logs.display())))?;
        // Its own process group: a Ctrl-C in the terminal reaches statebench, which cancels
        // the job through REST and then stops the cluster, not the JVMs first.
        let child = cmd
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| FlinkError::Setup(format!("cannot start the {name} (java): {e}")))?;
        if let Ok(mut pids) = PIDS.lock() {
            pids.push(child.id());
        }
        self.processes.push((name.to_string(), child));
        Ok(())
    }

    /// Until `ready` holds; an error if a process ended or START_TIMEOUT passed.
    fn wait(&mut self, what: &str, ready: impl Fn(&Cluster) -> bool) -> Result<(), FlinkError> {
        let start = Instant::now();
        loop {
            if ready(self) {
                return Ok(());
            }
            if self.cancel.load(Ordering::Relaxed) {
                return Err(FlinkError::Cancelled);
            }
            self.check_alive()?;
            if start.elapsed() > START_TIMEOUT {
                return Err(FlinkError::Cluster(format!(
                    "no {what} after {} s (logs: {})",
                    START_TIMEOUT.as_secs(),
                    self.logs.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// An error naming a process that ended, with its log's last lines.
    pub fn check_alive(&mut self) -> Result<(), FlinkError> {
        for (name, child) in &mut self.processes {
            if let Ok(Some(status)) = child.try_wait() {
                // The log's errors, or what the JVM printed before it had a log.
                let log = self.logs.join(format!("{name}.log"));
                let out = self.logs.join(format!("{name}.out"));
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                // The first errors are the cause (a port in use, a bad setting); the last are
                // the shutdown they set off.
                let errors: Vec<&str> = text
                    .lines()
                    .filter(|l| l.contains("ERROR") || l.contains("Exception"))
                    .take(5)
                    .collect();
                let printed = std::fs::read_to_string(&out).unwrap_or_default();
                let (what, shown) = if errors.is_empty() {
                    let mut last: Vec<&str> = printed.lines().rev().take(10).collect();
                    last.reverse();
                    ("what it printed last", last)
                } else {
                    ("its log's first errors", errors)
                };
                return Err(FlinkError::Cluster(format!(
                    "the {name} ended ({status}); {} and {}, {what}:\n{}",
                    log.display(),
                    out.display(),
                    shown.join("\n")
                )));
            }
        }
        Ok(())
    }

    pub fn logs(&self) -> &Path {
        &self.logs
    }
}

impl Drop for Cluster<'_> {
    fn drop(&mut self) {
        // TaskManagers first, then the JobManager.
        for (_, child) in self.processes.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
            if let Ok(mut pids) = PIDS.lock() {
                pids.retain(|p| *p != child.id());
            }
        }
    }
}

/// Every JVM a cluster started and has not stopped yet, for [`kill_all`].
static PIDS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// Kills every JVM still running (a second Ctrl-C, which ends the process without unwinding).
pub fn kill_all() {
    if let Ok(pids) = PIDS.lock() {
        for pid in pids.iter() {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
    }
}
