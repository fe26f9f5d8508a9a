//! `acp-facade-bench stores`: the Rust demo agent on its `SQLite` store and on its `PostgreSQL`
//! store, side by side in one run (interleaved, medians over `--runs`):
//! - `stream N`: wall time from the prompt to its response (one journal batch for the turn, and
//!   its prompt's within the journal delay);
//! - echo: the agent process's CPU per `hello world` turn (one journal write each), across CPUs
//!   and with the driver and the agent pinned to one CPU; for `PostgreSQL` also the database
//!   server's CPU per turn (the postmaster and its children, from `/proc`);
//! - sessions created per second by `--creators` processes together on one database, each sending
//!   `session/new` one at a time.
//!
//! Usage: `acp-facade-bench stores --demo PATH --sqlite FILE --postgres URL [--postmaster-pid-file
//! FILE] [--runs R] [--chunks N] [--echo-turns T] [--creators P] [--creates M] [--markdown FILE]
//! [--note TEXT ...]`. The report replaces the part of `--markdown` between
//! `<!-- bench-stores:begin -->` and `<!-- bench-stores:end -->` (appended when absent).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::{
    Cpu, Echo, INITIALIZE, Proc, attempt, command_output, loadavg, machine, measure_echo, median, micros, ms, prompt,
    session_id, session_new,
};

struct Config {
    runs: usize,
    chunks: u64,
    echo_turns: u64,
    creators: usize,
    creates: u64,
    timeout: Duration,
    demo: String,
    stores: Vec<(&'static str, String)>,
    postmaster_pid_file: Option<String>,
    markdown: Option<String>,
    notes: Vec<String>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Config {
    let mut config = Config {
        runs: 5,
        chunks: 100_000,
        echo_turns: 2_000,
        creators: 4,
        creates: 500,
        timeout: Duration::from_secs(120),
        demo: super::sibling("acp-facade-demo"),
        stores: Vec::new(),
        postmaster_pid_file: None,
        markdown: None,
        notes: Vec::new(),
    };
    let (mut sqlite, mut postgres) = (None, None);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--runs" => config.runs = value().parse().expect("--runs N"),
            "--chunks" => config.chunks = value().parse().expect("--chunks N"),
            "--echo-turns" => config.echo_turns = value().parse().expect("--echo-turns N"),
            "--creators" => config.creators = value().parse().expect("--creators P"),
            "--creates" => config.creates = value().parse().expect("--creates M"),
            "--timeout-s" => config.timeout = Duration::from_secs(value().parse().expect("--timeout-s S")),
            "--demo" => config.demo = value(),
            "--sqlite" => sqlite = Some(value()),
            "--postgres" => postgres = Some(value()),
            "--postmaster-pid-file" => config.postmaster_pid_file = Some(value()),
            "--markdown" => config.markdown = Some(value()),
            "--note" => config.notes.push(value()),
            other => panic!("unknown argument {other}"),
        }
    }
    config.stores.push(("sqlite", sqlite.expect("--sqlite FILE")));
    config.stores.push(("postgres", postgres.expect("--postgres URL")));
    // For context: the same agent with nothing durable (not shared: no creators row).
    config.stores.push(("sqlite :memory:", ":memory:".to_owned()));
    assert!(config.runs > 0 && config.creators > 0, "--runs and --creators must be positive");
    config
}

/// One store's measurements in one run.
struct StoreRun {
    stream: Duration,
    echo: Echo,
    /// The database server's CPU per echo turn (across CPUs), when it is a separate process.
    server: Option<Duration>,
    /// How long the creators took to create all their sessions together (`None` for a store
    /// that processes cannot share).
    creating: Option<Duration>,
}

/// The medians of one store's runs.
struct Summary {
    stream: Duration,
    cpu: Duration,
    cpu_one: Option<Duration>,
    server: Option<Duration>,
    /// Sessions created per second by all creators together.
    creates: Option<f64>,
}

/// The postmaster and its children (the server's backends and workers): their CPU time together.
fn server_cpu(pid_file: Option<&str>) -> Option<Cpu> {
    let text = std::fs::read_to_string(pid_file?).ok()?;
    let postmaster: u32 = text.lines().next()?.trim().parse().ok()?;
    let mut total = Cpu::read(postmaster);
    for entry in std::fs::read_dir("/proc").ok()?.filter_map(Result::ok) {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let parent = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if parent == Some(postmaster) {
            total += Cpu::read(pid);
        }
    }
    Some(total)
}

fn started(command: &str, timeout: Duration) -> (Proc, String) {
    let mut p = Proc::spawn(command, timeout);
    p.send(INITIALIZE);
    p.ok_response();
    p.send(&session_new(2));
    let session = session_id(&p.ok_response());
    (p, session)
}

fn run_store(config: &Config, store: &str, server_pid_file: Option<&str>) -> StoreRun {
    let command = format!("{} --store {store}", config.demo);
    let (mut p, session) = started(&command, config.timeout);
    let begun = Instant::now();
    p.send(&prompt(3, &session, &format!("stream {}", config.chunks)));
    let (_, notifications) = p.until_response();
    let stream = begun.elapsed();
    assert!(notifications >= config.chunks, "expected {} chunks, got {notifications}", config.chunks);

    let server_before = server_cpu(server_pid_file);
    let echo = measure_echo(&mut p, &session, config.echo_turns);
    // The server's share per turn across every echo pass.
    let turns = u32::try_from(config.echo_turns).unwrap_or(u32::MAX).saturating_mul(echo.passes());
    let server = match (server_before, server_cpu(server_pid_file)) {
        (Some(before), Some(after)) => Some(after.since(before) / turns.max(1)),
        _ => None,
    };
    drop(p);
    let creating = (store != ":memory:").then(|| creates(config, &command));
    StoreRun { stream, echo, server, creating }
}

/// `--creators` processes on one store, each creating `--creates` sessions one at a time, all at
/// once: how long that took.
fn creates(config: &Config, command: &str) -> Duration {
    let mut procs: Vec<Proc> = (0..config.creators)
        .map(|_| {
            let mut p = Proc::spawn(command, config.timeout);
            p.send(INITIALIZE);
            p.ok_response();
            p
        })
        .collect();
    let n = config.creates;
    let begun = Instant::now();
    std::thread::scope(|scope| {
        for p in &mut procs {
            scope.spawn(move || {
                for id in 0..n {
                    p.send(&session_new(100 + id));
                    p.ok_response();
                }
            });
        }
    });
    begun.elapsed()
}

/// Runs the comparison and writes its report.
#[allow(clippy::too_many_lines, reason = "one report, top to bottom")]
pub(crate) fn main(args: impl Iterator<Item = String>) {
    let config = parse(args);
    let load_before = loadavg();
    let begun = Instant::now();
    let mut results: Vec<Vec<StoreRun>> = config.stores.iter().map(|_| Vec::new()).collect();
    for run in 0..config.runs {
        eprintln!(
            "run {}/{} ({:.0} s so far, load {})",
            run + 1,
            config.runs,
            begun.elapsed().as_secs_f64(),
            loadavg()
        );
        for (i, (name, store)) in config.stores.iter().enumerate() {
            eprintln!("  {name}");
            let pid_file = (*name == "postgres").then_some(config.postmaster_pid_file.as_deref()).flatten();
            results[i].extend(attempt(name, || run_store(&config, store, pid_file)));
        }
    }
    let elapsed = begun.elapsed();
    let sessions = config.creates * config.creators as u64;
    let summaries: Vec<Option<Summary>> = results
        .iter()
        .map(|runs| {
            Some(Summary {
                stream: median(runs.iter().map(|r| r.stream).collect())?,
                cpu: median(runs.iter().map(|r| r.echo.free).collect())?,
                cpu_one: median(runs.iter().filter_map(|r| r.echo.one_cpu).collect()),
                server: median(runs.iter().filter_map(|r| r.server).collect()),
                creates: median(runs.iter().filter_map(|r| r.creating).collect())
                    .map(|d| sessions as f64 / d.as_secs_f64()),
            })
        })
        .collect();

    let mut out = String::new();
    let _ = writeln!(
        out,
        "Measured {} on {}; {} runs in {:.0} s; load average (1, 5, 15 min) {load_before} before, {} after.",
        command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        machine(),
        config.runs,
        elapsed.as_secs_f64(),
        loadavg(),
    );
    for note in &config.notes {
        let _ = writeln!(out, "{note}");
    }
    let _ = writeln!(
        out,
        "\n`stream {}` over real pipes; echo CPU per `hello world` turn over {} turns (the agent's CPU; the database \
         server's separately); sessions created per second by {} demo processes together, {} `session/new` each, one \
         at a time. Medians of {} runs.\n",
        config.chunks, config.echo_turns, config.creators, config.creates, config.runs
    );
    out.push_str(
        "| store | stream time (ms) | echo CPU/turn (µs) | echo CPU/turn, one CPU (µs) | database server CPU/turn (µs) | sessions created/s, 4 processes |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---:|\n");
    for ((name, _), summary) in config.stores.iter().zip(&summaries) {
        match summary {
            Some(s) => {
                let _ = writeln!(
                    out,
                    "| {name} | {} | {:.1} | {} | {} | {} |",
                    ms(s.stream),
                    s.cpu.as_secs_f64() * 1e6,
                    micros(s.cpu_one),
                    s.server.map_or_else(|| "– (in the agent)".to_owned(), |d| micros(Some(d))),
                    s.creates.map_or_else(|| "– (not shared)".to_owned(), |c| format!("{c:.0}")),
                );
            }
            None => {
                let _ = writeln!(out, "| {name} | failed | | | | |");
            }
        }
    }
    if let (Some(Some(sqlite)), Some(Some(postgres))) = (summaries.first(), summaries.get(1)) {
        let verdict = |ok: bool| if ok { "met" } else { "**not met**" };
        let stream = postgres.stream.as_secs_f64() / sqlite.stream.as_secs_f64();
        let cpu = postgres.cpu.as_secs_f64() / sqlite.cpu.as_secs_f64();
        let _ = write!(out, "\n| goal (PostgreSQL store) | measured | |\n|---|---:|---|\n");
        let _ = writeln!(
            out,
            "| `stream {}` time, PostgreSQL ≤ 1.5× SQLite | {stream:.2}× | {} |",
            config.chunks,
            verdict(stream <= 1.5)
        );
        let one = match (postgres.cpu_one, sqlite.cpu_one) {
            (Some(p), Some(s)) => format!("; {:.2}× on one CPU", p.as_secs_f64() / s.as_secs_f64()),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "| echo CPU/turn, PostgreSQL ≤ 3× SQLite | {cpu:.2}× across CPUs{one} | {} |",
            verdict(cpu <= 3.0)
        );
        let total = |s: &Summary| s.cpu + s.server.unwrap_or_default();
        let _ = writeln!(
            out,
            "| (echo CPU/turn, agent + database server, PostgreSQL against SQLite) | {:.2}× | (no goal) |",
            total(postgres).as_secs_f64() / total(sqlite).as_secs_f64()
        );
        if let (Some(p), Some(s)) = (postgres.creates, sqlite.creates) {
            let _ = writeln!(
                out,
                "| sessions created/s by {} processes, PostgreSQL against SQLite | {:.2}× | (no goal) |",
                config.creators,
                p / s
            );
        }
    }
    println!("{out}");
    if let Some(path) = &config.markdown {
        let doc = std::fs::read_to_string(path).unwrap_or_default();
        let (first, last) = ("<!-- bench-stores:begin -->", "<!-- bench-stores:end -->");
        let updated = match (doc.find(first), doc.find(last)) {
            (Some(b), Some(e)) if b < e => format!("{}{first}\n{out}{}", &doc[..b], &doc[e..]),
            _ => format!("{doc}\n{first}\n{out}{last}\n"),
        };
        std::fs::write(path, updated).expect("write the markdown report");
    }
}
