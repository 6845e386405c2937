//! # apigw-to-sqs
//!
//! An HTTP ingestion endpoint in front of Amazon SQS, for API Gateway REST
//! APIs (payload 1.0), HTTP APIs (payload 2.0), Lambda function URLs and
//! Application Load Balancer target groups alike: `lambda_http` turns each
//! of their events into one [`lambda_http::Request`] (decoding
//! `isBase64Encoded` bodies), and this crate answers it, in the format of
//! whichever sent it.
//!
//! The flow, one direction:
//!
//! ```text
//! request -> route (POST MESSAGES_PATH | POST a ROUTES path route's path
//!                  | GET HEALTH_PATH)                404 / 405
//!         -> sizes (Content-Length, body)           411 / 413
//!         -> content type                           415
//!         -> headers -> SQS parameters, attributes  400
//!         -> body -> message bodies ([`body`])      400 / 413
//!         -> each message planned by ROUTES ([`routing`]) and routed
//!         -> Router::forward(messages, deadline)
//!         -> outcomes -> status + per-message results ([`response`])
//! ```
//!
//! Nothing here batches, sizes or retries: the shared crate does. The
//! [`Handler`] (request in, messages out, outcomes back as the response) is
//! generic over the [`Transport`](sqs_forwarder::Transport) so tests drive
//! it with a fake as well as with the real SQS transport; [`Lambda`] is
//! what Lambda keeps between invocations.

pub mod body;
pub mod event;
pub mod handler;
pub mod headers;
pub mod lambda;
pub mod paths;
pub mod reject;
pub mod response;
pub mod routing;
pub mod settings;

pub use crate::handler::Handler;
pub use crate::paths::Route;
pub use crate::settings::{Settings, VARIABLES};
pub use lambda::Lambda;
/// The `lambda_http` this crate answers with, for callers and tests that
/// build requests (`lambda_http::request::from_str`).
pub use lambda_http;

/// The `Service` dimension of the metrics and the name in logs.
pub const SERVICE: &str = "apigw-to-sqs";

/// The prefix of the Lambda error types the function reports: only a failed
/// start's (`ApigwToSqs.InvalidConfiguration`, `ApigwToSqs.StartFailed`);
/// every request gets an HTTP answer.
pub const ERROR_PREFIX: &str = "ApigwToSqs";
