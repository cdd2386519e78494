//! The line parser and record mapper: any bytes as one line of a run file,
//! then, when they hold several lines, each line in turn on the same thread,
//! as the loader reads a case's lines (a state repeated from the line before
//! is recalled, not scanned again). The slow path must never panic; wherever
//! the fast path accepts a line, it must read it exactly as the slow path
//! does.
#![no_main]

use libfuzzer_sys::fuzz_target;
use triage::core::load::line::{forget_states, line_both_ways};

fn check(line: &[u8], max: usize) {
    let (fast, slow) = line_both_ways(line, max);
    if let Some(fast) = fast {
        assert_eq!(fast, slow, "fast and slow paths disagree");
    }
}

fuzz_target!(|data: &[u8]| {
    // Each input reproduces alone: nothing is kept from the one before.
    forget_states();
    // A small cap too, so the too-long branch is reached.
    for max in [1 << 20, 64] {
        check(data, max);
    }
    if data.contains(&b'\n') {
        forget_states();
        for line in data.split(|&b| b == b'\n') {
            check(line, 1 << 20);
        }
    }
});
