//! The effect runner: the only part of the TUI state machine that does I/O.
//!
//! It reads a pair's line to build its detail, and writes annotation changes
//! through the store (append + fsync before the screen says "saved"). A
//! failed write leaves the change in memory, pending, and the status line
//! says so; [`retry`] tries again on every tick.

use crate::core::suggest::suggest;

use super::app::{App, Detail, Effect, MessageKind};
use super::doc;
use super::style::Theme;

/// Perform one effect. Suspension is the caller's (it owns the terminal).
pub fn run(app: &mut App, effect: Effect, theme: &Theme) {
    match effect {
        Effect::LoadDetail(row) => load_detail(app, row, theme),
        Effect::Save { changes, label } => {
            let n = changes.len();
            match app.store.apply(changes) {
                Ok(_) => {
                    let text = if n > 1 && !label.contains(&n.to_string()) {
                        format!("saved: {label} ({n} pairs)")
                    } else {
                        format!("saved: {label}")
                    };
                    app.say(text, MessageKind::Saved);
                }
                Err(e) => app.say(format!("NOT SAVED: {e}"), MessageKind::Error),
            }
            // The view keeps just-classified pairs until it is rebuilt, so a
            // pair never vanishes from under the cursor.
            app.recount();
        }
        Effect::Suspend => {}
    }
}

/// Load and derive the pair at `row`, and build its document for the pane.
pub fn load_detail(app: &mut App, row: u32, theme: &Theme) {
    let Some(r) = app.index.rows.get(row as usize).copied() else {
        return;
    };
    let pair = app.index.load_pair(&r);
    let suggestion = pair
        .as_ref()
        .ok()
        .and_then(|p| suggest(&p.record, &p.derived));
    let doc = doc::build(&pair, app.viewport.detail_cols, theme);
    app.detail = Some(Detail {
        row,
        pair,
        suggestion,
        doc,
    });
}

/// Rebuild the detail document after the pane changed width.
pub fn relayout(app: &mut App, theme: &Theme) {
    if let Some(d) = &mut app.detail {
        d.doc = doc::build(&d.pair, app.viewport.detail_cols, theme);
    }
}

/// Retry pending annotation writes; report the outcome once.
pub fn retry(app: &mut App) {
    if app.store.pending() == 0 {
        return;
    }
    match app.store.retry_pending() {
        Ok(()) => app.say(
            "saved: pending decisions are on disk now",
            MessageKind::Saved,
        ),
        Err(e) => app.say(format!("NOT SAVED: {e}"), MessageKind::Error),
    }
}
