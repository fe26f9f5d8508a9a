//! `acp-facade-demo`: the demo agent of acp-facade — an ACP agent over stdio, built on the
//! batteries-included runner with a scripted "model" and a store in one `SQLite` file.
//!
//! Its behaviour is fixed by `docs/DEMO.md` (the same in Rust, Python and Node): `stream N`,
//! `think TEXT`, `tool NAME`, `sleep MS`, `ask QUESTION`, `fail`, `/compact`, and anything else
//! echoed word by word. Options: `--store PATH` (default: a file under the user's data directory;
//! `:memory:` keeps nothing), `--page-size N` (largest `session/list` page), `--auth` (every
//! session method needs `authenticate` with `demo-login` first), `--help`.

mod auth;
mod script;

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use acp_facade::runner::{Runner, SqliteStore};

const USAGE: &str = "usage: acp-facade-demo [--store PATH|:memory:] [--page-size N] [--auth]

An Agent Client Protocol agent over stdio (the acp-facade demo; docs/DEMO.md).
  --store PATH     where sessions are kept (SQLite); default: $XDG_DATA_HOME/acp-facade/demo.sqlite
  --page-size N    the largest session/list page (default 50)
  --auth           require `authenticate` with method demo-login before any session method
  -h, --help       this text";

struct Args {
    store: String,
    page_size: usize,
    auth: bool,
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
            "--help" | "-h" => return Ok(Command::Help),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let store = match store {
        Some(store) => store,
        None => default_store()?.to_string_lossy().into_owned(),
    };
    Ok(Command::Serve(Args { store, page_size, auth }))
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

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ACP_FACADE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
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
    let store = match SqliteStore::open(&args.store) {
        Ok(store) => Arc::new(store),
        Err(e) => {
            tracing::error!(store = args.store, error = %e, "cannot open the session store");
            return std::process::ExitCode::FAILURE;
        }
    };
    let runner = Runner::new(store, Arc::new(script::Script));
    let mut options =
        runner.options().agent_info("acp-facade-demo", env!("CARGO_PKG_VERSION")).max_page_size(args.page_size);
    if args.auth {
        options = options.authenticator(Arc::new(auth::DemoLogin));
    }
    let agent = runner.agent(options);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the runtime");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(agent.serve_stdio()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "serving failed");
            std::process::ExitCode::FAILURE
        }
    }
}
