//! The function as Lambda runs it: started once per cold start
//! ([`ColdStart`]), then one [`Lambda::invoke`] per event, metrics flushed
//! after each.

use lambda_runtime::LambdaEvent;
use serde_json::Value;
use sqs_forwarder::route::SourceKey;
use sqs_forwarder::setup::on_first_use::OnFirstUse;
use sqs_forwarder::setup::startup::{ColdStart, Kept, StartError, Started};
use sqs_forwarder::{ConfigError, Env, GroupIds, SqsTransport};

use std::sync::Arc;

use crate::continuation::{LambdaInvoke, SelfInvoke, lambda_client};
use crate::event::Event;
use crate::{Handler, HandlerError, SERVICE, Settings, reader_sdk, s3_client};

/// What the function keeps between invocations.
#[derive(Debug)]
pub struct Lambda {
    handler: Handler<SqsTransport>,
    kept: Kept,
}

impl ColdStart for Lambda {
    const SERVICE: &'static str = SERVICE;
    const ERROR_PREFIX: &'static str = crate::ERROR_PREFIX;
    const SOURCE_KEYS: Option<&'static [SourceKey]> = Some(crate::routing::SOURCE_KEYS);
    type Settings = Settings;

    fn settings(env: &Env) -> Result<Settings, ConfigError> {
        Settings::from_env(env)
    }

    fn group_ids(settings: &Settings) -> GroupIds {
        GroupIds::from_source(settings.source_sets_group_ids())
    }

    async fn build(settings: Settings, started: Started) -> Result<Self, StartError> {
        // Objects are read with the function's own credentials:
        // ASSUME_ROLE_ARN is for the queue only. The client is built on the
        // first object read (lines mode), not here: building the first SDK
        // client loads every system root certificate.
        let reader = reader_sdk(&started.sdk, started.config.assume_role.is_some()).await;
        let force_path_style = settings.s3_force_path_style;
        // The function invokes itself with its own credentials too; the
        // Lambda client is built on the first hand-over.
        let invoker = settings.continuation.function_name.clone().map(|name| {
            let own = reader.clone();
            let client = OnFirstUse::new(move || lambda_client(&own));
            Arc::new(LambdaInvoke::new(client, name)) as Arc<dyn SelfInvoke>
        });
        let s3 = OnFirstUse::new(move || s3_client(&reader, force_path_style));
        let kept = started.kept();
        let mut handler = Handler::routed(settings, started.router, s3);
        if let Some(invoker) = invoker {
            handler = handler.with_continuation(invoker);
        }
        Ok(Lambda { kept, handler })
    }
}

impl Lambda {
    /// Forward one event before the invocation's deadline (less
    /// `DEADLINE_MARGIN_MS`); the answer is the event's [`crate::Report`].
    ///
    /// The event is read as [`Event`]: borrowed from the invocation's body,
    /// by serde_json without lambda_runtime's per-field path tracking. The
    /// error stays a [`HandlerError`], whose `Into<Diagnostic>` gives Lambda
    /// its `errorType` (`S3ToSqs.InvalidEvent`, `S3ToSqs.NotForwarded`):
    /// boxed into `lambda_runtime::Error`, it would be reported by its Rust
    /// type's name.
    pub async fn invoke(&self, event: LambdaEvent<Event>) -> Result<Value, HandlerError> {
        let deadline = self.kept.deadline(event.context.deadline);
        let result = self
            .handler
            .handle_read(event.payload.0, Some(deadline))
            .await;
        self.kept.flush();
        result.map(|report| serde_json::to_value(report).unwrap_or(Value::Null))
    }
}
