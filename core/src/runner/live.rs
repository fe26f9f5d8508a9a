//! The sessions live in this runner, and their ownership across the processes sharing its store.
//!
//! Per session id this process is in one of three states:
//! - **opening**: a load, resume or delete holds a [`Reservation`] while it claims the session in
//!   the store and reads it;
//! - **live**: a [`RunnerSession`] serves it;
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

use super::RunnerInner;
use super::session::RunnerSession;
use super::store::{StoreError, StoreErrorKind};
use crate::acp::SessionId;
use crate::error::{Error, ErrorExt};

enum State {
    Opening,
    Live(Weak<RunnerSession>),
    /// Cancelled when the release is done.
    Releasing(CancellationToken),
}

/// The per-id states of one runner.
#[derive(Default)]
pub(crate) struct LiveSessions {
    states: Mutex<HashMap<SessionId, State>>,
}

impl LiveSessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, State>> {
        self.states.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The live session `id`, if any.
    pub(crate) fn get(&self, id: &SessionId) -> Option<Arc<RunnerSession>> {
        match self.lock().get(id) {
            Some(State::Live(session)) => session.upgrade(),
            _ => None,
        }
    }

    /// Records a session just created (its id is new, its claim made by the store's create).
    pub(crate) fn insert_new(&self, session: &Arc<RunnerSession>) -> Result<(), Error> {
        let mut states = self.lock();
        let id = session.session_id();
        if states.get(id).is_some_and(|state| !matches!(state, State::Live(s) if s.strong_count() == 0)) {
            return Err(Error::internal_msg(format!("session id {id} is already in use")));
        }
        states.insert(id.clone(), State::Live(Arc::downgrade(session)));
        Ok(())
    }

    /// Starts giving back a live session's claim: `None` unless `session` is the live one.
    fn begin_release(&self, session: *const RunnerSession, id: &SessionId) -> Option<CancellationToken> {
        let mut states = self.lock();
        match states.get(id) {
            Some(State::Live(live)) if std::ptr::eq(live.as_ptr(), session) => {
                let done = CancellationToken::new();
                states.insert(id.clone(), State::Releasing(done.clone()));
                Some(done)
            }
            _ => None,
        }
    }

    /// Ends a release: forgets `id` unless something newer took its place.
    fn finish_release(&self, id: &SessionId, done: &CancellationToken) {
        let mut states = self.lock();
        if matches!(states.get(id), Some(State::Releasing(token)) if token == done) {
            states.remove(id);
        }
        drop(states);
        done.cancel();
    }
}

/// Reserves `id` for an opening or a delete: refused while it is live or being opened here,
/// after waiting for a release of it in progress.
pub(crate) async fn reserve(runner: &Arc<RunnerInner>, id: &SessionId) -> Result<Reservation, Error> {
    loop {
        let releasing = {
            let mut states = runner.live.lock();
            match states.get(id) {
                Some(State::Live(live)) if live.strong_count() > 0 => {
                    return Err(Error::invalid_request_msg(format!("session {id} is already open")));
                }
                Some(State::Opening) => {
                    return Err(Error::invalid_request_msg(format!("session {id} is being opened")));
                }
                Some(State::Releasing(done)) => done.clone(),
                // A session dropped without being closed: its claim is this process's still, and
                // passes to the new opening.
                Some(State::Live(_)) | None => {
                    states.insert(id.clone(), State::Opening);
                    return Ok(Reservation { runner: runner.clone(), id: id.clone(), claimed: false, settled: false });
                }
            }
        };
        releasing.cancelled().await;
    }
}

/// An id reserved by [`reserve`]; dropped unsettled, it gives back whatever claim it made.
pub(crate) struct Reservation {
    runner: Arc<RunnerInner>,
    id: SessionId,
    claimed: bool,
    settled: bool,
}

impl Reservation {
    /// Notes that a claim is about to be asked of the store: from now on, an unsettled end gives
    /// it back (a claim whose answer was lost may still have been made).
    pub(crate) fn claiming(&mut self) {
        self.claimed = true;
    }

    /// The opening succeeded: `session` is live.
    pub(crate) fn live(mut self, session: &Arc<RunnerSession>) {
        self.settled = true;
        self.runner.live.lock().insert(self.id.clone(), State::Live(Arc::downgrade(session)));
    }

    /// The session was deleted: nothing is left to give back.
    pub(crate) fn deleted(mut self) {
        self.settled = true;
        self.runner.live.lock().remove(&self.id);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        if !self.claimed {
            self.runner.live.lock().remove(&self.id);
            return;
        }
        let done = CancellationToken::new();
        self.runner.live.lock().insert(self.id.clone(), State::Releasing(done.clone()));
        spawn_release(self.runner.clone(), self.id.clone(), done);
    }
}

/// Gives back the claim of a live session being closed: writes its last events, then releases
/// it, from a task of its own (a close that outlives its grace period still finishes both), and
/// waits for that task. Nothing happens unless `session` is the live session of its id.
pub(crate) async fn close(session: &RunnerSession) {
    let runner = session.runner().clone();
    let id = session.session_id().clone();
    let Some(this) = runner.live.get(&id).filter(|live| std::ptr::eq(Arc::as_ptr(live), session)) else {
        return;
    };
    let Some(done) = runner.live.begin_release(session, &id) else {
        return;
    };
    let task = tokio::spawn(async move {
        if let Err(e) = retrying(&id, "write its last events", || this.journal().write()).await {
            tracing::error!(session = %id, error = %e, "the session's last events were not journaled");
        }
        drop(this);
        release(&runner, &id, &done).await;
    });
    let _ = task.await;
}

/// Gives back the claim of a live session dropped without being closed (its events are gone with
/// it). Outside a Tokio runtime nothing can be awaited: the claim lapses with this process.
pub(crate) fn dropped(session: &RunnerSession) {
    let runner = session.runner();
    let id = session.session_id();
    let Some(done) = runner.live.begin_release(session, id) else {
        return;
    };
    if tokio::runtime::Handle::try_current().is_ok() {
        spawn_release(runner.clone(), id.clone(), done);
    } else {
        runner.live.finish_release(id, &done);
    }
}

fn spawn_release(runner: Arc<RunnerInner>, id: SessionId, done: CancellationToken) {
    if tokio::runtime::Handle::try_current().is_err() {
        runner.live.finish_release(&id, &done);
        return;
    }
    tokio::spawn(async move { release(&runner, &id, &done).await });
}

async fn release(runner: &RunnerInner, id: &SessionId, done: &CancellationToken) {
    if let Err(e) = retrying(id, "release it", || runner.store.release_session(id)).await {
        tracing::error!(session = %id, error = %e, "could not release the session's claim");
    }
    runner.live.finish_release(id, done);
}

/// The first pause between attempts of [`retrying`]; it doubles up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(100);
/// The longest pause between attempts of [`retrying`].
const RETRY_MAX: Duration = Duration::from_secs(5);

/// Runs `attempt` until it succeeds or fails otherwise than [`StoreErrorKind::Unavailable`].
async fn retrying<F, Fut>(id: &SessionId, what: &str, mut attempt: F) -> Result<(), StoreError>
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
