//! The application state, and `update`, the only place it changes.
//!
//! [`App`] is plain data: the run index, the current view (row indices),
//! selection, focus, overlays, marks, undo history and messages; its methods
//! here build the view from the index and move the selection. [`update`]
//! applies one [`Action`] and returns the [`Effect`]s it needs — loading a
//! pair's detail, reading record keys, saving annotations, exporting — which
//! [`crate::tui::effects`] performs.
//!
//! - [`update`](fn@update): the delegating `match` on the open overlay;
//! - `main_screen.rs` and `classify.rs`: the keys of the main screen;
//! - [`overlay`]: one module per overlay, with its state, keys and drawing.
//!
//! No file is read or written by `update`, so every behaviour is testable
//! without a terminal or a file. Annotations are looked up by record keys
//! the index already knows: the effect runner learns them when rows arrive
//! or the journal changes (`effects::sync_keys`) and before a decision
//! ([`Effect::LearnKeys`]). A query that searches text (a bare word or a
//! phrase) reads the pairs' lines again through [`Query::filter`], so
//! `update` does not filter with it: it sets the query, marks the view for
//! filtering with the selection to keep ([`App::filter_pending`]) and
//! returns [`Effect::Filter`] (or [`Effect::ShowFacets`],
//! [`Effect::ShowSummary`]); the runner filters ([`App::filter_view`]),
//! then loads the detail. Queries without text terms read only in-memory
//! columns and still filter inline, so typing them stays instant. The event
//! loop's own paths (rows arriving, a followed run, a reload, decisions of
//! another triage) filter with [`App::filter_view`] directly.

use std::collections::HashSet;
use std::sync::Arc;

use crate::core::annotations::{
    Annotation, AnnotationSource, AnnotationStore, Change, Name, ResolutionChange,
};
use crate::core::index::LoadedPair;
use crate::core::index::RunIndex;
use crate::core::load::follow::{RunChange, RunWatch};
use crate::core::row::PairRow;
use crate::core::suggest::Suggestion;
use crate::core::taxonomy::Taxonomy;
use ratatui::text::Line;

use super::action::Action;
pub use super::doc::DetailMode;
use super::doc::{DetailDoc, wrap};
use super::input::{Jump, JumpTarget};
use super::listing::{Item, Sort, SortCache, SortWarmup, build_items, sort_rows_with};
use super::note::NoteEditor;
use crate::core::query::{self, Query, QueryError};

pub mod baseline;
mod classify;
mod main_screen;
pub mod overlay;
mod update;

pub use main_screen::sorted;
pub use overlay::confirm::{Confirm, OnYes};
pub use overlay::export::ExportPrompt;
pub use overlay::facets::FacetsPanel;
pub use overlay::help::{HelpKey, help_search_key};
pub use overlay::query::{LIVE_TEXT_MAX_PAIRS, QueryBar};
pub use overlay::summary::{Since, SummaryView};
pub use update::{resume, type_text, update};

/// Which pane has the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    List,
    Detail,
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
        /// Resolve the reviewers' disagreement on the row instead.
        resolve: bool,
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

/// How a message in the status line should look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    Info,
    /// Work under way on a large run (a busy note, or how far it got):
    /// shown even where the counts must give way to it.
    Busy,
    Saved,
    Error,
}

/// One undoable step: what to write to go back, and to go forward again.
/// A resolution's step holds the pairs' resolutions in `resolutions`, and
/// no decision in `before` and `after`. The changes are shared with the
/// [`Effect::Save`] that writes them (its changes, or its guard), so that
/// undoing a million decisions copies them once, not three times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoStep {
    pub before: Arc<Vec<Change>>,
    pub after: Arc<Vec<Change>>,
    /// Where in `before` and `after` the change on the step's first pair
    /// (in the view's order) is: a large step's changes are kept in the
    /// store's order ([`AnnotationStore::order_for_lookups`]).
    pub lead: usize,
    pub label: String,
    pub resolutions: Option<Resolutions>,
}

/// The resolutions of an undoable step: the pairs' resolutions before it
/// (with no category where there was none) and the ones it recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolutions {
    pub before: Vec<ResolutionChange>,
    pub after: Vec<ResolutionChange>,
}

impl UndoStep {
    /// The first of the pairs the step changes, as a decision (a
    /// resolution's pair with the category it settled it on), and how many
    /// pairs it changes.
    pub fn pairs(&self, after: bool) -> (Option<&Change>, usize) {
        match &self.resolutions {
            Some(r) => {
                let side = if after { &r.after } else { &r.before };
                (side.first().map(|c| &c.change), side.len())
            }
            None => {
                let side = if after { &self.after } else { &self.before };
                (side.get(self.lead), side.len())
            }
        }
    }
}

/// Work for the effect runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Read and derive the pair at this row, and build its detail document.
    LoadDetail(u32),
    /// Write the pairs in view in a format to a path; an existing file is
    /// replaced only with `overwrite` (the reviewer said yes).
    Export {
        format: crate::core::export::Format,
        path: String,
        rows: Vec<u32>,
        overwrite: bool,
    },
    /// Write annotation changes durably, each to the journal of its pair's
    /// run; an undo or a redo only if its pairs still hold what it expects.
    Save {
        changes: Arc<Vec<Change>>,
        label: String,
        guard: Guard,
    },
    /// Record resolutions of disagreements (each change's category is the
    /// one this reviewer settles the pair on; none withdraws the pair's
    /// resolution); an undo or a redo only if the pairs' resolutions are
    /// still what it expects.
    Resolve {
        changes: Vec<ResolutionChange>,
        label: String,
        guard: ResolutionGuard,
    },
    /// Stop the process group until the shell resumes it.
    Suspend,
    /// Index the run again from disk (the event loop does it: it owns the loader).
    Reload,
    /// Read the record keys of these rows from the run, then apply `then`
    /// again with [`resume`] (rows whose line cannot be read keep no key).
    LearnKeys { rows: Vec<u32>, then: Action },
    /// Filter the view with a query that reads the run's lines (a text
    /// term): [`App::filter_view`], then load the detail of the selection.
    Filter,
    /// Open the facets panel, counted over every pair a query that reads
    /// the run's lines matches ([`App::show_facets`]).
    ShowFacets,
    /// Open the summary over every pair a query that reads the run's lines
    /// matches ([`App::show_summary`]).
    ShowSummary,
    /// Copy the decisions carried from the baseline run into this run's
    /// journal (the reviewer said yes to [`baseline::carry_prompt`]).
    Carry,
    /// Order the view again by the sort in effect and say `message` (a
    /// sort of millions of pairs, said on the status line first; smaller
    /// views are sorted inside `update`).
    Sort { message: String },
    /// Draw the screen now: the runner asks for it before work that takes
    /// longer than a blink ([`App::busy_note`]), so the status line says
    /// what the wait is for. The event loop's, which owns the terminal;
    /// `update` never returns it.
    Redraw,
}

/// From what size work is said on the status line before it starts: it
/// then takes longer than a blink (a tenth of a second or so on a laptop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BusyAt {
    /// Pairs whose lines are read (record keys, a text search, an export)
    /// or that are counted (facets, the summary).
    pub pairs: usize,
    /// Decisions or resolutions saved at once.
    pub changes: usize,
    /// Pairs in view sorted again (a sort is quicker a pair than a count).
    pub sort: usize,
}

impl Default for BusyAt {
    fn default() -> BusyAt {
        BusyAt {
            pairs: 100_000,
            changes: 10_000,
            // 10M pairs: 0.05-0.2 s, the first sort on a string column 0.3-0.4 s.
            sort: 3_000_000,
        }
    }
}

/// What a save checks before it writes: an undo (or a redo) must not wipe
/// what another triage decided on its pairs since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    /// A new decision: written whatever the pairs hold.
    None,
    /// Undoing a step: only if the pairs still hold its `after` state
    /// (given here); otherwise nothing is written and the step is dropped.
    Undo(Arc<Vec<Change>>),
    /// Redoing a step: only if the pairs still hold its `before` state.
    Redo(Arc<Vec<Change>>),
}

/// What recording resolutions checks before it writes, as [`Guard`] for
/// decisions: an undo (or a redo) must not wipe a resolution recorded since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolutionGuard {
    /// A new resolution: written whatever the pairs hold.
    None,
    /// Undoing: only if the pairs' resolutions are still the step's `after`.
    Undo(Vec<ResolutionChange>),
    /// Redoing: only if they are still the step's `before`.
    Redo(Vec<ResolutionChange>),
}

/// A view left for the effect runner to filter ([`Effect::Filter`]): the
/// selection to keep, whether to count classified failures again, and what
/// follows once the rows are known.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PendingFilter {
    keep_row: Option<u32>,
    keep_case: Option<crate::core::row::Sym>,
    recount: bool,
    then: AfterFilter,
}

/// What an action that changed the view does once it is filtered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AfterFilter {
    /// Nothing: the selection stays where it can.
    Nothing,
    /// Say how many pairs match, after this text.
    SayMatches(String),
    /// Land on the header of this case (a fold or an unfold).
    CaseHeader(crate::core::row::Sym),
    /// Select a jump target (its case was unfolded).
    Jump(JumpTarget),
}

/// Whether a handler may ask for record keys the index does not know yet
/// ([`Effect::LearnKeys`]), or must use the keys it knows: the second time,
/// after they were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyUse {
    Ask,
    AsKnown,
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
    /// The baseline's version of the pair (`--baseline`), when matched.
    pub old: Option<std::sync::Arc<Result<LoadedPair, String>>>,
    pub suggestion: Option<Suggestion>,
    pub doc: DetailDoc,
    /// The triage lines shown above the document in the unified view
    /// (category, suggestion, stale annotation, note), unwrapped and plain:
    /// paging leaves room for them. The effect runner computes them when
    /// the detail is built and again whenever annotations change.
    pub header: Vec<Line<'static>>,
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
    /// The list's column widths for the view they were measured on (a
    /// digest of its first rows), kept between frames: measuring reads
    /// thousands of rows scattered over the index.
    pub list_widths: std::cell::Cell<Option<(u64, [usize; 3])>>,
    /// The lines of the list (pairs, or case headers and pairs); the cursor indexes these.
    pub items: Vec<Item>,
    /// Whether the list is grouped by source case.
    pub grouped: bool,
    /// Cases whose variants are hidden under their header.
    pub folded: HashSet<crate::core::row::Sym>,
    pub sort: Sort,
    /// The rank of every interned string and the sort's buffers, kept
    /// between sorts.
    sorting: SortCache,
    /// What the first sort needs, being made on a thread once the run is
    /// indexed ([`crate::tui::effects::warm_sorting`]): taken when ready.
    sort_warmup: Option<std::sync::mpsc::Receiver<SortWarmup>>,
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
    /// From what size work is said on the status line before it starts
    /// ([`App::busy_note`]).
    pub busy_at: BusyAt,
    /// The view needs filtering by a query that reads the run's lines:
    /// `update` leaves it to the effect runner ([`Effect::Filter`]).
    pending_filter: Option<PendingFilter>,
    /// The run this one is compared with (`--baseline OLD`).
    pub baseline: Option<Box<baseline::Baseline>>,
}

impl App {
    /// The state over an index (possibly still filling) and a store, with
    /// an empty view: [`crate::tui::effects::new_app`] watches the run,
    /// learns the keys annotations need, and fills the view.
    pub fn new(index: RunIndex, store: AnnotationStore, taxonomy: Taxonomy) -> App {
        App {
            loading: !index.done,
            index,
            store,
            taxonomy,
            view: Vec::new(),
            items: Vec::new(),
            grouped: false,
            folded: HashSet::new(),
            sort: Sort::default(),
            sorting: SortCache::default(),
            sort_warmup: None,
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
            list_widths: std::cell::Cell::new(None),
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
            busy_at: BusyAt::default(),
            pending_filter: None,
            baseline: None,
        }
    }

    /// The summary of the query, over every pair it matches.
    fn summary_view(&self, scroll: u16) -> SummaryView {
        let all: Vec<u32> = (0..self.index.rows.len() as u32).collect();
        let rows = self.apply_query(all);
        use crate::core::stats::GroupBy;
        let [by_transformation, by_family]: [_; 2] = crate::core::stats::summarize_each(
            &self.index,
            &rows,
            Some(&self.store),
            &[GroupBy::Transformation, GroupBy::Family],
        )
        .try_into()
        .expect("a summary for each grouping");
        let conclusion = crate::core::stats::conclusion(&self.index, &rows, &by_transformation);
        use crate::core::agreement;
        let blind = self.blind();
        // In blind review the agreement stays hidden: it compares decisions
        // on pairs this reviewer has not decided.
        let mut raters = match blind {
            true => Vec::new(),
            false => agreement::every_pair(&self.store),
        };
        raters.extend(
            self.store
                .reviewers()
                .into_iter()
                .filter(|_| !blind)
                .map(|r| (r.to_string(), agreement::SUGGESTIONS.to_string())),
        );
        let agreement = raters
            .iter()
            .map(|(a, b)| agreement::compare(&self.index, &self.store, &self.taxonomy, &rows, a, b))
            .collect();
        SummaryView {
            since: self.runs().map(|(runs, cmp)| Since {
                old: runs.old.display_name(),
                counts: cmp.counts(),
                by_transformation: cmp.movement(runs.old, runs.new),
                removed: crate::core::compare::report::listed_of(
                    cmp,
                    runs,
                    crate::core::compare::ChangeKind::Removed,
                ),
            }),
            by_transformation,
            by_family,
            conclusion,
            query: self.query.as_ref().map(|q| q.to_string()),
            agreement,
            blind,
            scroll,
            hscroll: 0,
        }
    }

    /// Open the summary of the query. With a query that reads the run's
    /// lines this is the effect runner's ([`Effect::ShowSummary`]).
    pub fn show_summary(&mut self) {
        self.overlay = Overlay::Summary(Box::new(self.summary_view(0)));
    }

    /// Open the facets panel, counted over every pair the query matches,
    /// failed or not. With a query that reads the run's lines this is the
    /// effect runner's ([`Effect::ShowFacets`]).
    pub fn show_facets(&mut self) {
        let all: Vec<u32> = (0..self.index.rows.len() as u32).collect();
        let rows = self.apply_query(all);
        let mut facets = crate::core::facets::facets(&self.index, &rows, Some(&self.store));
        if let Some(changes) = self.changes() {
            facets.insert(
                0,
                crate::core::facets::change_facet(&self.index, &rows, changes),
            );
        }
        self.overlay = Overlay::Facets(FacetsPanel {
            facets,
            selected: 0,
        });
    }

    /// What a slow effect is about to do, said on the status line before it
    /// starts (see [`Effect::Redraw`]); `None` for work too small to notice.
    /// Reading many record keys says how far it got as it goes instead
    /// ([`crate::tui::effects::perform`]).
    pub fn busy_note(&self, e: &Effect) -> Option<String> {
        let pairs = self.index.rows.len();
        let BusyAt {
            pairs: many,
            changes: many_changes,
            sort: _,
        } = self.busy_at;
        match e {
            Effect::Sort { .. } => Some(format!(
                "sorting {} pairs by {}…",
                self.view.len(),
                self.sort.key.name()
            )),
            Effect::Save { changes, .. } if changes.len() >= many_changes => Some(format!(
                "saving {} decisions to the journal…",
                changes.len()
            )),
            Effect::Resolve { changes, .. } if changes.len() >= many_changes => Some(format!(
                "saving {} resolutions to the journal…",
                changes.len()
            )),
            Effect::Export { rows, .. } if rows.len() >= many => {
                Some(format!("exporting {} pairs…", rows.len()))
            }
            Effect::ShowFacets if pairs >= many => {
                Some(format!("counting the facets of {} pairs…", pairs))
            }
            Effect::ShowSummary if pairs >= many => {
                Some(format!("counting the summary of {} pairs…", pairs))
            }
            _ => None,
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

    /// Expect what [`crate::tui::effects::warm_sorting`] is making for the
    /// first sort: [`App::take_sort_warmup`] keeps it once it is ready.
    pub fn await_sort_warmup(&mut self, ready: std::sync::mpsc::Receiver<SortWarmup>) {
        self.sort_warmup = Some(ready);
    }

    /// Whether the first sort has nothing left to make: the strings ranked
    /// (or being ranked by a warm-up).
    pub fn sorting_is_warm(&self) -> bool {
        self.sort_warmup.is_some() || self.sorting.is_ranked()
    }

    /// Keep what the sort's warm-up made, if it is ready; whether a
    /// warm-up is still being made.
    pub fn take_sort_warmup(&mut self) -> bool {
        use std::sync::mpsc::TryRecvError;
        let Some(ready) = &self.sort_warmup else {
            return false;
        };
        match ready.try_recv() {
            Ok(warmup) => {
                self.sorting.warm(warmup);
                self.sort_warmup = None;
                false
            }
            Err(TryRecvError::Empty) => true,
            Err(TryRecvError::Disconnected) => {
                self.sort_warmup = None;
                false
            }
        }
    }

    /// Take a run indexed again from disk: the view, marks, folds and
    /// orphans start over, while the annotations, query, sort and grouping
    /// stay. [`crate::tui::effects::replace_index`] then watches the new
    /// files, learns keys and fills the view (annotations re-attach by
    /// record key).
    pub fn reset_index(&mut self, index: RunIndex, watch: RunWatch) {
        self.index = index;
        self.watch = watch;
        // The new index's strings may be as many, interned in another order.
        self.sorting.forget_ranks();
        self.sort_warmup = None;
        self.list_widths.set(None);
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
        self.pending_filter = None;
        self.loading = !self.index.done;
    }

    /// List the annotations whose pairs are gone from the run. The keys must
    /// be learnt first ([`crate::tui::effects::sync_keys`]).
    pub fn find_orphans(&mut self) {
        // Every row an annotation could be on has a known key by now.
        let keys: HashSet<_> = self.index.known_key_set().copied().collect();
        let (index, store) = (&self.index, &self.store);
        let ids: HashSet<(&str, &str)> = index
            .rows
            .iter()
            .map(|r| (index.str(r.case), index.str(r.variant)))
            .filter(|(case, variant)| store.may_name_case(case) && store.may_name_variant(variant))
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
            Some(item @ Item::Case { case, .. }) => Some((
                *case,
                item.case_rows()
                    .and_then(|rows| self.view.get(rows))
                    .unwrap_or(&[]),
            )),
            _ => None,
        }
    }

    /// The annotation a row shows, if it has one under its current key: in
    /// blind review, only once this reviewer has decided the pair.
    pub fn annotation(&self, row: &PairRow) -> Option<&Annotation> {
        if self.hides_others(row) {
            return None;
        }
        self.index.annotation(Some(&self.store), row)
    }

    /// Whether blind review hides the other reviewers' decisions and the
    /// suggestion of this row: this reviewer has not decided it yet.
    pub fn hides_others(&self, row: &PairRow) -> bool {
        self.index.hides(Some(&self.store), row)
    }

    /// Whether this is a blind review (`--blind`).
    pub fn blind(&self) -> bool {
        self.store.blind()
    }

    /// Start (or end) blind review: other reviewers' categories and notes,
    /// and the suggestion, stay hidden on a pair until this reviewer decides
    /// it, on every screen and in every count, query and export (the store
    /// hides them: [`AnnotationStore::set_blind`]). The view and the counts
    /// are made again.
    pub fn set_blind(&mut self, blind: bool) {
        self.store.set_blind(blind);
        self.filter_view();
        self.refresh_summary();
    }

    /// Whether the row's reviewers named different categories and no resolution settled them.
    pub fn disagrees(&self, row: &PairRow) -> bool {
        self.index.current_key(&self.store, row).is_some_and(|k| {
            self.store.agreement(&k) == Some(crate::core::annotations::Agreement::Disagree)
        })
    }

    /// This reviewer's own decision on a row, under its current key.
    pub fn mine(&self, row: &PairRow) -> Option<&Annotation> {
        mine_of(&self.index, &self.store, row)
    }

    /// An annotation made on an earlier version of this pair.
    pub fn stale_annotation(&self, row: &PairRow) -> Option<&Annotation> {
        if self.hides_others(row) {
            return None;
        }
        let key = self.index.current_key(&self.store, row)?;
        if self.store.get(&key).is_some() {
            return None;
        }
        self.store
            .stale_for(self.index.str(row.case), self.index.str(row.variant), &key)
    }

    /// Whether the row has a category.
    pub fn is_classified(&self, row: &PairRow) -> bool {
        classified(&self.index, &self.store, row)
    }

    /// Whether the active query says which statuses it wants; then it, not
    /// the failures-only default, decides.
    fn query_picks_status(&self) -> bool {
        self.query_statuses().is_some()
    }

    /// The statuses the active query allows, when it has a term on them.
    fn query_statuses(&self) -> Option<query::StatusMask> {
        self.query.as_ref().and_then(|q| q.statuses())
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

    /// Recompute the view from scratch, keeping the selected line if it
    /// stays: `update`'s. A query that reads the run's lines leaves the view
    /// as it is and marks it for the effect runner ([`Effect::Filter`]).
    pub fn rebuild_view(&mut self) {
        self.rebuild(true);
    }

    /// Whether the active query reads the run's lines (a text term): then
    /// filtering is the effect runner's, not `update`'s. Other queries read
    /// only the in-memory columns and filter inline, so typing stays instant.
    pub fn query_reads_lines(&self) -> bool {
        self.query.as_ref().is_some_and(|q| q.needs_text())
    }

    /// Whether the view waits for the effect runner to filter it.
    pub fn filter_pending(&self) -> bool {
        self.pending_filter.is_some()
    }

    /// [`App::rebuild_view`]; `recount` counts every classified failure
    /// again (needed when annotations changed), otherwise only the rows the
    /// view had not seen yet are counted. With a query that reads the run's
    /// lines, only the mark is set (keeping the selection to restore).
    fn rebuild(&mut self, recount: bool) {
        let mut pending = self.take_pending(false);
        pending.recount |= recount;
        if self.query_reads_lines() {
            self.pending_filter = Some(pending);
        } else {
            self.refilter(pending);
        }
    }

    /// Filter the view now, reading the run's lines if the query searches
    /// text: the effect runner's ([`Effect::Filter`]), and the event loop's
    /// when rows arrive or annotations change. Performs what `update` left
    /// pending, or rebuilds the view from scratch keeping the selection.
    pub fn filter_view(&mut self) {
        let pending = self.take_pending(true);
        self.refilter(pending);
    }

    /// [`App::filter_view`] for a query that reads the run's lines, the
    /// candidate rows searched `step` at a time, in file order: before each
    /// stretch, `between` is told how many were searched of how many (the
    /// effect runner says it on the status line and draws).
    pub fn filter_view_in_steps(
        &mut self,
        step: usize,
        mut between: impl FnMut(&mut App, usize, usize) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let pending = self.take_pending(true);
        // The view stays as it is, drawn under the count, until the search ends.
        let mut candidates = Vec::new();
        self.candidates_into(&mut candidates);
        let mut view = Vec::new();
        let query = self.query.clone().filter(|q| !q.is_empty());
        // A failure to draw stops the reports, not the filtering.
        let mut failed = None;
        for (k, stretch) in candidates.chunks(step.max(1)).enumerate() {
            if failed.is_none() {
                failed = between(self, k * step, candidates.len()).err();
            }
            match &query {
                Some(q) => view.extend(q.filter(&self.query_context(), stretch)),
                None => view.extend_from_slice(stretch),
            }
        }
        self.rebuild_from(view, pending.keep_row, pending.keep_case, pending.recount);
        self.after_filter(pending.then);
        failed.map_or(Ok(()), Err)
    }

    /// What `update` left pending, or else a rebuild from scratch keeping
    /// the selection (counting classified failures again if `recount`).
    fn take_pending(&mut self, recount: bool) -> PendingFilter {
        self.pending_filter.take().unwrap_or_else(|| PendingFilter {
            keep_row: self.selected_row(),
            keep_case: self.selected_case().map(|(c, _)| c),
            recount,
            then: AfterFilter::Nothing,
        })
    }

    /// Rebuild the view for `pending`, then do what follows it.
    fn refilter(&mut self, pending: PendingFilter) {
        self.rebuild_now(pending.keep_row, pending.keep_case, pending.recount);
        self.after_filter(pending.then);
    }

    /// What follows a filtered view.
    fn after_filter(&mut self, then: AfterFilter) {
        match then {
            AfterFilter::Nothing => {}
            AfterFilter::SayMatches(before) => self.say_matches(&before),
            AfterFilter::CaseHeader(c) => self.land_on_case(c),
            AfterFilter::Jump(target) => {
                // The detail is asked for by whoever performs the filter.
                let _ = self.jump_to(target);
            }
        }
    }

    /// Say how many pairs match (after `before`), now or, if the view
    /// waits for filtering, once it is filtered.
    pub(crate) fn say_matches(&mut self, before: &str) {
        match &mut self.pending_filter {
            Some(p) => p.then = AfterFilter::SayMatches(before.to_string()),
            None => self.say(
                format!("{before}{} pairs match", self.view.len()),
                MessageKind::Info,
            ),
        }
    }

    /// Put the cursor on the header of case `c` (now, or once the view is
    /// filtered).
    pub(crate) fn land_on_case(&mut self, c: crate::core::row::Sym) {
        if let Some(p) = &mut self.pending_filter {
            p.then = AfterFilter::CaseHeader(c);
            return;
        }
        if let Some(i) = self
            .items
            .iter()
            .position(|it| matches!(it, Item::Case { case, .. } if *case == c))
        {
            self.cursor = i;
            self.clamp_offset();
        }
    }

    /// The body of a rebuild: the view from scratch, the cursor on
    /// `keep_row` or `keep_case` if it stays, near it otherwise.
    fn rebuild_now(
        &mut self,
        keep_row: Option<u32>,
        keep_case: Option<crate::core::row::Sym>,
        recount: bool,
    ) {
        let candidates = self.candidates();
        let view = self.apply_query(candidates);
        self.rebuild_from(view, keep_row, keep_case, recount);
    }

    /// The rows the view shows before its query, in file order, in the old
    /// view's allocation: no fresh pages per keystroke.
    fn candidates(&mut self) -> Vec<u32> {
        let mut candidates = std::mem::take(&mut self.view);
        self.candidates_into(&mut candidates);
        candidates
    }

    /// [`App::candidates`] into `candidates` (cleared first).
    fn candidates_into(&self, candidates: &mut Vec<u32>) {
        let n = self.index.rows.len() as u32;
        // The statuses the query allows, when it has a term on them: rows of
        // any other status are not candidates (the query would drop them).
        let picked = self.query_statuses();
        let every_status = self.show_all || picked.is_some();
        if !self.unclassified_only
            && (!every_status || picked.is_some())
            && self.index.rows_with_status(
                |s| (every_status || s.is_failure()) && picked.is_none_or(|m| m.admits(s)),
                candidates,
            )
        {
            // One byte per row to look at.
            return;
        }
        candidates.clear();
        if every_status && !self.unclassified_only {
            candidates.extend(0..n);
        } else {
            candidates.extend(
                (0..n).filter(|&i| self.in_view_with(every_status, &self.index.rows[i as usize])),
            );
        }
    }

    /// The rest of a rebuild, from the rows the query kept, in file order.
    fn rebuild_from(
        &mut self,
        view: Vec<u32>,
        keep_row: Option<u32>,
        keep_case: Option<crate::core::row::Sym>,
        recount: bool,
    ) {
        self.view = view;
        if !recount {
            self.count_new_rows();
        }
        self.seen_rows = self.index.rows.len();
        self.take_sort_warmup();
        sort_rows_with(
            &mut self.sorting,
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
        self.classified += self
            .index
            .rows
            .range(start..self.index.rows.len())
            .filter(|r| r.status().is_failure() && self.is_classified(r))
            .count();
    }

    /// Take in rows the loader added since the last call (after
    /// [`crate::tui::effects::sync_keys`] learnt the keys they need).
    pub fn grow_view(&mut self) {
        let start = self.seen_rows;
        // A view waiting for its filter takes the new rows when it is filtered.
        let flat = self.sort == Sort::default() && !self.grouped && self.pending_filter.is_none();
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
            self.filter_view();
            self.classified = classified;
        }
        if self.loading && self.index.done {
            self.find_orphans();
            // The view grew by pushes while rows arrived: give back the
            // room doubling left (up to half of it) once they all have.
            self.view.shrink_to_fit();
            self.items.shrink_to_fit();
        }
        if !self.loading && start < self.index.rows.len() {
            // Lines appended to a followed run.
            self.refresh_summary();
        }
        self.loading = !self.index.done;
    }

    /// Keep the rows the active query matches.
    fn apply_query(&self, mut rows: Vec<u32>) -> Vec<u32> {
        if let Some(q) = self.query.as_ref().filter(|q| !q.is_empty()) {
            q.retain(&self.query_context(), &mut rows);
        }
        rows
    }

    /// What a query reads besides its text: the run, its decisions and the
    /// baseline's changes.
    fn query_context(&self) -> query::Context<'_> {
        query::Context {
            index: &self.index,
            store: Some(&self.store),
            changes: self.changes(),
        }
    }

    /// Set (or clear, with an empty text) the active query and filter the
    /// view now, reading the run's lines for a text query: for the effect
    /// runner and tools. `update` uses [`App::change_query`].
    pub fn set_query(&mut self, text: &str) -> Result<(), QueryError> {
        self.change_query(text)?;
        if self.pending_filter.is_some() {
            self.filter_view();
        }
        Ok(())
    }

    /// Set (or clear, with an empty text) the active query and rebuild the
    /// view: `update`'s, so a query that reads the run's lines leaves the
    /// filtering to the effect runner ([`Effect::Filter`]).
    pub(crate) fn change_query(&mut self, text: &str) -> Result<(), QueryError> {
        let q = query::parse(text)?;
        self.query = (!q.is_empty()).then_some(q);
        // A query changes neither the rows nor the annotations: no recount.
        self.rebuild(false);
        Ok(())
    }

    /// Count classified failures again.
    pub fn recount(&mut self) {
        use rayon::prelude::*;
        // On both cores: after `Y y` on a large run, millions of look-ups
        // that miss the caches wait for memory side by side.
        let (index, store) = (&self.index, &self.store);
        self.classified = (0..index.rows.len())
            .into_par_iter()
            .with_min_len(1 << 16)
            .filter(|&i| {
                let r = &index.rows[i];
                r.status().is_failure() && classified(index, store, r)
            })
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
    pub fn save(&mut self, mut changes: Vec<Change>, label: String) -> Effect {
        use rayon::prelude::*;
        // (Millions of changes: in the order the store looks them up, for
        // the save, its undo and its redo.)
        let lead = self.store.order_for_lookups(&mut changes);
        // (On every core: a bulk change can hold millions.)
        let store = &self.store;
        let before = changes
            .par_iter()
            .with_min_len(1 << 14)
            .map(|c| match store.mine(&c.key) {
                Some(a) => Change {
                    key: c.key,
                    case_id: c.case_id.clone(),
                    variant_id: c.variant_id.clone(),
                    category: a.category,
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
        let changes = Arc::new(changes);
        self.undo.push(UndoStep {
            before: Arc::new(before),
            after: changes.clone(),
            lead,
            label: label.clone(),
            resolutions: None,
        });
        self.redo.clear();
        Effect::Save {
            changes,
            label,
            guard: Guard::None,
        }
    }

    /// Record an undo step for resolutions of the pairs of `changes` on
    /// their categories, settling the pairs' decisions as they stand now,
    /// and return the effect that writes them.
    pub fn resolve(&mut self, changes: Vec<Change>, label: String) -> Effect {
        let before: Vec<ResolutionChange> = changes
            .iter()
            .map(|c| {
                self.store
                    .resolution_change(&c.key, &c.case_id, &c.variant_id)
            })
            .collect();
        let after: Vec<ResolutionChange> = changes
            .into_iter()
            .map(|c| ResolutionChange {
                resolves: self.store.priors(&c.key),
                change: c,
            })
            .collect();
        self.undo.push(UndoStep {
            before: Arc::default(),
            after: Arc::default(),
            lead: 0,
            label: label.clone(),
            resolutions: Some(Resolutions {
                before,
                after: after.clone(),
            }),
        });
        self.redo.clear();
        Effect::Resolve {
            changes: after,
            label,
            guard: ResolutionGuard::None,
        }
    }

    /// Quit, or, while decisions are not saved, ask first (every time).
    pub fn request_quit(&mut self) {
        let n = self.store.pending();
        if n == 0 {
            self.quit = true;
            return;
        }
        self.overlay = Overlay::Confirm(Confirm {
            question: format!(
                "{} NOT saved to {}. Quit anyway? They will be written to a recovery file beside the journal.",
                if n == 1 {
                    "1 decision is".to_string()
                } else {
                    format!("{n} decisions are")
                },
                self.store.path().display()
            ),
            on_yes: OnYes::Quit,
        });
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
            if let Some(p) = &mut self.pending_filter {
                // Selected once the view is filtered.
                p.then = AfterFilter::Jump(target);
                return self.detail_effect();
            }
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

    /// The effect that reads the record keys of `rows` the index does not
    /// know yet and then applies `then` again; `None` when every key is
    /// known, or when the keys were already read once ([`KeyUse::AsKnown`]).
    /// The keys of the rows with the same case and variant ids are read in
    /// the same pass: the save of decisions on `rows` looks for them
    /// ([`RunIndex::with_same_ids`]).
    pub fn keys_needed(&self, rows: &[u32], keys: KeyUse, then: Action) -> Option<Effect> {
        if keys == KeyUse::AsKnown {
            return None;
        }
        let unknown = |i: &u32| {
            self.index
                .rows
                .get(*i as usize)
                .is_some_and(|r| self.index.key(r).is_none())
        };
        if !rows.iter().any(unknown) {
            return None;
        }
        let missing: Vec<u32> = self
            .index
            .with_same_ids(rows)
            .into_iter()
            .filter(unknown)
            .collect();
        (!missing.is_empty()).then_some(Effect::LearnKeys {
            rows: missing,
            then,
        })
    }

    /// A change that gives `row` this category and keeps its note; `None`
    /// when the row's key is not known (see [`App::keys_needed`]).
    fn change_for(
        &self,
        row: u32,
        category: Option<Name>,
        source: AnnotationSource,
    ) -> Option<Change> {
        change_of(&self.index, &self.store, row, category, source)
    }

    /// [`App::change_for`] each of `rows` with its suggested category,
    /// on every core (after the keys of millions of failures are read, the
    /// look-ups of their keys and notes miss the caches).
    fn suggestion_changes(&self, rows: &[u32]) -> Vec<Change> {
        use rayon::prelude::*;
        let (index, store) = (&self.index, &self.store);
        rows.par_iter()
            .with_min_len(1 << 14)
            .filter_map(|&r| {
                let id = index.rows.get(r as usize)?.suggestion()?;
                change_of(
                    index,
                    store,
                    r,
                    Some(Name::new(id)),
                    AnnotationSource::Suggestion,
                )
            })
            .collect()
    }

    /// Move the cursor to the next pair in view whose reviewers disagree,
    /// after the current one (wrapping); whether there is one.
    fn advance_to_disagreement(&mut self) -> bool {
        let n = self.items.len();
        for step in 1..=n {
            let i = (self.cursor + step) % n;
            let Item::Pair(row) = self.items[i] else {
                continue;
            };
            if self.disagrees(&self.index.rows[row as usize]) {
                self.cursor = i;
                self.clamp_offset();
                return true;
            }
        }
        false
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

    /// The work the detail pane needs now: the view's filter first if it
    /// waits for one ([`Effect::Filter`], whose runner asks again), else the
    /// load of the selected pair, if any.
    pub fn detail_effect(&self) -> Vec<Effect> {
        if self.pending_filter.is_some() {
            return vec![Effect::Filter];
        }
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
            .saturating_sub(self.detail_header_rows())
            .max(1);
        let max = len.saturating_sub(room);
        let s = self.detail_scroll as isize + delta;
        self.detail_scroll = s.clamp(0, max as isize) as usize;
    }

    /// How many rows the triage lines take above the detail document: in
    /// the unified view, the pair's [`Detail::header`] wrapped to the pane,
    /// and a blank line after them.
    pub fn detail_header_rows(&self) -> usize {
        if self.detail_mode != DetailMode::Unified {
            return 0;
        }
        let Some(d) = self
            .detail
            .as_ref()
            .filter(|d| self.selected_row() == Some(d.row))
        else {
            return 0;
        };
        let width = self.viewport.detail_cols as usize;
        let rows: usize = d
            .header
            .iter()
            .map(|l| wrap(l.spans.clone(), width, 2).len())
            .sum();
        if rows == 0 { 0 } else { rows + 1 }
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

/// Whether the pair of `row` shows a category ([`App::is_classified`]; blind
/// review counts only the reviewer's own decisions).
fn classified(index: &RunIndex, store: &AnnotationStore, row: &PairRow) -> bool {
    !index.hides(Some(store), row)
        && index
            .annotation(Some(store), row)
            .is_some_and(|a| a.category.is_some())
}

/// [`App::mine`], from the index and the store alone.
fn mine_of<'s>(
    index: &RunIndex,
    store: &'s AnnotationStore,
    row: &PairRow,
) -> Option<&'s Annotation> {
    store.mine(&index.current_key(store, row)?)
}

/// [`App::change_for`], from the index and the store alone.
fn change_of(
    index: &RunIndex,
    store: &AnnotationStore,
    row: u32,
    category: Option<Name>,
    source: AnnotationSource,
) -> Option<Change> {
    let r = index.rows.get(row as usize)?;
    let note = mine_of(index, store, r).and_then(|a| a.note.clone());
    Some(Change {
        key: index.key(r)?,
        case_id: index.str(r.case).into(),
        variant_id: index.str(r.variant).into(),
        category,
        note,
        source,
    })
}
