//! Record keys of rows, computed only where they are needed.
//!
//! A row's [`RecordKey`] is a digest of its canonical content (see
//! [`crate::core::key`]): it ties an annotation to its pair. Computing it means
//! sorting every object of the line and hashing the result, which is about
//! as much work as the rest of indexing put together, and almost every row
//! never needs it: only the rows an annotation could be on. An annotation
//! records its pair's case and variant ids, and a key covers those ids, so an
//! annotation can only be on a row with the same two ids. The index therefore
//! keeps keys only for
//!
//! - every row whose (case, variant) ids some annotation names, found by
//!   [`RunIndex::resolve_keys`] with two byte look-ups per row, and
//! - every row whose key was asked for ([`RunIndex::key_of`]), say because
//!   the reviewer classified it.
//!
//! The keys are read from the rows' lines on demand, with the same raw
//! scanner the loader used to run on every line.

use rustc_hash::FxHashMap;

use super::RunIndex;
use crate::core::annotations::{Annotation, AnnotationStore};
use crate::core::key::{RecordKey, record_key, record_key_raw};
use crate::core::row::PairRow;

/// The keys an index knows, and how far it has looked for more.
#[derive(Debug, Default)]
pub struct RowKeys {
    /// Key by row location ([`crate::core::row::Loc::id`]).
    by_loc: FxHashMap<u64, RecordKey>,
    /// Rows `0..checked` were looked at for the store revision `revision`.
    checked: usize,
    revision: Option<u64>,
    /// Per interned string: bit 0, perhaps some annotation's case id; bit
    /// 1, perhaps some annotation's variant id (for strings
    /// `0..flags.len()`; never unset when one is, seldom set when none is:
    /// see [`AnnotationStore::may_name_case`]).
    flags: Vec<u8>,
}

const CASE: u8 = 1;
const VARIANT: u8 = 2;

/// The key of a line: the raw scanner, or a full parse when it declines.
pub fn line_key(bytes: &[u8]) -> Option<RecordKey> {
    let text = std::str::from_utf8(bytes).ok()?;
    record_key_raw(text).or_else(|| {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        Some(record_key(&v))
    })
}

impl RunIndex {
    /// The record key of a row, when the index knows it: after
    /// [`RunIndex::resolve_keys`], every row an annotation could be on.
    pub fn key(&self, row: &PairRow) -> Option<RecordKey> {
        self.keys.by_loc.get(&row.pos.id()).copied()
    }

    /// The annotation of a row under its current key.
    pub fn annotation<'s>(
        &self,
        store: Option<&'s AnnotationStore>,
        row: &PairRow,
    ) -> Option<&'s Annotation> {
        let store = store?;
        store.get(&self.current_key(store, row)?)
    }

    /// Whether blind review hides the row's decisions and suggestion: the
    /// store is blind and its reviewer has not decided the pair
    /// ([`AnnotationStore::hides`]).
    pub fn hides(&self, store: Option<&AnnotationStore>, row: &PairRow) -> bool {
        store.is_some_and(|s| s.blind() && self.current_key(s, row).is_none_or(|k| s.hides(&k)))
    }

    /// The reviewer's category of a failing row, if it has a non-blank one
    /// (what the statistics, reports and gates count).
    pub fn failure_category<'s>(
        &self,
        store: Option<&'s AnnotationStore>,
        row: &PairRow,
    ) -> Option<&'s str> {
        if !row.status().is_failure() {
            return None;
        }
        self.annotation(store, row)?
            .category
            .as_deref()
            .filter(|c| !c.trim().is_empty())
    }

    /// The key of a row whenever `store` could hold an annotation for it.
    ///
    /// Right without [`RunIndex::resolve_keys`], fast with it: once the keys
    /// are resolved for this store (and no row came since), a row without a
    /// known key has no annotation and no stale one. Before that, a row whose
    /// ids the store names has its key read from its line here.
    pub fn current_key(&self, store: &AnnotationStore, row: &PairRow) -> Option<RecordKey> {
        if self.keys_resolved(store) {
            // Two byte look-ups rule out almost every row of a large run
            // before any hashing (a query or a sort asks this of each row).
            let flag = |sym: u32| self.keys.flags.get(sym as usize).copied().unwrap_or(0);
            if store.is_empty() || flag(row.case) & CASE == 0 || flag(row.variant) & VARIANT == 0 {
                return None;
            }
            return self.key(row);
        }
        if let Some(k) = self.key(row) {
            return Some(k);
        }
        if store.is_empty() || !store.names(self.str(row.case), self.str(row.variant)) {
            return None;
        }
        self.read_key(row).ok()
    }

    /// Whether [`RunIndex::resolve_keys`] ran for this state of `store` and
    /// no row came since: then every row an annotation could be on has its
    /// key, and its case and variant ids are flagged.
    pub fn keys_resolved(&self, store: &AnnotationStore) -> bool {
        self.keys.revision == Some(store.revision()) && self.keys.checked >= self.rows.len()
    }

    /// The key of row number `i`, read from its line when not known yet.
    /// The error is a message for the screen.
    pub fn key_of(&mut self, i: u32) -> Result<RecordKey, String> {
        let row = *self
            .rows
            .get(i as usize)
            .ok_or_else(|| format!("no pair number {i} in the run"))?;
        if let Some(k) = self.key(&row) {
            return Ok(k);
        }
        let k = self.read_key(&row)?;
        self.keys.by_loc.insert(row.pos.id(), k);
        Ok(k)
    }

    /// `rows` and every other row with the case and variant ids of one of
    /// them, in file order: the rows whose keys a save of decisions on
    /// `rows` makes [`RunIndex::resolve_keys`] look for (a decision is on
    /// the pair its key names, and any row with its two ids could be that
    /// pair). Learnt with `rows`, their lines are read in the same pass
    /// over the run, not in a second one after the save.
    pub fn with_same_ids(&self, rows: &[u32]) -> Vec<u32> {
        use rayon::prelude::*;
        use rustc_hash::FxHashSet;
        let mut ids: FxHashSet<(u32, u32)> = FxHashSet::default();
        // A bit per case id first: most rows are ruled out by one load.
        let mut cases = super::inputs::CaseSet::default();
        for r in rows.iter().filter_map(|&i| self.rows.get(i as usize)) {
            cases.insert(r.case);
            ids.insert((r.case, r.variant));
        }
        if ids.is_empty() {
            return Vec::new();
        }
        let same = |i: usize| {
            let r = &self.rows[i];
            cases.contains(r.case) && ids.contains(&(r.case, r.variant))
        };
        (0..self.rows.len())
            .into_par_iter()
            .with_min_len(1 << 16)
            .filter(|&i| same(i))
            .map(|i| i as u32)
            .collect()
    }

    /// Learn the keys of these rows that are not known yet, reading their
    /// lines in spans ([`RunIndex::for_each_line`]), a part on each core;
    /// returns how many could not be read again.
    pub fn ensure_keys(&mut self, rows: &[u32]) -> usize {
        let missing: Vec<u32> = rows
            .iter()
            .copied()
            .filter(|&i| {
                self.rows
                    .get(i as usize)
                    .is_some_and(|r| self.key(r).is_none())
            })
            .collect();
        let (keys, failed) = self.read_keys(&missing);
        // (`extend` would make room for half, then grow again.)
        self.keys.by_loc.reserve(keys.len());
        self.keys.by_loc.extend(keys);
        failed
    }

    /// The keys of rows `rows` read from their lines in spans, a stretch of
    /// the file on each core, by position; and how many could not be read again.
    fn read_keys(&self, rows: &[u32]) -> (Vec<(u64, RecordKey)>, usize) {
        /// Fewer rows than this are read on one core.
        const PART_MIN: usize = 4096;
        let parts = self.par_for_each_line(
            rows,
            PART_MIN,
            // (Room for a core's share, made once: at millions of keys a
            // vector grown by doubling touches twice the memory.)
            || {
                (
                    Vec::with_capacity(rows.len().div_ceil(rayon::current_num_threads())),
                    0,
                )
            },
            |(keys, failed): &mut (Vec<(u64, RecordKey)>, usize), k, line| {
                let key = line.ok().and_then(line_key);
                match (key, self.rows.get(rows[k] as usize)) {
                    (Some(key), Some(row)) => keys.push((row.pos.id(), key)),
                    _ => *failed += 1,
                }
            },
        );
        let failed = parts.iter().map(|(_, f)| f).sum();
        let mut keys = Vec::with_capacity(rows.len() - failed);
        for (k, _) in parts {
            keys.extend(k);
        }
        (keys, failed)
    }

    /// Remember a key learnt elsewhere (from [`RunIndex::load_pair`]).
    pub fn remember_key(&mut self, row: &PairRow, key: RecordKey) {
        self.keys.by_loc.insert(row.pos.id(), key);
    }

    /// The key read from the row's line, found by its position (the row's
    /// number is not at hand: the line number is looked up for a message).
    fn read_key(&self, row: &PairRow) -> Result<RecordKey, String> {
        let line = || self.row_at(row.pos).map_or(0, |i| self.loc(i).line);
        let bytes = self.read_line_from(row.pos).map_err(|e| {
            format!(
                "line {}: cannot read the line again ({e}); press R to reload the run",
                line()
            )
        })?;
        line_key(&bytes).ok_or_else(|| {
            format!(
                "line {}: the line no longer parses; the file was changed while open — press R to reload the run",
                line()
            )
        })
    }

    /// Learn the key of every row whose ids an annotation in `store` names.
    ///
    /// Cheap to call often: it looks only at rows added since the last call,
    /// unless the store changed, and then at each row's two interned ids
    /// before reading any line. A line that cannot be read again keeps no
    /// key (its row shows no annotation; opening it says the file changed).
    pub fn resolve_keys(&mut self, store: &AnnotationStore) {
        use rayon::prelude::*;
        if self.keys.revision != Some(store.revision()) {
            self.keys.revision = Some(store.revision());
            self.keys.checked = 0;
            self.keys.flags.clear();
        }
        if self.keys.checked >= self.rows.len() {
            return;
        }
        if store.is_empty() {
            self.keys.checked = self.rows.len();
            return;
        }
        if self.keys.flags.len() < self.strings().len() {
            let from = self.keys.flags.len();
            // (On every core: at ten million pairs, millions of strings.)
            let strings = self.strings();
            let new: Vec<u8> = (from..strings.len())
                .into_par_iter()
                .with_min_len(1 << 14)
                .map(|i| {
                    let s = &strings[i];
                    let mut f = 0;
                    if store.may_name_case(s) {
                        f |= CASE;
                    }
                    if store.may_name_variant(s) {
                        f |= VARIANT;
                    }
                    f
                })
                .collect();
            self.keys.flags.extend(new);
        }
        let flag = |flags: &[u8], sym: u32| flags.get(sym as usize).copied().unwrap_or(0);
        // The rows to read, found with two byte look-ups each; then their
        // lines read in spans (after `Y y` on a large run, millions).
        let wanted: Vec<u32> = (self.keys.checked..self.rows.len())
            .into_par_iter()
            .with_min_len(1 << 16)
            .filter(|&i| {
                let row = &self.rows[i];
                flag(&self.keys.flags, row.case) & CASE != 0
                    && flag(&self.keys.flags, row.variant) & VARIANT != 0
                    && !self.keys.by_loc.contains_key(&row.pos.id())
                    && store.names(self.str(row.case), self.str(row.variant))
            })
            .map(|i| i as u32)
            .collect();
        let (found, _) = self.read_keys(&wanted);
        self.keys.by_loc.reserve(found.len());
        self.keys.by_loc.extend(found);
        self.keys.checked = self.rows.len();
    }

    /// How many rows have a known key.
    pub fn known_keys(&self) -> usize {
        self.keys.by_loc.len()
    }

    /// Every known key.
    pub fn known_key_set(&self) -> impl Iterator<Item = &RecordKey> {
        self.keys.by_loc.values()
    }

    /// The run files (indices into [`RunIndex::files`]) whose rows with a
    /// known key have one of `keys`: where a decision on those pairs belongs.
    pub fn files_of_keys(
        &self,
        keys: &std::collections::HashSet<RecordKey>,
    ) -> std::collections::HashMap<RecordKey, Vec<u16>> {
        let mut out: std::collections::HashMap<RecordKey, Vec<u16>> = Default::default();
        for (loc, key) in &self.keys.by_loc {
            if keys.contains(key) {
                let file = crate::core::row::Loc::file_of_id(*loc);
                let files = out.entry(*key).or_default();
                if !files.contains(&file) {
                    files.push(file);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::annotations::{AnnotationSource, Change};
    use crate::core::index::{OpenOptions, load_run};

    use crate::core::index::sample::{SAMPLE, sample};

    /// Each row's key from a full parse of its line.
    fn truth(index: &RunIndex) -> Vec<RecordKey> {
        index
            .rows
            .iter()
            .enumerate()
            .map(|(i, _)| {
                let line = index.read_line(index.loc(i)).expect("the line reads");
                record_key(&serde_json::from_slice(&line).expect("the line parses"))
            })
            .collect()
    }

    fn change(index: &RunIndex, key: RecordKey, i: usize, category: &str) -> Change {
        let r = &index.rows[i];
        Change {
            key,
            case_id: index.str(r.case).into(),
            variant_id: index.str(r.variant).into(),
            category: Some(category.into()),
            note: None,
            source: AnnotationSource::Manual,
        }
    }

    #[test]
    fn the_loader_learns_no_key_and_resolving_learns_only_named_rows() {
        let mut index = sample();
        let keys = truth(&index);
        assert_eq!(index.known_keys(), 0, "indexing computes no key");
        let dir = tempfile::tempdir().expect("temp dir");
        let mut store =
            AnnotationStore::open(&dir.path().join("j.triage.jsonl"), "t").expect("store");
        index.resolve_keys(&store);
        assert_eq!(index.known_keys(), 0, "an empty store names no row");

        store
            .apply(vec![
                change(&index, keys[3], 3, "boundary"),
                // An annotation made on an older version of pair 7.
                change(&index, RecordKey([7; 16]), 7, "distractor"),
            ])
            .expect("saved");
        index.resolve_keys(&store);
        let named = |i: usize| {
            [3, 7].iter().any(|&j| {
                index.rows[i].case == index.rows[j].case
                    && index.rows[i].variant == index.rows[j].variant
            })
        };
        for (i, r) in index.rows.iter().enumerate() {
            assert_eq!(index.key(r), named(i).then_some(keys[i]), "row {i}");
        }
        assert_eq!(
            index
                .annotation(Some(&store), &index.rows[3])
                .and_then(|a| a.category.as_deref()),
            Some("boundary")
        );
        assert!(index.annotation(Some(&store), &index.rows[7]).is_none());
        assert!(
            store
                .stale_for(
                    index.str(index.rows[7].case),
                    index.str(index.rows[7].variant),
                    &index
                        .current_key(&store, &index.rows[7])
                        .expect("named, so known"),
                )
                .is_some()
        );
    }

    /// The rows a save on some rows makes `resolve_keys` look for are those
    /// rows and every row with the ids of one of them: learnt beforehand,
    /// `resolve_keys` after the save reads no line.
    #[test]
    fn rows_with_the_same_ids_are_the_ones_a_save_looks_for() {
        let mut index = sample();
        assert_eq!(index.with_same_ids(&[]), Vec::<u32>::new());
        assert_eq!(index.with_same_ids(&[u32::MAX]), Vec::<u32>::new());
        let keys = truth(&index);
        let n = index.rows.len() as u32;
        for picked in [vec![0], vec![3, 7], vec![n - 1, 0, n - 1], (0..n).collect()] {
            let same = index.with_same_ids(&picked);
            let want: Vec<u32> = (0..n)
                .filter(|&i| {
                    picked.iter().any(|&j| {
                        let (a, b) = (&index.rows[i as usize], &index.rows[j as usize]);
                        a.case == b.case && a.variant == b.variant
                    })
                })
                .collect();
            assert_eq!(same, want, "{picked:?}");
        }
        // Learnt before a save on rows 3 and 7, nothing is left to read after it.
        let dir = tempfile::tempdir().expect("temp dir");
        let mut store =
            AnnotationStore::open(&dir.path().join("j.triage.jsonl"), "t").expect("store");
        let same = index.with_same_ids(&[3, 7]);
        assert!(
            same.len() > 2,
            "rows 3 and 7 share their ids with others: {same:?}"
        );
        index.ensure_keys(&same);
        let learnt = index.known_keys();
        store
            .apply(vec![
                change(&index, keys[3], 3, "boundary"),
                change(&index, keys[7], 7, "distractor"),
            ])
            .expect("saved");
        index.resolve_keys(&store);
        assert_eq!(index.known_keys(), learnt, "no line read after the save");
        assert!(index.keys_resolved(&store));
    }

    #[test]
    fn answers_are_the_same_before_and_after_resolving() {
        let mut index = sample();
        let keys = truth(&index);
        let dir = tempfile::tempdir().expect("temp dir");
        let mut store =
            AnnotationStore::open(&dir.path().join("j.triage.jsonl"), "t").expect("store");
        let picks = [0usize, 5, 11, 20, 33];
        store
            .apply(
                picks
                    .iter()
                    .map(|&i| change(&index, keys[i], i, "boundary"))
                    .collect(),
            )
            .expect("saved");
        let answers = |index: &RunIndex| -> Vec<Option<RecordKey>> {
            index
                .rows
                .iter()
                .map(|r| index.annotation(Some(&store), r).map(|a| a.key))
                .collect()
        };
        let before = answers(&index);
        index.resolve_keys(&store);
        assert_eq!(answers(&index), before);
        for (i, a) in before.iter().enumerate() {
            assert_eq!(*a, picks.contains(&i).then_some(keys[i]), "row {i}");
        }
    }

    #[test]
    fn rows_that_arrive_later_and_new_annotations_are_resolved() {
        let mut index = sample();
        let keys = truth(&index);
        let n = index.rows.len();
        let later = index.rows.split_off(n / 2);
        let dir = tempfile::tempdir().expect("temp dir");
        let mut store =
            AnnotationStore::open(&dir.path().join("j.triage.jsonl"), "t").expect("store");
        store
            .apply(vec![change(&index, keys[1], 1, "boundary")])
            .expect("saved");
        index.resolve_keys(&store);
        let known = index.known_keys();
        assert!(known >= 1);
        // Rows with the same ids as row 1 further on, as a followed run would add.
        index.rows.extend(later);
        index.resolve_keys(&store);
        let same_ids = index
            .rows
            .iter()
            .filter(|r| r.case == index.rows[1].case && r.variant == index.rows[1].variant)
            .count();
        assert_eq!(index.known_keys(), same_ids);
        // A new annotation (say from another triage) on a row of the second half.
        let j = n - 1;
        store
            .apply(vec![change(&index, keys[j], j, "distractor")])
            .expect("saved");
        assert_eq!(index.key(&index.rows[j]), None);
        index.resolve_keys(&store);
        assert_eq!(index.key(&index.rows[j]), Some(keys[j]));
    }

    #[test]
    fn key_of_reads_the_line_and_a_changed_file_gives_no_key() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("run.jsonl");
        std::fs::copy(SAMPLE, &path).expect("copy");
        let mut index = load_run(
            &[path.to_string_lossy().to_string()],
            &OpenOptions::default(),
        )
        .expect("opens");
        let keys = truth(&index);
        assert_eq!(index.key_of(2), Ok(keys[2]));
        assert_eq!(index.known_keys(), 1);
        assert_eq!(index.ensure_keys(&[2, 4, 6]), 0);
        assert_eq!(index.known_keys(), 3);
        assert_eq!(index.key(&index.rows[6]), Some(keys[6]));
        // The file is cut short: lines past the cut cannot be read again.
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        f.set_len(10).expect("truncate");
        assert!(index.key_of(9).is_err());
        assert_eq!(index.ensure_keys(&[9, 10]), 2);
        assert!(index.load_pair(9).is_err());
    }
}
