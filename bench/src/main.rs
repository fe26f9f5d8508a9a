//! `acp-facade-bench`: runs agents side by side over real pipes and reports medians.
//!
//! For every agent (a command line speaking ACP over stdio) and the raw baseline it measures, in
//! one run, with the median over `--runs` repetitions:
//! - `stream N`: wall time from the prompt to its response while N `agent_message_chunk`
//!   notifications arrive; notifications/s and the ratio to the raw writer's time;
//! - startup: spawn to the `initialize` response;
//! - echo: the agent process's CPU time (user + system, from /proc) per echo turn;
//! - RSS: idle (after `session/new`), peak (VmHWM after the stream), and growth while a client
//!   stops reading during a `stream N`.
//!
//! Usage: `acp-facade-bench [--runs R] [--chunks N] [--echo-turns T] [--raw PATH]
//!         [--agent NAME=COMMAND ...] [--markdown FILE]`

#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a command-line report")]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

struct Config {
    runs: usize,
    chunks: u64,
    echo_turns: u64,
    raw: String,
    agents: Vec<(String, String)>,
    markdown: Option<String>,
}

fn parse() -> Config {
    let mut config = Config {
        runs: 5,
        chunks: 100_000,
        echo_turns: 2_000,
        raw: "target/release/raw-writer".into(),
        agents: Vec::new(),
        markdown: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--runs" => config.runs = value().parse().expect("--runs N"),
            "--chunks" => config.chunks = value().parse().expect("--chunks N"),
            "--echo-turns" => config.echo_turns = value().parse().expect("--echo-turns N"),
            "--raw" => config.raw = value(),
            "--agent" => {
                let spec = value();
                let (name, command) = spec.split_once('=').expect("--agent NAME=COMMAND");
                config.agents.push((name.to_owned(), command.to_owned()));
            }
            "--markdown" => config.markdown = Some(value()),
            other => panic!("unknown argument {other}"),
        }
    }
    if config.agents.is_empty() {
        config.agents.push(("rust demo".into(), "target/release/acp-facade-demo --store :memory:".into()));
    }
    config
}

/// A spawned process with line-oriented pipes.
struct Proc {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
}

const RESPONSE_PREFIX: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";

impl Proc {
    fn spawn(command: &str) -> Self {
        let mut parts = command.split_whitespace();
        let program = parts.next().expect("empty command");
        let mut child = Command::new(program)
            .args(parts)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command}: {e}"));
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().expect("stdout"));
        Self { child, stdin, stdout, line: Vec::with_capacity(512) }
    }

    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).expect("write");
        self.stdin.write_all(b"\n").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Reads lines until a response (any id); returns it and how many other lines came first.
    fn until_response(&mut self) -> (String, u64) {
        let mut others = 0;
        loop {
            self.line.clear();
            let n = self.stdout.read_until(b'\n', &mut self.line).expect("read");
            assert!(n > 0, "the agent closed its stdout");
            if self.line.starts_with(RESPONSE_PREFIX) {
                return (String::from_utf8_lossy(&self.line).into_owned(), others);
            }
            others += 1;
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn status_kib(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// User + system CPU time of a process.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    // Linux reports in clock ticks of 1/100 s on every supported configuration.
    Duration::from_millis(ticks * 10)
}

fn session_id(response: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(response).expect("session/new response");
    value["result"]["sessionId"].as_str().expect("sessionId").to_owned()
}

struct AgentRun {
    startup: Duration,
    stream: Duration,
    echo_cpu_per_turn: Duration,
    idle_rss_kib: u64,
    peak_rss_kib: u64,
    stalled_growth_kib: i64,
}

fn prompt(id: u64, session: &str, text: &str) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
    .to_string()
}

fn run_agent(command: &str, config: &Config) -> AgentRun {
    let spawned = Instant::now();
    let mut p = Proc::spawn(command);
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#);
    p.until_response();
    let startup = spawned.elapsed();
    p.send(r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#);
    let session = session_id(&p.until_response().0);
    let idle_rss_kib = status_kib(p.pid(), "VmRSS:");

    let started = Instant::now();
    p.send(&prompt(3, &session, &format!("stream {}", config.chunks)));
    let (_, notifications) = p.until_response();
    let stream = started.elapsed();
    assert!(notifications >= config.chunks, "expected {} chunks, got {notifications}", config.chunks);
    let peak_rss_kib = status_kib(p.pid(), "VmHWM:");

    let cpu_before = cpu_time(p.pid());
    for turn in 0..config.echo_turns {
        p.send(&prompt(10 + turn, &session, "hello world"));
        p.until_response();
    }
    let echo_cpu_per_turn = (cpu_time(p.pid()) - cpu_before) / u32::try_from(config.echo_turns.max(1)).unwrap_or(1);

    // A client that stops reading: the agent must not buffer the stream.
    let before = status_kib(p.pid(), "VmRSS:");
    p.send(&prompt(9_999_999, &session, &format!("stream {}", config.chunks)));
    std::thread::sleep(Duration::from_millis(1500));
    let stalled = status_kib(p.pid(), "VmRSS:");
    p.until_response();
    let stalled_growth_kib = i64::try_from(stalled).unwrap_or(0) - i64::try_from(before).unwrap_or(0);
    p.finish();
    AgentRun { startup, stream, echo_cpu_per_turn, idle_rss_kib, peak_rss_kib, stalled_growth_kib }
}

fn run_raw(config: &Config) -> (Duration, Duration) {
    let spawned = Instant::now();
    let mut p = Proc::spawn(&format!("{} {}", config.raw, config.chunks));
    p.until_response();
    let startup = spawned.elapsed();
    let started = Instant::now();
    p.send("go");
    let (_, notifications) = p.until_response();
    let stream = started.elapsed();
    assert_eq!(notifications, config.chunks);
    p.finish();
    (startup, stream)
}

fn median<T: Ord + Copy>(mut values: Vec<T>) -> T {
    values.sort_unstable();
    values[values.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

fn main() {
    let config = parse();
    let mut raw_startup = Vec::new();
    let mut raw_stream = Vec::new();
    let mut results: Vec<(String, Vec<AgentRun>)> = config.agents.iter().map(|(n, _)| (n.clone(), Vec::new())).collect();
    // Interleave agents within each repetition so machine noise hits all of them alike.
    for run in 0..config.runs {
        eprintln!("run {}/{}", run + 1, config.runs);
        let (s, t) = run_raw(&config);
        raw_startup.push(s);
        raw_stream.push(t);
        for (i, (_, command)) in config.agents.iter().enumerate() {
            results[i].1.push(run_agent(command, &config));
        }
    }
    let raw_time = median(raw_stream);
    let raw_start = median(raw_startup);
    let chunks = config.chunks;
    let rate = |d: Duration| chunks as f64 / d.as_secs_f64();
    let mut table = String::new();
    table.push_str(&format!(
        "`stream {chunks}` over real pipes, median of {} runs; ratios are against the raw serde_json writer measured in the same run.\n\n",
        config.runs
    ));
    table.push_str("| agent | stream time (ms) | notifications/s | × raw time | startup (ms) | × raw startup | echo CPU/turn (µs) | idle RSS (MiB) | peak RSS (MiB) | RSS growth, stalled client (MiB) |\n");
    table.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    table.push_str(&format!(
        "| raw serde_json writer | {} | {:.0} | 1.00 | {} | 1.00 | – | – | – | – |\n",
        ms(raw_time),
        rate(raw_time),
        ms(raw_start)
    ));
    for (name, runs) in &results {
        let stream = median(runs.iter().map(|r| r.stream).collect());
        let startup = median(runs.iter().map(|r| r.startup).collect());
        let cpu = median(runs.iter().map(|r| r.echo_cpu_per_turn).collect());
        let idle = median(runs.iter().map(|r| r.idle_rss_kib).collect());
        let peak = median(runs.iter().map(|r| r.peak_rss_kib).collect());
        let growth = median(runs.iter().map(|r| r.stalled_growth_kib).collect());
        table.push_str(&format!(
            "| {name} | {} | {:.0} | {:.2} | {} | {:.2} | {:.1} | {:.1} | {:.1} | {:.2} |\n",
            ms(stream),
            rate(stream),
            stream.as_secs_f64() / raw_time.as_secs_f64(),
            ms(startup),
            startup.as_secs_f64() / raw_start.as_secs_f64(),
            cpu.as_secs_f64() * 1e6,
            idle as f64 / 1024.0,
            peak as f64 / 1024.0,
            growth as f64 / 1024.0,
        ));
    }
    println!("{table}");
    if let Some(path) = &config.markdown {
        let doc = std::fs::read_to_string(path).unwrap_or_default();
        let (begin, end) = ("<!-- bench:begin -->", "<!-- bench:end -->");
        let updated = match (doc.find(begin), doc.find(end)) {
            (Some(b), Some(e)) if b < e => format!("{}{begin}\n{table}{}", &doc[..b], &doc[e..]),
            _ => format!("{doc}\n{begin}\n{table}{end}\n"),
        };
        std::fs::write(path, updated).expect("write the markdown report");
    }
}
