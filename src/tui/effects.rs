//! The effect runner: the only part of the TUI state machine that does I/O.
//!
//! It reads a pair's line to build its detail, reads record keys from the
//! run before a decision is written ([`Effect::LearnKeys`]), filters the
//! view, the facets and the summary by a query that searches the lines'
//! text ([`Effect::Filter`], [`Effect::ShowFacets`],
//! [`Effect::ShowSummary`]), and writes
//! annotation changes through the store (append + fsync before the screen
//! says "saved"). A failed write leaves the change in memory, pending, and
//! the status line says so; [`retry`] tries again on every tick. Building
//! the app ([`new_app`]) and taking a reloaded index ([`replace_index`])
//! look at the disk too, so they are here.

use std::io;
use std::sync::Arc;

use crate::core::annotations::AnnotationStore;
use crate::core::index::RunIndex;
use crate::core::load::follow::RunWatch;
use crate::core::suggest::suggest;
use crate::core::taxonomy::Taxonomy;

use super::app::{self, App, Detail, Effect, MessageKind};
use super::doc;
use super::style::Theme;
use super::ui;

/// What [`perform`] hands to its caller: suspending and reloading, which
/// need the terminal and the loader the event loop owns.
pub type Outside<'a> = &'a mut dyn FnMut(&mut App, Effect) -> io::Result<()>;

/// Perform effects and the work they lead to, in order: each effect is
/// shown to `seen` (but [`Effect::LearnKeys`], which is shown as the work it
/// leads to), then run here, or handed to `outside` when it suspends or
/// reloads.
pub fn perform(
    app: &mut App,
    work: Vec<Effect>,
    theme: &Theme,
    outside: Outside<'_>,
    seen: &mut dyn FnMut(&Effect),
) -> io::Result<()> {
    for e in work {
        if !matches!(e, Effect::LearnKeys { .. }) {
            seen(&e);
        }
        match e {
            Effect::Suspend | Effect::Reload => outside(app, e)?,
            e => {
                let more = run(app, e, theme);
                perform(app, more, theme, outside, seen)?;
            }
        }
    }
    Ok(())
}

/// Perform one effect, and return the work it leads to (the effects of an
/// action applied again once its record keys were read), which the caller
/// performs the same way. Suspension and reloading are the caller's (it
/// owns the terminal and the loader).
#[must_use]
pub fn run(app: &mut App, effect: Effect, theme: &Theme) -> Vec<Effect> {
    match effect {
        Effect::LoadDetail(row) => load_detail(app, row, theme),
        Effect::LearnKeys { rows, then } => {
            learn_keys(app, &rows);
            return app::resume(app, then);
        }
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
            sync_keys(app);
            refresh_header(app);
            // The view keeps just-classified pairs until it is rebuilt, so a
            // pair never vanishes from under the cursor.
            app.recount();
        }
        Effect::Export { format, path, rows } => export(app, format, &path, &rows),
        Effect::Filter => {
            app.filter_view();
            return app.detail_effect();
        }
        Effect::ShowFacets => app.show_facets(),
        Effect::ShowSummary => app.show_summary(),
        // The event loop owns the terminal and the loader: it does these
        // (see [`perform`]).
        Effect::Suspend | Effect::Reload => {}
    }
    vec![]
}

/// The app over an index (possibly still filling) and a store, as the
/// runner starts it: the run files watched, the keys annotations need
/// learnt, the view built and, once indexing is done, the orphans found.
pub fn new_app(index: RunIndex, store: AnnotationStore, taxonomy: Taxonomy) -> App {
    let mut app = App::new(index, store, taxonomy);
    app.watch = RunWatch::new(&app.index.files);
    sync_keys(&mut app);
    app.filter_view();
    if app.index.done {
        app.find_orphans();
    }
    app
}

/// Show a run indexed again from disk: the view starts over, while the
/// annotations, query, sort and grouping stay (annotations re-attach by
/// record key).
pub fn replace_index(app: &mut App, index: RunIndex) {
    let watch = RunWatch::new(&index.files);
    app.reset_index(index, watch);
    sync_keys(app);
    check_inputs(app);
    app.filter_view();
    if app.index.done {
        app.find_orphans();
    }
}

/// Learn the record keys of new rows and of rows that annotations (this
/// triage's or another's) now name; cheap when nothing changed. Call it
/// after rows arrive or the store changes, so that `update` finds them.
pub fn sync_keys(app: &mut App) {
    app.index.resolve_keys(&app.store);
}

/// Once the run's first pass is done, and whenever a followed run grows,
/// check the inputs of its cases (seed 000, section 7: mixed policies,
/// regenerated repetitions), which reads the lines of repeated trials
/// once each; the warnings join the run's problems.
pub fn check_inputs(app: &mut App) {
    if app.index.done {
        app.index.check_inputs();
    }
}

/// Learn the record keys of `rows` (read from their lines) before
/// annotating them; says how many lines could not be read again.
pub fn learn_keys(app: &mut App, rows: &[u32]) {
    let failed = app.index.ensure_keys(rows);
    if failed > 0 {
        app.say(
            format!(
                "{failed} {} could not be read again (the file changed on disk) and {} left as they were — press R to reload the run",
                if failed == 1 { "pair" } else { "pairs" },
                if failed == 1 { "was" } else { "were" },
            ),
            MessageKind::Error,
        );
    }
}

/// Compute the detail's triage lines again (after annotations changed),
/// so paging leaves room for what the pane shows above the document.
pub fn refresh_header(app: &mut App) {
    if let Some(d) = &app.detail {
        let header = ui::detail_header(app, d);
        if let Some(d) = &mut app.detail {
            d.header = header;
        }
    }
}

/// Write the pairs in view with the same code as `triage export`, through a
/// temp file and a rename, and say what happened.
fn export(app: &mut App, format: crate::core::export::Format, path: &str, rows: &[u32]) {
    use crate::core::export::{ExportInput, ExportOptions, write};
    let target = std::path::Path::new(path);
    let is_run = app.index.files.iter().any(|f| {
        std::fs::canonicalize(&f.path)
            .ok()
            .is_some_and(|a| std::fs::canonicalize(target).ok() == Some(a))
    });
    if is_run {
        app.say(
            "NOT EXPORTED: that path is the run file, which triage never overwrites",
            MessageKind::Error,
        );
        return;
    }
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let input = ExportInput {
        index: &app.index,
        store: Some(&app.store),
        taxonomy: &app.taxonomy,
    };
    let opts = ExportOptions {
        all: true,
        ..ExportOptions::default()
    };
    let result = tempfile::NamedTempFile::new_in(dir).and_then(|mut tmp| {
        {
            let mut w = std::io::BufWriter::new(tmp.as_file_mut());
            write(&input, rows, format, &opts, &mut w)?;
            std::io::Write::flush(&mut w)?;
        }
        tmp.as_file().sync_all()?;
        // A report is for sharing: the usual file mode, not the temp file's 0600.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644))?;
        }
        tmp.persist(target).map_err(|e| e.error)?;
        Ok(())
    });
    match result {
        Ok(()) => app.say(
            format!(
                "exported {} {} to {} ({format})",
                rows.len(),
                if rows.len() == 1 { "pair" } else { "pairs" },
                crate::core::text::inert_line(path)
            ),
            MessageKind::Saved,
        ),
        Err(e) => app.say(
            format!(
                "NOT EXPORTED to {}: {e}",
                crate::core::text::inert_line(path)
            ),
            MessageKind::Error,
        ),
    }
}

/// Load and derive the pair at `row`, and build its document for the pane.
pub fn load_detail(app: &mut App, row: u32, theme: &Theme) {
    let Some(r) = app.index.rows.get(row as usize).copied() else {
        return;
    };
    let pair = Arc::new(app.index.load_pair(&r).map_err(|e| e.to_string()));
    let suggestion = pair
        .as_ref()
        .as_ref()
        .ok()
        .and_then(|p| suggest(&p.record, &p.derived));
    let doc = doc::build(Arc::clone(&pair), app.viewport.detail_cols, theme);
    // Lay out the mode on screen now; the others wait until they are shown.
    let _ = doc.lines(app.detail_mode);
    let mut detail = Detail {
        row,
        pair,
        suggestion,
        doc,
        header: Vec::new(),
    };
    detail.header = ui::detail_header(app, &detail);
    app.detail = Some(detail);
}

/// Rebuild the detail document after the pane changed width.
pub fn relayout(app: &mut App, theme: &Theme) {
    if let Some(d) = &mut app.detail {
        d.doc = doc::build(Arc::clone(&d.pair), app.viewport.detail_cols, theme);
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
