//! The function as Lambda runs it: started once per cold start
//! ([`ColdStart`]), then one [`Lambda::invoke`] per batch, metrics flushed
//! after each.

use lambda_runtime::LambdaEvent;
use sqs_forwarder::route::SourceKey;
use sqs_forwarder::setup::startup::{ColdStart, Kept, StartError, Started};
use sqs_forwarder::{ConfigError, Env, GroupIds, SqsTransport};

use sqs_forwarder::event_reader::Checked;

use crate::event::{Incoming, KinesisEvent, KinesisEventResponse};
use crate::{Handler, InvocationError, SERVICE, Settings};

/// What the function keeps between invocations.
#[derive(Debug)]
pub struct Lambda {
    handler: Handler<SqsTransport>,
    kept: Kept,
}

impl ColdStart for Lambda {
    const SERVICE: &'static str = SERVICE;
    const ERROR_PREFIX: &'static str = crate::ERROR_PREFIX;
    const SOURCE_KEYS: Option<&'static [SourceKey]> = Some(crate::records::SOURCE_KEYS);
    type Settings = Settings;

    fn settings(env: &Env) -> Result<Settings, ConfigError> {
        Settings::from_env(env)
    }

    fn group_ids(settings: &Settings) -> GroupIds {
        GroupIds::from_source(settings.source_sets_group_ids())
    }

    async fn build(settings: Settings, started: Started) -> Result<Self, StartError> {
        Ok(Lambda {
            kept: started.kept(),
            handler: Handler::routed(settings, started.router),
        })
    }
}

impl Lambda {
    /// Forward one batch before the invocation's deadline (less
    /// `DEADLINE_MARGIN_MS`) and answer which records Lambda must deliver
    /// again. An event that cannot be read fails the invocation
    /// (`KinesisToSqs.InvalidEvent`) before anything is sent.
    ///
    /// The error stays an [`InvocationError`], whose `Into<Diagnostic>`
    /// gives Lambda its `errorType`: boxed into `lambda_runtime::Error`, it
    /// would be reported by its Rust type's name.
    pub async fn invoke(
        &self,
        event: LambdaEvent<Checked<Incoming>>,
    ) -> Result<KinesisEventResponse, InvocationError> {
        let LambdaEvent { payload, context } = event;
        let event = match payload.0 {
            Ok(incoming) => KinesisEvent::from(incoming),
            Err(why) => {
                let error = InvocationError::InvalidEvent(why);
                tracing::error!(error = %error, "failing the invocation");
                self.kept.flush();
                return Err(error);
            }
        };
        let deadline = self.kept.deadline(context.deadline);
        tracing::debug!(
            deadline_ms = context.deadline,
            left_ms = deadline
                .saturating_duration_since(tokio::time::Instant::now())
                .as_millis() as u64,
            "invocation"
        );
        let answer = self.handler.handle(event, Some(deadline)).await;
        self.kept.flush();
        Ok(answer?)
    }
}
