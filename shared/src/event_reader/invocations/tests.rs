//! The loop against the tests' local runtime API
//! (`test_support::runtime_api`), in process: what the handler gets, and
//! what Lambda is told.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::StreamBody;
use hyper::body::Frame;
use lambda_runtime::service_fn;
use serde::Deserialize;
use serde_json::{Value, json};

use super::*;
use crate::test_support::runtime_api::{Posted, RuntimeApi};

/// The variables Lambda sets, with the runtime API at `address`.
fn lambda_vars(address: &str) -> impl Fn(&str) -> Option<String> + use<> {
    let address = address.to_owned();
    move |name| match name {
        "AWS_LAMBDA_RUNTIME_API" => Some(address.clone()),
        "AWS_LAMBDA_FUNCTION_NAME" => Some("loop-test".to_owned()),
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE" => Some("128".to_owned()),
        "AWS_LAMBDA_FUNCTION_VERSION" => Some("$LATEST".to_owned()),
        _ => None,
    }
}

/// The loop serving `handler` from the runtime API at `endpoint` (as
/// `AWS_LAMBDA_RUNTIME_API` gives it).
fn serving<F, P>(endpoint: &str, handler: F) -> impl Future<Output = Result<(), Error>> + use<F, P>
where
    F: Service<LambdaEvent<P>> + 'static,
    F::Future: 'static,
    F::Response: Serialize,
    F::Error: Into<Diagnostic>,
    P: DeserializeOwned + 'static,
{
    let api = Api::from_vars(lambda_vars(endpoint)).expect("Lambda's variables");
    let respond = Respond::new(handler, api.client.clone());
    api.serve(TracingLayer::new().layer(respond))
}

/// `event` handed to `handler` through the loop, and what it posted.
async fn invoke<F, P>(handler: F, events: &[Value]) -> Vec<Posted>
where
    F: Service<LambdaEvent<P>> + 'static,
    F::Future: 'static,
    F::Response: Serialize,
    F::Error: Into<Diagnostic>,
    P: DeserializeOwned + 'static,
{
    let runtime_api = RuntimeApi::start().await;
    invoke_at(&runtime_api, runtime_api.address(), handler, events).await
}

/// [`invoke`], the loop given `endpoint` for `runtime_api`.
async fn invoke_at<F, P>(
    runtime_api: &RuntimeApi,
    endpoint: &str,
    handler: F,
    events: &[Value],
) -> Vec<Posted>
where
    F: Service<LambdaEvent<P>> + 'static,
    F::Future: 'static,
    F::Response: Serialize,
    F::Error: Into<Diagnostic>,
    P: DeserializeOwned + 'static,
{
    let serving = serving(endpoint, handler);
    let invoking = async {
        let mut posted = Vec::new();
        for event in events {
            posted.push(runtime_api.invoke(event).await);
        }
        posted
    };
    tokio::select! {
        stopped = serving => panic!("the loop stopped: {stopped:?}"),
        posted = tokio::time::timeout(Duration::from_secs(60), invoking) => {
            posted.expect("every invocation answered within a minute")
        }
    }
}

#[tokio::test]
async fn an_event_of_many_chunks_reaches_the_handler_whole() {
    // 5.5 MB of text: hyper reads it in many chunks, each copied into the
    // event's one buffer.
    let text: String = (0..5_500_000u32)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let handler = service_fn(|event: LambdaEvent<Value>| async move {
        let text = event.payload["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        Ok::<_, Infallible>(json!({"length": text.len(), "text": text}))
    });
    let posted = invoke(handler, &[json!({ "text": text })]).await;
    let answer = posted[0].response();
    assert_eq!(answer["length"], 5_500_000);
    assert!(answer["text"] == text.as_str(), "the event arrived changed");
}

#[tokio::test]
async fn the_handler_gets_the_invocations_context_and_trace() {
    let handler = service_fn(|event: LambdaEvent<Value>| async move {
        let c = event.context;
        Ok::<_, Infallible>(json!({
            "request_id": c.request_id,
            "deadline": c.deadline,
            "arn": c.invoked_function_arn,
            "xray": c.xray_trace_id,
            "trace_env": std::env::var("_X_AMZN_TRACE_ID").ok(),
            "function": c.env_config.function_name,
            "memory": c.env_config.memory,
        }))
    });
    let posted = invoke(handler, &[json!({}), json!({})]).await;
    for (n, posted) in posted.iter().enumerate() {
        let Posted::Response { request_id, body } = posted else {
            panic!("expected a response, got {posted:?}");
        };
        assert_eq!(body["request_id"], request_id.as_str());
        assert_eq!(request_id, &format!("00000000-0000-4000-8000-{n:012}"));
        assert!(body["deadline"].as_u64().unwrap_or(0) > 0, "{body}");
        assert_eq!(
            body["arn"],
            "arn:aws:lambda:us-east-1:123456789012:function:test"
        );
        let trace = "Root=1-00000000-000000000000000000000000;Sampled=0";
        assert_eq!(body["xray"], trace);
        assert_eq!(
            body["trace_env"], trace,
            "_X_AMZN_TRACE_ID as lambda_runtime sets it"
        );
        assert_eq!(body["function"], "loop-test");
        assert_eq!(body["memory"], 128);
    }
}

#[derive(Debug, Deserialize)]
struct Strict {
    #[allow(dead_code)]
    count: u32,
}

#[tokio::test]
async fn a_payload_that_does_not_deserialize_is_reported_as_lambda_runtime_reports_it() {
    let handler = service_fn(|_: LambdaEvent<Strict>| async {
        Ok::<_, Infallible>(json!("the handler ran"))
    });
    let posted = invoke(handler, &[json!({"count": "three"}), json!({"count": 3})]).await;
    let error = posted[0].error();
    assert_eq!(
        error.error_type,
        "lambda_runtime::deserializer::DeserializeError"
    );
    assert!(
        error.error_message.starts_with(
            "failed to deserialize the incoming data into the function's payload type: [count] invalid type: string \"three\""
        ),
        "{error:?}"
    );
    assert_eq!(error.header.as_deref(), Some("unhandled"));
    // The loop goes on to the next invocation.
    assert_eq!(posted[1].response(), &json!("the handler ran"));
}

#[tokio::test]
async fn a_handler_error_is_posted_with_its_diagnostic() {
    let handler = service_fn(|event: LambdaEvent<Value>| async move {
        if event.payload["fail"] == true {
            Err(Diagnostic {
                error_type: "Test.Failed".to_owned(),
                error_message: "asked to fail".to_owned(),
            })
        } else {
            Ok(json!({"ok": true}))
        }
    });
    let posted = invoke(handler, &[json!({"fail": true}), json!({"fail": false})]).await;
    let error = posted[0].error();
    assert_eq!(error.error_type, "Test.Failed");
    assert_eq!(error.error_message, "asked to fail");
    assert_eq!(error.header.as_deref(), Some("unhandled"));
    assert_eq!(posted[1].response(), &json!({"ok": true}));
}

#[test]
fn a_missing_or_wrong_variable_is_an_error_naming_it() {
    for (missing, wrong, says) in [
        (
            "AWS_LAMBDA_RUNTIME_API",
            None,
            "AWS_LAMBDA_RUNTIME_API is not set",
        ),
        (
            "AWS_LAMBDA_FUNCTION_NAME",
            None,
            "AWS_LAMBDA_FUNCTION_NAME is not set",
        ),
        (
            "AWS_LAMBDA_FUNCTION_VERSION",
            None,
            "AWS_LAMBDA_FUNCTION_VERSION is not set",
        ),
        (
            "",
            Some(("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128MB")),
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE is not a number of MB: \"128MB\"",
        ),
        (
            "",
            Some(("AWS_LAMBDA_RUNTIME_API", "not a host")),
            "AWS_LAMBDA_RUNTIME_API is not host:port or a URL: \"not a host\"",
        ),
    ] {
        let vars = lambda_vars("127.0.0.1:9001");
        let vars = |name: &str| match wrong {
            Some((w, value)) if w == name => Some(value.to_owned()),
            _ if name == missing => None,
            _ => vars(name),
        };
        match Api::from_vars(vars) {
            Ok(_) => panic!("{missing}{wrong:?}: accepted"),
            Err(e) => assert!(e.to_string().starts_with(says), "{e}"),
        }
    }
    assert!(Api::from_vars(lambda_vars("127.0.0.1:9001")).is_ok());
}

/// A body of these chunks, as hyper gives them.
fn chunked(
    chunks: &[&'static [u8]],
) -> StreamBody<impl futures_util::Stream<Item = Result<Frame<Bytes>, Infallible>> + Unpin> {
    let frames: Vec<_> = chunks
        .iter()
        .map(|c| Ok(Frame::data(Bytes::from_static(c))))
        .collect();
    StreamBody::new(futures_util::stream::iter(frames))
}

#[tokio::test]
async fn the_event_is_every_chunk_in_order_whatever_its_content_length_says() {
    let chunks: &[&'static [u8]] = &[b"{\"a\":", b"[1,2,", b"3]}"];
    for length in [
        None,
        Some("14"),
        Some("3"),
        Some("1000000000000"),
        Some("x"),
    ] {
        let mut headers = HeaderMap::new();
        if let Some(length) = length {
            headers.insert(
                http::header::CONTENT_LENGTH,
                length.parse().expect("a header value"),
            );
        }
        let event = read_event(chunked(chunks), &headers).await.expect("read");
        assert_eq!(&event[..], b"{\"a\":[1,2,3]}", "Content-Length {length:?}");
    }
}

#[test]
fn answers_go_where_lambda_runtime_posts_them_with_the_invocation_id() {
    let response = Answer::Response(b"{}".to_vec())
        .request("req-1", Some("inv-1"))
        .expect("a request");
    assert_eq!(response.method(), Method::POST);
    assert_eq!(
        response.uri().path(),
        "/2018-06-01/runtime/invocation/req-1/response"
    );
    assert_eq!(response.headers()[INVOCATION_ID], "inv-1");
    assert!(
        response
            .headers()
            .get("lambda-runtime-function-error-type")
            .is_none()
    );
    assert!(response.headers().get(http::header::USER_AGENT).is_some());

    let diagnostic = Diagnostic {
        error_type: "T".to_owned(),
        error_message: "m".to_owned(),
    };
    let error = Answer::Error(diagnostic)
        .request("req-2", None)
        .expect("a request");
    assert_eq!(
        error.uri().path(),
        "/2018-06-01/runtime/invocation/req-2/error"
    );
    assert_eq!(
        error.headers()["lambda-runtime-function-error-type"],
        "unhandled"
    );
    assert!(error.headers().get(INVOCATION_ID).is_none());
    // A request id that cannot be a path is an error, not a panic.
    assert!(Answer::Response(Vec::new()).request("a b", None).is_err());
}

#[tokio::test]
async fn the_runtime_api_may_be_a_url_with_a_base_path() {
    // Lambda gives `host:port`; `cargo lambda watch` a URL with its
    // `http://`. As a URL, the same runtime API serves.
    let runtime_api = RuntimeApi::start().await;
    let ok = || service_fn(|_: LambdaEvent<Value>| async { Ok::<_, Infallible>(json!("ok")) });
    let url = format!("http://{}", runtime_api.address());
    let posted = invoke_at(&runtime_api, &url, ok(), &[json!({})]).await;
    assert_eq!(posted[0].response(), &json!("ok"));

    // With a base path, every request goes under it: the tests' runtime
    // API serves none there, and the loop stops on its 404 for `/next`.
    let based = format!("http://{}/.rt", runtime_api.address());
    let serving = serving(&based, ok());
    let stopped = tokio::time::timeout(Duration::from_secs(30), serving)
        .await
        .expect("the loop stops at once");
    let error = stopped.expect_err("no runtime API under /.rt").to_string();
    assert!(error.contains("404"), "{error}");
}
