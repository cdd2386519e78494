//! Figures for runs and journals that change while open: the cost of a save
//! when two stores share a journal (lock + catch-up + append + fsync) against
//! one store alone, an idle refresh, merging another store's decisions, and
//! how long an appended line takes to reach the index with `-f`.
//!
//! `cargo run --example live_figures` (add `--release` for optimised figures;
//! the save is dominated by fsync either way).

use std::io::Write;
use std::time::{Duration, Instant};
use triage::core::annotations::{AnnotationSource, AnnotationStore, Change};
use triage::core::key::RecordKey;

fn main() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("j.triage.jsonl");
    let mut a = AnnotationStore::open(&path, "a").unwrap();
    let mut b = AnnotationStore::open(&path, "b").unwrap();
    let n = 500u32;
    let t = Instant::now();
    for i in 0..n {
        let s = if i % 2 == 0 { &mut a } else { &mut b };
        let mut k = [0u8; 16];
        k[..4].copy_from_slice(&i.to_le_bytes());
        s.apply(vec![Change {
            key: RecordKey(k),
            case_id: format!("c{i}").into(),
            variant_id: "v".into(),
            category: Some("boundary".into()),
            note: None,
            source: AnnotationSource::Manual,
        }])
        .unwrap();
    }
    let el = t.elapsed();
    println!(
        "alternating saves, two stores, {n} saves: {:?} total, {:?}/save",
        el,
        el / n
    );
    a.refresh().unwrap();
    let t = Instant::now();
    for _ in 0..1000 {
        a.refresh().unwrap();
    }
    println!("idle refresh (nothing new): {:?}/call", t.elapsed() / 1000);
    for i in n..n + 250 {
        let mut k = [0u8; 16];
        k[..4].copy_from_slice(&i.to_le_bytes());
        b.apply(vec![Change {
            key: RecordKey(k),
            case_id: format!("c{i}").into(),
            variant_id: "v".into(),
            category: Some("boundary".into()),
            note: None,
            source: AnnotationSource::Manual,
        }])
        .unwrap();
    }
    let single = {
        let d2 = tempfile::TempDir::new().unwrap();
        let mut s = AnnotationStore::open(&d2.path().join("j"), "s").unwrap();
        let t = Instant::now();
        for i in 0..n {
            let mut k = [0u8; 16];
            k[..4].copy_from_slice(&i.to_le_bytes());
            s.apply(vec![Change {
                key: RecordKey(k),
                case_id: format!("c{i}").into(),
                variant_id: "v".into(),
                category: Some("boundary".into()),
                note: None,
                source: AnnotationSource::Manual,
            }])
            .unwrap();
        }
        t.elapsed() / n
    };
    println!("one store alone, {n} saves: {single:?}/save");
    let t = Instant::now();
    let got = a.refresh().unwrap();
    println!(
        "refresh merging {got} decisions of the other store: {:?}",
        t.elapsed()
    );

    let run = dir.path().join("run.jsonl");
    std::fs::write(&run, "").unwrap();
    let opts = triage::core::index::OpenOptions {
        follow: true,
        ..Default::default()
    };
    let (mut idx, loader) =
        triage::core::index::open_run(&[run.to_string_lossy().to_string()], &opts).unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(&run).unwrap();
    let mut lat = Vec::new();
    for i in 0..20 {
        std::thread::sleep(Duration::from_millis(37));
        let t = Instant::now();
        writeln!(
            f,
            r#"{{"case_id":"c{i}","variant_id":"v","passed":false,"reasons":["x"]}}"#
        )
        .unwrap();
        while idx.rows.len() <= i {
            loader.drain_into(&mut idx);
            std::thread::sleep(Duration::from_millis(1));
        }
        lat.push(t.elapsed());
    }
    lat.sort();
    println!(
        "follow: append to row, 20 lines: median {:?}, max {:?}",
        lat[10], lat[19]
    );
}
