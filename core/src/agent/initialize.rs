//! `initialize`: the client's capabilities, once per connection, and the agent's answer — its
//! protocol version, capabilities, identity and authentication methods.
//!
//! A repeated `initialize` is answered the same way and changes nothing: the first one's client
//! capabilities (and protocol version) hold for the whole connection. A client asking for 2 or
//! more is answered in v2 when the options serve it ([`super::v2::initialize`]), else 1.

use std::sync::Arc;

use agent_client_protocol_schema::ProtocolVersion;
use serde_json::Value;

use super::AgentInner;
use super::capabilities;
use super::v2;
use super::wire::{Reply, decode, encode, ready};
use crate::acp::{InitializeRequest, InitializeResponse};
use crate::rpc::Answer;

pub(super) fn initialize(this: &Arc<AgentInner>, params: Value) -> Reply {
    if wants_v2(this, &params) {
        return initialize_v2(this, &params);
    }
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

/// Whether this `initialize` is answered in v2: the first one asked for 2 or more and v2 is
/// offered, or it is a repeat on a connection that speaks v2 already.
fn wants_v2(this: &AgentInner, params: &Value) -> bool {
    if this.dialect.is_v2() {
        return true;
    }
    let asks = params.get("protocolVersion").and_then(Value::as_u64).is_some_and(|v| v >= 2);
    asks && this.client_capabilities.get().is_none() && v2::initialize::offered(this)
}

/// `initialize` in v2: the client's capabilities read (the first time), every later line of the
/// connection through the v2 rewriter.
fn initialize_v2(this: &Arc<AgentInner>, params: &Value) -> Reply {
    if this.client_capabilities.set(v2::initialize::client_capabilities(params)).is_ok() {
        // Before the response is queued: it is the first line the rewriter sees in v2.
        this.peer().forbid_direct_writes();
        this.dialect.switch_to_v2();
    }
    ready(Ok(Answer::from(v2::initialize::response(this))))
}
