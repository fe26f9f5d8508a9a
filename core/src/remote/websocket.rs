//! WebSocket: one ACP connection per socket, one JSON-RPC message per text frame (a binary frame
//! holding UTF-8 is taken as text), both ways. The `101` answer carries `Acp-Connection-Id`, as
//! the official TypeScript SDK's server's does.
//!
//! Invariants: the socket closing (or failing, or a message over the size limit: closed with
//! code 1009) is the client hanging up; the server shutting down hangs up too, and the socket is closed (code 1001) only
//! after the agent's last message was sent.

use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::http::HeaderValue;
use axum::response::Response;
use futures::{SinkExt as _, StreamExt as _};
use serde_json::Value;

use super::Shared;
use super::bridge::{self, CONNECTION_ID, Pipe, new_connection_id};
use super::guard::Principal;

/// Accepts the upgrade; the socket is served once the handshake is done.
pub(crate) fn upgrade(shared: Arc<Shared>, principal: Principal, upgrade: WebSocketUpgrade) -> Response {
    let limit = shared.config.body_limit(&shared.options);
    let id = new_connection_id();
    let tasks = shared.tasks.clone();
    let mut response = upgrade
        .max_message_size(limit)
        .max_frame_size(limit)
        .on_upgrade(move |socket| async move { tasks.spawn(serve(socket, shared, principal)).await.unwrap_or(()) });
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(CONNECTION_ID, value);
    }
    response
}

/// Serves one socket until the agent has ended.
async fn serve(socket: WebSocket, shared: Arc<Shared>, principal: Principal) {
    shared.connections.websocket_opened();
    let (pipe, mut outgoing) =
        bridge::start(shared.options.clone(), principal.0.as_deref(), &shared.in_flight, &shared.tasks);
    let (mut sink, mut incoming) = socket.split();
    let mut pipe = Some(pipe);
    let mut writable = true;
    let mut code = close_code::NORMAL;
    loop {
        tokio::select! {
            message = incoming.next(), if pipe.is_some() => match message {
                Some(Ok(Message::Text(text))) => deliver(pipe.as_ref(), text.as_str()).await,
                Some(Ok(Message::Binary(bytes))) => match std::str::from_utf8(&bytes) {
                    Ok(text) => deliver(pipe.as_ref(), text).await,
                    Err(_) => deliver(pipe.as_ref(), "\u{fffd}").await,
                },
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Err(e)) => {
                    // A message over the size limit is the one error the socket survives to be
                    // told about (axum does not expose the WebSocket library's error kinds).
                    code = if e.to_string().contains("Message too long") { close_code::SIZE } else { close_code::PROTOCOL };
                    pipe = None;
                }
                Some(Ok(Message::Close(_))) | None => pipe = None,
            },
            () = shared.hang_up.cancelled(), if pipe.is_some() => {
                code = close_code::AWAY;
                pipe = None;
            }
            message = outgoing.recv() => match message {
                Some(message) if writable => {
                    writable = sink.send(Message::Text(message.text.into())).await.is_ok();
                }
                Some(_) => {}
                None => break,
            },
        }
    }
    if writable {
        let frame = CloseFrame { code, reason: "".into() };
        let _ = sink.send(Message::Close(Some(frame))).await;
    }
    shared.connections.websocket_closed();
}

/// Hands one frame's text to the agent.
async fn deliver(pipe: Option<&Pipe>, text: &str) {
    let Some(pipe) = pipe else { return };
    match serde_json::from_str::<Value>(text) {
        Ok(message) => pipe.send(&message).await,
        Err(_) => pipe.send_text(text).await,
    };
}
