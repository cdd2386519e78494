//! Reading a foreign file without holding it: its records (lines, or the
//! elements of one array of a JSON document) are visited one at a time as
//! the file is read, and whatever a converter must keep until pairing is
//! done is set aside in a temporary spill file, to be read back only when
//! its record is written.
//!
//! - [`each_line`] reads JSON lines one at a time.
//! - [`each_element`] walks one array of a JSON document (promptfoo's
//!   `results.results`, Inspect's `samples`, CheckList's `tests`) as a
//!   stream, and keeps the document's other members.
//! - [`Spill`] holds set-aside rows on disk; a row keeps where its bytes are.
//! - [`Counted`] counts the bytes read, for a progress bar; [`Text`] checks
//!   that they are UTF-8 as they go by.
//!
//! Memory is then bounded by what pairing needs of each row (ids, groups,
//! small indexes), not by the file.

use std::cell::RefCell;
use std::fmt;
use std::io::{BufWriter, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::ConvertError;

/// Where a set-aside row's JSON is in the [`Spill`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Spilled {
    offset: u64,
    len: u32,
}

/// A temporary file of rows set aside during a conversion.
pub struct Spill {
    file: BufWriter<std::fs::File>,
    at: u64,
    /// The last row read back.
    buf: Vec<u8>,
}

impl Spill {
    pub fn new() -> Result<Spill, ConvertError> {
        let file = tempfile::tempfile().map_err(ConvertError::Write)?;
        Ok(Spill {
            file: BufWriter::with_capacity(1 << 20, file),
            at: 0,
            buf: Vec::new(),
        })
    }

    /// Set a row aside; its [`Spilled`] reads it back.
    pub fn put<T: serde::Serialize>(&mut self, v: &T) -> Result<Spilled, ConvertError> {
        let bytes = serde_json::to_vec(v).map_err(ConvertError::Serialize)?;
        let len = u32::try_from(bytes.len()).map_err(|_| "a row of 4 GiB or more")?;
        self.file.write_all(&bytes).map_err(ConvertError::Write)?;
        let s = Spilled {
            offset: self.at,
            len,
        };
        self.at += u64::from(len);
        Ok(s)
    }

    /// Read a row back (after the last [`Spill::put`], or between them).
    pub fn get<T: serde::de::DeserializeOwned>(&mut self, s: Spilled) -> Result<T, ConvertError> {
        use std::os::unix::fs::FileExt;
        self.file.flush().map_err(ConvertError::Write)?;
        self.buf.resize(s.len as usize, 0);
        let buf = &mut self.buf;
        self.file
            .get_ref()
            .read_exact_at(buf, s.offset)
            .map_err(ConvertError::Write)?;
        serde_json::from_slice(buf).map_err(ConvertError::Serialize)
    }
}

/// A reader that adds the bytes it reads to a shared count.
pub struct Counted<R> {
    inner: R,
    count: Option<Arc<AtomicU64>>,
}

impl<R> Counted<R> {
    pub fn new(inner: R, count: Option<Arc<AtomicU64>>) -> Counted<R> {
        Counted { inner, count }
    }
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(c) = &self.count {
            c.fetch_add(n as u64, Ordering::Relaxed);
        }
        Ok(n)
    }
}

/// A fault met below the parser (bytes that are not UTF-8, gzip data that
/// does not decompress), kept to be told instead of the parse error it caused.
pub type Fault = std::rc::Rc<RefCell<Option<ConvertError>>>;

/// A reader that passes on only UTF-8 text, without a leading byte-order
/// mark: at the first byte that is not, it stops with an error and puts
/// [`ConvertError::NotUtf8`] in its [`Fault`].
pub struct Text<R> {
    inner: R,
    buf: Vec<u8>,
    /// `buf[start..valid]` is checked text not yet handed on;
    /// `buf[valid..filled]` the start of a character cut by the last read.
    start: usize,
    valid: usize,
    filled: usize,
    /// Bytes of the stream before `buf[0]`.
    offset: u64,
    first: bool,
    format: super::Format,
    fault: Fault,
}

impl<R: Read> Text<R> {
    pub fn new(inner: R, format: super::Format, fault: Fault) -> Text<R> {
        Text {
            inner,
            buf: vec![0; 1 << 16],
            start: 0,
            valid: 0,
            filled: 0,
            offset: 0,
            first: true,
            format,
            fault,
        }
    }

    fn bad(&self, byte: u64) -> std::io::Error {
        *self.fault.borrow_mut() = Some(ConvertError::NotUtf8 {
            byte: usize::try_from(byte).unwrap_or(usize::MAX),
            format: self.format,
        });
        std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text")
    }

    fn fill(&mut self) -> std::io::Result<()> {
        let tail = self.filled - self.valid;
        self.buf.copy_within(self.valid..self.filled, 0);
        self.offset += self.valid as u64;
        self.start = 0;
        self.valid = 0;
        self.filled = tail;
        loop {
            let n = match self.inner.read(&mut self.buf[self.filled..]) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                if self.filled > 0 {
                    // The text ends inside a character.
                    return Err(self.bad(self.offset));
                }
                return Ok(());
            }
            self.filled += n;
            self.valid = match std::str::from_utf8(&self.buf[..self.filled]) {
                Ok(_) => self.filled,
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                Err(e) => return Err(self.bad(self.offset + e.valid_up_to() as u64)),
            };
            // The first complete character: a byte-order mark is dropped.
            if self.first && self.valid > 0 {
                if self.buf.starts_with("\u{feff}".as_bytes()) {
                    self.start = 3;
                }
                self.first = false;
            }
            if self.valid > self.start {
                return Ok(());
            }
        }
    }
}

impl<R: Read> Read for Text<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.start == self.valid {
            self.fill()?;
        }
        let n = out.len().min(self.valid - self.start);
        out[..n].copy_from_slice(&self.buf[self.start..self.start + n]);
        self.start += n;
        Ok(n)
    }
}

/// A gzip stream decompressed as it is read; data that does not decompress
/// puts [`ConvertError::Decompress`] in its [`Fault`].
pub struct Gunzip<R: Read> {
    inner: flate2::read::MultiGzDecoder<R>,
    fault: Fault,
}

impl<R: Read> Gunzip<R> {
    pub fn new(inner: R, fault: Fault) -> Gunzip<R> {
        Gunzip {
            inner: flate2::read::MultiGzDecoder::new(inner),
            fault,
        }
    }
}

impl<R: Read> Read for Gunzip<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        self.inner.read(out).inspect_err(|e| {
            *self.fault.borrow_mut() = Some(ConvertError::Decompress(std::io::Error::new(
                e.kind(),
                e.to_string(),
            )));
        })
    }
}

/// A JSON line as read: an object, or the warning to give about it.
pub type Line = Result<Map<String, Value>, String>;

/// Read JSON lines one at a time, handing each non-empty line to `each`
/// with its 1-based number: a JSON object as it is, anything else as the
/// warning to give (the line is then skipped).
pub fn each_line(
    mut reader: impl std::io::BufRead,
    each: &mut dyn FnMut(usize, Line) -> Result<(), ConvertError>,
) -> Result<(), ConvertError> {
    let mut line = Vec::new();
    let mut n = 0usize;
    loop {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .map_err(ConvertError::Unreadable)?
            == 0
        {
            return Ok(());
        }
        n += 1;
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let got = match serde_json::from_slice::<Value>(text) {
            Ok(Value::Object(o)) => Ok(o),
            Ok(other) => Err(format!(
                "line {n}: expected a JSON object, found {}; skipped",
                crate::core::record::type_name(&other)
            )),
            Err(e) => Err(format!("line {n}: not valid JSON ({e}); skipped")),
        };
        each(n, got)?;
    }
}

/// What [`each_element`] found at the top of the document.
#[derive(Debug)]
pub enum Top {
    /// An object: its members other than the path's.
    Object(Map<String, Value>),
    /// An array, whose elements were handed on.
    Array,
    /// Something else.
    Other,
}

/// Read one JSON document from `reader`, handing each element of the array
/// at `path` to `each` as it is read (an object member at each step, e.g.
/// `["results", "results"]`; an array met before the path ends is the array,
/// and an object where the path ends hands on its members' values).
/// Returns the top-level object's other members (the whole object when the
/// path is empty); the other members of the objects along the path are
/// skipped.
pub fn each_element(
    reader: impl Read,
    path: &[&str],
    each: &mut dyn FnMut(Value) -> Result<(), ConvertError>,
) -> Result<Top, ConvertError> {
    let failed: RefCell<Option<ConvertError>> = RefCell::new(None);
    let each = RefCell::new(each);
    let mut de = serde_json::Deserializer::from_reader(reader);
    let seed = Node {
        path,
        top: true,
        each: &each,
        failed: &failed,
    };
    let result = seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    if let Some(e) = failed.into_inner() {
        return Err(e);
    }
    match result {
        Ok(Found::Object(m)) => Ok(Top::Object(m)),
        Ok(Found::Done) => Ok(Top::Array),
        Ok(Found::Other) => Ok(Top::Other),
        Err(e) => Err(ConvertError::Content(format!("not a JSON document ({e})"))),
    }
}

/// What a [`Node`] found.
enum Found {
    /// The top-level object's other members.
    Object(Map<String, Value>),
    /// The array (or, below the top, an object along the path).
    Done,
    /// Something else where the path led.
    Other,
}

struct Node<'a, 'f> {
    path: &'a [&'a str],
    top: bool,
    each: &'a RefCell<&'f mut dyn FnMut(Value) -> Result<(), ConvertError>>,
    failed: &'a RefCell<Option<ConvertError>>,
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_> {
    type Value = Found;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Found, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_> {
    type Value = Found;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object or array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Found, A::Error> {
        while let Some(v) = seq.next_element::<Value>()? {
            if let Err(e) = (self.each.borrow_mut())(v) {
                *self.failed.borrow_mut() = Some(e);
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(Found::Done)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found, A::Error> {
        let mut others = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if self.path.is_empty() && !self.top {
                // The path ends at an object: its values are the elements.
                let v = map.next_value::<Value>()?;
                if let Err(e) = (self.each.borrow_mut())(v) {
                    *self.failed.borrow_mut() = Some(e);
                    return Err(de::Error::custom("stopped"));
                }
            } else if self.path.first() == Some(&key.as_str()) {
                map.next_value_seed(Node {
                    path: &self.path[1..],
                    top: false,
                    each: self.each,
                    failed: self.failed,
                })?;
            } else if self.top {
                others.insert(key, map.next_value::<Value>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(if self.top {
            Found::Object(others)
        } else {
            Found::Done
        })
    }

    fn visit_bool<E>(self, _: bool) -> Result<Found, E> {
        Ok(Found::Other)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Found, E> {
        Ok(Found::Other)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Found, E> {
        Ok(Found::Other)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Found, E> {
        Ok(Found::Other)
    }
    fn visit_str<E>(self, _: &str) -> Result<Found, E> {
        Ok(Found::Other)
    }
    fn visit_unit<E>(self) -> Result<Found, E> {
        Ok(Found::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn walk(doc: &str, path: &[&str]) -> (Vec<Value>, Option<Map<String, Value>>) {
        let mut seen = Vec::new();
        let rest = each_element(doc.as_bytes(), path, &mut |v| {
            seen.push(v);
            Ok(())
        })
        .expect("walk");
        let rest = match rest {
            Top::Object(m) => Some(m),
            _ => None,
        };
        (seen, rest)
    }

    #[test]
    fn elements_stream_and_other_members_stay() {
        let doc = r#"{"evalId":"e","results":{"version":3,"results":[{"a":1},{"b":[2]}],"stats":{}},"config":{"x":1}}"#;
        let (seen, rest) = walk(doc, &["results", "results"]);
        assert_eq!(seen, vec![json!({"a":1}), json!({"b":[2]})]);
        let rest = rest.expect("an object");
        assert_eq!(rest.keys().collect::<Vec<_>>(), ["evalId", "config"]);
        // An array met before the path ends is the array (old promptfoo files).
        let (seen, _) = walk(r#"{"results":[{"a":1}]}"#, &["results", "results"]);
        assert_eq!(seen, vec![json!({"a":1})]);
        // A document that is an array: its elements.
        assert_eq!(
            walk("[1,2]", &["samples"]),
            (vec![json!(1), json!(2)], None)
        );
        // An object where the path ends: its values.
        let (seen, _) = walk(r#"{"tests":{"a":{"x":1},"b":{"x":2}}}"#, &["tests"]);
        assert_eq!(seen, vec![json!({"x":1}), json!({"x":2})]);
        // No path: the whole object.
        let (seen, rest) = walk(r#"{"a":1}"#, &[]);
        assert!(seen.is_empty());
        assert_eq!(rest.expect("object")["a"], 1);
    }

    #[test]
    fn a_broken_document_and_a_failing_row_are_errors() {
        let e = each_element(&b"{\"samples\":[{\"a\":1},"[..], &["samples"], &mut |_| {
            Ok(())
        });
        assert!(e.unwrap_err().to_string().contains("not a JSON document"));
        let e = each_element(&b"{\"samples\":[1,2]}"[..], &["samples"], &mut |_| {
            Err(ConvertError::Content("row refused".into()))
        });
        assert_eq!(e.unwrap_err().to_string(), "row refused");
    }

    fn through_text(bytes: &[u8]) -> (Result<Vec<u8>, String>, Option<String>) {
        let fault = Fault::default();
        let mut out = Vec::new();
        // Small reads, so that characters are cut between them.
        struct Dribble<'a>(&'a [u8]);
        impl Read for Dribble<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = buf.len().min(self.0.len()).min(2);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let got = Text::new(
            Dribble(bytes),
            super::super::Format::Promptfoo,
            fault.clone(),
        )
        .read_to_end(&mut out)
        .map(|_| out)
        .map_err(|e| e.to_string());
        let told = fault.borrow().as_ref().map(ToString::to_string);
        (got, told)
    }

    #[test]
    fn text_passes_utf8_and_stops_at_the_first_bad_byte() {
        let text = "\u{feff}{\"é\": \"日本\"}\n";
        let (got, told) = through_text(text.as_bytes());
        assert_eq!(got.expect("text"), "{\"é\": \"日本\"}\n".as_bytes());
        assert_eq!(told, None);
        let (got, told) = through_text(b"{\"a\": \"\xc3\xa9\xff\"}");
        assert!(got.is_err());
        assert_eq!(
            told.as_deref(),
            Some("not UTF-8 text (byte 9); expected a promptfoo file")
        );
        // A character cut by the end of the file.
        let (_, told) = through_text(b"ab\xe6\x97");
        assert_eq!(
            told.as_deref(),
            Some("not UTF-8 text (byte 2); expected a promptfoo file")
        );
        assert_eq!(through_text(b"").0.expect("empty"), b"");
    }

    #[test]
    fn lines_are_handed_on_with_their_numbers() {
        let mut seen = Vec::new();
        each_line(&b"{\"a\":1}\n\n[2]\nnope\n{\"b\":3}"[..], &mut |n, got| {
            seen.push((n, got.map(Value::Object)));
            Ok(())
        })
        .expect("lines");
        assert_eq!(seen.len(), 4);
        assert_eq!(seen[0], (1, Ok(json!({"a": 1}))));
        assert_eq!(
            seen[1],
            (
                3,
                Err("line 3: expected a JSON object, found an array; skipped".into())
            )
        );
        assert!(
            seen[2]
                .1
                .as_ref()
                .unwrap_err()
                .starts_with("line 4: not valid JSON")
        );
        assert_eq!(seen[3], (5, Ok(json!({"b": 3}))));
    }

    #[test]
    fn spilled_rows_read_back() {
        let mut s = Spill::new().expect("spill");
        let a = s
            .put(&json!({"id": "a", "big": "x".repeat(5000)}))
            .expect("put");
        let b = s.put(&json!([1, 2, 3])).expect("put");
        assert_eq!(s.get::<Value>(b).expect("get"), json!([1, 2, 3]));
        assert_eq!(s.get::<Value>(a).expect("get")["id"], "a");
    }
}
