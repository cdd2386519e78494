//! Inspect AI logs read the way Inspect means them, against logs written by
//! inspect-ai 0.3.285 itself (`tests/fixtures/formats/inspect/make_more.py`):
//! the verdict scorer, the other scorers as metrics, the model's answers,
//! variant metadata, epochs, errored samples and logs without samples.
//!
//! The numbers each test expects are read from the log's own summary
//! (`results.scores`, `results.total_samples`, `eval.config.epochs`)
//! wherever the log states them.

mod common;

use common::run_triage as triage;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use triage::core::derive::derive;
use triage::core::formats::{self, ConvertOptions, Format};
use triage::core::record::map_record;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/formats/inspect")
        .join(name)
}

/// The log as JSON (the `.json` fixtures only).
fn log(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(name)).expect("fixture")).expect("JSON log")
}

/// A metric of one scorer from the log's `results.scores`.
fn metric(log: &Value, scorer: &str, metric: &str) -> f64 {
    log["results"]["scores"]
        .as_array()
        .expect("results.scores")
        .iter()
        .find(|s| s["name"] == scorer)
        .unwrap_or_else(|| panic!("no scorer {scorer}"))["metrics"][metric]["value"]
        .as_f64()
        .expect("metric value")
}

fn scored_samples(log: &Value, scorer: &str) -> u64 {
    log["results"]["scores"]
        .as_array()
        .expect("results.scores")
        .iter()
        .find(|s| s["name"] == scorer)
        .expect("scorer")["scored_samples"]
        .as_u64()
        .expect("scored_samples")
}

fn epochs(log: &Value) -> u64 {
    log["eval"]["config"]["epochs"].as_u64().expect("epochs")
}

struct Converted {
    report: formats::ConvertReport,
    records: Vec<Value>,
}

fn convert_with(name: &str, scorer: Option<&str>) -> Result<Converted, formats::ConvertError> {
    let opts = ConvertOptions {
        scorer: scorer.map(str::to_string),
        ..ConvertOptions::default()
    };
    let mut out = Vec::new();
    let report = formats::convert_with(&fixture(name), Format::Inspect, &opts, &mut out)?;
    let records = String::from_utf8(out)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a converted line is JSON"))
        .collect();
    Ok(Converted { report, records })
}

fn convert(name: &str) -> Converted {
    convert_with(name, None).expect("convert")
}

/// Every sample side the records hold, once each: (epoch, sample id) →
/// the converted side.
fn sides(records: &[Value]) -> BTreeMap<(u64, String), Value> {
    let mut out = BTreeMap::new();
    for r in records {
        for (side, origin) in [("source", "base"), ("variant", "variant")] {
            let raw = &r["origin"][origin];
            let key = (
                raw["epoch"].as_u64().expect("epoch"),
                raw["id"].as_str().expect("id").to_string(),
            );
            out.insert(key, r[side].clone());
        }
    }
    out
}

/// Status names of the records, derived as the viewer derives them.
fn statuses(records: &[Value]) -> BTreeMap<&'static str, usize> {
    let mut out = BTreeMap::new();
    for r in records {
        let d = derive(&map_record(r.clone()).expect("native record"));
        *out.entry(d.status.name()).or_default() += 1;
    }
    out
}

#[test]
fn the_verdict_is_the_first_scorers_value_not_the_float_metric() {
    let log = log("urgency.json");
    let c = convert("urgency.json");
    let epochs = epochs(&log);
    // Inspect's own summary: answer accuracy over the scored samples, per epoch.
    let right = (metric(&log, "answer", "accuracy") * scored_samples(&log, "answer") as f64).round()
        as usize
        * epochs as usize;
    let sides = sides(&c.records);
    assert_eq!(
        sides.len(),
        log["samples"].as_array().expect("samples").len()
    );
    let passed = sides.values().filter(|s| s["verdict"] == "pass").count();
    let failed = sides.values().filter(|s| s["verdict"] == "fail").count();
    assert_eq!((passed, failed), (right, sides.len() - right));
    // 6 of 8 samples right is not every pair failing: one pair per variant
    // sample and epoch, of which the typo (its answer changed) and the drill
    // (a counterfactual whose answer did not) fail in each epoch.
    let variants = log["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .filter(|s| s["metadata"]["base_id"].is_string())
        .count();
    assert_eq!(c.report.pairs, variants);
    assert_eq!(c.report.unpaired, 0);
    assert_eq!(c.report.failures, 2 * epochs as usize);
    assert_eq!(
        statuses(&c.records),
        BTreeMap::from([("fail", 4), ("pass", 6)])
    );
    for r in &c.records {
        assert!(
            !r["reasons"].to_string().contains("confidence_on_target"),
            "a float scorer is a metric, not a failure: {}",
            r["reasons"]
        );
    }
    // The first scorer that gives verdicts needs no note when it is the only one.
    assert!(c.report.warnings.is_empty(), "{:?}", c.report.warnings);
}

#[test]
fn each_side_shows_the_models_answer_its_output_the_target_and_every_score() {
    let c = convert("urgency.json");
    let typo = c
        .records
        .iter()
        .find(|r| r["variant_id"] == "q1-typo" && r["repetition"] == 0)
        .expect("typo pair");
    for side in ["source", "variant"] {
        let s = &typo[side];
        assert_eq!(s["expected"], "urgent", "{side}: the target");
        assert!(
            s["output"].as_str().expect("output").contains("ANSWER:"),
            "{side}: the output text"
        );
        // The parsed answer is the decision: never a pass/fail word.
        assert_eq!(s["decision"], s["answer"], "{side}");
        assert_eq!(s["verdict_scorer"], "answer");
        let scores = s["scores"].as_object().expect("scores");
        assert_eq!(
            scores.keys().collect::<Vec<_>>(),
            ["answer", "confidence_on_target"]
        );
        assert!(scores["confidence_on_target"].is_f64());
    }
    assert_eq!(
        (&typo["source"]["answer"], &typo["variant"]["answer"]),
        (&Value::from("urgent"), &Value::from("routine"))
    );
    assert_eq!(typo["variant"]["scores"]["answer"], "I");
    let why = typo["reasons"].to_string();
    assert!(
        why.contains(r#"Variant: Scorer answer gave I for the answer \"routine\"."#),
        "{why}"
    );
}

#[test]
fn variant_metadata_is_the_transformation_family_and_relation() {
    let c = convert("urgency.json");
    // (An epoch is a repetition: the pair's id is the same in each.)
    let find = |id: &str, epoch: u64| {
        c.records
            .iter()
            .find(|r| r["variant_id"] == id && r["repetition"] == epoch - 1)
            .unwrap_or_else(|| panic!("{id}, epoch {epoch}"))
    };
    let typo = find("q1-typo", 2);
    assert_eq!(
        (&typo["case_id"], &typo["transformation"], &typo["family"]),
        (
            &Value::from("q1"),
            &Value::from("typo"),
            &Value::from("question")
        )
    );
    assert_eq!(typo["repetition"], 1);
    let drill = find("q3-drill", 1);
    assert_eq!(drill["transformation"], "drill-not-incident");
    assert_eq!(drill["family"], "evidence-contrast");
    assert_eq!(drill["expectation"]["kind"], "counterfactual");
    let d = derive(&map_record(drill.clone()).expect("record"));
    assert_eq!(d.transformation.name, "drill-not-incident");
    assert!(!d.transformation.inferred);
}

#[test]
fn the_eval_archive_reads_as_the_json_log() {
    let json = convert("urgency.json");
    let eval = convert("urgency.eval");
    let key = |records: &[Value]| -> Vec<String> {
        records
            .iter()
            .map(|r| {
                format!(
                    "{} {} {} {} {} {}",
                    r["variant_id"],
                    r["passed"],
                    r["reasons"],
                    r["variant"]["answer"],
                    r["variant"]["scores"],
                    r["transformation"]
                )
            })
            .collect()
    };
    assert_eq!(key(&eval.records), key(&json.records));
    assert_eq!(eval.report.failures, json.report.failures);
}

#[test]
fn several_scorers_the_first_gives_the_verdict_and_scorer_picks_another() {
    let log = log("scorers.json");
    let epochs = epochs(&log) as usize;
    let total = log["results"]["total_samples"].as_u64().expect("total") as usize;
    let completed = log["results"]["completed_samples"]
        .as_u64()
        .expect("completed") as usize;
    for (scorer, chosen) in [(None, "answer"), (Some("includes"), "includes")] {
        let c = convert_with("scorers.json", scorer).expect("convert");
        let sides = sides(&c.records);
        assert_eq!(sides.len(), total, "{chosen}");
        let right = (metric(&log, chosen, "accuracy") * scored_samples(&log, chosen) as f64).round()
            as usize
            * epochs;
        let passed = sides.values().filter(|s| s["verdict"] == "pass").count();
        assert_eq!(passed, right, "{chosen}");
        let errored = sides.values().filter(|s| s["outcome"] == "error").count();
        assert_eq!(errored, total - completed, "{chosen}");
        for s in sides.values() {
            if s["outcome"] != "error" {
                assert_eq!(s["verdict_scorer"], chosen);
                assert_eq!(s["scores"].as_object().expect("scores").len(), 3);
            }
        }
        let st = statuses(&c.records);
        // q4 errors in every epoch, so its variant's pair is a service error.
        assert_eq!(st.get("error"), Some(&epochs), "{chosen}: {st:?}");
        let notes = c.report.warnings.join("\n");
        if scorer.is_none() {
            // q1-typo's answer is wrong in every epoch; includes finds "urgent" in it anyway.
            assert_eq!(st.get("fail"), Some(&epochs), "{st:?}");
            assert!(
                notes.contains("verdicts come from scorer answer")
                    && notes.contains("--scorer includes"),
                "{notes}"
            );
        } else {
            assert_eq!(st.get("fail"), None, "{st:?}");
            assert!(notes.is_empty(), "{notes}");
        }
    }
    let err = |scorer: &str| {
        let e = convert_with("scorers.json", Some(scorer))
            .err()
            .expect("refused");
        assert!(e.is_refusal(), "{e}");
        e.to_string()
    };
    let float = err("confidence_on_target");
    assert!(
        float.contains("scorer confidence_on_target gives values such as 0.9, not verdicts")
            && float.contains("answer, includes"),
        "{float}"
    );
    let unknown = err("nope");
    assert!(
        unknown.contains("no scorer named nope")
            && unknown.contains("answer, includes, confidence_on_target"),
        "{unknown}"
    );
}

#[test]
fn a_log_without_samples_is_refused_with_what_it_holds() {
    for name in ["nosamples.json", "nosamples.eval"] {
        let e = convert_with(name, None).err().expect("refused");
        assert!(e.is_refusal(), "{name}: {e}");
        let msg = e.to_string();
        assert!(
            msg.contains(name)
                && msg.contains("no samples to pair")
                && msg.contains("--no-log-samples")
                && msg.contains("answer accuracy 0.75"),
            "{msg}"
        );
    }
}

#[test]
fn scorer_reaches_the_converter_from_every_subcommand() {
    let file = fixture("scorers.json");
    let file = file.to_str().expect("path");
    let (code, out, err) = triage(&["summary", file]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(": 12 pairs, 6 failures,"), "{out}");
    let (code, out, err) = triage(&["summary", "--scorer", "includes", file]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(": 12 pairs, 3 failures,"), "{out}");
    let (code, _, err) = triage(&[
        "check",
        "--scorer",
        "includes",
        file,
        "--max-failure-rate",
        "0.3",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = triage(&["check", file, "--max-failure-rate", "0.3"]);
    assert_eq!(code, Some(1), "{err}");
    let (code, out, err) = triage(&[
        "export", "--scorer", "includes", "--format", "csv", "--all", file,
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out.lines().skip(1).filter(|l| l.contains(",fail,")).count(),
        0
    );
    let dir = tempfile::tempdir().expect("temp");
    let out_path = dir.path().join("out.jsonl");
    let (code, _, err) = triage(&[
        "apply",
        "--scorer",
        "includes",
        file,
        "-o",
        out_path.to_str().expect("path"),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let written = std::fs::read_to_string(&out_path).expect("written");
    assert!(written.contains(r#""verdict_scorer":"includes""#));
    // A refusal is one message with no hint to pick another format, and a failing exit.
    for sub in ["summary", "check"] {
        let (code, out, err) = triage(&[sub, "--scorer", "confidence_on_target", file]);
        assert_eq!(code, Some(2), "{sub}: {out}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("not verdicts"), "{err}");
    }
    let nosamples = fixture("nosamples.eval");
    let (code, _, err) = triage(&["summary", nosamples.to_str().expect("path")]);
    assert_eq!(code, Some(2));
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--no-log-samples"), "{err}");
}

#[test]
fn scorer_on_another_format_is_a_note() {
    let other =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats/promptfoo/results.json");
    let (code, out, err) = triage(&["summary", "--scorer", "x", other.to_str().expect("path")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("5 pairs"), "{out}");
    assert!(err.contains("--scorer x applies to Inspect logs"), "{err}");
}

#[test]
fn the_viewer_shows_answers_targets_and_scores() {
    let dir = tempfile::tempdir().expect("temp");
    std::fs::copy(fixture("urgency.eval"), dir.path().join("urgency.eval")).expect("copy");
    let mut t = common::Tui::spawn(&["urgency.eval"], 120, 60, dir.path(), &[]);
    t.wait_for("q1-typo");
    t.wait_for("repetition 0");
    t.wait_for("── Answers");
    t.wait_for("decision urgent → routine");
    t.wait_for("target   urgent");
    t.wait_for("answer routine");
    t.wait_for("scores answer I, confidence_on_target 0.3");
    t.wait_for("│ ANSWER: routine");
    let screen = t.screen();
    assert!(!screen.contains("decision fail"), "{screen}");
    let seen: BTreeSet<&str> = ["typo", "question"]
        .into_iter()
        .filter(|w| screen.contains(w))
        .collect();
    assert_eq!(seen.len(), 2, "{screen}");
    t.send("q");
    t.wait_exit();
}

#[test]
fn the_fixtures_open_through_the_index_without_problems() {
    for name in ["urgency.json", "urgency.eval", "scorers.json"] {
        let idx = common::index_foreign(&fixture(name), Format::Inspect);
        let c = convert(name);
        assert_eq!(idx.rows.len(), c.records.len(), "{name}");
        assert_eq!(idx.failures, c.report.failures, "{name}");
    }
}

/// `make_checks.sh`: a sample's epochs are its repeated trials. Inspect
/// scores t1-flaky C, I, C in epochs 1 to 3: one pair of the five that
/// repeat disagrees with itself.
#[test]
fn epochs_are_the_repeated_trials_of_one_pair() {
    let c = convert("epochs.eval");
    let flaky: Vec<&Value> = c
        .records
        .iter()
        .filter(|r| r["variant_id"] == "t1-flaky")
        .collect();
    let reps: Vec<&Value> = flaky.iter().map(|r| &r["repetition"]).collect();
    assert_eq!(reps, [0, 1, 2], "{flaky:?}");
    let passed: Vec<&Value> = flaky.iter().map(|r| &r["passed"]).collect();
    assert_eq!(passed, [true, false, true]);
    let (code, out, err) = triage(&[
        "summary",
        "--format",
        "json",
        fixture("epochs.eval").to_str().expect("path"),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let summary: Value = serde_json::from_str(&out).expect("summary JSON");
    let r = &summary["repetition"];
    assert_eq!(
        (&r["repeated_pair_ids"], &r["inconsistent_pair_ids"]),
        (&Value::from(5), &Value::from(1)),
        "{r}"
    );
}

/// Integer sample ids: a `base_id` given as a number pairs as a string
/// does, and the archive's samples come in the JSON log's order (2 before
/// 11), so both formats give the same records in the same order.
#[test]
fn integer_ids_pair_and_both_formats_give_one_order() {
    let ids = |name: &str| -> Vec<(String, String)> {
        convert(name)
            .records
            .iter()
            .map(|r| {
                (
                    r["variant_id"].as_str().expect("id").to_string(),
                    r["transformation"]
                        .as_str()
                        .expect("transformation")
                        .to_string(),
                )
            })
            .collect()
    };
    let eval = ids("int-ids.eval");
    assert_eq!(eval, ids("int-ids.json"));
    let order: Vec<&str> = eval.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(order, ["2", "3", "11", "21", "30"]);
    // Sample 2 names its base as the integer 1, sample 3 as the string "1".
    assert_eq!(eval[0].1, "typo");
    assert_eq!(eval[1].1, "typo-bang");
    // 30 names base 999, which no sample is: listed unpaired, and a
    // problem at its line, in both formats.
    assert_eq!(eval[4].1, formats::UNPAIRED);
    for name in ["int-ids.eval", "int-ids.json"] {
        let problems = convert(name).report.problems;
        assert_eq!(problems.len(), 1, "{name}: {problems:?}");
        assert_eq!(problems[0].line, 5, "{name}");
        assert!(
            problems[0]
                .message
                .starts_with("the variant 30 names the base 999, which no row of its group has"),
            "{name}: {problems:?}"
        );
    }
}

/// An `.eval` taken while its eval still runs opens: Inspect reads it, as
/// status "started", from what it started with and the samples so far.
#[test]
fn an_eval_still_running_opens_with_its_status() {
    let c = convert("partial.eval");
    assert_eq!(c.report.rows, 2);
    assert_eq!(c.records.len(), 1);
    assert_eq!(c.records[0]["variant_id"], "t1-typo");
    assert_eq!(c.records[0]["passed"], false);
    assert!(
        c.report
            .warnings
            .iter()
            .any(|w| w == "the eval's status is started, not success"),
        "{:?}",
        c.report.warnings
    );
}

/// A scorer that gives dicts is named with a value on one line, never as
/// one giving numbers.
#[test]
fn a_dict_scorer_is_shown_on_one_line() {
    let err = match convert_with("rules.eval", Some("dict_score")) {
        Err(e) => e.to_string(),
        Ok(c) => panic!("expected a refusal, got {} records", c.records.len()),
    };
    assert!(
        err.contains(r#"gives values such as {"right":0,"conf":0.5}, not verdicts"#),
        "{err}"
    );
    let note = convert("rules.eval").report.warnings.join("\n");
    assert!(note.contains("(dict_score gives other values)"), "{note}");
}
