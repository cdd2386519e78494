//! One journal file: its replay, appends, compaction, lock and bad lines.
//!
//! [`super::AnnotationStore`] holds one [`Journal`] per file it reads (one
//! per run, and the committed one beside a run in a read-only folder); the
//! store routes decisions to journals and shows their union.

use rustc_hash::{FxHashMap, FxHashSet};
use std::fs::{self, File, Metadata, OpenOptions, TryLockError};
use std::io::{self, BufRead, BufReader, ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::append::{Appender, DIRECT_MIN};
use super::{
    Access, Annotation, Line, Live, Prev, Prior, SaveError, Slot, Snapshot, StoreOpenError, encode,
    encode_into, event_id, folder_writable, parent_dir, parse_line, tick, with_suffix,
};
use crate::core::key::RecordKey;

/// How long a save waits for another triage to finish its write.
pub(super) const LOCK_WAIT: Duration = Duration::from_secs(5);

/// Unreadable lines kept in memory with their bytes, to be moved to the
/// side file; past either bound the lines stay in the journal instead.
const BAD_KEEP_LINES: usize = 100_000;
const BAD_KEEP_BYTES: usize = 16 << 20;

/// A decision applied in memory whose event is not durable yet (its line
/// is written from it when it is appended, [`encode_lines`]).
#[derive(Debug, Clone)]
pub(super) struct PendingEvent {
    /// Shared with the slot's entry in [`Journal::live`].
    pub(super) ann: Arc<Annotation>,
    pub(super) prev: Option<Arc<Prev>>,
    pub(super) resolves: Option<Vec<Prior>>,
}

impl PendingEvent {
    pub(super) fn new(
        ann: Arc<Annotation>,
        prev: Option<Arc<Prev>>,
        resolves: Option<Vec<Prior>>,
    ) -> PendingEvent {
        PendingEvent {
            ann,
            prev,
            resolves,
        }
    }

    /// The event's journal line, without its newline.
    pub(super) fn line(&self) -> String {
        encode(&self.ann, self.prev.as_deref(), self.resolves.as_deref())
    }

    fn slot(&self) -> Slot {
        let who = match self.resolves {
            Some(_) => None,
            None => Some(self.ann.reviewer),
        };
        (self.ann.key, who)
    }
}

/// A reviewer of this triage's own events, by its place in
/// [`Journal::own_reviewers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct OwnReviewer(usize);

/// A [`Slot`] of [`Journal::own`], its reviewer by number: finding one
/// among millions compares no text.
///
/// Hashed by its pair's key alone (a pair has at most a decision and a
/// resolution of this triage's here), so that it sits in the map where its
/// pair sits in the pairs' table: a large step put in that table's order
/// ([`super::AnnotationStore::order_for_lookups`]) records its events here
/// in one sweep too, not at random.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct OwnSlot {
    key: RecordKey,
    reviewer: Option<OwnReviewer>,
}

impl std::hash::Hash for OwnSlot {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.hash(state);
    }
}

/// A journal line that could not be read.
#[derive(Debug, Clone)]
pub(super) struct BadLine {
    pub(super) line: u64,
    pub(super) reason: String,
    /// The line's bytes, until they are moved to the side file.
    bytes: Vec<u8>,
    pub(super) moved_to: Option<PathBuf>,
    /// A line of a newer format: kept in place, never moved.
    pub(super) newer: bool,
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

/// What one pass over journal lines found.
#[derive(Default)]
struct Replay {
    recognised: usize,
    first_bad_complete: Option<u64>,
    /// The keys events touched, with what they held before the first event.
    touched: FxHashMap<RecordKey, Option<Snapshot>>,
}

/// One journal file and what this triage knows of it.
#[derive(Debug)]
pub(super) struct Journal {
    pub(super) path: PathBuf,
    pub(super) access: Access,
    /// Every key's newest event, cleared ones included.
    pub(super) live: Live,
    /// Which run files' pairs this journal keeps (indices into the run's
    /// files); `None`: every file's.
    pub(super) files: Option<Vec<u16>>,
    /// Events not yet durable, oldest first.
    pub(super) pending: Vec<PendingEvent>,
    /// How many of the newest pending events are not yet applied in
    /// memory: a bulk save queues its events, and they are applied while
    /// they are written ([`Journal::queue`]).
    unapplied: usize,
    /// The newest event this triage made durable here, per slot: written
    /// again if the file is replaced by a copy that lacks it. (Or one
    /// still pending, whose write failed: its slot is restored by writing
    /// it, not from here.)
    own: FxHashMap<OwnSlot, PendingEvent>,
    /// The reviewers of the events in `own`, numbered by their place here
    /// (this triage writes one reviewer's events, so one name).
    own_reviewers: Vec<String>,
    /// The [`event_id`] of every event read from the file, with the order
    /// in which this triage first saw it: an event seen before this
    /// triage's own is older than it. (One map for every event, not a
    /// vector per pair: a pair's events are told apart by their ids, which
    /// hash the key.)
    seen: FxHashMap<u64, u64>,
    /// The [`event_id`] of every event this triage wrote here, with its
    /// place in the same order, oldest first. A list, not more of `seen`:
    /// a save of a million decisions adds to it in one sweep, where a map
    /// would be looked into a million times at random. Only a journal put
    /// back from a copy asks for it ([`Journal::queue_lost_own_events`]).
    written: Vec<(u64, u64)>,
    /// The next place in that order.
    seen_next: u64,
    /// Unreadable lines of the file (and those already moved out of it).
    pub(super) bad: Vec<BadLine>,
    /// How many lines could not be read (newer ones included), listed or not.
    skipped: usize,
    bad_bytes: usize,
    /// More unreadable lines than are kept: compaction would lose some, so it is skipped.
    bad_overflow: bool,
    /// Non-blank lines in the journal file as far as this journal knows.
    file_lines: usize,
    /// A write failed part-way, so the file may hold junk this journal did not count.
    dirty: bool,
    /// Some line was written by a newer triage; compaction would destroy it.
    newer_format: bool,
    /// The lock file, locked around each write; `Some` once the journal
    /// exists on disk and access is read-write.
    pub(super) lock: Option<File>,
    /// How far the journal has been replayed, in bytes and lines.
    read_pos: u64,
    read_lines: u64,
    /// The file that was replayed; another one at the path means it was replaced.
    file_id: Option<FileId>,
    /// That file, held open so that its inode number cannot be reused by a
    /// new journal (which would then look like the same file).
    held: Option<File>,
    /// From how many bytes of lines (about [`LINE`] an event) an append
    /// goes around the page cache ([`super::append`]; tests lower it).
    pub(super) direct_from: usize,
    /// Annotations changed by other triages' events since the store last said.
    pub(super) merged: usize,
    /// This triage's decisions written again after the file lost them, since the store last said.
    pub(super) restored: usize,
}

impl Journal {
    fn empty(path: &Path, access: Access, files: Option<Vec<u16>>) -> Journal {
        Journal {
            path: path.to_path_buf(),
            access,
            live: Live::default(),
            files,
            pending: Vec::new(),
            unapplied: 0,
            own: FxHashMap::default(),
            own_reviewers: Vec::new(),
            seen: FxHashMap::default(),
            written: Vec::new(),
            seen_next: 0,
            bad: Vec::new(),
            skipped: 0,
            bad_bytes: 0,
            bad_overflow: false,
            file_lines: 0,
            dirty: false,
            newer_format: false,
            lock: None,
            read_pos: 0,
            read_lines: 0,
            file_id: None,
            held: None,
            direct_from: DIRECT_MIN,
            merged: 0,
            restored: 0,
        }
    }

    /// Open the journal at `path` for writing, replay it and compact it.
    ///
    /// A journal that does not exist yet is not created: the first save
    /// creates it and its lock ([`Journal::ensure_created`]), so viewing a
    /// run writes nothing. Its folder must be writable, though, or this
    /// says so now rather than at the first decision.
    pub(super) fn open(path: &Path, files: Option<Vec<u16>>) -> Result<Journal, StoreOpenError> {
        match fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                return Err(StoreOpenError::Io {
                    path: path.to_path_buf(),
                    error: io::Error::new(ErrorKind::IsADirectory, "it is a directory"),
                });
            }
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let folder = parent_dir(path);
                if !folder.is_dir() {
                    return Err(StoreOpenError::Io {
                        path: path.to_path_buf(),
                        error: io::Error::new(ErrorKind::NotFound, "its folder does not exist"),
                    });
                }
                if !folder_writable(folder) {
                    return Err(StoreOpenError::NotWritable {
                        path: path.to_path_buf(),
                        error: io::Error::new(
                            ErrorKind::PermissionDenied,
                            "cannot create files in its folder",
                        ),
                    });
                }
                return Ok(Journal::empty(path, Access::ReadWrite, files));
            }
            Err(e) => return Err(open_error(path, e)),
        }
        let (access, lock) = open_lock(&with_suffix(path, ".lock"))?;
        let mut journal = Journal::empty(path, access, files);
        journal.lock = lock;
        if let Some(lock) = &journal.lock {
            lock_within(lock, LOCK_WAIT).map_err(|error| StoreOpenError::Io {
                path: with_suffix(path, ".lock"),
                error,
            })?;
        }
        let loaded = journal.load();
        if loaded.is_ok() && journal.lock.is_some() {
            // Another triage only writes a temp file while it holds the lock.
            remove_stale_temps(path);
            // Compaction only tidies: the journal is complete as it is, so a
            // failure here (say a full disk) must not stop the reviewer.
            let _ = journal.compact_locked();
        }
        if let Some(lock) = &journal.lock {
            let _ = lock.unlock();
        }
        loaded?;
        Ok(journal)
    }

    /// Open a journal read-only without locking.
    pub(super) fn read(
        path: &Path,
        files: Option<Vec<u16>>,
        reason: &str,
    ) -> Result<Journal, StoreOpenError> {
        let access = Access::ReadOnly {
            reason: reason.to_string(),
        };
        let mut journal = Journal::empty(path, access, files);
        journal.load()?;
        Ok(journal)
    }

    pub(super) fn writable(&self) -> bool {
        self.access == Access::ReadWrite
    }

    /// Whether this journal keeps the pairs of run file `file`.
    pub(super) fn serves(&self, file: u16) -> bool {
        self.files.as_ref().is_none_or(|f| f.contains(&file))
    }

    /// Room for `additional` more pairs in memory (decisions about to be
    /// staged on pairs this journal has none for).
    pub(super) fn reserve(&mut self, additional: usize) {
        self.live.reserve(additional);
        self.own.reserve(additional);
    }

    /// Apply a decision in memory and queue its event (the two share it).
    pub(super) fn stage(
        &mut self,
        ann: Arc<Annotation>,
        prev: Option<Arc<Prev>>,
        resolves: Option<Vec<Prior>>,
    ) {
        self.live
            .put(ann.clone(), prev.clone(), resolves.clone(), tick());
        self.pending.push(PendingEvent::new(ann, prev, resolves));
    }

    /// Queue a decision whose event is applied in memory while the events
    /// are written ([`Journal::write_pending_locked`]), or by
    /// [`Journal::apply_unapplied`]: a bulk save of decisions on distinct
    /// pairs, so that the order in which they are applied changes nothing.
    pub(super) fn queue(&mut self, ann: Arc<Annotation>, prev: Option<Arc<Prev>>) {
        self.pending.push(PendingEvent::new(ann, prev, None));
        self.unapplied += 1;
    }

    /// [`Journal::queue`] of many events at once, built elsewhere: taken
    /// as they are when nothing else is pending.
    pub(super) fn queue_all(&mut self, events: Vec<PendingEvent>) {
        self.unapplied += events.len();
        if self.pending.is_empty() {
            self.pending = events;
        } else {
            self.pending.extend(events);
        }
    }

    /// Apply in memory the queued events not yet applied.
    pub(super) fn apply_unapplied(&mut self) {
        let from = self.pending.len() - std::mem::take(&mut self.unapplied);
        apply(&mut self.live, &self.pending[from..]);
    }

    /// Create the journal and its lock file if this is the first save.
    pub(super) fn ensure_created(&mut self) -> io::Result<()> {
        if self.lock.is_some() || !self.writable() {
            return Ok(());
        }
        ensure_journal(&self.path)?;
        let (access, lock) = open_lock(&with_suffix(&self.path, ".lock")).map_err(|e| match e {
            StoreOpenError::NotWritable { error, .. } | StoreOpenError::Io { error, .. } => error,
            other => io::Error::other(other.to_string()),
        })?;
        self.access = access;
        self.lock = lock;
        if self.lock.is_none() {
            return Err(io::Error::new(
                ErrorKind::Unsupported,
                "this filesystem cannot lock the journal",
            ));
        }
        Ok(())
    }

    /// A handle on the lock file, for a save that locks several journals at once.
    pub(super) fn lock_handle(&self) -> Option<io::Result<File>> {
        self.lock.as_ref().map(File::try_clone)
    }

    /// Make every pending event durable, or keep them all pending.
    pub(super) fn flush(&mut self) -> Result<(), SaveError> {
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
        let result = self.ensure_created().and_then(|()| {
            self.locked(|s| {
                // Others' events first: ours go after them, and win.
                s.catch_up()?;
                s.write_pending_locked()
            })
        });
        result.map_err(|error| self.save_error(error))
    }

    /// The error of a failed write, with how many events stay pending.
    pub(super) fn save_error(&self, error: io::Error) -> SaveError {
        if let Access::ReadOnly { reason } = &self.access {
            return SaveError::ReadOnly {
                path: self.path.clone(),
                reason: reason.clone(),
                pending: self.pending.len(),
            };
        }
        SaveError::Io {
            path: self.path.clone(),
            error,
            pending: self.pending.len(),
        }
    }

    /// Append the pending events, with the lock held and the journal caught
    /// up; the queued ones are applied in memory meanwhile, on another core.
    pub(super) fn write_pending_locked(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let journal_gone = matches!(
            fs::symlink_metadata(&self.path),
            Err(e) if e.kind() == ErrorKind::NotFound
        );
        // If the journal was deleted under us, appending would keep only the
        // newest events: write everything this journal knows instead (what
        // is queued included).
        if journal_gone {
            self.apply_unapplied();
            let result = self.write_snapshot();
            if result.is_ok() {
                let pending = std::mem::take(&mut self.pending);
                self.own_written(&pending);
            }
            return result.inspect_err(|_| self.dirty = true);
        }
        let from = self.pending.len() - std::mem::take(&mut self.unapplied);
        let Journal {
            path,
            pending,
            live,
            own,
            own_reviewers,
            written,
            seen_next,
            read_pos,
            direct_from,
            ..
        } = self;
        let pending: &[PendingEvent] = pending;
        let append = || {
            let events = pending
                .iter()
                .map(|p| (&*p.ann, p.prev.as_deref(), p.resolves.as_deref()));
            append_durably(path, events, *read_pos, *direct_from)
        };
        // While the events are written, they are applied (those queued):
        // at millions of decisions each takes seconds, and they share no
        // memory but the events. Recording them as this triage's own takes
        // seconds too, in two parts (the map of slots, the list of ids):
        // whichever side is done first takes the first part, and the
        // second if the other side is still busy.
        // Recorded before they are durable: if the write fails, they stay
        // pending, and a pending event's slot is never restored from `own`
        // ([`Journal::queue_lost_own_events`]); their ids are taken back
        // from `written`, which must list only events the file got.
        let wrote_before = written.len();
        let appended = {
            let slots = Mutex::new(Some((&mut *own, &mut *own_reviewers)));
            let ids = Mutex::new(Some((&mut *written, &mut *seen_next)));
            fn take<T>(part: &Mutex<Option<T>>) -> Option<T> {
                part.lock().unwrap_or_else(PoisonError::into_inner).take()
            }
            let remember_once = || {
                if let Some((own, own_reviewers)) = take(&slots) {
                    remember_slots(pending, own, own_reviewers);
                }
                if let Some((written, seen_next)) = take(&ids) {
                    remember_ids(pending, written, seen_next);
                }
            };
            let (appended, ()) = rayon::join(
                || {
                    let appended = append();
                    remember_once();
                    appended
                },
                || {
                    apply(live, &pending[from..]);
                    remember_once();
                },
            );
            appended
        };
        if appended.is_err() {
            written.truncate(wrote_before);
        }
        match appended {
            Ok((end, file)) => {
                self.file_lines += self.pending.len();
                self.read_lines += self.pending.len() as u64;
                self.read_pos = end;
                self.file_id = file.metadata().ok().map(|m| file_id(&m));
                self.held = Some(file);
                // (Its room given back too: at millions of events, 100 MB.)
                self.pending = Vec::new();
                Ok(())
            }
            Err(e) => {
                self.dirty = true;
                Err(e)
            }
        }
    }

    /// Record these events as this triage's own, durable here.
    fn own_written(&mut self, events: &[PendingEvent]) {
        remember_own(
            events,
            &mut self.own,
            &mut self.own_reviewers,
            &mut self.written,
            &mut self.seen_next,
        );
    }

    /// Merge what others appended (or a replaced file) and write this
    /// triage's decisions the file lost; see [`super::AnnotationStore::refresh`].
    pub(super) fn refresh(&mut self) -> io::Result<()> {
        let unchanged = match fs::metadata(&self.path) {
            Ok(m) => Some(file_id(&m)) == self.file_id && m.len() == self.read_pos,
            // A vanished journal is rewritten by the next save.
            Err(e) if e.kind() == ErrorKind::NotFound => true,
            Err(e) => return Err(e),
        };
        if unchanged {
            return Ok(());
        }
        if self.lock.is_none() && self.writable() {
            // Another triage created the journal since this one opened it:
            // take its lock too, so a line it is appending is never read half-written.
            self.ensure_created()?;
        }
        // (`locked` holds the lock outside `self` while `f` runs.)
        let can_write = self.writable() && self.lock.is_some();
        self.locked(|s| {
            s.catch_up()?;
            if can_write {
                s.write_pending_locked()?;
            }
            Ok(())
        })
    }

    /// Rewrite the journal as one event per key; see [`super::AnnotationStore::compact`].
    pub(super) fn compact(&mut self) -> io::Result<()> {
        if self.lock.is_none() || !self.pending.is_empty() || self.newer_format {
            return Ok(());
        }
        self.locked(Journal::compact_locked)
    }

    /// [`Journal::compact`] with the lock held.
    fn compact_locked(&mut self) -> io::Result<()> {
        self.catch_up()?;
        // Decisions the file lost and that were queued again: write them first.
        self.write_pending_locked()?;
        if self.newer_format || self.bad_overflow {
            return Ok(());
        }
        let unmoved = self.bad.iter().any(|b| b.moved_to.is_none() && !b.newer);
        if !self.dirty && !unmoved && self.file_lines == self.live.slots {
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

    /// Move the unreadable lines not moved yet to `<journal>.unreadable`
    /// (appended, fsynced), before a snapshot leaves them out.
    fn move_bad_lines(&mut self) -> io::Result<()> {
        if !self.bad.iter().any(|b| b.moved_to.is_none() && !b.newer) {
            return Ok(());
        }
        let side = with_suffix(&self.path, ".unreadable");
        let mut text = Vec::new();
        for b in self.bad.iter().filter(|b| b.moved_to.is_none() && !b.newer) {
            text.extend_from_slice(&b.bytes);
            text.push(b'\n');
        }
        let mut f = OpenOptions::new().create(true).append(true).open(&side)?;
        f.write_all(&text)?;
        f.sync_all()?;
        sync_dir(&side)?;
        for b in self
            .bad
            .iter_mut()
            .filter(|b| b.moved_to.is_none() && !b.newer)
        {
            b.moved_to = Some(side.clone());
            b.bytes = Vec::new();
        }
        self.bad_bytes = 0;
        Ok(())
    }

    /// Replace the journal by its newest event per key, oldest first: temp
    /// file, fsync, rename, folder fsync. Unreadable lines go to the side
    /// file first; a journal that is no regular file (a device) is never replaced.
    fn write_snapshot(&mut self) -> io::Result<()> {
        // Renaming over a symlink would replace the link, not the journal it points to.
        let target = match fs::symlink_metadata(&self.path) {
            Ok(m) if m.file_type().is_symlink() => {
                fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone())
            }
            _ => self.path.clone(),
        };
        if let Ok(m) = fs::metadata(&target)
            && !m.is_file()
        {
            self.dirty = true;
            return Err(io::Error::other(
                "the journal is not a regular file, so it is only appended to",
            ));
        }
        if let Err(e) = self.move_bad_lines() {
            self.dirty = true;
            return Err(e);
        }
        let tmp = with_suffix(&target, &format!(".tmp-{}", std::process::id()));
        let mut entries: Vec<_> = self.live.entries().collect();
        entries.sort_unstable_by_key(|e| e.seq);
        let text = encode_lines(
            entries
                .iter()
                .map(|e| (&*e.ann, e.prev.as_deref(), e.resolves.as_deref())),
        );
        let written = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)?;
            f.write_all(&text)?;
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
                self.file_lines = self.live.slots;
                self.read_lines = self.live.slots as u64;
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
        if !meta.is_file() {
            // A device or a pipe (say /dev/full, to test a full disk) holds
            // no events, and reading one could never end.
            return Ok(());
        }
        let replay = self.replay(file, &meta, false).map_err(read_err)?;
        if let (0, Some(line)) = (replay.recognised, replay.first_bad_complete) {
            // Most likely `--annotations` names the run file or some other
            // file: appending to it, or compacting it, would destroy it.
            return Err(StoreOpenError::NotAJournal { path, line });
        }
        Ok(())
    }

    /// Read what was appended to the journal since the last read, or all of
    /// it again if the file at the path was replaced or shrank; keep pending
    /// decisions on top. Counts the annotations that changed in `merged`,
    /// and returns their keys.
    ///
    /// A replaced file (another triage's compaction, or an older copy put
    /// back, as `git checkout` does) is merged by event: this triage's
    /// decisions that the new file lacks, and that nothing newer replaced,
    /// are queued to be written again and counted in `restored`.
    pub(super) fn catch_up(&mut self) -> io::Result<FxHashSet<RecordKey>> {
        let file = match File::open(&self.path) {
            Ok(f) => f,
            // Deleted: the next save writes everything this journal knows.
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(FxHashSet::default()),
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        if meta.is_dir() {
            return Err(io::Error::new(ErrorKind::IsADirectory, "it is a directory"));
        }
        if !meta.is_file() {
            // A device or a pipe (say /dev/full) is no journal to share: nothing to merge.
            return Ok(FxHashSet::default());
        }
        if Some(file_id(&meta)) == self.file_id && meta.len() == self.read_pos {
            return Ok(FxHashSet::default());
        }
        // Without inode numbers (not Unix), a journal another triage
        // compacted cannot be told from one it appended to: read it all again.
        let restart =
            cfg!(not(unix)) || Some(file_id(&meta)) != self.file_id || meta.len() < self.read_pos;
        let before = restart.then(|| self.live.values());
        if restart {
            self.live.clear();
            self.read_pos = 0;
            self.read_lines = 0;
            self.file_lines = 0;
            // Lines already moved to the side file stay listed; the rest are read again.
            self.bad.retain(|b| b.moved_to.is_some());
            self.skipped = self.bad.len();
            self.bad_bytes = 0;
            self.bad_overflow = false;
            self.newer_format = false;
        }
        let replay = self.replay(file, &meta, !restart)?;
        if restart {
            self.queue_lost_own_events();
        }
        // (Every pending event, those queued and not applied yet included.)
        self.unapplied = 0;
        apply(&mut self.live, &self.pending);
        let now = |s: &Self, k: &RecordKey| s.live.snapshot(k);
        let mut changed: FxHashSet<RecordKey> = replay
            .touched
            .iter()
            .filter(|(k, was)| now(self, k) != **was)
            .map(|(k, _)| *k)
            .collect();
        if let Some(before) = before {
            let after = self.live.values();
            changed.extend(
                before
                    .iter()
                    .filter(|(k, v)| after.get(*k) != Some(*v))
                    .map(|(k, _)| *k),
            );
            changed.extend(after.keys().filter(|k| !before.contains_key(*k)));
        }
        self.merged += changed.len();
        Ok(changed)
    }

    /// After a replaced file was replayed: queue again each of this
    /// triage's durable decisions that the file lost, unless the file
    /// holds a later event for that pair (someone decided since).
    ///
    /// The file's event for a pair is older than this triage's when this
    /// triage saw it before it wrote its own (the file went back to it); an
    /// event it had not seen then came after (another triage's, kept
    /// through a compaction). No event at all loses the decision, unless it
    /// was a clear.
    fn queue_lost_own_events(&mut self) {
        let mut lost: Vec<PendingEvent> = Vec::new();
        // Where this triage first saw an event: read from the file, or
        // written by this triage (then the earlier of the two).
        let mut written: FxHashMap<u64, u64> = FxHashMap::default();
        for &(id, at) in &self.written {
            written.entry(id).or_insert(at);
        }
        // A pending event's slot gets it when it is written. (A set: after
        // a failed save of a million decisions, a million are pending.)
        let pending: FxHashSet<Slot> = self.pending.iter().map(PendingEvent::slot).collect();
        for ev in self.own.values() {
            let slot = &ev.slot();
            if pending.contains(slot) {
                continue;
            }
            let pos = |id: u64| {
                let read = self.seen.get(&id).copied();
                let wrote = written.get(&id).copied();
                read.into_iter().chain(wrote).min()
            };
            let held = match self.live.slot(slot) {
                None => ev.ann.is_empty(),
                Some(f) => {
                    let theirs = pos(event_id(&f.ann, f.prev.as_deref(), f.resolves.as_deref()));
                    let ours = pos(event_id(
                        &ev.ann,
                        ev.prev.as_deref(),
                        ev.resolves.as_deref(),
                    ));
                    !matches!((theirs, ours), (Some(t), Some(o)) if t < o)
                }
            };
            if !held {
                let prev = match ev.resolves {
                    Some(_) => None,
                    None => self.live.slot(slot).map(|f| {
                        Arc::new(Prev {
                            category: f.ann.category,
                            note: f.ann.note.clone(),
                        })
                    }),
                };
                lost.push(PendingEvent::new(ev.ann.clone(), prev, ev.resolves.clone()));
            }
        }
        lost.sort_by(|a, b| (&a.ann.at, a.ann.key).cmp(&(&b.ann.at, b.ann.key)));
        self.restored += lost.len();
        self.pending.extend(lost);
    }

    /// Remember that this journal held this event, read from its file.
    fn note_seen(&mut self, ann: &Annotation, prev: Option<&Prev>, resolves: Option<&[Prior]>) {
        let id = event_id(ann, prev, resolves);
        if let std::collections::hash_map::Entry::Vacant(e) = self.seen.entry(id) {
            e.insert(self.seen_next);
            self.seen_next += 1;
        }
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
                Line::Event(ann, prev, resolves) => {
                    out.recognised += 1;
                    self.note_seen(&ann, prev.as_ref(), resolves.as_deref());
                    if count && !out.touched.contains_key(&ann.key) {
                        let was = self.live.snapshot(&ann.key);
                        out.touched.insert(ann.key, was);
                    }
                    self.live
                        .put(Arc::new(*ann), prev.map(Arc::new), resolves, tick());
                }
                Line::Newer => {
                    out.recognised += 1;
                    self.newer_format = true;
                    self.note_bad(
                        line_no,
                        "written by a newer triage; kept as it is".to_string(),
                        &[],
                        true,
                    );
                }
                Line::Bad(reason) => {
                    // An incomplete last line is a torn write, expected after a
                    // crash; a complete bad line may mean this is not a journal.
                    if complete && out.first_bad_complete.is_none() {
                        out.first_bad_complete = Some(line_no);
                    }
                    let reason = if complete {
                        reason
                    } else {
                        format!("cut off before its end (a write that did not finish): {reason}")
                    };
                    let raw = buf.strip_suffix(b"\n").unwrap_or(&buf);
                    let raw = raw.strip_suffix(b"\r").unwrap_or(raw).to_vec();
                    self.note_bad(line_no, reason, &raw, false);
                }
            }
        }
        self.file_id = Some(file_id(meta));
        self.held = Some(reader.into_inner());
        Ok(out)
    }

    /// Remember an unreadable line (its bytes, while within the bounds).
    fn note_bad(&mut self, line: u64, reason: String, bytes: &[u8], newer: bool) {
        self.skipped += 1;
        if self.bad.len() >= BAD_KEEP_LINES || self.bad_bytes + bytes.len() > BAD_KEEP_BYTES {
            self.bad_overflow = true;
            return;
        }
        self.bad_bytes += bytes.len();
        self.bad.push(BadLine {
            line,
            reason,
            bytes: bytes.to_vec(),
            moved_to: None,
            newer,
        });
    }

    /// How many lines could not be read (moved ones included), and the first one's number.
    pub(super) fn skipped(&self) -> (usize, Option<u64>) {
        (self.skipped, self.bad.first().map(|b| b.line))
    }

    /// Every line seen that could not be read, moved ones included; and
    /// whether more were seen than are listed.
    pub(super) fn bad_lines(&self) -> (&[BadLine], bool) {
        (&self.bad, self.bad_overflow)
    }

    /// Run `f` holding the journal's lock (without one for a read-only journal).
    pub(super) fn locked<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> io::Result<T>,
    ) -> io::Result<T> {
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

    /// Write the pending events to a recovery file beside the journal
    /// (appended, fsynced); their lines are returned when that fails too.
    pub(super) fn recover(&self) -> Result<PathBuf, (io::Error, Vec<String>)> {
        let path = with_suffix(&self.path, ".recovered.jsonl");
        let text = encode_lines(
            self.pending
                .iter()
                .map(|p| (&*p.ann, p.prev.as_deref(), p.resolves.as_deref())),
        );
        let written = (|| {
            let mut f = OpenOptions::new().create(true).append(true).open(&path)?;
            f.write_all(&text)?;
            f.sync_all()?;
            sync_dir(&path)
        })();
        match written {
            Ok(()) => Ok(path),
            Err(e) => Err((e, self.pending.iter().map(PendingEvent::line).collect())),
        }
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        // A last attempt for decisions a failed save kept in memory; the UI
        // has already retried and warned, so the result is not reported.
        if self.lock.is_some() && !self.pending.is_empty() {
            let _ = self.flush();
        }
    }
}

/// Create the journal if it does not exist, durably.
fn ensure_journal(path: &Path) -> io::Result<()> {
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(io::Error::new(ErrorKind::IsADirectory, "it is a directory")),
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
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

pub(super) fn open_error(path: &Path, error: io::Error) -> StoreOpenError {
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
pub(super) fn lock_within(file: &File, wait: Duration) -> io::Result<()> {
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

/// Events encoded from this many on are encoded on rayon's threads, in
/// chunks of this many, each into a buffer of its own.
pub(super) const ENCODE_CHUNK: usize = 8192;

/// One event to encode: the annotation, what it replaced, what it resolves.
pub(super) type EventRef<'a> = (&'a Annotation, Option<&'a Prev>, Option<&'a [Prior]>);

/// The journal lines of these events, in order, each ended by a newline.
pub(super) fn encode_lines<'a, I>(events: I) -> Vec<u8>
where
    I: ExactSizeIterator<Item = EventRef<'a>>,
{
    let mut out = Vec::with_capacity(events.len() * LINE);
    let appended: io::Result<()> = encode_in_stretches(events, &mut |lines| {
        out.extend_from_slice(lines);
        Ok(())
    });
    appended.expect("appending to a vector cannot fail");
    out
}

/// About one line's length, to size the buffers once.
const LINE: usize = 256;

/// Encode these events' journal lines, in order, each ended by a newline,
/// and hand them to `sink` a stretch at a time. From two chunks on, the
/// lines are encoded on rayon's threads a round of chunks at a time, into
/// buffers the next round reuses: a save of millions of decisions holds
/// one round of lines in memory, not all of them, and touches no fresh
/// pages after its first round. Stops at `sink`'s first error.
fn encode_in_stretches<'a, I>(
    events: I,
    sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()>
where
    I: ExactSizeIterator<Item = EventRef<'a>>,
{
    // A few chunks per thread, so that a slow chunk does not idle the others.
    let round = rayon::current_num_threads().max(1) * 4;
    encode_in_rounds(events, round, sink)
}

/// [`encode_in_stretches`] with `round` chunks encoded at a time.
pub(super) fn encode_in_rounds<'a, I>(
    events: I,
    round: usize,
    sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()>
where
    I: ExactSizeIterator<Item = EventRef<'a>>,
{
    fn encode_all<'a>(events: impl Iterator<Item = EventRef<'a>>, out: &mut Vec<u8>) {
        for (ann, prev, resolves) in events {
            encode_into(out, ann, prev, resolves);
            out.push(b'\n');
        }
    }
    if events.len() < 2 * ENCODE_CHUNK {
        let mut out = Vec::with_capacity(events.len() * LINE);
        encode_all(events, &mut out);
        return sink(&out);
    }
    use rayon::prelude::*;
    let events: Vec<EventRef<'a>> = events.collect();
    let round = round.max(1);
    let mut buffers: Vec<Vec<u8>> = (0..round)
        .map(|_| Vec::with_capacity(ENCODE_CHUNK * LINE))
        .collect();
    for stretch in events.chunks(round * ENCODE_CHUNK) {
        let chunks = stretch.chunks(ENCODE_CHUNK);
        let used = chunks.len();
        buffers[..used]
            .par_iter_mut()
            .zip(stretch.par_chunks(ENCODE_CHUNK))
            .for_each(|(out, chunk)| {
                out.clear();
                encode_all(chunk.iter().copied(), out);
            });
        for out in &buffers[..used] {
            sink(out)?;
        }
    }
    Ok(())
}

/// Append these events' lines to the journal and fsync, leaving no partial event behind where possible.
///
/// Called with the lock held, after reading the journal up to `read_pos`;
/// returns the new end of the file and the file.
fn append_durably<'a, I>(
    path: &Path,
    events: I,
    read_pos: u64,
    direct_from: usize,
) -> io::Result<(u64, File)>
where
    I: ExactSizeIterator<Item = EventRef<'a>>,
{
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
    let mut glue: &[u8] = b"";
    if len > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
        // After a torn write the file ends mid-line; the first new event must
        // not be glued to it and lost with it.
        if last[0] != b'\n' {
            glue = b"\n";
        }
    }
    let around = events.len() * LINE >= direct_from;
    let mut appender = Appender::new(&mut file, len, around);
    let written = appender
        .write(glue)
        .and_then(|()| encode_in_stretches(events, &mut |lines| appender.write(lines)))
        .and_then(|()| appender.finish())
        .and_then(|end| file.sync_data().map(|()| end));
    let end = match written {
        Ok(end) => end,
        Err(e) => {
            // The events stay pending and are written again, so drop any part of
            // them that did land (this also frees the space on a full disk).
            let _ = file.set_len(len);
            let _ = file.sync_data();
            return Err(e);
        }
    };
    Ok((end, file))
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

/// Apply these events in memory, oldest first.
fn apply(live: &mut Live, events: &[PendingEvent]) {
    // (Counted only where they could be enough to hold the filing.)
    let clears = match events.len() >= super::REFILE_MIN {
        true => events.iter().filter(|ev| ev.ann.is_empty()).count(),
        false => 0,
    };
    live.putting(clears, |live| {
        for ev in events {
            live.put(ev.ann.clone(), ev.prev.clone(), ev.resolves.clone(), tick());
        }
    });
}

/// Record events written (or being written) as this triage's own: each
/// the newest of its slot in `own`, and its id in `written`, in order.
fn remember_own(
    events: &[PendingEvent],
    own: &mut FxHashMap<OwnSlot, PendingEvent>,
    own_reviewers: &mut Vec<String>,
    written: &mut Vec<(u64, u64)>,
    seen_next: &mut u64,
) {
    remember_ids(events, written, seen_next);
    remember_slots(events, own, own_reviewers);
}

/// [`remember_own`]'s list of ids, in order.
fn remember_ids(events: &[PendingEvent], written: &mut Vec<(u64, u64)>, seen_next: &mut u64) {
    use rayon::prelude::*;
    // (Each id hashes a whole event: on every core free for it.)
    let first = *seen_next;
    written.par_extend(
        events
            .par_iter()
            .with_min_len(1 << 12)
            .enumerate()
            .map(|(i, ev)| {
                let id = event_id(&ev.ann, ev.prev.as_deref(), ev.resolves.as_deref());
                (id, first + i as u64)
            }),
    );
    *seen_next += events.len() as u64;
}

/// [`remember_own`]'s map of slots: each event the newest of its own.
fn remember_slots(
    events: &[PendingEvent],
    own: &mut FxHashMap<OwnSlot, PendingEvent>,
    own_reviewers: &mut Vec<String>,
) {
    for ev in events {
        let who = match ev.resolves {
            Some(_) => None,
            None => {
                let name = ev.ann.reviewer.as_str();
                let at = match own_reviewers.iter().position(|r| r == name) {
                    Some(at) => at,
                    None => {
                        own_reviewers.push(name.to_string());
                        own_reviewers.len() - 1
                    }
                };
                Some(OwnReviewer(at))
            }
        };
        let slot = OwnSlot {
            key: ev.ann.key,
            reviewer: who,
        };
        own.insert(slot, ev.clone());
    }
}
