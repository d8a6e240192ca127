//! Every YAML example in the docs that is a whole workload or profile loads as written, and a
//! whole trace workload runs (issue 35). A block fenced ```` ```yaml ```` is whole; one fenced
//! ```` ```yaml fragment ```` is a part of one (a workload's section, a reference of every
//! field), and a fragment with a `job:` section still loads inside a small workload, so the
//! docs' job options stay what the loader accepts.

use std::path::{Path, PathBuf};
use std::process::Command;

use statebench::config::{Profile, Workload};

/// A fenced block of a markdown file: its info string (`yaml`, `yaml fragment`, `csv`), the
/// line it starts on and its text.
struct Block {
    info: String,
    line: usize,
    text: String,
}

fn blocks(path: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        match (&mut open, line.trim_start().strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    info: info.trim().to_string(),
                    line: i + 1,
                    text: String::new(),
                })
            }
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some(b), None) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(
        open.is_none(),
        "{}: a code block is never closed",
        path.display()
    );
    out
}

fn docs() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir("docs")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.push(PathBuf::from("README.md"));
    files.sort();
    files
}

/// A profile names a profile it extends, or Flink's keys (dotted, or `state:` nested); a
/// workload has neither.
fn is_profile(yaml: &serde_norway::Value) -> bool {
    yaml.as_mapping().is_some_and(|m| {
        m.keys()
            .filter_map(|k| k.as_str())
            .any(|k| k == "extends" || k.contains('.') || k == "state")
    })
}

/// The file name a block gives itself in its first line (`# my-traffic.yaml`), if any.
fn own_name(text: &str) -> Option<String> {
    let first = text.lines().next()?.trim().strip_prefix('#')?.trim();
    let name = first.split_whitespace().next()?.trim_end_matches(':');
    (name.ends_with(".yaml") && !name.contains('/')).then(|| name.to_string())
}

/// The files a doc's other blocks stand for, by the name its text gives them: a trace
/// (`trace: orders.csv`) is the doc's csv block whose file the workload names.
fn write_companions(doc: &[Block], workload: &serde_norway::Value, dir: &Path) {
    let Some(trace) = workload.get("trace").and_then(|t| t.as_str()) else {
        return;
    };
    let ext = Path::new(trace)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    let info = if ext == "jsonl" { "json" } else { ext };
    let block = doc
        .iter()
        .find(|b| b.info == info)
        .unwrap_or_else(|| panic!("no ```{info} block stands for the trace {trace}"));
    std::fs::write(dir.join(trace), &block.text).unwrap();
}

#[test]
fn every_whole_yaml_example_in_the_docs_loads_as_written() {
    let mut whole = 0;
    let mut fragments = 0;
    for path in docs() {
        let doc = blocks(&path);
        for b in doc.iter().filter(|b| b.info.starts_with("yaml")) {
            let at = format!("{} line {}", path.display(), b.line);
            let yaml: serde_norway::Value =
                serde_norway::from_str(&b.text).unwrap_or_else(|e| panic!("{at}: not YAML: {e}"));
            let dir = tempfile::tempdir().unwrap();
            match b.info.as_str() {
                "yaml fragment" => {
                    fragments += 1;
                    // A job section loads inside a small workload.
                    if let Some(job) = yaml.get("job") {
                        let mut w: serde_norway::Value =
                            serde_norway::from_str("keys: {count: 100}\nevents: 1000\nevent-time: {span: 1h}\npartitions: 4\n")
                                .unwrap();
                        w["job"] = job.clone();
                        let file = dir.path().join("fragment.yaml");
                        std::fs::write(&file, serde_norway::to_string(&w).unwrap()).unwrap();
                        Workload::load(file.to_str().unwrap())
                            .unwrap_or_else(|e| panic!("{at}: its job section: {e}"));
                    }
                }
                "yaml" => {
                    whole += 1;
                    let file = dir
                        .path()
                        .join(own_name(&b.text).unwrap_or_else(|| "example.yaml".to_string()));
                    std::fs::write(&file, &b.text).unwrap();
                    let file = file.to_str().unwrap();
                    if is_profile(&yaml) {
                        Profile::load(file).unwrap_or_else(|e| panic!("{at}: {e}"));
                    } else {
                        write_companions(&doc, &yaml, dir.path());
                        let mut w = Workload::load(file).unwrap_or_else(|e| panic!("{at}: {e}"));
                        statebench::pipeline::trace::Trace::load_into(&mut w)
                            .unwrap_or_else(|e| panic!("{at}: its trace: {e}"));
                    }
                }
                other => panic!("{at}: ```{other}: a YAML block is ```yaml or ```yaml fragment"),
            }
        }
    }
    // The docs hold both kinds (a test that found none would prove nothing).
    assert!(whole >= 5, "{whole} whole examples");
    assert!(fragments >= 3, "{fragments} fragments");
}

/// The trace docs' own example, as a user copies it: the workload and its CSV beside it, run.
#[test]
fn the_trace_docs_example_runs_as_written() {
    let doc = blocks(Path::new("docs/trace.md"));
    let workload = doc.iter().find(|b| b.info == "yaml").unwrap();
    let yaml: serde_norway::Value = serde_norway::from_str(&workload.text).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(own_name(&workload.text).unwrap());
    std::fs::write(&file, &workload.text).unwrap();
    write_companions(&doc, &yaml, dir.path());
    let out = Command::new(env!("CARGO_BIN_EXE_statebench"))
        .args(["run", "--quiet", "-w"])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The summary tells what the trace holds: its 3 records of 2 keys in 2 of the 4
    // partitions (a one-input job: no inputs line).
    let trace = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("trace "))
        .unwrap_or_else(|| panic!("no trace line: {stdout}"));
    assert!(
        trace.contains("3 records, 2 keys") && trace.contains("2 of 4 partitions"),
        "{trace}"
    );
    assert!(!trace.contains("inputs"), "{trace}");
}
