//! SigV4 for the requests the direct client makes, with the signing key
//! kept for the day.
//!
//! aws-sigv4's general signer (`http_request::sign`) derives the signing key
//! again on every call (four HMACs), and builds, lower-cases and sorts a
//! header map for a request whose shape never changes: together about 14%
//! of the direct client's instructions per message
//! (bench/notes/2026-12-01-direct-client-profile.md). Here the canonical request is written straight from the
//! request's fixed parts, and the key is derived once per day, access key
//! and secret (it depends on nothing else). The HMACs and key derivation
//! are aws-sigv4's; the body and the canonical request are hashed by
//! aws-lc-rs (in the build for rustls), whose SHA-256 uses the CPU's SHA
//! instructions (SHA-NI on x86_64, the SHA-2 extension on arm64, detected
//! at run time) and ran a 55 KB body in about three quarters of sha2's
//! time on the benchmark's host (bench/notes, "per-byte path"): on large
//! messages the body's hash is the largest single pass of the request.
//!
//! The shape it signs, the SDK's and [`super::DirectClient`]'s, for each
//! target (`AmazonSQS.SendMessageBatch`, and at start `AmazonSQS.GetQueueUrl`
//! and `AmazonSQS.GetQueueAttributes`):
//!
//! ```text
//! POST
//! /
//!
//! content-length:<n>
//! content-type:application/x-amz-json-1.0
//! host:<host>
//! x-amz-date:<yyyymmddThhmmssZ>
//! x-amz-security-token:<token>          (with a session token)
//! x-amz-target:<target>
//! x-amzn-query-mode:true
//!
//! content-length;content-type;host;x-amz-date[;x-amz-security-token];x-amz-target;x-amzn-query-mode
//! <hex SHA-256 of the body>
//! ```
//!
//! Only for an endpoint whose path is `/` and has no query, and a session
//! token that SigV4 would not normalise (no spaces): anything else is signed
//! by aws-sigv4's general signer ([`Signer::sign`] answers `None`). The unit
//! tests check that both signers give the same `Authorization` for the same
//! request; `tests/direct_signature.rs` checks it against AWS's
//! specification.
//!
//! `now` is the time the caller signs at: the local clock corrected by the
//! server's offset ([`super::skew`]), so the date in `x-amz-date`, in the
//! scope and of the signing key are all the server's day. `X-Amzn-Trace-Id`
//! and `User-Agent` are sent unsigned, as aws-sigv4 leaves them out.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4::{self, calculate_signature, generate_signing_key};
use aws_smithy_runtime_api::client::identity::Identity;

use super::wire;

const SERVICE: &str = "sqs";
const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// The headers the signature adds to the request.
#[derive(Debug)]
pub(crate) struct Signature {
    /// `x-amz-date`.
    pub amz_date: String,
    /// `authorization`.
    pub authorization: String,
}

/// The signing key of one day, access key and secret.
struct DayKey {
    date: String,
    access_key_id: String,
    secret: String,
    key: Vec<u8>,
}

/// Signs the direct client's requests to one endpoint and region.
pub(crate) struct Signer {
    region: String,
    /// The `host` value SigV4 signs, as aws-sigv4 takes it from the URI;
    /// `None` when the endpoint is not one this signer takes.
    host: Option<String>,
    key: Mutex<Option<DayKey>>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("region", &self.region)
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// A signer for requests to `endpoint` in `region`.
    pub(crate) fn new(endpoint: &http::Uri, region: &str) -> Self {
        Signer {
            region: region.to_owned(),
            host: signed_host(endpoint),
            key: Mutex::new(None),
        }
    }

    /// The signature of a request to `target` with `body` (whose
    /// `content-length` is `length`), made at `now` with `credentials`;
    /// `None` when this signer does not take the endpoint or the credentials
    /// (aws-sigv4's general signer does).
    pub(crate) fn sign(
        &self,
        credentials: &Credentials,
        now: SystemTime,
        target: &str,
        body: &[u8],
        length: &str,
    ) -> Option<Signature> {
        let host = self.host.as_deref()?;
        let token = credentials.session_token();
        if token.is_some_and(|t| t.is_empty() || t.bytes().any(|b| !b.is_ascii_graphic())) {
            return None;
        }
        let time = time::OffsetDateTime::from(now);
        let mut amz_date = String::with_capacity(16);
        let _ = write!(
            amz_date,
            "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
            time.year(),
            u8::from(time.month()),
            time.day(),
            time.hour(),
            time.minute(),
            time.second()
        );
        let date = amz_date.get(..8)?;
        let signed_headers = if token.is_some() {
            "content-length;content-type;host;x-amz-date;x-amz-security-token;x-amz-target;x-amzn-query-mode"
        } else {
            "content-length;content-type;host;x-amz-date;x-amz-target;x-amzn-query-mode"
        };
        let mut canonical = String::with_capacity(
            300 + host.len()
                + target.len()
                + token.map_or(0, |t| t.len() + 22)
                + signed_headers.len(),
        );
        canonical.push_str("POST\n/\n\ncontent-length:");
        canonical.push_str(length);
        canonical.push_str("\ncontent-type:");
        canonical.push_str(wire::CONTENT_TYPE);
        canonical.push_str("\nhost:");
        canonical.push_str(host);
        canonical.push_str("\nx-amz-date:");
        canonical.push_str(&amz_date);
        if let Some(t) = token {
            canonical.push_str("\nx-amz-security-token:");
            canonical.push_str(t);
        }
        canonical.push_str("\nx-amz-target:");
        canonical.push_str(target);
        canonical.push_str("\nx-amzn-query-mode:true\n\n");
        canonical.push_str(signed_headers);
        canonical.push('\n');
        push_hex(&mut canonical, sha256(body).as_ref());

        let scope = format!("{date}/{}/{SERVICE}/aws4_request", self.region);
        let mut string_to_sign = String::with_capacity(ALGORITHM.len() + 20 + scope.len() + 66);
        string_to_sign.push_str(ALGORITHM);
        string_to_sign.push('\n');
        string_to_sign.push_str(&amz_date);
        string_to_sign.push('\n');
        string_to_sign.push_str(&scope);
        string_to_sign.push('\n');
        push_hex(&mut string_to_sign, sha256(canonical.as_bytes()).as_ref());

        let signature = self.with_key(credentials, date, now, |key| {
            calculate_signature(key, string_to_sign.as_bytes())
        })?;
        let authorization = format!(
            "{ALGORITHM} Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
            credentials.access_key_id()
        );
        Some(Signature {
            amz_date,
            authorization,
        })
    }

    /// Run `f` with the signing key of `date` for `credentials`, derived
    /// now if the kept one is for another day or other credentials.
    fn with_key<T>(
        &self,
        credentials: &Credentials,
        date: &str,
        now: SystemTime,
        f: impl FnOnce(&[u8]) -> T,
    ) -> Option<T> {
        let mut kept = self.key.lock().ok()?;
        let fresh = kept.as_ref().is_some_and(|k| {
            k.date == date
                && k.access_key_id == credentials.access_key_id()
                && k.secret == credentials.secret_access_key()
        });
        if !fresh {
            let key =
                generate_signing_key(credentials.secret_access_key(), now, &self.region, SERVICE);
            *kept = Some(DayKey {
                date: date.to_owned(),
                access_key_id: credentials.access_key_id().to_owned(),
                secret: credentials.secret_access_key().to_owned(),
                key: key.as_ref().to_vec(),
            });
        }
        kept.as_ref().map(|k| f(&k.key))
    }
}

/// The headers of a request to `target` with a body of `length` bytes, all
/// of them signed (as the SDK signs: content-length too).
pub(crate) fn request_headers<'a>(
    length: &'a str,
    target: &'a str,
) -> [(&'static str, &'a str); 4] {
    [
        ("content-length", length),
        ("content-type", wire::CONTENT_TYPE),
        ("x-amz-target", target),
        ("x-amzn-query-mode", "true"),
    ]
}

/// The signature headers aws-sigv4's general signer gives a `POST` of
/// `body` with `headers` to `uri`, for what [`Signer`] does not take (an
/// endpoint with a path, an unusual session token, an identity that is not
/// plain credentials); on failure, what could not be made.
pub(crate) fn general(
    identity: &Identity,
    region: &str,
    uri: &str,
    now: SystemTime,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Vec<(http::HeaderName, http::HeaderValue)>, &'static str> {
    let params = v4::SigningParams::builder()
        .identity(identity)
        .region(region)
        .name(SERVICE)
        .time(now)
        .settings(SigningSettings::default())
        .build()
        .map_err(|_| "signing parameters")?
        .into();
    let signable = SignableRequest::new(
        "POST",
        uri,
        headers.iter().copied(),
        SignableBody::Bytes(body),
    )
    .map_err(|_| "the request")?;
    let (instructions, _signature) = sign(signable, &params)
        .map_err(|_| "the signature")?
        .into_parts();
    let (signed, _query) = instructions.into_parts();
    signed
        .into_iter()
        .map(|header| {
            let mut value =
                http::HeaderValue::from_str(header.value()).map_err(|_| "a header value")?;
            value.set_sensitive(header.sensitive());
            let name = http::HeaderName::from_bytes(header.name().as_bytes())
                .map_err(|_| "a header name")?;
            Ok((name, value))
        })
        .collect()
}

/// The `host` SigV4 signs for `endpoint`, as aws-sigv4 takes it (the host,
/// with the port unless it is the scheme's default), or `None` for an
/// endpoint this signer does not take: a path other than `/`, a query, or
/// user information in the authority.
fn signed_host(endpoint: &http::Uri) -> Option<String> {
    if endpoint.path() != "/" || endpoint.query().is_some() {
        return None;
    }
    let authority = endpoint.authority()?;
    if authority.as_str().contains('@') {
        return None;
    }
    let default_port = matches!(
        (endpoint.scheme_str(), endpoint.port_u16()),
        (Some("http"), Some(80)) | (Some("https"), Some(443))
    );
    let explicit_port = authority.port().is_some();
    Some(if explicit_port && !default_port {
        authority.as_str().to_owned()
    } else {
        authority.host().to_owned()
    })
}

/// SHA-256 of `data` (aws-lc-rs).
fn sha256(data: &[u8]) -> aws_lc_rs::digest::Digest {
    aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, data)
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// The headers aws-sigv4's general signer gives the same request.
    fn general(
        uri: &str,
        region: &str,
        credentials: &Credentials,
        now: SystemTime,
        body: &[u8],
    ) -> Vec<(String, String)> {
        let length = body.len().to_string();
        super::general(
            &Identity::from(credentials.clone()),
            region,
            uri,
            now,
            &request_headers(&length, wire::TARGET),
            body,
        )
        .expect("signed")
        .into_iter()
        .map(|(n, v)| (n.to_string(), v.to_str().expect("ASCII").to_owned()))
        .collect()
    }

    fn ours(
        uri: &str,
        region: &str,
        credentials: &Credentials,
        now: SystemTime,
        body: &[u8],
    ) -> Option<Signature> {
        let uri: http::Uri = uri.parse().expect("uri");
        Signer::new(&uri, region).sign(
            credentials,
            now,
            wire::TARGET,
            body,
            &body.len().to_string(),
        )
    }

    fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn the_same_signature_as_aws_sigv4_for_every_shape_this_signer_takes() {
        let plain = Credentials::new("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG", None, None, "t");
        let session = Credentials::new(
            "ASIAEXAMPLE",
            "secret/with+chars",
            Some("IQoJb3JpZ2luX2VjEHwaCXVzLWVhc3QtMSJHMEUCIQ==".into()),
            None,
            "t",
        );
        let times = [
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            // A minute before and after midnight: the date in the scope.
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_547_140),
            SystemTime::UNIX_EPOCH + Duration::from_millis(1_764_547_260_999),
        ];
        let bodies: [&[u8]; 3] = [
            b"{}",
            br#"{"QueueUrl":"https://sqs.eu-west-1.amazonaws.com/1/q","Entries":[{"Id":"0","MessageBody":"h\u00e9"}]}"#,
            &[b'x'; 70_000],
        ];
        let mut compared = 0;
        for uri in [
            "https://sqs.eu-west-1.amazonaws.com/",
            "https://sqs.eu-west-1.amazonaws.com:443/",
            "http://127.0.0.1:4566/",
            "http://localhost:80/",
            "https://vpce-1.sqs.us-east-1.vpce.amazonaws.com:8443/",
            "http://[::1]:4566/",
        ] {
            for credentials in [&plain, &session] {
                for &now in &times {
                    for body in bodies {
                        let want = general(uri, "eu-west-1", credentials, now, body);
                        let got = ours(uri, "eu-west-1", credentials, now, body)
                            .unwrap_or_else(|| panic!("{uri}: not taken"));
                        assert_eq!(
                            header(&want, "authorization"),
                            Some(got.authorization.as_str()),
                            "{uri}"
                        );
                        assert_eq!(header(&want, "x-amz-date"), Some(got.amz_date.as_str()));
                        compared += 1;
                    }
                }
            }
        }
        assert_eq!(compared, 6 * 2 * 3 * 3);
    }

    #[test]
    fn the_key_is_kept_for_a_day_and_the_credentials() {
        let uri: http::Uri = "https://sqs.us-east-1.amazonaws.com/".parse().expect("uri");
        let signer = Signer::new(&uri, "us-east-1");
        let a = Credentials::new("AKIDA", "secret-a", None, None, "t");
        let b = Credentials::new("AKIDA", "secret-b", None, None, "t");
        let day1 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_547_140);
        let day2 = day1 + Duration::from_secs(120);
        // Every change of day, access key or secret signs as aws-sigv4 does,
        // in an order that reuses and replaces the kept key.
        for (credentials, now) in [(&a, day1), (&a, day1), (&b, day1), (&b, day2), (&a, day2)] {
            let got = signer
                .sign(credentials, now, wire::TARGET, b"{}", "2")
                .expect("taken");
            let want = general(&uri.to_string(), "us-east-1", credentials, now, b"{}");
            assert_eq!(
                header(&want, "authorization"),
                Some(got.authorization.as_str())
            );
        }
    }

    #[test]
    fn every_target_signs_as_aws_sigv4_does() {
        let credentials = Credentials::new("AKID", "secret", Some("token".into()), None, "t");
        let uri = "https://sqs.eu-west-1.amazonaws.com/";
        let signer = Signer::new(&uri.parse().expect("uri"), "eu-west-1");
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_547_140);
        let body = br#"{"QueueUrl":"https://sqs.eu-west-1.amazonaws.com/1/q"}"#;
        let length = body.len().to_string();
        for target in [
            wire::TARGET,
            "AmazonSQS.GetQueueAttributes",
            "AmazonSQS.GetQueueUrl",
        ] {
            let want: Vec<(String, String)> = super::general(
                &Identity::from(credentials.clone()),
                "eu-west-1",
                uri,
                now,
                &request_headers(&length, target),
                body,
            )
            .expect("signed")
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_str().expect("ASCII").to_owned()))
            .collect();
            let got = signer
                .sign(&credentials, now, target, body, &length)
                .expect("taken");
            assert_eq!(
                header(&want, "authorization"),
                Some(got.authorization.as_str()),
                "{target}"
            );
        }
    }

    #[test]
    fn other_shapes_go_to_the_general_signer() {
        let plain = Credentials::new("AKID", "s", None, None, "t");
        let now = SystemTime::now();
        for uri in [
            "http://127.0.0.1:4566/prefix/",
            "http://127.0.0.1:4566/?x=1",
            "http://user@127.0.0.1:4566/",
        ] {
            assert!(ours(uri, "r", &plain, now, b"{}").is_none(), "{uri}");
        }
        for token in ["", "has space", " lead"] {
            let c = Credentials::new("AKID", "s", Some(token.into()), None, "t");
            assert!(
                ours("http://127.0.0.1:4566/", "r", &c, now, b"{}").is_none(),
                "{token:?}"
            );
        }
    }
}
