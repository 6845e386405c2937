//! The continuation's settings, read at cold start with the function's
//! others: off unless `CONTINUATION=true`, and then only in lines mode,
//! for the buckets `CONTINUATION_BUCKETS` names, with Lambda's own
//! `AWS_LAMBDA_FUNCTION_NAME` to invoke.

use sqs_forwarder::setup::env::Variable;
use sqs_forwarder::{ConfigError, Env};

/// `CONTINUATION`.
pub const CONTINUATION: Variable = Variable::flag("CONTINUATION", "false");
/// `CONTINUATION_BUCKETS`.
pub const CONTINUATION_BUCKETS: Variable = Variable::text(
    "CONTINUATION_BUCKETS",
    "",
    "a comma-separated list of bucket names (required with CONTINUATION=true)",
);
/// `CONTINUATION_MARGIN_MS`.
pub const CONTINUATION_MARGIN_MS: Variable =
    Variable::number("CONTINUATION_MARGIN_MS", "60000", 1000, 840_000, " ms");
/// `CONTINUATION_AFTER_LINES`.
pub const CONTINUATION_AFTER_LINES: Variable = Variable::number(
    "CONTINUATION_AFTER_LINES",
    "0",
    0,
    1_000_000_000_000,
    " lines (0: no limit)",
);

/// The variables [`ContinuationSettings::from_env`] reads, in the README
/// table's order.
pub const VARIABLES: &[Variable] = &[
    CONTINUATION,
    CONTINUATION_BUCKETS,
    CONTINUATION_MARGIN_MS,
    CONTINUATION_AFTER_LINES,
];

/// The name Lambda gives the function in its environment.
const FUNCTION_NAME: &str = "AWS_LAMBDA_FUNCTION_NAME";

/// How (and whether) lines mode hands an object's rest on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContinuationSettings {
    /// `CONTINUATION`.
    pub enabled: bool,
    /// `CONTINUATION_BUCKETS`: the buckets a chain may read.
    pub buckets: Vec<String>,
    /// `CONTINUATION_MARGIN_MS`: how long before the deadline a step hands over.
    pub margin_ms: u64,
    /// `CONTINUATION_AFTER_LINES`: lines per step; `None`: no limit.
    pub after_lines: Option<u64>,
    /// The function to invoke (`AWS_LAMBDA_FUNCTION_NAME`), when enabled.
    pub function_name: Option<String>,
}

impl ContinuationSettings {
    /// Read and check the variables; `lines_mode` says whether `MODE=lines`.
    pub fn from_env(env: &Env, lines_mode: bool) -> Result<Self, ConfigError> {
        let enabled = env.flag(&CONTINUATION)?;
        let buckets = env.list(&CONTINUATION_BUCKETS);
        let margin_ms = env.required_number(&CONTINUATION_MARGIN_MS)?;
        let after_lines = env
            .required_number(&CONTINUATION_AFTER_LINES)
            .map(|n| (n > 0).then_some(n))?;
        if let Some(bad) = buckets.iter().find(|b| !valid_bucket(b)) {
            return Err(ConfigError::new(
                CONTINUATION_BUCKETS.name,
                bad,
                CONTINUATION_BUCKETS.allowed.describe(),
            ));
        }
        let mut function_name = None;
        if enabled {
            if !lines_mode {
                return Err(ConfigError::new(
                    CONTINUATION.name,
                    "true",
                    "false unless MODE=lines (only lines mode reads objects)",
                ));
            }
            if buckets.is_empty() {
                return Err(ConfigError::new(
                    CONTINUATION_BUCKETS.name,
                    "",
                    "the buckets a continuation event may name: required with CONTINUATION=true",
                ));
            }
            function_name = Some(env.raw(FUNCTION_NAME).ok_or_else(|| {
                ConfigError::new(
                    FUNCTION_NAME,
                    "",
                    "the function's name (Lambda sets it): CONTINUATION=true invokes the function itself",
                )
            })?);
        }
        Ok(ContinuationSettings {
            enabled,
            buckets,
            margin_ms,
            after_lines,
            function_name,
        })
    }

    /// Whether a chain may read objects of `bucket`.
    pub fn allows(&self, bucket: &str) -> bool {
        self.enabled && self.buckets.iter().any(|b| b == bucket)
    }
}

/// A plausible S3 bucket name: 3 to 63 of lowercase letters, digits, dots
/// and hyphens.
fn valid_bucket(b: &str) -> bool {
    (3..=63).contains(&b.len())
        && b.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)], lines: bool) -> Result<ContinuationSettings, ConfigError> {
        ContinuationSettings::from_env(&Env::from_pairs(pairs), lines)
    }

    #[test]
    fn off_by_default() {
        let s = read(&[], true).expect("defaults");
        assert_eq!(
            s,
            ContinuationSettings {
                enabled: false,
                buckets: vec![],
                margin_ms: 60_000,
                after_lines: None,
                function_name: None,
            }
        );
        assert!(!s.allows("any"));
    }

    #[test]
    fn on_needs_lines_mode_buckets_and_the_function_name() {
        let on = [
            ("CONTINUATION", "true"),
            ("CONTINUATION_BUCKETS", "logs-in, other.bucket"),
            ("CONTINUATION_MARGIN_MS", "5000"),
            ("CONTINUATION_AFTER_LINES", "200000"),
            ("AWS_LAMBDA_FUNCTION_NAME", "fwd"),
        ];
        let s = read(&on, true).expect("valid");
        assert!(s.allows("logs-in") && s.allows("other.bucket") && !s.allows("logs"));
        assert_eq!((s.margin_ms, s.after_lines), (5000, Some(200_000)));
        assert_eq!(s.function_name.as_deref(), Some("fwd"));

        let e = read(&on, false).expect_err("notification mode");
        assert_eq!(e.variable, "CONTINUATION");
        let e = read(&on[..1], true).expect_err("no buckets");
        assert_eq!(e.variable, "CONTINUATION_BUCKETS");
        assert!(e.allowed.contains("required with CONTINUATION=true"), "{e}");
        let e = read(&on[..4], true).expect_err("no function name");
        assert_eq!(e.variable, "AWS_LAMBDA_FUNCTION_NAME");
        let e = read(&[("CONTINUATION_BUCKETS", "Bad_Bucket")], true).expect_err("bad name");
        assert_eq!(
            (e.variable.as_str(), e.value.as_str()),
            ("CONTINUATION_BUCKETS", "Bad_Bucket")
        );
        let e = read(&[("CONTINUATION_MARGIN_MS", "10")], true).expect_err("too small");
        assert_eq!(e.variable, "CONTINUATION_MARGIN_MS");
    }
}
