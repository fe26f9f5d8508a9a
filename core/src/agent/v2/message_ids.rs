//! The message ids of a session's streamed chunks: v2 requires one on every chunk, and a new one
//! starts a new message. The chunks of one kind in a row are one message; a tool call or a plan
//! between them ends it. A turn's messages are numbered under its user message's id
//! (`<user message id>/reply-1`, `…/thought-2`, …).
//!
//! Whoever serialises a session's chunks keeps its ids: the prompt's drain for a live turn (one
//! [`MessageIds`] per turn, owned by the drain, so a chunk costs neither a lookup nor a lock), the
//! connection's rewriter for a chunk written by anything else without an id (one per session).
//! The current id is kept in its JSON form as well, so that a chunk line copies it as it is.

use crate::harness::TokenChannel;

/// Which message a chunk belongs to, by its `sessionUpdate` tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::agent) enum ChunkKind {
    /// `user_message_chunk`.
    User,
    /// `agent_message_chunk`.
    Reply,
    /// `agent_thought_chunk`.
    Thought,
}

impl ChunkKind {
    /// The kind of a chunk with this `sessionUpdate` tag (`None`: not a chunk).
    pub(in crate::agent) fn of_tag(tag: &str) -> Option<Self> {
        match tag {
            "user_message_chunk" => Some(Self::User),
            "agent_message_chunk" => Some(Self::Reply),
            "agent_thought_chunk" => Some(Self::Thought),
            _ => None,
        }
    }

    /// The kind of the chunks of a token channel.
    pub(in crate::agent) fn of_channel(channel: TokenChannel) -> Self {
        match channel {
            TokenChannel::Message => Self::Reply,
            TokenChannel::Thought => Self::Thought,
        }
    }

    /// The word the ids of such messages carry.
    fn tag(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Reply => "reply",
            Self::Thought => "thought",
        }
    }
}

/// The message ids of one session (see the module doc).
#[derive(Debug)]
pub(in crate::agent) struct MessageIds {
    /// The current turn's user message id (the base of its messages' ids), as it is written in a
    /// JSON string: escaped, without its quotes.
    base_json: Vec<u8>,
    /// The kind of the message being streamed, `None` when the next chunk starts a new one.
    current: Option<ChunkKind>,
    /// The id of the message being streamed as a JSON string, quotes included (valid while
    /// `current` is set).
    id_json: Vec<u8>,
    /// Messages started in this turn.
    started: u64,
}

impl MessageIds {
    /// The ids of a turn whose user message is `user_message`.
    pub(in crate::agent) fn turn(user_message: &str) -> Self {
        // Room for the id, its escapes, and what a message's id adds: no growth on the hot path.
        let room = user_message.len() + 16;
        let mut ids = Self {
            base_json: Vec::with_capacity(room),
            current: None,
            id_json: Vec::with_capacity(room + 32),
            started: 0,
        };
        ids.start_turn(user_message);
        ids
    }

    /// The ids of a turn whose user message's id is `escaped` as it is written inside a JSON
    /// string.
    pub(in crate::agent) fn turn_escaped(escaped: &[u8]) -> Self {
        let room = escaped.len() + 16;
        let mut ids = Self {
            base_json: Vec::with_capacity(room),
            current: None,
            id_json: Vec::with_capacity(room + 32),
            started: 0,
        };
        ids.start_turn_escaped(escaped);
        ids
    }

    /// The ids of a session's chunks before any turn of this connection (`<session>/agent/…`).
    pub(in crate::agent) fn before_any_turn(session: &str) -> Self {
        Self::turn(&format!("{session}/agent"))
    }

    /// A new turn, whose user message is `id`.
    pub(in crate::agent) fn start_turn(&mut self, id: &str) {
        self.base_json.clear();
        // Writing a &str into a Vec cannot fail; its quotes are taken off.
        let _ = serde_json::to_writer(&mut self.base_json, id);
        self.base_json.pop();
        self.base_json.remove(0);
        self.current = None;
        self.started = 0;
    }

    /// A new turn, whose user message's id is `escaped` as it is written inside a JSON string.
    pub(in crate::agent) fn start_turn_escaped(&mut self, escaped: &[u8]) {
        self.base_json.clear();
        self.base_json.extend_from_slice(escaped);
        self.current = None;
        self.started = 0;
    }

    /// The id of the message a chunk of `kind` belongs to (for the rare chunk written without
    /// one; the hot path is [`MessageIds::chunk_json`]).
    pub(in crate::agent) fn chunk(&mut self, kind: ChunkKind) -> String {
        serde_json::from_slice(self.chunk_json(kind)).unwrap_or_default()
    }

    /// The id of the message a chunk of `kind` belongs to, as a JSON string (quotes included).
    pub(in crate::agent) fn chunk_json(&mut self, kind: ChunkKind) -> &[u8] {
        if self.current != Some(kind) {
            self.started += 1;
            // `"<base>/<tag>-<n>"`: the tag and the number need no escaping.
            self.id_json.clear();
            self.id_json.push(b'"');
            self.id_json.extend_from_slice(&self.base_json);
            self.id_json.push(b'/');
            self.id_json.extend_from_slice(kind.tag().as_bytes());
            self.id_json.push(b'-');
            push_decimal(&mut self.id_json, self.started);
            self.id_json.push(b'"');
            self.current = Some(kind);
        }
        &self.id_json
    }

    /// Something else came between: the next chunk starts a new message.
    pub(in crate::agent) fn interrupt(&mut self) {
        self.current = None;
    }
}

/// Appends the decimal digits of `n` to `out` (without the formatting machinery: ids are made
/// on the hot path).
pub(in crate::agent) fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        // A digit: `n % 10` is below 10.
        digits[at] = b'0' + u8::try_from(n % 10).unwrap_or_default();
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_of_one_kind_in_a_row_are_one_message_and_an_interruption_ends_it() {
        let mut ids = MessageIds::before_any_turn("s");
        assert_eq!(ids.chunk(ChunkKind::Reply), "s/agent/reply-1");
        ids.start_turn("s/u1");
        let a = ids.chunk(ChunkKind::Reply);
        assert_eq!(a, "s/u1/reply-1");
        assert_eq!(ids.chunk(ChunkKind::Reply), a);
        assert_eq!(ids.chunk(ChunkKind::Thought), "s/u1/thought-2");
        ids.interrupt();
        assert_eq!(ids.chunk(ChunkKind::Thought), "s/u1/thought-3");
        assert_eq!(ids.chunk_json(ChunkKind::Thought), br#""s/u1/thought-3""#);
    }

    #[test]
    fn a_turn_may_start_from_an_escaped_id() {
        let mut ids = MessageIds::before_any_turn("s");
        ids.start_turn_escaped(br#"a\"b"#);
        assert_eq!(ids.chunk(ChunkKind::Reply), "a\"b/reply-1");
    }

    #[test]
    fn the_json_form_is_escaped() {
        let mut ids = MessageIds::turn("a\"b");
        assert_eq!(ids.chunk_json(ChunkKind::User), br#""a\"b/user-1""#);
        assert_eq!(ids.chunk(ChunkKind::User), "a\"b/user-1");
    }

    #[test]
    fn decimals_are_written_whole() {
        for n in [0, 7, 10, 12_345, u64::MAX] {
            let mut out = b"x".to_vec();
            push_decimal(&mut out, n);
            assert_eq!(out, format!("x{n}").as_bytes());
        }
    }
}
