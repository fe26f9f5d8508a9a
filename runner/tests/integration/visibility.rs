//! The visibility boundary, property-tested: within the correlated turn, random streams mixing
//! `Public` and `Internal` events of every kind. No `Internal` event's content ever reaches the
//! wire (each carries a unique `SECRET-n` marker), no non-translatable `Public` event's content is
//! streamed (`QUIET-n`), and every translatable `Public` event arrives, in order, before the
//! prompt's response.

use crate::common;

use acp_facade::Options;
use acp_facade::acp::{StopReason, ToolCallStatus, ToolKind};
use acp_facade::harness::{
    AiMessage, ApprovalAction, CommandId, EventClass, EventKind, Gate, GateId, GateKind, GateResolver, Message,
    TokenChannel, ToolCallId, ToolResultMessage, UserMessage, Visibility, content::text_block,
};
use common::TestClient;
use common::host::ScriptedHost;
use proptest::prelude::*;
use serde_json::{Value, json};

const AT: (&str, &str) = ("loop-v", "turn-v");

/// One generated event: `(kind selector, public?, variant)`.
type Step = (u8, bool, u8);

const KINDS: u8 = 13;

/// Builds the event for step `n`, and the update it must produce (when public and translatable).
#[allow(clippy::too_many_lines, reason = "one arm per event kind")]
fn event(n: usize, (selector, public, variant): Step) -> (EventKind, Visibility, Option<Value>) {
    let visibility = if public { Visibility::Public } else { Visibility::Internal };
    // Text of translatable public events must arrive; every other text must never arrive.
    let shown = format!("PUBLIC-{n}");
    let hidden = if public { format!("QUIET-{n}") } else { format!("SECRET-{n}") };
    let text = if public { shown.clone() } else { hidden.clone() };
    let call = format!("call-{n}");
    let translated = |update: Value| if public { Some(update) } else { None };
    match selector % KINDS {
        0 | 1 => {
            let (channel, kind) = if selector % KINDS == 0 {
                (TokenChannel::Message, "agent_message_chunk")
            } else {
                (TokenChannel::Thought, "agent_thought_chunk")
            };
            let update = json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}});
            (EventKind::TokenDelta { text, channel }, visibility, translated(update))
        }
        2 => {
            let update = json!({"sessionUpdate": "tool_call", "toolCallId": call, "title": text, "kind": "edit",
                                "rawInput": {"arg": text}});
            let kind =
                EventKind::tool_call_started(ToolCallId::new(call), text.clone(), ToolKind::Edit, json!({"arg": text}));
            (kind, visibility, translated(update))
        }
        3 => {
            let status = (variant % 2 == 0).then_some(ToolCallStatus::InProgress);
            let content = (variant % 3 != 0).then(|| vec![text_block(text.clone()).into()]);
            let mut update = json!({"sessionUpdate": "tool_call_update", "toolCallId": call});
            if status.is_some() {
                update["status"] = json!("in_progress");
            }
            if content.is_some() {
                update["content"] = json!([{"type": "content", "content": {"type": "text", "text": text}}]);
            }
            let kind = EventKind::tool_call_progress(ToolCallId::new(call), status, content);
            (kind, visibility, translated(update))
        }
        4 => {
            let is_error = variant % 2 == 1;
            let update = json!({"sessionUpdate": "tool_call_update", "toolCallId": call,
                                "status": if is_error { "failed" } else { "completed" },
                                "content": [{"type": "content", "content": {"type": "text", "text": text}}]});
            let kind = EventKind::tool_call_completed(ToolCallId::new(call), vec![text_block(text).into()], is_error);
            (kind, visibility, translated(update))
        }
        5 => {
            // Numbers cannot carry a marker: internal measurements use values no public one has.
            let used = if public { n as u64 + 1 } else { 9_000_000 + n as u64 };
            let update = json!({"sessionUpdate": "usage_update", "used": used, "size": 10_000_000});
            (EventKind::ContextMeasured { used, size: 10_000_000, cost: None }, visibility, translated(update))
        }
        6 => {
            let kind = EventKind::StepDone {
                messages: vec![
                    Message::Ai(AiMessage {
                        content: vec![text_block(hidden.clone())],
                        thoughts: vec![text_block(hidden.clone())],
                        tool_calls: Vec::new(),
                    }),
                    Message::ToolResult(ToolResultMessage::new(
                        ToolCallId::new(call),
                        vec![text_block(hidden).into()],
                        false,
                    )),
                ],
            };
            (kind, visibility, None)
        }
        7 => {
            // Public gates here are ones with no ACP form; internal ones may be anything, even a
            // loop-resolved permission gate (which must not become a permission request).
            let (kind, resolver) = match (public, variant % 4) {
                (false, 0) | (true, 3) => {
                    (GateKind::Permission, if public { GateResolver::Session } else { GateResolver::Loop })
                }
                (_, 1) => (GateKind::AskUser, GateResolver::Loop),
                (_, 2) => (GateKind::Form, GateResolver::Loop),
                _ => (GateKind::OpenUrl, GateResolver::Session),
            };
            let gate = Gate {
                id: GateId::new(format!("gate-{hidden}")),
                kind,
                resolver,
                tool_call_id: Some(ToolCallId::new(format!("call-{hidden}"))),
                title: hidden,
                controls: vec![ApprovalAction::Approve, ApprovalAction::ApproveAlways, ApprovalAction::Deny],
                options: Vec::new(),
                schema: None,
                url: None,
            };
            (EventKind::gate_opened(gate), visibility, None)
        }
        8 => (EventKind::GateResolved { gate_id: GateId::new(hidden) }, visibility, None),
        9 => (EventKind::CompactWaiterRejected { reason: hidden }, visibility, None),
        10 => (EventKind::CompactWaiterResolved {}, visibility, None),
        11 => {
            // Another TurnStarted inside our turn (a nested or confused runtime): never shown.
            let kind = EventKind::TurnStarted { message: UserMessage::new(vec![text_block(hidden)]) };
            (kind, visibility, None)
        }
        _ => {
            // Catalog metadata is never streamed from an internal event.
            let kind = EventKind::SessionMetaChanged { title: Some(hidden.clone()), updated_at: Some(hidden) };
            (kind, Visibility::Internal, None)
        }
    }
}

/// The terminal: `(0 done | 1 interrupted | 2 failed, public?, variant)`.
fn terminal((selector, public, variant): Step) -> (EventKind, Visibility, Result<&'static str, Option<String>>) {
    let visibility = if public { Visibility::Public } else { Visibility::Internal };
    let hidden = if public { "QUIET-terminal" } else { "SECRET-terminal" };
    match selector % 3 {
        0 => {
            let (stop, expected) = match variant % 4 {
                0 => (None, "end_turn"),
                1 => (Some(StopReason::MaxTokens), "max_tokens"),
                2 => (Some(StopReason::Refusal), "refusal"),
                _ => (Some(StopReason::MaxTurnRequests), "max_turn_requests"),
            };
            let message = Some(Message::Ai(AiMessage { content: vec![text_block(hidden)], ..AiMessage::default() }));
            (EventKind::TurnDone { message, stop }, visibility, Ok(expected))
        }
        1 => (EventKind::TurnInterrupted {}, visibility, Ok("cancelled")),
        _ => {
            let error = if public { "PUBLIC-failure".to_owned() } else { "SECRET-failure".to_owned() };
            let expected = public.then(|| error.clone());
            (EventKind::TurnFailed { error }, visibility, Err(expected))
        }
    }
}

/// Asserts that every key of `expected` has the same value in `actual` (recursively for objects).
fn assert_subset(expected: &Value, actual: &Value, context: &str) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, value) in e {
                let got = a.get(key).unwrap_or_else(|| panic!("{context}: missing `{key}` in {actual}"));
                assert_subset(value, got, context);
            }
        }
        _ => assert_eq!(expected, actual, "{context}"),
    }
}

async fn scenario(steps: Vec<Step>, end: Step) {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let session = client.new_session().await;
    let id = client.prompt(&session, "go").await;
    let s = host.session(&session);
    let (command, _) = s.next_submit().await;

    // Internal noise before the turn starts, too.
    s.emit(
        EventKind::TokenDelta { text: "SECRET-early".into(), channel: TokenChannel::Message },
        EventClass::Ephemeral,
        Visibility::Internal,
        None,
        Some(AT),
    );
    s.start_turn(&command, AT);
    let mut expected = Vec::new();
    for (n, step) in steps.iter().enumerate() {
        let (kind, visibility, update) = event(n, *step);
        let class = if n % 2 == 0 { EventClass::Ephemeral } else { EventClass::Enduring };
        let cause = (step.2 % 5 == 0).then(|| CommandId::new(format!("cmd-{n}")));
        s.emit(kind, class, visibility, cause.as_ref(), Some(AT));
        expected.extend(update);
    }
    let (kind, visibility, outcome) = terminal(end);
    s.emit(kind, EventClass::Enduring, visibility, None, Some(AT));

    let (response, before) = client.response_with_preceding(&id).await;
    match outcome {
        Ok(stop) => assert_eq!(response["result"], json!({"stopReason": stop}), "{response}"),
        Err(message) => {
            assert_eq!(response["error"]["code"], json!(-32603), "{response}");
            if let Some(message) = message {
                assert!(response["error"]["message"].as_str().unwrap().contains(&message), "{response}");
            }
        }
    }
    assert!(
        !before.iter().any(|m| m.get("method") == Some(&json!("session/request_permission"))),
        "a permission request was sent"
    );
    let got = common::updates(&before);
    assert_eq!(got.len(), expected.len(), "updates {got:#?}\nexpected {expected:#?}");
    for (n, (e, g)) in expected.iter().zip(&got).enumerate() {
        assert_subset(e, g, &format!("update {n}"));
    }
    client.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    for message in &client.transcript {
        let text = message.to_string();
        assert!(!text.contains("SECRET"), "internal content reached the wire: {text}");
        assert!(!text.contains("QUIET"), "non-translatable content was streamed: {text}");
    }
    client.hang_up().await;
}

fn step() -> impl Strategy<Value = Step> {
    (0..KINDS, any::<bool>(), any::<u8>())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn internal_events_never_reach_the_wire_and_public_ones_all_do(
        steps in prop::collection::vec(step(), 0..24),
        end in (0..3u8, any::<bool>(), any::<u8>()),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(scenario(steps, end));
    }
}

#[test]
fn an_all_internal_turn_streams_nothing() {
    let steps: Vec<Step> = (0..KINDS).map(|k| (k, false, k)).chain((0..KINDS).map(|k| (k, false, k + 1))).collect();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(scenario(steps.clone(), (0, false, 1)));
    runtime.block_on(scenario(steps, (2, false, 0)));
}
