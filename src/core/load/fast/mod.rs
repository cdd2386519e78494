//! The loader's fast path: one structural scan per line.
//!
//! [`LineReader::parse`] walks the line once with a hand-written JSON
//! scanner that checks the whole grammar as serde_json would (string
//! escapes, control characters, number syntax and range, nesting depth,
//! trailing bytes) and refuses any object that repeats a key. While it
//! walks, it records where the members the slow path reads lie in the line
//! — the top-level fields, `policy`, `expectation`, both sides and their
//! `response` — and the members of each side's `state`; nothing is
//! allocated for the rest of the line. The few values the derivation needs
//! are then read from their spans, with the slow path's rules: a field
//! missing or `null` is not recorded, the first spelling of a field that is
//! present is the one read, and which fields are read at all depends on the
//! others (the top-level thresholds only without a `policy`, the bounds of
//! an expectation only for its kind).
//!
//! The two states are compared as raw bytes; when the second side's state
//! is byte-identical to the first's it is not scanned again (a complete JSON
//! value ends where its text ends, so equal text is an equal, equally valid
//! value). A state object whose text repeats the one the same side had on
//! the reader's previous line (the lines of one case share their source
//! state) is recalled the same way, with its members, and not scanned
//! either. When they differ, members of the second state whose text repeats
//! the first's are stepped over the same way, and only members whose text
//! differs are diffed: laid out where they lie in the line (`Raw`) and
//! walked by the same diff as parsed values (`diff::Tree`), so no value is
//! built.
//!
//! Whenever the slow path ([`crate::core::record::map_record`]) would say
//! anything the fast path does not model — a field of the wrong type, a
//! value out of range, an unknown route, a half policy, a repeated key, two
//! spellings of one field, an escaped object key, a number serde_json
//! rejects, nesting past serde_json's limit — [`LineReader::parse`] returns
//! `None` and the caller takes the slow path, so both give identical rows
//! and problems (the tests in `load/tests/line.rs` check it line by line, and the
//! ones here check that the scanner declines on its own, with nothing
//! validating the line before it).
//!
//! A [`LineReader`] owns everything a line leaves for the next: the scratch
//! the scan records into, the memos of earlier lines and the last record.
//! What [`LineReader::parse`] returns, a [`Parsed`], borrows the reader: the
//! diff it leaves for later ([`Parsed::state_diff`]) reads that line's scan,
//! and the record goes back with [`Parsed::recycle`], both before the
//! reader can read another line.
//!
//! The files, along a line's way: `scan` (the JSON grammar:
//! strings, numbers, keys), `walk` (where the members the slow path reads
//! lie), `memo` (what is kept from line to line), `read` (the values read
//! from their spans), `raw_diff` (the states' diff from their text); `span`
//! (where a value lies). The slot each spelling of a key names comes from
//! [`crate::core::schema`], which the slow path reads too.

mod memo;
mod raw_diff;
mod read;
mod scan;
mod span;
mod walk;

use std::cell::Cell;

use memo::Scratch;
use raw_diff::Node;
use read::read;
use scan::Scan;

pub use raw_diff::Diff;
pub use read::Parsed;
pub(crate) use scan::number_token;

/// Reads lines the fast way, one after another, and keeps what a line
/// leaves for the next: the scratch a scan records into (so that a line
/// allocates nothing for it once the buffers have grown), the state,
/// policy, expectation and keys of earlier lines, and the last record,
/// which the next is written over. The loader keeps one per thread; the
/// lines of a case, read one after another by one reader, recall the state
/// they share.
#[derive(Default)]
pub struct LineReader {
    scratch: Scratch,
    /// The values of the two states laid out for their diff (see
    /// [`Parsed::state_diff`]), a buffer kept from line to line.
    nodes: Cell<Vec<Node>>,
}

impl LineReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Read one line the fast way; `None` sends it to the slow path. What
    /// was read borrows the reader until it is dropped or recycled.
    pub fn parse<'r, 'line>(&'r mut self, line: &'line str) -> Option<Parsed<'r, 'line>> {
        u32::try_from(line.len()).ok()?;
        self.scratch.reset();
        read(line, &mut self.scratch, &self.nodes)
    }

    /// Forget the states, small objects and keys the reader keeps from line
    /// to line, so that what follows reads as on a fresh reader (for the
    /// fuzz targets, whose inputs must each reproduce alone).
    #[doc(hidden)]
    pub fn forget(&mut self) {
        let s = &mut self.scratch;
        s.memo = Default::default();
        s.small = Default::default();
        s.shapes = Default::default();
    }

    /// Whether the structural scan alone accepts `line`, for
    /// `examples/stages.rs`.
    #[doc(hidden)]
    pub fn scan_only(&mut self, line: &str) -> bool {
        if u32::try_from(line.len()).is_err() {
            return false;
        }
        self.scratch.reset();
        Scan {
            b: line.as_bytes(),
            i: 0,
            s: &mut self.scratch,
        }
        .line()
        .is_some()
    }
}

#[cfg(test)]
mod tests;
