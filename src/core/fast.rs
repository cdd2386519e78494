//! The loader's fast path: one typed, borrowing parse per line.
//!
//! [`parse_fast`] reads a line into borrowed structs (ids and names stay
//! slices of the line, the two payloads stay raw JSON) and builds the
//! [`PairRecord`] that [`super::derive::derive`] and [`super::suggest`] need,
//! without a [`Value`] of the whole line. The two states are compared as raw
//! bytes first; only when they differ are they parsed, and then only the
//! members that differ (identical members become equal placeholders, which
//! the diff skips exactly as it would skip the real values).
//!
//! Whenever the slow path ([`super::record::map_record`]) would say anything
//! the fast path does not model — a field of the wrong type, a value out of
//! range, an unknown route, a half policy, a repeated key, a number serde_json
//! rejects — [`parse_fast`] returns `None` and the caller takes the slow path,
//! so both give identical rows and problems (the tests in `index.rs` check it
//! line by line).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::diff::{self, Change, DiffEntry, JsonPath};

use super::model::{Expectation, Outcome, PairRecord, Policy, Route, Side};

/// A string that borrows from the line unless it had escapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Str<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

impl Str<'_> {
    fn as_str(&self) -> &str {
        &self.0
    }
}

#[derive(Deserialize)]
struct RawPolicy {
    #[serde(alias = "reviewThreshold", alias = "review")]
    review_threshold: Option<f64>,
    #[serde(alias = "actionThreshold", alias = "action")]
    action_threshold: Option<f64>,
}

#[derive(Deserialize)]
struct RawExpectation<'a> {
    #[serde(borrow, alias = "type")]
    kind: Option<Str<'a>>,
    #[serde(
        alias = "maximumNoulDrift",
        alias = "maximumProbabilityDrift",
        alias = "maxProbabilityDrift",
        alias = "max_noul_drift"
    )]
    max_probability_drift: Option<f64>,
    #[serde(alias = "maximumConfidenceDrift", alias = "maxConfidenceDrift")]
    max_confidence_drift: Option<f64>,
    #[serde(alias = "requireSameRoute")]
    require_same_route: Option<bool>,
    #[serde(alias = "permittedProbabilityMovement")]
    permitted_probability_movement: Option<f64>,
    #[serde(borrow, alias = "allowedRoutes")]
    allowed_routes: Option<Vec<Str<'a>>>,
}

#[derive(Deserialize)]
struct RawResponse {
    #[serde(alias = "noul", alias = "p")]
    probability: Option<f64>,
    #[serde(alias = "c")]
    confidence: Option<f64>,
}

#[derive(Deserialize)]
struct RawSide<'a> {
    #[serde(borrow, alias = "prompt")]
    question: Option<Str<'a>>,
    #[serde(borrow, alias = "payload")]
    state: Option<&'a RawValue>,
    #[serde(alias = "assessment")]
    response: Option<RawResponse>,
    #[serde(alias = "noul", alias = "p")]
    probability: Option<f64>,
    #[serde(alias = "c")]
    confidence: Option<f64>,
    #[serde(borrow)]
    route: Option<Str<'a>>,
    #[serde(borrow, alias = "status")]
    outcome: Option<Str<'a>>,
    #[serde(borrow, alias = "error_message", alias = "errorMessage")]
    error: Option<Str<'a>>,
    #[serde(alias = "latencyMs", alias = "latency")]
    latency_ms: Option<f64>,
    #[serde(borrow)]
    decision: Option<Str<'a>>,
}

/// Every field the slow path reads, in both spellings.
#[derive(Deserialize)]
struct RawRecord<'a> {
    #[serde(borrow, alias = "caseId")]
    case_id: Option<Str<'a>>,
    #[serde(borrow, alias = "variantId")]
    variant_id: Option<Str<'a>>,
    #[serde(borrow)]
    label: Option<Str<'a>>,
    #[serde(borrow)]
    family: Option<Str<'a>>,
    #[serde(borrow)]
    transformation: Option<Str<'a>>,
    #[serde(borrow, alias = "contractVersion")]
    contract_version: Option<Str<'a>>,
    #[serde(borrow, alias = "stateSchemaVersion")]
    state_schema_version: Option<Str<'a>>,
    #[serde(borrow, alias = "datasetVersion")]
    dataset_version: Option<Str<'a>>,
    policy: Option<RawPolicy>,
    #[serde(alias = "reviewThreshold")]
    review_threshold: Option<f64>,
    #[serde(alias = "actionThreshold")]
    action_threshold: Option<f64>,
    #[serde(borrow)]
    expectation: Option<RawExpectation<'a>>,
    #[serde(alias = "minimumBoundaryMargin")]
    minimum_boundary_margin: Option<f64>,
    #[serde(borrow, alias = "allowedChanges")]
    allowed_changes: Option<Vec<Str<'a>>>,
    #[serde(borrow)]
    source: Option<RawSide<'a>>,
    #[serde(borrow)]
    variant: Option<RawSide<'a>>,
    #[serde(borrow, alias = "sourceRoute")]
    source_route: Option<Str<'a>>,
    #[serde(borrow, alias = "variantRoute")]
    variant_route: Option<Str<'a>>,
    passed: Option<bool>,
    #[serde(borrow)]
    reasons: Option<Vec<Str<'a>>>,
    #[serde(borrow)]
    timestamp: Option<Str<'a>>,
    #[serde(borrow, alias = "modelId")]
    model_id: Option<Str<'a>>,
    #[serde(borrow, alias = "settingsId")]
    settings_id: Option<Str<'a>>,
    repetition: Option<f64>,
}

/// What the fast path read from one line.
#[derive(Debug)]
pub struct Fast<'a> {
    pub case_id: Cow<'a, str>,
    pub variant_id: Cow<'a, str>,
    pub contract: Option<Cow<'a, str>>,
    pub schema: Option<Cow<'a, str>>,
    pub model: Option<Cow<'a, str>>,
    /// The pair as [`super::derive::derive`] needs it. Ids, label, versions,
    /// timestamp and extra fields are left out; equal questions are both
    /// empty and raw-equal states are both `null` (their diff is empty either
    /// way); states that differ keep only their differing members.
    pub record: PairRecord,
    /// The diff of the two states, when they were diffed from their raw
    /// text (both states are then `null` placeholders in `record`).
    pub state_diff: Option<Vec<DiffEntry>>,
}

/// Read one line the fast way; `None` sends it to the slow path.
pub fn parse_fast(line: &str) -> Option<Fast<'_>> {
    let raw: RawRecord<'_> = serde_json::from_str(line).ok()?;
    let case_id = raw.case_id?.0;
    let variant_id = raw.variant_id?.0;
    // Fields read only to check their type, as the slow path does.
    let _ = (
        &raw.label,
        &raw.dataset_version,
        &raw.timestamp,
        &raw.settings_id,
    );

    let mut rec = PairRecord {
        family: raw.family.map(|s| s.0.into_owned()),
        transformation: raw.transformation.map(|s| s.0.into_owned()),
        minimum_boundary_margin: raw.minimum_boundary_margin,
        allowed_changes: raw
            .allowed_changes
            .map(|v| v.into_iter().map(|s| s.0.into_owned()).collect()),
        passed: raw.passed,
        reasons: raw
            .reasons
            .map(|v| v.into_iter().map(|s| s.0.into_owned()).collect())
            .unwrap_or_default(),
        repetition: raw.repetition.and_then(|x| {
            (x >= 0.0 && x.fract() == 0.0 && x < u64::MAX as f64).then_some(x as u64)
        }),
        ..PairRecord::default()
    };
    rec.policy = match raw.policy {
        Some(p) => {
            let (r, a) = (p.review_threshold?, p.action_threshold?);
            if r > a {
                return None;
            }
            Some(Policy {
                review_threshold: r,
                action_threshold: a,
            })
        }
        None => match (raw.review_threshold, raw.action_threshold) {
            (Some(r), Some(a)) => Some(Policy {
                review_threshold: r,
                action_threshold: a,
            }),
            _ => None,
        },
    };
    rec.expectation = match raw.expectation {
        Some(e) => expectation(e)?,
        None => None,
    };
    let src_route = route(raw.source_route.as_ref())?;
    let var_route = route(raw.variant_route.as_ref())?;
    let (mut source, src_state, src_q) = match raw.source {
        Some(s) => side(s)?,
        None => (Side::default(), None, None),
    };
    let (mut variant, var_state, var_q) = match raw.variant {
        Some(s) => side(s)?,
        None => (Side::default(), None, None),
    };
    if source.route.is_none() {
        source.route = src_route;
    }
    if variant.route.is_none() {
        variant.route = var_route;
    }
    // Only equality of the questions matters to the derivation, and their
    // words only when they differ.
    match (src_q, var_q) {
        (Some(a), Some(b)) if a == b => {
            source.question = Some(String::new());
            variant.question = Some(String::new());
        }
        (a, b) => {
            source.question = a.map(Cow::into_owned);
            variant.question = b.map(Cow::into_owned);
        }
    }
    let (a, b, state_diff) = states(src_state, var_state)?;
    source.state = a;
    variant.state = b;
    rec.source = source;
    rec.variant = variant;
    Some(Fast {
        case_id,
        variant_id,
        contract: raw.contract_version.map(|s| s.0),
        schema: raw.state_schema_version.map(|s| s.0),
        model: raw.model_id.map(|s| s.0),
        record: rec,
        state_diff,
    })
}

/// A recorded route; `Some(None)` when absent, `None` when unparseable (a warning).
fn route(s: Option<&Str<'_>>) -> Option<Option<Route>> {
    match s {
        None => Some(None),
        Some(s) => Route::parse(s.as_str()).map(Some),
    }
}

/// A probability or confidence in [0, 1]; `None` when out of range (a warning).
fn unit(x: Option<f64>) -> Option<Option<f64>> {
    match x {
        Some(v) if !(0.0..=1.0).contains(&v) => None,
        other => Some(other),
    }
}

type SideParts<'a> = (Side, Option<&'a RawValue>, Option<Cow<'a, str>>);

fn side(s: RawSide<'_>) -> Option<SideParts<'_>> {
    let (p, c) = match &s.response {
        Some(r) => (unit(r.probability)?, unit(r.confidence)?),
        None => (None, None),
    };
    // Bare rows put the response fields on the side itself.
    let probability = match p {
        Some(p) => Some(p),
        None => unit(s.probability)?,
    };
    let confidence = match c {
        Some(c) => Some(c),
        None => unit(s.confidence)?,
    };
    let side = Side {
        question: None,
        state: None,
        probability,
        confidence,
        route: route(s.route.as_ref())?,
        outcome: s.outcome.map(|o| Outcome::parse(o.as_str())),
        error: s.error.map(|e| e.0.into_owned()),
        latency_ms: s.latency_ms,
        decision: s.decision.map(|d| d.0.into_owned()),
    };
    Some((side, s.state, s.question.map(|q| q.0)))
}

fn expectation(e: RawExpectation<'_>) -> Option<Option<Expectation>> {
    let Some(kind) = e.kind else {
        return Some(None);
    };
    let norm = kind.as_str().trim().to_ascii_lowercase().replace('_', "-");
    Some(Some(match norm.as_str() {
        "invariant" => Expectation::Invariant {
            max_probability_drift: e.max_probability_drift,
            max_confidence_drift: e.max_confidence_drift,
            require_same_route: e.require_same_route.unwrap_or(true),
        },
        "not-less-urgent" | "notlessurgent" => Expectation::NotLessUrgent {
            permitted_probability_movement: e.permitted_probability_movement.unwrap_or(0.0),
        },
        "not-more-urgent" | "notmoreurgent" => Expectation::NotMoreUrgent {
            permitted_probability_movement: e.permitted_probability_movement.unwrap_or(0.0),
        },
        "allowed-routes" | "allowedroutes" => {
            let mut routes = Vec::new();
            for n in e.allowed_routes.iter().flatten() {
                // An unknown route is a warning: the slow path reports it.
                routes.push(Route::parse(n.as_str())?);
            }
            Expectation::AllowedRoutes {
                allowed_routes: routes,
            }
        }
        _ => Expectation::Unknown {
            kind: kind.0.into_owned(),
        },
    }))
}

/// The two states, and their diff when it was computed here: raw-equal
/// states have none; two objects are diffed member by member, parsing only
/// the members whose text differs. `None` when a state cannot be parsed.
type States = (Option<Value>, Option<Value>, Option<Vec<DiffEntry>>);

fn states(a: Option<&RawValue>, b: Option<&RawValue>) -> Option<States> {
    let both_null = || (Some(Value::Null), Some(Value::Null));
    match (a, b) {
        (None, None) => Some((None, None, None)),
        (Some(a), Some(b)) if a.get() == b.get() => {
            let (x, y) = both_null();
            Some((x, y, Some(Vec::new())))
        }
        (Some(a), Some(b)) => match (members(a.get()), members(b.get())) {
            (Some(x), Some(y)) => {
                let d = diff_members(&x, &y)?;
                let (x, y) = both_null();
                Some((x, y, Some(d)))
            }
            _ => Some((Some(full(a)?), Some(full(b)?), None)),
        },
        (a, b) => {
            let one = |v: Option<&RawValue>| match v {
                Some(v) => full(v).map(Some),
                None => Some(None),
            };
            Some((one(a)?, one(b)?, None))
        }
    }
}

/// [`diff::diff_values`] of two `state` objects, from their members' raw
/// text: the same entries, in the same order, as the diff of the parsed
/// objects (see `diff_objects`), parsing only members that differ.
fn diff_members(x: &[Member<'_>], y: &[Member<'_>]) -> Option<Vec<DiffEntry>> {
    let root = JsonPath::root("state");
    // A reorder is reported only when it is the whole story.
    let same_order = x.len() == y.len() && x.iter().zip(y).all(|(a, b)| a.0 == b.0);
    if !same_order && x.len() == y.len() {
        let mut all_equal = true;
        for (k, v) in x {
            match find(y, k) {
                Some(w) if w.get() == v.get() => {}
                Some(w) if diff::canon_eq(&full(v)?, &full(w)?) => {}
                _ => {
                    all_equal = false;
                    break;
                }
            }
        }
        if all_equal {
            return Some(vec![DiffEntry {
                path: root,
                change: Change::Reordered {
                    before: x.iter().map(|(k, _)| k.to_string()).collect(),
                    after: y.iter().map(|(k, _)| k.to_string()).collect(),
                },
            }]);
        }
    }
    let mut out = Vec::new();
    for (k, v) in x {
        match find(y, k) {
            Some(w) if w.get() == v.get() => {}
            Some(w) => out.extend(diff::diff_values(&root.key(k), &full(v)?, &full(w)?)),
            None => out.push(DiffEntry {
                path: root.key(k),
                change: Change::Removed { before: full(v)? },
            }),
        }
    }
    for (k, w) in y {
        if find(x, k).is_none() {
            out.push(DiffEntry {
                path: root.key(k),
                change: Change::Added { after: full(w)? },
            });
        }
    }
    Some(out)
}

/// The raw value of key `k` in `m`.
fn find<'a>(m: &[Member<'a>], k: &str) -> Option<&'a RawValue> {
    m.iter().find(|(mk, _)| mk == k).map(|(_, v)| *v)
}

fn full(v: &RawValue) -> Option<Value> {
    serde_json::from_str(v.get()).ok()
}

/// An object's members as raw values, in order; `None` for anything else or
/// a repeated key.
fn members(text: &str) -> Option<Vec<Member<'_>>> {
    let Members(m) = serde_json::from_str(text).ok()?;
    let mut keys: Vec<&str> = m.iter().map(|(k, _)| k.as_ref()).collect();
    keys.sort_unstable();
    if keys.windows(2).any(|w| w[0] == w[1]) {
        return None;
    }
    Some(m)
}

/// One member of a JSON object: its key and raw value.
type Member<'a> = (Cow<'a, str>, &'a RawValue);

struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Members<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = map.next_key::<Str<'de>>()? {
                    let v: &'de RawValue = map.next_value()?;
                    out.push((k.0, v));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}
