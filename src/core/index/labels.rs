//! [`LabelSets`]: each row's labels as one narrow code.
//!
//! A row's family, transformation, versions id and repetition take few
//! values in a run, and fewer still together: a run of a million pairs has
//! about a hundred distinct (family, transformation, versions, repetition)
//! sets. Each distinct set ([`RowLabels`]) is kept once, in a table, and
//! each row holds the code of its set in a [`Narrow`] column: one byte a
//! row while there are fewer than 255 sets, two or four past that (the
//! column widens by itself). A query term on one of these fields is decided
//! once per set, then the codes are scanned ([`LabelSets::retain`]).
//!
//! The status stays in a column of its own: with it the sets are several
//! times as many (647 at a million pairs, past one byte), and the status is
//! the term most queries and the list's default view scan.

use crate::core::column::Narrow;
use crate::core::row::{NO_SYM, NO_VERSIONS, RowLabels, Sym};

/// Each row's [`RowLabels`] as a code: code `c` stands for `sets()[c]`.
#[derive(Debug, Default, Clone)]
pub struct LabelSets {
    codes: Narrow,
    /// Each distinct set, in the order first seen.
    sets: Vec<RowLabels>,
    map: rustc_hash::FxHashMap<RowLabels, u32>,
}

impl LabelSets {
    /// Append a row's labels.
    pub fn push(&mut self, set: RowLabels) {
        let next = self.sets.len() as u32;
        let code = *self.map.entry(set).or_insert(next);
        if code == next {
            self.sets.push(set);
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
    pub fn sets(&self) -> &[RowLabels] {
        &self.sets
    }

    /// The code of row `i`.
    #[inline]
    pub fn code(&self, i: usize) -> Option<u32> {
        self.codes.get(i)
    }

    /// The labels of row `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&RowLabels> {
        self.codes.get(i).and_then(|c| self.sets.get(c as usize))
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
    ///
    /// A term no set satisfies (a value being typed that names no family
    /// yet) keeps nothing, and one every set satisfies keeps every row,
    /// without reading a code: at ten million rows the codes are tens of
    /// megabytes to read on each keystroke.
    pub fn retain(&self, sel: &mut Vec<u32>, mut keep: impl FnMut(&RowLabels) -> bool) {
        let verdict: Vec<bool> = self.sets.iter().map(&mut keep).collect();
        if !verdict.contains(&true) {
            sel.clear();
        } else if !verdict.contains(&false) {
            let len = self.codes.len();
            sel.retain(|&i| (i as usize) < len);
        } else {
            self.codes
                .retain(sel, |c| verdict.get(c as usize).copied().unwrap_or(false));
        }
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A row's labels from four numbers: `spread` distinct values per
    /// field at most, "not recorded" among them.
    fn set(k: [u32; 4], spread: u32) -> RowLabels {
        let v = |x: u32| x % spread;
        let sym = |x: u32| if v(x) == 0 { NO_SYM } else { v(x) };
        RowLabels {
            family: sym(k[0]),
            transformation: sym(k[1]),
            versions: if v(k[2]) == 0 { NO_VERSIONS } else { v(k[2]) },
            repetition: v(k[3]).checked_sub(1),
        }
    }

    /// The codes read back as the four columns the index kept before.
    fn check(sets: &LabelSets, model: &[RowLabels]) {
        assert_eq!(sets.len(), model.len());
        for (i, m) in model.iter().enumerate() {
            assert_eq!(sets.get(i), Some(m), "row {i}");
            assert_eq!(sets.family(i), m.family);
            assert_eq!(sets.transformation(i), m.transformation);
            assert_eq!(sets.versions(i), m.versions);
            assert_eq!(sets.repetition(i), m.repetition);
        }
        let n = model.len();
        assert_eq!(sets.get(n), None);
        assert_eq!(
            (
                sets.family(n),
                sets.transformation(n),
                sets.versions(n),
                sets.repetition(n)
            ),
            (NO_SYM, NO_SYM, NO_VERSIONS, None)
        );
    }

    #[test]
    fn past_255_and_65_535_sets_the_codes_widen_and_read_the_same() {
        for (rows, width) in [(200u32, 1), (3_000, 2), (70_000, 4)] {
            let mut sets = LabelSets::default();
            let mut model = Vec::new();
            for r in 0..rows {
                // Every row a new set: the family and repetition count up.
                let s = RowLabels {
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
            rows in prop::collection::vec(any::<[u32; 4]>(), 0..400),
            spread in prop_oneof![Just(3u32), Just(40), Just(100_000)],
            picks in prop::collection::vec(0u32..420, 0..50),
            want in 0u32..3,
        ) {
            let mut sets = LabelSets::default();
            let model: Vec<RowLabels> = rows.iter().map(|&k| set(k, spread)).collect();
            for &s in &model {
                sets.push(s);
            }
            check(&sets, &model);
            let distinct: std::collections::HashSet<_> = model.iter().collect();
            prop_assert_eq!(sets.sets().len(), distinct.len());
            // A term decided per set keeps exactly the rows it holds for.
            let term = |s: &RowLabels| s.family != NO_SYM && s.versions % 3 == want;
            let picks_all = picks.clone();
            let mut sel = picks.clone();
            let mut asked = 0;
            sets.retain(&mut sel, |s| {
                asked += 1;
                term(s)
            });
            prop_assert_eq!(asked, distinct.len());
            let want: Vec<u32> = picks
                .into_iter()
                .filter(|&i| model.get(i as usize).is_some_and(term))
                .collect();
            prop_assert_eq!(sel, want);
            // A term no set satisfies keeps nothing; one every set
            // satisfies, every row that exists.
            let mut none = picks_all.clone();
            sets.retain(&mut none, |_| false);
            prop_assert!(none.is_empty());
            let mut every = picks_all.clone();
            sets.retain(&mut every, |_| true);
            let exists: Vec<u32> = picks_all
                .into_iter()
                .filter(|&i| (i as usize) < model.len())
                .collect();
            prop_assert_eq!(every, exists);
        }
    }
}
