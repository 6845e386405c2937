//! Frames on the wire: amq-protocol's parser over a read buffer that keeps
//! a partial frame until the rest arrives, and its generator into a write
//! buffer.

use amq_protocol::frame::{AMQPFrame, WriteContext, gen_frame, parse_frame};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::{Error, nesting};

/// How much room a read asks for at least.
const READ_CHUNK: usize = 64 * 1024;

/// The frame size every peer must accept before tuning (AMQP 0-9-1's
/// `frame-min-size`), and this client's default: the broker's.
pub(super) const FRAME_MIN: u32 = 4096;

/// A frame's type, channel and size come before its payload; its end
/// octet after.
const FRAME_OVERHEAD: usize = 8;

/// Bytes read from the broker and not yet parsed.
pub(super) struct ReadBuf {
    buf: Vec<u8>,
    /// Where the unparsed bytes begin.
    start: usize,
    /// The largest frame the broker may send (header and end included).
    max_frame: usize,
    /// How deep the headers nested of the last content header returned,
    /// when they were left out for nesting too deep.
    cut: Option<usize>,
}

impl ReadBuf {
    pub(super) fn new() -> Self {
        ReadBuf {
            buf: Vec::with_capacity(READ_CHUNK),
            start: 0,
            max_frame: 128 * 1024,
            cut: None,
        }
    }

    /// Whether the last frame returned was a content header whose headers
    /// were left out, nesting this deep ([`nesting`]).
    pub(super) fn take_cut(&mut self) -> Option<usize> {
        self.cut.take()
    }

    /// The frame size agreed with the broker (`0`: none set).
    pub(super) fn set_frame_max(&mut self, frame_max: u32) {
        let max = if frame_max == 0 {
            u32::MAX
        } else {
            frame_max.max(FRAME_MIN)
        };
        self.max_frame = usize::try_from(max).unwrap_or(usize::MAX);
    }

    /// The next whole frame, taken from the buffer; `None` until all of it
    /// has arrived.
    pub(super) fn next_frame(&mut self) -> Result<Option<AMQPFrame>, Error> {
        let data = &self.buf[self.start..];
        if data.is_empty() {
            return Ok(None);
        }
        // A frame larger than agreed is refused before it is buffered whole
        // (its size is in octets 3 to 6, after its type: method 1, header 2,
        // body 3, heartbeat 8; anything else is left to the parser).
        if matches!(data[0], 1 | 2 | 3 | 8)
            && let Some(size) = u32_at(data, 3)
        {
            let total = size.saturating_add(FRAME_OVERHEAD);
            if total > self.max_frame {
                return Err(Error::protocol(format!(
                    "the broker sent a frame of {total} bytes, over the {} agreed",
                    self.max_frame
                )));
            }
            // A content header whose headers nest too deep for the parser
            // is parsed without them.
            if data[0] == 2
                && let Some(whole) = data.get(..total)
                && let Some((depth, frame)) = nesting::without_headers(whole)
            {
                let (_, parsed) = parse_frame(frame.as_slice()).map_err(unparsable)?;
                self.consume(total);
                self.cut = Some(depth);
                return Ok(Some(parsed));
            }
        }
        match parse_frame(data) {
            Ok((rest, frame)) => {
                self.consume(data.len() - rest.len());
                Ok(Some(frame))
            }
            Err(e) if e.is_incomplete() => Ok(None),
            Err(e) => Err(unparsable(e)),
        }
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
    }

    /// Read more from `io`; `0` when the broker closed the socket.
    /// Cancel-safe: the only await reads into the buffer's spare room.
    pub(super) async fn fill<R: AsyncRead + Unpin>(&mut self, io: &mut R) -> Result<usize, Error> {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.reserve(READ_CHUNK);
        io.read_buf(&mut self.buf).await.map_err(Error::io)
    }
}

/// The big-endian 32-bit length at `at` in `bytes`, if they hold it.
pub(super) fn u32_at(bytes: &[u8], at: usize) -> Option<usize> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    usize::try_from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])).ok()
}

fn unparsable(e: impl std::fmt::Display) -> Error {
    Error::protocol(format!("the broker sent a frame that does not parse ({e})"))
}

/// Append `frame`'s bytes to `out`.
pub(super) fn encode(frame: &AMQPFrame, out: Vec<u8>) -> Result<Vec<u8>, Error> {
    gen_frame(frame)(WriteContext::from(out))
        .map(|ctx| ctx.write)
        .map_err(|e| Error::protocol(format!("encoding a frame: {e:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use amq_protocol::protocol::{AMQPClass, basic};

    fn ack(tag: u64) -> AMQPFrame {
        AMQPFrame::Method(
            1,
            AMQPClass::Basic(basic::AMQPMethod::Ack(basic::Ack {
                delivery_tag: tag,
                multiple: true,
            })),
        )
    }

    #[tokio::test]
    async fn a_frame_split_across_reads_is_taken_whole() {
        let mut bytes = encode(&ack(7), Vec::new()).unwrap();
        bytes = encode(&AMQPFrame::Heartbeat, bytes).unwrap();
        bytes = encode(&ack(8), bytes).unwrap();
        let mut rb = ReadBuf::new();
        let mut got = Vec::new();
        // One byte per read: every frame is incomplete until its last byte.
        for b in &bytes {
            let mut one: &[u8] = std::slice::from_ref(b);
            assert_eq!(rb.fill(&mut one).await.unwrap(), 1);
            while let Some(f) = rb.next_frame().unwrap() {
                got.push(f);
            }
        }
        assert_eq!(got, vec![ack(7), AMQPFrame::Heartbeat, ack(8)]);
        let mut empty: &[u8] = &[];
        assert_eq!(rb.fill(&mut empty).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn garbage_is_a_protocol_error_not_a_panic() {
        let mut rb = ReadBuf::new();
        let mut junk: &[u8] = b"\x09\x00\x01\x00\x00\x00\x00\xce";
        rb.fill(&mut junk).await.unwrap();
        let e = rb.next_frame().unwrap_err();
        assert!(e.to_string().contains("does not parse"), "{e}");
    }
}
