//! A suggested category for every failure, with the reason behind it.
//!
//! The rules weigh the evidence in a fixed order (documented in
//! `docs/suggestions.md`): a failed request is a service error; an undeclared
//! change makes the pair invalid; a source near a threshold whose route
//! flipped on a drift of the same size as its margin is boundary sensitivity
//! — but a drift many times the margin is not; otherwise the kind of change
//! decides (question wording, irrelevant fields, removed or added evidence).

use super::derive::{Derived, Lean, Status, Validity, ValidityCode};
use super::diff::{self, Change, DiffEntry, JsonPath};
use super::model::{PairRecord, fmt_num};

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

/// How many times the source margin a drift may be and still count as
/// boundary sensitivity rather than a real effect of the variant.
pub const BOUNDARY_DRIFT_FACTOR: f64 = 3.0;

/// Suggest a category for a failed pair; `None` for pairs that did not fail.
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
        transformation: l.transformation(r),
        question_changed: l.question_changed,
        state: &l.state,
        dp: l.dp,
        source_margin: l.source_margin,
        near_boundary: l.near_boundary,
    };
    decide(r, &basis).map(|rule| rule.category())
}

/// What the rules look at, from a full or a lean derivation.
struct Basis<'a> {
    status: Status,
    invalid: bool,
    transformation: &'a str,
    question_changed: bool,
    state: &'a [DiffEntry],
    dp: Option<f64>,
    source_margin: Option<f64>,
    near_boundary: Option<bool>,
}

impl<'a> Basis<'a> {
    fn of(d: &'a Derived) -> Self {
        Basis {
            status: d.status,
            invalid: matches!(d.validity, Validity::Invalid { .. }),
            transformation: &d.transformation.name,
            question_changed: d.changes.question_changed,
            state: &d.changes.state,
            dp: d.dp,
            source_margin: d.source_margin,
            near_boundary: d.near_boundary,
        }
    }
}

/// The rule that decided a suggestion, with what its reason names.
#[derive(Debug, Clone, Copy)]
enum Rule<'a> {
    ServiceError,
    InvalidPair,
    /// A near-threshold source and a drift small next to its margin.
    Boundary {
        margin: f64,
        min: f64,
    },
    /// The runner's own reason names the decision boundary.
    RecordedBoundary(&'a str),
    EvidenceRemoved(&'a DiffEntry),
    /// An evidence-ablation transformation, and its first removal if any.
    EvidenceAblation(Option<&'a DiffEntry>),
    /// An evidence-contrast transformation, and its first change if any.
    EvidenceContrast(Option<&'a DiffEntry>),
    QuestionOnly,
    QuestionTransformation,
    /// The first change of the state.
    FieldChange(&'a DiffEntry),
    StateNoise,
    NearBoundary,
    NoChange,
}

impl Rule<'_> {
    fn category(&self) -> &'static str {
        match self {
            Rule::ServiceError => "service-error",
            Rule::InvalidPair => "invalid-pair",
            Rule::Boundary { .. } | Rule::RecordedBoundary(_) | Rule::NearBoundary => "boundary",
            Rule::EvidenceRemoved(_) | Rule::EvidenceAblation(_) => "missing-evidence",
            Rule::EvidenceContrast(_) => "conflicting-evidence",
            Rule::QuestionOnly | Rule::QuestionTransformation | Rule::NoChange => {
                "ambiguous-contract"
            }
            Rule::FieldChange(_) | Rule::StateNoise => "distractor",
        }
    }
}

/// The rules, in their fixed order; `None` for pairs that did not fail.
fn decide<'a>(r: &'a PairRecord, b: &Basis<'a>) -> Option<Rule<'a>> {
    use std::cmp::Ordering::{Equal, Greater};
    if !b.status.is_failure() {
        return None;
    }
    if b.status == Status::ServiceError {
        return Some(Rule::ServiceError);
    }
    // A single result with no variant (another tool's unpaired row): its
    // only change is expected against actual, which says nothing about why.
    if r.transformation.as_deref() == Some(super::formats::UNPAIRED) {
        return None;
    }
    if b.invalid {
        return Some(Rule::InvalidPair);
    }
    // Boundary sensitivity: a near-threshold source, and a drift that is
    // small next to the margin (a drift many times the margin is a real effect).
    if let (Some(m), Some(min)) = (b.source_margin, r.minimum_boundary_margin)
        && !matches!(m.partial_cmp(&min), Some(Greater | Equal))
    {
        let drift = b.dp.map(f64::abs).unwrap_or(0.0);
        let allowed = (BOUNDARY_DRIFT_FACTOR * m).max(min);
        if !matches!(drift.partial_cmp(&allowed), Some(Greater)) {
            return Some(Rule::Boundary { margin: m, min });
        }
    }
    // Without a policy the margin cannot be computed, but the reference
    // runner says so in its reasons; a drift it also recorded as beyond its
    // tolerance, many times that margin, is a real effect, as above.
    if b.source_margin.is_none()
        && let Some(reason) = r
            .reasons
            .iter()
            .find(|x| contains_ignore_case(x, "decision boundary"))
        && !recorded_drift_is_real(r, reason, b.dp)
    {
        return Some(Rule::RecordedBoundary(reason));
    }
    let fam = r.family.as_deref().unwrap_or("");
    let tr = b.transformation;
    let removed = |e: &&DiffEntry| matches!(e.change, Change::Removed { .. });

    // Evidence removed or added is judged before generic field changes.
    if let Some(e) = b
        .state
        .iter()
        .find(|e| removed(e) && mentions_evidence(&e.path))
    {
        return Some(Rule::EvidenceRemoved(e));
    }
    if contains_ignore_case(tr, "remove-evidence") || fam.eq_ignore_ascii_case("evidence-ablation")
    {
        return Some(Rule::EvidenceAblation(b.state.iter().find(removed)));
    }
    if contains_ignore_case(tr, "evidence") || fam.eq_ignore_ascii_case("evidence-contrast") {
        return Some(Rule::EvidenceContrast(
            b.state
                .iter()
                .find(|e| !matches!(e.change, Change::Reordered { .. })),
        ));
    }
    if b.question_changed && b.state.is_empty() {
        return Some(Rule::QuestionOnly);
    }
    if fam.eq_ignore_ascii_case("question")
        || contains_ignore_case(tr, "paraphrase")
        || contains_ignore_case(tr, "question")
        || contains_ignore_case(tr, "typo")
    {
        return Some(Rule::QuestionTransformation);
    }
    if let Some(e) = b.state.first() {
        return Some(Rule::FieldChange(e));
    }
    if fam.eq_ignore_ascii_case("state-noise")
        || contains_ignore_case(tr, "irrelevant")
        || contains_ignore_case(tr, "field")
        || contains_ignore_case(tr, "reorder")
    {
        return Some(Rule::StateNoise);
    }
    if b.near_boundary == Some(true) {
        return Some(Rule::NearBoundary);
    }
    Some(Rule::NoChange)
}

/// Whether the runner's reasons record a probability drift beyond its
/// tolerance (`Noul drift 0.390 exceeds 0.1.`) that is more than
/// [`BOUNDARY_DRIFT_FACTOR`] times the margin its boundary reason records
/// (`... decision boundary: margin 0.010.`): the variant moved the
/// probability for real, whatever the threshold.
fn recorded_drift_is_real(r: &PairRecord, boundary_reason: &str, dp: Option<f64>) -> bool {
    let Some(drift_reason) = r.reasons.iter().find(|x| {
        (contains_ignore_case(x, "noul drift") || contains_ignore_case(x, "probability drift"))
            && contains_ignore_case(x, "exceeds")
    }) else {
        return false;
    };
    let margin = number_after(boundary_reason, "margin").unwrap_or(0.0);
    let drift = dp
        .map(f64::abs)
        .or_else(|| number_after(drift_reason, "drift"))
        .unwrap_or(0.0);
    drift > BOUNDARY_DRIFT_FACTOR * margin
}

/// The number that follows the first `word` (ASCII, any case) in `s`.
fn number_after(s: &str, word: &str) -> Option<f64> {
    let at = s.to_ascii_lowercase().find(word)? + word.len();
    s.get(at..)?
        .split_whitespace()
        .next()?
        .trim_end_matches(['.', ',', ':', ';'])
        .parse()
        .ok()
        .filter(|x: &f64| x.is_finite())
}

/// The reason for a rule's suggestion, in words.
fn reason(r: &PairRecord, d: &Derived, rule: &Rule) -> String {
    match *rule {
        Rule::ServiceError => {
            let (side, phrase) = match (r.variant.failure_phrase(), r.source.failure_phrase()) {
                (Some(v), _) => ("variant", v),
                (None, Some(s)) => ("source", s),
                (None, None) => ("a request", "failed".to_string()),
            };
            format!("{side} {phrase}")
        }
        Rule::InvalidPair => {
            let unexpected: &[String] = match &d.validity {
                Validity::Invalid { unexpected } => unexpected,
                _ => &[],
            };
            let more = if unexpected.len() > 1 {
                format!(" (+{} more)", unexpected.len() - 1)
            } else {
                String::new()
            };
            let first = unexpected.first().map(String::as_str).unwrap_or_default();
            format!("undeclared change: {first}{more}")
        }
        Rule::Boundary { margin, min } => {
            if d.flip == Some(true) {
                format!(
                    "source margin {} < {} and the route flipped",
                    fmt3(margin),
                    fmt_num(min)
                )
            } else {
                format!("source margin {} < {}", fmt3(margin), fmt_num(min))
            }
        }
        Rule::RecordedBoundary(reason) => format!(
            "recorded: {}",
            super::text::inert_line(reason.trim_end_matches('.'))
        ),
        Rule::EvidenceRemoved(e) => format!("evidence removed: {}", e.path),
        Rule::EvidenceAblation(e) => e
            .map(|e| format!("evidence removed: {}", e.path))
            .unwrap_or_else(|| "evidence ablation: the variant lacks source evidence".into()),
        Rule::EvidenceContrast(e) => {
            let what = e
                .map(|e| match &e.change {
                    Change::Added { .. } => format!("new evidence {} added", e.path),
                    _ => format!("evidence changed at {}", e.path),
                })
                .unwrap_or_else(|| "evidence contrast".into());
            let moved =
                d.dp.map(|x| {
                    if x < 0.0 {
                        format!(" and p fell by {}", fmt3(-x))
                    } else {
                        format!(" and p rose by {}", fmt3(x))
                    }
                })
                .unwrap_or_default();
            format!("{what}{moved}")
        }
        Rule::QuestionOnly => {
            let (Some(a), Some(b)) = (&r.source.question, &r.variant.question) else {
                return "only the question changed".into();
            };
            let detail = diff::changed_words(a, b)
                .first()
                .map(|(x, y)| {
                    format!(
                        " (\"{}\" → \"{}\")",
                        super::text::inert_line(&clip(x, 24)),
                        super::text::inert_line(&clip(y, 24))
                    )
                })
                .unwrap_or_default();
            format!("only the question changed{detail}")
        }
        Rule::QuestionTransformation => {
            format!("question transformation `{}`", d.transformation.name)
        }
        Rule::FieldChange(e) => match &e.change {
            Change::Added { .. } => format!("irrelevant field {} added", e.path),
            Change::Removed { .. } => format!("field {} removed", e.path),
            Change::Reordered { .. } => format!("keys reordered at {}", e.path),
            Change::Changed { .. } => format!("value changed at {}", e.path),
        },
        Rule::StateNoise => format!("state-noise transformation `{}`", d.transformation.name),
        Rule::NearBoundary => format!(
            "source margin {} is under the minimum {}",
            fmt3(d.source_margin.unwrap_or(0.0)),
            fmt_num(r.minimum_boundary_margin.unwrap_or(0.0))
        ),
        Rule::NoChange => "no payload change recorded; the contract is the usual suspect".into(),
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

/// Whether a path, as displayed and ignoring ASCII case, mentions evidence,
/// a source or a proof. The displayed form is streamed through a small
/// window rather than built.
fn mentions_evidence(path: &JsonPath) -> bool {
    use std::fmt::Write as _;
    struct Window {
        last: [u8; 8],
        found: bool,
    }
    impl std::fmt::Write for Window {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            for &b in s.as_bytes() {
                self.last.copy_within(1.., 0);
                self.last[7] = b.to_ascii_lowercase();
                if self.last.ends_with(b"evidence")
                    || self.last.ends_with(b"source")
                    || self.last.ends_with(b"proof")
                {
                    self.found = true;
                    // Stop formatting: the answer is known.
                    return Err(std::fmt::Error);
                }
            }
            Ok(())
        }
    }
    let mut w = Window {
        last: [0; 8],
        found: false,
    };
    let _ = write!(w, "{path}");
    w.found
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
    use crate::core::derive::derive;
    use crate::core::model::Outcome;
    use serde_json::json;

    /// A path with keys that may be plain, quoted, mixed case or carry
    /// control characters, and indices.
    fn path() -> impl proptest::strategy::Strategy<Value = JsonPath> {
        use proptest::prelude::*;
        let seg = prop_oneof![
            "[a-zA-Z_][a-zA-Z0-9_-]{0,6}".prop_map(diff::Seg::Key),
            proptest::sample::select(vec![
                "EviDence",
                "my source",
                "e\u{e}vidence",
                "e\u{8e}VIDENCE",
                "pro\nof",
                "sour\"ce",
                "ev\\idence",
                "x.proof",
                "évidence",
                "proofs",
            ])
            .prop_map(|k| diff::Seg::Key(k.to_string())),
            (0..12usize).prop_map(diff::Seg::Index),
        ];
        proptest::collection::vec(seg, 0..5).prop_map(JsonPath)
    }

    proptest::proptest! {
        #[test]
        fn mentions_evidence_reads_the_displayed_path(p in path()) {
            let shown = p.to_string().to_ascii_lowercase();
            let expected =
                shown.contains("evidence") || shown.contains("source") || shown.contains("proof");
            proptest::prop_assert_eq!(mentions_evidence(&p), expected, "{}", p);
        }

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

    fn sug(r: &PairRecord) -> Option<Suggestion> {
        suggest(r, &derive(r))
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
        assert_eq!(s.reason, "variant timed out after 30000 ms");
    }

    #[test]
    fn small_drift_near_threshold_is_boundary() {
        let r = pair(0.562, 0.54);
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "boundary");
        assert_eq!(s.reason, "source margin 0.012 < 0.1 and the route flipped");
    }

    #[test]
    fn large_drift_near_threshold_is_not_boundary() {
        let mut r = pair(0.91, 0.52);
        r.variant.state =
            Some(json!({"a": 1, "uiTheme": "dark", "evidence": [{"id": "E1"}, {"id": "E2"}]}));
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "distractor");
        assert_eq!(s.reason, "irrelevant field state.uiTheme added");
    }

    #[test]
    fn question_only_change() {
        let mut r = pair(0.3, 0.7);
        r.variant.question = Some("Estimate the probability of urgency?".into());
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "ambiguous-contract");
        assert!(
            s.reason.starts_with("only the question changed"),
            "{}",
            s.reason
        );
    }

    #[test]
    fn removed_evidence() {
        let mut r = pair(0.95, 0.4);
        r.allowed_changes = Some(vec!["state.evidence".into()]);
        r.variant.state = Some(json!({"a": 1, "evidence": [{"id": "E1"}]}));
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "missing-evidence");
        assert_eq!(s.reason, "evidence removed: state.evidence[1]");
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
            "recorded: Source is too close to a decision boundary: margin 0.010"
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
    fn a_recorded_drift_many_times_the_margin_is_not_boundary() {
        let r = bare(
            "irrelevant-ui-metadata",
            0.91,
            0.52,
            &[
                "Source is too close to a decision boundary: margin 0.010.",
                "Noul drift 0.390 exceeds 0.1.",
                "Route changed from action to pass.",
            ],
        );
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "distractor");
        assert_eq!(
            s.reason,
            "state-noise transformation `add-irrelevant-field`"
        );
        assert_eq!(
            lean_category(&r, &crate::core::derive::lean(&r, None)),
            Some("distractor")
        );
        // A drift within three margins stays boundary sensitivity.
        let r = bare(
            "question-typo",
            0.91,
            0.89,
            &[
                "Source is too close to a decision boundary: margin 0.010.",
                "Route changed from action to review.",
            ],
        );
        assert_eq!(sug(&r).unwrap().category, "boundary");
        let r = bare(
            "question-typo",
            0.91,
            0.6,
            &[
                "Source is too close to a decision boundary: margin 0.010.",
                "Noul drift 0.310 exceeds 0.1.",
            ],
        );
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "ambiguous-contract");
        assert_eq!(s.reason, "question transformation `typo`");
        // Without the probabilities, the recorded drift decides.
        let mut r = r;
        r.source.probability = None;
        r.variant.probability = None;
        assert_eq!(sug(&r).unwrap().category, "ambiguous-contract");
        r.reasons[1] = "Noul drift 0.020 exceeds 0.01.".into();
        assert_eq!(sug(&r).unwrap().category, "boundary");
    }

    #[test]
    fn number_after_reads_the_recorded_figures() {
        assert_eq!(
            number_after("boundary: margin 0.010.", "margin"),
            Some(0.01)
        );
        assert_eq!(
            number_after("Noul drift 0.390 exceeds 0.1.", "drift"),
            Some(0.39)
        );
        assert_eq!(number_after("margin NaN", "margin"), None);
        assert_eq!(number_after("no figure", "margin"), None);
    }

    #[test]
    fn undeclared_change_is_invalid_pair() {
        let mut r = pair(0.3, 0.7);
        r.variant.state = Some(json!({"a": 2, "evidence": [{"id": "E1"}, {"id": "E2"}]}));
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "invalid-pair");
        assert_eq!(s.reason, "undeclared change: state.a");
    }
}
