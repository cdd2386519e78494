//! The annotation store: a reviewer's decisions, on disk the moment they are shown.
//!
//! Decisions live in an append-only journal (by default `<run>.triage.jsonl`),
//! one JSON event per line, each carrying the full new state of one pair's
//! annotation, so replay is "the last event per key wins" and a torn final line
//! costs at most the decision that was being written when the machine died.
//! [`AnnotationStore::apply`] appends and fsyncs before it returns; on open the
//! journal is compacted by temp file, fsync, rename and folder fsync. Several
//! triages may share one journal: every append and every compaction happens
//! under an exclusive lock on `<journal>.lock`, after reading what the others
//! appended since, so journal order decides and nothing is dropped.
//! The run file itself is never written.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::{self, File, Metadata, OpenOptions, TryLockError};
use std::io::{self, BufRead, BufReader, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::key::RecordKey;

/// The journal format this build writes and fully understands.
const FORMAT_VERSION: u64 = 1;

/// The state of one pair's triage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Annotation {
    #[serde(with = "key_hex")]
    pub key: RecordKey,
    pub case_id: String,
    pub variant_id: String,
    pub category: Option<String>,
    pub note: Option<String>,
    pub reviewer: String,
    pub at: String,
    pub source: AnnotationSource,
}

/// Whether the category was chosen by hand or is an accepted suggestion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnnotationSource {
    Manual,
    Suggestion,
}

impl AnnotationSource {
    fn as_str(self) -> &'static str {
        match self {
            AnnotationSource::Manual => "manual",
            AnnotationSource::Suggestion => "suggestion",
        }
    }
}

/// A change to apply: the new (category, note) for one pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub key: RecordKey,
    pub case_id: String,
    pub variant_id: String,
    pub category: Option<String>,
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
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct Prev {
    #[serde(default)]
    category: Option<String>,
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

/// One journal line as read; writing goes through [`encode`].
#[derive(Deserialize)]
struct Event {
    key: String,
    #[serde(default)]
    case_id: String,
    #[serde(default)]
    variant_id: String,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    reviewer: String,
    #[serde(default)]
    at: String,
    #[serde(default = "manual")]
    source: AnnotationSource,
    #[serde(default)]
    prev: Option<Prev>,
}

fn manual() -> AnnotationSource {
    AnnotationSource::Manual
}

enum Line {
    Event(Box<Annotation>, Option<Prev>),
    Newer,
    Bad,
}

fn parse_line(body: &[u8]) -> Line {
    let Ok(version) = serde_json::from_slice::<Version>(body) else {
        return Line::Bad;
    };
    if version.v > FORMAT_VERSION {
        return Line::Newer;
    }
    if version.v != FORMAT_VERSION {
        return Line::Bad;
    }
    let Ok(ev) = serde_json::from_slice::<Event>(body) else {
        return Line::Bad;
    };
    let Some(key) = RecordKey::parse(&ev.key) else {
        return Line::Bad;
    };
    let ann = Annotation {
        key,
        case_id: ev.case_id,
        variant_id: ev.variant_id,
        category: non_empty(ev.category),
        note: non_empty(ev.note),
        reviewer: ev.reviewer,
        at: ev.at,
        source: ev.source,
    };
    Line::Event(Box::new(ann), ev.prev)
}

/// One journal line (without its newline) for this state of an annotation.
fn encode(ann: &Annotation, prev: Option<&Prev>) -> String {
    // A `Value` prints infallibly, and preserve_order keeps the documented field order.
    serde_json::json!({
        "v": FORMAT_VERSION,
        "key": ann.key.to_string(),
        "case_id": ann.case_id,
        "variant_id": ann.variant_id,
        "category": ann.category,
        "note": ann.note,
        "reviewer": ann.reviewer,
        "at": ann.at,
        "source": ann.source.as_str(),
        "prev": prev.map(|p| serde_json::json!({"category": p.category, "note": p.note})),
    })
    .to_string()
}

/// An empty string means "none", so clearing a note by emptying it clears it.
fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

/// A decision applied in memory whose event is not durable yet.
#[derive(Debug)]
struct PendingEvent {
    ann: Annotation,
    prev: Option<Prev>,
    line: String,
}

/// Which file a path named when it was read: (device, inode) on Unix.
type FileId = (u64, u64);

fn file_id(meta: &Metadata) -> FileId {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (0, 0)
    }
}

/// How long a save waits for another triage to finish its write.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// An annotation's (category, note), to tell whether a merge changed it.
type Shown = (Option<String>, Option<String>);

/// What one pass over journal lines found.
#[derive(Default)]
struct Replay {
    recognised: usize,
    first_bad_complete: Option<u64>,
    /// The keys events touched, with their (category, note) before the first event.
    touched: HashMap<RecordKey, Option<Shown>>,
}

#[derive(Debug)]
struct Entry {
    ann: Annotation,
    prev: Option<Prev>,
    /// Order of the event that set it; higher is newer.
    seq: u64,
}

/// The annotations of one run, backed by its journal.
///
/// Concurrency: any number of stores (in one process or several) may share a
/// journal. Each append and each compaction takes an exclusive advisory lock
/// (`File::lock`, i.e. `flock` on Unix) on `<journal>.lock`, first reads the
/// events the others appended since this store last read (or the whole journal
/// again if another store compacted it, i.e. replaced the file), then writes and
/// fsyncs, then releases the lock. So the journal order is the order in which
/// the decisions were made durable, and the last event for a key wins in every
/// store. [`AnnotationStore::refresh`] merges the others' events while idle.
/// The lock file is left in place on purpose, since deleting it would let two
/// instances lock two different files.
#[derive(Debug)]
pub struct AnnotationStore {
    path: PathBuf,
    access: Access,
    reviewer: String,
    live: HashMap<RecordKey, Entry>,
    /// case_id → variant_id → keys, for stale look-ups without a scan.
    by_ids: HashMap<String, HashMap<String, Vec<RecordKey>>>,
    next_seq: u64,
    /// Bumped whenever an annotation is set or removed (see [`AnnotationStore::revision`]).
    revision: u64,
    /// Events not yet durable, oldest first.
    pending: Vec<PendingEvent>,
    skipped: usize,
    first_skipped: Option<u64>,
    /// Non-blank lines in the journal file as far as this store knows.
    file_lines: usize,
    /// A write failed part-way, so the file may hold junk this store did not count.
    dirty: bool,
    /// Some line was written by a newer triage; compaction would destroy it.
    newer_format: bool,
    /// The lock file, locked around each write; `Some` exactly when access is read-write.
    lock: Option<File>,
    /// How far the journal has been replayed, in bytes and lines.
    read_pos: u64,
    read_lines: u64,
    /// The file that was replayed; another one at the path means it was replaced.
    file_id: Option<FileId>,
    /// That file, held open so that its inode number cannot be reused by a
    /// new journal (which would then look like the same file).
    held: Option<File>,
    /// Annotations changed by other triages' events since [`AnnotationStore::refresh`] last said.
    merged: usize,
}

impl AnnotationStore {
    fn empty(path: &Path, reviewer: &str, access: Access) -> AnnotationStore {
        AnnotationStore {
            path: path.to_path_buf(),
            access,
            reviewer: reviewer.to_string(),
            live: HashMap::new(),
            by_ids: HashMap::new(),
            next_seq: 0,
            revision: 0,
            pending: Vec::new(),
            skipped: 0,
            first_skipped: None,
            file_lines: 0,
            dirty: false,
            newer_format: false,
            lock: None,
            read_pos: 0,
            read_lines: 0,
            file_id: None,
            held: None,
            merged: 0,
        }
    }

    /// Open (creating if missing) the journal at `path`, replay it and compact it.
    ///
    /// Replay and compaction run under the journal's lock, so another triage
    /// writing at the same moment is waited for, and its events are kept.
    /// Malformed lines (a torn last line after a crash, a bad key, bad JSON)
    /// are skipped and counted; the compaction rewrites them away. Lines from a
    /// newer format are skipped too but disable compaction so they are never
    /// destroyed. A folder where the journal or its lock file cannot be created
    /// gives [`StoreOpenError::NotWritable`]; a filesystem without file locks
    /// gives a read-only store, since unlocked writers could lose decisions.
    pub fn open(path: &Path, reviewer: &str) -> Result<AnnotationStore, StoreOpenError> {
        ensure_journal(path)?;
        let (access, lock) = open_lock(&with_suffix(path, ".lock"))?;
        let mut store = AnnotationStore::empty(path, reviewer, access);
        store.lock = lock;
        if let Some(lock) = &store.lock {
            lock_within(lock, LOCK_WAIT).map_err(|error| StoreOpenError::Io {
                path: with_suffix(path, ".lock"),
                error,
            })?;
        }
        let loaded = store.load();
        if loaded.is_ok() && store.lock.is_some() {
            // Another triage only writes a temp file while it holds the lock.
            remove_stale_temps(path);
            // Compaction only tidies: the journal is complete as it is, so a
            // failure here (say a full disk) must not stop the reviewer.
            let _ = store.compact_locked();
        }
        if let Some(lock) = &store.lock {
            let _ = lock.unlock();
        }
        loaded?;
        Ok(store)
    }

    /// Open a journal read-only without locking (for exports and `triage apply`).
    pub fn read(path: &Path) -> Result<AnnotationStore, StoreOpenError> {
        let access = Access::ReadOnly {
            reason: "the journal was opened for reading only".to_string(),
        };
        let mut store = AnnotationStore::empty(path, "", access);
        store.load()?;
        Ok(store)
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this store writes its journal.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// The reviewer recorded on new events.
    pub fn reviewer(&self) -> &str {
        &self.reviewer
    }

    /// The annotation of the pair with this key, if it has a category or a note.
    pub fn get(&self, key: &RecordKey) -> Option<&Annotation> {
        self.live.get(key).map(|e| &e.ann)
    }

    /// A number that changes whenever an annotation is set or removed, by
    /// this triage or another one: a reader of [`AnnotationStore::names`]
    /// compares it to know when to look again.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Whether some annotation (current or stale) is on a pair with these ids.
    pub fn names(&self, case_id: &str, variant_id: &str) -> bool {
        self.by_ids
            .get(case_id)
            .is_some_and(|v| v.contains_key(variant_id))
    }

    /// Whether some annotation is on a pair with this case id.
    pub fn names_case(&self, case_id: &str) -> bool {
        self.by_ids.contains_key(case_id)
    }

    /// The variant ids of the pairs annotations are on.
    pub fn named_variants(&self) -> HashSet<&str> {
        self.by_ids
            .values()
            .flat_map(|v| v.keys().map(String::as_str))
            .collect()
    }

    /// Whether the store holds no annotation.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// The newest annotation of a pair with these ids but another key (a stale one).
    pub fn stale_for(
        &self,
        case_id: &str,
        variant_id: &str,
        current: &RecordKey,
    ) -> Option<&Annotation> {
        self.by_ids
            .get(case_id)?
            .get(variant_id)?
            .iter()
            .filter(|k| *k != current)
            .filter_map(|k| self.live.get(k))
            .max_by_key(|e| e.seq)
            .map(|e| &e.ann)
    }

    /// All annotations (non-empty ones), sorted by (case_id, variant_id, key).
    pub fn all(&self) -> Vec<&Annotation> {
        let mut v: Vec<&Annotation> = self.live.values().map(|e| &e.ann).collect();
        v.sort_by(|a, b| {
            (&a.case_id, &a.variant_id, a.key).cmp(&(&b.case_id, &b.variant_id, b.key))
        });
        v
    }

    /// Annotations whose key is not in `present` and whose ids are not in `present_ids` either.
    pub fn orphans(
        &self,
        present: &HashSet<RecordKey>,
        present_ids: &HashSet<(String, String)>,
    ) -> Vec<&Annotation> {
        self.all()
            .into_iter()
            .filter(|a| {
                !present.contains(&a.key)
                    && !present_ids.contains(&(a.case_id.clone(), a.variant_id.clone()))
            })
            .collect()
    }

    /// Apply several changes as one durable step and return the previous annotations (for undo).
    ///
    /// Every event is appended and the journal fsynced once before `Ok`. The
    /// changes take effect in memory either way: on an I/O error (disk full,
    /// read-only file) or in a read-only store the events stay pending, to be
    /// written by [`AnnotationStore::retry_pending`], and the error says so.
    pub fn apply(&mut self, changes: Vec<Change>) -> Result<Vec<Option<Annotation>>, SaveError> {
        let at = now_rfc3339();
        let mut previous = Vec::with_capacity(changes.len());
        for c in changes {
            let old = self.live.get(&c.key).map(|e| e.ann.clone());
            let prev = old.as_ref().map(|a| Prev {
                category: a.category.clone(),
                note: a.note.clone(),
            });
            let ann = Annotation {
                key: c.key,
                case_id: c.case_id,
                variant_id: c.variant_id,
                category: non_empty(c.category),
                note: non_empty(c.note),
                reviewer: self.reviewer.clone(),
                at: at.clone(),
                source: c.source,
            };
            self.pending.push(PendingEvent {
                line: encode(&ann, prev.as_ref()),
                ann: ann.clone(),
                prev: prev.clone(),
            });
            self.put(ann, prev);
            previous.push(old);
        }
        self.flush()?;
        Ok(previous)
    }

    /// Try to write pending events again (the UI calls it periodically and before quitting).
    pub fn retry_pending(&mut self) -> Result<(), SaveError> {
        self.flush()
    }

    /// How many events are applied in memory but not yet durable.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Merge the events other triages appended since this store last read the
    /// journal, and say how many annotations they changed since the last call
    /// (including changes merged while saving).
    ///
    /// Cheap when nothing changed: one `stat` of the journal. A journal that
    /// another triage compacted (a new file at the path) is replayed whole.
    /// This store's own pending decisions stay on top, since they will be
    /// appended after everything read here.
    pub fn refresh(&mut self) -> io::Result<usize> {
        let unchanged = match fs::metadata(&self.path) {
            Ok(m) => Some(file_id(&m)) == self.file_id && m.len() == self.read_pos,
            // A vanished journal is rewritten by the next save.
            Err(e) if e.kind() == ErrorKind::NotFound => true,
            Err(e) => return Err(e),
        };
        if !unchanged {
            self.locked(AnnotationStore::catch_up)?;
        }
        Ok(std::mem::take(&mut self.merged))
    }

    /// Rewrite the journal as one event per live annotation, atomically and durably.
    ///
    /// Under the journal's lock, the events other triages appended are read
    /// first, so the new journal holds theirs too. The new journal is written to
    /// `<path>.tmp-<pid>` in the same folder, fsynced, renamed over the journal,
    /// and the folder fsynced. Skipped (Ok) when read-only, when events are
    /// pending, when the journal is already compact, when it holds lines of a
    /// newer format, and when the journal file was made read-only (replacing it
    /// by rename would defeat that).
    pub fn compact(&mut self) -> io::Result<()> {
        if self.lock.is_none() || !self.pending.is_empty() || self.newer_format {
            return Ok(());
        }
        self.locked(AnnotationStore::compact_locked)
    }

    /// [`AnnotationStore::compact`] with the lock held.
    fn compact_locked(&mut self) -> io::Result<()> {
        self.catch_up()?;
        if !self.pending.is_empty() || self.newer_format {
            return Ok(());
        }
        if !self.dirty && self.file_lines == self.live.len() {
            return Ok(());
        }
        match OpenOptions::new().append(true).open(&self.path) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::PermissionDenied => return Ok(()),
            // A deleted journal is simply written anew.
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        self.write_snapshot()
    }

    /// Count of journal lines that could not be read on open, with the first line number.
    pub fn skipped_lines(&self) -> (usize, Option<u64>) {
        (self.skipped, self.first_skipped)
    }

    /// Set a key's annotation in memory; an empty one is removed.
    fn put(&mut self, ann: Annotation, prev: Option<Prev>) {
        self.revision += 1;
        if let Some(old) = self.live.remove(&ann.key) {
            self.unindex(&old.ann);
        }
        if ann.category.is_none() && ann.note.is_none() {
            return;
        }
        self.by_ids
            .entry(ann.case_id.clone())
            .or_default()
            .entry(ann.variant_id.clone())
            .or_default()
            .push(ann.key);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.live.insert(ann.key, Entry { ann, prev, seq });
    }

    fn unindex(&mut self, ann: &Annotation) {
        if let Some(variants) = self.by_ids.get_mut(&ann.case_id) {
            if let Some(keys) = variants.get_mut(&ann.variant_id) {
                keys.retain(|k| *k != ann.key);
                if keys.is_empty() {
                    variants.remove(&ann.variant_id);
                }
            }
            if variants.is_empty() {
                self.by_ids.remove(&ann.case_id);
            }
        }
    }

    /// Replay the journal into memory (the first time).
    fn load(&mut self) -> Result<(), StoreOpenError> {
        let path = self.path.clone();
        let read_err = |error: io::Error| StoreOpenError::Io {
            path: path.clone(),
            error,
        };
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err(StoreOpenError::NotFound { path });
            }
            Err(e) => return Err(read_err(e)),
        };
        let meta = file.metadata().map_err(read_err)?;
        if meta.is_dir() {
            return Err(read_err(io::Error::new(
                ErrorKind::IsADirectory,
                "it is a directory",
            )));
        }
        let replay = self.replay(file, &meta, false).map_err(read_err)?;
        if let (0, Some(line)) = (replay.recognised, replay.first_bad_complete) {
            // Most likely `--annotations` names the run file or some other
            // file: appending to it, or compacting it, would destroy it.
            return Err(StoreOpenError::NotAJournal { path, line });
        }
        Ok(())
    }

    /// Read what was appended to the journal since the last read, or all of it
    /// again if the file at the path was replaced or shrank; keep pending
    /// decisions on top. Counts the annotations that changed in `merged`.
    fn catch_up(&mut self) -> io::Result<()> {
        let file = match File::open(&self.path) {
            Ok(f) => f,
            // Deleted: the next save writes everything this store knows.
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        if meta.is_dir() {
            return Err(io::Error::new(ErrorKind::IsADirectory, "it is a directory"));
        }
        if !meta.is_file() {
            // A device or a pipe (say /dev/full) is no journal to share: nothing to merge.
            return Ok(());
        }
        if Some(file_id(&meta)) == self.file_id && meta.len() == self.read_pos {
            return Ok(());
        }
        // Without inode numbers (not Unix), a journal another triage
        // compacted cannot be told from one it appended to: read it all again.
        let restart =
            cfg!(not(unix)) || Some(file_id(&meta)) != self.file_id || meta.len() < self.read_pos;
        let before = restart.then(|| self.values());
        if restart {
            self.live.clear();
            self.by_ids.clear();
            self.revision += 1;
            self.read_pos = 0;
            self.read_lines = 0;
            self.file_lines = 0;
            self.skipped = 0;
            self.first_skipped = None;
            self.newer_format = false;
        }
        let replay = self.replay(file, &meta, !restart)?;
        let mine: Vec<(Annotation, Option<Prev>)> = self
            .pending
            .iter()
            .map(|p| (p.ann.clone(), p.prev.clone()))
            .collect();
        for (ann, prev) in mine {
            self.put(ann, prev);
        }
        let now = |s: &Self, k: &RecordKey| {
            s.live
                .get(k)
                .map(|e| (e.ann.category.clone(), e.ann.note.clone()))
        };
        self.merged += replay
            .touched
            .iter()
            .filter(|(k, was)| now(self, k) != **was)
            .count();
        if let Some(before) = before {
            let after = self.values();
            let mut changed = before
                .iter()
                .filter(|(k, v)| after.get(*k) != Some(*v))
                .count();
            changed += after.keys().filter(|k| !before.contains_key(*k)).count();
            self.merged += changed;
        }
        Ok(())
    }

    /// Each live annotation's (category, note).
    fn values(&self) -> HashMap<RecordKey, Shown> {
        self.live
            .iter()
            .map(|(k, e)| (*k, (e.ann.category.clone(), e.ann.note.clone())))
            .collect()
    }

    /// Replay `file` from `read_pos` to its end; `count` records the keys touched.
    fn replay(&mut self, file: File, meta: &Metadata, count: bool) -> io::Result<Replay> {
        let mut file = file;
        file.seek(SeekFrom::Start(self.read_pos))?;
        let mut reader = BufReader::new(file);
        let mut buf = Vec::new();
        let mut out = Replay::default();
        loop {
            buf.clear();
            let n = reader.read_until(b'\n', &mut buf)?;
            if n == 0 {
                break;
            }
            self.read_pos += n as u64;
            self.read_lines += 1;
            let line_no = self.read_lines;
            let complete = buf.last() == Some(&b'\n');
            let body = buf.trim_ascii();
            self.file_lines += usize::from(!body.is_empty() || complete);
            if body.is_empty() {
                continue;
            }
            match parse_line(body) {
                Line::Event(ann, prev) => {
                    out.recognised += 1;
                    if count && !out.touched.contains_key(&ann.key) {
                        let was = self
                            .live
                            .get(&ann.key)
                            .map(|e| (e.ann.category.clone(), e.ann.note.clone()));
                        out.touched.insert(ann.key, was);
                    }
                    self.put(*ann, prev);
                }
                Line::Newer => {
                    out.recognised += 1;
                    self.newer_format = true;
                    self.skip(line_no);
                }
                Line::Bad => {
                    // An incomplete last line is a torn write, expected after a
                    // crash; a complete bad line may mean this is not a journal.
                    if complete && out.first_bad_complete.is_none() {
                        out.first_bad_complete = Some(line_no);
                    }
                    self.skip(line_no);
                }
            }
        }
        self.file_id = Some(file_id(meta));
        self.held = Some(reader.into_inner());
        Ok(out)
    }

    /// Run `f` holding the journal's lock (without one for a read-only store).
    fn locked<T>(&mut self, f: impl FnOnce(&mut Self) -> io::Result<T>) -> io::Result<T> {
        let Some(lock) = self.lock.take() else {
            return f(self);
        };
        if let Err(e) = lock_within(&lock, LOCK_WAIT) {
            self.lock = Some(lock);
            return Err(e);
        }
        let result = f(self);
        let _ = lock.unlock();
        self.lock = Some(lock);
        result
    }

    fn skip(&mut self, line_no: u64) {
        self.skipped += 1;
        self.first_skipped.get_or_insert(line_no);
    }

    /// Make every pending event durable, or keep them all pending.
    fn flush(&mut self) -> Result<(), SaveError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        if let Access::ReadOnly { reason } = &self.access {
            return Err(SaveError::ReadOnly {
                path: self.path.clone(),
                reason: reason.clone(),
                pending: self.pending.len(),
            });
        }
        let result = self.locked(|s| {
            // Others' events first: ours go after them, and win.
            s.catch_up()?;
            let journal_gone = matches!(
                fs::symlink_metadata(&s.path),
                Err(e) if e.kind() == ErrorKind::NotFound
            );
            // If the journal was deleted under us, appending would keep only the
            // newest events: write everything this store knows instead.
            if journal_gone {
                s.write_snapshot()
            } else {
                let lines: Vec<&str> = s.pending.iter().map(|p| p.line.as_str()).collect();
                let (end, file) = append_durably(&s.path, &lines, s.read_pos)?;
                s.file_lines += s.pending.len();
                s.read_lines += s.pending.len() as u64;
                s.read_pos = end;
                s.file_id = file.metadata().ok().map(|m| file_id(&m));
                s.held = Some(file);
                Ok(())
            }
        });
        match result {
            Ok(()) => {
                self.pending.clear();
                Ok(())
            }
            Err(error) => {
                self.dirty = true;
                Err(SaveError::Io {
                    path: self.path.clone(),
                    error,
                    pending: self.pending.len(),
                })
            }
        }
    }

    /// Replace the journal by the live annotations, oldest first: temp file, fsync, rename, folder fsync.
    fn write_snapshot(&mut self) -> io::Result<()> {
        // Renaming over a symlink would replace the link, not the journal it points to.
        let target = match fs::symlink_metadata(&self.path) {
            Ok(m) if m.file_type().is_symlink() => {
                fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone())
            }
            _ => self.path.clone(),
        };
        let tmp = with_suffix(&target, &format!(".tmp-{}", std::process::id()));
        let mut entries: Vec<&Entry> = self.live.values().collect();
        entries.sort_by_key(|e| e.seq);
        let mut text = String::new();
        for e in entries {
            text.push_str(&encode(&e.ann, e.prev.as_ref()));
            text.push('\n');
        }
        let written = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
            if let Ok(meta) = fs::metadata(&target) {
                // Keep the journal's mode (say, group-readable) across the rename.
                f.set_permissions(meta.permissions())?;
            }
            f.sync_all()?;
            fs::rename(&tmp, &target)?;
            sync_dir(&target)
        })();
        match written {
            Ok(()) => {
                self.file_lines = self.live.len();
                self.read_lines = self.live.len() as u64;
                self.read_pos = text.len() as u64;
                self.held = File::open(&target).ok();
                self.file_id = self
                    .held
                    .as_ref()
                    .and_then(|f| f.metadata().ok())
                    .map(|m| file_id(&m));
                self.dirty = false;
                Ok(())
            }
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                self.dirty = true;
                Err(e)
            }
        }
    }
}

impl Drop for AnnotationStore {
    fn drop(&mut self) {
        // A last attempt for decisions a failed save kept in memory; the UI
        // has already retried and warned, so the result is not reported.
        if self.lock.is_some() && !self.pending.is_empty() {
            let _ = self.flush();
        }
    }
}

/// Create the journal if it does not exist, durably.
fn ensure_journal(path: &Path) -> Result<(), StoreOpenError> {
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(StoreOpenError::Io {
            path: path.to_path_buf(),
            error: io::Error::new(ErrorKind::IsADirectory, "it is a directory"),
        }),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            match OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(f) => {
                    // Best effort: an empty journal that vanishes in a crash loses nothing.
                    let _ = f.sync_all();
                    let _ = sync_dir(path);
                    Ok(())
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(open_error(path, e)),
            }
        }
        Err(e) => Err(open_error(path, e)),
    }
}

fn open_error(path: &Path, error: io::Error) -> StoreOpenError {
    let path = path.to_path_buf();
    match error.kind() {
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => {
            StoreOpenError::NotWritable { path, error }
        }
        _ => StoreOpenError::Io { path, error },
    }
}

/// Open the lock file and check that this filesystem can lock it.
fn open_lock(lock_path: &Path) -> Result<(Access, Option<File>), StoreOpenError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(lock_path)
        .map_err(|e| open_error(lock_path, e))?;
    match file.try_lock() {
        Ok(()) => {
            let _ = file.unlock();
            Ok((Access::ReadWrite, Some(file)))
        }
        // Another triage is writing right now: locks work.
        Err(TryLockError::WouldBlock) => Ok((Access::ReadWrite, Some(file))),
        // A filesystem without locks: two writers could lose each other's
        // decisions at compaction, so stay on the safe side.
        Err(TryLockError::Error(e)) => Ok((
            Access::ReadOnly {
                reason: format!("cannot lock {}: {e}", lock_path.display()),
            },
            None,
        )),
    }
}

/// Take the exclusive lock, waiting up to `wait` for another triage's write to end.
fn lock_within(file: &File, wait: Duration) -> io::Result<()> {
    let deadline = Instant::now() + wait;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    ErrorKind::WouldBlock,
                    "another triage has held the journal's lock for too long",
                ));
            }
            Err(TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// Append `lines` to the journal and fsync, leaving no partial event behind where possible.
///
/// Called with the lock held, after reading the journal up to `read_pos`;
/// returns the new end of the file and the file.
fn append_durably(path: &Path, lines: &[&str], read_pos: u64) -> io::Result<(u64, File)> {
    let mut file = OpenOptions::new().read(true).append(true).open(path)?;
    let meta = file.metadata()?;
    let len = meta.len();
    if len != read_pos {
        // Only possible if something other than triage wrote the file between
        // the read and now; the caller reads again on the next attempt.
        return Err(io::Error::other(
            "the journal changed while it was being saved; retrying",
        ));
    }
    let mut buf = Vec::new();
    if len > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
        // After a torn write the file ends mid-line; the first new event must
        // not be glued to it and lost with it.
        if last[0] != b'\n' {
            buf.push(b'\n');
        }
    }
    for line in lines {
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
    }
    let written = file.write_all(&buf).and_then(|()| file.sync_data());
    if let Err(e) = written {
        // The events stay pending and are written again, so drop any part of
        // them that did land (this also frees the space on a full disk).
        let _ = file.set_len(len);
        let _ = file.sync_data();
        return Err(e);
    }
    Ok((len + buf.len() as u64, file))
}

/// Remove temp files a crashed compaction left; called with the lock held, so none is in use.
fn remove_stale_temps(journal: &Path) {
    let (Some(name), Ok(entries)) = (journal.file_name(), fs::read_dir(parent_dir(journal))) else {
        return;
    };
    let prefix = format!("{}.tmp-", name.to_string_lossy());
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        let is_temp = file_name
            .strip_prefix(&prefix)
            .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()));
        if is_temp {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Make a rename or a file creation in `file`'s folder durable.
fn sync_dir(file: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(parent_dir(file))?.sync_all()
    }
    #[cfg(not(unix))]
    {
        // Other platforms cannot open a folder as a file; NTFS journals renames itself.
        let _ = file;
        Ok(())
    }
}

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
        s.collect_str(key)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<RecordKey, D::Error> {
        let s = String::deserialize(d)?;
        RecordKey::parse(&s).ok_or_else(|| D::Error::custom("a record key is 32 hex digits"))
    }
}

#[cfg(test)]
mod tests;
