//! Fault injection for the soak (`bench stub --fault-rate R`): each
//! `SendMessageBatch` call is hit by one fault with probability `R`, its
//! kind drawn by weight. The kinds, and what the client sees:
//!
//! | kind | what the stub does | stored? |
//! |---|---|---|
//! | `entry-retryable` | about half the entries (at least one) fail alone with `InternalError` or `ServiceUnavailable` (`SenderFault: false`) or `RequestThrottled` (`SenderFault: true`, a throttling code) | the others |
//! | `entry-sender` | one entry fails alone with `InvalidParameterValue`, `SenderFault: true`: a permanent failure to the forwarder | the others |
//! | `throttle` | the call is refused: 400 `ThrottlingException` or `RequestThrottled` | no |
//! | `server-error` | the call is refused: 500 `InternalError` or 503 `ServiceUnavailable` | no |
//! | `latency` | the call is handled, then answered after a random delay up to `--latency-ms`: past the client's `CALL_TIMEOUT_MS` it has given up on an accepted call | yes |
//! | `drop-before` | the connection is closed without an answer, before the call is handled | no |
//! | `drop-after` | the call is handled, then the connection is closed without an answer | yes |
//!
//! `latency` and `drop-after` are the ambiguous ones: the messages are in the
//! queue but the client cannot know, so it sends them again (duplicates on
//! standard queues, deduplicated on FIFO queues). The random generator is
//! seeded (`--seed`), so a run's sequence of faults is the same for the same
//! sequence of calls.

use std::collections::BTreeMap;
use std::time::Duration;

/// A kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    /// Some entries fail alone with retryable codes.
    EntryRetryable,
    /// One entry fails alone with a sender-fault (permanent) code.
    EntrySender,
    /// The call is throttled.
    Throttle,
    /// The call gets a 5xx.
    ServerError,
    /// The answer comes late.
    Latency,
    /// The connection closes before the call is handled.
    DropBefore,
    /// The connection closes after the call is handled.
    DropAfter,
}

impl Fault {
    /// Every kind, in the order reports list them.
    pub const ALL: [Fault; 7] = [
        Fault::EntryRetryable,
        Fault::EntrySender,
        Fault::Throttle,
        Fault::ServerError,
        Fault::Latency,
        Fault::DropBefore,
        Fault::DropAfter,
    ];

    /// The kind's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Fault::EntryRetryable => "entry-retryable",
            Fault::EntrySender => "entry-sender",
            Fault::Throttle => "throttle",
            Fault::ServerError => "server-error",
            Fault::Latency => "latency",
            Fault::DropBefore => "drop-before",
            Fault::DropAfter => "drop-after",
        }
    }

    fn parse(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// The default weights: the retryable kinds dominate, sender faults are rare
/// (a real one is about a message's content, and each costs a replay).
pub const DEFAULT_WEIGHTS: &str = "entry-retryable=30,entry-sender=4,throttle=20,server-error=16,latency=10,drop-before=10,drop-after=10";

/// What to inject.
#[derive(Debug, Clone)]
pub struct FaultConfig {
    /// Probability that a call gets a fault, 0..=1.
    pub rate: f64,
    /// Relative weights of the kinds (kinds left out never happen).
    pub weights: Vec<(Fault, f64)>,
    /// Longest added latency.
    pub latency: Duration,
    /// The random generator's seed.
    pub seed: u64,
}

impl FaultConfig {
    /// Parse `kind=weight,kind=weight,...`.
    pub fn parse_weights(spec: &str) -> Result<Vec<(Fault, f64)>, String> {
        let mut out = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, w) = part
                .split_once('=')
                .ok_or_else(|| format!("fault weight {part:?}: KIND=WEIGHT"))?;
            let kind = Fault::parse(name).ok_or_else(|| {
                let names: Vec<&str> = Fault::ALL.iter().map(|f| f.name()).collect();
                format!("unknown fault kind {name:?}; known: {}", names.join(", "))
            })?;
            let w: f64 = w
                .parse()
                .ok()
                .filter(|w: &f64| w.is_finite() && *w >= 0.0)
                .ok_or_else(|| format!("fault weight {part:?}: not a number >= 0"))?;
            out.push((kind, w));
        }
        Ok(out)
    }
}

/// How one entry of a faulted call fails: its code and `SenderFault`.
pub type EntryFault = Option<(&'static str, bool)>;

/// The seeded injector, with counts of what it injected.
#[derive(Debug)]
pub struct Injector {
    config: FaultConfig,
    rng: fastrand::Rng,
    total_weight: f64,
}

const RETRYABLE_ENTRY_CODES: [(&str, bool); 3] = [
    ("InternalError", false),
    ("ServiceUnavailable", false),
    ("RequestThrottled", true),
];

impl Injector {
    /// An injector for this configuration.
    pub fn new(config: FaultConfig) -> Injector {
        let total_weight = config.weights.iter().map(|(_, w)| w).sum();
        let rng = fastrand::Rng::with_seed(config.seed);
        Injector {
            config,
            rng,
            total_weight,
        }
    }

    /// Change the rate (the kinds and the generator stay).
    pub fn set_rate(&mut self, rate: f64) {
        self.config.rate = rate.clamp(0.0, 1.0);
    }

    /// The configuration, for reports.
    pub fn describe(&self) -> serde_json::Value {
        let weights: BTreeMap<&str, f64> = self
            .config
            .weights
            .iter()
            .map(|(f, w)| (f.name(), *w))
            .collect();
        serde_json::json!({
            "rate": self.config.rate,
            "weights": weights,
            "latency_ms": self.config.latency.as_millis() as u64,
            "seed": self.config.seed,
        })
    }

    /// The fault for the next call, if any.
    pub fn pick(&mut self) -> Option<Fault> {
        if self.total_weight <= 0.0 || self.rng.f64() >= self.config.rate {
            return None;
        }
        let mut x = self.rng.f64() * self.total_weight;
        for (kind, w) in &self.config.weights {
            if x < *w {
                return Some(*kind);
            }
            x -= w;
        }
        self.config.weights.last().map(|(k, _)| *k)
    }

    /// For an entry-level fault, how each of `n` entries fails (`None`: it
    /// does not).
    pub fn entry_plan(&mut self, fault: Fault, n: usize) -> Vec<EntryFault> {
        let mut plan = vec![None; n];
        if n == 0 {
            return plan;
        }
        match fault {
            Fault::EntryRetryable => {
                for p in plan.iter_mut() {
                    if self.rng.bool() {
                        *p = Some(RETRYABLE_ENTRY_CODES[self.rng.usize(..3)]);
                    }
                }
                if plan.iter().all(Option::is_none) {
                    plan[self.rng.usize(..n)] = Some(RETRYABLE_ENTRY_CODES[self.rng.usize(..3)]);
                }
            }
            Fault::EntrySender => plan[self.rng.usize(..n)] = Some(("InvalidParameterValue", true)),
            _ => {}
        }
        plan
    }

    /// For a refused call: its status and code.
    pub fn call_error(&mut self, fault: Fault) -> (u16, &'static str) {
        match (fault, self.rng.bool()) {
            (Fault::Throttle, true) => (400, "ThrottlingException"),
            (Fault::Throttle, false) => (400, "RequestThrottled"),
            (_, true) => (500, "InternalError"),
            (_, false) => (503, "ServiceUnavailable"),
        }
    }

    /// An added latency, uniform up to the configured longest.
    pub fn latency(&mut self) -> Duration {
        let max = self.config.latency.as_millis() as u64;
        Duration::from_millis(if max == 0 { 0 } else { self.rng.u64(..=max) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn injector(rate: f64) -> Injector {
        Injector::new(FaultConfig {
            rate,
            weights: FaultConfig::parse_weights(DEFAULT_WEIGHTS).expect("default weights"),
            latency: Duration::from_millis(100),
            seed: 7,
        })
    }

    #[test]
    fn the_rate_and_the_weights_hold() {
        let mut inj = injector(0.3);
        let mut counts: BTreeMap<Fault, u32> = BTreeMap::new();
        let n = 100_000;
        for _ in 0..n {
            if let Some(f) = inj.pick() {
                *counts.entry(f).or_default() += 1;
            }
        }
        let faulted: u32 = counts.values().sum();
        assert!((faulted as f64 / n as f64 - 0.3).abs() < 0.01, "{faulted}");
        let throttle = counts[&Fault::Throttle] as f64 / faulted as f64;
        assert!((throttle - 0.2).abs() < 0.02, "{throttle}");
        assert!(injector(0.0).pick().is_none());
    }

    #[test]
    fn entry_plans_fail_at_least_one_entry_and_sender_faults_exactly_one() {
        let mut inj = injector(1.0);
        for n in 1..=10 {
            let p = inj.entry_plan(Fault::EntryRetryable, n);
            assert!(p.iter().any(Option::is_some));
            assert!(
                p.iter()
                    .flatten()
                    .all(|(c, sender)| !*sender || *c == "RequestThrottled")
            );
            let p = inj.entry_plan(Fault::EntrySender, n);
            assert_eq!(p.iter().flatten().count(), 1);
        }
    }

    #[test]
    fn weights_are_parsed_and_checked() {
        assert_eq!(
            FaultConfig::parse_weights("throttle=1, latency=2").expect("ok"),
            vec![(Fault::Throttle, 1.0), (Fault::Latency, 2.0)]
        );
        assert!(FaultConfig::parse_weights("nope=1").is_err());
        assert!(FaultConfig::parse_weights("throttle=-1").is_err());
        assert!(FaultConfig::parse_weights("throttle").is_err());
    }
}
