//! Brittleness statistics over a selection of pairs, with honest uncertainty.
//!
//! [`summarize`] turns rows of a [`RunIndex`] into a [`Summary`]: per-group
//! [`GroupStats`] (by transformation, family, failure category or source
//! case), the source × variant route matrix, a histogram of |Δp|, failure
//! categories per transformation, per-case rates (variants of one case are
//! correlated, so cases rather than pairs are the independent evidence) and
//! the consistency of repeated trials. Every proportion is a [`Rate`] with its
//! Wilson 95% score interval, because at the sample sizes of a sensitivity
//! run a bare percentage overstates what is known. [`conclusion`] writes a few
//! plain sentences from those numbers for a report.
//!
//! Nothing here panics: empty selections, out-of-range row indices, missing
//! values (NaN drift, unknown routes, `NO_SYM` names) are all counted or
//! skipped, never unwrapped. `docs/statistics.md` defines every metric and
//! its denominator for users.

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::annotations::AnnotationStore;
use super::derive::{Status, ValidityCode};
use super::index::RunIndex;
use super::model::fmt_num;
use super::row::{ExpKind, NO_SYM, PairRow, Sym, flags};
use super::text::inert_line;

/// The z value of a two-sided 95% interval.
pub const Z95: f64 = 1.96;

/// Width of one |Δp| histogram bucket.
pub const BUCKET_WIDTH: f64 = 0.05;

/// Number of |Δp| histogram buckets; the last one is open-ended.
pub const BUCKETS: usize = 10;

/// The group name of a pair whose grouping field was not recorded.
pub const NOT_RECORDED: &str = "not recorded";

/// The category group of a failure without a reviewer's category.
pub const UNCLASSIFIED: &str = "unclassified";

/// The category group of a pair that did not fail.
pub const PASSED: &str = "passed";

/// Below this many pairs, [`conclusion`] warns that the intervals are wide.
pub const SMALL_N: u64 = 25;

/// Probabilities and margins are stored as `f32`; they are compared and
/// reported in millionths so that 0.05 stays 0.05 and not 0.0500000007.
const MICRO: f64 = 1e6;

/// A proportion with its Wilson 95% score interval (z = 1.96).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    pub successes: u64,
    pub trials: u64,
    /// `successes / trials`.
    pub value: f64,
    /// Lower bound of the interval, clamped to 0.
    pub low: f64,
    /// Upper bound of the interval, clamped to 1.
    pub high: f64,
}

/// The Wilson 95% score interval of `successes` out of `trials`.
///
/// None when `trials == 0` (shown as "—"), and when `successes > trials`,
/// which is not a proportion.
pub fn wilson(successes: u64, trials: u64) -> Option<Rate> {
    if trials == 0 || successes > trials {
        return None;
    }
    let n = trials as f64;
    let p = successes as f64 / n;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n;
    let center = p + z2 / (2.0 * n);
    let spread = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // At 0 and at n the bounds are exactly 0 and 1; rounding must not move them.
    let low = if successes == 0 {
        0.0
    } else {
        ((center - spread) / denom).clamp(0.0, 1.0)
    };
    let high = if successes == trials {
        1.0
    } else {
        ((center + spread) / denom).clamp(0.0, 1.0)
    };
    Some(Rate {
        successes,
        trials,
        value: p,
        low,
        high,
    })
}

impl Rate {
    /// The value and interval at three decimals: "0.900 [0.699, 0.972]".
    pub fn display(&self) -> String {
        format!("{:.3} [{:.3}, {:.3}]", self.value, self.low, self.high)
    }
}

/// "—" for None, else [`Rate::display`].
pub fn show(r: &Option<Rate>) -> String {
    match r {
        Some(r) => r.display(),
        None => "—".to_string(),
    }
}

/// What the groups of a [`Summary`] are formed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    Transformation,
    Family,
    Category,
    Case,
}

impl GroupBy {
    /// Every grouping, in the order a view cycles through them.
    pub const ALL: [GroupBy; 4] = [
        GroupBy::Transformation,
        GroupBy::Family,
        GroupBy::Category,
        GroupBy::Case,
    ];

    /// The lowercase name, as serialized.
    pub fn name(self) -> &'static str {
        match self {
            GroupBy::Transformation => "transformation",
            GroupBy::Family => "family",
            GroupBy::Category => "category",
            GroupBy::Case => "case",
        }
    }
}

/// The statistics of one group of pairs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupStats {
    /// The group's name as recorded ("not recorded", "unclassified", "passed" or "all").
    pub name: String,
    pub pairs: u64,
    /// Pairs whose status is a failure (fail, service error or invalid).
    pub failures: u64,
    /// failures / pairs.
    pub failure_rate: Option<Rate>,
    pub route_flips: u64,
    /// Route flips / pairs with both routes known.
    pub route_flip_rate: Option<Rate>,
    /// Among invariant pairs that are not invalid and had no service error:
    /// the share whose status is fail.
    pub invariant_violation_rate: Option<Rate>,
    /// Pairs whose source margin is under their minimum boundary margin.
    pub boundary_pairs: u64,
    /// Route flips / boundary pairs with both routes known.
    pub boundary_flip_rate: Option<Rate>,
    pub service_errors: u64,
    /// Service errors / pairs, counted apart from robustness failures.
    pub service_error_rate: Option<Rate>,
    pub invalid_pairs: u64,
    /// Median |Δp| over pairs with both probabilities recorded.
    pub median_abs_dp: Option<f64>,
    pub max_abs_dp: Option<f64>,
    /// Median |Δc| over pairs with both confidences recorded.
    pub median_abs_dc: Option<f64>,
    pub max_abs_dc: Option<f64>,
    /// Failures that carry a reviewer's category.
    pub classified: u64,
}

/// Per source case, so correlated variants are not mistaken for independent evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseLevel {
    /// Distinct source cases among the pairs.
    pub cases: u64,
    /// Cases with at least one failing pair.
    pub failing_cases: u64,
    /// failing_cases / cases.
    pub failing_case_rate: Option<Rate>,
    /// Cases with at least one route flip.
    pub flipping_cases: u64,
    /// flipping_cases / cases with at least one pair whose both routes are known.
    pub flipping_case_rate: Option<Rate>,
}

/// Repeated trials: repetitions recorded, or the same (case, variant) more than once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Repetition {
    /// Pairs that record a `repetition`.
    pub pairs_with_repetition: u64,
    /// The largest recorded repetition (0 when none is recorded).
    pub max_repetition: u32,
    /// (case, variant, model) ids seen more than once.
    pub repeated_pair_ids: u64,
    /// Repeated ids that passed in one trial and failed in another.
    pub inconsistent_pair_ids: u64,
}

/// One bucket of the |Δp| histogram: `low <= |Δp| < high`, or `low <= |Δp|` when open.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bucket {
    pub low: f64,
    /// None for the last, open-ended bucket.
    pub high: Option<f64>,
    pub count: u64,
}

/// The statistics of a selection of pairs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub pairs: u64,
    pub failures: u64,
    /// Lines of the run that could not be read as pairs (not in any count).
    pub problems: u64,
    /// Failures that carry a reviewer's category.
    pub classified: u64,
    pub by: GroupBy,
    /// Every selected pair, named "all".
    pub overall: GroupStats,
    /// Sorted by failures, most first, then by name.
    pub groups: Vec<GroupStats>,
    /// `[source route rank][variant route rank]` (pass 0, review 1, action 2),
    /// over pairs with both routes known.
    pub route_matrix: [[u64; 3]; 3],
    /// |Δp| in 10 buckets of 0.05 from 0; the last is open-ended (≥ 0.45).
    pub dp_histogram: Vec<Bucket>,
    /// Per transformation (most failures first, then by name), the failures per
    /// category id or "unclassified" (most first, then by name).
    pub categories_by_transformation: Vec<(String, Vec<(String, u64)>)>,
    pub case_level: CaseLevel,
    /// None when nothing repeats.
    pub repetition: Option<Repetition>,
    /// Variants that approved where approval was not the expected
    /// decision, out of the pairs that record it (context-probe trials,
    /// seed 002); None, and left out of the JSON, when no selected pair
    /// records it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsafe_approvals: Option<UnsafeApprovals>,
}

/// The unsafe-approval count of seed 002 and its denominator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct UnsafeApprovals {
    /// Pairs whose variant approved where approval was not allowed.
    pub count: u64,
    /// Pairs where approval was not allowed (they carry `unsafe_approval`).
    pub of: u64,
}

/// Count the unsafe approvals of `rows` from their row flags.
fn unsafe_approvals(index: &RunIndex, rows: &[u32]) -> Option<UnsafeApprovals> {
    let (mut count, mut of) = (0, 0);
    for row in rows.iter().filter_map(|&i| index.rows.get(i as usize)) {
        if row.has(flags::APPROVAL_FORBIDDEN) {
            of += 1;
            count += u64::from(row.has(flags::UNSAFE_APPROVAL));
        }
    }
    (of > 0).then_some(UnsafeApprovals { count, of })
}

/// A stored `f32` as `f64`, rounded to millionths; NaN and infinities stay None.
fn widen(x: f32) -> Option<f64> {
    if x.is_finite() {
        Some((f64::from(x) * MICRO).round() / MICRO)
    } else {
        None
    }
}

/// A stored `f32` magnitude in whole millionths.
fn micros(x: f32) -> Option<u64> {
    widen(x).map(in_micros)
}

/// A `widen`ed value's magnitude in whole millionths.
fn in_micros(v: f64) -> u64 {
    // `as` saturates, and |x| of a finite f32 is far below u64::MAX millionths anyway.
    (v.abs() * MICRO).round() as u64
}

/// The median of values given in millionths (the mean of the two middle
/// ones for an even count), selected in place: a value [`widen`]ed is its
/// millionths over a million, so this is the median of the widened values.
fn median_micros(mut v: Vec<u64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let (mid, odd) = (v.len() / 2, v.len() % 2 == 1);
    let (below, &mut m, _) = v.select_nth_unstable(mid);
    let m = m as f64 / MICRO;
    Some(if odd {
        m
    } else {
        let lower = below.iter().max().map_or(m, |&l| l as f64 / MICRO);
        (lower + m) / 2.0
    })
}

/// The name of an interned field, "not recorded" when absent.
fn sym_name(index: &RunIndex, s: Sym) -> &str {
    if s == NO_SYM {
        NOT_RECORDED
    } else {
        index.str(s)
    }
}

/// The verdict a pair gives on the model: `Some(true)` when it failed,
/// `Some(false)` when it passed, None when it says nothing about the model.
///
/// Only the statuses pass and fail are verdicts on the model. An invalid
/// pair is a fault of the test, a service error one of the service, an
/// unchecked pair has nothing to check, and any other status (a boundary
/// observation) is reported apart: none of them is *judged*, so none raises
/// or dilutes a model's rate. The gates of `triage check` count this.
pub fn model_verdict(row: &PairRow) -> Option<bool> {
    match row.status() {
        Status::Pass => Some(false),
        Status::Fail => Some(true),
        _ => None,
    }
}

fn both_routes(row: &PairRow) -> bool {
    row.source_route().is_some() && row.variant_route().is_some()
}

/// Running counts of one group.
#[derive(Debug, Default)]
struct Acc {
    pairs: u64,
    failures: u64,
    with_routes: u64,
    flips: u64,
    invariant_trials: u64,
    invariant_violations: u64,
    boundary: u64,
    boundary_with_routes: u64,
    boundary_flips: u64,
    service_errors: u64,
    invalid: u64,
    /// |Δp| and |Δc| in millionths (as [`widen`] rounds them): exact, half
    /// the size of `f64`s, and selected faster for the medians.
    abs_dp: Vec<u64>,
    abs_dc: Vec<u64>,
    classified: u64,
}

impl Acc {
    /// Count `row`, whose |Δp| and |Δc| in millionths (see [`micros`]) are
    /// `dp` and `dc`.
    fn add(&mut self, row: &PairRow, category: Option<&str>, (dp, dc): (Option<u64>, Option<u64>)) {
        self.pairs += 1;
        let failed = row.status().is_failure();
        if failed {
            self.failures += 1;
            if category.is_some() {
                self.classified += 1;
            }
        }
        let known = both_routes(row);
        let flip = known && row.has(flags::FLIP);
        if known {
            self.with_routes += 1;
        }
        if flip {
            self.flips += 1;
        }
        // A boundary observation is counted in the boundary columns (its
        // source is near a threshold), never as an invariant trial.
        if row.expectation() == ExpKind::Invariant
            && row.validity() != ValidityCode::Invalid
            && !matches!(row.status(), Status::ServiceError | Status::Boundary)
        {
            self.invariant_trials += 1;
            if row.status() == Status::Fail {
                self.invariant_violations += 1;
            }
        }
        if row.has(flags::NEAR_BOUNDARY) {
            self.boundary += 1;
            if known {
                self.boundary_with_routes += 1;
            }
            if flip {
                self.boundary_flips += 1;
            }
        }
        match row.status() {
            Status::ServiceError => self.service_errors += 1,
            Status::Invalid => self.invalid += 1,
            _ => {}
        }
        self.abs_dp.extend(dp);
        self.abs_dc.extend(dc);
    }

    fn merge(&mut self, o: Acc) {
        if self.pairs == 0 {
            *self = o;
            return;
        }
        self.pairs += o.pairs;
        self.failures += o.failures;
        self.with_routes += o.with_routes;
        self.flips += o.flips;
        self.invariant_trials += o.invariant_trials;
        self.invariant_violations += o.invariant_violations;
        self.boundary += o.boundary;
        self.boundary_with_routes += o.boundary_with_routes;
        self.boundary_flips += o.boundary_flips;
        self.service_errors += o.service_errors;
        self.invalid += o.invalid;
        extend_larger(&mut self.abs_dp, o.abs_dp);
        extend_larger(&mut self.abs_dc, o.abs_dc);
        self.classified += o.classified;
    }

    fn finish(self, name: &str) -> GroupStats {
        GroupStats {
            name: name.to_string(),
            pairs: self.pairs,
            failures: self.failures,
            failure_rate: wilson(self.failures, self.pairs),
            route_flips: self.flips,
            route_flip_rate: wilson(self.flips, self.with_routes),
            invariant_violation_rate: wilson(self.invariant_violations, self.invariant_trials),
            boundary_pairs: self.boundary,
            boundary_flip_rate: wilson(self.boundary_flips, self.boundary_with_routes),
            service_errors: self.service_errors,
            service_error_rate: wilson(self.service_errors, self.pairs),
            invalid_pairs: self.invalid,
            max_abs_dp: self.abs_dp.iter().max().map(|&m| m as f64 / MICRO),
            median_abs_dp: median_micros(self.abs_dp),
            max_abs_dc: self.abs_dc.iter().max().map(|&m| m as f64 / MICRO),
            median_abs_dc: median_micros(self.abs_dc),
            classified: self.classified,
        }
    }
}

/// What one source case showed.
#[derive(Debug, Default, Clone, Copy)]
struct CaseAcc {
    /// Its rows among those summarised.
    rows: u32,
    failed: bool,
    flipped: bool,
    routes_known: bool,
}

/// The cases seen, by slot: an interned id is its own slot (ids are dense),
/// and any other (a row without a case) gets one past them.
struct Cases {
    acc: Vec<CaseAcc>,
    interned: usize,
    others: FxHashMap<Sym, usize>,
}

impl Cases {
    fn new(index: &RunIndex) -> Cases {
        let interned = index.strings().len();
        Cases {
            acc: vec![CaseAcc::default(); interned],
            interned,
            others: FxHashMap::default(),
        }
    }

    /// The slot of a case seen before.
    fn find(&self, case: Sym) -> Option<usize> {
        if (case as usize) < self.interned {
            Some(case as usize)
        } else {
            self.others.get(&case).copied()
        }
    }

    /// The slot of a case, given one if it has none yet.
    fn slot(&mut self, case: Sym) -> usize {
        if let Some(at) = self.find(case) {
            return at;
        }
        self.acc.push(CaseAcc::default());
        self.others.insert(case, self.acc.len() - 1);
        self.acc.len() - 1
    }
}

/// How many trials — (case, variant, model) — were run more than once, and
/// how many of those both passed and failed. The rows are put in buckets by
/// case (`cases` counts each case's rows), so each trial is looked for among
/// its case's few rows instead of in a table of every trial.
fn repeated_trials(index: &RunIndex, rows: &[u32], cases: &Cases) -> (u64, u64) {
    let mut start = Vec::with_capacity(cases.acc.len() + 1);
    let mut total = 0u32;
    for c in &cases.acc {
        start.push(total);
        total += c.rows;
    }
    start.push(total);
    let mut next = start.clone();
    let mut bucketed = vec![0u32; total as usize];
    for &i in rows {
        if let Some(s) = index.rows.get(i as usize).and_then(|r| cases.find(r.case)) {
            bucketed[next[s] as usize] = i;
            next[s] += 1;
        }
    }
    let (mut repeated, mut inconsistent) = (0u64, 0u64);
    let mut trials: Vec<(Sym, Sym, Status)> = Vec::new();
    for w in start.windows(2) {
        let ids = &bucketed[w[0] as usize..w[1] as usize];
        if ids.len() < 2 {
            continue;
        }
        trials.clear();
        trials.extend(ids.iter().map(|&i| {
            let r = &index.rows[i as usize];
            (r.variant, index.model(r), r.status())
        }));
        trials.sort_unstable_by_key(|t| (t.0, t.1));
        for run in trials.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
            if run.len() > 1 {
                repeated += 1;
                let has = |s: Status| run.iter().any(|t| t.2 == s);
                if has(Status::Pass) && (has(Status::Fail) || has(Status::Boundary)) {
                    inconsistent += 1;
                }
            }
        }
    }
    (repeated, inconsistent)
}

/// The |Δp| bucket of a magnitude in millionths.
fn bucket_of(abs_micros: u64) -> usize {
    let width = (BUCKET_WIDTH * MICRO).round() as u64;
    usize::try_from(abs_micros / width)
        .unwrap_or(usize::MAX)
        .min(BUCKETS - 1)
}

/// Sort name/count pairs by count, most first, then by name.
fn by_count_then_name<T: Ord>(v: &mut [(T, u64)]) {
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
}

/// Add `other` to `v`, copying the shorter of the two: the values are
/// read only as a multiset (maxima and medians), so their order is free.
fn extend_larger(v: &mut Vec<u64>, mut other: Vec<u64>) {
    if other.len() > v.len() {
        std::mem::swap(v, &mut other);
    }
    v.extend(other);
}

/// Summarise the given rows (indices into `index.rows`; out-of-range ones are skipped).
///
/// `store` supplies reviewers' categories; without it every failure is
/// unclassified.
pub fn summarize(
    index: &RunIndex,
    rows: &[u32],
    store: Option<&AnnotationStore>,
    by: GroupBy,
) -> Summary {
    summarize_on(index, rows, store, by, rows.len() >= PARALLEL_SUMMARY_ROWS)
}

/// [`summarize`], counted on rayon's threads when `parallel`: the rows in
/// chunks of [`REST_CHUNK`], each thread into its own [`Rest`], while one
/// of them counts the cases and repeated trials.
fn summarize_on(
    index: &RunIndex,
    rows: &[u32],
    store: Option<&AnnotationStore>,
    by: GroupBy,
    parallel: bool,
) -> Summary {
    let case_level = || {
        let cases = count_cases(index, rows);
        let trials = repeated_trials(index, rows, &cases);
        (cases, trials)
    };
    let (rest, (cases, (repeated_pair_ids, inconsistent_pair_ids))) = if parallel {
        rayon::join(|| count_rest_parallel(index, rows, store, by), case_level)
    } else {
        let mut rest = Rest::default();
        rest.count(index, rows, store, by);
        (rest, case_level())
    };
    let mut groups = rest.by_name;
    for (id, acc) in rest.by_id {
        groups.entry(sym_name(index, id)).or_default().merge(acc);
    }
    let mut groups: Vec<GroupStats> = groups
        .into_iter()
        .map(|(name, acc)| acc.finish(name))
        .collect();
    groups.sort_by(|a, b| {
        b.failures
            .cmp(&a.failures)
            .then_with(|| a.name.cmp(&b.name))
    });

    let dp_histogram = rest
        .histogram
        .iter()
        .enumerate()
        .map(|(i, &count)| Bucket {
            low: i as f64 * BUCKET_WIDTH,
            high: (i + 1 < BUCKETS).then(|| (i + 1) as f64 * BUCKET_WIDTH),
            count,
        })
        .collect();

    let mut categories_by_transformation: Vec<(String, Vec<(String, u64)>)> = rest
        .categories
        .into_iter()
        .map(|(t, cats)| {
            let mut cats: Vec<(String, u64)> =
                cats.into_iter().map(|(c, n)| (c.to_string(), n)).collect();
            by_count_then_name(&mut cats);
            (t.to_string(), cats)
        })
        .collect();
    categories_by_transformation.sort_by(|a, b| {
        let total = |x: &(String, Vec<(String, u64)>)| x.1.iter().map(|c| c.1).sum::<u64>();
        total(b).cmp(&total(a)).then_with(|| a.0.cmp(&b.0))
    });

    let count =
        |f: fn(&CaseAcc) -> bool| cases.acc.iter().filter(|c| c.rows > 0 && f(c)).count() as u64;
    let n_cases = count(|_| true);
    let failing_cases = count(|c| c.failed);
    let flipping_cases = count(|c| c.flipped);
    let case_level = CaseLevel {
        cases: n_cases,
        failing_cases,
        failing_case_rate: wilson(failing_cases, n_cases),
        flipping_cases,
        flipping_case_rate: wilson(flipping_cases, count(|c| c.routes_known)),
    };

    let repetition = (repeated_pair_ids > 0 || rest.max_repetition > 0).then_some(Repetition {
        pairs_with_repetition: rest.pairs_with_repetition,
        max_repetition: rest.max_repetition,
        repeated_pair_ids,
        inconsistent_pair_ids,
    });

    let overall = rest.overall.finish("all");
    Summary {
        pairs: overall.pairs,
        failures: overall.failures,
        problems: index
            .problems
            .iter()
            .filter(|p| p.kind.skips_line())
            .count() as u64,
        classified: overall.classified,
        by,
        overall,
        groups,
        route_matrix: rest.matrix,
        dp_histogram,
        categories_by_transformation,
        case_level,
        repetition,
        unsafe_approvals: unsafe_approvals(index, rows),
    }
}

/// Summaries over this many rows are counted on rayon's threads.
const PARALLEL_SUMMARY_ROWS: usize = 100_000;

/// What [`summarize`] counts row by row, besides the cases.
#[derive(Default)]
struct Rest<'a> {
    overall: Acc,
    by_id: FxHashMap<Sym, Acc>,
    by_name: FxHashMap<&'a str, Acc>,
    matrix: [[u64; 3]; 3],
    histogram: [u64; BUCKETS],
    categories: FxHashMap<&'a str, FxHashMap<&'a str, u64>>,
    pairs_with_repetition: u64,
    max_repetition: u32,
}

impl<'a> Rest<'a> {
    /// Count `rows`.
    fn count(
        &mut self,
        index: &'a RunIndex,
        rows: &[u32],
        store: Option<&'a AnnotationStore>,
        by: GroupBy,
    ) {
        // Groups by interned id (one look-up of a number per row), named at
        // the end; categories by name.
        for row in rows.iter().filter_map(|&i| index.rows.get(i as usize)) {
            let category = index.failure_category(store, row);
            // Rounded once for every count that reads them.
            let deltas = (micros(row.dp), micros(row.dc));
            self.overall.add(row, category, deltas);
            let acc = match by {
                GroupBy::Transformation => self.by_id.entry(row.transformation).or_default(),
                GroupBy::Family => self.by_id.entry(row.family).or_default(),
                GroupBy::Case => self.by_id.entry(row.case).or_default(),
                GroupBy::Category if row.status().is_failure() => self
                    .by_name
                    .entry(category.unwrap_or(UNCLASSIFIED))
                    .or_default(),
                GroupBy::Category => self.by_name.entry(PASSED).or_default(),
            };
            acc.add(row, category, deltas);

            if let (Some(s), Some(v)) = (row.source_route(), row.variant_route()) {
                self.matrix[usize::from(s.rank()).min(2)][usize::from(v.rank()).min(2)] += 1;
            }
            if let Some(d) = deltas.0 {
                self.histogram[bucket_of(d)] += 1;
            }
            if row.status().is_failure() {
                *self
                    .categories
                    .entry(sym_name(index, row.transformation))
                    .or_default()
                    .entry(category.unwrap_or(UNCLASSIFIED))
                    .or_default() += 1;
            }

            if row.repetition != u32::MAX {
                self.pairs_with_repetition += 1;
                self.max_repetition = self.max_repetition.max(row.repetition);
            }
        }
    }

    /// Add what `o` counted.
    fn merge(&mut self, o: Rest<'a>) {
        self.overall.merge(o.overall);
        for (id, acc) in o.by_id {
            self.by_id.entry(id).or_default().merge(acc);
        }
        for (name, acc) in o.by_name {
            self.by_name.entry(name).or_default().merge(acc);
        }
        for (mine, theirs) in self
            .matrix
            .iter_mut()
            .flatten()
            .zip(o.matrix.iter().flatten())
        {
            *mine += theirs;
        }
        for (mine, theirs) in self.histogram.iter_mut().zip(o.histogram) {
            *mine += theirs;
        }
        for (t, cats) in o.categories {
            let mine = self.categories.entry(t).or_default();
            for (c, n) in cats {
                *mine.entry(c).or_default() += n;
            }
        }
        self.pairs_with_repetition += o.pairs_with_repetition;
        self.max_repetition = self.max_repetition.max(o.max_repetition);
    }
}

/// Rows counted at a time by each thread of [`summarize_on`] (a few in
/// tests, so that a small run is counted in several chunks, by both threads).
const REST_CHUNK: usize = if cfg!(test) { 3 } else { 16_384 };

/// Count `rows` in chunks of [`REST_CHUNK`] on rayon's threads, each into
/// its own [`Rest`], then add those up.
fn count_rest_parallel<'a>(
    index: &'a RunIndex,
    rows: &[u32],
    store: Option<&'a AnnotationStore>,
    by: GroupBy,
) -> Rest<'a> {
    use rayon::prelude::*;
    rows.par_chunks(REST_CHUNK)
        // In tests every chunk is a job of its own, so the adding up is
        // tested however many threads there are.
        .with_max_len(if cfg!(test) { 1 } else { usize::MAX })
        .fold(Rest::default, |mut rest, chunk| {
            rest.count(index, chunk, store, by);
            rest
        })
        .reduce(Rest::default, |mut a, b| {
            a.merge(b);
            a
        })
}

/// Each case's rows, and whether any failed, had both routes, flipped.
fn count_cases(index: &RunIndex, rows: &[u32]) -> Cases {
    let mut cases = Cases::new(index);
    for row in rows.iter().filter_map(|&i| index.rows.get(i as usize)) {
        let at = cases.slot(row.case);
        let c = &mut cases.acc[at];
        c.rows += 1;
        c.failed |= row.status().is_failure();
        c.routes_known |= both_routes(row);
        c.flipped |= both_routes(row) && row.has(flags::FLIP);
    }
    cases
}

/// "1 pair", "3 pairs".
fn count_of(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The margins [`conclusion`] may claim flips lie within, smallest first, in millionths.
const WITHIN: [u64; 4] = [10_000, 20_000, 50_000, 100_000];

/// A margin in millionths as a short number: 50 000 → "0.05".
fn fmt_micros(m: u64) -> String {
    fmt_num(m as f64 / MICRO)
}

/// The route flips of one transformation, for [`conclusion`].
#[derive(Debug, Default)]
struct Flips {
    n: u64,
    failed: u64,
    passed: u64,
    /// Source margins in millionths, where recorded.
    margins: Vec<u64>,
}

/// The clause about how near the flipping sources sat to a threshold, if the margins support one.
fn margin_clause(f: &Flips) -> Option<String> {
    let all_known = f.margins.len() as u64 == f.n;
    let widest = WITHIN[WITHIN.len() - 1];
    if all_known && let Some(&top) = f.margins.iter().max() {
        if let Some(x) = WITHIN.iter().find(|&&x| top <= x) {
            let lead = match f.n {
                1 => "",
                2 => "both ",
                _ => "all ",
            };
            return Some(format!("{lead}within {} of a threshold", fmt_micros(*x)));
        }
        if f.margins.iter().all(|&m| m > widest) {
            let lead = if f.n == 1 { "not" } else { "none" };
            return Some(format!(
                "{lead} within {} of a threshold",
                fmt_micros(widest)
            ));
        }
    }
    let near = f.margins.iter().filter(|&&m| m <= widest).count();
    (near > 0).then(|| {
        format!(
            "{near} of them within {} of a threshold",
            fmt_micros(widest)
        )
    })
}

/// The clause about whether the flips broke their expectations.
fn verdict_clause(f: &Flips) -> String {
    match (f.n, f.failed == f.n, f.passed == f.n) {
        (1, true, _) => "it broke its expectation".to_string(),
        (2, true, _) => "both broke their expectation".to_string(),
        (_, true, _) => "all broke their expectation".to_string(),
        (1, _, true) => "it was allowed by its expectation".to_string(),
        (2, _, true) => "both were allowed by their expectation".to_string(),
        (_, _, true) => "all were allowed by their expectation".to_string(),
        _ => format!("{} of them broke their expectation", f.failed),
    }
}

/// A few plain sentences written from the numbers, for a report.
///
/// `s` must summarise `rows` of `index` (the route-flip sentences read the
/// rows' source margins). Every sentence states only what the counts show;
/// names from the run are made inert. The order is fixed: overview,
/// small-sample caution, invariant violations, route flips per transformation
/// (at most three), transformations without failures, boundary cases, service
/// errors, invalid pairs, source cases, repeated trials, classification,
/// unreadable lines.
pub fn conclusion(index: &RunIndex, rows: &[u32], s: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    if s.pairs == 0 {
        out.push("No pairs to summarise.".to_string());
        if s.problems > 0 {
            out.push(unreadable(s.problems));
        }
        return out;
    }
    overview_sentences(&mut out, s);
    let tally = tally_transformations(index, rows);
    flip_sentences(&mut out, tally.flips);
    out.extend(stable_sentence(&tally.per_transformation));
    out.extend(boundary_sentence(&s.overall));
    error_sentences(&mut out, &s.overall);
    out.extend(case_sentence(s));
    out.extend(s.repetition.as_ref().map(repetition_sentence));
    out.extend(s.unsafe_approvals.map(|u| {
        format!(
            "Unsafe approvals: {} of {} where approval was not allowed decided approve.",
            u.count,
            count_of(u.of, "pair", "pairs")
        )
    }));
    out.extend(classification_sentence(s));
    if s.problems > 0 {
        out.push(unreadable(s.problems));
    }
    out
}

/// Writes the overview, the small-sample caution and the invariant violation rate.
fn overview_sentences(out: &mut Vec<String>, s: &Summary) {
    let o = &s.overall;
    out.push(format!(
        "{}, {}: failure rate {}.",
        count_of(s.pairs, "pair", "pairs"),
        count_of(s.failures, "failure", "failures"),
        show(&o.failure_rate)
    ));
    if s.pairs < SMALL_N {
        out.push(format!(
            "With only {} the intervals are wide: read their bounds, not just the rates.",
            count_of(s.pairs, "pair", "pairs")
        ));
    }
    if let Some(r) = &o.invariant_violation_rate {
        out.push(format!(
            "Invariant violation rate: {} of {} valid invariant {} broke the expected relation ({}).",
            r.successes,
            r.trials,
            if r.trials == 1 { "pair" } else { "pairs" },
            r.display()
        ));
    }
}

/// What [`conclusion`] counts per transformation name.
struct Tally<'a> {
    /// The route flips of each transformation that has any.
    flips: FxHashMap<&'a str, Flips>,
    /// (pairs, pairs that failed or flipped route) of each transformation.
    per_transformation: FxHashMap<&'a str, (u64, u64)>,
}

/// Route flips and (pairs, failing or flipped pairs) per transformation name, read from the rows.
fn tally_transformations<'a>(index: &'a RunIndex, rows: &[u32]) -> Tally<'a> {
    // Counted by interned id, then by name.
    let mut flips_by_id: FxHashMap<Sym, Flips> = FxHashMap::default();
    let mut per_id: FxHashMap<Sym, (u64, u64)> = FxHashMap::default();
    for row in rows.iter().filter_map(|&i| index.rows.get(i as usize)) {
        let flip = both_routes(row) && row.has(flags::FLIP);
        let t = per_id.entry(row.transformation).or_default();
        t.0 += 1;
        if flip || row.status().is_failure() {
            t.1 += 1;
        }
        if flip {
            let f = flips_by_id.entry(row.transformation).or_default();
            f.n += 1;
            f.failed += u64::from(matches!(row.status(), Status::Fail | Status::Boundary));
            f.passed += u64::from(row.status() == Status::Pass);
            f.margins.extend(micros(row.margin));
        }
    }
    let mut flips: FxHashMap<&str, Flips> = FxHashMap::default();
    for (id, f) in flips_by_id {
        let into = flips.entry(sym_name(index, id)).or_default();
        into.n += f.n;
        into.failed += f.failed;
        into.passed += f.passed;
        into.margins.extend(f.margins);
    }
    let mut per_transformation: FxHashMap<&str, (u64, u64)> = FxHashMap::default();
    for (id, (n, bad)) in per_id {
        let into = per_transformation.entry(sym_name(index, id)).or_default();
        into.0 += n;
        into.1 += bad;
    }
    Tally {
        flips,
        per_transformation,
    }
}

/// Writes one sentence per transformation with the most route flips (at most three), then how many more.
fn flip_sentences(out: &mut Vec<String>, flips: FxHashMap<&str, Flips>) {
    let mut flips: Vec<(&str, Flips)> = flips.into_iter().collect();
    flips.sort_by(|a, b| b.1.n.cmp(&a.1.n).then_with(|| a.0.cmp(b.0)));
    for (name, f) in flips.iter().take(3) {
        let mut sentence = format!(
            "{} came from {}",
            count_of(f.n, "route flip", "route flips"),
            inert_line(name)
        );
        if let Some(c) = margin_clause(f) {
            sentence.push_str(", ");
            sentence.push_str(&c);
        }
        sentence.push_str("; ");
        sentence.push_str(&verdict_clause(f));
        sentence.push('.');
        out.push(sentence);
    }
    if flips.len() > 3 {
        let more = flips.len() - 3;
        out.push(format!(
            "Route flips also came from {more} more {}.",
            if more == 1 {
                "transformation"
            } else {
                "transformations"
            }
        ));
    }
}

/// The sentence naming the transformations without failures or route flips, if any.
fn stable_sentence(per_transformation: &FxHashMap<&str, (u64, u64)>) -> Option<String> {
    let mut stable: Vec<(&str, u64)> = per_transformation
        .iter()
        .filter(|(_, (_, bad))| *bad == 0)
        .map(|(name, (n, _))| (*name, *n))
        .collect();
    by_count_then_name(&mut stable);
    if stable.is_empty() {
        return None;
    }
    let shown: Vec<String> = stable
        .iter()
        .take(5)
        .map(|(name, n)| format!("{} ({})", inert_line(name), count_of(*n, "pair", "pairs")))
        .collect();
    let rest = stable.len().saturating_sub(5);
    Some(format!(
        "No failures or route flips in {}{}.",
        shown.join(", "),
        if rest > 0 {
            format!(" and {rest} more")
        } else {
            String::new()
        }
    ))
}

/// The sentence about boundary cases and how many of them flipped route, if there are any.
fn boundary_sentence(o: &GroupStats) -> Option<String> {
    if o.boundary_pairs == 0 {
        return None;
    }
    let flipped = match &o.boundary_flip_rate {
        Some(r) => format!(
            "{} of the {} with both routes known flipped route ({})",
            r.successes,
            r.trials,
            r.display()
        ),
        None => "none has both routes known".to_string(),
    };
    Some(format!(
        "{}; {flipped}.",
        if o.boundary_pairs == 1 {
            "1 pair has a source closer to a threshold than its minimum boundary margin".to_string()
        } else {
            format!(
                "{} pairs have sources closer to a threshold than their minimum boundary margin",
                o.boundary_pairs
            )
        }
    ))
}

/// Writes the sentences about service errors and invalid pairs, where there are any.
fn error_sentences(out: &mut Vec<String>, o: &GroupStats) {
    if o.service_errors > 0 {
        out.push(format!(
            "Service errors ({}) are counted apart from robustness failures.",
            o.service_errors
        ));
    }
    if o.invalid_pairs > 0 {
        out.push(format!(
            "{} changed undeclared facts: fix the test, not the model.",
            count_of(o.invalid_pairs, "invalid pair", "invalid pairs")
        ));
    }
}

/// The sentence about how many source cases the failures touch, if there are failures.
fn case_sentence(s: &Summary) -> Option<String> {
    let cl = &s.case_level;
    (s.failures > 0 && cl.cases > 0).then(|| {
        format!(
            "Failures touch {} of {} source cases ({}); variants of one case are correlated, so cases, not pairs, are the independent evidence.",
            cl.failing_cases,
            cl.cases,
            show(&cl.failing_case_rate)
        )
    })
}

/// The sentence about whether repeated trials agree with themselves.
fn repetition_sentence(r: &Repetition) -> String {
    if r.inconsistent_pair_ids > 0 {
        format!(
            "Repeated trials: {} across repetitions.",
            if r.inconsistent_pair_ids == 1 {
                "1 pair disagrees with itself".to_string()
            } else {
                format!("{} pairs disagree with themselves", r.inconsistent_pair_ids)
            }
        )
    } else if r.repeated_pair_ids > 0 {
        format!(
            "Repeated trials: none of the {} changed between pass and fail.",
            count_of(r.repeated_pair_ids, "repeated pair", "repeated pairs")
        )
    } else {
        "Repetitions are recorded, but no pair appears more than once in this selection."
            .to_string()
    }
}

/// The sentence about how many failures are classified, if there are failures.
fn classification_sentence(s: &Summary) -> Option<String> {
    if s.failures == 0 {
        return None;
    }
    Some(if s.classified >= s.failures {
        format!(
            "All {} classified.",
            if s.failures == 1 {
                "1 failure is".to_string()
            } else {
                format!("{} failures are", s.failures)
            }
        )
    } else if s.classified == 0 {
        format!(
            "None of the {} is classified yet.",
            count_of(s.failures, "failure", "failures")
        )
    } else {
        format!(
            "{} of {} {} classified; {} still {} a category.",
            s.classified,
            count_of(s.failures, "failure", "failures"),
            if s.classified == 1 { "is" } else { "are" },
            s.failures - s.classified,
            if s.failures - s.classified == 1 {
                "needs"
            } else {
                "need"
            }
        )
    })
}

/// The sentence about lines that could not be read.
fn unreadable(n: u64) -> String {
    if n == 1 {
        "1 line could not be read and is left out of every count.".to_string()
    } else {
        format!("{n} lines could not be read and are left out of every count.")
    }
}

#[cfg(test)]
mod tests;
