//! Building an [`App`] the way the runner does, without a terminal.
//!
//! For tests, screenshots and benchmarks: [`app_for`] loads a run fully,
//! opens the annotation journal, builds the app with the default taxonomy,
//! sizes its viewport for a terminal of a given size ([`ui::viewport`], as
//! [`crate::tui::run`] does each loop) and loads the detail of the first
//! pair. [`run_effects`], [`resize`] and [`settle`] then do what the runner
//! does after each key.

use std::path::Path;

use ratatui::layout::Rect;

use crate::core::annotations::AnnotationStore;
use crate::core::index::{OpenOptions, load_run};
use crate::core::taxonomy::Taxonomy;

use super::app::{App, Effect, Viewport};
use super::effects;
use super::style::Theme;
use super::ui;

/// The terminal size [`app_for`] assumes.
pub const DEFAULT_SIZE: (u16, u16) = (120, 40);

/// An app over `paths` (fully indexed) with its journal at `journal`, sized
/// for a 120×40 terminal, with the first pair's detail loaded (dark theme).
///
/// Panics with the reason if the run or the journal cannot be opened: this
/// is for tests and tools, where that is a broken fixture.
pub fn app_for(paths: &[&str], journal: &Path, reviewer: &str) -> App {
    let (w, h) = DEFAULT_SIZE;
    app_for_size(paths, journal, reviewer, w, h, &Theme::dark())
}

/// Like [`app_for`], for a `width`×`height` terminal and a given theme.
pub fn app_for_size(
    paths: &[&str],
    journal: &Path,
    reviewer: &str,
    width: u16,
    height: u16,
    theme: &Theme,
) -> App {
    let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
    let index = load_run(&paths, &OpenOptions::default())
        .unwrap_or_else(|e| panic!("cannot load {paths:?}: {e}"));
    let store = AnnotationStore::open(journal, reviewer)
        .unwrap_or_else(|e| panic!("cannot open the journal {}: {e}", journal.display()));
    let mut app = effects::new_app(index, store, Taxonomy::default());
    resize(&mut app, width, height, theme);
    settle(&mut app, theme);
    app
}

/// Compare the app's run with `old` (fully indexed, its journal at
/// `old_journal` or beside it, read-only), as `triage NEW --baseline OLD`
/// does, then settle the screen.
///
/// Panics with the reason if the baseline cannot be opened or compared.
pub fn with_baseline(app: &mut App, old: &str, old_journal: Option<&Path>, theme: &Theme) {
    let index = load_run(&[old.to_string()], &OpenOptions::default())
        .unwrap_or_else(|e| panic!("cannot load {old}: {e}"));
    let journal = old_journal
        .map(Path::to_path_buf)
        .unwrap_or_else(|| Path::new(&format!("{old}.triage.jsonl")).to_path_buf());
    let store = journal
        .exists()
        .then(|| AnnotationStore::read(&journal))
        .transpose()
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", journal.display()));
    app.baseline = Some(Box::new(super::app::baseline::Baseline::new(index, store)));
    effects::compare_baseline(app);
    if let Some(why) = app.baseline.as_ref().and_then(|b| b.failed.clone()) {
        panic!("cannot compare with {old}: {why}");
    }
    settle(app, theme);
}

/// The viewport the runner computes for a `width`×`height` terminal with
/// the app's current focus (small screens show only the focused pane).
pub fn viewport_for(app: &App, width: u16, height: u16) -> Viewport {
    ui::viewport(Rect::new(0, 0, width, height), app)
}

/// Size the app for a `width`×`height` terminal, rebuilding the detail
/// document if the pane's width changed, as the runner does before each
/// draw. Call it again after a change of focus.
pub fn resize(app: &mut App, width: u16, height: u16, theme: &Theme) {
    let vp = viewport_for(app, width, height);
    if vp != app.viewport {
        let relayout = vp.detail_cols != app.viewport.detail_cols;
        app.set_viewport(vp);
        if relayout {
            effects::relayout(app, theme);
        }
    }
}

/// Load the detail the selection needs, as the runner does before each draw.
pub fn settle(app: &mut App, theme: &Theme) {
    let load = app.detail_effect();
    perform(app, load, theme);
}

/// Perform effects as the runner does (suspension and reloading are
/// ignored), then settle. Returns the effects performed, each
/// [`Effect::LearnKeys`] replaced by the work it led to: what the action
/// asked for once the keys of its pairs were read.
pub fn run_effects(app: &mut App, work: Vec<Effect>, theme: &Theme) -> Vec<Effect> {
    let done = perform(app, work, theme);
    settle(app, theme);
    done
}

/// Perform effects as the runner does, suspension and reloading ignored;
/// the effects done.
fn perform(app: &mut App, work: Vec<Effect>, theme: &Theme) -> Vec<Effect> {
    let mut done = Vec::new();
    let result = effects::perform(app, work, theme, &mut |_, _| Ok(()), &mut |e| {
        done.push(e.clone())
    });
    debug_assert!(result.is_ok(), "nothing here fails");
    done
}
