//! The effect runner: the only part of the TUI state machine that does I/O.
//!
//! It reads a pair's line to build its detail, and writes annotation changes
//! through the store (append + fsync before the screen says "saved"). A
//! failed write leaves the change in memory, pending, and the status line
//! says so; [`retry`] tries again on every tick.

use std::sync::Arc;

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
        Effect::Export { format, path, rows } => export(app, format, &path, &rows),
        // The event loop owns the terminal and the loader: it does these.
        Effect::Suspend | Effect::Reload => {}
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
