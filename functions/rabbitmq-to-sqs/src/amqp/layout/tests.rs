//! The layout read off frames the codec itself wrote.

use amq_protocol::frame::{AMQPContentHeader, AMQPFrame, parse_frame};
use amq_protocol::protocol::{AMQPClass, BasicProperties, basic};
use amq_protocol::types::{AMQPValue, FieldTable, ShortString};

use super::*;
use crate::amqp::wire::encode;

pub(crate) fn deliver(exchange: &str, key: &str) -> Vec<u8> {
    let d = basic::Deliver {
        consumer_tag: "rabbitmq-to-sqs".into(),
        delivery_tag: 42,
        redelivered: true,
        exchange: exchange.into(),
        routing_key: key.into(),
    };
    encode(
        &AMQPFrame::Method(3, AMQPClass::Basic(basic::AMQPMethod::Deliver(d))),
        Vec::new(),
    )
    .expect("encodes")
}

pub(crate) fn get_ok(exchange: &str, key: &str) -> Vec<u8> {
    let g = basic::GetOk {
        delivery_tag: 7,
        redelivered: false,
        exchange: exchange.into(),
        routing_key: key.into(),
        message_count: 12,
    };
    encode(
        &AMQPFrame::Method(3, AMQPClass::Basic(basic::AMQPMethod::GetOk(g))),
        Vec::new(),
    )
    .expect("encodes")
}

/// Every property set, the short ones to `value`, with one header of
/// that name nested in a table.
pub(crate) fn all_properties(value: &str) -> BasicProperties {
    let s = || ShortString::from(value);
    let mut inner = FieldTable::default();
    inner.insert(s(), AMQPValue::Boolean(true));
    let mut headers = FieldTable::default();
    headers.insert(s(), AMQPValue::FieldTable(inner));
    BasicProperties::default()
        .with_content_type(s())
        .with_content_encoding(s())
        .with_headers(headers)
        .with_delivery_mode(2)
        .with_priority(5)
        .with_correlation_id(s())
        .with_reply_to(s())
        .with_expiration(s())
        .with_message_id(s())
        .with_timestamp(1_700_000_000)
        .with_type(s())
        .with_user_id(s())
        .with_app_id(s())
        .with_cluster_id(s())
}

pub(crate) fn header(properties: BasicProperties, body_size: u64) -> Vec<u8> {
    let h = AMQPContentHeader {
        class_id: 60,
        body_size,
        properties,
    };
    encode(&AMQPFrame::Header(3, h), Vec::new()).expect("encodes")
}

fn texts(frame: &[u8], ranges: impl IntoIterator<Item = std::ops::Range<usize>>) -> Vec<&str> {
    ranges
        .into_iter()
        .map(|r| std::str::from_utf8(&frame[r]).expect("UTF-8"))
        .collect()
}

#[test]
fn the_short_strings_of_a_delivery_method_are_found() {
    let f = deliver("orders-x", "eu.created");
    let found = delivery_strings(&f).expect("a delivery");
    let fields: Vec<_> = found.iter().map(|(f, _)| *f).collect();
    assert_eq!(
        fields,
        [None, Some(TextField::Exchange), Some(TextField::RoutingKey)]
    );
    assert_eq!(
        texts(&f, found.into_iter().map(|(_, r)| r)),
        ["rabbitmq-to-sqs", "orders-x", "eu.created"]
    );

    let f = get_ok("", "k");
    let found = delivery_strings(&f).expect("a get-ok");
    assert_eq!(texts(&f, found.into_iter().map(|(_, r)| r)), ["", "k"]);
}

#[test]
fn other_frames_and_short_ones_have_no_delivery_layout() {
    let ack = AMQPFrame::Method(
        1,
        AMQPClass::Basic(basic::AMQPMethod::Ack(basic::Ack {
            delivery_tag: 1,
            multiple: false,
        })),
    );
    assert_eq!(delivery_strings(&encode(&ack, Vec::new()).unwrap()), None);
    let mut f = deliver("x", "key");
    f.truncate(f.len() - 4);
    assert_eq!(delivery_strings(&f), None);
    assert_eq!(delivery_strings(&[]), None);
    assert_eq!(header_layout(&deliver("x", "y")), None);
}

#[test]
fn every_short_property_and_the_headers_are_found_in_flag_order() {
    let f = header(all_properties("v-1"), 99);
    let found = header_layout(&f).expect("a content header");
    let fields: Vec<_> = found.strings.iter().map(|(f, _)| *f).collect();
    assert_eq!(
        fields,
        [
            TextField::ContentType,
            TextField::ContentEncoding,
            TextField::CorrelationId,
            TextField::ReplyTo,
            TextField::Expiration,
            TextField::MessageId,
            TextField::Type,
            TextField::UserId,
            TextField::AppId,
            TextField::ClusterId,
        ]
    );
    assert!(
        texts(&f, found.strings.iter().map(|(_, r)| r.clone()))
            .iter()
            .all(|t| *t == "v-1")
    );
    let table = found.headers.expect("headers");
    assert_eq!(Some(table.clone()), headers_table(&f));
    assert_eq!(u32_at(&f, table.start), Some(table.len() - 4));
    assert_eq!(class_and_body_size(&f), Some((60, 99)));
}

#[test]
fn a_header_without_its_headers_parses_to_the_same_properties_less_them() {
    let props = all_properties("v");
    let stripped = without_headers(&header(props.clone(), 5)).expect("it has headers");
    let (rest, parsed) = parse_frame(stripped.as_slice()).expect("parses");
    assert!(rest.is_empty());
    let AMQPFrame::Header(3, h) = parsed else {
        panic!("a header: {parsed:?}")
    };
    assert_eq!(h.body_size, 5);
    let mut expected = props;
    expected = BasicProperties::default()
        .with_content_type(expected.content_type().clone().unwrap())
        .with_content_encoding(expected.content_encoding().clone().unwrap())
        .with_delivery_mode(2)
        .with_priority(5)
        .with_correlation_id(expected.correlation_id().clone().unwrap())
        .with_reply_to(expected.reply_to().clone().unwrap())
        .with_expiration(expected.expiration().clone().unwrap())
        .with_message_id(expected.message_id().clone().unwrap())
        .with_timestamp(1_700_000_000)
        .with_type(expected.kind().clone().unwrap())
        .with_user_id(expected.user_id().clone().unwrap())
        .with_app_id(expected.app_id().clone().unwrap())
        .with_cluster_id(expected.cluster_id().clone().unwrap());
    assert_eq!(h.properties, expected);
    assert_eq!(
        without_headers(&header(BasicProperties::default(), 1)),
        None,
        "no headers to leave out"
    );
}

#[test]
fn a_body_frame_is_taken_only_when_it_ends_as_a_frame_must() {
    let f = encode(&AMQPFrame::Body(9, b"hello".to_vec()), Vec::new()).unwrap();
    assert_eq!(body(&f), Some(&b"hello"[..]));
    assert_eq!(channel(&f), Some(9));
    let mut bad = f.clone();
    *bad.last_mut().unwrap() = 0;
    assert_eq!(body(&bad), None);
    assert_eq!(body(&deliver("a", "b")), None);
}
