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

use rustc_hash::FxHashMap as FxMap;
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
        if row.expectation() == ExpKind::Invariant
            && row.validity() != ValidityCode::Invalid
            && row.status() != Status::ServiceError
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
        self.abs_dp.extend(o.abs_dp);
        self.abs_dc.extend(o.abs_dc);
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
    others: FxMap<Sym, usize>,
}

impl Cases {
    fn new(index: &RunIndex) -> Cases {
        let interned = index.strings().len();
        Cases {
            acc: vec![CaseAcc::default(); interned],
            interned,
            others: FxMap::default(),
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
                if has(Status::Pass) && has(Status::Fail) {
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

/// [`summarize`], with the cases and repeated trials counted on a second
/// thread while this one counts the rest when `two_threads` (the second
/// then helps with the rest).
fn summarize_on(
    index: &RunIndex,
    rows: &[u32],
    store: Option<&AnnotationStore>,
    by: GroupBy,
    two_threads: bool,
) -> Summary {
    let case_level = || {
        let cases = count_cases(index, rows);
        let trials = repeated_trials(index, rows, &cases);
        (cases, trials)
    };
    // The rest is counted in chunks, by this thread from the start and by
    // the second once it has counted the cases.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let rest = || count_rest_from(&next, index, rows, store, by);
    let (rest, (cases, (repeated_pair_ids, inconsistent_pair_ids))) = if two_threads {
        std::thread::scope(|scope| {
            let second = || {
                let cases = case_level();
                (rest(), cases)
            };
            match std::thread::Builder::new().spawn_scoped(scope, second) {
                Ok(h) => {
                    let mut mine = rest();
                    match h.join() {
                        Ok((theirs, cases)) => {
                            mine.merge(theirs);
                            (mine, cases)
                        }
                        Err(e) => std::panic::resume_unwind(e),
                    }
                }
                Err(_) => (rest(), case_level()),
            }
        })
    } else {
        (rest(), case_level())
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
    }
}

/// Summaries over this many rows count their cases on a second thread.
const PARALLEL_SUMMARY_ROWS: usize = 100_000;

/// What [`summarize`] counts row by row, besides the cases.
#[derive(Default)]
struct Rest<'a> {
    overall: Acc,
    by_id: FxMap<Sym, Acc>,
    by_name: FxMap<&'a str, Acc>,
    matrix: [[u64; 3]; 3],
    histogram: [u64; BUCKETS],
    categories: FxMap<&'a str, FxMap<&'a str, u64>>,
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
/// tests, so that both threads count some of a small run).
const REST_CHUNK: usize = if cfg!(test) { 3 } else { 16_384 };

/// Count `rows` in chunks taken from `next` (shared by the threads that
/// count them), each thread into its own [`Rest`].
fn count_rest_from<'a>(
    next: &std::sync::atomic::AtomicUsize,
    index: &'a RunIndex,
    rows: &[u32],
    store: Option<&'a AnnotationStore>,
    by: GroupBy,
) -> Rest<'a> {
    let mut rest = Rest::default();
    loop {
        let at = next.fetch_add(REST_CHUNK, std::sync::atomic::Ordering::Relaxed);
        if at >= rows.len() {
            return rest;
        }
        rest.count(
            index,
            &rows[at..(at + REST_CHUNK).min(rows.len())],
            store,
            by,
        );
    }
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
    let o = &s.overall;
    if s.pairs == 0 {
        out.push("No pairs to summarise.".to_string());
        if s.problems > 0 {
            out.push(unreadable(s.problems));
        }
        return out;
    }
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

    // Route flips and stability per transformation, read from the rows:
    // counted by interned id, then by name.
    let mut flips_by_id: FxMap<Sym, Flips> = FxMap::default();
    let mut per_id: FxMap<Sym, (u64, u64)> = FxMap::default();
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
            f.failed += u64::from(row.status() == Status::Fail);
            f.passed += u64::from(row.status() == Status::Pass);
            f.margins.extend(micros(row.margin));
        }
    }
    let mut flips: FxMap<&str, Flips> = FxMap::default();
    for (id, f) in flips_by_id {
        let into = flips.entry(sym_name(index, id)).or_default();
        into.n += f.n;
        into.failed += f.failed;
        into.passed += f.passed;
        into.margins.extend(f.margins);
    }
    let mut per_transformation: FxMap<&str, (u64, u64)> = FxMap::default();
    for (id, (n, bad)) in per_id {
        let into = per_transformation.entry(sym_name(index, id)).or_default();
        into.0 += n;
        into.1 += bad;
    }
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
    let mut stable: Vec<(&str, u64)> = per_transformation
        .iter()
        .filter(|(_, (_, bad))| *bad == 0)
        .map(|(name, (n, _))| (*name, *n))
        .collect();
    by_count_then_name(&mut stable);
    if !stable.is_empty() {
        let shown: Vec<String> = stable
            .iter()
            .take(5)
            .map(|(name, n)| format!("{} ({})", inert_line(name), count_of(*n, "pair", "pairs")))
            .collect();
        let rest = stable.len().saturating_sub(5);
        out.push(format!(
            "No failures or route flips in {}{}.",
            shown.join(", "),
            if rest > 0 {
                format!(" and {rest} more")
            } else {
                String::new()
            }
        ));
    }

    if o.boundary_pairs > 0 {
        let flipped = match &o.boundary_flip_rate {
            Some(r) => format!(
                "{} of the {} with both routes known flipped route ({})",
                r.successes,
                r.trials,
                r.display()
            ),
            None => "none has both routes known".to_string(),
        };
        out.push(format!(
            "{}; {flipped}.",
            if o.boundary_pairs == 1 {
                "1 pair has a source closer to a threshold than its minimum boundary margin"
                    .to_string()
            } else {
                format!(
                    "{} pairs have sources closer to a threshold than their minimum boundary margin",
                    o.boundary_pairs
                )
            }
        ));
    }
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
    let cl = &s.case_level;
    if s.failures > 0 && cl.cases > 0 {
        out.push(format!(
            "Failures touch {} of {} source cases ({}); variants of one case are correlated, so cases, not pairs, are the independent evidence.",
            cl.failing_cases,
            cl.cases,
            show(&cl.failing_case_rate)
        ));
    }
    if let Some(r) = &s.repetition {
        out.push(if r.inconsistent_pair_ids > 0 {
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
        });
    }
    if s.failures > 0 {
        out.push(if s.classified >= s.failures {
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
        });
    }
    if s.problems > 0 {
        out.push(unreadable(s.problems));
    }
    out
}

fn unreadable(n: u64) -> String {
    if n == 1 {
        "1 line could not be read and is left out of every count.".to_string()
    } else {
        format!("{n} lines could not be read and are left out of every count.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::annotations::{AnnotationSource, Change};
    use crate::core::index::{OpenOptions, load_run};
    use crate::core::model::Route;
    use serde_json::{Value, json};
    use std::collections::HashMap;
    use std::io::Write;

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[track_caller]
    fn assert_close(a: Option<f64>, b: f64) {
        assert!(close(a, b), "{a:?} != {b}");
    }

    #[test]
    fn wilson_matches_hand_computed_intervals() {
        // 18/20: p = 0.9, z² = 3.8416, denom = 1 + 3.8416/20 = 1.19208,
        // center = 0.9 + 3.8416/40 = 0.99604,
        // spread = 1.96·√(0.09/20 + 3.8416/1600) = 1.96·√0.006901 = 0.162823,
        // low = 0.833217/1.19208 = 0.699, high = 1.158863/1.19208 = 0.972.
        let r = wilson(18, 20).unwrap();
        assert_eq!(r.display(), "0.900 [0.699, 0.972]");
        assert_eq!((r.successes, r.trials), (18, 20));
        assert!((r.low - 0.698_962).abs() < 1e-6 && (r.high - 0.972_134).abs() < 1e-6);
        // 27/30: denom 1.128053, center 0.964027, spread 0.124992 → [0.744, 0.965].
        assert_eq!(wilson(27, 30).unwrap().display(), "0.900 [0.744, 0.965]");
        // 5/5: denom 1.76832, center 1.38416, spread = 1.96·√(3.8416/100) = 0.384160,
        // low = 1.0/1.76832 = 0.566; high is exactly 1.
        let r = wilson(5, 5).unwrap();
        assert_eq!(r.display(), "1.000 [0.566, 1.000]");
        assert_eq!(r.high, 1.0);
        // 3/12: denom 1.320133, center 0.410067, spread 0.292652 → [0.089, 0.532].
        assert_eq!(wilson(3, 12).unwrap().display(), "0.250 [0.089, 0.532]");
        // 0/10: center = spread = z²/20, so the low bound is exactly 0; high 0.278.
        let r = wilson(0, 10).unwrap();
        assert_eq!(r.low, 0.0);
        assert_eq!(r.display(), "0.000 [0.000, 0.278]");
        assert_eq!(wilson(0, 0), None);
        assert_eq!(show(&wilson(0, 0)), "—");
        assert_eq!(show(&wilson(1, 2)), "0.500 [0.095, 0.905]");
        // Not a proportion: no rate, no panic.
        assert_eq!(wilson(3, 2), None);
        let big = wilson(u64::MAX / 2, u64::MAX).unwrap();
        assert!(big.low <= big.value && big.value <= big.high);
    }

    /// The median and maximum of the widened values, as plainly as they
    /// can be written: what the summary reports.
    fn median(values: &[f64]) -> Option<f64> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(v[n / 2]),
            _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
        }
    }

    proptest::proptest! {
        /// Counted in millionths, the medians and maxima are those of the
        /// widened values, to the bit.
        #[test]
        fn medians_in_millionths_are_those_of_the_values(
            xs in proptest::collection::vec(-1.0f32..=1.0, 0..40),
        ) {
            let widened: Vec<f64> = xs.iter().filter_map(|&x| widen(x)).map(f64::abs).collect();
            let micros: Vec<u64> = xs.iter().filter_map(|&x| widen(x)).map(in_micros).collect();
            proptest::prop_assert_eq!(
                median_micros(micros.clone()).map(f64::to_bits),
                median(&widened).map(f64::to_bits)
            );
            let max = widened.iter().copied().max_by(f64::total_cmp);
            proptest::prop_assert_eq!(
                micros.iter().max().map(|&m| (m as f64 / MICRO).to_bits()),
                max.map(f64::to_bits)
            );
        }
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median_micros(Vec::new()), None);
        // Odd: 0.1, 0.3, 0.5 → 0.3.
        assert_close(median_micros(vec![500_000, 100_000, 300_000]), 0.3);
        // Even: 0.1, 0.2, 0.4, 0.8 → (0.2 + 0.4) / 2 = 0.3.
        assert_close(median_micros(vec![800_000, 100_000, 400_000, 200_000]), 0.3);
        assert_close(median_micros(vec![250_000]), 0.25);
        // Stored f32 values come back as the decimals that were written.
        assert_eq!(widen(0.05_f32), Some(0.05));
        assert_eq!(widen(f32::NAN), None);
        assert_eq!(micros(-0.15_f32), Some(150_000));
    }

    #[test]
    fn histogram_edges_go_to_the_upper_bucket() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(49_999), 0);
        assert_eq!(bucket_of(50_000), 1);
        assert_eq!(bucket_of(150_000), 3);
        assert_eq!(bucket_of(449_999), 8);
        assert_eq!(bucket_of(450_000), 9);
        assert_eq!(bucket_of(1_000_000), 9);
        assert_eq!(bucket_of(u64::MAX), 9);
    }

    const INVARIANT: &str = "invariant";
    const NOT_MORE: &str = "not-more-urgent";

    /// One pair under policy 0.55/0.9. Invariant pairs allow |Δp| ≤ 0.1,
    /// |Δc| ≤ 0.15, the same route, and need a source margin ≥ 0.05;
    /// not-more-urgent pairs allow p to rise by 0.05. The transformation
    /// decides what the variant changes, and `allowed_changes` declares it.
    #[allow(clippy::too_many_arguments)]
    fn pair(
        case: &str,
        variant: &str,
        family: Option<&str>,
        transformation: &str,
        kind: &str,
        (ps, cs): (f64, f64),
        (pv, cv): (f64, f64),
    ) -> Value {
        let mut v = json!({
            "case_id": case,
            "variant_id": variant,
            "transformation": transformation,
            "policy": {"review_threshold": 0.55, "action_threshold": 0.9},
            "source": {"question": "q", "state": {"a": 1},
                       "response": {"probability": ps, "confidence": cs}},
            "variant": {"question": "q", "state": {"a": 1},
                        "response": {"probability": pv, "confidence": cv}},
        });
        if let Some(f) = family {
            v["family"] = json!(f);
        }
        if kind == INVARIANT {
            v["expectation"] = json!({"kind": "invariant", "max_probability_drift": 0.1,
                "max_confidence_drift": 0.15, "require_same_route": true});
            v["minimum_boundary_margin"] = json!(0.05);
        } else {
            v["expectation"] = json!({"kind": kind, "permitted_probability_movement": 0.05});
        }
        match transformation {
            "paraphrase" => {
                v["variant"]["question"] = json!("q, reworded");
                v["allowed_changes"] = json!(["question"]);
            }
            "add-irrelevant-field" => {
                v["variant"]["state"] = json!({"a": 1, "theme": "dark"});
                v["allowed_changes"] = json!(["state.theme"]);
            }
            _ => {
                v["source"]["state"] = json!({"a": 1, "evidence": ["e1"]});
                v["allowed_changes"] = json!(["state.evidence"]);
            }
        }
        v
    }

    /// The hand-built run. Policy 0.55/0.9, so routes: p < 0.55 pass,
    /// 0.55 ≤ p < 0.9 review, p ≥ 0.9 action; margin = distance to the nearer threshold.
    ///
    /// | # | case/variant   | transformation       | p s→v     | routes          | margin | status        |
    /// |---|----------------|----------------------|-----------|-----------------|--------|---------------|
    /// | 1 | c1/para        | paraphrase           | .30→.32   | pass→pass       | .25    | pass          |
    /// | 2 | c2/noise       | add-irrelevant-field | .53→.57   | pass→review  F  | .02 B  | fail          |
    /// | 3 | c3/para        | paraphrase           | .97→.96   | action→action   | .07    | fail (Δc .2)  |
    /// | 4 | c3/noise       | add-irrelevant-field | .88→.91   | review→action F | .02 B  | fail          |
    /// | 5 | c4/para        | paraphrase           | .62→.77   | review→review   | .07    | fail (Δp .15) |
    /// | 6 | c1/ablate      | remove-evidence      | .95→.45   | action→pass  F  | .05    | pass (n-m-u)  |
    /// | 7 | c4/ablate      | remove-evidence      | .40→.48   | pass→pass       | .15    | fail (n-m-u)  |
    /// | 8 | c7/noise       | add-irrelevant-field | .20→ —    | pass→ —         | .35    | service error |
    /// | 9 | c5/noise       | add-irrelevant-field | .20→.22   | pass→pass       | .35    | invalid       |
    /// |10 | c6/para rep 0  | paraphrase           | .30→.31   | pass→pass       | .25    | pass          |
    /// |11 | c6/para rep 1  | paraphrase           | .30→.45   | pass→pass       | .25    | fail (Δp .15) |
    /// |12 | c6/para rep 2  | paraphrase           | .30→.33   | pass→pass       | .25    | pass          |
    ///
    /// F = route flip, B = near boundary (margin < 0.05). Families: question
    /// (1, 3, 5, 10–12), state-noise (2, 4, 8), evidence-ablation (6, 7), none (9).
    /// Pair 8's variant timed out; pair 9's variant also changed the undeclared
    /// `state.a`. A malformed line is skipped as a problem.
    fn fixture_lines() -> Vec<Value> {
        let q = Some("question");
        let n = Some("state-noise");
        let e = Some("evidence-ablation");
        let (para, noise, ablate) = ("paraphrase", "add-irrelevant-field", "remove-evidence");
        let mut p8 = pair("c7", "noise", n, noise, INVARIANT, (0.20, 0.8), (0.0, 0.0));
        p8["variant"].as_object_mut().map(|o| o.remove("response"));
        p8["variant"]["outcome"] = json!("timeout");
        p8["variant"]["latency_ms"] = json!(30000);
        let mut p9 = pair(
            "c5",
            "noise",
            None,
            noise,
            INVARIANT,
            (0.20, 0.8),
            (0.22, 0.8),
        );
        p9["variant"]["state"] = json!({"a": 2, "theme": "dark"});
        let rep = |r: u64, pv: f64| {
            let mut v = pair("c6", "para", q, para, INVARIANT, (0.30, 0.8), (pv, 0.8));
            v["repetition"] = json!(r);
            v
        };
        vec![
            pair("c1", "para", q, para, INVARIANT, (0.30, 0.8), (0.32, 0.8)),
            pair("c2", "noise", n, noise, INVARIANT, (0.53, 0.8), (0.57, 0.7)),
            pair("c3", "para", q, para, INVARIANT, (0.97, 0.9), (0.96, 0.7)),
            pair("c3", "noise", n, noise, INVARIANT, (0.88, 0.8), (0.91, 0.8)),
            pair("c4", "para", q, para, INVARIANT, (0.62, 0.6), (0.77, 0.65)),
            pair(
                "c1",
                "ablate",
                e,
                ablate,
                NOT_MORE,
                (0.95, 0.8),
                (0.45, 0.8),
            ),
            pair(
                "c4",
                "ablate",
                e,
                ablate,
                NOT_MORE,
                (0.40, 0.8),
                (0.48, 0.8),
            ),
            p8,
            p9,
            rep(0, 0.31),
            rep(1, 0.45),
            rep(2, 0.33),
        ]
    }

    struct Fixture {
        index: RunIndex,
        store: AnnotationStore,
        rows: Vec<u32>,
        _dir: tempfile::TempDir,
    }

    /// Load the fixture and classify pair 2 as distractor, pair 4 as
    /// boundary and pair 8 as service-error; pair 1 (a pass) gets only a note.
    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run.jsonl");
        let mut f = std::fs::File::create(&run).unwrap();
        for (i, v) in fixture_lines().iter().enumerate() {
            if i == 3 {
                writeln!(f, "{{not json").unwrap();
            }
            writeln!(f, "{v}").unwrap();
        }
        drop(f);
        let mut index = load_run(
            &[run.to_string_lossy().to_string()],
            &OpenOptions::default(),
        )
        .unwrap();
        assert_eq!(index.rows.len(), 12);
        let keys: Vec<_> = (0..12).map(|i| index.key_of(i).unwrap()).collect();
        let mut store =
            AnnotationStore::open(&dir.path().join("run.jsonl.triage.jsonl"), "t").unwrap();
        let change = |i: usize, category: Option<&str>, note: Option<&str>| {
            let r = &index.rows[i];
            Change {
                key: keys[i],
                case_id: index.str(r.case).to_string(),
                variant_id: index.str(r.variant).to_string(),
                category: category.map(str::to_string),
                note: note.map(str::to_string),
                source: AnnotationSource::Manual,
            }
        };
        store
            .apply(vec![
                change(1, Some("distractor"), None),
                change(3, Some("boundary"), None),
                change(7, Some("service-error"), None),
                change(0, None, Some("looks fine")),
            ])
            .unwrap();
        let rows = (0..12).collect();
        Fixture {
            index,
            store,
            rows,
            _dir: dir,
        }
    }

    /// Groups are counted by interned id and named at the end: a family
    /// spelled like the placeholder of a missing one is the same group.
    #[test]
    fn groups_of_one_name_are_one_group() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run.jsonl");
        let mut f = std::fs::File::create(&run).unwrap();
        for (i, family) in [Some(NOT_RECORDED), None, Some("x"), None]
            .iter()
            .enumerate()
        {
            let mut l = json!({"case_id": format!("c{i}"), "variant_id": "v", "passed": i % 2 == 0,
                "source": {"probability": 0.1 * i as f64}, "variant": {"probability": 0.5}});
            if let Some(fam) = family {
                l["family"] = json!(fam);
            }
            writeln!(f, "{l}").unwrap();
        }
        drop(f);
        let index = load_run(
            &[run.to_string_lossy().to_string()],
            &OpenOptions::default(),
        )
        .unwrap();
        let s = summarize(&index, &[0, 1, 2, 3], None, GroupBy::Family);
        let names: Vec<(&str, u64, u64)> = s
            .groups
            .iter()
            .map(|g| (g.name.as_str(), g.pairs, g.failures))
            .collect();
        assert_eq!(names, [(NOT_RECORDED, 3, 2), ("x", 1, 0)]);
        let nr = &s.groups[0];
        // |Δp| of 0.5, 0.4 and 0.2: the median and maximum of all three.
        assert_eq!((nr.median_abs_dp, nr.max_abs_dp), (Some(0.4), Some(0.5)));
    }

    #[test]
    fn fixture_rows_are_as_designed() {
        let fx = fixture();
        let st: Vec<Status> = fx.index.rows.iter().map(|r| r.status()).collect();
        use Status::*;
        assert_eq!(
            st,
            [
                Pass,
                Fail,
                Fail,
                Fail,
                Fail,
                Pass,
                Fail,
                ServiceError,
                Invalid,
                Pass,
                Fail,
                Pass
            ]
        );
        let flips: Vec<usize> = (0..12)
            .filter(|&i| fx.index.rows[i].has(flags::FLIP))
            .collect();
        assert_eq!(flips, [1, 3, 5]);
        let near: Vec<usize> = (0..12)
            .filter(|&i| fx.index.rows[i].has(flags::NEAR_BOUNDARY))
            .collect();
        assert_eq!(near, [1, 3]);
        assert_eq!(fx.index.rows[7].variant_route(), None);
        assert_eq!(fx.index.rows[8].validity(), ValidityCode::Invalid);
        assert_eq!(fx.index.rows[10].repetition, 1);
        assert_eq!(fx.index.rows[0].repetition, u32::MAX);
    }

    #[test]
    fn summary_by_transformation_matches_hand_counts() {
        let fx = fixture();
        let s = summarize(
            &fx.index,
            &fx.rows,
            Some(&fx.store),
            GroupBy::Transformation,
        );
        // Failures: pairs 2, 3, 4, 5, 7, 8, 9, 11 = 8 of 12.
        assert_eq!(
            (s.pairs, s.failures, s.problems, s.classified),
            (12, 8, 1, 3)
        );
        assert_eq!(s.by, GroupBy::Transformation);
        let names: Vec<&str> = s.groups.iter().map(|g| g.name.as_str()).collect();
        // Sorted by failures: 4, 3, 1.
        assert_eq!(
            names,
            ["add-irrelevant-field", "paraphrase", "remove-evidence"]
        );

        let o = &s.overall;
        assert_eq!(o.name, "all");
        assert_eq!((o.pairs, o.failures), (12, 8));
        // 8/12 = 0.667, Wilson [0.391, 0.862].
        assert_eq!(show(&o.failure_rate), "0.667 [0.391, 0.862]");
        // Both routes known: every pair but 8 → 11; flips 2, 4, 6 → 3/11.
        assert_eq!(o.route_flips, 3);
        assert_eq!(show(&o.route_flip_rate), "0.273 [0.097, 0.566]");
        // Invariant pairs: all but 6, 7 = 10; minus 9 (invalid) and 8 (service
        // error) = 8 trials; fails among them: 2, 3, 4, 5, 11 = 5 → 5/8.
        assert_eq!(show(&o.invariant_violation_rate), "0.625 [0.306, 0.863]");
        // Boundary: 2 and 4, both with both routes, both flipped → 2/2.
        assert_eq!(o.boundary_pairs, 2);
        assert_eq!(show(&o.boundary_flip_rate), "1.000 [0.342, 1.000]");
        // Service error: 8 → 1/12; invalid: 9.
        assert_eq!(o.service_errors, 1);
        assert_eq!(show(&o.service_error_rate), "0.083 [0.015, 0.354]");
        assert_eq!(o.invalid_pairs, 1);
        // |Δp| of the 11 recorded: .01 .01 .02 .02 .03 .03 .04 .08 .15 .15 .50;
        // the 6th is the median.
        assert_close(o.median_abs_dp, 0.03);
        assert_close(o.max_abs_dp, 0.5);
        // |Δc|: eight 0s, .05 (5), .1 (2), .2 (3) → median 0, max .2.
        assert_close(o.median_abs_dc, 0.0);
        assert_close(o.max_abs_dc, 0.2);
        // Classified failures: 2, 4, 8 (pair 1's note is on a pass, without category).
        assert_eq!(o.classified, 3);

        let g = &s.groups[0];
        // add-irrelevant-field: pairs 2, 4, 8, 9.
        assert_eq!(g.pairs, 4);
        assert_eq!(g.failures, 4);
        assert_eq!(show(&g.failure_rate), "1.000 [0.510, 1.000]");
        // Both routes: 2, 4, 9; flips 2, 4 → 2/3.
        assert_eq!(g.route_flips, 2);
        assert_eq!(show(&g.route_flip_rate), "0.667 [0.208, 0.939]");
        // Invariant trials: 2, 4 (9 invalid, 8 service error) → 2/2 fail.
        assert_eq!(show(&g.invariant_violation_rate), "1.000 [0.342, 1.000]");
        assert_eq!(g.boundary_pairs, 2);
        assert_eq!(show(&g.boundary_flip_rate), "1.000 [0.342, 1.000]");
        assert_eq!(g.service_errors, 1);
        assert_eq!(show(&g.service_error_rate), "0.250 [0.046, 0.699]");
        assert_eq!(g.invalid_pairs, 1);
        // |Δp|: .02 .03 .04 → median .03, max .04; |Δc|: 0 0 .1 → median 0, max .1.
        assert_close(g.median_abs_dp, 0.03);
        assert_close(g.max_abs_dp, 0.04);
        assert_close(g.median_abs_dc, 0.0);
        assert_close(g.max_abs_dc, 0.1);
        assert_eq!(g.classified, 3);

        let g = &s.groups[1];
        // paraphrase: pairs 1, 3, 5, 10, 11, 12; failures 3, 5, 11.
        assert_eq!((g.pairs, g.failures, g.route_flips), (6, 3, 0));
        assert_eq!(show(&g.failure_rate), "0.500 [0.188, 0.812]");
        // 0 flips of 6 with both routes.
        assert_eq!(show(&g.route_flip_rate), "0.000 [0.000, 0.390]");
        assert_eq!(show(&g.invariant_violation_rate), "0.500 [0.188, 0.812]");
        // Margins .25, .07, .07, .25, .25, .25: none under 0.05.
        assert_eq!(g.boundary_pairs, 0);
        assert_eq!(g.boundary_flip_rate, None);
        assert_eq!(g.service_errors, 0);
        assert_eq!(show(&g.service_error_rate), "0.000 [0.000, 0.390]");
        assert_eq!(g.invalid_pairs, 0);
        // |Δp|: .01 .01 .02 .03 .15 .15 → (.02 + .03) / 2 = .025; max .15.
        assert_close(g.median_abs_dp, 0.025);
        assert_close(g.max_abs_dp, 0.15);
        // |Δc|: 0 0 0 0 .05 .2 → median 0, max .2.
        assert_close(g.median_abs_dc, 0.0);
        assert_close(g.max_abs_dc, 0.2);
        assert_eq!(g.classified, 0);

        let g = &s.groups[2];
        // remove-evidence: pairs 6 (flip, pass) and 7 (fail); not invariant, no minimum margin.
        assert_eq!((g.pairs, g.failures, g.route_flips), (2, 1, 1));
        assert_eq!(show(&g.failure_rate), "0.500 [0.095, 0.905]");
        assert_eq!(show(&g.route_flip_rate), "0.500 [0.095, 0.905]");
        assert_eq!(g.invariant_violation_rate, None);
        assert_eq!((g.boundary_pairs, g.boundary_flip_rate), (0, None));
        assert_eq!(show(&g.service_error_rate), "0.000 [0.000, 0.658]");
        // |Δp|: .08, .50 → median .29, max .5; |Δc| 0, 0.
        assert_close(g.median_abs_dp, 0.29);
        assert_close(g.max_abs_dp, 0.5);
        assert_close(g.median_abs_dc, 0.0);
        assert_close(g.max_abs_dc, 0.0);

        // Groups add up to the whole.
        let sum = |f: fn(&GroupStats) -> u64| s.groups.iter().map(f).sum::<u64>();
        assert_eq!(sum(|g| g.pairs), 12);
        assert_eq!(sum(|g| g.failures), 8);
        assert_eq!(sum(|g| g.route_flips), 3);

        // [source][variant]: pass→pass 1, 7, 9, 10, 11, 12 = 6; pass→review 2;
        // review→review 5; review→action 4; action→pass 6; action→action 3.
        assert_eq!(s.route_matrix, [[6, 1, 0], [0, 1, 1], [1, 0, 1]]);
        assert_eq!(
            s.route_matrix[usize::from(Route::Action.rank())][usize::from(Route::Pass.rank())],
            1
        );

        // |Δp| buckets: [0, .05) .01 .01 .02 .02 .03 .03 .04 = 7; [.05, .1) .08;
        // [.15, .2) .15 .15 (an edge goes up); [.45, ∞) .50.
        let counts: Vec<u64> = s.dp_histogram.iter().map(|b| b.count).collect();
        assert_eq!(counts, [7, 1, 0, 2, 0, 0, 0, 0, 0, 1]);
        assert_eq!(s.dp_histogram.len(), 10);
        assert_close(Some(s.dp_histogram[3].low), 0.15);
        assert_close(s.dp_histogram[3].high, 0.2);
        assert_close(Some(s.dp_histogram[9].low), 0.45);
        assert_eq!(s.dp_histogram[9].high, None);

        let cats = |v: &[(&str, u64)]| -> Vec<(String, u64)> {
            v.iter().map(|(c, n)| (c.to_string(), *n)).collect()
        };
        assert_eq!(
            s.categories_by_transformation,
            vec![
                (
                    "add-irrelevant-field".to_string(),
                    cats(&[
                        ("boundary", 1),
                        ("distractor", 1),
                        ("service-error", 1),
                        ("unclassified", 1)
                    ])
                ),
                ("paraphrase".to_string(), cats(&[("unclassified", 3)])),
                ("remove-evidence".to_string(), cats(&[("unclassified", 1)])),
            ]
        );

        // Cases c1..c7. Failing: c2, c3, c4, c5, c6, c7 → 6/7 (c1 passed twice).
        // Flipping: c1 (6), c2 (2), c3 (4) → 3 of the 6 cases with both routes
        // known somewhere (c7's only pair timed out).
        assert_eq!(
            s.case_level,
            CaseLevel {
                cases: 7,
                failing_cases: 6,
                failing_case_rate: wilson(6, 7),
                flipping_cases: 3,
                flipping_case_rate: wilson(3, 6),
            }
        );
        assert_eq!(
            show(&s.case_level.failing_case_rate),
            "0.857 [0.487, 0.974]"
        );

        // c6/para ran as repetitions 0, 1, 2: pass, fail, pass.
        assert_eq!(
            s.repetition,
            Some(Repetition {
                pairs_with_repetition: 3,
                max_repetition: 2,
                repeated_pair_ids: 1,
                inconsistent_pair_ids: 1,
            })
        );
    }

    #[test]
    fn other_groupings() {
        let fx = fixture();
        let s = summarize(&fx.index, &fx.rows, Some(&fx.store), GroupBy::Category);
        let got: Vec<(&str, u64, u64, u64)> = s
            .groups
            .iter()
            .map(|g| (g.name.as_str(), g.pairs, g.failures, g.classified))
            .collect();
        // Unclassified failures: 3, 5, 7, 9, 11; passes 1, 6, 10, 12.
        assert_eq!(
            got,
            [
                ("unclassified", 5, 5, 0),
                ("boundary", 1, 1, 1),
                ("distractor", 1, 1, 1),
                ("service-error", 1, 1, 1),
                ("passed", 4, 0, 0),
            ]
        );
        // Without a store every failure is unclassified.
        let s = summarize(&fx.index, &fx.rows, None, GroupBy::Category);
        assert_eq!(s.classified, 0);
        assert_eq!(s.groups[0].name, "unclassified");
        assert_eq!(s.groups[0].failures, 8);

        let s = summarize(&fx.index, &fx.rows, None, GroupBy::Family);
        let got: Vec<(&str, u64, u64)> = s
            .groups
            .iter()
            .map(|g| (g.name.as_str(), g.pairs, g.failures))
            .collect();
        // question 6 pairs / 3 failures ties state-noise 3 / 3: by name.
        assert_eq!(
            got,
            [
                ("question", 6, 3),
                ("state-noise", 3, 3),
                ("evidence-ablation", 2, 1),
                ("not recorded", 1, 1),
            ]
        );

        let s = summarize(&fx.index, &fx.rows, None, GroupBy::Case);
        let got: Vec<(&str, u64, u64)> = s
            .groups
            .iter()
            .map(|g| (g.name.as_str(), g.pairs, g.failures))
            .collect();
        assert_eq!(
            got,
            [
                ("c3", 2, 2),
                ("c4", 2, 2),
                ("c2", 1, 1),
                ("c5", 1, 1),
                ("c6", 3, 1),
                ("c7", 1, 1),
                ("c1", 2, 0),
            ]
        );
    }

    #[test]
    fn a_subset_and_bad_indices() {
        let fx = fixture();
        // Only the paraphrases of c6, plus indices past the end (skipped).
        let s = summarize(&fx.index, &[9, 10, 11, 12, 4000], None, GroupBy::Family);
        assert_eq!((s.pairs, s.failures), (3, 1));
        assert_eq!(s.case_level.cases, 1);
        assert_eq!(s.repetition.unwrap().inconsistent_pair_ids, 1);
        // Only the first repetition: repetitions are recorded but none repeats here.
        let s = summarize(&fx.index, &[9], None, GroupBy::Family);
        assert_eq!(s.repetition, None);
        let s = summarize(&fx.index, &[11], None, GroupBy::Family);
        assert_eq!(
            s.repetition,
            Some(Repetition {
                pairs_with_repetition: 1,
                max_repetition: 2,
                repeated_pair_ids: 0,
                inconsistent_pair_ids: 0,
            })
        );
        // Nothing at all.
        let s = summarize(&fx.index, &[], None, GroupBy::Transformation);
        assert_eq!((s.pairs, s.failures, s.groups.len()), (0, 0, 0));
        assert_eq!(s.overall.failure_rate, None);
        assert_eq!(s.overall.median_abs_dp, None);
        assert_eq!(s.case_level.failing_case_rate, None);
        assert!(s.dp_histogram.iter().all(|b| b.count == 0));
        assert_eq!(
            conclusion(&fx.index, &[], &s),
            [
                "No pairs to summarise.",
                "1 line could not be read and is left out of every count."
            ]
        );
        let empty = RunIndex::default();
        let s = summarize(&empty, &[0, 1], None, GroupBy::Case);
        assert_eq!(s.pairs, 0);
        assert_eq!(conclusion(&empty, &[0, 1], &s), ["No pairs to summarise."]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Trials found case by case count as a table of every trial counts
        /// them, for any rows in any order.
        #[test]
        fn repeated_trials_count_as_a_table_of_trials_does(
            lines in proptest::collection::vec((0..4u8, 0..3u8, 0..2u8, proptest::bool::ANY), 1..40),
            pick in proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 0..50),
        ) {
            let text: String = lines
                .iter()
                .map(|&(c, v, m, pass)| {
                    let drift = if pass { 0.31 } else { 0.6 };
                    let mut l = pair(&format!("c{c}"), &format!("v{v}"), Some("question"), "paraphrase", INVARIANT, (0.3, 0.8), (drift, 0.8));
                    l["model_id"] = json!(format!("m{m}"));
                    format!("{l}\n")
                })
                .collect();
            let mut f = tempfile::NamedTempFile::new().unwrap();
            f.write_all(text.as_bytes()).unwrap();
            let index = load_run(&[f.path().to_string_lossy().to_string()], &OpenOptions::default()).unwrap();
            // Some rows in any order, and an index past the end.
            let mut rows: Vec<u32> = pick.iter().map(|i| i.index(lines.len()) as u32).collect();
            rows.sort_unstable();
            rows.dedup();
            let mut order: Vec<u32> = rows.iter().rev().copied().collect();
            order.push(lines.len() as u32 + 5);
            let mut table: HashMap<(Sym, Sym, Sym), (u64, bool, bool)> = HashMap::new();
            for &i in &order {
                if let Some(r) = index.rows.get(i as usize) {
                    let t = table.entry((r.case, r.variant, index.model(r))).or_default();
                    t.0 += 1;
                    t.1 |= r.status() == Status::Pass;
                    t.2 |= r.status() == Status::Fail;
                }
            }
            let repeated = table.values().filter(|t| t.0 > 1).count() as u64;
            let inconsistent = table.values().filter(|t| t.0 > 1 && t.1 && t.2).count() as u64;
            let s = summarize(&index, &order, None, GroupBy::Family);
            let got = s.repetition.map_or((0, 0), |r| (r.repeated_pair_ids, r.inconsistent_pair_ids));
            proptest::prop_assert_eq!(got, (repeated, inconsistent));
        }
    }

    #[test]
    fn repetitions_are_per_model_and_ignore_service_errors() {
        let mut base = pair(
            "c",
            "v",
            Some("question"),
            "paraphrase",
            INVARIANT,
            (0.3, 0.8),
            (0.31, 0.8),
        );
        base["model_id"] = json!("m1");
        let mut lines = Vec::new();
        // m1: pass, pass, timeout → repeated, consistent (a timeout is no verdict).
        lines.push(base.clone());
        lines.push(base.clone());
        let mut timeout = base.clone();
        timeout["variant"]["outcome"] = json!("timeout");
        lines.push(timeout);
        // m2 (a different model): pass once, and one fail once → not repeats of m1.
        let mut m2 = base.clone();
        m2["model_id"] = json!("m2");
        lines.push(m2.clone());
        let mut m3 = base.clone();
        m3["model_id"] = json!("m3");
        m3["variant"]["response"]["probability"] = json!(0.6);
        lines.push(m3);
        let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        let index = load_run(
            &[f.path().to_string_lossy().to_string()],
            &OpenOptions::default(),
        )
        .unwrap();
        let rows: Vec<u32> = (0..5).collect();
        let s = summarize(&index, &rows, None, GroupBy::Transformation);
        assert_eq!(
            s.repetition,
            Some(Repetition {
                pairs_with_repetition: 0,
                max_repetition: 0,
                repeated_pair_ids: 1,
                inconsistent_pair_ids: 0,
            })
        );
        let c = conclusion(&index, &rows, &s);
        assert!(
            c.contains(
                &"Repeated trials: none of the 1 repeated pair changed between pass and fail."
                    .to_string()
            ),
            "{c:#?}"
        );
    }

    #[test]
    fn conclusion_of_the_fixture() {
        let fx = fixture();
        let s = summarize(
            &fx.index,
            &fx.rows,
            Some(&fx.store),
            GroupBy::Transformation,
        );
        let c = conclusion(&fx.index, &fx.rows, &s);
        assert_eq!(
            c,
            [
                "12 pairs, 8 failures: failure rate 0.667 [0.391, 0.862].",
                "With only 12 pairs the intervals are wide: read their bounds, not just the rates.",
                "Invariant violation rate: 5 of 8 valid invariant pairs broke the expected relation (0.625 [0.306, 0.863]).",
                // Pairs 2 and 4: margins .02 and .02, both fail.
                "2 route flips came from add-irrelevant-field, both within 0.02 of a threshold; both broke their expectation.",
                // Pair 6: margin |.95 − .9| = .05, a permitted not-more-urgent drop.
                "1 route flip came from remove-evidence, within 0.05 of a threshold; it was allowed by its expectation.",
                "2 pairs have sources closer to a threshold than their minimum boundary margin; 2 of the 2 with both routes known flipped route (1.000 [0.342, 1.000]).",
                "Service errors (1) are counted apart from robustness failures.",
                "1 invalid pair changed undeclared facts: fix the test, not the model.",
                "Failures touch 6 of 7 source cases (0.857 [0.487, 0.974]); variants of one case are correlated, so cases, not pairs, are the independent evidence.",
                "Repeated trials: 1 pair disagrees with itself across repetitions.",
                "3 of 8 failures are classified; 5 still need a category.",
                "1 line could not be read and is left out of every count.",
            ]
        );
        // The same input gives the same sentences.
        assert_eq!(conclusion(&fx.index, &fx.rows, &s), c);
    }

    #[test]
    fn margin_and_verdict_clauses() {
        let f = |n: u64, failed: u64, passed: u64, margins: &[u64]| Flips {
            n,
            failed,
            passed,
            margins: margins.to_vec(),
        };
        assert_eq!(
            margin_clause(&f(3, 3, 0, &[10_000, 40_000, 50_000])).as_deref(),
            Some("all within 0.05 of a threshold")
        );
        assert_eq!(
            margin_clause(&f(1, 1, 0, &[100_000])).as_deref(),
            Some("within 0.1 of a threshold")
        );
        assert_eq!(
            margin_clause(&f(2, 1, 1, &[200_000, 300_000])).as_deref(),
            Some("none within 0.1 of a threshold")
        );
        assert_eq!(
            margin_clause(&f(3, 0, 0, &[20_000, 300_000, 400_000])).as_deref(),
            Some("1 of them within 0.1 of a threshold")
        );
        // An unknown margin forbids "all" and "none".
        assert_eq!(
            margin_clause(&f(2, 0, 0, &[20_000])).as_deref(),
            Some("1 of them within 0.1 of a threshold")
        );
        assert_eq!(margin_clause(&f(2, 0, 0, &[200_000])), None);
        assert_eq!(margin_clause(&f(1, 0, 0, &[])), None);
        assert_eq!(
            verdict_clause(&f(3, 3, 0, &[])),
            "all broke their expectation"
        );
        assert_eq!(
            verdict_clause(&f(3, 0, 3, &[])),
            "all were allowed by their expectation"
        );
        assert_eq!(
            verdict_clause(&f(4, 1, 2, &[])),
            "1 of them broke their expectation"
        );
    }

    #[test]
    fn sample_run_totals_add_up() {
        let index = crate::core::index::sample::sample();
        let rows: Vec<u32> = (0..index.rows.len() as u32).collect();
        let failures = index
            .rows
            .iter()
            .filter(|r| r.status().is_failure())
            .count() as u64;
        let flips = index
            .rows
            .iter()
            .filter(|r| {
                r.has(flags::FLIP) && r.source_route().is_some() && r.variant_route().is_some()
            })
            .count() as u64;
        let known = index
            .rows
            .iter()
            .filter(|r| r.source_route().is_some() && r.variant_route().is_some())
            .count() as u64;
        for by in GroupBy::ALL {
            let s = summarize(&index, &rows, None, by);
            assert_eq!(s.pairs, 72, "{by:?}");
            assert_eq!(s.failures, failures, "{by:?}");
            assert_eq!(s.problems, 0);
            let sum = |f: fn(&GroupStats) -> u64| s.groups.iter().map(f).sum::<u64>();
            assert_eq!(sum(|g| g.pairs), 72, "{by:?}");
            assert_eq!(sum(|g| g.failures), failures, "{by:?}");
            assert_eq!(sum(|g| g.route_flips), flips, "{by:?}");
            assert_eq!(sum(|g| g.service_errors), s.overall.service_errors);
            assert_eq!(sum(|g| g.invalid_pairs), s.overall.invalid_pairs);
            assert_eq!(sum(|g| g.boundary_pairs), s.overall.boundary_pairs);
            assert_eq!(s.route_matrix.iter().flatten().sum::<u64>(), known);
            let with_dp = index.rows.iter().filter(|r| !r.dp.is_nan()).count() as u64;
            assert_eq!(s.dp_histogram.iter().map(|b| b.count).sum::<u64>(), with_dp);
            let cat_total: u64 = s
                .categories_by_transformation
                .iter()
                .flat_map(|(_, c)| c.iter().map(|x| x.1))
                .sum();
            assert_eq!(cat_total, failures);
            // Sorted by failures, then name.
            assert!(s.groups.windows(2).all(|w| {
                w[0].failures > w[1].failures
                    || (w[0].failures == w[1].failures && w[0].name < w[1].name)
            }));
            assert!(!conclusion(&index, &rows, &s).is_empty());
            assert!(serde_json::to_string(&s).is_ok());
        }
        // The sample's README: 5 service errors, 3 invalid pairs.
        let s = summarize(&index, &rows, None, GroupBy::Transformation);
        assert_eq!(s.overall.service_errors, 5);
        assert_eq!(s.overall.invalid_pairs, 3);
    }

    #[test]
    fn serializes_with_lowercase_grouping() {
        assert_eq!(
            serde_json::to_value(GroupBy::Transformation).unwrap(),
            json!("transformation")
        );
        for by in GroupBy::ALL {
            assert_eq!(serde_json::to_value(by).unwrap(), json!(by.name()));
        }
        let r = wilson(1, 4).unwrap();
        let v = serde_json::to_value(r).unwrap();
        assert_eq!(v["successes"], json!(1));
        assert_eq!(v["trials"], json!(4));
    }

    mod arbitrary {
        use super::*;
        use crate::core::row::{Loc, OutcomeCode, PackedCodes, RowCodes};
        use proptest::prelude::*;

        fn float() -> impl Strategy<Value = f32> {
            prop_oneof![
                Just(f32::NAN),
                Just(f32::INFINITY),
                Just(f32::NEG_INFINITY),
                -1.0f32..1.0,
                any::<f32>(),
            ]
        }

        fn route() -> impl Strategy<Value = Option<Route>> {
            prop_oneof![
                Just(None),
                Just(Some(Route::Pass)),
                Just(Some(Route::Review)),
                Just(Some(Route::Action)),
            ]
        }

        fn sym() -> impl Strategy<Value = Sym> {
            prop_oneof![Just(NO_SYM), 0u32..4, any::<u32>()]
        }

        fn row() -> impl Strategy<Value = PairRow> {
            let status = prop_oneof![
                Just(Status::Invalid),
                Just(Status::ServiceError),
                Just(Status::Fail),
                Just(Status::Unchecked),
                Just(Status::Pass),
            ];
            let exp = prop_oneof![Just(ExpKind::Invariant), Just(ExpKind::NotLessUrgent)];
            let validity = prop_oneof![
                Just(ValidityCode::Valid),
                Just(ValidityCode::Invalid),
                Just(ValidityCode::NotRecorded),
            ];
            let repetition = prop_oneof![Just(u32::MAX), 0u32..3, any::<u32>()];
            (
                (sym(), sym(), sym(), sym(), sym()),
                (status, any::<u8>(), route(), route()),
                (float(), float(), float()),
                (exp, validity, repetition, 0u8..3),
            )
                .prop_map(
                    |(
                        (case, variant, transformation, family, model),
                        (status, flags, source_route, variant_route),
                        (dp, dc, margin),
                        (expectation, validity, repetition, _),
                    )| PairRow {
                        loc: Loc::new(0, 1, 0, 0),
                        case,
                        variant,
                        transformation,
                        family,
                        dp,
                        dc,
                        margin,
                        variant_margin: f32::NAN,
                        latency: f32::NAN,
                        // The model sym, made a versions id in the test.
                        versions: model,
                        repetition,
                        codes: PackedCodes::pack(RowCodes {
                            status,
                            flags,
                            source_route,
                            variant_route,
                            expectation,
                            source_outcome: OutcomeCode::Ok,
                            variant_outcome: OutcomeCode::Ok,
                            validity,
                            suggestion: None,
                        }),
                    },
                )
        }

        fn sane(r: &Option<Rate>) -> bool {
            r.is_none_or(|r| {
                r.successes <= r.trials
                    && 0.0 <= r.low
                    && r.low <= r.value
                    && r.value <= r.high
                    && r.high <= 1.0
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]

            /// Any rows, any indices: no panic, and the parts add up to the whole.
            #[test]
            fn any_rows_summarise_without_panic(
                rows in proptest::collection::vec(row(), 0..40),
                picks in proptest::collection::vec(0u32..50, 0..60),
                by in prop_oneof![
                    Just(GroupBy::Transformation),
                    Just(GroupBy::Family),
                    Just(GroupBy::Category),
                    Just(GroupBy::Case),
                ],
            ) {
                let mut index = RunIndex::default();
                index.rows = rows;
                for i in 0..index.rows.len() {
                    let model = index.rows[i].versions;
                    index.rows[i].versions = index.versions_id([NO_SYM, NO_SYM, model]);
                }
                let s = summarize(&index, &picks, None, by);
                // Counted on two threads, the same summary.
                prop_assert_eq!(&summarize_on(&index, &picks, None, by, true), &s);
                let valid = picks.iter().filter(|&&i| (i as usize) < index.rows.len()).count();
                prop_assert_eq!(s.pairs, valid as u64);
                prop_assert_eq!(s.groups.iter().map(|g| g.pairs).sum::<u64>(), s.pairs);
                prop_assert_eq!(s.groups.iter().map(|g| g.failures).sum::<u64>(), s.failures);
                prop_assert!(s.dp_histogram.iter().map(|b| b.count).sum::<u64>() <= s.pairs);
                prop_assert!(s.route_matrix.iter().flatten().sum::<u64>() <= s.pairs);
                for g in s.groups.iter().chain(std::iter::once(&s.overall)) {
                    for r in [
                        &g.failure_rate,
                        &g.route_flip_rate,
                        &g.invariant_violation_rate,
                        &g.boundary_flip_rate,
                        &g.service_error_rate,
                    ] {
                        prop_assert!(sane(r), "{:?}", r);
                    }
                    prop_assert!(g.median_abs_dp.is_none_or(|m| m.is_finite() && m >= 0.0));
                    prop_assert!(g.median_abs_dp <= g.max_abs_dp);
                }
                prop_assert!(sane(&s.case_level.failing_case_rate));
                prop_assert!(sane(&s.case_level.flipping_case_rate));
                prop_assert!(serde_json::to_string(&s).is_ok());
                let c = conclusion(&index, &picks, &s);
                prop_assert!(!c.is_empty());
            }

            #[test]
            fn any_wilson_is_sane(k in any::<u64>(), n in any::<u64>()) {
                let r = wilson(k, n);
                prop_assert_eq!(r.is_some(), n > 0 && k <= n);
                prop_assert!(sane(&r));
            }
        }
    }
}
