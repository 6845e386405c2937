//! Body encoding, sizing and packing of arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sqs_forwarder::message::encode::{EncodeRules, prepare};
use sqs_forwarder::message::limits::message_size;
use sqs_forwarder::{Attribute, Body, Limits, Message};

fuzz_target!(|data: &[u8]| {
    let (head, rest) = data.split_at(data.len().min(8));
    let body = match std::str::from_utf8(rest) {
        Ok(s) if head.first().is_some_and(|b| b & 1 == 0) => Body::Text(s.to_owned()),
        _ => Body::Bytes(rest.to_vec()),
    };
    let name = String::from_utf8_lossy(head).into_owned();
    let message = Message::new(body, ()).attribute(Attribute::string(name, "v"));
    let (_, entry) = prepare(message, &EncodeRules::default());
    if let Ok(e) = entry {
        assert_eq!(e.size, message_size(&e.body, &e.attributes));
        // base64 at most 4/3 of the input, plus padding and the marker.
        assert!(e.body.len() <= rest.len() * 4 / 3 + 4);
    }
    let sizes: Vec<usize> = data.iter().map(|&b| usize::from(b) * 4096).collect();
    let limits = Limits::default();
    let plan = sqs_forwarder::send::batch::pack_in_order(&sizes, &limits);
    let mut next = 0;
    for range in plan {
        assert_eq!(range.start, next);
        assert!(!range.is_empty() && range.len() <= limits.max_entries);
        next = range.end;
    }
    assert_eq!(next, sizes.len());
});
