//! Nothing acknowledged is lost under `kill -9`.
//!
//! Each round copies the rich sample into a temporary directory, opens it,
//! types category keys quickly (with the odd undo and move), and after each
//! key looks at the screen: the status bar's "classified N/29" is drawn only
//! after the journal was appended and fsynced. At a random point the process
//! is killed with SIGKILL; the journal must then hold at least the last N
//! that was on screen, and a new triage must open the run with it.
//!
//! The seed is printed; `TRIAGE_TEST_SEED=<seed> cargo test --test kill`
//! repeats a run exactly (up to timing).

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Rng, Tui, seed};
use serde_json::Value;

const ROUNDS: usize = 25;
const FAILURES: usize = 29;
const FIRST_CASE: &str = "checkout-outage-001";

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-runs/support-urgency.jsonl")
}

/// The screen, but only if the program's output so far ends exactly at the
/// end of a frame (ratatui ends every frame by hiding the cursor), so a
/// half-written status bar is never read: "19/29" going to "20/29" must not
/// be seen as "29/29".
fn whole_frame(t: &Tui) -> Option<String> {
    let before = t.output_bytes().len();
    let screen = t.screen();
    let out = t.output_bytes();
    (out.len() == before && out.ends_with(b"\x1b[?25l")).then_some(screen)
}

/// N from the status bar's "classified N/29" ("unclassified" elsewhere on
/// the screen does not count).
fn classified_on(screen: &str) -> Option<usize> {
    let total = format!("/{FAILURES}");
    screen.match_indices(" classified ").find_map(|(at, m)| {
        let rest = &screen[at + m.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let after = &rest[digits.len()..];
        let ok = !digits.is_empty()
            && after.starts_with(&total)
            && !after[total.len()..].starts_with(|c: char| c.is_ascii_digit());
        if ok { digits.parse().ok() } else { None }
    })
}

/// Waits until a whole frame satisfies `done`; panics with `context`.
#[track_caller]
fn wait_frame(t: &Tui, context: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(screen) = whole_frame(t)
            && done(&screen)
        {
            return screen;
        }
        assert!(
            Instant::now() < deadline,
            "{context}: timed out; screen:\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Replays the journal text to the number of classified pairs. Every line
/// that ends with a newline must be JSON; only a final line without a newline
/// (cut off by the kill) may be torn.
fn replay(text: &str, context: &str) -> usize {
    let mut last: HashMap<String, Value> = HashMap::new();
    let mut lines: Vec<&str> = text.split('\n').collect();
    let tail = lines.pop().unwrap_or_default();
    for (i, line) in lines.iter().enumerate() {
        let event: Value = serde_json::from_str(line).unwrap_or_else(|e| {
            panic!(
                "{context}: journal line {} is not JSON ({e}): {line:?}",
                i + 1
            )
        });
        let key = event["key"]
            .as_str()
            .unwrap_or_else(|| panic!("{context}: journal line {} has no key", i + 1))
            .to_string();
        assert_eq!(event["reviewer"], "tester", "{context}: line {}", i + 1);
        last.insert(key, event);
    }
    if !tail.is_empty() {
        // A torn last write: allowed, as long as it is not a whole line.
        if let Ok(event) = serde_json::from_str::<Value>(tail)
            && let Some(key) = event["key"].as_str()
        {
            last.insert(key.to_string(), event);
        }
    }
    last.values().filter(|e| !e["category"].is_null()).count()
}

/// One round: returns nothing, panics with `context` on failure.
fn round(rng: &mut Rng, context: &str) {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.jsonl");
    std::fs::copy(sample(), &run).unwrap();
    let journal = dir.path().join("run.jsonl.triage.jsonl");

    let mut t = Tui::spawn(
        &["run.jsonl", "--reviewer", "tester"],
        120,
        40,
        dir.path(),
        &[],
    );
    t.wait_for(FIRST_CASE);
    let start = wait_frame(&t, context, |s| classified_on(s) == Some(0));
    let mut acknowledged = classified_on(&start).unwrap_or(0);
    let mut last_screen = start;

    let keys = rng.range(3, 30);
    let mut marker = 0u32;
    for _ in 0..keys {
        let roll = rng.range(0, 99);
        let key = match roll {
            0..=9 => "u".to_string(),
            10..=19 => "j".to_string(),
            _ => char::from(b'0' + rng.range(1, 7) as u8).to_string(),
        };
        t.send(&key);
        if key == "u" {
            // An undo can lower the count: let it land (and show) before
            // typing on, so no undo is in flight at the kill and the last
            // count seen is a floor for what is on disk. An unbound function
            // key makes the program say so once every earlier key is done;
            // F9 and F10 alternate so an old message is never taken for new.
            let (seq, name) = if marker.is_multiple_of(2) {
                ("\x1b[20~", "f9")
            } else {
                ("\x1b[21~", "f10")
            };
            marker += 1;
            t.send(seq);
            let needle = format!("{name} is not bound");
            last_screen = wait_frame(&t, context, |s| s.contains(&needle));
            acknowledged = classified_on(&last_screen)
                .unwrap_or_else(|| panic!("{context}: no count after undo:\n{last_screen}"));
            continue;
        }
        if let Some(screen) = whole_frame(&t)
            && let Some(n) = classified_on(&screen)
        {
            acknowledged = n;
            last_screen = screen;
        }
    }

    let pid = t.pid().expect("pid");
    let status = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "{context}: kill -KILL {pid}");
    let exit = t.wait_exit_status();
    assert!(!exit.success(), "{context}: killed, yet {exit:?}");

    let text = match std::fs::read(&journal) {
        Ok(bytes) => String::from_utf8(bytes)
            .unwrap_or_else(|e| panic!("{context}: journal is not UTF-8: {e}")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => panic!("{context}: read the journal: {e}"),
    };
    let on_disk = replay(&text, context);
    assert!(
        on_disk >= acknowledged,
        "{context}: the screen said classified {acknowledged}/{FAILURES}, \
         the journal replays to {on_disk}\nlast screen:\n{last_screen}\njournal:\n{text}"
    );
    assert_eq!(
        std::fs::read(&run).unwrap(),
        std::fs::read(sample()).unwrap(),
        "{context}: the run file changed"
    );

    // A new triage takes the journal as it is.
    let mut t = Tui::spawn(
        &["run.jsonl", "--reviewer", "tester"],
        120,
        40,
        dir.path(),
        &[],
    );
    t.wait_for(FIRST_CASE);
    let reopened = wait_frame(&t, context, |s| classified_on(s).is_some());
    let m = classified_on(&reopened).unwrap();
    assert!(
        m >= acknowledged,
        "{context}: reopened with classified {m}, the killed one showed {acknowledged}"
    );
    assert_eq!(
        m, on_disk,
        "{context}: reopened count differs from the journal replay\n{reopened}"
    );
    println!("{context}: {keys} keys, screen showed {acknowledged}, journal has {on_disk}");
    t.send("q");
    assert_eq!(t.wait_exit(), 0, "{context}: quit after reopening");
    assert_eq!(
        std::fs::read(&run).unwrap(),
        std::fs::read(sample()).unwrap(),
        "{context}: the run file changed"
    );
}

#[test]
fn kill_9_loses_nothing_acknowledged() {
    let seed = seed();
    println!("kill -9 seed {seed} (TRIAGE_TEST_SEED={seed} repeats it)");
    let mut rng = Rng(seed);
    for i in 0..ROUNDS {
        let context = format!("seed {seed}, round {}", i + 1);
        round(&mut rng, &context);
    }
}
