//! The batteries-included runner for Node: `new Runner(store, turns)` where `turns` is a JS
//! object with `runTurn(turn)` and optional hooks:
//!
//! | JS | core [`TurnRunner`] |
//! |---|---|
//! | `runTurn(turn)` → stop reason (`undefined` is `"end_turn"`) | `run_turn` |
//! | `configOptions()` → `SessionConfigOption[]` | `config_options` |
//! | `commands()` → `AvailableCommand[]` | `commands` |
//! | `title(firstPrompt)` → `string \| null` | `title` |
//! | `compact({ sessionId })` (its presence offers `/compact`) | `supports_compaction`, `compact` |

pub mod postgres;
pub mod sqlite;
pub mod store;
pub mod turn;

use std::sync::{Arc, Mutex, PoisonError};

use acp_facade::acp::{AvailableCommand, SessionConfigOption, StopReason};
use acp_facade::error::Error as AcpError;
use acp_facade::host::LiveSession;
use acp_facade_runner::{RunnerSession, Turn as CoreTurn, TurnRunner};
use async_trait::async_trait;
use napi::Env;
use napi::bindgen_prelude::{ClassInstance, Either3, Object};
use napi_derive::napi;
use serde_json::json;

use crate::agent::{Agent, AgentOptions};
use crate::callback::{Invoker, JsMethod, ignore, no_args, serde_args, serde_convert};
use crate::error::{Code, Result, js_error, recode};

struct JsTurnRunner {
    run_turn: JsMethod,
    /// Calls each turn's `AbortController.abort`.
    invoker: Invoker,
    config_options: Option<JsMethod>,
    commands: Option<JsMethod>,
    title: Option<JsMethod>,
    compact: Option<JsMethod>,
    /// The ids of the config options last handed out, for `turn.configValue`.
    config_ids: Mutex<Vec<String>>,
}

#[async_trait]
impl TurnRunner for JsTurnRunner {
    async fn run_turn(&self, turn: &CoreTurn) -> Result<StopReason, AcpError> {
        let ids = self.config_ids.lock().unwrap_or_else(PoisonError::into_inner).clone();
        turn::run(&self.run_turn, &self.invoker, turn, &ids).await
    }

    fn config_options(&self) -> Vec<SessionConfigOption> {
        let Some(method) = &self.config_options else { return Vec::new() };
        match method.call_blocking(no_args(), serde_convert::<Vec<SessionConfigOption>>("config options")) {
            Ok(options) => {
                *self.config_ids.lock().unwrap_or_else(PoisonError::into_inner) =
                    options.iter().map(|o| o.id.0.to_string()).collect();
                options
            }
            Err(e) => {
                tracing::error!(error = %e.message, "the Node turn runner's configOptions failed");
                Vec::new()
            }
        }
    }

    fn commands(&self) -> Vec<AvailableCommand> {
        let Some(method) = &self.commands else { return Vec::new() };
        match method.call_blocking(no_args(), serde_convert::<Vec<AvailableCommand>>("command list")) {
            Ok(commands) => commands,
            Err(e) => {
                tracing::error!(error = %e.message, "the Node turn runner's commands failed");
                Vec::new()
            }
        }
    }

    fn title(&self, first_prompt: &str) -> Option<String> {
        let method = self.title.as_ref()?;
        match method.call_blocking(serde_args(vec![json!(first_prompt)]), serde_convert::<Option<String>>("title")) {
            Ok(title) => title.filter(|t| !t.is_empty()),
            Err(e) => {
                tracing::warn!(error = %e.message, "the Node turn runner's title failed");
                None
            }
        }
    }

    fn supports_compaction(&self) -> bool {
        self.compact.is_some()
    }

    async fn compact(&self, session: &RunnerSession) -> Result<Option<String>, AcpError> {
        match &self.compact {
            Some(method) => {
                method.call(serde_args(vec![json!({ "sessionId": session.id().0 })]), ignore()).await.map(|()| None)
            }
            None => Err(acp_facade::error::ErrorExt::invalid_request_msg("compaction is not supported")),
        }
    }
}

/// A complete ACP agent from one `runTurn` function: sessions, history, replay, list, resume,
/// delete, config options and `/compact` are kept in `store`.
#[napi]
pub struct Runner {
    runner: acp_facade_runner::Runner,
}

#[napi]
impl Runner {
    /// A runner over `store` running turns with `turns`.
    #[napi(constructor, ts_args_type = "store: SqliteStore | PostgresStore | MemoryStore, turns: TurnRunner")]
    pub fn new(
        env: &Env,
        store: Either3<
            ClassInstance<'_, sqlite::SqliteStore>,
            ClassInstance<'_, postgres::PostgresStore>,
            ClassInstance<'_, store::MemoryStore>,
        >,
        turns: Object<'_>,
    ) -> Result<Self> {
        let store = match store {
            Either3::A(sqlite) => sqlite.store(),
            Either3::B(postgres) => postgres.store(),
            Either3::C(memory) => memory.store(),
        };
        let run_turn = JsMethod::get(&turns, "runTurn")
            .map_err(recode)?
            .ok_or_else(|| js_error(Code::InvalidArg, "a turn runner needs a `runTurn` method"))?;
        let turns = JsTurnRunner {
            run_turn,
            invoker: Invoker::new(env).map_err(recode)?,
            config_options: JsMethod::get(&turns, "configOptions").map_err(recode)?,
            commands: JsMethod::get(&turns, "commands").map_err(recode)?,
            title: JsMethod::get(&turns, "title").map_err(recode)?,
            compact: JsMethod::get(&turns, "compact").map_err(recode)?,
            config_ids: Mutex::default(),
        };
        Ok(Self { runner: acp_facade_runner::Runner::new(store, Arc::new(turns)) })
    }

    /// An agent serving this runner's sessions (one agent per connection); with an
    /// `authenticator`, its session methods need `authenticate` first.
    #[napi(
        ts_args_type = "options?: AgentOptions | undefined | null, authenticator?: Authenticator | undefined | null"
    )]
    pub fn agent(
        &self,
        env: &Env,
        options: Option<AgentOptions<'_>>,
        authenticator: Option<Object<'_>>,
    ) -> Result<Agent> {
        let mut core = crate::agent::apply_options(self.runner.options(), options)?;
        if let Some(object) = authenticator {
            let auth = crate::host::authenticator(env, &object)
                .map_err(recode)?
                .ok_or_else(|| js_error(Code::InvalidArg, "an authenticator needs an `authenticate` method"))?;
            core = core.authenticator(auth);
        }
        Ok(Agent::from_core(self.runner.agent(core)))
    }

    /// Whether this runner has `sessionId` live (open on some connection).
    #[napi]
    pub fn is_live(&self, session_id: String) -> bool {
        self.runner.live_session(&acp_facade::acp::SessionId::new(session_id)).is_some()
    }
}
