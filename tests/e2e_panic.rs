//! A panic restores the terminal and prints a short message, not a backtrace.

mod common;

use common::Tui;

#[test]
fn a_panic_restores_the_terminal_with_a_short_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-runs/support-urgency.jsonl"),
        dir.path().join("run.jsonl"),
    )
    .expect("copy");
    let mut t = Tui::spawn(
        &["--reviewer", "tester", "--config", "/dev/null", "run.jsonl"],
        100,
        30,
        dir.path(),
        &[("TRIAGE_TEST_PANIC", "1"), ("RUST_BACKTRACE", "1")],
    );
    let code = t.wait_exit();
    assert_ne!(code, 0);
    t.with_screen(|s| {
        assert!(!s.alternate_screen(), "still in the alternate screen");
        assert!(!s.hide_cursor(), "the cursor is still hidden");
    });
    let screen = t.screen();
    assert!(
        screen.contains("triage stopped on an internal error: TRIAGE_TEST_PANIC is set"),
        "{screen}"
    );
    assert!(
        screen.contains("Every decision shown as saved is on disk"),
        "{screen}"
    );
    assert!(!screen.contains("stack backtrace"), "{screen}");
    // Raw mode is off: the terminal echoes and translates newlines again.
    let out = t.output_bytes();
    let last_leave = out
        .windows(8)
        .rposition(|w| w == b"\x1b[?1049l")
        .expect("left the alternate screen");
    let last_enter = out
        .windows(8)
        .rposition(|w| w == b"\x1b[?1049h")
        .expect("entered it");
    assert!(last_leave > last_enter);
}

/// An allocation that fails aborts the process (Rust's allocation error hook
/// is unstable); the terminal is restored all the same, mouse reporting
/// included, and the message says that memory ran out.
#[test]
fn an_allocation_failure_restores_the_terminal_and_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-runs/support-urgency.jsonl"),
        dir.path().join("run.jsonl"),
    )
    .expect("copy");
    let mut t = Tui::spawn(
        &["--reviewer", "tester", "--config", "/dev/null", "run.jsonl"],
        100,
        30,
        dir.path(),
        &[("TRIAGE_TEST_OUT_OF_MEMORY", "1")],
    );
    let status = t.wait_exit_status();
    assert!(!status.success());
    t.with_screen(|s| {
        assert!(!s.alternate_screen(), "still in the alternate screen");
        assert!(!s.hide_cursor(), "the cursor is still hidden");
        assert_eq!(
            s.mouse_protocol_mode(),
            vt100::MouseProtocolMode::None,
            "mouse reporting left on"
        );
    });
    let screen = t.screen();
    assert!(
        screen.contains("triage ran out of memory and stopped"),
        "{screen}"
    );
}
