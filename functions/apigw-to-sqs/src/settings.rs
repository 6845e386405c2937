//! The function's own settings, read from environment variables once at cold
//! start with [`sqs_forwarder::Env`]; the shared ones (queue, batching,
//! retries, encoding) are the shared crate's [`sqs_forwarder::Config`].
//!
//! Every variable is listed in [`VARIABLES`] and in the README's table; the
//! workspace's `tests/docs.rs` checks that the two agree.

use std::time::Duration;

use lambda_http::http::HeaderName;
use sqs_forwarder::message::encode::check_attribute;
use sqs_forwarder::setup::env::Variable;
use sqs_forwarder::{Attribute, ConfigError, Env};

const PATH: &str = "an absolute path such as /messages (ASCII, no query or fragment)";
/// `MESSAGES_PATH`.
pub const MESSAGES_PATH: Variable = Variable::text("MESSAGES_PATH", "/messages", PATH);
/// `HEALTH_PATH`.
pub const HEALTH_PATH: Variable = Variable::text("HEALTH_PATH", "/health", PATH);
/// `MAX_BODY_BYTES`.
pub const MAX_BODY_BYTES: Variable = Variable::number(
    "MAX_BODY_BYTES",
    "6291456",
    1,
    LAMBDA_PAYLOAD_BYTES,
    " (bytes; Lambda's synchronous payload limit is 6 MB)",
);
/// `MAX_MESSAGES`.
pub const MAX_MESSAGES: Variable = Variable::number("MAX_MESSAGES", "1000", 1, 100_000, "");
/// `CONTENT_TYPES`.
pub const CONTENT_TYPES: Variable = Variable::text(
    "CONTENT_TYPES",
    "application/json,application/x-ndjson,text/plain,application/octet-stream",
    "a comma-separated list of media types: type/subtype, type/* or */*",
);
/// `ATTRIBUTE_HEADERS`.
pub const ATTRIBUTE_HEADERS: Variable = Variable::text(
    "ATTRIBUTE_HEADERS",
    "",
    "header names (optionally header:attribute)",
);
/// `RETRY_AFTER_SECONDS`.
pub const RETRY_AFTER_SECONDS: Variable =
    Variable::number("RETRY_AFTER_SECONDS", "1", 1, 3600, " (seconds)");

/// Every variable [`Settings::from_env`] reads, in the README table's order.
pub const VARIABLES: &[Variable] = &[
    MESSAGES_PATH,
    HEALTH_PATH,
    MAX_BODY_BYTES,
    MAX_MESSAGES,
    CONTENT_TYPES,
    ATTRIBUTE_HEADERS,
    RETRY_AFTER_SECONDS,
];

/// Largest `MAX_BODY_BYTES`: Lambda's synchronous invocation payload (6 MB).
pub const LAMBDA_PAYLOAD_BYTES: u64 = 6 * 1024 * 1024;
/// Most entries in `ATTRIBUTE_HEADERS`: SQS takes ten attributes, and one
/// slot stays free for the shared crate's body-encoding marker.
pub const MAX_ATTRIBUTE_HEADERS: usize = 9;

/// Headers that carry credentials or session state. They can never become
/// message attributes: a queue's consumers must not receive them.
pub const FORBIDDEN_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "x-amz-security-token",
    "x-csrf-token",
    "x-xsrf-token",
];
/// Header prefixes refused for the same reason (AWS signature and token
/// headers, ALB's OIDC token headers).
pub const FORBIDDEN_HEADER_PREFIXES: &[&str] = &["x-amz-", "x-amzn-oidc-"];

/// A content type the endpoint accepts: `type/subtype`, `type/*` or `*/*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypePattern {
    /// Lower-cased type, or `*`.
    pub type_: String,
    /// Lower-cased subtype, or `*`.
    pub subtype: String,
}

impl TypePattern {
    /// Whether `essence` (`type/subtype`, lower case) matches.
    pub fn matches(&self, type_: &str, subtype: &str) -> bool {
        (self.type_ == "*" || self.type_ == type_)
            && (self.subtype == "*" || self.subtype == subtype)
    }
}

impl std::fmt::Display for TypePattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.type_, self.subtype)
    }
}

/// A request header copied into a `String` message attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderAttribute {
    /// The header.
    pub header: HeaderName,
    /// The attribute's name.
    pub attribute: String,
}

/// The function's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Path that takes messages by `POST` (`MESSAGES_PATH`).
    pub messages_path: String,
    /// Path that answers `GET` without touching SQS (`HEALTH_PATH`).
    pub health_path: String,
    /// Largest request body, after base64 decoding (`MAX_BODY_BYTES`).
    pub max_body_bytes: usize,
    /// Most messages in one request (`MAX_MESSAGES`).
    pub max_messages: usize,
    /// Accepted content types (`CONTENT_TYPES`).
    pub content_types: Vec<TypePattern>,
    /// Headers that become message attributes (`ATTRIBUTE_HEADERS`).
    pub attribute_headers: Vec<HeaderAttribute>,
    /// `Retry-After` on 429 and 503 answers (`RETRY_AFTER_SECONDS`).
    pub retry_after: Duration,
}

fn path(env: &Env, variable: &Variable) -> Result<String, ConfigError> {
    let value = env.text(variable);
    let ok = value.starts_with('/')
        && !value.contains(['?', '#', ' '])
        && value.chars().all(|c| c.is_ascii_graphic());
    if !ok {
        return Err(variable.error(&value));
    }
    Ok(normalize_path(&value).to_owned())
}

/// A path without its trailing slashes (`/` stays `/`).
pub fn normalize_path(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() { "/" } else { trimmed }
}

fn content_types(env: &Env) -> Result<Vec<TypePattern>, ConfigError> {
    const NAME: &str = CONTENT_TYPES.name;
    let raw = env.text(&CONTENT_TYPES);
    let allowed = CONTENT_TYPES.allowed.describe();
    let mut out = Vec::new();
    for item in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let lower = item.to_ascii_lowercase();
        let Some((t, s)) = lower.split_once('/') else {
            return Err(ConfigError::new(NAME, &raw, allowed.as_str()));
        };
        let token = |x: &str| {
            x == "*"
                || (!x.is_empty()
                    && x.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b)))
        };
        if !token(t) || !token(s) || (t == "*" && s != "*") {
            return Err(ConfigError::new(NAME, &raw, allowed.as_str()));
        }
        out.push(TypePattern {
            type_: t.to_owned(),
            subtype: s.to_owned(),
        });
    }
    if out.is_empty() {
        return Err(ConfigError::new(NAME, &raw, allowed.as_str()));
    }
    Ok(out)
}

/// Whether a header may never become an attribute.
pub fn is_forbidden_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    FORBIDDEN_HEADERS.contains(&lower.as_str())
        || FORBIDDEN_HEADER_PREFIXES
            .iter()
            .any(|p| lower.starts_with(p))
}

fn attribute_headers(env: &Env) -> Result<Vec<HeaderAttribute>, ConfigError> {
    const NAME: &str = ATTRIBUTE_HEADERS.name;
    let raw = env.text(&ATTRIBUTE_HEADERS);
    let mut out: Vec<HeaderAttribute> = Vec::new();
    for item in env.list(&ATTRIBUTE_HEADERS) {
        let (header, attribute) = match item.split_once(':') {
            Some((h, a)) => (h.trim(), a.trim()),
            None => (item.as_str(), item.as_str()),
        };
        let header_name = HeaderName::from_bytes(header.as_bytes()).map_err(|_| {
            ConfigError::new(
                NAME,
                &raw,
                format!("header names (optionally header:attribute); {header:?} is not a valid HTTP header name"),
            )
        })?;
        if is_forbidden_header(header) {
            return Err(ConfigError::new(
                NAME,
                &raw,
                format!(
                    "headers without credentials; {header:?} may carry credentials or session state and can never become a message attribute (refused: {}, {}*)",
                    FORBIDDEN_HEADERS.join(", "),
                    FORBIDDEN_HEADER_PREFIXES.join("*, ")
                ),
            ));
        }
        // An attribute named after a header keeps the header's lower case.
        let attribute = if attribute == header {
            header_name.as_str().to_owned()
        } else {
            attribute.to_owned()
        };
        if check_attribute(&Attribute::string(attribute.clone(), "x")).is_err() {
            return Err(ConfigError::new(
                NAME,
                &raw,
                format!(
                    "valid SQS attribute names (1..256 of A-Z a-z 0-9 _ - ., no AWS./Amazon. prefix); {attribute:?} is not one: rename it with header:attribute"
                ),
            ));
        }
        if out
            .iter()
            .any(|h| h.header == header_name || h.attribute == attribute)
        {
            return Err(ConfigError::new(
                NAME,
                &raw,
                format!("each header and attribute once; {header:?} or {attribute:?} repeats"),
            ));
        }
        out.push(HeaderAttribute {
            header: header_name,
            attribute,
        });
    }
    if out.len() > MAX_ATTRIBUTE_HEADERS {
        return Err(ConfigError::new(
            NAME,
            &raw,
            format!(
                "at most {MAX_ATTRIBUTE_HEADERS} headers (SQS takes 10 attributes and one slot stays free for the body-encoding marker)"
            ),
        ));
    }
    Ok(out)
}

impl Settings {
    /// Read and check every variable; the first bad one is named in the error.
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        let messages_path = path(env, &MESSAGES_PATH)?;
        let health_path = path(env, &HEALTH_PATH)?;
        if messages_path == health_path {
            return Err(ConfigError::new(
                HEALTH_PATH.name,
                &health_path,
                "a path other than MESSAGES_PATH",
            ));
        }
        let max_body_bytes = env.required_number(&MAX_BODY_BYTES)? as usize;
        let max_messages = env.required_number(&MAX_MESSAGES)? as usize;
        let content_types = content_types(env)?;
        let attribute_headers = attribute_headers(env)?;
        let retry_after = Duration::from_secs(env.required_number(&RETRY_AFTER_SECONDS)?);
        Ok(Settings {
            messages_path,
            health_path,
            max_body_bytes,
            max_messages,
            content_types,
            attribute_headers,
            retry_after,
        })
    }

    /// Whether a media type is accepted.
    pub fn accepts(&self, type_: &str, subtype: &str) -> bool {
        self.content_types.iter().any(|p| p.matches(type_, subtype))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env<'static> {
        Env::from_pairs(pairs)
    }

    fn default_of(name: &str) -> &'static str {
        VARIABLES
            .iter()
            .find(|v| v.name == name)
            .map_or("", |v| v.default)
    }

    #[test]
    fn defaults_are_valid_and_match_the_table_of_variables() {
        let s = Settings::from_env(&env(&[])).expect("defaults");
        assert_eq!(s.messages_path, default_of("MESSAGES_PATH"));
        assert_eq!(s.health_path, default_of("HEALTH_PATH"));
        assert_eq!(s.max_body_bytes.to_string(), default_of("MAX_BODY_BYTES"));
        assert_eq!(s.max_messages.to_string(), default_of("MAX_MESSAGES"));
        assert_eq!(
            s.retry_after.as_secs().to_string(),
            default_of("RETRY_AFTER_SECONDS")
        );
        let types: Vec<String> = s.content_types.iter().map(|t| t.to_string()).collect();
        assert_eq!(types.join(","), default_of("CONTENT_TYPES"));
        assert!(s.attribute_headers.is_empty());
        assert!(s.accepts("application", "json"));
        assert!(!s.accepts("image", "png"));
    }

    #[test]
    fn reads_every_variable() {
        let s = Settings::from_env(&env(&[
            ("MESSAGES_PATH", "/v1/events/"),
            ("HEALTH_PATH", "/ping"),
            ("MAX_BODY_BYTES", "1024"),
            ("MAX_MESSAGES", "5"),
            ("CONTENT_TYPES", "Application/JSON, text/*"),
            ("ATTRIBUTE_HEADERS", "X-Tenant-Id, traceparent:trace"),
            ("RETRY_AFTER_SECONDS", "30"),
        ]))
        .expect("valid");
        assert_eq!(s.messages_path, "/v1/events");
        assert_eq!(s.health_path, "/ping");
        assert_eq!(s.max_body_bytes, 1024);
        assert_eq!(s.max_messages, 5);
        assert!(s.accepts("application", "json"));
        assert!(s.accepts("text", "csv"));
        assert!(!s.accepts("application", "octet-stream"));
        assert_eq!(
            s.attribute_headers,
            vec![
                HeaderAttribute {
                    header: HeaderName::from_static("x-tenant-id"),
                    attribute: "x-tenant-id".into()
                },
                HeaderAttribute {
                    header: HeaderName::from_static("traceparent"),
                    attribute: "trace".into()
                },
            ]
        );
        assert_eq!(s.retry_after, Duration::from_secs(30));
        let any = Settings::from_env(&env(&[("CONTENT_TYPES", "*/*")])).expect("valid");
        assert!(any.accepts("image", "png"));
    }

    #[test]
    fn credential_headers_are_refused_at_start() {
        for h in [
            "Authorization",
            "cookie",
            "Set-Cookie",
            "X-Amz-Security-Token",
            "x-amz-date",
            "Proxy-Authorization",
            "X-Api-Key",
            "x-amzn-oidc-accesstoken",
            "x-tenant, authorization:auth",
        ] {
            let e = Settings::from_env(&env(&[("ATTRIBUTE_HEADERS", h)]))
                .expect_err("credential header refused");
            assert_eq!(e.variable, "ATTRIBUTE_HEADERS");
            assert_eq!(e.value, h);
            assert!(e.allowed.contains("credentials"), "{e}");
        }
        // A trace header from AWS is no credential.
        assert!(Settings::from_env(&env(&[("ATTRIBUTE_HEADERS", "x-amzn-trace-id")])).is_ok());
    }

    #[test]
    fn bad_values_are_named() {
        for (var, value, hint) in [
            ("MESSAGES_PATH", "messages", "absolute path"),
            ("MESSAGES_PATH", "/m?x=1", "no query"),
            ("HEALTH_PATH", "/messages/", "other than MESSAGES_PATH"),
            ("MAX_BODY_BYTES", "6291457", "1 to 6291456"),
            ("MAX_BODY_BYTES", "0", "1 to 6291456"),
            ("MAX_MESSAGES", "lots", "1 to 100000"),
            ("CONTENT_TYPES", "json", "media types"),
            ("CONTENT_TYPES", "*/json", "media types"),
            ("CONTENT_TYPES", ",", "media types"),
            ("ATTRIBUTE_HEADERS", "bad header", "not a valid HTTP header"),
            ("ATTRIBUTE_HEADERS", "x-a:AWS.thing", "attribute names"),
            ("ATTRIBUTE_HEADERS", "x-a, X-A", "once"),
            ("ATTRIBUTE_HEADERS", "a,b,c,d,e,f,g,h,i,j", "at most 9"),
            ("RETRY_AFTER_SECONDS", "0", "1 to 3600"),
        ] {
            let e = Settings::from_env(&env(&[(var, value)])).expect_err(value);
            assert_eq!(e.variable, var, "{value}");
            assert!(e.allowed.contains(hint), "{var}={value}: {e}");
        }
    }
}
