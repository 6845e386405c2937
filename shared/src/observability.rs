//! Logs and metrics.
//!
//! Logs go through `tracing` to standard error: JSON lines when running in
//! Lambda (or `LOG_FORMAT=json`), text elsewhere; `RUST_LOG` sets the level
//! (default `info`). Metrics go through the `metrics` facade to a CloudWatch
//! Embedded Metric Format collector; [`Observability::flush`] writes one EMF
//! document to standard output, where Lambda's log capture turns it into
//! CloudWatch metrics. Nothing here logs message bodies or credentials, and
//! the AMQP client's trace-level frame dumps are never enabled.

use std::sync::OnceLock;

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Handle to the metrics collector.
#[derive(Clone, Copy)]
pub struct Observability {
    collector: Option<&'static metrics_cloudwatch_embedded::Collector>,
}

static INSTALLED: OnceLock<Observability> = OnceLock::new();

/// Whether this process runs inside AWS Lambda.
pub fn in_lambda() -> bool {
    std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some()
}

/// Install the log subscriber and the metrics collector, once per process;
/// later calls return the first handle.
pub fn init(format: LogFormat, metrics_namespace: &str, service: &str) -> Observability {
    *INSTALLED.get_or_init(|| {
        let filter = quiet_amqp(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        );
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

/// `filter` with the AMQP client's trace logs turned off: they print raw
/// frames, the login included, so never below debug, whatever `RUST_LOG`
/// says. [`init`] applies it; tests capture logs through it.
pub fn quiet_amqp(mut filter: EnvFilter) -> EnvFilter {
    for quiet in [
        "lapin=debug",
        "amq_protocol=debug",
        "amq_protocol_types=debug",
    ] {
        if let Ok(d) = quiet.parse() {
            filter = filter.add_directive(d);
        }
    }
    filter
}

impl std::fmt::Debug for Observability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observability")
            .field("metrics", &self.collector.is_some())
            .finish()
    }
}

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
