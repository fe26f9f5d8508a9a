//! The batteries-included runner for Node: `new Runner(store, turns)` where `turns` is a JS
//! object with `runTurn(turn)` and optional hooks:
//!
//! | JS | core [`TurnRunner`] |
//! |---|---|
//! | `runTurn(turn)` → stop reason (`undefined` is `"end_turn"`) | `run_turn` |
//! | `configOptions()` → `SessionConfigOption[]` | `config_options` |
//! | `commands()` → `AvailableCommand[]` | `commands` |
//! | `title(firstPrompt)` → `string \| null` | `title` |
//! | `compact({ sessionId })` → summary `string \| undefined` (its presence offers `/compact`) | `supports_compaction`, `compact` |
//! | `acceptsSystemPrompt`: `true`, or a method returning it (read once) | `accepts_system_prompt` |

pub mod postgres;
pub mod session_updates;
pub mod sqlite;
pub mod store;
pub mod turn;

use std::sync::{Arc, Mutex, PoisonError};

use acp_facade::acp::{AvailableCommand, SessionConfigOption, StopReason};
use acp_facade::error::Error as AcpError;
use acp_facade::host::LiveSession;
use acp_facade_runner::{RunnerSession, Turn as CoreTurn, TurnRunner};
use async_trait::async_trait;
use napi::bindgen_prelude::{ClassInstance, Either3, Function, JsObjectValue, Object, Unknown};
use napi::{Env, ValueType};
use napi_derive::napi;
use serde_json::json;

use crate::agent::{Agent, AgentOptions};
use crate::callback::{Convert, Invoker, JsMethod, no_args, serde_args, serde_convert};
use crate::error::{Code, Result, js_error, recode};

struct JsTurnRunner {
    run_turn: JsMethod,
    /// Calls each turn's `AbortController.abort`.
    invoker: Invoker,
    config_options: Option<JsMethod>,
    commands: Option<JsMethod>,
    title: Option<JsMethod>,
    compact: Option<JsMethod>,
    /// `acceptsSystemPrompt`, as read once when the runner was made.
    accepts_system_prompt: bool,
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

    fn accepts_system_prompt(&self) -> bool {
        self.accepts_system_prompt
    }

    async fn compact(&self, session: &RunnerSession) -> Result<Option<String>, AcpError> {
        match &self.compact {
            Some(method) => method.call(serde_args(vec![json!({ "sessionId": session.id().0 })]), summary()).await,
            None => Err(acp_facade::error::ErrorExt::invalid_request_msg("compaction is not supported")),
        }
    }
}

/// What `compact` resolved with: a summary string, or `undefined` for none; anything else is an
/// error naming what it was (the prompt `/compact` then fails with it).
fn summary() -> Convert<Option<String>> {
    Box::new(|_, value| match value.get_type() {
        Ok(ValueType::Undefined) => Ok(None),
        // SAFETY: checked to be a string.
        Ok(ValueType::String) => unsafe { value.cast::<String>() }.map(Some).map_err(|e| {
            acp_facade::error::ErrorExt::internal_msg(format!("the Node turn runner's compact summary: {e}"))
        }),
        other => Err(acp_facade::error::ErrorExt::internal_msg(format!(
            "the Node turn runner's `compact` must resolve to a summary string or undefined, not {}",
            other.map_or_else(|_| "an unknown value".to_owned(), |t| js_type_name(t).to_owned())
        ))),
    })
}

/// `typeof`, as a message names a JS value's type (`null` by name).
fn js_type_name(value_type: ValueType) -> &'static str {
    match value_type {
        ValueType::Null => "null",
        ValueType::Boolean => "a boolean",
        ValueType::Number => "a number",
        ValueType::BigInt => "a bigint",
        ValueType::Symbol => "a symbol",
        ValueType::Object => "an object",
        ValueType::Function => "a function",
        ValueType::External => "an external",
        _ => "an unknown value",
    }
}

/// `acceptsSystemPrompt` of the JS turn runner: a boolean, or a method returning one (called
/// once, here); absent, `false`. Anything else is `ERR_ACP_INVALID_ARG`.
fn accepts_system_prompt(turns: &Object<'_>) -> Result<bool> {
    let value: Unknown<'_> = turns.get_named_property("acceptsSystemPrompt").map_err(recode)?;
    let value = match value.get_type().map_err(recode)? {
        ValueType::Function => {
            // SAFETY: checked to be a function.
            let method: Function<'_, (), Unknown<'_>> = unsafe { value.cast() }.map_err(recode)?;
            method.apply(turns, ()).map_err(recode)?
        }
        _ => value,
    };
    match value.get_type().map_err(recode)? {
        ValueType::Undefined => Ok(false),
        // SAFETY: checked to be a boolean.
        ValueType::Boolean => unsafe { value.cast::<bool>() }.map_err(recode),
        other => Err(js_error(
            Code::InvalidArg,
            format!(
                "a turn runner's `acceptsSystemPrompt` must be a boolean (or a method returning one), not {}",
                js_type_name(other)
            ),
        )),
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
            accepts_system_prompt: accepts_system_prompt(&turns)?,
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
        Ok(Agent::from_core(self.runner.agent(core.clone()), core))
    }

    /// Whether this runner has `sessionId` live (open on some connection).
    #[napi]
    pub fn is_live(&self, session_id: String) -> bool {
        self.runner.live_session(&acp_facade::acp::SessionId::new(session_id)).is_some()
    }
}
