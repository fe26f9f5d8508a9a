//! Durable sessions: the journal of Enduring events and the session catalog.
//!
//! [`Store`] is what the runner needs from storage; [`SqliteStore`](super::SqliteStore) is the
//! real one (a file or `:memory:`), [`MemoryStore`] a plain in-process one for tests.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use crate::acp::SessionId;
use crate::harness::Event;

/// A storage failure.
#[derive(Debug, thiserror::Error)]
#[error("session store: {0}")]
pub struct StoreError(pub String);

impl From<StoreError> for crate::Error {
    fn from(e: StoreError) -> Self {
        crate::error::ErrorExt::internal_msg(e.to_string())
    }
}

/// A stored session's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    /// The session id.
    pub id: SessionId,
    /// Working directory (absolute).
    pub cwd: PathBuf,
    /// Extra roots.
    pub additional_directories: Vec<PathBuf>,
    /// Title, once known.
    pub title: Option<String>,
    /// Creation time, RFC 3339 UTC.
    pub created_at: String,
    /// Last activity, RFC 3339 UTC.
    pub updated_at: String,
}

/// Storage of sessions and their Enduring events. Implementations must be safe to share between
/// threads; calls are short and synchronous.
pub trait Store: Send + Sync + 'static {
    /// Records a new session; fails if the id exists.
    fn create_session(&self, record: &SessionRecord) -> Result<(), StoreError>;
    /// One session's record.
    fn session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError>;
    /// Every session's record.
    fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError>;
    /// Sets the title (when `Some`) and the update time.
    fn touch_session(&self, id: &SessionId, title: Option<&str>, updated_at: &str) -> Result<(), StoreError>;
    /// Appends one Enduring event to the session's journal, after every earlier one.
    fn append_event(&self, id: &SessionId, event: &Event) -> Result<(), StoreError>;
    /// Appends several Enduring events at once, in order (one transaction where the store has
    /// them: all or nothing).
    fn append_events(&self, id: &SessionId, events: &[Event]) -> Result<(), StoreError> {
        events.iter().try_for_each(|event| self.append_event(id, event))
    }
    /// Appends events and updates the session's title (when `Some`) and update time, at once
    /// (one transaction where the store has them).
    fn append_events_and_touch(
        &self,
        id: &SessionId,
        events: &[Event],
        title: Option<&str>,
        updated_at: &str,
    ) -> Result<(), StoreError> {
        self.append_events(id, events)?;
        self.touch_session(id, title, updated_at)
    }
    /// The session's journal, oldest first.
    fn events(&self, id: &SessionId) -> Result<Vec<Event>, StoreError>;
    /// Deletes a session and its journal; deleting an unknown id succeeds.
    fn delete_session(&self, id: &SessionId) -> Result<(), StoreError>;
}

/// An in-process store; nothing survives the process.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<HashMap<SessionId, (SessionRecord, Vec<Event>)>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, (SessionRecord, Vec<Event>)>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Store for MemoryStore {
    fn create_session(&self, record: &SessionRecord) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.contains_key(&record.id) {
            return Err(StoreError(format!("session {} already exists", record.id)));
        }
        state.insert(record.id.clone(), (record.clone(), Vec::new()));
        Ok(())
    }

    fn session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        Ok(self.lock().get(id).map(|(r, _)| r.clone()))
    }

    fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        Ok(self.lock().values().map(|(r, _)| r.clone()).collect())
    }

    fn touch_session(&self, id: &SessionId, title: Option<&str>, updated_at: &str) -> Result<(), StoreError> {
        if let Some((record, _)) = self.lock().get_mut(id) {
            if let Some(title) = title {
                record.title = Some(title.to_owned());
            }
            updated_at.clone_into(&mut record.updated_at);
        }
        Ok(())
    }

    fn append_event(&self, id: &SessionId, event: &Event) -> Result<(), StoreError> {
        match self.lock().get_mut(id) {
            Some((_, events)) => {
                events.push(event.clone());
                Ok(())
            }
            None => Err(StoreError(format!("no session {id}"))),
        }
    }

    fn events(&self, id: &SessionId) -> Result<Vec<Event>, StoreError> {
        Ok(self.lock().get(id).map(|(_, e)| e.clone()).unwrap_or_default())
    }

    fn delete_session(&self, id: &SessionId) -> Result<(), StoreError> {
        self.lock().remove(id);
        Ok(())
    }
}

/// The current time as RFC 3339 UTC with millisecond precision (`2026-11-30T11:20:00.123Z`).
pub fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = now.as_secs();
    let millis = now.subsec_millis();
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(i64::try_from(days).unwrap_or(0));
    // Written digit by digit: this runs once per turn, and `format!` costs several times more.
    let mut at = String::with_capacity(24);
    let fields = [
        (u64::try_from(year).unwrap_or(0), 4, '-'),
        (u64::from(month), 2, '-'),
        (u64::from(day), 2, 'T'),
        (rem / 3600, 2, ':'),
        ((rem % 3600) / 60, 2, ':'),
        (rem % 60, 2, '.'),
        (u64::from(millis), 3, 'Z'),
    ];
    for (value, width, separator) in fields {
        push_padded(&mut at, value, width);
        at.push(separator);
    }
    at
}

/// Appends the last `width` decimal digits of `value`, zero-padded.
fn push_padded(out: &mut String, value: u64, width: u32) {
    for position in (0..width).rev() {
        let digit = (value / 10u64.pow(position)) % 10;
        out.push(char::from(b'0' + u8::try_from(digit).unwrap_or(0)));
    }
}

/// Days since 1970-01-01 → (year, month, day), Howard Hinnant's algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_787), (2026, 11, 30));
        let now = now_rfc3339();
        assert_eq!(now.len(), 24, "{now}");
        assert!(now.starts_with("20") && now.ends_with('Z'), "{now}");
        let (date, time) = now.split_once('T').expect("a T");
        assert_eq!(date.split('-').map(str::len).collect::<Vec<_>>(), [4, 2, 2], "{now}");
        assert_eq!(time[..12].split([':', '.']).map(str::len).collect::<Vec<_>>(), [2, 2, 2, 3], "{now}");
        let mut out = String::new();
        push_padded(&mut out, 7, 3);
        push_padded(&mut out, 2026, 4);
        push_padded(&mut out, 59, 2);
        assert_eq!(out, "007202659");
    }
}
