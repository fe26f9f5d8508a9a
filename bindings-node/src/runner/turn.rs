//! `Turn`: the JS handle of one running turn.
//!
//! The core's [`Turn`](acp_facade_runner::Turn) is borrowed by `run_turn` for the duration of
//! the turn, so the JS handle drives it through the core's turn-operation queue
//! ([`acp_facade_runner::binding::ops`]): each method converts its arguments and pushes one [`TurnOp`],
//! which [`run`] applies in call order while it awaits the JS `runTurn` Promise. Streaming calls
//! (`text`, `thought`, tool progress, usage, …) always return a Promise: already resolved, or
//! resolved once the backlog is down when the client reads slower than the turn writes (see
//! [`crate::pace`]); calls with an answer
//! (`startToolCall`, `requestPermission`, `askUser`, `history`, and the session's own changes
//! `setMode`, `setConfigOption`, `setCommands`) return a Promise of it.
//!
//! Cancellation: `turn.signal` is an `AbortSignal` aborted on `session/cancel`, `$/cancel_request`
//! or close; `turn.isCancelled` reads the same state synchronously. A turn whose `runTurn` has
//! not settled [`CANCEL_GRACE`] after cancellation ends `cancelled` anyway.
//!
//! Each call has one primary form; the others are shorthands of it, documented as such: tool
//! calls are `startTool` and `updateTool` (`startToolCall`, `toolProgress`, `completeToolCall`,
//! `failToolCall` are shorthands), a permission request is `requestPermissionWithOptions`
//! (`requestPermission` its shorthand without options), a question is `ask` (`askUser` its
//! shorthand for the answer alone).
//!
//! The turn's handle on the client (`turn.client`) is a [`Client`] over the core turn's client
//! whose calls go through the same queue (see [`crate::client`]), as do the session updates of
//! [`super::session_updates`] (notices, plans with ids, subagents).

use std::cell::OnceCell;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use acp_facade::acp::{
    ContentBlock, Cost, McpServer, Meta, PermissionOption, StopReason, SystemPrompt, SystemPromptMode, ToolCallStatus,
    ToolKind,
};
use acp_facade::client::Client as CoreClient;
use acp_facade::error::Error as AcpError;
use acp_facade::harness::content::text_block;
use acp_facade::harness::{ApprovalAction, SlashCommand, ToolCallId};
use acp_facade_runner::binding::ops::{self, PermissionRequest, Reply, TurnOp, TurnOps};
use acp_facade_runner::{
    Permission, PermissionAnswer, Reply as UserReply, ToolCallFields, ToolCallSpec, Turn as CoreTurn,
};
use napi::bindgen_prelude::{
    Function, JsObjectValue, Object, ObjectFinalize, ObjectRef, PromiseRaw, ToNapiValue, Unknown,
};
use napi::{Env, JsValue};
use napi_derive::napi;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::callback::{BuildArgs, Invoker, JsMethod, SharedObject, serde_convert};
use crate::client::{Client, capabilities_json};
use crate::error::{Code, Result, acp_rejection, js_error, recode};
use crate::number::u64_arg;
use crate::settle;

/// How long a cancelled turn's `runTurn` may take to settle before the turn ends anyway.
pub const CANCEL_GRACE: Duration = Duration::from_millis(500);

/// How many entries `turn.history()` returns without a `limit` (as Python's `limit=50`).
const DEFAULT_HISTORY_LIMIT: usize = 50;

/// State shared by the JS handle and [`run`].
struct Shared {
    cancel: CancellationToken,
    abort: OnceLock<JsMethod>,
}

impl Shared {
    fn abort(&self) {
        // Pairs with the fence in [`abort_signal`]: the token's cancellation, then `abort`.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        if let Some(abort) = self.abort.get() {
            abort.call_detached(Box::new(|_| Ok(Vec::new())));
        }
    }
}

/// What the JS handle is built from.
struct TurnInit {
    ops: TurnOps,
    shared: Arc<Shared>,
    invoker: Invoker,
    session_id: String,
    cwd: String,
    prompt: Value,
    prompt_text: String,
    client: CoreClient,
    config: HashMap<String, String>,
    rich: Rich,
}

/// What a prompt carries beside its content, kept typed until JS asks for it.
struct Rich {
    command: Option<SlashCommand>,
    meta: Option<Meta>,
    mcp_servers: Vec<McpServer>,
    /// The client's system prompt for the session (when the turn runner accepts them).
    system_prompt: Option<SystemPrompt>,
}

/// One running turn, handed to `runTurn`.
#[napi(custom_finalize)]
pub struct Turn {
    ops: TurnOps,
    shared: Arc<Shared>,
    session_id: String,
    cwd: String,
    prompt: Value,
    prompt_text: String,
    /// The core turn's handle on the client (cancelled with the turn, ordered after its events).
    client: CoreClient,
    config: HashMap<String, String>,
    rich: Rich,
    /// The turn's `AbortSignal`, made when `signal` is first read: most turns never read it, and
    /// an `AbortController` costs the JS thread an object, two references and their release.
    signal: OnceCell<ObjectRef<false>>,
    /// Calls the controller's `abort` (see [`Shared::abort`]).
    invoker: Invoker,
}

/// How the user answered a question of the turn, as `Reply`.
fn user_reply(reply: UserReply) -> Value {
    match reply {
        UserReply::Answered(value) => serde_json::json!({"kind": "answered", "value": value}),
        UserReply::Declined => serde_json::json!({"kind": "declined"}),
        UserReply::Dismissed => serde_json::json!({"kind": "dismissed"}),
        _ => serde_json::json!({"kind": "cancelled"}),
    }
}

/// A permission answer, as `PermissionAnswer`.
fn permission_answer(answer: PermissionAnswer) -> Value {
    match answer {
        PermissionAnswer::Action(action) => serde_json::json!({"kind": "action", "action": action}),
        PermissionAnswer::Selected(option) => serde_json::json!({"kind": "selected", "optionId": option}),
        _ => serde_json::json!({"kind": "cancelled"}),
    }
}

impl ObjectFinalize for Turn {
    fn finalize(self, env: Env) -> napi::Result<()> {
        match self.signal.into_inner() {
            Some(signal) => signal.unref(&env),
            None => Ok(()),
        }
    }
}

fn content(value: Option<Value>) -> Result<Vec<ContentBlock>> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(text)) => Ok(vec![text_block(text)]),
        Some(other) => {
            serde_json::from_value(other).map_err(|e| js_error(Code::InvalidArg, format!("invalid content: {e}")))
        }
    }
}

/// The text of a client's system prompt: its text blocks, joined (as the core composes it).
fn system_prompt_text(prompt: &SystemPrompt) -> String {
    prompt
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

fn tool_fields(value: Value) -> Result<ToolCallFields> {
    serde_json::from_value(value).map_err(|e| js_error(Code::InvalidArg, format!("invalid tool call: {e}")))
}

pub(super) fn enum_value<T: serde::de::DeserializeOwned>(what: &str, value: &str) -> Result<T> {
    serde_json::from_value(Value::String(value.to_owned()))
        .map_err(|_| js_error(Code::InvalidArg, format!("unknown {what} `{value}`")))
}

pub(super) fn ended() -> napi::Error<Code> {
    js_error(Code::TurnEnded, "the turn has ended")
}

/// The rejection of an answer's Promise whose operation was dropped with its turn.
fn turn_ended_rejection() -> napi::Error {
    napi::Error::new(napi::Status::GenericFailure, "ERR_ACP_TURN_ENDED: the turn has ended")
}

#[napi]
impl Turn {
    /// The session this turn runs in.
    #[napi(getter)]
    pub fn session_id(&self) -> String {
        self.session_id.clone()
    }

    /// The session's working directory.
    #[napi(getter)]
    pub fn cwd(&self) -> String {
        self.cwd.clone()
    }

    /// The prompt's content blocks, as the client sent them.
    #[napi(getter, ts_return_type = "ContentBlock[]")]
    pub fn prompt<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        env.to_js_value(&self.prompt)
    }

    /// The prompt's text blocks, concatenated.
    #[napi(getter)]
    pub fn prompt_text(&self) -> String {
        self.prompt_text.clone()
    }

    /// Aborted when the turn is cancelled (`session/cancel`, `$/cancel_request`, close).
    #[napi(getter, ts_return_type = "AbortSignal")]
    pub fn signal<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        let signal = if let Some(signal) = self.signal.get() {
            signal
        } else {
            let signal = abort_signal(env, &self.invoker, &self.shared)?;
            self.signal.get_or_init(|| signal)
        };
        Ok(signal.get_value(env)?.to_unknown())
    }

    /// Whether the turn was cancelled.
    #[napi(getter)]
    pub fn is_cancelled(&self) -> bool {
        self.shared.cancel.is_cancelled()
    }

    /// The value a select config option had when the turn started (`null` if unknown).
    #[napi]
    pub fn config_value(&self, config_id: String) -> Option<String> {
        self.config.get(&config_id).cloned()
    }

    /// The turn's operation queue.
    pub(super) fn ops(&self) -> &TurnOps {
        &self.ops
    }

    /// The core turn's handle on the client (for what it advertised).
    pub(super) fn core_client(&self) -> &CoreClient {
        &self.client
    }

    fn push<'env>(&self, env: &'env Env, op: TurnOp) -> Result<PromiseRaw<'env, ()>> {
        let pace = self.ops.push(op).map_err(|e| crate::pace::refused(e, ended))?;
        crate::pace::promise(env, pace, || self.ops.drained())
    }

    fn ask<'env, T: Send + ToNapiValue + 'static, R: Send + 'static>(
        &self,
        env: &'env Env,
        make: impl FnOnce(Reply<R>) -> TurnOp,
        map: impl FnOnce(R) -> T + Send + 'static,
    ) -> Result<PromiseRaw<'env, T>> {
        ask(env, &self.ops, make, map)
    }

    /// Streams reply text (`agent_message_chunk`). Returns a Promise: already resolved, or
    /// resolved once the backlog is down when the client reads slower than the turn writes;
    /// `await` it. A caller that never awaits is refused (throws `ERR_ACP_QUEUE_FULL`) at 16384
    /// queued calls.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn text<'env>(&self, env: &'env Env, text: String) -> Result<PromiseRaw<'env, ()>> {
        self.push(env, TurnOp::Text(text))
    }

    /// Streams reasoning (`agent_thought_chunk`); paced like `text`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn thought<'env>(&self, env: &'env Env, text: String) -> Result<PromiseRaw<'env, ()>> {
        self.push(env, TurnOp::Thought(text))
    }

    /// Announces a tool call (`tool_call`, status pending); resolves with its id. A shorthand of
    /// `startTool({ title, kind, rawInput: input, name })`.
    /// @param kind - the ACP tool kind. @default "other"
    /// @param name - the tool's programmatic name (`name`, shown beside the title: the tool as the
    /// model calls it). @default none
    #[napi(ts_args_type = "title: string, kind?: ToolKind | null, input?: unknown, name?: string | null")]
    pub fn start_tool_call<'env>(
        &self,
        env: &'env Env,
        title: String,
        kind: Option<String>,
        input: Option<Value>,
        name: Option<String>,
    ) -> Result<PromiseRaw<'env, String>> {
        let kind = match kind {
            Some(kind) => enum_value::<ToolKind>("tool kind", &kind)?,
            None => ToolKind::Other,
        };
        let input = input.unwrap_or(Value::Null);
        if let Some(name) = name {
            let spec = Box::new(ToolCallSpec::new(title).name(name).kind(kind).raw_input(input));
            return self.ask(env, |reply| TurnOp::StartTool { spec, reply }, |id: ToolCallId| id.to_string());
        }
        let input = Box::new(input);
        self.ask(env, |reply| TurnOp::StartToolCall { title, kind, input, reply }, |id: ToolCallId| id.to_string())
    }

    /// Reports progress of a tool call (`tool_call_update`): a new status and/or new content
    /// (replacing earlier content); paced like `text`. A shorthand of
    /// `updateTool(callId, { status, content })`.
    #[napi(
        ts_args_type = "callId: string, status?: ToolCallStatus | null, content?: ContentBlock[] | string | null",
        ts_return_type = "Promise<void>"
    )]
    pub fn tool_progress<'env>(
        &self,
        env: &'env Env,
        call_id: String,
        status: Option<String>,
        content: Option<Value>,
    ) -> Result<PromiseRaw<'env, ()>> {
        let status = status.map(|s| enum_value::<ToolCallStatus>("tool call status", &s)).transpose()?;
        let content = match content {
            None | Some(Value::Null) => None,
            some => Some(self::content(some)?),
        };
        self.push(env, TurnOp::ToolProgress { call_id: ToolCallId::new(call_id), status, content })
    }

    /// Finishes a tool call successfully (`tool_call_update`, status completed), with `output`
    /// as its content when not empty. A shorthand of
    /// `updateTool(callId, { status: "completed", content: output })`.
    #[napi(ts_args_type = "callId: string, output?: ContentBlock[] | string", ts_return_type = "Promise<void>")]
    pub fn complete_tool_call<'env>(
        &self,
        env: &'env Env,
        call_id: String,
        output: Option<Value>,
    ) -> Result<PromiseRaw<'env, ()>> {
        let output = content(output)?;
        self.push(env, TurnOp::CompleteToolCall { call_id: ToolCallId::new(call_id), output })
    }

    /// Finishes a tool call as failed (`tool_call_update`, status failed), with `output` as its
    /// content when not empty. A shorthand of
    /// `updateTool(callId, { status: "failed", content: output })`.
    #[napi(ts_args_type = "callId: string, output?: ContentBlock[] | string", ts_return_type = "Promise<void>")]
    pub fn fail_tool_call<'env>(
        &self,
        env: &'env Env,
        call_id: String,
        output: Option<Value>,
    ) -> Result<PromiseRaw<'env, ()>> {
        let output = content(output)?;
        self.push(env, TurnOp::FailToolCall { call_id: ToolCallId::new(call_id), output })
    }

    /// Announces a tool call (`tool_call`) with any of its fields, in ACP's wire form: `title`
    /// (required), `name` (the tool's programmatic name, shown beside the title; none when absent),
    /// `kind` (`"other"` when absent), `status` (`"pending"`), `content` (content
    /// blocks as `{type: "content", content}`, diffs, terminals), `locations`, `rawInput`,
    /// `rawOutput`; resolves with its id. A call finished with `updateTool` is replayed by
    /// `session/load` as it ended, less its terminals (only the live turn's client has them).
    /// The primary form of announcing a tool call (`startToolCall` is a shorthand).
    #[napi(ts_args_type = "call: ToolCallSpec", ts_return_type = "Promise<string>")]
    pub fn start_tool<'env>(&self, env: &'env Env, call: Value) -> Result<PromiseRaw<'env, String>> {
        let spec = tool_fields(call)?.into_spec().map_err(|e| js_error(Code::InvalidArg, e))?;
        let spec = Box::new(spec);
        self.ask(env, |reply| TurnOp::StartTool { spec, reply }, |id: ToolCallId| id.to_string())
    }

    /// Changes any subset of a tool call's fields (`tool_call_update`): each one given replaces
    /// the call's (`content` and `locations` as whole lists); a `status` of `"completed"` or
    /// `"failed"` finishes the call. Paced like `text`. The primary form of changing a tool call
    /// (`toolProgress`, `completeToolCall`, `failToolCall` are shorthands).
    #[napi(ts_args_type = "callId: string, fields: ToolCallFields", ts_return_type = "Promise<void>")]
    pub fn update_tool<'env>(&self, env: &'env Env, call_id: String, fields: Value) -> Result<PromiseRaw<'env, ()>> {
        let fields = Box::new(tool_fields(fields)?.into_update());
        self.push(env, TurnOp::UpdateTool { call_id: ToolCallId::new(call_id), fields })
    }

    /// Asks the client for permission to run a tool call (`session/request_permission`);
    /// resolves with the answer, `"cancelled"` when the turn is cancelled while waiting. A
    /// shorthand of `requestPermissionWithOptions` without host-defined options, its answer as a
    /// `Permission`.
    /// @param controls - the choices offered. @default `["approve", "approve_always", "deny"]`
    #[napi(
        ts_args_type = "callId: string, title: string, controls?: ApprovalAction[]",
        ts_return_type = "Promise<Permission>"
    )]
    pub fn request_permission<'env>(
        &self,
        env: &'env Env,
        call_id: String,
        title: String,
        controls: Option<Vec<String>>,
    ) -> Result<PromiseRaw<'env, String>> {
        let controls = match controls {
            Some(list) => {
                list.iter().map(|c| enum_value::<ApprovalAction>("approval action", c)).collect::<Result<Vec<_>>>()?
            }
            None => vec![ApprovalAction::Approve, ApprovalAction::ApproveAlways, ApprovalAction::Deny],
        };
        let call_id = ToolCallId::new(call_id);
        self.ask(
            env,
            |reply| TurnOp::RequestPermission { call_id, title, controls, reply },
            |answer: Permission| answer.as_str().to_owned(),
        )
    }

    /// Asks the user a question: the answer's text, or `null` when the user declined or dismissed
    /// it, or the turn was cancelled. A shorthand of `ask` that keeps only the answer:
    /// `ask` tells those apart.
    #[napi(ts_return_type = "Promise<unknown>")]
    pub fn ask_user<'env>(&self, env: &'env Env, question: String) -> Result<PromiseRaw<'env, Option<Value>>> {
        self.ask(env, |reply| TurnOp::AskUser { question, reply }, |answer| answer)
    }

    /// Asks the user a question: a form elicitation with one required string field (`answer`)
    /// when the client advertised `elicitation.form`; otherwise it waits until the turn is
    /// cancelled. The primary form of a question (`askUser` is a shorthand).
    #[napi(js_name = "ask", ts_return_type = "Promise<Reply>")]
    pub fn ask_question<'env>(&self, env: &'env Env, question: String) -> Result<PromiseRaw<'env, Value>> {
        self.ask(env, |reply| TurnOp::Ask { question, reply }, user_reply)
    }

    /// Asks the user to fill in a form (never for secrets): a form elicitation with `schema` when
    /// the client advertised `elicitation.form`; the answer holds the values by field name.
    #[napi(ts_args_type = "message: string, schema: ElicitationSchema", ts_return_type = "Promise<Reply>")]
    pub fn fill_form<'env>(&self, env: &'env Env, message: String, schema: Value) -> Result<PromiseRaw<'env, Value>> {
        let schema = Box::new(
            serde_json::from_value(schema)
                .map_err(|e| js_error(Code::InvalidArg, format!("invalid elicitation schema: {e}")))?,
        );
        self.ask(env, |reply| TurnOp::FillForm { message, schema, reply }, user_reply)
    }

    /// Asks the user to open `url`: a URL elicitation when the client advertised
    /// `elicitation.url`; once the user accepted, the agent tells the client the step is done
    /// (`elicitation/complete`). For a step that finishes later, use `client.elicitUrl` and
    /// `client.completeElicitation`.
    #[napi(ts_return_type = "Promise<Reply>")]
    pub fn open_url<'env>(&self, env: &'env Env, message: String, url: String) -> Result<PromiseRaw<'env, Value>> {
        self.ask(env, |reply| TurnOp::OpenUrl { message, url, reply }, user_reply)
    }

    /// Asks for permission to run a tool call offering `controls` and then the host-defined
    /// `options` (ACP permission options, e.g. `{ optionId: "reject_always", name: "Never", kind:
    /// "reject_always" }`); the answer is checked against what was offered. The primary form of
    /// a permission request (`requestPermission` is a shorthand).
    /// @param controls - the controls offered first. @default `["approve", "approve_always", "deny"]`
    #[napi(
        ts_args_type = "callId: string, title: string, controls?: ApprovalAction[] | null, options?: PermissionOption[]",
        ts_return_type = "Promise<PermissionAnswer>"
    )]
    pub fn request_permission_with_options<'env>(
        &self,
        env: &'env Env,
        call_id: String,
        title: String,
        controls: Option<Vec<String>>,
        options: Option<Value>,
    ) -> Result<PromiseRaw<'env, Value>> {
        let controls = match controls {
            Some(list) => {
                list.iter().map(|c| enum_value::<ApprovalAction>("approval action", c)).collect::<Result<Vec<_>>>()?
            }
            None => vec![ApprovalAction::Approve, ApprovalAction::ApproveAlways, ApprovalAction::Deny],
        };
        let options: Vec<PermissionOption> = match options {
            None | Some(Value::Null) => Vec::new(),
            Some(options) => serde_json::from_value(options)
                .map_err(|e| js_error(Code::InvalidArg, format!("invalid permission options: {e}")))?,
        };
        let request = Box::new(PermissionRequest { call_id: ToolCallId::new(call_id), title, controls, options });
        self.ask(env, |reply| TurnOp::RequestPermissionWithOptions { request, reply }, permission_answer)
    }

    /// The turn's handle on the client: read and write files through the editor, run commands in
    /// its terminals, ask the user. Its calls go out after the updates of what the turn did
    /// before them, are cancelled with the turn, and its terminals are released when the turn
    /// ends (killed first when it was cancelled).
    #[napi(getter)]
    pub fn client(&self) -> Client {
        Client::turn(self.client.clone(), self.ops.clone())
    }

    /// What the client advertised (`fs`, `terminal`, `elicitation`, `_meta`).
    #[napi(getter, ts_return_type = "ClientCapabilities")]
    pub fn client_capabilities<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        env.to_js_value(&capabilities_json(self.client.capabilities()))
    }

    /// Reports context usage (`usage_update`), with the session's cumulative `cost` when known;
    /// closes the current step first.
    #[napi(ts_args_type = "used: number, size: number, cost?: Cost | null", ts_return_type = "Promise<void>")]
    pub fn usage<'env>(
        &self,
        env: &'env Env,
        used: f64,
        size: f64,
        cost: Option<Value>,
    ) -> Result<PromiseRaw<'env, ()>> {
        let (used, size) = (u64_arg("used", used)?, u64_arg("size", size)?);
        match cost {
            None | Some(Value::Null) => self.push(env, TurnOp::Usage { used, size }),
            Some(cost) => {
                let cost: Cost = serde_json::from_value(cost)
                    .map_err(|e| js_error(Code::InvalidArg, format!("invalid cost: {e}")))?;
                self.push(env, TurnOp::UsageWithCost { used, size, cost: Box::new(cost) })
            }
        }
    }

    /// Closes the current step, if it has content.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn end_step<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        self.push(env, TurnOp::EndStep)
    }
}

/// The rich turn: what the prompt carries beside its content, plans, the response's `_meta`,
/// costs, and the session's own changes.
#[napi]
impl Turn {
    /// The host-defined slash command this prompt invokes (`/name input`, see
    /// `TurnRunner.commands`), or `null`.
    #[napi(getter, ts_return_type = "SlashCommand | null")]
    pub fn command<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        env.to_js_value(&self.rich.command)
    }

    /// The `session/prompt` request's `_meta` (e.g. a W3C `traceparent`), or `null`.
    #[napi(getter, ts_return_type = "Meta | null")]
    pub fn meta<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        env.to_js_value(&self.rich.meta)
    }

    /// The MCP servers the session was given (by the `session/new`, `load` or `resume` that
    /// opened it), in order.
    #[napi(getter, ts_return_type = "McpServer[]")]
    pub fn mcp_servers<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        env.to_js_value(&self.rich.mcp_servers)
    }

    /// The client's system prompt for the session (`systemPrompt` of the `session/new`, or of the
    /// latest `load` or `resume` that carried one), when the turn runner accepts system prompts
    /// (`TurnRunner.acceptsSystemPrompt`); else `null`. `text` is its text blocks, joined.
    #[napi(getter, ts_return_type = "ClientSystemPrompt | null")]
    pub fn system_prompt<'env>(&self, env: &'env Env) -> napi::Result<Unknown<'env>> {
        let prompt = self.rich.system_prompt.as_ref().map(|prompt| {
            serde_json::json!({
                "mode": prompt.mode,
                "content": prompt.content,
                "text": system_prompt_text(prompt),
            })
        });
        env.to_js_value(&prompt)
    }

    /// The system prompt for the model: `own` (the agent's) with the client's system prompt
    /// applied — `"append"`: `own`, a newline, then the client's text; `"override"`: the client's
    /// text alone; none: `own` (the core's `Turn::compose_system_prompt`).
    #[napi]
    pub fn compose_system_prompt(&self, own: String) -> String {
        let Some(client) = &self.rich.system_prompt else { return own };
        let text = system_prompt_text(client);
        match client.mode {
            SystemPromptMode::Override => text,
            _ => format!("{own}\n{text}"),
        }
    }

    /// Sends the turn's plan (`plan`): every entry with its current status. Each plan replaces
    /// the one before at the client; send it again, whole, as entries progress. `session/load`
    /// replays the session's latest plan. Paced like `text`.
    #[napi(ts_args_type = "plan: Plan", ts_return_type = "Promise<void>")]
    pub fn plan<'env>(&self, env: &'env Env, plan: Value) -> Result<PromiseRaw<'env, ()>> {
        let plan =
            serde_json::from_value(plan).map_err(|e| js_error(Code::InvalidArg, format!("invalid plan: {e}")))?;
        self.push(env, TurnOp::Plan(Box::new(plan)))
    }

    /// Sets the `_meta` of the prompt's response, whatever the turn's outcome (the last call
    /// counts).
    #[napi(ts_args_type = "meta: Meta", ts_return_type = "Promise<void>")]
    pub fn set_response_meta<'env>(&self, env: &'env Env, meta: Value) -> Result<PromiseRaw<'env, ()>> {
        let meta =
            serde_json::from_value(meta).map_err(|e| js_error(Code::InvalidArg, format!("invalid _meta: {e}")))?;
        self.push(env, TurnOp::ResponseMeta(Box::new(meta)))
    }

    /// Switches the session to mode `modeId` (the config option `mode`), as if the client had
    /// asked: the client gets `current_mode_update`, then `config_option_update`, before the
    /// prompt's response; the current mode changes nothing; an unknown one rejects
    /// (`ERR_ACP_PROTOCOL`, -32602) and changes nothing.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn set_mode<'env>(&self, env: &'env Env, mode_id: String) -> Result<PromiseRaw<'env, Value>> {
        self.change(env, |reply| TurnOp::SetMode { mode_id, reply })
    }

    /// Sets the select option `configId` to `value`, as if the client had asked (see `setMode`);
    /// resolves with the complete state the client now has.
    #[napi(ts_return_type = "Promise<SessionConfigOption[]>")]
    pub fn set_config_option<'env>(
        &self,
        env: &'env Env,
        config_id: String,
        value: String,
    ) -> Result<PromiseRaw<'env, Value>> {
        self.change(env, |reply| TurnOp::SetConfigOption { config_id, value, reply })
    }

    /// The session's conversation before this turn: its last `limit` entries (default 50), oldest
    /// first — user prompts, assistant messages, thoughts, tool calls with their final state, and
    /// the latest compaction's summary standing for what it replaced — from every earlier turn,
    /// also those run before the session was loaded or resumed, in any process sharing the store.
    /// This turn's own prompt is not in it. Throws (`ERR_ACP_INVALID_ARG`) for a `limit` that is
    /// not a non-negative integer.
    #[napi(ts_args_type = "limit?: number", ts_return_type = "Promise<HistoryEntry[]>")]
    pub fn history<'env>(&self, env: &'env Env, limit: Option<f64>) -> Result<PromiseRaw<'env, Value>> {
        let limit = match limit {
            None => DEFAULT_HISTORY_LIMIT,
            Some(limit) => usize::try_from(u64_arg("limit", limit)?).unwrap_or(usize::MAX),
        };
        self.change(env, |reply| TurnOp::History { limit, reply })
    }

    /// Replaces the session's host-defined slash commands (advertised at once once the session's
    /// first prompt advertised them).
    #[napi(ts_args_type = "commands: AvailableCommand[]", ts_return_type = "Promise<void>")]
    pub fn set_commands<'env>(&self, env: &'env Env, commands: Value) -> Result<PromiseRaw<'env, Value>> {
        let commands = serde_json::from_value(commands)
            .map_err(|e| js_error(Code::InvalidArg, format!("invalid commands: {e}")))?;
        self.change(env, |reply| TurnOp::SetCommands { commands, reply })
    }
}

impl Turn {
    /// Pushes a change that can be refused; its Promise resolves with the outcome's value as
    /// plain JS data, or rejects with the core's error.
    fn change<'env, T: serde::Serialize + Send + 'static>(
        &self,
        env: &'env Env,
        make: impl FnOnce(Reply<std::result::Result<T, AcpError>>) -> TurnOp,
    ) -> Result<PromiseRaw<'env, Value>> {
        let (deferred, promise) = settle::deferred(env).map_err(recode)?;
        let reply = Reply::new(move |answer: std::result::Result<std::result::Result<T, AcpError>, ops::TurnEnded>| {
            deferred.settle(move |env| {
                let value = answer.map_err(|_| turn_ended_rejection())?.map_err(|e| acp_rejection(&e))?;
                settle::js(env, serde_json::to_value(value).map_err(|e| napi::Error::from_reason(e.to_string()))?)
            });
        });
        let _ = settle::pushing(|| self.ops.push(make(reply))).map_err(|e| crate::pace::refused(e, ended))?;
        Ok(promise)
    }
}

/// Pushes the operation `make` builds around its reply on `ops`; returns the Promise of the answer,
/// converted by `map` on the JS thread (rejected with `ERR_ACP_TURN_ENDED` when the operation is
/// dropped with its turn). Throws when the queue refuses it.
pub(super) fn ask<'env, T: Send + ToNapiValue + 'static, R: Send + 'static>(
    env: &'env Env,
    ops: &TurnOps,
    make: impl FnOnce(Reply<R>) -> TurnOp,
    map: impl FnOnce(R) -> T + Send + 'static,
) -> Result<PromiseRaw<'env, T>> {
    let (deferred, promise) = settle::deferred(env).map_err(recode)?;
    let reply = Reply::new(move |answer: std::result::Result<R, ops::TurnEnded>| {
        deferred.settle(move |env| match answer {
            Ok(answer) => settle::js(env, map(answer)),
            Err(ops::TurnEnded) => Err(turn_ended_rejection()),
        });
    });
    // An answer's Promise is the pace: the caller awaits it anyway.
    let _ = settle::pushing(|| ops.push(make(reply))).map_err(|e| crate::pace::refused(e, ended))?;
    Ok(promise)
}

/// A new `AbortController` for a turn (on the JS thread): its `abort` is what [`Shared::abort`]
/// calls from now on, and it is aborted at once when the turn was already cancelled. Returns a
/// reference to its `signal`.
///
/// Ordering with a cancellation on the worker: `Shared::abort` runs after the token is cancelled,
/// and this sets `abort` before it reads the token; so either `Shared::abort` finds `abort` set,
/// or this finds the token cancelled (or both, and the second `abort()` does nothing).
fn abort_signal(env: &Env, invoker: &Invoker, shared: &Shared) -> napi::Result<ObjectRef<false>> {
    let global = env.get_global()?;
    let constructor: Function<'_, (), Unknown<'static>> = global.get_named_property("AbortController")?;
    let controller = constructor.new_instance(())?;
    // SAFETY: `new AbortController()` is an object.
    let controller: Object<'_> = unsafe { controller.cast() }?;
    let signal: Object<'_> = controller.get_named_property("signal")?;
    let abort = SharedObject::new(invoker, &controller)?
        .method(&controller, "abort")?
        .ok_or_else(|| napi::Error::from_reason("AbortController has no `abort`"))?;
    let _ = shared.abort.set(abort);
    // Pairs with the fence in [`Shared::abort`]: `abort`, then the token.
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    if shared.cancel.is_cancelled() {
        let abort_now: Function<'_, (), Unknown<'static>> = controller.get_named_property("abort")?;
        abort_now.apply(controller, ())?;
    }
    signal.create_ref::<false>()
}

impl TurnInit {
    /// Builds the JS handle (on the JS thread); its `AbortSignal` is made when first read.
    fn into_js(self, env: &Env) -> napi::Result<napi::sys::napi_value> {
        let turn = Turn {
            ops: self.ops,
            shared: self.shared,
            session_id: self.session_id,
            cwd: self.cwd,
            prompt: self.prompt,
            prompt_text: self.prompt_text,
            client: self.client,
            config: self.config,
            rich: self.rich,
            signal: OnceCell::new(),
            invoker: self.invoker,
        };
        // SAFETY: `env` is the live env of this JS thread callback.
        unsafe { Turn::to_napi_value(env.raw(), turn) }
    }
}

/// Runs one turn on the JS `runTurn`: builds the handle, applies its calls in order and returns
/// what `runTurn` settled with (`undefined` is `end_turn`).
pub async fn run(
    run_turn: &JsMethod,
    invoker: &Invoker,
    turn: &CoreTurn,
    config_ids: &[String],
) -> Result<StopReason, AcpError> {
    let (ops, queue) = ops::channel();
    let shared = Arc::new(Shared { cancel: turn.cancellation().clone(), abort: OnceLock::new() });
    let init = TurnInit {
        ops,
        shared: shared.clone(),
        invoker: invoker.clone(),
        session_id: turn.session_id().0.to_string(),
        cwd: turn.cwd().to_string_lossy().into_owned(),
        prompt: serde_json::to_value(turn.prompt()).unwrap_or(Value::Array(Vec::new())),
        prompt_text: turn.prompt_text(),
        client: turn.client().clone(),
        config: config_ids.iter().filter_map(|id| turn.config_value(id).map(|v| (id.clone(), v))).collect(),
        rich: Rich {
            command: turn.command().cloned(),
            meta: turn.meta().cloned(),
            mcp_servers: turn.mcp_servers().to_vec(),
            system_prompt: turn.system_prompt().cloned(),
        },
    };
    let args: BuildArgs = Box::new(move |env| init.into_js(env).map(|turn| vec![turn]));
    let outcome = run_turn.call(args, serde_convert::<Option<StopReason>>("stop reason"));
    // Calls made before `runTurn` settled are applied; later ones throw ERR_ACP_TURN_ENDED.
    let result = queue.apply_until(turn, settled(outcome, turn, &shared)).await;
    result.map(|stop| stop.unwrap_or(StopReason::EndTurn))
}

/// `runTurn`'s outcome; on cancellation, aborts its signal and waits at most [`CANCEL_GRACE`].
async fn settled(
    outcome: impl Future<Output = Result<Option<StopReason>, AcpError>>,
    turn: &CoreTurn,
    shared: &Shared,
) -> Result<Option<StopReason>, AcpError> {
    tokio::pin!(outcome);
    tokio::select! {
        biased;
        result = &mut outcome => return result,
        () = turn.cancelled() => shared.abort(),
    }
    tokio::select! {
        biased;
        result = &mut outcome => result,
        () = tokio::time::sleep(CANCEL_GRACE) => {
            tracing::debug!("a cancelled Node turn did not settle in time; ending it as cancelled");
            Ok(Some(StopReason::Cancelled))
        }
    }
}
