//! `Agent`: an ACP agent for one connection, built from a JS host object (the host interfaces)
//! or by a `Runner`, served over stdio or over caller-supplied streams — or remotely, one agent
//! per connection made from its options ([`crate::remote`]). Its options say what it
//! accepts beyond text prompts and stdio MCP servers, and which extension methods it serves
//! ([`extensions`]).

mod extensions;

use std::collections::HashMap;

use extensions::JsFunction;
use std::time::Duration;

use acp_facade::Options;
use napi::Env;
use napi::bindgen_prelude::{Buffer, ClassInstance, Function, Object, PromiseRaw, ToNapiValue, Unknown};
use napi_derive::napi;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::callback::{BuildArgs, JsMethod, ignore};
use crate::error::{Code, Result, js_error, recode};
use crate::host::HostParts;
use crate::rpc::Connection;

/// The prompt content an agent accepts beyond text and resource links (ACP `promptCapabilities`);
/// a prompt with a block it does not advertise is refused (-32602) before the host sees it.
#[napi(object)]
#[derive(Debug, Default, Clone, Copy)]
pub struct PromptCapabilities {
    /// Image blocks. @default false
    pub image: Option<bool>,
    /// Audio blocks. @default false
    pub audio: Option<bool>,
    /// Embedded resources (`resource` blocks). @default false
    pub embedded_context: Option<bool>,
}

/// The MCP transports an agent accepts beyond stdio (ACP `mcpCapabilities`); a session request
/// naming a server of another transport is refused (-32602) before the host sees it.
#[napi(object)]
#[derive(Debug, Default, Clone, Copy)]
pub struct McpCapabilities {
    /// MCP servers over HTTP. @default false
    pub http: Option<bool>,
    /// MCP servers over server-sent events. @default false
    pub sse: Option<bool>,
}

/// Settings of an agent; every field is optional.
#[napi(object, object_to_js = false)]
pub struct AgentOptions<'a> {
    /// `agentInfo.name`. @default "acp-facade"
    pub agent_name: Option<String>,
    /// `agentInfo.version`. @default the package version
    pub agent_version: Option<String>,
    /// The largest `session/list` page. @default 50
    pub max_page_size: Option<u32>,
    /// The most live sessions at once. @default 1024
    pub max_sessions: Option<u32>,
    /// How long `session/close` waits for a session's shutdown, in ms. @default 5000
    pub close_grace_ms: Option<u32>,
    /// How long a cancelled prompt waits for its turn to end, in ms. @default 10000
    pub cancel_grace_ms: Option<u32>,
    /// The largest incoming message, in bytes. @default 67108864
    pub max_message_size: Option<u32>,
    /// Whether `/compact` is offered (host interfaces only; a runner offers it when its turn
    /// runner has `compact`). @default false
    pub compaction: Option<bool>,
    /// Whether the host takes the client's system prompt (host interfaces only; a runner takes it
    /// when its turn runner's `acceptsSystemPrompt` is true): advertised as
    /// `sessionCapabilities.systemPrompt`, and handed to the host as `setup.systemPrompt` by
    /// `newSession`, `loadSession` and `resumeSession`. Off, a client's system prompt sent anyway
    /// is left out of the setup (ACP: clients must not send it then). @default false
    pub system_prompt: Option<bool>,
    /// Whether a client that asks for ACP v2 (Preview) is served in v2; off, such a client is
    /// answered 1 and goes on in v1. Hosts and turns do not change: the core translates. v2 also
    /// needs the host's `listSessions` and `resumeSession` (a runner has both). @default false
    pub protocol_v2: Option<bool>,
    /// The order in which v1's `session/load` replays a session's conversation: `'grouped'`
    /// (every user message, then every assistant message, then the tool calls; an editor shows
    /// all the questions, then all the answers) or `'conversation'` (turn by turn as recorded, as
    /// an editor showed it live; recommended for editors). Either way the same updates with the
    /// same message ids, then the session's usage and latest plan; ACP v2's `session/resume`
    /// always replays in conversation order. Any other string throws `ERR_ACP_INVALID_ARG`.
    /// @default 'grouped'
    #[napi(ts_type = "ReplayOrder")]
    pub replay_order: Option<String>,
    /// Whether `session/close` is offered. @default true
    pub close: Option<bool>,
    /// The prompt content accepted beyond text and resource links. @default none
    pub prompt_capabilities: Option<PromptCapabilities>,
    /// The MCP transports accepted beyond stdio. @default none
    pub mcp_capabilities: Option<McpCapabilities>,
    /// Extension request handlers by name (each `_`-prefixed), advertised under
    /// `agentCapabilities._meta`: `async (params) => result`, `params` as the client sent them
    /// (`null` when absent). Throw an `AcpError` to answer with its code. Not gated by
    /// authentication.
    #[napi(ts_type = "Record<string, ExtensionMethod>")]
    pub extension_methods: Option<HashMap<String, JsFunction<'a>>>,
    /// Extension notification handlers by name (each `_`-prefixed): `async (params) => void`,
    /// called one at a time, in arrival order.
    #[napi(ts_type = "Record<string, ExtensionNotification>")]
    pub extension_notifications: Option<HashMap<String, JsFunction<'a>>>,
}

/// Applies JS options to core options; a bad extension method name or replay order is
/// `ERR_ACP_INVALID_ARG`.
pub fn apply_options(mut options: Options, js: Option<AgentOptions<'_>>) -> Result<Options> {
    let Some(js) = js else { return Ok(options) };
    if js.agent_name.is_some() || js.agent_version.is_some() {
        let name = js.agent_name.unwrap_or_else(|| options.agent_info.name.clone());
        let version = js.agent_version.unwrap_or_else(|| options.agent_info.version.clone());
        options = options.agent_info(name, version);
    }
    if let Some(n) = js.max_page_size {
        options = options.max_page_size(n as usize);
    }
    if let Some(n) = js.max_sessions {
        options = options.max_sessions(n as usize);
    }
    if let Some(ms) = js.close_grace_ms {
        options = options.close_grace(Duration::from_millis(u64::from(ms)));
    }
    if let Some(ms) = js.cancel_grace_ms {
        options = options.cancel_grace(Duration::from_millis(u64::from(ms)));
    }
    if let Some(n) = js.max_message_size {
        options = options.max_message_size(n as usize);
    }
    if let Some(on) = js.compaction {
        options = options.compaction(on);
    }
    if let Some(on) = js.system_prompt {
        options = options.system_prompt(on);
    }
    if let Some(on) = js.protocol_v2 {
        options = options.protocol_v2(on);
    }
    if let Some(name) = js.replay_order {
        let order = name.parse().map_err(|e| js_error(Code::InvalidArg, format!("replayOrder: {e}")))?;
        options = options.replay_order(order);
    }
    if let Some(on) = js.close {
        options = options.close(on);
    }
    if let Some(caps) = js.prompt_capabilities {
        options = options.prompt_capabilities(
            acp_facade::acp::PromptCapabilities::new()
                .image(caps.image.unwrap_or(false))
                .audio(caps.audio.unwrap_or(false))
                .embedded_context(caps.embedded_context.unwrap_or(false)),
        );
    }
    if let Some(caps) = js.mcp_capabilities {
        options = options.mcp_capabilities(
            acp_facade::acp::McpCapabilities::new().http(caps.http.unwrap_or(false)).sse(caps.sse.unwrap_or(false)),
        );
    }
    if js.extension_methods.is_some() || js.extension_notifications.is_some() {
        let extensions = extensions::with_handlers(
            options.extensions.clone(),
            js.extension_methods.unwrap_or_default(),
            js.extension_notifications.unwrap_or_default(),
        )?;
        options = options.extensions(extensions);
    }
    Ok(options)
}

/// An ACP agent for one connection.
#[napi]
pub struct Agent {
    agent: acp_facade::Agent,
    /// The options it was made from: `serveHttp` makes one agent per remote connection of them.
    options: Options,
}

#[napi]
impl Agent {
    /// An agent over a host implementing the host interfaces (see `Host`).
    #[napi(constructor, ts_args_type = "host: Host, options?: AgentOptions")]
    pub fn new(env: &Env, host: Object<'_>, options: Option<AgentOptions<'_>>) -> Result<Self> {
        let parts = HostParts::from_object(env, &host).map_err(recode)?;
        let session_host =
            parts.host.ok_or_else(|| js_error(Code::InvalidArg, "a host needs a `newSession` method"))?;
        let mut core = Options::new(session_host).agent_info("acp-facade", env!("CARGO_PKG_VERSION"));
        if let Some(loader) = parts.loader {
            core = core.loader(loader);
        }
        if let Some(resumer) = parts.resumer {
            core = core.resumer(resumer);
        }
        if let Some(catalog) = parts.catalog {
            core = core.catalog(catalog);
        }
        if let Some(deleter) = parts.deleter {
            core = core.deleter(deleter);
        }
        if let Some(authenticator) = parts.authenticator {
            core = core.authenticator(authenticator);
        }
        let options = apply_options(core, options)?;
        Ok(Self::from_core(acp_facade::Agent::new(options.clone()), options))
    }

    /// Serves over the process's stdin and stdout until the client hangs up; then closes every
    /// session. Nothing else may write to stdout meanwhile. Rejects with `ERR_ACP_IO`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn serve_stdio<'env>(&self, env: &'env Env) -> Result<PromiseRaw<'env, ()>> {
        let agent = self.agent.clone();
        env.spawn_future(async move {
            agent
                .serve_stdio()
                .await
                .map_err(|e| napi::Error::new(napi::Status::GenericFailure, format!("ERR_ACP_IO: {e}")))
        })
        .map_err(recode)
    }

    /// Serves over a `Connection` fed by the caller; `write` receives the agent's output, in
    /// order (return a Promise to slow the agent down). Prefer `agent.serve(input, output)`.
    #[napi(
        ts_args_type = "connection: Connection, write: (chunk: Buffer) => void | Promise<void>",
        ts_return_type = "Promise<void>"
    )]
    pub fn serve_connection<'env>(
        &self,
        env: &'env Env,
        mut connection: ClassInstance<'_, Connection>,
        write: Function<'_, Unknown<'static>, Unknown<'static>>,
    ) -> Result<PromiseRaw<'env, ()>> {
        let mut input = connection
            .take_input()
            .ok_or_else(|| js_error(Code::InvalidArg, "this connection is already being served"))?;
        let write = JsMethod::from_function(&write, "write").map_err(recode)?;
        let agent = self.agent.clone();
        env.spawn_future(async move {
            let (reader, mut feeder) = tokio::io::duplex(64 * 1024);
            let (writer, mut drain) = tokio::io::duplex(64 * 1024);
            let feed = tokio::spawn(async move {
                while let Some(chunk) = input.recv().await {
                    if feeder.write_all(&chunk).await.is_err() {
                        break;
                    }
                }
                let _ = feeder.shutdown().await;
            });
            let out = tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match drain.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let chunk = buf[..n].to_vec();
                    let args: BuildArgs = Box::new(move |env| {
                        // SAFETY: `env` is the live env of this JS thread callback.
                        Ok(vec![unsafe { Buffer::to_napi_value(env.raw(), Buffer::from(chunk)) }?])
                    });
                    if let Err(e) = write.call(args, ignore()).await {
                        tracing::warn!(error = %e.message, "the output stream failed; serving ends");
                        break;
                    }
                }
            });
            let result = agent.serve(reader, writer).await;
            let _ = out.await;
            feed.abort();
            result.map_err(|e| napi::Error::new(napi::Status::GenericFailure, format!("ERR_ACP_IO: {e}")))
        })
        .map_err(recode)
    }

    /// Serves remotely instead of on stdio: ACP over Streamable HTTP and WebSocket at
    /// `http://ADDRESS/acp` (`https://` with `tls`), each connection an agent of its own made from
    /// this agent's options (all sharing its host). Resolves with the running server once it
    /// listens. Throws `ERR_ACP_INVALID_ARG` for a bad option; rejects with `ERR_ACP_INVALID_ARG`
    /// for an address that does not resolve or is not loopback without a `tokenVerifier`, or TLS
    /// files that cannot be used, `ERR_ACP_IO` when the address cannot be bound.
    #[napi(ts_return_type = "Promise<RemoteServer>")]
    pub fn serve_http<'env>(
        &self,
        env: &'env Env,
        options: crate::remote::ServeHttpOptions<'_>,
    ) -> Result<PromiseRaw<'env, crate::remote::RemoteServer>> {
        crate::remote::serve_http(env, self.options.clone(), options)
    }

    /// How many sessions are live (over stdio or streams; not those of remote connections, each
    /// an agent of its own).
    #[napi(getter)]
    pub fn live_sessions(&self) -> u32 {
        u32::try_from(self.agent.live_sessions()).unwrap_or(u32::MAX)
    }
}

impl Agent {
    /// Wraps a core agent made from `options`.
    pub fn from_core(agent: acp_facade::Agent, options: Options) -> Self {
        Self { agent, options }
    }
}
