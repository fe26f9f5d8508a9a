//! `SessionControl`: the facade's control of a live session, handed to a JS live session's
//! `setControl` (the core's [`SessionControl`]).
//!
//! Each method converts its arguments and returns a Promise of the core call's outcome; a refused
//! change rejects with `ERR_ACP_PROTOCOL` (the JSON-RPC code in the message: -32602 for an unknown
//! mode, option or value, -32002 once the session is closed). The ordering and the client's
//! updates are the core's.

use std::sync::Arc;

use acp_facade::acp::{
    AvailableCommand, SessionConfigId, SessionConfigOptionValue, SessionConfigValueId, SessionModeId,
};
use acp_facade::error::Error as AcpError;
use acp_facade::host::SessionControl as CoreControl;
use napi::Env;
use napi::bindgen_prelude::{Either, PromiseRaw};
use napi_derive::napi;
use serde_json::Value;

use crate::error::{Code, Result, acp_rejection, js_error, recode};

/// What a host can change about its live session itself (its mode, a config option, its slash
/// commands), through the path the client's own requests take, so that the client is told. A
/// change made while a prompt of the session is in flight reaches the client in order with the
/// turn's events, before the prompt's response; otherwise at once. Each Promise resolves once the
/// updates are queued for the client.
#[napi]
pub struct SessionControl {
    control: Arc<dyn CoreControl>,
}

impl SessionControl {
    /// Wraps the core's control.
    pub fn new(control: Arc<dyn CoreControl>) -> Self {
        Self { control }
    }
}

/// A Promise of `call`'s value as plain JS data.
fn settle<T: serde::Serialize + Send + 'static>(
    env: &Env,
    call: impl std::future::Future<Output = std::result::Result<T, AcpError>> + Send + 'static,
) -> Result<PromiseRaw<'_, Value>> {
    env.spawn_future(async move {
        let value = call.await.map_err(|e| acp_rejection(&e))?;
        serde_json::to_value(value).map_err(|e| napi::Error::from_reason(e.to_string()))
    })
    .map_err(recode)
}

#[napi]
impl SessionControl {
    /// The session this control acts on.
    #[napi(getter)]
    pub fn session_id(&self) -> String {
        self.control.session_id().0.to_string()
    }

    /// Sets the current mode (the config option `mode`): the client gets `current_mode_update`,
    /// then `config_option_update`; the current mode changes nothing.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn set_mode<'env>(&self, env: &'env Env, mode_id: String) -> Result<PromiseRaw<'env, Value>> {
        let control = self.control.clone();
        settle(env, async move { control.set_mode(SessionModeId::new(mode_id)).await })
    }

    /// Sets one config option (a value id, or a boolean for a boolean option); resolves with the
    /// complete state the client now has.
    #[napi(ts_return_type = "Promise<SessionConfigOption[]>")]
    pub fn set_config_option<'env>(
        &self,
        env: &'env Env,
        config_id: String,
        value: Either<String, bool>,
    ) -> Result<PromiseRaw<'env, Value>> {
        let value = match value {
            Either::A(id) => SessionConfigOptionValue::value_id(SessionConfigValueId::new(id)),
            Either::B(flag) => SessionConfigOptionValue::boolean(flag),
        };
        let control = self.control.clone();
        settle(env, async move { control.set_config_option(SessionConfigId::new(config_id), value).await })
    }

    /// Replaces the session's host-defined slash commands; once advertised (from the session's
    /// first prompt on), a different list is advertised again at once.
    #[napi(ts_args_type = "commands: AvailableCommand[]", ts_return_type = "Promise<void>")]
    pub fn set_commands<'env>(&self, env: &'env Env, commands: Value) -> Result<PromiseRaw<'env, Value>> {
        let commands: Vec<AvailableCommand> = serde_json::from_value(commands)
            .map_err(|e| js_error(Code::InvalidArg, format!("invalid commands: {e}")))?;
        let control = self.control.clone();
        settle(env, async move { control.set_commands(commands).await })
    }
}
