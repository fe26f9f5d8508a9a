//! The three measurements of `acp-facade-bench remote`, each on a fresh server process:
//! - [`stream`]: one `stream N` turn over WebSocket or Streamable HTTP, the time from sending the
//!   prompt to its answer with every chunk received;
//! - [`idle`]: the server's resident memory per idle WebSocket connection (each initialized);
//! - [`sessions`]: many sessions prompted `stream N` at once over a few WebSocket connections: notifications
//!   per second overall and the time to each session's first chunk.
//!
//! Invariants: a measurement counts only what it checked — every chunk of a turn is counted
//! before its answer is accepted, every connection is initialized before the memory is read —
//! and fails (an `Err`) rather than report a partial figure.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::StreamExt as _;

use super::server::Server;
use super::wire::{Http, Result, Ws, clip, expect_answer, peek, prompt, session_id, session_new};

/// The transport of a [`stream`] measurement.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Transport {
    WebSocket,
    Http,
}

/// How many handshakes the idle and sessions measurements run at once.
const OPENING_IN_PARALLEL: usize = 64;

/// What a message received during a turn is.
enum Turn {
    /// An `agent_message_chunk` of `session/update`.
    Chunk,
    /// Another `session/update` (the demo's `available_commands_update`, say): not counted.
    OtherUpdate,
    /// The successful answer awaited.
    Answer,
}

/// Classifies `text` received while awaiting the answer to `answer_id`; anything else than a
/// `session/update` or that answer is an `Err`.
fn classify(text: &str, answer_id: u64) -> Result<Turn> {
    let message = peek(text)?;
    match message.method.as_deref() {
        Some("session/update") => {
            let kind = message.params.as_ref().and_then(|p| p.update.as_ref()).and_then(|u| u.kind.as_deref());
            Ok(if kind == Some("agent_message_chunk") { Turn::Chunk } else { Turn::OtherUpdate })
        }
        Some(_) => Err(format!("an unexpected message: {}", clip(text))),
        None => {
            expect_answer(text, answer_id)?;
            Ok(Turn::Answer)
        }
    }
}

/// One `stream chunks` turn on a fresh connection; the time from the prompt to its answer.
pub(crate) async fn stream(server: &Server, transport: Transport, chunks: u64) -> Result<Duration> {
    let text = format!("stream {chunks}");
    let mut received = 0_u64;
    let elapsed = match transport {
        Transport::WebSocket => {
            let mut ws = Ws::initialized(&server.endpoint).await?;
            let session = session_id(&ws.call(session_new(2), 2).await?)?;
            let started = Instant::now();
            ws.send(prompt(3, &session, &text)).await?;
            loop {
                let message = ws.recv_text().await?;
                match classify(&message, 3)? {
                    Turn::Chunk => received += 1,
                    Turn::OtherUpdate => {}
                    Turn::Answer => break started.elapsed(),
                }
            }
        }
        Transport::Http => {
            let mut http = Http::initialize(&server.endpoint).await?;
            http.open_stream(None).await?;
            http.post(session_new(2), None).await?;
            let answer = http.recv().await?;
            expect_answer(&answer, 2)?;
            let session = session_id(&answer)?;
            http.open_stream(Some(&session)).await?;
            let started = Instant::now();
            http.post(prompt(3, &session, &text), Some(&session)).await?;
            loop {
                let message = http.recv().await?;
                match classify(&message, 3)? {
                    Turn::Chunk => received += 1,
                    Turn::OtherUpdate => {}
                    Turn::Answer => break started.elapsed(),
                }
            }
        }
    };
    if received != chunks {
        return Err(format!("{received} chunks came before the answer, not {chunks}"));
    }
    Ok(elapsed)
}

/// What [`idle`] measured.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Idle {
    pub(crate) before_kib: u64,
    pub(crate) after_kib: u64,
    pub(crate) bytes_per_connection: u64,
}

/// Opens `n` WebSocket connections, each initialized, and reads the server's RSS before and after.
pub(crate) async fn idle(server: &Server, n: usize) -> Result<Idle> {
    // One connection first, opened and closed: what the first connection allocates once (the
    // runtime's lazily made parts) is not a per-connection cost.
    drop(Ws::initialized(&server.endpoint).await?);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before_kib = server.rss_kib();
    let endpoint = &server.endpoint;
    let opened: Vec<Result<Ws>> = futures::stream::iter(0..n)
        .map(|_| Ws::initialized(endpoint))
        .buffer_unordered(OPENING_IN_PARALLEL)
        .collect()
        .await;
    let connections = opened.into_iter().collect::<Result<Vec<Ws>>>()?;
    // Let the server settle (buffers freed after the handshakes) before reading.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after_kib = server.rss_kib();
    drop(connections);
    if before_kib == 0 || after_kib == 0 {
        return Err("no VmRSS for the server process".to_owned());
    }
    let grown = after_kib.saturating_sub(before_kib) * 1024;
    Ok(Idle { before_kib, after_kib, bytes_per_connection: grown / n as u64 })
}

/// What [`sessions`] measured.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sessions {
    /// Chunks received per second, from the go to the last answer.
    pub(crate) notifications_per_s: u64,
    pub(crate) first_chunk_p50: Duration,
    pub(crate) first_chunk_p99: Duration,
}

/// One connection's sessions, prompted when `go` turns true; each session's time to its first
/// chunk, the chunks received, and when the last answer came.
async fn connection_turns(
    mut ws: Ws,
    sessions: Vec<String>,
    chunks: u64,
    mut go: tokio::sync::watch::Receiver<bool>,
) -> Result<(Vec<Duration>, u64, Instant)> {
    go.wait_for(|go| *go).await.map_err(|_| "the go signal was dropped".to_owned())?;
    let text = format!("stream {chunks}");
    let mut sent = HashMap::with_capacity(sessions.len());
    for (i, session) in sessions.iter().enumerate() {
        sent.insert(session.clone(), Instant::now());
        ws.send(prompt(100 + i as u64, session, &text)).await?;
    }
    let mut first_chunks = Vec::with_capacity(sessions.len());
    let (mut received, mut answered) = (0_u64, 0);
    while answered < sessions.len() {
        let message = ws.recv_text().await?;
        let peeked = peek(&message)?;
        let params = peeked.params.as_ref();
        let kind = params.and_then(|p| p.update.as_ref()).and_then(|u| u.kind.as_deref());
        match (peeked.method.as_deref(), params.and_then(|p| p.session_id.as_deref())) {
            (Some("session/update"), Some(session)) if kind == Some("agent_message_chunk") => {
                received += 1;
                if let Some(started) = sent.remove(session) {
                    first_chunks.push(started.elapsed());
                }
            }
            (Some("session/update"), Some(_)) => {}
            (None, _) if peeked.error.is_none() && peeked.id.is_some_and(|id| id >= 100) => answered += 1,
            _ => return Err(format!("an unexpected message: {}", clip(&message))),
        }
    }
    if !sent.is_empty() || received != chunks * sessions.len() as u64 {
        return Err(format!("{received} chunks for {} sessions of {chunks}", sessions.len()));
    }
    Ok((first_chunks, received, Instant::now()))
}

/// `connections` WebSocket connections × `per_connection` sessions, every session prompted `stream chunks`
/// at once.
pub(crate) async fn sessions(
    server: &Server,
    connections: usize,
    per_connection: usize,
    chunks: u64,
) -> Result<Sessions> {
    let endpoint = &server.endpoint;
    let opened: Vec<Result<(Ws, Vec<String>)>> = futures::stream::iter(0..connections)
        .map(|_| async move {
            let mut ws = Ws::initialized(endpoint).await?;
            let mut sessions = Vec::with_capacity(per_connection);
            for i in 0..per_connection as u64 {
                sessions.push(session_id(&ws.call(session_new(2 + i), 2 + i).await?)?);
            }
            Ok((ws, sessions))
        })
        .buffer_unordered(OPENING_IN_PARALLEL)
        .collect()
        .await;
    let (go_tx, go) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::with_capacity(connections);
    for opened in opened {
        let (ws, sessions) = opened?;
        tasks.push(tokio::spawn(connection_turns(ws, sessions, chunks, go.clone())));
    }
    // Every task waits on `go`: the prompts leave together.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    go_tx.send(true).map_err(|_| "every connection task ended early".to_owned())?;
    let (mut first_chunks, mut received, mut last) = (Vec::new(), 0, started);
    for task in tasks {
        let (firsts, n, done) = task.await.map_err(|e| format!("a connection task failed: {e}"))??;
        first_chunks.extend(firsts);
        received += n;
        last = last.max(done);
    }
    first_chunks.sort_unstable();
    let percentile = |p: usize| first_chunks[(first_chunks.len() * p / 100).min(first_chunks.len() - 1)];
    let elapsed = last - started;
    Ok(Sessions {
        notifications_per_s: u64::try_from(u128::from(received) * 1_000_000 / elapsed.as_micros().max(1))
            .unwrap_or(u64::MAX),
        first_chunk_p50: percentile(50),
        first_chunk_p99: percentile(99),
    })
}
