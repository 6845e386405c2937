//! End-to-end: rabbitmq-to-sqs against messages the AMQP codec cannot read
//! as it stands, published to the real RabbitMQ on this machine.
//!
//! AMQP short strings are octets, and the broker delivers whatever a
//! publisher sent. The tests publish with lapin (which writes only UTF-8)
//! through a proxy of the tests' own that rewrites marker octets into ones
//! that are not UTF-8 on their way to the broker: a routing key, a
//! `message-id` and an `app-id`, a header's name. Each such message sits
//! in the middle of its queue, with a clean queue after it: the messages
//! before it must be sent once, it must be forwarded by the documented
//! rule (its octets as `Binary` attributes, FIFO ids hashed from them), and
//! everything after it drained, in one poll, with nothing sent twice. Also
//! a content header larger than the frame size the function agreed (the
//! broker never splits one), and header numbers SQS takes only as text.

use std::collections::BTreeMap;

use forwarder_e2e::fault_proxy::FaultProxy;
use forwarder_e2e::rabbitmq::{
    Broker, amqp_url_via, broker_addr, fake_forwarder, far, function, unique,
};
use forwarder_e2e::{attributes, client, connect, create_queue, drain};
use lapin::options::{BasicPublishOptions, ExchangeDeclareOptions, QueueBindOptions};
use lapin::types::{AMQPValue, DecimalValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, ExchangeKind};
use rabbitmq_to_sqs::drain::StopReason;
use sqs_forwarder::test_support::FakeSqs;
use sqs_forwarder::{AttributeValue, Config};

/// Latin-1 text: not UTF-8. Each marker is as long as its replacement.
const KEY_MARK: &[u8] = b"KEY@@@@@1";
const KEY_RAW: &[u8] = b"key-\xe9t\xe9!!";
const ID_MARK: &[u8] = b"ID@@@@@@2";
const ID_RAW: &[u8] = b"id-\xff\xfe--42";
const APP_MARK: &[u8] = b"APP@@@@@3";
const APP_RAW: &[u8] = b"app-caf\xe9!";
const HDR_MARK: &[u8] = b"HDR@@@@@4";
const HDR_RAW: &[u8] = b"hdr-\xc3(\xa0!!";

fn text(b: &[u8]) -> ShortString {
    ShortString::from(std::str::from_utf8(b).expect("a marker is ASCII"))
}

/// A queue bound to a fanout exchange (so any routing key reaches it) and a
/// second queue, published to through a rewriting proxy.
struct Rig {
    broker: Broker,
    _proxy: FaultProxy,
    exchange: String,
    first: String,
    second: String,
}

impl Rig {
    async fn new(tag: &str) -> Rig {
        let proxy = FaultProxy::start(broker_addr()).await;
        for (mark, raw) in [
            (KEY_MARK, KEY_RAW),
            (ID_MARK, ID_RAW),
            (APP_MARK, APP_RAW),
            (HDR_MARK, HDR_RAW),
        ] {
            proxy.rewrite(mark, raw);
        }
        let mut broker = Broker::at(&amqp_url_via(proxy.addr, "")).await;
        let first = broker.queue(&format!("rmq-bad-{tag}-1"), true).await;
        let second = broker.queue(&format!("rmq-bad-{tag}-2"), true).await;
        let exchange = unique(&format!("rmq-bad-{tag}-x"));
        broker
            .ch
            .exchange_declare(
                exchange.as_str().into(),
                ExchangeKind::Fanout,
                ExchangeDeclareOptions {
                    auto_delete: true,
                    ..ExchangeDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .expect("declare the exchange");
        broker
            .ch
            .queue_bind(
                first.as_str().into(),
                exchange.as_str().into(),
                "".into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("bind");
        Rig {
            broker,
            _proxy: proxy,
            exchange,
            first,
            second,
        }
    }

    async fn publish(&self, routing_key: &ShortString, body: &str, props: BasicProperties) {
        self.broker
            .ch
            .basic_publish(
                self.exchange.as_str().into(),
                routing_key.clone(),
                BasicPublishOptions::default(),
                body.as_bytes(),
                props,
            )
            .await
            .expect("publish")
            .await
            .expect("confirm");
    }
}

fn id(i: &str) -> BasicProperties {
    BasicProperties::default().with_message_id(ShortString::from(format!("m-{i}")))
}

fn binary(v: Option<&AttributeValue>) -> Option<Vec<u8>> {
    match v {
        Some(AttributeValue::Binary(b)) => Some(b.clone()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn short_strings_that_are_not_utf8_never_stall_a_queue() {
    let rig = Rig::new("utf8").await;
    let key = ShortString::from("k");
    rig.publish(&key, "clean-1", id("1")).await;
    rig.publish(&text(KEY_MARK), "bad-routing-key", id("2"))
        .await;
    rig.publish(&key, "clean-3", id("3")).await;
    let props = BasicProperties::default()
        .with_message_id(text(ID_MARK))
        .with_app_id(text(APP_MARK));
    rig.publish(&key, "bad-properties", props).await;
    let mut headers = FieldTable::default();
    headers.insert(text(HDR_MARK), AMQPValue::LongString(LongString::from("v")));
    headers.insert(
        "tenant".into(),
        AMQPValue::LongString(LongString::from("acme")),
    );
    rig.publish(&key, "bad-header-name", id("5").with_headers(headers))
        .await;
    rig.publish(&key, "clean-6", id("6")).await;
    rig.broker.publish_text(&rig.second, "second-1").await;
    rig.broker.publish_text(&rig.second, "second-2").await;

    let fake = FakeSqs::new();
    let queues = format!("{},{}", rig.first, rig.second);
    let url = forwarder_e2e::rabbitmq::amqp_url();
    let f = function(
        &[
            ("RABBITMQ_URL", &url),
            ("RABBITMQ_QUEUES", &queues),
            ("PROPERTY_ATTRIBUTES", "routing-key,message-id,app-id"),
            ("DEDUPLICATION_ID_FROM", "message-id"),
        ],
        fake_forwarder(fake.clone(), true),
    );
    let report = f.poll_until(far(), None).await.expect("no broker error");
    let counts: Vec<(u64, u64, StopReason)> = report
        .queues
        .iter()
        .map(|q| (q.received, q.sent, q.stop))
        .collect();
    assert_eq!(
        counts,
        [(6, 6, StopReason::Empty), (2, 2, StopReason::Empty)],
        "{report:?}"
    );

    // Every message once, in order per queue.
    let bodies = fake.accepted_bodies();
    assert_eq!(
        bodies,
        [
            "clean-1",
            "bad-routing-key",
            "clean-3",
            "bad-properties",
            "bad-header-name",
            "clean-6",
            "second-1",
            "second-2"
        ],
        "each once, in order"
    );
    let seen: BTreeMap<String, _> = fake
        .accepted()
        .into_iter()
        .map(|s| (s.body.clone(), s))
        .collect();
    let attr = |body: &str, name: &str| {
        seen[body]
            .attributes
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.value.clone())
    };
    // The routing key's octets as a Binary attribute, the group id hashed
    // from them.
    assert_eq!(
        binary(attr("bad-routing-key", "amqp.routing-key").as_ref()),
        Some(KEY_RAW.to_vec())
    );
    assert_eq!(
        seen["bad-routing-key"].group_id.as_deref(),
        Some(rabbitmq_to_sqs::fifo_id::sqs_id_of_octets(KEY_RAW).as_str())
    );
    assert_eq!(seen["clean-1"].group_id.as_deref(), Some("k"));
    // The properties' octets likewise; the deduplication id from the
    // message id's octets.
    assert_eq!(
        binary(attr("bad-properties", "amqp.message-id").as_ref()),
        Some(ID_RAW.to_vec())
    );
    assert_eq!(
        binary(attr("bad-properties", "amqp.app-id").as_ref()),
        Some(APP_RAW.to_vec())
    );
    assert_eq!(
        seen["bad-properties"].deduplication_id.as_deref(),
        Some(rabbitmq_to_sqs::fifo_id::sqs_id_of_octets(ID_RAW).as_str())
    );
    // A header name that is not UTF-8 is read with `?` for each octet that
    // is not part of UTF-8 text, in the folded headers; the other header
    // keeps its own attribute.
    let folded = match attr("bad-header-name", "amqp.headers") {
        Some(AttributeValue::String(s)) => s,
        other => panic!("amqp.headers: {other:?}"),
    };
    let folded: serde_json::Value = serde_json::from_str(&folded).expect("JSON");
    assert_eq!(folded["hdr-?(?!!"], "v", "{folded}");
    assert_eq!(
        attr("bad-header-name", "tenant"),
        Some(AttributeValue::String("acme".into()))
    );

    // Nothing left, and nothing sent again.
    let again = f.poll_until(far(), None).await.expect("poll");
    assert_eq!(again.received(), 0, "{again:?}");
    assert_eq!(fake.accepted().len(), 8);
    rig.broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_content_header_larger_than_the_agreed_frame_size_is_read() {
    let mut broker = Broker::new().await;
    let first = broker.queue("rmq-big-header-1", true).await;
    let second = broker.queue("rmq-big-header-2", true).await;
    broker.publish_text(&first, "before").await;
    // About 24 KB of headers: one content header frame of that size, which
    // the broker sends whole whatever frame size the function agreed.
    let mut headers = FieldTable::default();
    for i in 0..48 {
        headers.insert(
            ShortString::from(format!("h{i:02}")),
            AMQPValue::LongString(LongString::from("x".repeat(500))),
        );
    }
    broker
        .publish(
            &first,
            b"big-header",
            BasicProperties::default().with_headers(headers),
        )
        .await;
    broker.publish_text(&first, "after").await;
    broker.publish_text(&second, "second").await;

    let fake = FakeSqs::new();
    let queues = format!("{first},{second}");
    // The function asks for frames of 4 KB.
    let url = format!("{}?frame_max=4096", forwarder_e2e::rabbitmq::amqp_url());
    let f = function(
        &[("RABBITMQ_URL", &url), ("RABBITMQ_QUEUES", &queues)],
        fake_forwarder(fake.clone(), false),
    );
    let report = f.poll_until(far(), None).await.expect("no broker error");
    assert_eq!(report.sent(), 4, "{report:?}");
    assert_eq!(
        fake.accepted_bodies(),
        ["before", "big-header", "after", "second"]
    );
    // Its headers, 24 KB, do not all fit an SQS message's ten attributes:
    // the rest is folded, as any message's.
    let big = fake
        .accepted()
        .into_iter()
        .find(|s| s.body == "big-header")
        .expect("sent");
    assert!(big.attributes.iter().any(|a| a.name == "amqp.headers"));
    broker.cleanup().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn header_numbers_sqs_refuses_as_numbers_reach_sqs_as_text() {
    let mut broker = Broker::new().await;
    let queue = broker.queue("rmq-numbers", true).await;
    let sqs = client();
    let url = create_queue(&sqs, "rmq-numbers", &[]).await;
    let mut headers = FieldTable::default();
    headers.insert("big".into(), AMQPValue::Double(1e200));
    headers.insert("tiny".into(), AMQPValue::Double(5e-324));
    headers.insert(
        "scaled".into(),
        AMQPValue::DecimalValue(DecimalValue {
            scale: 200,
            value: 123,
        }),
    );
    headers.insert("fine".into(), AMQPValue::Double(2.5));
    broker
        .publish(
            &queue,
            b"numbers",
            BasicProperties::default().with_headers(headers),
        )
        .await;
    let config = Config::from_lookup(|k| (k == "QUEUE_URL").then(|| url.clone())).expect("config");
    let forwarder = connect(&config, sqs_forwarder::GroupIds::FromSource).await;
    let f = function(
        &[
            ("RABBITMQ_URL", &forwarder_e2e::rabbitmq::amqp_url()),
            ("RABBITMQ_QUEUES", &queue),
        ],
        forwarder,
    );
    let report = f.poll_until(far(), None).await.expect("poll");
    assert_eq!((report.received(), report.sent()), (1, 1), "{report:?}");
    assert_eq!(broker.ready(&format!("{queue}.dlq")).await, 0);
    let got = drain(&sqs, &url, 1).await;
    let a = attributes(&got[0]);
    for (name, value) in [("big", "1e200"), ("tiny", "5e-324"), ("scaled", "123e-200")] {
        assert_eq!(
            a.get(name).map(|(t, v)| (t.as_str(), v.as_slice())),
            Some(("String", value.as_bytes())),
            "{name}: {a:?}"
        );
    }
    assert_eq!(
        a.get("fine").map(|(t, v)| (t.as_str(), v.as_slice())),
        Some(("Number", &b"2.5"[..]))
    );
    broker.cleanup().await;
}
