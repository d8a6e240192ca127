//! Every shipped profile and workload loads; invalid files fail with a message that names the
//! file, the line, the key and what would be valid.

use statebench::config::{ByteSize, ConfigError, Profile, Workload};

fn shipped(dir: &str) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .filter(|p| p.ends_with(".yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no files in {dir}");
    files
}

#[test]
fn every_shipped_profile_loads_and_is_built_in() {
    for path in shipped("profiles") {
        let from_file = Profile::load(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let from_builtin = Profile::load(&from_file.name).unwrap();
        assert_eq!(
            from_file.knobs, from_builtin.knobs,
            "{path} differs from the built-in copy"
        );
        assert!(from_file.description.is_some(), "{path} has no description");
    }
    assert_eq!(
        shipped("profiles").len(),
        statebench::config::profile::BUILTIN.len()
    );
}

#[test]
fn every_shipped_workload_loads_and_is_built_in() {
    for path in shipped("workloads") {
        let w = Workload::load(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(Workload::load(&w.name).is_ok());
    }
    assert_eq!(
        shipped("workloads").len(),
        statebench::config::workload::BUILTIN.len()
    );
}

/// A user's own Flink configuration shipped beside the profiles (profiles/flink/*/config.yaml,
/// read as Flink's conf dir): issue 33's 4-slot TaskManager of an 8 GB process.
#[test]
fn every_shipped_flink_configuration_loads_as_its_taskmanager() {
    let dirs: Vec<String> = std::fs::read_dir("profiles/flink")
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .collect();
    assert!(!dirs.is_empty());
    for dir in &dirs {
        Profile::load(dir).unwrap_or_else(|e| panic!("{dir}: {e}"));
    }
    let p = Profile::load("profiles/flink/tm-8g-4-slots").unwrap();
    // Flink's memory model: 0.4 of the total Flink memory of an 8 GiB process, over 4 slots.
    assert_eq!(p.knobs.managed_memory, ByteSize(746_250_577));
    assert!(p.knobs.memory_mode.is_shared());
}

#[test]
fn case_study_profiles_differ_where_their_story_says() {
    let starved = Profile::load("minutes-wbm-starved").unwrap();
    let sized = Profile::load("minutes-wbm-sized").unwrap();
    let (s, z) = (starved.derived(3), sized.derived(3));
    assert!(s.write_buffer_budget_per_column_family < starved.knobs.write_buffer_size.0);
    assert!(z.write_buffer_budget_per_column_family > sized.knobs.write_buffer_size.0);

    let mono = Profile::load("hours-monolithic-filter").unwrap();
    let part = Profile::load("hours-partitioned-filter").unwrap();
    assert!(!mono.knobs.partitioned_index_filters && part.knobs.partitioned_index_filters);
    assert!(mono.knobs.use_direct_reads && part.knobs.use_direct_reads);
    assert_eq!(
        part.extends_chain,
        ["hours-monolithic-filter", "flink-default"]
    );
    assert_eq!(part.derived(3).effective_bloom_bits_per_key, Some(10.0));
    assert_eq!(mono.derived(3).effective_bloom_bits_per_key, Some(14.0));

    let small = Profile::load("hours-levels-default").unwrap();
    let big = Profile::load("hours-levels-sized").unwrap();
    assert!(big.knobs.target_file_size_base.0 == 4 * small.knobs.target_file_size_base.0);
    assert!(big.knobs.dynamic_level_bytes && !small.knobs.dynamic_level_bytes);
}

#[test]
fn extends_resolves_next_to_the_file_then_built_ins() {
    let p = Profile::load("tests/fixtures/valid/child.yaml").unwrap();
    assert_eq!(p.extends_chain, ["base", "flink-default"]);
    assert_eq!(p.knobs.write_buffer_size, ByteSize(8 << 20));
    assert_eq!(p.knobs.bloom_bits_per_key, 12.0);
    assert!(p.knobs.use_bloom_filter);
    // Inherited from flink-default.
    assert_eq!(p.knobs.managed_memory, ByteSize(256 << 20));
    let w = Workload::load("tests/fixtures/valid/tiny-workload.yaml").unwrap();
    assert_eq!(w.spec.windows.len(), 2);
}

fn profile_error(path: &str) -> String {
    let err = Profile::load(path).expect_err(path);
    err.to_string()
}

#[test]
fn unknown_key_names_file_line_and_suggestion() {
    let msg = profile_error("tests/fixtures/invalid/profile-unknown-key.yaml");
    assert_eq!(
        msg,
        "unknown key 'writebuffer.sise' in tests/fixtures/invalid/profile-unknown-key.yaml line 4 (did you mean 'writebuffer.size'?)"
    );
    let msg = Workload::load("tests/fixtures/invalid/workload-unknown-nested-key.yaml")
        .unwrap_err()
        .to_string();
    assert_eq!(
        msg,
        "unknown key 'distributon' in tests/fixtures/invalid/workload-unknown-nested-key.yaml line 3 (did you mean 'distribution'?)"
    );
}

#[test]
fn the_old_compression_key_points_to_flinks_spelling() {
    let msg = profile_error("tests/fixtures/invalid/profile-old-compression-key.yaml");
    assert_eq!(
        msg,
        "unknown key 'compression.per-level' in tests/fixtures/invalid/profile-old-compression-key.yaml line 3 (did you mean 'compression.per.level'?)"
    );
}

#[test]
fn bad_units_name_the_key_and_the_valid_units() {
    let msg = profile_error("tests/fixtures/invalid/profile-bad-unit.yaml");
    assert!(msg.starts_with("tests/fixtures/invalid/profile-bad-unit.yaml line 2, key 'writebuffer.size': invalid size '64xb'"), "{msg}");
    assert!(msg.contains("b, kb, mb, gb"), "{msg}");
    let msg = Workload::load("tests/fixtures/invalid/workload-bad-duration.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("line 4, key 'span': invalid duration '1 fortnight'"),
        "{msg}"
    );
    assert!(msg.contains("ms, s, m, h, d"), "{msg}");
}

#[test]
fn impossible_combinations_are_rejected_with_the_reason() {
    let msg = profile_error("tests/fixtures/invalid/profile-partitioned-without-bloom.yaml");
    assert!(
        msg.contains("'memory.partitioned-index-filters: true' needs 'use-bloom-filter: true'"),
        "{msg}"
    );
    let msg = profile_error("tests/fixtures/invalid/profile-l0-triggers.yaml");
    assert!(
        msg.contains("writes would stop before they slow down"),
        "{msg}"
    );
    let msg = Workload::load("tests/fixtures/invalid/workload-zipf-without-exponent.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("'keys.distribution: zipf' needs 'keys.zipf-exponent'"),
        "{msg}"
    );
}

#[test]
fn missing_files_and_parents_and_cycles_are_clear() {
    let err = Profile::load("tests/fixtures/invalid/nope.yaml").unwrap_err();
    assert!(matches!(err, ConfigError::NotFound { .. }));
    let msg = err.to_string();
    assert!(
        msg.starts_with("profile 'tests/fixtures/invalid/nope.yaml' not found"),
        "{msg}"
    );
    assert!(msg.contains("flink-default"), "lists the built-ins: {msg}");
    let msg = profile_error("tests/fixtures/invalid/profile-extends-missing.yaml");
    assert!(
        msg.contains("extends: profile 'no-such-profile' not found"),
        "{msg}"
    );
    let msg = profile_error("tests/fixtures/invalid/profile-cycle-a.yaml");
    assert!(
        msg.starts_with(
            "profile inheritance cycle: profile-cycle-a -> profile-cycle-b -> profile-cycle-a"
        ),
        "{msg}"
    );
}

#[test]
fn an_edited_profile_saved_as_yaml_loads_back_the_same() {
    let edited = Profile::load("flink-default")
        .unwrap()
        .edited("block.blocksize", "16kb")
        .unwrap()
        .edited("compression.per.level", "[none, lz4, zstd]")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tuned.yaml");
    std::fs::write(&path, edited.to_yaml("tuned: \"quoted\" text")).unwrap();
    let loaded = Profile::load(path.to_str().unwrap()).unwrap();
    assert_eq!(loaded.knobs, edited.knobs);
    assert_eq!(
        loaded.description.as_deref(),
        Some("tuned: \"quoted\" text")
    );
}

#[test]
fn source_and_phase_mistakes_name_the_field_and_what_is_valid() {
    let msg = Workload::load("tests/fixtures/invalid/workload-phases-switch-too-early.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("workload-phases-switch-too-early.yaml")
            && msg
                .contains("'phases.switch-at' is 5m but must be at least the longest window (10m)"),
        "{msg}"
    );
    let msg = Workload::load("tests/fixtures/invalid/workload-timestamp-without-time.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("'source.starting-offsets: timestamp' needs 'source.starting-timestamp'"),
        "{msg}"
    );
    let msg = Workload::load("tests/fixtures/invalid/workload-committed-never-found.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("'source.committed-fallback: none'") && msg.contains("earliest | latest"),
        "{msg}"
    );
}

/// A generated workload says which of its keys, events and span it lacks, and that a trace's
/// workload needs none of them; a trace's workload takes them from its trace, and the times
/// checked against the span are checked against the trace's.
#[test]
fn a_trace_workload_takes_its_keys_events_and_span_from_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let generated = write("generated.yaml", "partitions: 2\nwindows: [1m]\n");
    let msg = Workload::load(&generated).unwrap_err().to_string();
    for field in [
        "'keys.count' is missing",
        "'events' is missing",
        "'event-time.span' is missing",
    ] {
        assert!(msg.contains(field), "{field}: {msg}");
    }
    assert!(msg.contains("a workload with 'trace:'"), "{msg}");

    write(
        "t.csv",
        "key,event_time,partition\na,1767225600000,0\nb,1767225630000,1\na,1767225690000,1\n",
    );
    let path = write("t.yaml", "partitions: 2\nwindows: [1m]\ntrace: t.csv\n");
    let mut w = Workload::load(&path).unwrap();
    statebench::pipeline::trace::Trace::load_into(&mut w).unwrap();
    assert_eq!(w.spec.keys.count, 2);
    assert_eq!(w.spec.events, 3);
    assert_eq!(w.spec.event_time.span.0, 90_000);
    let figures = w.trace_figures.clone().unwrap();
    assert_eq!((figures.records, figures.partitions), (3, vec![1, 2]));

    // Given, they stay as given; a stop past the trace's span is refused once it is read.
    let path = write(
        "given.yaml",
        "partitions: 2\nwindows: [1m]\ntrace: t.csv\nevents: 2\nsource: {stop-at: 5m}\n",
    );
    let mut w = Workload::load(&path).unwrap();
    let msg = statebench::pipeline::trace::Trace::load_into(&mut w)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("given.yaml") && msg.contains("'source.stop-at' is past the end of the log"),
        "{msg}"
    );
}

#[test]
fn an_empty_profile_is_refused_and_a_child_keeps_only_its_own_description() {
    let msg = profile_error("tests/fixtures/invalid/profile-empty.yaml");
    assert_eq!(
        msg,
        "tests/fixtures/invalid/profile-empty.yaml: the profile is empty: write 'extends: flink-default' for Flink's defaults, then the knobs that differ"
    );
    let dir = tempfile::tempdir().unwrap();
    let child = dir.path().join("child.yaml");
    std::fs::write(&child, "extends: flink-default\nwritebuffer.size: 8mb\n").unwrap();
    let p = Profile::load(&child.to_string_lossy()).unwrap();
    assert_eq!(
        p.description, None,
        "flink-default's description is not this file's"
    );
    assert_eq!(p.knobs.write_buffer_size.0, 8 << 20);
}

/// A key missing or misspelt inside `job:` is named with the job's line (or its own), not the
/// file's first.
#[test]
fn errors_inside_the_job_section_point_at_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.yaml");
    let head = "keys:\n  count: 100\nevent-time:\n  span: 1h\nevents: 1000\n";
    let error = |job: &str| {
        std::fs::write(&path, format!("{head}{job}")).unwrap();
        Workload::load(path.to_str().unwrap())
            .unwrap_err()
            .to_string()
    };
    let missing = error(
        "job:\n  kind: process\n  states:\n    - {name: v, type: value}\n  on-event:\n    - {action: get, state: v}\n",
    );
    assert!(
        missing.contains("value-size") && missing.contains("line 6"),
        "{missing}"
    );
    let unknown_kind = error("job:\n  kind: foo\n");
    assert!(
        unknown_kind.contains("foo") && unknown_kind.contains("line 6"),
        "{unknown_kind}"
    );
    let misspelt = error("job:\n  kind: window\n  assigner: tumbling\n  sizee: 1m\n");
    assert!(
        misspelt.contains("'sizee'") && misspelt.contains("line 9"),
        "{misspelt}"
    );
    assert!(misspelt.contains("did you mean 'size'"), "{misspelt}");
}

/// `job:` as a list is a chain: its operators in order, `op<i>.` labels; each mistake names
/// `job[i].<field>` and its line.
#[test]
fn a_chain_loads_and_its_mistakes_name_the_operator_and_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.yaml");
    let head = "keys:\n  count: 100\nevent-time:\n  span: 1h\nevents: 1000\nvalue-size: 16\n";
    let load = |job: &str| {
        std::fs::write(&path, format!("{head}{job}")).unwrap();
        Workload::load(path.to_str().unwrap())
    };
    let error = |job: &str| load(job).unwrap_err().to_string();
    let chain = load(
        "job:\n  - kind: dedup\n    ttl: 1h\n  - kind: window\n    assigner: session\n    gap: 30m\n    function: aggregate\n",
    )
    .unwrap();
    let kinds: Vec<&str> = chain.operators().iter().map(|o| o.kind()).collect();
    assert_eq!(kinds, ["dedup", "window"]);
    assert_eq!(chain.operator().kind(), "dedup");
    assert_eq!(
        chain.result_labels(),
        ["op0.emitted", "op1.fired", "op1.elements", "op1.digest"]
    );
    assert_eq!(chain.slot_bases(), [0, 1]);
    // A list of one is the single operator: labels unprefixed.
    let one = load("job:\n  - kind: dedup\n").unwrap();
    assert_eq!(one.result_labels(), ["emitted"]);
    assert!(!one.is_chain());

    let frequency = error("job:\n  - kind: dedup\n  - kind: frequency\n    windows: [1m]\n");
    assert!(
        frequency.contains("line 9")
            && frequency.contains("job[1].kind")
            && frequency.contains("frequency runs only as the job's only operator"),
        "{frequency}"
    );
    let join =
        error("job:\n  - kind: dedup\n  - kind: interval-join\n    lower: 0s\n    upper: 1s\n");
    assert!(
        join.contains("job[1].kind") && join.contains("line 9") && join.contains("first operator"),
        "{join}"
    );
    let five = error(&format!("job:\n{}", "  - kind: dedup\n".repeat(5)));
    assert!(
        five.contains("at most 4") && five.contains("job[4]") && five.contains("line 12"),
        "{five}"
    );
    let field = error(
        "job:\n  - kind: dedup\n  - kind: window\n    assigner: session\n    function: aggregate\n",
    );
    assert!(
        field.contains("job[1].gap") && field.contains("line 9"),
        "{field}"
    );
    let misspelt = error(
        "job:\n  - kind: dedup\n  - kind: window\n    assigner: session\n    gapp: 1m\n    function: aggregate\n",
    );
    assert!(
        misspelt.contains("'gapp'") && misspelt.contains("line 11"),
        "{misspelt}"
    );
    let unknown = error("job:\n  - kind: dedup\n  - kind: nope\n");
    assert!(
        unknown.contains("job[1]") && unknown.contains("nope") && unknown.contains("line 9"),
        "{unknown}"
    );
    let empty = error("job: []\n");
    assert!(empty.contains("empty list"), "{empty}");
}
