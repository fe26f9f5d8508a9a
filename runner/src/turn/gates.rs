//! The turn's questions beyond the plain permission request: asking the user, a form, a URL to
//! open, and permission requests with host-defined options. Each opens a gate, which the facade
//! gives the richest wire form the client supports (an elicitation when it advertised one) and
//! answers with what the user chose; a client without it leaves the gate to the product (answered
//! out of band through [`RunnerSession::answer_gate`](crate::RunnerSession::answer_gate)) or to
//! the turn's cancellation.

use serde_json::Value;

use crate::turn::Turn;
use acp_facade::acp::{ElicitationSchema, PermissionOption};
use acp_facade::harness::{ApprovalAction, Gate, GateKind, GateResolver, GateResponse, ToolCallId};

/// How the user answered a question of the turn.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Reply {
    /// The answer: an ask-user question's text (a string), a form's values (an object by field
    /// name), an open-URL step's consent (an object, usually empty).
    Answered(Value),
    /// The user declined (elicitation `decline`).
    Declined,
    /// The user dismissed the question without choosing (elicitation `cancel`).
    Dismissed,
    /// The turn was cancelled while it waited.
    Cancelled,
}

impl Reply {
    /// The answer, when there is one.
    pub fn answered(self) -> Option<Value> {
        match self {
            Self::Answered(value) => Some(value),
            _ => None,
        }
    }

    fn of(response: Option<GateResponse>) -> Self {
        match response {
            Some(GateResponse::Values(value)) => Self::Answered(value),
            Some(GateResponse::Declined) => Self::Declined,
            Some(GateResponse::Dismissed | GateResponse::Approval(_) | GateResponse::Selected(_)) => Self::Dismissed,
            None => Self::Cancelled,
        }
    }
}

/// The answer to a permission request with host-defined options.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PermissionAnswer {
    /// One of the offered controls (a denial too when the client's answer was not usable).
    Action(ApprovalAction),
    /// The host-defined option with this id.
    Selected(String),
    /// The turn was cancelled while it waited.
    Cancelled,
}

impl Turn {
    /// Asks the user a question: a form elicitation with one required string field (`answer`)
    /// when the client advertised `elicitation.form`. The primary form of a question;
    /// [`Turn::ask_user`] is its shorthand for the answer alone.
    ///
    /// ```no_run
    /// # async fn demo(turn: &acp_facade_runner::Turn) {
    /// use acp_facade_runner::Reply;
    /// match turn.ask("Which database should I use?").await {
    ///     Reply::Answered(answer) => turn.text(format!("using {answer}")).await,
    ///     Reply::Declined | Reply::Dismissed => turn.text("keeping the default").await,
    ///     _ => {} // cancelled
    /// }
    /// # }
    /// ```
    pub async fn ask(&self, question: impl Into<String>) -> Reply {
        let gate = Gate::new(self.gate_id(), GateKind::AskUser, GateResolver::Loop, question);
        Reply::of(self.wait_gate(gate).await)
    }

    /// Asks the user to fill in a form (never for secrets): a form elicitation with `schema` when
    /// the client advertised `elicitation.form`; the answer holds the values by field name.
    pub async fn fill_form(&self, message: impl Into<String>, schema: ElicitationSchema) -> Reply {
        let mut gate = Gate::new(self.gate_id(), GateKind::Form, GateResolver::Loop, message);
        gate.schema = Some(schema);
        Reply::of(self.wait_gate(gate).await)
    }

    /// Asks the user to open `url`: a URL elicitation when the client advertised
    /// `elicitation.url`. The step counts as done once the user accepted (the facade then sends
    /// `elicitation/complete`); for a step that finishes later (a sign-in), use
    /// [`Client::elicit_url`](acp_facade::client::Client::elicit_url) and
    /// [`Client::complete_elicitation`](acp_facade::client::Client::complete_elicitation) on
    /// [`Turn::client`].
    pub async fn open_url(&self, message: impl Into<String>, url: impl Into<String>) -> Reply {
        let mut gate = Gate::new(self.gate_id(), GateKind::OpenUrl, GateResolver::Loop, message);
        gate.url = Some(url.into());
        Reply::of(self.wait_gate(gate).await)
    }

    /// Asks for permission to run `call_id` offering `controls` and then the host-defined
    /// `options` (e.g. a `reject_always` option, custom names); the answer is checked against
    /// what was offered, an unusable one is a denial. The primary form of a permission request;
    /// [`Turn::request_permission`] is its shorthand without options.
    pub async fn request_permission_with_options(
        &self,
        call_id: &ToolCallId,
        title: impl Into<String>,
        controls: &[ApprovalAction],
        options: Vec<PermissionOption>,
    ) -> PermissionAnswer {
        let mut gate = Gate::new(self.gate_id(), GateKind::Permission, GateResolver::Loop, title);
        gate.tool_call_id = Some(call_id.clone());
        gate.controls = controls.to_vec();
        gate.options = options;
        match self.wait_gate(gate).await {
            Some(GateResponse::Approval(action)) => PermissionAnswer::Action(action),
            Some(GateResponse::Selected(option)) => PermissionAnswer::Selected(option),
            Some(_) => PermissionAnswer::Action(ApprovalAction::Deny),
            None => PermissionAnswer::Cancelled,
        }
    }
}
