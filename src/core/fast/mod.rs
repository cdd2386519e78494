//! The loader's fast path: one structural scan per line.
//!
//! [`parse_fast`] walks the line once with a hand-written JSON scanner that
//! checks the whole grammar as serde_json would (string escapes, control
//! characters, number syntax and range, nesting depth, trailing bytes) and
//! refuses any object that repeats a key. While it walks, it records where
//! the members the slow path reads lie in the line — the top-level fields,
//! `policy`, `expectation`, both sides and their `response` — and the members
//! of each side's `state`; nothing is allocated for the rest of the line.
//! The few values the derivation needs are then read from their spans, with
//! the slow path's rules: a field missing or `null` is not recorded, the
//! first spelling of a field that is present is the one read, and which
//! fields are read at all depends on the others (the top-level thresholds
//! only without a `policy`, the bounds of an expectation only for its kind).
//!
//! The two states are compared as raw bytes; when the second side's state
//! is byte-identical to the first's it is not scanned again (a complete JSON
//! value ends where its text ends, so equal text is an equal, equally valid
//! value). A state object whose text repeats the one the same side had on
//! the thread's previous line (the lines of one case share their source
//! state) is recalled the same way, with its members, and not scanned
//! either. When they differ, members of the second state whose text repeats
//! the first's are stepped over the same way, and only members whose text
//! differs are diffed: laid out where they lie in the line (`Raw`) and
//! walked by the same diff as parsed values (`diff::Tree`), so no value is
//! built.
//!
//! Whenever the slow path ([`crate::core::record::map_record`]) would say anything
//! the fast path does not model — a field of the wrong type, a value out of
//! range, an unknown route, a half policy, a repeated key, two spellings of
//! one field, an escaped object key, a number serde_json rejects, nesting
//! past serde_json's limit — [`parse_fast`] returns `None` and the caller
//! takes the slow path, so both give identical rows and problems (the tests
//! in `index.rs` check it line by line, and the ones below check that the
//! scanner declines on its own, with nothing validating the line before it).

mod fields;
mod memo;
mod raw_diff;
mod read;
mod scan;
mod span;
mod walk;

use std::cell::RefCell;

use crate::core::diff::DiffEntry;
use crate::core::model::PairRecord;

use memo::Scratch;
use raw_diff::{Members, diff_members};
use read::read;
use scan::Scan;

pub use raw_diff::Diff;
pub use read::Fast;
pub(crate) use scan::number_token;

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Give a record made by [`parse_fast`] back, so that the thread's next
/// record is written over it.
pub fn recycle(r: Box<PairRecord>) {
    SCRATCH.with(|c| {
        if let Ok(mut s) = c.try_borrow_mut() {
            s.spare = Some(r);
        }
    });
}

/// Read one line the fast way; `None` sends it to the slow path.
pub fn parse_fast(line: &str) -> Option<Fast<'_>> {
    u32::try_from(line.len()).ok()?;
    SCRATCH.with(|c| match c.try_borrow_mut() {
        Ok(mut scratch) => {
            scratch.reset();
            read(line, &mut scratch)
        }
        Err(_) => read(line, &mut Scratch::default()),
    })
}

/// Forget the states this thread's scans keep from line to line, so that
/// what follows reads as if on a fresh thread (for the fuzz targets, whose
/// inputs must each reproduce alone).
#[doc(hidden)]
pub fn forget_states() {
    SCRATCH.with(|c| {
        if let Ok(mut s) = c.try_borrow_mut() {
            s.memo = Default::default();
            s.small = Default::default();
            s.shapes = Default::default();
        }
    });
}

/// Whether the structural scan alone accepts `line`, for
/// `examples/stages.rs`.
#[doc(hidden)]
pub fn scan_only(line: &str) -> bool {
    u32::try_from(line.len()).is_ok()
        && SCRATCH.with(|c| {
            let mut s = c.borrow_mut();
            s.reset();
            Scan {
                b: line.as_bytes(),
                i: 0,
                s: &mut s,
            }
            .line()
            .is_some()
        })
}

/// The diff of the two states of the line this thread read last, which
/// [`parse_fast`] left for later ([`Diff::Later`]); `None` if it cannot be
/// made (the line is then read the slow way). Call it before the thread
/// reads another line.
pub fn state_diff(line: &str) -> Option<Vec<DiffEntry>> {
    SCRATCH.with(|c| {
        let s = c.try_borrow().ok()?;
        if !(s.state_is_object[0] && s.state_is_object[1]) {
            return None;
        }
        let side = |w: usize| Members {
            line,
            spans: &s.members[w],
            twins: &s.twins[w],
        };
        diff_members(side(0), side(1))
    })
}

#[cfg(test)]
mod tests;
