//! A first end-to-end check of the prompt path through the in-memory client.

use crate::common;

use acp_facade::Options;
use acp_facade::harness::{EventKind, TokenChannel};
use common::host::ScriptedHost;
use common::{TestClient, chunk_texts};
use serde_json::json;

#[tokio::test]
async fn a_prompt_streams_and_ends() {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let session = client.new_session().await;
    let id = client.prompt(&session, "hi").await;
    let s = host.session(&session);
    let (command, _) = s.next_submit().await;
    s.start_turn(&command, ("l1", "t1"));
    s.live(("l1", "t1"), EventKind::TokenDelta { text: "hello".into(), channel: TokenChannel::Message });
    s.durable(("l1", "t1"), EventKind::TurnDone { message: None, stop: None });
    let (response, before) = client.response_with_preceding(&id).await;
    assert_eq!(response["result"], json!({"stopReason": "end_turn"}));
    assert_eq!(chunk_texts(&before, "agent_message_chunk"), vec!["hello"]);
    client.hang_up().await;
}
