//! Seed 000, section 7, through the real binary: a case whose pairs were
//! routed by two policies, and repetitions sent with regenerated inputs,
//! are problems that `triage check --strict` fails on (naming the file and
//! line), and warnings in every face of `triage summary`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_triage");
const MIXED: &str = "tests/fixtures/stats/mixed-policy.jsonl";
const REGENERATED: &str = "tests/fixtures/stats/regenerated.jsonl";

/// Run the binary from the repository, away from the user's config and data.
fn run(args: &[&str]) -> Output {
    let home = tempfile::tempdir().expect("temp dir");
    Command::new(BIN)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .output()
        .expect("run triage")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn strict_check_fails_on_a_case_that_mixes_policies_and_names_the_line() {
    assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join(MIXED).exists());
    let out = run(&["check", MIXED, "--strict"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    // The problem names the file and line, and the case.
    assert!(
        text.lines()
            .any(|l| l.contains(&format!("{MIXED}:3:")) && l.contains("payment-failure-401")),
        "{text}"
    );
    // Without --strict, a warning is not a failed gate.
    let out = run(&["check", MIXED]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn strict_check_fails_on_regenerated_repetitions() {
    let out = run(&["check", REGENERATED, "--strict"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains(&format!("{REGENERATED}:2:")) && l.contains("outage-403")),
        "{text}"
    );
}

#[test]
fn summary_warns_in_text_markdown_and_json() {
    for (run_file, warning) in [
        (
            MIXED,
            "Warning: case payment-failure-401 mixes 2 policies: review 0.55 / action 0.9 (2 pairs), review 0.5 / action 0.9 (1 pair);",
        ),
        (
            REGENERATED,
            "Warning: outage-403 / paraphrase (jev-noul-2026-10) was sent with 2 different inputs over 3 trials;",
        ),
    ] {
        let json: Value =
            serde_json::from_str(&stdout(&run(&["summary", run_file, "--format", "json"])))
                .expect("the JSON summary");
        let warnings = json["input_warnings"].as_array().expect("input_warnings");
        assert_eq!(warnings.len(), 1, "{run_file}: {warnings:?}");
        assert!(
            json["conclusion"]
                .as_array()
                .expect("conclusion")
                .iter()
                .any(|s| s.as_str().is_some_and(|s| s.starts_with(warning))),
            "{run_file}: {json}"
        );
        // Text and Markdown wrap or escape differently: compare their words.
        let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        for format in ["text", "markdown"] {
            let shown = words(&stdout(&run(&["summary", run_file, "--format", format])));
            assert!(
                shown.contains(&words(warning)),
                "{run_file} {format}: {shown}"
            );
        }
    }
    let json: Value =
        serde_json::from_str(&stdout(&run(&["summary", MIXED, "--format", "json"]))).expect("JSON");
    let w = &json["input_warnings"][0];
    assert_eq!(w["kind"], "mixed-policies");
    assert_eq!(w["case"], "payment-failure-401");
    assert_eq!(w["line"], 3);
    assert_eq!(w["policies"][1]["review_threshold"], 0.5);
}
