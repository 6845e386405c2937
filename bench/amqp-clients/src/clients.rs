//! The same drain with each client; the queue is filled with lapin.

use futures_util::{FutureExt, StreamExt};

use crate::{Drained, LINGER, Result, cpu, raw};

/// Purge `queue` (declared if missing) and publish `n` bodies of `size` bytes,
/// confirmed.
pub async fn fill(addr: &str, queue: &str, n: usize, size: usize) -> Result<()> {
    use lapin::options::{
        BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions, QueuePurgeOptions,
    };
    use lapin::types::FieldTable;
    use lapin::{BasicProperties, Connection, ConnectionProperties};
    let conn = Connection::connect(
        &format!("amqp://guest:guest@{addr}/%2f"),
        ConnectionProperties::default(),
    )
    .await?;
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
    use lapin::{Connection, ConnectionProperties};
    let conn = Connection::connect(
        &format!("amqp://guest:guest@{addr}/%2f"),
        ConnectionProperties::default(),
    )
    .await?;
    let ch = conn.create_channel().await?;
    ch.queue_delete(queue.into(), QueueDeleteOptions::default())
        .await?;
    conn.close(200, "OK".into()).await?;
    Ok(())
}

/// lapin 4: its I/O on a thread of its own, deliveries through its consumer stream.
pub async fn drain_lapin(addr: &str, queue: &str, n: usize, prefetch: u16) -> Result<Drained> {
    use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicQosOptions};
    use lapin::types::FieldTable;
    use lapin::{Connection, ConnectionProperties};
    let conn = Connection::connect(
        &format!("amqp://guest:guest@{addr}/%2f"),
        ConnectionProperties::default(),
    )
    .await?;
    let ch = conn.create_channel().await?;
    ch.basic_qos(prefetch, BasicQosOptions::default()).await?;
    let t0 = cpu().0;
    let mut consumer = ch
        .basic_consume(
            queue.into(),
            "amqp-clients".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let mut d = Drained {
        cpu_us: 0.0,
        batches: 0,
        taken: 0,
        bytes: 0,
    };
    while d.taken < n {
        let Some(first) = consumer.next().await else {
            break;
        };
        let mut batch = vec![first?];
        while batch.len() < usize::from(prefetch) && d.taken + batch.len() < n {
            let next = match consumer.next().now_or_never() {
                Some(next) => Ok(next),
                None => tokio::time::timeout(LINGER, consumer.next()).await,
            };
            match next {
                Ok(Some(delivery)) => batch.push(delivery?),
                _ => break,
            }
        }
        d.taken += batch.len();
        d.batches += 1;
        d.bytes += batch.iter().map(|b| b.data.len()).sum::<usize>();
        if let Some(last) = batch.last() {
            ch.basic_ack(last.delivery_tag, BasicAckOptions { multiple: true })
                .await?;
        }
    }
    d.cpu_us = cpu().0 - t0;
    ch.close(200, "OK".into()).await?;
    conn.close(200, "OK".into()).await?;
    Ok(d)
}

/// amqprs 2: tokio tasks (reader, writer, channel dispatcher) on the caller's
/// runtime, deliveries through an unbounded channel.
pub async fn drain_amqprs(addr: &str, queue: &str, n: usize, prefetch: u16) -> Result<Drained> {
    use amqprs::channel::{BasicAckArguments, BasicConsumeArguments, BasicQosArguments};
    use amqprs::connection::{Connection, OpenConnectionArguments};
    let (host, port) = addr.rsplit_once(':').ok_or("AMQP_ADDR: host:port")?;
    let conn = Connection::open(&OpenConnectionArguments::new(
        host,
        port.parse()?,
        "guest",
        "guest",
    ))
    .await?;
    let ch = conn.open_channel(None).await?;
    ch.basic_qos(BasicQosArguments::new(0, prefetch, false))
        .await?;
    let t0 = cpu().0;
    let (_tag, mut rx) = ch
        .basic_consume_rx(BasicConsumeArguments::new(queue, "amqp-clients"))
        .await?;
    let mut d = Drained {
        cpu_us: 0.0,
        batches: 0,
        taken: 0,
        bytes: 0,
    };
    while d.taken < n {
        let Some(first) = rx.recv().await else { break };
        let mut batch = vec![first];
        while batch.len() < usize::from(prefetch) && d.taken + batch.len() < n {
            let next = match rx.try_recv() {
                Ok(m) => Ok(Some(m)),
                Err(_) => tokio::time::timeout(LINGER, rx.recv()).await,
            };
            match next {
                Ok(Some(m)) => batch.push(m),
                _ => break,
            }
        }
        d.taken += batch.len();
        d.batches += 1;
        d.bytes += batch
            .iter()
            .map(|m| m.content.as_ref().map_or(0, Vec::len))
            .sum::<usize>();
        if let Some(tag) = batch
            .last()
            .and_then(|m| m.deliver.as_ref())
            .map(|m| m.delivery_tag())
        {
            ch.basic_ack(BasicAckArguments::new(tag, true)).await?;
        }
    }
    d.cpu_us = cpu().0 - t0;
    ch.close().await?;
    conn.close().await?;
    Ok(d)
}

/// amq-protocol's codec over a tokio socket, read and written by the
/// caller's own task: no thread, no task, no channel (raw.rs).
pub async fn drain_raw(addr: &str, queue: &str, n: usize, prefetch: u16) -> Result<Drained> {
    let mut c = raw::Conn::open(addr, "guest", "guest").await?;
    let t0 = cpu().0;
    c.consume(queue, prefetch).await?;
    let mut d = Drained {
        cpu_us: 0.0,
        batches: 0,
        taken: 0,
        bytes: 0,
    };
    while d.taken < n {
        let Some(first) = c.delivery(true).await? else {
            break;
        };
        let mut batch = vec![first];
        while batch.len() < usize::from(prefetch) && d.taken + batch.len() < n {
            let next = match c.delivery(false).await? {
                Some(m) => Some(m),
                None => match tokio::time::timeout(LINGER, c.delivery(true)).await {
                    Ok(r) => r?,
                    Err(_) => None,
                },
            };
            match next {
                Some(m) => batch.push(m),
                None => break,
            }
        }
        d.taken += batch.len();
        d.batches += 1;
        d.bytes += batch.iter().map(|(_, body)| body.len()).sum::<usize>();
        if let Some((tag, _)) = batch.last() {
            c.ack(*tag).await?;
        }
    }
    d.cpu_us = cpu().0 - t0;
    c.close().await?;
    Ok(d)
}
