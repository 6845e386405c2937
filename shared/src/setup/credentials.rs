//! AWS settings for the clients: the standard chain, or the temporary
//! credentials of a role the forwarder assumes (`ASSUME_ROLE_ARN`).
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

use aws_config::sts::AssumeRoleProvider;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider, future};

use crate::send::codes::error_chain;
use crate::setup::config::{AssumeRole, Config};
use crate::setup::error::SetupError;

/// Load AWS settings from the environment (`AWS_REGION`, credentials,
/// `AWS_ENDPOINT_URL_*`, ...) and, when the configuration names a role,
/// switch the credentials to that role's.
pub async fn load_sdk_config(config: &Config) -> Result<SdkConfig, SetupError> {
    let base = aws_config::load_defaults(BehaviorVersion::latest()).await;
    match &config.assume_role {
        Some(role) => assume_role(base, role).await,
        None => Ok(base),
    }
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
