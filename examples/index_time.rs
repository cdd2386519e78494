//! Index a run headless and print what the loader found and how long it took.
//!
//! ```text
//! cargo run --release --example index_time -- bench/data/run-1m.jsonl
//! ```
//!
//! Prints one line: `pairs=N failures=N problems=N seconds=S`. Used by
//! `bench/compare.sh` until the `triage summary` subcommand exists.

use std::process::ExitCode;
use std::time::Instant;

use triage::core::index::{OpenOptions, load_run};

fn main() -> ExitCode {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        eprintln!("usage: index_time RUN...");
        return ExitCode::from(2);
    }
    let start = Instant::now();
    match load_run(&paths, &OpenOptions::default()) {
        Ok(index) => {
            println!(
                "pairs={} failures={} problems={} seconds={:.3}",
                index.rows.len(),
                index.failures,
                index.problems.len(),
                start.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}
