//! The structural scanner: JSON's grammar as serde_json reads it, one byte
//! at a time or sixteen, recording nothing but what [`Scan`]'s callers ask
//! for; strings, numbers and object keys.

use std::borrow::Cow;

use super::memo::{Key, Scratch, SeenKey, after};
use super::span::{Kind, Span, Val};

/// serde_json refuses a 128th nested object or array.
pub(super) const MAX_DEPTH: usize = 127;

/// Numbers larger than this in magnitude are left to the slow path, well
/// away from where serde_json starts refusing them (past `f64::MAX`).
const MAX_MAGNITUDE: f64 = 1e300;

/// How a kind of object names its slots, and which of its shapes it is.
pub(super) type Keyed = (usize, fn(&[u8]) -> Option<usize>);

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// A mask whose lowest set bit is the high bit of the first byte of `w`
/// (little-endian) that ends a plain run of string content: a quote, a
/// backslash or a control character. Zero when there is none.
#[inline]
fn specials(w: u64) -> u64 {
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS;
    zero(w ^ (ONES * u64::from(b'"')))
        | zero(w ^ (ONES * u64::from(b'\\')))
        | (w.wrapping_sub(ONES * 0x20) & !w & HIGHS)
}

/// The first eight bytes of the key `b[ks..ke]` (zeros past its end), for
/// quick inequality: one load where eight bytes of `b` follow `ks`.
#[inline]
fn key_prefix(b: &[u8], ks: usize, ke: usize) -> u64 {
    let n = (ke - ks).min(8);
    match b.get(ks..ks + 8) {
        Some(w) => {
            let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
            if n == 8 {
                w
            } else {
                w & ((1u64 << (8 * n)) - 1)
            }
        }
        None => {
            let mut p = [0u8; 8];
            p[..n].copy_from_slice(&b[ks..ks + n]);
            u64::from_le_bytes(p)
        }
    }
}

/// The first eight bytes of the key `b[ks..ke]` (see [`key_prefix`]),
/// and its bit among an object's keys.
#[inline]
pub(super) fn key_bit(b: &[u8], ks: usize, ke: usize) -> (u64, u64) {
    let p = key_prefix(b, ks, ke);
    let h = (p ^ (p >> 29) ^ (ke - ks) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (p, 1u64 << (h >> 58))
}

/// How many bytes `a` and `b` share from their starts.
#[inline]
pub(super) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 16 <= n {
        let x = u128::from_le_bytes(a[i..i + 16].try_into().unwrap_or_default());
        let y = u128::from_le_bytes(b[i..i + 16].try_into().unwrap_or_default());
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 16;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

fn hex4(b: &[u8]) -> Option<u16> {
    let mut v = 0u16;
    for &c in b.get(..4)? {
        v = v << 4 | (c as char).to_digit(16)? as u16;
    }
    Some(v)
}

pub(super) struct Scan<'a, 's> {
    pub(super) b: &'a [u8],
    pub(super) i: usize,
    pub(super) s: &'s mut Scratch,
}

impl<'a> Scan<'a, '_> {
    #[inline]
    pub(super) fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// JSON whitespace, as serde_json skips it. Most lines have none: one
    /// comparison tells.
    #[inline(always)]
    pub(super) fn ws(&mut self) {
        if self.b.get(self.i).is_some_and(|&c| c <= b' ') {
            self.blanks();
        }
    }

    /// The byte at `self.i` once whitespace is skipped.
    #[inline(always)]
    pub(super) fn token(&mut self) -> Option<u8> {
        let c = *self.b.get(self.i)?;
        if c > b' ' {
            return Some(c);
        }
        self.blanks();
        self.peek()
    }

    #[inline(never)]
    fn blanks(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// A string at `self.i` (its opening quote); see [`string_end`].
    #[inline]
    fn string(&mut self) -> Option<Kind> {
        let (kind, end) = string_end(self.b, self.i)?;
        self.i = end;
        Some(kind)
    }

    fn literal(&mut self, word: &[u8], kind: Kind) -> Option<Kind> {
        if self.b.get(self.i..self.i + word.len())? == word {
            self.i += word.len();
            Some(kind)
        } else {
            None
        }
    }

    /// A number, with serde_json's grammar; refused when its magnitude is
    /// over [`MAX_MAGNITUDE`].
    fn number(&mut self) -> Option<Kind> {
        let b = self.b;
        let start = self.i;
        let NumberToken {
            end: j,
            int_digits,
            exponent,
        } = number_token(b, start)?;
        self.i = j;
        // Without an exponent, fewer than 300 integer digits is in range.
        if exponent || int_digits >= 300 {
            number_value(&b[start..j])?;
        }
        Some(Kind::Num)
    }

    /// Any value at `self.i`, inside `depth` open objects and arrays: a
    /// string in place (the most common value, and the cheapest), anything
    /// else in [`Self::nested`].
    #[inline(always)]
    pub(super) fn value(&mut self, depth: usize) -> Option<Kind> {
        match self.peek()? {
            b'"' => self.string(),
            _ => self.nested(depth),
        }
    }

    /// A value other than a string (see [`Self::value`]).
    #[inline(never)]
    fn nested(&mut self, depth: usize) -> Option<Kind> {
        match self.peek()? {
            b'"' => self.string(),
            b'{' => {
                self.object(depth + 1, None, |s, _, _, d| s.value(d).map(|_| false))?;
                Some(Kind::Obj)
            }
            b'[' => {
                self.array(depth + 1)?;
                Some(Kind::Arr)
            }
            b't' => self.literal(b"true", Kind::True),
            b'f' => self.literal(b"false", Kind::False),
            b'n' => self.literal(b"null", Kind::Null),
            _ => self.number(),
        }
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.i += 1;
        if self.token()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.value(depth)?;
            match self.token()? {
                b',' => {
                    self.i += 1;
                    self.ws();
                }
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An object at `self.i`, the `depth`-th open container. `member` reads
    /// each value (at `self.i`, whitespace skipped), given the slot its key
    /// names (for a `keyed` object: see [`Keyed`]), its key's span and
    /// `depth`, and says whether the key names a field it [`Self::put`] in
    /// a slot: `put` refuses a second one. Any other key is compared here
    /// with the object's others. Refuses repeated and escaped keys.
    pub(super) fn object<F>(&mut self, depth: usize, keyed: Option<Keyed>, member: F) -> Option<()>
    where
        F: FnMut(&mut Self, Option<usize>, (usize, usize), usize) -> Option<bool>,
    {
        if depth > MAX_DEPTH {
            return None;
        }
        self.i += 1;
        if self.token()? == b'}' {
            self.i += 1;
            return Some(());
        }
        let base = self.s.keys.len();
        self.members(depth, keyed, (base, 0), member)
    }

    /// The members of an object from the one at `self.i` on (see
    /// [`Self::object`]); `base` is where the object's keys start in
    /// `keys`, and `seen` their bits (one per key, chosen by its first
    /// bytes and length: only a key whose bit is already set is compared
    /// with the others).
    pub(super) fn members<F>(
        &mut self,
        depth: usize,
        keyed: Option<Keyed>,
        (base, mut seen): (usize, u64),
        mut member: F,
    ) -> Option<()>
    where
        F: FnMut(&mut Self, Option<usize>, (usize, usize), usize) -> Option<bool>,
    {
        let mut prev = 0usize;
        loop {
            if self.token()? != b'"' {
                return None;
            }
            // A key written as the one that followed the same key last
            // time is that valid, plain key followed by its colon.
            let known = keyed.and_then(|(shape, _)| {
                let k = self.s.shapes[shape][prev]?;
                k.at(self.b, self.i).then_some(k)
            });
            let (ks, ke, slot) = match known {
                Some(k) => {
                    let ks = self.i + 1;
                    self.i += usize::from(k.len);
                    (ks, self.i - 2, k.slot.map(usize::from))
                }
                None => {
                    let ks = self.i + 1;
                    if self.string()? != Kind::Str {
                        return None;
                    }
                    let ke = self.i - 1;
                    if self.token()? != b':' {
                        return None;
                    }
                    self.i += 1;
                    match keyed {
                        Some((shape, lookup)) => {
                            let slot = lookup(&self.b[ks..ke]);
                            self.learn(shape, prev, (ks - 1, self.i), slot);
                            (ks, ke, slot)
                        }
                        None => (ks, ke, None),
                    }
                }
            };
            prev = after(slot);
            self.ws();
            // A key that names a field the scan records is refused twice by
            // `put`; the others are looked for among the object's keys.
            if !member(self, slot, (ks, ke), depth)? {
                let b = self.b;
                let key = &b[ks..ke];
                let (p, bit) = key_bit(b, ks, ke);
                if seen & bit != 0 {
                    for k in &self.s.keys[base..] {
                        if k.prefix == p && k.span.bytes(b) == key {
                            return None;
                        }
                    }
                }
                seen |= bit;
                self.s.keys.push(SeenKey {
                    prefix: p,
                    span: Span::checked(ks, ke)?,
                });
            }
            match self.token()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    self.s.keys.truncate(base);
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Keep the key at `b[start..end]` (opening quote to colon), which
    /// followed the key coded `prev` in an object of kind `shape`, for the
    /// next time; only one whose colon follows its closing quote is kept.
    #[inline(never)]
    fn learn(
        &mut self,
        shape: usize,
        prev: usize,
        (start, end): (usize, usize),
        slot: Option<usize>,
    ) {
        if self.b[end - 2] == b'"' {
            self.s.shapes[shape][prev] = Key::new(self.b, start, end - start, slot);
        }
    }

    /// Store `v` in `slot`; a slot already filled is two spellings of one
    /// field (the slow path reads one of them): refused.
    #[inline]
    pub(super) fn put(slot: &mut Option<Val>, kind: Kind, start: usize, end: usize) -> Option<()> {
        if slot.is_some() {
            return None;
        }
        *slot = Some(Val {
            kind,
            span: Span::checked(start, end)?,
        });
        Some(())
    }
}

/// The kind of the string whose opening quote is `b[i]`, and where it ends
/// (past its closing quote). Refuses what serde_json refuses: raw control
/// characters, unknown escapes, bad `\u` digits; and, to stay clear of
/// serde_json's surrogate rules, any `\u` surrogate that is not a high one
/// followed by a low one.
#[inline(always)]
pub(super) fn string_end(b: &[u8], i: usize) -> Option<(Kind, usize)> {
    let mut j = i + 1;
    let mut kind = Kind::Str;
    loop {
        j = plain_run(b, j);
        match *b.get(j)? {
            b'"' => return Some((kind, j + 1)),
            b'\\' => {
                kind = Kind::Esc;
                j = escape(b, j)?;
            }
            0..=0x1f => return None,
            _ => j += 1,
        }
    }
}

/// Where the run of plain string content starting at `b[j]` ends: the first
/// quote, backslash or control character at or after `j`, or a position
/// near the end of `b` from which the caller goes on byte by byte.
#[inline]
fn plain_run(b: &[u8], mut j: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8,
            _mm_or_si128, _mm_set1_epi8,
        };
        // SSE2 is part of x86_64: sixteen bytes a step.
        while j + 16 <= b.len() {
            // SAFETY: `j + 16 <= b.len()`, so the sixteen bytes read are in
            // `b`; the load is unaligned; SSE2 is always present on x86_64.
            let m = unsafe {
                let v = _mm_loadu_si128(b.as_ptr().add(j).cast::<__m128i>());
                let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
                let slash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
                // A byte under 0x20 is its own minimum with 0x1f.
                let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
                _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, slash), control))
            };
            if m != 0 {
                return j + m.trailing_zeros() as usize;
            }
            j += 16;
        }
    }
    while let Some(chunk) = b.get(j..j + 8) {
        let m = specials(u64::from_le_bytes(chunk.try_into().unwrap_or_default()));
        if m != 0 {
            return j + (m.trailing_zeros() / 8) as usize;
        }
        j += 8;
    }
    j
}

/// Past the escape at `b[j]` (a backslash); `None` for an escape serde_json
/// refuses, or a `\u` surrogate that is not a high one followed by a low one.
#[inline]
fn escape(b: &[u8], j: usize) -> Option<usize> {
    match *b.get(j + 1)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(j + 2),
        b'u' => {
            let c = hex4(b.get(j + 2..)?)?;
            match c {
                0xD800..=0xDBFF => {
                    if b.get(j + 6..j + 8)? != b"\\u" {
                        return None;
                    }
                    let low = hex4(b.get(j + 8..)?)?;
                    (0xDC00..=0xDFFF).contains(&low).then_some(j + 12)
                }
                0xDC00..=0xDFFF => None,
                _ => Some(j + 6),
            }
        }
        _ => None,
    }
}

/// A JSON number token in serde_json's grammar (`-`, an integer part
/// without leading zeros, an optional fraction and exponent), starting at
/// `b[start]`.
pub(crate) struct NumberToken {
    /// Where the token ends.
    pub end: usize,
    /// Digits in its integer part.
    pub int_digits: usize,
    pub exponent: bool,
}

/// The number token at `b[start]`; `None` if the grammar is broken there.
pub(crate) fn number_token(b: &[u8], start: usize) -> Option<NumberToken> {
    // Past a run of digits from `j`.
    let digits = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    let mut j = start + usize::from(b.get(start) == Some(&b'-'));
    let int_start = j;
    match *b.get(j)? {
        b'0' => j += 1,
        b'1'..=b'9' => j = digits(j + 1),
        _ => return None,
    }
    let int_digits = j - int_start;
    let mut exponent = false;
    if j < b.len() {
        if b[j] == b'.' {
            if !b.get(j + 1)?.is_ascii_digit() {
                return None;
            }
            j = digits(j + 2);
        }
        if j < b.len() && b[j] | 0x20 == b'e' {
            exponent = true;
            j += 1;
            if matches!(b.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            if !b.get(j)?.is_ascii_digit() {
                return None;
            }
            j = digits(j + 1);
        }
    }
    Some(NumberToken {
        end: j,
        int_digits,
        exponent,
    })
}

/// The value of a number token, as serde_json reads it (both round to the
/// nearest `f64`); `None` past [`MAX_MAGNITUDE`].
pub(super) fn number_value(token: &[u8]) -> Option<f64> {
    if let Some(x) = short_decimal(token) {
        return Some(x);
    }
    let x: f64 = std::str::from_utf8(token).ok()?.parse().ok()?;
    (x.abs() <= MAX_MAGNITUDE).then_some(x)
}

/// A decimal of at most 15 digits and no exponent (`0.917`, `-12`, `894`),
/// the usual numbers of a run: its digits as an integer, which is exact,
/// divided by an exact power of ten, which rounds once, so the result is
/// the nearest `f64` as a full parse gives it.
fn short_decimal(token: &[u8]) -> Option<f64> {
    const POW10: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let negative = token.first() == Some(&b'-');
    let digits = &token[usize::from(negative)..];
    // Fifteen digits and a point at most, so `m` stays under 10^16.
    if digits.len() > 16 {
        return None;
    }
    let mut m: u64 = 0;
    let mut i = 0;
    // The integer part, then the fraction's digits after one point.
    while i < digits.len() && digits[i].is_ascii_digit() {
        m = m * 10 + u64::from(digits[i] - b'0');
        i += 1;
    }
    let mut scale = 0;
    let point = i < digits.len();
    if point {
        if digits[i] != b'.' {
            return None;
        }
        let fraction = &digits[i + 1..];
        for &c in fraction {
            let d = c.wrapping_sub(b'0');
            if d >= 10 {
                return None;
            }
            m = m * 10 + u64::from(d);
        }
        scale = fraction.len();
    }
    let n = digits.len() - usize::from(point);
    if n == 0 || n > 15 {
        return None;
    }
    let x = m as f64 / POW10[scale];
    Some(if negative { -x } else { x })
}

/// The content of a string value whose text (with its quotes) is `raw`,
/// decoded; `None` for a value of another kind `kind`.
#[inline]
pub(super) fn string_content(raw: &str, kind: Kind) -> Option<Cow<'_, str>> {
    match kind {
        Kind::Str => Some(Cow::Borrowed(&raw[1..raw.len() - 1])),
        Kind::Esc => serde_json::from_str::<String>(raw).ok().map(Cow::Owned),
        _ => None,
    }
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
