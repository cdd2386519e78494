//! The lines of many rows read again in one pass: a text search reads
//! every line in view, `Y` the record key of every failure in view.
//!
//! One `pread` a line costs a system call and a page-cache lookup for each
//! of millions of lines, and on a run larger than memory it leaves the
//! kernel to guess how far to read ahead. So the lines are visited in the
//! order they lie in their files, and lines close together are read in one
//! span of up to a few MiB, the bytes between them included. A thread of
//! its own reads the next span while the lines of one are searched. On a
//! run larger than memory the spans are read around the page cache
//! ([`direct`](crate::core::load::direct)), or where that cannot be, each
//! span's pages are given back once read, so the page cache never fills
//! with a file read once (see
//! [`drop_behind`](crate::core::load::drop_behind)).
//!
//! [`RunIndex::par_for_each_line`] does the same on every core, each core
//! reading its own stretch of the file.

use std::cell::RefCell;
use std::io;
use std::sync::mpsc;

use super::RunIndex;
use crate::core::load::direct::SpanBuf;
use crate::core::row::Loc;

/// Lines at most this far apart are read in one span, with what lies
/// between them.
const GAP: u64 = if cfg!(test) { 16 } else { 64 << 10 };

/// The most bytes read in one span; a longer line is read alone, whole.
const SPAN: u64 = if cfg!(test) { 256 } else { 4 << 20 };

/// Buffers a pass reads spans into: one being read while the other is searched.
const BUFFERS: usize = 2;

thread_local! {
    /// Span buffers kept between passes on this thread (a search of ten
    /// million pairs is a hundred passes: fresh buffers each time would be
    /// gigabytes of new pages).
    static POOL: RefCell<Vec<SpanBuf>> = const { RefCell::new(Vec::new()) };
}

/// The lines `locs[s..e]`, the bytes `start..end` of one file.
#[derive(Debug, Clone, Copy)]
struct Span {
    s: usize,
    e: usize,
    start: u64,
    end: u64,
}

impl RunIndex {
    /// Call `f(k, line)` for each `rows[k]` with its line as
    /// [`RunIndex::read_line`] reads it, in the order the lines lie in their
    /// files (not the order of `rows`). A row past the end of the index, or
    /// a line that cannot be read, comes with an error.
    pub fn for_each_line(&self, rows: &[u32], mut f: impl FnMut(usize, io::Result<&[u8]>)) {
        let locs = self.in_file_order(rows, &mut f);
        self.visit(&locs, &mut f);
    }

    /// [`RunIndex::for_each_line`] on every core: the lines, in file order,
    /// cut into one stretch per core (none shorter than `min` lines), each
    /// visited with a state of its own made by `init`. Returns the states,
    /// in file order.
    pub fn par_for_each_line<S: Send>(
        &self,
        rows: &[u32],
        min: usize,
        init: impl Fn() -> S + Sync,
        f: impl Fn(&mut S, usize, io::Result<&[u8]>) + Sync,
    ) -> Vec<S> {
        use rayon::prelude::*;
        let mut first = init();
        let locs = self.in_file_order(rows, &mut |k, line| f(&mut first, k, line));
        let part = locs
            .len()
            .div_ceil(rayon::current_num_threads())
            .max(min.max(1));
        let mut states = vec![first];
        if locs.len() <= part {
            let state = &mut states[0];
            self.visit(&locs, &mut |k, line| f(state, k, line));
            return states;
        }
        states.par_extend(locs.par_chunks(part).map(|part| {
            let mut state = init();
            self.visit(part, &mut |k, line| f(&mut state, k, line));
            state
        }));
        states
    }

    /// Where each of `rows` lies, `(loc, k)` for `rows[k]`, sorted by
    /// position; a row past the end of the index goes to `f` with an error.
    fn in_file_order(
        &self,
        rows: &[u32],
        f: &mut impl FnMut(usize, io::Result<&[u8]>),
    ) -> Vec<(Loc, usize)> {
        let mut locs: Vec<(Loc, usize)> = Vec::with_capacity(rows.len());
        for (k, &i) in rows.iter().enumerate() {
            if (i as usize) < self.rows.len() {
                locs.push((self.loc(i as usize), k));
            } else {
                f(
                    k,
                    Err(io::Error::other(format!("no pair number {i} in the run"))),
                );
            }
        }
        if !locs.is_sorted_by_key(|(l, _)| l.pos) {
            locs.sort_unstable_by_key(|(l, _)| l.pos);
        }
        locs
    }

    /// Visit `locs` (sorted by position) in spans, the next span read on a
    /// thread of its own while the lines of one go to `f`.
    fn visit(&self, locs: &[(Loc, usize)], f: &mut impl FnMut(usize, io::Result<&[u8]>)) {
        let spans = spans(locs);
        let mut pool = POOL.with_borrow_mut(std::mem::take);
        pool.resize_with(BUFFERS, SpanBuf::default);
        if spans.len() < 2 {
            for span in &spans {
                let read = self.read_span(span, None, &mut pool[0], locs);
                self.deliver(locs, span, read.map(|()| &pool[0]), f);
            }
        } else {
            pool = std::thread::scope(|scope| {
                // (Made here, so that if `f` panics they close, and the
                // reader stops before the scope waits for it.)
                let (full, filled) = mpsc::sync_channel::<(usize, io::Result<()>, SpanBuf)>(1);
                let (empty, empties) = mpsc::channel::<SpanBuf>();
                for buf in pool.drain(..) {
                    let _ = empty.send(buf);
                }
                let spans = &spans;
                let reader = scope.spawn(move || {
                    for (n, span) in spans.iter().enumerate() {
                        let Ok(mut buf) = empties.recv() else {
                            break;
                        };
                        let read = self.read_span(span, spans.get(n + 1), &mut buf, locs);
                        if full.send((n, read, buf)).is_err() {
                            break;
                        }
                    }
                    empties
                });
                for (n, read, buf) in filled {
                    self.deliver(locs, &spans[n], read.map(|()| &buf), f);
                    let _ = empty.send(buf);
                }
                // Every span went to `f`, and its buffer back to the channel.
                let empties = reader
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                drop(empty);
                empties.into_iter().collect()
            });
        }
        // A buffer grown for one huge line is not kept.
        pool.retain(|b| b.capacity() <= 2 * SPAN as usize);
        POOL.with_borrow_mut(|p| *p = pool);
    }

    /// Read one span's bytes into `buf`, having the kernel start on the
    /// `next` span (when the file is read through the page cache).
    fn read_span(
        &self,
        span: &Span,
        next: Option<&Span>,
        buf: &mut SpanBuf,
        locs: &[(Loc, usize)],
    ) -> io::Result<()> {
        let file_of = |s: usize| self.files.get(locs[s].0.file() as usize);
        if let Some(next) = next
            && let Some(next_file) = file_of(next.s)
        {
            next_file.read_ahead(next.start, next.end - next.start);
        }
        let file = file_of(span.s).ok_or_else(|| io::Error::other("no such input file"))?;
        file.read_span(buf, span.start, (span.end - span.start) as usize)
    }

    /// The lines of one span to `f`: from the span's bytes when they were
    /// read, else each line read alone, for the error of each (no such
    /// file, or it changed or failed under the span).
    fn deliver(
        &self,
        locs: &[(Loc, usize)],
        span: &Span,
        read: io::Result<&SpanBuf>,
        f: &mut impl FnMut(usize, io::Result<&[u8]>),
    ) {
        let lines = &locs[span.s..span.e];
        match read {
            Ok(buf) => {
                let bytes = buf.bytes();
                for &(l, k) in lines {
                    let at = (l.pos.offset() - span.start) as usize;
                    f(k, Ok(&bytes[at..at + l.len as usize]));
                }
            }
            Err(_) => {
                for &(l, k) in lines {
                    match self.read_line(l) {
                        Ok(line) => f(k, Ok(&line)),
                        Err(e) => f(k, Err(e)),
                    }
                }
            }
        }
    }
}

/// `locs` (sorted by position) cut into spans.
fn spans(locs: &[(Loc, usize)]) -> Vec<Span> {
    let mut spans = Vec::new();
    let mut s = 0;
    while s < locs.len() {
        let (first, _) = locs[s];
        let start = first.pos.offset();
        let mut end = start + u64::from(first.len);
        let mut e = s + 1;
        while let Some((l, _)) = locs.get(e) {
            let (offset, len) = (l.pos.offset(), u64::from(l.len));
            if l.pos.file() != first.pos.file() || offset > end + GAP || offset + len - start > SPAN
            {
                break;
            }
            end = end.max(offset + len);
            e += 1;
        }
        spans.push(Span { s, e, start, end });
        s = e;
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::index::{OpenOptions, load_run};
    use proptest::prelude::*;
    use std::path::{Path, PathBuf};

    /// A run of one record a size, each padded by that many bytes; before
    /// each size divisible by 7, a line that is not a record (a gap).
    fn index_at(dir: &Path, sizes: &[usize], crlf: bool) -> (RunIndex, PathBuf) {
        let end = if crlf { "\r\n" } else { "\n" };
        let mut text = String::new();
        for (i, &n) in sizes.iter().enumerate() {
            if n % 7 == 0 {
                text.push_str(&format!("{{not a record {}{end}", "#".repeat(n)));
            }
            let pad = "x".repeat(n);
            text.push_str(&format!(
                "{{\"case_id\":\"c{i}\",\"variant_id\":\"v\",\"passed\":true,\"pad\":\"{pad}\"}}{end}"
            ));
        }
        let path = dir.join("run.jsonl");
        std::fs::write(&path, text).unwrap();
        let p = path.to_string_lossy().to_string();
        (load_run(&[p], &OpenOptions::default()).unwrap(), path)
    }

    fn lines_of(index: &RunIndex, rows: &[u32]) -> Vec<Option<Vec<u8>>> {
        let mut got = vec![None; rows.len()];
        let mut calls = 0;
        index.for_each_line(rows, |k, line| {
            calls += 1;
            got[k] = line.ok().map(<[u8]>::to_vec);
        });
        assert_eq!(calls, rows.len(), "one call a row");
        got
    }

    /// [`lines_of`] on every core, in parts of at least `min` lines: each
    /// part's state is the lines it saw.
    fn par_lines_of(index: &RunIndex, rows: &[u32], min: usize) -> Vec<Option<Vec<u8>>> {
        let parts = index.par_for_each_line(rows, min, Vec::new, |seen, k, line| {
            seen.push((k, line.ok().map(<[u8]>::to_vec)));
        });
        let mut got = vec![None; rows.len()];
        let mut calls = 0;
        for (k, line) in parts.into_iter().flatten() {
            calls += 1;
            got[k] = line;
        }
        assert_eq!(calls, rows.len(), "one call a row");
        got
    }

    proptest! {
        /// Read in spans or one by one, in any order, with rows named twice
        /// or past the end, through the page cache or around it, on one
        /// core or several: the same lines.
        #[test]
        fn lines_read_in_spans_are_the_lines_read_one_by_one(
            sizes in proptest::collection::vec(0usize..300, 1..40),
            crlf in any::<bool>(),
            picks in proptest::collection::vec(0u32..50, 0..80),
            direct in any::<bool>(),
            min in 1usize..20,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let (index, _) = index_at(dir.path(), &sizes, crlf);
            if direct {
                for file in &index.files {
                    file.read_spans_direct();
                }
            }
            prop_assert_eq!(index.rows.len(), sizes.len());
            let n = index.rows.len() as u32;
            let got = lines_of(&index, &picks);
            let par = par_lines_of(&index, &picks, min);
            for (k, &i) in picks.iter().enumerate() {
                let want = (i < n).then(|| index.read_line(index.loc(i as usize)).unwrap());
                prop_assert_eq!(&got[k], &want, "row {}", i);
                prop_assert_eq!(&par[k], &want, "row {} on every core", i);
            }
        }
    }

    /// Each core reads its own stretch of the file: the parts' lines lie
    /// one after another, whatever the order the rows were named in.
    #[test]
    fn each_core_reads_a_stretch_of_the_file_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let (index, _) = index_at(dir.path(), &[30; 40], false);
        let n = index.rows.len() as u32;
        // Named from the last to the first, every other one first.
        let rows: Vec<u32> = (0..n)
            .rev()
            .filter(|i| i % 2 == 0)
            .chain((0..n).rev().filter(|i| i % 2 == 1))
            .collect();
        let parts = index.par_for_each_line(&rows, 5, Vec::new, |seen, k, _| seen.push(rows[k]));
        let order: Vec<u32> = parts.into_iter().flatten().collect();
        assert_eq!(order, (0..n).collect::<Vec<_>>());
    }

    /// A panic while lines are visited reaches the caller, and the thread
    /// reading ahead stops: nothing hangs.
    #[test]
    fn a_panic_in_the_visitor_ends_the_pass() {
        let dir = tempfile::tempdir().unwrap();
        let (index, _) = index_at(dir.path(), &[100; 30], false);
        let all: Vec<u32> = (0..index.rows.len() as u32).collect();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            index.for_each_line(&all, |k, _| assert!(k < 3, "stop at the fourth line"));
        }));
        assert!(caught.is_err());
        // And the next pass reads every line.
        assert!(lines_of(&index, &all).iter().all(Option::is_some));
    }

    /// A file cut short under the index: the lines still there read, the
    /// others come with an error.
    #[test]
    fn a_file_cut_short_fails_only_the_lines_it_lost() {
        for direct in [false, true] {
            cut_short(direct);
        }
    }

    fn cut_short(direct: bool) {
        let dir = tempfile::tempdir().unwrap();
        let (index, path) = index_at(dir.path(), &[40, 40, 40, 40], false);
        if direct {
            index.files[0].read_spans_direct();
        }
        let all: Vec<u32> = (0..index.rows.len() as u32).collect();
        let before = lines_of(&index, &all);
        assert!(before.iter().all(Option::is_some));
        let third = index.loc(2).pos.offset();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(third + 5).unwrap();
        let after = lines_of(&index, &all);
        assert_eq!(after[..2], before[..2]);
        assert_eq!(after[2..], [None, None]);
    }
}
