//! The run before this one (`triage NEW --baseline OLD`): its index and
//! journal, the comparison once NEW is indexed, and the carry prompt.
//!
//! The comparison may read lines again (of matched pairs whose inputs
//! digests differ), so the effect runner computes it ([`crate::tui::effects::compare_baseline`]) when the
//! run's first pass is done, as it grows, and after a reload; until then
//! no row has a change. `update` only reads it: the change column, the
//! `change:` query field, the facets, the summary's movement, the detail's
//! baseline lines, and [`carry_prompt`], which asks before
//! [`Effect::Carry`] copies the carried decisions into this run's journal.

use std::collections::BTreeSet;

use crate::core::annotations::AnnotationStore;
use crate::core::compare::{ChangeKind, Comparison, Decision, Entry, Runs};
use crate::core::index::RunIndex;
use crate::core::text::{inert_line, plural};

use super::{App, Confirm, Effect, MessageKind, OnYes, Overlay};

/// The baseline run and what comparing with it found.
pub struct Baseline {
    pub old: RunIndex,
    /// OLD's journal, read-only (`None`: nobody annotated it).
    pub old_store: Option<AnnotationStore>,
    /// `None` until this run is indexed and compared.
    pub comparison: Option<Comparison>,
    /// Why the comparison failed, when it did.
    pub failed: Option<String>,
}

impl Baseline {
    /// A baseline not compared yet.
    pub fn new(old: RunIndex, old_store: Option<AnnotationStore>) -> Baseline {
        Baseline {
            old,
            old_store,
            comparison: None,
            failed: None,
        }
    }
}

impl App {
    /// Each row's change, when a comparison is done.
    pub fn changes(&self) -> Option<&[ChangeKind]> {
        self.baseline
            .as_ref()?
            .comparison
            .as_ref()
            .map(Comparison::changes)
    }

    /// A row's change since the baseline.
    pub fn change_of(&self, row: u32) -> Option<ChangeKind> {
        self.baseline.as_ref()?.comparison.as_ref()?.change(row)
    }

    /// Both runs with their journals, for the comparison's look-ups.
    pub fn runs(&self) -> Option<(Runs<'_>, &Comparison)> {
        let b = self.baseline.as_ref()?;
        let cmp = b.comparison.as_ref()?;
        Some((
            Runs {
                old: &b.old,
                old_store: b.old_store.as_ref(),
                new: &self.index,
                new_store: Some(&self.store),
            },
            cmp,
        ))
    }

    /// The baseline's decision on a row that has none of its own: carried
    /// (identical inputs) or stale (the inputs changed).
    pub fn baseline_decision(&self, row: u32) -> Option<Decision<'_>> {
        let (runs, cmp) = self.runs()?;
        // Blind review hides the earlier run's decision too, until this
        // reviewer decides the pair: it is the same anchor.
        if self.hides_others(self.index.rows.get(row as usize)?) {
            return None;
        }
        let e = Entry {
            change: cmp.change(row)?,
            new_row: Some(row),
            old_row: cmp.old_row(row),
        };
        match cmp.decision(runs, e)? {
            Decision::Own(_) => None,
            d => Some(d),
        }
    }

    /// The baseline run's name, for titles.
    pub fn baseline_name(&self) -> Option<String> {
        Some(self.baseline.as_ref()?.old.display_name())
    }
}

/// `B`: ask before copying the carried decisions into this run's journal,
/// naming how many, who made them, when, and on which run.
pub fn carry_prompt(app: &mut App) -> Vec<Effect> {
    let Some(b) = app.baseline.as_ref() else {
        app.say(
            "no baseline to carry decisions from: open with triage NEW --baseline OLD",
            MessageKind::Info,
        );
        return vec![];
    };
    if let Some(why) = &b.failed {
        let msg = format!("cannot compare with the baseline: {why}");
        app.say(msg, MessageKind::Error);
        return vec![];
    }
    let Some((runs, cmp)) = app.runs() else {
        app.say(
            "still comparing with the baseline; press B again in a moment",
            MessageKind::Info,
        );
        return vec![];
    };
    let plan = cmp.carry_plan(runs);
    let stale = cmp
        .entries()
        .filter(|&e| cmp.decision(runs, e).is_some_and(|d| d.is_stale()))
        .count() as u64;
    let stale_note = if stale > 0 {
        format!(
            "; {} on changed inputs {} stale",
            plural(stale, "decision", "decisions"),
            if stale == 1 { "stays" } else { "stay" }
        )
    } else {
        String::new()
    };
    if plan.is_empty() {
        let msg = format!(
            "nothing to carry: no pair that still fails with identical inputs has a baseline decision and none here{stale_note}"
        );
        app.say(msg, MessageKind::Info);
        return vec![];
    }
    let reviewers: BTreeSet<&str> = plan
        .iter()
        .map(|c| c.provenance.reviewer.as_str())
        .collect();
    let mut dates: Vec<&str> = plan
        .iter()
        .map(|c| c.provenance.at.get(..10).unwrap_or(&c.provenance.at))
        .collect();
    dates.sort_unstable();
    let when = match (dates.first(), dates.last()) {
        (Some(a), Some(z)) if a != z => format!("{a} to {z}"),
        (Some(a), _) => a.to_string(),
        _ => String::new(),
    };
    let when = inert_line(&when);
    let question = format!(
        "Copy {} made by {} on {when} in {} into this run's journal{stale_note}?",
        plural(plan.len() as u64, "carried decision", "carried decisions"),
        inert_line(&reviewers.into_iter().collect::<Vec<_>>().join(", ")),
        inert_line(&runs.old.display_name()),
    );
    app.overlay = Overlay::Confirm(Confirm {
        question,
        on_yes: OnYes::Carry,
    });
    vec![]
}
