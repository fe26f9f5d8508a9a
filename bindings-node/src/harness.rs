//! Conversion of the harness model: the events a JS host publishes.
//!
//! A JS event is `{ kind, class?, visibility?, commandId?, loopId?, turnId?, id? }`: `kind` is
//! the core's [`EventKind`] in its serde form (`{ type: "token_delta", text, channel }`, …);
//! `class` defaults to `"ephemeral"` and `visibility` to `"public"`; the hub numbers events.

use std::sync::atomic::{AtomicU64, Ordering};

use acp_facade::harness::{
    Cause, CommandId, Coordinates, Event, EventClass, EventHeader, EventId, EventKind, LoopId, TurnId, Visibility,
};
use serde::Deserialize;
use serde_json::Value;

/// An event as a JS host writes it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventInput {
    kind: EventKind,
    #[serde(default)]
    class: Option<EventClass>,
    #[serde(default)]
    visibility: Option<Visibility>,
    #[serde(default)]
    command_id: Option<String>,
    #[serde(default)]
    loop_id: Option<String>,
    #[serde(default)]
    turn_id: Option<String>,
    #[serde(default)]
    id: Option<String>,
}

static EVENT_IDS: AtomicU64 = AtomicU64::new(0);

impl EventInput {
    /// The harness event (numbered later by the hub).
    pub fn into_event(self) -> Event {
        let id = self.id.unwrap_or_else(|| format!("js-event-{}", EVENT_IDS.fetch_add(1, Ordering::Relaxed)));
        Event {
            header: EventHeader {
                id: EventId::new(id),
                seq: 0,
                class: self.class.unwrap_or(EventClass::Ephemeral),
                visibility: self.visibility.unwrap_or(Visibility::Public),
                cause: Cause { command_id: self.command_id.map(CommandId::new) },
                coordinates: Coordinates {
                    loop_id: self.loop_id.map(LoopId::new),
                    turn_id: self.turn_id.map(TurnId::new),
                },
            },
            kind: self.kind,
        }
    }
}

/// Decodes a JS event.
pub fn event_from_json(value: Value) -> Result<Event, String> {
    serde_json::from_value::<EventInput>(value).map(EventInput::into_event).map_err(|e| format!("invalid event: {e}"))
}
