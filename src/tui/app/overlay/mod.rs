//! The overlays: what is drawn over the main screen and takes the keys.
//!
//! One module per overlay, each with its state type (where it has one), its
//! `handle` for the actions it takes while open, and its `draw`:
//! [`help`], [`problems`], [`note`], [`confirm`], [`pick`] (the category for
//! every pair in view), [`jump`], [`query`], [`facets`], [`summary`] and
//! [`export`]. [`super::update`] picks the one that is open.

pub mod confirm;
pub mod export;
pub mod facets;
pub mod help;
pub mod jump;
pub mod note;
pub mod pick;
pub mod problems;
pub mod query;
pub mod summary;

use crate::tui::action::Action;
use crate::tui::app::{App, Effect, Overlay};
use crate::tui::input::LineInput;

/// The keys of an overlay that only scrolls and closes (help, problems):
/// scroll, clear a help search kept with Enter (first), close, quit.
fn scroll_or_close(app: &mut App, action: Action) -> Vec<Effect> {
    let page = app.viewport.detail_rows.max(3) as i32;
    let (Overlay::Help { scroll } | Overlay::Problems { scroll }) = &mut app.overlay else {
        return vec![];
    };
    if let Some(next) = scrolled(action, *scroll, page) {
        *scroll = next;
        return vec![];
    }
    match action {
        Action::Close | Action::Cancel if !app.help_search.is_empty() => {
            app.help_search.clear();
        }
        Action::Close | Action::ToggleHelp | Action::ToggleProblems | Action::Cancel => {
            app.overlay = Overlay::None;
        }
        Action::Quit => app.request_quit(),
        _ => {}
    }
    vec![]
}

/// Where a scroll action moves a scrolled overlay (help, problems,
/// summary) from `scroll`, with `page` rows to a page; `None` for other actions.
fn scrolled(action: Action, scroll: u16, page: i32) -> Option<u16> {
    let s = scroll as i32;
    let next = match action {
        Action::ScrollDown => s + 1,
        Action::ScrollUp => s - 1,
        Action::ScrollPageDown => s + page,
        Action::ScrollPageUp => s - page,
        Action::ScrollTop => 0,
        Action::ScrollBottom => i32::from(u16::MAX) / 2,
        _ => return None,
    };
    Some(next.clamp(0, i32::from(u16::MAX)) as u16)
}

/// Apply a line-editing action to an input; true when the text changed.
fn edit_line(input: &mut LineInput, action: Action) -> bool {
    let before = input.text.clone();
    match action {
        Action::InputLeft => input.left(),
        Action::InputRight => input.right(),
        Action::InputHome => input.home(),
        Action::InputEnd => input.end(),
        Action::InputBackspace => input.backspace(),
        Action::InputDelete => input.delete(),
        Action::InputDeleteWord => input.delete_word(),
        Action::InputClear => input.clear(),
        _ => {}
    }
    input.text != before
}
