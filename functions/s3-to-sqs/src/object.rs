//! Opening an object for lines mode: `GetObject` as a stream, decompressed
//! when it is gzip (the key ends in `.gz`, or `Content-Encoding` says gzip).
//!
//! The exact object the event is about is read: its version when the event
//! names one; otherwise the current object, but only while its ETag is still
//! the event's (`If-Match`). When it is not, the object was overwritten after
//! the event: its content is gone, and the newer upload has its own event.

use std::pin::Pin;

use async_compression::tokio::bufread::GzipDecoder;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::operation::get_object::GetObjectError;
use tokio::io::{AsyncBufRead, BufReader};

use crate::event::ObjectEvent;

/// A readable object body, decompressed if needed.
pub type ObjectBody = Pin<Box<dyn AsyncBufRead + Send>>;

/// What opening an object gave.
pub enum Opened {
    /// The body, ready to read.
    Body {
        /// The stream.
        body: ObjectBody,
        /// Whether it is being decompressed.
        gzip: bool,
        /// The version and ETag S3 answered with (a continuation reads
        /// only these).
        pin: crate::continuation::Pin,
    },
    /// The object changed after the event (an unversioned bucket).
    Superseded,
}

/// An object that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read s3://{bucket}/{key}{}: {code}: {message}", version.as_deref().map(|v| format!(" (version {v})")).unwrap_or_default())]
pub struct ObjectError {
    /// The bucket.
    pub bucket: String,
    /// The key.
    pub key: String,
    /// The version asked for.
    pub version: Option<String>,
    /// S3's error code (`NoSuchKey`, `AccessDenied`, ...) or the kind of
    /// failure (`Timeout`, `ConnectionError`).
    pub code: String,
    /// What went wrong.
    pub message: String,
    /// Whether a later retry could succeed.
    pub retryable: bool,
}

/// An S3 client for this SDK configuration; `force_path_style` for local
/// endpoints that do not serve virtual-hosted buckets.
pub fn s3_client(sdk: &aws_config::SdkConfig, force_path_style: bool) -> aws_sdk_s3::Client {
    let conf = aws_sdk_s3::config::Builder::from(sdk)
        .force_path_style(force_path_style)
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

/// The AWS settings objects are read with (lines mode): the function's own
/// credentials, never those of `ASSUME_ROLE_ARN`. The role is for the queue
/// (as with the claim check's payload bucket): the input bucket belongs to
/// this stack, whose template grants the function's own role
/// `s3:GetObject` on it. `sending` is the SDK configuration the SQS client
/// was built from; with `assumes_role` the function's own is loaded afresh
/// from the environment (the same chain, without the role).
pub async fn reader_sdk(
    sending: &aws_config::SdkConfig,
    assumes_role: bool,
) -> aws_config::SdkConfig {
    if assumes_role {
        sqs_forwarder::setup::credentials::own_sdk_config().await
    } else {
        sending.clone()
    }
}

/// Whether a key or `Content-Encoding` says gzip.
pub fn is_gzip(key: &str, content_encoding: Option<&str>) -> bool {
    let by_name = key.len() >= 3
        && key
            .get(key.len() - 3..)
            .is_some_and(|end| end.eq_ignore_ascii_case(".gz"));
    let by_encoding = content_encoding.is_some_and(|enc| {
        enc.split(',').any(|e| {
            e.trim().eq_ignore_ascii_case("gzip") || e.trim().eq_ignore_ascii_case("x-gzip")
        })
    });
    by_name || by_encoding
}

pub(crate) fn quoted(etag: &str) -> String {
    if etag.starts_with('"') {
        etag.to_owned()
    } else {
        format!("\"{etag}\"")
    }
}

/// Open the object an event is about.
pub async fn open(s3: &aws_sdk_s3::Client, event: &ObjectEvent) -> Result<Opened, ObjectError> {
    let mut request = s3.get_object().bucket(&event.bucket).key(&event.key);
    let mut if_match = false;
    if let Some(version) = &event.version_id {
        request = request.version_id(version);
    } else if let Some(etag) = &event.etag {
        request = request.if_match(quoted(etag));
        if_match = true;
    }
    let out = match request.send().await {
        Ok(out) => out,
        Err(err) => {
            let (code, message, status) = error_parts(&err);
            if if_match && (status == Some(412) || code == "PreconditionFailed") {
                return Ok(Opened::Superseded);
            }
            let retryable = retryable(&err, &code, status);
            return Err(ObjectError {
                bucket: event.bucket.clone(),
                key: event.key.clone(),
                version: event.version_id.clone(),
                code,
                message,
                retryable,
            });
        }
    };
    let gzip = is_gzip(&event.key, out.content_encoding());
    let pin = crate::continuation::Pin {
        version_id: out.version_id().map(str::to_owned),
        etag: out.e_tag().map(|e| e.trim_matches('"').to_owned()),
    };
    let body = decoded(out.body.into_async_read(), gzip);
    Ok(Opened::Body { body, gzip, pin })
}

/// The body as lines are read from it: gunzipped (every member of a
/// multi-member file, as `cat a.gz b.gz` makes) when `gzip`.
pub fn decoded(raw: impl AsyncBufRead + Send + 'static, gzip: bool) -> ObjectBody {
    if gzip {
        let mut decoder = GzipDecoder::new(raw);
        decoder.multiple_members(true);
        Box::pin(BufReader::with_capacity(64 * 1024, decoder))
    } else {
        Box::pin(raw)
    }
}

/// Whether a failed `GetObject` is worth trying again: S3 answered 5xx,
/// 429, `SlowDown` or `RequestTimeout`, or did not answer (a timeout or a
/// connection may do better next time; a request that could not be built
/// will not). `code` and `status` are [`error_parts`]'.
pub(crate) fn retryable(
    err: &SdkError<GetObjectError, aws_sdk_s3::config::http::HttpResponse>,
    code: &str,
    status: Option<u16>,
) -> bool {
    match status {
        Some(s) => s >= 500 || s == 429 || code == "SlowDown" || code == "RequestTimeout",
        None => !matches!(err, SdkError::ConstructionFailure(_)),
    }
}

/// S3's code and message for a failed `GetObject`, and the HTTP status
/// when S3 answered. A service error without a code is named for its
/// status (a `HEAD`-like 404/403/412 carries no body); anything else is
/// read as every SDK error is ([`sqs_forwarder::send::codes::sdk_error_parts`]).
pub(crate) fn error_parts(
    err: &SdkError<GetObjectError, aws_sdk_s3::config::http::HttpResponse>,
) -> (String, String, Option<u16>) {
    match err {
        SdkError::ServiceError(se) => {
            let status = se.raw().status().as_u16();
            let code = se
                .err()
                .code()
                .map(str::to_owned)
                .unwrap_or_else(|| match status {
                    404 => "NotFound".into(),
                    403 => "AccessDenied".into(),
                    412 => "PreconditionFailed".into(),
                    s => format!("HTTP{s}"),
                });
            let message = se
                .err()
                .message()
                .map(str::to_owned)
                .unwrap_or_else(|| format!("GetObject failed with HTTP {status}"));
            (code, message, Some(status))
        }
        other => {
            let (code, message) = sqs_forwarder::send::codes::sdk_error_parts(other);
            (code, format!("GetObject: {message}"), None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_by_name_or_encoding() {
        assert!(is_gzip("logs/app.log.gz", None));
        assert!(is_gzip("logs/APP.LOG.GZ", None));
        assert!(is_gzip("logs/app.log", Some("gzip")));
        assert!(is_gzip("logs/app.log", Some("identity, GZIP")));
        assert!(!is_gzip("logs/app.log", None));
        assert!(!is_gzip("logs/app.gzip", Some("br")));
        assert!(!is_gzip("gz", None));
        assert!(!is_gzip("é.z", None), "no panic on a multi-byte key");
    }

    #[test]
    fn errors_name_bucket_key_and_version() {
        let e = ObjectError {
            bucket: "b".into(),
            key: "dir/a b.txt".into(),
            version: Some("v1".into()),
            code: "NoSuchKey".into(),
            message: "The specified key does not exist.".into(),
            retryable: false,
        };
        assert_eq!(
            e.to_string(),
            "cannot read s3://b/dir/a b.txt (version v1): NoSuchKey: The specified key does not exist."
        );
    }
}
