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
use super::row::{NO_SYM, OutcomeCode, PairRow};

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
pub fn facets(index: &RunIndex, rows: &[u32], store: Option<&AnnotationStore>) -> Vec<Facet> {
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
            let e = maps[i].entry(value).or_default();
            e.0 += 1;
            e.1 += fail;
        }
    }
    FIELDS
        .iter()
        .zip(maps)
        .map(|(field, m)| {
            let mut entries: Vec<FacetEntry> = m
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
        })
        .collect()
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

fn values(
    index: &RunIndex,
    i: usize,
    row: &PairRow,
    store: Option<&AnnotationStore>,
) -> [String; 5] {
    let category = index
        .annotation(store, row)
        .and_then(|a| a.category.clone())
        .unwrap_or_else(|| "none".to_string());
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
