//! The pair model: what one line of a sensitivity run records.
//!
//! A [`PairRecord`] holds a source and a variant [`Side`] (question, state,
//! response, route, outcome), the [`Policy`] that turns a probability into a
//! [`Route`], and the [`Expectation`] the pair was tested against. Every field
//! but the two ids is optional: a missing value stays `None` and screens say
//! "not recorded" rather than inventing one.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The deterministic decision a probability is routed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    Pass,
    Review,
    Action,
}

impl Route {
    /// All routes, from least to most urgent.
    pub const ALL: [Route; 3] = [Route::Pass, Route::Review, Route::Action];

    /// Parse a recorded route name, accepting any letter case.
    pub fn parse(s: &str) -> Option<Route> {
        match s.trim().to_ascii_lowercase().as_str() {
            "action" | "act" => Some(Route::Action),
            "review" => Some(Route::Review),
            "pass" => Some(Route::Pass),
            _ => None,
        }
    }

    /// The lowercase name used in files and on screen.
    pub fn name(self) -> &'static str {
        match self {
            Route::Action => "action",
            Route::Review => "review",
            Route::Pass => "pass",
        }
    }

    /// Urgency rank: pass 0, review 1, action 2.
    pub fn rank(self) -> u8 {
        self as u8
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a request to the model ended.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Outcome {
    Ok,
    Timeout,
    Error,
    InvalidResponse,
    /// An outcome name this version does not know, kept as written.
    Other(String),
}

impl Outcome {
    /// Parse a recorded outcome, accepting the usual spellings.
    pub fn parse(s: &str) -> Outcome {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "ok" | "success" | "succeeded" | "completed" => Outcome::Ok,
            "timeout" | "timed-out" | "time-out" => Outcome::Timeout,
            "error" | "failed" | "failure" | "service-error" => Outcome::Error,
            "invalid-response" | "invalid" | "malformed" | "parse-error" => {
                Outcome::InvalidResponse
            }
            _ => Outcome::Other(s.to_string()),
        }
    }

    /// The name used in files, queries and on screen.
    pub fn name(&self) -> &str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Timeout => "timeout",
            Outcome::Error => "error",
            Outcome::InvalidResponse => "invalid-response",
            Outcome::Other(s) => s,
        }
    }

    /// Whether the request produced a usable answer.
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok)
    }
}

/// The two thresholds that turn a probability into a route.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    pub review_threshold: f64,
    pub action_threshold: f64,
}

impl Policy {
    /// The route for probability `p`: action at or above the action threshold,
    /// review at or above the review threshold, pass below.
    pub fn route(&self, p: f64) -> Route {
        if p >= self.action_threshold {
            Route::Action
        } else if p >= self.review_threshold {
            Route::Review
        } else {
            Route::Pass
        }
    }

    /// Distance from `p` to the nearer threshold.
    pub fn margin(&self, p: f64) -> f64 {
        (p - self.review_threshold)
            .abs()
            .min((p - self.action_threshold).abs())
    }
}

/// The relation a variant must keep with its source.
#[derive(Debug, Clone, PartialEq)]
pub enum Expectation {
    /// Bounded drift, and optionally the same route.
    Invariant {
        max_probability_drift: Option<f64>,
        max_confidence_drift: Option<f64>,
        require_same_route: bool,
    },
    /// The variant may not be materially less urgent.
    NotLessUrgent { permitted_probability_movement: f64 },
    /// The variant may not be materially more urgent.
    NotMoreUrgent { permitted_probability_movement: f64 },
    /// The variant's route must be one of these.
    AllowedRoutes { allowed_routes: Vec<Route> },
    /// A kind this version does not know; shown, never checked.
    Unknown { kind: String },
}

impl Expectation {
    /// The kind name as written in run files.
    pub fn kind(&self) -> &str {
        match self {
            Expectation::Invariant { .. } => "invariant",
            Expectation::NotLessUrgent { .. } => "not-less-urgent",
            Expectation::NotMoreUrgent { .. } => "not-more-urgent",
            Expectation::AllowedRoutes { .. } => "allowed-routes",
            Expectation::Unknown { kind } => kind,
        }
    }

    /// A one-line statement of what the pair had to do.
    pub fn describe(&self) -> String {
        match self {
            Expectation::Invariant {
                max_probability_drift,
                max_confidence_drift,
                require_same_route,
            } => {
                let mut parts = Vec::new();
                if let Some(d) = max_probability_drift {
                    parts.push(format!("|Δp| ≤ {}", fmt_num(*d)));
                }
                if let Some(d) = max_confidence_drift {
                    parts.push(format!("|Δc| ≤ {}", fmt_num(*d)));
                }
                if *require_same_route {
                    parts.push("same route".to_string());
                }
                if parts.is_empty() {
                    "invariant (no bounds recorded)".to_string()
                } else {
                    format!("invariant: {}", parts.join(", "))
                }
            }
            Expectation::NotLessUrgent {
                permitted_probability_movement,
            } => format!(
                "not less urgent: p may fall by at most {}",
                fmt_num(*permitted_probability_movement)
            ),
            Expectation::NotMoreUrgent {
                permitted_probability_movement,
            } => format!(
                "not more urgent: p may rise by at most {}",
                fmt_num(*permitted_probability_movement)
            ),
            Expectation::AllowedRoutes { allowed_routes } => format!(
                "allowed routes: {}",
                allowed_routes
                    .iter()
                    .map(|r| r.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Expectation::Unknown { kind } => format!("{kind} (unknown kind, not checked)"),
        }
    }
}

/// Format a number compactly: up to three decimals, trailing zeros dropped.
pub fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// One side of a pair: what was asked, and what came back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Side {
    pub question: Option<String>,
    pub state: Option<Value>,
    pub probability: Option<f64>,
    pub confidence: Option<f64>,
    /// The route the runner recorded (not recomputed).
    pub route: Option<Route>,
    pub outcome: Option<Outcome>,
    pub error: Option<String>,
    pub latency_ms: Option<f64>,
    /// A decision that is not an urgency route (another tool's `approve`,
    /// `hold`, `pass`…), kept as recorded for the detail view.
    pub decision: Option<String>,
    /// Whether the side records an answer in any form: a `response`, or a
    /// probability or confidence of any type.
    pub answered: bool,
    /// A probability that was recorded but cannot be used (`probability`
    /// is then `None`).
    pub bad_probability: Option<BadNumber>,
    /// A confidence that was recorded but cannot be used.
    pub bad_confidence: Option<BadNumber>,
}

/// A probability or confidence recorded in a form no runner could use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BadNumber {
    /// Not a JSON number; its type, as "a string".
    NotANumber(&'static str),
    /// A number outside [0, 1] (or not finite).
    OutOfRange(f64),
}

/// Why a side's answer has no valid result, in the terms of the seed
/// runner's `validateAssessment` (seed 000, section 5): its probability
/// and its confidence must each be a finite number from 0 through 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnswerFault {
    /// `probability` or `confidence`.
    pub field: &'static str,
    /// What is wrong with it; `None` when the answer has no such field.
    pub problem: Option<BadNumber>,
}

impl AnswerFault {
    /// The fault in words, naming the side: "The variant answer has no
    /// confidence." or "The source probability 1.4 is outside [0, 1]."
    pub fn message(&self, side: &str) -> String {
        let field = self.field;
        match self.problem {
            None => format!("The {side} answer has no {field}."),
            Some(BadNumber::NotANumber(ty)) => {
                format!("The {side} {field} is {ty}, not a number from 0 through 1.")
            }
            Some(BadNumber::OutOfRange(x)) => {
                format!("The {side} {field} {x} is outside [0, 1].")
            }
        }
    }
}

impl Side {
    /// The outcome, defaulting to ok when a probability was recorded.
    pub fn effective_outcome(&self) -> Option<Outcome> {
        match &self.outcome {
            Some(o) => Some(o.clone()),
            None if self.probability.is_some() => Some(Outcome::Ok),
            None => None,
        }
    }

    /// Why the side's answer has no valid result, when its request did not
    /// fail: with `outcome` `ok`, or no `outcome` but an answer recorded, the
    /// probability and then the confidence must each be a finite number in
    /// [0, 1] (seed 000, `validateAssessment`). A side with no outcome and
    /// no answer at all records nothing to check.
    pub fn answer_fault(&self) -> Option<AnswerFault> {
        match &self.outcome {
            Some(o) if !o.is_ok() => return None,
            Some(_) => {}
            None => {
                let recorded = self.answered
                    || self.probability.is_some()
                    || self.confidence.is_some()
                    || self.bad_probability.is_some()
                    || self.bad_confidence.is_some();
                if !recorded {
                    return None;
                }
            }
        }
        [
            ("probability", self.probability, self.bad_probability),
            ("confidence", self.confidence, self.bad_confidence),
        ]
        .into_iter()
        .find_map(|(field, value, bad)| match value {
            Some(x) if x.is_finite() && (0.0..=1.0).contains(&x) => None,
            Some(x) => Some(AnswerFault {
                field,
                problem: Some(BadNumber::OutOfRange(x)),
            }),
            None => Some(AnswerFault {
                field,
                problem: bad,
            }),
        })
    }

    /// A short phrase for a failed request, such as "timed out after 30000 ms".
    pub fn failure_phrase(&self) -> Option<String> {
        let outcome = self.effective_outcome()?;
        if outcome.is_ok() {
            return None;
        }
        let mut s = match &outcome {
            Outcome::Timeout => match self.latency_ms {
                Some(ms) => format!("timed out after {} ms", fmt_num(ms)),
                None => "timed out".to_string(),
            },
            Outcome::Error => "failed with an error".to_string(),
            Outcome::InvalidResponse => "returned an invalid response".to_string(),
            Outcome::Other(o) => format!("ended with outcome {o}"),
            Outcome::Ok => String::new(),
        };
        // The recorded error, unless it only says again what the phrase
        // says ("timeout" after "timed out after 30000 ms").
        if let Some(e) = &self.error
            && !repeats(e, outcome.name(), &s)
        {
            s.push_str(": ");
            s.push_str(e);
        }
        Some(s)
    }
}

/// Whether an error text adds nothing to a failure phrase: it is empty,
/// names the outcome, or is already part of the phrase (ignoring case,
/// spaces, `-`, `_` and a final period).
fn repeats(error: &str, outcome: &str, phrase: &str) -> bool {
    let norm = |s: &str| -> String {
        s.trim()
            .trim_end_matches('.')
            .chars()
            .filter(|c| !matches!(c, ' ' | '-' | '_'))
            .flat_map(char::to_lowercase)
            .collect()
    };
    let e = norm(error);
    e.is_empty() || e == norm(outcome) || norm(phrase).contains(&e)
}

/// One pair as its line in the run file records it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PairRecord {
    pub case_id: String,
    pub variant_id: String,
    pub label: Option<String>,
    pub family: Option<String>,
    pub transformation: Option<String>,
    pub contract_version: Option<String>,
    pub state_schema_version: Option<String>,
    pub dataset_version: Option<String>,
    pub policy: Option<Policy>,
    pub expectation: Option<Expectation>,
    pub minimum_boundary_margin: Option<f64>,
    pub allowed_changes: Option<Vec<String>>,
    pub source: Side,
    pub variant: Side,
    pub passed: Option<bool>,
    pub reasons: Vec<String>,
    pub timestamp: Option<String>,
    pub model_id: Option<String>,
    pub settings_id: Option<String>,
    pub repetition: Option<u64>,
    /// A validator's recorded verdict on the variant (`validation_status`:
    /// `valid`, `invalid`, `unknown`); `invalid` and `unknown` decide the
    /// validity whatever the diff shows.
    pub validation_status: Option<String>,
    /// Written only where approval was not the expected decision: whether
    /// the variant approved anyway (`unsafe_approval`).
    pub unsafe_approval: Option<bool>,
    /// The source case's metadata (seed 000, section 4): its human label,
    /// when a person reviewed it, and notes.
    pub gold_urgent: Option<bool>,
    pub human_reviewed_at: Option<String>,
    pub notes: Option<String>,
    /// Top-level fields this version does not know, kept for the raw view.
    pub extra: Map<String, Value>,
    /// Optional fields that were present but unusable (wrong type, out of range).
    pub field_warnings: Vec<String>,
}
