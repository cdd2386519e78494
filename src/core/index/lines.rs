//! The lines of many rows read again in one pass: a text search reads
//! every line in view, `Y` the record key of every failure in view.
//!
//! One `pread` a line costs a system call and a page-cache lookup for each
//! of millions of lines, and on a run larger than memory it leaves the
//! kernel to guess how far to read ahead. So the lines are visited in the
//! order they lie in their files, and lines close together are read in one
//! span of up to a few MiB, the bytes between them included. On a run larger
//! than memory each span's pages are given back once read, so the page
//! cache never fills with a file read once (see
//! [`drop_behind`](crate::core::load::drop_behind)).

use std::io;

use super::RunIndex;
use crate::core::row::Loc;

/// Lines at most this far apart are read in one span, with what lies
/// between them.
const GAP: u64 = if cfg!(test) { 16 } else { 64 << 10 };

/// The most bytes read in one span; a longer line is read alone, whole.
const SPAN: u64 = if cfg!(test) { 256 } else { 4 << 20 };

impl RunIndex {
    /// Call `f(k, line)` for each `rows[k]` with its line as
    /// [`RunIndex::read_line`] reads it, in the order the lines lie in their
    /// files (not the order of `rows`). A row past the end of the index, or
    /// a line that cannot be read, comes with an error.
    pub fn for_each_line(&self, rows: &[u32], mut f: impl FnMut(usize, io::Result<&[u8]>)) {
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
        // Each span: the lines `locs[s..e]`, the bytes `start..end` of a file.
        let mut spans: Vec<(usize, usize, u64, u64)> = Vec::new();
        let mut s = 0;
        while s < locs.len() {
            let (first, _) = locs[s];
            let start = first.pos.offset();
            let mut end = start + u64::from(first.len);
            let mut e = s + 1;
            while let Some((l, _)) = locs.get(e) {
                let (offset, len) = (l.pos.offset(), u64::from(l.len));
                if l.pos.file() != first.pos.file()
                    || offset > end + GAP
                    || offset + len - start > SPAN
                {
                    break;
                }
                end = end.max(offset + len);
                e += 1;
            }
            spans.push((s, e, start, end));
            s = e;
        }
        let file_of = |s: usize| self.files.get(locs[s].0.file() as usize);
        let mut buf = Vec::new();
        for (n, &(s, e, start, end)) in spans.iter().enumerate() {
            // The disk reads the next span while this one is searched.
            if let Some(&(s2, _, start2, end2)) = spans.get(n + 1)
                && let Some(next) = file_of(s2)
            {
                next.read_ahead(start2, end2 - start2);
            }
            let span = &locs[s..e];
            let file = file_of(s);
            buf.resize((end - start) as usize, 0);
            match file.map(|file| file.read_at(&mut buf, start).map(|()| file)) {
                Some(Ok(file)) => {
                    for &(l, k) in span {
                        let at = (l.pos.offset() - start) as usize;
                        f(k, Ok(&buf[at..at + l.len as usize]));
                    }
                    file.give_back_range(start, end - start);
                }
                // No such file, or it changed or failed under the span:
                // each line on its own, for the error of each.
                _ => {
                    for &(l, k) in span {
                        match self.read_line(l) {
                            Ok(line) => f(k, Ok(&line)),
                            Err(e) => f(k, Err(e)),
                        }
                    }
                }
            }
        }
    }
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

    proptest! {
        /// Read in spans or one by one, in any order, with rows named twice
        /// or past the end: the same lines.
        #[test]
        fn lines_read_in_spans_are_the_lines_read_one_by_one(
            sizes in proptest::collection::vec(0usize..300, 1..40),
            crlf in any::<bool>(),
            picks in proptest::collection::vec(0u32..50, 0..80),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let (index, _) = index_at(dir.path(), &sizes, crlf);
            prop_assert_eq!(index.rows.len(), sizes.len());
            let n = index.rows.len() as u32;
            let got = lines_of(&index, &picks);
            for (k, &i) in picks.iter().enumerate() {
                let want = (i < n).then(|| index.read_line(index.loc(i as usize)).unwrap());
                prop_assert_eq!(&got[k], &want, "row {}", i);
            }
        }
    }

    /// A file cut short under the index: the lines still there read, the
    /// others come with an error.
    #[test]
    fn a_file_cut_short_fails_only_the_lines_it_lost() {
        let dir = tempfile::tempdir().unwrap();
        let (index, path) = index_at(dir.path(), &[40, 40, 40, 40], false);
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
