//! The y/n prompt before a bulk change (accepting every suggestion,
//! classifying the whole view), before quitting with decisions not saved,
//! and before an export replaces an existing file.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::core::annotations::Change;
use crate::tui::action::Action;
use crate::tui::app::{App, Effect, MessageKind, Overlay};
use crate::tui::keymap::{Keymap, Mode};
use crate::tui::popup::{centered, frame, key_of};
use crate::tui::style::{Theme, inert_spans};

/// A question waiting for the reviewer's y/n, and what yes does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirm {
    pub question: String,
    pub on_yes: OnYes,
}

/// What a yes does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnYes {
    /// Save a bulk change (one undo step).
    Save { changes: Vec<Change>, label: String },
    /// Quit although decisions are not saved.
    Quit,
    /// Export, replacing the existing file.
    Export {
        format: crate::core::export::Format,
        path: String,
        rows: Vec<u32>,
    },
    /// Copy the decisions carried from the baseline into this run's journal.
    Carry,
}

/// Apply an action while the prompt is open: yes does it, no cancels.
pub fn handle(app: &mut App, action: Action) -> Vec<Effect> {
    if !matches!(app.overlay, Overlay::Confirm(_)) {
        return vec![];
    }
    match action {
        Action::Confirm => {
            // Taken, not copied: a bulk change can hold millions of changes.
            let Overlay::Confirm(c) = std::mem::replace(&mut app.overlay, Overlay::None) else {
                return vec![];
            };
            match c.on_yes {
                OnYes::Save { changes, label } => {
                    app.marks.clear();
                    return vec![app.save(changes, label)];
                }
                OnYes::Quit => app.quit = true,
                OnYes::Carry => return vec![Effect::Carry],
                OnYes::Export { format, path, rows } => {
                    return vec![Effect::Export {
                        format,
                        path,
                        rows,
                        overwrite: true,
                    }];
                }
            }
        }
        Action::Cancel | Action::Close | Action::Quit => {
            app.overlay = Overlay::None;
            app.say("cancelled; nothing changed", MessageKind::Info);
        }
        _ => {}
    }
    vec![]
}

/// A y/n prompt.
pub fn draw(f: &mut Frame, area: Rect, c: &Confirm, km: &Keymap, t: &Theme) {
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
