//! Every shared variable given a bad value stops the start with an error
//! that names the variable, the value and what is allowed. The table must
//! hold a case for each entry of `config::VARIABLES`, so a new variable
//! cannot be added without one.

use std::collections::HashMap;

use sqs_forwarder::setup::config::VARIABLES;
use sqs_forwarder::{Config, ConfigError};

const URL: &str = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders";

/// (variable, bad value, other variables it needs to be read at all,
/// a word the `allowed` text must contain)
type Case = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
);

const CASES: &[Case] = &[
    ("QUEUE_URL", "sqs/orders", &[], "queue URL"),
    ("QUEUE_NAME", "has space", &[], ""),
    (
        "QUEUE_OWNER_ACCOUNT_ID",
        "12345",
        &[("QUEUE_NAME", "orders")],
        "12",
    ),
    ("SQS_REGION", "Not A Region!", &[("QUEUE_URL", URL)], ""),
    ("SQS_CLIENT", "hyper", &[("QUEUE_URL", URL)], "sdk, direct"),
    ("ASSUME_ROLE_ARN", "my-role", &[("QUEUE_URL", URL)], "ARN"),
    (
        "ASSUME_ROLE_SESSION_NAME",
        "a",
        &[
            ("QUEUE_URL", URL),
            ("ASSUME_ROLE_ARN", "arn:aws:iam::123456789012:role/sender"),
        ],
        "",
    ),
    (
        "ASSUME_ROLE_EXTERNAL_ID",
        "x",
        &[
            ("QUEUE_URL", URL),
            ("ASSUME_ROLE_ARN", "arn:aws:iam::123456789012:role/sender"),
        ],
        "",
    ),
    ("MAX_BATCH_ENTRIES", "11", &[("QUEUE_URL", URL)], "1 to 10"),
    ("MAX_MESSAGE_BYTES", "256k", &[("QUEUE_URL", URL)], "1024"),
    (
        "FALLBACK_MESSAGE_BYTES",
        "100",
        &[("QUEUE_URL", URL)],
        "1024",
    ),
    (
        "MAX_BATCH_BYTES",
        "1048577",
        &[("QUEUE_URL", URL)],
        "1048576",
    ),
    ("MAX_IN_FLIGHT", "0", &[("QUEUE_URL", URL)], "1 to 64"),
    (
        "WINDOW_MESSAGES",
        "0",
        &[("QUEUE_URL", URL)],
        "1 to 1000000",
    ),
    (
        "WINDOW_BYTES",
        "1000",
        &[("QUEUE_URL", URL)],
        "1048576 to 1073741824 bytes",
    ),
    ("RETRY_MAX_ATTEMPTS", "21", &[("QUEUE_URL", URL)], "1 to 20"),
    (
        "RETRY_BASE_DELAY_MS",
        "-5",
        &[("QUEUE_URL", URL)],
        "integer",
    ),
    (
        "RETRY_MAX_DELAY_MS",
        "300001",
        &[("QUEUE_URL", URL)],
        "integer",
    ),
    ("CALL_TIMEOUT_MS", "99", &[("QUEUE_URL", URL)], "100"),
    (
        "DEADLINE_MARGIN_MS",
        "1.5",
        &[("QUEUE_URL", URL)],
        "integer",
    ),
    ("OVERSIZE_POLICY", "spill", &[("QUEUE_URL", URL)], "offload"),
    (
        "OFFLOAD_BUCKET",
        "Not_A_Bucket!",
        &[("QUEUE_URL", URL), ("OVERSIZE_POLICY", "offload")],
        "",
    ),
    (
        "OFFLOAD_KEY_PREFIX",
        "pay loads/",
        &[
            ("QUEUE_URL", URL),
            ("OVERSIZE_POLICY", "offload"),
            ("OFFLOAD_BUCKET", "payloads"),
        ],
        "",
    ),
    (
        "OFFLOAD_THRESHOLD_BYTES",
        "12",
        &[
            ("QUEUE_URL", URL),
            ("OVERSIZE_POLICY", "offload"),
            ("OFFLOAD_BUCKET", "payloads"),
        ],
        "1024",
    ),
    (
        "OFFLOAD_ALWAYS",
        "yes",
        &[
            ("QUEUE_URL", URL),
            ("OVERSIZE_POLICY", "offload"),
            ("OFFLOAD_BUCKET", "payloads"),
        ],
        "true",
    ),
    (
        "OFFLOAD_SIZE_ATTRIBUTE",
        "PayloadSize",
        &[("QUEUE_URL", URL)],
        "ExtendedPayloadSize",
    ),
    (
        "OFFLOAD_FORCE_PATH_STYLE",
        "1",
        &[("QUEUE_URL", URL)],
        "true",
    ),
    ("AGGREGATE", "on", &[("QUEUE_URL", URL)], "true"),
    (
        "AGGREGATE_BYTES",
        "64k",
        &[("QUEUE_URL", URL), ("AGGREGATE", "true")],
        "1024",
    ),
    ("BODY_ENCODING", "hex", &[("QUEUE_URL", URL)], "auto"),
    (
        "ENCODING_ATTRIBUTE",
        "AWS.encoding",
        &[("QUEUE_URL", URL)],
        "",
    ),
    ("FIFO_ORDER", "loose", &[("QUEUE_URL", URL)], "strict"),
    ("MESSAGE_GROUP_ID", "tab\there", &[("QUEUE_URL", URL)], ""),
    ("METRICS_NAMESPACE", "bell\u{7}", &[("QUEUE_URL", URL)], ""),
    ("LOG_FORMAT", "xml", &[("QUEUE_URL", URL)], "json"),
];

fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(move |name| map.get(name).cloned())
}

#[test]
fn every_shared_variable_has_a_bad_value_case() {
    let mut missing: Vec<&str> = VARIABLES
        .iter()
        .map(|v| v.name)
        .filter(|name| !CASES.iter().any(|c| c.0 == *name))
        .collect();
    missing.sort();
    assert!(missing.is_empty(), "no bad-value case for {missing:?}");
}

#[test]
fn every_bad_value_names_the_variable_the_value_and_what_is_allowed() {
    for (variable, value, context, word) in CASES {
        // The context alone is valid, or wants this very variable: the
        // error below comes from the bad value, not from the context.
        if let Err(e) = config(context)
            && !variable.starts_with("QUEUE_")
        {
            assert_eq!(
                &e.variable, variable,
                "the context {context:?} is invalid: {e}"
            );
        }
        let mut vars: Vec<(&str, &str)> = context.to_vec();
        vars.push((variable, value));
        let e = match config(&vars) {
            Ok(_) => panic!("{variable}={value:?} was accepted"),
            Err(e) => e,
        };
        assert_eq!(e.variable, *variable, "{variable}={value:?}: {e}");
        assert_eq!(e.value.trim(), value.trim(), "{variable}: {e}");
        assert!(!e.allowed.trim().is_empty(), "{variable}: {e}");
        assert!(
            e.allowed.contains(word),
            "{variable}: allowed {:?} should mention {word:?}",
            e.allowed
        );
        let text = e.to_string();
        assert!(
            text.starts_with("invalid configuration: ") && text.contains(variable),
            "{text}"
        );
    }
}

#[test]
fn blank_values_count_as_unset_not_as_bad() {
    // A variable set to spaces (a template parameter left empty) takes the
    // default, for every variable that has one.
    for v in VARIABLES {
        let (name, default) = (v.name, v.default);
        if default.is_empty() || name.starts_with("QUEUE_") {
            continue;
        }
        let c = config(&[("QUEUE_URL", URL), (name, "   ")]);
        assert!(c.is_ok(), "{name}=\"   \": {:?}", c.err());
    }
}
