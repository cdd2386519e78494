//! The effect runner: the only part of the TUI state machine that does I/O.
//!
//! It reads a pair's line to build its detail, reads record keys from the
//! run before a decision is written ([`Effect::LearnKeys`]), filters the
//! view, the facets and the summary by a query that searches the lines'
//! text ([`Effect::Filter`], [`Effect::ShowFacets`],
//! [`Effect::ShowSummary`]), writes
//! annotation changes through the store (append + fsync before the screen
//! says "saved"), each to the journal of its pair's run, and an undo only
//! while its pairs still hold its decision, and exports the view (never
//! over a run or a journal, and asking before it replaces a file). A
//! failed write leaves the change in memory, pending, and the status line
//! says so; [`retry`] tries again on every tick. Building
//! the app ([`new_app`]) and taking a reloaded index ([`replace_index`])
//! look at the disk too, so they are here.

use std::collections::HashSet;
use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::core::annotations::{
    AnnotationStore, Change, Conflict, ResolutionChange, Saved, journal_files, same_file,
};
use crate::core::index::RunIndex;
use crate::core::key::RecordKey;
use crate::core::load::follow::RunWatch;
use crate::core::suggest::suggest;
use crate::core::taxonomy::Taxonomy;

use super::app::{
    self, App, Confirm, Detail, Effect, Guard, MessageKind, OnYes, Overlay, ResolutionGuard,
};
use super::doc;
use super::listing::SortWarmup;
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
            Effect::Suspend | Effect::Reload | Effect::Redraw => outside(app, e)?,
            Effect::LearnKeys { rows, then } if rows.len() >= app.busy_at.pairs => {
                learn_keys_in_steps(app, rows, outside)?;
                let more = app::resume(app, then);
                perform(app, more, theme, outside, seen)?;
            }
            Effect::Filter
                if app.query_reads_lines() && app.index.rows.len() >= app.busy_at.pairs =>
            {
                search_in_steps(app, outside)?;
                let more = app.detail_effect();
                perform(app, more, theme, outside, seen)?;
            }
            e => {
                // Work longer than a blink is said on the status line first.
                let note = app.busy_note(&e);
                if let Some(note) = &note {
                    app.say(note.clone(), MessageKind::Busy);
                    outside(app, Effect::Redraw)?;
                }
                let more = run(app, e, theme);
                if let Some(note) = &note {
                    unsay(app, note);
                }
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
        Effect::Carry => carry(app),
        Effect::LearnKeys { rows, then } => {
            learn_keys(app, &rows);
            return app::resume(app, then);
        }
        Effect::Save {
            changes,
            label,
            guard,
        } => save(app, changes, &label, guard),
        Effect::Export {
            format,
            path,
            rows,
            overwrite,
        } => export(app, format, &path, &rows, overwrite),
        Effect::Filter => {
            app.filter_view();
            return app.detail_effect();
        }
        Effect::ShowFacets => app.show_facets(),
        Effect::ShowSummary => app.show_summary(),
        Effect::Sort { message } => return app::sorted(app, message),
        Effect::Resolve {
            changes,
            label,
            guard,
        } => resolve(app, changes, &label, guard),
        // The event loop owns the terminal and the loader: it does these
        // (see [`perform`]).
        Effect::Suspend | Effect::Reload | Effect::Redraw => {}
    }
    vec![]
}

/// The app over an index (possibly still filling) and a store, as the
/// runner starts it: the run files watched, the keys annotations need
/// learnt, the view built and, once indexing is done, the orphans found.
pub fn new_app(index: RunIndex, store: AnnotationStore, taxonomy: Taxonomy) -> App {
    let mut app = App::new(index, store, taxonomy);
    app.watch = RunWatch::new(&app.index.files);
    say_unreadable(&mut app);
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
    // The rows are new: compare them again once they are all in.
    if let Some(b) = app.baseline.as_mut() {
        b.comparison = None;
    }
    sync_keys(app);
    check_inputs(app);
    compare_baseline(app);
    app.filter_view();
    if app.index.done {
        app.find_orphans();
    }
}

/// From how many pairs the sort's warm-up is made: below, the first sort
/// ranks the strings and maps its buffers in a few milliseconds.
const SORT_WARMUP_MIN: usize = 200_000;

/// Once the run is indexed, make what its first sort would otherwise make
/// ([`SortWarmup::make_aside`]) on a thread of its own. The app takes it
/// when it is ready.
pub fn warm_sorting(app: &mut App) {
    let rows = app.index.rows.len();
    if rows < SORT_WARMUP_MIN || app.sorting_is_warm() {
        return;
    }
    // (The full chunks are shared, not copied.)
    let strings = app.index.strings().clone();
    let (send, ready) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("sort warm-up".into())
        .spawn(move || {
            let _ = send.send(SortWarmup::make_aside(&strings, rows));
        });
    // (Without a thread, the first sort makes it as before.)
    if spawned.is_ok() {
        app.await_sort_warmup(ready);
    }
}

/// Learn the record keys of new rows and of rows that annotations (this
/// triage's or another's) now name; cheap when nothing changed. Call it
/// after rows arrive or the store changes, so that `update` finds them.
pub fn sync_keys(app: &mut App) {
    app.index.resolve_keys(&app.store);
}

/// Compare the run with its baseline once its first pass is done, again
/// as a followed run grows and after a reload: it works from both indexes
/// (ids and inputs digests), reading again only the lines of matched pairs
/// whose inputs digests differ. A query naming `change:` is applied again.
pub fn compare_baseline(app: &mut App) {
    let rows = app.index.rows.len();
    let Some(b) = app.baseline.as_mut() else {
        return;
    };
    let current = b
        .comparison
        .as_ref()
        .is_some_and(|c| c.changes().len() == rows);
    if !app.index.done || current {
        return;
    }
    if let Some(store) = &b.old_store {
        b.old.resolve_keys(store);
    }
    match crate::core::compare::compare(&b.old, &app.index) {
        Ok(c) => {
            b.comparison = Some(c);
            b.failed = None;
        }
        Err(e) => {
            b.comparison = None;
            b.failed = Some(e.to_string());
            let msg = format!("cannot compare with the baseline: {e}");
            app.say(msg, MessageKind::Error);
            return;
        }
    }
    if app
        .query
        .as_ref()
        .is_some_and(|q| q.names(crate::core::query::Field::Change))
    {
        app.filter_view();
    }
    // The detail shown so far has no baseline version: load it again.
    app.detail = None;
    app.refresh_summary();
}

/// Copy the decisions carried from the baseline into this run's journal,
/// through the store's locked, fsynced append, with their provenance.
pub fn carry(app: &mut App) {
    let Some((runs, cmp)) = app.runs() else {
        return;
    };
    let plan = cmp.carry_plan(runs);
    if plan.is_empty() {
        app.say("nothing to carry", MessageKind::Info);
        return;
    }
    let changes = match crate::core::compare::Comparison::carry_changes(&mut app.index, &plan) {
        Ok(c) => c,
        Err(e) => {
            app.say(format!("NOT CARRIED: {e}"), MessageKind::Error);
            return;
        }
    };
    let files = files_of(app, changes.iter().map(|(c, _)| c.key));
    let result = app
        .store
        .carry(changes, &|k| files.get(k).cloned().unwrap_or_default());
    sync_keys(app);
    app.recount();
    app.filter_view();
    refresh_header(app);
    match result {
        Ok(_) => app.say(
            format!(
                "saved: {} carried from the baseline into {}",
                crate::core::text::plural(plan.len() as u64, "decision", "decisions"),
                app.store.path().display()
            ),
            MessageKind::Saved,
        ),
        Err(e) => app.say(format!("NOT SAVED: {e}"), MessageKind::Error),
    }
}

/// Once the run's first pass is done, and whenever a followed run grows,
/// check the inputs of its cases (seed 000, section 7: mixed policies,
/// regenerated repetitions) from what the first pass kept; the warnings
/// join the run's problems.
pub fn check_inputs(app: &mut App) {
    if app.index.done {
        app.index.check_inputs();
    }
}

/// Learn the record keys of `rows` (read from their lines) before
/// annotating them; says how many lines could not be read again.
pub fn learn_keys(app: &mut App, rows: &[u32]) {
    let failed = app.index.ensure_keys(rows);
    say_unread_keys(app, failed);
}

/// Read the record keys of many rows as [`learn_keys`] does, a stretch of
/// the run at a time, saying on the status line how far it got before each
/// stretch: at ten million pairs the keys of every failure take the better
/// part of a minute to read from disk.
fn learn_keys_in_steps(app: &mut App, mut rows: Vec<u32>, outside: Outside<'_>) -> io::Result<()> {
    // Rows are numbered in file order: each step reads one stretch of the
    // run, whatever order the view shows them in.
    rows.sort_unstable();
    let total = rows.len();
    let note = format!("reading the record keys of {total} pairs from the run…");
    let step = app.busy_at.pairs.max(1);
    let mut failed = 0;
    for (k, part) in rows.chunks(step).enumerate() {
        say_progress(app, &note, k * step, "read", outside)?;
        failed += app.index.ensure_keys(part);
    }
    unsay(app, &note);
    say_unread_keys(app, failed);
    Ok(())
}

/// Filter the view by a query that searches the run's text, a stretch of
/// the run at a time, saying on the status line how far it got before each
/// stretch: at ten million pairs the search reads the whole run from disk.
fn search_in_steps(app: &mut App, outside: Outside<'_>) -> io::Result<()> {
    let step = app.busy_at.pairs.max(1);
    let mut note = String::new();
    app.filter_view_in_steps(step, |app, done, total| {
        note = format!("searching the text of {total} pairs…");
        say_progress(app, &note, done, "searched", outside)
    })?;
    if !note.is_empty() {
        unsay(app, &note);
    }
    Ok(())
}

/// Say on the status line how far work done in stretches got (the note
/// alone before the first, then "{note} {done} {verb}"), and draw.
fn say_progress(
    app: &mut App,
    note: &str,
    done: usize,
    verb: &str,
    outside: Outside<'_>,
) -> io::Result<()> {
    let text = if done == 0 {
        note.to_string()
    } else {
        format!("{note} {done} {verb}")
    };
    app.say(text, MessageKind::Busy);
    outside(app, Effect::Redraw)
}

/// Take a busy note (or a count that follows it) off the status line once
/// its work is done; a message the work said since stays.
fn unsay(app: &mut App, note: &str) {
    if app
        .message
        .as_ref()
        .is_some_and(|(m, _)| m.starts_with(note))
    {
        app.message = None;
    }
}

/// Say that `failed` rows' keys could not be read again, if any.
fn say_unread_keys(app: &mut App, failed: usize) {
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

/// The run files of the pairs with these keys, by which a save chooses
/// each change's journal. A store with one journal writes every change to
/// it and asks for none: at ten million pairs, finding them is a pass over
/// every known key.
fn files_of(
    app: &App,
    keys: impl Iterator<Item = RecordKey>,
) -> std::collections::HashMap<RecordKey, Vec<u16>> {
    if app.store.journals().len() < 2 {
        return Default::default();
    }
    let keys: HashSet<RecordKey> = keys.collect();
    app.index.files_of_keys(&keys)
}

/// Write annotation changes through the store, each to the journal of its
/// pair's run, and say what happened. An undo (or redo) whose pairs another
/// triage changed since writes nothing: the step is dropped and the
/// reviewer told who changed what.
fn save(app: &mut App, changes: Arc<Vec<Change>>, label: &str, guard: Guard) {
    let n = changes.len();
    // (Shared with the undo step, which keeps them: lent to the store, not
    // copied whole.)
    let files = files_of(app, changes.iter().map(|c| c.key));
    let route = |k: &RecordKey| files.get(k).cloned().unwrap_or_default();
    let expect = match &guard {
        Guard::None => None,
        Guard::Undo(e) | Guard::Redo(e) => Some(e.as_slice()),
    };
    match app.store.save(changes.as_slice(), &route, expect) {
        Ok(Saved::Done(_)) => {
            let text = if n > 1 && !label.contains(&n.to_string()) {
                format!("saved: {label} ({n} pairs)")
            } else {
                format!("saved: {label}")
            };
            app.say(text, MessageKind::Saved);
        }
        Ok(Saved::Conflict(conflicts)) => {
            let what = drop_unapplied(app, matches!(guard, Guard::Redo(_)));
            app.say(
                format!("{what}: {}", conflict_text(&conflicts, n)),
                MessageKind::Error,
            );
        }
        Err(e) => app.say(format!("NOT SAVED: {e}"), MessageKind::Error),
    }
    sync_keys(app);
    refresh_header(app);
    // The view keeps just-classified pairs until it is rebuilt, so a
    // pair never vanishes from under the cursor.
    app.recount();
}

/// An undo (or, with `redo`, a redo) that did not apply: the step it moved
/// to the other stack is dropped, and what was not done is named.
fn drop_unapplied(app: &mut App, redo: bool) -> &'static str {
    if redo {
        app.undo.pop();
        "NOT REDONE"
    } else {
        app.redo.pop();
        "NOT UNDONE"
    }
}

/// Record resolutions through the store, each to the journal of its
/// pair's run, and say what happened; an undo (or redo) whose pairs got
/// another resolution since writes nothing, as [`save`].
fn resolve(app: &mut App, changes: Vec<ResolutionChange>, label: &str, guard: ResolutionGuard) {
    let n = changes.len();
    let files = files_of(app, changes.iter().map(|c| c.change.key));
    let route = |k: &RecordKey| files.get(k).cloned().unwrap_or_default();
    let expect = match &guard {
        ResolutionGuard::None => None,
        ResolutionGuard::Undo(e) | ResolutionGuard::Redo(e) => Some(e.as_slice()),
    };
    match app.store.save_resolutions(changes, &route, expect) {
        Ok(Saved::Done(_)) => app.say(format!("saved: {label}"), MessageKind::Saved),
        Ok(Saved::Conflict(conflicts)) => {
            let what = drop_unapplied(app, matches!(guard, ResolutionGuard::Redo(_)));
            app.say(
                format!(
                    "{what}: {}",
                    conflict_text(&conflicts, n)
                        .replace("it is ", "it is resolved as ")
                        .replace("it has no category now", "it has no resolution now")
                ),
                MessageKind::Error,
            );
        }
        Err(e) => app.say(format!("NOT SAVED: {e}"), MessageKind::Error),
    }
    sync_keys(app);
    refresh_header(app);
    app.recount();
}

/// Which pairs another triage changed since, in words.
fn conflict_text(conflicts: &[Conflict], of: usize) -> String {
    let first = &conflicts[0];
    let now = match &first.now {
        Some(a) => format!(
            "it is {} now, by {}",
            a.category.as_deref().unwrap_or("a note only"),
            if a.reviewer.is_empty() {
                "another reviewer"
            } else {
                &a.reviewer
            }
        ),
        None => "it has no category now".to_string(),
    };
    let who = format!("{} / {}", first.case_id, first.variant_id);
    let head = if conflicts.len() == 1 && of == 1 {
        format!("{who} was changed by someone else since ({now})")
    } else {
        format!(
            "{} of the {of} pairs were changed by someone else since (first {who}: {now})",
            conflicts.len()
        )
    };
    format!("{head}; nothing was changed and that step is dropped")
}

/// Say once, at start, which journal lines could not be read and where
/// they are now (the problems panel lists them).
fn say_unreadable(app: &mut App) {
    let (lines, _) = app.store.unreadable();
    let Some(first) = lines.first() else {
        return;
    };
    let n = lines.len();
    let what = format!(
        "{n} unreadable journal {}",
        if n == 1 { "line" } else { "lines" }
    );
    let text = match &first.moved_to {
        Some(side) => format!(
            "{what} moved to {} — the problems panel lists them",
            side.display()
        ),
        None => format!(
            "{what} kept in {} — the problems panel lists them",
            first.journal.display()
        ),
    };
    app.say(text, MessageKind::Error);
}

/// Why the export prompt may not write to `target`: it is a run that is
/// open (the user's file, also when the index reads a converted copy of
/// it), a journal, or one of a journal's own files.
fn refused(app: &App, target: &Path) -> Option<String> {
    for f in &app.index.files {
        if same_file(&f.path, target) {
            return Some("that path is a run that is open, which triage never overwrites".into());
        }
    }
    for (journal, _) in app.store.journals() {
        for owned in journal_files(journal) {
            if same_file(&owned, target) {
                return Some(if owned == journal {
                    "that path is the annotation journal; choose another path".into()
                } else {
                    "that path is one of the annotation journal's files; choose another path".into()
                });
            }
        }
    }
    None
}

/// Write the pairs in view with the same code as `triage export` and say
/// what happened: through a temp file and a rename, or straight into a
/// device or a pipe (never renamed over). A file that exists is replaced
/// only once the reviewer said yes.
fn export(
    app: &mut App,
    format: crate::core::export::Format,
    path: &str,
    rows: &[u32],
    overwrite: bool,
) {
    use crate::core::export::{ExportInput, ExportOptions, write};
    let target = Path::new(path);
    let shown = crate::core::text::inert_line(path);
    if let Some(why) = refused(app, target) {
        app.say(format!("NOT EXPORTED: {why}"), MessageKind::Error);
        return;
    }
    let existing = std::fs::metadata(target).ok();
    if existing.as_ref().is_some_and(|m| m.is_dir()) {
        app.say(
            format!("NOT EXPORTED: {shown} is a folder; give a file name"),
            MessageKind::Error,
        );
        return;
    }
    let regular = existing.as_ref().is_none_or(|m| m.is_file());
    if existing.is_some() && regular && !overwrite {
        app.overlay = Overlay::Confirm(Confirm {
            question: format!("{shown} exists. Replace it with this {format} export?"),
            on_yes: OnYes::Export {
                format,
                path: path.to_string(),
                rows: rows.to_vec(),
            },
        });
        return;
    }
    let input = ExportInput {
        index: &app.index,
        store: Some(&app.store),
        taxonomy: &app.taxonomy,
        baseline: None,
    };
    let opts = ExportOptions {
        all: true,
        ..ExportOptions::default()
    };
    let result = if regular {
        let dir = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        tempfile::NamedTempFile::new_in(dir).and_then(|mut tmp| {
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
        })
    } else {
        // A device or a pipe: written in place; a full device fails here.
        std::fs::OpenOptions::new()
            .write(true)
            .open(target)
            .and_then(|f| {
                let mut w = std::io::BufWriter::new(f);
                write(&input, rows, format, &opts, &mut w)?;
                std::io::Write::flush(&mut w)
            })
    };
    match result {
        Ok(()) => app.say(
            format!(
                "exported {} {} to {shown} ({format}){}",
                rows.len(),
                if rows.len() == 1 { "pair" } else { "pairs" },
                if app.blind() {
                    "; blind review: only the pairs you decided carry decisions and suggestions"
                } else {
                    ""
                },
            ),
            MessageKind::Saved,
        ),
        Err(e) => app.say(format!("NOT EXPORTED to {shown}: {e}"), MessageKind::Error),
    }
}

/// Load and derive the pair at `row`, and build its document for the pane.
pub fn load_detail(app: &mut App, row: u32, theme: &Theme) {
    if app.index.rows.get(row as usize).is_none() {
        return;
    }
    let pair = Arc::new(app.index.load_pair(row as usize).map_err(|e| e.to_string()));
    // The baseline's version of the pair, for the decision strip.
    let old = app.baseline.as_ref().and_then(|b| {
        let m = b.comparison.as_ref()?.old_row(row)?;
        b.old.rows.get(m as usize)?;
        Some(Arc::new(
            b.old.load_pair(m as usize).map_err(|e| e.to_string()),
        ))
    });
    let suggestion = pair
        .as_ref()
        .as_ref()
        .ok()
        .and_then(|p| suggest(&p.record, &p.derived));
    let doc = doc::build_compared(
        Arc::clone(&pair),
        old.clone(),
        app.viewport.detail_cols,
        theme,
    );
    // Lay out the mode on screen now; the others wait until they are shown.
    let _ = doc.lines(app.detail_mode);
    let mut detail = Detail {
        row,
        pair,
        old,
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
        d.doc = doc::build_compared(
            Arc::clone(&d.pair),
            d.old.clone(),
            app.viewport.detail_cols,
            theme,
        );
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
