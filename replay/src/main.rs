//! `replay`: the on-failure queue back into the target queue. See the
//! crate's README for what it does and the variables it reads.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use replay::report::{Progress, Totals};
use replay::routes::{self, RouteFiles};
use replay::stream::Streams;
use replay::{Options, Replayer, SERVICE, dry_run};
use sqs_forwarder::{Env, GroupIds, QueueReader, QueueTarget, Transport, setup::startup};

/// Replay what the forwarder gave up on: take each entry of the on-failure
/// queue (a Kinesis range, an S3 event), send what it stands for to the
/// target queue as the function would have, and delete the entry only when
/// all of it was sent.
///
/// The target queue, role and offload settings are the functions' own
/// variables (QUEUE_URL, ASSUME_ROLE_ARN, OVERSIZE_POLICY, AGGREGATE, ...;
/// and kinesis-to-sqs's and s3-to-sqs's, such as BODY_FORMAT or MODE): set
/// them as the stack sets them. Routing rules (ROUTES) are applied as the
/// functions apply them: give each function's document (--kinesis-routes,
/// --s3-routes, or --routes for both). Exit status: 0 when every entry taken was
/// replayed, 1 when some stay in the queue (failed, expired, unreadable,
/// of another source, interrupted, the on-failure queue unreadable
/// mid-way), 2 when it cannot start (a bad variable, the target or the
/// on-failure queue unreachable).
#[derive(Debug, Parser)]
#[command(name = "replay", version)]
struct Args {
    /// The on-failure queue's URL (the stack's FailureQueueUrl output).
    #[arg(long, env = "FAILURE_QUEUE_URL", value_name = "URL")]
    failure_queue: String,
    /// Send nothing and delete nothing: read every entry and its records,
    /// map them, and count what would be sent.
    #[arg(long)]
    dry_run: bool,
    /// Stop after this many entries.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    limit: Option<u64>,
    /// Delete an entry whose range the stream no longer has (past its
    /// retention) once the rest of it was sent; by default it is kept and
    /// reported at every run.
    #[arg(long)]
    delete_expired: bool,
    /// How long an entry being replayed stays hidden from other readers, in
    /// seconds. A replay that is killed leaves its entries hidden this long.
    #[arg(long, value_name = "SECONDS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..=43_200))]
    visibility_timeout: u64,
    /// Kinesis records per GetRecords call (and per page sent).
    #[arg(long, value_name = "N", default_value_t = 10_000,
          value_parser = clap::value_parser!(i32).range(1..=10_000))]
    records_per_call: i32,
    /// The routing rules (a file holding the ROUTES document) of both
    /// functions, when they take the same; else the variable ROUTES.
    #[arg(long, value_name = "FILE")]
    routes: Option<PathBuf>,
    /// kinesis-to-sqs's routing rules (the stack's KinesisRoutes), for
    /// Kinesis ranges; else the variable KINESIS_ROUTES, else --routes.
    #[arg(long, value_name = "FILE")]
    kinesis_routes: Option<PathBuf>,
    /// s3-to-sqs's routing rules (the stack's S3Routes), for S3 events;
    /// else the variable S3_ROUTES, else --routes.
    #[arg(long, value_name = "FILE")]
    s3_routes: Option<PathBuf>,
}

fn cannot_start(error: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("{SERVICE}: cannot start: {error}");
    ExitCode::from(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    // Logs on standard error; on a terminal the progress bar tells the
    // progress, so only warnings unless RUST_LOG says otherwise.
    let terminal = std::io::stderr().is_terminal();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(if terminal { "warn" } else { "info" })
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(terminal)
        .with_target(false)
        .try_init();

    let env = Env::process();
    let kinesis = match kinesis_to_sqs::Settings::from_env(&env) {
        Ok(s) => s,
        Err(e) => return cannot_start(&e),
    };
    let s3 = match s3_to_sqs::Settings::from_env(&env) {
        Ok(s) => s,
        Err(e) => return cannot_start(&e),
    };
    let config = match sqs_forwarder::Config::from_env() {
        Ok(c) => c,
        Err(e) => return cannot_start(&e),
    };
    let files = RouteFiles {
        both: args.routes.clone(),
        kinesis: args.kinesis_routes.clone(),
        s3: args.s3_routes.clone(),
    };
    let rules = match routes::read(&files, &env) {
        Ok(r) => r,
        Err(e) => return cannot_start(&e),
    };
    let kinesis_ids = GroupIds::from_source(kinesis.source_sets_group_ids());
    let s3_ids = GroupIds::from_source(s3.source_sets_group_ids());
    let group_ids =
        GroupIds::from_source(kinesis.source_sets_group_ids() && s3.source_sets_group_ids());
    let started = match startup::start_with(config, SERVICE, group_ids).await {
        Ok(s) => s,
        Err(e) => return cannot_start(&e),
    };
    // Each function's rules over the target queue and the queues they
    // name, connected as the functions connect them (a target that cannot
    // be used stops the start, naming it).
    let connect = |rules, ids| {
        startup::connect_router(
            &started.sdk,
            &started.config,
            started.forwarder.clone(),
            rules,
            ids,
        )
    };
    let kinesis_router = match connect(rules.kinesis, kinesis_ids).await {
        Ok(r) => r,
        Err(e) => return cannot_start(&e),
    };
    let s3_router = match connect(rules.s3, s3_ids).await {
        Ok(r) => r,
        Err(e) => return cannot_start(&e),
    };
    // The on-failure queue and the stream are read with the tool's own
    // credentials; the target queue (and, in lines mode, the objects) as
    // the functions do, with ASSUME_ROLE_ARN when set.
    let own = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let s3_client = s3_to_sqs::s3_client(&started.sdk, s3.s3_force_path_style);
    let options = Options {
        dry_run: args.dry_run,
        limit: args.limit,
        delete_expired: args.delete_expired,
        visibility: Duration::from_secs(args.visibility_timeout),
        records_per_call: args.records_per_call,
        ..Options::default()
    };
    let queue = QueueReader::new(&own, &args.failure_queue);
    // The on-failure queue is read before anything is taken from it: a wrong
    // URL or a missing permission stops the start, like a wrong target.
    let visible = match queue.approximate_count().await {
        Ok(n) => n,
        Err(e) => {
            return cannot_start(&format!(
                "the on-failure queue (--failure-queue, FAILURE_QUEUE_URL): {e}"
            ));
        }
    };
    let streams = Streams::new(own);
    let totals = if args.dry_run {
        let mut targets = dry_run::Targets::default();
        let bucket = started.config.offload.as_ref().map(|o| o.bucket.as_str());
        let default_queue = match &started.config.queue {
            QueueTarget::Url(url) => url.clone(),
            QueueTarget::Name { name, .. } => name.clone(),
        };
        let mut counting = |router| dry_run::router(router, &default_queue, bucket, &mut targets);
        let (kinesis_router, s3_router) = match (counting(&kinesis_router), counting(&s3_router)) {
            (Ok(k), Ok(s)) => (k, s),
            (Err(e), _) | (_, Err(e)) => return cannot_start(&e),
        };
        let replayer = Replayer {
            kinesis: kinesis_to_sqs::Handler::routed(kinesis, kinesis_router),
            s3: s3_to_sqs::Handler::routed(s3, s3_router, s3_client),
            streams,
            queue,
            options,
        };
        let mut totals = go(replayer, visible).await;
        (totals.messages, totals.offloaded) = targets.totals();
        for line in targets.lines() {
            println!("{line}");
        }
        totals
    } else {
        let replayer = Replayer {
            kinesis: kinesis_to_sqs::Handler::routed(kinesis, kinesis_router),
            s3: s3_to_sqs::Handler::routed(s3, s3_router, s3_client),
            streams,
            queue,
            options,
        };
        go(replayer, visible).await
    };
    println!("{}", totals.summary(args.dry_run));
    if totals.clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Run `replayer` with a progress bar over `visible` entries (the queue's
/// count, or the limit).
async fn go<T: Transport>(mut replayer: Replayer<T>, visible: u64) -> Totals {
    let length = replayer.options.limit.map_or(visible, |l| l.min(visible));
    let progress = Progress::new(length);
    let stop = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let totals = replayer
        .run(&progress, stop, |line| progress.println(&line.to_string()))
        .await;
    progress.finish();
    totals
}
