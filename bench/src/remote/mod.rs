//! `acp-facade-bench remote …`: the remote transports (Streamable HTTP and WebSocket), the demo
//! agents served with `--listen` against minimal agents on the official SDKs' remote servers
//! (`bench/fixtures/ts_sdk_remote_agent.mjs` on the TypeScript SDK 2.4's `experimental/server`,
//! `bench/fixtures/rust-sdk-remote` on `agent-client-protocol-http`), side by side in one run,
//! medians over `--runs` repetitions with the servers rotated from run to run:
//! 1. `stream N` (`--chunks`, 100,000) on one connection, over WebSocket and over Streamable HTTP
//!    (POST + SSE): the time from the prompt to its answer with every chunk received; each demo's
//!    speed-up over the faster SDK server of that transport, against its goal;
//! 2. `--idle` (10,000) idle WebSocket connections held by one server process, each initialized: the growth
//!    of the process's RSS divided by the connections, against its goal;
//! 3. `--sessions` (1,000) sessions prompted `stream --session-chunks` (100) at once, over
//!    WebSocket connections of `--per-connection` (10) sessions each: notifications received per second
//!    overall, and the median and 99th percentile of the time from a prompt to its first chunk.
//!
//! One client for every server (`wire`), one fresh server process per measurement (`server`),
//! the measurements in `measures`. A server given with `--optional-server` (a demo whose binding
//! may not serve `--listen` yet) that does not start listening is reported, loudly, as "not
//! measured" with the reason; any other failure is a "failed" cell and a message on stderr.
//!
//! Usage: `acp-facade-bench remote [--runs R] [--chunks N] [--idle N] [--sessions N]
//! [--per-connection N] [--session-chunks N] [--timeout-s S] [--server NAME=COMMAND ...]
//! [--optional-server NAME=COMMAND ...] [--sdk NAME=COMMAND ...] [--goal NAME=SPEEDUP,KIB ...]
//! [--markdown FILE] [--note TEXT ...]`. Each COMMAND is started with `--listen 127.0.0.1:0`
//! appended. The report replaces the part of `--markdown` between `<!-- bench-remote:begin -->`
//! and `<!-- bench-remote:end -->` (appended when absent).

mod measures;
mod server;
mod wire;

use std::fmt::Write as _;
use std::future::Future;
use std::time::Duration;

use measures::{Idle, Sessions, Transport};
use server::Server;
use wire::Result;

use crate::{loadavg, machine, median, named, rotated};

/// A server of the run: a demo (with goals) or an SDK server (the reference).
struct Entry {
    name: String,
    command: String,
    /// May lack `--listen` (then "not measured", loudly).
    optional: bool,
    sdk: bool,
}

struct Config {
    runs: usize,
    chunks: u64,
    idle: usize,
    sessions: usize,
    per_connection: usize,
    session_chunks: u64,
    timeout: Duration,
    servers: Vec<Entry>,
    /// Per demo: the speed-up over the faster SDK server, and the KiB per idle connection.
    goals: Vec<(String, f64, u64)>,
    markdown: Option<String>,
    notes: Vec<String>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Config {
    let mut config = Config {
        runs: 3,
        chunks: 100_000,
        idle: 10_000,
        sessions: 1_000,
        per_connection: 10,
        session_chunks: 100,
        timeout: Duration::from_secs(600),
        servers: Vec::new(),
        goals: Vec::new(),
        markdown: None,
        notes: Vec::new(),
    };
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        let mut server = |spec: String, optional: bool, sdk: bool| {
            let (name, command) = named(&spec, "--server");
            config.servers.push(Entry { name, command, optional, sdk });
        };
        match arg.as_str() {
            "--server" => server(value(), false, false),
            "--optional-server" => server(value(), true, false),
            "--sdk" => server(value(), false, true),
            "--runs" => config.runs = value().parse().expect("--runs N"),
            "--chunks" => config.chunks = value().parse().expect("--chunks N"),
            "--idle" => config.idle = value().parse().expect("--idle N"),
            "--sessions" => config.sessions = value().parse().expect("--sessions N"),
            "--per-connection" => config.per_connection = value().parse().expect("--per-connection N"),
            "--session-chunks" => config.session_chunks = value().parse().expect("--session-chunks N"),
            "--timeout-s" => config.timeout = Duration::from_secs(value().parse().expect("--timeout-s S")),
            "--goal" => {
                let (name, goal) = named(&value(), "--goal");
                let (speedup, kib) = goal.split_once(',').expect("--goal NAME=SPEEDUP,KIB");
                config.goals.push((name, speedup.parse().expect("SPEEDUP"), kib.parse().expect("KIB")));
            }
            "--markdown" => config.markdown = Some(value()),
            "--note" => config.notes.push(value()),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(
        config.runs > 0 && config.chunks > 0 && config.idle > 0 && config.per_connection > 0,
        "--runs, --chunks, --idle and --per-connection must be positive"
    );
    assert!(
        config.sessions >= config.per_connection && config.sessions.is_multiple_of(config.per_connection),
        "--sessions must be a multiple of --per-connection"
    );
    config
}

/// Every figure of one server over the runs.
#[derive(Default)]
struct Figures {
    /// Why the server was not measured (an optional server that does not listen).
    not_measured: Option<String>,
    stream_ws: Vec<Duration>,
    stream_http: Vec<Duration>,
    idle: Vec<Idle>,
    sessions: Vec<Sessions>,
}

/// Runs `measure` on a fresh server of `command`, within the timeout; `Err` for any failure.
fn on_fresh_server<T, F>(
    runtime: &tokio::runtime::Runtime,
    command: &str,
    timeout: Duration,
    measure: impl FnOnce(Server) -> F,
) -> Result<T>
where
    F: Future<Output = Result<T>>,
{
    let server = Server::start(command)?;
    runtime.block_on(async {
        tokio::time::timeout(timeout, measure(server))
            .await
            .unwrap_or_else(|_| Err(format!("timed out after {timeout:?}")))
    })
}

/// Records `outcome` in `into`, or says on stderr why there is nothing to record.
fn record<T>(what: &str, outcome: Result<T>, into: &mut Vec<T>, show: impl Fn(&T) -> String) {
    match outcome {
        Ok(value) => {
            eprintln!("  {what}: {}", show(&value));
            into.push(value);
        }
        Err(e) => eprintln!("  {what}: FAILED: {e}"),
    }
}

fn run_server(runtime: &tokio::runtime::Runtime, config: &Config, entry: &Entry, figures: &mut Figures) {
    let (name, command, timeout) = (&entry.name, &entry.command, config.timeout);
    for (transport, into) in
        [(Transport::WebSocket, &mut figures.stream_ws), (Transport::Http, &mut figures.stream_http)]
    {
        let chunks = config.chunks;
        let outcome =
            on_fresh_server(
                runtime,
                command,
                timeout,
                |s| async move { measures::stream(&s, transport, chunks).await },
            );
        record(&format!("{name}: stream {chunks} over {transport:?}"), outcome, into, |t| {
            format!("{:.0} ms, {:.0} chunks/s", t.as_secs_f64() * 1e3, chunks as f64 / t.as_secs_f64())
        });
    }
    let n = config.idle;
    let outcome = on_fresh_server(runtime, command, timeout, |s| async move { measures::idle(&s, n).await });
    record(&format!("{name}: {n} idle WebSockets"), outcome, &mut figures.idle, |i| {
        format!("RSS {} → {} KiB, {} bytes each", i.before_kib, i.after_kib, i.bytes_per_connection)
    });
    let (connections, per, chunks) =
        (config.sessions / config.per_connection, config.per_connection, config.session_chunks);
    let outcome = on_fresh_server(runtime, command, timeout, |s| async move {
        measures::sessions(&s, connections, per, chunks).await
    });
    record(&format!("{name}: {} sessions at once", config.sessions), outcome, &mut figures.sessions, |s| {
        format!(
            "{} notifications/s, first chunk p50 {:.1} ms, p99 {:.1} ms",
            s.notifications_per_s,
            s.first_chunk_p50.as_secs_f64() * 1e3,
            s.first_chunk_p99.as_secs_f64() * 1e3
        )
    });
}

/// Runs the benchmark and prints (and writes) the report.
pub(crate) fn main(args: impl Iterator<Item = String>) {
    let config = parse(args);
    let open_files = server::raise_open_files_limit();
    eprintln!("remote: open files limit {open_files}");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    let load_before = loadavg();
    let mut figures: Vec<Figures> = config.servers.iter().map(|_| Figures::default()).collect();
    for entry in &config.servers {
        if !entry.optional {
            continue;
        }
        let i = config.servers.iter().position(|e| e.name == entry.name).expect("listed");
        if let Err(reason) = Server::start(&entry.command) {
            eprintln!(
                "\n!!! remote: {} NOT MEASURED: `{} --listen 127.0.0.1:0` did not listen: {reason}\n",
                entry.name, entry.command
            );
            figures[i].not_measured = Some(reason);
        }
    }
    for run in 0..config.runs {
        eprintln!("remote run {}/{} (load {})", run + 1, config.runs, loadavg());
        for i in rotated(config.servers.len(), run) {
            if figures[i].not_measured.is_none() {
                run_server(&runtime, &config, &config.servers[i], &mut figures[i]);
            }
        }
    }
    let out = report(&config, &figures, &load_before);
    println!("{out}");
    for (entry, figures) in config.servers.iter().zip(&figures) {
        if let Some(reason) = &figures.not_measured {
            eprintln!("!!! remote: {} NOT MEASURED: {reason}", entry.name);
        }
    }
    if let Some(path) = &config.markdown {
        let doc = std::fs::read_to_string(path).unwrap_or_default();
        let (first, last) = ("<!-- bench-remote:begin -->", "<!-- bench-remote:end -->");
        let updated = match (doc.find(first), doc.find(last)) {
            (Some(b), Some(e)) if b < e => format!("{}{first}\n{out}{}", &doc[..b], &doc[e..]),
            _ => format!("{doc}\n{first}\n{out}{last}\n"),
        };
        std::fs::write(path, updated).expect("write the markdown report");
    }
}

fn ms(d: Option<Duration>) -> String {
    d.map_or_else(|| "failed".to_owned(), |d| format!("{:.0}", d.as_secs_f64() * 1e3))
}

fn per_s(n: u64, d: Option<Duration>) -> String {
    d.map_or_else(|| "failed".to_owned(), |d| format!("{:.0}", n as f64 / d.as_secs_f64()))
}

fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

#[allow(clippy::too_many_lines, reason = "one report, top to bottom")]
fn report(config: &Config, figures: &[Figures], load_before: &str) -> String {
    let mut out = String::new();
    let not_measured =
        |f: &Figures| f.not_measured.as_ref().map(|r| format!("**not measured**: {}", r.replace('|', "/")));
    let ws: Vec<Option<Duration>> = figures.iter().map(|f| median(f.stream_ws.clone())).collect();
    let http: Vec<Option<Duration>> = figures.iter().map(|f| median(f.stream_http.clone())).collect();
    let fastest_sdk = |times: &[Option<Duration>]| {
        config.servers.iter().zip(times).filter(|(e, _)| e.sdk).filter_map(|(_, t)| *t).min()
    };
    let (ws_sdk, http_sdk) = (fastest_sdk(&ws), fastest_sdk(&http));
    let _ = writeln!(
        out,
        "`stream {}` on one connection — initialize, session/new, one prompt — over WebSocket and over \
         Streamable HTTP (POST + SSE, HTTP/1.1): the time from the prompt to its answer with every chunk \
         received, one client for every server (tokio-tungstenite, hyper); median of {} runs, a fresh \
         server process for each measurement; {}.\n",
        config.chunks,
        config.runs,
        machine()
    );
    let _ =
        writeln!(out, "| server | WebSocket: ms | chunks/s | HTTP + SSE: ms | chunks/s |\n|---|---:|---:|---:|---:|");
    for (i, (entry, f)) in config.servers.iter().zip(figures).enumerate() {
        if let Some(reason) = not_measured(f) {
            let _ = writeln!(out, "| {} | {reason} | | | |", entry.name);
            continue;
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            entry.name,
            ms(ws[i]),
            per_s(config.chunks, ws[i]),
            ms(http[i]),
            per_s(config.chunks, http[i])
        );
    }
    let _ =
        writeln!(out, "\n| demo against the faster SDK server | WebSocket | HTTP + SSE | goal |\n|---|---:|---:|---:|");
    let speedup = |sdk: Option<Duration>, own: Option<Duration>| match (sdk, own) {
        (Some(sdk), Some(own)) => format!("{:.2}×", sdk.as_secs_f64() / own.as_secs_f64()),
        _ => "–".to_owned(),
    };
    for (i, (entry, f)) in config.servers.iter().zip(figures).enumerate() {
        if entry.sdk {
            continue;
        }
        let goal =
            config.goals.iter().find(|g| g.0 == entry.name).map_or_else(|| "–".to_owned(), |g| format!("≥{}×", g.1));
        match not_measured(f) {
            Some(reason) => {
                let _ = writeln!(out, "| {} | {reason} | | {goal} |", entry.name);
            }
            None => {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {goal} |",
                    entry.name,
                    speedup(ws_sdk, ws[i]),
                    speedup(http_sdk, http[i])
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "\n{} idle WebSocket connections held by one server process, each initialized (opened {} at a \
         time after one warm-up connection): the process's RSS (`VmRSS`) before and one second after, \
         and the growth per connection; median of {} runs.\n",
        config.idle, 64, config.runs
    );
    let _ =
        writeln!(out, "| server | RSS before | RSS after | per idle connection | goal |\n|---|---:|---:|---:|---:|");
    for (entry, f) in config.servers.iter().zip(figures) {
        let goal =
            config.goals.iter().find(|g| g.0 == entry.name).map_or_else(|| "–".to_owned(), |g| format!("≤{} KiB", g.2));
        if let Some(reason) = not_measured(f) {
            let _ = writeln!(out, "| {} | {reason} | | | {goal} |", entry.name);
            continue;
        }
        let per = median(f.idle.iter().map(|i| i.bytes_per_connection).collect());
        let before = median(f.idle.iter().map(|i| i.before_kib).collect());
        let after = median(f.idle.iter().map(|i| i.after_kib).collect());
        let mib = |k: Option<u64>| k.map_or_else(|| "failed".to_owned(), |k| format!("{:.1} MiB", k as f64 / 1024.0));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {goal} |",
            entry.name,
            mib(before),
            mib(after),
            per.map_or_else(|| "failed".to_owned(), kib)
        );
    }
    let _ = writeln!(
        out,
        "\n{} sessions streaming at once on one server process: {} WebSocket connections × {} sessions, \
         every session prompted `stream {}` together; notifications received per second from the go to \
         the last answer, and the time from a prompt to its first chunk over all sessions; median of {} runs.\n",
        config.sessions,
        config.sessions / config.per_connection,
        config.per_connection,
        config.session_chunks,
        config.runs
    );
    let _ = writeln!(out, "| server | notifications/s | first chunk, p50 | first chunk, p99 |\n|---|---:|---:|---:|");
    for (entry, f) in config.servers.iter().zip(figures) {
        if let Some(reason) = not_measured(f) {
            let _ = writeln!(out, "| {} | {reason} | | |", entry.name);
            continue;
        }
        let rate = median(f.sessions.iter().map(|s| s.notifications_per_s).collect());
        let p50 = median(f.sessions.iter().map(|s| s.first_chunk_p50).collect());
        let p99 = median(f.sessions.iter().map(|s| s.first_chunk_p99).collect());
        let milli =
            |d: Option<Duration>| d.map_or_else(|| "failed".to_owned(), |d| format!("{:.1} ms", d.as_secs_f64() * 1e3));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            entry.name,
            rate.map_or_else(|| "failed".to_owned(), |r| r.to_string()),
            milli(p50),
            milli(p99)
        );
    }
    let _ = writeln!(out, "\nLoad average before → after: {load_before} → {}.", loadavg());
    for note in &config.notes {
        let _ = writeln!(out, "{note}");
    }
    out
}
