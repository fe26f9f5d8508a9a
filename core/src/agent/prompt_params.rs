//! Decoding `session/prompt` params in their everyday shape, the hot path of every turn.
//!
//! [`PromptRequest`]'s own `Deserialize` buffers each content block (the blocks are an internally
//! tagged enum) and each optional field wrapped in `DefaultOnError`, which costs several times
//! more than the bytes themselves. [`TextPrompt`] reads the common shape directly: an object
//! with `sessionId` and `prompt`, whose blocks are objects with exactly `type: "text"` and `text`,
//! and optionally the request's `_meta` (an object or `null`: clients that trace send it on every
//! prompt) and ACP v2's `idempotencyKey` (kept as given, beside the request: see `idempotency`).
//!
//! Invariant: what [`TextPrompt`] accepts, it decodes exactly as [`PromptRequest`]'s own
//! `Deserialize` would (a test holds it to that). Anything else — another block type,
//! annotations, a block's `_meta`, a `_meta` that is neither an object nor `null`, an unknown or
//! repeated key — is refused and left to the generic decoder, which also words every error.

use std::borrow::Cow;
use std::sync::Arc;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::idempotency::V2_FIELD;
use super::method;
use super::wire::{decode, decode_params};
use crate::acp::{ContentBlock, Meta, PromptRequest, SessionId, TextContent};
use crate::error::Error;
use crate::rpc::Params;

/// Decoded `session/prompt` params.
pub(crate) struct DecodedPrompt {
    /// The request, in v1's terms.
    pub(crate) request: PromptRequest,
    /// ACP v2's `idempotencyKey` as given (`None`: absent or `null`), when it was asked for.
    pub(crate) v2_key: Option<Value>,
}

/// Decodes `session/prompt` params: directly when they have the everyday shape and the connection
/// checked their text, otherwise through [`decode_params`]. With `v2_key`, ACP v2's
/// `idempotencyKey` is read too (v1's request has no such field: without it, it is ignored).
pub(crate) fn decode_prompt(params: Params, v2_key: bool) -> Result<DecodedPrompt, Error> {
    if let Some(TextPrompt(request, key)) = params.decode_checked() {
        return Ok(DecodedPrompt { request, v2_key: if v2_key { key } else { None } });
    }
    if !v2_key {
        return Ok(DecodedPrompt { request: decode_params(params)?, v2_key: None });
    }
    // Rare: a v2 prompt with other blocks than plain text.
    if let Some(KeyField { key }) = params.decode_checked() {
        return Ok(DecodedPrompt { request: decode_params(params)?, v2_key: key.filter(|key| !key.is_null()) });
    }
    let mut value = params.into_value();
    let key = value.as_object_mut().and_then(|params| params.remove(V2_FIELD));
    Ok(DecodedPrompt { request: decode(value)?, v2_key: key.filter(|key| !key.is_null()) })
}

/// The `idempotencyKey` of v2 params, whatever else they hold.
#[derive(serde::Deserialize)]
struct KeyField {
    #[serde(rename = "idempotencyKey", default, deserialize_with = "present")]
    key: Option<Value>,
}

/// A field that is present, `null` included (`Some(Value::Null)`).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// `session/prompt` params made of a session id and text blocks only; and the `idempotencyKey`
/// (`None`: absent or `null`).
struct TextPrompt(PromptRequest, Option<Value>);

fn refuse<E: de::Error>() -> E {
    E::custom(format_args!("not the everyday shape of `{}` params", method::SESSION_PROMPT))
}

impl<'de> Deserialize<'de> for TextPrompt {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(TextPromptVisitor)
    }
}

struct TextPromptVisitor;

impl<'de> Visitor<'de> for TextPromptVisitor {
    type Value = TextPrompt;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("`session/prompt` params with text blocks only")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TextPrompt, A::Error> {
        let (mut session_id, mut prompt, mut meta) = (None, None, None);
        let (mut keyed, mut idempotency_key) = (false, None);
        while let Some(key) = map.next_key_seed(Text)? {
            match &*key {
                "sessionId" if session_id.is_none() => session_id = Some(map.next_value_seed(Text)?),
                "prompt" if prompt.is_none() => prompt = Some(map.next_value_seed(TextBlocks)?),
                "_meta" if meta.is_none() => meta = Some(map.next_value::<Option<Meta>>()?),
                V2_FIELD if !keyed => {
                    keyed = true;
                    idempotency_key = map.next_value::<Option<Value>>()?;
                }
                _ => return Err(refuse()),
            }
        }
        match (session_id, prompt) {
            (Some(id), Some(prompt)) => Ok(TextPrompt(
                PromptRequest::new(SessionId::new(Arc::<str>::from(id)), prompt).meta(meta.flatten()),
                idempotency_key,
            )),
            _ => Err(refuse()),
        }
    }
}

/// A string, borrowed from the text when it has no escapes.
struct Text;

impl<'de> DeserializeSeed<'de> for Text {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Text {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(s))
    }

    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s.to_owned()))
    }
}

/// The `prompt` array, when every block is a text block.
struct TextBlocks;

impl<'de> DeserializeSeed<'de> for TextBlocks {
    type Value = Vec<ContentBlock>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for TextBlocks {
    type Value = Vec<ContentBlock>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of text blocks")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        // Most prompts are one block: no room reserved for four.
        let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(64));
        while let Some(block) = seq.next_element_seed(TextBlock)? {
            blocks.push(block);
        }
        Ok(blocks)
    }
}

/// One `{"type": "text", "text": …}` block, keys in any order, nothing else.
struct TextBlock;

impl<'de> DeserializeSeed<'de> for TextBlock {
    type Value = ContentBlock;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TextBlock {
    type Value = ContentBlock;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a text block")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut tagged, mut text) = (false, None);
        while let Some(key) = map.next_key_seed(Text)? {
            match &*key {
                "type" if !tagged => {
                    if map.next_value_seed(Text)? != "text" {
                        return Err(refuse());
                    }
                    tagged = true;
                }
                "text" if text.is_none() => text = Some(map.next_value::<String>()?),
                _ => return Err(refuse()),
            }
        }
        match text {
            Some(text) if tagged => Ok(ContentBlock::Text(TextContent::new(text))),
            _ => Err(refuse()),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;

    /// What the generic decoder makes of `params`, as text of the result or of the error.
    fn generic(params: &Value) -> Result<PromptRequest, String> {
        super::super::wire::decode(params.clone()).map_err(|e| e.message)
    }

    fn fast(params: &Value) -> Option<PromptRequest> {
        serde_json::from_str::<TextPrompt>(&params.to_string()).ok().map(|p| p.0)
    }

    /// What [`decode_prompt`] makes of `params` as a connection checked them, v2's key asked for.
    fn decoded_v2(params: &Value) -> (PromptRequest, Option<Value>) {
        let text = params.to_string();
        let checked = match crate::rpc::message::classify(
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{text}}}"#).as_bytes(),
        ) {
            Ok(crate::rpc::message::Incoming::Request(request)) => request.params,
            _ => panic!("not a request"),
        };
        let parsed = decode_prompt(Params::from(params.clone()), true).unwrap();
        let checked = decode_prompt(checked, true).unwrap();
        assert_eq!((&checked.request, &checked.v2_key), (&parsed.request, &parsed.v2_key), "{params}");
        (checked.request, checked.v2_key)
    }

    #[test]
    fn v2s_idempotency_key_is_read_beside_the_request_in_every_shape() {
        let text = json!([{"type": "text", "text": "hi"}]);
        let image = json!([{"type": "image", "data": "", "mimeType": "image/png"}]);
        for prompt in [text, image] {
            let plain = json!({"sessionId": "s", "prompt": prompt});
            let (request, key) = decoded_v2(&plain);
            assert_eq!((Ok(request), key), (generic(&plain), None));
            for key in [json!("k"), json!(5), json!(null)] {
                let mut params = plain.clone();
                params["idempotencyKey"] = key.clone();
                let (request, read) = decoded_v2(&params);
                assert_eq!(Ok(request), generic(&plain), "{params}");
                // `null` is as absent.
                assert_eq!(read, Some(key).filter(|k| !k.is_null()), "{params}");
            }
            let params = json!({"sessionId": "s", "prompt": plain["prompt"], "idempotencyKey": "k"});
            let v1 = decode_prompt(Params::from(params), false).unwrap();
            assert_eq!(v1.v2_key, None);
        }
    }

    #[test]
    fn decodes_the_everyday_shape_and_refuses_the_rest() {
        let everyday =
            json!({"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}, {"text": "x", "type": "text"}]});
        assert_eq!(fast(&everyday), Some(generic(&everyday).unwrap()));
        for traced in [
            json!({"_meta": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, "sessionId": "s", "prompt": []}),
            json!({"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}], "_meta": null}),
        ] {
            assert_eq!(fast(&traced), Some(generic(&traced).unwrap()), "{traced}");
        }
        for other in [
            json!({"sessionId": "s", "prompt": [{"type": "text", "text": "hi", "annotations": {"priority": 1}}]}),
            json!({"sessionId": "s", "prompt": [{"type": "image", "data": "", "mimeType": "image/png"}]}),
            json!({"sessionId": "s", "prompt": [], "_meta": 5}),
            json!({"sessionId": "s", "prompt": [{"type": "text", "text": "hi", "_meta": {"a": 1}}]}),
            json!({"sessionId": "s", "prompt": [], "extra": 1}),
            json!({"sessionId": "s"}),
            json!({"sessionId": 5, "prompt": []}),
            json!({"sessionId": "s", "prompt": [{"type": "text"}]}),
        ] {
            assert_eq!(fast(&other), None, "{other}");
        }
    }

    fn block() -> impl Strategy<Value = Value> {
        prop_oneof![
            4 => "\\PC{0,12}".prop_map(|text| json!({"type": "text", "text": text})),
            1 => "\\PC{0,12}".prop_map(|text| json!({"text": text, "type": "text"})),
            1 => Just(json!({"type": "text", "text": "a", "annotations": null})),
            1 => Just(json!({"type": "text", "text": 1})),
            1 => Just(json!({"type": "resource_link", "name": "n", "uri": "file:///x"})),
            1 => Just(json!({"type": "text"})),
        ]
    }

    proptest! {
        #[test]
        fn whatever_it_accepts_it_decodes_like_the_generic_decoder(
            session in "\\PC{0,12}",
            blocks in prop::collection::vec(block(), 0..4),
            meta in prop_oneof![
                Just(None),
                Just(Some(json!({"k": "v"}))),
                Just(Some(json!(null))),
                Just(Some(json!([1]))),
                "\\PC{0,8}".prop_map(|v| Some(json!({"traceparent": v, "n": {"deep": [1, 2.5, null]}}))),
            ],
        ) {
            let mut params = json!({"sessionId": session, "prompt": blocks});
            if let Some(meta) = meta {
                params["_meta"] = meta;
            }
            if let Some(decoded) = fast(&params) {
                prop_assert_eq!(Ok(decoded), generic(&params));
            }
        }
    }
}
