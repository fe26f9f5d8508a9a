//! JS objects as the core's host traits.
//!
//! A host is a plain object (or class instance) whose methods return Promises or plain values;
//! optional methods switch the matching ACP capability on:
//!
//! | JS method | core trait | capability |
//! |---|---|---|
//! | `newSession(setup)` (required) | [`SessionHost`] | |
//! | `loadSession(sessionId, setup)` → `{ session, history }` | [`SessionLoader`] | `loadSession` |
//! | `resumeSession(sessionId, setup)` | [`SessionResumer`] | `sessionCapabilities.resume` |
//! | `listSessions()` | [`SessionCatalog`] | `sessionCapabilities.list` |
//! | `deleteSession(sessionId)` | [`SessionDeleter`] | `sessionCapabilities.delete` |
//! | `authenticate(methodId)` with `authMethods` | [`Authenticator`] | `authMethods` |
//!
//! A live session is an object with `id`, `events` (an `EventHub` it publishes to), `submit`,
//! `interrupt`, `respondGate`, and optionally `shutdown` ([`SessionCloser`]), `compact`
//! ([`Compactor`]), `configOptions` + `setConfigOption` ([`RuntimeConfig`]), `submitPrompt`
//! (the whole prompt: [`LiveSession::submit_prompt`]), `commands()` (its host-defined slash
//! commands, called once when the session is adapted) and `setControl` (handed the session's
//! [`control::SessionControl`]). Its methods are looked up on the object at each call, through the
//! host's one [`Invoker`]; the agent holds the object until the session is closed.
//!
//! A session-opening call hands the host the session's handle on the client as `setup.client`
//! (a [`Client`]), ordered after the session's own updates: its calls wait until the facade has
//! forwarded what the session published to its hub before them (the core's
//! [`session_order`](acp_facade::binding::session_order), told which hub once the host returned
//! the session).

pub mod control;

use std::path::PathBuf;
use std::sync::Arc;

use acp_facade::acp::{
    AuthMethod, AuthMethodId, AvailableCommand, ContentBlock, SessionConfigId, SessionConfigOption,
    SessionConfigOptionValue, SessionId,
};
use acp_facade::binding::session_order::{HubSlot, session_client};
use acp_facade::error::{Error as AcpError, ErrorExt};
use acp_facade::harness::{CommandId, Event, GateId, GateResponse, Prompt};
use acp_facade::host::{
    Authenticator, Compactor, EventStream, HostResult, LiveSession, LoadedSession, RuntimeConfig, SessionCatalog,
    SessionCatalogEntry, SessionCloser, SessionControl, SessionDeleter, SessionHost, SessionLoader, SessionResumer,
    Setup,
};
use acp_facade::hub::EventHub;
use async_trait::async_trait;
use napi::bindgen_prelude::{ClassInstance, Function, JsObjectValue, Object, ToNapiValue, Unknown};
use napi::{Env, JsValue, ValueType};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::callback::{
    BuildArgs, Convert, Invoker, JsMethod, SharedObject, ignore, no_args, serde_args, serde_convert,
};
use crate::client::Client;
use crate::harness::event_from_json;

/// `([sessionId,] setup)` as JS arguments, the setup with the session's handle on the client as
/// `client`; the core gives the setup its shape (see [`Setup`]). The returned slot takes the
/// session's hub.
fn setup_args(session_id: Option<SessionId>, setup: Setup) -> (BuildArgs, HubSlot) {
    let (client, slot) = session_client(&setup);
    let args: BuildArgs = Box::new(move |env| {
        let mut args = Vec::with_capacity(2);
        if let Some(id) = &session_id {
            args.push(env.to_js_value(&id.0)?.raw());
        }
        let mut object: Object<'_> = env.to_js_value(&setup)?.coerce_to_object()?;
        object.set_named_property("client", Client::session(client))?;
        args.push(object.raw());
        Ok(args)
    });
    (args, slot)
}

fn method(object: &Object<'_>, name: &str) -> napi::Result<Option<JsMethod>> {
    JsMethod::get(object, name)
}

fn required(object: &Object<'_>, what: &str, name: &str) -> napi::Result<JsMethod> {
    method(object, name)?
        .ok_or_else(|| napi::Error::new(napi::Status::InvalidArg, format!("{what} needs a `{name}` method")))
}

/// The host parts found on a JS host object.
#[derive(Default)]
pub struct HostParts {
    /// `newSession`.
    pub host: Option<Arc<dyn SessionHost>>,
    /// `loadSession`.
    pub loader: Option<Arc<dyn SessionLoader>>,
    /// `resumeSession`.
    pub resumer: Option<Arc<dyn SessionResumer>>,
    /// `listSessions`.
    pub catalog: Option<Arc<dyn SessionCatalog>>,
    /// `deleteSession`.
    pub deleter: Option<Arc<dyn SessionDeleter>>,
    /// `authenticate` + `authMethods`.
    pub authenticator: Option<Arc<dyn Authenticator>>,
}

impl HostParts {
    /// Reads a JS host object (on the JS thread).
    pub fn from_object(env: &Env, object: &Object<'_>) -> napi::Result<Self> {
        let new_session = required(object, "a host", "newSession")?;
        // Every live session this host makes has its methods called through this one invoker.
        let invoker = Invoker::new(env)?;
        let authenticator = authenticator(env, object)?;
        Ok(Self {
            host: Some(Arc::new(JsHost { new_session, invoker: invoker.clone() })),
            loader: method(object, "loadSession")?
                .map(|m| Arc::new(JsLoader(m, invoker.clone())) as Arc<dyn SessionLoader>),
            resumer: method(object, "resumeSession")?
                .map(|m| Arc::new(JsResumer(m, invoker.clone())) as Arc<dyn SessionResumer>),
            catalog: method(object, "listSessions")?.map(|m| Arc::new(JsCatalog(m)) as Arc<dyn SessionCatalog>),
            deleter: method(object, "deleteSession")?.map(|m| Arc::new(JsDeleter(m)) as Arc<dyn SessionDeleter>),
            authenticator,
        })
    }
}

struct JsHost {
    new_session: JsMethod,
    invoker: Invoker,
}

#[async_trait]
impl SessionHost for JsHost {
    async fn new_session(&self, setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
        let (args, slot) = setup_args(None, setup);
        let convert = live_session_convert(self.invoker.clone(), slot);
        let session = self.new_session.call(args, convert).await?;
        Ok(session)
    }
}

struct JsLoader(JsMethod, Invoker);

#[async_trait]
impl SessionLoader for JsLoader {
    async fn load_session(&self, session_id: SessionId, setup: Setup) -> HostResult<LoadedSession> {
        let (args, slot) = setup_args(Some(session_id), setup);
        let invoker = self.1.clone();
        let convert: Convert<LoadedSession> = Box::new(move |env, value| {
            let object = as_object(&value, "loadSession result")?;
            let session_value: Unknown<'_> = object.get_named_property("session").map_err(|e| {
                AcpError::internal_msg(format!("loadSession must return `{{ session, history }}`: {e}"))
            })?;
            let session = live_session_from(env, &session_value, &invoker, &slot)?;
            let history = match object.get_named_property::<Unknown<'_>>("history") {
                Ok(h) if !matches!(h.get_type(), Ok(ValueType::Undefined | ValueType::Null)) => {
                    let events: Vec<Value> = env
                        .from_js_value(h)
                        .map_err(|e| AcpError::internal_msg(format!("loadSession returned an invalid history: {e}")))?;
                    events
                        .into_iter()
                        .map(event_from_json)
                        .collect::<Result<Vec<Event>, String>>()
                        .map_err(|e| AcpError::internal_msg(format!("loadSession returned an {e}")))?
                }
                _ => Vec::new(),
            };
            Ok(LoadedSession { session, history })
        });
        self.0.call(args, convert).await
    }
}

struct JsResumer(JsMethod, Invoker);

#[async_trait]
impl SessionResumer for JsResumer {
    async fn resume_session(&self, session_id: SessionId, setup: Setup) -> HostResult<Arc<dyn LiveSession>> {
        let (args, slot) = setup_args(Some(session_id), setup);
        self.0.call(args, live_session_convert(self.1.clone(), slot)).await
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CatalogEntryInput {
    session_id: String,
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    additional_directories: Vec<PathBuf>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
}

struct JsCatalog(JsMethod);

#[async_trait]
impl SessionCatalog for JsCatalog {
    async fn list_sessions(&self) -> HostResult<Vec<SessionCatalogEntry>> {
        let entries: Vec<CatalogEntryInput> = self.0.call(no_args(), serde_convert("session list")).await?;
        Ok(entries
            .into_iter()
            .map(|e| SessionCatalogEntry {
                session_id: SessionId::new(e.session_id),
                cwd: e.cwd,
                additional_directories: e.additional_directories,
                title: e.title,
                updated_at: e.updated_at,
            })
            .collect())
    }
}

struct JsDeleter(JsMethod);

#[async_trait]
impl SessionDeleter for JsDeleter {
    async fn delete_session(&self, session_id: SessionId) -> HostResult<()> {
        self.0.call(serde_args(vec![json!(session_id.0)]), ignore()).await
    }
}

/// The authentication part of a JS object (`authenticate`, `authMethods`,
/// `requiresAuthentication`, `logout`), or `None` when it has no `authenticate` method.
pub fn authenticator(env: &Env, object: &Object<'_>) -> napi::Result<Option<Arc<dyn Authenticator>>> {
    Ok(match method(object, "authenticate")? {
        Some(authenticate) => Some(Arc::new(JsAuthenticator::from_object(env, object, authenticate)?)),
        None => None,
    })
}

struct JsAuthenticator {
    methods: Vec<AuthMethod>,
    authenticate: JsMethod,
    requires_authentication: Option<JsMethod>,
    requires_default: bool,
    logout: Option<JsMethod>,
}

impl JsAuthenticator {
    fn from_object(env: &Env, object: &Object<'_>, authenticate: JsMethod) -> napi::Result<Self> {
        let methods_value: Unknown<'_> = object.get_named_property("authMethods")?;
        let methods: Vec<AuthMethod> = if matches!(methods_value.get_type()?, ValueType::Undefined) {
            Vec::new()
        } else {
            let json: Value = env.from_js_value(methods_value)?;
            serde_json::from_value(json)
                .map_err(|e| napi::Error::new(napi::Status::InvalidArg, format!("invalid `authMethods`: {e}")))?
        };
        let requires_value: Unknown<'_> = object.get_named_property("requiresAuthentication")?;
        let requires_default = match requires_value.get_type()? {
            // SAFETY: checked to be a boolean.
            ValueType::Boolean => unsafe { requires_value.cast::<bool>() }?,
            _ => true,
        };
        Ok(Self {
            methods,
            authenticate,
            requires_authentication: method(object, "requiresAuthentication")?,
            requires_default,
            logout: method(object, "logout")?,
        })
    }
}

#[async_trait]
impl Authenticator for JsAuthenticator {
    fn methods(&self) -> Vec<AuthMethod> {
        self.methods.clone()
    }

    fn requires_authentication(&self) -> bool {
        match &self.requires_authentication {
            Some(m) => {
                m.call_blocking(no_args(), serde_convert::<bool>("requiresAuthentication answer")).unwrap_or(true)
            }
            None => self.requires_default,
        }
    }

    async fn authenticate(&self, method_id: AuthMethodId) -> HostResult<()> {
        self.authenticate.call(serde_args(vec![json!(method_id.0)]), ignore()).await
    }

    fn supports_logout(&self) -> bool {
        self.logout.is_some()
    }

    async fn logout(&self) -> HostResult<()> {
        match &self.logout {
            Some(m) => m.call(no_args(), ignore()).await,
            None => Err(AcpError::method_not_found_msg("logout")),
        }
    }
}

fn as_object<'a>(value: &Unknown<'a>, what: &str) -> Result<Object<'a>, AcpError> {
    match value.get_type() {
        // SAFETY: checked to be an object.
        Ok(ValueType::Object) => {
            unsafe { value.cast::<Object<'a>>() }.map_err(|e| AcpError::internal_msg(format!("invalid {what}: {e}")))
        }
        _ => Err(AcpError::internal_msg(format!("the Node host returned no object for {what}"))),
    }
}

fn live_session_convert(invoker: Invoker, slot: HubSlot) -> Convert<Arc<dyn LiveSession>> {
    Box::new(move |env, value| live_session_from(env, &value, &invoker, &slot))
}

/// A JS live session (on the JS thread); its methods are called through `invoker`, its hub goes
/// in `slot`.
fn live_session_from(
    env: &Env,
    value: &Unknown<'_>,
    invoker: &Invoker,
    slot: &HubSlot,
) -> Result<Arc<dyn LiveSession>, AcpError> {
    let _ = env;
    let object = as_object(value, "a live session")?;
    let invalid = |e: napi::Error| AcpError::internal_msg(format!("invalid live session: {e}"));
    let id: String = object
        .get_named_property::<String>("id")
        .map_err(|_| AcpError::internal_msg("a live session needs a string `id`"))?;
    let hub: ClassInstance<'_, crate::hub::JsEventHub> = object.get_named_property("events").map_err(|e| {
        AcpError::internal_msg(format!("a live session needs `events`, an EventHub it publishes to ({e})"))
    })?;
    let shared = SharedObject::new(invoker, &object).map_err(invalid)?;
    let opt = |name: &str| shared.method(&object, name).map_err(invalid);
    let need = |name: &str| {
        opt(name)?.ok_or_else(|| {
            AcpError::internal_msg(format!("invalid live session: a live session needs a `{name}` method"))
        })
    };
    let config = match (opt("configOptions")?, opt("setConfigOption")?) {
        (Some(snapshot), Some(set)) => Some(JsConfig { snapshot, set }),
        _ => None,
    };
    let hub = hub.hub();
    slot.set(&hub);
    Ok(Arc::new(JsLiveSession {
        id: SessionId::new(id),
        hub,
        submit: need("submit")?,
        interrupt: need("interrupt")?,
        respond_gate: need("respondGate")?,
        closer: opt("shutdown")?.map(JsCloser),
        compactor: opt("compact")?.map(JsCompactor),
        config,
        submit_prompt: opt("submitPrompt")?,
        set_control: opt("setControl")?,
        commands: commands_of(env, &object)?,
    }))
}

/// What the live session's `commands()` returns (called here, once, on the JS thread); none when
/// it has no such method.
fn commands_of(env: &Env, object: &Object<'_>) -> Result<Vec<AvailableCommand>, AcpError> {
    let invalid = |e: String| AcpError::internal_msg(format!("invalid live session: `commands()` {e}"));
    let value: Unknown<'_> = object.get_named_property("commands").map_err(|e| invalid(e.to_string()))?;
    if value.get_type().map_err(|e| invalid(e.to_string()))? != ValueType::Function {
        return Ok(Vec::new());
    }
    // SAFETY: checked to be a function.
    let function: Function<'_, (), Unknown<'_>> = unsafe { value.cast() }.map_err(|e| invalid(e.to_string()))?;
    let listed = function.apply(object, ()).map_err(|e| invalid(format!("threw: {e}")))?;
    let json: Value = env.from_js_value(listed).map_err(|e| invalid(format!("returned no JSON: {e}")))?;
    serde_json::from_value(json).map_err(|e| invalid(format!("returned an invalid command list: {e}")))
}

struct JsLiveSession {
    id: SessionId,
    hub: Arc<EventHub>,
    submit: JsMethod,
    interrupt: JsMethod,
    respond_gate: JsMethod,
    closer: Option<JsCloser>,
    compactor: Option<JsCompactor>,
    config: Option<JsConfig>,
    /// `submitPrompt`, called instead of `submit` when present.
    submit_prompt: Option<JsMethod>,
    /// `setControl`, handed the session's control once the agent serves it.
    set_control: Option<JsMethod>,
    /// What `commands()` returned when the session was adapted.
    commands: Vec<AvailableCommand>,
}

#[async_trait]
impl LiveSession for JsLiveSession {
    fn id(&self) -> SessionId {
        self.id.clone()
    }

    fn subscribe_events(&self) -> HostResult<EventStream> {
        Ok(self.hub.subscribe())
    }

    async fn submit(&self, prompt: Vec<ContentBlock>) -> HostResult<CommandId> {
        let prompt = serde_json::to_value(prompt).map_err(|e| AcpError::internal_msg(e.to_string()))?;
        let id: String = self.submit.call(serde_args(vec![prompt]), serde_convert("command id")).await?;
        Ok(CommandId::new(id))
    }

    async fn submit_prompt(&self, prompt: Prompt) -> HostResult<CommandId> {
        let Some(method) = &self.submit_prompt else { return self.submit(prompt.content).await };
        let prompt = serde_json::to_value(prompt).map_err(|e| AcpError::internal_msg(e.to_string()))?;
        let id: String = method.call(serde_args(vec![prompt]), serde_convert("command id")).await?;
        Ok(CommandId::new(id))
    }

    fn commands(&self) -> Vec<AvailableCommand> {
        self.commands.clone()
    }

    fn set_control(&self, control: Arc<dyn SessionControl>) {
        let Some(method) = &self.set_control else { return };
        method.call_detached(Box::new(move |env| {
            // SAFETY: `env` is the live env of this JS thread callback.
            Ok(vec![unsafe {
                control::SessionControl::to_napi_value(env.raw(), control::SessionControl::new(control))
            }?])
        }));
    }

    async fn interrupt(&self) -> HostResult<()> {
        self.interrupt.call(no_args(), ignore()).await
    }

    async fn respond_gate(&self, gate_id: GateId, response: GateResponse) -> HostResult<()> {
        let response = serde_json::to_value(response).map_err(|e| AcpError::internal_msg(e.to_string()))?;
        self.respond_gate.call(serde_args(vec![json!(gate_id.as_str()), response]), ignore()).await
    }

    fn closer(&self) -> Option<&dyn SessionCloser> {
        self.closer.as_ref().map(|c| c as &dyn SessionCloser)
    }

    fn compactor(&self) -> Option<&dyn Compactor> {
        self.compactor.as_ref().map(|c| c as &dyn Compactor)
    }

    fn config(&self) -> Option<&dyn RuntimeConfig> {
        self.config.as_ref().map(|c| c as &dyn RuntimeConfig)
    }
}

struct JsCloser(JsMethod);

#[async_trait]
impl SessionCloser for JsCloser {
    async fn shutdown(&self) -> HostResult<()> {
        self.0.call(no_args(), ignore()).await
    }
}

struct JsCompactor(JsMethod);

#[async_trait]
impl Compactor for JsCompactor {
    async fn compact(&self) -> HostResult<CommandId> {
        let id: String = self.0.call(no_args(), serde_convert("command id")).await?;
        Ok(CommandId::new(id))
    }
}

struct JsConfig {
    snapshot: JsMethod,
    set: JsMethod,
}

#[async_trait]
impl RuntimeConfig for JsConfig {
    async fn snapshot(&self) -> HostResult<Vec<SessionConfigOption>> {
        self.snapshot.call(no_args(), serde_convert("config options")).await
    }

    async fn set_option(&self, config_id: SessionConfigId, value: SessionConfigOptionValue) -> HostResult<()> {
        let value = match value {
            SessionConfigOptionValue::ValueId { value } => json!(value.0),
            SessionConfigOptionValue::Boolean { value } => json!(value),
            other => serde_json::to_value(other).unwrap_or(Value::Null),
        };
        self.set.call(serde_args(vec![json!(config_id.0), value]), ignore()).await
    }
}
