//! The direction of the code's dependencies (issue 34): every `crate::` path a source file names
//! is mapped to its layer, and an import that runs upward, or that breaks one of the "nevers" of
//! the intended architecture, fails this test. Lower layers never name higher ones:
//!
//! util, profiler < config < backend < pipeline < durability < engine
//!   < advisor < export < report < flink bridge < tools < tui < face
//!
//! plus what may never be named even downward: the UI reads snapshots (never RocksDB, the
//! pipeline or durability), the advisor's rules are pure (never the engine). Tests (a file's
//! `#[cfg(test)] mod tests`, and test-only files) are left out: they may reach anywhere.
//!
//! No import breaks the direction (issue 34 took the last ones off): any one fails.

use std::collections::BTreeSet;
use std::path::Path;

/// A top-level module of `src/` (a folder or a file) and its layer, lowest first.
const LAYERS: &[(&str, &[&str])] = &[
    ("model", &["model"]),
    ("util", &["util"]),
    ("profiler", &["profiler"]),
    ("config", &["config"]),
    ("backend", &["backend"]),
    ("pipeline", &["pipeline"]),
    ("durability", &["durability"]),
    ("preload", &["preload"]),
    ("engine", &["engine"]),
    ("advisor", &["advisor"]),
    ("export", &["export"]),
    ("report", &["report", "summary"]),
    ("flink bridge", &["flink"]),
    ("tools", &["reproduce", "suites"]),
    ("tui", &["tui"]),
    (
        "face",
        &["main", "lib", "cli", "commands", "output", "progress"],
    ),
];

/// Imports forbidden even downward: (from layer, to layer, why).
const NEVER: &[(&str, &str, &str)] = &[
    ("tui", "backend", "the UI reads snapshots, never RocksDB"),
    ("tui", "pipeline", "the UI reads snapshots"),
    ("tui", "durability", "the UI reads snapshots"),
    ("advisor", "engine", "rules are pure"),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

/// `text` without its `#[cfg(test)]` items: a `mod tests` block and what follows it.
fn without_tests(text: &str) -> &str {
    let start = [
        "#[cfg(test)]\nmod tests",
        "#[cfg(test)]\npub(crate) mod tests",
    ]
    .iter()
    .filter_map(|m| text.find(m))
    .min();
    match start {
        Some(i) => &text[..i],
        None => text,
    }
}

/// The code of `file` as compiled outside tests: no test items, comments or string literals
/// (a profiler's frame names such as "rocksdb::DBImpl::Get" are strings, not uses).
fn code(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    // A char literal '"' opens no string.
    let text = without_tests(&text).replace("'\"'", "' '");
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    let (mut in_string, mut in_comment) = (false, false);
    while let Some(c) = chars.next() {
        if in_comment {
            if c == '\n' {
                in_comment = false;
                out.push(c);
            }
        } else if in_string {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => in_string = false,
                _ => {}
            }
        } else {
            match c {
                '/' if chars.peek() == Some(&'/') => in_comment = true,
                '"' => in_string = true,
                c => out.push(c),
            }
        }
    }
    out
}

/// Files and folders compiled for tests only: declared `#[cfg(test)] mod name;` by their parent
/// (a folder's every file is test-only then).
fn test_only_modules(dir: &Path) -> BTreeSet<std::path::PathBuf> {
    let mut out = BTreeSet::new();
    for file in rust_files(dir) {
        let text = std::fs::read_to_string(&file).unwrap();
        let parent = if file
            .file_name()
            .is_some_and(|n| n == "mod.rs" || n == "lib.rs")
        {
            file.parent().unwrap().to_path_buf()
        } else {
            file.with_extension("")
        };
        let lines: Vec<&str> = text.lines().collect();
        for pair in lines.windows(2) {
            if pair[0].trim() == "#[cfg(test)]"
                && let Some(name) = pair[1]
                    .trim()
                    .strip_prefix("mod ")
                    .and_then(|r| r.strip_suffix(';'))
            {
                out.insert(parent.join(format!("{name}.rs")));
                out.insert(parent.join(name));
            }
        }
    }
    out
}

fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every top-level module `text` names as `crate::module`.
fn named_modules(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        // `crate::{a, b}` names several.
        if name.is_empty() && after.starts_with('{') {
            let group = &after[1..after.find('}').unwrap_or(after.len())];
            for part in group.split(',') {
                let part: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !part.is_empty() {
                    out.insert(part);
                }
            }
        } else if !name.is_empty() {
            out.insert(name);
        }
        rest = after;
    }
    out
}

/// The source files compiled outside tests, with their paths under `src/`.
fn sources() -> Vec<(std::path::PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let test_only = test_only_modules(&src);
    rust_files(&src)
        .into_iter()
        .filter(|f| !f.ancestors().any(|a| test_only.contains(a)))
        .map(|f| {
            let rel = f.strip_prefix(&src).unwrap().display().to_string();
            (f, rel)
        })
        .collect()
}

/// Every import that runs upward or breaks a never, as "file -> layer (why)".
fn broken() -> Vec<String> {
    let mut out = Vec::new();
    for (file, rel) in sources() {
        let rel = Path::new(&rel);
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        let from = layer_of(&top)
            .unwrap_or_else(|| panic!("src/{}: module '{top}' has no layer", rel.display()));
        for module in named_modules(&code(&file)) {
            // Items of lib.rs itself (`crate::run`, `crate::UsageError`) are the face's.
            let to = layer_of(&module).unwrap_or(layer_of("lib").unwrap());
            if to == from {
                continue;
            }
            let (from_name, to_name) = (LAYERS[from].0, LAYERS[to].0);
            let why = if to > from {
                Some("upward")
            } else {
                NEVER
                    .iter()
                    .find(|(f, t, _)| *f == from_name && *t == to_name)
                    .map(|(_, _, why)| *why)
            };
            if let Some(why) = why {
                out.push(format!(
                    "src/{} -> {to_name} ({why}: crate::{module})",
                    rel.display()
                ));
            }
        }
    }
    out
}

#[test]
fn imports_run_one_way() {
    let broken = broken();
    assert!(
        broken.is_empty(),
        "imports against the layering (lower layers never name higher ones): {broken:#?}"
    );
}

/// Only `src/backend/` names the `rocksdb` crate (issue 34): the layers above use the backend's
/// own types (`Cf`, `Batch`, `Snapshot`, `SstWriter`, `BackendError`).
#[test]
fn the_rocksdb_crate_is_used_only_in_the_backend() {
    let users: Vec<String> = sources()
        .into_iter()
        .filter(|(_, rel)| !rel.starts_with("backend/"))
        .filter(|(file, _)| {
            let code = code(file);
            code.match_indices("rocksdb::").any(|(i, _)| {
                !code[..i]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            })
        })
        .map(|(_, rel)| format!("src/{rel}"))
        .collect();
    assert!(
        users.is_empty(),
        "the rocksdb crate outside src/backend/ (use the backend's own types): {users:#?}"
    );
}

#[test]
fn the_checker_sees_an_upward_import_and_a_never() {
    assert_eq!(
        named_modules("use crate::{config::Profile, engine};\nlet x = crate::backend::open();"),
        ["backend", "config", "engine"]
            .into_iter()
            .map(String::from)
            .collect()
    );
    assert!(layer_of("config") < layer_of("pipeline"));
    assert!(layer_of("summary") == layer_of("report"));
    assert_eq!(
        without_tests("use crate::a;\n#[cfg(test)]\nmod tests {\n use crate::b;\n}\n"),
        "use crate::a;\n"
    );
}
