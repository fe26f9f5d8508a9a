//! WebSocket: one ACP connection per socket, one JSON-RPC message per text frame (a binary frame
//! holding UTF-8 is taken as text), both ways. The `101` answer carries `Acp-Connection-Id`, as
//! the official TypeScript SDK's server's does.
//!
//! Invariants: the socket closing (or failing, or a message over the size limit: closed with
//! code 1009) is the client hanging up; the server shutting down hangs up too, and the socket is
//! closed (code 1001) only after the agent's last message was sent. A Ping goes out every
//! keepalive interval ([`RemoteConfig::keepalive_interval`](super::RemoteConfig::keepalive_interval));
//! a client from which nothing came (no Pong, no frame) for two intervals, or that took none of
//! its messages for two intervals while its buffer was full (see `budget`), is hung up with a
//! warning naming the connection and the reason, and the socket closed with code 1008 and that
//! reason (the Close frame is given one interval to go out; a client that reads nothing does not
//! get it, its TCP connection just ends). A socket that cannot be written (it failed, or a write
//! made no progress for the stall timeout) is the client hanging up too.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::http::HeaderValue;
use axum::response::Response;
use futures::stream::SplitSink;
use futures::{SinkExt as _, StreamExt as _};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Shared;
use super::bridge::{self, CONNECTION_ID, Pipe, new_connection_id};
use super::decode::{self, WebSocketText};
use super::guard::Principal;
use super::limit::Slot;

/// Why the server closes a socket whose client stopped reading.
const NOT_READING: &str = "the client stopped reading its messages";
/// Why the server closes a socket whose client answered no ping.
const NOT_ANSWERING: &str = "the client answered no ping";

/// Accepts the upgrade; the socket is served once the handshake is done, holding `slot`.
/// The bytes a WebSocket reads from its socket at a time. tungstenite reserves 128 KiB by default, on
/// every connection, idle ones included; messages are small and a larger one is read in several
/// reads.
const READ_BUFFER: usize = 4 * 1024;

pub(crate) fn upgrade(shared: Arc<Shared>, principal: Principal, upgrade: WebSocketUpgrade, slot: Slot) -> Response {
    let limit = shared.config.body_limit(&shared.options);
    let id = new_connection_id();
    let tasks = shared.tasks.clone();
    let header = HeaderValue::from_str(&id);
    let mut response = upgrade
        .max_message_size(limit)
        .max_frame_size(limit)
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .on_upgrade(move |socket| async move {
            tasks.spawn(serve(socket, shared, principal, id, slot)).await.unwrap_or(());
        });
    if let Ok(value) = header {
        response.headers_mut().insert(CONNECTION_ID, value);
    }
    response
}

/// Serves one socket until the agent has ended.
async fn serve(socket: WebSocket, shared: Arc<Shared>, principal: Principal, id: String, _slot: Slot) {
    shared.connections.websocket_opened();
    let bridge::Opened { pipe, mut outgoing, stalled } = bridge::start(&shared, principal.0.as_deref(), &id);
    let (mut sink, mut incoming) = socket.split();
    let mut pipe = Some(pipe);
    let mut writable = true;
    let mut code = close_code::NORMAL;
    let interval = shared.config.keepalive();
    let mut keepalive = tokio::time::interval_at(Instant::now() + interval, interval);
    keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_heard = Instant::now();
    loop {
        tokio::select! {
            message = incoming.next(), if pipe.is_some() => {
                last_heard = Instant::now();
                match message {
                    Some(Ok(Message::Text(text))) => deliver(pipe.as_ref(), text.as_str()).await,
                    Some(Ok(Message::Binary(bytes))) => match std::str::from_utf8(&bytes) {
                        Ok(text) => deliver(pipe.as_ref(), text).await,
                        Err(_) => deliver(pipe.as_ref(), "\u{fffd}").await,
                    },
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                    Some(Err(e)) => {
                        // A message over the size limit is the one error the socket survives to
                        // be told about (axum does not expose the WebSocket library's error kinds).
                        code = if e.to_string().contains("Message too long") { close_code::SIZE } else { close_code::PROTOCOL };
                        pipe = None;
                    }
                    Some(Ok(Message::Close(_))) | None => pipe = None,
                }
            },
            () = shared.hang_up.cancelled(), if pipe.is_some() => {
                code = close_code::AWAY;
                pipe = None;
            }
            () = stalled.cancelled(), if writable => {
                // The bridge warned, naming the connection, and drops the agent's further messages.
                pipe = None;
                writable = false;
                close(&mut sink, close_code::POLICY, NOT_READING, interval).await;
            }
            _ = keepalive.tick(), if writable && pipe.is_some() => {
                let silent = last_heard.elapsed();
                if silent >= interval.saturating_mul(2) {
                    tracing::warn!(connection = id, silent_for = ?silent, "hanging up a WebSocket client that answered no ping");
                    pipe = None;
                    writable = false;
                    close(&mut sink, close_code::POLICY, NOT_ANSWERING, interval).await;
                } else {
                    writable = send(&mut sink, Message::Ping(axum::body::Bytes::new()), &stalled).await;
                    if !writable {
                        pipe = None;
                    }
                }
            }
            message = outgoing.recv() => match message {
                // The message's share of the buffer is given back once it is sent (or dropped).
                Some(message) if writable => {
                    writable = send(&mut sink, Message::Text(message.text.into()), &stalled).await;
                    if !writable && pipe.take().is_some() {
                        // The socket failed (or a write stalled past the stall timeout).
                        tracing::warn!(connection = id, "hanging up a WebSocket client whose socket failed");
                    }
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

/// Sends one frame, unless the client is hung up for not reading first; `false` when the socket
/// cannot be written any more.
async fn send(sink: &mut SplitSink<WebSocket, Message>, message: Message, stalled: &CancellationToken) -> bool {
    tokio::select! {
        sent = sink.send(message) => sent.is_ok(),
        // The next turn of the loop closes the socket.
        () = stalled.cancelled() => true,
    }
}

/// Sends a Close frame with `code` and `reason`, giving up after `patience`.
async fn close(sink: &mut SplitSink<WebSocket, Message>, code: u16, reason: &'static str, patience: Duration) {
    let frame = CloseFrame { code, reason: reason.into() };
    let _ = tokio::time::timeout(patience, sink.send(Message::Close(Some(frame)))).await;
}

/// Hands one frame's text to the agent.
async fn deliver(pipe: Option<&Pipe>, text: &str) {
    let Some(pipe) = pipe else { return };
    match decode::websocket_text(text) {
        WebSocketText::Json(message) => pipe.send(&message).await,
        WebSocketText::Text(line) => pipe.send_text(&line).await,
    };
}
