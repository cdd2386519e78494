//! The note editor over the main screen: a multi-line note on the selected
//! pair or on every marked pair. The editing itself is [`NoteEditor`]'s.

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::core::annotations::{AnnotationSource, Change};
use crate::core::text;
use crate::tui::action::Action;
use crate::tui::app::{App, Effect, KeyUse, MessageKind, Overlay};
use crate::tui::keymap::{Keymap, Mode};
pub use crate::tui::note::NoteEditor;
use crate::tui::popup::{centered, frame, key_of};
use crate::tui::style::{Theme, inert_spans};

/// Apply an action while the note editor is open: edit, save, discard.
pub fn handle(app: &mut App, action: Action, keys: KeyUse) -> Vec<Effect> {
    let Overlay::Note(ed) = &mut app.overlay else {
        return vec![];
    };
    let h = 6;
    let asked = std::mem::take(&mut ed.discard_asked);
    match action {
        Action::NoteSave => {
            let text = ed.text();
            let targets = ed.targets.clone();
            let changed = text != ed.original;
            if !changed {
                app.overlay = Overlay::None;
                app.say("note unchanged", MessageKind::Info);
                return vec![];
            }
            // The editor stays open until the keys are known and it saves.
            if let Some(learn) = app.keys_needed(&targets, keys, action) {
                return vec![learn];
            }
            app.overlay = Overlay::None;
            let note = (!text.is_empty()).then_some(text);
            let changes: Vec<Change> = targets
                .iter()
                .filter_map(|&r| {
                    let row = &app.index.rows[r as usize];
                    let prev = app.mine(row);
                    Some(Change {
                        key: app.index.key(row)?,
                        case_id: app.index.str(row.case).into(),
                        variant_id: app.index.str(row.variant).into(),
                        category: prev.and_then(|a| a.category),
                        note: note.clone(),
                        source: prev.map(|a| a.source).unwrap_or(AnnotationSource::Manual),
                    })
                })
                .collect();
            let label = if note.is_some() {
                "note saved"
            } else {
                "note removed"
            };
            return vec![app.save(changes, label.to_string())];
        }
        Action::NoteCancel | Action::Close | Action::Cancel => {
            if ed.changed() && !asked {
                // Typed text is never thrown away on one key: ask first.
                ed.discard_asked = true;
                app.say(
                    "the note has changes: cancel again to discard them, save to keep them, or type on",
                    MessageKind::Error,
                );
                return vec![];
            }
            app.overlay = Overlay::None;
            app.say(
                if asked {
                    "note changes discarded"
                } else {
                    "note closed, unchanged"
                },
                MessageKind::Info,
            );
        }
        Action::NoteNewline => ed.newline(),
        Action::NoteLeft => ed.left(),
        Action::NoteRight => ed.right(),
        Action::NoteUp => ed.up(),
        Action::NoteDown => ed.down(),
        Action::NoteWordLeft => ed.word_left(),
        Action::NoteWordRight => ed.word_right(),
        Action::NoteHome => ed.home(),
        Action::NoteEnd => ed.end(),
        Action::NoteBackspace => ed.backspace(),
        Action::NoteDelete => ed.delete(),
        Action::NoteDeleteWord => ed.delete_word(),
        Action::NoteClear => ed.clear(),
        _ => {}
    }
    if let Overlay::Note(ed) = &mut app.overlay {
        ed.scroll_to_cursor(h);
    }
    vec![]
}

/// Text typed into the editor (a character or a paste).
pub fn type_text(ed: &mut NoteEditor, text: &str) {
    ed.discard_asked = false;
    ed.insert(text);
    ed.scroll_to_cursor(6);
}

/// The note editor.
pub fn draw(f: &mut Frame, area: Rect, app: &App, ed: &NoteEditor, km: &Keymap, t: &Theme) {
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
    // Each hint: the key bound to an action in note mode, then what it does.
    let hints = |pairs: &[(Action, &'static str)]| -> Vec<Span<'static>> {
        pairs
            .iter()
            .flat_map(|&(action, what)| {
                [
                    Span::styled(format!(" {} ", key_of(km, Mode::Note, action)), t.key),
                    Span::styled(what, t.dim),
                ]
            })
            .collect()
    };
    let keys = if ed.discard_asked {
        let mut keys = vec![Span::styled(" discard the changes? ", t.warn)];
        keys.extend(hints(&[
            (Action::NoteCancel, "discard "),
            (Action::NoteSave, "save "),
        ]));
        keys.push(Span::styled(" any other key: go on editing ", t.dim));
        keys
    } else {
        hints(&[
            (Action::NoteSave, "save "),
            (Action::NoteCancel, "cancel "),
            (Action::NoteNewline, "new line "),
            (Action::NoteClear, "clear "),
        ])
    };
    let block = frame(&title, t).title_bottom(Line::from(keys));
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
