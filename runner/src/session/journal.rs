//! One session's journal writer: Enduring events gathered into batches, each batch written to the
//! [`Store`] as one transaction, in order.
//!
//! Invariants:
//! - **Order.** Events are gathered in `seq` order (the session gathers them while it holds the
//!   hub's publish order). A batch is cut from what was gathered, and batches are written one at a
//!   time, in the order they were cut, each after the previous one succeeded: the journal holds
//!   the events in the order the client saw them.
//! - **Nothing dropped, nothing twice.** A batch whose write fails stays queued, unchanged, and is
//!   written again, before anything newer, by the next write. A batch is never merged with later
//!   events, so a repeat after a failure with an unknown outcome is the very same batch (same
//!   first `seq`), which the store applies at most once (see [`Store`]).
//! - **Fenced off is final.** Once the store refuses a write because another process owns the
//!   session ([`StoreErrorKind::NotOwner`]), the queued batches can never be written: they are
//!   dropped, and every later write fails the same way without reaching the store.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

use crate::store::{Store, StoreError, StoreErrorKind};
use acp_facade::acp::SessionId;
use acp_facade::harness::{Event, EventKind};

/// How long an Enduring event may wait for its batch to be written while its turn runs on.
pub const JOURNAL_DELAY: Duration = Duration::from_millis(10);

/// Events to write in one transaction, and the catalog update that goes with them.
#[derive(Default)]
struct Batch {
    events: Vec<Event>,
    /// Title (when new) and update time of the session.
    touch: Option<(Option<String>, String)>,
}

/// The journal writer of one session.
pub(crate) struct Journal {
    id: SessionId,
    store: Arc<dyn Store>,
    /// Events gathered since the last batch was cut.
    gathering: Mutex<Batch>,
    /// Batches cut and not yet written, oldest first; the lock serialises writers.
    queued: tokio::sync::Mutex<VecDeque<Batch>>,
    /// Whether `queued` holds a batch whose write failed (read without its lock).
    backlog: AtomicBool,
    /// Why the session's writes are fenced off, once they are.
    fenced: OnceLock<StoreError>,
    /// Signalled when an event arrives in an empty `gathering`: starts the [`JOURNAL_DELAY`] clock.
    arrived: Notify,
}

impl Journal {
    pub(crate) fn new(id: SessionId, store: Arc<dyn Store>) -> Self {
        Self {
            id,
            store,
            gathering: Mutex::default(),
            queued: tokio::sync::Mutex::default(),
            backlog: AtomicBool::new(false),
            fenced: OnceLock::new(),
            arrived: Notify::new(),
        }
    }

    /// The store the journal is written to.
    pub(crate) fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    fn lock_gathering(&self) -> std::sync::MutexGuard<'_, Batch> {
        self.gathering.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a numbered Enduring event to the next batch.
    pub(crate) fn gather(&self, event: &Event) {
        let mut gathering = self.lock_gathering();
        let first = gathering.events.is_empty();
        gathering.events.push(event.clone());
        drop(gathering);
        if first {
            self.arrived.notify_one();
        }
    }

    /// Records a title (when new) and the update time with the next batch.
    pub(crate) fn touch_with_next_batch(&self, title: Option<String>, at: String) {
        self.lock_gathering().touch = Some((title, at));
    }

    /// Completes [`JOURNAL_DELAY`] after an event arrived in an empty batch.
    pub(crate) async fn deadline(&self) {
        self.arrived.notified().await;
        tokio::time::sleep(JOURNAL_DELAY).await;
    }

    /// Whether an earlier write failed and its batch still waits to be written.
    pub(crate) fn has_backlog(&self) -> bool {
        self.backlog.load(Ordering::Acquire)
    }

    /// Why the session's writes are fenced off (another process owns it), if they are.
    pub(crate) fn fenced(&self) -> Option<&StoreError> {
        self.fenced.get()
    }

    /// Cuts a batch of everything gathered and writes every queued batch, oldest first, each as
    /// one store transaction. On failure the failed batch and those after it stay queued.
    pub(crate) async fn write(&self) -> Result<(), StoreError> {
        self.write_then(|_, _| {}).await
    }

    /// Like [`Journal::write`]; when it fails, `on_failure` may change the last event cut (the
    /// one that asked for the write) before the batch waits for its next attempt, so that what is
    /// eventually journaled is what the client was told.
    pub(crate) async fn write_then(&self, on_failure: impl FnOnce(&mut Event, &StoreError)) -> Result<(), StoreError> {
        // Uncontended (the usual case): no lock future to build.
        let mut queued = match self.queued.try_lock() {
            Ok(queued) => queued,
            Err(_) => self.queued.lock().await,
        };
        let batch = std::mem::take(&mut *self.lock_gathering());
        let cut = !batch.events.is_empty();
        if cut {
            queued.push_back(batch);
        } else if let Some(touch) = batch.touch {
            // Nothing to write yet: the update goes with the next batch.
            self.lock_gathering().touch.get_or_insert(touch);
        }
        if let Some(fenced) = self.fenced.get() {
            queued.clear();
            return Err(fenced.clone());
        }
        while let Some(batch) = queued.front() {
            let written = match &batch.touch {
                Some((title, at)) => {
                    self.store.append_events_and_touch(&self.id, &batch.events, title.as_deref(), at).await
                }
                None => self.store.append_events(&self.id, &batch.events).await,
            };
            if let Err(e) = written {
                if e.kind() == StoreErrorKind::NotOwner {
                    let _ = self.fenced.set(e.clone());
                    queued.clear();
                    self.backlog.store(false, Ordering::Release);
                    return Err(e);
                }
                if cut && let Some(last) = queued.back_mut().and_then(|b| b.events.last_mut()) {
                    on_failure(last, &e);
                }
                self.backlog.store(true, Ordering::Release);
                return Err(e);
            }
            queued.pop_front();
        }
        self.backlog.store(false, Ordering::Release);
        Ok(())
    }

    /// How many events are gathered or queued and not yet written (for a last word on drop).
    pub(crate) fn unwritten(&self) -> usize {
        let queued = self.queued.try_lock().map_or(0, |q| q.iter().map(|b| b.events.len()).sum());
        queued + self.lock_gathering().events.len()
    }
}

/// What an event that asked for a write must say instead when the write failed: a turn that
/// ended well or was interrupted becomes a failure, a compaction's success a rejection, both naming
/// the store's error (`None`: the event already says something went wrong, or is not a result).
pub(crate) fn unrecorded(kind: &EventKind, e: &StoreError) -> Option<EventKind> {
    let reason = format!("the session store could not record it: {}", e.message());
    match kind {
        EventKind::TurnDone { .. } | EventKind::TurnInterrupted {} => {
            Some(EventKind::TurnFailed { error: format!("the turn failed: {reason}") })
        }
        EventKind::CompactWaiterResolved {} => {
            Some(EventKind::CompactWaiterRejected { reason: format!("compaction failed: {reason}") })
        }
        _ => None,
    }
}
