//! The client handle (`Client`, `Terminal`): the core's [`client`](acp_facade::client) module,
//! for JavaScript.
//!
//! A [`Client`] wraps a core client: the session's handle (`setup.client`, calls made at once) or
//! a runner turn's (`turn.client`, whose calls are operations of the turn's queue, see
//! [`acp_facade_runner::binding::ops`], so that each goes out after everything the turn did before it).
//! A turn's handle used after its turn ended calls the client at once, as the session's does. A
//! [`Terminal`] wraps a core terminal the same way.
//!
//! Every call returns a Promise, resolved with the converted answer or rejected with the error of
//! its [`ClientError`] ([`crate::error::client_error`]: the `ClientError` subclass of its kind, an
//! `AcpError`; a cancelled call rejects with an `AbortError`). Nothing here decides anything: the
//! checks (capabilities, absolute paths), the cancellation and the release of terminals — on
//! `release`, when the JS object is garbage-collected (its finalizer drops the core terminal),
//! when the turn ends, when the session closes — are the core's.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use acp_facade::acp::{ElicitationId, ElicitationSchema, EnvVariable};
use acp_facade::client::{
    Capabilities, Client as CoreClient, ClientError, ElicitationAnswer, Terminal as CoreTerminal,
};
use acp_facade_runner::binding::ops::{Reply, TerminalCall, TerminalRequest, TurnEnded, TurnOp, TurnOps};
use futures::future::BoxFuture;
use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, JsValue, sys};
use napi_derive::napi;
use serde_json::{Value, json};

use crate::error::{Code, Result, js_error, recode};
use crate::number::u64_arg;
use crate::settle::{self, Deferred, js};

/// The outcome of one call: its answer, the client's error, or the end of the turn it was
/// queued on.
type Outcome<T> = std::result::Result<std::result::Result<T, ClientError>, TurnEnded>;

/// What the client advertised, as `ClientCapabilities` (camelCase).
pub fn capabilities_json(capabilities: &Capabilities) -> Value {
    json!({
        "readTextFile": capabilities.read_text_file(),
        "writeTextFile": capabilities.write_text_file(),
        "terminal": capabilities.terminal(),
        "elicitationForm": capabilities.elicitation_form(),
        "elicitationUrl": capabilities.elicitation_url(),
        "authTerminal": capabilities.auth_terminal(),
        "notices": capabilities.notices(),
        "compaction": capabilities.compaction(),
        "subagents": capabilities.subagents(),
        "planOperations": capabilities.plan_operations(),
        "meta": capabilities.meta(),
    })
}

/// An elicitation answer as `ElicitationAnswer`: `{ action: "accept", values }`,
/// `{ action: "decline" }`, `{ action: "cancel" }` or `{ action: "other", name }`.
fn answer_json(answer: &ElicitationAnswer) -> Value {
    match answer {
        ElicitationAnswer::Accept(values) => json!({"action": "accept", "values": values}),
        ElicitationAnswer::Decline => json!({"action": "decline"}),
        ElicitationAnswer::Cancel => json!({"action": "cancel"}),
        ElicitationAnswer::Other(name) => json!({"action": "other", "name": name}),
        _ => json!({"action": "other", "name": "unknown"}),
    }
}

/// The turn's queue, while the turn runs, for a handle that has one; `None`: call at once.
fn route(ops: Option<&TurnOps>) -> Option<&TurnOps> {
    ops.filter(|ops| !ops.is_closed())
}

/// A Promise of one call queued on `ops` (`op` builds the operation around its reply): the
/// reply settles it wherever the answer arrives, with no task of its own (see [`crate::settle`]).
fn queued<'env, T: Send + 'static, V>(
    env: &'env Env,
    ops: &TurnOps,
    op: impl FnOnce(Reply<std::result::Result<T, ClientError>>) -> TurnOp,
    to_js: impl FnOnce(&Env, T) -> napi::Result<sys::napi_value> + Send + 'static,
) -> Result<PromiseRaw<'env, V>> {
    let (deferred, promise) = settle::deferred(env).map_err(recode)?;
    let reply = Reply::new(move |outcome| settle(deferred, outcome, to_js));
    // An answer's Promise is the pace: the caller awaits it anyway.
    let _ = settle::pushing(|| ops.push(op(reply))).map_err(|e| crate::pace::refused(e, turn_ended))?;
    Ok(promise)
}

/// The turn's queue for a file call, unless it is begun on this thread ([`started`]): the handle
/// has no turn, the turn is over, or the core says so ([`TurnOps::queues_file_call`]).
fn queue_for<'a>(ops: Option<&'a TurnOps>, client: &CoreClient) -> Option<&'a TurnOps> {
    route(ops).filter(|ops| ops.queues_file_call(client))
}

/// A Promise of one call begun on this thread (its request written from here on a quiet
/// connection, see `Client::start_read_text_file`): the checks' refusal rejects it, the answer
/// settles it.
fn started<'env, T: Send + 'static, V>(
    env: &'env Env,
    call: std::result::Result<BoxFuture<'static, std::result::Result<T, ClientError>>, ClientError>,
    to_js: impl FnOnce(&Env, T) -> napi::Result<sys::napi_value> + Send + 'static,
) -> Result<PromiseRaw<'env, V>> {
    direct(env, async move { call?.await }, to_js)
}

/// A Promise of one call made at once.
fn direct<T: Send + 'static, V>(
    env: &Env,
    call: impl Future<Output = std::result::Result<T, ClientError>> + Send + 'static,
    to_js: impl FnOnce(&Env, T) -> napi::Result<sys::napi_value> + Send + 'static,
) -> Result<PromiseRaw<'_, V>> {
    let (deferred, promise) = settle::deferred(env).map_err(recode)?;
    napi::bindgen_prelude::spawn(async move { settle(deferred, Ok(call.await), to_js) });
    Ok(promise)
}

fn turn_ended() -> napi::Error<Code> {
    js_error(Code::TurnEnded, "the turn has ended")
}

/// Settles a call's Promise with `outcome`: resolved with `to_js` of the answer, rejected with
/// the error of a [`ClientError`] (or `ERR_ACP_TURN_ENDED`).
fn settle<T: Send + 'static>(
    deferred: Deferred,
    outcome: Outcome<T>,
    to_js: impl FnOnce(&Env, T) -> napi::Result<sys::napi_value> + Send + 'static,
) {
    deferred.settle(move |env| match outcome {
        Ok(Ok(value)) => to_js(env, value),
        Ok(Err(error)) => Err(crate::error::client_error(env, &error)),
        Err(TurnEnded) => Err(napi::Error::new(napi::Status::GenericFailure, "ERR_ACP_TURN_ENDED: the turn has ended")),
    });
}

/// A JSON answer as a JS value.
fn to_value<'env>(env: &'env Env, value: &Value) -> napi::Result<napi::bindgen_prelude::Unknown<'env>> {
    env.to_js_value(value)
}

/// The agent's handle on the client (the editor): files through its buffers, commands in its
/// terminals, questions to the user. A host gets its session's as `setup.client`; a runner turn
/// gets one tied to the turn as `turn.client`.
///
/// Nothing is sent for a capability the client did not advertise (the Promise rejects with an
/// `UnsupportedError` at once), nor with a relative path (`RelativePathError`). A call is
/// cancelled with its turn (`session/cancel`, close, the client going away): the request is
/// abandoned with `$/cancel_request` and the Promise rejects with an `AbortError`. The client's
/// JSON-RPC error rejects with a `RejectedError` (its `code`, `message` and `data`).
#[napi]
pub struct Client {
    client: CoreClient,
    /// The turn's queue, for a runner turn's handle.
    ops: Option<TurnOps>,
}

impl Client {
    /// The session's handle.
    pub fn session(client: CoreClient) -> Self {
        Self { client, ops: None }
    }

    /// A runner turn's handle, whose calls go through the turn's queue.
    pub fn turn(client: CoreClient, ops: TurnOps) -> Self {
        Self { client, ops: Some(ops) }
    }
}

#[napi]
impl Client {
    /// What the client advertised in `initialize`.
    #[napi(getter, ts_return_type = "ClientCapabilities")]
    pub fn capabilities<'env>(&self, env: &'env Env) -> napi::Result<napi::bindgen_prelude::Unknown<'env>> {
        to_value(env, &capabilities_json(self.client.capabilities()))
    }

    /// The session's id, once the session is established.
    #[napi(getter)]
    pub fn session_id(&self) -> Option<String> {
        self.client.session_id().map(|id| id.0.to_string())
    }

    /// Whether calls through this handle are cancelled now (its turn was cancelled, its session
    /// closed, the client went away).
    #[napi(getter)]
    pub fn is_cancelled(&self) -> bool {
        self.client.is_cancelled()
    }

    /// Reads a text file through the client (`fs/read_text_file`): the editor's buffer when the
    /// file is open, unsaved edits included. `line` is the 1-based first line, `limit` the most
    /// lines to read. A missing file is conventionally the client's -32002 (`RejectedError`).
    #[napi(ts_args_type = "path: string, line?: number | null, limit?: number | null")]
    pub fn read_text_file<'env>(
        &self,
        env: &'env Env,
        path: String,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<PromiseRaw<'env, String>> {
        let path = PathBuf::from(path);
        let to_js = |env: &Env, content: String| js(env, content);
        if let Some(ops) = queue_for(self.ops.as_ref(), &self.client) {
            let request = Box::new((path, line, limit));
            queued(env, ops, |reply| TurnOp::ReadTextFile { request, reply }, to_js)
        } else {
            started(env, self.client.start_read_text_file(path, line, limit), to_js)
        }
    }

    /// Writes a text file through the client (`fs/write_text_file`); the client creates it when
    /// missing.
    #[napi]
    pub fn write_text_file<'env>(&self, env: &'env Env, path: String, content: String) -> Result<PromiseRaw<'env, ()>> {
        let path = PathBuf::from(path);
        let to_js = |env: &Env, (): ()| js(env, ());
        if let Some(ops) = queue_for(self.ops.as_ref(), &self.client) {
            let request = Box::new((path, content));
            queued(env, ops, |reply| TurnOp::WriteTextFile { request, reply }, to_js)
        } else {
            started(env, self.client.start_write_text_file(path, content), to_js)
        }
    }

    /// Starts `command` with `args` in a terminal of the client (`terminal/create`); the command
    /// runs on after the Promise resolves. `env` adds environment variables, `cwd` (absolute) sets
    /// the working directory, `outputByteLimit` caps the output the client keeps.
    #[napi(
        ts_args_type = "command: string, args?: string[], env?: Record<string, string> | EnvVariable[] | null, cwd?: string | null, outputByteLimit?: number | null"
    )]
    pub fn create_terminal<'env>(
        &self,
        env: &'env Env,
        command: String,
        args: Option<Vec<String>>,
        variables: Option<Value>,
        cwd: Option<String>,
        output_byte_limit: Option<f64>,
    ) -> Result<PromiseRaw<'env, Terminal>> {
        let args = args.unwrap_or_default();
        let variables = env_variables(variables)?;
        let cwd = cwd.map(PathBuf::from);
        let output_byte_limit = output_byte_limit.map(|limit| u64_arg("outputByteLimit", limit)).transpose()?;
        let ops = self.ops.clone();
        let to_js = move |env: &Env, terminal: CoreTerminal| js(env, Terminal { terminal: Arc::new(terminal), ops });
        if let Some(turn_ops) = route(self.ops.as_ref()) {
            let request = Box::new(TerminalRequest { command, args, env: variables, cwd, output_byte_limit });
            queued(env, turn_ops, |reply| TurnOp::CreateTerminal { request, reply }, to_js)
        } else {
            let client = self.client.clone();
            let call = async move { client.create_terminal(command, args, variables, cwd, output_byte_limit).await };
            direct(env, call, to_js)
        }
    }

    /// Asks the user to fill in a form (`elicitation/create`, form mode) described by `schema`;
    /// never for secrets (passwords, keys, tokens: use `elicitUrl`). An accepted answer that does
    /// not fit the schema rejects with a `ProtocolError`.
    #[napi(ts_args_type = "message: string, schema: ElicitationSchema", ts_return_type = "Promise<ElicitationAnswer>")]
    pub fn elicit_form<'env>(
        &self,
        env: &'env Env,
        message: String,
        schema: Value,
    ) -> Result<PromiseRaw<'env, napi::bindgen_prelude::Unknown<'env>>> {
        let schema: ElicitationSchema = serde_json::from_value(schema)
            .map_err(|e| js_error(Code::InvalidArg, format!("invalid elicitation schema: {e}")))?;
        let to_js = |env: &Env, answer: ElicitationAnswer| to_value(env, &answer_json(&answer)).map(|v| v.raw());
        if let Some(ops) = route(self.ops.as_ref()) {
            let request = Box::new((message, schema));
            queued(env, ops, |reply| TurnOp::ElicitForm { request, reply }, to_js)
        } else {
            let client = self.client.clone();
            direct(env, async move { client.elicit_form(message, schema).await }, to_js)
        }
    }

    /// Asks the user to open `url` (`elicitation/create`, URL mode) under a fresh elicitation id.
    /// Accepting only means the user agreed to open it: when the step behind it is done, call
    /// `completeElicitation`. A URL that is not absolute rejects with an `InvalidArgumentError`.
    #[napi(ts_return_type = "Promise<UrlElicitation>")]
    pub fn elicit_url<'env>(
        &self,
        env: &'env Env,
        message: String,
        url: String,
    ) -> Result<PromiseRaw<'env, napi::bindgen_prelude::Unknown<'env>>> {
        let to_js = |env: &Env, opened: acp_facade::client::UrlElicitation| {
            let opened = json!({"elicitationId": opened.elicitation_id.0, "answer": answer_json(&opened.answer)});
            to_value(env, &opened).map(|v| v.raw())
        };
        if let Some(ops) = route(self.ops.as_ref()) {
            let request = Box::new((message, url));
            queued(env, ops, |reply| TurnOp::ElicitUrl { request, reply }, to_js)
        } else {
            let client = self.client.clone();
            direct(env, async move { client.elicit_url(message, url).await }, to_js)
        }
    }

    /// Tells the client that the step behind a URL elicitation is done (`elicitation/complete`).
    #[napi]
    pub fn complete_elicitation<'env>(&self, env: &'env Env, elicitation_id: String) -> Result<PromiseRaw<'env, ()>> {
        let elicitation_id = ElicitationId::new(elicitation_id);
        let to_js = |env: &Env, (): ()| js(env, ());
        if let Some(ops) = route(self.ops.as_ref()) {
            queued(env, ops, |reply| TurnOp::CompleteElicitation { elicitation_id, reply }, to_js)
        } else {
            let client = self.client.clone();
            direct(env, async move { client.complete_elicitation(&elicitation_id).await }, to_js)
        }
    }

    /// Releases every terminal created through this handle's turn (the session's handle: every
    /// terminal of the session) and not released yet.
    #[napi]
    pub fn release_terminals<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let to_js = |env: &Env, (): ()| js(env, ());
        if let Some(ops) = route(self.ops.as_ref()) {
            let (deferred, promise) = settle::deferred(env).map_err(recode)?;
            let reply = Reply::new(move |outcome: std::result::Result<(), TurnEnded>| {
                settle(deferred, outcome.map(Ok), to_js);
            });
            let _ = settle::pushing(|| ops.push(TurnOp::ReleaseTerminals { reply }))
                .map_err(|e| crate::pace::refused(e, turn_ended))?;
            Ok(promise)
        } else {
            let client = self.client.clone();
            let call = async move {
                client.release_terminals().await;
                Ok(())
            };
            direct(env, call, to_js)
        }
    }
}

/// `env` as environment variables: `{ NAME: value }` or `[{ name, value }]`.
fn env_variables(value: Option<Value>) -> Result<Vec<EnvVariable>> {
    let invalid = || js_error(Code::InvalidArg, "`env` must map names to strings, or list `{ name, value }` items");
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .into_iter()
            .map(|(name, value)| match value {
                Value::String(value) => Ok(EnvVariable::new(name, value)),
                _ => Err(invalid()),
            })
            .collect(),
        Some(list @ Value::Array(_)) => serde_json::from_value(list).map_err(|_| invalid()),
        Some(_) => Err(invalid()),
    }
}

/// A terminal the client runs for the agent (from `client.createTerminal`).
///
/// Released exactly once: by `release()`, when leaving `await using`
/// (`[Symbol.asyncDispose]`), when the object is garbage-collected, when its turn ends (killed
/// first when the turn was cancelled), or when its session closes. After that every call rejects
/// with a `ReleasedError`, sending nothing (`release()` again resolves and sends nothing).
#[napi]
pub struct Terminal {
    terminal: Arc<CoreTerminal>,
    /// The turn's queue, for a terminal of a runner turn's handle.
    ops: Option<TurnOps>,
}

impl Terminal {
    /// A Promise of a call on the terminal: through the turn's queue while it runs (`call`
    /// names it), else at once (`now` runs it).
    fn call<'env, T: Send + 'static, V, F>(
        &self,
        env: &'env Env,
        call: impl FnOnce(Reply<std::result::Result<T, ClientError>>) -> TerminalCall,
        now: impl FnOnce(Arc<CoreTerminal>) -> F,
        to_js: impl FnOnce(&Env, T) -> napi::Result<sys::napi_value> + Send + 'static,
    ) -> Result<PromiseRaw<'env, V>>
    where
        F: Future<Output = std::result::Result<T, ClientError>> + Send + 'static,
    {
        let terminal = self.terminal.clone();
        if let Some(ops) = route(self.ops.as_ref()) {
            queued(env, ops, |reply| TurnOp::Terminal { terminal, call: call(reply) }, to_js)
        } else {
            direct(env, now(terminal), to_js)
        }
    }
}

#[napi]
impl Terminal {
    /// The terminal's id.
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.terminal.id().0.to_string()
    }

    /// Tool-call content embedding the terminal's live output, `{ type: "terminal", terminalId }`:
    /// put it in a tool call before releasing the terminal.
    #[napi(getter, ts_return_type = "{ type: 'terminal'; terminalId: string }")]
    pub fn content<'env>(&self, env: &'env Env) -> napi::Result<napi::bindgen_prelude::Unknown<'env>> {
        env.to_js_value(&self.terminal.content())
    }

    /// Whether the terminal was released.
    #[napi(getter)]
    pub fn is_released(&self) -> bool {
        self.terminal.is_released()
    }

    /// The output so far (`terminal/output`), whether the client truncated it, and the exit status
    /// once the command has exited.
    #[napi(ts_return_type = "Promise<TerminalOutput>")]
    pub fn output<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, napi::bindgen_prelude::Unknown<'env>>> {
        self.call(
            env,
            TerminalCall::Output,
            |t| async move { t.output().await },
            |env: &Env, output| env.to_js_value(&output).map(|v| v.raw()),
        )
    }

    /// Waits until the command exits (`terminal/wait_for_exit`): its exit code, or the signal that
    /// ended it. Cancelled with the turn, which kills and releases the terminal.
    #[napi(ts_return_type = "Promise<TerminalExitStatus>")]
    pub fn wait_for_exit<'env>(
        &self,
        env: &'env Env,
    ) -> Result<PromiseRaw<'env, napi::bindgen_prelude::Unknown<'env>>> {
        self.call(
            env,
            TerminalCall::WaitForExit,
            |t| async move { t.wait_for_exit().await },
            |env: &Env, status| env.to_js_value(&status).map(|v| v.raw()),
        )
    }

    /// Kills the command (`terminal/kill`); the terminal stays usable until released.
    #[napi]
    pub fn kill<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        self.call(env, TerminalCall::Kill, |t| async move { t.kill().await }, |env: &Env, ()| js(env, ()))
    }

    /// Releases the terminal (`terminal/release`; the client kills the command if it still runs).
    /// Once: a terminal already released sends nothing and resolves.
    #[napi]
    pub fn release<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        self.call(env, TerminalCall::Release, |t| async move { t.release().await }, |env: &Env, ()| js(env, ()))
    }
}
