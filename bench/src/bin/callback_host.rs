//! The callback round-trip benchmark's Rust host, the reference for the Python and Node hosts
//! (`bench/fixtures/callback_host.{py,mjs}`): an acp-facade agent over the host interfaces whose only
//! work is the measured host method, `new_session`. Its rate is the facade's own cost per
//! `session/new`; the bindings' rates add the crossing into Python or JavaScript and back.
//!
//! With `--v2` it also serves ACP v2 (Preview) to a client that asks for it (`scripts/bench
//! protocols`), with the baseline session methods v2 requires: an empty `session/list` and a
//! `session/resume` the benchmark never calls. Without it (the main table) it is a v1 agent.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use acp_facade::acp::{ContentBlock, SessionId};
use acp_facade::error::ErrorExt;
use acp_facade::harness::{CommandId, GateId, GateResponse};
use acp_facade::host::{
    EventStream, HostResult, LiveSession, SessionCatalog, SessionCatalogEntry, SessionHost, SessionResumer, Setup,
};
use acp_facade::hub::EventHub;
use acp_facade::{Agent, Options};
use async_trait::async_trait;

/// A session that is never prompted by the benchmark.
struct IdleSession {
    id: SessionId,
    events: EventHub,
}

#[async_trait]
impl LiveSession for IdleSession {
    fn id(&self) -> SessionId {
        self.id.clone()
    }

    fn subscribe_events(&self) -> HostResult<EventStream> {
        Ok(self.events.subscribe())
    }

    async fn submit(&self, _prompt: Vec<ContentBlock>) -> HostResult<CommandId> {
        Err(acp_facade::Error::internal_msg("the callback benchmark never prompts"))
    }

    async fn interrupt(&self) -> HostResult<()> {
        Ok(())
    }

    async fn respond_gate(&self, _gate_id: GateId, _response: GateResponse) -> HostResult<()> {
        Ok(())
    }
}

/// `new_session` is the measured callback.
#[derive(Default)]
struct CallbackHost {
    sessions: AtomicU64,
}

#[async_trait]
impl SessionHost for CallbackHost {
    async fn new_session(&self, _setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
        let n = self.sessions.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(Arc::new(IdleSession { id: SessionId::new(format!("cb-{n}")), events: EventHub::default() }))
    }
}

/// v2's baseline session methods, which the benchmark never calls: nothing stored to list, and a
/// resumed session is a fresh idle one.
struct Baseline;

#[async_trait]
impl SessionCatalog for Baseline {
    async fn list_sessions(&self) -> HostResult<Vec<SessionCatalogEntry>> {
        Ok(Vec::new())
    }
}

#[async_trait]
impl SessionResumer for Baseline {
    async fn resume_session(&self, session_id: SessionId, _setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
        Ok(Arc::new(IdleSession { id: session_id, events: EventHub::default() }))
    }
}

fn main() -> std::io::Result<()> {
    let mut options = Options::new(Arc::new(CallbackHost::default()))
        .agent_info("acp-facade-callback-host", env!("CARGO_PKG_VERSION"))
        .max_sessions(10_000_000);
    if std::env::args().skip(1).any(|a| a == "--v2") {
        options = options.catalog(Arc::new(Baseline)).resumer(Arc::new(Baseline)).protocol_v2(true);
    }
    let agent = Agent::new(options);
    tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(agent.serve_stdio())
}
