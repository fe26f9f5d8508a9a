//! The acp-facade demo agent (work in progress).

fn main() {}
