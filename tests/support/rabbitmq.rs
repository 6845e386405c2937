//! RabbitMQ helpers for the rabbitmq-to-sqs end-to-end tests: the broker
//! (`RABBITMQ_TEST_URL`, default amqp://guest:guest@127.0.0.1:5672/%2f), the
//! function under test, and a fake SQS.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lapin::options::{
    BasicGetOptions, BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use rabbitmq_to_sqs::drain::PollReport;
use rabbitmq_to_sqs::{Handler, Settings};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::{Env, Forwarder, RetryPolicy, SendSettings, Transport};
use tokio::time::Instant;

// ---------------------------------------------------------------- broker

/// The broker's URL.
pub fn amqp_url() -> String {
    std::env::var("RABBITMQ_TEST_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| "amqp://guest:guest@127.0.0.1:5672/%2f".to_owned())
}

/// The broker's address (`RABBITMQ_TEST_URL`'s host and port).
pub fn broker_addr() -> std::net::SocketAddr {
    use std::net::ToSocketAddrs;
    let url = amqp_url();
    let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
    let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let host = host.split('/').next().unwrap_or(host);
    let host = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:5672")
    };
    host.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .unwrap_or_else(|| panic!("RABBITMQ_TEST_URL's host {host:?} does not resolve"))
}

/// `RABBITMQ_TEST_URL` with `addr` (a proxy in front of the broker) in
/// place of the broker's host and port, and `query` appended.
pub fn amqp_url_via(addr: std::net::SocketAddr, query: &str) -> String {
    let url = amqp_url();
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (userinfo, hostpath) = rest
        .rsplit_once('@')
        .expect("user info in RABBITMQ_TEST_URL");
    let path = hostpath.find('/').map_or("/%2f", |i| &hostpath[i..]);
    let path = path.split('?').next().unwrap_or(path);
    let q = if query.is_empty() {
        String::new()
    } else {
        format!("?{query}")
    };
    format!("{scheme}://{userinfo}@{addr}{path}{q}")
}

/// A name no other test uses.
pub fn unique(base: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{base}-{nanos}-{}", N.fetch_add(1, Ordering::SeqCst))
}

/// A test's own connection to the broker: declares its queues, publishes
/// with confirms, counts and takes messages, and deletes its queues at the end.
pub struct Broker {
    /// The connection.
    pub conn: Connection,
    /// A channel in confirm mode.
    pub ch: Channel,
    /// The queues to delete at the end.
    pub queues: Vec<String>,
    name: Option<String>,
}

impl Broker {
    /// Connect (with publisher confirms).
    pub async fn new() -> Self {
        Self::open(None, Vec::new()).await
    }

    /// Connect under a connection name (shown by `rabbitmqctl list_connections`).
    pub async fn named(name: &str) -> Self {
        Self::open(Some(name.to_owned()), Vec::new()).await
    }

    /// Connect to the broker through `url` (a proxy in front of it).
    pub async fn at(url: &str) -> Self {
        Self::open_at(url, None, Vec::new()).await
    }

    /// A new connection and channel in place of ones the broker closed (a
    /// restart), keeping the queues to clean up.
    pub async fn reconnect(self) -> Self {
        Self::open(self.name, self.queues).await
    }

    async fn open(name: Option<String>, queues: Vec<String>) -> Self {
        Self::open_at(&amqp_url(), name, queues).await
    }

    async fn open_at(url: &str, name: Option<String>, queues: Vec<String>) -> Self {
        let mut props = ConnectionProperties::default();
        if let Some(n) = &name {
            props = props.with_connection_name(n.as_str().into());
        }
        let conn = Connection::connect(url, props)
            .await
            .expect("RabbitMQ must run on 127.0.0.1:5672 (scripts/local-rabbitmq.sh start), or set RABBITMQ_TEST_URL");
        let ch = conn.create_channel().await.expect("channel");
        ch.confirm_select(ConfirmSelectOptions::default())
            .await
            .expect("publisher confirms");
        Broker {
            conn,
            ch,
            queues,
            name,
        }
    }
    /// A fresh queue; with `dead_letters`, also `<name>.dlq`, which gets
    /// what the queue dead-letters.
    pub async fn queue(&mut self, base: &str, dead_letters: bool) -> String {
        self.declare(base, dead_letters, false).await
    }

    /// A fresh durable queue: it and its persistent messages survive a
    /// broker restart.
    pub async fn durable_queue(&mut self, base: &str) -> String {
        self.declare(base, false, true).await
    }

    /// A fresh quorum queue with this `x-delivery-limit`, and `<name>.dlq`,
    /// which gets what it dead-letters (past the limit, among others).
    pub async fn quorum_queue(&mut self, base: &str, delivery_limit: i32) -> String {
        let name = unique(base);
        let dlq = format!("{name}.dlq");
        self.ch
            .queue_declare(
                dlq.as_str().into(),
                QueueDeclareOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("declare dlq");
        self.queues.push(dlq.clone());
        let mut args = FieldTable::default();
        args.insert(
            "x-queue-type".into(),
            AMQPValue::LongString("quorum".into()),
        );
        args.insert(
            "x-delivery-limit".into(),
            AMQPValue::LongInt(delivery_limit),
        );
        args.insert(
            "x-dead-letter-exchange".into(),
            AMQPValue::LongString("".into()),
        );
        args.insert(
            "x-dead-letter-routing-key".into(),
            AMQPValue::LongString(dlq.as_str().into()),
        );
        self.ch
            .queue_declare(
                name.as_str().into(),
                QueueDeclareOptions {
                    durable: true,
                    ..QueueDeclareOptions::default()
                },
                args,
            )
            .await
            .expect("declare the quorum queue");
        self.queues.push(name.clone());
        name
    }

    async fn declare(&mut self, base: &str, dead_letters: bool, durable: bool) -> String {
        let name = unique(base);
        let mut args = FieldTable::default();
        if dead_letters {
            let dlq = format!("{name}.dlq");
            self.ch
                .queue_declare(
                    dlq.as_str().into(),
                    QueueDeclareOptions::default(),
                    FieldTable::default(),
                )
                .await
                .expect("declare dlq");
            self.queues.push(dlq.clone());
            args.insert(
                "x-dead-letter-exchange".into(),
                AMQPValue::LongString("".into()),
            );
            args.insert(
                "x-dead-letter-routing-key".into(),
                AMQPValue::LongString(dlq.as_str().into()),
            );
        }
        self.ch
            .queue_declare(
                name.as_str().into(),
                QueueDeclareOptions {
                    durable,
                    ..QueueDeclareOptions::default()
                },
                args,
            )
            .await
            .expect("declare queue");
        self.queues.push(name.clone());
        name
    }

    /// Publish to `queue` through the default exchange; waits for the confirm.
    pub async fn publish(&self, queue: &str, body: &[u8], props: BasicProperties) {
        self.ch
            .basic_publish(
                "".into(),
                queue.into(),
                BasicPublishOptions::default(),
                body,
                props,
            )
            .await
            .expect("publish")
            .await
            .expect("confirm");
    }

    /// Publish a text body without properties.
    pub async fn publish_text(&self, queue: &str, body: &str) {
        self.publish(queue, body.as_bytes(), BasicProperties::default())
            .await;
    }

    /// Ready messages in `queue`.
    pub async fn ready(&self, queue: &str) -> u32 {
        self.ch
            .queue_declare(
                queue.into(),
                QueueDeclareOptions {
                    passive: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("passive declare")
            .message_count()
    }

    /// Take every message of `queue` (acked), bodies in queue order.
    pub async fn take_all(&self, queue: &str) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(m) = self
            .ch
            .basic_get(queue.into(), BasicGetOptions { no_ack: true })
            .await
            .expect("basic.get")
        {
            out.push(String::from_utf8_lossy(&m.delivery.data).into_owned());
        }
        out
    }

    /// Delete the queues and close the connection.
    pub async fn cleanup(self) {
        for q in &self.queues {
            let _ = self
                .ch
                .queue_delete(q.as_str().into(), QueueDeleteOptions::default())
                .await;
        }
        let _ = self.conn.close(200, "OK".into()).await;
    }
}

/// Have the broker close the connection whose client properties hold
/// `name` (`rabbitmqctl close_connection`).
pub fn close_connection_named(name: &str) {
    let out = std::process::Command::new("rabbitmqctl")
        .args(["list_connections", "pid", "client_properties"])
        .output()
        .expect("rabbitmqctl must be installed for this test");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains(name))
        .unwrap_or_else(|| panic!("connection {name} not listed by rabbitmqctl: {text}"));
    let pid = line.split_whitespace().next().expect("pid");
    let status = std::process::Command::new("rabbitmqctl")
        .args([
            "close_connection",
            pid,
            "test: connection dropped mid-drain",
        ])
        .status()
        .expect("rabbitmqctl close_connection");
    assert!(status.success(), "rabbitmqctl close_connection failed");
}

// ---------------------------------------------------------------- function

/// Settings from variables.
pub fn settings(vars: &[(&str, &str)]) -> Settings {
    Settings::from_env(&Env::from_pairs(vars)).expect("valid test settings")
}

/// Two attempts, milliseconds apart.
pub fn quick_retries() -> SendSettings {
    SendSettings {
        retry: RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        },
        ..SendSettings::default()
    }
}

/// A forwarder over `transport` with quick retries.
pub fn fake_forwarder<T: Transport>(transport: T, fifo: bool) -> Forwarder<T> {
    Forwarder::new(
        transport,
        quick_retries(),
        EncodeRules {
            fifo,
            ..EncodeRules::default()
        },
    )
}

/// The function under test, its AMQP connection named uniquely.
pub fn function<T: Transport>(vars: &[(&str, &str)], forwarder: Forwarder<T>) -> Handler<T> {
    // A generous idle wait: on a loaded machine a delivery may take a while,
    // and the tests count exactly what was drained.
    let mut all = vec![("RABBITMQ_IDLE_MS", "1000")];
    all.extend_from_slice(vars);
    Handler::new(settings(&all), forwarder, Duration::from_millis(200), None)
        .expect("function")
        .with_connection_name(unique("rmq-e2e"))
}

/// A minute from now.
pub fn far() -> Instant {
    Instant::now() + Duration::from_secs(60)
}

/// Poll until [`far`]; panics on an error.
pub async fn poll<T: Transport>(f: &Handler<T>) -> PollReport {
    f.poll_until(far(), None).await.expect("poll")
}
