//! Turn operations: how code that cannot borrow the running [`Turn`] drives it — the bindings'
//! `Turn` objects, called synchronously from Python or JavaScript.
//!
//! `run_turn` borrows the core [`Turn`] for the duration of the turn, so a binding's handle holds a
//! [`TurnOps`] instead: each call converts its arguments, pushes one [`TurnOp`] (a cheap count and
//! a lock-free queue push) and returns at once. Meanwhile the binding's `run_turn` awaits its
//! host's `run_turn` inside [`TurnOpQueue::apply_until`], which applies the operations to the core
//! [`Turn`] one at a time, in push order, until the host's call settles, then applies those pushed
//! before that and refuses later ones ([`Refused::Closed`]).
//!
//! Answers travel in a [`Reply`]: a callback the binding supplies (Python completes its future
//! through the bridge; Node settles its Promise from the callback; [`Reply::channel`] pairs a
//! reply with the future of its answer). A reply is always answered once: with the value when its operation is applied, with
//! [`TurnEnded`] when the operation is dropped unapplied.
//!
//! Back-pressure is the [`pace`](acp_facade::binding::pace) policy: a push answers [`Pace::Wait`] above the soft
//! mark (the binding hands its caller [`TurnOps::drained`] to await) and [`Refused::Full`] at the
//! hard limit, so the queue is bounded for every caller, awaiting or not.
//!
//! ## Adding an operation
//!
//! 1. A variant of [`TurnOp`] named after the [`Turn`] method it calls, carrying that method's
//!    arguments as owned core values (large ones boxed, see [`TurnOp`]), plus a [`Reply`] when
//!    the method returns something.
//! 2. Its arm in `TurnOp::apply` (this file): call the method, send the answer.
//! 3. In each binding (`bindings-python/src/runner/turn.rs`, `bindings-node/src/runner/turn.rs`),
//!    one method that converts the arguments, pushes the variant and converts the answer (or the
//!    [`Pace`]) into its language's awaitable. Nothing else: no queue, no counting, no ordering.
//!
//! ## Calls to the client
//!
//! The turn's calls to the client ([`Turn::client`]: files, terminals, elicitation) are operations
//! too, so that each goes out after the updates of everything the binding's caller did before it
//! (the handle waits for them, see [`Client::in_order_with`](acp_facade::client::Client::in_order_with)).
//! Their arm only starts the call, on a task of its own, and moves on: the answer comes back
//! through the operation's [`Reply`] whenever the client sends it, so a turn may have any number
//! of calls in flight while it streams. A call is cancelled with the turn, like every call of the
//! turn's handle; one still in flight when the turn ends without being cancelled is answered as it
//! would have been.
//!
//! A binding may skip the queue for a file call ([`TurnOps::queues_file_call`]): when the queue
//! is applied and the connection quiet, the call is begun on the caller's thread, which writes
//! the request itself instead of waking the core's worker for it.
//!
//! ## Operations that can fail
//!
//! An operation that can fail (the agent-initiated changes: [`TurnOp::SetMode`],
//! [`TurnOp::SetConfigOption`], [`TurnOp::SetCommands`]) answers its `Result`, and the binding
//! raises or rejects with the error.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::turn::gates::{PermissionAnswer, Reply as UserReply};
use crate::turn::tool_state::ToolCallSpec;
use crate::turn::{Permission, Turn};
use acp_facade::acp::{
    AvailableCommand, ContentBlock, Cost, ElicitationId, ElicitationSchema, EnvVariable, MessageId, Meta, Notice,
    PermissionOption, Plan, PlanEntry, PlanId, SessionConfigOption, SessionId, StopReason, TerminalExitStatus,
    TerminalOutputResponse, ToolCallStatus, ToolCallUpdateFields, ToolKind,
};
use acp_facade::binding::pace::{Backlog, Pace, Refused};
use acp_facade::client::{Client, ClientError, ElicitationAnswer, Terminal, UrlElicitation};
use acp_facade::error::Error;
use acp_facade::harness::{ApprovalAction, ToolCallId};

/// One call on a running turn, applied in order by [`TurnOpQueue::apply_until`].
///
/// Every operation, a streamed text too, is moved through the queue at its enum's full size, so
/// variants stay small: box a payload of more than a few words (as `StartToolCall`'s input is).
/// A compile-time check keeps a queued operation within [`MAX_QUEUED_SIZE`] bytes.
#[derive(Debug)]
#[non_exhaustive]
pub enum TurnOp {
    /// [`Turn::text`].
    Text(String),
    /// [`Turn::thought`].
    Thought(String),
    /// [`Turn::start_tool_call`]; answers the new call's id.
    StartToolCall {
        /// The call's title.
        title: String,
        /// Its kind.
        kind: ToolKind,
        /// Its raw input (boxed: see the size note on [`TurnOp`]).
        input: Box<Value>,
        /// Answered with the call's id.
        reply: Reply<ToolCallId>,
    },
    /// [`Turn::tool_progress`].
    ToolProgress {
        /// The call.
        call_id: ToolCallId,
        /// Its new status, if it changed.
        status: Option<ToolCallStatus>,
        /// Its content so far, if any.
        content: Option<Vec<ContentBlock>>,
    },
    /// [`Turn::complete_tool_call`].
    CompleteToolCall {
        /// The call.
        call_id: ToolCallId,
        /// Its output.
        output: Vec<ContentBlock>,
    },
    /// [`Turn::fail_tool_call`].
    FailToolCall {
        /// The call.
        call_id: ToolCallId,
        /// Its output.
        output: Vec<ContentBlock>,
    },
    /// [`Turn::request_permission`]; answers how the client answered.
    RequestPermission {
        /// The tool call asking.
        call_id: ToolCallId,
        /// What the client shows.
        title: String,
        /// The choices offered.
        controls: Vec<ApprovalAction>,
        /// Answered with the permission.
        reply: Reply<Permission>,
    },
    /// [`Turn::ask_user`]; answers the user's answer (`None` when cancelled).
    AskUser {
        /// The question.
        question: String,
        /// Answered with the answer.
        reply: Reply<Option<Value>>,
    },
    /// [`Turn::usage`].
    Usage {
        /// Tokens used.
        used: u64,
        /// The context window's size.
        size: u64,
    },
    /// [`Turn::end_step`].
    EndStep,
    /// [`Turn::ask`]; answers how the user answered.
    Ask {
        /// The question.
        question: String,
        /// Answered with the user's answer.
        reply: Reply<UserReply>,
    },
    /// [`Turn::fill_form`]; answers how the user answered.
    FillForm {
        /// What the form is for.
        message: String,
        /// The form (boxed: see the size note on [`TurnOp`]).
        schema: Box<ElicitationSchema>,
        /// Answered with the user's answer.
        reply: Reply<UserReply>,
    },
    /// [`Turn::open_url`]; answers how the user answered.
    OpenUrl {
        /// Why the URL should be opened.
        message: String,
        /// The URL.
        url: String,
        /// Answered with the user's answer.
        reply: Reply<UserReply>,
    },
    /// [`Turn::request_permission_with_options`]; answers the choice.
    RequestPermissionWithOptions {
        /// The question and what it offers (boxed: see the size note on [`TurnOp`]).
        request: Box<PermissionRequest>,
        /// Answered with the choice.
        reply: Reply<PermissionAnswer>,
    },
    /// [`Turn::plan`] (boxed: see the size note on [`TurnOp`]).
    Plan(Box<Plan>),
    /// [`Turn::set_response_meta`] (boxed: see the size note on [`TurnOp`]).
    ResponseMeta(Box<Meta>),
    /// [`Turn::usage_with_cost`].
    UsageWithCost {
        /// Tokens used.
        used: u64,
        /// The context window's size.
        size: u64,
        /// The session's cumulative cost (boxed: see the size note on [`TurnOp`]).
        cost: Box<Cost>,
    },
    /// [`Turn::set_mode`]; answers whether the mode could be set.
    SetMode {
        /// The mode.
        mode_id: String,
        /// Answered with the outcome.
        reply: Reply<Result<(), Error>>,
    },
    /// [`Turn::set_config_option`]; answers the complete state the client now has.
    SetConfigOption {
        /// The select option.
        config_id: String,
        /// Its new value.
        value: String,
        /// Answered with the outcome.
        reply: Reply<Result<Vec<SessionConfigOption>, Error>>,
    },
    /// [`Turn::set_commands`]; answers whether the commands could be set.
    SetCommands {
        /// The session's host-defined slash commands, all of them.
        commands: Vec<AvailableCommand>,
        /// Answered with the outcome.
        reply: Reply<Result<(), Error>>,
    },
    /// [`Turn::history`]; answers the entries in their wire form
    /// ([`history_json`](super::history::history_json)).
    History {
        /// At most this many entries.
        limit: usize,
        /// Answered with the outcome.
        reply: Reply<Result<Value, Error>>,
    },
    /// [`Turn::start_tool`]: a tool call with any of its fields; answers the new call's id.
    StartTool {
        /// What the call is announced with (boxed: see the size note on [`TurnOp`]).
        spec: Box<ToolCallSpec>,
        /// Answered with the call's id.
        reply: Reply<ToolCallId>,
    },
    /// [`Turn::update_tool`]: any subset of a tool call's fields.
    UpdateTool {
        /// The call.
        call_id: ToolCallId,
        /// The fields that change (boxed: see the size note on [`TurnOp`]).
        fields: Box<ToolCallUpdateFields>,
    },
    /// [`Turn::notice`] (boxed: see the size note on [`TurnOp`]). What the method answers — whether
    /// the client advertised notices — the binding reads from the client's capabilities itself.
    Notice(Box<Notice>),
    /// [`Turn::update_plan`] (the binding reads its answer from the client's capabilities, as for
    /// [`TurnOp::Notice`]).
    UpdatePlan {
        /// The plan.
        plan_id: PlanId,
        /// Its entries, whole.
        entries: Vec<PlanEntry>,
    },
    /// [`Turn::update_plan_markdown`].
    UpdatePlanMarkdown {
        /// The plan.
        plan_id: PlanId,
        /// Its Markdown document.
        content: String,
    },
    /// [`Turn::remove_plan`].
    RemovePlan(PlanId),
    /// [`Turn::start_subagent`]; answers the child session's id, by which the operations below
    /// name it.
    StartSubagent {
        /// The child's title.
        title: String,
        /// Answered with the child session's id.
        reply: Reply<SessionId>,
    },
    /// [`Subagent::send`](crate::Subagent::send) to a child the turn started; answers the
    /// message's id.
    SubagentSend {
        /// The child session.
        session_id: SessionId,
        /// The message's text.
        text: String,
        /// Answered with the message's id.
        reply: Reply<MessageId>,
    },
    /// [`Subagent::reply`](crate::Subagent::reply) of a child the turn started; answers the
    /// message's id.
    SubagentReply {
        /// The child session.
        session_id: SessionId,
        /// The reply's chunks, in order.
        chunks: Vec<String>,
        /// Answered with the message's id.
        reply: Reply<MessageId>,
    },
    /// [`Subagent::finish`](crate::Subagent::finish) of a child the turn started.
    SubagentFinish {
        /// The child session.
        session_id: SessionId,
        /// Why its work ended.
        stop: StopReason,
    },
    /// [`Client::read_text_file`](acp_facade::client::Client::read_text_file) on [`Turn::client`];
    /// answered off the queue (see "Calls to the client" in the module doc).
    ReadTextFile {
        /// The file (absolute), its first line and the most lines to read (boxed).
        request: Box<(PathBuf, Option<u32>, Option<u32>)>,
        /// Answered with the content.
        reply: Reply<Result<String, ClientError>>,
    },
    /// [`Client::write_text_file`](acp_facade::client::Client::write_text_file) on [`Turn::client`].
    WriteTextFile {
        /// The file (absolute) and its new content (boxed).
        request: Box<(PathBuf, String)>,
        /// Answered once written.
        reply: Reply<Result<(), ClientError>>,
    },
    /// [`Client::create_terminal`](acp_facade::client::Client::create_terminal) on [`Turn::client`].
    CreateTerminal {
        /// The command and how to run it (boxed).
        request: Box<TerminalRequest>,
        /// Answered with the terminal.
        reply: Reply<Result<Terminal, ClientError>>,
    },
    /// [`Client::elicit_form`](acp_facade::client::Client::elicit_form) on [`Turn::client`].
    ElicitForm {
        /// What the form is for, and the form (boxed).
        request: Box<(String, ElicitationSchema)>,
        /// Answered with the user's answer.
        reply: Reply<Result<ElicitationAnswer, ClientError>>,
    },
    /// [`Client::elicit_url`](acp_facade::client::Client::elicit_url) on [`Turn::client`].
    ElicitUrl {
        /// Why, and the URL (boxed).
        request: Box<(String, String)>,
        /// Answered with the elicitation's id and the user's answer.
        reply: Reply<Result<UrlElicitation, ClientError>>,
    },
    /// [`Client::complete_elicitation`](acp_facade::client::Client::complete_elicitation) on
    /// [`Turn::client`].
    CompleteElicitation {
        /// The URL elicitation whose step is done.
        elicitation_id: ElicitationId,
        /// Answered once sent.
        reply: Reply<Result<(), ClientError>>,
    },
    /// [`Client::release_terminals`](acp_facade::client::Client::release_terminals) on
    /// [`Turn::client`].
    ReleaseTerminals {
        /// Answered once released.
        reply: Reply<()>,
    },
    /// A call on a terminal the turn's handle created ([`Terminal::output`],
    /// [`Terminal::wait_for_exit`], [`Terminal::kill`], [`Terminal::release`]), answered off the
    /// queue.
    Terminal {
        /// The terminal.
        terminal: Arc<Terminal>,
        /// Which call, with the reply for its answer.
        call: TerminalCall,
    },
}

/// A permission request with host-defined options ([`TurnOp::RequestPermissionWithOptions`]).
#[derive(Debug)]
pub struct PermissionRequest {
    /// The tool call asking.
    pub call_id: ToolCallId,
    /// What the client shows.
    pub title: String,
    /// The controls offered, first.
    pub controls: Vec<ApprovalAction>,
    /// The host-defined options offered after them.
    pub options: Vec<PermissionOption>,
}

/// The arguments of [`Client::create_terminal`](acp_facade::client::Client::create_terminal)
/// ([`TurnOp::CreateTerminal`]).
#[derive(Debug)]
pub struct TerminalRequest {
    /// The command.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables to add.
    pub env: Vec<EnvVariable>,
    /// Its working directory (absolute).
    pub cwd: Option<PathBuf>,
    /// The most output bytes the client keeps.
    pub output_byte_limit: Option<u64>,
}

/// A call on a [`Terminal`] ([`TurnOp::Terminal`]), with the reply for its answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum TerminalCall {
    /// [`Terminal::output`].
    Output(Reply<Result<TerminalOutputResponse, ClientError>>),
    /// [`Terminal::wait_for_exit`].
    WaitForExit(Reply<Result<TerminalExitStatus, ClientError>>),
    /// [`Terminal::kill`].
    Kill(Reply<Result<(), ClientError>>),
    /// [`Terminal::release`].
    Release(Reply<Result<(), ClientError>>),
}

impl TerminalCall {
    /// Starts the call on `terminal`, answered off the queue.
    fn start(self, terminal: Arc<Terminal>) {
        match self {
            Self::Output(reply) => answer_later(reply, async move { terminal.output().await }),
            Self::WaitForExit(reply) => answer_later(reply, async move { terminal.wait_for_exit().await }),
            Self::Kill(reply) => answer_later(reply, async move { terminal.kill().await }),
            Self::Release(reply) => answer_later(reply, async move { terminal.release().await }),
        }
    }
}

/// Runs `call` on a task of its own and answers `reply` with its outcome (see "Calls to the
/// client" in the module doc).
fn answer_later<T: Send + 'static>(reply: Reply<T>, call: impl Future<Output = T> + Send + 'static) {
    tokio::spawn(async move { reply.send(call.await) });
}

impl TurnOp {
    async fn apply(self, turn: &Turn) {
        match self {
            Self::Text(text) => turn.text(text).await,
            Self::Thought(text) => turn.thought(text).await,
            Self::StartToolCall { title, kind, input, reply } => {
                reply.send(turn.start_tool_call(title, kind, *input).await);
            }
            Self::ToolProgress { call_id, status, content } => turn.tool_progress(&call_id, status, content).await,
            Self::CompleteToolCall { call_id, output } => turn.complete_tool_call(&call_id, output).await,
            Self::FailToolCall { call_id, output } => turn.fail_tool_call(&call_id, output).await,
            Self::RequestPermission { call_id, title, controls, reply } => {
                reply.send(turn.request_permission(&call_id, title, &controls).await);
            }
            Self::AskUser { question, reply } => reply.send(turn.ask_user(question).await),
            Self::Usage { used, size } => turn.usage(used, size).await,
            Self::EndStep => turn.end_step().await,
            Self::Ask { question, reply } => reply.send(turn.ask(question).await),
            Self::FillForm { message, schema, reply } => reply.send(turn.fill_form(message, *schema).await),
            Self::OpenUrl { message, url, reply } => reply.send(turn.open_url(message, url).await),
            Self::RequestPermissionWithOptions { request, reply } => {
                let PermissionRequest { call_id, title, controls, options } = *request;
                reply.send(turn.request_permission_with_options(&call_id, title, &controls, options).await);
            }
            Self::ReadTextFile { request, reply } => {
                let client = turn.client().clone();
                let (path, line, limit) = *request;
                answer_later(reply, async move { client.read_text_file(path, line, limit).await });
            }
            Self::WriteTextFile { request, reply } => {
                let client = turn.client().clone();
                let (path, content) = *request;
                answer_later(reply, async move { client.write_text_file(path, content).await });
            }
            Self::CreateTerminal { request, reply } => {
                let client = turn.client().clone();
                let TerminalRequest { command, args, env, cwd, output_byte_limit } = *request;
                answer_later(
                    reply,
                    async move { client.create_terminal(command, args, env, cwd, output_byte_limit).await },
                );
            }
            Self::ElicitForm { request, reply } => {
                let client = turn.client().clone();
                let (message, schema) = *request;
                answer_later(reply, async move { client.elicit_form(message, schema).await });
            }
            Self::ElicitUrl { request, reply } => {
                let client = turn.client().clone();
                let (message, url) = *request;
                answer_later(reply, async move { client.elicit_url(message, url).await });
            }
            Self::CompleteElicitation { elicitation_id, reply } => {
                let client = turn.client().clone();
                answer_later(reply, async move { client.complete_elicitation(&elicitation_id).await });
            }
            Self::ReleaseTerminals { reply } => {
                let client = turn.client().clone();
                answer_later(reply, async move { client.release_terminals().await });
            }
            Self::Terminal { terminal, call } => call.start(terminal),
            Self::Plan(plan) => turn.plan(*plan).await,
            Self::ResponseMeta(meta) => turn.set_response_meta(*meta).await,
            Self::UsageWithCost { used, size, cost } => turn.usage_with_cost(used, size, *cost).await,
            Self::SetMode { mode_id, reply } => reply.send(turn.set_mode(&mode_id).await),
            Self::SetConfigOption { config_id, value, reply } => {
                reply.send(turn.set_config_option(&config_id, &value).await);
            }
            Self::SetCommands { commands, reply } => reply.send(turn.set_commands(commands).await),
            Self::History { limit, reply } => {
                reply.send(turn.history(limit).await.map(|entries| super::history::history_json(&entries)));
            }
            Self::StartTool { spec, reply } => reply.send(turn.start_tool(*spec).await),
            Self::UpdateTool { call_id, fields } => turn.update_tool(&call_id, *fields).await,
            Self::Notice(notice) => {
                turn.notice(*notice).await;
            }
            Self::UpdatePlan { plan_id, entries } => {
                turn.update_plan(plan_id, entries).await;
            }
            Self::UpdatePlanMarkdown { plan_id, content } => {
                turn.update_plan_markdown(plan_id, content).await;
            }
            Self::RemovePlan(plan_id) => {
                turn.remove_plan(plan_id).await;
            }
            Self::StartSubagent { title, reply } => {
                reply.send(turn.start_subagent(title).await.session_id().clone());
            }
            Self::SubagentSend { session_id, text, reply } => {
                reply.send(turn.subagent(session_id).send(text).await);
            }
            Self::SubagentReply { session_id, chunks, reply } => {
                reply.send(turn.subagent(session_id).reply(chunks).await);
            }
            Self::SubagentFinish { session_id, stop } => turn.subagent(session_id).finish(stop).await,
        }
    }
}

/// The operation was dropped before it was applied: the turn had ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the turn has ended")]
pub struct TurnEnded;

/// What a [`Reply`] calls with the answer.
type Answer<T> = Box<dyn FnOnce(Result<T, TurnEnded>) + Send>;

/// The answer to one operation: a callback called exactly once, with the value when the operation
/// is applied, or with [`TurnEnded`] when it is dropped unapplied.
pub struct Reply<T>(Option<Answer<T>>);

impl<T> std::fmt::Debug for Reply<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reply").field("answered", &self.0.is_none()).finish()
    }
}

impl<T: Send + 'static> Reply<T> {
    /// A reply that calls `answer` (on whichever thread applies or drops the operation: it must
    /// not block).
    pub fn new(answer: impl FnOnce(Result<T, TurnEnded>) + Send + 'static) -> Self {
        Self(Some(Box::new(answer)))
    }

    /// A reply and the future of its answer.
    pub fn channel() -> (Self, impl Future<Output = Result<T, TurnEnded>> + Send + 'static) {
        let (tx, rx) = oneshot::channel();
        let reply = Self::new(move |answer| {
            let _ = tx.send(answer);
        });
        (reply, async move { rx.await.unwrap_or(Err(TurnEnded)) })
    }
}

impl<T> Reply<T> {
    /// Answers with `value`.
    pub fn send(mut self, value: T) {
        if let Some(answer) = self.0.take() {
            answer(Ok(value));
        }
    }
}

impl<T> Drop for Reply<T> {
    fn drop(&mut self) {
        if let Some(answer) = self.0.take() {
            answer(Err(TurnEnded));
        }
    }
}

/// One queued operation, and who waits for it to be applied.
struct Queued {
    op: TurnOp,
    done: Option<Reply<()>>,
}

/// The most bytes a queued operation may take (it is 104). Small moves are inlined register
/// copies; at 144 bytes (an unboxed tool input) callgrind showed a `memcpy` call on every push and
/// pop, every `text` included. 112 is what the bindings' own queues used to carry.
pub const MAX_QUEUED_SIZE: usize = 112;

const _: () = assert!(
    std::mem::size_of::<Queued>() <= MAX_QUEUED_SIZE,
    "a TurnOp variant grew too large: box its payload (see TurnOp's doc)"
);

/// A new queue: the handle a binding's `Turn` object keeps, and the queue its `run_turn` applies.
pub fn channel() -> (TurnOps, TurnOpQueue) {
    let (tx, rx) = mpsc::unbounded_channel();
    let backlog = Arc::new(Backlog::default());
    (TurnOps { tx, backlog: backlog.clone() }, TurnOpQueue { rx, backlog })
}

/// Pushes operations on a running turn; cheap to clone, callable from any thread.
#[derive(Debug, Clone)]
pub struct TurnOps {
    tx: mpsc::UnboundedSender<Queued>,
    backlog: Arc<Backlog>,
}

impl TurnOps {
    /// Queues `op`. On a refusal `op` is dropped (its reply answered [`TurnEnded`]).
    pub fn push(&self, op: TurnOp) -> Result<Pace, Refused> {
        self.queue(Queued { op, done: None })
    }

    /// Queues `op`; `done` is answered once it is applied.
    pub fn push_then(&self, op: TurnOp, done: Reply<()>) -> Result<Pace, Refused> {
        self.queue(Queued { op, done: Some(done) })
    }

    fn queue(&self, queued: Queued) -> Result<Pace, Refused> {
        // Counted before sending, so the queue's uncount never comes first.
        let depth = self.backlog.add()?;
        if self.tx.send(queued).is_err() {
            self.backlog.unadd();
            return Err(Refused::Closed);
        }
        Ok(Backlog::pace(depth))
    }

    /// Resolves once the queue is short again (or the turn is over): what a caller told
    /// [`Pace::Wait`] awaits.
    pub fn drained(&self) -> impl Future<Output = ()> + Send + 'static {
        let backlog = self.backlog.clone();
        async move { backlog.drained().await }
    }

    /// How many operations are queued and not yet applied.
    pub fn queued(&self) -> usize {
        self.backlog.depth()
    }

    /// Whether a file call on the turn's handle `client` goes through this queue, rather than
    /// being begun on the caller's thread
    /// ([`Client::start_read_text_file`](acp_facade::client::Client::start_read_text_file)). Begun
    /// there only when every operation pushed so far has been applied — then it keeps the order
    /// of the caller's calls without the queue: nothing it must follow is still in it, and the
    /// handle itself waits for the updates of what was applied — and the connection is quiet
    /// ([`Client::is_connection_quiet`]): the caller's thread then writes the request itself;
    /// with requests in flight the core's worker batches it with them.
    pub fn queues_file_call(&self, client: &Client) -> bool {
        self.backlog.depth() != 0 || !client.is_connection_quiet()
    }

    /// Whether the queue takes no more operations: the turn is over.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// The consuming half: applies the operations to the core [`Turn`].
#[derive(Debug)]
pub struct TurnOpQueue {
    rx: mpsc::UnboundedReceiver<Queued>,
    backlog: Arc<Backlog>,
}

impl TurnOpQueue {
    /// Applies the queued operations to `turn`, in order, until `host` (the binding's call of its
    /// host's `run_turn`, with its cancellation handling) completes; then applies the operations
    /// pushed before that, refuses later pushes, and returns what `host` returned. Operations are
    /// preferred over `host`: one pushed before the host's call settled is never lost.
    pub async fn apply_until<F: Future>(mut self, turn: &Turn, host: F) -> F::Output {
        tokio::pin!(host);
        // The operation's future is awaited right here, not inside a helper `async fn`: each
        // layer of future would copy it whole once more for every operation.
        let outcome = loop {
            tokio::select! {
                biased;
                Some(Queued { op, done }) = self.rx.recv() => {
                    op.apply(turn).await;
                    self.applied(done);
                }
                outcome = &mut host => break outcome,
            }
        };
        self.rx.close();
        while let Ok(Queued { op, done }) = self.rx.try_recv() {
            op.apply(turn).await;
            self.applied(done);
        }
        outcome
    }

    fn applied(&self, done: Option<Reply<()>>) {
        if let Some(done) = done {
            done.send(());
        }
        self.backlog.done();
    }
}

impl Drop for TurnOpQueue {
    fn drop(&mut self) {
        // Whatever is still queued is dropped with the receiver, answering its replies.
        self.backlog.close();
    }
}
