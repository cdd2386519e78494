//! Facts computed for one pair: drift, routes, margins, the re-checked
//! expectation, validity and the pair's status.
//!
//! Nothing here trusts the runner blindly: routes are recomputed from the
//! policy and the expectation is checked again, and any disagreement with
//! what the file recorded becomes a visible warning. The effective verdict
//! fails a pair when either the runner or the re-check says it failed, so a
//! runner bug can never hide a failure.

use super::diff::{self, Change, DiffEntry, JsonPath};
use super::model::{AnswerFault, Expectation, PairRecord, Route, Side, fmt_num};

/// Where a pair stands after derivation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// The variant changed undeclared facts: the test is at fault.
    Invalid,
    /// A request failed, or an answer has no valid result: the pair says
    /// nothing about the model.
    ServiceError,
    /// The expectation was broken.
    Fail,
    /// The only broken condition is a source too close to a threshold:
    /// boundary sensitivity, not an invariant violation (seed 000, section 4).
    Boundary,
    /// Nothing says whether it passed (no verdict and no expectation).
    Unchecked,
    Pass,
}

impl Status {
    /// Every status, in the order of the enum.
    pub const ALL: [Status; 6] = [
        Status::Invalid,
        Status::ServiceError,
        Status::Fail,
        Status::Boundary,
        Status::Unchecked,
        Status::Pass,
    ];

    /// The short name used in queries and exports.
    pub fn name(self) -> &'static str {
        match self {
            Status::Invalid => "invalid",
            Status::ServiceError => "error",
            Status::Fail => "fail",
            Status::Boundary => "boundary",
            Status::Unchecked => "unchecked",
            Status::Pass => "pass",
        }
    }

    /// Whether the pair needs a reviewer's diagnosis.
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            Status::Invalid | Status::ServiceError | Status::Fail | Status::Boundary
        )
    }
}

/// How far a measured value may pass a bound before it counts as past it:
/// a drift of 0.1 computed as 0.10000000000000009 is within a tolerance of
/// 0.1, and a margin of 0.1 computed as 0.09999999999999998 is not under a
/// minimum of 0.1. (The seed runner compares the raw IEEE doubles.)
pub const TOLERANCE: f64 = 1e-12;

/// Whether a measured value is past an upper bound: `value > max`, with
/// [`TOLERANCE`].
pub fn exceeds(value: f64, max: f64) -> bool {
    value > max + TOLERANCE
}

/// Whether a source margin is under the minimum boundary margin:
/// `margin < min`, with [`TOLERANCE`].
pub fn under_margin(margin: f64, min: f64) -> bool {
    margin < min - TOLERANCE
}

/// Whether a recorded reason says the source was too close to a threshold,
/// as the seed runner writes it ("Source is too close to a decision
/// boundary: margin 0.010.") or as triage does.
pub fn is_boundary_reason(reason: &str) -> bool {
    [
        "too close to a decision boundary",
        "too close to a threshold",
    ]
    .iter()
    .any(|needle| contains_ignore_case(reason, needle))
}

/// Whether `hay` contains the lowercase ASCII `needle`, ignoring ASCII case.
fn contains_ignore_case(hay: &str, needle: &str) -> bool {
    hay.as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Whether the variant changed only what it declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Validity {
    /// Every change is declared in `allowed_changes`.
    Valid,
    /// Some changes were not declared: the pair is invalid.
    Invalid { unexpected: Vec<String> },
    /// The pair declares no `allowed_changes`, so validity cannot be judged.
    Undeclared,
    /// The payloads were not recorded, so nothing can be compared.
    NotRecorded,
    /// A validator recorded that it could not decide (`validation_status:
    /// unknown`): neither valid nor invalid.
    Unknown,
}

/// The transformation, as recorded or as inferred from the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transformation {
    pub name: String,
    pub inferred: bool,
}

/// What the variant changed, with each changed path sorted into permitted or not.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    pub question_changed: bool,
    pub state: Vec<DiffEntry>,
    pub permitted: Vec<String>,
    pub unexpected: Vec<String>,
}

/// All derived facts of one pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Derived {
    /// Variant minus source probability.
    pub dp: Option<f64>,
    /// Variant minus source confidence.
    pub dc: Option<f64>,
    /// The policy's route when a policy and a probability are recorded,
    /// else the recorded one: every check, count and filter uses it.
    pub source_route: Option<Route>,
    pub variant_route: Option<Route>,
    /// The policy's routes, when a policy and a probability are recorded.
    pub computed_source_route: Option<Route>,
    pub computed_variant_route: Option<Route>,
    pub source_margin: Option<f64>,
    pub variant_margin: Option<f64>,
    /// Source margin under `minimum_boundary_margin` (see [`under_margin`]);
    /// when the margin cannot be computed, true if a recorded reason says
    /// the source was too close to a threshold.
    pub near_boundary: Option<bool>,
    pub flip: Option<bool>,
    /// The expectation re-checked: the list of broken conditions.
    pub check: Option<Vec<String>>,
    /// The effective verdict (false when either runner or re-check failed it).
    pub verdict: Option<bool>,
    pub service_error: bool,
    pub validity: Validity,
    pub changes: Changes,
    pub transformation: Transformation,
    pub status: Status,
    /// Disagreements between the file and the re-computation, and field problems.
    pub warnings: Vec<String>,
    /// One line, in plain words, of why the pair failed (or that it passed).
    pub why: String,
    /// How many of the first lines of `check` `why` already says.
    pub why_checks: usize,
}

impl Derived {
    /// The lines of the re-check that [`Derived::why`] does not already
    /// say, for a view that shows both.
    pub fn further_checks(&self) -> &[String] {
        let check = self.check.as_deref().unwrap_or_default();
        check.get(self.why_checks..).unwrap_or_default()
    }
}

/// Compute every derived fact of a pair.
pub fn derive(r: &PairRecord) -> Derived {
    derive_with(r, None)
}

/// [`derive()`], with the diff of the two states already computed (the
/// loader's fast path diffs them from their raw text); `None` diffs
/// `r.source.state` against `r.variant.state` as [`derive()`] does.
pub fn derive_with(r: &PairRecord, state_diff: Option<Vec<DiffEntry>>) -> Derived {
    let mut warnings: Vec<String> = r.field_warnings.clone();
    let n = numbers(r);
    for (side, recorded, computed, p) in [
        (
            "source",
            r.source.route,
            n.computed_source_route,
            r.source.probability,
        ),
        (
            "variant",
            r.variant.route,
            n.computed_variant_route,
            r.variant.probability,
        ),
    ] {
        if let (Some(rec), Some(comp), Some(p)) = (recorded, computed, p)
            && route_mismatch(recorded, computed)
        {
            warnings.push(format!(
                "The {side} route was recorded as {rec}, but the policy routes p = {} to {comp}.",
                fmt_num(p)
            ));
        }
    }

    let faults = SideFaults::of(r);
    let service_error = faults.any();

    let mut fails = Vec::new();
    let mut broken = BrokenKinds::default();
    let checked = check_expectation(r, &n, |b| {
        broken.note(&b);
        fails.push(b.message());
    });
    // A pair whose request or answer failed is not judged by its
    // expectation: its check is what failed.
    let check = if service_error {
        Some(faults.sentences())
    } else {
        checked.then_some(fails)
    };
    let checked_pass = check.as_ref().map(|c| c.is_empty());
    let (verdict, runner_disagrees) = verdict(r.passed, checked_pass);
    if let Some(rec) = runner_disagrees {
        warnings.push(if rec {
            "The runner recorded a pass, but re-checking the expectation fails it.".to_string()
        } else {
            "The runner recorded a failure, but re-checking the expectation passes it.".to_string()
        });
    }

    let changes = compute_changes(r, state_diff);
    let validity = judge_validity(r, &changes);
    if let Validity::Invalid { unexpected } = &validity
        && unexpected.is_empty()
    {
        warnings.push(RECORDED_INVALID.to_string());
    } else if let Validity::Invalid { unexpected } = &validity {
        warnings.push(format!(
            "Invalid pair: the variant changed undeclared {}: {}.",
            if unexpected.len() == 1 {
                "path"
            } else {
                "paths"
            },
            unexpected.join(", ")
        ));
    }
    let (name, inferred) = transformation_of(r, changes.question_changed, &changes.state);
    let transformation = Transformation {
        name: name.to_string(),
        inferred,
    };

    let status = status_of(
        matches!(validity, Validity::Invalid { .. }),
        service_error,
        verdict,
        boundary_only(r, &n, broken),
    );

    let (why, why_checks) = why_line(r, status, &validity, check.as_deref());
    Derived {
        dp: n.dp,
        dc: n.dc,
        source_route: n.source_route,
        variant_route: n.variant_route,
        computed_source_route: n.computed_source_route,
        computed_variant_route: n.computed_variant_route,
        source_margin: n.source_margin,
        variant_margin: n.variant_margin,
        near_boundary: n.near_boundary,
        flip: n.flip,
        check,
        verdict,
        service_error,
        validity,
        changes,
        transformation,
        status,
        warnings,
        why,
        why_checks,
    }
}

/// The numbers and routes of a pair: drift, routes (the policy's, else
/// recorded), margins, whether the source is near a threshold and whether
/// the route flipped.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Numbers {
    dp: Option<f64>,
    dc: Option<f64>,
    computed_source_route: Option<Route>,
    computed_variant_route: Option<Route>,
    source_route: Option<Route>,
    variant_route: Option<Route>,
    source_margin: Option<f64>,
    variant_margin: Option<f64>,
    near_boundary: Option<bool>,
    flip: Option<bool>,
}

fn numbers(r: &PairRecord) -> Numbers {
    // A side whose request failed, or whose answer has no valid result,
    // gives no number and no route: the pair says nothing about the model.
    fn usable(side: &Side) -> Option<&Side> {
        (!side_failed(side)).then_some(side)
    }
    let (source, variant) = (usable(&r.source), usable(&r.variant));
    let ps = source.and_then(|s| s.probability);
    let pv = variant.and_then(|s| s.probability);
    let computed_source_route = r.policy.zip(ps).map(|(pol, p)| pol.route(p));
    let computed_variant_route = r.policy.zip(pv).map(|(pol, p)| pol.route(p));
    // The policy's route is the one the thresholds give; a recorded route
    // that disagrees is a runner bug (a warning), and is used only where
    // nothing can be recomputed.
    let source_route = computed_source_route.or(source.and_then(|s| s.route));
    let variant_route = computed_variant_route.or(variant.and_then(|s| s.route));
    let source_margin = r.policy.zip(ps).map(|(pol, p)| pol.margin(p));
    Numbers {
        dp: ps.zip(pv).map(|(a, b)| b - a),
        dc: source
            .and_then(|s| s.confidence)
            .zip(variant.and_then(|s| s.confidence))
            .map(|(a, b)| b - a),
        computed_source_route,
        computed_variant_route,
        source_route,
        variant_route,
        source_margin,
        variant_margin: r.policy.zip(pv).map(|(pol, p)| pol.margin(p)),
        near_boundary: match source_margin.zip(r.minimum_boundary_margin) {
            Some((m, min)) => Some(under_margin(m, min)),
            // Without a margin, the runner's own reason is the evidence.
            None => r
                .reasons
                .iter()
                .any(|x| is_boundary_reason(x))
                .then_some(true),
        },
        flip: source_route.zip(variant_route).map(|(a, b)| a != b),
    }
}

/// Whether a recorded route disagrees with the policy's (a warning).
fn route_mismatch(recorded: Option<Route>, computed: Option<Route>) -> bool {
    recorded.zip(computed).is_some_and(|(a, b)| a != b)
}

/// Whether a side's request failed (what [`Side::failure_phrase`] puts in
/// words), or its answer has no valid result ([`Side::answer_fault`]).
fn side_failed(side: &Side) -> bool {
    side.outcome.as_ref().is_some_and(|o| !o.is_ok()) || side.answer_fault().is_some()
}

/// What failed on each side: a request, or an answer with no valid result.
struct SideFaults {
    source: Option<SideFault>,
    variant: Option<SideFault>,
}

enum SideFault {
    /// The request failed; [`Side::failure_phrase`].
    Request(String),
    /// The request gave an answer with no valid result.
    Answer(AnswerFault),
}

impl SideFaults {
    fn of(r: &PairRecord) -> SideFaults {
        let one = |side: &Side| match side.failure_phrase() {
            Some(phrase) => Some(SideFault::Request(phrase)),
            None => side.answer_fault().map(SideFault::Answer),
        };
        SideFaults {
            source: one(&r.source),
            variant: one(&r.variant),
        }
    }

    fn any(&self) -> bool {
        self.source.is_some() || self.variant.is_some()
    }

    /// One sentence per side that failed, source first.
    fn sentences(&self) -> Vec<String> {
        [("source", &self.source), ("variant", &self.variant)]
            .into_iter()
            .filter_map(|(side, f)| f.as_ref().map(|f| f.sentence(side)))
            .collect()
    }
}

impl SideFault {
    fn sentence(&self, side: &str) -> String {
        match self {
            SideFault::Request(phrase) => format!("The {side} request {phrase}."),
            SideFault::Answer(fault) => fault.message(side),
        }
    }
}

/// Which kinds of condition the re-check found broken.
#[derive(Debug, Clone, Copy, Default)]
struct BrokenKinds {
    margin: bool,
    other: bool,
}

impl BrokenKinds {
    fn note(&mut self, b: &Broken<'_>) {
        if matches!(b, Broken::TooClose { .. }) {
            self.margin = true;
        } else {
            self.other = true;
        }
    }
}

/// Whether a failure is boundary sensitivity alone (seed 000, section 4):
/// the source is near a threshold, the re-check or the runner's reasons
/// say so, and neither names any other broken condition.
fn boundary_only(r: &PairRecord, n: &Numbers, broken: BrokenKinds) -> bool {
    let recorded_margin = r.reasons.iter().any(|x| is_boundary_reason(x));
    let recorded_other = r.reasons.iter().any(|x| !is_boundary_reason(x));
    n.near_boundary == Some(true)
        && (broken.margin || recorded_margin)
        && !broken.other
        && !recorded_other
}

/// The effective verdict from the runner's and the re-check's, and, when
/// they disagree, what the runner recorded (a warning).
fn verdict(recorded: Option<bool>, checked_pass: Option<bool>) -> (Option<bool>, Option<bool>) {
    match (recorded, checked_pass) {
        (Some(a), Some(b)) => (Some(a && b), (a != b).then_some(a)),
        (a, b) => (a.or(b), None),
    }
}

/// Where a pair stands: an undeclared change beats a failed request, which
/// beats the verdict; a failure whose only cause is the boundary margin is
/// a boundary observation.
fn status_of(
    invalid: bool,
    service_error: bool,
    verdict: Option<bool>,
    boundary_only: bool,
) -> Status {
    if invalid {
        Status::Invalid
    } else if service_error {
        Status::ServiceError
    } else {
        match verdict {
            Some(true) => Status::Pass,
            Some(false) if boundary_only => Status::Boundary,
            Some(false) => Status::Fail,
            None => Status::Unchecked,
        }
    }
}

/// One condition of an expectation that a pair broke, before it is put in words.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Broken<'a> {
    TooClose { margin: f64, min: f64 },
    ProbabilityDrift { drift: f64, max: f64 },
    ConfidenceDrift { drift: f64, max: f64 },
    RouteMoved { from: Route, to: Route },
    Fell { by: f64, permitted: f64 },
    Rose { by: f64, permitted: f64 },
    RouteNotAllowed { route: Route, allowed: &'a [Route] },
}

impl Broken<'_> {
    fn message(&self) -> String {
        match *self {
            Broken::TooClose { margin, min } => format!(
                "The source is too close to a threshold: margin {} < {}.",
                fmt3(margin),
                fmt_num(min)
            ),
            Broken::ProbabilityDrift { drift, max } => format!(
                "Probability drift {} exceeds the allowed {}.",
                fmt3(drift),
                fmt_num(max)
            ),
            Broken::ConfidenceDrift { drift, max } => format!(
                "Confidence drift {} exceeds the allowed {}.",
                fmt3(drift),
                fmt_num(max)
            ),
            Broken::RouteMoved { from, to } => format!(
                "The route moved from {from} to {to}; the expectation requires the same route."
            ),
            Broken::Fell { by, permitted } => format!(
                "The probability fell by {}, more than the permitted {}.",
                fmt3(by),
                fmt_num(permitted)
            ),
            Broken::Rose { by, permitted } => format!(
                "The probability rose by {}, more than the permitted {}.",
                fmt3(by),
                fmt_num(permitted)
            ),
            Broken::RouteNotAllowed { route, allowed } => format!(
                "The variant route {route} is not among the allowed routes ({}).",
                allowed
                    .iter()
                    .map(|r| r.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// Re-check the recorded expectation, calling `broken` for every condition
/// it breaks, in order; false when there is nothing to check.
fn check_expectation<'a>(
    r: &'a PairRecord,
    n: &Numbers,
    mut broken: impl FnMut(Broken<'a>),
) -> bool {
    let Some(exp) = r.expectation.as_ref() else {
        return false;
    };
    match exp {
        Expectation::Invariant {
            max_probability_drift,
            max_confidence_drift,
            require_same_route,
        } => {
            // The reference runner treats a source too close to a threshold as
            // a failure of the invariant test; so do we, to agree with it.
            if let (Some(m), Some(min)) = (n.source_margin, r.minimum_boundary_margin)
                && under_margin(m, min)
            {
                broken(Broken::TooClose { margin: m, min });
            }
            if let (Some(d), Some(max)) = (n.dp, max_probability_drift)
                && exceeds(d.abs(), *max)
            {
                broken(Broken::ProbabilityDrift {
                    drift: d.abs(),
                    max: *max,
                });
            }
            if let (Some(d), Some(max)) = (n.dc, max_confidence_drift)
                && exceeds(d.abs(), *max)
            {
                broken(Broken::ConfidenceDrift {
                    drift: d.abs(),
                    max: *max,
                });
            }
            if *require_same_route
                && let (Some(a), Some(b)) = (n.source_route, n.variant_route)
                && a != b
            {
                broken(Broken::RouteMoved { from: a, to: b });
            }
        }
        Expectation::NotLessUrgent {
            permitted_probability_movement: m,
        } => {
            if let Some(d) = n.dp
                && exceeds(-d, *m)
            {
                broken(Broken::Fell {
                    by: -d,
                    permitted: *m,
                });
            }
        }
        Expectation::NotMoreUrgent {
            permitted_probability_movement: m,
        } => {
            if let Some(d) = n.dp
                && exceeds(d, *m)
            {
                broken(Broken::Rose {
                    by: d,
                    permitted: *m,
                });
            }
        }
        Expectation::AllowedRoutes { allowed_routes } => {
            if let Some(v) = n.variant_route
                && !allowed_routes.contains(&v)
            {
                broken(Broken::RouteNotAllowed {
                    route: v,
                    allowed: allowed_routes,
                });
            }
        }
        Expectation::Unknown { .. } => return false,
    }
    true
}

/// What the index keeps of a pair's derivation: the same facts [`derive()`]
/// computes, decided by the same rules, but without building any message,
/// path string or copy of the diff (see [`lean`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Lean {
    pub dp: Option<f64>,
    pub dc: Option<f64>,
    pub source_route: Option<Route>,
    pub variant_route: Option<Route>,
    pub source_margin: Option<f64>,
    pub variant_margin: Option<f64>,
    pub near_boundary: Option<bool>,
    pub flip: Option<bool>,
    pub status: Status,
    pub validity: ValidityCode,
    /// The inferred transformation name; `None` when the record names it.
    pub inferred_transformation: Option<&'static str>,
    /// [`Transformation::inferred`].
    pub inferred: bool,
    /// Whether [`Derived::warnings`] is non-empty.
    pub warnings: bool,
    /// The runner's verdict disagrees with the re-check.
    pub passed_mismatch: bool,
    /// A recorded route disagrees with the policy's.
    pub route_mismatch: bool,
    /// [`Changes::question_changed`].
    pub question_changed: bool,
    /// [`Changes::state`]; from [`lean_on`], empty unless something read it
    /// (the validity, an inferred transformation, a failure's suggestion).
    pub state: Vec<DiffEntry>,
}

impl Lean {
    /// The transformation name, as [`Transformation::name`] has it.
    pub fn transformation<'a>(&self, r: &'a PairRecord) -> &'a str {
        match self.inferred_transformation {
            Some(name) => name,
            None => r.transformation.as_deref().unwrap_or(NOT_RECORDED),
        }
    }
}

/// The facts of [`derive_with`] that the index keeps, without their words.
pub fn lean(r: &PairRecord, state_diff: Option<Vec<DiffEntry>>) -> Lean {
    lean_with(r, false, || state_diff, true)
}

/// [`lean`], with the state's diff (`diff`, as `lean` takes it) made only
/// when something reads it: the validity, unless `covered` says that
/// `allowed_changes` permits every state member that differs as a whole
/// (see [`member_permitted`]); a transformation the record does not name;
/// a failure's suggestion. When nothing does, [`Lean::state`] is empty.
pub fn lean_on(
    r: &PairRecord,
    covered: bool,
    diff: impl FnOnce() -> Option<Vec<DiffEntry>>,
) -> Lean {
    lean_with(r, covered, diff, false)
}

/// [`lean_on`]; with `always`, the state's changes are made whatever reads
/// them.
fn lean_with(
    r: &PairRecord,
    covered: bool,
    diff: impl FnOnce() -> Option<Vec<DiffEntry>>,
    always: bool,
) -> Lean {
    let n = numbers(r);
    let route_mismatch = route_mismatch(r.source.route, n.computed_source_route)
        || route_mismatch(r.variant.route, n.computed_variant_route);
    let service_error = side_failed(&r.source) || side_failed(&r.variant);
    let mut broken = BrokenKinds::default();
    let checked = check_expectation(r, &n, |b| broken.note(&b));
    // A failed request or answer is what its check says.
    let checked_pass = if service_error {
        Some(false)
    } else {
        checked.then_some(!broken.margin && !broken.other)
    };
    let (verdict, runner_disagrees) = verdict(r.passed, checked_pass);

    let question_changed = question_changed(r);
    let mut diff = Some(diff);
    let mut state: Option<Vec<DiffEntry>> = None;
    let validity = validity_code(r, || {
        (question_changed && !permitted(r, Changed::Question))
            || (!covered && state_unexpected(r, changes_of(r, &mut state, &mut diff)))
    });
    let invalid = validity == ValidityCode::Invalid;
    let (inferred_transformation, inferred) = match &r.transformation {
        Some(_) => (None, false),
        None => {
            let name =
                infer_transformation(r, question_changed, changes_of(r, &mut state, &mut diff));
            (Some(name), name != NOT_RECORDED)
        }
    };
    let status = status_of(
        invalid,
        service_error,
        verdict,
        boundary_only(r, &n, broken),
    );
    // The suggestion reads the changes of a failure only.
    if always || status.is_failure() {
        changes_of(r, &mut state, &mut diff);
    }
    Lean {
        dp: n.dp,
        dc: n.dc,
        source_route: n.source_route,
        variant_route: n.variant_route,
        source_margin: n.source_margin,
        variant_margin: n.variant_margin,
        near_boundary: n.near_boundary,
        flip: n.flip,
        status,
        validity,
        inferred_transformation,
        inferred,
        warnings: !r.field_warnings.is_empty()
            || route_mismatch
            || runner_disagrees.is_some()
            || invalid,
        passed_mismatch: runner_disagrees.is_some(),
        route_mismatch,
        question_changed,
        state: state.unwrap_or_default(),
    }
}

/// The state's changes, made from `diff` the first time they are asked for.
fn changes_of<'s, F: FnOnce() -> Option<Vec<DiffEntry>>>(
    r: &PairRecord,
    state: &'s mut Option<Vec<DiffEntry>>,
    diff: &mut Option<F>,
) -> &'s [DiffEntry] {
    state.get_or_insert_with(|| state_changes(r, diff.take().and_then(|f| f())))
}

/// Whether `allowed_changes` permits every change inside the state member
/// `key` (a change at `state.<key>` or below it): some entry names it or a
/// path above it.
pub fn member_permitted(r: &PairRecord, key: &str) -> bool {
    permitted(r, Changed::Member(key))
}

/// Whether some change of the state is not declared in `allowed_changes`.
fn state_unexpected(r: &PairRecord, state: &[DiffEntry]) -> bool {
    state
        .iter()
        .filter(|e| changes_facts(&e.change))
        .any(|e| !permitted(r, Changed::Path(&e.path.0)))
}

/// Whether a change alters the canonical JSON value, which validity
/// compares (seed 001): every change but an object's keys in another
/// order. Array order is fixed, so elements moved are a change.
fn changes_facts(change: &Change) -> bool {
    !matches!(change, Change::Reordered { .. })
}

/// Whether some entry of `allowed_changes` permits a change at `path`.
fn permitted(r: &PairRecord, path: Changed) -> bool {
    r.allowed_changes
        .iter()
        .flatten()
        .any(|s| allowed_covers(s, path))
}

/// A changed path: the question, or a place in the state.
#[derive(Debug, Clone, Copy)]
enum Changed<'a> {
    Question,
    Path(&'a [diff::Seg]),
    /// `state.<key>`.
    Member(&'a str),
}

impl Changed<'_> {
    /// The key of segment `i`; `None` past the end, `Some(None)` for an index.
    fn key(&self, i: usize) -> Option<Option<&str>> {
        match self {
            Changed::Question => (i == 0).then_some(Some("question")),
            Changed::Path(segs) => segs.get(i).map(|s| match s {
                diff::Seg::Key(k) => Some(k.as_str()),
                diff::Seg::Index(_) => None,
            }),
            Changed::Member(k) => match i {
                0 => Some(Some("state")),
                1 => Some(Some(k)),
                _ => None,
            },
        }
    }

    fn seg_is(&self, i: usize, seg: &diff::Seg) -> bool {
        match (self, seg) {
            (Changed::Path(segs), _) => segs.get(i) == Some(seg),
            (Changed::Question, diff::Seg::Key(k)) => i == 0 && k == "question",
            (Changed::Question, diff::Seg::Index(_)) => false,
            (Changed::Member(k), diff::Seg::Key(s)) => match i {
                0 => s == "state",
                1 => s == k,
                _ => false,
            },
            (Changed::Member(_), diff::Seg::Index(_)) => false,
        }
    }
}

/// Whether the `allowed_changes` entry `entry` permits a change at `path`:
/// what [`allowed_paths`] and [`JsonPath::is_prefix_of`] decide, reading
/// the common dotted form (`state.evidence`, `uiTheme`) in place rather
/// than parsing it into a path.
fn allowed_covers(entry: &str, path: Changed) -> bool {
    // A dotted entry has no spaces to trim.
    let (s, dotted) = if is_dotted(entry) {
        (entry, true)
    } else {
        let s = entry.trim();
        (s, s.len() != entry.len() && is_dotted(s))
    };
    if dotted {
        // `state.<key>` as a path: `state` covers it, and so do `<key>` and
        // `state.<key>` when the key is one segment; a bare `question`
        // names the question, not `state.question`.
        if let Changed::Member(k) = path {
            return s == "state"
                || (!k.contains('.')
                    && ((s == k && k != "question") || s.strip_prefix("state.") == Some(k)));
        }
        let first = s.split_at(dot(s).unwrap_or(s.len())).0;
        let first_is_root = first == "state" || first == "question";
        (!first_is_root && path.key(0) == Some(Some("state")) && dotted_prefix(s, path, 1))
            || dotted_prefix(s, path, 0)
    } else {
        allowed_paths(entry)
            .iter()
            .any(|a| a.0.iter().enumerate().all(|(i, seg)| path.seg_is(i, seg)))
    }
}

/// Whether `s` is plain identifiers joined by dots, which
/// [`JsonPath::parse`] reads as those keys.
fn is_dotted(s: &str) -> bool {
    // Whether the next byte starts a key.
    let mut at_start = true;
    for &c in s.as_bytes() {
        if c == b'.' {
            if at_start {
                return false;
            }
            at_start = true;
        } else if at_start {
            if !(c.is_ascii_alphabetic() || c == b'_') {
                return false;
            }
            at_start = false;
        } else if !(c.is_ascii_alphanumeric() || c == b'_' || c == b'-') {
            return false;
        }
    }
    !at_start
}

/// Where the first dot of `s` is.
fn dot(s: &str) -> Option<usize> {
    s.bytes().position(|c| c == b'.')
}

/// Whether the keys of the dotted `s` are the segments of `path` from
/// `from` on.
fn dotted_prefix(s: &str, path: Changed, from: usize) -> bool {
    let mut rest = s;
    let mut i = from;
    loop {
        let (k, tail) = match dot(rest) {
            Some(at) => (&rest[..at], &rest[at + 1..]),
            None => (rest, ""),
        };
        if path.key(i) != Some(Some(k)) {
            return false;
        }
        if tail.is_empty() {
            return true;
        }
        rest = tail;
        i += 1;
    }
}

/// Three decimals, the precision drift and margins are reported at.
pub fn fmt3(x: f64) -> String {
    format!("{x:.3}")
}

fn compute_changes(r: &PairRecord, state_diff: Option<Vec<DiffEntry>>) -> Changes {
    let mut c = Changes {
        question_changed: question_changed(r),
        state: state_changes(r, state_diff),
        ..Changes::default()
    };
    let mut sort = |name: String, path: Changed| {
        if permitted(r, path) {
            c.permitted.push(name);
        } else {
            c.unexpected.push(name);
        }
    };
    if c.question_changed {
        sort("question".to_string(), Changed::Question);
    }
    for e in &c.state {
        if changes_facts(&e.change) {
            sort(e.path.to_string(), Changed::Path(&e.path.0));
        }
    }
    c
}

/// Whether the variant asks another question (or only one side records one).
fn question_changed(r: &PairRecord) -> bool {
    match (&r.source.question, &r.variant.question) {
        (Some(a), Some(b)) => a != b,
        (a, b) => a.is_some() != b.is_some(),
    }
}

/// The diff of the two states: `state_diff` when given, else computed.
fn state_changes(r: &PairRecord, state_diff: Option<Vec<DiffEntry>>) -> Vec<DiffEntry> {
    let root = || JsonPath::root("state");
    match (&r.source.state, &r.variant.state) {
        (Some(_), Some(_)) if state_diff.is_some() => state_diff.unwrap_or_default(),
        (Some(a), Some(b)) => diff::diff_values(&root(), a, b),
        (Some(a), None) => vec![DiffEntry {
            path: root(),
            change: Change::Removed { before: a.clone() },
        }],
        (None, Some(b)) => vec![DiffEntry {
            path: root(),
            change: Change::Added { after: b.clone() },
        }],
        (None, None) => Vec::new(),
    }
}

/// An `allowed_changes` entry as paths; a bare key also names a state field.
fn allowed_paths(s: &str) -> Vec<JsonPath> {
    let mut out = Vec::new();
    if let Some(p) = JsonPath::parse(s.trim()) {
        let first_is_root =
            matches!(p.0.first(), Some(diff::Seg::Key(k)) if k == "state" || k == "question");
        if !first_is_root {
            let mut segs = vec![diff::Seg::Key("state".to_string())];
            segs.extend(p.0.iter().cloned());
            out.push(JsonPath(segs));
        }
        out.push(p);
    }
    out
}

/// Pair validity, compactly (see [`Validity`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValidityCode {
    Valid,
    Invalid,
    Undeclared,
    NotRecorded,
    Unknown,
}

impl ValidityCode {
    /// The name used in queries and exports.
    pub fn name(self) -> &'static str {
        match self {
            ValidityCode::Valid => "valid",
            ValidityCode::Invalid => "invalid",
            ValidityCode::Undeclared => "undeclared",
            ValidityCode::NotRecorded => "not-recorded",
            ValidityCode::Unknown => "unknown",
        }
    }
}

impl Validity {
    /// The validity without its list of paths.
    pub fn code(&self) -> ValidityCode {
        match self {
            Validity::Valid => ValidityCode::Valid,
            Validity::Invalid { .. } => ValidityCode::Invalid,
            Validity::Undeclared => ValidityCode::Undeclared,
            Validity::NotRecorded => ValidityCode::NotRecorded,
            Validity::Unknown => ValidityCode::Unknown,
        }
    }
}

/// Whether either side records a question or a state.
fn has_payload(r: &PairRecord) -> bool {
    r.source.state.is_some()
        || r.variant.state.is_some()
        || r.source.question.is_some()
        || r.variant.question.is_some()
}

/// The validity a validator recorded, when it decides the pair: `invalid`
/// stays invalid even when the inputs look unchanged, and `unknown` is its
/// own validity, never valid (seed 004). `valid` is judged from the diff.
fn recorded_validity(r: &PairRecord) -> Option<ValidityCode> {
    let status = r.validation_status.as_deref()?.trim();
    if status.eq_ignore_ascii_case("invalid") {
        Some(ValidityCode::Invalid)
    } else if status.eq_ignore_ascii_case("unknown") {
        Some(ValidityCode::Unknown)
    } else {
        None
    }
}

/// The warning and detail line of a pair its validator recorded as invalid
/// with no undeclared change to show.
pub const RECORDED_INVALID: &str =
    "Invalid pair: its validator recorded it as invalid (validation_status invalid).";

/// Validity: as a validator recorded it, else nothing to compare, nothing
/// declared, or whether some change was not declared (`undeclared` is asked
/// only when it matters).
fn validity_code(r: &PairRecord, undeclared: impl FnOnce() -> bool) -> ValidityCode {
    if let Some(code) = recorded_validity(r) {
        code
    } else if !has_payload(r) {
        ValidityCode::NotRecorded
    } else if r.allowed_changes.is_none() {
        ValidityCode::Undeclared
    } else if undeclared() {
        ValidityCode::Invalid
    } else {
        ValidityCode::Valid
    }
}

fn judge_validity(r: &PairRecord, c: &Changes) -> Validity {
    match validity_code(r, || !c.unexpected.is_empty()) {
        ValidityCode::NotRecorded => Validity::NotRecorded,
        ValidityCode::Undeclared => Validity::Undeclared,
        ValidityCode::Valid => Validity::Valid,
        ValidityCode::Invalid => Validity::Invalid {
            unexpected: c.unexpected.clone(),
        },
        ValidityCode::Unknown => Validity::Unknown,
    }
}

/// The transformation name when neither the file nor the payloads say.
pub const NOT_RECORDED: &str = "not recorded";

/// The transformation as recorded, else inferred from the diff; and whether
/// it was inferred.
fn transformation_of<'a>(
    r: &'a PairRecord,
    question_changed: bool,
    state: &[DiffEntry],
) -> (&'a str, bool) {
    match &r.transformation {
        Some(t) => (t, false),
        None => {
            let name = infer_transformation(r, question_changed, state);
            // Nothing to infer from is not an inference.
            (name, name != NOT_RECORDED)
        }
    }
}

/// Name the transformation from what the diff shows; a row that records
/// no payload (the seed runner's bare `VariantResult`) is named from its
/// variant id instead (see [`transformation_from_id`]).
fn infer_transformation(
    r: &PairRecord,
    question_changed: bool,
    state: &[DiffEntry],
) -> &'static str {
    if !has_payload(r) {
        return transformation_from_id(&r.variant_id).unwrap_or(NOT_RECORDED);
    }
    let state_changed = !state.is_empty();
    match (question_changed, state_changed) {
        (false, false) => "identical",
        (true, false) => "question-wording",
        (true, true) => "question-and-state",
        (false, true) => {
            let all = |f: fn(&Change) -> bool| state.iter().all(|e| f(&e.change));
            let evidence = state.iter().any(|e| names_evidence(&e.path));
            if all(|ch| matches!(ch, Change::Added { .. })) {
                if evidence {
                    "add-evidence"
                } else {
                    "add-field"
                }
            } else if all(|ch| matches!(ch, Change::Removed { .. })) {
                if evidence {
                    "remove-evidence"
                } else {
                    "remove-field"
                }
            } else if all(|ch| matches!(ch, Change::Reordered { .. } | Change::Moved { .. })) {
                "reorder"
            } else {
                "value-change"
            }
        }
    }
}

/// Whether a changed path names evidence (`state.evidence`,
/// `state.supportingProof[0]`, ...).
fn names_evidence(path: &JsonPath) -> bool {
    path.0.iter().any(|seg| {
        matches!(seg, diff::Seg::Key(k) if {
            let k = k.to_ascii_lowercase();
            k.contains("evidence") || k.contains("proof")
        })
    })
}

/// The transformation a variant id names, in the words of seed 000 §3
/// (question-contract and state-payload transformations): `question-typo`
/// is a `typo`, `irrelevant-ui-metadata` an `add-irrelevant-field`,
/// `remove-evidence` a `remove-evidence`. The id is split into words at
/// `-`, `_`, spaces and camelCase humps; `None` when no word says.
pub fn transformation_from_id(id: &str) -> Option<&'static str> {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in id.chars() {
        if (!c.is_alphanumeric() || (c.is_uppercase() && prev_lower)) && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
    }
    if !word.is_empty() {
        words.push(word);
    }
    let has = |set: &[&str]| words.iter().any(|w| set.contains(&w.as_str()));
    const REMOVE: &[&str] = &[
        "remove", "removed", "removes", "drop", "dropped", "omit", "omitted", "without", "missing",
        "delete", "deleted", "strip", "stripped", "ablation", "ablate", "ablated",
    ];
    if has(&["evidence", "proof", "ablation", "ablate", "ablated"]) {
        return Some(if has(REMOVE) {
            "remove-evidence"
        } else if has(&["resolve", "resolved", "resolution", "restored", "mitigated"]) {
            "resolve-evidence"
        } else {
            "add-evidence"
        });
    }
    if has(&["typo", "typos", "misspelling", "misspelled", "misspelt"]) {
        return Some("typo");
    }
    if has(&[
        "paraphrase",
        "paraphrased",
        "rephrase",
        "rephrased",
        "reworded",
        "rewording",
    ]) {
        return Some("paraphrase");
    }
    if has(&["concise", "shorter", "terse"]) {
        return Some("concise-phrasing");
    }
    if has(&["scope"]) {
        return Some("explicit-scope");
    }
    if has(&["deadline"]) {
        return Some("deadline-change");
    }
    if has(&["question", "wording", "phrasing"]) {
        return Some("question-wording");
    }
    if has(&["reorder", "reordered", "shuffle", "shuffled"]) {
        return Some("reorder");
    }
    if has(&[
        "irrelevant",
        "noise",
        "noisy",
        "metadata",
        "distractor",
        "unrelated",
        "field",
    ]) {
        return Some(if has(REMOVE) {
            "remove-irrelevant-field"
        } else {
            "add-irrelevant-field"
        });
    }
    None
}

/// The test family an inferred transformation belongs to (seed 000 §2):
/// question wording, irrelevant state (state noise), evidence removed
/// (ablation) or a verified fact added or changed (contrast); `None` for a
/// change that says no family (`value-change`, `question-and-state`).
pub fn family_of_transformation(name: &str) -> Option<&'static str> {
    Some(match name {
        "question-wording" | "paraphrase" | "typo" | "concise-phrasing" | "explicit-scope"
        | "deadline-change" => "question",
        "add-field"
        | "remove-field"
        | "reorder"
        | "add-irrelevant-field"
        | "remove-irrelevant-field" => "state-noise",
        "remove-evidence" => "evidence-ablation",
        "add-evidence" | "resolve-evidence" => "evidence-contrast",
        _ => return None,
    })
}

/// The family as recorded; else, for a record that names neither family
/// nor transformation, the family of the inferred transformation. The flag
/// says whether it was inferred.
pub fn family_of<'a>(r: &'a PairRecord, t: &Transformation) -> Option<(&'a str, bool)> {
    match &r.family {
        Some(f) => Some((f.as_str(), false)),
        None if t.inferred => family_of_transformation(&t.name).map(|f| (f, true)),
        None => None,
    }
}

/// The one line of why a pair stands where it does, and how many of the
/// re-check's first lines it already says.
fn why_line(
    r: &PairRecord,
    status: Status,
    validity: &Validity,
    check: Option<&[String]>,
) -> (String, usize) {
    let check = check.unwrap_or_default();
    match status {
        Status::Invalid => (
            match validity {
                Validity::Invalid { unexpected } if unexpected.is_empty() => {
                    "Its validator recorded the variant as invalid: the test pair is at fault, not the model.".to_string()
                }
                Validity::Invalid { unexpected } => format!(
                    "The variant also changed {}, which it did not declare: the test pair is at fault, not the model.",
                    unexpected.join(", ")
                ),
                _ => "The pair is invalid.".to_string(),
            },
            0,
        ),
        // The check of a failed request or answer is one sentence a side;
        // when both sides failed, both are named.
        Status::ServiceError => {
            let clauses: Vec<String> = check
                .iter()
                .enumerate()
                .map(|(i, sentence)| {
                    let clause = sentence.trim_end_matches('.');
                    if i == 0 {
                        clause.to_string()
                    } else {
                        lowercase_first(clause)
                    }
                })
                .collect();
            (
                format!(
                    "{}; the pair says nothing about the model.",
                    clauses.join(", and ")
                ),
                check.len(),
            )
        }
        Status::Fail => match check.first() {
            Some(first) => (first.clone(), 1),
            None => (recorded_failure(r), 0),
        },
        Status::Boundary => {
            let (first, said) = match check.first() {
                Some(first) => (first.trim_end_matches('.').to_string(), 1),
                None => (recorded_failure(r).trim_end_matches('.').to_string(), 0),
            };
            (
                format!(
                    "{first}; nothing else broke, so this is boundary sensitivity, not an invariant violation."
                ),
                said,
            )
        }
        Status::Unchecked => (
            "No verdict recorded and no expectation to check it against.".to_string(),
            0,
        ),
        Status::Pass => ("The variant kept its expectation.".to_string(), 0),
    }
}

/// A failure as the runner recorded it.
fn recorded_failure(r: &PairRecord) -> String {
    match r.reasons.first() {
        Some(reason) => format!("Recorded as failed: {reason}"),
        None => "Recorded as failed; the file gives no reason.".to_string(),
    }
}

/// `s` with its first letter in lower case ("The variant" → "the variant").
fn lowercase_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
