//! Comparing a run with the one before it: what broke, what the repair
//! fixed, what still fails, and what happened to the decisions made on the
//! earlier run.
//!
//! [`compare`] matches the pairs of OLD and NEW by (case id, variant id,
//! repetition) and gives each one [`ChangeKind`]. It works from the two
//! indexes' rows: each run's rows are sorted on 12-byte keys (a digest of
//! the ids and the repetition, then the row), then merged. Whether a matched pair's
//! inputs changed is told by the inputs digests the loader took; only the
//! lines of pairs whose digests differ are read again, to tell a change
//! from the same inputs written in another key order ([`inputs`]). [`Comparison::decision`] says which reviewer decision a NEW
//! pair has: its own, one carried from OLD (identical inputs), or a stale
//! one (the inputs changed); [`Comparison::carry_plan`] lists the carried
//! decisions to copy into NEW's journal. [`Comparison::movement`] gives
//! each transformation's failure rate in both runs with the Newcombe
//! interval of their difference; [`report`] writes it all as text,
//! Markdown or JSON.

use std::fmt;
use std::hash::{Hash, Hasher};

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::Serialize;

use super::annotations::{Annotation, AnnotationStore, Change, Name, Provenance};
use super::derive::Status;
use super::index::RunIndex;
use super::row::{NO_SYM, Sym};
use super::stats::{Difference, NOT_RECORDED, Rate, newcombe, wilson};

pub mod inputs;
pub mod report;
#[cfg(test)]
mod tests;

/// What happened to one pair between OLD and NEW. A pair *fails* when its
/// status is a failure (fail, boundary, error or invalid: what the list
/// shows and a reviewer diagnoses) and *passes* otherwise (pass, or
/// unchecked: nothing failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Passed in OLD, fails in NEW.
    NewFailures,
    /// Failed in OLD, passes in NEW.
    Fixed,
    /// Fails in both, the same kind of failure, identical inputs.
    StillFailing,
    /// Fails in both, but the kind changed (fail, boundary, error, invalid).
    StatusChanged,
    /// The same ids, different inputs: the two results are not comparable.
    ContentChanged,
    /// In NEW only.
    Added,
    /// In OLD only.
    Removed,
    /// Passes in both.
    UnchangedPass,
}

impl ChangeKind {
    /// Every change, in the order reports list them.
    pub const ALL: [ChangeKind; 8] = [
        ChangeKind::NewFailures,
        ChangeKind::Fixed,
        ChangeKind::StillFailing,
        ChangeKind::StatusChanged,
        ChangeKind::ContentChanged,
        ChangeKind::Added,
        ChangeKind::Removed,
        ChangeKind::UnchangedPass,
    ];

    /// The stable name used in JSON, queries (`change:fixed`) and reports.
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::NewFailures => "new_failures",
            ChangeKind::Fixed => "fixed",
            ChangeKind::StillFailing => "still_failing",
            ChangeKind::StatusChanged => "status_changed",
            ChangeKind::ContentChanged => "content_changed",
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::UnchangedPass => "unchanged_pass",
        }
    }

    /// A short label for a list column.
    pub fn short(self) -> &'static str {
        match self {
            ChangeKind::NewFailures => "NEW",
            ChangeKind::Fixed => "FIXED",
            ChangeKind::StillFailing => "STILL",
            ChangeKind::StatusChanged => "KIND",
            ChangeKind::ContentChanged => "INPUTS",
            ChangeKind::Added => "ADDED",
            ChangeKind::Removed => "GONE",
            ChangeKind::UnchangedPass => "ok",
        }
    }

    /// The change named `s` (its [`ChangeKind::name`]).
    pub fn parse(s: &str) -> Option<ChangeKind> {
        ChangeKind::ALL.into_iter().find(|c| c.name() == s)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The kind of failure a status is, or `None` when the pair passes. Each
/// failing status is its own kind, boundary included: a pair that broke its
/// expectation in OLD and is only a boundary observation in NEW moved from
/// an invariant violation to boundary sensitivity, which a reviewer wants
/// to see (as the statistics keep boundary in a column of its own).
pub fn failure_kind(s: Status) -> Option<Status> {
    s.is_failure().then_some(s)
}

/// The change of a matched pair whose inputs are identical.
pub fn change_of(old: Status, new: Status) -> ChangeKind {
    match (failure_kind(old), failure_kind(new)) {
        (None, None) => ChangeKind::UnchangedPass,
        (None, Some(_)) => ChangeKind::NewFailures,
        (Some(_), None) => ChangeKind::Fixed,
        (Some(a), Some(b)) if a == b => ChangeKind::StillFailing,
        (Some(_), Some(_)) => ChangeKind::StatusChanged,
    }
}

/// No OLD row: the NEW pair was added.
pub const NO_MATCH: u32 = u32::MAX;

/// Two runs matched pair by pair.
#[derive(Debug, Clone, Default)]
pub struct Comparison {
    /// Each NEW row's change, in row order.
    changes: Vec<ChangeKind>,
    /// Each NEW row's OLD row, or [`NO_MATCH`].
    old_of: Vec<u32>,
    /// The OLD rows no NEW pair matched, in row order.
    removed: Vec<u32>,
    counts: [u64; 8],
    /// The OLD run's name, for provenance.
    pub old_name: String,
}

/// A line of a matched pair that could not be read again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompareError {
    pub run: String,
    pub line: u32,
    pub reason: String,
}

impl fmt::Display for CompareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: line {}: {}; the file changed while it was compared — compare again",
            super::text::inert_line(&self.run),
            self.line,
            self.reason
        )
    }
}

impl std::error::Error for CompareError {}

/// A row's place in the merge, twelve bytes: a digest of its (case,
/// variant) ids and its repetition, then its row number. Rows of one trial
/// sort by row number, so the k-th of OLD meets the k-th of NEW. Kept as
/// three words (the digest's high and low halves, the row) so that the
/// array of a million rows holds no padding.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Slot([u32; 3]);

impl Slot {
    fn new(key: u64, row: u32) -> Slot {
        Slot([(key >> 32) as u32, key as u32, row])
    }

    /// The digest of the ids and repetition.
    fn key(self) -> u64 {
        (u64::from(self.0[0]) << 32) | u64::from(self.0[1])
    }

    fn row(self) -> u32 {
        self.0[2]
    }
}

const _: () = assert!(std::mem::size_of::<Slot>() == 12);

/// A digest of each interned string of a run (SipHash with fixed keys, so
/// both runs digest alike).
fn string_digests(index: &RunIndex) -> Vec<u64> {
    index
        .strings()
        .par_iter()
        .map(|s| {
            let mut h = std::hash::DefaultHasher::new();
            s.hash(&mut h);
            h.finish()
        })
        .collect()
}

/// The sorted slots of a run's rows. Each interned string's digest is
/// taken first (eight bytes a distinct string) and dropped before the
/// caller takes the other run's, so that no table of one run's strings is
/// built for the other.
fn slots(index: &RunIndex) -> Vec<Slot> {
    let digests = string_digests(index);
    let id = |s: Sym| digests.get(s as usize).copied().unwrap_or(0);
    let mut out: Vec<Slot> = index
        .rows
        .par_iter()
        .enumerate()
        .map(|(i, r)| {
            let ids =
                id(r.case).rotate_left(29) ^ id(r.variant).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let rep = index.repetition(i).unwrap_or(u32::MAX);
            let key = (ids ^ u64::from(rep)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
            Slot::new(key, i as u32)
        })
        .collect();
    out.par_sort_unstable();
    out
}

/// Match OLD and NEW and find each pair's change.
///
/// A matched pair's inputs are compared by the digests the loader took
/// ([`crate::core::row::InputsDigest`]); only the lines of matched pairs
/// whose digests differ, or were not taken, are read again; a line that
/// cannot be read, or no longer parses, is an error naming it.
pub fn compare(old: &RunIndex, new: &RunIndex) -> Result<Comparison, CompareError> {
    // Both runs' ids and repetitions as 64-bit digests of their text, one
    // run after the other; equal digests are checked against the text.
    let o = slots(old);
    let n = slots(new);
    let same_ids = |a: Slot, b: Slot| {
        let (ia, ib) = (a.row() as usize, b.row() as usize);
        let (ra, rb) = (&old.rows[ia], &new.rows[ib]);
        old.repetition(ia) == new.repetition(ib)
            && old.str(ra.case) == new.str(rb.case)
            && old.str(ra.variant) == new.str(rb.variant)
    };

    let mut old_of = vec![NO_MATCH; new.rows.len()];
    let mut removed = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < o.len() || j < n.len() {
        let order = match (o.get(i), n.get(j)) {
            (Some(a), Some(b)) => a.key().cmp(&b.key()),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match order {
            std::cmp::Ordering::Less => {
                removed.push(o[i].row());
                i += 1;
            }
            std::cmp::Ordering::Greater => j += 1,
            // Two different keys with one digest (2⁻⁶⁴ odds): not a match.
            std::cmp::Ordering::Equal if !same_ids(o[i], n[j]) => {
                removed.push(o[i].row());
                i += 1;
            }
            std::cmp::Ordering::Equal => {
                old_of[n[j].row() as usize] = o[i].row();
                i += 1;
                j += 1;
            }
        }
    }
    drop((o, n));
    removed.sort_unstable();

    let changes: Vec<ChangeKind> = old_of
        .par_iter()
        .enumerate()
        .map(|(i, &m)| {
            let new_row = &new.rows[i];
            let Some(old_row) = old.rows.get(m as usize) else {
                return Ok(ChangeKind::Added);
            };
            if inputs::differ(old, m, new, i as u32)? {
                return Ok(ChangeKind::ContentChanged);
            }
            Ok(change_of(old_row.status(), new_row.status()))
        })
        .collect::<Result<_, CompareError>>()?;
    let mut counts = [0u64; 8];
    for c in &changes {
        counts[c.index()] += 1;
    }
    counts[ChangeKind::Removed.index()] = removed.len() as u64;
    Ok(Comparison {
        changes,
        old_of,
        removed,
        counts,
        old_name: old.display_name(),
    })
}

/// The decision a pair has in the comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision<'s> {
    /// Made on NEW (it wins over OLD's).
    Own(&'s Annotation),
    /// Made on OLD, on a pair whose inputs are identical: it still holds.
    Carried(&'s Annotation),
    /// Made on OLD, but the pair's inputs changed since: shown, never copied.
    Stale(&'s Annotation),
    /// Made on OLD, on a pair NEW no longer has.
    Removed(&'s Annotation),
}

impl<'s> Decision<'s> {
    pub fn annotation(&self) -> &'s Annotation {
        match self {
            Decision::Own(a) | Decision::Carried(a) | Decision::Stale(a) | Decision::Removed(a) => {
                a
            }
        }
    }

    /// Whether the decision was made on pair content that changed since.
    pub fn is_stale(&self) -> bool {
        matches!(self, Decision::Stale(_))
    }

    /// Which run's journal holds it: "new" or "old".
    pub fn from(&self) -> &'static str {
        match self {
            Decision::Own(_) => "new",
            _ => "old",
        }
    }
}

/// One entry of the comparison: a NEW row (with its OLD row when matched)
/// or a removed OLD row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub change: ChangeKind,
    pub new_row: Option<u32>,
    pub old_row: Option<u32>,
}

/// Both runs and their journals, as a comparison reads them.
#[derive(Clone, Copy)]
pub struct Runs<'a> {
    pub old: &'a RunIndex,
    pub old_store: Option<&'a AnnotationStore>,
    pub new: &'a RunIndex,
    pub new_store: Option<&'a AnnotationStore>,
}

/// A carried decision to copy into NEW's journal.
#[derive(Debug, Clone, PartialEq)]
pub struct CarryItem {
    pub new_row: u32,
    pub category: Option<Name>,
    pub note: Option<String>,
    pub source: super::annotations::AnnotationSource,
    pub provenance: Provenance,
}

/// One transformation's movement between the runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Movement {
    pub transformation: String,
    /// Pairs of each change, in [`ChangeKind::ALL`] order.
    #[serde(skip)]
    pub counts: [u64; 8],
    /// Failures out of all pairs of the transformation in OLD and NEW.
    pub old: Option<Rate>,
    pub new: Option<Rate>,
    /// NEW's failure rate minus OLD's, with Newcombe's 95% interval:
    /// negative is fewer failures.
    pub difference: Option<Difference>,
}

impl Comparison {
    /// How many pairs have each change, in [`ChangeKind::ALL`] order.
    pub fn counts(&self) -> [u64; 8] {
        self.counts
    }

    /// How many pairs have this change.
    pub fn count(&self, c: ChangeKind) -> u64 {
        self.counts[c.index()]
    }

    /// The change of NEW row `i` (`None` past the compared rows).
    pub fn change(&self, i: u32) -> Option<ChangeKind> {
        self.changes.get(i as usize).copied()
    }

    /// Each NEW row's change, in row order.
    pub fn changes(&self) -> &[ChangeKind] {
        &self.changes
    }

    /// The OLD row matched with NEW row `i`.
    pub fn old_row(&self, i: u32) -> Option<u32> {
        self.old_of
            .get(i as usize)
            .copied()
            .filter(|&m| m != NO_MATCH)
    }

    /// The OLD rows with no NEW pair, in row order.
    pub fn removed(&self) -> &[u32] {
        &self.removed
    }

    /// Every pair: NEW's rows in order, then OLD's removed rows.
    pub fn entries(&self) -> impl Iterator<Item = Entry> + '_ {
        let new = self.changes.iter().enumerate().map(|(i, &change)| Entry {
            change,
            new_row: Some(i as u32),
            old_row: self.old_row(i as u32),
        });
        let gone = self.removed.iter().map(|&r| Entry {
            change: ChangeKind::Removed,
            new_row: None,
            old_row: Some(r),
        });
        new.chain(gone)
    }

    /// The decision of an entry: NEW's own, else OLD's, carried or stale.
    pub fn decision<'s>(&self, runs: Runs<'s>, e: Entry) -> Option<Decision<'s>> {
        if let Some(i) = e.new_row {
            let row = runs.new.rows.get(i as usize)?;
            if let Some(a) = runs.new.annotation(runs.new_store, row) {
                return Some(Decision::Own(a));
            }
        }
        let old_row = runs.old.rows.get(e.old_row? as usize)?;
        let a = runs.old.annotation(runs.old_store, old_row)?;
        Some(match e.change {
            ChangeKind::Removed => Decision::Removed(a),
            ChangeKind::ContentChanged => Decision::Stale(a),
            _ => Decision::Carried(a),
        })
    }

    /// The carried decisions worth copying into NEW's journal: OLD's
    /// decisions on pairs with identical inputs that fail in NEW and have
    /// no decision there yet. A fixed pair's old diagnosis is history, not
    /// a diagnosis of NEW, and a stale one is never copied.
    pub fn carry_plan(&self, runs: Runs<'_>) -> Vec<CarryItem> {
        self.entries()
            .filter(|e| {
                e.new_row.is_some_and(|i| {
                    runs.new
                        .rows
                        .get(i as usize)
                        .is_some_and(|r| r.status().is_failure())
                })
            })
            .filter_map(|e| match self.decision(runs, e)? {
                Decision::Carried(a) => {
                    Some(CarryItem {
                        new_row: e.new_row?,
                        category: a.category,
                        note: a.note.clone(),
                        source: a.source,
                        provenance: a.carried_from.as_deref().cloned().unwrap_or_else(|| {
                            Provenance {
                                reviewer: a.reviewer.into(),
                                at: a.at.into(),
                                run: self.old_name.clone(),
                            }
                        }),
                    })
                }
                _ => None,
            })
            .collect()
    }

    /// The journal changes of a carry plan, with NEW's record keys (read
    /// from NEW's lines); the error names a line that cannot be read again.
    pub fn carry_changes(
        new: &mut RunIndex,
        plan: &[CarryItem],
    ) -> Result<Vec<(Change, Provenance)>, String> {
        let rows: Vec<u32> = plan.iter().map(|c| c.new_row).collect();
        new.ensure_keys(&rows);
        plan.iter()
            .map(|c| {
                let key = new.key_of(c.new_row)?;
                let row = new.rows[c.new_row as usize];
                Ok((
                    Change {
                        key,
                        case_id: new.str(row.case).into(),
                        variant_id: new.str(row.variant).into(),
                        category: c.category,
                        note: c.note.clone(),
                        source: c.source,
                    },
                    c.provenance.clone(),
                ))
            })
            .collect()
    }

    /// Each transformation's movement, by name; a transformation's OLD
    /// rate counts OLD's pairs of it, its NEW rate NEW's.
    pub fn movement(&self, old: &RunIndex, new: &RunIndex) -> Vec<Movement> {
        #[derive(Default)]
        struct Acc {
            counts: [u64; 8],
            old: (u64, u64),
            new: (u64, u64),
        }
        let name = |index: &'_ RunIndex, t: Sym| -> String {
            if t == NO_SYM {
                NOT_RECORDED.to_string()
            } else {
                index.str(t).to_string()
            }
        };
        let mut by: std::collections::BTreeMap<String, Acc> = Default::default();
        let mut names_old: FxHashMap<Sym, String> = FxHashMap::default();
        for (i, r) in old.rows.iter().enumerate() {
            let t = old.transformation(i);
            let n = names_old.entry(t).or_insert_with(|| name(old, t));
            let a = by.entry(n.clone()).or_default();
            a.old.1 += 1;
            a.old.0 += u64::from(r.status().is_failure());
        }
        let mut names_new: FxHashMap<Sym, String> = FxHashMap::default();
        for (i, r) in new.rows.iter().enumerate() {
            let t = new.transformation(i);
            let n = names_new.entry(t).or_insert_with(|| name(new, t));
            let a = by.entry(n.clone()).or_default();
            a.new.1 += 1;
            a.new.0 += u64::from(r.status().is_failure());
            if let Some(c) = self.changes.get(i) {
                a.counts[c.index()] += 1;
            }
        }
        for &i in &self.removed {
            if old.rows.get(i as usize).is_some() {
                let t = old.transformation(i as usize);
                let n = names_old.entry(t).or_insert_with(|| name(old, t));
                by.entry(n.clone()).or_default().counts[ChangeKind::Removed.index()] += 1;
            }
        }
        by.into_iter()
            .map(|(transformation, a)| {
                let (o, n) = (wilson(a.old.0, a.old.1), wilson(a.new.0, a.new.1));
                let difference = match (&o, &n) {
                    (Some(o), Some(n)) => Some(newcombe(n, o)),
                    _ => None,
                };
                Movement {
                    transformation,
                    counts: a.counts,
                    old: o,
                    new: n,
                    difference,
                }
            })
            .collect()
    }
}
