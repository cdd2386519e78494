//! Pieces every popup draws with: a centred box, its frame, and the key
//! that triggers an action (for the hints in a popup's border).

use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders};

use crate::tui::action::Action;
use crate::tui::keymap::{Keymap, Mode, seq_to_string};
use crate::tui::style::Theme;

/// A `w`×`h` box in the middle of `area` (smaller if `area` is).
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

/// A popup's border, with its title.
pub fn frame<'a>(title: &'a str, t: &Theme) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(t.border_focused)
        .title(Span::styled(format!(" {title} "), t.title))
}

/// The first key bound to `action` in `mode`, as keymap files write it (`?` if none).
pub fn key_of(km: &Keymap, mode: Mode, action: Action) -> String {
    km.keys_for(mode, action)
        .first()
        .map(|k| seq_to_string(k))
        .unwrap_or_else(|| "?".into())
}
