//! The connection's reader: one task that reads the socket, answers the
//! broker's closes, sends heartbeats, assembles each delivery from its
//! frames and hands it to its channel's consumer (or to the `basic.get`
//! waiting for it), and hands every other reply to the call waiting on its
//! channel. When it ends, every channel's waits end with the reason.

use std::sync::Arc;
use std::time::Duration;

use amq_protocol::frame::AMQPFrame;
use amq_protocol::protocol::{AMQPClass, basic, channel, connection};
use tokio::io::ReadHalf;
use tokio::time::Instant;

use super::socket::Stream;
use super::wire::ReadBuf;
use super::{Delivery, Error, Reply, Shared};

/// A delivery whose header or body frames are still to come.
struct Pending {
    /// From `basic.get` (a reply) rather than a consumer.
    get: bool,
    /// To a consumer nobody takes from any more: its body is not kept,
    /// only its tag, for the drain to give it back.
    untaken: bool,
    delivery: Delivery,
    /// The body's size, once the header has said it.
    size: Option<usize>,
    /// The body's octets received so far.
    received: usize,
}

pub(super) struct Reader {
    pub(super) io: ReadHalf<Stream>,
    pub(super) buf: ReadBuf,
    pub(super) shared: Arc<Shared>,
    /// The negotiated heartbeat interval, if any.
    pub(super) heartbeat: Option<Duration>,
    /// Per channel (one or two are open at a time, so a list).
    pending: Vec<(u16, Pending)>,
}

impl Reader {
    pub(super) fn new(
        io: ReadHalf<Stream>,
        buf: ReadBuf,
        shared: Arc<Shared>,
        heartbeat: Option<Duration>,
    ) -> Self {
        Reader {
            io,
            buf,
            shared,
            heartbeat,
            pending: Vec::new(),
        }
    }

    /// Read until the connection ends; then end every wait with the reason.
    pub(super) async fn run(mut self) {
        let why = self.read().await;
        tracing::debug!(reason = %why, "AMQP connection ended");
        self.shared.end(why);
        self.shared.done.send_replace(true);
    }

    async fn read(&mut self) -> Error {
        // Heartbeats go out at half the interval, and a broker silent for
        // two intervals is gone (as the protocol says).
        let mut beat = self.heartbeat.map(|h| {
            let half = (h / 2).max(Duration::from_millis(500));
            let mut i = tokio::time::interval_at(Instant::now() + half, half);
            i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            i
        });
        let mut last_read = Instant::now();
        loop {
            loop {
                match self.buf.next_frame() {
                    Ok(Some(frame)) => {
                        if let Err(e) = self.dispatch(frame).await {
                            return e;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => return e,
                }
            }
            let tick = async {
                match &mut beat {
                    Some(b) => {
                        b.tick().await;
                    }
                    None => std::future::pending().await,
                }
            };
            // A consumer's deliveries at their bound of bytes: nothing is
            // read (the broker's frames wait in TCP's buffers) until the
            // drain releases some, and the broker is not judged silent.
            let full = self.shared.full_budget();
            let released = async {
                match &full {
                    Some(b) => b.released().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                // What has arrived is read before the broker is judged silent.
                biased;
                n = self.buf.fill(&mut self.io), if full.is_none() => match n {
                    Ok(0) => return Error::lost("the broker closed the connection"),
                    Ok(_) => last_read = Instant::now(),
                    Err(e) => return e,
                },
                () = released => last_read = Instant::now(),
                () = tick => {
                    if full.is_some() {
                        last_read = Instant::now();
                    }
                    if let Some(h) = self.heartbeat
                        && last_read.elapsed() > h * 2
                    {
                        return Error::lost("the broker sent nothing for two heartbeat intervals");
                    }
                    if let Err(e) = self.shared.send(&[AMQPFrame::Heartbeat]).await {
                        return e;
                    }
                }
            }
        }
    }

    /// Act on one frame; an error ends the connection.
    async fn dispatch(&mut self, frame: AMQPFrame) -> Result<(), Error> {
        match frame {
            AMQPFrame::Heartbeat | AMQPFrame::InvalidHeartbeat(_) => Ok(()),
            AMQPFrame::Method(0, m) => self.connection_method(m).await,
            AMQPFrame::Method(ch, m) => self.channel_method(ch, m).await,
            AMQPFrame::Header(ch, header) => {
                let notes = self.buf.take_notes();
                let Some(p) = self.pending_mut(ch) else {
                    return Err(out_of_order("a content header", ch));
                };
                let size = usize::try_from(header.body_size)
                    .map_err(|_| Error::protocol("a message too large for memory".into()))?;
                p.delivery.properties = header.properties;
                if let Some(notes) = notes {
                    p.delivery.raw.extend(notes.raw);
                    p.delivery.fault = notes.fault;
                }
                p.size = Some(size);
                self.complete(ch)
            }
            AMQPFrame::Body(ch, data) => {
                let Some(p) = self.pending_mut(ch) else {
                    return Err(out_of_order("a content body", ch));
                };
                let Some(size) = p.size else {
                    return Err(out_of_order("a content body before its header", ch));
                };
                p.received += data.len();
                if p.untaken {
                    // Nobody takes it: its body is not kept.
                } else if p.delivery.data.is_empty() {
                    // A body in one frame (most are) is kept as parsed;
                    // one in several gets its whole size at once.
                    if data.len() < size {
                        p.delivery.data.reserve_exact(size);
                        p.delivery.data.extend_from_slice(&data);
                    } else {
                        p.delivery.data = data;
                    }
                } else {
                    p.delivery.data.extend_from_slice(&data);
                }
                self.complete(ch)
            }
            AMQPFrame::ProtocolHeader(_) => Err(Error::protocol(
                "the broker sent a protocol header mid-connection".into(),
            )),
        }
    }

    async fn connection_method(&mut self, m: AMQPClass) -> Result<(), Error> {
        use connection::AMQPMethod as C;
        match m {
            AMQPClass::Connection(C::Close(c)) => {
                let why = Error::closed("connection", c.reply_code, c.reply_text.as_str());
                // Recorded before answering, so nothing is sent after it.
                self.shared.end(why.clone());
                let ok = AMQPClass::Connection(C::CloseOk(connection::CloseOk {}));
                let _ = self.shared.send(&[AMQPFrame::Method(0, ok)]).await;
                Err(why)
            }
            AMQPClass::Connection(C::CloseOk(_)) => {
                Err(Error::lost("the connection was closed by this function"))
            }
            AMQPClass::Connection(C::Blocked(b)) => {
                tracing::warn!(reason = %b.reason, "the broker blocks publishers on this connection");
                Ok(())
            }
            other => {
                tracing::debug!(method = ?other, "AMQP connection method ignored");
                Ok(())
            }
        }
    }

    async fn channel_method(&mut self, ch: u16, m: AMQPClass) -> Result<(), Error> {
        match m {
            AMQPClass::Basic(basic::AMQPMethod::Deliver(d)) => self.begin(
                ch,
                false,
                d.delivery_tag,
                d.redelivered,
                d.exchange,
                d.routing_key,
            ),
            AMQPClass::Basic(basic::AMQPMethod::GetOk(g)) => self.begin(
                ch,
                true,
                g.delivery_tag,
                g.redelivered,
                g.exchange,
                g.routing_key,
            ),
            AMQPClass::Basic(basic::AMQPMethod::GetEmpty(_)) => {
                self.reply(ch, Reply::Get(None));
                Ok(())
            }
            AMQPClass::Basic(basic::AMQPMethod::Cancel(c)) => {
                // The consumer's stream ends; the channel stays open.
                self.shared.with_slot(ch, |s| s.deliveries = None);
                if !c.nowait {
                    let ok = basic::CancelOk {
                        consumer_tag: c.consumer_tag,
                    };
                    let ok = AMQPClass::Basic(basic::AMQPMethod::CancelOk(ok));
                    self.shared.send(&[AMQPFrame::Method(ch, ok)]).await?;
                }
                Ok(())
            }
            AMQPClass::Channel(channel::AMQPMethod::Close(c)) => {
                let why = Error::closed("channel", c.reply_code, c.reply_text.as_str());
                self.pending.retain(|(c, _)| *c != ch);
                self.shared.with_slot(ch, |s| {
                    s.closed = Some(why);
                    s.replies = None;
                    s.deliveries = None;
                });
                let ok = AMQPClass::Channel(channel::AMQPMethod::CloseOk(channel::CloseOk {}));
                self.shared.send(&[AMQPFrame::Method(ch, ok)]).await
            }
            AMQPClass::Channel(channel::AMQPMethod::Flow(f)) => {
                let ok = channel::FlowOk { active: f.active };
                let ok = AMQPClass::Channel(channel::AMQPMethod::FlowOk(ok));
                self.shared.send(&[AMQPFrame::Method(ch, ok)]).await
            }
            other => {
                self.reply(ch, Reply::Method(other));
                Ok(())
            }
        }
    }

    fn begin(
        &mut self,
        ch: u16,
        get: bool,
        delivery_tag: u64,
        redelivered: bool,
        exchange: amq_protocol::types::ShortString,
        routing_key: amq_protocol::types::ShortString,
    ) -> Result<(), Error> {
        if self.pending_mut(ch).is_some() {
            return Err(out_of_order("a delivery before the last one's body", ch));
        }
        let mut untaken = false;
        if !get {
            self.shared
                .with_slot(ch, |s| untaken = s.deliveries.is_none());
        }
        let delivery = Delivery {
            delivery_tag,
            redelivered,
            exchange: exchange.to_string(),
            routing_key: routing_key.to_string(),
            properties: Default::default(),
            data: Vec::new(),
            raw: self.buf.take_notes().map(|n| n.raw).unwrap_or_default(),
            fault: None,
        };
        self.pending.push((
            ch,
            Pending {
                get,
                untaken,
                delivery,
                size: None,
                received: 0,
            },
        ));
        Ok(())
    }

    /// Hand the pending delivery of `ch` on if all its body is there.
    fn complete(&mut self, ch: u16) -> Result<(), Error> {
        let Some(at) = self.pending.iter().position(|(c, _)| *c == ch) else {
            return Ok(());
        };
        let p = &self.pending[at].1;
        match p.size {
            Some(size) if p.received > size => {
                return Err(Error::protocol(
                    "the broker sent more body than the header said".into(),
                ));
            }
            Some(size) if p.received == size => {}
            _ => return Ok(()),
        }
        let (_, p) = self.pending.swap_remove(at);
        if p.get {
            self.reply(ch, Reply::Get(Some(Box::new(p.delivery))));
            return Ok(());
        }
        // A delivery nobody takes (the consumer stopped, or the broker
        // cancelled it) stays unacknowledged: its tag is kept for the drain
        // to give it back.
        self.shared.with_slot(ch, |s| {
            let tag = p.delivery.delivery_tag;
            let bytes = p.delivery.data.len();
            match (&s.deliveries, p.untaken) {
                (Some(tx), false) => {
                    if let Some(b) = &s.budget {
                        b.take(bytes);
                    }
                    if tx.send(p.delivery).is_err() {
                        s.untaken.push(tag);
                    }
                }
                _ => s.untaken.push(tag),
            }
        });
        Ok(())
    }

    fn pending_mut(&mut self, ch: u16) -> Option<&mut Pending> {
        self.pending
            .iter_mut()
            .find(|(c, _)| *c == ch)
            .map(|(_, p)| p)
    }

    fn reply(&self, ch: u16, reply: Reply) {
        self.shared.with_slot(ch, |s| {
            if let Some(tx) = &s.replies {
                let _ = tx.send(reply);
            }
        });
    }
}

fn out_of_order(what: &str, ch: u16) -> Error {
    Error::protocol(format!(
        "the broker sent {what} out of order on channel {ch}"
    ))
}
