//! Each field-report trap reproduces: broken goes wrong, fixed is exact.

use statebench::reproduce;

#[test]
fn every_trap_reproduces_in_miniature() {
    for scenario in reproduce::SCENARIOS {
        let (broken, fixed, ok) = reproduce::run(scenario, 30_000).unwrap();
        assert!(ok, "{}", reproduce::render(scenario, &broken, &fixed, ok));
    }
}

#[test]
fn unknown_and_planned_traps_are_usage_errors() {
    use clap::Parser;
    let run = |name: &str| {
        statebench::run(statebench::cli::Cli::parse_from([
            "statebench",
            "reproduce",
            name,
        ]))
    };
    let err = run("no-such-trap").unwrap_err();
    assert!(
        err.to_string().contains("available: ttl-too-short"),
        "{err}"
    );
    assert_eq!(statebench::exit_code(&err), 2);
    let err = run("same-consumer-group").unwrap_err();
    assert!(err.to_string().contains("is not available yet"), "{err}");
}
