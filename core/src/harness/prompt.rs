//! A prompt as the facade hands it to a host: its content blocks, the host-defined slash command
//! it invokes, if any, and the request's `_meta`.
//!
//! Hosts in other languages receive its serialised form (the bindings pass it on as is):
//! `{"content": [<ACP ContentBlock>], "command": {"name": "shout", "input": "hi"} | null,
//! "meta": {...} | null}`.

use serde::Serialize;

use crate::acp::{ContentBlock, Meta};

/// One invocation of a host-defined slash command: a prompt whose first block is the text
/// `/name input` naming one of the commands the session advertises (see
/// [`LiveSession::commands`](crate::host::LiveSession::commands)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlashCommand {
    /// The command's name, without the slash.
    pub name: String,
    /// What follows the name, trimmed; empty when nothing does.
    pub input: String,
}

/// A `session/prompt`, as [`LiveSession::submit_prompt`](crate::host::LiveSession::submit_prompt)
/// receives it.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[non_exhaustive]
pub struct Prompt {
    /// The content blocks, as the client sent them (already checked against the advertised
    /// `promptCapabilities`).
    pub content: Vec<ContentBlock>,
    /// The host-defined slash command the prompt invokes, if any. The content still holds the
    /// prompt's text as typed.
    pub command: Option<SlashCommand>,
    /// The request's `_meta` (for example a W3C `traceparent`), as the client sent it.
    pub meta: Option<Meta>,
    /// The id the client was told the prompt's user message has (ACP v2's acknowledgement), for
    /// the host to keep with the message ([`UserMessage::id`](super::UserMessage::id)) so that a
    /// replay shows it under the same id. `None` on v1, which names no message.
    #[serde(skip_serializing_if = "Option::is_none", rename = "messageId")]
    pub message_id: Option<String>,
}

impl Prompt {
    /// A prompt of `content`, invoking no command, without `_meta`.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        Self { content, command: None, meta: None, message_id: None }
    }

    /// Sets the invoked command.
    #[must_use]
    pub fn command(mut self, command: Option<SlashCommand>) -> Self {
        self.command = command;
        self
    }

    /// Sets the request's `_meta`.
    #[must_use]
    pub fn meta(mut self, meta: Option<Meta>) -> Self {
        self.meta = meta;
        self
    }

    /// Sets the id the client was told the user message has.
    #[must_use]
    pub fn message_id(mut self, message_id: Option<String>) -> Self {
        self.message_id = message_id;
        self
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::harness::content::text_block;

    #[test]
    fn a_prompt_serializes_as_hosts_in_other_languages_receive_it() {
        let meta: Meta = serde_json::from_value(json!({"traceparent": "00-1-2-01"})).unwrap();
        let command = SlashCommand { name: "shout".into(), input: "hi".into() };
        let prompt = Prompt::new(vec![text_block("/shout hi")]).command(Some(command)).meta(Some(meta));
        assert_eq!(
            serde_json::to_value(&prompt).unwrap(),
            json!({
                "content": [{"type": "text", "text": "/shout hi"}],
                "command": {"name": "shout", "input": "hi"},
                "meta": {"traceparent": "00-1-2-01"},
            })
        );
        let plain = Prompt::new(vec![text_block("hello")]);
        assert_eq!(
            serde_json::to_value(&plain).unwrap(),
            json!({"content": [{"type": "text", "text": "hello"}], "command": null, "meta": null})
        );
    }
}
