//! How the view is ordered and grouped: sort keys and case groups.
//!
//! The view is a list of row indices (filtered pairs). [`sort_rows`] orders
//! it by any column without comparing strings per row: interned strings are
//! ranked once, then rows are sorted by small integers. [`build_items`] turns
//! the view into what the list shows: pairs, or case headers with their
//! variants beneath (folded cases hide their variants).

use std::collections::{HashMap, HashSet};

use crate::core::annotations::AnnotationStore;
use crate::core::index::{NO_SYM, RunIndex, Sym};

/// A column the list can be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    /// The order of the run file.
    #[default]
    File,
    Status,
    Case,
    Variant,
    Transformation,
    Route,
    /// Probability drift, by magnitude.
    Drift,
    Margin,
    Category,
}

impl SortKey {
    /// Every key, in the order `o` cycles through them.
    pub const ALL: [SortKey; 9] = [
        SortKey::File,
        SortKey::Status,
        SortKey::Case,
        SortKey::Variant,
        SortKey::Transformation,
        SortKey::Route,
        SortKey::Drift,
        SortKey::Margin,
        SortKey::Category,
    ];

    /// The column name shown in the list title.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::File => "file order",
            SortKey::Status => "status",
            SortKey::Case => "case",
            SortKey::Variant => "variant",
            SortKey::Transformation => "transformation",
            SortKey::Route => "route",
            SortKey::Drift => "|Δp|",
            SortKey::Margin => "margin",
            SortKey::Category => "category",
        }
    }

    /// The next key in the cycle.
    pub fn next(self) -> SortKey {
        let i = SortKey::ALL.iter().position(|k| *k == self).unwrap_or(0);
        SortKey::ALL[(i + 1) % SortKey::ALL.len()]
    }
}

/// The sort in effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sort {
    pub key: SortKey,
    pub descending: bool,
}

/// One line of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// A case header; its pairs are `view[start..start + len]`.
    Case {
        case: Sym,
        start: usize,
        len: usize,
        failures: usize,
        folded: bool,
    },
    Pair(u32),
}

/// Rank every interned string in byte order, so rows sort by integers.
fn string_ranks(index: &RunIndex) -> Vec<u32> {
    let strings = index.strings();
    let mut order: Vec<u32> = (0..strings.len() as u32).collect();
    order.sort_unstable_by(|a, b| strings[*a as usize].cmp(&strings[*b as usize]));
    let mut rank = vec![0u32; strings.len()];
    for (r, s) in order.into_iter().enumerate() {
        rank[s as usize] = r as u32;
    }
    rank
}

/// Order `view` by `sort`; ties keep file order.
pub fn sort_rows(index: &RunIndex, store: &AnnotationStore, view: &mut [u32], sort: Sort) {
    if sort.key == SortKey::File {
        view.sort_unstable();
        if sort.descending {
            view.reverse();
        }
        return;
    }
    let rank = string_ranks(index);
    let sym_rank = |s: Sym| {
        if s == NO_SYM {
            u32::MAX
        } else {
            rank.get(s as usize).copied().unwrap_or(u32::MAX)
        }
    };
    let rows = &index.rows;
    // A u64 key per row: the primary key in the high bits, file order below.
    let key = |r: u32| -> u64 {
        let row = &rows[r as usize];
        let primary: u32 = match sort.key {
            SortKey::File => 0,
            SortKey::Status => row.status as u32,
            SortKey::Case => sym_rank(row.case),
            SortKey::Variant => sym_rank(row.variant),
            SortKey::Transformation => sym_rank(row.transformation),
            SortKey::Route => match (row.source_route, row.variant_route) {
                (Some(a), Some(b)) => u32::from(a.rank()) * 3 + u32::from(b.rank()),
                _ => u32::MAX,
            },
            SortKey::Drift => float_key(row.dp.abs()),
            SortKey::Margin => float_key(row.margin),
            SortKey::Category => 0,
        };
        (u64::from(primary) << 32) | u64::from(r)
    };
    if sort.key == SortKey::Category {
        // Categories live in the store, not the index: rank their ids once.
        let mut ids: Vec<String> = view
            .iter()
            .filter_map(|&r| {
                store
                    .get(&rows[r as usize].key)
                    .and_then(|a| a.category.clone())
            })
            .collect();
        ids.sort();
        ids.dedup();
        let pos: HashMap<&str, u32> = ids
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_str(), i as u32))
            .collect();
        let cat_key = |r: u32| -> u64 {
            let c = store
                .get(&rows[r as usize].key)
                .and_then(|a| a.category.as_deref())
                .and_then(|c| pos.get(c).copied())
                .unwrap_or(u32::MAX);
            (u64::from(c) << 32) | u64::from(r)
        };
        view.sort_unstable_by_key(|&r| cat_key(r));
    } else {
        view.sort_unstable_by_key(|&r| key(r));
    }
    if sort.descending {
        // Keep "not recorded" last either way.
        view.reverse();
        let missing = view
            .iter()
            .take_while(|&&r| is_missing(index, store, r, sort.key))
            .count();
        view.rotate_left(missing);
    }
}

fn is_missing(index: &RunIndex, store: &AnnotationStore, r: u32, key: SortKey) -> bool {
    let row = &index.rows[r as usize];
    match key {
        SortKey::Drift => row.dp.is_nan(),
        SortKey::Margin => row.margin.is_nan(),
        SortKey::Route => row.source_route.is_none() || row.variant_route.is_none(),
        SortKey::Category => store
            .get(&row.key)
            .and_then(|a| a.category.as_ref())
            .is_none(),
        SortKey::Transformation => row.transformation == NO_SYM,
        _ => false,
    }
}

/// An order-preserving integer for a non-negative float; NaN sorts last.
fn float_key(x: f32) -> u32 {
    if x.is_nan() {
        u32::MAX
    } else {
        // Non-negative floats order like their bit patterns.
        x.max(0.0).to_bits().min(u32::MAX - 1)
    }
}

/// The lines of the list: pairs, or case headers with their pairs.
pub fn build_items(
    index: &RunIndex,
    view: &mut Vec<u32>,
    grouped: bool,
    folded: &HashSet<Sym>,
) -> Vec<Item> {
    if !grouped {
        return view.iter().map(|&r| Item::Pair(r)).collect();
    }
    // Cases in the order they first appear in the sorted view.
    let mut order: Vec<Sym> = Vec::new();
    let mut members: HashMap<Sym, Vec<u32>> = HashMap::new();
    for &r in view.iter() {
        let case = index.rows[r as usize].case;
        members
            .entry(case)
            .or_insert_with(|| {
                order.push(case);
                Vec::new()
            })
            .push(r);
    }
    let mut new_view = Vec::with_capacity(view.len());
    let mut items = Vec::with_capacity(view.len() + order.len());
    for case in order {
        let rows = members.remove(&case).unwrap_or_default();
        let failures = rows
            .iter()
            .filter(|&&r| index.rows[r as usize].status.is_failure())
            .count();
        let is_folded = folded.contains(&case);
        items.push(Item::Case {
            case,
            start: new_view.len(),
            len: rows.len(),
            failures,
            folded: is_folded,
        });
        if !is_folded {
            items.extend(rows.iter().map(|&r| Item::Pair(r)));
        }
        new_view.extend(rows);
    }
    *view = new_view;
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_keys_order_and_nan_last() {
        let mut v = [0.3f32, f32::NAN, 0.0, 0.12, 1.5];
        v.sort_by_key(|x| float_key(*x));
        assert_eq!(&v[..4], &[0.0, 0.12, 0.3, 1.5]);
        assert!(v[4].is_nan());
    }

    #[test]
    fn cycle_visits_every_key() {
        let mut k = SortKey::File;
        for _ in 0..SortKey::ALL.len() {
            k = k.next();
        }
        assert_eq!(k, SortKey::File);
    }
}
