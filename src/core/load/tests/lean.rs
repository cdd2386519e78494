use super::*;
use crate::core::derive::{Derived, ValidityCode, derive_with, lean};
use crate::core::diff::{DiffEntry, JsonPath, diff_values};
use crate::core::model::{BadNumber, Expectation, Outcome, Policy, Route, Side};
use proptest::prelude::*;
use serde_json::{Map, json};
use std::path::{Path, PathBuf};

/// The row summary as the index made it from the full derivation: the
/// flags read from the warnings derive writes about those conditions.
/// (A field warning or an undeclared path quotes the file, so a file
/// could spell the same words; those never set a flag.)
fn full_summary(record: &PairRecord, d: &Derived) -> String {
    let own: Vec<&String> = d.warnings[record.field_warnings.len()..]
        .iter()
        .filter(|w| !w.starts_with("Invalid pair:"))
        .collect();
    let mut fl = 0u8;
    if d.flip == Some(true) {
        fl |= flags::FLIP;
    }
    if d.transformation.inferred {
        fl |= flags::INFERRED;
    }
    if d.near_boundary == Some(true) {
        fl |= flags::NEAR_BOUNDARY;
    }
    if !d.warnings.is_empty() {
        fl |= flags::WARNINGS;
    }
    if own.iter().any(|w| w.contains("The runner recorded")) {
        fl |= flags::PASSED_MISMATCH;
    }
    if own.iter().any(|w| w.contains("route was recorded as")) {
        fl |= flags::ROUTE_MISMATCH;
    }
    // Read from the record as it stands, by both paths.
    if let Some(unsafe_approval) = record.unsafe_approval {
        fl |= flags::APPROVAL_FORBIDDEN;
        if unsafe_approval {
            fl |= flags::UNSAFE_APPROVAL;
        }
    }
    let lean_like = crate::core::derive::Lean {
        dp: d.dp,
        dc: d.dc,
        source_route: d.source_route,
        variant_route: d.variant_route,
        source_margin: d.source_margin,
        variant_margin: d.variant_margin,
        near_boundary: d.near_boundary,
        flip: d.flip,
        status: d.status,
        validity: d.validity.code(),
        inferred_transformation: None,
        inferred: d.transformation.inferred,
        warnings: false,
        passed_mismatch: false,
        route_mismatch: false,
        question_changed: d.changes.question_changed,
        state: Vec::new(),
    };
    let mut s = summarize(record, &lean_like);
    s.codes.flags = fl;
    format!("{s:?}")
}

/// What a row keeps, by the full path and by the lean one.
fn both(r: &PairRecord, diff: Option<Vec<DiffEntry>>) -> (String, String) {
    let d = derive_with(r, diff.clone());
    let full = format!(
        "{} suggestion {:?} transformation {:?}",
        full_summary(r, &d),
        crate::core::suggest::suggest(r, &d).map(|s| s.category),
        d.transformation.name,
    );
    let l = lean(r, diff);
    assert_eq!(l.state, d.changes.state);
    assert_eq!(l.question_changed, d.changes.question_changed);
    let lean = format!(
        "{:?} suggestion {:?} transformation {:?}",
        summarize(r, &l),
        crate::core::suggest::lean_category(r, &l),
        l.transformation(r),
    );
    (full, lean)
}

/// Every line of a text that is a record, by both parses.
fn check_text(name: &str, text: &str) -> usize {
    let mut n = 0;
    for (i, line) in text.lines().enumerate() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Ok(r) = map_record(v) else { continue };
        let (full, lean) = both(&r, None);
        assert_eq!(lean, full, "{name}:{}", i + 1);
        n += 1;
        let fast = super::READER
            .with_borrow_mut(|r| r.parse(line).map(|f| both(&f.record, f.diff_entries())));
        if let Some((full, lean)) = fast {
            assert_eq!(lean, full, "{name}:{} (fast path)", i + 1);
        }
    }
    n
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn lean_matches_full_on_every_sample_and_fixture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    files(&root.join("sample-runs"), &mut paths);
    files(&root.join("tests/fixtures"), &mut paths);
    paths.sort();
    let mut records = 0;
    for p in &paths {
        let bytes = std::fs::read(p).unwrap();
        let name = p.display().to_string();
        records += check_text(&name, &String::from_utf8_lossy(&bytes));
        // Another tool's results, converted to pair records as the
        // loader does.
        let found = crate::core::formats::detect(&bytes);
        if let Some(format) = found.format {
            let mut out = Vec::new();
            if crate::core::formats::convert(p, format, &mut out).is_ok() {
                records += check_text(&name, &String::from_utf8_lossy(&out));
            }
        }
    }
    assert!(records > 100, "only {records} records checked");
}

#[test]
fn a_files_words_set_no_flag() {
    // An unknown route is quoted in its field warning, and an undeclared
    // key in the invalid-pair warning: neither is a mismatch.
    let line = json!({
        "case_id": "c", "variant_id": "v",
        "policy": {"review_threshold": 0.55, "action_threshold": 0.9},
        "allowed_changes": [],
        "source": {"probability": 0.3, "route": "The runner recorded a pass",
                   "state": {"a": 1}},
        "variant": {"probability": 0.31, "state": {"a": 1, "route was recorded as": 2}},
    });
    let r = map_record(line).unwrap();
    let d = crate::core::derive::derive(&r);
    assert!(d.warnings.iter().any(|w| w.contains("The runner recorded")));
    assert!(
        d.warnings
            .iter()
            .any(|w| w.contains("route was recorded as"))
    );
    let s = summarize(&r, &lean(&r, None));
    assert_eq!(s.codes.validity, ValidityCode::Invalid);
    assert!(s.codes.flags & flags::WARNINGS != 0);
    assert_eq!(s.codes.flags & flags::PASSED_MISMATCH, 0);
    assert_eq!(s.codes.flags & flags::ROUTE_MISMATCH, 0);
}

fn num(choices: &'static [f64]) -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => proptest::sample::select(choices),
        1 => 0.0..=1.0f64,
    ]
}

const PROBS: &[f64] = &[
    0.0, 0.3, 0.45, 0.49, 0.5, 0.54, 0.55, 0.56, 0.6, 0.89, 0.9, 0.91, 1.0,
];
const BOUNDS: &[f64] = &[0.0, 0.01, 0.02, 0.05, 0.1, 0.3];

fn route() -> impl Strategy<Value = Option<Route>> {
    proptest::option::of(proptest::sample::select(Route::ALL.to_vec()))
}

fn outcome() -> impl Strategy<Value = Option<Outcome>> {
    proptest::option::weighted(
        0.4,
        prop_oneof![
            3 => Just(Outcome::Ok),
            1 => Just(Outcome::Timeout),
            1 => Just(Outcome::Error),
            1 => Just(Outcome::InvalidResponse),
            1 => Just(Outcome::Other("refused".into())),
        ],
    )
}

fn expectation() -> impl Strategy<Value = Option<Expectation>> {
    proptest::option::weighted(
        0.85,
        prop_oneof![
            (
                proptest::option::of(num(BOUNDS)),
                proptest::option::of(num(BOUNDS)),
                any::<bool>()
            )
                .prop_map(|(p, c, same)| Expectation::Invariant {
                    max_probability_drift: p,
                    max_confidence_drift: c,
                    require_same_route: same,
                }),
            num(BOUNDS).prop_map(|m| Expectation::NotLessUrgent {
                permitted_probability_movement: m
            }),
            num(BOUNDS).prop_map(|m| Expectation::NotMoreUrgent {
                permitted_probability_movement: m
            }),
            proptest::sample::subsequence(Route::ALL.to_vec(), 0..=3)
                .prop_map(|allowed_routes| Expectation::AllowedRoutes { allowed_routes }),
            Just(Expectation::Unknown {
                kind: "monotone".into()
            }),
        ],
    )
}

/// State members: keys that name evidence (in mixed case and quoted
/// forms) and keys that do not, each with a few values so both sides
/// often agree, differ, or hold the same members in another order.
const KEYS: &[&str] = &[
    "a",
    "uiTheme",
    "Evidence",
    "source_ref",
    "x y",
    "e\u{e}vidence",
    "PROOF",
    "account",
];

fn value(i: usize) -> Value {
    match i {
        0 => json!(1),
        1 => json!("dark"),
        2 => json!([{"id": "E1", "t": "x"}, {"id": "E2", "t": "y"}]),
        3 => json!([{"id": "E2", "t": "y"}, {"id": "E1", "t": "x"}]),
        4 => json!([{"id": "E1", "t": "x"}]),
        5 => json!({"plan": "pro", "seats": 3}),
        6 => json!({"seats": 3, "plan": "pro"}),
        _ => json!([1, 2, 3]),
    }
}

fn state() -> impl Strategy<Value = Option<Value>> {
    proptest::option::weighted(
        0.85,
        (
            proptest::sample::subsequence((0..KEYS.len()).collect::<Vec<_>>(), 0..=5)
                .prop_shuffle(),
            proptest::collection::vec(0..8usize, KEYS.len()),
        )
            .prop_map(|(keys, vals)| {
                let mut m = Map::new();
                for k in keys {
                    m.insert(KEYS[k].to_string(), value(vals[k]));
                }
                Value::Object(m)
            }),
    )
}

fn side() -> impl Strategy<Value = Side> {
    (
        proptest::option::weighted(0.8, proptest::sample::select(vec!["q1", "q2"])),
        state(),
        proptest::option::weighted(0.9, num(PROBS)),
        proptest::option::of(num(PROBS)),
        route(),
        outcome(),
        proptest::option::weighted(0.2, Just("HTTP 503".to_string())),
        proptest::option::of(proptest::sample::select(vec![10.0, 30000.0])),
        // An answer recorded in any form, and numbers no runner could use.
        (any::<bool>(), bad_number(), bad_number()),
    )
        .prop_map(
            |(
                question,
                state,
                probability,
                confidence,
                route,
                outcome,
                error,
                latency,
                (answered, bad_probability, bad_confidence),
            )| Side {
                question: question.map(str::to_string),
                state,
                bad_probability: bad_probability.filter(|_| probability.is_none()),
                bad_confidence: bad_confidence.filter(|_| confidence.is_none()),
                probability,
                confidence,
                route,
                outcome,
                error,
                latency_ms: latency,
                decision: None,
                answered,
            },
        )
}

fn bad_number() -> impl Strategy<Value = Option<BadNumber>> {
    proptest::option::weighted(
        0.15,
        prop_oneof![
            Just(BadNumber::OutOfRange(1.4)),
            Just(BadNumber::OutOfRange(-0.2)),
            Just(BadNumber::NotANumber("a string")),
        ],
    )
}

/// `allowed_changes` entries: root paths, bare keys, prefixes, quoted
/// keys, indices, stray spaces and malformed ones.
const ALLOWED: &[&str] = &[
    "question",
    "state",
    "state.Evidence",
    "Evidence",
    "evidence",
    "a",
    " uiTheme ",
    "state.account.plan",
    "account",
    "state[\"x y\"]",
    "[\"x y\"]",
    "Evidence[1]",
    "state.Evidence[0].t",
    "",
    "a..b",
    "1a",
    "state.",
    "QUESTION",
    "question.text",
    "state[\"e\\u000evidence\"]",
    "source_ref",
];

const FAMILIES: &[&str] = &[
    "question",
    "Evidence-Ablation",
    "evidence-contrast",
    "STATE-NOISE",
    "Question",
    "tone",
];

const TRANSFORMATIONS: &[&str] = &[
    "paraphrase",
    "Remove-Evidence",
    "add-EVIDENCE",
    "Typo",
    "irrelevant-Field",
    "reorder-fields",
    "unpaired",
    "formal-tone",
    "question-and-state",
];

fn record() -> impl Strategy<Value = PairRecord> {
    (
        (
            proptest::option::weighted(
                0.8,
                (
                    proptest::sample::select(vec![0.3, 0.5, 0.55]),
                    proptest::sample::select(vec![0.8, 0.9]),
                ),
            ),
            expectation(),
            proptest::option::weighted(0.8, num(BOUNDS)),
            proptest::option::weighted(
                0.8,
                proptest::collection::vec(proptest::sample::select(ALLOWED), 0..4),
            ),
            proptest::option::of(any::<bool>()),
        ),
        (
            side(),
            side(),
            proptest::option::of(proptest::sample::select(FAMILIES)),
            proptest::option::weighted(0.6, proptest::sample::select(TRANSFORMATIONS)),
            // Often the variant keeps the source's state or question.
            (any::<bool>(), any::<bool>()),
            proptest::collection::vec(
                proptest::sample::select(vec![
                    "Source is too close to a Decision Boundary: margin 0.010.",
                    "Probability drift 0.341 exceeds 0.1.",
                    "route recorded as action",
                ]),
                0..3,
            ),
            proptest::collection::vec(
                proptest::sample::select(vec![
                    "`source.route` should be action, review or pass but is \"The runner recorded\"; treated as not recorded",
                    "`passed` should be true or false but is a string; treated as not recorded",
                ]),
                0..2,
            ),
            proptest::option::of(0u64..3),
        ),
    )
        .prop_map(
            |(
                (policy, expectation, margin, allowed, passed),
                (
                    source,
                    mut variant,
                    family,
                    transformation,
                    (same_state, same_question),
                    reasons,
                    warnings,
                    repetition,
                ),
            )| {
                if same_state {
                    variant.state = source.state.clone();
                }
                if same_question {
                    variant.question = source.question.clone();
                }
                PairRecord {
                case_id: "c".into(),
                variant_id: "v".into(),
                family: family.map(str::to_string),
                transformation: transformation.map(str::to_string),
                policy: policy.map(|(review, action)| Policy {
                    review_threshold: review,
                    action_threshold: action,
                }),
                expectation,
                minimum_boundary_margin: margin,
                allowed_changes: allowed
                    .map(|v| v.into_iter().map(str::to_string).collect()),
                source,
                variant,
                passed,
                reasons: reasons.into_iter().map(str::to_string).collect(),
                field_warnings: warnings.into_iter().map(str::to_string).collect(),
                repetition,
                ..PairRecord::default()
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn lean_matches_full(r in record(), given_diff in any::<bool>()) {
        // The fast path hands over the diff it computed; the slow one none.
        let diff = match (&r.source.state, &r.variant.state) {
            (Some(a), Some(b)) if given_diff => {
                Some(diff_values(&JsonPath::root("state"), a, b))
            }
            _ => None,
        };
        let (full, lean) = both(&r, diff);
        prop_assert_eq!(lean, full);
    }
}
