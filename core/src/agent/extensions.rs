//! Extension methods: `_`-prefixed requests and notifications a host registers.
//!
//! ACP reserves method names beginning with `_` for extensions. A host registers handlers for the
//! ones it serves in [`Extensions`] ([`Options::extensions`](super::Options)); the facade routes
//! them and advertises each under `agentCapabilities._meta` (its name as the key, `{}` as the
//! value — ACP's marker for "supported").
//!
//! Invariants:
//! - An unregistered `_` request is `-32601`, an unregistered `_` notification is ignored, like
//!   any unknown method.
//! - Extension methods are not gated by authentication: they belong to the host, which decides.
//! - A request handler's error is answered with its code and message, a panic with `-32603`; a
//!   notification handler runs on the notification worker, one at a time, in arrival order, and a
//!   panic there is logged.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::acp::Meta;
use crate::error::{Error, ErrorExt};
use crate::host::HostResult;

/// A handler of one extension request.
#[async_trait]
pub trait ExtensionMethod: Send + Sync + 'static {
    /// Answers the request: `params` as the client sent them (`null` when absent); the returned
    /// value is the response's `result`.
    async fn call(&self, params: Value) -> HostResult<Value>;
}

/// A handler of one extension notification.
#[async_trait]
pub trait ExtensionNotification: Send + Sync + 'static {
    /// Handles the notification: `params` as the client sent them (`null` when absent).
    async fn notify(&self, params: Value);
}

/// The extension methods and notifications a host serves, by name.
#[derive(Clone, Default)]
pub struct Extensions {
    methods: BTreeMap<String, Arc<dyn ExtensionMethod>>,
    notifications: BTreeMap<String, Arc<dyn ExtensionNotification>>,
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extensions")
            .field("methods", &self.methods.keys().collect::<Vec<_>>())
            .field("notifications", &self.notifications.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Extensions {
    /// No extensions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the handler of the extension request `name` (replacing any earlier one). Fails
    /// (`-32602`) unless the name begins with `_` and has more after it.
    pub fn method(&mut self, name: impl Into<String>, handler: Arc<dyn ExtensionMethod>) -> Result<(), Error> {
        self.methods.insert(checked(name.into())?, handler);
        Ok(())
    }

    /// Registers the handler of the extension notification `name` (replacing any earlier one).
    /// Fails (`-32602`) unless the name begins with `_` and has more after it.
    pub fn notification(
        &mut self,
        name: impl Into<String>,
        handler: Arc<dyn ExtensionNotification>,
    ) -> Result<(), Error> {
        self.notifications.insert(checked(name.into())?, handler);
        Ok(())
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.methods.is_empty() && self.notifications.is_empty()
    }

    /// The handler of the request `name`.
    pub(crate) fn method_handler(&self, name: &str) -> Option<&Arc<dyn ExtensionMethod>> {
        self.methods.get(name)
    }

    /// The handler of the notification `name`.
    pub(crate) fn notification_handler(&self, name: &str) -> Option<&Arc<dyn ExtensionNotification>> {
        self.notifications.get(name)
    }

    /// What `agentCapabilities._meta` advertises: every registered name, as `"name": {}`; `None`
    /// when nothing is registered.
    pub(crate) fn advertised(&self) -> Option<Meta> {
        if self.is_empty() {
            return None;
        }
        let names = self.methods.keys().chain(self.notifications.keys());
        Some(names.map(|name| (name.clone(), Value::Object(serde_json::Map::new()))).collect())
    }
}

fn checked(name: String) -> Result<String, Error> {
    if name.len() > 1 && name.starts_with('_') {
        Ok(name)
    } else {
        Err(Error::invalid_params_msg(format!("extension method names begin with `_`, got `{name}`")))
    }
}
