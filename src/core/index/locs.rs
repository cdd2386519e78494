//! [`Locs`]: each row's line number and content length, kept beside the
//! rows in a few runs instead of eight bytes a row.
//!
//! A row keeps its line's [`Pos`] (input and offset). In a run file the
//! rest of its [`Loc`] follows from its neighbours: a row's line number is
//! the one before plus one, and its content ends a newline before the next
//! row's line starts. Where that is not so (the first row, lines skipped
//! between rows, blank lines, CRLF, the last row of an input, a converted
//! file where many pairs share a line, rows of several inputs interleaved
//! while following), a new run starts:
//!
//! - line numbers go in runs of rows whose line grows by a constant step
//!   (1 for one row a line, 0 for rows sharing a line);
//! - lengths go in runs of rows that share one rule: either the next row's
//!   line starts a fixed number of bytes after this row's content ends
//!   (one for `\n`, two for `\r\n`), or every row has the same length
//!   (rows sharing a line).
//!
//! The last row's rule waits for the row after it, so the last row's
//! [`Loc`] is kept whole.

use crate::core::row::{Loc, Pos};

/// Rows from `row` on have line `line + (r - row) * step`, up to the next run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LineRun {
    row: u32,
    line: u32,
    step: u32,
}

/// How a row's content length follows from the rows' positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LenRule {
    /// The next row's line starts this many bytes after the row's content
    /// ends, in the same input.
    Gap(u32),
    /// The row's content is this long.
    Fixed(u32),
}

/// Rows from `row` on have their length by `rule`, up to the next run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LenRun {
    row: u32,
    rule: LenRule,
}

/// The line number and length of each row, by row number, given the rows'
/// positions (see the module's documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Locs {
    /// The number of rows.
    len: usize,
    /// Runs of line numbers, by first row; the first starts at row 0.
    lines: Vec<LineRun>,
    /// Runs of length rules for every row but the last, by first row.
    lens: Vec<LenRun>,
    /// The last row's location, whose length rule waits for the next row.
    last: Option<Loc>,
}

impl Locs {
    /// The number of rows.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The runs kept (for figures: a run file in one input keeps two).
    pub fn runs(&self) -> usize {
        self.lines.len() + self.lens.len()
    }

    /// Add the next row's location. Rows are numbered by `u32`.
    pub fn push(&mut self, loc: Loc) {
        let i = self.len as u32;
        match self.last {
            None => self.lines.push(LineRun {
                row: i,
                line: loc.line,
                step: 1,
            }),
            Some(prev) => {
                // The row before's length rule, now that its next row is known.
                let gap = (prev.file() == loc.file())
                    .then(|| {
                        loc.offset()
                            .checked_sub(prev.offset() + u64::from(prev.len))
                    })
                    .flatten()
                    .and_then(|g| u32::try_from(g).ok());
                let rule = gap.map_or(LenRule::Fixed(prev.len), LenRule::Gap);
                if self.lens.last().is_none_or(|r| r.rule != rule) {
                    self.lens.push(LenRun { row: i - 1, rule });
                }
                match self.lines.last_mut() {
                    // A run of one row takes its step from the second.
                    Some(run) if run.row == i - 1 && loc.line >= prev.line => {
                        run.step = loc.line - prev.line;
                    }
                    Some(run) if prev.line.checked_add(run.step) == Some(loc.line) => {}
                    _ => self.lines.push(LineRun {
                        row: i,
                        line: loc.line,
                        step: 1,
                    }),
                }
            }
        }
        self.last = Some(loc);
        self.len += 1;
    }

    /// Row `i`'s location, given each row's position by `pos` (row `i`'s
    /// and, for its length, the next row's): `None` past the last row, or
    /// when `pos` gives no position for row `i`.
    #[inline]
    pub fn get(&self, i: usize, pos: impl Fn(usize) -> Option<Pos>) -> Option<Loc> {
        if i >= self.len {
            return None;
        }
        let here = pos(i)?;
        if i + 1 == self.len {
            let last = self.last?;
            return Some(Loc { pos: here, ..last });
        }
        let run = self.lines[self.lines.partition_point(|r| r.row as usize <= i) - 1];
        // Every row of a run was checked on the way in: no overflow.
        let line = u64::from(run.line) + (i - run.row as usize) as u64 * u64::from(run.step);
        let rule = self.lens[self.lens.partition_point(|r| r.row as usize <= i) - 1].rule;
        let len = match rule {
            LenRule::Fixed(n) => n,
            LenRule::Gap(gap) => pos(i + 1).map_or(0, |next| {
                let len = next
                    .offset()
                    .saturating_sub(here.offset())
                    .saturating_sub(u64::from(gap));
                u32::try_from(len).unwrap_or(u32::MAX)
            }),
        };
        Some(Loc {
            pos: here,
            line: u32::try_from(line).unwrap_or(u32::MAX),
            len,
        })
    }

    /// Bytes held, used or not.
    pub fn capacity_bytes(&self) -> usize {
        self.lines.capacity() * std::mem::size_of::<LineRun>()
            + self.lens.capacity() * std::mem::size_of::<LenRun>()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::Locs;
    use crate::core::row::Loc;

    fn locs_of(all: &[Loc]) -> Locs {
        let mut locs = Locs::default();
        for &l in all {
            locs.push(l);
        }
        locs
    }

    fn read_back(locs: &Locs, all: &[Loc]) -> Vec<Loc> {
        (0..all.len())
            .map(|i| {
                locs.get(i, |j| all.get(j).map(|l| l.pos))
                    .expect("every row has a location")
            })
            .collect()
    }

    /// `n` lines of `len` bytes each, one row a line, ended by `eol` bytes.
    fn lines(file: u16, n: usize, len: u32, eol: u64) -> Vec<Loc> {
        (0..n)
            .map(|i| Loc::new(file, i as u32 + 1, i as u64 * (u64::from(len) + eol), len))
            .collect()
    }

    #[test]
    fn a_plain_run_file_keeps_two_runs_with_lf_or_crlf() {
        for all in [lines(0, 10_000, 700, 1), lines(0, 1000, 90, 2)] {
            let locs = locs_of(&all);
            assert_eq!(locs.runs(), 2);
            assert_eq!(read_back(&locs, &all), all);
            assert_eq!(locs.len(), all.len());
            assert_eq!(locs.get(all.len(), |_| None), None);
        }
    }

    #[test]
    fn the_edges_read_back() {
        // Empty, one row, and a row whose position is not given.
        assert_eq!(locs_of(&[]).get(0, |_| None), None);
        let one = [Loc::new(2, 7, 100, 5)];
        assert_eq!(read_back(&locs_of(&one), &one), one);
        assert_eq!(locs_of(&one).get(0, |_| None), None);
        // A blank line, a skipped line, then rows sharing one line, then an
        // empty row, a second input starting at line 1, and the first again.
        let all = [
            Loc::new(0, 1, 0, 10),
            Loc::new(0, 3, 12, 10),
            Loc::new(0, 5, 40, 10),
            Loc::new(0, 6, 51, 300),
            Loc::new(0, 6, 51, 300),
            Loc::new(0, 6, 51, 300),
            Loc::new(0, 7, 352, 0),
            Loc::new(1, 1, 0, 4),
            Loc::new(1, 2, 5, 4),
            Loc::new(0, 8, 353, 4),
            Loc::new(0, u32::MAX, 358, 4),
            Loc::new(0, u32::MAX, 363, u32::MAX),
        ];
        assert_eq!(read_back(&locs_of(&all), &all), all);
    }

    fn loc() -> impl Strategy<Value = (u16, u32, u64, u32)> {
        // (file, line step, bytes after the content, length), mostly the
        // plain case so that runs do form.
        (
            prop_oneof![8 => Just(0u16), 1 => 0u16..3],
            prop_oneof![6 => Just(1u32), 1 => Just(0), 1 => 2u32..5],
            prop_oneof![6 => Just(1u64), 1 => Just(2), 1 => 0u64..40],
            prop_oneof![4 => 0u32..200, 1 => Just(0)],
        )
    }

    proptest! {
        /// Rows as the loader and the converters make them read back as
        /// they were pushed.
        #[test]
        fn locations_read_back_as_pushed(steps in prop::collection::vec(loc(), 0..200)) {
            let mut all: Vec<Loc> = Vec::new();
            // Where each input's next line starts, and its line number.
            let mut next = [(0u64, 1u32); 3];
            for (file, step, gap, len) in steps {
                let (offset, line) = &mut next[file as usize];
                *line = line.saturating_add(step);
                if step == 0 {
                    // Shares the line of the input's last row, if any.
                    if let Some(l) = all.iter().rev().find(|l| l.file() == file) {
                        all.push(*l);
                        continue;
                    }
                }
                all.push(Loc::new(file, *line, *offset, len));
                *offset += u64::from(len) + gap;
            }
            let locs = locs_of(&all);
            prop_assert_eq!(read_back(&locs, &all), all.clone());
            // Reading row by row as rows arrive (the last row kept whole).
            let mut growing = Locs::default();
            for (i, &l) in all.iter().enumerate() {
                growing.push(l);
                prop_assert_eq!(growing.get(i, |j| all.get(j).map(|l| l.pos)), Some(l));
            }
        }

        /// Any sequence at all, however the positions go.
        #[test]
        fn any_locations_read_back(all in prop::collection::vec(
            (0u16..3, 0u32..6, 0u64..60, 0u32..30).prop_map(|(f, l, o, n)| Loc::new(f, l, o, n)),
            0..100,
        )) {
            prop_assert_eq!(read_back(&locs_of(&all), &all), all.clone());
        }
    }
}
