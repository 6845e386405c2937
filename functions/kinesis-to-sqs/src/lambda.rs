//! The function as Lambda runs it: started once per cold start
//! ([`ColdStart`]), then one [`Lambda::invoke`] per batch, metrics flushed
//! after each.

use lambda_runtime::LambdaEvent;
use sqs_forwarder::observe::Observability;
use sqs_forwarder::setup::startup::{self, ColdStart, StartError};
use sqs_forwarder::{Env, SqsTransport};

use sqs_forwarder::event_reader::Checked;

use crate::event::{Incoming, KinesisEvent, KinesisEventResponse};
use crate::{Handler, InvocationError, SERVICE, Settings};

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
        Ok(Lambda {
            margin: started.margin(),
            handler: Handler::new(settings, started.forwarder),
            observability: started.observability,
        })
    }
}

impl Lambda {
    /// Forward one batch before the invocation's deadline (less
    /// `DEADLINE_MARGIN_MS`) and answer which records Lambda must deliver
    /// again. An event that cannot be read fails the invocation
    /// (`KinesisToSqs.InvalidEvent`) before anything is sent.
    pub async fn invoke(
        &self,
        event: LambdaEvent<Checked<Incoming>>,
    ) -> Result<KinesisEventResponse, InvocationError> {
        let LambdaEvent { payload, context } = event;
        let event = match payload.0 {
            Ok(incoming) => LambdaEvent::new(KinesisEvent::from(incoming), context),
            Err(why) => {
                let error = InvocationError::InvalidEvent(why);
                tracing::error!(error = %error, "failing the invocation");
                self.observability.flush();
                return Err(error);
            }
        };
        let deadline =
            sqs_forwarder::deadline_from_epoch_millis(event.context.deadline, self.margin);
        tracing::debug!(
            deadline_ms = event.context.deadline,
            left_ms = deadline
                .saturating_duration_since(tokio::time::Instant::now())
                .as_millis() as u64,
            "invocation"
        );
        let answer = self.handler.handle(event.payload, Some(deadline)).await;
        self.observability.flush();
        Ok(answer?)
    }
}
