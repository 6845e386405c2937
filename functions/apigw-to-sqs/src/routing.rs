//! What the routing rules (`ROUTES`) see of a request's messages, and what
//! the function refuses of them at start.
//!
//! Each message of a request (the body, an array element or an NDJSON
//! line) is one record: its data is that message's body, its source keys
//! the request's `path` (as the function matched it: no stage, no trailing
//! slash), `method` and `header`s (looked up ignoring case; repeated
//! headers joined with `, `, as `ATTRIBUTE_HEADERS` joins them).
//!
//! Credential and session headers (the ones `ATTRIBUTE_HEADERS` refuses)
//! are never offered: a document that names one stops the start naming
//! the rule ([`refuse_credential_headers`]), so no rule can copy a token
//! into a message or hold one in the function's configuration.

use std::borrow::Cow;

use lambda_http::http::{HeaderMap, HeaderName};
use serde_json::Value;
use sqs_forwarder::route::{Plan, ROUTES, RecordView, Routes, Skip, SourceKey};
use sqs_forwarder::{Body, ConfigError, Env};

use crate::settings::{FORBIDDEN_HEADER_PREFIXES, FORBIDDEN_HEADERS, is_forbidden_header};

/// The source keys apigw-to-sqs offers the routing rules.
pub const SOURCE_KEYS: &[SourceKey] = &[SourceKey::Path, SourceKey::Method, SourceKey::Header];

/// The request, as each of its messages shows it to the rules.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The path as the function matched it.
    pub path: &'a str,
    /// The method.
    pub method: &'a str,
    /// The headers.
    pub headers: &'a HeaderMap,
}

/// One message of a request, as the rules read it.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// The request it came in.
    pub request: Request<'a>,
    /// The message's body.
    pub data: &'a [u8],
}

impl RecordView for View<'_> {
    fn data(&self) -> Option<&[u8]> {
        Some(self.data)
    }

    fn key(&self, key: SourceKey, name: Option<&str>) -> Option<Cow<'_, str>> {
        match key {
            SourceKey::Path => Some(Cow::Borrowed(self.request.path)),
            SourceKey::Method => Some(Cow::Borrowed(self.request.method)),
            SourceKey::Header => header(self.request.headers, name?),
            _ => None,
        }
    }
}

/// A header's value, its name matched ignoring case; repeated headers
/// joined with `, `; bytes that are not UTF-8 replaced. A credential header
/// is never read (the start refuses a document naming one).
fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<Cow<'h, str>> {
    if is_forbidden_header(name) {
        return None;
    }
    // `from_bytes` lower-cases the name, as the map keeps names.
    let name = HeaderName::from_bytes(name.as_bytes()).ok()?;
    let mut values = headers
        .get_all(&name)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()));
    let first = values.next()?;
    let rest: Vec<Cow<'_, str>> = values.collect();
    if rest.is_empty() {
        return Some(trim(first));
    }
    let all: Vec<Cow<'_, str>> = std::iter::once(first).chain(rest).map(trim).collect();
    Some(Cow::Owned(all.join(", ")))
}

fn trim(text: Cow<'_, str>) -> Cow<'_, str> {
    match text {
        Cow::Borrowed(s) => Cow::Borrowed(s.trim()),
        Cow::Owned(s) => Cow::Owned(s.trim().to_owned()),
    }
}

/// The rules' plan for one message (none without rules), read before its
/// body moves into its message.
pub fn plan(routes: Option<&Routes>, request: Request<'_>, body: &Body) -> Option<Plan> {
    let data = match body {
        Body::Text(s) => s.as_bytes(),
        Body::Bytes(b) => b.as_slice(),
    };
    routes.map(|r| r.plan(&View { request, data }))
}

/// The skip a plan says, if it says one: the message is done, not sent.
pub fn skip_of(plan: Option<&Plan>) -> Option<Skip> {
    match plan {
        Some(Plan::Skip(skip)) => Some(*skip),
        _ => None,
    }
}

/// Stop the start when `ROUTES` names a credential or session header
/// (`{"key": "header", "name": "authorization"}` anywhere in it), naming the
/// rule. A document that is not JSON passes here: the shared reader says
/// what is wrong with it.
pub fn refuse_credential_headers(env: &Env) -> Result<(), ConfigError> {
    let Some(text) = env.raw(ROUTES.name) else {
        return Ok(());
    };
    let Ok(document) = serde_json::from_str::<Value>(&text) else {
        return Ok(());
    };
    match credential_header(&document, "") {
        None => Ok(()),
        Some((path, name, found)) => Err(ConfigError::new(
            ROUTES.name,
            &clip(&found.to_string()),
            format!(
                "{}: a header without credentials; {name:?} may carry credentials or session state and is never offered to the rules (refused: {}, {}*)",
                if path.is_empty() {
                    "the document"
                } else {
                    &path
                },
                FORBIDDEN_HEADERS.join(", "),
                FORBIDDEN_HEADER_PREFIXES.join("*, ")
            ),
        )),
    }
}

/// The first `{"key": "header", "name": <credential header>}` in `value`:
/// where (`routes[0].when`), the name, and the object.
fn credential_header<'v>(value: &'v Value, path: &str) -> Option<(String, &'v str, &'v Value)> {
    match value {
        Value::Object(members) => {
            if members.get("key").and_then(Value::as_str) == Some("header")
                && let Some(name) = members.get("name").and_then(Value::as_str)
                && is_forbidden_header(name)
            {
                return Some((path.to_owned(), name, value));
            }
            members.iter().find_map(|(member, v)| {
                let here = if path.is_empty() {
                    member.clone()
                } else {
                    format!("{path}.{member}")
                };
                credential_header(v, &here)
            })
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| credential_header(v, &format!("{path}[{i}]"))),
        _ => None,
    }
}

/// At most 200 characters of `text`, as the shared reader shows a rule.
fn clip(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::http::HeaderValue;

    fn headers(pairs: &[(&str, &[u8])]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).expect("name"),
                HeaderValue::from_bytes(v).expect("value"),
            );
        }
        h
    }

    fn view<'a>(h: &'a HeaderMap, data: &'a [u8]) -> View<'a> {
        View {
            request: Request {
                path: "/queues/eu/messages",
                method: "POST",
                headers: h,
            },
            data,
        }
    }

    #[test]
    fn a_message_shows_its_body_and_the_request_keys() {
        let h = headers(&[
            ("X-Tenant", b"  acme "),
            ("x-multi", b"a"),
            ("X-Multi", b"b"),
            ("x-latin", b"caf\xe9"),
            ("authorization", b"Bearer secret"),
        ]);
        let v = view(&h, b"{\"n\":1}");
        assert_eq!(v.data(), Some(&b"{\"n\":1}"[..]));
        assert_eq!(
            v.key(SourceKey::Path, None).as_deref(),
            Some("/queues/eu/messages")
        );
        assert_eq!(v.key(SourceKey::Method, None).as_deref(), Some("POST"));
        for name in ["x-tenant", "X-TENANT", "X-Tenant"] {
            assert_eq!(
                v.key(SourceKey::Header, Some(name)).as_deref(),
                Some("acme"),
                "{name}"
            );
        }
        assert_eq!(
            v.key(SourceKey::Header, Some("x-multi")).as_deref(),
            Some("a, b")
        );
        assert_eq!(
            v.key(SourceKey::Header, Some("x-latin")).as_deref(),
            Some("caf\u{FFFD}")
        );
        assert_eq!(v.key(SourceKey::Header, Some("x-absent")), None);
        assert_eq!(v.key(SourceKey::Header, Some("not a name")), None);
        assert_eq!(v.key(SourceKey::Header, None), None);
        assert_eq!(v.key(SourceKey::Header, Some("Authorization")), None);
        assert_eq!(v.key(SourceKey::Bucket, None), None);
    }

    #[test]
    fn rules_plan_each_message_on_its_own_body() {
        let routes = Routes::parse(
            r#"{"targets": {"eu": "https://sqs.eu-west-1.amazonaws.com/123456789012/eu"},
                "filter": [{"field": "/keep", "exists": true}],
                "routes": [{"when": {"key": "header", "name": "X-Region", "equals": "eu"}, "target": "eu"}]}"#,
            SOURCE_KEYS,
        )
        .expect("valid rules");
        let h = headers(&[("x-region", b"eu")]);
        let request = view(&h, b"").request;
        let kept = plan(Some(&routes), request, &Body::Text("{\"keep\":1}".into()));
        assert!(
            matches!(kept, Some(Plan::Send { target, .. }) if target.0 == 1),
            "{kept:?}"
        );
        let dropped = plan(Some(&routes), request, &Body::Bytes(b"{}".to_vec()));
        assert_eq!(skip_of(dropped.as_ref()), Some(Skip::FilteredOut));
        assert_eq!(plan(None, request, &Body::Text("{}".into())), None);
    }

    #[test]
    fn credential_headers_in_the_rules_stop_the_start_naming_the_rule() {
        let env = |doc: &str| Env::from_pairs(&[("ROUTES", doc)]);
        for (doc, at) in [
            (
                r#"{"routes": [{"when": {"key": "header", "name": "Authorization", "exists": true}, "target": "default"}]}"#,
                "routes[0].when: ",
            ),
            (
                r#"{"attributes": {"t": {"key": "header", "name": "x-amz-security-token"}}}"#,
                "attributes.t: ",
            ),
            (
                r#"{"filter": [{"key": "header", "name": "cookie", "exists": false}]}"#,
                "filter[0]: ",
            ),
            (
                r#"{"group_id": {"key": "header", "name": "X-Api-Key"}}"#,
                "group_id: ",
            ),
        ] {
            let e = refuse_credential_headers(&env(doc)).expect_err(doc);
            assert_eq!(e.variable, "ROUTES");
            assert!(e.allowed.starts_with(at), "{doc}: {e}");
            assert!(e.allowed.contains("credentials"), "{e}");
            assert!(e.value.contains("\"header\""), "the rule shown: {e}");
        }
        for fine in [
            "",
            "not json",
            r#"{"routes": [{"when": {"key": "header", "name": "x-tenant", "exists": true}, "target": "default"}]}"#,
            r#"{"routes": [{"when": {"field": "/authorization", "exists": true}, "target": "default"}]}"#,
        ] {
            assert_eq!(refuse_credential_headers(&env(fine)), Ok(()), "{fine}");
        }
    }
}
