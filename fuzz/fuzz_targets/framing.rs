//! The framing reader (`rpc::framing::LineReader`) on arbitrary bytes, read in arbitrary pieces
//! (with `Pending` answers in between), under small limits.
//!
//! Input: `[max, size_a, size_b, pending_mask]` then the bytes to frame. Invariants: no panic;
//! every line within the limit; every `Oversize` longer than the limit; the frames equal the
//! reference model's (`runner/tests/common/framing_model.rs`); EOF terminates the reading.

#![no_main]

use acp_facade_fuzz::framing_model::check_framing;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let (header, data) = input.split_at(input.len().min(4));
    let byte = |i: usize| header.get(i).copied().unwrap_or(0);
    let max = usize::from(byte(0) % 64);
    let sizes = vec![usize::from(byte(1) % 32) + 1, usize::from(byte(2)) + 1];
    let mask = byte(3);
    let pending = (0..4).map(|bit| mask & (1 << bit) != 0).collect();
    check_framing(data, max, sizes, pending);
});
