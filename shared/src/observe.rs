//! Logs and metrics.
//!
//! Logs go through `tracing` to standard error: JSON lines when running in
//! Lambda (or `LOG_FORMAT=json`), text elsewhere; `RUST_LOG` sets the level
//! (default `info`). Metrics go through the `metrics` facade to a CloudWatch
//! Embedded Metric Format collector; [`Observability::flush`] writes one EMF
//! document to standard output, where Lambda's log capture turns it into
//! CloudWatch metrics. Nothing here logs message bodies or credentials. A
//! function whose dependencies log what must not be shown adds directives
//! that hold them back, whatever `RUST_LOG` says ([`add_directives`], before
//! [`init`]; [`crate::setup::startup::main`] adds a function's
//! [`ColdStart::LOG_DIRECTIVES`](crate::setup::startup::ColdStart::LOG_DIRECTIVES)
//! first thing).

pub mod metrics;

#[cfg(feature = "lambda")]
use std::sync::{Mutex, OnceLock};

#[cfg(feature = "lambda")]
use tracing_subscriber::EnvFilter;

#[cfg(feature = "lambda")]
use crate::setup::config::LogFormat;

/// Handle to the metrics collector.
#[cfg(feature = "lambda")]
#[derive(Clone, Copy)]
pub struct Observability {
    collector: Option<&'static metrics_cloudwatch_embedded::Collector>,
}

#[cfg(feature = "lambda")]
static INSTALLED: OnceLock<Observability> = OnceLock::new();

/// Whether this process runs inside AWS Lambda.
#[cfg(feature = "lambda")]
pub fn in_lambda() -> bool {
    std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some()
}

/// Install the log subscriber and the metrics collector, once per process;
/// later calls return the first handle.
#[cfg(feature = "lambda")]
pub fn init(format: LogFormat, metrics_namespace: &str, service: &str) -> Observability {
    *INSTALLED.get_or_init(|| {
        let filter = filter();
        let json = match format {
            LogFormat::Json => true,
            LogFormat::Text => false,
            LogFormat::Auto => in_lambda(),
        };
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr);
        let _ = if json {
            builder.json().with_current_span(false).try_init()
        } else {
            builder.with_target(false).try_init()
        };
        let collector = metrics_cloudwatch_embedded::Builder::new()
            .cloudwatch_namespace(metrics_namespace.to_owned())
            .with_dimension("Service", service.to_owned())
            .init()
            .map_err(|e| tracing::warn!(error = %e, "metrics collector not installed"))
            .ok();
        Observability { collector }
    })
}

/// Directives added by [`add_directives`], in order.
#[cfg(feature = "lambda")]
static DIRECTIVES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The log filter: `RUST_LOG` (default `info`), then every directive added.
#[cfg(feature = "lambda")]
fn filter() -> EnvFilter {
    let base = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let added = DIRECTIVES.lock().map(|d| d.clone()).unwrap_or_default();
    with_directives(base, &added)
}

/// `filter` with these directives (`target=level`) added, later ones
/// winning over `RUST_LOG`'s for the same target; one that does not parse
/// is left out.
#[cfg(feature = "lambda")]
pub fn with_directives<S: AsRef<str>>(mut filter: EnvFilter, directives: &[S]) -> EnvFilter {
    for d in directives {
        if let Ok(d) = d.as_ref().parse() {
            filter = filter.add_directive(d);
        }
    }
    filter
}

/// Add directives (`target=level`) to this process's log filter, whatever
/// `RUST_LOG` says: a function holds back what a dependency logs and must
/// not be shown. They are part of the filter [`init`] installs, so they must
/// come before it; added later, they do not apply, and a warning says so.
#[cfg(feature = "lambda")]
pub fn add_directives(directives: &[&str]) {
    if let Ok(mut added) = DIRECTIVES.lock() {
        for d in directives {
            if !added.iter().any(|a| a == d) {
                added.push((*d).to_owned());
            }
        }
    }
    if INSTALLED.get().is_some() && !directives.is_empty() {
        tracing::warn!(
            ?directives,
            "log directives added after the log filter was installed do not apply"
        );
    }
}

#[cfg(feature = "lambda")]
impl std::fmt::Debug for Observability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observability")
            .field("metrics", &self.collector.is_some())
            .finish()
    }
}

#[cfg(feature = "lambda")]
impl Observability {
    /// Write the metrics gathered since the last flush as one EMF document on
    /// standard output.
    pub fn flush(&self) {
        if let Some(c) = self.collector
            && let Err(e) = c.flush(std::io::stdout().lock())
        {
            tracing::warn!(error = %e, "could not write metrics");
        }
    }

    /// Write the metrics gathered since the last flush to `writer`.
    pub fn flush_to(&self, writer: impl std::io::Write) -> std::io::Result<()> {
        match self.collector {
            Some(c) => c.flush(writer),
            None => Ok(()),
        }
    }
}

#[cfg(all(test, feature = "lambda"))]
mod tests {
    use super::*;

    #[test]
    fn added_directives_join_the_filter_once() {
        add_directives(&["some_dependency=debug"]);
        add_directives(&["some_dependency=debug", "other_dependency=warn"]);
        let shown = filter().to_string();
        assert_eq!(shown.matches("some_dependency=debug").count(), 1, "{shown}");
        assert!(shown.contains("other_dependency=warn"), "{shown}");
    }
}
