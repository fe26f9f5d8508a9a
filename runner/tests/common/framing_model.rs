//! A reference model of the framing reader and a reader that hands its bytes out in arbitrary
//! pieces, for the property tests and the `framing` fuzz target (which includes this file by path).

#![allow(dead_code, clippy::missing_panics_doc, clippy::must_use_candidate)]

use std::pin::Pin;
use std::task::{Context, Poll};

use acp_facade::fuzzing::{Frame, LineReader};
use tokio::io::{AsyncBufRead, AsyncRead, ReadBuf};

/// The frames `data` must yield with limit `max`, by the framing rules: a frame is the bytes up to
/// a `\n` (a final unterminated line counts) with one trailing `\r` stripped; a line longer than
/// `max` is `Oversize` with its length (with the `\r` when that alone makes it too long); then `Eof`.
pub fn expected_frames(data: &[u8], max: usize) -> Vec<Frame> {
    let mut frames = Vec::new();
    let mut segments: Vec<&[u8]> = data.split(|b| *b == b'\n').collect();
    if segments.last().is_some_and(|last| last.is_empty()) {
        segments.pop();
    }
    for segment in segments {
        if segment.len() > max.saturating_add(1) {
            frames.push(Frame::Oversize { len: segment.len() });
            continue;
        }
        let line = segment.strip_suffix(b"\r").unwrap_or(segment);
        if line.len() > max {
            frames.push(Frame::Oversize { len: line.len() });
        } else {
            frames.push(Frame::Line(line.to_vec()));
        }
    }
    frames.push(Frame::Eof);
    frames
}

/// An [`AsyncBufRead`] over `data` that offers at most `sizes[i]` bytes at its i-th fill (cycling
/// through `sizes`; a 0 becomes 1), and first answers `Pending` on the fills `pending` selects.
pub struct Chunked {
    data: Vec<u8>,
    pos: usize,
    /// End of the piece currently offered.
    piece_end: usize,
    sizes: Vec<usize>,
    fills: usize,
    pending: Vec<bool>,
    woken: bool,
}

impl Chunked {
    pub fn new(data: Vec<u8>, sizes: Vec<usize>, pending: Vec<bool>) -> Self {
        let sizes = if sizes.is_empty() { vec![usize::MAX] } else { sizes };
        Self { data, pos: 0, piece_end: 0, sizes, fills: 0, pending, woken: false }
    }
}

impl AsyncRead for Chunked {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let available = match self.as_mut().poll_fill_buf(cx) {
            Poll::Ready(Ok(available)) => available,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return Poll::Pending,
        };
        let n = available.len().min(buf.remaining());
        buf.put_slice(&available[..n]);
        self.consume(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncBufRead for Chunked {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.pos >= this.piece_end {
            if !this.woken && !this.pending.is_empty() && this.pending[this.fills % this.pending.len()] {
                this.woken = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            this.woken = false;
            let size = this.sizes[this.fills % this.sizes.len()].max(1);
            this.fills += 1;
            this.piece_end = this.pos.saturating_add(size).min(this.data.len());
        }
        Poll::Ready(Ok(&this.data[this.pos..this.piece_end]))
    }

    fn consume(self: Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        this.pos = (this.pos + amt).min(this.piece_end);
    }
}

/// Reads every frame of `data` through [`LineReader`] with limit `max`, in pieces of `sizes`,
/// checks them against [`expected_frames`] and the framing invariants, and returns the frames.
/// Panics on any difference, or when EOF does not terminate the reading.
pub fn check_framing(data: &[u8], max: usize, sizes: Vec<usize>, pending: Vec<bool>) -> Vec<Frame> {
    let expected = expected_frames(data, max);
    let reader = Chunked::new(data.to_vec(), sizes, pending);
    let mut lines = LineReader::new(reader, max);
    let mut frames = Vec::new();
    futures::executor::block_on(async {
        // Every frame consumes at least one byte, so there are at most len + 1 of them.
        for _ in 0..=data.len() + 1 {
            let frame = lines.next_frame().await.expect("reading memory cannot fail");
            let eof = frame == Frame::Eof;
            match &frame {
                Frame::Line(line) => assert!(line.len() <= max, "a frame of {} bytes over the limit {max}", line.len()),
                Frame::Oversize { len } => assert!(*len > max, "Oversize of {len} bytes within the limit {max}"),
                Frame::Eof => {}
            }
            frames.push(frame);
            if eof {
                // EOF is final.
                assert_eq!(lines.next_frame().await.expect("reading memory cannot fail"), Frame::Eof);
                return;
            }
        }
        panic!("EOF did not terminate the reading: {frames:?}");
    });
    assert_eq!(frames, expected, "input {:?} with limit {max}", String::from_utf8_lossy(data));
    frames
}
