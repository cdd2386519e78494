//! Several reviewers end to end: the real binary in a pseudo-terminal on the
//! two-reviewer sample (copied into a temp dir with its journal), with
//! `--blind`, `d` to the next disagreement and `=` then a category key to
//! resolve it; the resolution is checked on disk.

mod common;

use std::path::Path;

use common::Tui;
use serde_json::Value;

fn copy_sample(dir: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-runs");
    std::fs::copy(from.join("two-reviewers.jsonl"), dir.join("run.jsonl")).expect("copy the run");
    std::fs::copy(
        from.join("two-reviewers.jsonl.triage.jsonl"),
        dir.join("run.jsonl.triage.jsonl"),
    )
    .expect("copy its journal");
}

#[test]
fn a_third_reviewer_walks_the_disagreements_and_resolves_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_sample(dir.path());
    let mut t = Tui::spawn(
        &["run.jsonl", "--reviewer", "dee", "--config", "/dev/null"],
        160,
        44,
        dir.path(),
        &[],
    );
    t.wait_for("classified 24/29");
    t.send("d");
    t.wait_for("checkout-outage-001 / remove-scope-evidence");
    t.wait_for("said     ana missing-evidence · bob boundary");
    t.wait_for("DISAGREE");
    t.send("=");
    t.wait_for("resolve the disagreement");
    t.send("5");
    t.wait_for("saved: resolved as boundary");
    t.wait_for("classified 25/29");
    t.send("d");
    t.wait_for("billing-double-charge-003 / irrelevant-campaign-tag");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);

    let text = std::fs::read_to_string(dir.path().join("run.jsonl.triage.jsonl")).unwrap();
    let resolutions: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["kind"] == "resolution" && v["reviewer"] == "dee")
        .collect();
    assert_eq!(resolutions.len(), 1, "{text}");
    assert_eq!(resolutions[0]["variant_id"], "remove-scope-evidence");
    assert_eq!(resolutions[0]["category"], "boundary");
    assert_eq!(
        resolutions[0]["resolves"],
        serde_json::json!([
            {"reviewer": "ana", "category": "missing-evidence"},
            {"reviewer": "bob", "category": "boundary"}
        ])
    );
}

#[test]
fn blind_review_shows_nothing_of_the_others_until_you_decide() {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_sample(dir.path());
    let mut t = Tui::spawn(
        &[
            "run.jsonl",
            "--reviewer",
            "dee",
            "--blind",
            "--config",
            "/dev/null",
        ],
        160,
        44,
        dir.path(),
        &[],
    );
    t.wait_for("checkout-outage-001 / irrelevant-ui-metadata");
    t.wait_for("blind    2 other reviewers' decisions · the suggestion · hidden until you");
    let screen = t.screen();
    assert!(!screen.contains("suggested "), "{screen}");
    assert!(!screen.contains("distractor?"), "{screen}");
    assert!(!screen.contains("≠ disagree"), "{screen}");
    t.send("2");
    t.wait_for("saved: classified as distractor");
    // Back on the pair: now the others show.
    t.send("g");
    t.wait_for("said     ana distractor ✎ · bob distractor · dee distractor");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
}
