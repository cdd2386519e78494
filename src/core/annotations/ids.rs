//! Which shown pairs have which case and variant ids, without a copy of
//! the ids.
//!
//! A pair's annotation names its case and variant ids; the screen asks
//! which pairs carry two given ids (a stale decision, a row whose key must
//! be read) and whether any carries a case id or a variant id at all (two
//! flags per row before any hashing). Keyed by the ids' strings, the index
//! held two more copies of them for every decided pair, and a map of
//! variants for every case: at millions of decisions, a fifth of the time
//! an undo of `Y y` took. Keyed by the ids' hashes, it holds 8 bytes per
//! id pair and nothing per string.
//!
//! Different ids can share a hash, so what it finds is a candidate: a pair
//! found under the hash of `(case, variant)` is checked against its shown
//! annotation by the caller ([`super::Live`]), and the counts by case or
//! variant alone may say yes for an id no pair has (they are filters,
//! always followed by an exact look-up).

use std::collections::hash_map::Entry;
use std::hash::BuildHasher;

use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::core::key::RecordKey;

/// The keys filed under one hash: almost always one.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Keys {
    One(RecordKey),
    Many(Vec<RecordKey>),
}

impl Keys {
    fn as_slice(&self) -> &[RecordKey] {
        match self {
            Keys::One(k) => std::slice::from_ref(k),
            Keys::Many(v) => v,
        }
    }
}

/// Shown pairs by the hashes of their ids.
#[derive(Debug, Default)]
pub(super) struct IdIndex {
    /// hash of (case id, variant id) → the keys of the shown pairs filed there.
    pairs: FxHashMap<u64, Keys>,
    /// hash of a case id → how many shown pairs are filed with it.
    cases: FxHashMap<u64, u32>,
    /// hash of a variant id → how many shown pairs are filed with it.
    variants: FxHashMap<u64, u32>,
}

/// The hash a pair is filed under. (The tuple's hash sets the two strings
/// apart: ("ab", "c") and ("a", "bc") differ.)
fn pair_hash(case_id: &str, variant_id: &str) -> u64 {
    FxBuildHasher.hash_one((case_id, variant_id))
}

fn id_hash(id: &str) -> u64 {
    FxBuildHasher.hash_one(id)
}

fn up(counts: &mut FxHashMap<u64, u32>, h: u64) {
    *counts.entry(h).or_default() += 1;
}

fn down(counts: &mut FxHashMap<u64, u32>, h: u64) {
    if let Some(n) = counts.get_mut(&h) {
        *n -= 1;
        if *n == 0 {
            counts.remove(&h);
        }
    }
}

impl IdIndex {
    /// File the shown pair `key` under its ids.
    pub(super) fn insert(&mut self, key: RecordKey, case_id: &str, variant_id: &str) {
        match self.pairs.entry(pair_hash(case_id, variant_id)) {
            Entry::Vacant(e) => {
                e.insert(Keys::One(key));
            }
            Entry::Occupied(mut e) => {
                let keys = e.get_mut();
                match keys {
                    Keys::One(k) => *keys = Keys::Many(vec![*k, key]),
                    Keys::Many(v) => v.push(key),
                }
            }
        }
        up(&mut self.cases, id_hash(case_id));
        up(&mut self.variants, id_hash(variant_id));
    }

    /// Take the pair `key` out from under the ids it was filed with.
    pub(super) fn remove(&mut self, key: RecordKey, case_id: &str, variant_id: &str) {
        let h = pair_hash(case_id, variant_id);
        let Some(keys) = self.pairs.get_mut(&h) else {
            return;
        };
        let found = match keys {
            Keys::One(k) => {
                let found = *k == key;
                if found {
                    self.pairs.remove(&h);
                }
                found
            }
            Keys::Many(v) => {
                let before = v.len();
                v.retain(|k| *k != key);
                let found = v.len() < before;
                match v.as_slice() {
                    [] => {
                        self.pairs.remove(&h);
                    }
                    [one] => *keys = Keys::One(*one),
                    _ => {}
                }
                found
            }
        };
        if found {
            down(&mut self.cases, id_hash(case_id));
            down(&mut self.variants, id_hash(variant_id));
        }
    }

    /// The keys filed under the hash of these ids: every shown pair with
    /// them, and perhaps pairs with other ids (check each).
    pub(super) fn candidates(&self, case_id: &str, variant_id: &str) -> &[RecordKey] {
        self.pairs
            .get(&pair_hash(case_id, variant_id))
            .map_or(&[], Keys::as_slice)
    }

    /// Whether a shown pair may have this case id (never no when one has).
    pub(super) fn may_name_case(&self, case_id: &str) -> bool {
        self.cases.contains_key(&id_hash(case_id))
    }

    /// Whether a shown pair may have this variant id (never no when one has).
    pub(super) fn may_name_variant(&self, variant_id: &str) -> bool {
        self.variants.contains_key(&id_hash(variant_id))
    }

    /// Room for `additional` more pairs.
    pub(super) fn reserve(&mut self, additional: usize) {
        self.pairs.reserve(additional);
    }

    pub(super) fn clear(&mut self) {
        self.pairs.clear();
        self.cases.clear();
        self.variants.clear();
    }

    /// Every filed key with the hash it is filed under (for tests).
    #[cfg(test)]
    pub(super) fn filed(&self) -> impl Iterator<Item = (u64, &RecordKey)> {
        self.pairs
            .iter()
            .flat_map(|(h, keys)| keys.as_slice().iter().map(move |k| (*h, k)))
    }

    /// Whether the counts by case and by variant are those of `ids`, the
    /// ids of every shown pair (for tests).
    #[cfg(test)]
    pub(super) fn counts_match<'a>(&self, ids: impl Iterator<Item = (&'a str, &'a str)>) -> bool {
        let (mut cases, mut variants) = (FxHashMap::default(), FxHashMap::default());
        for (c, v) in ids {
            up(&mut cases, id_hash(c));
            up(&mut variants, id_hash(v));
        }
        cases == self.cases && variants == self.variants
    }

    /// The hash `(case_id, variant_id)` is filed under (for tests).
    #[cfg(test)]
    pub(super) fn hash_of(case_id: &str, variant_id: &str) -> u64 {
        pair_hash(case_id, variant_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> RecordKey {
        RecordKey([n; 16])
    }

    #[test]
    fn a_key_filed_twice_under_one_hash_is_taken_out_one_at_a_time() {
        let mut ids = IdIndex::default();
        ids.insert(key(1), "c", "v");
        ids.insert(key(2), "c", "v");
        assert_eq!(ids.candidates("c", "v"), &[key(1), key(2)]);
        ids.remove(key(1), "c", "v");
        assert_eq!(ids.candidates("c", "v"), &[key(2)]);
        assert!(ids.may_name_case("c") && ids.may_name_variant("v"));
        ids.remove(key(2), "c", "v");
        assert!(ids.candidates("c", "v").is_empty());
        assert!(!ids.may_name_case("c") && !ids.may_name_variant("v"));
        assert!(ids.pairs.is_empty() && ids.cases.is_empty() && ids.variants.is_empty());
    }

    #[test]
    fn removing_a_key_not_filed_changes_nothing() {
        let mut ids = IdIndex::default();
        ids.insert(key(1), "c", "v");
        ids.remove(key(9), "c", "v");
        ids.remove(key(1), "c", "other");
        assert_eq!(ids.candidates("c", "v"), &[key(1)]);
        assert!(ids.may_name_case("c") && ids.may_name_variant("v"));
        assert!(!ids.may_name_variant("other"));
    }

    #[test]
    fn the_split_between_case_and_variant_counts() {
        assert_ne!(pair_hash("ab", "c"), pair_hash("a", "bc"));
        let mut ids = IdIndex::default();
        ids.insert(key(1), "ab", "c");
        assert!(ids.candidates("a", "bc").is_empty());
    }
}
