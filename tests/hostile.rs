//! Hostile run files never break the terminal.
//!
//! Every fixture is generated into a temporary directory, opened at 100×30,
//! browsed with j/k/tab/?/esc/r/v/p, and closed with q. The program must exit
//! 0 and leave the terminal as it found it; text from the file must never
//! reach the terminal as control sequences.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::Tui;
use serde_json::{Value, json};

const COLS: u16 = 100;
const ROWS: u16 = 30;

/// Every way a string can try to talk to the terminal, between visible
/// delimiters so the raw output can be searched for exactly this text.
const PAYLOAD: &str = concat!(
    "<",
    "\x1b[2J|",
    "\x1b]0;PWNED\x07|",
    "\x1b]52;c;SGVsbG8=\x07|",
    "\x1b]8;;http://x\x07link\x1b]8;;\x07|",
    "\x1b[31mred|",
    "\x1bPqDCS\x1b\\|",
    "\x1b_APC\x1b\\|",
    "cr\rcr|",
    "bs\x08bs|",
    "\u{202e}rtl|",
    "zw\u{200b}zw|",
    "c1\u{9b}c1",
    ">"
);

/// Byte strings that must never appear in the program's output: each is a
/// piece of [`PAYLOAD`] that would act on the terminal if written raw. (The
/// program's own output is CSI sequences for colour and movement; none of
/// these can come from it.)
const FORBIDDEN: &[&[u8]] = &[
    b"\x1b]0;PWNED",
    b"\x1b]52",
    b"\x1b]8;;",
    b"<\x1b[2J",
    b"\x1b[2J|",
    b"\x1b[31m",
    b"\x1bPqDCS",
    b"\x1b_APC",
    b"cr\rcr",
    b"bs\x08bs",
    "\u{202e}".as_bytes(),
    "\u{200b}".as_bytes(),
    "\u{9b}".as_bytes(),
];

/// A failing pair whose every string field carries `payload` (`tag` keeps
/// the records apart and findable on screen).
fn hostile_record(tag: &str, payload: &str) -> Value {
    let side = |route: &str, p: f64, extra: bool| {
        let mut state = json!({
            format!("key{payload}"): format!("value{payload}"),
            "plain": 1,
            "evidence": [{"id": format!("EV{payload}"), "text": format!("text{payload}")}],
        });
        if extra {
            state[format!("added{payload}")] = json!(format!("new{payload}"));
        }
        json!({
            "question": format!("question{payload}"),
            "state": state,
            "response": {"probability": p, "confidence": 0.8},
            "route": route,
            "outcome": "ok",
        })
    };
    json!({
        "case_id": format!("{tag}{payload}"),
        "variant_id": format!("variant{payload}"),
        "label": format!("label{payload}"),
        "family": format!("family{payload}"),
        "transformation": format!("transformation{payload}"),
        "model_id": format!("model{payload}"),
        "policy": {"review_threshold": 0.55, "action_threshold": 0.9},
        "expectation": {"kind": "invariant", "max_probability_drift": 0.1},
        "allowed_changes": [format!("state.added{payload}")],
        "source": side("review", 0.6, false),
        "variant": side("action", 0.95, true),
        "passed": false,
        "reasons": [format!("reason{payload}"), "plain reason"],
        format!("unknown{payload}"): format!("extra{payload}"),
    })
}

/// A small well-formed failing pair.
fn plain_record(case: &str, variant: &str) -> Value {
    json!({
        "case_id": case,
        "variant_id": variant,
        "policy": {"review_threshold": 0.55, "action_threshold": 0.9},
        "source": {"question": "q?", "state": {"a": 1}, "response": {"probability": 0.6, "confidence": 0.8}, "route": "review"},
        "variant": {"question": "q?", "state": {"a": 2}, "response": {"probability": 0.95, "confidence": 0.8}, "route": "action"},
        "passed": false,
        "reasons": ["Route changed from review to action."],
    })
}

fn jsonl(records: &[Value]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}

fn open(dir: &Path, file: &str) -> Tui {
    Tui::spawn(&[file, "--reviewer", "tester"], COLS, ROWS, dir, &[])
}

/// Browse with j/k/tab/?/esc/r/v/p, checking the title after every step,
/// then quit: exit 0 and a sane terminal.
fn browse_and_quit(t: &mut Tui) {
    for key in ["j", "k", "j", "\t", "j", "k"] {
        t.send(key);
        assert_title_clean(t);
    }
    t.send("?");
    t.wait_for("next pair");
    // A lone ESC: wait for it to land, or "ESC r" would read as alt-r.
    t.send("\x1b");
    t.wait_gone("next pair");
    for key in ["r", "j", "v", "j", "\t", "k"] {
        t.send(key);
        assert_title_clean(t);
    }
    t.send("p");
    t.wait_for("could not be opened");
    t.send("\x1b");
    t.wait_gone("could not be opened");
    assert_title_clean(t);
    t.send("q");
    assert_eq!(t.wait_exit(), 0, "q quits with 0");
    assert_sane(t);
}

#[track_caller]
fn assert_title_clean(t: &Tui) {
    let title = t.title();
    assert!(
        !title.contains("PWNED"),
        "the window title was set: {title:?}"
    );
}

/// The terminal after exit: main screen, cursor shown, no mouse reporting,
/// no bracketed paste, no title or bell from the file, and none of the
/// injected sequences in the output.
#[track_caller]
fn assert_sane(t: &Tui) {
    t.with_screen(|s| {
        assert!(!s.alternate_screen(), "left in the alternate screen");
        assert!(!s.hide_cursor(), "the cursor is still hidden");
        assert_eq!(
            s.mouse_protocol_mode(),
            vt100::MouseProtocolMode::None,
            "mouse reporting left on"
        );
        assert!(!s.bracketed_paste(), "bracketed paste left on");
    });
    assert_title_clean(t);
    assert_eq!(t.bells(), 0, "the program rang the bell");
    let out = t.output_bytes();
    for bad in FORBIDDEN {
        assert!(
            !out.windows(bad.len()).any(|w| w == *bad),
            "the output contains {:?}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn escape_sequences_in_every_field_stay_inert() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = jsonl(&[
        hostile_record("evil-one", PAYLOAD),
        hostile_record("evil-two", PAYLOAD),
        plain_record("plain-case", "plain-variant"),
    ]);
    // A line that is not JSON because of raw control bytes, for the problems
    // panel (JSON strings cannot hold them raw).
    text.push_str(&format!("{{\"case_id\": \"raw{PAYLOAD}\", oops}}\n"));
    // The file name itself is hostile too.
    let name = "run\x1b]0;PWNED\x07\u{202e}.jsonl";
    std::fs::write(dir.path().join(name), text).unwrap();

    let mut t = open(dir.path(), name);
    t.wait_for("evil-one<");
    // The escapes are shown, as text (in the detail, once it is built).
    for shown in [
        r"\x1b]0;PWNED\x07",
        r"\u202e",
        r"\x1b[2J",
        r"\u200b",
        r"\u009b",
    ] {
        t.wait_for(shown);
    }
    assert_title_clean(&t);
    // The problems panel names the bad line without replaying it.
    t.send("p");
    t.wait_for("could not be opened");
    t.wait_for(":4");
    t.send("\x1b");
    t.wait_gone("could not be opened");
    browse_and_quit(&mut t);
}

#[test]
fn a_hostile_missing_file_name_is_inert_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let name = "missing\x1b]0;PWNED\x07\x1b[2J|.jsonl";
    let mut t = open(dir.path(), name);
    assert_eq!(t.wait_exit(), 2);
    assert!(t.screen().contains(r"\x1b]0;PWNED"), "{}", t.screen());
    assert_sane(&t);
}

#[test]
fn a_ten_megabyte_line_opens() {
    let dir = tempfile::tempdir().unwrap();
    let mut huge = plain_record("huge-case", "huge-variant");
    huge["variant"]["state"]["blob"] = json!("x".repeat(10 * 1024 * 1024));
    let text = jsonl(&[
        plain_record("first-case", "first-variant"),
        huge,
        plain_record("last-case", "last-variant"),
    ]);
    assert!(text.len() > 10 * 1024 * 1024);
    std::fs::write(dir.path().join("run.jsonl"), text).unwrap();

    let mut t = open(dir.path(), "run.jsonl");
    t.wait_for("first-case / first-variant");
    t.wait_for_timeout("3 pairs", Duration::from_secs(30));
    t.wait_for("huge-case");
    // The huge pair's detail: slow to build in a debug build (see the
    // report), so give it time.
    t.send("j");
    t.wait_for_timeout("huge-case / huge-variant", Duration::from_secs(120));
    t.send("j");
    t.wait_for_timeout("last-case / last-variant", Duration::from_secs(30));
    t.send("g");
    t.wait_for_timeout("first-case / first-variant", Duration::from_secs(30));
    t.send("q");
    assert_eq!(t.wait_exit(), 0);
    assert_sane(&t);
}

#[test]
fn deep_nesting_is_a_problem_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let depth = 10_000;
    let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
    let mut text = jsonl(&[plain_record("before-case", "v1")]);
    text.push_str(&format!(
        "{{\"case_id\":\"deep-arrays\",\"variant_id\":\"v\",\"passed\":false,\"source\":{{\"state\":{arrays}}},\"variant\":{{\"state\":{{}}}}}}\n"
    ));
    text.push_str(&format!(
        "{{\"case_id\":\"deep-objects\",\"variant_id\":\"v\",\"passed\":false,\"source\":{{\"state\":{objects}}},\"variant\":{{\"state\":{{}}}}}}\n"
    ));
    text.push_str(&jsonl(&[plain_record("after-case", "v2")]));
    std::fs::write(dir.path().join("run.jsonl"), text).unwrap();

    let mut t = open(dir.path(), "run.jsonl");
    t.wait_for("before-case");
    t.wait_for("after-case");
    t.wait_for("2 bad lines");
    t.send("p");
    t.wait_for("could not be opened");
    t.wait_for("nesting too deep");
    for line in ["run.jsonl:2 ", "run.jsonl:3 "] {
        t.wait_for(line);
    }
    t.send("\x1b");
    t.wait_gone("could not be opened");
    browse_and_quit(&mut t);
}

#[test]
fn an_empty_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.jsonl"), "").unwrap();
    let mut t = open(dir.path(), "run.jsonl");
    t.wait_for("0 pairs");
    t.wait_for("no pairs");
    browse_and_quit(&mut t);
}

#[test]
fn binary_junk_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    // Deterministic junk: every byte value, NULs, invalid UTF-8, escapes.
    let mut junk: Vec<u8> = Vec::new();
    let mut x: u32 = 0x1234_5678;
    for i in 0..8192u32 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        junk.push(if i % 97 == 0 { b'\n' } else { (x >> 24) as u8 });
    }
    junk.extend_from_slice(b"\n\x00\x00\x00\n\xff\xfe\xfd\n\x1b]0;PWNED\x07\n\xc0\xaf\n");
    let mut bytes = jsonl(&[plain_record("good-case", "v1")]).into_bytes();
    bytes.extend_from_slice(&junk);
    bytes.push(b'\n');
    bytes.extend_from_slice(jsonl(&[plain_record("tail-case", "v2")]).as_bytes());
    std::fs::write(dir.path().join("run.jsonl"), bytes).unwrap();

    let mut t = open(dir.path(), "run.jsonl");
    t.wait_for("good-case");
    t.wait_for("tail-case");
    t.wait_for("bad lines");
    t.send("p");
    t.wait_for("could not be opened");
    t.wait_for("invalid UTF-8");
    t.send("\x1b");
    t.wait_gone("could not be opened");
    browse_and_quit(&mut t);
}

#[test]
fn files_that_are_not_jsonl_are_reported() {
    let pretty = serde_json::to_string_pretty(&plain_record("pretty-case", "v1")).unwrap();
    let csv =
        "case_id,variant_id,passed\ncheckout-outage-001,question-paraphrase,false\nx,y,true\n";
    for (name, text) in [("pretty.json", pretty.as_str()), ("table.csv", csv)] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(name), text).unwrap();
        let mut t = open(dir.path(), name);
        t.wait_for("0 pairs");
        t.wait_for("bad line");
        browse_and_quit(&mut t);
    }
}

/// Every C0 control and DEL, every C1 control, CSI, OSC (title, OSC 52
/// clipboard, OSC 8 link), DCS, APC, PM and SOS strings, bidi controls,
/// zero-width characters, combining marks and wide characters.
fn every_control() -> String {
    let mut s = String::from("<");
    for c in (0u32..0x20).chain([0x7f]).chain(0x80..0xa0) {
        s.push(char::from_u32(c).expect("a char"));
        s.push('.');
    }
    s.push_str(concat!(
        "\x1b[2J\x1b[H\x1b[?1049l\x1b[?25h\x1b[?1000h\x1b[?2004l\x1b[41;37m\x1b[0m|",
        "\x1b]0;PWNED\x07\x1b]2;PWNED\x1b\\|",
        "\x1b]52;c;SGVsbG8=\x07|",
        "\x1b]8;;https://example.com\x07link\x1b]8;;\x07|",
        "\x1bPqDCS\x1b\\\x1b_APC\x1b\\\x1b^PM\x1b\\\x1bXSOS\x1b\\|",
        "\u{9b}2J\u{9d}0;PWNED\u{9c}|",
        "\u{202a}\u{202b}\u{202c}\u{202d}\u{202e}\u{2066}\u{2067}\u{2068}\u{2069}\u{200e}\u{200f}\u{61c}|",
        "\u{200b}\u{200c}\u{200d}\u{2060}\u{feff}\u{ad}|",
        "e\u{301}\u{302}\u{303}\u{304}\u{305}|",
        "日本語\u{1f600}\u{ff21}|",
        ">"
    ));
    s
}

/// The state of a terminal that a file's text must not change.
#[derive(Debug, PartialEq)]
struct Modes {
    alternate: bool,
    hide_cursor: bool,
    mouse: vt100::MouseProtocolMode,
    mouse_encoding: vt100::MouseProtocolEncoding,
    bracketed_paste: bool,
    application_cursor: bool,
    application_keypad: bool,
}

fn modes(t: &Tui) -> Modes {
    t.with_screen(|s| Modes {
        alternate: s.alternate_screen(),
        hide_cursor: s.hide_cursor(),
        mouse: s.mouse_protocol_mode(),
        mouse_encoding: s.mouse_protocol_encoding(),
        bracketed_paste: s.bracketed_paste(),
        application_cursor: s.application_cursor(),
        application_keypad: s.application_keypad(),
    })
}

/// The frame's own cells: the first and last column of every row, with
/// their colours (a control that moved the cursor, or a wide character
/// counted wrong, would shift or overwrite them).
fn frame_cells(t: &Tui) -> Vec<(u16, u16, String, vt100::Color, vt100::Color)> {
    t.with_screen(|s| {
        let (rows, cols) = s.size();
        let (rows, cols) = (rows.get(), cols.get());
        let mut out = Vec::new();
        for r in 0..rows {
            for c in [0, cols - 1] {
                let cell = s.cell(r, c).expect("a cell");
                out.push((
                    r,
                    c,
                    cell.contents().to_string(),
                    cell.fgcolor(),
                    cell.bgcolor(),
                ));
            }
        }
        out
    })
}

/// The frame once it is fully drawn: the last cell of the bottom bar has
/// its colour and two reads 100 ms apart agree (a frame read halfway through
/// a redraw would otherwise differ in its last cells).
fn drawn_frame(t: &Tui) -> Vec<(u16, u16, String, vt100::Color, vt100::Color)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = frame_cells(t);
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = frame_cells(t);
        let bar_drawn = now
            .last()
            .is_some_and(|cell| cell.4 != vt100::Color::Default);
        if (bar_drawn && now == last) || Instant::now() >= deadline {
            return now;
        }
        last = now;
    }
}

/// Waits (up to 10 s) until the frame equals `want`, and returns the frame
/// last read: a frame that a control really moved never comes right.
fn frame_when_equal(
    t: &Tui,
    want: &[(u16, u16, String, vt100::Color, vt100::Color)],
) -> Vec<(u16, u16, String, vt100::Color, vt100::Color)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = frame_cells(t);
        if now == want || Instant::now() >= deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The same two pairs, once with `payload` in every string field.
fn two_pairs(dir: &Path, payload: &str) {
    let text = jsonl(&[
        hostile_record("evil-one", payload),
        hostile_record("evil-two", payload),
    ]);
    std::fs::write(dir.join("run.jsonl"), text).unwrap();
}

#[test]
fn every_control_and_sequence_leaves_frame_title_modes_and_colours_alone() {
    // A plain run of the same shape, for the frame to compare with.
    let plain_dir = tempfile::tempdir().unwrap();
    two_pairs(plain_dir.path(), "<plain>");
    let mut plain = open(plain_dir.path(), "run.jsonl");
    plain.wait_for("evil-one<plain>");
    plain.wait_for("2 pairs");
    let want_modes = modes(&plain);
    // Wait for the detail of the first pair in the plain run.
    plain.wait_for("label<plain>");
    let want_frame = drawn_frame(&plain);
    plain.send("q");
    assert_eq!(plain.wait_exit(), 0);

    let dir = tempfile::tempdir().unwrap();
    two_pairs(dir.path(), &every_control());
    let mut t = open(dir.path(), "run.jsonl");
    t.wait_for("evil-one<");
    t.wait_for("2 pairs");
    // The text is shown as escapes: a C0, DEL, C1, ESC, bidi, zero-width.
    for shown in [
        r"evil-one<\x00.\x01.",
        r"\u007f",
        r"\u0085",
        r"\u001b]52;c;",
        r"\u001b]8;;https",
        r"\u009b2J",
        r"\u202e",
        r"\u2066",
        r"\u200b",
        r"\ufeff",
    ] {
        t.wait_for(shown);
    }
    // Combining marks stay on their letter; wide characters are shown.
    t.wait_for("日本語");
    assert_eq!(
        modes(&t),
        want_modes,
        "the file's text changed a terminal mode"
    );
    assert_eq!(
        frame_when_equal(&t, &want_frame),
        want_frame,
        "the frame moved or changed colour"
    );
    assert_title_clean(&t);
    assert!(t.title().is_empty(), "title: {:?}", t.title());
    assert_eq!(t.bells(), 0);
    // Every view of the pair, then quit: the terminal is as it was.
    browse_and_quit(&mut t);
}
