//! The function as Lambda runs it: started once per cold start
//! ([`ColdStart`]), then one [`Lambda::invoke`] per request, metrics flushed
//! after each.

use lambda_http::{Body, Request, Response};
use sqs_forwarder::observe::Observability;
use sqs_forwarder::setup::startup::{self, ColdStart, StartError};
use sqs_forwarder::{Env, SqsTransport};

use crate::{Handler, SERVICE, Settings};

/// What the function keeps between invocations.
pub struct Lambda {
    handler: Handler<SqsTransport>,
    observability: Observability,
}

impl ColdStart for Lambda {
    const SERVICE: &'static str = SERVICE;
    const ERROR_PREFIX: &'static str = crate::ERROR_PREFIX;

    async fn cold_start(env: &Env<'_>) -> Result<Self, StartError> {
        let settings = Settings::from_env(env)?;
        // Group ids come from the X-Message-Group-Id header.
        let started = startup::start(SERVICE, sqs_forwarder::GroupIds::FromSource).await?;
        Ok(Lambda {
            handler: Handler::new(settings, started.forwarder, started.config.deadline_margin),
            observability: started.observability,
        })
    }
}

impl Lambda {
    /// Answer one request (the deadline is the request context's, less
    /// `DEADLINE_MARGIN_MS`).
    pub async fn invoke(&self, request: Request) -> Response<Body> {
        let response = self.handler.handle(request).await;
        self.observability.flush();
        response
    }
}
