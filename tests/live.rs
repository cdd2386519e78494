//! Runs and journals that change while triage has them open, end to end.
//!
//! Two real triages classify in the same run and nothing is lost; `-f`
//! shows lines appended to a run (a line being written appears once its
//! newline lands, without being reported as cut off); a run truncated or
//! replaced on disk is reported and `R` reloads it with its annotations.
//! Synchronisation is by waiting for screen text, never by fixed sleeps,
//! except where a test checks that something does *not* appear.

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::Tui;
use serde_json::Value;

const FIRST_CASE: &str = "checkout-outage-001";
const FIRST_VARIANT: &str = "irrelevant-ui-metadata";
const SECOND_VARIANT: &str = "remove-scope-evidence";

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-runs/support-urgency.jsonl")
}

fn sample_lines() -> Vec<String> {
    std::fs::read_to_string(sample())
        .expect("read the sample")
        .lines()
        .map(str::to_string)
        .collect()
}

fn open(dir: &Path, extra: &[&str], reviewer: &str) -> Tui {
    let mut args = vec!["run.jsonl", "--reviewer", reviewer];
    args.extend_from_slice(extra);
    Tui::spawn(&args, 200, 40, dir, &[])
}

/// The journal replayed, last event per key: (case, variant) → (category, reviewer).
fn decisions(dir: &Path) -> HashMap<(String, String), (String, String)> {
    decisions_by_reviewer(dir)
        .into_iter()
        .map(|((c, v, who), cat)| ((c, v), (cat, who)))
        .collect()
}

/// Each reviewer's latest category per pair, read straight from the
/// journal (the last line per key and reviewer wins), without triage's code.
fn decisions_by_reviewer(dir: &Path) -> HashMap<(String, String, String), String> {
    let text = std::fs::read_to_string(dir.join("run.jsonl.triage.jsonl")).expect("journal");
    let mut by_key: HashMap<(String, String), Value> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let e: Value = serde_json::from_str(line)
            .unwrap_or_else(|err| panic!("journal line {} is not JSON ({err}): {line}", i + 1));
        by_key.insert(
            (
                e["key"].as_str().expect("key").to_string(),
                e["reviewer"].as_str().unwrap_or_default().to_string(),
            ),
            e,
        );
    }
    by_key
        .into_values()
        .filter(|e| !e["category"].is_null())
        .map(|e| {
            (
                (
                    e["case_id"].as_str().unwrap_or_default().to_string(),
                    e["variant_id"].as_str().unwrap_or_default().to_string(),
                    e["reviewer"].as_str().unwrap_or_default().to_string(),
                ),
                e["category"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn pair(variant: &str) -> (String, String) {
    (FIRST_CASE.to_string(), variant.to_string())
}

#[test]
fn two_instances_classify_in_one_run_and_nothing_is_lost() {
    let dir = tempfile::TempDir::new().unwrap();
    std::fs::copy(sample(), dir.path().join("run.jsonl")).unwrap();
    let mut ann = open(dir.path(), &[], "ann");
    ann.wait_for("classified 0/29");
    let mut bob = open(dir.path(), &[], "bob");
    bob.wait_for("classified 0/29");
    assert!(!bob.screen().contains("READ-ONLY"), "{}", bob.screen());

    // Different pairs: each sees the other's decision arrive.
    ann.send("5");
    ann.wait_for("saved: classified as boundary");
    bob.wait_for("classified 1/29");
    bob.wait_for("1 decision from another triage on this run arrived");
    bob.send("j");
    bob.wait_for(&format!("{FIRST_CASE} / {SECOND_VARIANT}"));
    bob.send("2");
    bob.wait_for("saved: classified as distractor");
    bob.wait_for("classified 2/29");
    ann.wait_for("classified 2/29");

    // The same pair in both: each reviewer's decision stays theirs, in both
    // and on disk, and the pair, disagreed on, has no resolved category.
    ann.send("g");
    ann.wait_for(&format!("{FIRST_CASE} / {FIRST_VARIANT}"));
    ann.send("4");
    ann.wait_for("saved: classified as conflicting-evidence");
    bob.wait_for("1 decision from another triage on this run arrived");
    bob.send("g");
    bob.wait_for(&format!("{FIRST_CASE} / {FIRST_VARIANT}"));
    bob.send("5");
    bob.wait_for("saved: classified as boundary");
    ann.wait_for("1 decision from another triage on this run arrived");
    ann.wait_for("classified 1/29");
    ann.wait_for("≠ disagree");
    bob.wait_for("classified 1/29");

    ann.send("q");
    assert_eq!(ann.wait_exit(), 0);
    bob.send("q");
    assert_eq!(bob.wait_exit(), 0);

    let got = decisions_by_reviewer(dir.path());
    let at = |variant: &str, who: &str| {
        let (c, v) = pair(variant);
        got.get(&(c, v, who.to_string())).cloned()
    };
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(
        at(FIRST_VARIANT, "ann").as_deref(),
        Some("conflicting-evidence")
    );
    assert_eq!(at(FIRST_VARIANT, "bob").as_deref(), Some("boundary"));
    assert_eq!(at(SECOND_VARIANT, "bob").as_deref(), Some("distractor"));
    // Both quit and compacted: one event per reviewer and pair, none lost.
    let text = std::fs::read_to_string(dir.path().join("run.jsonl.triage.jsonl")).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
}

/// A passing pair of the sample with new ids, so it is easy to spot.
fn renamed(line: &str, case: &str) -> String {
    let mut v: Value = serde_json::from_str(line).unwrap();
    v["case_id"] = Value::String(case.to_string());
    serde_json::to_string(&v).unwrap()
}

#[test]
fn follow_shows_appended_lines_and_waits_for_a_line_being_written() {
    let dir = tempfile::TempDir::new().unwrap();
    let lines = sample_lines();
    let run = dir.path().join("run.jsonl");
    std::fs::write(&run, format!("{}\n{}\n", lines[0], lines[1])).unwrap();
    let mut t = open(dir.path(), &["-f"], "ann");
    t.wait_for("2 pairs");
    t.wait_for("following");
    // Every pair, not only failures.
    t.send("a");
    t.wait_for("showing all pairs");

    let late = renamed(&lines[2], "late-arrival-777");
    let (head, tail) = late.split_at(late.len() / 2);
    let mut f = std::fs::OpenOptions::new().append(true).open(&run).unwrap();
    write!(f, "{}\n{head}", lines[3]).unwrap();
    f.sync_all().unwrap();
    t.wait_for("3 pairs");
    // The half-written line is neither a pair nor a problem while it is written.
    std::thread::sleep(Duration::from_millis(800));
    let screen = t.screen();
    assert!(screen.contains("3 pairs"), "{screen}");
    assert!(!screen.contains("bad line"), "{screen}");
    assert!(!screen.contains("late-arrival-777"), "{screen}");

    writeln!(f, "{tail}").unwrap();
    f.sync_all().unwrap();
    t.wait_for("4 pairs");
    t.wait_for("late-arrival-777");
    assert!(!t.screen().contains("bad line"), "{}", t.screen());

    // A bad line that is finished is reported as usual.
    writeln!(f, "{{\"case_id\": oops").unwrap();
    f.sync_all().unwrap();
    t.wait_for("1 bad line");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
}

#[test]
fn truncated_and_replaced_runs_are_reported_and_reload_keeps_annotations() {
    let dir = tempfile::TempDir::new().unwrap();
    let lines = sample_lines();
    let run = dir.path().join("run.jsonl");
    std::fs::copy(sample(), &run).unwrap();
    let mut t = open(dir.path(), &[], "ann");
    t.wait_for("classified 0/29");
    t.send("5");
    t.wait_for("saved: classified as boundary");
    t.wait_for("classified 1/29");

    // Truncated in place to its first ten lines.
    let keep: usize = lines[..10].iter().map(|l| l.len() + 1).sum();
    let f = std::fs::OpenOptions::new().write(true).open(&run).unwrap();
    f.set_len(keep as u64).unwrap();
    drop(f);
    t.wait_for("run.jsonl was truncated");
    t.wait_for("press R to reload");
    t.send("R");
    t.wait_for("reloaded the run from disk");
    t.wait_for("10 pairs");
    t.wait_for(" classified 1/");
    assert!(!t.screen().contains("R reloads"), "{}", t.screen());

    // Replaced by rename, as a runner rewriting its output does.
    let new = dir.path().join("run.jsonl.new");
    std::fs::copy(sample(), &new).unwrap();
    std::fs::rename(&new, &run).unwrap();
    t.wait_for("run.jsonl was replaced by a new file");
    t.send("R");
    t.wait_for("reloaded the run from disk");
    t.wait_for("classified 1/29");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    assert_eq!(
        decisions(dir.path())[&pair(FIRST_VARIANT)],
        ("boundary".to_string(), "ann".to_string())
    );
}
