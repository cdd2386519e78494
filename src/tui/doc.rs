//! The detail document of one pair, built once per selection.
//!
//! [`build`] turns a loaded pair into styled lines for each detail mode —
//! unified, side by side, raw — wrapped to the pane's width (each mode laid
//! out on first use), and records the line of every change so `]`/`[` can
//! jump between them. Rendering then only
//! slices the visible lines. Every string from the run goes through
//! [`inert_spans`], so nothing in a file can reach the terminal as control.

use std::sync::{Arc, OnceLock};

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::core::derive::{Derived, Status, Validity, fmt3};
use crate::core::diff::{Change, WordKind, word_diff};
use crate::core::index::LoadedPair;
use crate::core::model::{PairRecord, Policy, Side, fmt_num};
use crate::core::text;

use super::style::{Theme, inert_spans};

mod answers;

/// How the detail pane shows the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetailMode {
    Unified,
    SideBySide,
    Raw,
}

/// The lines of one mode, and the lines where its changes start.
#[derive(Debug, Clone, Default)]
struct Built {
    lines: Vec<Line<'static>>,
    anchors: Vec<usize>,
}

/// Styled lines for each detail mode, with the lines where changes start.
///
/// Each mode is laid out the first time it is asked for: moving to the next
/// pair lays out only the mode on screen, and a mode never shown costs
/// nothing.
#[derive(Debug, Clone)]
pub struct DetailDoc {
    pair: Arc<Result<LoadedPair, String>>,
    /// The baseline's version of the pair (`--baseline`), drawn on the decision strip.
    old: Option<Arc<Result<LoadedPair, String>>>,
    width: usize,
    theme: Theme,
    unified: OnceLock<Built>,
    side: OnceLock<Built>,
    raw: OnceLock<Built>,
}

impl DetailDoc {
    fn built(&self, mode: DetailMode) -> &Built {
        let (cell, f): (&OnceLock<Built>, fn(&mut Builder, &LoadedPair)) = match mode {
            DetailMode::Unified => (&self.unified, |b, p| {
                unified(b, &p.record, &p.derived, &p.raw)
            }),
            DetailMode::SideBySide => (&self.side, |b, p| side_by_side(b, &p.record, &p.derived)),
            DetailMode::Raw => (&self.raw, |b, p| raw(b, &p.raw)),
        };
        cell.get_or_init(|| match &*self.pair {
            Err(msg) => Built {
                lines: wrap(
                    inert_spans(msg, self.theme.error, &self.theme),
                    self.width,
                    0,
                ),
                anchors: Vec::new(),
            },
            Ok(p) => {
                let mut b = Builder::new(self.width, &self.theme);
                b.old = self.old.as_deref().and_then(|o| o.as_ref().ok());
                f(&mut b, p);
                Built {
                    lines: b.lines,
                    anchors: if mode == DetailMode::Raw {
                        Vec::new()
                    } else {
                        b.anchors
                    },
                }
            }
        })
    }

    /// The lines of a mode (laid out on first use).
    pub fn lines(&self, mode: DetailMode) -> &[Line<'static>] {
        &self.built(mode).lines
    }

    /// How many lines a mode has.
    pub fn len(&self, mode: DetailMode) -> usize {
        self.lines(mode).len()
    }

    /// Whether the document is empty in every mode.
    pub fn is_empty(&self) -> bool {
        [DetailMode::Unified, DetailMode::SideBySide, DetailMode::Raw]
            .into_iter()
            .all(|m| self.lines(m).is_empty())
    }

    /// The lines where changes start, in a mode.
    pub fn anchors(&self, mode: DetailMode) -> &[usize] {
        &self.built(mode).anchors
    }

    /// Whether a mode has been laid out yet.
    pub fn is_built(&self, mode: DetailMode) -> bool {
        match mode {
            DetailMode::Unified => self.unified.get().is_some(),
            DetailMode::SideBySide => self.side.get().is_some(),
            DetailMode::Raw => self.raw.get().is_some(),
        }
    }
}

/// The document of a pair for a pane `width` columns wide; each mode is laid
/// out when first shown.
pub fn build(pair: Arc<Result<LoadedPair, String>>, width: u16, theme: &Theme) -> DetailDoc {
    build_compared(pair, None, width, theme)
}

/// [`build`], with the baseline's version of the pair: the decision strip
/// shows both answers of each side, the baseline's as a hollow dot.
pub fn build_compared(
    pair: Arc<Result<LoadedPair, String>>,
    old: Option<Arc<Result<LoadedPair, String>>>,
    width: u16,
    theme: &Theme,
) -> DetailDoc {
    DetailDoc {
        pair,
        old,
        width: (width as usize).max(20),
        theme: theme.clone(),
        unified: OnceLock::new(),
        side: OnceLock::new(),
        raw: OnceLock::new(),
    }
}

struct Builder<'t> {
    lines: Vec<Line<'static>>,
    anchors: Vec<usize>,
    width: usize,
    t: &'t Theme,
    /// The baseline's version of the pair, when comparing.
    old: Option<&'t LoadedPair>,
}

impl<'t> Builder<'t> {
    fn new(width: usize, t: &'t Theme) -> Self {
        Builder {
            lines: Vec::new(),
            anchors: Vec::new(),
            width,
            t,
            old: None,
        }
    }

    fn push(&mut self, spans: Vec<Span<'static>>) {
        self.lines.extend(wrap(spans, self.width, 2));
    }

    fn push_indent(&mut self, spans: Vec<Span<'static>>, indent: usize) {
        self.lines.extend(wrap(spans, self.width, indent));
    }

    fn blank(&mut self) {
        self.lines.push(Line::default());
    }

    fn heading(&mut self, title: &str) {
        if !self.lines.is_empty() {
            self.blank();
        }
        let rule = "─".repeat(self.width.saturating_sub(title.chars().count() + 4).min(60));
        self.lines.push(Line::from(vec![
            Span::styled(format!("── {title} "), self.t.heading),
            Span::styled(rule, self.t.border),
        ]));
    }

    fn anchor(&mut self) {
        self.anchors.push(self.lines.len());
    }
}

fn s(text: impl Into<String>, style: Style) -> Span<'static> {
    Span::styled(text.into(), style)
}

fn not_recorded(t: &Theme) -> Span<'static> {
    s("not recorded", t.dim)
}

/// Wrap styled text at spaces to `width` columns; continuation lines start
/// with `indent` spaces and drop the spaces at the break. A word longer than
/// a line is split where it must be. Styles (escapes included) are kept.
pub fn wrap(spans: Vec<Span<'static>>, width: usize, indent: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let indent = if indent + 8 > width { 0 } else { indent };
    // Runs of spaces and of non-spaces, each a list of styled pieces.
    let mut tokens: Vec<(bool, Vec<Span<'static>>)> = Vec::new();
    for span in spans {
        for ch in span.content.chars() {
            let space = ch == ' ';
            match tokens.last_mut() {
                Some((sp, pieces)) if *sp == space => match pieces.last_mut() {
                    Some(p) if p.style == span.style => p.content.to_mut().push(ch),
                    _ => pieces.push(Span::styled(ch.to_string(), span.style)),
                },
                _ => tokens.push((space, vec![Span::styled(ch.to_string(), span.style)])),
            }
        }
    }
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    let mut col = 0;
    // Whether the current line holds nothing but its indent.
    let mut fresh = true;
    let mut wrapped = false;
    let break_line = |out: &mut Vec<Line<'static>>, cur: &mut Vec<Span<'static>>| {
        out.push(Line::from(std::mem::take(cur)));
        if indent > 0 {
            cur.push(Span::raw(" ".repeat(indent)));
        }
    };
    for (space, pieces) in tokens {
        let w: usize = pieces.iter().map(|p| text::width(&p.content)).sum();
        if space {
            if fresh && wrapped {
                continue;
            }
            if col + w > width {
                break_line(&mut out, &mut cur);
                (col, fresh, wrapped) = (indent, true, true);
                continue;
            }
            cur.extend(pieces);
            col += w;
            continue;
        }
        if col + w > width && !fresh {
            break_line(&mut out, &mut cur);
            (col, fresh, wrapped) = (indent, true, true);
        }
        if col + w <= width {
            cur.extend(pieces);
            col += w;
            fresh = false;
            continue;
        }
        // Longer than a whole line: split it.
        for p in pieces {
            let mut buf = String::new();
            for ch in p.content.chars() {
                let cw = text::width(ch.encode_utf8(&mut [0u8; 4]));
                if col + cw > width && !fresh {
                    if !buf.is_empty() {
                        cur.push(Span::styled(std::mem::take(&mut buf), p.style));
                    }
                    break_line(&mut out, &mut cur);
                    (col, wrapped) = (indent, true);
                }
                buf.push(ch);
                col += cw;
                fresh = false;
            }
            if !buf.is_empty() {
                cur.push(Span::styled(buf, p.style));
            }
        }
    }
    out.push(Line::from(cur));
    out
}

fn unified(b: &mut Builder, r: &PairRecord, d: &Derived, raw: &Value) {
    let t = b.t;
    // Header.
    let mut head = inert_spans(&cap(&r.case_id, VALUE_CAP), t.title, t);
    head.push(s(" / ", t.dim));
    head.extend(inert_spans(&r.variant_id, t.title, t));
    head.push(s("  ", t.base));
    head.push(status_span(d.status, t));
    b.push(head);
    if let Some(l) = &r.label {
        b.push(inert_spans(&cap(l, VALUE_CAP), t.base, t));
    }
    // A record without payloads has its names inferred from the variant id.
    let from = if d.validity == Validity::NotRecorded {
        " (inferred from the variant id)"
    } else {
        " (inferred from the diff)"
    };
    let mut fam = vec![s("family ", t.dim)];
    match crate::core::derive::family_of(r, &d.transformation) {
        Some((f, inferred)) => {
            fam.extend(inert_spans(f, t.base, t));
            if inferred {
                fam.push(s(from, t.dim));
            }
        }
        None => fam.push(not_recorded(t)),
    }
    fam.push(s(" · transformation ", t.dim));
    fam.extend(inert_spans(&d.transformation.name, t.base, t));
    if d.transformation.inferred {
        fam.push(s(from, t.dim));
    }
    b.push(fam);
    let mut ver = Vec::new();
    for (name, v) in [
        ("contract", &r.contract_version),
        ("schema", &r.state_schema_version),
        ("dataset", &r.dataset_version),
        ("model", &r.model_id),
        ("settings", &r.settings_id),
    ] {
        if !ver.is_empty() {
            ver.push(s(" · ", t.dim));
        }
        ver.push(s(format!("{name} "), t.dim));
        match v {
            Some(v) => ver.extend(inert_spans(v, t.base, t)),
            None => ver.push(not_recorded(t)),
        }
    }
    if let Some(rep) = r.repetition {
        ver.push(s(format!(" · repetition {rep}"), t.dim));
    }
    b.push(ver);
    b.push(when_line(r, t));
    case_metadata(b, r);
    if is_unpaired(r) {
        unpaired(b, r, d);
        return;
    }

    // Decision strip.
    b.heading("Decision");
    decision(b, r, d);
    // Another tool's answers, target and scores.
    answers::answers(b, raw);

    // Expectation.
    b.heading("Expectation");
    match &r.expectation {
        Some(e) => b.push(inert_spans(&e.describe(), t.base, t)),
        None => b.push(vec![s("expectation ", t.dim), not_recorded(t)]),
    }
    if let Some(min) = r.minimum_boundary_margin {
        b.push(vec![s(
            format!("minimum boundary margin {}", fmt_num(min)),
            t.dim,
        )]);
    }
    verdict_block(b, r, d);

    // What changed.
    b.heading("What changed");
    validity_line(b, r, d);
    question_diff(b, r);
    state_diff(b, r, d);

    // Requests.
    b.heading("Requests");
    for (name, side) in [("source ", &r.source), ("variant", &r.variant)] {
        request_line(b, name, side);
    }
    other_fields(b, r);
}

/// The record's time (`timestamp`), or that it is not recorded.
fn when_line(r: &PairRecord, t: &Theme) -> Vec<Span<'static>> {
    let mut l = vec![s("time ", t.dim)];
    match &r.timestamp {
        Some(ts) => l.extend(inert_spans(ts, t.base, t)),
        None => l.push(not_recorded(t)),
    }
    l
}

/// The source case's metadata, where recorded: its human label, when a
/// person reviewed it, and its notes (seed 000, section 4).
fn case_metadata(b: &mut Builder, r: &PairRecord) {
    let t = b.t;
    let mut l = Vec::new();
    if let Some(gold) = r.gold_urgent {
        l.push(s(
            format!("gold label {}", if gold { "urgent" } else { "not urgent" }),
            t.base,
        ));
    }
    if let Some(at) = &r.human_reviewed_at {
        if !l.is_empty() {
            l.push(s(" · ", t.dim));
        }
        l.push(s("reviewed ", t.dim));
        l.extend(inert_spans(at, t.base, t));
    }
    if !l.is_empty() {
        b.push(l);
    }
    if let Some(n) = &r.notes {
        let mut l = vec![s("notes ", t.dim)];
        l.extend(inert_spans(&cap(n, VALUE_CAP), t.base, t));
        b.push(l);
    }
}

/// The recorded verdict and why: the derived reason, failed checks, the
/// runner's reasons and the derivation's warnings.
fn verdict_block(b: &mut Builder, r: &PairRecord, d: &Derived) {
    let t = b.t;
    let why_style = match d.status {
        Status::Pass => t.pass,
        Status::Boundary => t.boundary,
        _ => t.fail,
    };
    let mark = if d.status == Status::Pass {
        "✓ "
    } else {
        "✗ "
    };
    let mut why = vec![s(mark, why_style)];
    why.extend(inert_spans(&d.why, why_style, t));
    b.push(why);
    for f in d.further_checks() {
        let mut l = vec![s("  • ", t.fail)];
        l.extend(inert_spans(f, t.base, t));
        b.push_indent(l, 4);
    }
    if !r.reasons.is_empty() {
        b.push(vec![s("recorded reasons", t.dim)]);
        for reason in &r.reasons {
            let mut l = vec![s("  • ", t.dim)];
            l.extend(inert_spans(reason, t.base, t));
            b.push_indent(l, 4);
        }
    } else if r.passed == Some(false) {
        b.push(vec![s("recorded reasons: none given", t.dim)]);
    }
    match r.passed {
        Some(p) => b.push(vec![s(
            format!("recorded verdict: {}", if p { "passed" } else { "failed" }),
            t.dim,
        )]),
        None => b.push(vec![s("recorded verdict: ", t.dim), not_recorded(t)]),
    }
    for w in &d.warnings {
        let mut l = vec![s("⚠ ", t.warn)];
        l.extend(inert_spans(w, t.warn, t));
        b.push_indent(l, 2);
    }
}

/// One side's request: outcome, latency and error.
fn request_line(b: &mut Builder, name: &str, side: &Side) {
    let t = b.t;
    let mut l = vec![s(format!("{name}  "), t.dim)];
    match side.effective_outcome() {
        Some(o) => {
            let st = if o.is_ok() { t.pass } else { t.error };
            l.push(s("outcome ", t.dim));
            l.extend(inert_spans(o.name(), st, t));
        }
        None => {
            l.push(s("outcome ", t.dim));
            l.push(not_recorded(t));
        }
    }
    l.push(s(" · latency ", t.dim));
    match side.latency_ms {
        Some(ms) => l.push(s(format!("{} ms", fmt_num(ms)), t.base)),
        None => l.push(not_recorded(t)),
    }
    if let Some(e) = &side.error {
        l.push(s(" · error ", t.dim));
        l.extend(inert_spans(e, t.error, t));
    }
    b.push(l);
}

/// Fields of the record that have no place above.
fn other_fields(b: &mut Builder, r: &PairRecord) {
    let t = b.t;
    if !r.extra.is_empty() {
        b.heading("Other fields");
        for (k, v) in &r.extra {
            let mut l = inert_spans(k, t.title, t);
            l.push(s(": ", t.dim));
            if k == "origin" && r.extra.contains_key("format") {
                // Another tool's own row(s): too long to be read here.
                l.push(s("the row(s) the tool wrote, in the raw view (r)", t.dim));
                b.push_indent(l, 4);
                continue;
            }
            l.extend(inert_spans(
                &text::truncate_cols(&v.to_string(), 400),
                t.base,
                t,
            ));
            b.push_indent(l, 4);
        }
        b.push(vec![s("the raw view (r) shows the whole record", t.dim)]);
    }
}

/// A result row of another tool with no variant relation: its source side
/// holds the expected answer and its variant side the actual output (see
/// `docs/formats.md`).
fn is_unpaired(r: &PairRecord) -> bool {
    r.transformation.as_deref() == Some(crate::core::formats::UNPAIRED)
}

/// The answer a side of an unpaired row holds, as text.
fn answer(side: &Side) -> Option<String> {
    match side.state.as_ref()?.get("answer")? {
        Value::Null => None,
        v => Some(crate::core::formats::as_text(v)),
    }
}

/// The detail of an unpaired row: its verdict, input, expected answer and
/// output, and a word diff of expected against actual in place of a pair diff.
fn unpaired(b: &mut Builder, r: &PairRecord, d: &Derived) {
    let t = b.t;
    b.heading("Result");
    b.push(vec![s(
        "a single result with no variant: the diff compares the expected answer with the output",
        t.dim,
    )]);
    verdict_block(b, r, d);

    b.heading("Input");
    match r.variant.question.as_ref().or(r.source.question.as_ref()) {
        Some(q) => {
            for line in cap(q, VALUE_CAP).lines() {
                b.push_indent(inert_spans(line, t.base, t), 2);
            }
        }
        None => b.push(vec![s("input ", t.dim), not_recorded(t)]),
    }

    b.heading("Expected vs actual");
    let expected = answer(&r.source);
    let actual = answer(&r.variant);
    for (name, v) in [("expected ", &expected), ("actual   ", &actual)] {
        let mut l = vec![s(name, t.dim)];
        match v {
            Some(v) => l.extend(inert_spans(&cap(v, VALUE_CAP), t.base, t)),
            None => l.push(not_recorded(t)),
        }
        b.push_indent(l, 9);
    }
    match (&expected, &actual) {
        (Some(e), Some(a)) if e.trim() == a.trim() => {
            b.push(vec![s("the output matches the expected answer", t.pass)]);
        }
        (Some(e), Some(a)) => {
            b.anchor();
            let mut l = vec![s("diff     ", t.changed)];
            l.extend(word_spans(e, a, t));
            b.push_indent(l, 9);
        }
        _ => {}
    }

    b.heading("Request");
    request_line(b, "output", &r.variant);
    other_fields(b, r);
}

fn status_span(st: Status, t: &Theme) -> Span<'static> {
    match st {
        Status::Fail => s("FAIL", t.fail),
        Status::Boundary => s("BOUNDARY", t.boundary),
        Status::Pass => s("PASS", t.pass),
        Status::Invalid => s("INVALID PAIR", t.invalid),
        Status::ServiceError => s("SERVICE ERROR", t.error),
        Status::Unchecked => s("UNCHECKED", t.dim),
    }
}

fn decision(b: &mut Builder, r: &PairRecord, d: &Derived) {
    let t = b.t;
    // The text after the bar takes about 56 columns; narrow panes drop the bar.
    let bar_w = b.width.saturating_sub(56).min(60);
    let policy = r.policy.filter(|_| bar_w >= 10);
    let old = b.old;
    if let Some(o) = old {
        b.push(vec![
            s("● this run  ", t.title),
            s("○ baseline", t.dim),
            s(
                format!(
                    "  ({} then, {} now)",
                    o.derived.status.name(),
                    d.status.name()
                ),
                t.dim,
            ),
        ]);
    }
    if let Some(pol) = policy {
        b.lines.push(axis_line(pol, bar_w, t));
    } else if let Some(pol) = r.policy {
        b.push(vec![
            s("policy ", t.dim),
            s(
                format!(
                    "review ≥ {} · action ≥ {}",
                    fmt_num(pol.review_threshold),
                    fmt_num(pol.action_threshold)
                ),
                t.base,
            ),
        ]);
    } else {
        b.push(vec![
            s("policy ", t.dim),
            not_recorded(t),
            s(" (routes as the runner recorded them)", t.dim),
        ]);
    }
    for (name, side, route, margin, marker, was) in [
        (
            "source ",
            &r.source,
            d.source_route,
            d.source_margin,
            t.marker_source,
            old.map(|o| (&o.record.source, o.derived.source_route)),
        ),
        (
            "variant",
            &r.variant,
            d.variant_route,
            d.variant_margin,
            t.marker_variant,
            old.map(|o| (&o.record.variant, o.derived.variant_route)),
        ),
    ] {
        let mut l = vec![s(format!("{name} "), t.dim)];
        // Another tool's decision stands where no probability or route was recorded.
        if let (None, None, Some(dec)) = (side.probability, route, &side.decision) {
            l.push(s("decision ", t.dim));
            l.extend(inert_spans(&cap(dec, VALUE_CAP), t.base, t));
            b.lines.push(Line::from(l));
            continue;
        }
        if let Some(pol) = policy {
            let before = was.and_then(|(w, _)| w.probability);
            l.extend(bar(pol, side.probability, before, bar_w, marker, t));
            l.push(s(" ", t.base));
        }
        l.extend(side_numbers(side, t));
        l.push(s("  → ", t.dim));
        match route {
            Some(rt) => l.push(s(format!("{:<6}", rt.name()), t.route(rt))),
            None => l.push(not_recorded(t)),
        }
        if let Some((w, was_route)) = was {
            let p = w.probability.map_or("—".to_string(), |p| format!("{p:.3}"));
            let rt = was_route.map_or("—", |r| r.name());
            let same = w.probability == side.probability && was_route == route;
            l.push(s(
                format!("  was p {p} → {rt}"),
                if same { t.dim } else { t.changed },
            ));
        }
        if let Some(m) = margin {
            let near = r
                .minimum_boundary_margin
                .is_some_and(|min| crate::core::derive::under_margin(m, min));
            l.push(s(
                format!("  margin {}", fmt3(m)),
                if near && name == "source " {
                    t.warn
                } else {
                    t.dim
                },
            ));
            if near && name == "source " {
                l.push(s(
                    format!(" < {}", fmt_num(r.minimum_boundary_margin.unwrap_or(0.0))),
                    t.warn,
                ));
            }
        }
        b.lines.push(Line::from(l));
    }
    if let (None, None, Some(a), Some(v)) = (
        d.source_route,
        d.variant_route,
        &r.source.decision,
        &r.variant.decision,
    ) {
        let mut l = vec![s("decision ", t.dim)];
        l.extend(inert_spans(&cap(a, VALUE_CAP), t.base, t));
        l.push(s(" → ", t.dim));
        l.extend(inert_spans(&cap(v, VALUE_CAP), t.base, t));
        l.push(if a == v {
            s("  same", t.dim)
        } else {
            s("  CHANGED", t.fail)
        });
        b.lines.push(Line::from(l));
        return;
    }
    let mut l = vec![s("Δp ", t.dim)];
    l.push(match d.dp {
        Some(x) => s(signed(x), if x.abs() >= 0.1 { t.changed } else { t.base }),
        None => not_recorded(t),
    });
    l.push(s("   Δc ", t.dim));
    l.push(match d.dc {
        Some(x) => s(signed(x), t.base),
        None => not_recorded(t),
    });
    l.push(s("   route ", t.dim));
    match (d.source_route, d.variant_route) {
        (Some(a), Some(v)) => {
            l.push(s(a.name(), t.route(a)));
            l.push(s(" → ", t.dim));
            l.push(s(v.name(), t.route(v)));
            if a != v {
                l.push(s("  FLIP", t.fail));
            } else {
                l.push(s("  same", t.dim));
            }
        }
        _ => l.push(not_recorded(t)),
    }
    b.lines.push(Line::from(l));
}

fn signed(x: f64) -> String {
    if x < 0.0 {
        format!("−{:.3}", -x)
    } else {
        format!("+{x:.3}")
    }
}

fn side_numbers(side: &Side, t: &Theme) -> Vec<Span<'static>> {
    let mut l = vec![s("p ", t.dim)];
    l.push(match side.probability {
        Some(p) => s(format!("{p:.3}"), t.title),
        None => s("  —  ", t.dim),
    });
    l.push(s(" c ", t.dim));
    l.push(match side.confidence {
        Some(c) => s(format!("{c:.2}"), t.base),
        None => s(" — ", t.dim),
    });
    l
}

fn col_of(p: f64, w: usize) -> usize {
    ((p.clamp(0.0, 1.0) * (w - 1) as f64).round() as usize).min(w - 1)
}

fn axis_line(pol: Policy, w: usize, t: &Theme) -> Line<'static> {
    let mut cells = vec![' '; w + 2];
    let mut put = |at: usize, label: &str| {
        for (i, ch) in label.chars().enumerate() {
            if let Some(c) = cells.get_mut(at + i) {
                *c = ch;
            }
        }
    };
    put(0, "0");
    let rl = fmt_num(pol.review_threshold);
    let al = fmt_num(pol.action_threshold);
    let rc = col_of(pol.review_threshold, w);
    let ac = col_of(pol.action_threshold, w);
    put(rc.saturating_sub(rl.len() / 2), &rl);
    // Keep the action label clear of the review label.
    let a_at = ac
        .saturating_sub(al.len() / 2)
        .max(rc.saturating_sub(rl.len() / 2) + rl.len() + 1);
    put(a_at, &al);
    if a_at + al.len() + 1 < w {
        put(w - 1, "1");
    }
    let text: String = cells.into_iter().collect();
    Line::from(vec![
        s("         ", t.dim),
        s(text.trim_end().to_string(), t.dim),
    ])
}

/// The policy axis with the answer's dot, and the baseline's answer as a
/// hollow dot (hidden under the answer's when they coincide).
fn bar(
    pol: Policy,
    p: Option<f64>,
    before: Option<f64>,
    w: usize,
    marker: Style,
    t: &Theme,
) -> Vec<Span<'static>> {
    let rc = col_of(pol.review_threshold, w);
    let ac = col_of(pol.action_threshold, w);
    let pc = p.map(|p| col_of(p, w));
    let bc = before.map(|p| col_of(p, w));
    let mut spans = Vec::new();
    for i in 0..w {
        let (ch, st) = if Some(i) == pc {
            ("●", marker)
        } else if Some(i) == bc {
            ("○", t.dim)
        } else if i == rc || i == ac {
            ("┃", t.threshold)
        } else if i > ac {
            ("━", t.route_action.patch(t.dim))
        } else if i > rc {
            ("━", t.route_review.patch(t.dim))
        } else {
            ("━", t.route_pass.patch(t.dim))
        };
        spans.push(s(ch, st));
    }
    merge(spans)
}

fn merge(spans: Vec<Span<'static>>) -> Vec<Span<'static>> {
    let mut out: Vec<Span<'static>> = Vec::new();
    for sp in spans {
        match out.last_mut() {
            Some(last) if last.style == sp.style => {
                let mut c = last.content.to_string();
                c.push_str(&sp.content);
                last.content = c.into();
            }
            _ => out.push(sp),
        }
    }
    out
}

fn validity_line(b: &mut Builder, r: &PairRecord, d: &Derived) {
    let t = b.t;
    let c = &d.changes;
    let mut l = vec![s("validity ", t.dim)];
    match &d.validity {
        Validity::Valid => {
            l.push(s("valid", t.pass));
            if c.permitted.is_empty() {
                l.push(s(" — nothing but order changed", t.dim));
            } else {
                l.push(s(" — changed only what it declared: ", t.dim));
                l.extend(inert_spans(&c.permitted.join(", "), t.base, t));
            }
        }
        Validity::Invalid { unexpected } if unexpected.is_empty() => {
            l.push(s("INVALID", t.invalid));
            l.push(s(
                " — its validator recorded it as invalid (validation_status invalid)",
                t.dim,
            ));
        }
        Validity::Invalid { unexpected } => {
            l.push(s("INVALID", t.invalid));
            l.push(s(" — undeclared changes: ", t.dim));
            l.extend(inert_spans(&unexpected.join(", "), t.invalid, t));
            if !c.permitted.is_empty() {
                l.push(s("; declared: ", t.dim));
                l.extend(inert_spans(&c.permitted.join(", "), t.base, t));
            }
        }
        Validity::Undeclared => {
            l.push(s("undeclared", t.warn));
            l.push(s(
                " — the pair lists no allowed_changes, so it cannot be judged",
                t.dim,
            ));
        }
        Validity::NotRecorded => {
            l.push(s("not recorded", t.dim));
            l.push(s(" — the file has no question or state payloads", t.dim));
        }
        Validity::Unknown => {
            l.push(s("unknown", t.warn));
            l.push(s(
                " — its validator could not decide (validation_status unknown); not counted as valid",
                t.dim,
            ));
        }
    }
    b.push(l);
    if let Some(a) = &r.allowed_changes {
        let mut l = vec![s("declared ", t.dim)];
        if a.is_empty() {
            l.push(s("nothing (an exact-copy pair)", t.dim));
        } else {
            l.extend(inert_spans(&a.join(", "), t.base, t));
        }
        b.push(l);
    }
}

fn question_diff(b: &mut Builder, r: &PairRecord) {
    let t = b.t;
    match (&r.source.question, &r.variant.question) {
        (Some(a), Some(v)) if a == v => {
            let mut l = vec![s("question ", t.dim), s("unchanged: ", t.dim)];
            l.extend(inert_spans(&cap(a, VALUE_CAP), t.base, t));
            b.push_indent(l, 2);
        }
        (Some(a), Some(v)) => {
            b.anchor();
            let mut l = vec![s("question ", t.changed)];
            l.extend(word_spans(a, v, t));
            b.push_indent(l, 2);
        }
        (None, None) => b.push(vec![s("question ", t.dim), not_recorded(t)]),
        (a, v) => {
            b.anchor();
            let mut l = vec![s("question ", t.changed)];
            match a {
                Some(a) => l.extend(inert_spans(a, t.removed, t)),
                None => l.push(s("(none in source) ", t.dim)),
            }
            match v {
                Some(v) => l.extend(inert_spans(v, t.added, t)),
                None => l.push(s(" (none in variant)", t.dim)),
            }
            b.push_indent(l, 2);
        }
    }
}

/// An inline word diff as spans: removed words struck through, added ones
/// marked, and a space between a removal and the addition that replaces it
/// so the two never read as one word.
fn word_spans(a: &str, b: &str, t: &Theme) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    if a.len() + b.len() > 2 * VALUE_CAP {
        // Too long to diff word by word on screen: before and after, cut.
        out.extend(inert_spans(&cap(a, VALUE_CAP / 2), t.removed, t));
        out.push(s(" → ", t.dim));
        out.extend(inert_spans(&cap(b, VALUE_CAP / 2), t.added, t));
        return out;
    }
    let mut prev = WordKind::Same;
    for seg in word_diff(a, b) {
        let st = match seg.kind {
            WordKind::Same => t.base,
            WordKind::Removed => t.removed,
            WordKind::Added => t.added,
        };
        if seg.kind == WordKind::Added && prev == WordKind::Removed {
            out.push(s(" ", t.base));
        }
        out.extend(inert_spans(&seg.text, st, t));
        prev = seg.kind;
    }
    out
}

fn compact(v: &Value) -> String {
    match v {
        Value::String(x) => serde_json::to_string(x).unwrap_or_default(),
        other => other.to_string(),
    }
}

fn state_diff(b: &mut Builder, r: &PairRecord, d: &Derived) {
    let t = b.t;
    if r.source.state.is_none() && r.variant.state.is_none() {
        b.push(vec![s("state ", t.dim), not_recorded(t)]);
        return;
    }
    if d.changes.state.is_empty() {
        b.push(vec![s("state ", t.dim), s("unchanged", t.dim)]);
        return;
    }
    b.push(vec![s(
        format!(
            "state: {} {}",
            d.changes.state.len(),
            if d.changes.state.len() == 1 {
                "change"
            } else {
                "changes"
            }
        ),
        t.dim,
    )]);
    let unexpected: Vec<&str> = d.changes.unexpected.iter().map(String::as_str).collect();
    for e in &d.changes.state {
        b.anchor();
        let path = e.path.to_string();
        let flag = if unexpected.contains(&path.as_str()) {
            s(" undeclared", t.invalid)
        } else {
            s("", t.dim)
        };
        let max_val = 600;
        match &e.change {
            Change::Added { after } => {
                let mut l = vec![s("  + ", t.added)];
                l.extend(inert_spans(&path, t.added, t));
                l.push(flag);
                l.push(s("  ", t.base));
                l.extend(inert_spans(
                    &text::truncate_cols(&compact(after), max_val),
                    t.added,
                    t,
                ));
                b.push_indent(l, 6);
            }
            Change::Removed { before } => {
                let mut l = vec![s("  - ", t.removed)];
                l.extend(inert_spans(&path, t.fail, t));
                l.push(flag);
                l.push(s("  ", t.base));
                l.extend(inert_spans(
                    &text::truncate_cols(&compact(before), max_val),
                    t.removed,
                    t,
                ));
                b.push_indent(l, 6);
            }
            Change::Changed { before, after } => {
                let mut l = vec![s("  ~ ", t.changed)];
                l.extend(inert_spans(&path, t.changed, t));
                l.push(flag);
                l.push(s("  ", t.base));
                match (before, after) {
                    (Value::String(x), Value::String(y)) if x.len() + y.len() > 60 => {
                        l.extend(word_spans(x, y, t));
                    }
                    _ => {
                        l.extend(inert_spans(
                            &text::truncate_cols(&compact(before), max_val),
                            t.removed,
                            t,
                        ));
                        l.push(s(" → ", t.dim));
                        l.extend(inert_spans(
                            &text::truncate_cols(&compact(after), max_val),
                            t.added,
                            t,
                        ));
                    }
                }
                b.push_indent(l, 6);
            }
            Change::Reordered { before, after } => {
                let mut l = vec![s("  ↕ ", t.changed)];
                l.extend(inert_spans(&path, t.changed, t));
                l.push(s("  reordered: ", t.dim));
                l.extend(inert_spans(&before.join(", "), t.base, t));
                l.push(s(" → ", t.dim));
                l.extend(inert_spans(&after.join(", "), t.base, t));
                b.push_indent(l, 6);
            }
            Change::Moved { before, after } => {
                let mut l = vec![s("  ⇅ ", t.changed)];
                l.extend(inert_spans(&path, t.changed, t));
                l.push(flag);
                l.push(s("  elements moved: ", t.dim));
                l.extend(inert_spans(&before.join(", "), t.base, t));
                l.push(s(" → ", t.dim));
                l.extend(inert_spans(&after.join(", "), t.base, t));
                b.push_indent(l, 6);
            }
        }
    }
}

fn side_payload(side: &Side) -> Value {
    let mut m = serde_json::Map::new();
    m.insert(
        "question".into(),
        side.question
            .clone()
            .map(Value::String)
            .unwrap_or(Value::Null),
    );
    m.insert("state".into(), side.state.clone().unwrap_or(Value::Null));
    Value::Object(m)
}

fn side_by_side(b: &mut Builder, r: &PairRecord, d: &Derived) {
    let t = b.t;
    let col = (b.width.saturating_sub(3)) / 2;
    if r.timestamp.is_some() {
        b.push(when_line(r, t));
    }
    if r.source.state.is_none()
        && r.source.question.is_none()
        && r.variant.state.is_none()
        && r.variant.question.is_none()
    {
        b.push(vec![s(
            "The file records no question or state payloads to compare.",
            t.dim,
        )]);
        return;
    }
    let left = serde_json::to_string_pretty(&side_payload(&r.source)).unwrap_or_default();
    let right = serde_json::to_string_pretty(&side_payload(&r.variant)).unwrap_or_default();
    // An unpaired row's sides are the expected answer and the actual output.
    let (left_name, right_name) = if is_unpaired(r) {
        ("expected", "actual")
    } else {
        ("source", "variant")
    };
    let mut head = vec![
        s(pad(left_name, col), t.heading),
        s(" │ ", t.border),
        s(right_name, t.heading),
    ];
    if d.changes.question_changed || !d.changes.state.is_empty() {
        let n = d.changes.permitted.len() + d.changes.unexpected.len();
        let noun = if n == 1 { "path" } else { "paths" };
        head.push(s(format!("   {n} {noun} changed"), t.dim));
    }
    b.lines.push(Line::from(head));
    let diff = TextDiff::from_lines(&left, &right);
    let mut in_change = false;
    for op in diff.ops() {
        let changes: Vec<_> = diff.iter_changes(op).collect();
        let dels: Vec<String> = changes
            .iter()
            .filter(|c| c.tag() == ChangeTag::Delete)
            .map(|c| c.value().trim_end_matches('\n').to_string())
            .collect();
        let ins: Vec<String> = changes
            .iter()
            .filter(|c| c.tag() == ChangeTag::Insert)
            .map(|c| c.value().trim_end_matches('\n').to_string())
            .collect();
        let eq: Vec<String> = changes
            .iter()
            .filter(|c| c.tag() == ChangeTag::Equal)
            .map(|c| c.value().trim_end_matches('\n').to_string())
            .collect();
        if !eq.is_empty() {
            in_change = false;
            for line in eq {
                b.lines.extend(rows(&line, &line, col, t.base, t.base, t));
            }
            continue;
        }
        if !in_change {
            b.anchor();
            in_change = true;
        }
        let n = dels.len().max(ins.len());
        for i in 0..n {
            let l = dels.get(i).map(String::as_str).unwrap_or("");
            let rr = ins.get(i).map(String::as_str).unwrap_or("");
            let removed = t
                .removed
                .remove_modifier(ratatui::style::Modifier::CROSSED_OUT);
            b.lines.extend(rows(l, rr, col, removed, t.added, t));
        }
    }
}

fn pad(text_: &str, w: usize) -> String {
    let cut = text::truncate_cols(text_, w);
    let n = w.saturating_sub(text::width(&cut));
    format!("{cut}{}", " ".repeat(n))
}

/// One diff row: both sides wrapped to `col` columns, as many lines as the longer needs.
fn rows(l: &str, r: &str, col: usize, ls: Style, rs: Style, t: &Theme) -> Vec<Line<'static>> {
    let left = side_cell(l, col, ls, t);
    let right = side_cell(r, col, rs, t);
    let n = left.len().max(right.len());
    (0..n)
        .map(|i| {
            let mut spans = left
                .get(i)
                .cloned()
                .unwrap_or_else(|| vec![Span::raw(" ".repeat(col))]);
            spans.push(s(" │ ", t.border));
            spans.extend(right.get(i).cloned().unwrap_or_default());
            Line::from(spans)
        })
        .collect()
}

/// A side's text wrapped to `col` columns (continuations indented like the
/// JSON line), each line padded to the full column.
fn side_cell(content: &str, col: usize, style: Style, t: &Theme) -> Vec<Vec<Span<'static>>> {
    let indent = (content.len() - content.trim_start().len() + 2).min(col / 2);
    wrap(inert_spans(&cap(content, VALUE_CAP), style, t), col, indent)
        .into_iter()
        .map(|line| {
            let mut spans = line.spans;
            let used: usize = spans.iter().map(|sp| text::width(&sp.content)).sum();
            spans.push(Span::raw(" ".repeat(col.saturating_sub(used))));
            spans
        })
        .collect()
}

fn raw(b: &mut Builder, v: &Value) {
    let t = b.t;
    let pretty = serde_json::to_string_pretty(v).unwrap_or_default();
    for line in pretty.lines() {
        let indent = line.len() - line.trim_start().len();
        b.push_indent(
            inert_spans(&cap(line, RAW_LINE_CAP), t.base, t),
            (indent + 2).min(b.width / 2),
        );
    }
}

/// The most characters of one value or line a detail view draws; beyond it
/// the text is cut with a note, so a 10 MB string cannot freeze the screen.
pub const VALUE_CAP: usize = 4_000;
/// The same for one line of the raw record.
pub const RAW_LINE_CAP: usize = 20_000;

/// `s` cut to `max` characters, saying how many more there were.
pub fn cap(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => std::borrow::Cow::Borrowed(s),
        Some((b, _)) => {
            let more = s[b..].chars().count();
            std::borrow::Cow::Owned(format!("{}… ({more} more characters)", &s[..b]))
        }
    }
}
