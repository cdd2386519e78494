//! Pair facts that follow the seeds, through the real binary: unusable
//! answers are service errors, boundary-only failures are boundary
//! observations, array order is a change, the policy's route is the one
//! every count and filter uses, the margin has the drift's tolerance, and
//! a service error's "why" names each failed side once.
//!
//! The runs are `tests/fixtures/fidelity/*.jsonl`; `seed-runner.jsonl` is
//! the real output of the seed's runner (`seed-runner.mjs` beside it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_triage");

/// A copy of one fixture in a temp dir, so no journal lands beside it.
struct Run {
    dir: TempDir,
    name: &'static str,
}

impl Run {
    fn of(name: &'static str) -> Run {
        let dir = tempfile::tempdir().expect("temp dir");
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/fidelity")
            .join(name);
        std::fs::copy(&from, dir.path().join(name)).expect("copy the fixture");
        Run { dir, name }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join(self.name)
    }

    /// Run triage on this run with `args` after the subcommand and the file;
    /// standard output, asserting exit 0.
    fn triage(&self, command: &str, args: &[&str]) -> String {
        let out = Command::new(BIN)
            .arg(command)
            .arg(self.path())
            .args(args)
            .current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .output()
            .expect("run triage");
        assert_eq!(
            out.status.code(),
            Some(0),
            "triage {command} {args:?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8 output")
    }

    /// Every pair of the JSON export (or those `filter` selects), by variant id.
    fn pairs(&self, filter: Option<&str>) -> BTreeMap<String, Value> {
        let mut args = vec!["--format", "json", "--all"];
        if let Some(q) = filter {
            args.extend(["--filter", q]);
        }
        let doc: Value = serde_json::from_str(&self.triage("export", &args)).expect("JSON");
        doc["pairs"]
            .as_array()
            .expect("pairs")
            .iter()
            .map(|p| {
                let key = format!("{}/{}", p["case_id"].as_str().unwrap(), p["variant_id"]);
                (key.replace('"', ""), p.clone())
            })
            .collect()
    }

    /// The summary's overall statistics.
    fn overall(&self) -> Value {
        let doc: Value =
            serde_json::from_str(&self.triage("summary", &["--format", "json"])).expect("JSON");
        doc["overall"].clone()
    }
}

fn str_of<'a>(p: &'a Value, field: &str) -> &'a str {
    p[field].as_str().unwrap_or_default()
}

#[test]
fn answers_with_no_valid_result_are_service_errors() {
    let run = Run::of("unusable-answers.jsonl");
    let pairs = run.pairs(None);
    let want = [
        ("no-confidence", "The variant answer has no confidence"),
        (
            "probability-above-one",
            "The source probability 1.4 is outside [0, 1]",
        ),
        (
            "probability-as-text",
            "The variant probability is a string, not a number from 0 through 1",
        ),
        (
            "confidence-as-boolean",
            "The variant confidence is a boolean, not a number from 0 through 1",
        ),
        ("empty-response", "The variant answer has no probability"),
        (
            "negative-confidence",
            "The source confidence -0.1 is outside [0, 1]",
        ),
    ];
    for (variant, why) in want {
        let p = &pairs[&format!("parcel-delay-201/{variant}")];
        assert_eq!(str_of(p, "status"), "error", "{variant}: {p:#}");
        assert_eq!(
            str_of(p, "why"),
            format!("{why}; the pair says nothing about the model."),
            "{variant}"
        );
        // The runner recorded a pass; the pair is not one.
        assert_ne!(p["verdict"], Value::Bool(true), "{variant}");
        // A side with no valid result gives no route to flip.
        assert_eq!(p["flip"], Value::Null, "{variant}");
    }
    let kept = &pairs["parcel-delay-201/kept-expectation"];
    assert_eq!(str_of(kept, "status"), "pass");
    // Counted with the service errors, never in the invariant trials.
    let all = run.overall();
    assert_eq!(all["service_errors"], 6);
    assert_eq!(all["failures"], 6);
    assert_eq!(all["invariant_violation_rate"]["trials"], 1);
    assert_eq!(all["invariant_violation_rate"]["successes"], 0);
    assert_eq!(all["route_flips"], 0);
}

#[test]
fn a_failure_of_the_margin_alone_is_a_boundary_observation() {
    let run = Run::of("boundary.jsonl");
    let pairs = run.pairs(None);
    let only = &pairs["login-errors-301/question-paraphrase"];
    assert_eq!(str_of(only, "status"), "boundary");
    assert_eq!(only["near_boundary"], true);
    assert!(
        str_of(only, "why").contains("boundary sensitivity, not an invariant violation"),
        "{only:#}"
    );
    // The margin and a route change: an invariant violation.
    let both = &pairs["login-errors-301/question-typo"];
    assert_eq!(str_of(both, "status"), "fail");
    assert_eq!(both["near_boundary"], true);
    // `status:boundary` selects it; `status:failure` too.
    let boundary = run.pairs(Some("status:boundary"));
    assert_eq!(
        boundary.keys().collect::<Vec<_>>(),
        ["login-errors-301/question-paraphrase"]
    );
    assert!(
        run.pairs(Some("status:failure"))
            .contains_key("login-errors-301/question-paraphrase")
    );
    // In the boundary columns, out of the invariant trials: the typo and
    // the paraphrase at margin 0.1 are the two invariant trials.
    let all = run.overall();
    assert_eq!(all["boundary_pairs"], 3, "{all:#}");
    assert_eq!(all["invariant_violation_rate"]["trials"], 2, "{all:#}");
    assert_eq!(all["invariant_violation_rate"]["successes"], 1, "{all:#}");
}

#[test]
fn a_margin_equal_to_the_minimum_is_not_too_close() {
    // 0.65 − 0.55 is 0.09999999999999998 in doubles; the minimum is 0.1.
    let run = Run::of("boundary.jsonl");
    let p = &run.pairs(None)["sso-admins-302/question-paraphrase"];
    assert_eq!(str_of(p, "status"), "pass", "{p:#}");
    assert_eq!(p["near_boundary"], false);
    assert_eq!(p["source_margin"], 0.1);
    assert_eq!(str_of(p, "why"), "The variant kept its expectation.");
    let report = run.triage("export", &["--all"]);
    assert!(!report.contains("0.100 \\< 0.1"), "{report}");
}

#[test]
fn the_seed_runners_boundary_reasons_are_boundary_observations() {
    // Four of the six reasons say the source is too close; two pairs fail
    // on that alone.
    let run = Run::of("seed-runner.jsonl");
    let pairs = run.pairs(None);
    let statuses: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, p)| (k.as_str(), str_of(p, "status")))
        .collect();
    assert_eq!(
        statuses,
        [
            ("export-delay-104/irrelevant-locale", "boundary"),
            ("invoice-typo-102/irrelevant-trace-label", "fail"),
            ("invoice-typo-102/question-paraphrase", "pass"),
            ("refund-portal-down-101/irrelevant-ui-theme", "fail"),
            ("refund-portal-down-101/question-paraphrase", "boundary"),
            ("sso-lockout-103/question-paraphrase", "boundary"),
        ]
    );
    let all = run.overall();
    assert_eq!(all["boundary_pairs"], 4, "{all:#}");
    assert_eq!(all["boundary_flip_rate"]["trials"], 4, "{all:#}");
    assert_eq!(all["boundary_flip_rate"]["successes"], 1, "{all:#}");
    let text = run.triage("summary", &[]);
    assert!(
        text.contains(
            "4 pairs have sources closer to a threshold than their minimum boundary margin"
        ),
        "{text}"
    );
}

#[test]
fn a_reorder_of_recovery_steps_is_a_change() {
    let run = Run::of("array-order.jsonl");
    let pairs = run.pairs(None);
    let undeclared = &pairs["deploy-rollback-401/reorder-steps-undeclared"];
    assert_eq!(str_of(undeclared, "status"), "invalid");
    assert_eq!(
        undeclared["unexpected_changes"],
        serde_json::json!(["state.recoverySteps"])
    );
    assert_eq!(
        str_of(
            &pairs["deploy-rollback-401/reorder-steps-declared"],
            "status"
        ),
        "pass"
    );
    // An edit that is declared does not excuse the undeclared move.
    let edited = &pairs["deploy-rollback-401/reorder-and-edit-undeclared"];
    assert_eq!(str_of(edited, "status"), "invalid");
    // Keys in another order are not a change.
    let keys = &pairs["deploy-rollback-401/reorder-keys"];
    assert_eq!(
        (str_of(keys, "status"), str_of(keys, "validity")),
        ("pass", "valid")
    );
    let report = run.triage("export", &[]);
    assert!(
        report.contains("`state.recoverySteps` **(undeclared)**: elements in another order"),
        "{report}"
    );
}

#[test]
fn counts_and_filters_use_the_route_the_detail_shows() {
    let run = Run::of("recomputed-routes.jsonl");
    let pairs = run.pairs(None);
    // The runner recorded review for 0.90; the policy routes it to action.
    let hidden = &pairs["vague-outage-501/add-evidence"];
    assert_eq!(hidden["variant"]["route"], "action");
    assert_eq!(hidden["flip"], true);
    // The runner recorded a flip the policy does not make.
    let shown = &pairs["vague-outage-501/question-paraphrase"];
    assert_eq!(
        (&shown["source"]["route"], &shown["flip"]),
        (&Value::from("action"), &Value::Bool(false))
    );
    assert!(
        shown["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("recorded as review")),
        "{shown:#}"
    );
    let flips = run.pairs(Some("flip:yes"));
    assert_eq!(
        flips.keys().collect::<Vec<_>>(),
        ["vague-outage-501/add-evidence"]
    );
    let all = run.overall();
    assert_eq!(all["route_flips"], 1);
}

#[test]
fn a_service_error_names_each_failed_side_once() {
    let run = Run::of("service-errors.jsonl");
    let pairs = run.pairs(None);
    assert_eq!(
        str_of(&pairs["webhook-lag-601/both-sides-fail"], "why"),
        "The source request timed out after 30000 ms, and the variant request failed with an error: HTTP 503 Service Unavailable; the pair says nothing about the model."
    );
    assert_eq!(
        str_of(&pairs["webhook-lag-601/variant-timeout"], "why"),
        "The variant request timed out after 30000 ms; the pair says nothing about the model."
    );
}
