//! `/compact`: the one internal command the facade exposes through `session/prompt`.
//!
//! It exists only when compaction is configured ([`Options::compaction`](super::Options)), and is
//! routed only when the prompt's text is exactly `/compact`; any other text (or `/compact` with
//! compaction off) goes to the host unchanged. The session's *own* compactor performs it. The
//! outcome is matched by command id directly on `CompactWaiterResolved` (→ `end_turn`) or
//! `CompactWaiterRejected` (→ an error with the reason, or a generic one when the event is
//! `Internal`: its reason never reaches the client, but it still ends the compaction).
//!
//! Events the command causes besides its outcome — the compaction's progress
//! (`compaction_update`) and summary (`compaction_summary_chunk`) — are sent as they arrive, before
//! the response, to a client that advertised `session.compaction`; others see only the response.
//!
//! It is advertised as `compact` in `available_commands_update`, beside the host's own commands
//! (see [`commands`](super::commands)).

use std::sync::Arc;

use futures::StreamExt;

use super::cancellation::Cancellation;
use super::session_state::SessionEntry;
use super::state::AgentInner;
use super::translate::translate;
use crate::acp::{AvailableCommand, ContentBlock, StopReason};
use crate::error::{Error, ErrorExt};
use crate::harness::EventKind;

/// The command's name, as advertised.
pub(super) const COMPACT_COMMAND: &str = "compact";

/// The command as advertised.
pub(crate) fn compact_command() -> AvailableCommand {
    AvailableCommand::new(COMPACT_COMMAND, "Compact the conversation to free context")
}

/// Whether `prompt` is exactly the `/compact` command.
pub(super) fn is_compact_command(prompt: &[ContentBlock]) -> bool {
    if let [ContentBlock::Text(t)] = prompt {
        // The common case, without copying the text.
        return t.text.trim() == "/compact";
    }
    let mut text = String::new();
    for block in prompt {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            _ => return false,
        }
    }
    text.trim() == "/compact"
}

/// Runs `/compact` on the session's own compactor.
pub(crate) async fn run(
    agent: &Arc<AgentInner>,
    entry: &Arc<SessionEntry>,
    cancel: &mut Cancellation<'_>,
) -> Result<StopReason, Error> {
    let Some(compactor) = entry.live.compactor() else {
        return Err(Error::invalid_request_msg(format!("session {} cannot be compacted", entry.id)));
    };
    let mut events = entry.live.subscribe_events()?;
    let command = compactor.compact().await?;
    loop {
        let event = tokio::select! {
            biased;
            () = cancel.arrives(), if !cancel.noticed() => {
                cancel.notice();
                entry.interrupt().await;
                continue;
            }
            () = cancel.expired() => return Ok(StopReason::Cancelled),
            event = events.next() => event,
        };
        let Some(event) = event else {
            return if cancel.requested() {
                Ok(StopReason::Cancelled)
            } else {
                Err(Error::internal_msg("the session's event stream ended before compaction finished"))
            };
        };
        // Only a reply to this very command counts: another command's replies are decoys. An
        // internal reply still ends the compaction, but its reason stays in the host.
        if !event.is_caused_by(&command) {
            continue;
        }
        // After a cancellation the answer is `cancelled` however the compaction ended, never an
        // error: ACP requires it, and a rejection is the usual result of the interrupt.
        match &event.kind {
            EventKind::CompactWaiterResolved {} | EventKind::CompactWaiterRejected { .. } if cancel.requested() => {
                return Ok(StopReason::Cancelled);
            }
            EventKind::CompactWaiterResolved {} => return Ok(StopReason::EndTurn),
            EventKind::CompactWaiterRejected { reason } if event.is_public() => {
                return Err(Error::internal_msg(format!("compaction failed: {reason}")));
            }
            EventKind::CompactWaiterRejected { reason } => {
                tracing::warn!(session = %entry.id, reason = %reason, "compaction failed (internal)");
                return Err(Error::internal_msg("compaction failed"));
            }
            // The compaction's progress and summary, to a client that opted in (the translator
            // checks), before the prompt's response.
            _ => {
                if let Some(update) = translate(&event, entry.setup.client_capabilities()) {
                    agent.send_update(&entry.id, update).await?;
                }
            }
        }
    }
}
