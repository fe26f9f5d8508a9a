//! Identifiers of the runtime model: opaque strings, cheap to clone, compared by value.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Arc<str>);

        impl $name {
            /// Wraps a string.
            pub fn new(id: impl Into<Arc<str>>) -> Self {
                Self(id.into())
            }

            /// The id as a string.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), &*self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self::new(s)
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self::new(s)
            }
        }
    };
}

id_type!(
    /// Identifies one event in a session's stream.
    EventId
);
id_type!(
    /// Identifies a command submitted to a session (a prompt, a compaction); events it causes carry
    /// it in [`Cause::command_id`](super::Cause).
    CommandId
);
id_type!(
    /// Identifies a loop inside a session.
    LoopId
);
id_type!(
    /// Identifies a turn inside a loop.
    TurnId
);
id_type!(
    /// Identifies a gate: a point where a turn waits for an answer.
    GateId
);
id_type!(
    /// Identifies a tool call; unique within its session.
    ToolCallId
);
