//! A Kinesis event from arbitrary JSON bytes, read as the function reads it
//! (`event::read`), then its records to messages.
#![no_main]

use kinesis_to_sqs::Settings;
use kinesis_to_sqs::records::prepare;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(event) = kinesis_to_sqs::event::read(text) else {
        return;
    };
    let records = event.records.len();
    let bytes: usize = event.records.iter().map(|r| r.kinesis.data.0.len()).sum();
    for fifo in [false, true] {
        let prepared = prepare(event.records.clone(), &Settings::default(), fifo);
        assert_eq!(prepared.records.len(), records);
        // KPL user records are at least a byte of protobuf each.
        assert!(prepared.messages.len() <= records.max(bytes));
        assert!(
            prepared
                .messages
                .iter()
                .all(|m| m.position.record < records)
        );
    }
});
