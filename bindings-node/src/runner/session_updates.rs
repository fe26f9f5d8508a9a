//! The turn's session updates that ACP gates behind a client capability — notices, plans with ids,
//! subagents — for JavaScript: the core turn's
//! [`notice`](acp_facade_runner::Turn::notice), [`update_plan`](acp_facade_runner::Turn::update_plan),
//! [`update_plan_markdown`](acp_facade_runner::Turn::update_plan_markdown),
//! [`remove_plan`](acp_facade_runner::Turn::remove_plan) and
//! [`start_subagent`](acp_facade_runner::Turn::start_subagent) with its
//! [`Subagent`](acp_facade_runner::Subagent).
//!
//! A turn calls them whatever the client advertised; the core sends each only to a client that
//! advertised it and degrades it for any other. They are operations of the turn's queue like the
//! others ([`TurnOp::Notice`], …), so each keeps its place among the turn's calls. What the core's
//! notice and plan methods answer — whether the client receives the update as such — is the
//! client's capability, which these methods read here, as the core does: their Promise is paced
//! like `text` and resolves with it. A subagent is named by its child session's id between
//! operations (the core's `Subagent` borrows the turn, which only the queue holds).

use acp_facade::acp::{MessageId, Notice, NoticeSeverity, PlanEntry, PlanId, SessionId, StopReason};
use acp_facade_runner::binding::ops::{TurnOp, TurnOps};
use napi::Env;
use napi::bindgen_prelude::PromiseRaw;
use napi_derive::napi;
use serde_json::Value;

use super::turn::{Turn, ask, ended, enum_value};
use crate::error::{Code, Result, js_error, rejected_type_error};

/// Pushes `op` on `ops`; a Promise of `received` (whether the client receives the update as such),
/// paced like `text`.
fn push_gated<'env>(env: &'env Env, ops: &TurnOps, op: TurnOp, received: bool) -> Result<PromiseRaw<'env, bool>> {
    let pace = ops.push(op).map_err(|e| crate::pace::refused(e, ended))?;
    crate::pace::promise_of(env, pace, || ops.drained(), received)
}

/// The options of `turn.notice`.
#[napi(object, object_to_js = false)]
pub struct NoticeOptions {
    /// How the client presents it. @default "info"
    #[napi(ts_type = "NoticeSeverity")]
    pub severity: Option<String>,
    /// Plain-text detail or guidance, shown with the title.
    pub description: Option<String>,
}

/// A notice's severity: `info`, `warning` or `error` (ACP allows others; this API does not).
fn severity(name: Option<&str>) -> std::result::Result<NoticeSeverity, String> {
    match name {
        None | Some("info") => Ok(NoticeSeverity::Info),
        Some("warning") => Ok(NoticeSeverity::Warning),
        Some("error") => Ok(NoticeSeverity::Error),
        Some(other) => Err(format!("unknown notice severity `{other}`: expected \"info\", \"warning\" or \"error\"")),
    }
}

/// Plan entries in their wire form (`PlanEntry[]`).
fn plan_entries(entries: Value) -> Result<Vec<PlanEntry>> {
    serde_json::from_value(entries).map_err(|e| js_error(Code::InvalidArg, format!("invalid plan entries: {e}")))
}

/// The session updates ACP gates behind a client capability.
#[napi]
impl Turn {
    /// Shows the user a notice (`notice`): information that is not part of the conversation (and
    /// never replayed). Sent only to a client that advertised `session.notices`; resolves with
    /// whether it was (`false`: nothing was sent, so say it another way if it matters). Paced like
    /// `text`. An unknown `severity` rejects with a `TypeError` naming it (code
    /// `ERR_ACP_INVALID_ARG`), and sends nothing.
    /// @param options - `severity` (`"info"`, `"warning"` or `"error"`; default `"info"`) and an
    /// optional `description`.
    #[napi(ts_args_type = "title: string, options?: NoticeOptions", ts_return_type = "Promise<boolean>")]
    pub fn notice<'env>(
        &self,
        env: &'env Env,
        title: String,
        options: Option<NoticeOptions>,
    ) -> Result<PromiseRaw<'env, bool>> {
        let (severity_name, description) = match options {
            Some(NoticeOptions { severity, description }) => (severity, description),
            None => (None, None),
        };
        let severity = match severity(severity_name.as_deref()) {
            Ok(severity) => severity,
            Err(message) => return rejected_type_error(env, message),
        };
        let notice = Box::new(Notice::new(severity, title).description(description));
        let received =
            acp_facade_runner::turn::session_updates::notice_received(self.core_client().capabilities(), &notice);
        push_gated(env, self.ops(), TurnOp::Notice(notice), received)
    }

    /// Creates or replaces the plan `planId` with `entries`, each with its current status
    /// (`plan_update`). A client that did not advertise plan operations (`clientCapabilities.plan`)
    /// gets the entries as a whole `plan` update instead, so one call serves every client;
    /// resolves with whether the client receives the plan with its id. Paced like `text`.
    /// `session/load` replays each plan's latest form.
    #[napi(ts_args_type = "planId: string, entries: PlanEntry[]", ts_return_type = "Promise<boolean>")]
    pub fn update_plan<'env>(&self, env: &'env Env, plan_id: String, entries: Value) -> Result<PromiseRaw<'env, bool>> {
        let op = TurnOp::UpdatePlan { plan_id: PlanId::new(plan_id), entries: plan_entries(entries)? };
        push_gated(env, self.ops(), op, self.core_client().capabilities().plan_operations())
    }

    /// Creates or replaces the plan `planId` with a Markdown document (`plan_update`). A client
    /// without plan operations gets an empty whole `plan` (a document has no entries); resolves as
    /// `updatePlan`.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn update_plan_markdown<'env>(
        &self,
        env: &'env Env,
        plan_id: String,
        content: String,
    ) -> Result<PromiseRaw<'env, bool>> {
        let op = TurnOp::UpdatePlanMarkdown { plan_id: PlanId::new(plan_id), content };
        push_gated(env, self.ops(), op, self.core_client().capabilities().plan_operations())
    }

    /// Removes the plan `planId` (`plan_removed`; for a client without plan operations, an empty
    /// `plan`). Resolves with whether the client receives the removal as such.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn remove_plan<'env>(&self, env: &'env Env, plan_id: String) -> Result<PromiseRaw<'env, bool>> {
        let op = TurnOp::RemovePlan(PlanId::new(plan_id));
        push_gated(env, self.ops(), op, self.core_client().capabilities().plan_operations())
    }

    /// Starts a subagent: a child session of this one, announced to the client with
    /// `subagent_update` (titled `title`). Exchange messages with it through the `Subagent` it
    /// resolves with, then `finish` it. Sent only to a client that advertised `subagents`
    /// (`Subagent.isVisible`); the exchange is journaled either way, and replayed to such a client
    /// by `session/load`.
    #[napi(ts_return_type = "Promise<Subagent>")]
    pub fn start_subagent<'env>(&self, env: &'env Env, title: String) -> Result<PromiseRaw<'env, Subagent>> {
        let ops = self.ops().clone();
        let visible = self.core_client().capabilities().subagents();
        ask(
            env,
            self.ops(),
            |reply| TurnOp::StartSubagent { title, reply },
            move |id: SessionId| Subagent { ops, session_id: id.0.to_string(), visible },
        )
    }
}

/// A child session started by `turn.startSubagent`: the messages between it and the turn's
/// session, as the client sees them in the parent session (`session_message`, streamed as
/// `session_message_chunk`s). Its calls are the turn's: applied in order with the turn's other
/// calls, and throwing `ERR_ACP_TURN_ENDED` once the turn is over.
#[napi]
pub struct Subagent {
    ops: TurnOps,
    session_id: String,
    visible: bool,
}

#[napi]
impl Subagent {
    /// The child session's id.
    #[napi(getter)]
    pub fn session_id(&self) -> String {
        self.session_id.clone()
    }

    /// Whether the client sees the subagent's updates (it advertised `subagents`).
    #[napi(getter)]
    pub fn is_visible(&self) -> bool {
        self.visible
    }

    /// A message from the turn's session to the child (`session_message` with `text` as its
    /// content); resolves with the message's id.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn send<'env>(&self, env: &'env Env, text: String) -> Result<PromiseRaw<'env, String>> {
        let session_id = SessionId::new(self.session_id.clone());
        ask(env, &self.ops, |reply| TurnOp::SubagentSend { session_id, text, reply }, |id: MessageId| id.0.to_string())
    }

    /// The child's reply to the turn's session: a `session_message` from the child, then each of
    /// `chunks` as a `session_message_chunk` of it, in order; resolves with the message's id.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn reply<'env>(&self, env: &'env Env, chunks: Vec<String>) -> Result<PromiseRaw<'env, String>> {
        let session_id = SessionId::new(self.session_id.clone());
        ask(
            env,
            &self.ops,
            |reply| TurnOp::SubagentReply { session_id, chunks, reply },
            |id: MessageId| id.0.to_string(),
        )
    }

    /// Reports the child idle, its work ended with `stopReason` (`subagent_update` with state
    /// `idle`); paced like `text`.
    /// @param stopReason - how the child's work ended. @default `"end_turn"`
    #[napi(ts_args_type = "stopReason?: StopReason", ts_return_type = "Promise<void>")]
    pub fn finish<'env>(&self, env: &'env Env, stop_reason: Option<String>) -> Result<PromiseRaw<'env, ()>> {
        let stop = match stop_reason {
            Some(name) => enum_value::<StopReason>("stop reason", &name)?,
            None => StopReason::EndTurn,
        };
        let op = TurnOp::SubagentFinish { session_id: SessionId::new(self.session_id.clone()), stop };
        let pace = self.ops.push(op).map_err(|e| crate::pace::refused(e, ended))?;
        crate::pace::promise(env, pace, || self.ops.drained())
    }
}
