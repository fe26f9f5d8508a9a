//! The scripted "model" of the demo agent: what each prompt does (the calls to the client — files,
//! terminals, questions — are in [`client`]).

use std::fmt::Write as _;
use std::time::Duration;

use acp_facade::acp::{
    AvailableCommand, AvailableCommandInput, ContentBlock, EmbeddedResourceResource, McpServer, Meta, Notice,
    NoticeSeverity, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOption, StopReason, ToolKind, UnstructuredCommandInput,
};
use acp_facade::error::ErrorExt;
use acp_facade::harness::ApprovalAction;
use acp_facade::harness::content::text_block;
use acp_facade_runner::{Permission, Reply, RunnerSession, Turn, TurnRunner};
use async_trait::async_trait;
use base64::Engine as _;

use crate::client;

/// The context window the demo reports.
pub const CONTEXT_SIZE: u64 = 200_000;

/// The summary `/compact` reports (`compaction_summary_chunk`).
pub const COMPACTION_SUMMARY: &str = "The conversation so far, compacted.";

/// The name of the demo's host-defined slash command.
pub const SHOUT: &str = "shout";

/// The demo's turn runner.
pub struct Script;

/// `/shout`, as advertised.
fn shout_command() -> AvailableCommand {
    AvailableCommand::new(SHOUT, "Repeat the input in capitals")
        .input(AvailableCommandInput::Unstructured(UnstructuredCommandInput::new("text")))
}

/// The demo's own system prompt (`system`), to which a client's `systemPrompt` applies.
pub const SYSTEM_PROMPT: &str = "You are the acp-facade demo.";

/// The id of the plan `plan N` builds.
pub const PLAN_ID: &str = "plan";

/// The entries of a plan of `steps` (`step 1` …), the first `done` completed, the rest pending.
fn plan_entries(steps: u64, done: u64) -> Vec<PlanEntry> {
    (1..=steps)
        .map(|i| {
            let status = if i <= done { PlanEntryStatus::Completed } else { PlanEntryStatus::Pending };
            PlanEntry::new(format!("step {i}"), PlanEntryPriority::Medium, status)
        })
        .collect()
}

/// `mcp: NAME(TRANSPORT) …`, or `mcp: none`.
fn mcp_line(servers: &[McpServer]) -> String {
    if servers.is_empty() {
        return "mcp: none".to_owned();
    }
    let listed: Vec<String> = servers
        .iter()
        .map(|server| match server {
            McpServer::Stdio(s) => format!("{}(stdio)", s.name),
            McpServer::Http(s) => format!("{}(http)", s.name),
            McpServer::Sse(s) => format!("{}(sse)", s.name),
            _ => "unknown(unknown)".to_owned(),
        })
        .collect();
    format!("mcp: {}", listed.join(" "))
}

/// The length of base64 `data` once decoded (0 when it is not base64).
fn decoded_len(data: &str) -> usize {
    base64::engine::general_purpose::STANDARD.decode(data).map_or(0, |bytes| bytes.len())
}

/// The chunk answering a prompt whose first block is not text, if it is one.
fn block_line(block: &ContentBlock) -> Option<String> {
    Some(match block {
        ContentBlock::Text(_) => return None,
        ContentBlock::Image(image) => format!("image {} {}", image.mime_type, decoded_len(&image.data)),
        ContentBlock::Audio(audio) => format!("audio {} {}", audio.mime_type, decoded_len(&audio.data)),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            EmbeddedResourceResource::TextResourceContents(text) => {
                format!("resource {} {}", text.uri, text.text.chars().count())
            }
            EmbeddedResourceResource::BlobResourceContents(blob) => format!("resource {} 0", blob.uri),
            _ => "resource unknown 0".to_owned(),
        },
        ContentBlock::ResourceLink(link) => format!("link {}", link.uri),
        _ => "unknown".to_owned(),
    })
}

/// `plan N`: the plan (with an id; a whole `plan` to a client without plan operations), then once
/// more per completed step; `false` when cancelled.
async fn plan_steps(turn: &Turn, steps: u64) -> bool {
    for done in 0..=steps {
        if turn.is_cancelled() {
            return false;
        }
        turn.update_plan(PLAN_ID, plan_entries(steps, done)).await;
    }
    true
}

/// `notice TEXT`: a notice, or the same as a message chunk for a client without notices.
async fn notice(turn: &Turn, text: &str) {
    if !turn.notice(Notice::new(NoticeSeverity::Info, text)).await {
        turn.text(format!("notice: {text}")).await;
    }
}

/// `subagent TEXT`: a child session that is sent TEXT and answers it, word by word; for a client
/// without subagents, the text as a message chunk.
async fn subagent(turn: &Turn, text: &str) {
    if !turn.client_capabilities().subagents() {
        turn.text(format!("subagent: {text}")).await;
        return;
    }
    let child = turn.start_subagent("subagent").await;
    child.send(text).await;
    child.reply(words(text)).await;
    child.finish(StopReason::EndTurn).await;
    turn.text("subagent: done").await;
}

/// `drip N MS`: N chunks `d1 ` … `dN `, one every MS milliseconds; `None` when cancelled.
async fn drip(turn: &Turn, rest: &str) -> Option<StopReason> {
    let mut args = rest.split_whitespace();
    let count: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let every = Duration::from_millis(args.next().and_then(|ms| ms.parse().ok()).unwrap_or(0));
    for i in 1..=count {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = turn.cancelled() => return None,
        }
        turn.text(format!("d{i} ")).await;
    }
    Some(StopReason::EndTurn)
}

/// The reply of a turn that is no scripted text line: `/shout TEXT`, or a prompt whose first block
/// is not text.
fn rich_reply(turn: &Turn) -> Option<String> {
    if let Some(command) = turn.command().filter(|c| c.name == SHOUT) {
        return Some(command.input.to_uppercase());
    }
    turn.prompt().first().and_then(block_line)
}

/// The response `_meta` echoing the prompt's `traceparent`, if it has one.
fn traceparent_echo(turn: &Turn) -> Option<Meta> {
    let traceparent = turn.meta()?.get("traceparent")?.clone();
    Some(std::iter::once(("traceparent".to_owned(), traceparent)).collect())
}

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

/// `stream N`: N chunks `t1 `, `t2 `, …; `None` when cancelled on the way.
async fn stream(turn: &Turn, rest: &str) -> Option<StopReason> {
    let count: u64 = rest.parse().unwrap_or(0);
    for i in 1..=count {
        if turn.is_cancelled() {
            return None;
        }
        // Sized up front: `format!` would start smaller and grow once per chunk.
        let mut chunk = String::with_capacity(24);
        write!(chunk, "t{i} ").expect("writing to a String cannot fail");
        turn.text(chunk).await;
    }
    Some(StopReason::EndTurn)
}

/// `tool NAME`: a tool call that asks for permission first.
async fn tool(turn: &Turn, rest: &str) -> Option<StopReason> {
    let name = if rest.is_empty() { "tool" } else { rest };
    let call = turn
        .tool_call(name)
        .name(name)
        .kind(ToolKind::Execute)
        .raw_input(serde_json::json!({ "name": name }))
        .start()
        .await;
    let controls = [ApprovalAction::Approve, ApprovalAction::ApproveAlways, ApprovalAction::Deny];
    match turn.request_permission(&call, format!("Run {name}"), &controls).await {
        Permission::Cancelled => return None,
        answer if answer.is_allowed() => {
            turn.complete_tool_call(&call, vec![text_block(format!("{name} ran"))]).await;
            turn.text(format!("{name}: done")).await;
        }
        _ => {
            turn.fail_tool_call(&call, vec![text_block(format!("{name} was denied"))]).await;
            turn.text(format!("{name}: denied")).await;
        }
    }
    Some(StopReason::EndTurn)
}

/// `sleep MS`: waits, unless cancelled meanwhile.
async fn sleep(turn: &Turn, rest: &str) -> Option<StopReason> {
    let ms: u64 = rest.parse().unwrap_or(0);
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(ms)) => {}
        () = turn.cancelled() => return None,
    }
    turn.text("slept").await;
    Some(StopReason::EndTurn)
}

/// `ask QUESTION`: the user's answer (through elicitation when the client has it).
async fn ask(turn: &Turn, question: &str) -> Option<StopReason> {
    match turn.ask(question).await {
        Reply::Answered(answer) => {
            let answer = answer.as_str().map_or_else(|| answer.to_string(), str::to_owned);
            turn.text(format!("answer: {answer}")).await;
        }
        Reply::Declined => turn.text("declined").await,
        _ => return None,
    }
    Some(StopReason::EndTurn)
}

/// The words of `text`, each but the last with a space after it.
fn words(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .iter()
        .enumerate()
        .map(|(i, word)| if i + 1 < words.len() { format!("{word} ") } else { (*word).to_owned() })
        .collect()
}

/// Anything else: the words echoed one by one, each but the last with a space after it.
async fn echo(turn: &Turn, text: &str) {
    for chunk in words(text) {
        turn.text(chunk).await;
    }
}

#[async_trait]
impl TurnRunner for Script {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, acp_facade::Error> {
        if let Some(meta) = traceparent_echo(turn) {
            turn.set_response_meta(meta).await;
        }
        let text = command_text(turn);
        if let Some(line) = rich_reply(turn) {
            turn.text(line).await;
            report_usage(turn, &text).await;
            return Ok(StopReason::EndTurn);
        }
        let (verb, rest) = text.split_once(char::is_whitespace).map_or((text.as_str(), ""), |(v, r)| (v, r.trim()));
        // `None`: the turn was cancelled. The verbs' turns are boxed: a future is as large as its
        // largest branch, and the echo, the common turn, need not carry theirs.
        let stop = match verb {
            "stream" => Box::pin(stream(turn, rest)).await,
            "think" => {
                turn.thought(rest).await;
                turn.text("done thinking").await;
                Some(StopReason::EndTurn)
            }
            "tool" => Box::pin(tool(turn, rest)).await,
            "sleep" => Box::pin(sleep(turn, rest)).await,
            "ask" => Box::pin(ask(turn, rest)).await,
            "read" => Box::pin(client::read(turn, rest)).await,
            "write" => Box::pin(client::write(turn, rest)).await,
            "run" => Box::pin(client::run(turn, &text, rest)).await,
            "open" => Box::pin(client::open(turn, rest)).await,
            "readloop" => Box::pin(client::read_loop(turn, rest)).await,
            "edit" => {
                Box::pin(client::edit(turn, rest)).await;
                Some(StopReason::EndTurn)
            }
            "fail" => return Err(acp_facade::Error::internal_msg("the demo turn failed, as asked")),
            "plan" => {
                let planned = Box::pin(plan_steps(turn, rest.parse().unwrap_or(0))).await;
                if planned {
                    turn.text("planned").await;
                }
                planned.then_some(StopReason::EndTurn)
            }
            "notice" => {
                notice(turn, rest).await;
                Some(StopReason::EndTurn)
            }
            "system" => {
                turn.text(turn.compose_system_prompt(SYSTEM_PROMPT)).await;
                Some(StopReason::EndTurn)
            }
            "subagent" => {
                Box::pin(subagent(turn, rest)).await;
                Some(StopReason::EndTurn)
            }
            "drip" => Box::pin(drip(turn, rest)).await,
            "switch" => {
                let line = if Box::pin(turn.set_mode(rest)).await.is_ok() { "mode:" } else { "unknown mode" };
                turn.text(format!("{line} {rest}")).await;
                Some(StopReason::EndTurn)
            }
            "mcp" => {
                turn.text(mcp_line(turn.mcp_servers())).await;
                Some(StopReason::EndTurn)
            }
            _ => {
                echo(turn, &text).await;
                Some(StopReason::EndTurn)
            }
        };
        let Some(stop) = stop else { return Ok(StopReason::Cancelled) };
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

    fn commands(&self) -> Vec<AvailableCommand> {
        vec![shout_command()]
    }

    fn title(&self, first_prompt: &str) -> Option<String> {
        let title: String = first_prompt.trim().chars().take(40).collect();
        (!title.is_empty()).then_some(title)
    }

    fn supports_compaction(&self) -> bool {
        true
    }

    fn accepts_system_prompt(&self) -> bool {
        true
    }

    async fn compact(&self, _session: &RunnerSession) -> Result<Option<String>, acp_facade::Error> {
        Ok(Some(COMPACTION_SUMMARY.to_owned()))
    }
}
