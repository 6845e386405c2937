//! Sends N messages (default 25) to `QUEUE_URL` through `SqsSink`, the
//! crate's buffered sink, and prints how many SQS accepted; exits with 1
//! unless all were. AWS settings come from the usual variables
//! (`AWS_REGION`, `AWS_ENDPOINT_URL_SQS` for a local SQS, credentials).
//!
//! ```text
//! QUEUE_URL=http://127.0.0.1:4566/000000000000/demo cargo run -- 25
//! ```

use std::process::ExitCode;
use std::time::Duration;

use sqs_forwarder::setup::client::sqs_client;
use sqs_forwarder::{Attribute, Message, Outcome, SqsSink, SqsTransport};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Ok(queue_url) = std::env::var("QUEUE_URL") else {
        eprintln!("crate-user: set QUEUE_URL");
        return ExitCode::from(2);
    };
    let count: usize = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 25,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("crate-user: the count must be a number: {e}");
            return ExitCode::from(2);
        }
    };
    let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let transport = SqsTransport::new(sqs_client(&sdk), queue_url);
    let sink = SqsSink::builder(transport)
        .max_time_in_buffer(Duration::from_millis(100))
        .build();
    let mut receipts = Vec::with_capacity(count);
    for i in 0..count {
        let message = Message::new(format!("{{\"n\":{i}}}"), i)
            .attribute(Attribute::string("source", "crate-user"));
        match sink.send(message).await {
            Ok(receipt) => receipts.push(receipt),
            Err(e) => {
                eprintln!("crate-user: message {i}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let Err(e) = sink.flush().await {
        eprintln!("crate-user: flush: {e}");
    }
    let mut sent = 0;
    for receipt in receipts {
        match receipt.outcome().await {
            Some(o) if matches!(o.outcome, Outcome::Sent { .. }) => sent += 1,
            Some(o) => eprintln!("crate-user: message {}: {:?}", o.position, o.outcome),
            None => eprintln!("crate-user: a message was never settled"),
        }
    }
    if let Err(e) = sink.close().await {
        eprintln!("crate-user: close: {e}");
    }
    println!("crate-user: {sent} of {count} sent");
    if sent == count {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
