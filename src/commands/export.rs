//! `statebench export -p PROFILE --format flink|rocksdb-options|yaml [--flink-version 1.20|2.x]
//! [-o FILE]`.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context as _, bail};

use super::UsageError;
use crate::cli::ExportFormat;
use crate::export::{self, Format};
use crate::report;

pub fn run(profile: &str, format: ExportFormat, output: Option<&Path>) -> anyhow::Result<()> {
    let ExportFormat {
        format,
        flink_version,
    } = format;
    if flink_version.is_some() && format != Format::Flink {
        // Only the Flink configuration depends on the release: say so rather than ignore it.
        bail!(UsageError(
            "--flink-version applies to --format flink only".to_string()
        ));
    }
    let profile = super::load_profile(profile)?;
    let text = export::export_for(&profile, format, flink_version.unwrap_or_default())
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
