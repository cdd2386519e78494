//! Reports and exports of a run, in one place for the CLI and the viewer.
//!
//! [`select_rows`] picks the pairs to export (failures by default, every pair
//! with [`ExportOptions::all`], narrowed by a [`Query`]); [`write()`] writes
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
//! The same module writes the output of `triage summary` ([`write_summary`]);
//! `triage check` is decided in [`super::gate`]. Every string from a run is made
//! inert (`core::text`) before it reaches a human-readable format, and
//! escaped for Markdown where Markdown is written; the machine formats (JSON,
//! fixtures) keep strings exactly as recorded, with the characters a terminal
//! would obey written as JSON escapes (`json.rs`). `docs/export.md` is the user
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
use super::json;
use super::model::{Expectation, Route, Side};
use super::problem::ProblemKind;
use super::query::{Context, Query};
use super::row::{NO_SYM, PairRow, Sym};
use super::stats::{self, GroupBy, GroupStats, Summary, table};
use super::suggest::{self, Suggestion};
use super::taxonomy::Taxonomy;
use super::text::{self, fit, plural};

mod markdown;
pub mod since;
use markdown::*;
pub use markdown::{capped, md_escape};

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
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Format, UnknownFormat> {
        match s.trim().to_ascii_lowercase().as_str() {
            "markdown" | "md" => Ok(Format::Markdown),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "fixtures" | "jsonl" => Ok(Format::Fixtures),
            _ => Err(UnknownFormat {
                given: s.to_string(),
            }),
        }
    }
}

/// An export format name that names no [`Format`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownFormat {
    /// The name as given.
    pub given: String,
}

impl fmt::Display for UnknownFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown format `{}`; use one of: markdown, csv, json, fixtures",
            text::inert_line(&self.given)
        )
    }
}

impl std::error::Error for UnknownFormat {}

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
    /// The run before this one, when comparing: the report gains "Since the
    /// last run" and a filter may name `change:`.
    pub baseline: Option<ExportBaseline<'a>>,
}

/// The earlier run of a comparison, with its journal and the match.
#[derive(Debug, Clone, Copy)]
pub struct ExportBaseline<'a> {
    pub old: &'a RunIndex,
    pub old_store: Option<&'a AnnotationStore>,
    pub comparison: &'a crate::core::compare::Comparison,
}

impl<'a> ExportInput<'a> {
    /// Both runs of the comparison, when there is one.
    pub fn runs(&self) -> Option<crate::core::compare::Runs<'a>> {
        self.baseline.map(|b| crate::core::compare::Runs {
            old: b.old,
            old_store: b.old_store,
            new: self.index,
            new_store: self.store,
        })
    }
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
                changes: input.baseline.map(|b| b.comparison.changes()),
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
    /// The pair's line number.
    line: u32,
    file: &'a str,
    lp: LoadedPair,
    ann: Option<&'a Annotation>,
    sug: Option<Suggestion>,
    /// Every reviewer's decision, how they stand, and the resolution.
    decisions: Vec<&'a Annotation>,
    agreement: Option<crate::core::annotations::Agreement>,
    resolution: Option<crate::core::annotations::Resolution<'a>>,
}

fn file_name<'a>(index: &'a RunIndex, row: &PairRow) -> &'a str {
    index
        .files
        .get(row.pos.file() as usize)
        .map(|f| f.display.as_str())
        .unwrap_or("?")
}

fn load<'a>(input: &ExportInput<'a>, i: u32) -> io::Result<Pair<'a>> {
    let index = input.index;
    let row = index
        .rows
        .get(i as usize)
        .ok_or_else(|| io::Error::other(format!("no pair number {i} in the run")))?;
    let lp = index.load_pair(i as usize).map_err(io::Error::other)?;
    let store = input.store;
    // In blind review the suggestion of a pair the reviewer has not
    // decided stays hidden, as on the screen.
    let sug = suggest::suggest(&lp.record, &lp.derived)
        .filter(|_| !store.is_some_and(|s| s.hides(&lp.key)));
    Ok(Pair {
        row,
        line: index.loc(i as usize).line,
        file: file_name(index, row),
        ann: store.and_then(|s| s.get(&lp.key)),
        decisions: store.map(|s| s.decisions(&lp.key)).unwrap_or_default(),
        agreement: store.and_then(|s| s.agreement(&lp.key)),
        resolution: store.and_then(|s| s.resolution(&lp.key)),
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

/// The family as recorded, else the inferred transformation's
/// (`transformation_inferred` says it was inferred).
fn family(lp: &LoadedPair) -> Option<&str> {
    super::derive::family_of(&lp.record, &lp.derived.transformation).map(|(f, _)| f)
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
        Status::Boundary => "boundary",
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
        p.line.to_string(),
        csv_text(&r.case_id),
        csv_text(&r.variant_id),
        d.status.name().to_string(),
        csv_bool(r.passed),
        csv_bool(d.verdict),
        family(&p.lp).map(csv_text).unwrap_or_default(),
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
        "line": p.line,
        "case_id": r.case_id,
        "variant_id": r.variant_id,
        "repetition": r.repetition,
        "model_id": r.model_id,
        "status": d.status.name(),
        "passed": r.passed,
        "verdict": d.verdict,
        "family": family(&p.lp),
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
        "category": p.ann.and_then(|a| a.category),
        "category_source": p.ann.filter(|a| a.category.is_some()).map(|a| source_name(a.source)),
        "note": p.ann.and_then(|a| a.note.clone()),
        "reviewer": p.ann.map(|a| a.reviewer),
        "annotated_at": p.ann.map(|a| a.at),
        "agreement": p.agreement.map(|a| a.as_str()),
        "decisions": p.decisions.iter().map(|a| json!({
            "reviewer": a.reviewer,
            "category": a.category,
            "note": a.note,
            "at": a.at,
            "source": source_name(a.source),
        })).collect::<Vec<_>>(),
        "resolution": p.resolution.map(|r| json!({
            "reviewer": r.ann.reviewer,
            "category": r.ann.category,
            "at": r.ann.at,
            "holds": r.current,
            "resolves": r.resolves,
        })),
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
        // The warnings, named from the index, where the summary's fields
        // put them: after the repetitions.
        let warnings: Vec<_> = summary.input_warnings.named(index).collect();
        let at = m
            .keys()
            .position(|k| k == "repetition")
            .map_or(m.len(), |i| i + 1);
        m.shift_insert(at, "input_warnings".into(), json!(warnings));
        m.insert("format".into(), json!(index.format_name()));
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
        ProblemKind::Inconsistent => "inconsistent-case",
    }
}

fn all_rows(index: &RunIndex) -> Vec<u32> {
    (0..index.rows.len())
        .filter_map(|i| u32::try_from(i).ok())
        .collect()
}

/// Write `v` pretty-printed with every line indented by `indent` spaces after the first.
fn write_indented(out: &mut dyn Write, v: &Value, indent: &str) -> io::Result<()> {
    let s = json::to_string_pretty(v)?;
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
    // Past the first problems of each kind, only their count per kind.
    let unlisted: serde_json::Map<String, Value> = index
        .unlisted
        .iter()
        .map(|(k, n)| (problem_kind_name(k).to_string(), json!(n)))
        .collect();
    out.write_all(b",\n  \"problems_not_listed\": ")?;
    write_indented(out, &Value::Object(unlisted), "  ")?;
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
            "category": p.ann.and_then(|a| a.category),
            "note": p.ann.and_then(|a| a.note.clone()),
        },
    })
}

fn write_fixtures(input: &ExportInput, rows: &[u32], out: &mut dyn Write) -> io::Result<()> {
    for &i in rows {
        let p = load(input, i)?;
        json::to_writer(&mut *out, &fixture_json(&p))?;
        out.write_all(b"\n")?;
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
            json::to_writer_pretty(&mut *out, &summary_json(index, rows, &s))?;
            out.write_all(b"\n")
        }
        SummaryFormat::Markdown => {
            writeln!(
                out,
                "## Summary: {} ({})\n",
                md(&index.display_name()),
                index.format_name()
            )?;
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

/// The widest the group-name column of a text table gets.
const NAME_W: usize = 20;

/// The width a text table and its notes keep within.
const TEXT_W: usize = 98;

fn text_summary(
    index: &RunIndex,
    rows: &[u32],
    s: &Summary,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(
        out,
        "{} ({}): {}, {}, {} classified, {}",
        text::inert_line(&index.display_name()),
        index.format_name(),
        plural(s.pairs, "pair", "pairs"),
        plural(s.failures, "failure", "failures"),
        s.classified,
        plural(s.problems, "unreadable line", "unreadable lines"),
    )?;
    // Each table's first column is headed by what the groups are.
    for t in table::TABLES {
        writeln!(out)?;
        text_table(out, s, &t)?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "Rates: k/n, the observed rate and its Wilson 95% interval; — when there is nothing to count."
    )?;
    writeln!(out)?;
    for sentence in stats::conclusion(index, rows, s) {
        for (i, l) in wrap(&sentence, TEXT_W).iter().enumerate() {
            writeln!(out, "{}{l}", if i == 0 { "- " } else { "  " })?;
        }
    }
    Ok(())
}

/// One table of the text summary: its title, a row per group and one for
/// every pair, and its note. Each column is as wide as its widest cell; the
/// name column gives back what the others take, down to 10.
fn text_table(out: &mut dyn Write, s: &Summary, t: &table::Table) -> io::Result<()> {
    let body: Vec<(String, Vec<String>)> = table::rows(s)
        .map(|g| {
            (
                text::inert_line(&g.name),
                t.columns.iter().map(|c| (c.cell)(g)).collect(),
            )
        })
        .collect();
    let widths = table::widths(t, body.iter().map(|(_, cells)| cells));
    let rest: usize = widths.iter().map(|w| w + 2).sum();
    let longest = body
        .iter()
        .map(|(name, _)| text::width(name))
        .chain([text::width(s.by.name())])
        .max()
        .unwrap_or(0);
    let name_w = longest.min(NAME_W).min(TEXT_W.saturating_sub(rest)).max(10);
    let line = |name: &str, cells: &[&str]| {
        let mut l = fit(name, name_w);
        for ((c, w), cell) in t.columns.iter().zip(&widths).zip(cells) {
            l.push_str("  ");
            if c.rate {
                l.push_str(&fit(cell, *w));
            } else {
                l.push_str(&" ".repeat(w.saturating_sub(text::width(cell))));
                l.push_str(cell);
            }
        }
        l.trim_end().to_string()
    };
    writeln!(out, "{}", t.title)?;
    let heads: Vec<&str> = t.columns.iter().map(|c| c.head).collect();
    writeln!(out, "{}", line(s.by.name(), &heads))?;
    for (name, cells) in &body {
        let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
        writeln!(out, "{}", line(name, &cells))?;
    }
    for l in wrap(t.note, TEXT_W) {
        writeln!(out, "  {l}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
