//! The event is read as the request `lambda_http` would read: for every
//! API Gateway, function URL and load balancer fixture, and for events that
//! sit between the formats, `HttpEvent::read` gives the same `LambdaRequest`
//! (the same variant, every field the same) as `lambda_http`'s own reader,
//! which copies the event and tries each format in turn.

use apigw_to_sqs::event::HttpEvent;
use lambda_http::request::LambdaRequest;
use serde_json::{Value, json};

fn fixture(name: &str) -> Value {
    let path = format!("{}/../../events/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A request as its variant and its fields written back as JSON (maps
/// compare whatever their order).
fn fields(r: &LambdaRequest) -> (&'static str, Value) {
    let (variant, value) = match r {
        LambdaRequest::ApiGatewayV1(r) => ("ApiGatewayV1", serde_json::to_value(r)),
        LambdaRequest::ApiGatewayV2(r) => ("ApiGatewayV2", serde_json::to_value(r)),
        LambdaRequest::Alb(r) => ("Alb", serde_json::to_value(r)),
        other => panic!("a variant the function does not build with: {other:?}"),
    };
    (variant, value.expect("written back"))
}

/// Ours and lambda_http's reading of `json` (`None`: not a request).
type Read = Option<(&'static str, Value)>;

fn both(json: &str) -> (Read, Read) {
    let ours = match HttpEvent::read(json) {
        HttpEvent::Request(r) => Some(fields(&r)),
        _ => None,
    };
    let theirs = serde_json::from_str::<LambdaRequest>(json)
        .ok()
        .map(|r| fields(&r));
    (ours, theirs)
}

fn assert_same(what: &str, event: &Value) -> bool {
    let text = event.to_string();
    let (ours, theirs) = both(&text);
    assert_eq!(ours, theirs, "{what}");
    ours.is_some()
}

#[test]
fn every_fixture_reads_as_lambda_http_reads_it() {
    let dir = format!("{}/../../events", env!("CARGO_MANIFEST_DIR"));
    let mut requests = 0;
    for entry in std::fs::read_dir(&dir).expect("events/") {
        let name = entry
            .expect("entry")
            .file_name()
            .into_string()
            .expect("name");
        if !(name.starts_with("apigw-") && name.ends_with(".json")) {
            continue;
        }
        if assert_same(&name, &fixture(&name)) {
            requests += 1;
        }
    }
    assert!(requests >= 14, "{requests} fixtures read as requests");
}

#[test]
fn events_between_the_formats_read_as_lambda_http_reads_them() {
    let http = fixture("apigw-http-ndjson.json");
    let rest = fixture("apigw-rest-single.json");
    let alb = fixture("apigw-alb-single.json");
    let mut cases: Vec<(&str, Value)> = Vec::new();
    for (name, base) in [("http", &http), ("rest", &rest), ("alb", &alb)] {
        for (change, method) in [
            ("httpMethod null", Some(json!(null))),
            ("httpMethod POST", Some(json!("POST"))),
            ("httpMethod 7", Some(json!(7))),
            ("no httpMethod", None),
        ] {
            let mut e = base.clone();
            match method {
                Some(m) => e["httpMethod"] = m,
                None => {
                    e.as_object_mut().map(|o| o.remove("httpMethod"));
                }
            }
            cases.push((Box::leak(format!("{name}, {change}").into_boxed_str()), e));
        }
        let mut no_context = base.clone();
        no_context
            .as_object_mut()
            .map(|o| o.remove("requestContext"));
        cases.push((
            Box::leak(format!("{name}, no requestContext").into_boxed_str()),
            no_context,
        ));
    }
    cases.push(("an array", json!([1, 2])));
    cases.push(("a string", json!("POST")));
    cases.push(("an empty object", json!({})));
    let mut read = 0;
    for (what, event) in &cases {
        if assert_same(what, event) {
            read += 1;
        }
    }
    // Some of them are requests (an HTTP API event with any httpMethod
    // still is one), some are not: both sides of the rule are compared.
    assert!(read > 0 && read < cases.len(), "{read} of {}", cases.len());
}

#[test]
fn a_duplicated_key_reads_as_lambda_http_reads_it() {
    let http = fixture("apigw-http-ndjson.json").to_string();
    // `"httpMethod"` twice at the top: the shape cannot be read, and every
    // format is tried, as lambda_http tries them.
    let twice = http.replacen('{', r#"{"httpMethod":"GET","httpMethod":"POST","#, 1);
    let (ours, theirs) = both(&twice);
    assert_eq!(ours, theirs);
}
