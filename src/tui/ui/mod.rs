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

/// The narrowest the detail gets beside the list (its decision bars and
/// facts read well from here).
const DETAIL_MIN: u16 = 80;

/// Split the screen. Small screens drop the legend, then show one pane at a
/// time: the focused one (Tab switches).
pub fn layout(area: Rect, app: &App) -> Areas {
    let focus = app.focus;
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
        // Side by side, the width shared by content: the list as wide as
        // its ids need (a case id whole, the transformation and margin
        // columns kept), the detail the rest, never under DETAIL_MIN columns
        // and the list never under two fifths.
        // Source and variant side by side need twice the room.
        let detail_min = if app.detail_mode == crate::tui::app::DetailMode::SideBySide {
            area.width / 2 + 10
        } else {
            DETAIL_MIN
        };
        let list_w = list::wanted_width(app)
            .min(area.width.saturating_sub(detail_min))
            .max(area.width * 2 / 5);
        let [l, d] =
            Layout::horizontal([Constraint::Length(list_w), Constraint::Min(1)]).areas(main);
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
pub fn viewport(area: Rect, app: &App) -> Viewport {
    let a = layout(area, app);
    Viewport {
        list_rows: a.list.height.saturating_sub(3) as usize,
        detail_rows: a.detail.height.saturating_sub(2) as usize,
        detail_cols: a.detail.width.saturating_sub(2),
    }
}

/// The legend's entries for a line `width` columns wide: each category's key
/// and its id, every id cut to one length (with `…`) so that every key fits;
/// when not even that fits, the keys alone; past that, what fits, then `…`
/// (the bool). An entry takes `k:` + label + a space, after one leading space.
pub fn legend_entries(app: &App, width: u16) -> (Vec<(Option<char>, String)>, bool) {
    use crate::core::text;
    let cats = &app.taxonomy.categories;
    let ids: Vec<String> = cats.iter().map(|c| text::inert_line(&c.id)).collect();
    let w = width as usize;
    let total = |labels: &[String]| -> usize {
        1 + cats
            .iter()
            .zip(labels)
            .map(|(c, l)| c.key.map_or(0, |_| 2) + text::width(l) + 1)
            .sum::<usize>()
    };
    let longest = ids.iter().map(|i| text::width(i)).max().unwrap_or(0);
    // The longest label length at which every entry fits (3 at least: two
    // characters and the `…`).
    let mut labels = ids.clone();
    let mut len = longest;
    while total(&labels) > w && len > 3 {
        len -= 1;
        labels = ids
            .iter()
            .map(|i| {
                if text::width(i) > len {
                    format!("{}…", text::truncate_cols(i, len - 1).trim_end_matches('…'))
                } else {
                    i.clone()
                }
            })
            .collect();
    }
    if total(&labels) > w {
        // Keys alone, for the categories that have one.
        let keyed: Vec<(Option<char>, String)> = cats
            .iter()
            .filter(|c| c.key.is_some())
            .map(|c| (c.key, String::new()))
            .collect();
        let need = 1 + keyed.len() * 2;
        if need <= w {
            return (keyed, false);
        }
        labels = ids;
    }
    let mut out = Vec::new();
    let all = total(&labels);
    let mut used = 1;
    for (c, l) in cats.iter().zip(labels) {
        let ew = c.key.map_or(0, |_| 2) + text::width(&l) + 1;
        // When some are left out, keep a column for the `…`.
        if all > w && used + ew + 1 > w {
            return (out, true);
        }
        used += ew;
        out.push((c.key, l));
    }
    (out, false)
}

/// Where each category sits on the legend line: columns `start..end` and its key.
/// Mirrors `status::legend`, from [`legend_entries`].
pub fn legend_hits(app: &App, width: u16) -> Vec<(u16, u16, char)> {
    let (entries, _) = legend_entries(app, width);
    let mut used = 1;
    let mut hits = Vec::new();
    for (key, label) in entries {
        let ew = if label.is_empty() {
            2
        } else {
            key.map_or(0, |_| 2) + crate::core::text::width(&label) + 1
        };
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
    let a = layout(area, app);
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
