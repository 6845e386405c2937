//! CPU per delivery of three AMQP clients in the drain's pattern: a consumer
//! under a prefetch window on a current-thread runtime, each batch the
//! deliveries already received (a 10 ms linger for more), acknowledged with
//! one `basic.ack multiple`. No SQS: only the client's own work is counted.
//!
//!     amqp-clients fill QUEUE N SIZE       purge QUEUE, publish N bodies of SIZE bytes
//!     amqp-clients lapin|amqprs|raw QUEUE N PREFETCH
//!     amqp-clients delete QUEUE
//!
//! The broker is `AMQP_ADDR` (default 127.0.0.1:5672, guest/guest, vhost /).
//! Prints the CPU (user + system, every thread) per delivery from the
//! consumer's start to the last ack, and the process's context switches.

mod clients;
mod raw;

use std::error::Error;
use std::time::Duration;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// CPU time of the process (µs) and its voluntary and involuntary switches.
pub fn cpu() -> (f64, i64, i64) {
    // SAFETY: getrusage writes into the struct it is given; zeroed is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage struct.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let us = |tv: libc::timeval| tv.tv_sec as f64 * 1e6 + tv.tv_usec as f64;
    (us(ru.ru_utime) + us(ru.ru_stime), ru.ru_nvcsw, ru.ru_nivcsw)
}

/// What one drain did: CPU (µs) from the consumer's start to the last ack,
/// batches, deliveries, body bytes.
pub struct Drained {
    pub cpu_us: f64,
    pub batches: usize,
    pub taken: usize,
    pub bytes: usize,
}

/// How long a batch waits for more deliveries once begun (the function's `LINGER`).
pub const LINGER: Duration = Duration::from_millis(10);

fn arg<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> Result<T> {
    args.get(i)
        .ok_or_else(|| format!("missing {what}"))?
        .parse()
        .map_err(|_| format!("{what}: not a number").into())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let addr = std::env::var("AMQP_ADDR").unwrap_or_else(|_| "127.0.0.1:5672".into());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let client = args
        .get(1)
        .ok_or("usage: amqp-clients fill|lapin|amqprs|raw QUEUE N SIZE|PREFETCH")?;
    let queue = args.get(2).ok_or("missing QUEUE")?.as_str();
    if client == "delete" {
        return rt.block_on(clients::delete(&addr, queue));
    }
    let n: usize = arg(&args, 3, "N")?;
    if client == "fill" {
        return rt.block_on(clients::fill(&addr, queue, n, arg(&args, 4, "SIZE")?));
    }
    let prefetch: u16 = arg(&args, 4, "PREFETCH")?;
    let (c0, v0, i0) = cpu();
    let d = rt.block_on(async {
        match client.as_str() {
            "lapin" => clients::drain_lapin(&addr, queue, n, prefetch).await,
            "amqprs" => clients::drain_amqprs(&addr, queue, n, prefetch).await,
            "raw" => clients::drain_raw(&addr, queue, n, prefetch).await,
            other => Err(format!("unknown client {other:?}").into()),
        }
    })?;
    let (c1, v1, i1) = cpu();
    if d.taken != n {
        return Err(format!("{client}: took {} of {n}", d.taken).into());
    }
    println!(
        "{client}: {} deliveries ({} bytes) in {} batches; CPU per delivery {:.2} µs (drain), {:.2} µs (process); context switches {} voluntary, {} involuntary",
        d.taken,
        d.bytes,
        d.batches,
        d.cpu_us / d.taken as f64,
        (c1 - c0) / d.taken as f64,
        v1 - v0,
        i1 - i0
    );
    Ok(())
}
