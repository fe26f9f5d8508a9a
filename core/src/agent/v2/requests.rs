//! The client's v2 requests in v1 terms, and the answers of the session methods in v2's.

use serde_json::{Map, Value, json};

use super::super::method;
use crate::error::{Error, ErrorExt};
use crate::rpc::{Answer, Params};

/// How a v2 request is served: the v1 method that serves it, its params in v1's form, and how
/// its answer is rewritten.
pub(in super::super) struct Mapped {
    /// The v1 method.
    pub(in super::super) method: &'static str,
    /// The params, rewritten when v2's differ.
    pub(in super::super) params: Params,
    /// How the answer is rewritten.
    pub(in super::super) answer: AnswerForm,
}

/// How a v1 answer becomes v2's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in super::super) enum AnswerForm {
    /// Unchanged.
    Same,
    /// A session's set-up answer (`session/new`, `resume`): `configOptions` in v2's form, no
    /// `modes`.
    SessionSetup,
    /// `session/set_config_option`: `configOptions` in v2's form.
    ConfigOptions,
}

/// Maps a v2 request; `Err` for a method v2 does not have (or params it refuses).
pub(in super::super) fn map(method_name: &str, params: Params) -> Result<Mapped, Error> {
    let same = |method: &'static str, params: Params| Mapped { method, params, answer: AnswerForm::Same };
    Ok(match method_name {
        // The hot path, unchanged.
        method::SESSION_PROMPT => same(method::SESSION_PROMPT, params),
        "auth/login" => same(method::AUTHENTICATE, params),
        "auth/logout" => same(method::LOGOUT, params),
        method::SESSION_NEW => Mapped {
            method: method::SESSION_NEW,
            params: Params::from(session_setup(params.into_value())?),
            answer: AnswerForm::SessionSetup,
        },
        method::SESSION_RESUME => {
            let mut params = session_setup(params.into_value())?;
            let replay = match params.as_object_mut().and_then(|p| p.remove("replayFrom")) {
                None | Some(Value::Null) => false,
                Some(from) if from.get("type").and_then(Value::as_str) == Some("start") => true,
                Some(from) => {
                    return Err(Error::invalid_params_msg(format!(
                        "invalid params at `replayFrom`: unsupported replay position {from}"
                    )));
                }
            };
            let method = if replay { method::SESSION_LOAD } else { method::SESSION_RESUME };
            // The replay ends with `replay_complete` (see `establish`).
            Mapped { method, params: Params::from(params), answer: AnswerForm::SessionSetup }
        }
        method::SESSION_SET_CONFIG_OPTION => {
            Mapped { method: method::SESSION_SET_CONFIG_OPTION, params, answer: AnswerForm::ConfigOptions }
        }
        method::SESSION_LIST => same(method::SESSION_LIST, params),
        method::SESSION_CLOSE => same(method::SESSION_CLOSE, params),
        method::SESSION_DELETE => same(method::SESSION_DELETE, params),
        // Removed in v2.
        method::SESSION_LOAD | method::SESSION_SET_MODE | method::AUTHENTICATE | method::LOGOUT => {
            return Err(Error::method_not_found_msg(method_name));
        }
        // Extension methods (and anything unknown, which the router refuses).
        _ => Mapped { method: "", params, answer: AnswerForm::Same },
    })
}

/// The params of `session/new` or `session/resume` in v1's form: `mcpServers` present, stdio
/// servers without their `type` and with `args` and `env`, http servers with `headers`.
fn session_setup(mut params: Value) -> Result<Value, Error> {
    let Some(object) = params.as_object_mut() else {
        return Err(Error::invalid_params_msg("invalid params: expected an object"));
    };
    let servers = match object.remove("mcpServers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(servers)) => servers,
        Some(_) => return Err(Error::invalid_params_msg("invalid params at `mcpServers`: expected an array")),
    };
    let servers: Vec<Value> = servers.into_iter().map(mcp_server).collect::<Result<_, _>>()?;
    object.insert("mcpServers".to_owned(), Value::Array(servers));
    Ok(params)
}

fn mcp_server(server: Value) -> Result<Value, Error> {
    let Value::Object(mut server) = server else {
        return Err(Error::invalid_params_msg("invalid params at `mcpServers`: a server must be an object"));
    };
    match server.get("type").and_then(Value::as_str) {
        Some("stdio") => {
            server.remove("type");
            server.entry("args").or_insert_with(|| json!([]));
            server.entry("env").or_insert_with(|| json!([]));
        }
        Some("http") => {
            server.entry("headers").or_insert_with(|| json!([]));
        }
        other => {
            let what = other.map_or_else(|| "a server without a `type`".to_owned(), |t| format!("type `{t}`"));
            return Err(Error::invalid_params_msg(format!(
                "invalid params at `mcpServers`: {what} is not an MCP transport of ACP v2"
            )));
        }
    }
    Ok(Value::Object(server))
}

/// The v1 `answer` in v2's form.
pub(in super::super) fn answer(form: AnswerForm, answer: Answer) -> Answer {
    if form == AnswerForm::Same {
        return answer;
    }
    let mut value = answer.into_value();
    if let Some(object) = value.as_object_mut() {
        object.remove("modes");
        if let Some(options) = object.get_mut("configOptions") {
            config_options(options);
        }
    }
    Answer::from(value)
}

/// Config options in v2's form, in place: `id` is `configId`, a group's `group` is `groupId`.
pub(super) fn config_options(options: &mut Value) {
    let Some(options) = options.as_array_mut() else { return };
    for option in options.iter_mut().filter_map(Value::as_object_mut) {
        rename(option, "id", "configId");
        if let Some(groups) = option.get_mut("options").and_then(Value::as_array_mut) {
            for group in groups.iter_mut().filter_map(Value::as_object_mut) {
                rename(group, "group", "groupId");
            }
        }
    }
}

fn rename(object: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(value) = object.remove(from) {
        object.insert(to.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn mapped(method: &str, params: Value) -> Result<(String, Value, AnswerForm), Error> {
        map(method, Params::from(params)).map(|m| (m.method.to_owned(), m.params.into_value(), m.answer))
    }

    #[test]
    fn auth_methods_are_renamed_and_the_methods_v2_removed_are_unknown() {
        assert_eq!(mapped("auth/login", json!({"methodId": "m"})).unwrap().0, method::AUTHENTICATE);
        assert_eq!(mapped("auth/logout", json!({})).unwrap().0, method::LOGOUT);
        for removed in [method::SESSION_LOAD, method::SESSION_SET_MODE, method::AUTHENTICATE, method::LOGOUT] {
            let error = mapped(removed, json!({})).expect_err("removed in v2");
            assert_eq!(error.code, crate::error::ErrorCode::MethodNotFound, "{removed}");
        }
    }

    #[test]
    fn a_resume_with_a_replay_from_the_start_is_a_load_and_any_other_position_is_refused() {
        let params = json!({"sessionId": "s", "cwd": "/w", "replayFrom": {"type": "start"}});
        let (method, params, form) = mapped(method::SESSION_RESUME, params).unwrap();
        assert_eq!((method.as_str(), form), (method::SESSION_LOAD, AnswerForm::SessionSetup));
        assert_eq!(params, json!({"sessionId": "s", "cwd": "/w", "mcpServers": []}));
        let (method, ..) = mapped(method::SESSION_RESUME, json!({"sessionId": "s", "cwd": "/w"})).unwrap();
        assert_eq!(method, method::SESSION_RESUME);
        let error =
            mapped(method::SESSION_RESUME, json!({"sessionId": "s", "cwd": "/w", "replayFrom": {"type": "cursor"}}))
                .expect_err("an unknown position");
        assert!(error.message.contains("replayFrom"), "{}", error.message);
    }

    #[test]
    fn mcp_servers_take_v1s_form_and_sse_is_refused() {
        let params = json!({"cwd": "/w", "mcpServers": [
            {"type": "stdio", "name": "fs", "command": "/bin/fs"},
            {"type": "http", "name": "web", "url": "https://x"},
        ]});
        let (_, params, _) = mapped(method::SESSION_NEW, params).unwrap();
        assert_eq!(
            params["mcpServers"],
            json!([
                {"name": "fs", "command": "/bin/fs", "args": [], "env": []},
                {"type": "http", "name": "web", "url": "https://x", "headers": []},
            ])
        );
        let sse = json!({"cwd": "/w", "mcpServers": [{"type": "sse", "name": "old", "url": "https://x"}]});
        assert_eq!(mapped(method::SESSION_NEW, sse).expect_err("sse").code, crate::error::ErrorCode::InvalidParams);
    }

    #[test]
    fn session_answers_lose_their_modes_and_key_config_options_by_config_id() {
        let v1 = json!({"sessionId": "s", "modes": {"currentModeId": "ask"}, "configOptions": [
            {"id": "mode", "type": "select", "currentValue": "ask", "options": [{"group": "g", "name": "G", "options": []}]},
        ]});
        let v2 = answer(AnswerForm::SessionSetup, Answer::from(v1)).into_value();
        assert!(v2.get("modes").is_none());
        assert_eq!(v2["configOptions"][0]["configId"], "mode");
        assert!(v2["configOptions"][0].get("id").is_none());
        assert_eq!(v2["configOptions"][0]["options"][0]["groupId"], "g");
    }
}
