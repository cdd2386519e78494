//! Reports and exports of a run, in one place for the CLI and the viewer.
//!
//! [`select_rows`] picks the pairs to export (failures by default, every pair
//! with [`ExportOptions::all`], narrowed by a [`Query`]); [`write`] writes
//! them in one [`Format`]:
//!
//! - **Markdown**: a triage report to paste into a pull request — header,
//!   summary per transformation with Wilson intervals, categories ×
//!   transformations, one section per category listing each failure, the
//!   unclassified failures with their suggestion, the problems, and a
//!   conclusion written from the numbers. Byte-identical for identical inputs
//!   and annotations (no clock unless [`ExportOptions::generated_at`] is set).
//! - **CSV**: one row per pair, in the stable column order [`CSV_COLUMNS`].
//! - **JSON**: one document with the summary, the pairs and the problems.
//! - **Fixtures**: JSON Lines of the recorded requests and responses, policy
//!   and expectation of each pair, so a regression suite can replay them.
//!
//! The same module writes the output of `triage summary` ([`write_summary`])
//! and decides `triage check` ([`check`]). Every string from a run is made
//! inert (`core::text`) before it reaches a human-readable format, and
//! escaped for Markdown where Markdown is written; the machine formats (JSON,
//! fixtures) keep strings exactly as recorded. `docs/export.md` is the user
//! documentation of every format.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

use serde_json::{Value, json};

use super::annotations::{Annotation, AnnotationSource, AnnotationStore};
use super::derive::Status;
use super::diff::{self, Change};
use super::index::{LoadedPair, RunIndex};
use super::model::{Expectation, Route, Side};
use super::problem::ProblemKind;
use super::query::{Context, Query};
use super::row::{NO_SYM, PairRow, Sym};
use super::stats::{self, GroupBy, GroupStats, Rate, Summary};
use super::suggest::{self, Suggestion};
use super::taxonomy::Taxonomy;
use super::text;

/// The longest run string a human-readable report shows before cutting it with `…`.
pub const CAP: usize = 120;

/// How many changed paths, question edits and problems a report lists before "and N more".
const MAX_CHANGES: usize = 6;
const MAX_EDITS: usize = 4;
const MAX_PROBLEMS: usize = 100;

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Markdown,
    Csv,
    Json,
    Fixtures,
}

impl Format {
    /// Every format, in the order the help lists them.
    pub const ALL: [Format; 4] = [
        Format::Markdown,
        Format::Csv,
        Format::Json,
        Format::Fixtures,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Markdown => "markdown",
            Format::Csv => "csv",
            Format::Json => "json",
            Format::Fixtures => "fixtures",
        }
    }

    /// The usual file extension of the format.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Markdown => "md",
            Format::Csv => "csv",
            Format::Json => "json",
            Format::Fixtures => "jsonl",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "markdown" | "md" => Ok(Format::Markdown),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "fixtures" | "jsonl" => Ok(Format::Fixtures),
            _ => Err(format!(
                "unknown format `{}`; use one of: markdown, csv, json, fixtures",
                text::inert_line(s)
            )),
        }
    }
}

/// What to export.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Every pair; by default only failures (fail, service error, invalid).
    pub all: bool,
    /// Only the pairs this query selects.
    pub filter: Option<Query>,
    /// A time to print in the report (`--timestamp`); none by default, so
    /// that identical inputs give identical reports.
    pub generated_at: Option<String>,
}

/// Everything an export needs, loaded once.
#[derive(Debug, Clone, Copy)]
pub struct ExportInput<'a> {
    pub index: &'a RunIndex,
    pub store: Option<&'a AnnotationStore>,
    pub taxonomy: &'a Taxonomy,
}

/// The rows to export, in run order: failures (or every pair with `all`), then the filter.
pub fn select_rows(input: &ExportInput, opts: &ExportOptions) -> Vec<u32> {
    let rows: Vec<u32> = input
        .index
        .rows
        .iter()
        .enumerate()
        .filter(|(_, r)| opts.all || r.status().is_failure())
        .filter_map(|(i, _)| u32::try_from(i).ok())
        .collect();
    match &opts.filter {
        Some(q) => q.filter(
            &Context {
                index: input.index,
                store: input.store,
            },
            &rows,
        ),
        None => rows,
    }
}

/// Write `rows` (indices into `input.index.rows`) in `format`.
///
/// Each pair is read again from its file ([`RunIndex::load_pair`]); a pair
/// that can no longer be read (the file changed since it was indexed) is an
/// error.
pub fn write(
    input: &ExportInput,
    rows: &[u32],
    format: Format,
    opts: &ExportOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        Format::Markdown => write_markdown(input, rows, opts, out),
        Format::Csv => write_csv(input, rows, out),
        Format::Json => write_json(input, rows, opts, out),
        Format::Fixtures => write_fixtures(input, rows, out),
    }
}

// ---------------------------------------------------------------------------
// Per-pair facts

/// One pair read again, with its annotation and suggestion.
struct Pair<'a> {
    row: &'a PairRow,
    file: &'a str,
    lp: LoadedPair,
    ann: Option<&'a Annotation>,
    sug: Option<Suggestion>,
}

fn file_name<'a>(index: &'a RunIndex, row: &PairRow) -> &'a str {
    index
        .files
        .get(row.loc.file() as usize)
        .map(|f| f.display.as_str())
        .unwrap_or("?")
}

fn load<'a>(input: &ExportInput<'a>, i: u32) -> io::Result<Pair<'a>> {
    let index = input.index;
    let row = index
        .rows
        .get(i as usize)
        .ok_or_else(|| io::Error::other(format!("no pair number {i} in the run")))?;
    let lp = index.load_pair(row).map_err(io::Error::other)?;
    let sug = suggest::suggest(&lp.record, &lp.derived);
    Ok(Pair {
        row,
        file: file_name(index, row),
        ann: input.store.and_then(|s| s.get(&lp.key)),
        lp,
        sug,
    })
}

/// A computed number rounded to millionths (so 0.52 − 0.91 is −0.39, not −0.39000000000000007).
fn round6(x: Option<f64>) -> Option<f64> {
    x.filter(|v| v.is_finite()).map(|v| {
        let r = (v * 1e6).round() / 1e6;
        if r == 0.0 { 0.0 } else { r }
    })
}

/// The transformation as recorded or inferred; None when neither the file nor the payloads say.
fn transformation(lp: &LoadedPair) -> Option<&str> {
    let t = &lp.derived.transformation;
    (lp.record.transformation.is_some() || t.inferred).then_some(t.name.as_str())
}

fn source_name(s: AnnotationSource) -> &'static str {
    match s {
        AnnotationSource::Manual => "manual",
        AnnotationSource::Suggestion => "suggestion",
    }
}

fn status_label(s: Status) -> &'static str {
    match s {
        Status::Invalid => "invalid pair",
        Status::ServiceError => "service error",
        Status::Fail => "fail",
        Status::Unchecked => "unchecked",
        Status::Pass => "pass",
    }
}

// ---------------------------------------------------------------------------
// CSV

/// The CSV columns, in their stable order (documented in `docs/export.md`).
pub const CSV_COLUMNS: [&str; 35] = [
    "file",
    "line",
    "case_id",
    "variant_id",
    "status",
    "passed",
    "verdict",
    "family",
    "transformation",
    "transformation_inferred",
    "expectation",
    "source_p",
    "variant_p",
    "dp",
    "source_c",
    "variant_c",
    "dc",
    "source_route",
    "variant_route",
    "flip",
    "source_margin",
    "near_boundary",
    "validity",
    "unexpected_changes",
    "source_outcome",
    "variant_outcome",
    "latency_ms",
    "category",
    "note",
    "reviewer",
    "annotated_at",
    "category_source",
    "suggested_category",
    "suggestion_reason",
    "record_key",
];

/// A free-text CSV cell: inert, on one line, and never read as a spreadsheet formula.
fn csv_text(s: &str) -> String {
    let s = text::inert_line(s);
    if s.starts_with(['=', '+', '-', '@']) {
        format!("'{s}")
    } else {
        s
    }
}

fn csv_num(x: Option<f64>) -> String {
    round6(x).map(|v| v.to_string()).unwrap_or_default()
}

fn csv_bool(b: Option<bool>) -> String {
    b.map(|b| b.to_string()).unwrap_or_default()
}

fn csv_row(p: &Pair) -> Vec<String> {
    let r = &p.lp.record;
    let d = &p.lp.derived;
    let route = |x: Option<Route>| x.map(|r| r.name().to_string()).unwrap_or_default();
    let outcome = |s: &Side| {
        s.effective_outcome()
            .map(|o| csv_text(o.name()))
            .unwrap_or_default()
    };
    let latency = match (r.source.latency_ms, r.variant.latency_ms) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let ann_text =
        |f: fn(&Annotation) -> Option<&str>| p.ann.and_then(f).map(csv_text).unwrap_or_default();
    vec![
        csv_text(p.file),
        p.row.loc.line.to_string(),
        csv_text(&r.case_id),
        csv_text(&r.variant_id),
        d.status.name().to_string(),
        csv_bool(r.passed),
        csv_bool(d.verdict),
        r.family.as_deref().map(csv_text).unwrap_or_default(),
        transformation(&p.lp).map(csv_text).unwrap_or_default(),
        d.transformation.inferred.to_string(),
        r.expectation
            .as_ref()
            .map(|e| csv_text(e.kind()))
            .unwrap_or_default(),
        csv_num(r.source.probability),
        csv_num(r.variant.probability),
        csv_num(d.dp),
        csv_num(r.source.confidence),
        csv_num(r.variant.confidence),
        csv_num(d.dc),
        route(d.source_route),
        route(d.variant_route),
        csv_bool(d.flip),
        csv_num(d.source_margin),
        csv_bool(d.near_boundary),
        p.row.validity().name().to_string(),
        csv_text(&d.changes.unexpected.join(";")),
        outcome(&r.source),
        outcome(&r.variant),
        csv_num(latency),
        ann_text(|a| a.category.as_deref()),
        ann_text(|a| a.note.as_deref()),
        ann_text(|a| Some(a.reviewer.as_str())),
        ann_text(|a| Some(a.at.as_str())),
        p.ann
            .filter(|a| a.category.is_some())
            .map(|a| source_name(a.source).to_string())
            .unwrap_or_default(),
        p.sug
            .as_ref()
            .map(|s| s.category.to_string())
            .unwrap_or_default(),
        p.sug
            .as_ref()
            .map(|s| csv_text(&s.reason))
            .unwrap_or_default(),
        p.lp.key.to_string(),
    ]
}

fn write_csv(input: &ExportInput, rows: &[u32], out: &mut dyn Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(CSV_COLUMNS)?;
    for &i in rows {
        let p = load(input, i)?;
        w.write_record(csv_row(&p))?;
    }
    w.flush()?;
    Ok(())
}

// ---------------------------------------------------------------------------
// JSON

/// A recorded number as JSON, integral values as integers (`1083`, not `1083.0`).
fn json_num(x: Option<f64>) -> Value {
    match x {
        Some(v) if v.fract() == 0.0 && v.abs() < 9e15 => json!(v as i64),
        Some(v) => json!(v),
        None => Value::Null,
    }
}

fn side_facts(s: &Side, route: Option<Route>) -> Value {
    json!({
        "probability": s.probability,
        "confidence": s.confidence,
        "route": route.map(Route::name),
        "outcome": s.effective_outcome().map(|o| o.name().to_string()),
        "latency_ms": json_num(s.latency_ms),
    })
}

fn pair_json(p: &Pair) -> Value {
    let r = &p.lp.record;
    let d = &p.lp.derived;
    let failure = d.status.is_failure();
    json!({
        "file": p.file,
        "line": p.row.loc.line,
        "case_id": r.case_id,
        "variant_id": r.variant_id,
        "repetition": r.repetition,
        "model_id": r.model_id,
        "status": d.status.name(),
        "passed": r.passed,
        "verdict": d.verdict,
        "family": r.family,
        "transformation": transformation(&p.lp),
        "transformation_inferred": d.transformation.inferred,
        "expectation": r.expectation.as_ref().map(|e| e.kind().to_string()),
        "source": side_facts(&r.source, d.source_route),
        "variant": side_facts(&r.variant, d.variant_route),
        "dp": round6(d.dp),
        "dc": round6(d.dc),
        "source_margin": round6(d.source_margin),
        "variant_margin": round6(d.variant_margin),
        "minimum_boundary_margin": r.minimum_boundary_margin,
        "near_boundary": d.near_boundary,
        "flip": d.flip,
        "validity": p.row.validity().name(),
        "unexpected_changes": d.changes.unexpected,
        "why": d.why,
        "reasons": r.reasons,
        "warnings": d.warnings,
        "category": p.ann.and_then(|a| a.category.clone()),
        "category_source": p.ann.filter(|a| a.category.is_some()).map(|a| source_name(a.source)),
        "note": p.ann.and_then(|a| a.note.clone()),
        "reviewer": p.ann.map(|a| a.reviewer.clone()),
        "annotated_at": p.ann.map(|a| a.at.clone()),
        "suggestion": p.sug.as_ref().filter(|_| failure).map(|s| json!({
            "category": s.category,
            "reason": s.reason,
        })),
        "record_key": p.lp.key.to_string(),
    })
}

/// The summary document of `triage summary --format json` and of the JSON export.
pub fn summary_json(index: &RunIndex, rows: &[u32], summary: &Summary) -> Value {
    let mut v = serde_json::to_value(summary).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.insert(
            "conclusion".into(),
            json!(stats::conclusion(index, rows, summary)),
        );
    }
    v
}

fn problems_json(index: &RunIndex) -> Value {
    Value::Array(
        index
            .problems
            .iter()
            .map(|p| {
                json!({
                    "file": p.file,
                    "line": p.line,
                    "kind": problem_kind_name(p.kind),
                    "skipped": p.kind.skips_line(),
                    "message": p.message,
                })
            })
            .collect(),
    )
}

/// A stable machine name for a problem kind.
pub fn problem_kind_name(k: ProblemKind) -> &'static str {
    match k {
        ProblemKind::Malformed => "malformed",
        ProblemKind::NotAnObject => "not-an-object",
        ProblemKind::MissingField => "missing-field",
        ProblemKind::WrongType => "wrong-type",
        ProblemKind::InvalidUtf8 => "invalid-utf8",
        ProblemKind::TooLong => "too-long",
        ProblemKind::TooDeep => "too-deep",
        ProblemKind::Truncated => "truncated",
        ProblemKind::FieldWarning => "field-warning",
        ProblemKind::Io => "io",
    }
}

fn all_rows(index: &RunIndex) -> Vec<u32> {
    (0..index.rows.len())
        .filter_map(|i| u32::try_from(i).ok())
        .collect()
}

/// Write `v` pretty-printed with every line indented by `indent` spaces after the first.
fn write_indented(out: &mut dyn Write, v: &Value, indent: &str) -> io::Result<()> {
    let s = serde_json::to_string_pretty(v).map_err(io::Error::other)?;
    for (i, line) in s.lines().enumerate() {
        if i > 0 {
            out.write_all(b"\n")?;
            out.write_all(indent.as_bytes())?;
        }
        out.write_all(line.as_bytes())?;
    }
    Ok(())
}

fn write_json(
    input: &ExportInput,
    rows: &[u32],
    opts: &ExportOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    let index = input.index;
    let all = all_rows(index);
    let summary = stats::summarize(index, &all, input.store, GroupBy::Transformation);
    let files: Vec<&str> = index.files.iter().map(|f| f.display.as_str()).collect();
    // Streamed, so that a large export never holds every pair in memory.
    out.write_all(b"{\n  \"files\": ")?;
    write_indented(out, &json!(files), "  ")?;
    if let Some(at) = &opts.generated_at {
        out.write_all(b",\n  \"generated_at\": ")?;
        write_indented(out, &json!(at), "  ")?;
    }
    out.write_all(b",\n  \"summary\": ")?;
    write_indented(out, &summary_json(index, &all, &summary), "  ")?;
    out.write_all(b",\n  \"pairs\": [")?;
    for (n, &i) in rows.iter().enumerate() {
        let p = load(input, i)?;
        out.write_all(if n == 0 { b"\n    " } else { b",\n    " })?;
        write_indented(out, &pair_json(&p), "    ")?;
    }
    out.write_all(if rows.is_empty() { b"]" } else { b"\n  ]" })?;
    out.write_all(b",\n  \"problems\": ")?;
    write_indented(out, &problems_json(index), "  ")?;
    out.write_all(b"\n}\n")?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Fixtures

fn expectation_json(e: &Expectation) -> Value {
    match e {
        Expectation::Invariant {
            max_probability_drift,
            max_confidence_drift,
            require_same_route,
        } => json!({
            "kind": "invariant",
            "max_probability_drift": max_probability_drift,
            "max_confidence_drift": max_confidence_drift,
            "require_same_route": require_same_route,
        }),
        Expectation::NotLessUrgent {
            permitted_probability_movement,
        } => json!({
            "kind": "not-less-urgent",
            "permitted_probability_movement": permitted_probability_movement,
        }),
        Expectation::NotMoreUrgent {
            permitted_probability_movement,
        } => json!({
            "kind": "not-more-urgent",
            "permitted_probability_movement": permitted_probability_movement,
        }),
        Expectation::AllowedRoutes { allowed_routes } => json!({
            "kind": "allowed-routes",
            "allowed_routes": allowed_routes.iter().map(|r| r.name()).collect::<Vec<_>>(),
        }),
        Expectation::Unknown { kind } => json!({ "kind": kind }),
    }
}

fn side_fixture(s: &Side) -> Value {
    let response = if s.probability.is_some() || s.confidence.is_some() {
        json!({"probability": s.probability, "confidence": s.confidence})
    } else {
        Value::Null
    };
    json!({
        "question": s.question,
        "state": s.state,
        "response": response,
        "outcome": s.effective_outcome().map(|o| o.name().to_string()),
        "error": s.error,
        "route": s.route.map(Route::name),
    })
}

fn fixture_json(p: &Pair) -> Value {
    let r = &p.lp.record;
    json!({
        "case_id": r.case_id,
        "variant_id": r.variant_id,
        "label": r.label,
        "family": r.family,
        "transformation": r.transformation,
        "contract_version": r.contract_version,
        "state_schema_version": r.state_schema_version,
        "dataset_version": r.dataset_version,
        "model_id": r.model_id,
        "settings_id": r.settings_id,
        "repetition": r.repetition,
        "policy": r.policy.map(|pol| json!({
            "review_threshold": pol.review_threshold,
            "action_threshold": pol.action_threshold,
        })),
        "expectation": r.expectation.as_ref().map(expectation_json),
        "minimum_boundary_margin": r.minimum_boundary_margin,
        "allowed_changes": r.allowed_changes,
        "source": side_fixture(&r.source),
        "variant": side_fixture(&r.variant),
        "expected": {"passed": r.passed, "reasons": r.reasons},
        "triage": {
            "category": p.ann.and_then(|a| a.category.clone()),
            "note": p.ann.and_then(|a| a.note.clone()),
        },
    })
}

fn write_fixtures(input: &ExportInput, rows: &[u32], out: &mut dyn Write) -> io::Result<()> {
    for &i in rows {
        let p = load(input, i)?;
        serde_json::to_writer(&mut *out, &fixture_json(&p)).map_err(io::Error::other)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Markdown: escaping

/// A run string made inert, on one line, and cut to `max` characters with `…`.
pub fn capped(s: &str, max: usize) -> String {
    let s = text::inert_line(s);
    if s.chars().count() > max {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    } else {
        s
    }
}

/// Escape text for Markdown, so that it renders as written (in a table cell too):
/// no emphasis, code, links, HTML, entities or cell breaks. Backslash escapes
/// of ASCII punctuation are CommonMark, so `\<` renders as `<`.
pub fn md_escape(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 8);
    let alnum = |i: Option<usize>| {
        i.and_then(|i| chars.get(i))
            .is_some_and(|c| c.is_alphanumeric())
    };
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\\' | '`' | '*' | '~' | '|' | '<' | '>' | '&' => {
                out.push('\\');
                out.push(c);
            }
            // An underscore inside a word cannot start or end emphasis.
            '_' if alnum(i.checked_sub(1)) && alnum(Some(i + 1)) => out.push('_'),
            '_' => out.push_str("\\_"),
            // Without a link reference definition (none can start a line here),
            // `[text]` is plain text; only `](` and `][` make a link, and what
            // follows the end of the string is not known here.
            ']' if matches!(chars.get(i + 1), None | Some('(' | '[')) => out.push_str("\\]"),
            _ => out.push(c),
        }
    }
    out
}

/// A run string as Markdown text: inert, capped, escaped.
fn md(s: &str) -> String {
    md_escape(&capped(s, CAP))
}

/// A run string as a Markdown code span (inert and capped); `table` escapes `|` for a cell.
fn code(s: &str, table: bool) -> String {
    code_capped(s, CAP, table)
}

fn code_capped(s: &str, max: usize, table: bool) -> String {
    let s = capped(s, max);
    if s.trim().is_empty() {
        return if s.is_empty() {
            "*(empty)*".to_string()
        } else {
            format!("*({} blank)*", s.chars().count())
        };
    }
    if table && s.contains('|') {
        // A pipe in a code span inside a cell is fragile across renderers: use plain text.
        return md_escape(&s);
    }
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') || (s.starts_with(' ') && s.ends_with(' '))
    {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// A rate as a table cell: `0.40 [0.30, 0.52]`, or `—`.
fn rate_cell(r: &Option<Rate>) -> String {
    match r {
        Some(r) => format!("{:.2} [{:.2}, {:.2}]", r.value, r.low, r.high),
        None => "—".to_string(),
    }
}

fn num3(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "—".into())
}

fn signed3(x: f64) -> String {
    let s = format!("{x:+.3}");
    if s == "-0.000" { "+0.000".into() } else { s }
}

/// "and 1 more edit", "and 3 more edits".
fn more(n: usize, one: &str, many: &str) -> String {
    format!("and {n} more {}", if n == 1 { one } else { many })
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// "Threshold-boundary sensitivity" → "threshold-boundary sensitivity", but "SSO bug" stays.
fn lower_first(name: &str) -> String {
    let mut cs = name.chars();
    match (cs.next(), cs.next()) {
        (Some(a), Some(b)) if a.is_uppercase() && !b.is_uppercase() => {
            let mut s: String = a.to_lowercase().collect();
            s.push_str(&name[a.len_utf8()..]);
            s
        }
        _ => name.to_string(),
    }
}

// ---------------------------------------------------------------------------
// Markdown: the report

/// Distinct values of an interned field over all rows, sorted, with counts, and how many lack it.
fn distinct(index: &RunIndex, f: fn(&RunIndex, &PairRow) -> Sym) -> (BTreeMap<&str, u64>, u64) {
    let mut m = BTreeMap::new();
    let mut missing = 0;
    for r in &index.rows {
        match f(index, r) {
            NO_SYM => missing += 1,
            s => *m.entry(index.str(s)).or_insert(0) += 1,
        }
    }
    (m, missing)
}

fn versions_line(index: &RunIndex, f: fn(&RunIndex, &PairRow) -> Sym) -> String {
    let (m, missing) = distinct(index, f);
    let mut parts: Vec<String> = if m.len() == 1 {
        m.keys().map(|v| code(v, false)).collect()
    } else {
        m.iter()
            .take(6)
            .map(|(v, n)| format!("{} ({})", code(v, false), plural(*n, "pair", "pairs")))
            .collect()
    };
    if m.len() > 6 {
        parts.push(format!("and {} more", m.len() - 6));
    }
    match (parts.is_empty(), missing) {
        (true, _) => "not recorded".to_string(),
        (false, 0) => parts.join(", "),
        (false, n) => format!(
            "{}; not recorded for {}",
            parts.join(", "),
            plural(n, "pair", "pairs")
        ),
    }
}

/// The group's name cell; "not recorded" and the like are ours, the rest is from the run.
fn group_cell(g: &GroupStats) -> String {
    if g.name == stats::NOT_RECORDED && g.pairs > 0 {
        "*not recorded*".to_string()
    } else {
        code(&g.name, true)
    }
}

/// The per-group statistics table (shared by the report and `triage summary --format markdown`).
fn md_summary_table(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    let head = match s.by {
        GroupBy::Transformation => "Transformation",
        GroupBy::Family => "Family",
        GroupBy::Category => "Category",
        GroupBy::Case => "Case",
    };
    writeln!(
        out,
        "| {head} | Pairs | Failures | Failure rate | Invariant violations | Route flips | Boundary flips | Service errors | Median \\|Δp\\| | Max \\|Δp\\| |"
    )?;
    writeln!(
        out,
        "| --- | ---: | ---: | --- | --- | --- | --- | --- | ---: | ---: |"
    )?;
    let row = |out: &mut dyn Write, name: String, g: &GroupStats| {
        writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            g.pairs,
            g.failures,
            rate_cell(&g.failure_rate),
            rate_cell(&g.invariant_violation_rate),
            rate_cell(&g.route_flip_rate),
            rate_cell(&g.boundary_flip_rate),
            rate_cell(&g.service_error_rate),
            num3(g.median_abs_dp),
            num3(g.max_abs_dp),
        )
    };
    for g in &s.groups {
        row(out, group_cell(g), g)?;
    }
    row(out, "**All pairs**".to_string(), &s.overall)?;
    Ok(())
}

const RATES_NOTE: &str = "Each rate is the observed proportion with its Wilson 95% interval, `value [low, high]`; `—` means there was nothing to count. Invariant violations count only valid pairs without a service error; route flips count pairs with both routes known.";

struct Sections<'a> {
    /// Category id → failures, in taxonomy order then unknown ids by name.
    classified: Vec<(&'a str, Vec<u32>)>,
    unclassified: Vec<u32>,
    others: Vec<u32>,
}

fn sections<'a>(input: &ExportInput<'a>, rows: &[u32]) -> Sections<'a> {
    let mut by_cat: BTreeMap<&'a str, Vec<u32>> = BTreeMap::new();
    let mut unclassified = Vec::new();
    let mut others = Vec::new();
    for &i in rows {
        let Some(row) = input.index.rows.get(i as usize) else {
            continue;
        };
        if !row.status().is_failure() {
            others.push(i);
        } else if let Some(c) = input.index.failure_category(input.store, row) {
            by_cat.entry(c).or_default().push(i);
        } else {
            unclassified.push(i);
        }
    }
    let mut classified = Vec::new();
    for c in &input.taxonomy.categories {
        if let Some((id, v)) = by_cat.remove_entry(c.id.as_str()) {
            classified.push((id, v));
        }
    }
    classified.extend(by_cat);
    Sections {
        classified,
        unclassified,
        others,
    }
}

/// The heading of one category: its name, or its id marked unknown.
fn category_title(taxonomy: &Taxonomy, id: &str) -> String {
    match taxonomy.by_id(id) {
        Some(c) => md_escape(&capped(&c.name, CAP)),
        None => format!("Unknown category {}", code(id, false)),
    }
}

fn route_phrase(d: &super::derive::Derived) -> String {
    let name = |r: Option<Route>| r.map(Route::name).unwrap_or("no route");
    match (d.source_route, d.variant_route) {
        (None, None) => "routes not recorded".to_string(),
        (a, b) if a.is_some() && a == b => format!("{} → {} (kept)", name(a), name(b)),
        (a, b) if a.is_some() && b.is_some() => format!("{} → {} (route flip)", name(a), name(b)),
        (a, b) => format!("{} → {}", name(a), name(b)),
    }
}

/// A JSON value, compact, for one side of a change.
fn compact(v: &Value) -> String {
    match v {
        Value::String(x) => serde_json::to_string(x).unwrap_or_default(),
        other => other.to_string(),
    }
}

/// The changed words of two strings, as "`a` → `b`", "inserted `x`", "removed `y`".
fn word_edits(a: &str, b: &str) -> String {
    let edits = diff::changed_words(a, b);
    let mut parts: Vec<String> = edits
        .iter()
        .take(MAX_EDITS)
        .map(|(x, y)| match (x.is_empty(), y.is_empty()) {
            (false, false) => format!(
                "{} → {}",
                code_capped(x, 48, false),
                code_capped(y, 48, false)
            ),
            (true, false) => format!("inserted {}", code_capped(y, 48, false)),
            (false, true) => format!("removed {}", code_capped(x, 48, false)),
            (true, true) => "whitespace".to_string(),
        })
        .collect();
    if edits.len() > MAX_EDITS {
        parts.push(more(edits.len() - MAX_EDITS, "edit", "edits"));
    }
    if parts.is_empty() {
        "changed".to_string()
    } else {
        parts.join(", ")
    }
}

/// The sub-bullets of what the variant changed.
fn change_lines(lp: &LoadedPair) -> Vec<String> {
    let r = &lp.record;
    let d = &lp.derived;
    let mut out = Vec::new();
    let undeclared = |path: &str| {
        if d.changes.unexpected.iter().any(|u| u == path) {
            " **(undeclared)**"
        } else {
            ""
        }
    };
    if d.changes.question_changed {
        let edits = match (&r.source.question, &r.variant.question) {
            (Some(a), Some(b)) => word_edits(a, b),
            (Some(_), None) => "missing in the variant".to_string(),
            _ => "missing in the source".to_string(),
        };
        out.push(format!("`question`{}: {edits}", undeclared("question")));
    }
    let v = |x: &Value| code_capped(&compact(x), 60, false);
    for e in d.changes.state.iter().take(MAX_CHANGES) {
        let path = e.path.to_string();
        let flag = undeclared(&path);
        let p = code(&path, false);
        out.push(match &e.change {
            Change::Added { after } => format!("{p}{flag} added: {}", v(after)),
            Change::Removed { before } => format!("{p}{flag} removed (was {})", v(before)),
            Change::Changed {
                before: Value::String(x),
                after: Value::String(y),
            } if x.chars().count() + y.chars().count() > 60 => {
                format!("{p}{flag}: {}", word_edits(x, y))
            }
            Change::Changed { before, after } => format!("{p}{flag}: {} → {}", v(before), v(after)),
            Change::Reordered { .. } => format!("{p}: same entries in another order"),
        });
    }
    if d.changes.state.len() > MAX_CHANGES {
        out.push(more(
            d.changes.state.len() - MAX_CHANGES,
            "changed path",
            "changed paths",
        ));
    }
    out
}

fn state_recorded(lp: &LoadedPair) -> bool {
    let r = &lp.record;
    r.source.state.is_some()
        || r.variant.state.is_some()
        || r.source.question.is_some()
        || r.variant.question.is_some()
}

struct Md<'a, 'o> {
    input: ExportInput<'a>,
    out: &'o mut dyn Write,
    /// (case, variant) ids that occur more than once, so their headings name the repetition.
    repeated: HashSet<(Sym, Sym)>,
}

impl Md<'_, '_> {
    fn pair_block(&mut self, i: u32, unclassified: bool) -> io::Result<()> {
        let p = load(&self.input, i)?;
        let r = &p.lp.record;
        let d = &p.lp.derived;
        let mut title = format!(
            "### {} / {}",
            code(&r.case_id, false),
            code(&r.variant_id, false)
        );
        if self.repeated.contains(&(p.row.case, p.row.variant)) {
            if let Some(n) = r.repetition {
                title.push_str(&format!(" (repetition {n})"));
            }
            if let Some(m) = &r.model_id {
                title.push_str(&format!(" · {}", code(m, false)));
            }
        }
        let out = &mut *self.out;
        writeln!(out, "{title}\n")?;

        let mut facts = vec![format!("**{}**", status_label(d.status)), route_phrase(d)];
        if let Some(x) = d.dp {
            facts.push(format!("Δp {}", signed3(x)));
        }
        if let Some(x) = d.dc {
            facts.push(format!("Δc {}", signed3(x)));
        }
        if let Some(m) = d.source_margin {
            let mut s = format!("margin {m:.3}");
            if let Some(min) = r.minimum_boundary_margin {
                s.push_str(&format!(
                    " ({} the minimum {})",
                    if m < min { "under" } else { "over" },
                    super::model::fmt_num(min)
                ));
            }
            facts.push(s);
        }
        writeln!(out, "- {}", facts.join(" · "))?;
        writeln!(out, "- **Why:** {}", md_escape(&capped(&d.why, 2 * CAP)))?;
        if unclassified {
            match &p.sug {
                Some(s) => {
                    let name = self
                        .input
                        .taxonomy
                        .by_id(s.category)
                        .map(|c| format!(" ({})", md_escape(&c.name)))
                        .unwrap_or_default();
                    writeln!(
                        out,
                        "- **Suggested:** {}{name}: {}",
                        code(s.category, false),
                        md(&s.reason)
                    )?;
                }
                None => writeln!(out, "- **Suggested:** none")?,
            }
        }
        let changes = change_lines(&p.lp);
        if changes.is_empty() {
            let what = if state_recorded(&p.lp) {
                "nothing (source and variant payloads are equal)"
            } else {
                "not recorded (no question or state in the record)"
            };
            writeln!(out, "- **Changed:** {what}")?;
        } else {
            writeln!(out, "- **Changed:**")?;
            for c in changes {
                writeln!(out, "  - {c}")?;
            }
        }
        if !r.reasons.is_empty() {
            let reasons: Vec<String> = r.reasons.iter().take(6).map(|x| md(x)).collect();
            let more = if r.reasons.len() > 6 {
                format!(" (and {} more)", r.reasons.len() - 6)
            } else {
                String::new()
            };
            writeln!(out, "- **Recorded reasons:** {}{more}", reasons.join(" · "))?;
        }
        if let Some(a) = p.ann {
            if let Some(n) = a.note.as_deref().filter(|n| !n.trim().is_empty()) {
                writeln!(out, "- **Note:** {}", md_escape(&capped(n, 4 * CAP)))?;
            }
            let how = match (a.category.is_some(), a.source) {
                (false, _) => "",
                (true, AnnotationSource::Manual) => "",
                (true, AnnotationSource::Suggestion) => ", accepted suggestion",
            };
            writeln!(
                out,
                "- **Reviewer:** {}, {}{how}",
                md(&a.reviewer),
                md(&a.at)
            )?;
        }
        let mut from = vec![code(&format!("{}:{}", p.file, p.row.loc.line), false)];
        if let Some(f) = &r.family {
            from.push(format!("family {}", code(f, false)));
        }
        let inferred = if d.transformation.inferred {
            " (inferred)"
        } else {
            ""
        };
        match transformation(&p.lp) {
            Some(t) => from.push(format!("transformation {}{inferred}", code(t, false))),
            None => from.push("transformation not recorded".to_string()),
        }
        if let Some(e) = &r.expectation {
            from.push(md(&e.describe()));
        }
        writeln!(out, "- **Where:** {}", from.join(" · "))?;
        writeln!(out)?;
        Ok(())
    }
}

fn write_markdown(
    input: &ExportInput,
    rows: &[u32],
    opts: &ExportOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    let index = input.index;
    let all = all_rows(index);
    let summary = stats::summarize(index, &all, input.store, GroupBy::Transformation);
    let secs = sections(input, rows);

    // Header.
    writeln!(out, "# Triage report: {}\n", md(&index.display_name()))?;
    let files: Vec<String> = index
        .files
        .iter()
        .map(|f| {
            // Another tool's results say which tool, and that lines count converted records.
            if f.format == super::formats::Format::Native {
                code(&f.display, false)
            } else {
                format!(
                    "{} ({} results; line numbers count converted records)",
                    code(&f.display, false),
                    f.format.name()
                )
            }
        })
        .collect();
    writeln!(out, "- **Files:** {}", files.join(", "))?;
    let count = |s: Status| index.rows.iter().filter(|r| r.status() == s).count() as u64;
    let mut kinds = Vec::new();
    for (s, one, many) in [
        (Status::Fail, "failed expectation", "failed expectations"),
        (Status::ServiceError, "service error", "service errors"),
        (Status::Invalid, "invalid pair", "invalid pairs"),
    ] {
        let n = count(s);
        if n > 0 {
            kinds.push(plural(n, one, many));
        }
    }
    let kinds = if kinds.is_empty() {
        String::new()
    } else {
        format!(" ({})", kinds.join(", "))
    };
    writeln!(
        out,
        "- **Pairs:** {} · **Failures:** {}{kinds} · **Classified:** {} of {}",
        summary.pairs, summary.failures, summary.classified, summary.failures
    )?;
    let skipped = index
        .problems
        .iter()
        .filter(|p| p.kind.skips_line())
        .count() as u64;
    let warned = index.problems.len() as u64 - skipped;
    writeln!(
        out,
        "- **Problems:** {}",
        if index.problems.is_empty() {
            "none".to_string()
        } else {
            let mut v = Vec::new();
            if skipped > 0 {
                v.push(plural(skipped, "unreadable line", "unreadable lines"));
            }
            if warned > 0 {
                v.push(plural(warned, "field warning", "field warnings"));
            }
            format!("{}, listed under Problems", v.join(", "))
        }
    )?;
    writeln!(
        out,
        "- **Contract version:** {}",
        versions_line(index, RunIndex::contract)
    )?;
    writeln!(
        out,
        "- **State schema version:** {}",
        versions_line(index, RunIndex::schema)
    )?;
    writeln!(
        out,
        "- **Model:** {}",
        versions_line(index, RunIndex::model)
    )?;
    let listed_failures = rows.len() - secs.others.len();
    let selection = match (&opts.filter, opts.all) {
        (None, false) => format!("every failure ({listed_failures})"),
        (None, true) => format!(
            "all {} pairs: the {} by category, then the other {}",
            rows.len(),
            plural(listed_failures as u64, "failure", "failures"),
            secs.others.len()
        ),
        (Some(q), false) => format!(
            "the {} matching {}",
            plural(listed_failures as u64, "failure", "failures"),
            code(&q.to_string(), false)
        ),
        (Some(q), true) => format!(
            "the {} matching {} ({} of them failures)",
            plural(rows.len() as u64, "pair", "pairs"),
            code(&q.to_string(), false),
            listed_failures
        ),
    };
    writeln!(out, "- **Listed below:** {selection}")?;
    if let Some(at) = &opts.generated_at {
        writeln!(out, "- **Generated:** {}", md(at))?;
    }
    writeln!(out)?;

    // Summary per transformation, over every pair.
    writeln!(out, "## Summary by transformation\n")?;
    writeln!(
        out,
        "Over all {} of the run, not only those listed below. {RATES_NOTE}\n",
        plural(summary.pairs, "pair", "pairs")
    )?;
    md_summary_table(out, &summary)?;
    writeln!(out)?;

    // Categories × transformations.
    writeln!(out, "## Failures by category and transformation\n")?;
    md_category_table(out, input, &summary)?;

    // One section per category, then the unclassified.
    let repeated = {
        let mut seen = HashSet::new();
        let mut twice = HashSet::new();
        for r in &index.rows {
            if !seen.insert((r.case, r.variant)) {
                twice.insert((r.case, r.variant));
            }
        }
        twice
    };
    let mut w = Md {
        input: *input,
        out,
        repeated,
    };
    for (id, list) in &secs.classified {
        let out = &mut *w.out;
        writeln!(
            out,
            "## {} ({})\n",
            category_title(input.taxonomy, id),
            list.len()
        )?;
        match input.taxonomy.by_id(id) {
            Some(c) if !c.description.trim().is_empty() => writeln!(
                out,
                "{}: {}.\n",
                code(id, false),
                md_escape(&capped(c.description.trim_end_matches('.'), 2 * CAP))
            )?,
            Some(_) => {}
            None => writeln!(
                out,
                "{} is not in the taxonomy in effect; it is listed as the reviewer recorded it.\n",
                code(id, false)
            )?,
        }
        for &i in list {
            w.pair_block(i, false)?;
        }
    }
    if !secs.unclassified.is_empty() {
        let out = &mut *w.out;
        writeln!(
            out,
            "## Unclassified failures ({})\n",
            secs.unclassified.len()
        )?;
        writeln!(
            out,
            "No reviewer has given these a category yet. Each shows the category triage suggests and why.\n"
        )?;
        for &i in &secs.unclassified {
            w.pair_block(i, true)?;
        }
    }
    if listed_failures == 0 {
        writeln!(w.out, "No failures to list.\n")?;
    }
    let out = w.out;

    if !secs.others.is_empty() {
        writeln!(out, "## Other pairs ({})\n", secs.others.len())?;
        writeln!(
            out,
            "| Pair | Status | Transformation | Route | Δp | Line |"
        )?;
        writeln!(out, "| --- | --- | --- | --- | ---: | --- |")?;
        for &i in &secs.others {
            let Some(r) = index.rows.get(i as usize) else {
                continue;
            };
            let name = |r: Option<Route>| r.map(Route::name).unwrap_or("—");
            let route = if r.source_route().is_none() && r.variant_route().is_none() {
                "—".to_string()
            } else {
                format!("{} → {}", name(r.source_route()), name(r.variant_route()))
            };
            let dp = if r.dp.is_finite() {
                signed3(f64::from(r.dp))
            } else {
                "—".into()
            };
            let rep = if r.repetition != u32::MAX && w.repeated.contains(&(r.case, r.variant)) {
                format!(" (repetition {})", r.repetition)
            } else {
                String::new()
            };
            writeln!(
                out,
                "| {} / {}{rep} | {} | {} | {route} | {dp} | {} |",
                code(index.str(r.case), true),
                code(index.str(r.variant), true),
                status_label(r.status()),
                match index.str(r.transformation) {
                    super::derive::NOT_RECORDED => "*not recorded*".to_string(),
                    t => code(t, true),
                },
                code(&format!("{}:{}", file_name(index, r), r.loc.line), true),
            )?;
        }
        writeln!(out)?;
    }

    // Problems.
    writeln!(out, "## Problems\n")?;
    if index.problems.is_empty() {
        writeln!(out, "None: every line of the run was read.\n")?;
    } else {
        writeln!(out, "| Where | Problem | Detail |")?;
        writeln!(out, "| --- | --- | --- |")?;
        for p in index.problems.iter().take(MAX_PROBLEMS) {
            writeln!(
                out,
                "| {} | {} | {} |",
                code(&format!("{}:{}", p.file, p.line), true),
                p.kind.label(),
                md(&p.message)
            )?;
        }
        if index.problems.len() > MAX_PROBLEMS {
            writeln!(
                out,
                "\n…and {} more; `triage RUN` lists them all (`p`).",
                index.problems.len() - MAX_PROBLEMS
            )?;
        }
        writeln!(out)?;
    }

    // Conclusion.
    writeln!(out, "## Conclusion\n")?;
    for sentence in stats::conclusion(index, &all, &summary) {
        writeln!(out, "- {}", md_escape(&sentence))?;
    }
    writeln!(out)?;
    let triage = triage_sentences(input, &summary);
    if !triage.is_empty() {
        writeln!(out, "Triage so far:\n")?;
        for s in triage {
            writeln!(out, "- {s}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Failures per reviewer category over the whole run, most first, in Markdown.
fn triage_sentences(input: &ExportInput, summary: &Summary) -> Vec<String> {
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &input.index.rows {
        if let Some(c) = input.index.failure_category(input.store, r) {
            *counts.entry(c).or_default() += 1;
        }
    }
    let order = |id: &str| input.taxonomy.position(id).unwrap_or(usize::MAX);
    let mut v: Vec<(&str, u64)> = counts.into_iter().collect();
    v.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| order(a.0).cmp(&order(b.0)))
            .then_with(|| a.0.cmp(b.0))
    });
    let total = summary.failures;
    v.into_iter()
        .map(|(id, n)| {
            let what = match input.taxonomy.by_id(id) {
                Some(c) => format!(
                    "{} ({})",
                    md_escape(&lower_first(&capped(&c.name, CAP))),
                    code(id, false)
                ),
                None => format!("{} (not in the taxonomy)", code(id, false)),
            };
            format!(
                "{n} of {} {} {what}.",
                plural(total, "failure", "failures"),
                if n == 1 { "is" } else { "are" }
            )
        })
        .collect()
}

/// Transformations (rows) × categories (columns) of the failures of the whole run.
fn md_category_table(out: &mut dyn Write, input: &ExportInput, s: &Summary) -> io::Result<()> {
    if s.categories_by_transformation.is_empty() {
        writeln!(out, "No failures.\n")?;
        return Ok(());
    }
    let present: HashSet<&str> = s
        .categories_by_transformation
        .iter()
        .flat_map(|(_, cats)| cats.iter().map(|(c, _)| c.as_str()))
        .collect();
    let mut cols: Vec<&str> = input
        .taxonomy
        .categories
        .iter()
        .map(|c| c.id.as_str())
        .filter(|id| present.contains(id))
        .collect();
    let mut unknown: Vec<&str> = present
        .iter()
        .copied()
        .filter(|c| *c != stats::UNCLASSIFIED && input.taxonomy.by_id(c).is_none())
        .collect();
    unknown.sort_unstable();
    cols.extend(unknown);
    let has_unclassified = present.contains(stats::UNCLASSIFIED);
    let mut head = String::from("| Transformation |");
    let mut rule = String::from("| --- |");
    for c in &cols {
        head.push_str(&format!(" {} |", code(c, true)));
        rule.push_str(" ---: |");
    }
    if has_unclassified {
        head.push_str(" *unclassified* |");
        rule.push_str(" ---: |");
    }
    head.push_str(" Total |");
    rule.push_str(" ---: |");
    writeln!(out, "{head}\n{rule}")?;
    let mut totals = vec![0u64; cols.len() + 1];
    let cell = |n: u64| {
        if n == 0 {
            "·".to_string()
        } else {
            n.to_string()
        }
    };
    for (t, cats) in &s.categories_by_transformation {
        let get = |id: &str| cats.iter().find(|(c, _)| c == id).map(|x| x.1).unwrap_or(0);
        let name = if t == stats::NOT_RECORDED {
            "*not recorded*".to_string()
        } else {
            code(t, true)
        };
        let mut line = format!("| {name} |");
        for (k, c) in cols.iter().enumerate() {
            let n = get(c);
            totals[k] += n;
            line.push_str(&format!(" {} |", cell(n)));
        }
        if has_unclassified {
            let n = get(stats::UNCLASSIFIED);
            totals[cols.len()] += n;
            line.push_str(&format!(" {} |", cell(n)));
        }
        let total: u64 = cats.iter().map(|x| x.1).sum();
        line.push_str(&format!(" **{total}** |"));
        writeln!(out, "{line}")?;
    }
    let mut line = String::from("| **Total** |");
    for n in &totals[..cols.len()] {
        line.push_str(&format!(" **{n}** |"));
    }
    if has_unclassified {
        line.push_str(&format!(" **{}** |", totals[cols.len()]));
    }
    line.push_str(&format!(" **{}** |", s.failures));
    writeln!(out, "{line}\n")?;
    let names: Vec<String> = cols
        .iter()
        .filter_map(|id| {
            input
                .taxonomy
                .by_id(id)
                .map(|c| format!("{} {}", code(id, false), md_escape(&lower_first(&c.name))))
        })
        .collect();
    if !names.is_empty() {
        writeln!(
            out,
            "The reviewers' categories: {}. Counts are over every failure of the run.\n",
            names.join(", ")
        )?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// `triage summary`

/// The output formats of `triage summary`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryFormat {
    Text,
    Markdown,
    Json,
}

/// Write the statistics of `rows`, grouped by `by`.
pub fn write_summary(
    input: &ExportInput,
    rows: &[u32],
    by: GroupBy,
    format: SummaryFormat,
    out: &mut dyn Write,
) -> io::Result<()> {
    let index = input.index;
    let s = stats::summarize(index, rows, input.store, by);
    match format {
        SummaryFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, &summary_json(index, rows, &s))
                .map_err(io::Error::other)?;
            out.write_all(b"\n")
        }
        SummaryFormat::Markdown => {
            writeln!(out, "## Summary: {}\n", md(&index.display_name()))?;
            writeln!(
                out,
                "{}, {}, {} classified. {RATES_NOTE}\n",
                plural(s.pairs, "pair", "pairs"),
                plural(s.failures, "failure", "failures"),
                s.classified
            )?;
            md_summary_table(out, &s)?;
            writeln!(out)?;
            for sentence in stats::conclusion(index, rows, &s) {
                writeln!(out, "- {}", md_escape(&sentence))?;
            }
            Ok(())
        }
        SummaryFormat::Text => text_summary(index, rows, &s, out),
    }
}

fn fit(s: &str, w: usize) -> String {
    let cut = text::truncate_cols(s, w);
    format!("{cut}{}", " ".repeat(w.saturating_sub(text::width(&cut))))
}

/// Word-wrap one sentence to `width` columns.
fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in s.split(' ') {
        if !cur.is_empty() && text::width(&cur) + 1 + text::width(word) > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// Columns of the text table; they add up to 98, under 100.
const NAME_W: usize = 20;

fn text_summary(
    index: &RunIndex,
    rows: &[u32],
    s: &Summary,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(
        out,
        "{}: {}, {}, {} classified, {} (by {})",
        text::inert_line(&index.display_name()),
        plural(s.pairs, "pair", "pairs"),
        plural(s.failures, "failure", "failures"),
        s.classified,
        plural(s.problems, "unreadable line", "unreadable lines"),
        s.by.name()
    )?;
    writeln!(out)?;
    // The count columns grow with the run; the name column gives the room back.
    let digits = |n: u64| n.to_string().len();
    let (wp, wf, we) = (
        digits(s.overall.pairs).max(5),
        digits(s.overall.failures).max(5),
        digits(s.overall.service_errors).max(4),
    );
    let name_w = NAME_W
        .saturating_sub((wp - 5) + (wf - 5) + (we - 4))
        .max(10);
    let head = format!(
        "{} {:>wp$} {:>wf$} {:>we$} {:<17} {:<17} {:<17} {:>6}",
        fit(s.by.name(), name_w),
        "pairs",
        "fail",
        "err",
        "failure rate",
        "invariant viol.",
        "route flips",
        "max|Δp|"
    );
    writeln!(out, "{}", head.trim_end())?;
    let line = |g: &GroupStats| {
        let max = g
            .max_abs_dp
            .map(|x| format!("{x:.3}"))
            .unwrap_or_else(|| "—".into());
        let l = format!(
            "{} {:>wp$} {:>wf$} {:>we$} {} {} {} {:>6}",
            fit(&text::inert_line(&g.name), name_w),
            g.pairs,
            g.failures,
            g.service_errors,
            fit(&rate_cell(&g.failure_rate), 17),
            fit(&rate_cell(&g.invariant_violation_rate), 17),
            fit(&rate_cell(&g.route_flip_rate), 17),
            max
        );
        l.trim_end().to_string()
    };
    for g in &s.groups {
        writeln!(out, "{}", line(g))?;
    }
    writeln!(out, "{}", line(&s.overall))?;
    writeln!(out)?;
    writeln!(
        out,
        "Rates: observed value [Wilson 95% interval]; — when there is nothing to count."
    )?;
    writeln!(out)?;
    for sentence in stats::conclusion(index, rows, s) {
        for (i, l) in wrap(&sentence, 98).iter().enumerate() {
            writeln!(out, "{}{l}", if i == 0 { "- " } else { "  " })?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// `triage check`

/// The gates of `triage check`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gates {
    /// At most this many failures without a reviewer's category.
    pub max_unclassified: Option<u64>,
    /// No failure may carry one of these categories.
    pub fail_on: Vec<String>,
    /// The observed failure rate may be at most this.
    pub max_failure_rate: Option<f64>,
    /// Any problem in the run (a bad line, an unusable field) fails the check.
    pub strict: bool,
}

impl Gates {
    /// Refuse gates that cannot be checked: an unknown category id, a rate outside 0–1.
    pub fn validate(&self, taxonomy: &Taxonomy) -> Result<(), String> {
        for c in &self.fail_on {
            if taxonomy.by_id(c).is_none() {
                let ids: Vec<&str> = taxonomy.categories.iter().map(|c| c.id.as_str()).collect();
                return Err(format!(
                    "--fail-on: `{}` is not a category id; the valid ids are: {}",
                    text::inert_line(c),
                    ids.join(", ")
                ));
            }
        }
        if let Some(x) = self.max_failure_rate
            && !(0.0..=1.0).contains(&x)
        {
            return Err(format!(
                "--max-failure-rate: {x} is not a rate; give a fraction from 0 to 1, such as 0.25"
            ));
        }
        Ok(())
    }

    fn any(&self) -> bool {
        self.max_unclassified.is_some()
            || !self.fail_on.is_empty()
            || self.max_failure_rate.is_some()
    }
}

/// The verdict of `triage check`.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOutcome {
    /// Whether every gate holds.
    pub passed: bool,
    /// The report to print, one screen at most.
    pub report: String,
}

/// How many example pairs a failed gate lists.
const GATE_EXAMPLES: usize = 3;

/// A few pairs, one line each, for a failed gate's explanation.
fn some_pairs(index: &RunIndex, rows: &[&PairRow]) -> Vec<String> {
    let mut v: Vec<String> = rows
        .iter()
        .take(GATE_EXAMPLES)
        .map(|r| {
            let line = format!(
                "{}/{} ({}:{})",
                text::inert_line(index.str(r.case)),
                text::inert_line(index.str(r.variant)),
                text::inert_line(file_name(index, r)),
                r.loc.line
            );
            text::truncate_cols(&line, 90)
        })
        .collect();
    if rows.len() > GATE_EXAMPLES {
        v.push(format!("… and {} more", rows.len() - GATE_EXAMPLES));
    }
    v
}

/// One gate's verdict.
struct GateResult {
    ok: bool,
    name: String,
    why: String,
    examples: Vec<String>,
}

/// Check the gates against the run.
pub fn check(input: &ExportInput, gates: &Gates) -> CheckOutcome {
    use std::fmt::Write as _;
    let index = input.index;
    let all = all_rows(index);
    let s = stats::summarize(index, &all, input.store, GroupBy::Transformation);
    let mut r = String::new();
    let count = |st: Status| index.rows.iter().filter(|x| x.status() == st).count() as u64;
    let _ = writeln!(
        r,
        "triage check: {}",
        text::truncate_cols(&text::inert_line(&index.display_name()), 80)
    );
    let _ = writeln!(
        r,
        "  {}, {}: {} failed, {}, {} invalid",
        plural(s.pairs, "pair", "pairs"),
        plural(s.failures, "failure", "failures"),
        count(Status::Fail),
        plural(
            count(Status::ServiceError),
            "service error",
            "service errors"
        ),
        count(Status::Invalid),
    );
    let _ = writeln!(
        r,
        "  {} classified, {} unclassified",
        s.classified,
        s.failures - s.classified
    );
    let skipped = index
        .problems
        .iter()
        .filter(|p| p.kind.skips_line())
        .count() as u64;
    let warned = index.problems.len() as u64 - skipped;
    let _ = writeln!(
        r,
        "  {} ({}, {})",
        plural(index.problems.len() as u64, "problem", "problems"),
        plural(skipped, "unreadable line", "unreadable lines"),
        plural(warned, "field warning", "field warnings")
    );
    for p in index.problems.iter().take(5) {
        let _ = writeln!(
            r,
            "    {}",
            text::truncate_cols(&text::inert_line(&p.to_string()), 96)
        );
    }
    if index.problems.len() > 5 {
        let _ = writeln!(r, "    … and {} more", index.problems.len() - 5);
    }
    let _ = writeln!(r);

    let mut results: Vec<GateResult> = Vec::new();
    if let Some(max) = gates.max_unclassified {
        let open: Vec<&PairRow> = index
            .rows
            .iter()
            .filter(|x| {
                x.status().is_failure() && input.index.failure_category(input.store, x).is_none()
            })
            .collect();
        let ok = open.len() as u64 <= max;
        results.push(GateResult {
            ok,
            name: format!("--max-unclassified {max}"),
            why: format!(
                "{} (at most {max} allowed)",
                plural(
                    open.len() as u64,
                    "unclassified failure",
                    "unclassified failures"
                )
            ),
            examples: if ok {
                Vec::new()
            } else {
                some_pairs(index, &open)
            },
        });
    }
    for c in &gates.fail_on {
        let hits: Vec<&PairRow> = index
            .rows
            .iter()
            .filter(|x| input.index.failure_category(input.store, x) == Some(c.as_str()))
            .collect();
        let c = text::inert_line(c);
        let ok = hits.is_empty();
        results.push(GateResult {
            ok,
            why: if ok {
                format!("no failure is classified {c}")
            } else {
                format!(
                    "{} classified {c}",
                    plural(hits.len() as u64, "failure", "failures")
                )
            },
            name: format!("--fail-on {c}"),
            examples: some_pairs(index, &hits),
        });
    }
    if let Some(max) = gates.max_failure_rate {
        let (ok, why) = match &s.overall.failure_rate {
            Some(rate) => (
                rate.value <= max + 1e-12,
                format!(
                    "failure rate {:.3} ({} of {}), 95% interval [{:.3}, {:.3}]",
                    rate.value, rate.successes, rate.trials, rate.low, rate.high
                ),
            ),
            None => (true, "no pairs, so no failure rate".to_string()),
        };
        results.push(GateResult {
            ok,
            name: format!("--max-failure-rate {max}"),
            why,
            examples: Vec::new(),
        });
    }
    if gates.strict {
        let ok = index.problems.is_empty();
        results.push(GateResult {
            ok,
            name: "--strict".to_string(),
            why: if ok {
                "no problems in the run".to_string()
            } else {
                format!(
                    "{} in the run",
                    plural(index.problems.len() as u64, "problem", "problems")
                )
            },
            examples: Vec::new(),
        });
    }
    let w = results
        .iter()
        .map(|x| text::width(&x.name))
        .max()
        .unwrap_or(0);
    for g in &results {
        let _ = writeln!(
            r,
            "  {}  {}  {}",
            if g.ok { "PASS" } else { "FAIL" },
            fit(&g.name, w),
            g.why
        );
        for e in &g.examples {
            let _ = writeln!(r, "        {e}");
        }
    }
    if !gates.any() {
        let _ = writeln!(
            r,
            "  {}: the check passes unless --strict finds problems",
            if gates.strict {
                "no other gate given"
            } else {
                "no gates given"
            }
        );
        let _ = writeln!(
            r,
            "  (gates: --max-unclassified N, --fail-on CATEGORY, --max-failure-rate X, --strict)"
        );
    }
    let failed: Vec<&str> = results
        .iter()
        .filter(|x| !x.ok)
        .map(|x| x.name.as_str())
        .collect();
    let passed = failed.is_empty();
    let _ = writeln!(r);
    if passed {
        let _ = writeln!(
            r,
            "PASS: {}",
            match results.len() {
                0 => "no gate to fail".to_string(),
                1 => "the gate holds".to_string(),
                n => format!("all {n} gates hold"),
            }
        );
    } else {
        let _ = writeln!(
            r,
            "FAIL: {} of {} failed ({})",
            failed.len(),
            plural(results.len() as u64, "gate", "gates"),
            failed.join(", ")
        );
    }
    CheckOutcome { passed, report: r }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
        }
        assert_eq!("MD".parse::<Format>(), Ok(Format::Markdown));
        assert!(
            "xml"
                .parse::<Format>()
                .unwrap_err()
                .contains("markdown, csv")
        );
    }

    #[test]
    fn markdown_escaping_defuses_every_construct() {
        let e = md_escape("a|b `c` *d* [x](http://e) <img src=x> &amp; _u_ snake_case ~s~ \\");
        assert_eq!(
            e,
            "a\\|b \\`c\\` \\*d\\* [x\\](http://e) \\<img src=x\\> \\&amp; \\_u\\_ snake_case \\~s\\~ \\\\"
        );
        assert_eq!(
            md_escape("[0.2, 0.5] and [a][b] and [c]"),
            "[0.2, 0.5] and [a\\][b] and [c\\]"
        );
    }

    #[test]
    fn capped_is_inert_and_short() {
        assert_eq!(capped("a\u{1b}[31mb\nc", 120), "a\\x1b[31mb\\nc");
        let long = "x".repeat(200);
        let c = capped(&long, 120);
        assert_eq!(c.chars().count(), 120);
        assert!(c.ends_with('…'));
    }

    #[test]
    fn code_spans_survive_backticks_and_pipes() {
        assert_eq!(code("plain", false), "`plain`");
        assert_eq!(code("a`b", false), "``a`b``");
        assert_eq!(code("`x", false), "`` `x ``");
        assert_eq!(code("a|b", true), "a\\|b");
        assert_eq!(code("a|b", false), "`a|b`");
        assert_eq!(code("", false), "*(empty)*");
    }

    #[test]
    fn csv_cells_are_not_formulas() {
        assert_eq!(csv_text("=HYPERLINK(1)"), "'=HYPERLINK(1)");
        assert_eq!(csv_text("ok\tthen\nmore"), "ok  then\\nmore");
    }

    #[test]
    fn rounding_and_signs() {
        assert_eq!(round6(Some(0.52 - 0.91)), Some(-0.39));
        assert_eq!(round6(Some(-1e-9)), Some(0.0));
        assert_eq!(round6(Some(f64::NAN)), None);
        assert_eq!(signed3(-0.0001), "+0.000");
        assert_eq!(signed3(-0.39), "-0.390");
        assert_eq!(
            lower_first("Threshold-boundary sensitivity"),
            "threshold-boundary sensitivity"
        );
        assert_eq!(lower_first("SSO bug"), "SSO bug");
    }

    #[test]
    fn wrap_fits() {
        let w = wrap("one two three four five six", 9);
        assert_eq!(w, vec!["one two", "three", "four five", "six"]);
    }
}
