//! `triage compare`, `triage check --baseline` and `triage export --baseline`
//! end to end, on the comparison sample (`sample-runs/compare-before.jsonl`,
//! `compare-after.jsonl` and the journal of the first), copied into a temp
//! dir and run there, isolated from the user's config and data.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_triage");
const OLD: &str = "compare-before.jsonl";
const NEW: &str = "compare-after.jsonl";
const OLD_JOURNAL: &str = "compare-before.jsonl.triage.jsonl";
const NEW_JOURNAL: &str = "compare-after.jsonl.triage.jsonl";

struct Fixture {
    dir: TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        for f in [OLD, NEW, OLD_JOURNAL] {
            fs::copy(Path::new("sample-runs").join(f), dir.path().join(f)).expect("copy a sample");
        }
        for d in ["config", "data"] {
            fs::create_dir_all(dir.path().join(d)).expect("a folder");
        }
        Fixture { dir }
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env("USER", "cy")
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .output()
            .expect("run triage")
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn json_has_every_count_by_its_stable_name_and_every_pair() {
    let f = Fixture::new();
    let o = f.run(&["compare", OLD, NEW, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let counts = doc["counts"].as_object().expect("counts");
    let names: Vec<(&str, u64)> = counts
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_u64().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            ("new_failures", 2),
            ("fixed", 2),
            ("still_failing", 4),
            ("status_changed", 1),
            ("content_changed", 1),
            ("added", 1),
            ("removed", 1),
            ("unchanged_pass", 7),
        ]
    );
    let pairs = doc["pairs"].as_array().expect("pairs");
    assert_eq!(pairs.len(), 19);
    for p in pairs {
        for field in [
            "case_id",
            "variant_id",
            "repetition",
            "change",
            "old_status",
            "new_status",
            "dp_old",
            "dp_new",
            "category",
            "category_stale",
        ] {
            assert!(p.get(field).is_some(), "{field} missing from {p}");
        }
    }
    let find = |case: &str, variant: &str| {
        pairs
            .iter()
            .find(|p| p["case_id"] == case && p["variant_id"] == variant)
            .unwrap()
    };
    let stale = find("login-failures-002", "reorder-fields");
    assert_eq!(stale["change"], "content_changed");
    assert_eq!(stale["category"], "boundary");
    assert_eq!(stale["category_stale"], true);
    let carried = find("billing-double-charge-003", "refund-issued");
    assert_eq!(carried["change"], "still_failing");
    assert_eq!(carried["category"], "conflicting-evidence");
    assert_eq!(carried["category_stale"], false);
    let moved = find("login-failures-002", "question-typo");
    assert_eq!(
        (&moved["old_status"], &moved["new_status"]),
        (&Value::from("fail"), &Value::from("error"))
    );
    assert_eq!(moved["dp_new"], Value::Null);
    let gone = find("checkout-outage-001", "resolve-evidence-rollback");
    assert_eq!(gone["change"], "removed");
    assert_eq!(gone["new_status"], Value::Null);
    let by = doc["by_transformation"]
        .as_array()
        .expect("by_transformation");
    let t = by
        .iter()
        .find(|t| t["transformation"] == "add-irrelevant-field")
        .unwrap();
    assert_eq!(t["old"]["successes"], 2);
    assert_eq!(t["new"]["successes"], 1);
    assert_eq!(t["counts"]["fixed"], 2);
    assert_eq!(t["counts"]["new_failures"], 1);
    let d = t["difference"]["value"].as_f64().unwrap();
    assert!((d + 1.0 / 3.0).abs() < 1e-9, "{d}");
    assert!(t["difference"]["low"].as_f64().unwrap() < d);
}

#[test]
fn text_lists_new_failures_before_fixed_and_says_what_can_be_carried() {
    let f = Fixture::new();
    let o = f.run(&["compare", OLD, NEW]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let new = out.find("New failures (2)").expect(&out);
    let fixed = out.find("Fixed (2)").expect(&out);
    assert!(new < fixed);
    assert!(out.contains("conflicting-evidence (carried)"), "{out}");
    assert!(out.contains("boundary (stale: inputs changed)"), "{out}");
    assert!(out.contains("distractor (the baseline's)"), "{out}");
    assert!(out.contains("2 decisions from compare-before.jsonl can be carried"));
    // Looking writes nothing.
    assert!(!f.path(NEW_JOURNAL).exists());
}

#[test]
fn carry_copies_carried_decisions_with_provenance_and_never_stale_ones() {
    let f = Fixture::new();
    let o = f.run(&["compare", OLD, NEW, "--carry", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("carried 2 decisions from compare-before.jsonl"),
        "{}",
        stderr(&o)
    );
    let journal = fs::read_to_string(f.path(NEW_JOURNAL)).expect("NEW's journal");
    let events: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let carried: Vec<(&str, &str, &str)> = events
        .iter()
        .map(|e| {
            (
                e["variant_id"].as_str().unwrap(),
                e["category"].as_str().unwrap(),
                e["carried_from"]["reviewer"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        carried,
        [
            ("remove-scope-evidence", "missing-evidence", "ana"),
            ("refund-issued", "conflicting-evidence", "ana"),
        ]
    );
    for e in &events {
        assert_eq!(e["reviewer"], "cy");
        assert_eq!(e["carried_from"]["run"], "compare-before.jsonl");
        assert!(
            e["carried_from"]["at"]
                .as_str()
                .unwrap()
                .starts_with("2026-11-28")
        );
    }
    // The run files and OLD's journal are untouched.
    for (name, copy) in [(OLD, OLD), (NEW, NEW), (OLD_JOURNAL, OLD_JOURNAL)] {
        assert_eq!(
            fs::read(f.path(name)).unwrap(),
            fs::read(Path::new("sample-runs").join(copy)).unwrap()
        );
    }
    // Now NEW holds them: the comparison says they are NEW's, and a second
    // carry finds nothing to do.
    let o = f.run(&["compare", OLD, NEW, "--format", "json"]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let own = doc["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["category_from"] == "new")
        .count();
    assert_eq!(own, 2);
    let o = f.run(&["compare", OLD, NEW, "--carry"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stderr(&o).contains("no decision to carry"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        fs::read_to_string(f.path(NEW_JOURNAL))
            .unwrap()
            .lines()
            .count(),
        2
    );
    // The viewer's export counts them as NEW's classified failures.
    let o = f.run(&["check", NEW, "--max-unclassified", "6"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

#[test]
fn markdown_has_the_section_and_the_transformation_table() {
    let f = Fixture::new();
    let o = f.run(&["compare", OLD, NEW, "--format", "markdown"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("## Since the last run"), "{out}");
    assert!(out.contains("| `new_failures` | 2 |"), "{out}");
    assert!(out.contains("### New failures (2)"), "{out}");
    assert!(out.contains("## Failure rate by transformation"), "{out}");
}

#[test]
fn the_report_gains_since_the_last_run_and_fixtures_can_be_the_fixed_pairs() {
    let f = Fixture::new();
    let o = f.run(&["export", NEW, "--baseline", OLD]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let since = out.find("## Since the last run").expect(&out);
    let new = out[since..].find("### New failures").unwrap();
    let fixed = out[since..].find("### Fixed").unwrap();
    assert!(new < fixed);
    // Without --baseline there is no such section.
    let plain = stdout(&f.run(&["export", NEW]));
    assert!(!plain.contains("Since the last run"));

    let o = f.run(&[
        "export",
        NEW,
        "--baseline",
        OLD,
        "--all",
        "--format",
        "fixtures",
        "--filter",
        "change:fixed",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let fixtures: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&str> = fixtures
        .iter()
        .map(|x| x["variant_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["irrelevant-ui-metadata", "irrelevant-campaign-tag"]);

    let o = f.run(&["export", NEW, "--filter", "change:fixed"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("add --baseline OLD"), "{}", stderr(&o));
}

#[test]
fn the_regression_gate_exits_0_1_and_2() {
    let f = Fixture::new();
    // Two new failures: a gate of 2 holds, a gate of 0 fails.
    let o = f.run(&["check", NEW, "--baseline", OLD, "--max-new-failures", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("since compare-before.jsonl: 2 new failures, 2 fixed"));
    let o = f.run(&["check", NEW, "--baseline", OLD, "--max-new-failures", "0"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("FAIL  --max-new-failures 0"), "{out}");
    assert!(
        out.contains("checkout-outage-001/irrelevant-ui-metadata (compare-after.jsonl:4)"),
        "{out}"
    );
    assert!(out.contains("not counted: 1 failing with changed inputs, 0 failing added"));
    // The gate with a filter counts only the pairs it selects.
    let o = f.run(&[
        "check",
        NEW,
        "--baseline",
        OLD,
        "--max-new-failures",
        "0",
        "--filter",
        "case:login*",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // Unusable input: a baseline that does not exist, or holds no pair.
    let o = f.run(&[
        "check",
        NEW,
        "--baseline",
        "nope.jsonl",
        "--max-new-failures",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nope.jsonl"), "{}", stderr(&o));
    fs::write(f.path("empty.jsonl"), "").unwrap();
    let o = f.run(&[
        "check",
        NEW,
        "--baseline",
        "empty.jsonl",
        "--max-new-failures",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    // The gate needs a baseline.
    let o = f.run(&["check", NEW, "--max-new-failures", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--baseline"), "{}", stderr(&o));
}

#[test]
fn compare_refuses_unusable_input_with_exit_2() {
    let f = Fixture::new();
    let o = f.run(&["compare", OLD, "missing.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("missing.jsonl"), "{}", stderr(&o));
    fs::write(f.path("empty.jsonl"), "").unwrap();
    let o = f.run(&["compare", "empty.jsonl", NEW]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("the baseline"), "{}", stderr(&o));
}

/// A case id holding a bidi override and a C1 control comes out of the JSON
/// as `\u` escapes, as every other JSON triage writes: a reader gets the id
/// back, and `cat` on the output cannot be driven by it.
#[test]
fn json_escapes_what_a_terminal_would_obey() {
    let fx = Fixture::new();
    let line = |p: f64| {
        format!(
            r#"{{"case_id":"ab\u202ecd\u009bx","variant_id":"v","policy":{{"review_threshold":0.55,"action_threshold":0.9}},"expectation":{{"kind":"invariant","max_probability_drift":0.1}},"allowed_changes":[],"source":{{"question":"q","state":{{}},"response":{{"probability":0.2,"confidence":0.9}}}},"variant":{{"question":"q","state":{{}},"response":{{"probability":{p},"confidence":0.9}}}}}}"#
        )
    };
    fs::write(fx.path("old.jsonl"), line(0.2) + "\n").expect("write");
    fs::write(fx.path("new.jsonl"), line(0.7) + "\n").expect("write");
    let out = fx.run(&["compare", "old.jsonl", "new.jsonl", "--format", "json"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains(r"ab\u202ecd\u009bx"), "{text}");
    assert!(
        !text.contains('\u{202e}') && !text.contains('\u{9b}'),
        "{text}"
    );
    let doc: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(doc["pairs"][0]["case_id"], "ab\u{202e}cd\u{9b}x");
    assert_eq!(doc["counts"]["new_failures"], 1);
}
