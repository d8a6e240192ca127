//! `statebench export -p PROFILE --format flink|rocksdb-options|yaml [-o FILE]`.

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;

use crate::config::Profile;
use crate::export::{self, Format};
use crate::report;

pub fn run(profile: &str, format: Format, output: Option<&Path>) -> anyhow::Result<()> {
    let profile = Profile::load(profile)?;
    let text = export::export(&profile, format)
        .with_context(|| format!("cannot export profile '{}'", profile.name))?;
    match output {
        Some(path) => {
            super::check_report_dir(Some(path))?;
            report::write_atomically(path, text.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("written: {}", path.display());
        }
        None => {
            let _ = std::io::stdout().write_all(text.as_bytes());
        }
    }
    Ok(())
}
