use super::*;
use crate::core::index::{OpenOptions, load_run};
use serde_json::{Value, json};
use std::io::Write as _;

/// What a hand-made pair shows.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// p 0.30 → 0.31: within the 0.1 drift, far from a threshold.
    Pass,
    /// p 0.30 → 0.45: drift 0.15 breaks the invariant (no boundary involved).
    Fail,
    /// The variant timed out: a service error.
    Error,
    /// The variant changed `state.a`, which it did not declare: an invalid pair.
    Invalid,
}

/// A native record: policy 0.55/0.9, an invariant expectation with a 0.1
/// drift, a 0.05 minimum margin, and a source at p 0.30 (margin 0.25).
fn pair(case: &str, variant: &str, transformation: &str, kind: Kind) -> Value {
    let pv = if kind == Kind::Fail { 0.45 } else { 0.31 };
    let mut v = json!({
        "case_id": case,
        "variant_id": variant,
        "family": "question",
        "transformation": transformation,
        "policy": {"review_threshold": 0.55, "action_threshold": 0.9},
        "expectation": {"kind": "invariant", "max_probability_drift": 0.1,
                        "max_confidence_drift": 0.15, "require_same_route": true},
        "minimum_boundary_margin": 0.05,
        "allowed_changes": ["question"],
        "source": {"question": "q", "state": {"a": 1},
                   "response": {"probability": 0.30, "confidence": 0.8}},
        "variant": {"question": "q, reworded", "state": {"a": 1},
                    "response": {"probability": pv, "confidence": 0.8}},
    });
    match kind {
        Kind::Error => {
            v["variant"].as_object_mut().map(|o| o.remove("response"));
            v["variant"]["outcome"] = json!("timeout");
        }
        Kind::Invalid => v["variant"]["state"] = json!({"a": 2}),
        Kind::Pass | Kind::Fail => {}
    }
    v
}

/// `n` pairs of one kind, each its own case named `{prefix}{i}`.
fn many(n: usize, prefix: &str, transformation: &str, kind: Kind) -> Vec<Value> {
    (0..n)
        .map(|i| pair(&format!("{prefix}{i}"), "v", transformation, kind))
        .collect()
}

struct Run {
    index: RunIndex,
    _dir: tempfile::TempDir,
}

/// Index these lines, written as one run file (`extra` raw lines after them).
fn run_of(lines: &[Value], extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let mut f = std::fs::File::create(&path).unwrap();
    for v in lines {
        writeln!(f, "{v}").unwrap();
    }
    for l in extra {
        writeln!(f, "{l}").unwrap();
    }
    drop(f);
    let index = load_run(
        &[path.to_string_lossy().to_string()],
        &OpenOptions::default(),
    )
    .unwrap();
    Run { index, _dir: dir }
}

/// A run file with exactly these bytes.
fn run_bytes(bytes: &[u8]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    std::fs::write(&path, bytes).unwrap();
    let index = load_run(
        &[path.to_string_lossy().to_string()],
        &OpenOptions::default(),
    )
    .unwrap();
    Run { index, _dir: dir }
}

/// 18 passes and 2 failures, plus 3 service errors and 2 invalid pairs.
fn two_of_twenty() -> Run {
    let mut lines = many(18, "p", "paraphrase", Kind::Pass);
    lines.extend(many(2, "f", "paraphrase", Kind::Fail));
    lines.extend(many(3, "e", "paraphrase", Kind::Error));
    lines.extend(many(2, "i", "paraphrase", Kind::Invalid));
    run_of(&lines, &[])
}

fn gate<'a>(o: &'a CheckOutcome, name: &str) -> &'a GateResult {
    o.gates
        .iter()
        .find(|g| g.name == name)
        .unwrap_or_else(|| panic!("no gate {name} in {:#?}", o.gates))
}

#[test]
fn the_seeds_numbers() {
    // Seed 003: 2 of 20 failing has an upper bound of 0.301, above 0.3.
    let c = rate_check(RateGate::MaxFailureRate, 2, 20, 0.3);
    assert!(!c.ok);
    assert!((c.bound - 0.301).abs() < 5e-4, "{}", c.bound);
    assert_eq!(show_bound(c.bound, 0.3), "0.301");
    assert_eq!(c.rate.map(|r| r.value), Some(0.1));
    assert!(rate_check(RateGate::MaxFailureRate, 2, 20, 0.31).ok);
    // 27 of 30 passing has a lower bound of 0.744: it fails a 0.85 target,
    // although the observed 0.9 is above it.
    let c = rate_check(RateGate::MinPassRate, 27, 30, 0.85);
    assert!(!c.ok);
    assert_eq!(show_bound(c.bound, 0.85), "0.744");
    assert!(rate_check(RateGate::MinPassRate, 27, 30, 0.74).ok);
    // 18 of 20: 0.699, the seed's other example.
    assert_eq!(
        show_bound(rate_check(RateGate::MinPassRate, 18, 20, 0.9).bound, 0.9),
        "0.699"
    );
    // 5 of 5 passing: the lower bound is only 0.566.
    assert!(!rate_check(RateGate::MinPassRate, 5, 5, 0.6).ok);
    // The case gate reads the upper bound too: 1 failing case of 10 is [0.018, 0.404].
    let c = rate_check(RateGate::MaxCaseFailureRate, 1, 10, 0.4);
    assert!(!c.ok);
    assert_eq!(show_bound(c.bound, 0.4), "0.404");
}

#[test]
fn nothing_judged_is_the_whole_interval() {
    // No evidence: the interval is [0, 1], so no rate gate below 1 (or above 0) holds.
    let c = rate_check(RateGate::MaxFailureRate, 0, 0, 0.5);
    assert_eq!((c.rate, c.bound, c.ok), (None, 1.0, false));
    let c = rate_check(RateGate::MinPassRate, 0, 0, 0.5);
    assert_eq!((c.rate, c.bound, c.ok), (None, 0.0, false));
    assert!(rate_check(RateGate::MaxFailureRate, 0, 0, 1.0).ok);
    assert!(rate_check(RateGate::MinPassRate, 0, 0, 0.0).ok);
}

#[test]
fn a_bound_shows_enough_decimals_to_show_its_side() {
    assert_eq!(show_bound(0.30004, 0.3), "0.30004");
    assert_eq!(show_bound(0.29996, 0.3), "0.29996");
    assert_eq!(show_bound(0.3, 0.3), "0.300");
    assert_eq!(show_bound(0.7441, 0.85), "0.744");
    assert_eq!(show_bound(1.0, 0.5), "1.000");
}

#[test]
fn gate_errors_read_as_before() {
    let taxonomy = Taxonomy::default();
    let gates = Gates {
        fail_on: vec!["boundary".into(), "no\u{1b}pe".into()],
        ..Gates::default()
    };
    assert_eq!(
        gates.validate(&taxonomy).unwrap_err().to_string(),
        format!(
            "--fail-on: `{}` is not a category id; the valid ids are: ambiguous-contract, distractor, missing-evidence, conflicting-evidence, boundary, service-error, invalid-pair",
            text::inert_line("no\u{1b}pe")
        )
    );
    let gates = Gates {
        max_failure_rate: Some(1.5),
        ..Gates::default()
    };
    assert_eq!(
        gates.validate(&taxonomy).unwrap_err().to_string(),
        "--max-failure-rate: 1.5 is not a rate; give a fraction from 0 to 1, such as 0.25"
    );
    let gates = Gates {
        fail_on: vec!["boundary".into()],
        max_failure_rate: Some(0.25),
        ..Gates::default()
    };
    assert_eq!(gates.validate(&taxonomy), Ok(()));
}

#[test]
fn a_rate_gate_no_bound_can_pass_is_refused() {
    let taxonomy = Taxonomy::default();
    let refused = |g: Gates| g.validate(&taxonomy).unwrap_err();
    let e = refused(Gates {
        max_failure_rate: Some(0.0),
        ..Gates::default()
    });
    assert!(matches!(
        e,
        GateError::NeverPasses {
            flag: "--max-failure-rate",
            ..
        }
    ));
    assert!(e.to_string().contains("use --max-failures 0"), "{e}");
    assert!(e.to_string().contains("upper bound"), "{e}");
    let e = refused(Gates {
        min_pass_rate: Some(1.0),
        ..Gates::default()
    });
    assert!(
        e.to_string()
            .starts_with("--min-pass-rate 1 can never pass"),
        "{e}"
    );
    assert!(e.to_string().contains("use --max-failures 0"), "{e}");
    let e = refused(Gates {
        max_case_failure_rate: Some(0.0),
        ..Gates::default()
    });
    assert!(e.to_string().contains("--max-failures 0"), "{e}");
    let e = refused(Gates {
        min_pass_rate: Some(f64::NAN),
        ..Gates::default()
    });
    assert!(matches!(e, GateError::NotARate { .. }), "{e}");
    let e = refused(Gates {
        by: Some(GroupBy::Category),
        ..Gates::default()
    });
    assert_eq!(e, GateError::ByCategory);
    // The loosest gates are allowed: they always hold.
    let gates = Gates {
        max_failure_rate: Some(1.0),
        min_pass_rate: Some(0.0),
        max_failures: Some(0),
        ..Gates::default()
    };
    assert_eq!(gates.validate(&taxonomy), Ok(()));
}

#[test]
fn rate_gates_count_judged_pairs_only() {
    let run = two_of_twenty();
    let o = check(
        &run.index,
        None,
        &Gates {
            max_failure_rate: Some(0.3),
            ..Gates::default()
        },
    );
    assert!(!o.passed, "{}", o.report);
    let g = gate(&o, "--max-failure-rate 0.3");
    // Service errors and invalid pairs are neither failures nor passes of
    // the model: 2 of 20, not 7 of 25 (0.28, which would pass on the rate).
    let rate = g.rates[0].rate.expect("a rate");
    assert_eq!((rate.successes, rate.trials), (2, 20));
    assert!(!g.ok);
    assert!(
        g.why
            .contains("failure rate 0.100 (2 of 20 judged pairs), 95% upper bound 0.301 > 0.3"),
        "{}",
        g.why
    );
    assert!(
        o.report
            .contains("25 pairs, 7 failures: 2 failed, 0 boundary, 3 service errors, 2 invalid"),
        "{}",
        o.report
    );
    assert!(o.report.contains("20 judged pairs"), "{}", o.report);
    assert!(
        o.report.contains("FAIL: 1 of 1 gate failed"),
        "{}",
        o.report
    );
    let o = check(
        &run.index,
        None,
        &Gates {
            max_failure_rate: Some(0.31),
            ..Gates::default()
        },
    );
    assert!(o.passed, "{}", o.report);
    assert!(o.report.contains("0.301 <= 0.31"), "{}", o.report);
}

#[test]
fn min_pass_rate_reads_the_lower_bound() {
    let mut lines = many(27, "p", "paraphrase", Kind::Pass);
    lines.extend(many(3, "f", "paraphrase", Kind::Fail));
    lines.extend(many(4, "e", "paraphrase", Kind::Error));
    let run = run_of(&lines, &[]);
    let at = |x: f64| {
        check(
            &run.index,
            None,
            &Gates {
                min_pass_rate: Some(x),
                ..Gates::default()
            },
        )
    };
    let o = at(0.85);
    assert!(!o.passed);
    let g = gate(&o, "--min-pass-rate 0.85");
    assert!(
        g.why
            .contains("pass rate 0.900 (27 of 30 judged pairs), 95% lower bound 0.744 < 0.85"),
        "{}",
        g.why
    );
    assert!(at(0.74).passed);
}

#[test]
fn max_failures_counts_failed_judged_pairs() {
    let run = two_of_twenty();
    let at = |n: u64| {
        check(
            &run.index,
            None,
            &Gates {
                max_failures: Some(n),
                ..Gates::default()
            },
        )
    };
    // Two failed; the service errors and invalid pairs are not counted.
    assert!(at(2).passed);
    let o = at(1);
    assert!(!o.passed);
    let g = gate(&o, "--max-failures 1");
    assert_eq!(g.why, "2 of 20 judged pairs failed (at most 1 allowed)");
    assert_eq!(g.details.len(), 2, "{:?}", g.details);
    assert!(
        g.details[0].starts_with("f0/v (") && g.details[0].ends_with("run.jsonl:19)"),
        "{:?}",
        g.details
    );
}

#[test]
fn min_pairs_counts_judged_pairs() {
    let run = two_of_twenty();
    let at = |n: u64| {
        check(
            &run.index,
            None,
            &Gates {
                min_pairs: Some(n),
                max_failure_rate: Some(0.5),
                ..Gates::default()
            },
        )
    };
    assert!(at(20).passed);
    let o = at(21);
    assert!(!o.passed);
    assert_eq!(
        gate(&o, "--min-pairs 21").why,
        "20 judged pairs (at least 21 required)"
    );
    // A rate gate on fewer than 25 judged pairs, without --min-pairs, says so.
    let o = check(
        &run.index,
        None,
        &Gates {
            max_failure_rate: Some(0.5),
            ..Gates::default()
        },
    );
    assert!(o.passed);
    assert!(
        o.report
            .contains("seed 003 asks for at least 25 (--min-pairs 25)"),
        "{}",
        o.report
    );
}

#[test]
fn no_judged_pair_fails_a_rate_gate() {
    let run = run_of(&many(4, "e", "paraphrase", Kind::Error), &[]);
    let o = check(
        &run.index,
        None,
        &Gates {
            max_failure_rate: Some(0.5),
            ..Gates::default()
        },
    );
    assert!(!o.passed, "{}", o.report);
    let g = gate(&o, "--max-failure-rate 0.5");
    assert_eq!(
        g.why,
        "no judged pairs, so no failure rate: the bound is 1.000 > 0.5"
    );
}

#[test]
fn by_applies_each_rate_gate_to_every_group() {
    // paraphrase 0 of 35 fail, typo 2 of 5: overall 2 of 40 (upper 0.165).
    let mut lines = many(35, "a", "paraphrase", Kind::Pass);
    lines.extend(many(3, "b", "typo", Kind::Pass));
    lines.extend(many(2, "c", "typo", Kind::Fail));
    let run = run_of(&lines, &[]);
    let gates = Gates {
        max_failure_rate: Some(0.3),
        ..Gates::default()
    };
    assert!(check(&run.index, None, &gates).passed);
    let o = check(
        &run.index,
        None,
        &Gates {
            by: Some(GroupBy::Transformation),
            ..gates.clone()
        },
    );
    assert!(!o.passed, "{}", o.report);
    let g = gate(&o, "--max-failure-rate 0.3");
    assert!(g.rates[0].ok, "the whole run holds");
    assert_eq!(g.rates.len(), 3);
    assert_eq!(
        g.details[0],
        "by transformation: 1 of 2 transformations fail"
    );
    assert!(
        g.details[1].starts_with(
            "typo: failure rate 0.400 (2 of 5 judged pairs), 95% upper bound 0.769 > 0.3"
        ),
        "{:?}",
        g.details
    );
    assert_eq!(g.details.len(), 2, "only the failing group is named");
    // Every group holds at a loose enough gate, and the report says so.
    let o = check(
        &run.index,
        None,
        &Gates {
            by: Some(GroupBy::Transformation),
            max_failure_rate: Some(0.8),
            ..Gates::default()
        },
    );
    assert!(o.passed, "{}", o.report);
    assert!(
        o.report
            .contains("by transformation: all 2 transformations hold"),
        "{}",
        o.report
    );
}

#[test]
fn filter_gates_a_subset() {
    let mut lines = many(35, "a", "paraphrase", Kind::Pass);
    lines.extend(many(3, "b", "typo", Kind::Pass));
    lines.extend(many(2, "c", "typo", Kind::Fail));
    let run = run_of(&lines, &[]);
    let o = check(
        &run.index,
        None,
        &Gates {
            max_failure_rate: Some(0.3),
            filter: Some(crate::core::query::parse("transformation:typo").unwrap()),
            ..Gates::default()
        },
    );
    assert!(!o.passed, "{}", o.report);
    let rate = gate(&o, "--max-failure-rate 0.3").rates[0].rate.unwrap();
    assert_eq!((rate.successes, rate.trials), (2, 5));
    assert!(
        o.report
            .contains("filter: transformation:typo (5 of 40 pairs)"),
        "{}",
        o.report
    );
}

#[test]
fn case_failure_rate_counts_cases_with_a_failed_trial() {
    // Ten cases of three trials each; one trial of case c0 fails. An
    // eleventh case has only a service error, so it is not judged.
    let mut lines = Vec::new();
    for c in 0..10 {
        for t in 0..3 {
            let kind = if c == 0 && t == 1 {
                Kind::Fail
            } else {
                Kind::Pass
            };
            let mut v = pair(&format!("c{c}"), "v", "paraphrase", kind);
            v["repetition"] = json!(t);
            lines.push(v);
        }
    }
    lines.push(pair("c10", "v", "paraphrase", Kind::Error));
    let run = run_of(&lines, &[]);
    let at = |x: f64| {
        check(
            &run.index,
            None,
            &Gates {
                max_case_failure_rate: Some(x),
                ..Gates::default()
            },
        )
    };
    let o = at(0.4);
    assert!(!o.passed);
    let g = gate(&o, "--max-case-failure-rate 0.4");
    let rate = g.rates[0].rate.unwrap();
    assert_eq!((rate.successes, rate.trials), (1, 10));
    assert!(
        g.why.contains(
            "case failure rate 0.100 (1 of 10 judged cases), 95% upper bound 0.404 > 0.4"
        ),
        "{}",
        g.why
    );
    assert!(at(0.41).passed);
    // Per pair the same run is 1 of 30: the case rate is the stricter one.
    let o = check(
        &run.index,
        None,
        &Gates {
            max_failure_rate: Some(0.4),
            ..Gates::default()
        },
    );
    assert!(o.passed, "{}", o.report);
}

#[test]
fn input_with_no_pair_is_unusable() {
    let empty = run_bytes(b"");
    let why = unusable(&empty.index).expect("an empty file is unusable");
    assert!(why.contains("run.jsonl: it is empty"), "{why}");
    let csv = run_bytes(b"case,variant,passed\nc1,v1,true\nc2,v2,false\n");
    let why = unusable(&csv.index).expect("a CSV file is unusable");
    assert!(
        why.contains("run.jsonl: no pair could be read from it"),
        "{why}"
    );
    let junk = run_bytes(b"{\"foo\": 1}\n{not json\n");
    let why = unusable(&junk.index).expect("no pair could be read");
    assert!(
        why.contains("no pair could be read from it: 2 of its lines are unreadable (first: "),
        "{why}"
    );
    assert!(why.contains("run.jsonl:1:"), "{why}");
    // A file from which some pairs were read is gated, its problems named.
    let partial = run_of(&many(3, "p", "paraphrase", Kind::Pass), &["{not json"]);
    assert_eq!(unusable(&partial.index), None);
    let o = check(
        &partial.index,
        None,
        &Gates {
            max_failures: Some(0),
            ..Gates::default()
        },
    );
    assert!(o.passed, "{}", o.report);
    assert!(
        o.report.contains("run.jsonl:4: malformed JSON"),
        "{}",
        o.report
    );
}
