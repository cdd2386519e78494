//! What a journal costs in memory once read: a journal of N pairs decided
//! by one reviewer, and of N/2 pairs decided by two (the same number of
//! decisions), written to a temp dir and read as `triage check` reads it
//! ([`AnnotationStore::read`]). For each it prints the heap the store holds
//! (counted by a global allocator, so the figure does not depend on the
//! machine's load), its peak while reading, and the time.
//!
//! `cargo run --release --example journal_memory [DECISIONS]` (400,000 by
//! default).

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use triage::core::annotations::AnnotationStore;

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let now = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size
                    - layout.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const CATEGORIES: [&str; 5] = [
    "boundary",
    "distractor",
    "missing-evidence",
    "ambiguous-contract",
    "service-error",
];

/// A journal of `decisions` events: `reviewers` decide each of
/// `decisions / reviewers` pairs, disagreeing on every seventh.
fn write_journal(path: &std::path::Path, decisions: usize, reviewers: usize) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("journal"));
    let pairs = decisions / reviewers;
    for r in 0..reviewers {
        for i in 0..pairs {
            let mut key = [0u8; 16];
            key[..8].copy_from_slice(&(i as u64).to_le_bytes());
            key[8] = 0x5a;
            let key: String = key.iter().map(|b| format!("{b:02x}")).collect();
            let cat = CATEGORIES[(i + usize::from(r > 0 && i % 7 == 0)) % CATEGORIES.len()];
            writeln!(
                out,
                r#"{{"v":1,"key":"{key}","case_id":"case-{:06}","variant_id":"variant-{}","category":"{cat}","note":null,"reviewer":"reviewer-{r}","at":"2026-12-01T10:{:02}:{:02}Z","source":"manual","prev":null,"n":"{:016x}"}}"#,
                i / 8,
                i % 8,
                (i / 60) % 60,
                i % 60,
                (r * pairs + i + 1) as u64 * 0x9e37_79b9
            )
            .expect("write");
        }
    }
    out.flush().expect("flush");
}

fn main() {
    let decisions: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.replace([',', '_'], "").parse().ok())
        .unwrap_or(400_000);
    let dir = tempfile::TempDir::new().expect("temp dir");
    println!("{decisions} decisions");
    println!("reviewers  pairs      held by the store  per decision  peak while reading  time");
    for reviewers in [1, 2] {
        let path = dir.path().join(format!("r{reviewers}.triage.jsonl"));
        write_journal(&path, decisions, reviewers);
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let t = Instant::now();
        let store = AnnotationStore::read(&path).expect("read the journal");
        let took = t.elapsed();
        let held = LIVE.load(Ordering::Relaxed).saturating_sub(before);
        let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
        assert_eq!(store.all().len(), decisions / reviewers);
        println!(
            "{reviewers:>9}  {:>7}  {:>14.1} MB  {:>10} B  {:>15.1} MB  {:.2} s",
            decisions / reviewers,
            held as f64 / 1e6,
            held / decisions,
            peak as f64 / 1e6,
            took.as_secs_f64()
        );
        drop(store);
    }
}
