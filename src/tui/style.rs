//! Colours and the one path by which run text becomes spans.
//!
//! [`Theme`] holds every style the screens use; `NO_COLOR` (or the plain
//! theme) keeps bold, reverse and underline but drops colour. [`inert_spans`]
//! is how any string from a run file reaches the screen: control characters,
//! bidi overrides and zero-width characters are shown as visible escapes in
//! their own style, never passed to the terminal.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;

use crate::core::text::{self, Piece};

/// Every style the screens use.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub base: Style,
    pub dim: Style,
    pub title: Style,
    pub heading: Style,
    pub selected: Style,
    pub selected_unfocused: Style,
    pub border: Style,
    pub border_focused: Style,
    pub fail: Style,
    pub pass: Style,
    pub warn: Style,
    pub error: Style,
    pub invalid: Style,
    /// A boundary observation: a failure whose only cause is a source near a threshold.
    pub boundary: Style,
    pub added: Style,
    pub removed: Style,
    pub changed: Style,
    pub escape: Style,
    pub status_bar: Style,
    pub key: Style,
    pub category: Style,
    pub suggestion: Style,
    pub marked: Style,
    pub route_action: Style,
    pub route_review: Style,
    pub route_pass: Style,
    pub threshold: Style,
    pub marker_source: Style,
    pub marker_variant: Style,
}

impl Theme {
    /// The colour theme for dark terminals.
    pub fn dark() -> Theme {
        let s = Style::default;
        Theme {
            base: s(),
            dim: s().fg(Color::DarkGray),
            title: s().add_modifier(Modifier::BOLD),
            heading: s().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            selected: s().bg(Color::Rgb(45, 55, 80)).add_modifier(Modifier::BOLD),
            selected_unfocused: s().bg(Color::Rgb(40, 40, 48)),
            border: s().fg(Color::DarkGray),
            border_focused: s().fg(Color::Cyan),
            fail: s().fg(Color::LightRed).add_modifier(Modifier::BOLD),
            pass: s().fg(Color::Green),
            warn: s().fg(Color::Yellow),
            error: s().fg(Color::LightMagenta).add_modifier(Modifier::BOLD),
            invalid: s().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            boundary: s().fg(Color::LightBlue).add_modifier(Modifier::BOLD),
            added: s().fg(Color::Green),
            removed: s().fg(Color::Red).add_modifier(Modifier::CROSSED_OUT),
            changed: s().fg(Color::Yellow),
            escape: s().fg(Color::Black).bg(Color::Magenta),
            status_bar: s().bg(Color::Rgb(30, 30, 40)),
            key: s().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            category: s().fg(Color::LightBlue).add_modifier(Modifier::BOLD),
            suggestion: s().fg(Color::DarkGray).add_modifier(Modifier::ITALIC),
            marked: s().fg(Color::LightYellow).add_modifier(Modifier::BOLD),
            route_action: s().fg(Color::LightRed),
            route_review: s().fg(Color::Yellow),
            route_pass: s().fg(Color::Green),
            threshold: s().fg(Color::Gray).add_modifier(Modifier::BOLD),
            marker_source: s().fg(Color::LightCyan).add_modifier(Modifier::BOLD),
            marker_variant: s().fg(Color::LightMagenta).add_modifier(Modifier::BOLD),
        }
    }

    /// No colour at all, for `NO_COLOR` and monochrome terminals.
    pub fn plain() -> Theme {
        let s = Style::default;
        let b = || s().add_modifier(Modifier::BOLD);
        Theme {
            base: s(),
            dim: s().add_modifier(Modifier::DIM),
            title: b(),
            heading: b(),
            selected: s().add_modifier(Modifier::REVERSED),
            selected_unfocused: s().add_modifier(Modifier::UNDERLINED),
            border: s(),
            border_focused: b(),
            fail: b(),
            pass: s(),
            warn: b(),
            error: b(),
            invalid: b(),
            boundary: b(),
            added: s().add_modifier(Modifier::UNDERLINED),
            removed: s().add_modifier(Modifier::CROSSED_OUT),
            changed: b(),
            escape: s().add_modifier(Modifier::REVERSED),
            status_bar: s().add_modifier(Modifier::REVERSED),
            key: b(),
            category: b(),
            suggestion: s().add_modifier(Modifier::ITALIC),
            marked: b(),
            route_action: b(),
            route_review: s(),
            route_pass: s(),
            threshold: b(),
            marker_source: b(),
            marker_variant: b(),
        }
    }

    /// The colour theme for light terminals.
    pub fn light() -> Theme {
        let mut t = Theme::dark();
        t.selected = Style::default()
            .bg(Color::Rgb(200, 215, 245))
            .add_modifier(Modifier::BOLD);
        t.selected_unfocused = Style::default().bg(Color::Rgb(228, 228, 232));
        t.status_bar = Style::default().bg(Color::Rgb(225, 225, 232));
        t.dim = Style::default().fg(Color::Gray);
        t.heading = Style::default()
            .fg(Color::Blue)
            .add_modifier(Modifier::BOLD);
        t.key = Style::default()
            .fg(Color::Blue)
            .add_modifier(Modifier::BOLD);
        t.category = Style::default()
            .fg(Color::Blue)
            .add_modifier(Modifier::BOLD);
        t.fail = Style::default().fg(Color::Red).add_modifier(Modifier::BOLD);
        t.warn = Style::default().fg(Color::Rgb(160, 100, 0));
        t.changed = Style::default().fg(Color::Rgb(160, 100, 0));
        t.invalid = Style::default()
            .fg(Color::Rgb(160, 100, 0))
            .add_modifier(Modifier::BOLD);
        t.boundary = Style::default()
            .fg(Color::Rgb(40, 80, 200))
            .add_modifier(Modifier::BOLD);
        t.marked = Style::default()
            .fg(Color::Rgb(160, 100, 0))
            .add_modifier(Modifier::BOLD);
        t.route_action = Style::default().fg(Color::Red);
        t.route_review = Style::default().fg(Color::Rgb(160, 100, 0));
        t.marker_source = Style::default()
            .fg(Color::Blue)
            .add_modifier(Modifier::BOLD);
        t.marker_variant = Style::default()
            .fg(Color::Magenta)
            .add_modifier(Modifier::BOLD);
        t
    }

    /// The theme a config asks for; `NO_COLOR` always wins.
    pub fn for_name(name: crate::core::config::ThemeName) -> Theme {
        use crate::core::config::ThemeName;
        if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
            return Theme::plain();
        }
        match name {
            ThemeName::Dark => Theme::dark(),
            ThemeName::Light => Theme::light(),
            ThemeName::None => Theme::plain(),
        }
    }

    /// The theme the environment asks for: plain when `NO_COLOR` is set.
    pub fn from_env() -> Theme {
        Theme::for_name(crate::core::config::ThemeName::Dark)
    }

    /// The style of a route name.
    pub fn route(&self, r: crate::core::model::Route) -> Style {
        match r {
            crate::core::model::Route::Action => self.route_action,
            crate::core::model::Route::Review => self.route_review,
            crate::core::model::Route::Pass => self.route_pass,
        }
    }
}

/// Run text as spans, one line: escapes visible and styled apart.
pub fn inert_spans(s: &str, style: Style, theme: &Theme) -> Vec<Span<'static>> {
    text::pieces_line(s)
        .into_iter()
        .map(|p| match p {
            Piece::Text(t) => Span::styled(t, style),
            Piece::Escape(e) => Span::styled(e, style.patch(theme.escape)),
        })
        .collect()
}

/// Run text as a single inert string, cut to `max` columns.
pub fn inert_cell(s: &str, max: usize) -> String {
    text::truncate_cols(&text::inert_line(s), max)
}
