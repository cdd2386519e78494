//! Suggestions against a labelled set of pairs.
//!
//! `tests/fixtures/suggest/labelled.jsonl` holds 50 pairs of every family
//! (and none), each with the category a reviewer gives it in
//! `expected_category` and the rule that should decide it in
//! `expected_rule` (`"1"`–`"4"`, `"4-inferred"` when the family must be
//! inferred, `null` for a pass). The set has misleading field names,
//! request and answer faults on either side, undeclared changes and
//! boundary sources in every family.
//!
//! The agreement and its confusion, as `docs/suggestions.md` reports them:
//!
//! ```sh
//! cargo test --test suggest -- --nocapture agreement
//! ```

use std::collections::BTreeMap;

use triage::core::index::{OpenOptions, RunIndex, load_run_with};
use triage::core::load::line::ParseMode;
use triage::core::problem::ProblemKind;
use triage::core::suggest::suggest;

const LABELLED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/suggest/labelled.jsonl"
);

/// One labelled pair and what each path suggests for it.
#[derive(Debug)]
struct Judged {
    pair: String,
    family: Option<String>,
    rule: Option<String>,
    expected: Option<String>,
    /// The detail path: the line read again, derived in full, suggested
    /// with its reason.
    detail: Option<&'static str>,
    reason: Option<String>,
    /// The index's lean path, by the fast and by the slow parse.
    fast: Option<&'static str>,
    slow: Option<&'static str>,
}

fn load(mode: ParseMode) -> RunIndex {
    let index = load_run_with(&[LABELLED.to_string()], &OpenOptions::default(), mode)
        .expect("the labelled set opens");
    // Only the unusable answers the set holds on purpose are warned about.
    let unexpected: Vec<_> = index
        .problems
        .iter()
        .filter(|p| p.kind != ProblemKind::FieldWarning)
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:?}");
    index
}

/// The suggestion of every row of an index, by pair.
fn by_pair(index: &RunIndex) -> BTreeMap<String, Option<&'static str>> {
    index
        .rows
        .iter()
        .map(|row| {
            let pair = format!("{}/{}", index.str(row.case), index.str(row.variant));
            (pair, row.suggestion().filter(|_| row.status().is_failure()))
        })
        .collect()
}

fn judge() -> Vec<Judged> {
    let fast = load(ParseMode::Fast);
    let slow = by_pair(&load(ParseMode::Slow));
    let fast_by_pair = by_pair(&fast);
    let lines = std::fs::read_to_string(LABELLED).expect("read the labelled set");
    assert_eq!(fast.rows.len(), lines.lines().count(), "one row per line");
    let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
    (0..fast.rows.len())
        .map(|i| {
            let p = fast.load_pair(i).expect("the line reads again");
            let pair = format!("{}/{}", p.record.case_id, p.record.variant_id);
            let s = suggest(&p.record, &p.derived);
            Judged {
                family: text(&p.raw["family"]),
                rule: text(&p.raw["expected_rule"]),
                expected: text(&p.raw["expected_category"]),
                detail: s.as_ref().map(|s| s.category),
                reason: s.map(|s| s.reason),
                fast: fast_by_pair[&pair],
                slow: slow[&pair],
                pair,
            }
        })
        .collect()
}

/// The index (which `y` and `Y` accept from) and the detail pane suggest
/// the same category for every pair, by either parse.
#[test]
fn the_index_and_the_detail_agree() {
    let judged = judge();
    assert!(judged.len() >= 40, "only {} labelled pairs", judged.len());
    for j in &judged {
        assert_eq!(j.fast, j.detail, "{}: fast index vs detail", j.pair);
        assert_eq!(j.slow, j.detail, "{}: slow index vs detail", j.pair);
    }
}

/// Where a rule decides — a fault, an undeclared change, a boundary
/// source, a recorded family — the suggestion is the label, and its
/// reason names that rule.
#[test]
fn rule_decided_pairs_agree_with_every_label() {
    for j in judge() {
        let Some(rule) = j.rule.as_deref() else {
            assert_eq!(j.detail, None, "{}: a pass has no suggestion", j.pair);
            continue;
        };
        let reason = j.reason.as_deref().unwrap_or_default();
        let number = rule.trim_end_matches("-inferred");
        assert!(
            reason.starts_with(&format!("rule {number}: ")),
            "{}: expected rule {rule}, got {reason}",
            j.pair
        );
        if rule == "4-inferred" {
            assert!(reason.contains("inferred"), "{}: {reason}", j.pair);
        } else {
            assert_eq!(
                j.detail,
                j.expected.as_deref(),
                "{} (rule {rule}): {reason}",
                j.pair
            );
        }
    }
}

/// The set covers what it claims: in each family (and without one), faults
/// on the source and on the variant, an undeclared change and a boundary
/// source.
#[test]
fn the_labelled_set_covers_every_family() {
    let judged = judge();
    for family in [
        Some("question"),
        Some("state-noise"),
        Some("evidence-ablation"),
        Some("evidence-contrast"),
        None,
    ] {
        let of: Vec<&Judged> = judged
            .iter()
            .filter(|j| j.family.as_deref() == family)
            .collect();
        let has = |category: &str, words: &str| {
            of.iter().any(|j| {
                j.expected.as_deref() == Some(category)
                    && j.reason.as_deref().is_some_and(|r| r.contains(words))
            })
        };
        assert!(has("boundary", "rule 3"), "{family:?}: a boundary source");
        if family.is_some() {
            assert!(
                has("service-error", "the source"),
                "{family:?}: a source fault"
            );
            assert!(
                has("service-error", "the variant"),
                "{family:?}: a variant fault"
            );
            assert!(
                has("invalid-pair", "rule 2"),
                "{family:?}: an undeclared change"
            );
        }
    }
}

/// The agreement of the suggestions with the labels, and the confusion
/// where they differ; printed for `docs/suggestions.md`.
#[test]
fn agreement() {
    let judged = judge();
    let failures: Vec<&Judged> = judged.iter().filter(|j| j.rule.is_some()).collect();
    let agree = |js: &[&Judged]| {
        js.iter()
            .filter(|j| j.detail == j.expected.as_deref())
            .count()
    };
    let (decided, inferred): (Vec<&Judged>, Vec<&Judged>) = failures
        .iter()
        .partition(|j| j.rule.as_deref() != Some("4-inferred"));
    let mut per_category: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for j in &failures {
        let e = per_category
            .entry(j.expected.as_deref().unwrap_or("none"))
            .or_default();
        e.0 += usize::from(j.detail == j.expected.as_deref());
        e.1 += 1;
    }
    println!(
        "labelled pairs: {} ({} failures, {} passes)",
        judged.len(),
        failures.len(),
        judged.len() - failures.len()
    );
    println!(
        "agreement on failures: {}/{}; decided by rules 1-3 or a recorded family: {}/{}; family inferred: {}/{}",
        agree(&failures),
        failures.len(),
        agree(&decided),
        decided.len(),
        agree(&inferred),
        inferred.len()
    );
    for (category, (ok, n)) in &per_category {
        println!("  {category}: {ok}/{n}");
    }
    println!("confusion (label -> suggestion):");
    for j in failures
        .iter()
        .filter(|j| j.detail != j.expected.as_deref())
    {
        println!(
            "  {} -> {}: {} ({})",
            j.expected.as_deref().unwrap_or("none"),
            j.detail.unwrap_or("none"),
            j.pair,
            j.reason.as_deref().unwrap_or("")
        );
    }
    assert_eq!(agree(&decided), decided.len(), "every rule-decided pair");
    // The inferred family is a guess from the expectation and the diff:
    // most of the time right, never silently (its reason says "inferred").
    assert!(
        agree(&inferred) * 4 >= inferred.len() * 3,
        "inferred families agree in {} of {}",
        agree(&inferred),
        inferred.len()
    );
}
