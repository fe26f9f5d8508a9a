//! One ACP connection of a remote transport: an [`Agent`] serving an in-memory pipe, fed whole
//! JSON messages and yielding whole JSON messages.
//!
//! Invariants: every message reaches the agent as exactly one line (a client's pretty-printed JSON
//! is re-serialised compactly; text that is not JSON has its line breaks replaced, so the agent
//! answers it with a parse error, as on stdio); dropping the [`Pipe`] is the client hanging up
//! (the agent closes its sessions and answers its requests, and the outgoing channel ends after
//! the agent's last message); requests in flight are counted in [`InFlight`]; every message out
//! holds its share of the connection's [`Budget`] until the transport hands it to the socket, and
//! the agent's next message waits for room (see `budget`). A client that took nothing for the
//! stall timeout while its buffer was full is hung up: [`Opened::stalled`] is cancelled, a
//! warning names the connection, and the agent's further messages are dropped (it sees the
//! client go away; see [`Pipe`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Shared;
use super::budget::{Budget, Credit};
use super::shape::{self, Kind, Shape};
use crate::host::Principal;
use crate::{Agent, Options};

/// The header naming an ACP connection (on an HTTP request, and on a WebSocket's `101`).
pub(crate) const CONNECTION_ID: &str = "acp-connection-id";

/// A fresh connection id: 128 random bits, hex.
pub(crate) fn new_connection_id() -> String {
    let mut bytes = [0u8; 16];
    rand::TryRng::try_fill_bytes(&mut rand::rngs::SysRng, &mut bytes).expect("the operating system's random source");
    bytes.iter().fold(String::with_capacity(32), |mut hex, b| {
        use std::fmt::Write as _;
        let _ = write!(hex, "{b:02x}");
        hex
    })
}

/// How many client requests the agents have not answered yet.
#[derive(Debug, Default, Clone)]
pub(crate) struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    fn sent(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    fn answered(&self) {
        let _ = self.0.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }
}

/// The client's side of one agent: messages go in through [`Pipe::send`], come out of
/// [`Pipe::outgoing`].
#[derive(Clone)]
pub(crate) struct Pipe {
    to_agent: mpsc::Sender<String>,
    in_flight: InFlight,
}

/// A message the agent wrote: its text (one line, no line break), its shape (see `shape`), and
/// its share of the connection's buffer (given back when the message is dropped).
pub(crate) struct Outgoing {
    pub(crate) text: String,
    pub(crate) shape: Shape,
    pub(crate) _credit: Credit,
}

/// A started connection: the agent's input, its messages, and the signal that its client was
/// hung up for not reading.
pub(crate) struct Opened {
    pub(crate) pipe: Pipe,
    pub(crate) outgoing: mpsc::UnboundedReceiver<Outgoing>,
    /// Cancelled when the client took nothing for the stall timeout while its buffer was full;
    /// the transport then closes the connection.
    pub(crate) stalled: CancellationToken,
}

/// Starts an agent for the connection `id` of `principal`, on `shared`'s host and rules.
///
/// The principal (the name the token verifier gave this connection's client, if any) is set on
/// the connection's own [`Options`]: the sessions it creates belong to it, and it sees no other
/// principal's sessions (see [`Options::principal`]).
pub(crate) fn start(shared: &Shared, principal: Option<&str>, id: &str) -> Opened {
    let options: Options = shared.options.clone();
    let in_flight = &shared.in_flight;
    let tasks = &shared.tasks;
    let budget = Budget::new(shared.config.max_buffered_bytes);
    let stall = shared.config.stall_timeout();
    let stalled = CancellationToken::new();
    let max = options.max_message_size;
    tracing::debug!(principal, connection = id, "remote ACP connection");
    // Each update carries its stream position: the SSE event id, and what a client resumes from.
    let options = options.stream_cursors(true);
    let options = match principal {
        Some(name) => options.principal(Principal::new(name)),
        None => options,
    };
    let agent = Agent::new(options);
    let (client_side, agent_side) = tokio::io::duplex(64 * 1024);
    let (agent_read, agent_write) = tokio::io::split(agent_side);
    let (client_read, mut client_write) = tokio::io::split(client_side);
    tasks.spawn(async move {
        if let Err(e) = agent.serve_in_memory(agent_read, agent_write).await {
            tracing::warn!(error = %e, "a remote ACP connection failed");
        }
    });
    let (to_agent, mut lines_in) = mpsc::channel::<String>(64);
    tasks.spawn(async move {
        while let Some(line) = lines_in.recv().await {
            if client_write.write_all(line.as_bytes()).await.is_err() {
                return;
            }
        }
        // Every sender is gone: the client hung up.
        let _ = client_write.shutdown().await;
    });
    // Unbounded in count, bounded in bytes by the budget each message holds its share of.
    let (lines_out, outgoing) = mpsc::unbounded_channel::<Outgoing>();
    let answered = in_flight.clone();
    let hung_up = stalled.clone();
    let id = id.to_owned();
    tasks.spawn(async move {
        let mut reader = BufReader::new(client_read);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line.len() > max.saturating_mul(2) {
                tracing::warn!(bytes = line.len(), "an agent message larger than any a client takes; dropped");
                continue;
            }
            let text = String::from_utf8_lossy(&line).trim_end().to_owned();
            let Some(shape) = shape::of(&text) else { continue };
            if shape.kind == Kind::Response {
                answered.answered();
            }
            if hung_up.is_cancelled() {
                // The client stopped reading: what the agent says now has nobody to go to.
                continue;
            }
            let Ok(credit) = budget.reserve(text.len(), stall).await else {
                tracing::warn!(
                    connection = id,
                    buffered_bytes = budget.max(),
                    stalled_for = ?stall,
                    "hanging up a remote client that stopped reading: its buffer stayed full"
                );
                hung_up.cancel();
                continue;
            };
            // A client that went away still lets the agent finish: keep reading to the end.
            let _ = lines_out.send(Outgoing { text, shape, _credit: credit });
        }
    });
    Opened { pipe: Pipe { to_agent, in_flight: in_flight.clone() }, outgoing, stalled }
}

impl Pipe {
    /// Hands the agent one message; `false` once the agent is gone.
    pub(crate) async fn send(&self, message: &Value) -> bool {
        let mut line = serde_json::to_string(message).unwrap_or_default();
        line.push('\n');
        let request = is_request(message);
        if request {
            self.in_flight.sent();
        }
        let sent = self.to_agent.send(line).await.is_ok();
        if request && !sent {
            self.in_flight.answered();
        }
        sent
    }

    /// Hands the agent text that is not JSON, as one line: it answers with a parse error.
    pub(crate) async fn send_text(&self, text: &str) -> bool {
        let mut line = text.replace(['\r', '\n'], " ");
        line.push('\n');
        self.to_agent.send(line).await.is_ok()
    }
}

/// A JSON-RPC request: a method and an id.
pub(crate) fn is_request(message: &Value) -> bool {
    shape::of_value(message).kind == Kind::Request
}

/// A JSON-RPC response: an id and no method.
pub(crate) fn is_response(message: &Value) -> bool {
    shape::of_value(message).kind == Kind::Response
}
