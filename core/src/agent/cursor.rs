//! `session/list` cursors: the last session id of a page and the `cwd` filter it was made under,
//! authenticated with HMAC-SHA256.
//!
//! A malformed, forged, foreign (another key's) or re-filtered cursor is refused, never read as
//! "start over". The key is drawn from the OS CSPRNG once per [`Agent`](super::Agent) unless the
//! host supplies one.

// `InvalidCursor` and `fuzzing` are public (not `pub(crate)`) for the `fuzzing` feature, which
// re-exports them for the fuzz targets and property tests.
#![cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]

use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The per-agent key that authenticates cursors.
pub(crate) struct CursorKey([u8; 32]);

/// Why a cursor was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidCursor {
    /// Not of the cursor's shape.
    #[error("malformed cursor")]
    Malformed,
    /// The authentication tag does not match: forged, altered, or from another agent.
    #[error("cursor failed authentication")]
    Forged,
    /// Made under a different `cwd` filter.
    #[error("cursor was made for a different cwd filter")]
    OtherFilter,
}

#[derive(Serialize, Deserialize)]
struct CursorPayload {
    /// The last session id of the previous page.
    after: String,
    /// The `cwd` filter the cursor was made under.
    cwd: Option<PathBuf>,
}

impl CursorKey {
    /// A fresh random key.
    pub(crate) fn random() -> Self {
        let mut key = [0u8; 32];
        // Straight from the OS, as a key should be (and without a thread RNG's start-up cost).
        rand::TryRng::try_fill_bytes(&mut rand::rngs::SysRng, &mut key).expect("the operating system's random source");
        Self(key)
    }

    /// The key `key` (a host's, shared by every process that must accept its cursors).
    pub(crate) fn from_bytes(key: [u8; 32]) -> Self {
        Self(key)
    }

    fn mac(&self) -> HmacSha256 {
        <HmacSha256 as KeyInit>::new_from_slice(&self.0).expect("HMAC accepts keys of any length")
    }

    /// Encodes a cursor resuming after `after` under the `cwd` filter.
    pub(crate) fn encode(&self, after: &str, cwd: Option<&Path>) -> String {
        let payload = serde_json::to_vec(&CursorPayload { after: after.to_owned(), cwd: cwd.map(Path::to_path_buf) })
            .unwrap_or_default();
        let mut mac = self.mac();
        mac.update(&payload);
        let tag = mac.finalize().into_bytes();
        format!("{}.{}", URL_SAFE_NO_PAD.encode(&payload), URL_SAFE_NO_PAD.encode(tag))
    }

    /// Decodes and authenticates a cursor made under the `cwd` filter.
    pub(crate) fn decode(&self, cursor: &str, cwd: Option<&Path>) -> Result<String, InvalidCursor> {
        let (payload, tag) = cursor.split_once('.').ok_or(InvalidCursor::Malformed)?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| InvalidCursor::Malformed)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| InvalidCursor::Malformed)?;
        let mut mac = self.mac();
        mac.update(&payload);
        mac.verify_slice(&tag).map_err(|_| InvalidCursor::Forged)?;
        let payload: CursorPayload = serde_json::from_slice(&payload).map_err(|_| InvalidCursor::Malformed)?;
        if payload.cwd.as_deref() != cwd {
            return Err(InvalidCursor::OtherFilter);
        }
        Ok(payload.after)
    }
}

/// Entry points for the fuzz targets and property tests: the cursor codec under a caller-chosen
/// key. Not part of the API.
#[cfg(feature = "fuzzing")]
pub(crate) mod fuzzing {
    use std::path::Path;

    use super::{CursorKey, InvalidCursor};

    /// Encodes a cursor resuming after `after` under the `cwd` filter, authenticated with `key`.
    pub fn encode_cursor(key: [u8; 32], after: &str, cwd: Option<&Path>) -> String {
        CursorKey(key).encode(after, cwd)
    }

    /// Decodes and authenticates `cursor` (arbitrary bytes, as a client could send in a JSON
    /// string after lossy UTF-8 conversion) under `key` and the `cwd` filter.
    pub fn decode_cursor(key: [u8; 32], cursor: &[u8], cwd: Option<&Path>) -> Result<String, InvalidCursor> {
        CursorKey(key).decode(&String::from_utf8_lossy(cursor), cwd)
    }
}
