//! Both replay orders over one multi-turn history: what each sends, in which order, and that
//! they send the same updates.

use serde_json::{Value, json};

use super::{ReplayOrder, UnknownReplayOrder, replay_updates};
use crate::acp::{
    ClientCapabilities, ClientSessionCapabilities, CompactionCapabilities, CompactionId, CompactionStatus,
    CompactionUpdate, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate, ToolKind,
};
use crate::client::Capabilities;
use crate::harness::content::text_block;
use crate::harness::{
    AiMessage, Event, EventClass, EventKind, Message, ToolCallId, ToolCallRequest, ToolResultMessage, UserMessage,
    Visibility,
};

fn user(text: &str) -> EventKind {
    EventKind::TurnStarted { message: UserMessage::new(vec![text_block(text)]) }
}

fn ai(thoughts: &[&str], content: &[&str], calls: &[(&str, &str)]) -> Message {
    Message::Ai(AiMessage {
        content: content.iter().map(|t| text_block(*t)).collect(),
        thoughts: thoughts.iter().map(|t| text_block(*t)).collect(),
        tool_calls: calls
            .iter()
            .map(|(id, title)| ToolCallRequest::new(ToolCallId::new(*id), *title, ToolKind::Read, json!({"arg": id})))
            .collect(),
    })
}

fn result(call: &str, output: &str) -> Message {
    Message::ToolResult(ToolResultMessage::new(ToolCallId::new(call), vec![text_block(output).into()], false))
}

fn step(messages: Vec<Message>) -> EventKind {
    EventKind::StepDone { messages }
}

fn compaction(status: CompactionStatus) -> EventKind {
    EventKind::CompactionChanged { update: Box::new(CompactionUpdate::new(CompactionId::new("c1"), status)) }
}

fn plan(status: PlanEntryStatus) -> EventKind {
    EventKind::PlanUpdated { plan: Plan::new(vec![PlanEntry::new("the step", PlanEntryPriority::High, status)]) }
}

/// Three turns: thoughts, text and tool calls over several steps (calls finished in another
/// order than asked for, in a later step, twice, never, or never asked for), a compaction between
/// turns, usage and plans along the way, and decoys (internal, ephemeral, `TurnDone`) that no
/// order replays.
fn history() -> Vec<Event> {
    let kinds = vec![
        user("q1"),
        plan(PlanEntryStatus::InProgress),
        step(vec![ai(&["think 1"], &["a1"], &[("call-1", "Read")]), result("call-1", "read 1")]),
        EventKind::ContextMeasured { used: 10, size: 100, cost: None },
        step(vec![ai(&[], &["a1 again"], &[])]),
        EventKind::TurnDone { message: Some(ai(&[], &["DUPLICATE"], &[])), stop: None },
        compaction(CompactionStatus::InProgress),
        compaction(CompactionStatus::Completed),
        user("q2"),
        // Asked for in one order, finished in the other.
        step(vec![
            ai(&["think 2"], &["a2"], &[("call-2", "Fetch"), ("call-3", "Search")]),
            result("call-3", "found"),
            result("call-2", "first result"),
        ]),
        // A result journaled again: the call is replayed once, with it.
        step(vec![result("call-2", "last result"), ai(&["think 2b"], &["a2 done"], &[])]),
        plan(PlanEntryStatus::Completed),
        EventKind::ContextMeasured { used: 20, size: 100, cost: None },
        user("q3"),
        // A call started in one step and finished in the next; one never finished.
        step(vec![ai(&[], &["a3"], &[("call-4", "Fetch"), ("unfinished", "Wait")])]),
        step(vec![ai(&[], &["a3 done"], &[]), result("call-4", "fetched")]),
        // A result whose call no public message asked for: where the result is.
        step(vec![result("orphan", "orphaned")]),
    ];
    let mut events: Vec<Event> =
        kinds.into_iter().enumerate().map(|(n, kind)| Event::plain(&format!("e{n}"), n as u64, kind)).collect();
    let mut internal = Event::plain("hidden", 90, step(vec![ai(&["SECRET"], &["SECRET"], &[])]));
    internal.header.visibility = Visibility::Internal;
    let mut ephemeral = Event::plain("live", 91, user("EPHEMERAL"));
    ephemeral.header.class = EventClass::Ephemeral;
    events.insert(3, internal);
    events.insert(9, ephemeral);
    events
}

fn compaction_client() -> Capabilities {
    Capabilities::from(
        ClientCapabilities::new().session(ClientSessionCapabilities::new().compaction(CompactionCapabilities::new())),
    )
}

/// A compact description of one update: its kind, its text or id, its message id.
fn describe(update: &SessionUpdate) -> String {
    let u = serde_json::to_value(update).unwrap();
    let kind = u["sessionUpdate"].as_str().unwrap().to_owned();
    match kind.as_str() {
        "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk" => {
            format!("{kind}:{}@{}", u["content"]["text"].as_str().unwrap(), u["messageId"].as_str().unwrap())
        }
        "tool_call" => format!("tool_call:{}:{}", u["toolCallId"].as_str().unwrap(), text_of(&u["content"][0])),
        "compaction_update" => format!("compaction_update:{}", u["status"].as_str().unwrap()),
        "usage_update" => format!("usage_update:{}", u["used"]),
        "plan" => format!("plan:{}", u["entries"][0]["status"].as_str().unwrap()),
        _ => kind,
    }
}

fn text_of(content: &Value) -> &str {
    content["content"]["text"].as_str().unwrap_or("")
}

fn described(order: ReplayOrder, client: &Capabilities) -> Vec<String> {
    replay_updates(&history(), client, order).iter().map(describe).collect()
}

#[test]
fn grouped_replays_four_buckets_then_the_state() {
    assert_eq!(
        described(ReplayOrder::Grouped, &compaction_client()),
        [
            "user_message_chunk:q1@e0",
            "user_message_chunk:q2@e8",
            "user_message_chunk:q3@e13",
            "agent_thought_chunk:think 1@e2/0",
            "agent_message_chunk:a1@e2/0",
            "agent_message_chunk:a1 again@e4/0",
            "agent_thought_chunk:think 2@e9/0",
            "agent_message_chunk:a2@e9/0",
            "agent_thought_chunk:think 2b@e10/1",
            "agent_message_chunk:a2 done@e10/1",
            "agent_message_chunk:a3@e14/0",
            "agent_message_chunk:a3 done@e15/0",
            "tool_call:call-1:read 1",
            "tool_call:call-3:found",
            "tool_call:call-2:last result",
            "tool_call:call-4:fetched",
            "tool_call:orphan:orphaned",
            "compaction_update:in_progress",
            "compaction_update:completed",
            "usage_update:20",
            "plan:completed",
        ]
    );
}

#[test]
fn conversation_replays_turn_by_turn_then_the_state() {
    assert_eq!(
        described(ReplayOrder::Conversation, &compaction_client()),
        [
            "user_message_chunk:q1@e0",
            "agent_thought_chunk:think 1@e2/0",
            "agent_message_chunk:a1@e2/0",
            "tool_call:call-1:read 1",
            "agent_message_chunk:a1 again@e4/0",
            "compaction_update:in_progress",
            "compaction_update:completed",
            "user_message_chunk:q2@e8",
            "agent_thought_chunk:think 2@e9/0",
            "agent_message_chunk:a2@e9/0",
            // Where they were asked for, each with its last result.
            "tool_call:call-2:last result",
            "tool_call:call-3:found",
            "agent_thought_chunk:think 2b@e10/1",
            "agent_message_chunk:a2 done@e10/1",
            "user_message_chunk:q3@e13",
            "agent_message_chunk:a3@e14/0",
            "tool_call:call-4:fetched",
            "agent_message_chunk:a3 done@e15/0",
            "tool_call:orphan:orphaned",
            "usage_update:20",
            "plan:completed",
        ]
    );
}

#[test]
fn both_orders_replay_the_same_updates_byte_for_byte() {
    for client in [Capabilities::default(), compaction_client()] {
        let bytes = |order| {
            let mut lines: Vec<String> =
                replay_updates(&history(), &client, order).iter().map(|u| serde_json::to_string(u).unwrap()).collect();
            lines.sort();
            lines
        };
        let grouped = bytes(ReplayOrder::Grouped);
        assert_eq!(grouped, bytes(ReplayOrder::Conversation));
        assert_eq!(grouped.len(), if client.compaction() { 21 } else { 19 });
        for left_out in ["SECRET", "EPHEMERAL", "DUPLICATE", "unfinished"] {
            assert!(!grouped.concat().contains(left_out), "{left_out}");
        }
    }
}

#[test]
fn a_client_without_the_capability_gets_no_compaction_in_either_order() {
    for order in [ReplayOrder::Grouped, ReplayOrder::Conversation] {
        let replay = described(order, &Capabilities::default());
        assert!(replay.iter().all(|u| !u.starts_with("compaction")), "{order}: {replay:?}");
        assert_eq!(replay[replay.len() - 2..], ["usage_update:20", "plan:completed"], "{order}");
    }
}

#[test]
fn an_empty_history_replays_nothing_in_either_order() {
    for order in [ReplayOrder::Grouped, ReplayOrder::Conversation] {
        assert!(replay_updates(&[], &compaction_client(), order).is_empty());
    }
}

#[test]
fn orders_are_named_and_a_wrong_name_is_refused_with_the_accepted_ones() {
    for order in [ReplayOrder::Grouped, ReplayOrder::Conversation] {
        assert_eq!(order.as_str().parse::<ReplayOrder>(), Ok(order));
        assert_eq!(order.to_string(), order.as_str());
    }
    assert_eq!(ReplayOrder::default(), ReplayOrder::Grouped);
    let error = "Conversation".parse::<ReplayOrder>().unwrap_err();
    assert_eq!(error, UnknownReplayOrder("Conversation".to_owned()));
    assert_eq!(error.to_string(), r#"unknown replay order "Conversation": expected "grouped" or "conversation""#);
}
