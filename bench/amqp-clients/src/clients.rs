//! The same drain with each client; the queue is filled with lapin.
//!
//! The drain's loop is [`drain`], once for all three; each client gives it
//! a [`Consumer`].

use futures_util::{FutureExt, StreamExt};

use crate::{Drained, LINGER, Result, cpu, raw};

/// A connection to the broker at `addr` with lapin (guest/guest, vhost `/`).
async fn lapin_connect(addr: &str) -> Result<lapin::Connection> {
    let url = format!("amqp://guest:guest@{addr}/%2f");
    Ok(lapin::Connection::connect(&url, lapin::ConnectionProperties::default()).await?)
}

/// Purge `queue` (declared if missing) and publish `n` bodies of `size` bytes,
/// confirmed.
pub async fn fill(addr: &str, queue: &str, n: usize, size: usize) -> Result<()> {
    use lapin::BasicProperties;
    use lapin::options::{
        BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions, QueuePurgeOptions,
    };
    use lapin::types::FieldTable;
    let conn = lapin_connect(addr).await?;
    let ch = conn.create_channel().await?;
    ch.queue_declare(
        queue.into(),
        QueueDeclareOptions::default(),
        FieldTable::default(),
    )
    .await?;
    ch.queue_purge(queue.into(), QueuePurgeOptions::default())
        .await?;
    ch.confirm_select(ConfirmSelectOptions::default()).await?;
    let body = vec![b'x'; size];
    for _ in 0..n {
        ch.basic_publish(
            "".into(),
            queue.into(),
            BasicPublishOptions::default(),
            &body,
            BasicProperties::default(),
        )
        .await?;
    }
    ch.wait_for_confirms().await?;
    conn.close(200, "OK".into()).await?;
    Ok(())
}

/// Delete `queue`.
pub async fn delete(addr: &str, queue: &str) -> Result<()> {
    use lapin::options::QueueDeleteOptions;
    let conn = lapin_connect(addr).await?;
    let ch = conn.create_channel().await?;
    ch.queue_delete(queue.into(), QueueDeleteOptions::default())
        .await?;
    conn.close(200, "OK".into()).await?;
    Ok(())
}

/// One client's consumer, as [`drain`] uses it.
trait Consumer {
    type Delivery;
    /// The next delivery. Waiting (`wait`), None when deliveries have
    /// ended; not waiting, None unless one has already been received.
    async fn next(&mut self, wait: bool) -> Result<Option<Self::Delivery>>;
    /// A delivery's tag (None if the client gave it none) and body length.
    fn tag_and_len(delivery: &Self::Delivery) -> (Option<u64>, usize);
    /// `basic.ack` with `multiple` up to `tag`.
    async fn ack(&mut self, tag: u64) -> Result<()>;
}

/// Take `n` deliveries in the function's pattern: each batch the first
/// delivery, then those already received, waiting up to [`LINGER`] for each
/// further one, at most `prefetch`; one ack for the batch. CPU is left to
/// the caller.
async fn drain<C: Consumer>(c: &mut C, n: usize, prefetch: u16) -> Result<Drained> {
    let mut d = Drained {
        cpu_us: 0.0,
        batches: 0,
        taken: 0,
        bytes: 0,
    };
    while d.taken < n {
        let Some(first) = c.next(true).await? else {
            break;
        };
        let mut batch = vec![first];
        while batch.len() < usize::from(prefetch) && d.taken + batch.len() < n {
            let next = match c.next(false).await? {
                Some(delivery) => Some(delivery),
                None => tokio::time::timeout(LINGER, c.next(true))
                    .await
                    .unwrap_or(Ok(None))?,
            };
            let Some(delivery) = next else { break };
            batch.push(delivery);
        }
        d.taken += batch.len();
        d.batches += 1;
        d.bytes += batch.iter().map(|b| C::tag_and_len(b).1).sum::<usize>();
        if let Some(tag) = batch.last().and_then(|b| C::tag_and_len(b).0) {
            c.ack(tag).await?;
        }
    }
    Ok(d)
}

/// lapin 4: its I/O on a thread of its own, deliveries through its consumer stream.
struct Lapin {
    channel: lapin::Channel,
    consumer: lapin::Consumer,
}

impl Consumer for Lapin {
    type Delivery = lapin::message::Delivery;
    async fn next(&mut self, wait: bool) -> Result<Option<Self::Delivery>> {
        let next = if wait {
            self.consumer.next().await
        } else {
            self.consumer.next().now_or_never().flatten()
        };
        Ok(next.transpose()?)
    }
    fn tag_and_len(delivery: &Self::Delivery) -> (Option<u64>, usize) {
        (Some(delivery.delivery_tag), delivery.data.len())
    }
    async fn ack(&mut self, tag: u64) -> Result<()> {
        let multiple = lapin::options::BasicAckOptions { multiple: true };
        Ok(self.channel.basic_ack(tag, multiple).await?)
    }
}

pub async fn drain_lapin(addr: &str, queue: &str, n: usize, prefetch: u16) -> Result<Drained> {
    use lapin::options::{BasicConsumeOptions, BasicQosOptions};
    use lapin::types::FieldTable;
    let conn = lapin_connect(addr).await?;
    let channel = conn.create_channel().await?;
    channel
        .basic_qos(prefetch, BasicQosOptions::default())
        .await?;
    let t0 = cpu().0;
    let consumer = channel
        .basic_consume(
            queue.into(),
            "amqp-clients".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let mut c = Lapin { channel, consumer };
    let mut d = drain(&mut c, n, prefetch).await?;
    d.cpu_us = cpu().0 - t0;
    c.channel.close(200, "OK".into()).await?;
    conn.close(200, "OK".into()).await?;
    Ok(d)
}

/// amqprs 2: tokio tasks (reader, writer, channel dispatcher) on the caller's
/// runtime, deliveries through an unbounded channel.
struct Amqprs {
    channel: amqprs::channel::Channel,
    rx: tokio::sync::mpsc::UnboundedReceiver<amqprs::channel::ConsumerMessage>,
}

impl Consumer for Amqprs {
    type Delivery = amqprs::channel::ConsumerMessage;
    async fn next(&mut self, wait: bool) -> Result<Option<Self::Delivery>> {
        if wait {
            Ok(self.rx.recv().await)
        } else {
            Ok(self.rx.try_recv().ok())
        }
    }
    fn tag_and_len(delivery: &Self::Delivery) -> (Option<u64>, usize) {
        let tag = delivery.deliver.as_ref().map(|m| m.delivery_tag());
        (tag, delivery.content.as_ref().map_or(0, Vec::len))
    }
    async fn ack(&mut self, tag: u64) -> Result<()> {
        let multiple = amqprs::channel::BasicAckArguments::new(tag, true);
        Ok(self.channel.basic_ack(multiple).await?)
    }
}

pub async fn drain_amqprs(addr: &str, queue: &str, n: usize, prefetch: u16) -> Result<Drained> {
    use amqprs::channel::{BasicConsumeArguments, BasicQosArguments};
    use amqprs::connection::{Connection, OpenConnectionArguments};
    let (host, port) = addr.rsplit_once(':').ok_or("AMQP_ADDR: host:port")?;
    let conn = Connection::open(&OpenConnectionArguments::new(
        host,
        port.parse()?,
        "guest",
        "guest",
    ))
    .await?;
    let channel = conn.open_channel(None).await?;
    channel
        .basic_qos(BasicQosArguments::new(0, prefetch, false))
        .await?;
    let t0 = cpu().0;
    let (_tag, rx) = channel
        .basic_consume_rx(BasicConsumeArguments::new(queue, "amqp-clients"))
        .await?;
    let mut c = Amqprs { channel, rx };
    let mut d = drain(&mut c, n, prefetch).await?;
    d.cpu_us = cpu().0 - t0;
    c.channel.close().await?;
    conn.close().await?;
    Ok(d)
}

/// amq-protocol's codec over a tokio socket, read and written by the
/// caller's own task: no thread, no task, no channel (raw.rs).
impl Consumer for raw::Conn {
    type Delivery = raw::Delivery;
    async fn next(&mut self, wait: bool) -> Result<Option<Self::Delivery>> {
        self.delivery(wait).await
    }
    fn tag_and_len((tag, body): &Self::Delivery) -> (Option<u64>, usize) {
        (Some(*tag), body.len())
    }
    async fn ack(&mut self, tag: u64) -> Result<()> {
        raw::Conn::ack(self, tag).await
    }
}

pub async fn drain_raw(addr: &str, queue: &str, n: usize, prefetch: u16) -> Result<Drained> {
    let mut c = raw::Conn::open(addr, "guest", "guest").await?;
    let t0 = cpu().0;
    c.consume(queue, prefetch).await?;
    let mut d = drain(&mut c, n, prefetch).await?;
    d.cpu_us = cpu().0 - t0;
    c.close().await?;
    Ok(d)
}
