//! The AMQP 0-9-1 client the drain uses: amq-protocol's codec (the frame
//! parser and writer lapin is built on) over one tokio socket, on the
//! function's own runtime.
//!
//! Why not lapin: lapin 4 reads its socket on a thread of its own and hands
//! every delivery across threads, which under 128 MB's CPU share costs about
//! 4.6 µs a delivery more than reading the socket on the function's runtime
//! (bench/notes/2026-12-04-three-amqp-clients.md). Only what the drain needs is
//! here: PLAIN login (the broker's refusal told apart), `amqp://` and
//! `amqps://` (rustls, the system's roots), a channel per queue,
//! `queue.declare` (passive), `basic.qos`, `basic.consume`, `basic.get`,
//! `basic.ack`/`nack`/`reject`, and the broker's closes and cancels.
//!
//! One task per connection ([`reader`]) reads the socket: it answers the
//! broker's closes, sends heartbeats (also while SQS calls are in flight),
//! takes a delivery whole (method, header and body frames) and hands it to
//! its channel's consumer, and hands every other reply to the call waiting
//! for it. Calls write their frames themselves. Nothing the broker sends
//! can panic. A delivery's frame the codec cannot read is read tolerantly
//! ([`mend`]), so one message never ends the connection; any other frame
//! that does not parse, or one out of order, ends it with an error.

mod budget;
mod channel;
mod delivery;
mod layout;
mod mend;
pub(crate) mod nesting;
mod octets;
mod open;
mod reader;
mod socket;
mod wire;

use std::future::Future;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use amq_protocol::frame::AMQPFrame;
use amq_protocol::protocol::{AMQPClass, channel as channel_methods, connection};
use tokio::io::{AsyncWriteExt, WriteHalf};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use self::budget::Budget;

pub use self::channel::{Channel, Consumer};
pub use self::delivery::{Delivery, Properties, RawText, TextField};
pub use self::open::open;
use self::socket::Stream;

/// The reply code of `connection.close` when the broker refuses the login
/// (or the user's access to the vhost).
const ACCESS_REFUSED: u16 = 403;
/// The reply code of `connection.close` when the broker does not allow the
/// vhost: no permission on it for the user, or no such vhost.
const NOT_ALLOWED: u16 = 530;

/// What went wrong, in words that never hold a password (the login is not
/// in any of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ErrorKind {
    /// The broker refused the login.
    AccessRefused,
    /// The broker closed the channel or the connection.
    Closed,
    /// The socket failed or ended.
    Io,
    /// The broker sent what the protocol does not allow here.
    Protocol,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Error {}

impl Error {
    fn io(e: std::io::Error) -> Self {
        Error {
            kind: ErrorKind::Io,
            text: format!("the connection to the broker failed: {e}"),
        }
    }

    fn lost(why: &str) -> Self {
        Error {
            kind: ErrorKind::Io,
            text: why.to_owned(),
        }
    }

    fn protocol(text: String) -> Self {
        Error {
            kind: ErrorKind::Protocol,
            text,
        }
    }

    /// The broker's `connection.close` or `channel.close`.
    fn closed(what: &str, code: u16, text: &str) -> Self {
        Error {
            kind: if code == ACCESS_REFUSED {
                ErrorKind::AccessRefused
            } else {
                ErrorKind::Closed
            },
            text: format!("the broker closed the {what}: {code} {text}"),
        }
    }

    /// The broker's `connection.close` during the handshake: a refused
    /// login (403) or a vhost the user may not open (530, also for a vhost
    /// the broker does not have) are both access refused.
    fn refused_at_open(code: u16, text: &str) -> Self {
        let mut e = Error::closed("connection", code, text);
        if code == NOT_ALLOWED {
            e.kind = ErrorKind::AccessRefused;
        }
        e
    }

    /// Whether the broker refused the login or the vhost.
    pub fn is_access_refused(&self) -> bool {
        self.kind == ErrorKind::AccessRefused
    }
}

/// What the reader hands a call waiting on a channel.
enum Reply {
    /// A method (`declare-ok`, `qos-ok`, ...).
    Method(AMQPClass),
    /// `basic.get`'s answer: a message, or none ready.
    Get(Option<Box<Delivery>>),
}

/// A channel as the reader sees it.
struct Slot {
    id: u16,
    /// Where replies go; `None` once the channel is closed.
    replies: Option<UnboundedSender<Reply>>,
    /// The consumer's deliveries; `None` without a consumer, once the drain
    /// stopped taking them, or once the broker cancelled it or closed the
    /// channel.
    deliveries: Option<UnboundedSender<Delivery>>,
    /// The bytes the consumer's deliveries hold, and their bound.
    budget: Option<Arc<Budget>>,
    /// Tags of deliveries to the consumer that nobody takes (it was
    /// stopped or cancelled): unacknowledged, for the drain to give back.
    untaken: Vec<u64>,
    /// Why the channel is closed.
    closed: Option<Error>,
}

impl Slot {
    fn new(id: u16, replies: UnboundedSender<Reply>) -> Self {
        Slot {
            id,
            replies: Some(replies),
            deliveries: None,
            budget: None,
            untaken: Vec::new(),
            closed: None,
        }
    }

    /// The consumer's budget, when its deliveries are taken and it is
    /// reached: the reader waits until bytes are released.
    fn full(&self) -> Option<&Arc<Budget>> {
        self.budget
            .as_ref()
            .filter(|b| self.deliveries.is_some() && b.exceeded())
    }
}

#[derive(Default)]
struct State {
    /// Why the connection is closed (or closing, when we asked).
    closed: Option<Error>,
    channels: Vec<Slot>,
}

/// The writing half of the socket and its buffer.
struct Writer {
    io: WriteHalf<Stream>,
    buf: Vec<u8>,
    /// Set while a write is under way: a write whose future was dropped
    /// part-way may have left half a frame, and nothing may follow it.
    broken: bool,
}

/// What the connection's users and its reader share.
struct Shared {
    state: Mutex<State>,
    writer: tokio::sync::Mutex<Writer>,
    /// Set when the reader has ended.
    done: tokio::sync::watch::Sender<bool>,
    /// When every wait on the broker must have ended (`None`: no bound).
    deadline: Mutex<Option<Instant>>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        // No code holding the lock can panic (the release profile aborts
        // anyway), so a poisoned lock still holds a consistent state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `wait`, or the connection ended as stalled when the deadline comes
    /// first: nothing more is sent on it, and every later call fails at
    /// once.
    async fn within_deadline<T>(
        &self,
        wait: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        let deadline = *self.deadline.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(at) = deadline else {
            return wait.await;
        };
        match tokio::time::timeout_at(at, wait).await {
            Ok(result) => result,
            Err(_) => {
                let why = Error::lost(
                    "the broker did not answer before the invocation's deadline (less half of DEADLINE_MARGIN_MS): the link to it stalled",
                );
                self.end(why.clone());
                Err(why)
            }
        }
    }

    /// Write `frames` and flush them, before the deadline.
    async fn send(&self, frames: &[AMQPFrame]) -> Result<(), Error> {
        self.within_deadline(self.write(frames)).await
    }

    /// Write `frames` and flush them.
    async fn write(&self, frames: &[AMQPFrame]) -> Result<(), Error> {
        let mut w = self.writer.lock().await;
        if w.broken {
            return Err(Error::lost(
                "the connection to the broker is unusable (a write was interrupted)",
            ));
        }
        let mut buf = std::mem::take(&mut w.buf);
        buf.clear();
        for f in frames {
            buf = wire::encode(f, buf)?;
        }
        w.broken = true;
        let result = async {
            w.io.write_all(&buf).await?;
            w.io.flush().await
        }
        .await;
        w.buf = buf;
        result.map_err(Error::io)?;
        w.broken = false;
        Ok(())
    }

    /// Apply `f` to channel `id`'s slot, if it has one.
    fn with_slot(&self, id: u16, f: impl FnOnce(&mut Slot)) {
        if let Some(slot) = self.state().channels.iter_mut().find(|s| s.id == id) {
            f(slot);
        }
    }

    /// The error a call on channel `id` gets: the channel's close, else the
    /// connection's.
    fn channel_error(&self, id: u16) -> Error {
        let state = self.state();
        state
            .channels
            .iter()
            .find(|s| s.id == id)
            .and_then(|s| s.closed.clone())
            .or_else(|| state.closed.clone())
            .unwrap_or_else(|| Error::lost("the channel is closed"))
    }

    /// The connection is over: remember why (unless a reason is already
    /// known) and end every channel's waits.
    fn end(&self, why: Error) {
        let mut state = self.state();
        let why = state.closed.get_or_insert(why).clone();
        for slot in &mut state.channels {
            slot.replies = None;
            slot.deliveries = None;
            slot.closed.get_or_insert_with(|| why.clone());
        }
    }

    /// A consumer's budget that is reached, if one is: the reader must not
    /// read until bytes are released.
    fn full_budget(&self) -> Option<Arc<Budget>> {
        self.state().channels.iter().find_map(|s| s.full().cloned())
    }
}

/// An open connection. Dropping it ends its reader and the socket.
pub struct Connection {
    shared: Arc<Shared>,
    reader: JoinHandle<()>,
    channel_max: u16,
    next_channel: AtomicU16,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Connection {
    /// Whether the connection is open (not closed by either side, not lost).
    pub fn connected(&self) -> bool {
        self.shared.state().closed.is_none()
    }

    /// Open a new channel.
    pub async fn create_channel(&self) -> Result<Channel, Error> {
        let id = self.next_channel.fetch_add(1, Ordering::Relaxed);
        if id == 0 || id > self.channel_max {
            return Err(Error::protocol(format!(
                "no channel left (the broker allows {})",
                self.channel_max
            )));
        }
        let (tx, rx) = unbounded_channel();
        {
            let mut state = self.shared.state();
            if let Some(e) = &state.closed {
                return Err(e.clone());
            }
            state.channels.push(Slot::new(id, tx));
        }
        let channel = Channel {
            id,
            shared: self.shared.clone(),
            replies: tokio::sync::Mutex::new(rx),
        };
        let open = AMQPClass::Channel(channel_methods::AMQPMethod::Open(channel_methods::Open {}));
        match channel.call(open).await? {
            Reply::Method(AMQPClass::Channel(channel_methods::AMQPMethod::OpenOk(_))) => {
                Ok(channel)
            }
            _ => Err(unexpected("channel.open-ok")),
        }
    }

    /// `connection.close`, and up to a second for the broker's `close-ok`
    /// (the broker requeues whatever was delivered and not settled).
    pub async fn close(&self) -> Result<(), Error> {
        {
            let mut state = self.shared.state();
            if let Some(e) = &state.closed {
                return Err(e.clone());
            }
            state.closed = Some(Error::lost("the connection was closed by this function"));
        }
        let close = connection::Close {
            reply_code: 200,
            reply_text: "OK".into(),
            class_id: 0,
            method_id: 0,
        };
        self.shared
            .send(&[AMQPFrame::Method(
                0,
                AMQPClass::Connection(connection::AMQPMethod::Close(close)),
            )])
            .await?;
        // The reader ends at the broker's close-ok (or the socket's end);
        // then the socket is shut down (with TLS, its `close_notify`).
        let mut done = self.shared.done.subscribe();
        let _ = self
            .shared
            .within_deadline(async {
                let _ = tokio::time::timeout(Duration::from_secs(1), async {
                    let _ = done.wait_for(|d| *d).await;
                    let _ = self.shared.writer.lock().await.io.shutdown().await;
                })
                .await;
                Ok(())
            })
            .await;
        Ok(())
    }

    /// Bound every later wait on the broker (calls, acks, closes) by `at`:
    /// when the link stalls, the wait ends there, with an error, and the
    /// connection is given up (the broker requeues what was not settled).
    pub fn set_deadline(&self, at: Option<Instant>) {
        *self
            .shared
            .deadline
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = at;
    }
}

fn unexpected(expected: &str) -> Error {
    Error::protocol(format!("the broker did not answer with {expected}"))
}

#[cfg(test)]
pub(crate) mod tests;
