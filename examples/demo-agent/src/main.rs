//! `acp-facade-demo`: the demo agent of acp-facade — an ACP agent over stdio, built on the
//! batteries-included runner with a scripted "model" and a store in one `SQLite` file.
//!
//! Its behaviour is fixed by `docs/DEMO.md` (the same in Rust, Python and Node): `stream N`,
//! `think TEXT`, `tool NAME`, `sleep MS`, `ask QUESTION`, `fail`, `/compact`, the calls to the
//! client `read PATH`, `write PATH TEXT`, `run CMD ARG…`, `open URL`, the tool call `edit PATH`,
//! `plan N`, `switch MODE`, `mcp`, `/shout TEXT`, prompts whose first block is an image, audio, an
//! embedded resource or a resource link, and anything else echoed word by word; a prompt's
//! `_meta.traceparent` comes back in the response's `_meta`, and the extension method
//! `_demo/echo` answers its params. It advertises image, audio and embedded-resource prompts and
//! http MCP servers. Options: `--store PATH` (default: a file under the user's data directory;
//! `:memory:` keeps nothing; a `postgres://` URL keeps them in `PostgreSQL`, shared by every
//! process started with it), `--page-size N` (largest `session/list` page), `--auth` (every
//! session method needs `authenticate` with `demo-login` first), `--listen HOST:PORT` (serve ACP
//! remotely, over Streamable HTTP and WebSocket at `/acp`, instead of stdio), `--token NAME:SECRET`
//! (a bearer token a remote client must present; repeatable), `--allow-origin ORIGIN`
//! (repeatable), `--help`.

mod auth;
mod client;
mod remote;
mod script;
mod shutdown;

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use acp_facade::acp::{McpCapabilities, PromptCapabilities};
use acp_facade::agent::{ExtensionMethod, Extensions};
use acp_facade::host::HostResult;
use acp_facade_runner::{PostgresStore, Runner, SqliteStore, Store};
use async_trait::async_trait;
use serde_json::Value;

const USAGE: &str = "usage: acp-facade-demo [--store PATH|:memory:|postgres://...] [--page-size N] [--auth]
                       [--listen HOST:PORT [--token NAME:SECRET]... [--allow-origin ORIGIN]...
                        [--tls-cert FILE --tls-key FILE]]

An Agent Client Protocol agent over stdio, or remotely with --listen (the acp-facade demo; docs/DEMO.md).
  --store PATH     where sessions are kept (SQLite); default: $XDG_DATA_HOME/acp-facade/demo.sqlite
  --store URL      a postgres:// (or postgresql://) URL: sessions kept in PostgreSQL, shared by every
                   process using the same database
  --page-size N    the largest session/list page (default 50)
  --auth           require `authenticate` with method demo-login before any session method
  --listen HOST:PORT
                   serve ACP over Streamable HTTP and WebSocket at http://HOST:PORT/acp instead of
                   stdio (port 0: a free port); prints `listening on http://HOST:PORT/acp` on
                   stderr when ready; SIGTERM shuts down gracefully
  --token NAME:SECRET
                   with --listen: clients must send `Authorization: Bearer SECRET` (they act as
                   NAME); repeatable; required for a HOST that is not loopback
  --allow-origin ORIGIN
                   with --listen: allow browser requests from ORIGIN (e.g. https://app.example);
                   repeatable
  --tls-cert FILE --tls-key FILE
                   with --listen: serve HTTPS and WSS with this PEM certificate chain and PEM
                   private key (both or neither); the URL printed is then https://
  -h, --help       this text";

struct Args {
    store: String,
    page_size: usize,
    auth: bool,
    /// `--listen`, `--token`, `--allow-origin`: serve remotely rather than over stdio.
    remote: Option<remote::Listen>,
}

/// `_demo/echo`: answers its params object as its result.
struct Echo;

#[async_trait]
impl ExtensionMethod for Echo {
    async fn call(&self, params: Value) -> HostResult<Value> {
        Ok(if params.is_null() { Value::Object(serde_json::Map::new()) } else { params })
    }
}

/// What the demo accepts beyond text: image, audio and embedded-resource prompts, http MCP servers
/// (not sse), and the extension method `_demo/echo`.
fn rich(options: acp_facade::Options) -> Result<acp_facade::Options, acp_facade::Error> {
    let mut extensions = Extensions::new();
    extensions.method("_demo/echo", Arc::new(Echo))?;
    Ok(options
        .prompt_capabilities(PromptCapabilities::new().image(true).audio(true).embedded_context(true))
        .mcp_capabilities(McpCapabilities::new().http(true))
        .extensions(extensions))
}

/// What the command line asks for.
enum Command {
    /// Serve ACP over stdio.
    Serve(Args),
    /// Print the usage on stdout and exit 0.
    Help,
}

/// The command line, or the one-line reason it is wrong.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Command, String> {
    let mut store = None;
    let mut page_size = 50usize;
    let mut auth = false;
    let mut listen = None;
    let mut tokens = Vec::new();
    let mut origins = Vec::new();
    let (mut tls_cert, mut tls_key) = (None, None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--store" => store = Some(args.next().ok_or("--store needs a path")?),
            "--page-size" => {
                let value = args.next().ok_or("--page-size needs a number")?;
                page_size = value
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("--page-size must be a positive number, got {value:?}"))?;
            }
            "--auth" => auth = true,
            "--listen" => listen = Some(args.next().ok_or("--listen needs HOST:PORT")?),
            "--token" => tokens.push(remote::parse_token(&args.next().ok_or("--token needs NAME:SECRET")?)?),
            "--allow-origin" => origins.push(args.next().ok_or("--allow-origin needs an origin")?),
            "--tls-cert" => tls_cert = Some(args.next().ok_or("--tls-cert needs a file")?),
            "--tls-key" => tls_key = Some(args.next().ok_or("--tls-key needs a file")?),
            "--help" | "-h" => return Ok(Command::Help),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let store = match store {
        Some(store) => store,
        None => default_store()?.to_string_lossy().into_owned(),
    };
    let tls = match (tls_cert, tls_key) {
        (Some(cert), Some(key)) => Some((PathBuf::from(cert), PathBuf::from(key))),
        (None, None) => None,
        _ => return Err("--tls-cert and --tls-key go together: give both or neither".to_owned()),
    };
    let remote = match listen {
        Some(listen) => Some(remote::Listen::new(&listen, tokens, origins, tls)?),
        None if !tokens.is_empty() || !origins.is_empty() || tls.is_some() => {
            return Err("--token, --allow-origin and --tls-cert/--tls-key need --listen".to_owned());
        }
        None => None,
    };
    Ok(Command::Serve(Args { store, page_size, auth, remote }))
}

/// `$XDG_DATA_HOME/acp-facade/demo.sqlite`, else `~/.local/share/acp-facade/demo.sqlite`.
fn default_store() -> Result<PathBuf, String> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share")))
        .ok_or("cannot find a data directory: set XDG_DATA_HOME or HOME, or pass --store")?;
    Ok(base.join("acp-facade").join("demo.sqlite"))
}

/// Whether `--store` names a `PostgreSQL` database rather than an `SQLite` file.
fn is_postgres(store: &str) -> bool {
    store.starts_with("postgres://") || store.starts_with("postgresql://")
}

fn main() -> std::process::ExitCode {
    {
        use tracing_subscriber::Layer as _;
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;
        // `ACP_FACADE_LOG`: `target=level` directives (e.g. `acp_facade=debug`) or a level.
        let filter = std::env::var("ACP_FACADE_LOG")
            .ok()
            .and_then(|directives| directives.parse::<tracing_subscriber::filter::Targets>().ok())
            .unwrap_or_else(|| tracing_subscriber::filter::Targets::new().with_default(tracing::Level::WARN));
        // Colours only for a person at a terminal: not in an editor's agent log or a file.
        let stderr = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(acp_facade::logging::stderr_ansi())
            .with_filter(filter);
        tracing_subscriber::registry().with(stderr).init();
    }
    // Before any serving: `--help` answers on stdout, a bad command line with one line on stderr.
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Command::Serve(args)) => args,
        Ok(Command::Help) => {
            let _ = writeln!(std::io::stdout().lock(), "{USAGE}");
            return std::process::ExitCode::SUCCESS;
        }
        Err(message) => {
            let _ = writeln!(std::io::stderr().lock(), "acp-facade-demo: {message} (see acp-facade-demo --help)");
            return std::process::ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the runtime");
            return std::process::ExitCode::FAILURE;
        }
    };
    // The PostgreSQL store is kept to be closed on the way out: its sessions are free at once.
    let (store, postgres): (Arc<dyn Store>, Option<Arc<PostgresStore>>) = if is_postgres(&args.store) {
        match runtime.block_on(PostgresStore::connect(&args.store)) {
            Ok(store) => {
                let store = Arc::new(store);
                (store.clone(), Some(store))
            }
            Err(e) => {
                // The error names the server and database, never the URL's password.
                tracing::error!(error = %e, "cannot open the session store");
                return std::process::ExitCode::FAILURE;
            }
        }
    } else {
        match SqliteStore::open(&args.store) {
            Ok(store) => (Arc::new(store), None),
            Err(e) => {
                tracing::error!(store = args.store, error = %e, "cannot open the session store");
                return std::process::ExitCode::FAILURE;
            }
        }
    };
    let runner = Runner::new(store, Arc::new(script::Script));
    let options = runner
        .options()
        .agent_info("acp-facade-demo", env!("CARGO_PKG_VERSION"))
        .max_page_size(args.page_size)
        .protocol_v2(true);
    let mut options = match rich(options) {
        Ok(options) => options,
        Err(e) => {
            tracing::error!(error = %e.message, "cannot set up the demo's options");
            return std::process::ExitCode::FAILURE;
        }
    };
    if args.auth {
        options = options.authenticator(Arc::new(auth::DemoLogin));
    }
    let served = match args.remote {
        Some(listen) => runtime.block_on(remote::serve(options, listen)),
        None => runtime.block_on(runner.agent(options).serve_stdio()),
    };
    if let Some(postgres) = postgres
        && let Err(e) = runtime.block_on(postgres.close())
    {
        tracing::warn!(error = %e, "could not retire this process's lease");
    }
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "serving failed");
            std::process::ExitCode::FAILURE
        }
    }
}
