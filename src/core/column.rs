//! [`Column`]: a per-row table that grows in fixed-size chunks, never by
//! doubling the whole.
//!
//! A `Vec` that doubles as rows arrive holds room for up to twice what it
//! keeps (16.7 M rows of capacity to keep 10 M), and copies everything at
//! each doubling, briefly holding both. A column keeps its elements in
//! chunks of `1 << BITS` elements (64 Ki by default): every chunk but the
//! last is full, and the last grows by doubling only up to one chunk. So at
//! most one chunk is ever unused, whatever the number of rows, and a small
//! run costs no more than a `Vec` would.
//!
//! Reading is by row number ([`Column::get`], `column[i]`), in order
//! ([`Column::iter`], [`Column::range`]), a chunk at a time
//! ([`Column::slices`]) or on rayon's threads ([`Column::par_slices`],
//! [`Column::par_iter`]), so call sites read as they did with a `Vec`.

use std::fmt;
use std::iter::FusedIterator;
use std::ops::{Index, IndexMut, Range};

pub mod narrow;
pub use narrow::Narrow;

/// The default chunk size, as a power of two: 64 Ki elements.
pub const CHUNK_BITS: u32 = 16;

/// A growable table of `T` stored in chunks of `1 << BITS` elements.
#[derive(Clone, PartialEq, Eq)]
pub struct Column<T, const BITS: u32 = CHUNK_BITS> {
    /// Every chunk is full (`1 << BITS` elements) except the last, which
    /// is never empty.
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T, const BITS: u32> Default for Column<T, BITS> {
    fn default() -> Self {
        Column::new()
    }
}

impl<T: fmt::Debug, const BITS: u32> fmt::Debug for Column<T, BITS> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T, const BITS: u32> Column<T, BITS> {
    /// Elements per chunk.
    pub const CHUNK: usize = 1 << BITS;
    const MASK: usize = Self::CHUNK - 1;

    /// An empty column; it allocates nothing until the first push.
    pub const fn new() -> Self {
        Column {
            chunks: Vec::new(),
            len: 0,
        }
    }

    /// The number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the column holds no element.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The element at `i`, if `i < len`: one comparison, as for a slice
    /// (a query reads rows by number in its tightest loops).
    #[inline]
    pub fn get(&self, i: usize) -> Option<&T> {
        if i < self.len {
            // SAFETY: every chunk but the last holds exactly `CHUNK`
            // elements and `len` is their sum (kept by `push` and
            // `truncate`, the only ways elements come and go), so for
            // `i < len` chunk `i >> BITS` exists and holds index
            // `i & MASK`.
            Some(unsafe {
                self.chunks
                    .get_unchecked(i >> BITS)
                    .get_unchecked(i & Self::MASK)
            })
        } else {
            None
        }
    }

    /// The element at `i`, mutably, if `i < len`.
    #[inline]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.chunks.get_mut(i >> BITS)?.get_mut(i & Self::MASK)
    }

    /// The first element.
    pub fn first(&self) -> Option<&T> {
        self.get(0)
    }

    /// The last element.
    pub fn last(&self) -> Option<&T> {
        self.chunks.last()?.last()
    }

    /// Append one element. When the last chunk is full a new one is
    /// started; the last chunk doubles its room up to one chunk only.
    pub fn push(&mut self, value: T) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < Self::CHUNK => {
                if last.len() == last.capacity() {
                    let want = (last.capacity() * 2).max(4).min(Self::CHUNK);
                    last.reserve_exact(want - last.len());
                }
                last.push(value);
            }
            _ => {
                let mut chunk = Vec::with_capacity(4.min(Self::CHUNK));
                chunk.push(value);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    /// Shorten the column to `len` elements (nothing if it is shorter),
    /// giving back the chunks no longer used.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        let keep = len.div_ceil(Self::CHUNK);
        self.chunks.truncate(keep);
        if let Some(last) = self.chunks.last_mut() {
            last.truncate(len - (keep - 1) * Self::CHUNK);
        }
        self.len = len;
    }

    /// Remove every element and give back the memory.
    pub fn clear(&mut self) {
        self.chunks = Vec::new();
        self.len = 0;
    }

    /// The elements in order.
    pub fn iter(&self) -> Iter<'_, T> {
        self.range(0..self.len)
    }

    /// The elements of `range` in order (clamped to the column's length).
    pub fn range(&self, range: Range<usize>) -> Iter<'_, T> {
        let end = range.end.min(self.len);
        let start = range.start.min(end);
        if start == end {
            return Iter {
                front: [].iter(),
                mid: [].iter(),
                back: [].iter(),
                len: 0,
            };
        }
        let (first, last) = (start >> BITS, (end - 1) >> BITS);
        let front_end = if first == last {
            end - (first << BITS)
        } else {
            Self::CHUNK
        };
        let front = self.chunks[first][start & Self::MASK..front_end].iter();
        if first == last {
            return Iter {
                front,
                mid: [].iter(),
                back: [].iter(),
                len: end - start,
            };
        }
        Iter {
            front,
            mid: self.chunks[first + 1..last].iter(),
            back: self.chunks[last][..end - (last << BITS)].iter(),
            len: end - start,
        }
    }

    /// Split off the elements from `at` on into a new column.
    pub fn split_off(&mut self, at: usize) -> Self
    where
        T: Clone,
    {
        let tail: Column<T, BITS> = self.range(at..self.len).cloned().collect();
        self.truncate(at);
        tail
    }

    /// The elements mutably, in order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.chunks.iter_mut().flat_map(|c| c.iter_mut())
    }

    /// The column as contiguous slices, in order: one per chunk.
    pub fn slices(&self) -> impl DoubleEndedIterator<Item = &[T]> + ExactSizeIterator {
        self.chunks.iter().map(|c| c.as_slice())
    }

    /// The column as slices on rayon's threads, each with the row number
    /// of its first element.
    pub fn par_slices(&self) -> impl rayon::iter::IndexedParallelIterator<Item = (usize, &[T])>
    where
        T: Sync,
    {
        use rayon::prelude::*;
        self.chunks
            .par_iter()
            .enumerate()
            .map(|(k, c)| (k << BITS, c.as_slice()))
    }

    /// The elements on rayon's threads, in row order as an indexed
    /// iterator (`enumerate` gives row numbers, `collect` keeps the order).
    pub fn par_iter(&self) -> impl rayon::iter::IndexedParallelIterator<Item = &T>
    where
        T: Sync,
    {
        use rayon::prelude::*;
        (0..self.len).into_par_iter().map(move |i| &self[i])
    }

    /// The elements copied into one `Vec` (for tests and small runs).
    pub fn to_vec(&self) -> Vec<T>
    where
        T: Clone,
    {
        self.iter().cloned().collect()
    }

    /// Bytes held by the elements' storage, used or not (the chunk
    /// table aside): what the column costs in memory.
    pub fn capacity_bytes(&self) -> usize {
        self.chunks.iter().map(|c| c.capacity()).sum::<usize>() * std::mem::size_of::<T>()
    }
}

impl<T: Clone, const BITS: u32> Column<T, BITS> {
    /// Grow or shrink to `len` elements, filling with `value`.
    pub fn resize(&mut self, len: usize, value: T) {
        if len <= self.len {
            self.truncate(len);
            return;
        }
        self.extend(std::iter::repeat_n(value, len - self.len));
    }
}

impl<T, const BITS: u32> Extend<T> for Column<T, BITS> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for v in iter {
            self.push(v);
        }
    }
}

impl<'a, T: Copy + 'a, const BITS: u32> Extend<&'a T> for Column<T, BITS> {
    fn extend<I: IntoIterator<Item = &'a T>>(&mut self, iter: I) {
        self.extend(iter.into_iter().copied());
    }
}

impl<T, const BITS: u32> FromIterator<T> for Column<T, BITS> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut c = Column::new();
        c.extend(iter);
        c
    }
}

impl<T, const BITS: u32> From<Vec<T>> for Column<T, BITS> {
    fn from(v: Vec<T>) -> Self {
        v.into_iter().collect()
    }
}

impl<T, const BITS: u32> Index<usize> for Column<T, BITS> {
    type Output = T;

    /// The element at `i`; panics past the end, as a slice does.
    #[inline]
    fn index(&self, i: usize) -> &T {
        match self.get(i) {
            Some(t) => t,
            None => panic!("row {i} of a column of {} rows", self.len),
        }
    }
}

impl<T, const BITS: u32> IndexMut<usize> for Column<T, BITS> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.chunks[i >> BITS][i & Self::MASK]
    }
}

impl<'a, T, const BITS: u32> IntoIterator for &'a Column<T, BITS> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T, const BITS: u32> IntoIterator for Column<T, BITS> {
    type Item = T;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Vec<T>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.chunks.into_iter().flatten()
    }
}

/// The elements of a [`Column`] (or a range of it) in order.
#[derive(Clone)]
pub struct Iter<'a, T> {
    front: std::slice::Iter<'a, T>,
    mid: std::slice::Iter<'a, Vec<T>>,
    back: std::slice::Iter<'a, T>,
    len: usize,
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    #[inline]
    fn next(&mut self) -> Option<&'a T> {
        loop {
            if let Some(t) = self.front.next() {
                self.len -= 1;
                return Some(t);
            }
            match self.mid.next() {
                Some(c) => self.front = c.iter(),
                None => {
                    let t = self.back.next()?;
                    self.len -= 1;
                    return Some(t);
                }
            }
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len, Some(self.len))
    }

    fn fold<B, F: FnMut(B, &'a T) -> B>(self, init: B, mut f: F) -> B {
        // One tight loop per slice rather than a branch per element.
        let acc = self.front.fold(init, &mut f);
        let acc = self.mid.fold(acc, |acc, c| c.iter().fold(acc, &mut f));
        self.back.fold(acc, f)
    }
}

impl<T> DoubleEndedIterator for Iter<'_, T> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(t) = self.back.next_back() {
                self.len -= 1;
                return Some(t);
            }
            match self.mid.next_back() {
                Some(c) => self.back = c.iter(),
                None => {
                    let t = self.front.next_back()?;
                    self.len -= 1;
                    return Some(t);
                }
            }
        }
    }
}

impl<T> ExactSizeIterator for Iter<'_, T> {}
impl<T> FusedIterator for Iter<'_, T> {}

#[cfg(test)]
mod tests;
