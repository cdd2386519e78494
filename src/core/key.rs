//! The record key: a digest that identifies a pair across regenerations.
//!
//! The key hashes the pair's canonical content (object keys sorted, so a
//! reordered line keeps its key) plus its ids, leaving out what changes from
//! run to run without changing the pair: the `timestamp`, each side's latency,
//! the `triage` object that `triage apply` writes, and the `origin` that a
//! record converted from another tool's file carries (that tool's raw rows,
//! with the uuids, timestamps, eval ids and timings it gives every run). An
//! annotation made on one run therefore follows the same pair into the next
//! one, whether triage or another tool ran it.
//!
//! It is computed two ways with one result: [`record_key`] from a parsed
//! [`Value`], and [`record_key_raw`] straight from the line's bytes, about
//! four times faster, which comparing two runs key by key needs (the note
//! above [`record_key_raw`] gives the figures).

use std::fmt;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::schema::{S_LATENCY, SIDE, T_SOURCE, T_TIMESTAMP, T_VARIANT, TOP, top_slot};

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

/// Top-level members left out of the key: the time (every spelling of
/// [`T_TIMESTAMP`]), the `triage` object that `triage apply` writes, and a
/// converted record's `origin` (see `core::formats`): what the pair is, the
/// converter writes in the native fields, which are keyed.
const VOLATILE_TOP: [&str; 3] = {
    let time = TOP[T_TIMESTAMP].spellings;
    assert!(time.len() == 1, "a new spelling of the time goes here too");
    [time[0], "triage", "origin"]
};
/// Members of a side left out of the key: every spelling of its latency.
const VOLATILE_SIDE: &[&str] = SIDE[S_LATENCY].spellings;

/// Whether a top-level key names a side (`source` or `variant`), whose
/// latency the key leaves out.
fn is_side(k: &[u8]) -> bool {
    matches!(top_slot(k), Some(T_SOURCE | T_VARIANT))
}

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
                (k, Value::Object(side)) if is_side(k.as_bytes()) => {
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

/// A value's canonical bytes (object keys sorted, `1` and `1.0` alike), as
/// the key hashes them: two values with the same bytes are the same JSON.
pub fn canonical_bytes(v: &Value) -> Vec<u8> {
    let mut buf = Vec::new();
    canonical(&mut buf, v, 0);
    buf
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

// Two ways to compute one key, kept for comparison.
//
// [`record_key`] reads a parsed [`Value`]; [`record_key_raw`] below (with
// its scanner, to the end of this file's code) reads the line's bytes.
// Rows' keys are computed on demand (see `super::index::keys`), so today
// few rows need one and either way would do. Comparing two runs key by key
// would need the key of every row of both: 2 × 1M lines, for a
// target of at most 2.5 × the time of indexing one 1M-pair run (about 1.8 s
// on the reference two-core machine, so 4.5 s for the whole comparison).
//
// Measured with `cargo run --release --example key_time --
// run-100k.jsonl 5` (100k pairs of about 2.7 KB from `gen_run`; one thread;
// medians of five rounds, three sets, on a busy two-core machine): the raw
// scanner takes 8.0 µs of CPU per line, a serde_json `Value` plus
// `record_key` 35.0 µs, 4.3 times as much (4.2 to 4.35 in every set, by
// CPU time and by the wall clock). Against `examples/index_time` on the
// same run, timed alongside, the keys of two runs spread over both cores
// take 2.0 to 2.7 times one run's indexing with the raw scanner and 8 to 11
// times with serde_json: the serde path alone would spend three to four
// times the comparison's whole budget on keys. Neither meets the target on
// top of indexing both runs (that will take computing the keys within the
// indexing pass), but only the raw scanner keeps it within reach, so it
// stays. `triage compare` (`super::compare`) matches rows by their ids
// instead and reads keys only for the decisions it carries; it compares
// the inputs of matched pairs, which costs the same kind of second read.

/// The key of one line, computed from its raw text without building a
/// [`Value`]: the same canonical bytes as [`record_key`], hashed the same way.
///
/// `None` when the line is not a JSON object, is malformed, nests deeper than
/// serde_json would parse, holds a number serde_json would reject, or repeats a
/// key within one object (serde_json keeps the last value; this scanner does
/// not try to): the caller then parses a [`Value`] and uses [`record_key`].
pub fn record_key_raw(line: &str) -> Option<RecordKey> {
    CANON.with(|c| {
        let mut c = c.borrow_mut();
        c.out.clear();
        c.members.clear();
        c.arena.clear();
        c.memo.clear();
        c.memo_bytes.clear();
        c.sides_seen = 0;
        let mut s = Scan {
            b: line.as_bytes(),
            i: 0,
            c: &mut c,
        };
        s.ws();
        if s.peek()? != b'{' {
            return None;
        }
        s.object(0, Level::Top)?;
        s.ws();
        if s.i != s.b.len() {
            return None;
        }
        let digest = Sha256::digest(&s.c.out);
        let mut out = [0u8; 16];
        out.copy_from_slice(&digest[..16]);
        Some(RecordKey(out))
    })
}

/// serde_json's nesting limit: a deeper line does not parse at all.
const MAX_RAW_DEPTH: usize = 128;

thread_local! {
    static CANON: std::cell::RefCell<CanonBufs> = std::cell::RefCell::new(CanonBufs::default());
}

/// Buffers reused across lines on one thread.
#[derive(Default)]
struct CanonBufs {
    /// The canonical bytes being built.
    out: Vec<u8>,
    /// Scratch for putting one object's members in key order.
    scratch: Vec<u8>,
    /// Members of the objects being built, innermost last.
    members: Vec<Member>,
    /// Decoded keys that had escapes.
    arena: Vec<u8>,
    /// Large members of the first side read (`source` or `variant`), raw and
    /// canonical, so that the other side copies a byte-identical member's
    /// canonical form instead of scanning it again.
    memo: Vec<Memo>,
    memo_bytes: Vec<u8>,
    sides_seen: u8,
    /// Recently seen inner values, kept across lines (see `Scan::cached`).
    cache: std::collections::HashMap<u64, Vec<u32>>,
    entries: Vec<Cached>,
    cache_bytes: Vec<u8>,
}

/// One remembered side member: its key and raw value in the line, and where
/// its canonical bytes are in `memo_bytes`.
#[derive(Clone, Copy)]
struct Memo {
    key: (usize, usize),
    raw: (usize, usize),
    canon: (usize, usize),
}

/// Side members shorter than this are scanned again rather than remembered.
const MEMO_MIN: usize = 64;

/// Inner values shorter than this are not cached; the cache is looked up by
/// a hash of a value's first `CACHE_MIN` bytes.
const CACHE_MIN: usize = 48;
/// The cache is emptied when it holds this many bytes or entries.
const CACHE_MAX_BYTES: usize = 1 << 20;
const CACHE_MAX_ENTRIES: usize = 2048;
/// Values sharing one prefix hash beyond this many are not cached.
const CACHE_BUCKET: usize = 8;

/// One cached value: its raw text and canonical bytes in `cache_bytes`.
#[derive(Clone, Copy)]
struct Cached {
    raw: (usize, usize),
    canon: (usize, usize),
}

fn prefix_hash(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for c in b.chunks(8) {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    h
}

impl CanonBufs {
    /// Remember the value `raw` whose canonical bytes are `out[out_start..]`.
    fn remember(&mut self, h: u64, raw: &[u8], out_start: usize) {
        if self.cache_bytes.len() > CACHE_MAX_BYTES || self.entries.len() >= CACHE_MAX_ENTRIES {
            self.cache.clear();
            self.entries.clear();
            self.cache_bytes.clear();
        }
        let bucket = self.cache.entry(h).or_default();
        if bucket.len() >= CACHE_BUCKET {
            return;
        }
        let r0 = self.cache_bytes.len();
        self.cache_bytes.extend_from_slice(raw);
        let c0 = self.cache_bytes.len();
        self.cache_bytes.extend_from_slice(&self.out[out_start..]);
        bucket.push(self.entries.len() as u32);
        self.entries.push(Cached {
            raw: (r0, c0),
            canon: (c0, self.cache_bytes.len()),
        });
    }
}

/// One object member already written to `out[start..end]`.
#[derive(Clone, Copy)]
struct Member {
    /// The first eight bytes of the key, big-endian: most comparisons end here.
    prefix: u64,
    /// The decoded key: in the line (`in_arena` false) or in the arena.
    key_start: u32,
    key_end: u32,
    in_arena: bool,
    start: usize,
    end: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Top,
    Side,
    Inner,
}

struct Scan<'a, 'c> {
    b: &'a [u8],
    i: usize,
    c: &'c mut CanonBufs,
}

impl Scan<'_, '_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn eat(&mut self, ch: u8) -> Option<()> {
        self.ws();
        if self.peek()? == ch {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    fn key_bytes(&self, m: &Member) -> &[u8] {
        let (s, e) = (m.key_start as usize, m.key_end as usize);
        if m.in_arena {
            &self.c.arena[s..e]
        } else {
            &self.b[s..e]
        }
    }

    /// A string token at `self.i` (the opening quote): its content range and
    /// whether it has escapes. Rejects raw control characters, as serde_json does.
    fn string_token(&mut self) -> Option<(usize, usize, bool)> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.i + 1;
        let mut j = start;
        let mut escaped = false;
        loop {
            let k = j + memchr::memchr2(b'"', b'\\', &self.b[j..])?;
            if self.b[j..k].iter().any(|&x| x < 0x20) {
                return None;
            }
            if self.b[k] == b'"' {
                self.i = k + 1;
                return Some((start, k, escaped));
            }
            escaped = true;
            // Skip the escape; `\u` is followed by four hex digits.
            match *self.b.get(k + 1)? {
                b'u' => {
                    let hex = self.b.get(k + 2..k + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    j = k + 6;
                }
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => j = k + 2,
                _ => return None,
            }
        }
    }

    /// Decode an escaped string token (quotes included in `raw`).
    fn decode(raw: &[u8]) -> Option<String> {
        serde_json::from_slice::<String>(raw).ok()
    }

    /// Write a string value the way serde_json prints it.
    fn string_value(&mut self) -> Option<()> {
        let (s, e, escaped) = self.string_token()?;
        if escaped {
            let decoded = Self::decode(&self.b[s - 1..=e])?;
            write_str(&mut self.c.out, &decoded);
        } else {
            self.c.out.push(b'"');
            self.c.out.extend_from_slice(&self.b[s..e]);
            self.c.out.push(b'"');
        }
        Some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.b.get(self.i..self.i + word.len())? == word {
            self.i += word.len();
            self.c.out.extend_from_slice(word);
            Some(())
        } else {
            None
        }
    }

    /// A JSON number, written as [`canonical`] writes serde_json's value of it.
    fn number(&mut self) -> Option<()> {
        let start = self.i;
        let b = self.b;
        let j = super::load::fast::number_token(b, start)?.end;
        self.i = j;
        let token = &b[start..j];
        // A plain integer below 1e15 is its own canonical form ("-0" is "0").
        let digits = if token[0] == b'-' { &token[1..] } else { token };
        if digits.len() <= 15 && digits.iter().all(u8::is_ascii_digit) {
            if token == b"-0" {
                self.c.out.push(b'0');
            } else {
                self.c.out.extend_from_slice(token);
            }
            return Some(());
        }
        // The token is ASCII, so this cannot fail; serde_json (with
        // float_roundtrip) rounds every number token to the nearest f64, as
        // `parse` does, and rejects what overflows.
        let text = std::str::from_utf8(&b[start..j]).ok()?;
        let f: f64 = text.parse().ok()?;
        if !f.is_finite() {
            return None;
        }
        write_f64(&mut self.c.out, f);
        Some(())
    }

    fn value(&mut self, depth: usize, level: Level) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'{' | b'[' if level == Level::Inner => self.cached(depth),
            b'{' => self.object(depth, level),
            b'[' => self.array(depth),
            b'"' => self.string_value(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number(),
        }
    }

    /// An inner object or array, from the cache of recently seen values when
    /// its text is there (runs repeat policies, expectations, a case's source
    /// state, evidence lists), else scanned and remembered.
    ///
    /// A cached text is a complete JSON value, so a line that starts with it
    /// at this point holds that very value: objects and arrays end at their
    /// closing bracket. (Depth is not re-checked on a hit: a line nested past
    /// serde_json's limit does not take the fast path anyway.)
    fn cached(&mut self, depth: usize) -> Option<()> {
        let start = self.i;
        let b = self.b;
        let head = b.get(start..start + CACHE_MIN).map(prefix_hash);
        if let Some(h) = head {
            let c = &mut *self.c;
            if let Some(bucket) = c.cache.get(&h) {
                for &e in bucket {
                    let e = c.entries[e as usize];
                    let raw = &c.cache_bytes[e.raw.0..e.raw.1];
                    if b[start..].starts_with(raw) {
                        self.i = start + raw.len();
                        c.out
                            .extend_from_slice(&c.cache_bytes[e.canon.0..e.canon.1]);
                        return Some(());
                    }
                }
            }
        }
        let out_start = self.c.out.len();
        if b[start] == b'{' {
            self.object(depth, Level::Inner)?;
        } else {
            self.array(depth)?;
        }
        if let Some(h) = head
            && self.i - start >= CACHE_MIN
        {
            self.c.remember(h, &b[start..self.i], out_start);
        }
        Some(())
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth >= MAX_RAW_DEPTH {
            return None;
        }
        self.i += 1;
        self.c.out.push(b'[');
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
            self.c.out.push(b']');
            return Some(());
        }
        loop {
            self.value(depth + 1, Level::Inner)?;
            self.c.out.push(b',');
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    self.c.out.push(b']');
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An object with its members in key order. At the top level the volatile
    /// fields are left out and `source`/`variant` objects drop their latency.
    fn object(&mut self, depth: usize, level: Level) -> Option<()> {
        if depth >= MAX_RAW_DEPTH {
            return None;
        }
        self.i += 1;
        self.c.out.push(b'{');
        let seg = self.c.out.len();
        let base = self.c.members.len();
        // The first side remembers its large members, the second reuses them.
        let (record, reuse) = if level == Level::Side {
            self.c.sides_seen = self.c.sides_seen.saturating_add(1);
            (self.c.sides_seen == 1, self.c.sides_seen == 2)
        } else {
            (false, false)
        };
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            self.c.out.push(b'}');
            return Some(());
        }
        loop {
            self.ws();
            let (ks, ke, escaped) = self.string_token()?;
            let b = self.b;
            let decoded = if escaped {
                Some(Self::decode(&b[ks - 1..=ke])?)
            } else {
                None
            };
            let key: &[u8] = match &decoded {
                Some(d) => d.as_bytes(),
                None => &b[ks..ke],
            };
            self.eat(b':')?;
            let skip = match level {
                Level::Top => VOLATILE_TOP.iter().any(|v| v.as_bytes() == key),
                Level::Side => VOLATILE_SIDE.iter().any(|v| v.as_bytes() == key),
                Level::Inner => false,
            };
            let child = match level {
                Level::Top if is_side(key) => Level::Side,
                _ => Level::Inner,
            };
            let start = self.c.out.len();
            // The key is written decoded and re-escaped, as serde_json prints it.
            match &decoded {
                Some(d) => write_str(&mut self.c.out, d),
                None => {
                    self.c.out.push(b'"');
                    self.c.out.extend_from_slice(key);
                    self.c.out.push(b'"');
                }
            }
            let (key_start, key_end, in_arena) = match &decoded {
                Some(d) => {
                    let s = self.c.arena.len();
                    self.c.arena.extend_from_slice(d.as_bytes());
                    (s, self.c.arena.len(), true)
                }
                None => (ks, ke, false),
            };
            let mut p = [0u8; 8];
            let n = key.len().min(8);
            p[..n].copy_from_slice(&key[..n]);
            let m = Member {
                prefix: u64::from_be_bytes(p),
                key_start: u32::try_from(key_start).ok()?,
                key_end: u32::try_from(key_end).ok()?,
                in_arena,
                start,
                end: start,
            };
            self.c.out.push(b':');
            self.ws();
            // Only an object value at `source`/`variant` is a side.
            let child = if child == Level::Side && self.peek()? != b'{' {
                Level::Inner
            } else {
                child
            };
            let vstart = self.i;
            let vout = self.c.out.len();
            // Only objects, arrays and strings end where their text ends.
            let delimited = matches!(self.peek()?, b'{' | b'[' | b'"');
            let reused = reuse
                && !escaped
                && delimited
                && match self.c.memo.iter().find(|m| &b[m.key.0..m.key.1] == key) {
                    Some(m) if b[vstart..].starts_with(&b[m.raw.0..m.raw.1]) => {
                        let (cs, ce) = m.canon;
                        self.i = vstart + (m.raw.1 - m.raw.0);
                        let CanonBufs {
                            out, memo_bytes, ..
                        } = &mut *self.c;
                        out.extend_from_slice(&memo_bytes[cs..ce]);
                        true
                    }
                    _ => false,
                };
            if !reused {
                self.value(depth + 1, child)?;
                if record && !escaped && delimited && self.i - vstart >= MEMO_MIN {
                    let CanonBufs {
                        out,
                        memo,
                        memo_bytes,
                        ..
                    } = &mut *self.c;
                    let cs = memo_bytes.len();
                    memo_bytes.extend_from_slice(&out[vout..]);
                    memo.push(Memo {
                        key: (ks, ke),
                        raw: (vstart, self.i),
                        canon: (cs, memo_bytes.len()),
                    });
                }
            }
            self.c.out.push(b',');
            if skip {
                // Scanned for validity, then dropped; still counts for duplicates.
                self.c.out.truncate(start);
            }
            self.c.members.push(Member {
                end: self.c.out.len(),
                ..m
            });
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    break;
                }
                _ => return None,
            }
        }
        self.sort_members(seg, base)?;
        self.c.out.push(b'}');
        Some(())
    }

    /// Put the members written since `base` in key order; `None` on a repeated key.
    fn sort_members(&mut self, seg: usize, base: usize) -> Option<()> {
        let cmp = |x: &Member, y: &Member| {
            x.prefix
                .cmp(&y.prefix)
                .then_with(|| self.key_bytes(x).cmp(self.key_bytes(y)))
        };
        let ms = &self.c.members[base..];
        let sorted = ms.windows(2).all(|w| cmp(&w[0], &w[1]).is_lt());
        if !sorted {
            let mut order: Vec<Member> = ms.to_vec();
            order.sort_unstable_by(cmp);
            if order.windows(2).any(|w| cmp(&w[0], &w[1]).is_eq()) {
                return None;
            }
            let mut scratch = std::mem::take(&mut self.c.scratch);
            scratch.clear();
            scratch.extend_from_slice(&self.c.out[seg..]);
            self.c.out.truncate(seg);
            for m in &order {
                self.c
                    .out
                    .extend_from_slice(&scratch[m.start - seg..m.end - seg]);
            }
            self.c.scratch = scratch;
        }
        self.c.members.truncate(base);
        Some(())
    }
}

/// A number as [`canonical`] writes it: integral values below 9e15 without a
/// fraction, every other value in Rust's shortest round-trip form.
fn write_f64(buf: &mut Vec<u8>, f: f64) {
    use std::io::Write as _;
    if f.fract() == 0.0 && f.abs() < 9.0e15 {
        let _ = write!(buf, "{}", f as i64);
    } else {
        let _ = write!(buf, "{f:?}");
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
    fn a_converted_record_is_keyed_without_its_origin() {
        // Two runs of one promptfoo config: new row ids and timings in the
        // raw rows, the same pair.
        let a = r#"{"case_id":"c","variant_id":"v","format":"promptfoo","variant":{"output":"urgent"},"origin":{"id":"5c0e","latencyMs":12}}"#;
        let b = r#"{"origin":{"latencyMs":40,"id":"9f1a"},"case_id":"c","variant_id":"v","format":"promptfoo","variant":{"output":"urgent"}}"#;
        let key = |line: &str| {
            let v: Value = serde_json::from_str(line).unwrap();
            let k = record_key(&v);
            assert_eq!(record_key_raw(line), Some(k), "{line}");
            k
        };
        assert_eq!(key(a), key(b));
        // What the converter wrote is still the pair's identity.
        let c = a.replace(r#""output":"urgent""#, r#""output":"routine""#);
        assert_ne!(key(a), key(&c));
        // Only the top-level member: an `origin` inside a side is content.
        let d = r#"{"case_id":"c","variant_id":"v","variant":{"origin":"x"}}"#;
        let e = r#"{"case_id":"c","variant_id":"v","variant":{"origin":"y"}}"#;
        assert_ne!(key(d), key(e));
    }

    #[test]
    fn key_changes_with_content() {
        let a = json!({"case_id": "c", "variant_id": "v", "source": {"question": "q"}});
        let b = json!({"case_id": "c", "variant_id": "v", "source": {"question": "q2"}});
        assert_ne!(record_key(&a), record_key(&b));
    }

    /// The raw key equals the [`record_key`] oracle on every line of every sample.
    #[test]
    fn raw_key_matches_the_oracle_on_every_sample_line() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-runs");
        let mut checked = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            for line in text.lines() {
                let Ok(v) = serde_json::from_str::<Value>(line) else {
                    continue;
                };
                if !v.is_object() {
                    continue;
                }
                assert_eq!(record_key_raw(line), Some(record_key(&v)), "{line}");
                checked += 1;
            }
        }
        assert!(checked > 90, "{checked}");
    }

    #[test]
    fn raw_key_handles_escapes_numbers_and_nesting() {
        let lines = [
            r#"{"b":1,"a":{"z":[1,2.5,-0,1e2,1.0,12345678901234567890,9007199254740993,0.1e-3],"y":null}}"#,
            r#"{"k\u00e9y":"v\"al\\ue\n\t\u0001\u00e9\ud83d\ude00","timestamp":"x","triage":{"a":1}}"#,
            r#" { "source" : { "latency_ms" : 5 , "q" : "x" , "latency":1, "latencyMs": 2 } , "variant" : [ {"latency_ms":1} ] } "#,
            r#"{"source":"plain","variant":{"b":{"latency_ms":1},"a":true,"c":false}}"#,
            r#"{"a":[],"b":{},"c":[[[]]],"d":"","e":"\/"}"#,
            r#"{"x":-1.5E+3,"y":3e-7,"z":123.456e10,"w":-9.2e15}"#,
        ];
        for line in lines {
            let v: Value = serde_json::from_str(line).unwrap();
            assert_eq!(record_key_raw(line), Some(record_key(&v)), "{line}");
        }
        // What the oracle would see differently, or not parse, is refused.
        for line in [
            r#"{"a":1,"a":2}"#,
            r#"{"a":1e400}"#,
            r#"{"a":01}"#,
            r#"{"a":1,}"#,
            r#"[1]"#,
            r#"{"a":"x"} x"#,
            "{\"a\":\"\u{1}\"}",
        ] {
            assert_eq!(record_key_raw(line), None, "{line}");
        }
    }

    /// Values repeated across lines come from the cache; the keys stay the oracle's.
    #[test]
    fn raw_key_cache_hits_keep_the_oracle_key() {
        let long = "x".repeat(60);
        let lines = [
            format!(
                r#"{{"p":{{"a":"{long}","b":[1,2.50,{{"z":1,"y":2}}]}},"q":[{{"k":"{long}"}}]}}"#
            ),
            format!(
                r#"{{"q":[{{"k":"{long}"}}],"p":{{"a":"{long}","b":[1,2.50,{{"z":1,"y":2}}]}}}}"#
            ),
            format!(
                r#"{{"p":{{"a":"{long}","b":[1,2.50,{{"z":1,"y":2}}],"c":0}},"r":{{"a":"{long}"}}}}"#
            ),
            format!(
                r#"{{"p":[{{"a":"{long}","b":[1,2.50,{{"z":1,"y":2}}]}}],"source":{{"s":{{"a":"{long}"}}}}}}"#
            ),
            format!(
                r#"{{"source":{{"latency_ms":{{"a":"{long}"}},"s":{{"a":"{long}","latency_ms":1}}}}}}"#
            ),
        ];
        for round in 0..2 {
            for line in &lines {
                let v: Value = serde_json::from_str(line).unwrap();
                assert_eq!(
                    record_key_raw(line),
                    Some(record_key(&v)),
                    "{round}: {line}"
                );
            }
        }
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn json() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(|n| json!(n)),
                any::<u64>().prop_map(|n| json!(n)),
                (-1e20f64..1e20).prop_map(|f| json!(f)),
                (0u32..1000).prop_map(|n| json!(f64::from(n) / 8.0)),
                "[a-z\\\\\"\n\t\u{1}\u{e9}\u{1F600} ]{0,8}".prop_map(Value::String),
            ];
            leaf.prop_recursive(4, 40, 6, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                    proptest::collection::vec(
                        (
                            prop_oneof![
                                Just("source".to_string()),
                                Just("variant".to_string()),
                                Just("latency_ms".to_string()),
                                Just("timestamp".to_string()),
                                "[a-zé\"\\\\]{0,4}"
                            ],
                            inner
                        ),
                        0..6
                    )
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
                ]
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(400))]
            #[test]
            fn raw_key_equals_oracle(
                top in proptest::collection::vec(
                    (prop_oneof![
                        Just("source".to_string()),
                        Just("variant".to_string()),
                        Just("timestamp".to_string()),
                        Just("triage".to_string()),
                        "[a-z_\u{e9}]{1,6}"
                    ], json()),
                    0..8
                ),
                pretty in any::<bool>(),
            ) {
                let v = Value::Object(top.into_iter().collect());
                let line = if pretty {
                    serde_json::to_string_pretty(&v).unwrap()
                } else {
                    serde_json::to_string(&v).unwrap()
                };
                prop_assert_eq!(record_key_raw(&line), Some(record_key(&v)));
            }
        }
    }

    #[test]
    fn key_round_trips_as_hex() {
        let k = record_key(&json!({"case_id": "c", "variant_id": "v"}));
        assert_eq!(RecordKey::parse(&k.to_string()), Some(k));
        assert_eq!(RecordKey::parse("zz"), None);
    }
}
