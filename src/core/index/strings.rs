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

    proptest! {
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
