//! Triage decisions on the main screen: a category key, clearing a
//! category, accepting suggestions, and opening the classify-the-view picker.
//!
//! A decision is written under the pairs' record keys. Keys the index does
//! not know yet are read from the run by the effect runner: the handler
//! returns [`Effect::LearnKeys`] and is called again through
//! [`super::resume`] once they are known (see [`App::keys_needed`]).

use std::collections::HashSet;

use crate::core::annotations::{AnnotationSource, Change, Name};
use crate::tui::action::Action;

use super::overlay::confirm::{Confirm, OnYes};
use super::{App, Effect, KeyUse, MessageKind, Overlay};

/// Give the targets (marked pairs, the case under the cursor, or the
/// selected pair) the category whose key is `key`; a key outside the
/// taxonomy does nothing.
pub(super) fn classify(app: &mut App, key: char, keys: KeyUse) -> Vec<Effect> {
    let Some(cat) = app.taxonomy.by_key(key).cloned() else {
        return vec![];
    };
    let targets = app.targets();
    if targets.is_empty() {
        return vec![];
    }
    if let Some(learn) = app.keys_needed(&targets, keys, Action::Classify(key)) {
        return vec![learn];
    }
    let category = Name::new(&cat.id);
    let changes: Vec<Change> = targets
        .iter()
        .filter_map(|&r| app.change_for(r, Some(category), AnnotationSource::Manual))
        .collect();
    let label = if changes.len() == 1 {
        format!("classified as {}", cat.id)
    } else {
        format!("classified {} marked pairs as {}", changes.len(), cat.id)
    };
    save_and_advance(app, &targets, changes, label)
}

/// Save a decision on `targets`, clear the marks and, when it was one
/// pair's, move on to the next unclassified failure.
fn save_and_advance(
    app: &mut App,
    targets: &[u32],
    changes: Vec<Change>,
    label: String,
) -> Vec<Effect> {
    let done: HashSet<u32> = targets.iter().copied().collect();
    app.marks.clear();
    let mut effects = vec![app.save(changes, label)];
    if done.len() == 1 && app.advance_to_unclassified(&done) {
        app.detail_scroll = 0;
        effects.extend(app.detail_effect());
    }
    effects
}

/// Clear the category of the targets that have one.
pub(super) fn clear_category(app: &mut App) -> Vec<Effect> {
    let targets = app.targets();
    let changes: Vec<Change> = targets
        .iter()
        .filter(|&&r| {
            app.mine(&app.index.rows[r as usize])
                .is_some_and(|a| a.category.is_some())
        })
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

/// Give the targets the categories the run suggests for them.
pub(super) fn accept_suggestion(app: &mut App, keys: KeyUse) -> Vec<Effect> {
    let targets = app.targets();
    if app.blind() {
        app.say(
            "blind review: the suggestion stays hidden until you decide; give the pair a category key",
            MessageKind::Info,
        );
        return vec![];
    }
    if let Some(learn) = app.keys_needed(&targets, keys, Action::AcceptSuggestion) {
        return vec![learn];
    }
    let changes: Vec<Change> = targets
        .iter()
        .filter_map(|&r| {
            let row = &app.index.rows[r as usize];
            let id = row.suggestion()?;
            app.taxonomy.by_id(id)?;
            app.change_for(r, Some(Name::new(id)), AnnotationSource::Suggestion)
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
    save_and_advance(app, &targets, changes, label)
}

/// Ask before accepting the suggestion of every unclassified failure in view.
pub(super) fn accept_all_suggestions(app: &mut App, keys: KeyUse) -> Vec<Effect> {
    if app.blind() {
        app.say(
            "blind review: the suggestions stay hidden until you decide; give each pair a category key",
            MessageKind::Info,
        );
        return vec![];
    }
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
    if let Some(learn) = app.keys_needed(&candidates, keys, Action::AcceptAllSuggestions) {
        return vec![learn];
    }
    let changes = app.suggestion_changes(&candidates);
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
        on_yes: OnYes::Save {
            label: format!("accepted {} suggestions", changes.len()),
            changes,
        },
    });
    vec![]
}

/// Open the picker that gives every pair in view one category.
pub(super) fn classify_view(app: &mut App) -> Vec<Effect> {
    if app.view.is_empty() {
        app.say("no pairs in view", MessageKind::Info);
        return vec![];
    }
    app.overlay = Overlay::PickCategory {
        rows: app.view.clone(),
        resolve: false,
    };
    vec![]
}

/// Move to the next pair in view whose reviewers disagree.
pub(super) fn next_disagreement(app: &mut App) -> Vec<Effect> {
    if app.advance_to_disagreement() {
        app.detail_scroll = 0;
        return app.detail_effect().into_iter().collect();
    }
    app.say(
        "no pair in view where reviewers disagree without a resolution (a shows every pair; disagree:yes filters them)",
        MessageKind::Info,
    );
    vec![]
}

/// Open the picker that resolves the reviewers' disagreement on the selected pair.
pub(super) fn resolve(app: &mut App) -> Vec<Effect> {
    let Some(r) = app.selected_row() else {
        app.say("select a pair to resolve", MessageKind::Info);
        return vec![];
    };
    let row = app.index.rows[r as usize];
    if app.hides_others(&row) {
        app.say(
            "blind review: decide the pair first; the other decisions show after yours",
            MessageKind::Info,
        );
        return vec![];
    }
    let key = app.index.current_key(&app.store, &row);
    let agreement = key.and_then(|k| app.store.agreement(&k));
    use crate::core::annotations::Agreement;
    if !matches!(agreement, Some(Agreement::Disagree | Agreement::Resolved)) {
        app.say(
            "the reviewers of this pair do not disagree: there is nothing to resolve (d goes to the next disagreement)",
            MessageKind::Info,
        );
        return vec![];
    }
    app.overlay = Overlay::PickCategory {
        rows: vec![r],
        resolve: true,
    };
    vec![]
}
