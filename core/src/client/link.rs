//! What every handle of one session shares, and the release of terminals.
//!
//! A [`SessionLink`] holds the connection, the session's id once the session is established, the
//! client's capabilities, the session's cancellation (fired when the session closes or the client
//! goes away), the scope of the prompt in flight, and every terminal not yet released.
//!
//! A [`Scope`] is the span a call belongs to — a runner turn, or the prompt in flight for calls
//! made through the session's own handle: its cancellation cancels the calls made in it, and the
//! terminals created in it are killed and released when it ends cancelled.
//!
//! Invariant: a terminal is released exactly once. Every path that releases one — the host's
//! `release`, dropping the handle, the end of its scope, the session closing — first takes its
//! [`Lease`] (`Lease::take`), which succeeds once; the lines (`terminal/kill` when it may still
//! run and its scope was cancelled, then `terminal/release`) are queued on the connection's ordered
//! writer in that order, and their answers are not awaited — a release must go out even while the
//! connection closes, and the agent has nothing left to do with the answer.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tokio_util::sync::CancellationToken;

use super::capabilities::Capabilities;
use super::method::{TERMINAL_KILL, TERMINAL_RELEASE};
use crate::acp::{KillTerminalRequest, ReleaseTerminalRequest, SessionId, TerminalId};
use crate::rpc::Peer;

/// The record of one terminal the agent created: released once.
#[derive(Debug)]
pub(crate) struct Lease {
    pub(crate) id: TerminalId,
    state: Mutex<LeaseState>,
}

#[derive(Debug, Default)]
struct LeaseState {
    released: bool,
    /// The client reported its exit (`wait_for_exit`, or `output` with an exit status).
    exited: bool,
}

impl Lease {
    pub(crate) fn new(id: TerminalId) -> Arc<Self> {
        Arc::new(Self { id, state: Mutex::default() })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LeaseState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the terminal released; `Some(exited)` the first time, `None` ever after.
    pub(crate) fn take(&self) -> Option<bool> {
        let mut state = self.lock();
        if state.released {
            return None;
        }
        state.released = true;
        Some(state.exited)
    }

    pub(crate) fn is_released(&self) -> bool {
        self.lock().released
    }

    pub(crate) fn mark_exited(&self) {
        self.lock().exited = true;
    }
}

/// The span calls belong to; see the module doc.
#[derive(Debug, Default)]
pub(crate) struct Scope {
    pub(crate) cancel: CancellationToken,
    terminals: Mutex<Vec<Arc<Lease>>>,
}

impl Scope {
    pub(crate) fn new(cancel: CancellationToken) -> Arc<Self> {
        Arc::new(Self { cancel, terminals: Mutex::default() })
    }

    fn adopt(&self, lease: &Arc<Lease>) {
        adopt(&self.terminals, lease);
    }

    /// The terminals created in this scope and not yet released.
    fn unreleased(&self) -> Vec<Arc<Lease>> {
        unreleased(&self.terminals)
    }
}

fn adopt(list: &Mutex<Vec<Arc<Lease>>>, lease: &Arc<Lease>) {
    let mut list = list.lock().unwrap_or_else(PoisonError::into_inner);
    list.retain(|l| !l.is_released());
    list.push(lease.clone());
}

fn unreleased(list: &Mutex<Vec<Arc<Lease>>>) -> Vec<Arc<Lease>> {
    let mut list = list.lock().unwrap_or_else(PoisonError::into_inner);
    list.retain(|l| !l.is_released());
    list.clone()
}

/// What every handle of one session shares; see the module doc.
#[derive(Debug)]
pub(crate) struct SessionLink {
    /// `None` for a detached handle (no connection): it advertises nothing, so nothing is sent.
    pub(crate) peer: Option<Peer>,
    session_id: OnceLock<SessionId>,
    pub(crate) capabilities: Capabilities,
    /// Fires when the session closes or the client goes away.
    pub(crate) closed: CancellationToken,
    /// The scope of the prompt in flight, for calls made through the session's own handle.
    prompt: Mutex<Option<Arc<Scope>>>,
    /// Every terminal of the session not yet released.
    terminals: Mutex<Vec<Arc<Lease>>>,
    /// Where clean-up that cannot wait (a handle dropped outside the runtime) is spawned.
    runtime: Option<tokio::runtime::Handle>,
    /// How far the facade has forwarded the session's events (see [`Forwarding`]).
    pub(crate) forwarding: Forwarding,
}

/// How far the facade has forwarded the session's events to the client, so that a call of a
/// turn goes out after the updates of every event the turn published before it (a `tool_call`
/// embedding a terminal before the terminal is waited for, say). The facade's prompt marks each
/// event's `seq` once its update is queued; a call waits until the mark has passed the `seq` the
/// host's next event would get — or until no prompt forwards anything (then there is no order to
/// keep). Two atomics per event on the streaming path; waiters are woken only when there are some.
#[derive(Debug, Default)]
pub(crate) struct Forwarding {
    active: std::sync::atomic::AtomicBool,
    /// One past the `seq` of the last event forwarded.
    next: std::sync::atomic::AtomicU64,
    waiters: std::sync::atomic::AtomicUsize,
    moved: tokio::sync::Notify,
}

impl Forwarding {
    /// A prompt starts forwarding the session's events.
    pub(crate) fn start(&self) {
        self.active.store(true, std::sync::atomic::Ordering::Release);
    }

    /// The update of event `seq` (and of every earlier one) is queued.
    pub(crate) fn forwarded(&self, seq: u64) {
        self.next.fetch_max(seq.saturating_add(1), std::sync::atomic::Ordering::AcqRel);
        if self.waiters.load(std::sync::atomic::Ordering::Acquire) > 0 {
            self.moved.notify_waiters();
        }
    }

    /// The prompt stops forwarding: nobody waits for it any more.
    pub(crate) fn stop(&self) {
        self.active.store(false, std::sync::atomic::Ordering::Release);
        self.moved.notify_waiters();
    }

    /// Whether every event numbered below `published` is forwarded, or nothing forwards.
    pub(crate) fn caught_up(&self, published: u64) -> bool {
        !self.active.load(std::sync::atomic::Ordering::Acquire)
            || self.next.load(std::sync::atomic::Ordering::Acquire) >= published
    }

    /// Resolves once every event numbered below `published` is forwarded, or nothing forwards.
    pub(crate) async fn caught_up_with(&self, published: u64) {
        loop {
            let moved = self.moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            if self.caught_up(published) {
                return;
            }
            self.waiters.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            // Checked again once counted: a mark set in between did not notify.
            if !self.caught_up(published) {
                moved.await;
            }
            self.waiters.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
        }
    }
}

impl SessionLink {
    pub(crate) fn new(peer: Option<Peer>, capabilities: Capabilities) -> Arc<Self> {
        Arc::new(Self {
            peer,
            session_id: OnceLock::new(),
            capabilities,
            closed: CancellationToken::new(),
            prompt: Mutex::default(),
            terminals: Mutex::default(),
            runtime: tokio::runtime::Handle::try_current().ok(),
            forwarding: Forwarding::default(),
        })
    }

    pub(crate) fn session_id(&self) -> Option<&SessionId> {
        self.session_id.get()
    }

    /// Binds the session's id (once; later binds are ignored).
    pub(crate) fn bind(&self, id: SessionId) {
        let _ = self.session_id.set(id);
    }

    /// The scope of the prompt in flight, if any.
    pub(crate) fn prompt_scope(&self) -> Option<Arc<Scope>> {
        self.prompt.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Opens the scope of a new prompt.
    pub(crate) fn begin_prompt(&self) -> Arc<Scope> {
        let scope = Scope::new(CancellationToken::new());
        *self.prompt.lock().unwrap_or_else(PoisonError::into_inner) = Some(scope.clone());
        scope
    }

    /// Cancels the calls of the prompt in flight.
    pub(crate) fn cancel_prompt(&self) {
        if let Some(scope) = self.prompt_scope() {
            scope.cancel.cancel();
        }
    }

    /// Closes the prompt's scope: when it was cancelled, its terminals are killed and released.
    pub(crate) async fn end_prompt(&self, scope: &Arc<Scope>) {
        {
            let mut prompt = self.prompt.lock().unwrap_or_else(PoisonError::into_inner);
            if prompt.as_ref().is_some_and(|current| Arc::ptr_eq(current, scope)) {
                *prompt = None;
            }
        }
        if scope.cancel.is_cancelled() {
            self.release_scope(scope).await;
        }
    }

    /// Records a new terminal in the session and in `scope`.
    pub(crate) fn adopt(&self, lease: &Arc<Lease>, scope: Option<&Scope>) {
        adopt(&self.terminals, lease);
        if let Some(scope) = scope {
            scope.adopt(lease);
        }
    }

    /// Releases the terminals of `scope` not yet released, killing those that may still run
    /// when the scope was cancelled.
    pub(crate) async fn release_scope(&self, scope: &Scope) {
        let kill = scope.cancel.is_cancelled() || self.is_closed();
        for lease in scope.unreleased() {
            self.dispose(&lease, kill).await;
        }
    }

    /// Whether the session closed or the client went away.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.is_cancelled() || self.peer.as_ref().is_some_and(Peer::is_closed)
    }

    /// The session closes (or the client went away): cancels every call of the session.
    pub(crate) fn close(&self) {
        self.closed.cancel();
        self.cancel_prompt();
    }

    /// Kills and releases every terminal of the session not yet released.
    pub(crate) async fn release_all(&self) {
        for lease in unreleased(&self.terminals) {
            self.dispose(&lease, true).await;
        }
    }

    /// The clean-up lines of `lease` — `terminal/kill` (when `kill` and it was not seen to exit),
    /// then `terminal/release` — or `None` when it was already released.
    fn disposal(&self, lease: &Lease, kill: bool) -> Option<(&Peer, Vec<Vec<u8>>)> {
        let exited = lease.take()?;
        let (Some(peer), Some(session)) = (&self.peer, self.session_id()) else {
            return None;
        };
        let mut lines = Vec::with_capacity(2);
        if kill && !exited {
            let kill = KillTerminalRequest::new(session.clone(), lease.id.clone());
            lines.push(peer.unawaited_request_line(TERMINAL_KILL, &kill));
        }
        let release = ReleaseTerminalRequest::new(session.clone(), lease.id.clone());
        lines.push(peer.unawaited_request_line(TERMINAL_RELEASE, &release));
        tracing::debug!(session = %session, terminal = %lease.id, kill = lines.len() == 2, "releasing a terminal");
        Some((peer, lines))
    }

    /// Releases `lease` (see [`SessionLink::disposal`]), waiting for room on the writer.
    pub(crate) async fn dispose(&self, lease: &Lease, kill: bool) {
        let Some((peer, lines)) = self.disposal(lease, kill) else { return };
        for line in lines {
            if peer.send_line(line).await.is_err() {
                return;
            }
        }
    }

    /// Releases `lease` without waiting (for destructors): lines that find the writer's queue full
    /// are queued, in order, by a task spawned on the session's runtime.
    pub(crate) fn dispose_now(&self, lease: &Lease, kill: bool) {
        let Some((peer, lines)) = self.disposal(lease, kill) else { return };
        let mut lines = lines.into_iter();
        while let Some(line) = lines.next() {
            match peer.try_send_line(line) {
                Ok(()) => {}
                Err(None) => return,
                Err(Some(line)) => {
                    let rest: Vec<Vec<u8>> = std::iter::once(line).chain(lines).collect();
                    let peer = peer.clone();
                    let send = async move {
                        for line in rest {
                            if peer.send_line(line).await.is_err() {
                                return;
                            }
                        }
                    };
                    if let Some(runtime) = &self.runtime {
                        drop(runtime.spawn(send));
                    } else {
                        tracing::warn!(terminal = %lease.id, "no runtime to release a terminal on");
                    }
                    return;
                }
            }
        }
    }
}
