//! A client that really is an editor, as far as the demo can tell: it serves `fs/read_text_file`
//! and `fs/write_text_file` from the real file system, runs `terminal/*` commands as real
//! processes (their output captured, their exit status real), and answers `elicitation/create`
//! with the answers a test queued.

use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{Value, json};

use super::{Demo, is_response_to};

/// One running (or finished) command.
struct Term {
    child: Child,
    output: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
    exit: Option<Value>,
}

impl Term {
    /// Waits for the command and its output; the exit status as ACP writes it.
    fn wait(&mut self) -> Value {
        if let Some(exit) = &self.exit {
            return exit.clone();
        }
        let status = self.child.wait().expect("wait for a terminal's command");
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        let exit = exit_status(status);
        self.exit = Some(exit.clone());
        exit
    }

    fn try_exit(&mut self) -> Option<Value> {
        if self.exit.is_none() && self.child.try_wait().ok().flatten().is_some() {
            return Some(self.wait());
        }
        self.exit.clone()
    }
}

fn exit_status(status: std::process::ExitStatus) -> Value {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => json!({"exitCode": code, "signal": null}),
        (None, Some(signal)) => json!({"exitCode": null, "signal": format!("SIG{signal}")}),
        (None, None) => json!({"exitCode": null, "signal": null}),
    }
}

/// The editor; see the module doc.
#[derive(Default)]
pub struct Editor {
    terminals: HashMap<String, Term>,
    next_terminal: u64,
    /// The results `elicitation/create` is answered with, in order.
    pub elicitations: VecDeque<Value>,
    /// When set, the next request with this method is answered with this error object.
    pub fail_next: Option<(String, Value)>,
    /// Leave `terminal/wait_for_exit` unanswered (for cancellation tests): its ids land here.
    pub hold_waits: bool,
    /// The ids of the held `terminal/wait_for_exit` requests.
    pub held: Vec<Value>,
    /// Every terminal method served, with its terminal id (`terminal/create` with the new id).
    pub terminal_log: Vec<(String, String)>,
}

impl Editor {
    /// Whether the editor serves `method`.
    pub fn serves(method: &str) -> bool {
        method.starts_with("fs/") || method.starts_with("terminal/") || method == "elicitation/create"
    }

    /// Serves one request of the agent (which must be one [`Editor::serves`]).
    pub fn serve(&mut self, demo: &mut Demo, request: &Value) {
        let method = request["method"].as_str().expect("a request");
        let id = &request["id"];
        let params = &request["params"];
        if let Some((failing, error)) = self.fail_next.take() {
            if failing == method {
                demo.respond_error(id, error);
                return;
            }
            self.fail_next = Some((failing, error));
        }
        let result = if method.starts_with("fs/") {
            match Self::file(method, params) {
                Ok(result) => result,
                Err(error) => {
                    demo.respond_error(id, error);
                    return;
                }
            }
        } else if method.starts_with("terminal/") {
            match self.terminal(method, id, params) {
                Some(result) => result,
                None => return,
            }
        } else if method == "elicitation/create" {
            self.elicitations.pop_front().expect("an elicitation answer was queued")
        } else {
            panic!("the editor does not serve `{method}`")
        };
        demo.respond(id, result);
    }

    /// An `fs/*` request's result, or the error to answer.
    fn file(method: &str, params: &Value) -> Result<Value, Value> {
        Ok(match method {
            "fs/read_text_file" => match std::fs::read_to_string(params["path"].as_str().unwrap()) {
                Ok(text) => {
                    let skip = params["line"].as_u64().map_or(0, |l| l.saturating_sub(1));
                    let take = params["limit"].as_u64().unwrap_or(u64::MAX);
                    let lines: Vec<&str> = text.split_inclusive('\n').collect();
                    let content: String = lines
                        .iter()
                        .skip(usize::try_from(skip).unwrap())
                        .take(usize::try_from(take).unwrap_or(usize::MAX))
                        .copied()
                        .collect();
                    json!({"content": content})
                }
                Err(e) => {
                    return Err(json!({"code": -32002, "message": format!("Resource not found: {e}"),
                                      "data": {"uri": params["path"]}}));
                }
            },
            "fs/write_text_file" => {
                std::fs::write(params["path"].as_str().unwrap(), params["content"].as_str().unwrap()).unwrap();
                Value::Null
            }
            other => panic!("the editor does not serve `{other}`"),
        })
    }

    /// A `terminal/*` request's result, or `None` when it is held unanswered.
    fn terminal(&mut self, method: &str, id: &Value, params: &Value) -> Option<Value> {
        let terminal_id = params["terminalId"].as_str().unwrap_or_default().to_owned();
        Some(match method {
            "terminal/create" => {
                let mut command = Command::new(params["command"].as_str().unwrap());
                for arg in params["args"].as_array().into_iter().flatten() {
                    command.arg(arg.as_str().unwrap());
                }
                for var in params["env"].as_array().into_iter().flatten() {
                    command.env(var["name"].as_str().unwrap(), var["value"].as_str().unwrap());
                }
                if let Some(cwd) = params["cwd"].as_str() {
                    command.current_dir(cwd);
                }
                let mut child = command
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn a terminal's command");
                let output = Arc::new(Mutex::new(Vec::new()));
                let mut readers = Vec::new();
                let pipes: [Box<dyn Read + Send>; 2] =
                    [Box::new(child.stdout.take().unwrap()), Box::new(child.stderr.take().unwrap())];
                for mut pipe in pipes {
                    let output = output.clone();
                    readers.push(std::thread::spawn(move || {
                        let mut buffer = [0u8; 4096];
                        while let Ok(n) = pipe.read(&mut buffer) {
                            if n == 0 {
                                break;
                            }
                            output.lock().unwrap().extend_from_slice(&buffer[..n]);
                        }
                    }));
                }
                self.next_terminal += 1;
                let new_id = format!("term-{}", self.next_terminal);
                self.terminals.insert(new_id.clone(), Term { child, output, readers, exit: None });
                self.terminal_log.push((method.to_owned(), new_id.clone()));
                json!({"terminalId": new_id})
            }
            "terminal/output" => {
                self.terminal_log.push((method.to_owned(), terminal_id.clone()));
                let term = self.terminals.get_mut(&terminal_id).expect("a live terminal");
                let exit = term.try_exit();
                let output = String::from_utf8_lossy(&term.output.lock().unwrap()).into_owned();
                let mut result = json!({"output": output, "truncated": false});
                if let Some(exit) = exit {
                    result["exitStatus"] = exit;
                }
                result
            }
            "terminal/wait_for_exit" => {
                self.terminal_log.push((method.to_owned(), terminal_id.clone()));
                if self.hold_waits {
                    self.held.push(id.clone());
                    return None;
                }
                self.terminals.get_mut(&terminal_id).expect("a live terminal").wait()
            }
            "terminal/kill" => {
                self.terminal_log.push((method.to_owned(), terminal_id.clone()));
                let term = self.terminals.get_mut(&terminal_id).expect("a live terminal");
                let _ = term.child.kill();
                term.wait();
                json!({})
            }
            "terminal/release" => {
                self.terminal_log.push((method.to_owned(), terminal_id.clone()));
                let mut term = self.terminals.remove(&terminal_id).expect("a terminal released once");
                let _ = term.child.kill();
                term.wait();
                json!({})
            }
            other => panic!("the editor does not serve `{other}`"),
        })
    }

    /// Prompts `text` and serves the agent's requests until the prompt is answered; returns the
    /// response and every message before it (the served requests included).
    pub fn prompt(&mut self, demo: &mut Demo, session: &str, text: &str) -> (Value, Vec<Value>) {
        let id = demo.prompt(session, text);
        self.until_response(demo, &id)
    }

    /// Serves the agent's requests until the response to `id`; returns it and what came before.
    pub fn until_response(&mut self, demo: &mut Demo, id: &Value) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let message = demo.next();
            if is_response_to(&message, id) {
                return (message, before);
            }
            let method = message.get("method").and_then(Value::as_str);
            if let (Some(method), Some(_)) = (method, message.get("id"))
                && Self::serves(method)
            {
                self.serve(demo, &message);
            }
            before.push(message);
        }
    }

    /// Whether terminal `id` still exists here (created and not released).
    pub fn has_terminal(&self, id: &str) -> bool {
        self.terminals.contains_key(id)
    }
}

impl Drop for Term {
    /// No command outlives its test.
    fn drop(&mut self) {
        if self.exit.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
