//! The detail pane: the pair's triage state on top, then its document.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::super::app::{App, Detail, DetailMode, Focus};
use super::super::doc::wrap;
use super::super::style::{Theme, inert_spans};

/// The triage lines above the document: category, suggestion, note.
pub fn triage_lines(app: &App, t: &Theme) -> Vec<Line<'static>> {
    match app
        .detail
        .as_ref()
        .filter(|d| app.selected_row() == Some(d.row))
    {
        Some(d) => pair_lines(app, d, t),
        None => Vec::new(),
    }
}

/// The triage lines of the pair of a detail, selected or not.
pub fn pair_lines(app: &App, d: &Detail, t: &Theme) -> Vec<Line<'static>> {
    let mut out = baseline_lines(app, d.row, t);
    let Some(row) = app.index.rows.get(d.row as usize) else {
        return out;
    };
    if !row.status().is_failure() && app.annotation(row).is_none() {
        return out;
    }
    let ann = app.annotation(row);
    let mut l = vec![Span::styled("category ", t.dim)];
    match ann.and_then(|a| a.category.as_ref()) {
        Some(cat) => {
            match app.taxonomy.by_id(cat) {
                Some(c) => {
                    l.extend(inert_spans(&c.name, t.category, t));
                    l.push(Span::styled(format!(" ({})", c.id), t.dim));
                }
                None => {
                    l.extend(inert_spans(cat, t.warn, t));
                    l.push(Span::styled(
                        " (not in the taxonomy; kept as recorded)",
                        t.warn,
                    ));
                }
            }
            if let Some(a) = ann {
                l.push(Span::styled(" · ", t.dim));
                l.extend(inert_spans(&a.reviewer, t.dim, t));
                l.push(Span::styled(format!(" {}", a.at), t.dim));
                if a.source == crate::core::annotations::AnnotationSource::Suggestion {
                    l.push(Span::styled(" · accepted suggestion", t.dim));
                }
            }
        }
        None if app.disagrees(row) && !app.hides_others(row) => l.push(Span::styled(
            "none resolved: the reviewers disagree",
            t.warn,
        )),
        None => l.push(Span::styled("unclassified", t.warn)),
    }
    out.push(Line::from(l));
    out.extend(reviewer_lines(app, row, t));
    if let Some(s) = d.suggestion.as_ref().filter(|_| !app.hides_others(row)) {
        let mut l = vec![Span::styled("suggested ", t.dim)];
        l.push(Span::styled(s.category.to_string(), t.suggestion));
        l.push(Span::styled(" — ", t.dim));
        l.extend(inert_spans(&s.reason, t.suggestion, t));
        out.push(Line::from(l));
    }
    if let Some(stale) = app.stale_annotation(row) {
        let mut l = vec![Span::styled("stale ", t.warn)];
        l.push(Span::styled(
            "an earlier version of this pair was annotated: ",
            t.dim,
        ));
        l.extend(inert_spans(
            stale.category.as_deref().unwrap_or("no category"),
            t.warn,
            t,
        ));
        if let Some(n) = &stale.note {
            l.push(Span::styled(" · note: ", t.dim));
            l.extend(inert_spans(n, t.dim, t));
        }
        out.push(Line::from(l));
    }
    if let Some(note) = ann.and_then(|a| a.note.as_ref()) {
        for (i, line) in note.lines().take(4).enumerate() {
            let mut l = vec![Span::styled(
                if i == 0 { "note ✎ " } else { "       " },
                t.category,
            )];
            l.extend(inert_spans(line, t.base, t));
            out.push(Line::from(l));
        }
        if note.lines().count() > 4 {
            out.push(Line::from(Span::styled(
                "       … (n opens the whole note)",
                t.dim,
            )));
        }
    }
    out
}

/// Who said what, when more than one reviewer decided the pair (or a
/// resolution was recorded); in blind review, a line saying the others are
/// hidden until this reviewer decides.
fn reviewer_lines(app: &App, row: &crate::core::row::PairRow, t: &Theme) -> Vec<Line<'static>> {
    use crate::core::annotations::Agreement;
    let mut out = Vec::new();
    let Some(key) = app.index.current_key(&app.store, row) else {
        return out;
    };
    if app.hides_others(row) {
        let others = app.store.hidden_decisions(&key);
        out.push(Line::from(Span::styled(
            format!(
                "blind    {} · the suggestion · hidden until you decide this pair",
                match others {
                    0 => "no other decision".to_string(),
                    1 => "1 other reviewer's decision".to_string(),
                    n => format!("{n} other reviewers' decisions"),
                }
            ),
            t.dim,
        )));
        return out;
    }
    let decisions = app.store.decisions(&key);
    let resolution = app.store.resolution(&key);
    if decisions.len() < 2 && resolution.is_none() {
        return out;
    }
    let mut l = vec![Span::styled("said     ", t.dim)];
    for (i, a) in decisions.iter().enumerate() {
        if i > 0 {
            l.push(Span::styled(" · ", t.dim));
        }
        let me = a.reviewer == app.store.reviewer();
        l.extend(inert_spans(
            &a.reviewer,
            if me { t.title } else { t.base },
            t,
        ));
        l.push(Span::raw(" "));
        match &a.category {
            Some(c) => l.extend(inert_spans(c, t.category, t)),
            None => l.push(Span::styled("note only", t.dim)),
        }
        if a.note.is_some() {
            l.push(Span::styled(" ✎", t.category));
        }
    }
    out.push(Line::from(l));
    let status = match app.store.agreement(&key) {
        Some(Agreement::Disagree) => {
            let mut l = vec![Span::styled("DISAGREE ", t.fail)];
            l.push(Span::styled(
                "no resolved category yet — = then a category key resolves it",
                t.warn,
            ));
            if let Some(r) = resolution.filter(|r| !r.current) {
                l.push(Span::styled(" (the resolution by ", t.dim));
                l.extend(inert_spans(&r.ann.reviewer, t.dim, t));
                l.push(Span::styled(
                    " no longer holds: a decision changed since)",
                    t.dim,
                ));
            }
            Line::from(l)
        }
        Some(Agreement::Resolved) => {
            let r = resolution.expect("a resolved pair has a resolution");
            let mut l = vec![Span::styled("resolved ", t.pass)];
            l.extend(inert_spans(
                r.ann.category.as_deref().unwrap_or("-"),
                t.category,
                t,
            ));
            l.push(Span::styled(" by ", t.dim));
            l.extend(inert_spans(&r.ann.reviewer, t.dim, t));
            l.push(Span::styled(format!(" {}", r.ann.at), t.dim));
            Line::from(l)
        }
        Some(Agreement::Agreed) => Line::from(Span::styled(
            "agreed   every reviewer named the same category",
            t.pass,
        )),
        _ => return out,
    };
    out.push(status);
    out
}

/// With `--baseline`: the pair's change, and the baseline's decision on it
/// when this run has none (carried, or stale when the inputs changed).
fn baseline_lines(app: &App, row: u32, t: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let Some(change) = app.change_of(row) else {
        return out;
    };
    let mut l = vec![
        Span::styled("since baseline ", t.dim),
        Span::styled(change.name(), t.title),
    ];
    let was = app
        .runs()
        .and_then(|(runs, cmp)| runs.old.rows.get(cmp.old_row(row)? as usize))
        .map(|r| r.status().name());
    if let (Some(was), Some(now)) = (was, app.index.rows.get(row as usize)) {
        l.push(Span::styled(
            format!(" · {was} then, {} now", now.status().name()),
            t.dim,
        ));
    }
    if change == crate::core::compare::ChangeKind::ContentChanged {
        l.push(Span::styled(
            " · the inputs differ, so the results are not comparable",
            t.warn,
        ));
    }
    out.push(Line::from(l));
    if let Some(d) = app.baseline_decision(row) {
        let a = d.annotation();
        let mut l = vec![Span::styled(
            if d.is_stale() {
                "stale baseline decision "
            } else {
                "baseline decision "
            },
            if d.is_stale() { t.warn } else { t.dim },
        )];
        l.extend(inert_spans(
            a.category.as_deref().unwrap_or("no category"),
            if d.is_stale() { t.warn } else { t.suggestion },
            t,
        ));
        l.push(Span::styled(" · ", t.dim));
        l.extend(inert_spans(&a.reviewer, t.dim, t));
        l.push(Span::styled(" ", t.dim));
        l.extend(inert_spans(&a.at, t.dim, t));
        l.push(Span::styled(
            match (d.is_stale(), app.index.rows.get(row as usize)) {
                (true, _) => " · made on other inputs: never carried",
                (false, Some(r)) if r.status().is_failure() => " · B carries it here",
                _ => " · the pair passes now: not carried",
            },
            t.dim,
        ));
        out.push(Line::from(l));
        if let Some(n) = a.note.as_deref().and_then(|n| n.lines().next()) {
            let mut l = vec![Span::styled("  its note ", t.dim)];
            l.extend(inert_spans(n, t.dim, t));
            out.push(Line::from(l));
        }
    }
    out
}

/// A case header's summary: its pairs with status, route and drift.
fn case_lines(
    app: &App,
    case: crate::core::row::Sym,
    rows: &[u32],
    width: usize,
    t: &Theme,
) -> Vec<Line<'static>> {
    let idx = &app.index;
    let failures = rows
        .iter()
        .filter(|&&r| idx.rows[r as usize].status().is_failure())
        .count();
    let classified = rows
        .iter()
        .filter(|&&r| {
            let row = &idx.rows[r as usize];
            row.status().is_failure() && app.is_classified(row)
        })
        .count();
    let mut out = Vec::new();
    let mut head = inert_spans(idx.str(case), t.title, t);
    head.push(Span::styled(
        format!(
            "  {} pairs in view · {failures} failing · {classified} classified",
            rows.len()
        ),
        t.dim,
    ));
    out.extend(wrap(head, width, 2));
    out.push(Line::from(Span::styled(
        "a category key or y classifies every pair of this case; z folds it",
        t.dim,
    )));
    out.push(Line::default());
    for &r in rows {
        let row = &idx.rows[r as usize];
        let (st, style) = match row.status() {
            crate::core::derive::Status::Fail => ("FAIL", t.fail),
            crate::core::derive::Status::Boundary => ("BND ", t.boundary),
            crate::core::derive::Status::Pass => ("pass", t.pass),
            crate::core::derive::Status::Invalid => ("INV ", t.invalid),
            crate::core::derive::Status::ServiceError => ("ERR ", t.error),
            crate::core::derive::Status::Unchecked => ("?   ", t.dim),
        };
        let mut l = vec![Span::styled(format!("  {st} "), style)];
        l.extend(inert_spans(idx.str(row.variant), t.base, t));
        l.push(Span::styled(
            format!(
                "  {}",
                crate::core::text::inert_line(idx.str(idx.transformation(r as usize)))
            ),
            t.dim,
        ));
        if let (Some(a), Some(b)) = (row.source_route(), row.variant_route()) {
            l.push(Span::styled(
                format!("  {a}→{b}"),
                if a != b { t.fail } else { t.dim },
            ));
        }
        if !row.dp.is_nan() {
            l.push(Span::styled(format!("  Δp {:+.3}", row.dp), t.dim));
        }
        if let Some(c) = app.annotation(row).and_then(|a| a.category.as_deref()) {
            l.push(Span::styled(
                format!("  {}", crate::core::text::inert_line(c)),
                t.category,
            ));
        }
        out.extend(wrap(l, width, 6));
    }
    out
}

/// The lines above the document in the unified view (wrapped, with a blank
/// line after them), so paging can leave room for them.
pub fn header_lines(app: &App, width: usize, t: &Theme) -> Vec<Line<'static>> {
    if app.detail_mode != DetailMode::Unified {
        return Vec::new();
    }
    let mut lines: Vec<Line<'static>> = triage_lines(app, t)
        .into_iter()
        .flat_map(|l| wrap(l.spans, width, 2))
        .collect();
    if !lines.is_empty() {
        lines.push(Line::default());
    }
    lines
}

/// Draw the detail pane.
pub fn render(f: &mut Frame, area: Rect, app: &App, t: &Theme) {
    let focused = app.focus == Focus::Detail;
    let mode = match app.detail_mode {
        DetailMode::Unified => " detail ",
        DetailMode::SideBySide => " side by side ",
        DetailMode::Raw => " raw record ",
    };
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(if focused { t.border_focused } else { t.border })
        .title(Span::styled(mode, t.title));
    if let Some(d) = &app.detail
        && app.selected_row() == Some(d.row)
        && app.index.rows.get(d.row as usize).is_some()
    {
        let at = app.index.loc(d.row as usize);
        let file = app
            .index
            .files
            .get(at.file() as usize)
            .map(|f| f.display.as_str())
            .unwrap_or("");
        let loc = format!(" {}:{} ", crate::core::text::inert_line(file), at.line);
        block = block.title_bottom(Line::from(Span::styled(loc, t.dim)).right_aligned());
    }
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    if let Some((case, rows)) = app.selected_case() {
        let lines = case_lines(app, case, rows, inner.width as usize, t);
        super::lines::draw(f.buffer_mut(), inner, &lines);
        return;
    }
    let Some(d) = app
        .detail
        .as_ref()
        .filter(|d| app.selected_row() == Some(d.row))
    else {
        let msg = if app.view.is_empty() {
            ""
        } else {
            "loading…"
        };
        f.render_widget(Paragraph::new(Span::styled(msg, t.dim)), inner);
        return;
    };
    // The triage lines wrap to the pane, so a narrow one still shows them whole.
    let header = header_lines(app, inner.width as usize, t);
    let doc = d.doc.lines(app.detail_mode);
    let room = (inner.height as usize).saturating_sub(header.len());
    let start = app.detail_scroll.min(doc.len().saturating_sub(1));
    super::lines::draw(f.buffer_mut(), inner, &header);
    if room > 0 {
        let below = Rect {
            y: inner.y + header.len() as u16,
            height: room as u16,
            ..inner
        };
        let shown = &doc[start..(start + room).min(doc.len())];
        super::lines::draw(f.buffer_mut(), below, shown);
    }
    if doc.len() > room && room > 0 {
        let pct = ((start + room).min(doc.len()) * 100) / doc.len().max(1);
        let tag = format!(" {}% ", pct);
        let x = area.x + area.width.saturating_sub(tag.len() as u16 + 2);
        let r = Rect {
            x,
            y: area.y,
            width: (tag.len() as u16).min(area.width),
            height: 1,
        };
        f.render_widget(Paragraph::new(Span::styled(tag, t.dim)), r);
    }
}
