//! The request dispatcher with structured messages: every method of the protocol (and an unknown
//! one) with well-formed params for it, optionally with one field replaced by arbitrary JSON, plus
//! custom and duplicate ids, raw lines, `$/cancel_request`, answers to permission requests and
//! pauses, against an agent with every host part present (authentication required or not,
//! compaction on or off). Same invariants as `dispatcher`.

#![no_main]

use acp_facade_fuzz::chaos::{self, Answer, METHODS, Step, WireSetup};
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

#[derive(Debug, Arbitrary)]
enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Known(u8),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn value(&self, depth: usize) -> Value {
        if depth > 4 {
            return Value::Null;
        }
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => json!(b),
            Json::Int(n) => json!(n),
            Json::Float(f) => json!(f),
            Json::Str(s) => json!(s),
            Json::Known(n) => json!(["/tmp", "f1", "", "stored-1", "text", "allow_once", "mode"][usize::from(n % 7)]),
            Json::Array(items) => Value::Array(items.iter().take(8).map(|j| j.value(depth + 1)).collect()),
            Json::Object(fields) => {
                Value::Object(fields.iter().take(8).map(|(k, j)| (k.clone(), j.value(depth + 1))).collect())
            }
        }
    }
}

#[derive(Debug, Arbitrary)]
enum Id {
    Number(i8),
    Str(String),
    Null,
    Float,
    Object,
}

#[derive(Debug, Arbitrary)]
struct Call {
    method: u8,
    session: u8,
    pick: u8,
    mutation: Option<(u16, Json)>,
}

impl Call {
    fn method(&self) -> &'static str {
        METHODS[usize::from(self.method) % METHODS.len()]
    }

    fn params(&self) -> Value {
        let mut params = chaos::valid_params(self.method(), &chaos::session_name(self.session), self.pick);
        if let Some((which, replacement)) = &self.mutation {
            chaos::mutate(&mut params, usize::from(*which), replacement.value(0));
        }
        params
    }
}

#[derive(Debug, Arbitrary)]
enum FuzzStep {
    Request(Call),
    RequestWithId(Id, Call),
    Notify(Call),
    Cancel(u8),
    Raw(Vec<u8>),
    CancelRequest(u8),
    Answer(u8, Option<Json>),
    Settle,
}

#[derive(Debug, Arbitrary)]
struct Input {
    skip_initialize: bool,
    auth_required: bool,
    compaction: bool,
    close: bool,
    steps: Vec<FuzzStep>,
}

fn step(s: &FuzzStep) -> Step {
    match s {
        FuzzStep::Request(call) => Step::Request { method: call.method().into(), params: call.params() },
        FuzzStep::RequestWithId(id, call) => Step::RequestWithId {
            id: match id {
                Id::Number(n) => json!(n),
                Id::Str(s) => json!(s),
                Id::Null => Value::Null,
                Id::Float => json!(1.5),
                Id::Object => json!({"id": 1}),
            },
            method: call.method().into(),
            params: call.params(),
        },
        FuzzStep::Notify(call) => Step::Notify { method: call.method().into(), params: call.params() },
        FuzzStep::Cancel(session) => Step::Notify {
            method: "session/cancel".into(),
            params: json!({"sessionId": chaos::session_name(*session)}),
        },
        FuzzStep::Raw(bytes) => Step::Raw(bytes.clone()),
        FuzzStep::CancelRequest(back) => Step::CancelRequest { back: usize::from(back % 8) },
        FuzzStep::Answer(choice, garbage) => Step::Answer(match (choice % 6, garbage) {
            (_, Some(value)) if choice % 6 == 5 => Answer::Garbage(value.value(0)),
            (0, _) => Answer::Selected("allow_once".into()),
            (1, _) => Answer::Selected("allow_always".into()),
            (2, _) => Answer::Selected("reject_once".into()),
            (3, _) => Answer::Cancelled,
            (4, _) => Answer::Error,
            _ => Answer::Selected("bogus".into()),
        }),
        FuzzStep::Settle => Step::Settle,
    }
}

fuzz_target!(|input: Input| {
    let mut steps = Vec::new();
    if !input.skip_initialize {
        steps.push(Step::Request { method: "initialize".into(), params: chaos::valid_params("initialize", "", 0) });
    }
    steps.extend(input.steps.iter().take(64).map(step));
    let setup = WireSetup {
        auth_required: input.auth_required,
        compaction: input.compaction,
        close: !input.close,
        ..WireSetup::default()
    };
    chaos::run_steps(&setup, &steps).assert_ok(setup.max_message_size);
});
