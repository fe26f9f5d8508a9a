//! `Turn::history` and `Turn::history_page` through the wire: a later turn reads the session's
//! earlier turns (prompts, replies, thoughts, tool calls with their final status) and reports
//! them as text; so does a turn of the same session loaded or resumed by another runner over
//! another store instance on the same database (as another process would), from `SQLite` and
//! `PostgreSQL`; `/compact` leaves its summary in place of what it compacted; `limit` bounds the
//! entries, and paging walks the whole conversation, older pages read from the store.

use crate::common;

use std::sync::Arc;

use acp_facade::acp::{StopReason, ToolKind};
use acp_facade::error::Error;
use acp_facade::harness::content::text_block;
use acp_facade_runner::{HISTORY_CACHE_ENTRIES, HistoryEntry, Runner, RunnerSession, Store, Turn, TurnRunner};
use async_trait::async_trait;
use common::stores::Database;
use common::{TestClient, chunk_texts};
use serde_json::json;

/// A turn runner whose prompt's first word picks the turn:
///
/// | prompt | the turn |
/// |---|---|
/// | `recall N` | streams `turn.history(N)`, one line per entry (see [`line`]) |
/// | `page N` | walks every page of `N` entries, oldest last, and streams them as `recall` does, each page's lines preceded by `--` |
/// | `think T` | thought `T`, then text `ok` |
/// | `tool` | a read call completed with `contents`, then text `read it` |
/// | `toolfail` | an execute call failed with `refused` |
/// | `dangling` | a call never finished |
/// | `many N` | `N` completed calls in one step |
/// | anything else | echoes the prompt |
///
/// `/compact` answers `summary N` (the `N`-th compaction), or no summary once `silent` is set.
struct Recall {
    compactions: std::sync::atomic::AtomicUsize,
    silent: bool,
}

/// One entry as a line: `user:T`, `assistant:T`, `thought:T`, `tool:TITLE:STATUS:TEXT`,
/// `summary:T`, with newlines escaped (`\n`).
fn line(entry: &HistoryEntry) -> String {
    let line = match entry {
        HistoryEntry::User { text, content } => {
            assert_eq!(content, &vec![text_block(text.as_str())], "the prompt's blocks");
            format!("user:{text}")
        }
        HistoryEntry::Assistant { text } => format!("assistant:{text}"),
        HistoryEntry::Thought { text } => format!("thought:{text}"),
        HistoryEntry::ToolCall(call) => {
            let status = serde_json::to_value(call.status).expect("status");
            format!("tool:{}:{}:{}", call.title, status.as_str().expect("a string"), call.text())
        }
        HistoryEntry::Summary { text } => format!("summary:{text}"),
        other => format!("unknown:{other:?}"),
    };
    escaped(&line)
}

/// `text` with its newlines escaped: how a reply's entry reads in a `recall` line.
fn escaped(text: &str) -> String {
    text.replace('\n', "\\n")
}

#[async_trait]
impl TurnRunner for Recall {
    async fn run_turn(&self, turn: &Turn) -> Result<StopReason, Error> {
        let text = turn.prompt_text();
        let (verb, rest) = text.split_once(' ').unwrap_or((text.as_str(), ""));
        match verb {
            "recall" => {
                let entries = turn.history(rest.parse().expect("a limit")).await?;
                for entry in &entries {
                    turn.text(format!("{}\n", line(entry))).await;
                }
            }
            "page" => {
                let limit = rest.parse().expect("a limit");
                let mut page = turn.history_page(None, limit).await?;
                loop {
                    assert!(page.entries.len() <= limit, "a page holds at most `limit` entries");
                    turn.text("--\n").await;
                    for entry in &page.entries {
                        turn.text(format!("{}\n", line(entry))).await;
                    }
                    let Some(older) = page.older else { break };
                    page = turn.history_page(Some(&older), limit).await?;
                }
            }
            "think" => {
                turn.thought(rest).await;
                turn.text("ok").await;
            }
            "tool" => {
                let call = turn.start_tool_call("Read file", ToolKind::Read, json!({"path": "/tmp/a"})).await;
                turn.complete_tool_call(&call, vec![text_block("contents")]).await;
                turn.text("read it").await;
            }
            "toolfail" => {
                let call = turn.start_tool_call("Run rm", ToolKind::Execute, json!({"cmd": "rm"})).await;
                turn.fail_tool_call(&call, vec![text_block("refused")]).await;
            }
            "dangling" => {
                turn.start_tool_call("Wait", ToolKind::Other, json!(null)).await;
            }
            "many" => {
                for n in 0..rest.parse::<usize>().expect("a count") {
                    let call = turn.start_tool_call(format!("call {n}"), ToolKind::Other, json!(null)).await;
                    turn.complete_tool_call(&call, vec![text_block(n.to_string())]).await;
                }
            }
            _ => turn.text(text.clone()).await,
        }
        Ok(StopReason::EndTurn)
    }

    fn supports_compaction(&self) -> bool {
        true
    }

    async fn compact(&self, _session: &RunnerSession) -> Result<Option<String>, Error> {
        let n = self.compactions.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        Ok((!self.silent).then(|| format!("summary {n}")))
    }
}

/// An initialized client of a new runner over `store`.
async fn agent(store: Arc<dyn Store>, silent: bool) -> TestClient {
    let turns = Recall { compactions: std::sync::atomic::AtomicUsize::new(0), silent };
    let runner = Runner::new(store, Arc::new(turns));
    let mut client = TestClient::start_agent(runner.agent(runner.options()));
    client.initialize().await;
    client
}

/// Prompts `sid` with `text`; the reply text (what the turn streamed), after checking it ended.
async fn ask(client: &mut TestClient, sid: &str, text: &str) -> String {
    let id = client.prompt(sid, text).await;
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response.pointer("/result/stopReason"), Some(&json!("end_turn")), "{text}: {response}");
    chunk_texts(&before, "agent_message_chunk").concat()
}

/// The lines a `recall` or `page` turn streamed.
fn lines(reply: &str) -> Vec<String> {
    reply.lines().map(str::to_owned).collect()
}

/// Runs the prompts of a conversation with every kind of entry.
async fn converse(client: &mut TestClient, sid: &str) {
    for prompt in ["hello", "think deeply", "tool", "toolfail", "dangling"] {
        ask(client, sid, prompt).await;
    }
}

/// What `recall` reports after [`converse`].
const CONVERSED: [&str; 12] = [
    "user:hello",
    "assistant:hello",
    "user:think deeply",
    "thought:deeply",
    "assistant:ok",
    "user:tool",
    "assistant:read it",
    "tool:Read file:completed:contents",
    "user:toolfail",
    "tool:Run rm:failed:refused",
    "user:dangling",
    "tool:Wait:pending:",
];

/// Loads or resumes (`method`) `sid` in `/tmp`; the replay, if any, is left out.
async fn reopen(client: &mut TestClient, method: &str, sid: &str) {
    let id = client.send_request(method, json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []})).await;
    let (response, _replayed) = client.response_with_preceding(&id).await;
    assert!(response.get("result").is_some(), "{method}: {response}");
}

#[tokio::test]
async fn a_turn_reads_the_conversation_before_it_bounded_by_its_limit() {
    let mut client = agent(Arc::new(acp_facade_runner::MemoryStore::new()), false).await;
    let sid = client.new_session().await;
    assert_eq!(ask(&mut client, &sid, "recall 50").await, "", "a new session has no history");
    converse(&mut client, &sid).await;

    // Its own prompt is not part of it; a step's text comes before its tool calls, as recorded
    // (the step closes once the turn returns); a turn that streamed nothing has no reply entry.
    let reply = ask(&mut client, &sid, "recall 50").await;
    let mut expected = vec!["user:recall 50".to_owned()];
    expected.extend(CONVERSED.map(String::from));
    assert_eq!(lines(&reply), expected);

    let last = ["tool:Wait:pending:".to_owned(), "user:recall 50".to_owned(), format!("assistant:{}", escaped(&reply))];
    assert_eq!(lines(&ask(&mut client, &sid, "recall 3").await), last, "the last three, oldest first");
    assert_eq!(ask(&mut client, &sid, "recall 0").await, "");
    client.hang_up().await;
}

#[tokio::test]
async fn another_runner_reads_the_same_history_after_load_and_resume() {
    for db in Database::all().await {
        let name = db.name();
        let mut first = agent(db.open().await, false).await;
        let sid = first.new_session().await;
        converse(&mut first, &sid).await;
        first.call_ok("session/close", json!({"sessionId": sid})).await;

        let mut second = agent(db.open().await, false).await;
        reopen(&mut second, "session/load", &sid).await;
        let recalled = ask(&mut second, &sid, "recall 50").await;
        assert_eq!(lines(&recalled), CONVERSED, "{name}: after load");
        ask(&mut second, &sid, "after load").await;
        second.call_ok("session/close", json!({"sessionId": sid})).await;

        let mut third = agent(db.open().await, false).await;
        reopen(&mut third, "session/resume", &sid).await;
        let reply = lines(&ask(&mut third, &sid, "recall 4").await);
        assert_eq!(
            reply,
            [
                "user:recall 50".to_owned(),
                format!("assistant:{}", escaped(&recalled)),
                "user:after load".to_owned(),
                "assistant:after load".to_owned()
            ],
            "{name}: after resume: the turns of the second runner are in it, the third's own prompt is not"
        );
        third.call_ok("session/close", json!({"sessionId": sid})).await;
        for client in [first, second, third] {
            client.hang_up().await;
        }
    }
}

#[tokio::test]
async fn compact_leaves_its_summary_in_place_of_what_it_compacted() {
    for db in Database::all().await {
        let name = db.name();
        let mut client = agent(db.open().await, false).await;
        let sid = client.new_session().await;
        converse(&mut client, &sid).await;
        assert_eq!(ask(&mut client, &sid, "/compact").await, "", "{name}");
        assert_eq!(lines(&ask(&mut client, &sid, "recall 50").await), ["summary:summary 1"], "{name}");
        ask(&mut client, &sid, "more").await;
        let expected =
            ["summary:summary 1", "user:recall 50", "assistant:summary:summary 1\\n", "user:more", "assistant:more"];
        assert_eq!(lines(&ask(&mut client, &sid, "recall 50").await), expected, "{name}: summary, then what followed");
        // A second compaction replaces the first summary too.
        ask(&mut client, &sid, "/compact").await;
        assert_eq!(lines(&ask(&mut client, &sid, "recall 50").await), ["summary:summary 2"], "{name}");
        client.call_ok("session/close", json!({"sessionId": sid})).await;

        // The same from the store.
        let mut other = agent(db.open().await, false).await;
        reopen(&mut other, "session/load", &sid).await;
        let expected = ["summary:summary 2", "user:recall 50", "assistant:summary:summary 2\\n"];
        assert_eq!(lines(&ask(&mut other, &sid, "recall 50").await), expected, "{name}: after load");
        client.hang_up().await;
        other.hang_up().await;
    }
}

#[tokio::test]
async fn a_compaction_without_a_summary_leaves_nothing_of_what_it_compacted() {
    let mut client = agent(Arc::new(acp_facade_runner::MemoryStore::new()), true).await;
    let sid = client.new_session().await;
    converse(&mut client, &sid).await;
    ask(&mut client, &sid, "/compact").await;
    assert_eq!(ask(&mut client, &sid, "recall 50").await, "");
    ask(&mut client, &sid, "later").await;
    assert_eq!(lines(&ask(&mut client, &sid, "recall 2").await), ["user:later", "assistant:later"]);
    client.hang_up().await;
}

#[tokio::test]
async fn paging_walks_the_whole_conversation_with_older_pages_from_the_store() {
    for db in Database::all().await {
        let name = db.name();
        let mut client = agent(db.open().await, false).await;
        let sid = client.new_session().await;
        converse(&mut client, &sid).await;
        // More entries than a session holds: the oldest pages come from the journal.
        let many = HISTORY_CACHE_ENTRIES + 10;
        ask(&mut client, &sid, &format!("many {many}")).await;
        let mut expected: Vec<String> = CONVERSED.iter().map(|l| (*l).to_owned()).collect();
        expected.push(format!("user:many {many}"));
        expected.extend((0..many).map(|n| format!("tool:call {n}:completed:{n}")));

        let everything = lines(&ask(&mut client, &sid, &format!("recall {}", expected.len() + 5)).await);
        assert_eq!(everything.len(), expected.len(), "{name}");
        assert_eq!(everything, expected, "{name}: a limit past what is held reads the store");

        let reply = ask(&mut client, &sid, "page 500").await;
        let pages: Vec<Vec<String>> =
            reply.split("--\n").skip(1).map(|page| page.lines().map(str::to_owned).collect()).collect();
        assert_eq!(pages.len(), (expected.len() + 2).div_ceil(500), "{name}");
        assert!(pages.iter().all(|page| !page.is_empty() && page.len() <= 500), "{name}");
        let walked: Vec<String> = pages.into_iter().rev().flatten().collect();
        expected.push(format!("user:recall {}", expected.len() + 5));
        expected.push(format!("assistant:{}\\n", everything.join("\\n")));
        assert_eq!(walked, expected, "{name}: the pages, newest first, are the whole conversation");
        client.hang_up().await;
    }
}
