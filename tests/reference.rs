//! An independent reference, written from the seed documents and not from
//! triage's code: it reads the sample runs with plain `serde_json`, judges
//! every pair by the seeds' rules, counts what the seeds count, and checks
//! that `triage summary --format json` reports the same numbers.
//!
//! The rules, each with its seed:
//! - A side has a usable answer when its request ended `ok` (or records no
//!   outcome) and its probability and confidence are finite numbers in
//!   [0, 1] (seed 000 §5, `validateAssessment`). A pair with a side that has
//!   none is a service error (seed 000 §8) and feeds no model metric.
//! - Routes come from the policy: action at or above the action threshold,
//!   review at or above the review threshold, else pass (seed 000 §5,
//!   `routeUrgency`); the recorded route only when there is no policy.
//! - The variant may change only what `allowed_changes` declares; anything
//!   else makes the pair invalid, a fault of the test, not of the model
//!   (seed 001). Array order is part of the value (seed 001).
//! - An invariant pair breaks when the source is too close to a threshold,
//!   when either drift exceeds its maximum, or when the route moves (seed
//!   000 §5). A pair whose only broken condition is the margin is a
//!   boundary observation, not an invariant violation (seed 000 §4).
//! - Directional pairs break when the probability moves the forbidden way
//!   by more than the permitted movement; allowed-routes pairs when the
//!   variant's route is not allowed (seed 000 §3).
//! - Rates carry Wilson 95% intervals (seed 003).
//!
//! Comparisons of drift with a maximum allow 1e-12 for binary floating
//! point (0.65 − 0.55 is 0.1 to a reader, 0.10000000000000009 to IEEE), as
//! `docs/statistics.md` documents.

mod common;

use serde_json::{Map, Value};

const EPS: f64 = 1e-12;

fn get<'a>(o: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    names
        .iter()
        .find_map(|n| o.get(*n))
        .filter(|v| !v.is_null())
}

fn num(o: &Map<String, Value>, names: &[&str]) -> Option<f64> {
    get(o, names).and_then(Value::as_f64)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Route {
    Pass,
    Review,
    Action,
}

fn route_name(s: &str) -> Option<Route> {
    match s {
        "pass" => Some(Route::Pass),
        "review" => Some(Route::Review),
        "action" => Some(Route::Action),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Status {
    Pass,
    Fail,
    Boundary,
    Error,
    Invalid,
    Unchecked,
}

/// One side's answer: probability, confidence, and whether it is usable.
struct Answer {
    p: Option<f64>,
    c: Option<f64>,
    usable: bool,
    route: Option<Route>,
}

fn answer(rec: &Map<String, Value>, side: &str) -> Answer {
    let empty = Map::new();
    let s = get(rec, &[side])
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let resp = get(s, &["response"]).and_then(Value::as_object);
    let pick = |names: &[&str]| num(s, names).or_else(|| resp.and_then(|r| num(r, names)));
    let p = pick(&["probability", "noul", "p"]);
    let c = pick(&["confidence"]);
    let outcome_ok = match get(s, &["outcome"]) {
        None => true,
        Some(Value::String(o)) => o == "ok",
        Some(Value::Object(o)) => get(o, &["status", "kind"]).and_then(Value::as_str) == Some("ok"),
        Some(_) => false,
    };
    let unit = |x: Option<f64>| x.is_some_and(|x| x.is_finite() && (0.0..=1.0).contains(&x));
    let route_key = format!("{side}Route");
    let recorded_route = get(s, &["route"])
        .or_else(|| get(rec, &[&format!("{side}_route"), &route_key]))
        .and_then(Value::as_str)
        .and_then(route_name);
    Answer {
        p,
        c,
        usable: outcome_ok && unit(p) && unit(c),
        route: recorded_route,
    }
}

/// The paths the variant changed: `question`, and `state.<key>` for every
/// top-level state key whose value differs (arrays in order) or that one
/// side lacks. The order of an object's keys is not a change: JSON gives it
/// no meaning (RFC 8259 §4), where an array's order is its value (seed 001).
fn changed_paths(rec: &Map<String, Value>) -> Option<Vec<String>> {
    let side = |s: &str| get(rec, &[s]).and_then(Value::as_object).cloned();
    let (src, var) = (side("source")?, side("variant")?);
    let (sq, vq) = (get(&src, &["question"]), get(&var, &["question"]));
    let (ss, vs) = (
        get(&src, &["state"]).and_then(Value::as_object),
        get(&var, &["state"]).and_then(Value::as_object),
    );
    if sq.is_none() && ss.is_none() {
        return None;
    }
    let mut out = Vec::new();
    if sq != vq {
        out.push("question".to_string());
    }
    if let (Some(a), Some(b)) = (ss, vs) {
        for k in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
            if a.get(k) != b.get(k) {
                out.push(format!("state.{k}"));
            }
        }
    }
    Some(out)
}

struct Judged {
    status: Status,
    /// Counted in model metrics: neither invalid nor a service error.
    model: bool,
    invariant: bool,
    /// Declares its allowed changes, or records no payloads to judge them by.
    judgeable: bool,
    near_boundary: bool,
    flip: Option<bool>,
    dp: Option<f64>,
}

fn judge(rec: &Map<String, Value>) -> Judged {
    let policy = get(rec, &["policy"]).and_then(Value::as_object);
    let thresholds = policy.and_then(|p| {
        Some((
            num(p, &["review_threshold", "reviewThreshold"])?,
            num(p, &["action_threshold", "actionThreshold"])?,
        ))
    });
    let (s, v) = (answer(rec, "source"), answer(rec, "variant"));
    let route = |a: &Answer| match (thresholds, a.p) {
        _ if !a.usable => None,
        (Some((r, t)), Some(p)) => Some(if p >= t {
            Route::Action
        } else if p >= r {
            Route::Review
        } else {
            Route::Pass
        }),
        _ => a.route,
    };
    let (sr, vr) = (route(&s), route(&v));
    let error = !(s.usable && v.usable);
    let dp = (!error).then(|| v.p.zip(s.p).map(|(a, b)| a - b)).flatten();
    let dc = (!error).then(|| v.c.zip(s.c).map(|(a, b)| a - b)).flatten();
    let margin = match (thresholds, s.p) {
        (Some((r, t)), Some(p)) if !error => Some((p - r).abs().min((p - t).abs())),
        _ => None,
    };
    let min_margin = num(rec, &["minimum_boundary_margin", "minimumBoundaryMargin"]);
    let near_boundary = margin.zip(min_margin).is_some_and(|(m, min)| m < min - EPS);

    let allowed: Option<Vec<String>> = get(rec, &["allowed_changes", "allowedChanges"])
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        });
    let covered = |path: &str, allowed: &[String]| {
        allowed.iter().any(|a| {
            a == path || path.starts_with(&format!("{a}.")) || a == "state" && path == "state"
        })
    };
    let changed = changed_paths(rec);
    let judgeable = allowed.is_some() || changed.is_none();
    let invalid = match (&allowed, changed) {
        (Some(allowed), Some(changed)) => changed.iter().any(|c| !covered(c, allowed)),
        _ => false,
    };

    let exp = get(rec, &["expectation"]).and_then(Value::as_object);
    let kind = exp.and_then(|e| get(e, &["kind"])).and_then(Value::as_str);
    let mut margin_broken = false;
    let mut other_broken = false;
    match (kind, exp) {
        (Some("invariant"), Some(e)) => {
            margin_broken = near_boundary;
            let over = |d: Option<f64>, names: &[&str]| {
                d.zip(num(e, names))
                    .is_some_and(|(d, max)| d.abs() > max + EPS)
            };
            other_broken |= over(
                dp,
                &[
                    "max_probability_drift",
                    "maximumNoulDrift",
                    "maximumProbabilityDrift",
                ],
            );
            other_broken |= over(dc, &["max_confidence_drift", "maximumConfidenceDrift"]);
            let same = get(e, &["require_same_route", "requireSameRoute"])
                .and_then(Value::as_bool)
                .unwrap_or(true);
            other_broken |= same && sr.zip(vr).is_some_and(|(a, b)| a != b);
        }
        (Some(k @ ("not-less-urgent" | "not-more-urgent")), Some(e)) => {
            let m = num(
                e,
                &[
                    "permitted_probability_movement",
                    "permittedProbabilityMovement",
                    "permittedNoulMovement",
                ],
            )
            .unwrap_or(0.0);
            if let Some(d) = dp {
                other_broken = if k == "not-less-urgent" {
                    -d > m + EPS
                } else {
                    d > m + EPS
                };
            }
        }
        (Some("allowed-routes"), Some(e)) => {
            let allowed: Vec<Route> = get(e, &["allowed_routes", "allowedRoutes"])
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .filter_map(route_name)
                        .collect()
                })
                .unwrap_or_default();
            other_broken = vr.is_some_and(|r| !allowed.contains(&r));
        }
        _ => {
            // The seed's runner records no expectation, only its reasons
            // (seed 000 §5): the margin's reason alone is a boundary
            // observation; any other reason broke the relation.
            let reasons: Vec<&str> = get(rec, &["reasons"])
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let too_close = |r: &&str| r.contains("too close to a decision boundary");
            margin_broken = reasons.iter().any(too_close);
            other_broken = reasons.iter().any(|r| !too_close(r));
        }
    }
    let checked = kind.is_some();
    let recorded = get(rec, &["passed"]).and_then(Value::as_bool);
    let status = if invalid {
        Status::Invalid
    } else if error {
        Status::Error
    } else if other_broken || recorded == Some(false) && !margin_broken {
        Status::Fail
    } else if margin_broken {
        Status::Boundary
    } else if checked || recorded == Some(true) {
        Status::Pass
    } else {
        Status::Unchecked
    };
    Judged {
        status,
        model: !invalid && !error,
        invariant: kind == Some("invariant"),
        judgeable,
        near_boundary: near_boundary || margin_broken,
        flip: sr.zip(vr).map(|(a, b)| a != b),
        dp,
    }
}

/// Wilson's 95% interval (seed 003), from its formula.
fn wilson(k: u64, n: u64) -> (f64, f64) {
    let z = 1.96_f64; // seed 003: "z = 1.96 for 95% confidence"
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let d = 1.0 + z * z / n;
    let c = p + z * z / (2.0 * n);
    let s = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    (((c - s) / d).max(0.0), ((c + s) / d).min(1.0))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn check_rate(json: &Value, name: &str, k: u64, n: u64, run: &str) {
    let r = &json[name];
    assert_eq!(
        (r["successes"].as_u64(), r["trials"].as_u64()),
        (Some(k), Some(n)),
        "{run}: {name}"
    );
    let (lo, hi) = wilson(k, n);
    assert!(
        close(r["low"].as_f64().unwrap(), lo) && close(r["high"].as_f64().unwrap(), hi),
        "{run}: {name} interval {r} against [{lo}, {hi}]"
    );
}

#[test]
fn the_summary_of_every_sample_run_is_what_the_seeds_count() {
    for run in [
        "support-urgency.jsonl",
        "camelcase-full.jsonl",
        "bare-camelcase.jsonl",
    ] {
        let path = format!("{}/sample-runs/{run}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        let pairs: Vec<Judged> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| v.as_object().map(judge))
            .collect();
        // Pair by pair first: the status triage gives each pair.
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_triage"))
            .args(["export", &path, "--format", "json", "--all"])
            .env("TRIAGE_CONFIG", "/nonexistent")
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let statuses: Vec<String> = doc["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["status"].as_str().unwrap_or("").to_string())
            .collect();
        let mine: Vec<&str> = pairs
            .iter()
            .map(|j| match j.status {
                Status::Pass => "pass",
                Status::Fail => "fail",
                Status::Boundary => "boundary",
                Status::Error => "error",
                Status::Invalid => "invalid",
                Status::Unchecked => "unchecked",
            })
            .collect();
        for (i, (a, b)) in mine.iter().zip(&statuses).enumerate() {
            assert_eq!(a, b, "{run}: pair {} of {}", i + 1, pairs.len());
        }
        let count = |f: &dyn Fn(&Judged) -> bool| pairs.iter().filter(|j| f(j)).count() as u64;
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_triage"))
            .args(["summary", &path, "--format", "json"])
            .env("TRIAGE_CONFIG", "/nonexistent")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        let o = &json["overall"];

        assert_eq!(
            json["pairs"].as_u64(),
            Some(pairs.len() as u64),
            "{run}: pairs"
        );
        let failures = count(&|j| {
            matches!(
                j.status,
                Status::Fail | Status::Boundary | Status::Error | Status::Invalid
            )
        });
        assert_eq!(json["failures"].as_u64(), Some(failures), "{run}: failures");
        assert_eq!(
            o["service_errors"].as_u64(),
            Some(count(&|j| j.status == Status::Error)),
            "{run}: service errors"
        );
        assert_eq!(
            o["invalid_pairs"].as_u64(),
            Some(count(&|j| j.status == Status::Invalid)),
            "{run}: invalid pairs"
        );
        // Route flips: model pairs with both routes known (seed 000 §8).
        let flips = count(&|j| j.model && j.flip == Some(true));
        let with_routes = count(&|j| j.model && j.flip.is_some());
        check_rate(o, "route_flip_rate", flips, with_routes, run);
        // Invariant violations: valid invariant model pairs (declared, or
        // with no payloads to judge), boundary observations apart.
        let judged_invariant =
            |j: &Judged| j.model && j.invariant && j.judgeable && j.status != Status::Boundary;
        let violations = count(&|j| judged_invariant(j) && j.status == Status::Fail);
        let trials = count(&judged_invariant);
        if trials > 0 {
            check_rate(o, "invariant_violation_rate", violations, trials, run);
        }
        // Boundary pairs: model pairs whose source is inside the margin.
        assert_eq!(
            o["boundary_pairs"].as_u64(),
            Some(count(&|j| j.model && j.near_boundary)),
            "{run}: boundary pairs"
        );
        let max_dp = pairs
            .iter()
            .filter(|j| j.model)
            .filter_map(|j| j.dp)
            .map(f64::abs)
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        if let Some(max) = max_dp {
            assert!(
                close(o["max_abs_dp"].as_f64().unwrap(), max),
                "{run}: max |dp|"
            );
        }
    }
}
