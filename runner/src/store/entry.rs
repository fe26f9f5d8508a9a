//! A journal entry's text: the events of one append, as the stores keep them.
//!
//! An entry is a JSON array of events in order. Each event is written in the **compact form**: its
//! header's fields beside its `kind`, each left out when it holds what nearly every journaled
//! event holds —
//!
//! | field | written when | read back when absent as |
//! |---|---|---|
//! | `seq` | always | (required) |
//! | `id` | it is not `<session>#<seq>` (the runner's ids) | `<session>#<seq>` |
//! | `class` | not `enduring` | `enduring` |
//! | `visibility` | not `public` | `public` |
//! | `command` | the cause names a command | no command |
//! | `loop`, `turn` | set | not set |
//!
//! so a turn's header costs `{"seq":4,"loop":"main","turn":"t1"}` instead of about 200 bytes that
//! repeat the session id — half the entry of a short turn, and half the encoding work on the
//! path every turn takes before its response.
//!
//! Invariants: decoding an encoded entry gives back exactly the events encoded, whatever they
//! hold (a test checks every field in both states); an entry in the **full form** (each event as
//! `{"header": {…}, "kind": {…}}`), which stores wrote before the compact form, is read as before.
//! Stores whose files may hold compact entries record a schema version that older code refuses.

use serde::{Deserialize, Serialize};

use crate::ids::{event_id, is_event_id};
use acp_facade::acp::SessionId;
use acp_facade::harness::{
    Cause, CommandId, Coordinates, Event, EventClass, EventHeader, EventId, EventKind, LoopId, TurnId, Visibility,
};

/// Appends the entry of `events`, in the compact form, to `out`.
///
/// The frame — brackets, braces, member names, `seq` — is written directly: its names are fixed
/// and need no escaping, and this is the path every turn takes before its response (serde's map
/// serialiser escapes each name as it would any string). Every value that is text goes through
/// `serde_json`.
pub(crate) fn encode(out: &mut Vec<u8>, session: &SessionId, events: &[Event]) -> serde_json::Result<()> {
    out.push(b'[');
    for (n, event) in events.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        encode_compact(out, session, event)?;
    }
    out.push(b']');
    Ok(())
}

/// The events of an entry of `session`, in either form.
pub(crate) fn decode(session: &SessionId, entry: &str) -> serde_json::Result<Vec<Event>> {
    let stored: Vec<Stored> = serde_json::from_str(entry)?;
    stored.into_iter().map(|event| event.into_event(session)).collect()
}

/// Appends one event in the compact form (see the module doc).
fn encode_compact(out: &mut Vec<u8>, session: &SessionId, event: &Event) -> serde_json::Result<()> {
    let header = &event.header;
    out.extend_from_slice(b"{\"seq\":");
    serde_json::to_writer(&mut *out, &header.seq)?;
    if !is_event_id(header.id.as_str(), session, header.seq) {
        member(out, "id", &header.id)?;
    }
    if header.class != EventClass::Enduring {
        member(out, "class", &header.class)?;
    }
    if header.visibility != Visibility::Public {
        member(out, "visibility", &header.visibility)?;
    }
    if let Some(command) = &header.cause.command_id {
        member(out, "command", command)?;
    }
    if let Some(loop_id) = &header.coordinates.loop_id {
        member(out, "loop", loop_id)?;
    }
    if let Some(turn_id) = &header.coordinates.turn_id {
        member(out, "turn", turn_id)?;
    }
    member(out, "kind", &event.kind)?;
    out.push(b'}');
    Ok(())
}

/// Appends `,"name":value`; `name` is one of the compact form's fixed member names (plain ASCII,
/// nothing to escape).
fn member(out: &mut Vec<u8>, name: &str, value: &impl Serialize) -> serde_json::Result<()> {
    out.extend_from_slice(b",\"");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
    serde_json::to_writer(&mut *out, value)
}

/// An event as read from an entry: the full form's `header`, or the compact form's fields.
#[derive(Deserialize)]
struct Stored {
    header: Option<EventHeader>,
    seq: Option<u64>,
    id: Option<EventId>,
    class: Option<EventClass>,
    visibility: Option<Visibility>,
    command: Option<CommandId>,
    #[serde(rename = "loop")]
    loop_id: Option<LoopId>,
    turn: Option<TurnId>,
    kind: EventKind,
}

impl Stored {
    fn into_event(self, session: &SessionId) -> serde_json::Result<Event> {
        if let Some(header) = self.header {
            return Ok(Event { header, kind: self.kind });
        }
        let seq = self.seq.ok_or_else(|| serde::de::Error::missing_field("seq"))?;
        let header = EventHeader {
            id: self.id.unwrap_or_else(|| event_id(session, seq)),
            seq,
            class: self.class.unwrap_or(EventClass::Enduring),
            visibility: self.visibility.unwrap_or(Visibility::Public),
            cause: Cause { command_id: self.command },
            coordinates: Coordinates { loop_id: self.loop_id, turn_id: self.turn },
        };
        Ok(Event { header, kind: self.kind })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_facade::harness::UserMessage;

    fn session() -> SessionId {
        SessionId::new("sess_1")
    }

    fn event(id: &str, seq: u64) -> Event {
        Event::plain(id, seq, EventKind::ContextMeasured { used: seq, size: 10, cost: None })
    }

    fn round_trip(events: &[Event]) -> (String, Vec<Event>) {
        let mut out = Vec::new();
        encode(&mut out, &session(), events).expect("encode");
        let text = String::from_utf8(out).expect("UTF-8");
        let back = decode(&session(), &text).expect("decode");
        (text, back)
    }

    #[test]
    fn a_runner_turn_is_written_compactly_and_read_back_whole() {
        let mut started = event("sess_1#7", 7);
        started.header.cause.command_id = Some(CommandId::new("sess_1/c2"));
        started.header.coordinates =
            Coordinates { loop_id: Some(LoopId::new("main")), turn_id: Some(TurnId::new("t2")) };
        started.kind =
            EventKind::TurnStarted { message: UserMessage::new(vec![acp_facade::acp::ContentBlock::from("hello")]) };
        let mut done = event("sess_1#8", 8);
        done.header.coordinates = started.header.coordinates.clone();
        done.kind = EventKind::TurnDone { message: None, stop: Some(acp_facade::acp::StopReason::EndTurn) };

        let (text, back) = round_trip(&[started.clone(), done.clone()]);
        assert_eq!(back, vec![started, done]);
        assert!(
            text.starts_with(
                r#"[{"seq":7,"command":"sess_1/c2","loop":"main","turn":"t2","kind":{"type":"turn_started""#
            ),
            "{text}"
        );
        assert!(text.contains(r#"{"seq":8,"loop":"main","turn":"t2","kind":"#), "{text}");
        assert!(!text.contains("enduring") && !text.contains("public") && !text.contains("sess_1#"), "{text}");
    }

    #[test]
    fn every_header_field_away_from_its_default_survives() {
        let mut odd = event("my-own-id", 3);
        odd.header.class = EventClass::Ephemeral;
        odd.header.visibility = Visibility::Internal;
        odd.header.coordinates.loop_id = Some(LoopId::new("side"));
        let (text, back) = round_trip(std::slice::from_ref(&odd));
        assert_eq!(back, vec![odd]);
        for field in [r#""id":"my-own-id""#, r#""class":"ephemeral""#, r#""visibility":"internal""#, r#""loop":"side""#]
        {
            assert!(text.contains(field), "{field} missing from {text}");
        }
        assert!(!text.contains(r#""turn""#) && !text.contains(r#""command""#), "{text}");
    }

    #[test]
    fn header_text_that_needs_escaping_survives() {
        let mut odd = event("an \"id\" with \\ and \n", 2);
        odd.header.cause.command_id = Some(CommandId::new("c\"1"));
        odd.header.coordinates =
            Coordinates { loop_id: Some(LoopId::new("l\\oop")), turn_id: Some(TurnId::new("t\u{1}")) };
        let (text, back) = round_trip(std::slice::from_ref(&odd));
        assert_eq!(back, vec![odd]);
        assert!(text.contains(r#""id":"an \"id\" with \\ and \n""#), "{text}");
    }

    #[test]
    fn ids_that_only_look_derived_are_kept() {
        // Another session's id, a leading zero, a sign, a different number, trailing text.
        for id in ["sess_2#3", "sess_1#03", "sess_1#+3", "sess_1#4", "sess_1#3x", "sess_1#", "sess_13"] {
            let one = event(id, 3);
            let (text, back) = round_trip(std::slice::from_ref(&one));
            assert_eq!(back, vec![one], "{id}");
            assert!(text.contains(&format!(r#""id":"{id}""#)), "{id} not written: {text}");
        }
        let zero = event("sess_1#0", 0);
        let (text, back) = round_trip(std::slice::from_ref(&zero));
        assert_eq!(back, vec![zero]);
        assert!(!text.contains(r#""id""#), "{text}");
    }

    #[test]
    fn entries_in_the_full_form_are_still_read() {
        let mut old = event("sess_1#5", 5);
        old.header.coordinates.turn_id = Some(TurnId::new("t1"));
        let full = serde_json::to_string(&[old.clone()]).expect("encode");
        assert!(full.contains(r#""header""#));
        assert_eq!(decode(&session(), &full).expect("decode"), vec![old]);
    }

    #[test]
    fn an_event_without_seq_or_kind_is_an_error() {
        for broken in [r#"[{"kind":{"type":"context_measured","used":1,"size":2}}]"#, r#"[{"seq":1}]"#, "{}"] {
            assert!(decode(&session(), broken).is_err(), "{broken}");
        }
    }
}
