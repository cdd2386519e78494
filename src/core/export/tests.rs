use super::*;

#[test]
fn format_names_round_trip() {
    for f in Format::ALL {
        assert_eq!(f.name().parse::<Format>(), Ok(f));
    }
    assert_eq!("MD".parse::<Format>(), Ok(Format::Markdown));
    assert!(
        "xml"
            .parse::<Format>()
            .unwrap_err()
            .to_string()
            .contains("markdown, csv")
    );
    assert_eq!(
        "x\u{1b}ml".parse::<Format>().unwrap_err().to_string(),
        format!(
            "unknown format `{}`; use one of: markdown, csv, json, fixtures",
            text::inert_line("x\u{1b}ml")
        )
    );
}

#[test]
fn markdown_escaping_defuses_every_construct() {
    let e = md_escape("a|b `c` *d* [x](http://e) <img src=x> &amp; _u_ snake_case ~s~ \\");
    assert_eq!(
        e,
        "a\\|b \\`c\\` \\*d\\* [x\\](http://e) \\<img src=x\\> \\&amp; \\_u\\_ snake_case \\~s\\~ \\\\"
    );
    assert_eq!(
        md_escape("[0.2, 0.5] and [a][b] and [c]"),
        "[0.2, 0.5] and [a\\][b] and [c\\]"
    );
}

#[test]
fn capped_is_inert_and_short() {
    assert_eq!(capped("a\u{1b}[31mb\nc", 120), "a\\x1b[31mb\\nc");
    let long = "x".repeat(200);
    let c = capped(&long, 120);
    assert_eq!(c.chars().count(), 120);
    assert!(c.ends_with('…'));
}

#[test]
fn code_spans_survive_backticks_and_pipes() {
    assert_eq!(code("plain", false), "`plain`");
    assert_eq!(code("a`b", false), "``a`b``");
    assert_eq!(code("`x", false), "`` `x ``");
    assert_eq!(code("a|b", true), "a\\|b");
    assert_eq!(code("a|b", false), "`a|b`");
    assert_eq!(code("", false), "*(empty)*");
}

#[test]
fn csv_cells_are_not_formulas() {
    assert_eq!(csv_text("=HYPERLINK(1)"), "'=HYPERLINK(1)");
    assert_eq!(csv_text("ok\tthen\nmore"), "ok  then\\nmore");
}

#[test]
fn rounding_and_signs() {
    assert_eq!(round6(Some(0.52 - 0.91)), Some(-0.39));
    assert_eq!(round6(Some(-1e-9)), Some(0.0));
    assert_eq!(round6(Some(f64::NAN)), None);
    assert_eq!(signed3(-0.0001), "+0.000");
    assert_eq!(signed3(-0.39), "-0.390");
    assert_eq!(
        lower_first("Threshold-boundary sensitivity"),
        "threshold-boundary sensitivity"
    );
    assert_eq!(lower_first("SSO bug"), "SSO bug");
}

#[test]
fn wrap_fits() {
    let w = wrap("one two three four five six", 9);
    assert_eq!(w, vec!["one two", "three", "four five", "six"]);
}
