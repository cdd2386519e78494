//! End to end: `triage NEW --baseline OLD`, the real binary in a
//! pseudo-terminal, on copies of the comparison sample in a temp dir.
//! Synchronised by waiting for screen text, never by fixed sleeps.

mod common;

use std::path::Path;

use common::Tui;
use serde_json::Value;

fn copy_samples(dir: &Path) {
    for f in [
        "compare-before.jsonl",
        "compare-after.jsonl",
        "compare-before.jsonl.triage.jsonl",
    ] {
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("sample-runs")
                .join(f),
            dir.join(f),
        )
        .expect("copy a sample");
    }
}

#[test]
fn the_viewer_compares_filters_by_change_and_carries_decisions() {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_samples(dir.path());
    let mut t = Tui::spawn(
        &[
            "compare-after.jsonl",
            "--baseline",
            "compare-before.jsonl",
            "--reviewer",
            "tester",
        ],
        140,
        40,
        dir.path(),
        &[],
    );
    t.wait_for("vs compare-before.jsonl (2 new, 2 fixed)");
    t.wait_for("CHANGE");
    t.wait_for("⇠missing-evidence");
    t.wait_for("~boundary (stale)");

    // change: in the query bar.
    t.send("/change:new_failures\r");
    t.wait_for(" 1/2 ");
    t.send("/\x15\r");
    t.wait_for(" 1/8 ");

    // B asks, naming who, when and from which run; n leaves the journal alone.
    t.send("B");
    t.wait_for("Copy 2 carried decisions made by ana on 2026-11-28");
    t.send("n");
    t.wait_gone("Copy 2 carried decisions");
    assert!(!dir.path().join("compare-after.jsonl.triage.jsonl").exists());
    t.send("B");
    t.wait_for("Copy 2 carried decisions");
    t.send("y");
    t.wait_for("saved: 2 decisions carried from the baseline");
    t.wait_gone("⇠missing-evidence");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);

    let text = std::fs::read_to_string(dir.path().join("compare-after.jsonl.triage.jsonl"))
        .expect("the journal");
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(events.len(), 2);
    for e in &events {
        assert_eq!(e["reviewer"], "tester");
        assert_eq!(e["carried_from"]["reviewer"], "ana");
        assert_eq!(e["carried_from"]["run"], "compare-before.jsonl");
    }
}

#[test]
fn a_baseline_that_does_not_exist_is_a_one_line_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_samples(dir.path());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_triage"))
        .args(["compare-after.jsonl", "--baseline", "missing.jsonl"])
        .current_dir(dir.path())
        .output()
        .expect("run triage");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("missing.jsonl"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
