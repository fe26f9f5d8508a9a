//! A test fixture: an agent whose turns print to stdout with `println!`, as careless host code
//! would. The stdout guard must send those lines to stderr, keeping the protocol stream clean.

#![allow(clippy::print_stdout, reason = "printing to stdout is what this fixture is for")]

use std::sync::Arc;

use acp_facade::acp::StopReason;
use acp_facade_runner::{MemoryStore, Runner, Turn, TurnRunner};

struct Noisy;

#[async_trait::async_trait]
impl TurnRunner for Noisy {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, acp_facade::Error> {
        println!("STRAY OUTPUT from a host: {}", turn.prompt_text());
        turn.text(turn.prompt_text()).await;
        println!("MORE STRAY OUTPUT");
        Ok(StopReason::EndTurn)
    }
}

fn main() -> std::io::Result<()> {
    let runner = Runner::new(Arc::new(MemoryStore::new()), Arc::new(Noisy));
    let agent = runner.agent(runner.options());
    tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(agent.serve_stdio())
}
