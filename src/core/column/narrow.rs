//! [`Narrow`]: a column of `u32` values stored in the narrowest width that
//! has held every value so far.
//!
//! Most per-row numbers of a run take few values (a versions id, a
//! repetition, the code of a family among a handful): a byte a row holds
//! them where a `u32` would spend four. A narrow column starts at one byte
//! a value, and when a value does not fit it re-codes every value once into
//! the next width (two bytes, then four). [`NONE`] (`u32::MAX`, the
//! "not recorded" of [`crate::core::row::NO_SYM`] and of a repetition)
//! is representable at every width: it is stored as the width's largest
//! value, so the widths hold `0..=254`, `0..=65_534` and every `u32`.
//!
//! The storage is a [`Column`], so a narrow column keeps its no-slack
//! property (at most one chunk unused) at every width.

use super::{CHUNK_BITS, Column};

/// The value that stands for "not recorded", representable at every width.
pub const NONE: u32 = u32::MAX;

/// A column of `u32` values, one, two or four bytes each.
#[derive(Clone, PartialEq, Eq)]
pub struct Narrow<const BITS: u32 = CHUNK_BITS> {
    width: Width<BITS>,
}

#[derive(Clone, PartialEq, Eq)]
enum Width<const BITS: u32> {
    U8(Column<u8, BITS>),
    U16(Column<u16, BITS>),
    U32(Column<u32, BITS>),
}

/// A stored width: how a value of the column's type maps to and from `u32`.
trait Cell: Copy {
    /// The stored value that stands for [`NONE`].
    const NONE: Self;
    fn store(v: u32) -> Option<Self>;
    fn load(self) -> u32;
}

macro_rules! cell {
    ($t:ty) => {
        impl Cell for $t {
            const NONE: $t = <$t>::MAX;
            #[inline]
            fn store(v: u32) -> Option<$t> {
                if v == NONE {
                    Some(<$t>::MAX)
                } else {
                    <$t>::try_from(v).ok().filter(|&x| x != <$t>::MAX)
                }
            }
            #[inline]
            fn load(self) -> u32 {
                if self == <$t as Cell>::NONE {
                    NONE
                } else {
                    u32::from(self)
                }
            }
        }
    };
}
cell!(u8);
cell!(u16);

impl Cell for u32 {
    const NONE: u32 = u32::MAX;
    #[inline]
    fn store(v: u32) -> Option<u32> {
        Some(v)
    }
    #[inline]
    fn load(self) -> u32 {
        self
    }
}

impl<const BITS: u32> Default for Narrow<BITS> {
    fn default() -> Self {
        Narrow::new()
    }
}

impl<const BITS: u32> std::fmt::Debug for Narrow<BITS> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Keep the row numbers in `sel` whose value in `col` satisfies `keep`
/// (row numbers past the end go): branch-free on the verdict.
#[inline]
fn retain_in<T: Cell, const BITS: u32>(
    col: &Column<T, BITS>,
    sel: &mut Vec<u32>,
    mut keep: impl FnMut(u32) -> bool,
) {
    let mut n = 0;
    for k in 0..sel.len() {
        let i = sel[k];
        let hit = col.get(i as usize).is_some_and(|&c| keep(c.load()));
        sel[n] = i;
        n += usize::from(hit);
    }
    sel.truncate(n);
}

impl<const BITS: u32> Narrow<BITS> {
    /// An empty column, one byte a value; it allocates nothing until the
    /// first push.
    pub const fn new() -> Self {
        Narrow {
            width: Width::U8(Column::new()),
        }
    }

    /// The number of values.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.width {
            Width::U8(c) => c.len(),
            Width::U16(c) => c.len(),
            Width::U32(c) => c.len(),
        }
    }

    /// Whether the column holds no value.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes each value takes now: 1, 2 or 4.
    pub fn width(&self) -> usize {
        match &self.width {
            Width::U8(_) => 1,
            Width::U16(_) => 2,
            Width::U32(_) => 4,
        }
    }

    /// The value at `i`, if `i < len`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<u32> {
        match &self.width {
            Width::U8(c) => c.get(i).map(|&x| x.load()),
            Width::U16(c) => c.get(i).map(|&x| x.load()),
            Width::U32(c) => c.get(i).copied(),
        }
    }

    /// Append a value, first re-coding the column into a wider type if
    /// `value` does not fit the present one.
    pub fn push(&mut self, value: u32) {
        loop {
            match &mut self.width {
                Width::U8(c) => match u8::store(value) {
                    Some(x) => return c.push(x),
                    None => {
                        let wider = c.iter().map(|&x| widen::<u8, u16>(x)).collect();
                        self.width = Width::U16(wider);
                    }
                },
                Width::U16(c) => match u16::store(value) {
                    Some(x) => return c.push(x),
                    None => {
                        let wider = c.iter().map(|&x| widen::<u16, u32>(x)).collect();
                        self.width = Width::U32(wider);
                    }
                },
                Width::U32(c) => return c.push(value),
            }
        }
    }

    /// The values in order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = u32> + '_> {
        match &self.width {
            Width::U8(c) => Box::new(c.iter().map(|&x| x.load())),
            Width::U16(c) => Box::new(c.iter().map(|&x| x.load())),
            Width::U32(c) => Box::new(c.iter().copied()),
        }
    }

    /// Keep the row numbers in `sel` whose value satisfies `keep`; row
    /// numbers past the end go. The width is matched once, not per row.
    pub fn retain(&self, sel: &mut Vec<u32>, keep: impl FnMut(u32) -> bool) {
        match &self.width {
            Width::U8(c) => retain_in(c, sel, keep),
            Width::U16(c) => retain_in(c, sel, keep),
            Width::U32(c) => retain_in(c, sel, keep),
        }
    }

    /// Bytes held by the values' storage, used or not.
    pub fn capacity_bytes(&self) -> usize {
        match &self.width {
            Width::U8(c) => c.capacity_bytes(),
            Width::U16(c) => c.capacity_bytes(),
            Width::U32(c) => c.capacity_bytes(),
        }
    }
}

/// A stored value re-coded into a wider type ("none" stays "none").
#[inline]
fn widen<A: Cell, B: Cell>(x: A) -> B {
    let v = x.load();
    B::store(v).unwrap_or(B::NONE)
}

impl<const BITS: u32> Extend<u32> for Narrow<BITS> {
    fn extend<I: IntoIterator<Item = u32>>(&mut self, iter: I) {
        for v in iter {
            self.push(v);
        }
    }
}

impl<const BITS: u32> FromIterator<u32> for Narrow<BITS> {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        let mut c = Narrow::new();
        c.extend(iter);
        c
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{NONE, Narrow};

    /// Chunks of four, so that every chunk edge is a few pushes away.
    type Small = Narrow<2>;

    fn check(c: &Small, model: &[u32]) {
        assert_eq!(c.len(), model.len());
        assert_eq!(c.iter().collect::<Vec<_>>(), model);
        for (i, &v) in model.iter().enumerate() {
            assert_eq!(c.get(i), Some(v), "value {i}");
        }
        assert_eq!(c.get(model.len()), None);
    }

    #[test]
    fn each_width_holds_its_largest_value_and_widens_past_it() {
        for (last, first_wider, width) in [(254, 255, 2), (65_534, 65_535, 4)] {
            let mut c = Small::new();
            let mut model = Vec::new();
            for v in [0, last, NONE, 7, last] {
                c.push(v);
                model.push(v);
            }
            let narrow = c.width();
            check(&c, &model);
            c.push(first_wider);
            model.push(first_wider);
            assert!(c.width() > narrow && c.width() <= width);
            check(&c, &model);
        }
        let mut c: Small = [1, 255].into_iter().collect();
        assert_eq!(c.width(), 2);
        c.push(256);
        assert_eq!(c.width(), 2);
        c.push(65_536);
        assert_eq!(c.width(), 4);
        c.push(u32::MAX - 1);
        check(&c, &[1, 255, 256, 65_536, u32::MAX - 1]);
    }

    #[test]
    fn none_stays_none_at_every_width() {
        let mut c = Small::new();
        let mut model = Vec::new();
        for (v, width) in [(NONE, 1), (300, 2), (NONE, 2), (70_000, 4)] {
            c.push(v);
            model.push(v);
            assert_eq!(c.width(), width);
            check(&c, &model);
        }
        assert_eq!(c.get(0), Some(NONE));
        assert_eq!(c.get(2), Some(NONE));
    }

    #[test]
    fn widening_keeps_every_value_across_chunk_edges() {
        // Nine values fill two chunks of four and start a third; the wide
        // value arrives when the last chunk is partly full.
        let mut model: Vec<u32> = (0..9)
            .map(|i| if i % 3 == 0 { NONE } else { i * 20 })
            .collect();
        let mut c: Small = model.iter().copied().collect();
        assert_eq!(c.width(), 1);
        c.push(1_000);
        model.push(1_000);
        check(&c, &model);
        let mut sel: Vec<u32> = (0..12).collect();
        c.retain(&mut sel, |v| v == NONE || v >= 100);
        assert_eq!(sel, [0, 3, 5, 6, 7, 8, 9]);
    }

    proptest! {
        #[test]
        fn a_narrow_column_reads_as_a_vec(
            values in prop::collection::vec(
                prop_oneof![
                    0u32..260,
                    65_530u32..65_540,
                    Just(u32::MAX),
                    any::<u32>(),
                ],
                0..40,
            ),
            picks in prop::collection::vec(0u32..45, 0..20),
        ) {
            let mut c = Small::new();
            let mut model = Vec::new();
            for v in values {
                c.push(v);
                model.push(v);
                prop_assert_eq!(c.get(model.len() - 1), Some(v));
                let max = model.iter().filter(|&&x| x != u32::MAX).max().copied().unwrap_or(0);
                let want = if max < 255 { 1 } else if max < 65_535 { 2 } else { 4 };
                prop_assert_eq!(c.width(), want);
            }
            check(&c, &model);
            let mut sel = picks.clone();
            c.retain(&mut sel, |v| v % 2 == 0);
            let want: Vec<u32> = picks
                .into_iter()
                .filter(|&i| model.get(i as usize).is_some_and(|v| v % 2 == 0))
                .collect();
            prop_assert_eq!(sel, want);
        }
    }
}
