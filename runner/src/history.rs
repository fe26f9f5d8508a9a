//! A session's conversation as a turn reads it ([`Turn::history`](crate::Turn::history)): the
//! user prompts, assistant messages, thoughts and tool calls of its earlier turns, typed, oldest
//! first, with what a compaction replaced standing as one [`HistoryEntry::Summary`].
//!
//! The entries are folded from the session's Enduring, `Public` events — the journal — by one
//! function (`Conversation::record`), whether the events come from the store (a session being
//! loaded or resumed, an older page) or live, as the session publishes them:
//! - `TurnStarted` → one [`HistoryEntry::User`];
//! - `StepDone` → for each AI message, its thoughts as one [`HistoryEntry::Thought`], its text as
//!   one [`HistoryEntry::Assistant`] (each only when not empty), then one
//!   [`HistoryEntry::ToolCall`] per tool call it asked for; each tool result then completes the
//!   entry of its call (a result with no earlier request gets an entry of its own, where it
//!   appears);
//! - a completed compaction (`CompactionChanged` with status `completed`) replaces every entry
//!   so far by one [`HistoryEntry::Summary`] holding its summary (the update's own summary, else
//!   the text of its `CompactionSummary` chunks); a compaction with no summary leaves nothing in
//!   their place. Failed or cancelled compactions change nothing;
//! - every other event (turn ends, usage, plans, gates, …) adds nothing.
//!
//! Invariants:
//! - **Order.** Entries stand in the order their events were journaled, which is the order the
//!   client saw them; a tool call stands where it was first requested.
//! - **One entry per tool call.** A call's entry carries its final state: the fields of its last
//!   result over those of its request, merged as `session/load`'s replay merges them (a result
//!   journaled twice is one entry, with the last result). A call the journal holds no result for
//!   is `pending`.
//! - **Positions.** Entries are numbered from 0 since the latest completed compaction (the
//!   summary, when there is one, is entry 0), in an *epoch* named by that compaction's event
//!   `seq` (0 before any). A [`HistoryPosition`] is an epoch and a number: it stays valid until
//!   the session is compacted again.
//! - **The current turn is never part of it.** The running turn's own prompt and steps are
//!   folded in as they are published, but a turn reads only the entries before its
//!   `TurnStarted`.
//! - **Bounded memory.** A live session keeps at most [`HISTORY_CACHE_ENTRIES`] entries (the
//!   newest); a page reaching older entries reads the journal from the store and folds it again,
//!   with the same function, so it gets the same entries at the same positions. A step's results
//!   are merged into its own requests' entries before they are added, so even a step of more
//!   calls than the cap folds the same way. (One difference remains possible: a result journaled
//!   in a later step than its request, when the session no longer holds the request's entry,
//!   gets an entry of its own in the session's copy.)
//! - **The same everywhere.** A session loaded or resumed in another process, from `SQLite` or
//!   `PostgreSQL`, folds the journal the load read anyway, so its turns see the same entries as
//!   the process that ran them.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use acp_facade::acp::{CompactionStatus, ContentBlock, ToolCallContent, ToolCallStatus, ToolKind};
use acp_facade::harness::content::plain_text;
use acp_facade::harness::{Event, EventClass, EventKind, Message, ToolCallRequest, ToolResultMessage};

/// How many entries of its conversation a live session keeps in memory (the newest). Older
/// pages are read from the store on demand.
pub const HISTORY_CACHE_ENTRIES: usize = 2048;

/// One entry of a session's conversation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HistoryEntry {
    /// A user prompt.
    User {
        /// Its text blocks, joined.
        text: String,
        /// Its content blocks, as the client sent them.
        content: Vec<ContentBlock>,
    },
    /// One assistant message (a step's reply text).
    Assistant {
        /// The message's text.
        text: String,
    },
    /// One thought (a step's reasoning).
    Thought {
        /// The thought's text.
        text: String,
    },
    /// One tool call, with its final state.
    ToolCall(ToolCallRecord),
    /// A compaction's summary, standing for every entry before it.
    Summary {
        /// The summary's text.
        text: String,
    },
}

/// A tool call as it ended (or as it was requested, when it never did).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolCallRecord {
    /// The call's id.
    pub id: String,
    /// Its programmatic name (the tool as the model called it), if it has one.
    pub name: Option<String>,
    /// Its human-readable title.
    pub title: String,
    /// Its kind.
    pub kind: ToolKind,
    /// Its final status: `completed` or `failed`; `pending` when no result was recorded.
    pub status: ToolCallStatus,
    /// Its raw input, if it had one.
    pub input: Option<Value>,
    /// Its raw output, if it had one.
    pub output: Option<Value>,
    /// Its final content: content blocks, diffs, terminals.
    pub content: Vec<ToolCallContent>,
}

impl ToolCallRecord {
    /// The text of its content's text blocks, joined with `"\n"`.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|c| match c {
                ToolCallContent::Content(block) => match &block.content {
                    ContentBlock::Text(text) => Some(text.text.as_str()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        texts.join("\n")
    }

    /// The record of a call as `request` asked for it, before any result.
    fn requested(request: &ToolCallRequest) -> Self {
        Self {
            id: request.call_id.as_str().to_owned(),
            name: request.tool_name.clone(),
            title: request.name.clone(),
            kind: request.kind,
            status: ToolCallStatus::Pending,
            input: Some(request.input.clone()).filter(|input| !input.is_null()),
            output: None,
            content: Vec::new(),
        }
    }

    /// The record of a call that ended with `result`: the result's fields over the request's.
    fn ended(result: &ToolResultMessage, request: Option<&ToolCallRequest>) -> Self {
        let changes = &result.changes;
        let id = result.call_id.as_str();
        Self {
            id: id.to_owned(),
            name: changes.tool_name.clone().or_else(|| request.and_then(|r| r.tool_name.clone())),
            title: changes.title.clone().or_else(|| request.map(|r| r.name.clone())).unwrap_or_else(|| id.to_owned()),
            kind: changes.kind.or(request.map(|r| r.kind)).unwrap_or(ToolKind::Other),
            status: if result.is_error { ToolCallStatus::Failed } else { ToolCallStatus::Completed },
            input: changes.raw_input.clone().or_else(|| request.map(|r| r.input.clone())).filter(|i| !i.is_null()),
            output: changes.raw_output.clone(),
            content: result.output.clone(),
        }
    }
}

/// Where a page of a conversation begins: ask [`Turn::history_page`](crate::Turn::history_page)
/// for the entries before it. Valid until the session is compacted again.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HistoryPosition {
    /// The `seq` of the compaction the numbering starts at (0: none).
    epoch: u64,
    /// The number of the page's first entry.
    index: u64,
}

impl HistoryPosition {
    /// The number of the entry at this position, counted from the conversation's oldest (0) since
    /// the latest compaction.
    pub fn index(&self) -> u64 {
        self.index
    }
}

/// One page of a conversation: some of its entries, oldest first, and where to ask for the page
/// before them.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HistoryPage {
    /// The entries, oldest first.
    pub entries: Vec<HistoryEntry>,
    /// Where the older page ends: pass it to
    /// [`Turn::history_page`](crate::Turn::history_page). `None`: these are the oldest entries.
    pub older: Option<HistoryPosition>,
}

/// A tool call's entry, for its results to complete.
struct Call {
    /// The entry's number.
    index: u64,
    /// What the call was requested with (none: its first result came without a request).
    request: Option<ToolCallRequest>,
}

/// A conversation folded from a session's events (see the module doc): the newest entries up to
/// a cap, numbered since the latest completed compaction.
pub(crate) struct Conversation {
    cap: usize,
    epoch: u64,
    /// The number of `entries[0]`.
    first: u64,
    entries: VecDeque<HistoryEntry>,
    /// The calls whose entries are held, by call id.
    calls: HashMap<String, Call>,
    /// Summary text of compactions not finished yet, by compaction id.
    summaries: HashMap<String, String>,
    /// The number of the latest turn's first entry (its user prompt).
    turn_start: Option<u64>,
}

impl Default for Conversation {
    fn default() -> Self {
        Self::with_cap(HISTORY_CACHE_ENTRIES)
    }
}

/// What a page request comes to, read off a session's conversation.
pub(crate) enum PageSource {
    /// The page, from the entries held.
    Held(HistoryPage),
    /// The page reaches older entries than are held: fold the journal, and take
    /// `[start, end)` of epoch `epoch`.
    Journal { epoch: u64, start: u64, end: u64 },
}

impl Conversation {
    /// An empty conversation keeping at most `cap` entries.
    pub(crate) fn with_cap(cap: usize) -> Self {
        Self {
            cap,
            epoch: 0,
            first: 0,
            entries: VecDeque::new(),
            calls: HashMap::new(),
            summaries: HashMap::new(),
            turn_start: None,
        }
    }

    /// The conversation of `journal` (a session's events, in order), keeping at most `cap`.
    pub(crate) fn of(journal: &[Event], cap: usize) -> Self {
        let mut conversation = Self::with_cap(cap);
        for event in journal {
            conversation.record(event);
        }
        conversation
    }

    /// The number the next entry gets.
    fn end(&self) -> u64 {
        self.first + self.entries.len() as u64
    }

    /// Folds in one event of the session (anything but an Enduring, `Public` event is ignored).
    pub(crate) fn record(&mut self, event: &Event) {
        if event.header.class != EventClass::Enduring || !event.is_public() {
            return;
        }
        match &event.kind {
            EventKind::TurnStarted { message } => {
                self.turn_start = Some(self.end());
                let content = message.content.clone();
                self.push(HistoryEntry::User { text: plain_text(&content), content });
            }
            EventKind::StepDone { messages } => self.step(messages),
            EventKind::CompactionSummary { chunk } => {
                let text = plain_text(std::slice::from_ref(&chunk.content));
                self.summaries.entry(chunk.compaction_id.to_string()).or_default().push_str(&text);
            }
            EventKind::CompactionChanged { update } => {
                let id = update.compaction_id.to_string();
                match update.status {
                    CompactionStatus::InProgress => {}
                    CompactionStatus::Completed => {
                        let chunks = self.summaries.remove(&id).unwrap_or_default();
                        let summary = update.summary.value().map_or(chunks, |blocks| plain_text(blocks));
                        self.compacted(event.header.seq, summary);
                    }
                    _ => {
                        self.summaries.remove(&id);
                    }
                }
            }
            _ => {}
        }
    }

    /// A step's messages: its entries, with its results merged into the entries of its own
    /// requests before they are added (so a step never pushes out the entry its own result
    /// completes), and a result for a call of an earlier step completing that entry in place.
    fn step(&mut self, messages: &[Message]) {
        let mut entries: Vec<HistoryEntry> = Vec::new();
        // This step's calls: where their entry is in `entries`, and their request.
        let mut calls: HashMap<&str, (usize, Option<&ToolCallRequest>)> = HashMap::new();
        for message in messages {
            match message {
                Message::Ai(ai) => {
                    let thought = plain_text(&ai.thoughts);
                    if !thought.is_empty() {
                        entries.push(HistoryEntry::Thought { text: thought });
                    }
                    let text = plain_text(&ai.content);
                    if !text.is_empty() {
                        entries.push(HistoryEntry::Assistant { text });
                    }
                    for request in &ai.tool_calls {
                        let id = request.call_id.as_str();
                        if let Some(call) = self.calls.get_mut(id) {
                            call.request.get_or_insert_with(|| request.clone());
                        } else if let Some((_, known)) = calls.get_mut(id) {
                            known.get_or_insert(request);
                        } else {
                            calls.insert(id, (entries.len(), Some(request)));
                            entries.push(HistoryEntry::ToolCall(ToolCallRecord::requested(request)));
                        }
                    }
                }
                Message::ToolResult(result) => {
                    let id = result.call_id.as_str();
                    if let Some(&(at, request)) = calls.get(id) {
                        entries[at] = HistoryEntry::ToolCall(ToolCallRecord::ended(result, request));
                    } else if !self.ended_earlier(result) {
                        calls.insert(id, (entries.len(), None));
                        entries.push(HistoryEntry::ToolCall(ToolCallRecord::ended(result, None)));
                    }
                }
                Message::User(_) => {}
            }
        }
        let requests: HashMap<usize, (&str, Option<&ToolCallRequest>)> =
            calls.into_iter().map(|(id, (at, request))| (at, (id, request))).collect();
        for (at, entry) in entries.into_iter().enumerate() {
            if let Some((id, request)) = requests.get(&at) {
                self.calls.insert((*id).to_owned(), Call { index: self.end(), request: request.cloned() });
            }
            self.push(entry);
        }
    }

    /// Completes, in place, the held entry of an earlier step's call with `result`; false when
    /// no such entry is held.
    fn ended_earlier(&mut self, result: &ToolResultMessage) -> bool {
        let Some(call) = self.calls.get(result.call_id.as_str()) else { return false };
        let Some(entry) = call
            .index
            .checked_sub(self.first)
            .and_then(|offset| usize::try_from(offset).ok())
            .and_then(|at| self.entries.get_mut(at))
        else {
            return false;
        };
        *entry = HistoryEntry::ToolCall(ToolCallRecord::ended(result, call.request.as_ref()));
        true
    }

    /// A compaction completed at `seq`: every entry so far gives way to its summary.
    fn compacted(&mut self, seq: u64, summary: String) {
        self.epoch = seq;
        self.first = 0;
        self.entries.clear();
        self.calls.clear();
        if !summary.is_empty() {
            self.push(HistoryEntry::Summary { text: summary });
        }
        // A turn running while it completed reads from here on.
        self.turn_start = self.turn_start.map(|_| self.end());
    }

    /// Appends an entry, dropping the oldest beyond the cap.
    fn push(&mut self, entry: HistoryEntry) {
        self.entries.push_back(entry);
        while self.entries.len() > self.cap {
            if let Some(HistoryEntry::ToolCall(call)) = self.entries.pop_front() {
                self.calls.remove(&call.id);
            }
            self.first += 1;
        }
    }

    /// Where a page of at most `limit` entries ending before `before` (none: before the running
    /// turn) comes from; `-32602` for a position of another epoch or past the running turn.
    pub(crate) fn page(&self, before: Option<&HistoryPosition>, limit: usize) -> Result<PageSource, acp_facade::Error> {
        use acp_facade::error::ErrorExt;
        let current = self.turn_start.unwrap_or_else(|| self.end());
        let end = match before {
            None => current,
            Some(position) if position.epoch != self.epoch => {
                return Err(acp_facade::Error::invalid_params_msg(
                    "history position: the session was compacted since it was given; start again from the newest page",
                ));
            }
            Some(position) if position.index > current => {
                return Err(acp_facade::Error::invalid_params_msg(format!(
                    "history position {} is past the conversation's {current} entries",
                    position.index
                )));
            }
            Some(position) => position.index,
        };
        let start = end.saturating_sub(limit as u64);
        if start < self.first {
            return Ok(PageSource::Journal { epoch: self.epoch, start, end });
        }
        Ok(PageSource::Held(self.slice(start, end)))
    }

    /// Entries `[start, end)`, both within what is held, as a page.
    fn slice(&self, start: u64, end: u64) -> HistoryPage {
        let skip = usize::try_from(start - self.first).unwrap_or(usize::MAX);
        let take = usize::try_from(end - start).unwrap_or(usize::MAX);
        HistoryPage {
            entries: self.entries.iter().skip(skip).take(take).cloned().collect(),
            older: (start > 0).then_some(HistoryPosition { epoch: self.epoch, index: start }),
        }
    }

    /// Entries `[start, end)` of epoch `epoch` from the whole conversation (folded with no cap):
    /// `None` when the journal is in another epoch by now.
    pub(crate) fn page_of_whole(&self, epoch: u64, start: u64, end: u64) -> Option<HistoryPage> {
        let end = end.min(self.end());
        (self.epoch == epoch && self.first <= start && start <= end).then(|| self.slice(start, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_facade::acp::{CompactionSummaryChunk, CompactionUpdate};
    use acp_facade::harness::content::text_block;
    use acp_facade::harness::{AiMessage, EventKind, UserMessage, Visibility};
    use serde_json::json;

    fn user(text: &str) -> EventKind {
        EventKind::TurnStarted { message: UserMessage::new(vec![text_block(text)]) }
    }

    fn step(messages: Vec<Message>) -> EventKind {
        EventKind::StepDone { messages }
    }

    fn ai(text: &str, thoughts: &str, calls: Vec<ToolCallRequest>) -> Message {
        let blocks = |t: &str| if t.is_empty() { Vec::new() } else { vec![text_block(t)] };
        Message::Ai(AiMessage { content: blocks(text), thoughts: blocks(thoughts), tool_calls: calls })
    }

    fn journal(kinds: Vec<EventKind>) -> Vec<Event> {
        kinds.into_iter().enumerate().map(|(n, kind)| Event::plain(&format!("s#{n}"), n as u64, kind)).collect()
    }

    fn texts(page: &HistoryPage) -> Vec<String> {
        page.entries
            .iter()
            .map(|e| match e {
                HistoryEntry::User { text, .. } => format!("user:{text}"),
                HistoryEntry::Assistant { text } => format!("assistant:{text}"),
                HistoryEntry::Thought { text } => format!("thought:{text}"),
                HistoryEntry::ToolCall(call) => format!("tool:{}:{:?}:{}", call.title, call.status, call.text()),
                HistoryEntry::Summary { text } => format!("summary:{text}"),
            })
            .collect()
    }

    fn held(conversation: &Conversation, before: Option<&HistoryPosition>, limit: usize) -> HistoryPage {
        match conversation.page(before, limit).expect("page") {
            PageSource::Held(page) => page,
            PageSource::Journal { .. } => panic!("not held"),
        }
    }

    #[test]
    fn steps_fold_into_ordered_entries_and_a_call_is_one_entry_with_its_last_result() {
        let request = ToolCallRequest::new("c1", "Read", ToolKind::Read, json!({"path": "a"}));
        let mut failed = ToolResultMessage::new("c1", vec![text_block("first").into()], true);
        failed.changes.title = Some("Read a".into());
        let done = ToolResultMessage::new("c1", vec![text_block("second").into()], false);
        let orphan = ToolResultMessage::new("c9", Vec::new(), false);
        let events = journal(vec![
            user("one"),
            step(vec![ai("hi", "hmm", vec![request]), Message::ToolResult(failed)]),
            step(vec![ai("", "", Vec::new()), Message::ToolResult(done), Message::ToolResult(orphan)]),
            EventKind::TurnDone { message: None, stop: None },
            user("two"),
        ]);
        let conversation = Conversation::of(&events, HISTORY_CACHE_ENTRIES);
        let page = held(&conversation, None, 50);
        assert_eq!(
            texts(&page),
            ["user:one", "thought:hmm", "assistant:hi", "tool:Read:Completed:second", "tool:c9:Completed:"],
            "the running turn's prompt is left out; the last result wins, with the request's title again"
        );
        let HistoryEntry::ToolCall(call) = &page.entries[3] else { panic!() };
        assert_eq!(call.input, Some(json!({"path": "a"})));
        assert_eq!(page.older, None);
    }

    #[test]
    fn a_completed_compaction_leaves_its_summary_and_a_failed_one_nothing() {
        let chunk = |id: &str, t: &str| EventKind::CompactionSummary {
            chunk: Box::new(CompactionSummaryChunk::new(id.to_owned(), text_block(t))),
        };
        let status = |id: &str, s: CompactionStatus| EventKind::CompactionChanged {
            update: Box::new(CompactionUpdate::new(id.to_owned(), s)),
        };
        let mut events = journal(vec![
            user("one"),
            step(vec![ai("a", "", Vec::new())]),
            chunk("k1", "sum"),
            chunk("k1", "mary"),
            chunk("k0", "ignored"),
            status("k0", CompactionStatus::Failed),
            status("k1", CompactionStatus::Completed),
            user("two"),
            step(vec![ai("b", "", Vec::new())]),
            user("three"),
        ]);
        // Internal events are never part of it.
        let mut internal = Event::plain("s#x", 99, user("secret"));
        internal.header.visibility = Visibility::Internal;
        events.insert(8, internal);
        let conversation = Conversation::of(&events, HISTORY_CACHE_ENTRIES);
        let page = held(&conversation, None, 50);
        assert_eq!(texts(&page), ["summary:summary", "user:two", "assistant:b"]);
        let older = held(&conversation, None, 1).older.expect("older");
        assert_eq!(older.index(), 2);
        assert_eq!(texts(&held(&conversation, Some(&older), 5)), ["summary:summary", "user:two"]);
    }

    #[test]
    fn a_host_s_completed_update_may_carry_the_summary_itself() {
        let completed = CompactionUpdate::new("k".to_owned(), CompactionStatus::Completed)
            .summary(vec![text_block("from "), text_block("the host")]);
        let events = journal(vec![
            user("one"),
            EventKind::CompactionSummary {
                chunk: Box::new(CompactionSummaryChunk::new("k".to_owned(), text_block("chunks lose"))),
            },
            EventKind::CompactionChanged { update: Box::new(completed) },
        ]);
        let conversation = Conversation::of(&events, HISTORY_CACHE_ENTRIES);
        assert_eq!(texts(&held(&conversation, None, 5)), ["summary:from the host"]);
        assert_eq!(conversation.epoch, 2, "numbered from the compaction's seq");
    }

    #[test]
    fn a_step_of_more_calls_than_the_cap_folds_as_it_does_uncapped() {
        let requests = (0..6).map(|n| ToolCallRequest::new(format!("c{n}"), "t", ToolKind::Other, json!(null)));
        let mut messages = vec![ai("", "", requests.collect())];
        messages
            .extend((0..6).map(|n| Message::ToolResult(ToolResultMessage::new(format!("c{n}"), Vec::new(), false))));
        let events = journal(vec![user("one"), step(messages), user("two")]);
        let capped = Conversation::of(&events, 4);
        let whole = Conversation::of(&events, usize::MAX);
        let newest = |c: &Conversation| match c.page(None, 3).expect("page") {
            PageSource::Held(page) => texts(&page),
            PageSource::Journal { .. } => panic!("held"),
        };
        assert_eq!(newest(&capped), newest(&whole));
        assert_eq!(newest(&capped), ["tool:t:Completed:"; 3]);
        assert_eq!((capped.first, capped.end()), (4, 8), "two prompts and six calls, four held");
    }

    #[test]
    fn a_capped_conversation_sends_older_pages_to_the_journal_with_the_same_numbers() {
        let kinds: Vec<EventKind> = (0..10).map(|n| user(&n.to_string())).collect();
        let events = journal(kinds);
        let capped = Conversation::of(&events, 4);
        let whole = Conversation::of(&events, usize::MAX);
        // The running turn is "9": entries 0..9 are history; 6..9 are held (6, 7, 8, 9).
        let page = held(&capped, None, 3);
        assert_eq!(texts(&page), ["user:6", "user:7", "user:8"]);
        let older = page.older.expect("older");
        match capped.page(Some(&older), 3).expect("page") {
            PageSource::Journal { epoch, start, end } => {
                let page = whole.page_of_whole(epoch, start, end).expect("same epoch");
                assert_eq!(texts(&page), ["user:3", "user:4", "user:5"]);
            }
            PageSource::Held(_) => panic!("entries 3..6 are not held"),
        }
        let past = HistoryPosition { epoch: 0, index: 10 };
        assert!(capped.page(Some(&past), 3).is_err());
        let stale = HistoryPosition { epoch: 7, index: 1 };
        assert!(capped.page(Some(&stale), 3).is_err());
    }
}
