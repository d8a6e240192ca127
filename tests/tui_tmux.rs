//! Drives the real binary in tmux as a user would: start `statebench tui` on smoke, wait for a
//! non-zero events/s, visit every view, change a knob live and see RocksDB confirm it, quit
//! with `q`, and check the terminal came back and the process exited 0.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

struct Session(String);

impl Session {
    /// Runs `command` in a new 100x30 session and waits for the dashboard to show a non-zero
    /// events/s.
    fn start(&self, command: &str) {
        self.tmux(&[
            "new-session",
            "-d",
            "-s",
            &self.0,
            "-x",
            "100",
            "-y",
            "30",
            command,
        ]);
        self.wait_for("a non-zero events/s", 90, shows_throughput);
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(args)
            .output()
            .expect("tmux must be installed (Debian: apt-get install tmux; .ci/run installs it)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.tmux(&["send-keys", "-t", &self.0, k]);
        }
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.0])
    }

    /// The screen with its scrollback: a summary longer than the window (findings vary from run
    /// to run) has scrolled its first lines off the screen.
    fn history(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-S", "-", "-t", &self.0])
    }

    /// Waits until `check` accepts the screen; panics with the screen after `secs`.
    fn wait_for(&self, what: &str, secs: u64, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let screen = self.screen();
            if check(&screen) {
                return screen;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; the screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// `statebench tui ARGS --report <dir>/<report>` started in a new session named `name`, in a
/// temporary folder; the shell records the exit code in `exit` and then keeps the pane open.
struct TuiRun {
    dir: tempfile::TempDir,
    report: std::path::PathBuf,
    exit_file: std::path::PathBuf,
    session: Session,
}

impl TuiRun {
    fn start(name: &str, args: &str, report: &str) -> TuiRun {
        let dir = tempfile::tempdir().unwrap();
        let exit_file = dir.path().join("exit");
        let report = dir.path().join(report);
        let bin = env!("CARGO_BIN_EXE_statebench");
        let session = Session(format!("{name}-{}", std::process::id()));
        session.start(&format!(
            "cd {dir} && {bin} tui {args} --report {report}; echo EXIT=$? > {exit}; sleep 120",
            dir = dir.path().display(),
            report = report.display(),
            exit = exit_file.display()
        ));
        TuiRun {
            dir,
            report,
            exit_file,
            session,
        }
    }

    /// Presses q and waits for the process to exit 0.
    fn quit(&self) {
        self.session.keys(&["q"]);
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.exit_file.exists() {
            assert!(
                Instant::now() < deadline,
                "no exit after q:\n{}",
                self.session.screen()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        assert_eq!(
            std::fs::read_to_string(&self.exit_file).unwrap().trim(),
            "EXIT=0"
        );
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.0])
            .output();
    }
}

/// A non-zero "N ev/s" on the dashboard.
fn shows_throughput(screen: &str) -> bool {
    screen.lines().any(|l| {
        l.split(" ev/s").next().is_some_and(|before| {
            let n = before.rsplit(['│', ' ']).next().unwrap_or("");
            !n.is_empty() && n != "0" && n.chars().next().is_some_and(|c| c.is_ascii_digit())
        }) && l.contains(" ev/s")
    })
}

#[test]
fn the_tui_runs_switches_views_tunes_live_and_quits_cleanly() {
    let run = TuiRun::start(
        "statebench-test",
        "-w smoke --events 100000000",
        "report.json",
    );
    let (session, report) = (&run.session, &run.report);

    for (key, marker) in [
        ("2", "LSM —"),
        ("3", "Profile 'flink-default'"),
        ("4", "A/B compare"),
        ("?", "pause / resume the run"),
    ] {
        session.keys(&[key]);
        session.wait_for(marker, 20, |s| s.contains(marker));
    }
    // Any key closes the help overlay (and does nothing else); then 1 is the dashboard.
    session.keys(&["x"]);
    session.wait_for("help closed", 20, |s| {
        !s.contains("pause / resume the run") && s.contains("A/B compare")
    });
    session.keys(&["1"]);
    session.wait_for("the dashboard", 20, |s| s.contains("Throughput"));

    // Select writebuffer.size (its row follows the knob table's order), type 8mb, apply.
    let row = statebench::config::profile::KNOBS
        .iter()
        .position(|k| k.key == "writebuffer.size")
        .expect("a writebuffer.size knob");
    let mut keys = vec!["3"];
    keys.extend(std::iter::repeat_n("Down", row));
    keys.push("Enter");
    session.keys(&keys);
    session.wait_for("the editor", 20, |s| s.contains("writebuffer.size = "));
    session.keys(&[
        "BSpace", "BSpace", "BSpace", "BSpace", "BSpace", "8mb", "Enter",
    ]);
    let screen = session.wait_for("the change confirmed by RocksDB", 30, |s| {
        s.contains("applied writebuffer.size = 8mb")
    });
    // The arena block follows the buffer as Flink 1.20's RocksDB sizes it (an eighth).
    assert!(
        screen.contains("write_buffer_size=8388608, arena_block_size=1048576 in OPTIONS-"),
        "{screen}"
    );

    session.keys(&["1"]);
    run.quit();
    // The terminal is back: off the alternate screen, the summary printed, no dashboard left.
    assert_eq!(
        session
            .tmux(&["display-message", "-p", "-t", &session.0, "#{alternate_on}"])
            .trim(),
        "0"
    );
    let history = session.history();
    assert!(history.contains("result error"), "{history}");
    let screen = session.screen();
    assert!(!screen.contains("1 Dashboard"), "{screen}");
    // The report holds the run, with the live change and the profile as it ended.
    let whole: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    let json = &whole["segments"][0];
    assert_eq!(json["profile"]["knobs"]["writebuffer.size"], "8mb");
    assert_eq!(
        json["label"],
        "flink-default (edited: writebuffer.size=8mb)"
    );
    // The live change is recorded once, in the snapshot of the interval it happened in.
    let marked = json["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !s["changes"].as_array().unwrap().is_empty())
        .count();
    assert_eq!(marked, 1);
    assert!(json["summary"]["events"].as_u64().unwrap() > 0);
    // RocksDB's final OPTIONS file is kept beside the report, with the live change in it.
    let options = std::fs::read_to_string(report.with_extension("OPTIONS")).unwrap();
    assert!(options.contains("write_buffer_size=8388608"));
    assert_eq!(
        json["rocksdb_options_file"],
        report.with_extension("OPTIONS").display().to_string()
    );
    assert!(json["option_mismatches"].as_array().unwrap().is_empty());
}

#[test]
fn closing_the_terminal_ends_the_tui() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let report = dir.path().join("hup.json");
    let bin = env!("CARGO_BIN_EXE_statebench");
    let session = Session(format!("statebench-hup-{}", std::process::id()));
    // exec: the shell's pid becomes the TUI's.
    let command = format!(
        "echo $$ > {pid}; exec {bin} tui -w smoke --events 100000000 --report {report}",
        pid = pid_file.display(),
        report = report.display()
    );
    session.start(&command);
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_string();
    // The terminal goes away (SIGHUP): the TUI must stop its run and exit, not spin forever.
    session.tmux(&["kill-session", "-t", &session.0]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            Instant::now() < deadline,
            "statebench tui (pid {pid}) still running"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // It quit like q: the run stopped cleanly and the report was written.
    // (stderr stays on the dead terminal on purpose: nothing may panic writing to it.)
    let text = std::fs::read_to_string(&report)
        .unwrap_or_else(|e| panic!("no report after a hang-up: {e}"));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(
        json["segments"][0]["summary"]["stopped_early"]
            .as_bool()
            .unwrap()
    );
}

/// The number before " ev/s" after `label` ("A 12.3K ev/s" -> 12300), on the line that has it.
fn side_rate(screen: &str, label: &str) -> Option<f64> {
    screen.lines().find_map(|l| {
        let after = l.split(label).nth(1)?;
        let n = after.split(" ev/s").next()?.trim();
        let (digits, scale) = match n.strip_suffix('K') {
            Some(d) => (d, 1e3),
            None => match n.strip_suffix('M') {
                Some(d) => (d, 1e6),
                None => (n, 1.0),
            },
        };
        digits.parse::<f64>().ok().map(|v| v * scale)
    })
}

#[test]
fn a_b_shows_both_sides_labelled_and_writes_both_reports_and_the_comparison() {
    let run = TuiRun::start(
        "statebench-ab",
        "-w smoke -p flink-default --compare minutes-wbm-sized --slice 1s --events 100000000",
        "ab.json",
    );
    let (session, report, dir) = (&run.session, &run.report, &run.dir);
    // Each side's rate in its own labelled place, both non-zero once B has had a slice (A's
    // stays on its own last running interval while B runs, and the other way round).
    let screen = session.wait_for("both sides running", 60, |s| {
        side_rate(s, "A ").is_some_and(|r| r > 0.0) && side_rate(s, " B ").is_some_and(|r| r > 0.0)
    });
    assert!(screen.contains("Throughput — A: flink-default"), "{screen}");
    session.keys(&["b"]);
    let screen = session.wait_for("B's dashboard", 20, |s| {
        s.contains("Throughput — B: minutes-wbm-sized")
    });
    assert!(
        side_rate(&screen, " B ").is_some_and(|r| r > 0.0),
        "{screen}"
    );
    session.keys(&["2"]);
    session.wait_for("B's LSM", 20, |s| s.contains("LSM B: minutes-wbm-sized"));
    session.keys(&["4"]);
    session.wait_for("the comparison", 20, |s| s.contains("A/B compare"));
    run.quit();
    // Both reports, each with its own profile and events, and the A/B table.
    let read = |path: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let a = read(report);
    let b = read(&dir.path().join("ab-b.json"));
    assert_eq!(a["segments"][0]["profile"]["name"], "flink-default");
    assert_eq!(b["segments"][0]["profile"]["name"], "minutes-wbm-sized");
    for side in [&a, &b] {
        assert!(side["segments"][0]["summary"]["events"].as_u64().unwrap() > 0);
    }
    // Each side's RocksDB OPTIONS file is kept beside its report.
    for (json, options) in [(&a, "ab.OPTIONS"), (&b, "ab-b.OPTIONS")] {
        let path = dir.path().join(options);
        assert!(path.exists(), "{options}");
        assert_eq!(
            json["segments"][0]["rocksdb_options_file"],
            path.display().to_string()
        );
    }
    let table = std::fs::read_to_string(dir.path().join("ab-compare.txt")).unwrap();
    assert!(table.contains("throughput (events/s)"), "{table}");
    assert!(table.contains("minutes-wbm-sized"), "{table}");
    // Both sides' scorecards in the one layout, and in each report.
    assert!(
        table.contains("scorecard") && table.contains("write amplification"),
        "{table}"
    );
    for side in [&a, &b] {
        assert!(
            side["segments"][0]["scorecard"]["scores"].is_array(),
            "{}",
            side["segments"][0]
        );
    }
    let screen = session.screen();
    assert!(screen.contains("ab-compare.txt"), "{screen}");
}

#[test]
fn fail_at_and_savepoint_at_reach_the_tui_s_engine_and_f_fails_it_again() {
    let profiles = tempfile::tempdir().unwrap();
    let profile = profiles.path().join("checkpointing.yaml");
    std::fs::write(
        &profile,
        "description: flink-default with incremental checkpoints every 200ms\n\
         extends: flink-default\n\
         execution.checkpointing.interval: 200ms\n\
         execution.checkpointing.incremental: true\n",
    )
    .unwrap();
    let run = TuiRun::start(
        "statebench-ckpt",
        &format!(
            "-w smoke -p {} --events 100000000 --fail-at 30000 --savepoint-at 60000",
            profile.display()
        ),
        "ckpt.json",
    );
    let session = &run.session;
    // The failure and the savepoint the flags asked for, on the dashboard's checkpoint panel.
    session.wait_for("the failure and the savepoint", 60, |s| {
        s.contains("restarts 1,") && s.contains("savepoints 1")
    });
    // F fails the job once more; it restarts from its last checkpoint.
    session.keys(&["F"]);
    session.wait_for("the second restart", 30, |s| s.contains("restarts 2,"));
    run.quit();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run.report).unwrap()).unwrap();
    let c = &json["segments"][0]["summary"]["checkpoints"];
    assert_eq!(c["restarts"], 2, "{c}");
    assert_eq!(c["savepoints"].as_array().map(Vec::len), Some(1), "{c}");
}
