//! A suggested category for every failure, with the reason behind it.
//!
//! The rules follow the diagnosis order of seed 000, section 7 — verify
//! the transformation, compare the payloads, then classify — and the first
//! that applies decides (documented in `docs/suggestions.md`):
//!
//! 1. a request or answer fault on either side is a service error;
//! 2. a variant that changed more than it declared is an invalid pair;
//! 3. a source inside the minimum margin is a boundary case, unless the
//!    variant moved further than the pair's drift bound allows (a move the
//!    nearby threshold does not explain);
//! 4. otherwise the family's typical diagnosis (seed 000, section 2),
//!    with the family inferred from the expectation or the diff when the
//!    record does not name one of the four.
//!
//! Field names are not evidence: no rule reads what a field is called.

use super::derive::{Derived, Lean, Status, Validity, ValidityCode, exceeds};
use super::diff::{self, Change, DiffEntry};
use super::model::{Expectation, PairRecord, Side, fmt_num};
use super::schema::{R_CONFIDENCE, R_PROBABILITY, RESPONSE, S_CONFIDENCE, S_PROBABILITY, SIDE};

/// A suggested category id and the short reason for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    pub category: &'static str,
    pub reason: String,
}

/// Every category [`suggest`] can give (the default taxonomy's ids, in its
/// order): the index stores a row's suggestion as its place in this list.
pub const CATEGORIES: [&str; 7] = [
    "ambiguous-contract",
    "distractor",
    "missing-evidence",
    "conflicting-evidence",
    "boundary",
    "service-error",
    "invalid-pair",
];

/// Suggest a category for a failed pair; `None` for pairs that did not fail
/// and for failures no rule can decide.
pub fn suggest(r: &PairRecord, d: &Derived) -> Option<Suggestion> {
    let rule = decide(r, &Basis::of(d))?;
    let category = rule.category();
    debug_assert!(CATEGORIES.contains(&category), "{category}");
    Some(Suggestion {
        category,
        reason: reason(r, d, &rule),
    })
}

/// Only the category [`suggest`] would give, without its reason.
pub fn suggest_category(r: &PairRecord, d: &Derived) -> Option<&'static str> {
    decide(r, &Basis::of(d)).map(|rule| rule.category())
}

/// The category [`suggest`] would give, from the lean derivation the index
/// computes: the same rules, without any reason or path string.
pub fn lean_category(r: &PairRecord, l: &Lean) -> Option<&'static str> {
    let basis = Basis {
        status: l.status,
        invalid: l.validity == ValidityCode::Invalid,
        question_changed: l.question_changed,
        state: &l.state,
        source_margin: l.source_margin,
        near_boundary: l.near_boundary,
        dp: l.dp,
    };
    decide(r, &basis).map(|rule| rule.category())
}

/// What the rules look at, from a full or a lean derivation.
struct Basis<'a> {
    status: Status,
    invalid: bool,
    question_changed: bool,
    state: &'a [DiffEntry],
    source_margin: Option<f64>,
    near_boundary: Option<bool>,
    dp: Option<f64>,
}

impl<'a> Basis<'a> {
    fn of(d: &'a Derived) -> Self {
        Basis {
            status: d.status,
            invalid: matches!(d.validity, Validity::Invalid { .. }),
            question_changed: d.changes.question_changed,
            state: &d.changes.state,
            source_margin: d.source_margin,
            near_boundary: d.near_boundary,
            dp: d.dp,
        }
    }
}

/// The four test families of seed 000, section 2, each with its typical
/// diagnosis when a pair of it fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// The question contract's wording changed: an ambiguous contract.
    Question,
    /// Irrelevant state detail changed: a distractor.
    StateNoise,
    /// A relevant evidence field was removed: missing evidence semantics.
    EvidenceAblation,
    /// A verified fact changed: conflicting evidence.
    EvidenceContrast,
}

impl Family {
    /// The name run files record in `family`.
    pub fn name(self) -> &'static str {
        match self {
            Family::Question => "question",
            Family::StateNoise => "state-noise",
            Family::EvidenceAblation => "evidence-ablation",
            Family::EvidenceContrast => "evidence-contrast",
        }
    }

    /// The category of the family's typical diagnosis.
    pub fn category(self) -> &'static str {
        match self {
            Family::Question => "ambiguous-contract",
            Family::StateNoise => "distractor",
            Family::EvidenceAblation => "missing-evidence",
            Family::EvidenceContrast => "conflicting-evidence",
        }
    }

    /// A recorded family name, in any letter case, with `_` or a space for
    /// `-` and the seed's table wording (`Question sensitivity`, `State-noise
    /// sensitivity`, `Evidence ablation`, `Evidence contrast`); `None` for
    /// any other name.
    pub fn parse(s: &str) -> Option<Family> {
        let norm: String = s
            .trim()
            .chars()
            .map(|c| match c {
                '_' | ' ' => '-',
                c => c.to_ascii_lowercase(),
            })
            .collect();
        let norm = norm.strip_suffix("-sensitivity").unwrap_or(&norm);
        match norm {
            "question" | "question-contract" | "question-wording" => Some(Family::Question),
            "state-noise" | "noise" => Some(Family::StateNoise),
            "evidence-ablation" | "ablation" => Some(Family::EvidenceAblation),
            "evidence-contrast" | "contrast" => Some(Family::EvidenceContrast),
            _ => None,
        }
    }
}

/// Where a pair's family came from.
#[derive(Debug, Clone, Copy)]
enum Origin<'a> {
    /// The record names one of the four.
    Recorded,
    /// Inferred; `named` is a recorded family that is not one of the four.
    Inferred { named: Option<&'a str>, from: Clue },
}

/// What an inferred family was inferred from.
#[derive(Debug, Clone, Copy)]
enum Clue {
    /// The question changed.
    Question,
    /// The declared expectation kind.
    Expectation(&'static str),
    /// The kind of change in the state's diff.
    Diff,
    /// The variant id, for a row that records no payloads (the seed
    /// runner's bare `VariantResult`).
    VariantId,
}

/// One side's fault: its request failed, or its answer is unusable.
#[derive(Debug, Clone, Copy)]
enum Fault {
    Request,
    Answer,
}

/// The rule that decided a suggestion, with what its reason names.
#[derive(Debug, Clone, Copy)]
enum Rule<'a> {
    /// Rule 1, with the fault of each side (none on either when only the
    /// derived status says so).
    ServiceError {
        source: Option<Fault>,
        variant: Option<Fault>,
    },
    /// Rule 2.
    InvalidPair,
    /// Rule 3: the source margin under the minimum.
    Boundary { margin: f64, min: Option<f64> },
    /// Rule 3 without a policy: the runner's own reason names the decision
    /// boundary.
    RecordedBoundary(&'a str),
    /// Rule 4.
    Family {
        family: Family,
        origin: Origin<'a>,
        /// The first change of the state that is not a reorder of keys, else
        /// the first change.
        change: Option<&'a DiffEntry>,
    },
}

impl Rule<'_> {
    fn category(&self) -> &'static str {
        match self {
            Rule::ServiceError { .. } => "service-error",
            Rule::InvalidPair => "invalid-pair",
            Rule::Boundary { .. } | Rule::RecordedBoundary(_) => "boundary",
            Rule::Family { family, .. } => family.category(),
        }
    }
}

/// How the variant moved further than the pair allows, when it did: the
/// probability drift over an invariant expectation's bound, or, on a row
/// that records no expectation, the runner's own reason saying so (the
/// reference runner writes `Noul drift 0.390 exceeds 0.1.`). A source
/// inside the margin explains a minor shift across the nearby threshold;
/// it does not explain this.
fn drift_beyond_bound<'a>(r: &'a PairRecord, b: &Basis<'_>) -> Option<Beyond<'a>> {
    match &r.expectation {
        Some(Expectation::Invariant {
            max_probability_drift: Some(max),
            ..
        }) => {
            let dp = b.dp?;
            exceeds(dp.abs(), *max).then_some(Beyond::Bound { dp, max: *max })
        }
        Some(_) => None,
        None => r
            .reasons
            .iter()
            .find(|x| {
                let confidence = x
                    .trim_start()
                    .get(..10)
                    .is_some_and(|p| p.eq_ignore_ascii_case("confidence"));
                !confidence
                    && contains_ignore_case(x, "drift")
                    && contains_ignore_case(x, "exceeds")
            })
            .map(|x| Beyond::Recorded(x)),
    }
}

/// What [`drift_beyond_bound`] found.
#[derive(Debug, Clone, Copy)]
enum Beyond<'a> {
    Bound { dp: f64, max: f64 },
    Recorded(&'a str),
}

/// The rules, in their fixed order; `None` for pairs that did not fail and
/// for failures no rule decides.
fn decide<'a>(r: &'a PairRecord, b: &Basis<'a>) -> Option<Rule<'a>> {
    if !b.status.is_failure() {
        return None;
    }
    // Rule 1: a request or answer fault on either side.
    let answers = expects_answers(r);
    let (source, variant) = (fault(&r.source, answers), fault(&r.variant, answers));
    if source.is_some() || variant.is_some() || b.status == Status::ServiceError {
        return Some(Rule::ServiceError { source, variant });
    }
    // A single result with no variant (another tool's unpaired row): its
    // only change is expected against actual, which says nothing about why.
    if r.transformation.as_deref() == Some(super::formats::UNPAIRED) {
        return None;
    }
    // Rule 2: the variant changed more than it declared.
    if b.invalid {
        return Some(Rule::InvalidPair);
    }
    // Rule 3: the source sits inside the minimum margin, as derive judges
    // it, and the variant moved no further than its bound: a minor shift
    // that the nearby threshold explains (seed 000, section 4).
    // (The bound is looked at only for a source inside the margin.)
    let within_bound = || drift_beyond_bound(r, b).is_none();
    if b.near_boundary == Some(true) && b.source_margin.is_some() && within_bound() {
        return Some(Rule::Boundary {
            margin: b.source_margin.unwrap_or(0.0),
            min: r.minimum_boundary_margin,
        });
    }
    // Without a policy the margin cannot be computed, but the reference
    // runner says so in its reasons.
    if b.source_margin.is_none()
        && let Some(reason) = r
            .reasons
            .iter()
            .find(|x| contains_ignore_case(x, "decision boundary"))
        && within_bound()
    {
        return Some(Rule::RecordedBoundary(reason));
    }
    // Rule 4: the family's typical diagnosis.
    let change = b
        .state
        .iter()
        .find(|e| !matches!(e.change, Change::Reordered { .. } | Change::Moved { .. }))
        .or(b.state.first());
    let recorded = r.family.as_deref();
    if let Some(family) = recorded.and_then(Family::parse) {
        return Some(Rule::Family {
            family,
            origin: Origin::Recorded,
            change,
        });
    }
    let (family, from) = infer_family(r, b)?;
    Some(Rule::Family {
        family,
        origin: Origin::Inferred {
            named: recorded.filter(|s| !s.trim().is_empty()),
            from,
        },
        change,
    })
}

/// The family of a pair that does not record one of the four: a changed
/// question is a question pair (seed 000, section 2: a transformation
/// changes the contract or the state); otherwise the declared expectation
/// says whether the state change was meant to matter (seed 000, sections 1
/// and 3: irrelevant additions, removals and reorders are invariant,
/// verified evidence is directional, removed key evidence is judged by
/// allowed routes); without one, the kind of change: a removal is
/// ablation, a changed value contrast, an addition or a reorder noise.
/// `None` when nothing changed.
fn infer_family(r: &PairRecord, b: &Basis) -> Option<(Family, Clue)> {
    if b.question_changed {
        return Some((Family::Question, Clue::Question));
    }
    let bare = [&r.source, &r.variant]
        .iter()
        .all(|s| s.question.is_none() && s.state.is_none());
    if bare {
        return super::derive::transformation_from_id(&r.variant_id)
            .and_then(super::derive::family_of_transformation)
            .and_then(Family::parse)
            .map(|f| (f, Clue::VariantId));
    }
    if b.state.is_empty() {
        return None;
    }
    let by_expectation = match &r.expectation {
        Some(Expectation::Invariant { .. }) => Some((Family::StateNoise, "invariant")),
        Some(Expectation::NotLessUrgent { .. }) => {
            Some((Family::EvidenceContrast, "not-less-urgent"))
        }
        Some(Expectation::NotMoreUrgent { .. }) => {
            Some((Family::EvidenceContrast, "not-more-urgent"))
        }
        Some(Expectation::AllowedRoutes { .. }) => {
            Some((Family::EvidenceAblation, "allowed-routes"))
        }
        Some(Expectation::Unknown { .. }) | None => None,
    };
    if let Some((family, kind)) = by_expectation {
        return Some((family, Clue::Expectation(kind)));
    }
    let any = |f: fn(&Change) -> bool| b.state.iter().any(|e| f(&e.change));
    let family = if any(|c| matches!(c, Change::Removed { .. })) {
        Family::EvidenceAblation
    } else if any(|c| matches!(c, Change::Changed { .. })) {
        Family::EvidenceContrast
    } else {
        Family::StateNoise
    };
    Some((family, Clue::Diff))
}

/// Whether the record is one of probability answers (a Noul probability
/// and a confidence on each side, as seed 000's `validateAssessment`
/// requires): it records a policy, a probability expectation, or some
/// probability or confidence, usable or not. Another tool's converted
/// rows (a decision, a verdict) are not.
fn expects_answers(r: &PairRecord) -> bool {
    r.policy.is_some()
        || matches!(
            r.expectation,
            Some(
                Expectation::Invariant { .. }
                    | Expectation::NotLessUrgent { .. }
                    | Expectation::NotMoreUrgent { .. }
                    | Expectation::AllowedRoutes { .. }
            )
        )
        || [&r.source, &r.variant]
            .iter()
            .any(|s| s.probability.is_some() || s.confidence.is_some())
        || r.field_warnings.iter().any(|w| answer_warning(w).is_some())
}

/// A side's fault: a request that did not end `ok`, or (in a record of
/// probability answers) an answer without a usable probability and
/// confidence, each a finite number in [0, 1] (seed 000, section 5).
fn fault(side: &Side, answers: bool) -> Option<Fault> {
    if side.failure_phrase().is_some() {
        Some(Fault::Request)
    } else if answers && (side.probability.is_none() || side.confidence.is_none()) {
        Some(Fault::Answer)
    } else {
        None
    }
}

/// Which side and field a record's field warning is about, when it is a
/// side's probability or confidence: `("variant", "probability")`.
fn answer_warning(w: &str) -> Option<(&'static str, &'static str)> {
    let key = w.strip_prefix('`')?.split('`').next()?;
    let (side, rest) = key.split_once('.')?;
    let side = match side {
        "source" => "source",
        "variant" => "variant",
        _ => return None,
    };
    let field = rest.rsplit('.').next()?;
    let spelled = |slots: [&[&str]; 2]| slots.iter().any(|s| s.contains(&field));
    if spelled([
        SIDE[S_PROBABILITY].spellings,
        RESPONSE[R_PROBABILITY].spellings,
    ]) {
        Some((side, "probability"))
    } else if spelled([
        SIDE[S_CONFIDENCE].spellings,
        RESPONSE[R_CONFIDENCE].spellings,
    ]) {
        Some((side, "confidence"))
    } else {
        None
    }
}

/// The reason for a rule's suggestion, in words, naming the rule.
fn reason(r: &PairRecord, d: &Derived, rule: &Rule) -> String {
    match *rule {
        Rule::ServiceError { source, variant } => {
            let mut parts = Vec::new();
            for (name, side, f) in [
                ("source", &r.source, source),
                ("variant", &r.variant, variant),
            ] {
                match f {
                    Some(Fault::Request) => {
                        let phrase = side.failure_phrase().unwrap_or_default();
                        parts.push(format!("the {name} request {phrase}"));
                    }
                    Some(Fault::Answer) => parts.push(unusable(r, name, side)),
                    None => {}
                }
            }
            if parts.is_empty() {
                parts.push(d.why.trim_end_matches('.').to_string());
            }
            format!("rule 1: {}", super::text::inert_line(&parts.join("; ")))
        }
        Rule::InvalidPair => {
            let unexpected: &[String] = match &d.validity {
                Validity::Invalid { unexpected } => unexpected,
                _ => &[],
            };
            if unexpected.is_empty() {
                return "rule 2: recorded as invalid by its validator".to_string();
            }
            const SHOWN: usize = 3;
            let mut list = unexpected
                .iter()
                .take(SHOWN)
                .map(|p| super::text::inert_line(p))
                .collect::<Vec<_>>()
                .join(", ");
            if unexpected.len() > SHOWN {
                list.push_str(&format!(" (+{} more)", unexpected.len() - SHOWN));
            }
            format!(
                "rule 2: the variant changed undeclared {}: {list}",
                if unexpected.len() == 1 {
                    "path"
                } else {
                    "paths"
                }
            )
        }
        Rule::Boundary { margin, min } => {
            let min = min.map(fmt_num).unwrap_or_else(|| "minimum".into());
            let flipped = if d.flip == Some(true) {
                " and the route flipped"
            } else {
                ""
            };
            format!("rule 3: source margin {} < {min}{flipped}", fmt3(margin))
        }
        Rule::RecordedBoundary(reason) => format!(
            "rule 3: recorded: {}",
            super::text::inert_line(reason.trim_end_matches('.'))
        ),
        Rule::Family {
            family,
            origin,
            change,
        } => {
            let what = what_changed(r, d, family, change) + &past_the_boundary(r, d);
            match origin {
                Origin::Recorded => format!("rule 4: {} pair{what}", family.name()),
                Origin::Inferred { named, from } => {
                    let named = match named {
                        Some(n) => format!(
                            "family `{}` is not one of the four",
                            super::text::inert_line(&clip(n, 24))
                        ),
                        None => "no family recorded".to_string(),
                    };
                    let from = match from {
                        Clue::Question => "a changed question".to_string(),
                        Clue::Expectation(kind) => format!("the {kind} expectation"),
                        Clue::Diff => "the diff".to_string(),
                        Clue::VariantId => "the variant id".to_string(),
                    };
                    format!(
                        "rule 4: {named}; inferred {} from {from}{what}",
                        family.name()
                    )
                }
            }
        }
    }
}

/// Why rule 3 did not decide a pair whose source is inside the margin
/// (empty for any other pair): the variant moved further than its bound.
fn past_the_boundary(r: &PairRecord, d: &Derived) -> String {
    let b = Basis::of(d);
    let near = d.near_boundary == Some(true)
        || (d.source_margin.is_none()
            && r.reasons
                .iter()
                .any(|x| contains_ignore_case(x, "decision boundary")));
    match drift_beyond_bound(r, &b) {
        Some(_) if !near => String::new(),
        Some(Beyond::Bound { dp, max }) => format!(
            "; the source is inside the margin, but Δp {} exceeds the {} bound",
            fmt3(dp),
            fmt_num(max)
        ),
        Some(Beyond::Recorded(reason)) => format!(
            "; the source is inside the margin, but recorded: {}",
            super::text::inert_line(reason.trim_end_matches('.'))
        ),
        None => String::new(),
    }
}

/// Why a side's answer is unusable, naming the field: the record's own
/// warning about it when there is one.
fn unusable(r: &PairRecord, name: &str, side: &Side) -> String {
    let mut missing = Vec::new();
    for (field, value) in [
        ("probability", side.probability),
        ("confidence", side.confidence),
    ] {
        if value.is_some() {
            continue;
        }
        let warned = r
            .field_warnings
            .iter()
            .find(|w| answer_warning(w).is_some_and(|(s, f)| s == name && f == field));
        missing.push(match warned {
            Some(w) => w
                .split_once("; treated as")
                .map_or(w.as_str(), |(head, _)| head)
                .to_string(),
            None => format!("no {field}"),
        });
    }
    format!(
        "the {name} answer is unusable ({}): seed 000 needs a probability and a confidence in [0, 1]",
        missing.join(", ")
    )
}

/// What a rule-4 pair changed, in parentheses: the question's first changed
/// words or the first state change, and for evidence contrast how far p
/// moved.
fn what_changed(r: &PairRecord, d: &Derived, family: Family, change: Option<&DiffEntry>) -> String {
    let mut parts = Vec::new();
    if d.changes.question_changed {
        let words = match (&r.source.question, &r.variant.question) {
            (Some(a), Some(b)) => diff::changed_words(a, b).first().map(|(x, y)| {
                format!(
                    "\"{}\" → \"{}\"",
                    super::text::inert_line(&clip(x, 24)),
                    super::text::inert_line(&clip(y, 24))
                )
            }),
            _ => None,
        };
        parts.push(words.unwrap_or_else(|| "question changed".into()));
    }
    if let Some(e) = change {
        parts.push(match &e.change {
            Change::Added { .. } => format!("{} added", e.path),
            Change::Removed { .. } => format!("{} removed", e.path),
            Change::Changed { .. } => format!("{} changed", e.path),
            Change::Reordered { .. } => format!("keys reordered at {}", e.path),
            Change::Moved { .. } => format!("elements reordered at {}", e.path),
        });
    }
    if family == Family::EvidenceContrast
        && let Some(x) = d.dp
    {
        parts.push(if x < 0.0 {
            format!("p fell by {}", fmt3(-x))
        } else {
            format!("p rose by {}", fmt3(x))
        });
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", super::text::inert_line(&parts.join("; ")))
    }
}

/// Whether `hay` contains `needle` (lowercase ASCII), ignoring ASCII case:
/// `hay.to_ascii_lowercase().contains(needle)` without the copy.
fn contains_ignore_case(hay: &str, needle: &str) -> bool {
    let n = needle.as_bytes();
    n.is_empty()
        || hay
            .as_bytes()
            .windows(n.len())
            .any(|w| w.eq_ignore_ascii_case(n))
}

fn fmt3(x: f64) -> String {
    format!("{x:.3}")
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() > n {
        let mut out: String = s.chars().take(n).collect();
        out.push('…');
        out
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::derive::{derive, lean};
    use crate::core::model::{Outcome, Route};
    use crate::core::record::map_record;
    use serde_json::{Value, json};

    proptest::proptest! {
        #[test]
        fn contains_ignore_case_is_lowercase_contains(
            hay in "[a-zA-Zé -]{0,12}(Evidence|TYPO|field)?[a-zA-Z -]{0,4}",
            needle in proptest::sample::select(vec!["evidence", "typo", "field", "decision boundary", ""]),
        ) {
            proptest::prop_assert_eq!(
                contains_ignore_case(&hay, needle),
                hay.to_ascii_lowercase().contains(needle)
            );
        }
    }

    #[test]
    fn categories_are_the_default_taxonomy() {
        let t = crate::core::taxonomy::Taxonomy::default();
        let ids: Vec<&str> = t.categories.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, CATEGORIES);
    }

    /// The derive tests' pair, with a declared change and evidence in the state.
    fn pair(ps: f64, pv: f64) -> PairRecord {
        let mut r = crate::core::derive::tests::pair(ps, pv);
        r.allowed_changes = Some(vec!["question".into(), "state.uiTheme".into()]);
        for side in [&mut r.source, &mut r.variant] {
            side.question = Some("What is the probability of urgency?".into());
            side.state = Some(json!({"a": 1, "evidence": [{"id": "E1"}, {"id": "E2"}]}));
        }
        r
    }

    /// The suggestion by the detail path, after checking that the index's
    /// lean path gives the same category.
    fn sug(r: &PairRecord) -> Option<Suggestion> {
        let s = suggest(r, &derive(r));
        assert_eq!(
            lean_category(r, &lean(r, None)),
            s.as_ref().map(|s| s.category),
            "lean and full disagree"
        );
        s
    }

    fn category(r: &PairRecord) -> Option<&'static str> {
        sug(r).map(|s| s.category)
    }

    /// A record from JSON, as a run file's line is read.
    fn record(v: Value) -> PairRecord {
        map_record(v).expect("a record")
    }

    /// A failing state-noise pair that adds an irrelevant field: the
    /// source at p 0.30, far from both thresholds, the variant at 0.70.
    fn noise_line() -> Value {
        json!({
            "case_id": "c", "variant_id": "v", "family": "state-noise",
            "policy": {"review_threshold": 0.55, "action_threshold": 0.9},
            "expectation": {"kind": "invariant", "max_probability_drift": 0.1, "require_same_route": true},
            "minimum_boundary_margin": 0.05,
            "allowed_changes": ["state.uiTheme"],
            "passed": false, "reasons": ["Route changed from pass to review."],
            "source": {"question": "q", "state": {"a": 1},
                       "response": {"probability": 0.3, "confidence": 0.8}, "outcome": "ok"},
            "variant": {"question": "q", "state": {"a": 1, "uiTheme": "dark"},
                        "response": {"probability": 0.7, "confidence": 0.8}, "outcome": "ok"}
        })
    }

    #[test]
    fn passes_get_no_suggestion() {
        assert_eq!(sug(&pair(0.3, 0.31)), None);
    }

    #[test]
    fn timeout_is_a_service_error() {
        let mut r = pair(0.7, 0.7);
        r.variant.probability = None;
        r.variant.outcome = Some(Outcome::Timeout);
        r.variant.latency_ms = Some(30000.0);
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "service-error");
        assert_eq!(
            s.reason,
            "rule 1: the variant request timed out after 30000 ms"
        );
    }

    #[test]
    fn the_noise_line_is_a_distractor() {
        let s = sug(&record(noise_line())).unwrap();
        assert_eq!(s.category, "distractor");
        assert_eq!(s.reason, "rule 4: state-noise pair (state.uiTheme added)");
    }

    /// An answer that `validateAssessment` would refuse is a service error,
    /// whichever side gave it and whatever the variant also changed.
    #[test]
    fn an_unusable_answer_is_a_service_error() {
        for (side, response, named) in [
            (
                "variant",
                json!({"probability": 1.7, "confidence": 0.8}),
                "`variant.response.probability` is 1.7, outside [0, 1]",
            ),
            (
                "source",
                json!({"probability": 0.3, "confidence": "high"}),
                "`source.response.confidence` should be a number but is a string",
            ),
            ("variant", json!({"probability": 0.7}), "no confidence"),
            ("source", json!({}), "no probability, no confidence"),
            (
                "variant",
                json!({"probability": -0.2, "confidence": 2}),
                "`variant.response.probability` is -0.2, outside [0, 1], `variant.response.confidence` is 2, outside [0, 1]",
            ),
        ] {
            let mut v = noise_line();
            v[side]["response"] = response.clone();
            let r = record(v);
            let s = sug(&r).unwrap_or_else(|| panic!("{side} {response}"));
            assert_eq!(
                s.category, "service-error",
                "{side} {response}: {}",
                s.reason
            );
            assert_eq!(
                s.reason,
                format!(
                    "rule 1: the {side} answer is unusable ({named}): seed 000 needs a probability and a confidence in [0, 1]"
                ),
            );
        }
    }

    /// A bare row puts the answer on the side: `noul` out of range there is
    /// the same fault.
    #[test]
    fn an_unusable_bare_answer_is_a_service_error() {
        let r = record(json!({
            "caseId": "c", "variantId": "v", "passed": false,
            "reasons": ["Route changed from pass to review."],
            "source": {"noul": 0.3, "confidence": 0.8},
            "variant": {"noul": "0.7", "confidence": 0.8}
        }));
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "service-error");
        assert!(
            s.reason.contains("`variant.noul` should be a number"),
            "{}",
            s.reason
        );
    }

    /// Another tool's converted rows carry decisions, not probabilities:
    /// their missing probability is no fault.
    #[test]
    fn decision_rows_need_no_probability() {
        let r = record(json!({
            "case_id": "c", "variant_id": "v", "family": "question",
            "expectation": {"kind": "decision-invariant"},
            "allowed_changes": ["question"], "passed": false,
            "reasons": ["The decision changed from approve to hold."],
            "source": {"question": "a", "state": {"x": 1}, "decision": "approve"},
            "variant": {"question": "b", "state": {"x": 1}, "decision": "hold"}
        }));
        assert_eq!(category(&r), Some("ambiguous-contract"));
    }

    #[test]
    fn both_faulty_sides_are_named() {
        let mut v = noise_line();
        v["source"]["outcome"] = json!("timeout");
        v["source"]["latency_ms"] = json!(30000);
        v["variant"]["response"] = json!({"probability": 0.7});
        let s = sug(&record(v)).unwrap();
        assert_eq!(
            s.reason,
            "rule 1: the source request timed out after 30000 ms; the variant answer is unusable (no confidence): seed 000 needs a probability and a confidence in [0, 1]"
        );
    }

    /// Rule 1 comes before rule 2: a failed request says nothing, whatever
    /// the variant changed.
    #[test]
    fn a_fault_comes_before_an_undeclared_change() {
        let mut v = noise_line();
        v["allowed_changes"] = json!([]);
        let r = record(v.clone());
        assert_eq!(category(&r), Some("invalid-pair"));
        v["variant"]["outcome"] = json!("error");
        v["variant"]["error"] = json!("HTTP 503");
        let s = sug(&record(v)).unwrap();
        assert_eq!(s.category, "service-error");
        assert_eq!(
            s.reason,
            "rule 1: the variant request failed with an error: HTTP 503"
        );
    }

    #[test]
    fn small_drift_near_threshold_is_boundary() {
        let r = pair(0.562, 0.54);
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "boundary");
        assert_eq!(
            s.reason,
            "rule 3: source margin 0.012 < 0.1 and the route flipped"
        );
    }

    /// A source inside the minimum margin does not explain a move past the
    /// pair's drift bound: the family decides, and the reason says why
    /// rule 3 did not (seed 000, section 4 speaks of a minor shift).
    #[test]
    fn large_drift_near_threshold_is_the_familys() {
        let mut r = pair(0.91, 0.52);
        r.variant.state =
            Some(json!({"a": 1, "uiTheme": "dark", "evidence": [{"id": "E1"}, {"id": "E2"}]}));
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "distractor");
        assert!(
            s.reason.ends_with(
                "; the source is inside the margin, but Δp -0.390 exceeds the 0.1 bound"
            ),
            "{}",
            s.reason
        );
        // Within the bound, the same source is a boundary case.
        let mut r = pair(0.91, 0.89);
        r.variant.state =
            Some(json!({"a": 1, "uiTheme": "dark", "evidence": [{"id": "E1"}, {"id": "E2"}]}));
        assert_eq!(category(&r), Some("boundary"));
    }

    /// The runner's bare row says both: the source is too close to a
    /// boundary, and the drift exceeds the bound. The family (from the
    /// variant id) decides.
    #[test]
    fn a_bare_row_past_its_drift_bound_is_the_familys() {
        let r = bare(
            "irrelevant-ui-metadata",
            0.91,
            0.52,
            &[
                "Source is too close to a decision boundary: margin 0.010.",
                "Noul drift 0.390 exceeds 0.1.",
                "Confidence drift 0.230 exceeds 0.15.",
                "Route changed from action to pass.",
            ],
        );
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "distractor", "{}", s.reason);
        assert!(
            s.reason.ends_with(
                "; the source is inside the margin, but recorded: Noul drift 0.390 exceeds 0.1"
            ),
            "{}",
            s.reason
        );
        // Only the confidence drifted: still the boundary's.
        let r = bare(
            "irrelevant-ui-metadata",
            0.91,
            0.89,
            &[
                "Source is too close to a decision boundary: margin 0.010.",
                "Confidence drift 0.230 exceeds 0.15.",
                "Route changed from action to review.",
            ],
        );
        assert_eq!(category(&r), Some("boundary"));
    }

    /// Rule 3 comes before every family.
    #[test]
    fn boundary_comes_before_the_family() {
        for family in [
            "question",
            "state-noise",
            "evidence-ablation",
            "evidence-contrast",
        ] {
            let mut v = noise_line();
            v["family"] = json!(family);
            v["source"]["response"]["probability"] = json!(0.57);
            v["variant"]["response"]["probability"] = json!(0.6);
            let s = sug(&record(v)).unwrap();
            assert_eq!(s.category, "boundary", "{family}");
            assert_eq!(s.reason, "rule 3: source margin 0.020 < 0.05");
        }
    }

    #[test]
    fn question_only_change() {
        let mut r = pair(0.3, 0.7);
        r.variant.question = Some("Estimate the probability of urgency?".into());
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "ambiguous-contract");
        assert_eq!(
            s.reason,
            "rule 4: no family recorded; inferred question from a changed question (\"What is\" → \"Estimate\")"
        );
    }

    /// The evidence removed from an ablation pair, with the family inferred
    /// from its allowed-routes expectation (seed 000, section 4).
    #[test]
    fn removed_evidence() {
        let mut r = pair(0.3, 0.4);
        r.expectation = Some(Expectation::AllowedRoutes {
            allowed_routes: vec![Route::Review, Route::Action],
        });
        r.allowed_changes = Some(vec!["state.evidence".into()]);
        r.variant.state = Some(json!({"a": 1, "evidence": [{"id": "E1"}]}));
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "missing-evidence");
        assert_eq!(
            s.reason,
            "rule 4: no family recorded; inferred evidence-ablation from the allowed-routes expectation (state.evidence[1] removed)"
        );
    }

    #[test]
    fn bare_rows_use_the_runners_boundary_reason() {
        let mut r = pair(0.91, 0.9);
        r.policy = None;
        r.passed = Some(false);
        r.reasons = vec!["Source is too close to a decision boundary: margin 0.010.".into()];
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "boundary");
        assert_eq!(
            s.reason,
            "rule 3: recorded: Source is too close to a decision boundary: margin 0.010"
        );
    }

    /// The seed runner's bare row: no payload, policy or transformation.
    fn bare(variant_id: &str, ps: f64, pv: f64, reasons: &[&str]) -> PairRecord {
        let mut r = pair(ps, pv);
        r.variant_id = variant_id.into();
        r.policy = None;
        r.expectation = None;
        r.minimum_boundary_margin = None;
        for side in [&mut r.source, &mut r.variant] {
            side.question = None;
            side.state = None;
        }
        r.passed = Some(false);
        r.reasons = reasons.iter().map(|x| x.to_string()).collect();
        r
    }

    #[test]
    fn a_bare_rows_family_comes_from_its_variant_id() {
        let r = bare(
            "irrelevant-request-trace",
            0.72,
            0.61,
            &["Noul drift 0.110 exceeds 0.1."],
        );
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "distractor");
        assert_eq!(
            s.reason,
            "rule 4: no family recorded; inferred state-noise from the variant id"
        );
        // An id that names no transformation gives no family, so no suggestion.
        assert_eq!(
            sug(&bare("v7", 0.72, 0.61, &["Noul drift 0.110 exceeds 0.1."])),
            None
        );
    }

    #[test]
    fn undeclared_change_is_invalid_pair() {
        let mut r = pair(0.3, 0.7);
        r.variant.state = Some(json!({"a": 2, "evidence": [{"id": "E1"}, {"id": "E2"}]}));
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "invalid-pair");
        assert_eq!(
            s.reason,
            "rule 2: the variant changed undeclared path: state.a"
        );
        r.variant.question = Some("another".into());
        r.variant.state = Some(json!({"a": 2, "b": 3, "c": 4, "d": 5}));
        r.allowed_changes = Some(vec![]);
        let s = sug(&r).unwrap();
        assert_eq!(
            s.reason,
            "rule 2: the variant changed undeclared paths: question, state.a, state.evidence (+3 more)"
        );
    }

    /// Each family's typical diagnosis (seed 000, section 2), whatever the
    /// variant changed.
    #[test]
    fn the_family_decides() {
        for (family, expected) in [
            ("question", "ambiguous-contract"),
            ("state-noise", "distractor"),
            ("evidence-ablation", "missing-evidence"),
            ("evidence-contrast", "conflicting-evidence"),
            ("Evidence contrast", "conflicting-evidence"),
            ("STATE_NOISE", "distractor"),
            ("Question sensitivity", "ambiguous-contract"),
        ] {
            let mut v = noise_line();
            v["family"] = json!(family);
            assert_eq!(category(&record(v)), Some(expected), "{family}");
        }
    }

    /// Field names are not evidence: a removed `utmSource`, a removed
    /// `evidence` list or a reordered evidence list in a state-noise pair
    /// is a distractor.
    #[test]
    fn field_names_are_not_evidence() {
        let evidence =
            json!([{"id": "E1", "text": "probe failed"}, {"id": "E2", "text": "report"}]);
        let reordered =
            json!([{"id": "E2", "text": "report"}, {"id": "E1", "text": "probe failed"}]);
        for (transformation, before, after, path) in [
            (
                "remove-irrelevant-field",
                json!({"a": 1, "utmSource": "newsletter"}),
                json!({"a": 1}),
                "state.utmSource removed",
            ),
            (
                "remove-evidence",
                json!({"a": 1, "evidence": evidence.clone()}),
                json!({"a": 1}),
                "state.evidence removed",
            ),
            (
                "reorder-evidence",
                json!({"a": 1, "evidence": evidence.clone()}),
                json!({"a": 1, "evidence": reordered}),
                "state.evidence",
            ),
        ] {
            let mut v = noise_line();
            v["transformation"] = json!(transformation);
            v["allowed_changes"] = json!(["state"]);
            v["source"]["state"] = before;
            v["variant"]["state"] = after;
            let s = sug(&record(v)).unwrap();
            assert_eq!(s.category, "distractor", "{transformation}: {}", s.reason);
            assert!(
                s.reason.starts_with("rule 4: state-noise pair ("),
                "{}",
                s.reason
            );
            assert!(s.reason.contains(path), "{}", s.reason);
        }
    }

    /// Without a family, the expectation says whether the change was meant
    /// to matter; without a probability expectation, the kind of change.
    #[test]
    fn the_family_is_inferred_when_absent() {
        let mut cases = vec![];
        for (expectation, after, family) in [
            (
                Some(json!({"kind": "invariant"})),
                json!({"a": 1}),
                "state-noise",
            ),
            (
                Some(json!({"kind": "not-less-urgent", "permitted_probability_movement": 0.05})),
                json!({"a": 1, "b": 2, "c": 3}),
                "evidence-contrast",
            ),
            (
                Some(json!({"kind": "not-more-urgent", "permitted_probability_movement": 0.05})),
                json!({"a": 1}),
                "evidence-contrast",
            ),
            (
                Some(json!({"kind": "allowed-routes", "allowed_routes": ["pass"]})),
                json!({"a": 1, "b": 2, "c": 3}),
                "evidence-ablation",
            ),
            (None, json!({"a": 1}), "evidence-ablation"),
            (None, json!({"a": 1, "b": 3}), "evidence-contrast"),
            (None, json!({"a": 1, "b": 2, "c": 3}), "state-noise"),
            (None, json!({"b": 2, "a": 1}), "state-noise"),
        ] {
            let mut v = noise_line();
            v.as_object_mut().unwrap().remove("family");
            v["allowed_changes"] = json!(["state"]);
            v["source"]["state"] = json!({"a": 1, "b": 2});
            v["variant"]["state"] = after.clone();
            match &expectation {
                Some(e) => v["expectation"] = e.clone(),
                None => {
                    v.as_object_mut().unwrap().remove("expectation");
                }
            }
            let s = sug(&record(v)).unwrap_or_else(|| panic!("{expectation:?} {after}"));
            let from = match &expectation {
                Some(e) => format!("the {} expectation", e["kind"].as_str().unwrap()),
                None => "the diff".to_string(),
            };
            cases.push((s.category, s.reason.clone()));
            assert_eq!(
                Family::parse(family).unwrap().category(),
                s.category,
                "{expectation:?} {after}: {}",
                s.reason
            );
            assert!(
                s.reason.starts_with(&format!(
                    "rule 4: no family recorded; inferred {family} from {from} ("
                )),
                "{}",
                s.reason
            );
        }
        assert_eq!(cases.len(), 8);
    }

    /// A recorded family that is not one of the four is named, and the
    /// family inferred.
    #[test]
    fn an_unknown_family_is_named_and_inferred() {
        let mut v = noise_line();
        v["family"] = json!("robustness");
        v.as_object_mut().unwrap().remove("expectation");
        let s = sug(&record(v)).unwrap();
        assert_eq!(s.category, "distractor");
        assert_eq!(
            s.reason,
            "rule 4: family `robustness` is not one of the four; inferred state-noise from the diff (state.uiTheme added)"
        );
    }

    /// Nothing recorded to infer a family from: no rule decides.
    #[test]
    fn no_family_and_no_change_gives_no_suggestion() {
        let mut v = noise_line();
        v.as_object_mut().unwrap().remove("family");
        v["variant"]["state"] = json!({"a": 1});
        assert_eq!(sug(&record(v)), None);
    }

    #[test]
    fn evidence_contrast_says_how_far_p_moved() {
        let mut v = noise_line();
        v["family"] = json!("evidence-contrast");
        let s = sug(&record(v)).unwrap();
        assert_eq!(
            s.reason,
            "rule 4: evidence-contrast pair (state.uiTheme added; p rose by 0.400)"
        );
    }

    #[test]
    fn family_names() {
        for f in [
            Family::Question,
            Family::StateNoise,
            Family::EvidenceAblation,
            Family::EvidenceContrast,
        ] {
            assert_eq!(Family::parse(f.name()), Some(f));
            assert!(CATEGORIES.contains(&f.category()));
        }
        assert_eq!(Family::parse("question+order"), None);
        assert_eq!(Family::parse("unpaired"), None);
        assert_eq!(Family::parse(""), None);
    }

    #[test]
    fn answer_warnings_are_recognised() {
        assert_eq!(
            answer_warning(
                "`variant.response.probability` is 1.7, outside [0, 1]; treated as not recorded"
            ),
            Some(("variant", "probability"))
        );
        assert_eq!(
            answer_warning(
                "`source.c` should be a number but is a string; treated as not recorded"
            ),
            Some(("source", "confidence"))
        );
        assert_eq!(
            answer_warning("`source.latency_ms` should be a number"),
            None
        );
        assert_eq!(answer_warning("`policy.review` should be a number"), None);
        assert_eq!(answer_warning("no backtick"), None);
    }
}
