//! Regenerate the screenshots in `screenshots/` from real renders.
//!
//! ```sh
//! cargo run --release --example screenshots            # writes screenshots/*.svg
//! cargo run --release --example screenshots -- OUTDIR  # somewhere else
//! ```
//!
//! Each screen is the app built the way the runner builds it
//! (`triage::tui::testing`), driven with the same actions the keys trigger,
//! drawn by `ui::render` into a ratatui `TestBackend` and written with
//! `svg::buffer_to_svg`. The output is byte-stable: runs are opened by their
//! path relative to the repository (the path is on screen), the journal is
//! written into a temp dir with a fixed reviewer and fixed times before the
//! app opens it, and the theme is always the dark one. Nothing is written
//! next to `sample-runs/`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use triage::tui::action::Action;
use triage::tui::app::{self, App};
use triage::tui::keymap::Keymap;
use triage::tui::style::Theme;
use triage::tui::{svg, testing, ui};

const RICH: &str = "sample-runs/support-urgency.jsonl";
const PROBLEMS: &str = "sample-runs/with-problems.jsonl";
/// The main sample with a journal of two reviewers beside it.
const TWO: &str = "sample-runs/two-reviewers.jsonl";
const BEFORE: &str = "sample-runs/compare-before.jsonl";
const AFTER: &str = "sample-runs/compare-after.jsonl";
const REVIEWER: &str = "ana";
const WIDTH: u16 = 140;
const HEIGHT: u16 = 42;

/// An annotation already in the journal when the screenshots are taken.
struct Entry {
    case: &'static str,
    variant: &'static str,
    category: &'static str,
    note: Option<&'static str>,
    /// Accepted from triage's suggestion rather than chosen by hand.
    suggestion: bool,
    at: &'static str,
}

const JOURNAL: &[Entry] = &[
    Entry {
        case: "checkout-outage-001",
        variant: "irrelevant-ui-metadata",
        category: "distractor",
        note: Some("UI metadata alone flipped action to pass; repetition 1 holds the route."),
        suggestion: false,
        at: "2026-11-28T14:02:11Z",
    },
    Entry {
        case: "checkout-outage-001",
        variant: "remove-scope-evidence",
        category: "missing-evidence",
        note: None,
        suggestion: false,
        at: "2026-11-28T14:03:40Z",
    },
    Entry {
        case: "checkout-outage-001",
        variant: "paraphrase-scope-drift",
        category: "invalid-pair",
        note: None,
        suggestion: true,
        at: "2026-11-28T14:04:05Z",
    },
    Entry {
        case: "login-failures-002",
        variant: "question-typo",
        category: "boundary",
        note: None,
        suggestion: true,
        at: "2026-11-28T14:05:52Z",
    },
];

/// One screen: an app over a run, with the journal above, at 140×42.
struct Shot {
    // Declared before `_dir` so the store (and its lock) is dropped first.
    app: App,
    theme: Theme,
    keymap: Keymap,
    width: u16,
    height: u16,
    _dir: tempfile::TempDir,
}

impl Shot {
    fn new(run: &str) -> Result<Shot, String> {
        Shot::open(run, REVIEWER, WIDTH, HEIGHT)
    }

    /// A shot of a `width`×`height` terminal.
    fn sized(run: &str, width: u16, height: u16) -> Result<Shot, String> {
        Shot::open(run, REVIEWER, width, height)
    }

    /// A screen as seen by `reviewer`.
    fn as_reviewer(run: &str, reviewer: &str) -> Result<Shot, String> {
        Shot::open(run, reviewer, WIDTH, HEIGHT)
    }

    /// A `width`×`height` screen as seen by `reviewer`; the two-reviewer
    /// sample's journal is copied into the temp dir, so the app (which may
    /// compact it) never writes beside the sample.
    fn open(run: &str, reviewer: &str, width: u16, height: u16) -> Result<Shot, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("cannot make a temp dir: {e}"))?;
        let theme = Theme::dark();
        let journal = dir.path().join("screenshots.triage.jsonl");
        if run == TWO {
            let shipped = format!("{TWO}.triage.jsonl");
            fs::copy(&shipped, &journal).map_err(|e| format!("cannot copy {shipped}: {e}"))?;
        }
        if run == RICH {
            // The record keys come from the run, so index it once to write the journal.
            let probe = dir.path().join("probe.triage.jsonl");
            let app = testing::app_for_size(&[run], &probe, REVIEWER, width, height, &theme);
            let lines = JOURNAL
                .iter()
                .map(|e| journal_line(&app, e))
                .collect::<Result<Vec<_>, _>>()?;
            fs::write(&journal, lines.join("\n") + "\n")
                .map_err(|e| format!("cannot write {}: {e}", journal.display()))?;
        }
        let app = testing::app_for_size(&[run], &journal, reviewer, width, height, &theme);
        Ok(Shot {
            app,
            theme,
            keymap: Keymap::default_keymap(),
            width,
            height,
            _dir: dir,
        })
    }

    /// Apply an action and do what the runner does after it.
    fn act(&mut self, action: Action) -> &mut Self {
        let effects = app::update(&mut self.app, action);
        testing::run_effects(&mut self.app, effects, &self.theme);
        testing::resize(&mut self.app, self.width, self.height, &self.theme);
        testing::settle(&mut self.app, &self.theme);
        self
    }

    /// Move the cursor to the pair with these ids.
    fn select(&mut self, case: &str, variant: &str) -> Result<&mut Self, String> {
        self.act(Action::FirstPair);
        for _ in 0..self.app.view.len() {
            if let Some(row) = self.app.selected_row() {
                let r = &self.app.index.rows[row as usize];
                if self.app.index.str(r.case) == case && self.app.index.str(r.variant) == variant {
                    return Ok(self);
                }
            }
            self.act(Action::NextPair);
        }
        Err(format!("{case}/{variant} is not in view"))
    }

    /// Render and write `name` into `out`; returns the path written.
    fn write(&self, out: &Path, name: &str, title: &str) -> Result<PathBuf, String> {
        let mut terminal = Terminal::new(TestBackend::new(self.width, self.height))
            .map_err(|e| format!("test terminal: {e}"))?;
        terminal
            .draw(|f| ui::render(f, &self.app, &self.keymap, &self.theme))
            .map_err(|e| format!("draw: {e}"))?;
        let path = out.join(name);
        fs::write(
            &path,
            svg::buffer_to_svg(terminal.backend().buffer(), title),
        )
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(path)
    }
}

/// A journal event for one of [`JOURNAL`]'s entries.
fn journal_line(app: &App, e: &Entry) -> Result<String, String> {
    let row = app
        .index
        .rows
        .iter()
        .find(|r| app.index.str(r.case) == e.case && app.index.str(r.variant) == e.variant)
        .ok_or_else(|| format!("{}/{} is not in {RICH}", e.case, e.variant))?;
    let line = app
        .index
        .read_line_from(row.pos)
        .map_err(|e| e.to_string())?;
    let key = triage::core::index::keys::line_key(&line)
        .ok_or_else(|| format!("{}/{} has no record key", e.case, e.variant))?;
    Ok(serde_json::json!({
        "v": 1,
        "key": key.to_string(),
        "case_id": e.case,
        "variant_id": e.variant,
        "category": e.category,
        "note": e.note,
        "reviewer": REVIEWER,
        "at": e.at,
        "source": if e.suggestion { "suggestion" } else { "manual" },
        "prev": null,
    })
    .to_string())
}

fn generate(out: &Path) -> Result<Vec<PathBuf>, String> {
    fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let mut written = Vec::new();

    // The list and the detail of the first failure, classified with a note.
    let s = Shot::new(RICH)?;
    written.push(s.write(out, "list.svg", "triage — failures and the pair's detail")?);

    // Side by side: a paraphrase that also changed a state field.
    let mut s = Shot::new(RICH)?;
    s.select("checkout-outage-001", "paraphrase-scope-drift")?;
    s.act(Action::ToggleSideBySide);
    written.push(s.write(out, "side-by-side.svg", "triage — side by side")?);

    // Help, generated from the keymap in use.
    let mut s = Shot::new(RICH)?;
    s.act(Action::ToggleHelp);
    written.push(s.write(out, "help.svg", "triage — help")?);

    // The problems of a run with broken lines.
    let mut s = Shot::new(PROBLEMS)?;
    s.act(Action::ToggleProblems);
    written.push(s.write(out, "problems.svg", "triage — problems in the run")?);

    // The note editor on a classified pair.
    let mut s = Shot::new(RICH)?;
    s.select("login-failures-002", "question-typo")?;
    s.act(Action::EditNote);
    app::type_text(
        &mut s.app,
        "Source sits 0.03 below the action threshold; the typo only nudged it over.\n\
         Same pattern as reorder-fields: raise the margin, not a model bug.",
    );
    written.push(s.write(out, "note.svg", "triage — writing a note")?);

    // Two reviewers: the summary's agreement (kappa per pair of reviewers),
    // and the detail of a pair they disagree on, as a third reviewer sees them.
    let mut s = Shot::as_reviewer(TWO, "cy")?;
    s.act(Action::ShowSummary);
    written.push(s.write(out, "agreement.svg", "triage — reviewer agreement")?);
    let mut s = Shot::as_reviewer(TWO, "cy")?;
    s.act(Action::NextDisagreement);
    written.push(s.write(
        out,
        "disagreement.svg",
        "triage — a disagreement to resolve",
    )?);
    // The run after a repair compared with the one before it (and the
    // decisions made on that one, committed beside it).
    let mut s = Shot::new(AFTER)?;
    testing::with_baseline(&mut s.app, BEFORE, None, &s.theme);
    s.act(Action::FirstPair);
    written.push(s.write(out, "baseline.svg", "triage — compared with the run before")?);
    // The smallest common terminal: every category key on the legend.
    let s = Shot::sized(RICH, 80, 24)?;
    written.push(s.write(out, "list-80x24.svg", "triage — 80×24")?);

    // A wide terminal: the list as wide as its ids, the detail beside it.
    let s = Shot::sized(RICH, 200, 50)?;
    written.push(s.write(out, "list-200x50.svg", "triage — 200×50")?);

    // The summary of the run.
    let mut s = Shot::new(RICH)?;
    s.act(Action::ShowSummary);
    written.push(s.write(out, "summary.svg", "triage — summary")?);

    Ok(written)
}

fn main() -> ExitCode {
    // Runs are opened by path relative to the repository, as a reviewer
    // would, so the screenshots show `sample-runs/...` wherever the clone is.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // An OUTDIR argument is taken relative to where the command was run.
    let out = match std::env::args_os().nth(1).map(std::path::absolute) {
        Some(Ok(dir)) => dir,
        Some(Err(e)) => {
            eprintln!("screenshots: bad output folder: {e}");
            return ExitCode::FAILURE;
        }
        None => root.join("screenshots"),
    };
    if let Err(e) = std::env::set_current_dir(root) {
        eprintln!("screenshots: cannot enter {}: {e}", root.display());
        return ExitCode::FAILURE;
    }
    match generate(&out) {
        Ok(written) => {
            for p in written {
                let shown = p.strip_prefix(root).unwrap_or(&p);
                println!("wrote {}", shown.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("screenshots: {e}");
            ExitCode::FAILURE
        }
    }
}
