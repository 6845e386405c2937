//! An S3 notification or EventBridge event from arbitrary JSON bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use s3_to_sqs::Incoming;
use s3_to_sqs::event::parse;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Ok(Incoming::Objects(objects)) = parse(value) {
        assert!(objects.len() <= data.len());
    }
});
