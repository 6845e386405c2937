//! apigw-to-sqs body splitting (NDJSON, JSON array, single) of arbitrary
//! bytes: every message comes from the body and is no longer than it.
#![no_main]

use apigw_to_sqs::body::{Kind, SplitLimits, split};
use apigw_to_sqs::lambda_http::Body;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let kind = match pick % 3 {
        0 => Kind::Json,
        1 => Kind::Ndjson,
        _ => Kind::Opaque,
    };
    let limits = SplitLimits {
        max_messages: 1000,
        max_message_bytes: Some(usize::from(pick) * 4 + 1),
    };
    let body = match std::str::from_utf8(body) {
        Ok(s) if pick & 0x80 == 0 => Body::Text(s.to_owned()),
        _ => Body::Binary(body.to_vec()),
    };
    let len = match &body {
        Body::Text(s) => s.len(),
        Body::Binary(b) => b.len(),
        _ => 0,
    };
    if let Ok((_, messages)) = split(body, kind, &limits) {
        assert!(messages.len() <= 1000);
        assert!(messages.len() <= len.max(1));
        let total: usize = messages.iter().map(|m| m.len()).sum();
        assert!(total <= len);
    }
});
