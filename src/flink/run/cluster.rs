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

/// The TaskManagers the embedded cluster starts: each one's process size and slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskManagerShape {
    pub process_mib: u64,
    pub slots: u32,
}

/// Memory the embedded cluster leaves this machine besides its TaskManagers: the JobManager's
/// 1 GiB and 1 GiB for statebench's side.
const BESIDE_TASKMANAGERS: u64 = 2 << 30;

/// The TaskManagers to start for `profile`: the user's own (its Flink configuration's process
/// size and slots) when `taskmanagers` of them fit the memory this machine has available, else
/// Flink's default 1 GB, one slot each, grown by the slot's `managed` memory; with a note that
/// says why, when the user's could not be started.
pub fn taskmanager_shape(
    profile: &crate::config::Profile,
    taskmanagers: u32,
    managed: u64,
    available: Option<u64>,
) -> (TaskManagerShape, Option<String>) {
    // Flink's default 1 GB TaskManager, grown by the slot's managed memory so the profile's
    // memory fits beside the heap, network and JVM overhead it had.
    let default = TaskManagerShape {
        process_mib: 1024 + managed.div_ceil(1 << 20),
        slots: 1,
    };
    let Some(path) = &profile.flink_config else {
        return (default, None);
    };
    let users = (|| {
        let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        let file =
            crate::config::flink_in::read_keys(&crate::config::Origin::File(path.clone()), &text)
                .map_err(|e| e.to_string())?;
        let config = crate::config::tm_memory::TmMemoryConfig::from_pairs(
            file.keys.iter().map(|k| (k.key.as_str(), k.value.as_str())),
        )
        .map_err(|e| e.to_string())?;
        let memory = config.derive().map_err(|e| e.to_string())?;
        Ok::<_, String>(TaskManagerShape {
            process_mib: memory.total_process().div_ceil(1 << 20),
            slots: memory.slots.max(1),
        })
    })();
    let shape = match users {
        Ok(shape) => shape,
        Err(e) => {
            return (
                default,
                Some(format!(
                    "{}: its TaskManager memory cannot be derived ({e}): started Flink's default 1 GB TaskManagers, one slot each",
                    path.display()
                )),
            );
        }
    };
    let needed = u64::from(taskmanagers) * (shape.process_mib << 20) + BESIDE_TASKMANAGERS;
    match available {
        Some(available) if needed > available => (
            default.clone(),
            Some(format!(
                "your TaskManager ({} MiB, {} slots, from {}) x {taskmanagers} and the JobManager need {}, and this machine has {} available: started {taskmanagers} TaskManagers of {} MiB with one slot each (the same managed memory a slot)",
                shape.process_mib,
                shape.slots,
                path.display(),
                crate::config::units::human_bytes(needed as f64),
                crate::config::units::human_bytes(available as f64),
                default.process_mib,
            )),
        ),
        _ => (shape, None),
    }
}

/// Memory this machine has available (`MemAvailable` in /proc/meminfo); None where unknown.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The cluster's own settings, appended to the profile's exported configuration: localhost,
/// the TaskManagers' shape (each subtask its own slot, RocksDB instance and slot's managed
/// memory), the REST and RPC ports (free ones: another Flink on this machine keeps its 6123),
/// and where uploads and temporary files go. The other ports are Flink's default 0: any free one.
pub fn cluster_settings(
    rest_port: u16,
    rpc_port: u16,
    dir: &Path,
    tm: &TaskManagerShape,
) -> String {
    let TaskManagerShape { process_mib, slots } = tm;
    format!(
        "\n# --- statebench flink run: an embedded session cluster on localhost, {slots} slot(s) per TaskManager\n\
         jobmanager.rpc.address: localhost\n\
         jobmanager.rpc.port: {rpc_port}\n\
         jobmanager.bind-host: localhost\n\
         jobmanager.memory.process.size: 1024m\n\
         taskmanager.host: localhost\n\
         taskmanager.bind-host: localhost\n\
         taskmanager.numberOfTaskSlots: {slots}\n\
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Profile;

    /// The user's TaskManager (8 GB, 4 slots) when two fit, else Flink's default with why;
    /// a profile that is not a Flink configuration gets the default silently.
    #[test]
    fn the_users_taskmanager_starts_when_it_fits_and_else_says_why() {
        let users = Profile::load("profiles/flink/tm-8g-4-slots").unwrap();
        let managed = users.knobs.managed_memory.0;
        let (shape, note) = taskmanager_shape(&users, 2, managed, Some(32 << 30));
        assert_eq!(
            shape,
            TaskManagerShape {
                process_mib: 8192,
                slots: 4
            }
        );
        assert_eq!(note, None);
        let (shape, note) = taskmanager_shape(&users, 2, managed, Some(12 << 30));
        assert_eq!(shape.slots, 1);
        assert_eq!(shape.process_mib, 1024 + managed.div_ceil(1 << 20));
        let note = note.unwrap();
        assert!(
            note.contains("8192 MiB, 4 slots") && note.contains("12.0 GiB available"),
            "{note}"
        );
        let settings = cluster_settings(1, 2, Path::new("/w"), &shape);
        assert!(settings.contains("taskmanager.numberOfTaskSlots: 1\n"));
        let (shape, note) =
            taskmanager_shape(&Profile::load("flink-default").unwrap(), 2, 1 << 27, None);
        assert_eq!((shape.slots, note), (1, None));
    }
}
