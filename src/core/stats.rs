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

use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::annotations::AnnotationStore;
use super::derive::{Status, ValidityCode};
use super::index::RunIndex;
use super::index::inputs::InputWarnings;
use super::row::{ExpKind, NO_SYM, PairRow, Sym, flags};
use kept::{Kept, Values};

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

/// A difference of two proportions with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Difference {
    /// The first proportion minus the second.
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

impl Difference {
    /// Signed, at three decimals: "-0.250 [-0.480, -0.010]".
    pub fn display(&self) -> String {
        format!("{:+.3} [{:+.3}, {:+.3}]", self.value, self.low, self.high)
    }

    /// Whether the interval leaves out zero: the two proportions differ
    /// by more than chance at the 95% level.
    pub fn excludes_zero(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
    }
}

/// `a − b` with Newcombe's hybrid score interval (Newcombe 1998, "Interval
/// estimation for the difference between independent proportions", method
/// 10): each proportion's Wilson interval, without continuity correction,
/// combined as `δ − √((a − lₐ)² + (u_b − b)²)` to `δ + √((uₐ − a)² + (b −
/// l_b)²)`. It keeps within [−1, 1] and stays sound at 0 and n, where the
/// textbook Wald interval collapses.
pub fn newcombe(a: &Rate, b: &Rate) -> Difference {
    let value = a.value - b.value;
    let low = value - ((a.value - a.low).powi(2) + (b.high - b.value).powi(2)).sqrt();
    let high = value + ((a.high - a.value).powi(2) + (b.value - b.low).powi(2)).sqrt();
    Difference {
        value,
        low: low.max(-1.0),
        high: high.min(1.0),
    }
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
    /// The model id: the provider for promptfoo, the model for Inspect,
    /// multivon and native runs.
    Model,
}

impl GroupBy {
    /// Every grouping, in the order a view cycles through them.
    pub const ALL: [GroupBy; 5] = [
        GroupBy::Transformation,
        GroupBy::Family,
        GroupBy::Category,
        GroupBy::Case,
        GroupBy::Model,
    ];

    /// The lowercase name, as serialized.
    pub fn name(self) -> &'static str {
        match self {
            GroupBy::Transformation => "transformation",
            GroupBy::Family => "family",
            GroupBy::Category => "category",
            GroupBy::Case => "case",
            GroupBy::Model => "model",
        }
    }
}

/// The statistics of one group of pairs.
///
/// Two kinds of numbers sit side by side. The triage counts (`pairs`,
/// `failures`, `failure_rate`, `service_errors`, `invalid_pairs`,
/// `classified`) cover every pair: each failure needs a reviewer. The model
/// metrics (route flips, invariant violations, boundary pairs and flips,
/// drift) cover only the pairs that test the model ([`tests_model`]): an
/// invalid pair faults the test, not the model (seed 001), and a service
/// error says nothing about the model's decision (seed 000, section 8).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupStats {
    /// The group's name as recorded ("not recorded", "unclassified", "passed" or "all").
    pub name: String,
    pub pairs: u64,
    /// Pairs whose status is a failure (fail, service error, invalid, or
    /// any other status that needs a reviewer's diagnosis).
    pub failures: u64,
    /// failures / pairs.
    pub failure_rate: Option<Rate>,
    /// Pairs whose status is fail: they broke their expectation.
    pub failed: u64,
    /// Pairs whose status is boundary: the only condition they broke is a
    /// source too close to a threshold (seed 000, section 4).
    pub boundary_observations: u64,
    /// Pairs that test the model: neither invalid nor a service error. Every
    /// model metric below counts among these.
    pub model_pairs: u64,
    /// Route flips among the model pairs with both routes known.
    pub route_flips: u64,
    /// Route flips / model pairs with both routes known.
    pub route_flip_rate: Option<Rate>,
    /// Among model pairs with an `invariant` expectation whose validity is
    /// not left unjudged: the share whose status is fail.
    pub invariant_violation_rate: Option<Rate>,
    /// Model pairs whose source margin is under their minimum boundary margin.
    pub boundary_pairs: u64,
    /// Route flips / boundary pairs with both routes known.
    pub boundary_flip_rate: Option<Rate>,
    pub service_errors: u64,
    /// Service errors / pairs, counted apart from robustness failures.
    pub service_error_rate: Option<Rate>,
    /// Pairs that changed facts they did not declare: test faults.
    pub invalid_pairs: u64,
    /// Model pairs whose validity nothing judged (no `allowed_changes`, or a
    /// validator's `unknown`): left out of the invariant violation rate.
    pub undeclared_pairs: u64,
    /// Median |Δp| over model pairs with both probabilities recorded.
    pub median_abs_dp: Option<f64>,
    pub max_abs_dp: Option<f64>,
    /// Median |Δc| over model pairs with both confidences recorded.
    pub median_abs_dc: Option<f64>,
    pub max_abs_dc: Option<f64>,
    /// The 50th and 95th percentiles of the pairs' latency, where recorded.
    pub latency: Option<Latency>,
    /// Failures that carry a reviewer's category.
    pub classified: u64,
}

/// Percentiles of the latency of a group's pairs, in milliseconds.
///
/// A pair's latency is the larger of its two recorded request latencies;
/// every pair with one counts, service errors included (a timeout's 30 s is
/// exactly what a p95 must show). The percentiles are nearest-rank: the
/// smallest recorded latency that at least p % of the pairs do not exceed,
/// so each is a latency some pair took.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    /// Pairs with a recorded latency.
    pub pairs: u64,
    pub p50_ms: f64,
    pub p95_ms: f64,
}

/// Per source case, so correlated variants are not mistaken for independent evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseLevel {
    /// Distinct source cases among the pairs.
    pub cases: u64,
    /// Cases with at least one pair that tests the model (see [`tests_model`]).
    pub model_cases: u64,
    /// Cases where a pair that tests the model broke its expectation.
    pub failing_cases: u64,
    /// failing_cases / model_cases.
    pub failing_case_rate: Option<Rate>,
    /// Cases with at least one route flip among the pairs that test the model.
    pub flipping_cases: u64,
    /// flipping_cases / cases with at least one such pair whose both routes are known.
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
    /// over the model pairs with both routes known.
    pub route_matrix: [[u64; 3]; 3],
    /// |Δp| of the model pairs in 10 buckets of 0.05 from 0; the last is
    /// open-ended (≥ 0.45).
    pub dp_histogram: Vec<Bucket>,
    /// Per transformation (most failures first, then by name), the failures per
    /// category id or "unclassified" (most first, then by name).
    pub categories_by_transformation: Vec<(String, Vec<(String, u64)>)>,
    pub case_level: CaseLevel,
    /// None when nothing repeats.
    pub repetition: Option<Repetition>,
    /// Cases whose pairs cannot be compared (seed 000, section 7): two
    /// policies mixed within one case, repetitions sent with regenerated
    /// inputs. (Shared by the summaries of one count: at ten million
    /// pairs there can be hundreds of thousands, put in words when read.)
    /// In the JSON, named by
    /// [`summary_json`](crate::core::export::summary_json), which has the
    /// index they name.
    #[serde(skip)]
    pub input_warnings: Arc<InputWarnings>,
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

/// A finite magnitude as kept for the medians and maxima: the bits of
/// `|x|` as an `f32` (four bytes a value), which order as the magnitudes
/// do. It is put in millionths ([`micros`]) once selected: rounding keeps
/// the order, so the value selected is the one that would be selected
/// among the rounded values.
fn magnitude(x: f32) -> Option<u32> {
    x.is_finite().then(|| x.abs().to_bits())
}

/// A [`magnitude`] in millionths.
fn magnitude_micros(bits: u32) -> u64 {
    micros(f32::from_bits(bits)).unwrap_or(0)
}

/// The median of [`magnitude`]s in millionths (the mean of the two middle
/// ones for an even count): a value [`widen`]ed is its millionths over a
/// million, so this is the median of the widened values.
fn median_micros(v: &Values) -> Option<f64> {
    let value = |m: u32| magnitude_micros(m) as f64 / MICRO;
    let (lower, upper) = v.middles()?;
    Some(if lower == upper {
        value(upper)
    } else {
        (value(lower) + value(upper)) / 2.0
    })
}

/// The largest of [`magnitude`]s, as a value in whole millionths.
fn max_micros(v: &Values) -> Option<f64> {
    v.max().map(|m| magnitude_micros(m) as f64 / MICRO)
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

/// Whether a pair tests the model: it is not invalid (its variant changed
/// facts it did not declare, which faults the test pair, not the model:
/// seed 001) and had no service error (a failed request says nothing about
/// the model's decision: seed 000, section 8). Only such pairs feed the model
/// metrics: route flips, invariant violations, boundary pairs, drift, the
/// route matrix, the histogram and the failing cases.
pub fn tests_model(row: &PairRow) -> bool {
    !matches!(row.status(), Status::Invalid | Status::ServiceError)
}

/// Whether a pair that tests the model counts among the valid equivalent
/// variants of the invariant violation rate (seed 000, section 8): its
/// expectation is `invariant`, and its validity is not left unjudged by a
/// missing `allowed_changes`. A pair that records no payloads at all (the
/// reference runner's own rows) has nothing to compare, and counts as the
/// run declares it.
fn counts_as_valid_invariant(row: &PairRow) -> bool {
    // A boundary observation is counted in the boundary columns (its source
    // is near a threshold), never as an invariant trial (seed 000 §4); a
    // validator that could not decide leaves the pair unjudged (seed 004).
    row.expectation() == ExpKind::Invariant
        && !validity_unjudged(row)
        && row.status() != Status::Boundary
}

/// Whether nothing judged the pair's validity: it declares no allowed
/// changes, or its validator could not decide (seed 004's `unknown`).
fn validity_unjudged(row: &PairRow) -> bool {
    matches!(
        row.validity(),
        ValidityCode::Undeclared | ValidityCode::Unknown
    )
}

/// A stored latency in whole thousandths of a millisecond; a missing,
/// infinite or negative one is none.
fn latency_units(ms: f32) -> Option<u64> {
    (ms.is_finite() && ms >= 0.0).then(|| (f64::from(ms) * LATENCY_UNITS).round() as u64)
}

/// Latencies are kept in thousandths of a millisecond, so that a recorded
/// 1197.3 ms is reported as 1197.3 and not 1197.300048828125.
const LATENCY_UNITS: f64 = 1e3;

/// A latency as kept for the percentiles: the bits of a finite,
/// non-negative `f32`, which order as the latencies do; put in
/// [`LATENCY_UNITS`] once selected ([`latency_units`] keeps the order).
fn latency_bits(ms: f32) -> Option<u32> {
    // (`abs` makes -0 the bits of 0.)
    (ms.is_finite() && ms >= 0.0).then(|| ms.abs().to_bits())
}

/// The latency percentiles of a group's latencies ([`latency_bits`]).
fn latency_of(v: &Values) -> Option<Latency> {
    let ms = |x: u32| latency_units(f32::from_bits(x)).unwrap_or(0) as f64 / LATENCY_UNITS;
    let p50 = v.nearest_rank(50)?;
    let p95 = v.nearest_rank(95)?;
    Some(Latency {
        pairs: v.len() as u64,
        p50_ms: ms(p50),
        p95_ms: ms(p95),
    })
}

/// Running counts of one group.
#[derive(Debug, Default)]
struct Acc {
    pairs: u64,
    failures: u64,
    failed: u64,
    boundary_observations: u64,
    model_pairs: u64,
    with_routes: u64,
    flips: u64,
    invariant_trials: u64,
    invariant_violations: u64,
    boundary: u64,
    boundary_with_routes: u64,
    boundary_flips: u64,
    service_errors: u64,
    invalid: u64,
    undeclared: u64,
    /// |Δp| and |Δc| as [`magnitude`]s: a quarter the size of `f64`s, and
    /// selected faster for the medians (at ten million pairs, the groups of
    /// each of two groupings hold one of each a pair). The whole's stay
    /// empty: its medians are selected from a grouping's values.
    abs_dp: Kept,
    abs_dc: Kept,
    /// Latencies as [`latency_bits`].
    latencies: Kept,
    classified: u64,
}

/// What [`Acc::add`] reads of a row besides its codes, computed once per row.
#[derive(Debug, Clone, Copy)]
struct Measures {
    /// |Δp| and |Δc| (see [`magnitude`]).
    dp: Option<u32>,
    dc: Option<u32>,
    /// The latency (see [`latency_bits`]).
    latency: Option<u32>,
}

impl Measures {
    /// None kept (the whole's: a grouping keeps them).
    const NONE: Measures = Measures {
        dp: None,
        dc: None,
        latency: None,
    };

    fn of(row: &PairRow) -> Measures {
        Measures {
            dp: magnitude(row.dp),
            dc: magnitude(row.dc),
            latency: latency_bits(row.latency),
        }
    }
}

impl Acc {
    /// Count `row`, whose measures are `m`.
    fn add(&mut self, row: &PairRow, category: Option<&str>, m: Measures) {
        self.pairs += 1;
        let failed = row.status().is_failure();
        if failed {
            self.failures += 1;
            if category.is_some() {
                self.classified += 1;
            }
        }
        match row.status() {
            Status::ServiceError => self.service_errors += 1,
            Status::Invalid => self.invalid += 1,
            Status::Fail => self.failed += 1,
            Status::Boundary => self.boundary_observations += 1,
            _ => {}
        }
        self.latencies.extend(m.latency);
        if !tests_model(row) {
            return;
        }
        self.model_pairs += 1;
        if validity_unjudged(row) {
            self.undeclared += 1;
        }
        let known = both_routes(row);
        let flip = known && row.has(flags::FLIP);
        if known {
            self.with_routes += 1;
        }
        if flip {
            self.flips += 1;
        }
        if counts_as_valid_invariant(row) {
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
        self.abs_dp.extend(m.dp);
        self.abs_dc.extend(m.dc);
    }

    fn merge(&mut self, o: Acc) {
        if self.pairs == 0 {
            *self = o;
            return;
        }
        self.pairs += o.pairs;
        self.failures += o.failures;
        self.failed += o.failed;
        self.boundary_observations += o.boundary_observations;
        self.model_pairs += o.model_pairs;
        self.with_routes += o.with_routes;
        self.flips += o.flips;
        self.invariant_trials += o.invariant_trials;
        self.invariant_violations += o.invariant_violations;
        self.boundary += o.boundary;
        self.boundary_with_routes += o.boundary_with_routes;
        self.boundary_flips += o.boundary_flips;
        self.service_errors += o.service_errors;
        self.invalid += o.invalid;
        self.undeclared += o.undeclared;
        self.abs_dp.append(o.abs_dp);
        self.abs_dc.append(o.abs_dc);
        self.latencies.append(o.latencies);
        self.classified += o.classified;
    }

    /// The group's statistics, its medians selected from its own values.
    fn finish(&self, name: &str) -> GroupStats {
        self.stats(
            name,
            [
                self.abs_dp.view(),
                self.abs_dc.view(),
                self.latencies.view(),
            ],
        )
    }

    /// The group's statistics, its medians, maxima and percentiles
    /// selected from `[|Δp|, |Δc|, latencies]`: its own, or for the whole,
    /// which keeps none, every group's of a grouping.
    fn stats(&self, name: &str, [abs_dp, abs_dc, latencies]: [Values<'_>; 3]) -> GroupStats {
        // A large group's selections on both cores: the whole's are made
        // while the groups' are.
        let large = abs_dp.is_large() || latencies.is_large();
        let ((median_abs_dp, median_abs_dc), latency) = maybe_join(
            large,
            || maybe_join(large, || median_micros(&abs_dp), || median_micros(&abs_dc)),
            || latency_of(&latencies),
        );
        GroupStats {
            name: name.to_string(),
            pairs: self.pairs,
            failures: self.failures,
            failure_rate: wilson(self.failures, self.pairs),
            failed: self.failed,
            boundary_observations: self.boundary_observations,
            model_pairs: self.model_pairs,
            route_flips: self.flips,
            route_flip_rate: wilson(self.flips, self.with_routes),
            invariant_violation_rate: wilson(self.invariant_violations, self.invariant_trials),
            boundary_pairs: self.boundary,
            boundary_flip_rate: wilson(self.boundary_flips, self.boundary_with_routes),
            service_errors: self.service_errors,
            service_error_rate: wilson(self.service_errors, self.pairs),
            invalid_pairs: self.invalid,
            undeclared_pairs: self.undeclared,
            max_abs_dp: max_micros(&abs_dp),
            median_abs_dp,
            max_abs_dc: max_micros(&abs_dc),
            median_abs_dc,
            latency,
            classified: self.classified,
        }
    }
}

/// What one source case showed.
#[derive(Debug, Default, Clone, Copy)]
struct CaseAcc {
    /// Its rows among those summarised.
    rows: u32,
    /// Whether a pair of it tests the model ([`tests_model`]); the other
    /// facts are of such pairs only.
    tested: bool,
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
            (r.variant, index.model(i as usize), r.status())
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
    summarize_each(index, rows, store, &[by])
        .pop()
        .expect("one summary for one grouping")
}

/// [`summarize`] under each grouping of `bys`, in order. What does not
/// depend on the grouping (the cases, repeated trials, unsafe approvals and
/// input warnings) is counted once for all of them: the summary screen
/// shows the run by transformation and by family.
pub fn summarize_each(
    index: &RunIndex,
    rows: &[u32],
    store: Option<&AnnotationStore>,
    bys: &[GroupBy],
) -> Vec<Summary> {
    summarize_on(index, rows, store, bys, rows.len() >= PARALLEL_SUMMARY_ROWS)
}

/// [`summarize_each`], counted on rayon's threads when `parallel`: the rows
/// in chunks of [`REST_CHUNK`], each thread into its own [`Rest`], while one
/// of them counts the cases and repeated trials.
fn summarize_on(
    index: &RunIndex,
    rows: &[u32],
    store: Option<&AnnotationStore>,
    bys: &[GroupBy],
    parallel: bool,
) -> Vec<Summary> {
    let case_level = || {
        let cases = count_cases(index, rows);
        let trials = repeated_trials(index, rows, &cases);
        (cases, trials)
    };
    // Every grouping in one pass over the rows: what they share (the
    // overall counts and medians, the matrix, the histogram) counted once.
    let rest = || {
        if parallel {
            count_rest_parallel(index, rows, store, bys)
        } else {
            let mut rest = Rest::default();
            rest.count(index, rows, store, bys);
            rest
        }
    };
    let (mut rest, (cases, trials)) = maybe_join(parallel, rest, case_level);
    // (No rows to count leaves no groups: each grouping has none.)
    rest.groupings.resize_with(bys.len(), Grouping::default);
    let groupings = std::mem::take(&mut rest.groupings);
    // Each grouping's groups named, then each group's medians selected on
    // its own thread, with the whole's, beside the unsafe approvals and the
    // input warnings (a pass each over the rows), rather than after them on
    // one core. The whole's are selected from the values of the grouping
    // with the fewest groups (by case, a grouping has one a case).
    let named: Vec<Vec<(&str, Acc)>> = groupings.into_iter().map(|g| g.named(index)).collect();
    let fewest = named.iter().min_by_key(|groups| groups.len());
    let ((shared, groupings), (unsafe_approvals, input_warnings)) = maybe_join(
        parallel,
        || {
            rayon::join(
                || rest.finish(fewest.map_or(&[], Vec::as_slice)),
                || {
                    use rayon::prelude::*;
                    named
                        .par_iter()
                        .map(|groups| finish_groups(groups))
                        .collect::<Vec<_>>()
                },
            )
        },
        || {
            maybe_join(
                parallel,
                || unsafe_approvals(index, rows),
                || index.input_warnings(rows),
            )
        },
    );
    // One list of warnings, shared by every summary.
    let input_warnings = std::iter::repeat_n(Arc::from(input_warnings), bys.len());
    bys.iter()
        .zip(groupings)
        .zip(input_warnings)
        .map(|((&by, groups), warnings)| {
            finish(
                index,
                by,
                groups,
                &shared,
                &cases,
                trials,
                unsafe_approvals,
                warnings,
            )
        })
        .collect()
}

/// `a` and `b`, on rayon's threads when `parallel`.
fn maybe_join<A: Send, B: Send>(
    parallel: bool,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if parallel {
        rayon::join(a, b)
    } else {
        (a(), b())
    }
}

/// The summary under grouping `by` from its groups' counts and what every
/// grouping shares.
#[allow(clippy::too_many_arguments)]
fn finish(
    index: &RunIndex,
    by: GroupBy,
    groups: Vec<GroupStats>,
    shared: &Shared,
    cases: &Cases,
    (repeated_pair_ids, inconsistent_pair_ids): (u64, u64),
    unsafe_approvals: Option<UnsafeApprovals>,
    input_warnings: Arc<InputWarnings>,
) -> Summary {
    let count =
        |f: fn(&CaseAcc) -> bool| cases.acc.iter().filter(|c| c.rows > 0 && f(c)).count() as u64;
    let model_cases = count(|c| c.tested);
    let failing_cases = count(|c| c.failed);
    let flipping_cases = count(|c| c.flipped);
    let case_level = CaseLevel {
        cases: count(|_| true),
        model_cases,
        failing_cases,
        failing_case_rate: wilson(failing_cases, model_cases),
        flipping_cases,
        flipping_case_rate: wilson(flipping_cases, count(|c| c.routes_known)),
    };

    let repetition = (repeated_pair_ids > 0 || shared.max_repetition > 0).then_some(Repetition {
        pairs_with_repetition: shared.pairs_with_repetition,
        max_repetition: shared.max_repetition,
        repeated_pair_ids,
        inconsistent_pair_ids,
    });

    let overall = shared.overall.clone();
    Summary {
        pairs: overall.pairs,
        failures: overall.failures,
        problems: index.problem_counts().skipped(),
        classified: overall.classified,
        by,
        overall,
        groups,
        route_matrix: shared.matrix,
        dp_histogram: shared.dp_histogram.clone(),
        categories_by_transformation: shared.categories_by_transformation.clone(),
        case_level,
        repetition,
        unsafe_approvals,
        input_warnings,
    }
}

/// What every grouping's summary shares, finished once.
struct Shared {
    overall: GroupStats,
    matrix: [[u64; 3]; 3],
    dp_histogram: Vec<Bucket>,
    categories_by_transformation: Vec<(String, Vec<(String, u64)>)>,
    pairs_with_repetition: u64,
    max_repetition: u32,
}

/// Summaries over this many rows are counted on rayon's threads.
const PARALLEL_SUMMARY_ROWS: usize = 100_000;

/// What [`summarize`] counts row by row, besides the cases.
#[derive(Default)]
struct Rest<'a> {
    overall: Acc,
    /// The groups of each grouping counted, in the order asked.
    groupings: Vec<Grouping<'a>>,
    matrix: [[u64; 3]; 3],
    histogram: [u64; BUCKETS],
    categories: FxHashMap<&'a str, FxHashMap<&'a str, u64>>,
    pairs_with_repetition: u64,
    max_repetition: u32,
}

/// The groups of one grouping: by interned id (one look-up of a number
/// per row, named at the end), or by name (categories).
#[derive(Default)]
struct Grouping<'a> {
    by_id: FxHashMap<Sym, Acc>,
    by_name: FxHashMap<&'a str, Acc>,
}

impl<'a> Grouping<'a> {
    /// The group of row `i` under `by`.
    fn group(
        &mut self,
        index: &RunIndex,
        i: usize,
        row: &PairRow,
        category: Option<&'a str>,
        by: GroupBy,
    ) -> &mut Acc {
        match by {
            GroupBy::Transformation => self.by_id.entry(index.transformation(i)).or_default(),
            GroupBy::Family => self.by_id.entry(index.family(i)).or_default(),
            GroupBy::Case => self.by_id.entry(row.case).or_default(),
            GroupBy::Model => self.by_id.entry(index.model(i)).or_default(),
            GroupBy::Category if row.status().is_failure() => self
                .by_name
                .entry(category.unwrap_or(UNCLASSIFIED))
                .or_default(),
            GroupBy::Category => self.by_name.entry(PASSED).or_default(),
        }
    }

    /// The groups by name (ids named), in no order.
    fn named(self, index: &'a RunIndex) -> Vec<(&'a str, Acc)> {
        let mut named = self.by_name;
        for (id, acc) in self.by_id {
            named.entry(sym_name(index, id)).or_default().merge(acc);
        }
        named.into_iter().collect()
    }

    /// Add what `o` counted.
    fn merge(&mut self, o: Grouping<'a>) {
        for (id, acc) in o.by_id {
            self.by_id.entry(id).or_default().merge(acc);
        }
        for (name, acc) in o.by_name {
            self.by_name.entry(name).or_default().merge(acc);
        }
    }
}

/// The statistics of a grouping's groups ([`Grouping::named`]), each
/// finished on rayon's threads, sorted by failures (most first), then by
/// name.
fn finish_groups(named: &[(&str, Acc)]) -> Vec<GroupStats> {
    use rayon::prelude::*;
    let mut groups: Vec<GroupStats> = named
        .par_iter()
        .map(|(name, acc)| acc.finish(name))
        .collect();
    groups.sort_by(|a, b| {
        b.failures
            .cmp(&a.failures)
            .then_with(|| a.name.cmp(&b.name))
    });
    groups
}

impl<'a> Rest<'a> {
    /// Count `rows`, into the groups of each grouping of `bys`.
    fn count(
        &mut self,
        index: &'a RunIndex,
        rows: &[u32],
        store: Option<&'a AnnotationStore>,
        bys: &[GroupBy],
    ) {
        if self.groupings.len() < bys.len() {
            self.groupings.resize_with(bys.len(), Grouping::default);
        }
        // Groups by interned id (one look-up of a number per row), named at
        // the end; categories by name.
        for (i, row) in rows
            .iter()
            .filter_map(|&i| Some((i as usize, index.rows.get(i as usize)?)))
        {
            let category = index.failure_category(store, row);
            // Rounded once for every count that reads them.
            let m = Measures::of(row);
            // The whole keeps no values: its medians are selected from a
            // grouping's (see `Rest::finish`).
            self.overall.add(row, category, Measures::NONE);
            for (grouping, &by) in self.groupings.iter_mut().zip(bys) {
                grouping
                    .group(index, i, row, category, by)
                    .add(row, category, m);
            }

            // The route matrix and the histogram are model metrics too.
            if let (Some(s), Some(v), true) =
                (row.source_route(), row.variant_route(), tests_model(row))
            {
                self.matrix[usize::from(s.rank()).min(2)][usize::from(v.rank()).min(2)] += 1;
            }
            if let (Some(d), true) = (m.dp, tests_model(row)) {
                self.histogram[bucket_of(magnitude_micros(d))] += 1;
            }
            if row.status().is_failure() {
                *self
                    .categories
                    .entry(sym_name(index, index.transformation(i)))
                    .or_default()
                    .entry(category.unwrap_or(UNCLASSIFIED))
                    .or_default() += 1;
            }

            if let Some(rep) = index.repetition(i) {
                self.pairs_with_repetition += 1;
                self.max_repetition = self.max_repetition.max(rep);
            }
        }
    }

    /// Add what `o` counted.
    fn merge(&mut self, o: Rest<'a>) {
        self.overall.merge(o.overall);
        if self.groupings.len() < o.groupings.len() {
            self.groupings
                .resize_with(o.groupings.len(), Grouping::default);
        }
        for (mine, theirs) in self.groupings.iter_mut().zip(o.groupings) {
            mine.merge(theirs);
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

    /// What every grouping shares, finished (the groupings taken out first).
    /// The whole's medians are selected from the values of `groups`, a
    /// grouping's groups: each pair is in one group of a grouping, so their
    /// values are the whole's. (Without a grouping there is no summary.)
    fn finish(self, groups: &[(&str, Acc)]) -> Shared {
        let values = |of: fn(&Acc) -> &Kept| Values::union(groups.iter().map(|(_, a)| of(a)));
        let dp_histogram = self
            .histogram
            .iter()
            .enumerate()
            .map(|(i, &count)| Bucket {
                low: i as f64 * BUCKET_WIDTH,
                high: (i + 1 < BUCKETS).then(|| (i + 1) as f64 * BUCKET_WIDTH),
                count,
            })
            .collect();
        let mut categories_by_transformation: Vec<(String, Vec<(String, u64)>)> = self
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
        Shared {
            overall: self.overall.stats(
                "all",
                [
                    values(|a| &a.abs_dp),
                    values(|a| &a.abs_dc),
                    values(|a| &a.latencies),
                ],
            ),
            matrix: self.matrix,
            dp_histogram,
            categories_by_transformation,
            pairs_with_repetition: self.pairs_with_repetition,
            max_repetition: self.max_repetition,
        }
    }
}

/// Rows counted at a time by each thread of [`summarize_on`] (a few in
/// tests, so that a small run is counted in several chunks, by both threads).
pub(super) const REST_CHUNK: usize = if cfg!(test) { 3 } else { 16_384 };

/// Count `rows` in chunks of [`REST_CHUNK`] on rayon's threads, each into
/// its own [`Rest`], then add those up.
fn count_rest_parallel<'a>(
    index: &'a RunIndex,
    rows: &[u32],
    store: Option<&'a AnnotationStore>,
    bys: &[GroupBy],
) -> Rest<'a> {
    use rayon::prelude::*;
    rows.par_chunks(REST_CHUNK)
        // In tests every chunk is a job of its own, so the adding up is
        // tested however many threads there are.
        .with_max_len(if cfg!(test) { 1 } else { usize::MAX })
        .fold(Rest::default, |mut rest, chunk| {
            rest.count(index, chunk, store, bys);
            rest
        })
        .reduce(Rest::default, |mut a, b| {
            a.merge(b);
            a
        })
}

/// Each case's rows, and whether any of its pairs that test the model
/// broke its expectation, had both routes, flipped.
fn count_cases(index: &RunIndex, rows: &[u32]) -> Cases {
    let mut cases = Cases::new(index);
    for row in rows.iter().filter_map(|&i| index.rows.get(i as usize)) {
        let at = cases.slot(row.case);
        let c = &mut cases.acc[at];
        c.rows += 1;
        if !tests_model(row) {
            continue;
        }
        c.tested = true;
        c.failed |= row.status() == Status::Fail;
        c.routes_known |= both_routes(row);
        c.flipped |= both_routes(row) && row.has(flags::FLIP);
    }
    cases
}

pub use conclusion::conclusion;

mod conclusion;
mod kept;
pub mod table;

#[cfg(test)]
mod tests;
