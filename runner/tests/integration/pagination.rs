//! `session/list` pagination and cursors (property tests), and `session_info_update` from
//! `Agent::observe_session_meta`.

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use acp_facade::acp::SessionId;
use acp_facade::host::SessionCatalogEntry;
use acp_facade::{Agent, Options};
use common::lifecycle::{RichHost, SessionSpec, updates};
use common::{TestClient, code};
use proptest::prelude::*;
use serde_json::{Value, json};

const ABSOLUTE: [&str; 3] = ["/w/one", "/w/two", "/w/three"];
const LIVE_CWDS: [&str; 2] = ["/w/live", "/w/one"];
const FILTERS: [&str; 5] = ["/w/one", "/w/two", "/w/three", "/w/live", "/w/nothing-here"];

/// One catalog entry of a generated scenario.
#[derive(Debug, Clone)]
struct Stored {
    id: String,
    /// 0: no cwd, 1: a relative cwd, 2..: one of [`ABSOLUTE`].
    cwd: usize,
    /// Live on the connection, with this index into [`LIVE_CWDS`].
    live: Option<usize>,
    titled: bool,
}

impl Stored {
    fn catalog_cwd(&self) -> Option<PathBuf> {
        match self.cwd {
            0 => None,
            1 => Some(PathBuf::from("rel/dir")),
            n => Some(PathBuf::from(ABSOLUTE[n - 2])),
        }
    }

    /// The cwd the listing must report: the live registry's first, then an absolute catalog cwd.
    fn resolved_cwd(&self) -> Option<String> {
        match self.live {
            Some(n) => Some(LIVE_CWDS[n].to_owned()),
            None => self.catalog_cwd().filter(|c| c.is_absolute()).map(|c| c.display().to_string()),
        }
    }

    fn entry(&self) -> SessionCatalogEntry {
        SessionCatalogEntry {
            session_id: SessionId::new(self.id.clone()),
            cwd: self.catalog_cwd(),
            additional_directories: Vec::new(),
            title: self.titled.then(|| format!("title of {}", self.id)),
            updated_at: self.titled.then(|| "2025-01-02T03:04:05Z".to_owned()),
        }
    }
}

#[derive(Debug, Clone)]
struct Scenario {
    stored: Vec<Stored>,
    /// Live sessions the catalog does not know: never listed.
    live_only: bool,
    page_size: usize,
    filter: Option<&'static str>,
}

fn session_id() -> impl Strategy<Value = String> {
    // Shared prefixes, and bytes that sort differently from chars-as-lowercase.
    (prop::sample::select(vec!["a", "ab", "abc", "b", "B", "é", "a-"]), "[a-c0-9Z]{0,3}")
        .prop_map(|(prefix, suffix)| format!("{prefix}{suffix}"))
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let stored = (session_id(), 0..5usize, prop::option::weighted(0.3, 0..2usize), any::<bool>())
        .prop_map(|(id, cwd, live, titled)| Stored { id, cwd, live, titled });
    (
        prop::collection::vec(stored, 0..24),
        any::<bool>(),
        1..7usize,
        prop::option::of(prop::sample::select(FILTERS.to_vec())),
    )
        .prop_map(|(stored, live_only, page_size, filter)| {
            let mut seen = BTreeSet::new();
            let stored = stored.into_iter().filter(|s| seen.insert(s.id.clone())).collect();
            Scenario { stored, live_only, page_size, filter }
        })
}

fn run<F: std::future::Future<Output = ()>>(future: F) {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(future);
}

/// Starts an agent over the scenario's catalog with its live sessions resumed on the connection.
async fn start(scenario: &Scenario) -> (Arc<RichHost>, TestClient) {
    let host = RichHost::new(SessionSpec::default());
    *host.catalog.lock().unwrap() = scenario.stored.iter().map(Stored::entry).collect();
    let options =
        Options::new(host.clone()).catalog(host.clone()).resumer(host.clone()).max_page_size(scenario.page_size);
    let mut client = TestClient::initialized(options).await;
    let mut live: Vec<(String, &str)> =
        scenario.stored.iter().filter_map(|s| s.live.map(|n| (s.id.clone(), LIVE_CWDS[n]))).collect();
    if scenario.live_only {
        live.push(("live-only".to_owned(), "/w/live"));
    }
    for (id, cwd) in live {
        host.store(&id, Vec::new());
        client.call_ok("session/resume", json!({"sessionId": id, "cwd": cwd, "mcpServers": []})).await;
    }
    (host, client)
}

fn list_params(filter: Option<&str>, cursor: Option<&str>) -> Value {
    let mut params = serde_json::Map::new();
    if let Some(cwd) = filter {
        params.insert("cwd".into(), json!(cwd));
    }
    if let Some(cursor) = cursor {
        params.insert("cursor".into(), json!(cursor));
    }
    Value::Object(params)
}

/// Follows `nextCursor` from the start; returns every listed session and the number of pages.
async fn list_all(
    client: &mut TestClient,
    filter: Option<&str>,
    page_size: usize,
    bound: usize,
) -> (Vec<Value>, usize) {
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 1..=bound {
        let result = client.call_ok("session/list", list_params(filter, cursor.as_deref())).await;
        let sessions = result["sessions"].as_array().expect("sessions").clone();
        assert!(sessions.len() <= page_size, "page of {} > {page_size}", sessions.len());
        listed.extend(sessions);
        match result.get("nextCursor") {
            None | Some(Value::Null) => return (listed, page),
            Some(next) => cursor = Some(next.as_str().expect("cursor is a string").to_owned()),
        }
    }
    panic!("nextCursor never ended after {bound} pages");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn following_next_cursor_lists_every_matching_session_once_sorted_by_id_bytes(scenario in scenario()) {
        run(async {
            let (_host, mut client) = start(&scenario).await;
            let mut expected: Vec<&Stored> = scenario
                .stored
                .iter()
                .filter(|s| s.resolved_cwd().is_some_and(|c| scenario.filter.is_none_or(|f| f == c)))
                .collect();
            expected.sort_by(|a, b| a.id.as_bytes().cmp(b.id.as_bytes()));
            let bound = scenario.stored.len() + 2;
            let (listed, _) = list_all(&mut client, scenario.filter, scenario.page_size, bound).await;
            let ids: Vec<&str> = listed.iter().map(|s| s["sessionId"].as_str().unwrap()).collect();
            let want: Vec<&str> = expected.iter().map(|s| s.id.as_str()).collect();
            assert_eq!(ids, want, "scenario {scenario:#?}");
            let by_id: HashMap<&str, &&Stored> = expected.iter().map(|s| (s.id.as_str(), s)).collect();
            for info in &listed {
                let stored = by_id[info["sessionId"].as_str().unwrap()];
                assert_eq!(info["cwd"], json!(stored.resolved_cwd().unwrap()), "{info}");
                let title = stored.titled.then(|| format!("title of {}", stored.id));
                assert_eq!(info.get("title").cloned().unwrap_or(Value::Null), json!(title), "{info}");
            }
            client.hang_up().await;
        });
    }

    #[test]
    fn any_altered_or_foreign_cursor_is_invalid_params(
        count in 3..12usize,
        page_size in 1..3usize,
        filter in prop::option::of(prop::sample::select(vec!["/w/one", "/w/two"])),
        other_filter in prop::option::of(prop::sample::select(vec!["/w/one", "/w/two", "/w/three"])),
    ) {
        prop_assume!(other_filter != filter);
        run(async {
            let dir = filter.unwrap_or("/w/one");
            let scenario = Scenario {
                stored: (0..count)
                    .map(|n| Stored {
                        id: format!("s{n:02}"),
                        cwd: 2 + ABSOLUTE.iter().position(|d| *d == dir).unwrap(),
                        live: None,
                        titled: false,
                    })
                    .collect(),
                live_only: false,
                page_size,
                filter,
            };
            let (_host, mut client) = start(&scenario).await;
            let first = client.call_ok("session/list", list_params(filter, None)).await;
            let cursor = first["nextCursor"].as_str().expect("a second page").to_owned();
            // The genuine cursor works.
            client.call_ok("session/list", list_params(filter, Some(&cursor))).await;

            let mut bad: Vec<String> = Vec::new();
            for (i, byte) in cursor.bytes().enumerate() {
                for mask in [0x01u8, 0x02, 0x20] {
                    let mut bytes = cursor.clone().into_bytes();
                    bytes[i] = byte ^ mask;
                    bad.push(String::from_utf8(bytes).unwrap());
                }
            }
            bad.extend((0..cursor.len()).map(|n| cursor[..n].to_owned()));
            for tail in ["A", "=", ".", " ", "\n", ".AAAA"] {
                bad.push(format!("{cursor}{tail}"));
            }
            bad.push(format!(".{cursor}"));
            bad.push(format!("{cursor}{cursor}"));
            for altered in &bad {
                let error = client.call_err("session/list", list_params(filter, Some(altered))).await;
                assert_eq!(code(&error), -32602, "cursor {altered:?} (from {cursor:?}): {error}");
            }

            // Under another cwd filter.
            let error = client.call_err("session/list", list_params(other_filter, Some(&cursor))).await;
            assert_eq!(code(&error), -32602, "{error}");

            // From another agent with the very same catalog.
            let (_other_host, mut other) = start(&scenario).await;
            let foreign = other.call_ok("session/list", list_params(filter, None)).await;
            let foreign = foreign["nextCursor"].as_str().unwrap().to_owned();
            assert_ne!(foreign, cursor, "cursor keys must differ per agent");
            let error = client.call_err("session/list", list_params(filter, Some(&foreign))).await;
            assert_eq!(code(&error), -32602, "{error}");
            other.hang_up().await;
            client.hang_up().await;
        });
    }
}

#[tokio::test]
async fn list_rejects_a_relative_filter_and_lists_nothing_for_no_match() {
    let scenario = Scenario {
        stored: vec![Stored { id: "x".into(), cwd: 2, live: None, titled: false }],
        live_only: false,
        page_size: 2,
        filter: None,
    };
    let (_host, mut client) = start(&scenario).await;
    let error = client.call_err("session/list", json!({"cwd": "w/one"})).await;
    assert_eq!(code(&error), -32602, "{error}");
    let result = client.call_ok("session/list", json!({"cwd": "/elsewhere"})).await;
    assert_eq!(result["sessions"], json!([]));
    assert!(result.get("nextCursor").is_none_or(Value::is_null));
    let result = client.call_ok("session/list", json!({"cursor": null, "cwd": null})).await;
    assert_eq!(result["sessions"].as_array().unwrap().len(), 1);
    client.hang_up().await;
}

#[tokio::test]
async fn list_is_not_offered_without_a_catalog() {
    let host = RichHost::new(SessionSpec::default());
    let mut client = TestClient::start(Options::new(host));
    let init = client.initialize().await;
    assert!(init.pointer("/agentCapabilities/sessionCapabilities/list").is_none_or(Value::is_null), "{init}");
    assert_eq!(code(&client.call_err("session/list", json!({})).await), -32601);
    client.hang_up().await;
}

fn meta(id: &str, title: Option<&str>, updated_at: Option<&str>) -> SessionCatalogEntry {
    SessionCatalogEntry {
        session_id: SessionId::new(id),
        cwd: Some(PathBuf::from("/tmp")),
        additional_directories: Vec::new(),
        title: title.map(str::to_owned),
        updated_at: updated_at.map(str::to_owned),
    }
}

/// Everything the agent sent before the answer to a fresh round trip.
async fn sent_since(client: &mut TestClient) -> Vec<Value> {
    let id = client.send_request("session/list", json!({})).await;
    let (_, before) = client.response_with_preceding(&id).await;
    before
}

#[tokio::test]
async fn observe_session_meta_sends_only_changes_and_only_for_sessions_live_here() {
    let host = RichHost::new(SessionSpec::default());
    let agent = Agent::new(Options::new(host.clone()).catalog(host.clone()).resumer(host.clone()));
    let mut client = TestClient::start_agent(agent.clone());
    client.initialize().await;
    let session = client.new_session().await;
    assert!(sent_since(&mut client).await.is_empty());

    // Nothing known yet: nothing to say.
    agent.observe_session_meta(meta(&session, None, None)).await;
    assert!(sent_since(&mut client).await.is_empty());

    agent.observe_session_meta(meta(&session, Some("First title"), None)).await;
    let sent = sent_since(&mut client).await;
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(sent[0]["params"]["sessionId"], json!(session));
    assert_eq!(sent[0]["params"]["update"], json!({"sessionUpdate": "session_info_update", "title": "First title"}));

    // The same observation again: no change, no update.
    agent.observe_session_meta(meta(&session, Some("First title"), None)).await;
    assert!(sent_since(&mut client).await.is_empty());

    // Only the field that changed is sent.
    agent.observe_session_meta(meta(&session, Some("First title"), Some("2025-01-01T00:00:00Z"))).await;
    let sent = sent_since(&mut client).await;
    assert_eq!(
        updates(&sent).iter().map(|u| u["params"]["update"].clone()).collect::<Vec<_>>(),
        vec![json!({"sessionUpdate": "session_info_update", "updatedAt": "2025-01-01T00:00:00Z"})]
    );
    agent.observe_session_meta(meta(&session, Some("Second title"), Some("2025-01-01T00:00:00Z"))).await;
    let sent = sent_since(&mut client).await;
    assert_eq!(
        updates(&sent).iter().map(|u| u["params"]["update"].clone()).collect::<Vec<_>>(),
        vec![json!({"sessionUpdate": "session_info_update", "title": "Second title"})]
    );
    agent.observe_session_meta(meta(&session, Some("Second title"), Some("2025-01-01T00:00:00Z"))).await;
    assert!(sent_since(&mut client).await.is_empty());

    // Not live here: nothing, whether stored elsewhere or live on another connection.
    agent.observe_session_meta(meta("stored-only", Some("T"), Some("2025-01-01T00:00:00Z"))).await;
    let other_host = RichHost::new(SessionSpec::default());
    other_host.store("elsewhere", Vec::new());
    let other_agent = Agent::new(Options::new(other_host.clone()).resumer(other_host.clone()));
    let mut other = TestClient::start_agent(other_agent.clone());
    other.initialize().await;
    other.call_ok("session/resume", json!({"sessionId": "elsewhere", "cwd": "/tmp"})).await;
    agent.observe_session_meta(meta("elsewhere", Some("T"), None)).await;
    assert!(sent_since(&mut client).await.is_empty());
    other_agent.observe_session_meta(meta("elsewhere", Some("T"), None)).await;
    let id = other.send_request("session/new", json!({"cwd": "/tmp", "mcpServers": []})).await;
    let (_, before) = other.response_with_preceding(&id).await;
    assert_eq!(updates(&before).len(), 1, "the connection where it is live is told");
    other.hang_up().await;

    // Closed: no longer live here.
    client.call_ok("session/close", json!({"sessionId": session})).await;
    agent.observe_session_meta(meta(&session, Some("Third title"), None)).await;
    assert!(sent_since(&mut client).await.is_empty());
    client.hang_up().await;
}

#[cfg(unix)]
#[tokio::test]
async fn the_cwd_filter_finds_a_session_by_the_symlinked_path_it_was_created_with() {
    let base = std::env::temp_dir().join(format!("acp-facade-list-{}", std::process::id()));
    let real = base.join("real");
    let link = base.join("link");
    std::fs::create_dir_all(&real).unwrap();
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let canonical = std::fs::canonicalize(&real).unwrap();

    let host = RichHost::new(SessionSpec::default());
    // The host knows the session but not its cwd: the live registry supplies it.
    *host.catalog.lock().unwrap() = vec![SessionCatalogEntry {
        session_id: SessionId::new("r1"),
        cwd: None,
        additional_directories: Vec::new(),
        title: None,
        updated_at: None,
    }];
    let mut client = TestClient::initialized(Options::new(host.clone()).catalog(host.clone())).await;
    let created = client.call_ok("session/new", json!({"cwd": link, "mcpServers": []})).await;
    assert_eq!(created["sessionId"], json!("r1"));
    for filter in [&link, &real, &canonical] {
        let result = client.call_ok("session/list", json!({"cwd": filter})).await;
        assert_eq!(result["sessions"].as_array().unwrap().len(), 1, "filter {}: {result}", filter.display());
        assert_eq!(result["sessions"][0]["cwd"], json!(canonical));
    }
    let result = client.call_ok("session/list", json!({"cwd": base})).await;
    assert_eq!(result["sessions"], json!([]));
    client.hang_up().await;
    let _ = std::fs::remove_dir_all(&base);
}

/// The seed's rule, spelled out: entries whose cwd cannot be resolved are dropped
/// *after* the page is cut, so they still use up page slots — a page may come back short, even
/// empty, while `nextCursor` is still set — and the cursor stays anchored in the whole catalog.
#[tokio::test]
async fn cwd_less_entries_are_dropped_after_the_page_is_cut() {
    let entry =
        |id: &str, cwd: Option<&str>| SessionCatalogEntry { cwd: cwd.map(PathBuf::from), ..meta(id, None, None) };
    let host = RichHost::new(SessionSpec::default());
    *host.catalog.lock().unwrap() = vec![
        entry("a", None),
        entry("b", Some("/tmp")),
        entry("c", Some("relative/dir")),
        entry("d", None),
        entry("e", Some("/tmp")),
    ];
    let mut client = TestClient::initialized(Options::new(host.clone()).catalog(host.clone()).max_page_size(2)).await;
    let ids = |page: &Value| -> Vec<String> {
        page["sessions"].as_array().unwrap().iter().map(|s| s["sessionId"].as_str().unwrap().to_owned()).collect()
    };
    // [a, b]: a has no cwd, so one session and a cursor.
    let first = client.call_ok("session/list", json!({})).await;
    assert_eq!(ids(&first), ["b"], "{first}");
    let cursor = first["nextCursor"].as_str().expect("more pages").to_owned();
    // [c, d]: neither resolves: an empty page that still points further.
    let second = client.call_ok("session/list", json!({"cursor": cursor})).await;
    assert_eq!(ids(&second), Vec::<String>::new(), "{second}");
    let cursor = second["nextCursor"].as_str().expect("an empty page still has a next one").to_owned();
    // [e]: the end.
    let third = client.call_ok("session/list", json!({"cursor": cursor})).await;
    assert_eq!(ids(&third), ["e"], "{third}");
    assert!(third.get("nextCursor").is_none_or(Value::is_null), "{third}");
    client.hang_up().await;
}
