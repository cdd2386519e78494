//! The status bar and the category legend.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::core::formats::Format;
use crate::core::text;

use super::super::action::Action;
use super::super::app::{App, MessageKind};
use super::super::keymap::{Keymap, Mode};
use super::super::style::Theme;

/// The legend: each category's key and id, the ids shortened alike when
/// the line is narrow so that every key shows ([`super::legend_entries`]).
pub fn legend(f: &mut Frame, area: Rect, app: &App, t: &Theme) {
    let (entries, more) = super::legend_entries(app, area.width);
    let mut spans = vec![Span::styled(" ", t.dim)];
    for (key, label) in entries {
        if let Some(k) = key {
            spans.push(Span::styled(k.to_string(), t.key));
            if !label.is_empty() {
                spans.push(Span::styled(":", t.dim));
            }
        }
        if !label.is_empty() {
            spans.push(Span::styled(label, t.dim));
        }
        spans.push(Span::styled(" ", t.dim));
    }
    if more {
        spans.push(Span::styled("…", t.dim));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn width(spans: &[Span]) -> usize {
    spans.iter().map(|s| text::width(&s.content)).sum()
}

/// The status bar: file, counts, progress, mode flags, and a message or hints.
///
/// When space is short the file name goes first (the detail pane's border
/// shows it too), then the hints shrink to the help key; an error, "saved"
/// or busy message wins over the counts; whatever still does not fit ends in `…`.
pub fn render(f: &mut Frame, area: Rect, app: &App, km: &Keymap, t: &Theme) {
    let w = area.width as usize;
    let right: Vec<Span> = match &app.message {
        Some((m, kind)) => {
            let st = match kind {
                MessageKind::Info | MessageKind::Busy => t.base,
                MessageKind::Saved => t.pass,
                MessageKind::Error => t.error,
            };
            vec![Span::styled(
                format!(" {} ", text::inert_line(m)),
                st.patch(t.status_bar),
            )]
        }
        None => hints(km, t, app.blind()),
    };
    let mut left = left_spans(app, true, t);
    if width(&left) + width(&right) >= w {
        left = left_spans(app, false, t);
    }
    let right = if app.message.is_none() && width(&left) + width(&right) >= w {
        short_hint(km, t)
    } else {
        right
    };
    let lw = width(&left);
    let rw = width(&right);
    let mut spans = left;
    if lw + rw < w {
        spans.push(Span::styled(" ".repeat(w - lw - rw), t.status_bar));
        spans.extend(right);
    } else if matches!(
        app.message,
        Some((
            _,
            MessageKind::Error | MessageKind::Saved | MessageKind::Busy
        ))
    ) {
        // The message wins over counts when space is short.
        spans = right;
    }
    f.render_widget(
        Paragraph::new(Line::from(fit(spans, w, t))).style(t.status_bar),
        area,
    );
}

/// Spans cut to `w` columns with a `…` where they are cut, padded to `w`.
fn fit(spans: Vec<Span<'static>>, w: usize, t: &Theme) -> Vec<Span<'static>> {
    let mut out = Vec::with_capacity(spans.len() + 1);
    let mut used = 0;
    let total = width(&spans);
    for s in spans {
        let sw = text::width(&s.content);
        if total > w && used + sw >= w {
            // More follows, so the cut always ends in `…`, even when this span
            // alone would just fit.
            let cut = text::truncate_cols(&format!("{}…", s.content), w - used);
            used += text::width(&cut);
            out.push(Span::styled(cut, s.style));
            break;
        }
        used += sw;
        out.push(s);
    }
    if used < w {
        out.push(Span::styled(" ".repeat(w - used), t.status_bar));
    }
    out
}

/// The counts and flags on the left of the status bar.
fn left_spans(app: &App, with_name: bool, t: &Theme) -> Vec<Span<'static>> {
    let idx = &app.index;
    let mut left = vec![Span::styled(" triage ", t.title.patch(t.status_bar))];
    let name = if with_name {
        format!("{} · ", idx.display_name())
    } else {
        String::new()
    };
    // Another tool's results name the tool they were converted from.
    let mut foreign: Vec<&str> = Vec::new();
    for f in &idx.files {
        if f.format != Format::Native && !foreign.contains(&f.format.name()) {
            foreign.push(f.format.name());
        }
    }
    let tool = if foreign.is_empty() {
        String::new()
    } else {
        format!("{} · ", foreign.join("+"))
    };
    let mut info = format!(
        "{name}{tool}{} pairs · {} failures",
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
    if app.following() && !app.loading {
        left.push(Span::styled(" · following", t.key.patch(t.status_bar)));
    }
    if let Some(old) = app.baseline_name() {
        let moved = match app.runs() {
            Some((_, cmp)) => format!(
                " ({} new, {} fixed)",
                cmp.count(crate::core::compare::ChangeKind::NewFailures),
                cmp.count(crate::core::compare::ChangeKind::Fixed)
            ),
            None => " (comparing…)".to_string(),
        };
        left.push(Span::styled(
            format!(" · vs {}{moved}", text::inert_line(&old)),
            t.key.patch(t.status_bar),
        ));
    }
    if let Some(change) = &app.run_change {
        left.push(Span::styled(
            format!(" · {} — R reloads", change.short()),
            t.error.patch(t.status_bar),
        ));
    }
    if let Some(q) = &app.query {
        left.push(Span::styled(" · ", t.status_bar));
        left.push(Span::styled(
            format!("/{}", text::inert_line(&q.to_string())),
            t.key.patch(t.status_bar),
        ));
        left.push(Span::styled(format!(" → {}", app.view.len()), t.status_bar));
    }
    if idx.problem_total() > 0 {
        let skipped = idx.skipped_lines;
        let warn = idx.problem_total().saturating_sub(skipped);
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
    let notes: usize = idx.files.iter().map(|f| f.notes.len()).sum();
    if notes > 0 {
        left.push(Span::styled(
            format!(" · {notes} {}", if notes == 1 { "note" } else { "notes" }),
            t.warn.patch(t.status_bar),
        ));
    }
    let unreadable = app.store.unreadable_count();
    if unreadable > 0 {
        left.push(Span::styled(
            format!(
                " · {unreadable} unreadable journal {}",
                if unreadable == 1 { "line" } else { "lines" }
            ),
            t.warn.patch(t.status_bar),
        ));
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
    left
}

/// Just the help key, for a narrow status bar.
fn short_hint(km: &Keymap, t: &Theme) -> Vec<Span<'static>> {
    match km.hint(&[Mode::Global, Mode::List], Action::ToggleHelp) {
        Some(k) => vec![
            Span::styled(format!(" {k}"), t.key.patch(t.status_bar)),
            Span::styled(" help ", t.dim.patch(t.status_bar)),
        ],
        None => Vec::new(),
    }
}

/// The everyday keys; in blind review no `accept`, since the suggestion
/// stays hidden until the reviewer decides (and `y` says so).
fn hints(km: &Keymap, t: &Theme, blind: bool) -> Vec<Span<'static>> {
    let modes = [Mode::Global, Mode::List];
    let mut spans = Vec::new();
    for (action, label) in [
        (Action::EditNote, "note"),
        (Action::AcceptSuggestion, "accept"),
        (Action::Undo, "undo"),
        (Action::ToggleHelp, "help"),
        (Action::Quit, "quit"),
    ] {
        if blind && action == Action::AcceptSuggestion {
            continue;
        }
        if let Some(k) = km.hint(&modes, action) {
            spans.push(Span::styled(format!(" {k}"), t.key.patch(t.status_bar)));
            spans.push(Span::styled(format!(" {label}"), t.dim.patch(t.status_bar)));
        }
    }
    spans.push(Span::styled(" ", t.status_bar));
    spans
}
