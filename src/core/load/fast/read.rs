//! The values the derivation needs, read from the spans the scan recorded
//! with the slow path's rules ([`read`]), into a record written over the
//! last one.

use std::borrow::Cow;
use std::cell::Cell;

use crate::core::diff::DiffEntry;
use crate::core::model::{BadNumber, Expectation, Outcome, PairRecord, Policy, Route, Side};
use crate::core::row::InputsDigest;

use super::memo::{Reading, Scratch};
use super::raw_diff::{Diff, Members, Node, diff_members, diff_states};
use super::scan::{Scan, number_value, string_content, string_end};
use super::span::{Kind, Span, Val};
use crate::core::schema::{
    E_KIND, E_MAX_C, E_MAX_P, E_MOVEMENT, E_ROUTES, E_SAME_ROUTE, N_EXP, N_RESPONSE, N_SIDE,
    P_ACTION, P_REVIEW, R_CONFIDENCE, R_PROBABILITY, S_CONFIDENCE, S_DECISION, S_ERROR, S_LATENCY,
    S_OUTCOME, S_PROBABILITY, S_QUESTION, S_RESPONSE, S_ROUTE, S_STATE, T_ACTION, T_ALLOWED,
    T_CASE, T_CONTRACT, T_DATASET, T_EXPECTATION, T_FAMILY, T_GOLD, T_LABEL, T_MARGIN, T_MODEL,
    T_NOTES, T_PASSED, T_POLICY, T_REASONS, T_REPETITION, T_REVIEW, T_REVIEWED, T_SCHEMA,
    T_SETTINGS, T_SOURCE, T_SOURCE_ROUTE, T_TIMESTAMP, T_TRANSFORMATION, T_UNSAFE, T_VALIDATION,
    T_VARIANT, T_VARIANT_ID, T_VARIANT_ROUTE,
};

/// A line read the fast way by [`LineReader::parse`], which it borrows
/// until it is dropped or [recycled](Self::recycle): the diff it leaves for
/// later is made from this line's scan ([`Self::state_diff`]), which the
/// reader keeps until it reads another line.
///
/// [`LineReader::parse`]: super::LineReader::parse
pub struct Parsed<'r, 'line> {
    pub case_id: Cow<'line, str>,
    pub variant_id: Cow<'line, str>,
    pub contract: Option<Cow<'line, str>>,
    pub schema: Option<Cow<'line, str>>,
    pub model: Option<Cow<'line, str>>,
    /// The family and transformation as the line spells them (also copied
    /// into `record`).
    pub family: Option<Cow<'line, str>>,
    pub transformation: Option<Cow<'line, str>>,
    /// The pair as [`crate::core::derive::derive`] needs it. Ids, label,
    /// versions, timestamp and extra fields are left out (its field
    /// warnings, a probability or confidence out of range, are kept); equal
    /// questions are both empty and raw-equal states are both `null` (their
    /// diff is empty either way); states that differ keep only their
    /// differing members.
    pub record: Box<PairRecord>,
    /// The diff of the two states, when it is made from their raw text
    /// (both states are then `null` placeholders in `record`): where each
    /// change is and its kind, without the values, which the index does
    /// not keep (the detail view diffs the parsed pair again).
    pub diff: Diff,
    /// The line, the reader's scratch, which holds its scan, and the
    /// reader's buffer for the diff.
    line: &'line str,
    scratch: &'r mut Scratch,
    nodes: &'r Cell<Vec<Node>>,
}

impl Parsed<'_, '_> {
    /// The diff of the two states, which the scan left for later
    /// ([`Diff::Later`]), made now from the members it recorded of this
    /// line's states; `None` if it cannot be made (the line is then read
    /// the slow way) or a state is not an object.
    pub fn state_diff(&self) -> Option<Vec<DiffEntry>> {
        let s = &*self.scratch;
        if !(s.state_is_object[0] && s.state_is_object[1]) {
            return None;
        }
        let side = |w: usize| Members {
            line: self.line,
            spans: &s.members[w],
            twins: &s.twins[w],
        };
        diff_members(side(0), side(1), self.nodes)
    }

    /// The diff's entries, as [`crate::core::derive::derive_with`] takes
    /// them: those made by the scan, else [`Self::state_diff`].
    pub fn diff_entries(&self) -> Option<Vec<DiffEntry>> {
        match &self.diff {
            Diff::Done(d) => d.clone(),
            Diff::Later { .. } => self.state_diff(),
        }
    }

    /// The digest of each side's question and state, and of the declared
    /// changes, as this line writes them, from the spans its scan recorded
    /// (see [`InputsDigest`]); none for a record converted from another
    /// tool's file.
    pub fn inputs(&self) -> InputsDigest {
        let s = &*self.scratch;
        if s.converted {
            return InputsDigest::NONE;
        }
        let b = self.line.as_bytes();
        let text = |w: usize, slot: usize| present(s.side[w][slot]).map(|v| v.span.bytes(b));
        InputsDigest::of(
            [
                [text(0, S_QUESTION), text(0, S_STATE)],
                [text(1, S_QUESTION), text(1, S_STATE)],
            ],
            present(s.top[T_ALLOWED]).map(|v| v.span.bytes(b)),
        )
    }

    /// Give the record back to the reader, whose next record is written
    /// over it.
    pub fn recycle(self) {
        self.scratch.spare = Some(self.record);
    }
}

impl std::fmt::Debug for Parsed<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parsed")
            .field("case_id", &self.case_id)
            .field("variant_id", &self.variant_id)
            .field("contract", &self.contract)
            .field("schema", &self.schema)
            .field("model", &self.model)
            .field("family", &self.family)
            .field("transformation", &self.transformation)
            .field("record", &self.record)
            .field("diff", &self.diff)
            .finish_non_exhaustive()
    }
}

pub(super) const POOL_MAX: usize = 64;

/// Set `slot` to `text`, in the string it holds if any.
fn set_text(slot: &mut Option<String>, text: Option<&str>) {
    match (slot.as_mut(), text) {
        (Some(buf), Some(t)) => {
            buf.clear();
            buf.push_str(t);
        }
        (_, t) => *slot = t.map(str::to_owned),
    }
}

/// Read `line` with the scratch `s` (reset), which the result borrows with
/// the buffer `nodes` for its diff.
pub(super) fn read<'r, 'line>(
    line: &'line str,
    s: &'r mut Scratch,
    nodes: &'r Cell<Vec<Node>>,
) -> Option<Parsed<'r, 'line>> {
    Scan {
        b: line.as_bytes(),
        i: 0,
        s: &mut *s,
    }
    .line()?;
    let r = Reader { line };
    let top = &s.top;
    // The ids are required strings: anything else is the slow path's error.
    let id = |v: Option<Val>| match v {
        Some(v) if matches!(v.kind, Kind::Str | Kind::Esc) => r.string(v),
        _ => None,
    };
    let case_id = id(top[T_CASE])?;
    let variant_id = id(top[T_VARIANT_ID])?;
    // Read only to check their type, as the slow path does.
    r.boolean(top[T_GOLD])?;
    for slot in [
        T_LABEL,
        T_DATASET,
        T_TIMESTAMP,
        T_SETTINGS,
        T_REVIEWED,
        T_NOTES,
    ] {
        if let Some(v) = top[slot] {
            match v.kind {
                Kind::Str | Kind::Esc | Kind::Num | Kind::Null => {}
                _ => return None,
            }
        }
    }
    let family = r.text(top[T_FAMILY])?;
    let transformation = r.text(top[T_TRANSFORMATION])?;
    // Every field the fast path reads is written below, on every line; the
    // others keep their defaults (the fast path never sets them).
    let mut rec = s.spare.take().unwrap_or_default();
    set_text(&mut rec.family, family.as_deref());
    set_text(&mut rec.transformation, transformation.as_deref());
    rec.minimum_boundary_margin = r.number(top[T_MARGIN])?;
    let allowed = rec.allowed_changes.take().unwrap_or_default();
    rec.allowed_changes = r.strings(top[T_ALLOWED], allowed, &mut s.pool)?;
    rec.passed = r.boolean(top[T_PASSED])?;
    let reasons = std::mem::take(&mut rec.reasons);
    rec.reasons = r
        .strings(top[T_REASONS], reasons, &mut s.pool)?
        .unwrap_or_default();
    rec.repetition = r
        .number(top[T_REPETITION])?
        .and_then(|x| (x >= 0.0 && x.fract() == 0.0 && x < u64::MAX as f64).then_some(x as u64));
    let validation = r.text(top[T_VALIDATION])?;
    set_text(&mut rec.validation_status, validation.as_deref());
    rec.unsafe_approval = r.boolean(top[T_UNSAFE])?;
    let contract = r.text(top[T_CONTRACT])?;
    let schema = r.text(top[T_SCHEMA])?;
    let model = r.text(top[T_MODEL])?;

    rec.policy = match present(top[T_POLICY]) {
        Some(p) if p.kind == Kind::Obj => {
            let review = r.number(s.policy[P_REVIEW])?;
            let action = r.number(s.policy[P_ACTION])?;
            let (review, action) = (review?, action?);
            if review > action {
                return None;
            }
            Some(Policy {
                review_threshold: review,
                action_threshold: action,
            })
        }
        Some(_) => return None,
        // Some runners put the thresholds at the top level.
        None => match (r.number(top[T_REVIEW])?, r.number(top[T_ACTION])?) {
            (Some(review), Some(action)) => Some(Policy {
                review_threshold: review,
                action_threshold: action,
            }),
            _ => None,
        },
    };
    rec.expectation = match present(top[T_EXPECTATION]) {
        Some(e) if e.kind == Kind::Obj => {
            let kept = s.small_at[1].and_then(|at| s.small[1].entries.get_mut(at));
            match kept.as_ref().map(|k| &k.reading) {
                Some(Reading::Read(e)) => e.clone(),
                Some(Reading::Declined) => return None,
                _ => {
                    let e = expectation(&r, &s.expectation);
                    if let Some(k) = kept {
                        k.reading = e.clone().map_or(Reading::Declined, Reading::Read);
                    }
                    e?
                }
            }
        }
        Some(_) => return None,
        None => None,
    };
    let src_route = r.route(top[T_SOURCE_ROUTE])?;
    let var_route = r.route(top[T_VARIANT_ROUTE])?;
    let mut questions = [None, None];
    let mut states = [None, None];
    // The only field warnings a line read here can have: a probability or
    // confidence outside [0, 1], in the slow path's words and order.
    rec.field_warnings.clear();
    for (w, slot, route) in [(0, T_SOURCE, src_route), (1, T_VARIANT, var_route)] {
        let (out, prefix) = if w == 0 {
            (&mut rec.source, "source.")
        } else {
            (&mut rec.variant, "variant.")
        };
        match present(top[slot]) {
            Some(v) if v.kind == Kind::Obj => {
                let warn = Warn {
                    prefix,
                    out: &mut rec.field_warnings,
                };
                let (state, question) = side(&r, &s.side[w], &s.response[w], out, warn)?;
                states[w] = state;
                questions[w] = question;
            }
            Some(_) => return None,
            // A side the line does not have, as the slow path leaves it.
            None => *out = Side::default(),
        }
        if out.route.is_none() {
            out.route = route;
        }
    }
    // Only equality of the questions matters to the derivation, and their
    // words only when they differ.
    let [src_q, var_q] = questions;
    match (src_q, var_q) {
        (Some(a), Some(b)) if a == b => {
            set_text(&mut rec.source.question, Some(""));
            set_text(&mut rec.variant.question, Some(""));
        }
        (a, b) => {
            set_text(&mut rec.source.question, a.as_deref());
            set_text(&mut rec.variant.question, b.as_deref());
        }
    }
    let members = |w: usize| {
        s.state_is_object[w].then(|| Members {
            line,
            spans: &s.members[w],
            twins: &s.twins[w],
        })
    };
    // Only a whole member that `allowed_changes` names can make the diff
    // needless for the validity.
    let declared = rec.allowed_changes.is_some();
    let permitted = |k: &str| declared && crate::core::derive::member_permitted(&rec, k);
    let (a, b, diff) = diff_states(
        line,
        states[0],
        states[1],
        [members(0), members(1)],
        permitted,
    )?;
    rec.source.state = a;
    rec.variant.state = b;
    Some(Parsed {
        case_id,
        variant_id,
        contract,
        schema,
        model,
        family,
        transformation,
        record: rec,
        diff,
        line,
        scratch: s,
        nodes,
    })
}

/// A field that is recorded: present and not `null`.
fn present(v: Option<Val>) -> Option<Val> {
    v.filter(|v| v.kind != Kind::Null)
}

/// Reads scanned values with the slow path's rules. Each returns `None` when
/// the slow path would warn (the line then goes to it), else whether the
/// field is recorded.
struct Reader<'a> {
    line: &'a str,
}

impl<'a> Reader<'a> {
    fn raw(&self, v: Val) -> &'a str {
        v.span.of(self.line)
    }

    /// A string value's content, decoded.
    fn string(&self, v: Val) -> Option<Cow<'a, str>> {
        string_content(self.raw(v), v.kind)
    }

    /// A text field (a number would be shown as its JSON text: left to
    /// the slow path).
    fn text(&self, v: Option<Val>) -> Option<Option<Cow<'a, str>>> {
        match present(v) {
            None => Some(None),
            Some(v) => self.string(v).map(Some),
        }
    }

    fn number(&self, v: Option<Val>) -> Option<Option<f64>> {
        match present(v) {
            None => Some(None),
            Some(v) if v.kind == Kind::Num => number_value(self.raw(v).as_bytes()).map(Some),
            Some(_) => None,
        }
    }

    /// A probability or confidence in [0, 1]; one outside is not
    /// recorded (`Err`), with the slow path's warning (its field is
    /// `warn`'s prefix, `within`, and the key as the line spells it).
    fn unit(
        &self,
        v: Option<Val>,
        warn: &mut Warn<'_>,
        within: &str,
    ) -> Option<Result<Option<f64>, BadNumber>> {
        match self.number(v)? {
            Some(x) if !(0.0..=1.0).contains(&x) => {
                let key = self.key_of(v?)?;
                warn.out.push(format!(
                    "`{}{within}{key}` is {x}, outside [0, 1]; treated as not recorded",
                    warn.prefix
                ));
                Some(Err(BadNumber::OutOfRange(x)))
            }
            other => Some(Ok(other)),
        }
    }

    /// The key of the member whose value is `v`: the scan refuses keys
    /// with escapes, so the key is the text between the two quotes before
    /// the colon before `v`.
    fn key_of(&self, v: Val) -> Option<&'a str> {
        let b = self.line.as_bytes();
        let blank = |c: &u8| matches!(c, b' ' | b'\n' | b'\t' | b'\r');
        let mut end = v.span.start as usize;
        while end > 0 && blank(&b[end - 1]) {
            end -= 1;
        }
        end = end.checked_sub(1).filter(|&e| b[e] == b':')?;
        while end > 0 && blank(&b[end - 1]) {
            end -= 1;
        }
        let close = end.checked_sub(1).filter(|&e| b[e] == b'"')?;
        let open = b[..close].iter().rposition(|&c| c == b'"')?;
        self.line.get(open + 1..close)
    }

    fn boolean(&self, v: Option<Val>) -> Option<Option<bool>> {
        match present(v).map(|v| v.kind) {
            None => Some(None),
            Some(Kind::True) => Some(Some(true)),
            Some(Kind::False) => Some(Some(false)),
            Some(_) => None,
        }
    }

    fn route(&self, v: Option<Val>) -> Option<Option<Route>> {
        match present(v) {
            None => Some(None),
            Some(v) => route(&self.string(v)?).map(Some),
        }
    }

    /// A list of strings, or one string as a list of one (an item that is
    /// not a string would be shown as its JSON text: left to the slow path).
    /// `out` is the list to fill (its strings go back to `pool` first), and
    /// `pool` the reader's spare strings, written over before any is
    /// allocated.
    fn strings(
        &self,
        v: Option<Val>,
        mut out: Vec<String>,
        pool: &mut Vec<String>,
    ) -> Option<Option<Vec<String>>> {
        for s in out.drain(..) {
            if pool.len() < POOL_MAX {
                pool.push(s);
            }
        }
        let v = match present(v) {
            None => return Some(None),
            Some(v) => v,
        };
        let mut push = |text: &str| {
            out.push(match pool.pop() {
                Some(mut s) => {
                    s.clear();
                    s.push_str(text);
                    s
                }
                None => text.to_string(),
            });
        };
        if matches!(v.kind, Kind::Str | Kind::Esc) {
            push(&self.string(v)?);
            return Some(Some(out));
        }
        if v.kind != Kind::Arr {
            return None;
        }
        // The array is valid JSON; read it again, string by string.
        let raw = self.raw(v);
        let b = raw.as_bytes();
        let item = Reader { line: raw };
        let mut i = 1;
        loop {
            match b.get(i)? {
                b' ' | b'\n' | b'\t' | b'\r' | b',' => i += 1,
                b']' => break,
                b'"' => {
                    let (kind, end) = string_end(b, i)?;
                    let text = item.string(Val {
                        kind,
                        span: Span::new(i, end),
                    })?;
                    push(&text);
                    i = end;
                }
                _ => return None,
            }
        }
        Some(Some(out))
    }
}

/// [`Route::parse`], without its lower-cased copy for the usual spellings.
fn route(s: &str) -> Option<Route> {
    match s {
        "action" | "act" => Some(Route::Action),
        "review" => Some(Route::Review),
        "pass" => Some(Route::Pass),
        _ => Route::parse(s),
    }
}

/// [`Outcome::parse`], without its normalised copy for the usual spellings.
fn outcome(s: &str) -> Outcome {
    match s {
        "ok" | "success" | "succeeded" | "completed" => Outcome::Ok,
        "timeout" | "timed-out" | "time-out" => Outcome::Timeout,
        "error" | "failed" | "failure" | "service-error" => Outcome::Error,
        "invalid-response" | "invalid" | "malformed" | "parse-error" => Outcome::InvalidResponse,
        _ => Outcome::parse(s),
    }
}

/// Where a side's field warnings go, and the prefix of their fields.
struct Warn<'w> {
    prefix: &'static str,
    out: &'w mut Vec<String>,
}

/// Write the side read from `slots` into `out` (its question and state are
/// left to the caller, who gets them), its warnings to `warn`.
fn side<'a>(
    r: &Reader<'a>,
    slots: &[Option<Val>; N_SIDE],
    response: &[Option<Val>; N_RESPONSE],
    out: &mut Side,
    mut warn: Warn<'_>,
) -> Option<(Option<Val>, Option<Cow<'a, str>>)> {
    let (p, c) = match present(slots[S_RESPONSE]) {
        Some(v) if v.kind == Kind::Obj => (
            r.unit(response[R_PROBABILITY], &mut warn, "response.")?,
            r.unit(response[R_CONFIDENCE], &mut warn, "response.")?,
        ),
        Some(_) => return None,
        None => (Ok(None), Ok(None)),
    };
    out.answered = [S_RESPONSE, S_PROBABILITY, S_CONFIDENCE]
        .iter()
        .any(|&slot| present(slots[slot]).is_some());
    // Bare rows put the response fields on the side itself; the first
    // unusable spelling is kept when no spelling is usable.
    let mut either = |first: Result<Option<f64>, BadNumber>, slot: usize| {
        Some(match first {
            Ok(Some(x)) => (Some(x), None),
            first => match r.unit(slots[slot], &mut warn, "")? {
                Ok(Some(x)) => (Some(x), None),
                Ok(None) => (None, first.err()),
                Err(bad) => (None, Some(first.err().unwrap_or(bad))),
            },
        })
    };
    (out.probability, out.bad_probability) = either(p, S_PROBABILITY)?;
    (out.confidence, out.bad_confidence) = either(c, S_CONFIDENCE)?;
    out.route = r.route(slots[S_ROUTE])?;
    out.outcome = r.text(slots[S_OUTCOME])?.map(|o| outcome(&o));
    set_text(&mut out.error, r.text(slots[S_ERROR])?.as_deref());
    out.latency_ms = r.number(slots[S_LATENCY])?;
    set_text(&mut out.decision, r.text(slots[S_DECISION])?.as_deref());
    Some((present(slots[S_STATE]), r.text(slots[S_QUESTION])?))
}

fn expectation(r: &Reader<'_>, e: &[Option<Val>; N_EXP]) -> Option<Option<Expectation>> {
    let Some(kind) = r.text(e[E_KIND])? else {
        return Some(None);
    };
    // The usual spellings as they are; others normalised as the slow path does.
    let norm = match kind.as_ref() {
        k @ ("invariant" | "not-less-urgent" | "not-more-urgent" | "allowed-routes") => {
            Cow::Borrowed(k)
        }
        k => Cow::Owned(k.trim().to_ascii_lowercase().replace('_', "-")),
    };
    Some(Some(match norm.as_ref() {
        "invariant" => Expectation::Invariant {
            max_probability_drift: r.number(e[E_MAX_P])?,
            max_confidence_drift: r.number(e[E_MAX_C])?,
            require_same_route: r.boolean(e[E_SAME_ROUTE])?.unwrap_or(true),
        },
        "not-less-urgent" | "notlessurgent" => Expectation::NotLessUrgent {
            permitted_probability_movement: r.number(e[E_MOVEMENT])?.unwrap_or(0.0),
        },
        "not-more-urgent" | "notmoreurgent" => Expectation::NotMoreUrgent {
            permitted_probability_movement: r.number(e[E_MOVEMENT])?.unwrap_or(0.0),
        },
        "allowed-routes" | "allowedroutes" => {
            let mut routes = Vec::new();
            for n in r
                .strings(e[E_ROUTES], Vec::new(), &mut Vec::new())?
                .iter()
                .flatten()
            {
                // An unknown route is a warning: the slow path reports it.
                routes.push(route(n)?);
            }
            Expectation::AllowedRoutes {
                allowed_routes: routes,
            }
        }
        _ => Expectation::Unknown {
            kind: kind.into_owned(),
        },
    }))
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
