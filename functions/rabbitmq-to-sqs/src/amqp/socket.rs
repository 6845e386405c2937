//! The socket to the broker: TCP, and TLS for `amqps://` (rustls with the
//! system's roots, one configuration per process so that the next
//! invocation's connection resumes the session).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use amq_protocol::uri::{AMQPScheme, AMQPUri};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::Error;

/// The socket, plain or TLS.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}
pub(crate) type Stream = Box<dyn Io>;

/// Connect to the broker `uri` names: TCP, then TLS for `amqps://`. The
/// URL's `connection_timeout` (ms) bounds the TCP connect; the caller
/// bounds the whole.
pub(super) async fn connect(uri: &AMQPUri) -> Result<Stream, Error> {
    let host = uri
        .authority
        .host
        .trim_start_matches('[')
        .trim_end_matches(']');
    let connect = TcpStream::connect((host, uri.authority.port));
    // The URL's `connection_timeout` (ms) bounds the TCP connect; the
    // caller bounds the whole handshake.
    let tcp = match uri.query.connection_timeout {
        Some(ms) => tokio::time::timeout(Duration::from_millis(ms), connect)
            .await
            .map_err(|_| Error::lost(&format!("no TCP connection within {ms} ms")))?,
        None => connect.await,
    }
    .map_err(Error::io)?;
    tcp.set_nodelay(true).map_err(Error::io)?;
    let io: Stream = if uri.scheme == AMQPScheme::AMQPS {
        let config = tls_config()?;
        let server = rustls::pki_types::ServerName::try_from(host.to_owned())
            .map_err(|e| Error::protocol(format!("TLS: {host:?} is not a server name: {e}")))?;
        let tls = tokio_rustls::TlsConnector::from(config)
            .connect(server, tcp)
            .await
            .map_err(|e| Error::lost(&format!("TLS handshake with the broker: {e}")))?;
        Box::new(tls)
    } else {
        Box::new(tcp)
    };
    Ok(io)
}

/// The TLS configuration, made once per process: its session cache lets
/// the next invocation's connection resume the session.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, Error> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    if let Some(c) = CONFIG.get() {
        return Ok(c.clone());
    }
    let config = sqs_forwarder::call::direct::system_tls_config()
        .map_err(|e| Error::protocol(format!("TLS: the root certificates: {e}")))?;
    Ok(CONFIG.get_or_init(|| config).clone())
}
