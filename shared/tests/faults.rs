//! Fault tests: the real `SqsTransport` and aws-sdk-sqs against a fake SQS
//! endpoint (wiremock) speaking the AWS JSON 1.0 protocol, and against a TCP
//! listener that misbehaves.
//!
//! Every test checks, per message, the outcome (code, retryable flag, message
//! id), the attempts, and what the fake endpoint received. Every run also
//! checks the accounting the crate promises: exactly one outcome per message,
//! in input order, and `attempts` equal to the number of `SendMessageBatch`
//! calls that carried the message (`MessageOutcome::attempts`).
//!
//! Notes on the fake:
//! * Requests are `POST /` with `X-Amz-Target: AmazonSQS.SendMessageBatch`
//!   and content type `application/x-amz-json-1.0`; anything else gets a 404
//!   from wiremock, which the forwarder treats as a permanent failure, so a
//!   protocol mismatch shows up as a failing test rather than a silent pass.
//! * Errors carry `__type` in the body and, like real SQS, the
//!   `x-amzn-query-error: <code>;<Sender|Receiver>` header, which the SDK
//!   prefers for the error code (`aws_query_compatible_errors.rs`).
//! * `MD5OfMessageBody` is a placeholder: aws-sdk-sqs 1.119 does not check it
//!   (its `serde_util.rs` only defaults a missing value; there is no checksum
//!   interceptor for SQS in the Rust SDK). Should a later SDK start checking,
//!   every "sent" assertion here fails loudly.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aws_sdk_sqs::config::retry::RetryConfig;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use serde_json::{Value, json};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::{
    Attribute, Forwarder, Message, MessageOutcome, Outcome, RetryPolicy, SendSettings,
    SqsTransport, Summary,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const JSON_1_0: &str = "application/x-amz-json-1.0";
const TARGET: &str = "AmazonSQS.SendMessageBatch";
/// MD5 of the empty string; see the module notes.
const PLACEHOLDER_MD5: &str = "d41d8cd98f00b204e9800998ecf8427e";

// ---------------------------------------------------------------------------
// The fake SQS
// ---------------------------------------------------------------------------

/// One entry of a `SendMessageBatch` request, as the fake saw it.
#[derive(Debug, Clone)]
struct SeenEntry {
    id: String,
    body: String,
    attributes: Value,
}

fn entries_of(request: &Request) -> Vec<SeenEntry> {
    let v: Value = serde_json::from_slice(&request.body).expect("the SDK sends a JSON body");
    v["Entries"]
        .as_array()
        .expect("a SendMessageBatch request has Entries")
        .iter()
        .map(|e| SeenEntry {
            id: e["Id"].as_str().expect("every entry has an Id").to_owned(),
            body: e["MessageBody"]
                .as_str()
                .expect("every entry has a MessageBody")
                .to_owned(),
            attributes: e["MessageAttributes"].clone(),
        })
        .collect()
}

fn ids(entries: &[SeenEntry]) -> Vec<String> {
    entries.iter().map(|e| e.id.clone()).collect()
}

/// A responder that numbers the calls (from 0) and hands each call's entries
/// to a script.
fn scripted<F>(script: F) -> impl Respond + 'static
where
    F: Fn(usize, &[SeenEntry]) -> ResponseTemplate + Send + Sync + 'static,
{
    let calls = AtomicUsize::new(0);
    move |request: &Request| {
        let call = calls.fetch_add(1, Ordering::SeqCst);
        script(call, &entries_of(request))
    }
}

/// What the fake says about one entry of a call that succeeds as a whole.
enum Answer {
    Sent(String),
    Failed {
        code: &'static str,
        sender_fault: bool,
    },
}

/// The message id the fake gives entry `id` in call `call`.
fn message_id(call: usize, id: &str) -> String {
    format!("msg-{call}-{id}")
}

/// An HTTP 200 answer, entry by entry.
fn answer(entries: &[SeenEntry], each: impl Fn(&SeenEntry) -> Answer) -> ResponseTemplate {
    let mut successful = Vec::new();
    let mut failed = Vec::new();
    for e in entries {
        match each(e) {
            Answer::Sent(mid) => successful.push(json!({
                "Id": e.id,
                "MessageId": mid,
                "MD5OfMessageBody": PLACEHOLDER_MD5,
            })),
            Answer::Failed { code, sender_fault } => failed.push(json!({
                "Id": e.id,
                "Code": code,
                "SenderFault": sender_fault,
                "Message": format!("fake SQS says {code}"),
            })),
        }
    }
    raw_200(json!({ "Successful": successful, "Failed": failed }))
}

fn raw_200(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.to_string(), JSON_1_0)
}

/// Every entry accepted, with ids from [`message_id`].
fn all_sent(call: usize, entries: &[SeenEntry]) -> ResponseTemplate {
    answer(entries, |e| Answer::Sent(message_id(call, &e.id)))
}

/// A whole-call error as SQS's JSON protocol writes it.
fn sqs_error(status: u16, type_name: &str, query_code: Option<&str>) -> ResponseTemplate {
    let body = json!({
        "__type": format!("com.amazonaws.sqs#{type_name}"),
        "message": format!("fake SQS says {type_name}"),
    });
    let t = ResponseTemplate::new(status).set_body_raw(body.to_string(), JSON_1_0);
    match query_code {
        Some(code) => {
            let fault = if status >= 500 { "Receiver" } else { "Sender" };
            t.insert_header("x-amzn-query-error", format!("{code};{fault}").as_str())
        }
        None => t,
    }
}

/// The first `calls` calls answered with `failure`, every later one all sent.
fn failing_then_all_sent(calls: usize, failure: ResponseTemplate) -> impl Respond + 'static {
    scripted(move |call, entries| {
        if call < calls {
            failure.clone()
        } else {
            all_sent(call, entries)
        }
    })
}

/// Every call answered 200 with every entry failed with `code`.
fn every_entry_failing(code: &'static str, sender_fault: bool) -> impl Respond + 'static {
    scripted(move |_, entries| answer(entries, |_| Answer::Failed { code, sender_fault }))
}

fn throttled() -> ResponseTemplate {
    sqs_error(400, "RequestThrottled", Some("RequestThrottled"))
}

fn internal_error() -> ResponseTemplate {
    sqs_error(500, "InternalError", Some("InternalError"))
}

// ---------------------------------------------------------------------------
// The forwarder under test
// ---------------------------------------------------------------------------

fn client(endpoint: &str) -> aws_sdk_sqs::Client {
    let conf = aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "test"))
        .endpoint_url(endpoint)
        .retry_config(RetryConfig::disabled())
        .build();
    aws_sdk_sqs::Client::from_conf(conf)
}

/// The direct client's transport (the default), or with `SQS_CLIENT=sdk`
/// in the test's environment the SDK's (`scripts/test.sh` runs these tests
/// both ways).
fn forwarder(endpoint: &str, settings: SendSettings) -> Forwarder<SqsTransport> {
    let url = format!("{endpoint}/000000000000/q");
    let transport = if std::env::var("SQS_CLIENT").as_deref() != Ok("sdk") {
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(
                aws_credential_types::provider::SharedCredentialsProvider::new(Credentials::new(
                    "test", "test", None, None, "test",
                )),
            )
            .endpoint_url(endpoint)
            .build();
        let direct = sqs_forwarder::call::direct::DirectClient::new(
            &sdk,
            &sqs_forwarder::setup::client::sqs_client(&sdk),
        )
        .expect("direct client");
        SqsTransport::direct(direct, url)
    } else {
        SqsTransport::new(client(endpoint), url)
    };
    Forwarder::new(transport, settings, EncodeRules::default())
}

/// Fast retries: a few milliseconds between attempts.
fn settings(max_attempts: u32) -> SendSettings {
    SendSettings {
        retry: RetryPolicy {
            max_attempts,
            base_delay: Duration::from_millis(2),
            max_delay: Duration::from_millis(10),
        },
        call_timeout: Duration::from_secs(5),
        ..SendSettings::default()
    }
}

fn body_of(index: usize) -> String {
    format!("message-{index}")
}

fn messages(n: usize) -> Vec<Message<usize>> {
    (0..n)
        .map(|i| {
            Message::new(body_of(i), i)
                .attribute(Attribute::string("kind", "fault-test"))
                .attribute(Attribute::number("index", i))
        })
        .collect()
}

/// What one `send_all` against the fake produced.
struct Run {
    outcomes: Vec<MessageOutcome<usize>>,
    /// Every request the fake received, in order.
    requests: Vec<Vec<SeenEntry>>,
    elapsed: Duration,
}

impl Run {
    fn outcome(&self, i: usize) -> &Outcome {
        &self.outcomes[i].outcome
    }

    fn attempts(&self, i: usize) -> u32 {
        self.outcomes[i].attempts
    }

    /// How many requests carried message `i`.
    fn carried(&self, i: usize) -> usize {
        let id = i.to_string();
        self.requests
            .iter()
            .filter(|r| r.iter().any(|e| e.id == id))
            .count()
    }
}

/// Start a fake SQS answering with `responder`, send `n` messages through
/// it, and check the accounting every run must satisfy.
async fn run_against(
    responder: impl Respond + 'static,
    n: usize,
    settings: SendSettings,
    deadline_in: Option<Duration>,
) -> Run {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/"))
        .and(header("x-amz-target", TARGET))
        .and(header("content-type", JSON_1_0))
        .respond_with(responder)
        .mount(&server)
        .await;
    let fwd = forwarder(&server.uri(), settings);
    let start = Instant::now();
    let deadline = deadline_in.map(|d| start + d);
    let outcomes = fwd.send_all(messages(n), deadline).await;
    let elapsed = start.elapsed();
    let requests: Vec<Vec<SeenEntry>> = server
        .received_requests()
        .await
        .expect("request recording is on by default")
        .iter()
        .map(entries_of)
        .collect();
    check_accounting(&outcomes, n);
    check_requests(&requests, n);
    Run {
        outcomes,
        requests,
        elapsed,
    }
}

/// One outcome per message, in input order.
fn check_accounting(outcomes: &[MessageOutcome<usize>], n: usize) {
    assert_eq!(outcomes.len(), n, "one outcome per message");
    let positions: Vec<usize> = outcomes.iter().map(|o| o.position).collect();
    assert_eq!(
        positions,
        (0..n).collect::<Vec<_>>(),
        "outcomes in input order"
    );
    let s = Summary::of(outcomes);
    assert_eq!(
        s.sent + s.failed_retryable + s.failed_permanent + s.dropped,
        n
    );
    assert_eq!(s.dropped, 0, "no policy here drops anything");
}

/// Every request well formed: 1..=10 entries, distinct ids, each id the
/// index of a message and carrying that message's body and attributes.
fn check_requests(requests: &[Vec<SeenEntry>], n: usize) {
    for (call, entries) in requests.iter().enumerate() {
        assert!(
            (1..=10).contains(&entries.len()),
            "call {call} has {} entries",
            entries.len()
        );
        let distinct: BTreeSet<&str> = entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(
            distinct.len(),
            entries.len(),
            "call {call}: ids not distinct"
        );
        for e in entries {
            let index: usize = e.id.parse().expect("ids are input indexes");
            assert!(index < n, "call {call}: unknown id {}", e.id);
            assert_eq!(
                e.body,
                body_of(index),
                "call {call}: body of entry {}",
                e.id
            );
            assert_eq!(
                e.attributes["kind"],
                json!({"DataType": "String", "StringValue": "fault-test"}),
                "call {call}: attributes of entry {}",
                e.id
            );
            assert_eq!(
                e.attributes["index"],
                json!({"DataType": "Number", "StringValue": index.to_string()}),
            );
        }
    }
}

/// `attempts` is documented as "how many SendMessageBatch calls carried it".
fn assert_attempts_match_requests(run: &Run) {
    for o in &run.outcomes {
        assert_eq!(
            o.attempts as usize,
            run.carried(o.position),
            "message {}: attempts must equal the number of calls that carried it ({:?})",
            o.position,
            o.outcome
        );
    }
}

/// Like [`assert_attempts_match_requests`], for runs cut by a deadline: a
/// call launched with (almost) no time left can time out before its request
/// reaches the fake, so a message's last attempt may be missing there.
fn assert_attempts_match_requests_but_the_last(run: &Run) {
    for o in &run.outcomes {
        let carried = run.carried(o.position);
        let attempts = o.attempts as usize;
        assert!(
            attempts == carried || (attempts == carried + 1 && timed_out(&o.outcome)),
            "message {}: {attempts} attempts, {carried} calls received ({:?})",
            o.position,
            o.outcome
        );
    }
}

fn timed_out(outcome: &Outcome) -> bool {
    outcome.failure().is_some_and(|f| f.code == "Timeout")
}

fn assert_sent(run: &Run, i: usize, expected_message_id: &str, attempts: u32) {
    match run.outcome(i) {
        Outcome::Sent { message_id, .. } => assert_eq!(
            message_id, expected_message_id,
            "message {i}: message id from the call that accepted it"
        ),
        other => panic!("message {i}: expected Sent, got {other:?}"),
    }
    assert_eq!(run.attempts(i), attempts, "message {i}: attempts");
}

fn assert_failed(run: &Run, i: usize, codes: &[&str], retryable: bool, attempts: Option<u32>) {
    let f = run
        .outcome(i)
        .failure()
        .unwrap_or_else(|| panic!("message {i}: expected Failed, got {:?}", run.outcome(i)));
    assert!(
        codes.contains(&f.code.as_str()),
        "message {i}: code {:?} not in {codes:?} ({f})",
        f.code
    );
    assert_eq!(f.retryable, retryable, "message {i}: retryable ({f})");
    if let Some(a) = attempts {
        assert_eq!(run.attempts(i), a, "message {i}: attempts ({f})");
    }
}

/// Messages `range` were sent in call `call` (from 0), after `attempts` attempts.
fn assert_all_sent(run: &Run, range: std::ops::Range<usize>, call: usize, attempts: u32) {
    for i in range {
        assert_sent(run, i, &message_id(call, &i.to_string()), attempts);
    }
}

/// Messages `range` failed as [`assert_failed`] says.
fn assert_all_failed(
    run: &Run,
    range: std::ops::Range<usize>,
    codes: &[&str],
    retryable: bool,
    attempts: Option<u32>,
) {
    for i in range {
        assert_failed(run, i, codes, retryable, attempts);
    }
}

// ---------------------------------------------------------------------------
// 1. Partial `Failed` entries
// ---------------------------------------------------------------------------

#[tokio::test]
async fn partial_failures_retry_only_the_retryable_entries() {
    let run = run_against(
        scripted(|call, entries| {
            if call == 0 {
                answer(entries, |e| match e.id.as_str() {
                    "0" | "2" => Answer::Failed {
                        code: "InternalError",
                        sender_fault: false,
                    },
                    "3" => Answer::Failed {
                        code: "InvalidParameterValue",
                        sender_fault: true,
                    },
                    id => Answer::Sent(message_id(call, id)),
                })
            } else {
                all_sent(call, entries)
            }
        }),
        5,
        settings(3),
        None,
    )
    .await;

    assert_eq!(run.requests.len(), 2, "one call, then one retry");
    assert_eq!(ids(&run.requests[0]), ["0", "1", "2", "3", "4"]);
    assert_eq!(
        ids(&run.requests[1]),
        ["0", "2"],
        "the retry carries only the InternalError entries"
    );
    assert_sent(&run, 0, &message_id(1, "0"), 2);
    assert_sent(&run, 1, &message_id(0, "1"), 1);
    assert_sent(&run, 2, &message_id(1, "2"), 2);
    assert_failed(&run, 3, &["InvalidParameterValue"], false, Some(1));
    assert_sent(&run, 4, &message_id(0, "4"), 1);
    assert_attempts_match_requests(&run);
}

#[tokio::test]
async fn entries_missing_from_the_answer_are_retried() {
    // A 200 that names only some entries (or none): the rest are retried.
    let run = run_against(
        scripted(|call, entries| match call {
            0 => raw_200(json!({})),
            1 => answer(&entries[..1], |e| Answer::Sent(message_id(call, &e.id))),
            _ => all_sent(call, entries),
        }),
        3,
        settings(4),
        None,
    )
    .await;
    assert_eq!(run.requests.len(), 3);
    assert_eq!(ids(&run.requests[1]), ["0", "1", "2"]);
    assert_eq!(ids(&run.requests[2]), ["1", "2"]);
    assert_sent(&run, 0, &message_id(1, "0"), 2);
    assert_sent(&run, 1, &message_id(2, "1"), 3);
    assert_sent(&run, 2, &message_id(2, "2"), 3);
    assert_attempts_match_requests(&run);
}

// ---------------------------------------------------------------------------
// 2. Throttling entry codes
// ---------------------------------------------------------------------------

#[tokio::test]
async fn throttled_entries_are_retried_even_as_sender_faults() {
    let run = run_against(
        scripted(|call, entries| {
            if call == 0 {
                answer(entries, |e| match e.id.as_str() {
                    "0" => Answer::Failed {
                        code: "RequestThrottled",
                        sender_fault: true,
                    },
                    "1" => Answer::Failed {
                        code: "KmsThrottled",
                        sender_fault: true,
                    },
                    "2" => Answer::Failed {
                        code: "KMS.ThrottlingException",
                        sender_fault: true,
                    },
                    "3" => Answer::Failed {
                        code: "KmsThrottled",
                        sender_fault: false,
                    },
                    id => Answer::Sent(message_id(call, id)),
                })
            } else {
                all_sent(call, entries)
            }
        }),
        5,
        settings(3),
        None,
    )
    .await;
    assert_eq!(run.requests.len(), 2);
    assert_eq!(ids(&run.requests[1]), ["0", "1", "2", "3"]);
    assert_all_sent(&run, 0..4, 1, 2);
    assert_sent(&run, 4, &message_id(0, "4"), 1);
    assert_attempts_match_requests(&run);
}

#[tokio::test]
async fn entries_throttled_every_time_fail_retryable_after_max_attempts() {
    let run = run_against(
        every_entry_failing("RequestThrottled", true),
        3,
        settings(4),
        None,
    )
    .await;
    assert_eq!(run.requests.len(), 4, "max_attempts calls, no more");
    assert_all_failed(&run, 0..3, &["RequestThrottled"], true, Some(4));
    assert_attempts_match_requests(&run);
}

// ---------------------------------------------------------------------------
// 3. Whole-call throttling
// ---------------------------------------------------------------------------

#[tokio::test]
async fn throttled_call_is_retried_then_sent() {
    let run = run_against(failing_then_all_sent(1, throttled()), 3, settings(3), None).await;
    assert_eq!(run.requests.len(), 2);
    assert_eq!(ids(&run.requests[0]), ["0", "1", "2"]);
    assert_eq!(ids(&run.requests[1]), ["0", "1", "2"]);
    assert_all_sent(&run, 0..3, 1, 2);
    assert_attempts_match_requests(&run);
}

#[tokio::test]
async fn throttled_call_without_query_header_is_retried() {
    // Only `__type` to go by (no x-amzn-query-error header), HTTP 400.
    let run = run_against(
        failing_then_all_sent(1, sqs_error(400, "ThrottlingException", None)),
        2,
        settings(3),
        None,
    )
    .await;
    assert_eq!(run.requests.len(), 2);
    assert_all_sent(&run, 0..2, 1, 2);
    assert_attempts_match_requests(&run);
}

// ---------------------------------------------------------------------------
// 4. Server errors
// ---------------------------------------------------------------------------

#[tokio::test]
async fn http_500_twice_then_success() {
    let run = run_against(
        failing_then_all_sent(2, internal_error()),
        4,
        settings(3),
        None,
    )
    .await;
    assert_eq!(run.requests.len(), 3);
    assert_all_sent(&run, 0..4, 2, 3);
    assert_attempts_match_requests(&run);
}

#[tokio::test]
async fn http_500_always_fails_retryable_after_max_attempts() {
    let run = run_against(scripted(|_, _| internal_error()), 4, settings(4), None).await;
    assert_eq!(run.requests.len(), 4, "exactly max_attempts calls");
    assert_all_failed(&run, 0..4, &["InternalError"], true, Some(4));
    assert_attempts_match_requests(&run);
}

#[tokio::test]
async fn http_503_with_a_non_json_body_is_retried() {
    // A load balancer's HTML page, not an SQS error.
    let run = run_against(
        failing_then_all_sent(
            1,
            ResponseTemplate::new(503).set_body_raw(
                "<html><body>503 Service Temporarily Unavailable</body></html>",
                "text/html",
            ),
        ),
        2,
        settings(3),
        None,
    )
    .await;
    assert_eq!(run.requests.len(), 2);
    assert_all_sent(&run, 0..2, 1, 2);
    assert_attempts_match_requests(&run);
}

// ---------------------------------------------------------------------------
// 5. Whole-call errors no retry can fix
// ---------------------------------------------------------------------------

#[tokio::test]
async fn access_denied_and_missing_queue_are_not_retried() {
    let cases: Vec<(&str, ResponseTemplate, &str)> = vec![
        (
            "AccessDenied, HTTP 403 with query header",
            sqs_error(403, "AccessDeniedException", Some("AccessDenied")),
            "AccessDenied",
        ),
        (
            "AccessDenied, HTTP 400 with query header",
            sqs_error(400, "AccessDeniedException", Some("AccessDenied")),
            "AccessDenied",
        ),
        (
            "AccessDeniedException, HTTP 400, __type only",
            sqs_error(400, "AccessDeniedException", None),
            "AccessDeniedException",
        ),
        (
            "QueueDoesNotExist, HTTP 400 with query header",
            sqs_error(
                400,
                "QueueDoesNotExist",
                Some("AWS.SimpleQueueService.NonExistentQueue"),
            ),
            "AWS.SimpleQueueService.NonExistentQueue",
        ),
        (
            "QueueDoesNotExist, HTTP 400, __type only",
            sqs_error(400, "QueueDoesNotExist", None),
            "QueueDoesNotExist",
        ),
    ];
    for (name, response, code) in cases {
        let run = run_against(response, 12, settings(5), None).await;
        // 12 messages: two concurrent calls (10 + 2), each made once.
        let mut sizes: Vec<usize> = run.requests.iter().map(Vec::len).collect();
        sizes.sort_unstable();
        assert_eq!(sizes, [2, 10], "{name}: each batch called once");
        assert_all_failed(&run, 0..12, &[code], false, Some(1));
        assert_attempts_match_requests(&run);
    }
}

// ---------------------------------------------------------------------------
// 5b. KMS errors of queues encrypted with a customer key
// ---------------------------------------------------------------------------

#[tokio::test]
async fn kms_errors_are_reported_with_their_code_and_not_retried() {
    let cases: Vec<(&str, ResponseTemplate, &str)> = vec![
        (
            "KmsAccessDenied, HTTP 400 with query header",
            sqs_error(400, "KmsAccessDenied", Some("KMS.AccessDeniedException")),
            "KMS.AccessDeniedException",
        ),
        (
            "KmsDisabled, HTTP 400, __type only",
            sqs_error(400, "KmsDisabled", None),
            "KmsDisabled",
        ),
        (
            "KmsOptInRequired, HTTP 403 with query header",
            sqs_error(403, "KmsOptInRequired", Some("KMS.OptInRequired")),
            "KMS.OptInRequired",
        ),
        (
            // A 5xx would be retried for any other code; a missing key stays missing.
            "KmsNotFound, HTTP 500 with query header",
            sqs_error(500, "KmsNotFound", Some("KMS.NotFoundException")),
            "KMS.NotFoundException",
        ),
    ];
    for (name, response, code) in cases {
        let run = run_against(response, 3, settings(5), None).await;
        assert_eq!(run.requests.len(), 1, "{name}: called once");
        assert_all_failed(&run, 0..3, &[code], false, Some(1));
        assert_attempts_match_requests(&run);
    }
}

#[tokio::test]
async fn kms_throttled_calls_are_retried_then_sent() {
    for query_code in [Some("KMS.ThrottlingException"), None] {
        let run = run_against(
            failing_then_all_sent(1, sqs_error(400, "KmsThrottled", query_code)),
            3,
            settings(3),
            None,
        )
        .await;
        assert_eq!(run.requests.len(), 2, "{query_code:?}");
        assert_all_sent(&run, 0..3, 1, 2);
        assert_attempts_match_requests(&run);
    }
}

#[tokio::test]
async fn kms_entry_failures_retry_throttling_only() {
    let run = run_against(
        scripted(|call, entries| {
            answer(entries, |e| match (call, e.id.as_str()) {
                (0, "0") => Answer::Failed {
                    code: "KmsThrottled",
                    sender_fault: true,
                },
                // Not the sender's fault by SQS's flag, yet no retry can fix it.
                (0, "1") => Answer::Failed {
                    code: "KMS.DisabledException",
                    sender_fault: false,
                },
                _ => Answer::Sent(message_id(call, &e.id)),
            })
        }),
        3,
        settings(4),
        None,
    )
    .await;
    assert_eq!(run.requests.len(), 2);
    assert_eq!(ids(&run.requests[0]), ["0", "1", "2"]);
    assert_eq!(ids(&run.requests[1]), ["0"]);
    assert_sent(&run, 0, &message_id(1, "0"), 2);
    assert_failed(&run, 1, &["KMS.DisabledException"], false, Some(1));
    assert_sent(&run, 2, &message_id(0, "2"), 1);
    assert_attempts_match_requests(&run);
}

// ---------------------------------------------------------------------------
// 6. Slow responses
// ---------------------------------------------------------------------------

#[tokio::test]
async fn slow_answers_stop_at_the_deadline() {
    let run = run_against(
        scripted(|call, entries| all_sent(call, entries).set_delay(Duration::from_secs(2))),
        12,
        settings(5),
        Some(Duration::from_millis(300)),
    )
    .await;
    assert!(
        run.elapsed < Duration::from_secs(1),
        "send_all must return soon after the deadline, took {:?}",
        run.elapsed
    );
    assert!(
        run.elapsed >= Duration::from_millis(290),
        "{:?}",
        run.elapsed
    );
    assert_eq!(run.requests.len(), 2, "12 messages, two calls in flight");
    assert_all_failed(&run, 0..12, &["Timeout", "DeadlineExceeded"], true, Some(1));
    assert_attempts_match_requests(&run);
}

#[tokio::test]
async fn call_timeout_without_deadline_is_retried_then_fails_retryable() {
    let s = SendSettings {
        call_timeout: Duration::from_millis(200),
        ..settings(2)
    };
    let run = run_against(
        scripted(|call, entries| all_sent(call, entries).set_delay(Duration::from_secs(2))),
        3,
        s,
        None,
    )
    .await;
    assert_eq!(run.requests.len(), 2, "the timed-out call is retried once");
    assert!(
        run.elapsed >= Duration::from_millis(400) && run.elapsed < Duration::from_millis(1500),
        "two 200 ms timeouts, took {:?}",
        run.elapsed
    );
    assert_all_failed(&run, 0..3, &["Timeout"], true, Some(2));
    assert_attempts_match_requests(&run);
}

#[tokio::test]
async fn slow_answers_with_queued_batches_account_for_everything() {
    // One call at a time, 30 messages (three calls), answers after 300 ms,
    // deadline at 500 ms: the first call is sent, the second times out at
    // the deadline, the third is never made.
    let s = SendSettings {
        max_in_flight: 1,
        ..settings(5)
    };
    let run = run_against(
        scripted(|call, entries| all_sent(call, entries).set_delay(Duration::from_millis(300))),
        30,
        s,
        Some(Duration::from_millis(500)),
    )
    .await;
    assert!(run.elapsed < Duration::from_secs(1), "{:?}", run.elapsed);
    assert_eq!(run.requests.len(), 2);
    assert_all_sent(&run, 0..10, 0, 1);
    assert_all_failed(
        &run,
        10..20,
        &["Timeout", "DeadlineExceeded"],
        true,
        Some(1),
    );
    assert_all_failed(&run, 20..30, &["DeadlineExceeded"], true, Some(0));
    assert_attempts_match_requests(&run);
}

// ---------------------------------------------------------------------------
// 7. Dropped connections
// ---------------------------------------------------------------------------

/// A TCP server on 127.0.0.1 that runs `handle` on every connection, and
/// counts them.
async fn tcp_fake<F, Fut>(handle: F) -> (String, Arc<AtomicUsize>, tokio::task::JoinHandle<()>)
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a local port");
    let addr = listener.local_addr().expect("the listener's address");
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    let task = tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(handle(socket));
        }
    });
    (format!("http://{addr}"), accepted, task)
}

/// Read one HTTP/1.1 request (headers and a Content-Length body).
async fn read_request(socket: &mut TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = socket.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if buf.len() >= end + 4 + length {
            return;
        }
    }
}

async fn send_over_tcp(endpoint: &str, n: usize, settings: SendSettings) -> Run {
    let fwd = forwarder(endpoint, settings);
    let start = Instant::now();
    let outcomes = fwd.send_all(messages(n), None).await;
    let elapsed = start.elapsed();
    check_accounting(&outcomes, n);
    Run {
        outcomes,
        requests: Vec::new(),
        elapsed,
    }
}

#[tokio::test]
async fn dropped_connections_fail_retryable_after_max_attempts() {
    let (endpoint, accepted, task) = tcp_fake(|socket| async move { drop(socket) }).await;
    let run = send_over_tcp(&endpoint, 12, settings(3)).await;
    task.abort();
    assert!(run.elapsed < Duration::from_secs(5), "{:?}", run.elapsed);
    assert_all_failed(
        &run,
        0..12,
        &["ConnectionError", "ResponseError"],
        true,
        Some(3),
    );
    // Two batches, three attempts each; the HTTP client may reconnect on its
    // own, so at least that many connections.
    assert!(
        accepted.load(Ordering::SeqCst) >= 6,
        "connections: {}",
        accepted.load(Ordering::SeqCst)
    );
}

#[tokio::test]
async fn connection_dropped_after_the_request_fails_retryable() {
    // The request arrives whole, then the connection closes unanswered: SQS
    // may or may not have taken the messages; retryable either way.
    let (endpoint, accepted, task) = tcp_fake(|mut socket| async move {
        read_request(&mut socket).await;
        drop(socket);
    })
    .await;
    let run = send_over_tcp(&endpoint, 3, settings(2)).await;
    task.abort();
    assert_all_failed(
        &run,
        0..3,
        &["ConnectionError", "ResponseError"],
        true,
        Some(2),
    );
    assert!(accepted.load(Ordering::SeqCst) >= 2);
}

#[tokio::test]
async fn truncated_answer_is_never_counted_as_sent() {
    // HTTP 200 whose body stops half way: nothing may be reported sent.
    let (endpoint, accepted, task) = tcp_fake(|mut socket| async move {
        read_request(&mut socket).await;
        let partial = "{\"Successful\":[{\"Id\":\"0\",\"MessageId\":\"m\",";
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {JSON_1_0}\r\ncontent-length: 500\r\n\r\n{partial}"
        );
        let _ = socket.write_all(head.as_bytes()).await;
        let _ = socket.flush().await;
        drop(socket);
    })
    .await;
    let run = send_over_tcp(&endpoint, 3, settings(2)).await;
    task.abort();
    assert_all_failed(
        &run,
        0..3,
        &["ConnectionError", "ResponseError"],
        true,
        Some(2),
    );
    assert!(accepted.load(Ordering::SeqCst) >= 1);
}

// ---------------------------------------------------------------------------
// 8. BatchRequestTooLong
// ---------------------------------------------------------------------------

fn too_long() -> ResponseTemplate {
    sqs_error(
        400,
        "BatchRequestTooLong",
        Some("AWS.SimpleQueueService.BatchRequestTooLong"),
    )
}

#[tokio::test]
async fn batch_request_too_long_splits_the_batch() {
    for (name, first) in [
        ("with query header", too_long()),
        ("__type only", sqs_error(400, "BatchRequestTooLong", None)),
    ] {
        let run = run_against(
            failing_then_all_sent(1, first.clone()),
            4,
            settings(3),
            None,
        )
        .await;
        assert_eq!(ids(&run.requests[0]), ["0", "1", "2", "3"], "{name}");
        assert!(
            run.requests.len() >= 3,
            "{name}: {} calls",
            run.requests.len()
        );
        for (call, r) in run.requests.iter().enumerate().skip(1) {
            assert!(r.len() <= 2, "{name}: call {call} has {} entries", r.len());
        }
        let later: Vec<String> = run.requests[1..].iter().flat_map(|r| ids(r)).collect();
        let mut sorted = later.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            ["0", "1", "2", "3"],
            "{name}: each message in exactly one later call"
        );
        for i in 0..4 {
            let id = i.to_string();
            let call = run
                .requests
                .iter()
                .enumerate()
                .skip(1)
                .find(|(_, r)| r.iter().any(|e| e.id == id))
                .map(|(c, _)| c)
                .expect("every message in a later call");
            match run.outcome(i) {
                Outcome::Sent {
                    message_id: mid, ..
                } => {
                    assert_eq!(mid, &message_id(call, &id), "{name}: message {i}")
                }
                other => panic!("{name}: message {i}: expected Sent, got {other:?}"),
            }
        }
        // Documented: attempts = the SendMessageBatch calls that carried
        // the message, here the rejected call and the accepted one.
        assert_attempts_match_requests(&run);
    }
}

#[tokio::test]
async fn batch_request_too_long_every_time_ends_one_by_one() {
    let run = run_against(scripted(|_, _| too_long()), 4, settings(3), None).await;
    // 4 -> 2 + 2 -> 1 + 1 + 1 + 1: seven calls, then each message alone is
    // rejected for good.
    let mut sizes: Vec<usize> = run.requests.iter().map(Vec::len).collect();
    assert_eq!(sizes[0], 4);
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(sizes, [4, 2, 2, 1, 1, 1, 1]);
    assert_all_failed(&run, 0..4, &["BatchRequestTooLong"], false, None);
    assert_attempts_match_requests(&run);
}

// ---------------------------------------------------------------------------
// 9. Deadline during backoff
// ---------------------------------------------------------------------------

#[tokio::test]
async fn deadline_during_a_long_backoff() {
    // Backoff ceilings far beyond the deadline: retries that cannot happen in
    // time are given up at once, the rest at the deadline.
    let s = SendSettings {
        retry: RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_secs(20),
            max_delay: Duration::from_secs(20),
        },
        ..settings(10)
    };
    let deadline = Duration::from_millis(500);
    let run = run_against(
        every_entry_failing("InternalError", false),
        5,
        s,
        Some(deadline),
    )
    .await;
    assert!(
        run.elapsed < deadline + Duration::from_millis(200),
        "send_all must not outlive the deadline, took {:?}",
        run.elapsed
    );
    for i in 0..5 {
        assert_failed(
            &run,
            i,
            &["InternalError", "DeadlineExceeded", "Timeout"],
            true,
            None,
        );
        assert!(run.attempts(i) >= 1, "message {i} was tried");
    }
    assert_attempts_match_requests_but_the_last(&run);
}

#[tokio::test]
async fn deadline_during_short_backoffs() {
    // Many quick retries, then the deadline.
    let s = SendSettings {
        retry: RetryPolicy {
            max_attempts: 1_000,
            base_delay: Duration::from_millis(40),
            max_delay: Duration::from_millis(40),
        },
        ..settings(1_000)
    };
    let deadline = Duration::from_millis(400);
    let run = run_against(
        every_entry_failing("InternalError", false),
        5,
        s,
        Some(deadline),
    )
    .await;
    assert!(
        run.elapsed >= Duration::from_millis(300)
            && run.elapsed < deadline + Duration::from_millis(200),
        "took {:?}",
        run.elapsed
    );
    assert!(
        run.requests.len() > 2,
        "retried: {} calls",
        run.requests.len()
    );
    for i in 0..5 {
        // A retry launched just before the deadline gets only the time left
        // and may end as a Timeout.
        assert_failed(
            &run,
            i,
            &["InternalError", "DeadlineExceeded", "Timeout"],
            true,
            None,
        );
        assert!(run.attempts(i) >= 2, "message {i}: {}", run.attempts(i));
    }
    assert_attempts_match_requests_but_the_last(&run);
}
