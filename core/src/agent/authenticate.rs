//! `authenticate` and `logout`: the connection's authentication state, which every session method
//! requires while the host has an authenticator (see the dispatch in the parent module).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::Value;

use super::AgentInner;
use super::wire::{Reply, decode, encode};
use crate::acp::{AuthMethod, AuthenticateRequest, AuthenticateResponse, LogoutResponse};
use crate::error::{Error, ErrorExt};

/// Authenticates the connection with one of the host's non-terminal methods.
pub(super) fn authenticate(this: &Arc<AgentInner>, params: Value) -> Reply {
    let this = this.clone();
    Box::pin(async move {
        let request: AuthenticateRequest = decode(params)?;
        let Some(auth) = this.options.authenticator.clone() else {
            return Err(Error::invalid_params_msg(format!(
                "unknown authentication method `{}`: this agent needs no authentication",
                request.method_id
            )));
        };
        match auth.methods().iter().find(|m| m.id() == &request.method_id) {
            None => {
                return Err(Error::invalid_params_msg(format!(
                    "unknown authentication method `{}`",
                    request.method_id
                )));
            }
            Some(AuthMethod::Terminal(_)) => {
                // The client runs a terminal method itself and reconnects; it never
                // authenticates with one.
                return Err(Error::invalid_params_msg(format!(
                    "authentication method `{}` is a terminal method: the client runs it, it is not authenticated with `authenticate`",
                    request.method_id
                )));
            }
            Some(_) => {}
        }
        auth.authenticate(request.method_id).await?;
        this.authenticated.store(true, Ordering::Release);
        encode(&AuthenticateResponse::new())
    })
}

/// `logout`: the connection is no longer authenticated (when the host supports it, else `-32601`).
pub(super) fn logout(this: &Arc<AgentInner>) -> Reply {
    let this = this.clone();
    Box::pin(async move {
        let auth = this
            .options
            .authenticator
            .clone()
            .filter(|a| a.supports_logout())
            .ok_or_else(|| Error::method_not_found_msg("logout"))?;
        auth.logout().await?;
        this.authenticated.store(false, Ordering::Release);
        encode(&LogoutResponse::new())
    })
}
