//! Untrusted text (model output, customer data) made inert before it reaches the terminal.
//!
//! [`pieces`] splits a string into safe [`Piece::Text`] and visible [`Piece::Escape`]s, so the
//! UI can style escapes apart from literal text (a literal `\r` prints the same characters).
//! Escaped: C0 (`\r`, `\x1b`, `\xNN`; tab expands to spaces; `\n` only in the `_line` forms),
//! DEL, C1, bidi controls, zero-width / invisible / format characters (Default_Ignorable and
//! Cf, so emoji ZWJ sequences show their joiners), line and paragraph separators, private
//! use and noncharacters (`\uXXXX`, `\u{XXXXX}` above U+FFFF), a variation selector that is not
//! the first after its base, and any zero-width character with no base to attach to.
//! [`truncate_cols`] and [`width`] measure terminal columns.

use std::fmt::Write as _;

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// A run of display-safe text or a visible stand-in for an unsafe character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Characters that are safe to print as they are.
    Text(String),
    /// The visible stand-in (e.g. `\x1b`) for one unsafe character.
    Escape(String),
}

/// Split `s` into safe text and visible escapes. Tabs expand to spaces up to the next multiple of 4 columns (counted from the start of `s`).
pub fn pieces(s: &str) -> Vec<Piece> {
    // Newlines stay text so callers can split multi-line values; the tab column restarts
    // after each one because that is where the caller's line starts.
    build(s, false)
}

/// Like [`pieces`] but `\n` becomes a visible `\n` escape, for one-line cells.
pub fn pieces_line(s: &str) -> Vec<Piece> {
    build(s, true)
}

/// `pieces` flattened into one String (escapes included as their visible text).
pub fn inert(s: &str) -> String {
    flatten(pieces(s))
}

/// Like `inert` but also turns `\n` into a visible `\n`, for one-line cells.
pub fn inert_line(s: &str) -> String {
    flatten(pieces_line(s))
}

fn flatten(ps: Vec<Piece>) -> String {
    let mut out = String::new();
    for p in ps {
        match p {
            Piece::Text(t) | Piece::Escape(t) => out.push_str(&t),
        }
    }
    out
}

/// "1 pair", "3 pairs": a count with the word that agrees with it.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `s` cut or padded with spaces to exactly `w` columns.
pub fn fit(s: &str, w: usize) -> String {
    let cut = truncate_cols(s, w);
    format!("{cut}{}", " ".repeat(w.saturating_sub(width(&cut))))
}

/// Truncate to at most `max` terminal columns (unicode-width), appending `…` when cut; never splits a char; wide chars that would straddle the limit are dropped.
pub fn truncate_cols(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let budget = max - 1; // one column for the ellipsis
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > budget {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    // String width is not always the sum of char widths (e.g. an emoji with VS16 is 2
    // wide, its parts 1 + 0), so trim until the whole string really fits.
    while width(&out) > max {
        out.pop(); // the ellipsis
        if out.pop().is_none() {
            return String::new();
        }
        out.push('…');
    }
    out
}

/// Display width in columns.
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// Whether `c` is one [`pieces`] always shows as an escape: a control, a bidi or
/// format character, a separator, private use or a noncharacter. Machine formats
/// (JSON) write such a character as an escape so that printing the file is safe.
pub fn is_unsafe(c: char) -> bool {
    matches!(classify(c), Class::Escape)
}

/// Tabs stop at multiples of this many columns.
const TAB_STOP: usize = 4;

/// What to do with one character.
enum Class {
    /// Always shown as an escape.
    Escape,
    /// A variation selector: fine once directly after a base, an escape otherwise (a run
    /// of them can hide data in what looks like one emoji).
    VariationSelector,
    /// Ordinary text.
    Plain,
}

fn classify(c: char) -> Class {
    let u = u32::from(c);
    let escape = matches!(u,
        // C0 (tab and newline are handled before classification), DEL, C1.
        0x00..=0x1f | 0x7f..=0x9f
        // Soft hyphen, combining grapheme joiner, Arabic letter mark.
        | 0xad | 0x34f | 0x61c
        // Arabic / Syriac format characters (Cf).
        | 0x600..=0x605 | 0x6dd | 0x70f | 0x890..=0x891 | 0x8e2
        // Hangul fillers: render as blank space that is not a space.
        | 0x115f..=0x1160 | 0x3164 | 0xffa0
        // Khmer inherent vowels (invisible), Mongolian vowel separator.
        | 0x17b4..=0x17b5 | 0x180e
        // Zero-width space / joiners, LRM / RLM, line / paragraph separators,
        // bidi embeddings and overrides.
        | 0x200b..=0x200f | 0x2028..=0x202e
        // Word joiner, invisible operators, bidi isolates, deprecated format characters.
        | 0x2060..=0x206f
        // Private use area.
        | 0xe000..=0xf8ff
        // Noncharacters, BOM / zero-width no-break space, specials and interlinear
        // annotation controls.
        | 0xfdd0..=0xfdef | 0xfeff | 0xfff0..=0xfffb
        // Format characters in the supplementary planes.
        | 0x110bd | 0x110cd | 0x13430..=0x1343f | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a
        // Tag characters (invisible "ASCII smuggling") and the rest of that block.
        | 0xe0000..=0xe00ff | 0xe01f0..=0xe0fff
        // Supplementary private use areas.
        | 0xf0000..=0x10ffff
    ) || (u & 0xfffe) == 0xfffe; // U+xFFFE / U+xFFFF noncharacters in every plane
    if escape {
        Class::Escape
    } else if matches!(u, 0x180b..=0x180d | 0x180f | 0xfe00..=0xfe0f | 0xe0100..=0xe01ef) {
        Class::VariationSelector
    } else {
        Class::Plain
    }
}

/// The visible stand-in for an unsafe character.
fn escape_text(c: char) -> String {
    let u = u32::from(c);
    match c {
        '\r' => "\\r".to_string(),
        '\n' => "\\n".to_string(),
        '\u{0}'..='\u{1f}' | '\u{7f}' => format!("\\x{u:02x}"),
        _ if u <= 0xffff => format!("\\u{u:04x}"),
        // Braces keep a 5- or 6-digit escape unambiguous when a hex digit follows.
        _ => format!("\\u{{{u:x}}}"),
    }
}

/// Accumulates pieces, merging adjacent text, and tracks the state the rules depend on.
struct Builder {
    out: Vec<Piece>,
    /// Display column on the current line, for tab stops.
    col: usize,
    /// Whether the last thing emitted is visible text a zero-width character can attach
    /// to (not the start, a newline or an escape).
    has_base: bool,
    /// Whether the last character kept as text was a variation selector.
    after_selector: bool,
}

impl Builder {
    fn text(&mut self, t: &str, cols: usize) {
        match self.out.last_mut() {
            Some(Piece::Text(prev)) => prev.push_str(t),
            _ => self.out.push(Piece::Text(t.to_string())),
        }
        self.col += cols;
    }

    fn char(&mut self, c: char) {
        let mut buf = [0u8; 4];
        self.text(c.encode_utf8(&mut buf), c.width().unwrap_or(0));
    }

    fn escape(&mut self, c: char) {
        let e = escape_text(c);
        self.col += e.len(); // escapes are ASCII: one column per byte
        self.out.push(Piece::Escape(e));
        self.has_base = false;
        self.after_selector = false;
    }
}

fn build(s: &str, escape_newline: bool) -> Vec<Piece> {
    let mut b = Builder {
        out: Vec::new(),
        col: 0,
        has_base: false,
        after_selector: false,
    };
    for c in s.chars() {
        match c {
            '\t' => {
                let n = TAB_STOP - b.col % TAB_STOP;
                let mut spaces = String::new();
                let _ = write!(spaces, "{:n$}", "");
                b.text(&spaces, n);
                b.has_base = true;
                b.after_selector = false;
            }
            '\n' if !escape_newline => {
                b.text("\n", 0);
                b.col = 0;
                b.has_base = false;
                b.after_selector = false;
            }
            _ => match classify(c) {
                Class::Escape => b.escape(c),
                Class::VariationSelector => {
                    if b.has_base && !b.after_selector {
                        b.char(c);
                        b.after_selector = true;
                    } else {
                        b.escape(c);
                    }
                }
                Class::Plain => {
                    // A zero-width character (combining mark...) with nothing of ours to
                    // attach to would merge into whatever the UI drew before it.
                    let zero_width = c.width().unwrap_or(0) == 0;
                    if zero_width && !b.has_base {
                        b.escape(c);
                    } else {
                        b.char(c);
                        b.has_base = true;
                        b.after_selector = false;
                    }
                }
            },
        }
    }
    b.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn is_forbidden(c: char, allow_newline: bool) -> bool {
        let u = u32::from(c);
        (c == '\n' && !allow_newline)
            || c == '\t'
            || (u <= 0x1f && c != '\n')
            || (0x7f..=0x9f).contains(&u)
            || matches!(u, 0x61c | 0x200e | 0x200f | 0x202a..=0x202e | 0x2066..=0x2069)
            || matches!(u, 0x200b..=0x200d | 0x2060..=0x2064 | 0xfeff | 0xad | 0x180e)
            || matches!(u, 0xe0000..=0xe007f | 0x2028 | 0x2029)
    }

    fn esc(s: &str) -> Piece {
        Piece::Escape(s.to_string())
    }

    fn txt(s: &str) -> Piece {
        Piece::Text(s.to_string())
    }

    #[test]
    fn every_c0_del_c1_is_escaped() {
        for u in (0u32..=0x1f).chain(0x7f..=0x9f) {
            let Some(c) = char::from_u32(u) else { continue };
            if c == '\t' {
                continue;
            }
            let s = format!("a{c}b");
            let ps = pieces_line(&s);
            assert_eq!(ps.len(), 3, "U+{u:04X}: {ps:?}");
            let Piece::Escape(e) = &ps[1] else {
                panic!("U+{u:04X} not escaped: {ps:?}")
            };
            let expected = match u {
                0x0d => "\\r".to_string(),
                0x0a => "\\n".to_string(),
                0x00..=0x1f | 0x7f => format!("\\x{u:02x}"),
                _ => format!("\\u{u:04x}"),
            };
            assert_eq!(*e, expected);
            if c != '\n' {
                assert_eq!(pieces(&s), ps);
            }
        }
        assert_eq!(inert("\u{1b}"), "\\x1b");
        assert_eq!(
            inert("\u{0}\u{7}\u{7f}\u{85}\u{9b}"),
            "\\x00\\x07\\x7f\\u0085\\u009b"
        );
    }

    #[test]
    fn bidi_and_zero_width_are_escaped() {
        let bidi = [
            0x61c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068,
            0x2069,
        ];
        let zw = [
            0x200b, 0x200c, 0x200d, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xfeff, 0xad, 0x180e,
        ];
        for u in bidi.into_iter().chain(zw) {
            let Some(c) = char::from_u32(u) else { continue };
            let s = format!("x{c}y");
            assert_eq!(
                pieces(&s),
                vec![txt("x"), esc(&format!("\\u{u:04x}")), txt("y")],
                "U+{u:04X}"
            );
        }
        assert_eq!(inert("abc\u{202e}def"), "abc\\u202edef");
    }

    #[test]
    fn other_invisibles_are_escaped() {
        // Tag characters spelling "hi", private use, line separator, noncharacters.
        assert_eq!(inert("a\u{e0068}\u{e0069}"), "a\\u{e0068}\\u{e0069}");
        assert_eq!(
            inert("\u{e000}\u{2028}\u{fffe}\u{10ffff}"),
            "\\ue000\\u2028\\ufffe\\u{10ffff}"
        );
        assert_eq!(inert("\u{3164}"), "\\u3164");
    }

    #[test]
    fn carriage_return_is_visible() {
        let shown = inert("rejected\rAPPROVED");
        assert_eq!(shown, "rejected\\rAPPROVED");
        assert_ne!(shown, inert("rejectedAPPROVED"));
        assert_eq!(
            pieces("rejected\rAPPROVED"),
            vec![txt("rejected"), esc("\\r"), txt("APPROVED")]
        );
    }

    #[test]
    fn terminal_sequences_become_literal_text() {
        assert_eq!(inert("\u{1b}[2J"), "\\x1b[2J");
        assert_eq!(
            inert("\u{1b}]52;c;SGVsbG8=\u{7}"),
            "\\x1b]52;c;SGVsbG8=\\x07"
        );
        assert_eq!(
            pieces("\u{1b}]52;c;SGVsbG8=\u{7}"),
            vec![esc("\\x1b"), txt("]52;c;SGVsbG8="), esc("\\x07")]
        );
        // Consecutive escapes stay separate pieces.
        assert_eq!(pieces("\r\r"), vec![esc("\\r"), esc("\\r")]);
    }

    #[test]
    fn newlines() {
        assert_eq!(inert("a\nb"), "a\nb");
        assert_eq!(inert_line("a\nb"), "a\\nb");
        assert_eq!(pieces_line("a\nb"), vec![txt("a"), esc("\\n"), txt("b")]);
        assert_eq!(inert("a\r\nb"), "a\\r\nb");
    }

    #[test]
    fn tabs_expand_to_stops_of_four() {
        assert_eq!(inert("\tx"), "    x");
        assert_eq!(inert("ab\tx"), "ab  x");
        assert_eq!(inert("abcd\tx"), "abcd    x");
        assert_eq!(inert("a\t\tx"), "a       x");
        // Wide characters and escapes count by their columns.
        assert_eq!(inert("日\tx"), "日  x");
        assert_eq!(inert("\r\tx"), "\\r  x");
        // Each line restarts the column; one-line cells keep counting past `\n`.
        assert_eq!(inert("abc\n\tx"), "abc\n    x");
        assert_eq!(inert_line("abc\n\tx"), "abc\\n   x");
        assert_eq!(pieces("a\tb"), vec![txt("a   b")]);
    }

    #[test]
    fn ordinary_text_is_untouched() {
        for s in [
            "hello",
            "日本語",
            "😀 emoji",
            "é (precomposed)",
            "e\u{301} (combining)",
            "👍🏽",
            "❤\u{fe0f}",
            "נקודה",
            "a\u{a0}b",
        ] {
            assert_eq!(pieces(s), vec![txt(s)], "{s:?}");
        }
        assert!(pieces("").is_empty());
    }

    #[test]
    fn baseless_zero_width_is_escaped() {
        assert_eq!(inert("\u{301}e"), "\\u0301e");
        assert_eq!(inert("a\n\u{301}"), "a\n\\u0301");
        assert_eq!(inert("\r\u{301}"), "\\r\\u0301");
        assert_eq!(inert("e\u{301}\u{302}"), "e\u{301}\u{302}");
    }

    #[test]
    fn variation_selector_runs_are_escaped() {
        assert_eq!(inert("❤\u{fe0f}"), "❤\u{fe0f}");
        assert_eq!(inert("\u{fe0f}"), "\\ufe0f");
        assert_eq!(inert("a\u{fe0f}\u{e0100}"), "a\u{fe0f}\\u{e0100}");
    }

    #[test]
    fn widths_and_truncation() {
        assert_eq!(width("日本語"), 6);
        assert_eq!(width("abc"), 3);
        assert_eq!(truncate_cols("日本語", 4), "日…");
        assert_eq!(truncate_cols("日本語", 5), "日本…");
        assert_eq!(truncate_cols("日本語", 6), "日本語");
        assert_eq!(truncate_cols("abcdef", 4), "abc…");
        assert_eq!(truncate_cols("abc", 3), "abc");
        assert_eq!(truncate_cols("abc", 1), "…");
        assert_eq!(truncate_cols("abc", 0), "");
        assert_eq!(truncate_cols("日本", 1), "…");
        assert_eq!(truncate_cols("日本", 2), "…");
        assert_eq!(truncate_cols("e\u{301}xyz", 2), "e\u{301}…");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn prop_no_raw_controls_survive(s in prop_oneof![
            any::<String>(),
            "[a\t\n\r\u{0}-\u{1f}\u{7f}-\u{9f}\u{61c}\u{200b}-\u{200f}\u{202a}-\u{202e}\u{2060}-\u{2069}\u{feff}\u{ad}\u{180e}\u{301}\u{fe0f}\u{e0041}日]{0,16}",
        ]) {
            let out = inert(&s);
            prop_assert!(!out.chars().any(|c| is_forbidden(c, true)), "{:?}", out);
            let line = inert_line(&s);
            prop_assert!(!line.chars().any(|c| is_forbidden(c, false)), "{:?}", line);

            // Pieces are well formed: no empty piece, no two text runs in a row, every
            // escape is ASCII, and flattening gives `inert`.
            let ps = pieces(&s);
            for w in ps.windows(2) {
                prop_assert!(!matches!(w, [Piece::Text(_), Piece::Text(_)]));
            }
            for p in &ps {
                match p {
                    Piece::Text(t) => prop_assert!(!t.is_empty()),
                    Piece::Escape(e) => prop_assert!(e.starts_with('\\') && e.is_ascii()),
                }
            }
            prop_assert_eq!(flatten(ps), out);
        }

        #[test]
        fn prop_truncate_fits(s in any::<String>(), max in 0usize..12) {
            let t = truncate_cols(&s, max);
            prop_assert!(width(&t) <= max);
            if width(&s) <= max {
                prop_assert_eq!(&t, &s);
            } else if max > 0 {
                prop_assert!(t.ends_with('…'));
                prop_assert!(s.starts_with(t.trim_end_matches('…')));
            }
        }
    }
}
