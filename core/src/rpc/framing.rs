//! Newline-delimited framing with a size limit enforced while reading.
//!
//! A frame is the bytes up to (not including) a `\n`; a trailing `\r` is stripped. A frame longer
//! than the limit is never buffered whole: once the limit is passed the reader stops copying and
//! skips to the next newline, then reports [`Frame::Oversize`]. Memory therefore stays bounded by
//! the limit whatever the peer sends.

// Public (not `pub(crate)`) for the `fuzzing` feature, which re-exports what the fuzz targets and
// property tests drive directly; without it nothing outside the crate can reach this module.
#![cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The default largest message accepted: 64 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 64 * 1024 * 1024;

/// One result of [`LineReader::next_frame`].
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line (without its terminator).
    Line(Vec<u8>),
    /// A line longer than the limit was skipped; `len` bytes were discarded.
    Oversize {
        /// How many bytes the skipped line had (at least the limit plus one).
        len: usize,
    },
    /// The peer closed the stream.
    Eof,
}

/// Reads newline-delimited frames from a buffered reader.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    max: usize,
    buf: Vec<u8>,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// Wraps `inner`, accepting lines of at most `max` bytes.
    pub fn new(inner: R, max: usize) -> Self {
        Self { inner, max, buf: Vec::new() }
    }

    /// Reads the next frame. A final line without a terminator before EOF is still a line.
    pub async fn next_frame(&mut self) -> std::io::Result<Frame> {
        self.buf.clear();
        let mut skipped: Option<usize> = None;
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                return Ok(match skipped {
                    Some(len) => Frame::Oversize { len },
                    None if self.buf.is_empty() => Frame::Eof,
                    // A final line without its `\n` obeys the same limit as any other.
                    None => self.finish_line(),
                });
            }
            // The portable word-at-a-time search: it needs no CPU feature detection at start-up
            // (which a VM traps, at a cost of tens of microseconds) and keeps up with long lines.
            let newline = memchr::arch::all::memchr::One::new(b'\n').find(available);
            let chunk_len = newline.unwrap_or(available.len());
            if let Some(len) = skipped.as_mut() {
                *len += chunk_len;
            } else if self.buf.len() + chunk_len > self.max.saturating_add(1) {
                // Past the limit (one spare byte for a `\r`): stop copying, count the rest.
                skipped = Some(self.buf.len() + chunk_len);
                self.buf = Vec::new();
            } else {
                self.buf.extend_from_slice(&available[..chunk_len]);
            }
            let consumed = newline.map_or(chunk_len, |n| n + 1);
            self.inner.consume(consumed);
            if newline.is_some() {
                if let Some(len) = skipped {
                    return Ok(Frame::Oversize { len });
                }
                return Ok(self.finish_line());
            }
        }
    }

    /// The buffered line as a frame: the buffer may hold one byte over the limit (room for a
    /// `\r`), so the limit is checked again once the `\r` is stripped.
    fn finish_line(&mut self) -> Frame {
        let line = self.take_line();
        if line.len() > self.max { Frame::Oversize { len: line.len() } } else { Frame::Line(line) }
    }

    fn take_line(&mut self) -> Vec<u8> {
        if self.buf.ends_with(b"\r") {
            self.buf.pop();
        }
        // Hand the bytes over and start the next line with a buffer of a modest size, so one
        // large message does not pin its capacity for the life of the connection.
        let capacity = self.buf.len().min(64 * 1024);
        std::mem::replace(&mut self.buf, Vec::with_capacity(capacity))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        loop {
            let frame = reader.next_frame().await.unwrap();
            let eof = frame == Frame::Eof;
            out.push(frame);
            if eof {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn splits_lines_and_strips_cr() {
        let got = frames(b"a\r\nbc\n\nlast", 10).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"a".to_vec()),
                Frame::Line(b"bc".to_vec()),
                Frame::Line(Vec::new()),
                Frame::Line(b"last".to_vec()),
                Frame::Eof
            ]
        );
    }

    #[tokio::test]
    async fn oversize_line_is_skipped_and_reading_goes_on() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\nok\n");
        let got = frames(&input, 10).await;
        assert_eq!(got, vec![Frame::Oversize { len: 100 }, Frame::Line(b"ok".to_vec()), Frame::Eof]);
    }

    #[tokio::test]
    async fn exactly_the_limit_is_accepted() {
        let got = frames(b"0123456789\n0123456789\r\n01234567890\n", 10).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"0123456789".to_vec()),
                Frame::Line(b"0123456789".to_vec()),
                Frame::Oversize { len: 11 },
                Frame::Eof
            ]
        );
    }

    #[tokio::test]
    async fn a_final_unterminated_line_obeys_the_limit() {
        // Found by the `framing` fuzz target: one byte over the limit with no `\n` before EOF was
        // handed out as a line (the spare byte kept for a `\r` was never checked at EOF).
        assert_eq!(frames(b"01234567890", 10).await, vec![Frame::Oversize { len: 11 }, Frame::Eof]);
        assert_eq!(frames(b"0123456789\r", 10).await, vec![Frame::Line(b"0123456789".to_vec()), Frame::Eof]);
        assert_eq!(
            frames(b"ok\n0123456789x", 10).await,
            vec![Frame::Line(b"ok".to_vec()), Frame::Oversize { len: 11 }, Frame::Eof]
        );
    }

    #[tokio::test]
    async fn oversize_is_detected_across_small_reads() {
        // A BufReader with a tiny buffer forces the line to arrive in many pieces.
        let mut data = vec![b'y'; 1000];
        data.push(b'\n');
        let reader = tokio::io::BufReader::with_capacity(7, &data[..]);
        let mut lines = LineReader::new(reader, 50);
        assert_eq!(lines.next_frame().await.unwrap(), Frame::Oversize { len: 1000 });
        assert_eq!(lines.next_frame().await.unwrap(), Frame::Eof);
    }
}
