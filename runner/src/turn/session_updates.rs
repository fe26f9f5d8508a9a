//! The turn's session updates that ACP gates behind a client capability: notices, plans with ids
//! and subagents. A turn calls them whatever the client advertised; the facade's translator sends
//! each only to a client that advertised it and degrades it for any other (see each method). The
//! methods return whether the client receives the update as such, so a turn can say the same in
//! another way (a message chunk, say) when it does not.
//!
//! Plans with ids and the exchanges with subagents are Enduring: journaled, and replayed by
//! `session/load`. Notices are live only (ACP: "not part of session history").

use acp_facade::acp::{
    ContentBlock, IdleStateUpdate, IdleStopReason, MessageId, Notice, PlanEntry, PlanId, PlanRemoved, PlanUpdate,
    PlanUpdateContent, SessionId, SessionMessage, SessionMessageChunk, StateUpdate, StopReason, SubagentUpdate,
};
use acp_facade::client::Capabilities;
use acp_facade::harness::{EventClass, EventKind};

use super::Turn;

impl Turn {
    /// Shows the user a notice (`notice`, with its severity): information that is not part of the
    /// conversation. Sent only to a client that advertised `session.notices`; returns whether it
    /// was (`false`: nothing was sent, so say it another way if it matters).
    ///
    /// A notice needs a title: one without is not sent (`false`).
    pub async fn notice(&self, notice: Notice) -> bool {
        let received = notice_received(self.client_capabilities(), &notice);
        if !notice.title.trim().is_empty() {
            self.emit(EventClass::Ephemeral, EventKind::Notice { notice: Box::new(notice) }).await;
        }
        received
    }

    /// Creates or replaces the plan `plan_id` with `entries`, each with its current status
    /// (`plan_update`). A client that did not advertise plan operations (`plan`) gets the entries
    /// as a whole `plan` update instead, so one call serves every client; returns whether the
    /// client received the plan with its id.
    pub async fn update_plan(&self, plan_id: impl Into<PlanId>, entries: Vec<PlanEntry>) -> bool {
        self.change_plan(PlanUpdateContent::items(plan_id, entries)).await
    }

    /// Creates or replaces the plan `plan_id` with a Markdown document (`plan_update`). A client
    /// without plan operations gets an empty whole `plan` (a document has no entries).
    pub async fn update_plan_markdown(&self, plan_id: impl Into<PlanId>, content: impl Into<String>) -> bool {
        self.change_plan(PlanUpdateContent::markdown(plan_id, content)).await
    }

    async fn change_plan(&self, plan: PlanUpdateContent) -> bool {
        let update = Box::new(PlanUpdate::new(plan));
        self.emit(EventClass::Enduring, EventKind::PlanChanged { update }).await;
        self.client_capabilities().plan_operations()
    }

    /// Removes the plan `plan_id` (`plan_removed`; for a client without plan operations, an empty
    /// `plan`). Returns whether the client received the removal as such.
    pub async fn remove_plan(&self, plan_id: impl Into<PlanId>) -> bool {
        let removed = Box::new(PlanRemoved::new(plan_id));
        self.emit(EventClass::Enduring, EventKind::PlanRemoved { removed }).await;
        self.client_capabilities().plan_operations()
    }

    /// Starts a subagent: a child session of this one, announced to the client with
    /// `subagent_update` (titled `title`). Exchange messages with it through the returned
    /// [`Subagent`], then [`finish`](Subagent::finish) it. Sent only to a client that advertised
    /// `subagents` ([`Subagent::is_visible`]); the exchange is journaled either way, and replayed
    /// to such a client by `session/load`.
    pub async fn start_subagent(&self, title: impl Into<String>) -> Subagent<'_> {
        let n = self.next_number();
        let session_id = SessionId::new(format!("{}/{}-agent{n}", self.session.id, self.turn_id));
        let update = Box::new(SubagentUpdate::new(session_id.clone()).title(title.into()));
        self.emit(EventClass::Enduring, EventKind::SubagentChanged { update }).await;
        Subagent { turn: self, session_id }
    }

    /// The handle on a child this turn started, by the child's id: how the bindings' operation
    /// queue, which cannot keep a [`Subagent`] between operations, reaches it again.
    pub(crate) fn subagent(&self, session_id: SessionId) -> Subagent<'_> {
        Subagent { turn: self, session_id }
    }
}

/// A child session started by [`Turn::start_subagent`]: the messages between it and the turn's
/// session, as the client sees them in the parent session (`session_message`, streamed as
/// `session_message_chunk`s).
#[derive(Debug)]
pub struct Subagent<'t> {
    turn: &'t Turn,
    session_id: SessionId,
}

impl Subagent<'_> {
    /// The child session's id.
    pub fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    /// Whether the client sees the subagent's updates (it advertised `subagents`).
    pub fn is_visible(&self) -> bool {
        self.turn.client_capabilities().subagents()
    }

    /// A message from the turn's session to the child (`session_message` with its content).
    /// Returns the message's id.
    pub async fn send(&self, text: impl Into<String>) -> MessageId {
        let id = self.message_id();
        let message = SessionMessage::new(id.clone())
            .sender_session_id(self.turn.session.id.clone())
            .recipient_session_id(self.session_id.clone())
            .content(vec![ContentBlock::from(text.into())]);
        self.turn.emit(EventClass::Enduring, EventKind::SessionMessage { message: Box::new(message) }).await;
        id
    }

    /// The child's reply to the turn's session: a `session_message` from the child, then each
    /// of `chunks` as a `session_message_chunk` of it, in order. Returns the message's id.
    pub async fn reply<I, S>(&self, chunks: I) -> MessageId
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let id = self.message_id();
        let message = SessionMessage::new(id.clone())
            .sender_session_id(self.session_id.clone())
            .recipient_session_id(self.turn.session.id.clone());
        self.turn.emit(EventClass::Enduring, EventKind::SessionMessage { message: Box::new(message) }).await;
        for text in chunks {
            let chunk = Box::new(SessionMessageChunk::new(id.clone(), ContentBlock::from(text.into())));
            self.turn.emit(EventClass::Enduring, EventKind::SessionMessageChunk { chunk }).await;
        }
        id
    }

    /// Reports the child idle, its work ended with `stop` (`subagent_update` with state `idle`).
    pub async fn finish(&self, stop: StopReason) {
        let idle = IdleStateUpdate::new().stop_reason(idle_stop_reason(stop));
        let update = Box::new(SubagentUpdate::new(self.session_id.clone()).state(StateUpdate::Idle(idle)));
        self.turn.emit(EventClass::Enduring, EventKind::SubagentChanged { update }).await;
    }

    fn message_id(&self) -> MessageId {
        MessageId::new(format!("{}-msg{}", self.turn.turn_id, self.turn.next_number()))
    }
}

/// Whether a client with `client` capabilities receives `notice` ([`Turn::notice`]'s answer): it
/// advertised `session.notices`, and the notice has a title (one without is not sent).
pub fn notice_received(client: &Capabilities, notice: &Notice) -> bool {
    client.notices() && !notice.title.trim().is_empty()
}

/// The idle state's stop reason for a turn's `stop`.
fn idle_stop_reason(stop: StopReason) -> IdleStopReason {
    match stop {
        StopReason::MaxTokens => IdleStopReason::MaxTokens,
        StopReason::MaxTurnRequests => IdleStopReason::MaxTurnRequests,
        StopReason::Refusal => IdleStopReason::Refusal,
        StopReason::Cancelled => IdleStopReason::Cancelled,
        _ => IdleStopReason::EndTurn,
    }
}
