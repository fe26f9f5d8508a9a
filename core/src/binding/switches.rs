//! The switches of the bindings' performance mechanisms, each read here and nowhere else.
//!
//! Every mechanism that only makes the bindings faster has a plain path beside it that gives the
//! same results (order, answers, errors), and one environment variable that selects that path:
//! set to `1` in the agent process's environment, the mechanism is off. Each variable is read
//! once per process, the first time its mechanism asks (so the value of the process's start is
//! the one that counts: set it before the binding is loaded). Both bindings ask here, so that a
//! switch means the same in each; docs/internals/ describes each mechanism and its switch.
//!
//! | function | variable | the mechanism it switches off |
//! |---|---|---|
//! | [`sched_batch`] | `ACP_FACADE_NO_SCHED_BATCH` | the runtime's threads in `SCHED_BATCH` ([`runtime`](super::runtime)) |
//! | [`uv_relay`] | `ACP_FACADE_NO_UV_RELAY` | Node: calls and settles relayed by a libuv handle of the binding's own |
//! | [`eventfd`] | `ACP_FACADE_NO_EVENTFD` | Python: the asyncio loop woken through an eventfd |
//!
//! Each function answers whether its mechanism may be used; whether it is (the platform has it,
//! its set-up worked) is its user's to decide, and falls back on the same plain path.

use std::ffi::OsStr;
use std::sync::OnceLock;

/// The variable that switches off `SCHED_BATCH` for the bindings' runtime threads.
pub const NO_SCHED_BATCH: &str = "ACP_FACADE_NO_SCHED_BATCH";
/// The variable that switches off the Node binding's libuv relay.
pub const NO_UV_RELAY: &str = "ACP_FACADE_NO_UV_RELAY";
/// The variable that switches off the Python binding's eventfd wake-up.
pub const NO_EVENTFD: &str = "ACP_FACADE_NO_EVENTFD";

/// Whether the runtime's threads may be put in `SCHED_BATCH`: not when `ACP_FACADE_NO_SCHED_BATCH`
/// is `1`.
pub fn sched_batch() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| !switched_off(NO_SCHED_BATCH))
}

/// Whether the Node binding may relay calls and settles through its own libuv handle: not when
/// `ACP_FACADE_NO_UV_RELAY` is `1` (they then go to Node's threadsafe functions directly).
pub fn uv_relay() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| !switched_off(NO_UV_RELAY))
}

/// Whether the Python binding may wake the asyncio loop through an eventfd: not when
/// `ACP_FACADE_NO_EVENTFD` is `1` (it then uses a socket pair, as where there is no eventfd).
pub fn eventfd() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| !switched_off(NO_EVENTFD))
}

/// Whether `variable` is set to `1` in the process's environment.
fn switched_off(variable: &str) -> bool {
    is_one(std::env::var_os(variable).as_deref())
}

/// Whether a variable's value switches its mechanism off: `1`, nothing else.
fn is_one(value: Option<&OsStr>) -> bool {
    value.is_some_and(|value| value == "1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_one_switches_a_mechanism_off() {
        assert!(is_one(Some(OsStr::new("1"))));
        for value in ["0", "", "yes", "true", " 1"] {
            assert!(!is_one(Some(OsStr::new(value))), "{value:?}");
        }
        assert!(!is_one(None));
    }
}
