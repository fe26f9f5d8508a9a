//! Back-pressure through the whole stack: a client that stops reading while the demo streams
//! `stream 1000000` stalls the agent (the runner's hub, the connection's outgoing queue and the
//! stdout pipe are all bounded) without its memory growing; once the client reads again, every
//! one of the 1,000,000 chunks arrives, in order, then `end_turn`.

mod common;

use std::time::Duration;

use common::{Demo, STEP, is_response_to};
use serde_json::json;

const CHUNKS: u64 = 1_000_000;

/// The memory the agent may add over its idle RSS while the client is not reading.
///
/// Measured (debug build): idle ≈ 11 MiB after `initialize`; stalled ≈ 13 MiB, i.e. about
/// +2 MiB (the bounded queues, the runtime's buffers and the chunks streamed so far). With an
/// unbounded queue anywhere the debug producer would keep going at tens of thousands of chunks
/// a second, each queued chunk costing a few hundred bytes, and cross this bound well within
/// the sampling window. 16 MiB leaves a wide margin for allocator and build differences.
const STALLED_GROWTH_BOUND_KIB: u64 = 16 * 1024;

/// `VmRSS` of `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/<pid>/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/<pid>/status")
}

/// User plus system CPU time of `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc/<pid>/stat");
    // Fields after the command name (which may contain spaces) start at field 3 (state).
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: u64 = fields[11].parse().expect("utime");
    let stime: u64 = fields[12].parse().expect("stime");
    utime + stime
}

/// Waits until the agent stops using CPU (its writes are blocked on the full pipe): the CPU
/// time is unchanged over several consecutive samples.
fn wait_until_stalled(pid: u32) {
    let deadline = std::time::Instant::now() + STEP;
    let mut last = cpu_ticks(pid);
    let mut steady = 0;
    while steady < 5 {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never stalled while the client was not reading (RSS {} KiB): no back-pressure",
            rss_kib(pid)
        );
        std::thread::sleep(Duration::from_millis(100));
        let now = cpu_ticks(pid);
        steady = if now == last { steady + 1 } else { 0 };
        last = now;
    }
}

#[test]
#[allow(clippy::print_stderr, reason = "the measured memory is reported for the record")]
fn a_client_that_stops_reading_stalls_the_agent_without_growing_its_memory() {
    let mut demo = Demo::start(&["--store", ":memory:"]);
    demo.initialize();
    let pid = demo.pid();
    let idle = rss_kib(pid);
    let sid = demo.new_session();
    let prompt = demo.prompt(&sid, &format!("stream {CHUNKS}"));

    // The client reads nothing now: the reader's small queue and then the pipe fill up.
    wait_until_stalled(pid);
    let mut peak = 0;
    for _ in 0..20 {
        peak = peak.max(rss_kib(pid));
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("agent RSS: idle {idle} KiB, stalled peak {peak} KiB (+{} KiB)", peak.saturating_sub(idle));
    assert!(
        peak <= idle + STALLED_GROWTH_BOUND_KIB,
        "the agent grew from {idle} KiB to {peak} KiB while the client was not reading"
    );
    // Still stalled after the sampling: nothing was produced meanwhile.
    wait_until_stalled(pid);

    // Read again: every chunk, in order, then the usage and `end_turn`.
    let mut next = 1u64;
    // Once one chunk was schema-validated, the others must be the same line but for the text.
    let mut template: Option<(String, String)> = None;
    let mut after_chunks = Vec::new();
    let response = loop {
        let line = demo.next_line_raw().expect("the agent closed stdout mid-stream");
        if let Some((prefix, suffix)) = &template {
            let text = format!("t{next} ");
            if line.len() == prefix.len() + text.len() + suffix.len()
                && line.starts_with(prefix.as_str())
                && line.ends_with(suffix.as_str())
                && line[prefix.len()..prefix.len() + text.len()] == text
            {
                next += 1;
                continue;
            }
        }
        let message = demo.accept_line(&line);
        if is_response_to(&message, &prompt) {
            break message;
        }
        let update = &message["params"]["update"];
        if update["sessionUpdate"] == "agent_message_chunk" {
            let text = format!("t{next} ");
            assert_eq!(update["content"]["text"], text.as_str(), "chunk {next} out of order: {line}");
            let marker = format!("\"text\":\"{text}\"");
            let at = line.find(&marker).expect("the chunk's text field") + "\"text\":\"".len();
            template = Some((line[..at].to_owned(), line[at + text.len()..].to_owned()));
            next += 1;
        } else if next > 1 {
            after_chunks.push(update["sessionUpdate"].as_str().unwrap_or_default().to_owned());
        }
    };
    assert_eq!(next - 1, CHUNKS, "every chunk arrived");
    assert_eq!(response["result"], json!({"stopReason": "end_turn"}), "{response}");
    assert_eq!(after_chunks, ["usage_update"], "only the usage follows the chunks");
    let final_rss = rss_kib(pid);
    eprintln!("agent RSS after the stream: {final_rss} KiB");

    // The agent is still responsive.
    let list = demo.call_ok("session/list", json!({}));
    assert_eq!(list["sessions"].as_array().map(Vec::len), Some(1), "{list}");
}
