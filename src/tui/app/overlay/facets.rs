//! The facets panel: counts per transformation, family, category, outcome
//! and route move over the pairs the query matches; choosing one adds it to
//! the query.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::core::text;
use crate::tui::action::Action;
use crate::tui::app::{App, Effect, MessageKind, Overlay};
use crate::tui::popup::{centered, frame};
use crate::tui::style::Theme;

/// The facets panel: every field's values, one selectable line each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FacetsPanel {
    pub facets: Vec<crate::core::facets::Facet>,
    /// Index into the flattened entries.
    pub selected: usize,
}

impl FacetsPanel {
    /// How many selectable entries there are.
    pub fn len(&self) -> usize {
        self.facets.iter().map(|f| f.entries.len()).sum()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The selected entry's term.
    pub fn selected_term(&self) -> Option<&str> {
        self.facets
            .iter()
            .flat_map(|f| f.entries.iter())
            .nth(self.selected)
            .map(|e| e.term.as_str())
    }
}

/// Apply an action while the panel is open: move, choose, close.
pub fn handle(app: &mut App, action: Action) -> Vec<Effect> {
    let Overlay::Facets(panel) = &mut app.overlay else {
        return vec![];
    };
    let n = panel.len();
    let page = app.viewport.detail_rows.max(3);
    match action {
        Action::ScrollDown | Action::NextPair => {
            panel.selected = (panel.selected + 1).min(n.saturating_sub(1))
        }
        Action::ScrollUp | Action::PrevPair => panel.selected = panel.selected.saturating_sub(1),
        Action::ScrollPageDown => panel.selected = (panel.selected + page).min(n.saturating_sub(1)),
        Action::ScrollPageUp => panel.selected = panel.selected.saturating_sub(page),
        Action::ScrollTop => panel.selected = 0,
        Action::ScrollBottom => panel.selected = n.saturating_sub(1),
        Action::Choose => {
            let Some(term) = panel.selected_term().map(str::to_string) else {
                return vec![];
            };
            app.overlay = Overlay::None;
            let text = match &app.query {
                Some(q) => format!("{q} {term}"),
                None => term.clone(),
            };
            match app.change_query(&text) {
                Ok(()) => {
                    app.query_history.retain(|h| *h != text);
                    app.query_history.push(text);
                    app.say_matches(&format!("added {term}: "));
                }
                Err(e) => app.say(format!("cannot add {term}: {e}"), MessageKind::Error),
            }
            return app.detail_effect();
        }
        Action::Close | Action::Cancel | Action::ShowFacets => app.overlay = Overlay::None,
        Action::Quit => app.request_quit(),
        _ => {}
    }
    vec![]
}

/// The facets panel: per field, each value with its pairs and failures.
pub fn draw(f: &mut Frame, area: Rect, app: &App, panel: &FacetsPanel, t: &Theme) {
    let r = centered(area, 72, area.height.saturating_sub(2).max(3));
    f.render_widget(Clear, r);
    let title = match &app.query {
        Some(q) => format!("facets of /{}", text::inert_line(&q.to_string())),
        None => "facets of every pair".to_string(),
    };
    let block = frame(&title, t).title_bottom(Line::from(Span::styled(
        " enter adds the value to the query · esc closes ",
        t.dim,
    )));
    let inner = block.inner(r);
    f.render_widget(block, r);
    let w = inner.width as usize;
    let mut lines: Vec<Line> = Vec::new();
    let mut selected_line = 0;
    let mut i = 0;
    for facet in &panel.facets {
        // In blind review the pairs this reviewer has not decided count as
        // uncategorised, whatever the others said.
        let heading = match (app.blind(), facet.field) {
            (true, "category") => "category · blind: only the pairs you decided count".to_string(),
            _ => facet.field.to_string(),
        };
        lines.push(Line::from(vec![
            Span::styled(
                format!("{:<w$}", heading, w = w.saturating_sub(22)),
                t.heading,
            ),
            Span::styled(format!("{:>10}{:>10}", "pairs", "failures"), t.dim),
        ]));
        for e in &facet.entries {
            let style = if i == panel.selected {
                t.selected
            } else {
                t.base
            };
            if i == panel.selected {
                selected_line = lines.len();
            }
            let label = text::truncate_cols(
                &format!("  {}", text::inert_line(&e.value)),
                w.saturating_sub(22),
            );
            let pad = w.saturating_sub(22).saturating_sub(text::width(&label));
            lines.push(Line::from(vec![
                Span::styled(format!("{label}{}", " ".repeat(pad)), style),
                Span::styled(format!("{:>10}", e.pairs), style),
                Span::styled(
                    format!("{:>10}  ", e.failures),
                    style.patch(if e.failures > 0 { t.fail } else { t.dim }),
                ),
            ]));
            i += 1;
        }
        lines.push(Line::default());
    }
    let h = inner.height as usize;
    let start = selected_line
        .saturating_sub(h.saturating_sub(2).max(1) / 2)
        .min(lines.len().saturating_sub(h));
    f.render_widget(
        Paragraph::new(lines.into_iter().skip(start).collect::<Vec<_>>()),
        inner,
    );
}
