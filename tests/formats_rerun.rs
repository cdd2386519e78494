//! Annotation keys of converted files survive a re-run of the other tool:
//! the fixtures in `tests/fixtures/formats/rerun/` are one promptfoo config
//! and one Inspect task, each run twice by the real tool (`make.sh` there),
//! so every uuid, timestamp, eval id and timing differs, and promptfoo's
//! rows arrive in another order. Decisions made on the first run are found
//! on the second.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::run_triage as triage;
use serde_json::Value;
use triage::core::annotations::{AnnotationSource, AnnotationStore, Change};
use triage::core::formats::{self, Format};
use triage::core::index::{self, OpenOptions, RunIndex};
use triage::core::key::RecordKey;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/formats/rerun")
        .join(name)
}

/// The pairs of a run by (case, variant, repetition), with their keys.
fn keys(idx: &mut RunIndex) -> BTreeMap<(String, String, Option<u32>), RecordKey> {
    let mut out = BTreeMap::new();
    for i in 0..idx.rows.len() as u32 {
        let r = idx.rows[i as usize];
        let ids = (
            idx.str(r.case).to_string(),
            idx.str(r.variant).to_string(),
            idx.repetition(i as usize),
        );
        let key = idx.key_of(i).expect("key");
        assert!(out.insert(ids, key).is_none(), "two pairs with one id");
    }
    out
}

fn load(name: &str) -> RunIndex {
    index::load_run(
        &[fixture(name).to_string_lossy().to_string()],
        &OpenOptions::default(),
    )
    .expect("open")
}

/// The tool's own ids of a run's rows (promptfoo's row `id`, Inspect's
/// sample `uuid`), from the raw rows its converted records keep: what
/// differs between two runs, so that the test is not of two copies.
fn volatile(name: &str) -> Vec<String> {
    let format = if name.ends_with(".eval") {
        Format::Inspect
    } else {
        Format::Promptfoo
    };
    let mut out = Vec::new();
    formats::convert(&fixture(name), format, &mut out).expect("convert");
    String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("JSON");
            let raw = &v["origin"]["variant"];
            raw["uuid"]
                .as_str()
                .or(raw["id"].as_str())
                .expect("an id")
                .to_string()
        })
        .collect()
}

/// The order promptfoo's rows completed in: (promptIdx, testIdx).
fn completion_order(name: &str) -> Vec<(u64, u64)> {
    let v: Value =
        serde_json::from_slice(&std::fs::read(fixture(name)).expect("fixture")).expect("JSON");
    v["results"]["results"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["promptIdx"].as_u64().expect("promptIdx"),
                r["testIdx"].as_u64().expect("testIdx"),
            )
        })
        .collect()
}

#[test]
fn a_re_run_of_the_same_config_gives_the_same_keys() {
    for (a, b, pairs) in [
        ("promptfoo-1.json", "promptfoo-2.json", 6),
        ("promptfoo-1.jsonl", "promptfoo-2.jsonl", 6),
        ("promptfoo-1.json", "promptfoo-2.jsonl", 6),
        ("inspect-1.eval", "inspect-2.eval", 10),
    ] {
        let (va, vb) = (volatile(a), volatile(b));
        assert!(
            va.iter().zip(&vb).all(|(x, y)| x != y),
            "{a} and {b} share ids: {va:?} {vb:?}"
        );
        let ka = keys(&mut load(a));
        let kb = keys(&mut load(b));
        assert_eq!(ka.len(), pairs, "{a}");
        assert_eq!(ka, kb, "{a} vs {b}");
    }
    // promptfoo's rows completed in another order on the second run.
    assert_ne!(
        completion_order("promptfoo-1.json"),
        completion_order("promptfoo-2.json")
    );
}

#[test]
fn decisions_made_on_one_run_are_found_on_the_other() {
    for (a, b) in [
        ("promptfoo-1.json", "promptfoo-2.json"),
        ("inspect-1.eval", "inspect-2.eval"),
    ] {
        let dir = tempfile::tempdir().expect("temp");
        let journal = dir.path().join("decisions.triage.jsonl");
        // Classify every failure of the first run, as the viewer would.
        let mut idx = load(a);
        let mut store = AnnotationStore::open(&journal, "ann").expect("journal");
        let mut changes = Vec::new();
        for i in 0..idx.rows.len() as u32 {
            let r = idx.rows[i as usize];
            if !r.status().is_failure() {
                continue;
            }
            changes.push(Change {
                key: idx.key_of(i).expect("key"),
                case_id: idx.str(r.case).into(),
                variant_id: idx.str(r.variant).into(),
                category: Some("model-error".into()),
                note: Some(format!("seen on {a}")),
                source: AnnotationSource::Manual,
            });
        }
        assert!(!changes.is_empty(), "{a} has failures");
        let decided = changes.len();
        store.apply(changes).expect("saved");
        drop(store);

        let journal = journal.to_str().expect("path");
        for run in [a, b] {
            let run = fixture(run);
            let run = run.to_str().expect("path");
            let (code, out, err) = triage(&[
                "check",
                run,
                "--annotations",
                journal,
                "--max-unclassified",
                "0",
            ]);
            assert_eq!(code, Some(0), "{run}: {out}{err}");
            let (code, out, err) =
                triage(&["summary", run, "--annotations", journal, "--format", "json"]);
            assert_eq!(code, Some(0), "{err}");
            let s: Value = serde_json::from_str(&out).expect("JSON");
            assert_eq!(s["classified"], decided, "{run}");
            assert_eq!(s["failures"], decided, "{run}");
        }
    }
}
