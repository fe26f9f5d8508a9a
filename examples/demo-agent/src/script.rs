//! The scripted "model" of the demo agent: what each prompt does (the calls to the client — files,
//! terminals, questions — are in [`client`]).

use std::fmt::Write as _;
use std::time::Duration;

use acp_facade::acp::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption, StopReason, ToolKind,
};
use acp_facade::error::ErrorExt;
use acp_facade::harness::ApprovalAction;
use acp_facade::harness::content::text_block;
use acp_facade::runner::{Permission, Reply, RunnerSession, Turn, TurnRunner};
use async_trait::async_trait;

use crate::client;

/// The context window the demo reports.
pub const CONTEXT_SIZE: u64 = 200_000;

/// The demo's turn runner.
pub struct Script;

/// The first text block of the prompt, trimmed.
fn command_text(turn: &Turn) -> String {
    turn.prompt()
        .iter()
        .find_map(|block| match block {
            acp_facade::acp::ContentBlock::Text(t) => Some(t.text.trim().to_owned()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Context usage: the UTF-8 bytes of the prompt plus those of the reply.
async fn report_usage(turn: &Turn, prompt: &str) {
    let used = prompt.len() + turn.step_text().len();
    turn.usage(u64::try_from(used).unwrap_or(u64::MAX), CONTEXT_SIZE).await;
}

#[async_trait]
impl TurnRunner for Script {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, acp_facade::Error> {
        let text = command_text(turn);
        let (verb, rest) = text.split_once(char::is_whitespace).map_or((text.as_str(), ""), |(v, r)| (v, r.trim()));
        let stop = match verb {
            "stream" => {
                let count: u64 = rest.parse().unwrap_or(0);
                for i in 1..=count {
                    if turn.is_cancelled() {
                        return Ok(StopReason::Cancelled);
                    }
                    // Sized up front: `format!` would start smaller and grow once per chunk.
                    let mut chunk = String::with_capacity(24);
                    write!(chunk, "t{i} ").expect("writing to a String cannot fail");
                    turn.text(chunk).await;
                }
                StopReason::EndTurn
            }
            "think" => {
                turn.thought(rest).await;
                turn.text("done thinking").await;
                StopReason::EndTurn
            }
            "tool" => {
                let name = if rest.is_empty() { "tool" } else { rest };
                let call = turn.start_tool_call(name, ToolKind::Execute, serde_json::json!({ "name": name })).await;
                let controls = [ApprovalAction::Approve, ApprovalAction::ApproveAlways, ApprovalAction::Deny];
                match turn.request_permission(&call, format!("Run {name}"), &controls).await {
                    Permission::Cancelled => return Ok(StopReason::Cancelled),
                    answer if answer.is_allowed() => {
                        turn.complete_tool_call(&call, vec![text_block(format!("{name} ran"))]).await;
                        turn.text(format!("{name}: done")).await;
                    }
                    _ => {
                        turn.fail_tool_call(&call, vec![text_block(format!("{name} was denied"))]).await;
                        turn.text(format!("{name}: denied")).await;
                    }
                }
                StopReason::EndTurn
            }
            "sleep" => {
                let ms: u64 = rest.parse().unwrap_or(0);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                    () = turn.cancelled() => return Ok(StopReason::Cancelled),
                }
                turn.text("slept").await;
                StopReason::EndTurn
            }
            "ask" => match turn.ask(rest).await {
                Reply::Answered(answer) => {
                    let answer = answer.as_str().map_or_else(|| answer.to_string(), str::to_owned);
                    turn.text(format!("answer: {answer}")).await;
                    StopReason::EndTurn
                }
                Reply::Declined => {
                    turn.text("declined").await;
                    StopReason::EndTurn
                }
                _ => return Ok(StopReason::Cancelled),
            },
            "read" => match client::read(turn, rest).await {
                Some(stop) => stop,
                None => return Ok(StopReason::Cancelled),
            },
            "write" => match client::write(turn, rest).await {
                Some(stop) => stop,
                None => return Ok(StopReason::Cancelled),
            },
            "run" => match client::run(turn, &text, rest).await {
                Some(stop) => stop,
                None => return Ok(StopReason::Cancelled),
            },
            "open" => match client::open(turn, rest).await {
                Some(stop) => stop,
                None => return Ok(StopReason::Cancelled),
            },
            "edit" => {
                client::edit(turn, rest).await;
                StopReason::EndTurn
            }
            "fail" => return Err(acp_facade::Error::internal_msg("the demo turn failed, as asked")),
            _ => {
                let words: Vec<&str> = text.split_whitespace().collect();
                for (i, word) in words.iter().enumerate() {
                    let chunk = if i + 1 < words.len() { format!("{word} ") } else { (*word).to_owned() };
                    turn.text(chunk).await;
                }
                StopReason::EndTurn
            }
        };
        report_usage(turn, &text).await;
        Ok(stop)
    }

    fn config_options(&self) -> Vec<SessionConfigOption> {
        vec![
            SessionConfigOption::select(
                "mode",
                "Mode",
                "ask",
                vec![
                    SessionConfigSelectOption::new("ask", "Ask").description("Ask before changing anything".to_owned()),
                    SessionConfigSelectOption::new("code", "Code").description("Write code directly".to_owned()),
                ],
            )
            .category(SessionConfigOptionCategory::Mode),
            SessionConfigOption::select(
                "model",
                "Model",
                "fast",
                vec![SessionConfigSelectOption::new("fast", "Fast"), SessionConfigSelectOption::new("smart", "Smart")],
            )
            .category(SessionConfigOptionCategory::Model),
        ]
    }

    fn title(&self, first_prompt: &str) -> Option<String> {
        let title: String = first_prompt.trim().chars().take(40).collect();
        (!title.is_empty()).then_some(title)
    }

    fn supports_compaction(&self) -> bool {
        true
    }

    async fn compact(&self, _session: &RunnerSession) -> Result<(), acp_facade::Error> {
        Ok(())
    }
}
