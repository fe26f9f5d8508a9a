//! Idempotent prompts: a `session/prompt` carrying an idempotency key that its session already
//! accepted is not run again. It is answered as the prompt that first carried the key was.
//!
//! The key is v1's `_meta["acp/idempotencyKey"]`, a string of 1 to [`MAX_KEY_BYTES`] bytes, and
//! v2's `idempotencyKey` field, a string of 1 to [`MAX_V2_KEY_CHARS`] characters (omitted or
//! `null`: no key). Anything else is `-32602` naming the field. A key names the operation, not its
//! content: a repeat with another prompt is still a repeat, and runs nothing.
//!
//! How a repeat is answered: with the first's outcome, once there is one. On v1 that is the
//! first's response (its stop reason and `_meta`, or its error), when its turn ends — also for a
//! repeat that arrives while the turn runs. On v2 it is the first's acknowledgement (the same
//! `messageId`), which exists as soon as the first was accepted; the turn's end reaches the
//! client as the idle `state_update`. A `$/cancel_request` for a repeat still waiting (on v1,
//! while the turn runs) cancels that turn (the key names it), and the repeat answers as the first
//! then does.
//!
//! Invariants:
//! - A key is remembered once its prompt is accepted (it holds the session's prompt slot); a
//!   prompt refused before (bad params, another prompt in flight, a closing session) leaves no
//!   trace, and its key may be used again.
//! - A repeat never takes the session's slot (so it is never refused as a second prompt in
//!   flight) and never reaches the host.
//! - Every remembered key gets exactly one outcome: [`Recorder`] records it, or an internal
//!   error when its prompt's future is dropped without one, so no repeat waits forever.
//! - The first records its outcome only once every update of its turn is queued, and its repeats
//!   are answered only once its own response is queued: no update of the turn follows a repeat's
//!   response, and no repeat's response precedes the first's.
//! - At most [`MAX_KEYS`] keys are kept per live session, the newest; they go with it.
//! - A prompt without a key touches nothing here and allocates nothing for it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::acp::Meta;
use crate::error::{Error, ErrorExt};
use crate::rpc::Answer;

/// The `_meta` key of a v1 prompt's idempotency key.
pub(crate) const META_KEY: &str = "acp/idempotencyKey";

/// The v2 params field of the key.
pub(crate) const V2_FIELD: &str = "idempotencyKey";

/// The longest v1 key, in bytes.
pub(crate) const MAX_KEY_BYTES: usize = 256;

/// The longest v2 key, in characters (the v2 schema's `IdempotencyKey`).
pub(crate) const MAX_V2_KEY_CHARS: usize = 255;

/// How many keys a live session remembers: the newest.
pub(crate) const MAX_KEYS: usize = 1024;

/// v1's key, from the request's `_meta`; `None` when it has none.
pub(crate) fn v1_key(meta: Option<&Meta>) -> Result<Option<String>, Error> {
    let Some(value) = meta.and_then(|meta| meta.get(META_KEY)) else { return Ok(None) };
    let invalid = |why: &str| Error::invalid_params_msg(format!("invalid `_meta[\"{META_KEY}\"]`: {why}"));
    match value {
        Value::String(key) if key.is_empty() => Err(invalid("it is empty")),
        Value::String(key) if key.len() > MAX_KEY_BYTES => Err(invalid(&format!("longer than {MAX_KEY_BYTES} bytes"))),
        Value::String(key) => Ok(Some(key.clone())),
        other => Err(invalid(&format!("expected a string, got {}", kind(other)))),
    }
}

/// v2's key, the request's `idempotencyKey` as given (`None`: absent); `null` is no key.
pub(crate) fn v2_key(value: Option<Value>) -> Result<Option<String>, Error> {
    let invalid = |why: &str| Error::invalid_params_msg(format!("invalid params at `{V2_FIELD}`: {why}"));
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(key)) if key.is_empty() => Err(invalid("it is empty")),
        Some(Value::String(key)) if key.chars().count() > MAX_V2_KEY_CHARS => {
            Err(invalid(&format!("longer than {MAX_V2_KEY_CHARS} characters")))
        }
        Some(Value::String(key)) => Ok(Some(key)),
        Some(other) => Err(invalid(&format!("expected a string, got {}", kind(&other)))),
    }
}

/// What JSON `value` is, for an error message.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A live session's remembered keys, the newest [`MAX_KEYS`].
#[derive(Default)]
pub(crate) struct Keys(Mutex<KeyStore>);

#[derive(Default)]
struct KeyStore {
    by_key: HashMap<Arc<str>, Arc<Keyed>>,
    /// The keys, oldest first.
    order: VecDeque<Arc<str>>,
}

/// The prompt that first carried a key, as its repeats see it.
pub(crate) struct Keyed {
    /// Its answer, once known.
    outcome: OnceLock<Result<Answer, Error>>,
    /// Fires once `outcome` is set.
    done: CancellationToken,
    /// Cancels its turn, as `session/cancel` does.
    cancel: CancellationToken,
}

impl Keys {
    /// The prompt that first carried `key`, if the session remembers it.
    pub(crate) fn find(&self, key: &str) -> Option<Arc<Keyed>> {
        self.lock().by_key.get(key).cloned()
    }

    /// Remembers `key` for an accepted prompt whose turn `cancel` cancels; the oldest key goes
    /// when there are more than [`MAX_KEYS`]. The prompt records its outcome with the result.
    pub(crate) fn remember(&self, key: String, cancel: CancellationToken) -> Recorder {
        let keyed = Arc::new(Keyed { outcome: OnceLock::new(), done: CancellationToken::new(), cancel });
        let key: Arc<str> = key.into();
        let mut store = self.lock();
        if store.order.len() >= MAX_KEYS
            && let Some(oldest) = store.order.pop_front()
        {
            store.by_key.remove(&oldest);
        }
        store.order.push_back(key.clone());
        store.by_key.insert(key, keyed.clone());
        Recorder(Some(keyed))
    }

    /// How many keys are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().order.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, KeyStore> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Records the outcome of the prompt that first carried a key, for its repeats. Dropped without
/// recording (the prompt's future was dropped), it records an internal error.
pub(crate) struct Recorder(Option<Arc<Keyed>>);

impl Recorder {
    /// Records `outcome`: every repeat, waiting or to come, is answered with it once the returned
    /// [`Announce`] is dropped (kept until the first's own response is queued, so that a repeat's
    /// never overtakes it).
    pub(crate) fn record(mut self, outcome: &Result<Answer, Error>) -> Announce {
        let keyed = self.0.take();
        if let Some(keyed) = &keyed {
            let _ = keyed.outcome.set(outcome.clone());
        }
        Announce(keyed)
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Some(keyed) = self.0.take() {
            let _ = keyed.outcome.set(Err(Error::internal_msg("the prompt this key names ended without an answer")));
            keyed.done.cancel();
        }
    }
}

/// Lets the repeats of a key be answered when dropped (see [`Recorder::record`]).
pub(crate) struct Announce(Option<Arc<Keyed>>);

impl Drop for Announce {
    fn drop(&mut self) {
        if let Some(keyed) = self.0.take() {
            keyed.done.cancel();
        }
    }
}

/// Answers a repeat of `first`: its outcome, once recorded. `cancelled` is the repeat's own
/// `$/cancel_request`: it cancels the turn of `first` if that still runs.
pub(crate) async fn answer_repeat(first: Arc<Keyed>, cancelled: CancellationToken) -> Result<Answer, Error> {
    tokio::select! {
        biased;
        () = first.done.cancelled() => {}
        () = cancelled.cancelled() => {
            first.cancel.cancel();
            first.done.cancelled().await;
        }
    }
    // `done` fires only once the outcome is set.
    first.outcome.get().cloned().unwrap_or_else(|| Err(Error::internal_msg("the prompt this key names has no answer")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::ErrorCode;

    fn meta(value: &Value) -> Meta {
        json!({ META_KEY: value, "traceparent": "t" }).as_object().cloned().unwrap()
    }

    #[test]
    fn a_v1_key_is_a_string_of_1_to_256_bytes_and_anything_else_is_refused_naming_it() {
        assert_eq!(v1_key(None).unwrap(), None);
        assert_eq!(v1_key(Some(&Meta::new())).unwrap(), None);
        assert_eq!(v1_key(Some(&meta(&json!("k1")))).unwrap().as_deref(), Some("k1"));
        let longest = "é".repeat(MAX_KEY_BYTES / 2);
        assert_eq!(v1_key(Some(&meta(&json!(longest)))).unwrap(), Some(longest.clone()));
        for bad in [json!(format!("{longest}x")), json!(""), json!(7), json!(null), json!({"k": 1}), json!(["k"])] {
            let error = v1_key(Some(&meta(&bad))).expect_err("refused");
            assert_eq!(error.code, ErrorCode::InvalidParams, "{bad}");
            assert!(error.message.contains(META_KEY), "{bad}: {}", error.message);
        }
    }

    #[test]
    fn a_v2_key_is_a_string_of_1_to_255_characters_or_null_and_anything_else_is_refused_naming_it() {
        assert_eq!(v2_key(None).unwrap(), None);
        assert_eq!(v2_key(Some(json!(null))).unwrap(), None);
        let longest = "é".repeat(MAX_V2_KEY_CHARS);
        assert_eq!(v2_key(Some(json!(longest))).unwrap(), Some(longest.clone()));
        for bad in [json!(format!("{longest}x")), json!(""), json!(7), json!(true), json!({})] {
            let error = v2_key(Some(bad.clone())).expect_err("refused");
            assert_eq!(error.code, ErrorCode::InvalidParams, "{bad}");
            assert!(error.message.contains(V2_FIELD), "{bad}: {}", error.message);
        }
    }

    #[test]
    fn the_store_keeps_the_newest_keys() {
        let keys = Keys::default();
        for n in 0..=MAX_KEYS {
            drop(keys.remember(format!("k{n}"), CancellationToken::new()).record(&Ok(Answer::from(json!(n)))));
        }
        assert_eq!(keys.len(), MAX_KEYS);
        assert!(keys.find("k0").is_none());
        assert!(keys.find("k1").is_some());
        assert!(keys.find(&format!("k{MAX_KEYS}")).is_some());
    }

    #[tokio::test]
    async fn a_repeat_waits_for_the_outcome_and_one_dropped_unrecorded_is_an_error() {
        let keys = Keys::default();
        let recorder = keys.remember("k".to_owned(), CancellationToken::new());
        let repeat = tokio::spawn(answer_repeat(keys.find("k").unwrap(), CancellationToken::new()));
        tokio::task::yield_now().await;
        assert!(!repeat.is_finished());
        drop(recorder.record(&Err(Error::internal_msg("it broke"))));
        assert_eq!(repeat.await.unwrap().expect_err("the first's error").message, "it broke");

        drop(keys.remember("gone".to_owned(), CancellationToken::new()));
        let error = answer_repeat(keys.find("gone").unwrap(), CancellationToken::new()).await.expect_err("no answer");
        assert_eq!(error.code, ErrorCode::InternalError);
    }

    #[tokio::test]
    async fn a_repeat_cancelled_cancels_the_turn_of_its_key_and_answers_as_it_does() {
        let keys = Keys::default();
        let turn = CancellationToken::new();
        let recorder = keys.remember("k".to_owned(), turn.clone());
        let cancelled = CancellationToken::new();
        let repeat = tokio::spawn(answer_repeat(keys.find("k").unwrap(), cancelled.clone()));
        cancelled.cancel();
        turn.cancelled().await;
        let announce = recorder.record(&Ok(Answer::from(json!({"stopReason": "cancelled"}))));
        tokio::task::yield_now().await;
        assert!(!repeat.is_finished(), "answered only once announced");
        drop(announce);
        assert_eq!(repeat.await.unwrap().unwrap().into_value(), json!({"stopReason": "cancelled"}));
    }
}
