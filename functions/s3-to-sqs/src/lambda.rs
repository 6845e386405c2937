//! The function as Lambda runs it: started once per cold start
//! ([`ColdStart`]), then one [`Lambda::invoke`] per event, metrics flushed
//! after each.

use lambda_runtime::LambdaEvent;
use serde_json::Value;
use sqs_forwarder::observe::Observability;
use sqs_forwarder::setup::startup::{self, ColdStart, StartError};
use sqs_forwarder::{Env, SqsTransport};

use crate::event::Event;
use crate::{Handler, HandlerError, SERVICE, Settings, reader_sdk, s3_client};

/// What the function keeps between invocations.
#[derive(Debug)]
pub struct Lambda {
    handler: Handler<SqsTransport>,
    observability: Observability,
    margin: std::time::Duration,
}

impl ColdStart for Lambda {
    const SERVICE: &'static str = SERVICE;
    const ERROR_PREFIX: &'static str = crate::ERROR_PREFIX;

    async fn cold_start(env: &Env<'_>) -> Result<Self, StartError> {
        let settings = Settings::from_env(env)?;
        let group_ids = sqs_forwarder::GroupIds::from_source(settings.source_sets_group_ids());
        let started = startup::start(SERVICE, group_ids).await?;
        // Objects are read with the function's own credentials:
        // ASSUME_ROLE_ARN is for the queue only.
        let reader = reader_sdk(&started.sdk, started.config.assume_role.is_some()).await;
        let s3 = s3_client(&reader, settings.s3_force_path_style);
        Ok(Lambda {
            margin: started.margin(),
            handler: Handler::new(settings, started.forwarder, s3),
            observability: started.observability,
        })
    }
}

impl Lambda {
    /// Forward one event before the invocation's deadline (less
    /// `DEADLINE_MARGIN_MS`); the answer is the event's [`crate::Report`].
    pub async fn invoke(&self, event: LambdaEvent<Event>) -> Result<Value, HandlerError> {
        let deadline =
            sqs_forwarder::deadline_from_epoch_millis(event.context.deadline, self.margin);
        let result = self
            .handler
            .handle_read(event.payload.0, Some(deadline))
            .await;
        self.observability.flush();
        result.map(|report| serde_json::to_value(report).unwrap_or(Value::Null))
    }
}
