//! [`Strings`]: a run's interned strings, end to end in chunks that the
//! loader and the index share.
//!
//! A run of ten million pairs interns about 1.7 million distinct strings
//! (its case ids, mostly). Kept as a `Box<str>` each, every string costs an
//! allocation and a 16-byte pointer and length; kept end to end with the
//! end of each, a string costs its text and four bytes. The strings go in
//! [`Chunk`]s of [`CHUNK`] strings: string `id` is string `id % CHUNK` of
//! chunk `id / CHUNK`, and every chunk but the last is full. A full chunk
//! is frozen, without room to spare, into an `Arc`: the loader's interner
//! fills the chunks ([`super::super::load`]), sends a copy of each new
//! string for the index to resolve ids at once, and sends each chunk it
//! froze ([`Shared`]), which then replaces the index's copy. So the two
//! hold one copy of every string but the last chunk's.

use std::ops::{Index, Range};
use std::sync::Arc;

use crate::core::row::Sym;

/// Strings per chunk, as a power of two.
const CHUNK_BITS: u32 = 16;
/// Strings per chunk.
pub const CHUNK: usize = 1 << CHUNK_BITS;

/// Up to [`CHUNK`] strings: string `i` is `text[ends[i - 1]..ends[i]]`.
/// The ends are four bytes: a chunk's text stays under 4 GiB (see
/// [`Strings::push`]).
#[derive(Default, Clone, PartialEq, Eq)]
pub struct Chunk {
    text: String,
    ends: Vec<u32>,
}

impl Chunk {
    fn len(&self) -> usize {
        self.ends.len()
    }

    #[inline(always)]
    fn span(&self, i: usize) -> Range<usize> {
        (if i == 0 { 0 } else { self.ends[i - 1] as usize })..self.ends[i] as usize
    }

    /// Whether `s` fits: a chunk holds [`CHUNK`] strings, and text whose
    /// ends fit in four bytes.
    fn fits(&self, s: &str) -> bool {
        self.len() < CHUNK && self.text.len() + s.len() <= u32::MAX as usize
    }

    fn push(&mut self, s: &str) {
        debug_assert!(self.fits(s));
        self.text.push_str(s);
        self.ends.push(self.text.len() as u32);
    }

    fn capacity_bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * std::mem::size_of::<u32>()
    }
}

/// A full chunk the loader froze, for the index to keep instead of its
/// own copy ([`Strings::share`]).
#[derive(Debug, Clone)]
pub struct Shared {
    /// The chunk's number.
    at: usize,
    chunk: Arc<Chunk>,
}

/// Interned strings by id, in chunks (see the module's documentation).
#[derive(Default, Clone, PartialEq, Eq)]
pub struct Strings {
    /// The full chunks, frozen.
    full: Vec<Arc<Chunk>>,
    /// The chunk being filled (never full).
    open: Chunk,
}

impl std::fmt::Debug for Strings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl std::fmt::Debug for Chunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries((0..self.len()).map(|i| &self.text[self.span(i)]))
            .finish()
    }
}

impl Strings {
    /// The number of strings.
    pub fn len(&self) -> usize {
        self.full.len() * CHUNK + self.open.len()
    }

    /// Whether there is no string.
    pub fn is_empty(&self) -> bool {
        self.full.is_empty() && self.open.len() == 0
    }

    /// The chunk of string `i` and its place there, if there is one.
    #[inline(always)]
    fn place(&self, i: usize) -> Option<(&Chunk, usize)> {
        let (c, k) = (i >> CHUNK_BITS, i & (CHUNK - 1));
        let chunk = match self.full.get(c) {
            Some(chunk) => chunk,
            None if c == self.full.len() => &self.open,
            None => return None,
        };
        (k < chunk.len()).then_some((chunk, k))
    }

    /// The string with id `id`, if there is one.
    #[inline]
    pub fn get(&self, id: Sym) -> Option<&str> {
        let (chunk, k) = self.place(id as usize)?;
        Some(&chunk.text[chunk.span(k)])
    }

    /// The bytes of the string with id `id` (empty past the last), without
    /// the check of char boundaries a `str` slice makes: for comparisons.
    #[inline(always)]
    pub fn bytes(&self, id: Sym) -> &[u8] {
        self.place(id as usize)
            .map_or(&[], |(chunk, k)| &chunk.text.as_bytes()[chunk.span(k)])
    }

    /// Add a string; its id is the number of strings before it, so it is
    /// `len() - 1` after. When this fills a chunk, the chunk is frozen and
    /// given back, to be shared. A string whose text would take its chunk
    /// past 4 GiB starts the next chunk, and the rest of the chunk is made
    /// of empty strings (nothing real comes near: 64 Ki strings of 64 KiB).
    pub fn push(&mut self, s: &str) -> Option<Shared> {
        let mut frozen = None;
        if !self.open.fits(s) {
            while self.open.len() < CHUNK {
                self.open.push("");
            }
            frozen = self.freeze();
        }
        self.open.push(s);
        if self.open.len() == CHUNK {
            // Only one chunk fills per push (a string fits an empty chunk).
            frozen = self.freeze();
        }
        frozen
    }

    /// Freeze the open chunk, which is full.
    fn freeze(&mut self) -> Option<Shared> {
        let mut chunk = std::mem::take(&mut self.open);
        chunk.text.shrink_to_fit();
        chunk.ends.shrink_to_fit();
        let chunk = Arc::new(chunk);
        self.full.push(chunk.clone());
        Some(Shared {
            at: self.full.len() - 1,
            chunk,
        })
    }

    /// Keep a chunk frozen elsewhere instead of this one's copy of it
    /// (when they hold the same strings; otherwise nothing changes).
    pub fn share(&mut self, shared: Shared) {
        if let Some(mine) = self.full.get_mut(shared.at)
            && !Arc::ptr_eq(mine, &shared.chunk)
            && **mine == *shared.chunk
        {
            *mine = shared.chunk;
        }
    }

    /// The strings in id order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + DoubleEndedIterator + Clone {
        (0..self.len()).map(|i| &self[i])
    }

    /// The strings in id order, on rayon's threads.
    pub fn par_iter(&self) -> impl rayon::iter::IndexedParallelIterator<Item = &str> {
        use rayon::prelude::*;
        (0..self.len()).into_par_iter().map(|i| &self[i])
    }

    /// Every string copied out (for tests that build runs by hand).
    pub fn to_vec(&self) -> Vec<Box<str>> {
        self.iter().map(Box::from).collect()
    }

    /// Bytes held, used or not: the text and the ends (a shared chunk is
    /// counted whole by each holder).
    pub fn capacity_bytes(&self) -> usize {
        self.full.iter().map(|c| c.capacity_bytes()).sum::<usize>() + self.open.capacity_bytes()
    }
}

/// Bytes of a string [`Strings::ranks`] compares at once, as one integer.
const WINDOW: usize = 8;

/// From this many strings a stretch of [`Strings::ranks`] is sorted on
/// every core.
const RANK_PAR_MIN: usize = 1 << 14;

/// A stretch of the order [`Strings::ranks`] builds whose strings agree
/// on every byte before `depth`: its start, its end and that depth.
type Tied = (usize, usize, usize);

/// The [`WINDOW`] bytes of `s` from `depth` as a big-endian integer, zeros
/// past its end: two windows order as the bytes do, except that a string
/// ending inside the window ties with one that has zero bytes there.
#[inline]
fn window(s: &[u8], depth: usize) -> u64 {
    let mut w = [0u8; WINDOW];
    if let Some(tail) = s.get(depth..) {
        let k = tail.len().min(WINDOW);
        w[..k].copy_from_slice(&tail[..k]);
    }
    u64::from_be_bytes(w)
}

impl Strings {
    /// The byte-order rank of every string, by id: the number of strings
    /// that sort before it (equal strings, which only a chunk's filler
    /// makes, in id order). A sort on a string column sorts these integers.
    ///
    /// The strings are sorted eight bytes at a time, as integers: each gets
    /// its first eight bytes as one integer, the integers are sorted with
    /// the ids, and only the strings still tied get the eight bytes after
    /// what they all share (run ids share long prefixes, such as
    /// `feature-request-0000`) and are sorted again among themselves. The
    /// sorts move integers held side by side instead of comparing text
    /// through pointers across the heap, and within a tied stretch the
    /// strings are read in id order, the order they are stored in.
    pub fn ranks(&self) -> Vec<u32> {
        use rayon::prelude::*;
        let n = self.len();
        let mut order: Vec<(u64, u32)> = (0..n as u32)
            .into_par_iter()
            .map(|id| (window(self.bytes(id), 0), id))
            .collect();
        let mut tied: Vec<Tied> = vec![(0, n, 0)];
        while !tied.is_empty() {
            // The tied stretches, apart, to be settled side by side.
            let mut parts = Vec::with_capacity(tied.len());
            let mut rest: &mut [(u64, u32)] = &mut order;
            let mut at = 0;
            for &(start, end, depth) in &tied {
                let (_, tail) = std::mem::take(&mut rest).split_at_mut(start - at);
                let (part, tail) = tail.split_at_mut(end - start);
                parts.push((start, part, depth));
                rest = tail;
                at = end;
            }
            tied = parts
                .into_par_iter()
                .with_max_len(64)
                .flat_map_iter(|(start, part, depth)| self.settle(start, part, depth))
                .collect();
        }
        let mut rank = vec![0u32; n];
        for (r, &(_, id)) in order.iter().enumerate() {
            rank[id as usize] = r as u32;
        }
        rank
    }

    /// Sort `part` (which starts at `start` of the order) on each string's
    /// window at `depth` (made already at depth 0), and return its
    /// stretches still tied, one window deeper.
    fn settle(&self, start: usize, part: &mut [(u64, u32)], mut depth: usize) -> Vec<Tied> {
        if depth > 0 {
            // Past what every string of the stretch shares (a family's
            // `feature-request-0000`): one sort instead of one a window.
            let first = self.bytes(part[0].1);
            let shared = part.iter().fold(first.len(), |n, e| {
                let s = self.bytes(e.1);
                let n = n.min(s.len());
                first[depth..n]
                    .iter()
                    .zip(&s[depth..n])
                    .position(|(a, b)| a != b)
                    .map_or(n, |k| depth + k)
            });
            depth = shared.max(depth);
            for e in part.iter_mut() {
                e.0 = window(self.bytes(e.1), depth);
            }
        }
        if part.len() >= RANK_PAR_MIN {
            use rayon::prelude::*;
            part.par_sort_unstable();
        } else {
            part.sort_unstable();
        }
        let mut deeper = Vec::new();
        let mut i = 0;
        while i < part.len() {
            let w = part[i].0;
            let j = i + part[i..].iter().take_while(|e| e.0 == w).count();
            let run = &mut part[i..j];
            if run.len() > 1 {
                if run.iter().all(|e| self.bytes(e.1).len() > depth + WINDOW) {
                    // Equal on these eight bytes, and each has more.
                    deeper.push((start + i, start + j, depth + WINDOW));
                } else {
                    // A string that ends in the window: its zero padding
                    // may tie with real zero bytes, so compare the rests.
                    run.sort_unstable_by(|a, b| {
                        let rest = |id: u32| self.bytes(id).get(depth..).unwrap_or_default();
                        rest(a.1).cmp(rest(b.1)).then(a.1.cmp(&b.1))
                    });
                }
            }
            i = j;
        }
        deeper
    }
}

impl Index<usize> for Strings {
    type Output = str;

    /// String `i`; panics past the end, as a slice does.
    fn index(&self, i: usize) -> &str {
        let (chunk, k) = self
            .place(i)
            .unwrap_or_else(|| panic!("string {i} of {}", self.len()));
        &chunk.text[chunk.span(k)]
    }
}

impl<S: AsRef<str>> Extend<S> for Strings {
    fn extend<I: IntoIterator<Item = S>>(&mut self, iter: I) {
        for s in iter {
            self.push(s.as_ref());
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{CHUNK, Strings};

    #[test]
    fn empty_strings_and_the_first_keep_their_ids() {
        let mut s = Strings::default();
        assert!(s.is_empty());
        assert_eq!(s.get(0), None);
        s.extend(["", "a", "", "bc"]);
        assert_eq!(s.len(), 4);
        assert_eq!(s.iter().collect::<Vec<_>>(), ["", "a", "", "bc"]);
        assert_eq!(
            (s.get(0), s.get(1), s.get(3), s.get(4)),
            (Some(""), Some("a"), Some("bc"), None)
        );
        assert_eq!(&s[2], "");
        assert_eq!(s.get(u32::MAX), None);
    }

    #[test]
    fn full_chunks_are_frozen_and_shared() {
        let mut mine = Strings::default();
        let mut theirs = Strings::default();
        let names: Vec<String> = (0..2 * CHUNK + 5).map(|i| format!("case-{i}")).collect();
        let mut shared = Vec::new();
        for n in &names {
            shared.extend(theirs.push(n));
            mine.push(n);
        }
        assert_eq!(shared.len(), 2, "two full chunks");
        assert_eq!((shared[0].at, shared[1].at), (0, 1));
        for s in shared {
            mine.share(s);
        }
        // The full chunks are the loader's, not copies.
        assert!(std::sync::Arc::ptr_eq(&mine.full[0], &theirs.full[0]));
        assert!(std::sync::Arc::ptr_eq(&mine.full[1], &theirs.full[1]));
        assert_eq!(mine, theirs);
        assert_eq!(mine.len(), names.len());
        for (i, n) in names.iter().enumerate() {
            assert_eq!(mine.get(i as u32), Some(n.as_str()));
            assert_eq!(mine.bytes(i as u32), n.as_bytes());
        }
        assert_eq!(mine.get(names.len() as u32), None);
        assert_eq!(mine.bytes(names.len() as u32), b"");
        assert_eq!(mine.get((3 * CHUNK) as u32), None);
        // A chunk of other strings is not taken.
        let mut other = Strings::default();
        let frozen = (0..CHUNK).find_map(|i| other.push(&format!("other-{i}")));
        mine.share(frozen.expect("a full chunk"));
        assert!(std::sync::Arc::ptr_eq(&mine.full[0], &theirs.full[0]));
        // A full chunk keeps no room to spare.
        let chunk = &mine.full[0];
        assert_eq!(chunk.ends.capacity(), CHUNK);
        assert_eq!(chunk.text.capacity(), chunk.text.len());
    }

    /// The ranks by comparing the strings whole.
    fn ranks_compared(s: &Strings) -> Vec<u32> {
        let mut order: Vec<u32> = (0..s.len() as u32).collect();
        order.sort_by(|&a, &b| s.bytes(a).cmp(s.bytes(b)).then(a.cmp(&b)));
        let mut rank = vec![0; s.len()];
        for (r, id) in order.into_iter().enumerate() {
            rank[id as usize] = r as u32;
        }
        rank
    }

    #[test]
    fn ranks_order_long_shared_prefixes_zero_bytes_and_filler() {
        let mut s = Strings::default();
        s.extend([
            "feature-request-000010",
            "feature-request-000002",
            "feature-request-00001",
            "feature-request-000001",
            "feature-",
            "feature-request-",
            "",
            "a\0",
            "a",
            "a\0\0",
            "a\0b",
            "b",
            "ab",
            "été",
            "ét",
            "z",
            // Equal strings (a chunk's filler is empty strings) keep id order.
            "",
            "feature-request-000002",
        ]);
        let r = s.ranks();
        assert_eq!(r, ranks_compared(&s));
        assert_eq!(r[6], 0, "the empty string first");
        assert_eq!(
            r[8], 2,
            "a after both empty strings, before a and a zero byte"
        );
        assert!(r[6] < r[16] && r[1] < r[17], "equal strings in id order");
        // More than a chunk, sorted on every core.
        let mut big = Strings::default();
        for i in 0..(CHUNK + 100) as u32 {
            big.push(&format!("case-{:07}", (i * 7919) % 100_003));
        }
        assert_eq!(big.ranks(), ranks_compared(&big));
    }

    proptest! {
        #[test]
        fn ranks_are_the_order_of_the_bytes(
            v in prop::collection::vec("(case-0{0,12}[0-9]{0,3}|[a\\x00é]{0,10})", 0..200)
        ) {
            let mut s = Strings::default();
            s.extend(&v);
            prop_assert_eq!(s.ranks(), ranks_compared(&s));
        }

        #[test]
        fn strings_read_back_as_a_vec(v in prop::collection::vec(".{0,6}", 0..30)) {
            let mut s = Strings::default();
            s.extend(&v);
            prop_assert_eq!(s.len(), v.len());
            for (i, x) in v.iter().enumerate() {
                prop_assert_eq!(s.get(i as u32), Some(x.as_str()));
                prop_assert_eq!(&s[i], x.as_str());
            }
            let boxed: Vec<Box<str>> = v.iter().map(|x| x.as_str().into()).collect();
            prop_assert_eq!(s.to_vec(), boxed);
            use rayon::prelude::*;
            prop_assert_eq!(s.par_iter().collect::<Vec<_>>(), s.iter().collect::<Vec<_>>());
        }
    }
}
