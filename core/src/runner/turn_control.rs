//! What a turn changes about its session itself (agent-initiated): its mode, its config options,
//! its slash commands — through the facade's [`SessionControl`](crate::host::SessionControl), so
//! that the client is told (`current_mode_update`, `config_option_update`,
//! `available_commands_update`) in order with the turn's own updates, before the prompt's
//! response.

use crate::acp::{
    AvailableCommand, SessionConfigId, SessionConfigOption, SessionConfigOptionValue, SessionConfigValueId,
    SessionModeId,
};
use crate::error::Error;

use super::turn::Turn;

impl Turn {
    /// Switches the session to mode `mode_id` (the config option `mode`), as if the client had
    /// asked: an unknown mode fails (`-32602`) and changes nothing; the current one is a silent
    /// no-op; otherwise the client gets `current_mode_update`, then `config_option_update`.
    pub async fn set_mode(&self, mode_id: impl Into<SessionModeId>) -> Result<(), Error> {
        self.session.served_control()?.set_mode(mode_id.into()).await
    }

    /// Sets the select option `config_id` to `value`, as if the client had asked (see
    /// [`Turn::set_mode`]); returns the complete state the client now has.
    pub async fn set_config_option(
        &self,
        config_id: impl Into<SessionConfigId>,
        value: impl Into<SessionConfigValueId>,
    ) -> Result<Vec<SessionConfigOption>, Error> {
        let value = SessionConfigOptionValue::value_id(value.into());
        self.session.served_control()?.set_config_option(config_id.into(), value).await
    }

    /// Replaces the session's host-defined slash commands (see
    /// [`RunnerSession::set_commands`](super::RunnerSession::set_commands)).
    pub async fn set_commands(&self, commands: Vec<AvailableCommand>) -> Result<(), Error> {
        self.session.set_commands(commands).await
    }
}
