//! From one JSON line to a [`PairRecord`], tolerantly.
//!
//! Both spellings open as they are: the snake_case run format and the
//! camelCase rows of the TypeScript runner (`caseId`, `noul`, `sourceRoute`,
//! `maximumNoulDrift`, ...). Only `case_id` and `variant_id` are required; an
//! optional field with the wrong type becomes a field warning and is treated
//! as not recorded, so one odd value never hides a whole pair.

use serde_json::{Map, Value};

use super::model::{Expectation, Outcome, PairRecord, Policy, Route, Side};

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

/// Every top-level key either spelling may use; the rest go to `extra`.
const KNOWN_TOP: &[&str] = &[
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
];

/// Reads optional fields from one object, collecting warnings for bad types.
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    prefix: &'a str,
    warnings: &'a mut Vec<String>,
}

impl<'a> Fields<'a> {
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

    fn string(&mut self, names: &[&str]) -> Option<String> {
        let (k, v) = self.find(names)?;
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            other => {
                self.warn(k, "a string", other);
                None
            }
        }
    }

    fn number(&mut self, names: &[&str]) -> Option<f64> {
        let (k, v) = self.find(names)?;
        match v.as_f64() {
            Some(x) if x.is_finite() => Some(x),
            _ => {
                self.warn(k, "a number", v);
                None
            }
        }
    }

    fn unit(&mut self, names: &[&str]) -> Option<f64> {
        let x = self.number(names)?;
        if !(0.0..=1.0).contains(&x) {
            let (k, _) = self.find(names)?;
            self.warnings.push(format!(
                "`{}{k}` is {x}, outside [0, 1]; treated as not recorded",
                self.prefix
            ));
            return None;
        }
        Some(x)
    }

    fn boolean(&mut self, names: &[&str]) -> Option<bool> {
        let (k, v) = self.find(names)?;
        match v {
            Value::Bool(b) => Some(*b),
            other => {
                self.warn(k, "true or false", other);
                None
            }
        }
    }

    fn object(&mut self, names: &[&str]) -> Option<&'a Map<String, Value>> {
        let (k, v) = self.find(names)?;
        match v {
            Value::Object(o) => Some(o),
            other => {
                self.warn(k, "an object", other);
                None
            }
        }
    }

    fn route(&mut self, names: &[&str]) -> Option<Route> {
        let (k, v) = self.find(names)?;
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

    fn strings(&mut self, names: &[&str]) -> Option<Vec<String>> {
        let (k, v) = self.find(names)?;
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
    let case_id = take_id(&obj, &["case_id", "caseId"], "case_id")?;
    let variant_id = take_id(&obj, &["variant_id", "variantId"], "variant_id")?;
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
        rec.label = f.string(&["label"]);
        rec.family = f.string(&["family"]);
        rec.transformation = f.string(&["transformation"]);
        rec.contract_version = f.string(&["contract_version", "contractVersion"]);
        rec.state_schema_version = f.string(&["state_schema_version", "stateSchemaVersion"]);
        rec.dataset_version = f.string(&["dataset_version", "datasetVersion"]);
        rec.minimum_boundary_margin =
            f.number(&["minimum_boundary_margin", "minimumBoundaryMargin"]);
        rec.allowed_changes = f.strings(&["allowed_changes", "allowedChanges"]);
        rec.passed = f.boolean(&["passed"]);
        rec.reasons = f.strings(&["reasons"]).unwrap_or_default();
        rec.timestamp = f.string(&["timestamp"]);
        rec.model_id = f.string(&["model_id", "modelId"]);
        rec.settings_id = f.string(&["settings_id", "settingsId"]);
        rec.repetition = f.number(&["repetition"]).and_then(|x| {
            (x >= 0.0 && x.fract() == 0.0 && x < u64::MAX as f64).then_some(x as u64)
        });

        rec.policy = match f.object(&["policy"]) {
            Some(p) => policy_from(p, &mut *f.warnings),
            // Some runners put the thresholds at the top level.
            None => {
                let review = f.number(&["review_threshold", "reviewThreshold"]);
                let action = f.number(&["action_threshold", "actionThreshold"]);
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
            .object(&["expectation"])
            .and_then(|e| expectation_from(e, &mut *f.warnings));
        let src_route = f.route(&["sourceRoute", "source_route"]);
        let var_route = f.route(&["variantRoute", "variant_route"]);
        rec.source = f
            .object(&["source"])
            .map(|s| side_from(s, "source.", &mut *f.warnings))
            .unwrap_or_default();
        rec.variant = f
            .object(&["variant"])
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
        obj.remove(*key);
    }
    rec.extra = obj;
    rec.field_warnings = warnings;
    Ok(rec)
}

fn take_id(
    obj: &Map<String, Value>,
    names: &[&str],
    canonical: &'static str,
) -> Result<String, RecordError> {
    let found = names.iter().find_map(|n| obj.get(*n));
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
    let review = f.number(&["review_threshold", "reviewThreshold", "review"]);
    let action = f.number(&["action_threshold", "actionThreshold", "action"]);
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
    let kind = f.string(&["kind", "type"])?;
    let norm = kind.trim().to_ascii_lowercase().replace('_', "-");
    Some(match norm.as_str() {
        "invariant" => Expectation::Invariant {
            max_probability_drift: f.number(&[
                "max_probability_drift",
                "maximumNoulDrift",
                "maximumProbabilityDrift",
                "maxProbabilityDrift",
                "max_noul_drift",
            ]),
            max_confidence_drift: f.number(&[
                "max_confidence_drift",
                "maximumConfidenceDrift",
                "maxConfidenceDrift",
            ]),
            require_same_route: f
                .boolean(&["require_same_route", "requireSameRoute"])
                .unwrap_or(true),
        },
        "not-less-urgent" | "notlessurgent" => Expectation::NotLessUrgent {
            permitted_probability_movement: f
                .number(&[
                    "permitted_probability_movement",
                    "permittedProbabilityMovement",
                ])
                .unwrap_or(0.0),
        },
        "not-more-urgent" | "notmoreurgent" => Expectation::NotMoreUrgent {
            permitted_probability_movement: f
                .number(&[
                    "permitted_probability_movement",
                    "permittedProbabilityMovement",
                ])
                .unwrap_or(0.0),
        },
        "allowed-routes" | "allowedroutes" => {
            let names = f
                .strings(&["allowed_routes", "allowedRoutes"])
                .unwrap_or_default();
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
    let question = match f.find(&["question", "prompt"]) {
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
    side.state = f.find(&["state", "payload"]).map(|(_, v)| v.clone());
    let response = f.object(&["response", "assessment"]);
    let (p, c) = match response {
        Some(r) => {
            let mut rf = Fields {
                obj: r,
                prefix: &format!("{prefix}response."),
                warnings: &mut *f.warnings,
            };
            (
                rf.unit(&["probability", "noul", "p"]),
                rf.unit(&["confidence", "c"]),
            )
        }
        None => (None, None),
    };
    // Bare rows put the response fields on the side itself.
    side.probability = p.or_else(|| f.unit(&["probability", "noul", "p"]));
    side.confidence = c.or_else(|| f.unit(&["confidence", "c"]));
    side.route = f.route(&["route"]);
    side.outcome = f.string(&["outcome", "status"]).map(|o| Outcome::parse(&o));
    side.error = f.string(&["error", "error_message", "errorMessage"]);
    side.latency_ms = f.number(&["latency_ms", "latencyMs", "latency"]);
    side.decision = f.string(&["decision"]);
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
