//! The errors of setting a forwarder up: a configuration value that cannot be
//! used ([`ConfigError`]), and a cold start that failed ([`SetupError`]).
//!
//! Both live here, apart from the steps that raise them, so that reading the
//! configuration ([`crate::setup::config`]), assuming a role ([`crate::setup::credentials`])
//! and finding the queue ([`crate::setup::client`]) need nothing of one another.

/// A configuration value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid configuration: {variable}={value:?}: {allowed}")]
pub struct ConfigError {
    /// The variable.
    pub variable: String,
    /// The value it had ("" when unset).
    pub value: String,
    /// What is allowed.
    pub allowed: String,
}

impl ConfigError {
    /// An error for `variable`, which had `value`; `allowed` says what would do.
    pub fn new(variable: &str, value: &str, allowed: impl Into<String>) -> Self {
        ConfigError {
            variable: variable.into(),
            value: value.into(),
            allowed: allowed.into(),
        }
    }
}

/// A failure to set the forwarder up at cold start.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A configuration value is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The role in `ASSUME_ROLE_ARN` could not be assumed.
    #[error(
        "cannot assume role {role} (ASSUME_ROLE_ARN): {message}; the function's own role needs sts:AssumeRole on it, and the role's trust policy must allow the function's role (with the external id, when one is set)"
    )]
    AssumeRole {
        /// The role's ARN.
        role: String,
        /// What STS (or the way to it) said.
        message: String,
    },
    /// The queue could not be found or read.
    #[error("queue {queue}: {code}: {message}")]
    Queue {
        /// The queue URL or name, as configured.
        queue: String,
        /// The SQS error code.
        code: String,
        /// What went wrong.
        message: String,
    },
}
