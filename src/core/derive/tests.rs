//! Tests of the derivation: numbers, routes, checks, statuses, validity.

use super::*;
use crate::core::model::{Outcome, Policy, Side};
use serde_json::json;

/// A failing-invariant pair with both thresholds and a margin, for tests.
pub(crate) fn pair(ps: f64, pv: f64) -> PairRecord {
    PairRecord {
        case_id: "c".into(),
        variant_id: "v".into(),
        policy: Some(Policy {
            review_threshold: 0.55,
            action_threshold: 0.9,
        }),
        expectation: Some(Expectation::Invariant {
            max_probability_drift: Some(0.1),
            max_confidence_drift: Some(0.15),
            require_same_route: true,
        }),
        minimum_boundary_margin: Some(0.1),
        source: Side {
            probability: Some(ps),
            confidence: Some(0.8),
            question: Some("q".into()),
            state: Some(json!({"a": 1})),
            ..Side::default()
        },
        variant: Side {
            probability: Some(pv),
            confidence: Some(0.8),
            question: Some("q".into()),
            state: Some(json!({"a": 1})),
            ..Side::default()
        },
        ..PairRecord::default()
    }
}

#[test]
fn drift_routes_and_margin() {
    let d = derive(&pair(0.91, 0.52));
    assert!((d.dp.unwrap() + 0.39).abs() < 1e-9);
    assert_eq!(d.source_route, Some(Route::Action));
    assert_eq!(d.variant_route, Some(Route::Pass));
    assert!((d.source_margin.unwrap() - 0.01).abs() < 1e-9);
    assert!((d.variant_margin.unwrap() - 0.03).abs() < 1e-9);
    assert_eq!(d.flip, Some(true));
    assert_eq!(d.near_boundary, Some(true));
    assert_eq!(d.status, Status::Fail);
    let c = d.check.unwrap();
    assert_eq!(c.len(), 3, "{c:?}");
    assert!(c[0].contains("margin 0.010 < 0.1"));
    assert!(c[1].contains("Probability drift 0.390"));
    assert!(c[2].contains("from action to pass"));
}

#[test]
fn thresholds_are_inclusive() {
    let pol = Policy {
        review_threshold: 0.55,
        action_threshold: 0.9,
    };
    assert_eq!(pol.route(0.9), Route::Action);
    assert_eq!(pol.route(0.55), Route::Review);
    assert_eq!(pol.route(0.5499), Route::Pass);
}

#[test]
fn stable_pair_passes() {
    let d = derive(&pair(0.3, 0.32));
    assert_eq!(d.status, Status::Pass);
    assert_eq!(d.check, Some(vec![]));
    assert_eq!(d.transformation.name, "identical");
    assert!(d.transformation.inferred);
}

#[test]
fn recorded_route_mismatch_is_a_warning() {
    let mut r = pair(0.3, 0.32);
    r.source.route = Some(Route::Review);
    let d = derive(&r);
    assert!(d.warnings.iter().any(|w| w.contains("recorded as review")));
    // The policy's route is the one every fact uses; the recorded one
    // is only the warning's.
    assert_eq!(d.source_route, Some(Route::Pass));
    assert_eq!(d.flip, Some(false));
    assert_eq!(d.status, Status::Pass);
}

#[test]
fn passed_mismatch_fails_the_pair() {
    let mut r = pair(0.3, 0.7);
    r.passed = Some(true);
    let d = derive(&r);
    assert_eq!(d.verdict, Some(false));
    assert_eq!(d.status, Status::Fail);
    assert!(d.warnings.iter().any(|w| w.contains("recorded a pass")));
}

#[test]
fn directional_expectations() {
    let mut r = pair(0.7, 0.6);
    r.expectation = Some(Expectation::NotLessUrgent {
        permitted_probability_movement: 0.05,
    });
    let d = derive(&r);
    assert_eq!(d.status, Status::Fail);
    assert!(d.why.contains("fell by 0.100"));
    r.expectation = Some(Expectation::NotMoreUrgent {
        permitted_probability_movement: 0.05,
    });
    assert_eq!(derive(&r).status, Status::Pass);
}

#[test]
fn allowed_routes() {
    let mut r = pair(0.7, 0.95);
    r.expectation = Some(Expectation::AllowedRoutes {
        allowed_routes: vec![Route::Review, Route::Pass],
    });
    let d = derive(&r);
    assert_eq!(d.status, Status::Fail);
    assert!(d.why.contains("action is not among"));
}

#[test]
fn service_error_is_its_own_status() {
    let mut r = pair(0.7, 0.7);
    r.variant.probability = None;
    r.variant.outcome = Some(Outcome::Timeout);
    r.variant.latency_ms = Some(30000.0);
    let d = derive(&r);
    assert_eq!(d.status, Status::ServiceError);
    assert!(d.why.contains("timed out after 30000 ms"), "{}", d.why);
    assert!(d.service_error);
}

#[test]
fn validity_splits_permitted_and_unexpected() {
    let mut r = pair(0.3, 0.3);
    r.variant.state = Some(json!({"a": 2, "theme": "dark"}));
    r.allowed_changes = Some(vec!["state.theme".into()]);
    let d = derive(&r);
    assert_eq!(d.changes.permitted, vec!["state.theme"]);
    assert_eq!(d.changes.unexpected, vec!["state.a"]);
    assert_eq!(d.status, Status::Invalid);
    assert_eq!(d.transformation.name, "value-change");

    r.allowed_changes = Some(vec!["state".into()]);
    assert_eq!(derive(&r).validity, Validity::Valid);
    // A bare key names a state field.
    r.allowed_changes = Some(vec!["a".into(), "theme".into()]);
    assert_eq!(derive(&r).validity, Validity::Valid);
    r.allowed_changes = None;
    assert_eq!(derive(&r).validity, Validity::Undeclared);
}

/// An entry permits a whole state member when it names the member or
/// a path above it, however it is spelled; one below it does not.
#[test]
fn members_permitted_whole() {
    let mut r = pair(0.3, 0.3);
    for (entry, evidence, a) in [
        ("state", true, true),
        ("state.evidence", true, false),
        ("evidence", true, false),
        (" evidence ", true, false),
        ("state.evidence.text", false, false),
        ("evidence[0]", false, false),
        ("question", false, false),
        ("a", false, true),
    ] {
        r.allowed_changes = Some(vec![entry.into()]);
        assert_eq!(member_permitted(&r, "evidence"), evidence, "{entry:?}");
        assert_eq!(member_permitted(&r, "a"), a, "{entry:?}");
    }
    r.allowed_changes = None;
    assert!(!member_permitted(&r, "a"));
}

proptest::proptest! {
    /// A member of the state is covered as its path `state.<key>` is.
    #[test]
    fn a_member_is_covered_as_its_path_is(
        entry in "( ?(state|question|a|b-c|a\\.b|\\[0\\]|\\[\"a\"\\]|\\.|x y|_1)){1,4} ?",
        key in "(state|a|b-c|a\\.b|x y|_1|\\[0\\]|)",
    ) {
        let entry = entry.replace(' ', if entry.len() % 2 == 0 { "" } else { " " });
        let entry = entry.trim_start_matches('.');
        let path = [diff::Seg::Key("state".into()), diff::Seg::Key(key.clone())];
        proptest::prop_assert_eq!(
            allowed_covers(entry, Changed::Member(&key)),
            allowed_covers(entry, Changed::Path(&path)),
            "{:?} {:?}", entry, key
        );
    }
}

/// The lazy derivation agrees with the eager one, and makes the diff
/// only when something reads it.
#[test]
fn the_state_is_diffed_only_when_read() {
    let mut r = pair(0.3, 0.31);
    r.source.state = Some(json!({"a": 1, "theme": "light"}));
    r.variant.state = Some(json!({"a": 1, "theme": "dark"}));
    r.transformation = Some("theme".into());
    r.allowed_changes = Some(vec!["state.theme".into()]);
    let eager = lean(&r, None);
    assert_eq!(eager.validity, ValidityCode::Valid);
    assert_eq!(eager.status, Status::Pass);
    // A passing pair whose changed member is permitted whole: no diff.
    let lazy = lean_on(&r, true, || panic!("diffed"));
    assert_eq!(
        (lazy.status, lazy.validity, lazy.state.len()),
        (Status::Pass, ValidityCode::Valid, 0)
    );
    // Not covered: the validity needs the diff.
    let mut asked = false;
    let lazy = lean_on(&r, false, || {
        asked = true;
        None
    });
    assert!(asked);
    assert_eq!((lazy.status, lazy.validity), (eager.status, eager.validity));
    // A failure's suggestion reads it, covered or not.
    let mut f = pair(0.3, 0.8);
    f.source.state = r.source.state.clone();
    f.variant.state = r.variant.state.clone();
    f.allowed_changes = r.allowed_changes.clone();
    let lazy = lean_on(&f, true, || None);
    assert_eq!(lazy.status, Status::Fail);
    assert_eq!(lazy.state, lean(&f, None).state);
    assert_eq!(lazy.state.len(), 1);
}

#[test]
fn inference_names_the_change() {
    let mut r = pair(0.3, 0.3);
    r.variant.question = Some("q2".into());
    assert_eq!(derive(&r).transformation.name, "question-wording");
    let mut r = pair(0.3, 0.3);
    r.variant.state = Some(json!({"a": 1, "b": 2}));
    assert_eq!(derive(&r).transformation.name, "add-field");
    let mut r = pair(0.3, 0.3);
    r.source.state = Some(json!({"a": 1, "b": 2}));
    r.variant.state = Some(json!({"b": 2, "a": 1}));
    let d = derive(&r);
    assert_eq!(d.transformation.name, "reorder");
    // A reorder keeps every value: not a change of facts.
    r.allowed_changes = Some(vec![]);
    assert_eq!(derive(&r).validity, Validity::Valid);
    let mut r = pair(0.3, 0.3);
    r.variant.state = Some(json!({}));
    assert_eq!(derive(&r).transformation.name, "remove-field");
    r.transformation = Some("remove-evidence".into());
    let d = derive(&r);
    assert_eq!(d.transformation.name, "remove-evidence");
    assert!(!d.transformation.inferred);
}

#[test]
fn bare_rows_have_no_validity() {
    let mut r = pair(0.91, 0.93);
    r.source.state = None;
    r.variant.state = None;
    r.source.question = None;
    r.variant.question = None;
    r.policy = None;
    r.source.route = Some(Route::Action);
    r.variant.route = Some(Route::Action);
    let d = derive(&r);
    assert_eq!(d.validity, Validity::NotRecorded);
    assert_eq!(d.transformation.name, "not recorded");
    assert_eq!(d.source_margin, None);
    assert_eq!(d.status, Status::Pass);
}

/// A record read from JSON, as the loader's slow path reads it.
fn read(v: serde_json::Value) -> PairRecord {
    crate::core::record::map_record(v).unwrap()
}

/// A runner's line with a policy, an invariant expectation and a margin;
/// `source` and `variant` are the two sides.
fn line(source: serde_json::Value, variant: serde_json::Value) -> serde_json::Value {
    json!({
        "case_id": "c", "variant_id": "v",
        "policy": {"review_threshold": 0.55, "action_threshold": 0.9},
        "expectation": {"kind": "invariant", "max_probability_drift": 0.1,
                        "max_confidence_drift": 0.15, "require_same_route": true},
        "minimum_boundary_margin": 0.05,
        "source": source, "variant": variant,
        "passed": true, "reasons": [],
    })
}

#[test]
fn an_answer_without_confidence_is_a_service_error() {
    // The runner wrote a pass, but `validateAssessment` (seed 000) would
    // have thrown: the variant has no valid result.
    let r = read(line(
        json!({"response": {"probability": 0.3, "confidence": 0.8}, "outcome": "ok"}),
        json!({"response": {"probability": 0.31}, "outcome": "ok"}),
    ));
    let d = derive(&r);
    assert_eq!(d.status, Status::ServiceError);
    assert!(d.service_error);
    assert_eq!(
        d.check,
        Some(vec!["The variant answer has no confidence.".to_string()])
    );
    assert_eq!(
        d.why,
        "The variant answer has no confidence; the pair says nothing about the model."
    );
    assert_ne!(d.verdict, Some(true));
    // The same without an outcome: an answer was recorded, so it is checked.
    let r = read(line(
        json!({"noul": 0.3, "confidence": 0.8}),
        json!({"noul": 0.31}),
    ));
    assert_eq!(derive(&r).status, Status::ServiceError);
}

#[test]
fn a_probability_out_of_range_or_not_a_number_is_a_service_error() {
    let cases = [
        (
            json!({"response": {"probability": 1.4, "confidence": 0.8}}),
            "The source probability 1.4 is outside [0, 1].",
        ),
        (
            json!({"response": {"probability": -0.2, "confidence": 0.8}, "outcome": "ok"}),
            "The source probability -0.2 is outside [0, 1].",
        ),
        (
            json!({"response": {"probability": "0.7", "confidence": 0.8}}),
            "The source probability is a string, not a number from 0 through 1.",
        ),
        (
            json!({"response": {"probability": 0.7, "confidence": true}}),
            "The source confidence is a boolean, not a number from 0 through 1.",
        ),
        (
            json!({"response": {}, "outcome": "ok"}),
            "The source answer has no probability.",
        ),
        // An explicit ok with no answer at all.
        (
            json!({"outcome": "ok"}),
            "The source answer has no probability.",
        ),
    ];
    for (source, want) in cases {
        let r = read(line(
            source.clone(),
            json!({"response": {"probability": 0.72, "confidence": 0.8}}),
        ));
        let d = derive(&r);
        assert_eq!(d.status, Status::ServiceError, "{source}");
        assert_eq!(d.check, Some(vec![want.to_string()]), "{source}");
        assert_eq!(lean(&r, None).status, Status::ServiceError, "{source}");
    }
}

#[test]
fn a_side_that_records_no_answer_and_no_outcome_is_not_judged() {
    // Another tool's decision, or a payload-only side: nothing to validate.
    let r = read(json!({
        "case_id": "c", "variant_id": "v", "passed": true,
        "source": {"question": "q", "decision": "approve"},
        "variant": {"question": "q", "decision": "approve"},
    }));
    let d = derive(&r);
    assert_eq!(d.status, Status::Pass);
    assert!(!d.service_error);
}

#[test]
fn a_usable_spelling_wins_over_an_unusable_one() {
    // The response's probability is out of range, the side's own is usable.
    let r = read(line(
        json!({"response": {"probability": 1.5, "confidence": 0.8}, "probability": 0.4}),
        json!({"response": {"probability": 0.41, "confidence": 0.8}}),
    ));
    assert_eq!(r.source.probability, Some(0.4));
    assert_eq!(r.source.bad_probability, None);
    assert_eq!(derive(&r).status, Status::Pass);
}

#[test]
fn a_failure_of_the_margin_alone_is_a_boundary_observation() {
    // 0.91 is 0.01 from the action threshold; nothing else moved.
    let d = derive(&pair(0.91, 0.93));
    assert_eq!(d.status, Status::Boundary);
    assert!(d.status.is_failure());
    assert_eq!(d.near_boundary, Some(true));
    assert_eq!(d.check.as_ref().map(Vec::len), Some(1));
    assert!(
        d.why
            .starts_with("The source is too close to a threshold: margin 0.010 < 0.1;"),
        "{}",
        d.why
    );
    assert!(d.why.contains("boundary sensitivity"), "{}", d.why);
    assert!(d.further_checks().is_empty());
    // The margin and a drift: an invariant violation, near a threshold.
    let d = derive(&pair(0.91, 0.6));
    assert_eq!(d.status, Status::Fail);
    assert_eq!(d.near_boundary, Some(true));
}

#[test]
fn the_runners_boundary_reason_alone_is_a_boundary_observation() {
    // A bare row of the seed runner: no policy, so triage cannot compute
    // the margin; the runner's reason is the evidence.
    let bare = |reasons: serde_json::Value| {
        read(json!({
            "caseId": "c", "variantId": "v", "passed": false, "reasons": reasons,
            "source": {"noul": 0.91, "confidence": 0.84},
            "variant": {"noul": 0.93, "confidence": 0.85},
            "sourceRoute": "action", "variantRoute": "action",
        }))
    };
    let r = bare(json!([
        "Source is too close to a decision boundary: margin 0.010."
    ]));
    let d = derive(&r);
    assert_eq!(d.status, Status::Boundary);
    assert_eq!(d.near_boundary, Some(true));
    assert_eq!(
        d.why,
        "Recorded as failed: Source is too close to a decision boundary: margin 0.010; nothing else broke, so this is boundary sensitivity, not an invariant violation."
    );
    assert_eq!(lean(&r, None).status, Status::Boundary);
    // With another reason it stays a failure, still near a threshold.
    let r = bare(json!([
        "Source is too close to a decision boundary: margin 0.010.",
        "Noul drift 0.390 exceeds 0.1."
    ]));
    let d = derive(&r);
    assert_eq!((d.status, d.near_boundary), (Status::Fail, Some(true)));
    // A runner that names another broken condition keeps the pair failed
    // even when the re-check finds only the margin.
    let mut r = pair(0.91, 0.93);
    r.passed = Some(false);
    r.reasons = vec![
        "Source is too close to a decision boundary: margin 0.010.".into(),
        "Noul drift 0.120 exceeds 0.1.".into(),
    ];
    assert_eq!(derive(&r).status, Status::Fail);
}

#[test]
fn the_margin_has_the_drifts_tolerance() {
    // 0.65 − 0.55 is 0.09999999999999998 in doubles: a margin of exactly
    // the minimum 0.1, which is not under it.
    let mut r = pair(0.65, 0.66);
    r.minimum_boundary_margin = Some(0.1);
    let (p, review) = (r.source.probability.unwrap(), 0.55);
    assert!(p - review < 0.1, "the doubles this test is about");
    let d = derive(&r);
    assert_eq!(d.near_boundary, Some(false));
    assert_eq!(d.status, Status::Pass, "{:?}", d.check);
    assert!(!under_margin(0.65 - 0.55, 0.1));
    assert!(under_margin(0.099, 0.1));
    assert!(exceeds(0.1 + 1e-9, 0.1));
    assert!(!exceeds(0.3 - 0.2, 0.1));
}

#[test]
fn every_fact_uses_the_policys_route() {
    // The runner recorded review for 0.95 (it compared with `>`): the
    // policy routes it to action, as the source, so nothing flipped.
    let mut r = pair(0.95, 0.96);
    r.minimum_boundary_margin = None;
    r.source.route = Some(Route::Action);
    r.variant.route = Some(Route::Review);
    let d = derive(&r);
    assert_eq!(d.variant_route, Some(Route::Action));
    assert_eq!(d.flip, Some(false));
    assert_eq!(d.status, Status::Pass);
    assert!(d.warnings.iter().any(|w| w.contains("recorded as review")));
    let l = lean(&r, None);
    assert_eq!(
        (l.variant_route, l.flip),
        (Some(Route::Action), Some(false))
    );
    // Without a policy the recorded route is all there is.
    r.policy = None;
    assert_eq!(derive(&r).variant_route, Some(Route::Review));
}

#[test]
fn a_reorder_of_id_matched_elements_is_a_change() {
    // Recovery steps in another order, undeclared: the pair is invalid.
    let steps =
        |order: [&str; 2]| json!({"a": 1, "steps": order.map(|id| json!({"id": id, "do": id}))});
    let mut r = pair(0.3, 0.3);
    r.source.state = Some(steps(["s1", "s2"]));
    r.variant.state = Some(steps(["s2", "s1"]));
    r.allowed_changes = Some(vec![]);
    let d = derive(&r);
    assert_eq!(
        d.validity,
        Validity::Invalid {
            unexpected: vec!["state.steps".into()]
        }
    );
    assert_eq!(d.status, Status::Invalid);
    assert_eq!(d.transformation.name, "reorder");
    assert_eq!(lean(&r, None).validity, ValidityCode::Invalid);
    // Declared, it is permitted.
    r.allowed_changes = Some(vec!["state.steps".into()]);
    assert_eq!(derive(&r).validity, Validity::Valid);
}

#[test]
fn when_both_sides_fail_why_names_both_once() {
    let mut r = pair(0.7, 0.7);
    r.source.probability = None;
    r.source.outcome = Some(Outcome::Timeout);
    r.source.latency_ms = Some(30000.0);
    r.variant.outcome = Some(Outcome::Error);
    r.variant.error = Some("HTTP 503 Service Unavailable".into());
    let d = derive(&r);
    assert_eq!(d.status, Status::ServiceError);
    assert_eq!(
        d.why,
        "The source request timed out after 30000 ms, and the variant request failed with an error: HTTP 503 Service Unavailable; the pair says nothing about the model."
    );
    // The detail shows why and then the rest of the check: nothing twice.
    assert!(d.further_checks().is_empty());
}

#[test]
fn a_service_error_says_each_thing_once() {
    // An error text that only names the outcome adds nothing.
    let mut r = pair(0.7, 0.7);
    r.variant.probability = None;
    r.variant.outcome = Some(Outcome::Timeout);
    r.variant.latency_ms = Some(30000.0);
    for error in ["timeout", "Timed out after 30000 ms.", "TIMED_OUT"] {
        r.variant.error = Some(error.into());
        let d = derive(&r);
        assert_eq!(
            d.why,
            "The variant request timed out after 30000 ms; the pair says nothing about the model.",
            "{error}"
        );
        assert_eq!(d.check.as_ref().map(Vec::len), Some(1));
        assert!(d.further_checks().is_empty());
    }
    r.variant.error = Some("no response within 30000 ms".into());
    assert!(
        derive(&r)
            .why
            .contains("after 30000 ms: no response within 30000 ms;")
    );
}

#[test]
fn variant_ids_name_the_seed_runners_transformations() {
    let named = |id: &str| transformation_from_id(id);
    for (id, want) in [
        ("question-paraphrase", Some("paraphrase")),
        ("question-typo", Some("typo")),
        ("concise-phrasing", Some("concise-phrasing")),
        ("explicit-scope", Some("explicit-scope")),
        ("broaden-deadline", Some("deadline-change")),
        ("questionWording2", Some("question-wording")),
        ("irrelevant-ui-metadata", Some("add-irrelevant-field")),
        ("irrelevant-request-trace", Some("add-irrelevant-field")),
        ("remove_irrelevant_field", Some("remove-irrelevant-field")),
        ("reorderFields", Some("reorder")),
        ("remove-evidence", Some("remove-evidence")),
        ("evidenceAblation", Some("remove-evidence")),
        ("add-verified-evidence", Some("add-evidence")),
        ("resolved-evidence", Some("resolve-evidence")),
        ("v", None),
        ("checkout-order-7", None),
        ("", None),
    ] {
        assert_eq!(named(id), want, "{id}");
    }
}

#[test]
fn bare_rows_are_named_from_their_variant_id() {
    let mut r = pair(0.91, 0.52);
    for side in [&mut r.source, &mut r.variant] {
        side.question = None;
        side.state = None;
    }
    r.variant_id = "irrelevant-ui-metadata".into();
    let d = derive(&r);
    assert_eq!(d.transformation.name, "add-irrelevant-field");
    assert!(d.transformation.inferred);
    assert_eq!(
        family_of(&r, &d.transformation),
        Some(("state-noise", true))
    );
    let l = lean(&r, None);
    assert_eq!(l.inferred_transformation, Some("add-irrelevant-field"));
    assert!(l.inferred);
    r.variant_id = "question-paraphrase".into();
    let d = derive(&r);
    assert_eq!(
        (
            d.transformation.name.as_str(),
            family_of(&r, &d.transformation)
        ),
        ("paraphrase", Some(("question", true)))
    );
    // A recorded family or transformation is never overridden.
    r.family = Some("mine".into());
    assert_eq!(family_of(&r, &d.transformation), Some(("mine", false)));
    r.family = None;
    r.transformation = Some("custom".into());
    let d = derive(&r);
    assert!(!d.transformation.inferred);
    assert_eq!(family_of(&r, &d.transformation), None);
    // With payloads, the diff names the change, not the id.
    let mut r = pair(0.3, 0.3);
    r.variant_id = "question-typo".into();
    r.variant.state = Some(json!({}));
    assert_eq!(derive(&r).transformation.name, "remove-field");
}

#[test]
fn removed_or_added_evidence_is_named_from_the_diff() {
    let mut r = pair(0.3, 0.3);
    r.source.state = Some(json!({"a": 1, "evidence": ["E1", "E2"]}));
    r.variant.state = Some(json!({"a": 1, "evidence": ["E1"]}));
    let d = derive(&r);
    assert_eq!(d.transformation.name, "remove-evidence");
    assert_eq!(
        family_of(&r, &d.transformation),
        Some(("evidence-ablation", true))
    );
    r.variant.state = Some(json!({"a": 1}));
    assert_eq!(derive(&r).transformation.name, "remove-evidence");
    r.variant.state = Some(json!({"a": 1, "evidence": ["E1", "E2"], "supportingProof": "x"}));
    assert_eq!(derive(&r).transformation.name, "add-evidence");
    r.variant.state = Some(json!({"a": 1, "evidence": ["E1", "E2"], "theme": "dark"}));
    let d = derive(&r);
    assert_eq!(d.transformation.name, "add-field");
    assert_eq!(
        family_of(&r, &d.transformation),
        Some(("state-noise", true))
    );
    r.variant.state = Some(json!({"a": 2, "evidence": ["E1", "E2"]}));
    let d = derive(&r);
    assert_eq!(d.transformation.name, "value-change");
    assert_eq!(family_of(&r, &d.transformation), None);
}
