//! From one JSON line to a [`PairRecord`], tolerantly.
//!
//! Both spellings open as they are: the snake_case run format and the
//! camelCase rows of the TypeScript runner (`caseId`, `noul`, `sourceRoute`,
//! `maximumNoulDrift`, ...). Only `case_id` and `variant_id` are required; an
//! optional field with the wrong type becomes a field warning and is treated
//! as not recorded, so one odd value never hides a whole pair.
//!
//! Which keys spell which field, and what type each field expects, is in
//! [`super::schema`]; the fast path reads the same tables.

use serde_json::{Map, Value};

use super::model::{BadNumber, Expectation, Outcome, PairRecord, Policy, Route, Side};
use super::schema::{
    self, E_KIND, E_MAX_C, E_MAX_P, E_MOVEMENT, E_ROUTES, E_SAME_ROUTE, EXPECTATION, Field, Json,
    N_TOP, P_ACTION, P_REVIEW, POLICY, R_CONFIDENCE, R_PROBABILITY, RESPONSE, S_CONFIDENCE,
    S_DECISION, S_ERROR, S_LATENCY, S_OUTCOME, S_PROBABILITY, S_QUESTION, S_RESPONSE, S_ROUTE,
    S_STATE, SIDE, T_ACTION, T_ALLOWED, T_CASE, T_CONTRACT, T_DATASET, T_EXPECTATION, T_FAMILY,
    T_GOLD, T_LABEL, T_MARGIN, T_MODEL, T_NOTES, T_PASSED, T_POLICY, T_REASONS, T_REPETITION,
    T_REVIEW, T_REVIEWED, T_SCHEMA, T_SETTINGS, T_SOURCE, T_SOURCE_ROUTE, T_TIMESTAMP,
    T_TRANSFORMATION, T_UNSAFE, T_VALIDATION, T_VARIANT, T_VARIANT_ID, T_VARIANT_ROUTE, TOP,
};

/// Why a JSON line could not become a pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    NotAnObject(&'static str),
    MissingId(&'static str),
    WrongIdType(&'static str, &'static str),
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::NotAnObject(found) => {
                write!(
                    f,
                    "expected a JSON object per line, found {found}; write one pair per line (`jq -c .` compacts pretty-printed JSON)"
                )
            }
            RecordError::MissingId(name) => write!(
                f,
                "missing required field `{name}`; every pair needs a case_id and a variant_id"
            ),
            RecordError::WrongIdType(name, found) => {
                write!(
                    f,
                    "field `{name}` must be a string, found {found}; write the id as a JSON string"
                )
            }
        }
    }
}

/// The JSON type name of a value, for messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Every top-level key the table spells, in the order [`map_record`] takes
/// them out of the object; what is left is the pair's `extra`.
///
/// The order matters: serde_json's `Map::remove` moves the object's last
/// member into the hole it leaves, so the order of `extra` depends on it.
/// It is the table's, field by field in slot order, except that the two
/// route fields go spelling by spelling (`sourceRoute`, `variantRoute`,
/// `source_route`, `variant_route`), as they always have.
const KNOWN_TOP: [&str; schema::spellings(&TOP)] = known_top();

const fn known_top() -> [&'static str; schema::spellings(&TOP)] {
    let mut out = [""; schema::spellings(&TOP)];
    let mut n = 0;
    let mut slot = 0;
    while slot < N_TOP {
        let both_routes = [
            TOP[T_SOURCE_ROUTE].spellings,
            TOP[T_VARIANT_ROUTE].spellings,
        ];
        if slot == T_SOURCE_ROUTE {
            assert!(both_routes[0].len() == both_routes[1].len());
            let mut i = 0;
            while i < both_routes[0].len() {
                out[n] = both_routes[0][i];
                out[n + 1] = both_routes[1][i];
                n += 2;
                i += 1;
            }
        } else if slot != T_VARIANT_ROUTE {
            let spellings = TOP[slot].spellings;
            let mut i = 0;
            while i < spellings.len() {
                out[n] = spellings[i];
                n += 1;
                i += 1;
            }
        }
        slot += 1;
    }
    assert!(n == out.len());
    out
}

/// Reads optional fields from one object, collecting warnings for bad types.
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    prefix: &'a str,
    warnings: &'a mut Vec<String>,
}

impl<'a> Fields<'a> {
    /// The first spelling of `names` that is present and not `null`.
    fn find(&self, names: &[&str]) -> Option<(&'a str, &'a Value)> {
        names.iter().find_map(|n| {
            self.obj
                .get_key_value(*n)
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.as_str(), v))
        })
    }

    fn warn(&mut self, key: &str, expected: &str, v: &Value) {
        self.warnings.push(format!(
            "`{}{key}` should be {expected} but is {}; treated as not recorded",
            self.prefix,
            type_name(v)
        ));
    }

    fn string(&mut self, field: Field) -> Option<String> {
        debug_assert!(
            matches!(field.json, Json::Text | Json::Outcome),
            "{field:?}"
        );
        let (k, v) = self.find(field.spellings)?;
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            other => {
                self.warn(k, "a string", other);
                None
            }
        }
    }

    fn number(&mut self, field: Field) -> Option<f64> {
        debug_assert!(matches!(field.json, Json::Number | Json::Unit), "{field:?}");
        let (k, v) = self.find(field.spellings)?;
        match v.as_f64() {
            Some(x) if x.is_finite() => Some(x),
            _ => {
                self.warn(k, "a number", v);
                None
            }
        }
    }

    /// A probability or confidence: `Ok(None)` when it is not recorded,
    /// `Err` (with its warning) when it is recorded in a form that cannot
    /// be used.
    fn unit(&mut self, field: Field) -> Result<Option<f64>, BadNumber> {
        debug_assert!(matches!(field.json, Json::Unit), "{field:?}");
        let Some((_, v)) = self.find(field.spellings) else {
            return Ok(None);
        };
        let Some(x) = self.number(field) else {
            return Err(BadNumber::NotANumber(type_name(v)));
        };
        if !(0.0..=1.0).contains(&x) {
            let (k, _) = self.find(field.spellings).ok_or(BadNumber::OutOfRange(x))?;
            self.warnings.push(format!(
                "`{}{k}` is {x}, outside [0, 1]; treated as not recorded",
                self.prefix
            ));
            return Err(BadNumber::OutOfRange(x));
        }
        Ok(Some(x))
    }

    fn boolean(&mut self, field: Field) -> Option<bool> {
        debug_assert!(matches!(field.json, Json::Bool), "{field:?}");
        let (k, v) = self.find(field.spellings)?;
        match v {
            Value::Bool(b) => Some(*b),
            other => {
                self.warn(k, "true or false", other);
                None
            }
        }
    }

    fn object(&mut self, field: Field) -> Option<&'a Map<String, Value>> {
        debug_assert!(matches!(field.json, Json::Object), "{field:?}");
        let (k, v) = self.find(field.spellings)?;
        match v {
            Value::Object(o) => Some(o),
            other => {
                self.warn(k, "an object", other);
                None
            }
        }
    }

    fn route(&mut self, field: Field) -> Option<Route> {
        debug_assert!(matches!(field.json, Json::Route), "{field:?}");
        let (k, v) = self.find(field.spellings)?;
        let parsed = v.as_str().and_then(Route::parse);
        if parsed.is_none() {
            self.warnings.push(format!(
                "`{}{k}` should be action, review or pass but is {}; treated as not recorded",
                self.prefix,
                crate::core::text::inert_line(&truncate_json(v, 40))
            ));
        }
        parsed
    }

    fn strings(&mut self, field: Field) -> Option<Vec<String>> {
        debug_assert!(
            matches!(field.json, Json::Strings | Json::Routes),
            "{field:?}"
        );
        let (k, v) = self.find(field.spellings)?;
        match v {
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        Value::String(s) => out.push(s.clone()),
                        other => out.push(other.to_string()),
                    }
                }
                Some(out)
            }
            Value::String(s) => Some(vec![s.clone()]),
            other => {
                self.warn(k, "a list of strings", other);
                None
            }
        }
    }
}

fn truncate_json(v: &Value, max: usize) -> String {
    let s = v.to_string();
    if s.chars().count() > max {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}…")
    } else {
        s
    }
}

/// Turn one parsed JSON line into a pair.
pub fn map_record(v: Value) -> Result<PairRecord, RecordError> {
    let Value::Object(mut obj) = v else {
        return Err(RecordError::NotAnObject(type_name(&v)));
    };
    let case_id = take_id(&obj, TOP[T_CASE])?;
    let variant_id = take_id(&obj, TOP[T_VARIANT_ID])?;
    let mut warnings = Vec::new();
    let mut rec = PairRecord {
        case_id,
        variant_id,
        ..PairRecord::default()
    };
    {
        let mut f = Fields {
            obj: &obj,
            prefix: "",
            warnings: &mut warnings,
        };
        rec.label = f.string(TOP[T_LABEL]);
        rec.family = f.string(TOP[T_FAMILY]);
        rec.transformation = f.string(TOP[T_TRANSFORMATION]);
        rec.contract_version = f.string(TOP[T_CONTRACT]);
        rec.state_schema_version = f.string(TOP[T_SCHEMA]);
        rec.dataset_version = f.string(TOP[T_DATASET]);
        rec.minimum_boundary_margin = f.number(TOP[T_MARGIN]);
        rec.allowed_changes = f.strings(TOP[T_ALLOWED]);
        rec.passed = f.boolean(TOP[T_PASSED]);
        rec.reasons = f.strings(TOP[T_REASONS]).unwrap_or_default();
        rec.timestamp = f.string(TOP[T_TIMESTAMP]);
        rec.model_id = f.string(TOP[T_MODEL]);
        rec.settings_id = f.string(TOP[T_SETTINGS]);
        rec.repetition = f.number(TOP[T_REPETITION]).and_then(|x| {
            (x >= 0.0 && x.fract() == 0.0 && x < u64::MAX as f64).then_some(x as u64)
        });
        rec.validation_status = f.string(TOP[T_VALIDATION]);
        rec.unsafe_approval = f.boolean(TOP[T_UNSAFE]);
        rec.gold_urgent = f.boolean(TOP[T_GOLD]);
        rec.human_reviewed_at = f.string(TOP[T_REVIEWED]);
        rec.notes = f.string(TOP[T_NOTES]);

        rec.policy = match f.object(TOP[T_POLICY]) {
            Some(p) => policy_from(p, &mut *f.warnings),
            // Some runners put the thresholds at the top level.
            None => {
                let review = f.number(TOP[T_REVIEW]);
                let action = f.number(TOP[T_ACTION]);
                match (review, action) {
                    (Some(r), Some(a)) => Some(Policy {
                        review_threshold: r,
                        action_threshold: a,
                    }),
                    _ => None,
                }
            }
        };
        rec.expectation = f
            .object(TOP[T_EXPECTATION])
            .and_then(|e| expectation_from(e, &mut *f.warnings));
        let src_route = f.route(TOP[T_SOURCE_ROUTE]);
        let var_route = f.route(TOP[T_VARIANT_ROUTE]);
        rec.source = f
            .object(TOP[T_SOURCE])
            .map(|s| side_from(s, "source.", &mut *f.warnings))
            .unwrap_or_default();
        rec.variant = f
            .object(TOP[T_VARIANT])
            .map(|s| side_from(s, "variant.", &mut *f.warnings))
            .unwrap_or_default();
        if rec.source.route.is_none() {
            rec.source.route = src_route;
        }
        if rec.variant.route.is_none() {
            rec.variant.route = var_route;
        }
    }
    for key in KNOWN_TOP {
        obj.remove(key);
    }
    rec.extra = obj;
    rec.field_warnings = warnings;
    Ok(rec)
}

/// A required id: the first of its spellings that is present (`null`
/// included, which is then missing), named in errors by its first spelling.
fn take_id(obj: &Map<String, Value>, field: Field) -> Result<String, RecordError> {
    debug_assert!(matches!(field.json, Json::Id), "{field:?}");
    let canonical = field.canonical();
    let found = field.spellings.iter().find_map(|n| obj.get(*n));
    match found {
        None | Some(Value::Null) => Err(RecordError::MissingId(canonical)),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(RecordError::WrongIdType(canonical, type_name(other))),
    }
}

fn policy_from(p: &Map<String, Value>, warnings: &mut Vec<String>) -> Option<Policy> {
    let mut f = Fields {
        obj: p,
        prefix: "policy.",
        warnings,
    };
    let review = f.number(POLICY[P_REVIEW]);
    let action = f.number(POLICY[P_ACTION]);
    match (review, action) {
        (Some(r), Some(a)) => {
            if r > a {
                f.warnings.push(format!(
                    "policy review threshold {r} is above the action threshold {a}"
                ));
            }
            Some(Policy {
                review_threshold: r,
                action_threshold: a,
            })
        }
        _ => {
            f.warnings.push(
                "policy needs both review_threshold and action_threshold; treated as not recorded"
                    .into(),
            );
            None
        }
    }
}

fn expectation_from(e: &Map<String, Value>, warnings: &mut Vec<String>) -> Option<Expectation> {
    let mut f = Fields {
        obj: e,
        prefix: "expectation.",
        warnings,
    };
    let kind = f.string(EXPECTATION[E_KIND])?;
    let norm = kind.trim().to_ascii_lowercase().replace('_', "-");
    Some(match norm.as_str() {
        "invariant" => Expectation::Invariant {
            max_probability_drift: f.number(EXPECTATION[E_MAX_P]),
            max_confidence_drift: f.number(EXPECTATION[E_MAX_C]),
            require_same_route: f.boolean(EXPECTATION[E_SAME_ROUTE]).unwrap_or(true),
        },
        "not-less-urgent" | "notlessurgent" => Expectation::NotLessUrgent {
            permitted_probability_movement: f.number(EXPECTATION[E_MOVEMENT]).unwrap_or(0.0),
        },
        "not-more-urgent" | "notmoreurgent" => Expectation::NotMoreUrgent {
            permitted_probability_movement: f.number(EXPECTATION[E_MOVEMENT]).unwrap_or(0.0),
        },
        "allowed-routes" | "allowedroutes" => {
            let names = f.strings(EXPECTATION[E_ROUTES]).unwrap_or_default();
            let mut routes = Vec::new();
            for n in &names {
                match Route::parse(n) {
                    Some(r) => routes.push(r),
                    None => f.warnings.push(format!(
                        "expectation.allowed_routes has an unknown route {}",
                        crate::core::text::inert_line(n)
                    )),
                }
            }
            Expectation::AllowedRoutes {
                allowed_routes: routes,
            }
        }
        _ => Expectation::Unknown { kind },
    })
}

fn side_from(s: &Map<String, Value>, prefix: &str, warnings: &mut Vec<String>) -> Side {
    let mut f = Fields {
        obj: s,
        prefix,
        warnings,
    };
    let question = match f.find(SIDE[S_QUESTION].spellings) {
        Some((_, Value::String(q))) => Some(q.clone()),
        Some((k, other)) => {
            // A structured question contract is still diffable as JSON text.
            f.warnings.push(format!(
                "`{prefix}{k}` is {}, not a string; shown as JSON",
                type_name(other)
            ));
            Some(serde_json::to_string_pretty(other).unwrap_or_default())
        }
        None => None,
    };
    let mut side = Side {
        question,
        ..Side::default()
    };
    side.state = f.find(SIDE[S_STATE].spellings).map(|(_, v)| v.clone());
    side.answered = [SIDE[S_RESPONSE], SIDE[S_PROBABILITY], SIDE[S_CONFIDENCE]]
        .iter()
        .any(|field| f.find(field.spellings).is_some());
    let response = f.object(SIDE[S_RESPONSE]);
    let (p, c) = match response {
        Some(r) => {
            let mut rf = Fields {
                obj: r,
                prefix: &format!("{prefix}response."),
                warnings: &mut *f.warnings,
            };
            (
                rf.unit(RESPONSE[R_PROBABILITY]),
                rf.unit(RESPONSE[R_CONFIDENCE]),
            )
        }
        None => (Ok(None), Ok(None)),
    };
    // Bare rows put the response fields on the side itself; the first
    // unusable spelling is kept when no spelling is usable.
    let mut either = |first: Result<Option<f64>, BadNumber>, field: Field| match first {
        Ok(Some(x)) => (Some(x), None),
        first => match f.unit(field) {
            Ok(Some(x)) => (Some(x), None),
            Ok(None) => (None, first.err()),
            Err(bad) => (None, Some(first.err().unwrap_or(bad))),
        },
    };
    (side.probability, side.bad_probability) = either(p, SIDE[S_PROBABILITY]);
    (side.confidence, side.bad_confidence) = either(c, SIDE[S_CONFIDENCE]);
    side.route = f.route(SIDE[S_ROUTE]);
    side.outcome = f.string(SIDE[S_OUTCOME]).map(|o| Outcome::parse(&o));
    side.error = f.string(SIDE[S_ERROR]);
    side.latency_ms = f.number(SIDE[S_LATENCY]);
    side.decision = f.string(SIDE[S_DECISION]);
    side
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn snake_case_record_maps_every_field() {
        let v = json!({
            "case_id": "c1", "variant_id": "v1", "label": "L", "family": "state-noise",
            "transformation": "add-irrelevant-field", "contract_version": "q/3",
            "policy": {"review_threshold": 0.55, "action_threshold": 0.9},
            "expectation": {"kind": "invariant", "max_probability_drift": 0.1, "max_confidence_drift": 0.15, "require_same_route": true},
            "minimum_boundary_margin": 0.1, "allowed_changes": ["state.x"],
            "source": {"question": "q", "state": {"a": 1}, "response": {"probability": 0.91, "confidence": 0.84}, "route": "action", "outcome": "ok", "latency_ms": 812},
            "variant": {"question": "q", "state": {"a": 1, "x": 2}, "response": {"probability": 0.52, "confidence": 0.61}, "route": "pass", "outcome": "ok"},
            "passed": false, "reasons": ["Route changed from action to pass."], "repetition": 2,
            "runner": {"host": "ci-7"}
        });
        let r = map_record(v).unwrap();
        assert_eq!(r.case_id, "c1");
        assert_eq!(r.policy.unwrap().action_threshold, 0.9);
        assert_eq!(r.source.probability, Some(0.91));
        assert_eq!(r.variant.route, Some(Route::Pass));
        assert_eq!(r.repetition, Some(2));
        assert_eq!(r.passed, Some(false));
        assert!(r.extra.contains_key("runner"));
        assert_eq!(r.extra.len(), 1);
        assert!(r.field_warnings.is_empty(), "{:?}", r.field_warnings);
    }

    #[test]
    fn camel_case_bare_row_opens() {
        let v = json!({"caseId": "checkout-outage-001", "variantId": "question-paraphrase", "passed": true,
            "reasons": [], "source": {"noul": 0.91, "confidence": 0.84}, "variant": {"noul": 0.93, "confidence": 0.8},
            "sourceRoute": "action", "variantRoute": "action"});
        let r = map_record(v).unwrap();
        assert_eq!(r.case_id, "checkout-outage-001");
        assert_eq!(r.source.probability, Some(0.91));
        assert_eq!(r.variant.route, Some(Route::Action));
        assert!(r.extra.is_empty());
    }

    #[test]
    fn camel_case_expectation_aliases() {
        let v = json!({"caseId": "a", "variantId": "b",
            "expectation": {"kind": "invariant", "maximumNoulDrift": 0.1, "maximumConfidenceDrift": 0.2, "requireSameRoute": false},
            "policy": {"reviewThreshold": 0.5, "actionThreshold": 0.8}});
        let r = map_record(v).unwrap();
        assert_eq!(
            r.expectation,
            Some(Expectation::Invariant {
                max_probability_drift: Some(0.1),
                max_confidence_drift: Some(0.2),
                require_same_route: false
            })
        );
        assert_eq!(r.policy.unwrap().review_threshold, 0.5);
    }

    #[test]
    fn required_ids_are_checked() {
        assert_eq!(
            map_record(json!({"variant_id": "v"})),
            Err(RecordError::MissingId("case_id"))
        );
        assert_eq!(
            map_record(json!({"case_id": ["x"], "variant_id": "v"})),
            Err(RecordError::WrongIdType("case_id", "an array"))
        );
        assert_eq!(
            map_record(json!([1])),
            Err(RecordError::NotAnObject("an array"))
        );
        assert_eq!(
            map_record(json!({"case_id": 42, "variant_id": "v"})),
            Err(RecordError::WrongIdType("case_id", "a number"))
        );
    }

    /// The keys taken out of a line are the table's, in the order they have
    /// always been taken (it decides the order of `extra`), and the fast
    /// path knows each of them.
    #[test]
    fn known_top_is_the_table_in_its_removal_order() {
        let order = [
            "case_id",
            "caseId",
            "variant_id",
            "variantId",
            "label",
            "family",
            "transformation",
            "contract_version",
            "contractVersion",
            "state_schema_version",
            "stateSchemaVersion",
            "dataset_version",
            "datasetVersion",
            "source_dataset_version",
            "sourceDatasetVersion",
            "policy",
            "review_threshold",
            "reviewThreshold",
            "action_threshold",
            "actionThreshold",
            "expectation",
            "minimum_boundary_margin",
            "minimumBoundaryMargin",
            "allowed_changes",
            "allowedChanges",
            "allowed",
            "source",
            "variant",
            "sourceRoute",
            "variantRoute",
            "source_route",
            "variant_route",
            "passed",
            "reasons",
            "timestamp",
            "model_id",
            "modelId",
            "settings_id",
            "settingsId",
            "repetition",
            "validation_status",
            "validationStatus",
            "unsafe_approval",
            "unsafeApproval",
            "gold_urgent",
            "goldUrgent",
            "human_reviewed_at",
            "humanReviewedAt",
            "notes",
        ];
        assert_eq!(KNOWN_TOP, order);
        for k in KNOWN_TOP {
            assert!(schema::top_slot(k.as_bytes()).is_some(), "{k}");
        }
        // Both route spellings mixed: `extra` keeps the order it always had.
        let v = json!({"case_id": "c", "variant_id": "v", "a": 1, "variantRoute": "pass", "b": 2,
            "source_route": "review", "c": 3, "d": 4, "e": 5, "f": 6});
        let r = map_record(v).unwrap();
        let keys: Vec<&str> = r.extra.keys().map(String::as_str).collect();
        assert_eq!(keys, ["f", "e", "a", "d", "b", "c"]);
    }

    #[test]
    fn wrong_optional_types_become_warnings() {
        let v = json!({"case_id": "a", "variant_id": "b", "passed": "no",
            "source": {"response": {"probability": 1.7, "confidence": "high"}, "latency_ms": "fast"}});
        let r = map_record(v).unwrap();
        assert_eq!(r.passed, None);
        assert_eq!(r.source.probability, None);
        assert_eq!(r.source.confidence, None);
        assert_eq!(r.field_warnings.len(), 4, "{:?}", r.field_warnings);
        assert!(
            r.field_warnings
                .iter()
                .any(|w| w.contains("outside [0, 1]"))
        );
    }
}
