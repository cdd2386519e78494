use super::conclusion::{Flips, margin_clause, verdict_clause, warning_sentences};
use super::*;
use crate::core::annotations::{AnnotationSource, Change, Name};
use crate::core::index::{OpenOptions, load_run};
use crate::core::model::Route;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Write;

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

#[track_caller]
fn assert_close(a: Option<f64>, b: f64) {
    assert!(close(a, b), "{a:?} != {b}");
}

#[test]
fn wilson_matches_hand_computed_intervals() {
    // 18/20: p = 0.9, z² = 3.8416, denom = 1 + 3.8416/20 = 1.19208,
    // center = 0.9 + 3.8416/40 = 0.99604,
    // spread = 1.96·√(0.09/20 + 3.8416/1600) = 1.96·√0.006901 = 0.162823,
    // low = 0.833217/1.19208 = 0.699, high = 1.158863/1.19208 = 0.972.
    let r = wilson(18, 20).unwrap();
    assert_eq!(r.display(), "0.900 [0.699, 0.972]");
    assert_eq!((r.successes, r.trials), (18, 20));
    assert!((r.low - 0.698_962).abs() < 1e-6 && (r.high - 0.972_134).abs() < 1e-6);
    // 27/30: denom 1.128053, center 0.964027, spread 0.124992 → [0.744, 0.965].
    assert_eq!(wilson(27, 30).unwrap().display(), "0.900 [0.744, 0.965]");
    // 5/5: denom 1.76832, center 1.38416, spread = 1.96·√(3.8416/100) = 0.384160,
    // low = 1.0/1.76832 = 0.566; high is exactly 1.
    let r = wilson(5, 5).unwrap();
    assert_eq!(r.display(), "1.000 [0.566, 1.000]");
    assert_eq!(r.high, 1.0);
    // 3/12: denom 1.320133, center 0.410067, spread 0.292652 → [0.089, 0.532].
    assert_eq!(wilson(3, 12).unwrap().display(), "0.250 [0.089, 0.532]");
    // 0/10: center = spread = z²/20, so the low bound is exactly 0; high 0.278.
    let r = wilson(0, 10).unwrap();
    assert_eq!(r.low, 0.0);
    assert_eq!(r.display(), "0.000 [0.000, 0.278]");
    assert_eq!(wilson(0, 0), None);
    assert_eq!(show(&wilson(0, 0)), "—");
    assert_eq!(show(&wilson(1, 2)), "0.500 [0.095, 0.905]");
    // Not a proportion: no rate, no panic.
    assert_eq!(wilson(3, 2), None);
    let big = wilson(u64::MAX / 2, u64::MAX).unwrap();
    assert!(big.low <= big.value && big.value <= big.high);
}

/// The median and maximum of the widened values, as plainly as they
/// can be written: what the summary reports.
fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The nearest-rank `pct`th percentile of `v` (1 ≤ pct ≤ 100), by
/// selecting in place: what [`Kept::nearest_rank`] is checked against.
fn nearest_rank<T: Ord + Copy>(v: &mut [T], pct: u64) -> Option<T> {
    let n = v.len() as u64;
    if n == 0 {
        return None;
    }
    let rank = (pct * n).div_ceil(100).clamp(1, n);
    let (_, &mut x, _) = v.select_nth_unstable((rank - 1) as usize);
    Some(x)
}

proptest::proptest! {
    /// Counted in millionths, the medians and maxima are those of the
    /// widened values, to the bit.
    #[test]
    fn medians_in_millionths_are_those_of_the_values(
        xs in proptest::collection::vec(-1.0f32..=1.0, 0..40),
    ) {
        let widened: Vec<f64> = xs.iter().filter_map(|&x| widen(x)).map(f64::abs).collect();
        let kept: Vec<u32> = xs.iter().filter_map(|&x| magnitude(x)).collect();
        proptest::prop_assert_eq!(
            median_micros(&Kept::from(kept.clone()).view()).map(f64::to_bits),
            median(&widened).map(f64::to_bits)
        );
        let max = widened.iter().copied().max_by(f64::total_cmp);
        proptest::prop_assert_eq!(max_micros(&Kept::from(kept).view()).map(f64::to_bits), max.map(f64::to_bits));
    }

    /// Kept as an `f32`'s bits, any finite magnitude (0 and -0, the
    /// smallest and the largest, values that round to one millionth)
    /// selects as its millionths do, to the bit.
    #[test]
    fn magnitudes_select_as_their_millionths_do(
        xs in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::num::f32::ANY,
                -2.0f32..=2.0,
                proptest::sample::select(vec![0.0f32, -0.0, 5e-7, -5e-7, 1.5e-6, f32::MIN_POSITIVE, f32::MAX, f32::MIN]),
            ],
            0..40,
        ),
    ) {
        let millionths: Vec<u64> = xs.iter().filter_map(|&x| micros(x)).collect();
        let kept: Vec<u32> = xs.iter().filter_map(|&x| magnitude(x)).collect();
        proptest::prop_assert_eq!(kept.len(), millionths.len());
        let mut sorted = millionths.clone();
        sorted.sort_unstable();
        let want = match sorted.len() {
            0 => None,
            n if n % 2 == 1 => Some(sorted[n / 2] as f64 / MICRO),
            n => Some((sorted[n / 2 - 1] as f64 / MICRO + sorted[n / 2] as f64 / MICRO) / 2.0),
        };
        let kept = Kept::from(kept);
        let kept = kept.view();
        proptest::prop_assert_eq!(median_micros(&kept).map(f64::to_bits), want.map(f64::to_bits));
        proptest::prop_assert_eq!(
            max_micros(&kept).map(f64::to_bits),
            sorted.last().map(|&m| (m as f64 / MICRO).to_bits())
        );
    }

    /// Latencies kept as bits give the percentiles their units give.
    #[test]
    fn latencies_select_as_their_units_do(
        ms in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::num::f32::ANY,
                0.0f32..5000.0,
                proptest::sample::select(vec![0.0f32, -0.0, 0.0004, 0.0005, 1197.3]),
            ],
            0..40,
        ),
        pct in 1u64..=100,
    ) {
        let mut units: Vec<u64> = ms.iter().filter_map(|&x| latency_units(x)).collect();
        let kept = Kept::from(ms.iter().filter_map(|&x| latency_bits(x)).collect::<Vec<u32>>());
        let kept = kept.view();
        proptest::prop_assert_eq!(kept.len(), units.len());
        proptest::prop_assert_eq!(
            kept.nearest_rank(pct).and_then(|b| latency_units(f32::from_bits(b))),
            nearest_rank(&mut units, pct)
        );
    }
}

#[test]
fn median_of_odd_and_even_counts() {
    let kept = |xs: &[f32]| {
        Kept::from(
            xs.iter()
                .filter_map(|&x| magnitude(x))
                .collect::<Vec<u32>>(),
        )
    };
    let median = |xs: &[f32]| median_micros(&kept(xs).view());
    assert_eq!(median(&[]), None);
    // Odd: 0.1, 0.3, 0.5 → 0.3.
    assert_close(median(&[0.5, -0.1, 0.3]), 0.3);
    // Even: 0.1, 0.2, 0.4, 0.8 → (0.2 + 0.4) / 2 = 0.3.
    assert_close(median(&[0.8, 0.1, -0.4, 0.2]), 0.3);
    assert_close(median(&[0.25, f32::NAN]), 0.25);
    // Stored f32 values come back as the decimals that were written.
    assert_eq!(widen(0.05_f32), Some(0.05));
    assert_eq!(widen(f32::NAN), None);
    assert_eq!(micros(-0.15_f32), Some(150_000));
}

#[test]
fn histogram_edges_go_to_the_upper_bucket() {
    assert_eq!(bucket_of(0), 0);
    assert_eq!(bucket_of(49_999), 0);
    assert_eq!(bucket_of(50_000), 1);
    assert_eq!(bucket_of(150_000), 3);
    assert_eq!(bucket_of(449_999), 8);
    assert_eq!(bucket_of(450_000), 9);
    assert_eq!(bucket_of(1_000_000), 9);
    assert_eq!(bucket_of(u64::MAX), 9);
}

const INVARIANT: &str = "invariant";
const NOT_MORE: &str = "not-more-urgent";

/// One pair under policy 0.55/0.9. Invariant pairs allow |Δp| ≤ 0.1,
/// |Δc| ≤ 0.15, the same route, and need a source margin ≥ 0.05;
/// not-more-urgent pairs allow p to rise by 0.05. The transformation
/// decides what the variant changes, and `allowed_changes` declares it.
#[allow(clippy::too_many_arguments)]
fn pair(
    case: &str,
    variant: &str,
    family: Option<&str>,
    transformation: &str,
    kind: &str,
    (ps, cs): (f64, f64),
    (pv, cv): (f64, f64),
) -> Value {
    let mut v = json!({
        "case_id": case,
        "variant_id": variant,
        "transformation": transformation,
        "policy": {"review_threshold": 0.55, "action_threshold": 0.9},
        "source": {"question": "q", "state": {"a": 1},
                   "response": {"probability": ps, "confidence": cs}},
        "variant": {"question": "q", "state": {"a": 1},
                    "response": {"probability": pv, "confidence": cv}},
    });
    if let Some(f) = family {
        v["family"] = json!(f);
    }
    if kind == INVARIANT {
        v["expectation"] = json!({"kind": "invariant", "max_probability_drift": 0.1,
                "max_confidence_drift": 0.15, "require_same_route": true});
        v["minimum_boundary_margin"] = json!(0.05);
    } else {
        v["expectation"] = json!({"kind": kind, "permitted_probability_movement": 0.05});
    }
    match transformation {
        "paraphrase" => {
            v["variant"]["question"] = json!("q, reworded");
            v["allowed_changes"] = json!(["question"]);
        }
        "add-irrelevant-field" => {
            v["variant"]["state"] = json!({"a": 1, "theme": "dark"});
            v["allowed_changes"] = json!(["state.theme"]);
        }
        _ => {
            v["source"]["state"] = json!({"a": 1, "evidence": ["e1"]});
            v["allowed_changes"] = json!(["state.evidence"]);
        }
    }
    v
}

/// The hand-built run. Policy 0.55/0.9, so routes: p < 0.55 pass,
/// 0.55 ≤ p < 0.9 review, p ≥ 0.9 action; margin = distance to the nearer threshold.
///
/// | # | case/variant   | transformation       | p s→v     | routes          | margin | status        |
/// |---|----------------|----------------------|-----------|-----------------|--------|---------------|
/// | 1 | c1/para        | paraphrase           | .30→.32   | pass→pass       | .25    | pass          |
/// | 2 | c2/noise       | add-irrelevant-field | .53→.57   | pass→review  F  | .02 B  | fail          |
/// | 3 | c3/para        | paraphrase           | .97→.96   | action→action   | .07    | fail (Δc .2)  |
/// | 4 | c3/noise       | add-irrelevant-field | .88→.91   | review→action F | .02 B  | fail          |
/// | 5 | c4/para        | paraphrase           | .62→.77   | review→review   | .07    | fail (Δp .15) |
/// | 6 | c1/ablate      | remove-evidence      | .95→.45   | action→pass  F  | .05    | pass (n-m-u)  |
/// | 7 | c4/ablate      | remove-evidence      | .40→.48   | pass→pass       | .15    | fail (n-m-u)  |
/// | 8 | c7/noise       | add-irrelevant-field | .20→ —    | pass→ —         | .35    | service error |
/// | 9 | c5/noise       | add-irrelevant-field | .20→.22   | pass→pass       | .35    | invalid       |
/// |10 | c6/para rep 0  | paraphrase           | .30→.31   | pass→pass       | .25    | pass          |
/// |11 | c6/para rep 1  | paraphrase           | .30→.45   | pass→pass       | .25    | fail (Δp .15) |
/// |12 | c6/para rep 2  | paraphrase           | .30→.33   | pass→pass       | .25    | pass          |
///
/// F = route flip, B = near boundary (margin < 0.05). Families: question
/// (1, 3, 5, 10–12), state-noise (2, 4, 8), evidence-ablation (6, 7), none (9).
/// Pair 8's variant timed out; pair 9's variant also changed the undeclared
/// `state.a`. A malformed line is skipped as a problem.
fn fixture_lines() -> Vec<Value> {
    let q = Some("question");
    let n = Some("state-noise");
    let e = Some("evidence-ablation");
    let (para, noise, ablate) = ("paraphrase", "add-irrelevant-field", "remove-evidence");
    let mut p8 = pair("c7", "noise", n, noise, INVARIANT, (0.20, 0.8), (0.0, 0.0));
    p8["variant"].as_object_mut().map(|o| o.remove("response"));
    p8["variant"]["outcome"] = json!("timeout");
    p8["variant"]["latency_ms"] = json!(30000);
    let mut p9 = pair(
        "c5",
        "noise",
        None,
        noise,
        INVARIANT,
        (0.20, 0.8),
        (0.22, 0.8),
    );
    p9["variant"]["state"] = json!({"a": 2, "theme": "dark"});
    let rep = |r: u64, pv: f64| {
        let mut v = pair("c6", "para", q, para, INVARIANT, (0.30, 0.8), (pv, 0.8));
        v["repetition"] = json!(r);
        v
    };
    vec![
        pair("c1", "para", q, para, INVARIANT, (0.30, 0.8), (0.32, 0.8)),
        pair("c2", "noise", n, noise, INVARIANT, (0.53, 0.8), (0.57, 0.7)),
        pair("c3", "para", q, para, INVARIANT, (0.97, 0.9), (0.96, 0.7)),
        pair("c3", "noise", n, noise, INVARIANT, (0.88, 0.8), (0.91, 0.8)),
        pair("c4", "para", q, para, INVARIANT, (0.62, 0.6), (0.77, 0.65)),
        pair(
            "c1",
            "ablate",
            e,
            ablate,
            NOT_MORE,
            (0.95, 0.8),
            (0.45, 0.8),
        ),
        pair(
            "c4",
            "ablate",
            e,
            ablate,
            NOT_MORE,
            (0.40, 0.8),
            (0.48, 0.8),
        ),
        p8,
        p9,
        rep(0, 0.31),
        rep(1, 0.45),
        rep(2, 0.33),
    ]
}

struct Fixture {
    index: RunIndex,
    store: AnnotationStore,
    rows: Vec<u32>,
    _dir: tempfile::TempDir,
}

/// Load the fixture and classify pair 2 as distractor, pair 4 as
/// boundary and pair 8 as service-error; pair 1 (a pass) gets only a note.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.jsonl");
    let mut f = std::fs::File::create(&run).unwrap();
    for (i, v) in fixture_lines().iter().enumerate() {
        if i == 3 {
            writeln!(f, "{{not json").unwrap();
        }
        writeln!(f, "{v}").unwrap();
    }
    drop(f);
    let mut index = load_run(
        &[run.to_string_lossy().to_string()],
        &OpenOptions::default(),
    )
    .unwrap();
    assert_eq!(index.rows.len(), 12);
    let keys: Vec<_> = (0..12).map(|i| index.key_of(i).unwrap()).collect();
    let mut store = AnnotationStore::open(&dir.path().join("run.jsonl.triage.jsonl"), "t").unwrap();
    let change = |i: usize, category: Option<&str>, note: Option<&str>| {
        let r = &index.rows[i];
        Change {
            key: keys[i],
            case_id: index.str(r.case).into(),
            variant_id: index.str(r.variant).into(),
            category: category.map(Name::new),
            note: note.map(str::to_string),
            source: AnnotationSource::Manual,
        }
    };
    store
        .apply(vec![
            change(1, Some("distractor"), None),
            change(3, Some("boundary"), None),
            change(7, Some("service-error"), None),
            change(0, None, Some("looks fine")),
        ])
        .unwrap();
    let rows = (0..12).collect();
    Fixture {
        index,
        store,
        rows,
        _dir: dir,
    }
}

/// Groups are counted by interned id and named at the end: a family
/// spelled like the placeholder of a missing one is the same group.
#[test]
fn groups_of_one_name_are_one_group() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.jsonl");
    let mut f = std::fs::File::create(&run).unwrap();
    for (i, family) in [Some(NOT_RECORDED), None, Some("x"), None]
        .iter()
        .enumerate()
    {
        let mut l = json!({"case_id": format!("c{i}"), "variant_id": "v", "passed": i % 2 == 0,
                "source": {"probability": 0.1 * i as f64, "confidence": 0.8},
                "variant": {"probability": 0.5, "confidence": 0.8}});
        if let Some(fam) = family {
            l["family"] = json!(fam);
        }
        writeln!(f, "{l}").unwrap();
    }
    drop(f);
    let index = load_run(
        &[run.to_string_lossy().to_string()],
        &OpenOptions::default(),
    )
    .unwrap();
    let s = summarize(&index, &[0, 1, 2, 3], None, GroupBy::Family);
    let names: Vec<(&str, u64, u64)> = s
        .groups
        .iter()
        .map(|g| (g.name.as_str(), g.pairs, g.failures))
        .collect();
    assert_eq!(names, [(NOT_RECORDED, 3, 2), ("x", 1, 0)]);
    let nr = &s.groups[0];
    // |Δp| of 0.5, 0.4 and 0.2: the median and maximum of all three.
    assert_eq!((nr.median_abs_dp, nr.max_abs_dp), (Some(0.4), Some(0.5)));
}

#[test]
fn fixture_rows_are_as_designed() {
    let fx = fixture();
    let st: Vec<Status> = fx.index.rows.iter().map(|r| r.status()).collect();
    use Status::*;
    assert_eq!(
        st,
        [
            Pass,
            Fail,
            Fail,
            Fail,
            Fail,
            Pass,
            Fail,
            ServiceError,
            Invalid,
            Pass,
            Fail,
            Pass
        ]
    );
    let flips: Vec<usize> = (0..12)
        .filter(|&i| fx.index.rows[i].has(flags::FLIP))
        .collect();
    assert_eq!(flips, [1, 3, 5]);
    let near: Vec<usize> = (0..12)
        .filter(|&i| fx.index.rows[i].has(flags::NEAR_BOUNDARY))
        .collect();
    assert_eq!(near, [1, 3]);
    assert_eq!(fx.index.rows[7].variant_route(), None);
    assert_eq!(fx.index.rows[8].validity(), ValidityCode::Invalid);
    assert_eq!(fx.index.repetition(10), Some(1));
    assert_eq!(fx.index.repetition(0), None);
}

#[test]
fn summary_by_transformation_matches_hand_counts() {
    let fx = fixture();
    let s = summarize(
        &fx.index,
        &fx.rows,
        Some(&fx.store),
        GroupBy::Transformation,
    );
    // Failures: pairs 2, 3, 4, 5, 7, 8, 9, 11 = 8 of 12.
    assert_eq!(
        (s.pairs, s.failures, s.problems, s.classified),
        (12, 8, 1, 3)
    );
    assert_eq!(s.by, GroupBy::Transformation);
    let names: Vec<&str> = s.groups.iter().map(|g| g.name.as_str()).collect();
    // Sorted by failures: 4, 3, 1.
    assert_eq!(
        names,
        ["add-irrelevant-field", "paraphrase", "remove-evidence"]
    );

    let o = &s.overall;
    assert_eq!(o.name, "all");
    assert_eq!((o.pairs, o.failures), (12, 8));
    // 8/12 = 0.667, Wilson [0.391, 0.862].
    assert_eq!(show(&o.failure_rate), "0.667 [0.391, 0.862]");
    // The model metrics leave out 9 (invalid: a test fault) and 8 (a
    // service error): 10 model pairs, 6 of them broke their expectation.
    assert_eq!((o.model_pairs, o.failed, o.undeclared_pairs), (10, 6, 0));
    // Both routes known among them: all 10; flips 2, 4, 6 → 3/10.
    assert_eq!(o.route_flips, 3);
    assert_eq!(show(&o.route_flip_rate), "0.300 [0.108, 0.603]");
    // Invariant pairs: all but 6, 7 = 10; minus 9 (invalid) and 8 (service
    // error) = 8 trials; fails among them: 2, 3, 4, 5, 11 = 5 → 5/8.
    assert_eq!(show(&o.invariant_violation_rate), "0.625 [0.306, 0.863]");
    // Boundary: 2 and 4, both with both routes, both flipped → 2/2.
    assert_eq!(o.boundary_pairs, 2);
    assert_eq!(show(&o.boundary_flip_rate), "1.000 [0.342, 1.000]");
    // Service error: 8 → 1/12; invalid: 9.
    assert_eq!(o.service_errors, 1);
    assert_eq!(show(&o.service_error_rate), "0.083 [0.015, 0.354]");
    assert_eq!(o.invalid_pairs, 1);
    // |Δp| of the 10 model pairs: .01 .01 .02 .03 .03 .04 .08 .15 .15 .50
    // (pair 9's .02 is left out); the median is (.03 + .04) / 2.
    assert_close(o.median_abs_dp, 0.035);
    assert_close(o.max_abs_dp, 0.5);
    // |Δc|: seven 0s, .05 (5), .1 (2), .2 (3) → median 0, max .2.
    assert_close(o.median_abs_dc, 0.0);
    assert_close(o.max_abs_dc, 0.2);
    // Classified failures: 2, 4, 8 (pair 1's note is on a pass, without category).
    assert_eq!(o.classified, 3);

    let g = &s.groups[0];
    // add-irrelevant-field: pairs 2, 4, 8, 9.
    assert_eq!(g.pairs, 4);
    assert_eq!(g.failures, 4);
    assert_eq!(show(&g.failure_rate), "1.000 [0.510, 1.000]");
    // Model pairs: 2 and 4 (9 is invalid, 8 a service error).
    assert_eq!((g.model_pairs, g.failed), (2, 2));
    // Both routes: 2, 4; flips 2, 4 → 2/2.
    assert_eq!(g.route_flips, 2);
    assert_eq!(show(&g.route_flip_rate), "1.000 [0.342, 1.000]");
    // Invariant trials: 2, 4 (9 invalid, 8 service error) → 2/2 fail.
    assert_eq!(show(&g.invariant_violation_rate), "1.000 [0.342, 1.000]");
    assert_eq!(g.boundary_pairs, 2);
    assert_eq!(show(&g.boundary_flip_rate), "1.000 [0.342, 1.000]");
    assert_eq!(g.service_errors, 1);
    assert_eq!(show(&g.service_error_rate), "0.250 [0.046, 0.699]");
    assert_eq!(g.invalid_pairs, 1);
    // |Δp| of 2 and 4: .04 .03 → median .035, max .04; |Δc|: .1 0 → median
    // .05, max .1 (pair 9's .02 and 0 are left out).
    assert_close(g.median_abs_dp, 0.035);
    assert_close(g.max_abs_dp, 0.04);
    assert_close(g.median_abs_dc, 0.05);
    assert_close(g.max_abs_dc, 0.1);
    // Only pair 8 records a latency: its variant's 30 s timeout.
    assert_eq!(
        g.latency,
        Some(Latency {
            pairs: 1,
            p50_ms: 30000.0,
            p95_ms: 30000.0
        })
    );
    assert_eq!(g.classified, 3);

    let g = &s.groups[1];
    // paraphrase: pairs 1, 3, 5, 10, 11, 12; failures 3, 5, 11.
    assert_eq!((g.pairs, g.failures, g.route_flips), (6, 3, 0));
    assert_eq!(show(&g.failure_rate), "0.500 [0.188, 0.812]");
    // 0 flips of 6 with both routes.
    assert_eq!(show(&g.route_flip_rate), "0.000 [0.000, 0.390]");
    assert_eq!(show(&g.invariant_violation_rate), "0.500 [0.188, 0.812]");
    // Margins .25, .07, .07, .25, .25, .25: none under 0.05.
    assert_eq!(g.boundary_pairs, 0);
    assert_eq!(g.boundary_flip_rate, None);
    assert_eq!(g.service_errors, 0);
    assert_eq!(show(&g.service_error_rate), "0.000 [0.000, 0.390]");
    assert_eq!(g.invalid_pairs, 0);
    // |Δp|: .01 .01 .02 .03 .15 .15 → (.02 + .03) / 2 = .025; max .15.
    assert_close(g.median_abs_dp, 0.025);
    assert_close(g.max_abs_dp, 0.15);
    // |Δc|: 0 0 0 0 .05 .2 → median 0, max .2.
    assert_close(g.median_abs_dc, 0.0);
    assert_close(g.max_abs_dc, 0.2);
    assert_eq!(g.classified, 0);

    let g = &s.groups[2];
    // remove-evidence: pairs 6 (flip, pass) and 7 (fail); not invariant, no minimum margin.
    assert_eq!((g.pairs, g.failures, g.route_flips), (2, 1, 1));
    assert_eq!(show(&g.failure_rate), "0.500 [0.095, 0.905]");
    assert_eq!(show(&g.route_flip_rate), "0.500 [0.095, 0.905]");
    assert_eq!(g.invariant_violation_rate, None);
    assert_eq!((g.boundary_pairs, g.boundary_flip_rate), (0, None));
    assert_eq!(show(&g.service_error_rate), "0.000 [0.000, 0.658]");
    // |Δp|: .08, .50 → median .29, max .5; |Δc| 0, 0.
    assert_close(g.median_abs_dp, 0.29);
    assert_close(g.max_abs_dp, 0.5);
    assert_close(g.median_abs_dc, 0.0);
    assert_close(g.max_abs_dc, 0.0);

    // Groups add up to the whole.
    let sum = |f: fn(&GroupStats) -> u64| s.groups.iter().map(f).sum::<u64>();
    assert_eq!(sum(|g| g.pairs), 12);
    assert_eq!(sum(|g| g.failures), 8);
    assert_eq!(sum(|g| g.route_flips), 3);

    // [source][variant], model pairs only: pass→pass 1, 7, 10, 11, 12 = 5
    // (9 is invalid); pass→review 2; review→review 5; review→action 4;
    // action→pass 6; action→action 3.
    assert_eq!(s.route_matrix, [[5, 1, 0], [0, 1, 1], [1, 0, 1]]);
    assert_eq!(
        s.route_matrix[usize::from(Route::Action.rank())][usize::from(Route::Pass.rank())],
        1
    );

    // |Δp| buckets of the model pairs: [0, .05) .01 .01 .02 .03 .03 .04 = 6;
    // [.05, .1) .08; [.15, .2) .15 .15 (an edge goes up); [.45, ∞) .50.
    let counts: Vec<u64> = s.dp_histogram.iter().map(|b| b.count).collect();
    assert_eq!(counts, [6, 1, 0, 2, 0, 0, 0, 0, 0, 1]);
    assert_eq!(s.dp_histogram.len(), 10);
    assert_close(Some(s.dp_histogram[3].low), 0.15);
    assert_close(s.dp_histogram[3].high, 0.2);
    assert_close(Some(s.dp_histogram[9].low), 0.45);
    assert_eq!(s.dp_histogram[9].high, None);

    let cats = |v: &[(&str, u64)]| -> Vec<(String, u64)> {
        v.iter().map(|(c, n)| (c.to_string(), *n)).collect()
    };
    assert_eq!(
        s.categories_by_transformation,
        vec![
            (
                "add-irrelevant-field".to_string(),
                cats(&[
                    ("boundary", 1),
                    ("distractor", 1),
                    ("service-error", 1),
                    ("unclassified", 1)
                ])
            ),
            ("paraphrase".to_string(), cats(&[("unclassified", 3)])),
            ("remove-evidence".to_string(), cats(&[("unclassified", 1)])),
        ]
    );

    // Cases c1..c7; c5's only pair is invalid and c7's a service error, so
    // five cases test the model. Failing (a pair broke its expectation): c2,
    // c3, c4, c6 → 4/5 (c1 passed twice). Flipping: c1 (6), c2 (2), c3 (4)
    // → 3 of the 5 cases with both routes known somewhere.
    assert_eq!(
        s.case_level,
        CaseLevel {
            cases: 7,
            model_cases: 5,
            failing_cases: 4,
            failing_case_rate: wilson(4, 5),
            flipping_cases: 3,
            flipping_case_rate: wilson(3, 5),
        }
    );
    assert_eq!(
        show(&s.case_level.failing_case_rate),
        "0.800 [0.376, 0.964]"
    );

    // c6/para ran as repetitions 0, 1, 2: pass, fail, pass.
    assert_eq!(
        s.repetition,
        Some(Repetition {
            pairs_with_repetition: 3,
            max_repetition: 2,
            repeated_pair_ids: 1,
            inconsistent_pair_ids: 1,
        })
    );
}

#[test]
fn other_groupings() {
    let fx = fixture();
    let s = summarize(&fx.index, &fx.rows, Some(&fx.store), GroupBy::Category);
    let got: Vec<(&str, u64, u64, u64)> = s
        .groups
        .iter()
        .map(|g| (g.name.as_str(), g.pairs, g.failures, g.classified))
        .collect();
    // Unclassified failures: 3, 5, 7, 9, 11; passes 1, 6, 10, 12.
    assert_eq!(
        got,
        [
            ("unclassified", 5, 5, 0),
            ("boundary", 1, 1, 1),
            ("distractor", 1, 1, 1),
            ("service-error", 1, 1, 1),
            ("passed", 4, 0, 0),
        ]
    );
    // Without a store every failure is unclassified.
    let s = summarize(&fx.index, &fx.rows, None, GroupBy::Category);
    assert_eq!(s.classified, 0);
    assert_eq!(s.groups[0].name, "unclassified");
    assert_eq!(s.groups[0].failures, 8);

    let s = summarize(&fx.index, &fx.rows, None, GroupBy::Family);
    let got: Vec<(&str, u64, u64)> = s
        .groups
        .iter()
        .map(|g| (g.name.as_str(), g.pairs, g.failures))
        .collect();
    // question 6 pairs / 3 failures ties state-noise 3 / 3: by name.
    assert_eq!(
        got,
        [
            ("question", 6, 3),
            ("state-noise", 3, 3),
            ("evidence-ablation", 2, 1),
            ("not recorded", 1, 1),
        ]
    );

    let s = summarize(&fx.index, &fx.rows, None, GroupBy::Case);
    let got: Vec<(&str, u64, u64)> = s
        .groups
        .iter()
        .map(|g| (g.name.as_str(), g.pairs, g.failures))
        .collect();
    assert_eq!(
        got,
        [
            ("c3", 2, 2),
            ("c4", 2, 2),
            ("c2", 1, 1),
            ("c5", 1, 1),
            ("c6", 3, 1),
            ("c7", 1, 1),
            ("c1", 2, 0),
        ]
    );
}

#[test]
fn a_subset_and_bad_indices() {
    let fx = fixture();
    // Only the paraphrases of c6, plus indices past the end (skipped).
    let s = summarize(&fx.index, &[9, 10, 11, 12, 4000], None, GroupBy::Family);
    assert_eq!((s.pairs, s.failures), (3, 1));
    assert_eq!(s.case_level.cases, 1);
    assert_eq!(s.repetition.unwrap().inconsistent_pair_ids, 1);
    // Only the first repetition: repetitions are recorded but none repeats here.
    let s = summarize(&fx.index, &[9], None, GroupBy::Family);
    assert_eq!(s.repetition, None);
    let s = summarize(&fx.index, &[11], None, GroupBy::Family);
    assert_eq!(
        s.repetition,
        Some(Repetition {
            pairs_with_repetition: 1,
            max_repetition: 2,
            repeated_pair_ids: 0,
            inconsistent_pair_ids: 0,
        })
    );
    // Nothing at all.
    let s = summarize(&fx.index, &[], None, GroupBy::Transformation);
    assert_eq!((s.pairs, s.failures, s.groups.len()), (0, 0, 0));
    assert_eq!(s.overall.failure_rate, None);
    assert_eq!(s.overall.median_abs_dp, None);
    assert_eq!(s.case_level.failing_case_rate, None);
    assert!(s.dp_histogram.iter().all(|b| b.count == 0));
    assert_eq!(
        conclusion(&fx.index, &[], &s),
        [
            "No pairs to summarise.",
            "1 line could not be read and is left out of every count."
        ]
    );
    let empty = RunIndex::default();
    let s = summarize(&empty, &[0, 1], None, GroupBy::Case);
    assert_eq!(s.pairs, 0);
    assert_eq!(conclusion(&empty, &[0, 1], &s), ["No pairs to summarise."]);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Trials found case by case count as a table of every trial counts
    /// them, for any rows in any order.
    #[test]
    fn repeated_trials_count_as_a_table_of_trials_does(
        lines in proptest::collection::vec((0..4u8, 0..3u8, 0..2u8, proptest::bool::ANY), 1..40),
        pick in proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 0..50),
    ) {
        let text: String = lines
            .iter()
            .map(|&(c, v, m, pass)| {
                let drift = if pass { 0.31 } else { 0.6 };
                let mut l = pair(&format!("c{c}"), &format!("v{v}"), Some("question"), "paraphrase", INVARIANT, (0.3, 0.8), (drift, 0.8));
                l["model_id"] = json!(format!("m{m}"));
                format!("{l}\n")
            })
            .collect();
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        let index = load_run(&[f.path().to_string_lossy().to_string()], &OpenOptions::default()).unwrap();
        // Some rows in any order, and an index past the end.
        let mut rows: Vec<u32> = pick.iter().map(|i| i.index(lines.len()) as u32).collect();
        rows.sort_unstable();
        rows.dedup();
        let mut order: Vec<u32> = rows.iter().rev().copied().collect();
        order.push(lines.len() as u32 + 5);
        let mut table: HashMap<(Sym, Sym, Sym), (u64, bool, bool)> = HashMap::new();
        for &i in &order {
            if let Some(r) = index.rows.get(i as usize) {
                let t = table.entry((r.case, r.variant, index.model(i as usize))).or_default();
                t.0 += 1;
                t.1 |= r.status() == Status::Pass;
                t.2 |= r.status() == Status::Fail;
            }
        }
        let repeated = table.values().filter(|t| t.0 > 1).count() as u64;
        let inconsistent = table.values().filter(|t| t.0 > 1 && t.1 && t.2).count() as u64;
        let s = summarize(&index, &order, None, GroupBy::Family);
        let got = s.repetition.map_or((0, 0), |r| (r.repeated_pair_ids, r.inconsistent_pair_ids));
        proptest::prop_assert_eq!(got, (repeated, inconsistent));
    }
}

#[test]
fn repetitions_are_per_model_and_ignore_service_errors() {
    let mut base = pair(
        "c",
        "v",
        Some("question"),
        "paraphrase",
        INVARIANT,
        (0.3, 0.8),
        (0.31, 0.8),
    );
    base["model_id"] = json!("m1");
    let mut lines = Vec::new();
    // m1: pass, pass, timeout → repeated, consistent (a timeout is no verdict).
    lines.push(base.clone());
    lines.push(base.clone());
    let mut timeout = base.clone();
    timeout["variant"]["outcome"] = json!("timeout");
    lines.push(timeout);
    // m2 (a different model): pass once, and one fail once → not repeats of m1.
    let mut m2 = base.clone();
    m2["model_id"] = json!("m2");
    lines.push(m2.clone());
    let mut m3 = base.clone();
    m3["model_id"] = json!("m3");
    m3["variant"]["response"]["probability"] = json!(0.6);
    lines.push(m3);
    let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    let index = load_run(
        &[f.path().to_string_lossy().to_string()],
        &OpenOptions::default(),
    )
    .unwrap();
    let rows: Vec<u32> = (0..5).collect();
    let s = summarize(&index, &rows, None, GroupBy::Transformation);
    assert_eq!(
        s.repetition,
        Some(Repetition {
            pairs_with_repetition: 0,
            max_repetition: 0,
            repeated_pair_ids: 1,
            inconsistent_pair_ids: 0,
        })
    );
    let c = conclusion(&index, &rows, &s);
    assert!(
        c.contains(
            &"Repeated trials: none of the 1 repeated pair changed between pass and fail."
                .to_string()
        ),
        "{c:#?}"
    );
}

#[test]
fn conclusion_of_the_fixture() {
    let fx = fixture();
    let s = summarize(
        &fx.index,
        &fx.rows,
        Some(&fx.store),
        GroupBy::Transformation,
    );
    let c = conclusion(&fx.index, &fx.rows, &s);
    assert_eq!(
        c,
        [
            "12 pairs, 8 failures: failure rate 0.667 [0.391, 0.862].",
            "The model metrics count the 10 pairs that test the model; 1 invalid pair and 1 service error are left out.",
            "With only 12 pairs the intervals are wide: read their bounds, not just the rates.",
            "Invariant violation rate: 5 of 8 valid invariant pairs broke the expected relation (0.625 [0.306, 0.863]).",
            // Pairs 2 and 4: margins .02 and .02, both fail.
            "2 route flips came from add-irrelevant-field, both within 0.02 of a threshold; both broke their expectation.",
            // Pair 6: margin |.95 − .9| = .05, a permitted not-more-urgent drop.
            "1 route flip came from remove-evidence, within 0.05 of a threshold; it was allowed by its expectation.",
            "2 pairs have sources closer to a threshold than their minimum boundary margin; 2 of the 2 with both routes known flipped route (1.000 [0.342, 1.000]).",
            "Service errors (1) are counted apart from robustness failures.",
            "1 invalid pair changed undeclared facts: fix the test, not the model.",
            "Latency of a pair (the slower of its two requests): p50 30000 ms, p95 30000 ms, over 1 pair with a recorded latency (nearest rank).",
            "Broken expectations touch 4 of 5 source cases that test the model (0.800 [0.376, 0.964]); variants of one case are correlated, so cases, not pairs, are the independent evidence.",
            "Repeated trials: 1 pair disagrees with itself across repetitions.",
            "3 of 8 failures are classified; 5 still need a category.",
            "1 line could not be read and is left out of every count.",
        ]
    );
    // The same input gives the same sentences.
    assert_eq!(conclusion(&fx.index, &fx.rows, &s), c);
}

#[test]
fn margin_and_verdict_clauses() {
    let f = |n: u64, failed: u64, passed: u64, margins: &[u64]| Flips {
        n,
        failed,
        passed,
        margins: margins.to_vec(),
    };
    assert_eq!(
        margin_clause(&f(3, 3, 0, &[10_000, 40_000, 50_000])).as_deref(),
        Some("all within 0.05 of a threshold")
    );
    assert_eq!(
        margin_clause(&f(1, 1, 0, &[100_000])).as_deref(),
        Some("within 0.1 of a threshold")
    );
    assert_eq!(
        margin_clause(&f(2, 1, 1, &[200_000, 300_000])).as_deref(),
        Some("none within 0.1 of a threshold")
    );
    assert_eq!(
        margin_clause(&f(3, 0, 0, &[20_000, 300_000, 400_000])).as_deref(),
        Some("1 of them within 0.1 of a threshold")
    );
    // An unknown margin forbids "all" and "none".
    assert_eq!(
        margin_clause(&f(2, 0, 0, &[20_000])).as_deref(),
        Some("1 of them within 0.1 of a threshold")
    );
    assert_eq!(margin_clause(&f(2, 0, 0, &[200_000])), None);
    assert_eq!(margin_clause(&f(1, 0, 0, &[])), None);
    assert_eq!(
        verdict_clause(&f(3, 3, 0, &[])),
        "all broke their expectation"
    );
    assert_eq!(
        verdict_clause(&f(3, 0, 3, &[])),
        "all were allowed by their expectation"
    );
    assert_eq!(
        verdict_clause(&f(4, 1, 2, &[])),
        "1 of them broke their expectation"
    );
}

#[test]
fn sample_run_totals_add_up() {
    let index = crate::core::index::sample::sample();
    let rows: Vec<u32> = (0..index.rows.len() as u32).collect();
    let failures = index
        .rows
        .iter()
        .filter(|r| r.status().is_failure())
        .count() as u64;
    // The model metrics count the pairs that are neither invalid nor a
    // service error.
    let model = || index.rows.iter().filter(|r| tests_model(r));
    let flips = model()
        .filter(|r| r.has(flags::FLIP) && r.source_route().is_some() && r.variant_route().is_some())
        .count() as u64;
    let known = model()
        .filter(|r| r.source_route().is_some() && r.variant_route().is_some())
        .count() as u64;
    for by in GroupBy::ALL {
        let s = summarize(&index, &rows, None, by);
        assert_eq!(s.pairs, 72, "{by:?}");
        assert_eq!(s.failures, failures, "{by:?}");
        assert_eq!(s.problems, 0);
        let sum = |f: fn(&GroupStats) -> u64| s.groups.iter().map(f).sum::<u64>();
        assert_eq!(sum(|g| g.pairs), 72, "{by:?}");
        assert_eq!(sum(|g| g.failures), failures, "{by:?}");
        assert_eq!(sum(|g| g.route_flips), flips, "{by:?}");
        assert_eq!(sum(|g| g.service_errors), s.overall.service_errors);
        assert_eq!(sum(|g| g.invalid_pairs), s.overall.invalid_pairs);
        assert_eq!(sum(|g| g.boundary_pairs), s.overall.boundary_pairs);
        assert_eq!(s.route_matrix.iter().flatten().sum::<u64>(), known);
        let with_dp = model().filter(|r| !r.dp.is_nan()).count() as u64;
        assert_eq!(s.dp_histogram.iter().map(|b| b.count).sum::<u64>(), with_dp);
        let cat_total: u64 = s
            .categories_by_transformation
            .iter()
            .flat_map(|(_, c)| c.iter().map(|x| x.1))
            .sum();
        assert_eq!(cat_total, failures);
        // Sorted by failures, then name.
        assert!(s.groups.windows(2).all(|w| {
            w[0].failures > w[1].failures
                || (w[0].failures == w[1].failures && w[0].name < w[1].name)
        }));
        assert!(!conclusion(&index, &rows, &s).is_empty());
        assert!(serde_json::to_string(&s).is_ok());
    }
    // The sample's README: 5 service errors, 3 invalid pairs.
    let s = summarize(&index, &rows, None, GroupBy::Transformation);
    assert_eq!(s.overall.service_errors, 5);
    assert_eq!(s.overall.invalid_pairs, 3);
}

#[test]
fn serializes_with_lowercase_grouping() {
    assert_eq!(
        serde_json::to_value(GroupBy::Transformation).unwrap(),
        json!("transformation")
    );
    for by in GroupBy::ALL {
        assert_eq!(serde_json::to_value(by).unwrap(), json!(by.name()));
    }
    let r = wilson(1, 4).unwrap();
    let v = serde_json::to_value(r).unwrap();
    assert_eq!(v["successes"], json!(1));
    assert_eq!(v["trials"], json!(4));
}

mod arbitrary {
    use super::*;
    use crate::core::load::batch::Batch;
    use crate::core::row::{OutcomeCode, PackedCodes, Pos, RowCodes, RowLabels};
    use proptest::prelude::*;

    fn float() -> impl Strategy<Value = f32> {
        prop_oneof![
            Just(f32::NAN),
            Just(f32::INFINITY),
            Just(f32::NEG_INFINITY),
            -1.0f32..1.0,
            any::<f32>(),
        ]
    }

    fn route() -> impl Strategy<Value = Option<Route>> {
        prop_oneof![
            Just(None),
            Just(Some(Route::Pass)),
            Just(Some(Route::Review)),
            Just(Some(Route::Action)),
        ]
    }

    fn sym() -> impl Strategy<Value = Sym> {
        prop_oneof![Just(NO_SYM), 0u32..4, any::<u32>()]
    }

    fn row() -> impl Strategy<Value = (PairRow, RowLabels)> {
        let status = prop_oneof![
            Just(Status::Invalid),
            Just(Status::ServiceError),
            Just(Status::Fail),
            Just(Status::Unchecked),
            Just(Status::Pass),
        ];
        let exp = prop_oneof![Just(ExpKind::Invariant), Just(ExpKind::NotLessUrgent)];
        let validity = prop_oneof![
            Just(ValidityCode::Valid),
            Just(ValidityCode::Invalid),
            Just(ValidityCode::Undeclared),
            Just(ValidityCode::NotRecorded),
        ];
        let repetition = prop_oneof![Just(u32::MAX), 0u32..3, any::<u32>()];
        (
            (sym(), sym(), sym(), sym(), sym()),
            (status, any::<u8>(), route(), route()),
            (float(), float(), float(), float()),
            (exp, validity, repetition, 0u8..3),
        )
            .prop_map(
                |(
                    (case, variant, transformation, family, model),
                    (status, flags, source_route, variant_route),
                    (dp, dc, margin, latency),
                    (expectation, validity, repetition, _),
                )| {
                    (
                        PairRow {
                            pos: Pos::new(0, 0),
                            case,
                            variant,
                            dp,
                            dc,
                            margin,
                            variant_margin: f32::NAN,
                            latency,
                            codes: PackedCodes::pack(RowCodes {
                                status,
                                flags,
                                source_route,
                                variant_route,
                                expectation,
                                source_outcome: OutcomeCode::Ok,
                                variant_outcome: OutcomeCode::Ok,
                                validity,
                                suggestion: None,
                            }),
                        },
                        RowLabels {
                            transformation,
                            family,
                            // The model sym, made a versions id in the test.
                            versions: model,
                            repetition: (repetition != u32::MAX).then_some(repetition),
                        },
                    )
                },
            )
    }

    fn sane(r: &Option<Rate>) -> bool {
        r.is_none_or(|r| {
            r.successes <= r.trials
                && 0.0 <= r.low
                && r.low <= r.value
                && r.value <= r.high
                && r.high <= 1.0
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any rows, any indices: no panic, and the parts add up to the whole.
        #[test]
        fn any_rows_summarise_without_panic(
            rows in proptest::collection::vec(row(), 0..40),
            picks in proptest::collection::vec(0u32..50, 0..60),
            by in prop_oneof![
                Just(GroupBy::Transformation),
                Just(GroupBy::Family),
                Just(GroupBy::Category),
                Just(GroupBy::Case),
                Just(GroupBy::Model),
            ],
        ) {
            let mut index = RunIndex::default();
            let (rows, mut labels): (Vec<PairRow>, Vec<RowLabels>) = rows.into_iter().unzip();
            for l in &mut labels {
                l.versions = index.versions_id([NO_SYM, NO_SYM, l.versions]);
            }
            index.apply(Batch {
                rows,
                labels,
                ..Batch::default()
            });
            let s = summarize(&index, &picks, None, by);
            // Counted in chunks on rayon's threads, the same summary.
            prop_assert_eq!(&summarize_on(&index, &picks, None, &[by], true), &vec![s.clone()]);
            // Under two groupings at once, in order, each as on its own,
            // sequentially and on rayon's threads.
            let family = summarize(&index, &picks, None, GroupBy::Family);
            for parallel in [false, true] {
                let each = summarize_on(&index, &picks, None, &[by, GroupBy::Family], parallel);
                prop_assert_eq!(&each, &vec![s.clone(), family.clone()]);
            }
            let valid = picks.iter().filter(|&&i| (i as usize) < index.rows.len()).count();
            prop_assert_eq!(s.pairs, valid as u64);
            // The whole's medians, maxima and percentiles, selected from a
            // grouping's values, are those of the picked rows themselves.
            let picked: Vec<&PairRow> = picks.iter().filter_map(|&i| index.rows.get(i as usize)).collect();
            let model: Vec<&PairRow> = picked.iter().copied().filter(|r| tests_model(r)).collect();
            // (In millionths, as the summary counts them.)
            let millionths = |x: fn(&PairRow) -> f32| -> Vec<u64> {
                let mut v: Vec<u64> = model.iter().filter_map(|r| micros(x(r))).collect();
                v.sort_unstable();
                v
            };
            let value = |m: u64| m as f64 / MICRO;
            let median = |v: &[u64]| match v.len() {
                0 => None,
                n if n % 2 == 1 => Some(value(v[n / 2])),
                n => Some((value(v[n / 2 - 1]) + value(v[n / 2])) / 2.0),
            };
            let (dps, dcs) = (millionths(|r| r.dp), millionths(|r| r.dc));
            let bits = |x: Option<f64>| x.map(f64::to_bits);
            prop_assert_eq!(bits(s.overall.median_abs_dp), bits(median(&dps)));
            prop_assert_eq!(bits(s.overall.max_abs_dp), bits(dps.last().map(|&m| value(m))));
            prop_assert_eq!(bits(s.overall.median_abs_dc), bits(median(&dcs)));
            prop_assert_eq!(bits(s.overall.max_abs_dc), bits(dcs.last().map(|&m| value(m))));
            let mut units: Vec<u64> = picked.iter().filter_map(|r| latency_units(r.latency)).collect();
            let p50 = nearest_rank(&mut units, 50).map(|u| u as f64 / LATENCY_UNITS);
            prop_assert_eq!(bits(s.overall.latency.as_ref().map(|l| l.p50_ms)), bits(p50));
            prop_assert_eq!(s.groups.iter().map(|g| g.pairs).sum::<u64>(), s.pairs);
            prop_assert_eq!(s.groups.iter().map(|g| g.failures).sum::<u64>(), s.failures);
            prop_assert!(s.dp_histogram.iter().map(|b| b.count).sum::<u64>() <= s.pairs);
            prop_assert!(s.route_matrix.iter().flatten().sum::<u64>() <= s.overall.model_pairs);
            prop_assert!(s.dp_histogram.iter().map(|b| b.count).sum::<u64>() <= s.overall.model_pairs);
            prop_assert!(s.case_level.failing_cases <= s.case_level.model_cases);
            prop_assert!(s.case_level.model_cases <= s.case_level.cases);
            for g in s.groups.iter().chain(std::iter::once(&s.overall)) {
                for r in [
                    &g.failure_rate,
                    &g.route_flip_rate,
                    &g.invariant_violation_rate,
                    &g.boundary_flip_rate,
                    &g.service_error_rate,
                ] {
                    prop_assert!(sane(r), "{:?}", r);
                }
                prop_assert!(g.model_pairs + g.invalid_pairs + g.service_errors == g.pairs);
                prop_assert!(g.undeclared_pairs <= g.model_pairs && g.failed <= g.model_pairs);
                prop_assert!(g.route_flip_rate.is_none_or(|r| r.trials <= g.model_pairs));
                prop_assert!(g.latency.is_none_or(|l| l.p50_ms <= l.p95_ms && l.pairs <= g.pairs));
                prop_assert!(g.median_abs_dp.is_none_or(|m| m.is_finite() && m >= 0.0));
                prop_assert!(g.median_abs_dp <= g.max_abs_dp);
            }
            prop_assert!(sane(&s.case_level.failing_case_rate));
            prop_assert!(sane(&s.case_level.flipping_case_rate));
            prop_assert!(serde_json::to_string(&s).is_ok());
            let c = conclusion(&index, &picks, &s);
            prop_assert!(!c.is_empty());
        }

        #[test]
        fn any_wilson_is_sane(k in any::<u64>(), n in any::<u64>()) {
            let r = wilson(k, n);
            prop_assert_eq!(r.is_some(), n > 0 && k <= n);
            prop_assert!(sane(&r));
        }
    }
}

/// A run of `tests/fixtures/stats/`, every pair of it, summarised by transformation.
fn stats_fixture(name: &str) -> (RunIndex, Vec<u32>, Summary) {
    let path = format!("{}/tests/fixtures/stats/{name}", env!("CARGO_MANIFEST_DIR"));
    let index = load_run(&[path], &OpenOptions::default()).unwrap();
    assert!(index.problems.is_empty(), "{:?}", index.problems);
    let rows: Vec<u32> = (0..index.rows.len() as u32).collect();
    let s = summarize(&index, &rows, None, GroupBy::Transformation);
    (index, rows, s)
}

/// Two valid pairs keep their route; two invalid pairs flip (one from a
/// source 0.02 from a threshold) and drift far. The invalid pairs fault the
/// test, not the model (seed 001): every model metric is the valid pairs'.
#[test]
fn invalid_pairs_stay_out_of_the_model_metrics() {
    let (index, rows, s) = stats_fixture("invalid-flips.jsonl");
    let st: Vec<Status> = index.rows.iter().map(|r| r.status()).collect();
    assert_eq!(
        st,
        [Status::Pass, Status::Pass, Status::Invalid, Status::Invalid]
    );
    let o = &s.overall;
    assert_eq!(
        (o.pairs, o.failures, o.invalid_pairs, o.model_pairs),
        (4, 2, 2, 2)
    );
    // Route flips: 0 of the 2 valid pairs, not 2 of 4.
    assert_eq!(o.route_flips, 0);
    assert_eq!(o.route_flip_rate, wilson(0, 2));
    // Drift: .02 and .02, not .30 and .42.
    assert_eq!((o.median_abs_dp, o.max_abs_dp), (Some(0.02), Some(0.02)));
    // The invalid pair whose source sits 0.02 from the review threshold is
    // not a boundary observation of the model.
    assert_eq!((o.boundary_pairs, o.boundary_flip_rate), (0, None));
    assert_eq!(s.route_matrix, [[1, 0, 0], [0, 1, 0], [0, 0, 0]]);
    assert_eq!(s.dp_histogram[0].count, 2);
    assert_eq!(s.dp_histogram.iter().map(|b| b.count).sum::<u64>(), 2);
    // sso-login-103 has only an invalid pair: it is not a case that tests
    // the model, and no case broke an expectation.
    let c = &s.case_level;
    assert_eq!(
        (c.cases, c.model_cases, c.failing_cases, c.flipping_cases),
        (3, 2, 0, 0)
    );
    assert_eq!(c.failing_case_rate, wilson(0, 2));
    let sentences = conclusion(&index, &rows, &s);
    assert!(
        sentences.iter().all(|x| !x.contains("route flip came from")
            && !x.contains("route flips came from")
            && !x.contains("closer to a threshold")
            && !x.contains("touch")),
        "{sentences:#?}"
    );
    assert!(
        sentences.contains(
            &"The model metrics count the 2 pairs that test the model; 2 invalid pairs are left out."
                .to_string()
        ),
        "{sentences:#?}"
    );
    assert!(
        sentences.contains(
            &"Among the pairs that test the model, no failures or route flips in paraphrase (2 pairs)."
                .to_string()
        ),
        "{sentences:#?}"
    );
}

/// Pairs whose allowed changes were never declared cannot be judged valid:
/// they are out of the invariant violation rate, and counted apart.
#[test]
fn undeclared_pairs_are_not_among_the_valid_invariant_pairs() {
    let (index, rows, s) = stats_fixture("undeclared.jsonl");
    let validity: Vec<ValidityCode> = index.rows.iter().map(|r| r.validity()).collect();
    use ValidityCode::{Undeclared, Valid};
    assert_eq!(validity, [Valid, Undeclared, Undeclared, Valid]);
    let o = &s.overall;
    // The valid invariant pairs: invoice-vat-201/paraphrase (kept) and
    // webhook-lag-202/typo (|Δp| 0.15 > 0.1): 1 of 2, not 2 of 4.
    assert_eq!(o.invariant_violation_rate, wilson(1, 2));
    assert_eq!((o.undeclared_pairs, o.model_pairs, o.failed), (2, 4, 2));
    // Their routes and drift are still the model's: none flipped.
    assert_eq!(o.route_flip_rate, wilson(0, 4));
    let g = s
        .groups
        .iter()
        .find(|g| g.name == "concise-phrasing")
        .unwrap();
    assert_eq!((g.undeclared_pairs, g.invariant_violation_rate), (1, None));
    let sentences = conclusion(&index, &rows, &s);
    assert!(
        sentences.contains(
            &"2 pairs declare no allowed changes: their validity is not judged, so they are not among the valid invariant pairs."
                .to_string()
        ),
        "{sentences:#?}"
    );
}

/// A service error says nothing about the model, even when its answer
/// recorded a probability and a route: it is in no model metric, and its
/// latency is in the percentiles.
#[test]
fn service_errors_stay_out_of_every_model_metric() {
    let (index, rows, s) = stats_fixture("service-errors.jsonl");
    let st: Vec<Status> = index.rows.iter().map(|r| r.status()).collect();
    use Status::{Fail, Pass, ServiceError};
    assert_eq!(st, [ServiceError, ServiceError, Pass, Fail]);
    // The second service error recorded a flip pass → action with |Δp| 0.42
    // from a source 0.02 from a threshold: the model metrics do not see it.
    let o = &s.overall;
    assert_eq!((o.pairs, o.service_errors, o.model_pairs), (4, 2, 2));
    assert_eq!((o.route_flips, o.route_flip_rate), (0, wilson(0, 2)));
    assert_eq!((o.boundary_pairs, o.boundary_flip_rate), (0, None));
    assert_eq!(o.invariant_violation_rate, wilson(1, 2));
    assert_close(o.median_abs_dp, 0.085);
    assert_eq!(o.max_abs_dp, Some(0.15));
    assert_eq!(s.route_matrix, [[2, 0, 0], [0, 0, 0], [0, 0, 0]]);
    let c = &s.case_level;
    assert_eq!(
        (c.cases, c.model_cases, c.failing_cases, c.flipping_cases),
        (2, 1, 1, 0)
    );
    // Latency of each pair, the slower request: 30000, 1400, 1350, 2100.
    // Nearest rank: p50 is the 2nd of 4 (1400), p95 the 4th (30000).
    assert_eq!(
        o.latency,
        Some(Latency {
            pairs: 4,
            p50_ms: 1400.0,
            p95_ms: 30000.0
        })
    );
    let sentences = conclusion(&index, &rows, &s);
    assert!(
        sentences
            .iter()
            .all(|x| !x.contains("came from paraphrase") && !x.contains("closer to a threshold")),
        "{sentences:#?}"
    );
    assert!(
        sentences.contains(&"Broken expectations touch 1 of 1 source cases that test the model (1.000 [0.207, 1.000]); variants of one case are correlated, so cases, not pairs, are the independent evidence.".to_string()),
        "{sentences:#?}"
    );
}

#[test]
fn latency_percentiles_are_nearest_rank() {
    // 1..=20: p50 is the 10th value, p95 the 19th.
    let v = Kept::from((1..=20).rev().map(|x| x * 1000).collect::<Vec<u32>>());
    let v = v.view();
    assert_eq!(v.nearest_rank(50), Some(10_000));
    assert_eq!(v.nearest_rank(95), Some(19_000));
    // One value is every percentile; none has none.
    assert_eq!(Kept::from(vec![7]).view().nearest_rank(95), Some(7));
    assert_eq!(Kept::default().view().nearest_rank(50), None);
    // 3 values: p50 is the 2nd (⌈1.5⌉), p95 the 3rd (⌈2.85⌉).
    assert_eq!(
        Kept::from(vec![30, 10, 20]).view().nearest_rank(50),
        Some(20)
    );
    assert_eq!(
        Kept::from(vec![30, 10, 20]).view().nearest_rank(95),
        Some(30)
    );
    // Recorded latencies come back as written; negative and missing ones are not latencies.
    assert_eq!(latency_units(1197.3), Some(1_197_300));
    assert_eq!(latency_units(f32::NAN), None);
    assert_eq!(latency_units(-5.0), None);
    assert_eq!(
        latency_of(
            &Kept::from(
                [1197.3f32, 30000.0]
                    .iter()
                    .filter_map(|&x| latency_bits(x))
                    .collect::<Vec<u32>>()
            )
            .view()
        ),
        Some(Latency {
            pairs: 2,
            p50_ms: 1197.3,
            p95_ms: 30000.0
        })
    );
}

/// Seed 000, section 7: the pairs of one case routed by two policies are
/// warned about, in the run's problems (what `--strict` fails on) and in
/// the summary of any selection that holds both policies.
#[test]
fn a_case_that_mixes_policies_is_warned_about() {
    use crate::core::index::inputs::{InputWarning, PolicyUse};
    use crate::core::problem::ProblemKind;
    let (index, rows, s) = {
        let path = format!(
            "{}/tests/fixtures/stats/mixed-policy.jsonl",
            env!("CARGO_MANIFEST_DIR")
        );
        let index = load_run(&[path], &OpenOptions::default()).unwrap();
        let rows: Vec<u32> = (0..index.rows.len() as u32).collect();
        let s = summarize(&index, &rows, None, GroupBy::Transformation);
        (index, rows, s)
    };
    let use_ = |review_threshold, pairs| PolicyUse {
        review_threshold,
        action_threshold: 0.9,
        pairs,
    };
    let want = InputWarning::MixedPolicies {
        case: "payment-failure-401".into(),
        policies: vec![use_(0.55, 2), use_(0.5, 1)],
        file: index.files[0].display.clone(),
        line: 3,
    };
    let named: Vec<InputWarning> = s.input_warnings.named(&index).collect();
    assert_eq!(named, std::slice::from_ref(&want));
    assert_eq!(index.problems.len(), 1);
    let p = &index.problems[0];
    assert_eq!((p.kind, p.line), (ProblemKind::Inconsistent, 3));
    assert_eq!(p.message, want.message());
    assert!(
        p.message.starts_with(
            "case payment-failure-401 mixes 2 policies: review 0.55 / action 0.9 (2 pairs), review 0.5 / action 0.9 (1 pair); "
        ),
        "{}",
        p.message
    );
    let c = conclusion(&index, &rows, &s);
    assert!(
        c.contains(&format!("Warning: {}.", want.message())),
        "{c:#?}"
    );
    // Without the pair of the other policy, nothing is mixed.
    let s = summarize(&index, &[0, 1, 3, 4], None, GroupBy::Transformation);
    assert!(s.input_warnings.is_empty());
}

/// Seed 000, section 7: repetitions of one case and variant must resend the
/// exact recorded inputs; a trial sent with a regenerated paraphrase is
/// warned about, while repetitions of the same inputs are not.
#[test]
fn repetitions_whose_inputs_were_regenerated_are_warned_about() {
    use crate::core::index::inputs::InputWarning;
    use crate::core::problem::ProblemKind;
    let path = format!(
        "{}/tests/fixtures/stats/regenerated.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let index = load_run(&[path], &OpenOptions::default()).unwrap();
    let rows: Vec<u32> = (0..index.rows.len() as u32).collect();
    let s = summarize(&index, &rows, None, GroupBy::Case);
    let want = InputWarning::RegeneratedInputs {
        case: "outage-403".into(),
        variant: "paraphrase".into(),
        model: Some("jev-noul-2026-10".into()),
        trials: 3,
        inputs: 2,
        file: index.files[0].display.clone(),
        line: 2,
    };
    let named: Vec<InputWarning> = s.input_warnings.named(&index).collect();
    assert_eq!(named, std::slice::from_ref(&want));
    let found: Vec<(ProblemKind, u64)> = index.problems.iter().map(|p| (p.kind, p.line)).collect();
    assert_eq!(found, [(ProblemKind::Inconsistent, 2)]);
    assert_eq!(
        want.message(),
        "outage-403 / paraphrase (jev-noul-2026-10) was sent with 2 different inputs over 3 trials; a repetition must resend the exact recorded question, state and declared changes, or it tests another input (seed 000, section 7)"
    );
    // The first and third trials alone resent the same inputs.
    let s = summarize(&index, &[0, 2, 3, 4], None, GroupBy::Case);
    assert!(s.input_warnings.is_empty());
    // The sample's repetitions (checkout-outage-001) resend their inputs.
    let sample = crate::core::index::sample::sample();
    assert!(
        sample
            .problems
            .iter()
            .all(|p| p.kind != ProblemKind::Inconsistent),
        "{:?}",
        sample.problems
    );
}

/// A summary names its first five warnings in sentences, counts the
/// rest, and names them from the index they were found in.
#[test]
fn at_most_five_case_warnings_are_sentences() {
    use crate::core::index::inputs::InputWarnings;
    use std::io::Write;
    let mut f = tempfile::NamedTempFile::new().unwrap();
    // Seven trials, each sent with other inputs on its second repetition.
    for i in 1..=7 {
        for rep in 0..2 {
            writeln!(
                f,
                r#"{{"case_id":"c{i}","variant_id":"v","repetition":{rep},"source":{{"question":"q","state":{{"a":1}}}},"variant":{{"question":"q{rep}","state":{{"a":1}}}}}}"#
            )
            .unwrap();
        }
    }
    f.flush().unwrap();
    let path = f.path().to_string_lossy().to_string();
    let index = load_run(&[path], &OpenOptions::default()).unwrap();
    let rows: Vec<u32> = (0..index.rows.len() as u32).collect();
    let s = summarize(&index, &rows, None, GroupBy::Case);
    assert_eq!(s.input_warnings.len(), 7);
    let mut out = Vec::new();
    warning_sentences(&mut out, &index, &s.input_warnings);
    assert_eq!(out.len(), 6, "{out:#?}");
    assert_eq!(
        out[0],
        "Warning: c1 / v was sent with 2 different inputs over 2 trials; a repetition must resend the exact recorded question, state and declared changes, or it tests another input (seed 000, section 7)."
    );
    assert!(out[4].starts_with("Warning: c5 / v "), "{}", out[4]);
    assert_eq!(
        out[5],
        "2 more warnings of cases that mix policies or repetitions sent with regenerated inputs; the problems list names them all."
    );
    let mut none = Vec::new();
    warning_sentences(&mut none, &index, &InputWarnings::default());
    assert!(none.is_empty());
}

/// Newcombe (1998), Statistics in Medicine 17:873–890, Table II, method 10
/// (the hybrid score interval without continuity correction), examples (a)
/// and (b) to the four decimals printed there.
#[test]
fn newcombe_hybrid_score_matches_the_published_table() {
    let cases: [(u64, u64, u64, u64, f64, f64); 2] = [
        (56, 70, 48, 80, 0.0524, 0.3339),
        (9, 10, 3, 10, 0.1705, 0.8090),
    ];
    for (x1, n1, x2, n2, low, high) in cases {
        let (a, b) = (wilson(x1, n1).unwrap(), wilson(x2, n2).unwrap());
        let d = newcombe(&a, &b);
        let at4 = |x: f64| (x * 1e4).round() / 1e4;
        assert_eq!(
            (at4(d.low), at4(d.high)),
            (low, high),
            "{x1}/{n1} − {x2}/{n2}: {d:?}"
        );
        assert!((d.value - (x1 as f64 / n1 as f64 - x2 as f64 / n2 as f64)).abs() < 1e-12);
    }
    let d = newcombe(&wilson(56, 70).unwrap(), &wilson(48, 80).unwrap());
    assert_eq!(d.display(), "+0.200 [+0.052, +0.334]");
    assert!(d.excludes_zero());
    assert!(!newcombe(&wilson(0, 10).unwrap(), &wilson(0, 20).unwrap()).excludes_zero());
}

proptest::proptest! {
    /// The interval holds the difference, stays within [−1, 1], and
    /// swapping the two proportions mirrors it.
    #[test]
    fn newcombe_intervals_are_sound(x1 in 0u64..60, e1 in 0u64..60, x2 in 0u64..60, e2 in 0u64..60) {
        let (n1, n2) = (x1 + e1 + 1, x2 + e2 + 1);
        let (a, b) = (wilson(x1, n1).unwrap(), wilson(x2, n2).unwrap());
        let d = newcombe(&a, &b);
        proptest::prop_assert!(d.low <= d.value + 1e-12 && d.value <= d.high + 1e-12, "{d:?}");
        proptest::prop_assert!(d.low >= -1.0 && d.high <= 1.0, "{d:?}");
        let m = newcombe(&b, &a);
        proptest::prop_assert!((m.low + d.high).abs() < 1e-12 && (m.high + d.low).abs() < 1e-12);
    }
}
