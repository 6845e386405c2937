//! The built function's memory under large messages: a queue of 100
//! messages of 900 KB (each near SQS's 1 MiB limit, so each its own call)
//! and one of 100 messages of 1 MiB (SQS's limit: their properties are left
//! out to fit), drained
//! at the default prefetch of 100 by the built binary against a local
//! Lambda runtime API, with Lambda's 128 MB in `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`.
//! Its peak resident memory (`VmHWM`) must stay below 128 MB: prefetch
//! bounds deliveries by count only, `RABBITMQ_MAX_BATCH_BYTES` (an eighth of
//! the memory by default) by bytes. `RABBITMQ_MEMORY_MESSAGES=1000` runs it
//! with 1,000 messages in each queue instead of 100 (a few minutes). Needs RabbitMQ (`RABBITMQ_TEST_URL`);
//! SQS is an endpoint of the test's own that takes every entry.

use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Connection, ConnectionProperties};
use serde_json::json;
use sqs_forwarder::test_support::runtime_api::{FunctionProcess, Posted, RuntimeApi, local_env};

const BINARY: &str = env!("CARGO_BIN_EXE_rabbitmq-to-sqs");
const LIMIT: u64 = 128 * 1024 * 1024;

fn amqp_url() -> String {
    std::env::var("RABBITMQ_TEST_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// A fresh queue with `count` messages of `size` bytes each.
async fn queue_of(base: &str, count: usize, size: usize) -> (String, Connection) {
    let conn = Connection::connect(&amqp_url(), ConnectionProperties::default())
        .await
        .expect("RabbitMQ must run (scripts/local-rabbitmq.sh start)");
    let ch = conn.create_channel().await.expect("channel");
    ch.confirm_select(ConfirmSelectOptions::default())
        .await
        .expect("confirms");
    // One name per test: a run that failed half-way leaves its queue to
    // the next run, which starts it afresh.
    let name = base.to_owned();
    let _ = ch
        .queue_delete(
            name.as_str().into(),
            lapin::options::QueueDeleteOptions::default(),
        )
        .await;
    ch.queue_declare(
        name.as_str().into(),
        QueueDeclareOptions {
            auto_delete: false,
            ..QueueDeclareOptions::default()
        },
        FieldTable::default(),
    )
    .await
    .expect("declare");
    let body = vec![b'x'; size];
    let mut confirms = Vec::new();
    for _ in 0..count {
        confirms.push(
            ch.basic_publish(
                "".into(),
                name.as_str().into(),
                BasicPublishOptions::default(),
                &body,
                BasicProperties::default(),
            )
            .await
            .expect("publish"),
        );
    }
    for c in confirms {
        c.await.expect("confirmed");
    }
    (name, conn)
}

async fn delete(conn: &Connection, queue: &str) {
    if let Ok(ch) = conn.create_channel().await {
        let _ = ch
            .queue_delete(queue.into(), lapin::options::QueueDeleteOptions::default())
            .await;
    }
}

/// An SQS endpoint of the test's own that takes every entry at once and
/// keeps nothing (the local SQS would keep 90 MB and answer slowly): it
/// answers `GetQueueAttributes` (1 MiB messages) and `SendMessageBatch`.
struct TakesAll;

impl wiremock::Respond for TakesAll {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let target = request
            .headers
            .get("x-amz-target")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let answer = match target {
            "AmazonSQS.GetQueueAttributes" => {
                json!({"Attributes": {"MaximumMessageSize": "1048576"}})
            }
            "AmazonSQS.SendMessageBatch" => {
                let body: serde_json::Value =
                    serde_json::from_slice(&request.body).unwrap_or_default();
                let ok: Vec<serde_json::Value> = body["Entries"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|e| json!({"Id": e["Id"], "MessageId": "m", "MD5OfMessageBody": "0"}))
                    .collect();
                json!({"Successful": ok, "Failed": []})
            }
            other => {
                return wiremock::ResponseTemplate::new(400)
                    .set_body_json(json!({"__type": "UnsupportedOperation", "message": other}));
            }
        };
        wiremock::ResponseTemplate::new(200).set_body_json(answer)
    }
}

async fn sqs_endpoint() -> wiremock::MockServer {
    let server = wiremock::MockServer::builder()
        .disable_request_recording()
        .start()
        .await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(TakesAll)
        .mount(&server)
        .await;
    server
}

#[tokio::test(flavor = "multi_thread")]
async fn large_messages_drain_within_128_mb() {
    let n: usize = std::env::var("RABBITMQ_MEMORY_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let (big, c1) = queue_of("rmq-mem-900k", n, 900 * 1024).await;
    let (over, c2) = queue_of("rmq-mem-1m", n, 1024 * 1024).await;
    let sqs = sqs_endpoint().await;
    let endpoint = sqs.uri();
    let url = format!("{endpoint}/000000000000/memory");
    let queues = format!("{big},{over}");
    let rabbit = amqp_url();
    let mut env = local_env(&url, &endpoint);
    env.extend([
        ("RABBITMQ_URL", rabbit.as_str()),
        ("RABBITMQ_QUEUES", queues.as_str()),
    ]);
    let api = RuntimeApi::start().await;
    let function = FunctionProcess::spawn(BINARY, &api, &env);
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64
        + 240_000 * (n as u64).div_ceil(100).min(4);
    let posted = api.invoke_until(&json!({}), deadline).await;
    let peak = function.peak_rss().expect("/proc tells VmHWM");
    delete(&c1, &big).await;
    delete(&c2, &over).await;
    eprintln!(
        "peak resident memory: {:.1} MiB ({n} x 900 KB and {n} x 1 MiB)",
        peak as f64 / 1048576.0
    );
    let Posted::Response { body: report, .. } = posted else {
        panic!("the tick failed: {posted:?}");
    };
    let queues = report["queues"].as_array().expect("a report per queue");
    assert_eq!(queues[0]["sent"], n, "{report}");
    assert_eq!(queues[1]["sent"], n, "{report}");
    assert!(
        peak < LIMIT,
        "peak resident memory {:.1} MiB, over Lambda's 128 MB",
        peak as f64 / 1048576.0
    );
}
