//! The facade's [`SessionControl`]: what a host changes about its live session itself.
//!
//! Each change is the client's own path: config options and modes through
//! [`apply_config_option`](super::session_set_config_option::apply_config_option), commands through
//! [`commands::set_commands`](super::commands::set_commands); and each is applied through the
//! session's [`ControlQueue`](super::control_queue::ControlQueue), in order with the prompt in
//! flight. The control holds the agent and the session weakly (a host keeps it inside the very
//! session the agent holds); once the session is closed, or another session took its place, every
//! call fails `-32002`.

use std::sync::{Arc, Weak};

use async_trait::async_trait;

use super::commands;
use super::session_set_config_option::{MODE_CONFIG_ID, Origin, apply_config_option};
use super::session_state::SessionEntry;
use super::state::AgentInner;
use crate::acp::{
    AvailableCommand, SessionConfigId, SessionConfigOption, SessionConfigOptionValue, SessionConfigValueId, SessionId,
    SessionModeId,
};
use crate::error::{Error, ErrorExt};
use crate::host::{HostResult, SessionControl};

/// One live session's control, handed to its host.
pub(crate) struct Control {
    id: SessionId,
    agent: Weak<AgentInner>,
    entry: Weak<SessionEntry>,
}

impl Control {
    /// The control of `entry`, served by `agent`.
    pub(crate) fn new(agent: &Arc<AgentInner>, entry: &Arc<SessionEntry>) -> Arc<Self> {
        Arc::new(Self { id: entry.id.clone(), agent: Arc::downgrade(agent), entry: Arc::downgrade(entry) })
    }

    /// The agent and the session, while the session is served and not closing.
    fn served(&self) -> Result<(Arc<AgentInner>, Arc<SessionEntry>), Error> {
        let gone = || Error::unknown_session(&self.id.0);
        let agent = self.agent.upgrade().ok_or_else(gone)?;
        let entry = self.entry.upgrade().ok_or_else(gone)?;
        let current = agent.registry.get(&self.id).ok_or_else(gone)?;
        if !Arc::ptr_eq(&current, &entry) || entry.is_closing() {
            return Err(gone());
        }
        Ok((agent, entry))
    }
}

#[async_trait]
impl SessionControl for Control {
    fn session_id(&self) -> SessionId {
        self.id.clone()
    }

    async fn set_config_option(
        &self,
        config_id: SessionConfigId,
        value: SessionConfigOptionValue,
    ) -> HostResult<Vec<SessionConfigOption>> {
        let (agent, entry) = self.served()?;
        let session = entry.clone();
        session
            .control
            .apply(async move {
                let state = apply_config_option(&agent, &entry, &config_id.0, value, Origin::Host).await?;
                Ok(state.options)
            })
            .await
    }

    async fn set_mode(&self, mode_id: SessionModeId) -> HostResult<()> {
        let value = SessionConfigOptionValue::value_id(SessionConfigValueId::new(mode_id.0));
        self.set_config_option(SessionConfigId::new(MODE_CONFIG_ID), value).await.map(|_| ())
    }

    async fn set_commands(&self, commands: Vec<AvailableCommand>) -> HostResult<()> {
        let (agent, entry) = self.served()?;
        let session = entry.clone();
        session.control.apply(async move { commands::set_commands(&agent, &entry, commands).await }).await
    }
}
