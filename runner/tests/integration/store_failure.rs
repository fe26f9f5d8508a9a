//! The runner when its store fails, through the wire, on every store (a [`FlakyStore`] in front of
//! each): nothing the client was told had succeeded is missing from the journal, and nothing is
//! journaled twice. A turn whose end cannot be journaled fails (never `end_turn`); a question
//! whose batch cannot be journaled is not asked; a new prompt on a journal with a hole is
//! refused at once; and when the store is back, what was kept is written, in order. (A real
//! `PostgreSQL` server stopped and restarted under a demo agent: `tests/scenarios/fleet.py`.)

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use acp_facade::acp::SessionId;
use acp_facade::harness::Event;
use acp_facade_runner::{Claim, SessionRecord, Store, StoreError};
use async_trait::async_trait;
use common::runner::{TurnsSpec, client, journal, journal_kinds, runner, stores};
use common::{STEP, TestClient, chunk_texts, code, error_of};
use serde_json::{Value, json};

/// A store that fails on demand in front of a real one: while `down`, every call fails as an
/// unreachable database's would, before reaching it; while `answers_lost`, writes reach it and
/// then fail the same way (the database applied them, the answer was lost).
struct FlakyStore {
    inner: Arc<dyn Store>,
    down: AtomicBool,
    answers_lost: AtomicBool,
}

impl FlakyStore {
    fn new(inner: Arc<dyn Store>) -> Arc<Self> {
        Arc::new(Self { inner, down: AtomicBool::new(false), answers_lost: AtomicBool::new(false) })
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    fn check(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(StoreError::unavailable("cannot connect to PostgreSQL (test): the database is down"));
        }
        Ok(())
    }

    fn answer<T>(&self, result: Result<T, StoreError>) -> Result<T, StoreError> {
        if result.is_ok() && self.answers_lost.load(Ordering::SeqCst) {
            return Err(StoreError::unavailable("connection closed before the answer (test)"));
        }
        result
    }
}

#[async_trait]
impl Store for FlakyStore {
    async fn create_session(&self, record: &SessionRecord) -> Result<(), StoreError> {
        self.check()?;
        self.inner.create_session(record).await
    }
    async fn session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        self.check()?;
        self.inner.session(id).await
    }
    async fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        self.check()?;
        self.inner.list_sessions().await
    }
    async fn touch_session(&self, id: &SessionId, title: Option<&str>, updated_at: &str) -> Result<(), StoreError> {
        self.check()?;
        self.inner.touch_session(id, title, updated_at).await
    }
    async fn set_system_prompt(
        &self,
        id: &SessionId,
        system_prompt: &acp_facade::acp::SystemPrompt,
    ) -> Result<(), StoreError> {
        self.check()?;
        self.inner.set_system_prompt(id, system_prompt).await
    }
    async fn append_events(&self, id: &SessionId, events: &[Event]) -> Result<(), StoreError> {
        self.check()?;
        self.answer(self.inner.append_events(id, events).await)
    }
    async fn append_events_and_touch(
        &self,
        id: &SessionId,
        events: &[Event],
        title: Option<&str>,
        updated_at: &str,
    ) -> Result<(), StoreError> {
        self.check()?;
        self.answer(self.inner.append_events_and_touch(id, events, title, updated_at).await)
    }
    async fn events(&self, id: &SessionId) -> Result<Vec<Event>, StoreError> {
        self.check()?;
        self.inner.events(id).await
    }
    async fn delete_session(&self, id: &SessionId) -> Result<(), StoreError> {
        self.check()?;
        self.inner.delete_session(id).await
    }
    async fn claim_session(&self, id: &SessionId) -> Result<Claim, StoreError> {
        self.check()?;
        self.inner.claim_session(id).await
    }
    async fn release_session(&self, id: &SessionId) -> Result<(), StoreError> {
        self.check()?;
        self.inner.release_session(id).await
    }
}

async fn prompt(client: &mut TestClient, sid: &str, text: &str) -> (Value, Vec<Value>) {
    let id = client.prompt(sid, text).await;
    client.response_with_preceding(&id).await
}

fn stop_reason(response: &Value) -> Option<&str> {
    response.pointer("/result/stopReason").and_then(Value::as_str)
}

fn error_message(response: &Value) -> String {
    error_of(response)["message"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_turn_whose_end_cannot_be_journaled_fails_and_what_was_kept_is_written_later() {
    for (name, inner) in stores().await {
        let flaky = FlakyStore::new(inner.clone());
        let (runner, probe) = runner(flaky.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        let (response, _) = prompt(&mut client, &sid, "say one").await;
        assert_eq!(stop_reason(&response), Some("end_turn"), "{name}");

        flaky.set_down(true);
        let (response, before) = prompt(&mut client, &sid, "say two").await;
        assert_eq!(code(&error_of(&response)), -32603, "{name}: never end_turn: {response}");
        assert!(error_message(&response).contains("could not record"), "{name}: {response}");
        assert!(error_message(&response).contains("the database is down"), "{name}: names the cause");
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["two"], "{name}: what the client saw");

        // While the store is down a new turn does not even start.
        let turns_before = probe.turns.lock().unwrap().len();
        let (response, _) = prompt(&mut client, &sid, "say three").await;
        assert_eq!(code(&error_of(&response)), -32603, "{name}: {response}");
        assert!(error_message(&response).contains("earlier events could not be journaled"), "{name}: {response}");
        assert_eq!(probe.turns.lock().unwrap().len(), turns_before, "{name}: no turn ran");

        // Back: the kept batch goes first, then the new turn.
        flaky.set_down(false);
        let (response, _) = prompt(&mut client, &sid, "say four").await;
        assert_eq!(stop_reason(&response), Some("end_turn"), "{name}");
        assert_eq!(
            journal_kinds(&inner, &sid).await,
            [
                "TurnStarted",
                "StepDone",
                "TurnDone",
                "TurnStarted",
                "StepDone",
                "TurnFailed",
                "TurnStarted",
                "StepDone",
                "TurnDone",
            ],
            "{name}: each turn once, in order, as the client was told"
        );
        client.call_ok("session/close", json!({"sessionId": sid})).await;
        let id = client.send_request("session/load", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []})).await;
        let (_, replay) = client.response_with_preceding(&id).await;
        assert_eq!(chunk_texts(&replay, "user_message_chunk"), ["say one", "say two", "say four"], "{name}");
    }
}

#[tokio::test]
async fn a_waiting_turns_journal_catches_up_when_the_store_returns() {
    for (name, inner) in stores().await {
        let flaky = FlakyStore::new(inner.clone());
        let (runner, probe) = runner(flaky.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        flaky.set_down(true);
        let id = client.prompt(&sid, "wait").await;
        tokio::time::timeout(STEP, probe.parked.notified()).await.expect("parked");
        // Past the journal delay: the prompt's batch failed to be written, and is kept.
        tokio::time::sleep(acp_facade_runner::JOURNAL_DELAY * 5).await;
        assert!(journal(&inner, &sid).await.is_empty(), "{name}");
        flaky.set_down(false);
        client.notify("session/cancel", json!({"sessionId": sid})).await;
        assert_eq!(stop_reason(&client.response(&id).await), Some("cancelled"), "{name}");
        assert_eq!(journal_kinds(&inner, &sid).await, ["TurnStarted", "TurnInterrupted"], "{name}");
    }
}

#[tokio::test]
async fn a_question_that_cannot_be_journaled_is_not_asked() {
    for (name, inner) in stores().await {
        let flaky = FlakyStore::new(inner.clone());
        let (runner, probe) = runner(flaky.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        flaky.set_down(true);
        let (response, before) = prompt(&mut client, &sid, "permit").await;
        assert!(
            before.iter().all(|m| m.get("method") != Some(&json!("session/request_permission"))),
            "{name}: asked anyway: {before:?}"
        );
        assert_eq!(code(&error_of(&response)), -32603, "{name}: {response}");
        assert!(error_message(&response).contains("could not record its question"), "{name}: {response}");
        assert_eq!(probe.permissions(), [acp_facade_runner::Permission::Cancelled], "{name}");
        // Closing writes what was kept once the store is back.
        flaky.set_down(false);
        client.call_ok("session/close", json!({"sessionId": sid})).await;
        assert_eq!(
            journal_kinds(&inner, &sid).await,
            ["TurnStarted", "GateOpened", "GateResolved", "StepDone", "TurnFailed"],
            "{name}"
        );
    }
}

/// The store applied a turn's batch but its answer was lost: the runner writes the batch again
/// when the store answers, and a store that cannot know what happened (`PostgreSQL`) applies the
/// repeat once. The journal keeps the turn as it ended, although the client was told it failed:
/// more than the client was told, never less.
#[tokio::test]
async fn a_batch_whose_answer_was_lost_is_journaled_once() {
    let Some(url) = common::stores::postgres_url().await else { return };
    let inner: Arc<dyn Store> = Arc::new(common::stores::open_postgres(&url).await);
    let flaky = FlakyStore::new(inner.clone());
    let (runner, _) = runner(flaky.clone(), TurnsSpec::default());
    let mut client = client(&runner).await;
    let sid = client.new_session().await;
    flaky.answers_lost.store(true, Ordering::SeqCst);
    let (response, _) = prompt(&mut client, &sid, "say lost").await;
    assert_eq!(code(&error_of(&response)), -32603, "{response}");
    flaky.answers_lost.store(false, Ordering::SeqCst);
    let (response, _) = prompt(&mut client, &sid, "say next").await;
    assert_eq!(stop_reason(&response), Some("end_turn"), "{response}");
    assert_eq!(
        journal_kinds(&inner, &sid).await,
        ["TurnStarted", "StepDone", "TurnDone", "TurnStarted", "StepDone", "TurnDone"],
        "the repeat was applied once"
    );
}
