//! The function as Lambda runs it: started once per cold start
//! ([`ColdStart`]), then one [`Lambda::invoke`] per invocation (a scheduled
//! poll or an Amazon MQ batch), metrics flushed after each.

use lambda_runtime::LambdaEvent;
use serde_json::Value;
use sqs_forwarder::route::SourceKey;
use sqs_forwarder::setup::startup::{ColdStart, Kept, StartError, Started};
use sqs_forwarder::{ConfigError, Env, GroupIds, SqsTransport};

use crate::{Handler, HandlerError, SERVICE, Settings};

/// What the function keeps between invocations.
pub struct Lambda {
    handler: Handler<SqsTransport>,
    kept: Kept,
}

impl ColdStart for Lambda {
    const SERVICE: &'static str = SERVICE;
    const ERROR_PREFIX: &'static str = crate::ERROR_PREFIX;
    // Before any connection: the AMQP client's frame dumps hold the login.
    const LOG_DIRECTIVES: &'static [&'static str] = crate::broker::QUIET_AMQP;
    const SOURCE_KEYS: Option<&'static [SourceKey]> = Some(crate::routing::SOURCE_KEYS);
    type Settings = Settings;

    /// This function's own settings come first (no network needed).
    fn settings(env: &Env) -> Result<Settings, ConfigError> {
        Settings::from_env(env)
    }

    /// Group ids always come from the messages (routing key, header or the
    /// queue name), so a FIFO target needs no `MESSAGE_GROUP_ID`.
    fn group_ids(_: &Settings) -> GroupIds {
        GroupIds::FromSource
    }

    async fn build(settings: Settings, started: Started) -> Result<Self, StartError> {
        let secrets_client = match settings
            .broker
            .as_ref()
            .and_then(|b| b.password_secret.as_ref())
        {
            Some(_) => {
                let sdk = sqs_forwarder::setup::credentials::own_sdk_config().await;
                Some(aws_sdk_secretsmanager::Client::new(&sdk))
            }
            None => None,
        };
        let kept = started.kept();
        let handler = Handler::routed(settings, started.router, kept.margin(), secrets_client)?;
        Ok(Lambda { handler, kept })
    }
}

impl Lambda {
    /// One invocation, until its deadline (less the margins).
    ///
    /// The error stays a [`HandlerError`], whose `Into<Diagnostic>` gives
    /// Lambda its `errorType` (`RabbitmqToSqs.BadEvent`, ...): boxed into
    /// `lambda_runtime::Error`, it would be reported by its Rust type's name.
    pub async fn invoke(&self, event: LambdaEvent<Value>) -> Result<Value, HandlerError> {
        // Boxed: the poll's future is deep (the AMQP client, the SQS SDK), too deep for
        // the compiler's layout query when inlined into the runtime's.
        let result = Box::pin(self.handler.handle(event.payload, event.context.deadline)).await;
        if let Err(e) = &result {
            tracing::error!(error = %e, "invocation failed");
        }
        self.kept.flush();
        result
    }
}
