//! Stress and faults, with bounded sizes (the whole file runs in seconds in a debug build):
//!
//! - 1,000 sessions on one connection, each following its own random plan of prompts, permission
//!   answers, cancels (`session/cancel` and `$/cancel_request`), mode changes, closes, deletes and
//!   resumes, all interleaved;
//! - 10,000 randomly timed cancels of streaming prompts;
//! - the client vanishing mid-turn (EOF with work in flight, and the whole pipe dropped);
//! - a host that fails, then panics, in each of its callbacks in turn.
//!
//! Invariants checked throughout: nothing hangs (every read has a deadline), every request gets
//! exactly one response, no `session/update` reaches a session that has nothing in flight and none
//! of a turn arrives after its prompt's response, every session's shutdown hook runs exactly once,
//! `serve` returns `Ok`. Randomness comes from fixed seeds, so a failure replays.
//! (`stress_lifecycle.rs` covers the 200-session hang-up with scripted gates; this file does not
//! repeat it.)

use crate::common;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use acp_facade::Agent;
use acp_facade::error::Error;
use common::chaos::{Callback, ChaosHost, Fault, turn_of};
use common::schema;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, WriteHalf};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How long any one read may wait: a hang guard, not a timing check.
const STEP: Duration = Duration::from_secs(20);

/// A small deterministic generator (splitmix64): a failure replays with the same seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).expect("below n")
    }
}

/// A lean client: raw JSON-RPC over an in-memory pipe, every message parsed, one in 32 validated
/// against the schema (all of them are validated by the other suites; here volume matters).
struct Wire {
    writer: WriteHalf<DuplexStream>,
    incoming: mpsc::UnboundedReceiver<Value>,
    serve: JoinHandle<std::io::Result<()>>,
    reader: JoinHandle<()>,
    next_id: i64,
    sent: HashMap<String, String>,
    agent_requests: HashMap<String, String>,
    received: usize,
    outbox: Vec<u8>,
}

impl Wire {
    fn start(agent: Agent) -> Self {
        let (client_side, agent_side) = tokio::io::duplex(1 << 20);
        let (agent_read, agent_write) = tokio::io::split(agent_side);
        let serve = tokio::spawn(async move { agent.serve(agent_read, agent_write).await });
        let (read, writer) = tokio::io::split(client_side);
        let (tx, incoming) = mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let value: Value =
                    serde_json::from_str(&line).unwrap_or_else(|e| panic!("the agent sent non-JSON {line:?}: {e}"));
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        Self {
            writer,
            incoming,
            serve,
            reader,
            next_id: 1,
            sent: HashMap::new(),
            agent_requests: HashMap::new(),
            received: 0,
            outbox: Vec::new(),
        }
    }

    fn queue(&mut self, message: &Value) {
        serde_json::to_writer(&mut self.outbox, message).expect("serialise");
        self.outbox.push(b'\n');
    }

    /// Writes everything queued.
    async fn flush(&mut self) {
        if !self.outbox.is_empty() {
            let out = std::mem::take(&mut self.outbox);
            self.writer.write_all(&out).await.expect("write to the agent");
        }
    }

    fn request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.sent.insert(id.to_string(), method.to_owned());
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        message["params"] = params;
        self.queue(&message);
        id
    }

    fn notify(&mut self, method: &str, params: Value) {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        message["params"] = params;
        self.queue(&message);
    }

    fn respond(&mut self, id: &Value, result: Value) {
        let mut message = json!({"jsonrpc": "2.0", "id": id});
        message["result"] = result;
        self.queue(&message);
    }

    /// The next message (after writing everything queued), or a panic after [`STEP`].
    async fn next(&mut self) -> Value {
        self.flush().await;
        let message = tokio::time::timeout(STEP, self.incoming.recv())
            .await
            .expect("hang: no message from the agent")
            .expect("the agent closed the connection");
        self.received += 1;
        if self.received.is_multiple_of(32) {
            schema::validate_agent_message(&message, &self.sent, &mut self.agent_requests);
        }
        message
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        loop {
            let message = self.next().await;
            if response_id(&message) == Some(id) {
                return message;
            }
        }
    }

    /// EOF for the agent; returns every message still to come and what `serve` returned.
    async fn hang_up(mut self) -> (Vec<Value>, std::io::Result<()>) {
        self.flush().await;
        self.writer.shutdown().await.expect("shutdown");
        let mut rest = Vec::new();
        while let Some(message) =
            tokio::time::timeout(STEP, self.incoming.recv()).await.expect("hang: the agent did not finish")
        {
            rest.push(message);
        }
        let served =
            tokio::time::timeout(STEP, self.serve).await.expect("hang: serve did not return").expect("serve task");
        (rest, served)
    }
}

fn response_id(message: &Value) -> Option<i64> {
    if message.get("method").is_some() {
        return None;
    }
    message.get("id").and_then(Value::as_i64)
}

fn session_of(message: &Value) -> Option<&str> {
    message.pointer("/params/sessionId").and_then(Value::as_str)
}

fn is_update(message: &Value) -> bool {
    message.get("method").and_then(Value::as_str) == Some("session/update")
}

fn is_permission_request(message: &Value) -> bool {
    message.get("method").and_then(Value::as_str) == Some("session/request_permission") && message.get("id").is_some()
}

fn stop_reason(response: &Value) -> &str {
    response
        .pointer("/result/stopReason")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("not a prompt result: {response}"))
}

fn error_code(response: &Value) -> i64 {
    response.pointer("/error/code").and_then(Value::as_i64).unwrap_or_else(|| panic!("not an error: {response}"))
}

/// Per-session bookkeeping for "no update after its prompt's response".
#[derive(Default)]
struct Turns {
    /// Turns whose prompt was answered.
    done: HashSet<String>,
    /// Turns seen during the prompt in flight.
    current: HashSet<String>,
}

impl Turns {
    /// Records an update; fails when it belongs to an answered prompt.
    fn update(&mut self, message: &Value) -> Result<(), String> {
        if let Some(turn) = turn_of(message) {
            if self.done.contains(&turn) {
                return Err(format!("an update of turn {turn} after its prompt's response: {message}"));
            }
            self.current.insert(turn);
        }
        Ok(())
    }

    fn answered(&mut self) {
        self.done.extend(self.current.drain());
    }
}

fn agent(host: &Arc<ChaosHost>) -> Agent {
    Agent::new(host.options())
}

fn assert_every_session_shut_down_once(host: &ChaosHost) {
    let anomalies = host.shutdown_anomalies();
    assert!(anomalies.is_empty(), "sessions not shut down exactly once: {anomalies:?}");
}

// ---- 1,000 sessions ------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cancel {
    Notification,
    Request,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `stream N`, answered `end_turn`.
    Stream(usize),
    /// The full scripted turn (thought, chunks, tool call, usage, title), `end_turn`.
    Plain,
    /// `wait`, cancelled on its first update: `cancelled`.
    Wait(Cancel),
    /// `stream 5`, cancelled on its first update: `cancelled`, or `end_turn` when the stream won.
    StreamCancelled(Cancel),
    /// `gate`, its permission request answered with this option (or `cancelled`).
    Gate(&'static str),
    /// `/compact`: `end_turn`.
    Compact,
    /// `session/set_mode`: `{}`.
    SetMode(&'static str),
    /// `session/delete` of the live session: `-32600`.
    DeleteLive,
    /// `session/close`: `{}`.
    Close,
    /// `session/delete` of the closed session: `{}`.
    Delete,
    /// `session/resume` of the closed session: live again.
    Resume,
    /// `session/resume` of the deleted session: `-32002`.
    ResumeDeleted,
}

/// A random plan for one session: only operations valid in the state the plan has reached.
fn plan(rng: &mut Rng) -> Vec<Op> {
    let mut ops = Vec::new();
    let (mut live, mut deleted) = (true, false);
    let cancel = |rng: &mut Rng| if rng.below(2) == 0 { Cancel::Notification } else { Cancel::Request };
    for _ in 0..2 + rng.below(5) {
        let op = if live {
            match rng.below(20) {
                0..=3 => Op::Stream(1 + rng.below(4)),
                4 => Op::Plain,
                5 | 6 => Op::Wait(cancel(rng)),
                7 | 8 => Op::StreamCancelled(cancel(rng)),
                9..=12 => Op::Gate(["allow_once", "allow_always", "reject_once", "cancelled"][rng.below(4)]),
                13 => Op::Compact,
                14 => Op::SetMode(["code", "ask"][rng.below(2)]),
                15 => Op::DeleteLive,
                _ => Op::Close,
            }
        } else if deleted {
            Op::ResumeDeleted
        } else if rng.below(2) == 0 {
            Op::Resume
        } else {
            Op::Delete
        };
        match op {
            Op::Close => live = false,
            Op::Resume => live = true,
            Op::Delete => deleted = true,
            _ => {}
        }
        ops.push(op);
        if op == Op::ResumeDeleted {
            break;
        }
    }
    ops
}

struct Session {
    id: String,
    plan: VecDeque<Op>,
    /// The operation in flight and its request id.
    doing: Option<(Op, i64)>,
    /// Whether its cancel was sent.
    cancelled: bool,
    turns: Turns,
    /// What happened to it, for failure messages.
    log: Vec<String>,
}

fn start_next(wire: &mut Wire, session: &mut Session) -> bool {
    let Some(op) = session.plan.pop_front() else { return false };
    let sid = session.id.clone();
    let prompt = |text: &str| json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]});
    let id = match op {
        Op::Stream(n) => wire.request("session/prompt", prompt(&format!("stream {n}"))),
        Op::Plain => wire.request("session/prompt", prompt("hello world")),
        Op::Wait(_) => wire.request("session/prompt", prompt("wait")),
        Op::StreamCancelled(_) => wire.request("session/prompt", prompt("stream 5")),
        Op::Gate(_) => wire.request("session/prompt", prompt("gate")),
        Op::Compact => wire.request("session/prompt", prompt("/compact")),
        Op::SetMode(mode) => wire.request("session/set_mode", json!({"sessionId": sid, "modeId": mode})),
        Op::DeleteLive | Op::Delete => wire.request("session/delete", json!({"sessionId": sid})),
        Op::Close => wire.request("session/close", json!({"sessionId": sid})),
        Op::Resume | Op::ResumeDeleted => {
            wire.request("session/resume", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []}))
        }
    };
    session.doing = Some((op, id));
    session.cancelled = false;
    session.log.push(format!("-> {id} {op:?}"));
    true
}

fn check_outcome(op: Op, response: &Value, sid: &str) {
    let context = format!("{sid} {op:?}: {response}");
    match op {
        Op::Wait(_) => assert_eq!(stop_reason(response), "cancelled", "{context}"),
        // The cancel is sent on the first update; the stream may end before it is read.
        Op::StreamCancelled(_) | Op::Gate("cancelled") => {
            assert!(matches!(stop_reason(response), "end_turn" | "cancelled"), "{context}");
        }
        Op::Stream(_) | Op::Plain | Op::Compact | Op::Gate(_) => {
            assert_eq!(stop_reason(response), "end_turn", "{context}");
        }
        Op::SetMode(_) | Op::Close | Op::Delete => assert_eq!(response["result"], json!({}), "{context}"),
        Op::Resume => assert!(response.get("result").is_some(), "{context}"),
        Op::DeleteLive => assert_eq!(error_code(response), -32600, "{context}"),
        Op::ResumeDeleted => assert_eq!(error_code(response), -32002, "{context}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
async fn a_thousand_sessions_interleave_prompts_permissions_cancels_closes_and_deletes() {
    const SESSIONS: usize = 1_000;
    let host = ChaosHost::new();
    let agent = agent(&host);
    let mut wire = Wire::start(agent.clone());
    let init = wire.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await;
    assert!(init.get("result").is_some(), "{init}");

    let creating: Vec<i64> =
        (0..SESSIONS).map(|_| wire.request("session/new", json!({"cwd": "/tmp", "mcpServers": []}))).collect();
    let mut ids: HashMap<i64, String> = HashMap::new();
    while ids.len() < SESSIONS {
        let message = wire.next().await;
        let id = response_id(&message).expect("only session/new responses yet");
        let sid = message.pointer("/result/sessionId").and_then(Value::as_str).unwrap_or_else(|| panic!("{message}"));
        assert!(ids.insert(id, sid.to_owned()).is_none(), "answered twice: {message}");
    }
    let mut rng = Rng(0x5EED_1000);
    let mut sessions: Vec<Session> = creating
        .iter()
        .map(|id| Session {
            id: ids[id].clone(),
            plan: plan(&mut rng).into(),
            doing: None,
            cancelled: false,
            turns: Turns::default(),
            log: Vec::new(),
        })
        .collect();
    let index: HashMap<String, usize> = sessions.iter().enumerate().map(|(i, s)| (s.id.clone(), i)).collect();
    let mut in_flight: HashMap<i64, usize> = HashMap::new();
    for (i, session) in sessions.iter_mut().enumerate() {
        if start_next(&mut wire, session) {
            in_flight.insert(session.doing.expect("started").1, i);
        }
    }
    let mut answered: HashSet<i64> = HashSet::new();
    let mut counts: HashMap<&'static str, usize> = HashMap::new();
    while !in_flight.is_empty() {
        let message = wire.next().await;
        if let Some(id) = response_id(&message) {
            assert!(answered.insert(id), "request {id} answered twice: {message}");
            let i = in_flight.remove(&id).unwrap_or_else(|| panic!("a response to no request in flight: {message}"));
            let session = &mut sessions[i];
            session.log.push(format!("<- {message}"));
            let (op, _) = session.doing.take().expect("an operation in flight");
            check_outcome(op, &message, &session.id);
            *counts.entry(op_name(op)).or_default() += 1;
            session.turns.answered();
            if start_next(&mut wire, session) {
                in_flight.insert(session.doing.expect("started").1, i);
            }
            continue;
        }
        let sid = session_of(&message).unwrap_or_else(|| panic!("no session in {message}")).to_owned();
        let session = &mut sessions[index[&sid]];
        session.log.push(format!("<- {message}"));
        let Some((op, request)) = session.doing else {
            panic!("a message for {sid}, which has nothing in flight: {message}\n{}", session.log.join("\n"));
        };
        if is_permission_request(&message) {
            let Op::Gate(answer) = op else { panic!("a permission request during {op:?}: {message}") };
            let outcome = if answer == "cancelled" {
                json!({"outcome": "cancelled"})
            } else {
                json!({"outcome": "selected", "optionId": answer})
            };
            wire.respond(&message["id"], json!({ "outcome": outcome }));
        } else if is_update(&message) {
            if let Err(e) = session.turns.update(&message) {
                panic!("{e}\n{}", session.log.join("\n"));
            }
            match op {
                Op::Wait(how) | Op::StreamCancelled(how) if !session.cancelled => {
                    session.cancelled = true;
                    match how {
                        Cancel::Notification => wire.notify("session/cancel", json!({"sessionId": sid})),
                        Cancel::Request => wire.notify("$/cancel_request", json!({"requestId": request})),
                    }
                }
                _ => {}
            }
        } else {
            panic!("unexpected message: {message}");
        }
    }
    // Every kind of operation really ran.
    for name in [
        "stream",
        "plain",
        "wait",
        "stream-cancelled",
        "gate",
        "compact",
        "set_mode",
        "delete-live",
        "close",
        "delete",
        "resume",
        "resume-deleted",
    ] {
        assert!(counts.get(name).copied().unwrap_or(0) > 0, "no {name} in {counts:?}");
    }

    let (rest, served) = wire.hang_up().await;
    served.expect("serve returns Ok");
    assert!(rest.is_empty(), "nothing was in flight: {rest:?}");
    assert_eq!(agent.live_sessions(), 0);
    assert!(host.all_sessions().len() > SESSIONS, "resumed sessions are new session objects");
    assert_every_session_shut_down_once(&host);
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Stream(_) => "stream",
        Op::Plain => "plain",
        Op::Wait(_) => "wait",
        Op::StreamCancelled(_) => "stream-cancelled",
        Op::Gate(_) => "gate",
        Op::Compact => "compact",
        Op::SetMode(_) => "set_mode",
        Op::DeleteLive => "delete-live",
        Op::Close => "close",
        Op::Delete => "delete",
        Op::Resume => "resume",
        Op::ResumeDeleted => "resume-deleted",
    }
}

// ---- 10,000 randomly timed cancels ---------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Timing {
    /// Right behind the prompt: it must end `cancelled`.
    Immediately,
    /// On the prompt's n-th update (late when the prompt ends first).
    OnUpdate(usize),
    /// After n more messages from the agent, whoever they are for.
    AfterMessages(usize),
    /// Right after the response: it must not touch this prompt, nor the next one.
    AfterResponse,
}

struct Streaming {
    id: String,
    prompts_left: usize,
    /// The prompt in flight: request id, timing, via which, updates seen, whether the cancel is out.
    prompt: Option<(i64, Timing, Cancel, usize, bool)>,
    turns: Turns,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
async fn ten_thousand_randomly_timed_cancels_each_settle_one_prompt() {
    const SESSIONS: usize = 100;
    const PROMPTS: usize = 100;
    let host = ChaosHost::new();
    let agent = agent(&host);
    let mut wire = Wire::start(agent.clone());
    wire.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await;
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        let created = wire.call("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
        let id = created.pointer("/result/sessionId").and_then(Value::as_str).expect("created").to_owned();
        sessions.push(Streaming { id, prompts_left: PROMPTS, prompt: None, turns: Turns::default() });
    }
    let index: HashMap<String, usize> = sessions.iter().enumerate().map(|(i, s)| (s.id.clone(), i)).collect();
    let mut rng = Rng(0xCA9C_E110);
    let mut by_request: HashMap<i64, usize> = HashMap::new();
    // Cancels waiting for more messages: (messages still to wait, session, request id).
    let mut delayed: Vec<(usize, usize, i64)> = Vec::new();
    let (mut cancels, mut cancelled, mut late) = (0usize, 0usize, 0usize);

    let send_cancel = |wire: &mut Wire, session: &Streaming, request: i64, how: Cancel| match how {
        Cancel::Notification => wire.notify("session/cancel", json!({"sessionId": session.id})),
        Cancel::Request => wire.notify("$/cancel_request", json!({"requestId": request})),
    };
    let start = |wire: &mut Wire,
                 rng: &mut Rng,
                 session: &mut Streaming,
                 i: usize,
                 by_request: &mut HashMap<i64, usize>,
                 delayed: &mut Vec<(usize, usize, i64)>,
                 cancels: &mut usize| {
        session.prompts_left -= 1;
        let how = if rng.below(2) == 0 { Cancel::Notification } else { Cancel::Request };
        let timing = match rng.below(8) {
            0 | 1 => Timing::Immediately,
            2..=4 => Timing::OnUpdate(1 + rng.below(3)),
            5 | 6 => Timing::AfterMessages(rng.below(40)),
            _ => Timing::AfterResponse,
        };
        // A prompt cancelled right behind its request runs until interrupted, so that "it must end
        // `cancelled`" does not depend on how fast a short turn could finish first.
        let text = match timing {
            Timing::Immediately => "wait".to_owned(),
            _ => format!("stream {}", rng.below(5)),
        };
        let request = wire
            .request("session/prompt", json!({"sessionId": session.id, "prompt": [{"type": "text", "text": text}]}));
        by_request.insert(request, i);
        let mut sent = false;
        match timing {
            Timing::Immediately => {
                send_cancel(wire, session, request, how);
                *cancels += 1;
                sent = true;
            }
            Timing::AfterMessages(n) => delayed.push((n, i, request)),
            _ => {}
        }
        session.prompt = Some((request, timing, how, 0, sent));
    };
    for (i, session) in sessions.iter_mut().enumerate() {
        start(&mut wire, &mut rng, session, i, &mut by_request, &mut delayed, &mut cancels);
    }
    let mut answered: HashSet<i64> = HashSet::new();
    while !by_request.is_empty() {
        let message = wire.next().await;
        // Delayed cancels count down on every message.
        let mut due = Vec::new();
        delayed.retain_mut(|(n, i, request)| {
            if *n == 0 {
                due.push((*i, *request));
                false
            } else {
                *n -= 1;
                true
            }
        });
        for (i, request) in due {
            let session = &mut sessions[i];
            if let Some((current, _, how, _, sent)) = session.prompt.as_mut()
                && *current == request
                && !*sent
            {
                *sent = true;
                cancels += 1;
                let how = *how;
                send_cancel(&mut wire, &sessions[i], request, how);
            }
        }
        if let Some(id) = response_id(&message) {
            assert!(answered.insert(id), "request {id} answered twice: {message}");
            let i = by_request.remove(&id).unwrap_or_else(|| panic!("a response to no prompt in flight: {message}"));
            let session = &mut sessions[i];
            let (request, timing, how, _, sent) = session.prompt.take().expect("a prompt in flight");
            assert_eq!(request, id);
            let stop = stop_reason(&message).to_owned();
            match (timing, stop.as_str()) {
                (Timing::Immediately, "cancelled") => {}
                (Timing::Immediately, other) => panic!("a prompt cancelled right away ended {other}: {message}"),
                (_, "cancelled") if !sent => panic!("a prompt ended cancelled before its cancel was sent: {message}"),
                (_, "cancelled" | "end_turn") => {}
                (_, other) => panic!("unexpected stop reason {other}: {message}"),
            }
            if stop == "cancelled" {
                cancelled += 1;
            }
            session.turns.answered();
            if !sent {
                // Late: the prompt is answered, so this cancel must change nothing.
                late += 1;
                cancels += 1;
                send_cancel(&mut wire, &sessions[i], request, how);
            }
            let session = &mut sessions[i];
            if session.prompts_left > 0 {
                start(&mut wire, &mut rng, session, i, &mut by_request, &mut delayed, &mut cancels);
            }
            continue;
        }
        assert!(is_update(&message), "only updates and responses expected: {message}");
        let sid = session_of(&message).expect("a session").to_owned();
        let i = index[&sid];
        let session = &mut sessions[i];
        if let Err(e) = session.turns.update(&message) {
            panic!("{e}");
        }
        let Some((request, timing, how, seen, sent)) = session.prompt.as_mut() else {
            panic!("an update for {sid}, which has no prompt in flight: {message}");
        };
        *seen += 1;
        if let Timing::OnUpdate(n) = timing
            && *seen == *n
            && !*sent
        {
            *sent = true;
            cancels += 1;
            let (request, how) = (*request, *how);
            send_cancel(&mut wire, &sessions[i], request, how);
        }
    }
    assert_eq!(answered.len(), SESSIONS * PROMPTS);
    assert_eq!(cancels, SESSIONS * PROMPTS, "one cancel per prompt");
    assert!(cancelled > 0 && late > 0, "cancelled {cancelled}, late {late}");

    let (rest, served) = wire.hang_up().await;
    served.expect("serve returns Ok");
    assert!(rest.iter().all(|m| !is_update(m) && response_id(m).is_none()), "nothing after the last prompt: {rest:?}");
    assert_eq!(agent.live_sessions(), 0);
    assert_every_session_shut_down_once(&host);
}

// ---- the client vanishing mid-turn ---------------------------------------------------------------

/// Puts `sessions` sessions mid-turn, each in one of the ways a turn can be busy, and returns the
/// ids of every request sent since `initialize`, with the responses already received.
async fn busy_sessions(wire: &mut Wire, sessions: usize) -> (Vec<i64>, Vec<Value>) {
    wire.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await;
    let mut sent = Vec::new();
    let mut ids = Vec::new();
    for _ in 0..sessions {
        let id = wire.request("session/new", json!({"cwd": "/tmp", "mcpServers": []}));
        sent.push(id);
        ids.push(id);
    }
    let mut early = Vec::new();
    let mut created: HashMap<i64, String> = HashMap::new();
    while created.len() < sessions {
        let message = wire.next().await;
        let id = response_id(&message).expect("only session/new responses yet");
        created.insert(id, message.pointer("/result/sessionId").and_then(Value::as_str).expect("created").to_owned());
        early.push(message);
    }
    let mut waiting_for: HashSet<String> = HashSet::new();
    for (n, id) in ids.iter().enumerate() {
        let sid = created[id].clone();
        // `wait` streams, then waits; `gate` asks for permission (left unanswered); `ask` opens a gate
        // with no ACP form; `nostart` never starts its turn; `stream` is (mostly) still streaming.
        let text =
            ["wait", "gate", "ask what", "nostart", if n % 10 == 4 { "stream 10000" } else { "stream 3" }][n % 5];
        sent.push(
            wire.request("session/prompt", json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]})),
        );
        if n % 5 < 2 {
            waiting_for.insert(sid);
        }
    }
    // Wait until the `wait` and `gate` turns are parked.
    while !waiting_for.is_empty() {
        let message = wire.next().await;
        let waiting = message
            .pointer("/params/update/content/text")
            .and_then(Value::as_str)
            .is_some_and(|t| t.starts_with("wait@"));
        if (is_update(&message) && waiting) || is_permission_request(&message) {
            waiting_for.remove(session_of(&message).expect("a session"));
        }
        if response_id(&message).is_some() {
            early.push(message);
        }
    }
    // Requests in flight besides the prompts: a mode change and a new session.
    let sid = created[&ids[0]].clone();
    sent.push(wire.request("session/set_mode", json!({"sessionId": sid, "modeId": "code"})));
    sent.push(wire.request("session/new", json!({"cwd": "/tmp", "mcpServers": []})));
    (sent, early)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_hanging_up_mid_turn_closes_every_session_once_and_answers_everything() {
    let host = ChaosHost::new();
    let agent = agent(&host);
    let mut wire = Wire::start(agent.clone());
    let (sent, early) = busy_sessions(&mut wire, 50).await;
    let (rest, served) = wire.hang_up().await;
    served.expect("serve returns Ok after a hang-up mid-turn");
    let mut answers: HashMap<i64, usize> = HashMap::new();
    for message in early.iter().chain(&rest) {
        if let Some(id) = response_id(message) {
            *answers.entry(id).or_default() += 1;
        }
    }
    for id in &sent {
        assert_eq!(answers.get(id).copied(), Some(1), "request {id}: {rest:?}");
    }
    assert_eq!(answers.len(), sent.len(), "no response to a request never sent");
    // The prompts parked in a turn were cancelled by the hang-up.
    let cancelled = rest.iter().filter(|m| m.pointer("/result/stopReason") == Some(&json!("cancelled"))).count();
    assert!(cancelled >= 40, "{cancelled} prompts cancelled: {rest:?}");
    assert_eq!(agent.live_sessions(), 0);
    assert_every_session_shut_down_once(&host);
    for session in host.all_sessions() {
        assert!(session.interrupts.load(Ordering::SeqCst) <= 1, "{} interrupted more than once", session.id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_vanishing_entirely_mid_turn_still_closes_every_session_once() {
    let host = ChaosHost::new();
    let agent = agent(&host);
    let mut wire = Wire::start(agent.clone());
    busy_sessions(&mut wire, 25).await;
    // Both directions gone at once: the agent reads EOF and can no longer write.
    wire.flush().await;
    let Wire { mut writer, incoming, serve, reader, .. } = wire;
    writer.shutdown().await.expect("shutdown");
    drop(writer);
    reader.abort();
    let _ = reader.await;
    drop(incoming);
    let served = tokio::time::timeout(STEP, serve).await.expect("hang: serve did not return").expect("serve task");
    // The transport failing (nobody reads) may be reported; what matters is that serve returns.
    if let Err(e) = &served {
        assert!(matches!(e.kind(), std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::WriteZero), "{e}");
    }
    assert_eq!(agent.live_sessions(), 0);
    assert_every_session_shut_down_once(&host);
}

// ---- faults in every host callback ---------------------------------------------------------------

/// What the client sees when `callback` fails with `fault`: the failed request's response.
async fn trigger(wire: &mut Wire, host: &ChaosHost, callback: Callback, fault: &Fault) -> Value {
    let new_session = |wire: &mut Wire| wire.request("session/new", json!({"cwd": "/tmp", "mcpServers": []}));
    let created = {
        let id = new_session(wire);
        loop {
            let message = wire.next().await;
            if response_id(&message) == Some(id) {
                break message;
            }
        }
    };
    let sid = created.pointer("/result/sessionId").and_then(Value::as_str).expect("a session to work on").to_owned();
    let prompt = |text: &str| json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]});
    host.faults.set(callback, Some(fault.clone()));
    let response = match callback {
        Callback::NewSession => {
            let id = new_session(wire);
            await_response(wire, id).await
        }
        Callback::Load => {
            let id = wire.request("session/load", json!({"sessionId": "stored-1", "cwd": "/tmp", "mcpServers": []}));
            await_response(wire, id).await
        }
        Callback::Resume => {
            let id = wire.request("session/resume", json!({"sessionId": "stored-1", "cwd": "/tmp", "mcpServers": []}));
            await_response(wire, id).await
        }
        Callback::List => {
            let id = wire.request("session/list", json!({}));
            await_response(wire, id).await
        }
        Callback::Delete => {
            let id = wire.request("session/delete", json!({"sessionId": "stored-4"}));
            await_response(wire, id).await
        }
        Callback::Submit => {
            let id = wire.request("session/prompt", prompt("hello"));
            await_response(wire, id).await
        }
        Callback::Compact => {
            let id = wire.request("session/prompt", prompt("/compact"));
            await_response(wire, id).await
        }
        Callback::Interrupt => {
            // Cancel a waiting turn: the interrupt is where the host fails.
            let id = wire.request("session/prompt", prompt("wait"));
            loop {
                let message = wire.next().await;
                if is_update(&message) && turn_of(&message).is_some() {
                    break;
                }
            }
            wire.notify("session/cancel", json!({"sessionId": sid}));
            await_response(wire, id).await
        }
        Callback::RespondGate => {
            let id = wire.request("session/prompt", prompt("gate"));
            let asked = loop {
                let message = wire.next().await;
                if is_permission_request(&message) {
                    break message;
                }
            };
            wire.respond(&asked["id"], json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}));
            if matches!(fault, Fault::Error(_)) {
                // The failed answer is the host's to handle: its turn goes on waiting, and a cancel ends it.
                wire.flush().await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                wire.notify("session/cancel", json!({"sessionId": sid}));
            }
            await_response(wire, id).await
        }
        Callback::Shutdown => {
            let id = wire.request("session/close", json!({"sessionId": sid}));
            await_response(wire, id).await
        }
        Callback::ConfigSnapshot => {
            let id = wire.request("session/set_mode", json!({"sessionId": sid, "modeId": "code"}));
            await_response(wire, id).await
        }
        Callback::ConfigSet => {
            let id = wire
                .request("session/set_config_option", json!({"sessionId": sid, "configId": "model", "value": "smart"}));
            await_response(wire, id).await
        }
        Callback::Authenticate => {
            let id = wire.request("authenticate", json!({"methodId": "token"}));
            await_response(wire, id).await
        }
    };
    host.faults.clear();
    response
}

async fn await_response(wire: &mut Wire, id: i64) -> Value {
    loop {
        let message = wire.next().await;
        if response_id(&message) == Some(id) {
            return message;
        }
    }
}

/// The connection still serves: a new session runs a whole prompt.
async fn assert_serving(wire: &mut Wire) {
    let created = wire.call("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    let sid =
        created.pointer("/result/sessionId").and_then(Value::as_str).unwrap_or_else(|| panic!("{created}")).to_owned();
    let done =
        wire.call("session/prompt", json!({"sessionId": sid, "prompt": [{"type": "text", "text": "stream 2"}]})).await;
    assert_eq!(stop_reason(&done), "end_turn", "{done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_failing_or_panicking_in_each_callback_fails_only_that_request() {
    let host = ChaosHost::new();
    let agent = agent(&host);
    let mut wire = Wire::start(agent.clone());
    wire.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await;
    for callback in Callback::ALL {
        for fault in [Fault::Error(Error::new(-32042, format!("chaos: {callback:?} failed"))), Fault::Panic] {
            let calls_before = host.faults.calls(callback);
            let live_before = agent.live_sessions();
            let response = trigger(&mut wire, &host, callback, &fault).await;
            let context = format!("{callback:?} {fault:?}: {response}");
            assert!(host.faults.calls(callback) > calls_before, "the callback was not reached: {context}");
            match (callback, &fault) {
                // A failed interrupt is logged: the cancelled prompt ends `cancelled` at the grace period.
                // A failed gate answer is the host's turn's to handle: the cancel that follows ends it.
                (Callback::Interrupt | Callback::RespondGate, Fault::Error(_)) => {
                    assert_eq!(stop_reason(&response), "cancelled", "{context}");
                }
                (_, Fault::Error(_)) => {
                    assert_eq!(error_code(&response), -32042, "{context}");
                    assert_eq!(
                        response.pointer("/error/message"),
                        Some(&json!(format!("chaos: {callback:?} failed"))),
                        "{context}"
                    );
                }
                (_, Fault::Panic) => {
                    assert_eq!(error_code(&response), -32603, "{context}");
                    let message = response.pointer("/error/message").and_then(Value::as_str).unwrap_or_default();
                    assert!(message.contains("panicked on purpose"), "the panic's message is carried: {context}");
                }
            }
            // The failed request left nothing behind: no session half-created or half-closed.
            let expected_live = match callback {
                // `trigger` created a session to work on; a failed close still closes it.
                Callback::Shutdown => live_before,
                _ => live_before + 1,
            };
            assert_eq!(agent.live_sessions(), expected_live, "{context}");
            assert_serving(&mut wire).await;
        }
    }
    // Every failure was also reachable at session creation: a snapshot failing in `session/new`
    // closes the new session again.
    for fault in [Fault::Error(Error::new(-32042, "snapshot failed")), Fault::Panic] {
        let live_before = agent.live_sessions();
        host.faults.set(Callback::ConfigSnapshot, Some(fault));
        let response = wire.call("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
        host.faults.clear();
        assert!(response.get("error").is_some(), "{response}");
        assert_eq!(agent.live_sessions(), live_before, "nothing stays live: {response}");
    }
    // And at hang-up, failing and panicking shutdown hooks do not stop the others.
    host.faults.set(Callback::Shutdown, Some(Fault::Panic));
    let (rest, served) = wire.hang_up().await;
    served.expect("serve returns Ok");
    assert!(rest.iter().all(|m| response_id(m).is_none()), "nothing was in flight: {rest:?}");
    assert_eq!(agent.live_sessions(), 0);
    host.faults.clear();
    assert_every_session_shut_down_once(&host);
}
