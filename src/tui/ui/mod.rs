//! Rendering: a pure function of the state, the keymap and the theme.
//!
//! [`layout`] splits the screen into list, detail, legend and status bar (the
//! list sits beside the detail on wide terminals, above it otherwise), and
//! the runner uses the same split to size paging. Each part draws itself from
//! borrowed state in its own module; overlays (help, problems, note editor,
//! prompts) are drawn last, over the main screen, each by its own module in
//! [`crate::tui::app::overlay`] with the pieces in [`crate::tui::popup`].

mod detail;
mod lines;
mod list;
mod status;

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::app::overlay::{
    confirm, export, facets, help, jump, note, pick, problems, query, summary,
};
use super::app::{App, Detail, Focus, Overlay, Viewport};
use super::keymap::Keymap;
use super::style::Theme;

/// The areas of the main screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Areas {
    pub list: Rect,
    pub detail: Rect,
    pub legend: Rect,
    pub status: Rect,
}

/// The smallest screen that shows anything but a notice.
pub const MIN_COLS: u16 = 20;
pub const MIN_ROWS: u16 = 5;

/// Split the screen. Small screens drop the legend, then show one pane at a
/// time: the focused one (Tab switches).
pub fn layout(area: Rect, focus: Focus) -> Areas {
    let mut a = Areas::default();
    if area.width < MIN_COLS || area.height < MIN_ROWS {
        return a;
    }
    let legend_h = u16::from(area.height >= 16);
    let [main, legend, status] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(legend_h),
        Constraint::Length(1),
    ])
    .areas(area);
    a.legend = legend;
    a.status = status;
    if main.height < 14 {
        match focus {
            Focus::List => a.list = main,
            Focus::Detail => a.detail = main,
        }
        return a;
    }
    if area.width >= 160 {
        let [l, d] = Layout::horizontal([Constraint::Percentage(42), Constraint::Percentage(58)])
            .areas(main);
        a.list = l;
        a.detail = d;
    } else {
        let list_h = (main.height * 2 / 5).clamp(4, 16);
        let [l, d] = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Length(list_h), Constraint::Min(3)])
            .areas(main);
        a.list = l;
        a.detail = d;
    }
    a
}

/// The sizes paging and wrapping need, for a screen of `area`.
pub fn viewport(area: Rect, focus: Focus) -> Viewport {
    let a = layout(area, focus);
    Viewport {
        list_rows: a.list.height.saturating_sub(3) as usize,
        detail_rows: a.detail.height.saturating_sub(2) as usize,
        detail_cols: a.detail.width.saturating_sub(2),
    }
}

/// Where each category sits on the legend line: columns `start..end` and its key.
/// Mirrors `status::legend`: a space, then `k:id ` per category while they fit.
pub fn legend_hits(app: &App, width: u16) -> Vec<(u16, u16, char)> {
    let entries: Vec<(usize, Option<char>)> = app
        .taxonomy
        .categories
        .iter()
        .map(|c| {
            let w = c.key.map_or(0, |_| 2)
                + crate::core::text::width(&crate::core::text::inert_line(&c.id))
                + 1;
            (w, c.key)
        })
        .collect();
    let w = width as usize;
    let all = 1 + entries.iter().map(|e| e.0).sum::<usize>();
    let mut used = 1;
    let mut hits = Vec::new();
    for (ew, key) in entries {
        if all > w && used + ew + 1 > w {
            break;
        }
        if let Some(k) = key {
            hits.push((used as u16, (used + ew - 1) as u16, k));
        }
        used += ew;
    }
    hits
}

/// The triage lines above a pair's detail document, unwrapped and plain:
/// what [`Detail::header`] keeps so that paging can leave room for them.
pub fn detail_header(app: &App, d: &Detail) -> Vec<Line<'static>> {
    detail::pair_lines(app, d, &crate::tui::style::Theme::plain())
}

/// Draw the whole screen.
pub fn render(f: &mut Frame, app: &App, keymap: &Keymap, theme: &Theme) {
    let area = f.area();
    if area.width < MIN_COLS || area.height < MIN_ROWS {
        let msg = Paragraph::new(vec![Line::from("triage"), Line::from("window too small")])
            .style(theme.base);
        f.render_widget(msg, area);
        return;
    }
    let a = layout(area, app.focus);
    if a.list.height > 0 {
        list::render(f, a.list, app, theme);
    }
    if a.detail.height > 0 {
        detail::render(f, a.detail, app, theme);
    }
    if a.legend.height > 0 {
        status::legend(f, a.legend, app, theme);
    }
    status::render(f, a.status, app, keymap, theme);
    match &app.overlay {
        Overlay::None => {}
        Overlay::Help { scroll } => help::draw(f, area, app, keymap, theme, *scroll),
        Overlay::Problems { scroll } => problems::draw(f, area, app, theme, *scroll),
        Overlay::Note(ed) => note::draw(f, area, app, ed, keymap, theme),
        Overlay::Confirm(c) => confirm::draw(f, area, c, keymap, theme),
        Overlay::PickCategory { rows, resolve } => {
            pick::draw(f, area, app, rows.len(), *resolve, theme)
        }
        Overlay::Jump(j) => jump::draw(f, area, j, theme),
        Overlay::Query(bar) => query::draw(f, a.status, bar, theme),
        Overlay::Facets(panel) => facets::draw(f, area, app, panel, theme),
        Overlay::Summary(v) => summary::draw(f, area, v, theme),
        Overlay::Export(p) => export::draw(f, area, app, p, keymap, theme),
    }
}
