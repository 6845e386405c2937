//! An Amazon MQ `aws:rmq` event (or any JSON) through the function's
//! handler, with a fake SQS and no broker: an answer, never a panic.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use rabbitmq_to_sqs::{Handler, Settings};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::test_support::FakeSqs;
use sqs_forwarder::{Env, Forwarder, SendSettings};

fuzz_target!(|data: &[u8]| {
    let Ok(event) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let settings = Settings::from_env(&Env::from_pairs(&[])).expect("defaults");
    let forwarder = Forwarder::new(
        FakeSqs::new(),
        SendSettings::default(),
        EncodeRules::default(),
    );
    let function = Handler::new(settings, forwarder, Duration::ZERO, None).expect("function");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let stop_at = tokio::time::Instant::now() + Duration::from_secs(5);
    let _ = rt.block_on(function.handle_until(event, stop_at, None));
});
