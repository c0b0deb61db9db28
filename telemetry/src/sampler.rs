//! Head sampling: whether a new trace is recorded, decided once at its root and carried in the
//! `sampled` flag of its context (`OTEL_TRACES_SAMPLER`).
//!
//! The default, `parentbased_always_on`, records every trace the daemon starts and follows the
//! caller's decision when it sends a `traceparent`. The ratio samplers use the trace id's lower
//! 8 bytes, as the OpenTelemetry SDKs do, so every process that sees the same trace decides the
//! same way. Keeping errors and expensive runs while dropping the rest is tail sampling, the
//! collector's job (docs/scale.md).

use crate::context::TraceId;

/// A sampling rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampler {
    /// Record every trace.
    AlwaysOn,
    /// Record none.
    AlwaysOff,
    /// Record this share of traces, by trace id.
    TraceIdRatio(f64),
    /// Follow the caller's `sampled` flag; roots use the inner rule.
    ParentBased(Root),
}

/// The rule a parent-based sampler applies to roots.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Root {
    /// Record every root.
    AlwaysOn,
    /// Record no root.
    AlwaysOff,
    /// Record this share of roots.
    TraceIdRatio(f64),
}

impl Default for Sampler {
    fn default() -> Sampler {
        Sampler::ParentBased(Root::AlwaysOn)
    }
}

impl Sampler {
    /// The sampler named as `OTEL_TRACES_SAMPLER` names it, with `OTEL_TRACES_SAMPLER_ARG`;
    /// `Err` says what would be right.
    pub fn parse(name: &str, argument: Option<f64>) -> Result<Sampler, String> {
        let ratio = || -> Result<f64, String> {
            match argument {
                None => Ok(1.0),
                Some(ratio) if (0.0..=1.0).contains(&ratio) => Ok(ratio),
                Some(_) => Err("a sampler argument (ratio) from 0 to 1".to_owned()),
            }
        };
        Ok(match name.trim().to_ascii_lowercase().as_str() {
            "always_on" => Sampler::AlwaysOn,
            "always_off" => Sampler::AlwaysOff,
            "traceidratio" => Sampler::TraceIdRatio(ratio()?),
            "parentbased_always_on" => Sampler::ParentBased(Root::AlwaysOn),
            "parentbased_always_off" => Sampler::ParentBased(Root::AlwaysOff),
            "parentbased_traceidratio" => Sampler::ParentBased(Root::TraceIdRatio(ratio()?)),
            _ => {
                return Err(
                    "always_on, always_off, traceidratio, parentbased_always_on, \
                            parentbased_always_off or parentbased_traceidratio"
                        .to_owned(),
                );
            }
        })
    }

    /// Whether a span of `trace_id` is recorded; `parent_sampled` is the caller's flag when the
    /// span has a parent.
    pub fn should_sample(&self, trace_id: TraceId, parent_sampled: Option<bool>) -> bool {
        match (self, parent_sampled) {
            (Sampler::AlwaysOn, _) => true,
            (Sampler::AlwaysOff, _) => false,
            (Sampler::TraceIdRatio(ratio), _) => ratio_decides(*ratio, trace_id),
            (Sampler::ParentBased(_), Some(sampled)) => sampled,
            (Sampler::ParentBased(Root::AlwaysOn), None) => true,
            (Sampler::ParentBased(Root::AlwaysOff), None) => false,
            (Sampler::ParentBased(Root::TraceIdRatio(ratio)), None) => {
                ratio_decides(*ratio, trace_id)
            }
        }
    }
}

/// The SDKs' rule: the lower 8 bytes of the trace id, as a number below 2^63, under
/// `ratio × 2^63`.
fn ratio_decides(ratio: f64, trace_id: TraceId) -> bool {
    if ratio >= 1.0 {
        return true;
    }
    if ratio <= 0.0 {
        return false;
    }
    let bytes = trace_id.to_bytes();
    let mut lower = [0u8; 8];
    lower.copy_from_slice(&bytes[8..]);
    let value = u64::from_be_bytes(lower) >> 1;
    let bound = (ratio * (1u64 << 63) as f64) as u64;
    value < bound
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(lower: u64) -> TraceId {
        TraceId::from_u128((1u128 << 64) | u128::from(lower)).unwrap()
    }

    #[test]
    fn names_and_arguments_are_parsed_as_the_specification_spells_them() {
        assert_eq!(Sampler::parse("always_on", None), Ok(Sampler::AlwaysOn));
        assert_eq!(
            Sampler::parse("traceidratio", Some(0.25)),
            Ok(Sampler::TraceIdRatio(0.25))
        );
        assert_eq!(
            Sampler::parse("parentbased_traceidratio", None),
            Ok(Sampler::ParentBased(Root::TraceIdRatio(1.0)))
        );
        assert!(Sampler::parse("traceidratio", Some(1.5)).is_err());
        assert!(Sampler::parse("jaeger_remote", None).is_err());
    }

    #[test]
    fn a_parent_based_sampler_follows_the_callers_flag() {
        let sampler = Sampler::ParentBased(Root::AlwaysOff);
        assert!(sampler.should_sample(trace(1), Some(true)));
        assert!(!sampler.should_sample(trace(1), Some(false)));
        assert!(!sampler.should_sample(trace(1), None));
        assert!(Sampler::default().should_sample(trace(1), None));
    }

    #[test]
    fn the_ratio_keeps_low_trace_ids_and_drops_high_ones() {
        let sampler = Sampler::TraceIdRatio(0.5);
        assert!(sampler.should_sample(trace(0), None));
        assert!(sampler.should_sample(trace(u64::MAX / 2 - 10), None));
        assert!(!sampler.should_sample(trace(u64::MAX), None));
        assert!(!Sampler::TraceIdRatio(0.0).should_sample(trace(0), None));
    }
}
