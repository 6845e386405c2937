//! Tests of reading the shared configuration.

use super::*;
use crate::send::offload::SizeAttribute;
use std::collections::HashMap;

fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|k| map.get(k).cloned())
}

const URL: &str = "https://sqs.eu-west-1.amazonaws.com/123456789012/q";

#[test]
fn defaults() {
    let c = config(&[("QUEUE_URL", URL)]).expect("valid");
    assert_eq!(c.queue, QueueTarget::Url(URL.into()));
    assert_eq!(c.max_batch_entries, 10);
    assert_eq!(c.max_message_bytes, None);
    assert_eq!(c.fallback_message_bytes, 1_048_576);
    assert_eq!(c.max_batch_bytes, 1_048_576);
    assert_eq!(c.max_in_flight, 4);
    assert_eq!(c.retry, RetryPolicy::default());
    // MAX_IN_FLIGHT unset follows Lambda's memory; set, it is as set.
    let at = |mb: &str, set: Option<&str>| {
        let mut vars = vec![("QUEUE_URL", URL), (MEMORY_SIZE_VARIABLE, mb)];
        vars.extend(set.map(|v| ("MAX_IN_FLIGHT", v)));
        config(&vars).expect("valid").max_in_flight
    };
    assert_eq!(at("128", None), 16);
    assert_eq!(at("512", None), 16);
    assert_eq!(at("1769", None), 27);
    assert_eq!(at("10240", None), 64);
    assert_eq!(at("1769", Some("4")), 4);
    assert_eq!(at("not a number", None), 4);
    // ... and so do the bytes they may carry together, unless it is set.
    let bytes = |mb: &str, set: Option<&str>| {
        let mut vars = vec![("QUEUE_URL", URL), (MEMORY_SIZE_VARIABLE, mb)];
        vars.extend(set.map(|v| ("MAX_IN_FLIGHT", v)));
        config(&vars).expect("valid").max_in_flight_bytes
    };
    assert_eq!(bytes("128", None), Some(4 * 1_048_576));
    assert_eq!(bytes("512", None), Some(8 * 1_048_576));
    assert_eq!(bytes("1769", None), Some(27 * 1_048_576));
    assert_eq!(bytes("128", Some("16")), None);
    assert_eq!(c.max_in_flight_bytes, None);
    assert_eq!(c.oversize, OversizePolicy::Fail);
    assert_eq!(c.body_encoding, BodyEncoding::Auto);
    assert_eq!(c.fifo_order, FifoOrder::Strict);
    assert_eq!(c.encoding_attribute, "sqs-forwarder.encoding");
    assert!(!c.queue.is_fifo());
}

#[test]
fn errors_name_variable_value_and_allowed() {
    let e = config(&[("QUEUE_URL", URL), ("MAX_BATCH_ENTRIES", "11")]).expect_err("bad");
    assert_eq!(e.variable, "MAX_BATCH_ENTRIES");
    assert_eq!(e.value, "11");
    assert_eq!(
        e.to_string(),
        "invalid configuration: MAX_BATCH_ENTRIES=\"11\": an integer from 1 to 10"
    );
    let e = config(&[("QUEUE_URL", URL), ("MAX_MESSAGE_BYTES", "256k")]).expect_err("bad");
    assert_eq!(
        (e.variable.as_str(), e.allowed.as_str()),
        ("MAX_MESSAGE_BYTES", "an integer from 1024 to 1048576 bytes")
    );
    let e = config(&[("QUEUE_URL", URL), ("OVERSIZE_POLICY", "spill")]).expect_err("bad");
    assert_eq!(e.allowed, "one of: fail, drop, offload");
    let e = config(&[("QUEUE_URL", URL), ("BODY_ENCODING", "hex")]).expect_err("bad");
    assert_eq!(e.variable, "BODY_ENCODING");
    let e = config(&[
        ("QUEUE_URL", URL),
        ("RETRY_BASE_DELAY_MS", "100"),
        ("RETRY_MAX_DELAY_MS", "50"),
    ])
    .expect_err("bad");
    assert_eq!(e.variable, "RETRY_MAX_DELAY_MS");
    let e = config(&[("QUEUE_URL", URL), ("ENCODING_ATTRIBUTE", "AWS.x")]).expect_err("bad");
    assert_eq!(e.variable, "ENCODING_ATTRIBUTE");
    let e = config(&[("QUEUE_URL", "sqs/q")]).expect_err("bad");
    assert_eq!(e.variable, "QUEUE_URL");
    let e = config(&[]).expect_err("missing");
    assert_eq!((e.variable.as_str(), e.value.as_str()), ("QUEUE_URL", ""));
    let e = config(&[("QUEUE_URL", URL), ("QUEUE_NAME", "q")]).expect_err("both");
    assert_eq!(e.variable, "QUEUE_URL");
    let e = config(&[("QUEUE_NAME", "q"), ("QUEUE_OWNER_ACCOUNT_ID", "12")]).expect_err("bad");
    assert_eq!(e.variable, "QUEUE_OWNER_ACCOUNT_ID");
    let e = config(&[("QUEUE_NAME", "bad name")]).expect_err("bad");
    assert_eq!(e.variable, "QUEUE_NAME");
}

#[test]
fn queue_by_name_and_fifo_group_check() {
    let c = config(&[
        ("QUEUE_NAME", "orders.fifo"),
        ("QUEUE_OWNER_ACCOUNT_ID", "210987654321"),
    ])
    .expect("valid");
    assert!(c.queue.is_fifo());
    assert!(c.check_group_ids(GroupIds::FromSource).is_ok());
    let e = c
        .check_group_ids(GroupIds::FromConfig)
        .expect_err("no group id");
    assert_eq!(e.variable, "MESSAGE_GROUP_ID");
    let c = config(&[
        ("QUEUE_URL", "http://127.0.0.1:4566/000000000000/o.fifo"),
        ("MESSAGE_GROUP_ID", "all"),
    ])
    .expect("valid");
    assert!(c.check_group_ids(GroupIds::FromConfig).is_ok());
}

#[test]
fn reads_only_documented_variables() {
    let asked = std::sync::Mutex::new(Vec::new());
    let _ = Config::from_lookup(|k| {
        asked.lock().expect("lock").push(k.to_owned());
        (k == "QUEUE_NAME").then(|| "q".to_owned())
    });
    let asked = asked.into_inner().expect("lock");
    for k in &asked {
        assert!(
            VARIABLES.iter().any(|v| v.name == k) || k == MEMORY_SIZE_VARIABLE,
            "{k} is read but not in VARIABLES"
        );
    }
    for v in VARIABLES {
        let n = v.name;
        assert!(
            asked.iter().any(|k| k == n),
            "{n} is in VARIABLES but never read"
        );
    }
}

#[test]
fn offload_settings() {
    let c = config(&[("QUEUE_URL", URL)]).expect("valid");
    assert_eq!(c.offload, None);
    // A bucket alone is allowed (a template may pass it to every
    // function) and means nothing without the policy.
    let c = config(&[("QUEUE_URL", URL), ("OFFLOAD_BUCKET", "payloads")]).expect("valid");
    assert_eq!(c.offload, None);
    let c = config(&[
        ("QUEUE_URL", URL),
        ("OVERSIZE_POLICY", "offload"),
        ("OFFLOAD_BUCKET", "payloads"),
    ])
    .expect("valid");
    assert_eq!(
        c.offload,
        Some(OffloadConfig {
            bucket: "payloads".into(),
            settings: OffloadSettings::default(),
            force_path_style: false,
        })
    );
    let c = config(&[
        ("QUEUE_URL", URL),
        ("OVERSIZE_POLICY", "offload"),
        ("OFFLOAD_BUCKET", "payloads"),
        ("OFFLOAD_KEY_PREFIX", "kinesis/"),
        ("OFFLOAD_THRESHOLD_BYTES", "262144"),
        ("OFFLOAD_ALWAYS", "true"),
        ("OFFLOAD_SIZE_ATTRIBUTE", "SQSLargePayloadSize"),
        ("OFFLOAD_FORCE_PATH_STYLE", "true"),
    ])
    .expect("valid");
    let o = c.offload.expect("offload");
    assert_eq!(o.settings.threshold, Some(262_144));
    assert!(o.settings.always && o.force_path_style);
    assert_eq!(o.settings.key_prefix, "kinesis/");
    assert_eq!(o.settings.size_attribute, SizeAttribute::Legacy);

    let err = |vars: &[(&str, &str)]| {
        let mut all = vec![("QUEUE_URL", URL)];
        all.extend_from_slice(vars);
        config(&all).expect_err("bad")
    };
    let e = err(&[("OVERSIZE_POLICY", "offload")]);
    assert_eq!(
        (e.variable.as_str(), e.value.as_str()),
        ("OFFLOAD_BUCKET", "")
    );
    let e = err(&[
        ("OVERSIZE_POLICY", "offload"),
        ("OFFLOAD_BUCKET", "Bad_Bucket"),
    ]);
    assert_eq!(e.variable, "OFFLOAD_BUCKET");
    let e = err(&[("OFFLOAD_KEY_PREFIX", "a b")]);
    assert_eq!(e.variable, "OFFLOAD_KEY_PREFIX");
    let e = err(&[("OFFLOAD_THRESHOLD_BYTES", "100")]);
    assert_eq!(e.allowed, "an integer from 1024 to 1048576 bytes");
    let e = err(&[("OFFLOAD_THRESHOLD_BYTES", "262144")]);
    assert_eq!(
        (e.variable.as_str(), e.allowed.as_str()),
        (
            "OFFLOAD_THRESHOLD_BYTES",
            "only with OVERSIZE_POLICY=offload"
        )
    );
    let e = err(&[("OVERSIZE_POLICY", "drop"), ("OFFLOAD_ALWAYS", "true")]);
    assert_eq!(e.variable, "OFFLOAD_ALWAYS");
    let e = err(&[("OFFLOAD_ALWAYS", "yes")]);
    assert_eq!(e.allowed, "one of: true, false");
    let e = err(&[("OFFLOAD_SIZE_ATTRIBUTE", "Size")]);
    assert_eq!(
        e.allowed,
        "one of: ExtendedPayloadSize, SQSLargePayloadSize"
    );
}

#[test]
fn region_and_assumed_role() {
    let c = config(&[("QUEUE_URL", URL)]).expect("valid");
    assert_eq!((c.sqs_region, c.assume_role), (None, None));
    let c = config(&[
        ("QUEUE_URL", URL),
        ("SQS_REGION", "cn-northwest-1"),
        (
            "ASSUME_ROLE_ARN",
            "arn:aws-cn:iam::210987654321:role/team/sqs-sender",
        ),
        ("ASSUME_ROLE_EXTERNAL_ID", "flink:job-7"),
    ])
    .expect("valid");
    assert_eq!(c.sqs_region.as_deref(), Some("cn-northwest-1"));
    assert_eq!(
        c.assume_role,
        Some(AssumeRole {
            role_arn: "arn:aws-cn:iam::210987654321:role/team/sqs-sender".into(),
            session_name: "sqs-forwarder".into(),
            external_id: Some("flink:job-7".into()),
        })
    );
    let c = config(&[
        ("QUEUE_URL", URL),
        ("ASSUME_ROLE_ARN", "arn:aws:iam::210987654321:role/s"),
        ("ASSUME_ROLE_SESSION_NAME", "orders@eu"),
    ])
    .expect("valid");
    assert_eq!(
        c.assume_role.map(|r| (r.session_name, r.external_id)),
        Some(("orders@eu".into(), None))
    );

    let bad = |vars: &[(&str, &str)]| {
        let mut all = vec![("QUEUE_URL", URL)];
        all.extend_from_slice(vars);
        let e = config(&all).expect_err("invalid");
        (e.variable, e.value)
    };
    for region in ["eu-west", "EU-WEST-1", "euwest1", "us-east-1a", "sqs"] {
        assert_eq!(
            bad(&[("SQS_REGION", region)]),
            ("SQS_REGION".into(), region.into())
        );
    }
    for arn in [
        "sqs-sender",
        "arn:aws:iam::21098765432:role/s",
        "arn:aws:iam::210987654321:user/s",
        "arn:aws:iam:eu-west-1:210987654321:role/s",
        "arn:aws:sts::210987654321:role/s",
        "arn:aws:iam::210987654321:role/",
        "arn:aws:iam::210987654321:role/a b",
    ] {
        assert_eq!(
            bad(&[("ASSUME_ROLE_ARN", arn)]),
            ("ASSUME_ROLE_ARN".into(), arn.into())
        );
    }
    let role = ("ASSUME_ROLE_ARN", "arn:aws:iam::210987654321:role/s");
    assert_eq!(
        bad(&[role, ("ASSUME_ROLE_SESSION_NAME", "a b")]).0,
        "ASSUME_ROLE_SESSION_NAME"
    );
    assert_eq!(
        bad(&[role, ("ASSUME_ROLE_SESSION_NAME", &"x".repeat(65))]).0,
        "ASSUME_ROLE_SESSION_NAME"
    );
    assert_eq!(
        bad(&[role, ("ASSUME_ROLE_EXTERNAL_ID", "x")]).0,
        "ASSUME_ROLE_EXTERNAL_ID"
    );
    // Companions without a role are a mistake, not silently ignored.
    assert_eq!(
        bad(&[("ASSUME_ROLE_SESSION_NAME", "s1")]),
        ("ASSUME_ROLE_SESSION_NAME".into(), "s1".into())
    );
    let e =
        config(&[("QUEUE_URL", URL), ("ASSUME_ROLE_EXTERNAL_ID", "ext-1")]).expect_err("invalid");
    assert_eq!(
        e.to_string(),
        "invalid configuration: ASSUME_ROLE_EXTERNAL_ID=\"ext-1\": only with ASSUME_ROLE_ARN"
    );
}

#[test]
fn overrides() {
    let c = config(&[
        ("QUEUE_URL", URL),
        ("MAX_MESSAGE_BYTES", "262144"),
        ("MAX_IN_FLIGHT", "1"),
        ("OVERSIZE_POLICY", "drop"),
        ("FIFO_ORDER", "batched"),
        ("BODY_ENCODING", "never"),
        ("LOG_FORMAT", "json"),
    ])
    .expect("valid");
    assert_eq!(c.max_message_bytes, Some(262_144));
    assert_eq!(c.max_in_flight, 1);
    assert_eq!(c.oversize, OversizePolicy::Drop);
    assert_eq!(c.fifo_order, FifoOrder::Batched);
    assert_eq!(c.body_encoding, BodyEncoding::Never);
    assert_eq!(c.log_format, LogFormat::Json);
}

#[test]
fn client_names() {
    use crate::call::SqsClient;
    assert_eq!(SqsClient::from_word("sdk"), Some(SqsClient::Sdk));
    assert_eq!(SqsClient::from_word("direct"), Some(SqsClient::Direct));
    assert_eq!(SqsClient::from_word("Direct"), None);
}

#[test]
fn size_attribute_names() {
    assert_eq!(
        SizeAttribute::from_word("SQSLargePayloadSize"),
        Some(SizeAttribute::Legacy)
    );
    assert_eq!(SizeAttribute::from_word("x"), None);
}

#[test]
fn aggregation_settings() {
    let c = config(&[("QUEUE_URL", URL)]).expect("valid");
    assert_eq!(c.aggregate, None, "off by default");
    let c = config(&[("QUEUE_URL", URL), ("AGGREGATE", "true")]).expect("valid");
    assert_eq!(c.aggregate, Some(65_536));
    let queue = crate::call::queue::QueueInfo {
        url: URL.into(),
        fifo: false,
        max_message_bytes: Some(262_144),
        content_based_deduplication: None,
    };
    assert_eq!(c.send_settings(&queue).0.aggregate, Some(65_536));
    let c = config(&[
        ("QUEUE_URL", URL),
        ("AGGREGATE", "true"),
        ("AGGREGATE_BYTES", "262144"),
    ])
    .expect("valid");
    assert_eq!(c.aggregate, Some(262_144));
    let refused = |vars: &[(&str, &str)]| config(vars).expect_err("refused").to_string();
    assert_eq!(
        refused(&[("QUEUE_URL", URL), ("AGGREGATE_BYTES", "2048")]),
        "invalid configuration: AGGREGATE_BYTES=\"2048\": only with AGGREGATE=true"
    );
    assert!(
        refused(&[
            ("QUEUE_URL", URL),
            ("AGGREGATE", "true"),
            ("AGGREGATE_BYTES", "512")
        ])
        .contains("AGGREGATE_BYTES=\"512\": an integer from 1024 to 1048576")
    );
    assert!(refused(&[("QUEUE_URL", URL), ("AGGREGATE", "yes")]).contains("AGGREGATE=\"yes\""));
    let with_always = refused(&[
        ("QUEUE_URL", URL),
        ("AGGREGATE", "true"),
        ("OVERSIZE_POLICY", "offload"),
        ("OFFLOAD_BUCKET", "payloads"),
        ("OFFLOAD_ALWAYS", "true"),
    ]);
    assert!(
        with_always.contains("AGGREGATE=\"true\"") && with_always.contains("OFFLOAD_ALWAYS=true"),
        "{with_always}"
    );
}
