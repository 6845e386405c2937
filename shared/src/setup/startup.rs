//! Cold start: connecting a forwarder to its queue ([`connect`] and its
//! variants), a Lambda function's whole start ([`start`]: configuration, logs
//! and metrics, the queue), and the `main` every function shares
//! ([`main`], [`ColdStart`]).
//!
//! Every function's `main.rs` has one shape (`Lambda` is the function
//! crate's own type: what it keeps between invocations, a [`ColdStart`]):
//!
//! ```ignore
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> ExitCode {
//!     startup::main(|f: &'static Lambda| invocations::run(service_fn(|e| f.invoke(e)))).await
//! }
//! ```
//!
//! (`event_reader::invocations`: the loop over the runtime API; kinesis-to-sqs
//! and apigw-to-sqs use its `run_read_once`), and its cold start one order, which [`main`] runs: the function's own
//! settings ([`ColdStart::settings`]), the shared start ([`start`], with
//! [`ColdStart::group_ids`]), then the function built on both
//! ([`ColdStart::build`]), keeping the forwarder in its handler and the rest
//! in [`Kept`].
//!
//! The runtime's flavor is each function's own; all four run on one thread
//! (`#[tokio::main(flavor = "current_thread")]`): their work is I/O, and a
//! multi-thread runtime spent more CPU handing tasks between its threads
//! than it saved (`bench/notes/2026-12-01-current-thread-runtime.md`).
//!
//! A start that fails is reported to Lambda's runtime API as an init error
//! of the function's own type ([`crate::setup::init_error`]:
//! `<ColdStart::ERROR_PREFIX>.InvalidConfiguration` or `.StartFailed`), then
//! ends the process with [`INIT_FAILED`] (2) and the reason on stderr.

#[cfg(feature = "lambda")]
use std::fmt::Display;
#[cfg(feature = "lambda")]
use std::future::Future;
#[cfg(feature = "lambda")]
use std::process::ExitCode;
#[cfg(feature = "lambda")]
use std::time::Duration;

use crate::call::SqsTransport;
#[cfg(feature = "lambda")]
use crate::observe::{self, Observability};
#[cfg(feature = "lambda")]
use crate::route::SourceKey;
use crate::route::{Router, Routes};
use crate::send::Forwarder;
use crate::setup::client::{SqsClientFor, sqs_client_for};
use crate::setup::config::{Config, GroupIds};
#[cfg(feature = "lambda")]
use crate::setup::env::Env;
#[cfg(feature = "lambda")]
use crate::setup::error::ConfigError;
use crate::setup::error::SetupError;
use crate::setup::targets;

/// Set up a forwarder at cold start: check the configuration, load AWS
/// settings from the environment (`AWS_REGION`, `AWS_ENDPOINT_URL_SQS`, ...),
/// find the queue and read its limits. Under `OVERSIZE_POLICY=offload` the
/// forwarder gets an S3 payload store for `OFFLOAD_BUCKET` (cargo feature
/// `s3`; `AWS_ENDPOINT_URL_S3` for a local endpoint).
///
/// `group_ids` says whether the caller's messages carry their own FIFO group
/// ids; if not, a FIFO target needs `MESSAGE_GROUP_ID`.
pub async fn connect(
    config: &Config,
    group_ids: GroupIds,
) -> Result<Forwarder<SqsTransport>, SetupError> {
    let (_, forwarder) = load_and_connect(config, group_ids).await?;
    Ok(forwarder)
}

/// Like [`connect`], with AWS settings of the caller's making, used as they
/// are (for an assumed role, pass them through
/// [`crate::setup::credentials::assume_role`] first). The client's region is
/// [`crate::setup::client::sqs_region`]'s. Under `OVERSIZE_POLICY=offload` the S3
/// payload store uses the same settings ([`connect`] instead uses the
/// function's own credentials for S3 when it assumes a role).
pub async fn connect_sdk(
    sdk: &aws_config::SdkConfig,
    config: &Config,
    group_ids: GroupIds,
) -> Result<Forwarder<SqsTransport>, SetupError> {
    config.check_group_ids(group_ids)?;
    forwarder(sqs_client_for(sdk, config)?, Some(sdk), Some(sdk), config).await
}

/// Like [`connect`], with a client of the caller's making. It attaches no
/// payload store: under `OVERSIZE_POLICY=offload`, add one with
/// [`Forwarder::with_payload_store`].
pub async fn connect_with(
    client: aws_sdk_sqs::Client,
    config: &Config,
    group_ids: GroupIds,
) -> Result<Forwarder<SqsTransport>, SetupError> {
    config.check_group_ids(group_ids)?;
    forwarder(client, None, None, config).await
}

/// [`connect`], also returning the AWS settings it loaded: the assumed role
/// sends to the queue; offloaded payloads go to the offload bucket with the
/// function's own credentials, which the template grants `s3:PutObject` on
/// its prefix.
async fn load_and_connect(
    config: &Config,
    group_ids: GroupIds,
) -> Result<(aws_config::SdkConfig, Forwarder<SqsTransport>), SetupError> {
    config.check_group_ids(group_ids)?;
    let sdk = crate::setup::credentials::load_sdk_config(config).await?;
    let s3 = offload_sdk(&sdk, config).await;
    let forwarder = forwarder(sqs_client_for(&sdk, config)?, Some(&sdk), Some(&s3), config).await?;
    Ok((sdk, forwarder))
}

/// `routes` over `default` (the forwarder to `config`'s queue) and one
/// forwarder per extra target, each connected as the default was, with the
/// same AWS settings `sdk` ([`crate::setup::targets`]). Without rules,
/// `default` alone. A target that cannot be used fails naming it.
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
    let targets = targets::connect_targets(config, &routes, group_ids, |target| async move {
        connect_target(sdk, &target).await
    })
    .await?;
    Ok(Router::new(routes, default, targets)?)
}

/// One extra target's forwarder (`config` is the shared configuration with
/// the target's queue): connected as the default queue is, with the same
/// AWS settings, and under `OVERSIZE_POLICY=offload` the same payload store
/// (the function's own credentials when it assumes a role).
pub(crate) async fn connect_target(
    sdk: &aws_config::SdkConfig,
    config: &Config,
) -> Result<Forwarder<SqsTransport>, SetupError> {
    let s3 = offload_sdk(sdk, config).await;
    forwarder(sqs_client_for(sdk, config)?, Some(sdk), Some(&s3), config).await
}

/// The AWS settings of the offload bucket's client: the function's own
/// credentials when it assumes a role for the queue (the template grants
/// `s3:PutObject` on its prefix to the function), else `sdk`.
async fn offload_sdk(sdk: &aws_config::SdkConfig, config: &Config) -> aws_config::SdkConfig {
    match (&config.assume_role, &config.offload) {
        (Some(_), Some(_)) => crate::setup::credentials::own_sdk_config().await,
        _ => sdk.clone(),
    }
}

/// The steps of every start, in order: the client chosen and the queue
/// found and read through it ([`crate::call::transport()`]), the send
/// settings made ([`Config::send_settings`]), the forwarder built, and under
/// `OVERSIZE_POLICY=offload` its S3 payload store attached. `sdk`: the AWS
/// settings `client` was built from, when there are any (`SQS_CLIENT=direct`
/// needs them); `s3`: those of the payload store (none: no store).
async fn forwarder(
    client: impl Into<SqsClientFor>,
    sdk: Option<&aws_config::SdkConfig>,
    s3: Option<&aws_config::SdkConfig>,
    config: &Config,
) -> Result<Forwarder<SqsTransport>, SetupError> {
    let client = client.into();
    let region = client.region().map(str::to_owned);
    let (transport, queue) =
        crate::call::transport(client, sdk, config.sqs_client, &config.queue).await?;
    let (settings, rules) = config.send_settings(&queue);
    tracing::info!(
        queue = %queue.url,
        region = ?region,
        fifo = queue.fifo,
        max_message_bytes = settings.limits.max_message_bytes,
        queue_max_message_bytes = ?queue.max_message_bytes,
        max_request_bytes = settings.limits.max_request_bytes,
        offload_bucket = config.offload.as_ref().map(|o| o.bucket.as_str()),
        offload_threshold = config
            .offload
            .as_ref()
            .map(|o| o.settings.threshold_for(settings.limits.largest_message())),
        offload_always = config.offload.as_ref().is_some_and(|o| o.settings.always),
        "forwarder ready"
    );
    let forwarder = Forwarder::new(transport, settings, rules);
    match s3 {
        Some(s3) => with_offload_store(forwarder, s3, config),
        None => Ok(forwarder),
    }
}

/// Under `OVERSIZE_POLICY=offload`, `forwarder` with an S3 payload store for
/// `OFFLOAD_BUCKET`, its client made from `sdk`.
fn with_offload_store(
    forwarder: Forwarder<SqsTransport>,
    sdk: &aws_config::SdkConfig,
    config: &Config,
) -> Result<Forwarder<SqsTransport>, SetupError> {
    #[cfg(not(feature = "s3"))]
    let _ = sdk;
    match &config.offload {
        None => Ok(forwarder),
        #[cfg(feature = "s3")]
        Some(o) => Ok(forwarder.with_payload_store(
            crate::send::offload::S3PayloadStore::on_first_use(
                sdk,
                o.force_path_style,
                o.bucket.clone(),
            ),
        )),
        #[cfg(not(feature = "s3"))]
        Some(_) => Err(SetupError::Config(crate::setup::error::ConfigError::new(
            "OVERSIZE_POLICY",
            "offload",
            "fail or drop: this build of sqs-forwarder has no S3 support (cargo feature s3)",
        ))),
    }
}

/// What a function keeps between invocations.
#[cfg(feature = "lambda")]
#[derive(Debug)]
pub struct Started {
    /// The shared configuration.
    pub config: Config,
    /// The forwarder to the target queue.
    pub forwarder: Forwarder<SqsTransport>,
    /// The routing rules over this forwarder and their extra targets'
    /// (without `ROUTES`: this forwarder alone); [`cold_start`] connects
    /// the targets ([`crate::setup::targets`]).
    pub router: Router<SqsTransport>,
    /// Logs and metrics.
    pub observability: Observability,
    /// The AWS settings the SQS client was built from (the function's
    /// credentials, or the role's from `ASSUME_ROLE_ARN`), for any other
    /// client the function needs to act as the same principal.
    pub sdk: aws_config::SdkConfig,
}

#[cfg(feature = "lambda")]
impl Started {
    /// The margin kept before the Lambda deadline.
    pub fn margin(&self) -> Duration {
        self.config.deadline_margin
    }

    /// What a function keeps beside its handler (see [`Kept`]).
    pub fn kept(&self) -> Kept {
        Kept {
            observability: self.observability,
            margin: self.margin(),
        }
    }
}

/// What every function keeps between invocations beside its handler: the
/// margin kept before each invocation's deadline, and the metrics flushed
/// after each.
#[cfg(feature = "lambda")]
#[derive(Debug, Clone, Copy)]
pub struct Kept {
    observability: Observability,
    margin: Duration,
}

#[cfg(feature = "lambda")]
impl Kept {
    /// The time to stop by: the invocation's deadline (milliseconds since
    /// the epoch, as the runtime API gives it) less the margin.
    pub fn deadline(&self, deadline_epoch_ms: u64) -> tokio::time::Instant {
        crate::send::deadline_from_epoch_millis(deadline_epoch_ms, self.margin)
    }

    /// The margin kept before the Lambda deadline (`DEADLINE_MARGIN_MS`).
    pub fn margin(&self) -> Duration {
        self.margin
    }

    /// Write the invocation's metrics (one EMF line), after each invocation.
    pub fn flush(&self) {
        self.observability.flush();
    }
}

/// Read the shared configuration, install logs and metrics (the metrics
/// carry `service` as their `Service` dimension), and connect to the queue.
/// `group_ids`: whether this function's messages carry their own FIFO group
/// ids.
#[cfg(feature = "lambda")]
pub async fn start(service: &str, group_ids: GroupIds) -> Result<Started, SetupError> {
    let config = Config::from_env()?;
    start_with(config, service, group_ids).await
}

/// [`start`] with a configuration the caller has read.
#[cfg(feature = "lambda")]
pub async fn start_with(
    config: Config,
    service: &str,
    group_ids: GroupIds,
) -> Result<Started, SetupError> {
    #[cfg(feature = "mimalloc")]
    crate::setup::allocator::configure();
    let observability = observe::init(config.log_format, &config.metrics_namespace, service);
    let (sdk, forwarder) = load_and_connect(&config, group_ids).await?;
    Ok(Started {
        config,
        router: Router::single(forwarder.clone()),
        forwarder,
        observability,
        sdk,
    })
}

/// Why a function could not start: its own settings, the shared start, or
/// what it builds on them.
pub type StartError = Box<dyn std::error::Error + Send + Sync>;

/// The exit code of a failed cold start, the same for every function.
#[cfg(feature = "lambda")]
pub const INIT_FAILED: u8 = 2;

/// A Lambda function: what it builds at cold start and keeps between
/// invocations.
#[cfg(feature = "lambda")]
pub trait ColdStart: Sized + Sync + 'static {
    /// The service name: the `Service` dimension of the metrics and the
    /// prefix of a failed start's message.
    const SERVICE: &'static str;

    /// The prefix of the function's Lambda error types (`S3ToSqs`): every
    /// `errorType` it reports is `<prefix>.<kind>`, a failed start's
    /// included ([`crate::setup::init_error`]).
    const ERROR_PREFIX: &'static str;

    /// Log directives (`target=level`) held whatever `RUST_LOG` says, for a
    /// dependency that logs what must not be shown; [`main`] adds them
    /// before anything installs the log filter
    /// ([`observe::add_directives`]).
    const LOG_DIRECTIVES: &'static [&'static str] = &[];

    /// The source keys its records offer the routing rules (`ROUTES`);
    /// `None`: the function does not route, and refuses a set `ROUTES`.
    const SOURCE_KEYS: Option<&'static [SourceKey]> = None;

    /// The function's own settings, read before anything else.
    type Settings;

    /// Read the function's own settings from `env`. A bad value fails
    /// naming the variable, the value and what is allowed.
    fn settings(env: &Env) -> Result<Self::Settings, ConfigError>;

    /// Whether the function's messages carry their own FIFO group ids
    /// under these settings (if not, a FIFO target needs
    /// `MESSAGE_GROUP_ID`).
    fn group_ids(settings: &Self::Settings) -> GroupIds;

    /// Build the function on its settings and the shared start.
    fn build(
        settings: Self::Settings,
        started: Started,
    ) -> impl Future<Output = Result<Self, StartError>>;
}

/// A function's whole cold start: its settings, the shared start ([`start`]),
/// then [`ColdStart::build`].
#[cfg(feature = "lambda")]
pub async fn cold_start<F: ColdStart>(env: &Env<'_>) -> Result<F, StartError> {
    let settings = F::settings(env)?;
    let routes = targets::read_routes(env, F::SERVICE, F::SOURCE_KEYS)?;
    let group_ids = F::group_ids(&settings);
    let mut started = start(F::SERVICE, group_ids).await?;
    if routes.is_some() {
        started.router = connect_router(
            &started.sdk,
            &started.config,
            started.forwarder.clone(),
            routes,
            group_ids,
        )
        .await?;
    }
    F::build(settings, started).await
}

/// The `main` of every function: start `F` from the process environment,
/// then hand it to `run` (the Lambda runtime's loop) for the rest of the
/// process's life.
///
/// A start that fails logs why, prints `<service>: cannot start: <reason>`
/// to stderr, reports the reason to the runtime API as an init error
/// (`<prefix>.InvalidConfiguration` for a bad value, `<prefix>.StartFailed`
/// otherwise; only when `AWS_LAMBDA_RUNTIME_API` is set) and ends with
/// [`INIT_FAILED`]. A runtime that stops with an error ends with exit code 1.
#[cfg(feature = "lambda")]
pub async fn main<F, R, E>(run: impl FnOnce(&'static F) -> R) -> ExitCode
where
    F: ColdStart,
    R: Future<Output = Result<(), E>>,
    E: Display,
{
    observe::add_directives(F::LOG_DIRECTIVES);
    let function = match cold_start::<F>(&Env::process()).await {
        // Kept for the life of the process, as the runtime's loop is.
        Ok(f) => Box::leak(Box::new(f)),
        Err(e) => {
            let error_type = crate::setup::init_error::error_type(F::ERROR_PREFIX, &*e);
            tracing::error!(error = %e, error_type, "cold start failed");
            eprintln!("{}: cannot start: {e}", F::SERVICE);
            if let Ok(api) = std::env::var("AWS_LAMBDA_RUNTIME_API") {
                let message = e.to_string();
                if let Err(why) =
                    crate::setup::init_error::report(&api, &error_type, &message).await
                {
                    eprintln!("{}: cannot report the init error: {why}", F::SERVICE);
                }
            }
            return ExitCode::from(INIT_FAILED);
        }
    };
    match run(function).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "the Lambda runtime stopped");
            eprintln!("{}: {e}", F::SERVICE);
            ExitCode::FAILURE
        }
    }
}
