//! `statebench workloads list|show`.

use crate::config::{self, Workload};

pub fn list() -> anyhow::Result<()> {
    for (name, _) in config::workload::BUILTIN {
        let w = Workload::load(name)?;
        println!("{name:<14} {}", w.spec.description.as_deref().unwrap_or(""));
    }
    Ok(())
}

pub fn show(name: &str) -> anyhow::Result<()> {
    let w = Workload::load(name)?;
    println!("# {} ({})", w.name, w.source);
    print!("{}", serde_norway::to_string(&w.spec)?);
    Ok(())
}
