//! Frames the codec refuses, read tolerantly: short strings that are not
//! UTF-8 anywhere a delivery has one, and content headers whose properties
//! cannot be read at all.

use amq_protocol::frame::{AMQPFrame, parse_frame};
use amq_protocol::protocol::{AMQPClass, basic};

use super::*;
use crate::amqp::layout::tests::{all_properties, deliver, get_ok, header};

/// `frame` with every occurrence of `marker` (ASCII, as the codec wrote
/// it) overwritten by `with`, of the same length.
fn replace(mut frame: Vec<u8>, marker: &[u8], with: &[u8]) -> Vec<u8> {
    assert_eq!(marker.len(), with.len());
    let mut at = 0;
    let mut n = 0;
    while let Some(i) = frame[at..].windows(marker.len()).position(|w| w == marker) {
        frame[at + i..at + i + marker.len()].copy_from_slice(with);
        at += i + marker.len();
        n += 1;
    }
    assert!(n > 0, "marker not found");
    frame
}

const LATIN1: &[u8] = b"caf\xe9-\xff!"; // "café-ÿ!" in Latin-1: not UTF-8

#[test]
fn a_routing_key_that_is_not_utf8_reads_with_question_marks_and_keeps_its_octets() {
    for frame in [deliver("ex", "ZZZZZZZ"), get_ok("ex", "ZZZZZZZ")] {
        let frame = replace(frame, b"ZZZZZZZ", LATIN1);
        assert!(
            parse_frame(frame.as_slice()).is_err(),
            "the codec refuses it"
        );
        let (parsed, notes) = mend(&frame).expect("mended");
        let key = match parsed {
            AMQPFrame::Method(3, AMQPClass::Basic(basic::AMQPMethod::Deliver(d))) => {
                assert_eq!(d.delivery_tag, 42);
                d.routing_key
            }
            AMQPFrame::Method(3, AMQPClass::Basic(basic::AMQPMethod::GetOk(g))) => {
                assert_eq!(g.delivery_tag, 7);
                g.routing_key
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(key.as_str(), "caf?-?!");
        assert_eq!(
            notes.raw,
            [RawText {
                field: TextField::RoutingKey,
                bytes: LATIN1.to_vec()
            }]
        );
        assert_eq!(notes.fault, None);
    }
}

#[test]
fn an_exchange_and_every_short_property_and_header_name_are_mended() {
    let frame = replace(deliver("ZZZZZZZ", "key"), b"ZZZZZZZ", LATIN1);
    let (_, notes) = mend(&frame).expect("mended");
    assert_eq!(notes.raw[0].field, TextField::Exchange);

    let frame = replace(header(all_properties("ZZZZZZZ"), 3), b"ZZZZZZZ", LATIN1);
    assert!(parse_frame(frame.as_slice()).is_err());
    let (parsed, notes) = mend(&frame).expect("mended");
    let AMQPFrame::Header(3, h) = parsed else {
        panic!("{parsed:?}")
    };
    assert_eq!(h.body_size, 3);
    let p = &h.properties;
    for v in [
        p.content_type(),
        p.content_encoding(),
        p.correlation_id(),
        p.reply_to(),
        p.expiration(),
        p.message_id(),
        p.kind(),
        p.user_id(),
        p.app_id(),
        p.cluster_id(),
    ] {
        assert_eq!(v.as_ref().map(|s| s.as_str()), Some("caf?-?!"));
    }
    let headers = p.headers().as_ref().expect("headers kept");
    let (name, inner) = headers.into_iter().next().expect("one header");
    assert_eq!(name.as_str(), "caf?-?!");
    let amq_protocol::types::AMQPValue::FieldTable(inner) = inner else {
        panic!("{inner:?}")
    };
    assert_eq!(
        inner.into_iter().next().map(|(k, _)| k.as_str().to_owned()),
        Some("caf?-?!".to_owned()),
        "a nested table's names too"
    );
    // Ten properties and two header names, each with its octets.
    assert_eq!(notes.raw.len(), 12);
    assert!(notes.raw.iter().all(|r| r.bytes == LATIN1));
    assert_eq!(
        notes
            .raw
            .iter()
            .filter(|r| r.field == TextField::HeaderName)
            .count(),
        2
    );
    assert_eq!(notes.fault, None);
}

#[test]
fn a_header_whose_headers_cannot_be_read_is_read_without_them_and_says_so() {
    // A header value of a type no codec knows ('?').
    let frame = replace(header(all_properties("ok"), 1), b"\x02okF", b"\x02ok?");
    assert!(parse_frame(frame.as_slice()).is_err());
    let (parsed, notes) = mend(&frame).expect("mended");
    let AMQPFrame::Header(_, h) = parsed else {
        panic!()
    };
    assert_eq!(h.properties.headers(), &None);
    assert_eq!(
        h.properties.message_id().as_ref().map(|s| s.as_str()),
        Some("ok")
    );
    assert_eq!(notes.fault.as_deref(), Some("its headers cannot be read"));
}

#[test]
fn a_header_whose_properties_cannot_be_read_keeps_only_its_size() {
    let mut frame = header(all_properties("ok"), 77);
    // The content type says it is longer than the frame.
    let content_type_at = 7 + 12 + 2;
    frame[content_type_at] = 250;
    assert!(parse_frame(frame.as_slice()).is_err());
    let (parsed, notes) = mend(&frame).expect("mended");
    let AMQPFrame::Header(3, h) = parsed else {
        panic!()
    };
    assert_eq!(h.body_size, 77);
    assert_eq!(h.properties, Default::default());
    assert_eq!(
        notes.fault.as_deref(),
        Some("its properties cannot be read")
    );
}

#[test]
fn other_frames_are_not_mended() {
    let ok = amq_protocol::protocol::queue::DeclareOk {
        queue: "ZZZZZZZ".into(),
        message_count: 1,
        consumer_count: 0,
    };
    let frame = crate::amqp::wire::encode(
        &AMQPFrame::Method(
            1,
            AMQPClass::Queue(amq_protocol::protocol::queue::AMQPMethod::DeclareOk(ok)),
        ),
        Vec::new(),
    )
    .unwrap();
    let frame = replace(frame, b"ZZZZZZZ", LATIN1);
    assert_eq!(mend(&frame), None);
    assert_eq!(mend(&[]), None);
    // A delivery cut short: nothing to read it by.
    let mut short = replace(deliver("ex", "ZZZZZZZ"), b"ZZZZZZZ", LATIN1);
    short.truncate(20);
    assert_eq!(mend(&short), None);
}

#[test]
fn headers_nested_too_deep_and_not_utf8_are_left_out_and_the_rest_mended() {
    let props = all_properties("ZZZZZZZ");
    let mut frame = header(props, 1);
    // Swap the headers table for one nested 100 deep.
    let table = crate::amqp::layout::headers_table(&frame).expect("headers");
    let deep = crate::amqp::nesting::nested(100);
    frame.splice(table.clone(), deep.iter().copied());
    let size = (frame.len() - 8) as u32;
    frame[3..7].copy_from_slice(&size.to_be_bytes());
    let frame = replace(frame, b"ZZZZZZZ", LATIN1);
    let (parsed, notes) = deep_headers(&frame).expect("too deep");
    let AMQPFrame::Header(_, h) = parsed else {
        panic!()
    };
    assert_eq!(h.properties.headers(), &None);
    assert_eq!(
        h.properties.app_id().as_ref().map(|s| s.as_str()),
        Some("caf?-?!")
    );
    assert!(notes.fault.as_deref().unwrap_or("").contains("101 tables"));
    assert_eq!(notes.raw.len(), 10);
}
