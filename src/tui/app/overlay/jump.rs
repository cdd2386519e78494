//! The fuzzy jump to a case or pair by name. The matching is [`Jump`]'s.

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::core::text;
use crate::tui::action::Action;
use crate::tui::app::{App, Effect, Overlay};
pub use crate::tui::input::{Jump, JumpTarget};
use crate::tui::popup::{centered, frame};
use crate::tui::style::Theme;

use super::edit_line;

/// Apply an action while the jump is open: edit the pattern, move through
/// the hits, jump, cancel.
pub fn handle(app: &mut App, action: Action) -> Vec<Effect> {
    let Overlay::Jump(j) = &mut app.overlay else {
        return vec![];
    };
    let n = j.hits.len();
    match action {
        Action::InputSubmit => {
            let target = j.hits.get(j.selected).map(|h| h.target);
            app.overlay = Overlay::None;
            return match target {
                Some(t) => app.jump_to(t),
                None => vec![],
            };
        }
        Action::InputCancel | Action::Close | Action::Cancel => app.overlay = Overlay::None,
        Action::InputUp => j.selected = j.selected.saturating_sub(1),
        Action::InputDown => j.selected = (j.selected + 1).min(n.saturating_sub(1)),
        other => {
            if edit_line(&mut j.input, other) {
                let mut j = std::mem::take(j);
                j.refresh(&app.index, &app.view);
                app.overlay = Overlay::Jump(j);
            }
        }
    }
    vec![]
}

/// Text typed into the pattern (a character or a paste): the hits follow.
pub fn type_text(app: &mut App, text: &str) {
    let Overlay::Jump(j) = &mut app.overlay else {
        return;
    };
    j.input.insert(text);
    let mut j = std::mem::take(j);
    j.refresh(&app.index, &app.view);
    app.overlay = Overlay::Jump(j);
}

/// The fuzzy jump: the typed pattern and the ranked cases and pairs.
pub fn draw(f: &mut Frame, area: Rect, j: &Jump, t: &Theme) {
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
            JumpTarget::Case(_) => "case ",
            JumpTarget::Pair(_) => "pair ",
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
