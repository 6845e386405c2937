//! The Rust half of the benchmark (the other half, `bench/run.py`, makes the
//! workloads, runs everything and writes the table). Three tools:
//!
//! ```text
//! bench stub   [--port N] [--max-message-bytes N] [--capture] [--object BUCKET/KEY=FILE]...
//!              [--store] [--fault-rate R] [--fault-weights KIND=W,...] [--latency-ms N] [--seed N]
//!              [--delay-ms N]
//! bench lambda --event FILE [--invocations N] [--env K=V]... [--timeout SECS]
//!              [--before-each CMD] [--stub HOST:PORT] [--log FILE] [--name NAME]
//!              [--memory-mb N] [--cap-cpu] -- COMMAND [ARGS]...
//! bench lambda --interactive [--env K=V]... [--timeout SECS] [--log FILE] [--name NAME] -- COMMAND [ARGS]...
//! bench floor  --stub URL --epoch N [--in-flight N] [--rounds N]
//! bench least  --stub URL --epoch N --event FILE [--rounds N]
//! ```
//!
//! `stub` serves until stopped and prints its URL first; `lambda`, `floor`
//! and `least` (the least work beyond the floor: scanning the event and
//! signing each request, `least.rs`) print one JSON report on stdout; `lambda --interactive` takes one
//! event per line on stdin and prints one answer per line (the soak,
//! `bench/soak.py`). See `bench/README.md`.

mod faults;
mod floor;
mod harness;
mod least;
mod store;
mod stub;

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;

use bytes::Bytes;

const USAGE: &str = "usage:
  bench stub   [--port N] [--max-message-bytes N] [--capture] [--object BUCKET/KEY=FILE]...
               [--store] [--fault-rate R] [--fault-weights KIND=W,...] [--latency-ms N] [--seed N]
               [--delay-ms N]
  bench lambda --event FILE [--invocations N] [--env K=V]... [--timeout SECS]
               [--before-each CMD] [--stub HOST:PORT] [--log FILE] [--name NAME]
               [--memory-mb N] [--cap-cpu] [--grace SECS] -- COMMAND [ARGS]...
  bench lambda --interactive [--env K=V]... [--timeout SECS] [--log FILE] [--name NAME] -- COMMAND [ARGS]...
  bench floor  --stub URL --epoch N [--in-flight N] [--rounds N]
  bench least  --stub URL --epoch N --event FILE [--rounds N]";

/// Command-line options: `--name value` pairs, repeatable, plus flags, and
/// everything after `--`.
struct Args {
    values: HashMap<String, Vec<String>>,
    rest: Vec<String>,
}

impl Args {
    fn parse(args: &[String], flags: &[&str]) -> Result<Args, String> {
        let mut values: HashMap<String, Vec<String>> = HashMap::new();
        let mut it = args.iter();
        let mut rest = Vec::new();
        while let Some(a) = it.next() {
            if a == "--" {
                rest = it.cloned().collect();
                break;
            }
            let Some(name) = a.strip_prefix("--") else {
                return Err(format!("unexpected argument {a:?}"));
            };
            let value = if flags.contains(&name) {
                "true".to_owned()
            } else {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("--{name} needs a value"))?
            };
            values.entry(name.to_owned()).or_default().push(value);
        }
        Ok(Args { values, rest })
    }

    fn one(&self, name: &str) -> Option<&str> {
        self.values
            .get(name)
            .and_then(|v| v.last())
            .map(String::as_str)
    }

    fn all(&self, name: &str) -> &[String] {
        self.values.get(name).map_or(&[], Vec::as_slice)
    }

    fn number<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T, String> {
        match self.one(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("--{name} {v:?}: not a number")),
        }
    }

    fn required(&self, name: &str) -> Result<&str, String> {
        self.one(name)
            .ok_or_else(|| format!("--{name} is required"))
    }
}

fn print_json<T: serde::Serialize>(value: &T) -> Result<(), String> {
    println!(
        "{}",
        serde_json::to_string(value).map_err(|e| e.to_string())?
    );
    Ok(())
}

async fn stub_command(args: &Args) -> Result<(), String> {
    let mut objects = HashMap::new();
    for spec in args.all("object") {
        let (key, path) = spec
            .split_once('=')
            .ok_or_else(|| format!("--object {spec:?}: BUCKET/KEY=FILE"))?;
        let data = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
        objects.insert(key.to_owned(), Bytes::from(data));
    }
    let config = stub::StubConfig {
        port: args.number("port", 0u16)?,
        max_message_bytes: args.number("max-message-bytes", 1_048_576usize)?,
        capture: args.one("capture").is_some(),
        objects,
        store: args.one("store").is_some(),
        faults: faults::FaultConfig {
            rate: args.number("fault-rate", 0.0f64)?,
            weights: faults::FaultConfig::parse_weights(
                args.one("fault-weights").unwrap_or(faults::DEFAULT_WEIGHTS),
            )?,
            latency: Duration::from_millis(args.number("latency-ms", 1_500u64)?),
            seed: args.number("seed", 1u64)?,
        },
        delay: Duration::from_millis(args.number("delay-ms", 0u64)?),
    };
    if !(0.0..=1.0).contains(&config.faults.rate) {
        return Err("--fault-rate: a number from 0 to 1".into());
    }
    stub::serve(config).await.map_err(|e| e.to_string())
}

async fn lambda_command(args: &Args) -> Result<(), String> {
    let interactive = args.one("interactive").is_some();
    let event = if interactive {
        Vec::new()
    } else {
        let path = args.required("event")?;
        std::fs::read(path).map_err(|e| format!("{path}: {e}"))?
    };
    let mut env = Vec::new();
    for kv in args.all("env") {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("--env {kv:?}: K=V"))?;
        env.push((k.to_owned(), v.to_owned()));
    }
    if args.rest.is_empty() {
        return Err("the command to run goes after --".into());
    }
    let name = args.one("name").map(str::to_owned).unwrap_or_else(|| {
        std::path::Path::new(&args.rest[0])
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "function".into())
    });
    let config = harness::HarnessConfig {
        event: Bytes::from(event),
        invocations: args.number("invocations", 1usize)?,
        env,
        timeout: Duration::from_secs_f64(args.number("timeout", 60.0f64)?),
        before_each: args.one("before-each").map(str::to_owned),
        stub: args.one("stub").map(str::to_owned),
        log: args.one("log").map(Into::into),
        name,
        command: args.rest.clone(),
        memory_mb: args.number("memory-mb", 128u64)?,
        cap_cpu: args.one("cap-cpu").is_some(),
        grace: Duration::from_secs_f64(args.number("grace", 0.0f64)?),
    };
    if interactive {
        return harness::run_interactive(config)
            .await
            .map_err(|e| e.to_string());
    }
    let report = harness::run(config).await.map_err(|e| e.to_string())?;
    print_json(&report)
}

async fn floor_command(args: &Args) -> Result<(), String> {
    let report = floor::run(
        args.required("stub")?.trim_end_matches('/'),
        args.number("epoch", 0usize)?,
        args.number("in-flight", 4usize)?,
        args.number("rounds", 5usize)?,
    )
    .await?;
    print_json(&report)
}

async fn least_command(args: &Args) -> Result<(), String> {
    let (epoch, rounds) = (
        args.number("epoch", 0usize)?,
        args.number("rounds", 5usize)?,
    );
    let stub = args.required("stub")?.trim_end_matches('/');
    let path = args.required("event")?;
    let event = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let bodies = floor::captured(stub, epoch).await?;
    let report = least::run(&event, &bodies, rounds)?;
    print_json(&report)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = argv.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match Args::parse(rest, &["capture", "store", "interactive", "cap-cpu"]) {
        Err(e) => Err(e),
        Ok(args) => match command.as_str() {
            "stub" => stub_command(&args).await,
            "lambda" => lambda_command(&args).await,
            "floor" => floor_command(&args).await,
            "least" => least_command(&args).await,
            other => Err(format!("unknown command {other:?}")),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
