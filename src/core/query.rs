//! The query language of the pair list: parse, print and evaluate filters.
//!
//! A query is a list of whitespace-separated terms that must all hold; `-term`
//! negates one. A term is a field match (`family:question|state-noise`,
//! `transformation:add-*`), a number comparison (`dp<-0.1`, `|dc|>0.15`), or
//! text (`timeout`, `"payment step"`) searched case-insensitively in the pair's
//! raw line. The user-facing description, with examples, is `docs/query.md`.
//!
//! [`parse`] turns text into a [`Query`] (or a [`QueryError`] with the 0-based
//! character position of the problem); `Display` prints the canonical text, and
//! `parse(&q.to_string()) == Ok(q)` for every query. [`Query::filter`] compiles
//! the query once per call: enumerated fields become bit masks, string values
//! become globs whose verdict is memoised per interned [`Sym`], annotations
//! are looked up in a map keyed by a cheap hasher, and text terms run last so
//! that a line is read only for rows every other term accepts. Nothing is
//! allocated per row unless a text term has to read the row's line.

use std::fmt;
use std::io;

use memchr::memmem;
use rustc_hash::{FxHashMap, FxHashSet};

use super::annotations::{Annotation, AnnotationSource, AnnotationStore};
use super::column::Column;
use super::compare::ChangeKind;
use super::derive::{Status, ValidityCode};
use super::index::RunIndex;
use super::key::RecordKey;
use super::model::Route;
use super::row::{ExpKind, NO_SYM, OutcomeCode, PairRow, RowLabels, Sym, flags};

mod parse;
pub use parse::parse;
use parse::*;

/// The field names, for completion and error messages (`tr` is an alias of `transformation`).
pub const FIELDS: &[&str] = &[
    "status",
    "family",
    "transformation",
    "case",
    "variant",
    "contract",
    "schema",
    "model",
    "expectation",
    "validity",
    "flip",
    "route",
    "outcome",
    "near",
    "dp",
    "dc",
    "|dp|",
    "|dc|",
    "margin",
    "vmargin",
    "latency",
    "rep",
    "category",
    "suggested",
    "reviewer",
    "note",
    "stale",
    "source",
    "disagree",
    "change",
];

/// A field a term can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    Status,
    Family,
    Transformation,
    Case,
    Variant,
    Contract,
    Schema,
    Model,
    Expectation,
    Validity,
    Flip,
    Route,
    Outcome,
    Near,
    Dp,
    Dc,
    /// `|dp|`: the magnitude of the probability drift.
    AbsDp,
    /// `|dc|`: the magnitude of the confidence drift.
    AbsDc,
    Margin,
    Vmargin,
    Latency,
    Rep,
    Category,
    Suggested,
    Reviewer,
    Note,
    Stale,
    Source,
    /// `disagree:yes`: reviewers named different categories and no resolution settled them.
    Disagree,
    /// The pair's change since a baseline run (`triage NEW --baseline OLD`).
    Change,
}

impl Field {
    /// Every field, in the order of [`FIELDS`].
    pub const ALL: [Field; 30] = [
        Field::Status,
        Field::Family,
        Field::Transformation,
        Field::Case,
        Field::Variant,
        Field::Contract,
        Field::Schema,
        Field::Model,
        Field::Expectation,
        Field::Validity,
        Field::Flip,
        Field::Route,
        Field::Outcome,
        Field::Near,
        Field::Dp,
        Field::Dc,
        Field::AbsDp,
        Field::AbsDc,
        Field::Margin,
        Field::Vmargin,
        Field::Latency,
        Field::Rep,
        Field::Category,
        Field::Suggested,
        Field::Reviewer,
        Field::Note,
        Field::Stale,
        Field::Source,
        Field::Disagree,
        Field::Change,
    ];

    /// The canonical name, as printed.
    pub fn name(self) -> &'static str {
        match self {
            Field::Status => "status",
            Field::Family => "family",
            Field::Transformation => "transformation",
            Field::Case => "case",
            Field::Variant => "variant",
            Field::Contract => "contract",
            Field::Schema => "schema",
            Field::Model => "model",
            Field::Expectation => "expectation",
            Field::Validity => "validity",
            Field::Flip => "flip",
            Field::Route => "route",
            Field::Outcome => "outcome",
            Field::Near => "near",
            Field::Dp => "dp",
            Field::Dc => "dc",
            Field::AbsDp => "|dp|",
            Field::AbsDc => "|dc|",
            Field::Margin => "margin",
            Field::Vmargin => "vmargin",
            Field::Latency => "latency",
            Field::Rep => "rep",
            Field::Category => "category",
            Field::Suggested => "suggested",
            Field::Reviewer => "reviewer",
            Field::Note => "note",
            Field::Stale => "stale",
            Field::Source => "source",
            Field::Disagree => "disagree",
            Field::Change => "change",
        }
    }

    /// The field with this name or alias, in any letter case.
    pub fn from_name(name: &str) -> Option<Field> {
        if name.eq_ignore_ascii_case("tr") {
            return Some(Field::Transformation);
        }
        Field::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }

    /// Whether the field is compared with `<`, `<=`, `>`, `>=` or `=` rather than matched with `:`.
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            Field::Dp
                | Field::Dc
                | Field::AbsDp
                | Field::AbsDc
                | Field::Margin
                | Field::Vmargin
                | Field::Latency
                | Field::Rep
        )
    }

    /// The values an enumerated field accepts (for messages and completion); empty for free text.
    pub fn values(self) -> &'static [&'static str] {
        match self {
            Field::Status => &[
                "fail",
                "pass",
                "invalid",
                "error",
                "boundary",
                "unchecked",
                "failure",
            ],
            Field::Expectation => &[
                "invariant",
                "not-less-urgent",
                "not-more-urgent",
                "allowed-routes",
                "none",
                "unknown",
            ],
            Field::Validity => &["valid", "invalid", "undeclared", "not-recorded", "unknown"],
            Field::Flip | Field::Near | Field::Stale | Field::Disagree => &["yes", "no"],
            Field::Outcome => &[
                "ok",
                "timeout",
                "error",
                "invalid-response",
                "other",
                "not-recorded",
            ],
            Field::Note => &["has", "none"],
            Field::Source => &["manual", "suggestion"],
            Field::Route => &["pass", "review", "action"],
            Field::Change => &[
                "new_failures",
                "fixed",
                "still_failing",
                "status_changed",
                "content_changed",
                "added",
                "removed",
                "unchanged_pass",
            ],
            _ => &[],
        }
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl Op {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "=",
        }
    }

    fn holds(self, x: f64, y: f64) -> bool {
        match self {
            Op::Lt => x < y,
            Op::Le => x <= y,
            Op::Gt => x > y,
            Op::Ge => x >= y,
            Op::Eq => x == y,
        }
    }
}

/// One term of a query.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    /// Written with a leading `-`: the term must not hold.
    pub negated: bool,
    pub kind: TermKind,
}

/// What a term tests.
#[derive(Debug, Clone, PartialEq)]
pub enum TermKind {
    /// `field:a|b`: the field matches any of the values (as typed; `*` globs).
    Match { field: Field, values: Vec<String> },
    /// `field<x` and friends, on a numeric field.
    Compare { field: Field, op: Op, value: f64 },
    /// A bare word or a quoted phrase, searched in the record's raw text.
    Text(String),
}

/// A parsed query: every term must hold. The empty query matches everything.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Query {
    terms: Vec<Term>,
}

/// A syntax error, at a 0-based character index into the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    pub pos: usize,
    pub message: String,
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at {})", self.message, self.pos)
    }
}

impl std::error::Error for QueryError {}

/// What a query may look at besides the row itself.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub index: &'a RunIndex,
    pub store: Option<&'a AnnotationStore>,
    /// Each row's change since a baseline run, in row order (see
    /// [`crate::core::compare`]); without one, `change:` matches no row.
    pub changes: Option<&'a [ChangeKind]>,
}

// ---------------------------------------------------------------------------
// Evaluation

impl Query {
    /// Whether the query has no terms (and so matches every row).
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The statuses a matching row can have, when a term is on the status
    /// (`None` otherwise): a row whose status a term rules out matches
    /// nothing, whatever the other terms say. Lets a caller pick its
    /// candidates from one byte a row ([`RunIndex::rows_with_status`])
    /// before [`Query::retain`] tests every term.
    pub fn statuses(&self) -> Option<StatusMask> {
        let mut mask = None;
        for t in &self.terms {
            // Only status terms are compiled here: the others may build
            // needles and globs that [`Query::retain`] builds anyway.
            if matches!(
                &t.kind,
                TermKind::Match {
                    field: Field::Status,
                    ..
                }
            ) && let Cond::Status(m) = compile_term(&t.kind, 0)
            {
                let m = if t.negated { !m } else { m };
                mask = Some(mask.unwrap_or(u8::MAX) & m);
            }
        }
        mask.map(StatusMask)
    }

    /// Whether evaluating needs each row's line read from disk (bare words or phrases).
    pub fn needs_text(&self) -> bool {
        self.terms
            .iter()
            .any(|t| matches!(t.kind, TermKind::Text(_)))
    }

    /// Whether some term names `field`.
    pub fn names(&self, field: Field) -> bool {
        self.terms.iter().any(|t| match t.kind {
            TermKind::Match { field: f, .. } | TermKind::Compare { field: f, .. } => f == field,
            TermKind::Text(_) => false,
        })
    }

    /// The terms, in the order written.
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    /// Whether row `i` of the index matches (a row past the end does not).
    /// Text terms read the row's line; a read error counts as no match.
    ///
    /// This compiles the query for the one row; use [`Query::filter`] for many.
    pub fn matches(&self, ctx: &Context, i: u32) -> bool {
        let Some(row) = ctx.index.rows.get(i as usize) else {
            return false;
        };
        if self.is_empty() {
            return true;
        }
        let env = AnnEnv {
            store: ctx.store,
            map: None,
            any: ctx.store.is_some(),
            seen: Vec::new(),
            cases: None,
            changes: ctx.changes.unwrap_or_default(),
        };
        let mut compiled = Compiled::new(self, ctx.index, false);
        compiled.eval(ctx.index, &env, i as usize, row, 0, None)
    }

    /// Filter row indices (into `ctx.index.rows`), preserving order.
    ///
    /// Indices past the end of the index are dropped. Large inputs are split
    /// over rayon's threads.
    pub fn filter(&self, ctx: &Context, rows: &[u32]) -> Vec<u32> {
        let mut kept = rows.to_vec();
        self.retain(ctx, &mut kept);
        kept
    }

    /// [`Query::filter`] in place: keeps the indices of `rows` that match,
    /// in order, in the vector's own memory. The viewer filters this way on
    /// every keystroke: at ten million pairs a fresh vector for the result
    /// costs more in page faults than the filtering itself.
    pub fn retain(&self, ctx: &Context, rows: &mut Vec<u32>) {
        self.retain_on(ctx, rows, rayon::current_num_threads().min(8));
    }

    /// [`Query::filter`] in at most `parts` parts, filtered in parallel.
    #[cfg(test)]
    fn filter_on(&self, ctx: &Context, rows: &[u32], parts: usize) -> Vec<u32> {
        let mut kept = rows.to_vec();
        self.retain_on(ctx, &mut kept, parts);
        kept
    }

    /// [`Query::retain`] in at most `parts` parts, filtered in parallel:
    /// each part keeps its matches at its own front, then the parts' matches
    /// are moved down to follow one another.
    fn retain_on(&self, ctx: &Context, rows: &mut Vec<u32>, parts: usize) {
        use rayon::prelude::*;
        let index = ctx.index;
        if self.is_empty() {
            let len = index.rows.len();
            rows.retain(|&r| (r as usize) < len);
            return;
        }
        let mut env = AnnEnv::for_filter(ctx.store, self);
        env.changes = ctx.changes.unwrap_or_default();
        let compiled = Compiled::new(self, index, true);
        // Parts pay off only on large inputs; text terms wait on I/O, so split those sooner.
        let per_part = if compiled.has_text {
            PART_ROWS_TEXT
        } else {
            PART_ROWS
        };
        let parts = parts.min(rows.len() / per_part).max(1);
        let mut compiled = compiled;
        // The terms that read no line, a part of the rows on each core; the
        // text terms then on what passed, a stretch of the run on each core
        // (parts of the rows in view order could each span the whole run,
        // and read it twice).
        if parts == 1 {
            let kept = compiled.sweep(index, &env, rows);
            rows.truncate(kept);
        } else {
            let size = rows.len().div_ceil(parts);
            let env = &env;
            let kept: Vec<usize> = rows
                .par_chunks_mut(size)
                .map_init(|| compiled.clone(), |c, part| c.sweep(index, env, part))
                .collect();
            let mut end = 0;
            for (p, k) in kept.into_iter().enumerate() {
                let start = p * size;
                rows.copy_within(start..start + k, end);
                end += k;
            }
            rows.truncate(end);
        }
        let min = if parts == 1 { usize::MAX } else { per_part };
        let kept = compiled.search(index, &env, rows, min);
        rows.truncate(kept);
    }
}

/// The fewest rows per part when [`Query::filter`] splits a query without
/// text terms (a few in tests, so that small runs are split).
const PART_ROWS: usize = if cfg!(test) { 3 } else { 100_000 };

/// [`PART_ROWS`] for a query with text terms, which wait on reading lines.
const PART_ROWS_TEXT: usize = if cfg!(test) { 2 } else { 2_000 };

/// Annotations as the evaluator sees them.
struct AnnEnv<'a> {
    store: Option<&'a AnnotationStore>,
    /// Every live annotation by key (built for [`Query::filter`]); `None` means ask the store.
    map: Option<FxHashMap<RecordKey, &'a Annotation>>,
    /// Whether there may be any annotation at all.
    any: bool,
    /// One bit per value of a key's first two bytes: most unannotated keys
    /// are ruled out here without hashing (keys are digests, so this is even).
    seen: Vec<u64>,
    /// The case ids that have annotations (built for [`Query::filter`] when `stale` is used).
    cases: Option<FxHashSet<&'a str>>,
    /// Each row's change since a baseline run.
    changes: &'a [ChangeKind],
}

impl<'a> AnnEnv<'a> {
    fn for_filter(store: Option<&'a AnnotationStore>, q: &Query) -> AnnEnv<'a> {
        let uses = q.terms.iter().any(|t| {
            matches!(
                t.kind,
                TermKind::Match {
                    field: Field::Category
                        | Field::Reviewer
                        | Field::Note
                        | Field::Stale
                        | Field::Source,
                    ..
                }
            )
        });
        let Some(s) = store.filter(|_| uses) else {
            return AnnEnv {
                store,
                map: None,
                any: false,
                seen: Vec::new(),
                cases: None,
                changes: &[],
            };
        };
        let map: FxHashMap<RecordKey, &Annotation> =
            s.all().into_iter().map(|a| (a.key, a)).collect();
        let stale = q.terms.iter().any(|t| {
            matches!(
                t.kind,
                TermKind::Match {
                    field: Field::Stale,
                    ..
                }
            )
        });
        let cases = stale.then(|| map.values().map(|a| &*a.case_id).collect());
        let mut seen = vec![0u64; 1 << 10];
        for k in map.keys() {
            let b = key_bucket(k);
            seen[b >> 6] |= 1 << (b & 63);
        }
        AnnEnv {
            store,
            any: !map.is_empty(),
            seen,
            map: Some(map),
            cases,
            changes: &[],
        }
    }

    /// The store, when it is in blind review.
    fn blind(&self) -> Option<&'a AnnotationStore> {
        self.store.filter(|s| s.blind())
    }

    /// The annotation of a row under its current key.
    fn row(&self, index: &RunIndex, r: &PairRow) -> Option<&'a Annotation> {
        if !self.any {
            return None;
        }
        self.get(&index.current_key(self.store?, r)?)
    }

    fn get(&self, key: &RecordKey) -> Option<&'a Annotation> {
        if !self.any {
            return None;
        }
        match (&self.map, self.store) {
            (Some(m), _) => {
                let b = key_bucket(key);
                if self
                    .seen
                    .get(b >> 6)
                    .is_some_and(|w| w & (1 << (b & 63)) == 0)
                {
                    return None;
                }
                m.get(key).copied()
            }
            (None, Some(s)) => s.get(key),
            (None, None) => None,
        }
    }
}

/// A key's bucket in [`AnnEnv::seen`]: its first two bytes.
fn key_bucket(k: &RecordKey) -> usize {
    usize::from(u16::from_le_bytes([k.0[0], k.0[1]]))
}

/// A case-insensitive pattern where `*` matches any run of characters.
#[derive(Debug, Clone)]
struct Glob {
    /// The lowercased pattern split at `*`; one part means an exact match.
    parts: Vec<Vec<u8>>,
}

impl Glob {
    fn new(pattern: &str) -> Glob {
        Glob {
            parts: pattern
                .to_lowercase()
                .split('*')
                .map(|s| s.as_bytes().to_vec())
                .collect(),
        }
    }

    /// Match an already lowercased text.
    fn matches_lower(&self, t: &[u8]) -> bool {
        let n = self.parts.len();
        let (first, last) = (&self.parts[0], &self.parts[n - 1]);
        if n == 1 {
            return t == first.as_slice();
        }
        if t.len() < first.len() + last.len() || !t.starts_with(first) || !t.ends_with(last) {
            return false;
        }
        let mut rest = &t[first.len()..t.len() - last.len()];
        for p in &self.parts[1..n - 1] {
            if p.is_empty() {
                continue;
            }
            match memmem::find(rest, p) {
                Some(i) => rest = &rest[i + p.len()..],
                None => return false,
            }
        }
        true
    }
}

/// Several globs; a text matches if any does.
#[derive(Debug, Clone, Default)]
struct Globs {
    globs: Vec<Glob>,
    scratch: Vec<u8>,
}

impl Globs {
    fn matches(&mut self, text: &str) -> bool {
        self.scratch.clear();
        if text.is_ascii() {
            self.scratch
                .extend(text.bytes().map(|b| b.to_ascii_lowercase()));
        } else {
            self.scratch
                .extend_from_slice(text.to_lowercase().as_bytes());
        }
        let t = &self.scratch;
        self.globs.iter().any(|g| g.matches_lower(t))
    }
}

/// Which interned string of a row a sym term reads.
#[derive(Debug, Clone, Copy)]
enum SymField {
    Family,
    Transformation,
    Case,
    Variant,
    Contract,
    Schema,
    Model,
    Suggested,
}

impl SymField {
    /// The row's string id; the suggested category is not interned (see
    /// [`SymSet::test_row`]), so it gives [`NO_SYM`].
    fn get(self, i: usize, r: &PairRow, index: &RunIndex) -> Sym {
        match self {
            SymField::Family => index.family(i),
            SymField::Transformation => index.transformation(i),
            SymField::Case => r.case,
            SymField::Variant => r.variant,
            SymField::Contract => index.contract(i),
            SymField::Schema => index.schema(i),
            SymField::Model => index.model(i),
            SymField::Suggested => NO_SYM,
        }
    }
}

/// Globs over interned strings, with each sym's verdict memoised (0 unknown, 1 yes, 2 no).
#[derive(Debug, Clone)]
struct SymSet {
    globs: Globs,
    /// What [`NO_SYM`] (not recorded) gives.
    none: bool,
    memo: Vec<u8>,
    /// The verdict on each suggested category, by its code (0 unknown, 1 yes, 2 no).
    suggested_memo: [u8; 64],
}

impl SymSet {
    /// Test the field `f` of row `r`, number `i`. `blind` is the store in
    /// blind review: a suggestion it hides reads as none.
    fn test_row(
        &mut self,
        f: SymField,
        i: usize,
        r: &PairRow,
        index: &RunIndex,
        blind: Option<&AnnotationStore>,
    ) -> bool {
        if let SymField::Suggested = f {
            if blind.is_some() && index.hides(blind, r) {
                return self.none;
            }
            let Some(s) = r.suggestion() else {
                return self.none;
            };
            let code = usize::from(r.codes.suggestion_code());
            return match self.suggested_memo.get(code).copied() {
                Some(1) => true,
                Some(2) => false,
                _ => {
                    let hit = self.globs.matches(s);
                    if let Some(m) = self.suggested_memo.get_mut(code) {
                        *m = if hit { 1 } else { 2 };
                    }
                    hit
                }
            };
        }
        self.test(f.get(i, r, index), index)
    }

    fn test(&mut self, sym: Sym, index: &RunIndex) -> bool {
        if sym == NO_SYM {
            return self.none;
        }
        match self.memo.get(sym as usize).copied() {
            Some(1) => true,
            Some(2) => false,
            Some(_) => {
                let hit = self.globs.matches(index.str(sym));
                self.memo[sym as usize] = if hit { 1 } else { 2 };
                hit
            }
            None => self.globs.matches(index.str(sym)),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum NumField {
    Dp,
    Dc,
    AbsDp,
    AbsDc,
    Margin,
    Vmargin,
    Latency,
    Rep,
}

impl NumField {
    /// The value of row `r`, number `i`; NaN when not recorded.
    fn get(self, i: usize, r: &PairRow, index: &RunIndex) -> f64 {
        match self {
            NumField::Dp => f64::from(r.dp),
            NumField::Dc => f64::from(r.dc),
            NumField::AbsDp => f64::from(r.dp.abs()),
            NumField::AbsDc => f64::from(r.dc.abs()),
            NumField::Margin => f64::from(r.margin),
            NumField::Vmargin => f64::from(r.variant_margin),
            NumField::Latency => f64::from(r.latency),
            NumField::Rep => index.repetition(i).map_or(f64::NAN, f64::from),
        }
    }
}

/// A test on a pair's annotation (absent when the pair has none).
#[derive(Debug, Clone)]
enum AnnCond {
    Category { none: bool, any: bool, globs: Globs },
    Reviewer(Globs),
    Note { has: bool, none: bool },
    Source { manual: bool, suggestion: bool },
}

impl AnnCond {
    fn eval(&mut self, ann: Option<&Annotation>) -> bool {
        match self {
            AnnCond::Category { none, any, globs } => {
                match ann.and_then(|a| a.category.as_deref()) {
                    None => *none,
                    Some(c) => *any || globs.matches(c),
                }
            }
            AnnCond::Reviewer(globs) => ann.is_some_and(|a| globs.matches(&a.reviewer)),
            AnnCond::Note { has, none } => {
                if ann.is_some_and(|a| a.note.as_deref().is_some_and(|n| !n.is_empty())) {
                    *has
                } else {
                    *none
                }
            }
            AnnCond::Source { manual, suggestion } => match ann {
                Some(a) if a.category.is_some() => match a.source {
                    AnnotationSource::Manual => *manual,
                    AnnotationSource::Suggestion => *suggestion,
                },
                _ => false,
            },
        }
    }
}

/// One compiled term.
#[derive(Debug, Clone)]
enum Cond {
    Status(u8),
    Sym(SymField, SymSet),
    Flag {
        flag: u8,
        yes: bool,
        no: bool,
    },
    Expectation(u8),
    Validity(u8),
    Route(u16),
    Outcome(u64),
    Num(NumField, Op, f64),
    Ann {
        cond: AnnCond,
        on_none: bool,
    },
    Stale {
        yes: bool,
        no: bool,
        memo: Vec<u8>,
    },
    /// One bit per [`ChangeKind`] (its place in [`ChangeKind::ALL`]).
    Change(u8),
    Disagree {
        yes: bool,
        no: bool,
    },
    Text(Box<Needle>),
}

impl Cond {
    /// Evaluation order: cheapest first, text (I/O) last. Terms on the
    /// one-byte columns (status, family, transformation) go before terms
    /// that read whole rows, so those read only the rows left.
    fn cost(&self) -> u8 {
        match self {
            Cond::Status(_) | Cond::Sym(SymField::Family | SymField::Transformation, _) => 0,
            Cond::Sym(..) => 1,
            Cond::Ann { .. } => 2,
            Cond::Stale { .. } | Cond::Disagree { .. } => 3,
            Cond::Text(_) => TEXT_COST,
            // Codes and numbers read from the row.
            _ => 1,
        }
    }
}

/// The cost of a text term: the only kind evaluated row by row, in [`Compiled::search`].
const TEXT_COST: u8 = 4;

/// A text needle, lowercased.
#[derive(Debug, Clone)]
struct Needle {
    ascii: bool,
    finder: memmem::Finder<'static>,
}

/// A set of statuses ([`Query::statuses`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusMask(u8);

impl StatusMask {
    /// Whether `s` is in the set.
    pub fn admits(self, s: Status) -> bool {
        self.0 & (1 << status_bit(s)) != 0
    }
}

fn status_bit(s: Status) -> u8 {
    match s {
        Status::Invalid => 0,
        Status::ServiceError => 1,
        Status::Fail => 2,
        Status::Unchecked => 3,
        Status::Pass => 4,
        Status::Boundary => 5,
    }
}

fn exp_bit(e: ExpKind) -> u8 {
    match e {
        ExpKind::None => 0,
        ExpKind::Invariant => 1,
        ExpKind::NotLessUrgent => 2,
        ExpKind::NotMoreUrgent => 3,
        ExpKind::AllowedRoutes => 4,
        ExpKind::Unknown => 5,
    }
}

fn validity_bit(v: ValidityCode) -> u8 {
    match v {
        ValidityCode::Valid => 0,
        ValidityCode::Invalid => 1,
        ValidityCode::Undeclared => 2,
        ValidityCode::NotRecorded => 3,
        ValidityCode::Unknown => 4,
    }
}

fn outcome_bit(o: OutcomeCode) -> u32 {
    match o {
        OutcomeCode::NotRecorded => 0,
        OutcomeCode::Ok => 1,
        OutcomeCode::Timeout => 2,
        OutcomeCode::Error => 3,
        OutcomeCode::InvalidResponse => 4,
        OutcomeCode::Other => 5,
    }
}

fn route_bit(r: Route) -> u16 {
    match r {
        Route::Pass => 0,
        Route::Review => 1,
        Route::Action => 2,
    }
}

fn globs_of<'v>(values: impl Iterator<Item = &'v String>) -> Globs {
    Globs {
        globs: values.map(|v| Glob::new(v)).collect(),
        scratch: Vec::new(),
    }
}

/// Compile one term; `memo_len` sizes the per-sym memo tables (0: no memo).
fn compile_term(kind: &TermKind, memo_len: usize) -> Cond {
    let (field, values) = match kind {
        TermKind::Text(s) => {
            let lower = s.to_lowercase();
            return Cond::Text(Box::new(Needle {
                ascii: lower.is_ascii(),
                finder: memmem::Finder::new(lower.as_bytes()).into_owned(),
            }));
        }
        TermKind::Compare { field, op, value } => {
            let (nf, exact) = match field {
                Field::Dp => (NumField::Dp, false),
                Field::Dc => (NumField::Dc, false),
                Field::AbsDp => (NumField::AbsDp, false),
                Field::AbsDc => (NumField::AbsDc, false),
                Field::Margin => (NumField::Margin, false),
                Field::Vmargin => (NumField::Vmargin, false),
                Field::Latency => (NumField::Latency, false),
                Field::Rep => (NumField::Rep, true),
                // The parser never builds this; a comparison on a text field holds nowhere.
                _ => return Cond::Status(0),
            };
            // The index stores these numbers as f32: round the threshold the
            // same way, so `dp<-0.1` does not match a recorded -0.1.
            let v = if exact {
                *value
            } else {
                f64::from(*value as f32)
            };
            return Cond::Num(nf, *op, v);
        }
        TermKind::Match { field, values } => (*field, values),
    };
    let mask = || values.iter().fold(0u64, |m, v| m | enum_mask(field, v));
    let sym = |f: SymField, special_none: bool| {
        let none = special_none && values.iter().any(|v| v.eq_ignore_ascii_case("none"));
        Cond::Sym(
            f,
            SymSet {
                globs: globs_of(
                    values
                        .iter()
                        .filter(|v| !(special_none && v.eq_ignore_ascii_case("none"))),
                ),
                none,
                memo: vec![0; memo_len],
                suggested_memo: [0; 64],
            },
        )
    };
    match field {
        Field::Status => Cond::Status(mask() as u8),
        Field::Expectation => Cond::Expectation(mask() as u8),
        Field::Validity => Cond::Validity(mask() as u8),
        Field::Flip | Field::Near => {
            let m = mask();
            Cond::Flag {
                flag: if field == Field::Flip {
                    flags::FLIP
                } else {
                    flags::NEAR_BOUNDARY
                },
                yes: m & 1 != 0,
                no: m & 2 != 0,
            }
        }
        Field::Stale => {
            let m = mask();
            Cond::Stale {
                yes: m & 1 != 0,
                no: m & 2 != 0,
                memo: vec![0; memo_len],
            }
        }
        Field::Disagree => {
            let m = mask();
            Cond::Disagree {
                yes: m & 1 != 0,
                no: m & 2 != 0,
            }
        }
        Field::Route => Cond::Route(values.iter().fold(0, |m, v| m | route_mask(v).unwrap_or(0))),
        Field::Outcome => Cond::Outcome(values.iter().fold(0, |m, v| m | outcome_mask(v))),
        Field::Note => {
            let m = mask();
            Cond::Ann {
                cond: AnnCond::Note {
                    has: m & 1 != 0,
                    none: m & 2 != 0,
                },
                on_none: false,
            }
        }
        Field::Source => {
            let m = mask();
            Cond::Ann {
                cond: AnnCond::Source {
                    manual: m & 1 != 0,
                    suggestion: m & 2 != 0,
                },
                on_none: false,
            }
        }
        Field::Category => {
            let is = |w: &str| values.iter().any(|v| v.eq_ignore_ascii_case(w));
            Cond::Ann {
                cond: AnnCond::Category {
                    none: is("none"),
                    any: is("any"),
                    globs: globs_of(values.iter().filter(|v| {
                        !v.eq_ignore_ascii_case("none") && !v.eq_ignore_ascii_case("any")
                    })),
                },
                on_none: false,
            }
        }
        Field::Reviewer => Cond::Ann {
            cond: AnnCond::Reviewer(globs_of(values.iter())),
            on_none: false,
        },
        Field::Change => Cond::Change(values.iter().fold(0, |m, v| m | change_mask(v))),
        Field::Suggested => sym(SymField::Suggested, true),
        Field::Family => sym(SymField::Family, false),
        Field::Transformation => sym(SymField::Transformation, false),
        Field::Case => sym(SymField::Case, false),
        Field::Variant => sym(SymField::Variant, false),
        Field::Contract => sym(SymField::Contract, false),
        Field::Schema => sym(SymField::Schema, false),
        Field::Model => sym(SymField::Model, false),
        // The parser never builds these: a number field matched with `:` holds nowhere.
        Field::Dp
        | Field::Dc
        | Field::AbsDp
        | Field::AbsDc
        | Field::Margin
        | Field::Vmargin
        | Field::Latency
        | Field::Rep => Cond::Status(0),
    }
}

/// Whether a pair's reviewers named different categories and no resolution settled them.
fn disagrees(env: &AnnEnv, index: &RunIndex, row: &PairRow) -> bool {
    let Some(store) = env.store.filter(|s| !s.is_empty()) else {
        return false;
    };
    index
        .current_key(store, row)
        .is_some_and(|k| store.agreement(&k) == Some(crate::core::annotations::Agreement::Disagree))
}

/// Whether a pair has no annotation under its key but one under an older key.
fn is_stale(
    env: &AnnEnv,
    current: Option<&Annotation>,
    memo: &mut [u8],
    index: &RunIndex,
    row: &PairRow,
) -> bool {
    if current.is_some() || !env.any {
        return false;
    }
    let Some(store) = env.store else {
        return false;
    };
    // Most pairs share no case id with any annotation: rule them out per
    // sym (resolved keys already carry that flag per sym; see `index::keys`).
    if let Some(cases) = env.cases.as_ref().filter(|_| !index.keys_resolved(store)) {
        let known = match memo.get(row.case as usize).copied() {
            Some(1) => true,
            Some(2) => false,
            other => {
                let hit = cases.contains(index.str(row.case));
                if other.is_some() {
                    memo[row.case as usize] = if hit { 1 } else { 2 };
                }
                hit
            }
        };
        if !known {
            return false;
        }
    }
    let Some(key) = index.current_key(store, row) else {
        return false;
    };
    store
        .stale_for(index.str(row.case), index.str(row.variant), &key)
        .is_some()
}

#[inline]
fn status_in(m: u8, r: &PairRow) -> bool {
    m & (1 << status_bit(r.status())) != 0
}

#[inline]
fn flag_in(flag: u8, yes: bool, no: bool, r: &PairRow) -> bool {
    if r.has(flag) { yes } else { no }
}

#[inline]
fn expectation_in(m: u8, r: &PairRow) -> bool {
    m & (1 << exp_bit(r.expectation())) != 0
}

#[inline]
fn validity_in(m: u8, r: &PairRow) -> bool {
    m & (1 << validity_bit(r.validity())) != 0
}

#[inline]
fn route_in(m: u16, r: &PairRow) -> bool {
    match (r.source_route(), r.variant_route()) {
        (Some(s), Some(t)) => m & (1 << (route_bit(s) * 3 + route_bit(t))) != 0,
        _ => false,
    }
}

#[inline]
fn outcome_in(m: u64, r: &PairRow) -> bool {
    m & (1 << (outcome_bit(r.source_outcome()) * 6 + outcome_bit(r.variant_outcome()))) != 0
}

/// Move the rows whose `hits` are set to the front of `rows`, in order; how many.
fn keep_hits(rows: &mut [u32], hits: &[bool]) -> usize {
    let mut n = 0;
    for k in 0..rows.len() {
        rows[n] = rows[k];
        n += usize::from(hits[k]);
    }
    n
}

/// Keep the indices in `sel` whose row satisfies `keep` (indices past the end go).
///
/// Written to be branch-free on the verdict: every index is stored and the
/// write position advances only on a hit.
#[inline]
fn retain_rows(
    sel: &mut Vec<u32>,
    rows: &Column<PairRow>,
    mut keep: impl FnMut(usize, &PairRow) -> bool,
) {
    let mut n = 0;
    for k in 0..sel.len() {
        let i = sel[k];
        let hit = rows.get(i as usize).is_some_and(|r| keep(i as usize, r));
        sel[n] = i;
        n += usize::from(hit);
    }
    sel.truncate(n);
}

/// One pass of an indexed term over the selection, with the term's kind decided once.
fn sweep(cond: &mut Cond, negated: bool, index: &RunIndex, env: &AnnEnv, sel: &mut Vec<u32>) {
    let rows = &index.rows;
    match cond {
        Cond::Status(m) => {
            let m = *m;
            match index.statuses() {
                // One byte per row instead of the whole row.
                Some(col) => {
                    let mut n = 0;
                    for k in 0..sel.len() {
                        let i = sel[k];
                        let hit = col
                            .get(i as usize)
                            .is_some_and(|&s| (m & (1 << status_bit(s)) != 0) != negated);
                        sel[n] = i;
                        n += usize::from(hit);
                    }
                    sel.truncate(n);
                }
                None => retain_rows(sel, rows, |_, r| status_in(m, r) != negated),
            }
        }
        Cond::Sym(f, set) => {
            let f = *f;
            let field: Option<fn(&RowLabels) -> Sym> = match f {
                SymField::Family => Some(|s| s.family),
                SymField::Transformation => Some(|s| s.transformation),
                _ => None,
            };
            match field {
                // Test each distinct label set once, then scan the codes.
                Some(field) if index.label_sets().len() == rows.len() => index
                    .label_sets()
                    .retain(sel, |s| set.test(field(s), index) != negated),
                _ => retain_rows(sel, rows, |i, r| {
                    set.test_row(f, i, r, index, env.blind()) != negated
                }),
            }
        }
        Cond::Flag { flag, yes, no } => {
            let (flag, yes, no) = (*flag, *yes, *no);
            retain_rows(sel, rows, |_, r| flag_in(flag, yes, no, r) != negated);
        }
        Cond::Expectation(m) => {
            let m = *m;
            retain_rows(sel, rows, |_, r| expectation_in(m, r) != negated);
        }
        Cond::Validity(m) => {
            let m = *m;
            retain_rows(sel, rows, |_, r| validity_in(m, r) != negated);
        }
        Cond::Route(m) => {
            let m = *m;
            retain_rows(sel, rows, |_, r| route_in(m, r) != negated);
        }
        Cond::Outcome(m) => {
            let m = *m;
            retain_rows(sel, rows, |_, r| outcome_in(m, r) != negated);
        }
        Cond::Num(f, op, v) => {
            let (f, op, v) = (*f, *op, *v);
            retain_rows(sel, rows, |i, r| op.holds(f.get(i, r, index), v) != negated);
        }
        Cond::Ann { cond, on_none } => {
            let on_none = *on_none;
            retain_rows(sel, rows, |_, r| {
                let hit = match env.row(index, r) {
                    None => on_none,
                    Some(a) => cond.eval(Some(a)),
                };
                hit != negated
            });
        }
        Cond::Stale { yes, no, memo } => {
            let (yes, no) = (*yes, *no);
            retain_rows(sel, rows, |_, r| {
                let stale = is_stale(env, env.row(index, r), memo, index, r);
                (if stale { yes } else { no }) != negated
            });
        }
        Cond::Disagree { yes, no } => {
            let (yes, no) = (*yes, *no);
            retain_rows(sel, rows, |_, r| {
                (if disagrees(env, index, r) { yes } else { no }) != negated
            });
        }
        Cond::Change(m) => {
            let m = *m;
            sel.retain(|&i| change_in(m, env.changes.get(i as usize).copied()) != negated);
        }
        // Needs I/O: [`Compiled::eval`] handles it row by row.
        Cond::Text(_) => {}
    }
}

/// The bits of the changes a `change:` value names (`*` globs).
fn change_mask(v: &str) -> u8 {
    ChangeKind::ALL
        .iter()
        .enumerate()
        .filter(|(_, c)| Glob::new(v).matches_lower(c.name().as_bytes()))
        .fold(0, |m, (k, _)| m | 1 << k)
}

fn change_in(mask: u8, c: Option<ChangeKind>) -> bool {
    c.and_then(|c| ChangeKind::ALL.iter().position(|&k| k == c))
        .is_some_and(|k| mask & (1 << k) != 0)
}

/// A query ready to evaluate.
#[derive(Debug, Clone)]
struct Compiled {
    conds: Vec<(bool, Cond)>,
    has_text: bool,
    needs_unicode: bool,
}

impl Compiled {
    /// `memo` sizes per-sym memo tables (worth it for many rows only).
    fn new(q: &Query, index: &RunIndex, memo: bool) -> Compiled {
        let memo_len = if memo { index.strings().len() } else { 0 };
        let mut conds: Vec<(bool, Cond)> = q
            .terms
            .iter()
            .map(|t| (t.negated, compile_term(&t.kind, memo_len)))
            .collect();
        for (_, c) in &mut conds {
            if let Cond::Ann { cond, on_none } = c {
                *on_none = cond.eval(None);
            }
        }
        conds.sort_by_key(|(_, c)| c.cost());
        let has_text = conds.iter().any(|(_, c)| matches!(c, Cond::Text(_)));
        let needs_unicode = conds
            .iter()
            .any(|(_, c)| matches!(c, Cond::Text(n) if !n.ascii));
        Compiled {
            conds,
            has_text,
            needs_unicode,
        }
    }

    /// The terms that read no line, a block at a time: one tight pass per
    /// term over the block (its rows stay in cache between passes). The
    /// rows that pass are moved to the front of `rows`, in order; how many.
    fn sweep(&mut self, index: &RunIndex, env: &AnnEnv, rows: &mut [u32]) -> usize {
        const BLOCK: usize = 1024;
        let slow = self.slow();
        // Matches are written back over the rows already read: `kept`
        // never passes the start of the block being read.
        let mut kept = 0;
        let mut sel = Vec::with_capacity(BLOCK);
        for start in (0..rows.len()).step_by(BLOCK) {
            let end = (start + BLOCK).min(rows.len());
            sel.clear();
            sel.extend_from_slice(&rows[start..end]);
            if slow == 0 {
                // Drop indices past the end; the passes below do it otherwise.
                retain_rows(&mut sel, &index.rows, |_, _| true);
            }
            for (negated, cond) in &mut self.conds[..slow] {
                if sel.is_empty() {
                    break;
                }
                sweep(cond, *negated, index, env, &mut sel);
            }
            rows[kept..kept + sel.len()].copy_from_slice(&sel);
            kept += sel.len();
        }
        kept
    }

    /// Where the terms that read lines begin (text terms go last).
    fn slow(&self) -> usize {
        self.conds
            .iter()
            .position(|(_, c)| c.cost() >= TEXT_COST)
            .unwrap_or(self.conds.len())
    }

    /// The terms from [`Compiled::slow`] on, on `rows` that passed the
    /// others: each line read once, in spans in file order, a stretch of
    /// the run on each core, none of fewer than `min` lines
    /// ([`RunIndex::par_for_each_line`]). The matches are moved to the
    /// front, in order; how many.
    fn search(&self, index: &RunIndex, env: &AnnEnv, rows: &mut [u32], min: usize) -> usize {
        let slow = self.slow();
        if slow == self.conds.len() || rows.is_empty() {
            return rows.len();
        }
        let rows_read: &[u32] = rows;
        let parts = index.par_for_each_line(
            rows_read,
            min,
            || (self.clone(), Vec::new()),
            |(c, hits): &mut (Compiled, Vec<usize>), k, line| {
                if c.eval_line(index, env, rows_read[k] as usize, slow, line) {
                    hits.push(k);
                }
            },
        );
        let mut hits = vec![false; rows.len()];
        for (_, part) in parts {
            for k in part {
                hits[k] = true;
            }
        }
        keep_hits(rows, &hits)
    }

    /// Whether row number `i`, whose line was read as `line`, passes the
    /// terms from `from` on.
    fn eval_line(
        &mut self,
        index: &RunIndex,
        env: &AnnEnv,
        i: usize,
        from: usize,
        line: io::Result<&[u8]>,
    ) -> bool {
        match (line, index.rows.get(i)) {
            (Ok(line), Some(r)) => self.eval(index, env, i, r, from, Some(line)),
            _ => false,
        }
    }

    /// Evaluate row number `i`, `row`, against the terms from `from` on;
    /// a text term searches `line` if given, or reads the row's line.
    fn eval(
        &mut self,
        index: &RunIndex,
        env: &AnnEnv,
        i: usize,
        row: &PairRow,
        from: usize,
        line_read: Option<&[u8]>,
    ) -> bool {
        let needs_unicode = self.needs_unicode;
        // The annotation, looked up once per row when a term needs it.
        let mut ann: Option<Option<&Annotation>> = None;
        // The line, ASCII-lowercased, and fully lowercased when a needle is not ASCII.
        let mut line: Option<(Vec<u8>, Option<String>)> = None;
        for (negated, cond) in self.conds.iter_mut().skip(from) {
            let hit = match cond {
                Cond::Status(m) => status_in(*m, row),
                Cond::Sym(f, set) => set.test_row(*f, i, row, index, env.blind()),
                Cond::Flag { flag, yes, no } => flag_in(*flag, *yes, *no, row),
                Cond::Expectation(m) => expectation_in(*m, row),
                Cond::Validity(m) => validity_in(*m, row),
                Cond::Route(m) => route_in(*m, row),
                Cond::Outcome(m) => outcome_in(*m, row),
                Cond::Change(m) => change_in(*m, env.changes.get(i).copied()),
                Cond::Num(f, op, v) => op.holds(f.get(i, row, index), *v),
                Cond::Ann { cond, on_none } => {
                    match *ann.get_or_insert_with(|| env.row(index, row)) {
                        None => *on_none,
                        Some(a) => cond.eval(Some(a)),
                    }
                }
                Cond::Stale { yes, no, memo } => {
                    let a = *ann.get_or_insert_with(|| env.row(index, row));
                    if is_stale(env, a, memo, index, row) {
                        *yes
                    } else {
                        *no
                    }
                }
                Cond::Disagree { yes, no } => {
                    if disagrees(env, index, row) {
                        *yes
                    } else {
                        *no
                    }
                }
                Cond::Text(needle) => {
                    let (ascii, uni) = match &mut line {
                        Some(l) => l,
                        None => {
                            let read = match line_read {
                                Some(l) => Ok(l.to_vec()),
                                None => index.read_line(index.loc(i)),
                            };
                            let Ok(mut bytes) = read else {
                                return false;
                            };
                            let uni = (needs_unicode && !bytes.is_ascii())
                                .then(|| String::from_utf8_lossy(&bytes).to_lowercase());
                            bytes.make_ascii_lowercase();
                            line.insert((bytes, uni))
                        }
                    };
                    match (needle.ascii, uni) {
                        (false, Some(u)) => needle.finder.find(u.as_bytes()).is_some(),
                        _ => needle.finder.find(ascii).is_some(),
                    }
                }
            };
            if hit == *negated {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests;
