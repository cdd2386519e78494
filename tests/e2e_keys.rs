//! End-to-end: keymap presets, the query bar and the mouse, driven through
//! the real binary in a pseudo-terminal.

mod common;

use std::path::{Path, PathBuf};

use common::Tui;

const RICH: &str = "sample-runs/support-urgency.jsonl";

/// A temp folder holding a copy of the rich sample (so the journal lands there).
fn workdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run.jsonl");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(RICH), &run).expect("copy sample");
    (dir, run)
}

fn open(dir: &Path, extra: &[&str]) -> Tui {
    let mut args = vec!["--reviewer", "tester", "--config", "/dev/null"];
    args.extend_from_slice(extra);
    args.push("run.jsonl");
    let t = Tui::spawn(&args, 120, 40, dir, &[]);
    t.wait_for("1/29");
    t
}

#[test]
fn vim_preset_counts_and_sequences() {
    let (dir, _run) = workdir();
    let mut t = open(dir.path(), &["--keymap", "vim"]);
    t.send("5j");
    t.wait_for("6/29");
    t.send("G");
    t.wait_for("29/29");
    t.send("gg");
    t.wait_for(" 1/29 ");
    // A lone digit that no motion follows is a category key.
    t.send("5");
    t.wait_for("classified 1/29");
    t.send("ZZ");
    assert_eq!(t.wait_exit(), 0);
}

#[test]
fn emacs_preset_moves_and_quits() {
    let (dir, _run) = workdir();
    let mut t = open(dir.path(), &["--keymap", "emacs"]);
    t.send("\x0e\x0e"); // C-n C-n
    t.wait_for("3/29");
    t.send("\x1b>"); // M->
    t.wait_for("29/29");
    t.send("\x18\x03"); // C-x C-c
    assert_eq!(t.wait_exit(), 0);
}

#[test]
fn typing_a_query_shrinks_the_list_and_esc_clears_it() {
    let (dir, _run) = workdir();
    let mut t = open(dir.path(), &[]);
    t.send("/family:state-noise");
    t.wait_for("1/7");
    t.send(" flip:yes");
    t.wait_for("1/3");
    t.send("\r");
    t.wait_for("/family:state-noise flip:yes → 3");
    // A syntax error is shown in place and leaves the list as it was.
    t.send("/");
    t.send(" famly:x");
    t.wait_for("unknown field `famly`");
    // While typing, the list followed the last text that parsed (the bare
    // word `famly`, which matches nothing), and says why it is empty.
    t.wait_for("no pair matches the query");
    t.send("\x1b");
    t.wait_for("1/29");
    t.wait_gone("→ 3");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
}

#[test]
fn clicks_select_rows_and_classify_from_the_legend() {
    let (dir, _run) = workdir();
    let mut t = open(dir.path(), &[]);
    // Rows 1-2 are the border and the header; the third pair is on row 5.
    t.send("\x1b[<0;20;5M\x1b[<0;20;5m");
    t.wait_for("3/29");
    let col = t.with_screen(|s| {
        let rows = s.size().0.get();
        let legend = s.contents_between(rows - 2, 0, rows - 2, 200);
        legend.find("5:boundary").map(|c| c as u16 + 2)
    });
    let col = col.expect("legend shows 5:boundary");
    let rows = t.with_screen(|s| s.size().0.get());
    t.send(&format!(
        "\x1b[<0;{col};{}M\x1b[<0;{col};{}m",
        rows - 1,
        rows - 1
    ));
    t.wait_for("classified 1/29");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    let journal =
        std::fs::read_to_string(dir.path().join("run.jsonl.triage.jsonl")).expect("journal");
    assert!(journal.contains("\"category\":\"boundary\""), "{journal}");
}

#[test]
fn no_mouse_leaves_mouse_reporting_off() {
    let (dir, _run) = workdir();
    let mut t = open(dir.path(), &["--no-mouse"]);
    let bytes = t.output_bytes();
    assert!(
        !bytes.windows(8).any(|w| w == b"\x1b[?1000h"),
        "mouse capture was enabled"
    );
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
}
