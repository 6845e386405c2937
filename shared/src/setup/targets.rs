//! The routing rules' extra target queues (`ROUTES`' `targets`): each one
//! found and read at cold start exactly as the default queue is (its limits,
//! FIFO or not, its deduplication), through the same client choice,
//! credentials and offload, so that a queue that does not exist, or that the
//! function may not read, stops the start naming the target rather than
//! failing its records later.

use crate::call::SqsTransport;
use crate::call::queue::QueueTarget;
use std::future::Future;

use crate::route::{Routes, SourceKey};
use crate::send::Forwarder;
use crate::setup::aws_names::region_of_queue_url;
use crate::setup::config::{Config, GroupIds};
use crate::setup::env::Env;
use crate::setup::error::{ConfigError, SetupError};

/// The function's `ROUTES`, read with the source keys it offers; `None`
/// (a function that offers the rules nothing to read, the
/// [`ColdStart`](crate::setup::startup::ColdStart) default) refuses a set
/// `ROUTES` rather than ignoring it.
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
                format!("unset: {service} does not take routing rules"),
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

/// One forwarder per extra target of `routes`, in their order, each made by
/// `connect` from the shared configuration with the target's queue
/// ([`crate::setup::startup::connect_router`] passes the one way a start
/// connects a queue). A FIFO target checks group ids as the default queue
/// does; a target that cannot be used fails naming it.
pub(crate) async fn connect_targets<F, Fut>(
    config: &Config,
    routes: &Routes,
    group_ids: GroupIds,
    connect: F,
) -> Result<Vec<Forwarder<SqsTransport>>, SetupError>
where
    F: Fn(Config) -> Fut,
    Fut: Future<Output = Result<Forwarder<SqsTransport>, SetupError>>,
{
    // The rules' group_id gives every message one, FIFO targets included.
    let ids = if routes.sets_group_ids() {
        GroupIds::FromSource
    } else {
        group_ids
    };
    let mut targets = Vec::with_capacity(routes.targets().len());
    for (name, url) in routes.targets() {
        let config = target_config(config, url);
        config
            .check_group_ids(ids)
            .map_err(|e| naming(name, e.into()))?;
        targets.push(connect(config).await.map_err(|e| naming(name, e))?);
    }
    Ok(targets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::SourceKey;

    #[test]
    fn a_function_offering_no_keys_refuses_rules_rather_than_ignore_them() {
        let env = Env::from_pairs(&[("ROUTES", r#"{"unmatched": "drop"}"#)]);
        let e = read_routes(&env, "some-function", None).expect_err("refused");
        assert_eq!(e.variable, "ROUTES");
        assert!(
            e.to_string()
                .contains("some-function does not take routing rules"),
            "{e}"
        );
        let blank = Env::from_pairs(&[("ROUTES", "  ")]);
        assert_eq!(read_routes(&blank, "some-function", None), Ok(None));
        let offered = read_routes(&env, "f", Some(&[SourceKey::PartitionKey]));
        assert!(matches!(offered, Ok(Some(_))), "{offered:?}");
    }
}
