//! No decision lost or wiped, end to end: the export dialog never writes
//! over a run or a journal and asks before it replaces a file; unreadable
//! journal lines are shown and kept; quitting (or SIGTERM) with decisions
//! the disk refused keeps them in a recovery file; a journal put back from
//! an older copy gets this triage's decisions again; several runs keep
//! their own journals; a read-only run folder still reads the journal
//! committed beside the run; and opening a run writes nothing.
//!
//! A full disk is simulated by a journal that is a symlink to /dev/full
//! (appends fail with ENOSPC), so these tests need Linux. Synchronisation
//! is by waiting for screen text, never by fixed sleeps.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::Tui;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/journal")
        .join(name)
}

/// A temp dir holding copies of the two fixture runs.
fn runs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in ["failing.jsonl", "passing.jsonl"] {
        std::fs::copy(fixture(name), dir.path().join(name)).expect("copy a fixture");
    }
    dir
}

fn open(dir: &Path, args: &[&str]) -> Tui {
    let mut all = vec!["--reviewer", "tester", "--config", "/dev/null"];
    all.extend_from_slice(args);
    Tui::spawn(&all, 200, 40, dir, &[("XDG_DATA_HOME", &data_home(dir))])
}

/// A data folder (for fallback journals) inside the test's temp dir.
fn data_home(dir: &Path) -> String {
    dir.join("data").to_string_lossy().to_string()
}

fn triage(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_triage"))
        .args(args)
        .args(["--config", "/dev/null"])
        .current_dir(dir)
        .env("XDG_DATA_HOME", data_home(dir))
        .output()
        .expect("run triage")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `kill -SIG pid` through the system `kill` command.
fn signal(sig: &str, pid: u32) {
    let status = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{sig} {pid} failed");
}

/// The events of a journal (or recovery file), as JSON.
fn events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// What the program wrote to its terminal after leaving it (stderr included).
fn output(t: &Tui) -> String {
    String::from_utf8_lossy(&t.output_bytes()).into_owned()
}

/// The output with line breaks and padding removed, to find a message
/// wrapped at the terminal's width.
fn joined(t: &Tui) -> String {
    output(t).replace("\r\n", "").replace('\n', "")
}

/// The record key of line `n` (1-based) of a fixture, as a journal writes it.
fn key_of(name: &str, n: usize) -> String {
    let text = std::fs::read_to_string(fixture(name)).expect("fixture");
    let line = text.lines().nth(n - 1).expect("the line");
    let v: Value = serde_json::from_str(line).expect("JSON");
    triage::core::key::record_key(&v).to_string()
}

fn event_line(key: &str, case: &str, category: &str) -> String {
    serde_json::json!({
        "v": 1, "key": key, "case_id": case, "variant_id": "footer-noise",
        "category": category, "note": null, "reviewer": "earlier",
        "at": "2026-01-01T00:00:00Z", "source": "manual", "prev": null,
    })
    .to_string()
}

/// Make `dir` a journal that is a full disk: a symlink to /dev/full.
#[cfg(target_os = "linux")]
fn full_disk_journal(journal: &Path) -> bool {
    if !Path::new("/dev/full").exists() {
        eprintln!("skipped: no /dev/full");
        return false;
    }
    std::os::unix::fs::symlink("/dev/full", journal).expect("symlink");
    true
}

#[test]
fn viewing_a_run_writes_no_file_until_the_first_decision() {
    let dir = runs();
    let mut t = open(dir.path(), &["failing.jsonl"]);
    t.wait_for("classified 0/3");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["failing.jsonl", "passing.jsonl"],
        "viewing wrote files"
    );

    let mut t = open(dir.path(), &["failing.jsonl"]);
    t.wait_for("classified 0/3");
    t.send("1");
    t.wait_for("classified 1/3");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    assert_eq!(
        events(&dir.path().join("failing.jsonl.triage.jsonl")).len(),
        1
    );
    assert!(dir.path().join("failing.jsonl.triage.jsonl.lock").exists());
}

/// Open the export prompt, replace its path by `path` and press Enter.
fn export_to(t: &mut Tui, path: &str) {
    t.send("e");
    t.wait_for("next format");
    t.send("\x15");
    t.send(path);
    t.send("\r");
    t.wait_gone("next format");
}

#[test]
fn the_export_dialog_refuses_the_journal_its_lock_and_every_open_run() {
    let dir = runs();
    let mut t = open(dir.path(), &["failing.jsonl", "passing.jsonl"]);
    t.wait_for("classified 0/3");
    t.send("1");
    t.wait_for("classified 1/3");
    let journal = dir.path().join("failing.jsonl.triage.jsonl");
    let before = std::fs::read(&journal).expect("the journal");

    export_to(&mut t, "failing.jsonl.triage.jsonl");
    t.wait_for("NOT EXPORTED: that path is the annotation journal");
    export_to(&mut t, "./failing.jsonl.triage.jsonl.lock");
    t.wait_for("NOT EXPORTED: that path is one of the annotation journal's files");
    // The second run's journal does not exist yet: still refused.
    export_to(&mut t, "passing.jsonl.triage.jsonl");
    t.wait_for("NOT EXPORTED: that path is the annotation journal");
    export_to(&mut t, "passing.jsonl");
    t.wait_for("NOT EXPORTED: that path is a run that is open");

    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        before,
        "the journal is intact"
    );
    assert!(!dir.path().join("passing.jsonl.triage.jsonl").exists());
    assert_eq!(
        std::fs::read(dir.path().join("passing.jsonl")).unwrap(),
        std::fs::read(fixture("passing.jsonl")).unwrap()
    );
}

#[cfg(target_os = "linux")]
#[test]
fn the_export_dialog_asks_before_replacing_a_file_and_reports_a_full_device() {
    let dir = runs();
    let report = dir.path().join("report.md");
    std::fs::write(&report, "keep me\n").unwrap();
    let mut t = open(dir.path(), &["failing.jsonl"]);
    t.wait_for("classified 0/3");

    export_to(&mut t, "report.md");
    t.wait_for("report.md exists. Replace it");
    t.send("n");
    t.wait_for("cancelled; nothing changed");
    assert_eq!(std::fs::read_to_string(&report).unwrap(), "keep me\n");

    export_to(&mut t, "report.md");
    t.wait_for("report.md exists. Replace it");
    t.send("y");
    t.wait_for("exported 3 pairs to report.md");
    assert!(std::fs::read_to_string(&report).unwrap().contains("beta-1"));

    if Path::new("/dev/full").exists() {
        export_to(&mut t, "/dev/full");
        t.wait_for("NOT EXPORTED to /dev/full: No space left on device");
        use std::os::unix::fs::FileTypeExt;
        assert!(
            std::fs::metadata("/dev/full")
                .unwrap()
                .file_type()
                .is_char_device()
        );
    }
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
}

#[cfg(target_os = "linux")]
#[test]
fn every_quit_with_unsaved_decisions_asks_and_they_go_to_a_recovery_file() {
    let dir = runs();
    let journal = dir.path().join("failing.jsonl.triage.jsonl");
    if !full_disk_journal(&journal) {
        return;
    }
    let mut t = open(dir.path(), &["failing.jsonl"]);
    t.wait_for("classified 0/3");
    t.send("1");
    t.wait_for("1 decision is kept in memory");
    for _ in 0..3 {
        t.send("q");
        t.wait_for("1 decision is NOT saved");
        t.wait_for("Quit anyway?");
        t.send("n");
        t.wait_gone("Quit anyway?");
    }
    t.send("q");
    t.wait_for("Quit anyway?");
    t.send("y");
    assert_eq!(t.wait_exit(), 0);
    let recovery = dir
        .path()
        .join("failing.jsonl.triage.jsonl.recovered.jsonl");
    let text = joined(&t);
    assert!(
        text.contains("written to failing.jsonl.triage.jsonl.recovered.jsonl"),
        "{text}"
    );
    let saved = events(&recovery);
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0]["case_id"], "beta-1");
    assert_eq!(saved[0]["key"], key_of("failing.jsonl", 1));
    assert!(saved[0]["category"].is_string());
}

#[cfg(target_os = "linux")]
#[test]
fn sigterm_writes_unsaved_decisions_to_a_recovery_file_and_says_where() {
    let dir = runs();
    let journal = dir.path().join("failing.jsonl.triage.jsonl");
    if !full_disk_journal(&journal) {
        return;
    }
    let mut t = open(dir.path(), &["failing.jsonl"]);
    t.wait_for("classified 0/3");
    t.send("1");
    t.wait_for("1 decision is kept in memory");
    t.send("j");
    t.send("2");
    t.wait_for("2 decisions are kept in memory");
    signal("TERM", t.pid().expect("pid"));
    assert_eq!(t.wait_exit(), 128 + 15);
    let recovery = dir
        .path()
        .join("failing.jsonl.triage.jsonl.recovered.jsonl");
    let text = joined(&t);
    assert!(text.contains("2 decisions could not be saved"), "{text}");
    assert!(
        text.contains("written to failing.jsonl.triage.jsonl.recovered.jsonl"),
        "{text}"
    );
    assert_eq!(events(&recovery).len(), 2);
}

#[cfg(target_os = "linux")]
#[test]
fn sigterm_prints_the_unsaved_decisions_when_no_recovery_file_can_be_written() {
    let dir = runs();
    let sub = dir.path().join("journals");
    std::fs::create_dir(&sub).unwrap();
    let journal = sub.join("failing.triage.jsonl");
    if !full_disk_journal(&journal) {
        return;
    }
    let mut t = open(
        dir.path(),
        &[
            "failing.jsonl",
            "--annotations",
            "journals/failing.triage.jsonl",
        ],
    );
    t.wait_for("classified 0/3");
    t.send("1");
    t.wait_for("1 decision is kept in memory");
    // Nowhere left beside the journal for a recovery file.
    std::fs::remove_dir_all(&sub).unwrap();
    signal("TERM", t.pid().expect("pid"));
    assert_eq!(t.wait_exit(), 128 + 15);
    let text = output(&t);
    let flat = joined(&t);
    assert!(flat.contains("nor to a recovery file beside it"), "{text}");
    assert!(flat.contains("follows below as JSON lines"), "{text}");
    let line = text
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .find(|l| l.starts_with("{\"v\":1"))
        .unwrap_or_else(|| panic!("an event line in the output:\n{text}"));
    let event: Value = serde_json::from_str(line).expect("a JSON line");
    assert_eq!(event["key"], key_of("failing.jsonl", 1));
}

#[test]
fn unreadable_journal_lines_are_shown_and_moved_aside_not_dropped() {
    let dir = runs();
    let journal = dir.path().join("failing.jsonl.triage.jsonl");
    let good = event_line(&key_of("failing.jsonl", 1), "beta-1", "boundary");
    let broken = event_line(&key_of("failing.jsonl", 2), "beta-2", "distractor").replace('}', ",}");
    let bad = ["<<<<<<< HEAD", broken.as_str(), "\0\0\0", ">>>>>>> theirs"];
    let text = format!("{good}\n{}\n", bad.join("\n"));
    std::fs::write(&journal, &text).unwrap();

    let mut t = open(dir.path(), &["failing.jsonl"]);
    t.wait_for("4 unreadable journal lines moved to failing.jsonl.triage.jsonl.unreadable");
    t.wait_for("classified 1/3");
    t.wait_for("4 unreadable journal lines");
    t.send("p");
    t.wait_for("4 lines of the annotation journal could not be read");
    t.wait_for("a merge conflict marker");
    t.wait_for("holds NUL bytes");
    t.wait_for("moved to");
    t.send("p");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    assert_eq!(
        std::fs::read_to_string(&journal).unwrap(),
        format!("{good}\n")
    );
    let side = dir.path().join("failing.jsonl.triage.jsonl.unreadable");
    assert_eq!(
        std::fs::read_to_string(&side).unwrap(),
        format!("{}\n", bad.join("\n"))
    );
}

#[test]
fn a_journal_put_back_from_an_older_copy_is_merged_by_event() {
    let dir = runs();
    let journal = dir.path().join("failing.jsonl.triage.jsonl");
    let mut t = open(dir.path(), &["failing.jsonl"]);
    t.wait_for("classified 0/3");
    t.send("1");
    t.wait_for("classified 1/3");
    let older = std::fs::read(&journal).unwrap();
    t.send("2");
    t.wait_for("classified 2/3");
    // As `git checkout` does: a new file with the older content.
    let copy = dir.path().join("older-copy");
    std::fs::write(&copy, &older).unwrap();
    std::fs::rename(&copy, &journal).unwrap();
    t.wait_for("replaced by a copy without 1 of your decisions; it was written again");
    t.wait_for("classified 2/3");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    let cases: Vec<String> = events(&journal)
        .iter()
        .filter(|e| e["category"].is_string())
        .map(|e| e["case_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(cases, ["beta-1", "beta-2"]);
}

#[test]
fn decisions_on_several_runs_go_to_each_runs_own_journal() {
    let dir = runs();
    let mut t = open(dir.path(), &["passing.jsonl", "failing.jsonl"]);
    t.wait_for("classified 0/3");
    t.send("1");
    t.wait_for("classified 1/3");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    let journal = dir.path().join("failing.jsonl.triage.jsonl");
    let saved = events(&journal);
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0]["case_id"], "beta-1");
    assert!(!dir.path().join("passing.jsonl.triage.jsonl").exists());

    // `triage check` of that run alone sees the decision.
    let o = triage(
        dir.path(),
        &["check", "failing.jsonl", "--max-unclassified", "2"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = triage(
        dir.path(),
        &["check", "failing.jsonl", "--max-unclassified", "1"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

#[test]
fn a_journal_given_as_a_run_is_skipped_with_a_note() {
    let dir = runs();
    let journal = dir.path().join("failing.jsonl.triage.jsonl");
    std::fs::write(
        &journal,
        event_line(&key_of("failing.jsonl", 1), "beta-1", "boundary") + "\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("failing.jsonl.triage.jsonl.lock"), "").unwrap();
    // As `triage check *.jsonl*` would list them.
    let o = triage(
        dir.path(),
        &[
            "check",
            "failing.jsonl",
            "failing.jsonl.triage.jsonl",
            "failing.jsonl.triage.jsonl.lock",
            "passing.jsonl",
            "--strict",
            "--max-unclassified",
            "2",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "triage: note: failing.jsonl.triage.jsonl is an annotation journal, not a run: skipped"
        ),
        "{err}"
    );
    assert!(
        err.contains("failing.jsonl.triage.jsonl.lock is an annotation journal"),
        "{err}"
    );
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(report.contains("5 pairs, 3 failures"), "{report}");

    let o = triage(dir.path(), &["check", "failing.jsonl.triage.jsonl"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("is an annotation journal, not a run"),
        "{}",
        stderr(&o)
    );
}

/// A folder nobody may create files in, for as long as it lives: mode
/// 0555, and for root (whom modes do not stop) the immutable attribute.
#[cfg(unix)]
struct ReadOnlyFolder(PathBuf);

#[cfg(unix)]
impl ReadOnlyFolder {
    fn new(path: &Path) -> Option<ReadOnlyFolder> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o555)).ok()?;
        let guard = ReadOnlyFolder(path.to_path_buf());
        if guard.writable() {
            let _ = Command::new("chattr").arg("+i").arg(path).status();
        }
        (!guard.writable()).then_some(guard)
    }

    fn writable(&self) -> bool {
        let probe = self.0.join(".probe");
        let ok = std::fs::write(&probe, "").is_ok();
        let _ = std::fs::remove_file(&probe);
        ok
    }
}

#[cfg(unix)]
impl Drop for ReadOnlyFolder {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
    }
}

#[cfg(unix)]
#[test]
fn a_read_only_run_folder_still_reads_the_journal_committed_beside_the_run() {
    let dir = runs();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::copy(fixture("failing.jsonl"), ro.join("failing.jsonl")).unwrap();
    let committed = ro.join("failing.jsonl.triage.jsonl");
    let text = format!(
        "{}\n{}\n",
        event_line(&key_of("failing.jsonl", 1), "beta-1", "boundary"),
        event_line(&key_of("failing.jsonl", 2), "beta-2", "distractor")
    );
    std::fs::write(&committed, &text).unwrap();
    let Some(guard) = ReadOnlyFolder::new(&ro) else {
        eprintln!("skipped: cannot make a folder read-only here");
        return;
    };

    let o = triage(
        dir.path(),
        &["check", "ro/failing.jsonl", "--max-unclassified", "1"],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("its committed journal is merged in"), "{err}");

    let mut t = open(dir.path(), &["ro/failing.jsonl"]);
    t.wait_for("classified 2/3");
    t.wait_for("committed journal is merged in");
    // beta-3, the one pair the committed journal leaves unclassified.
    t.send("G");
    t.send("1");
    t.wait_for("saved: classified as");
    // A move clears the message; the counts come back beside the notice.
    t.send("k");
    t.wait_for("classified 3/3");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    let o = triage(
        dir.path(),
        &["check", "ro/failing.jsonl", "--max-unclassified", "0"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    drop(guard);
    assert_eq!(
        std::fs::read_to_string(&committed).unwrap(),
        text,
        "never written"
    );
    let runs_dir = dir.path().join("data/triage/runs");
    let fallback: Vec<PathBuf> = std::fs::read_dir(&runs_dir)
        .expect("the fallback folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".triage.jsonl"))
        .collect();
    assert_eq!(fallback.len(), 1, "{fallback:?}");
    let saved = events(&fallback[0]);
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0]["case_id"], "beta-3");
    // The folder writable again: its journal, and the fallback's decisions read under it.
    let o = triage(
        dir.path(),
        &["check", "ro/failing.jsonl", "--max-unclassified", "0"],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("while its folder was read-only are merged in"),
        "{err}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn output_to_a_full_device_fails_with_a_message() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let dir = runs();
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let o = triage(dir.path(), &["export", "failing.jsonl", "-o", "/dev/full"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot write '/dev/full': No space left on device"));
    for args in [
        &["export", "failing.jsonl"][..],
        &["summary", "failing.jsonl"],
        &["check", "failing.jsonl"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_triage"))
            .args(args)
            .args(["--config", "/dev/null"])
            .current_dir(dir.path())
            .stdout(full())
            .output()
            .expect("run triage");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("to standard output: No space left on device"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::metadata("/dev/full")
            .unwrap()
            .file_type()
            .is_char_device(),
        "the device is still there"
    );
}

#[test]
fn export_refuses_every_runs_journal_and_its_lock() {
    let dir = runs();
    for out in [
        "passing.jsonl.triage.jsonl",
        "failing.jsonl.triage.jsonl",
        "failing.jsonl.triage.jsonl.lock",
    ] {
        let o = triage(
            dir.path(),
            &["export", "failing.jsonl", "passing.jsonl", "-o", out],
        );
        assert_eq!(o.status.code(), Some(2), "{out}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("annotation journal"),
            "{out}: {}",
            stderr(&o)
        );
        assert!(!dir.path().join(out).exists(), "{out} written");
    }
}

/// With no `--reviewer`, no config and `$USER` and `$LOGNAME` blank, the
/// decision is the account's, not "unknown".
#[test]
fn without_user_the_reviewer_is_the_account_name() {
    let dir = runs();
    let account = Command::new("id").arg("-un").output().expect("run id -un");
    let account = String::from_utf8_lossy(&account.stdout).trim().to_string();
    assert!(!account.is_empty(), "id -un printed nothing");
    let data = data_home(dir.path());
    let mut t = Tui::spawn(
        &["--config", "/dev/null", "failing.jsonl"],
        200,
        40,
        dir.path(),
        &[("XDG_DATA_HOME", &data), ("USER", ""), ("LOGNAME", " ")],
    );
    t.wait_for("classified 0/3");
    t.send("1");
    t.wait_for("classified 1/3");
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    let events = events(&dir.path().join("failing.jsonl.triage.jsonl"));
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["reviewer"], account.as_str(), "{}", events[0]);
}
