//! Tests of the scanner's strings and numbers.

use super::*;

#[test]
fn strings_end_where_serde_json_ends_them() {
    for (text, ok) in [
        (r#""plain""#, true),
        (r#""a longer string that spans chunks of eight""#, true),
        (r#""q\"uote\\ \/ \b\f\n\r\t""#, true),
        (r#""\u00e9\ud83d\ude00""#, true),
        ("\"caf\u{e9} \u{1F600}\"", true),
        (r#""\ud800""#, false),
        (r#""\ude00""#, false),
        (r#""\u12G4""#, false),
        (r#""\a""#, false),
        ("\"tab\there\"", false),
        ("\"nul\u{0}\"", false),
        ("\"del\u{7f}\"", true),
        (r#""open"#, false),
    ] {
        let serde = serde_json::from_str::<String>(text).is_ok();
        assert!(serde || !ok, "{text}");
        let end = string_end(text.as_bytes(), 0);
        assert_eq!(end.is_some(), ok, "{text}");
        if let Some((_, end)) = end {
            assert_eq!(end, text.len(), "{text}");
        }
    }
}

proptest::proptest! {
    #[test]
    fn short_decimals_are_the_nearest_f64(
        x in proptest::prelude::any::<f64>(),
        digits in 0usize..17,
        int in proptest::prelude::any::<u64>(),
    ) {
        for token in [
            format!("{x}"),
            format!("{x:.digits$}"),
            format!("{}", int % 1_000_000_000_000_000),
            format!("-0.{:0>digits$}", int % 1_000_000),
        ] {
            if let Ok(want) = serde_json::from_str::<f64>(&token) {
                let got = number_value(token.as_bytes());
                if want.abs() <= MAX_MAGNITUDE {
                    proptest::prop_assert_eq!(got.map(f64::to_bits), Some(want.to_bits()), "{}", token);
                }
            }
        }
    }
}

/// Every special byte at every offset, across the 8-byte steps.
#[test]
fn strings_end_at_every_offset() {
    for len in 0..48 {
        for at in 0..len {
            for (special, ok) in [
                ("\"", false),
                ("\\n", true),
                ("\\u00e9", true),
                ("\u{1}", false),
                ("\u{1f}", false),
                ("\u{7f}", true),
                ("\u{e9}", true),
            ] {
                let body: String = (0..len)
                    .map(|k| {
                        if k == at {
                            special.to_string()
                        } else {
                            "a".into()
                        }
                    })
                    .collect();
                let text = format!("\"{body}\"");
                let serde = serde_json::from_str::<String>(&text).is_ok();
                let end = string_end(text.as_bytes(), 0);
                if ok {
                    assert!(serde, "{text:?}");
                    assert_eq!(end.map(|e| e.1), Some(text.len()), "{text:?}");
                } else if special == "\"" {
                    // The string ends at the inner quote.
                    assert_eq!(end.map(|e| e.1), Some(at + 2), "{text:?}");
                } else {
                    assert!(!serde && end.is_none(), "{text:?}");
                }
            }
        }
    }
}
