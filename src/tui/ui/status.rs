//! The status bar and the category legend.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::core::text;

use super::super::action::Action;
use super::super::app::{App, MessageKind};
use super::super::keymap::{Keymap, Mode};
use super::super::style::Theme;

/// The legend: each category's key and id.
pub fn legend(f: &mut Frame, area: Rect, app: &App, t: &Theme) {
    let mut spans = vec![Span::styled(" ", t.dim)];
    for c in &app.taxonomy.categories {
        if let Some(k) = c.key {
            spans.push(Span::styled(k.to_string(), t.key));
            spans.push(Span::styled(":", t.dim));
        }
        spans.push(Span::styled(text::inert_line(&c.id), t.dim));
        spans.push(Span::styled(" ", t.dim));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The status bar: file, counts, progress, mode flags, and a message or hints.
pub fn render(f: &mut Frame, area: Rect, app: &App, km: &Keymap, t: &Theme) {
    let idx = &app.index;
    let mut left = vec![Span::styled(" triage ", t.title.patch(t.status_bar))];
    let mut info = format!(
        "{} · {} pairs · {} failures",
        idx.display_name(),
        idx.rows.len(),
        idx.failures
    );
    if idx.failures > 0 {
        info.push_str(&format!(
            " · classified {}/{}",
            app.classified, idx.failures
        ));
    }
    left.push(Span::styled(info, t.status_bar));
    if !idx.problems.is_empty() {
        let skipped = idx.skipped_lines;
        let warn = idx.problems.len() - skipped;
        let mut p = String::from(" · ");
        if skipped > 0 {
            p.push_str(&format!(
                "{skipped} bad {}",
                if skipped == 1 { "line" } else { "lines" }
            ));
        }
        if warn > 0 {
            if skipped > 0 {
                p.push_str(", ");
            }
            p.push_str(&format!(
                "{warn} {}",
                if warn == 1 { "warning" } else { "warnings" }
            ));
        }
        left.push(Span::styled(p, t.warn.patch(t.status_bar)));
    }
    if !app.orphans.is_empty() {
        left.push(Span::styled(
            format!(" · {} orphaned", app.orphans.len()),
            t.warn.patch(t.status_bar),
        ));
    }
    if app.loading {
        let pct = (idx.bytes_read * 100)
            .checked_div(idx.bytes_total)
            .unwrap_or(0);
        left.push(Span::styled(
            format!(" · indexing {pct}%"),
            t.warn.patch(t.status_bar),
        ));
    }
    if !app.marks.is_empty() {
        left.push(Span::styled(
            format!(" · {} marked", app.marks.len()),
            t.marked.patch(t.status_bar),
        ));
    }
    if app.store.pending() > 0 {
        left.push(Span::styled(
            format!(" · {} UNSAVED", app.store.pending()),
            t.error.patch(t.status_bar),
        ));
    }
    if let Some(n) = &app.store_notice {
        left.push(Span::styled(format!(" · {n}"), t.warn.patch(t.status_bar)));
    }
    if !app.pending_keys.is_empty() {
        left.push(Span::styled(
            format!(" · {}…", app.pending_keys),
            t.key.patch(t.status_bar),
        ));
    }
    let right: Vec<Span> = match &app.message {
        Some((m, kind)) => {
            let st = match kind {
                MessageKind::Info => t.base,
                MessageKind::Saved => t.pass,
                MessageKind::Error => t.error,
            };
            vec![Span::styled(
                format!(" {} ", text::inert_line(m)),
                st.patch(t.status_bar),
            )]
        }
        None => hints(km, t),
    };
    let lw: usize = left.iter().map(|s| text::width(&s.content)).sum();
    let rw: usize = right.iter().map(|s| text::width(&s.content)).sum();
    let w = area.width as usize;
    let mut spans = left;
    if lw + rw < w {
        spans.push(Span::styled(" ".repeat(w - lw - rw), t.status_bar));
        spans.extend(right);
    } else if lw < w {
        // The message wins over counts when space is short.
        if matches!(
            app.message,
            Some((_, MessageKind::Error | MessageKind::Saved))
        ) {
            spans = right;
        }
        let used: usize = spans.iter().map(|s| text::width(&s.content)).sum();
        spans.push(Span::styled(
            " ".repeat(w.saturating_sub(used)),
            t.status_bar,
        ));
    }
    f.render_widget(Paragraph::new(Line::from(spans)).style(t.status_bar), area);
}

fn hints(km: &Keymap, t: &Theme) -> Vec<Span<'static>> {
    let modes = [Mode::Global, Mode::List];
    let mut spans = Vec::new();
    for (action, label) in [
        (Action::EditNote, "note"),
        (Action::AcceptSuggestion, "accept"),
        (Action::Undo, "undo"),
        (Action::ToggleHelp, "help"),
        (Action::Quit, "quit"),
    ] {
        if let Some(k) = km.hint(&modes, action) {
            spans.push(Span::styled(format!(" {k}"), t.key.patch(t.status_bar)));
            spans.push(Span::styled(format!(" {label}"), t.dim.patch(t.status_bar)));
        }
    }
    spans.push(Span::styled(" ", t.status_bar));
    spans
}
