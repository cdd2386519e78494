//! The query parser: any text parses or gives an error at a position inside
//! it, and a parsed query printed and parsed again is the same query.
#![no_main]

use libfuzzer_sys::fuzz_target;
use triage::core::query::parse;

fuzz_target!(|text: &str| {
    match parse(text) {
        Ok(q) => {
            let shown = q.to_string();
            let again = parse(&shown)
                .unwrap_or_else(|e| panic!("{text:?} printed as {shown:?}, which fails: {e}"));
            assert_eq!(again, q, "{text:?} printed as {shown:?}");
            assert_eq!(again.to_string(), shown, "printing is not stable");
        }
        Err(e) => assert!(
            e.pos <= text.chars().count(),
            "error position {} past the end of {text:?}",
            e.pos
        ),
    }
});
