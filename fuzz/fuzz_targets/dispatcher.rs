//! The request dispatcher on arbitrary bytes: the input is written as it is (newline-delimited
//! JSON-RPC, seeded from the core tests' transcripts) to an agent with every host part present and
//! compaction on, over an in-memory pipe, then the client hangs up.
//!
//! Invariants (`chaos::Report::violations`): no panic anywhere (libFuzzer aborts on any panic, even
//! one the connection would catch); no hang (a paused-clock guard); serve returns `Ok`; only JSON
//! comes out; every request with an id is answered exactly once per time it was sent; no response
//! to an id never sent; no live session and exactly one host shutdown per session afterwards.

#![no_main]

use acp_facade_fuzz::chaos::{WireSetup, run_raw};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let setup = WireSetup::default();
    run_raw(&setup, input, 997).assert_ok(setup.max_message_size);
});
