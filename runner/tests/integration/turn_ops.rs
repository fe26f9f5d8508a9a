//! The turn-operation queue ([`acp_facade_runner::binding::ops`]) the bindings drive a turn through, used
//! the way a binding uses it: a host thread of its own (Python's or JavaScript's) pushes
//! operations synchronously while `run_turn` applies them. Checked through the wire: order,
//! answers, calls after the end, and the bounds — a host that awaits the pace never queues more
//! than the soft mark, and one that never awaits is refused at the hard limit while the client
//! reads nothing, with every accepted operation delivered once the client reads.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use acp_facade::acp::{
    AvailableCommand, Cost, Meta, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionConfigOption,
    SessionConfigSelectOption, StopReason, ToolCallStatus, ToolKind,
};
use acp_facade::binding::pace::{HARD_LIMIT, HIGH_WATER, Pace, Refused};
use acp_facade::error::{Error, ErrorExt};
use acp_facade::harness::ApprovalAction;
use acp_facade::harness::content::text_block;
use acp_facade_runner::binding::ops::{self, Reply, TurnEnded, TurnOp, TurnOps};
use acp_facade_runner::{MemoryStore, Permission, Runner, ToolCallFields, Turn, TurnRunner};
use async_trait::async_trait;
use common::{TestClient, chunk_texts, updates};
use futures::executor::block_on;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// What a host thread does with its turn's queue; returns the turn's stop reason.
type Script = Arc<dyn Fn(TurnOps, &Seen) -> StopReason + Send + Sync>;

/// What the host thread reports to the test.
#[derive(Default)]
struct Seen {
    /// Signalled when the script reached the point the test waits for.
    reached: Notify,
    /// The most operations the script saw queued.
    most_queued: AtomicUsize,
    /// How many operations the queue accepted.
    accepted: AtomicUsize,
    /// What the script recorded (answers, refusals).
    notes: Mutex<Vec<String>>,
    /// The handle, kept past the turn's end.
    kept: Mutex<Option<TurnOps>>,
}

impl Seen {
    fn note(&self, note: impl Into<String>) {
        self.notes.lock().unwrap().push(note.into());
    }

    fn notes(&self) -> Vec<String> {
        self.notes.lock().unwrap().clone()
    }

    fn queued(&self, ops: &TurnOps) {
        self.most_queued.fetch_max(ops.queued(), Ordering::SeqCst);
    }
}

/// A turn runner like the bindings': the "host" is a thread of its own running `script`.
struct HostThread {
    script: Script,
    seen: Arc<Seen>,
    /// The sessions' config options.
    options: Vec<SessionConfigOption>,
}

#[async_trait]
impl TurnRunner for HostThread {
    fn config_options(&self) -> Vec<SessionConfigOption> {
        self.options.clone()
    }

    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error> {
        let (ops, queue) = ops::channel();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (script, seen) = (self.script.clone(), self.seen.clone());
        std::thread::spawn(move || {
            let _ = tx.send(script(ops, &seen));
        });
        queue.apply_until(turn, async { rx.await.map_err(|_| Error::internal_msg("the host thread died")) }).await
    }
}

async fn start(script: Script) -> (TestClient, String, Arc<Seen>) {
    start_with(script, json!({}), Vec::new()).await
}

/// Like [`start`], the client advertising `capabilities` and the host offering `options`.
async fn start_with(
    script: Script,
    capabilities: Value,
    options: Vec<SessionConfigOption>,
) -> (TestClient, String, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let host = HostThread { script, seen: seen.clone(), options };
    let runner = Runner::new(Arc::new(MemoryStore::new()), Arc::new(host));
    let mut client = TestClient::start_agent(runner.agent(runner.options()));
    client.initialize_with(capabilities).await;
    let sid = client.new_session().await;
    (client, sid, seen)
}

fn stop_reason(response: &Value) -> &str {
    response.pointer("/result/stopReason").and_then(Value::as_str).unwrap_or_else(|| panic!("not a result: {response}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_are_applied_in_push_order_and_answered() {
    let script: Script = Arc::new(|ops, seen| {
        let _ = ops.push(TurnOp::Text("a ".into())).unwrap();
        let (reply, call) = Reply::channel();
        let _ = ops.push(TurnOp::StartToolCall {
            title: "Read".into(),
            kind: ToolKind::Read,
            input: Box::new(json!({})),
            reply,
        });
        let call = block_on(call).unwrap();
        seen.note(format!("call {call}"));
        let progress =
            TurnOp::ToolProgress { call_id: call.clone(), status: Some(ToolCallStatus::InProgress), content: None };
        let _ = ops.push(progress).unwrap();
        let (reply, permission) = Reply::channel();
        let controls = vec![ApprovalAction::Approve, ApprovalAction::Deny];
        let _ = ops.push(TurnOp::RequestPermission { call_id: call.clone(), title: "Read?".into(), controls, reply });
        let permission = block_on(permission).unwrap();
        seen.note(permission.as_str());
        let _ = ops.push(TurnOp::CompleteToolCall { call_id: call, output: vec![text_block("contents")] }).unwrap();
        let _ = ops.push(TurnOp::Thought("hmm".into())).unwrap();
        let (done, applied) = Reply::channel();
        let _ = ops.push_then(TurnOp::Usage { used: 10, size: 100 }, done).unwrap();
        block_on(applied).unwrap();
        seen.note("usage applied");
        let _ = ops.push(TurnOp::Text("b".into())).unwrap();
        let _ = ops.push(TurnOp::EndStep).unwrap();
        StopReason::EndTurn
    });
    let (mut client, sid, seen) = start(script).await;
    let id = client.prompt(&sid, "go").await;
    let request =
        client.wait_for(|m| m.get("method").and_then(Value::as_str) == Some("session/request_permission")).await;
    client.respond(&request["id"], json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}})).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    let all = updates(&client.transcript);
    let kinds: Vec<&str> = all.iter().map(|u| u["sessionUpdate"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "agent_message_chunk",
            "tool_call",
            "tool_call_update",
            "tool_call_update",
            "agent_thought_chunk",
            "usage_update",
            "agent_message_chunk"
        ]
    );
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["a ", "b"]);
    let notes = seen.notes();
    assert!(notes[0].starts_with("call ") && notes[0].ends_with("-call1"), "{notes:?}");
    assert_eq!(notes[1..], ["allowed", "usage applied"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_after_the_end_are_refused_and_unapplied_replies_answer_turn_ended() {
    let script: Script = Arc::new(|ops, seen| {
        let _ = ops.push(TurnOp::Text("last words".into())).unwrap();
        *seen.kept.lock().unwrap() = Some(ops);
        StopReason::EndTurn
    });
    let (mut client, sid, seen) = start(script).await;
    let id = client.prompt(&sid, "go").await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["last words"], "pushed before the end: applied");

    let ops = seen.kept.lock().unwrap().take().unwrap();
    assert_eq!(ops.push(TurnOp::Text("too late".into())), Err(Refused::Closed));
    let (reply, answer) = Reply::channel();
    let refused = ops.push(TurnOp::AskUser { question: "still there?".into(), reply });
    assert_eq!(refused, Err(Refused::Closed));
    assert_eq!(answer.await, Err(TurnEnded), "a refused operation's reply is answered, not left hanging");
    ops.drained().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_awaits_the_pace_never_queues_more_than_the_soft_mark() {
    const CHUNKS: usize = 20 * HIGH_WATER;
    let script: Script = Arc::new(|ops, seen| {
        for n in 0..CHUNKS {
            let pace = ops.push(TurnOp::Text(format!("{n} "))).unwrap();
            seen.queued(&ops);
            if pace == Pace::Wait {
                block_on(ops.drained());
            }
        }
        StopReason::EndTurn
    });
    let (mut client, sid, seen) = start(script).await;
    let id = client.prompt(&sid, "go").await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    let expected: Vec<String> = (0..CHUNKS).map(|n| format!("{n} ")).collect();
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), expected);
    let most = seen.most_queued.load(Ordering::SeqCst);
    assert!(most <= HIGH_WATER + 1, "{most} operations were queued");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_never_awaits_is_refused_at_the_hard_limit_and_loses_nothing() {
    let script: Script = Arc::new(|ops, seen| {
        let mut n = 0usize;
        let refusal = loop {
            match ops.push(TurnOp::Text(format!("{n} "))) {
                Ok(_) => n += 1,
                Err(refused) => break refused,
            }
            seen.queued(&ops);
            assert!(n < 100 * HARD_LIMIT, "never refused");
        };
        seen.accepted.store(n, Ordering::SeqCst);
        seen.note(refusal.to_string());
        // Refused when exactly the hard limit was queued (the one producer raised the count to it).
        assert_eq!(refusal, Refused::Full(HARD_LIMIT));
        seen.queued(&ops);
        seen.reached.notify_one();
        // Back-pressure honoured from here on: the turn goes on once the client reads.
        block_on(ops.drained());
        let _ = ops.push(TurnOp::Text("end".into())).unwrap();
        StopReason::EndTurn
    });
    let (mut client, sid, seen) = start(script).await;
    let id = client.prompt(&sid, "go").await;
    // The client reads nothing until the host was refused.
    tokio::time::timeout(common::STEP, seen.reached.notified()).await.expect("the host was never refused");
    let most = seen.most_queued.load(Ordering::SeqCst);
    assert!(most <= HARD_LIMIT, "the queue held {most} operations, more than its hard limit");
    assert!(most > HIGH_WATER, "the host really ignored the soft mark ({most} queued at most)");
    assert!(seen.notes()[0].contains("await what each call returns"), "{:?}", seen.notes());

    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    let accepted = seen.accepted.load(Ordering::SeqCst);
    let mut expected: Vec<String> = (0..accepted).map(|n| format!("{n} ")).collect();
    expected.push("end".into());
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), expected, "every accepted operation, in order");
}

/// How many calls the client-call test keeps in flight at once.
const IN_FLIGHT: usize = 64;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_calls_go_out_after_what_came_before_and_many_are_in_flight_at_once() {
    let script: Script = Arc::new(|ops, seen| {
        let _ = ops.push(TurnOp::Text("reading ".into())).unwrap();
        let answers: Vec<_> = (0..IN_FLIGHT)
            .map(|n| {
                let (reply, answer) = Reply::channel();
                let request = Box::new((std::path::PathBuf::from(format!("/work/{n}.txt")), None, None));
                let _ = ops.push(TurnOp::ReadTextFile { request, reply }).unwrap();
                answer
            })
            .collect();
        let contents: Vec<String> = answers.into_iter().map(|answer| block_on(answer).unwrap().unwrap()).collect();
        seen.note(contents.join(","));
        let (reply, answer) = Reply::channel();
        let request = Box::new((std::path::PathBuf::from("relative.txt"), None, None));
        let _ = ops.push(TurnOp::ReadTextFile { request, reply }).unwrap();
        seen.note(block_on(answer).unwrap().unwrap_err().kind());
        let _ = ops.push(TurnOp::Text("done".into())).unwrap();
        StopReason::EndTurn
    });
    let (mut client, sid, seen) = start_with(script, json!({"fs": {"readTextFile": true}}), Vec::new()).await;
    let id = client.prompt(&sid, "go").await;
    // Every read arrives before any is answered: they are in flight together.
    let mut reads = Vec::new();
    for _ in 0..IN_FLIGHT {
        reads.push(client.wait_for(|m| m["method"] == "fs/read_text_file").await);
    }
    let text = client.transcript.iter().position(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk");
    let first_read = client.transcript.iter().position(|m| m["method"] == "fs/read_text_file");
    assert!(text.unwrap() < first_read.unwrap(), "the text before the reads went out first");
    for read in &reads {
        let path = read["params"]["path"].as_str().unwrap().to_owned();
        client.respond(&read["id"], json!({"content": path})).await;
    }
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    assert!(before.iter().all(|m| m["method"] != "fs/read_text_file"), "the relative path was never sent");
    let notes = seen.notes();
    let expected: Vec<String> = (0..IN_FLIGHT).map(|n| format!("/work/{n}.txt")).collect();
    assert_eq!(notes, [expected.join(","), "relative_path".to_owned()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_driven_through_the_queue_is_killed_and_released_once_when_the_turn_is_cancelled() {
    let script: Script = Arc::new(|ops, seen| {
        let (reply, answer) = Reply::channel();
        let request = Box::new(ops::TerminalRequest {
            command: "sleep".into(),
            args: vec!["30".into()],
            env: Vec::new(),
            cwd: None,
            output_byte_limit: None,
        });
        let _ = ops.push(TurnOp::CreateTerminal { request, reply }).unwrap();
        let terminal = Arc::new(block_on(answer).unwrap().unwrap());
        let (reply, answer) = Reply::channel();
        let call = ops::TerminalCall::WaitForExit(reply);
        let _ = ops.push(TurnOp::Terminal { terminal: terminal.clone(), call }).unwrap();
        seen.reached.notify_one();
        let waited = block_on(answer).unwrap();
        seen.note(waited.unwrap_err().kind());
        seen.note(format!("released {}", terminal.is_released()));
        // Released once: a release of its own now sends nothing.
        let (reply, answer) = Reply::channel();
        let pushed = ops.push(TurnOp::Terminal { terminal, call: ops::TerminalCall::Release(reply) });
        if pushed.is_ok() {
            seen.note(format!("release {:?}", block_on(answer).unwrap()));
        }
        StopReason::Cancelled
    });
    let (mut client, sid, seen) = start_with(script, json!({"terminal": true}), Vec::new()).await;
    let id = client.prompt(&sid, "go").await;
    let create = client.wait_for(|m| m["method"] == "terminal/create").await;
    client.respond(&create["id"], json!({"terminalId": "term-1"})).await;
    let _wait = client.wait_for(|m| m["method"] == "terminal/wait_for_exit").await;
    tokio::time::timeout(common::STEP, seen.reached.notified()).await.expect("the wait was never pushed");
    client.notify("session/cancel", json!({"sessionId": sid})).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(stop_reason(&response), "cancelled");
    let calls: Vec<&str> =
        before.iter().filter_map(|m| m["method"].as_str()).filter(|m| *m != "session/update").collect();
    assert_eq!(calls, ["$/cancel_request", "terminal/kill", "terminal/release"], "{before:#?}");
    assert_eq!(seen.notes()[..2], ["cancelled".to_owned(), "released true".to_owned()]);
}

/// A reply's answer, waited for on the host thread.
fn answered<T: Send + 'static>(ops: &TurnOps, make: impl FnOnce(Reply<T>) -> TurnOp) -> T {
    let (reply, answer) = Reply::channel();
    let _ = ops.push(make(reply)).unwrap();
    block_on(answer).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rich_operations_reach_the_wire_in_order_and_changes_answer_their_outcome() {
    let script: Script = Arc::new(|ops, seen| {
        let entry = PlanEntry::new("step 1", PlanEntryPriority::High, PlanEntryStatus::InProgress);
        let _ = ops.push(TurnOp::Plan(Box::new(Plan::new(vec![entry])))).unwrap();
        let meta: Meta = serde_json::from_value(json!({"traceparent": "00-1-2-01"})).unwrap();
        let _ = ops.push(TurnOp::ResponseMeta(Box::new(meta))).unwrap();
        let changed = answered(&ops, |reply| TurnOp::SetMode { mode_id: "code".into(), reply });
        seen.note(format!("mode {changed:?}"));
        let unknown = answered(&ops, |reply| TurnOp::SetMode { mode_id: "yolo".into(), reply });
        seen.note(format!("unknown {}", unknown.map_err(|e| i32::from(e.code)).unwrap_err()));
        let state =
            answered(&ops, |reply| TurnOp::SetConfigOption { config_id: "mode".into(), value: "ask".into(), reply });
        seen.note(format!("options {}", state.unwrap().len()));
        let commands = vec![AvailableCommand::new("shout", "Repeat in capitals")];
        let set = answered(&ops, |reply| TurnOp::SetCommands { commands, reply });
        seen.note(format!("commands {set:?}"));
        let cost = Box::new(Cost::new(0.25, "EUR"));
        let _ = ops.push(TurnOp::UsageWithCost { used: 10, size: 100, cost }).unwrap();
        StopReason::EndTurn
    });
    let mode = SessionConfigOption::select(
        "mode",
        "Mode",
        "ask",
        vec![SessionConfigSelectOption::new("ask", "Ask"), SessionConfigSelectOption::new("code", "Code")],
    );
    let (mut client, sid, seen) = start_with(script, json!({}), vec![mode]).await;
    let id = client.prompt(&sid, "go").await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"], json!({"stopReason": "end_turn", "_meta": {"traceparent": "00-1-2-01"}}));
    let ups = updates(&before);
    let kinds: Vec<&str> = ups.iter().map(|u| u["sessionUpdate"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "plan",
            "current_mode_update",
            "config_option_update",
            "current_mode_update",
            "config_option_update",
            "available_commands_update",
            "usage_update"
        ]
    );
    assert_eq!(ups[0]["entries"], json!([{"content": "step 1", "priority": "high", "status": "in_progress"}]));
    assert_eq!(ups[1]["currentModeId"], "code");
    assert_eq!(ups[5]["availableCommands"], json!([{"name": "shout", "description": "Repeat in capitals"}]));
    assert_eq!(ups[6]["cost"], json!({"amount": 0.25, "currency": "EUR"}));
    assert_eq!(seen.notes(), ["mode Ok(())", "unknown -32602", "options 1", "commands Ok(())"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_with_every_field_go_through_the_queue_from_their_wire_form() {
    let script: Script = Arc::new(|ops, seen| {
        let fields = |value: Value| serde_json::from_value::<ToolCallFields>(value).unwrap();
        let spec = fields(json!({
            "title": "edit a.rs", "kind": "edit", "status": "in_progress",
            "locations": [{"path": "/w/a.rs", "line": 1}],
            "content": [{"type": "text", "text": "bare"}, {"type": "diff", "path": "/w/a.rs", "oldText": "old\n", "newText": "new\n"}],
            "rawInput": {"path": "a.rs"},
        }))
        .into_spec()
        .unwrap();
        let call = answered(&ops, |reply| TurnOp::StartTool { spec: Box::new(spec), reply });
        seen.note(format!("call {call}"));
        let update = fields(json!({"title": "edit b.rs", "locations": [{"path": "/w/b.rs"}]})).into_update();
        let _ = ops.push(TurnOp::UpdateTool { call_id: call.clone(), fields: Box::new(update) }).unwrap();
        let done = fields(json!({"status": "completed", "rawOutput": {"ok": true}})).into_update();
        let _ = ops.push(TurnOp::UpdateTool { call_id: call, fields: Box::new(done) }).unwrap();
        for (bad, why) in [
            (json!({"kind": "edti"}), "unknown tool kind `edti`"),
            (json!({"colour": "red"}), "unknown field `colour`"),
            (json!({"locations": [{"line": 1}]}), "missing field `path`"),
        ] {
            let error = serde_json::from_value::<ToolCallFields>(bad).unwrap_err().to_string();
            seen.note(if error.contains(why) { why.to_owned() } else { error });
        }
        seen.note(fields(json!({"kind": "edit"})).into_spec().unwrap_err());
        StopReason::EndTurn
    });
    let (mut client, sid, seen) = start(script).await;
    let id = client.prompt(&sid, "go").await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    let ups = updates(&before);
    let call_id = ups[0]["toolCallId"].clone();
    assert_eq!(
        ups,
        [
            json!({
                "sessionUpdate": "tool_call", "toolCallId": call_id, "title": "edit a.rs", "kind": "edit",
                "status": "in_progress", "locations": [{"path": "/w/a.rs", "line": 1}],
                "content": [
                    {"type": "content", "content": {"type": "text", "text": "bare"}},
                    {"type": "diff", "path": "/w/a.rs", "oldText": "old\n", "newText": "new\n"},
                ],
                "rawInput": {"path": "a.rs"},
            }),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "title": "edit b.rs", "locations": [{"path": "/w/b.rs"}]}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed", "rawOutput": {"ok": true}}),
        ]
    );
    assert_eq!(
        seen.notes()[1..],
        ["unknown tool kind `edti`", "unknown field `colour`", "missing field `path`", "a tool call needs a `title`"]
    );
}

/// `Permission` names, as both bindings hand them out.
#[test]
fn permissions_have_their_binding_names() {
    let names: Vec<&str> = [Permission::Allowed, Permission::AllowedAlways, Permission::Denied, Permission::Cancelled]
        .map(Permission::as_str)
        .into();
    assert_eq!(names, ["allowed", "allowed_always", "denied", "cancelled"]);
}
