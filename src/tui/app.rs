//! The application state and `update`, the only place it changes.
//!
//! [`App`] is plain data: the run index, the current view (row indices),
//! selection, focus, overlays, marks, undo history and messages. [`update`]
//! applies one [`Action`] (or a typed key in the note editor) and returns the
//! [`Effect`]s it needs — loading a pair's detail or saving annotations —
//! which [`crate::tui::effects`] performs. No I/O happens here, so every
//! behaviour is testable without a terminal.

use std::collections::HashSet;

use crate::core::annotations::{Annotation, AnnotationSource, AnnotationStore, Change};
use crate::core::index::LoadedPair;
use crate::core::index::RunIndex;
use crate::core::load::follow::{RunChange, RunWatch};
use crate::core::row::PairRow;
use crate::core::suggest::Suggestion;
use crate::core::taxonomy::Taxonomy;

use super::action::Action;
use super::doc::DetailDoc;
use super::input::{Jump, JumpTarget, LineInput};
use super::listing::{Item, Ranks, Sort, build_items, sort_rows_with};
use super::note::NoteEditor;
use crate::core::query::{self, Query, QueryError};

/// Which pane has the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    List,
    Detail,
}

/// How the detail pane shows the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetailMode {
    Unified,
    SideBySide,
    Raw,
}

/// A bulk change waiting for the reviewer's y/n.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirm {
    pub question: String,
    pub changes: Vec<Change>,
    pub label: String,
}

/// What is drawn over the main screen and takes the keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    None,
    Help {
        scroll: u16,
    },
    Problems {
        scroll: u16,
    },
    Note(NoteEditor),
    Confirm(Confirm),
    /// "Classify every pair in view": waiting for the category key.
    PickCategory {
        rows: Vec<u32>,
    },
    /// The fuzzy jump to a case or pair.
    Jump(Jump),
    /// The query bar, live: the list follows every keystroke.
    Query(QueryBar),
    /// Facet counts; choosing one adds it to the query.
    Facets(FacetsPanel),
    /// The summary statistics of the view.
    Summary(Box<SummaryView>),
    /// Export the pairs in view: the format and the path.
    Export(ExportPrompt),
}

/// The export prompt: which format, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportPrompt {
    pub format: crate::core::export::Format,
    pub path: LineInput,
    /// Whether the path still is the suggested one (it follows the format).
    pub suggested: bool,
}

impl ExportPrompt {
    /// The suggested path for a format, beside the run.
    pub fn suggest(run: &str, format: crate::core::export::Format) -> String {
        let base = std::path::Path::new(run);
        let stem = base
            .file_name()
            .map(|n| {
                n.to_string_lossy()
                    .trim_end_matches(".gz")
                    .trim_end_matches(".jsonl")
                    .trim_end_matches(".json")
                    .trim_end_matches(".eval")
                    .to_string()
            })
            .filter(|s| !s.is_empty() && run != "stdin")
            .unwrap_or_else(|| "triage".to_string());
        let name = match format {
            crate::core::export::Format::Markdown => format!("{stem}.report.md"),
            crate::core::export::Format::Fixtures => format!("{stem}.fixtures.jsonl"),
            f => format!("{stem}.triage.{}", f.extension()),
        };
        match base
            .parent()
            .filter(|p| !p.as_os_str().is_empty() && run != "stdin")
        {
            Some(dir) => dir.join(name).to_string_lossy().to_string(),
            None => name,
        }
    }
}

/// What the summary screen shows, computed when it opens.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryView {
    pub by_transformation: crate::core::stats::Summary,
    pub by_family: crate::core::stats::Summary,
    pub conclusion: Vec<String>,
    /// The query it covers, as text.
    pub query: Option<String>,
    pub scroll: u16,
}

impl Eq for SummaryView {}

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

/// The query being typed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryBar {
    pub input: LineInput,
    /// The syntax error of the current text, if any (the list keeps the last valid query).
    pub error: Option<QueryError>,
    /// Where Up/Down is in the history (None: the text being typed).
    pub history_pos: Option<usize>,
    /// The text typed before browsing the history.
    pub draft: String,
    /// The text parses but searches every pair's line on a large run: it is
    /// applied on Enter, not on each key (the list keeps the last query).
    pub waiting: bool,
}

/// On runs with more pairs than this, a query that searches text (a bare
/// word or a phrase: every line is read again) waits for Enter instead of
/// running on each key, so typing stays instant.
pub const LIVE_TEXT_MAX_PAIRS: usize = 20_000;

/// How a message in the status line should look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    Info,
    Saved,
    Error,
}

/// One undoable step: what to write to go back, and to go forward again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoStep {
    pub before: Vec<Change>,
    pub after: Vec<Change>,
    pub label: String,
}

/// Work for the effect runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Read and derive the pair at this row, and build its detail document.
    LoadDetail(u32),
    /// Write the pairs in view in a format to a path.
    Export {
        format: crate::core::export::Format,
        path: String,
        rows: Vec<u32>,
    },
    /// Write annotation changes durably.
    Save { changes: Vec<Change>, label: String },
    /// Stop the process group until the shell resumes it.
    Suspend,
    /// Index the run again from disk (the event loop does it: it owns the loader).
    Reload,
}

/// How to open the run again for a reload.
#[derive(Debug, Clone)]
pub struct Reopen {
    pub paths: Vec<String>,
    pub opts: crate::core::index::OpenOptions,
}

/// The detail of the selected pair, loaded on demand.
#[derive(Debug, Clone)]
pub struct Detail {
    pub row: u32,
    pub pair: std::sync::Arc<Result<LoadedPair, String>>,
    pub suggestion: Option<Suggestion>,
    pub doc: DetailDoc,
}

/// Sizes the last frame had, so paging moves by what the reviewer sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Viewport {
    pub list_rows: usize,
    pub detail_rows: usize,
    pub detail_cols: u16,
}

impl Default for Viewport {
    fn default() -> Self {
        Viewport {
            list_rows: 10,
            detail_rows: 20,
            detail_cols: 80,
        }
    }
}

/// Everything the screen shows, as plain data.
pub struct App {
    pub index: RunIndex,
    pub store: AnnotationStore,
    pub taxonomy: Taxonomy,
    /// Indices into `index.rows` of the pairs in view, in order.
    pub view: Vec<u32>,
    /// The lines of the list (pairs, or case headers and pairs); the cursor indexes these.
    pub items: Vec<Item>,
    /// Whether the list is grouped by source case.
    pub grouped: bool,
    /// Cases whose variants are hidden under their header.
    pub folded: HashSet<crate::core::row::Sym>,
    pub sort: Sort,
    /// The rank of every interned string, kept between sorts.
    ranks: Ranks,
    /// When the view was last rebuilt while the loader was still adding rows.
    last_rebuild: std::time::Instant,
    /// How many index rows the view has considered (for incremental growth).
    seen_rows: usize,
    pub show_all: bool,
    pub unclassified_only: bool,
    pub cursor: usize,
    pub list_offset: usize,
    pub focus: Focus,
    pub detail_mode: DetailMode,
    pub detail_scroll: usize,
    pub detail: Option<Detail>,
    pub overlay: Overlay,
    pub marks: HashSet<u32>,
    pub undo: Vec<UndoStep>,
    pub redo: Vec<UndoStep>,
    pub message: Option<(String, MessageKind)>,
    /// Keys typed so far of a multi-key sequence.
    pub pending_keys: String,
    /// Failures that have a category (kept up to date by [`App::recount`]).
    pub classified: usize,
    pub viewport: Viewport,
    pub quit: bool,
    /// A notice about where annotations are kept (fallback path, read-only).
    pub store_notice: Option<String>,
    /// Whether the loader is still indexing.
    pub loading: bool,
    /// Annotations whose pair is no longer in the run (found once indexing ends).
    pub orphans: Vec<Annotation>,
    /// The help filter, and whether keys are typing into it.
    pub help_search: String,
    pub help_typing: bool,
    /// The active query (the list shows only its matches).
    pub query: Option<Query>,
    /// Earlier queries, oldest first.
    pub query_history: Vec<String>,
    /// Digits typed as a count (vim keymap), and when the first came.
    pub pending_count: Option<(String, std::time::Instant)>,
    /// How the run was opened, for a reload (`None`: it cannot be reopened).
    pub reopen: Option<Reopen>,
    /// Watches the run files for truncation or replacement.
    pub watch: RunWatch,
    /// What happened to the run file on disk, shown until a reload.
    pub run_change: Option<RunChange>,
    /// Above this many pairs a text query waits for Enter ([`LIVE_TEXT_MAX_PAIRS`]).
    pub live_text_max_pairs: usize,
}

impl App {
    /// A new app over an index (possibly still filling) and a store.
    pub fn new(index: RunIndex, store: AnnotationStore, taxonomy: Taxonomy) -> App {
        let mut app = App {
            loading: !index.done,
            index,
            store,
            taxonomy,
            view: Vec::new(),
            items: Vec::new(),
            grouped: false,
            folded: HashSet::new(),
            sort: Sort::default(),
            ranks: Ranks::default(),
            last_rebuild: std::time::Instant::now(),
            seen_rows: 0,
            show_all: false,
            unclassified_only: false,
            cursor: 0,
            list_offset: 0,
            focus: Focus::List,
            detail_mode: DetailMode::Unified,
            detail_scroll: 0,
            detail: None,
            overlay: Overlay::None,
            marks: HashSet::new(),
            undo: Vec::new(),
            redo: Vec::new(),
            message: None,
            pending_keys: String::new(),
            classified: 0,
            viewport: Viewport::default(),
            quit: false,
            store_notice: None,
            orphans: Vec::new(),
            help_search: String::new(),
            help_typing: false,
            pending_count: None,
            query: None,
            query_history: Vec::new(),
            reopen: None,
            watch: RunWatch::default(),
            run_change: None,
            live_text_max_pairs: LIVE_TEXT_MAX_PAIRS,
        };
        app.watch = RunWatch::new(&app.index.files);
        app.rebuild_view();
        if app.index.done {
            app.find_orphans();
        }
        app
    }

    /// The summary of the query, over every pair it matches.
    fn summary_view(&self, scroll: u16) -> SummaryView {
        let all: Vec<u32> = (0..self.index.rows.len() as u32).collect();
        let rows = self.apply_query(all);
        let by_transformation = crate::core::stats::summarize(
            &self.index,
            &rows,
            Some(&self.store),
            crate::core::stats::GroupBy::Transformation,
        );
        let by_family = crate::core::stats::summarize(
            &self.index,
            &rows,
            Some(&self.store),
            crate::core::stats::GroupBy::Family,
        );
        let conclusion = crate::core::stats::conclusion(&self.index, &rows, &by_transformation);
        SummaryView {
            by_transformation,
            by_family,
            conclusion,
            query: self.query.as_ref().map(|q| q.to_string()),
            scroll,
        }
    }

    /// Compute an open summary again (new rows of a followed run, or
    /// decisions from another triage), keeping its scroll position.
    pub fn refresh_summary(&mut self) {
        if let Overlay::Summary(view) = &self.overlay {
            let fresh = self.summary_view(view.scroll);
            self.overlay = Overlay::Summary(Box::new(fresh));
        }
    }

    /// Whether the run is followed (`-f`): appended lines keep arriving.
    pub fn following(&self) -> bool {
        self.reopen.as_ref().is_some_and(|r| r.opts.follow)
    }

    /// Show a run indexed again from disk: the view starts over, while the
    /// annotations, query, sort and grouping stay (annotations re-attach by
    /// record key).
    pub fn replace_index(&mut self, index: RunIndex) {
        self.index = index;
        self.watch = RunWatch::new(&self.index.files);
        self.run_change = None;
        self.detail = None;
        self.detail_scroll = 0;
        self.marks.clear();
        self.folded.clear();
        self.orphans.clear();
        self.seen_rows = 0;
        self.cursor = 0;
        self.list_offset = 0;
        self.view.clear();
        self.items.clear();
        self.loading = !self.index.done;
        self.rebuild_view();
        if self.index.done {
            self.find_orphans();
        }
    }

    /// Learn the record keys of new rows and of rows that annotations
    /// (this triage's or another's) now name; cheap when nothing changed.
    pub fn sync_keys(&mut self) {
        self.index.resolve_keys(&self.store);
    }

    /// List the annotations whose pairs are gone from the run.
    pub fn find_orphans(&mut self) {
        self.sync_keys();
        // Every row an annotation could be on has a known key by now.
        let keys: HashSet<_> = self.index.known_key_set().copied().collect();
        let named = self.store.named_variants();
        let ids: HashSet<(String, String)> = self
            .index
            .rows
            .iter()
            .filter(|r| {
                self.store.names_case(self.index.str(r.case))
                    && named.contains(self.index.str(r.variant))
            })
            .map(|r| {
                (
                    self.index.str(r.case).to_string(),
                    self.index.str(r.variant).to_string(),
                )
            })
            .collect();
        self.orphans = self
            .store
            .orphans(&keys, &ids)
            .into_iter()
            .cloned()
            .collect();
    }

    /// A single pending count digit and when it was typed (a category key
    /// if no motion follows in time).
    pub fn pending_count_digit(&self) -> Option<(char, std::time::Instant)> {
        match &self.pending_count {
            Some((d, t)) if d.len() == 1 => d.chars().next().map(|c| (c, *t)),
            _ => None,
        }
    }

    /// The row under the cursor (none on a case header).
    pub fn selected_row(&self) -> Option<u32> {
        match self.items.get(self.cursor) {
            Some(Item::Pair(r)) => Some(*r),
            _ => None,
        }
    }

    /// The case header under the cursor, with the rows of its pairs.
    pub fn selected_case(&self) -> Option<(crate::core::row::Sym, &[u32])> {
        match self.items.get(self.cursor) {
            Some(Item::Case {
                case, start, len, ..
            }) => Some((*case, self.view.get(*start..*start + *len).unwrap_or(&[]))),
            _ => None,
        }
    }

    /// The annotation of a row, if it has one under its current key.
    pub fn annotation(&self, row: &PairRow) -> Option<&Annotation> {
        self.index.annotation(Some(&self.store), row)
    }

    /// An annotation made on an earlier version of this pair.
    pub fn stale_annotation(&self, row: &PairRow) -> Option<&Annotation> {
        let key = self.index.current_key(&self.store, row)?;
        if self.store.get(&key).is_some() {
            return None;
        }
        self.store
            .stale_for(self.index.str(row.case), self.index.str(row.variant), &key)
    }

    /// Whether the row has a category.
    pub fn is_classified(&self, row: &PairRow) -> bool {
        self.annotation(row).is_some_and(|a| a.category.is_some())
    }

    /// Whether the active query says which statuses it wants; then it, not
    /// the failures-only default, decides.
    fn query_picks_status(&self) -> bool {
        self.query.as_ref().is_some_and(|q| {
            q.terms().iter().any(|t| {
                matches!(&t.kind, query::TermKind::Match { field, .. } if *field == query::Field::Status)
            })
        })
    }

    /// Whether a row belongs in the view (before the query), with "every
    /// status" (all pairs shown, or the query picks statuses) decided once.
    fn in_view_with(&self, every_status: bool, row: &PairRow) -> bool {
        if !every_status && !row.status().is_failure() {
            return false;
        }
        if self.unclassified_only && (!row.status().is_failure() || self.is_classified(row)) {
            return false;
        }
        true
    }

    /// Recompute the view from scratch, keeping the selected line if it stays.
    pub fn rebuild_view(&mut self) {
        self.sync_keys();
        self.rebuild(true);
    }

    /// [`App::rebuild_view`]; `recount` counts every classified failure
    /// again (needed when annotations changed), otherwise only the rows the
    /// view had not seen yet are counted.
    fn rebuild(&mut self, recount: bool) {
        let keep_row = self.selected_row();
        let keep_case = self.selected_case().map(|(c, _)| c);
        let n = self.index.rows.len() as u32;
        let every_status = self.show_all || self.query_picks_status();
        // The old view's allocation is reused: no fresh pages per keystroke.
        let mut candidates = std::mem::take(&mut self.view);
        candidates.clear();
        if every_status && !self.unclassified_only {
            candidates.extend(0..n);
        } else if let (Some(col), false) = (self.index.statuses(), self.unclassified_only) {
            // Failures only: one byte per row to look at.
            candidates.extend((0..n).filter(|&i| col[i as usize].is_failure()));
        } else {
            candidates.extend(
                (0..n).filter(|&i| self.in_view_with(every_status, &self.index.rows[i as usize])),
            );
        }
        self.view = self.apply_query(candidates);
        if !recount {
            self.count_new_rows();
        }
        self.seen_rows = self.index.rows.len();
        sort_rows_with(
            &mut self.ranks,
            &self.index,
            &self.store,
            &mut self.view,
            self.sort,
        );
        build_items(
            &self.index,
            &mut self.view,
            self.grouped,
            &self.folded,
            &mut self.items,
        );
        self.last_rebuild = std::time::Instant::now();
        let found = self
            .items
            .iter()
            .position(|it| match (it, keep_row, keep_case) {
                (Item::Pair(r), Some(k), _) => *r == k,
                (Item::Case { case, .. }, None, Some(k)) => *case == k,
                _ => false,
            });
        let fallback = || {
            // The kept pair left the view: stay near where it was in file order.
            keep_row
                .and_then(|k| {
                    self.items
                        .iter()
                        .position(|it| matches!(it, Item::Pair(r) if *r >= k))
                })
                .unwrap_or(0)
        };
        self.cursor = found
            .unwrap_or_else(fallback)
            .min(self.items.len().saturating_sub(1));
        if recount {
            self.recount();
        }
        self.clamp_offset();
    }

    /// Count the classified failures among rows the view has not seen yet.
    fn count_new_rows(&mut self) {
        let start = self.seen_rows.min(self.index.rows.len());
        self.classified += self.index.rows[start..]
            .iter()
            .filter(|r| r.status().is_failure() && self.is_classified(r))
            .count();
    }

    /// Take in rows the loader added since the last call.
    pub fn grow_view(&mut self) {
        self.sync_keys();
        let start = self.seen_rows;
        let flat = self.sort == Sort::default() && !self.grouped;
        if flat {
            let every_status = self.show_all || self.query_picks_status();
            let fresh: Vec<u32> = (start as u32..self.index.rows.len() as u32)
                .filter(|&i| self.in_view_with(every_status, &self.index.rows[i as usize]))
                .collect();
            for r in self.apply_query(fresh) {
                self.view.push(r);
                self.items.push(Item::Pair(r));
            }
        }
        for i in start..self.index.rows.len() {
            if self.index.rows[i].status().is_failure() && self.is_classified(&self.index.rows[i]) {
                self.classified += 1;
            }
        }
        self.seen_rows = self.index.rows.len();
        // A sorted or grouped view is rebuilt as rows arrive, but not on every batch.
        if !flat
            && (self.index.done
                || self.last_rebuild.elapsed() > std::time::Duration::from_millis(500))
        {
            let classified = self.classified;
            self.rebuild_view();
            self.classified = classified;
        }
        if self.loading && self.index.done {
            self.find_orphans();
        }
        if !self.loading && start < self.index.rows.len() {
            // Lines appended to a followed run.
            self.refresh_summary();
        }
        self.loading = !self.index.done;
    }

    /// Keep the rows the active query matches.
    fn apply_query(&self, rows: Vec<u32>) -> Vec<u32> {
        match &self.query {
            Some(q) if !q.is_empty() => q.filter(
                &query::Context {
                    index: &self.index,
                    store: Some(&self.store),
                },
                &rows,
            ),
            _ => rows,
        }
    }

    /// Set (or clear, with an empty text) the active query and rebuild the view.
    pub fn set_query(&mut self, text: &str) -> Result<(), QueryError> {
        let q = query::parse(text)?;
        self.query = (!q.is_empty()).then_some(q);
        // A query changes neither the rows nor the annotations: no recount.
        self.rebuild(false);
        Ok(())
    }

    /// Count classified failures again.
    pub fn recount(&mut self) {
        self.classified = self
            .index
            .rows
            .iter()
            .filter(|r| r.status().is_failure() && self.is_classified(r))
            .count();
    }

    fn clamp_offset(&mut self) {
        let h = self.viewport.list_rows.max(1);
        if self.cursor < self.list_offset {
            self.list_offset = self.cursor;
        } else if self.cursor >= self.list_offset + h {
            self.list_offset = self.cursor + 1 - h;
        }
        let max_off = self.items.len().saturating_sub(h);
        self.list_offset = self.list_offset.min(max_off);
    }

    /// Record an undo step for `changes` and return the effect that writes them.
    pub fn save(&mut self, changes: Vec<Change>, label: String) -> Effect {
        let before = changes
            .iter()
            .map(|c| match self.store.get(&c.key) {
                Some(a) => Change {
                    key: c.key,
                    case_id: c.case_id.clone(),
                    variant_id: c.variant_id.clone(),
                    category: a.category.clone(),
                    note: a.note.clone(),
                    source: a.source,
                },
                None => Change {
                    key: c.key,
                    case_id: c.case_id.clone(),
                    variant_id: c.variant_id.clone(),
                    category: None,
                    note: None,
                    source: AnnotationSource::Manual,
                },
            })
            .collect();
        self.undo.push(UndoStep {
            before,
            after: changes.clone(),
            label: label.clone(),
        });
        self.redo.clear();
        Effect::Save { changes, label }
    }

    /// Select a jump target, unfolding its case if needed.
    pub fn jump_to(&mut self, target: JumpTarget) -> Vec<Effect> {
        let row = match target {
            JumpTarget::Case(r) | JumpTarget::Pair(r) => r,
        };
        let case = self.index.rows.get(row as usize).map(|r| r.case);
        if let (JumpTarget::Pair(_), Some(c)) = (target, case)
            && self.folded.remove(&c)
        {
            self.rebuild_view();
        }
        let pos = self.items.iter().position(|it| match (it, target) {
            (Item::Case { case: c, .. }, JumpTarget::Case(_)) => Some(*c) == case,
            (Item::Pair(r), JumpTarget::Case(_)) => !self.grouped && *r == row,
            (Item::Pair(r), JumpTarget::Pair(_)) => *r == row,
            _ => false,
        });
        match pos {
            Some(i) => {
                self.focus = Focus::List;
                self.select(i)
            }
            None => {
                self.say("that pair is not in the view any more", MessageKind::Info);
                vec![]
            }
        }
    }

    /// Take the sizes of a new frame, keeping the selection visible.
    pub fn set_viewport(&mut self, vp: Viewport) {
        self.viewport = vp;
        self.clamp_offset();
        self.scroll_detail(0);
    }

    /// Set a transient message for the status line.
    pub fn say(&mut self, text: impl Into<String>, kind: MessageKind) {
        self.message = Some((text.into(), kind));
    }

    /// The rows a triage action applies to: the marked ones, else the selected one.
    fn targets(&self) -> Vec<u32> {
        if self.marks.is_empty() {
            match self.selected_case() {
                // A case header stands for all of its pairs in view.
                Some((_, rows)) => rows.to_vec(),
                None => self.selected_row().into_iter().collect(),
            }
        } else {
            let mut v: Vec<u32> = self.marks.iter().copied().collect();
            v.sort_unstable();
            v
        }
    }

    /// Learn the record keys of `rows` (read from their lines) before
    /// annotating them; says how many lines could not be read again.
    fn ensure_keys(&mut self, rows: &[u32]) {
        let failed = self.index.ensure_keys(rows);
        if failed > 0 {
            self.say(
                format!(
                    "{failed} {} could not be read again (the file changed on disk) and {} left as they were — press R to reload the run",
                    if failed == 1 { "pair" } else { "pairs" },
                    if failed == 1 { "was" } else { "were" },
                ),
                MessageKind::Error,
            );
        }
    }

    /// A change that gives `row` this category and keeps its note; `None`
    /// when the row's key is not known (see [`App::ensure_keys`]).
    fn change_for(
        &self,
        row: u32,
        category: Option<String>,
        source: AnnotationSource,
    ) -> Option<Change> {
        let r = self.index.rows.get(row as usize)?;
        let note = self.annotation(r).and_then(|a| a.note.clone());
        Some(Change {
            key: self.index.key(r)?,
            case_id: self.index.str(r.case).to_string(),
            variant_id: self.index.str(r.variant).to_string(),
            category,
            note,
            source,
        })
    }

    /// Move the cursor to the next unclassified failure after the current one
    /// (wrapping), as a review tool does after each decision.
    fn advance_to_unclassified(&mut self, just_done: &HashSet<u32>) -> bool {
        let n = self.items.len();
        for step in 1..=n {
            let i = (self.cursor + step) % n;
            let Item::Pair(row) = self.items[i] else {
                continue;
            };
            let r = &self.index.rows[row as usize];
            if r.status().is_failure() && !self.is_classified(r) && !just_done.contains(&row) {
                self.cursor = i;
                self.clamp_offset();
                return true;
            }
        }
        false
    }

    fn select(&mut self, cursor: usize) -> Vec<Effect> {
        if self.items.is_empty() {
            self.cursor = 0;
            return vec![];
        }
        let c = cursor.min(self.items.len() - 1);
        let changed =
            c != self.cursor || self.detail.as_ref().map(|d| d.row) != self.selected_row_at(c);
        self.cursor = c;
        self.clamp_offset();
        if changed {
            self.detail_scroll = 0;
        }
        self.detail_effect()
    }

    fn selected_row_at(&self, c: usize) -> Option<u32> {
        match self.items.get(c) {
            Some(Item::Pair(r)) => Some(*r),
            _ => None,
        }
    }

    /// The load the detail pane needs now, if any.
    pub fn detail_effect(&self) -> Vec<Effect> {
        match self.selected_row() {
            Some(r) if self.detail.as_ref().map(|d| d.row) != Some(r) => {
                vec![Effect::LoadDetail(r)]
            }
            _ => vec![],
        }
    }

    fn scroll_detail(&mut self, delta: isize) {
        let len = self
            .detail
            .as_ref()
            .map(|d| d.doc.len(self.detail_mode))
            .unwrap_or(0);
        // The category, suggestion and note lines sit above the document.
        let room = self
            .viewport
            .detail_rows
            .saturating_sub(crate::tui::ui::detail_header_rows(self))
            .max(1);
        let max = len.saturating_sub(room);
        let s = self.detail_scroll as isize + delta;
        self.detail_scroll = s.clamp(0, max as isize) as usize;
    }

    fn jump_change(&mut self, forward: bool) {
        let Some(d) = &self.detail else { return };
        let anchors = d.doc.anchors(self.detail_mode);
        let cur = self.detail_scroll;
        let target = if forward {
            anchors.iter().copied().find(|&a| a > cur)
        } else {
            anchors.iter().rev().copied().find(|&a| a < cur)
        };
        match target {
            Some(t) => {
                self.detail_scroll = t;
                self.scroll_detail(0);
            }
            None => self.say(
                if forward {
                    "no further change below"
                } else {
                    "no change above"
                },
                MessageKind::Info,
            ),
        }
    }
}

/// Apply a category key (from the taxonomy) to the targets.
pub fn classify(app: &mut App, key: char) -> Vec<Effect> {
    let Some(cat) = app.taxonomy.by_key(key).cloned() else {
        return vec![];
    };
    if let Overlay::PickCategory { rows } = &app.overlay {
        let rows = rows.clone();
        app.ensure_keys(&rows);
        let changes: Vec<Change> = rows
            .iter()
            .filter_map(|&r| app.change_for(r, Some(cat.id.clone()), AnnotationSource::Manual))
            .collect();
        app.overlay = Overlay::Confirm(Confirm {
            question: format!(
                "Give {} {} in view the category “{}”?",
                changes.len(),
                if changes.len() == 1 { "pair" } else { "pairs" },
                cat.name
            ),
            label: format!("classified {} pairs as {}", changes.len(), cat.id),
            changes,
        });
        return vec![];
    }
    let targets = app.targets();
    if targets.is_empty() {
        return vec![];
    }
    app.ensure_keys(&targets);
    let changes: Vec<Change> = targets
        .iter()
        .filter_map(|&r| app.change_for(r, Some(cat.id.clone()), AnnotationSource::Manual))
        .collect();
    let label = if changes.len() == 1 {
        format!("classified as {}", cat.id)
    } else {
        format!("classified {} marked pairs as {}", changes.len(), cat.id)
    };
    let done: HashSet<u32> = targets.iter().copied().collect();
    app.marks.clear();
    let mut effects = vec![app.save(changes, label)];
    if done.len() == 1 && app.advance_to_unclassified(&done) {
        app.detail_scroll = 0;
        effects.extend(app.detail_effect());
    }
    effects
}

/// Apply one action to the state.
pub fn update(app: &mut App, action: Action) -> Vec<Effect> {
    app.sync_keys();
    // Overlays take the keys first.
    match &mut app.overlay {
        Overlay::Facets(panel) => {
            let n = panel.len();
            let page = app.viewport.detail_rows.max(3);
            match action {
                Action::ScrollDown | Action::NextPair => {
                    panel.selected = (panel.selected + 1).min(n.saturating_sub(1))
                }
                Action::ScrollUp | Action::PrevPair => {
                    panel.selected = panel.selected.saturating_sub(1)
                }
                Action::ScrollPageDown => {
                    panel.selected = (panel.selected + page).min(n.saturating_sub(1))
                }
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
                    match app.set_query(&text) {
                        Ok(()) => {
                            app.query_history.retain(|h| *h != text);
                            app.query_history.push(text);
                            app.say(
                                format!("added {term}: {} pairs match", app.view.len()),
                                MessageKind::Info,
                            );
                        }
                        Err(e) => app.say(format!("cannot add {term}: {e}"), MessageKind::Error),
                    }
                    return app.detail_effect();
                }
                Action::Close | Action::Cancel | Action::ShowFacets => app.overlay = Overlay::None,
                Action::Quit => app.quit = true,
                _ => {}
            }
            return vec![];
        }
        Overlay::Summary(v) => {
            let page = app.viewport.detail_rows.max(3) as i32;
            let s = v.scroll as i32;
            let next = match action {
                Action::ScrollDown => s + 1,
                Action::ScrollUp => s - 1,
                Action::ScrollPageDown => s + page,
                Action::ScrollPageUp => s - page,
                Action::ScrollTop => 0,
                Action::ScrollBottom => i32::from(u16::MAX) / 2,
                Action::Close | Action::Cancel | Action::ShowSummary => {
                    app.overlay = Overlay::None;
                    return vec![];
                }
                Action::Quit => {
                    app.quit = true;
                    return vec![];
                }
                _ => s,
            };
            v.scroll = next.clamp(0, i32::from(u16::MAX)) as u16;
            return vec![];
        }
        Overlay::Help { scroll } | Overlay::Problems { scroll } => {
            let page = app.viewport.detail_rows.max(3) as i32;
            let s = *scroll as i32;
            let next = match action {
                Action::ScrollDown => Some(s + 1),
                Action::ScrollUp => Some(s - 1),
                Action::ScrollPageDown => Some(s + page),
                Action::ScrollPageUp => Some(s - page),
                Action::ScrollTop => Some(0),
                Action::ScrollBottom => Some(i32::from(u16::MAX) / 2),
                _ => None,
            };
            if let Some(n) = next {
                *scroll = n.clamp(0, i32::from(u16::MAX)) as u16;
                return vec![];
            }
            match action {
                Action::SearchHelp if matches!(app.overlay, Overlay::Help { .. }) => {
                    app.help_typing = true;
                    app.help_search.clear();
                }
                Action::Close | Action::Cancel if !app.help_search.is_empty() => {
                    app.help_search.clear();
                }
                Action::Close | Action::ToggleHelp | Action::ToggleProblems | Action::Cancel => {
                    app.overlay = Overlay::None;
                }
                Action::Quit => app.quit = true,
                _ => {}
            }
            return vec![];
        }
        Overlay::Note(ed) => {
            let h = 6;
            match action {
                Action::NoteSave => {
                    let text = ed.text();
                    let targets = ed.targets.clone();
                    let changed = text != ed.original;
                    app.overlay = Overlay::None;
                    if !changed {
                        app.say("note unchanged", MessageKind::Info);
                        return vec![];
                    }
                    let note = (!text.is_empty()).then_some(text);
                    app.ensure_keys(&targets);
                    let changes: Vec<Change> = targets
                        .iter()
                        .filter_map(|&r| {
                            let row = &app.index.rows[r as usize];
                            let prev = app.annotation(row);
                            Some(Change {
                                key: app.index.key(row)?,
                                case_id: app.index.str(row.case).to_string(),
                                variant_id: app.index.str(row.variant).to_string(),
                                category: prev.and_then(|a| a.category.clone()),
                                note: note.clone(),
                                source: prev.map(|a| a.source).unwrap_or(AnnotationSource::Manual),
                            })
                        })
                        .collect();
                    let label = if note.is_some() {
                        "note saved"
                    } else {
                        "note removed"
                    };
                    return vec![app.save(changes, label.to_string())];
                }
                Action::NoteCancel | Action::Close | Action::Cancel => {
                    app.overlay = Overlay::None;
                    app.say("note discarded", MessageKind::Info);
                }
                Action::NoteNewline => ed.newline(),
                Action::NoteLeft => ed.left(),
                Action::NoteRight => ed.right(),
                Action::NoteUp => ed.up(),
                Action::NoteDown => ed.down(),
                Action::NoteWordLeft => ed.word_left(),
                Action::NoteWordRight => ed.word_right(),
                Action::NoteHome => ed.home(),
                Action::NoteEnd => ed.end(),
                Action::NoteBackspace => ed.backspace(),
                Action::NoteDelete => ed.delete(),
                Action::NoteDeleteWord => ed.delete_word(),
                Action::NoteClear => ed.clear(),
                _ => {}
            }
            if let Overlay::Note(ed) = &mut app.overlay {
                ed.scroll_to_cursor(h);
            }
            return vec![];
        }
        Overlay::Confirm(c) => {
            match action {
                Action::Confirm => {
                    let c = c.clone();
                    app.overlay = Overlay::None;
                    app.marks.clear();
                    return vec![app.save(c.changes, c.label)];
                }
                Action::Cancel | Action::Close | Action::Quit => {
                    app.overlay = Overlay::None;
                    app.say("cancelled; nothing changed", MessageKind::Info);
                }
                _ => {}
            }
            return vec![];
        }
        Overlay::PickCategory { .. } => {
            if matches!(action, Action::Close | Action::Cancel | Action::Quit) {
                app.overlay = Overlay::None;
                app.say("cancelled; nothing changed", MessageKind::Info);
            }
            return vec![];
        }
        Overlay::Export(p) => {
            match action {
                Action::CycleFormat => {
                    let all = crate::core::export::Format::ALL;
                    let i = all.iter().position(|f| *f == p.format).unwrap_or(0);
                    p.format = all[(i + 1) % all.len()];
                    if p.suggested {
                        let run = app
                            .index
                            .files
                            .first()
                            .map(|f| f.display.clone())
                            .unwrap_or_default();
                        p.path = LineInput::with(&ExportPrompt::suggest(&run, p.format));
                    }
                }
                Action::InputSubmit => {
                    let path = p.path.text.trim().to_string();
                    if path.is_empty() {
                        app.say("give a path to export to", MessageKind::Info);
                        return vec![];
                    }
                    let format = p.format;
                    app.overlay = Overlay::None;
                    return vec![Effect::Export {
                        format,
                        path,
                        rows: app.view.clone(),
                    }];
                }
                Action::InputCancel | Action::Close | Action::Cancel => {
                    app.overlay = Overlay::None;
                    app.say("export cancelled", MessageKind::Info);
                }
                other => {
                    if edit_line(&mut p.path, other) {
                        p.suggested = false;
                    }
                }
            }
            return vec![];
        }
        Overlay::Query(bar) => {
            match action {
                Action::InputSubmit => {
                    let text = bar.input.text.trim().to_string();
                    let bad = bar.error.clone();
                    if let Some(e) = bad {
                        app.say(format!("query not applied: {e}"), MessageKind::Error);
                        return vec![];
                    }
                    let waiting = bar.waiting;
                    app.overlay = Overlay::None;
                    if waiting && let Err(e) = app.set_query(&text) {
                        app.say(format!("query not applied: {e}"), MessageKind::Error);
                        return vec![];
                    }
                    if !text.is_empty() {
                        app.query_history.retain(|h| *h != text);
                        app.query_history.push(text);
                    }
                    app.say(format!("{} pairs match", app.view.len()), MessageKind::Info);
                    return app.detail_effect();
                }
                Action::InputCancel | Action::Close | Action::Cancel => {
                    app.overlay = Overlay::None;
                    app.query = None;
                    app.rebuild(false);
                    app.say("query cleared", MessageKind::Info);
                    return app.detail_effect();
                }
                Action::InputUp | Action::InputDown => {
                    let n = app.query_history.len();
                    if n == 0 {
                        return vec![];
                    }
                    let pos = match (bar.history_pos, action) {
                        (None, Action::InputUp) => {
                            bar.draft = bar.input.text.clone();
                            Some(n - 1)
                        }
                        (Some(p), Action::InputUp) => Some(p.saturating_sub(1)),
                        (Some(p), _) if p + 1 < n => Some(p + 1),
                        (Some(_), _) => None,
                        (None, _) => return vec![],
                    };
                    bar.history_pos = pos;
                    let text = match pos {
                        Some(p) => app.query_history[p].clone(),
                        None => bar.draft.clone(),
                    };
                    bar.input = LineInput::with(&text);
                    return query_changed(app);
                }
                other => {
                    if edit_line(&mut bar.input, other) {
                        return query_changed(app);
                    }
                }
            }
            return vec![];
        }
        Overlay::Jump(j) => {
            let n = j.hits.len();
            match action {
                Action::InputSubmit => {
                    let target = j.hits.get(j.selected).map(|h| h.target);
                    app.overlay = Overlay::None;
                    return match target {
                        Some(t) => app.jump_to(t),
                        None => vec![],
                    };
                }
                Action::InputCancel | Action::Close | Action::Cancel => app.overlay = Overlay::None,
                Action::InputUp => j.selected = j.selected.saturating_sub(1),
                Action::InputDown => j.selected = (j.selected + 1).min(n.saturating_sub(1)),
                other => {
                    if edit_line(&mut j.input, other) {
                        let mut j = std::mem::take(j);
                        j.refresh(&app.index, &app.view);
                        app.overlay = Overlay::Jump(j);
                    }
                }
            }
            return vec![];
        }
        Overlay::None => {}
    }

    let page = app.viewport.list_rows.max(1);
    match action {
        Action::Quit => {
            app.quit = true;
            vec![]
        }
        Action::ToggleHelp => {
            app.overlay = Overlay::Help { scroll: 0 };
            vec![]
        }
        Action::ToggleProblems => {
            app.overlay = Overlay::Problems { scroll: 0 };
            vec![]
        }
        Action::Close | Action::Cancel => {
            if app.focus == Focus::Detail {
                app.focus = Focus::List;
            } else if !app.marks.is_empty() {
                app.marks.clear();
                app.say("marks cleared", MessageKind::Info);
            }
            vec![]
        }
        Action::NextPair => app.select(app.cursor + 1),
        Action::PrevPair => app.select(app.cursor.saturating_sub(1)),
        Action::PageDown => app.select(app.cursor + page),
        Action::PageUp => app.select(app.cursor.saturating_sub(page)),
        Action::FirstPair => app.select(0),
        Action::LastPair => app.select(app.items.len().saturating_sub(1)),
        Action::CycleSort | Action::ReverseSort => {
            if action == Action::CycleSort {
                app.sort.key = app.sort.key.next();
                app.sort.descending = matches!(app.sort.key, crate::tui::listing::SortKey::Drift);
            } else {
                app.sort.descending = !app.sort.descending;
            }
            app.rebuild_view();
            app.say(
                format!(
                    "sorted by {} ({})",
                    app.sort.key.name(),
                    if app.sort.descending {
                        "descending"
                    } else {
                        "ascending"
                    }
                ),
                MessageKind::Info,
            );
            app.detail_effect()
        }
        Action::ToggleGroup => {
            app.grouped = !app.grouped;
            app.rebuild_view();
            app.say(
                if app.grouped {
                    "grouped by case"
                } else {
                    "not grouped"
                },
                MessageKind::Info,
            );
            app.detail_effect()
        }
        Action::ToggleFold => {
            let case = match app.items.get(app.cursor) {
                Some(Item::Case { case, .. }) => Some(*case),
                Some(Item::Pair(r)) if app.grouped => Some(app.index.rows[*r as usize].case),
                _ => None,
            };
            match case {
                Some(c) => {
                    if !app.folded.remove(&c) {
                        app.folded.insert(c);
                    }
                    // Land on the header of the case just folded or unfolded.
                    app.rebuild_view();
                    if let Some(i) = app
                        .items
                        .iter()
                        .position(|it| matches!(it, Item::Case { case, .. } if *case == c))
                    {
                        app.cursor = i;
                        app.clamp_offset();
                    }
                }
                None => app.say("group by case first (t) to fold", MessageKind::Info),
            }
            app.detail_effect()
        }
        Action::FoldAll => {
            if !app.grouped {
                app.grouped = true;
            }
            let all_folded = app
                .items
                .iter()
                .all(|it| matches!(it, Item::Case { folded: true, .. }));
            if all_folded {
                app.folded.clear();
            } else {
                app.folded = app
                    .view
                    .iter()
                    .map(|&r| app.index.rows[r as usize].case)
                    .collect();
            }
            app.rebuild_view();
            app.detail_effect()
        }
        Action::FocusNext => {
            app.focus = match app.focus {
                Focus::List => Focus::Detail,
                Focus::Detail => Focus::List,
            };
            vec![]
        }
        Action::ScrollDown => {
            app.scroll_detail(1);
            vec![]
        }
        Action::ScrollUp => {
            app.scroll_detail(-1);
            vec![]
        }
        Action::ScrollPageDown => {
            app.scroll_detail(app.viewport.detail_rows.max(2) as isize - 1);
            vec![]
        }
        Action::ScrollPageUp => {
            app.scroll_detail(-(app.viewport.detail_rows.max(2) as isize - 1));
            vec![]
        }
        Action::ScrollTop => {
            app.detail_scroll = 0;
            vec![]
        }
        Action::ScrollBottom => {
            app.scroll_detail(isize::MAX / 2);
            vec![]
        }
        Action::NextChange => {
            app.jump_change(true);
            vec![]
        }
        Action::PrevChange => {
            app.jump_change(false);
            vec![]
        }
        Action::ToggleAllPairs => {
            app.show_all = !app.show_all;
            app.rebuild_view();
            app.say(
                if app.show_all {
                    "showing all pairs"
                } else {
                    "showing failures only"
                },
                MessageKind::Info,
            );
            app.detail_effect()
        }
        Action::ToggleUnclassified => {
            app.unclassified_only = !app.unclassified_only;
            app.rebuild_view();
            app.say(
                if app.unclassified_only {
                    "showing unclassified failures only"
                } else {
                    "showing classified and unclassified"
                },
                MessageKind::Info,
            );
            app.detail_effect()
        }
        Action::ToggleSideBySide => {
            app.detail_mode = if app.detail_mode == DetailMode::SideBySide {
                DetailMode::Unified
            } else {
                DetailMode::SideBySide
            };
            app.detail_scroll = 0;
            vec![]
        }
        Action::ToggleRaw => {
            app.detail_mode = if app.detail_mode == DetailMode::Raw {
                DetailMode::Unified
            } else {
                DetailMode::Raw
            };
            app.detail_scroll = 0;
            vec![]
        }
        Action::ClearCategory => {
            let targets = app.targets();
            let changes: Vec<Change> = targets
                .iter()
                .filter(|&&r| app.is_classified(&app.index.rows[r as usize]))
                .filter_map(|&r| app.change_for(r, None, AnnotationSource::Manual))
                .collect();
            if changes.is_empty() {
                app.say("nothing to clear", MessageKind::Info);
                return vec![];
            }
            app.marks.clear();
            let label = format!(
                "cleared the category of {} {}",
                changes.len(),
                if changes.len() == 1 { "pair" } else { "pairs" }
            );
            vec![app.save(changes, label)]
        }
        Action::AcceptSuggestion => {
            let targets = app.targets();
            app.ensure_keys(&targets);
            let changes: Vec<Change> = targets
                .iter()
                .filter_map(|&r| {
                    let row = &app.index.rows[r as usize];
                    let id = row.suggestion()?;
                    app.taxonomy.by_id(id)?;
                    app.change_for(r, Some(id.to_string()), AnnotationSource::Suggestion)
                })
                .collect();
            if changes.is_empty() {
                app.say("no suggestion for this pair", MessageKind::Info);
                return vec![];
            }
            let label = if changes.len() == 1 {
                format!(
                    "accepted the suggestion {}",
                    changes[0].category.as_deref().unwrap_or("")
                )
            } else {
                format!("accepted {} suggestions", changes.len())
            };
            let done: HashSet<u32> = targets.iter().copied().collect();
            app.marks.clear();
            let mut effects = vec![app.save(changes, label)];
            if done.len() == 1 && app.advance_to_unclassified(&done) {
                app.detail_scroll = 0;
                effects.extend(app.detail_effect());
            }
            effects
        }
        Action::AcceptAllSuggestions => {
            let candidates: Vec<u32> = app
                .view
                .iter()
                .copied()
                .filter(|&r| {
                    let row = &app.index.rows[r as usize];
                    row.status().is_failure()
                        && !app.is_classified(row)
                        && row
                            .suggestion()
                            .is_some_and(|id| app.taxonomy.by_id(id).is_some())
                })
                .collect();
            app.ensure_keys(&candidates);
            let changes: Vec<Change> = candidates
                .iter()
                .filter_map(|&r| {
                    let id = app.index.rows[r as usize].suggestion()?;
                    app.change_for(r, Some(id.to_string()), AnnotationSource::Suggestion)
                })
                .collect();
            if changes.is_empty() {
                app.say(
                    "no unclassified pair in view has a suggestion",
                    MessageKind::Info,
                );
                return vec![];
            }
            app.overlay = Overlay::Confirm(Confirm {
                question: format!(
                    "Accept the suggested category for {} unclassified {} in view?",
                    changes.len(),
                    if changes.len() == 1 { "pair" } else { "pairs" }
                ),
                label: format!("accepted {} suggestions", changes.len()),
                changes,
            });
            vec![]
        }
        Action::ClassifyView => {
            if app.view.is_empty() {
                app.say("no pairs in view", MessageKind::Info);
                return vec![];
            }
            app.overlay = Overlay::PickCategory {
                rows: app.view.clone(),
            };
            vec![]
        }
        Action::ToggleMark => {
            if let Some((_, rows)) = app.selected_case() {
                let rows = rows.to_vec();
                let all = rows.iter().all(|r| app.marks.contains(r));
                for r in rows {
                    if all {
                        app.marks.remove(&r);
                    } else {
                        app.marks.insert(r);
                    }
                }
                return app.select(app.cursor + 1);
            }
            if let Some(r) = app.selected_row() {
                if !app.marks.remove(&r) {
                    app.marks.insert(r);
                }
                let mut e = app.select(app.cursor + 1);
                e.extend(app.detail_effect());
                return e;
            }
            vec![]
        }
        Action::ClearMarks => {
            app.marks.clear();
            vec![]
        }
        Action::EditNote => {
            let targets = app.targets();
            let Some(&first) = targets.first() else {
                return vec![];
            };
            let text = app
                .annotation(&app.index.rows[first as usize])
                .and_then(|a| a.note.clone())
                .unwrap_or_default();
            app.overlay = Overlay::Note(NoteEditor::new(&text, targets));
            vec![]
        }
        Action::Undo => match app.undo.pop() {
            Some(step) => {
                let e = Effect::Save {
                    changes: step.before.clone(),
                    label: format!("undid: {}", step.label),
                };
                app.redo.push(step);
                vec![e]
            }
            None => {
                app.say("nothing to undo", MessageKind::Info);
                vec![]
            }
        },
        Action::Redo => match app.redo.pop() {
            Some(step) => {
                let e = Effect::Save {
                    changes: step.after.clone(),
                    label: format!("redid: {}", step.label),
                };
                app.undo.push(step);
                vec![e]
            }
            None => {
                app.say("nothing to redo", MessageKind::Info);
                vec![]
            }
        },
        Action::Suspend => vec![Effect::Suspend],
        Action::Reload => vec![Effect::Reload],
        Action::FuzzyJump => {
            let mut j = Jump::default();
            j.refresh(&app.index, &app.view);
            app.overlay = Overlay::Jump(j);
            vec![]
        }
        Action::SearchHelp => vec![],
        // Prompt and editor actions mean nothing outside their overlays.
        Action::Confirm
        | Action::NoteSave
        | Action::NoteCancel
        | Action::NoteNewline
        | Action::NoteLeft
        | Action::NoteRight
        | Action::NoteUp
        | Action::NoteDown
        | Action::NoteWordLeft
        | Action::NoteWordRight
        | Action::NoteHome
        | Action::NoteEnd
        | Action::NoteBackspace
        | Action::NoteDelete
        | Action::NoteDeleteWord
        | Action::NoteClear
        | Action::InputSubmit
        | Action::InputCancel
        | Action::InputUp
        | Action::InputDown
        | Action::InputLeft
        | Action::InputRight
        | Action::InputHome
        | Action::InputEnd
        | Action::InputBackspace
        | Action::InputDelete
        | Action::InputDeleteWord
        | Action::InputClear => vec![],
        Action::Choose | Action::CycleFormat => vec![],
        Action::Export => {
            if app.view.is_empty() {
                app.say("nothing in view to export", MessageKind::Info);
                return vec![];
            }
            let run = app
                .index
                .files
                .first()
                .map(|f| f.display.clone())
                .unwrap_or_default();
            let format = crate::core::export::Format::Markdown;
            app.overlay = Overlay::Export(ExportPrompt {
                format,
                path: LineInput::with(&ExportPrompt::suggest(&run, format)),
                suggested: true,
            });
            vec![]
        }
        Action::StartQuery => {
            let text = app
                .query
                .as_ref()
                .map(|q| q.to_string())
                .unwrap_or_default();
            app.overlay = Overlay::Query(QueryBar {
                input: LineInput::with(&text),
                ..QueryBar::default()
            });
            vec![]
        }
        Action::ShowFacets => {
            // Counted over every pair the query matches, failed or not.
            let all: Vec<u32> = (0..app.index.rows.len() as u32).collect();
            let rows = app.apply_query(all);
            let facets = crate::core::facets::facets(&app.index, &rows, Some(&app.store));
            app.overlay = Overlay::Facets(FacetsPanel {
                facets,
                selected: 0,
            });
            vec![]
        }
        Action::ShowSummary => {
            app.overlay = Overlay::Summary(Box::new(app.summary_view(0)));
            vec![]
        }
    }
}

/// A key typed while the help search is taking text.
pub fn help_search_key(app: &mut App, key: HelpKey) {
    match key {
        HelpKey::Char(c) => app.help_search.push(c),
        HelpKey::Backspace => {
            app.help_search.pop();
        }
        HelpKey::Done => app.help_typing = false,
        HelpKey::Abort => {
            app.help_typing = false;
            app.help_search.clear();
        }
    }
    if let Overlay::Help { scroll } = &mut app.overlay {
        *scroll = 0;
    }
}

/// What a key means while typing a help search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HelpKey {
    Char(char),
    Backspace,
    Done,
    Abort,
}

/// Re-parse the query bar's text and follow it with the list when it parses.
fn query_changed(app: &mut App) -> Vec<Effect> {
    let Overlay::Query(bar) = &mut app.overlay else {
        return vec![];
    };
    let text = bar.input.text.clone();
    match query::parse(&text) {
        Ok(q) if q.needs_text() && app.index.rows.len() > app.live_text_max_pairs => {
            bar.error = None;
            bar.waiting = true;
            vec![]
        }
        Ok(q) => {
            bar.error = None;
            bar.waiting = false;
            app.query = (!q.is_empty()).then_some(q);
            // A query changes neither the rows nor the annotations: no recount.
            app.rebuild(false);
            app.detail_effect()
        }
        Err(e) => {
            bar.error = Some(e);
            vec![]
        }
    }
}

/// Apply a line-editing action to an input; true when the text changed.
fn edit_line(input: &mut super::input::LineInput, action: Action) -> bool {
    let before = input.text.clone();
    match action {
        Action::InputLeft => input.left(),
        Action::InputRight => input.right(),
        Action::InputHome => input.home(),
        Action::InputEnd => input.end(),
        Action::InputBackspace => input.backspace(),
        Action::InputDelete => input.delete(),
        Action::InputDeleteWord => input.delete_word(),
        Action::InputClear => input.clear(),
        _ => {}
    }
    input.text != before
}

/// Text typed into the note editor or a one-line input (a character or a paste).
pub fn type_text(app: &mut App, text: &str) {
    match &mut app.overlay {
        Overlay::Note(ed) => {
            ed.insert(text);
            ed.scroll_to_cursor(6);
        }
        Overlay::Export(p) => {
            p.path.insert(text);
            p.suggested = false;
        }
        Overlay::Query(bar) => {
            bar.input.insert(text);
            bar.history_pos = None;
            let effects = query_changed(app);
            // Loading the detail is the runner's job; it asks on the next loop.
            drop(effects);
        }
        Overlay::Jump(j) => {
            j.input.insert(text);
            let mut j = std::mem::take(j);
            j.refresh(&app.index, &app.view);
            app.overlay = Overlay::Jump(j);
        }
        _ => {}
    }
}
