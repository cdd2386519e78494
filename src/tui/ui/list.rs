//! The list of pairs: only the visible rows are drawn.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders};

use crate::core::compare::ChangeKind;
use crate::core::derive::Status;
use crate::core::row::{PairRow, flags};
use crate::core::text;

use super::super::app::{App, Focus};
use super::super::listing::{Item, Sort};
use super::super::style::{Theme, inert_cell, inert_spans};

struct Cols {
    /// The change since the baseline (`--baseline` only).
    change: usize,
    case: usize,
    variant: usize,
    transformation: usize,
    route: usize,
    dp: usize,
    margin: usize,
    category: usize,
}

/// The rows of the view whose ids size the list's columns.
const MEASURED_ROWS: usize = 2000;

/// The widest case id, variant id and transformation among the first
/// [`MEASURED_ROWS`] rows of the view (each at most 40 columns): what the
/// list would need to show them whole. Measured once per view: a row's ids
/// never change, so the widths are kept with a digest of the rows they
/// were measured on, which costs a sequential pass over 8 KB a frame
/// rather than thousands of scattered reads.
pub fn content_widths(app: &App) -> [usize; 3] {
    use std::hash::{Hash, Hasher};
    let first = &app.view[..app.view.len().min(MEASURED_ROWS)];
    let mut h = rustc_hash::FxHasher::default();
    first.hash(&mut h);
    let stamp = h.finish();
    if let Some((s, w)) = app.list_widths.get()
        && s == stamp
    {
        return w;
    }
    let w = measure(app, first);
    app.list_widths.set(Some((stamp, w)));
    w
}

fn measure(app: &App, rows: &[u32]) -> [usize; 3] {
    let mut w = [0usize; 3];
    for &r in rows {
        let Some(row) = app.index.rows.get(r as usize) else {
            continue;
        };
        for (i, sym) in [row.case, row.variant, app.index.transformation(r as usize)]
            .into_iter()
            .enumerate()
        {
            w[i] = w[i].max(shown_width(app.index.str(sym)).min(40));
        }
    }
    w
}

/// The columns `s` takes on screen, made inert. This runs for thousands of
/// ids on every frame: printable ASCII, nearly every id, is its length,
/// with no copy made.
fn shown_width(s: &str) -> usize {
    if s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        s.len()
    } else {
        text::width(&text::inert_line(s))
    }
}

/// The list's width, borders included, with every column and the ids of
/// [`content_widths`] whole.
pub fn wanted_width(app: &App) -> u16 {
    let [case, variant, transformation] = content_widths(app);
    let fixed = 1 + 5 + 1 + 15 + 7 + 7 + 20 + if app.baseline.is_some() { 7 } else { 0 };
    (2 + fixed + case + 1 + variant + 1 + transformation + 1) as u16
}

fn columns(width: usize, want: [usize; 3], compared: bool) -> Cols {
    // Fixed: mark 1 + status 5 + note 1 (+ change 7 when compared).
    let change = if compared && width >= 50 { 7 } else { 0 };
    let width = width - change;
    let route = if width >= 70 { 15 } else { 0 };
    let dp = if width >= 60 { 7 } else { 0 };
    let margin = if width >= 90 { 7 } else { 0 };
    let category = if width >= 80 {
        20
    } else if width >= 50 {
        12
    } else {
        0
    };
    let fixed = 1 + 5 + 1 + route + dp + margin + category;
    let flex = width.saturating_sub(fixed);
    let [want_case, want_variant, want_transformation] = want.map(|w| w + 1);
    if width >= 100 && flex >= want_case + want_variant + want_transformation {
        // Room for every id whole: the case and transformation take what
        // they need, the variant the rest.
        return Cols {
            change,
            case: want_case,
            variant: flex - want_case - want_transformation,
            transformation: want_transformation,
            route,
            dp,
            margin,
            category,
        };
    }
    if width >= 100 && flex >= want_case + 24 {
        // The case id whole first; the transformation and the variant share
        // the rest.
        let rest = flex - want_case;
        let transformation = want_transformation.min(rest * 45 / 100);
        return Cols {
            change,
            case: want_case,
            variant: rest - transformation,
            transformation,
            route,
            dp,
            margin,
            category,
        };
    }
    let transformation = if width >= 100 { flex * 28 / 100 } else { 0 };
    let rest = flex - transformation;
    let case = rest * 55 / 100;
    Cols {
        change,
        case,
        variant: rest - case,
        transformation,
        route,
        dp,
        margin,
        category,
    }
}

fn pad(s: &str, w: usize) -> String {
    if w == 0 {
        return String::new();
    }
    let cut = text::truncate_cols(s, w.saturating_sub(1));
    let n = w.saturating_sub(text::width(&cut));
    format!("{cut}{}", " ".repeat(n))
}

fn rpad(s: &str, w: usize) -> String {
    if w == 0 {
        return String::new();
    }
    let n = w.saturating_sub(text::width(s) + 1);
    format!("{}{s} ", " ".repeat(n))
}

/// Draw the list into `area`.
pub fn render(f: &mut Frame, area: Rect, app: &App, t: &Theme) {
    let focused = app.focus == Focus::List;
    let mut title = if app.show_all {
        " all pairs ".to_string()
    } else {
        " failures ".to_string()
    };
    if app.unclassified_only {
        title = " unclassified failures ".to_string();
    }
    if app.grouped {
        title.push_str("by case ");
    }
    if app.sort != Sort::default() {
        title.push_str(&format!(
            "· sorted by {} {} ",
            app.sort.key.name(),
            if app.sort.descending { "↓" } else { "↑" }
        ));
    }
    let count = if app.grouped {
        let cases = app
            .items
            .iter()
            .filter(|i| matches!(i, Item::Case { .. }))
            .count();
        format!(" {} pairs in {cases} cases ", app.view.len())
    } else {
        format!(
            " {}/{} ",
            if app.view.is_empty() {
                0
            } else {
                app.cursor + 1
            },
            app.view.len()
        )
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(if focused { t.border_focused } else { t.border })
        .title(Span::styled(title, t.title))
        .title_bottom(Line::from(Span::styled(count, t.dim)).right_aligned());
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    let w = inner.width as usize;
    let c = columns(w, content_widths(app), app.baseline.is_some());
    let mut lines = Vec::with_capacity(inner.height as usize);
    let header = format!(
        " {}{}{}{}{}{}{}{}{}",
        pad("STAT", 5),
        pad("CHANGE", c.change),
        pad("CASE", c.case),
        pad("VARIANT", c.variant),
        pad("TRANSFORMATION", c.transformation),
        pad("ROUTE", c.route),
        rpad("ΔP", c.dp),
        rpad("MARGIN", c.margin),
        pad("CATEGORY", c.category),
    );
    lines.push(Line::from(Span::styled(
        text::truncate_cols(&header, w),
        t.dim,
    )));
    let body_h = inner.height.saturating_sub(1) as usize;
    if app.view.is_empty() {
        let msg = if app.loading {
            "indexing… the first pairs appear in a moment"
        } else if app.index.rows.is_empty() && app.index.problems.is_empty() {
            "this run has no pairs: the file is empty"
        } else if app.index.rows.is_empty() {
            "no line of this run opened as a pair — p lists the problems"
        } else if app.query.is_some() {
            "no pair matches the query — / edits it, esc in the query bar clears it"
        } else if app.unclassified_only {
            "every failure in view is classified — U shows them all"
        } else if !app.show_all {
            "no failures in this run — a shows all pairs"
        } else {
            "no pairs"
        };
        lines.push(Line::from(Span::styled(format!(" {msg}"), t.dim)));
    }
    let end = (app.list_offset + body_h).min(app.items.len());
    for i in app.list_offset..end {
        let selected = i == app.cursor;
        let base = match (selected, focused) {
            (true, true) => t.selected,
            (true, false) => t.selected_unfocused,
            (false, _) => Style::default(),
        };
        let item = app.items[i];
        let row_idx = match item {
            Item::Pair(r) => r,
            Item::Case {
                case,
                len,
                failures,
                folded,
                ..
            } => {
                let in_view = item.case_rows().and_then(|rows| app.view.get(rows));
                let marked = in_view.is_some_and(|rows| {
                    !rows.is_empty() && rows.iter().all(|r| app.marks.contains(r))
                });
                let mut spans = vec![
                    Span::styled(if marked { "▌" } else { " " }, base.patch(t.marked)),
                    Span::styled(if folded { "▸ " } else { "▾ " }, base.patch(t.key)),
                ];
                spans.extend(inert_spans(app.index.str(case), base.patch(t.title), t));
                spans.push(Span::styled(
                    format!(
                        "  {len} {} · {failures} failing",
                        if len == 1 { "pair" } else { "pairs" }
                    ),
                    base.patch(t.dim),
                ));
                let used: usize = spans.iter().map(|s| text::width(&s.content)).sum();
                if used < w {
                    spans.push(Span::styled(" ".repeat(w - used), base));
                }
                lines.push(Line::from(spans));
                continue;
            }
        };
        let row = &app.index.rows[row_idx as usize];
        lines.push(row_line(app, row_idx, row, &c, base, t, w));
    }
    super::lines::draw(f.buffer_mut(), inner, &lines);
}

fn row_line(
    app: &App,
    row_idx: u32,
    row: &PairRow,
    c: &Cols,
    base: Style,
    t: &Theme,
    w: usize,
) -> Line<'static> {
    let idx = &app.index;
    let mut spans = Vec::new();
    let marked = app.marks.contains(&row_idx);
    spans.push(Span::styled(
        if marked { "▌" } else { " " },
        base.patch(t.marked),
    ));
    let (st, st_style) = match row.status() {
        Status::Fail => ("FAIL", t.fail),
        Status::Boundary => ("BND ", t.boundary),
        Status::Pass => ("pass", t.pass),
        Status::Invalid => ("INV ", t.invalid),
        Status::ServiceError => ("ERR ", t.error),
        Status::Unchecked => ("?   ", t.dim),
    };
    spans.push(Span::styled(format!("{st} "), base.patch(st_style)));
    if c.change > 0 {
        let (label, style) = match app.change_of(row_idx) {
            Some(ch) => (ch.short(), change_style(ch, t)),
            None => ("", t.dim),
        };
        spans.push(Span::styled(pad(label, c.change), base.patch(style)));
    }
    spans.push(Span::styled(
        pad(&inert_cell(idx.str(row.case), c.case), c.case),
        base,
    ));
    spans.push(Span::styled(
        pad(&inert_cell(idx.str(row.variant), c.variant), c.variant),
        base,
    ));
    if c.transformation > 0 {
        let mut tr = inert_cell(
            idx.str(idx.transformation(row_idx as usize)),
            c.transformation,
        );
        if row.has(flags::INFERRED) {
            tr.push('*');
        }
        spans.push(Span::styled(pad(&tr, c.transformation), base.patch(t.dim)));
    }
    if c.route > 0 {
        match (row.source_route(), row.variant_route()) {
            (Some(a), Some(b)) => {
                let text_ = format!("{}→{}", a.name(), b.name());
                let style = if a != b { t.fail } else { t.dim };
                spans.push(Span::styled(pad(&text_, c.route), base.patch(style)));
            }
            _ => spans.push(Span::styled(pad("—", c.route), base.patch(t.dim))),
        }
    }
    if c.dp > 0 {
        let v = if row.dp.is_nan() {
            "—".to_string()
        } else {
            format!("{:+.2}", row.dp)
        };
        let style = if !row.dp.is_nan() && row.dp.abs() >= 0.1 {
            t.changed
        } else {
            t.base
        };
        spans.push(Span::styled(rpad(&v, c.dp), base.patch(style)));
    }
    if c.margin > 0 {
        let v = if row.margin.is_nan() {
            "—".to_string()
        } else {
            format!("{:.3}", row.margin)
        };
        let style = if row.has(flags::NEAR_BOUNDARY) {
            t.warn
        } else {
            t.base
        };
        spans.push(Span::styled(rpad(&v, c.margin), base.patch(style)));
    }
    if c.category > 0 {
        let (label, style) = category_cell(app, row_idx, row, t);
        spans.push(Span::styled(pad(&label, c.category), base.patch(style)));
    }
    let has_note = app.annotation(row).is_some_and(|a| a.note.is_some());
    spans.push(Span::styled(
        if has_note { "✎" } else { " " },
        base.patch(t.category),
    ));
    // Fill the rest so the selection bar spans the row.
    let used: usize = spans.iter().map(|s| text::width(&s.content)).sum();
    if used < w {
        spans.push(Span::styled(" ".repeat(w - used), base));
    }
    Line::from(spans)
}

/// How a change looks in the list: new failures stand out, fixed pairs
/// are green, the rest quiet.
fn change_style(c: ChangeKind, t: &Theme) -> Style {
    match c {
        ChangeKind::NewFailures => t.fail,
        ChangeKind::Fixed => t.pass,
        ChangeKind::StatusChanged | ChangeKind::ContentChanged => t.warn,
        ChangeKind::StillFailing | ChangeKind::Added | ChangeKind::Removed => t.base,
        ChangeKind::UnchangedPass => t.dim,
    }
}

/// The category column: the category, a stale one, a decision of the
/// baseline's (`⇠` carried, `~` stale), or the suggestion.
pub fn category_cell(app: &App, row_idx: u32, row: &PairRow, t: &Theme) -> (String, Style) {
    if let Some(a) = app.annotation(row)
        && let Some(cat) = &a.category
    {
        return match app.taxonomy.by_id(cat) {
            Some(_) => (text::inert_line(cat), t.category),
            None => (format!("{}?", text::inert_line(cat)), t.warn),
        };
    }
    if !app.hides_others(row) && app.disagrees(row) {
        return ("≠ disagree".to_string(), t.fail);
    }
    if let Some(a) = app.stale_annotation(row)
        && let Some(cat) = &a.category
    {
        return (format!("~{} (stale)", text::inert_line(cat)), t.warn);
    }
    if let Some(d) = app.baseline_decision(row_idx)
        && let Some(cat) = &d.annotation().category
    {
        return if d.is_stale() {
            (format!("~{} (stale)", text::inert_line(cat)), t.warn)
        } else {
            (format!("⇠{}", text::inert_line(cat)), t.suggestion)
        };
    }
    if row.status().is_failure()
        && !app.hides_others(row)
        && let Some(s) = row.suggestion()
    {
        return (format!("{s}?"), t.suggestion);
    }
    (String::new(), t.base)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcut for printable ASCII gives what the inert form takes.
    #[test]
    fn shown_width_is_the_inert_width() {
        for s in [
            "checkout-outage-001",
            "",
            "a b~",
            "tab\there",
            "bidi\u{202e}x",
            "é漢",
            "\x1b[2J",
        ] {
            assert_eq!(shown_width(s), text::width(&text::inert_line(s)), "{s:?}");
        }
    }

    /// The widths kept between frames are those of the view shown: a view
    /// of other rows is measured again, the same view is not.
    #[test]
    fn kept_widths_follow_the_view() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("r.jsonl");
        let line = |case: &str, variant: &str| {
            format!(
                r#"{{"case_id":"{case}","variant_id":"{variant}","passed":false,"source":{{"question":"q"}},"variant":{{"question":"q2"}}}}"#
            )
        };
        let text = [line("a-very-long-case-identifier", "v"), line("c", "short")].join("\n");
        std::fs::write(&run, text + "\n").unwrap();
        let journal = dir.path().join("j.jsonl");
        let mut app = crate::tui::testing::app_for(&[run.to_str().unwrap()], &journal, "t");
        app.view = vec![0, 1];
        assert_eq!(content_widths(&app), [27, 5, 16]);
        assert!(app.list_widths.get().is_some());
        app.view = vec![1];
        assert_eq!(content_widths(&app), [1, 5, 16]);
        app.view = vec![0, 1];
        assert_eq!(content_widths(&app), [27, 5, 16]);
        // What is kept is what a fresh measure gives.
        app.list_widths.set(None);
        assert_eq!(content_widths(&app), [27, 5, 16]);
    }
}
