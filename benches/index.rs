//! Indexing a generated 50k-pair run (about 135 MB), fast path and slow path.
//!
//! `cargo bench --bench index`. The 1M-pair figures come from `bench/compare.sh`.

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use triage::core::index::{OpenOptions, ParseMode, load_run_with};

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

criterion_group!(benches, index);
criterion_main!(benches);
