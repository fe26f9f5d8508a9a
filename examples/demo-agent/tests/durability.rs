//! Durability of the demo's `SQLite` store across a crash: sessions written by a demo process that
//! is killed (`SIGKILL`) mid-turn are listed, loaded (with their user and agent messages) and deleted by
//! the next process on the same `--store`, and a second process running at the same time sees
//! the same sessions.

mod common;

use acp_facade::acp::SessionId;
use acp_facade::harness::EventKind;
use acp_facade_runner::{SqliteStore, Store};
use common::{Demo, TempDir, chunk_texts, stop_reason, update_kinds};
use serde_json::{Value, json};

/// `sessionId → title` of every listed session (following `nextCursor`).
fn listed(demo: &mut Demo) -> Vec<(String, Option<String>)> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({"cursor": c}));
        let page = demo.call_ok("session/list", params);
        for s in page["sessions"].as_array().unwrap() {
            all.push((s["sessionId"].as_str().unwrap().to_owned(), s["title"].as_str().map(str::to_owned)));
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    all.sort();
    all
}

fn ids(list: &[(String, Option<String>)]) -> Vec<&str> {
    list.iter().map(|(id, _)| id.as_str()).collect()
}

/// Loads `sid`; returns the replayed messages (everything before the response).
fn load(demo: &mut Demo, sid: &str) -> Vec<Value> {
    let id = demo.send_request("session/load", json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []}));
    let (response, before) = demo.response_with_preceding(&id);
    assert!(response.get("result").is_some(), "load {sid}: {response}");
    before
}

/// The journal of `sid` (the `SQLite` store's calls finish in their first poll).
fn journal(store: &SqliteStore, sid: &str) -> Vec<acp_facade::harness::Event> {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    runtime.block_on(store.events(&SessionId::new(sid))).expect("read the journal")
}

fn journal_kinds(store: &SqliteStore, sid: &str) -> Vec<String> {
    journal(store, sid)
        .iter()
        .map(|e| {
            let kind = serde_json::to_value(&e.kind).unwrap();
            kind["type"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn sessions_survive_sigkill_mid_turn_and_are_shared_between_processes() {
    let dir = TempDir::new("durability");
    let path = dir.path().join("s.sqlite");
    let store = path.to_str().expect("utf-8 temp path");

    // The first process: finished turns in two sessions, then two turns in flight.
    let mut first = Demo::initialized(&["--store", store]);
    let s1 = first.new_session();
    first.prompt_done(&s1, "hello durable world");
    first.prompt_done(&s1, "think hard");
    let s2 = first.new_session();
    first.prompt_done(&s2, "stream 3");
    let s3 = first.new_session();
    let s4 = first.new_session();
    let _sleeping = first.prompt(&s3, "sleep 5000");
    let _streaming = first.prompt(&s4, "stream 1000000");
    // Both turns are running: the sleeper has been titled, the stream is flowing.
    first.wait_for(|m| {
        m["params"]["sessionId"] == s3.as_str() && m["params"]["update"]["sessionUpdate"] == "session_info_update"
    });
    first.wait_for(|m| m["params"]["update"]["content"]["text"] == "t100 ");
    // A running turn's prompt is journaled within the journal delay (10 ms); the journal is read
    // here through a second connection to the same file, as a restarted agent would.
    {
        let journal = SqliteStore::open(&path).expect("a second connection");
        let started = std::time::Instant::now();
        while [&s3, &s4].iter().any(|sid| journal_kinds(&journal, sid).is_empty()) {
            assert!(started.elapsed() < std::time::Duration::from_secs(10), "the running turns were never journaled");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    first.kill();
    drop(first);

    // What the crash left: both interrupted turns started and never ended.
    {
        let journal = SqliteStore::open(&path).expect("the store opens after a crash");
        for sid in [&s3, &s4] {
            assert_eq!(journal_kinds(&journal, sid), ["turn_started"], "{sid}: killed mid-turn");
        }
        assert_eq!(journal_kinds(&journal, &s2).last().map(String::as_str), Some("turn_done"));
        let last = self::journal(&journal, &s1);
        assert!(matches!(last.last().unwrap().kind, EventKind::TurnDone { .. }));
    }

    // The next process on the same store sees every session, with its title.
    let mut second = Demo::initialized(&["--store", store]);
    let list = listed(&mut second);
    let mut expected = vec![
        (s1.clone(), Some("hello durable world".to_owned())),
        (s2.clone(), Some("stream 3".to_owned())),
        (s3.clone(), Some("sleep 5000".to_owned())),
        (s4.clone(), Some("stream 1000000".to_owned())),
    ];
    expected.sort();
    assert_eq!(list, expected);

    // Load replays the finished turns' user and agent messages.
    let replay = load(&mut second, &s1);
    assert_eq!(chunk_texts(&replay, "user_message_chunk"), ["hello durable world", "think hard"]);
    assert_eq!(chunk_texts(&replay, "agent_thought_chunk"), ["hard"]);
    let agent = chunk_texts(&replay, "agent_message_chunk");
    assert_eq!(agent.len(), 2, "{agent:?}");
    assert_eq!(agent[0], "hello durable world");
    assert_eq!(update_kinds(&replay).last().map(String::as_str), Some("usage_update"));

    // A session killed mid-turn loads with its prompt, and takes new prompts.
    let replay = load(&mut second, &s3);
    assert_eq!(chunk_texts(&replay, "user_message_chunk"), ["sleep 5000"]);
    assert!(chunk_texts(&replay, "agent_message_chunk").is_empty(), "{replay:?}");
    let (response, before) = second.prompt_done(&s3, "stream 2");
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), ["t1 ", "t2 "]);
    let replay = load_after_close(&mut second, &s4);
    assert_eq!(chunk_texts(&replay, "user_message_chunk"), ["stream 1000000"]);

    // Delete works on what the dead process wrote.
    assert_eq!(second.call_ok("session/delete", json!({"sessionId": s2})), json!({}));
    let list = listed(&mut second);
    let mut remaining = vec![s1.as_str(), s3.as_str(), s4.as_str()];
    remaining.sort_unstable();
    assert_eq!(ids(&list), remaining);

    // A third process, running alongside the second, sees the same sessions — and the second
    // sees what the third creates.
    let mut third = Demo::initialized(&["--store", store]);
    assert_eq!(ids(&listed(&mut third)), remaining);
    let s5 = third.new_session();
    third.prompt_done(&s5, "from the third process");
    let list = listed(&mut second);
    assert!(list.contains(&(s5.clone(), Some("from the third process".to_owned()))), "{list:?}");
    // The second process's new turn on s3 is visible to the third.
    let replay = load(&mut third, &s1);
    assert_eq!(chunk_texts(&replay, "user_message_chunk"), ["hello durable world", "think hard"]);
    second.call_ok("session/close", json!({"sessionId": s3}));
    let replay = load(&mut third, &s3);
    assert_eq!(chunk_texts(&replay, "user_message_chunk"), ["sleep 5000", "stream 2"]);
    assert_eq!(chunk_texts(&replay, "agent_message_chunk"), ["t1 t2 "]);

    assert!(second.hang_up(), "clean exit");
    assert!(third.hang_up(), "clean exit");
}

/// Loads `sid` and closes it again.
fn load_after_close(demo: &mut Demo, sid: &str) -> Vec<Value> {
    let replay = load(demo, sid);
    demo.call_ok("session/close", json!({"sessionId": sid}));
    replay
}
