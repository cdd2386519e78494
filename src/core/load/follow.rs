//! Runs that change while they are open.
//!
//! Two things live here. [`Tail`] lets the loader keep reading a run that is
//! still being written (`triage -f`): the first pass indexes the file only up
//! to its last newline, then the loader polls the file's size and indexes each
//! line once its newline has landed, so a line being written is never reported
//! as cut off. [`RunWatch`] notices, with or without `-f`, that a run file was
//! truncated or replaced (a new file renamed over the path), so the screen can
//! say so and offer a reload instead of reading wrong offsets.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use super::batch::IndexState;
use super::line::{ParseMode, human_bytes, line_at, process_line};
use super::open::{RunFile, read_exact_at};

/// How often a followed run is checked for new lines.
pub const POLL: Duration = Duration::from_millis(200);

/// Which file a path names: (device, inode) on Unix.
pub type FileId = (u64, u64);

/// The identity of the file behind `meta`.
pub fn file_id(meta: &Metadata) -> FileId {
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

/// Where following one input resumes once its first pass is done.
#[derive(Debug)]
pub struct Tail {
    pub(crate) file_idx: u16,
    pub(crate) display: String,
    path: PathBuf,
    /// A handle on the file that was opened (read with positioned reads).
    file: File,
    id: FileId,
    /// The end of the last complete line indexed.
    offset: u64,
    /// Lines read by the first pass (its newlines), shared with [`Counted`].
    newlines: Arc<AtomicU64>,
    /// The file length at the last poll, so an unfinished line is read once per change.
    seen_len: u64,
    /// No newline lies between `offset` and this: a long line being written is
    /// scanned once, not again at every poll.
    scanned: u64,
    /// The file was truncated or replaced: following it stops (the screen offers a reload).
    stopped: bool,
}

/// Counts the newlines the first pass reads, so the tail knows its line numbers.
pub struct Counted<R> {
    inner: R,
    newlines: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let count = memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        self.newlines.fetch_add(count, Ordering::Relaxed);
        Ok(n)
    }
}

/// Prepare following `file`: the reader for the first pass (the file up to
/// and including its last newline) and the tail that takes over after it.
pub fn start(
    file: &File,
    path: &Path,
    file_idx: u16,
    display: &str,
) -> io::Result<(Counted<io::Take<File>>, Tail)> {
    let meta = file.metadata()?;
    let len = meta.len();
    let complete = complete_prefix(file, len)?;
    let newlines = Arc::new(AtomicU64::new(0));
    let reader = Counted {
        inner: file.try_clone()?.take(complete),
        newlines: newlines.clone(),
    };
    let tail = Tail {
        file_idx,
        display: display.to_string(),
        path: path.to_path_buf(),
        file: file.try_clone()?,
        id: file_id(&meta),
        offset: complete,
        newlines,
        seen_len: complete,
        scanned: complete,
        stopped: false,
    };
    Ok((reader, tail))
}

/// The length of the part of the file that ends with its last newline.
fn complete_prefix(file: &File, len: u64) -> io::Result<u64> {
    const BLOCK: u64 = 64 * 1024;
    let mut end = len;
    let mut buf = vec![0u8; BLOCK as usize];
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let chunk = &mut buf[..(end - start) as usize];
        read_exact_at(file, chunk, start)?;
        if let Some(i) = memchr::memrchr(b'\n', chunk) {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// After the first pass: poll each followed input and index its new complete
/// lines, until `stop` is set (the index was dropped) or the receiver is gone.
pub(crate) fn follow(
    st: &mut IndexState,
    mut tails: Vec<Tail>,
    max_line: usize,
    mode: ParseMode,
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::Relaxed) && tails.iter().any(|t| !t.stopped) {
        std::thread::sleep(POLL);
        let mut any = false;
        for t in &mut tails {
            any |= poll_one(st, t, max_line, mode);
        }
        if any && !st.send() {
            return;
        }
    }
}

/// Index the lines completed since the last poll; whether anything was added.
fn poll_one(st: &mut IndexState, t: &mut Tail, max_line: usize, mode: ParseMode) -> bool {
    if t.stopped {
        return false;
    }
    let len = match std::fs::metadata(&t.path) {
        Ok(m) if file_id(&m) == t.id && m.len() >= t.offset => m.len(),
        // Gone, replaced or truncated: stop; RunWatch tells the reviewer.
        _ => {
            t.stopped = true;
            return false;
        }
    };
    if len == t.seen_len {
        return false;
    }
    // Look for a newline in what was added since the last scan only.
    let from = t.scanned.max(t.offset);
    let mut buf = vec![0u8; (len - from) as usize];
    if read_exact_at(&t.file, &mut buf, from).is_err() {
        return false;
    }
    let Some(nl) = memchr::memrchr(b'\n', &buf) else {
        // A line still being written: wait for its newline.
        t.seen_len = len;
        t.scanned = len;
        return false;
    };
    let end = from + nl as u64 + 1;
    if from > t.offset {
        // The start of the line was scanned earlier: read it all now.
        buf = vec![0u8; (end - t.offset) as usize];
        if read_exact_at(&t.file, &mut buf, t.offset).is_err() {
            return false;
        }
    } else {
        buf.truncate(nl + 1);
    }
    let last = buf.len() - 1;
    let mut line_no = t.newlines.load(Ordering::Relaxed) + 1;
    let mut pos = 0usize;
    for nl in memchr::memchr_iter(b'\n', &buf[..=last]) {
        let line = line_at(line_no, t.offset, pos, nl, true, max_line);
        let out = process_line(&buf, &line, max_line, mode);
        st.push(t.file_idx, &t.display, &line, out, &buf);
        line_no += 1;
        pos = nl + 1;
    }
    t.newlines.store(line_no - 1, Ordering::Relaxed);
    t.offset += pos as u64;
    // What follows the last newline has none: the next scan starts after it.
    t.seen_len = len;
    t.scanned = len;
    st.add_bytes(pos as u64);
    true
}

/// What happened to a run file while it was open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunChange {
    /// It is shorter than what was indexed.
    Truncated { file: String, was: u64, now: u64 },
    /// Another file now has its name (say a runner rewrote it and renamed it over).
    Replaced { file: String },
    /// It was deleted.
    Removed { file: String },
}

impl RunChange {
    /// A few words for a status bar.
    pub fn short(&self) -> &'static str {
        match self {
            RunChange::Truncated { .. } => "run file truncated",
            RunChange::Replaced { .. } => "run file replaced",
            RunChange::Removed { .. } => "run file deleted",
        }
    }
}

impl std::fmt::Display for RunChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunChange::Truncated { file, was, now } => write!(
                f,
                "{file} was truncated ({} → {}); what is shown may be out of date",
                human_bytes(*was),
                human_bytes(*now)
            ),
            RunChange::Replaced { file } => write!(
                f,
                "{file} was replaced by a new file; what is shown is the old one"
            ),
            RunChange::Removed { file } => {
                write!(f, "{file} was deleted; what is shown is the old one")
            }
        }
    }
}

/// Watches the run files on disk for truncation or replacement.
#[derive(Debug, Default)]
pub struct RunWatch {
    files: Vec<Watched>,
}

#[derive(Debug)]
struct Watched {
    display: String,
    path: PathBuf,
    id: FileId,
    /// The largest length seen: a smaller one means it was truncated.
    len: u64,
}

impl RunWatch {
    /// Watch the inputs of a run that are files on disk (not standard input
    /// or a decompressed copy).
    pub fn new(files: &[RunFile]) -> RunWatch {
        let files = files
            .iter()
            .filter(|f| f.on_disk())
            .filter_map(|f| {
                let meta = f.opened_metadata().ok()?;
                Some(Watched {
                    display: f.display.clone(),
                    path: f.path.clone(),
                    id: file_id(&meta),
                    len: f.size.max(meta.len()),
                })
            })
            .collect();
        RunWatch { files }
    }

    /// Look at the files again; the first change found, if any.
    pub fn check(&mut self) -> Option<RunChange> {
        for w in &mut self.files {
            let meta = match std::fs::metadata(&w.path) {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Some(RunChange::Removed {
                        file: w.display.clone(),
                    });
                }
                Err(_) => continue,
            };
            if file_id(&meta) != w.id {
                return Some(RunChange::Replaced {
                    file: w.display.clone(),
                });
            }
            if meta.len() < w.len {
                return Some(RunChange::Truncated {
                    file: w.display.clone(),
                    was: w.len,
                    now: meta.len(),
                });
            }
            w.len = meta.len();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::index::{OpenOptions, open_run};
    use std::io::Write;
    use std::time::Instant;

    fn pair(case: &str) -> String {
        format!(r#"{{"case_id":"{case}","variant_id":"v1","passed":false,"reasons":["x"]}}"#)
    }

    fn wait_rows(
        index: &mut crate::core::index::RunIndex,
        loader: &crate::core::index::Loader,
        n: usize,
    ) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while index.rows.len() < n {
            loader.drain_into(index);
            assert!(Instant::now() < deadline, "only {} rows", index.rows.len());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn followed_lines_appear_and_a_partial_line_waits_for_its_newline() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("run.jsonl");
        let half = pair("c2");
        let (head, rest) = half.split_at(20);
        std::fs::write(&path, format!("{}\n{head}", pair("c1"))).unwrap();
        let opts = OpenOptions {
            follow: true,
            ..OpenOptions::default()
        };
        let (mut index, loader) = open_run(&[path.to_string_lossy().to_string()], &opts).unwrap();
        wait_rows(&mut index, &loader, 1);
        while !index.done {
            loader.drain_into(&mut index);
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(POLL * 3);
        loader.drain_into(&mut index);
        assert_eq!(index.rows.len(), 1);
        assert!(index.problems.is_empty(), "{:?}", index.problems);

        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        write!(f, "{rest}\nnot json\n{}\n", pair("c3")).unwrap();
        wait_rows(&mut index, &loader, 3);
        std::thread::sleep(POLL * 2);
        loader.drain_into(&mut index);
        assert_eq!(index.rows.len(), 3);
        let lines: Vec<u32> = (0..index.rows.len()).map(|i| index.loc(i).line).collect();
        assert_eq!(lines, vec![1, 2, 4]);
        assert_eq!(index.problems.len(), 1);
        assert_eq!(index.problems[0].line, 3);
        for i in 0..index.rows.len() {
            index.load_pair(i).unwrap();
        }
    }

    #[test]
    fn a_line_written_in_many_pieces_becomes_one_row() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("run.jsonl");
        std::fs::write(&path, "").unwrap();
        let opts = OpenOptions {
            follow: true,
            ..OpenOptions::default()
        };
        let (mut index, loader) = open_run(&[path.to_string_lossy().to_string()], &opts).unwrap();
        let line = pair("pieces");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        for chunk in line.as_bytes().chunks(7) {
            f.write_all(chunk).unwrap();
            std::thread::sleep(Duration::from_millis(40));
            loader.drain_into(&mut index);
        }
        assert!(index.rows.is_empty());
        writeln!(f, "\n\n{}", pair("next")).unwrap();
        wait_rows(&mut index, &loader, 2);
        assert!(index.problems.is_empty(), "{:?}", index.problems);
        let lines: Vec<u32> = (0..index.rows.len()).map(|i| index.loc(i).line).collect();
        // A blank line between them: line numbers stay true.
        assert_eq!(lines, vec![1, 3]);
        assert_eq!(index.load_pair(0).unwrap().record.case_id, "pieces");
    }

    #[test]
    fn truncation_replacement_and_removal_are_noticed() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("run.jsonl");
        std::fs::write(&path, format!("{}\n{}\n", pair("c1"), pair("c2"))).unwrap();
        let index = crate::core::index::load_run(
            &[path.to_string_lossy().to_string()],
            &OpenOptions::default(),
        )
        .unwrap();
        let mut watch = RunWatch::new(&index.files);
        assert_eq!(watch.check(), None);
        // Growing is not a change.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        writeln!(f, "{}", pair("c3")).unwrap();
        assert_eq!(watch.check(), None);
        f.set_len(10).unwrap();
        assert!(matches!(
            watch.check(),
            Some(RunChange::Truncated { now: 10, .. })
        ));

        // Rewritten in place: the detail of a pair whose line changed says so
        // instead of showing another pair.
        std::fs::write(&path, format!("{}\n{}\n", pair("d1"), pair("d2"))).unwrap();
        let err = index.load_pair(1).unwrap_err().to_string();
        assert!(err.contains(":2:") && err.contains("changed"), "{err}");

        let mut watch = RunWatch::new(&index.files);
        let other = dir.path().join("new.jsonl");
        std::fs::write(&other, format!("{}\n", pair("c9"))).unwrap();
        std::fs::rename(&other, &path).unwrap();
        let change = watch.check().unwrap();
        assert!(matches!(change, RunChange::Replaced { .. }));
        assert!(change.to_string().contains("replaced"));

        std::fs::remove_file(&path).unwrap();
        let mut watch = RunWatch::new(&index.files);
        assert!(matches!(watch.check(), Some(RunChange::Removed { .. })));
    }
}
