//! The runtime model a host speaks.
//!
//! A host's runtime is modelled as sessions that run **loops**, loops that run **turns**, and one
//! event stream per session. The facade subscribes to that stream, correlates events to the prompt
//! that caused them and translates the `Public` ones into ACP. Hosts with a runtime of their own map
//! it onto these types; hosts without one use the batteries-included runner.

pub mod content;
pub mod event;
pub mod gate;
pub mod ids;
pub mod prompt;
pub mod tool_call;
pub mod tool_content;

pub use content::{AiMessage, Message, ToolCallRequest, ToolResultMessage, UserMessage};
pub use event::{Cause, Coordinates, Event, EventClass, EventHeader, EventKind, StopReason, TokenChannel, Visibility};
pub use gate::{ApprovalAction, Gate, GateKind, GateResolver, GateResponse};
pub use ids::{CommandId, EventId, GateId, LoopId, ToolCallId, TurnId};
pub use prompt::{Prompt, SlashCommand};
pub use tool_call::{ToolCallChanges, ToolCallDetails};
