//! `Connection`: the input half of a caller-supplied transport (see `Agent.serveConnection`).
//! Bytes pushed here are read by the agent in order; `end()` is the client hanging up.

use napi::bindgen_prelude::Buffer;
use napi_derive::napi;
use tokio::sync::mpsc;

use crate::error::{Code, Result, js_error};

/// The agent's input, fed by the caller.
#[napi]
pub struct Connection {
    tx: Option<mpsc::UnboundedSender<Vec<u8>>>,
    rx: Option<mpsc::UnboundedReceiver<Vec<u8>>>,
}

#[napi]
impl Connection {
    /// A new, open input.
    #[napi(constructor)]
    pub fn new() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self { tx: Some(tx), rx: Some(rx) }
    }

    /// Feeds bytes to the agent (any split of the newline-delimited JSON-RPC stream).
    #[napi]
    pub fn push(&self, chunk: Buffer) -> Result<()> {
        let tx = self.tx.as_ref().ok_or_else(|| js_error(Code::Io, "the connection has ended"))?;
        // A send fails only once serving has ended; the bytes have nowhere to go then.
        let _ = tx.send(chunk.to_vec());
        Ok(())
    }

    /// Ends the input: the agent sees the client hang up.
    #[napi]
    pub fn end(&mut self) {
        self.tx = None;
    }
}

impl Default for Connection {
    fn default() -> Self {
        Self::new()
    }
}

impl Connection {
    pub(crate) fn take_input(&mut self) -> Option<mpsc::UnboundedReceiver<Vec<u8>>> {
        self.rx.take()
    }
}
