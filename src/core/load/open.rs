//! The first step of a line's path: its input is opened.
//!
//! A run file on disk is read where it lies. A gzip file is decompressed in
//! the background into a private temporary file that the loader reads as it
//! grows (`GrowingReader`). Standard input, a named pipe and anything else
//! that cannot be read twice are copied to a private file first. Another
//! tool's results (see [`formats`]) are detected from the file's head and
//! converted into native pair records. Every failure is one line for the
//! terminal ([`OpenError`], [`open_error`]).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::direct::SpanBuf;
use crate::core::formats::{self, ConvertOptions, Format};
use crate::core::problem::{Problem, ProblemKind};

/// A private copy the index reads instead of the file at the input's path.
#[derive(Debug)]
enum PrivateCopy {
    /// A temporary file with a name, removed when the index is dropped.
    Named {
        _removed_on_drop: tempfile::TempPath,
    },
    /// A file with no name, read through its handle alone.
    Unnamed,
}

/// One opened input.
#[derive(Debug)]
pub struct RunFile {
    /// The name to show: the path as given, or "stdin".
    pub display: String,
    pub path: PathBuf,
    pub size: u64,
    reader: File,
    /// How spans of the file are read again (around the page cache when
    /// it is larger than memory).
    direct: super::direct::Direct,
    /// What the index reads when it is not the file at `path`: a copy of
    /// standard input, a decompressed input or a converted one.
    copy: Option<PrivateCopy>,
    /// A gzip input being decompressed into `reader`'s file in the background.
    growing: Option<Arc<Growing>>,
    /// What the file was read as: native pair records, or another tool's
    /// results converted into them (see [`formats`]).
    pub format: Format,
    /// Notes about the file as a whole: what a conversion warned about, or
    /// why no known format matched.
    pub notes: Vec<String>,
    /// Records a conversion found at fault by the tool's own rules (see
    /// [`formats::ConvertReport::problems`]), as problems of this file: the
    /// index lists them with the lines' (`triage check --strict` fails on them).
    pub problems: Vec<Problem>,
    /// Such problems past the first [`crate::core::problem::KEPT_PER_KIND`]: counted only.
    pub unlisted_problems: u64,
}

impl RunFile {
    /// The metadata of the file as opened (the old file, if the path was since replaced).
    pub fn opened_metadata(&self) -> io::Result<std::fs::Metadata> {
        self.reader.metadata()
    }

    /// Whether this input is the file at `path` (not a private copy of
    /// standard input, a FIFO or a decompressed gzip).
    pub fn on_disk(&self) -> bool {
        self.copy.is_none()
    }

    /// Read `buf.len()` bytes at `offset` of the file the index reads (a
    /// line again, for its detail or its key).
    pub(crate) fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        read_exact_at(&self.reader, buf, offset)
    }

    /// Read up to `buf.len()` bytes at `offset` of the file the index
    /// reads; fewer only at its end.
    pub(crate) fn read_some_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        read_some_at(&self.reader, buf, offset)
    }

    /// Read `len` bytes at `offset` into `buf` ([`SpanBuf::bytes`]), for a
    /// pass over many lines: around the page cache when the file is larger
    /// than memory ([`super::direct`]), else through it, the span's pages
    /// given back once read when the file is larger than memory all the
    /// same (see [`super::drop_behind`]; a file that fits keeps them).
    pub(crate) fn read_span(&self, buf: &mut SpanBuf, offset: u64, len: usize) -> io::Result<()> {
        if !self.direct.read(&self.reader, buf, offset, len)? {
            super::drop_behind::give_back_range(&self.reader, offset, len as u64);
        }
        Ok(())
    }

    /// Read spans directly whatever the file's size (tests).
    #[cfg(test)]
    pub(crate) fn read_spans_direct(&self) {
        self.direct.always();
    }

    /// Before the span of `len` bytes from `offset` is read: have the
    /// kernel start reading it now, unless spans are read around the page
    /// cache (see [`super::drop_behind::read_ahead`]).
    pub(crate) fn read_ahead(&self, offset: u64, len: u64) {
        if !self.direct.active(&self.reader) {
            super::drop_behind::read_ahead(&self.reader, offset, len);
        }
    }

    /// A new handle on the file the index reads.
    pub(crate) fn handle(&self) -> io::Result<File> {
        self.reader.try_clone()
    }

    /// For a gzip input still being decompressed, a reader of `file` (a
    /// [`RunFile::handle`]) that waits at its end until the decompressor is
    /// done; any other input gives `file` back.
    pub(crate) fn growing_reader(&self, file: File) -> Result<GrowingReader, File> {
        match &self.growing {
            Some(g) => Ok(GrowingReader {
                file,
                growing: g.clone(),
                pos: 0,
            }),
            None => Err(file),
        }
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

#[cfg(unix)]
pub(crate) fn read_exact_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    f.read_exact_at(buf, offset)
}

/// Read at `offset` until `buf` is full or the file ends; the bytes read.
pub(crate) fn read_some_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        #[cfg(unix)]
        let n = {
            use std::os::unix::fs::FileExt;
            f.read_at(&mut buf[done..], offset + done as u64)
        };
        #[cfg(not(unix))]
        let n = {
            use std::os::windows::fs::FileExt;
            f.seek_read(&mut buf[done..], offset + done as u64)
        };
        match n {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
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
pub(crate) struct GrowingReader {
    file: File,
    growing: Arc<Growing>,
    pos: u64,
}

impl Read for GrowingReader {
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
        direct: Default::default(),
        copy: Some(PrivateCopy::Named {
            _removed_on_drop: temp_path,
        }),
        growing: Some(growing),
        format: Format::Native,
        notes: Vec::new(),
        problems: Vec::new(),
        unlisted_problems: 0,
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

/// Check and open one input: `-` is standard input, anything else a path.
pub(crate) fn open_input(
    p: &str,
    want: Option<Format>,
    convert: &ConvertOptions,
) -> Result<RunFile, OpenError> {
    let mut opened = open_any(p, want, convert)?;
    if let Some(name) = &convert.scorer
        && opened.format != Format::Inspect
    {
        opened.notes.push(format!(
            "--scorer {} applies to Inspect logs; this {} file was read without it",
            crate::core::text::inert_line(name),
            opened.format
        ));
    }
    Ok(opened)
}

/// [`open_input`], before its note on a `--scorer` that does not apply.
fn open_any(p: &str, want: Option<Format>, convert: &ConvertOptions) -> Result<RunFile, OpenError> {
    if p == "-" {
        return as_format(stdin_copy()?, want, convert);
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
            return as_format(copy_to_temp(file, shown)?, want, convert);
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
        return as_format(copy_to_temp(file, shown)?, want, convert);
    }
    let (format, needs_convert, notes) = sniff_format(&file, meta.len(), want);
    if needs_convert {
        return open_converted(path, path, shown, format, want.is_some(), convert);
    }
    let mut opened = if is_gzip(&file) {
        open_gzip(file, shown, meta.len())?
    } else {
        RunFile {
            display: shown,
            path: path.to_path_buf(),
            size: meta.len(),
            reader: file,
            direct: Default::default(),
            copy: None,
            growing: None,
            format: Format::Native,
            notes: Vec::new(),
            problems: Vec::new(),
            unlisted_problems: 0,
        }
    };
    opened.notes = notes;
    Ok(opened)
}

/// Which format to read a file as: `want` when given, else what its head
/// looks like; and whether it must be converted (another tool's format, or
/// native records held in one JSON document). Only the first
/// [`formats::DETECT_HEAD_BYTES`] are read, so a large native run pays for
/// one small read. A file no format recognises is read as native lines,
/// with a note of what was tried.
fn sniff_format(file: &File, len: u64, want: Option<Format>) -> (Format, bool, Vec<String>) {
    let mut head = vec![0u8; (len as usize).min(formats::DETECT_HEAD_BYTES)];
    if head.is_empty() || read_exact_at(file, &mut head, 0).is_err() {
        // Nothing to sniff; the loader reports an unreadable file itself.
        let f = want.unwrap_or(Format::Native);
        return (f, f != Format::Native, Vec::new());
    }
    if let Some(f) = want {
        return (f, formats::must_convert(f, &head), Vec::new());
    }
    let found = formats::detect(&head);
    if let Some(f) = found.format {
        return (f, formats::must_convert(f, &head), Vec::new());
    }
    // A first line longer than the head says nothing either way: the
    // loader reads it (or reports it) as a native line.
    if head.len() < len as usize && !head.contains(&b'\n') {
        return (Format::Native, false, Vec::new());
    }
    (Format::Native, false, vec![found.note()])
}

/// An input already copied to a private file (standard input, a FIFO):
/// detect its format there, and convert it when it is another tool's.
fn as_format(
    mut opened: RunFile,
    want: Option<Format>,
    convert: &ConvertOptions,
) -> Result<RunFile, OpenError> {
    let (format, needs_convert, notes) = sniff_format(&opened.reader, opened.size, want);
    if !needs_convert {
        opened.notes = notes;
        return Ok(opened);
    }
    let path = opened.path.clone();
    open_converted(
        &path,
        &path,
        opened.display.clone(),
        format,
        want.is_some(),
        convert,
    )
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
    convert: &ConvertOptions,
) -> Result<RunFile, OpenError> {
    let io_err =
        |e: io::Error| OpenError(format!("triage: cannot convert {display} ({format}): {e}"));
    // A file with no name: the converted copy holds every output of the
    // run, and is gone with the last handle however triage ends (a broken
    // pipe, a closed terminal, kill -9), never left in the temporary folder.
    let mut tmp = tempfile::tempfile().map_err(io_err)?;
    let report = {
        let mut w = io::BufWriter::new(&mut tmp);
        let report = formats::convert_with(src, format, convert, &mut w).map_err(|e| {
            if e.is_refusal() {
                return OpenError(format!("triage: {e}"));
            }
            let how = if chosen {
                "check that --from names the tool that wrote it".to_string()
            } else {
                format!(
                    "it looks like a {format} file; pass --from NAME to read it as another format"
                )
            };
            OpenError(format!("triage: {e}\n  {how}"))
        })?;
        io::Write::flush(&mut w).map_err(io_err)?;
        report
    };
    let size = tmp.metadata().map_err(io_err)?.len();
    io::Seek::rewind(&mut tmp).map_err(io_err)?;
    // Each names a field of its record (the configuration ids, a digest,
    // a source id or split), so it is listed as a field warning.
    let problems = report
        .problems
        .into_iter()
        .map(|p| Problem {
            file: display.clone(),
            line: p.line,
            kind: ProblemKind::FieldWarning,
            message: p.message,
        })
        .collect();
    Ok(RunFile {
        display,
        path: path.to_path_buf(),
        size,
        reader: tmp,
        direct: Default::default(),
        copy: Some(PrivateCopy::Unnamed),
        growing: None,
        format,
        notes: report.warnings,
        problems,
        unlisted_problems: report.unlisted_problems,
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
        direct: Default::default(),
        copy: Some(PrivateCopy::Named {
            _removed_on_drop: temp_path,
        }),
        growing: None,
        format: Format::Native,
        notes: Vec::new(),
        problems: Vec::new(),
        unlisted_problems: 0,
    })
}
