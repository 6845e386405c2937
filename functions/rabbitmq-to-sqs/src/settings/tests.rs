//! Tests of reading rabbitmq-to-sqs's settings.

use super::*;

fn read(pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
    Settings::from_env(&Env::from_pairs(pairs))
}

#[test]
fn defaults_without_a_broker() {
    let s = read(&[]).expect("defaults");
    assert!(s.broker.is_none());
    assert_eq!(s.mode, DeliveryMode::AtLeastOnce);
    assert_eq!(s.prefetch, 100);
    assert_eq!(s.max_messages, 10_000);
    assert_eq!(s.stop_margin, Duration::from_secs(5));
    assert_eq!(s.connect_timeout, Duration::from_secs(5));
    assert_eq!(s.heartbeat, 30);
    assert_eq!(s.idle, Duration::from_millis(200));
    assert_eq!(s.mapping.dedup, DedupFrom::Auto);
    assert_eq!(s.mapping.group, GroupFrom::RoutingKey);
    assert_eq!(
        s.mapping.properties,
        vec![Property::ContentType, Property::RoutingKey]
    );
    assert_eq!(s.mapping.headers, HeaderSelection::All);
}

#[test]
fn every_default_in_variables_parses() {
    // The defaults in VARIABLES are what from_env uses when unset.
    let pairs: Vec<(&str, &str)> = VARIABLES
        .iter()
        .filter(|v| !v.default.is_empty())
        .map(|v| (v.name, v.default))
        .collect();
    let explicit = read(&pairs).expect("defaults spelled out");
    let implicit = read(&[]).expect("defaults");
    assert_eq!(explicit.prefetch, implicit.prefetch);
    assert_eq!(explicit.mapping, implicit.mapping);
    assert_eq!(explicit.stop_margin, implicit.stop_margin);
}

#[test]
fn broker_settings() {
    let s = read(&[
        (
            "RABBITMQ_URL",
            "amqps://svc:pw@b-1.mq.eu-west-1.amazonaws.com:5671/%2f",
        ),
        ("RABBITMQ_QUEUES", "orders, invoices"),
        ("RABBITMQ_PASSWORD_SECRET", "mq/svc"),
    ])
    .expect("valid");
    let b = s.broker.expect("broker");
    assert_eq!(b.queues, vec!["orders", "invoices"]);
    assert_eq!(b.password_secret.as_deref(), Some("mq/svc"));
    assert_eq!(
        b.url.redacted(),
        "amqps://svc:***@b-1.mq.eu-west-1.amazonaws.com:5671/%2f"
    );
}

#[test]
fn url_and_queues_go_together() {
    let e = read(&[("RABBITMQ_URL", "amqp://guest:guest@localhost")]).expect_err("no queues");
    assert_eq!(e.variable, "RABBITMQ_QUEUES");
    let e = read(&[("RABBITMQ_QUEUES", "q")]).expect_err("no url");
    assert_eq!(e.variable, "RABBITMQ_URL");
    let e = read(&[("RABBITMQ_PASSWORD_SECRET", "s")]).expect_err("no url");
    assert_eq!(e.variable, "RABBITMQ_PASSWORD_SECRET");
}

#[test]
fn a_bad_url_is_refused_without_showing_the_password() {
    for raw in [
        "http://guest:Sup3rSecret@localhost/",
        "amqp://guest:Sup3rSecret@local host/",
        "amqp://guest:Sup3rSecret@localhost:99999/",
        "amqp//guest:Sup3rSecret@localhost",
    ] {
        let e = read(&[("RABBITMQ_URL", raw), ("RABBITMQ_QUEUES", "q")]).expect_err(raw);
        assert_eq!(e.variable, "RABBITMQ_URL");
        let text = e.to_string();
        assert!(!text.contains("Sup3rSecret"), "{text}");
        assert!(text.contains("amqp://user:password@host"), "{text}");
    }
}

#[test]
fn modes_and_their_rules() {
    let s = read(&[("DELIVERY_MODE", "exactly-once")]).expect("valid");
    assert_eq!(s.mode, DeliveryMode::ExactlyOnce);
    assert_eq!(s.mapping.dedup, DedupFrom::CorrelationId);
    let e = read(&[
        ("DELIVERY_MODE", "exactly-once"),
        ("DEDUPLICATION_ID_FROM", "message-id"),
    ])
    .expect_err("conflict");
    assert_eq!(e.variable, "DEDUPLICATION_ID_FROM");
    let s = read(&[("DELIVERY_MODE", "auto-ack")]).expect("valid");
    assert_eq!(s.mode, DeliveryMode::AutoAck);
    let e = read(&[("DELIVERY_MODE", "at-most-once")]).expect_err("unknown");
    assert_eq!(
        e.to_string(),
        "invalid configuration: DELIVERY_MODE=\"at-most-once\": one of: at-least-once, exactly-once, auto-ack"
    );
}

#[test]
fn numbers_are_bounded() {
    for (name, bad) in [
        ("RABBITMQ_PREFETCH", "0"),
        ("RABBITMQ_PREFETCH", "65536"),
        ("RABBITMQ_MAX_MESSAGES", "0"),
        ("RABBITMQ_STOP_MARGIN_MS", "-1"),
        ("RABBITMQ_CONNECT_TIMEOUT_MS", "10"),
        ("RABBITMQ_HEARTBEAT_S", "x"),
        ("RABBITMQ_IDLE_MS", "5"),
    ] {
        let e = read(&[(name, bad)]).expect_err(name);
        assert_eq!(e.variable, name);
        assert_eq!(e.value, bad);
    }
}

#[test]
fn group_and_attribute_choices() {
    let s = read(&[
        ("GROUP_ID_FROM", "header:tenant"),
        ("PROPERTY_ATTRIBUTES", "message-id, timestamp,message-id"),
        ("HEADER_ATTRIBUTES", "tenant, trace-id"),
    ])
    .expect("valid");
    assert_eq!(s.mapping.group, GroupFrom::Header("tenant".into()));
    assert_eq!(
        s.mapping.properties,
        vec![Property::MessageId, Property::Timestamp]
    );
    assert_eq!(
        s.mapping.headers,
        HeaderSelection::Only(vec!["tenant".into(), "trace-id".into()])
    );
    let s = read(&[
        ("PROPERTY_ATTRIBUTES", "none"),
        ("HEADER_ATTRIBUTES", "none"),
    ])
    .expect("valid");
    assert!(s.mapping.properties.is_empty());
    assert_eq!(s.mapping.headers, HeaderSelection::None);
    assert_eq!(
        read(&[("GROUP_ID_FROM", "header:")])
            .expect_err("empty header")
            .variable,
        "GROUP_ID_FROM"
    );
    assert_eq!(
        read(&[("PROPERTY_ATTRIBUTES", "content-type,body")])
            .expect_err("unknown property")
            .variable,
        "PROPERTY_ATTRIBUTES"
    );
}
