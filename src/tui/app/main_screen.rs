//! The main screen's keys: moving through the list, scrolling the detail,
//! changing the view, marks and history, and opening the overlays.
//!
//! [`handle`] routes each action to a small function by what it does; the
//! triage decisions themselves are in [`super::classify`].

use crate::core::annotations::Change;
use crate::core::text;
use crate::tui::action::Action;
use crate::tui::input::{Jump, JumpTarget, LineInput};
use crate::tui::listing::Item;
use crate::tui::note::NoteEditor;

use super::classify;
use super::overlay::export::ExportPrompt;
use super::overlay::query::QueryBar;
use super::{App, DetailMode, Effect, Focus, Guard, KeyUse, MessageKind, Overlay, ResolutionGuard};

/// Apply an action on the main screen (no overlay is open).
pub(super) fn handle(app: &mut App, action: Action, keys: KeyUse) -> Vec<Effect> {
    match action {
        Action::Classify(key) => classify::classify(app, key, keys),
        Action::ClearCategory => classify::clear_category(app),
        Action::AcceptSuggestion => classify::accept_suggestion(app, keys),
        Action::AcceptAllSuggestions => classify::accept_all_suggestions(app, keys),
        Action::ClassifyView => classify::classify_view(app),
        Action::NextDisagreement => classify::next_disagreement(app),
        Action::ResolveDisagreement => classify::resolve(app),
        Action::CarryDecisions => super::baseline::carry_prompt(app),
        Action::CycleSort
        | Action::ReverseSort
        | Action::ToggleGroup
        | Action::ToggleFold
        | Action::FoldAll
        | Action::ToggleAllPairs
        | Action::ToggleUnclassified
        | Action::ToggleSideBySide
        | Action::ToggleRaw => view(app, action),
        Action::ToggleMark
        | Action::ClearMarks
        | Action::EditNote
        | Action::Undo
        | Action::Redo => marks_and_history(app, action),
        Action::StartQuery
        | Action::ShowFacets
        | Action::ShowSummary
        | Action::FuzzyJump
        | Action::Export => open_overlay(app, action),
        other => general(app, other),
    }
}

/// Quit, help, focus, moving the cursor and scrolling the detail.
fn general(app: &mut App, action: Action) -> Vec<Effect> {
    let page = app.viewport.list_rows.max(1);
    match action {
        Action::Quit => {
            app.request_quit();
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
        Action::Suspend => vec![Effect::Suspend],
        Action::Reload => vec![Effect::Reload],
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
        // Sideways scrolling is the summary's.
        Action::ScrollLeft | Action::ScrollRight => vec![],
        // Routed elsewhere by `handle`; listed so that a new action must be placed.
        Action::Classify(_)
        | Action::ClearCategory
        | Action::AcceptSuggestion
        | Action::AcceptAllSuggestions
        | Action::ClassifyView
        | Action::NextDisagreement
        | Action::ResolveDisagreement
        | Action::CarryDecisions
        | Action::CycleSort
        | Action::ReverseSort
        | Action::ToggleGroup
        | Action::ToggleFold
        | Action::FoldAll
        | Action::ToggleAllPairs
        | Action::ToggleUnclassified
        | Action::ToggleSideBySide
        | Action::ToggleRaw
        | Action::ToggleMark
        | Action::ClearMarks
        | Action::EditNote
        | Action::Undo
        | Action::Redo
        | Action::StartQuery
        | Action::ShowFacets
        | Action::ShowSummary
        | Action::FuzzyJump
        | Action::Export => vec![],
    }
}

/// Sorting, grouping, folding, which pairs show and how the detail shows them.
fn view(app: &mut App, action: Action) -> Vec<Effect> {
    match action {
        Action::CycleSort | Action::ReverseSort => {
            if action == Action::CycleSort {
                app.sort.key = app.sort.key.next();
                app.sort.descending = matches!(app.sort.key, crate::tui::listing::SortKey::Drift);
            } else {
                app.sort.descending = !app.sort.descending;
            }
            let message = format!(
                "sorted by {} ({})",
                app.sort.key.name(),
                if app.sort.descending {
                    "descending"
                } else {
                    "ascending"
                }
            );
            if app.view.len() >= app.busy_at.sort {
                // Millions of pairs: the runner says so, then sorts.
                return vec![Effect::Sort { message }];
            }
            rebuilt(app, message)
        }
        Action::ToggleGroup => {
            app.grouped = !app.grouped;
            let message = if app.grouped {
                "grouped by case"
            } else {
                "not grouped"
            };
            rebuilt(app, message)
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
                    app.land_on_case(c);
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
        Action::ToggleAllPairs => {
            app.show_all = !app.show_all;
            let message = if app.show_all {
                "showing all pairs"
            } else {
                "showing failures only"
            };
            rebuilt(app, message)
        }
        Action::ToggleUnclassified => {
            app.unclassified_only = !app.unclassified_only;
            let message = if app.unclassified_only {
                "showing unclassified failures only"
            } else {
                "showing classified and unclassified"
            };
            rebuilt(app, message)
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
        _ => vec![],
    }
}

/// Marks, the note editor, undo and redo.
fn marks_and_history(app: &mut App, action: Action) -> Vec<Effect> {
    match action {
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
                .mine(&app.index.rows[first as usize])
                .and_then(|a| a.note.clone())
                .unwrap_or_default();
            app.overlay = Overlay::Note(NoteEditor::new(&text, targets));
            vec![]
        }
        Action::Undo => match app.undo.pop() {
            Some(step) => {
                let (pairs, mut effects) = show_step_pairs(app, step.pairs(false));
                let label = format!("undid: {} — {pairs}", step.label);
                // Only if the pairs still hold this step's decision: an
                // undo must not wipe what another triage decided since.
                let write = match &step.resolutions {
                    Some(r) => Effect::Resolve {
                        changes: r.before.clone(),
                        label,
                        guard: ResolutionGuard::Undo(r.after.clone()),
                    },
                    None => Effect::Save {
                        changes: step.before.clone(),
                        label,
                        guard: Guard::Undo(step.after.clone()),
                    },
                };
                effects.insert(0, write);
                app.redo.push(step);
                effects
            }
            None => {
                app.say("nothing to undo", MessageKind::Info);
                vec![]
            }
        },
        Action::Redo => match app.redo.pop() {
            Some(step) => {
                let (pairs, mut effects) = show_step_pairs(app, step.pairs(true));
                let label = format!("redid: {} — {pairs}", step.label);
                let write = match &step.resolutions {
                    Some(r) => Effect::Resolve {
                        changes: r.after.clone(),
                        label,
                        guard: ResolutionGuard::Redo(r.before.clone()),
                    },
                    None => Effect::Save {
                        changes: step.after.clone(),
                        label,
                        guard: Guard::Redo(step.before.clone()),
                    },
                };
                effects.insert(0, write);
                app.undo.push(step);
                effects
            }
            None => {
                app.say("nothing to redo", MessageKind::Info);
                vec![]
            }
        },
        _ => vec![],
    }
}

/// Name the pairs of an undo or redo step ("case / variant", "and N more")
/// and select the first one, so the reviewer sees what changed back. A pair
/// the view hides is named, not selected, and the name says so.
fn show_step_pairs(
    app: &mut App,
    (first, count): (Option<&Change>, usize),
) -> (String, Vec<Effect>) {
    let Some(first) = first else {
        return (String::new(), vec![]);
    };
    let mut name = format!(
        "{} / {}",
        text::inert_line(&first.case_id),
        text::inert_line(&first.variant_id)
    );
    if count > 1 {
        name.push_str(&format!(" and {} more", count - 1));
    }
    let row = app
        .index
        .rows
        .iter()
        .position(|r| app.index.key(r) == Some(first.key))
        .and_then(|i| u32::try_from(i).ok());
    match row {
        Some(row) if app.view.contains(&row) => {
            let effects = app.jump_to(JumpTarget::Pair(row));
            (name, effects)
        }
        _ => (format!("{name} (not in the view)"), vec![]),
    }
}

/// The query bar, facets, summary, fuzzy jump and export prompt.
fn open_overlay(app: &mut App, action: Action) -> Vec<Effect> {
    match action {
        Action::FuzzyJump => {
            let mut j = Jump::default();
            j.refresh(&app.index, &app.view);
            app.overlay = Overlay::Jump(j);
            vec![]
        }
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
        // Counted over every pair the query matches: by the effect runner
        // when that reads the run's lines, or when the run is large enough
        // for the wait to be said first.
        Action::ShowFacets
            if app.query_reads_lines() || app.index.rows.len() >= app.busy_at.pairs =>
        {
            vec![Effect::ShowFacets]
        }
        Action::ShowFacets => {
            app.show_facets();
            vec![]
        }
        Action::ShowSummary
            if app.query_reads_lines() || app.index.rows.len() >= app.busy_at.pairs =>
        {
            vec![Effect::ShowSummary]
        }
        Action::ShowSummary => {
            app.show_summary();
            vec![]
        }
        _ => vec![],
    }
}

/// After a change of what the view shows or how: build the view again, say
/// what changed, and load the selected pair's detail.
/// The work of [`Effect::Sort`]: the view sorted again, `message` said.
pub fn sorted(app: &mut App, message: String) -> Vec<Effect> {
    rebuilt(app, message)
}

fn rebuilt(app: &mut App, message: impl Into<String>) -> Vec<Effect> {
    app.rebuild_view();
    app.say(message, MessageKind::Info);
    app.detail_effect()
}
