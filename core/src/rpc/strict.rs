//! A strict, allocation-free check of JSON text, used by the fast path of
//! [`classify`](super::message::classify).
//!
//! [`Strict`] accepts exactly the texts that parse into a [`serde_json::Value`] — it drives the
//! same parser through `deserialize_any`, so strings are validated (UTF-8, escapes, paired
//! surrogates), numbers are range-checked and nesting is limited — without building anything.
//! It is stricter in two ways, and a text it refuses simply takes the slow path:
//!
//! - it refuses an object with a duplicate key (a [`Value`](serde_json::Value) keeps the last one
//!   silently; typed decoding straight from the text would refuse it or, through `DefaultOnError`
//!   fields, quietly decode something else), an object key written with escapes (it cannot be
//!   compared without copying it) and an object with more than [`MAX_KEYS`] keys;
//! - it carries its own nesting budget ([`MEMBER_DEPTH`] for a member of the message), the same
//!   limit `serde_json` applies to the whole message, so that the check does not depend on where it
//!   starts.
//!
//! The lenient skipping `serde_json` does for ignored values (`IgnoredAny`, `RawValue`) checks much
//! less — no surrogate pairing, no number range, no nesting limit — so on the fast path every
//! member not read otherwise, the params included, goes through [`Strict`] instead.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The most keys one object may have on the fast path (the check is a linear scan on the stack).
pub(crate) const MAX_KEYS: usize = 16;

/// How many nested arrays and objects a value directly inside the message object may hold,
/// itself included: `serde_json` refuses the 128th level of nesting, and the message object is the
/// first.
pub(crate) const MEMBER_DEPTH: u8 = 126;

/// Checks one value strictly (see the module doc); `depth` arrays and objects may still be
/// entered, this value included.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Strict {
    pub(crate) depth: u8,
}

impl Strict {
    /// Checks the whole of `text` as a value directly inside the message object.
    #[cfg(test)]
    pub(crate) fn check_member(text: &str) -> bool {
        let mut de = serde_json::Deserializer::from_str(text);
        Strict { depth: MEMBER_DEPTH }.deserialize(&mut de).is_ok() && de.end().is_ok()
    }

    fn enter<E: de::Error>(self) -> Result<Self, E> {
        match self.depth.checked_sub(1) {
            Some(depth) => Ok(Strict { depth }),
            None => Err(E::custom("nested too deeply for the fast path")),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let inner = self.enter()?;
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let inner = self.enter()?;
        let mut keys: [&'de str; MAX_KEYS] = [""; MAX_KEYS];
        let mut count = 0;
        while let Some(key) = map.next_key_seed(BorrowedKey)? {
            if count == MAX_KEYS || keys[..count].contains(&key) {
                return Err(de::Error::custom("a duplicate key or too many keys for the fast path"));
            }
            keys[count] = key;
            count += 1;
            map.next_value_seed(inner)?;
        }
        Ok(())
    }
}

/// An object key borrowed from the text (one written with escapes is refused).
struct BorrowedKey;

impl<'de> DeserializeSeed<'de> for BorrowedKey {
    type Value = &'de str;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<&'de str, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for BorrowedKey {
    type Value = &'de str;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object key without escapes")
    }

    fn visit_borrowed_str<E>(self, key: &'de str) -> Result<&'de str, E> {
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        format!("{}{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn accepts_what_a_value_accepts_and_refuses_the_rest() {
        for good in [r#"{"a":[1,-2,3.5e10,"x\n\ud83d\ude00",true,null,{}]}"#, "0", r#""""#, "[]"] {
            assert!(Strict::check_member(good), "{good}");
            assert!(serde_json::from_str::<serde_json::Value>(good).is_ok());
        }
        for bad in [r#""\ud800""#, "1e400", "[1,]", r#"{"a":1,}"#, "nul", r#""\u00""#, "1 2"] {
            assert!(!Strict::check_member(bad), "{bad}");
            assert!(serde_json::from_str::<serde_json::Value>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn refuses_duplicate_and_escaped_keys() {
        assert!(!Strict::check_member(r#"{"a":1,"a":2}"#));
        assert!(!Strict::check_member(r#"{"\u0061":1}"#));
        assert!(Strict::check_member(r#"{"a":{"a":1},"b":[{"a":1},{"a":2}]}"#));
    }

    #[test]
    fn the_depth_budget_matches_the_place_inside_the_message() {
        // Inside the message object (depth 1) a member may nest 126 more levels, not 127.
        assert!(Strict::check_member(&nested(126)));
        assert!(!Strict::check_member(&nested(127)));
        let message = |levels| format!(r#"{{"params":{}}}"#, nested(levels));
        assert!(serde_json::from_str::<serde_json::Value>(&message(126)).is_ok());
        assert!(serde_json::from_str::<serde_json::Value>(&message(127)).is_err());
    }
}
