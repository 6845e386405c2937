//! A channel of a connection: the calls the drain makes on it, and its
//! consumer's deliveries.

use std::sync::Arc;

use amq_protocol::frame::AMQPFrame;
use amq_protocol::protocol::{AMQPClass, basic, channel, queue};
use amq_protocol::types::FieldTable;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::{Delivery, Error, Reply, Shared, unexpected};

/// One channel of a [`Connection`](super::Connection).
pub struct Channel {
    pub(super) id: u16,
    pub(super) shared: Arc<Shared>,
    pub(super) replies: tokio::sync::Mutex<UnboundedReceiver<Reply>>,
}

/// A channel's consumer: its deliveries in the order the broker sent them.
pub struct Consumer {
    rx: UnboundedReceiver<Delivery>,
}

impl Consumer {
    /// The next delivery; `None` when the broker cancelled the consumer or
    /// the channel or connection closed (the channel's
    /// [`Channel::connected`] tells which).
    pub async fn next(&mut self) -> Option<Delivery> {
        self.rx.recv().await
    }

    /// The next delivery if one has arrived, without waiting.
    pub fn try_next(&mut self) -> Option<Delivery> {
        self.rx.try_recv().ok()
    }
}

impl Channel {
    fn method(&self, m: AMQPClass) -> AMQPFrame {
        AMQPFrame::Method(self.id, m)
    }

    /// Send `m` and wait for the broker's reply on this channel.
    pub(super) async fn call(&self, m: AMQPClass) -> Result<Reply, Error> {
        let mut rx = self.replies.lock().await;
        self.check()?;
        self.shared.send(&[self.method(m)]).await?;
        match rx.recv().await {
            Some(reply) => Ok(reply),
            None => Err(self.shared.channel_error(self.id)),
        }
    }

    /// Send `m`, which has no reply.
    async fn tell(&self, m: AMQPClass) -> Result<(), Error> {
        self.check()?;
        self.shared.send(&[self.method(m)]).await
    }

    fn check(&self) -> Result<(), Error> {
        if self.connected() {
            Ok(())
        } else {
            Err(self.shared.channel_error(self.id))
        }
    }

    /// Why the channel is closed (or, while it is open, that it is not).
    pub fn error(&self) -> Error {
        if self.connected() {
            Error::lost("the channel is open")
        } else {
            self.shared.channel_error(self.id)
        }
    }

    /// Whether the channel (and its connection) is open.
    pub fn connected(&self) -> bool {
        let state = self.shared.state();
        state.closed.is_none()
            && state
                .channels
                .iter()
                .any(|s| s.id == self.id && s.closed.is_none())
    }

    /// The number of ready messages in `queue`, by a passive
    /// `queue.declare` (the broker closes the channel if there is none).
    pub async fn ready_count(&self, queue: &str) -> Result<u32, Error> {
        let declare = queue::Declare {
            queue: queue.into(),
            passive: true,
            durable: false,
            exclusive: false,
            auto_delete: false,
            nowait: false,
            arguments: FieldTable::default(),
        };
        match self
            .call(AMQPClass::Queue(queue::AMQPMethod::Declare(declare)))
            .await?
        {
            Reply::Method(AMQPClass::Queue(queue::AMQPMethod::DeclareOk(ok))) => {
                Ok(ok.message_count)
            }
            _ => Err(unexpected("queue.declare-ok")),
        }
    }

    /// `basic.qos`: at most `prefetch` unacknowledged deliveries to each
    /// consumer of this channel.
    pub async fn basic_qos(&self, prefetch: u16) -> Result<(), Error> {
        let qos = basic::Qos {
            prefetch_count: prefetch,
            global: false,
        };
        match self
            .call(AMQPClass::Basic(basic::AMQPMethod::Qos(qos)))
            .await?
        {
            Reply::Method(AMQPClass::Basic(basic::AMQPMethod::QosOk(_))) => Ok(()),
            _ => Err(unexpected("basic.qos-ok")),
        }
    }

    /// `basic.consume` on `queue`, acknowledged by the caller.
    pub async fn basic_consume(&self, queue: &str, tag: &str) -> Result<Consumer, Error> {
        let (tx, rx) = unbounded_channel();
        self.shared.with_slot(self.id, |s| s.deliveries = Some(tx));
        let consume = basic::Consume {
            queue: queue.into(),
            consumer_tag: tag.into(),
            no_local: false,
            no_ack: false,
            exclusive: false,
            nowait: false,
            arguments: FieldTable::default(),
        };
        match self
            .call(AMQPClass::Basic(basic::AMQPMethod::Consume(consume)))
            .await?
        {
            Reply::Method(AMQPClass::Basic(basic::AMQPMethod::ConsumeOk(_))) => Ok(Consumer { rx }),
            _ => Err(unexpected("basic.consume-ok")),
        }
    }

    /// `basic.get`: one message from `queue`, or `None` when it has none
    /// ready. With `no_ack` the broker forgets it as it hands it out.
    pub async fn basic_get(&self, queue: &str, no_ack: bool) -> Result<Option<Delivery>, Error> {
        let get = basic::Get {
            queue: queue.into(),
            no_ack,
        };
        match self
            .call(AMQPClass::Basic(basic::AMQPMethod::Get(get)))
            .await?
        {
            Reply::Get(d) => Ok(d.map(|d| *d)),
            _ => Err(unexpected("basic.get-ok or get-empty")),
        }
    }

    /// `basic.ack` of `tag` (and, with `multiple`, every unsettled delivery
    /// below it).
    pub async fn basic_ack(&self, tag: u64, multiple: bool) -> Result<(), Error> {
        let ack = basic::Ack {
            delivery_tag: tag,
            multiple,
        };
        self.tell(AMQPClass::Basic(basic::AMQPMethod::Ack(ack)))
            .await
    }

    /// `basic.nack` of `tag` (with `multiple`, every unsettled one below
    /// it too), back to the queue with `requeue`, else to the dead-letter
    /// exchange.
    pub async fn basic_nack(&self, tag: u64, multiple: bool, requeue: bool) -> Result<(), Error> {
        let nack = basic::Nack {
            delivery_tag: tag,
            multiple,
            requeue,
        };
        self.tell(AMQPClass::Basic(basic::AMQPMethod::Nack(nack)))
            .await
    }

    /// `basic.reject` of `tag`.
    pub async fn basic_reject(&self, tag: u64, requeue: bool) -> Result<(), Error> {
        let reject = basic::Reject {
            delivery_tag: tag,
            requeue,
        };
        self.tell(AMQPClass::Basic(basic::AMQPMethod::Reject(reject)))
            .await
    }

    /// `channel.close`, waiting for the broker's `close-ok`: the broker
    /// requeues what it delivered on the channel and was not settled.
    pub async fn close(&self) -> Result<(), Error> {
        let close = channel::Close {
            reply_code: 200,
            reply_text: "OK".into(),
            class_id: 0,
            method_id: 0,
        };
        let reply = self
            .call(AMQPClass::Channel(channel::AMQPMethod::Close(close)))
            .await;
        // Its slot goes, and with it the senders of its replies and
        // deliveries.
        self.shared.state().channels.retain(|s| s.id != self.id);
        match reply? {
            Reply::Method(AMQPClass::Channel(channel::AMQPMethod::CloseOk(_))) => Ok(()),
            _ => Err(unexpected("channel.close-ok")),
        }
    }
}
