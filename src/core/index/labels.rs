//! [`LabelSets`]: each row's status and labels as one narrow code.
//!
//! A row's status, family, transformation, versions id and repetition take
//! few values in a run, and fewer still together: a run of ten million
//! pairs has a few hundred distinct (status, family, transformation,
//! versions, repetition) tuples at most. Each distinct tuple is kept once,
//! in a table, and each row holds the code of its tuple in a [`Narrow`]
//! column: one byte a row while there are fewer than 255 tuples, two or
//! four past that (the column widens by itself). A query term on any of
//! these fields is decided once per tuple, then the codes are scanned
//! ([`LabelSets::retain`]).

use std::ops::Index;

use crate::core::column::Narrow;
use crate::core::derive::Status;
use crate::core::row::{NO_SYM, NO_VERSIONS, RowLabels, Sym};

/// One distinct combination of a row's status and labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LabelSet {
    pub status: Status,
    pub family: Sym,
    pub transformation: Sym,
    /// The versions id ([`RowLabels::versions`]).
    pub versions: u32,
    pub repetition: Option<u32>,
}

impl LabelSet {
    /// A row's status with its labels.
    pub fn new(status: Status, l: RowLabels) -> LabelSet {
        LabelSet {
            status,
            family: l.family,
            transformation: l.transformation,
            versions: l.versions,
            repetition: l.repetition,
        }
    }

    /// The labels without the status.
    pub fn labels(&self) -> RowLabels {
        RowLabels {
            transformation: self.transformation,
            family: self.family,
            versions: self.versions,
            repetition: self.repetition,
        }
    }
}

/// Each row's [`LabelSet`] as a code: code `c` stands for `sets()[c]`.
#[derive(Debug, Default, Clone)]
pub struct LabelSets {
    codes: Narrow,
    /// Each distinct set, in the order first seen.
    sets: Vec<LabelSet>,
    /// The status of each set, beside `sets`: what the status scans read.
    statuses: Vec<Status>,
    map: rustc_hash::FxHashMap<LabelSet, u32>,
}

impl LabelSets {
    /// Append a row's set.
    pub fn push(&mut self, set: LabelSet) {
        let next = self.sets.len() as u32;
        let code = *self.map.entry(set).or_insert(next);
        if code == next {
            self.sets.push(set);
            self.statuses.push(set.status);
        }
        self.codes.push(code);
    }

    /// The number of rows.
    #[inline]
    pub fn len(&self) -> usize {
        self.codes.len()
    }

    /// Whether no row is coded.
    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// The distinct sets, in the order first seen: code `c` is `sets()[c]`.
    pub fn sets(&self) -> &[LabelSet] {
        &self.sets
    }

    /// The code of row `i`.
    #[inline]
    pub fn code(&self, i: usize) -> Option<u32> {
        self.codes.get(i)
    }

    /// The set of row `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&LabelSet> {
        self.codes.get(i).and_then(|c| self.sets.get(c as usize))
    }

    /// The status of row `i`.
    #[inline]
    pub fn status(&self, i: usize) -> Option<Status> {
        self.codes
            .get(i)
            .and_then(|c| self.statuses.get(c as usize).copied())
    }

    /// Row `i`'s family ([`NO_SYM`] past the end).
    #[inline]
    pub fn family(&self, i: usize) -> Sym {
        self.get(i).map_or(NO_SYM, |s| s.family)
    }

    /// Row `i`'s transformation ([`NO_SYM`] past the end).
    #[inline]
    pub fn transformation(&self, i: usize) -> Sym {
        self.get(i).map_or(NO_SYM, |s| s.transformation)
    }

    /// Row `i`'s versions id ([`NO_VERSIONS`] past the end).
    #[inline]
    pub fn versions(&self, i: usize) -> u32 {
        self.get(i).map_or(NO_VERSIONS, |s| s.versions)
    }

    /// Row `i`'s repetition.
    #[inline]
    pub fn repetition(&self, i: usize) -> Option<u32> {
        self.get(i).and_then(|s| s.repetition)
    }

    /// Keep the row numbers in `sel` whose set satisfies `keep`, which is
    /// asked once per distinct set, not per row; row numbers past the end
    /// go.
    pub fn retain(&self, sel: &mut Vec<u32>, mut keep: impl FnMut(&LabelSet) -> bool) {
        let verdict: Vec<bool> = self.sets.iter().map(&mut keep).collect();
        self.codes
            .retain(sel, |c| verdict.get(c as usize).copied().unwrap_or(false));
    }

    /// The statuses, read by row number.
    pub fn statuses(&self) -> Statuses<'_> {
        Statuses { sets: self }
    }

    /// Bytes held by the codes, used or not (the small table aside).
    pub fn capacity_bytes(&self) -> usize {
        self.codes.capacity_bytes()
    }

    /// Bytes each code takes now: 1, 2 or 4.
    pub fn width(&self) -> usize {
        self.codes.width()
    }
}

/// Each row's status, read through its [`LabelSets`] code: `statuses[i]`
/// as with a slice.
#[derive(Debug, Clone, Copy)]
pub struct Statuses<'a> {
    sets: &'a LabelSets,
}

impl Statuses<'_> {
    /// The number of rows.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Row `i`'s status.
    #[inline]
    pub fn get(&self, i: usize) -> Option<Status> {
        self.sets.status(i)
    }

    /// Every row's status, in row order.
    pub fn to_vec(&self) -> Vec<Status> {
        let st = &self.sets.statuses;
        self.sets.codes.iter().map(|c| st[c as usize]).collect()
    }
}

impl Index<usize> for Statuses<'_> {
    type Output = Status;

    /// Row `i`'s status; panics past the end, as a slice does.
    #[inline]
    fn index(&self, i: usize) -> &Status {
        match self.sets.code(i) {
            Some(c) => &self.sets.statuses[c as usize],
            None => panic!("row {i} of {} rows", self.sets.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const STATUSES: [Status; 4] = [
        Status::Fail,
        Status::Invalid,
        Status::Boundary,
        Status::Unchecked,
    ];

    /// A row's set from five numbers: `spread` distinct values per field
    /// at most, "not recorded" among them.
    fn set(k: [u32; 5], spread: u32) -> LabelSet {
        let v = |x: u32| x % spread;
        let sym = |x: u32| if v(x) == 0 { NO_SYM } else { v(x) };
        LabelSet {
            status: STATUSES[(k[0] % 4) as usize],
            family: sym(k[1]),
            transformation: sym(k[2]),
            versions: if v(k[3]) == 0 { NO_VERSIONS } else { v(k[3]) },
            repetition: v(k[4]).checked_sub(1),
        }
    }

    /// The five fields as five columns, as the index kept them before.
    fn check(sets: &LabelSets, model: &[LabelSet]) {
        assert_eq!(sets.len(), model.len());
        for (i, m) in model.iter().enumerate() {
            assert_eq!(sets.get(i), Some(m), "row {i}");
            assert_eq!(sets.status(i), Some(m.status));
            assert_eq!(sets.statuses()[i], m.status);
            assert_eq!(sets.family(i), m.family);
            assert_eq!(sets.transformation(i), m.transformation);
            assert_eq!(sets.versions(i), m.versions);
            assert_eq!(sets.repetition(i), m.repetition);
            assert_eq!(
                m.labels(),
                LabelSet::new(m.status, m.labels()).labels(),
                "row {i}"
            );
        }
        let want: Vec<Status> = model.iter().map(|m| m.status).collect();
        assert_eq!(sets.statuses().to_vec(), want);
        let n = model.len();
        assert_eq!(sets.get(n), None);
        assert_eq!(sets.status(n), None);
        assert_eq!(
            (sets.family(n), sets.versions(n), sets.repetition(n)),
            (NO_SYM, NO_VERSIONS, None)
        );
    }

    #[test]
    fn past_255_and_65_535_sets_the_codes_widen_and_read_the_same() {
        for (rows, width) in [(200u32, 1), (3_000, 2), (70_000, 4)] {
            let mut sets = LabelSets::default();
            let mut model = Vec::new();
            for r in 0..rows {
                // Every row a new set: the family and repetition count up.
                let s = LabelSet {
                    status: STATUSES[(r % 4) as usize],
                    family: r,
                    transformation: r / 7,
                    versions: r % 3,
                    repetition: Some(r / 2),
                };
                sets.push(s);
                model.push(s);
            }
            // And every set again, coded as before.
            for s in model.clone() {
                sets.push(s);
                model.push(s);
            }
            assert_eq!(sets.sets().len(), rows as usize);
            assert_eq!(sets.width(), width, "{rows} sets");
            check(&sets, &model);
        }
    }

    proptest! {
        #[test]
        fn the_codes_give_back_each_rows_fields(
            rows in prop::collection::vec(any::<[u32; 5]>(), 0..400),
            spread in prop_oneof![Just(3u32), Just(40), Just(100_000)],
            picks in prop::collection::vec(0u32..420, 0..50),
            want_status in 0usize..4,
        ) {
            let mut sets = LabelSets::default();
            let model: Vec<LabelSet> = rows.iter().map(|&k| set(k, spread)).collect();
            for &s in &model {
                sets.push(s);
            }
            check(&sets, &model);
            let distinct: std::collections::HashSet<_> = model.iter().collect();
            prop_assert_eq!(sets.sets().len(), distinct.len());
            // A term decided per set keeps exactly the rows it holds for.
            let mut sel = picks.clone();
            let mut asked = 0;
            sets.retain(&mut sel, |s| {
                asked += 1;
                s.status == STATUSES[want_status] && s.family != NO_SYM
            });
            prop_assert_eq!(asked, distinct.len());
            let want: Vec<u32> = picks
                .into_iter()
                .filter(|&i| {
                    model.get(i as usize).is_some_and(|s| {
                        s.status == STATUSES[want_status] && s.family != NO_SYM
                    })
                })
                .collect();
            prop_assert_eq!(sel, want);
        }
    }
}
