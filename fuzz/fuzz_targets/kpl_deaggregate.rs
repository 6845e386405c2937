//! KPL de-aggregation of arbitrary bytes: as they are, and framed (magic +
//! the right MD5) so that the protobuf decoder is reached every time.
#![no_main]

use kinesis_to_sqs::kpl;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kpl::deaggregate(data);
    let framed = kpl::frame(data);
    if let Ok(users) = kpl::deaggregate(&framed) {
        let total: usize = users
            .iter()
            .map(|u| u.data.len() + u.partition_key.len())
            .sum();
        // Every user record holds its own bytes; keys may be shared, so
        // bound by records x input.
        assert!(users.iter().all(|u| u.data.len() <= data.len()));
        assert!(total <= users.len().saturating_mul(data.len()) + users.len());
    }
});
