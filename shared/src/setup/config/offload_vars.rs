//! The `OFFLOAD_*` variables: where and when payloads go to S3 under
//! `OVERSIZE_POLICY=offload`.

use crate::send::OversizePolicy;
use crate::send::offload::OffloadSettings;
use crate::setup::aws_names;
use crate::setup::env::Env;
use crate::setup::error::ConfigError;

use super::OffloadConfig;
use super::variables::{
    OFFLOAD_ALWAYS, OFFLOAD_BUCKET, OFFLOAD_FORCE_PATH_STYLE, OFFLOAD_KEY_PREFIX,
    OFFLOAD_SIZE_ATTRIBUTE, OFFLOAD_THRESHOLD_BYTES,
};

/// All read and checked whatever the policy; the ones that only mean
/// something under `offload` are refused under another.
pub(super) fn read(
    env: &Env,
    oversize: OversizePolicy,
) -> Result<Option<OffloadConfig>, ConfigError> {
    let bucket = env.value(&OFFLOAD_BUCKET);
    if let Some(b) = &bucket
        && !aws_names::is_bucket_name(b)
    {
        return Err(OFFLOAD_BUCKET.error(b));
    }
    let key_prefix = env.text(&OFFLOAD_KEY_PREFIX);
    if !aws_names::is_key_prefix(&key_prefix) {
        return Err(OFFLOAD_KEY_PREFIX.error(&key_prefix));
    }
    let threshold = env.number(&OFFLOAD_THRESHOLD_BYTES)?.map(|v| v as usize);
    let always = env.flag(&OFFLOAD_ALWAYS)?;
    let size_attribute = env.choice(&OFFLOAD_SIZE_ATTRIBUTE)?;
    let force_path_style = env.flag(&OFFLOAD_FORCE_PATH_STYLE)?;
    if oversize != OversizePolicy::Offload {
        let only = "only with OVERSIZE_POLICY=offload";
        if let Some(t) = threshold {
            return Err(ConfigError::new(
                OFFLOAD_THRESHOLD_BYTES.name,
                &t.to_string(),
                only,
            ));
        }
        if always {
            return Err(ConfigError::new(OFFLOAD_ALWAYS.name, "true", only));
        }
        return Ok(None);
    }
    let Some(bucket) = bucket else {
        return Err(ConfigError::new(
            OFFLOAD_BUCKET.name,
            "",
            "the S3 bucket for offloaded payloads: OVERSIZE_POLICY is offload",
        ));
    };
    Ok(Some(OffloadConfig {
        bucket,
        settings: OffloadSettings {
            threshold,
            always,
            key_prefix,
            size_attribute,
        },
        force_path_style,
    }))
}
