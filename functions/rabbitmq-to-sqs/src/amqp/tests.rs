//! The client against the real broker (`RABBITMQ_TEST_URL`, default
//! amqp://guest:guest@127.0.0.1:5672/%2f): what the drain relies on, and the
//! broker's refusals and closes as errors, never panics. Messages are
//! published with lapin. Each test uses queues of its own.

use std::time::Duration;

use amq_protocol::protocol::basic;
use amq_protocol::types::{AMQPValue, FieldTable, ShortString};
use amq_protocol::uri::AMQPUri;
use lapin::options::{BasicPublishOptions, QueueDeclareOptions, QueueDeleteOptions};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use super::*;

pub(crate) fn url() -> String {
    std::env::var("RABBITMQ_TEST_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

fn uri(query: &str) -> AMQPUri {
    let mut u = url();
    if !query.is_empty() {
        u.push(if u.contains('?') { '&' } else { '?' });
        u.push_str(query);
    }
    u.parse().expect("RABBITMQ_TEST_URL parses")
}

fn unique(prefix: &str) -> String {
    use std::sync::atomic::AtomicU64;
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A queue of its own with `messages` published to it, and the lapin
/// channel (and its connection) that published them.
async fn queue_with(
    prefix: &str,
    messages: &[(Vec<u8>, Properties)],
) -> (String, lapin::Channel, lapin::Connection) {
    let conn = lapin::Connection::connect(&url(), lapin::ConnectionProperties::default())
        .await
        .expect("lapin connects");
    let ch = conn.create_channel().await.expect("lapin channel");
    // With confirms, a publish awaited is a message the queue holds.
    ch.confirm_select(lapin::options::ConfirmSelectOptions::default())
        .await
        .expect("confirms");
    let q = unique(prefix);
    ch.queue_declare(
        q.as_str().into(),
        QueueDeclareOptions::default(),
        FieldTable::default(),
    )
    .await
    .expect("declare");
    for (body, props) in messages {
        ch.basic_publish(
            "".into(),
            q.as_str().into(),
            BasicPublishOptions::default(),
            body,
            props.clone(),
        )
        .await
        .expect("publish")
        .await
        .expect("published");
    }
    (q, ch, conn)
}

async fn delete(ch: &lapin::Channel, q: &str) {
    let _ = ch
        .queue_delete(q.into(), QueueDeleteOptions::default())
        .await;
}

fn plain(n: usize) -> Vec<(Vec<u8>, Properties)> {
    (0..n)
        .map(|i| (format!("m{i}").into_bytes(), Properties::default()))
        .collect()
}

#[tokio::test]
async fn a_message_larger_than_a_frame_arrives_whole_with_its_properties() {
    // 300 KB: three body frames at the broker's 128 KiB frame size.
    let body: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let mut headers = FieldTable::default();
    headers.insert("tenant".into(), AMQPValue::LongString("acme".into()));
    let props = Properties::default()
        .with_message_id(ShortString::from("id-1"))
        .with_content_type(ShortString::from("application/octet-stream"))
        .with_headers(headers);
    let (q, lapin_ch, _lapin) = queue_with("amqp-big", &[(body.clone(), props.clone())]).await;

    let conn = open(&uri(""), "amqp-tests").await.expect("connects");
    let ch = conn.create_channel().await.expect("channel");
    assert_eq!(ch.ready_count(&q).await.expect("declare"), 1);
    let d = ch
        .basic_get(&q, false)
        .await
        .expect("get")
        .expect("a message");
    assert_eq!(d.data.len(), body.len());
    assert!(d.data == body, "the body arrives whole and in order");
    assert_eq!(d.properties, props);
    assert_eq!(d.routing_key, q);
    assert_eq!(d.exchange, "");
    assert!(!d.redelivered);
    ch.basic_ack(d.delivery_tag, false).await.expect("ack");
    assert!(ch.basic_get(&q, false).await.expect("get").is_none());
    ch.close().await.expect("close");
    conn.close().await.expect("close");
    assert!(!conn.connected());
    delete(&lapin_ch, &q).await;
}

#[tokio::test]
async fn prefetch_bounds_the_deliveries_and_a_multiple_ack_releases_the_next() {
    let (q, lapin_ch, _lapin) = queue_with("amqp-qos", &plain(20)).await;
    let conn = open(&uri(""), "amqp-tests").await.expect("connects");
    let ch = conn.create_channel().await.expect("channel");
    ch.basic_qos(5).await.expect("qos");
    let mut consumer = ch
        .basic_consume(&q, "t", usize::MAX)
        .await
        .expect("consume");
    let mut tags = Vec::new();
    for _ in 0..5 {
        let d = tokio::time::timeout(Duration::from_secs(5), consumer.next())
            .await
            .expect("a delivery in time")
            .expect("a delivery");
        tags.push(d.delivery_tag);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        consumer.try_next().is_none(),
        "no sixth delivery under prefetch 5"
    );
    ch.basic_ack(tags[4], true).await.expect("ack multiple");
    let d = tokio::time::timeout(Duration::from_secs(5), consumer.next())
        .await
        .expect("the next one after the ack")
        .expect("a delivery");
    assert_eq!(d.data, b"m5");
    // Closing the channel gives the unsettled ones back: 15 left.
    ch.close().await.expect("close");
    let ch = conn.create_channel().await.expect("channel");
    assert_eq!(ch.ready_count(&q).await.expect("declare"), 15);
    conn.close().await.expect("close");
    delete(&lapin_ch, &q).await;
}

#[tokio::test]
async fn nack_requeues_or_dead_letters_and_reject_drops() {
    let (q, lapin_ch, _lapin) = queue_with("amqp-nack", &plain(3)).await;
    let conn = open(&uri(""), "amqp-tests").await.expect("connects");
    let ch = conn.create_channel().await.expect("channel");
    let a = ch.basic_get(&q, false).await.expect("get").expect("m0");
    let b = ch.basic_get(&q, false).await.expect("get").expect("m1");
    let c = ch.basic_get(&q, false).await.expect("get").expect("m2");
    ch.basic_nack(a.delivery_tag, false, true)
        .await
        .expect("requeue");
    ch.basic_reject(b.delivery_tag, false)
        .await
        .expect("reject");
    ch.basic_nack(c.delivery_tag, false, false)
        .await
        .expect("nack");
    let again = ch
        .basic_get(&q, true)
        .await
        .expect("get")
        .expect("m0 again");
    assert_eq!(again.data, b"m0");
    assert!(again.redelivered);
    assert!(ch.basic_get(&q, true).await.expect("get").is_none());
    conn.close().await.expect("close");
    delete(&lapin_ch, &q).await;
}

#[tokio::test]
async fn a_missing_queue_closes_the_channel_not_the_connection() {
    let conn = open(&uri(""), "amqp-tests").await.expect("connects");
    let ch = conn.create_channel().await.expect("channel");
    let missing = unique("amqp-missing");
    let e = ch.ready_count(&missing).await.expect_err("no such queue");
    assert!(e.to_string().contains("404 NOT_FOUND"), "{e}");
    assert!(e.to_string().contains(&missing), "{e}");
    assert!(!ch.connected());
    assert!(conn.connected());
    assert_eq!(ch.error(), e);
    // Every later call on that channel says why it is closed.
    let again = ch.basic_qos(1).await.expect_err("closed");
    assert_eq!(again, e);
    let ch2 = conn.create_channel().await.expect("another channel");
    assert!(ch2.ready_count(&missing).await.is_err());
    conn.close().await.expect("close");
}

#[tokio::test]
async fn a_refused_login_is_told_apart_and_never_shows_the_password() {
    let mut u = uri("");
    u.authority.userinfo.password = "Not-The-Pw-7".into();
    let e = match open(&u, "amqp-tests").await {
        Ok(_) => panic!("a wrong password was accepted"),
        Err(e) => e,
    };
    assert!(e.is_access_refused(), "{e}");
    assert!(e.to_string().contains("403 ACCESS_REFUSED"), "{e}");
    assert!(!e.to_string().contains("Not-The-Pw-7"), "{e}");
}

#[tokio::test]
async fn a_vhost_the_broker_does_not_have_is_an_error() {
    let mut u = uri("");
    u.vhost = unique("no-such-vhost");
    let e = match open(&u, "amqp-tests").await {
        Ok(_) => panic!("opened a missing vhost"),
        Err(e) => e,
    };
    assert!(e.to_string().contains("530"), "{e}");
    assert!(
        e.is_access_refused(),
        "530 NOT_ALLOWED is access refused: {e}"
    );
}

#[tokio::test]
async fn a_deleted_queue_cancels_the_consumer_and_the_channel_stays_open() {
    let (q, lapin_ch, _lapin) = queue_with("amqp-cancel", &[]).await;
    let conn = open(&uri(""), "amqp-tests").await.expect("connects");
    let ch = conn.create_channel().await.expect("channel");
    let mut consumer = ch
        .basic_consume(&q, "t", usize::MAX)
        .await
        .expect("consume");
    delete(&lapin_ch, &q).await;
    let end = tokio::time::timeout(Duration::from_secs(5), consumer.next())
        .await
        .expect("the consumer ends in time");
    assert!(end.is_none());
    assert!(ch.connected(), "a cancel leaves the channel open");
    ch.close().await.expect("close");
    conn.close().await.expect("close");
}

#[tokio::test]
async fn heartbeats_keep_an_idle_connection_open() {
    // A 1 s heartbeat: the broker drops a client silent for about two
    // intervals. The reader sends them while nobody uses the connection.
    let conn = open(&uri("heartbeat=1"), "amqp-tests")
        .await
        .expect("connects");
    let ch = conn.create_channel().await.expect("channel");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(conn.connected());
    let (q, lapin_ch, _lapin) = queue_with("amqp-beat", &plain(1)).await;
    assert_eq!(ch.ready_count(&q).await.expect("still usable"), 1);
    conn.close().await.expect("close");
    delete(&lapin_ch, &q).await;
}

#[tokio::test]
async fn without_heartbeats_the_broker_drops_the_connection() {
    // The control for the test above: the same handshake, then silence.
    let u = uri("heartbeat=1");
    let tcp = tokio::net::TcpStream::connect((u.authority.host.as_str(), u.authority.port))
        .await
        .expect("tcp");
    let mut io: Stream = Box::new(tcp);
    let mut buf = wire::ReadBuf::new();
    let (tune, _) = open::handshake(&mut io, &mut buf, &u, "amqp-tests")
        .await
        .expect("handshake");
    assert_eq!(tune.heartbeat, 1);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match buf.fill(&mut io).await {
                Ok(0) | Err(_) => return,
                Ok(_) => while let Ok(Some(_)) = buf.next_frame() {},
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the broker kept a silent connection open");
}

#[tokio::test]
async fn closing_twice_or_using_a_closed_connection_is_an_error_not_a_panic() {
    let conn = open(&uri(""), "amqp-tests").await.expect("connects");
    let ch = conn.create_channel().await.expect("channel");
    conn.close().await.expect("close");
    assert!(conn.close().await.is_err());
    assert!(ch.basic_ack(1, false).await.is_err());
    assert!(conn.create_channel().await.is_err());
    assert!(!ch.connected());
}

/// A server on 127.0.0.1 that writes `reply` to the first connection and
/// closes it.
async fn server(reply: &'static [u8]) -> AMQPUri {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        if let Ok((mut s, _)) = listener.accept().await {
            let _ = s.write_all(reply).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    format!("amqp://guest:guest@127.0.0.1:{port}/%2f")
        .parse()
        .expect("uri")
}

#[tokio::test]
async fn what_a_server_that_is_not_an_amqp_broker_sends_is_an_error() {
    const CLOSED: &[&str] = &[
        "closed the connection during the handshake",
        "the connection to the broker failed",
    ];
    let cases: [(&'static [u8], &[&str]); 4] = [
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", &["does not parse"]),
        (b"AMQP\x00\x01\x00\x00", &["speaks AMQP 1-0-0"]),
        (b"", CLOSED),
        // A frame declaring 4 GiB: refused at once, nothing buffered.
        (b"\x08\x00\x00\xff\xff\xff\xff", &["over the 131072 agreed"]),
    ];
    for (reply, expected) in cases {
        let e = match open(&server(reply).await, "amqp-tests").await {
            Ok(_) => panic!("{reply:?} opened a connection"),
            Err(e) => e,
        };
        assert!(
            expected.iter().any(|x| e.to_string().contains(x)),
            "{reply:?}: {e}"
        );
    }
}

#[test]
fn limits_negotiate_to_the_smaller_unless_one_side_sets_none() {
    use super::open::negotiate;
    assert_eq!(negotiate(30u16, 60), 30);
    assert_eq!(negotiate(0u16, 60), 60);
    assert_eq!(negotiate(30u16, 0), 30);
    assert_eq!(negotiate(0u16, 0), 0);
}

/// Publish `body` to `queue` on `ch` with hand-made frames: a content
/// header carrying `headers` (a field table's bytes, length first) and the
/// message id `id`, as a publisher whose headers no codec would write
/// (nested too deep for a recursive one) sends them.
pub(crate) async fn publish_raw(ch: &Channel, queue: &str, headers: &[u8], id: &str, body: &[u8]) {
    let publish = basic::Publish {
        exchange: "".into(),
        routing_key: queue.into(),
        mandatory: false,
        immediate: false,
    };
    let mut bytes = wire::encode(
        &AMQPFrame::Method(ch.id, AMQPClass::Basic(basic::AMQPMethod::Publish(publish))),
        Vec::new(),
    )
    .expect("encode");
    let mut payload = Vec::new();
    payload.extend_from_slice(&60u16.to_be_bytes()); // class: basic
    payload.extend_from_slice(&0u16.to_be_bytes()); // weight
    payload.extend_from_slice(&(body.len() as u64).to_be_bytes());
    payload.extend_from_slice(&(0x2000u16 | 0x0080).to_be_bytes()); // headers, message-id
    payload.extend_from_slice(headers);
    payload.push(id.len() as u8);
    payload.extend_from_slice(id.as_bytes());
    bytes.push(2);
    bytes.extend_from_slice(&ch.id.to_be_bytes());
    bytes.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    bytes.extend_from_slice(&payload);
    bytes.push(0xCE);
    bytes = wire::encode(&AMQPFrame::Body(ch.id, body.to_vec()), bytes).expect("encode");
    let mut w = ch.shared.writer.lock().await;
    w.io.write_all(&bytes).await.expect("write");
    w.io.flush().await.expect("flush");
}

/// Wait until `queue` holds `n` ready messages (a raw publish has no
/// confirm), for up to five seconds.
pub(crate) async fn wait_ready(ch: &Channel, queue: &str, n: u32) {
    for _ in 0..100 {
        if ch.ready_count(queue).await.expect("declare") == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{queue} never held {n} messages");
}

#[tokio::test]
async fn headers_nested_too_deep_to_parse_are_left_out_and_the_message_says_why() {
    // 20,000 levels, about 100 KB: parsed recursively, that would take
    // some 32 MB of stack and abort the process (this test's thread has 2).
    let (q, lapin_ch, _lapin) = queue_with("amqp-deep", &[]).await;
    let conn = open(&uri(""), "amqp-tests").await.expect("connects");
    let ch = conn.create_channel().await.expect("channel");
    publish_raw(&ch, &q, &nesting::nested(20_000), "deep-1", b"body one").await;
    publish_raw(&ch, &q, &nesting::nested(10), "shallow-2", b"body two").await;
    wait_ready(&ch, &q, 2).await;

    let deep = ch
        .basic_get(&q, false)
        .await
        .expect("get")
        .expect("the deep one");
    let why = deep.fault.as_deref().expect("a fault");
    assert!(why.contains("20001 tables or arrays deep"), "{why}");
    assert!(why.contains("more than the 64"), "{why}");
    assert_eq!(deep.properties.headers(), &None);
    assert_eq!(
        deep.properties.message_id().as_ref().map(|s| s.as_str()),
        Some("deep-1")
    );
    assert_eq!(deep.data, b"body one");

    let shallow = ch
        .basic_get(&q, false)
        .await
        .expect("get")
        .expect("the shallow one");
    assert_eq!(shallow.fault, None);
    assert!(shallow.properties.headers().is_some());
    assert_eq!(
        shallow.properties.message_id().as_ref().map(|s| s.as_str()),
        Some("shallow-2")
    );
    assert_eq!(shallow.data, b"body two");
    ch.basic_ack(shallow.delivery_tag, true)
        .await
        .expect("ack both");
    assert!(conn.connected());
    conn.close().await.expect("close");
    delete(&lapin_ch, &q).await;
}
