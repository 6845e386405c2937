//! The SQS client the forwarder calls with: [`sqs_client_for`] says what it
//! is made from ([`SqsClientFor`]: the AWS settings and the queue's region),
//! and [`crate::call::transport()`] builds the client `SQS_CLIENT` chooses
//! from that and makes the start-up calls and the sends with it. The
//! aws-sdk-sqs client (SDK retries off: the forwarder retries per entry
//! itself) is built only when it makes the calls (`SQS_CLIENT=sdk`): the
//! first SDK client of a process loads and parses every system root
//! certificate, which the direct client does not need
//! (bench/results/profile-init.md).
//!
//! The client works in the queue's region ([`sqs_region`]): `SQS_REGION`,
//! else the region the queue URL names
//! ([`crate::setup::aws_names::region_of_queue_url`]), else the
//! function's. Its credentials are the function's, or an assumed role's
//! ([`crate::setup::credentials`]).

pub use crate::call::client_for::SqsClientFor;
use crate::call::client_for::forwarder_settings;
use crate::call::queue::QueueTarget;
use crate::setup::aws_names::region_of_queue_url;
use crate::setup::config::Config;
use crate::setup::error::{ConfigError, SetupError};

/// An SQS client for this SDK configuration, with the SDK's own retries and
/// stalled-stream protection off (the forwarder retries and times calls out
/// itself).
pub fn sqs_client(sdk: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
    let conf = forwarder_settings(aws_sdk_sqs::config::Builder::from(sdk)).build();
    aws_sdk_sqs::Client::from_conf(conf)
}

/// The SQS client for `config`: the AWS settings `sdk` in the region
/// [`sqs_region`] picks, so that a queue in another region gets requests
/// sent to, and signed for, that region. Nothing is built yet
/// ([`SqsClientFor`]).
pub fn sqs_client_for(
    sdk: &aws_config::SdkConfig,
    config: &Config,
) -> Result<SqsClientFor, SetupError> {
    let region = sqs_region(sdk, config)?;
    Ok(SqsClientFor::from_settings(sdk, region))
}

/// The region of the SQS client: `SQS_REGION` when set, else the region the
/// `QUEUE_URL` names, else the SDK's (`AWS_REGION`; a `QUEUE_NAME` is looked
/// up there). A `QUEUE_URL` that names no region is accepted only with
/// `SQS_REGION` or when the SQS endpoint is overridden
/// (`AWS_ENDPOINT_URL_SQS`, `AWS_ENDPOINT_URL`: local endpoints).
pub fn sqs_region(sdk: &aws_config::SdkConfig, config: &Config) -> Result<String, SetupError> {
    if let Some(region) = &config.sqs_region {
        if let QueueTarget::Url(url) = &config.queue
            && let Some(named) = region_of_queue_url(url)
            && &named != region
        {
            tracing::info!(queue = %url, url_region = %named, sqs_region = %region, "SQS_REGION overrides the queue URL's region");
        }
        return Ok(region.clone());
    }
    if let QueueTarget::Url(url) = &config.queue {
        if let Some(region) = region_of_queue_url(url) {
            return Ok(region);
        }
        if !has_sqs_endpoint_override(sdk) {
            return Err(ConfigError::new(
                "QUEUE_URL",
                url,
                "a queue URL that names its region (https://sqs.<region>.amazonaws.com/<account>/<name>); a URL without one (a local endpoint) needs AWS_ENDPOINT_URL_SQS or AWS_ENDPOINT_URL, or SQS_REGION",
            )
            .into());
        }
    }
    sdk.region().map(|r| r.as_ref().to_owned()).ok_or_else(|| {
        ConfigError::new(
            "SQS_REGION",
            "",
            "a region: set AWS_REGION or SQS_REGION, or give a QUEUE_URL that names its region",
        )
        .into()
    })
}

/// Whether the SQS endpoint is overridden in these settings, the way the SQS
/// client reads it: `AWS_ENDPOINT_URL_SQS` (or the profile's SQS
/// `endpoint_url`), or the global `AWS_ENDPOINT_URL`.
fn has_sqs_endpoint_override(sdk: &aws_config::SdkConfig) -> bool {
    let service = aws_types::service_config::ServiceConfigKey::builder()
        .service_id("SQS")
        .env("AWS_ENDPOINT_URL")
        .profile("endpoint_url")
        .build()
        .ok()
        .and_then(|key| sdk.service_config().and_then(|c| c.load_config(key)));
    service.is_some() || sdk.endpoint_url().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_sqs::config::Region;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Config {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).cloned()).expect("valid configuration")
    }

    fn sdk(region: Option<&str>, endpoint: Option<&str>) -> aws_config::SdkConfig {
        let mut b = aws_config::SdkConfig::builder();
        b.set_region(region.map(|r| Region::new(r.to_owned())));
        b.set_endpoint_url(endpoint.map(str::to_owned));
        b.build()
    }

    #[test]
    fn client_region_precedence() {
        let remote = "https://sqs.ap-south-1.amazonaws.com/123456789012/q";
        let local = "http://127.0.0.1:4566/123456789012/q";
        let home = sdk(Some("us-east-1"), None);
        let region = |sdk: &aws_config::SdkConfig, vars: &[(&str, &str)]| {
            sqs_region(sdk, &config(vars)).map_err(|e| e.to_string())
        };
        // The queue's region beats the function's; SQS_REGION beats both.
        assert_eq!(
            region(&home, &[("QUEUE_URL", remote)]),
            Ok("ap-south-1".into())
        );
        assert_eq!(
            region(&home, &[("QUEUE_URL", remote), ("SQS_REGION", "eu-west-2")]),
            Ok("eu-west-2".into())
        );
        // A name is looked up in SQS_REGION, else the function's region.
        assert_eq!(
            region(&home, &[("QUEUE_NAME", "q")]),
            Ok("us-east-1".into())
        );
        assert_eq!(
            region(&home, &[("QUEUE_NAME", "q"), ("SQS_REGION", "sa-east-1")]),
            Ok("sa-east-1".into())
        );
        // A URL naming no region: fine with an endpoint override or SQS_REGION.
        let overridden = sdk(Some("us-east-1"), Some("http://127.0.0.1:4566"));
        assert_eq!(
            region(&overridden, &[("QUEUE_URL", local)]),
            Ok("us-east-1".into())
        );
        assert_eq!(
            region(&home, &[("QUEUE_URL", local), ("SQS_REGION", "eu-north-1")]),
            Ok("eu-north-1".into())
        );
        let e = region(&home, &[("QUEUE_URL", local)]).expect_err("no region");
        assert!(
            e.starts_with(&format!(
                "invalid configuration: QUEUE_URL={local:?}: a queue URL that names its region"
            )),
            "{e}"
        );
        // No region anywhere.
        let nowhere = sdk(None, Some("http://127.0.0.1:4566"));
        let e = region(&nowhere, &[("QUEUE_URL", local)]).expect_err("no region");
        assert!(
            e.starts_with("invalid configuration: SQS_REGION=\"\": a region"),
            "{e}"
        );
        assert_eq!(
            region(&nowhere, &[("QUEUE_URL", remote)]),
            Ok("ap-south-1".into())
        );
    }

    #[test]
    fn client_is_built_for_the_queue_region() {
        let c = sqs_client_for(
            &sdk(Some("us-east-1"), None),
            &config(&[(
                "QUEUE_URL",
                "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q",
            )]),
        )
        .expect("client");
        assert_eq!(c.region(), Some("cn-north-1"));
        let built = c.sdk_client();
        assert_eq!(
            built.config().region().map(|r| r.as_ref()),
            Some("cn-north-1")
        );
        assert_eq!(SqsClientFor::from(built).region(), Some("cn-north-1"));
    }

    #[test]
    fn the_settings_timeouts_are_the_built_clients() {
        use aws_config::timeout::TimeoutConfig;
        use std::time::Duration;
        let timed = sdk(Some("us-east-1"), None)
            .into_builder()
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(Duration::from_millis(700))
                    .operation_attempt_timeout(Duration::from_secs(4))
                    .build(),
            )
            .build();
        let settings = sqs_client_for(&timed, &config(&[("QUEUE_NAME", "q")])).expect("client");
        let from_settings = settings.timeouts().cloned();
        let built = SqsClientFor::from(settings.sdk_client());
        assert_eq!(from_settings, built.timeouts().cloned());
        assert_eq!(
            from_settings.and_then(|t| t.connect_timeout()),
            Some(Duration::from_millis(700))
        );
    }
}
