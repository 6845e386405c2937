//! A Lambda runtime-API harness for measuring: it serves the runtime API
//! (2018-06-01) on 127.0.0.1, starts the function's command with
//! `AWS_LAMBDA_RUNTIME_API` pointing at it, hands it the same event a given
//! number of times, and reports:
//!
//! * the cold start: process start to its first request for an event;
//! * each invocation's duration: the event handed out to the answer received;
//! * the peak RSS of the process (`VmHWM`), read after the last answer;
//! * the CPU time the process used in each invocation and in its cold start
//!   (a `cpuacct` cgroup when it can make one, else `/proc`; see
//!   [`bench_support::cpu`]).
//!
//! With `--cap-cpu` the process runs in a cgroup capped at the CPU share
//! Lambda gives `--memory-mb` (128 MB: 7.2% of one vCPU), as Lambda bills it.
//!
//! It replaces `scripts/lambda_harness.py` for timing because that one
//! serializes each event with Python's `json.dumps` inside the timed window,
//! which on a 6 MB event costs as much as the forwarder's whole work. Here the
//! event's bytes are read once and handed out as they are.
//!
//! Before each invocation, untimed: an optional shell command (to refill a
//! RabbitMQ queue, say), and `POST /__epoch` to the stub so that each
//! invocation's SQS calls are counted apart.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Serialize;

use bench_support::cpu;

mod api;
mod interactive;

use api::{Api, Posted, head, start_api};
pub use interactive::run_interactive;

const PREFIX: &str = "/2018-06-01/runtime";

/// Numbers the cgroups of one harness process.
static GROUPS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// What to run and how.
#[derive(Debug, Clone)]
pub struct HarnessConfig {
    /// The event, as sent.
    pub event: Bytes,
    /// How many times to hand it out (the first one is the cold invocation);
    /// 0 measures the cold start alone.
    pub invocations: usize,
    /// Extra environment for the function.
    pub env: Vec<(String, String)>,
    /// The function's timeout (for the deadline header, and to give up).
    pub timeout: Duration,
    /// A shell command run (untimed) before each invocation.
    pub before_each: Option<String>,
    /// The stub's `host:port`, told of each invocation with `POST /__epoch`.
    pub stub: Option<String>,
    /// Where the function's stdout and stderr go (default: discarded).
    pub log: Option<PathBuf>,
    /// The function's name in the runtime environment.
    pub name: String,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// The function's memory (`AWS_LAMBDA_FUNCTION_MEMORY_SIZE`), and its CPU
    /// share when `cap_cpu` is set.
    pub memory_mb: u64,
    /// Run the process under Lambda's CPU share for `memory_mb`.
    pub cap_cpu: bool,
    /// At the end, how long the process may take to exit after SIGTERM
    /// before it is killed (zero: killed at once). A profiler wrapping the
    /// function (`valgrind --tool=callgrind`) writes its figures on SIGTERM.
    pub grace: Duration,
}

/// One invocation's figures.
#[derive(Debug, Serialize)]
pub struct Invocation {
    /// Event handed out to answer received, in milliseconds.
    pub ms: f64,
    /// `response` or `error`.
    pub status: String,
    /// Size of the answer.
    pub response_bytes: usize,
    /// The answer's first 1,000 characters.
    pub response_head: String,
    /// How long the untimed hook before it took, in milliseconds.
    pub before_ms: f64,
    /// CPU time the process used from the event handed out to the answer,
    /// in milliseconds.
    pub cpu_ms: Option<f64>,
}

/// The run's figures.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// The command run.
    pub command: Vec<String>,
    /// Process start to its first request for an event, in milliseconds.
    pub cold_start_ms: Option<f64>,
    /// Each invocation, in order; the first is the cold one.
    pub invocations: Vec<Invocation>,
    /// `VmHWM` of the process after the last invocation, in KiB.
    pub peak_rss_kib: Option<u64>,
    /// What the function posted to `/runtime/init/error`.
    pub init_error: Option<String>,
    /// Set when the process ended before the run did.
    pub exited: Option<String>,
    /// Set when the run stopped early for another reason.
    pub problem: Option<String>,
    /// CPU time used from process start to its first request for an event.
    pub cold_start_cpu_ms: Option<f64>,
    /// Where CPU time was read: `cgroup` (every thread, ended ones too) or
    /// `proc` (live threads).
    pub cpu_source: Option<&'static str>,
    /// `AWS_LAMBDA_FUNCTION_MEMORY_SIZE` given to the function.
    pub memory_mb: u64,
    /// The CFS quota per 100,000 µs period the process ran under, if capped.
    pub cpu_quota_us: Option<u64>,
    /// Periods in which the cap held the process back, and for how long.
    pub throttled_periods: Option<u64>,
    /// Total time held back by the cap, in milliseconds.
    pub throttled_ms: Option<f64>,
}

/// `VmHWM` of a process, in KiB.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// `POST /__epoch` to the stub, with a plain blocking request.
pub fn new_epoch(stub: &str) -> std::io::Result<()> {
    let mut s = std::net::TcpStream::connect(stub)?;
    s.write_all(
        format!("POST /__epoch HTTP/1.1\r\nHost: {stub}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)?;
    if answer.starts_with(b"HTTP/1.1 200") {
        Ok(())
    } else {
        Err(std::io::Error::other("the stub refused POST /__epoch"))
    }
}

/// The function's command, with the environment Lambda gives; its output
/// goes to the log (appended with `append`), else nowhere.
fn function_command(
    config: &HarnessConfig,
    api: &str,
    append: bool,
) -> std::io::Result<tokio::process::Command> {
    let Some((program, args)) = config.command.split_first() else {
        return Err(std::io::Error::other("no command to run"));
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .env("AWS_LAMBDA_RUNTIME_API", api)
        .env("AWS_LAMBDA_FUNCTION_NAME", &config.name)
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env(
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
            config.memory_mb.to_string(),
        )
        .env(
            "AWS_LAMBDA_LOG_GROUP_NAME",
            format!("/aws/lambda/{}", config.name),
        )
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "bench")
        .envs(config.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .kill_on_drop(true);
    match &config.log {
        Some(path) => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .append(append)
                .truncate(!append)
                .open(path)?;
            cmd.stdout(f.try_clone()?).stderr(f);
        }
        None => {
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
        }
    }
    Ok(cmd)
}

/// Run the function and measure it.
pub async fn run(config: HarnessConfig) -> std::io::Result<Report> {
    let Api {
        addr: api,
        mut polls,
        mut posted,
    } = start_api(config.timeout, &config.name).await?;
    let mut cmd = function_command(&config, &api, false)?;
    let mut report = Report {
        command: config.command.clone(),
        ..Report::default()
    };
    report.memory_mb = config.memory_mb;
    // The cgroup: the cap when asked for, and the CPU count in any case.
    let quota = config
        .cap_cpu
        .then(|| cpu::lambda_quota_us(config.memory_mb));
    let group_name = format!(
        "sqsf-bench-{}-{}",
        std::process::id(),
        GROUPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let group = match cpu::CpuGroup::create(&group_name, quota) {
        Ok(g) => Some(g),
        Err(e) if config.cap_cpu => {
            return Err(std::io::Error::other(format!(
                "--cap-cpu needs a cgroup v1 cpu controller it can write (root): {e}"
            )));
        }
        Err(_) => None,
    };
    if let Some(g) = &group {
        let files = g.join_on_exec()?;
        // SAFETY: the closure only writes to files opened before the fork;
        // it allocates nothing and takes no lock.
        #[allow(unsafe_code)] // the one way to join a cgroup before exec
        unsafe {
            cmd.pre_exec(move || cpu::join(&files));
        }
        report.cpu_quota_us = g.quota_us;
    }
    report.cpu_source = Some(if group.is_some() { "cgroup" } else { "proc" });
    let started = Instant::now();
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let cpu_now = || -> Option<u64> {
        match &group {
            Some(g) => g.usage_ns(),
            None => pid.and_then(cpu::process_cpu_ns),
        }
    };
    let limit = config.timeout + Duration::from_secs(30);

    'invocations: for i in 0..config.invocations {
        let poll = tokio::select! {
            p = polls.recv() => match p {
                Some(p) => p,
                None => { report.problem = Some("the runtime API stopped".into()); break; }
            },
            Some(Posted::InitError(body)) = posted.recv() => {
                report.init_error = Some(head(&body));
                break;
            }
            s = child.wait() => {
                report.exited = Some(format!("{s:?}"));
                break;
            }
            _ = tokio::time::sleep(limit) => {
                report.problem = Some(format!("no request for event {i} within {limit:?}"));
                break;
            }
        };
        if i == 0 {
            report.cold_start_ms = Some(poll.at.duration_since(started).as_secs_f64() * 1e3);
            report.cold_start_cpu_ms = cpu_now().map(|ns| ns as f64 / 1e6);
        }
        let hook_started = Instant::now();
        if let Some(hook) = config.before_each.clone() {
            let ok = tokio::task::spawn_blocking(move || {
                std::process::Command::new("sh")
                    .arg("-c")
                    .arg(&hook)
                    .status()
                    .map(|s| s.success())
                    .unwrap_or(false)
            })
            .await
            .unwrap_or(false);
            if !ok {
                report.problem = Some(format!("the before-each command failed before event {i}"));
                break;
            }
        }
        if let Some(stub) = &config.stub {
            let stub = stub.clone();
            tokio::task::spawn_blocking(move || new_epoch(&stub))
                .await
                .map_err(std::io::Error::other)??;
        }
        let before_ms = hook_started.elapsed().as_secs_f64() * 1e3;
        let request_id = format!("bench-{i:05}");
        let cpu_before = cpu_now();
        let handed = Instant::now();
        if poll
            .reply
            .send((request_id.clone(), config.event.clone()))
            .is_err()
        {
            report.problem = Some(format!("the function dropped its request for event {i}"));
            break;
        }
        loop {
            let got = tokio::select! {
                p = posted.recv() => p,
                s = child.wait() => {
                    report.exited = Some(format!("{s:?}"));
                    break 'invocations;
                }
                _ = tokio::time::sleep(limit) => {
                    report.problem = Some(format!("no answer to event {i} within {limit:?}"));
                    break 'invocations;
                }
            };
            match got {
                Some(Posted::Answer {
                    request_id: id,
                    kind,
                    body,
                    at,
                }) if id == request_id => {
                    let cpu_ms = cpu_now()
                        .zip(cpu_before)
                        .map(|(after, before)| after.saturating_sub(before) as f64 / 1e6);
                    report.invocations.push(Invocation {
                        ms: at.duration_since(handed).as_secs_f64() * 1e3,
                        status: kind,
                        response_bytes: body.len(),
                        response_head: head(&body),
                        before_ms,
                        cpu_ms,
                    });
                    break;
                }
                Some(Posted::InitError(body)) => {
                    report.init_error = Some(head(&body));
                    break 'invocations;
                }
                Some(_) => continue,
                None => {
                    report.problem = Some("the runtime API stopped".into());
                    break 'invocations;
                }
            }
        }
    }
    // Let the function come back for the next event, so that whatever it does
    // after answering is in its peak too, then read the peak and stop it.
    // With no invocations asked for, this is the cold start alone.
    if report.invocations.len() == config.invocations
        && report.init_error.is_none()
        && report.exited.is_none()
    {
        let wait = if config.invocations == 0 {
            limit
        } else {
            Duration::from_secs(5)
        };
        tokio::select! {
            Some(poll) = polls.recv() => {
                if report.cold_start_ms.is_none() {
                    report.cold_start_ms =
                        Some(poll.at.duration_since(started).as_secs_f64() * 1e3);
                }
            }
            Some(Posted::InitError(body)) = posted.recv() => {
                report.init_error = Some(head(&body));
            }
            s = child.wait() => report.exited = Some(format!("{s:?}")),
            _ = tokio::time::sleep(wait) => {
                if config.invocations == 0 {
                    report.problem = Some(format!("no request for an event within {wait:?}"));
                }
            }
        }
        if config.invocations == 0 && report.cold_start_cpu_ms.is_none() {
            report.cold_start_cpu_ms = cpu_now().map(|ns| ns as f64 / 1e6);
        }
    }
    report.peak_rss_kib = pid.and_then(peak_rss_kib);
    if let Some((periods, ns)) = group.as_ref().and_then(cpu::CpuGroup::throttled) {
        report.throttled_periods = Some(periods);
        report.throttled_ms = Some(ns as f64 / 1e6);
    }
    if let (Some(pid), false) = (pid, config.grace.is_zero()) {
        let term = tokio::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .await;
        if term.is_ok_and(|s| s.success()) {
            let _ = tokio::time::timeout(config.grace, child.wait()).await;
        }
    }
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    Ok(report)
}
