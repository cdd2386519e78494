//! Agreement between two reviewers (or a reviewer and the suggestion
//! engine): Cohen's kappa with its 95% interval, the observed and chance
//! agreement, per-category agreement and the confusion matrix.
//!
//! The interval uses the large-sample standard error of Fleiss, Cohen and
//! Everitt (1969), "Large sample standard errors of kappa and weighted
//! kappa", Psychological Bulletin 72(5), 323–327. With `p_ij` the share of
//! pairs reviewer A put in category i and B in j, `p_i.` and `p_.j` the
//! margins, `p_o = Σ p_ii` and `p_e = Σ p_i. p_.i`:
//!
//! ```text
//! κ       = (p_o − p_e) / (1 − p_e)
//! A       = Σ_i p_ii [1 − (p_i. + p_.i)(1 − κ)]²
//! B       = (1 − κ)² Σ_{i≠j} p_ij (p_.i + p_j.)²
//! C       = [κ − p_e (1 − κ)]²
//! se(κ)   = √((A + B − C) / n) / (1 − p_e)
//! 95% CI  = κ ± 1.959964 se(κ), clipped to [−1, 1]
//! ```

use std::collections::HashMap;

use super::annotations::{AnnotationSource, AnnotationStore};
use super::index::RunIndex;
use super::taxonomy::Taxonomy;

/// The name that stands for triage's suggestion engine in `--between`.
pub const SUGGESTIONS: &str = "suggestions";

/// The normal quantile of a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// Cohen's kappa and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kappa {
    pub value: f64,
    pub low: f64,
    pub high: f64,
    /// The large-sample standard error (Fleiss, Cohen and Everitt 1969).
    pub se: f64,
}

impl Kappa {
    /// Whether the interval has no width: the large-sample standard error
    /// is zero when the two agree on every pair, or each gave every pair
    /// one category. That is the formula's answer, not certainty: on few
    /// pairs it is no interval at all.
    pub fn degenerate(&self) -> bool {
        self.se < 1e-12
    }
}

/// What to say of an interval with no width.
pub const DEGENERATE: &str = "no width: the large-sample standard error is 0 when the two agree on every pair or each gives every pair one category, so this interval does not say how sure kappa is; compare more pairs, and gate with --min-pairs";

/// How two raters agree on one category.
#[derive(Debug, Clone, PartialEq)]
pub struct CategoryAgreement {
    pub id: String,
    /// Pairs A put in it, pairs B put in it, pairs both did.
    pub a: u64,
    pub b: u64,
    pub both: u64,
    /// Specific agreement, 2·both / (a + b): of the pairs either put in
    /// the category, how often the other did too.
    pub agreement: f64,
}

/// Two raters compared over the pairs both decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub a: String,
    pub b: String,
    /// How many pairs both gave a category.
    pub pairs: u64,
    /// Pairs left out because a reviewer's category is an accepted
    /// suggestion, compared with the suggestions themselves.
    pub accepted_suggestions: u64,
    /// The categories either used, taxonomy order first.
    pub categories: Vec<String>,
    /// `matrix[i][j]`: pairs A put in category i and B in j.
    pub matrix: Vec<Vec<u64>>,
    pub observed: f64,
    pub chance: f64,
    /// `None` when kappa is undefined: no pair, or chance agreement of 1
    /// (both raters put every pair in one and the same category).
    pub kappa: Option<Kappa>,
    pub per_category: Vec<CategoryAgreement>,
}

/// Cohen's kappa of a square table of counts (rows: rater A, columns:
/// rater B), with the observed and chance agreement; `None` for kappa when
/// it is undefined.
pub fn cohen(matrix: &[Vec<u64>]) -> (f64, f64, Option<Kappa>) {
    let k = matrix.len();
    let n: u64 = matrix.iter().flatten().sum();
    if n == 0 {
        return (0.0, 0.0, None);
    }
    let nf = n as f64;
    let p = |i: usize, j: usize| matrix[i][j] as f64 / nf;
    let row: Vec<f64> = (0..k).map(|i| (0..k).map(|j| p(i, j)).sum()).collect();
    let col: Vec<f64> = (0..k).map(|j| (0..k).map(|i| p(i, j)).sum()).collect();
    let po: f64 = (0..k).map(|i| p(i, i)).sum();
    let pe: f64 = (0..k).map(|i| row[i] * col[i]).sum();
    if 1.0 - pe <= 1e-12 {
        return (po, pe, None);
    }
    let kappa = (po - pe) / (1.0 - pe);
    let q = 1.0 - kappa;
    let a: f64 = (0..k)
        .map(|i| p(i, i) * (1.0 - (row[i] + col[i]) * q).powi(2))
        .sum();
    let off: f64 = (0..k)
        .flat_map(|i| (0..k).map(move |j| (i, j)))
        .filter(|(i, j)| i != j)
        .map(|(i, j)| p(i, j) * (col[i] + row[j]).powi(2))
        .sum();
    let b = q * q * off;
    let c = (kappa - pe * q).powi(2);
    let se = ((a + b - c).max(0.0) / nf).sqrt() / (1.0 - pe);
    let low = (kappa - Z95 * se).clamp(-1.0, 1.0);
    let high = (kappa + Z95 * se).clamp(-1.0, 1.0);
    (
        po,
        pe,
        Some(Kappa {
            value: kappa,
            low,
            high,
            se,
        }),
    )
}

/// Compare two raters' categories, one `(a, b)` per pair.
pub fn compare_labels(
    a: &str,
    b: &str,
    labels: &[(&str, &str)],
    taxonomy: &Taxonomy,
    accepted_suggestions: u64,
) -> Report {
    let mut categories: Vec<String> = taxonomy
        .categories
        .iter()
        .map(|c| c.id.clone())
        .filter(|id| labels.iter().any(|(x, y)| x == id || y == id))
        .collect();
    let mut others: Vec<String> = labels
        .iter()
        .flat_map(|(x, y)| [*x, *y])
        .filter(|c| taxonomy.by_id(c).is_none())
        .map(str::to_string)
        .collect();
    others.sort();
    others.dedup();
    categories.extend(others);
    let at: HashMap<&str, usize> = categories
        .iter()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i))
        .collect();
    let k = categories.len();
    let mut matrix = vec![vec![0u64; k]; k];
    for (x, y) in labels {
        matrix[at[x]][at[y]] += 1;
    }
    let (observed, chance, kappa) = cohen(&matrix);
    let per_category = categories
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let ra: u64 = matrix[i].iter().sum();
            let cb: u64 = matrix.iter().map(|r| r[i]).sum();
            let both = matrix[i][i];
            CategoryAgreement {
                id: id.clone(),
                a: ra,
                b: cb,
                both,
                agreement: if ra + cb == 0 {
                    0.0
                } else {
                    2.0 * both as f64 / (ra + cb) as f64
                },
            }
        })
        .collect();
    Report {
        a: a.to_string(),
        b: b.to_string(),
        pairs: labels.len() as u64,
        accepted_suggestions,
        categories,
        matrix,
        observed,
        chance,
        kappa,
        per_category,
    }
}

/// A rater's category for a row: a reviewer's decision, or the suggestion.
/// The flag says the reviewer's category is an accepted suggestion.
fn label<'a>(
    index: &'a RunIndex,
    store: &'a AnnotationStore,
    who: &str,
    row: &crate::core::row::PairRow,
) -> Option<(&'a str, bool)> {
    if who == SUGGESTIONS {
        return row.suggestion().map(|s| (s, false));
    }
    let key = index.current_key(store, row)?;
    let a = store.decision_of(&key, who)?;
    let c = a.category.as_deref().filter(|c| !c.trim().is_empty())?;
    Some((c, a.source == AnnotationSource::Suggestion))
}

/// Compare two raters over the given rows of the run: the pairs both gave
/// a category. Either may be [`SUGGESTIONS`], the suggestion engine; then
/// a reviewer's accepted suggestions are left out (they are no
/// independent judgement) and counted in `accepted_suggestions`.
pub fn compare(
    index: &RunIndex,
    store: &AnnotationStore,
    taxonomy: &Taxonomy,
    rows: &[u32],
    a: &str,
    b: &str,
) -> Report {
    let against_engine = a == SUGGESTIONS || b == SUGGESTIONS;
    let mut labels = Vec::new();
    let mut accepted = 0;
    for &i in rows {
        let Some(row) = index.rows.get(i as usize) else {
            continue;
        };
        let (Some((x, xs)), Some((y, ys))) =
            (label(index, store, a, row), label(index, store, b, row))
        else {
            continue;
        };
        if against_engine && (xs || ys) {
            accepted += 1;
            continue;
        }
        labels.push((x, y));
    }
    compare_labels(a, b, &labels, taxonomy, accepted)
}

/// Every pair of reviewers who gave some pair a category, in name order.
pub fn every_pair(store: &AnnotationStore) -> Vec<(String, String)> {
    let names = store.reviewers();
    let mut out = Vec::new();
    for (i, a) in names.iter().enumerate() {
        for b in &names[i + 1..] {
            out.push((a.to_string(), b.to_string()));
        }
    }
    out
}

/// Parse `--between A,B`: two different names.
pub fn parse_between(text: &str) -> Result<(String, String), String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    match parts.as_slice() {
        [a, b] if !a.is_empty() && !b.is_empty() && a != b => Ok((a.to_string(), b.to_string())),
        [a, b] if a == b && !a.is_empty() => Err(format!(
            "--between: `{}` twice; name two different reviewers",
            super::text::inert_line(a)
        )),
        _ => Err(format!(
            "--between: `{}` is not two names separated by a comma (e.g. --between ana,bob, or --between ana,{SUGGESTIONS})",
            super::text::inert_line(text)
        )),
    }
}

/// Kappa as text: `0.676 [0.505, 0.848]` (saying so of an interval of no
/// width, see [`Kappa::degenerate`]), or why it is undefined.
pub fn kappa_text(r: &Report) -> String {
    match r.kappa {
        Some(k) if k.degenerate() => format!(
            "{:.3} [{:.3}, {:.3}], an interval of no width",
            k.value, k.low, k.high
        ),
        Some(k) => format!("{:.3} [{:.3}, {:.3}]", k.value, k.low, k.high),
        None if r.pairs == 0 => "undefined (no pair decided by both)".to_string(),
        None => "undefined (every pair in one category by both)".to_string(),
    }
}

/// How `triage agreement` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

/// One comparison as JSON: `kappa` as `{value, low, high}` (null when
/// undefined), `pairs` as the count compared.
pub fn to_json(r: &Report) -> serde_json::Value {
    serde_json::json!({
        "a": r.a,
        "b": r.b,
        "pairs": r.pairs,
        "accepted_suggestions_left_out": r.accepted_suggestions,
        "kappa": r.kappa.map(|k| serde_json::json!({"value": k.value, "low": k.low, "high": k.high})),
        "standard_error": r.kappa.map(|k| k.se),
        "observed": r.observed,
        "chance": r.chance,
        "categories": r.per_category.iter().map(|c| serde_json::json!({
            "id": c.id,
            "a": c.a,
            "b": c.b,
            "both": c.both,
            "agreement": c.agreement,
        })).collect::<Vec<_>>(),
        "matrix": {
            "rows": r.a,
            "columns": r.b,
            "categories": r.categories,
            "counts": r.matrix,
        },
    })
}

/// The reports as `triage agreement` prints them. One comparison
/// (`--between`) is one JSON object; several are `{"comparisons": [...]}`.
pub fn render(reports: &[Report], format: Format, single: bool) -> String {
    use super::text::inert_line;
    let mut out = String::new();
    match format {
        Format::Json => {
            let v = if single && reports.len() == 1 {
                to_json(&reports[0])
            } else {
                serde_json::json!({"comparisons": reports.iter().map(to_json).collect::<Vec<_>>()})
            };
            out.push_str(&crate::core::json::to_string_pretty(&v).unwrap_or_default());
            out.push('\n');
        }
        Format::Text => {
            for (n, r) in reports.iter().enumerate() {
                if n > 0 {
                    out.push('\n');
                }
                text_report(&mut out, r, &inert_line);
            }
        }
        Format::Markdown => {
            for r in reports {
                markdown_report(&mut out, r);
            }
        }
    }
    out
}

fn text_report(out: &mut String, r: &Report, inert: &dyn Fn(&str) -> String) {
    use std::fmt::Write;
    let (a, b) = (inert(&r.a), inert(&r.b));
    let _ = writeln!(
        out,
        "{a} vs {b}: {} decided by both",
        super::text::plural(r.pairs, "pair", "pairs")
    );
    if r.accepted_suggestions > 0 {
        let _ = writeln!(
            out,
            "  ({} left out: the reviewer accepted the suggestion, no independent judgement)",
            super::text::plural(r.accepted_suggestions, "pair", "pairs")
        );
    }
    let _ = writeln!(out, "  Cohen's kappa       {}", kappa_text(r));
    if let Some(k) = r.kappa {
        let _ = writeln!(
            out,
            "                      95% interval, standard error {:.3} (Fleiss, Cohen and Everitt 1969)",
            k.se
        );
        if k.degenerate() {
            let _ = writeln!(out, "                      the interval has {DEGENERATE}");
        }
    }
    if r.pairs == 0 {
        return;
    }
    let _ = writeln!(out, "  observed agreement  {:.3}", r.observed);
    let _ = writeln!(out, "  chance agreement    {:.3}", r.chance);
    let ids: Vec<String> = r.categories.iter().map(|c| inert(c)).collect();
    let w = ids
        .iter()
        .map(|c| super::text::width(c))
        .chain([8])
        .max()
        .unwrap_or(8);
    let pad =
        |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(super::text::width(s))));
    let _ = writeln!(out, "\n  per category");
    let aw = super::text::width(&a).max(4);
    let bw = super::text::width(&b).max(4);
    let _ = writeln!(
        out,
        "    {} {a:>aw$} {b:>bw$}  both  agreement",
        pad("category", w)
    );
    for (id, c) in ids.iter().zip(&r.per_category) {
        let _ = writeln!(
            out,
            "    {} {:>aw$} {:>bw$} {:>5}  {:>9.3}",
            pad(id, w),
            c.a,
            c.b,
            c.both,
            c.agreement
        );
    }
    let _ = writeln!(out, "\n  confusion matrix (rows: {a}, columns: {b})");
    let cw: Vec<usize> = ids.iter().map(|c| super::text::width(c).max(3)).collect();
    let mut head = format!("    {}", " ".repeat(w));
    for (id, cw) in ids.iter().zip(&cw) {
        let _ = write!(head, " {}", pad(id, *cw));
    }
    let _ = writeln!(out, "{}", head.trim_end());
    for (id, row) in ids.iter().zip(&r.matrix) {
        let mut line = format!("    {}", pad(id, w));
        for (n, cw) in row.iter().zip(&cw) {
            let _ = write!(line, " {n:>cw$}");
        }
        let _ = writeln!(out, "{line}");
    }
}

fn markdown_report(out: &mut String, r: &Report) {
    use super::export::md_escape;
    use super::text::inert_line;
    use std::fmt::Write;
    let md = |s: &str| md_escape(&inert_line(s));
    let (a, b) = (md(&r.a), md(&r.b));
    let _ = writeln!(out, "## {a} vs {b}\n");
    let _ = writeln!(out, "- Pairs decided by both: {}", r.pairs);
    if r.accepted_suggestions > 0 {
        let _ = writeln!(
            out,
            "- Left out: {} (the reviewer accepted the suggestion, no independent judgement)",
            super::text::plural(r.accepted_suggestions, "pair", "pairs")
        );
    }
    let _ = writeln!(
        out,
        "- Cohen's kappa: {} (95% interval; standard error of Fleiss, Cohen and Everitt 1969)",
        kappa_text(r)
    );
    if r.kappa.is_some_and(|k| k.degenerate()) {
        let _ = writeln!(out, "- The interval has {DEGENERATE}.");
    }
    if r.pairs == 0 {
        out.push('\n');
        return;
    }
    let _ = writeln!(out, "- Observed agreement: {:.3}", r.observed);
    let _ = writeln!(out, "- Chance agreement: {:.3}\n", r.chance);
    let _ = writeln!(out, "| Category | {a} | {b} | Both | Agreement |");
    let _ = writeln!(out, "| --- | ---: | ---: | ---: | ---: |");
    for c in &r.per_category {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.3} |",
            md(&c.id),
            c.a,
            c.b,
            c.both,
            c.agreement
        );
    }
    let _ = writeln!(out, "\nRows: {a}; columns: {b}.\n");
    let mut head = "| |".to_string();
    let mut rule = "| --- |".to_string();
    for c in &r.categories {
        let _ = write!(head, " {} |", md(c));
        rule.push_str(" ---: |");
    }
    let _ = writeln!(out, "{head}\n{rule}");
    for (c, row) in r.categories.iter().zip(&r.matrix) {
        let mut line = format!("| {} |", md(c));
        for n in row {
            let _ = write!(line, " {n} |");
        }
        let _ = writeln!(out, "{line}");
    }
    out.push('\n');
}

#[cfg(test)]
mod tests;
