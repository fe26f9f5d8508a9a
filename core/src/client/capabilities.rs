//! What the client advertised in `initialize`, read the way ACP means it.
//!
//! Booleans default to `false`; an elicitation mode counts only when its key is present and not
//! `null` (`{}` or all-`null` advertises nothing, unlike MCP); garbage decodes as "nothing
//! supported" (the crate's lenient decoding). Everything the client sent stays available as the
//! ACP type ([`Capabilities::acp`]), `_meta` included.

use crate::acp::{ClientCapabilities, Meta};

/// The client's advertised capabilities, typed.
///
/// ```
/// use acp_facade::acp::{ClientCapabilities, FileSystemCapabilities};
/// use acp_facade::client::Capabilities;
///
/// let advertised = ClientCapabilities::new().fs(FileSystemCapabilities::new().read_text_file(true));
/// let capabilities = Capabilities::from(advertised);
/// assert!(capabilities.read_text_file());
/// assert!(!capabilities.write_text_file() && !capabilities.terminal());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    advertised: ClientCapabilities,
}

impl From<ClientCapabilities> for Capabilities {
    fn from(advertised: ClientCapabilities) -> Self {
        Self { advertised }
    }
}

impl Capabilities {
    /// `fs.readTextFile`: `fs/read_text_file` may be called.
    pub fn read_text_file(&self) -> bool {
        self.advertised.fs.read_text_file
    }

    /// `fs.writeTextFile`: `fs/write_text_file` may be called.
    pub fn write_text_file(&self) -> bool {
        self.advertised.fs.write_text_file
    }

    /// `terminal`: every `terminal/*` method may be called.
    pub fn terminal(&self) -> bool {
        self.advertised.terminal
    }

    /// `elicitation.form` (schema v1.21.0): `elicitation/create` in form mode may be called.
    pub fn elicitation_form(&self) -> bool {
        self.advertised.elicitation.as_ref().is_some_and(|e| e.form.is_some())
    }

    /// `elicitation.url` (schema v1.21.0): `elicitation/create` in URL mode, and
    /// `elicitation/complete`, may be called.
    pub fn elicitation_url(&self) -> bool {
        self.advertised.elicitation.as_ref().is_some_and(|e| e.url.is_some())
    }

    /// `auth.terminal` (schema v1.21.0): the client can run a terminal authentication method.
    pub fn auth_terminal(&self) -> bool {
        self.advertised.auth.terminal
    }

    /// `session.notices`: `notice` updates may be sent.
    pub fn notices(&self) -> bool {
        self.advertised.session.as_ref().is_some_and(|s| s.notices.is_some())
    }

    /// `session.compaction`: `compaction_update` and `compaction_summary_chunk` may be sent.
    pub fn compaction(&self) -> bool {
        self.advertised.session.as_ref().is_some_and(|s| s.compaction.is_some())
    }

    /// `subagents`: `subagent_update`, `session_message` and `session_message_chunk` may be sent.
    pub fn subagents(&self) -> bool {
        self.advertised.subagents.is_some()
    }

    /// `plan`: plans with ids (`plan_update`, `plan_removed`) may be sent; without it, a client
    /// gets whole `plan` updates.
    pub fn plan_operations(&self) -> bool {
        self.advertised.plan.is_some()
    }

    /// The client's `_meta` on its capabilities (its extensions), if any.
    pub fn meta(&self) -> Option<&Meta> {
        self.advertised.meta.as_ref()
    }

    /// Everything the client advertised, as the ACP type.
    pub fn acp(&self) -> &ClientCapabilities {
        &self.advertised
    }
}
