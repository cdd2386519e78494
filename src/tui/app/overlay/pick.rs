//! "Classify every pair in view": the picker waits for a category key,
//! then asks [`super::confirm`] before writing anything.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::core::annotations::{AnnotationSource, Change, Name};
use crate::tui::action::Action;
use crate::tui::app::{App, Effect, KeyUse, MessageKind, Overlay};
use crate::tui::popup::{centered, frame};
use crate::tui::style::{Theme, inert_spans};

use super::confirm::{Confirm, OnYes};

/// Apply an action while the picker is open: a category key asks to
/// confirm, esc cancels.
pub fn handle(app: &mut App, action: Action, keys: KeyUse) -> Vec<Effect> {
    let Overlay::PickCategory { rows, resolve } = &app.overlay else {
        return vec![];
    };
    let resolve = *resolve;
    match action {
        Action::Classify(key) => {
            let Some(cat) = app.taxonomy.by_key(key).cloned() else {
                return vec![];
            };
            let rows = rows.clone();
            let category = Some(Name::new(&cat.id));
            if resolve {
                app.overlay = Overlay::None;
                let changes: Vec<Change> = rows
                    .iter()
                    .filter_map(|&r| app.change_for(r, category, AnnotationSource::Manual))
                    .collect();
                return vec![app.resolve(changes, format!("resolved as {}", cat.id))];
            }
            if let Some(learn) = app.keys_needed(&rows, keys, action) {
                return vec![learn];
            }
            let changes: Vec<Change> = rows
                .iter()
                .filter_map(|&r| app.change_for(r, category, AnnotationSource::Manual))
                .collect();
            app.overlay = Overlay::Confirm(Confirm {
                question: format!(
                    "Give {} {} in view the category “{}”?",
                    changes.len(),
                    if changes.len() == 1 { "pair" } else { "pairs" },
                    cat.name
                ),
                on_yes: OnYes::Save {
                    label: format!("classified {} pairs as {}", changes.len(), cat.id),
                    changes,
                },
            });
        }
        Action::Close | Action::Cancel | Action::Quit => {
            app.overlay = Overlay::None;
            app.say("cancelled; nothing changed", MessageKind::Info);
        }
        _ => {}
    }
    vec![]
}

/// The category picker for "classify every pair in view".
pub fn draw(f: &mut Frame, area: Rect, app: &App, n: usize, resolve: bool, t: &Theme) {
    let h = app.taxonomy.categories.len() as u16 + 4;
    let r = centered(area, 64, h);
    f.render_widget(Clear, r);
    let block = frame(
        if resolve {
            "resolve the disagreement"
        } else {
            "classify the view"
        },
        t,
    );
    let inner = block.inner(r);
    f.render_widget(block, r);
    let mut lines = vec![Line::from(Span::styled(
        if resolve {
            "Pick the category the pair is settled on (esc cancels):".to_string()
        } else {
            format!("Pick the category for all {n} pairs in view (esc cancels):")
        },
        t.base,
    ))];
    for c in &app.taxonomy.categories {
        let key = c.key.map(|k| k.to_string()).unwrap_or_else(|| "·".into());
        let mut l = vec![Span::styled(format!("  {key}  "), t.key)];
        l.extend(inert_spans(&c.name, t.category, t));
        lines.push(Line::from(l));
    }
    f.render_widget(Paragraph::new(lines), inner);
}
