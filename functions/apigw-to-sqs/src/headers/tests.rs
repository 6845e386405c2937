//! The headers' tests: each header to its SQS parameter, the 400s, a FIFO
//! queue's needs for one queue and under routing rules.

use super::*;
use lambda_http::http::HeaderValue;
use sqs_forwarder::Env;

fn settings(pairs: &[(&str, &str)]) -> Settings {
    Settings::from_env(&Env::from_pairs(pairs)).expect("valid settings")
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            HeaderName::from_bytes(k.as_bytes()).expect("name"),
            HeaderValue::from_str(v).expect("value"),
        );
    }
    h
}

fn standard() -> EncodeRules {
    EncodeRules::default()
}

fn fifo() -> EncodeRules {
    EncodeRules {
        fifo: true,
        content_based_deduplication: Some(false),
        ..EncodeRules::default()
    }
}

#[test]
fn headers_map_to_sqs_parameters() {
    let s = settings(&[("ATTRIBUTE_HEADERS", "x-tenant:tenant,traceparent")]);
    let h = headers(&[
        ("X-Message-Group-Id", "orders-7"),
        ("Idempotency-Key", "\"8e03978e-40d5\""),
        ("x-tenant", "acme"),
        ("x-tenant", "beta"),
        ("Authorization", "Bearer secret"),
        ("traceparent", "00-abc-01"),
    ]);
    let p = read(&h, &s, &fifo()).expect("valid");
    assert_eq!(p.group_id.as_deref(), Some("orders-7"));
    assert_eq!(p.deduplication_id.as_deref(), Some("8e03978e-40d5"));
    assert_eq!(p.delay_seconds, None);
    assert_eq!(
        p.attributes,
        vec![
            Attribute::string("tenant", "acme, beta"),
            Attribute::string("traceparent", "00-abc-01"),
        ]
    );
    let single = p.message(Body::from("b"), false, 0);
    assert_eq!(single.deduplication_id.as_deref(), Some("8e03978e-40d5"));
    let third = p.message(Body::from("b"), true, 2);
    assert_eq!(third.deduplication_id.as_deref(), Some("8e03978e-40d5-2"));
    assert_eq!(third.position, 2);
    assert_eq!(third.attributes.len(), 2);
}

#[test]
fn standard_queues_take_a_delay_and_ignore_deduplication() {
    let h = headers(&[("X-Delay-Seconds", "900"), ("Idempotency-Key", "k")]);
    let p = read(&h, &settings(&[]), &standard()).expect("valid");
    assert_eq!(p.delay_seconds, Some(900));
    assert_eq!(p.deduplication_id, None);
    assert_eq!(p.message(Body::from("b"), true, 1).deduplication_id, None);
}

#[test]
fn bad_values_are_400s_naming_the_header() {
    let s = settings(&[("ATTRIBUTE_HEADERS", "x-tenant")]);
    for (pairs, rules, header) in [
        (
            vec![("X-Delay-Seconds", "901")],
            standard(),
            "x-delay-seconds",
        ),
        (
            vec![("X-Delay-Seconds", "soon")],
            standard(),
            "x-delay-seconds",
        ),
        (
            vec![
                ("X-Delay-Seconds", "5"),
                ("X-Message-Group-Id", "g"),
                ("Idempotency-Key", "k"),
            ],
            fifo(),
            "x-delay-seconds",
        ),
        (
            vec![("X-Message-Group-Id", "")],
            standard(),
            "x-message-group-id",
        ),
        (
            vec![("X-Message-Group-Id", "a"), ("X-Message-Group-Id", "b")],
            standard(),
            "x-message-group-id",
        ),
        (
            vec![("X-Message-Deduplication-Id", "x".repeat(129).leak())],
            fifo(),
            "x-message-deduplication-id",
        ),
        (
            vec![
                ("X-Message-Group-Id", "g"),
                ("X-Message-Deduplication-Id", "a"),
                ("Idempotency-Key", "b"),
            ],
            fifo(),
            "x-message-deduplication-id",
        ),
    ] {
        let r = read(&headers(&pairs), &s, &rules).expect_err(header);
        assert_eq!(
            (r.status, r.code),
            (StatusCode::BAD_REQUEST, "InvalidHeader"),
            "{pairs:?}"
        );
        assert!(r.message.starts_with(header), "{}", r.message);
    }
    let mut h = HeaderMap::new();
    h.insert(
        "x-tenant",
        HeaderValue::from_bytes(b"caf\xE9").expect("obs-text"),
    );
    let r = read(&h, &s, &standard()).expect_err("not ascii");
    assert!(r.message.starts_with("x-tenant"), "{}", r.message);
    assert!(!r.message.contains("caf"), "values are never echoed");
}

#[test]
fn fifo_needs_a_group_and_a_deduplication_id() {
    let s = settings(&[]);
    let r = read(&headers(&[("Idempotency-Key", "k")]), &s, &fifo()).expect_err("no group");
    assert_eq!(r.code, "MissingHeader");
    assert!(r.message.contains("x-message-group-id"));
    let r = read(&headers(&[("X-Message-Group-Id", "g")]), &s, &fifo()).expect_err("no dedup");
    assert_eq!(r.code, "MissingHeader");
    assert!(r.message.contains("idempotency-key"));
    // A default group id and content-based deduplication make both optional.
    let lenient = EncodeRules {
        default_group_id: Some("all".into()),
        content_based_deduplication: Some(true),
        ..fifo()
    };
    assert!(read(&headers(&[]), &s, &lenient).is_ok());
}

#[test]
fn batch_deduplication_ids_must_fit() {
    let p = Params {
        deduplication_id: Some("k".repeat(125)),
        ..Params::default()
    };
    assert!(p.check_batch(false, 1).is_ok());
    assert!(p.check_batch(true, 10).is_ok()); // "-9": 127
    assert!(p.check_batch(true, 100).is_ok()); // "-99": 128
    let r = p.check_batch(true, 101).expect_err("-100: 129");
    assert_eq!(r.code, "InvalidHeader");
}

#[test]
fn under_routing_rules_each_target_checks_its_own_needs() {
    let s = settings(&[]);
    // Nothing a FIFO queue needs is asked of the request: each message's
    // target checks its own; a delay is kept for the standard ones.
    let p = read_for(
        &headers(&[("Idempotency-Key", "k"), ("X-Delay-Seconds", "5")]),
        &s,
        Targets::Routed { any_fifo: true },
    )
    .expect("no FIFO check for the whole request");
    assert_eq!(
        p.deduplication_id.as_deref(),
        Some("k"),
        "kept for FIFO targets"
    );
    assert_eq!(p.delay_seconds, Some(5));
    assert_eq!(p.group_id, None);
    // No FIFO target: no deduplication id, as for one standard queue.
    let p = read_for(
        &headers(&[("Idempotency-Key", "k")]),
        &s,
        Targets::Routed { any_fifo: false },
    )
    .expect("valid");
    assert_eq!(p.deduplication_id, None);
    // Malformed values are still the request's 400s.
    let r = read_for(
        &headers(&[("X-Delay-Seconds", "soon")]),
        &s,
        Targets::Routed { any_fifo: true },
    )
    .expect_err("bad delay");
    assert_eq!(r.code, "InvalidHeader");
}
