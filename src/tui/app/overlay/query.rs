//! The query bar, live: the list follows every keystroke that parses (a
//! text search on a large run waits for Enter); Up and Down walk the history.
//! A query with a text term is filtered by the effect runner
//! ([`crate::tui::app::Effect::Filter`]), before the next frame.

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::core::query::{self, QueryError};
use crate::core::text;
use crate::tui::action::Action;
use crate::tui::app::{App, Effect, MessageKind, Overlay};
use crate::tui::input::LineInput;
use crate::tui::style::Theme;

use super::edit_line;

/// The query being typed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryBar {
    pub input: LineInput,
    /// The syntax error of the current text, if any (the list keeps the last valid query).
    pub error: Option<QueryError>,
    /// Where Up/Down is in the history (None: the text being typed).
    pub history_pos: Option<usize>,
    /// The text typed before browsing the history.
    pub draft: String,
    /// The text parses but searches every pair's line on a large run: it is
    /// applied on Enter, not on each key (the list keeps the last query).
    pub waiting: bool,
}

/// On runs with more pairs than this, a query that searches text (a bare
/// word or a phrase: every line is read again) waits for Enter instead of
/// running on each key, so typing stays instant.
pub const LIVE_TEXT_MAX_PAIRS: usize = 20_000;

/// Apply an action while the bar is open: edit, walk the history, apply, clear.
pub fn handle(app: &mut App, action: Action) -> Vec<Effect> {
    let Overlay::Query(bar) = &mut app.overlay else {
        return vec![];
    };
    match action {
        Action::InputSubmit => {
            let text = bar.input.text.trim().to_string();
            let bad = bar.error.clone();
            if let Some(e) = bad {
                app.say(format!("query not applied: {e}"), MessageKind::Error);
                return vec![];
            }
            let waiting = bar.waiting;
            app.overlay = Overlay::None;
            if waiting && let Err(e) = app.change_query(&text) {
                app.say(format!("query not applied: {e}"), MessageKind::Error);
                return vec![];
            }
            if !text.is_empty() {
                app.query_history.retain(|h| *h != text);
                app.query_history.push(text);
            }
            app.say_matches("");
            return app.detail_effect();
        }
        Action::InputCancel | Action::Close | Action::Cancel => {
            app.overlay = Overlay::None;
            app.query = None;
            app.rebuild(false);
            app.say("query cleared", MessageKind::Info);
            return app.detail_effect();
        }
        Action::InputUp | Action::InputDown => {
            let n = app.query_history.len();
            if n == 0 {
                return vec![];
            }
            let pos = match (bar.history_pos, action) {
                (None, Action::InputUp) => {
                    bar.draft = bar.input.text.clone();
                    Some(n - 1)
                }
                (Some(p), Action::InputUp) => Some(p.saturating_sub(1)),
                (Some(p), _) if p + 1 < n => Some(p + 1),
                (Some(_), _) => None,
                (None, _) => return vec![],
            };
            bar.history_pos = pos;
            let text = match pos {
                Some(p) => app.query_history[p].clone(),
                None => bar.draft.clone(),
            };
            bar.input = LineInput::with(&text);
            return query_changed(app);
        }
        other => {
            if edit_line(&mut bar.input, other) {
                return query_changed(app);
            }
        }
    }
    vec![]
}

/// Text typed into the bar (a character or a paste); the list follows it.
pub fn type_text(app: &mut App, text: &str) {
    let Overlay::Query(bar) = &mut app.overlay else {
        return;
    };
    bar.input.insert(text);
    bar.history_pos = None;
    let effects = query_changed(app);
    // Filtering by a text term and loading the detail are the runner's
    // job: it asks on the next loop ([`App::detail_effect`]).
    drop(effects);
}

/// Re-parse the query bar's text and follow it with the list when it parses.
fn query_changed(app: &mut App) -> Vec<Effect> {
    let Overlay::Query(bar) = &mut app.overlay else {
        return vec![];
    };
    let text = bar.input.text.clone();
    match query::parse(&text) {
        Ok(q) if q.needs_text() && app.index.rows.len() > app.live_text_max_pairs => {
            bar.error = None;
            bar.waiting = true;
            vec![]
        }
        Ok(q) => {
            bar.error = None;
            bar.waiting = false;
            app.query = (!q.is_empty()).then_some(q);
            // A query changes neither the rows nor the annotations: no recount.
            app.rebuild(false);
            app.detail_effect()
        }
        Err(e) => {
            bar.error = Some(e);
            vec![]
        }
    }
}

/// The query bar, drawn over the status line: the text, and the syntax
/// error with a caret under its position.
pub fn draw(f: &mut Frame, status: Rect, bar: &QueryBar, t: &Theme) {
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
