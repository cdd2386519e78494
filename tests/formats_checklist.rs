//! CheckList results (the viewer's data dumped as JSON, and the text of
//! `TestSuite.summary()`), multivon validations written as one JSON array,
//! other JSON documents that hold records of a known format, and the seed
//! runner's bare rows. The CheckList and multivon fixtures are written by the
//! real tools (see `make.py`/`make_array.py` beside them); CheckList's own
//! numbers are read from the files it generated, never restated here.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use triage::core::derive::derive;
use triage::core::formats::{self, ConvertReport, Format, RecordsAt};
use triage::core::index::{self, OpenOptions};
use triage::core::record::map_record;

const BIN: &str = env!("CARGO_BIN_EXE_triage");

const CHECKLIST: [&str; 3] = ["sentiment-brittle", "sentiment-negation", "support-brittle"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(rel: &str) -> PathBuf {
    root().join("tests/fixtures/formats").join(rel)
}

fn detection(path: &Path) -> formats::Detection {
    let bytes = std::fs::read(path).expect("fixture");
    formats::detect(&bytes[..bytes.len().min(formats::DETECT_HEAD_BYTES)])
}

/// Convert twice (byte-identical), load the records through the index (no
/// problems) and return them.
fn convert(path: &Path, format: Format) -> (ConvertReport, Vec<Value>) {
    let mut out = Vec::new();
    let report = formats::convert(path, format, &mut out).expect("convert");
    let mut again = Vec::new();
    formats::convert(path, format, &mut again).expect("convert again");
    assert_eq!(out, again, "converting twice must be byte-identical");
    let text = String::from_utf8(out).expect("utf-8");
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a converted line is JSON"))
        .collect();
    assert_eq!(records.len(), report.records);
    let mut tmp = tempfile::NamedTempFile::new().expect("temp");
    tmp.write_all(text.as_bytes()).expect("write");
    let p = tmp.path().to_string_lossy().to_string();
    let idx = index::load_run(&[p], &OpenOptions::default()).expect("load the converted run");
    assert_eq!(idx.rows.len(), records.len());
    assert!(idx.problems.is_empty(), "{:?}", idx.problems);
    (report, records)
}

fn run(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env("XDG_CONFIG_HOME", cwd.join("config"))
        .env("XDG_DATA_HOME", cwd.join("data"))
        .output()
        .expect("run triage")
}

/// `triage summary` (plus `extra`) on `path`; its standard output.
fn summary(path: &Path, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let p = path.to_string_lossy();
    let mut args = vec!["summary", &p];
    args.extend_from_slice(extra);
    let out = run(&args, dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{args:?}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn pairs_and_failures(records: usize, failures: usize) -> String {
    let pairs = if records == 1 { "pair" } else { "pairs" };
    let fails = if failures == 1 { "failure" } else { "failures" };
    format!(": {records} {pairs}, {failures} {fails},")
}

// ------------------------------------------------------------ CheckList

/// What CheckList says of one test, read from the files it generated.
#[derive(Debug, Default)]
struct Stats {
    kind: String,
    capability: String,
    nfailed: u64,
    npassed: u64,
    nfiltered: u64,
    /// From the summary text: `Test cases:`, `After filtering:`, `Fails (rate):`.
    summary_cases: u64,
    summary_after_filtering: Option<u64>,
    summary_fails: u64,
}

/// Every test of a CheckList fixture: the viewer's `stats` from the JSON
/// dump and the counts `TestSuite.summary()` printed.
fn checklist_stats(name: &str) -> BTreeMap<String, Stats> {
    let dump: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture(&format!("checklist/{name}.json"))).expect("dump"),
    )
    .expect("JSON");
    let mut out = BTreeMap::new();
    for t in dump["tests"].as_array().expect("tests") {
        let n = |k: &str| t["stats"][k].as_u64().expect("stat");
        out.insert(
            t["name"].as_str().expect("name").to_string(),
            Stats {
                kind: t["type"].as_str().expect("type").to_string(),
                capability: t["capability"].as_str().expect("capability").to_string(),
                nfailed: n("nfailed"),
                npassed: n("npassed"),
                nfiltered: n("nfiltered"),
                ..Stats::default()
            },
        );
    }
    let text = std::fs::read_to_string(fixture(&format!("checklist/{name}.summary.txt")))
        .expect("summary");
    let lines: Vec<&str> = text.lines().collect();
    let number = |l: &str, p: &str| -> Option<u64> {
        l.strip_prefix(p)?.split_whitespace().next()?.parse().ok()
    };
    for (i, l) in lines.iter().enumerate() {
        if let Some(n) = number(l, "Test cases:") {
            let s = out.get_mut(lines[i - 1]).expect("a test the dump knows");
            s.summary_cases = n;
            for next in &lines[i + 1..] {
                if let Some(a) = number(next, "After filtering:") {
                    s.summary_after_filtering = Some(a);
                } else if let Some(f) = number(next, "Fails (rate):") {
                    s.summary_fails = f;
                    break;
                }
            }
        }
    }
    out
}

#[test]
fn checklist_dumps_count_test_cases_as_checklist_does() {
    for name in CHECKLIST {
        let path = fixture(&format!("checklist/{name}.json"));
        let found = detection(&path);
        assert_eq!(found.format, Some(Format::CheckList), "{name}");
        assert_eq!(found.records, None);
        let (report, records) = convert(&path, Format::CheckList);
        let stats = checklist_stats(name);

        // Group the records by test and test case: a test case fails when
        // any of its examples fails, as CheckList aggregates them.
        let mut cases: BTreeMap<(String, u64), bool> = BTreeMap::new();
        let mut failures = 0;
        for r in &records {
            let c = &r["checklist"];
            let key = (
                c["test"].as_str().unwrap().to_string(),
                c["testcase"].as_u64().unwrap(),
            );
            let failed = r["passed"] == json!(false);
            *cases.entry(key).or_default() |= failed;
            let s = &stats[c["test"].as_str().unwrap()];
            assert_eq!(c["type"], s.kind.to_uppercase());
            let d = derive(&map_record(r.clone()).expect("a native record"));
            assert_eq!(d.status.is_failure(), failed, "{r}");
            failures += usize::from(failed);
            if s.kind == "mft" {
                assert_eq!(r["transformation"], "unpaired");
                assert_eq!(r["capability"], s.capability.as_str());
            } else {
                assert_eq!(r["transformation"], c["test"]);
                assert_eq!(r["family"], s.capability.as_str());
                let kind = if s.kind == "inv" {
                    "prediction-invariant"
                } else {
                    "directional"
                };
                assert_eq!(r["expectation"]["kind"], kind);
                assert_ne!(r["source"]["question"], r["variant"]["question"]);
                assert_eq!(r["case_id"], r["source"]["question"]);
            }
        }
        assert_eq!(report.failures, failures);
        for (test, s) in &stats {
            let listed: Vec<bool> = cases
                .iter()
                .filter(|((t, _), _)| t == test)
                .map(|(_, failed)| *failed)
                .collect();
            let failed = listed.iter().filter(|f| **f).count() as u64;
            assert_eq!(failed, s.nfailed, "{name} / {test}: failed test cases");
            assert_eq!(listed.len() as u64 - failed, s.npassed, "{name} / {test}");
            // The text CheckList printed agrees.
            assert_eq!(s.summary_fails, failed, "{name} / {test}: summary fails");
            assert_eq!(s.summary_cases, listed.len() as u64 + s.nfiltered);
            assert_eq!(
                s.summary_after_filtering.is_some(),
                s.nfiltered > 0,
                "{name} / {test}"
            );
        }
        let filtered: u64 = stats.values().map(|s| s.nfiltered).sum();
        let notes: Vec<&String> = report
            .warnings
            .iter()
            .filter(|w| w.contains("filtered out"))
            .collect();
        assert_eq!(
            notes.len(),
            usize::from(filtered > 0),
            "{:?}",
            report.warnings
        );
        assert_eq!(report.warnings.len(), notes.len(), "{:?}", report.warnings);
    }
}

#[test]
fn the_viewers_sample_sizes_give_one_record_per_test_case() {
    // sentiment-brittle is dumped as CheckList's viewer asks for it: one
    // example per MFT test case, the base and the worst variant per INV/DIR
    // one. Its pass/fail counts are CheckList's stats, record for record.
    let stats = checklist_stats("sentiment-brittle");
    let (report, _) = convert(
        &fixture("checklist/sentiment-brittle.json"),
        Format::CheckList,
    );
    let sum = |f: fn(&Stats) -> u64, mft: bool| -> usize {
        stats
            .values()
            .filter(|s| (s.kind == "mft") == mft)
            .map(f)
            .sum::<u64>() as usize
    };
    let nfailed: usize = sum(|s| s.nfailed, true) + sum(|s| s.nfailed, false);
    assert_eq!(report.failures, nfailed);
    assert_eq!(report.unpaired, sum(|s| s.nfailed + s.npassed, true));
    assert_eq!(report.pairs, sum(|s| s.nfailed + s.npassed, false));
    let out = summary(&fixture("checklist/sentiment-brittle.json"), &[]);
    let head = out.lines().next().unwrap_or_default();
    assert!(
        head.contains(&pairs_and_failures(report.records, nfailed)),
        "{head}"
    );
    // The transformations are the test names.
    for (test, s) in &stats {
        if s.kind != "mft" {
            assert!(out.contains(test.as_str()), "{test}: {out}");
        }
    }

    // sentiment-negation holds every example: more pairs than test cases.
    let stats = checklist_stats("sentiment-negation");
    let (report, _) = convert(
        &fixture("checklist/sentiment-negation.json"),
        Format::CheckList,
    );
    let cases: u64 = stats
        .values()
        .filter(|s| s.kind != "mft")
        .map(|s| s.nfailed + s.npassed)
        .sum();
    assert!(report.pairs as u64 > cases, "{} pairs", report.pairs);
}

#[test]
fn a_checklist_pair_shows_both_predictions_and_why_it_failed() {
    let (_, records) = convert(
        &fixture("checklist/sentiment-brittle.json"),
        Format::CheckList,
    );
    let typo = records
        .iter()
        .find(|r| r["variant_id"] == "The food was goood.")
        .expect("the typo pair");
    assert_eq!(typo["case_id"], "The food was good.");
    assert_eq!(typo["transformation"], "typos");
    assert_eq!(typo["family"], "Robustness");
    assert_eq!(typo["passed"], false);
    assert_eq!(
        (&typo["source"]["decision"], &typo["variant"]["decision"]),
        (&json!("1"), &json!("0"))
    );
    assert_eq!(
        typo["reasons"],
        json!([
            "The prediction changed from 1 (conf 0.7) to 0 (conf 0.5); an INV test expects the same prediction."
        ])
    );
    let d = derive(&map_record(typo.clone()).unwrap());
    assert_eq!(d.status.name(), "fail");
    assert_eq!(d.validity.code().name(), "valid");
    assert_eq!(d.transformation.name, "typos");
    assert!(!d.transformation.inferred);

    // An MFT example is a result of its own: expected label against prediction.
    let mft = records
        .iter()
        .find(|r| r["variant_id"] == "I don't love this flight.")
        .expect("the negation example");
    assert_eq!(mft["transformation"], "unpaired");
    assert_eq!(mft["label"], "negated positives");
    assert_eq!(mft["source"]["state"]["answer"], 0);
    assert_eq!(mft["variant"]["state"]["answer"], "1");
    assert_eq!(
        mft["reasons"],
        json!(["The prediction is 1 (conf 0.7); the MFT test expects 0."])
    );
}

#[test]
fn checklists_summary_text_opens_as_its_failures_with_its_counts() {
    for name in CHECKLIST {
        let path = fixture(&format!("checklist/{name}.summary.txt"));
        assert_eq!(detection(&path).format, Some(Format::CheckList), "{name}");
        let (report, records) = convert(&path, Format::CheckList);
        let stats = checklist_stats(name);
        // Every printed example is a failure; the counts are notes.
        assert!(records.iter().all(|r| r["passed"] == false));
        assert_eq!(report.failures, records.len());
        for (test, s) in &stats {
            let judged = s.nfailed + s.npassed;
            let note = format!(
                "test '{test}': CheckList judged {judged} test cases and {} failed",
                s.summary_fails
            );
            assert!(
                report.warnings.iter().any(|w| w.starts_with(&note)),
                "{note}: {:?}",
                report.warnings
            );
        }
    }
    let (_, records) = convert(
        &fixture("checklist/sentiment-brittle.summary.txt"),
        Format::CheckList,
    );
    let typo = records
        .iter()
        .find(|r| r["variant_id"] == "The food was goood.")
        .expect("the printed typo failure");
    assert_eq!(typo["case_id"], "The food was good.");
    assert_eq!(typo["transformation"], "typos");
    assert_eq!(typo["family"], "Robustness");
    assert_eq!(
        (&typo["source"]["decision"], &typo["variant"]["decision"]),
        (&json!("0.7"), &json!("0.5"))
    );
    let mft = records
        .iter()
        .find(|r| r["variant_id"] == "An amazing trip.")
        .expect("the printed MFT failure");
    assert_eq!(mft["transformation"], "unpaired");
    assert_eq!(mft["capability"], "Vocabulary");
    // Three classes print three probabilities before the text.
    let (_, records) = convert(
        &fixture("checklist/support-brittle.summary.txt"),
        Format::CheckList,
    );
    assert!(
        records
            .iter()
            .any(|r| r["variant_id"] == "The app crahses on start."
                && r["variant"]["decision"] == "0.2 0.2 0.6"),
        "{records:?}"
    );
}

#[test]
fn checklist_input_that_is_not_checklists_is_refused_with_the_file_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("tests.json");
    std::fs::write(
        &path,
        r#"{"tests": [{"name": "t", "type": "xyz", "testcases": []}]}"#,
    )
    .expect("write");
    let err = formats::convert(&path, Format::CheckList, &mut Vec::new())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&path.display().to_string()) && err.contains("no CheckList test cases"),
        "{err}"
    );
    // Opened without --from, it is not taken for CheckList and says what was tried.
    let out = run(&["summary", "tests.json"], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("  - checklist: the JSON holds no CheckList tests"),
        "{stderr}"
    );
    let out = run(
        &["summary", "--from", "checklist", "tests.json"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("tests.json: no CheckList test cases"),
        "{stderr}"
    );
}

// ------------------------------------------------------------ JSON arrays

#[test]
fn multivons_validations_json_array_is_detected() {
    let mut converted = Vec::new();
    for (file, at) in [
        ("validations.json", Some(RecordsAt::Array)),
        ("validations-indented.json", Some(RecordsAt::Array)),
        // A document that holds them: multivon's own sniff finds its schema.
        ("validations-wrapped.json", None),
    ] {
        let path = fixture(&format!("multivon/{file}"));
        let found = detection(&path);
        assert_eq!(found.format, Some(Format::Multivon), "{file}");
        assert_eq!(found.records, at, "{file}");
        let (report, records) = convert(&path, Format::Multivon);
        assert_eq!(report.pairs, 6, "{file}");
        let mut statuses = BTreeMap::new();
        for r in &records {
            let d = derive(&map_record(r.clone()).unwrap());
            *statuses.entry(d.status.name()).or_insert(0) += 1;
        }
        assert_eq!(
            statuses,
            BTreeMap::from([("invalid", 2), ("unchecked", 4)]),
            "{file}"
        );
        let head = summary(&path, &[]);
        assert!(
            head.lines()
                .next()
                .unwrap_or_default()
                .contains(&pairs_and_failures(6, 2)),
            "{file}: {head}"
        );
        converted.push(records);
    }
    assert_eq!(converted[0], converted[1]);
    assert_eq!(converted[0], converted[2]);
}

/// The lines of a JSONL fixture as JSON values.
fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("fixture")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

#[test]
fn json_documents_holding_native_records_open_as_their_lines() {
    let bare = root().join("sample-runs/bare-camelcase.jsonl");
    let rows = jsonl(&bare);
    let dir = tempfile::tempdir().expect("temp dir");
    let array = dir.path().join("pairs.json");
    std::fs::write(&array, serde_json::to_string_pretty(&rows).unwrap()).unwrap();
    let wrapped = dir.path().join("wrapped.json");
    let doc = json!({"runner": "runInvariantSensitivityCase", "results": rows});
    std::fs::write(&wrapped, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    assert_eq!(
        detection(&array).records.map(|r| (r, Format::Native)),
        Some((RecordsAt::Array, Format::Native))
    );
    let found = detection(&wrapped);
    assert_eq!(found.format, Some(Format::Native));
    assert_eq!(found.records, Some(RecordsAt::Member("results".into())));
    let native = summary(&bare, &[]);
    let native_head = native.lines().next().unwrap().split_once(':').unwrap().1;
    for p in [&array, &wrapped] {
        let out = summary(p, &[]);
        assert_eq!(
            out.lines().next().unwrap().split_once(':').unwrap().1,
            native_head
        );
        assert!(
            native_head.contains("12 pairs, 7 failures"),
            "{native_head}"
        );
        // --from native reads the same document the same way.
        let out = summary(p, &["--from", "native"]);
        assert_eq!(
            out.lines().next().unwrap().split_once(':').unwrap().1,
            native_head
        );
    }
}

#[test]
fn json_arrays_of_trial_rows_convert_as_the_rows_do() {
    let jsonl_path = fixture("context-probe/demo-results.jsonl");
    let dir = tempfile::tempdir().expect("temp dir");
    let array = dir.path().join("trials.json");
    std::fs::write(&array, serde_json::to_string(&jsonl(&jsonl_path)).unwrap()).unwrap();
    let found = detection(&array);
    assert_eq!(found.format, Some(Format::ContextProbe));
    assert_eq!(found.records, Some(RecordsAt::Array));
    let (_, from_lines) = convert(&jsonl_path, Format::ContextProbe);
    let (_, from_array) = convert(&array, Format::ContextProbe);
    assert_eq!(from_lines, from_array);

    // An array of objects no format knows is still not detected.
    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"[{"a": 1}, {"a": 2}]"#).unwrap();
    let found = detection(&other);
    assert_eq!((found.format, found.records), (None, None));
}

// ------------------------------------------------------------ bare rows

#[test]
fn the_seed_runners_bare_rows_are_named_from_their_variant_ids() {
    let bare = root().join("sample-runs/bare-camelcase.jsonl");
    let by_transformation = summary(&bare, &["--by", "transformation"]);
    for name in [
        "paraphrase",
        "typo",
        "add-irrelevant-field",
        "concise-phrasing",
        "explicit-scope",
    ] {
        assert!(
            by_transformation.contains(name),
            "{name}: {by_transformation}"
        );
    }
    assert!(
        !by_transformation.contains("not recorded"),
        "{by_transformation}"
    );
    let by_family = summary(&bare, &["--by", "family"]);
    assert!(
        by_family.contains("question") && by_family.contains("state-noise"),
        "{by_family}"
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let p = bare.to_string_lossy();
    let out = run(&["export", "--format", "json", "--all", &p], dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON export");
    let pairs = doc["pairs"].as_array().expect("pairs");
    let pair = |case: &str, variant: &str| {
        pairs
            .iter()
            .find(|p| p["case_id"] == case && p["variant_id"] == variant)
            .unwrap_or_else(|| panic!("{case} / {variant}"))
    };
    // A source 0.01 from the threshold explains a minor shift, not Δp
    // −0.39 past the 0.1 bound the runner names: the family decides.
    let noise = pair("checkout-outage-001", "irrelevant-ui-metadata");
    assert_eq!(noise["transformation"], "add-irrelevant-field");
    assert_eq!(noise["transformation_inferred"], true);
    assert_eq!(noise["family"], "state-noise");
    assert_eq!(noise["suggestion"]["category"], "distractor");
    // Δp −0.02 flipping the route there is boundary sensitivity.
    let typo = pair("checkout-outage-001", "question-typo");
    assert_eq!(typo["suggestion"]["category"], "boundary");
    let trace = pair("api-rate-limiting-008", "irrelevant-request-trace");
    assert_eq!(trace["suggestion"]["category"], "distractor");
    let concise = pair("api-rate-limiting-008", "concise-phrasing");
    assert_eq!(concise["family"], "question");
    assert_eq!(concise["suggestion"]["category"], "ambiguous-contract");
}

// ------------------------------------------------------------ the viewer

#[path = "common/mod.rs"]
mod common;

#[test]
fn a_checklist_dump_opens_in_the_viewer_with_both_predictions() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(
        fixture("checklist/sentiment-brittle.json"),
        dir.path().join("checklist.json"),
    )
    .expect("copy the fixture");
    let mut t = common::Tui::spawn(
        &["checklist.json", "--reviewer", "tester"],
        140,
        60,
        dir.path(),
        &[],
    );
    // The status bar names the tool; the note is the filtered test case.
    t.wait_for("checklist.json · checklist · 24 pairs · 8 failures");
    t.wait_for("1 note");
    t.send("/");
    t.send("goood\r");
    t.wait_for("1 pairs match");
    for shown in [
        "family Robustness · transformation typos",
        "model brittle_sentiment",
        "decision 1 → 0  CHANGED",
        "prediction-invariant",
        "The prediction changed from 1 (conf 0.7) to 0 (conf 0.5)",
        "validity valid",
    ] {
        t.wait_for(shown);
    }
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
}

#[test]
fn a_bare_rows_inferred_names_are_marked_in_the_viewer() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(
        root().join("sample-runs/bare-camelcase.jsonl"),
        dir.path().join("run.jsonl"),
    )
    .expect("copy the sample");
    let mut t = common::Tui::spawn(
        &["run.jsonl", "--reviewer", "tester"],
        140,
        45,
        dir.path(),
        &[],
    );
    t.wait_for("12 pairs · 7 failures");
    t.send("/");
    t.send("irrelevant-ui-metadata\r");
    t.wait_for("1 pairs match");
    t.wait_for(
        "family state-noise (inferred from the variant id) · transformation add-irrelevant-field (inferred from the variant id)",
    );
    t.wait_for("suggested distractor — rule 4: no family recorded; inferred state-noise");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
}
