//! A test [`Authenticator`]: two methods (`token` logs in, `broken` always fails), a login state
//! of its own, optional logout.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use acp_facade::acp::{AuthMethod, AuthMethodAgent, AuthMethodId};
use acp_facade::host::{Authenticator, HostResult};
use async_trait::async_trait;

/// A test authenticator: one or two methods, a login state of its own, optional logout.
pub struct TestAuth {
    logout: bool,
    required: bool,
    pub logins: AtomicUsize,
    pub logouts: AtomicUsize,
    pub logged_in: AtomicBool,
}

impl TestAuth {
    fn build(logout: bool, required: bool) -> Arc<Self> {
        Arc::new(Self {
            logout,
            required,
            logins: AtomicUsize::new(0),
            logouts: AtomicUsize::new(0),
            logged_in: AtomicBool::new(false),
        })
    }

    pub fn new(logout: bool) -> Arc<Self> {
        Self::build(logout, true)
    }

    pub fn optional() -> Arc<Self> {
        Self::build(true, false)
    }
}

#[async_trait]
impl Authenticator for TestAuth {
    fn methods(&self) -> Vec<AuthMethod> {
        vec![
            AuthMethod::Agent(AuthMethodAgent::new("token", "API token").description("Use the stored token")),
            AuthMethod::Agent(AuthMethodAgent::new("broken", "Always fails")),
        ]
    }

    fn requires_authentication(&self) -> bool {
        self.required
    }

    async fn authenticate(&self, method_id: AuthMethodId) -> HostResult<()> {
        if &*method_id.0 == "broken" {
            return Err(acp_facade::Error::new(-32050, "the login server refused"));
        }
        assert_eq!(&*method_id.0, "token", "the facade passed an unadvertised method");
        self.logins.fetch_add(1, Ordering::SeqCst);
        self.logged_in.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn supports_logout(&self) -> bool {
        self.logout
    }

    async fn logout(&self) -> HostResult<()> {
        assert!(self.logout, "logout called although not supported");
        self.logouts.fetch_add(1, Ordering::SeqCst);
        self.logged_in.store(false, Ordering::SeqCst);
        Ok(())
    }
}
