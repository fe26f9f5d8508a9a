//! What a turn changes about its session itself (agent-initiated): its mode, its config options,
//! its slash commands — through the facade's [`SessionControl`](acp_facade::host::SessionControl), so
//! that the client is told (`current_mode_update`, `config_option_update`,
//! `available_commands_update`) in order with the turn's own updates, before the prompt's
//! response.

use acp_facade::acp::{
    AvailableCommand, SessionConfigId, SessionConfigOption, SessionConfigOptionValue, SessionConfigValueId,
    SessionModeId,
};
use acp_facade::error::Error;

use crate::turn::Turn;

impl Turn {
    /// Switches the session to mode `mode_id` (the config option `mode`), as if the client had
    /// asked: an unknown mode fails (`-32602`) and changes nothing; the current one is a silent
    /// no-op; otherwise the client gets `current_mode_update`, then `config_option_update`.
    pub async fn set_mode(&self, mode_id: &str) -> Result<(), Error> {
        self.session.served_control()?.set_mode(SessionModeId::new(mode_id)).await
    }

    /// Sets the select option `config_id` to `value`, as if the client had asked (see
    /// [`Turn::set_mode`]); returns the complete state the client now has.
    pub async fn set_config_option(&self, config_id: &str, value: &str) -> Result<Vec<SessionConfigOption>, Error> {
        let value = SessionConfigOptionValue::value_id(SessionConfigValueId::new(value));
        self.session.served_control()?.set_config_option(SessionConfigId::new(config_id), value).await
    }

    /// Replaces the session's host-defined slash commands (see
    /// [`RunnerSession::set_commands`](crate::RunnerSession::set_commands)).
    pub async fn set_commands(&self, commands: Vec<AvailableCommand>) -> Result<(), Error> {
        self.session.set_commands(commands).await
    }
}
