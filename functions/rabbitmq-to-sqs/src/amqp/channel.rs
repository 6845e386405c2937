//! A channel of a connection: the calls the drain makes on it, and its
//! consumer's deliveries.

use std::sync::Arc;

use amq_protocol::frame::AMQPFrame;
use amq_protocol::protocol::{AMQPClass, basic, channel, queue};
use amq_protocol::types::FieldTable;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::budget::Budget;
use super::{Delivery, Error, Reply, Shared, unexpected};

/// One channel of a [`Connection`](super::Connection).
pub struct Channel {
    pub(super) id: u16,
    pub(super) shared: Arc<Shared>,
    pub(super) replies: tokio::sync::Mutex<UnboundedReceiver<Reply>>,
}

/// A channel's consumer: its deliveries in the order the broker sent them.
/// The bytes they hold count against its budget until
/// [`Consumer::release`]d: at the bound the client stops reading the socket.
pub struct Consumer {
    rx: UnboundedReceiver<Delivery>,
    budget: Arc<Budget>,
    tag: String,
    channel: u16,
    shared: Arc<Shared>,
}

impl Drop for Consumer {
    /// Nobody takes its deliveries any more: the client reads on, and
    /// keeps only their tags.
    fn drop(&mut self) {
        self.shared.with_slot(self.channel, |s| s.deliveries = None);
        self.budget.release(usize::MAX);
    }
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

    /// Deliveries of `bytes` (their bodies) are settled: the client may
    /// read more.
    pub fn release(&self, bytes: usize) {
        self.budget.release(bytes);
    }
}

impl Channel {
    fn method(&self, m: AMQPClass) -> AMQPFrame {
        AMQPFrame::Method(self.id, m)
    }

    /// Send `m` and wait for the broker's reply on this channel, before
    /// the connection's deadline.
    pub(super) async fn call(&self, m: AMQPClass) -> Result<Reply, Error> {
        self.shared
            .within_deadline(async {
                let mut rx = self.replies.lock().await;
                self.check()?;
                self.shared.write(&[self.method(m)]).await?;
                match rx.recv().await {
                    Some(reply) => Ok(reply),
                    None => Err(self.shared.channel_error(self.id)),
                }
            })
            .await
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

    /// `basic.consume` on `queue`, acknowledged by the caller, its
    /// deliveries' bodies bounded by `max_bytes` until released.
    pub async fn basic_consume(
        &self,
        queue: &str,
        tag: &str,
        max_bytes: usize,
    ) -> Result<Consumer, Error> {
        let (tx, rx) = unbounded_channel();
        let budget = Arc::new(Budget::new(max_bytes));
        self.shared.with_slot(self.id, |s| {
            s.deliveries = Some(tx);
            s.budget = Some(budget.clone());
            s.untaken.clear();
        });
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
            Reply::Method(AMQPClass::Basic(basic::AMQPMethod::ConsumeOk(_))) => Ok(Consumer {
                rx,
                budget,
                tag: tag.to_owned(),
                channel: self.id,
                shared: self.shared.clone(),
            }),
            _ => Err(unexpected("basic.consume-ok")),
        }
    }

    /// Stop `consumer`: nothing more is taken from it (what arrives is
    /// left unacknowledged, its body not kept), then `basic.cancel`, after
    /// whose answer the broker delivers nothing more to it. The tags of
    /// every delivery it had handed over that nobody took, to be given
    /// back by the caller (with the held ones, so each counts one return).
    pub async fn cancel(&self, mut consumer: Consumer) -> Result<Vec<u64>, Error> {
        self.shared.with_slot(self.id, |s| s.deliveries = None);
        let mut untaken = Vec::new();
        while let Some(d) = consumer.try_next() {
            untaken.push(d.delivery_tag);
        }
        consumer.budget.release(usize::MAX);
        let result = if self.connected() {
            let cancel = basic::Cancel {
                consumer_tag: consumer.tag.as_str().into(),
                nowait: false,
            };
            match self
                .call(AMQPClass::Basic(basic::AMQPMethod::Cancel(cancel)))
                .await
            {
                Ok(Reply::Method(AMQPClass::Basic(basic::AMQPMethod::CancelOk(_)))) => Ok(()),
                Ok(_) => Err(unexpected("basic.cancel-ok")),
                Err(e) => Err(e),
            }
        } else {
            Ok(())
        };
        self.shared
            .with_slot(self.id, |s| untaken.append(&mut s.untaken));
        untaken.sort_unstable();
        untaken.dedup();
        result.map(|()| untaken)
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
