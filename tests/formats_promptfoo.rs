//! promptfoo results read the way promptfoo means them, against files
//! written by promptfoo 0.121.20 (`tests/fixtures/formats/promptfoo/make.sh`):
//! rows pair within their column (`promptIdx`) and repetition through the
//! test metadata, whatever order they completed in; the provider is the
//! model; assertion results are the reasons; the CSV, YAML and XML exports
//! are refused.
//!
//! Row counts and verdicts are checked against the file's own
//! `results.stats` (successes, failures, errors).

mod common;

use common::run_triage as triage;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use triage::core::derive::derive;
use triage::core::formats::{self, Format};
use triage::core::record::map_record;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/formats/promptfoo")
        .join(name)
}

/// promptfoo's own tally of a run: (successes, failures, errors).
fn stats(results_json: &str) -> (usize, usize, usize) {
    let doc: Value =
        serde_json::from_slice(&std::fs::read(fixture(results_json)).expect("fixture"))
            .expect("JSON");
    let s = &doc["results"]["stats"];
    let n = |k: &str| s[k].as_u64().expect("stat") as usize;
    (n("successes"), n("failures"), n("errors"))
}

struct Converted {
    report: formats::ConvertReport,
    records: Vec<Value>,
}

fn convert(name: &str) -> Converted {
    let mut out = Vec::new();
    let report = formats::convert(&fixture(name), Format::Promptfoo, &mut out).expect("convert");
    let records = String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    Converted { report, records }
}

/// Every result row the records hold, once each, by (promptIdx, testIdx):
/// "success", "failure" or "error" as the converted side says it.
fn row_verdicts(records: &[Value]) -> BTreeMap<(u64, u64), &'static str> {
    let mut out = BTreeMap::new();
    for r in records {
        let sides: Vec<(&Value, &Value)> = if r["transformation"] == formats::UNPAIRED {
            vec![(&r["origin"], &r["variant"])]
        } else {
            vec![
                (&r["origin"]["base"], &r["source"]),
                (&r["origin"]["variant"], &r["variant"]),
            ]
        };
        for (raw, side) in sides {
            let key = (
                raw["promptIdx"].as_u64().expect("promptIdx"),
                raw["testIdx"].as_u64().expect("testIdx"),
            );
            let verdict = if side["outcome"] == "error" {
                "error"
            } else if r["transformation"] == formats::UNPAIRED {
                if r["passed"] == true {
                    "success"
                } else {
                    "failure"
                }
            } else if side["decision"] == "pass" {
                "success"
            } else {
                "failure"
            };
            out.insert(key, verdict);
        }
    }
    out
}

fn tally(v: &BTreeMap<(u64, u64), &'static str>) -> (usize, usize, usize) {
    let n = |w: &str| v.values().filter(|x| **x == w).count();
    (n("success"), n("failure"), n("error"))
}

fn statuses(records: &[Value]) -> BTreeMap<&'static str, usize> {
    let mut out = BTreeMap::new();
    for r in records {
        let d = derive(&map_record(r.clone()).expect("native record"));
        *out.entry(d.status.name()).or_default() += 1;
    }
    out
}

#[test]
fn two_providers_six_tests_three_bases_open_as_six_pairs() {
    let (ok, failed, errors) = stats("keyword/results.json");
    for name in ["keyword/results.json", "keyword/results.jsonl"] {
        let c = convert(name);
        assert_eq!(c.report.rows, ok + failed + errors, "{name}");
        assert_eq!(
            (c.report.pairs, c.report.unpaired),
            (6, 0),
            "{name}: {:?}",
            c.report.warnings
        );
        assert!(
            !c.report.warnings.iter().any(|w| w.contains("base_id")),
            "{:?}",
            c.report.warnings
        );
        // Every row is in a record, with promptfoo's own verdict.
        let rows = row_verdicts(&c.records);
        assert_eq!(rows.len(), c.report.rows);
        assert_eq!(tally(&rows), (ok, failed, errors), "{name}");
        // The keyword classifier misses the typo and the synonym; echo repeats the prompt.
        assert_eq!(
            statuses(&c.records),
            BTreeMap::from([("fail", 2), ("pass", 4)])
        );
        for r in &c.records {
            let (b, v) = (&r["origin"]["base"], &r["origin"]["variant"]);
            assert_eq!(b["promptIdx"], v["promptIdx"], "{name}: one column");
            assert_eq!(
                r["model_id"],
                if b["promptIdx"] == 0 {
                    "keyword"
                } else {
                    "echo"
                }
            );
        }
        // The base is found by its case_id, or by its description when it has no metadata.
        let synonym = c
            .records
            .iter()
            .find(|r| r["variant_id"] == "breach-synonym @ keyword / prompt 0")
            .expect("breach synonym");
        assert_eq!(synonym["case_id"], "breach");
        assert_eq!(
            synonym["origin"]["base"]["testCase"]["description"],
            "breach"
        );
        assert_eq!(synonym["source"]["output"], "urgent");
        assert_eq!(synonym["variant"]["output"], "routine");
        assert_eq!(synonym["variant"]["expected"], "urgent");
        let typo = c
            .records
            .iter()
            .find(|r| r["variant_id"] == "outage-typo @ keyword / prompt 0")
            .expect("typo");
        assert_eq!(typo["case_id"], "outage");
        assert_eq!(
            (&typo["family"], &typo["transformation"]),
            (&Value::from("question"), &Value::from("typo"))
        );
    }
}

#[test]
fn completion_order_does_not_change_the_pairs() {
    let path = fixture("keyword/results.json");
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("fixture")).expect("JSON");
    let rows = doc["results"]["results"].as_array_mut().expect("results");
    rows.reverse();
    let dir = tempfile::tempdir().expect("temp");
    let reversed = dir.path().join("results.json");
    std::fs::write(&reversed, doc.to_string()).expect("write");
    let mut a = Vec::new();
    formats::convert(&path, Format::Promptfoo, &mut a).expect("convert");
    let mut b = Vec::new();
    formats::convert(&reversed, Format::Promptfoo, &mut b).expect("convert");
    assert_eq!(String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap());
}

#[test]
fn prompts_providers_and_repetitions_each_pair_in_their_own_column() {
    let (ok, failed, errors) = stats("columns/results.json");
    for name in ["columns/results.json", "columns/results.jsonl"] {
        let c = convert(name);
        assert_eq!(c.report.rows, ok + failed + errors);
        let rows = row_verdicts(&c.records);
        assert_eq!(rows.len(), c.report.rows, "{name}: every row once");
        assert_eq!(tally(&rows), (ok, failed, errors), "{name}");
        // 2 prompts × 2 providers × 2 repetitions, each with 3 variants and
        // one test that is nobody's variant.
        assert_eq!((c.report.pairs, c.report.unpaired), (24, 8), "{name}");
        assert!(
            !c.report
                .warnings
                .iter()
                .any(|w| w.contains("repeat the id")),
            "{:?}",
            c.report.warnings
        );
        let mut reps = BTreeSet::new();
        for r in c
            .records
            .iter()
            .filter(|r| r["transformation"] != formats::UNPAIRED)
        {
            let (b, v) = (&r["origin"]["base"], &r["origin"]["variant"]);
            assert_eq!(b["promptIdx"], v["promptIdx"]);
            // Repetitions pair in test order: the first base with the first variant.
            let rank = |raw: &Value| raw["testIdx"].as_u64().expect("testIdx") % 2;
            assert_eq!(rank(b), rank(v), "{name}");
            assert_eq!(r["repetition"].as_u64(), Some(rank(v)));
            reps.insert(r["repetition"].as_u64());
        }
        assert_eq!(reps.len(), 2);
        // Each column is named by its provider and its prompt's label,
        // not by promptIdx (which runs on across the providers: 0 to 3).
        let columns: BTreeSet<&str> = c
            .records
            .iter()
            .filter_map(|r| r["variant_id"].as_str()?.split_once(" @ "))
            .map(|(_, column)| column)
            .collect();
        assert_eq!(
            columns.into_iter().collect::<Vec<_>>(),
            [
                "echo / instructed",
                "echo / plain",
                "keyword-json / instructed",
                "keyword-json / plain"
            ],
            "{name}"
        );
        // The keyword provider throws on one test: a service error in both
        // of its prompt columns and both repetitions.
        let st = statuses(&c.records);
        assert_eq!(st.get("error"), Some(&errors), "{st:?}");
        let err = c
            .records
            .iter()
            .find(|r| r["variant"]["outcome"] == "error")
            .expect("error pair");
        assert!(
            err["variant"]["error"]
                .as_str()
                .is_some_and(|e| e.contains("keyword classifier crashed") && !e.contains('\n')),
            "{}",
            err["variant"]["error"]
        );
    }
}

#[test]
fn reasons_are_the_failed_assertions_and_the_output_is_what_is_compared() {
    let c = convert("columns/results.json");
    let typo = c
        .records
        .iter()
        .find(|r| r["variant_id"] == "outage-typo @ keyword-json / plain" && r["repetition"] == 0)
        .expect("typo");
    let reasons: Vec<&str> = typo["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        reasons,
        [
            "The verdict changed from pass to fail.",
            "Variant: label (javascript): Custom function returned false",
            "Variant: mentions (icontains): Expected output to contain \"urgent\"",
        ]
    );
    assert_eq!(typo["variant"]["scores"]["named"]["label"], 0);
    // echo's output makes the javascript assertion throw: the reason is its
    // first line, not the stack trace.
    for r in &c.records {
        for reason in r["reasons"].as_array().expect("reasons") {
            let reason = reason.as_str().expect("text");
            assert!(
                !reason.contains('\n') && !reason.contains("Stack Trace"),
                "{reason}"
            );
        }
        // The expected answer is never an assertion's code.
        for side in ["source", "variant"] {
            assert!(
                !r[side]["expected"].to_string().contains("JSON.parse"),
                "{}",
                r[side]["expected"]
            );
        }
    }
    // A test with only an equals assertion: the rendered value is the expected answer.
    let greeting = c
        .records
        .iter()
        .find(|r| r["variant_id"] == "Greeting @ keyword-json / plain" && r["repetition"] == 0)
        .expect("greeting");
    assert_eq!(greeting["transformation"], formats::UNPAIRED);
    assert_eq!(greeting["source"]["state"]["answer"], "routine");
    assert_eq!(
        greeting["variant"]["state"]["answer"],
        r#"{"label": "routine", "keywords": []}"#
    );
}

#[test]
fn the_provider_is_the_model_so_summaries_split_by_it() {
    let file = fixture("keyword/results.json");
    let file = file.to_str().expect("path");
    for (model, want) in [
        ("keyword", ": 3 pairs, 2 failures,"),
        ("echo", ": 3 pairs, 0 failures,"),
    ] {
        let query = format!("model:{model}");
        let (code, out, err) = triage(&["summary", "--filter", &query, file]);
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains(want), "{model}: {out}");
    }
}

#[test]
fn csv_yaml_and_xml_exports_are_refused_with_the_file_to_open() {
    for ext in ["csv", "yaml", "xml"] {
        let name = format!("keyword/results.{ext}");
        let path = fixture(&name);
        let head = std::fs::read(&path).expect("fixture");
        let n = head.len().min(formats::DETECT_HEAD_BYTES);
        assert_eq!(
            formats::detect(&head[..n]).format,
            Some(Format::Promptfoo),
            "{name}"
        );
        let e = formats::convert(&path, Format::Promptfoo, &mut Vec::new()).unwrap_err();
        assert!(e.is_refusal(), "{name}: {e}");
        assert!(
            e.to_string().contains("results.json (or results.jsonl)"),
            "{e}"
        );
        for sub in ["summary", "check"] {
            let (code, out, err) = triage(&[sub, path.to_str().expect("path")]);
            assert_eq!(code, Some(2), "{sub} {name}: {out}");
            assert!(out.is_empty(), "{out}");
            assert_eq!(err.trim().lines().count(), 1, "{err}");
            assert!(
                err.contains(&format!("promptfoo's {}", ext.to_uppercase()))
                    && err.contains("results.json"),
                "{err}"
            );
            assert!(!err.contains("unreadable"), "{err}");
        }
    }
    // Another tool's CSV is still no format at all.
    let other =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats/unknown/results.csv");
    let head = std::fs::read(other).expect("fixture");
    assert_eq!(formats::detect(&head).format, None);
}

#[test]
fn the_viewer_shows_outputs_verdicts_and_reasons() {
    let dir = tempfile::tempdir().expect("temp");
    std::fs::copy(
        fixture("keyword/results.json"),
        dir.path().join("results.json"),
    )
    .expect("copy");
    let mut t = common::Tui::spawn(&["results.json"], 120, 60, dir.path(), &[]);
    t.wait_for("outage-typo @ keyword / prompt 0");
    t.wait_for("── Answers");
    t.wait_for("decision pass → fail");
    t.wait_for("target   urgent");
    t.wait_for("│ routine");
    t.wait_for("Variant: icontains: Expected output to contain \"urgent\"");
    t.send("q");
    t.wait_exit();
}

#[test]
fn the_fixtures_open_through_the_index_without_problems() {
    for name in [
        "keyword/results.json",
        "keyword/results.jsonl",
        "columns/results.json",
        "columns/results.jsonl",
    ] {
        let idx = common::index_foreign(&fixture(name), Format::Promptfoo);
        let c = convert(name);
        assert_eq!(idx.rows.len(), c.records.len(), "{name}");
        assert_eq!(idx.failures, c.report.failures, "{name}");
    }
}

#[test]
fn from_chooses_the_input_format_and_format_only_ever_names_an_output() {
    let file = fixture("keyword/results.json");
    let file = file.to_str().expect("path");
    let dir = tempfile::tempdir().expect("temp");
    let out = dir.path().join("out.jsonl");
    let out = out.to_str().expect("path");
    // Every command that reads runs takes --from.
    for args in [
        vec!["summary", "--from", "promptfoo", file],
        vec!["export", "--from", "promptfoo", "--format", "csv", file],
        vec!["check", "--from", "promptfoo", file],
        vec!["apply", "--from", "promptfoo", file, "-o", out],
    ] {
        let (code, stdout, err) = triage(&args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(!stdout.is_empty(), "{args:?}");
    }
    assert!(std::fs::metadata(out).is_ok_and(|m| m.len() > 0));
    // Read as native, the same file is no pairs at all: --from was obeyed.
    let (code, _, err) = triage(&["check", "--from", "native", file]);
    assert_eq!(code, Some(2), "{err}");
    // Where --format once chose the input, it is refused in one line that
    // names the --from to use instead, and nothing is written.
    let refused = dir.path().join("refused.jsonl");
    let refused = refused.to_str().expect("path");
    for args in [
        vec!["--format", "promptfoo", file],
        vec!["check", "--format", "promptfoo", file],
        vec!["apply", "--format", "promptfoo", file, "-o", refused],
    ] {
        let (code, stdout, err) = triage(&args);
        assert_eq!(code, Some(2), "{args:?}: {stdout}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("--format names an output format") && err.contains("--from promptfoo"),
            "{args:?}: {err}"
        );
    }
    assert!(!Path::new(refused).exists());
    // An unknown name after --format is not echoed back as a --from to use.
    let (code, _, err) = triage(&["check", "--format", "csv", file]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--from NAME (native, context-probe"), "{err}");
    // On export and summary --format is the output, and an input format is not one.
    let (code, _, err) = triage(&["summary", "--format", "promptfoo", file]);
    assert_eq!(code, Some(2));
    assert!(err.contains("invalid value 'promptfoo'"), "{err}");
}

#[test]
fn summary_by_model_splits_the_two_providers() {
    let file = fixture("keyword/results.json");
    let file = file.to_str().expect("path");
    // promptfoo's own tally per provider, from the rows' success flags.
    let doc: Value = serde_json::from_slice(&std::fs::read(file).expect("fixture")).expect("JSON");
    let mut rows: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for r in doc["results"]["results"].as_array().expect("results") {
        let label = [&r["provider"]["label"], &r["provider"]["id"]]
            .into_iter()
            .filter_map(Value::as_str)
            .find(|s| !s.is_empty())
            .expect("provider")
            .to_string();
        let e = rows.entry(label).or_default();
        e.0 += 1;
        e.1 += usize::from(r["success"] != true);
    }
    assert_eq!(
        rows,
        BTreeMap::from([
            ("echo".to_string(), (6, 0)),
            ("keyword".to_string(), (6, 2))
        ])
    );

    let (code, out, err) = triage(&["summary", "--by", "model", "--format", "json", file]);
    assert_eq!(code, Some(0), "{err}");
    let s: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(s["by"], "model");
    let groups: BTreeMap<&str, (u64, u64)> = s["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| {
            (
                g["name"].as_str().expect("name"),
                (
                    g["pairs"].as_u64().expect("pairs"),
                    g["failures"].as_u64().expect("failures"),
                ),
            )
        })
        .collect();
    // Six rows per provider are three pairs each; the keyword classifier's
    // two failed rows are variants, so two of its pairs fail.
    assert_eq!(
        groups,
        BTreeMap::from([("echo", (3, 0)), ("keyword", (3, 2))])
    );

    let (code, out, _) = triage(&["summary", "--by", "model", file]);
    assert_eq!(code, Some(0));
    let table: Vec<&str> = out.lines().skip_while(|l| *l != "Pairs").collect();
    assert!(table[1].starts_with("model "), "{out}");
    assert!(
        table[2].starts_with("keyword ") && table[2].contains(" 2/3 "),
        "{out}"
    );
    assert!(
        table[3].starts_with("echo ") && table[3].contains(" 0/3 "),
        "{out}"
    );
    // check gates each provider too.
    let (code, out, _) = triage(&[
        "check",
        "--by",
        "model",
        "--max-failures",
        "5",
        "--max-failure-rate",
        "0.9",
        file,
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("by model: 1 of 2 models fail"), "{out}");
}

#[test]
fn a_large_results_file_shows_progress_while_it_is_read() {
    // The keyword run's results, repeated under new test indexes and ids
    // until the file takes a while to read.
    let doc: Value =
        serde_json::from_slice(&std::fs::read(fixture("keyword/results.json")).expect("fixture"))
            .expect("JSON");
    let rows = doc["results"]["results"].as_array().expect("rows");
    let mut big = doc.clone();
    let mut all = Vec::new();
    for n in 0..150u64 {
        for r in rows {
            let mut r = r.clone();
            r["testIdx"] = (r["testIdx"].as_u64().expect("testIdx") + 6 * n).into();
            let meta = &mut r["testCase"]["metadata"];
            for k in ["case_id", "base_id"] {
                if let Some(id) = meta[k].as_str() {
                    meta[k] = format!("{id}-{n}").into();
                }
            }
            let d = r["testCase"]["description"].as_str().expect("description");
            r["testCase"]["description"] = format!("{d}-{n}").into();
            all.push(r);
        }
    }
    big["results"]["results"] = Value::Array(all);
    let dir = tempfile::tempdir().expect("temp");
    std::fs::write(
        dir.path().join("results.json"),
        serde_json::to_vec(&big).expect("JSON"),
    )
    .expect("write");
    // The bar is shown at once (not after 300 ms), however fast the machine reads.
    let mut t = common::Tui::spawn(
        &["summary", "--format", "json", "results.json"],
        120,
        40,
        dir.path(),
        &[("TRIAGE_PROGRESS_AFTER_MS", "0")],
    );
    assert_eq!(t.wait_exit(), 0);
    let out = String::from_utf8_lossy(&t.output_bytes()).into_owned();
    assert!(out.contains("reading"), "no progress bar:\n{out}");
    assert!(out.contains("\"pairs\": 900"), "{out}");
}

/// `scenarios/`: promptfoo's `scenarios` run the same two tests (metadata
/// and all) once for each configuration's vars, on two providers. Each
/// variant pairs with the base of its own configuration (the one sharing
/// its `place`), every result row is held once with promptfoo's own
/// verdict, and the counterfactual whose verdict changed is judged by its
/// checks, not by the change.
#[test]
fn scenarios_pair_within_their_configuration() {
    let c = convert("scenarios/results.json");
    let rows = row_verdicts(&c.records);
    assert_eq!(rows.len(), c.report.rows);
    assert_eq!(tally(&rows), stats("scenarios/results.json"));
    let typos: Vec<&Value> = c.records.iter().filter(|r| r["case_id"] == "net").collect();
    assert_eq!(typos.len(), 4, "two configurations on two providers");
    for r in &typos {
        let place = |side: &str| &r["origin"][side]["testCase"]["vars"]["place"];
        assert_eq!(place("base"), place("variant"), "{}", r["variant_id"]);
        assert_ne!(r["transformation"], formats::UNPAIRED);
    }
    assert!(
        c.report
            .warnings
            .iter()
            .any(|w| w.contains("shares the most vars"))
    );
    let changed: Vec<&Value> = c
        .records
        .iter()
        .filter(|r| r["relation"] == "counterfactual")
        .filter(|r| r["source"]["decision"] == "fail" && r["variant"]["decision"] == "pass")
        .collect();
    assert_eq!(changed.len(), 1, "pr-fire on the noisy provider");
    let reasons = changed[0]["reasons"].to_string();
    assert!(!reasons.contains("The verdict changed"), "{reasons}");
    assert!(reasons.contains("Base: parsed (javascript)"), "{reasons}");
}

/// The converted copy of another tool's file has no name: while the viewer
/// shows it, and after `kill -9`, the temporary folder holds nothing of it
/// (a named copy, with every output of the run in it, used to stay behind
/// when triage died by a signal or a broken pipe).
#[test]
fn a_converted_copy_leaves_nothing_in_the_temporary_folder() {
    let run = tempfile::tempdir().expect("run folder");
    let tmp = tempfile::tempdir().expect("temporary folder");
    std::fs::copy(
        fixture("keyword/results.json"),
        run.path().join("results.json"),
    )
    .expect("copy");
    let listed = || -> Vec<std::ffi::OsString> {
        std::fs::read_dir(tmp.path())
            .expect("the temporary folder")
            .map(|e| e.expect("entry").file_name())
            .collect()
    };
    let tmpdir = tmp.path().to_str().expect("path");
    let mut t = common::Tui::spawn(
        &["results.json"],
        120,
        40,
        run.path(),
        &[("TMPDIR", tmpdir)],
    );
    t.wait_for("outage-typo @ keyword / prompt 0");
    assert_eq!(listed(), Vec::<std::ffi::OsString>::new(), "while it runs");
    let pid = t.pid().expect("the viewer's pid").to_string();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    assert!(!t.wait_exit_status().success());
    assert_eq!(listed(), Vec::<std::ffi::OsString>::new(), "once killed");
}

#[test]
fn a_variant_whose_base_did_not_run_is_a_problem_that_strict_fails_on() {
    // The keyword run as `--filter-pattern` would leave it: the two
    // "Refund request" bases did not run, their polite variants did.
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(fixture("keyword/results.json")).expect("fixture"))
            .expect("JSON");
    let results = doc["results"]["results"].as_array_mut().expect("results");
    let before = results.len();
    results.retain(|r| r["testCase"]["description"] != "Refund request");
    assert_eq!(results.len(), before - 2);
    let dir = tempfile::tempdir().expect("temp");
    let file = dir.path().join("results.json");
    std::fs::write(&file, doc.to_string()).expect("write");
    let path = file.to_str().expect("path");

    let mut out = Vec::new();
    let report = formats::convert(&file, Format::Promptfoo, &mut out).expect("convert");
    assert_eq!(report.problems.len(), 2, "{:?}", report.problems);
    for p in &report.problems {
        assert!(
            p.message.starts_with(
                "the variant refund-polite names the base refund, which no row of its group has"
            ),
            "{p:?}"
        );
    }
    let (code, out, _) = triage(&["check", "--strict", path]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("FAIL  --strict  2 problems in the run"),
        "{out}"
    );
    // Without --strict the two unjudged variants fail no gate.
    let (code, out, _) = triage(&["check", path]);
    assert_eq!(code, Some(0), "{out}");
}
