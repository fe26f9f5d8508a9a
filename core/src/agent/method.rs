//! The wire names of the methods the agent handles and sends.

/// `initialize`.
pub const INITIALIZE: &str = "initialize";
/// `authenticate`.
pub const AUTHENTICATE: &str = "authenticate";
/// `logout`.
pub const LOGOUT: &str = "logout";
/// `session/new`.
pub const SESSION_NEW: &str = "session/new";
/// `session/prompt`.
pub const SESSION_PROMPT: &str = "session/prompt";
/// `session/load`.
pub const SESSION_LOAD: &str = "session/load";
/// `session/resume`.
pub const SESSION_RESUME: &str = "session/resume";
/// `session/list`.
pub const SESSION_LIST: &str = "session/list";
/// `session/delete`.
pub const SESSION_DELETE: &str = "session/delete";
/// `session/close`.
pub const SESSION_CLOSE: &str = "session/close";
/// `session/set_mode`.
pub const SESSION_SET_MODE: &str = "session/set_mode";
/// `session/set_config_option`.
pub const SESSION_SET_CONFIG_OPTION: &str = "session/set_config_option";
/// `session/cancel`.
pub const SESSION_CANCEL: &str = "session/cancel";
/// `session/update` (agent → client).
pub const SESSION_UPDATE: &str = "session/update";
/// `session/request_permission` (agent → client).
pub const SESSION_REQUEST_PERMISSION: &str = "session/request_permission";
