//! Where a row's strings are interned: each distinct string is kept once
//! for the whole run and a row holds its id ([`Sym`]).
//!
//! `Strings` checks each field's few recent ids first (one comparison,
//! no decoding), then the `Interner`'s table of every string. New strings
//! go out with the batch ([`super::batch`]) so that the index can resolve
//! the ids.

use std::hash::Hasher;

use rustc_hash::FxHasher;

use crate::core::row::{NO_SYM, Sym};

/// The loader's interned strings: each stored once, end to end in one
/// buffer, with a table of ids hashed by their text (a map keyed by the
/// strings would hold a second copy of each, plus a pointer and length).
#[derive(Default)]
struct Interner {
    text: String,
    /// Where each string ends in `text`, by id.
    ends: Vec<usize>,
    table: hashbrown::HashTable<Sym>,
}

impl Interner {
    /// The hash of a string's bytes: the raw table is given hashes, not a
    /// hasher, so the text is hashed here ([`FxHasher`] mixes a string's
    /// bytes in words, and its `finish` brings the well-mixed high bits down
    /// to the low ones that pick the bucket).
    #[inline]
    fn hash(s: &[u8]) -> u64 {
        let mut h = FxHasher::default();
        h.write(s);
        h.finish()
    }

    /// Where the string with id `id` lies in `text`.
    #[inline(always)]
    fn span(ends: &[usize], id: Sym) -> std::ops::Range<usize> {
        let i = id as usize;
        (if i == 0 { 0 } else { ends[i - 1] })..ends[i]
    }

    /// The bytes of the string with id `id` in `text` (no check of char
    /// boundaries: for comparisons).
    #[inline(always)]
    fn bytes_at<'a>(text: &'a str, ends: &[usize], id: Sym) -> &'a [u8] {
        &text.as_bytes()[Self::span(ends, id)]
    }

    /// The string with id `id` in `text`.
    fn at<'a>(text: &'a str, ends: &[usize], id: Sym) -> &'a str {
        &text[Self::span(ends, id)]
    }

    /// The id of `s`, and whether it was new.
    fn intern(&mut self, s: &str) -> (Sym, bool) {
        self.intern_bytes(s.as_bytes()).unwrap_or((NO_SYM, false))
    }

    /// The id of the UTF-8 text `s`, looked up by its bytes (decoded only
    /// when it is new), and whether it was new; `None` if it is not UTF-8.
    fn intern_bytes(&mut self, s: &[u8]) -> Option<(Sym, bool)> {
        use hashbrown::hash_table::Entry;
        let Interner { text, ends, table } = self;
        let entry = table.entry(
            Self::hash(s),
            |&id| Self::bytes_at(text, ends, id) == s,
            |&id| Self::hash(Self::bytes_at(text, ends, id)),
        );
        match entry {
            Entry::Occupied(e) => Some((*e.get(), false)),
            Entry::Vacant(e) => {
                let id = ends.len() as Sym;
                text.push_str(std::str::from_utf8(s).ok()?);
                ends.push(text.len());
                e.insert(id);
                Some((id, true))
            }
        }
    }
}

/// The interned fields of a row, each with its own memo of the last value.
#[derive(Clone, Copy)]
pub(super) enum Field {
    Contract,
    Schema,
    Model,
    Case,
    Variant,
    Transformation,
    Family,
}

impl Field {
    const COUNT: usize = 7;
}

/// Recent ids kept per field.
const RECENT: usize = 64;

/// The slot of `s` among a field's [`RECENT`] ids: a hash of its length
/// and of its first and last eight bytes (where ids of one run differ).
#[inline]
pub(crate) fn recent_slot(s: &[u8]) -> usize {
    let n = s.len();
    let word = |w: &[u8]| u64::from_le_bytes(w.try_into().unwrap_or_default());
    let (head, tail) = if n >= 8 {
        (word(&s[..8]), word(&s[n - 8..]))
    } else {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(s);
        (u64::from_le_bytes(b), 0)
    };
    let h = (head ^ tail.rotate_left(29) ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> (64 - RECENT.trailing_zeros())) as usize
}

/// A run's interned strings, and each field's recent ids.
pub(super) struct Strings {
    interned: Interner,
    /// Each field's recent ids, one per slot chosen by the text's length
    /// and ends (see [`recent_slot`]): neighbouring rows mostly repeat
    /// their case, versions, family and transformation, or cycle through a
    /// few variant ids, and one comparison with the id in the slot is
    /// cheaper than a look-up in the table of every string.
    recent: [[Sym; RECENT]; Field::COUNT],
}

impl Default for Strings {
    fn default() -> Strings {
        Strings {
            interned: Interner::default(),
            recent: [[NO_SYM; RECENT]; Field::COUNT],
        }
    }
}

impl Strings {
    /// The id of `s` (bytes of a line validated as UTF-8, or of a string),
    /// checked against the field's recent id in its slot first, which needs
    /// no decoding. A string seen for the first time is added to `new`.
    #[inline]
    pub(super) fn intern(
        &mut self,
        field: Field,
        s: Option<&[u8]>,
        new_strings: &mut Vec<Box<str>>,
    ) -> Sym {
        let Some(s) = s else { return NO_SYM };
        let slot = &mut self.recent[field as usize][recent_slot(s)];
        if *slot != NO_SYM {
            let Interner { text, ends, .. } = &self.interned;
            if Interner::bytes_at(text, ends, *slot) == s {
                return *slot;
            }
        }
        // The bytes are of a line validated as UTF-8.
        let (id, new) = match self.interned.intern_bytes(s) {
            Some(found) => found,
            None => self.interned.intern(""),
        };
        if new {
            let Interner { text, ends, .. } = &self.interned;
            new_strings.push(Interner::at(text, ends, id).into());
        }
        *slot = id;
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interner_gives_each_string_one_id() {
        let mut i = Interner::default();
        assert_eq!(i.intern(""), (0, true));
        assert_eq!(i.intern("a"), (1, true));
        assert_eq!(i.intern(""), (0, false));
        assert_eq!(i.intern("ab"), (2, true));
        assert_eq!(i.intern("a"), (1, false));
        // Enough strings to grow the table several times.
        let names: Vec<String> = (0..20_000).map(|n| format!("case-{n:06}")).collect();
        let ids: Vec<Sym> = names.iter().map(|s| i.intern(s).0).collect();
        for (s, &id) in names.iter().zip(&ids) {
            assert_eq!(i.intern(s), (id, false));
            assert_eq!(Interner::at(&i.text, &i.ends, id), s);
        }
        assert_eq!(i.ends.len(), 3 + names.len());
    }
}
