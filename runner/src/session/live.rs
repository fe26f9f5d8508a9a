//! The sessions live in this runner, and their ownership across the processes sharing its store.
//!
//! Per session id this process is in one of three states:
//! - **opening**: a load, resume or delete holds a [`Reservation`] while it claims the session in
//!   the store and reads it;
//! - **live**: a session object (`S`, the runner's session) serves it;
//! - **releasing**: it was closed, or an opening was abandoned, and its claim is being given back
//!   to the store.
//!
//! Invariants:
//! - At most one live session per id in this process, and none while an opening or a delete of
//!   that id is under way (a second one is refused with `-32600`).
//! - A claim that does not end in a live session is always given back: when the opening fails,
//!   and also when its future is dropped (a client's `$/cancel_request`), from a task of its own.
//! - A new opening of an id waits until the release of that id has finished, so a release can
//!   never take the claim from under a newer live session of this process.
//! - Releases retry while the store is unavailable: a session closed during a database outage
//!   is given back when the database returns (and, at the latest, when this process's lease
//!   expires, if it exits first).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::store::{Store, StoreError, StoreErrorKind};
use acp_facade::acp::SessionId;
use acp_facade::error::{Error, ErrorExt};

enum State<S> {
    Opening,
    Live(Weak<S>),
    /// Cancelled when the release is done.
    Releasing(CancellationToken),
}

/// The per-id states of one runner, and the store its claims are made in.
pub(crate) struct LiveSessions<S> {
    store: Arc<dyn Store>,
    states: Mutex<HashMap<SessionId, State<S>>>,
}

impl<S: Send + Sync + 'static> LiveSessions<S> {
    pub(crate) fn new(store: Arc<dyn Store>) -> Arc<Self> {
        Arc::new(Self { store, states: Mutex::default() })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, State<S>>> {
        self.states.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The live session `id`, if any.
    pub(crate) fn get(&self, id: &SessionId) -> Option<Arc<S>> {
        match self.lock().get(id) {
            Some(State::Live(session)) => session.upgrade(),
            _ => None,
        }
    }

    /// Records a session just created (its id is new; the store's create made the claim).
    pub(crate) fn insert_new(&self, id: &SessionId, session: &Arc<S>) -> Result<(), Error> {
        let mut states = self.lock();
        if states.get(id).is_some_and(|state| !matches!(state, State::Live(s) if s.strong_count() == 0)) {
            return Err(Error::internal_msg(format!("session id {id} is already in use")));
        }
        states.insert(id.clone(), State::Live(Arc::downgrade(session)));
        Ok(())
    }

    /// Reserves `id` for an opening or a delete: refused while it is live or being opened here,
    /// after waiting for a release of it in progress.
    pub(crate) async fn reserve(self: &Arc<Self>, id: &SessionId) -> Result<Reservation<S>, Error> {
        loop {
            let releasing = {
                let mut states = self.lock();
                match states.get(id) {
                    Some(State::Live(live)) if live.strong_count() > 0 => {
                        return Err(Error::invalid_request_msg(format!("session {id} is already open")));
                    }
                    Some(State::Opening) => {
                        return Err(Error::invalid_request_msg(format!("session {id} is being opened")));
                    }
                    Some(State::Releasing(done)) => done.clone(),
                    // A session dropped without being closed: its claim is this process's still,
                    // and passes to the new opening.
                    Some(State::Live(_)) | None => {
                        states.insert(id.clone(), State::Opening);
                        return Ok(Reservation { live: self.clone(), id: id.clone(), claimed: false, settled: false });
                    }
                }
            };
            releasing.cancelled().await;
        }
    }

    /// Starts giving back the claim of `session`, the live session of `id` (`None` when it is
    /// not: closed already, or never registered).
    pub(crate) fn begin_release(&self, id: &SessionId, session: *const S) -> Option<Release> {
        let mut states = self.lock();
        match states.get(id) {
            Some(State::Live(live)) if std::ptr::eq(live.as_ptr(), session) => {
                let done = CancellationToken::new();
                states.insert(id.clone(), State::Releasing(done.clone()));
                Some(Release { id: id.clone(), done })
            }
            _ => None,
        }
    }

    /// Gives the claim back, retrying while the store is unavailable, and ends the release.
    pub(crate) async fn release(&self, release: Release) {
        let Release { id, done } = release;
        if let Err(e) = retrying(&id, "release it", || self.store.release_session(&id)).await {
            tracing::error!(session = %id, error = %e, "could not release the session's claim");
        }
        self.finish_release(&id, &done);
    }

    /// Like [`LiveSessions::release`], from a task of its own (ends the release at once outside a
    /// Tokio runtime: the claim then lapses with this process's lease).
    pub(crate) fn spawn_release(self: &Arc<Self>, release: Release) {
        if tokio::runtime::Handle::try_current().is_err() {
            self.finish_release(&release.id, &release.done);
            return;
        }
        let live = self.clone();
        tokio::spawn(async move { live.release(release).await });
    }

    /// Forgets `id` unless something newer took its place, and wakes openings waiting for it.
    fn finish_release(&self, id: &SessionId, done: &CancellationToken) {
        let mut states = self.lock();
        if matches!(states.get(id), Some(State::Releasing(token)) if token == done) {
            states.remove(id);
        }
        drop(states);
        done.cancel();
    }
}

/// A release begun by [`LiveSessions::begin_release`]: hand it to [`LiveSessions::release`].
pub(crate) struct Release {
    id: SessionId,
    done: CancellationToken,
}

/// An id reserved by [`LiveSessions::reserve`]; dropped unsettled, it gives back whatever claim
/// it made.
pub(crate) struct Reservation<S: Send + Sync + 'static> {
    live: Arc<LiveSessions<S>>,
    id: SessionId,
    claimed: bool,
    settled: bool,
}

impl<S: Send + Sync + 'static> Reservation<S> {
    /// Notes that a claim is about to be asked of the store: from now on, an unsettled end gives
    /// it back (a claim whose answer was lost may still have been made).
    pub(crate) fn claiming(&mut self) {
        self.claimed = true;
    }

    /// The opening succeeded: `session` is live.
    pub(crate) fn live(mut self, session: &Arc<S>) {
        self.settled = true;
        self.live.lock().insert(self.id.clone(), State::Live(Arc::downgrade(session)));
    }

    /// The session was deleted: nothing is left to give back.
    pub(crate) fn deleted(mut self) {
        self.settled = true;
        self.live.lock().remove(&self.id);
    }
}

impl<S: Send + Sync + 'static> Drop for Reservation<S> {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        if !self.claimed {
            self.live.lock().remove(&self.id);
            return;
        }
        let done = CancellationToken::new();
        self.live.lock().insert(self.id.clone(), State::Releasing(done.clone()));
        let release = Release { id: self.id.clone(), done };
        self.live.spawn_release(release);
    }
}

/// The first pause between attempts of [`retrying`]; it doubles up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(100);
/// The longest pause between attempts of [`retrying`].
const RETRY_MAX: Duration = Duration::from_secs(5);

/// Runs `attempt` until it succeeds or fails otherwise than [`StoreErrorKind::Unavailable`]
/// (`what` says what it does to session `id`, for the log).
pub(crate) async fn retrying<F, Fut>(id: &SessionId, what: &str, mut attempt: F) -> Result<(), StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), StoreError>>,
{
    let mut pause = RETRY_FIRST;
    let mut failures = 0u32;
    loop {
        match attempt().await {
            Ok(()) => {
                if failures > 0 {
                    tracing::info!(session = %id, "the session store is back: could {what}");
                }
                return Ok(());
            }
            Err(e) if e.kind() == StoreErrorKind::Unavailable => {
                if failures == 0 {
                    tracing::warn!(session = %id, error = %e, "cannot {what} yet: retrying until the store is back");
                }
                failures = failures.saturating_add(1);
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(RETRY_MAX);
            }
            Err(e) => return Err(e),
        }
    }
}
