//! Writes the JSON schemas every test validates against, from the wire types of the crate
//! `agent-client-protocol-schema` (the version in this package's Cargo.lock):
//!
//! - `<out>/v1/schema.json`: ACP protocol version 1;
//! - `<out>/v2/schema.json`: ACP protocol version 2 (the crate's preview module; feature `v2`).
//!
//! Each is a JSON Schema (draft 2020-12) whose root is an `anyOf` of two branches, `Agent` (every
//! message an agent sends) and `Client` (every message a client sends), each a JSON-RPC 2.0
//! envelope around a request, a response, a notification or a protocol-level notification
//! (`$/cancel_request`); every named type is in `$defs`, sorted by name.
//!
//! Usage: `acp-schema-generate [OUT_DIR]` (default: the `schema/` directory above this package).
//! The output depends on nothing but the crate versions in Cargo.lock: run twice, it is the same
//! byte for byte (`scripts/generate-schema --check` relies on it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::{RemoveRefSiblings, ReplaceBoolSchemas};
use serde_json::{Map, Value};

/// The message sets of one protocol version, `$version` being the crate's module (`v1`, `v2`).
/// The crate's routing enums (`AgentRequest`, `ClientResponse`, ...) are inlined into the
/// envelopes that carry them, so `$defs/AgentRequest` is the JSON-RPC request (id, method,
/// params) of an agent's request, `$defs/ClientResponse` the response a client sends, and so on;
/// the params and results themselves keep their own names (`SessionNotification`,
/// `PromptResponse`, ...).
macro_rules! protocol_messages {
    ($version:ident) => {
        #[allow(clippy::large_enum_variant, reason = "never built: only the schemas are used")]
        pub mod $version {
            use agent_client_protocol_schema::$version::{
                AgentNotification, AgentRequest, AgentResponse, ClientNotification, ClientRequest, ClientResponse,
                JsonRpcMessage, Notification, ProtocolLevelNotification, Request, Response,
            };
            use schemars::JsonSchema;

            /// A message an agent sends to a client.
            #[derive(JsonSchema)]
            #[schemars(untagged, inline)]
            pub enum AgentMessage {
                Request(Request<AgentRequest>),
                Response(Response<AgentResponse>),
                Notification(Notification<AgentNotification>),
                ProtocolLevelNotification(Notification<ProtocolLevelNotification>),
            }

            /// A message a client sends to an agent.
            #[derive(JsonSchema)]
            #[schemars(untagged, inline)]
            pub enum ClientMessage {
                Request(Request<ClientRequest>),
                Response(Response<ClientResponse>),
                Notification(Notification<ClientNotification>),
                ProtocolLevelNotification(Notification<ProtocolLevelNotification>),
            }

            /// Every message of the Agent Client Protocol: one an agent sends or one a client
            /// sends, each a JSON-RPC 2.0 message.
            #[derive(JsonSchema)]
            #[schemars(untagged, title = "Agent Client Protocol")]
            pub enum Message {
                Agent(JsonRpcMessage<AgentMessage>),
                Client(JsonRpcMessage<ClientMessage>),
            }
        }
    };
}

protocol_messages!(v1);
#[cfg(feature = "v2")]
protocol_messages!(v2);

/// The schema crate's name, and its version as locked (the one this program was built with).
const SCHEMA_CRATE: &str = "agent-client-protocol-schema";

fn schema_crate_version() -> &'static str {
    let lock = include_str!("../Cargo.lock");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == format!("name = \"{SCHEMA_CRATE}\"") {
            let version = lines.next().and_then(|l| l.strip_prefix("version = \"")?.strip_suffix('"'));
            return version.expect("Cargo.lock: a version line after the schema crate's name");
        }
    }
    panic!("Cargo.lock names no {SCHEMA_CRATE}");
}

/// The schema of `T` as published: draft 2020-12; a `$ref` never has siblings (they move into
/// an `allOf` beside it, which every validator reads the same way); no boolean schemas (but a
/// boolean `additionalProperties`); `$defs` sorted by name; a `$comment` saying where it comes from.
fn schema_for<T: JsonSchema>(protocol_version: u16) -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    // The variants of the untagged routing enums get their names as titles (`Agent`, `Request`,
    // `SessionNotification`, ...): what a validator's message names.
    settings.untagged_enum_variant_titles = true;
    let mut no_bool_schemas = ReplaceBoolSchemas::default();
    no_bool_schemas.skip_additional_properties = true;
    let settings = settings.with_transform(RemoveRefSiblings::default()).with_transform(no_bool_schemas);
    let schema = settings.into_generator().into_root_schema_for::<T>();

    let Value::Object(mut root) = schema.to_value() else { panic!("the root schema is an object") };
    let defs = match root.remove("$defs") {
        Some(Value::Object(defs)) => defs,
        other => panic!("the root schema has no $defs object: {other:?}"),
    };
    let sorted: BTreeMap<String, Value> = defs.into_iter().collect();

    let mut out = Map::new();
    for key in ["$schema", "title", "description"] {
        if let Some(value) = root.remove(key) {
            out.insert(key.to_owned(), value);
        }
    }
    out.insert(
        "$comment".to_owned(),
        Value::String(format!(
            "ACP protocol version {protocol_version}, generated from the Rust crate {SCHEMA_CRATE} {} \
             by schema/generate (scripts/generate-schema). Do not edit.",
            schema_crate_version()
        )),
    );
    out.extend(root);
    out.insert("$defs".to_owned(), Value::Object(sorted.into_iter().collect()));
    Value::Object(out)
}

fn write(path: &Path, schema: &Value) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(schema).expect("a schema serializes");
    text.push('\n');
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, text)?;
    let defs = schema["$defs"].as_object().map_or(0, Map::len);
    println!("wrote {} ({defs} $defs)", path.display());
    Ok(())
}

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let out = match (args.next(), args.next()) {
        (None, _) => Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("schema/").to_path_buf(),
        (Some(dir), None) if dir != "-h" && dir != "--help" => PathBuf::from(dir),
        _ => {
            eprintln!("usage: acp-schema-generate [OUT_DIR]   (default: the schema/ directory)");
            return ExitCode::from(2);
        }
    };
    let outputs = [
        (out.join("v1/schema.json"), schema_for::<v1::Message>(1)),
        #[cfg(feature = "v2")]
        (out.join("v2/schema.json"), schema_for::<v2::Message>(2)),
    ];
    for (path, schema) in &outputs {
        if let Err(e) = write(path, schema) {
            eprintln!("cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
