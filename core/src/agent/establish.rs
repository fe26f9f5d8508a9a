//! Session establishment, shared by `session/new`, `session/load` and `session/resume`: turning a
//! session the host opened into a registered one, reopening a stored one, re-attaching a live one,
//! and the config state every establishment response carries.
//!
//! Invariants:
//! - A session the host opened but the facade cannot serve (a malformed or different id, a replay
//!   that could not be written, a config snapshot that fails) is shut down again, never leaked.
//! - A stored session's id is reserved before the host is called, so an id being reopened right
//!   now never reaches the host twice, and two loads can never replay twice.
//! - A session live on this connection is re-attached without the host opening anything: only
//!   while it is idle (no prompt in flight, not closing), with the same `cwd`; `session/load`
//!   replays its history (asked of the live session, see
//!   [`SessionHistory`](crate::host::SessionHistory)), `session/resume` sends nothing. The slot is
//!   held until the response is queued, so no prompt runs during a replay.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;

use super::cancellation::cancellable;
use super::control::Control;
use super::registry::Reservation;
use super::replay::{ReplayOrder, replay_updates};
use super::session_close::{close, discard};
use super::session_set_config_option::initial_state;
use super::session_state::{SessionEntry, Work, validate_session_id};
use super::state::AgentInner;
use crate::acp::{SessionConfigOption, SessionId, SessionModeState};
use crate::client::Capabilities;
use crate::error::{Error, ErrorExt};
use crate::harness::Event;
use crate::host::{LiveSession, Setup};
use crate::panic::panic_message;
use crate::rpc::RequestContext;

/// The config state an establishment response carries (`configOptions`, `modes`): absent for a
/// session without runtime config.
#[derive(Default)]
pub(crate) struct InitialConfig {
    pub(crate) options: Option<Vec<SessionConfigOption>>,
    pub(crate) modes: Option<SessionModeState>,
}

/// How a stored session is reopened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reopen {
    /// `session/load`: with its history replayed before the response.
    Load,
    /// `session/resume`: no `session/update` before the response.
    Resume,
}

impl Reopen {
    fn method(self) -> &'static str {
        match self {
            Reopen::Load => super::method::SESSION_LOAD,
            Reopen::Resume => super::method::SESSION_RESUME,
        }
    }
}

/// Registers a session the host just opened in the reserved slot and hands the host its
/// [`SessionControl`](crate::host::SessionControl); shuts the session down again when it cannot
/// be served (its id is malformed or already live).
pub(crate) async fn register(
    agent: &Arc<AgentInner>,
    reservation: Reservation<'_>,
    live: Arc<dyn LiveSession>,
    setup: Setup,
) -> Result<Arc<SessionEntry>, Error> {
    let id = live.id();
    let client = setup.client().clone();
    let registered = validate_session_id(&id.0)
        .map_err(|e| Error::internal_msg(format!("the host created a bad session id: {}", e.message)))
        .and_then(|()| {
            let entry = SessionEntry::new(live.clone(), setup);
            agent.registry.insert(reservation, entry.clone()).map(|()| entry)
        });
    match registered {
        Ok(entry) => {
            // From now on the client knows the session: the handle may call it.
            client.bind(id);
            let control = Control::new(agent, &entry);
            if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(|| live.set_control(control))) {
                tracing::error!(session = %entry.id, panic = panic_message(&*panic), "`set_control` panicked");
            }
            Ok(entry)
        }
        Err(e) => {
            client.close_session();
            discard(agent, live.as_ref()).await;
            Err(e)
        }
    }
}

/// The config state of a newly registered session; when it cannot be read (the snapshot fails or
/// panics) the session is closed again, so that a failed establishment leaves nothing live.
pub(crate) async fn initial_config_or_close(
    agent: &AgentInner,
    entry: &Arc<SessionEntry>,
) -> Result<InitialConfig, Error> {
    match initial_config(agent, entry).await {
        Ok(config) => Ok(config),
        Err(error) => {
            let _ = close(agent, entry).await;
            Err(error)
        }
    }
}

/// The config state of a live session, a panicking snapshot reported as `-32603`.
async fn initial_config(agent: &AgentInner, entry: &SessionEntry) -> Result<InitialConfig, Error> {
    match AssertUnwindSafe(initial_state(agent, entry)).catch_unwind().await {
        Ok(Ok(Some(state))) => Ok(InitialConfig { options: Some(state.options), modes: state.modes }),
        Ok(Ok(None)) => Ok(InitialConfig::default()),
        Ok(Err(e)) => Err(e),
        Err(panic) => {
            Err(Error::internal_msg(format!("the session's config snapshot panicked: {}", panic_message(&*panic))))
        }
    }
}

/// `session/load` or `session/resume` of `id` (already validated): re-attaches it when it is live
/// on this connection, else reopens it through the host. Returns the config state for the response.
pub(crate) async fn reopen(
    agent: &Arc<AgentInner>,
    id: &SessionId,
    setup: Setup,
    how: Reopen,
    cx: &RequestContext,
) -> Result<InitialConfig, Error> {
    if let Some(entry) = agent.registry.get(id) {
        return reattach(agent, &entry, &setup, how, cx).await;
    }
    let reservation = agent.registry.reserve_id(id)?;
    let (live, history) = match how {
        Reopen::Load => {
            let loader = agent.options.loader.clone().ok_or_else(|| Error::method_not_found_msg(how.method()))?;
            let opened =
                cancellable(&cx.cancelled, how.method(), loader.load_session(id.clone(), setup.clone())).await?;
            (opened.session, opened.history)
        }
        Reopen::Resume => {
            let resumer = agent.options.resumer.clone().ok_or_else(|| Error::method_not_found_msg(how.method()))?;
            let live =
                cancellable(&cx.cancelled, how.method(), resumer.resume_session(id.clone(), setup.clone())).await?;
            (live, Vec::new())
        }
    };
    // The replay is written before the session is registered: no prompt can reach it meanwhile.
    let replayed = async {
        ensure_same_id(id, live.as_ref())?;
        if how == Reopen::Load {
            replay(agent, id, &history, setup.client_capabilities()).await?;
        }
        settled(agent, id).await
    }
    .await;
    if let Err(e) = replayed {
        setup.client().close_session();
        discard(agent, live.as_ref()).await;
        return Err(e);
    }
    let entry = register(agent, reservation, live, setup).await?;
    initial_config_or_close(agent, &entry).await
}

/// Re-attaches the live session `entry` (see the module doc).
async fn reattach(
    agent: &AgentInner,
    entry: &Arc<SessionEntry>,
    setup: &Setup,
    how: Reopen,
    cx: &RequestContext,
) -> Result<InitialConfig, Error> {
    if setup.cwd() != entry.setup.cwd() {
        return Err(Error::invalid_params_msg(format!(
            "invalid params at `cwd`: session {} is live with cwd {}, not {}",
            entry.id,
            entry.setup.cwd().display(),
            setup.cwd().display()
        )));
    }
    let slot = entry.begin(Work::Reattach)?;
    cancellable(&cx.cancelled, how.method(), entry.live.reopened(setup)).await?;
    if how == Reopen::Load {
        let source = entry.live.history().ok_or_else(|| {
            Error::invalid_request_msg(format!("session {} is already live, and its host cannot replay it", entry.id))
        })?;
        let history = cancellable(&cx.cancelled, how.method(), source.history()).await?;
        replay(agent, &entry.id, &history, entry.setup.client_capabilities()).await?;
    }
    settled(agent, &entry.id).await?;
    let config = initial_config(agent, entry).await?;
    tracing::info!(session = %entry.id, method = how.method(), "live session re-attached");
    // Held until the response is queued: a prompt sent after it finds the slot free, and a close
    // cannot answer before it.
    cx.keep_until_answered(slot.release());
    Ok(config)
}

/// Sends `history`'s replay (see [`replay_updates`]) for session `id`: in the order the options
/// ask for on v1, in conversation order on v2 (whose `session/resume` replays a conversation).
async fn replay(agent: &AgentInner, id: &SessionId, history: &[Event], client: &Capabilities) -> Result<(), Error> {
    let order = if agent.dialect.is_v2() { ReplayOrder::Conversation } else { agent.options.replay_order };
    for update in replay_updates(history, client, order) {
        agent.send_update(id, update).await?;
    }
    if agent.dialect.is_v2() {
        // v2's `session/resume` with `replayFrom`: the end of the replay, before the response.
        agent.peer().send_line(super::v2::lifecycle::replay_complete_line(id)).await?;
    }
    Ok(())
}

/// On a v2 connection, the session's current state before the answer to its `session/resume`
/// (v2 requires one, with or without a replay): idle, since no prompt can be in flight.
async fn settled(agent: &AgentInner, id: &SessionId) -> Result<(), Error> {
    if agent.dialect.is_v2() {
        agent.peer().send_line(super::v2::lifecycle::idle_line(id)).await?;
    }
    Ok(())
}

/// Fails when the host reopened a different session than asked for.
fn ensure_same_id(requested: &SessionId, live: &dyn LiveSession) -> Result<(), Error> {
    let got = live.id();
    if &got != requested {
        return Err(Error::internal_msg(format!("the host reopened session {got} instead of {requested}")));
    }
    Ok(())
}
