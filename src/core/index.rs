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

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::derive::{Derived, Status, derive};
use super::key::{RecordKey, record_key};
use super::model::{PairRecord, Route};
use super::record::{RecordError, map_record};

/// Lines longer than this become a problem unless the caller sets another cap.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// An interned string id; [`NO_SYM`] means "not recorded".
pub type Sym = u32;
/// The id of an absent string.
pub const NO_SYM: Sym = u32::MAX;

/// Where a pair's line lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    pub file: u16,
    /// 1-based line number.
    pub line: u32,
    pub offset: u64,
    pub len: u32,
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

/// Pair validity, compactly (see [`super::derive::Validity`]).
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

/// The compact summary of one pair that the list, counts and queries use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairRow {
    pub loc: Loc,
    pub key: RecordKey,
    pub case: Sym,
    pub variant: Sym,
    pub transformation: Sym,
    pub family: Sym,
    /// The suggested category id, or [`NO_SYM`] when the pair did not fail.
    pub suggestion: Sym,
    pub status: Status,
    pub flags: u8,
    pub source_route: Option<Route>,
    pub variant_route: Option<Route>,
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
    pub contract: Sym,
    pub schema: Sym,
    pub model: Sym,
    pub expectation: ExpKind,
    pub source_outcome: OutcomeCode,
    pub variant_outcome: OutcomeCode,
    pub validity: ValidityCode,
    /// The recorded repetition, or `u32::MAX`.
    pub repetition: u32,
}

impl PairRow {
    /// Whether a flag from [`flags`] is set.
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
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
    /// Keeps a copy of standard input alive for as long as the index is.
    _temp: Option<tempfile::TempPath>,
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
    pub rows: Vec<PairRow>,
    pub problems: Vec<Problem>,
    /// Lines that could not be opened (problems that skip a line).
    pub skipped_lines: usize,
    pub failures: usize,
    pub bytes_total: u64,
    pub bytes_read: u64,
    pub done: bool,
    pub elapsed: Duration,
}

/// A parsed pair with its derived facts and the raw line, for the detail view.
#[derive(Debug, Clone)]
pub struct LoadedPair {
    pub record: PairRecord,
    pub derived: Derived,
    pub raw: Value,
}

impl RunIndex {
    /// The string behind an interned id ("" for [`NO_SYM`]).
    pub fn str(&self, s: Sym) -> &str {
        self.strings.get(s as usize).map(|b| &**b).unwrap_or("")
    }

    /// Every interned string, in id order.
    pub fn strings(&self) -> &[Box<str>] {
        &self.strings
    }

    /// Merge a batch from the loader.
    pub fn apply(&mut self, b: Batch) {
        self.strings.extend(b.strings);
        self.failures += b.rows.iter().filter(|r| r.status.is_failure()).count();
        self.skipped_lines += b.problems.iter().filter(|p| p.kind.skips_line()).count();
        self.rows.extend(b.rows);
        self.problems.extend(b.problems);
        self.bytes_read = b.bytes_read;
        if let Some(elapsed) = b.finished {
            self.done = true;
            self.elapsed = elapsed;
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
            .get(loc.file as usize)
            .ok_or_else(|| io::Error::other("no such input file"))?;
        let mut buf = vec![0u8; loc.len as usize];
        read_exact_at(&f.reader, &mut buf, loc.offset)?;
        Ok(buf)
    }

    /// Read, parse and derive one pair. The error is a message for the screen.
    pub fn load_pair(&self, row: &PairRow) -> Result<LoadedPair, String> {
        let file = self
            .files
            .get(row.loc.file as usize)
            .map(|f| f.display.as_str())
            .unwrap_or("?");
        let bytes = self.read_line(row.loc).map_err(|e| {
            format!(
                "{file}:{}: cannot read the line again ({e}); was the file changed or truncated?",
                row.loc.line
            )
        })?;
        let raw: Value = serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "{file}:{}: the line no longer parses ({e}); was the file changed while open?",
                row.loc.line
            )
        })?;
        let record =
            map_record(raw.clone()).map_err(|e| format!("{file}:{}: {e}", row.loc.line))?;
        let derived = derive(&record);
        Ok(LoadedPair {
            record,
            derived,
            raw,
        })
    }
}

#[cfg(unix)]
fn read_exact_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    f.read_exact_at(buf, offset)
}

#[cfg(not(unix))]
fn read_exact_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
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

    /// Wait for the whole load and merge it.
    pub fn finish_into(mut self, index: &mut RunIndex) {
        while let Ok(b) = self.rx.recv() {
            let last = b.finished.is_some();
            index.apply(b);
            if last {
                break;
            }
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Options for opening a run.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    pub max_line_bytes: usize,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        }
    }
}

/// Check and open every input, then start indexing them in the background.
pub fn open_run(paths: &[String], opts: &OpenOptions) -> Result<(RunIndex, Loader), OpenError> {
    let mut files = Vec::new();
    for p in paths {
        files.push(open_input(p)?);
    }
    let mut index = RunIndex {
        bytes_total: files.iter().map(|f| f.size).sum(),
        ..RunIndex::default()
    };
    let mut readers = Vec::new();
    for f in &files {
        let r = f
            .reader
            .try_clone()
            .map_err(|e| OpenError(format!("triage: cannot read '{}': {e}", f.display)))?;
        readers.push((f.display.clone(), f.path.clone(), r));
    }
    index.files = files;
    let (tx, rx) = mpsc::channel();
    let max = opts.max_line_bytes;
    let handle = std::thread::Builder::new()
        .name("triage-index".into())
        .spawn(move || index_files(readers, max, tx))
        .map_err(|e| OpenError(format!("triage: cannot start the indexer: {e}")))?;
    Ok((
        index,
        Loader {
            rx,
            handle: Some(handle),
        },
    ))
}

/// Open and fully index a run on this thread (for headless commands and tests).
pub fn load_run(paths: &[String], opts: &OpenOptions) -> Result<RunIndex, OpenError> {
    let (mut index, loader) = open_run(paths, opts)?;
    loader.finish_into(&mut index);
    Ok(index)
}

fn open_input(p: &str) -> Result<RunFile, OpenError> {
    if p == "-" {
        return stdin_copy();
    }
    let path = Path::new(p);
    let shown = crate::core::text::inert_line(p);
    let meta = std::fs::metadata(path).map_err(|e| {
        OpenError(match e.kind() {
            io::ErrorKind::NotFound => {
                format!("triage: '{shown}' does not exist; check the path and try again")
            }
            io::ErrorKind::PermissionDenied => {
                format!("triage: cannot read '{shown}': permission denied")
            }
            _ => format!("triage: cannot open '{shown}': {e}"),
        })
    })?;
    if meta.is_dir() {
        return Err(OpenError(format!(
            "triage: '{shown}' is a directory; pass a run file (.jsonl) inside it"
        )));
    }
    let file = File::open(path).map_err(|e| {
        OpenError(match e.kind() {
            io::ErrorKind::PermissionDenied => {
                format!("triage: cannot read '{shown}': permission denied")
            }
            _ => format!("triage: cannot open '{shown}': {e}"),
        })
    })?;
    if !meta.is_file() {
        // A FIFO or device cannot be read twice: keep a private copy.
        return copy_to_temp(file, shown);
    }
    Ok(RunFile {
        display: shown,
        path: path.to_path_buf(),
        size: meta.len(),
        reader: file,
        _temp: None,
    })
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
    })
}

/// The loader thread: read each file front to back, one line at a time.
fn index_files(readers: Vec<(String, PathBuf, File)>, max_line: usize, tx: Sender<Batch>) {
    let start = Instant::now();
    let mut st = IndexState {
        interned: HashMap::new(),
        next_sym: 0,
        batch: Batch::default(),
        bytes_read: 0,
        tx,
        last_send: Instant::now(),
        sent_any: false,
    };
    for (file_idx, (display, _path, file)) in readers.into_iter().enumerate() {
        let file_idx = u16::try_from(file_idx).unwrap_or(u16::MAX);
        if let Err(e) = index_one(&mut st, file_idx, &display, file, max_line) {
            st.batch.problems.push(Problem {
                file: display.clone(),
                line: 0,
                kind: ProblemKind::Io,
                message: format!("reading stopped early: {e}"),
            });
        }
    }
    st.batch.finished = Some(start.elapsed());
    st.flush();
}

struct IndexState {
    interned: HashMap<Box<str>, Sym>,
    next_sym: Sym,
    batch: Batch,
    bytes_read: u64,
    tx: Sender<Batch>,
    last_send: Instant,
    sent_any: bool,
}

impl IndexState {
    fn intern(&mut self, s: Option<&str>) -> Sym {
        let Some(s) = s else { return NO_SYM };
        if let Some(&id) = self.interned.get(s) {
            return id;
        }
        let id = self.next_sym;
        self.next_sym += 1;
        let b: Box<str> = s.into();
        self.batch.strings.push(b.clone());
        self.interned.insert(b, id);
        id
    }

    /// Send early and small for a fast first screen, then in larger slices.
    fn maybe_flush(&mut self) {
        let n = self.batch.rows.len() + self.batch.problems.len();
        let due = if self.sent_any {
            n >= 8192 || (n > 0 && self.last_send.elapsed() > Duration::from_millis(40))
        } else {
            n >= 200
        };
        if due {
            self.flush();
        }
    }

    fn flush(&mut self) {
        self.batch.bytes_read = self.bytes_read;
        let b = std::mem::take(&mut self.batch);
        // The receiver may be gone (the user quit): stop quietly.
        let _ = self.tx.send(b);
        self.last_send = Instant::now();
        self.sent_any = true;
    }
}

fn index_one(
    st: &mut IndexState,
    file_idx: u16,
    display: &str,
    file: File,
    max_line: usize,
) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut line: Vec<u8> = Vec::new();
    let mut line_start: u64 = 0;
    let mut pos: u64 = 0;
    let mut line_no: u64 = 1;
    let mut overlong = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let (take, complete) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let content = if complete {
            &buf[..take - 1]
        } else {
            &buf[..take]
        };
        if !overlong {
            if line.len() + content.len() > max_line {
                overlong = true;
                line.clear();
            } else {
                line.extend_from_slice(content);
            }
        }
        reader.consume(take);
        pos += take as u64;
        st.bytes_read += take as u64;
        if complete {
            let len = pos - 1 - line_start;
            handle_line(
                st, file_idx, display, &line, line_no, line_start, len, true, overlong, max_line,
            );
            line.clear();
            overlong = false;
            line_no += 1;
            line_start = pos;
            st.maybe_flush();
        }
    }
    if pos > line_start {
        let len = pos - line_start;
        handle_line(
            st, file_idx, display, &line, line_no, line_start, len, false, overlong, max_line,
        );
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn handle_line(
    st: &mut IndexState,
    file_idx: u16,
    display: &str,
    raw: &[u8],
    line_no: u64,
    offset: u64,
    len: u64,
    terminated: bool,
    overlong: bool,
    max_line: usize,
) {
    let problem = |kind: ProblemKind, message: String| Problem {
        file: display.to_string(),
        line: line_no,
        kind,
        message,
    };
    if overlong {
        st.batch.problems.push(problem(
            ProblemKind::TooLong,
            format!(
                "the line is {} long, over the {} limit; raise it with --max-line-bytes if it is genuine",
                human_bytes(len),
                human_bytes(max_line as u64)
            ),
        ));
        return;
    }
    // Trim what is not content: a BOM on the first line, CR of CRLF, blanks.
    let mut start = 0usize;
    let mut end = raw.len();
    if line_no == 1 && raw.starts_with(&[0xEF, 0xBB, 0xBF]) {
        start = 3;
    }
    while end > start && matches!(raw[end - 1], b'\r' | b' ' | b'\t') {
        end -= 1;
    }
    while start < end && matches!(raw[start], b' ' | b'\t') {
        start += 1;
    }
    if start == end {
        return;
    }
    let body = &raw[start..end];
    if let Err(e) = std::str::from_utf8(body) {
        st.batch.problems.push(problem(
            ProblemKind::InvalidUtf8,
            format!(
                "invalid UTF-8 at byte {} of the line; re-encode the file as UTF-8",
                e.valid_up_to() + 1
            ),
        ));
        return;
    }
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            let (kind, msg) = classify_json_error(&e, terminated);
            st.batch.problems.push(problem(kind, msg));
            return;
        }
    };
    let key = record_key(&value);
    let record = match map_record(value) {
        Ok(r) => r,
        Err(e) => {
            let kind = match e {
                RecordError::NotAnObject(_) => ProblemKind::NotAnObject,
                RecordError::MissingId(_) => ProblemKind::MissingField,
                RecordError::WrongIdType(..) => ProblemKind::WrongType,
            };
            st.batch.problems.push(problem(kind, e.to_string()));
            return;
        }
    };
    let d = derive(&record);
    let suggestion = super::suggest::suggest(&record, &d).map(|s| s.category);
    for w in &record.field_warnings {
        st.batch.problems.push(problem(
            ProblemKind::FieldWarning,
            format!("{} / {}: {w}", record.case_id, record.variant_id),
        ));
    }
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
    if d.warnings.iter().any(|w| w.contains("The runner recorded")) {
        fl |= flags::PASSED_MISMATCH;
    }
    if d.warnings
        .iter()
        .any(|w| w.contains("route was recorded as"))
    {
        fl |= flags::ROUTE_MISMATCH;
    }
    use super::derive::Validity;
    use super::model::Expectation;
    let validity = match d.validity {
        Validity::Valid => ValidityCode::Valid,
        Validity::Invalid { .. } => ValidityCode::Invalid,
        Validity::Undeclared => ValidityCode::Undeclared,
        Validity::NotRecorded => ValidityCode::NotRecorded,
    };
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
    let row = PairRow {
        loc: Loc {
            file: file_idx,
            line: u32::try_from(line_no).unwrap_or(u32::MAX),
            offset: offset + start as u64,
            len: u32::try_from(body.len()).unwrap_or(u32::MAX),
        },
        key,
        case: st.intern(Some(&record.case_id)),
        variant: st.intern(Some(&record.variant_id)),
        transformation: st.intern(Some(&d.transformation.name)),
        family: st.intern(record.family.as_deref()),
        suggestion: st.intern(suggestion),
        status: d.status,
        flags: fl,
        source_route: d.source_route,
        variant_route: d.variant_route,
        dp: d.dp.map(|x| x as f32).unwrap_or(f32::NAN),
        dc: d.dc.map(|x| x as f32).unwrap_or(f32::NAN),
        margin: d.source_margin.map(|x| x as f32).unwrap_or(f32::NAN),
        variant_margin: d.variant_margin.map(|x| x as f32).unwrap_or(f32::NAN),
        latency,
        contract: st.intern(record.contract_version.as_deref()),
        schema: st.intern(record.state_schema_version.as_deref()),
        model: st.intern(record.model_id.as_deref()),
        expectation,
        source_outcome: OutcomeCode::of(record.source.effective_outcome().as_ref()),
        variant_outcome: OutcomeCode::of(record.variant.effective_outcome().as_ref()),
        validity,
        repetition: record
            .repetition
            .and_then(|r| u32::try_from(r).ok())
            .unwrap_or(u32::MAX),
    };
    st.batch.rows.push(row);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn load_bytes(bytes: &[u8]) -> RunIndex {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        let p = f.path().to_string_lossy().to_string();
        load_run(&[p], &OpenOptions::default()).unwrap()
    }

    const GOOD: &str = r#"{"case_id":"c1","variant_id":"v1","passed":false,"reasons":["x"]}"#;

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

        let mut f = tempfile::NamedTempFile::new().unwrap();
        writeln!(
            f,
            "{{\"case_id\":\"{}\",\"variant_id\":\"v\"}}",
            "x".repeat(5000)
        )
        .unwrap();
        writeln!(f, "{GOOD}").unwrap();
        let p = f.path().to_string_lossy().to_string();
        let idx = load_run(
            &[p],
            &OpenOptions {
                max_line_bytes: 1000,
            },
        )
        .unwrap();
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

    #[test]
    fn interned_strings_resolve() {
        let idx = load_bytes(format!("{GOOD}\n{GOOD}\n").as_bytes());
        assert_eq!(idx.str(idx.rows[1].case), "c1");
        assert_eq!(idx.str(idx.rows[0].family), "");
        // c1, v1, the transformation ("not recorded") and the suggested category.
        assert_eq!(idx.strings().len(), 4);
    }
}
