//! Broken config files are refused with an exact message naming the file
//! and line, exit code 2, and no terminal set-up; a valid one is accepted.

use std::process::Command;

fn keys_with(config: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_triage"))
        .args(["keys", "--config", config])
        .output()
        .expect("run triage");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const CASES: &[(&str, &str)] = &[
    (
        "bad-key.toml",
        "triage: tests/fixtures/config/bad-key.toml:2: cannot parse key \"ctrl-hyper-j\" for `scroll_down` (try \"j\", \"ctrl-r\", \"pgdn\", \"g g\")",
    ),
    (
        "bound-twice.toml",
        "triage: tests/fixtures/config/bound-twice.toml:3: key \"j\" is bound twice in [keys.list]: to `next_pair` and to `prev_pair`",
    ),
    (
        "broken-toml.toml",
        "triage: tests/fixtures/config/broken-toml.toml:2: unclosed table, expected `]`",
    ),
    (
        "category-key-clash.toml",
        "triage: tests/fixtures/config/category-key-clash.toml:4: category key `j` of `prompt-leak` is also bound to `next_pair` in [list]; choose another key",
    ),
    (
        "shadows-global.toml",
        "triage: tests/fixtures/config/shadows-global.toml:2: key \"n\" is bound in [list] to `next_pair` and in [global] to `edit_note`; give one of them another key",
    ),
    (
        "unknown-action.toml",
        "triage: tests/fixtures/config/unknown-action.toml:5: unknown action `nxt_pair` in [keys.list]; `triage keys` lists the actions",
    ),
    (
        "unknown-keymap.toml",
        "triage: tests/fixtures/config/unknown-keymap.toml:1: unknown keymap `vi`; the presets are default, vim and emacs, or give a path to a keymap file",
    ),
    (
        "unknown-setting.toml",
        "triage: tests/fixtures/config/unknown-setting.toml:3: unknown field `colour`, expected one of `reviewer`, `theme`, `keymap`, `keys`, `mouse`, `max_line_bytes`, `taxonomy`",
    ),
];

#[test]
fn invalid_configs_are_refused_with_their_exact_message() {
    for (file, expected) in CASES {
        let path = format!("tests/fixtures/config/{file}");
        let (code, stdout, stderr) = keys_with(&path);
        assert_eq!(code, 2, "{file}: exit code; stderr: {stderr}");
        assert_eq!(stderr.trim_end(), *expected, "{file}");
        assert!(stdout.is_empty(), "{file}: nothing on stdout");
    }
}

#[test]
fn invalid_config_stops_the_viewer_before_the_terminal() {
    let out = Command::new(env!("CARGO_BIN_EXE_triage"))
        .args([
            "--config",
            "tests/fixtures/config/unknown-setting.toml",
            "sample-runs/support-urgency.jsonl",
            "--annotations",
            "/dev/null/never",
        ])
        .output()
        .expect("run triage");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !out.stdout.windows(2).any(|w| w == b"\x1b["),
        "no escape sequences"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown field `colour`"), "{err}");
}

#[test]
fn a_valid_config_sets_keymap_overrides_and_taxonomy() {
    let (code, stdout, stderr) = keys_with("tests/fixtures/config/valid.toml");
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("keymap: emacs"), "{stdout}");
    assert!(stdout.contains("ctrl-j           next_pair"), "{stdout}");
    assert!(stdout.contains("8                prompt-leak"), "{stdout}");
}

#[test]
fn every_preset_prints() {
    for preset in ["default", "vim", "emacs"] {
        let out = Command::new(env!("CARGO_BIN_EXE_triage"))
            .args([
                "keys",
                "--keymap",
                preset,
                "--config",
                "tests/fixtures/config/empty.toml",
            ])
            .output()
            .expect("run triage");
        assert_eq!(out.status.code(), Some(0), "{preset}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.starts_with(&format!("keymap: {preset}")), "{text}");
        assert!(
            text.contains("[note]") && text.contains("[confirm]"),
            "{preset}"
        );
    }
}

/// Inputs the `config` fuzz target found (`fuzz/`), checked the way it checks
/// them: config and keymap parsing never panic, errors name the file, and
/// every key sequence prints and parses back to itself.
#[test]
fn fuzz_finds_stay_fixed() {
    use triage::core::config;
    use triage::tui::keymap::{Keymap, parse_seq, seq_to_string};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz/config");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("the fuzz fixtures") {
        let path = entry.expect("an entry").path();
        let bytes = std::fs::read(&path).expect("read");
        // As the fuzz target sees its input: the longest valid UTF-8 prefix.
        let valid = match std::str::from_utf8(&bytes) {
            Ok(_) => bytes.len(),
            Err(e) => e.valid_up_to(),
        };
        let text = std::str::from_utf8(&bytes[..valid]).expect("a valid prefix");
        n += 1;
        match config::parse(text, "fuzz.toml") {
            Ok(cfg) => {
                if let Some(keys) = &cfg.keys {
                    let mut km = Keymap::default_keymap();
                    if let Err(e) = km.apply_overrides(keys, text, "fuzz.toml") {
                        assert!(e.0.contains("fuzz.toml"), "{e}");
                    }
                }
            }
            Err(e) => assert!(e.to_string().contains("fuzz.toml"), "{e}"),
        }
        if let Ok(km) = Keymap::from_toml(text, "fuzz.toml") {
            for (_, seq, _) in km.bindings() {
                let shown = seq_to_string(seq);
                assert_eq!(
                    parse_seq(&shown).as_ref(),
                    Some(seq),
                    "{}: {shown:?}",
                    path.display()
                );
            }
        }
        for line in text.lines() {
            if let Some(seq) = parse_seq(line) {
                let shown = seq_to_string(&seq);
                assert_eq!(
                    parse_seq(&shown),
                    Some(seq),
                    "{}: {line:?} printed as {shown:?}",
                    path.display()
                );
            }
        }
    }
    assert!(n >= 1, "no fixtures in {}", dir.display());
}

/// `triage config` alone says where the file is; `config init` writes the
/// commented example there once, and never over an existing file.
#[test]
fn config_alone_prints_the_path_and_init_writes_an_example_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sub").join("config.toml");
    let path_s = path.to_str().expect("path");
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_triage"))
            .args(args)
            .args(["--config", path_s])
            .output()
            .expect("run triage");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, _) = run(&["config"]);
    assert_eq!(code, Some(0));
    assert_eq!(out.trim(), format!("{path_s} (not created yet)"));
    let (code, out, err) = run(&["config", "init"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("wrote"), "{out}");
    let written = std::fs::read_to_string(&path).expect("the example");
    assert!(written.contains("# reviewer = \"ana\""), "{written}");
    // The example changes nothing, so every command still runs with it.
    assert_eq!(keys_with(path_s).0, 0);
    std::fs::write(&path, "reviewer = \"mine\"\n").expect("edit");
    let (code, _, err) = run(&["config", "init"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("exists"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).expect("kept"),
        "reviewer = \"mine\"\n"
    );
}
