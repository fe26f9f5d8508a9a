//! The goals of the Python and Node bindings against their SDKs, checked against rows of the same run:
//! each demo's agent CPU per echo turn (placed freely, on two CPUs and on one CPU) at most its
//! official SDK's, each binding's host-callback round trips (one at a time in the same three
//! placements, and in flight) at least its SDK's, and the demos' start-up to the `initialize`
//! response under a fixed bound (the bare interpreters' floors shown beside it). Rows are found by the names `scripts/bench` gives them.

use std::fmt::Write as _;
use std::time::Duration;

use crate::{AgentSummary, CallbackSummary};

/// Each callback host's medians, by row name.
pub(crate) type CallbackMedians = [(String, Option<CallbackSummary>)];

/// The bindings' start-up bounds.
const PYTHON_DEMO_STARTUP: Duration = Duration::from_millis(40);
const NODE_DEMO_STARTUP: Duration = Duration::from_millis(80);
/// The start-up-only row of the Node demo run with `NODE_EXTRA_CA_CERTS` removed from its environment.
const NODE_DEMO_WITHOUT_EXTRA_CERTS: &str = "node demo, NODE_EXTRA_CA_CERTS unset";
/// The bare ES-module floor run with `NODE_EXTRA_CA_CERTS` removed from its environment.
const NODE_FLOOR_WITHOUT_EXTRA_CERTS: &str = "node (ES module), NODE_EXTRA_CA_CERTS unset";

/// The goal table (header only when none of its rows were measured).
pub(crate) fn table(
    summaries: &[(String, Option<AgentSummary>)],
    callbacks: &CallbackMedians,
    floors: &[(String, Option<Duration>)],
) -> String {
    let agent = |name: &str| summaries.iter().find(|(n, _)| n == name).and_then(|(_, s)| s.as_ref());
    let host = |name: &str| callbacks.iter().find(|(n, _)| n == name).and_then(|(_, m)| *m);
    let floor = |name: &str| floors.iter().find(|(n, _)| n == name).and_then(|(_, d)| *d);
    let verdict = |ok: bool| if ok { "met" } else { "**not met**" };
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mut out = String::from("| goal | measured | |\n|---|---:|---|\n");

    for (lang, demo, sdk, sdk_label) in
        [("Python", "python demo", "python sdk", "Python SDK"), ("Node", "node demo", "ts sdk", "TS SDK")]
    {
        let (Some(ours), Some(theirs)) = (agent(demo), agent(sdk)) else { continue };
        let across = ours.cpu.as_secs_f64() / theirs.cpu.as_secs_f64();
        let _ = writeln!(
            out,
            "| {lang} demo echo CPU/turn ≤ the {sdk_label}'s, placed freely | {:.1} µs vs {:.1} µs: {across:.2}× | {} |",
            us(ours.cpu),
            us(theirs.cpu),
            verdict(across <= 1.0)
        );
        for (placement, a, b) in
            [("on two CPUs", ours.cpu_two, theirs.cpu_two), ("on one CPU", ours.cpu_one, theirs.cpu_one)]
        {
            let (Some(a), Some(b)) = (a, b) else { continue };
            let x = a.as_secs_f64() / b.as_secs_f64();
            let _ = writeln!(
                out,
                "| {lang} demo echo CPU/turn ≤ the {sdk_label}'s, {placement} | {:.1} µs vs {:.1} µs: {x:.2}× | {} |",
                us(a),
                us(b),
                verdict(x <= 1.0)
            );
        }
    }
    for (lang, ours, sdk, sdk_label) in
        [("Python", "python host", "python sdk", "Python SDK"), ("Node", "node host", "ts sdk", "TS SDK")]
    {
        let (Some(ours), Some(theirs)) = (host(ours), host(sdk)) else { continue };
        // Same request count on both sides: the rate ratio is the inverse duration ratio.
        for (what, a, b) in [
            ("one at a time, placed freely", Some(ours.sequential), Some(theirs.sequential)),
            ("one at a time, on two CPUs", ours.sequential_two_cpus, theirs.sequential_two_cpus),
            ("one at a time, on one CPU", ours.sequential_one_cpu, theirs.sequential_one_cpu),
            ("in flight", Some(ours.concurrent), Some(theirs.concurrent)),
        ] {
            let (Some(a), Some(b)) = (a, b) else { continue };
            let x = b.as_secs_f64() / a.as_secs_f64();
            let _ = writeln!(
                out,
                "| {lang} host-callback round trips/s ≥ the {sdk_label}'s, {what} | {x:.2}× | {} |",
                verdict(x >= 1.0)
            );
        }
    }
    for (lang, demo, bound, floor_row) in [
        ("Python", "python demo", PYTHON_DEMO_STARTUP, "python + import asyncio"),
        ("Node", "node demo", NODE_DEMO_STARTUP, "node (ES module)"),
    ] {
        let Some(ours) = agent(demo) else { continue };
        let context = floor(floor_row)
            .map_or_else(String::new, |f| format!(" (floor `{floor_row}`: {:.1} ms)", f.as_secs_f64() * 1e3));
        let _ = writeln!(
            out,
            "| {lang} demo start-up ≤ {} ms | {:.1} ms{context} | {} |",
            bound.as_millis(),
            ours.startup.as_secs_f64() * 1e3,
            verdict(ours.startup <= bound)
        );
    }
    // Start-up-only rows that `scripts/bench` adds when the machine's environment sets
    // NODE_EXTRA_CA_CERTS: Node then parses that certificate file at every start, before any
    // JavaScript runs (about 30 ms of CPU here), which an editor's environment usually does not.
    if let Some(ours) = floor(NODE_DEMO_WITHOUT_EXTRA_CERTS) {
        let context = floor(NODE_FLOOR_WITHOUT_EXTRA_CERTS).map_or_else(String::new, |f| {
            format!(" (floor `{NODE_FLOOR_WITHOUT_EXTRA_CERTS}`: {:.1} ms)", f.as_secs_f64() * 1e3)
        });
        let _ = writeln!(
            out,
            "| Node demo start-up ≤ {} ms, `NODE_EXTRA_CA_CERTS` unset | {:.1} ms{context} | {} |",
            NODE_DEMO_STARTUP.as_millis(),
            ours.as_secs_f64() * 1e3,
            verdict(ours <= NODE_DEMO_STARTUP)
        );
    }
    out
}
