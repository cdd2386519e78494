//! The config and keymap parsers: any text is read as a config file and as
//! a keymap file; each gives a result or an error naming the file, never a
//! panic. A config's `[keys.*]` overrides are applied to the default keymap,
//! and every key sequence the keymap prints parses back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use triage::core::config;
use triage::tui::keymap::{Keymap, parse_seq, seq_to_string};

fuzz_target!(|text: &str| {
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
    match Keymap::from_toml(text, "fuzz.toml") {
        Ok(km) => {
            for (_, seq, _) in km.bindings() {
                let shown = seq_to_string(seq);
                assert_eq!(parse_seq(&shown).as_ref(), Some(seq), "{shown:?}");
            }
        }
        Err(e) => assert!(e.0.contains("fuzz.toml"), "{e}"),
    }
    // Each line on its own as a key sequence.
    for line in text.lines() {
        if let Some(seq) = parse_seq(line) {
            let shown = seq_to_string(&seq);
            assert_eq!(
                parse_seq(&shown),
                Some(seq),
                "{line:?} printed as {shown:?}"
            );
        }
    }
});
