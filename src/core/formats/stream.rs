//! Reading a large foreign file without holding it: the rows of a JSON
//! document are visited one at a time as the file is read, and each row's
//! raw JSON (the converted record's `origin`) is set aside in a temporary
//! spill file, to be read back only when its record is written.
//!
//! - [`each_element`] walks one array of a JSON document (promptfoo's
//!   `results.results`, Inspect's `samples`) as a stream, and keeps the
//!   document's other members.
//! - [`Spill`] holds set-aside rows on disk; a row keeps where its bytes are.
//! - [`Counted`] counts the bytes read, for a progress bar.
//!
//! Memory is then bounded by what pairing needs of each row (ids, inputs,
//! outputs, verdicts), not by the file.

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
    len: u64,
}

/// A temporary file of rows set aside during a conversion.
pub struct Spill {
    file: BufWriter<std::fs::File>,
    at: u64,
}

impl Spill {
    pub fn new() -> Result<Spill, ConvertError> {
        let file = tempfile::tempfile().map_err(ConvertError::Write)?;
        Ok(Spill {
            file: BufWriter::with_capacity(1 << 20, file),
            at: 0,
        })
    }

    /// Set a row aside; its [`Spilled`] reads it back.
    pub fn put<T: serde::Serialize>(&mut self, v: &T) -> Result<Spilled, ConvertError> {
        let bytes = serde_json::to_vec(v).map_err(ConvertError::Serialize)?;
        self.file.write_all(&bytes).map_err(ConvertError::Write)?;
        let s = Spilled {
            offset: self.at,
            len: bytes.len() as u64,
        };
        self.at += s.len;
        Ok(s)
    }

    /// Read a row back (after the last [`Spill::put`], or between them).
    pub fn get<T: serde::de::DeserializeOwned>(&mut self, s: Spilled) -> Result<T, ConvertError> {
        use std::os::unix::fs::FileExt;
        self.file.flush().map_err(ConvertError::Write)?;
        let len = usize::try_from(s.len).map_err(|_| "a row too large to read back")?;
        let mut buf = vec![0u8; len];
        self.file
            .get_ref()
            .read_exact_at(&mut buf, s.offset)
            .map_err(ConvertError::Write)?;
        serde_json::from_slice(&buf).map_err(ConvertError::Serialize)
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

/// Read one JSON document from `reader`, handing each element of the array
/// at `path` to `each` as it is read (an object member at each step, e.g.
/// `["results", "results"]`; an array met before the path ends is the array).
/// Returns the top-level object's other members; the other members of the
/// objects along the path are skipped. `Ok(None)` when the document is not
/// an object.
pub fn each_element(
    reader: impl Read,
    path: &[&str],
    each: &mut dyn FnMut(Value) -> Result<(), ConvertError>,
) -> Result<Option<Map<String, Value>>, ConvertError> {
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
        Ok(Found::Object(m)) => Ok(Some(m)),
        Ok(_) => Ok(None),
        Err(e) => Err(ConvertError::Content(format!("not a JSON document ({e})"))),
    }
}

/// What a [`Node`] found.
enum Found {
    /// The top-level object's other members.
    Object(Map<String, Value>),
    /// The array, or an object along the path (its other members skipped).
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
            if self.path.first() == Some(&key.as_str()) {
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
        // A document that is not an object.
        assert_eq!(walk("[1,2]", &["samples"]).1, None);
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
