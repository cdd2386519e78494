//! Overlays drawn over the main screen: help, problems, note editor, prompts.
//!
//! Help is generated from the live keymap (and the taxonomy for category
//! keys), so what it says is what the keys do.

use std::collections::BTreeMap;

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::core::problem::ProblemKind;
use crate::core::text;

use super::super::action::{Action, Group};
use super::super::app::{App, Confirm};
use super::super::doc::wrap;
use super::super::keymap::{Keymap, Mode, seq_to_string};
use super::super::note::NoteEditor;
use super::super::style::{Theme, inert_spans};

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

fn frame<'a>(title: &'a str, t: &Theme) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(t.border_focused)
        .title(Span::styled(format!(" {title} "), t.title))
}

/// For one action: the modes that share a set of keys, and the keys.
type KeyRows = Vec<(Vec<Mode>, String)>;

/// The help text: bindings grouped by purpose, then the category keys.
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
pub fn help(f: &mut Frame, area: Rect, app: &App, km: &Keymap, t: &Theme, scroll: u16) {
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

/// The problems overlay: every bad line, then the field warnings.
pub fn problems(f: &mut Frame, area: Rect, app: &App, t: &Theme, scroll: u16) {
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
    let mut lines = wrap(
        vec![Span::styled(
            format!(
                "{} could not be opened; {} unusable in pairs that did open. The rest of the run is open.",
                count(idx.skipped_lines, "line", "lines"),
                count(
                    idx.problems.len() - idx.skipped_lines,
                    "field was",
                    "fields were"
                )
            ),
            t.dim,
        )],
        width,
        0,
    );
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
            let mut l = vec![Span::styled(format!("  {:<16}", "note"), t.warn)];
            l.extend(inert_spans(n, t.base, t));
            lines.extend(wrap(l, width, 4));
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
            let style = if p.kind == ProblemKind::FieldWarning {
                t.warn
            } else {
                t.fail
            };
            let loc = format!("{}:{}", text::inert_line(&p.file), p.line);
            let pad = loc_w.saturating_sub(text::width(&loc));
            let mut l = vec![Span::styled(format!("{loc}{} ", " ".repeat(pad)), t.dim)];
            l.push(Span::styled(format!("{:<16}", p.kind.label()), style));
            l.extend(inert_spans(&p.message, t.base, t));
            lines.extend(wrap(l, width, 4));
        }
    }
    if !app.orphans.is_empty() {
        lines.push(Line::default());
        lines.push(Line::from(Span::styled(
            format!(
                "{} orphaned annotations: their pairs are no longer in this run. They are kept in {}.",
                app.orphans.len(),
                text::inert_line(&app.store.path().display().to_string())
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

fn key_of(km: &Keymap, mode: Mode, action: Action) -> String {
    km.keys_for(mode, action)
        .first()
        .map(|k| seq_to_string(k))
        .unwrap_or_else(|| "?".into())
}

/// The note editor.
pub fn note(f: &mut Frame, area: Rect, app: &App, ed: &NoteEditor, km: &Keymap, t: &Theme) {
    let r = centered(area, 80, 12);
    f.render_widget(Clear, r);
    let who = match ed.targets.as_slice() {
        [one] => app
            .index
            .rows
            .get(*one as usize)
            .map(|row| {
                format!(
                    "note · {} / {}",
                    text::inert_line(app.index.str(row.case)),
                    text::inert_line(app.index.str(row.variant))
                )
            })
            .unwrap_or_else(|| "note".into()),
        many => format!("note for {} marked pairs", many.len()),
    };
    let title = text::truncate_cols(&who, r.width.saturating_sub(6) as usize);
    let block = frame(&title, t).title_bottom(Line::from(vec![
        Span::styled(
            format!(" {} ", key_of(km, Mode::Note, Action::NoteSave)),
            t.key,
        ),
        Span::styled("save ", t.dim),
        Span::styled(
            format!(" {} ", key_of(km, Mode::Note, Action::NoteCancel)),
            t.key,
        ),
        Span::styled("cancel ", t.dim),
        Span::styled(
            format!(" {} ", key_of(km, Mode::Note, Action::NoteNewline)),
            t.key,
        ),
        Span::styled("new line ", t.dim),
        Span::styled(
            format!(" {} ", key_of(km, Mode::Note, Action::NoteClear)),
            t.key,
        ),
        Span::styled("clear ", t.dim),
    ]));
    let inner = block.inner(r);
    f.render_widget(block, r);
    let h = inner.height as usize;
    let lines: Vec<Line> = ed
        .lines
        .iter()
        .skip(ed.scroll)
        .take(h)
        .map(|l| Line::from(inert_spans(l, t.base, t)))
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
    // The cursor column counts the width of what precedes it, escapes included.
    let before: String = ed
        .lines
        .get(ed.row)
        .map(|l| l.chars().take(ed.col).collect())
        .unwrap_or_default();
    let x = inner.x
        + (text::width(&text::inert_line(&before)) as u16).min(inner.width.saturating_sub(1));
    let y = inner.y + (ed.row.saturating_sub(ed.scroll) as u16).min(inner.height.saturating_sub(1));
    f.set_cursor_position(Position { x, y });
}

/// A y/n prompt.
pub fn confirm(f: &mut Frame, area: Rect, c: &Confirm, km: &Keymap, t: &Theme) {
    let r = centered(area, 72, 5);
    f.render_widget(Clear, r);
    let block = frame("confirm", t);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let lines = vec![
        Line::from(inert_spans(&c.question, t.title, t)),
        Line::from(vec![
            Span::styled(key_of(km, Mode::Confirm, Action::Confirm), t.key),
            Span::styled(" yes   ", t.dim),
            Span::styled(key_of(km, Mode::Confirm, Action::Cancel), t.key),
            Span::styled(" no", t.dim),
        ]),
    ];
    f.render_widget(
        Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: true }),
        inner,
    );
}

/// The category picker for "classify every pair in view".
pub fn pick_category(f: &mut Frame, area: Rect, app: &App, n: usize, t: &Theme) {
    let h = app.taxonomy.categories.len() as u16 + 4;
    let r = centered(area, 64, h);
    f.render_widget(Clear, r);
    let block = frame("classify the view", t);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let mut lines = vec![Line::from(Span::styled(
        format!("Pick the category for all {n} pairs in view (esc cancels):"),
        t.base,
    ))];
    for c in &app.taxonomy.categories {
        let key = c.key.map(|k| k.to_string()).unwrap_or_else(|| "·".into());
        let mut l = vec![Span::styled(format!("  {key}  "), t.key)];
        l.extend(inert_spans(&c.name, t.category, t));
        lines.push(Line::from(l));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

/// The fuzzy jump: the typed pattern and the ranked cases and pairs.
pub fn jump(f: &mut Frame, area: Rect, j: &crate::tui::input::Jump, t: &Theme) {
    let h = (j.hits.len() as u16 + 4).clamp(6, area.height.saturating_sub(2).max(3));
    let r = centered(area, 80, h);
    f.render_widget(Clear, r);
    let block = frame("jump to a case or pair", t);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let mut lines = vec![Line::from(vec![
        Span::styled("› ", t.key),
        Span::styled(text::inert_line(&j.input.text), t.title),
    ])];
    if j.hits.is_empty() {
        lines.push(Line::from(Span::styled("  no case or pair matches", t.dim)));
    }
    let room = (inner.height as usize).saturating_sub(1);
    let start = j.selected.saturating_sub(room.saturating_sub(1));
    for (i, hit) in j.hits.iter().enumerate().skip(start).take(room) {
        let style = if i == j.selected { t.selected } else { t.base };
        let kind = match hit.target {
            crate::tui::input::JumpTarget::Case(_) => "case ",
            crate::tui::input::JumpTarget::Pair(_) => "pair ",
        };
        let label = text::truncate_cols(&hit.label, (inner.width as usize).saturating_sub(8));
        let mut l = vec![
            Span::styled(format!("  {kind}"), style.patch(t.dim)),
            Span::styled(label, style),
        ];
        let used: usize = l.iter().map(|s| text::width(&s.content)).sum();
        l.push(Span::styled(
            " ".repeat((inner.width as usize).saturating_sub(used)),
            style,
        ));
        lines.push(Line::from(l));
    }
    f.render_widget(Paragraph::new(lines), inner);
    let x = inner.x
        + 2
        + text::width(&text::inert_line(
            &j.input
                .text
                .chars()
                .take(j.input.cursor)
                .collect::<String>(),
        )) as u16;
    f.set_cursor_position(Position {
        x: x.min(inner.right().saturating_sub(1)),
        y: inner.y,
    });
}

/// The query bar, drawn over the status line: the text, and the syntax
/// error with a caret under its position.
pub fn query_bar(f: &mut Frame, status: Rect, bar: &crate::tui::app::QueryBar, t: &Theme) {
    let second = bar.error.is_some() || bar.waiting;
    let y = status.y.saturating_sub(u16::from(second));
    let h = if second { 2 } else { 1 };
    let r = Rect {
        x: status.x,
        y,
        width: status.width,
        height: h.min(status.y + 1 - status.y.min(y) + 1),
    };
    f.render_widget(Clear, r);
    let prompt = "/ ";
    let mut lines = vec![Line::from(vec![
        Span::styled(prompt, t.key),
        Span::styled(text::inert_line(&bar.input.text), t.title),
    ])];
    if let Some(e) = &bar.error {
        let before: String = bar.input.text.chars().take(e.pos).collect();
        let col = text::width(prompt) + text::width(&text::inert_line(&before));
        lines.push(Line::from(vec![
            Span::styled(" ".repeat(col), t.base),
            Span::styled("^ ", t.fail),
            Span::styled(text::inert_line(&e.message), t.fail),
        ]));
    } else if bar.waiting {
        lines.push(Line::from(vec![
            Span::styled(" ".repeat(text::width(prompt)), t.base),
            Span::styled(
                "searches the text of every pair: Enter to run it (the list keeps the last query)",
                t.dim,
            ),
        ]));
    }
    f.render_widget(Paragraph::new(lines).style(t.status_bar), r);
    let before: String = bar.input.text.chars().take(bar.input.cursor).collect();
    let x = r.x + (text::width(prompt) + text::width(&text::inert_line(&before))) as u16;
    f.set_cursor_position(Position {
        x: x.min(r.right().saturating_sub(1)),
        y: r.y,
    });
}

/// The facets panel: per field, each value with its pairs and failures.
pub fn facets(
    f: &mut Frame,
    area: Rect,
    app: &App,
    panel: &crate::tui::app::FacetsPanel,
    t: &Theme,
) {
    let r = centered(area, 72, area.height.saturating_sub(2).max(3));
    f.render_widget(Clear, r);
    let title = match &app.query {
        Some(q) => format!("facets of /{}", text::inert_line(&q.to_string())),
        None => "facets of every pair".to_string(),
    };
    let block = frame(&title, t).title_bottom(Line::from(Span::styled(
        " enter adds the value to the query · esc closes ",
        t.dim,
    )));
    let inner = block.inner(r);
    f.render_widget(block, r);
    let w = inner.width as usize;
    let mut lines: Vec<Line> = Vec::new();
    let mut selected_line = 0;
    let mut i = 0;
    for facet in &panel.facets {
        lines.push(Line::from(vec![
            Span::styled(
                format!("{:<w$}", facet.field, w = w.saturating_sub(22)),
                t.heading,
            ),
            Span::styled(format!("{:>10}{:>10}", "pairs", "failures"), t.dim),
        ]));
        for e in &facet.entries {
            let style = if i == panel.selected {
                t.selected
            } else {
                t.base
            };
            if i == panel.selected {
                selected_line = lines.len();
            }
            let label = text::truncate_cols(
                &format!("  {}", text::inert_line(&e.value)),
                w.saturating_sub(22),
            );
            let pad = w.saturating_sub(22).saturating_sub(text::width(&label));
            lines.push(Line::from(vec![
                Span::styled(format!("{label}{}", " ".repeat(pad)), style),
                Span::styled(format!("{:>10}", e.pairs), style),
                Span::styled(
                    format!("{:>10}  ", e.failures),
                    style.patch(if e.failures > 0 { t.fail } else { t.dim }),
                ),
            ]));
            i += 1;
        }
        lines.push(Line::default());
    }
    let h = inner.height as usize;
    let start = selected_line
        .saturating_sub(h.saturating_sub(2).max(1) / 2)
        .min(lines.len().saturating_sub(h));
    f.render_widget(
        Paragraph::new(lines.into_iter().skip(start).collect::<Vec<_>>()),
        inner,
    );
}

/// The export prompt: the format (Tab cycles) and the path.
pub fn export(
    f: &mut Frame,
    area: Rect,
    app: &App,
    p: &crate::tui::app::ExportPrompt,
    km: &Keymap,
    t: &Theme,
) {
    let r = centered(area, 76, 8);
    f.render_widget(Clear, r);
    let block = frame("export", t);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let mut formats = vec![Span::styled("format  ", t.dim)];
    for fmt in crate::core::export::Format::ALL {
        let style = if fmt == p.format { t.selected } else { t.dim };
        formats.push(Span::styled(format!(" {} ", fmt.name()), style));
        formats.push(Span::styled(" ", t.base));
    }
    let lines = vec![
        Line::from(Span::styled(
            format!(
                "{} {} in view{}",
                app.view.len(),
                if app.view.len() == 1 { "pair" } else { "pairs" },
                app.query
                    .as_ref()
                    .map(|q| format!(" (/{})", text::inert_line(&q.to_string())))
                    .unwrap_or_default()
            ),
            t.base,
        )),
        Line::default(),
        Line::from(formats),
        Line::from(vec![
            Span::styled("path    ", t.dim),
            Span::styled(text::inert_line(&p.path.text), t.title),
        ]),
        Line::default(),
        Line::from(vec![
            Span::styled(key_of(km, Mode::Input, Action::CycleFormat), t.key),
            Span::styled(" next format   ", t.dim),
            Span::styled(key_of(km, Mode::Input, Action::InputSubmit), t.key),
            Span::styled(" export   ", t.dim),
            Span::styled(key_of(km, Mode::Input, Action::InputCancel), t.key),
            Span::styled(" cancel", t.dim),
        ]),
    ];
    f.render_widget(Paragraph::new(lines), inner);
    let before: String = p.path.text.chars().take(p.path.cursor).collect();
    let x = inner.x + 8 + text::width(&text::inert_line(&before)) as u16;
    f.set_cursor_position(Position {
        x: x.min(inner.right().saturating_sub(1)),
        y: inner.y + 3,
    });
}
