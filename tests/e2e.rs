//! End-to-end tests: the real `triage` binary in a pseudo-terminal.
//!
//! Every test copies the samples it needs into a temporary directory and runs
//! the binary there, so no journal is ever written beside `sample-runs/`.
//! Synchronisation is by waiting for screen text (or for bytes in the
//! program's output), never by fixed sleeps.
//!
//! Reading a run piped into standard input is not covered here: the harness
//! in `tests/common` always starts the `triage` binary with the pty as its
//! standard input. `triage -` with the terminal itself as standard input is
//! (`a_terminal_on_standard_input_is_announced`).

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Rng, Tui, seed};
use serde_json::Value;

const RICH: &str = "support-urgency.jsonl";
const PROBLEMS: &str = "with-problems.jsonl";
/// The first two failures of the rich sample, in list order.
const FIRST_CASE: &str = "checkout-outage-001";
const FIRST_VARIANT: &str = "irrelevant-ui-metadata";
const SECOND_VARIANT: &str = "remove-scope-evidence";

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample-runs")
        .join(name)
}

/// Copies a sample into `dir` as `run.jsonl` and returns the copy's path.
fn copy_sample(dir: &Path, name: &str) -> PathBuf {
    let to = dir.join("run.jsonl");
    std::fs::copy(sample(name), &to).expect("copy the sample");
    to
}

/// `triage run.jsonl --reviewer tester` in `dir`.
fn open(dir: &Path, cols: u16, rows: u16) -> Tui {
    Tui::spawn(&["run.jsonl", "--reviewer", "tester"], cols, rows, dir, &[])
}

/// Every line of the journal beside `run.jsonl`, parsed.
fn journal(dir: &Path) -> Vec<Value> {
    let path = dir.join("run.jsonl.triage.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("read the journal {}: {e}", path.display()));
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("journal line {} is not JSON ({e}): {line}", i + 1))
        })
        .collect()
}

/// The journal replayed: the last event per key wins. Keyed by
/// (case_id, variant_id) for readable assertions.
fn replay(events: &[Value]) -> HashMap<(String, String), Value> {
    let mut by_key: HashMap<String, &Value> = HashMap::new();
    for e in events {
        let key = e["key"].as_str().expect("every event has a key");
        by_key.insert(key.to_string(), e);
    }
    by_key
        .into_values()
        .filter(|e| !e["category"].is_null() || !e["note"].is_null())
        .map(|e| {
            let id = (
                e["case_id"].as_str().unwrap_or_default().to_string(),
                e["variant_id"].as_str().unwrap_or_default().to_string(),
            );
            (id, e.clone())
        })
        .collect()
}

/// The first screen row containing `needle`.
fn row_with(screen: &str, needle: &str) -> String {
    screen
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no row with {needle:?} on the screen:\n{screen}"))
        .to_string()
}

/// Polls `done` every 10 ms until it holds; panics with `what` after `timeout`.
fn poll_until(timeout: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn position(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `kill -SIG pid` through the system `kill` command.
fn signal(sig: &str, pid: u32) {
    let status = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{sig} {pid} failed");
}

/// The process state letter from /proc (R, S, T...), if it still exists.
fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ..." — comm may contain spaces, so split after the last ')'.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// The terminal is back to normal: main screen, cursor visible.
#[track_caller]
fn assert_restored(t: &Tui) {
    let (alt, hidden) = t.with_screen(|s| (s.alternate_screen(), s.hide_cursor()));
    assert!(!alt, "still in the alternate screen after exit");
    assert!(!hidden, "the cursor is still hidden after exit");
}

#[test]
fn open_move_help_and_quit() {
    let dir = tempfile::tempdir().unwrap();
    copy_sample(dir.path(), RICH);
    let mut t = open(dir.path(), 120, 40);
    t.wait_for("failures");
    t.wait_for(FIRST_CASE);
    t.wait_for(&format!("{FIRST_CASE} / {FIRST_VARIANT}"));

    t.send("j");
    t.wait_for(&format!("{FIRST_CASE} / {SECOND_VARIANT}"));
    t.wait_for(" 2/29 ");

    t.send("?");
    t.wait_for("Move");
    t.wait_for("next pair");
    t.send("\x1b");
    t.wait_gone("next pair");
    // The detail is still the second pair's.
    t.wait_for(&format!("{FIRST_CASE} / {SECOND_VARIANT}"));

    t.send("q");
    assert_eq!(t.wait_exit(), 0, "q quits with 0");
    assert_restored(&t);
}

#[test]
fn triage_note_undo_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_sample(dir.path(), RICH);
    let mut t = open(dir.path(), 120, 40);
    t.wait_for(FIRST_CASE);
    t.wait_for("classified 0/29");

    t.send("5");
    t.wait_for("classified 1/29");
    t.wait_for("saved: classified as boundary");
    // The cursor moved on to the next unclassified failure by itself.
    t.wait_for(&format!("{FIRST_CASE} / {SECOND_VARIANT}"));
    t.send("2");
    t.wait_for("classified 2/29");
    t.wait_for("saved: classified as distractor");

    // A note on the first pair.
    t.send("g");
    t.wait_for(&format!("{FIRST_CASE} / {FIRST_VARIANT}"));
    t.send("n");
    t.wait_for(&format!("note · {FIRST_CASE} / {FIRST_VARIANT}"));
    t.send("near the review threshold");
    t.wait_for("near the review threshold");
    t.send("\x13");
    t.wait_for("saved: note saved");

    // Fsynced before "saved": the journal has it while triage still runs.
    let state = replay(&journal(dir.path()));
    let first = &state[&(FIRST_CASE.to_string(), FIRST_VARIANT.to_string())];
    let second = &state[&(FIRST_CASE.to_string(), SECOND_VARIANT.to_string())];
    assert_eq!(first["category"], "boundary");
    assert_eq!(first["note"], "near the review threshold");
    assert_eq!(second["category"], "distractor");
    assert!(second["note"].is_null());
    assert_eq!(state.len(), 2, "exactly two annotations: {state:?}");
    for e in journal(dir.path()) {
        assert_eq!(e["reviewer"], "tester", "event {e}");
        assert_eq!(e["v"], 1, "event {e}");
        assert_eq!(
            e["key"].as_str().map(str::len),
            Some(32),
            "a 32-hex-digit key: {e}"
        );
    }

    // Undo takes the note back, on disk too.
    t.send("u");
    t.wait_for("undid: note saved");
    let state = replay(&journal(dir.path()));
    let first = &state[&(FIRST_CASE.to_string(), FIRST_VARIANT.to_string())];
    assert_eq!(first["category"], "boundary");
    assert!(first["note"].is_null(), "the note is undone: {first}");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    assert_restored(&t);

    // The compacted journal still says the same.
    let state = replay(&journal(dir.path()));
    assert_eq!(state.len(), 2, "{state:?}");

    // Reopen: the decisions are back.
    let mut t = open(dir.path(), 120, 40);
    t.wait_for("classified 2/29");
    let screen = t.screen();
    let first_row = row_with(&screen, "irrelevant-ui-me");
    assert!(
        first_row.contains("boundary") && !first_row.contains("boundary?"),
        "first row shows its category: {first_row}"
    );
    let second_row = row_with(&screen, "remove-scope-evi");
    assert!(
        second_row.contains("distractor") && !second_row.contains("distractor?"),
        "second row shows its category: {second_row}"
    );

    // A decision in this session, undone: the journal reflects the undo.
    t.send("G");
    t.wait_for(" 29/29 ");
    t.send("4");
    t.wait_for("classified 3/29");
    t.send("u");
    t.wait_for("undid: classified as conflicting-evidence");
    // The message names the pair; the next key clears it and the counts show.
    t.send("k");
    t.wait_for("classified 2/29");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    let state = replay(&journal(dir.path()));
    let mut categories: Vec<_> = state
        .values()
        .map(|e| e["category"].as_str().unwrap_or("-").to_string())
        .collect();
    categories.sort();
    assert_eq!(categories, ["boundary", "distractor"], "{state:?}");

    let original = std::fs::read(sample(RICH)).unwrap();
    assert_eq!(
        std::fs::read(&run).unwrap(),
        original,
        "the run file is never modified"
    );
}

/// Runs `triage apply ...` in `dir`: (exit code, stdout, stderr).
fn apply(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_triage"))
        .arg("apply")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run triage apply");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn apply_writes_triage_objects_on_annotated_lines_only() {
    let dir = tempfile::tempdir().unwrap();
    let run = copy_sample(dir.path(), RICH);
    let mut t = open(dir.path(), 120, 40);
    t.wait_for("classified 0/29");
    t.send("5");
    t.wait_for("classified 1/29");
    t.send("2");
    t.wait_for("classified 2/29");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);

    let (code, stdout, stderr) = apply(dir.path(), &["run.jsonl", "-o", "out.jsonl"]);
    assert_eq!(code, 0, "apply failed: {stdout}{stderr}");
    let original = std::fs::read_to_string(&run).unwrap();
    let output = std::fs::read_to_string(dir.path().join("out.jsonl")).unwrap();
    assert_eq!(
        original.lines().count(),
        output.lines().count(),
        "one output line per input line"
    );
    assert_eq!(original.ends_with('\n'), output.ends_with('\n'));
    let mut annotated = Vec::new();
    for (i, (a, b)) in original.lines().zip(output.lines()).enumerate() {
        if a == b {
            assert!(!b.contains("\"triage\""), "line {}: {b}", i + 1);
            continue;
        }
        let mut rec: Value = serde_json::from_str(b)
            .unwrap_or_else(|e| panic!("output line {} is not JSON: {e}", i + 1));
        let triage = rec
            .as_object_mut()
            .and_then(|o| o.remove("triage"))
            .unwrap_or_else(|| panic!("line {} changed without a triage object", i + 1));
        let orig: Value = serde_json::from_str(a).unwrap();
        assert_eq!(rec, orig, "line {}: only the triage object is added", i + 1);
        assert_eq!(triage["reviewer"], "tester");
        annotated.push((
            orig["variant_id"].as_str().unwrap().to_string(),
            triage["category"].as_str().unwrap_or("-").to_string(),
        ));
    }
    annotated.sort();
    assert_eq!(
        annotated,
        [
            (FIRST_VARIANT.to_string(), "boundary".to_string()),
            (SECOND_VARIANT.to_string(), "distractor".to_string()),
        ],
        "exactly the two annotated lines carry a triage object"
    );

    // OUT exists: refused without --force, and left alone.
    let before = std::fs::read(dir.path().join("out.jsonl")).unwrap();
    let (code, _, stderr) = apply(dir.path(), &["run.jsonl", "-o", "out.jsonl"]);
    assert_eq!(code, 2, "an existing OUT is refused");
    assert!(stderr.contains("out.jsonl"), "message names OUT: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert_eq!(std::fs::read(dir.path().join("out.jsonl")).unwrap(), before);
    let (code, stdout, stderr) = apply(dir.path(), &["run.jsonl", "-o", "out.jsonl", "--force"]);
    assert_eq!(code, 0, "--force overwrites: {stdout}{stderr}");
    assert_eq!(std::fs::read(dir.path().join("out.jsonl")).unwrap(), before);

    // `-o -`: the same copy on standard output, the summary on standard
    // error, and no file named `-`.
    let (code, stdout, stderr) = apply(dir.path(), &["run.jsonl", "-o", "-"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.as_bytes(), before.as_slice());
    assert_eq!(
        stderr.trim_end(),
        "wrote standard output: 2 of 72 lines carry a triage object"
    );
    assert!(!dir.path().join("-").exists());

    // OUT = the run, however it is spelled, is refused even with --force.
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink("run.jsonl", dir.path().join("link.jsonl")).unwrap();
    for out in ["run.jsonl", "./run.jsonl", "sub/../run.jsonl", "link.jsonl"] {
        for force in [false, true] {
            let mut args = vec!["run.jsonl", "-o", out];
            if force {
                args.push("--force");
            }
            let (code, _, stderr) = apply(dir.path(), &args);
            assert_eq!(code, 2, "apply -o {out} (force {force}) is refused");
            assert!(!stderr.trim().is_empty(), "a message for -o {out}");
        }
    }
    assert_eq!(
        std::fs::read_to_string(&run).unwrap(),
        std::fs::read_to_string(sample(RICH)).unwrap(),
        "the run file is never modified"
    );
}

#[test]
fn bad_arguments_fail_before_the_terminal_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("a-folder")).unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["missing.jsonl"], "missing.jsonl"),
        (&["a-folder"], "a-folder"),
        (&[], "triage"),
    ];
    for (args, named) in cases {
        // In a terminal: exit 2 and no escape sequence at all.
        let mut t = Tui::spawn(args, 100, 30, dir.path(), &[]);
        assert_eq!(t.wait_exit(), 2, "triage {args:?} exits 2");
        let out = t.output_bytes();
        assert!(
            !contains(&out, b"\x1b"),
            "triage {args:?} wrote escape sequences: {:?}",
            String::from_utf8_lossy(&out)
        );
        assert!(!t.with_screen(|s| s.alternate_screen()));
        assert!(
            t.screen().contains(named),
            "the message names {named:?}:\n{}",
            t.screen()
        );

        // Without a terminal: the message is one line on stderr.
        let out = Command::new(env!("CARGO_BIN_EXE_triage"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "triage {args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr:?}");
        assert!(stderr.contains(named), "names {named:?}: {stderr:?}");
        assert!(out.stdout.is_empty(), "nothing on stdout");
    }
}

#[test]
fn problems_are_counted_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    copy_sample(dir.path(), PROBLEMS);
    let mut t = open(dir.path(), 120, 40);
    t.wait_for(FIRST_CASE);
    t.wait_for("bad lines");
    t.send("p");
    t.wait_for("malformed JSON");
    for line in [
        "run.jsonl:4 ",
        "run.jsonl:8 ",
        "run.jsonl:10 ",
        "run.jsonl:21 ",
    ] {
        t.wait_for(line);
    }
    // Escape alone: wait until the panel is gone before the next key, or
    // the terminal would read "ESC q" as alt-q.
    t.send("\x1b");
    t.wait_gone("malformed JSON");
    t.wait_for(FIRST_CASE);
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    assert_restored(&t);
}

/// `triage -` with the terminal as standard input says that it reads the run
/// from there and how to end it, instead of waiting on a blank screen; the
/// lines typed, then Ctrl-D, open as a run in the viewer.
#[test]
fn a_terminal_on_standard_input_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = Tui::spawn(&["-", "--reviewer", "tester"], 120, 30, dir.path(), &[]);
    t.wait_for("reading a run from standard input");
    t.wait_for("Ctrl-D");
    let line = r#"{"case_id":"typed-case","variant_id":"typed-variant","passed":false,"reasons":["typed in"]}"#;
    t.send(line);
    t.send("\n");
    t.send("\x04");
    t.wait_for("typed-case");
    t.wait_for("1 failure");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    assert_restored(&t);
}

/// The terminal is back to normal and mouse reporting is off.
#[track_caller]
fn assert_restored_with_mouse_off(t: &Tui) {
    assert_restored(t);
    let mouse = t.with_screen(|s| s.mouse_protocol_mode());
    assert_eq!(
        mouse,
        vt100::MouseProtocolMode::None,
        "mouse reporting left on"
    );
}

#[test]
fn signals_restore_the_terminal_and_keep_decisions() {
    for (sig, code) in [("TERM", 143), ("HUP", 129), ("INT", 130)] {
        let dir = tempfile::tempdir().unwrap();
        copy_sample(dir.path(), RICH);
        let mut t = open(dir.path(), 120, 40);
        t.wait_for("classified 0/29");
        t.send("5");
        t.wait_for("saved: classified as boundary");
        signal(sig, t.pid().expect("pid"));
        assert_eq!(t.wait_exit(), code, "SIG{sig} exits with 128 + signal");
        assert_restored(&t);
        let state = replay(&journal(dir.path()));
        assert_eq!(
            state[&(FIRST_CASE.to_string(), FIRST_VARIANT.to_string())]["category"],
            "boundary",
            "after SIG{sig}"
        );
    }
}

/// Every other signal whose default ends the process ends the session as
/// SIGTERM does: terminal restored (main screen, cursor, mouse reporting
/// off), saved decisions in the journal, a decision the disk refused in the
/// recovery file, exit 128 + signal.
#[test]
fn every_ending_signal_restores_the_terminal_and_keeps_decisions() {
    for (sig, code) in [
        ("QUIT", 131),
        ("USR1", 138),
        ("USR2", 140),
        ("ALRM", 142),
        ("PIPE", 141),
        ("XCPU", 152),
        ("XFSZ", 153),
        ("VTALRM", 154),
        ("PROF", 155),
    ] {
        let dir = tempfile::tempdir().unwrap();
        copy_sample(dir.path(), RICH);
        let mut t = open(dir.path(), 120, 40);
        t.wait_for("classified 0/29");
        t.send("5");
        t.wait_for("saved: classified as boundary");
        signal(sig, t.pid().expect("pid"));
        assert_eq!(t.wait_exit(), code, "SIG{sig} exits with 128 + signal");
        assert_restored_with_mouse_off(&t);
        let state = replay(&journal(dir.path()));
        assert_eq!(
            state[&(FIRST_CASE.to_string(), FIRST_VARIANT.to_string())]["category"],
            "boundary",
            "after SIG{sig}"
        );
    }
}

/// A decision the disk refused is written to the recovery file on SIGQUIT,
/// as on SIGTERM.
#[test]
fn an_ending_signal_writes_unsaved_decisions_to_the_recovery_file() {
    let dir = tempfile::tempdir().unwrap();
    copy_sample(dir.path(), RICH);
    let mut t = open(dir.path(), 120, 40);
    t.wait_for("classified 0/29");
    // The journal cannot be created: a directory stands in its place.
    let journal = dir.path().join("run.jsonl.triage.jsonl");
    std::fs::create_dir(&journal).unwrap();
    t.send("5");
    t.wait_for("1 decision is kept in memory");
    signal("QUIT", t.pid().expect("pid"));
    assert_eq!(t.wait_exit(), 131);
    assert_restored_with_mouse_off(&t);
    let recovered = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".recovered.jsonl"))
        .unwrap_or_else(|| panic!("no recovery file; screen:\n{}", t.screen()));
    let text = std::fs::read_to_string(&recovered).unwrap();
    assert!(text.contains("\"boundary\""), "{text}");
}

/// An external SIGTSTP (`kill -TSTP`, not Ctrl-Z) under a job-control shell:
/// triage leaves the alternate screen and stops, the shell reports the job
/// stopped by SIGTSTP, and `fg` brings it back redrawn with the mouse on.
#[test]
fn an_external_sigtstp_stops_with_the_terminal_restored_and_fg_resumes() {
    let dir = tempfile::tempdir().unwrap();
    copy_sample(dir.path(), RICH);
    let script = concat!(
        "set -m\n",
        "\"$0\" --reviewer tester --config /dev/null run.jsonl &\n",
        "echo \"job-pid-$!\"\n",
        "fg >/dev/null\n",
        "echo \"job-stopped-$?\"\n",
        "fg >/dev/null\n",
        "echo \"job-ended-$?\"\n",
    );
    let mut t = Tui::spawn_program(
        "bash",
        &[
            "--norc",
            "--noprofile",
            "-c",
            script,
            env!("CARGO_BIN_EXE_triage"),
        ],
        120,
        40,
        dir.path(),
        &[],
    );
    t.wait_for(FIRST_CASE);
    t.wait_for("classified 0/29");
    let out = String::from_utf8_lossy(&t.output_bytes()).into_owned();
    let pid: u32 = out
        .split("job-pid-")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .expect("the job's pid");
    let mark = t.output_bytes().len();
    signal("TSTP", pid);
    poll_until(
        Duration::from_secs(10),
        "the shell to see the job stop",
        || contains(&t.output_bytes()[mark..], b"job-stopped-148"),
    );
    let out = t.output_bytes()[mark..].to_vec();
    let stopped = position(&out, b"job-stopped-148").expect("seen");
    let before = &out[..stopped];
    let left = position(before, b"\x1b[?1049l").expect("left the alternate screen");
    assert!(
        contains(&before[left..], b"\x1b[?25h"),
        "cursor shown before the stop"
    );
    assert!(
        contains(before, b"\x1b[?1000l"),
        "mouse reporting off before the stop"
    );
    poll_until(
        Duration::from_secs(10),
        "the alternate screen again",
        || t.with_screen(|s| s.alternate_screen()),
    );
    t.wait_for("classified 0/29");
    poll_until(Duration::from_secs(10), "mouse reporting back on", || {
        t.with_screen(|s| s.mouse_protocol_mode() != vt100::MouseProtocolMode::None)
    });
    t.send("j");
    t.wait_for(&format!("{FIRST_CASE} / {SECOND_VARIANT}"));
    t.send("q");
    t.wait_for("job-ended-0");
    assert_eq!(t.wait_exit(), 0);
    assert_restored_with_mouse_off(&t);
}

/// SIGSTOP cannot be caught; on the SIGCONT that follows, triage enters the
/// terminal again and redraws the whole screen.
#[test]
fn sigcont_after_sigstop_redraws() {
    let dir = tempfile::tempdir().unwrap();
    copy_sample(dir.path(), RICH);
    let mut t = open(dir.path(), 120, 40);
    t.wait_for("classified 0/29");
    let pid = t.pid().expect("pid");
    signal("STOP", pid);
    poll_until(Duration::from_secs(10), "stopped", || {
        proc_state(pid) == Some('T')
    });
    let mark = t.output_bytes().len();
    signal("CONT", pid);
    poll_until(Duration::from_secs(10), "a full redraw", || {
        let out = t.output_bytes();
        contains(&out[mark..], b"\x1b[?1049h") && contains(&out[mark..], b"classified 0/29")
    });
    t.send("j");
    t.wait_for(&format!("{FIRST_CASE} / {SECOND_VARIANT}"));
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    assert_restored_with_mouse_off(&t);
}

#[test]
fn resize_storm() {
    let seed = seed();
    println!("resize storm seed {seed} (TRIAGE_TEST_SEED={seed} repeats it)");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    copy_sample(dir.path(), RICH);
    let mut t = open(dir.path(), 120, 40);
    t.wait_for(FIRST_CASE);
    for _ in 0..50 {
        let cols = rng.range(1, 300) as u16;
        let rows = rng.range(1, 100) as u16;
        t.resize(cols, rows);
        t.send("j");
    }
    t.resize(80, 24);
    // A frame drawn for 80×24: the list box spans exactly 80 columns (a
    // left-over wider frame would be cut off without its corner) and the
    // status bar is on the last row.
    poll_until(Duration::from_secs(10), "a frame at 80×24", || {
        let screen = t.screen();
        let lines: Vec<&str> = screen.lines().collect();
        lines.len() == 24
            && lines[0].starts_with("┌ failures")
            && lines[0].chars().count() == 80
            && lines[0].ends_with('┐')
            && lines[23].contains("classified 0/29")
    });
    t.wait_for("STAT");
    t.wait_for("/29 ");
    t.send("q");
    assert_eq!(t.wait_exit(), 0, "seed {seed}");
    assert_restored(&t);
}

/// A sample of sizes through the real terminal, from 1×1 to 500×200
/// (tests/sizes.rs sweeps every width and height through the renderer):
/// triage starts at 1×1, lives through each size, and draws the full list
/// at the large ones.
#[test]
fn every_size_in_a_pty() {
    let dir = tempfile::tempdir().unwrap();
    copy_sample(dir.path(), RICH);
    let mut t = open(dir.path(), 1, 1);
    let pid = t.pid().expect("pid");
    // Something was drawn at 1×1 (the frame ends by hiding the cursor).
    poll_until(Duration::from_secs(10), "a frame at 1×1", || {
        contains(&t.output_bytes(), b"\x1b[?25l")
    });
    for (cols, rows) in [
        (2, 1),
        (1, 2),
        (2, 2),
        (3, 200),
        (500, 1),
        (10, 3),
        (40, 12),
        (500, 200),
        (1, 1),
        (300, 100),
        (500, 200),
    ] {
        t.resize(cols, rows);
        let mark = t.output_bytes().len();
        // Each size is drawn: output after the resize ends with a frame.
        poll_until(Duration::from_secs(10), "a frame after the resize", || {
            let out = t.output_bytes();
            out.len() > mark && out.ends_with(b"\x1b[?25l")
        });
        assert!(
            matches!(proc_state(pid), Some('R' | 'S')),
            "triage is alive at {cols}x{rows}"
        );
        if cols >= 80 && rows >= 24 {
            t.wait_for("classified 0/29");
            t.wait_for(FIRST_CASE);
        }
    }
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    assert_restored(&t);
}

#[test]
fn ctrl_z_leaves_the_screen_and_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    copy_sample(dir.path(), RICH);
    let mut t = open(dir.path(), 120, 40);
    t.wait_for(FIRST_CASE);
    let pid = t.pid().expect("pid");
    let mark = t.output_bytes().len();

    t.send("\x1a");
    // The program leaves the alternate screen before it stops.
    poll_until(
        Duration::from_secs(10),
        "ctrl-z to leave the screen",
        || contains(&t.output_bytes()[mark..], b"\x1b[?1049l"),
    );
    // Then either it is stopped (SIGTSTP took effect), or it came straight
    // back: the harness starts triage as a session leader whose parent is in
    // another session, an orphaned process group, and the kernel discards
    // SIGTSTP there (a shell with job control would stop it).
    let came_back = |out: &[u8]| {
        position(out, b"\x1b[?1049l").is_some_and(|at| contains(&out[at..], b"\x1b[?1049h"))
    };
    poll_until(Duration::from_secs(10), "a stop or a return", || {
        proc_state(pid) == Some('T') || came_back(&t.output_bytes()[mark..])
    });
    if proc_state(pid) == Some('T') {
        let (alt, hidden) = t.with_screen(|s| (s.alternate_screen(), s.hide_cursor()));
        assert!(!alt, "stopped in the main screen");
        assert!(!hidden, "stopped with the cursor visible");
        signal("CONT", pid);
    } else {
        println!("SIGTSTP was discarded (orphaned process group); triage did not stop");
    }
    poll_until(
        Duration::from_secs(10),
        "the alternate screen again",
        || t.with_screen(|s| s.alternate_screen()),
    );
    t.wait_for(FIRST_CASE);
    t.wait_for("classified 0/29");
    t.send("j");
    t.wait_for(&format!("{FIRST_CASE} / {SECOND_VARIANT}"));
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    assert_restored(&t);
}

/// Ctrl-Z under a shell with job control, as a user has it: triage runs as
/// a foreground job of `bash` with `set -m` in the pty's session (so its
/// process group is not orphaned and the kernel delivers SIGTSTP). The
/// shell sees the job stop (status 148 = 128 + SIGTSTP) with the terminal
/// restored, brings it back with `fg`, and triage redraws and goes on.
#[test]
fn ctrl_z_stops_under_a_job_control_shell_and_fg_resumes() {
    let dir = tempfile::tempdir().unwrap();
    copy_sample(dir.path(), RICH);
    let script = concat!(
        "set -m\n",
        "\"$0\" --reviewer tester --config /dev/null run.jsonl\n",
        "echo \"job-stopped-$?\"\n",
        "fg >/dev/null\n",
        "echo \"job-ended-$?\"\n",
    );
    let mut t = Tui::spawn_program(
        "bash",
        &[
            "--norc",
            "--noprofile",
            "-c",
            script,
            env!("CARGO_BIN_EXE_triage"),
        ],
        120,
        40,
        dir.path(),
        &[],
    );
    t.wait_for(FIRST_CASE);
    let mark = t.output_bytes().len();
    t.send("\x1a");
    poll_until(
        Duration::from_secs(10),
        "the shell to see the job stop",
        || contains(&t.output_bytes()[mark..], b"job-stopped-148"),
    );
    // Before the job stopped, triage left the alternate screen and showed
    // the cursor: the shell's line was printed on a normal terminal.
    let out = t.output_bytes()[mark..].to_vec();
    let stopped = position(&out, b"job-stopped-148").expect("seen");
    let before = &out[..stopped];
    let left = position(before, b"\x1b[?1049l").expect("left the alternate screen");
    assert!(
        contains(&before[left..], b"\x1b[?25h"),
        "the cursor was shown before the stop"
    );
    // `fg` brings it back into the alternate screen with the list.
    poll_until(
        Duration::from_secs(10),
        "the alternate screen again",
        || t.with_screen(|s| s.alternate_screen()),
    );
    t.wait_for("classified 0/29");
    poll_until(Duration::from_secs(10), "mouse reporting back on", || {
        t.with_screen(|s| s.mouse_protocol_mode() != vt100::MouseProtocolMode::None)
    });
    t.send("j");
    t.wait_for(&format!("{FIRST_CASE} / {SECOND_VARIANT}"));
    t.send("q");
    t.wait_for("job-ended-0");
    assert_eq!(t.wait_exit(), 0);
    assert_restored(&t);
}

/// `triage apply` writes OUT through a temporary file; OUT should still get
/// the usual permissions of a new file (or the run's), not the temporary
/// file's private 0600.
#[test]
fn apply_output_is_not_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let run = copy_sample(dir.path(), RICH);
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, stdout, stderr) = apply(dir.path(), &["run.jsonl", "-o", "out.jsonl"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let mode = std::fs::metadata(dir.path().join("out.jsonl"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode & 0o044, 0o044, "OUT is mode {mode:o}");
}

/// More than 1 KiB of input at once (type-ahead while the program is busy, a
/// paste without bracketed paste, a burst of mouse reports) must all be
/// read: the last key is answered without waiting for another one.
#[test]
fn a_burst_of_more_than_a_kilobyte_of_keys_is_read_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    copy_sample(dir.path(), RICH);
    let mut t = open(dir.path(), 120, 40);
    t.wait_for("classified 0/29");
    // 2000 presses of an unbound key (each only sets a message), then F9,
    // whose own "not bound" message shows that the whole burst was read.
    let mut burst = "x".repeat(2000);
    burst.push_str("\x1b[20~");
    t.send(&burst);
    t.wait_for("f9 is not bound");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
}

#[test]
fn a_promptfoo_file_opens_is_classified_and_exported() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("results.json");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats/promptfoo/results.json");
    std::fs::copy(&fixture, &run).expect("copy the fixture");
    let before = std::fs::read(&run).unwrap();
    let mut t = Tui::spawn(
        &["results.json", "--reviewer", "tester"],
        120,
        40,
        dir.path(),
        &[],
    );
    // Detected from the content; the status bar names the tool.
    t.wait_for("results.json · promptfoo · 5 pairs · 4 failures · classified 0/4");
    t.send("5");
    t.wait_for("classified 1/4");
    t.wait_for("saved: classified as boundary");
    // The journal sits beside the user's file, not the converted copy.
    let journal = std::fs::read_to_string(dir.path().join("results.json.triage.jsonl"))
        .expect("the journal beside results.json");
    assert_eq!(journal.lines().count(), 1, "{journal}");
    assert!(journal.contains("\"boundary\""), "{journal}");

    t.send("e");
    t.wait_for("results.report.md");
    t.send("\x15");
    t.send("report.md");
    t.send("\r");
    t.wait_for("exported 4 pairs");
    let report = std::fs::read_to_string(dir.path().join("report.md")).expect("the report");
    assert!(report.contains("boundary"), "{report}");
    assert!(
        report.contains("`results.json` (promptfoo results"),
        "{report}"
    );
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    assert_eq!(
        std::fs::read(&run).unwrap(),
        before,
        "the run file is never changed"
    );

    // Reopened, the decision is still there; apply writes the converted records.
    let out = Command::new(env!("CARGO_BIN_EXE_triage"))
        .args(["apply", "results.json", "-o", "annotated.jsonl"])
        .current_dir(dir.path())
        .output()
        .expect("run triage apply");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("converted from promptfoo") && stdout.contains("1 of 5 lines"),
        "{stdout}"
    );
    let annotated = std::fs::read_to_string(dir.path().join("annotated.jsonl")).unwrap();
    let marked: Vec<Value> = annotated
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("triage").is_some())
        .collect();
    assert_eq!(marked.len(), 1);
    assert_eq!(marked[0]["triage"]["category"], "boundary");
    assert_eq!(marked[0]["format"], "promptfoo");
}
