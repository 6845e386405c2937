//! AWS settings for the clients: the function's own ([`own_sdk_config`]:
//! the standard settings, with the credentials Lambda puts in the
//! environment read from there), or the temporary credentials of a role the
//! forwarder assumes (`ASSUME_ROLE_ARN`).
//!
//! Lambda hands a function its credentials in the environment
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), where
//! the first link of aws-config's default chain, the environment provider,
//! finds them. Building the whole chain only to ask that link cost 88% of a
//! cold start's instructions (bench/results/profile-init.md): its web
//! identity link builds an STS client, and the first SDK client of a process
//! loads and parses every system root certificate. So when that link
//! answers, it is the provider, and the chain is not built; otherwise
//! (credentials from a profile, a web identity, a container or the instance)
//! the chain is, as before.
//!
//! The role is assumed with aws-config's own [`AssumeRoleProvider`], on top of
//! the function's own credentials, behind one cache of this module that every
//! SQS client built from the returned [`SdkConfig`] asks (the SDK client's
//! identity cache and the direct client's): it keeps the role's credentials
//! until 30 seconds before they expire, then one caller asks STS again. S3
//! calls (offloaded payloads, s3-to-sqs's object reads) keep the function's
//! own credentials.
//!
//! The role is assumed once at cold start, so that a role that cannot be
//! assumed stops the start with an error naming it instead of failing every
//! call later. Those first credentials are the cache's first, so a cold start
//! costs one `AssumeRole` call, not one per client.

use aws_config::environment::credentials::EnvironmentVariableCredentialsProvider;
use aws_config::sts::AssumeRoleProvider;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider, future};

use crate::send::codes::error_chain;
use crate::setup::config::{AssumeRole, Config};
use crate::setup::error::SetupError;

/// Load AWS settings from the environment (`AWS_REGION`, credentials,
/// `AWS_ENDPOINT_URL_*`, ...; [`own_sdk_config`]) and, when the
/// configuration names a role, switch the credentials to that role's.
pub async fn load_sdk_config(config: &Config) -> Result<SdkConfig, SetupError> {
    let base = own_sdk_config().await;
    match &config.assume_role {
        Some(role) => assume_role(base, role).await,
        None => Ok(base),
    }
}

/// The function's own AWS settings: aws-config's defaults
/// (`aws_config::load_defaults`), with the environment's credentials
/// provider in place of the default chain when the environment holds
/// credentials, which that chain would then return (module docs).
pub async fn own_sdk_config() -> SdkConfig {
    let loader = aws_config::defaults(BehaviorVersion::latest());
    let environment = EnvironmentVariableCredentialsProvider::new();
    if answers_now(&environment) {
        loader.credentials_provider(environment)
    } else {
        loader
    }
    .load()
    .await
}

/// Whether `provider` has credentials to give at once (the environment
/// provider reads its variables without waiting).
fn answers_now(provider: &impl ProvideCredentials) -> bool {
    matches!(
        futures_util::FutureExt::now_or_never(provider.provide_credentials()),
        Some(Ok(_))
    )
}

/// `base` with `role`'s credentials in place of its own. STS is called with
/// `base`'s credentials, region and endpoint. Fails, naming the role, when it
/// cannot be assumed.
pub async fn assume_role(base: SdkConfig, role: &AssumeRole) -> Result<SdkConfig, SetupError> {
    let mut builder = AssumeRoleProvider::builder(&role.role_arn)
        .session_name(&role.session_name)
        .configure(&base);
    if let Some(id) = &role.external_id {
        builder = builder.external_id(id);
    }
    let provider = builder.build().await;
    let first = provider
        .provide_credentials()
        .await
        .map_err(|e| SetupError::AssumeRole {
            role: role.role_arn.clone(),
            message: error_chain(&e),
        })?;
    tracing::info!(
        role = %role.role_arn,
        session = %role.session_name,
        expires = ?first.expiry(),
        "assumed role; its credentials sign the SQS calls"
    );
    let primed = Primed {
        current: tokio::sync::Mutex::new(first),
        provider,
    };
    Ok(base
        .into_builder()
        .credentials_provider(SharedCredentialsProvider::new(primed))
        .build())
}

/// The role's provider, shared by everything that signs as the role (the
/// SDK client's identity cache and the direct client's): it hands out the
/// credentials it holds, starting with those got at cold start, until they
/// are within [`crate::call::direct::credentials_cache::REFRESH_BEFORE`] of expiring;
/// then the first caller asks STS again while the others wait for that
/// answer. One `AssumeRole` per renewal, whichever client asks first.
#[derive(Debug)]
struct Primed {
    current: tokio::sync::Mutex<Credentials>,
    provider: AssumeRoleProvider,
}

impl ProvideCredentials for Primed {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        future::ProvideCredentials::new(async move {
            let mut current = self.current.lock().await;
            if crate::call::direct::credentials_cache::renewal_due(
                current.expiry(),
                std::time::SystemTime::now(),
            ) {
                *current = self.provider.provide_credentials().await?;
            }
            Ok(current.clone())
        })
    }
}
