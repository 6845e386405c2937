//! EMF metrics. Alone in its own test binary: the metrics recorder is global
//! to the process, so no other test may send while this one counts.

mod common;

use common::{endpoint, settings};
use sqs_forwarder::message::encode::EncodeRules;
use sqs_forwarder::setup::config::LogFormat;
use std::borrow::Cow;

use sqs_forwarder::route::{RecordView, Router, Routes, SourceKey};
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

    // Records the rules skip count under FilteredOut and Unmatched only,
    // not also under MessagesDropped (OVERSIZE_POLICY=drop's).
    let routes = Routes::parse(
        r#"{"filter": [{"field": "/keep", "exists": true}],
            "routes": [{"when": {"field": "/to", "equals": "default"}, "target": "default"}],
            "unmatched": "drop"}"#,
        &[],
    )
    .expect("valid rules");
    let router = Router::new(routes, fwd.clone(), Vec::new()).expect("no extra targets");
    let records = [
        r#"{"keep": 1, "to": "default"}"#,
        r#"{"to": "default"}"#,
        r#"{"keep": 1, "to": "elsewhere"}"#,
        &format!(
            r#"{{"keep": 1, "to": "default", "pad": "{}"}}"#,
            "z".repeat(2000)
        ),
    ];
    let routed = records.iter().enumerate().map(|(i, r)| {
        let view = Data(r.as_bytes());
        let plan = router.routes().map(|rules| rules.plan(&view));
        router.route(plan, Message::new(*r, i))
    });
    router.forward(routed, None, |_| {}).await;
    let mut out = Vec::new();
    obs.flush_to(&mut out).expect("flush");
    let doc: serde_json::Value = serde_json::from_slice(&out).expect("one EMF JSON document");
    assert_eq!(doc["MessagesIn"], 4);
    assert_eq!(doc["MessagesSent"], 1);
    assert_eq!(doc["FilteredOut"], 1);
    assert_eq!(doc["Unmatched"], 1);
    assert_eq!(doc["MessagesDropped"], 1, "the oversize record only: {doc}");
}

/// A record of JSON data, for the rules.
struct Data<'a>(&'a [u8]);

impl RecordView for Data<'_> {
    fn data(&self) -> Option<&[u8]> {
        Some(self.0)
    }
    fn key(&self, _: SourceKey, _: Option<&str>) -> Option<Cow<'_, str>> {
        None
    }
}
