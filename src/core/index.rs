//! Index run files without holding them.
//!
//! [`open_run`] checks every path up front (a missing file or a directory is
//! a one-line error before any terminal set-up) and returns an empty
//! [`RunIndex`] plus a [`Loader`] whose thread reads the files once, front to
//! back, and sends [`Batch`]es of compact [`PairRow`]s and [`Problem`]s. The
//! index keeps byte offsets and a small summary per pair; a pair's payload is
//! read again and parsed only when it is shown ([`RunIndex::load_pair`]).
//! A bad line never stops the load: it becomes a problem with its file, line
//! and reason.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::derive::{Derived, Status, derive};
use super::formats::{self, Format};
use super::key::{RecordKey, record_key};
use super::model::{PairRecord, Route};
use super::record::{RecordError, map_record};
use super::rowkeys::RowKeys;

/// Lines longer than this become a problem unless the caller sets another cap.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// An interned string id; [`NO_SYM`] means "not recorded".
pub type Sym = u32;
/// The id of an absent string.
pub const NO_SYM: Sym = u32::MAX;

/// Where a pair's line lives: 16 bytes, the input's number and the byte
/// offset sharing one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    /// The input file in the top 16 bits, the byte offset in the low 48.
    pos: u64,
    /// 1-based line number.
    pub line: u32,
    pub len: u32,
}

impl Loc {
    const OFFSET_BITS: u32 = 48;

    /// A location; offsets past 256 TB are clamped.
    pub fn new(file: u16, line: u32, offset: u64, len: u32) -> Loc {
        let offset = offset.min((1 << Self::OFFSET_BITS) - 1);
        Loc {
            pos: (u64::from(file) << Self::OFFSET_BITS) | offset,
            line,
            len,
        }
    }

    /// Which input (an index into [`RunIndex::files`]).
    pub fn file(&self) -> u16 {
        (self.pos >> Self::OFFSET_BITS) as u16
    }

    /// The byte offset of the line's content in its input.
    pub fn offset(&self) -> u64 {
        self.pos & ((1 << Self::OFFSET_BITS) - 1)
    }

    /// The input and offset as one number, unique to a line within a run.
    pub fn id(&self) -> u64 {
        self.pos
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

pub use super::derive::ValidityCode;

/// The compact summary of one pair that the list, counts and queries use.
///
/// 80 bytes: the location, the record key, four interned strings, five
/// numbers, the (contract, schema, model) triple as one id, the repetition
/// and every small code packed in one word (see [`RowCodes`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairRow {
    pub loc: Loc,
    pub case: Sym,
    pub variant: Sym,
    pub transformation: Sym,
    pub family: Sym,
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
    /// The row's (contract, schema, model) triple, an index into the run's
    /// table of them: read it with [`RunIndex::contract`],
    /// [`RunIndex::schema`] and [`RunIndex::model`].
    pub versions: u32,
    /// The recorded repetition, or `u32::MAX`.
    pub repetition: u32,
    /// Status, flags, routes, expectation, outcomes, validity and suggested
    /// category, packed: read them with the accessors below.
    pub codes: PackedCodes,
}

impl PairRow {
    /// Whether a flag from [`flags`] is set.
    pub fn has(&self, flag: u8) -> bool {
        self.flags() & flag != 0
    }

    /// The pair's status.
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
/// source outcome (3), variant outcome (3), validity (2), and the suggested
/// category (6: 0 for none, else its place in
/// [`super::suggest::CATEGORIES`] plus one).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PackedCodes(u32);

const STATUSES: [Status; 5] = [
    Status::Invalid,
    Status::ServiceError,
    Status::Fail,
    Status::Unchecked,
    Status::Pass,
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
const VALIDITIES: [ValidityCode; 4] = [
    ValidityCode::Valid,
    ValidityCode::Invalid,
    ValidityCode::Undeclared,
    ValidityCode::NotRecorded,
];

/// The place of `x` in `all` (every value is listed, so this always finds it).
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
    const SUGGESTION: u32 = 26;

    /// Pack the codes of a row.
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

    fn bits(self, at: u32, width: u32) -> usize {
        ((self.0 >> at) & ((1 << width) - 1)) as usize
    }

    fn route(self, at: u32) -> Option<Route> {
        self.bits(at, 2)
            .checked_sub(1)
            .and_then(|i| Route::ALL.get(i).copied())
    }

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
        VALIDITIES[self.bits(Self::VALIDITY, 2)]
    }

    /// The suggested category's code: 0 for none, else its place in
    /// [`super::suggest::CATEGORIES`] plus one.
    pub fn suggestion_code(self) -> u8 {
        self.bits(Self::SUGGESTION, 6) as u8
    }

    pub fn suggestion(self) -> Option<&'static str> {
        self.bits(Self::SUGGESTION, 6)
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

/// What kind of trouble a line gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProblemKind {
    Malformed,
    NotAnObject,
    MissingField,
    WrongType,
    InvalidUtf8,
    TooLong,
    TooDeep,
    Truncated,
    /// The pair opened, but one of its fields was unusable.
    FieldWarning,
    Io,
}

impl ProblemKind {
    /// A short label for the problems panel.
    pub fn label(self) -> &'static str {
        match self {
            ProblemKind::Malformed => "malformed JSON",
            ProblemKind::NotAnObject => "not an object",
            ProblemKind::MissingField => "missing field",
            ProblemKind::WrongType => "wrong type",
            ProblemKind::InvalidUtf8 => "invalid UTF-8",
            ProblemKind::TooLong => "line too long",
            ProblemKind::TooDeep => "nesting too deep",
            ProblemKind::Truncated => "cut off",
            ProblemKind::FieldWarning => "field warning",
            ProblemKind::Io => "read error",
        }
    }

    /// Whether the line was skipped (as opposed to opened with a warning).
    pub fn skips_line(self) -> bool {
        !matches!(self, ProblemKind::FieldWarning)
    }
}

/// One bad line, or one unusable field of a line that opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    pub line: u64,
    pub kind: ProblemKind,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.file,
            self.line,
            self.kind.label(),
            self.message
        )
    }
}

/// One opened input.
#[derive(Debug)]
pub struct RunFile {
    /// The name to show: the path as given, or "stdin".
    pub display: String,
    pub path: PathBuf,
    pub size: u64,
    reader: File,
    /// Keeps a copy of standard input (or a decompressed input) alive for as
    /// long as the index is.
    _temp: Option<tempfile::TempPath>,
    /// A gzip input being decompressed into `reader`'s file in the background.
    growing: Option<Arc<Growing>>,
    /// What the file was read as: native pair records, or another tool's
    /// results converted into them (see [`formats`]).
    pub format: Format,
    /// Notes about the file as a whole: what a conversion warned about, or
    /// why no known format matched.
    pub notes: Vec<String>,
}

impl RunFile {
    /// The metadata of the file as opened (the old file, if the path was since replaced).
    pub fn opened_metadata(&self) -> io::Result<std::fs::Metadata> {
        self.reader.metadata()
    }

    /// Whether this input is the file at `path` (not a private copy of
    /// standard input, a FIFO or a decompressed gzip).
    pub fn on_disk(&self) -> bool {
        self._temp.is_none()
    }
}

impl Drop for RunFile {
    fn drop(&mut self) {
        if let Some(g) = &self.growing {
            g.cancel.store(true, Ordering::Relaxed);
        }
    }
}

/// A path that cannot be opened, with the message to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenError(pub String);

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The index of a run: files, interned strings, one row per pair, problems.
#[derive(Debug, Default)]
pub struct RunIndex {
    pub files: Vec<RunFile>,
    strings: Vec<Box<str>>,
    /// Each distinct (contract, schema, model) triple; [`PairRow::versions`]
    /// indexes it.
    versions: Vec<[Sym; 3]>,
    pub rows: Vec<PairRow>,
    /// Each row's status, one byte per row, appended with the rows by
    /// [`RunIndex::apply`]: the list and the query scan it instead of the
    /// whole rows. See [`RunIndex::statuses`].
    statuses: Vec<Status>,
    /// Each row's family and transformation as a one-byte code (see [`Codes`]).
    families: Codes,
    transformations: Codes,
    pub problems: Vec<Problem>,
    /// Lines that could not be opened (problems that skip a line).
    pub skipped_lines: usize,
    pub failures: usize,
    pub bytes_total: u64,
    pub bytes_read: u64,
    pub done: bool,
    pub elapsed: Duration,
    /// Record keys of the rows that need one (see [`super::rowkeys`]).
    pub(crate) keys: RowKeys,
}

/// A low-cardinality string column, one byte per row: code `c` stands for
/// `values[c]`, and [`Codes::OTHER`] for "read the row" (past 255 distinct
/// values). A query term tests each distinct value once, then scans bytes
/// instead of gathering a field from every 80-byte row.
#[derive(Debug, Default, Clone)]
pub struct Codes {
    pub codes: Vec<u8>,
    /// The string of each code, in the order first seen.
    pub values: Vec<Sym>,
    map: HashMap<Sym, u8>,
}

impl Codes {
    /// The code of a row whose value is not in [`Codes::values`].
    pub const OTHER: u8 = u8::MAX;

    fn extend(&mut self, syms: impl Iterator<Item = Sym>) {
        for sym in syms {
            let code = match self.map.get(&sym) {
                Some(&c) => c,
                None if self.values.len() < usize::from(Codes::OTHER) => {
                    let c = self.values.len() as u8;
                    self.values.push(sym);
                    self.map.insert(sym, c);
                    c
                }
                None => Codes::OTHER,
            };
            self.codes.push(code);
        }
    }
}

/// A parsed pair with its derived facts and the raw line, for the detail view.
#[derive(Debug, Clone)]
pub struct LoadedPair {
    /// The record key of the line as it is now.
    pub key: RecordKey,
    pub record: PairRecord,
    pub derived: Derived,
    pub raw: Value,
}

impl RunIndex {
    /// The string behind an interned id ("" for [`NO_SYM`]).
    pub fn str(&self, s: Sym) -> &str {
        self.strings.get(s as usize).map(|b| &**b).unwrap_or("")
    }

    /// Each row's status, in row order, when the column covers every row
    /// (rows are added by [`RunIndex::apply`]); `None` if `rows` was set
    /// another way, and then the rows themselves must be read.
    pub fn statuses(&self) -> Option<&[Status]> {
        (self.statuses.len() == self.rows.len()).then_some(&self.statuses[..])
    }

    /// Each row's family as a one-byte code, when the column covers every row.
    pub fn family_codes(&self) -> Option<&Codes> {
        (self.families.codes.len() == self.rows.len()).then_some(&self.families)
    }

    /// Each row's transformation as a one-byte code, when the column covers every row.
    pub fn transformation_codes(&self) -> Option<&Codes> {
        (self.transformations.codes.len() == self.rows.len()).then_some(&self.transformations)
    }

    /// Every interned string, in id order.
    pub fn strings(&self) -> &[Box<str>] {
        &self.strings
    }

    /// A row's (contract, schema, model) triple ([`NO_SYM`] for each when
    /// the row's id is not in the table).
    pub fn versions_of(&self, row: &PairRow) -> [Sym; 3] {
        self.versions
            .get(row.versions as usize)
            .copied()
            .unwrap_or([NO_SYM; 3])
    }

    /// A row's contract version.
    pub fn contract(&self, row: &PairRow) -> Sym {
        self.versions_of(row)[0]
    }

    /// A row's state schema version.
    pub fn schema(&self, row: &PairRow) -> Sym {
        self.versions_of(row)[1]
    }

    /// A row's model id.
    pub fn model(&self, row: &PairRow) -> Sym {
        self.versions_of(row)[2]
    }

    /// The id of a (contract, schema, model) triple for [`PairRow::versions`],
    /// adding it to the table when new: for rows built outside the loader.
    pub fn versions_id(&mut self, triple: [Sym; 3]) -> u32 {
        match self.versions.iter().position(|t| *t == triple) {
            Some(i) => i as u32,
            None => {
                self.versions.push(triple);
                (self.versions.len() - 1) as u32
            }
        }
    }

    /// Merge a batch from the loader.
    pub fn apply(&mut self, b: Batch) {
        self.strings.extend(b.strings);
        self.versions.extend(b.versions);
        self.failures += b.rows.iter().filter(|r| r.status().is_failure()).count();
        self.skipped_lines += b.problems.iter().filter(|p| p.kind.skips_line()).count();
        if self.statuses.len() != self.rows.len() {
            // The rows were set some other way: start the column again.
            self.statuses = self.rows.iter().map(|r| r.status()).collect();
        }
        self.statuses.extend(b.rows.iter().map(|r| r.status()));
        if self.families.codes.len() != self.rows.len() {
            self.families = Codes::default();
            self.transformations = Codes::default();
            self.families.extend(self.rows.iter().map(|r| r.family));
            self.transformations
                .extend(self.rows.iter().map(|r| r.transformation));
        }
        self.families.extend(b.rows.iter().map(|r| r.family));
        self.transformations
            .extend(b.rows.iter().map(|r| r.transformation));
        self.rows.extend(b.rows);
        self.problems.extend(b.problems);
        self.bytes_read = b.bytes_read;
        if let Some(elapsed) = b.finished {
            self.done = true;
            self.elapsed = elapsed;
        }
        if self.done {
            // A gzip input's size was a guess, and a followed run grows.
            self.bytes_total = self.bytes_total.max(self.bytes_read);
        }
    }

    /// The names of the inputs, joined for a status bar.
    pub fn display_name(&self) -> String {
        match self.files.len() {
            0 => String::new(),
            1 => self.files[0].display.clone(),
            n => format!("{} (+{} more)", self.files[0].display, n - 1),
        }
    }

    /// Read a pair's line again from its file.
    pub fn read_line(&self, loc: Loc) -> io::Result<Vec<u8>> {
        let f = self
            .files
            .get(loc.file() as usize)
            .ok_or_else(|| io::Error::other("no such input file"))?;
        let mut buf = vec![0u8; loc.len as usize];
        read_exact_at(&f.reader, &mut buf, loc.offset())?;
        Ok(buf)
    }

    /// Read, parse and derive one pair. The error is a message for the screen.
    pub fn load_pair(&self, row: &PairRow) -> Result<LoadedPair, String> {
        let file = self
            .files
            .get(row.loc.file() as usize)
            .map(|f| f.display.as_str())
            .unwrap_or("?");
        let bytes = self.read_line(row.loc).map_err(|e| {
            format!(
                "{file}:{}: cannot read the line again ({e}); the file was changed or truncated — press R to reload the run",
                row.loc.line
            )
        })?;
        let raw: Value = serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "{file}:{}: the line no longer parses ({e}); the file was changed while open — press R to reload the run",
                row.loc.line
            )
        })?;
        let key = record_key(&raw);
        let record =
            map_record(raw.clone()).map_err(|e| format!("{file}:{}: {e}", row.loc.line))?;
        if self.key(row).is_some_and(|k| k != key)
            || record.case_id != self.str(row.case)
            || record.variant_id != self.str(row.variant)
        {
            return Err(format!(
                "{file}:{}: the line has changed since it was indexed (another pair is there now); the file was rewritten while open — press R to reload the run",
                row.loc.line
            ));
        }
        let derived = derive(&record);
        Ok(LoadedPair {
            key,
            record,
            derived,
            raw,
        })
    }
}

#[cfg(unix)]
pub(crate) fn read_exact_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    f.read_exact_at(buf, offset)
}

#[cfg(not(unix))]
pub(crate) fn read_exact_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        let n = f.seek_read(&mut buf[done..], offset + done as u64)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        done += n;
    }
    Ok(())
}

/// A slice of indexing work, sent from the loader thread.
#[derive(Debug, Default)]
pub struct Batch {
    /// Strings interned since the last batch, in id order.
    pub strings: Vec<Box<str>>,
    /// (contract, schema, model) triples first seen since the last batch, in id order.
    pub versions: Vec<[Sym; 3]>,
    pub rows: Vec<PairRow>,
    pub problems: Vec<Problem>,
    /// Bytes read so far over all files.
    pub bytes_read: u64,
    /// Set on the last batch, with the time the whole load took.
    pub finished: Option<Duration>,
}

/// The loader thread's handle: receive batches until one is `finished`.
#[derive(Debug)]
pub struct Loader {
    pub rx: Receiver<Batch>,
    handle: Option<JoinHandle<()>>,
    /// Tells a following loader to stop (set when the loader is dropped).
    stop: Arc<AtomicBool>,
}

impl Drop for Loader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Loader {
    /// Take every batch that is ready now, without waiting.
    pub fn drain_into(&self, index: &mut RunIndex) -> bool {
        let mut any = false;
        while let Ok(b) = self.rx.try_recv() {
            index.apply(b);
            any = true;
        }
        any
    }

    /// Wait for the whole load (the first pass, when following) and merge it.
    pub fn finish_into(mut self, index: &mut RunIndex) {
        while let Ok(b) = self.rx.recv() {
            let last = b.finished.is_some();
            index.apply(b);
            if last {
                break;
            }
        }
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Options for opening a run.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    pub max_line_bytes: usize,
    /// Keep reading lines appended to the files after the first pass (`-f`).
    pub follow: bool,
    /// Read every input as this format instead of detecting it (`--format`).
    pub format: Option<Format>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            follow: false,
            format: None,
        }
    }
}

/// The moment the first run was opened in this process (the origin of
/// `TRIAGE_TRACE_FIRST_FRAME`).
pub fn clock_start() -> Instant {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *START.get_or_init(Instant::now)
}

/// Check and open every input, then start indexing them in the background.
pub fn open_run(paths: &[String], opts: &OpenOptions) -> Result<(RunIndex, Loader), OpenError> {
    open_run_with(paths, opts, ParseMode::Fast)
}

/// [`open_run`] with a chosen parse mode (tests compare the two).
#[doc(hidden)]
pub fn open_run_with(
    paths: &[String],
    opts: &OpenOptions,
    mode: ParseMode,
) -> Result<(RunIndex, Loader), OpenError> {
    clock_start();
    let mut files = Vec::new();
    for p in paths {
        files.push(open_input(p, opts.format)?);
    }
    let mut index = RunIndex {
        bytes_total: files.iter().map(|f| f.size).sum(),
        ..RunIndex::default()
    };
    let mut inputs = Vec::new();
    let mut tails = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let cannot = |e: io::Error| OpenError(format!("triage: cannot read '{}': {e}", f.display));
        let r = f.reader.try_clone().map_err(cannot)?;
        let reader: Box<dyn Read + Send> = match &f.growing {
            Some(g) => Box::new(Follow {
                file: r,
                growing: g.clone(),
                pos: 0,
            }),
            None if opts.follow && f.on_disk() => {
                let idx = u16::try_from(i).unwrap_or(u16::MAX);
                let (reader, tail) =
                    super::follow::start(&r, &f.path, idx, &f.display).map_err(cannot)?;
                tails.push(tail);
                Box::new(reader)
            }
            None => Box::new(r),
        };
        inputs.push(Input {
            display: f.display.clone(),
            reader,
        });
    }
    index.files = files;
    let (tx, rx) = mpsc::channel();
    let max = opts.max_line_bytes;
    let stop = Arc::new(AtomicBool::new(false));
    let stop_flag = stop.clone();
    let handle = std::thread::Builder::new()
        .name("triage-index".into())
        .spawn(move || {
            // On a worker of the pool, whose scopes then run in place: the
            // chunk loop hands nothing to another thread between chunks.
            let mut st = rayon::scope(|_| index_files(inputs, max, mode, tx));
            if !tails.is_empty() {
                super::follow::follow(&mut st, tails, max, mode, &stop_flag);
            }
        })
        .map_err(|e| OpenError(format!("triage: cannot start the indexer: {e}")))?;
    Ok((
        index,
        Loader {
            rx,
            handle: Some(handle),
            stop,
        },
    ))
}

/// Open and fully index a run on this thread (for headless commands and tests).
pub fn load_run(paths: &[String], opts: &OpenOptions) -> Result<RunIndex, OpenError> {
    load_run_with(paths, opts, ParseMode::Fast)
}

/// [`load_run`] with a chosen parse mode (tests compare the two).
#[doc(hidden)]
pub fn load_run_with(
    paths: &[String],
    opts: &OpenOptions,
    mode: ParseMode,
) -> Result<RunIndex, OpenError> {
    let (mut index, loader) = open_run_with(paths, opts, mode)?;
    loader.finish_into(&mut index);
    Ok(index)
}

/// How far the background decompression of a gzip input has got.
#[derive(Debug, Default)]
struct Growing {
    state: Mutex<GrowState>,
    more: Condvar,
    /// Set when the index is dropped: stop decompressing.
    cancel: AtomicBool,
}

#[derive(Debug, Default)]
struct GrowState {
    written: u64,
    done: bool,
    error: Option<String>,
}

/// Reads a file that another thread is still writing, waiting at its end
/// until the writer is done.
struct Follow {
    file: File,
    growing: Arc<Growing>,
    pos: u64,
}

impl Read for Follow {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let (written, done, error) = {
                let st = self
                    .growing
                    .state
                    .lock()
                    .map_err(|_| io::Error::other("the decompressor stopped"))?;
                (st.written, st.done, st.error.clone())
            };
            if written > self.pos {
                let n = buf.len().min((written - self.pos) as usize);
                let got = self.file.read(&mut buf[..n])?;
                self.pos += got as u64;
                if got > 0 {
                    return Ok(got);
                }
            }
            if done {
                return match error {
                    Some(e) => Err(io::Error::other(e)),
                    None => Ok(0),
                };
            }
            let st = self
                .growing
                .state
                .lock()
                .map_err(|_| io::Error::other("the decompressor stopped"))?;
            if st.written == written && !st.done {
                let _ = self
                    .growing
                    .more
                    .wait_timeout(st, Duration::from_millis(50));
            }
        }
    }
}

/// Whether a file starts with the gzip magic bytes.
fn is_gzip(f: &File) -> bool {
    let mut magic = [0u8; 2];
    read_exact_at(f, &mut magic, 0).is_ok() && magic == [0x1f, 0x8b]
}

/// Decompress a gzip input into a private temporary file in the background;
/// the index reads it as it grows, and the detail view reads lines back from it.
fn open_gzip(file: File, display: String, compressed: u64) -> Result<RunFile, OpenError> {
    let err = |e: io::Error| OpenError(format!("triage: cannot decompress {display}: {e}"));
    // The size of the last member, mod 2^32: a guess for the progress bar.
    let mut trailer = [0u8; 4];
    let isize = if compressed >= 18 && read_exact_at(&file, &mut trailer, compressed - 4).is_ok() {
        u64::from(u32::from_le_bytes(trailer))
    } else {
        0
    };
    let tmp = tempfile::NamedTempFile::new().map_err(err)?;
    let reader = tmp.reopen().map_err(err)?;
    let (mut out, temp_path) = tmp.into_parts();
    let growing = Arc::new(Growing::default());
    let g = growing.clone();
    std::thread::Builder::new()
        .name("triage-gunzip".into())
        .spawn(move || {
            use std::io::Write as _;
            let mut dec =
                flate2::read::MultiGzDecoder::new(io::BufReader::with_capacity(256 * 1024, file));
            let mut buf = vec![0u8; 1 << 20];
            let result = loop {
                if g.cancel.load(Ordering::Relaxed) {
                    break Ok(());
                }
                // Fill most of the buffer before writing, in few large writes.
                let mut filled = 0;
                let mut end = false;
                while filled < buf.len() {
                    match dec.read(&mut buf[filled..]) {
                        Ok(0) => {
                            end = true;
                            break;
                        }
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return finish_growing(&g, Some(e.to_string())),
                    }
                    if filled >= 64 * 1024 && g.state.lock().is_ok_and(|s| s.written == 0) {
                        // The first lines go out early for a fast first screen.
                        break;
                    }
                }
                if let Err(e) = out.write_all(&buf[..filled]) {
                    break Err(e);
                }
                if let Ok(mut st) = g.state.lock() {
                    st.written += filled as u64;
                }
                g.more.notify_all();
                if end {
                    break Ok(());
                }
            };
            finish_growing(&g, result.err().map(|e| e.to_string()));
        })
        .map_err(err)?;
    Ok(RunFile {
        path: temp_path.to_path_buf(),
        display,
        size: isize.max(compressed),
        reader,
        _temp: Some(temp_path),
        growing: Some(growing),
        format: Format::Native,
        notes: Vec::new(),
    })
}

fn finish_growing(g: &Growing, error: Option<String>) {
    if let Ok(mut st) = g.state.lock() {
        st.done = true;
        st.error = error.map(|e| format!("cannot decompress: {e}"));
    }
    g.more.notify_all();
}

/// How long a named pipe may stay silent before triage gives up on it
/// (`TRIAGE_PIPE_WAIT_SECS` overrides it, for tests).
const PIPE_WAIT: Duration = Duration::from_secs(10);

/// The message for a file that could not be opened or examined: what
/// happened to which file, and what to do about it.
#[doc(hidden)]
pub fn open_error(shown: &str, e: &io::Error) -> OpenError {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return OpenError(format!(
            "triage: '{shown}' is a loop of symbolic links; point the link at the run file itself"
        ));
    }
    OpenError(match e.kind() {
        io::ErrorKind::NotFound => {
            format!("triage: '{shown}' does not exist; check the path and try again")
        }
        io::ErrorKind::PermissionDenied => format!(
            "triage: cannot read '{shown}': permission denied; make it readable (chmod u+r) or open a copy you can read"
        ),
        _ => format!("triage: cannot open '{shown}': {e}"),
    })
}

fn open_input(p: &str, want: Option<Format>) -> Result<RunFile, OpenError> {
    if p == "-" {
        return as_format(stdin_copy()?, want);
    }
    let path = Path::new(p);
    let shown = crate::core::text::inert_line(p);
    let meta = std::fs::metadata(path).map_err(|e| open_error(&shown, &e))?;
    if meta.is_dir() {
        return Err(OpenError(format!(
            "triage: '{shown}' is a directory; pass a run file (.jsonl) inside it"
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            // A pipe (`<(cmd)`, a named FIFO) is read to its end into a
            // private copy; one nobody writes to is refused, not waited on
            // forever.
            let file = open_pipe(path, &shown, pipe_wait())?;
            return as_format(copy_to_temp(file, shown)?, want);
        }
        if t.is_char_device() || t.is_block_device() || t.is_socket() {
            return Err(OpenError(format!(
                "triage: '{shown}' is a device or socket, not a run file; save the run to a file and open that"
            )));
        }
    }
    let file = File::open(path).map_err(|e| open_error(&shown, &e))?;
    if !meta.is_file() {
        // Anything else that is not a plain file cannot be read twice: keep a private copy.
        return as_format(copy_to_temp(file, shown)?, want);
    }
    let (format, notes) = sniff_format(&file, meta.len(), want);
    if format != Format::Native {
        return open_converted(path, path, shown, format, want.is_some());
    }
    let mut opened = if is_gzip(&file) {
        open_gzip(file, shown, meta.len())?
    } else {
        RunFile {
            display: shown,
            path: path.to_path_buf(),
            size: meta.len(),
            reader: file,
            _temp: None,
            growing: None,
            format: Format::Native,
            notes: Vec::new(),
        }
    };
    opened.notes = notes;
    Ok(opened)
}

/// Which format to read a file as: `want` when given, else what its head
/// looks like. Only the first [`formats::DETECT_HEAD_BYTES`] are read, so a
/// large native run pays for one small read. A file no format recognises
/// is read as native lines, with a note of what was tried.
fn sniff_format(file: &File, len: u64, want: Option<Format>) -> (Format, Vec<String>) {
    if let Some(f) = want {
        return (f, Vec::new());
    }
    let mut head = vec![0u8; (len as usize).min(formats::DETECT_HEAD_BYTES)];
    if head.is_empty() || read_exact_at(file, &mut head, 0).is_err() {
        // Nothing to sniff; the loader reports an unreadable file itself.
        return (Format::Native, Vec::new());
    }
    let found = formats::detect(&head);
    if let Some(f) = found.format {
        return (f, Vec::new());
    }
    // A first line longer than the head says nothing either way: the
    // loader reads it (or reports it) as a native line.
    if head.len() < len as usize && !head.contains(&b'\n') {
        return (Format::Native, Vec::new());
    }
    (Format::Native, vec![found.note()])
}

/// An input already copied to a private file (standard input, a FIFO):
/// detect its format there, and convert it when it is another tool's.
fn as_format(mut opened: RunFile, want: Option<Format>) -> Result<RunFile, OpenError> {
    let (format, notes) = sniff_format(&opened.reader, opened.size, want);
    if format == Format::Native {
        opened.notes = notes;
        return Ok(opened);
    }
    let path = opened.path.clone();
    open_converted(&path, &path, opened.display.clone(), format, want.is_some())
}

/// Convert another tool's result file into native records in a private
/// temporary file, which the index then reads like any run. The original is
/// only read; `path` (where annotations and exports are checked against)
/// stays the user's file.
fn open_converted(
    src: &Path,
    path: &Path,
    display: String,
    format: Format,
    chosen: bool,
) -> Result<RunFile, OpenError> {
    let io_err =
        |e: io::Error| OpenError(format!("triage: cannot convert {display} ({format}): {e}"));
    let mut tmp = tempfile::NamedTempFile::new().map_err(io_err)?;
    let report = {
        let mut w = io::BufWriter::new(tmp.as_file_mut());
        let report = formats::convert(src, format, &mut w).map_err(|e| {
            let how = if chosen {
                "check that --format names the tool that wrote it".to_string()
            } else {
                format!(
                    "it looks like a {format} file; pass --format NAME to read it as another format"
                )
            };
            OpenError(format!("triage: {e}\n  {how}"))
        })?;
        io::Write::flush(&mut w).map_err(io_err)?;
        report
    };
    let size = tmp.as_file().metadata().map_err(io_err)?.len();
    let reader = tmp.reopen().map_err(io_err)?;
    Ok(RunFile {
        display,
        path: path.to_path_buf(),
        size,
        reader,
        _temp: Some(tmp.into_temp_path()),
        growing: None,
        format,
        notes: report.warnings,
    })
}

fn pipe_wait() -> Duration {
    std::env::var("TRIAGE_PIPE_WAIT_SECS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(PIPE_WAIT, Duration::from_secs)
}

/// Open a named pipe without blocking on a missing writer, then wait (up to
/// `wait`) for its first bytes or its end; the returned file blocks again.
#[cfg(unix)]
fn open_pipe(path: &Path, shown: &str, wait: Duration) -> Result<File, OpenError> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| open_error(shown, &e))?;
    let fd = file.as_raw_fd();
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd for a descriptor this function owns.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n > 0 {
            break;
        }
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(open_error(shown, &e));
        }
        return Err(OpenError(format!(
            "triage: '{shown}' is a named pipe and nothing was written to it in {} s; start the program that writes the run first, or save the run to a file and open that",
            wait.as_secs()
        )));
    }
    // SAFETY: fcntl on a descriptor this function owns, clearing one flag.
    let ok = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) >= 0
    };
    if !ok {
        return Err(open_error(shown, &io::Error::last_os_error()));
    }
    Ok(file)
}

fn stdin_copy() -> Result<RunFile, OpenError> {
    copy_to_temp(io::stdin().lock(), "stdin".to_string())
}

fn copy_to_temp(mut input: impl Read, display: String) -> Result<RunFile, OpenError> {
    let err = |e: io::Error| OpenError(format!("triage: cannot buffer {display}: {e}"));
    let mut tmp = tempfile::NamedTempFile::new().map_err(err)?;
    let size = io::copy(&mut input, tmp.as_file_mut()).map_err(err)?;
    let reader = tmp.reopen().map_err(err)?;
    let temp_path = tmp.into_temp_path();
    Ok(RunFile {
        path: temp_path.to_path_buf(),
        display,
        size,
        reader,
        _temp: Some(temp_path),
        growing: None,
        format: Format::Native,
        notes: Vec::new(),
    })
}

/// How lines are read: the typed fast path with the slow path as fallback,
/// or the slow path alone (kept for tests that compare the two).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseMode {
    Fast,
    Slow,
}

/// The first chunk is small so that the first rows reach the screen at once;
/// later chunks grow to this size and are parsed in parallel.
const FIRST_CHUNK: usize = 64 * 1024;
const MAX_CHUNK: usize = 1024 * 1024;
/// Lines parsed together on one thread, at the least.
const PARALLEL_MIN_LINES: usize = 8;

/// One input as the loader thread reads it.
struct Input {
    display: String,
    reader: Box<dyn Read + Send>,
}

/// The loader thread: read each file front to back in chunks of lines,
/// parse each chunk in parallel, then intern and send its rows in order.
fn index_files(
    inputs: Vec<Input>,
    max_line: usize,
    mode: ParseMode,
    tx: Sender<Batch>,
) -> IndexState {
    let start = Instant::now();
    let mut st = IndexState {
        interned: Interner::default(),
        triples: HashMap::default(),
        recent: [[NO_SYM; RECENT]; Field::COUNT],
        last_triple: None,
        batch: Batch::default(),
        bytes_read: 0,
        tx,
        sent_any: false,
    };
    for (file_idx, input) in inputs.into_iter().enumerate() {
        let file_idx = u16::try_from(file_idx).unwrap_or(u16::MAX);
        let Input { display, reader } = input;
        if let Err(e) = index_one(&mut st, file_idx, &display, reader, max_line, mode) {
            st.batch.problems.push(Problem {
                file: display.clone(),
                line: 0,
                kind: ProblemKind::Io,
                message: format!(
                    "reading stopped early: {e}; the pairs before it opened — check the file (a copy cut short?) and open it again"
                ),
            });
        }
    }
    st.batch.finished = Some(start.elapsed());
    st.flush();
    st
}

/// A fast hash for short interned strings (FxHash's mixing step).
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.write(&[i]);
    }

    fn write_u32(&mut self, i: u32) {
        self.write_u64(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(K);
    }

    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }

    fn finish(&self) -> u64 {
        // The multiplications mix upwards only: the low bits, which pick
        // the bucket, would hardly depend on the first bytes of a string
        // (ids such as `case-000120` and `case-000210` would crowd into
        // few buckets). The rotation brings the well-mixed high bits down.
        self.0.rotate_left(26)
    }
}

pub(crate) type FxMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;

/// The loader's interned strings: each stored once, end to end in one
/// buffer, with a table of ids hashed by their text (a map keyed by the
/// strings would hold a second copy of each, plus a pointer and length).
#[derive(Default)]
struct Interner {
    text: String,
    /// Where each string ends in `text`, by id.
    ends: Vec<usize>,
    table: hashbrown::HashTable<Sym>,
}

impl Interner {
    fn hash(s: &[u8]) -> u64 {
        use std::hash::Hasher;
        let mut h = FxHasher::default();
        h.write(s);
        h.finish()
    }

    /// Where the string with id `id` lies in `text`.
    #[inline(always)]
    fn span(ends: &[usize], id: Sym) -> std::ops::Range<usize> {
        let i = id as usize;
        (if i == 0 { 0 } else { ends[i - 1] })..ends[i]
    }

    /// The bytes of the string with id `id` in `text` (no check of char
    /// boundaries: for comparisons).
    #[inline(always)]
    fn bytes_at<'a>(text: &'a str, ends: &[usize], id: Sym) -> &'a [u8] {
        &text.as_bytes()[Self::span(ends, id)]
    }

    /// The string with id `id` in `text`.
    fn at<'a>(text: &'a str, ends: &[usize], id: Sym) -> &'a str {
        &text[Self::span(ends, id)]
    }

    /// The id of `s`, and whether it was new.
    fn intern(&mut self, s: &str) -> (Sym, bool) {
        self.intern_bytes(s.as_bytes()).unwrap_or((NO_SYM, false))
    }

    /// The id of the UTF-8 text `s`, looked up by its bytes (decoded only
    /// when it is new), and whether it was new; `None` if it is not UTF-8.
    fn intern_bytes(&mut self, s: &[u8]) -> Option<(Sym, bool)> {
        use hashbrown::hash_table::Entry;
        let Interner { text, ends, table } = self;
        let entry = table.entry(
            Self::hash(s),
            |&id| Self::bytes_at(text, ends, id) == s,
            |&id| Self::hash(Self::bytes_at(text, ends, id)),
        );
        match entry {
            Entry::Occupied(e) => Some((*e.get(), false)),
            Entry::Vacant(e) => {
                let id = ends.len() as Sym;
                text.push_str(std::str::from_utf8(s).ok()?);
                ends.push(text.len());
                e.insert(id);
                Some((id, true))
            }
        }
    }
}

/// The interned fields of a row, each with its own memo of the last value.
#[derive(Clone, Copy)]
enum Field {
    Contract,
    Schema,
    Model,
    Case,
    Variant,
    Transformation,
    Family,
}

impl Field {
    const COUNT: usize = 7;
}

/// Recent ids kept per field.
const RECENT: usize = 64;

/// The slot of `s` among a field's [`RECENT`] ids: a hash of its length
/// and of its first and last eight bytes (where ids of one run differ).
#[inline]
fn recent_slot(s: &[u8]) -> usize {
    let n = s.len();
    let word = |w: &[u8]| u64::from_le_bytes(w.try_into().unwrap_or_default());
    let (head, tail) = if n >= 8 {
        (word(&s[..8]), word(&s[n - 8..]))
    } else {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(s);
        (u64::from_le_bytes(b), 0)
    };
    let h = (head ^ tail.rotate_left(29) ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> (64 - RECENT.trailing_zeros())) as usize
}

pub(crate) struct IndexState {
    interned: Interner,
    /// The id of each (contract, schema, model) triple seen.
    triples: FxMap<[Sym; 3], u32>,
    /// Each field's recent ids, one per slot chosen by the text's length
    /// and ends (see [`recent_slot`]): neighbouring rows mostly repeat
    /// their case, versions, family and transformation, or cycle through a
    /// few variant ids, and one comparison with the id in the slot is
    /// cheaper than a look-up in the table of every string.
    recent: [[Sym; RECENT]; Field::COUNT],
    /// The triple of the row before, and its id.
    last_triple: Option<([Sym; 3], u32)>,
    batch: Batch,
    bytes_read: u64,
    tx: Sender<Batch>,
    sent_any: bool,
}

impl IndexState {
    /// The id of `s` (bytes of a line validated as UTF-8, or of a string),
    /// checked against the field's recent id in its slot first, which needs
    /// no decoding.
    #[inline]
    fn intern(&mut self, field: Field, s: Option<&[u8]>) -> Sym {
        let Some(s) = s else { return NO_SYM };
        let slot = &mut self.recent[field as usize][recent_slot(s)];
        if *slot != NO_SYM {
            let Interner { text, ends, .. } = &self.interned;
            if Interner::bytes_at(text, ends, *slot) == s {
                return *slot;
            }
        }
        // The bytes are of a line validated as UTF-8.
        let (id, new) = match self.interned.intern_bytes(s) {
            Some(found) => found,
            None => self.interned.intern(""),
        };
        if new {
            let Interner { text, ends, .. } = &self.interned;
            self.batch.strings.push(Interner::at(text, ends, id).into());
        }
        *slot = id;
        id
    }

    fn versions(&mut self, triple: [Sym; 3]) -> u32 {
        if let Some((last, id)) = self.last_triple
            && last == triple
        {
            return id;
        }
        let id = self.versions_of(triple);
        self.last_triple = Some((triple, id));
        id
    }

    fn versions_of(&mut self, triple: [Sym; 3]) -> u32 {
        let next = self.triples.len() as u32;
        let id = *self.triples.entry(triple).or_insert(next);
        if id == next {
            self.batch.versions.push(triple);
        }
        id
    }

    /// Send what was pushed since the last send; false once nobody listens.
    pub(crate) fn send(&mut self) -> bool {
        self.batch.bytes_read = self.bytes_read;
        let b = std::mem::take(&mut self.batch);
        self.tx.send(b).is_ok()
    }

    /// Count bytes read outside the first pass.
    pub(crate) fn add_bytes(&mut self, n: u64) {
        self.bytes_read += n;
    }

    fn flush(&mut self) {
        self.batch.bytes_read = self.bytes_read;
        let b = std::mem::take(&mut self.batch);
        // The receiver may be gone (the user quit): stop quietly.
        let _ = self.tx.send(b);
        self.sent_any = true;
    }

    /// Intern and send a parsed chunk; give its buffer back for reuse.
    fn push_all(&mut self, file_idx: u16, display: &str, p: Parsed) -> Vec<u8> {
        for (l, out) in p.lines.iter().zip(p.outs) {
            self.push(file_idx, display, l, out, &p.buf);
        }
        if !self.batch.rows.is_empty() || !self.batch.problems.is_empty() || !self.sent_any {
            self.flush();
        }
        p.buf
    }

    /// Turn one parsed line into a row or problems, in line order.
    pub(crate) fn push(
        &mut self,
        file_idx: u16,
        display: &str,
        line: &Line,
        out: LineOut,
        buf: &[u8],
    ) {
        let problem = |kind: ProblemKind, message: String| Problem {
            file: display.to_string(),
            line: line.no,
            kind,
            message,
        };
        match out {
            LineOut::Blank => {}
            LineOut::Problem(kind, message) => self.batch.problems.push(problem(kind, message)),
            LineOut::Row(d) => {
                for w in d.warnings {
                    self.batch
                        .problems
                        .push(problem(ProblemKind::FieldWarning, w));
                }
                let s = &d.summary;
                let versions = [
                    self.intern(Field::Contract, d.contract.as_ref().map(|t| t.bytes(buf))),
                    self.intern(Field::Schema, d.schema.as_ref().map(|t| t.bytes(buf))),
                    self.intern(Field::Model, d.model.as_ref().map(|t| t.bytes(buf))),
                ];
                let row = PairRow {
                    loc: Loc::new(
                        file_idx,
                        u32::try_from(line.no).unwrap_or(u32::MAX),
                        line.offset + d.trim_start as u64,
                        u32::try_from(d.body_len).unwrap_or(u32::MAX),
                    ),
                    case: self.intern(Field::Case, Some(d.case.bytes(buf))),
                    variant: self.intern(Field::Variant, Some(d.variant.bytes(buf))),
                    transformation: self
                        .intern(Field::Transformation, Some(d.transformation.bytes(buf))),
                    family: self.intern(Field::Family, d.family.as_ref().map(|t| t.bytes(buf))),
                    dp: s.dp,
                    dc: s.dc,
                    margin: s.margin,
                    variant_margin: s.variant_margin,
                    latency: s.latency,
                    versions: self.versions(versions),
                    repetition: s.repetition,
                    codes: PackedCodes::pack(RowCodes {
                        suggestion: d.suggestion,
                        ..s.codes
                    }),
                };
                self.batch.rows.push(row);
            }
        }
    }
}

/// One line found in a chunk.
pub(crate) struct Line {
    /// 1-based line number.
    no: u64,
    /// Where the line starts in the file.
    offset: u64,
    /// Its bytes in the chunk (without the newline).
    start: usize,
    end: usize,
    terminated: bool,
    /// Longer than the limit: reported, not parsed. `len` is its full length.
    overlong: Option<u64>,
}

/// What one line gave. Nearly every line is a row, so the row is held in
/// place: boxing it would cost an allocation per line to save space on the
/// rare blank or problem.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum LineOut {
    Blank,
    Problem(ProblemKind, String),
    Row(RowData),
}

/// A string of a row: a span of the chunk it was read from, or its own copy
/// (when it had escapes, or came from the slow path).
#[derive(Debug)]
enum Text {
    Span(u32, u32),
    Owned(String),
    Static(&'static str),
}

impl Text {
    /// `s` as a span of `buf` when it lies inside it.
    fn of(buf: &[u8], s: Cow<'_, str>) -> Text {
        match s {
            Cow::Borrowed(b) => {
                let start = (b.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize);
                match (u32::try_from(start), u32::try_from(b.len())) {
                    (Ok(st), Ok(len)) if start + b.len() <= buf.len() => Text::Span(st, len),
                    _ => Text::Owned(b.to_string()),
                }
            }
            Cow::Owned(o) => Text::Owned(o),
        }
    }

    fn get<'a>(&'a self, buf: &'a [u8]) -> &'a str {
        std::str::from_utf8(self.bytes(buf)).unwrap_or("")
    }

    /// Its bytes; a span lies in a line that was validated as UTF-8.
    fn bytes<'a>(&'a self, buf: &'a [u8]) -> &'a [u8] {
        match self {
            Text::Span(s, l) => buf.get(*s as usize..(*s + *l) as usize).unwrap_or(b""),
            Text::Owned(o) => o.as_bytes(),
            Text::Static(s) => s.as_bytes(),
        }
    }
}

/// A pair's row before its strings are interned.
#[derive(Debug)]
pub(crate) struct RowData {
    /// Bytes trimmed from the start of the line (BOM, blanks), and the body's length.
    trim_start: usize,
    body_len: usize,
    case: Text,
    variant: Text,
    transformation: Text,
    family: Option<Text>,
    suggestion: Option<&'static str>,
    contract: Option<Text>,
    schema: Option<Text>,
    model: Option<Text>,
    summary: Summary,
    /// Field warnings, as problem messages.
    warnings: Vec<String>,
}

/// The numbers and codes of a row.
#[derive(Debug, Clone, Copy)]
struct Summary {
    /// The codes, without the suggestion (kept in [`RowData`]).
    codes: RowCodes,
    dp: f32,
    dc: f32,
    margin: f32,
    variant_margin: f32,
    latency: f32,
    repetition: u32,
}

/// Everything a row needs from a record and its derivation.
fn summarize(record: &PairRecord, d: &super::derive::Lean) -> Summary {
    use super::model::Expectation;
    let mut fl = 0u8;
    if d.flip == Some(true) {
        fl |= flags::FLIP;
    }
    if d.inferred {
        fl |= flags::INFERRED;
    }
    if d.near_boundary == Some(true) {
        fl |= flags::NEAR_BOUNDARY;
    }
    if d.warnings {
        fl |= flags::WARNINGS;
    }
    if d.passed_mismatch {
        fl |= flags::PASSED_MISMATCH;
    }
    if d.route_mismatch {
        fl |= flags::ROUTE_MISMATCH;
    }
    let validity = d.validity;
    let expectation = match &record.expectation {
        None => ExpKind::None,
        Some(Expectation::Invariant { .. }) => ExpKind::Invariant,
        Some(Expectation::NotLessUrgent { .. }) => ExpKind::NotLessUrgent,
        Some(Expectation::NotMoreUrgent { .. }) => ExpKind::NotMoreUrgent,
        Some(Expectation::AllowedRoutes { .. }) => ExpKind::AllowedRoutes,
        Some(Expectation::Unknown { .. }) => ExpKind::Unknown,
    };
    let latency = match (record.source.latency_ms, record.variant.latency_ms) {
        (Some(a), Some(b)) => a.max(b) as f32,
        (Some(a), None) | (None, Some(a)) => a as f32,
        (None, None) => f32::NAN,
    };
    Summary {
        codes: RowCodes {
            status: d.status,
            flags: fl,
            source_route: d.source_route,
            variant_route: d.variant_route,
            expectation,
            source_outcome: OutcomeCode::of(record.source.effective_outcome().as_ref()),
            variant_outcome: OutcomeCode::of(record.variant.effective_outcome().as_ref()),
            validity,
            suggestion: None,
        },
        dp: d.dp.map(|x| x as f32).unwrap_or(f32::NAN),
        dc: d.dc.map(|x| x as f32).unwrap_or(f32::NAN),
        margin: d.source_margin.map(|x| x as f32).unwrap_or(f32::NAN),
        variant_margin: d.variant_margin.map(|x| x as f32).unwrap_or(f32::NAN),
        latency,
        repetition: record
            .repetition
            .and_then(|r| u32::try_from(r).ok())
            .unwrap_or(u32::MAX),
    }
}

/// Read from `reader` into `buf[*filled..]` until `*filled` reaches `want` or
/// the input ends (then `*eof`); `buf` is grown (zeroed) as needed. Returns
/// the number of bytes read.
fn fill(
    reader: &mut (dyn Read + Send),
    buf: &mut Vec<u8>,
    filled: &mut usize,
    want: usize,
    eof: &mut bool,
) -> io::Result<u64> {
    if buf.len() < want {
        buf.resize(want, 0);
    }
    let mut read = 0u64;
    while *filled < want {
        let n = match reader.read(&mut buf[*filled..want]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            *eof = true;
            break;
        }
        *filled += n;
        read += n as u64;
    }
    Ok(read)
}

/// Index one input. Three things overlap on each chunk of lines: its lines
/// are parsed on every core, the previous chunk's rows are interned and
/// sent, and the next chunk is read.
fn index_one(
    st: &mut IndexState,
    file_idx: u16,
    display: &str,
    mut reader: Box<dyn Read + Send>,
    max_line: usize,
    mode: ParseMode,
) -> io::Result<()> {
    // `buf[..filled]` holds data; the rest is initialised scratch, so that
    // reading a chunk does not zero it first.
    let mut buf: Vec<u8> = Vec::new();
    let mut filled = 0usize;
    // A buffer to reuse, and the previous chunk still to be interned.
    let mut spare: Vec<u8> = Vec::new();
    let mut pending: Option<Parsed> = None;
    // File offset of buf[0], and the chunk size to aim for.
    let mut base: u64 = 0;
    let mut target = FIRST_CHUNK;
    let mut eof = false;
    st.bytes_read += fill(&mut *reader, &mut buf, &mut filled, target, &mut eof)?;
    let mut split = Split {
        line_no: 1,
        skipping: None,
        max_line,
    };
    let (mut lines, mut pos) = split.lines(&buf[..filled], base, eof);
    loop {
        // Keep the partial last line for the next chunk; a line over the
        // limit is dropped as it streams by, keeping only its start and length.
        let mut next = std::mem::take(&mut spare);
        let rest = filled - pos;
        let mut next_filled = if let Some((_, len)) = split.skipping.as_mut() {
            *len += rest as u64;
            base += filled as u64;
            0
        } else if rest > max_line {
            split.skipping = Some((base + pos as u64, rest as u64));
            base += filled as u64;
            0
        } else {
            if next.len() < rest {
                next.resize(rest, 0);
            }
            next[..rest].copy_from_slice(&buf[pos..filled]);
            base += pos as u64;
            rest
        };
        buf.truncate(filled);
        let last = eof;
        target = (target * 4).min(MAX_CHUNK);
        let want = next_filled + target;
        let mut next_eof = false;
        let mut read: io::Result<u64> = Ok(0);
        let mut next_lines = (Vec::new(), 0);
        // Parse this chunk while the previous one is interned and sent and
        // the next one is read and cut into lines.
        let (data, lines_ref) = (&buf[..], &lines);
        let mut outs = Vec::new();
        let mut recycled = None;
        rayon::scope(|s| {
            s.spawn(|_| {
                use rayon::prelude::*;
                outs = lines_ref
                    .par_iter()
                    .with_min_len(PARALLEL_MIN_LINES)
                    .map(|l| process_line(data, l, max_line, mode))
                    .collect::<Vec<_>>();
            });
            s.spawn(|_| recycled = pending.take().map(|p| st.push_all(file_idx, display, p)));
            if !last {
                read = fill(
                    &mut *reader,
                    &mut next,
                    &mut next_filled,
                    want,
                    &mut next_eof,
                );
                if read.is_ok() {
                    next_lines = split.lines(&next[..next_filled], base, next_eof);
                }
            }
        });
        if let Some(b) = recycled {
            spare = b;
        }
        let parsed = Parsed { buf, lines, outs };
        if st.sent_any {
            pending = Some(parsed);
        } else {
            // The first rows go out at once, for a fast first screen.
            spare = st.push_all(file_idx, display, parsed);
        }
        if last {
            break;
        }
        // A failed read ends the input after the chunk before it is sent.
        st.bytes_read += match read {
            Ok(n) => n,
            Err(e) => {
                if let Some(p) = pending.take() {
                    st.push_all(file_idx, display, p);
                }
                return Err(e);
            }
        };
        buf = next;
        filled = next_filled;
        eof = next_eof;
        (lines, pos) = next_lines;
    }
    if let Some(p) = pending.take() {
        st.push_all(file_idx, display, p);
    }
    Ok(())
}

/// Where the cutting of a file into lines stands between chunks.
struct Split {
    /// The next line's number (from 1).
    line_no: u64,
    /// A line over the limit being skipped: where it started and its length
    /// so far.
    skipping: Option<(u64, u64)>,
    max_line: usize,
}

impl Split {
    /// The whole lines of `data`, a chunk that starts at file offset `base`
    /// (all of it when the file ends there: `eof`), and where the partial
    /// line after them starts.
    fn lines(&mut self, data: &[u8], base: u64, eof: bool) -> (Vec<Line>, usize) {
        let mut lines = Vec::new();
        let mut pos = 0usize;
        for nl in memchr::memchr_iter(b'\n', data) {
            if let Some((start, len)) = self.skipping.take() {
                lines.push(overlong_line(self.line_no, start, len + nl as u64));
            } else {
                lines.push(line_at(self.line_no, base, pos, nl, true, self.max_line));
            }
            self.line_no += 1;
            pos = nl + 1;
        }
        let rest = data.len() - pos;
        if eof && rest > 0 {
            if let Some((start, len)) = self.skipping.take() {
                lines.push(overlong_line(self.line_no, start, len + rest as u64));
            } else {
                lines.push(line_at(
                    self.line_no,
                    base,
                    pos,
                    data.len(),
                    false,
                    self.max_line,
                ));
            }
            pos = data.len();
        } else if eof && let Some((start, len)) = self.skipping.take() {
            lines.push(overlong_line(self.line_no, start, len));
        }
        (lines, pos)
    }
}

/// A chunk and its parsed lines, waiting to be interned.
struct Parsed {
    buf: Vec<u8>,
    lines: Vec<Line>,
    outs: Vec<LineOut>,
}

fn overlong_line(no: u64, offset: u64, len: u64) -> Line {
    Line {
        no,
        offset,
        start: 0,
        end: 0,
        terminated: true,
        overlong: Some(len),
    }
}

pub(crate) fn line_at(
    no: u64,
    base: u64,
    start: usize,
    end: usize,
    terminated: bool,
    max: usize,
) -> Line {
    let len = end - start;
    Line {
        no,
        offset: base + start as u64,
        start,
        end,
        terminated,
        overlong: (len > max).then_some(len as u64),
    }
}

/// Parse one line: fast path first unless told otherwise, slow path on any doubt.
pub(crate) fn process_line(buf: &[u8], line: &Line, max_line: usize, mode: ParseMode) -> LineOut {
    if let Some(len) = line.overlong {
        return LineOut::Problem(
            ProblemKind::TooLong,
            format!(
                "the line is {} long, over the {} limit; if it is genuine, raise the limit with --max-line-bytes or max_line_bytes in the config",
                human_bytes(len),
                human_bytes(max_line as u64)
            ),
        );
    }
    let raw = &buf[line.start..line.end];
    // Trim what is not content: a BOM on the first line, CR of CRLF, blanks.
    let mut start = 0usize;
    let mut end = raw.len();
    if line.no == 1 && raw.starts_with(&[0xEF, 0xBB, 0xBF]) {
        start = 3;
    }
    while end > start && matches!(raw[end - 1], b'\r' | b' ' | b'\t') {
        end -= 1;
    }
    while start < end && matches!(raw[start], b' ' | b'\t') {
        start += 1;
    }
    if start == end {
        return LineOut::Blank;
    }
    // Validated sixteen or thirty-two bytes a step; the standard library
    // finds the position of the first bad byte for the message.
    let bytes = &raw[start..end];
    let body = match simdutf8::basic::from_utf8(bytes).or_else(|_| std::str::from_utf8(bytes)) {
        Ok(s) => s,
        Err(e) => {
            return LineOut::Problem(
                ProblemKind::InvalidUtf8,
                format!(
                    "invalid UTF-8 at byte {} of the line; re-encode the file as UTF-8",
                    e.valid_up_to() + 1
                ),
            );
        }
    };
    let out = match mode {
        ParseMode::Fast => fast_row(buf, body).map(LineOut::Row),
        ParseMode::Slow => None,
    };
    let mut out = out.unwrap_or_else(|| slow_row(body, line.terminated));
    if let LineOut::Row(d) = &mut out {
        d.trim_start = start;
        d.body_len = end - start;
    }
    out
}

/// One line read by the fast path and by the slow path, each described as
/// text (`None` when the fast path declines the line and hands it on). The
/// loader uses the fast path when it accepts a line, so wherever it does the
/// two descriptions must be equal: the fuzz target `lines` checks this.
#[doc(hidden)]
pub fn line_both_ways(bytes: &[u8], max_line: usize) -> (Option<String>, String) {
    let line = line_at(1, 0, 0, bytes.len(), true, max_line);
    let describe = |out: &LineOut| match out {
        LineOut::Row(d) => describe_row(d, bytes),
        other => format!("{other:?}"),
    };
    let slow = describe(&process_line(bytes, &line, max_line, ParseMode::Slow));
    let fast = match process_line(bytes, &line, max_line, ParseMode::Fast) {
        out @ LineOut::Row(_) => Some(describe(&out)),
        _ => None,
    };
    (fast, slow)
}

/// Whether the fast path makes a row of `line` (read, derived, suggested
/// and summarised as the loader keeps it), for `examples/stages.rs`.
#[doc(hidden)]
pub fn fast_row_of(line: &str) -> bool {
    fast_row(line.as_bytes(), line).is_some()
}

/// A row with its strings resolved, for [`line_both_ways`].
fn describe_row(d: &RowData, buf: &[u8]) -> String {
    let opt = |t: &Option<Text>| t.as_ref().map(|t| t.get(buf).to_string());
    format!(
        "trim {} len {} case {:?} variant {:?} transformation {:?} family {:?} \
         suggestion {:?} contract {:?} schema {:?} model {:?} summary {:?} warnings {:?}",
        d.trim_start,
        d.body_len,
        d.case.get(buf),
        d.variant.get(buf),
        d.transformation.get(buf),
        opt(&d.family),
        d.suggestion,
        opt(&d.contract),
        opt(&d.schema),
        opt(&d.model),
        d.summary,
        d.warnings,
    )
}

thread_local! {
    /// The thread's fast-path reader. It keeps its memos from line to line
    /// across a rayon worker's lines: the lines of a case, read one after
    /// another, recall the state they share.
    static READER: std::cell::RefCell<super::fast::LineReader> = Default::default();
}

/// Forget what this thread's reader keeps from line to line, so that what
/// follows reads as on a fresh thread (for the fuzz targets, whose inputs
/// must each reproduce alone).
#[doc(hidden)]
pub fn forget_states() {
    READER.with_borrow_mut(super::fast::LineReader::forget);
}

/// The fast path: one scan of the line, by the thread's reader.
/// [`super::fast::LineReader::parse`] validates the line on its own (it
/// declines repeated keys, bad numbers, deep nesting...); the record key is
/// not computed here (see `rowkeys`).
fn fast_row(buf: &[u8], body: &str) -> Option<RowData> {
    READER.with_borrow_mut(|reader| read_row(reader, buf, body))
}

fn read_row(reader: &mut super::fast::LineReader, buf: &[u8], body: &str) -> Option<RowData> {
    let mut f = reader.parse(body)?;
    // Two states that differ are diffed only if the derivation reads it.
    let failed = std::cell::Cell::new(false);
    let d = match f.diff {
        super::fast::Diff::Done(_) => super::derive::lean(&f.record, f.diff_entries()),
        super::fast::Diff::Later { covered } => super::derive::lean_on(&f.record, covered, || {
            let d = f.state_diff();
            failed.set(d.is_none());
            d
        }),
    };
    if failed.get() {
        f.recycle();
        return None;
    }
    let suggestion = super::suggest::lean_category(&f.record, &d);
    let summary = summarize(&f.record, &d);
    // The record's strings are spans of the line here: the record goes back
    // to the reader, whose buffers the next line reuses.
    let transformation = transformation_name(
        &d,
        Text::of(buf, f.transformation.take().unwrap_or_default()),
    );
    let warnings = f
        .record
        .field_warnings
        .iter()
        .map(|w| format!("{} / {}: {w}", f.case_id, f.variant_id))
        .collect();
    let row = RowData {
        trim_start: 0,
        body_len: 0,
        case: Text::of(buf, std::mem::take(&mut f.case_id)),
        variant: Text::of(buf, std::mem::take(&mut f.variant_id)),
        transformation,
        family: f.family.take().map(|s| Text::of(buf, s)),
        suggestion,
        contract: f.contract.take().map(|s| Text::of(buf, s)),
        schema: f.schema.take().map(|s| Text::of(buf, s)),
        model: f.model.take().map(|s| Text::of(buf, s)),
        summary,
        warnings,
    };
    f.recycle();
    Some(row)
}

/// The transformation name of a row: the one `recorded`, else the inferred
/// one, which needs no copy.
fn transformation_name(d: &super::derive::Lean, recorded: Text) -> Text {
    match d.inferred_transformation {
        Some(name) => Text::Static(name),
        None => recorded,
    }
}

/// The slow path: a whole [`Value`], [`map_record`] and [`derive`].
fn slow_row(body: &str, terminated: bool) -> LineOut {
    let value: Value = match serde_json::from_str(body) {
        Ok(v) => v,
        Err(e) => {
            let (kind, msg) = classify_json_error(&e, terminated);
            return LineOut::Problem(kind, msg);
        }
    };
    let mut record = match map_record(value) {
        Ok(r) => r,
        Err(e) => {
            let kind = match e {
                RecordError::NotAnObject(_) => ProblemKind::NotAnObject,
                RecordError::MissingId(_) => ProblemKind::MissingField,
                RecordError::WrongIdType(..) => ProblemKind::WrongType,
            };
            return LineOut::Problem(kind, e.to_string());
        }
    };
    let d = super::derive::lean(&record, None);
    let suggestion = super::suggest::lean_category(&record, &d);
    let mut warnings: Vec<String> = record
        .field_warnings
        .iter()
        .map(|w| format!("{} / {}: {w}", record.case_id, record.variant_id))
        .collect();
    // The fast path declines any line with a repeated key (its scanner
    // refuses them), so only this path needs to look.
    if let Some(dup) = first_duplicate_key(body) {
        warnings.push(format!(
            "{} / {}: the key `{dup}` appears more than once; the last value is used (as jq does) — remove the others",
            record.case_id, record.variant_id
        ));
    }
    let summary = summarize(&record, &d);
    let recorded = Text::Owned(record.transformation.take().unwrap_or_default());
    let transformation = transformation_name(&d, recorded);
    LineOut::Row(RowData {
        trim_start: 0,
        body_len: 0,
        case: Text::Owned(std::mem::take(&mut record.case_id)),
        variant: Text::Owned(std::mem::take(&mut record.variant_id)),
        transformation,
        family: record.family.take().map(Text::Owned),
        suggestion,
        contract: record.contract_version.take().map(Text::Owned),
        schema: record.state_schema_version.take().map(Text::Owned),
        model: record.model_id.take().map(Text::Owned),
        summary,
        warnings,
    })
}

/// The path of the first key an object of `json` repeats (`source.state.a`,
/// `reasons[2].id`), if any. `json` is known to parse.
fn first_duplicate_key(json: &str) -> Option<String> {
    use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use std::cell::RefCell;

    struct Seek<'a> {
        path: String,
        found: &'a RefCell<Option<String>>,
    }

    impl<'de> DeserializeSeed<'de> for Seek<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Seek<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            let mut i = 0usize;
            loop {
                if self.found.borrow().is_some() {
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                    return Ok(());
                }
                let seed = Seek {
                    path: format!("{}[{i}]", self.path),
                    found: self.found,
                };
                if seq.next_element_seed(seed)?.is_none() {
                    return Ok(());
                }
                i += 1;
            }
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut keys: Vec<String> = Vec::new();
            while let Some(k) = map.next_key::<String>()? {
                let path = if self.path.is_empty() {
                    k.clone()
                } else {
                    format!("{}.{k}", self.path)
                };
                if self.found.borrow().is_some() {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
                if keys.contains(&k) {
                    *self.found.borrow_mut() = Some(path);
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
                map.next_value_seed(Seek {
                    path,
                    found: self.found,
                })?;
                keys.push(k);
            }
            Ok(())
        }
    }

    let found = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(json);
    let seek = Seek {
        path: String::new(),
        found: &found,
    };
    seek.deserialize(&mut de).ok()?;
    found.into_inner()
}

fn classify_json_error(e: &serde_json::Error, terminated: bool) -> (ProblemKind, String) {
    let msg = e.to_string();
    if msg.contains("recursion limit") {
        return (
            ProblemKind::TooDeep,
            "nesting is deeper than 128 levels; flatten the record".to_string(),
        );
    }
    if e.is_eof() && !terminated {
        return (
            ProblemKind::Truncated,
            "the last line stops mid-record with no final newline; the writer may still be running or was interrupted".to_string(),
        );
    }
    (
        ProblemKind::Malformed,
        format!("{}; fix or remove this line", strip_line_info(&msg)),
    )
}

/// serde_json says "at line 1 column 57"; within one line only the column matters.
fn strip_line_info(msg: &str) -> String {
    match msg.find(" at line 1 column ") {
        Some(i) => format!(
            "{} at column {}",
            &msg[..i],
            &msg[i + " at line 1 column ".len()..]
        ),
        None => msg.to_string(),
    }
}

/// Bytes for people: "512 B", "10.0 MB".
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut x = n as f64 / 1000.0;
    let mut u = 0;
    while x >= 1000.0 && u < UNITS.len() - 1 {
        x /= 1000.0;
        u += 1;
    }
    format!("{x:.1} {}", UNITS[u])
}

/// The sample run the tests of the core and the list open.
#[cfg(test)]
pub(crate) mod sample {
    use super::{OpenOptions, RunIndex, load_run};

    pub(crate) const SAMPLE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/sample-runs/support-urgency.jsonl"
    );

    pub(crate) fn sample() -> RunIndex {
        load_run(&[SAMPLE.to_string()], &OpenOptions::default()).expect("the sample run opens")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn load_bytes(bytes: &[u8]) -> RunIndex {
        load_capped(bytes, DEFAULT_MAX_LINE_BYTES)
    }

    /// Index `bytes` as a run file with a per-line size cap.
    fn load_capped(bytes: &[u8], max_line_bytes: usize) -> RunIndex {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        let p = f.path().to_string_lossy().to_string();
        let opts = OpenOptions {
            max_line_bytes,
            ..OpenOptions::default()
        };
        load_run(&[p], &opts).unwrap()
    }

    const GOOD: &str = r#"{"case_id":"c1","variant_id":"v1","passed":false,"reasons":["x"]}"#;

    /// Ids that share a recent slot, of one length, are told apart by their
    /// text, row after row.
    #[test]
    fn ids_sharing_a_recent_slot_keep_their_own_names() {
        let first = "case-0000";
        let twin = (1..100_000)
            .map(|i| format!("case-{i:04}"))
            .find(|c| {
                c.len() == first.len() && recent_slot(c.as_bytes()) == recent_slot(first.as_bytes())
            })
            .expect("two ids in one slot");
        let text: String = (0..6)
            .map(|i| {
                let case = if i % 2 == 0 { first } else { &twin };
                format!("{{\"case_id\":\"{case}\",\"variant_id\":\"v\",\"passed\":true}}\n")
            })
            .collect();
        let idx = load_bytes(text.as_bytes());
        let cases: Vec<&str> = idx.rows.iter().map(|r| idx.str(r.case)).collect();
        assert_eq!(cases, [first, &twin, first, &twin, first, &twin]);
    }

    #[test]
    fn bad_lines_become_problems_and_the_rest_opens() {
        let text = format!(
            "\u{feff}{GOOD}\r\n\n{{not json\n[1,2]\n{{\"variant_id\":\"v\"}}\n{{\"case_id\":[1],\"variant_id\":\"v\"}}\n{GOOD}\n{{\"case_id\":\"c\",\"vari"
        );
        let idx = load_bytes(text.as_bytes());
        assert_eq!(idx.rows.len(), 2);
        let kinds: Vec<_> = idx.problems.iter().map(|p| (p.line, p.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                (3, ProblemKind::Malformed),
                (4, ProblemKind::NotAnObject),
                (5, ProblemKind::MissingField),
                (6, ProblemKind::WrongType),
                (8, ProblemKind::Truncated),
            ]
        );
        assert!(idx.done);
        assert_eq!(idx.failures, 2);
        // Offsets point at the content, past the BOM and before the CR.
        let first = idx.read_line(idx.rows[0].loc).unwrap();
        assert_eq!(first, GOOD.as_bytes());
        let loaded = idx.load_pair(&idx.rows[1]).unwrap();
        assert_eq!(loaded.record.case_id, "c1");
    }

    #[test]
    fn invalid_utf8_and_depth_and_length() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(b"{\"case_id\":\"\xff\xfe\",\"variant_id\":\"v\"}\n");
        bytes.extend_from_slice("[".repeat(200).as_bytes());
        bytes.push(b'\n');
        bytes.extend_from_slice(GOOD.as_bytes());
        bytes.push(b'\n');
        let idx = load_bytes(&bytes);
        assert_eq!(idx.rows.len(), 1);
        assert_eq!(idx.problems[0].kind, ProblemKind::InvalidUtf8);
        assert!(
            idx.problems[0].message.contains("byte 13"),
            "{}",
            idx.problems[0].message
        );
        assert_eq!(idx.problems[1].kind, ProblemKind::TooDeep);

        let text = format!(
            "{{\"case_id\":\"{}\",\"variant_id\":\"v\"}}\n{GOOD}\n",
            "x".repeat(5000)
        );
        let idx = load_capped(text.as_bytes(), 1000);
        assert_eq!(idx.rows.len(), 1);
        assert_eq!(idx.problems[0].kind, ProblemKind::TooLong);
        assert_eq!(idx.rows[0].loc.line, 2);
    }

    #[test]
    fn open_errors_are_one_line() {
        let e = load_run(
            &["/definitely/not/here.jsonl".into()],
            &OpenOptions::default(),
        )
        .unwrap_err();
        assert!(e.0.contains("does not exist"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = load_run(
            &[dir.path().to_string_lossy().to_string()],
            &OpenOptions::default(),
        )
        .unwrap_err();
        assert!(e.0.contains("is a directory"), "{e}");
    }

    #[test]
    fn empty_file_opens_empty() {
        let idx = load_bytes(b"");
        assert!(idx.rows.is_empty() && idx.problems.is_empty() && idx.done);
    }

    /// Every sample in sample-runs/, read both ways: identical rows, strings and problems.
    #[test]
    fn fast_path_matches_slow_path_on_every_sample() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-runs");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.to_string_lossy().to_string();
            if !name.ends_with(".jsonl") || name.ends_with(".triage.jsonl") {
                continue;
            }
            let fast = load_run_with(
                std::slice::from_ref(&name),
                &OpenOptions::default(),
                ParseMode::Fast,
            )
            .unwrap();
            let slow = load_run_with(
                std::slice::from_ref(&name),
                &OpenOptions::default(),
                ParseMode::Slow,
            )
            .unwrap();
            assert_eq!(fast.rows.len(), slow.rows.len(), "{name}");
            for (a, b) in fast.rows.iter().zip(&slow.rows) {
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "{name}");
            }
            assert_eq!(fast.strings(), slow.strings(), "{name}");
            assert_eq!(fast.problems, slow.problems, "{name}");
            n += 1;
        }
        assert!(n >= 4, "samples found: {n}");
    }

    /// Odd lines the fast path must hand to the slow path, or read the same.
    #[test]
    fn fast_path_falls_back_on_anything_unusual() {
        let lines = [
            GOOD,
            r#"{"case_id":"c","caseId":"d","variant_id":"v"}"#,
            r#"{"case_id":"c","variant_id":"v","passed":"no"}"#,
            r#"{"case_id":"c","variant_id":"v","timestamp":5,"label":true}"#,
            r#"{"case_id":"c","variant_id":"v","source":{"response":{"probability":1.5},"probability":0.4}}"#,
            r#"{"case_id":"c","variant_id":"v","source":{"response":{"probability":0.5},"probability":7}}"#,
            r#"{"case_id":"c","variant_id":"v","policy":{"review_threshold":0.9,"action_threshold":0.5}}"#,
            r#"{"case_id":"c","variant_id":"v","policy":{"review":0.5}}"#,
            r#"{"case_id":"c","variant_id":"v","review_threshold":0.5,"actionThreshold":0.9,"source":{"p":0.7},"variant":{"p":0.95}}"#,
            r#"{"case_id":"c","variant_id":"v","sourceRoute":"ACT","variantRoute":"nope"}"#,
            r#"{"case_id":"c","variant_id":"v","expectation":{"type":"allowed_routes","allowedRoutes":["pass","x"]}}"#,
            r#"{"case_id":"c","variant_id":"v","expectation":{"kind":"Not_Less_Urgent"},"source":{"p":0.7},"variant":{"p":0.2}}"#,
            r#"{"case_id":"c","variant_id":"v","expectation":{"kind":"mystery"}}"#,
            r#"{"case_id":"c","variant_id":"v","source":{"question":{"q":1}}}"#,
            r#"{"case_id":"c","variant_id":"v","source":{"question":"a\u00e9","state":{"a":1,"b":[1,2]}},"variant":{"question":"a\u00e9","state":{"b":[1,2],"a":1}},"allowed_changes":[]}"#,
            r#"{"case_id":"c","variant_id":"v","source":{"state":{"a":1,"a":2}},"variant":{"state":{"a":2}}}"#,
            r#"{"case_id":"c","variant_id":"v","source":{"state":{"evidence":[{"id":1},{"id":2}],"x":1e400}},"variant":{"state":{}}}"#,
            r#"{"case_id":"c","variant_id":"v","source":{"state":[1,2,3]},"variant":{"state":[1,3]},"family":"evidence-ablation"}"#,
            r#"{"case_id":"c","variant_id":"v","source":{"state":{"k":1}},"variant":{"payload":{"k":1.0,"j":null}}}"#,
            r#"{"case_id":"c","variant_id":"v","source":{"outcome":"TIMED_OUT","latencyMs":3e4},"variant":{"status":"weird","error_message":"boom"}}"#,
            r#"{"case_id":"c\"q","variant_id":"v\n","repetition":2.5,"model_id":"m","contractVersion":"k"}"#,
            r#"{"case_id":"c","variant_id":"v","repetition":3,"minimum_boundary_margin":0.1,"policy":{"reviewThreshold":0.55,"actionThreshold":0.9},"source":{"noul":0.56,"c":0.5},"variant":{"noul":0.54,"c":0.5},"passed":true,"reasons":"x"}"#,
            r#"{"case_id":"c","variant_id":"v","reasons":["Source is too close to a decision boundary."],"passed":false}"#,
            r#"{"case_id":"c","variant_id":"v","source":null,"variant":{"state":null,"question":null}}"#,
            r#"{"case_id":"c","variant_id":"v","allowed_changes":"state.x"}"#,
            r#"{"case_id":"c","variant_id":"v","source":{"latency":"slow"}}"#,
        ];
        let text = lines.join("\n");
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        let p = f.path().to_string_lossy().to_string();
        let fast = load_run_with(
            std::slice::from_ref(&p),
            &OpenOptions::default(),
            ParseMode::Fast,
        )
        .unwrap();
        let slow = load_run_with(&[p], &OpenOptions::default(), ParseMode::Slow).unwrap();
        assert_eq!(fast.rows.len(), slow.rows.len());
        for (a, b) in fast.rows.iter().zip(&slow.rows) {
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "line {}", a.loc.line);
        }
        assert_eq!(fast.strings(), slow.strings());
        assert_eq!(fast.problems, slow.problems);
    }

    /// One line through the fast path, with nothing validating it first,
    /// and through the slow path: the fast description is `None` when the
    /// fast path declines the line.
    fn both_ways_unkeyed(line: &str) -> (Option<String>, String) {
        let buf = line.as_bytes();
        let slow = match slow_row(line, true) {
            LineOut::Row(d) => describe_row(&d, buf),
            other => format!("{other:?}"),
        };
        let fast = fast_row(buf, line).map(|d| describe_row(&d, buf));
        (fast, slow)
    }

    /// The fast path reads `line` as the slow path does, or declines it.
    fn assert_agrees(line: &str) -> bool {
        let (fast, slow) = both_ways_unkeyed(line);
        if let Some(fast) = &fast {
            assert_eq!(fast, &slow, "{line}");
        }
        fast.is_some()
    }

    /// Policies and expectations are recalled from earlier lines' when
    /// written alike, and read as the slow path reads them whatever came
    /// before: alike, differing in a digit, with a brace in a string, read
    /// twice, declined.
    #[test]
    fn repeated_policies_and_expectations_read_as_the_slow_path() {
        let line = |policy: &str, expectation: &str| {
            format!(
                r#"{{"case_id":"c","variant_id":"v","policy":{policy},"expectation":{expectation},"source":{{"probability":0.5,"route":"review"}},"variant":{{"probability":0.95,"route":"action"}}}}"#
            )
        };
        let p = r#"{"review_threshold":0.55,"action_threshold":0.9}"#;
        let invariant = r#"{"kind":"invariant","max_probability_drift":0.1}"#;
        // Each line is read twice in a row: kept, then recalled.
        let lines = [
            (line(p, invariant), true),
            (
                line(p, r#"{"kind":"invariant","max_probability_drift":0.5}"#),
                true,
            ),
            (line(p, invariant), true),
            (
                line(
                    r#"{"review_threshold":0.55,"action_threshold":0.95}"#,
                    r#"{"kind":"invariant"}"#,
                ),
                true,
            ),
            (
                line(
                    r#"{"review_threshold":0.95,"action_threshold":0.9}"#,
                    r#"{"kind":"invariant"}"#,
                ),
                false,
            ),
            // Two policies, the second with the other threshold only.
            (
                line(r#"{"review_threshold":0.55}"#, r#"{"kind":"invariant"}"#).replace(
                    r#""expectation""#,
                    r#""policy":{"action_threshold":0.9},"expectation""#,
                ),
                false,
            ),
            (
                line(r#"{"action_threshold":0.9}"#, r#"{"kind":"invariant"}"#),
                false,
            ),
            (
                line(
                    p,
                    r#"{"kind":"allowed-routes","allowed_routes":["review","action"]}"#,
                ),
                true,
            ),
            (
                line(
                    p,
                    r#"{"kind":"allowed-routes","allowed_routes":["review","zzz"]}"#,
                ),
                false,
            ),
            (
                line(p, r#"{"kind":"odd}kind","max_probability_drift":0.1}"#),
                true,
            ),
            (
                line(
                    p,
                    r#"{"kind":"invariant","max_probability_drift":0.1,"kind":"invariant"}"#,
                ),
                false,
            ),
            (
                line(p, invariant).replace(
                    r#""source""#,
                    &format!(r#""expectation":{invariant},"source""#),
                ),
                false,
            ),
            (line(p, invariant), true),
        ];
        super::forget_states();
        for (line, accepted) in &lines {
            for _ in 0..2 {
                assert_eq!(assert_agrees(line), *accepted, "{line}");
            }
        }
    }

    /// A variant state whose text begins as the source's reads its leading
    /// members from the source's: each state below, as the variant's, is
    /// read as the slow path reads it, or declined where it must be.
    #[test]
    fn a_variant_state_that_begins_as_the_source_reads_as_the_slow_path() {
        let source = r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1},"t":true}"#;
        for (variant, accepted) in [
            (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1},"t":false}"#, true),
            (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":2},"t":true}"#, true),
            (r#"{"a":1,"b":"x","c":[1,2,3],"d":{"e":1},"t":true}"#, true),
            (
                r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1},"t":true,"f":0}"#,
                true,
            ),
            (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1}}"#, true),
            (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1} }"#, true),
            (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1} ,"t":true}"#, true),
            (
                r#"{"a":1,"b":"x","g":null,"c":[1,2],"d":{"e":1},"t":true}"#,
                true,
            ),
            (r#"{"a":12,"b":"x","c":[1,2],"d":{"e":1},"t":true}"#, true),
            (r#"{"a":1.5,"b":"x"}"#, true),
            (r#"{"a":1,"b":"xy","c":[1,2]}"#, true),
            (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1},"t":true1}"#, false),
            (r#"{"a":1,"b":"x","c":[1,2],"a":2}"#, false),
            (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1},"b":"x"}"#, false),
            (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1},"t":true,}"#, false),
            (r#"{"a":1,"b":"x","c":[1,2]"#, false),
        ] {
            for allowed in ["", r#","allowed_changes":["state.t","state.f"]"#] {
                let line = format!(
                    r#"{{"case_id":"c","variant_id":"v"{allowed},"source":{{"state":{source}}},"variant":{{"state":{variant}}}}}"#
                );
                super::forget_states();
                assert_eq!(assert_agrees(&line), accepted, "{line}");
            }
        }
    }

    /// A side with two spellings of its state (the slow path reads one, the
    /// fast path declines the line): the state kept for the next line is
    /// the one scanned last, with its own members only, and a later line
    /// whose state repeats it reads as the slow path reads it.
    #[test]
    fn a_side_with_two_states_keeps_only_the_last() {
        let two = r#"{"case_id":"c","variant_id":"v","source":{"state":{"a":1,"b":2},"payload":{"c":3}},"variant":{"state":{"c":4}}}"#;
        assert!(!assert_agrees(two), "declined: two spellings of one field");
        let again = r#"{"case_id":"c","variant_id":"v","allowed_changes":["state.c"],"source":{"state":{"c":3}},"variant":{"state":{"c":4,"d":5}}}"#;
        assert!(assert_agrees(again), "declined: {again}");
    }

    /// A variant state member whose text begins with the source's is read
    /// in full, not stepped over: the fast path takes these lines and agrees.
    #[test]
    fn state_members_that_only_begin_alike() {
        for (a, b) in [
            (r#"{"n":1,"t":true}"#, r#"{"n":17,"t":true}"#),
            (r#"{"n":1.5,"t":true}"#, r#"{"n":1.5e3,"t":true}"#),
            (r#"{"n":-2}"#, r#"{"n":-2.25}"#),
            (r#"{"n":0,"m":"x"}"#, r#"{"m":"x","n":0.5}"#),
            (
                r#"{"n":"ab","o":{"k":[1]}}"#,
                r#"{"n":"ab","o":{"k":[1]},"p":null}"#,
            ),
            (r#"{"n":1,"o":[1,2]}"#, r#"{"n":1 ,"o":[1,2] }"#),
        ] {
            for (x, y) in [(a, b), (b, a)] {
                let line = format!(
                    r#"{{"case_id":"c","variant_id":"v","allowed_changes":["n"],"source":{{"state":{x}}},"variant":{{"state":{y}}}}}"#
                );
                assert!(assert_agrees(&line), "declined: {line}");
            }
        }
    }

    /// Lines the scanner must decline by itself: serde_json refuses them, or
    /// the slow path warns about them, or they are past what it models.
    #[test]
    fn fast_path_declines_on_its_own() {
        let head = r#"{"case_id":"c","variant_id":"v""#;
        let deep = |n: usize| format!("{head},\"x\":{}{}}}", "[".repeat(n), "]".repeat(n));
        let mut lines: Vec<String> = [
            // Repeated keys, at every level, and two spellings of one field.
            r#","x":1,"x":2}"#,
            r#","source":{"state":{"a":{"b":1,"b":1}}},"variant":{"state":{"a":{"b":1,"b":1}}}}"#,
            r#","variant":{"state":{"a":1}},"source":{"state":{"a":1,"a":1}}}"#,
            r#","runner":[{"k":1,"k":1}]}"#,
            r#","source":{"route":"pass","route":"pass"}}"#,
            r#","policy":{"review":0.5,"review":0.5,"action":0.9}}"#,
            r#","expectation":{"kind":"invariant","kind":"invariant"}}"#,
            r#","source":{"response":{"p":0.5,"p":0.5}}}"#,
            r#","caseId":"c"}"#,
            r#","source":{"probability":0.5,"noul":0.5}}"#,
            r#","source":{"p":null,"noul":0.5}}"#,
            r#","family":"a","family":"a"}"#,
            r#","\u0078":1,"x":2}"#,
            // Numbers serde_json refuses, and one the fast path leaves alone.
            r#","x":1e400}"#,
            r#","x":-1e400}"#,
            r#","x":01}"#,
            r#","x":1.}"#,
            r#","x":.5}"#,
            r#","x":+1}"#,
            r#","x":1e}"#,
            r#","x":-}"#,
            r#","x":NaN}"#,
            r#","x":Infinity}"#,
            r#","x":1e301}"#,
            // Strings serde_json refuses.
            r#","x":"\ud800"}"#,
            r#","x":"\udc00\ud800"}"#,
            r#","x":"\ud800\u0041"}"#,
            r#","x":"\x"}"#,
            r#","x":"\u12"}"#,
            ",\"x\":\"a\u{1}b\"}",
            ",\"x\":\"a\tb\"}",
            // Broken structure.
            r#"}x"#,
            r#"}{}"#,
            r#","x":[1,]}"#,
            r#","x":{"a":1,}}"#,
            r#","x":{"a" 1}}"#,
            r#","x":[1 2]}"#,
            r#","x":tru}"#,
            r#","#,
            r#","x":"unterminated}"#,
            // Values of the wrong kind.
            r#","passed":"no"}"#,
            r#","family":5}"#,
            r#","source":{"state":{"a":1}},"variant":"x"}"#,
            r#","policy":{"review":0.5}}"#,
            r#","reasons":[1]}"#,
        ]
        .iter()
        .map(|tail| format!("{head}{tail}"))
        .collect();
        lines.push(deep(127));
        lines.push(r#"[{"case_id":"c","variant_id":"v"}]"#.to_string());
        lines.push(r#"{"case_id":null,"variant_id":"v"}"#.to_string());
        lines.push(r#"{"case_id":1,"variant_id":"v"}"#.to_string());
        for line in &lines {
            assert!(
                super::READER.with_borrow_mut(|r| r.parse(line).is_none()),
                "accepted: {line}"
            );
            assert!(!assert_agrees(line));
        }
        // What serde_json accepts and the fast path models, it reads.
        let accepted: Vec<String> = [
            r#","x":[{"k":1},{"k":1}],"y":{"k":{"k":1}}}"#,
            r#","x":"\ud83d\ude00 caf\u00e9 \"q\" \\ \/ \b\f\n\r\t","y":-0,"z":1e-400,"w":1E2}"#,
            r#","label":5,"timestamp":1.5,"reasons":"one reason","passed":null}"#,
            r#","policy":{"review":0.5,"action":0.9},"review_threshold":"ignored"}"#,
            r#","expectation":{"kind":"not_less_urgent","max_probability_drift":"unread"}}"#,
            r#","source":{"response":{"p":0.5},"p":"unread","state":"s"},"variant":{"state":"s"}}"#,
            " , \"source\" : { \"state\" : { \"a\" : [ 1 , 2 ] } } , \"variant\" : { \"state\" : { \"a\" : [ 1 , 3 ] } } }",
            // Probabilities and confidences outside [0, 1]: not recorded,
            // with a warning each, the side's own fields read instead.
            r#","source":{"response":{"probability":1.5}}}"#,
            r#","source":{"response":{"noul":-0.25,"c":7},"probability":0.4,"confidence":2},"variant":{"response":{"p" : 1e3}}}"#,
            " ,\"variant\":{\"probability\"\t:\r 1.0000001,\"confidence\":-0}}",
        ]
        .iter()
        .map(|tail| format!("{head}{tail}"))
        .chain([deep(126)])
        .collect();
        for line in &accepted {
            assert!(
                super::READER.with_borrow_mut(|r| r.parse(line).is_some()),
                "declined: {line}"
            );
            assert!(assert_agrees(line));
        }
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        /// Small JSON texts, mostly valid: the values odd runs hold.
        fn leaf() -> impl Strategy<Value = String> {
            let good: &[&str] = &[
                "null",
                "true",
                "false",
                "0",
                "-0",
                "1",
                "0.5",
                "1.0",
                "0.55",
                "0.9",
                "2",
                "-1",
                "3e0",
                "0.25",
                "1E-400",
                "1e300",
                "123456789012345678901234567890",
                r#""x""#,
                r#""pass""#,
                r#""ACT""#,
                r#""review""#,
                r#""nope""#,
                r#""ok""#,
                r#""timeout""#,
                r#""invariant""#,
                r#""not_less_urgent""#,
                r#""allowed-routes""#,
                r#""mystery""#,
                r#""a\u00e9""#,
                r#""\ud83d\ude00""#,
                r#""t\tab""#,
                r#""evidence-ablation""#,
                r#""state.a""#,
                r#""question""#,
                r#""Source is too close to a decision boundary.""#,
                "[]",
                "{}",
                r#"["pass","review"]"#,
                r#"["state.a","b"]"#,
                r#"[1,"x"]"#,
            ];
            let bad: &[&str] = &[
                "1e400",
                "01",
                "1.",
                "2e301",
                r#""\ud800""#,
                "\"ctl\u{1}\"",
                r#""bad\x""#,
            ];
            prop_oneof![
                12 => proptest::sample::select(good).prop_map(str::to_string),
                1 => proptest::sample::select(bad).prop_map(str::to_string),
            ]
        }

        /// Top-level members of the right type, in either spelling.
        fn top_member() -> impl Strategy<Value = (String, String)> {
            let typed: &[(&str, &str)] = &[
                ("family", r#""evidence-ablation""#),
                ("family", r#""state-noise""#),
                ("transformation", r#""paraphrase""#),
                ("contractVersion", r#""q/3""#),
                ("model_id", r#""m\n1""#),
                (
                    "policy",
                    r#"{"review_threshold":0.55,"action_threshold":0.9}"#,
                ),
                (
                    "policy",
                    r#"{"reviewThreshold":0.5,"action":0.8,"note":[1]}"#,
                ),
                ("reviewThreshold", "0.5"),
                ("action_threshold", "0.9"),
                (
                    "expectation",
                    r#"{"kind":"invariant","max_probability_drift":0.1,"maxConfidenceDrift":0.2}"#,
                ),
                (
                    "expectation",
                    r#"{"type":"allowed_routes","allowedRoutes":["pass","review"]}"#,
                ),
                (
                    "expectation",
                    r#"{"kind":"not-more-urgent","permittedProbabilityMovement":0.05}"#,
                ),
                ("allowed_changes", r#"["state.a","question"]"#),
                ("allowedChanges", r#""b""#),
                ("passed", "false"),
                ("passed", "true"),
                (
                    "reasons",
                    r#"["Source is too close to a decision boundary."]"#,
                ),
                ("sourceRoute", r#""pass""#),
                ("variant_route", r#""Action""#),
                ("minimum_boundary_margin", "0.1"),
                ("repetition", "2"),
            ];
            prop_oneof![
                4 => proptest::sample::select(typed).prop_map(|(k, v)| (k.to_string(), v.to_string())),
                1 => (key(), value()),
            ]
        }

        /// Side members of the right type, in either spelling.
        fn side_member() -> impl Strategy<Value = (String, String)> {
            let typed: &[(&str, &str)] = &[
                ("question", r#""q""#),
                ("prompt", r#""q\u00e9""#),
                ("response", r#"{"probability":0.5,"confidence":0.8}"#),
                ("assessment", r#"{"noul":0.93,"c":0.7}"#),
                ("noul", "0.56"),
                ("p", "0.2"),
                ("confidence", "0.9"),
                ("route", r#""ACT""#),
                ("route", r#""pass""#),
                ("outcome", r#""timeout""#),
                ("status", r#""ok""#),
                ("latencyMs", "3e4"),
                ("error_message", r#""boom""#),
                ("decision", r#""approve""#),
            ];
            prop_oneof![
                4 => proptest::sample::select(typed).prop_map(|(k, v)| (k.to_string(), v.to_string())),
                1 => (key(), value()),
            ]
        }

        /// Keys of every level in both spellings, a few others, and escapes.
        fn key() -> impl Strategy<Value = String> {
            let keys: &[&str] = &[
                "case_id",
                "caseId",
                "variant_id",
                "variantId",
                "label",
                "family",
                "transformation",
                "contract_version",
                "modelId",
                "policy",
                "review_threshold",
                "actionThreshold",
                "expectation",
                "minimum_boundary_margin",
                "allowed_changes",
                "allowedChanges",
                "sourceRoute",
                "variant_route",
                "passed",
                "reasons",
                "repetition",
                "question",
                "prompt",
                "state",
                "payload",
                "response",
                "assessment",
                "probability",
                "noul",
                "p",
                "confidence",
                "c",
                "route",
                "outcome",
                "status",
                "error",
                "latency_ms",
                "decision",
                "kind",
                "type",
                "review",
                "action",
                "max_probability_drift",
                "maximumNoulDrift",
                "require_same_route",
                "permitted_probability_movement",
                "allowed_routes",
                "a",
                "b",
                "evidence",
                "x",
                "\\u0061",
                "é",
            ];
            proptest::sample::select(keys).prop_map(str::to_string)
        }

        fn object(members: Vec<(String, String)>, spaced: bool) -> String {
            let sep = if spaced { " , " } else { "," };
            let body: Vec<String> = members
                .iter()
                .map(|(k, v)| {
                    if spaced {
                        format!("\"{k}\" : {v}")
                    } else {
                        format!("\"{k}\":{v}")
                    }
                })
                .collect();
            format!("{{{}}}", body.join(sep))
        }

        /// JSON texts nested a few levels, with any key at any level.
        fn value() -> impl Strategy<Value = String> {
            leaf().prop_recursive(3, 24, 5, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..4)
                        .prop_map(|v| format!("[{}]", v.join(","))),
                    (
                        proptest::collection::vec((key(), inner), 0..5),
                        any::<bool>()
                    )
                        .prop_map(|(m, spaced)| object(m, spaced)),
                ]
            })
        }

        /// A side: its state (shared with the other side or not) and members.
        fn side(state: String) -> impl Strategy<Value = String> {
            (proptest::collection::vec(side_member(), 0..5), 0..6usize).prop_map(
                move |(mut m, at)| {
                    m.insert(at.min(m.len()), ("state".to_string(), state.clone()));
                    object(m, false)
                },
            )
        }

        fn line() -> impl Strategy<Value = String> {
            (value(), value(), any::<bool>())
                .prop_flat_map(|(a, b, same)| {
                    let b = if same { a.clone() } else { b };
                    (
                        side(a),
                        side(b),
                        proptest::collection::vec(top_member(), 0..6),
                        any::<bool>(),
                        any::<bool>(),
                    )
                })
                .prop_map(|(src, var, top, swap, spaced)| {
                    let mut m = vec![
                        ("case_id".to_string(), "\"c\\u00e9\"".to_string()),
                        ("variant_id".to_string(), "\"v\"".to_string()),
                    ];
                    let sides = [("source", src), ("variant", var)];
                    for (k, v) in if swap {
                        [sides[1].clone(), sides[0].clone()]
                    } else {
                        sides
                    } {
                        m.push((k.to_string(), v));
                    }
                    m.extend(top);
                    object(m, spaced)
                })
        }

        /// A variant state made from the source's members, each kept,
        /// replaced, extended by text that may or may not stay valid (a
        /// digit after a number, junk after a literal, a second closing
        /// brace), dropped or repeated, in the same order or rotated: the
        /// scanner steps over members whose text repeats the source's.
        fn edited_states() -> impl Strategy<Value = (String, String)> {
            let members = proptest::collection::vec((key(), value()), 0..6);
            let edits = proptest::collection::vec((0..8u8, value()), 6);
            (members, edits, 0..6usize, any::<bool>()).prop_map(|(m, edits, rotate, spaced)| {
                let mut n = Vec::new();
                for ((k, v), (op, other)) in m.iter().zip(edits) {
                    match op {
                        0..=2 => n.push((k.clone(), v.clone())),
                        3 => n.push((k.clone(), other)),
                        4 => n.push((k.clone(), format!("{v}7"))),
                        5 => n.push((k.clone(), format!("{v}x"))),
                        6 => n.push((k.clone(), format!("{v}}}"))),
                        _ => {
                            n.push((k.clone(), v.clone()));
                            n.push((k.clone(), v.clone()));
                        }
                    }
                }
                if !n.is_empty() {
                    let at = rotate % n.len();
                    n.rotate_left(at);
                }
                (object(m, spaced), object(n, !spaced))
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(1500))]
            /// Repeated keys, odd numbers, escapes, nesting, wrong types and
            /// both spellings: the fast path agrees or declines by itself.
            #[test]
            fn fast_path_agrees_or_declines(line in line()) {
                assert_agrees(&line);
            }

            /// Lines that repeat earlier lines' states, at other offsets and
            /// on either side: read on one thread, one after another, as the
            /// loader reads a case's lines, a state recalled from an earlier
            /// line reads as the slow path reads it.
            #[test]
            fn states_repeated_from_line_to_line_read_as_the_slow_path_reads_them(
                (a, b) in edited_states(),
                steps in proptest::collection::vec((0..4u8, 0..40usize, any::<bool>()), 1..6),
            ) {
                for (pick, pad, swap) in steps {
                    let (src, var) = match pick {
                        0 => (&a, &a),
                        1 => (&a, &b),
                        2 => (&b, &a),
                        _ => (&b, &b),
                    };
                    let case = "c".repeat(pad + 1);
                    let sides = if swap {
                        format!(r#""variant":{{"state":{var}}},"source":{{"state":{src}}}"#)
                    } else {
                        format!(r#""source":{{"state":{src}}},"variant":{{"state":{var}}}"#)
                    };
                    let line = format!(
                        r#"{{"case_id":"{case}","variant_id":"v","allowed_changes":["state.a"],{sides}}}"#
                    );
                    assert_agrees(&line);
                }
            }

            /// A variant state that repeats some of the source's members.
            #[test]
            fn shared_state_members_read_as_the_slow_path_reads_them(
                (a, b) in edited_states(),
                swap in any::<bool>(),
            ) {
                let (first, second) = if swap { ("variant", "source") } else { ("source", "variant") };
                let line = format!(
                    r#"{{"case_id":"c","variant_id":"v","allowed_changes":["state.a"],"{first}":{{"state":{a}}},"{second}":{{"state":{b}}}}}"#
                );
                assert_agrees(&line);
            }
        }
    }

    #[test]
    fn pair_rows_stay_small() {
        // 64 bytes: the memory target is 64 bytes per pair plus 50 MB, and
        // record keys are not part of the row (see `rowkeys`).
        assert!(
            std::mem::size_of::<PairRow>() <= 64,
            "{}",
            std::mem::size_of::<PairRow>()
        );
        assert_eq!(std::mem::size_of::<Loc>(), 16);
        let l = Loc::new(3, 7, 123_456_789_012, 99);
        assert_eq!(
            (l.file(), l.line, l.offset(), l.len),
            (3, 7, 123_456_789_012, 99)
        );
    }

    #[test]
    fn the_interner_gives_each_string_one_id() {
        let mut i = Interner::default();
        assert_eq!(i.intern(""), (0, true));
        assert_eq!(i.intern("a"), (1, true));
        assert_eq!(i.intern(""), (0, false));
        assert_eq!(i.intern("ab"), (2, true));
        assert_eq!(i.intern("a"), (1, false));
        // Enough strings to grow the table several times.
        let names: Vec<String> = (0..20_000).map(|n| format!("case-{n:06}")).collect();
        let ids: Vec<Sym> = names.iter().map(|s| i.intern(s).0).collect();
        for (s, &id) in names.iter().zip(&ids) {
            assert_eq!(i.intern(s), (id, false));
            assert_eq!(Interner::at(&i.text, &i.ends, id), s);
        }
        assert_eq!(i.ends.len(), 3 + names.len());
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
        assert_eq!(n, 8 * 5 * 4 * 6 * 6 * 4);
    }

    #[test]
    fn a_line_longer_than_a_chunk_still_opens() {
        // Bigger than the first chunk and spanning chunk boundaries.
        let big = format!(
            "{{\"case_id\":\"big\",\"variant_id\":\"v\",\"note\":\"{}\"}}",
            "y".repeat(3 * FIRST_CHUNK)
        );
        let idx = load_bytes(format!("{GOOD}\n{big}\n{GOOD}").as_bytes());
        assert_eq!(idx.rows.len(), 3);
        assert_eq!(idx.rows[1].loc.line, 2);
        assert_eq!(idx.read_line(idx.rows[1].loc).unwrap(), big.as_bytes());
        assert_eq!(idx.read_line(idx.rows[2].loc).unwrap(), GOOD.as_bytes());
        // An overlong line spanning chunks is skipped with its full length.
        let idx = load_capped(format!("{GOOD}\n{big}\n{GOOD}\n{big}").as_bytes(), 1000);
        assert_eq!(idx.rows.len(), 2);
        assert_eq!(idx.problems.len(), 2);
        assert!(idx.problems.iter().all(|p| p.kind == ProblemKind::TooLong));
        assert!(
            idx.problems[0]
                .message
                .contains(&human_bytes(big.len() as u64))
        );
        assert_eq!((idx.problems[0].line, idx.problems[1].line), (2, 4));
    }

    #[test]
    fn interned_strings_resolve() {
        let idx = load_bytes(format!("{GOOD}\n{GOOD}\n").as_bytes());
        assert_eq!(idx.str(idx.rows[1].case), "c1");
        assert_eq!(idx.str(idx.rows[0].family), "");
        // c1, v1 and the transformation ("not recorded"); the suggested
        // category is a code, not an interned string.
        assert_eq!(idx.strings().len(), 3);
        assert!(idx.rows[0].suggestion().is_some());
        assert_eq!(idx.rows[0].suggestion(), idx.rows[1].suggestion());
        assert_eq!(idx.versions.len(), 1);
        assert_eq!(idx.contract(&idx.rows[0]), NO_SYM);
    }
}

/// The index's lean derivation against the full one: for every record, the
/// row facts, the suggested category and the transformation name must be
/// exactly what `derive` + `suggest` give.
#[cfg(test)]
mod lean_tests {
    use super::*;
    use crate::core::derive::{Derived, derive_with, lean};
    use crate::core::diff::{DiffEntry, JsonPath, diff_values};
    use crate::core::model::{Expectation, Outcome, Policy, Route, Side};
    use proptest::prelude::*;
    use serde_json::{Map, json};

    /// The row summary as the index made it from the full derivation: the
    /// flags read from the warnings derive writes about those conditions.
    /// (A field warning or an undeclared path quotes the file, so a file
    /// could spell the same words; those never set a flag.)
    fn full_summary(record: &PairRecord, d: &Derived) -> String {
        let own: Vec<&String> = d.warnings[record.field_warnings.len()..]
            .iter()
            .filter(|w| !w.starts_with("Invalid pair:"))
            .collect();
        let mut fl = 0u8;
        if d.flip == Some(true) {
            fl |= flags::FLIP;
        }
        if d.transformation.inferred {
            fl |= flags::INFERRED;
        }
        if d.near_boundary == Some(true) {
            fl |= flags::NEAR_BOUNDARY;
        }
        if !d.warnings.is_empty() {
            fl |= flags::WARNINGS;
        }
        if own.iter().any(|w| w.contains("The runner recorded")) {
            fl |= flags::PASSED_MISMATCH;
        }
        if own.iter().any(|w| w.contains("route was recorded as")) {
            fl |= flags::ROUTE_MISMATCH;
        }
        let lean_like = crate::core::derive::Lean {
            dp: d.dp,
            dc: d.dc,
            source_route: d.source_route,
            variant_route: d.variant_route,
            source_margin: d.source_margin,
            variant_margin: d.variant_margin,
            near_boundary: d.near_boundary,
            flip: d.flip,
            status: d.status,
            validity: d.validity.code(),
            inferred_transformation: None,
            inferred: d.transformation.inferred,
            warnings: false,
            passed_mismatch: false,
            route_mismatch: false,
            question_changed: d.changes.question_changed,
            state: Vec::new(),
        };
        let mut s = summarize(record, &lean_like);
        s.codes.flags = fl;
        format!("{s:?}")
    }

    /// What a row keeps, by the full path and by the lean one.
    fn both(r: &PairRecord, diff: Option<Vec<DiffEntry>>) -> (String, String) {
        let d = derive_with(r, diff.clone());
        let full = format!(
            "{} suggestion {:?} transformation {:?}",
            full_summary(r, &d),
            crate::core::suggest::suggest(r, &d).map(|s| s.category),
            d.transformation.name,
        );
        let l = lean(r, diff);
        assert_eq!(l.state, d.changes.state);
        assert_eq!(l.question_changed, d.changes.question_changed);
        let lean = format!(
            "{:?} suggestion {:?} transformation {:?}",
            summarize(r, &l),
            crate::core::suggest::lean_category(r, &l),
            l.transformation(r),
        );
        (full, lean)
    }

    /// Every line of a text that is a record, by both parses.
    fn check_text(name: &str, text: &str) -> usize {
        let mut n = 0;
        for (i, line) in text.lines().enumerate() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let Ok(r) = map_record(v) else { continue };
            let (full, lean) = both(&r, None);
            assert_eq!(lean, full, "{name}:{}", i + 1);
            n += 1;
            let fast = super::READER
                .with_borrow_mut(|r| r.parse(line).map(|f| both(&f.record, f.diff_entries())));
            if let Some((full, lean)) = fast {
                assert_eq!(lean, full, "{name}:{} (fast path)", i + 1);
            }
        }
        n
    }

    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                files(&p, out);
            } else {
                out.push(p);
            }
        }
    }

    #[test]
    fn lean_matches_full_on_every_sample_and_fixture() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut paths = Vec::new();
        files(&root.join("sample-runs"), &mut paths);
        files(&root.join("tests/fixtures"), &mut paths);
        paths.sort();
        let mut records = 0;
        for p in &paths {
            let bytes = std::fs::read(p).unwrap();
            let name = p.display().to_string();
            records += check_text(&name, &String::from_utf8_lossy(&bytes));
            // Another tool's results, converted to pair records as the
            // loader does.
            let found = crate::core::formats::detect(&bytes);
            if let Some(format) = found.format {
                let mut out = Vec::new();
                if crate::core::formats::convert(p, format, &mut out).is_ok() {
                    records += check_text(&name, &String::from_utf8_lossy(&out));
                }
            }
        }
        assert!(records > 100, "only {records} records checked");
    }

    #[test]
    fn a_files_words_set_no_flag() {
        // An unknown route is quoted in its field warning, and an undeclared
        // key in the invalid-pair warning: neither is a mismatch.
        let line = json!({
            "case_id": "c", "variant_id": "v",
            "policy": {"review_threshold": 0.55, "action_threshold": 0.9},
            "allowed_changes": [],
            "source": {"probability": 0.3, "route": "The runner recorded a pass",
                       "state": {"a": 1}},
            "variant": {"probability": 0.31, "state": {"a": 1, "route was recorded as": 2}},
        });
        let r = map_record(line).unwrap();
        let d = crate::core::derive::derive(&r);
        assert!(d.warnings.iter().any(|w| w.contains("The runner recorded")));
        assert!(
            d.warnings
                .iter()
                .any(|w| w.contains("route was recorded as"))
        );
        let s = summarize(&r, &lean(&r, None));
        assert_eq!(s.codes.validity, ValidityCode::Invalid);
        assert!(s.codes.flags & flags::WARNINGS != 0);
        assert_eq!(s.codes.flags & flags::PASSED_MISMATCH, 0);
        assert_eq!(s.codes.flags & flags::ROUTE_MISMATCH, 0);
    }

    fn num(choices: &'static [f64]) -> impl Strategy<Value = f64> {
        prop_oneof![
            3 => proptest::sample::select(choices),
            1 => 0.0..=1.0f64,
        ]
    }

    const PROBS: &[f64] = &[
        0.0, 0.3, 0.45, 0.49, 0.5, 0.54, 0.55, 0.56, 0.6, 0.89, 0.9, 0.91, 1.0,
    ];
    const BOUNDS: &[f64] = &[0.0, 0.01, 0.02, 0.05, 0.1, 0.3];

    fn route() -> impl Strategy<Value = Option<Route>> {
        proptest::option::of(proptest::sample::select(Route::ALL.to_vec()))
    }

    fn outcome() -> impl Strategy<Value = Option<Outcome>> {
        proptest::option::weighted(
            0.4,
            prop_oneof![
                3 => Just(Outcome::Ok),
                1 => Just(Outcome::Timeout),
                1 => Just(Outcome::Error),
                1 => Just(Outcome::InvalidResponse),
                1 => Just(Outcome::Other("refused".into())),
            ],
        )
    }

    fn expectation() -> impl Strategy<Value = Option<Expectation>> {
        proptest::option::weighted(
            0.85,
            prop_oneof![
                (
                    proptest::option::of(num(BOUNDS)),
                    proptest::option::of(num(BOUNDS)),
                    any::<bool>()
                )
                    .prop_map(|(p, c, same)| Expectation::Invariant {
                        max_probability_drift: p,
                        max_confidence_drift: c,
                        require_same_route: same,
                    }),
                num(BOUNDS).prop_map(|m| Expectation::NotLessUrgent {
                    permitted_probability_movement: m
                }),
                num(BOUNDS).prop_map(|m| Expectation::NotMoreUrgent {
                    permitted_probability_movement: m
                }),
                proptest::sample::subsequence(Route::ALL.to_vec(), 0..=3)
                    .prop_map(|allowed_routes| Expectation::AllowedRoutes { allowed_routes }),
                Just(Expectation::Unknown {
                    kind: "monotone".into()
                }),
            ],
        )
    }

    /// State members: keys that name evidence (in mixed case and quoted
    /// forms) and keys that do not, each with a few values so both sides
    /// often agree, differ, or hold the same members in another order.
    const KEYS: &[&str] = &[
        "a",
        "uiTheme",
        "Evidence",
        "source_ref",
        "x y",
        "e\u{e}vidence",
        "PROOF",
        "account",
    ];

    fn value(i: usize) -> Value {
        match i {
            0 => json!(1),
            1 => json!("dark"),
            2 => json!([{"id": "E1", "t": "x"}, {"id": "E2", "t": "y"}]),
            3 => json!([{"id": "E2", "t": "y"}, {"id": "E1", "t": "x"}]),
            4 => json!([{"id": "E1", "t": "x"}]),
            5 => json!({"plan": "pro", "seats": 3}),
            6 => json!({"seats": 3, "plan": "pro"}),
            _ => json!([1, 2, 3]),
        }
    }

    fn state() -> impl Strategy<Value = Option<Value>> {
        proptest::option::weighted(
            0.85,
            (
                proptest::sample::subsequence((0..KEYS.len()).collect::<Vec<_>>(), 0..=5)
                    .prop_shuffle(),
                proptest::collection::vec(0..8usize, KEYS.len()),
            )
                .prop_map(|(keys, vals)| {
                    let mut m = Map::new();
                    for k in keys {
                        m.insert(KEYS[k].to_string(), value(vals[k]));
                    }
                    Value::Object(m)
                }),
        )
    }

    fn side() -> impl Strategy<Value = Side> {
        (
            proptest::option::weighted(0.8, proptest::sample::select(vec!["q1", "q2"])),
            state(),
            proptest::option::weighted(0.9, num(PROBS)),
            proptest::option::of(num(PROBS)),
            route(),
            outcome(),
            proptest::option::weighted(0.2, Just("HTTP 503".to_string())),
            proptest::option::of(proptest::sample::select(vec![10.0, 30000.0])),
        )
            .prop_map(
                |(question, state, probability, confidence, route, outcome, error, latency)| Side {
                    question: question.map(str::to_string),
                    state,
                    probability,
                    confidence,
                    route,
                    outcome,
                    error,
                    latency_ms: latency,
                    decision: None,
                },
            )
    }

    /// `allowed_changes` entries: root paths, bare keys, prefixes, quoted
    /// keys, indices, stray spaces and malformed ones.
    const ALLOWED: &[&str] = &[
        "question",
        "state",
        "state.Evidence",
        "Evidence",
        "evidence",
        "a",
        " uiTheme ",
        "state.account.plan",
        "account",
        "state[\"x y\"]",
        "[\"x y\"]",
        "Evidence[1]",
        "state.Evidence[0].t",
        "",
        "a..b",
        "1a",
        "state.",
        "QUESTION",
        "question.text",
        "state[\"e\\u000evidence\"]",
        "source_ref",
    ];

    const FAMILIES: &[&str] = &[
        "question",
        "Evidence-Ablation",
        "evidence-contrast",
        "STATE-NOISE",
        "Question",
        "tone",
    ];

    const TRANSFORMATIONS: &[&str] = &[
        "paraphrase",
        "Remove-Evidence",
        "add-EVIDENCE",
        "Typo",
        "irrelevant-Field",
        "reorder-fields",
        "unpaired",
        "formal-tone",
        "question-and-state",
    ];

    fn record() -> impl Strategy<Value = PairRecord> {
        (
            (
                proptest::option::weighted(
                    0.8,
                    (
                        proptest::sample::select(vec![0.3, 0.5, 0.55]),
                        proptest::sample::select(vec![0.8, 0.9]),
                    ),
                ),
                expectation(),
                proptest::option::weighted(0.8, num(BOUNDS)),
                proptest::option::weighted(
                    0.8,
                    proptest::collection::vec(proptest::sample::select(ALLOWED), 0..4),
                ),
                proptest::option::of(any::<bool>()),
            ),
            (
                side(),
                side(),
                proptest::option::of(proptest::sample::select(FAMILIES)),
                proptest::option::weighted(0.6, proptest::sample::select(TRANSFORMATIONS)),
                // Often the variant keeps the source's state or question.
                (any::<bool>(), any::<bool>()),
                proptest::collection::vec(
                    proptest::sample::select(vec![
                        "Source is too close to a Decision Boundary: margin 0.010.",
                        "Probability drift 0.341 exceeds 0.1.",
                        "route recorded as action",
                    ]),
                    0..3,
                ),
                proptest::collection::vec(
                    proptest::sample::select(vec![
                        "`source.route` should be action, review or pass but is \"The runner recorded\"; treated as not recorded",
                        "`passed` should be true or false but is a string; treated as not recorded",
                    ]),
                    0..2,
                ),
                proptest::option::of(0u64..3),
            ),
        )
            .prop_map(
                |(
                    (policy, expectation, margin, allowed, passed),
                    (
                        source,
                        mut variant,
                        family,
                        transformation,
                        (same_state, same_question),
                        reasons,
                        warnings,
                        repetition,
                    ),
                )| {
                    if same_state {
                        variant.state = source.state.clone();
                    }
                    if same_question {
                        variant.question = source.question.clone();
                    }
                    PairRecord {
                    case_id: "c".into(),
                    variant_id: "v".into(),
                    family: family.map(str::to_string),
                    transformation: transformation.map(str::to_string),
                    policy: policy.map(|(review, action)| Policy {
                        review_threshold: review,
                        action_threshold: action,
                    }),
                    expectation,
                    minimum_boundary_margin: margin,
                    allowed_changes: allowed
                        .map(|v| v.into_iter().map(str::to_string).collect()),
                    source,
                    variant,
                    passed,
                    reasons: reasons.into_iter().map(str::to_string).collect(),
                    field_warnings: warnings.into_iter().map(str::to_string).collect(),
                    repetition,
                    ..PairRecord::default()
                    }
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn lean_matches_full(r in record(), given_diff in any::<bool>()) {
            // The fast path hands over the diff it computed; the slow one none.
            let diff = match (&r.source.state, &r.variant.state) {
                (Some(a), Some(b)) if given_diff => {
                    Some(diff_values(&JsonPath::root("state"), a, b))
                }
                _ => None,
            };
            let (full, lean) = both(&r, diff);
            prop_assert_eq!(lean, full);
        }
    }
}
