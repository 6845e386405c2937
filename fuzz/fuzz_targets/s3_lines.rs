//! s3-to-sqs lines mode's reader over arbitrary bytes: the first byte picks
//! the line cap; no line may hold more than the cap, lengths add up.
#![no_main]

use libfuzzer_sys::fuzz_target;
use s3_to_sqs::lines::LineReader;

fuzz_target!(|data: &[u8]| {
    let Some((&cap, object)) = data.split_first() else {
        return;
    };
    let cap = usize::from(cap);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let mut reader = LineReader::new(object, cap);
        let mut total: u64 = 0;
        let mut count: u64 = 0;
        while let Ok(Some(line)) = reader.next_line().await {
            count += 1;
            assert_eq!(line.number, count);
            assert!(line.bytes.len() <= cap);
            assert!(line.bytes.len() as u64 <= line.len);
            total += line.len;
        }
        assert!(total <= object.len() as u64);
        assert!(count <= object.len() as u64 + 1);
    });
});
