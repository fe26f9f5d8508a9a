//! The host traits: what a product implements.
//!
//! Only [`SessionHost`] is required. Every other part is optional and switches an ACP capability on
//! when present (see [`Options`](crate::Options)): [`SessionLoader`] (`loadSession`),
//! [`SessionResumer`] (`sessionCapabilities.resume`), [`SessionCatalog`]
//! (`sessionCapabilities.list`), [`SessionDeleter`] (`sessionCapabilities.delete`),
//! [`Authenticator`] (`authMethods`, `auth.logout`).
//!
//! A live session ([`LiveSession`]) may offer more, discovered at run time: [`SessionCloser`]
//! (a graceful shutdown on `session/close`), [`Compactor`] (`/compact`), [`RuntimeConfig`]
//! (`session/set_config_option`, `session/set_mode`) and [`SessionHistory`] (`session/load` of a
//! session already live on the connection).
//!
//! What the facade guarantees to every host method: the connection is initialized; session ids
//! are validated and resolved against the live registry before any host call; [`Setup`] is
//! validated (absolute, canonical `cwd`) before it reaches the host; a host method's error is
//! answered to the client with its code and message, and a panic fails only that one request
//! (`-32603`), never the connection.
//!
//! What the facade asks of every host method: be cancel-safe. When the client cancels a request
//! with `$/cancel_request` while its host call is still pending, the call's future is dropped
//! (and the request answered `-32800`), so a host must not leave behind anything that only the
//! completed call would have handed over — e.g. open a session's resources at the end of
//! `new_session`, not before an `.await`. Once a host call has returned, the facade finishes the
//! lifecycle step (registering, replaying, closing) whatever the client sends.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;

use crate::acp::{
    AuthMethod, AuthMethodId, ContentBlock, McpServer, SessionConfigId, SessionConfigOption, SessionConfigOptionValue,
    SessionId,
};
use crate::error::{Error, ErrorExt};
use crate::harness::{CommandId, Event, GateId, GateResponse};

/// The result type of host methods.
pub type HostResult<T> = Result<T, Error>;

/// A session's event stream, in order. It ends when the session is gone.
pub type EventStream = BoxStream<'static, Event>;

/// Validated setup of a session: the working directory and the session's MCP servers.
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    cwd: PathBuf,
    additional_directories: Vec<PathBuf>,
    mcp_servers: Vec<McpServer>,
}

impl Setup {
    /// Validates a setup: `cwd` and every additional directory must be absolute; they are
    /// canonicalized (symlinks resolved) when they exist. MCP servers are passed through as given.
    pub fn new(
        cwd: impl Into<PathBuf>,
        additional_directories: Vec<PathBuf>,
        mcp_servers: Vec<McpServer>,
    ) -> Result<Self, Error> {
        let cwd = absolute("cwd", cwd.into())?;
        let additional_directories = additional_directories
            .into_iter()
            .map(|dir| absolute("additionalDirectories", dir))
            .collect::<Result<_, _>>()?;
        Ok(Self { cwd, additional_directories, mcp_servers })
    }

    /// The session's working directory: absolute and canonical.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Extra workspace roots.
    pub fn additional_directories(&self) -> &[PathBuf] {
        &self.additional_directories
    }

    /// MCP servers the session should connect to, as the client sent them.
    pub fn mcp_servers(&self) -> &[McpServer] {
        &self.mcp_servers
    }
}

/// The form hosts in other languages receive (the bindings pass it on as is):
/// `{"cwd": "/abs/path", "additionalDirectories": ["/abs/other"], "mcpServers": [<ACP McpServer>]}`,
/// in that order. Paths are strings (a path that is not UTF-8 is converted lossily); MCP servers
/// keep their ACP wire form.
impl serde::Serialize for Setup {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut setup = serializer.serialize_struct("Setup", 3)?;
        setup.serialize_field("cwd", &self.cwd.to_string_lossy())?;
        let directories: Vec<_> = self.additional_directories.iter().map(|d| d.to_string_lossy()).collect();
        setup.serialize_field("additionalDirectories", &directories)?;
        setup.serialize_field("mcpServers", &self.mcp_servers)?;
        setup.end()
    }
}

fn absolute(field: &str, path: PathBuf) -> Result<PathBuf, Error> {
    if !path.is_absolute() {
        return Err(Error::invalid_params_msg(format!("`{field}` must be an absolute path, got {}", path.display())));
    }
    // A directory that does not exist (yet) on this machine keeps its lexical form.
    Ok(std::fs::canonicalize(&path).unwrap_or(path))
}

/// Creates sessions. The one required host part.
///
/// See <https://agentclientprotocol.com/protocol/session-setup>.
#[async_trait]
pub trait SessionHost: Send + Sync + 'static {
    /// Creates a session for `session/new`.
    ///
    /// Called after `initialize` (and `authenticate`, when the authenticator requires it), with a
    /// validated [`Setup`], and only while the live registry has room. Return the live session;
    /// its [`LiveSession::id`] becomes the ACP `sessionId` and must be unique, non-empty, at most
    /// 256 bytes and free of control characters.
    async fn new_session(&self, setup: Setup) -> HostResult<Arc<dyn LiveSession>>;
}

/// A live session plus its durable history, for `session/load`.
pub struct LoadedSession {
    /// The session, now live.
    pub session: Arc<dyn LiveSession>,
    /// Its Enduring events, oldest first, up to the replay anchor (events after it arrive on the
    /// live stream).
    pub history: Vec<Event>,
}

/// Reopens a stored session with its history (`session/load`, capability `loadSession`).
#[async_trait]
pub trait SessionLoader: Send + Sync + 'static {
    /// Loads `session_id`. The facade has checked it is well formed and not live on this
    /// connection (a live one is re-attached without the loader, see [`SessionHistory`]); it
    /// replays `history` to the client before answering, then serves the session as live.
    async fn load_session(&self, session_id: SessionId, setup: Setup) -> HostResult<LoadedSession>;
}

/// Reopens a stored session without history (`session/resume`).
#[async_trait]
pub trait SessionResumer: Send + Sync + 'static {
    /// Resumes `session_id`; the facade sends no `session/update` for it before answering. Not
    /// called for a session live on this connection: resuming that one only answers.
    async fn resume_session(&self, session_id: SessionId, setup: Setup) -> HostResult<Arc<dyn LiveSession>>;
}

/// One stored session, as the catalog knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCatalogEntry {
    /// The session's id.
    pub session_id: SessionId,
    /// Its working directory, when known; entries with none (and not live) are not listed.
    pub cwd: Option<PathBuf>,
    /// Extra roots.
    pub additional_directories: Vec<PathBuf>,
    /// Its title.
    pub title: Option<String>,
    /// Last activity, ISO 8601.
    pub updated_at: Option<String>,
}

/// Lists stored sessions (`session/list`).
#[async_trait]
pub trait SessionCatalog: Send + Sync + 'static {
    /// Every stored session, in any order; the facade sorts, filters and paginates.
    async fn list_sessions(&self) -> HostResult<Vec<SessionCatalogEntry>>;
}

/// Deletes stored sessions (`session/delete`).
#[async_trait]
pub trait SessionDeleter: Send + Sync + 'static {
    /// Deletes `session_id`'s durable history. Never called for a live session. Deleting an
    /// unknown id should succeed quietly.
    async fn delete_session(&self, session_id: SessionId) -> HostResult<()>;
}

/// Authentication (`authenticate`, `logout`).
#[async_trait]
pub trait Authenticator: Send + Sync + 'static {
    /// The methods advertised in `initialize`.
    fn methods(&self) -> Vec<AuthMethod>;

    /// Whether the session methods (`session/new`, `load`, `resume`, `list`, `delete`,
    /// `prompt`, `close`, `set_mode`, `set_config_option`) must answer `-32000` right now, until
    /// `authenticate` succeeds on the connection (and again after `logout`).
    fn requires_authentication(&self) -> bool;

    /// Authenticates with one of [`Authenticator::methods`] (the facade checks the id first).
    async fn authenticate(&self, method_id: AuthMethodId) -> HostResult<()>;

    /// Whether `logout` is supported (advertised as `auth.logout`).
    fn supports_logout(&self) -> bool {
        false
    }

    /// Logs out; only called when [`Authenticator::supports_logout`] is true.
    async fn logout(&self) -> HostResult<()> {
        Err(Error::method_not_found_msg("logout"))
    }
}

/// A session the host is running.
///
/// The facade subscribes to its events before it submits a prompt, correlates the turn by the
/// returned [`CommandId`], and translates the turn's `Public` events as `session/update`.
#[async_trait]
pub trait LiveSession: Send + Sync + 'static {
    /// The session's id.
    fn id(&self) -> SessionId;

    /// A new subscription to the session's events, from now on. Each subscription receives every
    /// event published after it was made, in order.
    fn subscribe_events(&self) -> HostResult<EventStream>;

    /// Starts a turn with `prompt`; returns the command id that the turn's `TurnStarted` will carry
    /// in `cause.command_id`.
    async fn submit(&self, prompt: Vec<ContentBlock>) -> HostResult<CommandId>;

    /// Interrupts the running turn, which should then end with `TurnInterrupted`. Called on
    /// `session/cancel`, `$/cancel_request` for a prompt, and `session/close`.
    async fn interrupt(&self) -> HostResult<()>;

    /// Answers a gate the session's loop opened.
    async fn respond_gate(&self, gate_id: GateId, response: GateResponse) -> HostResult<()>;

    /// The graceful shutdown hook, if this session has one.
    fn closer(&self) -> Option<&dyn SessionCloser> {
        None
    }

    /// The compactor, if this session supports `/compact`.
    fn compactor(&self) -> Option<&dyn Compactor> {
        None
    }

    /// Runtime configuration, if this session has options.
    fn config(&self) -> Option<&dyn RuntimeConfig> {
        None
    }

    /// The session's durable history, if it can tell it while live: what lets a client re-attach
    /// with `session/load` to a session already live on its connection.
    fn history(&self) -> Option<&dyn SessionHistory> {
        None
    }
}

/// A session's graceful shutdown, called once by `session/close` (and at disconnect), after the
/// in-flight prompt has returned, bounded by the close grace period.
#[async_trait]
pub trait SessionCloser: Send + Sync {
    /// Releases everything held for the session. Durable history must stay.
    async fn shutdown(&self) -> HostResult<()>;
}

/// The durable history of a live session.
///
/// Called when a client sends `session/load` for a session that is live and idle on its own
/// connection (an editor reopening a thread it still holds): the facade replays the history, as
/// for a stored session, without reopening anything. No prompt runs meanwhile (one arriving is
/// refused), so the history is complete.
#[async_trait]
pub trait SessionHistory: Send + Sync {
    /// The session's Enduring events so far, oldest first.
    async fn history(&self) -> HostResult<Vec<Event>>;
}

/// A session's compaction.
#[async_trait]
pub trait Compactor: Send + Sync {
    /// Starts compacting; the outcome arrives as `CompactWaiterResolved` or
    /// `CompactWaiterRejected` with `cause.command_id` equal to the returned id.
    async fn compact(&self) -> HostResult<CommandId>;
}

/// A session's runtime configuration options (also served as modes).
#[async_trait]
pub trait RuntimeConfig: Send + Sync {
    /// The current options, read fresh for every request. An option with id
    /// [`MODE_CONFIG_ID`] is also served as the session's modes.
    async fn snapshot(&self) -> HostResult<Vec<SessionConfigOption>>;

    /// Sets one option. The facade has checked the id and value against a fresh snapshot and
    /// that the value differs from the current one.
    async fn set_option(&self, config_id: SessionConfigId, value: SessionConfigOptionValue) -> HostResult<()>;
}

/// The well-known config option id served as the session's modes.
pub const MODE_CONFIG_ID: &str = "mode";

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_setup_serializes_as_hosts_in_other_languages_receive_it() {
        let server = json!({"name": "fs", "command": "/bin/mcp-fs", "args": ["--ro"], "env": []});
        let setup = Setup::new(
            "/nonexistent/acp-facade/project",
            vec![PathBuf::from("/nonexistent/acp-facade/lib")],
            vec![serde_json::from_value(server.clone()).unwrap()],
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&setup).unwrap(),
            r#"{"cwd":"/nonexistent/acp-facade/project","additionalDirectories":["/nonexistent/acp-facade/lib"],"mcpServers":[{"name":"fs","command":"/bin/mcp-fs","args":["--ro"],"env":[]}]}"#,
            "the fields in the order hosts have always seen them"
        );
        assert_eq!(
            serde_json::to_value(&setup).unwrap(),
            json!({
                "cwd": "/nonexistent/acp-facade/project",
                "additionalDirectories": ["/nonexistent/acp-facade/lib"],
                "mcpServers": [server],
            })
        );
    }
}
