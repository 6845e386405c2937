//! The headers the direct client sends besides the signed ones, as
//! aws-sdk-sqs sends them: `X-Amzn-Trace-Id` and `User-Agent`. Neither is
//! signed (aws-sigv4 leaves both out of the signature).
//!
//! * **`X-Amzn-Trace-Id`**: the SDK's recursion-detection interceptor
//!   (aws-runtime) sends `_X_AMZN_TRACE_ID`, which the Lambda runtime sets
//!   for each invocation, only when `AWS_LAMBDA_FUNCTION_NAME` is set too
//!   (in Lambda), with control characters and non-ASCII bytes
//!   percent-encoded. SQS keeps it as the message's `AWSTraceHeader`, which
//!   is how X-Ray follows a trace past the queue. Read on every call (one
//!   environment lookup each), since it changes per invocation.
//! * **`User-Agent`**: `sqs-forwarder/<version>`, with ` app/<id>` when the
//!   SDK configuration has an app id (`AWS_SDK_UA_APP_ID` or the profile's
//!   `sdk_ua_app_id`, read and validated by aws-config as for the SDK's own
//!   user agent). Made once.
//!
//! The environment is read through [`Environment`], so tests give their own.

use std::sync::Arc;

use http::HeaderValue;
use percent_encoding::{CONTROLS, percent_encode};

/// `X-Amzn-Trace-Id`.
pub const TRACE_ID_HEADER: &str = "x-amzn-trace-id";
const LAMBDA_FUNCTION_NAME: &str = "AWS_LAMBDA_FUNCTION_NAME";
const TRACE_ID: &str = "_X_AMZN_TRACE_ID";

/// Where the client reads `_X_AMZN_TRACE_ID` and `AWS_LAMBDA_FUNCTION_NAME`:
/// the process environment, or a lookup of the caller's (tests).
#[derive(Clone, Default)]
pub struct Environment(Option<Lookup>);

/// A caller's lookup of environment variables.
type Lookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Environment(lookup)"
        } else {
            "Environment(process)"
        })
    }
}

impl Environment {
    /// The process environment.
    pub fn process() -> Self {
        Environment(None)
    }

    /// Variables read through `lookup` instead.
    pub fn lookup(lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Environment(Some(Arc::new(lookup)))
    }

    fn get(&self, name: &str) -> Option<String> {
        match &self.0 {
            None => std::env::var(name).ok(),
            Some(lookup) => lookup(name),
        }
    }

    /// The `X-Amzn-Trace-Id` value to send now, as the SDK makes it: none
    /// outside Lambda (no `AWS_LAMBDA_FUNCTION_NAME`) or without
    /// `_X_AMZN_TRACE_ID`.
    pub fn trace_id(&self) -> Option<HeaderValue> {
        self.get(LAMBDA_FUNCTION_NAME)?;
        encode_trace_id(self.get(TRACE_ID)?.as_bytes())
    }
}

/// `value` with control characters and every byte outside ASCII
/// percent-encoded (the SDK's `encode_header`): always a valid header value.
fn encode_trace_id(value: &[u8]) -> Option<HeaderValue> {
    let encoded = percent_encode(value, CONTROLS).to_string();
    HeaderValue::from_str(&encoded).ok()
}

/// The `User-Agent` of every call: `sqs-forwarder/<version>`, and
/// ` app/<id>` with the SDK configuration's app id.
pub fn user_agent(app_name: Option<&aws_types::app_name::AppName>) -> HeaderValue {
    let base = concat!("sqs-forwarder/", env!("CARGO_PKG_VERSION"));
    let value = match app_name {
        // An AppName holds only token characters, so this is a valid value.
        Some(app) => HeaderValue::from_str(&format!("{base} app/{app}")).ok(),
        None => None,
    };
    value.unwrap_or(HeaderValue::from_static(base))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use aws_types::app_name::AppName;

    use super::*;

    fn env(vars: &[(&str, &str)]) -> Environment {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Environment::lookup(move |k| map.get(k).cloned())
    }

    const TRACE: &str =
        "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";

    #[test]
    fn the_trace_id_only_in_lambda() {
        let both = env(&[(LAMBDA_FUNCTION_NAME, "fn"), (TRACE_ID, TRACE)]);
        assert_eq!(both.trace_id(), Some(HeaderValue::from_static(TRACE)));
        assert_eq!(env(&[(TRACE_ID, TRACE)]).trace_id(), None, "not in Lambda");
        assert_eq!(env(&[(LAMBDA_FUNCTION_NAME, "fn")]).trace_id(), None);
        assert_eq!(env(&[]).trace_id(), None);
    }

    #[test]
    fn the_trace_id_is_encoded_as_the_sdk_encodes_it() {
        // The SDK's own test (aws-runtime, recursion_detection::every_char)
        // for the printable ASCII range and around it.
        let bytes: Vec<u8> = (0x1e..=0x81).collect();
        assert_eq!(
            encode_trace_id(&bytes).expect("a header value"),
            HeaderValue::from_static(
                r##"%1E%1F !"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_`abcdefghijklmnopqrstuvwxyz{|}~%7F%80%81"##
            )
        );
        let lambda = env(&[(LAMBDA_FUNCTION_NAME, "fn"), (TRACE_ID, "Root=1-é\n")]);
        assert_eq!(
            lambda.trace_id(),
            Some(HeaderValue::from_static("Root=1-%C3%A9%0A"))
        );
    }

    #[test]
    fn user_agent_with_and_without_an_app_id() {
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(
            user_agent(None),
            format!("sqs-forwarder/{version}").as_str()
        );
        let app = AppName::new("orders-app_1.2").expect("valid");
        assert_eq!(
            user_agent(Some(&app)),
            format!("sqs-forwarder/{version} app/orders-app_1.2").as_str()
        );
    }
}
