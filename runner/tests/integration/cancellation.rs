//! Cancellation: `session/cancel` at every point of a turn, `$/cancel_request` for prompts (a
//! `cancelled` result) and for other requests (`-32800`), the cancel grace period, and a randomised
//! stress run checking that every prompt gets exactly one non-error response and that no update of
//! a turn follows its response.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use acp_facade::Options;
use acp_facade::acp::StopReason;
use acp_facade::harness::{CommandId, EventKind, TokenChannel};
use common::host::{ScriptedHost, ScriptedSession};
use common::{TestClient, assert_serving, chunk_texts, code, error_of};
use serde_json::{Value, json};

fn delta(text: &str) -> EventKind {
    EventKind::TokenDelta { text: text.into(), channel: TokenChannel::Message }
}

fn done(stop: Option<StopReason>) -> EventKind {
    EventKind::TurnDone { message: None, stop }
}

async fn setup(options: impl FnOnce(Options) -> Options) -> (Arc<ScriptedHost>, TestClient, String) {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(options(Options::new(host.clone()))).await;
    let session = client.new_session().await;
    (host, client, session)
}

async fn prompt(
    client: &mut TestClient,
    host: &ScriptedHost,
    session: &str,
    text: &str,
) -> (Value, Arc<ScriptedSession>, CommandId) {
    let id = client.prompt(session, text).await;
    let s = host.session(session);
    let (command, _) = s.next_submit().await;
    (id, s, command)
}

async fn cancel(client: &mut TestClient, session: &str) {
    client.notify("session/cancel", json!({"sessionId": session})).await;
}

async fn cancel_request(client: &mut TestClient, id: &Value) {
    client.notify("$/cancel_request", json!({"requestId": id})).await;
}

fn is_cancelled(response: &Value) -> bool {
    response.get("result") == Some(&json!({"stopReason": "cancelled"}))
}

// ---------------------------------------------------------------------------------------------
// session/cancel at each point of a turn
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn cancel_before_turn_started() {
    let (host, mut client, session) = setup(|o| o).await;
    let (id, s, command) = prompt(&mut client, &host, &session, "hi").await;
    cancel(&mut client, &session).await;
    s.wait_interrupts(1).await;
    // The host starts the turn late and ends it as interrupted.
    s.start_turn(&command, ("l", "t"));
    s.durable(("l", "t"), EventKind::TurnInterrupted {});
    let response = client.response(&id).await;
    assert!(is_cancelled(&response), "{response}");
    assert_eq!(s.interrupts.load(Ordering::SeqCst), 1);
    client.hang_up().await;
}

#[tokio::test]
async fn cancel_before_turn_started_with_a_host_that_finishes_anyway() {
    let (host, mut client, session) = setup(|o| o).await;
    let (id, s, command) = prompt(&mut client, &host, &session, "hi").await;
    cancel(&mut client, &session).await;
    s.wait_interrupts(1).await;
    s.start_turn(&command, ("l", "t"));
    s.live(("l", "t"), delta("late words"));
    s.durable(("l", "t"), done(Some(StopReason::MaxTokens)));
    let (response, before) = client.response_with_preceding(&id).await;
    assert!(is_cancelled(&response), "{response}");
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["late words"]);
    client.hang_up().await;
}

#[tokio::test]
async fn cancel_during_streaming() {
    let (host, mut client, session) = setup(|o| o).await;
    let (id, s, command) = prompt(&mut client, &host, &session, "hi").await;
    let at = ("l", "t");
    s.start_turn(&command, at);
    s.live(at, delta("a"));
    s.live(at, delta("b"));
    // Wait until streaming is visibly under way.
    client.wait_for(|m| m.pointer("/params/update/content/text") == Some(&json!("b"))).await;
    cancel(&mut client, &session).await;
    s.wait_interrupts(1).await;
    // Updates after the cancel but before the terminal are still delivered, before the response.
    s.live(at, delta("c"));
    s.durable(at, EventKind::TurnInterrupted {});
    s.live(at, delta("after the terminal"));
    let (response, before) = client.response_with_preceding(&id).await;
    assert!(is_cancelled(&response), "{response}");
    // `b` was consumed by the wait above; `a` and `c` precede the response.
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["a", "c"]);
    let all = chunk_texts(&client.transcript, "agent_message_chunk");
    assert_eq!(all, ["a", "b", "c"]);
    assert_serving(&mut client).await;
    assert_eq!(chunk_texts(&client.transcript, "agent_message_chunk"), ["a", "b", "c"]);
    client.hang_up().await;
}

#[tokio::test]
async fn cancel_during_streaming_with_a_host_that_fails_the_turn_is_still_cancelled() {
    let (host, mut client, session) = setup(|o| o).await;
    let (id, s, command) = prompt(&mut client, &host, &session, "hi").await;
    s.start_turn(&command, ("l", "t"));
    cancel(&mut client, &session).await;
    s.wait_interrupts(1).await;
    s.durable(("l", "t"), EventKind::TurnFailed { error: "aborted by the SDK".into() });
    let response = client.response(&id).await;
    assert!(is_cancelled(&response), "an abort must not surface as an error: {response}");
    client.hang_up().await;
}

#[tokio::test]
async fn cancel_after_turn_done_is_a_no_op() {
    for round in 0..20 {
        let (host, mut client, session) = setup(|o| o).await;
        let (id, s, command) = prompt(&mut client, &host, &session, "first").await;
        s.start_turn(&command, ("l", "t1"));
        s.durable(("l", "t1"), done(Some(StopReason::Refusal)));
        assert_eq!(client.response(&id).await["result"]["stopReason"], json!("refusal"));
        // A late cancel for the finished turn, immediately followed by the next prompt: the
        // cancel must not leak onto the new prompt.
        cancel(&mut client, &session).await;
        let (id, s, command) = prompt(&mut client, &host, &session, "second").await;
        s.start_turn(&command, ("l", "t2"));
        s.live(("l", "t2"), delta("fine"));
        s.durable(("l", "t2"), done(Some(StopReason::MaxTokens)));
        let response = client.response(&id).await;
        assert_eq!(response["result"]["stopReason"], json!("max_tokens"), "round {round}: {response}");
        assert_eq!(s.interrupts.load(Ordering::SeqCst), 0, "round {round}");
        client.hang_up().await;
    }
}

#[tokio::test]
async fn a_failing_interrupt_still_ends_the_prompt_cancelled() {
    let (host, mut client, session) = setup(|o| o.cancel_grace(Duration::from_millis(100))).await;
    let (id, s, command) = prompt(&mut client, &host, &session, "hi").await;
    s.fail_interrupt.store(true, Ordering::SeqCst);
    s.start_turn(&command, ("l", "t"));
    cancel(&mut client, &session).await;
    let response = client.response(&id).await;
    assert!(is_cancelled(&response), "{response}");
    assert_eq!(s.interrupts.load(Ordering::SeqCst), 1);
    client.hang_up().await;
}

#[tokio::test]
async fn cancel_with_no_prompt_in_flight_is_a_no_op() {
    let (host, mut client, session) = setup(|o| o).await;
    cancel(&mut client, &session).await;
    cancel(&mut client, "no-such-session").await;
    cancel(&mut client, "").await;
    client.notify("session/cancel", json!({})).await;
    client.notify("$/cancel_request", json!({"requestId": 424_242})).await;
    client.notify("$/cancel_request", json!({"requestId": "never-sent"})).await;
    client.notify("$/cancel_request", json!({})).await;
    // None of it is answered: the next message is this request's response.
    assert_serving(&mut client).await;
    let s = host.session(&session);
    assert_eq!(s.interrupts.load(Ordering::SeqCst), 0);
    // The next prompt runs to its natural end.
    let (id, s, command) = prompt(&mut client, &host, &session, "hi").await;
    s.start_turn(&command, ("l", "t"));
    s.durable(("l", "t"), done(Some(StopReason::MaxTokens)));
    assert_eq!(client.response(&id).await["result"]["stopReason"], json!("max_tokens"));
    assert_eq!(s.interrupts.load(Ordering::SeqCst), 0);
    client.hang_up().await;
}

#[tokio::test]
async fn cancelling_one_session_leaves_the_others_alone() {
    let (host, mut client, a) = setup(|o| o).await;
    let b = client.new_session().await;
    let (id_a, sa, ca) = prompt(&mut client, &host, &a, "a").await;
    let (id_b, sb, cb) = prompt(&mut client, &host, &b, "b").await;
    sa.start_turn(&ca, ("l", "t"));
    sb.start_turn(&cb, ("l", "t"));
    cancel(&mut client, &a).await;
    sa.wait_interrupts(1).await;
    sa.durable(("l", "t"), EventKind::TurnInterrupted {});
    assert!(is_cancelled(&client.response(&id_a).await));
    sb.durable(("l", "t"), done(None));
    assert_eq!(client.response(&id_b).await["result"]["stopReason"], json!("end_turn"));
    assert_eq!(sb.interrupts.load(Ordering::SeqCst), 0);
    client.hang_up().await;
}

// ---------------------------------------------------------------------------------------------
// $/cancel_request
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn cancel_request_for_a_prompt_answers_cancelled_not_an_error() {
    let (host, mut client, session) = setup(|o| o).await;
    let (id, s, command) = prompt(&mut client, &host, &session, "hi").await;
    *s.interrupt_ends.lock().unwrap() = Some(("l".into(), "t".into()));
    s.start_turn(&command, ("l", "t"));
    s.live(("l", "t"), delta("partial"));
    cancel_request(&mut client, &id).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert!(is_cancelled(&response), "{response}");
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["partial"]);
    assert_eq!(s.interrupts.load(Ordering::SeqCst), 1);
    // Exactly one response.
    assert_serving(&mut client).await;
    let answers = client.transcript.iter().filter(|m| m.get("id") == Some(&id) && m.get("method").is_none()).count();
    assert_eq!(answers, 1);
    client.hang_up().await;
}

#[tokio::test]
async fn cancel_request_names_string_and_number_ids_alike() {
    let (host, mut client, session) = setup(|o| o).await;
    let s = host.session(&session);
    for (n, id) in [json!("prompt-one"), json!(-5), json!(0), json!("")].into_iter().enumerate() {
        client
            .send_request_with_id(
                id.clone(),
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}),
            )
            .await;
        let (command, _) = s.next_submit().await;
        let at = ("l".to_owned(), format!("t{n}"));
        *s.interrupt_ends.lock().unwrap() = Some(at.clone());
        s.start_turn(&command, (&at.0, &at.1));
        cancel_request(&mut client, &id).await;
        let response = client.response(&id).await;
        assert!(is_cancelled(&response), "{id}: {response}");
    }
    client.hang_up().await;
}

#[tokio::test]
async fn cancel_request_right_behind_the_prompt_answers_cancelled() {
    let (host, mut client, session) = setup(|o| o).await;
    let s_id = session.clone();
    for n in 0..20 {
        let id = client.prompt(&s_id, "hi").await;
        cancel_request(&mut client, &id).await;
        let s = host.session(&session);
        let at = ("l".to_owned(), format!("t{n}"));
        *s.interrupt_ends.lock().unwrap() = Some(at.clone());
        // The prompt may be cancelled before or after it reaches the host.
        let response = {
            let id2 = id.clone();
            let answered = client.wait_for(move |m| common::Received(m.clone()).is_response_to(&id2));
            tokio::pin!(answered);
            let submitted = s.next_submit_or(std::future::pending());
            tokio::select! {
                response = &mut answered => response,
                submit = submitted => {
                    let (command, _) = submit.unwrap();
                    s.start_turn(&command, (&at.0, &at.1));
                    // If the interrupt came before the turn started, end the turn now.
                    s.durable((&at.0, &at.1), EventKind::TurnInterrupted {});
                    answered.await
                }
            }
        };
        assert!(is_cancelled(&response), "{response}");
    }
    client.hang_up().await;
}

#[tokio::test]
async fn cancel_request_for_a_blocking_request_is_request_cancelled() {
    let (host, mut client, _session) = setup(|o| o.max_sessions(2)).await;
    host.hold_new_session.store(true, Ordering::SeqCst);
    let id = client.send_request("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    tokio::time::timeout(common::STEP, host.new_session_entered.notified()).await.expect("host called");
    cancel_request(&mut client, &id).await;
    let response = client.response(&id).await;
    assert_eq!(code(&error_of(&response)), -32800, "{response}");
    host.hold_new_session.store(false, Ordering::SeqCst);
    // The abandoned creation released its registry slot: one more session fits, then no more.
    assert_serving(&mut client).await;
    let error = client.call_err("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    assert!(code(&error) != -32800, "{error}");
    assert_eq!(host.sessions.lock().unwrap().len(), 2);
    // Exactly one response to the cancelled request.
    let answers = client.transcript.iter().filter(|m| m.get("id") == Some(&id) && m.get("method").is_none()).count();
    assert_eq!(answers, 1);
    client.hang_up().await;
}

#[tokio::test]
async fn cancel_request_for_a_finished_request_is_ignored() {
    let (_host, mut client, _session) = setup(|o| o).await;
    let id = client.send_request("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    client.response(&id).await;
    cancel_request(&mut client, &id).await;
    assert_serving(&mut client).await;
    let answers = client.transcript.iter().filter(|m| m.get("id") == Some(&id) && m.get("method").is_none()).count();
    assert_eq!(answers, 1);
    client.hang_up().await;
}

// ---------------------------------------------------------------------------------------------
// The cancel grace period
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_turn_that_never_ends_is_answered_cancelled_after_the_grace_period() {
    let (host, mut client, session) = setup(|o| o.cancel_grace(Duration::from_millis(100))).await;
    let (id, s, command) = prompt(&mut client, &host, &session, "hi").await;
    s.start_turn(&command, ("l", "t"));
    s.live(("l", "t"), delta("before"));
    cancel(&mut client, &session).await;
    s.wait_interrupts(1).await;
    // The host ignores the interrupt and never ends the turn.
    let (response, before) = client.response_with_preceding(&id).await;
    assert!(is_cancelled(&response), "{response}");
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["before"]);
    // The stuck turn's later output is never forwarded.
    s.live(("l", "t"), delta("zombie"));
    s.durable(("l", "t"), done(None));
    // The session takes the next prompt.
    let (id, s, command) = prompt(&mut client, &host, &session, "again").await;
    s.live(("l", "t"), delta("zombie 2"));
    s.start_turn(&command, ("l", "t2"));
    s.live(("l", "t2"), delta("fresh"));
    s.durable(("l", "t2"), done(None));
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"]["stopReason"], json!("end_turn"));
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["fresh"]);
    assert!(!client.transcript.iter().any(|m| m.to_string().contains("zombie")));
    client.hang_up().await;
}

#[tokio::test]
async fn a_turn_that_never_starts_is_answered_cancelled_after_the_grace_period() {
    let (host, mut client, session) = setup(|o| o.cancel_grace(Duration::from_millis(100))).await;
    let (id, s, _command) = prompt(&mut client, &host, &session, "hi").await;
    cancel(&mut client, &session).await;
    s.wait_interrupts(1).await;
    let response = client.response(&id).await;
    assert!(is_cancelled(&response), "{response}");
    client.hang_up().await;
}

#[tokio::test]
async fn cancel_request_for_a_stuck_prompt_is_answered_after_the_grace_period() {
    let (host, mut client, session) = setup(|o| o.cancel_grace(Duration::from_millis(100))).await;
    let (id, s, command) = prompt(&mut client, &host, &session, "hi").await;
    s.start_turn(&command, ("l", "t"));
    cancel_request(&mut client, &id).await;
    let response = client.response(&id).await;
    assert!(is_cancelled(&response), "{response}");
    assert_eq!(s.interrupts.load(Ordering::SeqCst), 1);
    client.hang_up().await;
}

// ---------------------------------------------------------------------------------------------
// Randomised stress
// ---------------------------------------------------------------------------------------------

/// A small deterministic PRNG (xorshift64*), so failures can be replayed from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    async fn pause(&mut self) {
        match self.below(4) {
            0 => {}
            1 => tokio::task::yield_now().await,
            2 => tokio::time::sleep(Duration::from_micros(self.below(300))).await,
            _ => {
                for _ in 0..self.below(5) {
                    tokio::task::yield_now().await;
                }
            }
        }
    }
}

/// What a responsive host does with a turn: start it, stream numbered chunks, and end it as
/// interrupted as soon as an interrupt arrived (even one that came before the turn started),
/// otherwise with `end_turn`.
async fn run_turn(s: Arc<ScriptedSession>, command: CommandId, turn: String, tag: usize, base: usize, seed: u64) {
    let mut rng = Rng(seed);
    let at = ("loop", turn.as_str());
    rng.pause().await;
    s.start_turn(&command, at);
    for k in 0..rng.below(6) {
        if s.interrupts.load(Ordering::SeqCst) > base {
            break;
        }
        s.live(at, delta(&format!("#{tag}:{k}")));
        rng.pause().await;
    }
    if s.interrupts.load(Ordering::SeqCst) > base {
        s.live(at, delta(&format!("#{tag}:last")));
        s.durable(at, EventKind::TurnInterrupted {});
    } else {
        s.durable(at, done(None));
    }
    // Late output after the terminal must never be forwarded.
    s.live(at, delta(&format!("#{tag}:zombie")));
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Cancel {
    None,
    Session,
    SessionAfterDelay,
    Request,
    RequestAfterDelay,
    SessionAfterResponse,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_prompt_gets_exactly_one_non_error_response_and_no_update_follows_it() {
    const ITERATIONS: usize = 200;
    let (host, mut client, session) = setup(|o| o.cancel_grace(Duration::from_secs(5))).await;
    let s = host.session(&session);
    let mut rng = Rng(0x05EE_D0FA_CFFA_CADE);
    let mut ids = Vec::new();
    let mut modes = Vec::new();
    for i in 0..ITERATIONS {
        let mode = match rng.below(6) {
            0 => Cancel::None,
            1 => Cancel::Session,
            2 => Cancel::SessionAfterDelay,
            3 => Cancel::Request,
            4 => Cancel::RequestAfterDelay,
            _ => Cancel::SessionAfterResponse,
        };
        let base = s.interrupts.load(Ordering::SeqCst);
        let id = client.prompt(&session, &format!("prompt {i}")).await;
        let (answered_tx, answered_rx) = tokio::sync::oneshot::channel::<()>();
        let driver = {
            let s = s.clone();
            let seed = rng.next() | 1;
            tokio::spawn(async move {
                let stop = async {
                    let _ = answered_rx.await;
                };
                if let Some((command, _)) = s.next_submit_or(stop).await {
                    run_turn(s, command, format!("turn-{i}"), i, base, seed).await;
                }
            })
        };
        match mode {
            Cancel::None | Cancel::SessionAfterResponse => {}
            Cancel::Session => cancel(&mut client, &session).await,
            Cancel::Request => cancel_request(&mut client, &id).await,
            Cancel::SessionAfterDelay => {
                rng.pause().await;
                cancel(&mut client, &session).await;
            }
            Cancel::RequestAfterDelay => {
                rng.pause().await;
                cancel_request(&mut client, &id).await;
            }
        }
        let response = client.response(&id).await;
        let _ = answered_tx.send(());
        tokio::time::timeout(common::STEP, driver).await.expect("driver hung").expect("driver panicked");
        let stop = response
            .pointer("/result/stopReason")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("iteration {i} ({mode:?}): not a result: {response}"));
        match mode {
            Cancel::None | Cancel::SessionAfterResponse => {
                assert_eq!(stop, "end_turn", "iteration {i} ({mode:?}) was cancelled without a cancel");
            }
            _ => assert!(stop == "cancelled" || stop == "end_turn", "iteration {i} ({mode:?}): {stop}"),
        }
        if mode == Cancel::SessionAfterResponse {
            cancel(&mut client, &session).await;
        }
        ids.push(id);
        modes.push(mode);
    }
    // Flush: a round trip after the last prompt, so everything the agent sent is in the transcript.
    client.call_ok("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;

    let transcript = client.transcript.clone();
    for (i, id) in ids.iter().enumerate() {
        let answers: Vec<usize> = transcript
            .iter()
            .enumerate()
            .filter(|(_, m)| m.get("id") == Some(id) && m.get("method").is_none())
            .map(|(n, _)| n)
            .collect();
        assert_eq!(answers.len(), 1, "iteration {i}: {} responses", answers.len());
        let answered_at = answers[0];
        let tag = format!("#{i}:");
        for (n, m) in transcript.iter().enumerate() {
            let Some(text) = m.pointer("/params/update/content/text").and_then(Value::as_str) else {
                continue;
            };
            if text.starts_with(&tag) {
                assert!(
                    n < answered_at,
                    "iteration {i} ({:?}): update {text:?} at {n} after the response at {answered_at}",
                    modes[i]
                );
                assert!(!text.ends_with("zombie"), "iteration {i}: output after the terminal was forwarded");
            }
        }
    }
    client.hang_up().await;
}
