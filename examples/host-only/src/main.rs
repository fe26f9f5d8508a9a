//! A host-only agent: a product with its own runtime on the facade crate alone (no runner, no
//! database, no HTTP stack). It echoes each prompt over stdio. The same program as the facade
//! crate's README, kept here as a binary so that a test can show what it compiles
//! (`tests/dependencies.rs`) and drive it as a client would.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use acp_facade::acp::{ContentBlock, SessionId};
use acp_facade::harness::{
    Cause, CommandId, Coordinates, Event, EventClass, EventHeader, EventId, EventKind, GateId, GateResponse, LoopId,
    TokenChannel, TurnId, UserMessage, Visibility,
};
use acp_facade::host::{EventStream, HostResult, LiveSession, SessionHost, Setup};
use acp_facade::hub::EventHub;
use acp_facade::{Agent, Options};

struct EchoSession {
    id: SessionId,
    events: EventHub,
    turns: AtomicU64,
    published: AtomicU64,
}

impl EchoSession {
    /// A public event of turn `turn` (the hub numbers it when it is published).
    fn event(&self, turn: &str, kind: EventKind, class: EventClass, command: Option<CommandId>) -> Event {
        let n = self.published.fetch_add(1, Ordering::Relaxed);
        Event {
            header: EventHeader {
                id: EventId::new(format!("{}-e{n}", self.id)),
                seq: 0,
                class,
                visibility: Visibility::Public,
                cause: Cause { command_id: command },
                coordinates: Coordinates { loop_id: Some(LoopId::new("main")), turn_id: Some(TurnId::new(turn)) },
            },
            kind,
        }
    }
}

#[async_trait::async_trait]
impl LiveSession for EchoSession {
    fn id(&self) -> SessionId {
        self.id.clone()
    }

    fn subscribe_events(&self) -> HostResult<EventStream> {
        Ok(self.events.subscribe())
    }

    async fn submit(&self, prompt: Vec<ContentBlock>) -> HostResult<CommandId> {
        let n = self.turns.fetch_add(1, Ordering::Relaxed) + 1;
        let (command, turn) = (CommandId::new(format!("{}/c{n}", self.id)), format!("t{n}"));
        let text: String = prompt
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        // The turn starts with the command id `submit` returns: that is how the prompt is matched.
        let started = EventKind::TurnStarted { message: UserMessage::new(prompt) };
        self.events.publish(self.event(&turn, started, EventClass::Enduring, Some(command.clone()))).await;
        // A real runtime calls its model here; every token is a `TokenDelta`.
        let delta = EventKind::TokenDelta { text, channel: TokenChannel::Message };
        self.events.publish(self.event(&turn, delta, EventClass::Ephemeral, None)).await;
        let done = EventKind::TurnDone { message: None, stop: None };
        self.events.publish(self.event(&turn, done, EventClass::Enduring, None)).await;
        Ok(command)
    }

    async fn interrupt(&self) -> HostResult<()> {
        // Stop the running turn here; it then ends with `EventKind::TurnInterrupted`.
        Ok(())
    }

    async fn respond_gate(&self, _gate_id: GateId, _response: GateResponse) -> HostResult<()> {
        // The answer to a permission request the session opened with `EventKind::GateOpened`.
        Ok(())
    }
}

struct EchoHost {
    sessions: AtomicU64,
}

#[async_trait::async_trait]
impl SessionHost for EchoHost {
    async fn new_session(&self, _setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
        let n = self.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(Arc::new(EchoSession {
            id: SessionId::new(format!("echo-{n}")),
            events: EventHub::new(256),
            turns: AtomicU64::new(0),
            published: AtomicU64::new(0),
        }))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let options = Options::new(Arc::new(EchoHost { sessions: AtomicU64::new(0) })).agent_info("echo-host", "0.1.0");
    Agent::new(options).serve_stdio().await
}
