//! `update`: one action applied to the state, handed to whatever has the
//! keys — the open overlay ([`super::overlay`]) or the main screen
//! ([`super::main_screen`]).

use crate::tui::action::Action;

use super::overlay::{confirm, export, facets, help, jump, note, pick, problems, query, summary};
use super::{App, Effect, KeyUse, Overlay, main_screen};

/// Apply one action to the state.
///
/// An action that writes annotations needs the record keys of its pairs;
/// when the index does not know them yet, it returns only
/// [`Effect::LearnKeys`], and the effect runner reads them and applies the
/// action again through [`resume`].
pub fn update(app: &mut App, action: Action) -> Vec<Effect> {
    dispatch(app, action, KeyUse::Ask)
}

/// Apply an action again once the record keys it asked for were read:
/// the pairs whose key could not be read are left as they were.
pub fn resume(app: &mut App, action: Action) -> Vec<Effect> {
    dispatch(app, action, KeyUse::AsKnown)
}

/// Overlays take the keys first.
fn dispatch(app: &mut App, action: Action, keys: KeyUse) -> Vec<Effect> {
    match &app.overlay {
        Overlay::None => main_screen::handle(app, action, keys),
        Overlay::Help { .. } => help::handle(app, action),
        Overlay::Problems { .. } => problems::handle(app, action),
        Overlay::Note(_) => note::handle(app, action, keys),
        Overlay::Confirm(_) => confirm::handle(app, action),
        Overlay::PickCategory { .. } => pick::handle(app, action, keys),
        Overlay::Jump(_) => jump::handle(app, action),
        Overlay::Query(_) => query::handle(app, action),
        Overlay::Facets(_) => facets::handle(app, action),
        Overlay::Summary(_) => summary::handle(app, action),
        Overlay::Export(_) => export::handle(app, action),
    }
}

/// Text typed into the note editor or a one-line input (a character or a paste).
pub fn type_text(app: &mut App, text: &str) {
    match &mut app.overlay {
        Overlay::Note(ed) => note::type_text(ed, text),
        Overlay::Export(p) => export::type_text(p, text),
        Overlay::Query(_) => query::type_text(app, text),
        Overlay::Jump(_) => jump::type_text(app, text),
        _ => {}
    }
}
