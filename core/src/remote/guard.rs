//! The rules every request passes before any ACP is read, in this order:
//! 1. DNS rebinding: an agent bound to a loopback address answers only requests whose `Host` (on
//!    HTTP/2 the `:authority`) is a loopback name (`localhost`, `127.0.0.1`, `[::1]`, with or without a port) — else `403`;
//! 2. `Origin`: a request that carries one must carry an allowed one — else `403`;
//! 3. the bearer token, when a verifier is configured: `Authorization: Bearer TOKEN` mapped to a
//!    principal — else `401` with `WWW-Authenticate: Bearer`.
//!
//! Invariant: the verified principal travels with the request (an extension, [`Principal`]); the
//! handlers read it from there, never from a header.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::Shared;

/// Who a request was verified as: the name the token verifier gave, `None` when the server has
/// no verifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Principal(pub(crate) Option<String>);

/// The guard, as axum middleware.
pub(crate) async fn check(State(shared): State<Arc<Shared>>, mut request: Request, next: Next) -> Response {
    let headers = request.headers();
    // HTTP/1.1 names the host in `Host`, HTTP/2 in the `:authority` pseudo-header (the URI's).
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().authority().map(axum::http::uri::Authority::as_str));
    if shared.local_addr.ip().is_loopback() && !host.is_some_and(host_is_loopback) {
        return refuse(StatusCode::FORBIDDEN, "Host is not a loopback name");
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let allowed = origin
            .to_str()
            .is_ok_and(|origin| shared.config.allowed_origins.iter().any(|o| o.eq_ignore_ascii_case(origin)));
        if !allowed {
            return refuse(StatusCode::FORBIDDEN, "Origin not allowed");
        }
    }
    let principal = match &shared.config.token_verifier {
        None => Principal(None),
        Some(verifier) => {
            let token = headers
                .get(header::AUTHORIZATION)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")))
                .map(str::trim);
            let name = match token {
                Some(token) if !token.is_empty() => verifier(token).await,
                _ => None,
            };
            let Some(name) = name else {
                let mut response = refuse(StatusCode::UNAUTHORIZED, "a valid bearer token is required");
                response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
                return response;
            };
            Principal(Some(name))
        }
    };
    request.extensions_mut().insert(principal);
    next.run(request).await
}

/// Whether a `Host` (or `:authority`) names this machine's loopback interface.
fn host_is_loopback(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        // `[::1]` or `[::1]:port`.
        match rest.split_once(']') {
            Some((ip, tail)) if tail.is_empty() || is_port(tail.strip_prefix(':')) => return ip == "::1",
            _ => return false,
        }
    } else {
        match host.split_once(':') {
            Some((name, port)) if is_port(Some(port)) => name,
            Some(_) => return false,
            None => host,
        }
    };
    name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1"
}

fn is_port(port: Option<&str>) -> bool {
    port.is_some_and(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// A plain-text refusal.
pub(crate) fn refuse(status: StatusCode, reason: &'static str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain")], reason).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_recognised_with_and_without_ports() {
        for ok in ["localhost", "LOCALHOST:80", "127.0.0.1", "127.0.0.1:4000", "[::1]", "[::1]:4000"] {
            assert!(host_is_loopback(ok), "{ok}");
        }
        for bad in
            ["evil.example", "evil.example:80", "127.0.0.1.evil", "localhost:x", "[::2]:1", "[::1]x", "127.0.0.2"]
        {
            assert!(!host_is_loopback(bad), "{bad}");
        }
    }
}
