//! The per-group tables of a [`Summary`], declared once for every place
//! that shows them: `triage summary` as text and Markdown, the report's
//! summary and the summary screen. Each [`Table`] is a list of [`Column`]s,
//! each with its heading and the text of its cell, so the three show the
//! same numbers, written the same way.
//!
//! A rate's cell says what it counts: `3/11 0.27 [0.10, 0.57]` is 3 out of
//! 11, the observed rate, and its Wilson 95% interval; `—` when there was
//! nothing to count. What the 11 are is the table's note.

use super::{GroupStats, Rate, Summary};
use crate::core::model::fmt_num;

/// A rate as a table cell: successes/trials, the rate and its interval at
/// two decimals (`3/11 0.27 [0.10, 0.57]`), or `—` without trials.
pub fn cell(r: &Option<Rate>) -> String {
    match r {
        Some(r) => format!(
            "{}/{} {:.2} [{:.2}, {:.2}]",
            r.successes, r.trials, r.value, r.low, r.high
        ),
        None => "—".to_string(),
    }
}

/// A magnitude (drift) at three decimals, or `—`.
pub fn num3(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "—".into())
}

/// Milliseconds as written (up to three decimals), or `—`.
pub fn ms(x: Option<f64>) -> String {
    x.map(fmt_num).unwrap_or_else(|| "—".into())
}

/// One column: its short heading (text and the screen), its heading in
/// Markdown, and its cell.
#[derive(Clone, Copy)]
pub struct Column {
    pub head: &'static str,
    pub title: &'static str,
    /// A rate, left-aligned; counts and numbers are right-aligned.
    pub rate: bool,
    pub cell: fn(&GroupStats) -> String,
}

/// One table of per-group figures: its title, the note that says what each
/// column counts, and its columns.
#[derive(Clone, Copy)]
pub struct Table {
    pub title: &'static str,
    pub note: &'static str,
    pub columns: &'static [Column],
}

const fn count(head: &'static str, title: &'static str, cell: fn(&GroupStats) -> String) -> Column {
    Column {
        head,
        title,
        rate: false,
        cell,
    }
}

const fn rate(head: &'static str, title: &'static str, cell: fn(&GroupStats) -> String) -> Column {
    Column {
        head,
        title,
        rate: true,
        cell,
    }
}

/// Every pair, as triage counts it: what needs a reviewer, and why.
pub const PAIRS: Table = Table {
    title: "Pairs",
    note: "A failure is any pair that needs a reviewer's diagnosis: the failure rate counts failures of all pairs. \
           Of the failures, \"broke\" broke its expectation, \"boundary\" broke only the minimum boundary margin \
           (boundary sensitivity, seed 000 section 4), \"invalid\" changed facts it did not declare (a test fault), \
           and service errors are in the service table. \
           \"unjudged\" pairs declare no allowed changes, so their validity is not judged.",
    columns: &[
        count("pairs", "Pairs", |g| g.pairs.to_string()),
        rate("failures", "Failures", |g| cell(&g.failure_rate)),
        count("broke", "Broke expectation", |g| g.failed.to_string()),
        count("boundary", "Boundary observations", |g| {
            g.boundary_observations.to_string()
        }),
        count("invalid", "Invalid", |g| g.invalid_pairs.to_string()),
        count("unjudged", "Validity not judged", |g| {
            g.undeclared_pairs.to_string()
        }),
    ],
};

/// The model metrics, over the pairs that test the model.
pub const MODEL: Table = Table {
    title: "Model metrics",
    note: "Over the pairs that test the model: invalid pairs and service errors are left out. \
           Invariant violations are of the valid invariant pairs (unjudged ones left out); \
           route flips of the model pairs with both routes known; \
           boundary flips of the boundary pairs (source margin under its minimum) with both routes known.",
    columns: &[
        count("model", "Model pairs", |g| g.model_pairs.to_string()),
        rate("invariant viol.", "Invariant violations", |g| {
            cell(&g.invariant_violation_rate)
        }),
        rate("route flips", "Route flips", |g| cell(&g.route_flip_rate)),
        rate("boundary flips", "Boundary flips", |g| {
            cell(&g.boundary_flip_rate)
        }),
    ],
};

/// The drift of the model pairs.
pub const DRIFT: Table = Table {
    title: "Drift",
    note: "|Δp| and |Δc|: median and maximum over the model pairs with both values recorded.",
    columns: &[
        count("med |Δp|", "Median |Δp|", |g| num3(g.median_abs_dp)),
        count("max |Δp|", "Max |Δp|", |g| num3(g.max_abs_dp)),
        count("med |Δc|", "Median |Δc|", |g| num3(g.median_abs_dc)),
        count("max |Δc|", "Max |Δc|", |g| num3(g.max_abs_dc)),
    ],
};

/// The service: its errors and latency, over every pair.
pub const SERVICE: Table = Table {
    title: "Service",
    note: "Service errors are of all pairs, counted apart from robustness failures. \
           Latency: the slower of a pair's two requests, in ms, nearest-rank percentiles over every pair that records one.",
    columns: &[
        rate("service errors", "Service errors", |g| {
            cell(&g.service_error_rate)
        }),
        count("p50 ms", "Latency p50 (ms)", |g| {
            ms(g.latency.map(|l| l.p50_ms))
        }),
        count("p95 ms", "Latency p95 (ms)", |g| {
            ms(g.latency.map(|l| l.p95_ms))
        }),
    ],
};

/// The tables, in the order they are shown.
pub const TABLES: [Table; 4] = [PAIRS, MODEL, DRIFT, SERVICE];

/// The rows of a table: each group, then every pair ("all").
pub fn rows(s: &Summary) -> impl Iterator<Item = &GroupStats> {
    s.groups.iter().chain(std::iter::once(&s.overall))
}

/// The width of each column of `t`: its widest cell among `rows` (each a
/// row's cells, in column order), or its heading when that is wider.
pub fn widths<'a>(t: &Table, rows: impl Iterator<Item = &'a Vec<String>> + Clone) -> Vec<usize> {
    t.columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            rows.clone()
                .map(|cells| crate::core::text::width(&cells[i]))
                .chain([crate::core::text::width(c.head)])
                .max()
                .unwrap_or(0)
        })
        .collect()
}
