//! `acp-facade-bench protocols …`: ACP v2 (Preview) against v1, side by side in one run — the
//! main table's `stream N` and echo rows and its host-callback rows, each measured for every
//! agent under both protocol versions, with the v2/v1 ratio of every figure.
//!
//! For each agent (`--agent NAME=COMMAND`: one program that serves both versions, as the demos
//! do; or `--agent-v1 NAME=COMMAND` and `--agent-v2 NAME=COMMAND`: a program per version, as the
//! official SDKs' fixtures are) and each version, in a fresh process: `initialize` asking for that
//! version (v1: `protocolVersion` 1 and `clientCapabilities`; v2: 2, `info` and `capabilities`) —
//! an agent that answers another version is reported as not serving it, not measured —, then
//! `session/new` in that version's form, then
//! - `stream N`: wall time from writing the prompt to the end of its turn while N
//!   `agent_message_chunk` notifications arrive (the driver reads every line);
//! - echo: the agent's CPU per `hello world` turn over `--echo-turns` turns, each sent when the
//!   previous one ended, placed freely, on two CPUs and on one CPU as in the main table (see
//!   `crate::Echo`); and the latency of a turn (the driver's wall time per turn) in each placement.
//!
//! A turn ends, under v1, at the prompt's response; under v2, whose prompt response only
//! acknowledges the prompt, once both that response and the idle `state_update` that carries the
//! turn's stop reason have arrived (an idle state without a stop reason — the SDKs' example agents
//! send one after `session/new` — ends no turn). Under both versions the driver looks at every
//! line the same way, so its own work per line does not differ between them.
//!
//! For each callback host (`--callback`, `--callback-v1`, `--callback-v2`, likewise): `session/new`
//! round trips in that version's form, one at a time in the three placements and with
//! `--concurrency` in flight placed freely, as the main table's callback rows.
//!
//! Every ratio is of costs — stream time, CPU per turn, latency per turn, time per round trip —
//! so that below 1 is faster: v2/v1 for every row and figure, judged against ≤ 1.10 for the rows
//! named `… demo` and `… host`; and, for each `--pair OURS=SDK` (a demo or host against the
//! official SDK of its language), ours/SDK under v2 beside the same under v1, judged against < 1
//! under v2 ("still ahead"). Medians over `--runs` repetitions; within each, the rows are rotated
//! as in the main table (`crate::rotated`) and a row's two versions run one after the other, the
//! first of them alternating from run to run and row to row.
//!
//! Usage: `acp-facade-bench protocols [--runs R] [--chunks N] [--echo-turns T]
//! [--callback-requests N] [--concurrency C] [--timeout-s S] [--agent|--agent-v1|--agent-v2
//! NAME=COMMAND ...] [--callback|--callback-v1|--callback-v2 NAME=COMMAND ...] [--pair OURS=SDK
//! ...] [--markdown FILE] [--note TEXT ...]`. The report replaces the part of `--markdown` between
//! `<!-- bench-protocols:begin -->` and `<!-- bench-protocols:end -->` (appended when absent).

use std::fmt::Write as _;
use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use crate::{
    Cpu, Placement, Proc, RESPONSE_PREFIX, attempt, command_output, loadavg, machine, median, named, prompt, rotated,
    session_id,
};

/// The bound of the v2/v1 cost ratio of a demo's or host's figures.
const WITHIN: f64 = 1.10;

/// A protocol version the driver speaks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Version {
    V1,
    V2,
}

const VERSIONS: [Version; 2] = [Version::V1, Version::V2];

impl Version {
    fn index(self) -> usize {
        match self {
            Version::V1 => 0,
            Version::V2 => 1,
        }
    }

    fn number(self) -> u64 {
        match self {
            Version::V1 => 1,
            Version::V2 => 2,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Version::V1 => "v1",
            Version::V2 => "v2",
        }
    }

    fn initialize(self) -> &'static str {
        match self {
            Version::V1 => crate::INITIALIZE,
            Version::V2 => {
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"acp-facade-bench","version":"0.1.0"},"capabilities":{}}}"#
            }
        }
    }

    fn session_new(self, id: u64) -> String {
        match self {
            Version::V1 => crate::session_new(id),
            Version::V2 => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"session/new","params":{{"cwd":"/tmp"}}}}"#),
        }
    }
}

/// A row: a name and its command under each version (`None`: not run under that version).
struct Row {
    name: String,
    commands: [Option<String>; 2],
}

fn add_row(rows: &mut Vec<Row>, (name, command): (String, String), versions: &[Version]) {
    let index = rows.iter().position(|r| r.name == name).unwrap_or_else(|| {
        rows.push(Row { name, commands: [None, None] });
        rows.len() - 1
    });
    for version in versions {
        rows[index].commands[version.index()] = Some(command.clone());
    }
}

struct Config {
    runs: usize,
    chunks: u64,
    echo_turns: u64,
    callback_requests: u64,
    concurrency: u64,
    timeout: Duration,
    agents: Vec<Row>,
    callbacks: Vec<Row>,
    pairs: Vec<(String, String)>,
    markdown: Option<String>,
    notes: Vec<String>,
}

fn parse(args: impl Iterator<Item = String>) -> Config {
    let mut config = Config {
        runs: 5,
        chunks: 100_000,
        echo_turns: 2_000,
        callback_requests: 3_000,
        concurrency: 64,
        timeout: Duration::from_secs(60),
        agents: Vec::new(),
        callbacks: Vec::new(),
        pairs: Vec::new(),
        markdown: None,
        notes: Vec::new(),
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--runs" => config.runs = value().parse().expect("--runs N"),
            "--chunks" => config.chunks = value().parse().expect("--chunks N"),
            "--echo-turns" => config.echo_turns = value().parse().expect("--echo-turns N"),
            "--callback-requests" => config.callback_requests = value().parse().expect("--callback-requests N"),
            "--concurrency" => config.concurrency = value().parse().expect("--concurrency C"),
            "--timeout-s" => config.timeout = Duration::from_secs(value().parse().expect("--timeout-s S")),
            "--agent" => add_row(&mut config.agents, named(&value(), "--agent"), &VERSIONS),
            "--agent-v1" => add_row(&mut config.agents, named(&value(), "--agent-v1"), &[Version::V1]),
            "--agent-v2" => add_row(&mut config.agents, named(&value(), "--agent-v2"), &[Version::V2]),
            "--callback" => add_row(&mut config.callbacks, named(&value(), "--callback"), &VERSIONS),
            "--callback-v1" => add_row(&mut config.callbacks, named(&value(), "--callback-v1"), &[Version::V1]),
            "--callback-v2" => add_row(&mut config.callbacks, named(&value(), "--callback-v2"), &[Version::V2]),
            "--pair" => config.pairs.push(named(&value(), "--pair")),
            "--markdown" => config.markdown = Some(value()),
            "--note" => config.notes.push(value()),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(config.runs > 0 && config.concurrency > 0, "--runs and --concurrency must be positive");
    config
}

/// Why a version of a row was not measured: the agent answered another protocol version.
#[derive(Debug)]
struct NotServed(u64);

/// Spawns `command`, initializes it in `version` and opens a session in that version's form; the
/// agent answering another version is `Err`.
fn open(command: &str, version: Version, timeout: Duration) -> Result<(Proc, String), NotServed> {
    let mut p = Proc::spawn(command, timeout);
    negotiate(&mut p, version)?;
    p.send(&version.session_new(2));
    let session = session_id(&p.ok_response());
    Ok((p, session))
}

/// `initialize` in `version`; `Err` with the version the agent answered when it is another.
fn negotiate(p: &mut Proc, version: Version) -> Result<(), NotServed> {
    p.send(version.initialize());
    let response: serde_json::Value = serde_json::from_str(&p.ok_response()).expect("initialize response");
    let answered = response["result"]["protocolVersion"].as_u64().unwrap_or(0);
    if answered == version.number() { Ok(()) } else { Err(NotServed(answered)) }
}

/// Whether `line` is the idle `state_update` that ends a v2 turn: idle, with a stop reason.
fn ends_turn(line: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(line) else { return false };
    if !text.contains("\"state_update\"") {
        return false;
    }
    let Ok(message) = serde_json::from_str::<serde_json::Value>(text) else { return false };
    let update = &message["params"]["update"];
    update["sessionUpdate"] == "state_update" && update["state"] == "idle" && !update["stopReason"].is_null()
}

/// Sends a prompt and reads until its turn ends (see the module doc); the number of other lines
/// that came meanwhile.
fn turn(p: &mut Proc, version: Version, id: u64, session: &str, text: &str) -> u64 {
    p.send(&prompt(id, session, text));
    let (mut answered, mut ended, mut others) = (false, version == Version::V1, 0);
    while !(answered && ended) {
        p.line.clear();
        let n = p.stdout.read_until(b'\n', &mut p.line).expect("read");
        assert!(n > 0, "the agent closed its stdout");
        if p.line.starts_with(RESPONSE_PREFIX) {
            assert!(
                !p.line.windows(9).any(|w| w == b"\"error\":{"),
                "the agent answered an error: {}",
                String::from_utf8_lossy(&p.line).trim_end()
            );
            answered = true;
        } else if ends_turn(&p.line) {
            // Under v1 a line like that is only counted: the turn ends at the response.
            if version == Version::V2 {
                ended = true;
            } else {
                others += 1;
            }
        } else {
            others += 1;
        }
    }
    others
}

/// The agent's CPU and the driver's wall time per echo turn, in one placement.
#[derive(Clone, Copy)]
struct EchoPass {
    cpu: Duration,
    latency: Duration,
}

fn echo_pass(p: &mut Proc, version: Version, session: &str, first_id: u64, turns: u64) -> EchoPass {
    let cpu_before = Cpu::read(p.pid());
    let started = Instant::now();
    for i in 0..turns {
        turn(p, version, first_id + i, session, "hello world");
    }
    let latency = started.elapsed();
    let n = u32::try_from(turns.max(1)).unwrap_or(u32::MAX);
    EchoPass { cpu: Cpu::read(p.pid()).since(cpu_before) / n, latency: latency / n }
}

/// The placements of the echo and of the one-at-a-time callbacks, in the order of their columns.
const PLACEMENTS: [Placement; 3] = [Placement::Free, Placement::TwoCpus, Placement::OneCpu];

struct AgentRun {
    stream: Duration,
    echo: [Option<EchoPass>; 3],
}

fn run_agent(command: &str, version: Version, config: &Config) -> Result<AgentRun, NotServed> {
    let (mut p, session) = open(command, version, config.timeout)?;
    let started = Instant::now();
    let notifications = turn(&mut p, version, 3, &session, &format!("stream {}", config.chunks));
    let stream = started.elapsed();
    assert!(notifications >= config.chunks, "expected {} chunks, got {notifications}", config.chunks);
    let pid = p.pid();
    let turns = config.echo_turns;
    let mut echo = [None; 3];
    for (i, placement) in PLACEMENTS.into_iter().enumerate() {
        let first_id = 10 + turns * i as u64;
        echo[i] = placement.run(pid, || echo_pass(&mut p, version, &session, first_id, turns));
    }
    Ok(AgentRun { stream, echo })
}

struct CallbackRun {
    one_at_a_time: [Option<Duration>; 3],
    in_flight: Duration,
}

fn one_at_a_time(p: &mut Proc, version: Version, id: &mut u64, n: u64) -> Duration {
    let started = Instant::now();
    for _ in 0..n {
        *id += 1;
        p.send(&version.session_new(*id));
        p.ok_response();
    }
    started.elapsed()
}

fn run_callback(command: &str, version: Version, config: &Config) -> Result<CallbackRun, NotServed> {
    let mut p = Proc::spawn(command, config.timeout);
    negotiate(&mut p, version)?;
    let n = config.callback_requests;
    let mut id = 100;
    one_at_a_time(&mut p, version, &mut id, (n / 10).max(1));
    let pid = p.pid();
    let mut placed = [None; 3];
    for (i, placement) in PLACEMENTS.into_iter().enumerate() {
        placed[i] = placement.run(pid, || one_at_a_time(&mut p, version, &mut id, n));
    }
    let started = Instant::now();
    let (mut sent, mut answered) = (0, 0);
    while answered < n {
        let mut batch = String::new();
        while sent < n && sent - answered < config.concurrency {
            id += 1;
            sent += 1;
            batch.push_str(&version.session_new(id));
            batch.push('\n');
        }
        if !batch.is_empty() {
            let stdin = p.stdin.as_mut().expect("stdin open");
            stdin.write_all(batch.as_bytes()).expect("write");
            stdin.flush().expect("flush");
        }
        p.ok_response();
        answered += 1;
    }
    Ok(CallbackRun { one_at_a_time: placed, in_flight: started.elapsed() })
}

/// The figures of one row under one version, as medians (`None`: not measured), or why the
/// version was not served.
#[derive(Default)]
struct Medians {
    figures: Vec<Option<Duration>>,
    not_served: Option<u64>,
    failed: usize,
}

/// What one row under one version collected over the runs.
#[derive(Default)]
struct Collected {
    /// One vector of samples per figure.
    samples: Vec<Vec<Duration>>,
    not_served: Option<u64>,
    failed: usize,
}

impl Collected {
    fn push(&mut self, figures: &[Option<Duration>]) {
        if self.samples.len() < figures.len() {
            self.samples.resize(figures.len(), Vec::new());
        }
        for (samples, figure) in self.samples.iter_mut().zip(figures) {
            samples.extend(*figure);
        }
    }

    fn medians(&self, figures: usize) -> Medians {
        Medians {
            figures: (0..figures).map(|i| self.samples.get(i).and_then(|s| median(s.clone()))).collect(),
            not_served: self.not_served,
            failed: self.failed,
        }
    }
}

/// Measures `what` for `row` under `version` in this run, into `collected`.
fn measure<T>(
    row: &Row,
    version: Version,
    collected: &mut Collected,
    run: impl FnOnce(&str) -> Result<T, NotServed>,
    figures: impl FnOnce(&T) -> Vec<Option<Duration>>,
    what: &str,
) {
    let Some(command) = &row.commands[version.index()] else { return };
    let label = format!("{} {} ({what})", row.name, version.label());
    eprintln!("  {label}");
    match attempt(&label, || run(command)) {
        Some(Ok(measured)) => collected.push(&figures(&measured)),
        Some(Err(NotServed(answered))) => {
            eprintln!("  {label}: answered protocolVersion {answered}, not measured");
            collected.not_served = Some(answered);
        }
        None => collected.failed += 1,
    }
}

/// The order of the two versions of row `row` in run `run`: alternating from run to run and from
/// row to row.
fn version_order(run: usize, row: usize) -> [Version; 2] {
    if (run + row).is_multiple_of(2) { VERSIONS } else { [Version::V2, Version::V1] }
}

fn micros(d: Option<Duration>) -> String {
    d.map_or_else(|| "–".to_owned(), |d| format!("{:.1}", d.as_secs_f64() * 1e6))
}

fn millis(d: Option<Duration>) -> String {
    d.map_or_else(|| "–".to_owned(), |d| format!("{:.2}", d.as_secs_f64() * 1e3))
}

/// A column's name without its unit, for the tables of ratios.
fn bare(column: &str) -> &str {
    column.split(" (").next().unwrap_or(column)
}

/// A cost ratio `a / b`, or `None`.
fn cost_ratio(a: Option<Duration>, b: Option<Duration>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if !b.is_zero() => Some(a.as_secs_f64() / b.as_secs_f64()),
        _ => None,
    }
}

/// A ratio cell, in bold when `bad`.
fn ratio_cell(ratio: Option<f64>, bad: impl Fn(f64) -> bool) -> String {
    match ratio {
        Some(r) if bad(r) => format!("**{r:.2}**"),
        Some(r) => format!("{r:.2}"),
        None => "–".to_owned(),
    }
}

/// Why a row under a version has no figures, for its cells.
fn absent(m: &Medians, runs: usize) -> Option<String> {
    if let Some(answered) = m.not_served {
        return Some(format!("not served (answers protocolVersion {answered})"));
    }
    if m.failed >= runs {
        return Some("failed".to_owned());
    }
    None
}

/// One table of a kind of row: the figures under each version, then the v2/v1 ratios.
struct Section<'a> {
    /// What a row is (`agent`, `host`).
    head: &'a str,
    rows: &'a [Row],
    medians: &'a [[Medians; 2]],
    /// The columns' names.
    columns: &'a [String],
    /// How a figure is shown.
    show: &'a dyn Fn(usize, Option<Duration>) -> String,
    /// Which columns are judged (the others are context).
    judged: &'a [bool],
    /// Whether a row is judged (v2/v1 ≤ `WITHIN`).
    judged_row: &'a dyn Fn(&str) -> bool,
}

/// A section's figures under each version and their v2/v1 ratios; for each judged row, its worst
/// judged ratio goes to `goals`.
fn figures_and_ratios(out: &mut String, section: &Section<'_>, runs: usize, goals: &mut Vec<String>) {
    let columns = section.columns;
    let separator = format!("|---|---|{}", "---:|".repeat(columns.len()));
    let _ = writeln!(out, "| {} | protocol | {} |\n{separator}", section.head, columns.join(" | "));
    for (row, medians) in section.rows.iter().zip(section.medians) {
        for version in VERSIONS {
            if row.commands[version.index()].is_none() {
                continue;
            }
            let m = &medians[version.index()];
            let cells: Vec<String> = match absent(m, runs) {
                Some(why) => std::iter::once(why).chain((1..columns.len()).map(|_| String::new())).collect(),
                None => m.figures.iter().enumerate().map(|(i, f)| (section.show)(i, *f)).collect(),
            };
            let failed = if m.failed > 0 && m.failed < runs {
                format!(" ({} of {runs} runs failed)", m.failed)
            } else {
                String::new()
            };
            let _ = writeln!(out, "| {}{failed} | {} | {} |", row.name, version.label(), cells.join(" | "));
        }
    }
    let _ = writeln!(
        out,
        "\nv2/v1, costs (time, CPU, latency, time per round trip: below 1 is faster under v2); **bold**: above {WITHIN:.2} in a judged column of a demo or host.\n"
    );
    let separator = format!("|---|{}", "---:|".repeat(columns.len()));
    let bare_columns: Vec<&str> = columns.iter().map(|c| bare(c)).collect();
    let _ = writeln!(out, "| {} | {} |\n{separator}", section.head, bare_columns.join(" | "));
    for (row, medians) in section.rows.iter().zip(section.medians) {
        let [v1, v2] = medians;
        if row.commands.iter().any(Option::is_none) {
            continue;
        }
        let judged_row = (section.judged_row)(&row.name);
        if let Some(why) = absent(v2, runs).or_else(|| absent(v1, runs)) {
            let _ = writeln!(out, "| {} | {why} |{}", row.name, " |".repeat(columns.len() - 1));
            if judged_row {
                goals.push(format!(
                    "| {}: v2 within {:.0}% of v1 | {why} | not measured |",
                    row.name,
                    (WITHIN - 1.0) * 100.0
                ));
            }
            continue;
        }
        let ratios: Vec<Option<f64>> = (0..columns.len()).map(|i| cost_ratio(v2.figures[i], v1.figures[i])).collect();
        let cells: Vec<String> = ratios
            .iter()
            .enumerate()
            .map(|(i, r)| ratio_cell(*r, |r| judged_row && section.judged[i] && r > WITHIN))
            .collect();
        let _ = writeln!(out, "| {} | {} |", row.name, cells.join(" | "));
        if judged_row {
            let worst = ratios
                .iter()
                .enumerate()
                .filter(|(i, _)| section.judged[*i])
                .filter_map(|(i, r)| r.map(|r| (i, r)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            if let Some((i, r)) = worst {
                let verdict = if r <= WITHIN { "met" } else { "**not met**" };
                goals.push(format!(
                    "| {}: v2 within {:.0}% of v1 | worst {r:.2} ({}) | {verdict} |",
                    row.name,
                    (WITHIN - 1.0) * 100.0,
                    bare(&columns[i])
                ));
            }
        }
    }
}

/// Ours against the SDK's agent of the same language under v2 (and, beside it, under v1).
fn pairs_table(
    out: &mut String,
    section: &Section<'_>,
    pairs: &[(String, String)],
    runs: usize,
    goals: &mut Vec<String>,
) {
    let find = |name: &str| section.rows.iter().position(|r| r.name == name);
    let found: Vec<(usize, usize)> = pairs.iter().filter_map(|(a, b)| Some((find(a)?, find(b)?))).collect();
    if found.is_empty() {
        return;
    }
    let columns = section.columns;
    let _ = writeln!(
        out,
        "\nOurs against the official SDK's agent of the same language, costs (below 1: ahead of the SDK): under v2, and in parentheses under v1.\n"
    );
    let separator = format!("|---|{}", "---:|".repeat(columns.len()));
    let bare_columns: Vec<&str> = columns.iter().map(|c| bare(c)).collect();
    let _ = writeln!(out, "| ours / SDK | {} |\n{separator}", bare_columns.join(" | "));
    for (ours, sdk) in found {
        let (a, b) = (&section.medians[ours], &section.medians[sdk]);
        let label = format!("{} / {}", section.rows[ours].name, section.rows[sdk].name);
        if let Some(why) = absent(&a[1], runs).or_else(|| absent(&b[1], runs)) {
            let _ = writeln!(out, "| {label} | v2: {why} |{}", " |".repeat(columns.len() - 1));
            goals.push(format!("| {label}: ahead under v2 | {why} | not measured |"));
            continue;
        }
        let ratio = |m: &[Medians; 2], n: &[Medians; 2], v: usize, i: usize| {
            m[v].figures
                .get(i)
                .copied()
                .flatten()
                .zip(n[v].figures.get(i).copied().flatten())
                .and_then(|(x, y)| cost_ratio(Some(x), Some(y)))
        };
        let v2: Vec<Option<f64>> = (0..columns.len()).map(|i| ratio(a, b, 1, i)).collect();
        let cells: Vec<String> = (0..columns.len())
            .map(|i| {
                let v1 = ratio(a, b, 0, i).map_or_else(|| "–".to_owned(), |r| format!("{r:.2}"));
                format!("{} ({v1})", ratio_cell(v2[i], |r| section.judged[i] && r >= 1.0))
            })
            .collect();
        let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
        let worst = v2
            .iter()
            .enumerate()
            .filter(|(i, _)| section.judged[*i])
            .filter_map(|(i, r)| r.map(|r| (i, r)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((i, r)) = worst {
            let verdict = if r < 1.0 { "met" } else { "**not met**" };
            goals.push(format!("| {label}: ahead under v2 | worst {r:.2} ({}) | {verdict} |", bare(&columns[i])));
        }
    }
}

/// Runs the benchmark and prints (and writes) the report.
#[allow(clippy::too_many_lines, reason = "one report, top to bottom")]
pub fn main(args: impl Iterator<Item = String>) {
    let config = parse(args);
    let load_before = loadavg();
    let started = Instant::now();
    let mut agents: Vec<[Collected; 2]> = config.agents.iter().map(|_| Default::default()).collect();
    let mut callbacks: Vec<[Collected; 2]> = config.callbacks.iter().map(|_| Default::default()).collect();
    for run in 0..config.runs {
        eprintln!(
            "protocols run {}/{} ({:.0} s so far, load {})",
            run + 1,
            config.runs,
            started.elapsed().as_secs_f64(),
            loadavg()
        );
        for i in rotated(config.agents.len(), run) {
            for version in version_order(run, i) {
                measure(
                    &config.agents[i],
                    version,
                    &mut agents[i][version.index()],
                    |command| run_agent(command, version, &config),
                    |r: &AgentRun| {
                        let mut figures = vec![Some(r.stream)];
                        figures.extend(r.echo.iter().map(|e| e.map(|e| e.cpu)));
                        figures.extend(r.echo.iter().map(|e| e.map(|e| e.latency)));
                        figures
                    },
                    "stream and echo",
                );
            }
        }
        for i in rotated(config.callbacks.len(), run) {
            for version in version_order(run, i) {
                measure(
                    &config.callbacks[i],
                    version,
                    &mut callbacks[i][version.index()],
                    |command| run_callback(command, version, &config),
                    |r: &CallbackRun| {
                        let mut figures: Vec<Option<Duration>> = r.one_at_a_time.to_vec();
                        figures.push(Some(r.in_flight));
                        figures
                    },
                    "callbacks",
                );
            }
        }
    }
    let elapsed = started.elapsed();
    let load_after = loadavg();
    let agent_medians: Vec<[Medians; 2]> = agents.iter().map(|c| [c[0].medians(7), c[1].medians(7)]).collect();
    let callback_medians: Vec<[Medians; 2]> = callbacks.iter().map(|c| [c[0].medians(4), c[1].medians(4)]).collect();

    let mut out = String::new();
    let _ = writeln!(
        out,
        "Measured {} on {}; {} runs in {:.0} s; load average (1, 5, 15 min) {load_before} before, {load_after} after.",
        command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        machine(),
        config.runs,
        elapsed.as_secs_f64(),
    );
    for note in &config.notes {
        let _ = writeln!(out, "{note}");
    }
    let mut goals = Vec::new();
    if !config.agents.is_empty() {
        let _ = writeln!(
            out,
            "\n### `stream {}` and echo under v1 and v2\n\nEach agent in a fresh process per version and run: `stream {}` (time from the prompt to the end of its turn), then {} `hello world` turns in each placement (the agent's CPU per turn, and the driver's wall time per turn: the latency); medians of {} runs. A v2 turn ends at the idle `state_update` with its stop reason, after the prompt's acknowledgement.\n",
            config.chunks, config.chunks, config.echo_turns, config.runs
        );
        let columns: Vec<String> = [
            "stream time (ms)",
            "echo CPU/turn, free (µs)",
            "echo CPU/turn, two CPUs (µs)",
            "echo CPU/turn, one CPU (µs)",
            "echo latency, free (µs)",
            "echo latency, two CPUs (µs)",
            "echo latency, one CPU (µs)",
        ]
        .map(str::to_owned)
        .to_vec();
        let show = |i: usize, d: Option<Duration>| if i == 0 { millis(d) } else { micros(d) };
        // Judged: the stream and the echo CPU (the main table's figures); latency is context.
        let judged = [true, true, true, true, false, false, false];
        let section = Section {
            head: "agent",
            rows: &config.agents,
            medians: &agent_medians,
            columns: &columns,
            show: &show,
            judged: &judged,
            judged_row: &|name: &str| name.ends_with("demo"),
        };
        figures_and_ratios(&mut out, &section, config.runs, &mut goals);
        pairs_table(&mut out, &section, &config.pairs, config.runs, &mut goals);
    }
    if !config.callbacks.is_empty() {
        let n = config.callback_requests;
        let _ = writeln!(
            out,
            "\n### Host-method callback round trips under v1 and v2\n\n`session/new` in each version's form (v2: `{{\"cwd\": …}}` alone) → the host's `new_session` → response, {n} one at a time placed freely, on two CPUs and on one CPU, then {n} with {} in flight placed freely (after a warm-up of {}); round trips/s, medians of {} runs.\n",
            config.concurrency,
            (n / 10).max(1),
            config.runs
        );
        let columns: Vec<String> = [
            "one at a time, free (round trips/s)".to_owned(),
            "one at a time, two CPUs".to_owned(),
            "one at a time, one CPU".to_owned(),
            format!("{} in flight", config.concurrency),
        ]
        .to_vec();
        let show = |_: usize, d: Option<Duration>| {
            d.map_or_else(|| "–".to_owned(), |d| format!("{:.0}", n as f64 / d.as_secs_f64()))
        };
        let judged = [true, true, true, true];
        let section = Section {
            head: "host",
            rows: &config.callbacks,
            medians: &callback_medians,
            columns: &columns,
            show: &show,
            judged: &judged,
            judged_row: &|name: &str| name.ends_with("host"),
        };
        figures_and_ratios(&mut out, &section, config.runs, &mut goals);
        pairs_table(&mut out, &section, &config.pairs, config.runs, &mut goals);
    }
    if !goals.is_empty() {
        let _ = writeln!(out, "\n### Goals (v2 against v1)\n\n| goal | measured | |\n|---|---|---|");
        for goal in goals {
            let _ = writeln!(out, "{goal}");
        }
    }
    println!("{out}");
    if let Some(path) = &config.markdown {
        let doc = std::fs::read_to_string(path).unwrap_or_default();
        let (first, last) = ("<!-- bench-protocols:begin -->", "<!-- bench-protocols:end -->");
        let updated = match (doc.find(first), doc.find(last)) {
            (Some(b), Some(e)) if b < e => format!("{}{first}\n{out}{}", &doc[..b], &doc[e..]),
            _ => format!("{doc}\n{first}\n{out}{last}\n"),
        };
        std::fs::write(path, updated).expect("write the markdown report");
    }
}

#[cfg(test)]
mod tests {
    use super::{Version, ends_turn, version_order};

    #[test]
    fn only_an_idle_state_with_a_stop_reason_ends_a_v2_turn() {
        let line = |update: &str| {
            format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{update}}}}}"#)
        };
        assert!(ends_turn(
            line(r#"{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}"#).as_bytes()
        ));
        assert!(ends_turn(
            line(r#"{"stopReason":"cancelled","state":"idle","sessionUpdate":"state_update"}"#).as_bytes()
        ));
        assert!(!ends_turn(line(r#"{"sessionUpdate":"state_update","state":"idle"}"#).as_bytes()));
        assert!(!ends_turn(line(r#"{"sessionUpdate":"state_update","state":"running"}"#).as_bytes()));
        let chunk = r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"state_update"}}"#;
        assert!(!ends_turn(line(chunk).as_bytes()));
    }

    #[test]
    fn the_first_version_alternates_by_run_and_by_row() {
        assert_eq!(version_order(0, 0), [Version::V1, Version::V2]);
        assert_eq!(version_order(1, 0), [Version::V2, Version::V1]);
        assert_eq!(version_order(0, 1), [Version::V2, Version::V1]);
        assert_eq!(version_order(1, 1), [Version::V1, Version::V2]);
    }
}
