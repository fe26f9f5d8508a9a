//! Extension methods served by JS functions (the core's [`acp_facade::agent::Extensions`]): the
//! `extensionMethods` and `extensionNotifications` of `AgentOptions`. Each handler is called
//! through a [`JsMethod`] of its own (an agent has a handful); the core checks the names, routes
//! the calls and advertises them.

use std::collections::HashMap;
use std::sync::Arc;

use acp_facade::agent::{ExtensionMethod, ExtensionNotification, Extensions};
use acp_facade::host::HostResult;
use async_trait::async_trait;
use napi::bindgen_prelude::{Function, Unknown};
use serde_json::Value;

use crate::callback::{JsMethod, ignore, serde_args, serde_convert};
use crate::error::{Code, Result, js_error, recode};

/// A JS function, as an option holds it.
pub type JsFunction<'a> = Function<'a, Unknown<'static>, Unknown<'static>>;

/// One JS handler.
struct JsExtension(JsMethod);

#[async_trait]
impl ExtensionMethod for JsExtension {
    async fn call(&self, params: Value) -> HostResult<Value> {
        self.0.call(serde_args(vec![params]), serde_convert("extension method result")).await
    }
}

#[async_trait]
impl ExtensionNotification for JsExtension {
    async fn notify(&self, params: Value) {
        if let Err(e) = self.0.call(serde_args(vec![params]), ignore()).await {
            tracing::warn!(method = self.0.name(), error = %e.message, "an extension notification handler failed");
        }
    }
}

/// `extensions` with the handlers added; `ERR_ACP_INVALID_ARG` for a name that does not begin
/// with `_`.
pub fn with_handlers(
    mut extensions: Extensions,
    methods: HashMap<String, JsFunction<'_>>,
    notifications: HashMap<String, JsFunction<'_>>,
) -> Result<Extensions> {
    let invalid = |e: acp_facade::Error| js_error(Code::InvalidArg, e.message);
    for (name, function) in methods {
        let handler = JsExtension(JsMethod::from_function(&function, &name).map_err(recode)?);
        extensions.method(name, Arc::new(handler)).map_err(invalid)?;
    }
    for (name, function) in notifications {
        let handler = JsExtension(JsMethod::from_function(&function, &name).map_err(recode)?);
        extensions.notification(name, Arc::new(handler)).map_err(invalid)?;
    }
    Ok(extensions)
}
