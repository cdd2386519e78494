//! A pair's row: the compact summary of one pair that the list, counts and
//! queries read, and its packing.
//!
//! The loader ([`super::load`]) makes one [`PairRow`] per pair; the index
//! ([`super::index`]) keeps them. Strings are interned ids ([`Sym`]), the
//! line's place is a [`Loc`], and every small code shares one word
//! ([`PackedCodes`]).

use super::derive::{Status, ValidityCode};
use super::model::Route;

/// An interned string id; [`NO_SYM`] means "not recorded".
pub type Sym = u32;
/// The id of an absent string.
pub const NO_SYM: Sym = u32::MAX;

/// A digest of the inputs a line records: each side's question and state
/// and the changes the variant declares (`allowed_changes`), as written. A
/// repetition resends the exact recorded inputs, so its line writes them
/// alike, and two trials of one pair whose digests differ were sent
/// different inputs (seed 000, section 7). Both loader paths make it from
/// the values' text, the fast one from the spans its scan recorded, in the
/// first pass, so neither the case check nor a comparison of two runs
/// reads a line again to learn whether its inputs changed.
///
/// Four bytes a row, beside the rows: two different inputs share a digest
/// once in four billion (a regenerated trial, or a pair whose inputs
/// changed between two runs, would then be missed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct InputsDigest(u32);

impl InputsDigest {
    /// Not taken: a record converted from another tool's file, whose
    /// inputs the loader does not read (a comparison reads its line).
    pub const NONE: InputsDigest = InputsDigest(0);
    /// A line that records no question, no state and no declared change.
    pub const EMPTY: InputsDigest = InputsDigest(1);

    /// The digest of `values[side][field]`, the text of each side's
    /// (source, variant) question and state (field 0 and 1), and of
    /// `allowed`, the declared changes, each when recorded (present and
    /// not `null`); [`Self::EMPTY`] when none is.
    pub fn of(values: [[Option<&[u8]>; 2]; 2], allowed: Option<&[u8]>) -> InputsDigest {
        use std::hash::{Hash, Hasher};
        if allowed.is_none() && values.iter().flatten().all(Option::is_none) {
            return InputsDigest::EMPTY;
        }
        let mut h = rustc_hash::FxHasher::default();
        (values, allowed).hash(&mut h);
        let h = h.finish();
        // Folded to four bytes; zero and one stand for none and empty.
        InputsDigest(((h ^ (h >> 32)) as u32).max(2))
    }

    /// The digest, or `None` for a line that records no inputs or whose
    /// inputs were not taken.
    pub fn get(self) -> Option<u32> {
        (self != InputsDigest::NONE && self != InputsDigest::EMPTY).then_some(self.0)
    }

    /// Whether this digest was taken (the line is not a converted record):
    /// two taken digests tell whether two lines' inputs were written alike.
    pub fn taken(self) -> bool {
        self != InputsDigest::NONE
    }
}

/// Where a pair's line starts: the input's number and the byte offset of
/// the line's content, sharing one word (8 bytes). A row keeps its
/// position; the index keeps the rest of its [`Loc`] beside the rows
/// ([`RunIndex::loc`](super::index::RunIndex::loc)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Pos(u64);

impl Pos {
    const OFFSET_BITS: u32 = 48;

    /// A position; offsets past 256 TB are clamped.
    #[inline]
    pub fn new(file: u16, offset: u64) -> Pos {
        let offset = offset.min((1 << Self::OFFSET_BITS) - 1);
        Pos((u64::from(file) << Self::OFFSET_BITS) | offset)
    }

    /// Which input (an index into
    /// [`RunIndex::files`](super::index::RunIndex::files)).
    #[inline]
    pub fn file(self) -> u16 {
        (self.0 >> Self::OFFSET_BITS) as u16
    }

    /// The byte offset of the line's content in its input.
    #[inline]
    pub fn offset(self) -> u64 {
        self.0 & ((1 << Self::OFFSET_BITS) - 1)
    }

    /// The input and offset as one number, unique to a line within a run.
    #[inline]
    pub fn id(self) -> u64 {
        self.0
    }

    /// The input of the line whose [`Pos::id`] is `id`.
    pub fn file_of_id(id: u64) -> u16 {
        (id >> Self::OFFSET_BITS) as u16
    }
}

/// Where a pair's line lives: its [`Pos`], its 1-based line number and the
/// length of its content. Rows keep only the position; the index gives a
/// row's whole `Loc` ([`RunIndex::loc`](super::index::RunIndex::loc)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    pub pos: Pos,
    /// 1-based line number.
    pub line: u32,
    pub len: u32,
}

impl Loc {
    /// A location; offsets past 256 TB are clamped.
    #[inline]
    pub fn new(file: u16, line: u32, offset: u64, len: u32) -> Loc {
        Loc {
            pos: Pos::new(file, offset),
            line,
            len,
        }
    }

    /// Which input (an index into
    /// [`RunIndex::files`](super::index::RunIndex::files)).
    pub fn file(&self) -> u16 {
        self.pos.file()
    }

    /// The byte offset of the line's content in its input.
    pub fn offset(&self) -> u64 {
        self.pos.offset()
    }

    /// The input and offset as one number, unique to a line within a run.
    pub fn id(&self) -> u64 {
        self.pos.id()
    }

    /// The input of the line whose [`Loc::id`] is `id`.
    pub fn file_of_id(id: u64) -> u16 {
        Pos::file_of_id(id)
    }
}

/// Boolean facts of a row, packed.
pub mod flags {
    /// The route changed between source and variant.
    pub const FLIP: u8 = 1;
    /// The transformation was inferred from the diff.
    pub const INFERRED: u8 = 2;
    /// The source margin is under the minimum boundary margin.
    pub const NEAR_BOUNDARY: u8 = 4;
    /// The pair has warnings (recomputed route or verdict disagree, bad fields).
    pub const WARNINGS: u8 = 8;
    /// The recorded `passed` disagrees with the re-checked expectation.
    pub const PASSED_MISMATCH: u8 = 16;
    /// A recorded route disagrees with the policy.
    pub const ROUTE_MISMATCH: u8 = 32;
    /// Approval was not the expected decision, and the record says whether
    /// the variant approved anyway (`unsafe_approval` is present).
    pub const APPROVAL_FORBIDDEN: u8 = 64;
    /// The variant approved where approval was not allowed.
    pub const UNSAFE_APPROVAL: u8 = 128;
}

/// The expectation kind of a row, compactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExpKind {
    None,
    Invariant,
    NotLessUrgent,
    NotMoreUrgent,
    AllowedRoutes,
    Unknown,
}

impl ExpKind {
    /// The kind name as in run files ("none" when not recorded).
    pub fn name(self) -> &'static str {
        match self {
            ExpKind::None => "none",
            ExpKind::Invariant => "invariant",
            ExpKind::NotLessUrgent => "not-less-urgent",
            ExpKind::NotMoreUrgent => "not-more-urgent",
            ExpKind::AllowedRoutes => "allowed-routes",
            ExpKind::Unknown => "unknown",
        }
    }
}

/// A request outcome, compactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OutcomeCode {
    NotRecorded,
    Ok,
    Timeout,
    Error,
    InvalidResponse,
    Other,
}

impl OutcomeCode {
    /// From a side's effective outcome.
    #[inline]
    pub fn of(o: Option<&super::model::Outcome>) -> OutcomeCode {
        use super::model::Outcome;
        match o {
            None => OutcomeCode::NotRecorded,
            Some(Outcome::Ok) => OutcomeCode::Ok,
            Some(Outcome::Timeout) => OutcomeCode::Timeout,
            Some(Outcome::Error) => OutcomeCode::Error,
            Some(Outcome::InvalidResponse) => OutcomeCode::InvalidResponse,
            Some(Outcome::Other(_)) => OutcomeCode::Other,
        }
    }

    /// The outcome name used in queries and exports.
    pub fn name(self) -> &'static str {
        match self {
            OutcomeCode::NotRecorded => "not-recorded",
            OutcomeCode::Ok => "ok",
            OutcomeCode::Timeout => "timeout",
            OutcomeCode::Error => "error",
            OutcomeCode::InvalidResponse => "invalid-response",
            OutcomeCode::Other => "other",
        }
    }
}

/// The compact summary of one pair that the list, counts and queries use.
///
/// 40 bytes: the line's position, two interned strings (case and
/// variant), five numbers and every small code packed in one word (see
/// [`RowCodes`]). The line number and length are kept beside the rows
/// ([`RunIndex::loc`](super::index::RunIndex::loc)).
/// The values that take few distinct values in a run (transformation,
/// family, the versions id, the repetition: a [`RowLabels`]) are kept
/// beside the rows as the code of a distinct set
/// ([`LabelSets`](super::index::LabelSets)), and read by row number
/// ([`RunIndex::family`](super::index::RunIndex::family) and its
/// neighbours).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairRow {
    /// Where the pair's line starts.
    pub pos: Pos,
    pub case: Sym,
    pub variant: Sym,
    /// Variant minus source probability; NaN when not recorded.
    pub dp: f32,
    /// Variant minus source confidence; NaN when not recorded.
    pub dc: f32,
    /// Source boundary margin; NaN when not recorded.
    pub margin: f32,
    /// Variant boundary margin; NaN when not recorded.
    pub variant_margin: f32,
    /// The larger of the two latencies in ms; NaN when not recorded.
    pub latency: f32,
    /// Status, flags, routes, expectation, outcomes, validity and suggested
    /// category, packed: read them with the accessors below.
    pub codes: PackedCodes,
}

// The memory target of issue #24 counts 48 bytes a pair for the row and
// what is kept beside it: 40 here, the rest in the index's columns.
const _: () = assert!(std::mem::size_of::<PairRow>() == 40);

/// The values of a row the index keeps beside it, as one code per row as
/// narrow as the run allows (most runs have a few transformations,
/// families, version triples and repetitions, and few combinations of
/// them: [`LabelSets`](super::index::LabelSets)): the loader hands them
/// over with the row ([`Batch::labels`](super::load::batch::Batch::labels)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RowLabels {
    pub transformation: Sym,
    pub family: Sym,
    /// The row's (contract, schema, model) triple and policy, an index
    /// into the run's table of them ([`NO_VERSIONS`] for none): read it
    /// with [`RunIndex::contract`](super::index::RunIndex::contract),
    /// [`RunIndex::schema`](super::index::RunIndex::schema),
    /// [`RunIndex::model`](super::index::RunIndex::model) and
    /// [`RunIndex::policy`](super::index::RunIndex::policy).
    pub versions: u32,
    /// The recorded repetition.
    pub repetition: Option<u32>,
}

/// The versions id of a row that records none (not in the run's table).
pub const NO_VERSIONS: u32 = u32::MAX;

impl Default for RowLabels {
    /// Nothing recorded.
    fn default() -> RowLabels {
        RowLabels {
            transformation: NO_SYM,
            family: NO_SYM,
            versions: NO_VERSIONS,
            repetition: None,
        }
    }
}

impl PairRow {
    /// Whether a flag from [`flags`] is set.
    pub fn has(&self, flag: u8) -> bool {
        self.flags() & flag != 0
    }

    /// The pair's status.
    #[inline]
    pub fn status(&self) -> Status {
        self.codes.status()
    }

    /// The boolean facts (see [`flags`]).
    pub fn flags(&self) -> u8 {
        self.codes.flags()
    }

    /// The source's route, if recorded or computed.
    pub fn source_route(&self) -> Option<Route> {
        self.codes.source_route()
    }

    /// The variant's route, if recorded or computed.
    pub fn variant_route(&self) -> Option<Route> {
        self.codes.variant_route()
    }

    pub fn expectation(&self) -> ExpKind {
        self.codes.expectation()
    }

    pub fn source_outcome(&self) -> OutcomeCode {
        self.codes.source_outcome()
    }

    pub fn variant_outcome(&self) -> OutcomeCode {
        self.codes.variant_outcome()
    }

    pub fn validity(&self) -> ValidityCode {
        self.codes.validity()
    }

    /// The suggested category id, or `None` when the pair did not fail (or
    /// no rule applied).
    pub fn suggestion(&self) -> Option<&'static str> {
        self.codes.suggestion()
    }

    /// Every small code, unpacked.
    pub fn row_codes(&self) -> RowCodes {
        self.codes.unpack()
    }
}

/// The small codes of a row, unpacked; [`PackedCodes::pack`] stores them in
/// four bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowCodes {
    pub status: Status,
    pub flags: u8,
    pub source_route: Option<Route>,
    pub variant_route: Option<Route>,
    pub expectation: ExpKind,
    pub source_outcome: OutcomeCode,
    pub variant_outcome: OutcomeCode,
    pub validity: ValidityCode,
    /// One of [`super::suggest::CATEGORIES`], or `None`.
    pub suggestion: Option<&'static str>,
}

/// [`RowCodes`] in one word. From the lowest bit: status (3 bits), flags
/// (8), source route (2, 0 for none), variant route (2), expectation (3),
/// source outcome (3), variant outcome (3), validity (3), and the suggested
/// category (5: 0 for none, else its place in
/// [`super::suggest::CATEGORIES`] plus one).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PackedCodes(u32);

const STATUSES: [Status; 6] = [
    Status::Invalid,
    Status::ServiceError,
    Status::Fail,
    Status::Unchecked,
    Status::Pass,
    Status::Boundary,
];
const EXP_KINDS: [ExpKind; 6] = [
    ExpKind::None,
    ExpKind::Invariant,
    ExpKind::NotLessUrgent,
    ExpKind::NotMoreUrgent,
    ExpKind::AllowedRoutes,
    ExpKind::Unknown,
];
const OUTCOMES: [OutcomeCode; 6] = [
    OutcomeCode::NotRecorded,
    OutcomeCode::Ok,
    OutcomeCode::Timeout,
    OutcomeCode::Error,
    OutcomeCode::InvalidResponse,
    OutcomeCode::Other,
];
const VALIDITIES: [ValidityCode; 5] = [
    ValidityCode::Valid,
    ValidityCode::Invalid,
    ValidityCode::Undeclared,
    ValidityCode::NotRecorded,
    ValidityCode::Unknown,
];
// The widths `PackedCodes` gives the validity (3 bits) and the suggested
// category (5 bits, 0 for none).
const _: () = assert!(VALIDITIES.len() <= 1 << 3);
const _: () = assert!(super::suggest::CATEGORIES.len() < 1 << 5);

/// The place of `x` in `all` (every value is listed, so this always finds it).
#[inline]
fn place<T: PartialEq>(all: &[T], x: &T) -> u32 {
    all.iter().position(|a| a == x).unwrap_or(0) as u32
}

impl PackedCodes {
    const FLAGS: u32 = 3;
    const SOURCE_ROUTE: u32 = 11;
    const VARIANT_ROUTE: u32 = 13;
    const EXPECTATION: u32 = 15;
    const SOURCE_OUTCOME: u32 = 18;
    const VARIANT_OUTCOME: u32 = 21;
    const VALIDITY: u32 = 24;
    const SUGGESTION: u32 = 27;

    /// Pack the codes of a row.
    #[inline]
    pub fn pack(c: RowCodes) -> PackedCodes {
        let route = |r: Option<Route>| match r {
            None => 0,
            Some(r) => place(&Route::ALL, &r) + 1,
        };
        let suggestion = c.suggestion.map_or(0, |s| {
            let code = super::suggest::CATEGORIES.iter().position(|&x| x == s);
            debug_assert!(code.is_some(), "category {s} missing from CATEGORIES");
            code.map_or(0, |i| i as u32 + 1)
        });
        PackedCodes(
            place(&STATUSES, &c.status)
                | u32::from(c.flags) << Self::FLAGS
                | route(c.source_route) << Self::SOURCE_ROUTE
                | route(c.variant_route) << Self::VARIANT_ROUTE
                | place(&EXP_KINDS, &c.expectation) << Self::EXPECTATION
                | place(&OUTCOMES, &c.source_outcome) << Self::SOURCE_OUTCOME
                | place(&OUTCOMES, &c.variant_outcome) << Self::VARIANT_OUTCOME
                | place(&VALIDITIES, &c.validity) << Self::VALIDITY
                | suggestion << Self::SUGGESTION,
        )
    }

    #[inline]
    fn bits(self, at: u32, width: u32) -> usize {
        ((self.0 >> at) & ((1 << width) - 1)) as usize
    }

    fn route(self, at: u32) -> Option<Route> {
        self.bits(at, 2)
            .checked_sub(1)
            .and_then(|i| Route::ALL.get(i).copied())
    }

    #[inline]
    pub fn status(self) -> Status {
        STATUSES[self.bits(0, 3).min(STATUSES.len() - 1)]
    }

    pub fn flags(self) -> u8 {
        self.bits(Self::FLAGS, 8) as u8
    }

    pub fn source_route(self) -> Option<Route> {
        self.route(Self::SOURCE_ROUTE)
    }

    pub fn variant_route(self) -> Option<Route> {
        self.route(Self::VARIANT_ROUTE)
    }

    pub fn expectation(self) -> ExpKind {
        EXP_KINDS[self.bits(Self::EXPECTATION, 3).min(EXP_KINDS.len() - 1)]
    }

    pub fn source_outcome(self) -> OutcomeCode {
        OUTCOMES[self.bits(Self::SOURCE_OUTCOME, 3).min(OUTCOMES.len() - 1)]
    }

    pub fn variant_outcome(self) -> OutcomeCode {
        OUTCOMES[self.bits(Self::VARIANT_OUTCOME, 3).min(OUTCOMES.len() - 1)]
    }

    pub fn validity(self) -> ValidityCode {
        VALIDITIES[self.bits(Self::VALIDITY, 3).min(VALIDITIES.len() - 1)]
    }

    /// The suggested category's code: 0 for none, else its place in
    /// [`super::suggest::CATEGORIES`] plus one.
    pub fn suggestion_code(self) -> u8 {
        self.bits(Self::SUGGESTION, 5) as u8
    }

    pub fn suggestion(self) -> Option<&'static str> {
        self.bits(Self::SUGGESTION, 5)
            .checked_sub(1)
            .and_then(|i| super::suggest::CATEGORIES.get(i).copied())
    }

    pub fn unpack(self) -> RowCodes {
        RowCodes {
            status: self.status(),
            flags: self.flags(),
            source_route: self.source_route(),
            variant_route: self.variant_route(),
            expectation: self.expectation(),
            source_outcome: self.source_outcome(),
            variant_outcome: self.variant_outcome(),
            validity: self.validity(),
            suggestion: self.suggestion(),
        }
    }
}

impl From<RowCodes> for PackedCodes {
    fn from(c: RowCodes) -> PackedCodes {
        PackedCodes::pack(c)
    }
}

impl std::fmt::Debug for PackedCodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.unpack().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_rows_stay_small() {
        // 40 bytes: the memory target is 48 bytes per pair plus 50 MB, and
        // record keys are not part of the row (see `index::keys`).
        assert_eq!(std::mem::size_of::<PairRow>(), 40);
        assert_eq!(std::mem::size_of::<Pos>(), 8);
        assert_eq!(std::mem::size_of::<Loc>(), 16);
        let l = Loc::new(3, 7, 123_456_789_012, 99);
        assert_eq!(
            (l.file(), l.line, l.offset(), l.len),
            (3, 7, 123_456_789_012, 99)
        );
    }

    #[test]
    fn row_codes_pack_and_unpack_every_value() {
        let routes = [
            None,
            Some(Route::Pass),
            Some(Route::Review),
            Some(Route::Action),
        ];
        let suggestions = std::iter::once(None).chain(super::super::suggest::CATEGORIES.map(Some));
        let mut n = 0;
        for (i, suggestion) in suggestions.enumerate() {
            for status in STATUSES {
                for (j, &source_route) in routes.iter().enumerate() {
                    for expectation in EXP_KINDS {
                        for (k, source_outcome) in OUTCOMES.into_iter().enumerate() {
                            for validity in VALIDITIES {
                                let c = RowCodes {
                                    status,
                                    flags: (i * 37 + j * 11 + k) as u8 | 0x80,
                                    source_route,
                                    variant_route: routes[(j + i) % routes.len()],
                                    expectation,
                                    source_outcome,
                                    variant_outcome: OUTCOMES[(k + i + 1) % OUTCOMES.len()],
                                    validity,
                                    suggestion,
                                };
                                assert_eq!(PackedCodes::pack(c).unpack(), c);
                                n += 1;
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(n, 8 * STATUSES.len() * 4 * 6 * 6 * VALIDITIES.len());
    }
}
