//! Facts computed for one pair: drift, routes, margins, the re-checked
//! expectation, validity and the pair's status.
//!
//! Nothing here trusts the runner blindly: routes are recomputed from the
//! policy and the expectation is checked again, and any disagreement with
//! what the file recorded becomes a visible warning. The effective verdict
//! fails a pair when either the runner or the re-check says it failed, so a
//! runner bug can never hide a failure.

use super::diff::{self, Change, DiffEntry, JsonPath};
use super::model::{Expectation, PairRecord, Route, Side, fmt_num};

/// Where a pair stands after derivation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// The variant changed undeclared facts: the test is at fault.
    Invalid,
    /// A request failed: the pair says nothing about the model.
    ServiceError,
    /// The expectation was broken.
    Fail,
    /// Nothing says whether it passed (no verdict and no expectation).
    Unchecked,
    Pass,
}

impl Status {
    /// The short name used in queries and exports.
    pub fn name(self) -> &'static str {
        match self {
            Status::Invalid => "invalid",
            Status::ServiceError => "error",
            Status::Fail => "fail",
            Status::Unchecked => "unchecked",
            Status::Pass => "pass",
        }
    }

    /// Whether the pair needs a reviewer's diagnosis.
    pub fn is_failure(self) -> bool {
        matches!(self, Status::Invalid | Status::ServiceError | Status::Fail)
    }
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
    /// Recorded route, or the policy's when none was recorded.
    pub source_route: Option<Route>,
    pub variant_route: Option<Route>,
    /// The policy's routes, when a policy and a probability are recorded.
    pub computed_source_route: Option<Route>,
    pub computed_variant_route: Option<Route>,
    pub source_margin: Option<f64>,
    pub variant_margin: Option<f64>,
    /// Source margin under `minimum_boundary_margin`.
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

    let src_fail = r.source.failure_phrase();
    let var_fail = r.variant.failure_phrase();
    let service_error = src_fail.is_some() || var_fail.is_some();

    let mut fails = Vec::new();
    let checked = check_expectation(r, &n, |b| fails.push(b.message()));
    let mut check = checked.then_some(fails);
    if service_error {
        service_failures(&src_fail, &var_fail, check.get_or_insert_with(Vec::new));
    }
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
    if let Validity::Invalid { unexpected } = &validity {
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
    );

    let why = why_line(r, status, &validity, check.as_deref(), &src_fail, &var_fail);
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
    }
}

/// The numbers and routes of a pair: drift, routes (recorded, else the
/// policy's), margins, whether the source is near a threshold and whether
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
    let (ps, pv) = (r.source.probability, r.variant.probability);
    let computed_source_route = r.policy.zip(ps).map(|(pol, p)| pol.route(p));
    let computed_variant_route = r.policy.zip(pv).map(|(pol, p)| pol.route(p));
    let source_route = r.source.route.or(computed_source_route);
    let variant_route = r.variant.route.or(computed_variant_route);
    let source_margin = r.policy.zip(ps).map(|(pol, p)| pol.margin(p));
    Numbers {
        dp: ps.zip(pv).map(|(a, b)| b - a),
        dc: r
            .source
            .confidence
            .zip(r.variant.confidence)
            .map(|(a, b)| b - a),
        computed_source_route,
        computed_variant_route,
        source_route,
        variant_route,
        source_margin,
        variant_margin: r.policy.zip(pv).map(|(pol, p)| pol.margin(p)),
        near_boundary: source_margin
            .zip(r.minimum_boundary_margin)
            .map(|(m, min)| m < min),
        flip: source_route.zip(variant_route).map(|(a, b)| a != b),
    }
}

/// Whether a recorded route disagrees with the policy's (a warning).
fn route_mismatch(recorded: Option<Route>, computed: Option<Route>) -> bool {
    recorded.zip(computed).is_some_and(|(a, b)| a != b)
}

/// Whether a side's request failed (what [`Side::failure_phrase`] puts in words).
fn request_failed(side: &Side) -> bool {
    side.outcome.as_ref().is_some_and(|o| !o.is_ok())
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
/// beats the verdict.
fn status_of(invalid: bool, service_error: bool, verdict: Option<bool>) -> Status {
    if invalid {
        Status::Invalid
    } else if service_error {
        Status::ServiceError
    } else {
        match verdict {
            Some(true) => Status::Pass,
            Some(false) => Status::Fail,
            None => Status::Unchecked,
        }
    }
}

fn service_failures(src: &Option<String>, var: &Option<String>, out: &mut Vec<String>) {
    if let Some(s) = src {
        out.push(format!("The source request {s}."));
    }
    if let Some(v) = var {
        out.push(format!("The variant request {v}."));
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
                && m < min
            {
                broken(Broken::TooClose { margin: m, min });
            }
            if let (Some(d), Some(max)) = (n.dp, max_probability_drift)
                && d.abs() > *max + 1e-12
            {
                broken(Broken::ProbabilityDrift {
                    drift: d.abs(),
                    max: *max,
                });
            }
            if let (Some(d), Some(max)) = (n.dc, max_confidence_drift)
                && d.abs() > *max + 1e-12
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
                && -d > *m + 1e-12
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
                && d > *m + 1e-12
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
    let service_error = request_failed(&r.source) || request_failed(&r.variant);
    let mut broken = 0usize;
    let checked = check_expectation(r, &n, |_| broken += 1);
    // A failed request adds its own line to the check.
    let checked_pass = if service_error {
        Some(false)
    } else {
        checked.then_some(broken == 0)
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
    let status = status_of(invalid, service_error, verdict);
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
        .filter(|e| !matches!(e.change, Change::Reordered { .. }))
        .any(|e| !permitted(r, Changed::Path(&e.path.0)))
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
        // `state.<key>` when the key is one segment.
        if let Changed::Member(k) = path {
            return s == "state"
                || (!k.contains('.') && (s == k || s.strip_prefix("state.") == Some(k)));
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
        // A reorder keeps every canonical value, so it is not a change of facts.
        if !matches!(e.change, Change::Reordered { .. }) {
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
}

impl ValidityCode {
    /// The name used in queries and exports.
    pub fn name(self) -> &'static str {
        match self {
            ValidityCode::Valid => "valid",
            ValidityCode::Invalid => "invalid",
            ValidityCode::Undeclared => "undeclared",
            ValidityCode::NotRecorded => "not-recorded",
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

/// Validity: nothing to compare, nothing declared, or whether some change
/// was not declared (`undeclared` is asked only when it matters).
fn validity_code(r: &PairRecord, undeclared: impl FnOnce() -> bool) -> ValidityCode {
    if !has_payload(r) {
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
            } else if all(|ch| matches!(ch, Change::Reordered { .. })) {
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

fn why_line(
    r: &PairRecord,
    status: Status,
    validity: &Validity,
    check: Option<&[String]>,
    src_fail: &Option<String>,
    var_fail: &Option<String>,
) -> String {
    match status {
        Status::Invalid => match validity {
            Validity::Invalid { unexpected } => format!(
                "The variant also changed {}, which it did not declare: the test pair is at fault, not the model.",
                unexpected.join(", ")
            ),
            _ => "The pair is invalid.".to_string(),
        },
        Status::ServiceError => {
            let side = if var_fail.is_some() {
                "variant"
            } else {
                "source"
            };
            let phrase = var_fail
                .as_ref()
                .or(src_fail.as_ref())
                .cloned()
                .unwrap_or_default();
            format!("The {side} request {phrase}; the pair says nothing about the model.")
        }
        Status::Fail => match check.and_then(|c| c.first()) {
            Some(first) => first.clone(),
            None => match r.reasons.first() {
                Some(reason) => format!("Recorded as failed: {reason}"),
                None => "Recorded as failed; the file gives no reason.".to_string(),
            },
        },
        Status::Unchecked => {
            "No verdict recorded and no expectation to check it against.".to_string()
        }
        Status::Pass => "The variant kept its expectation.".to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::core::model::{Outcome, Policy, Side};
    use serde_json::json;

    /// A failing-invariant pair with both thresholds and a margin, for tests.
    pub(crate) fn pair(ps: f64, pv: f64) -> PairRecord {
        PairRecord {
            case_id: "c".into(),
            variant_id: "v".into(),
            policy: Some(Policy {
                review_threshold: 0.55,
                action_threshold: 0.9,
            }),
            expectation: Some(Expectation::Invariant {
                max_probability_drift: Some(0.1),
                max_confidence_drift: Some(0.15),
                require_same_route: true,
            }),
            minimum_boundary_margin: Some(0.1),
            source: Side {
                probability: Some(ps),
                confidence: Some(0.8),
                question: Some("q".into()),
                state: Some(json!({"a": 1})),
                ..Side::default()
            },
            variant: Side {
                probability: Some(pv),
                confidence: Some(0.8),
                question: Some("q".into()),
                state: Some(json!({"a": 1})),
                ..Side::default()
            },
            ..PairRecord::default()
        }
    }

    #[test]
    fn drift_routes_and_margin() {
        let d = derive(&pair(0.91, 0.52));
        assert!((d.dp.unwrap() + 0.39).abs() < 1e-9);
        assert_eq!(d.source_route, Some(Route::Action));
        assert_eq!(d.variant_route, Some(Route::Pass));
        assert!((d.source_margin.unwrap() - 0.01).abs() < 1e-9);
        assert!((d.variant_margin.unwrap() - 0.03).abs() < 1e-9);
        assert_eq!(d.flip, Some(true));
        assert_eq!(d.near_boundary, Some(true));
        assert_eq!(d.status, Status::Fail);
        let c = d.check.unwrap();
        assert_eq!(c.len(), 3, "{c:?}");
        assert!(c[0].contains("margin 0.010 < 0.1"));
        assert!(c[1].contains("Probability drift 0.390"));
        assert!(c[2].contains("from action to pass"));
    }

    #[test]
    fn thresholds_are_inclusive() {
        let pol = Policy {
            review_threshold: 0.55,
            action_threshold: 0.9,
        };
        assert_eq!(pol.route(0.9), Route::Action);
        assert_eq!(pol.route(0.55), Route::Review);
        assert_eq!(pol.route(0.5499), Route::Pass);
    }

    #[test]
    fn stable_pair_passes() {
        let d = derive(&pair(0.3, 0.32));
        assert_eq!(d.status, Status::Pass);
        assert_eq!(d.check, Some(vec![]));
        assert_eq!(d.transformation.name, "identical");
        assert!(d.transformation.inferred);
    }

    #[test]
    fn recorded_route_mismatch_is_a_warning() {
        let mut r = pair(0.3, 0.32);
        r.source.route = Some(Route::Review);
        let d = derive(&r);
        assert!(d.warnings.iter().any(|w| w.contains("recorded as review")));
        assert_eq!(d.source_route, Some(Route::Review));
    }

    #[test]
    fn passed_mismatch_fails_the_pair() {
        let mut r = pair(0.3, 0.7);
        r.passed = Some(true);
        let d = derive(&r);
        assert_eq!(d.verdict, Some(false));
        assert_eq!(d.status, Status::Fail);
        assert!(d.warnings.iter().any(|w| w.contains("recorded a pass")));
    }

    #[test]
    fn directional_expectations() {
        let mut r = pair(0.7, 0.6);
        r.expectation = Some(Expectation::NotLessUrgent {
            permitted_probability_movement: 0.05,
        });
        let d = derive(&r);
        assert_eq!(d.status, Status::Fail);
        assert!(d.why.contains("fell by 0.100"));
        r.expectation = Some(Expectation::NotMoreUrgent {
            permitted_probability_movement: 0.05,
        });
        assert_eq!(derive(&r).status, Status::Pass);
    }

    #[test]
    fn allowed_routes() {
        let mut r = pair(0.7, 0.95);
        r.expectation = Some(Expectation::AllowedRoutes {
            allowed_routes: vec![Route::Review, Route::Pass],
        });
        let d = derive(&r);
        assert_eq!(d.status, Status::Fail);
        assert!(d.why.contains("action is not among"));
    }

    #[test]
    fn service_error_is_its_own_status() {
        let mut r = pair(0.7, 0.7);
        r.variant.probability = None;
        r.variant.outcome = Some(Outcome::Timeout);
        r.variant.latency_ms = Some(30000.0);
        let d = derive(&r);
        assert_eq!(d.status, Status::ServiceError);
        assert!(d.why.contains("timed out after 30000 ms"), "{}", d.why);
        assert!(d.service_error);
    }

    #[test]
    fn validity_splits_permitted_and_unexpected() {
        let mut r = pair(0.3, 0.3);
        r.variant.state = Some(json!({"a": 2, "theme": "dark"}));
        r.allowed_changes = Some(vec!["state.theme".into()]);
        let d = derive(&r);
        assert_eq!(d.changes.permitted, vec!["state.theme"]);
        assert_eq!(d.changes.unexpected, vec!["state.a"]);
        assert_eq!(d.status, Status::Invalid);
        assert_eq!(d.transformation.name, "value-change");

        r.allowed_changes = Some(vec!["state".into()]);
        assert_eq!(derive(&r).validity, Validity::Valid);
        // A bare key names a state field.
        r.allowed_changes = Some(vec!["a".into(), "theme".into()]);
        assert_eq!(derive(&r).validity, Validity::Valid);
        r.allowed_changes = None;
        assert_eq!(derive(&r).validity, Validity::Undeclared);
    }

    /// An entry permits a whole state member when it names the member or
    /// a path above it, however it is spelled; one below it does not.
    #[test]
    fn members_permitted_whole() {
        let mut r = pair(0.3, 0.3);
        for (entry, evidence, a) in [
            ("state", true, true),
            ("state.evidence", true, false),
            ("evidence", true, false),
            (" evidence ", true, false),
            ("state.evidence.text", false, false),
            ("evidence[0]", false, false),
            ("question", false, false),
            ("a", false, true),
        ] {
            r.allowed_changes = Some(vec![entry.into()]);
            assert_eq!(member_permitted(&r, "evidence"), evidence, "{entry:?}");
            assert_eq!(member_permitted(&r, "a"), a, "{entry:?}");
        }
        r.allowed_changes = None;
        assert!(!member_permitted(&r, "a"));
    }

    proptest::proptest! {
        /// A member of the state is covered as its path `state.<key>` is.
        #[test]
        fn a_member_is_covered_as_its_path_is(
            entry in "( ?(state|question|a|b-c|a\\.b|\\[0\\]|\\[\"a\"\\]|\\.|x y|_1)){1,4} ?",
            key in "(state|a|b-c|a\\.b|x y|_1|\\[0\\]|)",
        ) {
            let entry = entry.replace(' ', if entry.len() % 2 == 0 { "" } else { " " });
            let entry = entry.trim_start_matches('.');
            let path = [diff::Seg::Key("state".into()), diff::Seg::Key(key.clone())];
            proptest::prop_assert_eq!(
                allowed_covers(entry, Changed::Member(&key)),
                allowed_covers(entry, Changed::Path(&path)),
                "{:?} {:?}", entry, key
            );
        }
    }

    /// The lazy derivation agrees with the eager one, and makes the diff
    /// only when something reads it.
    #[test]
    fn the_state_is_diffed_only_when_read() {
        let mut r = pair(0.3, 0.31);
        r.source.state = Some(json!({"a": 1, "theme": "light"}));
        r.variant.state = Some(json!({"a": 1, "theme": "dark"}));
        r.transformation = Some("theme".into());
        r.allowed_changes = Some(vec!["state.theme".into()]);
        let eager = lean(&r, None);
        assert_eq!(eager.validity, ValidityCode::Valid);
        assert_eq!(eager.status, Status::Pass);
        // A passing pair whose changed member is permitted whole: no diff.
        let lazy = lean_on(&r, true, || panic!("diffed"));
        assert_eq!(
            (lazy.status, lazy.validity, lazy.state.len()),
            (Status::Pass, ValidityCode::Valid, 0)
        );
        // Not covered: the validity needs the diff.
        let mut asked = false;
        let lazy = lean_on(&r, false, || {
            asked = true;
            None
        });
        assert!(asked);
        assert_eq!((lazy.status, lazy.validity), (eager.status, eager.validity));
        // A failure's suggestion reads it, covered or not.
        let mut f = pair(0.3, 0.8);
        f.source.state = r.source.state.clone();
        f.variant.state = r.variant.state.clone();
        f.allowed_changes = r.allowed_changes.clone();
        let lazy = lean_on(&f, true, || None);
        assert_eq!(lazy.status, Status::Fail);
        assert_eq!(lazy.state, lean(&f, None).state);
        assert_eq!(lazy.state.len(), 1);
    }

    #[test]
    fn inference_names_the_change() {
        let mut r = pair(0.3, 0.3);
        r.variant.question = Some("q2".into());
        assert_eq!(derive(&r).transformation.name, "question-wording");
        let mut r = pair(0.3, 0.3);
        r.variant.state = Some(json!({"a": 1, "b": 2}));
        assert_eq!(derive(&r).transformation.name, "add-field");
        let mut r = pair(0.3, 0.3);
        r.source.state = Some(json!({"a": 1, "b": 2}));
        r.variant.state = Some(json!({"b": 2, "a": 1}));
        let d = derive(&r);
        assert_eq!(d.transformation.name, "reorder");
        // A reorder keeps every value: not a change of facts.
        r.allowed_changes = Some(vec![]);
        assert_eq!(derive(&r).validity, Validity::Valid);
        let mut r = pair(0.3, 0.3);
        r.variant.state = Some(json!({}));
        assert_eq!(derive(&r).transformation.name, "remove-field");
        r.transformation = Some("remove-evidence".into());
        let d = derive(&r);
        assert_eq!(d.transformation.name, "remove-evidence");
        assert!(!d.transformation.inferred);
    }

    #[test]
    fn variant_ids_name_the_seed_runners_transformations() {
        let named = |id: &str| transformation_from_id(id);
        for (id, want) in [
            ("question-paraphrase", Some("paraphrase")),
            ("question-typo", Some("typo")),
            ("concise-phrasing", Some("concise-phrasing")),
            ("explicit-scope", Some("explicit-scope")),
            ("broaden-deadline", Some("deadline-change")),
            ("questionWording2", Some("question-wording")),
            ("irrelevant-ui-metadata", Some("add-irrelevant-field")),
            ("irrelevant-request-trace", Some("add-irrelevant-field")),
            ("remove_irrelevant_field", Some("remove-irrelevant-field")),
            ("reorderFields", Some("reorder")),
            ("remove-evidence", Some("remove-evidence")),
            ("evidenceAblation", Some("remove-evidence")),
            ("add-verified-evidence", Some("add-evidence")),
            ("resolved-evidence", Some("resolve-evidence")),
            ("v", None),
            ("checkout-order-7", None),
            ("", None),
        ] {
            assert_eq!(named(id), want, "{id}");
        }
    }

    #[test]
    fn bare_rows_are_named_from_their_variant_id() {
        let mut r = pair(0.91, 0.52);
        for side in [&mut r.source, &mut r.variant] {
            side.question = None;
            side.state = None;
        }
        r.variant_id = "irrelevant-ui-metadata".into();
        let d = derive(&r);
        assert_eq!(d.transformation.name, "add-irrelevant-field");
        assert!(d.transformation.inferred);
        assert_eq!(
            family_of(&r, &d.transformation),
            Some(("state-noise", true))
        );
        let l = lean(&r, None);
        assert_eq!(l.inferred_transformation, Some("add-irrelevant-field"));
        assert!(l.inferred);
        r.variant_id = "question-paraphrase".into();
        let d = derive(&r);
        assert_eq!(
            (
                d.transformation.name.as_str(),
                family_of(&r, &d.transformation)
            ),
            ("paraphrase", Some(("question", true)))
        );
        // A recorded family or transformation is never overridden.
        r.family = Some("mine".into());
        assert_eq!(family_of(&r, &d.transformation), Some(("mine", false)));
        r.family = None;
        r.transformation = Some("custom".into());
        let d = derive(&r);
        assert!(!d.transformation.inferred);
        assert_eq!(family_of(&r, &d.transformation), None);
        // With payloads, the diff names the change, not the id.
        let mut r = pair(0.3, 0.3);
        r.variant_id = "question-typo".into();
        r.variant.state = Some(json!({}));
        assert_eq!(derive(&r).transformation.name, "remove-field");
    }

    #[test]
    fn removed_or_added_evidence_is_named_from_the_diff() {
        let mut r = pair(0.3, 0.3);
        r.source.state = Some(json!({"a": 1, "evidence": ["E1", "E2"]}));
        r.variant.state = Some(json!({"a": 1, "evidence": ["E1"]}));
        let d = derive(&r);
        assert_eq!(d.transformation.name, "remove-evidence");
        assert_eq!(
            family_of(&r, &d.transformation),
            Some(("evidence-ablation", true))
        );
        r.variant.state = Some(json!({"a": 1}));
        assert_eq!(derive(&r).transformation.name, "remove-evidence");
        r.variant.state = Some(json!({"a": 1, "evidence": ["E1", "E2"], "supportingProof": "x"}));
        assert_eq!(derive(&r).transformation.name, "add-evidence");
        r.variant.state = Some(json!({"a": 1, "evidence": ["E1", "E2"], "theme": "dark"}));
        let d = derive(&r);
        assert_eq!(d.transformation.name, "add-field");
        assert_eq!(
            family_of(&r, &d.transformation),
            Some(("state-noise", true))
        );
        r.variant.state = Some(json!({"a": 2, "evidence": ["E1", "E2"]}));
        let d = derive(&r);
        assert_eq!(d.transformation.name, "value-change");
        assert_eq!(family_of(&r, &d.transformation), None);
    }

    #[test]
    fn bare_rows_have_no_validity() {
        let mut r = pair(0.91, 0.93);
        r.source.state = None;
        r.variant.state = None;
        r.source.question = None;
        r.variant.question = None;
        r.policy = None;
        r.source.route = Some(Route::Action);
        r.variant.route = Some(Route::Action);
        let d = derive(&r);
        assert_eq!(d.validity, Validity::NotRecorded);
        assert_eq!(d.transformation.name, "not recorded");
        assert_eq!(d.source_margin, None);
        assert_eq!(d.status, Status::Pass);
    }
}
