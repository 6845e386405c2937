//! A minimal AMQP 0-9-1 consumer on the caller's runtime: amq-protocol's
//! codec (lapin's own) over a tokio `TcpStream`, read and written by the
//! caller's task. Only what the measurement needs: PLAIN login to vhost `/`,
//! one channel, `basic.qos`, `basic.consume`, deliveries, `basic.ack
//! multiple`, close. No heartbeats, TLS or broker-initiated closes.
//!
//! A delivery is taken from the buffer only when all its frames (method,
//! header, bodies) are there, and the only await while waiting is a read
//! into the buffer's spare capacity, so a wait cancelled by a timeout loses
//! nothing.

use amq_protocol::frame::{AMQPFrame, ProtocolVersion, gen_frame, parse_frame};
use amq_protocol::protocol::{AMQPClass, basic, channel, connection};
use amq_protocol::types::{FieldTable, LongString};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::Result;

pub struct Conn {
    socket: TcpStream,
    read: Vec<u8>,
    /// Where the unparsed bytes of `read` begin.
    start: usize,
    write: Vec<u8>,
}

/// One delivery: its tag and body.
pub type Delivery = (u64, Vec<u8>);

impl Conn {
    async fn send(&mut self, frame: AMQPFrame) -> Result<()> {
        let buf = std::mem::take(&mut self.write);
        let (mut buf, _) = cookie_factory::r#gen(gen_frame(&frame), buf)
            .map_err(|e| format!("encoding: {e:?}"))?;
        self.socket.write_all(&buf).await?;
        buf.clear();
        self.write = buf;
        Ok(())
    }

    /// Parse one frame at `at` in the buffer; None when it is not all there.
    fn peek(&self, at: usize) -> Result<Option<(AMQPFrame, usize)>> {
        let data = &self.read[at..];
        if data.is_empty() {
            return Ok(None);
        }
        match parse_frame(data) {
            Ok((rest, frame)) => Ok(Some((frame, at + data.len() - rest.len()))),
            Err(nom::Err::Incomplete(_)) => Ok(None),
            Err(e) => Err(format!("parsing a frame: {e:?}").into()),
        }
    }

    fn consumed(&mut self, to: usize) {
        self.start = to;
        if self.start == self.read.len() {
            self.read.clear();
            self.start = 0;
        }
    }

    /// Read more from the socket (cancel-safe: `read_buf` into spare capacity).
    async fn fill(&mut self) -> Result<()> {
        if self.start > 0 {
            self.read.drain(..self.start);
            self.start = 0;
        }
        self.read.reserve(65_536);
        if self.socket.read_buf(&mut self.read).await? == 0 {
            return Err("the broker closed the connection".into());
        }
        Ok(())
    }

    /// The next method frame (heartbeats skipped).
    async fn method(&mut self) -> Result<AMQPClass> {
        loop {
            match self.peek(self.start)? {
                Some((frame, to)) => {
                    self.consumed(to);
                    match frame {
                        AMQPFrame::Method(_, m) => return Ok(m),
                        AMQPFrame::Heartbeat => {}
                        other => return Err(format!("unexpected frame {other:?}").into()),
                    }
                }
                None => self.fill().await?,
            }
        }
    }

    /// A whole delivery if the buffer holds one, taken from it.
    fn buffered_delivery(&mut self) -> Result<Option<Delivery>> {
        let Some((frame, mut at)) = self.peek(self.start)? else {
            return Ok(None);
        };
        let AMQPFrame::Method(_, AMQPClass::Basic(basic::AMQPMethod::Deliver(deliver))) = frame
        else {
            return Err(format!("expected basic.deliver, got {frame:?}").into());
        };
        let Some((frame, next)) = self.peek(at)? else {
            return Ok(None);
        };
        let AMQPFrame::Header(_, header) = frame else {
            return Err(format!("expected a content header, got {frame:?}").into());
        };
        at = next;
        let size = usize::try_from(header.body_size)?;
        let mut body = Vec::with_capacity(size.min(1 << 20)); // the broker declares the size
        while body.len() < size {
            let Some((frame, next)) = self.peek(at)? else {
                return Ok(None);
            };
            let AMQPFrame::Body(_, chunk) = frame else {
                return Err(format!("expected a content body, got {frame:?}").into());
            };
            body.extend_from_slice(&chunk);
            at = next;
        }
        self.consumed(at);
        Ok(Some((deliver.delivery_tag, body)))
    }

    /// The next delivery; with `wait` false, None unless one is buffered.
    pub async fn delivery(&mut self, wait: bool) -> Result<Option<Delivery>> {
        loop {
            if let Some(d) = self.buffered_delivery()? {
                return Ok(Some(d));
            }
            if !wait {
                return Ok(None);
            }
            self.fill().await?;
        }
    }

    /// Send `method` on `channel`, without waiting for anything.
    async fn send_method(&mut self, channel: u16, method: AMQPClass) -> Result<()> {
        self.send(AMQPFrame::Method(channel, method)).await
    }

    /// Send `method` on `channel` and read its reply, which `reply` takes
    /// apart; anything else is an error naming the `expected` reply.
    async fn call<T>(
        &mut self,
        channel: u16,
        method: AMQPClass,
        expected: &str,
        reply: impl FnOnce(AMQPClass) -> Option<T>,
    ) -> Result<T> {
        self.send_method(channel, method).await?;
        reply(self.method().await?).ok_or_else(|| format!("expected {expected}").into())
    }

    pub async fn open(addr: &str, user: &str, password: &str) -> Result<Conn> {
        use connection::AMQPMethod as C;
        let socket = TcpStream::connect(addr).await?;
        socket.set_nodelay(true)?;
        let mut c = Conn {
            socket,
            read: Vec::with_capacity(131_072),
            start: 0,
            write: Vec::with_capacity(4_096),
        };
        c.send(AMQPFrame::ProtocolHeader(ProtocolVersion::amqp_0_9_1()))
            .await?;
        let AMQPClass::Connection(C::Start(_)) = c.method().await? else {
            return Err("expected connection.start".into());
        };
        let start_ok = connection::StartOk {
            client_properties: FieldTable::default(),
            mechanism: "PLAIN".into(),
            response: LongString::from(format!("\0{user}\0{password}")),
            locale: "en_US".into(),
        };
        let start_ok = AMQPClass::Connection(C::StartOk(start_ok));
        let tune = c
            .call(
                0,
                start_ok,
                "connection.tune (was the login refused?)",
                |m| match m {
                    AMQPClass::Connection(C::Tune(tune)) => Some(tune),
                    _ => None,
                },
            )
            .await?;
        let tune_ok = connection::TuneOk {
            channel_max: 1,
            frame_max: tune.frame_max,
            heartbeat: 0,
        };
        c.send_method(0, AMQPClass::Connection(C::TuneOk(tune_ok)))
            .await?;
        let open = connection::Open {
            virtual_host: "/".into(),
        };
        c.call(
            0,
            AMQPClass::Connection(C::Open(open)),
            "connection.open-ok",
            |m| matches!(m, AMQPClass::Connection(C::OpenOk(_))).then_some(()),
        )
        .await?;
        let open = AMQPClass::Channel(channel::AMQPMethod::Open(channel::Open {}));
        c.call(1, open, "channel.open-ok", |m| {
            matches!(m, AMQPClass::Channel(channel::AMQPMethod::OpenOk(_))).then_some(())
        })
        .await?;
        Ok(c)
    }

    pub async fn consume(&mut self, queue: &str, prefetch: u16) -> Result<()> {
        use basic::AMQPMethod as B;
        let qos = basic::Qos {
            prefetch_count: prefetch,
            global: false,
        };
        self.call(1, AMQPClass::Basic(B::Qos(qos)), "basic.qos-ok", |m| {
            matches!(m, AMQPClass::Basic(B::QosOk(_))).then_some(())
        })
        .await?;
        let consume = basic::Consume {
            queue: queue.into(),
            consumer_tag: "amqp-clients".into(),
            no_local: false,
            no_ack: false,
            exclusive: false,
            nowait: false,
            arguments: FieldTable::default(),
        };
        self.call(
            1,
            AMQPClass::Basic(B::Consume(consume)),
            "basic.consume-ok",
            |m| matches!(m, AMQPClass::Basic(B::ConsumeOk(_))).then_some(()),
        )
        .await
    }

    pub async fn ack(&mut self, tag: u64) -> Result<()> {
        let ack = basic::Ack {
            delivery_tag: tag,
            multiple: true,
        };
        self.send_method(1, AMQPClass::Basic(basic::AMQPMethod::Ack(ack)))
            .await
    }

    /// `connection.close`, and up to a second for its `close-ok` (deliveries
    /// still in flight are skipped; the broker requeues them).
    pub async fn close(&mut self) -> Result<()> {
        let close = connection::Close {
            reply_code: 200,
            reply_text: "OK".into(),
            class_id: 0,
            method_id: 0,
        };
        self.send_method(
            0,
            AMQPClass::Connection(connection::AMQPMethod::Close(close)),
        )
        .await?;
        let wait = async {
            loop {
                match self.peek(self.start)? {
                    Some((
                        AMQPFrame::Method(
                            _,
                            AMQPClass::Connection(connection::AMQPMethod::CloseOk(_)),
                        ),
                        _,
                    )) => {
                        return Result::Ok(());
                    }
                    Some((_, to)) => self.consumed(to),
                    None => self.fill().await?,
                }
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), wait).await;
        Ok(())
    }
}
