//! The turn-operation queue ([`acp_facade::runner::ops`]) the bindings drive a turn through, used
//! the way a binding uses it: a host thread of its own (Python's or JavaScript's) pushes
//! operations synchronously while `run_turn` applies them. Checked through the wire: order,
//! answers, calls after the end, and the bounds — a host that awaits the pace never queues more
//! than the soft mark, and one that never awaits is refused at the hard limit while the client
//! reads nothing, with every accepted operation delivered once the client reads.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use acp_facade::acp::{StopReason, ToolCallStatus, ToolKind};
use acp_facade::error::{Error, ErrorExt};
use acp_facade::harness::ApprovalAction;
use acp_facade::harness::content::text_block;
use acp_facade::pace::{HARD_LIMIT, HIGH_WATER, Pace, Refused};
use acp_facade::runner::ops::{self, Reply, TurnEnded, TurnOp, TurnOps};
use acp_facade::runner::{MemoryStore, Permission, Runner, Turn, TurnRunner};
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
}

#[async_trait]
impl TurnRunner for HostThread {
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
    start_with(script, json!({})).await
}

/// Like [`start`], the client advertising `capabilities`.
async fn start_with(script: Script, capabilities: Value) -> (TestClient, String, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let runner = Runner::new(Arc::new(MemoryStore::new()), Arc::new(HostThread { script, seen: seen.clone() }));
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
    let (mut client, sid, seen) = start_with(script, json!({"fs": {"readTextFile": true}})).await;
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
    let (mut client, sid, seen) = start_with(script, json!({"terminal": true})).await;
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

/// `Permission` names, as both bindings hand them out.
#[test]
fn permissions_have_their_binding_names() {
    let names: Vec<&str> = [Permission::Allowed, Permission::AllowedAlways, Permission::Denied, Permission::Cancelled]
        .map(Permission::as_str)
        .into();
    assert_eq!(names, ["allowed", "allowed_always", "denied", "cancelled"]);
}
