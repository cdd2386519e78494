//! The second step of a line's path: the loader thread cuts each input into
//! chunks of lines and parses each chunk on every core.
//!
//! `run` is the loader thread's body. For each input, `index_one` reads a
//! chunk (small at first, for a fast first screen, then up to a megabyte),
//! cuts it into lines (`Split`), and parses them in parallel with
//! [`super::line`], while the previous chunk's rows are interned and sent
//! ([`super::batch`]) and the next chunk is read. A line longer than the
//! limit is skipped as it streams by. After the first pass, a followed run
//! is handed to [`super::follow`].

use std::io::{self, Read};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Sender;
use std::time::Instant;

use super::batch::{Batch, IndexState};
use super::follow::{self, Tail};
use super::line::{Line, LineOut, ParseMode, line_at, overlong_line, process_line};
use super::open::{OpenError, RunFile};
use crate::core::problem::{Problem, ProblemKind};

/// Every input of a run as the loader thread reads it: the whole file, a
/// gzip input as it is decompressed, or, when `follow` is set, a file on
/// disk up to its last newline, with the [`Tail`] that reads on after the
/// first pass.
pub(crate) fn inputs(
    files: &[RunFile],
    follow: bool,
) -> Result<(Vec<Input>, Vec<Tail>), OpenError> {
    let mut inputs = Vec::new();
    let mut tails = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let cannot = |e: io::Error| OpenError(format!("triage: cannot read '{}': {e}", f.display));
        let r = f.handle().map_err(cannot)?;
        let reader: Box<dyn Read + Send> = match f.growing_reader(r) {
            Ok(growing) => Box::new(growing),
            Err(r) if follow && f.on_disk() => {
                let idx = u16::try_from(i).unwrap_or(u16::MAX);
                let (reader, tail) = follow::start(&r, &f.path, idx, &f.display).map_err(cannot)?;
                tails.push(tail);
                Box::new(reader)
            }
            Err(r) => super::drop_behind::DropBehind::wrap(r),
        };
        inputs.push(Input {
            display: f.display.clone(),
            reader,
        });
    }
    Ok((inputs, tails))
}

/// The loader thread: index `inputs`, sending batches to `tx`, then follow
/// `tails` until `stop` is set.
pub(crate) fn run(
    inputs: Vec<Input>,
    tails: Vec<Tail>,
    max_line: usize,
    mode: ParseMode,
    tx: Sender<Batch>,
    stop: &AtomicBool,
) {
    // On a worker of the pool, whose scopes then run in place: the
    // chunk loop hands nothing to another thread between chunks.
    let mut st = rayon::scope(|_| index_files(inputs, max_line, mode, tx));
    if !tails.is_empty() {
        follow::follow(&mut st, tails, max_line, mode, stop);
    }
}

/// The first chunk is small so that the first rows reach the screen at once;
/// later chunks grow to this size and are parsed in parallel.
pub(crate) const FIRST_CHUNK: usize = 64 * 1024;
const MAX_CHUNK: usize = 1024 * 1024;
/// Lines parsed together on one thread, at the least.
const PARALLEL_MIN_LINES: usize = 8;

/// One input as the loader thread reads it.
pub(crate) struct Input {
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
    let mut st = IndexState::new(tx);
    for (file_idx, input) in inputs.into_iter().enumerate() {
        let file_idx = u16::try_from(file_idx).unwrap_or(u16::MAX);
        let Input { display, reader } = input;
        if let Err(e) = index_one(&mut st, file_idx, &display, reader, max_line, mode) {
            st.push_problem(Problem {
                file: display.clone(),
                line: 0,
                kind: ProblemKind::Io,
                message: format!(
                    "reading stopped early: {e}; the pairs before it opened — check the file (a copy cut short?) and open it again"
                ),
            });
        }
    }
    st.finish(start.elapsed());
    st
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
    st.add_bytes(fill(&mut *reader, &mut buf, &mut filled, target, &mut eof)?);
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
            s.spawn(|_| recycled = pending.take().map(|p| push_all(st, file_idx, display, p)));
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
        if st.sent_any() {
            pending = Some(parsed);
        } else {
            // The first rows go out at once, for a fast first screen.
            spare = push_all(st, file_idx, display, parsed);
        }
        if last {
            break;
        }
        // A failed read ends the input after the chunk before it is sent.
        st.add_bytes(match read {
            Ok(n) => n,
            Err(e) => {
                if let Some(p) = pending.take() {
                    push_all(st, file_idx, display, p);
                }
                return Err(e);
            }
        });
        buf = next;
        filled = next_filled;
        eof = next_eof;
        (lines, pos) = next_lines;
    }
    if let Some(p) = pending.take() {
        push_all(st, file_idx, display, p);
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

/// Intern and send a parsed chunk; give its buffer back for reuse.
fn push_all(st: &mut IndexState, file_idx: u16, display: &str, p: Parsed) -> Vec<u8> {
    st.push_all(file_idx, display, &p.lines, p.outs, &p.buf);
    p.buf
}
