//! An API Gateway / function URL event from arbitrary JSON bytes, through
//! the base64 guard, `lambda_http`'s conversion and the handler (fake SQS).
#![no_main]

use std::time::Duration;

use apigw_to_sqs::event::undecodable_body;
use apigw_to_sqs::lambda_http::Request;
use apigw_to_sqs::lambda_http::request::LambdaRequest;
use apigw_to_sqs::{Handler, Settings};
use libfuzzer_sys::fuzz_target;
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::test_support::FakeSqs;
use sqs_forwarder::{Env, Forwarder, SendSettings};

fuzz_target!(|data: &[u8]| {
    let Ok(event) = serde_json::from_slice::<LambdaRequest>(data) else {
        return;
    };
    if undecodable_body(&event).is_some() {
        return;
    }
    let request: Request = event.into();
    let settings = Settings::from_env(&Env::from_pairs(&[])).expect("defaults");
    let forwarder = Forwarder::new(
        FakeSqs::new(),
        SendSettings::default(),
        EncodeRules::default(),
    );
    let handler = Handler::new(settings, forwarder, Duration::ZERO);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let response = rt.block_on(handler.handle(request));
    assert!(response.status().as_u16() >= 200);
});
