//! Facet counts: how many pairs and failures share each value of a field.
//!
//! The facets panel shows them for transformation, family, category,
//! outcome and route transition; choosing an entry adds `field:value` to the
//! query, so every facet value is written exactly as the query language
//! reads it.

use std::collections::HashMap;

use super::annotations::AnnotationStore;
use super::compare::ChangeKind;
use super::index::RunIndex;
use rustc_hash::FxHashMap;

use super::model::Route;
use super::row::{NO_SYM, OutcomeCode, PairRow, Sym};

/// One value of a field and its counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FacetEntry {
    /// The value as shown ("not recorded" when the field is missing).
    pub value: String,
    /// The query term that selects exactly these pairs.
    pub term: String,
    pub pairs: u64,
    pub failures: u64,
}

/// The counts of one field, most failures first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facet {
    /// The query field name (`transformation`, `family`, `category`, `outcome`, `route`).
    pub field: &'static str,
    pub entries: Vec<FacetEntry>,
}

/// The fields the panel shows, in order.
pub const FIELDS: [&str; 5] = ["transformation", "family", "category", "outcome", "route"];

/// Count the facets over `rows`.
///
/// Rows are counted by codes, not by their values' text: the row's label
/// set (its transformation and family), outcome, route transition and
/// category (borrowed from the store); the text is made once per value at
/// the end. Large inputs are counted in parts on every core.
pub fn facets(index: &RunIndex, rows: &[u32], store: Option<&AnnotationStore>) -> Vec<Facet> {
    // Fewer rows than this are counted on one core.
    facets_in_parts(index, rows, store, 1 << 16)
}

/// [`facets`], counted in parts of `part` rows.
fn facets_in_parts(
    index: &RunIndex,
    rows: &[u32],
    store: Option<&AnnotationStore>,
    part: usize,
) -> Vec<Facet> {
    use rayon::prelude::*;
    let count = |part: &[u32]| {
        let mut c = Counts::default();
        for &r in part {
            c.add(index, r as usize, store);
        }
        c
    };
    let counts = if rows.len() > part {
        rows.par_chunks(part.max(1))
            .map(count)
            .reduce(Counts::default, Counts::merge)
    } else {
        count(rows)
    };
    let mut maps: [Vec<(String, (u64, u64))>; 5] = Default::default();
    // Label sets share transformations and families: add them up by value.
    let mut by_sym: [FxHashMap<u32, (u64, u64)>; 2] = Default::default();
    let sets = index.label_sets().sets();
    let by_code = counts.labels.iter().enumerate().filter_map(|(code, &n)| {
        let set = sets.get(code).filter(|_| n != (0, 0))?;
        Some(((set.transformation, set.family), n))
    });
    let by_pack = counts
        .other_labels
        .iter()
        .map(|(&packed, &n)| (unpack_syms(packed), n));
    for ((t, f), n) in by_code.chain(by_pack) {
        for (m, s) in by_sym.iter_mut().zip([t, f]) {
            add(m.entry(s).or_default(), n);
        }
    }
    for (k, m) in by_sym.into_iter().enumerate() {
        maps[k] = m.into_iter().map(|(s, n)| (sym(index, s), n)).collect();
    }
    maps[2] = counts
        .category
        .into_iter()
        .map(|(c, n)| (c.unwrap_or("none").to_string(), n))
        .collect();
    maps[3] = counts
        .outcome
        .into_iter()
        .map(|(o, n)| (o.to_string(), n))
        .collect();
    maps[4] = counts
        .route
        .into_iter()
        .map(|(r, n)| {
            let value = match r {
                Some((a, b)) => format!("{a}->{b}"),
                None => MISSING.to_string(),
            };
            (value, n)
        })
        .collect();
    FIELDS
        .iter()
        .zip(maps)
        .map(|(field, m)| facet(field, m))
        .collect()
}

/// The facet of `field` from its values' counts, most failures first. Two
/// counts of one value (two codes can make one text, such as a category
/// named "none") are added up.
fn facet(field: &'static str, counts: impl IntoIterator<Item = (String, Tally)>) -> Facet {
    let mut merged: HashMap<String, Tally> = HashMap::new();
    for (value, n) in counts {
        add(merged.entry(value).or_default(), n);
    }
    let mut entries: Vec<FacetEntry> = merged
        .into_iter()
        .map(|(value, (pairs, failures))| FacetEntry {
            term: term(field, &value),
            value,
            pairs,
            failures,
        })
        .collect();
    entries.sort_by(|a, b| {
        b.failures
            .cmp(&a.failures)
            .then(b.pairs.cmp(&a.pairs))
            .then(a.value.cmp(&b.value))
    });
    Facet { field, entries }
}

/// Pairs and failures.
type Tally = (u64, u64);

fn add(to: &mut Tally, n: Tally) {
    to.0 += n.0;
    to.1 += n.1;
}

/// The counts of some rows, by code.
#[derive(Default)]
struct Counts<'s> {
    /// By label-set code when the index keeps one for every row, else
    /// (`other_labels`) by the transformation and family packed in one
    /// number ([`pack_syms`]).
    labels: Vec<Tally>,
    other_labels: FxHashMap<u64, Tally>,
    category: FxHashMap<Option<&'s str>, Tally>,
    /// A handful of values each: found by a look along the list.
    outcome: Vec<(&'static str, Tally)>,
    route: Vec<(Option<(Route, Route)>, Tally)>,
}

impl<'s> Counts<'s> {
    fn add(&mut self, index: &'s RunIndex, i: usize, store: Option<&'s AnnotationStore>) {
        let Some(row) = index.rows.get(i) else {
            return;
        };
        let n = (1, u64::from(row.status().is_failure()));
        let sets = index.label_sets();
        match sets.code(i).filter(|_| sets.len() == index.rows.len()) {
            Some(code) => {
                let code = code as usize;
                if self.labels.len() <= code {
                    self.labels.resize(code + 1, (0, 0));
                }
                add(&mut self.labels[code], n);
            }
            None => add(
                self.other_labels
                    .entry(pack_syms(index.transformation(i), index.family(i)))
                    .or_default(),
                n,
            ),
        }
        let category = index
            .annotation(store, row)
            .and_then(|a| a.category.as_deref());
        add(self.category.entry(category).or_default(), n);
        let outcome = outcome_of(row);
        match self.outcome.iter_mut().find(|(o, _)| *o == outcome) {
            Some((_, c)) => add(c, n),
            None => self.outcome.push((outcome, n)),
        }
        let route = row.source_route().zip(row.variant_route());
        match self.route.iter_mut().find(|(r, _)| *r == route) {
            Some((_, c)) => add(c, n),
            None => self.route.push((route, n)),
        }
    }

    fn merge(mut self, other: Counts<'s>) -> Counts<'s> {
        if self.labels.len() < other.labels.len() {
            self.labels.resize(other.labels.len(), (0, 0));
        }
        for (a, b) in self.labels.iter_mut().zip(other.labels) {
            add(a, b);
        }
        for (k, n) in other.other_labels {
            add(self.other_labels.entry(k).or_default(), n);
        }
        for (k, n) in other.category {
            add(self.category.entry(k).or_default(), n);
        }
        for (k, n) in other.outcome {
            match self.outcome.iter_mut().find(|(o, _)| *o == k) {
                Some((_, c)) => add(c, n),
                None => self.outcome.push((k, n)),
            }
        }
        for (k, n) in other.route {
            match self.route.iter_mut().find(|(r, _)| *r == k) {
                Some((_, c)) => add(c, n),
                None => self.route.push((k, n)),
            }
        }
        self
    }
}

/// A transformation and a family as one number.
fn pack_syms(transformation: Sym, family: Sym) -> u64 {
    (u64::from(transformation) << 32) | u64::from(family)
}

fn unpack_syms(packed: u64) -> (Sym, Sym) {
    ((packed >> 32) as Sym, packed as Sym)
}

/// The outcome a facet shows for a pair: the variant's failure, else the
/// source's, else `ok` or `not-recorded`.
fn outcome_of(row: &PairRow) -> &'static str {
    match (row.source_outcome(), row.variant_outcome()) {
        (OutcomeCode::Ok, OutcomeCode::Ok) => "ok",
        (_, b) if b != OutcomeCode::Ok && b != OutcomeCode::NotRecorded => b.name(),
        (a, _) if a != OutcomeCode::Ok && a != OutcomeCode::NotRecorded => a.name(),
        _ => "not-recorded",
    }
}

/// The `change` facet of a comparison (`--baseline`): how many of `rows`
/// have each change, in [`ChangeKind::ALL`] order, changes with no pair
/// left out. `changes` is each row's change, in row order.
pub fn change_facet(index: &RunIndex, rows: &[u32], changes: &[ChangeKind]) -> Facet {
    let mut counts = [(0u64, 0u64); 8];
    for &r in rows {
        let (Some(row), Some(&c)) = (index.rows.get(r as usize), changes.get(r as usize)) else {
            continue;
        };
        let k = ChangeKind::ALL.iter().position(|&x| x == c).unwrap_or(0);
        counts[k].0 += 1;
        counts[k].1 += u64::from(row.status().is_failure());
    }
    Facet {
        field: "change",
        entries: ChangeKind::ALL
            .iter()
            .zip(counts)
            .filter(|(_, (pairs, _))| *pairs > 0)
            .map(|(c, (pairs, failures))| FacetEntry {
                value: c.name().to_string(),
                term: term("change", c.name()),
                pairs,
                failures,
            })
            .collect(),
    }
}

/// The shown value of a field that is missing.
pub const MISSING: &str = "not recorded";

fn sym(index: &RunIndex, s: u32) -> String {
    if s == NO_SYM {
        MISSING.to_string()
    } else {
        index.str(s).to_string()
    }
}

/// The query term that selects a facet entry (values quoted when needed).
pub fn term(field: &str, value: &str) -> String {
    if value == MISSING {
        // A missing family or route is "no value at all", which only a
        // negated glob says; a missing transformation is a literal name.
        return match field {
            "family" => "-family:*".to_string(),
            "route" => "-route:*->*".to_string(),
            _ => format!("{field}:\"{MISSING}\""),
        };
    }
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '>'));
    if plain {
        format!("{field}:{value}")
    } else {
        format!(
            "{field}:{}",
            serde_json::to_string(value).unwrap_or_default()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::annotations::{AnnotationSource, Change, Name};

    /// The facets as first written: each row's five values as text, counted
    /// in one map per field.
    fn reference(index: &RunIndex, rows: &[u32], store: Option<&AnnotationStore>) -> Vec<Facet> {
        let mut maps: Vec<HashMap<String, (u64, u64)>> = vec![HashMap::new(); FIELDS.len()];
        for &r in rows {
            let Some(row) = index.rows.get(r as usize) else {
                continue;
            };
            let fail = u64::from(row.status().is_failure());
            for (i, value) in values(index, r as usize, row, store)
                .into_iter()
                .enumerate()
            {
                add(maps[i].entry(value).or_default(), (1, fail));
            }
        }
        FIELDS
            .iter()
            .zip(maps)
            .map(|(field, m)| facet(field, m))
            .collect()
    }

    fn values(
        index: &RunIndex,
        i: usize,
        row: &PairRow,
        store: Option<&AnnotationStore>,
    ) -> [String; 5] {
        let category = index
            .annotation(store, row)
            .and_then(|a| a.category)
            .map_or_else(|| "none".to_string(), String::from);
        let outcome = match (row.source_outcome(), row.variant_outcome()) {
            (OutcomeCode::Ok, OutcomeCode::Ok) => "ok",
            (_, b) if b != OutcomeCode::Ok && b != OutcomeCode::NotRecorded => b.name(),
            (a, _) if a != OutcomeCode::Ok && a != OutcomeCode::NotRecorded => a.name(),
            _ => "not-recorded",
        }
        .to_string();
        let route = match (row.source_route(), row.variant_route()) {
            (Some(a), Some(b)) => format!("{a}->{b}"),
            _ => MISSING.to_string(),
        };
        [
            sym(index, index.transformation(i)),
            sym(index, index.family(i)),
            category,
            outcome,
            route,
        ]
    }

    /// Counted by code, on one core or in parts, with categories and one
    /// named "none": the same facets as counted by text.
    #[test]
    fn facets_by_code_are_the_facets_by_text() {
        let mut idx = crate::core::index::sample::sample();
        let dir = tempfile::tempdir().unwrap();
        let mut store = AnnotationStore::open(&dir.path().join("run.triage.jsonl"), "ana").unwrap();
        let categories = [
            Some("ambiguous_contract"),
            Some("none"),
            None,
            Some("service_error"),
        ];
        let changes: Vec<Change> = (0..idx.rows.len() as u32)
            .step_by(2)
            .filter_map(|i| {
                let key = idx.key_of(i).ok()?;
                let row = idx.rows[i as usize];
                Some(Change {
                    key,
                    case_id: idx.str(row.case).into(),
                    variant_id: idx.str(row.variant).into(),
                    category: categories[i as usize % 4].map(Name::new),
                    note: None,
                    source: AnnotationSource::Manual,
                })
            })
            .collect();
        assert!(changes.len() >= 4, "{}", changes.len());
        store.apply(changes).unwrap();
        idx.resolve_keys(&store);
        let all: Vec<u32> = (0..idx.rows.len() as u32).collect();
        let some: Vec<u32> = all.iter().copied().filter(|i| i % 3 != 1).collect();
        for rows in [&all, &some] {
            for store in [None, Some(&store)] {
                let want = reference(&idx, rows, store);
                for part in [1, 2, 5, 1 << 16] {
                    assert_eq!(
                        facets_in_parts(&idx, rows, store, part),
                        want,
                        "parts of {part}"
                    );
                }
            }
        }
        let cat = &facets(&idx, &all, Some(&store))[2];
        assert!(cat.entries.iter().any(|e| e.value == "ambiguous_contract"));
        assert_eq!(cat.entries.iter().filter(|e| e.value == "none").count(), 1);
    }

    #[test]
    fn counts_add_up_and_terms_parse() {
        let idx = crate::core::index::sample::sample();
        let rows: Vec<u32> = (0..idx.rows.len() as u32).collect();
        let f = facets(&idx, &rows, None);
        assert_eq!(f.len(), 5);
        for facet in &f {
            let pairs: u64 = facet.entries.iter().map(|e| e.pairs).sum();
            let failures: u64 = facet.entries.iter().map(|e| e.failures).sum();
            assert_eq!(pairs, idx.rows.len() as u64, "{}", facet.field);
            assert_eq!(failures, idx.failures as u64, "{}", facet.field);
            for e in &facet.entries {
                let t = e.term.clone();
                let q = crate::core::query::parse(&t).unwrap_or_else(|err| panic!("{t}: {err}"));
                let ctx = crate::core::query::Context {
                    index: &idx,
                    store: None,
                    changes: None,
                };
                if facet.field != "category" {
                    assert_eq!(q.filter(&ctx, &rows).len() as u64, e.pairs, "{t}");
                }
            }
        }
        let cat = f.iter().find(|x| x.field == "category").unwrap();
        assert_eq!(cat.entries.len(), 1);
        assert_eq!(cat.entries[0].value, "none");
    }

    #[test]
    fn the_change_facet_counts_each_change_and_its_terms_select_them() {
        let idx = crate::core::index::sample::sample();
        let rows: Vec<u32> = (0..idx.rows.len() as u32).collect();
        let changes: Vec<ChangeKind> = (0..idx.rows.len())
            .map(|i| ChangeKind::ALL[i % 3])
            .collect();
        let f = change_facet(&idx, &rows, &changes);
        assert_eq!(f.field, "change");
        let names: Vec<&str> = f.entries.iter().map(|e| e.value.as_str()).collect();
        assert_eq!(names, ["new_failures", "fixed", "still_failing"]);
        let ctx = crate::core::query::Context {
            index: &idx,
            store: None,
            changes: Some(&changes),
        };
        for e in &f.entries {
            let q = crate::core::query::parse(&e.term).unwrap();
            let hits = q.filter(&ctx, &rows);
            assert_eq!(hits.len() as u64, e.pairs, "{}", e.term);
            let failing = hits
                .iter()
                .filter(|&&i| idx.rows[i as usize].status().is_failure())
                .count() as u64;
            assert_eq!(failing, e.failures, "{}", e.term);
        }
    }

    #[test]
    fn odd_values_are_quoted() {
        assert_eq!(term("family", "state-noise"), "family:state-noise");
        assert_eq!(term("route", "action->pass"), "route:action->pass");
        assert_eq!(term("case", "a b"), "case:\"a b\"");
    }
}
