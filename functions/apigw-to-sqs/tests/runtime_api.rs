//! The built function against a local Lambda runtime API: every request,
//! the not-quite-real ones included, gets an HTTP answer (never an
//! invocation error, which API Gateway would turn into a 502); an event that
//! is no HTTP event at all fails with the documented error type. Needs the
//! local SQS endpoint (`SQS_TEST_ENDPOINT`) for its start.

use serde_json::{Value, json};
use sqs_forwarder::test_support::runtime_api::{
    FunctionProcess, RuntimeApi, init_error, local_env, local_queue, serving,
};
use sqs_forwarder::test_support::sample_event;

const BINARY: &str = env!("CARGO_BIN_EXE_apigw-to-sqs");

fn code(answer: &Value) -> String {
    let body: Value = serde_json::from_str(answer["body"].as_str().expect("a body")).expect("json");
    body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn not_quite_real_events_get_http_answers() {
    let (api, _function) = serving(BINARY, "apigw-runtime-api").await;

    // A placeholder host, as `sam local generate-event` writes it: served.
    let mut event = sample_event("apigw-rest-single.json");
    event["headers"]["Host"] = json!("1234567890.execute-api.{dns_suffix}");
    event["multiValueHeaders"]["Host"] = json!(["1234567890.execute-api.{dns_suffix}"]);
    event["requestContext"]["domainName"] = json!("1234567890.execute-api.{dns_suffix}");
    let answer = api.invoke(&event).await;
    assert_eq!(answer.response()["statusCode"], 202, "{answer:?}");

    // No requestContext.httpMethod: a 400 in the REST API's format.
    let mut event = sample_event("apigw-rest-single.json");
    event["requestContext"]
        .as_object_mut()
        .expect("a context")
        .remove("httpMethod");
    let answer = api.invoke(&event).await;
    let a = answer.response();
    assert_eq!(a["statusCode"], 400, "{answer:?}");
    assert_eq!(code(a), "InvalidEvent", "{a}");
    assert!(
        a["body"]
            .as_str()
            .unwrap_or_default()
            .contains("httpMethod"),
        "{a}"
    );

    // Not an HTTP event at all: the invocation fails, with its type.
    let posted = api.invoke(&sample_event("s3-put.json")).await;
    assert_eq!(
        posted.error().error_type,
        "ApigwToSqs.InvalidEvent",
        "{posted:?}"
    );
}

#[tokio::test]
async fn a_bad_value_fails_the_init_with_the_documented_error_type() {
    let (error, exit) = init_error(
        BINARY,
        &[
            ("QUEUE_URL", "http://127.0.0.1:9/1/q"),
            ("MAX_MESSAGES", "0"),
        ],
    )
    .await;
    assert_eq!(error.error_type, "ApigwToSqs.InvalidConfiguration");
    assert!(
        error.error_message.contains("MAX_MESSAGES=\"0\""),
        "{error:?}"
    );
    assert_eq!(exit, Some(2));
}

#[tokio::test]
async fn bad_routing_rules_fail_the_init_naming_the_rule() {
    let init = |routes: &'static str| async move {
        init_error(
            BINARY,
            &[("QUEUE_URL", "http://127.0.0.1:9/1/q"), ("ROUTES", routes)],
        )
        .await
    };
    // apigw-to-sqs offers the path, the method and headers, not a Kinesis
    // partition key.
    let (error, exit) = init(
        r#"{"routes": [{"when": {"key": "partition_key", "equals": "p"}, "target": "default"}]}"#,
    )
    .await;
    assert_eq!(error.error_type, "ApigwToSqs.InvalidConfiguration");
    assert!(
        error
            .error_message
            .starts_with("invalid configuration: ROUTES=")
            && error.error_message.contains("routes[0].when.key")
            && error.error_message.contains("path, method, header"),
        "{error:?}"
    );
    assert_eq!(exit, Some(2));

    // A credential header is never offered to the rules.
    let (error, exit) = init(
        r#"{"routes": [{"when": {"key": "header", "name": "Authorization", "exists": true}, "target": "default"}]}"#,
    )
    .await;
    assert_eq!(error.error_type, "ApigwToSqs.InvalidConfiguration");
    assert!(
        error
            .error_message
            .starts_with("invalid configuration: ROUTES=")
            && error.error_message.contains("routes[0].when: ")
            && error.error_message.contains("credentials"),
        "{error:?}"
    );
    assert_eq!(exit, Some(2));
}

#[tokio::test]
async fn the_started_function_routes_with_its_rules() {
    let (queue, endpoint) = local_queue("apigw-runtime-api-routed").await;
    let (eu, _) = local_queue("apigw-runtime-api-routed-eu").await;
    let routes = json!({
        "targets": {"eu": eu},
        "filter": [{"field": "/keep", "exists": true}],
        "routes": [{"path": "/queues/{name}/messages"}]
    })
    .to_string();
    let mut env = local_env(&queue, &endpoint);
    env.push(("ROUTES", &routes));
    let api = RuntimeApi::start().await;
    let _function = FunctionProcess::spawn(BINARY, &api, &env);

    let post = |path: &str, body: &str| {
        let mut event = sample_event("apigw-http-json-array.json");
        event["rawPath"] = json!(path);
        event["requestContext"]["http"]["path"] = json!(path);
        event["body"] = json!(body);
        event["headers"]
            .as_object_mut()
            .expect("headers")
            .remove("content-length");
        event
    };
    // The rules reached the handler: the path route's path takes messages,
    // the filter skips one.
    let answer = api
        .invoke(&post(
            "/queues/eu/messages",
            r#"[{"keep": 1}, {"drop": 2}]"#,
        ))
        .await;
    let a = answer.response();
    assert_eq!(a["statusCode"], 202, "{answer:?}");
    let body: Value = serde_json::from_str(a["body"].as_str().expect("a body")).expect("json");
    assert_eq!(body["results"][0]["status"], "sent", "{body}");
    assert_eq!(body["results"][1]["status"], "skipped", "{body}");
    let answer = api
        .invoke(&post("/queues/nope/messages", r#"{"keep": 1}"#))
        .await;
    let a = answer.response();
    assert_eq!(a["statusCode"], 404, "{answer:?}");
    assert_eq!(code(a), "UnknownQueue", "{a}");
}
