//! The batteries-included runner, end to end: every turn API call becomes the right harness
//! event and the right `session/update` (schema-validated by the test client), permission answers
//! map to the right [`Permission`], cancellation and close fire the turn's signal, failures and
//! panics fail one prompt only, titles, config options and `/compact` work, and the journal holds
//! exactly the Enduring events, which `session/load` replays before its response.
//!
//! Every scenario runs against every store (`common::stores::runner_stores`): the in-memory store,
//! `SqliteStore::open(":memory:")` and a `PostgresStore` (when the test server is configured).

use crate::common;

use std::sync::Arc;

use acp_facade::acp::SessionId;
use acp_facade::harness::{Event, EventKind, GateId, GateResponse, Message};
use acp_facade_runner::{Claim, Permission, SessionRecord, Store, StoreError};
use common::runner::{Probe, TurnsSpec, client, journal, journal_kinds, runner, stores};
use common::{STEP, TestClient, assert_serving, chunk_texts, code, updates};
use serde_json::{Value, json};

const PERMISSION: &str = "session/request_permission";

/// Sends a prompt and waits for its response; returns it and every message before it.
async fn prompt(client: &mut TestClient, sid: &str, text: &str) -> (Value, Vec<Value>) {
    let id = client.prompt(sid, text).await;
    client.response_with_preceding(&id).await
}

fn stop_reason(response: &Value) -> &str {
    response
        .pointer("/result/stopReason")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("not a prompt result: {response}"))
}

fn kinds(messages: &[Value]) -> Vec<String> {
    updates(messages).iter().map(|u| u["sessionUpdate"].as_str().unwrap_or_default().to_owned()).collect()
}

async fn parked(probe: &Probe) {
    tokio::time::timeout(STEP, probe.parked.notified()).await.expect("the turn never parked");
}

/// Waits for the agent's `session/request_permission`; returns the whole request.
async fn permission_request(client: &mut TestClient) -> Value {
    client.wait_for(|m| m.get("method").and_then(Value::as_str) == Some(PERMISSION)).await
}

/// A `tool_call` is pending: `status` is `pending` or absent (its schema default, which the
/// wire types omit).
fn assert_pending(tool_call: &Value, name: &str) {
    assert!(tool_call.get("status").is_none_or(|s| s == "pending"), "{name}: a new tool call is pending: {tool_call}");
}

fn selected(option: &str) -> Value {
    json!({"outcome": {"outcome": "selected", "optionId": option}})
}

#[tokio::test]
async fn text_and_thought_stream_as_message_and_thought_chunks() {
    for (name, store) in stores().await {
        let (runner, _) = runner(store.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;

        let (response, before) = prompt(&mut client, &sid, "say one two three").await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        assert_eq!(kinds(&before), ["agent_message_chunk"; 3], "{name}: {before:?}");
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["one ", "two ", "three"], "{name}");
        for u in updates(&before) {
            assert_eq!(u["content"]["type"], "text", "{name}: {u}");
        }

        let (response, before) = prompt(&mut client, &sid, "think let me see").await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        assert_eq!(kinds(&before), ["agent_thought_chunk", "agent_message_chunk"], "{name}: {before:?}");
        assert_eq!(chunk_texts(&before, "agent_thought_chunk"), ["let me see"], "{name}");
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["ok"], "{name}");
        // Every update names the session.
        for m in &before {
            assert_eq!(m["params"]["sessionId"], sid.as_str(), "{name}");
        }

        // The non-waiting forms stream the same way.
        let (response, before) = prompt(&mut client, &sid, "try").await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        assert_eq!(kinds(&before), ["agent_message_chunk", "agent_thought_chunk"], "{name}: {before:?}");
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["x"], "{name}");
        assert_eq!(chunk_texts(&before, "agent_thought_chunk"), ["y"], "{name}");

        // The journal keeps the steps' content, not the deltas.
        let events = journal(&store, &sid).await;
        let steps: Vec<&Vec<Message>> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::StepDone { messages } => Some(messages),
                _ => None,
            })
            .collect();
        assert_eq!(steps.len(), 3, "{name}: one step per turn");
        let Message::Ai(first) = &steps[0][0] else { panic!("{name}: a step starts with its AI message") };
        assert_eq!(serde_json::to_value(&first.content).unwrap(), json!([{"type": "text", "text": "one two three"}]));
        let Message::Ai(second) = &steps[1][0] else { panic!("{name}: AI message") };
        assert_eq!(serde_json::to_value(&second.thoughts).unwrap(), json!([{"type": "text", "text": "let me see"}]));
        assert_eq!(serde_json::to_value(&second.content).unwrap(), json!([{"type": "text", "text": "ok"}]));
        let Message::Ai(third) = &steps[2][0] else { panic!("{name}: AI message") };
        assert_eq!(serde_json::to_value(&third.content).unwrap(), json!([{"type": "text", "text": "x"}]));
        assert_eq!(serde_json::to_value(&third.thoughts).unwrap(), json!([{"type": "text", "text": "y"}]));
    }
}

#[tokio::test]
async fn the_turn_sees_its_prompt_session_and_cwd() {
    for (name, store) in stores().await {
        let (runner, probe) = runner(store, TurnsSpec::default());
        let mut client = client(&runner).await;
        let result = client.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
        let sid = result["sessionId"].as_str().unwrap().to_owned();
        let id = client
            .send_request(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hello "}, {"type": "text", "text": "there"}]}),
            )
            .await;
        let (response, before) = client.response_with_preceding(&id).await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["hello there"], "{name}");
        let turns = probe.turns.lock().unwrap().clone();
        assert_eq!(turns, [(sid.clone(), "hello there".to_owned(), "/tmp".to_owned())], "{name}");
    }
}

#[tokio::test]
async fn stop_reasons_pass_through() {
    for (name, store) in stores().await {
        let (runner, _) = runner(store.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        for reason in ["max_tokens", "max_turn_requests", "refusal", "end_turn"] {
            let (response, _) = prompt(&mut client, &sid, &format!("stop {reason}")).await;
            assert_eq!(stop_reason(&response), reason, "{name}");
        }
        // A turn that returns `cancelled` on its own is interrupted.
        let (response, _) = prompt(&mut client, &sid, "stop cancelled").await;
        assert_eq!(stop_reason(&response), "cancelled", "{name}");
        let done: Vec<Value> = journal(&store, &sid)
            .await
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::TurnDone { stop, .. } => Some(serde_json::to_value(stop).unwrap()),
                EventKind::TurnInterrupted {} => Some(json!("interrupted")),
                _ => None,
            })
            .collect();
        assert_eq!(
            done,
            [
                json!("max_tokens"),
                json!("max_turn_requests"),
                json!("refusal"),
                json!("end_turn"),
                json!("interrupted")
            ],
            "{name}"
        );
    }
}

#[tokio::test]
async fn tool_calls_become_tool_call_then_updates() {
    for (name, store) in stores().await {
        let (runner, _) = runner(store.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;

        let (response, before) = prompt(&mut client, &sid, "tool").await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        let ups = updates(&before);
        assert_eq!(
            kinds(&before),
            ["tool_call", "tool_call_update", "tool_call_update", "agent_message_chunk"],
            "{name}: {before:?}"
        );
        let call_id = ups[0]["toolCallId"].as_str().expect("toolCallId").to_owned();
        assert_eq!(ups[0]["title"], "Read file", "{name}");
        assert_eq!(ups[0]["kind"], "read", "{name}");
        assert_pending(&ups[0], name);
        assert_eq!(ups[0]["rawInput"], json!({"path": "/tmp/a.txt"}), "{name}");
        assert_eq!(ups[1]["toolCallId"], call_id.as_str(), "{name}");
        assert_eq!(ups[1]["status"], "in_progress", "{name}");
        assert_eq!(ups[1]["content"][0]["content"]["text"], "reading", "{name}: {}", ups[1]);
        assert_eq!(ups[2]["toolCallId"], call_id.as_str(), "{name}");
        assert_eq!(ups[2]["status"], "completed", "{name}");
        assert_eq!(ups[2]["content"][0]["content"]["text"], "file contents", "{name}: {}", ups[2]);

        let (response, before) = prompt(&mut client, &sid, "toolfail").await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        let ups = updates(&before);
        assert_eq!(kinds(&before), ["tool_call", "tool_call_update"], "{name}: {before:?}");
        assert_eq!(ups[0]["kind"], "execute", "{name}");
        assert_pending(&ups[0], name);
        assert_ne!(ups[0]["toolCallId"], call_id.as_str(), "{name}: tool call ids are unique per session");
        assert_eq!(ups[1]["toolCallId"], ups[0]["toolCallId"], "{name}");
        assert_eq!(ups[1]["status"], "failed", "{name}");
        assert_eq!(ups[1]["content"][0]["content"]["text"], "refused", "{name}");

        // The step journals the call and its result.
        let steps: Vec<Vec<Message>> = journal(&store, &sid)
            .await
            .into_iter()
            .filter_map(|e| match e.kind {
                EventKind::StepDone { messages } => Some(messages),
                _ => None,
            })
            .collect();
        assert_eq!(steps.len(), 2, "{name}");
        let Message::Ai(ai) = &steps[0][0] else { panic!("{name}: AI message first") };
        assert_eq!(ai.tool_calls.len(), 1, "{name}");
        assert_eq!(ai.tool_calls[0].call_id.as_str(), call_id, "{name}");
        let Message::ToolResult(result) = &steps[0][1] else { panic!("{name}: then the tool result") };
        assert!(!result.is_error, "{name}");
        let Message::ToolResult(result) = &steps[1][1] else { panic!("{name}: then the tool result") };
        assert!(result.is_error, "{name}");
    }
}

#[tokio::test]
async fn each_permission_answer_maps_to_its_permission() {
    for (name, store) in stores().await {
        let (runner, probe) = runner(store.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        let cases = [
            ("allow_once", Permission::Allowed, "completed"),
            ("allow_always", Permission::AllowedAlways, "completed"),
            ("reject_once", Permission::Denied, "failed"),
        ];
        for (i, (option, expected, status)) in cases.into_iter().enumerate() {
            let id = client.prompt(&sid, "permit").await;
            let request = permission_request(&mut client).await;
            let params = &request["params"];
            assert_eq!(params["sessionId"], sid.as_str(), "{name}");
            let options: Vec<(&str, &str)> = params["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| (o["optionId"].as_str().unwrap(), o["kind"].as_str().unwrap()))
                .collect();
            assert_eq!(
                options,
                [("allow_once", "allow_once"), ("allow_always", "allow_always"), ("reject_once", "reject_once")],
                "{name}"
            );
            assert_eq!(params["toolCall"]["title"], "Edit file", "{name}");
            client.respond(&request["id"], selected(option)).await;
            let (response, before) = client.response_with_preceding(&id).await;
            assert_eq!(stop_reason(&response), "end_turn", "{name} {option}");
            assert_eq!(probe.permissions()[i], expected, "{name} {option}");
            // The request refers to the announced tool call, which then finishes.
            let ups = updates(&before);
            assert_eq!(kinds(&before), ["tool_call", "tool_call_update", "agent_message_chunk"], "{name}: {before:?}");
            assert_eq!(params["toolCall"]["toolCallId"], ups[0]["toolCallId"], "{name}");
            assert_eq!(ups[1]["status"], status, "{name} {option}");
            assert_eq!(chunk_texts(&before, "agent_message_chunk"), [format!("{expected:?}")], "{name}");
        }

        // Only the offered controls are offered.
        let id = client.prompt(&sid, "permit once").await;
        let request = permission_request(&mut client).await;
        let offered: Vec<&str> =
            request["params"]["options"].as_array().unwrap().iter().map(|o| o["optionId"].as_str().unwrap()).collect();
        assert_eq!(offered, ["allow_once", "reject_once"], "{name}");
        // An option that was not offered is a denial.
        client.respond(&request["id"], selected("allow_always")).await;
        let response = client.response(&id).await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        assert_eq!(probe.permissions()[3], Permission::Denied, "{name}");

        // Cancelled, the way the protocol does it: `session/cancel`, then the client answers
        // `cancelled` to the pending request.
        let id = client.prompt(&sid, "permit").await;
        let request = permission_request(&mut client).await;
        client.notify("session/cancel", json!({"sessionId": sid})).await;
        client.respond(&request["id"], json!({"outcome": {"outcome": "cancelled"}})).await;
        let response = client.response(&id).await;
        assert_eq!(stop_reason(&response), "cancelled", "{name}");
        assert_eq!(probe.permissions()[4], Permission::Cancelled, "{name}");

        // Every gate was journaled open and resolved.
        let kinds = journal_kinds(&store, &sid).await;
        assert_eq!(kinds.iter().filter(|k| **k == "GateOpened").count(), 5, "{name}: {kinds:?}");
        assert_eq!(kinds.iter().filter(|k| **k == "GateResolved").count(), 5, "{name}: {kinds:?}");
    }
}

#[tokio::test]
async fn usage_closes_the_step_and_sends_usage_update() {
    for (name, store) in stores().await {
        let (runner, _) = runner(store.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        let (response, before) = prompt(&mut client, &sid, "usage").await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        assert_eq!(
            kinds(&before),
            ["agent_message_chunk", "usage_update", "agent_message_chunk", "usage_update"],
            "{name}: {before:?}"
        );
        let ups = updates(&before);
        assert_eq!((ups[1]["used"].as_u64(), ups[1]["size"].as_u64()), (Some(10), Some(100)), "{name}");
        assert_eq!((ups[3]["used"].as_u64(), ups[3]["size"].as_u64()), (Some(20), Some(100)), "{name}");
        assert_eq!(
            journal_kinds(&store, &sid).await,
            ["TurnStarted", "StepDone", "ContextMeasured", "StepDone", "ContextMeasured", "TurnDone"],
            "{name}"
        );
    }
}

#[tokio::test]
async fn session_cancel_fires_the_cancellation_signal() {
    for (name, store) in stores().await {
        let (runner, probe) = runner(store.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        let id = client.prompt(&sid, "wait").await;
        parked(&probe).await;
        assert_eq!(probe.cancellations(), 0, "{name}");
        client.notify("session/cancel", json!({"sessionId": sid})).await;
        let response = client.response(&id).await;
        assert_eq!(stop_reason(&response), "cancelled", "{name}");
        assert_eq!(probe.cancellations(), 1, "{name}");
        // The turn returned `end_turn` after the signal; the runner still ends it interrupted.
        assert_eq!(journal_kinds(&store, &sid).await, ["TurnStarted", "TurnInterrupted"], "{name}");
        // The next prompt runs normally.
        let (response, before) = prompt(&mut client, &sid, "say after").await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["after"], "{name}");
    }
}

/// A store that counts journal writes (each a transaction in `SqliteStore`).
struct CountingStore {
    inner: Arc<dyn Store>,
    writes: std::sync::atomic::AtomicUsize,
}

impl CountingStore {
    fn writes(&self) -> usize {
        self.writes.load(std::sync::atomic::Ordering::SeqCst)
    }
    fn count(&self) {
        self.writes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl Store for CountingStore {
    async fn create_session(&self, record: &SessionRecord) -> Result<(), StoreError> {
        self.inner.create_session(record).await
    }
    async fn session(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        self.inner.session(id).await
    }
    async fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        self.inner.list_sessions().await
    }
    async fn touch_session(&self, id: &SessionId, title: Option<&str>, updated_at: &str) -> Result<(), StoreError> {
        self.count();
        self.inner.touch_session(id, title, updated_at).await
    }
    async fn set_system_prompt(
        &self,
        id: &SessionId,
        system_prompt: &acp_facade::acp::SystemPrompt,
    ) -> Result<(), StoreError> {
        self.count();
        self.inner.set_system_prompt(id, system_prompt).await
    }
    async fn append_events(&self, id: &SessionId, events: &[Event]) -> Result<(), StoreError> {
        self.count();
        self.inner.append_events(id, events).await
    }
    async fn append_events_and_touch(
        &self,
        id: &SessionId,
        events: &[Event],
        title: Option<&str>,
        updated_at: &str,
    ) -> Result<(), StoreError> {
        self.count();
        self.inner.append_events_and_touch(id, events, title, updated_at).await
    }
    async fn events(&self, id: &SessionId) -> Result<Vec<Event>, StoreError> {
        self.inner.events(id).await
    }
    async fn delete_session(&self, id: &SessionId) -> Result<(), StoreError> {
        self.inner.delete_session(id).await
    }
    async fn claim_session(&self, id: &SessionId) -> Result<Claim, StoreError> {
        self.inner.claim_session(id).await
    }
    async fn release_session(&self, id: &SessionId) -> Result<(), StoreError> {
        self.inner.release_session(id).await
    }
}

/// A turn that ends without waiting is journaled in one write, with the catalog update; one that
/// waits has its prompt journaled within `JOURNAL_DELAY` while it still runs, and the rest when it
/// ends.
#[tokio::test]
async fn journal_writes_are_batched_per_turn_and_bounded_in_delay() {
    for (name, inner) in stores().await {
        let counting = Arc::new(CountingStore { inner, writes: std::sync::atomic::AtomicUsize::new(0) });
        let store: Arc<dyn Store> = counting.clone();
        let (runner, probe) = runner(store.clone(), TurnsSpec { titles: true, ..TurnsSpec::default() });
        let mut client = client(&runner).await;
        let sid = client.new_session().await;

        let (response, _) = prompt(&mut client, &sid, "usage").await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        assert_eq!(counting.writes(), 1, "{name}: a turn that never waits is one journal write");
        assert_eq!(
            journal_kinds(&store, &sid).await,
            ["TurnStarted", "StepDone", "ContextMeasured", "StepDone", "ContextMeasured", "TurnDone"],
            "{name}"
        );
        let record = store.session(&SessionId::new(sid.as_str())).await.expect("read").expect("listed");
        assert_eq!(record.title.as_deref(), Some("usage"), "{name}: the title went with the batch");

        let id = client.prompt(&sid, "wait").await;
        parked(&probe).await;
        let waited = std::time::Instant::now();
        while journal_kinds(&store, &sid).await.len() < 7 {
            assert!(waited.elapsed() < STEP, "{name}: a waiting turn's prompt was never journaled");
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        assert_eq!(journal_kinds(&store, &sid).await[6..], ["TurnStarted"], "{name}");
        assert_eq!(counting.writes(), 2, "{name}");
        client.notify("session/cancel", json!({"sessionId": sid})).await;
        assert_eq!(stop_reason(&client.response(&id).await), "cancelled", "{name}");
        assert_eq!(journal_kinds(&store, &sid).await[6..], ["TurnStarted", "TurnInterrupted"], "{name}");
        assert_eq!(counting.writes(), 3, "{name}");
    }
}

#[tokio::test]
async fn cancel_request_fires_the_cancellation_signal() {
    for (name, store) in stores().await {
        let (runner, probe) = runner(store, TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        let id = client.prompt(&sid, "wait").await;
        parked(&probe).await;
        client.notify("$/cancel_request", json!({"requestId": id})).await;
        let response = client.response(&id).await;
        // Either a `cancelled` result or -32800 is a valid answer to a cancelled request.
        match response.get("result") {
            Some(result) => assert_eq!(result["stopReason"], "cancelled", "{name}"),
            None => assert_eq!(code(&response["error"]), -32800, "{name}: {response}"),
        }
        assert_eq!(probe.cancellations(), 1, "{name}");
    }
}

#[tokio::test]
async fn session_close_fires_the_cancellation_signal() {
    for (name, store) in stores().await {
        let (runner, probe) = runner(store.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        let id = client.prompt(&sid, "wait").await;
        parked(&probe).await;
        let close = client.send_request("session/close", json!({"sessionId": sid})).await;
        let response = client.response(&id).await;
        assert_eq!(stop_reason(&response), "cancelled", "{name}");
        let closed = client.response(&close).await;
        assert_eq!(closed["result"], json!({}), "{name}: {closed}");
        assert_eq!(probe.cancellations(), 1, "{name}");
        assert_eq!(journal_kinds(&store, &sid).await, ["TurnStarted", "TurnInterrupted"], "{name}");
        assert!(runner.live_session(&SessionId::new(sid.as_str())).is_none(), "{name}: closed sessions are not live");
        // A prompt to the closed session fails.
        let (response, _) = prompt(&mut client, &sid, "say hi").await;
        assert!(response.get("error").is_some(), "{name}: {response}");

        // Close while a permission request is pending: the turn sees `Cancelled`.
        let sid = client.new_session().await;
        let id = client.prompt(&sid, "permit").await;
        let _request = permission_request(&mut client).await;
        let close = client.send_request("session/close", json!({"sessionId": sid})).await;
        let response = client.response(&id).await;
        assert_eq!(stop_reason(&response), "cancelled", "{name}");
        assert_eq!(client.response(&close).await["result"], json!({}), "{name}");
        assert_eq!(probe.permissions(), [Permission::Cancelled], "{name}");
        assert_eq!(probe.cancellations(), 2, "{name}");
    }
}

#[tokio::test]
async fn hanging_up_cancels_running_turns() {
    for (name, store) in stores().await {
        let (runner, probe) = runner(store.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        let _id = client.prompt(&sid, "wait").await;
        parked(&probe).await;
        client.hang_up().await;
        assert_eq!(probe.cancellations(), 1, "{name}");
        assert_eq!(journal_kinds(&store, &sid).await, ["TurnStarted", "TurnInterrupted"], "{name}");
        assert!(runner.live_session(&SessionId::new(sid.as_str())).is_none(), "{name}");
    }
}

#[tokio::test]
async fn a_failing_turn_answers_internal_error_with_its_message() {
    for (name, store) in stores().await {
        let (runner, _) = runner(store.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        let (response, before) = prompt(&mut client, &sid, "error").await;
        let error = &response["error"];
        assert_eq!(code(error), -32603, "{name}: {response}");
        assert_eq!(error["message"], "boom: the turn failed", "{name}");
        // What was streamed before the failure was sent.
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["partial"], "{name}");
        assert_eq!(journal_kinds(&store, &sid).await, ["TurnStarted", "StepDone", "TurnFailed"], "{name}");
        // The session still works.
        let (response, _) = prompt(&mut client, &sid, "say fine").await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
    }
}

#[tokio::test]
async fn a_panicking_turn_fails_one_prompt_and_the_agent_keeps_serving() {
    for (name, store) in stores().await {
        let (runner, _) = runner(store.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        let (response, _) = prompt(&mut client, &sid, "panic").await;
        let error = &response["error"];
        assert_eq!(code(error), -32603, "{name}: {response}");
        assert!(
            error["message"].as_str().unwrap().contains("panicked on purpose"),
            "{name}: the message carries the panic's: {response}"
        );
        assert_eq!(journal_kinds(&store, &sid).await, ["TurnStarted", "TurnFailed"], "{name}");
        // The connection serves, and the same session takes the next prompt.
        assert_serving(&mut client).await;
        let (response, before) = prompt(&mut client, &sid, "say still here").await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        assert_eq!(chunk_texts(&before, "agent_message_chunk").concat(), "still here", "{name}");
    }
}

#[tokio::test]
async fn titles_are_announced_once_and_listed() {
    for (name, store) in stores().await {
        let spec = TurnsSpec { titles: true, ..TurnsSpec::default() };
        let (runner, _) = runner(store.clone(), spec.clone());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        let (response, before) = prompt(&mut client, &sid, "say hello there world").await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        let infos: Vec<Value> =
            updates(&before).into_iter().filter(|u| u["sessionUpdate"] == "session_info_update").collect();
        assert_eq!(infos.len(), 1, "{name}: {before:?}");
        assert_eq!(infos[0]["title"], "say hello th", "{name}");
        assert!(infos[0]["updatedAt"].is_string(), "{name}: {}", infos[0]);
        // Only the first prompt names the session.
        let (_, before) = prompt(&mut client, &sid, "say something else").await;
        assert!(!kinds(&before).iter().any(|k| k == "session_info_update"), "{name}: {before:?}");
        let record = store.session(&SessionId::new(sid.as_str())).await.unwrap().unwrap();
        assert_eq!(record.title.as_deref(), Some("say hello th"), "{name}");
        // The title is not journaled (the catalog holds it).
        assert!(!journal_kinds(&store, &sid).await.contains(&"SessionMetaChanged"), "{name}");

        let list = client.call_ok("session/list", json!({})).await;
        assert_eq!(list["sessions"][0]["sessionId"], sid.as_str(), "{name}");
        assert_eq!(list["sessions"][0]["title"], "say hello th", "{name}");
        assert_eq!(list["sessions"][0]["cwd"], "/tmp", "{name}");

        // Reopened (a new agent on the same store), the session keeps its title.
        client.call_ok("session/close", json!({"sessionId": sid})).await;
        let (again, _) = common::runner::runner(store.clone(), spec.clone());
        let mut client = common::runner::client(&again).await;
        client.call_ok("session/resume", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []})).await;
        let (_, before) = prompt(&mut client, &sid, "say later").await;
        assert!(!kinds(&before).iter().any(|k| k == "session_info_update"), "{name}: {before:?}");
    }
}

/// Every turn moves the session's update time that `session/list` tells, the titled first turn
/// and the later ones alike (the store may keep the time with the turn's journal entry).
#[tokio::test]
async fn every_turn_moves_the_listed_update_time() {
    for (name, store) in stores().await {
        let (runner, _) = runner(store.clone(), TurnsSpec { titles: true, ..TurnsSpec::default() });
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        let mut listed = vec![client.call_ok("session/list", json!({})).await["sessions"][0]["updatedAt"].clone()];
        for text in ["say one", "say two", "say three"] {
            // The clock's resolution is a millisecond.
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            let (response, _) = prompt(&mut client, &sid, text).await;
            assert_eq!(stop_reason(&response), "end_turn", "{name}");
            let list = client.call_ok("session/list", json!({})).await;
            listed.push(list["sessions"][0]["updatedAt"].clone());
        }
        let times: Vec<&str> = listed.iter().map(|t| t.as_str().expect("updatedAt")).collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]), "{name}: {times:?}");
        let record = store.session(&SessionId::new(sid.as_str())).await.unwrap().unwrap();
        assert_eq!(record.updated_at, times[3], "{name}");
    }
}

#[tokio::test]
async fn config_options_are_served_and_reach_the_turn() {
    for (name, store) in stores().await {
        let (runner, probe) = runner(store, TurnsSpec { config: true, ..TurnsSpec::default() });
        let mut client = client(&runner).await;
        let result = client.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
        let sid = result["sessionId"].as_str().unwrap().to_owned();
        let options: Vec<(&str, &str)> = result["configOptions"]
            .as_array()
            .expect("configOptions")
            .iter()
            .map(|o| (o["id"].as_str().unwrap(), o["currentValue"].as_str().unwrap()))
            .collect();
        assert_eq!(options, [("mode", "ask"), ("model", "fast")], "{name}");
        assert_eq!(result["modes"]["currentModeId"], "ask", "{name}");
        let modes: Vec<&str> =
            result["modes"]["availableModes"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
        assert_eq!(modes, ["ask", "code"], "{name}");

        let (_, before) = prompt(&mut client, &sid, "config").await;
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), [r#"(Some("ask"), Some("fast"))"#], "{name}");

        // set_config_option → one config_option_update with the full state, and the turn sees it.
        let id = client
            .send_request("session/set_config_option", json!({"sessionId": sid, "configId": "model", "value": "smart"}))
            .await;
        let (response, before) = client.response_with_preceding(&id).await;
        assert_eq!(kinds(&before), ["config_option_update"], "{name}");
        let current: Vec<&str> = response["result"]["configOptions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["currentValue"].as_str().unwrap())
            .collect();
        assert_eq!(current, ["ask", "smart"], "{name}");

        // set_mode goes through the same option.
        let id = client.send_request("session/set_mode", json!({"sessionId": sid, "modeId": "code"})).await;
        let (response, before) = client.response_with_preceding(&id).await;
        assert_eq!(response["result"], json!({}), "{name}");
        assert_eq!(kinds(&before), ["config_option_update"], "{name}");
        assert_eq!(updates(&before)[0]["configOptions"][0]["currentValue"], "code", "{name}");

        let (_, before) = prompt(&mut client, &sid, "config").await;
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), [r#"(Some("code"), Some("smart"))"#], "{name}");
        assert_eq!(probe.config_seen.lock().unwrap().len(), 2, "{name}");

        // An unknown value is refused.
        let error = client
            .call_err("session/set_config_option", json!({"sessionId": sid, "configId": "model", "value": "huge"}))
            .await;
        assert_eq!(code(&error), -32602, "{name}");
    }
}

#[tokio::test]
async fn no_config_options_means_none_in_session_new() {
    let (runner, _) = runner(stores().await.remove(0).1, TurnsSpec::default());
    let mut client = client(&runner).await;
    let result = client.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    assert!(result.get("configOptions").is_none_or(Value::is_null), "{result}");
    assert!(result.get("modes").is_none_or(Value::is_null), "{result}");
}

#[tokio::test]
async fn compaction_runs_the_hook() {
    for (name, store) in stores().await {
        let (runner, probe) = runner(store.clone(), TurnsSpec { compaction: true, ..TurnsSpec::default() });
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        let (response, before) = prompt(&mut client, &sid, "/compact").await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        let ups = updates(&before);
        assert_eq!(kinds(&before), ["available_commands_update"], "{name}: {before:?}");
        let commands: Vec<&str> =
            ups[0]["availableCommands"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(commands, ["compact"], "{name}");
        assert_eq!(*probe.compactions.lock().unwrap(), std::slice::from_ref(&sid), "{name}");
        assert!(probe.turns.lock().unwrap().is_empty(), "{name}: /compact never reaches run_turn");
        // Advertised once per session.
        let (_, before) = prompt(&mut client, &sid, "say hi").await;
        assert_eq!(kinds(&before), ["agent_message_chunk"], "{name}");
        let (response, _) = prompt(&mut client, &sid, "/compact").await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        assert_eq!(probe.compactions.lock().unwrap().len(), 2, "{name}");
        assert!(journal_kinds(&store, &sid).await.contains(&"CompactWaiterResolved"), "{name}");

        // A failing hook fails the prompt.
        let spec = TurnsSpec { compaction: true, compact_fails: Some("no room".into()), ..TurnsSpec::default() };
        let (runner, _) = common::runner::runner(store.clone(), spec);
        let mut client = common::runner::client(&runner).await;
        let sid = client.new_session().await;
        let (response, _) = prompt(&mut client, &sid, "/compact").await;
        assert_eq!(code(&response["error"]), -32603, "{name}: {response}");
        assert!(response["error"]["message"].as_str().unwrap().contains("no room"), "{name}: {response}");
    }
}

#[tokio::test]
async fn without_compaction_slash_compact_is_a_prompt() {
    let (runner, probe) = runner(stores().await.remove(1).1, TurnsSpec::default());
    let mut client = client(&runner).await;
    let sid = client.new_session().await;
    let (response, before) = prompt(&mut client, &sid, "/compact").await;
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(kinds(&before), ["agent_message_chunk"], "{before:?}");
    assert_eq!(probe.turns.lock().unwrap().len(), 1);
    assert!(probe.compactions.lock().unwrap().is_empty());
}

#[tokio::test]
async fn ask_user_sends_nothing_and_can_be_answered_out_of_band() {
    for (name, store) in stores().await {
        let (runner, probe) = runner(store.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;

        // Nothing on the wire; cancel ends it.
        let id = client.prompt(&sid, "ask which color?").await;
        parked(&probe).await;
        client.notify("session/cancel", json!({"sessionId": sid})).await;
        let (response, before) = client.response_with_preceding(&id).await;
        assert_eq!(stop_reason(&response), "cancelled", "{name}");
        assert!(before.is_empty(), "{name}: an ask-user gate has no ACP form: {before:?}");

        // The product may answer it itself.
        let id = client.prompt(&sid, "ask which size?").await;
        parked(&probe).await;
        let gate = wait_open_gate(&store, &sid, 2).await;
        let session = runner.live_session(&SessionId::new(sid.as_str())).expect("live");
        session.answer_gate(&gate, GateResponse::Values(json!("large"))).expect("answer the gate");
        let (response, before) = client.response_with_preceding(&id).await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        assert_eq!(chunk_texts(&before, "agent_message_chunk"), [r#""large""#], "{name}");
        assert_eq!(probe.asked.lock().unwrap().clone(), [None, Some(json!("large"))], "{name}");
        // Answering a gate twice (or an unknown one) is an error.
        assert!(session.answer_gate(&gate, GateResponse::Values(json!("x"))).is_err(), "{name}");
    }
}

/// The id of the `nth` (1-based) `GateOpened` of the session, once journaled.
async fn wait_open_gate(store: &Arc<dyn Store>, sid: &str, nth: usize) -> GateId {
    let deadline = tokio::time::Instant::now() + STEP;
    loop {
        let gates: Vec<GateId> = journal(store, sid)
            .await
            .into_iter()
            .filter_map(|e| match e.kind {
                EventKind::GateOpened { gate } => Some(gate.id),
                _ => None,
            })
            .collect();
        if gates.len() >= nth {
            return gates[nth - 1].clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "gate {nth} never opened");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn the_journal_holds_exactly_the_enduring_events() {
    for (name, store) in stores().await {
        let (runner, probe) = runner(store.clone(), TurnsSpec { titles: true, ..TurnsSpec::default() });
        let mut client = client(&runner).await;
        let sid = client.new_session().await;

        prompt(&mut client, &sid, "think hard").await;
        prompt(&mut client, &sid, "tool").await;
        let id = client.prompt(&sid, "permit").await;
        let request = permission_request(&mut client).await;
        client.respond(&request["id"], selected("allow_once")).await;
        client.response(&id).await;
        prompt(&mut client, &sid, "usage").await;
        prompt(&mut client, &sid, "error").await;
        let id = client.prompt(&sid, "wait").await;
        parked(&probe).await;
        client.notify("session/cancel", json!({"sessionId": sid})).await;
        client.response(&id).await;

        let kinds = journal_kinds(&store, &sid).await;
        assert_eq!(
            kinds,
            [
                // think hard
                "TurnStarted",
                "StepDone",
                "TurnDone",
                // tool
                "TurnStarted",
                "StepDone",
                "TurnDone",
                // permit
                "TurnStarted",
                "GateOpened",
                "GateResolved",
                "StepDone",
                "TurnDone",
                // usage
                "TurnStarted",
                "StepDone",
                "ContextMeasured",
                "StepDone",
                "ContextMeasured",
                "TurnDone",
                // error
                "TurnStarted",
                "StepDone",
                "TurnFailed",
                // wait + cancel
                "TurnStarted",
                "TurnInterrupted",
            ],
            "{name}"
        );
        // Every journaled event belongs to a turn of this session, in order, and is public.
        let events = journal(&store, &sid).await;
        let mut turn_ids = Vec::new();
        for e in &events {
            assert!(e.is_public(), "{name}: {e:?}");
            let turn = e.header.coordinates.turn_id.clone().expect("turn id");
            if matches!(e.kind, EventKind::TurnStarted { .. }) {
                assert!(e.header.cause.command_id.is_some(), "{name}: TurnStarted names its command");
                turn_ids.push(turn);
            } else {
                assert_eq!(Some(&turn), turn_ids.last(), "{name}: events follow their turn's start");
            }
        }
        assert_eq!(turn_ids.len(), 6, "{name}");
        let unique: std::collections::HashSet<_> = turn_ids.iter().collect();
        assert_eq!(unique.len(), 6, "{name}: every turn has its own id");
        // The user message is journaled with the turn.
        let EventKind::TurnStarted { message } = &events[0].kind else { unreachable!() };
        assert_eq!(serde_json::to_value(&message.content).unwrap(), json!([{"type": "text", "text": "think hard"}]));
    }
}

#[tokio::test]
async fn load_replays_the_journal_before_its_response() {
    for (name, store) in stores().await {
        let (runner, _) = runner(store.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let sid = client.new_session().await;
        prompt(&mut client, &sid, "think hmm").await;
        prompt(&mut client, &sid, "tool").await;
        let id = client.prompt(&sid, "permit").await;
        let request = permission_request(&mut client).await;
        client.respond(&request["id"], selected("reject_once")).await;
        client.response(&id).await;
        prompt(&mut client, &sid, "usage").await;

        // Re-attached while live and idle on this connection: the same replay as after a restart.
        let id = client.send_request("session/load", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []})).await;
        let (response, live_replay) = client.response_with_preceding(&id).await;
        assert!(response.get("result").is_some(), "{name}: {response}");
        client.call_ok("session/close", json!({"sessionId": sid})).await;

        // A fresh runner and agent on the same store: as after a restart.
        let (again, _) = common::runner::runner(store.clone(), TurnsSpec::default());
        let mut client = common::runner::client(&again).await;
        let id = client.send_request("session/load", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []})).await;
        let (response, before) = client.response_with_preceding(&id).await;
        assert!(response.get("result").is_some(), "{name}: {response}");
        assert_eq!(live_replay, before, "{name}: a live session replays what a stored one does");
        let ups = updates(&before);
        assert_eq!(before.len(), ups.len(), "{name}: only updates precede the response");
        let summary: Vec<String> = ups
            .iter()
            .map(|u| {
                let kind = u["sessionUpdate"].as_str().unwrap();
                match kind {
                    "tool_call" => {
                        format!("tool_call {} {}", u["title"].as_str().unwrap(), u["status"].as_str().unwrap())
                    }
                    "usage_update" => format!("usage_update {}/{}", u["used"], u["size"]),
                    _ => format!("{kind} {}", u["content"]["text"].as_str().unwrap_or("?")),
                }
            })
            .collect();
        assert_eq!(
            summary,
            [
                "user_message_chunk think hmm",
                "user_message_chunk tool",
                "user_message_chunk permit",
                "user_message_chunk usage",
                "agent_thought_chunk hmm",
                "agent_message_chunk ok",
                "agent_message_chunk read it",
                "agent_message_chunk Denied",
                "agent_message_chunk a",
                "agent_message_chunk b",
                "tool_call Read file completed",
                "tool_call Edit file failed",
                "usage_update 20/100",
            ],
            "{name}"
        );
        for m in &before {
            assert_eq!(m["params"]["sessionId"], sid.as_str(), "{name}");
        }

        // The loaded session is live and keeps journaling after the earlier turns.
        let (response, _) = prompt(&mut client, &sid, "say more").await;
        assert_eq!(stop_reason(&response), "end_turn", "{name}");
        let kinds = journal_kinds(&store, &sid).await;
        assert_eq!(kinds.iter().filter(|k| **k == "TurnStarted").count(), 5, "{name}");
        let turn_ids: Vec<String> = journal(&store, &sid)
            .await
            .iter()
            .filter(|e| matches!(e.kind, EventKind::TurnStarted { .. }))
            .map(|e| e.header.coordinates.turn_id.clone().unwrap().as_str().to_owned())
            .collect();
        let unique: std::collections::HashSet<_> = turn_ids.iter().collect();
        assert_eq!(unique.len(), 5, "{name}: a reopened session does not reuse turn ids: {turn_ids:?}");

        // Resume sends nothing.
        client.call_ok("session/close", json!({"sessionId": sid})).await;
        let id =
            client.send_request("session/resume", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []})).await;
        let (response, before) = client.response_with_preceding(&id).await;
        assert!(response.get("result").is_some(), "{name}: {response}");
        assert!(before.is_empty(), "{name}: resume sends no update: {before:?}");
    }
}

#[tokio::test]
async fn list_delete_and_unknown_sessions() {
    for (name, store) in stores().await {
        let (runner, _) = runner(store.clone(), TurnsSpec::default());
        let mut client = client(&runner).await;
        let a = client.new_session().await;
        let b = client.new_session().await;
        let list = client.call_ok("session/list", json!({})).await;
        let mut listed: Vec<&str> =
            list["sessions"].as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap()).collect();
        listed.sort_unstable();
        let mut expected = vec![a.as_str(), b.as_str()];
        expected.sort_unstable();
        assert_eq!(listed, expected, "{name}");

        // Delete: refused while live, fine after close; the journal goes with it.
        prompt(&mut client, &a, "say x").await;
        let error = client.call_err("session/delete", json!({"sessionId": a})).await;
        assert_eq!(code(&error), -32600, "{name}");
        client.call_ok("session/close", json!({"sessionId": a})).await;
        client.call_ok("session/delete", json!({"sessionId": a})).await;
        assert!(store.session(&SessionId::new(a.as_str())).await.unwrap().is_none(), "{name}");
        assert!(store.events(&SessionId::new(a.as_str())).await.unwrap().is_empty(), "{name}");
        let list = client.call_ok("session/list", json!({})).await;
        let listed: Vec<&str> =
            list["sessions"].as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap()).collect();
        assert_eq!(listed, [b.as_str()], "{name}");

        // A deleted or unknown session cannot be loaded or resumed.
        for method in ["session/load", "session/resume"] {
            let error = client.call_err(method, json!({"sessionId": a, "cwd": "/tmp", "mcpServers": []})).await;
            assert_eq!(code(&error), -32002, "{name} {method}: {error}");
        }
        // Two agents on one runner cannot hold the same session open.
        let mut other = common::runner::client(&runner).await;
        let error = other.call_err("session/resume", json!({"sessionId": b, "cwd": "/tmp", "mcpServers": []})).await;
        assert!(code(&error) < 0, "{name}: {error}");
    }
}

#[tokio::test]
async fn the_runner_advertises_every_session_capability() {
    for compaction in [false, true] {
        let (runner, _) = runner(stores().await.remove(0).1, TurnsSpec { compaction, ..TurnsSpec::default() });
        let mut client = TestClient::start_agent(runner.agent(runner.options()));
        let init = client.initialize().await;
        let caps = &init["agentCapabilities"];
        assert_eq!(caps["loadSession"], true, "{init}");
        for capability in ["list", "resume", "close", "delete"] {
            assert!(caps["sessionCapabilities"][capability].is_object(), "{capability}: {init}");
        }
        // `/compact` is advertised per session, on its first prompt, only with compaction.
        let sid = client.new_session().await;
        let (_, before) = prompt(&mut client, &sid, "say hi").await;
        assert_eq!(kinds(&before).contains(&"available_commands_update".to_owned()), compaction, "{before:?}");
    }
}
