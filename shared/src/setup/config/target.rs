//! Where to send, and as whom: the queue (`QUEUE_URL` or `QUEUE_NAME`), the
//! client's region (`SQS_REGION`) and the role to assume (`ASSUME_ROLE_*`).

use crate::setup::aws_names;
use crate::setup::env::Env;
use crate::setup::error::ConfigError;

use super::variables::{
    ASSUME_ROLE_ARN, ASSUME_ROLE_EXTERNAL_ID, ASSUME_ROLE_SESSION_NAME, QUEUE_NAME,
    QUEUE_OWNER_ACCOUNT_ID, QUEUE_URL, SQS_REGION,
};
use super::{AssumeRole, QueueTarget};

/// `QUEUE_URL`, or `QUEUE_NAME` and `QUEUE_OWNER_ACCOUNT_ID`.
pub(super) fn queue(env: &Env) -> Result<QueueTarget, ConfigError> {
    let queue = match (env.value(&QUEUE_URL), env.value(&QUEUE_NAME)) {
        (Some(url), None) => {
            if !aws_names::is_queue_url(&url) {
                return Err(QUEUE_URL.error(&url));
            }
            QueueTarget::Url(url)
        }
        (None, Some(name)) => {
            if !aws_names::is_queue_name(&name) {
                return Err(QUEUE_NAME.error(&name));
            }
            let owner = env.value(&QUEUE_OWNER_ACCOUNT_ID);
            if let Some(o) = &owner
                && !aws_names::is_account_id(o)
            {
                return Err(QUEUE_OWNER_ACCOUNT_ID.error(o));
            }
            QueueTarget::Name {
                name,
                owner_account_id: owner,
            }
        }
        (Some(url), Some(_)) => {
            return Err(ConfigError::new(
                QUEUE_URL.name,
                &url,
                "either QUEUE_URL or QUEUE_NAME, not both",
            ));
        }
        (None, None) => {
            return Err(ConfigError::new(
                QUEUE_URL.name,
                "",
                "the target queue's URL (or set QUEUE_NAME, with QUEUE_OWNER_ACCOUNT_ID for a queue in another account)",
            ));
        }
    };
    if matches!(queue, QueueTarget::Url(_))
        && let Some(o) = env.value(&QUEUE_OWNER_ACCOUNT_ID)
    {
        return Err(ConfigError::new(
            QUEUE_OWNER_ACCOUNT_ID.name,
            &o,
            "only with QUEUE_NAME (a QUEUE_URL already names the account)",
        ));
    }
    Ok(queue)
}

/// `SQS_REGION`.
pub(super) fn region(env: &Env) -> Result<Option<String>, ConfigError> {
    let region = env.value(&SQS_REGION);
    if let Some(r) = &region
        && !aws_names::is_region_name(r)
    {
        return Err(SQS_REGION.error(r));
    }
    Ok(region)
}

/// `ASSUME_ROLE_ARN` and its companions, checked against what STS accepts.
pub(super) fn assume_role(env: &Env) -> Result<Option<AssumeRole>, ConfigError> {
    let external_id = env.value(&ASSUME_ROLE_EXTERNAL_ID);
    let Some(role_arn) = env.value(&ASSUME_ROLE_ARN) else {
        let only = "only with ASSUME_ROLE_ARN";
        if let Some(v) = env.raw(ASSUME_ROLE_SESSION_NAME.name) {
            return Err(ConfigError::new(ASSUME_ROLE_SESSION_NAME.name, &v, only));
        }
        if let Some(v) = external_id {
            return Err(ConfigError::new(ASSUME_ROLE_EXTERNAL_ID.name, &v, only));
        }
        return Ok(None);
    };
    if !aws_names::is_role_arn(&role_arn) {
        return Err(ASSUME_ROLE_ARN.error(&role_arn));
    }
    let session_name = env.text(&ASSUME_ROLE_SESSION_NAME);
    if !aws_names::is_session_name(&session_name) {
        return Err(ASSUME_ROLE_SESSION_NAME.error(&session_name));
    }
    if let Some(id) = &external_id
        && !aws_names::is_external_id(id)
    {
        return Err(ASSUME_ROLE_EXTERNAL_ID.error(id));
    }
    Ok(Some(AssumeRole {
        role_arn,
        session_name,
        external_id,
    }))
}
