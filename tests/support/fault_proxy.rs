//! A TCP proxy of the tests' own, between a client and a server (the
//! broker, or the local SQS), that injects the faults a real network and a
//! real publisher bring:
//!
//! * [`Mode::Stall`]: every byte stops crossing, both ways, and no socket
//!   closes: a link that stopped forwarding (a dead NAT entry, a frozen
//!   host);
//! * [`Mode::Refuse`]: every connection, open or new, is closed at once: a
//!   server that cannot be reached;
//! * rewrites ([`FaultProxy::rewrite`]): octets the client sends are
//!   replaced by others of the same length on their way to the server, so a
//!   test publishes, through a client that writes only UTF-8, the non-UTF-8
//!   short strings other clients send.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Octets to replace in what clients send, and their replacements.
type Rewrites = Arc<Mutex<Vec<(Vec<u8>, Vec<u8>)>>>;

/// What the proxy does with the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Forward everything.
    Pass,
    /// Forward nothing, close nothing.
    Stall,
    /// Close every connection at once, and each new one as it comes.
    Refuse,
}

/// A running proxy; it stops when dropped.
pub struct FaultProxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    mode: watch::Sender<Mode>,
    rewrites: Rewrites,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FaultProxy {
    /// A proxy to `upstream` on a free port of 127.0.0.1, passing all.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (mode, _) = watch::channel(Mode::Pass);
        let rewrites: Rewrites = Arc::default();
        let (m, r) = (mode.clone(), rewrites.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if *m.borrow() == Mode::Refuse {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                tokio::spawn(pipe(cr, sw, m.subscribe(), Some(r.clone())));
                tokio::spawn(pipe(sr, cw, m.subscribe(), None));
            }
        });
        FaultProxy {
            addr,
            mode,
            rewrites,
            task,
        }
    }

    /// Set the mode.
    pub fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }

    /// Replace `from` by `to` (the same length) in what clients send.
    pub fn rewrite(&self, from: &[u8], to: &[u8]) {
        assert_eq!(from.len(), to.len(), "a rewrite keeps the length");
        self.rewrites
            .lock()
            .expect("rewrites")
            .push((from.to_vec(), to.to_vec()));
    }
}

/// Copy `from` to `to` while the mode allows, rewriting what `rewrites`
/// says. A marker split across two reads is still found: bytes at the end
/// of a read that begin a marker wait up to a millisecond for the rest.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut mode: watch::Receiver<Mode>,
    rewrites: Option<Rewrites>,
) {
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // Stalled: wait until the mode changes, reading and writing nothing.
        loop {
            let now = *mode.borrow_and_update();
            match now {
                Mode::Pass => break,
                Mode::Refuse => return,
                Mode::Stall => {
                    if mode.changed().await.is_err() {
                        return;
                    }
                }
            }
        }
        let wait = if pending.is_empty() {
            std::time::Duration::from_secs(3600)
        } else {
            std::time::Duration::from_millis(1)
        };
        let n = tokio::select! {
            r = tokio::time::timeout(wait, from.read(&mut buf)) => match r {
                Err(_) => 0,
                Ok(Ok(0) | Err(_)) => {
                    let _ = to.write_all(&pending).await;
                    return;
                }
                Ok(Ok(n)) => n,
            },
            changed = mode.changed() => {
                if changed.is_err() {
                    return;
                }
                continue;
            }
        };
        pending.extend_from_slice(&buf[..n]);
        // The read and a change of mode can be ready together, and select!
        // may take the read: what was read crosses only if the link still
        // passes, so nothing crosses once a stall or a refusal is set.
        match *mode.borrow() {
            Mode::Pass => {}
            Mode::Refuse => return,
            Mode::Stall => continue,
        }
        let mut keep = 0;
        if n > 0
            && let Some(rw) = &rewrites
        {
            let rw = rw.lock().expect("rewrites").clone();
            for (marker, with) in &rw {
                let mut at = 0;
                while let Some(i) = pending[at..]
                    .windows(marker.len())
                    .position(|w| w == marker.as_slice())
                {
                    pending[at + i..at + i + with.len()].copy_from_slice(with);
                    at += i + with.len();
                }
                // The longest end of what is pending that begins a marker.
                for k in (1..marker.len().min(pending.len() + 1)).rev() {
                    if pending[pending.len() - k..] == marker[..k] {
                        keep = keep.max(k);
                        break;
                    }
                }
            }
        }
        let send = pending.len() - keep;
        if to.write_all(&pending[..send]).await.is_err() {
            return;
        }
        pending.drain(..send);
    }
}
