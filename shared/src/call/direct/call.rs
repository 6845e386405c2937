//! One call of the direct client: the request signed at the server's time,
//! sent, its answer read and its `Date` learned ([`super::skew`]); a call
//! refused for a clock the answer has just corrected is made once more.
//! Every call shape (`SendMessageBatch`, and at start `GetQueueUrl` and
//! `GetQueueAttributes`) goes through here, so they share the connection
//! pool, the credentials and the learned clock.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http_body_util::{BodyExt, Full, Limited};

use crate::call::transport::CallError;
use crate::send::codes::{self, error_chain};
use crate::send::outcome::Failure;

use super::skew::{self, ClockSkew};
use super::{DirectClient, MAX_ANSWER_BYTES, sign, wire};

/// What one attempt came to: the body of a 2xx answer or the call's error,
/// with the offset it was signed with and the one its answer measured.
struct Attempt {
    result: Result<Bytes, CallError>,
    signed_with: i64,
    measured: Option<i64>,
}

impl DirectClient {
    /// Post `body` to `target` (the call `operation`): the body of a 2xx
    /// answer, or the call's error as [`wire::call_error_of`] classifies it.
    /// A refusal with a skew code whose answer moved the learned offset by
    /// more than [`skew::DETECTION_THRESHOLD`] is made once more, at the
    /// corrected time; that second attempt is part of this call.
    pub(super) async fn post(
        &self,
        operation: &str,
        target: &str,
        body: Bytes,
    ) -> Result<Bytes, CallError> {
        let first = self.attempt(operation, target, &body).await?;
        match &first.result {
            Err(CallError::Failed(f))
                if skew::retry_with_new_offset(&f.code, first.signed_with, first.measured) =>
            {
                tracing::info!(
                    operation,
                    code = %f.code,
                    offset_ms = first.measured,
                    "the request was refused for the clock: the server's clock is now known; signed again at its time"
                );
                Ok(self.attempt(operation, target, &body).await?.result?)
            }
            _ => first.result,
        }
    }

    /// One signed request and its answer. `Err` for a failure before any
    /// answer (credentials, signing, connection, an unreadable answer).
    async fn attempt(
        &self,
        operation: &str,
        target: &str,
        body: &Bytes,
    ) -> Result<Attempt, CallError> {
        let signed_with = self.skew.offset_ms();
        let request = self
            .signed_request(operation, target, body, signed_with)
            .await?;
        let sent = SystemTime::now();
        let response = self.http.request(request).await.map_err(|e| {
            CallError::Failed(Failure::transient(
                codes::CONNECTION_ERROR,
                format!(
                    "the {operation} call could not be made: {}",
                    error_chain(&e)
                ),
            ))
        })?;
        let received = SystemTime::now();
        let (parts, answer) = response.into_parts();
        let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
        let measured = self.skew.learn(
            sent,
            received,
            header("date"),
            parts.headers.contains_key("age"),
        );
        let answer = Limited::new(answer, MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|_| {
                CallError::Failed(Failure::transient(
                    codes::RESPONSE_ERROR,
                    format!("the {operation} response could not be read"),
                ))
            })?
            .to_bytes();
        let result = if parts.status.is_success() {
            Ok(answer)
        } else {
            Err(wire::call_error_of(
                operation,
                parts.status.as_u16(),
                header(wire::QUERY_ERROR_HEADER),
                header("x-amzn-errortype"),
                &answer,
            ))
        };
        Ok(Attempt {
            result,
            signed_with,
            measured,
        })
    }

    /// The request to `target` with `body`, signed at the local clock moved
    /// by `offset_ms`, with the trace and user-agent headers.
    async fn signed_request(
        &self,
        operation: &str,
        target: &str,
        body: &Bytes,
        offset_ms: i64,
    ) -> Result<http::Request<Full<Bytes>>, CallError> {
        let signing_failed = |what: &str| {
            CallError::Failed(Failure::permanent(
                codes::SIGNING_FAILED,
                format!("the {operation} request could not be signed: {what}"),
            ))
        };
        let identity = self.credentials.get().await.map_err(CallError::Failed)?;
        let now = ClockSkew::apply(offset_ms, SystemTime::now());
        // Signed as the SDK signs: content-length too.
        let length = body.len().to_string();
        let headers = sign::request_headers(&length, target);
        let mut request = http::Request::post(self.endpoint.clone())
            .body(Full::new(body.clone()))
            .map_err(|_| signing_failed("the request"))?;
        let h = request.headers_mut();
        for (name, value) in headers {
            let value =
                HeaderValue::from_str(value).map_err(|_| signing_failed("a header value"))?;
            h.insert(HeaderName::from_static(name), value);
        }
        let credentials = identity.data::<Credentials>();
        let fast = credentials.and_then(|c| {
            self.signer
                .sign(c, now, target, body, &length)
                .map(|signature| (c, signature))
        });
        match fast {
            Some((credentials, signature)) => {
                let value = |v: &str| {
                    HeaderValue::from_str(v).map_err(|_| signing_failed("a header value"))
                };
                h.insert("x-amz-date", value(&signature.amz_date)?);
                if let Some(token) = credentials.session_token() {
                    let mut token = value(token)?;
                    token.set_sensitive(true);
                    h.insert("x-amz-security-token", token);
                }
                let mut authorization = value(&signature.authorization)?;
                authorization.set_sensitive(true);
                h.insert(http::header::AUTHORIZATION, authorization);
            }
            None => {
                let uri = self.endpoint.to_string();
                let signed = sign::general(&identity, &self.region, &uri, now, &headers, body)
                    .map_err(signing_failed)?;
                for (name, value) in signed {
                    h.insert(name, value);
                }
            }
        }
        // Unsigned, as aws-sigv4 leaves them out of the signature.
        h.insert(http::header::USER_AGENT, self.user_agent.clone());
        if let Some(trace) = self.environment.trace_id() {
            h.insert(super::headers::TRACE_ID_HEADER, trace);
        }
        Ok(request)
    }
}
