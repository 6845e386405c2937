//! The routing rules' extra target queues (`ROUTES`' `targets`): each one
//! found and read at cold start exactly as the default queue is (its limits,
//! FIFO or not, its deduplication), through the same client choice,
//! credentials and offload, so that a queue that does not exist, or that the
//! function may not read, stops the start naming the target rather than
//! failing its records later.

use crate::call::SqsTransport;
use crate::call::queue::QueueTarget;
use crate::route::{Router, Routes, SourceKey};
use crate::send::Forwarder;
use crate::setup::aws_names::region_of_queue_url;
use crate::setup::config::{Config, GroupIds};
use crate::setup::env::Env;
use crate::setup::error::{ConfigError, SetupError};
use crate::setup::startup::{StartError, Started};

/// The function's `ROUTES`, read with the source keys it offers; `None`
/// (the function does not route yet) refuses a set `ROUTES` rather than
/// ignoring it.
pub fn read_routes(
    env: &Env,
    service: &str,
    offered: Option<&[SourceKey]>,
) -> Result<Option<Routes>, ConfigError> {
    match offered {
        Some(keys) => Routes::from_env(env, keys),
        None => match env.get(crate::route::ROUTES.name) {
            Some(value) if !value.trim().is_empty() => Err(ConfigError::new(
                crate::route::ROUTES.name,
                "(set)",
                format!("unset: {service} does not take routing rules yet"),
            )),
            _ => Ok(None),
        },
    }
}

/// The configuration of one extra target: the shared one, with the target's
/// queue. Its region is the one its URL names (`SQS_REGION` is the default
/// queue's); a URL that names none (a local endpoint) keeps the default's.
fn target_config(config: &Config, url: &str) -> Config {
    let sqs_region = match region_of_queue_url(url) {
        Some(_) => None,
        None => config.sqs_region.clone(),
    };
    Config {
        queue: QueueTarget::Url(url.to_owned()),
        sqs_region,
        ..config.clone()
    }
}

/// Name the routing target in a start-up error about it.
fn naming(name: &str, error: SetupError) -> SetupError {
    match error {
        SetupError::Queue {
            queue,
            code,
            message,
        } => SetupError::Queue {
            queue: format!("{queue} (ROUTES target {name:?})"),
            code,
            message,
        },
        SetupError::Config(mut e) => {
            e.allowed = format!("{} (for ROUTES target {name:?})", e.allowed);
            SetupError::Config(e)
        }
        other => other,
    }
}

/// The router of a started function ([`connect_router`] with its parts).
pub async fn router_of(
    started: &Started,
    routes: Option<Routes>,
    group_ids: GroupIds,
) -> Result<Router<SqsTransport>, StartError> {
    connect_router(
        &started.sdk,
        &started.config,
        started.forwarder.clone(),
        routes,
        group_ids,
    )
    .await
}

/// `routes` over `default` (the forwarder to `config`'s queue) and one
/// forwarder per extra target, each connected as the default was, with the
/// same AWS settings `sdk` (a FIFO target needs group ids as the default
/// does). Without rules, `default` alone. A target that cannot be used
/// fails naming it.
pub async fn connect_router(
    sdk: &aws_config::SdkConfig,
    config: &Config,
    default: Forwarder<SqsTransport>,
    routes: Option<Routes>,
    group_ids: GroupIds,
) -> Result<Router<SqsTransport>, StartError> {
    let Some(routes) = routes else {
        return Ok(Router::single(default));
    };
    // The rules' group_id gives every message one, FIFO targets included.
    let ids = if routes.sets_group_ids() {
        GroupIds::FromSource
    } else {
        group_ids
    };
    let mut targets: Vec<Forwarder<SqsTransport>> = Vec::with_capacity(routes.targets().len());
    for (name, url) in routes.targets() {
        let config = target_config(config, url);
        config
            .check_group_ids(ids)
            .map_err(|e| naming(name, e.into()))?;
        let forwarder = crate::setup::startup::connect_target(sdk, &config)
            .await
            .map_err(|e| naming(name, e))?;
        targets.push(forwarder);
    }
    Ok(Router::new(routes, default, targets)?)
}
