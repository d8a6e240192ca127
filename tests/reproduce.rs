//! Each field-report trap reproduces: broken goes wrong, fixed is exact.

use statebench::reproduce;

#[test]
fn every_trap_reproduces_in_miniature() {
    for scenario in reproduce::SCENARIOS {
        // Half the default log for the smoke traps; the backfill traps need their whole log to
        // get a full window past the switch.
        let events = (scenario.base == "smoke").then_some(scenario.events / 2);
        let (broken, fixed, ok) = reproduce::run(scenario, events).unwrap();
        assert!(ok, "{}", reproduce::render(scenario, &broken, &fixed, ok));
    }
}

#[test]
fn unknown_traps_are_usage_errors() {
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
}
