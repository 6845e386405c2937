//! Opening a connection: the socket ([`super::socket`]), and the AMQP
//! handshake (protocol header, `start`/`start-ok` with a PLAIN login,
//! `tune`/`tune-ok`, `open`/`open-ok`), read and written here before the
//! reader takes the socket over.

use std::sync::atomic::AtomicU16;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use amq_protocol::frame::{AMQPFrame, ProtocolVersion};
use amq_protocol::protocol::{AMQPClass, connection};
use amq_protocol::types::{AMQPValue, FieldTable, LongString};
use amq_protocol::uri::{AMQPUri, SASLMechanism};
use tokio::io::AsyncWriteExt;

use super::reader::Reader;
use super::socket::{self, Stream};
use super::wire::{FRAME_MIN, ReadBuf, encode};
use super::{Connection, Error, ErrorKind, Shared, State, Writer};

/// The frame size this client asks for when the broker sets no limit
/// (the broker's default). Otherwise it takes the broker's own, unless the
/// URL asks for less (`?frame_max=`): a content header is never split, so
/// a smaller one only splits bodies into more frames (it is no bound on
/// what arrives: see [`ReadBuf::set_frame_max`]).
const FRAME_MAX: u32 = 131_072;

/// Connect to the broker `uri` names and log in; the connection is named
/// `name` (as `rabbitmqctl list_connections` shows it). The caller bounds
/// the time it takes.
pub async fn open(uri: &AMQPUri, name: &str) -> Result<Connection, Error> {
    if !matches!(uri.query.auth_mechanism, None | Some(SASLMechanism::Plain)) {
        return Err(Error::protocol(format!(
            "auth_mechanism={:?} is not supported: only PLAIN (the default) is",
            uri.query.auth_mechanism
        )));
    }
    let mut io = socket::connect(uri).await?;
    let mut buf = ReadBuf::new();
    let (tune, channel_max) = handshake(&mut io, &mut buf, uri, name).await?;
    let heartbeat = (tune.heartbeat > 0).then(|| Duration::from_secs(u64::from(tune.heartbeat)));
    let (read, write) = tokio::io::split(io);
    let shared = Arc::new(Shared {
        state: Mutex::new(State::default()),
        writer: tokio::sync::Mutex::new(Writer {
            io: write,
            buf: Vec::with_capacity(4096),
            broken: false,
        }),
        done: tokio::sync::watch::Sender::new(false),
        deadline: Mutex::new(None),
    });
    let reader = tokio::spawn(Reader::new(read, buf, shared.clone(), heartbeat).run());
    Ok(Connection {
        shared,
        reader,
        channel_max,
        next_channel: AtomicU16::new(1),
    })
}

/// Either side's limit: the smaller, where 0 (no limit) gives way.
pub(super) fn negotiate<T: Copy + Ord + Default>(ours: T, theirs: T) -> T {
    let zero = T::default();
    match (ours == zero, theirs == zero) {
        (true, _) => theirs,
        (_, true) => ours,
        _ => ours.min(theirs),
    }
}

/// The handshake, up to `open-ok`: the tuning agreed and the channels
/// allowed.
pub(super) async fn handshake(
    io: &mut Stream,
    buf: &mut ReadBuf,
    uri: &AMQPUri,
    name: &str,
) -> Result<(connection::TuneOk, u16), Error> {
    use connection::AMQPMethod as C;
    write(
        io,
        &AMQPFrame::ProtocolHeader(ProtocolVersion::amqp_0_9_1()),
    )
    .await?;
    let start = match method(io, buf).await? {
        AMQPClass::Connection(C::Start(s)) => s,
        _ => return Err(super::unexpected("connection.start")),
    };
    let mechanisms = String::from_utf8_lossy(start.mechanisms.as_bytes()).into_owned();
    if !mechanisms.split_whitespace().any(|m| m == "PLAIN") {
        return Err(Error::protocol(format!(
            "the broker does not offer PLAIN login (it offers {mechanisms:?})"
        )));
    }
    let user = &uri.authority.userinfo;
    let start_ok = connection::StartOk {
        client_properties: client_properties(name),
        mechanism: "PLAIN".into(),
        response: LongString::from(format!("\0{}\0{}", user.username, user.password)),
        locale: "en_US".into(),
    };
    write(
        io,
        &AMQPFrame::Method(0, AMQPClass::Connection(C::StartOk(start_ok))),
    )
    .await?;
    let tune = match method(io, buf).await? {
        AMQPClass::Connection(C::Tune(t)) => t,
        AMQPClass::Connection(C::Secure(_)) => {
            return Err(Error::protocol(
                "the broker asked for a SASL challenge, which PLAIN does not have".into(),
            ));
        }
        _ => return Err(super::unexpected("connection.tune")),
    };
    let channel_max = negotiate(uri.query.channel_max.unwrap_or(0), tune.channel_max);
    let frame_max = match negotiate(uri.query.frame_max.unwrap_or(0), tune.frame_max) {
        0 => FRAME_MAX,
        agreed => agreed,
    }
    .max(FRAME_MIN);
    let tune_ok = connection::TuneOk {
        channel_max,
        frame_max,
        heartbeat: negotiate(uri.query.heartbeat.unwrap_or(0), tune.heartbeat),
    };
    buf.set_frame_max(frame_max, tune.frame_max);
    let open = connection::Open {
        virtual_host: uri.vhost.as_str().into(),
    };
    write(
        io,
        &AMQPFrame::Method(0, AMQPClass::Connection(C::TuneOk(tune_ok.clone()))),
    )
    .await?;
    write(
        io,
        &AMQPFrame::Method(0, AMQPClass::Connection(C::Open(open))),
    )
    .await?;
    match method(io, buf).await? {
        AMQPClass::Connection(C::OpenOk(_)) => {}
        _ => return Err(super::unexpected("connection.open-ok")),
    }
    Ok((
        tune_ok,
        if channel_max == 0 {
            u16::MAX
        } else {
            channel_max
        },
    ))
}

/// What this client tells the broker about itself: its connection's name,
/// and that it understands the broker's login refusal, consumer
/// cancellation and `basic.nack`.
fn client_properties(name: &str) -> FieldTable {
    let mut capabilities = FieldTable::default();
    for c in [
        "authentication_failure_close",
        "consumer_cancel_notify",
        "basic.nack",
        "connection.blocked",
    ] {
        capabilities.insert(c.into(), AMQPValue::Boolean(true));
    }
    let mut props = FieldTable::default();
    props.insert("connection_name".into(), AMQPValue::LongString(name.into()));
    props.insert(
        "product".into(),
        AMQPValue::LongString("sqs-forwarder rabbitmq-to-sqs".into()),
    );
    props.insert(
        "version".into(),
        AMQPValue::LongString(env!("CARGO_PKG_VERSION").into()),
    );
    props.insert("capabilities".into(), AMQPValue::FieldTable(capabilities));
    props
}

async fn write(io: &mut Stream, frame: &AMQPFrame) -> Result<(), Error> {
    let bytes = encode(frame, Vec::new())?;
    io.write_all(&bytes).await.map_err(Error::io)?;
    io.flush().await.map_err(Error::io)
}

/// The next method on channel 0 during the handshake (heartbeats skipped).
/// The broker's `connection.close` (a refused login, a vhost the user may
/// not open) is the error it says; a socket closed without one is a login
/// refused by a broker that does not say so.
async fn method(io: &mut Stream, buf: &mut ReadBuf) -> Result<AMQPClass, Error> {
    use connection::AMQPMethod as C;
    loop {
        while let Some(frame) = buf.next_frame()? {
            match frame {
                AMQPFrame::Heartbeat => {}
                AMQPFrame::Method(0, AMQPClass::Connection(C::Close(c))) => {
                    let ok = AMQPClass::Connection(C::CloseOk(connection::CloseOk {}));
                    let _ = write(io, &AMQPFrame::Method(0, ok)).await;
                    return Err(Error::refused_at_open(c.reply_code, c.reply_text.as_str()));
                }
                AMQPFrame::Method(0, m) => return Ok(m),
                AMQPFrame::ProtocolHeader(v) => {
                    return Err(Error::protocol(format!(
                        "the broker speaks AMQP {}-{}-{}, not 0-9-1",
                        v.major, v.minor, v.revision
                    )));
                }
                other => {
                    return Err(Error::protocol(format!(
                        "the broker sent {other:?} during the handshake"
                    )));
                }
            }
        }
        if buf.fill(io).await? == 0 {
            return Err(Error {
                kind: ErrorKind::Io,
                text: "the broker closed the connection during the handshake".into(),
            });
        }
    }
}
