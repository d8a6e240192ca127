//! Settings Flink silently overrides, or cannot take from its configuration: the profile
//! measures what a Flink job would not run with, unless the user deploys more than config.

use super::Rule;
use crate::advisor::{Change, Evidence, Finding, Input, Severity};
use crate::config::profile::{FLINK_PARTITIONED_BLOOM_BITS, KNOBS, Knobs};

pub const RULE: Rule = Rule {
    id: "flink-overrides",
    looks_for: "bits-per-key under partitioned filters; knobs Flink has no configuration key for",
    check,
};

fn check(input: &Input) -> Option<Finding> {
    let k = &input.profile.knobs;
    let defaults = Knobs::default().values();
    // Knobs set away from RocksDB's default that only an options factory can deploy.
    let factory: Vec<String> = KNOBS
        .iter()
        .zip(k.values())
        .zip(defaults)
        .filter(|((info, _), _)| {
            // `memory.mode` chooses between Flink keys (managed memory or fixed-per-slot); the
            // rate limiter stands for the disk statebench measured with, not something to deploy.
            info.flink_key.is_none()
                && !matches!(info.key, "target" | "memory.mode" | "io.rate-limit-per-sec")
                && !info.is_job_setting()
        })
        .filter(|((_, (_, value)), (_, default))| value != default)
        .map(|((info, (_, value)), _)| format!("{}={value}", info.key))
        .collect();
    let overridden = k.use_bloom_filter
        && k.partitions_index_filters()
        && k.bloom_bits_per_key != FLINK_PARTITIONED_BLOOM_BITS;
    if factory.is_empty() && !overridden {
        return None;
    }
    let mut evidence = Vec::new();
    let mut recommendation = Vec::new();
    let mut said = Vec::new();
    if overridden {
        evidence.push(Evidence::new(
            "bloom-filter.bits-per-key with partitioned filters",
            k.bloom_bits_per_key,
            FLINK_PARTITIONED_BLOOM_BITS,
        ));
        recommendation.push(Change::new(
            "bloom-filter.bits-per-key",
            FLINK_PARTITIONED_BLOOM_BITS,
        ));
        said.push(format!(
            "with partitioned index/filters Flink 1.20 uses a {FLINK_PARTITIONED_BLOOM_BITS}-bit bloom filter, not the {} bits the profile asks for",
            k.bloom_bits_per_key
        ));
    }
    if !factory.is_empty() {
        evidence.push(Evidence::new(
            "knobs without a Flink configuration key",
            factory.join(", "),
            "none",
        ));
        said.push(format!(
            "{} need{} a RocksDBOptionsFactory in the job: Flink's configuration cannot set {}",
            factory.join(", "),
            if factory.len() == 1 { "s" } else { "" },
            if factory.len() == 1 { "it" } else { "them" }
        ));
    }
    let (from, to) = input.whole_run();
    Some(Finding {
        id: RULE.id,
        severity: Severity::Info,
        diagnosis: format!("Deploying this profile takes care: {}.", said.join("; ")),
        evidence,
        from_secs: from,
        to_secs: to,
        recommendation,
        memory_cost: 0,
        job_changes: Vec::new(),
        effect: None,
        alternatives: Vec::new(),
        note: (!factory.is_empty()).then(|| "`statebench export --format flink` lists them with the RocksJava calls a factory makes".to_string()),
        cost: None,
        overruled: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use crate::advisor::testing::{Run, profile};

    fn findings(name: &str, edits: &[(&str, &str)]) -> Vec<crate::advisor::Finding> {
        Run::new(profile(name, edits), 3, |_, _| {}, |_| {}).findings("flink-overrides")
    }

    #[test]
    fn overridden_bits_and_factory_only_knobs_are_said() {
        // Partitioned filters with 14 bits: Flink uses 10.
        let f = &findings("hours-partitioned-filter", &[])[0];
        assert_eq!(f.recommendation[0].value, "10");
        assert!(
            f.diagnosis.contains("use-direct-reads=true"),
            "{}",
            f.diagnosis
        );
        // A factory-only knob alone.
        let f = &findings("flink-default", &[("use-direct-reads", "true")])[0];
        assert!(f.recommendation.is_empty());
        assert!(
            f.diagnosis.contains("use-direct-reads=true"),
            "{}",
            f.diagnosis
        );
        // The rate limiter is the modelled disk (the export says so): no deployment advice.
        assert!(findings("flink-default", &[("io.rate-limit-per-sec", "3mb")]).is_empty());
    }

    #[test]
    fn a_profile_flink_can_take_whole_is_not_a_finding() {
        assert!(findings("flink-default", &[]).is_empty());
        // 10 bits under partitioned filters is what Flink does anyway.
        let ten = [
            ("use-bloom-filter", "true"),
            ("memory.partitioned-index-filters", "true"),
            ("bloom-filter.bits-per-key", "10"),
        ];
        assert!(findings("flink-default", &ten).is_empty());
    }
}
