//! Where a row's strings are interned: each distinct string is kept once
//! for the whole run and a row holds its id ([`Sym`]).
//!
//! `Strings` checks each field's few recent ids first (one comparison,
//! no decoding), then the `Interner`'s table of every string. New strings
//! go out with the batch ([`super::batch`]) so that the index can resolve
//! the ids.

use std::hash::Hasher;

use rustc_hash::FxHasher;

use crate::core::index::strings::{self, Shared};
use crate::core::row::{NO_SYM, Sym};

/// The loader's interned strings: each stored once, in the chunks it
/// shares with the index ([`strings::Strings`]), with a table of ids hashed
/// by their text (a map keyed by the strings would hold a second copy of
/// each, plus a pointer and length).
#[derive(Default)]
struct Interner {
    strings: strings::Strings,
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

    /// The id of `s`, and whether it was new.
    #[cfg(test)]
    fn intern(&mut self, s: &str) -> (Sym, bool) {
        let (id, new, _) = self
            .intern_bytes(s.as_bytes())
            .unwrap_or((NO_SYM, false, None));
        (id, new)
    }

    /// The id of the UTF-8 text `s`, looked up by its bytes (decoded only
    /// when it is new), whether it was new, and the chunk it filled, if it
    /// did; `None` if it is not UTF-8.
    fn intern_bytes(&mut self, s: &[u8]) -> Option<(Sym, bool, Option<Shared>)> {
        use hashbrown::hash_table::Entry;
        let Interner { strings, table } = self;
        let entry = table.entry(
            Self::hash(s),
            |&id| strings.bytes(id) == s,
            |&id| Self::hash(strings.bytes(id)),
        );
        match entry {
            Entry::Occupied(e) => Some((*e.get(), false, None)),
            Entry::Vacant(e) => {
                let full = strings.push(std::str::from_utf8(s).ok()?);
                let id = (strings.len() - 1) as Sym;
                e.insert(id);
                Some((id, true, full))
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
    /// no decoding. A string seen for the first time is added to `new`, and
    /// a chunk of strings it filled to `full`.
    #[inline]
    pub(super) fn intern(
        &mut self,
        field: Field,
        s: Option<&[u8]>,
        new_strings: &mut Vec<Box<str>>,
        full: &mut Vec<Shared>,
    ) -> Sym {
        let Some(s) = s else { return NO_SYM };
        let slot = &mut self.recent[field as usize][recent_slot(s)];
        if *slot != NO_SYM && self.interned.strings.bytes(*slot) == s {
            return *slot;
        }
        // The bytes are of a line validated as UTF-8.
        let (id, new, filled) = match self.interned.intern_bytes(s) {
            Some(found) => found,
            None => self
                .interned
                .intern_bytes(b"")
                .unwrap_or((NO_SYM, false, None)),
        };
        if new {
            new_strings.push(self.interned.strings.get(id).unwrap_or("").into());
        }
        full.extend(filled);
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
            assert_eq!(i.strings.get(id), Some(s.as_str()));
        }
        assert_eq!(i.strings.len(), 3 + names.len());
    }
}
