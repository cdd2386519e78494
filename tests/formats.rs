//! Foreign result files: detection, conversion and loading of the
//! converted run, against fixtures produced by the real tools (context-probe:
//! a generator written from the harness's description; see each make script).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use triage::core::derive::derive;
use triage::core::formats::{self, ConvertReport, Format};
use triage::core::index::{self, OpenOptions};
use triage::core::record::map_record;
use triage::core::stats;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/formats")
        .join(rel)
}

fn detected(rel: &str) -> Option<Format> {
    let bytes = std::fs::read(fixture(rel)).expect("fixture");
    let n = bytes.len().min(formats::DETECT_HEAD_BYTES);
    formats::detect(&bytes[..n]).format
}

struct Converted {
    report: ConvertReport,
    text: String,
    records: Vec<Value>,
    statuses: BTreeMap<&'static str, usize>,
}

/// Convert, check byte-identical re-conversion, load through the index and
/// derive every record.
fn convert(rel: &str, format: Format) -> Converted {
    let path = fixture(rel);
    let mut out = Vec::new();
    let report = formats::convert(&path, format, &mut out).expect("convert");
    let mut again = Vec::new();
    formats::convert(&path, format, &mut again).expect("convert again");
    assert_eq!(out, again, "converting twice must be byte-identical");
    let text = String::from_utf8(out).expect("utf-8");
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("converted line is JSON"))
        .collect();
    assert_eq!(records.len(), report.records);

    let mut tmp = tempfile::NamedTempFile::new().expect("temp");
    tmp.write_all(text.as_bytes()).expect("write");
    let p = tmp.path().to_string_lossy().to_string();
    let idx = index::load_run(&[p], &OpenOptions::default()).expect("load converted run");
    assert_eq!(
        idx.rows.len(),
        records.len(),
        "problems: {:?}",
        idx.problems
    );
    assert!(idx.problems.is_empty(), "{:?}", idx.problems);

    let mut statuses = BTreeMap::new();
    let mut failures = 0;
    for r in &records {
        assert_eq!(r["format"], format.name());
        assert!(r.get("origin").is_some());
        let d = derive(&map_record(r.clone()).expect("native record"));
        failures += usize::from(d.status.is_failure());
        *statuses.entry(d.status.name()).or_default() += 1;
    }
    assert_eq!(idx.failures, failures);
    Converted {
        report,
        text,
        records,
        statuses,
    }
}

fn st(pairs: &[(&'static str, usize)]) -> BTreeMap<&'static str, usize> {
    pairs.iter().copied().collect()
}

fn reasons(r: &Value) -> String {
    r["reasons"].to_string()
}

#[test]
fn context_probe_demo_passes() {
    assert_eq!(
        detected("context-probe/demo-results.jsonl"),
        Some(Format::ContextProbe)
    );
    let c = convert("context-probe/demo-results.jsonl", Format::ContextProbe);
    assert_eq!(c.report.rows, 36);
    // Every trial is a record: 30 compared with their baseline, and the 6
    // baselines (3 cases × 2 repetitions), each judged by its own grade.
    assert_eq!(
        (c.report.pairs, c.report.unpaired, c.report.failures),
        (30, 6, 0)
    );
    assert_eq!(c.statuses, st(&[("pass", 36)]));
    assert!(c.report.problems.is_empty(), "{:?}", c.report.problems);
    assert!(c.report.warnings.is_empty(), "{:?}", c.report.warnings);
    assert!(!c.text.contains("/work/") && c.text.ends_with('\n'));
    // Wording variants change only the question; order variants only the evidence.
    let order = c
        .records
        .iter()
        .find(|r| r["variant_id"] == "wording-0/reversed")
        .expect("order variant");
    assert_eq!(order["family"], "state-noise");
    assert_eq!(order["source"]["decision"], order["variant"]["decision"]);
}

#[test]
fn context_probe_flawed_flags_unsafe_approvals() {
    let c = convert("context-probe/flawed-results.jsonl", Format::ContextProbe);
    // As the harness reports it (seed 002): 6 failed trials of 36.
    assert_eq!((c.report.records, c.report.failures), (36, 6));
    assert_eq!((c.report.pairs, c.report.unpaired), (30, 6));
    assert_eq!(c.statuses, st(&[("fail", 6), ("pass", 30)]));
    let failed: Vec<&Value> = c.records.iter().filter(|r| r["passed"] == false).collect();
    for r in &failed {
        assert_eq!(r["case_id"], "shared");
        assert_eq!(r["unsafe_approval"], true);
        let why = reasons(r);
        assert!(
            why.contains("The decision changed from hold to approve."),
            "{why}"
        );
        assert!(why.contains("differs from the expected hold"), "{why}");
        assert!(
            why.contains("unsafe: approved where approval was not allowed"),
            "{why}"
        );
    }
    assert_eq!(
        c.records
            .iter()
            .filter(|r| r["unsafe_approval"] == true)
            .count(),
        6
    );
    // ... across the 24 trials where approval was not allowed.
    assert_eq!(
        c.records
            .iter()
            .filter(|r| r.get("unsafe_approval").is_some())
            .count(),
        24
    );
    let idx = open(&fixture("context-probe/flawed-results.jsonl"));
    let rows: Vec<u32> = (0..idx.rows.len() as u32).collect();
    let s = stats::summarize(&idx, &rows, None, stats::GroupBy::Transformation);
    assert_eq!(
        s.unsafe_approvals,
        Some(stats::UnsafeApprovals { count: 6, of: 24 })
    );
    let said = stats::conclusion(&idx, &rows, &s).join("\n");
    assert!(
        said.contains(
            "Unsafe approvals: 6 of 24 pairs where approval was not allowed decided approve."
        ),
        "{said}"
    );
    // A filter counts only what it keeps.
    let shared: Vec<u32> = rows
        .iter()
        .copied()
        .filter(|&i| idx.str(idx.rows[i as usize].case) == "shared")
        .collect();
    let s = stats::summarize(&idx, &shared, None, stats::GroupBy::Transformation);
    assert_eq!(
        s.unsafe_approvals,
        Some(stats::UnsafeApprovals { count: 6, of: 12 })
    );
}

fn open(path: &Path) -> index::RunIndex {
    index::load_run(
        &[path.to_string_lossy().to_string()],
        &OpenOptions::default(),
    )
    .expect("open")
}

fn triage(args: &[&str], file: &Path) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_triage"))
        .args(args)
        .arg(file)
        .output()
        .expect("run triage");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn context_probe_failing_baseline_is_one_failure() {
    let c = convert("context-probe/baseline-results.jsonl", Format::ContextProbe);
    // One wrong baseline trial of 36 is one failure, not a failure of the
    // five trials compared with it.
    assert_eq!((c.report.records, c.report.failures), (36, 1));
    assert_eq!(c.statuses, st(&[("fail", 1), ("pass", 35)]));
    let of_group: Vec<&Value> = c
        .records
        .iter()
        .filter(|r| r["case_id"] == "shared" && r["repetition"] == 0)
        .collect();
    assert_eq!(of_group.len(), 6);
    let base = of_group
        .iter()
        .find(|r| r["variant_id"] == "wording-0/original")
        .expect("baseline record");
    assert_eq!(base["passed"], false);
    assert_eq!(base["unsafe_approval"], true);
    assert!(
        reasons(base).contains("The baseline decision approve differs from the expected hold."),
        "{}",
        reasons(base)
    );
    for r in of_group
        .iter()
        .filter(|r| r["variant_id"] != "wording-0/original")
    {
        assert_eq!(r["passed"], true, "{}", r["variant_id"]);
        // The change against the baseline is shown as context.
        assert_eq!(r["source"]["decision"], "approve");
        assert_eq!(r["variant"]["decision"], "hold");
        assert_eq!(r["baseline"]["passed"], false);
    }
    let (code, out, _) = triage(
        &["summary"],
        &fixture("context-probe/baseline-results.jsonl"),
    );
    assert_eq!(code, Some(0));
    assert!(out.contains(": 36 pairs, 1 failure,"), "{out}");
}

#[test]
fn context_probe_a_second_trial_is_counted() {
    let c = convert("context-probe/retry-results.jsonl", Format::ContextProbe);
    assert_eq!(c.report.rows, 37);
    assert_eq!((c.report.records, c.report.failures), (37, 1));
    assert_eq!(c.statuses, st(&[("error", 1), ("pass", 36)]));
    let again = c
        .records
        .iter()
        .find(|r| r["variant_id"] == "wording-1/reversed (attempt 2)")
        .expect("the second attempt");
    assert_eq!(
        (again["case_id"].as_str(), again["attempt"].as_u64()),
        (Some("independent"), Some(2))
    );
    assert_eq!(again["variant"]["outcome"], "timeout");
    let w = c.report.warnings.join("\n");
    assert!(w.contains("counted as attempt 2"), "{w}");
    // The gate sees the failure.
    let file = fixture("context-probe/retry-results.jsonl");
    let (code, out, _) = triage(&["check", "--max-unclassified", "0"], &file);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("37 pairs") && out.contains("FAIL"), "{out}");
}

#[test]
fn context_probe_configuration_drift_fails_strict() {
    let file = fixture("context-probe/drift-results.jsonl");
    let c = convert("context-probe/drift-results.jsonl", Format::ContextProbe);
    assert_eq!((c.report.records, c.report.failures), (36, 0));
    // Repetition 1 of the unknown case: six trials on another configuration.
    assert_eq!(c.report.problems.len(), 6, "{:?}", c.report.problems);
    let idx = open(&file);
    assert_eq!(idx.problems.len(), 6);
    for p in &idx.problems {
        let rec = &c.records[p.line as usize - 1];
        assert_eq!(
            (rec["case_id"].as_str(), rec["repetition"].as_u64()),
            (Some("unknown"), Some(1))
        );
        assert_eq!(rec["config_mismatch"], true);
        assert!(p.file.ends_with("drift-results.jsonl"), "{p}");
        assert!(
            p.message.contains(
                "model_id fixture-deterministic-2 where the run's is fixture-deterministic-1"
            ) && p
                .message
                .contains("settings_id fixture-settings-2 where the run's is fixture-settings-1")
                && p.message.contains("(30 of 36 trials report the run's)")
                && p.message
                    .starts_with("configuration-consistency check failed (seed 002):"),
            "{p}"
        );
    }
    let (code, out, _) = triage(&["check", "--strict"], &file);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("6 problems"), "{out}");
    let (code, out, _) = triage(&["check"], &file);
    assert_eq!(code, Some(0), "{out}");
}

#[test]
fn context_probe_errors_are_service_errors_and_config_is_flagged() {
    let c = convert("context-probe/errors-results.jsonl", Format::ContextProbe);
    // Five trials failed on their own (a timeout, a malformed output, a
    // missing basis, missing metadata, a wrong decision), each counted once.
    assert_eq!((c.report.records, c.report.failures), (36, 5));
    assert_eq!(c.statuses, st(&[("error", 2), ("fail", 3), ("pass", 31)]));
    let w = c.report.warnings.join("\n");
    assert!(w.contains("the run mixes 2 settings_id values"), "{w}");
    assert!(w.contains("1 rows have no model_id"), "{w}");
    let find = |case: &str, v: &str, rep: u64| {
        c.records
            .iter()
            .find(|r| r["case_id"] == case && r["variant_id"] == v && r["repetition"] == rep)
            .unwrap_or_else(|| panic!("{case} {v} {rep}"))
    };
    assert_eq!(
        find("independent", "wording-1/original", 0)["variant"]["outcome"],
        "timeout"
    );
    // The malformed baseline is its own record's failure; the trial
    // compared with it keeps its own grade.
    assert_eq!(
        find("unknown", "wording-0/original", 1)["variant"]["outcome"],
        "invalid-response"
    );
    let after_bad_base = find("unknown", "wording-1/reversed", 1);
    assert!(after_bad_base["source"].get("outcome").is_none());
    assert_eq!(after_bad_base["passed"], true);
    assert!(reasons(find("shared", "wording-1/reversed", 0)).contains("schema_ok false"));
    assert!(reasons(find("shared", "wording-2/original", 1)).contains("missing metadata"));
    // A changed configuration fails the run's consistency check, not the
    // trial: it is a problem of its record.
    let cfg = find("unknown", "wording-1/original", 0);
    assert_eq!(cfg["config_mismatch"], true);
    assert_eq!(cfg["passed"], true);
    let at = |r: &Value| {
        c.records
            .iter()
            .position(|x| std::ptr::eq(x, r))
            .expect("record") as u64
            + 1
    };
    let told: Vec<&str> = c
        .report
        .problems
        .iter()
        .filter(|p| p.line == at(cfg))
        .map(|p| p.message.as_str())
        .collect();
    assert_eq!(told.len(), 1, "{:?}", c.report.problems);
    assert!(
        told[0].contains("settings_id fixture-settings-2 where the run's is fixture-settings-1"),
        "{told:?}"
    );
    // The trial without a model_id fails on its own and fails the check.
    let bare = find("shared", "wording-2/original", 1);
    assert!(c.report.problems.iter().any(|p| {
        p.line == at(bare)
            && p.message
                .contains("model_id none where the run's is fixture-deterministic-1")
    }));
    assert_eq!(c.report.problems.len(), 2, "{:?}", c.report.problems);
}

#[test]
fn promptfoo_json_and_jsonl() {
    for rel in ["promptfoo/results.json", "promptfoo/results.jsonl"] {
        assert_eq!(detected(rel), Some(Format::Promptfoo), "{rel}");
        let c = convert(rel, Format::Promptfoo);
        assert_eq!(c.report.rows, 7, "{rel}");
        assert_eq!(
            (c.report.pairs, c.report.unpaired, c.report.failures),
            (3, 2, 4),
            "{rel}"
        );
        assert_eq!(c.statuses, st(&[("fail", 4), ("pass", 1)]), "{rel}");
        let typo = c
            .records
            .iter()
            .find(|r| r["variant_id"] == "typo")
            .expect("typo");
        assert_eq!(typo["case_id"], "outage");
        assert!(reasons(typo).contains("The verdict changed from pass to fail."));
        assert!(reasons(typo).contains("Expected output to contain"));
        let cf = c
            .records
            .iter()
            .find(|r| r["variant_id"] == "amount-changed")
            .expect("counterfactual");
        assert!(reasons(cf).contains("same output as its base"));
        let lonely = c
            .records
            .iter()
            .find(|r| r["transformation"] == "unpaired")
            .expect("unpaired");
        assert_eq!(lonely["source"]["state"]["answer"], "Hello there");
        assert!(lonely["variant"]["state"]["answer"].is_string());
    }
}

#[test]
fn inspect_json_log() {
    assert_eq!(detected("inspect/log.json"), Some(Format::Inspect));
    let c = convert("inspect/log.json", Format::Inspect);
    assert_eq!(c.report.rows, 12);
    assert_eq!(
        (c.report.pairs, c.report.unpaired, c.report.failures),
        (6, 2, 6)
    );
    assert_eq!(c.statuses, st(&[("fail", 6), ("pass", 2)]));
    let para = c
        .records
        .iter()
        .find(|r| r["variant_id"] == "outage-paraphrase" && r["repetition"] == 0)
        .expect("paraphrase");
    assert_eq!(para["repetition"], 0);
    assert!(
        reasons(para).contains("Scorer includes gave I"),
        "{}",
        reasons(para)
    );
}

#[test]
fn multivon_validations_and_manifest() {
    assert_eq!(
        detected("multivon/validations.jsonl"),
        Some(Format::Multivon)
    );
    let c = convert("multivon/validations.jsonl", Format::Multivon);
    assert_eq!((c.report.pairs, c.report.failures), (4, 1));
    assert_eq!(c.statuses, st(&[("invalid", 1), ("unchecked", 3)]));
    let invalid = c
        .records
        .iter()
        .find(|r| r["validation_status"] == "invalid")
        .expect("invalid");
    assert_eq!(invalid["variant_id"], "amount:no-comma");
    assert!(reasons(invalid).contains("Removing the decimal comma"));
    let unknown = c
        .records
        .iter()
        .find(|r| r["validation_status"] == "unknown")
        .expect("unknown");
    assert!(unknown.get("allowed_changes").is_none());

    assert_eq!(detected("multivon/manifest.json"), Some(Format::Multivon));
    let m = convert("multivon/manifest.json", Format::Multivon);
    assert_eq!((m.report.pairs, m.report.unpaired), (1, 0));
    assert_eq!(m.records[0]["case_id"], "addition-1");
    assert_eq!(m.records[0]["variant_id"], "addition:changed");
    assert_eq!(m.records[0]["expectation"]["kind"], "counterfactual");
}

#[test]
fn unknown_files_say_what_was_tried() {
    for head in [
        &b"id,input,output\n1,a,b\n"[..],
        b"{\"hello\": [1, 2, 3]}",
        b"",
    ] {
        let d = formats::detect(head);
        assert_eq!(d.format, None);
        let msg = d.message("results.txt");
        for f in Format::ALL {
            assert!(msg.contains(f.name()), "{msg}");
        }
    }
    // The extension does not matter: content decides.
    assert_eq!(
        formats::detect(b"{\"case_id\":\"a\",\"variant_id\":\"b\"}\n").format,
        Some(Format::Native)
    );
    let err = formats::convert(
        &fixture("inspect/log.json"),
        Format::Promptfoo,
        &mut Vec::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("log.json") && err.contains("promptfoo"),
        "{err}"
    );
}

/// On standard error the note about a file of no known format is one line
/// per format tried, each short, not one long line.
#[test]
fn the_detection_note_is_one_line_per_format() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = dir.path().join("odd.jsonl");
    std::fs::write(&run, "{\"foo\": 1}\n{\"foo\": 2}\n").expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_triage"))
        .args(["summary", "odd.jsonl"])
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .output()
        .expect("run triage");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    let first = lines
        .iter()
        .position(|l| l.starts_with("triage: note: odd.jsonl: not a format triage knows"))
        .unwrap_or_else(|| panic!("no detection note:\n{err}"));
    for (i, f) in Format::ALL.iter().enumerate() {
        let line = lines.get(first + 1 + i).copied().unwrap_or_default();
        assert!(
            line.starts_with(&format!("triage:     - {}: ", f.name())),
            "line {} should name {}:\n{err}",
            first + 1 + i,
            f.name()
        );
    }
    assert_eq!(
        lines.get(first + 1 + Format::ALL.len()).copied(),
        Some("triage:   Pass --from NAME to choose one."),
        "{err}"
    );
    for l in &lines {
        assert!(l.chars().count() <= 200, "a long line on stderr: {l}");
        assert!(!l.contains("\\n"), "a visible \\n on stderr: {l}");
    }
}

/// Each fixture, its format, and the pairs (with unpaired rows), unpaired
/// rows and failures it must open with.
const OPENED: [(&str, Format, usize, usize, usize); 16] = [
    (
        "context-probe/demo-results.jsonl",
        Format::ContextProbe,
        36,
        6,
        0,
    ),
    (
        "context-probe/flawed-results.jsonl",
        Format::ContextProbe,
        36,
        6,
        6,
    ),
    (
        "context-probe/errors-results.jsonl",
        Format::ContextProbe,
        36,
        6,
        5,
    ),
    (
        "context-probe/baseline-results.jsonl",
        Format::ContextProbe,
        36,
        6,
        1,
    ),
    (
        "context-probe/retry-results.jsonl",
        Format::ContextProbe,
        37,
        6,
        1,
    ),
    (
        "context-probe/drift-results.jsonl",
        Format::ContextProbe,
        36,
        6,
        0,
    ),
    ("promptfoo/results.json", Format::Promptfoo, 5, 2, 4),
    ("promptfoo/results.jsonl", Format::Promptfoo, 5, 2, 4),
    ("inspect/log.json", Format::Inspect, 8, 2, 6),
    ("inspect/log.eval", Format::Inspect, 8, 2, 6),
    ("multivon/validations.jsonl", Format::Multivon, 4, 0, 1),
    ("multivon/manifest.json", Format::Multivon, 1, 0, 0),
    ("multivon/report.json", Format::Multivon, 4, 1, 3),
    (
        "multivon/checks-validations.jsonl",
        Format::Multivon,
        5,
        0,
        1,
    ),
    ("multivon/checks-manifest.json", Format::Multivon, 1, 0, 0),
    ("multivon/checks-report.json", Format::Multivon, 2, 0, 0),
];

/// The fixtures whose records break their tool's own rules, and how many
/// problems opening each lists.
const WITH_PROBLEMS: [(&str, usize); 5] = [
    ("context-probe/errors-results.jsonl", 2),
    ("context-probe/drift-results.jsonl", 6),
    ("multivon/checks-validations.jsonl", 2),
    ("multivon/checks-manifest.json", 2),
    ("multivon/checks-report.json", 0),
];

#[test]
fn every_fixture_opens_through_the_viewers_path() {
    for (rel, format, rows, unpaired, failures) in OPENED {
        let path = fixture(rel);
        let before = std::fs::read(&path).expect("fixture");
        let idx = index::load_run(
            &[path.to_string_lossy().to_string()],
            &OpenOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert_eq!(idx.files[0].format, format, "{rel}");
        assert_eq!(idx.rows.len(), rows, "{rel}");
        assert_eq!(idx.failures, failures, "{rel}");
        let lone = (0..idx.rows.len())
            .filter(|&i| idx.str(idx.transformation(i)) == formats::UNPAIRED)
            .count();
        assert_eq!(lone, unpaired, "{rel}");
        let problems = WITH_PROBLEMS
            .iter()
            .find(|(f, _)| *f == rel)
            .map_or(0, |(_, n)| *n);
        assert_eq!(idx.problems.len(), problems, "{rel}: {:?}", idx.problems);
        // The shown name is the user's file, and the file is never changed.
        assert!(idx.display_name().ends_with(rel), "{}", idx.display_name());
        assert_eq!(idx.files[0].path, path);
        assert_eq!(std::fs::read(&path).expect("fixture"), before, "{rel}");
        // Every pair's detail reads back from the converted records.
        for i in 0..idx.rows.len() {
            let p = idx.load_pair(i).expect("detail");
            assert_eq!(p.raw["format"], format.name(), "{rel}");
        }
    }
}

#[test]
fn format_can_be_forced_and_unknown_files_open_with_a_note() {
    let dir = tempfile::tempdir().expect("temp");
    let csv = dir.path().join("results.csv");
    std::fs::write(&csv, "id,input,output\n1,a,b\n").expect("write");
    let csv = csv.to_string_lossy().to_string();
    // No format fits: the lines open natively, each a problem, plus a note.
    let idx = index::load_run(std::slice::from_ref(&csv), &OpenOptions::default()).expect("open");
    assert_eq!(idx.files[0].format, Format::Native);
    assert_eq!((idx.rows.len(), idx.problems.len()), (0, 2));
    let note = idx.files[0].notes.join("\n");
    for f in Format::ALL {
        assert!(note.contains(f.name()), "{note}");
    }
    assert!(note.contains("--from NAME"), "{note}");

    // A native run gets no note and pays only for the head.
    let run = dir.path().join("run.jsonl");
    std::fs::write(
        &run,
        "{\"case_id\":\"c\",\"variant_id\":\"v\",\"passed\":true}\n",
    )
    .expect("write");
    let idx = index::load_run(
        &[run.to_string_lossy().to_string()],
        &OpenOptions::default(),
    )
    .expect("open");
    assert_eq!((idx.files[0].format, idx.rows.len()), (Format::Native, 1));
    assert!(idx.files[0].notes.is_empty());

    // --from overrides detection, both ways.
    let forced = |rel: &str, f: Format| {
        index::load_run(
            &[rel.to_string()],
            &OpenOptions {
                format: Some(f),
                ..OpenOptions::default()
            },
        )
    };
    let err = forced(&csv, Format::Promptfoo).unwrap_err().to_string();
    assert!(
        err.contains("results.csv") && err.contains("--from"),
        "{err}"
    );
    let jsonl = fixture("promptfoo/results.jsonl")
        .to_string_lossy()
        .to_string();
    let native = forced(&jsonl, Format::Native).expect("open as native");
    assert_eq!(native.files[0].format, Format::Native);
    assert_eq!(native.rows.len(), 0);
    assert_eq!(native.problems.len(), 7);
}

#[test]
fn multivon_report_pairs_through_the_parent_case() {
    assert_eq!(detected("multivon/report.json"), Some(Format::Multivon));
    let c = convert("multivon/report.json", Format::Multivon);
    assert_eq!(c.report.rows, 5);
    assert_eq!(
        (c.report.pairs, c.report.unpaired, c.report.failures),
        (3, 1, 3)
    );
    assert_eq!(c.statuses, st(&[("error", 1), ("fail", 2), ("pass", 1)]));
    assert!(!c.text.contains("/work/") && !c.text.contains("/tmp/"));
    let find = |id: &str| {
        c.records
            .iter()
            .find(|r| r["variant_id"] == id)
            .unwrap_or_else(|| panic!("{id}"))
    };
    let spacing = find("addition:spacing");
    assert_eq!(spacing["case_id"], "addition-1");
    assert_eq!(spacing["relation"], "invariant");
    assert_eq!(spacing["source"]["question"], "2 + 3");
    assert_eq!(spacing["variant"]["question"], "2  + 3");
    assert_eq!(spacing["source"]["output"], "5");
    assert_eq!(spacing["variant"]["output"], "23");
    assert_eq!(spacing["model_id"], "local/brittle-adder");
    let why = reasons(spacing);
    assert!(
        why.contains("The verdict changed from pass to fail."),
        "{why}"
    );
    assert!(
        why.contains("Variant: exact_match: Expected: '5' | Got: '23'"),
        "{why}"
    );
    assert!(reasons(find("addition:words")).contains("Got: 'i cannot add words'"));
    let changed = find("addition:changed");
    assert_eq!(changed["passed"], true);
    assert_eq!(changed["expectation"]["kind"], "counterfactual");
    let lone = find("multiply:base");
    assert_eq!(lone["transformation"], formats::UNPAIRED);
    assert_eq!(lone["variant"]["outcome"], "error");
    assert_eq!(lone["source"]["state"]["answer"], "42");
}

#[test]
fn summary_reads_every_fixture() {
    for (rel, format, rows, _, failures) in OPENED {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_triage"))
            .arg("summary")
            .arg(fixture(rel))
            .output()
            .expect("run triage summary");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{rel}: {stdout}");
        let head = stdout.lines().next().unwrap_or_default();
        let pairs = if rows == 1 { "pair" } else { "pairs" };
        let fails = if failures == 1 { "failure" } else { "failures" };
        assert!(
            head.contains(&format!(" ({format}): {rows} {pairs}, {failures} {fails},")),
            "{rel} ({format}): {head}"
        );
        // The Markdown and JSON summaries name the format read too.
        for (how, want) in [
            (
                "markdown",
                format!("## Summary: {} ({format})", fixture(rel).display()),
            ),
            ("json", format!("\"format\": \"{format}\"")),
        ] {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_triage"))
                .args(["summary", "--format", how])
                .arg(fixture(rel))
                .output()
                .expect("run triage summary");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains(&want), "{rel} {how}: {stdout}");
        }
    }
    // A native run is named native; runs of two formats name both.
    let native = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-runs/support-urgency.jsonl");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_triage"))
        .args(["summary", "--format", "json"])
        .arg(&native)
        .arg(fixture("promptfoo/results.json"))
        .output()
        .expect("run triage summary");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["format"], "native+promptfoo");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_triage"))
        .args(["check", "--from", "csv"])
        .arg(fixture("promptfoo/results.json"))
        .output()
        .expect("run triage check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("unknown format 'csv'")
            && stderr.contains("native, context-probe, promptfoo, inspect, multivon"),
        "{stderr}"
    );
}

#[test]
fn inspect_eval_archive_gives_the_same_pairs_as_the_json_log() {
    assert_eq!(detected("inspect/log.eval"), Some(Format::Inspect));
    let mut eval = Vec::new();
    let report = formats::convert(&fixture("inspect/log.eval"), Format::Inspect, &mut eval)
        .expect("convert the .eval archive");
    let mut json = Vec::new();
    formats::convert(&fixture("inspect/log.json"), Format::Inspect, &mut json).expect("convert");
    assert_eq!(report.rows, 12);
    // The two runs differ in times and ids, not in what was asked and answered.
    let key = |text: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(text)
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).expect("JSON");
                format!(
                    "{} {} {} {} {}",
                    v["case_id"],
                    v["variant_id"],
                    v["passed"],
                    v["reasons"],
                    v["variant"]["question"]
                )
            })
            .collect()
    };
    assert_eq!(key(&eval), key(&json));
    assert!(!String::from_utf8_lossy(&eval).contains("/tmp/"));

    // A zip that is not an Inspect log says so.
    let d = formats::detect(b"PK\x03\x04\x14\x00\x00\x00\x08\x00report.docx");
    assert_eq!(d.format, None);
    assert!(d.message("x.zip").contains("not an Inspect .eval log"));
}

#[test]
fn a_native_run_with_a_first_line_longer_than_the_head_gets_no_note() {
    let dir = tempfile::tempdir().expect("temp");
    let run = dir.path().join("run.jsonl");
    let big = "x".repeat(2 * formats::DETECT_HEAD_BYTES);
    std::fs::write(
        &run,
        format!(
            "{{\"case_id\":\"c\",\"variant_id\":\"v\",\"label\":\"{big}\",\"passed\":false}}\n{{\"case_id\":\"c\",\"variant_id\":\"w\",\"passed\":true}}\n"
        ),
    )
    .expect("write");
    let idx = index::load_run(
        &[run.to_string_lossy().to_string()],
        &OpenOptions::default(),
    )
    .expect("open");
    assert_eq!(idx.files[0].format, Format::Native);
    assert!(idx.files[0].notes.is_empty(), "{:?}", idx.files[0].notes);
    assert_eq!((idx.rows.len(), idx.failures), (2, 1));
}

#[test]
fn multivon_records_count_as_multivon_means() {
    let file = fixture("multivon/checks-validations.jsonl");
    let c = convert("multivon/checks-validations.jsonl", Format::Multivon);
    let find = |id: &str| {
        c.records
            .iter()
            .position(|r| r["variant_id"] == id)
            .unwrap_or_else(|| panic!("{id}"))
    };
    let derived = |i: usize| derive(&map_record(c.records[i].clone()).expect("record"));
    // Made by multivon itself, with non-ASCII text, escapes and floats in
    // its evidence: the digest checks out byte for byte.
    let words = find("addition:words");
    assert_eq!(c.records[words]["validation_status"], "valid");
    assert_eq!(derived(words).validity.code().name(), "valid");
    // Invalid although the input is the base's: it stays invalid.
    let copy = find("addition:copy");
    assert_eq!(
        c.records[copy]["source"]["question"],
        c.records[copy]["variant"]["question"]
    );
    assert_eq!(derived(copy).status.name(), "invalid");
    // Unknown is its own validity; the pair has no verdict.
    let spelled = find("addition:spelled");
    assert_eq!(derived(spelled).validity.code().name(), "unknown");
    assert_eq!(derived(spelled).status.name(), "unchecked");
    // The same base content under a second case id is a problem.
    let tight = find("addition:tight");
    // Edited after validation: the digest no longer matches.
    let changed = find("addition:changed");
    assert_eq!(c.records[changed]["validation_status"], "unknown");
    assert_eq!(derived(changed).validity.code().name(), "unknown");
    let at = |line: usize| -> Vec<&str> {
        c.report
            .problems
            .iter()
            .filter(|p| p.line == line as u64 + 1)
            .map(|p| p.message.as_str())
            .collect()
    };
    assert!(at(words).is_empty() && at(copy).is_empty() && at(spelled).is_empty());
    assert!(
        at(tight)[0].contains("the base case addition:base-again has the same content as the base case addition:base of record 1"),
        "{:?}",
        at(tight)
    );
    assert!(at(changed)[0].contains("digest"), "{:?}", at(changed));
    // Opened, they are problems that --strict fails on; validity:unknown finds two.
    let idx = open(&file);
    assert_eq!(idx.problems.len(), 2, "{:?}", idx.problems);
    let unknown = idx
        .rows
        .iter()
        .filter(|r| r.validity().name() == "unknown")
        .count();
    assert_eq!(unknown, 2);
    let (code, out, _) = triage(&["check", "--strict"], &file);
    assert_eq!(code, Some(1), "{out}");

    // A variant moved to another split, in a manifest edited after export.
    let m = convert("multivon/checks-manifest.json", Format::Multivon);
    let told: Vec<&str> = m
        .report
        .problems
        .iter()
        .map(|p| p.message.as_str())
        .collect();
    assert_eq!(told.len(), 2, "{told:?}");
    assert!(
        told[0].contains("digest of manifest addition development cases"),
        "{told:?}"
    );
    assert!(
        told[1].contains("the variant addition:changed is in split test but its base addition:base is in split development"),
        "{told:?}"
    );
    assert_eq!(m.records[0]["validation_status"], "unknown");

    // A skipped variant, and one with no output, have no verdict, though
    // their base passed.
    let r = convert("multivon/checks-report.json", Format::Multivon);
    assert_eq!(r.statuses, st(&[("unchecked", 2)]));
    for rec in &r.records {
        assert!(rec.get("passed").is_none(), "{rec}");
        assert_eq!(rec["source"]["decision"], "pass");
    }
    assert!(reasons(&r.records[0]).contains("skipped: no verdict"));
    assert!(reasons(&r.records[1]).contains("no output, so no verdict"));
}

/// Each case result of a multivon report once, by its case id: "passed",
/// "failed", "error" or "no verdict", as the converted side says.
fn report_rows(records: &[Value]) -> BTreeMap<String, &'static str> {
    let mut out = BTreeMap::new();
    for r in records {
        let sides: Vec<(&Value, String)> = if r["transformation"] == formats::UNPAIRED {
            vec![(
                &r["variant"],
                r["variant_id"].as_str().expect("id").to_string(),
            )]
        } else {
            ["source", "variant"]
                .iter()
                .map(|s| {
                    let side = &r[*s];
                    (side, side["row_id"].as_str().expect("row_id").to_string())
                })
                .collect()
        };
        for (side, id) in sides {
            let verdict = if side["outcome"] == "error" || side["outcome"] == "timeout" {
                "error"
            } else if side["decision"] == "pass" {
                "passed"
            } else if side["decision"] == "fail" {
                "failed"
            } else {
                "no verdict"
            };
            out.insert(id, verdict);
        }
    }
    out
}

#[test]
fn multivon_reports_count_their_cases_as_the_reports_summary_does() {
    for (rel, no_output) in [
        ("multivon/report.json", 0),
        ("multivon/checks-report.json", 1),
    ] {
        let doc: Value =
            serde_json::from_slice(&std::fs::read(fixture(rel)).expect("fixture")).expect("JSON");
        let s = &doc["summary"];
        let n = |k: &str| s[k].as_u64().expect("count") as usize;
        let c = convert(rel, Format::Multivon);
        let rows = report_rows(&c.records);
        let count = |w: &str| rows.values().filter(|v| **v == w).count();
        assert_eq!(rows.len(), n("total"), "{rel}: {rows:?}");
        assert_eq!(c.report.rows, n("total"), "{rel}");
        assert_eq!(count("error"), n("errors"), "{rel}: {rows:?}");
        assert_eq!(count("failed"), n("failed"), "{rel}: {rows:?}");
        // A result multivon counts as passed with no output has no verdict
        // here (seed 004: no verdict becomes a score); the rest agree.
        assert_eq!(count("passed"), n("passed") - no_output, "{rel}: {rows:?}");
        assert_eq!(
            count("no verdict"),
            n("skipped") + no_output,
            "{rel}: {rows:?}"
        );
    }
}

#[test]
fn a_json_document_written_on_one_line_is_read_as_its_tool_wrote_it() {
    // As `jq -c` leaves them: each tool's JSON fixtures, compacted, are
    // detected as the same format and give the same records.
    let dir = tempfile::tempdir().expect("temp");
    for rel in [
        "promptfoo/results.json",
        "promptfoo/keyword/results.json",
        "promptfoo/columns/results.json",
        "promptfoo/scenarios/results.json",
        "inspect/log.json",
        "inspect/int-ids.json",
        "checklist/support-brittle.json",
        "multivon/report.json",
        "multivon/validations-wrapped.json",
    ] {
        let pretty = std::fs::read(fixture(rel)).expect("fixture");
        let doc: Value = serde_json::from_slice(&pretty).expect("JSON");
        let compact = doc.to_string();
        assert!(!compact.contains('\n'), "{rel}");
        let Some(format) = detected(rel) else {
            panic!("{rel}: not detected")
        };
        let n = compact.len().min(formats::DETECT_HEAD_BYTES);
        assert_eq!(
            formats::detect(&compact.as_bytes()[..n]).format,
            Some(format),
            "{rel} on one line"
        );
        let path = dir.path().join(rel.replace('/', "-"));
        std::fs::write(&path, &compact).expect("write");
        let (mut a, mut b) = (Vec::new(), Vec::new());
        formats::convert(&fixture(rel), format, &mut a).expect("convert");
        formats::convert(&path, format, &mut b).expect("convert one line");
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "{rel}"
        );
    }
}
