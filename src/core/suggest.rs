//! A suggested category for every failure, with the reason behind it.
//!
//! The rules weigh the evidence in a fixed order (documented in
//! `docs/suggestions.md`): a failed request is a service error; an undeclared
//! change makes the pair invalid; a source near a threshold whose route
//! flipped on a drift of the same size as its margin is boundary sensitivity
//! — but a drift many times the margin is not; otherwise the kind of change
//! decides (question wording, irrelevant fields, removed or added evidence).

use super::derive::{Derived, Status, Validity};
use super::diff::{self, Change};
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
    suggest_with(r, d, true)
}

/// Only the category [`suggest`] would give, skipping the costlier parts of
/// the reason (the word diff of two questions): what the index stores.
pub fn suggest_category(r: &PairRecord, d: &Derived) -> Option<&'static str> {
    suggest_with(r, d, false).map(|s| s.category)
}

fn suggest_with(r: &PairRecord, d: &Derived, detailed: bool) -> Option<Suggestion> {
    if !d.status.is_failure() {
        return None;
    }
    let s = |category: &'static str, reason: String| {
        debug_assert!(CATEGORIES.contains(&category), "{category}");
        Some(Suggestion { category, reason })
    };
    if d.status == Status::ServiceError {
        let (side, phrase) = match (r.variant.failure_phrase(), r.source.failure_phrase()) {
            (Some(v), _) => ("variant", v),
            (None, Some(s)) => ("source", s),
            (None, None) => ("a request", "failed".to_string()),
        };
        return s("service-error", format!("{side} {phrase}"));
    }
    // A single result with no variant (another tool's unpaired row): its
    // only change is expected against actual, which says nothing about why.
    if r.transformation.as_deref() == Some(super::formats::UNPAIRED) {
        return None;
    }
    if let Validity::Invalid { unexpected } = &d.validity {
        let more = if unexpected.len() > 1 {
            format!(" (+{} more)", unexpected.len() - 1)
        } else {
            String::new()
        };
        return s(
            "invalid-pair",
            format!("undeclared change: {}{more}", unexpected[0]),
        );
    }
    if let Some(b) = boundary(r, d) {
        return Some(b);
    }
    // Without a policy the margin cannot be computed, but the reference
    // runner says so in its reasons.
    if d.source_margin.is_none()
        && let Some(reason) = r
            .reasons
            .iter()
            .find(|x| x.to_ascii_lowercase().contains("decision boundary"))
    {
        return s(
            "boundary",
            format!(
                "recorded: {}",
                super::text::inert_line(reason.trim_end_matches('.'))
            ),
        );
    }
    let fam = r.family.as_deref().unwrap_or("").to_ascii_lowercase();
    let tr = d.transformation.name.to_ascii_lowercase();
    let c = &d.changes;
    let state_changes: Vec<&diff::DiffEntry> = c.state.iter().collect();

    // Evidence removed or added is judged before generic field changes.
    let evidence = |e: &&diff::DiffEntry| {
        let p = e.path.to_string().to_ascii_lowercase();
        p.contains("evidence") || p.contains("source") || p.contains("proof")
    };
    if let Some(e) = state_changes
        .iter()
        .find(|e| evidence(e) && matches!(e.change, Change::Removed { .. }))
    {
        return s("missing-evidence", format!("evidence removed: {}", e.path));
    }
    if tr.contains("remove-evidence") || fam == "evidence-ablation" {
        let what = state_changes
            .iter()
            .find(|e| matches!(e.change, Change::Removed { .. }))
            .map(|e| format!("evidence removed: {}", e.path))
            .unwrap_or_else(|| "evidence ablation: the variant lacks source evidence".into());
        return s("missing-evidence", what);
    }
    if tr.contains("evidence") || fam == "evidence-contrast" {
        let what = state_changes
            .iter()
            .find(|e| !matches!(e.change, Change::Reordered { .. }))
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
        return s("conflicting-evidence", format!("{what}{moved}"));
    }
    if c.question_changed && state_changes.is_empty() {
        let (Some(a), Some(b)) = (&r.source.question, &r.variant.question) else {
            return s("ambiguous-contract", "only the question changed".into());
        };
        let words = if detailed {
            diff::changed_words(a, b)
        } else {
            Vec::new()
        };
        let detail = words
            .first()
            .map(|(x, y)| {
                format!(
                    " (\"{}\" → \"{}\")",
                    super::text::inert_line(&clip(x, 24)),
                    super::text::inert_line(&clip(y, 24))
                )
            })
            .unwrap_or_default();
        return s(
            "ambiguous-contract",
            format!("only the question changed{detail}"),
        );
    }
    if fam == "question"
        || tr.contains("paraphrase")
        || tr.contains("question")
        || tr.contains("typo")
    {
        return s(
            "ambiguous-contract",
            format!("question transformation `{}`", d.transformation.name),
        );
    }
    if let Some(e) = state_changes.first() {
        let reason = match &e.change {
            Change::Added { .. } => format!("irrelevant field {} added", e.path),
            Change::Removed { .. } => format!("field {} removed", e.path),
            Change::Reordered { .. } => format!("keys reordered at {}", e.path),
            Change::Changed { .. } => format!("value changed at {}", e.path),
        };
        return s("distractor", reason);
    }
    if fam == "state-noise"
        || tr.contains("irrelevant")
        || tr.contains("field")
        || tr.contains("reorder")
    {
        return s(
            "distractor",
            format!("state-noise transformation `{}`", d.transformation.name),
        );
    }
    if d.near_boundary == Some(true) {
        return s(
            "boundary",
            format!(
                "source margin {} is under the minimum {}",
                fmt3(d.source_margin.unwrap_or(0.0)),
                fmt_num(r.minimum_boundary_margin.unwrap_or(0.0))
            ),
        );
    }
    s(
        "ambiguous-contract",
        "no payload change recorded; the contract is the usual suspect".into(),
    )
}

/// Boundary sensitivity: a near-threshold source, and a drift that is small
/// next to the margin (a drift many times the margin is a real effect).
fn boundary(r: &PairRecord, d: &Derived) -> Option<Suggestion> {
    let m = d.source_margin?;
    let min = r.minimum_boundary_margin?;
    if m >= min {
        return None;
    }
    let drift = d.dp.map(f64::abs).unwrap_or(0.0);
    let allowed = (BOUNDARY_DRIFT_FACTOR * m).max(min);
    if drift > allowed {
        return None;
    }
    let reason = if d.flip == Some(true) {
        format!(
            "source margin {} < {} and the route flipped",
            fmt3(m),
            fmt_num(min)
        )
    } else {
        format!("source margin {} < {}", fmt3(m), fmt_num(min))
    };
    Some(Suggestion {
        category: "boundary",
        reason,
    })
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

    #[test]
    fn undeclared_change_is_invalid_pair() {
        let mut r = pair(0.3, 0.7);
        r.variant.state = Some(json!({"a": 2, "evidence": [{"id": "E1"}, {"id": "E2"}]}));
        let s = sug(&r).unwrap();
        assert_eq!(s.category, "invalid-pair");
        assert_eq!(s.reason, "undeclared change: state.a");
    }
}
