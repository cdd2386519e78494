//! The line parser and record mapper: any bytes as one line of a run file.
//! The slow path must never panic; wherever the fast path accepts a line,
//! it must read it exactly as the slow path does.
#![no_main]

use libfuzzer_sys::fuzz_target;
use triage::core::index::line_both_ways;

fuzz_target!(|data: &[u8]| {
    // A small cap too, so the too-long branch is reached.
    for max in [1 << 20, 64] {
        let (fast, slow) = line_both_ways(data, max);
        if let Some(fast) = fast {
            assert_eq!(fast, slow, "fast and slow paths disagree");
        }
    }
});
