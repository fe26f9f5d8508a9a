//! `acp-facade-bench client …`: calls to the client issued by a turn — `fs/read_text_file` round
//! trips, agent → client → agent — for each agent, side by side in one run.
//!
//! The driver is the client: it advertises `fs.readTextFile`, opens a session and prompts
//! `readloop N PATH P` (docs/DEMO.md: N reads of PATH, at most P in flight), answering every
//! `fs/read_text_file` at once with a short content, until the prompt's response. The time from
//! the prompt to its response gives round trips/s, first with one read in flight — placed freely,
//! on two CPUs and on one CPU, as the echo of the main benchmark (see `crate::Echo`): one at a
//! time, where the scheduler puts the client and the agent decides as much as the agent does —
//! then with `--concurrency` (64), placed freely. Medians over `--runs` repetitions, agents
//! interleaved within each. Each demo is compared with the agent on the official SDK of its
//! language (`--pair DEMO=SDK`), whose fixture implements the same `readloop` on the SDK's own
//! client calls.
//!
//! Usage: `acp-facade-bench client [--runs R] [--reads N] [--concurrency C] [--agent NAME=COMMAND
//! ...] [--pair DEMO=SDK ...] [--markdown FILE] [--note TEXT ...]`. The report replaces the part of
//! `--markdown` between `<!-- bench-client:begin -->` and `<!-- bench-client:end -->` (appended when
//! absent).

use std::fmt::Write as _;
use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use crate::{Placement, Proc, attempt, loadavg, machine, median, named, rotated, session_id};

struct Config {
    runs: usize,
    reads: u64,
    concurrency: u64,
    timeout: Duration,
    agents: Vec<(String, String)>,
    pairs: Vec<(String, String)>,
    markdown: Option<String>,
    notes: Vec<String>,
}

fn parse(args: impl Iterator<Item = String>) -> Config {
    let mut config = Config {
        runs: 5,
        reads: 10_000,
        concurrency: 64,
        timeout: Duration::from_secs(120),
        agents: Vec::new(),
        pairs: Vec::new(),
        markdown: None,
        notes: Vec::new(),
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--runs" => config.runs = value().parse().expect("--runs N"),
            "--reads" => config.reads = value().parse().expect("--reads N"),
            "--concurrency" => config.concurrency = value().parse().expect("--concurrency C"),
            "--timeout-s" => config.timeout = Duration::from_secs(value().parse().expect("--timeout-s S")),
            "--agent" => config.agents.push(named(&value(), "--agent")),
            "--pair" => config.pairs.push(named(&value(), "--pair")),
            "--markdown" => config.markdown = Some(value()),
            "--note" => config.notes.push(value()),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(config.runs > 0 && config.concurrency > 0, "--runs and --concurrency must be positive");
    config
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}}"#;

/// The path the agents read (the driver answers every read itself; nothing is on disk).
const PATH: &str = "/bench/file.txt";

/// What is measured, in order: one read in flight in each placement, then `--concurrency`
/// placed freely. Each is a column of the report.
const LEVELS: usize = 4;

/// One `readloop` in `placement`: the time from the prompt to its response, `reads` reads
/// `parallel` at a time; `None` when the machine has too few CPUs for the placement.
fn read_loop(command: &str, config: &Config, parallel: u64, placement: Placement) -> Option<Duration> {
    let mut p = Proc::spawn(command, config.timeout);
    p.send(INITIALIZE);
    p.ok_response();
    p.send(r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#);
    let session = session_id(&p.ok_response());
    // Placed after start-up, as the echo: the turn's reads run wholly in the placement.
    placement.run(p.pid(), || prompt_read_loop(&mut p, &session, config, parallel))
}

/// Prompts `readloop` in `session` and serves its reads until the prompt's response; the time.
fn prompt_read_loop(p: &mut Proc, session: &str, config: &Config, parallel: u64) -> Duration {
    let text = format!("readloop {} {PATH} {parallel}", config.reads);
    let prompt = serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
    .to_string();
    let started = Instant::now();
    p.send(&prompt);
    let mut served = 0_u64;
    let mut last_chunk = String::new();
    loop {
        p.line.clear();
        let n = p.stdout.read_until(b'\n', &mut p.line).expect("read");
        assert!(n > 0, "the agent closed its stdout");
        let message: serde_json::Value = serde_json::from_slice(&p.line).expect("a JSON-RPC message");
        match message.get("method").and_then(serde_json::Value::as_str) {
            Some("fs/read_text_file") => {
                // One `write` per answer, as a client writes a message. (`writeln!` of a `Value`
                // on the unbuffered pipe wrote each token by itself: ~32 system calls per answer,
                // each of which could wake the agent for a fragment of a line.)
                let answer =
                    serde_json::json!({"jsonrpc": "2.0", "id": message["id"], "result": {"content": "hello\n"}});
                let mut bytes = serde_json::to_vec(&answer).expect("JSON");
                bytes.push(b'\n');
                let stdin = p.stdin.as_mut().expect("stdin open");
                stdin.write_all(&bytes).expect("write");
                stdin.flush().expect("flush");
                served += 1;
            }
            Some("session/update") => {
                if let Some(text) = message["params"]["update"]["content"]["text"].as_str() {
                    text.clone_into(&mut last_chunk);
                }
            }
            Some(other) => panic!("unexpected agent message {other}"),
            None if message["id"] == 3 => {
                let elapsed = started.elapsed();
                assert!(message.get("error").is_none(), "the prompt failed: {message}");
                assert_eq!(served, config.reads, "reads served");
                assert_eq!(last_chunk, format!("readloop: {}", config.reads), "the turn's last chunk");
                return elapsed;
            }
            None => panic!("an unexpected response {message}"),
        }
    }
}

fn rate(reads: u64, time: Option<Duration>) -> Option<f64> {
    time.map(|t| reads as f64 / t.as_secs_f64())
}

fn cell(rate: Option<f64>) -> String {
    rate.map_or_else(|| "failed".to_owned(), |r| format!("{r:.0}"))
}

/// Runs the benchmark and prints (and writes) the report.
pub fn main(args: impl Iterator<Item = String>) {
    let config = parse(args);
    let load_before = loadavg();
    let levels: [(u64, Placement); LEVELS] =
        [(1, Placement::Free), (1, Placement::TwoCpus), (1, Placement::OneCpu), (config.concurrency, Placement::Free)];
    let names = levels.map(|(parallel, placement)| format!("{parallel} in flight{}", placement.suffix()));
    // results[agent][level]: one time per run.
    let mut results: Vec<[Vec<Duration>; LEVELS]> =
        config.agents.iter().map(|_| std::array::from_fn(|_| Vec::new())).collect();
    for run in 0..config.runs {
        eprintln!("client run {}/{} (load {})", run + 1, config.runs, loadavg());
        // Rotated from run to run, as the main benchmark's agents (see `crate::rotated`).
        for i in rotated(config.agents.len(), run) {
            let (name, command) = &config.agents[i];
            for (level, &(parallel, placement)) in levels.iter().enumerate() {
                let what = format!("{name}: readloop, {}", names[level]);
                if let Some(time) = attempt(&what, || read_loop(command, &config, parallel, placement)).flatten() {
                    eprintln!("  {what}: {:.0}/s", config.reads as f64 / time.as_secs_f64());
                    results[i][level].push(time);
                }
            }
        }
    }
    let rates: Vec<[Option<f64>; LEVELS]> = results
        .iter()
        .map(|times| std::array::from_fn(|level| rate(config.reads, median(times[level].clone()))))
        .collect();
    let find = |name: &str| config.agents.iter().position(|(n, _)| n == name);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "`fs/read_text_file` round trips issued by a turn (`readloop {} PATH P`), answered at once by the \
         driver: one in flight placed freely, on two CPUs (the agent on CPU 1, the driver on CPU 0) and on \
         one CPU (both on CPU 0), then {} in flight placed freely; median of {} runs; {}.\n",
        config.reads,
        config.concurrency,
        config.runs,
        machine()
    );
    let header = names.join(" | ");
    let _ = writeln!(out, "| agent (reads/s) | {header} |");
    let separator = format!("|---|{}", "---:|".repeat(LEVELS));
    let _ = writeln!(out, "{separator}");
    for ((name, _), agent_rates) in config.agents.iter().zip(&rates) {
        let cells: Vec<String> = agent_rates.iter().map(|r| cell(*r)).collect();
        let _ = writeln!(out, "| {name} | {} |", cells.join(" | "));
    }
    if !config.pairs.is_empty() {
        let _ = writeln!(out, "\n| demo against the SDK of its language | {header} |");
        let _ = writeln!(out, "{separator}");
        for (demo, sdk) in &config.pairs {
            let (Some(d), Some(s)) = (find(demo), find(sdk)) else { continue };
            let ratio = |level: usize| match (rates[d][level], rates[s][level]) {
                (Some(a), Some(b)) => format!("{:.2}×", a / b),
                _ => "failed".to_owned(),
            };
            let ratios: Vec<String> = (0..LEVELS).map(ratio).collect();
            let _ = writeln!(out, "| {demo} / {sdk} | {} |", ratios.join(" | "));
        }
    }
    let _ = writeln!(out, "\nLoad average before → after: {load_before} → {}.", loadavg());
    for note in &config.notes {
        let _ = writeln!(out, "{note}");
    }
    println!("{out}");
    if let Some(path) = &config.markdown {
        let doc = std::fs::read_to_string(path).unwrap_or_default();
        let (first, last) = ("<!-- bench-client:begin -->", "<!-- bench-client:end -->");
        let updated = match (doc.find(first), doc.find(last)) {
            (Some(b), Some(e)) if b < e => format!("{}{first}\n{out}{}", &doc[..b], &doc[e..]),
            _ => format!("{doc}\n{first}\n{out}{last}\n"),
        };
        std::fs::write(path, updated).expect("write the markdown report");
    }
}
