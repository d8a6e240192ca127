//! `statebench reproduce [NAME]`: the configuration traps, broken and fixed side by side.

use anyhow::bail;

use super::UsageError;
use crate::cli::ReproduceArgs;
use crate::reproduce;

pub fn run(args: ReproduceArgs) -> anyhow::Result<()> {
    let Some(name) = args.name else {
        for s in reproduce::SCENARIOS {
            println!("{:<20} {}", s.name, s.story);
        }
        return Ok(());
    };
    let Some(scenario) = reproduce::find(&name) else {
        let known: Vec<&str> = reproduce::SCENARIOS.iter().map(|s| s.name).collect();
        bail!(UsageError(format!(
            "unknown trap '{name}' (available: {})",
            known.join(", ")
        )));
    };
    eprintln!(
        "running '{}' broken and fixed on '{}'{} ...",
        scenario.name,
        scenario.base,
        args.events
            .map(|n| format!(", {n} events each"))
            .unwrap_or_default()
    );
    let (broken, fixed, ok) = reproduce::run(scenario, args.events)?;
    print!("{}", reproduce::render(scenario, &broken, &fixed, ok));
    if ok {
        Ok(())
    } else {
        bail!("'{}' did not reproduce", scenario.name)
    }
}
