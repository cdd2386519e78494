//! Indexing a generated 50k-pair run (about 135 MB), fast path and slow path.
//!
//! `cargo bench --bench index`. The 1M-pair figures come from `bench/compare.sh`.
//! The per-line group reads `bench/data/run-10k.jsonl` (or the file named by
//! `TRIAGE_BENCH_LINES`), else the first 10,000 lines of the generated run.

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use triage::core::index::{OpenOptions, load_run_with};
use triage::core::load::line::ParseMode;

mod common;

fn index(c: &mut Criterion) {
    let path = common::generated_run(50_000);
    let p = path.to_string_lossy().to_string();
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let mut g = c.benchmark_group("index");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(30))
        .throughput(Throughput::Bytes(bytes));
    g.bench_function("50k pairs", |b| {
        b.iter(|| {
            let idx = load_run_with(
                std::slice::from_ref(&p),
                &OpenOptions::default(),
                ParseMode::Fast,
            )
            .expect("load");
            assert_eq!(idx.rows.len(), 50_000);
        })
    });
    g.finish();

    // The first 2,000 lines through each path, for the ratio between them.
    let text = std::fs::read_to_string(&path).expect("read");
    let head: String = text.lines().take(2000).flat_map(|l| [l, "\n"]).collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let small = dir.path().join("head.jsonl");
    std::fs::write(&small, head).expect("write");
    let small = small.to_string_lossy().to_string();
    let mut g = c.benchmark_group("index 2k pairs");
    g.sample_size(10);
    for (name, mode) in [
        ("fast path", ParseMode::Fast),
        ("slow path", ParseMode::Slow),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                load_run_with(std::slice::from_ref(&small), &OpenOptions::default(), mode)
                    .expect("load")
            })
        });
    }
    g.finish();
}

/// The fast path's work per line, without reading, splitting or interning:
/// the scan alone, and the scan with the derivation and the suggestion.
fn per_line(c: &mut Criterion) {
    let path = std::env::var_os("TRIAGE_BENCH_LINES")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench/data/run-10k.jsonl")
        });
    let path = if path.exists() {
        path
    } else {
        common::generated_run(50_000)
    };
    let text = std::fs::read_to_string(&path).expect("read");
    let lines: Vec<&str> = text.lines().take(10_000).collect();
    let bytes: usize = lines.iter().map(|l| l.len()).sum();
    let mut g = c.benchmark_group("per line");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Bytes(bytes as u64));
    let mut reader = triage::core::load::fast::LineReader::new();
    g.bench_function("parse_fast, 10k lines", |b| {
        b.iter(|| lines.iter().filter(|l| reader.parse(l).is_some()).count())
    });
    g.bench_function("parse_fast + derive + suggest, 10k lines", |b| {
        b.iter(|| {
            let mut n = 0;
            for l in &lines {
                if let Some(f) = reader.parse(l) {
                    let d = triage::core::derive::derive_with(&f.record, f.diff_entries());
                    n += usize::from(
                        triage::core::suggest::suggest_category(&f.record, &d).is_some(),
                    );
                }
            }
            n
        })
    });
    g.finish();
}

criterion_group!(benches, index, per_line);
criterion_main!(benches);
