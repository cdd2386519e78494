//! The help overlay: every binding of the live keymap, grouped by purpose,
//! then the category keys; `/` filters it as the reviewer types.
//!
//! Help is generated from the keymap that dispatches keys (and the taxonomy
//! for category keys), so what it says is what the keys do.

use std::collections::BTreeMap;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::core::text;
use crate::tui::action::{Action, Group};
use crate::tui::app::{App, Effect, Overlay};
use crate::tui::doc::wrap;
use crate::tui::keymap::{Keymap, Mode, seq_to_string};
use crate::tui::popup::{centered, frame};
use crate::tui::style::{Theme, inert_spans};

use super::scroll_or_close;

/// Apply an action while help is open: search, or scroll and close.
pub fn handle(app: &mut App, action: Action) -> Vec<Effect> {
    if matches!(action, Action::SearchHelp) {
        app.help_typing = true;
        app.help_search.clear();
        return vec![];
    }
    scroll_or_close(app, action)
}

/// A key typed while the help search is taking text.
pub fn help_search_key(app: &mut App, key: HelpKey) {
    match key {
        HelpKey::Char(c) => app.help_search.push(c),
        HelpKey::Backspace => {
            app.help_search.pop();
        }
        HelpKey::Done => app.help_typing = false,
        HelpKey::Abort => {
            app.help_typing = false;
            app.help_search.clear();
        }
    }
    if let Overlay::Help { scroll } = &mut app.overlay {
        *scroll = 0;
    }
}

/// What a key means while typing a help search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HelpKey {
    Char(char),
    Backspace,
    Done,
    Abort,
}

/// For one action: the modes that share a set of keys, and the keys.
type KeyRows = Vec<(Vec<Mode>, String)>;

/// The help text: bindings grouped by purpose, then the category keys.
/// What digits do in a keymap with counts, and how to change the wait.
pub fn count_help(wait: std::time::Duration) -> String {
    if wait.is_zero() {
        "counts: 5j repeats j, but category digits classify at once, so a count starts with another digit (count_wait_ms = 0 in the keymap file)".to_string()
    } else {
        format!(
            "counts: 5j repeats j; a lone category digit waits {} ms for a motion, then classifies (count_wait_ms in the keymap file; 0 makes category digits classify at once)",
            wait.as_millis()
        )
    }
}

pub fn help_lines(app: &App, km: &Keymap, t: &Theme) -> Vec<Line<'static>> {
    // The same keys for the same action in several modes are listed once.
    let mut per_mode: BTreeMap<(Group, Action, Mode), String> = BTreeMap::new();
    for (mode, seq, action) in km.bindings() {
        let keys = per_mode
            .entry((action.group(), *action, *mode))
            .or_default();
        if !keys.is_empty() {
            keys.push_str(", ");
        }
        keys.push_str(&seq_to_string(seq));
    }
    let mut by_action: BTreeMap<(Group, Action), KeyRows> = BTreeMap::new();
    for ((g, action, mode), keys) in per_mode {
        let entry = by_action.entry((g, action)).or_default();
        match entry.iter_mut().find(|(_, k)| *k == keys) {
            Some((modes, _)) => modes.push(mode),
            None => entry.push((vec![mode], keys)),
        }
    }
    let mut lines = vec![Line::from(vec![
        Span::styled("keymap ", t.dim),
        Span::styled(km.name.clone(), t.base),
        Span::styled(" · esc closes · j/k scroll", t.dim),
    ])];
    if km.counts {
        lines.push(Line::from(Span::styled(count_help(km.count_wait), t.dim)));
    }
    let mut group = None;
    for ((g, action), modes) in by_action {
        if group != Some(g) {
            lines.push(Line::default());
            lines.push(Line::from(Span::styled(g.title().to_string(), t.heading)));
            group = Some(g);
        }
        for (modes, keys) in modes {
            let where_ = if modes == [Mode::Global] {
                String::new()
            } else {
                format!(
                    "  ({})",
                    modes
                        .iter()
                        .map(|m| m.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            lines.push(Line::from(vec![
                Span::styled(format!("  {:<22}", keys), t.key),
                Span::styled(action.description().to_string(), t.base),
                Span::styled(where_, t.dim),
            ]));
        }
    }
    lines.push(Line::default());
    lines.push(Line::from(Span::styled(
        "Categories (a key classifies the pair, or every marked pair)",
        t.heading,
    )));
    for c in &app.taxonomy.categories {
        let key = c.key.map(|k| k.to_string()).unwrap_or_else(|| "·".into());
        let mut l = vec![Span::styled(format!("  {key:<3}"), t.key)];
        l.extend(inert_spans(&c.name, t.category, t));
        l.push(Span::styled(" — ", t.dim));
        l.extend(inert_spans(&c.description, t.base, t));
        l.push(Span::styled(format!("  [{}]", c.id), t.dim));
        lines.push(Line::from(l));
    }
    lines
}

/// The help overlay.
pub fn draw(f: &mut Frame, area: Rect, app: &App, km: &Keymap, t: &Theme, scroll: u16) {
    let r = centered(area, 96, area.height.saturating_sub(2).max(3));
    f.render_widget(Clear, r);
    let block = frame("help", t);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let mut lines = help_lines(app, km, t);
    if app.help_typing || !app.help_search.is_empty() {
        let needle = app.help_search.to_lowercase();
        // Keep headings whose group still has a match, and the matching rows.
        let text_of = |l: &Line| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        };
        let mut kept: Vec<Line<'static>> = Vec::new();
        let mut heading: Option<Line<'static>> = None;
        for l in lines.into_iter().skip(1) {
            let txt = text_of(&l);
            let is_heading = !txt.starts_with(' ') && !txt.is_empty();
            if is_heading {
                heading = Some(l);
            } else if !txt.is_empty() && txt.to_lowercase().contains(&needle) {
                if let Some(h) = heading.take() {
                    kept.push(h);
                }
                kept.push(l);
            }
        }
        let cursor = if app.help_typing { "▏" } else { "" };
        let mut head = vec![
            Line::from(vec![
                Span::styled("search: ", t.dim),
                Span::styled(
                    format!("{}{cursor}", text::inert_line(&app.help_search)),
                    t.key,
                ),
                Span::styled(
                    if app.help_typing {
                        "   enter keeps it · esc clears"
                    } else {
                        "   esc clears"
                    },
                    t.dim,
                ),
            ]),
            Line::default(),
        ];
        if kept.is_empty() {
            head.push(Line::from(Span::styled(
                "nothing in the help matches",
                t.dim,
            )));
        }
        head.extend(kept);
        lines = head;
    }
    // Wrap at the overlay's edge; continuations line up under the text that
    // follows the key column.
    let width = inner.width as usize;
    let lines: Vec<Line<'static>> = lines
        .into_iter()
        .flat_map(|l| {
            let indent = l
                .spans
                .first()
                .map(|s| text::width(&s.content))
                .filter(|&w| w <= 32)
                .unwrap_or(0);
            wrap(l.spans, width, indent)
        })
        .collect();
    let max = lines.len().saturating_sub(inner.height as usize);
    let s = (scroll as usize).min(max);
    f.render_widget(
        Paragraph::new(lines.into_iter().skip(s).collect::<Vec<_>>()),
        inner,
    );
}
