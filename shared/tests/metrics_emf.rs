//! EMF metrics. Alone in its own test binary: the metrics recorder is global
//! to the process, so no other test may send while this one counts.

mod common;

use common::{endpoint, settings};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::setup::config::LogFormat;
use sqs_forwarder::{Forwarder, Message, OversizePolicy, observe};

#[tokio::test]
async fn metrics_are_written_as_emf() {
    let obs = observe::init(LogFormat::Text, "SqsForwarderTest", "policies");
    let endpoint = endpoint();
    let fwd = Forwarder::new(
        endpoint,
        settings(OversizePolicy::Drop),
        EncodeRules::default(),
    );
    let _ = obs.flush_to(std::io::sink()); // start from zero
    let msgs = vec![
        Message::new("a", 0),
        Message::new("bad", 1),
        Message::new("z".repeat(2000), 2),
        Message::new("b", 3),
    ];
    fwd.send_all(msgs, None).await;
    let mut out = Vec::new();
    obs.flush_to(&mut out).expect("flush");
    let doc: serde_json::Value = serde_json::from_slice(&out).expect("one EMF JSON document");
    assert_eq!(
        doc["_aws"]["CloudWatchMetrics"][0]["Namespace"],
        "SqsForwarderTest"
    );
    assert_eq!(doc["Service"], "policies");
    assert_eq!(doc["MessagesIn"], 4);
    assert_eq!(doc["MessagesSent"], 2);
    assert_eq!(doc["MessagesFailed"], 1);
    assert_eq!(doc["MessagesDropped"], 1);
    assert_eq!(doc["BatchesSent"], 1);
    assert_eq!(doc["BytesSent"], 2);
}
