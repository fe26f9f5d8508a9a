//! What one connection's agent holds: its options, live sessions, authentication state, the
//! client's capabilities and the connection to the client; and the session-scoped helpers every
//! handler shares (resolving a session id, sending a `session/update`, the authentication gate).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use super::cursor::CursorKey;
use super::options::Options;
use super::registry::Registry;
use super::session_state::{SessionEntry, validate_session_id};
use super::translate;
use crate::acp::{ClientCapabilities, SessionId, SessionUpdate};
use crate::client::Client;
use crate::error::{Error, ErrorExt};
use crate::host::Setup;
use crate::rpc::Peer;

/// The state of one connection's agent, shared by every handler.
pub(crate) struct AgentInner {
    pub(crate) options: Options,
    pub(crate) registry: Registry,
    /// Set by a successful `authenticate`, cleared by `logout`.
    pub(crate) authenticated: AtomicBool,
    /// Declared by the first `initialize`; none before it.
    pub(crate) client_capabilities: OnceLock<ClientCapabilities>,
    peer: OnceLock<Peer>,
    pub(crate) cursor_key: CursorKey,
    /// Whether the connection speaks ACP v2 (see [`super::v2`]).
    pub(crate) dialect: super::dialect::Dialect,
}

impl AgentInner {
    pub(crate) fn new(options: Options) -> Self {
        let registry = Registry::new(options.max_sessions);
        let cursor_key = options.cursor_key.map_or_else(CursorKey::random, CursorKey::from_bytes);
        Self {
            options,
            registry,
            authenticated: AtomicBool::new(false),
            client_capabilities: OnceLock::new(),
            peer: OnceLock::new(),
            cursor_key,
            dialect: super::dialect::Dialect::default(),
        }
    }

    /// Records the connection's peer; called once, before the first message is read.
    pub(crate) fn set_peer(&self, peer: &Peer) {
        let _ = self.peer.set(peer.clone());
    }

    pub(crate) fn peer(&self) -> &Peer {
        self.peer.get().expect("the peer is set before the first message is read")
    }

    pub(crate) fn client_capabilities(&self) -> ClientCapabilities {
        self.client_capabilities.get().cloned().unwrap_or_default()
    }

    /// `setup` with a new session handle on this connection's client (bound to the session's id
    /// once it is registered, see `establish::register`) and the connection's principal.
    pub(crate) fn attach_client(&self, setup: Setup) -> Setup {
        setup
            .with_client(Client::for_session(self.peer().clone(), self.client_capabilities().into()))
            .with_principal(self.options.principal.clone())
    }

    /// Fails with `-32000` while the authenticator demands a login: the first check of every
    /// session method, before its params are even read. An authenticated connection never asks
    /// the host (its hook may be a round trip into another language).
    pub(crate) fn require_authenticated(&self) -> Result<(), Error> {
        match &self.options.authenticator {
            Some(auth) if !self.authenticated.load(Ordering::Acquire) && auth.requires_authentication() => {
                Err(Error::auth_required())
            }
            _ => Ok(()),
        }
    }

    /// Validates `id`, then finds its live session (`-32602` malformed, `-32002` not live).
    pub(crate) fn resolve_session(&self, id: &SessionId) -> Result<Arc<SessionEntry>, Error> {
        validate_session_id(&id.0)?;
        self.registry.get(id).ok_or_else(|| Error::unknown_session(&id.0))
    }

    /// Sends one `session/update` through the ordered writer (serialised before the returned
    /// future is first polled, so the future stays small).
    pub(crate) fn send_update<'a>(
        &'a self,
        session_id: &SessionId,
        update: SessionUpdate,
    ) -> impl Future<Output = Result<(), Error>> + use<'a> {
        let line = translate::update_line(session_id, update);
        async move {
            self.peer().send_line(line).await?;
            Ok(())
        }
    }
}
