//! The wire names of the methods the agent calls on the client (schema v1.21.0), and the
//! capability each needs.

/// `fs/read_text_file` (capability `fs.readTextFile`).
pub const FS_READ_TEXT_FILE: &str = "fs/read_text_file";
/// `fs/write_text_file` (capability `fs.writeTextFile`).
pub const FS_WRITE_TEXT_FILE: &str = "fs/write_text_file";
/// `terminal/create` (capability `terminal`, as every `terminal/*` method).
pub const TERMINAL_CREATE: &str = "terminal/create";
/// `terminal/output`.
pub const TERMINAL_OUTPUT: &str = "terminal/output";
/// `terminal/wait_for_exit`.
pub const TERMINAL_WAIT_FOR_EXIT: &str = "terminal/wait_for_exit";
/// `terminal/kill`.
pub const TERMINAL_KILL: &str = "terminal/kill";
/// `terminal/release`.
pub const TERMINAL_RELEASE: &str = "terminal/release";
/// `elicitation/create` (capability `elicitation.form` or `elicitation.url`, by mode).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// `elicitation/complete`, a notification (capability `elicitation.url`).
pub const ELICITATION_COMPLETE: &str = "elicitation/complete";
