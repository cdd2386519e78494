//! Several reviewers in the viewer, without a terminal: who said what in
//! the detail, `d` to the next disagreement, `=` and a category key to
//! resolve one (a resolution event in the journal), blind review, and the
//! summary's kappa per pair of reviewers; `update` tests and snapshots.

use std::fs;
use std::path::{Path, PathBuf};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tempfile::TempDir;

use triage::core::annotations::{Agreement, AnnotationSource, AnnotationStore, Change};
use triage::core::index::keys::line_key;
use triage::tui::action::Action;
use triage::tui::app::{self, App, Effect, Overlay};
use triage::tui::keymap::Keymap;
use triage::tui::style::Theme;
use triage::tui::{testing, ui};

const RICH: &str = "sample-runs/support-urgency.jsonl";
const AT: &str = "2025-06-02T09:30:00Z";

/// (case, variant, ana's category, bob's category)
const DECISIONS: &[(&str, &str, &str, &str)] = &[
    (
        "checkout-outage-001",
        "irrelevant-ui-metadata",
        "distractor",
        "distractor",
    ),
    (
        "checkout-outage-001",
        "remove-scope-evidence",
        "missing-evidence",
        "boundary",
    ),
    (
        "login-failures-002",
        "question-typo",
        "ambiguous-contract",
        "ambiguous-contract",
    ),
    (
        "billing-double-charge-003",
        "irrelevant-campaign-tag",
        "distractor",
        "ambiguous-contract",
    ),
];

struct Fixture {
    app: App,
    theme: Theme,
    journal: PathBuf,
    width: u16,
    height: u16,
    _dir: TempDir,
}

/// The journal lines of ana's and bob's decisions, at a fixed time.
fn journal_text(run: &Path) -> String {
    let text = fs::read_to_string(run).expect("the run");
    let mut out = String::new();
    for (case, variant, a, b) in DECISIONS {
        let line = text
            .lines()
            .find(|l| {
                l.contains(&format!(
                    "\"case_id\":\"{case}\",\"variant_id\":\"{variant}\""
                ))
            })
            .unwrap_or_else(|| panic!("{case}/{variant} is not in the sample"));
        let key = line_key(line.as_bytes()).expect("a key");
        for (who, cat) in [("ana", a), ("bob", b)] {
            out.push_str(
                &serde_json::json!({
                    "v": 1, "key": key.to_string(), "case_id": case, "variant_id": variant,
                    "category": cat, "note": null, "reviewer": who, "at": AT,
                    "source": "manual", "prev": null,
                })
                .to_string(),
            );
            out.push('\n');
        }
    }
    out
}

impl Fixture {
    fn new(reviewer: &str, blind: bool, width: u16, height: u16) -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        let journal = dir.path().join("run.triage.jsonl");
        fs::write(&journal, journal_text(Path::new(RICH))).expect("journal");
        let theme = Theme::dark();
        let mut app = testing::app_for_size(&[RICH], &journal, reviewer, width, height, &theme);
        app.set_blind(blind);
        let mut f = Fixture {
            app,
            theme,
            journal,
            width,
            height,
            _dir: dir,
        };
        f.run(vec![]);
        f
    }

    fn run(&mut self, effects: Vec<Effect>) -> Vec<Effect> {
        let done = testing::run_effects(&mut self.app, effects, &self.theme);
        testing::resize(&mut self.app, self.width, self.height, &self.theme);
        testing::settle(&mut self.app, &self.theme);
        done
    }

    fn act(&mut self, action: Action) -> Vec<Effect> {
        let effects = app::update(&mut self.app, action);
        self.run(effects)
    }

    fn selected(&self) -> (String, String) {
        let row = self.app.selected_row().expect("a selection");
        let r = &self.app.index.rows[row as usize];
        (
            self.app.index.str(r.case).to_string(),
            self.app.index.str(r.variant).to_string(),
        )
    }

    fn select(&mut self, case: &str, variant: &str) {
        self.act(Action::FirstPair);
        for _ in 0..self.app.view.len() {
            if self.selected() == (case.to_string(), variant.to_string()) {
                return;
            }
            self.act(Action::NextPair);
        }
        panic!("{case}/{variant} is not in view");
    }

    fn screen(&self) -> String {
        let mut terminal =
            Terminal::new(TestBackend::new(self.width, self.height)).expect("terminal");
        terminal
            .draw(|f| ui::render(f, &self.app, &Keymap::default_keymap(), &self.theme))
            .expect("draw");
        terminal.backend().to_string()
    }
}

#[test]
fn d_walks_the_disagreements_in_view_and_wraps() {
    let mut f = Fixture::new("cy", false, 120, 40);
    let mut seen = Vec::new();
    for _ in 0..3 {
        f.act(Action::NextDisagreement);
        seen.push(f.selected());
    }
    assert_eq!(
        seen,
        vec![
            ("checkout-outage-001".into(), "remove-scope-evidence".into()),
            (
                "billing-double-charge-003".into(),
                "irrelevant-campaign-tag".into()
            ),
            ("checkout-outage-001".into(), "remove-scope-evidence".into()),
        ]
    );
}

#[test]
fn resolving_records_a_resolution_event_and_the_pair_leaves_the_queue() {
    let mut f = Fixture::new("cy", false, 120, 40);
    // On a pair the reviewers agree on, = says there is nothing to resolve.
    f.select("checkout-outage-001", "irrelevant-ui-metadata");
    assert_eq!(f.act(Action::ResolveDisagreement), vec![]);
    assert_eq!(f.app.overlay, Overlay::None);
    assert!(
        f.app
            .message
            .as_ref()
            .is_some_and(|m| m.0.contains("do not disagree"))
    );

    f.act(Action::NextDisagreement);
    assert_eq!(f.selected().1, "remove-scope-evidence");
    f.act(Action::ResolveDisagreement);
    assert!(matches!(
        f.app.overlay,
        Overlay::PickCategory { resolve: true, .. }
    ));
    let done = f.act(Action::Classify('5'));
    assert!(
        matches!(done.as_slice(), [Effect::Resolve { changes, .. }] if changes.len() == 1 && changes[0].change.category.as_deref() == Some("boundary")),
        "{done:?}"
    );
    assert_eq!(f.app.overlay, Overlay::None);

    // The journal holds a resolution naming the resolver and both decisions.
    let text = fs::read_to_string(&f.journal).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["kind"], "resolution");
    assert_eq!(last["reviewer"], "cy");
    assert_eq!(last["category"], "boundary");
    assert_eq!(
        last["resolves"],
        serde_json::json!([
            {"reviewer": "ana", "category": "missing-evidence"},
            {"reviewer": "bob", "category": "boundary"},
        ])
    );
    // The pair shows the resolved category; the queue skips it now.
    let row = f.app.selected_row().unwrap();
    let r = f.app.index.rows[row as usize];
    assert!(!f.app.disagrees(&r));
    assert_eq!(
        f.app.annotation(&r).and_then(|a| a.category).as_deref(),
        Some("boundary")
    );
    f.act(Action::NextDisagreement);
    assert_eq!(f.selected().1, "irrelevant-campaign-tag");
    f.act(Action::NextDisagreement);
    assert_eq!(
        f.selected().1,
        "irrelevant-campaign-tag",
        "the only one left"
    );

    // Another triage sees it as resolved.
    let other = AnnotationStore::read(&f.journal).unwrap();
    let resolved = other
        .all()
        .into_iter()
        .find(|a| &*a.variant_id == "remove-scope-evidence")
        .unwrap();
    assert_eq!(resolved.category.as_deref(), Some("boundary"));
    assert_eq!(other.agreement(&resolved.key), Some(Agreement::Resolved));
}

#[test]
fn a_category_key_changes_only_this_reviewers_decision() {
    let mut f = Fixture::new("ana", false, 120, 40);
    f.select("checkout-outage-001", "irrelevant-ui-metadata");
    let row = f.app.selected_row().unwrap();
    let r = f.app.index.rows[row as usize];
    f.act(Action::Classify('5'));
    let key = f.app.index.current_key(&f.app.store, &r).unwrap();
    assert_eq!(
        f.app.store.mine(&key).unwrap().category.as_deref(),
        Some("boundary")
    );
    assert_eq!(
        f.app
            .store
            .decision_of(&key, "bob")
            .unwrap()
            .category
            .as_deref(),
        Some("distractor")
    );
    assert!(f.app.disagrees(&r), "ana now disagrees with bob");
    // Undo puts ana's own decision back, and the two agree again.
    f.act(Action::Undo);
    assert!(!f.app.disagrees(&r));
    assert_eq!(
        f.app.store.mine(&key).unwrap().category.as_deref(),
        Some("distractor")
    );
}

#[test]
fn blind_review_hides_the_others_and_the_suggestion_until_this_reviewer_decides() {
    let mut f = Fixture::new("cy", true, 120, 40);
    f.select("checkout-outage-001", "irrelevant-ui-metadata");
    let row = f.app.selected_row().unwrap();
    let r = f.app.index.rows[row as usize];
    assert!(f.app.hides_others(&r));
    assert!(f.app.annotation(&r).is_none());
    let screen = f.screen();
    assert!(screen.contains("blind    2 other reviewers' decisions · the suggestion · hidden until you decide this pair"), "{screen}");
    assert!(!screen.contains("suggested "), "{screen}");
    assert!(!screen.contains("said "), "{screen}");
    insta::assert_snapshot!("blind_before_deciding", screen);
    // y does not accept a suggestion it has not shown.
    assert_eq!(f.act(Action::AcceptSuggestion), vec![]);
    assert!(
        f.app
            .message
            .as_ref()
            .is_some_and(|m| m.0.starts_with("blind review"))
    );
    // = cannot resolve what it does not show.
    f.act(Action::ResolveDisagreement);
    assert_eq!(f.app.overlay, Overlay::None);
    // Deciding shows everything.
    f.select("checkout-outage-001", "irrelevant-ui-metadata");
    f.act(Action::Classify('1'));
    f.select("checkout-outage-001", "irrelevant-ui-metadata");
    assert!(!f.app.hides_others(&r));
    let screen = f.screen();
    assert!(
        screen.contains("said     ana distractor · bob distractor · cy ambiguous-contract"),
        "{screen}"
    );
    assert!(screen.contains("DISAGREE"), "{screen}");
}

#[test]
fn the_detail_shows_who_said_what() {
    let mut f = Fixture::new("cy", false, 120, 40);
    f.select("billing-double-charge-003", "irrelevant-campaign-tag");
    insta::assert_snapshot!("detail_of_a_disagreement", f.screen());
    f.select("checkout-outage-001", "irrelevant-ui-metadata");
    let screen = f.screen();
    assert!(
        screen.contains("said     ana distractor · bob distractor"),
        "{screen}"
    );
    assert!(
        screen.contains("agreed   every reviewer named the same category"),
        "{screen}"
    );
}

#[test]
fn the_summary_shows_kappa_per_pair_of_reviewers() {
    let mut f = Fixture::new("cy", false, 120, 40);
    f.act(Action::ShowSummary);
    let Overlay::Summary(v) = &f.app.overlay else {
        panic!("the summary");
    };
    let names: Vec<(&str, &str)> = v
        .agreement
        .iter()
        .map(|r| (r.a.as_str(), r.b.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("ana", "bob"),
            ("ana", "suggestions"),
            ("bob", "suggestions")
        ]
    );
    assert_eq!(v.agreement[0].pairs, 4);
    insta::assert_snapshot!("summary_with_reviewer_agreement", f.screen());
}

#[test]
fn a_decision_made_in_the_viewer_is_this_reviewers_own() {
    // The store records the viewer's reviewer; a change built for a pair keeps
    // the reviewer's own note, not another reviewer's.
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.triage.jsonl");
    let mut bob = AnnotationStore::open(&journal, "bob").unwrap();
    let app = testing::app_for(&[RICH], &dir.path().join("probe.triage.jsonl"), "x");
    // The pair the viewer opens on: the first failure.
    let r = *app
        .index
        .rows
        .iter()
        .find(|r| r.status().is_failure())
        .unwrap();
    let line = app.index.read_line_from(r.pos).unwrap();
    let key = line_key(&line).unwrap();
    bob.apply(vec![Change {
        key,
        case_id: app.index.str(r.case).into(),
        variant_id: app.index.str(r.variant).into(),
        category: Some("distractor".into()),
        note: Some("bob's note".into()),
        source: AnnotationSource::Manual,
    }])
    .unwrap();
    drop(bob);
    drop(app);
    let mut f = Fixture {
        app: testing::app_for(&[RICH], &journal, "ana"),
        theme: Theme::dark(),
        journal: journal.clone(),
        width: 120,
        height: 40,
        _dir: dir,
    };
    f.act(Action::Classify('5'));
    let store = AnnotationStore::read(&journal).unwrap();
    let ana = store.decision_of(&key, "ana").unwrap();
    assert_eq!(ana.category.as_deref(), Some("boundary"));
    assert_eq!(ana.note, None, "bob's note stays bob's");
    assert_eq!(
        store.decision_of(&key, "bob").unwrap().note.as_deref(),
        Some("bob's note")
    );
}

/// Every pair's (query, pairs in view), for the blind and the open review.
fn matches(f: &mut Fixture, queries: &[&str]) -> Vec<usize> {
    queries
        .iter()
        .map(|q| {
            f.app.set_query(q).expect("a query");
            f.app.view.len()
        })
        .collect()
}

/// The categories the facets panel counts, with their failures.
fn category_facet(f: &mut Fixture) -> Vec<(String, u64)> {
    f.act(Action::ShowFacets);
    let Overlay::Facets(panel) = &f.app.overlay else {
        panic!("the facets panel");
    };
    let facet = panel
        .facets
        .iter()
        .find(|x| x.field == "category")
        .expect("a category facet");
    let out = facet
        .entries
        .iter()
        .map(|e| (e.value.clone(), e.failures))
        .collect();
    f.act(Action::Close);
    out
}

/// The pairs of a JSON export started from the viewer, as values.
fn export_json(f: &mut Fixture) -> Vec<serde_json::Value> {
    let path = f
        ._dir
        .path()
        .join(format!("export-{}.json", f.app.undo.len()));
    let rows = f.app.view.clone();
    f.run(vec![Effect::Export {
        format: triage::core::export::Format::Json,
        path: path.display().to_string(),
        rows,
        overwrite: true,
    }]);
    let doc: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).expect("the export")).expect("JSON");
    doc["pairs"].as_array().expect("pairs").clone()
}

#[test]
fn blind_review_leaks_nothing_through_counts_queries_facets_summary_or_exports() {
    const QUERIES: &[&str] = &[
        "category:any",
        "category:distractor",
        "disagree:yes",
        "reviewer:ana|bob",
        "suggested:*",
        "source:manual",
    ];
    // Open review first: every route below does show the others' work.
    let mut open = Fixture::new("cy", false, 120, 40);
    let failures = open.app.view.len();
    assert!(open.app.classified > 0);
    let seen = matches(&mut open, QUERIES);
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
    open.app.set_query("").unwrap();
    assert!(
        category_facet(&mut open)
            .iter()
            .any(|(c, _)| c == "distractor")
    );
    let pairs = export_json(&mut open);
    assert!(pairs.iter().any(|p| p["reviewer"] == "bob"));
    assert!(pairs.iter().any(|p| !p["suggestion"].is_null()));

    let mut f = Fixture::new("cy", true, 120, 40);
    assert_eq!(f.app.view.len(), failures);
    // The status bar's count of classified failures.
    assert_eq!(f.app.classified, 0);
    // Queries on the decisions and the suggestion match nothing the
    // reviewer has not decided; their negations match every pair.
    assert_eq!(matches(&mut f, QUERIES), vec![0; QUERIES.len()]);
    let negated: Vec<String> = QUERIES.iter().map(|q| format!("-{q}")).collect();
    let negated: Vec<&str> = negated.iter().map(String::as_str).collect();
    assert_eq!(matches(&mut f, &negated), vec![failures; QUERIES.len()]);
    f.app.set_query("").unwrap();
    // Y accepts no suggestion it has not shown.
    assert_eq!(f.act(Action::AcceptAllSuggestions), vec![]);
    assert_eq!(f.app.overlay, Overlay::None);
    // d finds no disagreement to walk to.
    f.act(Action::FirstPair);
    f.act(Action::NextDisagreement);
    assert!(
        f.app
            .message
            .as_ref()
            .is_some_and(|m| m.0.starts_with("no pair in view")),
        "{:?}",
        f.app.message
    );
    // The facets count every failure as uncategorised, and say why.
    assert_eq!(
        category_facet(&mut f),
        vec![("none".to_string(), failures as u64)]
    );
    f.act(Action::ShowFacets);
    assert!(
        f.screen()
            .contains("blind: only the pairs you decided count")
    );
    f.act(Action::Close);
    // The summary: nothing classified, no kappa, and a line saying why.
    f.act(Action::ShowSummary);
    let Overlay::Summary(v) = &f.app.overlay else {
        panic!("the summary");
    };
    assert!(v.blind);
    assert!(v.agreement.is_empty());
    assert_eq!(v.by_transformation.classified, 0);
    let screen = f.screen();
    assert!(!screen.contains("Reviewer agreement"), "{screen}");
    assert!(!screen.contains("distractor"), "{screen}");
    insta::assert_snapshot!("blind_summary", screen);
    f.act(Action::Close);
    // An export from the viewer: no decision, resolution or suggestion.
    for p in export_json(&mut f) {
        assert!(p["category"].is_null(), "{p}");
        assert!(p["reviewer"].is_null(), "{p}");
        assert!(p["agreement"].is_null(), "{p}");
        assert_eq!(p["decisions"], serde_json::json!([]), "{p}");
        assert!(p["suggestion"].is_null(), "{p}");
    }
    assert!(
        f.app
            .message
            .as_ref()
            .is_some_and(|m| m.0.contains("blind review")),
        "{:?}",
        f.app.message
    );

    // Once cy decides a pair, that pair (and only that one) shows.
    f.select("checkout-outage-001", "irrelevant-ui-metadata");
    f.act(Action::Classify('1'));
    assert_eq!(
        matches(
            &mut f,
            &["category:any", "disagree:yes", "reviewer:ana|bob|cy"]
        ),
        vec![0, 1, 1]
    );
    f.app.set_query("").unwrap();
    let pairs = export_json(&mut f);
    let decided: Vec<&serde_json::Value> = pairs
        .iter()
        .filter(|p| p["agreement"] == "disagree")
        .collect();
    assert_eq!(decided.len(), 1);
    assert_eq!(decided[0]["decisions"].as_array().map(Vec::len), Some(3));
    assert!(!decided[0]["suggestion"].is_null());
    assert_eq!(
        pairs.iter().filter(|p| !p["suggestion"].is_null()).count(),
        1
    );
}

#[test]
fn u_undoes_a_resolution_and_the_disagreement_comes_back() {
    let mut f = Fixture::new("cy", false, 120, 40);
    f.select("checkout-outage-001", "remove-scope-evidence");
    let row = f.app.selected_row().unwrap();
    let r = f.app.index.rows[row as usize];
    assert!(f.app.disagrees(&r));
    f.act(Action::ResolveDisagreement);
    f.act(Action::Classify('5'));
    assert!(!f.app.disagrees(&r));
    assert_eq!(f.app.undo.len(), 1);
    let resolved_lines = fs::read_to_string(&f.journal).unwrap().lines().count();

    // u withdraws the resolution: the pair disagrees again, cy's own
    // (absent) decision is untouched, and the journal says so in an event.
    let effects = app::update(&mut f.app, Action::Undo);
    assert!(
        matches!(
            effects.first(),
            Some(Effect::Resolve {
                guard: app::ResolutionGuard::Undo(_),
                changes,
                ..
            }) if changes[0].change.category.is_none()
        ),
        "{effects:?}"
    );
    f.run(effects);
    assert!(f.app.disagrees(&r));
    assert!(f.app.mine(&r).is_none());
    assert!(
        f.app
            .message
            .as_ref()
            .is_some_and(|m| m.0.starts_with("saved: undid: resolved as boundary")),
        "{:?}",
        f.app.message
    );
    let text = fs::read_to_string(&f.journal).unwrap();
    assert_eq!(text.lines().count(), resolved_lines + 1);
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["kind"], "resolution");
    assert!(last["category"].is_null());
    assert!(f.screen().contains("DISAGREE"));

    // Redo records it again, settling the same decisions.
    f.act(Action::Redo);
    assert!(!f.app.disagrees(&r));
    let text = fs::read_to_string(&f.journal).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["category"], "boundary");
    assert_eq!(
        last["resolves"],
        serde_json::json!([
            {"reviewer": "ana", "category": "missing-evidence"},
            {"reviewer": "bob", "category": "boundary"},
        ])
    );

    // Another triage resolves the pair otherwise since: u writes nothing.
    let mut other = AnnotationStore::open(&f.journal, "dee").unwrap();
    let key = f.app.index.current_key(&f.app.store, &r).unwrap();
    other
        .resolve(vec![Change {
            key,
            case_id: "checkout-outage-001".into(),
            variant_id: "remove-scope-evidence".into(),
            category: Some("missing-evidence".into()),
            note: None,
            source: AnnotationSource::Manual,
        }])
        .unwrap();
    drop(other);
    let before = fs::read_to_string(&f.journal).unwrap();
    f.act(Action::Undo);
    assert!(
        f.app
            .message
            .as_ref()
            .is_some_and(|m| m.0.starts_with("NOT UNDONE")
                && m.0
                    .contains("it is resolved as missing-evidence now, by dee")),
        "{:?}",
        f.app.message
    );
    assert_eq!(fs::read_to_string(&f.journal).unwrap(), before);
    assert!(f.app.redo.is_empty(), "the refused step is dropped");
    assert_eq!(
        f.app.annotation(&r).and_then(|a| a.category).as_deref(),
        Some("missing-evidence")
    );
}
