//! The loader's fast path: one structural scan per line.
//!
//! [`parse_fast`] walks the line once with a hand-written JSON scanner that
//! checks the whole grammar as serde_json would (string escapes, control
//! characters, number syntax and range, nesting depth, trailing bytes) and
//! refuses any object that repeats a key. While it walks, it records where
//! the members the slow path reads lie in the line — the top-level fields,
//! `policy`, `expectation`, both sides and their `response` — and the members
//! of each side's `state`; nothing is allocated for the rest of the line.
//! The few values the derivation needs are then read from their spans, with
//! the slow path's rules: a field missing or `null` is not recorded, the
//! first spelling of a field that is present is the one read, and which
//! fields are read at all depends on the others (the top-level thresholds
//! only without a `policy`, the bounds of an expectation only for its kind).
//!
//! The two states are compared as raw bytes; when the second side's state
//! is byte-identical to the first's it is not scanned again (a complete JSON
//! value ends where its text ends, so equal text is an equal, equally valid
//! value). A state object whose text repeats the one the same side had on
//! the thread's previous line (the lines of one case share their source
//! state) is recalled the same way, with its members, and not scanned
//! either. When they differ, members of the second state whose text repeats
//! the first's are stepped over the same way, and only members whose text
//! differs are diffed: laid out where they lie in the line (`Raw`) and
//! walked by the same diff as parsed values (`diff::Tree`), so no value is
//! built.
//!
//! Whenever the slow path ([`super::record::map_record`]) would say anything
//! the fast path does not model — a field of the wrong type, a value out of
//! range, an unknown route, a half policy, a repeated key, two spellings of
//! one field, an escaped object key, a number serde_json rejects, nesting
//! past serde_json's limit — [`parse_fast`] returns `None` and the caller
//! takes the slow path, so both give identical rows and problems (the tests
//! in `index.rs` check it line by line, and the ones below check that the
//! scanner declines on its own, with nothing validating the line before it).

use std::borrow::Cow;
use std::cell::RefCell;

use serde_json::Value;

use super::diff::{self, Change, DiffEntry, JsonPath};

use super::model::{Expectation, Outcome, PairRecord, Policy, Route, Side};
use super::schema::{
    E_KIND, E_MAX_C, E_MAX_P, E_MOVEMENT, E_ROUTES, E_SAME_ROUTE, N_EXP, N_SIDE, N_TOP,
    S_CONFIDENCE, S_DECISION, S_ERROR, S_LATENCY, S_OUTCOME, S_PROBABILITY, S_QUESTION, S_RESPONSE,
    S_ROUTE, S_STATE, T_ACTION, T_ALLOWED, T_CASE, T_CONTRACT, T_DATASET, T_EXPECTATION, T_FAMILY,
    T_LABEL, T_MARGIN, T_MODEL, T_PASSED, T_POLICY, T_REASONS, T_REPETITION, T_REVIEW, T_SCHEMA,
    T_SETTINGS, T_SOURCE, T_SOURCE_ROUTE, T_TIMESTAMP, T_TRANSFORMATION, T_VARIANT, T_VARIANT_ID,
    T_VARIANT_ROUTE, expectation_slot, policy_slot, response_slot, side_slot, top_slot,
};

/// What the fast path read from one line.
#[derive(Debug)]
pub struct Fast<'a> {
    pub case_id: Cow<'a, str>,
    pub variant_id: Cow<'a, str>,
    pub contract: Option<Cow<'a, str>>,
    pub schema: Option<Cow<'a, str>>,
    pub model: Option<Cow<'a, str>>,
    /// The family and transformation as the line spells them (also copied
    /// into `record`).
    pub family: Option<Cow<'a, str>>,
    pub transformation: Option<Cow<'a, str>>,
    /// The pair as [`super::derive::derive`] needs it. Ids, label, versions,
    /// timestamp and extra fields are left out (its field warnings, a
    /// probability or confidence out of range, are kept); equal questions are both
    /// empty and raw-equal states are both `null` (their diff is empty either
    /// way); states that differ keep only their differing members.
    pub record: Box<PairRecord>,
    /// The diff of the two states, when it is made from their raw text
    /// (both states are then `null` placeholders in `record`): where each
    /// change is and its kind, without the values, which the index does
    /// not keep (the detail view diffs the parsed pair again).
    pub state_diff: Diff,
}

/// serde_json refuses a 128th nested object or array.
const MAX_DEPTH: usize = 127;

/// Numbers larger than this in magnitude are left to the slow path, well
/// away from where serde_json starts refusing them (past `f64::MAX`).
const MAX_MAGNITUDE: f64 = 1e300;

/// The JSON type of a scanned value (`Esc` is a string with escapes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Esc,
    Num,
    True,
    False,
    Null,
    Obj,
    Arr,
}

/// A scanned value: its type and where its text lies in the line (strings
/// with their quotes).
#[derive(Debug, Clone, Copy)]
struct Val {
    kind: Kind,
    start: u32,
    end: u32,
}

impl Val {
    /// The same value in text moved from offset `from` to offset `to`.
    fn moved(self, from: u32, to: u32) -> Val {
        Val {
            kind: self.kind,
            start: self.start - from + to,
            end: self.end - from + to,
        }
    }
}

/// Which small object's slots a member goes to.
#[derive(Clone, Copy)]
enum Target {
    Policy,
    Expectation,
    Response(usize),
}

/// One member of a `state` object: the spans of its key (unquoted) and value.
type MemberSpan = (u32, u32, u32, u32);

/// The objects whose keys name slots: the top level, each side, each
/// side's response, the policy and the expectation.
const SH_TOP: usize = 0;
const SH_SIDE: usize = 1;
const SH_RESPONSE: usize = 3;
const SH_POLICY: usize = 5;
const SH_EXPECTATION: usize = 6;
const N_SHAPES: usize = 7;

/// How a kind of object names its slots, and which of its shapes it is.
type Keyed = (usize, fn(&[u8]) -> Option<usize>);

/// A key as the thread last wrote it after a given key in one kind of
/// object (see `Scratch::shapes`): the text from its opening quote through
/// the colon after its closing one (at most 32 bytes, zeros after), and the
/// slot it names.
#[derive(Clone, Copy)]
struct Key {
    text: [u128; 2],
    mask: [u128; 2],
    len: u8,
    slot: Option<u8>,
}

impl Key {
    /// The key written at `b[i..i + len]`, `"name":` with nothing between
    /// its closing quote and the colon; `None` when it is longer than 32
    /// bytes.
    fn new(b: &[u8], i: usize, len: usize, slot: Option<usize>) -> Option<Key> {
        if len > 32 {
            return None;
        }
        let mut text = [0u8; 32];
        text[..len].copy_from_slice(&b[i..i + len]);
        let ones = |n: usize| match n {
            0 => 0,
            16.. => u128::MAX,
            n => (1u128 << (8 * n)) - 1,
        };
        let half = |h: usize| {
            u128::from_le_bytes(text[16 * h..16 * h + 16].try_into().unwrap_or_default())
        };
        Some(Key {
            text: [half(0), half(1)],
            mask: [ones(len), ones(len.saturating_sub(16))],
            len: len as u8,
            slot: slot.and_then(|s| u8::try_from(s).ok()),
        })
    }

    /// Whether `b[i..]` begins with this key's text; compared sixteen bytes
    /// at a time where they are there.
    #[inline(always)]
    fn at(&self, b: &[u8], i: usize) -> bool {
        let word = |at: usize| {
            b.get(at..at + 16)
                .map(|w| u128::from_le_bytes(w.try_into().unwrap_or_default()))
        };
        let Some(first) = word(i) else {
            // Near the line's end: byte by byte.
            let n = usize::from(self.len);
            let text = self.text[0].to_le_bytes();
            return n <= 16 && b.get(i..i + n) == Some(&text[..n]);
        };
        if (first ^ self.text[0]) & self.mask[0] != 0 {
            return false;
        }
        self.len <= 16 || word(i + 16).is_some_and(|w| (w ^ self.text[1]) & self.mask[1] == 0)
    }
}

/// What a scan records; kept per thread so that a line allocates nothing
/// for it once the buffers have grown.
#[derive(Default)]
struct Scratch {
    /// The keys of the objects being scanned, innermost last: the first
    /// eight bytes, and the span.
    keys: Vec<(u64, u32, u32)>,
    top: [Option<Val>; N_TOP],
    side: [[Option<Val>; N_SIDE]; 2],
    response: [[Option<Val>; 2]; 2],
    policy: [Option<Val>; 2],
    expectation: [Option<Val>; N_EXP],
    /// The members of each side's state, when it is an object scanned here.
    members: [Vec<MemberSpan>; 2],
    /// For each of those members, the index of the other side's member with
    /// the same key and text ([`NONE`] if there is none, or it was not
    /// looked for): the diff need not compare them again.
    twins: [Vec<u32>; 2],
    state_is_object: [bool; 2],
    /// The state object each side last scanned, kept from line to line.
    memo: [StateMemo; 2],
    /// The policy and expectation objects the thread last scanned, which
    /// most lines repeat word for word (see [`SmallMemo`]).
    small: [SmallMemo; 2],
    /// The entry of each small memo this line's object is in (recalled or
    /// just kept), if any.
    small_at: [Option<usize>; 2],
    /// The last record, given back by [`recycle`]: the next one is written
    /// over it in place, into the strings it holds, so that a line neither
    /// allocates a record nor moves one about.
    spare: Option<Box<PairRecord>>,
    /// Spare strings for the record's lists (reasons, allowed changes),
    /// whose lengths vary from line to line; at most [`POOL_MAX`].
    pool: Vec<String>,
    /// For each kind of keyed object, the key that last followed each key
    /// (by its [`after`] code) on this thread (see [`Key`]): a key written
    /// as the one that came after the same key last time is taken whole,
    /// neither scanned nor looked up. Keyed on what came before rather than
    /// on the place, so that lines with and without an optional field
    /// share all the other keys.
    shapes: [[Option<Key>; AFTER]; N_SHAPES],
}

/// The codes of what a key follows: the object's opening brace (0), a key
/// naming slot `s` (`s + 1`), or a key naming none.
const AFTER: usize = N_TOP + 2;

/// The [`AFTER`] code of a key naming `slot`.
fn after(slot: Option<usize>) -> usize {
    slot.map_or(AFTER - 1, |s| (s + 1).min(AFTER - 1))
}

const POOL_MAX: usize = 64;

/// Set `slot` to `text`, in the string it holds if any.
fn set_text(slot: &mut Option<String>, text: Option<&str>) {
    match (slot.as_mut(), text) {
        (Some(buf), Some(t)) => {
            buf.clear();
            buf.push_str(t);
        }
        (_, t) => *slot = t.map(str::to_owned),
    }
}

/// Give a record made by [`parse_fast`] back, so that the thread's next
/// record is written over it.
pub fn recycle(r: Box<PairRecord>) {
    SCRATCH.with(|c| {
        if let Ok(mut s) = c.try_borrow_mut() {
            s.spare = Some(r);
        }
    });
}

/// The largest state object kept from line to line.
const MEMO_MAX: usize = 64 * 1024;

/// A state object scanned on an earlier line: its text, the depth it was
/// read at, and its members' spans counted from its start. The lines of a
/// case repeat its source state, one line per variant; a state whose text
/// begins the same way at the same depth is the same valid object (it ends
/// with its closing brace), with the same members, and is not scanned again.
///
/// A side whose states keep changing (the variant's, in most runs) would
/// pay a copy and a failed comparison on every line: after
/// [`MEMO_MISSES`] misses in a row the memo rests for [`MEMO_REST`] lines,
/// neither compared nor kept, then tries again.
#[derive(Default)]
struct StateMemo {
    text: Vec<u8>,
    depth: usize,
    members: Vec<MemberSpan>,
    /// Misses in a row, and lines left to rest.
    misses: u32,
    resting: u32,
}

/// Small keyed objects (policies, expectations) scanned on earlier lines,
/// which later lines mostly repeat word for word: a few dozen kinds and
/// drifts in a run. Each is kept in the slot its text hashes to, with the
/// depth it was read at and its slots counted from its start. The same text
/// at the same depth is the same valid object (it ends with its closing
/// brace), with the same slots.
#[derive(Default)]
struct SmallMemo {
    entries: Vec<SmallEntry>,
}

#[derive(Default)]
struct SmallEntry {
    text: Vec<u8>,
    depth: usize,
    slots: [Option<Val>; N_EXP],
    /// What the object read as (kept for expectations): the same text
    /// reads the same.
    reading: Reading,
}

/// What an expectation kept in a [`SmallMemo`] read as, once read.
#[derive(Default)]
enum Reading {
    #[default]
    Unread,
    /// The line was declined for it.
    Declined,
    Read(Option<Expectation>),
}

/// Entries per [`SmallMemo`] (a power of two), and the longest object kept.
const SMALL_ENTRIES: usize = 128;
const SMALL_MAX: usize = 512;

/// The entry of [`SmallMemo`] that the object text `t` goes to: a hash of
/// all of it (the objects of a run differ in a digit here and there).
fn small_entry(t: &[u8]) -> usize {
    let mut h = t.len() as u64;
    let mut words = t.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
        h = (h.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    for &c in words.remainder() {
        h = (h.rotate_left(5) ^ u64::from(c)).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    (h >> (64 - SMALL_ENTRIES.trailing_zeros())) as usize
}

const MEMO_MISSES: u32 = 8;
const MEMO_REST: u32 = 64;

impl StateMemo {
    /// If the object at `b[start..]` is this one, its members, placed at
    /// `start`, are added to `out`, and its length is returned.
    fn recall(
        &mut self,
        b: &[u8],
        start: usize,
        depth: usize,
        out: &mut Vec<MemberSpan>,
    ) -> Option<usize> {
        if self.resting > 0 {
            self.resting -= 1;
            return None;
        }
        if self.text.is_empty() {
            return None;
        }
        if self.depth != depth || !b[start..].starts_with(&self.text) {
            self.misses += 1;
            if self.misses >= MEMO_MISSES {
                self.misses = 0;
                self.resting = MEMO_REST;
                self.text.clear();
            }
            return None;
        }
        self.misses = 0;
        let at = u32::try_from(start).ok()?;
        out.extend(
            self.members
                .iter()
                .map(|&(ks, ke, vs, ve)| (ks + at, ke + at, vs + at, ve + at)),
        );
        Some(self.text.len())
    }

    /// Keep the object `b[start..end]`, read at `depth`, with its members;
    /// one over [`MEMO_MAX`] bytes is not kept (nor is the one before), so
    /// that a run of huge states does not leave a copy on every thread.
    fn keep(
        &mut self,
        b: &[u8],
        (start, end): (usize, usize),
        depth: usize,
        members: &[MemberSpan],
    ) {
        if self.resting > 0 {
            return;
        }
        if end - start > MEMO_MAX {
            *self = StateMemo::default();
            return;
        }
        let at = start as u32;
        self.text.clear();
        self.text.extend_from_slice(&b[start..end]);
        self.depth = depth;
        self.members.clear();
        self.members.extend(
            members
                .iter()
                .map(|&(ks, ke, vs, ve)| (ks - at, ke - at, vs - at, ve - at)),
        );
    }
}

impl Scratch {
    fn reset(&mut self) {
        self.keys.clear();
        self.top = [None; N_TOP];
        self.side = [[None; N_SIDE]; 2];
        self.response = [[None; 2]; 2];
        self.policy = [None; 2];
        self.expectation = [None; N_EXP];
        self.members[0].clear();
        self.members[1].clear();
        self.twins[0].clear();
        self.twins[1].clear();
        self.state_is_object = [false; 2];
        self.small_at = [None; 2];
    }

    fn slots(&mut self, t: Target) -> &mut [Option<Val>] {
        match t {
            Target::Policy => &mut self.policy,
            Target::Expectation => &mut self.expectation,
            Target::Response(w) => &mut self.response[w],
        }
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

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
fn key_bit(b: &[u8], ks: usize, ke: usize) -> (u64, u64) {
    let p = key_prefix(b, ks, ke);
    let h = (p ^ (p >> 29) ^ (ke - ks) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (p, 1u64 << (h >> 58))
}

/// How many bytes `a` and `b` share from their starts.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
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

struct Scan<'a, 's> {
    b: &'a [u8],
    i: usize,
    s: &'s mut Scratch,
}

impl<'a> Scan<'a, '_> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// JSON whitespace, as serde_json skips it. Most lines have none: one
    /// comparison tells.
    #[inline(always)]
    fn ws(&mut self) {
        if self.b.get(self.i).is_some_and(|&c| c <= b' ') {
            self.blanks();
        }
    }

    /// The byte at `self.i` once whitespace is skipped.
    #[inline(always)]
    fn token(&mut self) -> Option<u8> {
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
    fn value(&mut self, depth: usize) -> Option<Kind> {
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
    fn object<F>(&mut self, depth: usize, keyed: Option<Keyed>, member: F) -> Option<()>
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
    fn members<F>(
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
                    for &(q, s, e) in &self.s.keys[base..] {
                        if q == p && &b[s as usize..e as usize] == key {
                            return None;
                        }
                    }
                }
                seen |= bit;
                self.s
                    .keys
                    .push((p, u32::try_from(ks).ok()?, u32::try_from(ke).ok()?));
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
    fn put(slot: &mut Option<Val>, kind: Kind, start: usize, end: usize) -> Option<()> {
        if slot.is_some() {
            return None;
        }
        *slot = Some(Val {
            kind,
            start: u32::try_from(start).ok()?,
            end: u32::try_from(end).ok()?,
        });
        Some(())
    }

    /// The whole line: one object and nothing after it.
    fn line(&mut self) -> Option<()> {
        self.ws();
        if self.peek()? != b'{' {
            return None;
        }
        self.object(1, Some((SH_TOP, top_slot)), |s, slot, _, d| {
            let Some(slot) = slot else {
                return s.value(d).map(|_| false);
            };
            let start = s.i;
            let kind = match (slot, s.peek()?) {
                (T_SOURCE, b'{') => s.side(d + 1, 0)?,
                (T_VARIANT, b'{') => s.side(d + 1, 1)?,
                (T_POLICY, b'{') => s.fields(d + 1, Target::Policy)?,
                (T_EXPECTATION, b'{') => s.fields(d + 1, Target::Expectation)?,
                _ => s.value(d)?,
            };
            Self::put(&mut s.s.top[slot], kind, start, s.i).map(|()| true)
        })?;
        self.ws();
        (self.i == self.b.len()).then_some(())
    }

    /// A small object whose known members go to `t`'s slots.
    fn fields(&mut self, depth: usize, t: Target) -> Option<Kind> {
        // The policy and expectation mostly repeat an earlier line's: kept
        // in a small memo, unless their slots are filled already (a second
        // one, which the scan below refuses).
        let (keyed, memo): (Keyed, _) = match t {
            Target::Policy => ((SH_POLICY, policy_slot), Some(0)),
            Target::Expectation => ((SH_EXPECTATION, expectation_slot), Some(1)),
            Target::Response(w) => ((SH_RESPONSE + w, response_slot), None),
        };
        let memo = memo.filter(|_| self.s.slots(t).iter().all(Option::is_none));
        let start = self.i;
        if let Some(m) = memo
            && self.recall_small(m, t, depth).is_some()
        {
            return Some(Kind::Obj);
        }
        self.object(depth, Some(keyed), |s, slot, _, d| {
            let start = s.i;
            let kind = s.value(d)?;
            match slot {
                Some(slot) => Self::put(&mut s.s.slots(t)[slot], kind, start, s.i).map(|()| true),
                None => Some(false),
            }
        })?;
        if let Some(m) = memo {
            self.keep_small(m, t, depth, start);
        }
        Some(Kind::Obj)
    }

    /// If the object at `self.i` is one small memo `m` keeps, its slots go
    /// to `t`'s (all empty) and `self.i` past it. The object is looked for
    /// as the text up to the first closing brace: one without braces
    /// inside, the usual kind.
    fn recall_small(&mut self, m: usize, t: Target, depth: usize) -> Option<()> {
        let b = self.b;
        let at = self.i;
        let end = at + memchr::memchr(b'}', &b[at..b.len().min(at + SMALL_MAX)])? + 1;
        let text = &b[at..end];
        let at_entry = small_entry(text);
        let entry = self.s.small[m].entries.get(at_entry)?;
        if entry.text != text || entry.depth != depth {
            return None;
        }
        let kept = entry.slots;
        let to = u32::try_from(at).ok()?;
        for (slot, kept) in self.s.slots(t).iter_mut().zip(kept) {
            *slot = kept.map(|v| v.moved(0, to));
        }
        self.s.small_at[m] = Some(at_entry);
        self.i = end;
        Some(())
    }

    /// Keep the object just scanned from `start`, with `t`'s slots (all
    /// filled by it), in small memo `m`.
    fn keep_small(&mut self, m: usize, t: Target, depth: usize, start: usize) {
        let (b, end) = (self.b, self.i);
        if end - start > SMALL_MAX {
            return;
        }
        let text = &b[start..end];
        let from = start as u32;
        let mut slots = [None; N_EXP];
        for (kept, slot) in slots.iter_mut().zip(self.s.slots(t).iter()) {
            *kept = slot.map(|v| v.moved(from, 0));
        }
        let entries = &mut self.s.small[m].entries;
        if entries.is_empty() {
            entries.resize_with(SMALL_ENTRIES, SmallEntry::default);
        }
        let at_entry = small_entry(text);
        let entry = &mut entries[at_entry];
        entry.text.clear();
        entry.text.extend_from_slice(text);
        entry.depth = depth;
        entry.slots = slots;
        entry.reading = Reading::Unread;
        self.s.small_at[m] = Some(at_entry);
    }

    /// `source` (`w` 0) or `variant` (`w` 1).
    fn side(&mut self, depth: usize, w: usize) -> Option<Kind> {
        self.object(depth, Some((SH_SIDE + w, side_slot)), |s, slot, _, d| {
            let Some(slot) = slot else {
                return s.value(d).map(|_| false);
            };
            let start = s.i;
            let kind = match (slot, s.peek()?) {
                (S_STATE, _) => s.state(d, w)?,
                (S_RESPONSE, b'{') => s.fields(d + 1, Target::Response(w))?,
                _ => s.value(d)?,
            };
            Self::put(&mut s.s.side[w][slot], kind, start, s.i).map(|()| true)
        })?;
        Some(Kind::Obj)
    }

    /// A side's state: skipped when its text repeats the other side's state
    /// (an object, array or string, which end where their text ends); an
    /// object has its members recorded.
    fn state(&mut self, depth: usize, w: usize) -> Option<Kind> {
        let b = self.b;
        let start = self.i;
        if let Some(o) = self.s.side[1 - w][S_STATE]
            && matches!(o.kind, Kind::Obj | Kind::Arr | Kind::Str | Kind::Esc)
        {
            let text = &b[o.start as usize..o.end as usize];
            if b[start..].starts_with(text) {
                self.i = start + text.len();
                return Some(o.kind);
            }
        }
        if self.peek()? != b'{' {
            return self.value(depth);
        }
        self.s.state_is_object[w] = true;
        let sc = &mut *self.s;
        if let Some(len) = sc.memo[w].recall(b, start, depth, &mut sc.members[w]) {
            let n = sc.members[w].len();
            sc.twins[w].resize(n, NONE);
            self.i = start + len;
            return Some(Kind::Obj);
        }
        let other = self.s.state_is_object[1 - w];
        // A side may spell its state twice (a line the fast path declines
        // later): only this object's members are kept.
        let first = self.s.members[w].len();
        let member = |s: &mut Self, _, (ks, ke): (usize, usize), d| {
            let vs = s.i;
            let twin = if other {
                s.same_as_other(w, (ks, ke))
            } else {
                None
            };
            if twin.is_none() {
                s.value(d)?;
            }
            let span = (ks as u32, ke as u32, vs as u32, s.i as u32);
            s.s.members[w].push(span);
            s.s.twins[w].push(twin.unwrap_or(NONE));
            Some(false)
        };
        let resumed = match self.s.side[1 - w][S_STATE] {
            Some(o) if other && first == 0 && o.kind == Kind::Obj => {
                self.take_leading(w, o, depth + 1)
            }
            _ => None,
        };
        match resumed {
            // After the members taken, at what follows the last one.
            Some(keys) => match self.token()? {
                b',' => {
                    self.i += 1;
                    self.members(depth + 1, None, keys, member)?;
                }
                b'}' => {
                    self.i += 1;
                    self.s.keys.truncate(keys.0);
                }
                _ => return None,
            },
            None => self.object(depth + 1, None, member)?,
        }
        let sc = &mut *self.s;
        sc.memo[w].keep(b, (start, self.i), depth, &sc.members[w][first..]);
        Some(Kind::Obj)
    }

    /// The leading members of the state object at `self.i`, side `w`'s,
    /// taken from the other side's state `o` (scanned before, an object at
    /// the same depth) where the two texts are the same: each member whose
    /// text, and the byte after it, lie within what the two share from
    /// their starts is that same valid member, with distinct keys, and the
    /// twin of the other's member in its place. Records them as the scan
    /// would, leaves `self.i` after the last, and gives the object's keys'
    /// start in `keys` and their bits (see [`Self::members`]); `None`,
    /// with nothing done, when not even the first member is shared.
    fn take_leading(&mut self, w: usize, o: Val, depth: usize) -> Option<(usize, u64)> {
        if depth > MAX_DEPTH {
            return None;
        }
        let b = self.b;
        let (os, oe) = (o.start as usize, o.end as usize);
        let start = self.i;
        let shared = os + common_prefix(&b[os..oe], &b[start..]);
        let others = &self.s.members[1 - w];
        // A member is taken if the byte after its value is shared too.
        let taken = others
            .iter()
            .take_while(|m| (m.3 as usize) < shared && (m.3 as usize) < oe)
            .count();
        if taken == 0 {
            return None;
        }
        let shift = u32::try_from(start.checked_sub(os)?).ok()?;
        u32::try_from(b.len()).ok()?;
        let base = self.s.keys.len();
        let mut seen = 0u64;
        for m in 0..taken {
            let (ks, ke, vs, ve) = self.s.members[1 - w][m];
            let (ks, ke) = ((ks + shift) as usize, (ke + shift) as usize);
            let (p, bit) = key_bit(b, ks, ke);
            seen |= bit;
            self.s.keys.push((p, ks as u32, ke as u32));
            self.s.members[w].push((ks as u32, ke as u32, vs + shift, ve + shift));
            self.s.twins[w].push(m as u32);
        }
        self.i = (self.s.members[1 - w][taken - 1].3 + shift) as usize;
        Some((base, seen))
    }

    /// Whether the value at `self.i`, of the state member keyed `key`, has
    /// the same text as that member's value in the other side's state
    /// (scanned before); if so, steps over it. The other's value is valid
    /// JSON at the same depth, so an identical text is an identical, valid
    /// value, provided it ends where the other's ended: objects, arrays
    /// and strings end with their text, and a number or literal must be
    /// followed by what may follow a member's value. Gives that member's
    /// index.
    fn same_as_other(&mut self, w: usize, (ks, ke): (usize, usize)) -> Option<u32> {
        let b = self.b;
        let key = &b[ks..ke];
        let others = &self.s.members[1 - w];
        let at = self.s.members[w].len();
        // Most often the member in the same place, key and value written
        // alike: one comparison from the key's opening quote to the value's
        // end (the same length up to the value means the same key).
        if let Some(&(oks, _, ovs, ove)) = others.get(at)
            && ovs - oks == (self.i - ks) as u32
        {
            let text = &b[oks as usize - 1..ove as usize];
            let end = ks - 1 + text.len();
            if ends_at(b, b[ovs as usize], end) && b[ks - 1..].starts_with(text) {
                self.i = end;
                return u32::try_from(at).ok();
            }
        }
        let same_key = |&(oks, oke, _, _): &MemberSpan| &b[oks as usize..oke as usize] == key;
        let found = match others.get(at) {
            Some(m) if same_key(m) => Some(at),
            _ => others.iter().position(same_key),
        };
        let o = found?;
        let (_, _, ovs, ove) = others[o];
        let text = &b[ovs as usize..ove as usize];
        let end = self.i + text.len();
        if ends_at(b, b[ovs as usize], end) && b[self.i..].starts_with(text) {
            self.i = end;
            u32::try_from(o).ok()
        } else {
            None
        }
    }
}

/// Whether a member's value that begins with `first`, copied from valid
/// text, would end at `b[end]` as it ended there: objects, arrays and
/// strings end with their text; a number or literal must be followed by
/// what may follow a member's value.
#[inline]
fn ends_at(b: &[u8], first: u8, end: usize) -> bool {
    matches!(first, b'{' | b'[' | b'"')
        || matches!(b.get(end), Some(b',' | b'}' | b' ' | b'\n' | b'\t' | b'\r'))
}

/// The kind of the string whose opening quote is `b[i]`, and where it ends
/// (past its closing quote). Refuses what serde_json refuses: raw control
/// characters, unknown escapes, bad `\u` digits; and, to stay clear of
/// serde_json's surrogate rules, any `\u` surrogate that is not a high one
/// followed by a low one.
#[inline(always)]
fn string_end(b: &[u8], i: usize) -> Option<(Kind, usize)> {
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
fn number_value(token: &[u8]) -> Option<f64> {
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

/// Read one line the fast way; `None` sends it to the slow path.
pub fn parse_fast(line: &str) -> Option<Fast<'_>> {
    u32::try_from(line.len()).ok()?;
    SCRATCH.with(|c| match c.try_borrow_mut() {
        Ok(mut scratch) => {
            scratch.reset();
            read(line, &mut scratch)
        }
        Err(_) => read(line, &mut Scratch::default()),
    })
}

/// Forget the states this thread's scans keep from line to line, so that
/// what follows reads as if on a fresh thread (for the fuzz targets, whose
/// inputs must each reproduce alone).
#[doc(hidden)]
pub fn forget_states() {
    SCRATCH.with(|c| {
        if let Ok(mut s) = c.try_borrow_mut() {
            s.memo = Default::default();
            s.small = Default::default();
            s.shapes = Default::default();
        }
    });
}

/// Whether the structural scan alone accepts `line`, for
/// `examples/stages.rs`.
#[doc(hidden)]
pub fn scan_only(line: &str) -> bool {
    u32::try_from(line.len()).is_ok()
        && SCRATCH.with(|c| {
            let mut s = c.borrow_mut();
            s.reset();
            Scan {
                b: line.as_bytes(),
                i: 0,
                s: &mut s,
            }
            .line()
            .is_some()
        })
}

fn read<'a>(line: &'a str, s: &mut Scratch) -> Option<Fast<'a>> {
    Scan {
        b: line.as_bytes(),
        i: 0,
        s: &mut *s,
    }
    .line()?;
    let r = Reader { line };
    let top = &s.top;
    // The ids are required strings: anything else is the slow path's error.
    let id = |v: Option<Val>| match v {
        Some(v) if matches!(v.kind, Kind::Str | Kind::Esc) => r.string(v),
        _ => None,
    };
    let case_id = id(top[T_CASE])?;
    let variant_id = id(top[T_VARIANT_ID])?;
    // Read only to check their type, as the slow path does.
    for slot in [T_LABEL, T_DATASET, T_TIMESTAMP, T_SETTINGS] {
        if let Some(v) = top[slot] {
            match v.kind {
                Kind::Str | Kind::Esc | Kind::Num | Kind::Null => {}
                _ => return None,
            }
        }
    }
    let family = r.text(top[T_FAMILY])?;
    let transformation = r.text(top[T_TRANSFORMATION])?;
    // Every field the fast path reads is written below, on every line; the
    // others keep their defaults (the fast path never sets them).
    let mut rec = s.spare.take().unwrap_or_default();
    set_text(&mut rec.family, family.as_deref());
    set_text(&mut rec.transformation, transformation.as_deref());
    rec.minimum_boundary_margin = r.number(top[T_MARGIN])?;
    let allowed = rec.allowed_changes.take().unwrap_or_default();
    rec.allowed_changes = r.strings(top[T_ALLOWED], allowed, &mut s.pool)?;
    rec.passed = r.boolean(top[T_PASSED])?;
    let reasons = std::mem::take(&mut rec.reasons);
    rec.reasons = r
        .strings(top[T_REASONS], reasons, &mut s.pool)?
        .unwrap_or_default();
    rec.repetition = r
        .number(top[T_REPETITION])?
        .and_then(|x| (x >= 0.0 && x.fract() == 0.0 && x < u64::MAX as f64).then_some(x as u64));
    let contract = r.text(top[T_CONTRACT])?;
    let schema = r.text(top[T_SCHEMA])?;
    let model = r.text(top[T_MODEL])?;

    rec.policy = match present(top[T_POLICY]) {
        Some(p) if p.kind == Kind::Obj => {
            let review = r.number(s.policy[0])?;
            let action = r.number(s.policy[1])?;
            let (review, action) = (review?, action?);
            if review > action {
                return None;
            }
            Some(Policy {
                review_threshold: review,
                action_threshold: action,
            })
        }
        Some(_) => return None,
        // Some runners put the thresholds at the top level.
        None => match (r.number(top[T_REVIEW])?, r.number(top[T_ACTION])?) {
            (Some(review), Some(action)) => Some(Policy {
                review_threshold: review,
                action_threshold: action,
            }),
            _ => None,
        },
    };
    rec.expectation = match present(top[T_EXPECTATION]) {
        Some(e) if e.kind == Kind::Obj => {
            let kept = s.small_at[1].and_then(|at| s.small[1].entries.get_mut(at));
            match kept.as_ref().map(|k| &k.reading) {
                Some(Reading::Read(e)) => e.clone(),
                Some(Reading::Declined) => return None,
                _ => {
                    let e = expectation(&r, &s.expectation);
                    if let Some(k) = kept {
                        k.reading = e.clone().map_or(Reading::Declined, Reading::Read);
                    }
                    e?
                }
            }
        }
        Some(_) => return None,
        None => None,
    };
    let src_route = r.route(top[T_SOURCE_ROUTE])?;
    let var_route = r.route(top[T_VARIANT_ROUTE])?;
    let mut questions = [None, None];
    let mut states = [None, None];
    // The only field warnings a line read here can have: a probability or
    // confidence outside [0, 1], in the slow path's words and order.
    rec.field_warnings.clear();
    for (w, slot, route) in [(0, T_SOURCE, src_route), (1, T_VARIANT, var_route)] {
        let (out, prefix) = if w == 0 {
            (&mut rec.source, "source.")
        } else {
            (&mut rec.variant, "variant.")
        };
        match present(top[slot]) {
            Some(v) if v.kind == Kind::Obj => {
                let warn = Warn {
                    prefix,
                    out: &mut rec.field_warnings,
                };
                let (state, question) = side(&r, &s.side[w], &s.response[w], out, warn)?;
                states[w] = state;
                questions[w] = question;
            }
            Some(_) => return None,
            // A side the line does not have, as the slow path leaves it.
            None => *out = Side::default(),
        }
        if out.route.is_none() {
            out.route = route;
        }
    }
    // Only equality of the questions matters to the derivation, and their
    // words only when they differ.
    let [src_q, var_q] = questions;
    match (src_q, var_q) {
        (Some(a), Some(b)) if a == b => {
            set_text(&mut rec.source.question, Some(""));
            set_text(&mut rec.variant.question, Some(""));
        }
        (a, b) => {
            set_text(&mut rec.source.question, a.as_deref());
            set_text(&mut rec.variant.question, b.as_deref());
        }
    }
    let members = |w: usize| {
        s.state_is_object[w].then(|| Members {
            line,
            spans: &s.members[w],
            twins: &s.twins[w],
        })
    };
    // Only a whole member that `allowed_changes` names can make the diff
    // needless for the validity.
    let declared = rec.allowed_changes.is_some();
    let permitted = |k: &str| declared && super::derive::member_permitted(&rec, k);
    let (a, b, state_diff) = diff_states(
        line,
        states[0],
        states[1],
        [members(0), members(1)],
        permitted,
    )?;
    rec.source.state = a;
    rec.variant.state = b;
    Some(Fast {
        case_id,
        variant_id,
        contract,
        schema,
        model,
        family,
        transformation,
        record: rec,
        state_diff,
    })
}

/// A field that is recorded: present and not `null`.
fn present(v: Option<Val>) -> Option<Val> {
    v.filter(|v| v.kind != Kind::Null)
}

/// Reads scanned values with the slow path's rules. Each returns `None` when
/// the slow path would warn (the line then goes to it), else whether the
/// field is recorded.
struct Reader<'a> {
    line: &'a str,
}

impl<'a> Reader<'a> {
    fn raw(&self, v: Val) -> &'a str {
        &self.line[v.start as usize..v.end as usize]
    }

    /// A string value's content, decoded.
    fn string(&self, v: Val) -> Option<Cow<'a, str>> {
        let raw = self.raw(v);
        match v.kind {
            Kind::Str => Some(Cow::Borrowed(&raw[1..raw.len() - 1])),
            Kind::Esc => serde_json::from_str::<String>(raw).ok().map(Cow::Owned),
            _ => None,
        }
    }

    /// A text field (a number would be shown as its JSON text: left to
    /// the slow path).
    fn text(&self, v: Option<Val>) -> Option<Option<Cow<'a, str>>> {
        match present(v) {
            None => Some(None),
            Some(v) => self.string(v).map(Some),
        }
    }

    fn number(&self, v: Option<Val>) -> Option<Option<f64>> {
        match present(v) {
            None => Some(None),
            Some(v) if v.kind == Kind::Num => number_value(self.raw(v).as_bytes()).map(Some),
            Some(_) => None,
        }
    }

    /// A probability or confidence in [0, 1]; one outside is not
    /// recorded, with the slow path's warning (its field is `warn`'s
    /// prefix, `within`, and the key as the line spells it).
    fn unit(&self, v: Option<Val>, warn: &mut Warn<'_>, within: &str) -> Option<Option<f64>> {
        match self.number(v)? {
            Some(x) if !(0.0..=1.0).contains(&x) => {
                let key = self.key_of(v?)?;
                warn.out.push(format!(
                    "`{}{within}{key}` is {x}, outside [0, 1]; treated as not recorded",
                    warn.prefix
                ));
                Some(None)
            }
            other => Some(other),
        }
    }

    /// The key of the member whose value is `v`: the scan refuses keys
    /// with escapes, so the key is the text between the two quotes before
    /// the colon before `v`.
    fn key_of(&self, v: Val) -> Option<&'a str> {
        let b = self.line.as_bytes();
        let blank = |c: &u8| matches!(c, b' ' | b'\n' | b'\t' | b'\r');
        let mut end = v.start as usize;
        while end > 0 && blank(&b[end - 1]) {
            end -= 1;
        }
        end = end.checked_sub(1).filter(|&e| b[e] == b':')?;
        while end > 0 && blank(&b[end - 1]) {
            end -= 1;
        }
        let close = end.checked_sub(1).filter(|&e| b[e] == b'"')?;
        let open = b[..close].iter().rposition(|&c| c == b'"')?;
        self.line.get(open + 1..close)
    }

    fn boolean(&self, v: Option<Val>) -> Option<Option<bool>> {
        match present(v).map(|v| v.kind) {
            None => Some(None),
            Some(Kind::True) => Some(Some(true)),
            Some(Kind::False) => Some(Some(false)),
            Some(_) => None,
        }
    }

    fn route(&self, v: Option<Val>) -> Option<Option<Route>> {
        match present(v) {
            None => Some(None),
            Some(v) => route(&self.string(v)?).map(Some),
        }
    }

    /// A list of strings, or one string as a list of one (an item that is
    /// not a string would be shown as its JSON text: left to the slow path).
    /// `out` is the list to fill (its strings go back to `pool` first), and
    /// `pool` the thread's spare strings, written over before any is
    /// allocated.
    fn strings(
        &self,
        v: Option<Val>,
        mut out: Vec<String>,
        pool: &mut Vec<String>,
    ) -> Option<Option<Vec<String>>> {
        for s in out.drain(..) {
            if pool.len() < POOL_MAX {
                pool.push(s);
            }
        }
        let v = match present(v) {
            None => return Some(None),
            Some(v) => v,
        };
        let mut push = |text: &str| {
            out.push(match pool.pop() {
                Some(mut s) => {
                    s.clear();
                    s.push_str(text);
                    s
                }
                None => text.to_string(),
            });
        };
        if matches!(v.kind, Kind::Str | Kind::Esc) {
            push(&self.string(v)?);
            return Some(Some(out));
        }
        if v.kind != Kind::Arr {
            return None;
        }
        // The array is valid JSON; read it again, string by string.
        let raw = self.raw(v);
        let b = raw.as_bytes();
        let item = Reader { line: raw };
        let mut i = 1;
        loop {
            match b.get(i)? {
                b' ' | b'\n' | b'\t' | b'\r' | b',' => i += 1,
                b']' => break,
                b'"' => {
                    let (kind, end) = string_end(b, i)?;
                    let text = item.string(Val {
                        kind,
                        start: i as u32,
                        end: end as u32,
                    })?;
                    push(&text);
                    i = end;
                }
                _ => return None,
            }
        }
        Some(Some(out))
    }
}

/// [`Route::parse`], without its lower-cased copy for the usual spellings.
fn route(s: &str) -> Option<Route> {
    match s {
        "action" | "act" => Some(Route::Action),
        "review" => Some(Route::Review),
        "pass" => Some(Route::Pass),
        _ => Route::parse(s),
    }
}

/// [`Outcome::parse`], without its normalised copy for the usual spellings.
fn outcome(s: &str) -> Outcome {
    match s {
        "ok" | "success" | "succeeded" | "completed" => Outcome::Ok,
        "timeout" | "timed-out" | "time-out" => Outcome::Timeout,
        "error" | "failed" | "failure" | "service-error" => Outcome::Error,
        "invalid-response" | "invalid" | "malformed" | "parse-error" => Outcome::InvalidResponse,
        _ => Outcome::parse(s),
    }
}

/// Where a side's field warnings go, and the prefix of their fields.
struct Warn<'w> {
    prefix: &'static str,
    out: &'w mut Vec<String>,
}

/// Write the side read from `slots` into `out` (its question and state are
/// left to the caller, who gets them), its warnings to `warn`.
fn side<'a>(
    r: &Reader<'a>,
    slots: &[Option<Val>; N_SIDE],
    response: &[Option<Val>; 2],
    out: &mut Side,
    mut warn: Warn<'_>,
) -> Option<(Option<Val>, Option<Cow<'a, str>>)> {
    let (p, c) = match present(slots[S_RESPONSE]) {
        Some(v) if v.kind == Kind::Obj => (
            r.unit(response[0], &mut warn, "response.")?,
            r.unit(response[1], &mut warn, "response.")?,
        ),
        Some(_) => return None,
        None => (None, None),
    };
    // Bare rows put the response fields on the side itself.
    let probability = match p {
        Some(p) => Some(p),
        None => r.unit(slots[S_PROBABILITY], &mut warn, "")?,
    };
    let confidence = match c {
        Some(c) => Some(c),
        None => r.unit(slots[S_CONFIDENCE], &mut warn, "")?,
    };
    out.probability = probability;
    out.confidence = confidence;
    out.route = r.route(slots[S_ROUTE])?;
    out.outcome = r.text(slots[S_OUTCOME])?.map(|o| outcome(&o));
    set_text(&mut out.error, r.text(slots[S_ERROR])?.as_deref());
    out.latency_ms = r.number(slots[S_LATENCY])?;
    set_text(&mut out.decision, r.text(slots[S_DECISION])?.as_deref());
    Some((present(slots[S_STATE]), r.text(slots[S_QUESTION])?))
}

fn expectation(r: &Reader<'_>, e: &[Option<Val>; N_EXP]) -> Option<Option<Expectation>> {
    let Some(kind) = r.text(e[E_KIND])? else {
        return Some(None);
    };
    // The usual spellings as they are; others normalised as the slow path does.
    let norm = match kind.as_ref() {
        k @ ("invariant" | "not-less-urgent" | "not-more-urgent" | "allowed-routes") => {
            Cow::Borrowed(k)
        }
        k => Cow::Owned(k.trim().to_ascii_lowercase().replace('_', "-")),
    };
    Some(Some(match norm.as_ref() {
        "invariant" => Expectation::Invariant {
            max_probability_drift: r.number(e[E_MAX_P])?,
            max_confidence_drift: r.number(e[E_MAX_C])?,
            require_same_route: r.boolean(e[E_SAME_ROUTE])?.unwrap_or(true),
        },
        "not-less-urgent" | "notlessurgent" => Expectation::NotLessUrgent {
            permitted_probability_movement: r.number(e[E_MOVEMENT])?.unwrap_or(0.0),
        },
        "not-more-urgent" | "notmoreurgent" => Expectation::NotMoreUrgent {
            permitted_probability_movement: r.number(e[E_MOVEMENT])?.unwrap_or(0.0),
        },
        "allowed-routes" | "allowedroutes" => {
            let mut routes = Vec::new();
            for n in r
                .strings(e[E_ROUTES], Vec::new(), &mut Vec::new())?
                .iter()
                .flatten()
            {
                // An unknown route is a warning: the slow path reports it.
                routes.push(route(n)?);
            }
            Expectation::AllowedRoutes {
                allowed_routes: routes,
            }
        }
        _ => Expectation::Unknown {
            kind: kind.into_owned(),
        },
    }))
}

/// The two states, and their diff when it was computed here: raw-equal
/// states have none; two objects that differ are left for [`state_diff`]
/// (`Diff::Later`). `None` when a state cannot be parsed.
type States = (Option<Value>, Option<Value>, Diff);

/// The diff of the two states, as the fast path leaves it.
#[derive(Debug)]
pub enum Diff {
    /// Made here (the entries), or left to the derivation, which diffs the
    /// parsed states (`None`).
    Done(Option<Vec<DiffEntry>>),
    /// Two objects that differ, to be diffed member by member by
    /// [`state_diff`] if something reads the diff. `covered`: every member
    /// that differs is permitted whole by the record's `allowed_changes`.
    Later { covered: bool },
}

fn diff_states(
    line: &str,
    a: Option<Val>,
    b: Option<Val>,
    members: [Option<Members<'_>>; 2],
    permitted: impl Fn(&str) -> bool,
) -> Option<States> {
    let both_null = || (Some(Value::Null), Some(Value::Null));
    let text = |v: Val| &line[v.start as usize..v.end as usize];
    match (a.map(text), b.map(text)) {
        (None, None) => Some((None, None, Diff::Done(None))),
        (Some(a), Some(b)) if a == b => {
            let (x, y) = both_null();
            Some((x, y, Diff::Done(Some(Vec::new()))))
        }
        (Some(a), Some(b)) => match members {
            [Some(x), Some(y)] => {
                let covered = members_covered(x, y, permitted);
                let (x, y) = both_null();
                Some((x, y, Diff::Later { covered }))
            }
            _ => Some((Some(full(a)?), Some(full(b)?), Diff::Done(None))),
        },
        (a, b) => {
            let one = |v: Option<&str>| match v {
                Some(v) => full(v).map(Some),
                None => Some(None),
            };
            Some((one(a)?, one(b)?, Diff::Done(None)))
        }
    }
}

impl Diff {
    /// The entries, made now if they were left for later (see
    /// [`state_diff`]: `line` is the line the thread read last).
    pub fn made(self, line: &str) -> Option<Vec<DiffEntry>> {
        match self {
            Diff::Done(d) => d,
            Diff::Later { .. } => state_diff(line),
        }
    }
}

/// Whether every member that differs between the two states (changed,
/// removed or added) is `permitted` whole.
fn members_covered(x: Members<'_>, y: Members<'_>, permitted: impl Fn(&str) -> bool) -> bool {
    let (px, py) = x.paired(y);
    let changed = (0..x.spans.len()).filter(|&i| !bit(px, i)).all(|i| {
        let k = x.key(i);
        y.find(k, i) == Some(x.value(i)) || permitted(k)
    });
    changed
        && (0..y.spans.len()).filter(|&j| !bit(py, j)).all(|j| {
            let k = y.key(j);
            x.find(k, j).is_some() || permitted(k)
        })
}

/// The diff of the two states of the line this thread read last, which
/// [`parse_fast`] left for later ([`Diff::Later`]); `None` if it cannot be
/// made (the line is then read the slow way). Call it before the thread
/// reads another line.
pub fn state_diff(line: &str) -> Option<Vec<DiffEntry>> {
    SCRATCH.with(|c| {
        let s = c.try_borrow().ok()?;
        if !(s.state_is_object[0] && s.state_is_object[1]) {
            return None;
        }
        let side = |w: usize| Members {
            line,
            spans: &s.members[w],
            twins: &s.twins[w],
        };
        diff_members(side(0), side(1))
    })
}

/// [`diff::diff_values`] of two `state` objects, from their members' raw
/// text: the same paths and kinds of change, in the same order, as the
/// diff of the parsed objects (see `diff::Walk::objects`), with no value
/// built: members whose text is equal are skipped, the others are diffed
/// where they lie in the line (see [`Raw`]), and the entries carry no
/// values, which the index does not keep.
fn diff_members(x: Members<'_>, y: Members<'_>) -> Option<Vec<DiffEntry>> {
    thread_local! {
        static NODES: std::cell::Cell<Vec<Node>> = const { std::cell::Cell::new(Vec::new()) };
    }
    // The nodes' buffer is kept for the thread's next line.
    let mut nodes = NODES.take();
    let out = diff_members_in(x, y, &mut nodes);
    nodes.clear();
    NODES.set(nodes);
    out
}

fn diff_members_in(
    x: Members<'_>,
    y: Members<'_>,
    nodes: &mut Vec<Node>,
) -> Option<Vec<DiffEntry>> {
    // Built only when some member differs.
    let mut root: Option<JsonPath> = None;
    let (nx, ny) = (x.spans.len(), y.spans.len());
    // A reorder is reported only when it is the whole story.
    let same_order = nx == ny
        && (0..nx)
            .all(|i| x.twins[i] == i as u32 || y.twins[i] == i as u32 || x.key(i) == y.key(i));
    if !same_order && nx == ny {
        let mut all_equal = true;
        for i in 0..nx {
            let v = x.value(i);
            match y.find(x.key(i), i) {
                Some(w) if w == v => {}
                Some(w) if texts_equal(v, w, nodes)? => {}
                _ => {
                    all_equal = false;
                    break;
                }
            }
        }
        if all_equal {
            return Some(vec![DiffEntry {
                path: JsonPath::root("state"),
                change: Change::Reordered {
                    before: Vec::new(),
                    after: Vec::new(),
                },
            }]);
        }
    }
    // Members the scan found with a twin (same key, same text) in the other
    // state have nothing to report; the others are looked up.
    let (px, py) = x.paired(y);
    let mut out = Vec::new();
    for i in (0..nx).filter(|&i| !bit(px, i)) {
        let (k, v) = (x.key(i), x.value(i));
        match y.find(k, i) {
            Some(w) if w == v => {}
            Some(w) => out.extend(diff_texts(state_root(&mut root), Some(k), v, w, nodes)?),
            None => out.push(DiffEntry {
                path: state_root(&mut root).key(k),
                change: Change::Removed {
                    before: Value::Null,
                },
            }),
        }
    }
    for j in (0..ny).filter(|&j| !bit(py, j)) {
        let k = y.key(j);
        if x.find(k, j).is_none() {
            out.push(DiffEntry {
                path: state_root(&mut root).key(k),
                change: Change::Added { after: Value::Null },
            });
        }
    }
    Some(out)
}

/// The members of one side's `state` object as the scan recorded them:
/// keys (never escaped: the scanner declines escaped keys) and raw values.
#[derive(Clone, Copy)]
struct Members<'a> {
    line: &'a str,
    spans: &'a [MemberSpan],
    twins: &'a [u32],
}

impl<'a> Members<'a> {
    fn key(&self, i: usize) -> &'a str {
        let (ks, ke, _, _) = self.spans[i];
        &self.line[ks as usize..ke as usize]
    }

    fn value(&self, i: usize) -> &'a str {
        let (_, _, vs, ve) = self.spans[i];
        &self.line[vs as usize..ve as usize]
    }

    /// The raw value of key `k`, looked for first at `near` and its
    /// neighbours (the other state's members mostly sit where they did, or
    /// one place off after a member was added or removed).
    fn find(&self, k: &str, near: usize) -> Option<&'a str> {
        let n = self.spans.len();
        [near, near.wrapping_sub(1), near + 1]
            .into_iter()
            .filter(|&i| i < n)
            .chain(0..n)
            .find(|&i| self.key(i) == k)
            .map(|i| self.value(i))
    }

    /// Which members of `self` and of `other` (bit `i` for member `i`, up
    /// to 128 members a side) have a twin on the other side.
    fn paired(&self, other: Members<'_>) -> (u128, u128) {
        let (mut a, mut b) = (0u128, 0u128);
        let mark = |twins: &[u32], mine: &mut u128, theirs: &mut u128, n_theirs: usize| {
            for (i, &t) in twins.iter().enumerate() {
                if t != NONE && i < 128 && (t as usize) < n_theirs.min(128) {
                    *mine |= 1 << i;
                    *theirs |= 1 << t;
                }
            }
        };
        mark(self.twins, &mut a, &mut b, other.spans.len());
        mark(other.twins, &mut b, &mut a, self.spans.len());
        (a, b)
    }
}

fn state_root(r: &mut Option<JsonPath>) -> &JsonPath {
    r.get_or_insert_with(|| JsonPath::root("state"))
}

/// Whether bit `i` of `m` is set (none past 128).
fn bit(m: u128, i: usize) -> bool {
    i < 128 && (m >> i) & 1 == 1
}

fn full(v: &str) -> Option<Value> {
    serde_json::from_str(v).ok()
}

/// Whether two scanned values are canonically equal ([`diff::canon_eq`]).
fn texts_equal(v: &str, w: &str, nodes: &mut Vec<Node>) -> Option<bool> {
    nodes.clear();
    match (lay_out(v, nodes), lay_out(w, nodes)) {
        (Some(a), Some(b)) => Some(raw_eq(Raw::new(v, nodes, a), Raw::new(w, nodes, b))),
        _ => Some(diff::canon_eq(&full(v)?, &full(w)?)),
    }
}

/// The diff of two scanned values at `root`, or under `key` there, without
/// their values.
fn diff_texts<'t>(
    root: &JsonPath,
    key: Option<&'t str>,
    v: &'t str,
    w: &'t str,
    nodes: &mut Vec<Node>,
) -> Option<Vec<DiffEntry>> {
    nodes.clear();
    match (lay_out(v, nodes), lay_out(w, nodes)) {
        (Some(a), Some(b)) => Some(diff::diff_trees_at(
            root,
            key,
            Raw::new(v, nodes, a),
            Raw::new(w, nodes, b),
            false,
        )),
        _ => {
            let path = key.map_or_else(|| root.clone(), |k| root.key(k));
            Some(diff::diff_values(&path, &full(v)?, &full(w)?))
        }
    }
}

/// No node.
const NONE: u32 = u32::MAX;

/// Past these, a value is parsed for the diff rather than laid out: the
/// raw diff finds a member by walking its object, which is only cheap for
/// objects of a modest size.
const MAX_CHILDREN: u32 = 256;
const MAX_NODES: usize = 16_384;

/// A value of a scanned text, laid out for the diff: its type, its span
/// (and its key's, as an object member) in the text, its first child and
/// the next child of its parent.
#[derive(Debug, Clone, Copy)]
struct Node {
    kind: Kind,
    start: u32,
    end: u32,
    key: (u32, u32),
    first: u32,
    next: u32,
    len: u32,
}

/// Lay out the value `text` (scanned, so valid) in `nodes`: the index of
/// its node, or `None` past [`MAX_CHILDREN`] or [`MAX_NODES`].
fn lay_out(text: &str, nodes: &mut Vec<Node>) -> Option<u32> {
    lay_out_at(text.as_bytes(), &mut 0, nodes, (0, 0))
}

fn skip_ws(b: &[u8], i: &mut usize) {
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = b.get(*i) {
        *i += 1;
    }
}

fn lay_out_at(b: &[u8], i: &mut usize, nodes: &mut Vec<Node>, key: (u32, u32)) -> Option<u32> {
    if nodes.len() >= MAX_NODES {
        return None;
    }
    skip_ws(b, i);
    let start = *i;
    let me = u32::try_from(nodes.len()).ok()?;
    let mut node = Node {
        kind: Kind::Null,
        start: start as u32,
        end: 0,
        key,
        first: NONE,
        next: NONE,
        len: 0,
    };
    nodes.push(node);
    // An object or an array is read on below, up to its closing byte.
    let (kind, close) = match *b.get(start)? {
        b'"' => {
            let (kind, end) = string_end(b, start)?;
            *i = end;
            (kind, None)
        }
        b'{' => (Kind::Obj, Some(b'}')),
        b'[' => (Kind::Arr, Some(b']')),
        literal @ (b't' | b'f' | b'n') => {
            let (kind, len) = match literal {
                b't' => (Kind::True, 4),
                b'f' => (Kind::False, 5),
                _ => (Kind::Null, 4),
            };
            *i += len;
            (kind, None)
        }
        _ => {
            *i = number_token(b, start)?.end;
            (Kind::Num, None)
        }
    };
    node.kind = kind;
    if let Some(close) = close {
        *i += 1;
        let mut last = NONE;
        loop {
            skip_ws(b, i);
            match *b.get(*i)? {
                c if c == close => {
                    *i += 1;
                    break;
                }
                b',' => {
                    *i += 1;
                    continue;
                }
                _ => {}
            }
            let key = if node.kind == Kind::Obj {
                let (_, end) = string_end(b, *i)?;
                let key = (*i as u32 + 1, end as u32 - 1);
                *i = end;
                skip_ws(b, i);
                *i += 1; // the colon
                key
            } else {
                (0, 0)
            };
            let child = lay_out_at(b, i, nodes, key)?;
            node.len += 1;
            if node.len > MAX_CHILDREN {
                return None;
            }
            if last == NONE {
                node.first = child;
            } else {
                nodes[last as usize].next = child;
            }
            last = child;
        }
    }
    node.end = *i as u32;
    nodes[me as usize] = node;
    Some(me)
}

/// A laid-out value of a scanned text, as [`diff::Tree`] reads it.
#[derive(Clone, Copy)]
struct Raw<'a> {
    text: &'a str,
    nodes: &'a [Node],
    at: u32,
}

impl<'a> Raw<'a> {
    fn new(text: &'a str, nodes: &'a [Node], at: u32) -> Self {
        Raw { text, nodes, at }
    }

    fn node(self) -> Node {
        self.nodes[self.at as usize]
    }

    fn raw(self) -> &'a str {
        let n = self.node();
        &self.text[n.start as usize..n.end as usize]
    }

    /// The children, with their keys for an object's.
    fn children(self) -> impl Iterator<Item = (&'a str, Raw<'a>)> {
        let mut next = self.node().first;
        std::iter::from_fn(move || {
            if next == NONE {
                return None;
            }
            let child = Raw { at: next, ..self };
            let n = child.node();
            next = n.next;
            Some((&self.text[n.key.0 as usize..n.key.1 as usize], child))
        })
    }

    /// A string's content, decoded.
    fn string(self) -> Option<Cow<'a, str>> {
        let n = self.node();
        Reader { line: self.text }.string(Val {
            kind: n.kind,
            start: n.start,
            end: n.end,
        })
    }

    /// A number, as serde_json reads it.
    fn number(self) -> Option<serde_json::Number> {
        serde_json::from_str(self.raw()).ok()
    }
}

/// [`diff::canon_eq`] of two laid-out values.
fn raw_eq(a: Raw<'_>, b: Raw<'_>) -> bool {
    if a.raw() == b.raw() {
        return true;
    }
    let (x, y) = (a.node(), b.node());
    match (x.kind, y.kind) {
        (Kind::Num, Kind::Num) => match (a.number(), b.number()) {
            (Some(p), Some(q)) => diff::number_eq(&p, &q),
            _ => false,
        },
        (Kind::Str | Kind::Esc, Kind::Str | Kind::Esc) => {
            // Equal texts were caught above: two plain strings differ.
            (x.kind == Kind::Esc || y.kind == Kind::Esc) && a.string() == b.string()
        }
        (Kind::Arr, Kind::Arr) => {
            x.len == y.len
                && a.children()
                    .zip(b.children())
                    .all(|(p, q)| raw_eq(p.1, q.1))
        }
        (Kind::Obj, Kind::Obj) => {
            x.len == y.len
                && a.children()
                    .all(|(k, v)| diff::Tree::get(b, k).is_some_and(|w| raw_eq(v, w)))
        }
        _ => false,
    }
}

impl<'a> diff::Tree<'a> for Raw<'a> {
    fn class(self) -> diff::Class {
        match self.node().kind {
            Kind::Obj => diff::Class::Object,
            Kind::Arr => diff::Class::Array,
            _ => diff::Class::Other,
        }
    }

    fn members(self) -> impl Iterator<Item = (&'a str, Self)> {
        let object = self.node().kind == Kind::Obj;
        self.children().filter(move |_| object)
    }

    fn get(self, key: &str) -> Option<Self> {
        self.members().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    fn elements(self) -> impl Iterator<Item = Self> {
        let array = self.node().kind == Kind::Arr;
        self.children().filter(move |_| array).map(|(_, v)| v)
    }

    fn len(self) -> usize {
        self.node().len as usize
    }

    fn same(self, other: Self) -> bool {
        // Equal text is an equal value, down to the order of its keys.
        self.raw() == other.raw()
    }

    fn canon_eq(self, other: Self) -> bool {
        raw_eq(self, other)
    }

    fn canon_text(self) -> String {
        diff::canon_text(&self.value())
    }

    fn as_id(self) -> Option<diff::ElementId<'a>> {
        match self.node().kind {
            Kind::Str | Kind::Esc => Some(diff::ElementId::string(self.string()?)),
            Kind::Num => Some(diff::ElementId::number(&self.number()?)),
            _ => None,
        }
    }

    fn value(self) -> Value {
        full(self.raw()).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usual_spellings_read_as_the_model_reads_them() {
        for s in [
            "action", "act", "review", "pass", "Action", " pass ", "REVIEW", "nope", "",
        ] {
            assert_eq!(route(s), Route::parse(s), "{s:?}");
        }
        for s in [
            "ok",
            "success",
            "succeeded",
            "completed",
            "timeout",
            "timed-out",
            "time-out",
            "error",
            "failed",
            "failure",
            "service-error",
            "invalid-response",
            "invalid",
            "malformed",
            "parse-error",
            "TIMED_OUT",
            " Ok",
            "weird",
        ] {
            assert_eq!(outcome(s), Outcome::parse(s), "{s:?}");
        }
    }

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

    #[test]
    fn huge_states_are_not_kept_from_line_to_line() {
        let small = br#"{"a":1}"#;
        let mut m = StateMemo::default();
        m.keep(small, (0, small.len()), 3, &[(2, 3, 5, 6)]);
        let mut out = Vec::new();
        assert_eq!(m.recall(br#"xx{"a":1}"#, 2, 3, &mut out), Some(small.len()));
        assert_eq!(out, [(4, 5, 7, 8)]);
        // Not at another depth.
        assert_eq!(m.recall(small, 0, 4, &mut out), None);
        let big = format!(r#"{{"a":"{}"}}"#, "x".repeat(MEMO_MAX));
        m.keep(big.as_bytes(), (0, big.len()), 3, &[]);
        assert_eq!(m.text.capacity(), 0, "the small one is let go too");
        assert_eq!(m.recall(big.as_bytes(), 0, 3, &mut out), None);
    }

    /// A record written over the line before's keeps none of its fields.
    #[test]
    fn a_recycled_record_keeps_nothing_of_the_line_before() {
        let full = r#"{"case_id":"c","variant_id":"v","family":"f","transformation":"t","minimum_boundary_margin":0.1,"allowed_changes":["state.a"],"passed":false,"reasons":["r1","r2"],"repetition":2,"policy":{"review_threshold":0.5,"action_threshold":0.9},"expectation":{"kind":"invariant","max_probability_drift":0.1},"source":{"question":"q","state":{"a":1},"probability":0.2,"confidence":0.9,"route":"pass","outcome":"ok","error":"e","latency_ms":5,"decision":"hold"},"variant":{"question":"q2","state":{"a":2},"probability":0.6,"confidence":1.5,"route":"review","error":"e2","decision":"x"}}"#;
        for bare in [
            r#"{"case_id":"c","variant_id":"v2"}"#,
            r#"{"case_id":"c","variant_id":"v3","source":{"probability":0.1},"variant":{"probability":0.2}}"#,
            r#"{"case_id":"c","variant_id":"v4","reasons":"one","source":{"question":"q"},"variant":{"question":"q"}}"#,
        ] {
            SCRATCH.with(|c| c.borrow_mut().spare = None);
            let want = format!("{:?}", parse_fast(bare).expect(bare).record);
            let f = parse_fast(full).expect("full");
            recycle(f.record);
            let got = format!("{:?}", parse_fast(bare).expect(bare).record);
            assert_eq!(got, want, "{bare}");
        }
    }

    /// A key taken whole because the line before wrote the same bytes after
    /// the same key reads as it reads on a fresh thread: any other key, a
    /// blank before the colon, an escape, a repeat is seen for what it is,
    /// and a field more or less leaves the keys after it known.
    #[test]
    fn keys_taken_from_the_line_before_are_those_keys() {
        let before = r#"{"case_id":"c","variant_id":"v","label":"l","x":1,"y":2,"family":"f","minimum_boundary_margin":0.1,"policy":{"review_threshold":0.5,"action_threshold":0.9},"expectation":{"kind":"invariant","max_probability_drift":0.1},"source":{"question":"q","state":{"a":1},"response":{"probability":0.2,"confidence":0.9},"route":"pass"},"variant":{"question":"q","state":{"a":2},"response":{"probability":0.6,"confidence":0.8},"route":"review"},"repetition":2}"#;
        // Each line, and whether it reads otherwise than `before` (the
        // label is not read; `review` is a spelling of `review_threshold`).
        let lines = [
            (before.to_string(), false),
            (before.replace(r#""label":"#, r#""labelx":"#), false),
            (before.replace(r#""label":"#, r#""labe":"#), false),
            (before.replace(r#""label":"#, r#""label" :"#), false),
            (before.replace(r#""label":"l","#, ""), false),
            (
                before.replace(r#""label":"l","#, r#""label":"l","z":0,"#),
                false,
            ),
            (
                before.replace(r#""review_threshold""#, r#""review""#),
                false,
            ),
            (before.replace(r#""case_id":"#, r#""case\u005fid":"#), true),
            (
                before.replace(r#""variant_id":"v""#, r#""case_id":"c""#),
                true,
            ),
            (before.replace(r#""y":2"#, r#""x":2"#), true),
            (
                before.replace("minimum_boundary_margin", "minimum_boundary_margix"),
                true,
            ),
            (
                before.replace("minimum_boundary_margin", "minimum_boundary_marginal"),
                true,
            ),
            (
                before.replace("max_probability_drift", "max_confidence_drift"),
                true,
            ),
            (
                before.replace(r#""probability":0.6"#, r#""probabilitx":0.6"#),
                true,
            ),
            (
                before.replace(
                    r#""confidence":0.8"#,
                    r#""confidence":0.8,"confidence":0.8"#,
                ),
                true,
            ),
            (
                before.replace(r#""repetition":2}"#, r#""repetitiom":2}"#),
                true,
            ),
            (before.replace(r#","repetition":2}"#, "}"), true),
        ];
        let read = |line: &str| format!("{:?}", parse_fast(line).map(|f| (f.record, f.state_diff)));
        forget_states();
        let base = read(before);
        for (line, differs) in &lines {
            forget_states();
            let fresh = read(line);
            assert_eq!(fresh != base, *differs, "{line}");
            forget_states();
            read(before);
            assert_eq!(read(line), fresh, "{line}");
            // And the other way about: the changed line teaches, the
            // line before is read after it.
            forget_states();
            read(line);
            assert_eq!(read(before), base, "after {line}");
        }
    }

    #[test]
    fn a_memo_that_keeps_missing_rests_then_tries_again() {
        let (a, b) = (br#"{"a":1}"#, br#"{"a":2}"#);
        let mut m = StateMemo::default();
        let mut out = Vec::new();
        // Each line keeps a state the next one does not repeat.
        for i in 0..MEMO_MISSES {
            m.keep(if i % 2 == 0 { a } else { b }, (0, 7), 3, &[]);
            let next = if i % 2 == 0 { b } else { a };
            assert_eq!(m.recall(next, 0, 3, &mut out), None);
        }
        // Resting: the repeat is not seen, and nothing is kept.
        m.keep(a, (0, 7), 3, &[]);
        assert!(m.text.is_empty());
        for _ in 0..MEMO_REST {
            assert_eq!(m.recall(a, 0, 3, &mut out), None);
        }
        // Then it keeps and recalls again; a hit clears the misses.
        m.keep(a, (0, 7), 3, &[]);
        assert_eq!(m.recall(a, 0, 3, &mut out), Some(7));
        assert_eq!(m.misses, 0);
        assert!(out.is_empty());
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

    /// Whether every key in `v` is written without escapes (the scanner
    /// declines lines with escaped keys, so the raw diff never sees one).
    fn plain_keys(v: &Value) -> bool {
        match v {
            Value::Object(m) => m.iter().all(|(k, x)| {
                serde_json::to_string(k).is_ok_and(|t| t.len() == k.len() + 2) && plain_keys(x)
            }),
            Value::Array(xs) => xs.iter().all(plain_keys),
            _ => true,
        }
    }

    /// Where and what kind each change is, in order.
    fn shape(d: &[DiffEntry]) -> Vec<(String, &'static str)> {
        d.iter()
            .map(|e| {
                let kind = match e.change {
                    Change::Added { .. } => "added",
                    Change::Removed { .. } => "removed",
                    Change::Changed { .. } => "changed",
                    Change::Reordered { .. } => "reordered",
                };
                (e.path.to_string(), kind)
            })
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]
        /// The diff of two texts laid out in place finds what the diff of
        /// their parsed values finds, in the same order, and compares them
        /// as it does; whitespace in either text changes nothing.
        #[test]
        fn laid_out_texts_diff_as_their_values_do(
            (a, b) in diff::tests::arb_pair(),
            pretty in proptest::prelude::any::<(bool, bool)>(),
        ) {
            proptest::prop_assume!(plain_keys(&a) && plain_keys(&b));
            let text = |v: &Value, pretty: bool| {
                if pretty {
                    serde_json::to_string_pretty(v).unwrap()
                } else {
                    serde_json::to_string(v).unwrap()
                }
            };
            let (ta, tb) = (text(&a, pretty.0), text(&b, pretty.1));
            let mut nodes = Vec::new();
            proptest::prop_assert!(lay_out(&ta, &mut nodes).is_some());
            let root = JsonPath::root("state");
            let want = diff::diff_values(&root, &a, &b);
            let got = diff_texts(&root, None, &ta, &tb, &mut nodes).unwrap();
            proptest::prop_assert_eq!(shape(&got), shape(&want));
            // One member of a state, as the fast path diffs them.
            let below = diff_texts(&root, Some("member"), &ta, &tb, &mut nodes).unwrap();
            let want = diff::diff_values(&root.key("member"), &a, &b);
            proptest::prop_assert_eq!(shape(&below), shape(&want));
            proptest::prop_assert_eq!(
                texts_equal(&ta, &tb, &mut nodes),
                Some(diff::canon_eq(&a, &b))
            );
        }
    }

    /// Texts that differ but spell one value: numbers by value, strings by
    /// what their escapes mean, objects in any key order, ids matched
    /// across spellings.
    #[test]
    fn spellings_of_one_value_are_equal() {
        let root = JsonPath::root("state");
        for (a, b, changes) in [
            ("1", "1.0", 0),
            ("[1, 2]", "[1.0,2e0]", 0),
            ("-0.5", "-5e-1", 0),
            (r#""Ab""#, r#""Ab""#, 0),
            (r#""Ab""#, r#""Ac""#, 1),
            (r#"{"x":1,"y":"\/"}"#, r#"{"y":"/","x":1.0}"#, 1),
            (r#"[{"id":1,"v":2}]"#, r#"[{"id":1.0,"v":2.0}]"#, 0),
            (r#"[{"id":1,"v":2}]"#, r#"[{"id":1.0,"v":3}]"#, 1),
            ("2", "3", 1),
            (r#"{"x":[1,{"y":true}]}"#, r#"{"x":[1,{"y":false}]}"#, 1),
        ] {
            let (va, vb): (Value, Value) = (full(a).unwrap(), full(b).unwrap());
            let mut nodes = Vec::new();
            assert_eq!(
                texts_equal(a, b, &mut nodes),
                Some(diff::canon_eq(&va, &vb)),
                "{a} {b}"
            );
            let got = diff_texts(&root, None, a, b, &mut nodes).unwrap();
            assert_eq!(
                shape(&got),
                shape(&diff::diff_values(&root, &va, &vb)),
                "{a} {b}"
            );
            assert_eq!(got.len(), changes, "{a} {b}");
        }
    }

    /// Past the sizes laid out in place, the values are parsed instead,
    /// with the same result.
    #[test]
    fn large_values_are_diffed_as_values() {
        let wide = |n: usize, changed: usize| {
            let m: serde_json::Map<String, Value> = (0..n)
                .map(|i| {
                    (
                        format!("k{i}"),
                        Value::from(if i == changed { 1 } else { 0 }),
                    )
                })
                .collect();
            Value::Object(m)
        };
        let (a, b) = (wide(300, 7), wide(300, 250));
        let (ta, tb) = (a.to_string(), b.to_string());
        let mut nodes = Vec::new();
        assert!(lay_out(&ta, &mut nodes).is_none());
        let root = JsonPath::root("state");
        let got = diff_texts(&root, None, &ta, &tb, &mut nodes).unwrap();
        assert_eq!(shape(&got), shape(&diff::diff_values(&root, &a, &b)));
        assert_eq!(shape(&got).len(), 2);
    }

    #[test]
    fn numbers_are_read_as_serde_json_reads_them() {
        let line = |x: &str| format!(r#"{{"case_id":"c","variant_id":"v","repetition":{x}}}"#);
        for x in ["0", "-0", "7", "3e0", "0.5e1", "1E2", "123456789", "1e-400"] {
            let fast = parse_fast(&line(x)).expect(x).record.repetition;
            let slow = super::super::record::map_record(serde_json::from_str(&line(x)).unwrap())
                .unwrap()
                .repetition;
            assert_eq!(fast, slow, "{x}");
        }
        for x in ["01", "1.", ".5", "-", "1e", "1e400", "--1", "0x10", "1e301"] {
            assert!(parse_fast(&line(x)).is_none(), "{x}");
        }
    }
}
