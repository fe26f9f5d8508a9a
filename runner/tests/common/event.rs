//! The one event builder the test hosts share (the scripted host, the chaos host and, by path, the
//! fuzz targets).

use acp_facade::acp::SessionId;
use acp_facade::harness::{
    Cause, CommandId, Coordinates, Event, EventClass, EventHeader, EventId, EventKind, LoopId, TurnId, Visibility,
};

/// An event of `session` numbered `seq`, with the given header parts.
pub fn make_event(
    session: &SessionId,
    seq: u64,
    kind: EventKind,
    class: EventClass,
    visibility: Visibility,
    command: Option<&CommandId>,
    at: Option<(&str, &str)>,
) -> Event {
    Event {
        header: EventHeader {
            id: EventId::new(format!("{session}-e{seq}")),
            seq,
            class,
            visibility,
            cause: Cause { command_id: command.cloned() },
            coordinates: Coordinates {
                loop_id: at.map(|(l, _)| LoopId::new(l)),
                turn_id: at.map(|(_, t)| TurnId::new(t)),
            },
        },
        kind,
    }
}
