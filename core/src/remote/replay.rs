//! What an SSE stream delivered lately, kept for a client that reopens the stream with
//! `Last-Event-ID` (the draft RFD "durable-resumable-http-transport"): a stream cut between the
//! server's write and the client's read loses nothing, and the client gets nothing twice.
//!
//! Every event of a stream has an id: an update's is its stream cursor (see
//! `agent::update_cursor`); any other message's is the last cursor before it and its number since,
//! `CURSOR.N` (`s.N` before the stream's first cursor). So ids name positions in the stream, and
//! a `Last-Event-ID` names exactly what the client saw last.
//!
//! Invariants:
//! - A window holds a contiguous run of what its stream delivered, ending with the newest: an
//!   entry is only ever dropped from the front (the oldest), so the entries after any id still
//!   held are exactly what was delivered after it.
//! - Memory is bounded: a stream's window holds at most [`STREAM_WINDOW`] bytes; while all
//!   windows of one connection hold more than [`CONNECTION_WINDOW`] together, a stream that
//!   delivers trims its own down to [`STREAM_FLOOR`] (so a busy stream is never starved by idle
//!   ones). The streams that keep a window are the open ones and a few recently closed (see
//!   `http`).
//! - An id the window does not hold (never sent, or dropped) answers `None`: the caller refuses
//!   (`409`), it never guesses.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The most bytes one stream keeps of what it delivered.
pub(crate) const STREAM_WINDOW: usize = 256 * 1024;
/// The bytes all streams of one connection keep together, above which each trims its own window
/// to [`STREAM_FLOOR`].
pub(crate) const CONNECTION_WINDOW: usize = 1024 * 1024;
/// What a stream keeps of its window while its connection's windows are over [`CONNECTION_WINDOW`].
pub(crate) const STREAM_FLOOR: usize = 64 * 1024;

/// One delivered message: its SSE event id and its text.
struct Entry {
    id: Box<str>,
    text: String,
}

impl Entry {
    fn size(&self) -> usize {
        self.text.len() + self.id.len()
    }
}

/// The window of one stream; cheap to clone (shared by the stream and its responses).
#[derive(Clone)]
pub(crate) struct Window {
    entries: Arc<Mutex<Entries>>,
}

struct Entries {
    /// The bytes held by every window of the connection.
    connection: Arc<AtomicUsize>,
    queue: VecDeque<Entry>,
    bytes: usize,
    /// The last cursor the stream delivered, and how many messages without one followed it.
    last_cursor: Option<Box<str>>,
    since_cursor: u64,
}

impl Window {
    /// An empty window counting its bytes in `connection` (shared by the connection's windows).
    pub(crate) fn new(connection: Arc<AtomicUsize>) -> Self {
        let entries = Entries { connection, queue: VecDeque::new(), bytes: 0, last_cursor: None, since_cursor: 0 };
        Self { entries: Arc::new(Mutex::new(entries)) }
    }

    /// Records a delivered message, carrying `cursor` if it is an update with one, and returns
    /// its event id.
    pub(crate) fn delivered(&self, cursor: Option<&str>, text: String) -> Box<str> {
        let mut entries = self.lock();
        let id: Box<str> = if let Some(cursor) = cursor {
            entries.last_cursor = Some(cursor.into());
            entries.since_cursor = 0;
            cursor.into()
        } else {
            entries.since_cursor += 1;
            format!("{}.{}", entries.last_cursor.as_deref().unwrap_or("s"), entries.since_cursor).into()
        };
        let entry = Entry { id: id.clone(), text };
        let size = entry.size();
        entries.queue.push_back(entry);
        entries.bytes += size;
        entries.connection.fetch_add(size, Ordering::Relaxed);
        while entries.bytes > STREAM_WINDOW
            || (entries.bytes > STREAM_FLOOR && entries.connection.load(Ordering::Relaxed) > CONNECTION_WINDOW)
        {
            let Some(oldest) = entries.queue.pop_front() else { break };
            let size = oldest.size();
            entries.bytes -= size;
            entries.connection.fetch_sub(size, Ordering::Relaxed);
        }
        id
    }

    /// The texts delivered after the message whose id is `id` (its last occurrence), oldest
    /// first; `None` when the window does not hold that id.
    pub(crate) fn after(&self, id: &str) -> Option<Vec<(Box<str>, String)>> {
        let entries = self.lock();
        let at = entries.queue.iter().rposition(|entry| &*entry.id == id)?;
        Some(entries.queue.iter().skip(at + 1).map(|entry| (entry.id.clone(), entry.text.clone())).collect())
    }

    /// Whether the window holds the message whose id is `id`.
    pub(crate) fn holds(&self, id: &str) -> bool {
        self.lock().queue.iter().any(|entry| &*entry.id == id)
    }

    /// Whether the window holds nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().queue.is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Entries {
    fn drop(&mut self) {
        // A forgotten stream gives its share back to the connection.
        self.connection.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn window() -> Window {
        Window::new(Arc::new(AtomicUsize::new(0)))
    }

    #[test]
    fn every_message_gets_an_id_naming_its_place_and_an_unknown_id_is_refused() {
        let window = window();
        assert_eq!(&*window.delivered(None, "first".to_owned()), "s.1");
        assert_eq!(&*window.delivered(Some("1"), "a".to_owned()), "1");
        assert_eq!(&*window.delivered(None, "request".to_owned()), "1.1");
        assert_eq!(&*window.delivered(Some("2"), "b".to_owned()), "2");
        assert_eq!(window.after("9"), None);
        let texts = |id| window.after(id).unwrap().into_iter().map(|(_, text)| text).collect::<Vec<_>>();
        assert_eq!(texts("1"), ["request", "b"]);
        assert_eq!(texts("1.1"), ["b"]);
        assert!(texts("2").is_empty());
    }

    #[test]
    fn the_windows_of_a_connection_share_its_bound_and_give_it_back() {
        let connection = Arc::new(AtomicUsize::new(0));
        let streams: Vec<Window> = (0..8).map(|_| Window::new(connection.clone())).collect();
        for (n, stream) in streams.iter().enumerate() {
            for i in 0..200 {
                stream.delivered(Some(&format!("{n}{i}")), "x".repeat(1024));
            }
        }
        let total = connection.load(Ordering::Relaxed);
        assert!(total <= CONNECTION_WINDOW + streams.len() * STREAM_FLOOR, "{total}");
        assert!(streams.iter().all(|stream| stream.lock().bytes <= STREAM_WINDOW));
        assert!(streams[7].lock().bytes <= STREAM_FLOOR, "the stream that delivered last trimmed its own");
        assert!(streams[7].after("7199").is_some(), "the newest entry of the stream that wrote last is kept");
        drop(streams);
        assert_eq!(connection.load(Ordering::Relaxed), 0);
    }

    proptest! {
        /// A client that reads the stream, loses messages at random points and reopens it with
        /// the last id it saw, ends up with exactly the stream: nothing lost, nothing twice.
        #[test]
        fn cuts_and_resumes_give_the_uncut_stream(
            sizes in prop::collection::vec(1usize..2048, 1..300),
            cursors in prop::collection::vec(any::<bool>(), 300),
            cuts in prop::collection::btree_set(0usize..300, 0..30),
        ) {
            let window = window();
            let stream: Vec<String> = sizes.iter().enumerate().map(|(i, size)| format!("{i}:{}", "y".repeat(*size))).collect();
            let mut received: Vec<String> = Vec::new();
            let mut last_id: Option<Box<str>> = None;
            for (i, text) in stream.iter().enumerate() {
                let cursor = cursors[i].then(|| i.to_string());
                let id = window.delivered(cursor.as_deref(), text.clone());
                if !cuts.contains(&i) {
                    received.push(text.clone());
                    last_id = Some(id);
                    continue;
                }
                // Lost on the way: the client reopens the stream with the last id it saw (a
                // client that saw none starts a fresh stream, which this is not about).
                let Some(seen) = last_id.clone() else { continue };
                let missed = window.after(&seen).expect("the window holds the last 256 KiB");
                for (id, text) in missed {
                    received.push(text);
                    last_id = Some(id);
                }
            }
            let first_seen = stream.iter().position(|text| received.first() == Some(text)).unwrap_or(stream.len());
            prop_assert_eq!(&received[..], &stream[first_seen..]);
        }
    }
}
