//! Credentials sent to the endpoint never reach the logs: every log line
//! the function writes (captured at TRACE, as JSON, the Lambda format)
//! while answering requests that carry `Authorization`, `Cookie`,
//! `Proxy-Authorization`, `X-Api-Key` and `X-Amz-Security-Token` headers, in
//! every outcome (sent, refused for a bad header or body, SQS failing,
//! base64 that does not decode), is checked for their values.

use std::convert::Infallible;
use std::future::poll_fn;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apigw_to_sqs::event::{HttpEvent, RefuseUndecodable};
use apigw_to_sqs::lambda_http::{Adapter, Context, LambdaEvent, Request, Service, service_fn};
use apigw_to_sqs::{Handler, Settings};
use serde_json::{Value, json};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::test_support::{FakeSqs, Reply};
use sqs_forwarder::{Env, Forwarder, SendSettings};

const SECRETS: &[(&str, &str)] = &[
    ("authorization", "Bearer eyJhbGciOi.SECRET-TOKEN-1.sig"),
    ("cookie", "session=SECRET-COOKIE-2"),
    ("proxy-authorization", "Basic U0VDUkVULVBST1hZLTM="),
    ("x-api-key", "SECRET-API-KEY-4"),
    ("x-amz-security-token", "IQoJb3JpZ2luSECRET-TOKEN-5"),
];

/// A writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("lock")).into_owned()
    }
}

/// The workspace's fake SQS: answers each entry with `failure`, or accepts it.
fn sqs(failure: Option<(&'static str, bool)>) -> FakeSqs {
    FakeSqs::new().answer(move |_| {
        failure.map(|(code, sender_fault)| {
            Reply::fail(code, sender_fault).with_message(format!("{code} from the fake"))
        })
    })
}

fn handler(failure: Option<(&'static str, bool)>) -> Handler<FakeSqs> {
    let settings = Settings::from_env(&Env::from_pairs(&[("ATTRIBUTE_HEADERS", "x-tenant")]))
        .expect("settings");
    let send = SendSettings {
        retry: sqs_forwarder::RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        },
        ..SendSettings::default()
    };
    Handler::new(
        settings,
        Forwarder::new(sqs(failure), send, EncodeRules::default()),
        Duration::ZERO,
    )
}

fn sample(name: &str) -> Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("sample")).expect("json")
}

async fn answer(h: &Handler<FakeSqs>, event: &Value) -> u64 {
    let payload: HttpEvent = serde_json::from_str(&event.to_string()).expect("any JSON is read");
    let inner =
        service_fn(
            move |request: Request| async move { Ok::<_, Infallible>(h.handle(request).await) },
        );
    let mut service = RefuseUndecodable::new(Adapter::from(inner));
    poll_fn(|cx| service.poll_ready(cx)).await.expect("ready");
    let r = service
        .call(LambdaEvent::new(payload, Context::default()))
        .await
        .expect("an answer");
    serde_json::to_value(&r).expect("json")["statusCode"]
        .as_u64()
        .unwrap_or_default()
}

#[tokio::test]
async fn credential_headers_never_reach_the_logs() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::new("trace"))
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let with_secrets = |name: &str, change: &dyn Fn(&mut Value)| {
        let mut ev = sample(name);
        for (header, value) in SECRETS {
            ev["headers"][*header] = json!(value);
        }
        ev["headers"]["x-tenant"] = json!("acme");
        change(&mut ev);
        ev
    };
    let mut statuses = Vec::new();
    for (name, failure, change) in [
        (
            "apigw-http-json-array.json",
            None,
            &(|_: &mut Value| {}) as &dyn Fn(&mut Value),
        ),
        ("apigw-rest-single.json", None, &|_: &mut Value| {}),
        ("apigw-url-base64-binary.json", None, &|_: &mut Value| {}),
        ("apigw-bad-json.json", None, &|_: &mut Value| {}),
        ("apigw-bad-header.json", None, &|_: &mut Value| {}),
        (
            "apigw-http-json-array.json",
            Some(("RequestThrottled", true)),
            &|_: &mut Value| {},
        ),
        (
            "apigw-http-json-array.json",
            Some(("AccessDenied", true)),
            &|_: &mut Value| {},
        ),
        ("apigw-url-base64-binary.json", None, &|v: &mut Value| {
            v["body"] = json!("%%%")
        }),
        ("apigw-url-single-text.json", None, &|v: &mut Value| {
            v["headers"]["x-delay-seconds"] = json!("soon")
        }),
    ] {
        let h = handler(failure);
        statuses.push(answer(&h, &with_secrets(name, change)).await);
    }
    assert_eq!(statuses, [202, 202, 202, 400, 400, 429, 502, 400, 400]);

    let logs = captured.text();
    // The capture works: the handler's own lines are there...
    assert!(logs.contains("request answered"), "{logs}");
    assert!(logs.contains("request refused"), "{logs}");
    assert!(logs.contains("messages failed"), "{logs}");
    for (header, value) in SECRETS {
        // ... and no credential is, whole or in part.
        let part = &value[value.len() / 2..];
        assert!(
            !logs.contains(part),
            "the {header} header's value is in the logs:\n{logs}"
        );
    }
}
