//! Every terminal size renders: the screens drawn into a ratatui
//! `TestBackend` the way the runner draws them, from 1×1 up to 500×200.
//!
//! Drawing all 100,000 sizes of each screen would take minutes in a debug
//! build, so the sweep covers every width from 1 to 500 at the heights where
//! layouts change (1–6, 8, 12, 24, 50, 200), and every height from 1 to 200
//! at the widths where they change (1–6, 10, 20, 40, 80, 120, 500): each row
//! and column count is drawn at least seven times. Overlays (help, problems,
//! summary, facets, the note editor) are swept at every fifth width and
//! height. Each frame must draw without a panic and hold no control
//! character in any cell. `tests/e2e.rs` (`every_size_in_a_pty`) draws a
//! sample of sizes, 1×1 and 500×200 among them, through the real terminal.

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use triage::tui::action::Action;
use triage::tui::app::{self, App};
use triage::tui::keymap::Keymap;
use triage::tui::style::Theme;
use triage::tui::{testing, ui};

const HEIGHTS: &[u16] = &[1, 2, 3, 4, 5, 6, 8, 12, 24, 50, 200];
const WIDTHS: &[u16] = &[1, 2, 3, 4, 5, 6, 10, 20, 40, 80, 120, 500];

fn draw(app: &mut App, theme: &Theme, keymap: &Keymap, w: u16, h: u16) {
    testing::resize(app, w, h, theme);
    testing::settle(app, theme);
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    term.draw(|f| ui::render(f, app, keymap, theme))
        .unwrap_or_else(|e| panic!("draw at {w}x{h}: {e}"));
    let buf = term.backend().buffer();
    assert_eq!((buf.area.width, buf.area.height), (w, h));
    for cell in buf.content() {
        assert!(
            !cell.symbol().chars().any(char::is_control),
            "a control character in a cell at {w}x{h}: {:?}",
            cell.symbol()
        );
    }
}

fn app(run: &str) -> (App, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let journal = dir.path().join("run.triage.jsonl");
    let app = testing::app_for_size(&[run], &journal, "ana", 80, 24, &Theme::dark());
    (app, dir)
}

fn sweep(app: &mut App, every: usize) {
    let theme = Theme::dark();
    let keymap = Keymap::default_keymap();
    for &h in HEIGHTS {
        for w in (1..=500u16).step_by(every) {
            draw(app, &theme, &keymap, w, h);
        }
    }
    for &w in WIDTHS {
        for h in (1..=200u16).step_by(every) {
            draw(app, &theme, &keymap, w, h);
        }
    }
}

#[test]
fn the_list_and_detail_draw_at_every_width_and_height() {
    let (mut app, _dir) = app("sample-runs/support-urgency.jsonl");
    sweep(&mut app, 1);
    // The detail of a pair further down, in side-by-side mode.
    for _ in 0..5 {
        let e = app::update(&mut app, Action::NextPair);
        testing::run_effects(&mut app, e, &Theme::dark());
    }
    let e = app::update(&mut app, Action::ToggleSideBySide);
    testing::run_effects(&mut app, e, &Theme::dark());
    sweep(&mut app, 3);
}

#[test]
fn every_overlay_draws_at_every_fifth_size() {
    for action in [
        Action::ToggleHelp,
        Action::ToggleProblems,
        Action::ShowSummary,
        Action::ShowFacets,
        Action::EditNote,
    ] {
        let (mut app, _dir) = app("sample-runs/with-problems.jsonl");
        let e = app::update(&mut app, action);
        testing::run_effects(&mut app, e, &Theme::dark());
        sweep(&mut app, 5);
    }
}

/// Every one of the 100,000 sizes from 1×1 to 500×200, for the list with the
/// detail beside it. Minutes in a debug build, so it is not in the default
/// run; `cargo test --release --test sizes -- --ignored` runs it (the figure
/// is in docs/reliability.md). Sizes are split across the cores by height.
#[test]
#[ignore = "every size: run in release with --ignored"]
fn every_size_from_1x1_to_500x200() {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let started = std::time::Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                let (mut app, _dir) = app("sample-runs/support-urgency.jsonl");
                let theme = Theme::dark();
                let keymap = Keymap::default_keymap();
                for h in (1..=200u16).filter(|h| usize::from(*h) % threads == t) {
                    for w in 1..=500u16 {
                        draw(&mut app, &theme, &keymap, w, h);
                    }
                }
            });
        }
    });
    eprintln!(
        "drew 100000 sizes on {threads} threads in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
