//! Snapshots of every screen and mode, rendered into a ratatui `TestBackend`.
//!
//! Each test builds an app the way the runner does (`tui::testing`), drives
//! it with `update`/`classify` and the effect runner, draws it with
//! `ui::render` and compares the text of the screen with
//! `tests/snapshots/screens__*.snap`. Review changes with `cargo insta review`
//! (or `INSTA_UPDATE=always cargo test --test screens` and read the diff).
//!
//! Determinism: runs are opened by relative path (the path is on screen), the
//! journal lives in a temp dir, the reviewer is fixed, annotations that are
//! on screen with their time are written into the journal with a fixed `at`
//! before the store opens, and every snapshot is checked not to show an
//! annotation made today. The theme is `Theme::dark()`, never the environment's.

use std::fs;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tempfile::TempDir;

use triage::core::annotations::now_rfc3339;
use triage::core::row::PairRow;
use triage::tui::action::Action;
use triage::tui::app::{self, App, DetailMode, Focus, Overlay};
use triage::tui::keymap::Keymap;
use triage::tui::style::Theme;
use triage::tui::{testing, ui};

const RICH: &str = "sample-runs/support-urgency.jsonl";
const PROBLEMS: &str = "sample-runs/with-problems.jsonl";
const BARE: &str = "sample-runs/bare-camelcase.jsonl";
const REVIEWER: &str = "ana";
const AT: &str = "2025-06-02T09:30:00Z";

/// An app with its journal in a temp dir, and what rendering needs.
struct Screen {
    // Declared before `_dir` so the store (and its lock) is dropped first.
    app: App,
    theme: Theme,
    keymap: Keymap,
    width: u16,
    height: u16,
    _dir: TempDir,
}

/// One annotation to write into the journal before the store opens.
struct Ann<'a> {
    case: &'a str,
    variant: &'a str,
    category: Option<&'a str>,
    note: Option<&'a str>,
    suggestion: bool,
}

impl Screen {
    fn new(run: &str, width: u16, height: u16) -> Screen {
        Screen::with_journal(run, width, height, &[])
    }

    /// Open `run` with a journal that already holds `anns`, at a fixed time.
    fn with_journal(run: &str, width: u16, height: u16, anns: &[Ann]) -> Screen {
        let dir = tempfile::tempdir().expect("temp dir");
        let journal = dir.path().join("run.triage.jsonl");
        let theme = Theme::dark();
        if !anns.is_empty() {
            // The keys come from the run itself, so index it once first.
            let probe = dir.path().join("probe.triage.jsonl");
            let app = testing::app_for_size(&[run], &probe, REVIEWER, width, height, &theme);
            let lines: Vec<String> = anns.iter().map(|a| journal_line(&app, a)).collect();
            fs::write(&journal, lines.join("\n") + "\n").expect("write the journal");
        }
        let app = testing::app_for_size(&[run], &journal, REVIEWER, width, height, &theme);
        Screen {
            app,
            theme,
            keymap: Keymap::default_keymap(),
            width,
            height,
            _dir: dir,
        }
    }

    /// Apply an action and perform its effects, as the runner does.
    fn act(&mut self, action: Action) -> &mut Self {
        let effects = app::update(&mut self.app, action);
        self.run(effects)
    }

    /// Press a category key.
    fn classify(&mut self, key: char) -> &mut Self {
        let effects = app::update(&mut self.app, Action::Classify(key));
        self.run(effects)
    }

    /// Perform effects, then size and load what the next frame needs.
    fn run(&mut self, effects: Vec<app::Effect>) -> &mut Self {
        testing::run_effects(&mut self.app, effects, &self.theme);
        testing::resize(&mut self.app, self.width, self.height, &self.theme);
        testing::settle(&mut self.app, &self.theme);
        self
    }

    /// Move the cursor (with NextPair) to the pair with these ids.
    fn select(&mut self, case: &str, variant: &str) -> &mut Self {
        self.act(Action::FirstPair);
        for _ in 0..self.app.view.len() {
            let row = self.app.selected_row().expect("a selection");
            let r = &self.app.index.rows[row as usize];
            if self.app.index.str(r.case) == case && self.app.index.str(r.variant) == variant {
                return self;
            }
            self.act(Action::NextPair);
        }
        panic!("{case}/{variant} is not in view");
    }

    /// Draw the current state at the screen's size.
    fn draw(&self) -> Terminal<TestBackend> {
        let mut terminal =
            Terminal::new(TestBackend::new(self.width, self.height)).expect("test terminal");
        terminal
            .draw(|f| ui::render(f, &self.app, &self.keymap, &self.theme))
            .expect("draw");
        terminal
    }
}

/// A journal event for a pair of the app's run, with the fixed time.
fn journal_line(app: &App, a: &Ann) -> String {
    let row: &PairRow = app
        .index
        .rows
        .iter()
        .find(|r| app.index.str(r.case) == a.case && app.index.str(r.variant) == a.variant)
        .unwrap_or_else(|| panic!("{}/{} is not in the run", a.case, a.variant));
    let line = app.index.read_line_from(row.pos).expect("the line reads");
    let key = triage::core::index::keys::line_key(&line).expect("the line has a key");
    serde_json::json!({
        "v": 1,
        "key": key.to_string(),
        "case_id": a.case,
        "variant_id": a.variant,
        "category": a.category,
        "note": a.note,
        "reviewer": REVIEWER,
        "at": AT,
        "source": if a.suggestion { "suggestion" } else { "manual" },
        "prev": null,
    })
    .to_string()
}

/// Snapshot the screen, after checking it shows no clock-dependent time.
#[track_caller]
fn snap(name: &str, s: &Screen) {
    let terminal = s.draw();
    let text = terminal.backend().to_string();
    // An annotation's time is shown after its reviewer; one made by this
    // run (not written into the journal with the fixed time) shows today.
    let today = format!("{REVIEWER} {}", &now_rfc3339()[..10]);
    assert!(
        !text.replace(AT, "").contains(&today),
        "{name}: the screen shows an annotation made today ({today}…), so the snapshot is not stable:\n{text}"
    );
    insta::assert_snapshot!(name, terminal.backend());
}

#[test]
fn list_and_detail_of_the_first_failure() {
    let s = Screen::new(RICH, 120, 40);
    assert_eq!(s.app.cursor, 0);
    assert!(s.app.detail.is_some());
    snap("list_and_detail", &s);
}

#[test]
fn detail_scrolled_to_what_changed() {
    let mut s = Screen::new(RICH, 120, 40);
    s.act(Action::FocusNext);
    assert_eq!(s.app.focus, Focus::Detail);
    s.act(Action::NextChange);
    assert!(s.app.detail_scroll > 0, "NextChange scrolled the detail");
    let text = s.draw().backend().to_string();
    assert!(text.contains("What changed"), "{text}");
    snap("detail_what_changed", &s);
}

#[test]
fn detail_of_an_invalid_pair_at_its_first_change() {
    let mut s = Screen::new(RICH, 120, 40);
    s.select("checkout-outage-001", "paraphrase-scope-drift");
    s.act(Action::FocusNext).act(Action::NextChange);
    snap("detail_invalid_pair_change", &s);
}

/// The record's time and its case's metadata (seed 000, section 4) are in
/// the detail's header, on the first screen, in both the unified and the
/// side-by-side views.
#[test]
fn detail_header_shows_the_time_and_the_case_metadata() {
    let mut s = Screen::new("tests/fixtures/stats/seed-names.jsonl", 120, 40);
    let text = s.draw().backend().to_string();
    for shown in [
        "time 2026-11-28T10:00:03Z",
        "gold label urgent · reviewed 2026-11-20T15:04:00Z",
        "notes Confirmed outage; the on-call engineer labelled it urgent.",
    ] {
        assert!(text.contains(shown), "{shown:?} not in\n{text}");
    }
    s.act(Action::ToggleSideBySide);
    let text = s.draw().backend().to_string();
    assert!(text.contains("time 2026-11-28T10:00:03Z"), "{text}");
    // A pair without a time says so.
    let s = Screen::new(BARE, 120, 40);
    let text = s.draw().backend().to_string();
    assert!(text.contains("time not recorded"), "{text}");
}

#[test]
fn side_by_side_mode() {
    let mut s = Screen::new(RICH, 120, 40);
    s.act(Action::ToggleSideBySide);
    snap("side_by_side", &s);
}

#[test]
fn side_by_side_mode_wide() {
    let mut s = Screen::new(RICH, 180, 45);
    s.act(Action::ToggleSideBySide);
    snap("side_by_side_180x45", &s);
}

#[test]
fn raw_mode() {
    let mut s = Screen::new(RICH, 120, 40);
    s.act(Action::ToggleRaw);
    snap("raw", &s);
}

#[test]
fn help_overlay() {
    let mut s = Screen::new(RICH, 120, 40);
    s.act(Action::ToggleHelp);
    snap("help", &s);
    s.act(Action::ScrollBottom);
    snap("help_bottom", &s);
}

#[test]
fn problems_overlay() {
    let mut s = Screen::new(PROBLEMS, 120, 40);
    snap("problems_main", &s);
    s.act(Action::ToggleProblems);
    snap("problems", &s);
}

#[test]
fn problems_overlay_without_problems() {
    let mut s = Screen::new(RICH, 120, 40);
    s.act(Action::ToggleProblems);
    snap("problems_none", &s);
}

#[test]
fn small_60x20() {
    let s = Screen::new(RICH, 60, 20);
    snap("small_60x20", &s);
}

#[test]
fn small_80x24() {
    let s = Screen::new(RICH, 80, 24);
    snap("small_80x24", &s);
}

/// Every category key shows on the legend at every supported width: the ids
/// are shortened alike, then dropped for the keys alone; and a click on each
/// key's place classifies with that key.
#[test]
fn the_legend_shows_every_category_key_at_every_width() {
    for width in [40u16, 60, 80, 100, 120, 200] {
        let s = Screen::new(RICH, width, 24);
        let text = s.draw().backend().to_string();
        let legend = text
            .lines()
            .nth(22)
            .unwrap_or_default()
            .trim_matches('"')
            .to_string();
        for k in 1..=7 {
            assert!(
                legend.contains(&format!(" {k}:")) || legend.contains(&format!(" {k} ")),
                "key {k} missing at width {width}: {legend}"
            );
        }
        let hits = triage::tui::ui::legend_hits(&s.app, width);
        assert_eq!(hits.len(), 7, "width {width}: {hits:?}");
        for (start, _, key) in hits {
            let at: String = legend.chars().skip(start as usize).take(1).collect();
            assert_eq!(at, key.to_string(), "width {width}: {legend}");
        }
    }
}

#[test]
fn small_40x12() {
    let s = Screen::new(RICH, 40, 12);
    snap("small_40x12", &s);
}

/// At 200×50 the list is as wide as its ids need: the transformation and
/// margin columns stay and case ids are whole; the detail takes the rest.
#[test]
fn wide_200x50_shares_the_width_by_content() {
    let s = Screen::new(RICH, 200, 50);
    let text = s.draw().backend().to_string();
    let header = text.lines().nth(1).unwrap_or_default();
    for col in ["TRANSFORMATION", "MARGIN", "CATEGORY"] {
        assert!(header.contains(col), "{col} missing: {header}");
    }
    assert!(text.contains("billing-double-charge-003 "), "{text}");
    assert!(text.contains("password-reset-delay-006 "), "{text}");
    // The detail starts where the list ends, and is no wider than it needs.
    let list_w = header.find("││").map(|b| header[..b].chars().count());
    assert!(list_w.is_some_and(|w| (100..=125).contains(&w)), "{header}");
    snap("wide_200x50", &s);
}

/// A summary table wider than the screen scrolls sideways: the bottom line
/// says so, → brings the cut columns in, ← goes back; text stays wrapped.
#[test]
fn the_summary_scrolls_sideways_when_a_table_is_wider_than_the_screen() {
    let mut s = Screen::new(RICH, 80, 24);
    s.act(Action::ShowSummary);
    for _ in 0..4 {
        s.act(Action::ScrollDown);
    }
    let text = s.draw().backend().to_string();
    assert!(
        text.contains("←/→ scroll sideways: the tables go on →"),
        "{text}"
    );
    assert!(!text.contains("unjudged"), "{text}");
    for _ in 0..4 {
        s.act(Action::ScrollRight);
    }
    let text = s.draw().backend().to_string();
    assert!(text.contains("unjudged"), "{text}");
    assert!(text.contains("scroll sideways (from column"), "{text}");
    snap("summary_80x24_scrolled_sideways", &s);
    for _ in 0..10 {
        s.act(Action::ScrollLeft);
    }
    let text = s.draw().backend().to_string();
    assert!(text.contains("concise-phrasing"), "{text}");
    // At 120×40 every table fits: no sideways scrolling is offered.
    let mut wide = Screen::new(RICH, 120, 40);
    wide.act(Action::ShowSummary);
    let text = wide.draw().backend().to_string();
    assert!(!text.contains("sideways"), "{text}");
    assert!(text.contains("unjudged"), "{text}");
}

#[test]
fn wide_160x40() {
    let s = Screen::new(RICH, 160, 40);
    snap("wide_160x40", &s);
}

#[test]
fn help_at_80x24() {
    let mut s = Screen::new(RICH, 80, 24);
    s.act(Action::ToggleHelp);
    snap("help_80x24", &s);
}

#[test]
fn legend_and_classified_list() {
    let mut s = Screen::with_journal(
        RICH,
        120,
        40,
        &[
            Ann {
                case: "checkout-outage-001",
                variant: "irrelevant-ui-metadata",
                category: Some("distractor"),
                note: Some("UI metadata alone flipped action to pass; repetition 1 holds."),
                suggestion: false,
            },
            Ann {
                case: "checkout-outage-001",
                variant: "remove-scope-evidence",
                category: Some("missing-evidence"),
                note: None,
                suggestion: true,
            },
        ],
    );
    assert_eq!(s.app.classified, 2);
    // The first unclassified failure, then the next ones as each is decided.
    s.act(Action::NextPair).act(Action::NextPair);
    s.classify('5').classify('5').classify('1');
    assert_eq!(s.app.classified, 5);
    snap("classified_list", &s);
    // Back on the first pair: its annotation with the fixed time and note.
    s.act(Action::FirstPair);
    snap("classified_first_pair", &s);
}

#[test]
fn marks_in_the_list() {
    let mut s = Screen::new(RICH, 120, 40);
    s.act(Action::ToggleMark)
        .act(Action::NextPair)
        .act(Action::ToggleMark);
    assert_eq!(s.app.marks.len(), 2);
    snap("marked", &s);
}

#[test]
fn note_editor_with_text() {
    let mut s = Screen::new(RICH, 120, 40);
    s.act(Action::EditNote);
    assert!(matches!(s.app.overlay, Overlay::Note(_)));
    app::type_text(
        &mut s.app,
        "Metadata-only change flipped the route.\nCheck repetition 1 before filing.",
    );
    snap("note_editor", &s);
}

#[test]
fn note_editor_for_marked_pairs_at_60x20() {
    let mut s = Screen::new(RICH, 60, 20);
    s.act(Action::ToggleMark)
        .act(Action::ToggleMark)
        .act(Action::EditNote);
    app::type_text(&mut s.app, "same root cause: boundary");
    snap("note_editor_marked_60x20", &s);
}

#[test]
fn classify_view_prompts() {
    let mut s = Screen::new(RICH, 120, 40);
    s.act(Action::ClassifyView);
    assert!(matches!(s.app.overlay, Overlay::PickCategory { .. }));
    snap("classify_view_pick", &s);
    s.classify('5');
    assert!(matches!(s.app.overlay, Overlay::Confirm(_)));
    snap("classify_view_confirm", &s);
}

#[test]
fn accept_all_suggestions_prompt() {
    let mut s = Screen::new(RICH, 120, 40);
    s.act(Action::AcceptAllSuggestions);
    assert!(matches!(s.app.overlay, Overlay::Confirm(_)));
    snap("accept_all_confirm", &s);
}

#[test]
fn zero_width_space_is_visible_in_the_diff() {
    let mut s = Screen::new(RICH, 120, 40);
    s.act(Action::ToggleAllPairs);
    s.select("billing-double-charge-003", "question-inert-character");
    s.act(Action::FocusNext).act(Action::NextChange);
    let text = s.draw().backend().to_string();
    assert!(
        text.contains("\\u200b") || text.contains("\\u{200b}") || text.contains("U+200B"),
        "the zero-width space is shown as an escape:\n{text}"
    );
    assert!(!text.contains('\u{200b}'), "no raw zero-width space");
    snap("zero_width_space", &s);
    s.act(Action::ToggleSideBySide);
    snap("zero_width_space_side_by_side", &s);
}

#[test]
fn bare_camelcase_run_says_not_recorded() {
    let mut s = Screen::new(BARE, 120, 40);
    let text = s.draw().backend().to_string();
    assert!(text.contains("not recorded"), "{text}");
    snap("bare_camelcase", &s);
    s.act(Action::FocusNext).act(Action::ScrollPageDown);
    snap("bare_camelcase_scrolled", &s);
}

/// Every screen size from 1×1 to 500×200 renders without panicking, with and
/// without overlays, and never writes outside the buffer.
#[test]
fn renders_at_every_size() {
    let dir = tempfile::tempdir().expect("temp dir");
    let theme = Theme::dark();
    let keymap = Keymap::default_keymap();
    let mut app = testing::app_for(&[RICH], &dir.path().join("j.jsonl"), REVIEWER);
    let widths: Vec<u16> = (1..=200).step_by(7).chain([500]).collect();
    let heights: Vec<u16> = (1..=60).step_by(3).chain([200]).collect();
    type Setup = fn(&mut App);
    let setups: [(&str, Setup); 8] = [
        ("none", |_| {}),
        ("help", |a| {
            app::update(a, Action::ToggleHelp);
        }),
        ("note", |a| {
            app::update(a, Action::EditNote);
            app::type_text(
                a,
                "a note\nover two lines with a long tail that wraps or not",
            );
        }),
        ("detail focus", |a| {
            app::update(a, Action::FocusNext);
        }),
        ("side by side", |a| {
            app::update(a, Action::ToggleSideBySide);
        }),
        ("raw", |a| {
            app::update(a, Action::ToggleRaw);
        }),
        ("pick", |a| {
            app::update(a, Action::ClassifyView);
        }),
        ("confirm", |a| {
            app::update(a, Action::AcceptAllSuggestions);
        }),
    ];
    for &w in &widths {
        for &h in &heights {
            for (name, setup) in &setups {
                setup(&mut app);
                testing::resize(&mut app, w, h, &theme);
                let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("terminal");
                let drawn = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    terminal
                        .draw(|f| ui::render(f, &app, &keymap, &theme))
                        .map(|_| ())
                }));
                assert!(
                    matches!(drawn, Ok(Ok(()))),
                    "rendering {name} at {w}x{h} failed"
                );
                // Back to the plain screen for the next setup.
                app.overlay = Overlay::None;
                app.focus = Focus::List;
                app.detail_mode = DetailMode::Unified;
            }
        }
    }
}

#[test]
fn snapshots_do_not_depend_on_the_journal_location() {
    // The journal path is never on screen unless it is a fallback notice.
    let s = Screen::new(RICH, 120, 40);
    let text = s.draw().backend().to_string();
    assert!(!text.contains(&*s._dir.path().to_string_lossy()), "{text}");
}

/// Scrolled to the bottom, the detail shows the document's last line.
///
/// Known bug: `App::scroll_detail` limits the scroll to `len - detail_rows`,
/// but the pane also shows the triage lines (category, suggestion, note)
/// above the document, so their count of lines at the end can never be seen.
#[test]
fn scroll_bottom_shows_the_end_of_the_detail() {
    let mut s = Screen::new(RICH, 120, 40);
    s.act(Action::FocusNext).act(Action::ScrollBottom);
    let last = s
        .app
        .detail
        .as_ref()
        .and_then(|d| {
            d.doc
                .lines(DetailMode::Unified)
                .iter()
                .rev()
                .map(|l| l.to_string())
                .find(|l| !l.trim().is_empty())
        })
        .expect("a detail document");
    let text = s.draw().backend().to_string();
    assert!(text.contains(last.trim_end()), "{last:?} not in\n{text}");
}

#[test]
fn summary_screen_of_a_query() {
    let mut s = Screen::with_journal(
        RICH,
        160,
        60,
        &[Ann {
            case: "checkout-outage-001",
            variant: "irrelevant-ui-metadata",
            category: Some("distractor"),
            note: None,
            suggestion: false,
        }],
    );
    s.app
        .set_query("family:state-noise|question")
        .expect("query");
    s.act(Action::ShowSummary);
    assert!(matches!(s.app.overlay, Overlay::Summary(_)));
    snap("summary", &s);
    s.act(Action::ScrollBottom);
    snap("summary_bottom", &s);
}

#[test]
fn facets_panel_and_choosing_an_entry() {
    let mut s = Screen::new(RICH, 120, 40);
    s.act(Action::ShowFacets);
    snap("facets", &s);
    // The first transformation entry has the most failures: concise-phrasing.
    s.act(Action::Choose);
    assert!(matches!(s.app.overlay, Overlay::None));
    assert_eq!(
        s.app.query.as_ref().map(|q| q.to_string()),
        Some("transformation:concise-phrasing".to_string())
    );
    assert_eq!(s.app.view.len(), 7);
    snap("facets_chosen", &s);
}

#[test]
fn grouped_list_with_a_folded_case() {
    let mut s = Screen::new(RICH, 120, 40);
    s.act(Action::ToggleGroup);
    s.act(Action::ToggleFold);
    s.act(Action::NextPair);
    snap("grouped", &s);
}

#[test]
fn sorted_by_drift() {
    let mut s = Screen::new(RICH, 120, 40);
    for _ in 0..6 {
        s.act(Action::CycleSort);
    }
    assert_eq!(s.app.sort.key, triage::tui::listing::SortKey::Drift);
    snap("sorted_by_drift", &s);
}

#[test]
fn fuzzy_jump() {
    let mut s = Screen::new(RICH, 120, 40);
    s.act(Action::FuzzyJump);
    app::type_text(&mut s.app, "vague typo");
    snap("jump", &s);
    s.act(Action::InputSubmit);
    let row = s.app.selected_row().expect("a pair");
    let r = &s.app.index.rows[row as usize];
    assert_eq!(s.app.index.str(r.case), "vague-ticket-010");
    assert_eq!(s.app.index.str(r.variant), "question-typo");
}

#[test]
fn query_bar_with_an_error() {
    let mut s = Screen::new(RICH, 100, 30);
    s.act(Action::StartQuery);
    app::type_text(&mut s.app, "family:question dp<abc");
    snap("query_error", &s);
}

#[test]
fn query_bar_waiting_for_enter_on_a_text_search() {
    let mut s = Screen::new(RICH, 100, 30);
    // Stand in for a run too large to search text on every key.
    s.app.live_text_max_pairs = 10;
    s.act(Action::StartQuery);
    app::type_text(&mut s.app, "payment");
    snap("query_waiting", &s);
    let text = s.draw().backend().to_string();
    assert!(text.contains("Enter to run it"), "{text}");
}

#[test]
fn help_of_every_preset() {
    for preset in ["vim", "emacs"] {
        let mut s = Screen::new(RICH, 100, 60);
        s.keymap = Keymap::load(preset).expect("preset");
        s.act(Action::ToggleHelp);
        snap(&format!("help_{preset}"), &s);
    }
}

#[test]
fn followed_run_that_was_replaced_on_disk() {
    let mut s = Screen::new(RICH, 160, 30);
    s.app.reopen = Some(app::Reopen {
        paths: vec![RICH.to_string()],
        opts: triage::core::index::OpenOptions {
            follow: true,
            ..Default::default()
        },
    });
    s.app.run_change = Some(triage::core::load::follow::RunChange::Replaced {
        file: RICH.to_string(),
    });
    let text = s.draw().backend().to_string();
    assert!(text.contains("following"), "{text}");
    assert!(text.contains("run file replaced — R reloads"), "{text}");
    snap("followed_run_replaced", &s);
}

#[test]
fn promptfoo_run_names_its_format_and_an_unpaired_row_shows_expected_vs_actual() {
    let mut s = Screen::new("tests/fixtures/formats/promptfoo/results.json", 120, 40);
    let text = s.draw().backend().to_string();
    assert!(text.contains("promptfoo · 5 pairs · 4 failures"), "{text}");
    s.select("unpaired greeting", "unpaired greeting");
    // No suggestion from a diff of expected against actual.
    let text = s.draw().backend().to_string();
    assert!(!text.contains("distractor?"), "{text}");
    assert!(text.contains("── Input"), "{text}");
    s.act(Action::FocusNext).act(Action::NextChange);
    let text = s.draw().backend().to_string();
    for want in [
        "Expected vs actual",
        "expected Hello there",
        "actual   Classify the ticket urgency: Hello there",
        "diff     ",
    ] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
    // Not a pair diff: no source/variant question comparison.
    assert!(!text.contains("question unchanged"), "{text}");
    snap("unpaired_detail", &s);
    s.act(Action::ToggleSideBySide);
    let text = s.draw().backend().to_string();
    assert!(
        text.contains("expected") && text.contains("actual"),
        "{text}"
    );
    snap("unpaired_side_by_side", &s);
}

#[test]
fn a_file_of_no_known_format_notes_what_was_tried() {
    let mut s = Screen::new("tests/fixtures/formats/unknown/results.csv", 120, 40);
    let text = s.draw().backend().to_string();
    assert!(text.contains("3 bad lines · 1 note"), "{text}");
    s.act(Action::ToggleProblems);
    let text = s.draw().backend().to_string();
    for want in [
        "not a format triage knows",
        "  - promptfoo: ",
        "--from NAME",
    ] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
    snap("problems_unknown_format", &s);
}

#[test]
fn another_tools_decisions_stand_in_for_routes_in_the_detail() {
    let s = Screen::new(
        "tests/fixtures/formats/context-probe/flawed-results.jsonl",
        120,
        50,
    );
    let text = s.draw().backend().to_string();
    for want in [
        "source  decision hold",
        "variant decision approve",
        "decision hold → approve  CHANGED",
    ] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
    assert!(!text.contains("Δp not recorded"), "{text}");
}

/// The last row of the screen, as text.
fn status_row(s: &Screen) -> String {
    let terminal = s.draw();
    let text = terminal.backend().to_string();
    text.lines().last().unwrap_or_default().to_string()
}

/// On a bar too narrow for both, work under way is shown rather than the
/// counts (the counts come back when it is done); a plain note gives way.
#[test]
fn a_busy_note_wins_over_the_counts_on_a_narrow_bar() {
    let mut s = Screen::new(RICH, 60, 20);
    let counts = status_row(&s);
    assert!(counts.contains("failures"), "{counts}");
    let note = "searching the text of 12 pairs… 6 searched";
    s.app.say(note, app::MessageKind::Busy);
    let busy = status_row(&s);
    assert!(busy.contains(note), "{busy}");
    s.app.say(note, app::MessageKind::Info);
    let info = status_row(&s);
    assert!(!info.contains(note) && info.contains("failures"), "{info}");
}
