//! The broker: its URL, the credentials, the connection with its timeouts,
//! and errors that never show the password.
//!
//! The password can sit in `RABBITMQ_URL` or come from a Secrets Manager
//! secret ([`crate::secret`]). Either way it never reaches a log line or an
//! error: URLs are shown [`redact`]ed, and every text that comes back from
//! the AMQP client is [`Secrets::scrub`]bed of the password before it is
//! shown.

use std::fmt;
use std::time::Duration;

use amq_protocol::uri::{AMQPScheme, AMQPUri, SASLMechanism};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use tokio::time::Instant;

use crate::amqp::{self, Connection};

/// What replaces a password in anything shown.
pub const MASK: &str = "***";

/// Log directives that keep the AMQP codec's trace logs off (they could
/// print raw frames, the login included), so never below debug, whatever
/// `RUST_LOG` says. They are the function's
/// [`ColdStart::LOG_DIRECTIVES`](sqs_forwarder::setup::startup::ColdStart::LOG_DIRECTIVES),
/// added to the log filter before it is installed; tests capture logs
/// through them.
pub const QUIET_AMQP: &[&str] = &["amq_protocol=debug", "amq_protocol_types=debug"];

/// A URL with its password replaced by [`MASK`]. Works on text that is not a
/// valid URL too: everything between the user name and the last `@` of the
/// authority is hidden.
pub fn redact(raw: &str) -> String {
    let raw = raw.trim();
    let Some(scheme_end) = raw.find("://") else {
        // Not a URL at all: show it only if it cannot hold a password.
        return if raw.contains('@') || raw.contains(':') {
            "(hidden: not a URL)".to_owned()
        } else {
            raw.to_owned()
        };
    };
    let (scheme, rest) = (&raw[..scheme_end], &raw[scheme_end + 3..]);
    // The userinfo ends at the last '@' (a password may hold '/', '?' or '#'
    // when it was not percent-encoded).
    match rest.rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            let user = match userinfo.find(':') {
                Some(colon) => format!("{}:{MASK}", &userinfo[..colon]),
                None => userinfo.to_owned(),
            };
            format!("{scheme}://{user}@{}", &rest[at + 1..])
        }
        None => raw.to_owned(),
    }
}

/// The passwords in play, to scrub from any text before it is shown.
#[derive(Clone, Default)]
pub struct Secrets(Vec<String>);

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({} hidden)", self.0.len())
    }
}

impl Secrets {
    /// Remember `secret` (and its percent-encoded form) for scrubbing.
    pub fn add(&mut self, secret: &str) {
        if secret.is_empty() {
            return;
        }
        for s in [secret.to_owned(), percent_encode(secret)] {
            if !self.0.contains(&s) {
                self.0.push(s);
            }
        }
        // Longest first, so that a secret containing another is hidden whole.
        self.0.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    /// `text` with every known secret replaced by [`MASK`].
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in &self.0 {
            out = out.replace(s.as_str(), MASK);
        }
        out
    }
}

/// What RFC 3986 leaves unencoded (its unreserved characters): a password
/// in a URL is written with everything else percent-encoded.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn percent_encode(s: &str) -> String {
    utf8_percent_encode(s, UNRESERVED).to_string()
}

/// A user name and password for the broker.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// User name; `None` keeps the URL's.
    pub username: Option<String>,
    /// Password.
    pub password: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &MASK)
            .finish()
    }
}

/// A parsed `RABBITMQ_URL`. Its `Debug` and `Display` show it redacted.
#[derive(Clone)]
pub struct BrokerUrl {
    uri: AMQPUri,
    redacted: String,
    /// Whether the URL's text holds a password (the parser fills in
    /// `guest` when it does not).
    password_in_url: bool,
}

impl fmt::Debug for BrokerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BrokerUrl({})", self.redacted)
    }
}

impl fmt::Display for BrokerUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted)
    }
}

impl BrokerUrl {
    /// Parse an `amqp://` or `amqps://` URL. The error says what is wrong
    /// and never holds the URL's password.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let raw = raw.trim();
        let lower = raw.to_ascii_lowercase();
        if !(lower.starts_with("amqp://") || lower.starts_with("amqps://")) {
            return Err("the scheme must be amqp:// or amqps://".into());
        }
        let uri: AMQPUri = raw.parse().map_err(|e: String| {
            // The parser's message may quote the input: hide it.
            let mut secrets = Secrets::default();
            if let Some(rest) = raw.split_once("://").map(|(_, r)| r)
                && let Some(at) = rest.rfind('@')
                && let Some((_, pw)) = rest[..at].split_once(':')
            {
                secrets.add(pw);
            }
            secrets.scrub(&e.replace(raw, &redact(raw)))
        })?;
        if uri.authority.host.is_empty() {
            return Err("the URL names no host".into());
        }
        if !matches!(uri.query.auth_mechanism, None | Some(SASLMechanism::Plain)) {
            return Err(
                "auth_mechanism: only PLAIN (the default) is supported; remove the parameter"
                    .into(),
            );
        }
        let password_in_url = raw
            .split_once("://")
            .and_then(|(_, rest)| rest.rfind('@').map(|at| rest[..at].contains(':')))
            .unwrap_or(false);
        Ok(BrokerUrl {
            redacted: redact(raw),
            uri,
            password_in_url,
        })
    }

    /// The URL with its password hidden.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }

    /// Whether the connection uses TLS (`amqps://`).
    pub fn tls(&self) -> bool {
        self.uri.scheme == AMQPScheme::AMQPS
    }

    /// The user name in the URL.
    pub fn username(&self) -> &str {
        &self.uri.authority.userinfo.username
    }

    /// The virtual host.
    pub fn vhost(&self) -> &str {
        &self.uri.vhost
    }

    /// The password in the URL (empty when none).
    pub fn password(&self) -> &str {
        &self.uri.authority.userinfo.password
    }

    /// The broker's host name or address.
    pub fn host(&self) -> &str {
        &self.uri.authority.host
    }

    /// Whether the URL's text holds a password.
    pub fn has_password(&self) -> bool {
        self.password_in_url
    }

    /// What a careful operator should hear at cold start about this URL:
    /// a login sent in plain text (`amqp://` to a host that is not loopback
    /// or a private address; host names other than `localhost` count as
    /// public, since only DNS could tell), and a password kept in
    /// `RABBITMQ_URL` (readable by anyone who may read the function's
    /// configuration) when `RABBITMQ_PASSWORD_SECRET` could hold it.
    /// Each text says what to use instead; none holds the password.
    pub fn start_warnings(&self, password_secret: bool) -> Vec<String> {
        let mut warnings = Vec::new();
        if !self.tls() && !is_local_or_private(self.host()) {
            warnings.push(format!(
                "RABBITMQ_URL={} is plain-text amqp:// to {:?}, which is not a loopback or private address: the login and every message cross the network unencrypted; use amqps:// (TLS, port 5671 on Amazon MQ)",
                self.redacted,
                self.host()
            ));
        }
        if self.has_password() {
            warnings.push(if password_secret {
                format!(
                    "RABBITMQ_URL={} holds a password, which RABBITMQ_PASSWORD_SECRET overrides: remove it from the URL, where anyone who can read the function's configuration sees it",
                    self.redacted
                )
            } else {
                format!(
                    "RABBITMQ_URL={} holds the password, where anyone who can read the function's configuration sees it: put it in a Secrets Manager secret and name that in RABBITMQ_PASSWORD_SECRET",
                    self.redacted
                )
            });
        }
        warnings
    }

    /// The URI to connect with: these credentials (if any) in place of the
    /// URL's, and the heartbeat and TCP connect timeout, unless the URL sets
    /// its own (`?heartbeat=..&connection_timeout=..`).
    pub fn connect_uri(
        &self,
        credentials: Option<&Credentials>,
        heartbeat: u16,
        connect_timeout: Duration,
    ) -> AMQPUri {
        let mut uri = self.uri.clone();
        if let Some(c) = credentials {
            uri.authority.userinfo.password = c.password.clone();
            if let Some(u) = &c.username {
                uri.authority.userinfo.username = u.clone();
            }
        }
        if uri.query.heartbeat.is_none() {
            uri.query.heartbeat = Some(heartbeat);
        }
        if uri.query.connection_timeout.is_none() {
            uri.query.connection_timeout =
                Some(u64::try_from(connect_timeout.as_millis()).unwrap_or(u64::MAX));
        }
        uri
    }
}

/// Whether `host` is `localhost`, a loopback, private (RFC 1918, IPv6
/// unique-local) or link-local address: a network where plain-text AMQP
/// is the operator's choice.
pub fn is_local_or_private(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match bare.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Ok(std::net::IpAddr::V6(ip)) => {
            let first = ip.segments()[0];
            ip.is_loopback()
                || (first & 0xfe00) == 0xfc00 // fc00::/7, unique local
                || (first & 0xffc0) == 0xfe80 // fe80::/10, link local
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| v4.is_loopback() || v4.is_private())
        }
        Err(_) => false,
    }
}

/// A failure to reach or use the broker. The texts never hold a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrokerError {
    /// No answer within `RABBITMQ_CONNECT_TIMEOUT_MS`.
    #[error(
        "could not connect to RabbitMQ at {url}: no complete handshake within {ms} ms (RABBITMQ_CONNECT_TIMEOUT_MS); check the host, port, amqp/amqps and security groups"
    )]
    Timeout {
        /// Redacted URL.
        url: String,
        /// The timeout.
        ms: u128,
    },
    /// The broker refused the login, or the user's access to the vhost.
    #[error(
        "RabbitMQ at {url} refused the login of user {user:?} to vhost {vhost:?}: a wrong user name or password, no permission on the vhost, or a vhost the broker does not have ({detail})"
    )]
    AccessRefused {
        /// Redacted URL.
        url: String,
        /// The user name.
        user: String,
        /// The vhost.
        vhost: String,
        /// The broker's words, scrubbed.
        detail: String,
    },
    /// Any other failure to connect.
    #[error("could not connect to RabbitMQ at {url}: {detail}")]
    Connect {
        /// Redacted URL.
        url: String,
        /// What went wrong, scrubbed.
        detail: String,
    },
    /// The password secret could not be read.
    #[error(
        "could not read the RabbitMQ password from secret {secret:?} (RABBITMQ_PASSWORD_SECRET): {detail}"
    )]
    Secret {
        /// The secret id.
        secret: String,
        /// What went wrong (never the secret's value).
        detail: String,
    },
}

impl BrokerError {
    /// Whether the broker refused the credentials.
    pub fn is_access_refused(&self) -> bool {
        matches!(self, BrokerError::AccessRefused { .. })
    }
}

/// Connect to the broker, within `connect_timeout` for the whole handshake
/// (TCP, TLS, AMQP), and by `deadline` when that comes first.
pub async fn connect(
    url: &BrokerUrl,
    credentials: Option<&Credentials>,
    heartbeat: u16,
    connect_timeout: Duration,
    deadline: Option<Instant>,
    connection_name: &str,
    secrets: &Secrets,
) -> Result<Connection, BrokerError> {
    let uri = url.connect_uri(credentials, heartbeat, connect_timeout);
    let user = uri.authority.userinfo.username.clone();
    let timeout_at = Instant::now() + connect_timeout;
    let (at, by_deadline) = match deadline {
        Some(d) if d < timeout_at => (d, true),
        _ => (timeout_at, false),
    };
    match tokio::time::timeout_at(at, amqp::open(&uri, connection_name)).await {
        Err(_) if by_deadline => Err(BrokerError::Connect {
            url: url.redacted().to_owned(),
            detail: "no complete handshake before the invocation's deadline (less half of DEADLINE_MARGIN_MS)".into(),
        }),
        Err(_) => Err(BrokerError::Timeout {
            url: url.redacted().to_owned(),
            ms: connect_timeout.as_millis(),
        }),
        Ok(Err(e)) if e.is_access_refused() => Err(BrokerError::AccessRefused {
            url: url.redacted().to_owned(),
            user,
            vhost: url.vhost().to_owned(),
            detail: secrets.scrub(&e.to_string()),
        }),
        Ok(Err(e)) => Err(BrokerError::Connect {
            url: url.redacted().to_owned(),
            detail: secrets.scrub(&e.to_string()),
        }),
        Ok(Ok(c)) => Ok(c),
    }
}

#[cfg(test)]
mod tests;
