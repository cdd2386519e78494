//! Time the loader's per-line stages on one thread, each over every line of
//! a run, and print the best of a few rounds (in seconds):
//!
//! ```text
//! cargo run --release --example stages -- bench/data/run-100k.jsonl [ROUNDS] [STAGE...]
//! ```
//!
//! Stages: `utf8` (the standard library's validation), `simdutf8` (the
//! loader's validation), `scan` (the fast path's structural scan
//! alone), `parse` (the whole fast-path read, with the state diff), `row`
//! (the row as the loader keeps it: read, derivation, suggestion, summary),
//! and `serde` (serde_json skipping the line, `IgnoredAny`, for scale).
//! The file is read into memory first; nothing here touches the disk.

use std::cell::RefCell;
use std::time::Instant;

use triage::core::load::{fast, line};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: stages RUN [ROUNDS] [STAGE...]");
        std::process::exit(2);
    };
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(3);
    let mut stages: Vec<String> = args.collect();
    if stages.is_empty() {
        stages = ["utf8", "simdutf8", "scan", "parse", "row", "serde"]
            .map(String::from)
            .to_vec();
    }
    let data = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2);
    });
    let lines: Vec<&[u8]> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let texts: Vec<&str> = lines
        .iter()
        .filter_map(|l| std::str::from_utf8(l).ok())
        .collect();
    // One reader for the scan and parse stages, as a loader thread has.
    let reader = RefCell::new(fast::LineReader::new());
    for stage in &stages {
        let one: &dyn Fn() -> usize = match stage.as_str() {
            "utf8" => &|| {
                lines
                    .iter()
                    .filter(|l| std::str::from_utf8(l).is_ok())
                    .count()
            },
            "simdutf8" => &|| {
                lines
                    .iter()
                    .filter(|l| simdutf8::basic::from_utf8(l).is_ok())
                    .count()
            },
            "scan" => &|| {
                texts
                    .iter()
                    .filter(|l| reader.borrow_mut().scan_only(l))
                    .count()
            },
            "parse" => &|| {
                texts
                    .iter()
                    .filter(|l| reader.borrow_mut().parse(l).is_some())
                    .count()
            },
            "row" => &|| texts.iter().filter(|l| line::fast_row_of(l)).count(),
            "serde" => &|| {
                texts
                    .iter()
                    .filter(|l| serde_json::from_str::<serde::de::IgnoredAny>(l).is_ok())
                    .count()
            },
            other => {
                eprintln!("unknown stage {other}");
                std::process::exit(2);
            }
        };
        let mut best = f64::INFINITY;
        let mut n = 0;
        for _ in 0..rounds {
            let t = Instant::now();
            n = one();
            best = best.min(t.elapsed().as_secs_f64());
        }
        let per = best / lines.len().max(1) as f64 * 1e6;
        println!(
            "{stage:<6} {best:>7.3} s  {per:>6.2} µs/line  ({n} of {} lines)",
            lines.len()
        );
    }
}
