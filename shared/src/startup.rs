//! Cold start for a Lambda function: configuration, logs and metrics, the
//! queue, in one call, and the deadline of each invocation.

use std::time::Duration;

use crate::config::Config;
use crate::observability::{self, Observability};
use crate::queue::SetupError;
use crate::send::Forwarder;
use crate::transport::SqsTransport;

/// What a function keeps between invocations.
#[derive(Debug)]
pub struct Started {
    /// The shared configuration.
    pub config: Config,
    /// The forwarder to the target queue.
    pub forwarder: Forwarder<SqsTransport>,
    /// Logs and metrics.
    pub observability: Observability,
    /// The AWS settings the SQS client was built from (the function's
    /// credentials, or the role's from `ASSUME_ROLE_ARN`), for any other
    /// client the function needs to act as the same principal.
    pub sdk: aws_config::SdkConfig,
}

impl Started {
    /// The instant by which sending must stop in an invocation whose Lambda
    /// deadline is `deadline_ms` (milliseconds since the Unix epoch, as in
    /// `lambda_runtime::Context::deadline`), keeping `DEADLINE_MARGIN_MS`.
    pub fn deadline(&self, deadline_ms: u64) -> tokio::time::Instant {
        crate::deadline_from_epoch_millis(deadline_ms, self.config.deadline_margin)
    }

    /// The margin kept before the Lambda deadline.
    pub fn margin(&self) -> Duration {
        self.config.deadline_margin
    }
}

/// Read the shared configuration, install logs and metrics (the metrics
/// carry `service` as their `Service` dimension), and connect to the queue.
/// `source_sets_group_ids`: whether this function's messages carry their own
/// FIFO group ids.
pub async fn start(service: &str, source_sets_group_ids: bool) -> Result<Started, SetupError> {
    let config = Config::from_env()?;
    start_with(config, service, source_sets_group_ids).await
}

/// [`start`] with a configuration the caller has read.
pub async fn start_with(
    config: Config,
    service: &str,
    source_sets_group_ids: bool,
) -> Result<Started, SetupError> {
    #[cfg(feature = "mimalloc")]
    crate::allocator::configure();
    let observability = observability::init(config.log_format, &config.metrics_namespace, service);
    config.check_group_ids(source_sets_group_ids)?;
    let sdk = crate::credentials::load_sdk_config(&config).await?;
    let forwarder = crate::queue::connect_loaded(&sdk, &config, source_sets_group_ids).await?;
    Ok(Started {
        config,
        forwarder,
        observability,
        sdk,
    })
}
