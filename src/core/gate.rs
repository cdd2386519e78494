//! The gates of `triage check`: a CI verdict on a run, decided on the
//! Wilson 95% bound of each rate, never on the observed rate.
//!
//! [`Gates`] holds what the command line asked for; [`Gates::validate`]
//! refuses a gate that cannot be checked (an unknown category, a rate
//! outside 0–1, a rate gate of 0 that no bound can pass); [`unusable`] says
//! why an input cannot be gated at all (an empty file, a file of no known
//! format, a run where no pair could be read); [`check`] decides every gate
//! over the selected pairs and writes the one-screen report.
//!
//! What the rates count is the model's verdicts only (seed 003, section 5;
//! seed 000, sections 4 and 8): a pair is *judged* when
//! [`stats::model_verdict`] gives it a pass or a fail. Invalid pairs (a
//! fault of the test), service errors (a fault of the service), boundary
//! observations and unchecked pairs are not judged, so they neither raise a
//! failure rate nor dilute it. They stay visible in the report's counts,
//! and `--fail-on`, `--max-unclassified` and `--strict` gate them.
//! `docs/statistics.md` (section "Gates") is the user documentation.

use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;

use rustc_hash::FxHashMap;

use super::agreement;
use super::annotations::{Agreement, AnnotationStore};
use super::compare::{ChangeKind, Comparison};
use super::index::RunIndex;
use super::query::{Context, Query};
use super::row::{NO_SYM, PairRow, Sym};
use super::stats::{self, GroupBy, NOT_RECORDED, Rate};
use super::taxonomy::Taxonomy;
use super::text::{self, fit, plural};

/// Seed 003 (section 8): below this many trials a rate is not fit to gate a release.
pub const MIN_PAIRS_FOR_GATING: u64 = 25;

/// How many example pairs a failed gate lists.
const GATE_EXAMPLES: usize = 3;

/// How many failing groups a rate gate under `--by` names.
const GROUP_EXAMPLES: usize = 8;

/// How many problems the report lists.
const PROBLEMS_SHOWN: usize = 5;

/// The gates of `triage check`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gates {
    /// At most this many failures without a reviewer's category.
    pub max_unclassified: Option<u64>,
    /// No failure may carry one of these categories.
    pub fail_on: Vec<String>,
    /// At most this many judged pairs may fail.
    pub max_failures: Option<u64>,
    /// The Wilson 95% upper bound of the failure rate may be at most this.
    pub max_failure_rate: Option<f64>,
    /// The Wilson 95% lower bound of the pass rate must be at least this.
    pub min_pass_rate: Option<f64>,
    /// The Wilson 95% upper bound of the share of source cases with a
    /// failing pair may be at most this.
    pub max_case_failure_rate: Option<f64>,
    /// At least this many pairs must be judged.
    pub min_pairs: Option<u64>,
    /// Apply every rate gate to each group as well (transformation, family or case).
    pub by: Option<GroupBy>,
    /// Gate only the pairs this query selects.
    pub filter: Option<Query>,
    /// Any problem in the run (a bad line, an unusable field) fails the check.
    pub strict: bool,
    /// The lower bound of the 95% interval of Cohen's kappa between the
    /// two reviewers of `between` must be at least this (and, with
    /// `min_pairs`, at least that many pairs compared).
    pub min_kappa: Option<f64>,
    /// The two reviewers `min_kappa` compares (`suggestions`: the engine).
    pub between: Option<(String, String)>,
    /// At most this many pairs may fail that passed in the baseline
    /// (`--baseline OLD --max-new-failures N`; see [`Baseline`]).
    pub max_new_failures: Option<u64>,
}

/// The run a check compares with (`--baseline OLD`), matched pair by pair.
#[derive(Clone, Copy)]
pub struct Baseline<'a> {
    pub old: &'a RunIndex,
    pub comparison: &'a Comparison,
}

/// A gate on a rate, decided on one bound of its Wilson 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateGate {
    /// `--max-failure-rate`: failed / judged pairs, on the upper bound.
    MaxFailureRate,
    /// `--min-pass-rate`: passed / judged pairs, on the lower bound.
    MinPassRate,
    /// `--max-case-failure-rate`: source cases with a failing pair / cases
    /// with a judged pair, on the upper bound.
    MaxCaseFailureRate,
}

impl RateGate {
    /// The command-line flag.
    pub fn flag(self) -> &'static str {
        match self {
            RateGate::MaxFailureRate => "--max-failure-rate",
            RateGate::MinPassRate => "--min-pass-rate",
            RateGate::MaxCaseFailureRate => "--max-case-failure-rate",
        }
    }

    /// What the rate is called in the report.
    fn noun(self) -> &'static str {
        match self {
            RateGate::MaxFailureRate => "failure rate",
            RateGate::MinPassRate => "pass rate",
            RateGate::MaxCaseFailureRate => "case failure rate",
        }
    }

    /// What the denominator counts.
    fn unit(self) -> &'static str {
        match self {
            RateGate::MaxFailureRate | RateGate::MinPassRate => "judged pairs",
            RateGate::MaxCaseFailureRate => "judged cases",
        }
    }

    /// Whether the gate reads the upper bound (a maximum) or the lower one (a minimum).
    fn upper(self) -> bool {
        !matches!(self, RateGate::MinPassRate)
    }

    /// The threshold a bound can never meet: 0 for a maximum, 1 for a minimum.
    fn impossible(self) -> f64 {
        if self.upper() { 0.0 } else { 1.0 }
    }
}

/// One rate compared with its threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct RateCheck {
    /// The group's name; None for every selected pair.
    pub group: Option<String>,
    /// The proportion and its interval; None when nothing was judged.
    pub rate: Option<Rate>,
    /// The bound compared: the interval's upper bound for a maximum, its
    /// lower bound for a minimum. With nothing judged the interval is all
    /// of [0, 1], so the bound is 1 (or 0).
    pub bound: f64,
    pub threshold: f64,
    pub ok: bool,
}

/// Compare `counted` of `trials` with `threshold` on the bound `gate` reads.
pub fn rate_check(gate: RateGate, counted: u64, trials: u64, threshold: f64) -> RateCheck {
    let rate = stats::wilson(counted, trials);
    let bound = match (&rate, gate.upper()) {
        (Some(r), true) => r.high,
        (Some(r), false) => r.low,
        (None, true) => 1.0,
        (None, false) => 0.0,
    };
    let ok = if gate.upper() {
        bound <= threshold
    } else {
        bound >= threshold
    };
    RateCheck {
        group: None,
        rate,
        bound,
        threshold,
        ok,
    }
}

/// `bound` to three decimals, or more where three would not show which side
/// of `threshold` it lies on (0.30004 against 0.3 is "0.30004", not "0.300").
pub fn show_bound(bound: f64, threshold: f64) -> String {
    let side = |x: f64| x.partial_cmp(&threshold);
    for decimals in 3..=9 {
        let s = format!("{bound:.decimals$}");
        if s.parse::<f64>().ok().and_then(side) == side(bound) {
            return s;
        }
    }
    format!("{bound}")
}

impl RateCheck {
    /// "failure rate 0.100 (2 of 20 judged pairs), 95% upper bound 0.301 > 0.3".
    fn describe(&self, gate: RateGate) -> String {
        let which = if gate.upper() { "upper" } else { "lower" };
        let bound = show_bound(self.bound, self.threshold);
        let cmp = match (gate.upper(), self.ok) {
            (true, true) => "<=",
            (true, false) => ">",
            (false, true) => ">=",
            (false, false) => "<",
        };
        match &self.rate {
            Some(r) => format!(
                "{} {:.3} ({} of {} {}), 95% {which} bound {bound} {cmp} {}",
                gate.noun(),
                r.value,
                r.successes,
                r.trials,
                gate.unit(),
                self.threshold
            ),
            None => format!(
                "no {}, so no {}: the bound is {bound} {cmp} {}",
                gate.unit(),
                gate.noun(),
                self.threshold
            ),
        }
    }
}

impl Gates {
    /// Refuse gates that cannot be checked: an unknown category id, a rate
    /// outside 0–1, a rate gate no bound can pass, a grouping by category.
    pub fn validate(&self, taxonomy: &Taxonomy) -> Result<(), GateError> {
        for c in &self.fail_on {
            if taxonomy.by_id(c).is_none() {
                return Err(GateError::UnknownCategory {
                    id: c.clone(),
                    valid: taxonomy.categories.iter().map(|c| c.id.clone()).collect(),
                });
            }
        }
        for (gate, x) in self.rate_gates() {
            if !(0.0..=1.0).contains(&x) {
                return Err(GateError::NotARate {
                    flag: gate.flag(),
                    value: x,
                });
            }
            if x == gate.impossible() {
                return Err(GateError::NeverPasses {
                    flag: gate.flag(),
                    value: x,
                });
            }
        }
        if self.by == Some(GroupBy::Category) {
            return Err(GateError::ByCategory);
        }
        match (self.min_kappa, &self.between) {
            (Some(x), _) if !(-1.0..=1.0).contains(&x) => return Err(GateError::NotAKappa(x)),
            (Some(_), None) => return Err(GateError::KappaWithoutBetween),
            (None, Some(_)) => return Err(GateError::BetweenWithoutKappa),
            _ => {}
        }
        Ok(())
    }

    /// The rate gates given, in the order the report lists them.
    fn rate_gates(&self) -> Vec<(RateGate, f64)> {
        [
            (RateGate::MaxFailureRate, self.max_failure_rate),
            (RateGate::MinPassRate, self.min_pass_rate),
            (RateGate::MaxCaseFailureRate, self.max_case_failure_rate),
        ]
        .into_iter()
        .filter_map(|(g, x)| x.map(|x| (g, x)))
        .collect()
    }

    fn any(&self) -> bool {
        self.max_unclassified.is_some()
            || !self.fail_on.is_empty()
            || self.max_failures.is_some()
            || self.min_pairs.is_some()
            || self.min_kappa.is_some()
            || self.max_new_failures.is_some()
            || !self.rate_gates().is_empty()
    }
}

/// Why [`Gates::validate`] refused a gate.
#[derive(Debug, Clone, PartialEq)]
pub enum GateError {
    /// `--fail-on` names no category of the taxonomy, whose ids are `valid`.
    UnknownCategory { id: String, valid: Vec<String> },
    /// A rate gate is outside 0–1 (or not a number).
    NotARate { flag: &'static str, value: f64 },
    /// A rate gate of 0 (a maximum) or 1 (a minimum): the bound never reaches it.
    NeverPasses { flag: &'static str, value: f64 },
    /// `--by category`: the categories are the reviewer's, not a slice of the run.
    ByCategory,
    /// `--min-kappa` outside −1–1 (or not a number).
    NotAKappa(f64),
    /// `--min-kappa` without the two reviewers to compare.
    KappaWithoutBetween,
    /// `--between` without `--min-kappa`.
    BetweenWithoutKappa,
}

impl fmt::Display for GateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GateError::UnknownCategory { id, valid } => write!(
                f,
                "--fail-on: `{}` is not a category id; the valid ids are: {}",
                text::inert_line(id),
                valid.join(", ")
            ),
            GateError::NotARate { flag, value } => write!(
                f,
                "{flag}: {value} is not a rate; give a fraction from 0 to 1, such as 0.25"
            ),
            GateError::NeverPasses { flag, value } => write!(
                f,
                "{flag} {value} can never pass: the gate compares the Wilson 95% {} bound, which stays {} {value} however many pairs there are; to allow no failure at all, use --max-failures 0",
                if *value == 0.0 { "upper" } else { "lower" },
                if *value == 0.0 { "above" } else { "below" },
            ),
            GateError::ByCategory => write!(
                f,
                "--by category: a gate groups the run by transformation, family or case; to gate a category, use --fail-on CATEGORY"
            ),
            GateError::NotAKappa(x) => write!(
                f,
                "--min-kappa: {x} is not a kappa; give a value from -1 to 1, such as 0.7"
            ),
            GateError::KappaWithoutBetween => write!(
                f,
                "--min-kappa needs the two reviewers to compare: add --between A,B (e.g. --between ana,gpt-judge, or ana,suggestions)"
            ),
            GateError::BetweenWithoutKappa => write!(
                f,
                "--between names the reviewers of --min-kappa; add --min-kappa X (triage agreement shows the kappa without gating)"
            ),
        }
    }
}

impl std::error::Error for GateError {}

/// Why `index` cannot be gated: an input file from which no pair could be
/// read. Each such file is named, with what was wrong and what to do.
///
/// A file from which some pairs were read is usable: its unreadable lines
/// are problems, reported by [`check`] and failed by `--strict`.
pub fn unusable(index: &RunIndex) -> Option<String> {
    let mut pairs = vec![0u64; index.files.len()];
    for r in &index.rows {
        if let Some(n) = pairs.get_mut(r.pos.file() as usize) {
            *n += 1;
        }
    }
    let mut out = Vec::new();
    for (f, &n) in index.files.iter().zip(&pairs) {
        if n > 0 {
            continue;
        }
        let name = text::inert_line(&f.display);
        let problems: Vec<_> = index
            .problems
            .iter()
            .filter(|p| p.file == f.display)
            .collect();
        // Past the kept problems only counts remain, not their files: with
        // one file they are all its own.
        let counted = if index.files.len() == 1 {
            index.unlisted.total() as usize
        } else {
            0
        };
        let n = problems.len() + counted;
        let why = if let Some(first) = problems.first() {
            format!(
                "no pair could be read from it: {}{} of its lines {} unreadable (first: {}); fix them, or pass --from NAME if it is another tool's results",
                n,
                if index.files.len() > 1 && index.unlisted.total() > 0 {
                    " or more"
                } else {
                    ""
                },
                if n == 1 { "is" } else { "are" },
                text::truncate_cols(&text::inert_line(&first.to_string()), 120)
            )
        } else if !f.notes.is_empty() {
            format!(
                "no pair could be read from it: {}",
                text::truncate_cols(
                    &text::inert_line(
                        &f.notes
                            .iter()
                            .flat_map(|n| n.lines())
                            .map(str::trim)
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                    240
                )
            )
        } else {
            "it is empty: there is no pair to gate; check that the runner wrote its results there"
                .to_string()
        };
        out.push(format!("triage: check: {name}: {why}"));
    }
    if index.files.is_empty() {
        out.push("triage: check: no input file".to_string());
    }
    (!out.is_empty()).then(|| out.join("\n"))
}

/// The verdict of `triage check`.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOutcome {
    /// Whether every gate holds.
    pub passed: bool,
    /// Each gate's verdict, in the order of the report.
    pub gates: Vec<GateResult>,
    /// The report to print, one screen at most (a few more lines per
    /// failing group under `--by`).
    pub report: String,
}

/// One gate's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct GateResult {
    /// The gate as given: "--max-failure-rate 0.3".
    pub name: String,
    pub ok: bool,
    /// One line of why.
    pub why: String,
    /// For a rate gate: the rate over every selected pair first, then one
    /// per group under `--by` (every group, not only those that fail).
    pub rates: Vec<RateCheck>,
    /// Lines under the verdict: example pairs, failing groups.
    pub details: Vec<String>,
}

/// What one slice of the selection counts for the gates.
#[derive(Debug, Default)]
struct Tally {
    judged: u64,
    failed: u64,
    /// Each source case with a judged pair: whether one of them failed.
    cases: FxHashMap<Sym, bool>,
}

impl Tally {
    fn add(&mut self, row: &PairRow) {
        if let Some(failed) = stats::model_verdict(row) {
            self.judged += 1;
            self.failed += u64::from(failed);
            *self.cases.entry(row.case).or_default() |= failed;
        }
    }

    fn failing_cases(&self) -> u64 {
        self.cases.values().filter(|&&f| f).count() as u64
    }

    /// (counted, out of) for `gate`.
    fn counts(&self, gate: RateGate) -> (u64, u64) {
        match gate {
            RateGate::MaxFailureRate => (self.failed, self.judged),
            RateGate::MinPassRate => (self.judged - self.failed, self.judged),
            RateGate::MaxCaseFailureRate => (self.failing_cases(), self.cases.len() as u64),
        }
    }
}

/// The name of a row's group, as `triage summary` names it.
fn group_name(index: &RunIndex, i: usize, row: &PairRow, by: GroupBy) -> String {
    let sym = match by {
        GroupBy::Transformation => index.transformation(i),
        GroupBy::Family => index.family(i),
        GroupBy::Model => index.model(i),
        // Refused by `Gates::validate`; grouped by case should it get here.
        GroupBy::Case | GroupBy::Category => row.case,
    };
    if sym == NO_SYM {
        NOT_RECORDED.to_string()
    } else {
        index.str(sym).to_string()
    }
}

/// A few pairs, one line each, for a failed gate's explanation.
fn some_pairs(index: &RunIndex, rows: &[(usize, &PairRow)]) -> Vec<String> {
    let mut v: Vec<String> = rows
        .iter()
        .take(GATE_EXAMPLES)
        .map(|&(i, r)| {
            let loc = index.loc(i);
            let file = index
                .files
                .get(loc.file() as usize)
                .map(|f| f.display.as_str())
                .unwrap_or("?");
            let line = format!(
                "{}/{} ({}:{})",
                text::inert_line(index.str(r.case)),
                text::inert_line(index.str(r.variant)),
                text::inert_line(file),
                loc.line
            );
            text::truncate_cols(&line, 90)
        })
        .collect();
    if rows.len() > GATE_EXAMPLES {
        v.push(format!("… and {} more", rows.len() - GATE_EXAMPLES));
    }
    v
}

/// `--min-kappa` (on the lower bound of kappa's 95% interval) and, with
/// `--min-pairs`, the number of pairs the two reviewers both decided.
fn kappa_gates(
    index: &RunIndex,
    store: Option<&AnnotationStore>,
    selected: &[u32],
    a: &str,
    b: &str,
    min: f64,
    min_pairs: Option<u64>,
) -> Vec<GateResult> {
    let taxonomy = Taxonomy::default();
    let report = match store {
        Some(s) => agreement::compare(index, s, &taxonomy, selected, a, b),
        None => agreement::compare_labels(a, b, &[], &taxonomy, 0),
    };
    let (ia, ib) = (text::inert_line(a), text::inert_line(b));
    let over = plural(report.pairs, "pair", "pairs");
    let (ok, why) = match report.kappa {
        Some(k) if k.low >= min => (
            true,
            format!(
                "kappa {} over {over}; its lower bound {:.3} is at least {min}",
                agreement::kappa_text(&report),
                k.low
            ),
        ),
        Some(k) => (
            false,
            format!(
                "kappa {} over {over}; its lower bound {:.3} is under {min}",
                agreement::kappa_text(&report),
                k.low
            ),
        ),
        None => (false, format!("kappa {}", agreement::kappa_text(&report))),
    };
    let mut out = vec![GateResult {
        ok,
        name: format!("--min-kappa {min} --between {ia},{ib}"),
        why,
        rates: Vec::new(),
        details: Vec::new(),
    }];
    if let Some(n) = min_pairs {
        out.push(GateResult {
            ok: report.pairs >= n,
            name: format!("--min-pairs {n} (compared by {ia} and {ib})"),
            why: format!("{over} decided by both (at least {n} required)"),
            rates: Vec::new(),
            details: Vec::new(),
        });
    }
    out
}

/// Check the gates against the pairs of `index` that `gates.filter` selects.
pub fn check(index: &RunIndex, store: Option<&AnnotationStore>, gates: &Gates) -> CheckOutcome {
    check_against(index, store, gates, None)
}

/// [`check`], with the run before it: the report says what changed since,
/// and `--max-new-failures` counts the selected pairs that fail now and
/// passed in the baseline. Pairs whose inputs changed and added pairs are
/// not new failures (they have nothing comparable to pass before); the
/// verdict names how many of them fail, and the other gates count them.
pub fn check_against(
    index: &RunIndex,
    store: Option<&AnnotationStore>,
    gates: &Gates,
    baseline: Option<Baseline<'_>>,
) -> CheckOutcome {
    let all: Vec<u32> = (0..index.rows.len())
        .filter_map(|i| u32::try_from(i).ok())
        .collect();
    let selected = match &gates.filter {
        Some(q) => q.filter(
            &Context {
                index,
                store,
                changes: baseline.map(|b| b.comparison.changes()),
            },
            &all,
        ),
        None => all,
    };
    // Each selected row with its number (for its line in a message).
    let rows: Vec<(usize, &PairRow)> = selected
        .iter()
        .filter_map(|&i| Some((i as usize, index.rows.get(i as usize)?)))
        .collect();

    let mut overall = Tally::default();
    let mut groups: BTreeMap<String, Tally> = BTreeMap::new();
    for (i, row) in selected
        .iter()
        .filter_map(|&i| Some((i as usize, index.rows.get(i as usize)?)))
    {
        overall.add(row);
        if let Some(by) = gates.by {
            groups
                .entry(group_name(index, i, row, by))
                .or_default()
                .add(row);
        }
    }
    let mut r = String::new();
    header(&mut r, index, store, gates, &selected, &overall);
    // The selected pairs of each change since the baseline.
    let changed = |c: ChangeKind| -> Vec<(usize, &PairRow)> {
        let Some(b) = baseline else {
            return Vec::new();
        };
        selected
            .iter()
            .filter(|&&i| b.comparison.change(i) == Some(c))
            .filter_map(|&i| Some((i as usize, index.rows.get(i as usize)?)))
            .collect()
    };
    if let Some(b) = baseline {
        let n = |c| changed(c).len() as u64;
        let _ = writeln!(
            r,
            "  since {}: {}, {} fixed, {} still failing, {} failing another way, {} with changed inputs, {} added, {} removed\n",
            text::truncate_cols(&text::inert_line(&b.old.display_name()), 60),
            plural(n(ChangeKind::NewFailures), "new failure", "new failures"),
            n(ChangeKind::Fixed),
            n(ChangeKind::StillFailing),
            n(ChangeKind::StatusChanged),
            n(ChangeKind::ContentChanged),
            n(ChangeKind::Added),
            b.comparison.count(ChangeKind::Removed),
        );
    }

    let mut results: Vec<GateResult> = Vec::new();
    if let Some(max) = gates.max_unclassified {
        let open: Vec<(usize, &PairRow)> = rows
            .iter()
            .copied()
            .filter(|(_, x)| x.status().is_failure() && index.failure_category(store, x).is_none())
            .collect();
        let ok = open.len() as u64 <= max;
        results.push(GateResult {
            ok,
            name: format!("--max-unclassified {max}"),
            why: format!(
                "{} (at most {max} allowed)",
                plural(
                    open.len() as u64,
                    "unclassified failure",
                    "unclassified failures"
                )
            ),
            rates: Vec::new(),
            details: if ok {
                Vec::new()
            } else {
                some_pairs(index, &open)
            },
        });
    }
    for c in &gates.fail_on {
        let hits: Vec<(usize, &PairRow)> = rows
            .iter()
            .copied()
            .filter(|(_, x)| index.failure_category(store, x) == Some(c.as_str()))
            .collect();
        let c = text::inert_line(c);
        let ok = hits.is_empty();
        results.push(GateResult {
            ok,
            why: if ok {
                format!("no failure is classified {c}")
            } else {
                format!(
                    "{} classified {c}",
                    plural(hits.len() as u64, "failure", "failures")
                )
            },
            name: format!("--fail-on {c}"),
            rates: Vec::new(),
            details: some_pairs(index, &hits),
        });
    }
    if let Some(max) = gates.max_failures {
        let ok = overall.failed <= max;
        let failed: Vec<(usize, &PairRow)> = if ok {
            Vec::new()
        } else {
            rows.iter()
                .copied()
                .filter(|(_, x)| stats::model_verdict(x) == Some(true))
                .collect()
        };
        results.push(GateResult {
            ok,
            name: format!("--max-failures {max}"),
            why: format!(
                "{} of {} failed (at most {max} allowed)",
                overall.failed,
                plural(overall.judged, "judged pair", "judged pairs")
            ),
            rates: Vec::new(),
            details: some_pairs(index, &failed),
        });
    }
    if let (Some(max), Some(_)) = (gates.max_new_failures, baseline) {
        let new = changed(ChangeKind::NewFailures);
        let failing = |c| {
            changed(c)
                .iter()
                .filter(|(_, x)| x.status().is_failure())
                .count() as u64
        };
        let (inputs, added) = (
            failing(ChangeKind::ContentChanged),
            failing(ChangeKind::Added),
        );
        let mut why = format!(
            "{} that passed in the baseline (at most {max} allowed)",
            plural(new.len() as u64, "pair fails", "pairs fail")
        );
        if inputs + added > 0 {
            let _ = write!(
                why,
                "; not counted: {inputs} failing with changed inputs, {added} failing added"
            );
        }
        let ok = new.len() as u64 <= max;
        results.push(GateResult {
            ok,
            name: format!("--max-new-failures {max}"),
            why,
            rates: Vec::new(),
            details: if ok {
                Vec::new()
            } else {
                some_pairs(index, &new)
            },
        });
    }
    if let Some(min) = gates.min_pairs {
        let ok = overall.judged >= min;
        results.push(GateResult {
            ok,
            name: format!("--min-pairs {min}"),
            why: format!(
                "{} (at least {min} required)",
                plural(overall.judged, "judged pair", "judged pairs")
            ),
            rates: Vec::new(),
            details: Vec::new(),
        });
    }
    for (gate, threshold) in gates.rate_gates() {
        results.push(rate_gate(gate, threshold, &overall, &groups, gates.by));
    }
    if let (Some(min), Some((a, b))) = (gates.min_kappa, &gates.between) {
        results.extend(kappa_gates(
            index,
            store,
            &selected,
            a,
            b,
            min,
            gates.min_pairs,
        ));
    }
    if gates.strict {
        let total = index.problem_total() as u64;
        let ok = total == 0;
        results.push(GateResult {
            ok,
            name: "--strict".to_string(),
            why: if ok {
                "no problems in the run".to_string()
            } else {
                format!("{} in the run", plural(total, "problem", "problems"))
            },
            rates: Vec::new(),
            details: Vec::new(),
        });
    }

    verdicts(&mut r, &results);
    if !gates.rate_gates().is_empty()
        && gates.min_pairs.is_none()
        && overall.judged < MIN_PAIRS_FOR_GATING
    {
        let _ = writeln!(
            r,
            "  note: {} is too few to gate a release on a rate; seed 003 asks for at least {MIN_PAIRS_FOR_GATING} (--min-pairs {MIN_PAIRS_FOR_GATING})",
            plural(overall.judged, "judged pair", "judged pairs")
        );
    }
    if !gates.any() {
        let _ = writeln!(
            r,
            "  {}: the check passes unless --strict finds problems",
            if gates.strict {
                "no other gate given"
            } else {
                "no gates given"
            }
        );
        let _ = writeln!(
            r,
            "  (gates: --max-failure-rate X, --min-pass-rate X, --max-case-failure-rate X, --max-failures N,\n   --min-pairs N, --max-unclassified N, --fail-on CATEGORY, --min-kappa X --between A,B, --strict,\n   --baseline OLD --max-new-failures N; see triage check --help)"
        );
    }
    let failed: Vec<&str> = results
        .iter()
        .filter(|x| !x.ok)
        .map(|x| x.name.as_str())
        .collect();
    let passed = failed.is_empty();
    let _ = writeln!(r);
    if passed {
        let _ = writeln!(
            r,
            "PASS: {}",
            match results.len() {
                0 => "no gate to fail".to_string(),
                1 => "the gate holds".to_string(),
                n => format!("all {n} gates hold"),
            }
        );
    } else {
        let _ = writeln!(
            r,
            "FAIL: {} of {} failed ({})",
            failed.len(),
            plural(results.len() as u64, "gate", "gates"),
            failed.join(", ")
        );
    }
    CheckOutcome {
        passed,
        gates: results,
        report: r,
    }
}

/// One rate gate over every selected pair, then over each group.
fn rate_gate(
    gate: RateGate,
    threshold: f64,
    overall: &Tally,
    groups: &BTreeMap<String, Tally>,
    by: Option<GroupBy>,
) -> GateResult {
    let (k, n) = overall.counts(gate);
    let all = rate_check(gate, k, n, threshold);
    let why = all.describe(gate);
    let mut rates = vec![all];
    for (name, t) in groups {
        let (k, n) = t.counts(gate);
        let mut c = rate_check(gate, k, n, threshold);
        c.group = Some(name.clone());
        rates.push(c);
    }
    let ok = rates.iter().all(|c| c.ok);
    let mut details = Vec::new();
    if let Some(by) = by {
        let mut failing: Vec<&RateCheck> = rates[1..].iter().filter(|c| !c.ok).collect();
        // The worst first: the highest upper bound, or the lowest lower one.
        failing.sort_by(|a, b| {
            let worse = if gate.upper() {
                b.bound.total_cmp(&a.bound)
            } else {
                a.bound.total_cmp(&b.bound)
            };
            worse.then_with(|| a.group.cmp(&b.group))
        });
        let kind = match by {
            GroupBy::Transformation => ("transformation", "transformations"),
            GroupBy::Family => ("family", "families"),
            GroupBy::Model => ("model", "models"),
            GroupBy::Case | GroupBy::Category => ("case", "cases"),
        };
        let of = rates.len() as u64 - 1;
        details.push(if failing.is_empty() {
            match of {
                1 => format!("by {}: the one {} holds", kind.0, kind.0),
                _ => format!("by {}: all {of} {} hold", kind.0, kind.1),
            }
        } else {
            format!(
                "by {}: {} of {} {} fail",
                kind.0,
                failing.len(),
                of,
                if of == 1 { kind.0 } else { kind.1 }
            )
        });
        for c in failing.iter().take(GROUP_EXAMPLES) {
            let name = text::truncate_cols(
                &text::inert_line(c.group.as_deref().unwrap_or_default()),
                40,
            );
            details.push(format!("{name}: {}", c.describe(gate)));
        }
        if failing.len() > GROUP_EXAMPLES {
            details.push(format!("… and {} more", failing.len() - GROUP_EXAMPLES));
        }
    }
    GateResult {
        name: format!("{} {threshold}", gate.flag()),
        ok,
        why,
        rates,
        details,
    }
}

/// The counts at the top of the report: what was selected, judged and left out.
fn header(
    r: &mut String,
    index: &RunIndex,
    store: Option<&AnnotationStore>,
    gates: &Gates,
    selected: &[u32],
    overall: &Tally,
) {
    let s = stats::summarize(index, selected, store, GroupBy::Transformation);
    let o = &s.overall;
    let _ = writeln!(
        r,
        "triage check: {}",
        text::truncate_cols(&text::inert_line(&index.display_name()), 80)
    );
    if let Some(q) = &gates.filter {
        let _ = writeln!(
            r,
            "  filter: {} ({} of {} pairs)",
            text::truncate_cols(&text::inert_line(&q.to_string()), 60),
            selected.len(),
            index.rows.len()
        );
    }
    let (failed, judged) = (overall.failed, overall.judged);
    let boundary = o.boundary_observations;
    let other = s
        .failures
        .saturating_sub(failed + boundary + o.service_errors + o.invalid_pairs);
    let _ = writeln!(
        r,
        "  {}, {}: {failed} failed, {boundary} boundary, {}, {} invalid{}",
        plural(s.pairs, "pair", "pairs"),
        plural(s.failures, "failure", "failures"),
        plural(o.service_errors, "service error", "service errors"),
        o.invalid_pairs,
        if other > 0 {
            format!(", {other} other")
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        r,
        "  {}: those that passed or failed; the rates count only these",
        plural(judged, "judged pair", "judged pairs"),
    );
    // Failures whose reviewers disagree and that no resolution settled:
    // they have no resolved category, so they count as unclassified.
    let disagreed = store.map_or(0, |st| {
        selected
            .iter()
            .filter_map(|&i| index.rows.get(i as usize))
            .filter(|row| row.status().is_failure())
            .filter_map(|row| index.current_key(st, row))
            .filter(|k| st.agreement(k) == Some(Agreement::Disagree))
            .count()
    });
    let _ = writeln!(
        r,
        "  {} classified, {} unclassified{}",
        s.classified,
        s.failures - s.classified,
        if disagreed > 0 {
            format!(" ({disagreed} of them disagreed on by reviewers, with no resolution)")
        } else {
            String::new()
        }
    );
    let counts = index.problem_counts();
    let skipped = counts.skipped();
    let warned = counts.total() - skipped;
    let _ = writeln!(
        r,
        "  {} ({}, {})",
        plural(counts.total(), "problem", "problems"),
        plural(skipped, "unreadable line", "unreadable lines"),
        plural(warned, "field warning", "field warnings")
    );
    for p in index.problems.iter().take(PROBLEMS_SHOWN) {
        let _ = writeln!(
            r,
            "    {}",
            text::truncate_cols(&text::inert_line(&p.to_string()), 96)
        );
    }
    let total = index.problem_total();
    if total > PROBLEMS_SHOWN.min(index.problems.len()) {
        let counted = index.unlisted.total();
        let _ = writeln!(
            r,
            "    … and {} more{}",
            total - PROBLEMS_SHOWN.min(index.problems.len()),
            if counted > 0 {
                format!(
                    " ({counted} of them only counted: the first {} of each kind are kept with their lines)",
                    crate::core::problem::KEPT_PER_KIND
                )
            } else {
                String::new()
            }
        );
    }
    let _ = writeln!(r);
}

/// One line per gate, PASS or FAIL, with its details under it.
fn verdicts(r: &mut String, results: &[GateResult]) {
    let w = results
        .iter()
        .map(|x| text::width(&x.name))
        .max()
        .unwrap_or(0);
    for g in results {
        let _ = writeln!(
            r,
            "  {}  {}  {}",
            if g.ok { "PASS" } else { "FAIL" },
            fit(&g.name, w),
            g.why
        );
        for e in &g.details {
            let _ = writeln!(r, "        {e}");
        }
    }
}

#[cfg(test)]
mod tests;
