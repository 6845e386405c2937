//! Frames on the wire: amq-protocol's parser over a read buffer that keeps
//! a partial frame until the rest arrives, and its generator into a write
//! buffer. A delivery's frame the parser refuses is read tolerantly
//! ([`mend`]), and what that found is kept for the reader ([`Notes`]).

use amq_protocol::frame::{AMQPFrame, WriteContext, gen_frame, parse_frame};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::Error;
use super::layout::{self, BODY, HEADER};
use super::mend::{self, Notes};
use super::octets::u32_at;

/// How much room a read asks for at least.
const READ_CHUNK: usize = 64 * 1024;

/// The frame size every peer must accept before tuning (AMQP 0-9-1's
/// `frame-min-size`), and this client's default: the broker's.
pub(super) const FRAME_MIN: u32 = 4096;

/// The largest content header taken from a broker that sets no frame size
/// limit (RabbitMQ's `frame_max = 0`).
const HEADER_MAX_UNLIMITED: usize = 16 * 1024 * 1024;

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
    /// The largest content header frame the broker may send: the broker
    /// never splits a content header, so it is bounded only by the
    /// broker's own frame size, whatever this client agreed.
    max_header: usize,
    /// What reading the last frame returned found beyond the frame, when
    /// it was read tolerantly.
    notes: Option<Notes>,
}

impl ReadBuf {
    pub(super) fn new() -> Self {
        ReadBuf {
            buf: Vec::with_capacity(READ_CHUNK),
            start: 0,
            max_frame: 128 * 1024,
            max_header: 128 * 1024,
            notes: None,
        }
    }

    /// What the last frame returned carried beyond what the codec reads
    /// (short strings that are not UTF-8, a fault), when it was read
    /// tolerantly.
    pub(super) fn take_notes(&mut self) -> Option<Notes> {
        self.notes.take()
    }

    /// The frame size agreed with the broker, and the broker's own (`0`:
    /// none set), which bounds its content headers.
    pub(super) fn set_frame_max(&mut self, agreed: u32, brokers: u32) {
        let size = |n: u32| usize::try_from(n).unwrap_or(usize::MAX);
        self.max_frame = size(agreed.max(FRAME_MIN));
        self.max_header = match brokers {
            0 => HEADER_MAX_UNLIMITED,
            n => size(n),
        }
        .max(self.max_frame);
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
        let mut whole = None;
        if matches!(data[0], 1 | 2 | 3 | 8)
            && let Some(size) = u32_at(data, 3)
        {
            let total = size.saturating_add(FRAME_OVERHEAD);
            let max = if data[0] == HEADER {
                self.max_header
            } else {
                self.max_frame
            };
            if total > max {
                return Err(Error::protocol(format!(
                    "the broker sent a frame of {total} bytes, over the {max} agreed"
                )));
            }
            whole = data.get(..total);
        }
        if let Some(frame) = whole {
            // A body is copied out at once (the parser would collect it
            // octet by octet).
            if frame[0] == BODY
                && let (Some(payload), Some(ch)) = (layout::body(frame), layout::channel(frame))
            {
                let body = AMQPFrame::Body(ch, payload.to_vec());
                self.consume(frame.len());
                return Ok(Some(body));
            }
            // A content header whose headers nest too deep for the parser
            // is parsed without them.
            if frame[0] == HEADER
                && let Some((parsed, notes)) = mend::deep_headers(frame)
            {
                let n = frame.len();
                self.consume(n);
                self.notes = Some(notes);
                return Ok(Some(parsed));
            }
        }
        match parse_frame(data) {
            Ok((rest, frame)) => {
                self.consume(data.len() - rest.len());
                Ok(Some(frame))
            }
            Err(e) if e.is_incomplete() => Ok(None),
            Err(e) => match whole.and_then(mend::mend) {
                Some((parsed, notes)) => {
                    let n = whole.map_or(0, <[u8]>::len);
                    self.consume(n);
                    self.notes = Some(notes);
                    Ok(Some(parsed))
                }
                None => Err(unparsable(e)),
            },
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
