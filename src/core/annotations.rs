//! The annotation store: reviewers' decisions, on disk the moment they are shown.
//!
//! Decisions live in an append-only journal (by default `<run>.triage.jsonl`),
//! one JSON event per line, each carrying the full new state of one
//! reviewer's decision on one pair (or a pair's resolution), so replay is
//! "the last event per reviewer and key wins" and a torn final line costs at
//! most the decision that was being written when the machine died. Each pair
//! shows one annotation: its only reviewer's decision, or with several, the
//! category they agree on or a resolution chose ([`Agreement`]).
//! [`AnnotationStore::apply`] appends and fsyncs before it returns; the
//! journal and its lock are created by the first decision, and on open an
//! existing journal is compacted by temp file, fsync, rename and folder
//! fsync, its unreadable lines moved to `<journal>.unreadable` first, never
//! dropped. Several triages may share one journal: every append and every
//! compaction happens under an exclusive lock on `<journal>.lock`, after
//! reading what the others appended since, so journal order decides and
//! nothing is dropped; a journal replaced by an older copy gets this
//! triage's lost decisions written again. A store may hold several journals
//! (one per run, [`journal_specs`]). The run file itself is never written.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use rustc_hash::{FxHashMap, FxHashSet};
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rayon::iter::Either;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use smallvec::SmallVec;

use super::key::RecordKey;
use ids::IdIndex;
use journal::{Journal, LOCK_WAIT, PendingEvent, lock_within};

/// A case or variant id held by a decision: shared, not copied, between
/// the change, its event, the journal and the undo step.
pub type Id = Arc<str>;

/// The journal format of a decision event.
const FORMAT_VERSION: u64 = 1;
/// The format of a resolution event: a triage that predates resolutions
/// takes it for a newer line and leaves it in place.
const RESOLUTION_VERSION: u64 = 2;

/// The state of one pair's triage.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Annotation {
    #[serde(with = "key_hex")]
    pub key: RecordKey,
    pub case_id: Id,
    pub variant_id: Id,
    pub category: Option<Name>,
    pub note: Option<String>,
    pub reviewer: Name,
    pub at: Name,
    pub source: AnnotationSource,
    /// Where a decision carried forward from an earlier run came from
    /// (`None` for a decision made on this run).
    /// (boxed: most decisions have none, and every decision held pays for
    /// the field).
    pub carried_from: Option<Box<Provenance>>,
    /// What makes this event unlike any other, even one that records the
    /// same decision by the same reviewer within the same second: written
    /// as `n` (16 hex digits) on each line; 0 for lines written before it
    /// existed. Not part of the decision, so never exported.
    #[serde(skip)]
    pub nonce: u64,
}

/// The origin of a decision copied from an earlier run's journal by
/// `triage compare --carry` or the viewer's baseline view: who made it,
/// when, and on which run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Provenance {
    pub reviewer: String,
    pub at: String,
    pub run: String,
}

/// What the events of one save replaced without a note, one per category,
/// shared by the events.
type Prevs = FxHashMap<Option<Name>, Arc<Prev>>;

/// A change's event made ready to stage ([`AnnotationStore::save`]): the
/// event, its `prev`, what it settles, and the annotation it replaces.
type Prepared = (
    Arc<Annotation>,
    Option<Arc<Prev>>,
    Option<Vec<Prior>>,
    Option<Arc<Annotation>>,
);

/// From this many plain decisions a save builds their events on every core.
const PREPARE_PAR_MIN: usize = 50_000;

/// Whether no two changes are on the same pair (then what each replaces
/// can be looked up before any is staged). Tells from the first 8 bytes
/// of the keys, digests: keys that share them count as the same pair.
fn distinct_pairs(changes: &[Change]) -> bool {
    let mut heads: Vec<u64> = changes
        .par_iter()
        .map(|c| u64::from_le_bytes(c.key.0[..8].try_into().expect("8 of 16 bytes")))
        .collect();
    heads.par_sort_unstable();
    !heads.windows(2).any(|w| w[0] == w[1])
}

/// Nonces for the new events of one save (see [`Annotation::nonce`]):
/// each a per-process random key over a counter, the time and the process
/// id; never 0. The time and the process id are read once per save (a
/// system call each), the counter (shared, so that events built on
/// several threads differ too) tells the save's events apart.
fn fresh_nonces() -> impl Fn() -> u64 + Sync {
    use std::hash::{BuildHasher, Hasher};
    static SEED: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let seed = SEED.get_or_init(Default::default);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let pid = std::process::id();
    move || {
        let mut h = seed.build_hasher();
        h.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
        h.write_u128(now);
        h.write_u32(pid);
        h.finish().max(1)
    }
}

/// Whether the category was chosen by hand or is an accepted suggestion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnnotationSource {
    Manual,
    Suggestion,
}

/// A change to apply: the new (category, note) for one pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub key: RecordKey,
    pub case_id: Id,
    pub variant_id: Id,
    pub category: Option<Name>,
    pub note: Option<String>,
    pub source: AnnotationSource,
}

/// Whether this store may write its journal, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    ReadWrite,
    ReadOnly { reason: String },
}

/// Why a journal could not be opened.
#[derive(Debug)]
pub enum StoreOpenError {
    /// The journal or its lock file cannot be created there: fall back to another path.
    NotWritable { path: PathBuf, error: io::Error },
    /// [`AnnotationStore::read`] was given a journal that does not exist.
    NotFound { path: PathBuf },
    /// The file holds lines but none is an annotation event, so nothing is written to it.
    NotAJournal { path: PathBuf, line: u64 },
    /// The journal exists but could not be read.
    Io { path: PathBuf, error: io::Error },
}

impl StoreOpenError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            StoreOpenError::NotWritable { path, .. }
            | StoreOpenError::NotFound { path }
            | StoreOpenError::NotAJournal { path, .. }
            | StoreOpenError::Io { path, .. } => path,
        }
    }
}

impl fmt::Display for StoreOpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreOpenError::NotWritable { path, error } => write!(
                f,
                "cannot create {}: {error}; the folder is not writable — pass --annotations PATH to keep annotations elsewhere",
                path.display()
            ),
            StoreOpenError::NotFound { path } => write!(
                f,
                "no annotation journal at {} — check the path (no pair of this run has been annotated there yet)",
                path.display()
            ),
            StoreOpenError::NotAJournal { path, line } => write!(
                f,
                "{} does not look like a triage annotation journal (line {line} is not an annotation event, and no line is); it was left untouched — pass --annotations with the journal's path",
                path.display()
            ),
            StoreOpenError::Io { path, error } => write!(
                f,
                "cannot read the annotation journal {}: {error} — check the file, or pass --annotations PATH to use another",
                path.display()
            ),
        }
    }
}

impl std::error::Error for StoreOpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreOpenError::NotWritable { error, .. } | StoreOpenError::Io { error, .. } => {
                Some(error)
            }
            _ => None,
        }
    }
}

/// Why decisions are not on disk yet; they are kept in memory, pending.
#[derive(Debug)]
pub enum SaveError {
    /// Writing or syncing the journal failed.
    Io {
        path: PathBuf,
        error: io::Error,
        pending: usize,
    },
    /// This store may not write (it was opened for reading, or the journal cannot be locked).
    ReadOnly {
        path: PathBuf,
        reason: String,
        pending: usize,
    },
}

fn decisions(n: usize) -> String {
    if n == 1 {
        "1 decision is".to_string()
    } else {
        format!("{n} decisions are")
    }
}

impl fmt::Display for SaveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SaveError::Io {
                path,
                error,
                pending,
            } => {
                let advice = match error.kind() {
                    ErrorKind::StorageFull | ErrorKind::QuotaExceeded => "free space",
                    ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => {
                        "make the file writable"
                    }
                    ErrorKind::NotFound => "restore the journal's folder",
                    _ => "fix the disk problem",
                };
                write!(
                    f,
                    "cannot save to {}: {error}; {} kept in memory and will be retried — {advice} or quit with care",
                    path.display(),
                    decisions(*pending)
                )
            }
            SaveError::ReadOnly {
                path,
                reason,
                pending,
            } => write!(
                f,
                "cannot save to {}: {reason}; {} kept in memory only and lost on quit — reopen the run with --annotations PATH on a local disk to annotate it",
                path.display(),
                decisions(*pending)
            ),
        }
    }
}

impl std::error::Error for SaveError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SaveError::Io { error, .. } => Some(error),
            SaveError::ReadOnly { .. } => None,
        }
    }
}

/// The value an event replaced, kept for audit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
struct Prev {
    #[serde(default)]
    category: Option<Name>,
    #[serde(default)]
    note: Option<String>,
}

/// Only the version, read first so a newer format is recognised even if its fields moved.
#[derive(Deserialize)]
struct Version {
    #[serde(default = "format_version")]
    v: u64,
}

fn format_version() -> u64 {
    FORMAT_VERSION
}

/// One journal line as read, with its version and kind; writing goes
/// through [`encode`].
#[derive(Deserialize)]
struct Event {
    #[serde(default = "format_version")]
    v: u64,
    /// Any JSON: a kind of another type is told apart by the version
    /// first passes ([`parse_line_by_parts`]), not refused here.
    #[serde(default)]
    kind: Option<serde_json::Value>,
    key: String,
    #[serde(default)]
    case_id: String,
    #[serde(default)]
    variant_id: String,
    #[serde(default)]
    category: Option<Name>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    reviewer: Name,
    #[serde(default)]
    at: Name,
    #[serde(default = "manual")]
    source: AnnotationSource,
    #[serde(default)]
    prev: Option<Prev>,
    #[serde(default)]
    carried_from: Option<Provenance>,
    #[serde(default)]
    resolves: Option<Vec<Prior>>,
    /// The event's nonce, 16 hex digits (absent on older lines).
    #[serde(default)]
    n: Option<String>,
}

fn manual() -> AnnotationSource {
    AnnotationSource::Manual
}

enum Line {
    Event(Box<Annotation>, Option<Prev>, Option<Vec<Prior>>),
    Newer,
    /// Not an event, and why.
    Bad(String),
}

fn parse_line(body: &[u8]) -> Line {
    // Most lines are events of a known format, read in one pass; any other
    // line is told apart by the passes of [`parse_line_by_parts`], which
    // decide the same for the lines this one reads.
    if let Ok(ev) = serde_json::from_slice::<Event>(body) {
        let resolution = ev.v == RESOLUTION_VERSION
            && ev.kind.as_ref().and_then(serde_json::Value::as_str) == Some("resolution");
        if ev.v == FORMAT_VERSION || resolution {
            return event_line(ev, resolution);
        }
    }
    parse_line_by_parts(body)
}

/// [`parse_line`] in passes: the version first, so a newer format is
/// recognised even if its fields moved, then its kind, then the event.
fn parse_line_by_parts(body: &[u8]) -> Line {
    let version = match serde_json::from_slice::<Version>(body) {
        Ok(v) => v,
        Err(e) => return Line::Bad(why_not_json(body, &e)),
    };
    if version.v > RESOLUTION_VERSION {
        return Line::Newer;
    }
    if version.v != FORMAT_VERSION && version.v != RESOLUTION_VERSION {
        return Line::Bad(format!(
            "format version {} is not one triage writes ({FORMAT_VERSION})",
            version.v
        ));
    }
    if version.v == RESOLUTION_VERSION {
        #[derive(Deserialize)]
        struct Kind {
            #[serde(default)]
            kind: Option<String>,
        }
        let known = serde_json::from_slice::<Kind>(body)
            .is_ok_and(|k| k.kind.as_deref() == Some("resolution"));
        if !known {
            // A version-2 line of a kind this build does not know.
            return Line::Newer;
        }
    }
    let ev = match serde_json::from_slice::<Event>(body) {
        Ok(ev) => ev,
        Err(e) => return Line::Bad(format!("not an annotation event: {e}")),
    };
    event_line(ev, version.v == RESOLUTION_VERSION)
}

/// The line of an event read whole; `resolution`: of a resolution's format.
fn event_line(ev: Event, resolution: bool) -> Line {
    let resolves = if resolution {
        match ev.resolves {
            Some(resolves) => Some(resolves),
            None => return Line::Bad("a resolution without the decisions it resolves".to_string()),
        }
    } else {
        None
    };
    let Some(key) = RecordKey::parse(&ev.key) else {
        return Line::Bad("its key is not 32 hex digits".to_string());
    };
    let ann = Annotation {
        key,
        case_id: ev.case_id.into(),
        variant_id: ev.variant_id.into(),
        category: non_empty(ev.category),
        note: non_empty(ev.note),
        reviewer: ev.reviewer,
        at: ev.at,
        source: ev.source,
        carried_from: ev.carried_from.map(Box::new),
        // An unreadable nonce reads as none: the event still counts.
        nonce: ev
            .n
            .and_then(|n| u64::from_str_radix(&n, 16).ok())
            .unwrap_or(0),
    };
    Line::Event(Box::new(ann), ev.prev, resolves)
}

/// Why a journal line is not JSON, in words a reviewer can act on.
fn why_not_json(body: &[u8], e: &serde_json::Error) -> String {
    const MARKERS: [&[u8]; 4] = [b"<<<<<<<", b"=======", b">>>>>>>", b"|||||||"];
    if MARKERS.iter().any(|m| body.starts_with(m)) {
        return "a merge conflict marker: resolve the conflict, keeping both sides' events"
            .to_string();
    }
    if body.contains(&0) {
        return "holds NUL bytes".to_string();
    }
    if std::str::from_utf8(body).is_err() {
        return "not UTF-8 text".to_string();
    }
    format!("not JSON ({e})")
}

/// One journal line (without its newline) for this state of an annotation.
fn encode(ann: &Annotation, prev: Option<&Prev>, resolves: Option<&[Prior]>) -> String {
    let mut line = Vec::new();
    encode_into(&mut line, ann, prev, resolves);
    // Only `str`s and numbers went in, so the line is UTF-8.
    String::from_utf8(line).expect("serde_json writes UTF-8")
}

/// A journal event as written, in its documented field order: the
/// optional members go last, each only when there is one, so other events
/// read as before they existed.
#[derive(Serialize)]
struct EventOut<'a> {
    v: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(with = "key_hex")]
    key: RecordKey,
    case_id: &'a str,
    variant_id: &'a str,
    category: Option<&'a str>,
    note: Option<&'a str>,
    reviewer: &'a str,
    at: &'a str,
    source: AnnotationSource,
    /// Always written, `null` when the event replaced nothing (and on a resolution).
    prev: Option<PrevOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resolves: Option<&'a [Prior]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    carried_from: Option<&'a Provenance>,
    #[serde(skip_serializing_if = "Option::is_none")]
    n: Option<NonceHex>,
}

/// The value an event replaced, as written.
#[derive(Serialize)]
struct PrevOut<'a> {
    category: Option<&'a str>,
    note: Option<&'a str>,
}

/// A nonce as its 16 hex digits.
struct NonceHex(u64);

impl Serialize for NonceHex {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{:016x}", self.0))
    }
}

/// Append one journal line (without its newline) for this state of an
/// annotation to `out`.
fn encode_into(
    out: &mut Vec<u8>,
    ann: &Annotation,
    prev: Option<&Prev>,
    resolves: Option<&[Prior]>,
) {
    let event = EventOut {
        v: match resolves {
            Some(_) => RESOLUTION_VERSION,
            None => FORMAT_VERSION,
        },
        kind: resolves.map(|_| "resolution"),
        key: ann.key,
        case_id: &ann.case_id,
        variant_id: &ann.variant_id,
        category: ann.category.as_deref(),
        note: ann.note.as_deref(),
        reviewer: &ann.reviewer,
        at: &ann.at,
        source: ann.source,
        prev: prev.filter(|_| resolves.is_none()).map(|p| PrevOut {
            category: p.category.as_deref(),
            note: p.note.as_deref(),
        }),
        resolves,
        carried_from: ann.carried_from.as_deref().filter(|_| resolves.is_none()),
        n: (ann.nonce != 0).then_some(NonceHex(ann.nonce)),
    };
    // Writing into a vector cannot fail, and every field serializes.
    serde_json::to_writer(out, &event).expect("a journal event serializes");
}

/// What tells one event from another: a digest of everything it records,
/// its nonce included (a compaction writes an event back with the same
/// fields, so the same id; two decisions alike within one second differ
/// by their nonces).
fn event_id(ann: &Annotation, prev: Option<&Prev>, resolves: Option<&[Prior]>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ann.hash(&mut h);
    prev.hash(&mut h);
    resolves.hash(&mut h);
    h.finish()
}

/// An empty string means "none", so clearing a note by emptying it clears it.
fn non_empty<S: AsRef<str>>(s: Option<S>) -> Option<S> {
    s.filter(|s| !s.as_ref().is_empty())
}

impl Annotation {
    /// Whether this state has neither category nor note (it clears the pair).
    pub fn is_empty(&self) -> bool {
        self.category.is_none() && self.note.is_none()
    }
}

/// The order of every event this process applied, across all journals:
/// of two events for one key, the one applied later is the newer.
static CLOCK: AtomicU64 = AtomicU64::new(0);

fn tick() -> u64 {
    CLOCK.fetch_add(1, Ordering::Relaxed)
}

/// Where an event lands: a pair's decision by one reviewer
/// (`Some(reviewer)`), or the pair's resolution (`None`). Each slot keeps
/// its newest event.
type Slot = (RecordKey, Option<Name>);

/// A slot's newest event.
///
/// Its annotation and what it replaced are shared with the event's pending
/// copy and this triage's record of its own events ([`journal`]), so that
/// staging a decision copies no text.
#[derive(Debug, Clone)]
struct Entry {
    ann: Arc<Annotation>,
    /// (Most events replace nothing.)
    prev: Option<Arc<Prev>>,
    /// For a resolution: the decisions it settled.
    resolves: Option<Vec<Prior>>,
    /// When it was applied ([`tick`]); higher is newer.
    seq: u64,
}

impl Entry {
    fn slot(&self) -> Slot {
        let who = match self.resolves {
            Some(_) => None,
            None => Some(self.ann.reviewer),
        };
        (self.ann.key, who)
    }
}

/// One reviewer's category at the moment a resolution was recorded.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Prior {
    pub reviewer: Name,
    pub category: Option<Name>,
}

/// A resolution to record on a pair: the category it settles on, and the
/// decisions it settles. A change with no category withdraws the pair's
/// resolution (the event is written like any resolution, with no category
/// and nothing it settles), so the disagreement it settled shows again:
/// what undoing a resolution writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolutionChange {
    pub change: Change,
    /// The decisions it settles, by reviewer ([`AnnotationStore::priors`]
    /// when it is made; an undo or a redo writes back the ones it had).
    pub resolves: Vec<Prior>,
}

/// What an event of [`AnnotationStore::save_events`] is.
enum Kind {
    Decision,
    /// A resolution settling these decisions (`None`: the pair's decisions as they stand).
    Resolution(Option<Vec<Prior>>),
}

/// What a guarded save expects its pairs to hold before it writes.
enum Expect<'a> {
    /// This reviewer's decisions.
    Decisions(&'a [Change]),
    /// The pairs' resolutions (a change without a category: none).
    Resolutions(&'a [ResolutionChange]),
}

/// How the reviewers of a pair stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agreement {
    /// One reviewer decided.
    Single,
    /// Several decided, and no two named different categories.
    Agreed,
    /// They named different categories and a resolution settled them.
    Resolved,
    /// They named different categories and nothing settled them: the
    /// pair has no resolved category.
    Disagree,
}

impl Agreement {
    pub fn as_str(self) -> &'static str {
        match self {
            Agreement::Single => "single",
            Agreement::Agreed => "agreed",
            Agreement::Resolved => "resolved",
            Agreement::Disagree => "disagree",
        }
    }
}

/// The resolution recorded on a pair.
#[derive(Debug, Clone, Copy)]
pub struct Resolution<'a> {
    /// The resolver (`reviewer`), the chosen category and when.
    pub ann: &'a Annotation,
    /// The decisions it settled.
    pub resolves: &'a [Prior],
    /// Whether those decisions still stand, so the resolution holds.
    pub current: bool,
}

/// A pair's events: each reviewer's newest decision, its newest
/// resolution, and how they stand.
#[derive(Debug, Default, Clone)]
struct Pair {
    /// Each reviewer's newest decision, sorted by reviewer: the first in
    /// the pair itself (most pairs have one reviewer; at millions of
    /// decisions, a look-up that reads no second block of memory).
    decisions: SmallVec<[Entry; 1]>,
    resolution: Option<Box<Entry>>,
    /// With several reviewers, what the pair shows: the resolved category
    /// (none while they disagree), the newest note and the newest decider
    /// (or the resolver). `None` when that is the newest decision as it
    /// is (one reviewer; or reviewers who agree, the newest of whom wrote
    /// the newest note): no copy of it is kept.
    view: Option<Arc<Annotation>>,
    agreement: Option<Agreement>,
    /// The newest event's tick.
    newest: u64,
}

impl Pair {
    fn decision(&self, reviewer: &str) -> Option<&Entry> {
        self.decisions
            .binary_search_by(|e| e.ann.reviewer.as_str().cmp(reviewer))
            .ok()
            .map(|i| &self.decisions[i])
    }

    /// Put a reviewer's decision in its place; whether it replaced one.
    fn put_decision(&mut self, entry: Entry) -> bool {
        match self
            .decisions
            .binary_search_by(|e| e.ann.reviewer.cmp(&entry.ann.reviewer))
        {
            Ok(i) => {
                self.decisions[i] = entry;
                true
            }
            Err(i) => {
                // One slot at a time: a vector's first growth would hold four.
                self.decisions.reserve_exact(1);
                self.decisions.insert(i, entry);
                false
            }
        }
    }

    /// Put an event in its slot and work out what the pair shows; whether
    /// it replaced one.
    fn put(&mut self, entry: Entry, seq: u64) -> bool {
        let replaced = if entry.resolves.is_some() {
            self.resolution.replace(Box::new(entry)).is_some()
        } else {
            self.put_decision(entry)
        };
        self.newest = self.newest.max(seq);
        self.compute();
        replaced
    }

    /// The annotation the pair shows, if some reviewer decided it.
    fn shown(&self) -> Option<&Annotation> {
        self.shown_shared().map(|a| &**a)
    }

    /// [`Pair::shown`], as the store holds it.
    fn shown_shared(&self) -> Option<&Arc<Annotation>> {
        self.agreement?;
        match &self.view {
            Some(view) => Some(view),
            None => self.newest_decision().map(|e| &e.ann),
        }
    }

    /// The newest decision with a category or a note.
    fn newest_decision(&self) -> Option<&Entry> {
        self.decisions
            .iter()
            .filter(|e| !e.ann.is_empty())
            .max_by_key(|e| e.seq)
    }

    /// The (reviewer, category) of every decision that names a category, by reviewer.
    fn categories(&self) -> Vec<Prior> {
        self.decisions
            .iter()
            .filter(|e| e.ann.category.is_some())
            .map(|e| Prior {
                reviewer: e.ann.reviewer,
                category: e.ann.category,
            })
            .collect()
    }

    fn resolution_holds(&self) -> bool {
        let Some(r) = self
            .resolution
            .as_ref()
            .filter(|r| r.ann.category.is_some())
        else {
            return false;
        };
        let mut then: Vec<&Prior> = r
            .resolves
            .iter()
            .flatten()
            .filter(|p| p.category.is_some())
            .collect();
        then.sort_by_key(|a| a.reviewer);
        let now = self.decisions.iter().filter(|e| e.ann.category.is_some());
        then.len() == now.clone().count()
            && then
                .iter()
                .zip(now)
                .all(|(p, e)| p.reviewer == e.ann.reviewer && p.category == e.ann.category)
    }

    fn compute(&mut self) {
        self.view = None;
        let shown = || self.decisions.iter().filter(|e| !e.ann.is_empty());
        let Some(newest) = shown().max_by_key(|e| e.seq) else {
            self.agreement = None;
            return;
        };
        if shown().count() == 1 {
            self.agreement = Some(Agreement::Single);
            return;
        }
        let note = shown()
            .filter(|e| e.ann.note.is_some())
            .max_by_key(|e| e.seq)
            .and_then(|e| e.ann.note.clone());
        let mut categories: Vec<Name> = shown().filter_map(|e| e.ann.category).collect();
        categories.sort_unstable();
        categories.dedup();
        if categories.len() <= 1
            && categories.first().copied() == newest.ann.category
            && note == newest.ann.note
        {
            // The reviewers agree and the newest decision shows as it is:
            // no copy of it.
            self.agreement = Some(Agreement::Agreed);
            return;
        }
        let mut view = Annotation {
            note,
            ..Annotation::clone(&newest.ann)
        };
        let agreement = if categories.len() <= 1 {
            view.category = categories.first().copied();
            Agreement::Agreed
        } else if self.resolution_holds() {
            let r = &self.resolution.as_ref().expect("a resolution holds").ann;
            view.category = r.category;
            view.reviewer = r.reviewer;
            view.at = r.at;
            view.source = AnnotationSource::Manual;
            Agreement::Resolved
        } else {
            view.category = None;
            Agreement::Disagree
        };
        self.view = Some(Arc::new(view));
        self.agreement = Some(agreement);
    }

    fn slots(&self) -> impl Iterator<Item = &Entry> {
        self.decisions.iter().chain(self.resolution.as_deref())
    }
}

/// What a pair holds, every slot of it, to tell whether a merge changed it.
pub(super) type Snapshot = Vec<(Option<Name>, Option<Name>, Option<String>)>;

/// The newest event of every slot, and the look-ups the screen needs.
///
/// Cleared decisions keep their entry (an event with neither category nor
/// note): a compaction writes it back, so that the clear still wins over
/// an older event in another journal, and a journal put back from an
/// older copy can be told from one where the pair was cleared since.
#[derive(Debug, Default)]
struct Live {
    /// (Keys are digests: FxHash spreads them as well as SipHash, faster.)
    pairs: FxHashMap<RecordKey, Pair>,
    /// How many slots hold an event (one journal line each when compact).
    slots: usize,
    /// How many pairs have a shown annotation.
    shown: usize,
    /// The shown pairs by their ids, for stale look-ups without a scan.
    ids: IdIndex,
    /// Whether `ids` is left as it is while events are put, to be filed
    /// again whole afterwards ([`Live::putting`]).
    unfiled: bool,
    /// Bumped whenever an annotation is set or removed.
    revision: u64,
}

/// From how many clearing events at once [`Live::putting`] may file the
/// ids again whole rather than event by event.
const REFILE_MIN: usize = 50_000;

impl Live {
    /// Room for `additional` more pairs.
    fn reserve(&mut self, additional: usize) {
        self.pairs.reserve(additional);
    }

    fn put(
        &mut self,
        ann: Arc<Annotation>,
        prev: Option<Arc<Prev>>,
        resolves: Option<Vec<Prior>>,
        seq: u64,
    ) {
        self.insert(Entry {
            ann,
            prev,
            resolves,
            seq,
        });
    }

    /// Let `put` put events, `clears` of them clearing a decision. When
    /// those are many and at least half as many as the shown pairs (the
    /// undo of accepting every suggestion), the id index is not kept up
    /// event by event, a look-up at random in tables of millions each, but
    /// filed again whole afterwards in one sweep of the pairs
    /// ([`Live::refile`]), which then show few annotations. (Filing a pair
    /// reads its ids: at once while its event is at hand, and at random
    /// in a sweep; so a step that shows annotations files them as it goes.)
    fn putting<R>(&mut self, clears: usize, put: impl FnOnce(&mut Live) -> R) -> R {
        let held = self.hold_filing(clears);
        let done = put(self);
        self.resume_filing(held);
        done
    }

    /// Before putting events that clear `clears` decisions, as
    /// [`Live::putting`] does: whether the id index is left alone until
    /// [`Live::resume_filing`].
    fn hold_filing(&mut self, clears: usize) -> bool {
        let hold = !self.unfiled && clears >= REFILE_MIN && clears >= self.shown / 2;
        self.unfiled |= hold;
        hold
    }

    /// After the events [`Live::hold_filing`] was told of: the id index
    /// filed again whole if it was held.
    fn resume_filing(&mut self, held: bool) {
        if held {
            self.unfiled = false;
            self.refile();
        }
    }

    /// File every shown pair under its ids afresh.
    fn refile(&mut self) {
        self.ids.clear();
        self.ids.reserve(self.shown);
        for (key, pair) in &self.pairs {
            if let Some(a) = pair.shown() {
                self.ids.insert(*key, &a.case_id, &a.variant_id);
            }
        }
    }

    fn insert(&mut self, entry: Entry) {
        self.revision += 1;
        let key = entry.ann.key;
        let seq = entry.seq;
        let pair = self.pairs.entry(key).or_default();
        // (Shared, not copied: the ids are only compared and looked up;
        // while the index is held, only how many pairs show one counts.)
        let had = pair.shown_shared().is_some();
        let old = match self.unfiled {
            true => None,
            false => pair.shown_shared().cloned(),
        };
        if !pair.put(entry, seq) {
            self.slots += 1;
        }
        if self.unfiled {
            let has = pair.shown_shared().is_some();
            self.shown = self.shown + usize::from(has) - usize::from(had);
            return;
        }
        let new = pair.shown_shared().cloned();
        fn ids(a: &Arc<Annotation>) -> (&str, &str) {
            (&a.case_id, &a.variant_id)
        }
        if old.as_ref().map(ids) == new.as_ref().map(ids) {
            return;
        }
        if let Some(old) = old {
            self.shown -= 1;
            self.ids.remove(key, &old.case_id, &old.variant_id);
        }
        if let Some(new) = new {
            self.shown += 1;
            self.ids.insert(key, &new.case_id, &new.variant_id);
        }
    }

    fn clear(&mut self) {
        self.pairs.clear();
        self.ids.clear();
        self.shown = 0;
        self.slots = 0;
        self.revision += 1;
    }

    /// The shown pairs with these ids, by key.
    fn with_ids<'a, 's>(
        &'a self,
        case_id: &'s str,
        variant_id: &'s str,
    ) -> impl Iterator<Item = (&'a RecordKey, &'a Pair)> + use<'a, 's> {
        self.ids
            .candidates(case_id, variant_id)
            .iter()
            .filter_map(|k| Some((k, self.pairs.get(k)?)))
            .filter(move |(_, p)| {
                p.shown()
                    .is_some_and(|a| &*a.case_id == case_id && &*a.variant_id == variant_id)
            })
    }

    /// The annotation the pair shows.
    fn get(&self, key: &RecordKey) -> Option<&Annotation> {
        self.pairs.get(key).and_then(Pair::shown)
    }

    /// The newest event of a slot, cleared ones included.
    fn slot(&self, slot: &Slot) -> Option<&Entry> {
        let pair = self.pairs.get(&slot.0)?;
        match &slot.1 {
            Some(reviewer) => pair.decision(reviewer),
            None => pair.resolution.as_deref(),
        }
    }

    /// Every slot's newest event.
    fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.pairs.values().flat_map(Pair::slots)
    }

    /// What a pair holds, every slot of it.
    fn snapshot(&self, key: &RecordKey) -> Option<Snapshot> {
        let pair = self.pairs.get(key)?;
        let snap: Snapshot = pair
            .slots()
            .filter(|e| !e.ann.is_empty())
            .map(|e| {
                let who = e.slot().1;
                (who, e.ann.category, e.ann.note.clone())
            })
            .collect();
        (!snap.is_empty()).then_some(snap)
    }

    /// Every pair's snapshot.
    fn values(&self) -> FxHashMap<RecordKey, Snapshot> {
        self.pairs
            .keys()
            .filter_map(|k| Some((*k, self.snapshot(k)?)))
            .collect()
    }
}

/// One journal for [`AnnotationStore::open_journals`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalSpec {
    pub path: PathBuf,
    /// Which run files' pairs it keeps (indices into the run's files);
    /// `None`: every file's.
    pub files: Option<Vec<u16>>,
    /// Whether decisions are written to it; a read-only one (the journal
    /// committed beside a run whose folder is not writable) is only read.
    pub writable: bool,
}

/// What a guarded save found: the pairs whose annotation is no longer
/// what the caller expected, because another triage changed them since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub key: RecordKey,
    pub case_id: String,
    pub variant_id: String,
    /// The annotation the pair holds now (`None`: it has none).
    pub now: Option<Annotation>,
}

/// The outcome of [`AnnotationStore::save`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    /// Written; the previous annotation of each change's pair (shared
    /// with the store's record of it, not copied).
    Done(Vec<Option<Arc<Annotation>>>),
    /// Nothing was written: these pairs changed since.
    Conflict(Vec<Conflict>),
}

impl Saved {
    /// The previous annotations of a save made without expectations, which
    /// has nothing to conflict with.
    fn unguarded(self) -> Vec<Option<Arc<Annotation>>> {
        match self {
            Saved::Done(previous) => previous,
            Saved::Conflict(_) => unreachable!("a save without expectations has no conflict"),
        }
    }
}

/// A journal line that could not be read, for the problems panel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableLine {
    pub journal: PathBuf,
    /// Its number in the journal as it was read.
    pub line: u64,
    pub reason: String,
    /// Where it was moved when the journal was compacted; `None`: still in the journal.
    pub moved_to: Option<PathBuf>,
}

/// Where the decisions that could not be saved went at exit.
#[derive(Debug)]
pub enum Recovery {
    /// Written to this file beside the journal, in the journal's format.
    File {
        journal: PathBuf,
        file: PathBuf,
        count: usize,
    },
    /// The recovery file could not be written either: the events, as journal lines.
    Lines {
        journal: PathBuf,
        error: io::Error,
        lines: Vec<String>,
    },
}

impl fmt::Display for Recovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Recovery::File {
                journal,
                file,
                count,
            } => write!(
                f,
                "{} could not be saved to {}; {} written to {} — append it to the journal once it can be written: cat '{}' >> '{}'",
                super::text::plural(*count as u64, "decision", "decisions"),
                journal.display(),
                if *count == 1 { "it is" } else { "they are" },
                file.display(),
                file.display(),
                journal.display()
            ),
            Recovery::Lines {
                journal,
                error,
                lines,
            } => write!(
                f,
                "{} could not be saved to {}, nor to a recovery file beside it ({error}); {} below as JSON lines — append them to the journal once it can be written",
                super::text::plural(lines.len() as u64, "decision", "decisions"),
                journal.display(),
                if lines.len() == 1 {
                    "it follows"
                } else {
                    "they follow"
                },
            ),
        }
    }
}

/// The annotations of a run, backed by its journals.
///
/// Usually one journal; `triage a.jsonl b.jsonl` keeps one per run, and a
/// run in a read-only folder adds the journal committed beside it (read
/// only) under the fallback one. Reads see the union, the newest event of
/// each slot (a reviewer's decision on a pair, a pair's resolution)
/// winning; each decision goes to the writable journal of its
/// pair's run ([`AnnotationStore::save`]).
///
/// Concurrency: any number of stores (in one process or several) may share a
/// journal. Each append and each compaction takes an exclusive advisory lock
/// (`File::lock`, i.e. `flock` on Unix) on `<journal>.lock`, first reads the
/// events the others appended since this store last read (or the whole journal
/// again if another store compacted it, i.e. replaced the file), then writes and
/// fsyncs, then releases the lock. So the journal order is the order in which
/// the decisions were made durable, and the last event of a slot wins in
/// every store. [`AnnotationStore::refresh`] merges the others' events while idle.
/// The lock file is left in place on purpose, since deleting it would let two
/// instances lock two different files.
#[derive(Debug)]
pub struct AnnotationStore {
    journals: Vec<Journal>,
    reviewer: String,
    /// The union of several journals (`None` with one: its own is used).
    union: Option<Live>,
    /// The sum of the journals' revisions the union was built at.
    union_at: u64,
    /// Blind review ([`AnnotationStore::set_blind`]): on a pair this
    /// store's reviewer has not decided, the read accessors show nothing.
    blind: bool,
}

impl AnnotationStore {
    fn from_journals(journals: Vec<Journal>, reviewer: &str) -> AnnotationStore {
        let mut store = AnnotationStore {
            journals,
            reviewer: reviewer.to_string(),
            union: None,
            union_at: u64::MAX,
            blind: false,
        };
        store.sync_union();
        store
    }

    /// Open the journal at `path` for writing, replay it and compact it.
    ///
    /// A journal that does not exist is created (with its lock file) by the
    /// first save, not here, so opening a run to look at it writes nothing.
    /// Replay and compaction run under the journal's lock, so another triage
    /// writing at the same moment is waited for, and its events are kept.
    /// Malformed lines (a torn last line after a crash, a bad key, bad JSON,
    /// a merge conflict marker) are never dropped: the compaction moves them
    /// to `<journal>.unreadable`, and [`AnnotationStore::unreadable`] lists
    /// them. Lines from a newer format are skipped too but disable
    /// compaction so they are never moved or destroyed. A folder where the
    /// journal cannot be created gives [`StoreOpenError::NotWritable`]; a
    /// filesystem without file locks gives a read-only store, since unlocked
    /// writers could lose decisions.
    pub fn open(path: &Path, reviewer: &str) -> Result<AnnotationStore, StoreOpenError> {
        let journal = Journal::open(path, None)?;
        Ok(AnnotationStore::from_journals(vec![journal], reviewer))
    }

    /// Open a journal read-only without locking (for exports and `triage apply`).
    pub fn read(path: &Path) -> Result<AnnotationStore, StoreOpenError> {
        let journal = Journal::read(path, None, READ_ONLY)?;
        Ok(AnnotationStore::from_journals(vec![journal], ""))
    }

    /// Open several journals as one store, in order (of two events for one
    /// pair, the one in the later journal wins when both were there at the
    /// start). A read-only journal that does not exist is left out; `None`
    /// when no journal is left (nothing to write to, nothing annotated).
    pub fn open_journals(
        specs: &[JournalSpec],
        reviewer: &str,
    ) -> Result<Option<AnnotationStore>, StoreOpenError> {
        let mut journals = Vec::new();
        for spec in specs {
            let journal = if spec.writable {
                Journal::open(&spec.path, spec.files.clone())?
            } else {
                match Journal::read(&spec.path, spec.files.clone(), COMMITTED) {
                    Ok(j) => j,
                    Err(StoreOpenError::NotFound { .. }) => continue,
                    Err(e) => return Err(e),
                }
            };
            journals.push(journal);
        }
        if journals.is_empty() {
            return Ok(None);
        }
        Ok(Some(AnnotationStore::from_journals(journals, reviewer)))
    }

    /// The journal decisions are written to (the first writable one), else the first.
    fn primary(&self) -> &Journal {
        self.journals
            .iter()
            .find(|j| j.writable())
            .unwrap_or(&self.journals[0])
    }

    /// The journal's path (of the first writable journal, when there are several).
    pub fn path(&self) -> &Path {
        &self.primary().path
    }

    /// Every journal's path, with whether it is written to.
    pub fn journals(&self) -> Vec<(&Path, bool)> {
        self.journals
            .iter()
            .map(|j| (j.path.as_path(), j.writable()))
            .collect()
    }

    /// Whether this store writes its journal.
    pub fn access(&self) -> &Access {
        &self.primary().access
    }

    /// The reviewer recorded on new events.
    pub fn reviewer(&self) -> &str {
        &self.reviewer
    }

    fn live(&self) -> &Live {
        self.union.as_ref().unwrap_or(&self.journals[0].live)
    }

    /// Build the union again if a journal changed.
    fn sync_union(&mut self) {
        if self.journals.len() < 2 {
            self.union = None;
            return;
        }
        let at: u64 = self.journals.iter().map(|j| j.live.revision).sum();
        if at == self.union_at && self.union.is_some() {
            return;
        }
        let mut newest: HashMap<Slot, &Entry> = HashMap::new();
        for j in &self.journals {
            for e in j.live.entries() {
                let slot = e.slot();
                match newest.get(&slot) {
                    Some(old) if old.seq >= e.seq => {}
                    _ => {
                        newest.insert(slot, e);
                    }
                }
            }
        }
        let mut union = Live::default();
        for e in newest.into_values() {
            union.insert(e.clone());
        }
        self.union = Some(union);
        self.union_at = at;
    }

    /// The annotation the pair with this key shows, if some reviewer gave
    /// it a category or a note: with one reviewer, their decision; with
    /// several, the resolved category ([`AnnotationStore::agreement`]; none
    /// while they disagree), the newest note, and the newest decider (or
    /// the resolver).
    ///
    /// In blind review, nothing on a pair this reviewer has not decided.
    pub fn get(&self, key: &RecordKey) -> Option<&Annotation> {
        if self.hides(key) {
            return None;
        }
        self.live().get(key)
    }

    /// Blind review: from now on, on every pair this store's reviewer has
    /// not decided, [`AnnotationStore::get`], [`AnnotationStore::decisions`],
    /// [`AnnotationStore::agreement`], [`AnnotationStore::resolution`],
    /// [`AnnotationStore::stale_for`] and [`AnnotationStore::all`] show
    /// nothing, as if nobody had decided it; so every view, count, query and
    /// export built on them shows only what this reviewer may see. Their own
    /// decisions ([`AnnotationStore::mine`]) and what is written are as always.
    pub fn set_blind(&mut self, blind: bool) {
        self.blind = blind;
    }

    /// Whether this store is in blind review.
    pub fn blind(&self) -> bool {
        self.blind
    }

    /// Whether blind review hides the pair: this reviewer has not decided it.
    pub fn hides(&self, key: &RecordKey) -> bool {
        self.blind && self.mine(key).is_none()
    }

    /// How many decisions (a category or a note) blind review hides on the
    /// pair: the other reviewers', until this reviewer decides it; 0 when
    /// it hides nothing.
    pub fn hidden_decisions(&self, key: &RecordKey) -> usize {
        if !self.hides(key) {
            return 0;
        }
        self.live().pairs.get(key).map_or(0, |p| {
            p.decisions.iter().filter(|e| !e.ann.is_empty()).count()
        })
    }

    /// This store's reviewer's own decision on the pair, if it has a category or a note.
    pub fn mine(&self, key: &RecordKey) -> Option<&Annotation> {
        self.decision_of(key, &self.reviewer)
    }

    /// One reviewer's decision on the pair, if it has a category or a note.
    /// In blind review, another reviewer's decision on a pair this
    /// reviewer has not decided is hidden.
    pub fn decision_of(&self, key: &RecordKey, reviewer: &str) -> Option<&Annotation> {
        if reviewer != self.reviewer && self.hides(key) {
            return None;
        }
        self.decision_shared(key, reviewer).map(|a| &**a)
    }

    /// [`AnnotationStore::decision_of`] as the store holds it (shared),
    /// blind review aside.
    fn decision_shared(&self, key: &RecordKey, reviewer: &str) -> Option<&Arc<Annotation>> {
        self.live()
            .pairs
            .get(key)?
            .decision(reviewer)
            .map(|e| &e.ann)
            .filter(|a| !a.is_empty())
    }

    /// Every reviewer's decision on the pair (those with a category or a note), by reviewer.
    pub fn decisions(&self, key: &RecordKey) -> Vec<&Annotation> {
        if self.hides(key) {
            return Vec::new();
        }
        self.live().pairs.get(key).map_or_else(Vec::new, |p| {
            p.decisions
                .iter()
                .map(|e| &*e.ann)
                .filter(|a| !a.is_empty())
                .collect()
        })
    }

    /// How the pair's reviewers stand; `None` when nobody decided it.
    pub fn agreement(&self, key: &RecordKey) -> Option<Agreement> {
        if self.hides(key) {
            return None;
        }
        self.live().pairs.get(key)?.agreement
    }

    /// The newest resolution recorded on the pair, and whether it holds.
    pub fn resolution(&self, key: &RecordKey) -> Option<Resolution<'_>> {
        if self.hides(key) {
            return None;
        }
        let pair = self.live().pairs.get(key)?;
        // A withdrawn resolution (an undone one) is no resolution.
        let r = pair
            .resolution
            .as_ref()
            .filter(|r| r.ann.category.is_some())?;
        Some(Resolution {
            ann: &r.ann,
            resolves: r.resolves.as_deref().unwrap_or(&[]),
            current: pair.resolution_holds(),
        })
    }

    /// Every reviewer who gave some pair a category, sorted.
    pub fn reviewers(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .live()
            .pairs
            .values()
            .flat_map(|p| p.decisions.iter())
            .filter(|e| e.ann.category.is_some())
            .map(|e| e.ann.reviewer.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Record resolutions: each pair's reviewers disagree, and this
    /// store's reviewer settles them on a category. Each is an event of
    /// its own naming the resolver and the decisions it settles; the
    /// reviewers' own decisions stay as they are. Durable before `Ok`,
    /// as [`AnnotationStore::apply`].
    pub fn resolve(&mut self, resolutions: Vec<Change>) -> Result<(), SaveError> {
        let kinds = resolutions.iter().map(|_| Kind::Resolution(None)).collect();
        self.save_events(resolutions.into(), Some(kinds), None, &|_| Vec::new(), None)
            .map(|saved| drop(saved.unguarded()))
    }

    /// Record resolutions, each settling the decisions it names, or
    /// withdraw them (a change with no category), as one durable step;
    /// optionally only if every pair's resolution is still the one in
    /// `expect` (an undo or a redo must not wipe a resolution recorded
    /// since, by this triage or another). Under the journals' locks, as
    /// [`AnnotationStore::save`]; on a difference nothing is written and
    /// [`Saved::Conflict`] names the pairs (`now`: the resolution they hold).
    pub fn save_resolutions(
        &mut self,
        resolutions: Vec<ResolutionChange>,
        files: &dyn Fn(&RecordKey) -> Vec<u16>,
        expect: Option<&[ResolutionChange]>,
    ) -> Result<Saved, SaveError> {
        let (changes, kinds): (Vec<Change>, Vec<Kind>) = resolutions
            .into_iter()
            .map(|r| (r.change, Kind::Resolution(Some(r.resolves))))
            .unzip();
        self.save_events(
            changes.into(),
            Some(kinds),
            None,
            files,
            expect.map(Expect::Resolutions),
        )
    }

    /// The decisions a resolution of the pair would settle now: every
    /// decision that names a category, by reviewer.
    pub fn priors(&self, key: &RecordKey) -> Vec<Prior> {
        self.live()
            .pairs
            .get(key)
            .map(Pair::categories)
            .unwrap_or_default()
    }

    /// The pair's resolution as a [`ResolutionChange`] that would record
    /// it again; with no category when it has none (or it was withdrawn).
    pub fn resolution_change(
        &self,
        key: &RecordKey,
        case_id: &str,
        variant_id: &str,
    ) -> ResolutionChange {
        let current = self
            .live()
            .pairs
            .get(key)
            .and_then(|p| p.resolution.as_deref())
            .filter(|r| r.ann.category.is_some());
        ResolutionChange {
            change: Change {
                key: *key,
                case_id: case_id.into(),
                variant_id: variant_id.into(),
                category: current.and_then(|r| r.ann.category),
                note: None,
                source: AnnotationSource::Manual,
            },
            resolves: current.and_then(|r| r.resolves.clone()).unwrap_or_default(),
        }
    }

    /// A number that changes whenever an annotation is set or removed, by
    /// this triage or another one: a reader of [`AnnotationStore::names`]
    /// compares it to know when to look again.
    pub fn revision(&self) -> u64 {
        self.journals.iter().map(|j| j.live.revision).sum()
    }

    /// Whether some annotation (current or stale) is on a pair with these ids.
    pub fn names(&self, case_id: &str, variant_id: &str) -> bool {
        self.live().with_ids(case_id, variant_id).next().is_some()
    }

    /// Whether some annotation may be on a pair with this case id: never
    /// false when one is, seldom true when none is (a filter before
    /// [`AnnotationStore::names`]).
    pub fn may_name_case(&self, case_id: &str) -> bool {
        self.live().ids.may_name_case(case_id)
    }

    /// Whether some annotation may be on a pair with this variant id, as
    /// [`AnnotationStore::may_name_case`].
    pub fn may_name_variant(&self, variant_id: &str) -> bool {
        self.live().ids.may_name_variant(variant_id)
    }

    /// Whether the store holds no annotation.
    pub fn is_empty(&self) -> bool {
        self.live().shown == 0
    }

    /// The newest annotation of a pair with these ids but another key (a stale one).
    pub fn stale_for(
        &self,
        case_id: &str,
        variant_id: &str,
        current: &RecordKey,
    ) -> Option<&Annotation> {
        if self.hides(current) {
            return None;
        }
        self.live()
            .with_ids(case_id, variant_id)
            .filter(|(k, _)| *k != current)
            .map(|(_, p)| p)
            .max_by_key(|p| p.newest)
            .and_then(Pair::shown)
    }

    /// All annotations (non-empty ones), sorted by (case_id, variant_id, key).
    pub fn all(&self) -> Vec<&Annotation> {
        let mut v: Vec<&Annotation> = self
            .live()
            .pairs
            .values()
            .filter_map(Pair::shown)
            .filter(|a| !self.hides(&a.key))
            .collect();
        v.sort_by(|a, b| {
            (&a.case_id, &a.variant_id, a.key).cmp(&(&b.case_id, &b.variant_id, b.key))
        });
        v
    }

    /// Annotations whose key is not in `present` and whose ids are not in `present_ids` either.
    pub fn orphans(
        &self,
        present: &HashSet<RecordKey>,
        present_ids: &HashSet<(&str, &str)>,
    ) -> Vec<&Annotation> {
        self.all()
            .into_iter()
            .filter(|a| {
                !present.contains(&a.key) && !present_ids.contains(&(&*a.case_id, &*a.variant_id))
            })
            .collect()
    }

    /// Apply several changes as one durable step and return the previous annotations (for undo).
    ///
    /// Every event is appended and the journal fsynced once before `Ok`. The
    /// changes take effect in memory either way: on an I/O error (disk full,
    /// read-only file) or in a read-only store the events stay pending, to be
    /// written by [`AnnotationStore::retry_pending`], and the error says so.
    /// With several journals, each change goes to the journal that already
    /// holds its pair, else to the first writable one; [`AnnotationStore::save`]
    /// routes by run file.
    pub fn apply(
        &mut self,
        changes: Vec<Change>,
    ) -> Result<Vec<Option<Arc<Annotation>>>, SaveError> {
        self.save(changes, &|_| Vec::new(), None)
            .map(Saved::unguarded)
    }

    /// Apply changes as one durable step, each to the journal of its pair's
    /// run (`files` names the run files a key's pair is in), optionally
    /// only if every pair still holds the state in `expect` (an undo: it
    /// must not wipe what another triage decided since).
    ///
    /// Under the journals' locks, the events other triages appended are read
    /// first; then, with `expect`, every pair is compared with it and on any
    /// difference nothing is written and [`Saved::Conflict`] names the pairs.
    /// Otherwise as [`AnnotationStore::apply`].
    ///
    /// The changes may be lent (`&[Change]`): a step the caller keeps (for
    /// undo) is then not copied whole to be saved, only each change as its
    /// event is built.
    pub fn save<'c>(
        &mut self,
        changes: impl Into<Cow<'c, [Change]>>,
        files: &dyn Fn(&RecordKey) -> Vec<u16>,
        expect: Option<&[Change]>,
    ) -> Result<Saved, SaveError> {
        self.save_events(
            changes.into(),
            None,
            None,
            files,
            expect.map(Expect::Decisions),
        )
    }

    /// Put the changes of a large step (from [`PREPARE_PAR_MIN`] on) in
    /// the order their pairs sit in the store's table, and say where the
    /// change that came first now is; a smaller step is left as it is (0).
    ///
    /// A step of millions of decisions looks every pair up several times
    /// over, to save it and again to undo it: what each replaces, the
    /// check that each still holds the step, the event put in the pairs'
    /// table and in this triage's own. Beyond the CPU's caches, a look-up
    /// in the view's order waits for memory at random each time; in the
    /// table's order the next one is already on its way. Only the order
    /// of the journal's lines changes: changes on one pair keep their
    /// order among themselves, so the step decides the same.
    pub fn order_for_lookups(&self, changes: &mut Vec<Change>) -> usize {
        if changes.len() < PREPARE_PAR_MIN {
            return 0;
        }
        let pairs = &self.live().pairs;
        // The table's buckets once the step is in (a hash table is at most
        // 7/8 full); a guess one size too large walks the table in two
        // sweeps, one too small jumps about within neighbouring buckets.
        let room = pairs.capacity().max(pairs.len() + changes.len());
        let buckets = (room.saturating_mul(8) / 7).next_power_of_two();
        let mask = u64::try_from(buckets - 1).unwrap_or(u64::MAX);
        let hasher = pairs.hasher();
        // (A hash table finds a key's bucket from the low bits of its hash;
        // with the change's place after it, equal buckets keep their order.)
        let mut order: Vec<(u64, usize)> = changes
            .par_iter()
            .enumerate()
            .map(|(i, c)| (std::hash::BuildHasher::hash_one(hasher, c.key) & mask, i))
            .collect();
        order.par_sort_unstable();
        // Each change made again in its new place, its ids copied afresh
        // while the old ones still stand: every pass over the step reads
        // them (to write its events, to file them), and in the old order
        // each would be a read at random. (Dropped one by one as they are
        // copied, a copy would take the place the old one left.)
        let ordered: Vec<Change> = order
            .par_iter()
            .with_min_len(1 << 14)
            .map(|&(_, i)| {
                let c = &changes[i];
                Change {
                    key: c.key,
                    case_id: Id::from(&*c.case_id),
                    variant_id: Id::from(&*c.variant_id),
                    category: c.category,
                    note: c.note.clone(),
                    source: c.source,
                }
            })
            .collect();
        *changes = ordered;
        order.iter().position(|&(_, i)| i == 0).unwrap_or(0)
    }

    /// Write decisions carried forward from an earlier run, each with its
    /// [`Provenance`], as one durable step through the same locked,
    /// fsynced append as [`AnnotationStore::apply`] (the reviewer and time
    /// of each event are this store's and now; the provenance keeps the
    /// original ones). Returns the previous annotations.
    pub fn carry(
        &mut self,
        carried: Vec<(Change, Provenance)>,
        files: &dyn Fn(&RecordKey) -> Vec<u16>,
    ) -> Result<Vec<Option<Arc<Annotation>>>, SaveError> {
        let (changes, origins): (Vec<Change>, Vec<Provenance>) = carried.into_iter().unzip();
        self.save_events(changes.into(), None, Some(origins), files, None)
            .map(Saved::unguarded)
    }

    /// [`AnnotationStore::save`] of changes: each of the kind `kinds` gives
    /// it (every one a decision without them), with where it was carried
    /// from (a decision carried forward from an earlier run) when
    /// `origins` gives it. (No list beside the changes for the usual case:
    /// at millions of decisions such a list is hundreds of megabytes of
    /// memory the kernel must map, for nothing.)
    fn save_events(
        &mut self,
        changes: Cow<'_, [Change]>,
        kinds: Option<Vec<Kind>>,
        origins: Option<Vec<Provenance>>,
        files: &dyn Fn(&RecordKey) -> Vec<u16>,
        expect: Option<Expect>,
    ) -> Result<Saved, SaveError> {
        // Each change's journals; with one journal, every change goes to
        // it and no list is kept.
        let targets: Option<Vec<Vec<usize>>> = (self.journals.len() > 1)
            .then(|| changes.iter().map(|c| self.route(c, files)).collect());
        let to = |i: usize| -> &[usize] {
            match &targets {
                Some(t) => &t[i],
                None => &[0],
            }
        };
        let mut involved: Vec<usize> = match &targets {
            Some(t) => t.iter().flatten().copied().collect(),
            None if changes.is_empty() => Vec::new(),
            None => vec![0],
        };
        involved.sort_unstable();
        involved.dedup();
        // Take every lock first (in journal order, so two savers cannot
        // deadlock), then read what the others wrote.
        let mut held: Vec<File> = Vec::new();
        let mut failed: Option<(usize, io::Error)> = None;
        for &j in &involved {
            let journal = &mut self.journals[j];
            if !journal.writable() {
                continue;
            }
            let handle = journal
                .ensure_created()
                .and_then(|()| match journal.lock_handle() {
                    Some(h) => h,
                    None => Err(io::Error::other("the journal has no lock")),
                });
            match handle.and_then(|h| lock_within(&h, LOCK_WAIT).map(|()| h)) {
                Ok(h) => held.push(h),
                Err(e) => {
                    failed = Some((j, e));
                    break;
                }
            }
        }
        // Per journal, the pairs whose annotation others changed since it was last read.
        let mut arrived: Vec<(usize, FxHashSet<RecordKey>)> = Vec::new();
        if failed.is_none() {
            for &j in &involved {
                if !self.journals[j].writable() {
                    continue;
                }
                match self.journals[j].catch_up() {
                    Ok(keys) => arrived.push((j, keys)),
                    Err(e) => {
                        failed = Some((j, e));
                        break;
                    }
                }
            }
        }
        self.sync_union();
        // This reviewer's decision on each pair of a guarded step as it
        // stands, when the step's changes are on the same pairs in the same
        // order (an undo, a redo): looked up once, for the check and for
        // what each event replaces.
        let mut now: Option<Vec<Option<Arc<Annotation>>>> = None;
        if let Some(expect) = expect {
            let conflicts = match expect {
                Expect::Decisions(e) => {
                    let (conflicts, found) = self.conflicts(e);
                    let aligned = e.len() == changes.len()
                        && e.par_iter()
                            .zip(changes.par_iter())
                            .all(|(e, c)| e.key == c.key);
                    now = aligned.then_some(found);
                    conflicts
                }
                Expect::Resolutions(e) => self.resolution_conflicts(e),
            };
            if !conflicts.is_empty() {
                unlock_all(&held);
                return Ok(Saved::Conflict(conflicts));
            }
        }
        let at = Name::new(&now_rfc3339());
        let nonce = fresh_nonces();
        let mut previous = Vec::new();
        // Which pairs this save writes, per journal: only needed when
        // others' decisions arrived.
        let count_staged = arrived.iter().any(|(_, keys)| !keys.is_empty());
        let mut staged: HashMap<usize, FxHashSet<RecordKey>> = HashMap::new();
        // Plain decisions, each on its own pair (accepting every
        // suggestion, an undo): built on every core, and applied while
        // they are written.
        let bulk = kinds.is_none()
            && origins.is_none()
            && changes.len() >= PREPARE_PAR_MIN
            && distinct_pairs(&changes);
        // Of those, the ones all bound for one journal are built straight
        // into its queue.
        let straight = bulk && targets.is_none();
        if !straight {
            previous.reserve(changes.len());
            for &j in &involved {
                self.journals[j].pending.reserve(changes.len());
            }
        } else if count_staged {
            staged.insert(0, changes.iter().map(|c| c.key).collect());
        }
        let reviewer = Name::new(&self.reviewer);
        // A change's event, read off the store as it stands: the event,
        // what it replaces (as its `prev`, for a decision), what it settles
        // (a resolution) and the annotation it replaces.
        // (`known`: the pair's decision by this reviewer, already looked up;
        // `prevs`: what the events replaced so far, to share.)
        let prepare = |this: &Self,
                       c: Change,
                       kind: Kind,
                       carried_from: Option<Provenance>,
                       known: Option<Option<Arc<Annotation>>>,
                       prevs: &mut Prevs|
         -> Prepared {
            let resolution = matches!(kind, Kind::Resolution(_));
            let resolves = match kind {
                Kind::Decision => None,
                // A withdrawal settles nothing.
                Kind::Resolution(_) if non_empty(c.category).is_none() => Some(Vec::new()),
                Kind::Resolution(Some(given)) => Some(given),
                Kind::Resolution(None) => Some(this.priors(&c.key)),
            };
            let old = match resolution {
                true => this
                    .live()
                    .pairs
                    .get(&c.key)
                    .and_then(|p| p.resolution.as_ref())
                    .map(|r| r.ann.clone()),
                false => match known {
                    Some(known) => known,
                    None => this.decision_shared(&c.key, &reviewer).cloned(),
                },
            };
            let prev = old.as_ref().filter(|_| !resolution).map(|a| match &a.note {
                // Without a note, one per category: an undo of a million
                // decisions replaces a handful of categories.
                None => prevs
                    .entry(a.category)
                    .or_insert_with(|| {
                        Arc::new(Prev {
                            category: a.category,
                            note: None,
                        })
                    })
                    .clone(),
                Some(note) => Arc::new(Prev {
                    category: a.category,
                    note: Some(note.clone()),
                }),
            });
            let ann = Arc::new(Annotation {
                key: c.key,
                case_id: c.case_id,
                variant_id: c.variant_id,
                category: non_empty(c.category),
                note: non_empty(c.note),
                reviewer,
                at,
                source: c.source,
                carried_from: carried_from.map(Box::new),
                nonce: nonce(),
            });
            (ann, prev, resolves, old)
        };
        // The event staged in each of its journals (`bulk`: a decision on
        // a pair no other change of the step touches, queued to be applied
        // while it is written).
        let mut stage = |journals: &mut [Journal],
                         i: usize,
                         bulk: bool,
                         ann: Arc<Annotation>,
                         prev: Option<Arc<Prev>>,
                         resolves: Option<Vec<Prior>>| {
            let to = to(i);
            if count_staged {
                for &j in to {
                    staged.entry(j).or_default().insert(ann.key);
                }
            }
            let put = |journal: &mut Journal, ann, prev, resolves| match bulk {
                true => journal.queue(ann, prev),
                false => journal.stage(ann, prev, resolves),
            };
            if let Some((&last, others)) = to.split_last() {
                for &j in others {
                    put(
                        &mut journals[j],
                        ann.clone(),
                        prev.clone(),
                        resolves.clone(),
                    );
                }
                put(&mut journals[last], ann, prev, resolves);
            }
        };
        if bulk {
            // What each replaces is looked up (or taken from the undo's
            // check), and its event built, on every core. At millions of
            // decisions these look-ups miss the CPU's caches, and wait for
            // memory side by side instead of one after another.
            let this = &*self;
            let one = |prevs: &mut Prevs, (c, known)| {
                prepare(this, c, Kind::Decision, None, known, prevs)
            };
            let known = |i: usize| now.as_ref().map(|now| now[i].clone());
            let events = match changes {
                Cow::Owned(changes) => Either::Left(
                    changes
                        .into_par_iter()
                        .enumerate()
                        .map(|(i, c)| (c, known(i))),
                ),
                Cow::Borrowed(changes) => Either::Right(
                    changes
                        .par_iter()
                        .enumerate()
                        .map(|(i, c)| (c.clone(), known(i))),
                ),
            }
            .map_init(Prevs::default, one);
            // Room for the pairs decided for the first time, made once: a
            // table grown by doubling touches twice the memory, and at
            // millions of pairs every fresh page costs.
            if straight {
                // (No list of them between: at millions of decisions, a
                // list is hundreds of megabytes of fresh memory.)
                let queued: Vec<PendingEvent>;
                (queued, previous) = events
                    .map(|(ann, prev, _, old)| (PendingEvent::new(ann, prev, None), old))
                    .unzip();
                let journal = &mut self.journals[0];
                journal.reserve(previous.iter().filter(|old| old.is_none()).count());
                journal.queue_all(queued);
            } else {
                let events: Vec<Prepared> = events.collect();
                let first = events.iter().filter(|e| e.3.is_none()).count();
                for &j in &involved {
                    self.journals[j].reserve(first);
                }
                for (i, (ann, prev, resolves, old)) in events.into_iter().enumerate() {
                    stage(&mut self.journals, i, true, ann, prev, resolves);
                    previous.push(old);
                }
            }
        } else {
            let mut kinds = kinds.map(Vec::into_iter);
            let mut origins = origins.map(Vec::into_iter);
            let changes: Box<dyn Iterator<Item = Change>> = match changes {
                Cow::Owned(changes) => Box::new(changes.into_iter()),
                Cow::Borrowed(changes) => Box::new(changes.iter().cloned()),
            };
            let mut prevs = Prevs::default();
            // One at a time: a pair changed twice in the step replaces its first change.
            for (i, c) in changes.enumerate() {
                let kind = kinds
                    .as_mut()
                    .and_then(Iterator::next)
                    .unwrap_or(Kind::Decision);
                let carried_from = origins.as_mut().and_then(Iterator::next);
                let (ann, prev, resolves, old) =
                    prepare(self, c, kind, carried_from, None, &mut prevs);
                stage(&mut self.journals, i, false, ann, prev, resolves);
                previous.push(old);
            }
        }
        // Another triage's decision that this save replaces at once is
        // nothing the reviewer needs to hear about.
        for (j, keys) in arrived {
            let replaced = staged
                .get(&j)
                .map_or(0, |mine| keys.intersection(mine).count());
            let journal = &mut self.journals[j];
            journal.merged = journal.merged.saturating_sub(replaced);
        }
        let mut error = failed;
        if error.is_none() {
            for &j in &involved {
                let journal = &mut self.journals[j];
                let written = if journal.writable() {
                    journal.write_pending_locked()
                } else {
                    Ok(())
                };
                if let Err(e) = written {
                    error.get_or_insert((j, e));
                }
            }
        }
        unlock_all(&held);
        // What was queued and not written (a read-only journal, an error)
        // takes effect in memory all the same.
        for &j in &involved {
            self.journals[j].apply_unapplied();
        }
        self.sync_union();
        if let Some((j, e)) = error {
            return Err(self.with_total_pending(self.journals[j].save_error(e)));
        }
        if let Some(&j) = involved
            .iter()
            .find(|&&j| !self.journals[j].pending.is_empty())
        {
            // A read-only journal keeps its decisions pending.
            let e = self.journals[j].save_error(io::Error::other("read-only"));
            return Err(self.with_total_pending(e));
        }
        Ok(Saved::Done(previous))
    }

    /// The journals a change goes to: the writable ones of its pair's run
    /// files; without files, the one already holding the pair, else the first writable one.
    fn route(&self, c: &Change, files: &dyn Fn(&RecordKey) -> Vec<u16>) -> Vec<usize> {
        let first = self
            .journals
            .iter()
            .position(Journal::writable)
            .unwrap_or(0);
        if self.journals.len() == 1 {
            return vec![0];
        }
        let files = files(&c.key);
        let mut to: Vec<usize> = if files.is_empty() {
            self.journals
                .iter()
                .enumerate()
                .filter(|(_, j)| j.writable() && j.live.pairs.contains_key(&c.key))
                .map(|(i, _)| i)
                .collect()
        } else {
            self.journals
                .iter()
                .enumerate()
                .filter(|(_, j)| j.writable() && files.iter().any(|f| j.serves(*f)))
                .map(|(i, _)| i)
                .collect()
        };
        if to.is_empty() {
            to.push(first);
        }
        to
    }

    /// The pairs of `expect` whose decision by this store's reviewer now
    /// differs from it; and that decision on each pair of `expect`, in order.
    fn conflicts(&self, expect: &[Change]) -> (Vec<Conflict>, Vec<Option<Arc<Annotation>>>) {
        // (On every core: an undo of a million decisions looks up a
        // million pairs.)
        let now: Vec<Option<Arc<Annotation>>> = expect
            .par_iter()
            .with_min_len(4096)
            .map(|c| self.decision_shared(&c.key, &self.reviewer).cloned())
            .collect();
        let conflicts = expect
            .par_iter()
            .zip(now.par_iter())
            .with_min_len(4096)
            .filter_map(|(c, now)| {
                fn given<S: AsRef<str>>(s: &Option<S>) -> Option<&str> {
                    s.as_ref().map(AsRef::as_ref).filter(|s| !s.is_empty())
                }
                let (category, note) = (given(&c.category), given(&c.note));
                let same = match now {
                    Some(a) => a.category.as_deref() == category && a.note.as_deref() == note,
                    None => category.is_none() && note.is_none(),
                };
                (!same).then(|| Conflict {
                    key: c.key,
                    case_id: c.case_id.to_string(),
                    variant_id: c.variant_id.to_string(),
                    now: now.as_deref().cloned(),
                })
            })
            .collect();
        (conflicts, now)
    }

    /// The pairs of `expect` whose resolution now differs from it.
    fn resolution_conflicts(&self, expect: &[ResolutionChange]) -> Vec<Conflict> {
        let sorted = |v: &[Prior]| {
            let mut v = v.to_vec();
            v.sort_by_key(|a| a.reviewer);
            v
        };
        expect
            .iter()
            .filter_map(|e| {
                let c = &e.change;
                let now = self.resolution_change(&c.key, &c.case_id, &c.variant_id);
                let want = non_empty(c.category);
                let same = now.change.category == want
                    && (want.is_none() || sorted(&now.resolves) == sorted(&e.resolves));
                (!same).then(|| Conflict {
                    key: c.key,
                    case_id: c.case_id.to_string(),
                    variant_id: c.variant_id.to_string(),
                    now: self
                        .live()
                        .pairs
                        .get(&c.key)
                        .and_then(|p| p.resolution.as_deref())
                        .filter(|r| r.ann.category.is_some())
                        .map(|r| Annotation::clone(&r.ann)),
                })
            })
            .collect()
    }

    /// A save error counting every journal's pending events.
    fn with_total_pending(&self, e: SaveError) -> SaveError {
        let total = self.pending();
        match e {
            SaveError::Io { path, error, .. } => SaveError::Io {
                path,
                error,
                pending: total,
            },
            SaveError::ReadOnly { path, reason, .. } => SaveError::ReadOnly {
                path,
                reason,
                pending: total,
            },
        }
    }

    /// Try to write pending events again (the UI calls it periodically and before quitting).
    pub fn retry_pending(&mut self) -> Result<(), SaveError> {
        let mut first = None;
        for j in &mut self.journals {
            if let Err(e) = j.flush() {
                first.get_or_insert(e);
            }
        }
        self.sync_union();
        match first {
            Some(e) => Err(self.with_total_pending(e)),
            None => Ok(()),
        }
    }

    /// How many events are applied in memory but not yet durable.
    pub fn pending(&self) -> usize {
        self.journals.iter().map(|j| j.pending.len()).sum()
    }

    /// Merge the events other triages appended since this store last read the
    /// journals, and say how many annotations they changed since the last call
    /// (including changes merged while saving).
    ///
    /// Cheap when nothing changed: one `stat` per journal. A journal that
    /// another triage compacted (a new file at the path) is replayed whole;
    /// so is one replaced by an older copy, and then this triage's decisions
    /// that the copy lacks are written again ([`AnnotationStore::restored`]
    /// says how many). This store's own pending decisions stay on top,
    /// since they will be appended after everything read here.
    pub fn refresh(&mut self) -> io::Result<usize> {
        let mut result = Ok(());
        for j in &mut self.journals {
            if let Err(e) = j.refresh() {
                result = Err(e);
            }
        }
        self.sync_union();
        result?;
        Ok(self
            .journals
            .iter_mut()
            .map(|j| std::mem::take(&mut j.merged))
            .sum())
    }

    /// How many of this triage's decisions were written again since the
    /// last call, because a journal was replaced by a copy that lacked them.
    pub fn restored(&mut self) -> usize {
        self.journals
            .iter_mut()
            .map(|j| std::mem::take(&mut j.restored))
            .sum()
    }

    /// Rewrite each journal as one event per pair, atomically and durably.
    ///
    /// Under the journal's lock, the events other triages appended are read
    /// first, so the new journal holds theirs too. The new journal is written to
    /// `<path>.tmp-<pid>` in the same folder, fsynced, renamed over the journal,
    /// and the folder fsynced; unreadable lines are first appended to
    /// `<path>.unreadable`. Skipped (Ok) when read-only, when events are
    /// pending, when the journal is already compact, when it holds lines of a
    /// newer format, when it is no regular file, and when the journal file
    /// was made read-only (replacing it by rename would defeat that).
    pub fn compact(&mut self) -> io::Result<()> {
        let mut result = Ok(());
        for j in &mut self.journals {
            if let Err(e) = j.compact() {
                result = Err(e);
            }
        }
        self.sync_union();
        result
    }

    /// Count of journal lines that could not be read (those since moved
    /// to a side file included), with the first line number.
    pub fn skipped_lines(&self) -> (usize, Option<u64>) {
        let mut n = 0;
        let mut first = None;
        for j in &self.journals {
            let (c, f) = j.skipped();
            n += c;
            if first.is_none() {
                first = f;
            }
        }
        (n, first)
    }

    /// Every journal line that could not be read (up to 100,000 per
    /// journal), where it is now, and whether some were left unlisted.
    pub fn unreadable(&self) -> (Vec<UnreadableLine>, bool) {
        let mut out = Vec::new();
        let mut more = false;
        for j in &self.journals {
            let (bad, over) = j.bad_lines();
            more |= over;
            out.extend(bad.iter().map(|b| UnreadableLine {
                journal: j.path.clone(),
                line: b.line,
                reason: b.reason.clone(),
                moved_to: b.moved_to.clone(),
            }));
        }
        (out, more)
    }

    /// How many journal lines could not be read (moved ones included).
    pub fn unreadable_count(&self) -> usize {
        self.journals.iter().map(|j| j.bad_lines().0.len()).sum()
    }

    /// Write the decisions still pending to a recovery file beside each
    /// journal (`<journal>.recovered.jsonl`, appended and fsynced), for an
    /// exit that cannot wait for the disk: say where they went, or hand
    /// them back as journal lines when even that failed.
    pub fn recover(&self) -> Vec<Recovery> {
        self.journals
            .iter()
            .filter(|j| !j.pending.is_empty())
            .map(|j| match j.recover() {
                Ok(file) => Recovery::File {
                    journal: j.path.clone(),
                    file,
                    count: j.pending.len(),
                },
                Err((error, lines)) => Recovery::Lines {
                    journal: j.path.clone(),
                    error,
                    lines,
                },
            })
            .collect()
    }
}

fn unlock_all(held: &[File]) {
    for h in held {
        let _ = h.unlock();
    }
}

/// Why a journal opened with [`AnnotationStore::read`] is read-only.
const READ_ONLY: &str = "the journal was opened for reading only";
/// Why the journal beside a run in a read-only folder is.
const COMMITTED: &str = "the journal beside the run is read-only (its folder is not writable)";

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Where the journal goes, and whether that is the fallback under the data folder.
///
/// `--annotations PATH` if given; else `<run>.triage.jsonl` if the run's folder
/// is writable (tested by creating and removing a probe file, since permission
/// bits lie about ACLs, read-only mounts and root); else
/// `<data dir>/runs/<16 hex of sha256(canonical absolute run path)>.triage.jsonl`.
pub fn journal_path_for(
    run: &Path,
    explicit: Option<&Path>,
) -> Result<(PathBuf, bool), JournalPathError> {
    if let Some(path) = explicit {
        return Ok((path.to_path_buf(), false));
    }
    let folder = parent_dir(run);
    if folder_writable(folder) {
        return Ok((with_suffix(run, ".triage.jsonl"), false));
    }
    let dirs = directories::ProjectDirs::from("", "", "triage").ok_or_else(|| {
        JournalPathError::NoDataFolder {
            folder: folder.to_path_buf(),
        }
    })?;
    let dir = dirs.data_dir().join("runs");
    fs::create_dir_all(&dir).map_err(|error| JournalPathError::DataFolderNotWritable {
        folder: folder.to_path_buf(),
        data: dir.clone(),
        error,
    })?;
    Ok((dir.join(format!("{}.triage.jsonl", run_digest(run))), true))
}

/// Where [`journal_path_for`] puts the journal of a run whose folder is
/// not writable (nothing is created here).
fn fallback_path(run: &Path) -> Option<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "triage")?;
    Some(
        dirs.data_dir()
            .join("runs")
            .join(format!("{}.triage.jsonl", run_digest(run))),
    )
}

/// Why [`journal_path_for`] found no place for the journal: the run's
/// folder is not writable, and neither is the fallback.
#[derive(Debug)]
pub enum JournalPathError {
    /// There is no data folder on this system (no home directory).
    NoDataFolder { folder: PathBuf },
    /// The data folder's `runs` folder cannot be created.
    DataFolderNotWritable {
        folder: PathBuf,
        data: PathBuf,
        error: io::Error,
    },
}

impl fmt::Display for JournalPathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JournalPathError::NoDataFolder { folder } => write!(
                f,
                "{} is not writable and there is no data folder to keep annotations in (is HOME set?) — pass --annotations PATH",
                folder.display()
            ),
            JournalPathError::DataFolderNotWritable {
                folder,
                data,
                error,
            } => write!(
                f,
                "{} is not writable, and neither is {}: {error} — pass --annotations PATH",
                folder.display(),
                data.display()
            ),
        }
    }
}

impl std::error::Error for JournalPathError {}

/// The journals of the runs opened together, in the order a store reads
/// them, and notes for the reviewer about where they are.
///
/// With `explicit` (`--annotations PATH`), that one journal keeps every
/// run's decisions. Otherwise each run has its own ([`journal_path_for`]),
/// so a decision on a pair goes to the journal of the pair's run; standard
/// input's is `stdin.triage.jsonl` in the data folder. When a run's folder
/// is not writable and a journal was committed beside the run, that one is
/// read too, read-only, before the fallback (whose newer events win).
pub fn journal_specs(
    runs: &[String],
    explicit: Option<&Path>,
) -> Result<(Vec<JournalSpec>, Vec<String>), JournalPathError> {
    let mut notes = Vec::new();
    if let Some(path) = explicit {
        let spec = JournalSpec {
            path: path.to_path_buf(),
            files: None,
            writable: true,
        };
        return Ok((vec![spec], notes));
    }
    let mut specs: Vec<JournalSpec> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let file = u16::try_from(i).unwrap_or(u16::MAX);
        let (path, committed) = if run == "-" {
            // Standard input has no folder: its journal is in the data folder.
            let dir = directories::ProjectDirs::from("", "", "triage")
                .map(|d| d.data_dir().join("runs"))
                .filter(|dir| fs::create_dir_all(dir).is_ok());
            let Some(dir) = dir else {
                notes.push(
                    "standard input has no journal (no data folder to keep it in) — pass --annotations PATH"
                        .to_string(),
                );
                continue;
            };
            let path = dir.join("stdin.triage.jsonl");
            notes.push(format!(
                "annotations of standard input in {}",
                path.display()
            ));
            (path, None)
        } else {
            let run_path = Path::new(run);
            let (path, fallback) = journal_path_for(run_path, None)?;
            let beside = with_suffix(run_path, ".triage.jsonl");
            let mut committed = (fallback && beside.is_file()).then_some(beside);
            if !fallback && let Some(old) = fallback_path(run_path).filter(|p| p.is_file()) {
                // Decisions kept in the data folder while the run's folder
                // was read-only: read, under the journal beside the run.
                notes.push(format!(
                    "{run}: the decisions kept in {} while its folder was read-only are merged in (read only)",
                    old.display()
                ));
                committed = Some(old);
            }
            if fallback {
                notes.push(match &committed {
                    Some(_) => format!(
                        "{run}'s folder is read-only: its committed journal is merged in (read only), and new decisions go to {}",
                        path.display()
                    ),
                    None => format!(
                        "{run}'s folder is read-only: its annotations go to {}",
                        path.display()
                    ),
                });
            }
            (path, committed)
        };
        if let Some(c) = committed {
            specs.push(JournalSpec {
                path: c,
                files: Some(vec![file]),
                writable: false,
            });
        }
        // The same run (or two runs sharing a journal) given twice: one journal.
        match specs.iter_mut().find(|s| s.writable && s.path == path) {
            Some(s) => {
                if let Some(f) = &mut s.files {
                    f.push(file);
                }
            }
            None => specs.push(JournalSpec {
                path,
                files: Some(vec![file]),
                writable: true,
            }),
        }
    }
    if runs.len() > 1 && specs.iter().filter(|s| s.writable).count() > 1 {
        notes.push("each run's decisions go to its own journal".to_string());
    }
    Ok((specs, notes))
}

/// What [`merge_journals`] made of three versions of a journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// The merged journal, one event per slot (each reviewer's decision on
    /// a pair, each pair's resolution), oldest first, then the lines that
    /// could not be read, kept as they were.
    pub text: Vec<u8>,
    /// How many events it holds.
    pub events: usize,
    /// Slots both sides changed differently: the later event (by `at`) is kept.
    pub both_changed: usize,
}

/// Merge a journal three ways, by event, as a git merge driver does
/// (`triage merge-journal %O %A %B`): `base` is the common ancestor,
/// `ours` and `theirs` the two sides.
///
/// Each version is read as triage replays it: the last event of each slot
/// (a reviewer's decision on a pair, or a pair's resolution). A slot
/// changed on one side only takes that side's event; changed on both, the
/// later `at` wins (ours on a tie). So a compaction on one branch, which
/// rewrites the file, loses nothing the other branch appended, and an
/// older event never comes back after a newer one. Lines that cannot be
/// read (or come from a newer triage) are kept when either side added
/// them, or both kept them.
pub fn merge_journals(base: &[u8], ours: &[u8], theirs: &[u8]) -> Merged {
    type Side = (HashMap<Slot, (String, Name)>, Vec<Vec<u8>>);
    fn read(bytes: &[u8]) -> Side {
        let mut slots: HashMap<Slot, (String, Name)> = HashMap::new();
        let mut raw = Vec::new();
        for line in bytes.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let body = line.trim_ascii();
            if body.is_empty() {
                continue;
            }
            match parse_line(body) {
                Line::Event(ann, prev, resolves) => {
                    let entry = Entry {
                        ann: Arc::new(*ann),
                        prev: prev.map(Arc::new),
                        resolves,
                        seq: 0,
                    };
                    let text = encode(&entry.ann, entry.prev.as_deref(), entry.resolves.as_deref());
                    slots.insert(entry.slot(), (text, entry.ann.at));
                }
                Line::Newer | Line::Bad(_) => raw.push(line.to_vec()),
            }
        }
        (slots, raw)
    }
    let (o, o_raw) = read(base);
    let (a, a_raw) = read(ours);
    let (b, b_raw) = read(theirs);
    let mut keys: Vec<&Slot> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut both_changed = 0;
    let mut chosen: Vec<(String, String, u8)> = Vec::new();
    for k in keys {
        let (ea, eb, eo) = (a.get(k), b.get(k), o.get(k));
        let pick = match (ea, eb) {
            (Some(x), Some(y)) if x.0 == y.0 => (x, 0),
            (Some(x), Some(y)) if Some(x) == eo => (y, 1),
            (Some(x), Some(y)) if Some(y) == eo => (x, 0),
            (Some(x), Some(y)) => {
                both_changed += 1;
                if y.1 > x.1 { (y, 1) } else { (x, 0) }
            }
            (Some(x), None) => (x, 0),
            (None, Some(y)) => (y, 1),
            (None, None) => continue,
        };
        chosen.push((pick.0.1.into(), pick.0.0.clone(), pick.1));
    }
    // Oldest first, as a compaction writes them; ties keep a stable order.
    chosen.sort();
    let mut text = Vec::new();
    for (_, line, _) in &chosen {
        text.extend_from_slice(line.as_bytes());
        text.push(b'\n');
    }
    let in_base: HashSet<&[u8]> = o_raw.iter().map(Vec::as_slice).collect();
    let in_ours: HashSet<&[u8]> = a_raw.iter().map(Vec::as_slice).collect();
    let in_theirs: HashSet<&[u8]> = b_raw.iter().map(Vec::as_slice).collect();
    let mut kept: HashSet<&[u8]> = HashSet::new();
    for line in a_raw.iter().chain(&b_raw) {
        let l = line.as_slice();
        let added = !in_base.contains(l);
        let kept_by_both = in_ours.contains(l) && in_theirs.contains(l);
        if (added || kept_by_both) && kept.insert(l) {
            text.extend_from_slice(l);
            text.push(b'\n');
        }
    }
    Merged {
        text,
        events: chosen.len(),
        both_changed,
    }
}

/// A journal and the files triage keeps beside it (its lock, the side
/// file of unreadable lines, the recovery file): no export may overwrite them.
pub fn journal_files(journal: &Path) -> [PathBuf; 4] {
    [
        journal.to_path_buf(),
        with_suffix(journal, ".lock"),
        with_suffix(journal, ".unreadable"),
        with_suffix(journal, ".recovered.jsonl"),
    ]
}

/// Whether two paths name the same file: the same file on disk when both
/// exist, else the same absolute path once `.` and `..` are resolved.
pub fn same_file(a: &Path, b: &Path) -> bool {
    if let (Ok(x), Ok(y)) = (fs::canonicalize(a), fs::canonicalize(b)) {
        return x == y;
    }
    let resolve = |p: &Path| -> Option<PathBuf> {
        let abs = std::path::absolute(p).ok()?;
        // The folder resolved on disk (symlinks too) when it exists.
        let (dir, name) = (abs.parent()?, abs.file_name()?);
        let dir = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let mut out = PathBuf::new();
        for c in dir.join(name).components() {
            match c {
                std::path::Component::ParentDir => {
                    out.pop();
                }
                std::path::Component::CurDir => {}
                other => out.push(other),
            }
        }
        Some(out)
    };
    match (resolve(a), resolve(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Whether a file given as a run is an annotation journal (or its lock,
/// or a recovery file): its first non-blank line is an annotation event,
/// or it is empty and named like one. `triage check *.jsonl` then skips it.
pub fn looks_like_journal(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let named = [".triage.jsonl", ".triage.jsonl.lock", ".recovered.jsonl"]
        .iter()
        .any(|s| name.ends_with(s));
    // A FIFO or a device is read once, as a run: never opened here.
    if !fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(file) = File::open(path) else {
        return false;
    };
    let mut head = Vec::new();
    if file.take(64 * 1024).read_to_end(&mut head).is_err() {
        return false;
    }
    match head
        .split(|&b| b == b'\n')
        .map(<[u8]>::trim_ascii)
        .find(|l| !l.is_empty())
    {
        Some(line) => matches!(parse_line(line), Line::Event(..) | Line::Newer),
        None => named,
    }
}

/// 16 hex digits of the SHA-256 of the run's canonical absolute path.
fn run_digest(run: &Path) -> String {
    let abs = fs::canonicalize(run)
        .or_else(|_| std::path::absolute(run))
        .unwrap_or_else(|_| run.to_path_buf());
    let mut h = Sha256::new();
    #[cfg(unix)]
    h.update(std::os::unix::ffi::OsStrExt::as_bytes(abs.as_os_str()));
    #[cfg(not(unix))]
    h.update(abs.to_string_lossy().as_bytes());
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn folder_writable(folder: &Path) -> bool {
    static PROBES: AtomicU32 = AtomicU32::new(0);
    for _ in 0..3 {
        let n = PROBES.fetch_add(1, Ordering::Relaxed);
        let probe = folder.join(format!(".triage-probe-{}-{n}", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&probe) {
            Ok(file) => {
                drop(file);
                let _ = fs::remove_file(&probe);
                return true;
            }
            // A leftover probe of a crashed process with our pid: try another name.
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(_) => return false,
        }
    }
    false
}

/// The current time as RFC 3339 UTC seconds ("2026-11-29T13:05:00Z").
pub fn now_rfc3339() -> String {
    // A clock before 1970 is broken; 1970 is as good an answer as any.
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

fn rfc3339(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let rem = unix_secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `RecordKey` as its 32-hex-digit string in serde.
mod key_hex {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serializer};

    use super::RecordKey;

    pub fn serialize<S: Serializer>(key: &RecordKey, s: S) -> Result<S::Ok, S::Error> {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut text = [0u8; 32];
        for (pair, b) in text.chunks_exact_mut(2).zip(key.0) {
            pair[0] = HEX[usize::from(b >> 4)];
            pair[1] = HEX[usize::from(b & 15)];
        }
        // Hex digits are ASCII.
        s.serialize_str(std::str::from_utf8(&text).expect("hex digits are ASCII"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<RecordKey, D::Error> {
        let s = String::deserialize(d)?;
        RecordKey::parse(&s).ok_or_else(|| D::Error::custom("a record key is 32 hex digits"))
    }
}

mod append;
mod ids;
mod journal;
mod name;
pub use name::Name;

#[cfg(test)]
mod tests;
