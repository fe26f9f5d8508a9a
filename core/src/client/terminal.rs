//! `terminal/*`: commands the editor runs in its own terminals.
//!
//! A [`Terminal`] is released exactly once (see `link`): by [`Terminal::release`], when the handle
//! is dropped, when the turn that created it ends (a runner turn, or the prompt in flight for the
//! session's own handle, when cancelled), or when the session closes — whichever comes first. A
//! terminal of a cancelled turn, or of a closing session, that may still run is killed first.

use std::path::PathBuf;
use std::sync::Arc;

use super::error::ClientError;
use super::handle::{Client, absolute, decode, require};
use super::link::Lease;
use super::method::{TERMINAL_CREATE, TERMINAL_KILL, TERMINAL_OUTPUT, TERMINAL_RELEASE, TERMINAL_WAIT_FOR_EXIT};
use crate::acp::{
    CreateTerminalRequest, CreateTerminalResponse, EnvVariable, KillTerminalRequest, KillTerminalResponse,
    ReleaseTerminalRequest, TerminalExitStatus, TerminalId, TerminalOutputRequest, TerminalOutputResponse,
    ToolCallContent, WaitForTerminalExitRequest, WaitForTerminalExitResponse,
};
use crate::rpc::RequestError;

impl Client {
    /// Starts `command` with `args` in a terminal of the client (`terminal/create`); the command
    /// runs on after this returns. `env` adds environment variables, `cwd` (absolute) sets the
    /// working directory, `output_byte_limit` caps the output the client keeps (it trims from the
    /// front).
    ///
    /// Fails at once, sending nothing, when the client did not advertise `terminal`
    /// ([`ClientError::Unsupported`]) or `cwd` is relative ([`ClientError::RelativePath`]). When
    /// the turn is cancelled while the client creates the terminal, the call fails
    /// [`ClientError::Cancelled`] and the terminal, once the client names it, is killed and
    /// released.
    ///
    /// ```no_run
    /// # async fn demo(client: &acp_facade::client::Client) -> Result<(), acp_facade::client::ClientError> {
    /// let terminal = client
    ///     .create_terminal("cargo", vec!["test".into()], Vec::new(), Some("/srv/app".into()), Some(64 * 1024))
    ///     .await?;
    /// let status = terminal.wait_for_exit().await?;
    /// let output = terminal.output().await?;
    /// terminal.release().await?;
    /// println!("exit {:?}: {}", status.exit_code, output.output);
    /// # Ok(()) }
    /// ```
    pub async fn create_terminal(
        &self,
        command: impl Into<String>,
        args: Vec<String>,
        env: Vec<EnvVariable>,
        cwd: Option<PathBuf>,
        output_byte_limit: Option<u64>,
    ) -> Result<Terminal, ClientError> {
        require(self.capabilities().terminal(), TERMINAL_CREATE, "terminal")?;
        if let Some(cwd) = &cwd {
            absolute("cwd", cwd)?;
        }
        let (peer, session) = self.ready(TERMINAL_CREATE)?;
        let request = CreateTerminalRequest::new(session.clone(), command)
            .args(args)
            .env(env)
            .cwd(cwd)
            .output_byte_limit(output_byte_limit);
        let scope = self.effective_scope();
        tokio::select! {
            biased;
            () = self.cancelled(scope.as_deref()) => {
                return Err(self.cancelled_call(TERMINAL_CREATE, scope.as_deref()).await);
            }
            () = self.in_order() => {}
        }
        let mut create = {
            let peer = peer.clone();
            Box::pin(async move { peer.request_params(TERMINAL_CREATE, &request).await })
        };
        let outcome = tokio::select! {
            biased;
            () = self.cancelled(scope.as_deref()) => None,
            outcome = &mut create => Some(outcome),
        };
        match outcome {
            Some(Ok(value)) => {
                let response: CreateTerminalResponse = decode(TERMINAL_CREATE, value)?;
                let lease = Lease::new(response.terminal_id);
                self.link.adopt(&lease, scope.as_deref());
                tracing::debug!(terminal = %lease.id, "terminal created");
                Ok(Terminal { client: self.clone(), lease })
            }
            Some(Err(RequestError::Rejected(error))) => Err(ClientError::Rejected { method: TERMINAL_CREATE, error }),
            Some(Err(RequestError::Closed(_))) => Err(self.cancelled_call(TERMINAL_CREATE, scope.as_deref()).await),
            None => {
                // The client may be creating it right now: it gets released as soon as it is named.
                let link = self.link.clone();
                tokio::spawn(async move {
                    if let Ok(value) = create.await
                        && let Ok(response) = decode::<CreateTerminalResponse>(TERMINAL_CREATE, value)
                    {
                        link.dispose(&Lease::new(response.terminal_id), true).await;
                    }
                });
                Err(self.cancelled_call(TERMINAL_CREATE, scope.as_deref()).await)
            }
        }
    }
}

/// A terminal the client runs for the agent; see the module doc for when it is released.
///
/// Its calls are those of the handle that created it: cancelled with that handle's turn or
/// session. After release every call fails with [`ClientError::Released`], sending nothing.
pub struct Terminal {
    client: Client,
    lease: Arc<Lease>,
}

impl std::fmt::Debug for Terminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminal")
            .field("id", &self.lease.id)
            .field("released", &self.lease.is_released())
            .finish_non_exhaustive()
    }
}

impl Terminal {
    /// The terminal's id.
    pub fn id(&self) -> &TerminalId {
        &self.lease.id
    }

    /// Tool-call content embedding this terminal's live output (`{"type": "terminal",
    /// "terminalId"}`); embed it before the terminal is released.
    pub fn content(&self) -> ToolCallContent {
        ToolCallContent::Terminal(crate::acp::Terminal::new(self.lease.id.clone()))
    }

    /// Whether the terminal was released.
    pub fn is_released(&self) -> bool {
        self.lease.is_released()
    }

    fn usable(&self) -> Result<(), ClientError> {
        if self.lease.is_released() {
            return Err(ClientError::Released { terminal_id: self.lease.id.to_string() });
        }
        Ok(())
    }

    /// The output so far (`terminal/output`), whether it was truncated, and the exit status once
    /// the command has exited.
    pub async fn output(&self) -> Result<TerminalOutputResponse, ClientError> {
        self.usable()?;
        let id = self.lease.id.clone();
        let output: TerminalOutputResponse =
            self.client.call(TERMINAL_OUTPUT, |session| TerminalOutputRequest::new(session.clone(), id)).await?;
        if output.exit_status.is_some() {
            self.lease.mark_exited();
        }
        Ok(output)
    }

    /// Waits until the command exits (`terminal/wait_for_exit`): its exit code, or the signal
    /// that ended it. Cancelled with the turn, which kills and releases the terminal.
    pub async fn wait_for_exit(&self) -> Result<TerminalExitStatus, ClientError> {
        self.usable()?;
        let id = self.lease.id.clone();
        let exited: WaitForTerminalExitResponse = self
            .client
            .call(TERMINAL_WAIT_FOR_EXIT, |session| WaitForTerminalExitRequest::new(session.clone(), id))
            .await?;
        self.lease.mark_exited();
        Ok(exited.exit_status)
    }

    /// Kills the command (`terminal/kill`); the terminal stays usable (its output, its exit
    /// status) until released.
    pub async fn kill(&self) -> Result<(), ClientError> {
        self.usable()?;
        let id = self.lease.id.clone();
        let _: KillTerminalResponse =
            self.client.call(TERMINAL_KILL, |session| KillTerminalRequest::new(session.clone(), id)).await?;
        Ok(())
    }

    /// Releases the terminal (`terminal/release`; the client kills the command if it still
    /// runs). Once: a terminal already released (also by the end of its turn or its session)
    /// sends nothing and succeeds.
    ///
    /// The answer is awaited — a release is never abandoned, so it is not cancelled with the turn;
    /// in a cancelled turn or a closing session the terminal is killed and released without
    /// waiting. The client's error answer is [`ClientError::Rejected`] (the terminal counts as
    /// released all the same).
    pub async fn release(&self) -> Result<(), ClientError> {
        if self.lease.is_released() {
            return Ok(());
        }
        let ready = self.client.ready(TERMINAL_RELEASE);
        let Ok((peer, session)) = ready else {
            // Cancelled, closed or gone: release without waiting for an answer.
            self.client.link.dispose(&self.lease, true).await;
            return Ok(());
        };
        if self.lease.take().is_none() {
            return Ok(());
        }
        let request = ReleaseTerminalRequest::new(session.clone(), self.lease.id.clone());
        self.client.in_order().await;
        match peer.request_value(TERMINAL_RELEASE, &request).await {
            Ok(_) | Err(RequestError::Closed(_)) => Ok(()),
            Err(RequestError::Rejected(error)) => Err(ClientError::Rejected { method: TERMINAL_RELEASE, error }),
        }
    }
}

impl Drop for Terminal {
    /// Releases the terminal unless it already was (killing it first when its turn was
    /// cancelled); never waits.
    fn drop(&mut self) {
        if !self.lease.is_released() {
            self.client.link.dispose_now(&self.lease, self.client.is_cancelled());
        }
    }
}
