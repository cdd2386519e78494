//! The record key: a digest that identifies a pair across regenerations.
//!
//! The key hashes the pair's canonical content (object keys sorted, so a
//! reordered line keeps its key) plus its ids, leaving out what changes from
//! run to run without changing the pair: the `timestamp`, each side's latency,
//! and the `triage` object that `triage apply` writes. An annotation made on
//! one run therefore follows the same pair into the next one.

use std::fmt;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// A 128-bit digest of a pair's canonical content, shown as 32 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RecordKey(pub [u8; 16]);

impl fmt::Display for RecordKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl RecordKey {
    /// Parse the 32-hex-digit form.
    pub fn parse(s: &str) -> Option<RecordKey> {
        let s = s.trim();
        if s.len() != 32 || !s.is_ascii() {
            return None;
        }
        let mut out = [0u8; 16];
        for (i, chunk) in s.as_bytes().chunks(2).enumerate() {
            let hex = std::str::from_utf8(chunk).ok()?;
            out[i] = u8::from_str_radix(hex, 16).ok()?;
        }
        Some(RecordKey(out))
    }
}

const VOLATILE_TOP: &[&str] = &["timestamp", "triage"];
const VOLATILE_SIDE: &[&str] = &["latency_ms", "latencyMs", "latency"];

/// The key of one parsed line.
pub fn record_key(v: &Value) -> RecordKey {
    let mut h = Sha256::new();
    let mut buf = Vec::with_capacity(1024);
    if let Value::Object(obj) = v {
        let mut keys: Vec<&String> = obj.keys().collect();
        keys.sort();
        buf.push(b'{');
        for k in keys {
            if VOLATILE_TOP.contains(&k.as_str()) {
                continue;
            }
            write_str(&mut buf, k);
            buf.push(b':');
            match (k.as_str(), &obj[k]) {
                ("source" | "variant", Value::Object(side)) => {
                    let mut sk: Vec<&String> = side.keys().collect();
                    sk.sort();
                    buf.push(b'{');
                    for s in sk {
                        if VOLATILE_SIDE.contains(&s.as_str()) {
                            continue;
                        }
                        write_str(&mut buf, s);
                        buf.push(b':');
                        canonical(&mut buf, &side[s], 0);
                        buf.push(b',');
                    }
                    buf.push(b'}');
                }
                (_, val) => canonical(&mut buf, val, 0),
            }
            buf.push(b',');
        }
        buf.push(b'}');
    } else {
        canonical(&mut buf, v, 0);
    }
    h.update(&buf);
    let digest = h.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&digest[..16]);
    RecordKey(out)
}

fn write_str(buf: &mut Vec<u8>, s: &str) {
    // serde_json's string escaping is canonical for a given string.
    if let Ok(enc) = serde_json::to_vec(s) {
        buf.extend_from_slice(&enc);
    }
}

/// Canonical JSON: object keys sorted, numbers as f64 text when fractional.
fn canonical(buf: &mut Vec<u8>, v: &Value, depth: usize) {
    if depth > 512 {
        return;
    }
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            buf.push(b'{');
            for k in keys {
                write_str(buf, k);
                buf.push(b':');
                canonical(buf, &o[k], depth + 1);
                buf.push(b',');
            }
            buf.push(b'}');
        }
        Value::Array(a) => {
            buf.push(b'[');
            for x in a {
                canonical(buf, x, depth + 1);
                buf.push(b',');
            }
            buf.push(b']');
        }
        Value::Number(n) => match n.as_f64() {
            // 1 and 1.0 are the same value.
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                buf.extend_from_slice(format!("{}", f as i64).as_bytes())
            }
            Some(f) => buf.extend_from_slice(format!("{f:?}").as_bytes()),
            None => buf.extend_from_slice(n.to_string().as_bytes()),
        },
        other => buf.extend_from_slice(other.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_ignores_order_time_latency_and_triage() {
        let a = json!({"case_id": "c", "variant_id": "v", "timestamp": "t1",
            "source": {"question": "q", "latency_ms": 10, "state": {"a": 1, "b": 2}}});
        let b = json!({"variant_id": "v", "case_id": "c", "timestamp": "t2", "triage": {"category": "x"},
            "source": {"state": {"b": 2, "a": 1.0}, "latency_ms": 99, "question": "q"}});
        assert_eq!(record_key(&a), record_key(&b));
    }

    #[test]
    fn key_changes_with_content() {
        let a = json!({"case_id": "c", "variant_id": "v", "source": {"question": "q"}});
        let b = json!({"case_id": "c", "variant_id": "v", "source": {"question": "q2"}});
        assert_ne!(record_key(&a), record_key(&b));
    }

    #[test]
    fn key_round_trips_as_hex() {
        let k = record_key(&json!({"case_id": "c", "variant_id": "v"}));
        assert_eq!(RecordKey::parse(&k.to_string()), Some(k));
        assert_eq!(RecordKey::parse("zz"), None);
    }
}
