//! Opening an object where a continuation step starts.
//!
//! Every step reads the object the chain is pinned to: its version when the
//! first step read one, and always only while its ETag is the first step's
//! (`If-Match`). An object replaced since then ends the chain with
//! `ObjectChanged`, not retryable: a chain never mixes two uploads' lines.
//!
//! A plain object is read from the offset with a ranged `GetObject`
//! (`Range: bytes=<offset>-`). A gzip object cannot be entered in the
//! middle: it is read from its start, decompressed, and the offset's bytes
//! of decompressed data are skipped, so each step of a gzip chain
//! downloads and decompresses everything before its offset again.

use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::operation::get_object::GetObjectError;
use aws_sdk_s3::operation::get_object::builders::GetObjectFluentBuilder;
use tokio::io::AsyncReadExt;

use super::Continuation;
use crate::object::{ObjectBody, ObjectError, decoded, error_parts, is_gzip, quoted, retryable};

/// An object opened at a step's start.
pub struct Resumed {
    /// The decoded stream, at the step's offset.
    pub body: ObjectBody,
    /// Whether it is being decompressed.
    pub gzip: bool,
}

/// Open the object `c` names at its offset.
pub async fn open_at(s3: &aws_sdk_s3::Client, c: &Continuation) -> Result<Resumed, ObjectError> {
    let by_name = is_gzip(&c.key, None);
    let ranged = !by_name && c.offset > 0;
    let out = request(s3, c, ranged.then_some(c.offset))
        .send()
        .await
        .map_err(|err| failure(c, &err))?;
    let gzip = is_gzip(&c.key, out.content_encoding());
    if gzip && ranged {
        // Content-Encoding says gzip: the ranged bytes are compressed data
        // from the middle. Read it again from the start.
        let whole = request(s3, c, None)
            .send()
            .await
            .map_err(|err| failure(c, &err))?;
        return skip(decoded(whole.body.into_async_read(), true), c)
            .await
            .map_err(|(code, m, r)| fail(c, code, m, r));
    }
    if ranged {
        // An endpoint that ignores `Range` answers the whole object: its
        // lines would be numbered from the wrong place.
        let expected = format!("bytes {}-", c.offset);
        if !out
            .content_range()
            .is_some_and(|r| r.starts_with(&expected))
        {
            return Err(fail(
                c,
                "RangeIgnored",
                format!(
                    "GetObject answered {:?} to Range: bytes={}-; the chain cannot go on without ranged reads",
                    out.content_range().unwrap_or("no Content-Range"),
                    c.offset
                ),
                false,
            ));
        }
    }
    let body = decoded(out.body.into_async_read(), gzip);
    if gzip {
        return skip(body, c)
            .await
            .map_err(|(code, m, r)| fail(c, code, m, r));
    }
    Ok(Resumed { body, gzip })
}

/// `GetObject` of the version and ETag the chain is pinned to, from byte
/// `from` when given. (Sent by the caller, so that no further async
/// function nests in the handler's future.)
fn request(s3: &aws_sdk_s3::Client, c: &Continuation, from: Option<u64>) -> GetObjectFluentBuilder {
    s3.get_object()
        .bucket(&c.bucket)
        .key(&c.key)
        .set_version_id(c.version_id.clone())
        .if_match(quoted(&c.etag))
        .set_range(from.map(|offset| format!("bytes={offset}-")))
}

/// What a failed [`request`] means for the step: a replaced object is
/// `ObjectChanged`, an offset past the end `InvalidOffset`, any other
/// failure S3's own, retryable as lines mode's `GetObject` is.
fn failure(
    c: &Continuation,
    err: &SdkError<GetObjectError, aws_sdk_s3::config::http::HttpResponse>,
) -> ObjectError {
    let (code, message, status) = error_parts(err);
    if status == Some(412) || code == "PreconditionFailed" {
        return fail(
            c,
            "ObjectChanged",
            format!(
                "the object is no longer the one the chain started reading (ETag {}): it was replaced, and the chain stops at line {} rather than mix two uploads' lines",
                c.etag, c.line
            ),
            false,
        );
    }
    if status == Some(416) {
        return fail(
            c,
            "InvalidOffset",
            format!("offset {} is past the object's end", c.offset),
            false,
        );
    }
    let again = retryable(err, &code, status);
    fail(c, &code, message, again)
}

/// A step's failure to read the object `c` names.
fn fail(c: &Continuation, code: &str, message: String, retryable: bool) -> ObjectError {
    ObjectError {
        bucket: c.bucket.clone(),
        key: c.key.clone(),
        version: c.version_id.clone(),
        code: code.to_owned(),
        message,
        retryable,
    }
}

/// A decompressed stream moved on past the offset's bytes.
async fn skip(
    mut body: ObjectBody,
    c: &Continuation,
) -> Result<Resumed, (&'static str, String, bool)> {
    let skipped = tokio::io::copy(&mut (&mut body).take(c.offset), &mut tokio::io::sink())
        .await
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::InvalidData {
                (
                    "InvalidGzip",
                    format!("the object is not valid gzip data: {e}"),
                    false,
                )
            } else {
                (
                    "ReadFailed",
                    format!("reading the object failed: {e}"),
                    true,
                )
            }
        })?;
    if skipped < c.offset {
        return Err((
            "InvalidOffset",
            format!(
                "offset {} is past the object's end ({skipped} bytes decompressed)",
                c.offset
            ),
            false,
        ));
    }
    Ok(Resumed { body, gzip: true })
}
