//! `session/set_config_option` and `session/set_mode`, through one `apply_config_option`.
//!
//! `set_mode` is `set_config_option` on the well-known [`MODE_CONFIG_ID`] option, so the two wire
//! methods cannot drift apart. Applying an option:
//! 1. reads the *latest* snapshot from the session's [`RuntimeConfig`](crate::host::RuntimeConfig)
//!    — never a cached one;
//! 2. rejects an unknown option or value (`-32602`) before the controller is consulted;
//! 3. answers a value equal to the current one with success, without calling the controller and
//!    without a notification;
//! 4. otherwise sets it, then sends exactly one `config_option_update` with the complete state and
//!    returns that same state.
//!
//! The host's own changes ([`SessionControl`](crate::host::SessionControl)) take the same path,
//! with one addition: when the change moved the session's mode, a `current_mode_update` precedes
//! the `config_option_update`. ACP defines `current_mode_update` for the agent changing its mode
//! itself (the client's `session/set_mode` and `session/set_config_option` are answered, and
//! followed by the `config_option_update` only): the client that asked knows the new mode.
//!
//! The responses of `session/new`, `load` and `resume` carry the initial state from the same
//! translation. Boolean options are offered only to clients that advertised support for them.

use std::sync::Arc;

use serde_json::Value;

use super::session_state::SessionEntry;
use super::state::AgentInner;
use super::wire::{Reply, decode, encode};
use crate::acp::{
    ConfigOptionUpdate, CurrentModeUpdate, SessionConfigKind, SessionConfigOption, SessionConfigOptionValue,
    SessionConfigSelectOptions, SessionConfigValueId, SessionMode, SessionModeState, SessionUpdate,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use crate::error::{Error, ErrorExt};
pub(super) use crate::host::MODE_CONFIG_ID;

/// A session's config state as the client sees it.
pub(crate) struct ConfigState {
    pub(crate) options: Vec<SessionConfigOption>,
    pub(crate) modes: Option<SessionModeState>,
}

fn client_supports_booleans(agent: &AgentInner) -> bool {
    agent.client_capabilities().session.and_then(|s| s.config_options).and_then(|c| c.boolean).is_some()
}

/// The client's view of a snapshot.
fn translate(agent: &AgentInner, snapshot: Vec<SessionConfigOption>) -> ConfigState {
    let booleans = client_supports_booleans(agent);
    let options: Vec<SessionConfigOption> =
        snapshot.into_iter().filter(|o| booleans || !matches!(o.kind, SessionConfigKind::Boolean(_))).collect();
    let modes = modes_of(&options);
    ConfigState { options, modes }
}

/// The modes served from the mode option, if there is one.
fn modes_of(options: &[SessionConfigOption]) -> Option<SessionModeState> {
    options.iter().find(|o| o.id.0.as_ref() == MODE_CONFIG_ID).and_then(|o| match &o.kind {
        SessionConfigKind::Select(select) => Some(SessionModeState::new(
            select.current_value.0.clone(),
            flat_values(&select.options)
                .map(|v| SessionMode::new(v.value.0.clone(), v.name.clone()).description(v.description.clone()))
                .collect(),
        )),
        _ => None,
    })
}

fn flat_values(
    options: &SessionConfigSelectOptions,
) -> Box<dyn Iterator<Item = &crate::acp::SessionConfigSelectOption> + '_> {
    match options {
        SessionConfigSelectOptions::Ungrouped(values) => Box::new(values.iter()),
        SessionConfigSelectOptions::Grouped(groups) => Box::new(groups.iter().flat_map(|g| g.options.iter())),
        _ => Box::new(std::iter::empty()),
    }
}

/// The initial state for a session's establishment response; `None` without runtime config.
pub(crate) async fn initial_state(agent: &AgentInner, entry: &SessionEntry) -> Result<Option<ConfigState>, Error> {
    let Some(config) = entry.live.config() else {
        return Ok(None);
    };
    Ok(Some(translate(agent, config.snapshot().await?)))
}

/// Who asks for a config change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The client (`session/set_config_option`, `session/set_mode`).
    Client,
    /// The host itself, through its session control.
    Host,
}

/// Validates and applies one option; see the module docs.
pub(crate) async fn apply_config_option(
    agent: &AgentInner,
    entry: &SessionEntry,
    config_id: &str,
    value: SessionConfigOptionValue,
    origin: Origin,
) -> Result<ConfigState, Error> {
    let config = entry.live.config().ok_or_else(|| {
        Error::invalid_params_msg(format!("unknown config option `{config_id}`: this session has none"))
    })?;
    let snapshot = translate(agent, config.snapshot().await?);
    let option = snapshot
        .options
        .iter()
        .find(|o| o.id.0.as_ref() == config_id)
        .ok_or_else(|| Error::invalid_params_msg(format!("unknown config option `{config_id}`")))?;
    let unchanged = match (&option.kind, &value) {
        (SessionConfigKind::Select(select), SessionConfigOptionValue::ValueId { value: wanted }) => {
            if !flat_values(&select.options).any(|v| &v.value == wanted) {
                return Err(Error::invalid_params_msg(format!(
                    "unknown value `{wanted}` for config option `{config_id}`"
                )));
            }
            &select.current_value == wanted
        }
        (SessionConfigKind::Boolean(boolean), SessionConfigOptionValue::Boolean { value: wanted }) => {
            boolean.current_value == *wanted
        }
        _ => {
            return Err(Error::invalid_params_msg(format!("value of the wrong type for config option `{config_id}`")));
        }
    };
    if unchanged {
        return Ok(snapshot);
    }
    config.set_option(option.id.clone(), value).await?;
    let state = translate(agent, config.snapshot().await?);
    if origin == Origin::Host
        && let Some(modes) = &state.modes
        && snapshot.modes.as_ref().is_none_or(|before| before.current_mode_id != modes.current_mode_id)
    {
        let update = SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(modes.current_mode_id.clone()));
        agent.send_update(&entry.id, update).await?;
    }
    let update = SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(state.options.clone()));
    agent.send_update(&entry.id, update).await?;
    Ok(state)
}

/// `session/set_config_option`.
pub(crate) fn set_config_option(agent: &Arc<AgentInner>, params: Value) -> Reply {
    let agent = agent.clone();
    Box::pin(async move {
        check_value_field(&params)?;
        let request: SetSessionConfigOptionRequest = decode(params)?;
        let entry = agent.resolve_session(&request.session_id)?;
        let state = apply_config_option(&agent, &entry, &request.config_id.0, request.value, Origin::Client).await?;
        encode(&SetSessionConfigOptionResponse::new(state.options))
    })
}

/// Names the `value` field when it is missing or of a shape no variant accepts (the wire type is
/// an untagged union whose decoding error would otherwise name nothing).
fn check_value_field(params: &Value) -> Result<(), Error> {
    match (params.get("value"), params.get("type").and_then(Value::as_str)) {
        (None, _) => Err(Error::invalid_params_msg("invalid params at `value`: missing field `value`")),
        (Some(Value::Bool(_)), Some("boolean")) | (Some(Value::String(_)), _) => Ok(()),
        (Some(_), Some("boolean")) => {
            Err(Error::invalid_params_msg("invalid params at `value`: expected a boolean for `\"type\": \"boolean\"`"))
        }
        (Some(_), _) => Err(Error::invalid_params_msg("invalid params at `value`: expected a value id (string)")),
    }
}

/// `session/set_mode`: the mode option, through the same path.
pub(crate) fn set_mode(agent: &Arc<AgentInner>, params: Value) -> Reply {
    let agent = agent.clone();
    Box::pin(async move {
        let request: SetSessionModeRequest = decode(params)?;
        let entry = agent.resolve_session(&request.session_id)?;
        let value = SessionConfigOptionValue::value_id(SessionConfigValueId::new(request.mode_id.0.clone()));
        apply_config_option(&agent, &entry, MODE_CONFIG_ID, value, Origin::Client).await?;
        encode(&SetSessionModeResponse::new())
    })
}
