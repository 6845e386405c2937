//! The function as Lambda runs it: started once per cold start
//! ([`ColdStart`]), then one [`Lambda::invoke`] per request, metrics flushed
//! after each.

use lambda_http::{Body, Request, Response};
use sqs_forwarder::route::SourceKey;
use sqs_forwarder::setup::startup::{ColdStart, Kept, StartError, Started};
use sqs_forwarder::{ConfigError, Env, GroupIds, SqsTransport};

use crate::{Handler, SERVICE, Settings};

/// What the function keeps between invocations.
pub struct Lambda {
    handler: Handler<SqsTransport>,
    kept: Kept,
}

impl ColdStart for Lambda {
    const SERVICE: &'static str = SERVICE;
    const ERROR_PREFIX: &'static str = crate::ERROR_PREFIX;
    const SOURCE_KEYS: Option<&'static [SourceKey]> = Some(crate::routing::SOURCE_KEYS);
    type Settings = Settings;

    /// The function's variables, and no credential header in `ROUTES`.
    fn settings(env: &Env) -> Result<Settings, ConfigError> {
        let settings = Settings::from_env(env)?;
        crate::routing::refuse_credential_headers(env)?;
        Ok(settings)
    }

    /// Group ids come from the `X-Message-Group-Id` header.
    fn group_ids(_: &Settings) -> GroupIds {
        GroupIds::FromSource
    }

    async fn build(settings: Settings, started: Started) -> Result<Self, StartError> {
        Ok(Lambda {
            kept: started.kept(),
            handler: Handler::routed(settings, started.router, started.config.deadline_margin),
        })
    }
}

impl Lambda {
    /// Answer one request (the deadline is the request context's, less
    /// `DEADLINE_MARGIN_MS`). Every request gets an answer: nothing fails
    /// the invocation.
    pub async fn invoke(
        &self,
        request: Request,
    ) -> Result<Response<Body>, std::convert::Infallible> {
        let response = self.handler.handle(request).await;
        self.kept.flush();
        Ok(response)
    }
}
