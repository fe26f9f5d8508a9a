//! Slash commands: `available_commands_update`, and prompts that invoke a host-defined command.
//!
//! A session's commands are the facade's own `compact` (when compaction is configured and the
//! session has a compactor, see [`compact`](super::compact)) followed by the host's commands
//! ([`LiveSession::commands`](crate::host::LiveSession::commands), replaced later through
//! [`SessionControl::set_commands`](crate::host::SessionControl::set_commands)). A host command
//! named `compact` is left out while the facade's own is offered.
//!
//! Invariants:
//! - Advertising is lazy: the list is first sent on a session's first prompt (before its turn
//!   starts), never at session establishment — `session/resume` must send no update at all, and a
//!   prompt is what every way of establishing a session has in common. Nothing is sent for an
//!   empty list.
//! - From then on, a change of the host's list is advertised at once (the whole list), and only a
//!   list that differs from the one last advertised.
//! - A prompt whose first block is the text `/name input` (trimmed) naming an advertised host
//!   command reaches the host as that command ([`Prompt::command`](crate::harness::Prompt)); the
//!   prompt's content is passed on unchanged. Only a command the client could have seen counts:
//!   one advertised by this prompt or before.

use std::sync::atomic::Ordering;

use super::compact::{COMPACT_COMMAND, compact_command};
use super::session_state::{CommandLists, SessionEntry};
use super::state::AgentInner;
use crate::acp::{AvailableCommand, AvailableCommandsUpdate, ContentBlock, SessionUpdate};
use crate::error::Error;
use crate::harness::SlashCommand;

/// Starts advertising the session's commands on its first prompt (see the module doc).
pub(crate) async fn ensure_advertised(agent: &AgentInner, entry: &SessionEntry) {
    if entry.commands.started.load(Ordering::Acquire) {
        return;
    }
    let mut lists = entry.commands.lists.lock().await;
    if entry.commands.started.swap(true, Ordering::AcqRel) {
        return;
    }
    if lists.host.is_none() {
        lists.host = Some(entry.live.commands());
    }
    if let Err(e) = advertise(agent, entry, &mut lists).await {
        tracing::debug!(error = %e.message, "could not advertise commands");
    }
}

/// Replaces the host's commands; advertises them when advertising has started.
pub(crate) async fn set_commands(
    agent: &AgentInner,
    entry: &SessionEntry,
    commands: Vec<AvailableCommand>,
) -> Result<(), Error> {
    let mut lists = entry.commands.lists.lock().await;
    lists.host = Some(commands);
    if entry.commands.started.load(Ordering::Acquire) { advertise(agent, entry, &mut lists).await } else { Ok(()) }
}

/// Sends the session's whole list, unless it is the one last advertised (or empty, the first
/// time).
async fn advertise(agent: &AgentInner, entry: &SessionEntry, lists: &mut CommandLists) -> Result<(), Error> {
    let offers_compact = offers_compact(agent, entry);
    let mut all = Vec::new();
    if offers_compact {
        all.push(compact_command());
    }
    all.extend(lists.host.iter().flatten().filter(|c| !(offers_compact && c.name == COMPACT_COMMAND)).cloned());
    let unchanged = match &lists.advertised {
        Some(last) => *last == all,
        None => all.is_empty(),
    };
    if unchanged {
        return Ok(());
    }
    lists.advertised = Some(all.clone());
    agent.send_update(&entry.id, SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(all))).await
}

/// Whether the facade's own `compact` is offered in this session.
fn offers_compact(agent: &AgentInner, entry: &SessionEntry) -> bool {
    agent.options.compaction && entry.live.compactor().is_some()
}

/// Whether `prompt` may invoke a command: its first block is text starting with `/`. Decided
/// without a lock or a future, so that the everyday prompt pays nothing more.
pub(crate) fn may_invoke(prompt: &[ContentBlock]) -> bool {
    matches!(prompt.first(), Some(ContentBlock::Text(first)) if first.text.trim_start().starts_with('/'))
}

/// The host-defined command `prompt` invokes, if any (see the module doc).
pub(crate) async fn invoked(agent: &AgentInner, entry: &SessionEntry, prompt: &[ContentBlock]) -> Option<SlashCommand> {
    let Some(ContentBlock::Text(first)) = prompt.first() else {
        return None;
    };
    let (name, input) = parse(&first.text)?;
    let lists = entry.commands.lists.lock().await;
    let offers_compact = offers_compact(agent, entry);
    let known =
        lists.advertised.iter().flatten().any(|c| c.name == name && !(offers_compact && name == COMPACT_COMMAND));
    known.then(|| SlashCommand { name: name.to_owned(), input: input.to_owned() })
}

/// `/name input` (trimmed, split at the first whitespace): the name and the input.
fn parse(text: &str) -> Option<(&str, &str)> {
    let invocation = text.trim().strip_prefix('/')?;
    let (name, input) = invocation.split_once(char::is_whitespace).unwrap_or((invocation, ""));
    (!name.is_empty()).then_some((name, input.trim()))
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn invocations_are_slash_name_then_the_trimmed_input() {
        assert_eq!(parse("/shout hello world"), Some(("shout", "hello world")));
        assert_eq!(parse("  /shout \u{3000} hi  \n"), Some(("shout", "hi")));
        assert_eq!(parse("/shout"), Some(("shout", "")));
        assert_eq!(parse("/shout\u{a0}x"), Some(("shout", "x")));
        for not_one in ["shout hi", "", "/", "/ shout", "x /shout"] {
            assert_eq!(parse(not_one), None, "{not_one:?}");
        }
    }
}
