//! JSON written so that printing it is safe: every character that
//! `core::text` shows as an escape on screen (DEL, C1 controls, bidi
//! overrides and isolates, zero-width and other format characters, line and
//! paragraph separators, private use, noncharacters) is written as a JSON
//! `\uXXXX` escape (a surrogate pair above U+FFFF). `serde_json` already
//! escapes C0 controls. A JSON reader gets back exactly the recorded string;
//! `cat` or `less` on the file shows the escape instead of obeying it.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};

use crate::core::text;

/// Write the unescaped part of a JSON string, escaping the unsafe characters.
fn fragment<W: ?Sized + Write>(w: &mut W, s: &str) -> io::Result<()> {
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if text::is_unsafe(c) {
            w.write_all(&s.as_bytes()[start..i])?;
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                write!(w, "\\u{u:04x}")?;
            }
            start = i + c.len_utf8();
        }
    }
    w.write_all(&s.as_bytes()[start..])
}

/// One JSON line per value, like `serde_json::to_writer`.
struct Compact;

impl Formatter for Compact {
    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, s: &str) -> io::Result<()> {
        fragment(w, s)
    }
}

/// Two-space indentation, like `serde_json::to_writer_pretty`.
struct Pretty(PrettyFormatter<'static>);

impl Formatter for Pretty {
    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, s: &str) -> io::Result<()> {
        fragment(w, s)
    }
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// `v` as one line of JSON with unsafe characters escaped.
pub fn to_writer<W: Write, T: Serialize + ?Sized>(w: W, v: &T) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(w, Compact);
    v.serialize(&mut ser).map_err(io::Error::other)
}

/// `v` pretty-printed with unsafe characters escaped.
pub fn to_writer_pretty<W: Write, T: Serialize + ?Sized>(w: W, v: &T) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(w, Pretty(PrettyFormatter::new()));
    v.serialize(&mut ser).map_err(io::Error::other)
}

/// `v` pretty-printed into a string, with unsafe characters escaped.
pub fn to_string_pretty<T: Serialize + ?Sized>(v: &T) -> io::Result<String> {
    let mut buf = Vec::new();
    to_writer_pretty(&mut buf, v)?;
    // Only ASCII escapes were added to serde_json's UTF-8 output.
    String::from_utf8(buf).map_err(io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn unsafe_characters_are_escaped_and_read_back_exactly() {
        let s = "a\u{9b}2J b\u{202e}c\u{85}d\u{200b}e\u{2028}f\u{7f}g\u{1b}h\u{e0041}i é 😀 ok";
        let v = json!({ "note": s, "list": [s] });
        for out in [to_string_pretty(&v).unwrap(), {
            let mut b = Vec::new();
            to_writer(&mut b, &v).unwrap();
            String::from_utf8(b).unwrap()
        }] {
            assert!(
                out.chars().all(|c| c == '\n' || !text::is_unsafe(c)),
                "{out:?}"
            );
            assert!(out.contains(r"\u009b2J"), "{out}");
            assert!(out.contains(r"\u202e"), "{out}");
            assert!(out.contains(r"\u0085"), "{out}");
            assert!(out.contains(r"\udb40\udc41"), "{out}");
            assert!(out.contains("é 😀 ok"), "plain text stays as it is: {out}");
            let back: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(back, v);
        }
    }

    #[test]
    fn pretty_layout_matches_serde_json() {
        let v = json!({ "a": [1, {"b": null}], "c": "plain", "e": [] , "f": {} });
        assert_eq!(
            to_string_pretty(&v).unwrap(),
            serde_json::to_string_pretty(&v).unwrap()
        );
    }
}
