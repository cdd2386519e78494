//! The index of a run: what the loader made of its files, kept for the
//! screen, and the reading of one pair's detail.
//!
//! [`open_run`] checks every path up front (a missing file or a directory is
//! a one-line error before any terminal set-up) and returns an empty
//! [`RunIndex`] plus a [`Loader`] whose thread reads the files once, front to
//! back ([`super::load`]), and sends [`Batch`]es of compact [`PairRow`]s and
//! [`Problem`]s. The index keeps byte offsets and a small summary per pair; a
//! pair's payload is read again and parsed only when it is shown
//! ([`RunIndex::load_pair`]). A bad line never stops the load: it becomes a
//! problem with its file, line and reason. Record keys are read only for the
//! rows that need one ([`keys`]).

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::column::Column;
use super::derive::{Derived, Status, derive};
use super::formats::Format;
use super::key::{RecordKey, record_key};
use super::load::batch::Batch;
use super::load::chunks;
use super::load::line::ParseMode;
use super::load::open::{OpenError, RunFile, open_input};
use super::model::{PairRecord, Policy};
use super::problem::{Problem, ProblemCounts, ProblemKind};
use super::record::{RecordError, map_record};
use super::row::{Loc, NO_SYM, PairRow, Pos, RowLabels, Sym};

pub mod inputs;
pub mod keys;
pub mod labels;
pub mod lines;
pub mod locs;
pub mod strings;

use keys::RowKeys;
pub use labels::LabelSets;
use locs::Locs;
use strings::Strings;

/// Lines longer than this become a problem unless the caller sets another cap.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// The index of a run: files, interned strings, one row per pair, problems.
#[derive(Debug, Default)]
pub struct RunIndex {
    pub files: Vec<RunFile>,
    /// The interned strings, end to end in one buffer (see [`Strings`]).
    strings: Strings,
    /// Each distinct (contract, schema, model) triple; [`RowLabels::versions`]
    /// indexes it.
    versions: Vec<[Sym; 3]>,
    /// The policy of each versions id (the same triple with two policies
    /// is two ids), beside [`RunIndex::versions`].
    policies: Vec<Option<Policy>>,
    /// One row per pair, in file order, stored in chunks (see [`Column`]).
    /// Rows come with their labels ([`RunIndex::apply`],
    /// [`RunIndex::push_row`]); a row added to this column directly reads
    /// as recording none.
    pub rows: Column<PairRow>,
    /// Each row's line number and length, beside the rows' positions
    /// (see [`Locs`] and [`RunIndex::loc`]).
    locs: Locs,
    /// Each row's status, one byte per row, appended with the rows by
    /// [`RunIndex::apply`]: the list and the query scan it instead of the
    /// whole rows. See [`RunIndex::statuses`].
    statuses: Column<Status>,
    /// Each row's family, transformation, versions id and repetition as
    /// the code of a distinct set (see [`LabelSets`]).
    labels: LabelSets,
    /// The problems kept with their line: the first
    /// [`crate::core::problem::KEPT_PER_KIND`] of each kind the loader found.
    pub problems: Vec<Problem>,
    /// The problems past those, counted per kind.
    pub unlisted: ProblemCounts,
    /// Lines that could not be opened (problems that skip a line), counted
    /// or kept.
    pub skipped_lines: usize,
    pub failures: usize,
    pub bytes_total: u64,
    pub bytes_read: u64,
    pub done: bool,
    pub elapsed: Duration,
    /// Record keys of the rows that need one (see [`keys`]).
    keys: RowKeys,
    /// The digest of each row's inputs, beside the rows (see [`inputs`]).
    inputs: Column<crate::core::row::InputsDigest>,
    /// How many rows [`RunIndex::check_inputs`] last checked.
    inputs_checked: usize,
    /// The cases that check warned about: no other case of those rows can
    /// warn in any part of them (see [`RunIndex::input_warnings`]).
    warned_cases: inputs::CaseSet,
    /// That check's regenerated trials, by first row: the whole run's, so
    /// that a summary of every pair need not sort the rows again.
    regenerated: std::sync::Arc<[inputs::Regenerated]>,
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
        self.strings.get(s).unwrap_or("")
    }

    /// Row `i`'s location: its position, line number and length. A row
    /// added to [`RunIndex::rows`] directly, or by a batch without
    /// locations, reads as line 0 of length 0.
    pub fn loc(&self, i: usize) -> Loc {
        let pos = |j: usize| self.rows.get(j).map(|r| r.pos);
        self.locs.get(i, pos).unwrap_or_else(|| Loc {
            pos: pos(i).unwrap_or_default(),
            line: 0,
            len: 0,
        })
    }

    /// Each row's status, in row order, when the column covers every row
    /// (rows are added by [`RunIndex::apply`]); `None` if `rows` was set
    /// another way, and then the rows themselves must be read.
    pub fn statuses(&self) -> Option<&Column<Status>> {
        (self.statuses.len() == self.rows.len()).then_some(&self.statuses)
    }

    /// The rows whose status `admits` says yes to, in row order, into `out`
    /// (cleared first): one byte a row read, on every core. `false`, with
    /// `out` untouched, when there is no status column ([`RunIndex::statuses`]).
    pub fn rows_with_status(&self, admits: impl Fn(Status) -> bool, out: &mut Vec<u32>) -> bool {
        use rayon::prelude::*;
        let Some(col) = self.statuses() else {
            return false;
        };
        let mut table = [false; Status::ALL.len()];
        for s in Status::ALL {
            table[s as usize] = admits(s);
        }
        // Each index is written, and the count moves on only for a kept
        // one: no branch on the status, whose order is random.
        const BLOCK: usize = 1024;
        let parts: Vec<Vec<u32>> = col
            .par_slices()
            .map(|(first, slice)| {
                let mut kept = Vec::new();
                let mut block = [0u32; BLOCK];
                for (k, stretch) in slice.chunks(BLOCK).enumerate() {
                    let start = first + k * BLOCK;
                    let mut n = 0;
                    for (j, &s) in stretch.iter().enumerate() {
                        block[n] = (start + j) as u32;
                        n += usize::from(table[s as usize]);
                    }
                    kept.extend_from_slice(&block[..n]);
                }
                kept
            })
            .collect();
        out.clear();
        out.reserve(parts.iter().map(Vec::len).sum());
        for p in &parts {
            out.extend_from_slice(p);
        }
        true
    }

    /// Each row's labels as a code (see [`LabelSets`]).
    pub fn label_sets(&self) -> &LabelSets {
        &self.labels
    }

    /// Row `i`'s family ([`NO_SYM`] when not recorded).
    #[inline]
    pub fn family(&self, i: usize) -> Sym {
        self.labels.family(i)
    }

    /// Row `i`'s transformation ([`NO_SYM`] when not recorded).
    #[inline]
    pub fn transformation(&self, i: usize) -> Sym {
        self.labels.transformation(i)
    }

    /// Row `i`'s recorded repetition.
    #[inline]
    pub fn repetition(&self, i: usize) -> Option<u32> {
        self.labels.repetition(i)
    }

    /// Row `i`'s versions id ([`RowLabels::versions`]).
    #[inline]
    pub fn versions_id_of(&self, i: usize) -> u32 {
        self.labels.versions(i)
    }

    /// Row `i`'s values kept beside the row.
    pub fn labels(&self, i: usize) -> RowLabels {
        self.labels.get(i).copied().unwrap_or_default()
    }

    /// Every interned string, in id order.
    pub fn strings(&self) -> &Strings {
        &self.strings
    }

    /// Row `i`'s (contract, schema, model) triple ([`NO_SYM`] for each
    /// when the row's id is not in the table).
    pub fn versions_of(&self, i: usize) -> [Sym; 3] {
        self.versions
            .get(self.versions_id_of(i) as usize)
            .copied()
            .unwrap_or([NO_SYM; 3])
    }

    /// Row `i`'s contract version.
    pub fn contract(&self, i: usize) -> Sym {
        self.versions_of(i)[0]
    }

    /// Row `i`'s state schema version.
    pub fn schema(&self, i: usize) -> Sym {
        self.versions_of(i)[1]
    }

    /// Row `i`'s model id.
    pub fn model(&self, i: usize) -> Sym {
        self.versions_of(i)[2]
    }

    /// The thresholds that routed row `i`, when its line records them.
    pub fn policy(&self, i: usize) -> Option<Policy> {
        self.policies
            .get(self.versions_id_of(i) as usize)
            .copied()
            .flatten()
    }

    /// The id of a (contract, schema, model) triple for [`RowLabels::versions`],
    /// adding it to the table when new: for rows built outside the loader.
    pub fn versions_id(&mut self, triple: [Sym; 3]) -> u32 {
        self.policies.resize(self.versions.len(), None);
        match (0..self.versions.len())
            .position(|i| self.versions[i] == triple && self.policies[i].is_none())
        {
            Some(i) => i as u32,
            None => {
                self.versions.push(triple);
                self.policies.push(None);
                (self.versions.len() - 1) as u32
            }
        }
    }

    /// Add one row built outside the loader, with its labels (tests and
    /// tools that make rows by hand).
    pub fn push_row(&mut self, row: PairRow, labels: RowLabels) {
        self.apply(Batch {
            rows: vec![row],
            labels: vec![labels],
            ..Batch::default()
        });
    }

    /// Merge a batch from the loader.
    pub fn apply(&mut self, b: Batch) {
        self.strings.extend(b.strings);
        for full in b.shared {
            self.strings.share(full);
        }
        // A batch built by hand may leave its policies out: none recorded.
        self.policies.resize(self.versions.len(), None);
        self.policies.extend(b.policies);
        self.versions.extend(b.versions);
        self.policies.resize(self.versions.len(), None);
        self.failures += b.rows.iter().filter(|r| r.status().is_failure()).count();
        self.skipped_lines += b.problems.iter().filter(|p| p.kind.skips_line()).count();
        if self.statuses.len() != self.rows.len() {
            // The rows were set some other way: start the column again.
            self.statuses = self.rows.iter().map(|r| r.status()).collect();
        }
        self.statuses.extend(b.rows.iter().map(|r| r.status()));
        // Rows set some other way, or a batch without labels (or with
        // fewer than rows): none recorded.
        let none = RowLabels::default();
        for _ in self.labels.len()..self.rows.len() {
            self.labels.push(none);
        }
        for k in 0..b.rows.len() {
            self.labels.push(b.labels.get(k).copied().unwrap_or(none));
        }
        // Rows set some other way, or a batch without locations: the
        // row's position only.
        let at = |pos: Pos| Loc {
            pos,
            line: 0,
            len: 0,
        };
        for i in self.locs.len()..self.rows.len() {
            self.locs.push(at(self.rows[i].pos));
        }
        for (k, r) in b.rows.iter().enumerate() {
            let loc = b
                .locs
                .get(k)
                .map_or(at(r.pos), |l| Loc { pos: r.pos, ..*l });
            self.locs.push(loc);
        }
        // Rows set some other way, or a batch without digests: none recorded.
        self.inputs.resize(self.rows.len(), Default::default());
        self.rows.extend(b.rows);
        self.inputs.extend(b.inputs);
        self.inputs.resize(self.rows.len(), Default::default());
        self.problems.extend(b.problems);
        self.skipped_lines += b.unlisted.skipped() as usize;
        self.unlisted.merge(&b.unlisted);
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

    /// Every problem found, kept or only counted.
    pub fn problem_total(&self) -> usize {
        self.problems.len() + self.unlisted.total() as usize
    }

    /// Every problem found, kept or only counted, per kind.
    pub fn problem_counts(&self) -> ProblemCounts {
        let mut c = self.unlisted.clone();
        for p in &self.problems {
            c.add(p.kind, 1);
        }
        c
    }

    /// The names of the inputs, joined for a status bar.
    pub fn display_name(&self) -> String {
        match self.files.len() {
            0 => String::new(),
            1 => self.files[0].display.clone(),
            n => format!("{} (+{} more)", self.files[0].display, n - 1),
        }
    }

    /// The formats the inputs were read as (detected or chosen with
    /// `--from`), each once, in the order of the files, joined with `+`:
    /// `promptfoo`, or `native+inspect` for a mix; empty with no input.
    pub fn format_name(&self) -> String {
        let mut names: Vec<&str> = Vec::new();
        for f in &self.files {
            if !names.contains(&f.format.name()) {
                names.push(f.format.name());
            }
        }
        names.join("+")
    }

    /// Read a pair's line again from its file.
    pub fn read_line(&self, loc: Loc) -> io::Result<Vec<u8>> {
        let f = self
            .files
            .get(loc.file() as usize)
            .ok_or_else(|| io::Error::other("no such input file"))?;
        let mut buf = vec![0u8; loc.len as usize];
        f.read_at(&mut buf, loc.offset())?;
        Ok(buf)
    }

    /// Read a pair's line again from its position alone, up to its newline
    /// (or the end of the file), without the line's end (`\r\n` or `\n`):
    /// for a row whose number is not at hand.
    pub fn read_line_from(&self, pos: Pos) -> io::Result<Vec<u8>> {
        let f = self
            .files
            .get(pos.file() as usize)
            .ok_or_else(|| io::Error::other("no such input file"))?;
        let mut line = Vec::new();
        let mut buf = vec![0u8; 4096];
        loop {
            let n = f.read_some_at(&mut buf, pos.offset() + line.len() as u64)?;
            match memchr::memchr(b'\n', &buf[..n]) {
                Some(end) => {
                    line.extend_from_slice(&buf[..end]);
                    break;
                }
                None => line.extend_from_slice(&buf[..n]),
            }
            if n == 0 {
                break;
            }
            if buf.len() < 1 << 20 {
                buf.resize(buf.len() * 2, 0);
            }
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Ok(line)
    }

    /// The row whose line starts at `pos`, if any (a scan of every row:
    /// for messages).
    pub fn row_at(&self, pos: Pos) -> Option<usize> {
        self.rows.iter().position(|r| r.pos == pos)
    }

    /// Read, parse and derive pair number `i`. The error's `Display` is a
    /// message for the screen.
    pub fn load_pair(&self, i: usize) -> Result<LoadedPair, LoadPairError> {
        let loc = self.loc(i);
        let Some(&row) = self.rows.get(i) else {
            return Err(LoadPairError::Unreadable {
                file: "?".to_string(),
                line: 0,
                error: io::Error::other(format!("no pair number {i} in the run")),
            });
        };
        let file = self
            .files
            .get(loc.file() as usize)
            .map(|f| f.display.as_str())
            .unwrap_or("?");
        let at = || (file.to_string(), loc.line);
        let bytes = self.read_line(loc).map_err(|error| {
            let (file, line) = at();
            LoadPairError::Unreadable { file, line, error }
        })?;
        let raw: Value = serde_json::from_slice(&bytes).map_err(|error| {
            let (file, line) = at();
            LoadPairError::NoLongerParses { file, line, error }
        })?;
        let key = record_key(&raw);
        let record = map_record(raw.clone()).map_err(|error| {
            let (file, line) = at();
            LoadPairError::NotARecord { file, line, error }
        })?;
        if self.key(&row).is_some_and(|k| k != key)
            || record.case_id != self.str(row.case)
            || record.variant_id != self.str(row.variant)
        {
            let (file, line) = at();
            return Err(LoadPairError::Changed { file, line });
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

/// Why [`RunIndex::load_pair`] could not give a pair: its line (`file:line`)
/// cannot be read again, no longer parses, is no longer a pair, or holds
/// another pair now. Each says to reload the run where that helps.
#[derive(Debug)]
pub enum LoadPairError {
    /// The line cannot be read again (the file was changed or truncated).
    Unreadable {
        file: String,
        line: u32,
        error: io::Error,
    },
    /// The line is no longer JSON (the file was changed while open).
    NoLongerParses {
        file: String,
        line: u32,
        error: serde_json::Error,
    },
    /// The line is JSON but not a pair record.
    NotARecord {
        file: String,
        line: u32,
        error: RecordError,
    },
    /// Another pair is on the line now (the file was rewritten while open).
    Changed { file: String, line: u32 },
}

impl std::fmt::Display for LoadPairError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadPairError::Unreadable { file, line, error } => write!(
                f,
                "{file}:{line}: cannot read the line again ({error}); the file was changed or truncated — press R to reload the run"
            ),
            LoadPairError::NoLongerParses { file, line, error } => write!(
                f,
                "{file}:{line}: the line no longer parses ({error}); the file was changed while open — press R to reload the run"
            ),
            LoadPairError::NotARecord { file, line, error } => write!(f, "{file}:{line}: {error}"),
            LoadPairError::Changed { file, line } => write!(
                f,
                "{file}:{line}: the line has changed since it was indexed (another pair is there now); the file was rewritten while open — press R to reload the run"
            ),
        }
    }
}

impl std::error::Error for LoadPairError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadPairError::Unreadable { error, .. } => Some(error),
            LoadPairError::NoLongerParses { error, .. } => Some(error),
            LoadPairError::NotARecord { .. } | LoadPairError::Changed { .. } => None,
        }
    }
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

    /// Wait for the whole load (the first pass, when following), merge it
    /// and check the inputs of its cases ([`RunIndex::check_inputs`]).
    pub fn finish_into(mut self, index: &mut RunIndex) {
        while let Ok(b) = self.rx.recv() {
            let last = b.finished.is_some();
            index.apply(b);
            if last {
                break;
            }
        }
        index.check_inputs();
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
    /// Read every input as this format instead of detecting it (`--from`).
    pub format: Option<Format>,
    /// How another tool's file is converted (`--scorer`).
    pub convert: crate::core::formats::ConvertOptions,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            follow: false,
            format: None,
            convert: crate::core::formats::ConvertOptions::default(),
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
    crate::core::load::heap::keep_large_blocks_mapped();
    let mut files = Vec::new();
    for p in paths {
        files.push(open_input(p, opts.format, &opts.convert)?);
    }
    let mut index = RunIndex {
        bytes_total: files.iter().map(|f| f.size).sum(),
        ..RunIndex::default()
    };
    let (inputs, tails) = chunks::inputs(&files, opts.follow)?;
    // What a conversion found wrong with its records, listed before the
    // problems the loader finds.
    for f in &mut files {
        index.problems.append(&mut f.problems);
        index
            .unlisted
            .add(ProblemKind::FieldWarning, f.unlisted_problems);
    }
    index.files = files;
    let (tx, rx) = mpsc::channel();
    let max = opts.max_line_bytes;
    let stop = Arc::new(AtomicBool::new(false));
    let stop_flag = stop.clone();
    let handle = std::thread::Builder::new()
        .name("triage-index".into())
        .spawn(move || chunks::run(inputs, tails, max, mode, tx, &stop_flag))
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
    use crate::core::load::chunks::FIRST_CHUNK;
    use crate::core::load::intern::recent_slot;
    use crate::core::load::line::human_bytes;
    use crate::core::problem::ProblemKind;
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

    /// Rows picked by status from the one-byte column, across its chunks
    /// and the blocks within them, are the rows of those statuses.
    #[test]
    fn rows_picked_by_status_are_those_of_the_status_across_chunk_edges() {
        let base = sample::sample();
        let n = (1 << crate::core::column::CHUNK_BITS) * 2 + 1029;
        let mut idx = RunIndex::default();
        idx.apply(Batch {
            strings: base.strings().to_vec(),
            rows: (0..n)
                .map(|i| base.rows[(i * 7) % base.rows.len()])
                .collect(),
            labels: (0..n)
                .map(|i| base.labels((i * 7) % base.rows.len()))
                .collect(),
            ..Batch::default()
        });
        assert!(idx.statuses().is_some());
        for wanted in [
            vec![Status::Fail],
            vec![Status::Pass, Status::Boundary],
            Status::ALL.to_vec(),
            vec![],
        ] {
            let mut got = vec![7, 7, 7];
            assert!(idx.rows_with_status(|s| wanted.contains(&s), &mut got));
            let want: Vec<u32> = (0..n as u32)
                .filter(|&i| wanted.contains(&idx.rows[i as usize].status()))
                .collect();
            assert_eq!(got, want, "{wanted:?}");
        }
        // Without a column of statuses, nothing is picked and `out` is left.
        let bare = RunIndex {
            rows: idx.rows.iter().copied().collect(),
            ..RunIndex::default()
        };
        let mut out = vec![1];
        assert!(!bare.rows_with_status(|_| true, &mut out));
        assert_eq!(out, [1]);
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
        let first = idx.read_line(idx.loc(0)).unwrap();
        assert_eq!(first, GOOD.as_bytes());
        assert_eq!((idx.loc(0).line, idx.loc(1).line), (1, 7));
        // Read by position alone, up to the newline, without the CR.
        assert_eq!(idx.read_line_from(idx.rows[0].pos).unwrap(), first);
        assert_eq!(
            idx.read_line_from(idx.rows[1].pos).unwrap(),
            GOOD.as_bytes()
        );
        let loaded = idx.load_pair(1).unwrap();
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
        assert_eq!(idx.loc(0).line, 2);
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

    #[test]
    fn a_line_longer_than_a_chunk_still_opens() {
        // Bigger than the first chunk and spanning chunk boundaries.
        let big = format!(
            "{{\"case_id\":\"big\",\"variant_id\":\"v\",\"note\":\"{}\"}}",
            "y".repeat(3 * FIRST_CHUNK)
        );
        let idx = load_bytes(format!("{GOOD}\n{big}\n{GOOD}").as_bytes());
        assert_eq!(idx.rows.len(), 3);
        assert_eq!(idx.loc(1).line, 2);
        assert_eq!(idx.read_line(idx.loc(1)).unwrap(), big.as_bytes());
        assert_eq!(idx.read_line(idx.loc(2)).unwrap(), GOOD.as_bytes());
        // By position: a line longer than the first read, and the last
        // line, which has no newline.
        assert_eq!(idx.read_line_from(idx.rows[1].pos).unwrap(), big.as_bytes());
        assert_eq!(
            idx.read_line_from(idx.rows[2].pos).unwrap(),
            GOOD.as_bytes()
        );
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
        // A failure a suggestion rule decides (the runner's boundary reason):
        // a bare failure without a family or payload has no suggestion.
        let line = GOOD.replace(
            r#""x""#,
            r#""Source is too close to a decision boundary: margin 0.010.""#,
        );
        let idx = load_bytes(format!("{line}\n{line}\n").as_bytes());
        assert_eq!(idx.str(idx.rows[1].case), "c1");
        assert_eq!(idx.str(idx.family(0)), "");
        // c1, v1 and the transformation ("not recorded"); the suggested
        // category is a code, not an interned string.
        assert_eq!(idx.strings().len(), 3);
        assert_eq!(idx.rows[0].suggestion(), Some("boundary"));
        assert_eq!(idx.rows[0].suggestion(), idx.rows[1].suggestion());
        assert_eq!(idx.versions.len(), 1);
        assert_eq!(idx.contract(0), NO_SYM);
    }
}
