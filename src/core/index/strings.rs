//! [`Strings`]: a run's interned strings, end to end in one buffer.
//!
//! A run of ten million pairs interns about 1.4 million distinct strings
//! (its case ids, mostly). Kept as a `Box<str>` each, every string costs an
//! allocation (rounded up, with its allocator header) and a 16-byte
//! pointer and length; kept end to end in one `String` with the end of each
//! (eight bytes), a string costs its text and one offset.

use std::ops::{Index, Range};

use crate::core::row::Sym;

/// Interned strings by id: string `i` is `text[ends[i - 1]..ends[i]]`.
#[derive(Default, Clone, PartialEq, Eq)]
pub struct Strings {
    text: String,
    /// Where each string ends in `text`, by id. A `usize`, not a `u32`:
    /// the text of a run's distinct strings may pass 4 GiB.
    ends: Vec<usize>,
}

impl std::fmt::Debug for Strings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Strings {
    /// The number of strings.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there is no string.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn span(&self, i: usize) -> Range<usize> {
        (if i == 0 { 0 } else { self.ends[i - 1] })..self.ends[i]
    }

    /// The string with id `id`, if there is one.
    #[inline]
    pub fn get(&self, id: Sym) -> Option<&str> {
        let i = id as usize;
        (i < self.ends.len()).then(|| &self.text[self.span(i)])
    }

    /// Add a string; its id is the number of strings before it.
    pub fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.ends.push(self.text.len());
    }

    /// The strings in id order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + DoubleEndedIterator + Clone {
        (0..self.len()).map(|i| &self.text[self.span(i)])
    }

    /// The strings in id order, on rayon's threads.
    pub fn par_iter(&self) -> impl rayon::iter::IndexedParallelIterator<Item = &str> {
        use rayon::prelude::*;
        (0..self.len())
            .into_par_iter()
            .map(|i| &self.text[self.span(i)])
    }

    /// Every string copied out (for tests that build runs by hand).
    pub fn to_vec(&self) -> Vec<Box<str>> {
        self.iter().map(Box::from).collect()
    }

    /// Bytes held, used or not: the text and the ends.
    pub fn capacity_bytes(&self) -> usize {
        self.text.capacity() + self.ends.capacity() * std::mem::size_of::<usize>()
    }
}

impl Index<usize> for Strings {
    type Output = str;

    /// String `i`; panics past the end, as a slice does.
    fn index(&self, i: usize) -> &str {
        &self.text[self.span(i)]
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

    use super::Strings;

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
