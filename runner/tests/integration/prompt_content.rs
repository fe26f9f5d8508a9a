//! Prompt content beyond text: image, audio and embedded-resource blocks are refused (`-32602`,
//! naming the block) unless `promptCapabilities` advertises them — before the host sees the
//! prompt, whether the prompt's text blocks took the fast decoder or not; resource links always
//! pass. What is advertised reaches the host typed, in order.

use crate::common;

use std::time::Duration;

use acp_facade::Options;
use acp_facade::acp::{ContentBlock, EmbeddedResourceResource, PromptCapabilities};
use acp_facade::harness::EventKind;
use common::host::ScriptedHost;
use common::rich::{prompt_blocks, rich_client, rich_runner};
use common::{TestClient, code, error_of};
use serde_json::{Value, json};

fn image() -> Value {
    json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="})
}

fn audio() -> Value {
    json!({"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="})
}

fn resource() -> Value {
    json!({"type": "resource", "resource": {"uri": "file:///tmp/notes.md", "text": "héllo", "mimeType": "text/markdown"}})
}

fn link() -> Value {
    json!({"type": "resource_link", "uri": "file:///tmp/a.rs", "name": "a.rs"})
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

#[tokio::test]
async fn blocks_not_advertised_are_refused_before_the_host_sees_the_prompt() {
    let host = ScriptedHost::new();
    let mut client = TestClient::initialized(Options::new(host.clone())).await;
    let sid = client.new_session().await;
    let session = host.session(&sid);
    let cases = [
        (vec![image()], 0, "image"),
        (vec![audio()], 0, "audio"),
        (vec![resource()], 0, "resource"),
        // Text first (the fast decoder's shape up to the block it refuses), then the block.
        (vec![text("look"), image()], 1, "image"),
        (vec![link(), text("and"), audio()], 2, "audio"),
    ];
    for (blocks, index, what) in cases {
        let id = prompt_blocks(&mut client, &sid, json!(blocks), None).await;
        let error = error_of(&client.response(&id).await);
        assert_eq!(code(&error), -32602, "{blocks:?}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(&format!("prompt[{index}]")) && message.contains(what), "{message}");
    }
    // The host never saw any of them.
    assert!(session.next_submit_or(tokio::time::sleep(Duration::from_millis(100))).await.is_none());
    // Text and resource links always pass.
    let id = prompt_blocks(&mut client, &sid, json!([text("read"), link()]), None).await;
    let (command, prompt) = session.next_submit().await;
    assert!(
        matches!(prompt.as_slice(), [ContentBlock::Text(_), ContentBlock::ResourceLink(l)] if l.uri == "file:///tmp/a.rs")
    );
    session.start_turn(&command, ("l", "t"));
    session.durable(("l", "t"), EventKind::TurnDone { message: None, stop: None });
    assert_eq!(client.response(&id).await["result"]["stopReason"], "end_turn");
}

#[tokio::test]
async fn the_initialize_response_advertises_what_the_options_accept() {
    let host = ScriptedHost::new();
    let mut client = TestClient::start(Options::new(host.clone()));
    let caps = client.initialize().await["agentCapabilities"].clone();
    assert_eq!(caps["promptCapabilities"], json!({"image": false, "audio": false, "embeddedContext": false}));
    let options = Options::new(host).prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true));
    let mut client = TestClient::start(options);
    let caps = client.initialize().await["agentCapabilities"].clone();
    assert_eq!(caps["promptCapabilities"], json!({"image": true, "audio": false, "embeddedContext": true}));
}

#[tokio::test]
async fn advertised_blocks_reach_the_runner_turn_typed_and_in_order() {
    let (runner, turns) = rich_runner();
    let mut client = rich_client(&runner, |o| {
        o.prompt_capabilities(PromptCapabilities::new().image(true).audio(true).embedded_context(true))
    })
    .await;
    let sid = client.new_session().await;
    let id = prompt_blocks(&mut client, &sid, json!([image(), audio(), resource(), link(), text("all")]), None).await;
    assert_eq!(client.response(&id).await["result"]["stopReason"], "end_turn");
    let seen = turns.seen().pop().expect("the turn ran");
    match seen.blocks.as_slice() {
        [
            ContentBlock::Image(image),
            ContentBlock::Audio(audio),
            ContentBlock::Resource(resource),
            ContentBlock::ResourceLink(link),
            ContentBlock::Text(text),
        ] => {
            assert_eq!((image.mime_type.as_str(), image.data.as_str()), ("image/png", "iVBORw0KGgo="));
            assert_eq!(audio.mime_type, "audio/wav");
            let EmbeddedResourceResource::TextResourceContents(contents) = &resource.resource else {
                panic!("a text resource: {resource:?}");
            };
            assert_eq!((contents.uri.as_str(), contents.text.as_str()), ("file:///tmp/notes.md", "héllo"));
            assert_eq!(link.name, "a.rs");
            assert_eq!(text.text, "all");
        }
        other => panic!("blocks out of shape: {other:?}"),
    }
    // Audio is refused by an agent that advertises only images.
    let mut client = rich_client(&runner, |o| o.prompt_capabilities(PromptCapabilities::new().image(true))).await;
    let sid = client.new_session().await;
    let before = turns.seen().len();
    let id = prompt_blocks(&mut client, &sid, json!([image(), audio()]), None).await;
    assert_eq!(code(&error_of(&client.response(&id).await)), -32602);
    assert_eq!(turns.seen().len(), before, "the refused prompt never ran");
}
