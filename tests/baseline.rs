//! The viewer compared with a baseline (`triage NEW --baseline OLD`):
//! `update` on the change column's data, the `change:` query, the facets,
//! the carry prompt and what it writes, and snapshots of the screens. The
//! comparison sample (`sample-runs/compare-*.jsonl` and the journal of the
//! first) is copied into a temp dir; the screens open it by relative path.

use std::fs;
use std::path::PathBuf;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::Value;
use tempfile::TempDir;

use triage::core::compare::ChangeKind;
use triage::tui::action::Action;
use triage::tui::app::{self, App, Effect, MessageKind, Overlay};
use triage::tui::keymap::Keymap;
use triage::tui::style::Theme;
use triage::tui::{testing, ui};

const OLD: &str = "sample-runs/compare-before.jsonl";
const NEW: &str = "sample-runs/compare-after.jsonl";

struct Fixture {
    // Declared before `dir` so the store (and its lock) is dropped first.
    app: App,
    theme: Theme,
    journal: PathBuf,
    width: u16,
    height: u16,
    _dir: TempDir,
}

impl Fixture {
    /// NEW opened by its relative path with its journal in a temp dir, and
    /// compared with OLD and OLD's committed journal.
    fn new(width: u16, height: u16) -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        let journal = dir.path().join("after.triage.jsonl");
        let theme = Theme::dark();
        let mut app = testing::app_for_size(&[NEW], &journal, "cy", width, height, &theme);
        testing::with_baseline(&mut app, OLD, None, &theme);
        Fixture {
            app,
            theme,
            journal,
            width,
            height,
            _dir: dir,
        }
    }

    fn act(&mut self, action: Action) -> Vec<Effect> {
        let effects = app::update(&mut self.app, action);
        let done = testing::run_effects(&mut self.app, effects, &self.theme);
        testing::resize(&mut self.app, self.width, self.height, &self.theme);
        testing::settle(&mut self.app, &self.theme);
        done
    }

    fn screen(&self) -> Terminal<TestBackend> {
        let mut t = Terminal::new(TestBackend::new(self.width, self.height)).expect("terminal");
        t.draw(|f| ui::render(f, &self.app, &Keymap::default_keymap(), &self.theme))
            .expect("draw");
        t
    }

    fn selected(&self) -> (String, String) {
        let r = &self.app.index.rows[self.app.selected_row().expect("a selection") as usize];
        (
            self.app.index.str(r.case).to_string(),
            self.app.index.str(r.variant).to_string(),
        )
    }
}

#[test]
fn every_row_gets_its_change_once_the_run_is_compared() {
    let f = Fixture::new(140, 40);
    let changes = f.app.changes().expect("compared");
    assert_eq!(changes.len(), f.app.index.rows.len());
    assert_eq!(f.app.change_of(3), Some(ChangeKind::NewFailures));
    assert_eq!(f.app.change_of(2), Some(ChangeKind::Fixed));
    assert_eq!(f.app.change_of(17), Some(ChangeKind::Added));
    // The baseline's decisions where this run has none: carried or stale.
    let d = f.app.baseline_decision(6).expect("a carried decision");
    assert!(!d.is_stale());
    assert_eq!(d.annotation().category.as_deref(), Some("missing-evidence"));
    let d = f.app.baseline_decision(10).expect("a stale decision");
    assert!(d.is_stale());
}

#[test]
fn change_queries_filter_the_list() {
    let mut f = Fixture::new(140, 40);
    f.app.set_query("change:new_failures").expect("query");
    let ids: Vec<String> = f
        .app
        .view
        .iter()
        .map(|&r| {
            f.app
                .index
                .str(f.app.index.rows[r as usize].variant)
                .to_string()
        })
        .collect();
    assert_eq!(ids, ["irrelevant-ui-metadata", "remove-user-agent"]);
    // Fixed pairs pass now: they show with every pair, not among failures.
    f.app.set_query("change:fixed").expect("query");
    assert!(f.app.view.is_empty());
    f.act(Action::ToggleAllPairs);
    assert_eq!(f.app.view, [2, 13]);
}

#[test]
fn the_facets_count_changes_first() {
    let mut f = Fixture::new(140, 40);
    f.act(Action::ToggleAllPairs);
    f.act(Action::ShowFacets);
    let Overlay::Facets(panel) = &f.app.overlay else {
        panic!("the facets are open");
    };
    let change = &panel.facets[0];
    assert_eq!(change.field, "change");
    let counts: Vec<(&str, u64, u64)> = change
        .entries
        .iter()
        .map(|e| (e.value.as_str(), e.pairs, e.failures))
        .collect();
    assert_eq!(
        counts,
        [
            ("new_failures", 2, 2),
            ("fixed", 2, 0),
            ("still_failing", 4, 4),
            ("status_changed", 1, 1),
            ("content_changed", 1, 1),
            ("added", 1, 0),
            ("unchanged_pass", 7, 0),
        ]
    );
    // Choosing one adds it to the query.
    f.act(Action::Choose);
    assert_eq!(
        f.app.query.as_ref().map(|q| q.to_string()),
        Some("change:new_failures".to_string())
    );
    assert_eq!(f.app.view.len(), 2);
}

#[test]
fn carrying_asks_first_and_writes_with_provenance() {
    let mut f = Fixture::new(140, 40);
    let effects = f.act(Action::CarryDecisions);
    assert!(effects.is_empty());
    let Overlay::Confirm(c) = &f.app.overlay else {
        panic!("a prompt: {:?}", f.app.overlay);
    };
    assert_eq!(
        c.question,
        "Copy 2 carried decisions made by ana on 2026-11-28 in sample-runs/compare-before.jsonl into this run's journal; 1 decision on changed inputs stays stale?"
    );
    // No: nothing is written.
    f.act(Action::Cancel);
    assert!(matches!(f.app.overlay, Overlay::None));
    assert!(!f.journal.exists());
    // Yes: one save of both, each with where it came from.
    f.act(Action::CarryDecisions);
    let done = f.act(Action::Confirm);
    assert_eq!(done, [Effect::Carry]);
    assert!(matches!(
        &f.app.message,
        Some((m, MessageKind::Saved)) if m.starts_with("saved: 2 decisions carried from the baseline")
    ));
    let events: Vec<Value> = fs::read_to_string(&f.journal)
        .expect("the journal")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 2);
    for e in &events {
        assert_eq!(e["reviewer"], "cy");
        assert_eq!(e["carried_from"]["reviewer"], "ana");
        assert_eq!(e["carried_from"]["run"], OLD);
    }
    assert_eq!(f.app.classified, 2);
    // They are this run's own decisions now; a second B has nothing to do.
    assert!(f.app.baseline_decision(6).is_none());
    f.act(Action::CarryDecisions);
    assert!(matches!(f.app.overlay, Overlay::None));
    assert!(matches!(
        &f.app.message,
        Some((m, MessageKind::Info)) if m.starts_with("nothing to carry")
    ));
}

#[test]
fn without_a_baseline_carrying_says_how_to_get_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let journal = dir.path().join("j.triage.jsonl");
    let mut app = testing::app_for(&[NEW], &journal, "cy");
    let effects = app::update(&mut app, Action::CarryDecisions);
    assert!(effects.is_empty());
    assert!(matches!(
        &app.message,
        Some((m, MessageKind::Info)) if m.contains("--baseline OLD")
    ));
    assert!(app.changes().is_none());
}

#[test]
fn list_and_detail_compared_with_the_baseline() {
    let mut f = Fixture::new(140, 40);
    insta::assert_snapshot!("baseline_list", f.screen().backend());
    // A pair whose inputs changed: the baseline's decision is stale.
    while f.selected() != ("login-failures-002".into(), "reorder-fields".into()) {
        f.act(Action::NextPair);
    }
    insta::assert_snapshot!("baseline_stale", f.screen().backend());
}

#[test]
fn summary_shows_the_movement_per_transformation() {
    let mut f = Fixture::new(140, 40);
    f.act(Action::ShowSummary);
    assert!(matches!(f.app.overlay, Overlay::Summary(_)));
    insta::assert_snapshot!("baseline_summary", f.screen().backend());
}

#[test]
fn the_carry_prompt_on_screen() {
    let mut f = Fixture::new(100, 30);
    f.act(Action::CarryDecisions);
    insta::assert_snapshot!("baseline_carry_prompt", f.screen().backend());
}

#[test]
fn a_reload_compares_the_new_rows_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = dir.path().join("after.jsonl");
    fs::copy(NEW, &run).expect("copy");
    let theme = Theme::dark();
    let run_s = run.display().to_string();
    let mut app = testing::app_for_size(
        &[&run_s],
        &dir.path().join("j.triage.jsonl"),
        "cy",
        140,
        40,
        &theme,
    );
    testing::with_baseline(&mut app, OLD, None, &theme);
    let count = |app: &App, c| app.runs().map(|(_, cmp)| cmp.count(c));
    assert_eq!(count(&app, ChangeKind::NewFailures), Some(2));
    // The file now holds the baseline's pairs (as many lines as before).
    fs::copy(OLD, &run).expect("copy");
    let index = triage::core::index::load_run(&[run_s], &Default::default()).expect("load");
    triage::tui::effects::replace_index(&mut app, index);
    assert_eq!(count(&app, ChangeKind::NewFailures), Some(0));
    assert_eq!(count(&app, ChangeKind::UnchangedPass), Some(10));
}

#[test]
fn blind_review_hides_the_baseline_decision_until_the_pair_is_decided() {
    let mut f = Fixture::new(140, 40);
    assert!(f.app.baseline_decision(6).is_some());
    f.app.set_blind(true);
    assert!(f.app.baseline_decision(6).is_none());
    assert!(f.app.baseline_decision(10).is_none());
    let screen = format!("{}", f.screen().backend());
    assert!(!screen.contains("⇠"), "{screen}");
    assert!(!screen.contains("(stale)"), "{screen}");
    f.app.set_blind(false);
    assert!(f.app.baseline_decision(6).is_some());
}
