//! Interactive runs: one event per line on stdin, one JSON answer per line
//! on stdout, the process restarted as Lambda restarts it (after a timeout
//! or a crash).

use bytes::Bytes;
use serde::Serialize;
use std::io::Write;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

use super::api::{Api, Posted, start_api};
use super::{HarnessConfig, function_command, peak_rss_kib};

/// One answer of an interactive run, printed as a JSON line.
#[derive(Debug, Serialize)]
pub struct Answer {
    /// The invocation's number, from 0.
    pub i: usize,
    /// `response` or `error` (the function's answers); `timeout` (no answer
    /// within the timeout: the process is stopped, as Lambda stops it),
    /// `crashed` (the process ended), `init_error` (its cold start failed).
    pub status: &'static str,
    /// Event handed out to answer received, in milliseconds.
    pub ms: f64,
    /// The answer, whole.
    pub body: String,
    /// When this invocation started a new process: its cold start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cold_start_ms: Option<f64>,
}

/// The function's process, while it runs.
struct Running {
    child: tokio::process::Child,
    started: Instant,
    fresh: bool,
}

async fn stop(running: &mut Option<Running>, api: &mut Api) {
    if let Some(mut r) = running.take() {
        let _ = r.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(5), r.child.wait()).await;
    }
    // Polls the dead process left behind are of no use.
    while api.polls.try_recv().is_ok() {}
}

async fn invoke_once(
    config: &HarnessConfig,
    api: &mut Api,
    running: &mut Option<Running>,
    starts: &mut usize,
    i: usize,
    event: Bytes,
) -> std::io::Result<Answer> {
    let limit = config.timeout + Duration::from_secs(2);
    let answer = |status, ms, body: String, cold_start_ms| Answer {
        i,
        status,
        ms,
        body,
        cold_start_ms,
    };
    if running.is_none() {
        let mut cmd = function_command(config, &api.addr, *starts > 0 || config.log.is_none())?;
        *running = Some(Running {
            child: cmd.spawn()?,
            started: Instant::now(),
            fresh: true,
        });
        *starts += 1;
    }
    let Some(r) = running.as_mut() else {
        return Err(std::io::Error::other("no process"));
    };
    let request_id = format!("soak-{i:07}");
    let mut cold_start_ms = None;
    let mut event = Some(event);
    // Hand the event to the first live poll.
    loop {
        let poll = tokio::select! {
            p = api.polls.recv() => match p {
                Some(p) => p,
                None => return Err(std::io::Error::other("the runtime API stopped")),
            },
            Some(Posted::InitError(body)) = api.posted.recv() => {
                stop(running, api).await;
                return Ok(answer("init_error", 0.0, String::from_utf8_lossy(&body).into_owned(), None));
            }
            s = r.child.wait() => {
                let body = format!("the process ended before taking the event: {s:?}");
                stop(running, api).await;
                return Ok(answer("crashed", 0.0, body, None));
            }
            _ = tokio::time::sleep(limit) => {
                stop(running, api).await;
                return Ok(answer("timeout", 0.0, "no request for the event".into(), None));
            }
        };
        if r.fresh {
            r.fresh = false;
            cold_start_ms = Some(poll.at.duration_since(r.started).as_secs_f64() * 1e3);
        }
        let Some(e) = event.take() else {
            return Err(std::io::Error::other("no event"));
        };
        match poll.reply.send((request_id.clone(), e)) {
            Ok(()) => break,
            Err((_, e)) => event = Some(e),
        }
    }
    let handed = Instant::now();
    loop {
        let got = tokio::select! {
            p = api.posted.recv() => p,
            s = r.child.wait() => {
                let body = format!("the process ended during the invocation: {s:?}");
                stop(running, api).await;
                return Ok(answer("crashed", handed.elapsed().as_secs_f64() * 1e3, body, cold_start_ms));
            }
            _ = tokio::time::sleep(limit) => {
                stop(running, api).await;
                return Ok(answer("timeout", handed.elapsed().as_secs_f64() * 1e3, String::new(), cold_start_ms));
            }
        };
        match got {
            Some(Posted::Answer {
                request_id: id,
                kind,
                body,
                at,
            }) if id == request_id => {
                let status = if kind == "response" {
                    "response"
                } else {
                    "error"
                };
                let ms = at.duration_since(handed).as_secs_f64() * 1e3;
                return Ok(answer(
                    status,
                    ms,
                    String::from_utf8_lossy(&body).into_owned(),
                    cold_start_ms,
                ));
            }
            Some(Posted::InitError(body)) => {
                stop(running, api).await;
                return Ok(answer(
                    "init_error",
                    0.0,
                    String::from_utf8_lossy(&body).into_owned(),
                    cold_start_ms,
                ));
            }
            Some(_) => continue,
            None => return Err(std::io::Error::other("the runtime API stopped")),
        }
    }
}

/// The soak's harness: read one event per line from stdin, hand each to the
/// function, print each answer as one JSON line ([`Answer`]) on stdout. A
/// process that crashes, fails its start or times out is stopped, and the
/// next event starts a new one (a cold start), as Lambda does. At the end
/// of stdin, a last line: `{"done": true, "starts": N, "peak_rss_kib": N}`.
pub async fn run_interactive(config: HarnessConfig) -> std::io::Result<()> {
    let mut api = start_api(config.timeout, &config.name).await?;
    // stdin on a thread of its own (tokio's `io-std` is not among the
    // workspace's features, and adding it would rebuild tokio for everyone).
    let (line_tx, mut lines) = mpsc::unbounded_channel::<std::io::Result<String>>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let end = line.is_err();
            if line_tx.send(line).is_err() || end {
                break;
            }
        }
    });
    let mut running = None;
    let mut starts = 0usize;
    let mut i = 0usize;
    let mut out = std::io::stdout();
    while let Some(line) = lines.recv().await {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let a = invoke_once(
            &config,
            &mut api,
            &mut running,
            &mut starts,
            i,
            Bytes::from(line),
        )
        .await?;
        serde_json::to_writer(&mut out, &a).map_err(std::io::Error::other)?;
        out.write_all(b"\n")?;
        out.flush()?;
        i += 1;
    }
    let peak = running
        .as_ref()
        .and_then(|r| r.child.id())
        .and_then(peak_rss_kib);
    stop(&mut running, &mut api).await;
    serde_json::to_writer(
        &mut out,
        &serde_json::json!({"done": true, "starts": starts, "peak_rss_kib": peak}),
    )
    .map_err(std::io::Error::other)?;
    out.write_all(b"\n")?;
    out.flush()
}
