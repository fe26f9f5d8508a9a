//! `--auth`: the demo's one authentication method, `demo-login`, with logout. While it is on,
//! every session method answers "authentication required" until `authenticate` with
//! `demo-login` succeeds on the connection, and again after `logout` (the facade keeps that
//! state per connection; this part only says a login is needed and accepts it).

use acp_facade::acp::{AuthMethod, AuthMethodAgent, AuthMethodId};
use acp_facade::host::{Authenticator, HostResult};
use async_trait::async_trait;

/// The method's id.
pub const METHOD: &str = "demo-login";

/// The demo's authenticator.
pub struct DemoLogin;

#[async_trait]
impl Authenticator for DemoLogin {
    fn methods(&self) -> Vec<AuthMethod> {
        vec![AuthMethod::Agent(AuthMethodAgent::new(METHOD, "Demo login"))]
    }

    fn requires_authentication(&self) -> bool {
        true
    }

    async fn authenticate(&self, method_id: AuthMethodId) -> HostResult<()> {
        // The facade only passes advertised ids.
        debug_assert_eq!(&*method_id.0, METHOD);
        Ok(())
    }

    fn supports_logout(&self) -> bool {
        true
    }

    async fn logout(&self) -> HostResult<()> {
        Ok(())
    }
}
