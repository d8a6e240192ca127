//! `statebench reproduce [NAME]`: the configuration traps, broken and fixed side by side, and
//! the case studies the advisor must solve.

use anyhow::bail;

use super::UsageError;
use crate::cli::ReproduceArgs;
use crate::reproduce::{self, proofs, recovery};

pub fn run(args: ReproduceArgs) -> anyhow::Result<()> {
    let Some(name) = args.name else {
        println!("traps (broken and fixed side by side):");
        for s in reproduce::SCENARIOS {
            println!("  {:<20} {}", s.name, s.story);
        }
        println!("case studies (the advisor finds the cause, its fix is re-run):");
        for p in proofs::PROOFS {
            let production = if p.production.is_some() {
                " (also at production size: --scale production)"
            } else {
                ""
            };
            println!(
                "  {:<20} {}{production} [{} events a side by default]",
                p.name, p.story, p.events
            );
        }
        println!("failures, checkpoints and savepoints:");
        for c in recovery::CASES {
            let production = if c.production.is_some() {
                " (also at production size: --scale production)"
            } else {
                ""
            };
            println!("  {:<26} {}{production}", c.name, c.story);
        }
        return Ok(());
    };
    let production = args.scale == proofs::Scale::Production;
    let at_size = |n: &str| {
        proofs::find(n).is_some_and(|p| p.production.is_some())
            || recovery::find(n).is_some_and(|c| c.production.is_some())
    };
    if production && !at_size(&name) {
        let names: Vec<&str> = proofs::PROOFS
            .iter()
            .map(|p| p.name)
            .chain(recovery::CASES.iter().map(|c| c.name))
            .filter(|n| at_size(n))
            .collect();
        bail!(UsageError(format!(
            "'{name}' runs in miniature only: --scale production is for the case studies {}",
            names.join(", ")
        )));
    }
    if let Some(case) = recovery::find(&name) {
        let preload_dir = if production {
            Some(super::preload_dir(args.preload_dir.as_deref())?)
        } else {
            None
        };
        let (table, ok) = recovery::run(case, args.events, preload_dir.as_deref())?;
        print!("{table}");
        if !ok {
            bail!("'{}' did not reproduce", case.name);
        }
        return Ok(());
    }
    if let Some(proof) = proofs::find(&name) {
        let preload_dir = match args.scale {
            proofs::Scale::Production => super::preload_dir(args.preload_dir.as_deref())?,
            proofs::Scale::Miniature => std::path::PathBuf::new(),
        };
        let outcome = proofs::run(proof, args.events, args.scale, &preload_dir)?;
        print!("{}", proofs::render(proof, &outcome));
        if !outcome.ok {
            match args.events {
                Some(n) if n < proof.events => bail!(
                    "'{}' did not reproduce at --events {n}: the case needs its state to reach its trap (flushes, files, filters), which takes about its default {} events a side",
                    proof.name,
                    proof.events
                ),
                _ => bail!("'{}' did not reproduce", proof.name),
            }
        }
        return Ok(());
    }
    let Some(scenario) = reproduce::find(&name) else {
        let known: Vec<&str> = reproduce::SCENARIOS
            .iter()
            .map(|s| s.name)
            .chain(proofs::PROOFS.iter().map(|p| p.name))
            .chain(recovery::CASES.iter().map(|c| c.name))
            .collect();
        bail!(UsageError(format!(
            "unknown case '{name}' (available: {})",
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
