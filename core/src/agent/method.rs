//! The wire names of the methods the agent handles and sends.

/// `initialize`.
pub(super) const INITIALIZE: &str = "initialize";
/// `authenticate`.
pub(super) const AUTHENTICATE: &str = "authenticate";
/// `logout`.
pub(super) const LOGOUT: &str = "logout";
/// `session/new`.
pub(super) const SESSION_NEW: &str = "session/new";
/// `session/prompt`.
pub(super) const SESSION_PROMPT: &str = "session/prompt";
/// `session/load`.
pub(super) const SESSION_LOAD: &str = "session/load";
/// `session/resume`.
pub(super) const SESSION_RESUME: &str = "session/resume";
/// `session/list`.
pub(super) const SESSION_LIST: &str = "session/list";
/// `session/delete`.
pub(super) const SESSION_DELETE: &str = "session/delete";
/// `session/close`.
pub(super) const SESSION_CLOSE: &str = "session/close";
/// `session/set_mode`.
pub(super) const SESSION_SET_MODE: &str = "session/set_mode";
/// `session/set_config_option`.
pub(super) const SESSION_SET_CONFIG_OPTION: &str = "session/set_config_option";
/// `session/cancel`.
pub(super) const SESSION_CANCEL: &str = "session/cancel";
/// `session/update` (agent → client).
pub(super) const SESSION_UPDATE: &str = "session/update";
/// `session/request_permission` (agent → client).
pub(super) const SESSION_REQUEST_PERMISSION: &str = "session/request_permission";
