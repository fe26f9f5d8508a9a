//! `initialize`: the client's capabilities, once per connection, and the agent's answer — its
//! protocol version, capabilities, identity and authentication methods.
//!
//! A repeated `initialize` is answered the same way and changes nothing: the first one's client
//! capabilities hold for the whole connection.

use std::sync::Arc;

use agent_client_protocol_schema::ProtocolVersion;
use serde_json::Value;

use super::AgentInner;
use super::capabilities;
use super::wire::{Reply, decode, encode, ready};
use crate::acp::{InitializeRequest, InitializeResponse};

pub(super) fn initialize(this: &Arc<AgentInner>, params: Value) -> Reply {
    let request: InitializeRequest = match decode(params) {
        Ok(r) => r,
        Err(e) => return ready(Err(e)),
    };
    // The first `initialize` declares the client's capabilities for the connection; a repeat is
    // answered the same way and changes nothing (see the module doc).
    if this.client_capabilities.set(request.client_capabilities.clone()).is_err() {
        tracing::debug!("`initialize` again: answered, the first one's client capabilities kept");
    }
    // Echo the client's version when we speak it; otherwise answer the newest we speak.
    let version =
        if request.protocol_version == ProtocolVersion::V1 { request.protocol_version } else { ProtocolVersion::V1 };
    let mut response = InitializeResponse::new(version)
        .agent_capabilities(capabilities::advertised(&this.options))
        .agent_info(this.options.agent_info.clone());
    if let Some(auth) = &this.options.authenticator {
        response = response.auth_methods(capabilities::auth_methods(auth.methods(), &request.client_capabilities));
    }
    ready(encode(&response))
}
