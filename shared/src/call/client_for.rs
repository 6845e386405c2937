//! What an SQS client is made from ([`SqsClientFor`]), and the settings
//! every SQS client of the forwarder gets ([`forwarder_settings`]). Here, in
//! the call's folder, so that the call (`call.rs`, `direct.rs`) and the
//! set-up that says which client (`setup/client.rs`) both take it from
//! below them.

use aws_sdk_sqs::config::Region;
use aws_sdk_sqs::config::StalledStreamProtectionConfig;
use aws_sdk_sqs::config::retry::RetryConfig;

/// The settings every SQS client of the forwarder gets on top of the SDK
/// configuration: the forwarder's own retries and call timeouts are in
/// charge, so the SDK's retries are off, and so is its stalled-stream
/// protection (a throughput monitor around every request and response body,
/// with a timer per call: `CALL_TIMEOUT_MS` already bounds every call).
pub(crate) fn forwarder_settings(
    builder: aws_sdk_sqs::config::Builder,
) -> aws_sdk_sqs::config::Builder {
    builder
        .retry_config(RetryConfig::disabled())
        .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
}

/// What an SQS client is made from: AWS settings and the region it works
/// in ([`sqs_client_for`]), or an aws-sdk-sqs client already built (one of
/// the caller's making, [`crate::setup::startup::connect_with`]).
/// [`crate::call::transport()`] builds the client `SQS_CLIENT` chooses from
/// it: the direct client from the settings, aws-sdk-sqs's with
/// [`SqsClientFor::sdk_client`], which builds it only then.
#[derive(Debug, Clone)]
pub struct SqsClientFor(Source);

#[derive(Debug, Clone)]
enum Source {
    Settings {
        sdk: Box<aws_config::SdkConfig>,
        region: String,
    },
    Built(aws_sdk_sqs::Client),
}

impl From<aws_sdk_sqs::Client> for SqsClientFor {
    fn from(client: aws_sdk_sqs::Client) -> Self {
        SqsClientFor(Source::Built(client))
    }
}

impl SqsClientFor {
    /// The region the client works in (a built client's own, if it has
    /// one).
    pub fn region(&self) -> Option<&str> {
        match &self.0 {
            Source::Settings { region, .. } => Some(region),
            Source::Built(client) => client.config().region().map(|r| r.as_ref()),
        }
    }

    /// The timeouts the client's calls get: the settings', or a built
    /// client's own (the same: an SQS client built from settings takes
    /// theirs).
    pub fn timeouts(&self) -> Option<&aws_config::timeout::TimeoutConfig> {
        match &self.0 {
            Source::Settings { sdk, .. } => sdk.timeout_config(),
            Source::Built(client) => client.config().timeout_config(),
        }
    }

    /// The aws-sdk-sqs client: built now from the settings, in the region,
    /// with the SDK's retries and stalled-stream protection off; or the one
    /// given.
    pub fn sdk_client(self) -> aws_sdk_sqs::Client {
        match self.0 {
            Source::Settings { sdk, region } => {
                let conf = forwarder_settings(aws_sdk_sqs::config::Builder::from(&*sdk))
                    .region(Region::new(region))
                    .build();
                aws_sdk_sqs::Client::from_conf(conf)
            }
            Source::Built(client) => client,
        }
    }
}

impl SqsClientFor {
    /// Made from the AWS settings `sdk`, in `region`; nothing is built yet.
    pub fn from_settings(sdk: &aws_config::SdkConfig, region: String) -> Self {
        SqsClientFor(Source::Settings {
            sdk: Box::new(sdk.clone()),
            region,
        })
    }
}
