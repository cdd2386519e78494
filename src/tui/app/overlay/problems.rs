//! The problems overlay: every line that could not be opened, the field
//! warnings, notes about whole files, and annotations whose pairs are gone.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::core::problem::{KEPT_PER_KIND, ProblemKind};
use crate::core::text;
use crate::tui::action::Action;
use crate::tui::app::{App, Effect};
use crate::tui::doc::wrap;
use crate::tui::popup::frame;
use crate::tui::style::{Theme, inert_spans};

use super::scroll_or_close;

/// Apply an action while the problems are shown: scroll and close, as in
/// help (a help search kept with Enter is cleared first).
pub fn handle(app: &mut App, action: Action) -> Vec<Effect> {
    scroll_or_close(app, action)
}

/// The problems overlay: every bad line, then the field warnings.
pub fn draw(f: &mut Frame, area: Rect, app: &App, t: &Theme, scroll: u16) {
    // Everything but the status bar: a box inset from the edges would leave
    // slivers of the screen below showing through beside it.
    let r = Rect {
        height: area.height.saturating_sub(1).max(area.height.min(3)),
        ..area
    };
    f.render_widget(Clear, r);
    let block = frame("problems", t);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let idx = &app.index;
    let width = inner.width as usize;
    let counts = idx.problem_counts();
    let cases = counts.get(ProblemKind::Inconsistent) as usize;
    let mut head = format!(
        "{} could not be opened; {} unusable in pairs that did open.",
        count(idx.skipped_lines, "line", "lines"),
        count(
            (counts.total() as usize).saturating_sub(idx.skipped_lines + cases),
            "field was",
            "fields were"
        )
    );
    if cases > 0 {
        head.push_str(&format!(
            " {} pairs that cannot be compared (seed 000, section 7).",
            count(cases, "case has", "cases have")
        ));
    }
    head.push_str(" The rest of the run is open.");
    let mut lines = wrap(vec![Span::styled(head, t.dim)], width, 0);
    // Notes about whole files: what a conversion from another tool's
    // results warned about, or why no known format matched.
    for f in idx.files.iter().filter(|f| !f.notes.is_empty()) {
        lines.push(Line::default());
        let how = if f.format == crate::core::formats::Format::Native {
            String::new()
        } else {
            format!(" (converted from {})", f.format.name())
        };
        lines.extend(wrap(
            vec![Span::styled(
                format!("{}{how}", text::inert_line(&f.display)),
                t.heading,
            )],
            width,
            0,
        ));
        for n in &f.notes {
            for (i, part) in n.lines().enumerate() {
                let label = if i == 0 { "note" } else { "" };
                let mut l = vec![Span::styled(format!("  {label:<16}"), t.warn)];
                l.extend(inert_spans(part, t.base, t));
                let hang = if part.starts_with("  - ") { 22 } else { 18 };
                lines.extend(wrap(l, width, hang));
            }
        }
    }
    if idx.problems.is_empty() {
        lines.push(Line::default());
        lines.push(Line::from(Span::styled(
            "No problems: every line opened cleanly.",
            t.pass,
        )));
    }
    // One width for every location, so the kinds and messages line up.
    let loc_w = idx
        .problems
        .iter()
        .map(|p| text::width(&format!("{}:{}", text::inert_line(&p.file), p.line)))
        .max()
        .unwrap_or(0);
    for want_skip in [true, false] {
        for p in idx
            .problems
            .iter()
            .filter(|p| p.kind.skips_line() == want_skip)
        {
            let style = if p.kind.skips_line() { t.fail } else { t.warn };
            let loc = format!("{}:{}", text::inert_line(&p.file), p.line);
            let pad = loc_w.saturating_sub(text::width(&loc));
            let mut l = vec![Span::styled(format!("{loc}{} ", " ".repeat(pad)), t.dim)];
            l.push(Span::styled(format!("{:<16}", p.kind.label()), style));
            l.extend(inert_spans(&p.message, t.base, t));
            lines.extend(wrap(l, width, 4));
        }
    }
    // Past the first of each kind, only counts were kept.
    for (kind, n) in idx.unlisted.iter() {
        let style = if kind.skips_line() { t.fail } else { t.warn };
        let l = vec![
            Span::styled(format!("… and {n} more "), t.dim),
            Span::styled(kind.label(), style),
            Span::styled(
                format!(
                    " ({}), not listed: triage keeps the first {KEPT_PER_KIND} of each kind",
                    if kind.skips_line() {
                        "lines skipped"
                    } else {
                        "pairs opened"
                    }
                ),
                t.dim,
            ),
        ];
        lines.extend(wrap(l, width, 4));
    }
    let (unreadable, more) = app.store.unreadable();
    if !unreadable.is_empty() {
        lines.push(Line::default());
        lines.extend(wrap(
            vec![Span::styled(
                format!(
                    "{}{} of the annotation journal could not be read. None was dropped: each is kept in the journal, or moved to the file named, to mend and append back.",
                    count(unreadable.len(), "line", "lines"),
                    if more { " (and more, not listed)" } else { "" }
                ),
                t.heading,
            )],
            width,
            0,
        ));
        for u in &unreadable {
            let loc = format!(
                "{}:{}",
                text::inert_line(&u.journal.display().to_string()),
                u.line
            );
            let mut l = vec![Span::styled(format!("{loc} "), t.dim)];
            l.push(Span::styled(format!("{:<16}", "unreadable"), t.fail));
            l.extend(inert_spans(&u.reason, t.base, t));
            let place = match &u.moved_to {
                Some(side) => format!(" — moved to {}", side.display()),
                None => " — kept in the journal".to_string(),
            };
            l.extend(inert_spans(&place, t.dim, t));
            lines.extend(wrap(l, width, 4));
        }
    }
    if !app.orphans.is_empty() {
        lines.push(Line::default());
        lines.push(Line::from(Span::styled(
            format!(
                "{} orphaned annotations: their pairs are no longer in this run. They are kept in {}.",
                app.orphans.len(),
                match app.store.journals().as_slice() {
                    [(only, _)] => text::inert_line(&only.display().to_string()),
                    _ => "the runs' journals".to_string(),
                }
            ),
            t.heading,
        )));
        for a in &app.orphans {
            let mut l = vec![Span::styled("  ", t.dim)];
            l.extend(inert_spans(
                &format!("{} / {}", a.case_id, a.variant_id),
                t.base,
                t,
            ));
            l.push(Span::styled("  ", t.dim));
            l.extend(inert_spans(
                a.category.as_deref().unwrap_or("no category"),
                t.category,
                t,
            ));
            if let Some(n) = &a.note {
                l.push(Span::styled("  note: ", t.dim));
                l.extend(inert_spans(n, t.dim, t));
            }
            lines.extend(wrap(l, width, 4));
        }
    }
    let max = lines.len().saturating_sub(inner.height as usize);
    let s = (scroll as usize).min(max);
    f.render_widget(
        Paragraph::new(lines.into_iter().skip(s).collect::<Vec<_>>()),
        inner,
    );
}

/// "1 line", "2 lines".
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
