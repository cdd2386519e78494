//! Structural diff of a source request against its variant, plus inline word diffs.
//!
//! [`JsonPath`] names a place inside a JSON value (`state.evidence[1].status`) and
//! round-trips through `Display` / [`JsonPath::parse`]. [`diff_values`] walks two JSON
//! values and lists what changed as [`DiffEntry`]s (added / removed / changed, keys
//! reordered, elements moved); arrays are matched by element `id` when every element has
//! one, otherwise aligned with an LCS. Key order is not a change of facts; array order is. [`word_diff`] and [`changed_words`] explain how a string changed word by word.
//! Everything here is pure and terminal-free: rendering (and making text inert) is the
//! caller's job.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt::{self, Write as _};
use std::time::{Duration, Instant};

use serde_json::{Number, Value};
use similar::{Algorithm, ChangeTag, DiffTag, TextDiff};

/// Deepest level `diff_values` descends to; below it a differing subtree is one `Changed`.
pub const MAX_DEPTH: usize = 256;

// Myers is O((N+M)·D); a huge, wholly different array or string must not freeze the UI,
// so the alignment gets a time budget after which similar falls back to a coarser (still
// correct) diff.
const ARRAY_DIFF_BUDGET: Duration = Duration::from_millis(500);
const WORD_DIFF_BUDGET: Duration = Duration::from_millis(250);

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Seg {
    /// An object member, by key.
    Key(String),
    /// An array element, by position.
    Index(usize),
}

/// A path into a JSON value, displayed as `state.affectedUsers`, `state.evidence[1].status`, or `state["odd key"]` when a key is not a plain identifier (`[A-Za-z_][A-Za-z0-9_-]*`). The first segment is displayed without a leading dot.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct JsonPath(pub Vec<Seg>);

impl JsonPath {
    /// A one-segment path naming the root value, e.g. `state` or `question`.
    pub fn root(name: &str) -> Self {
        JsonPath(vec![Seg::Key(name.to_string())])
    }

    /// This path extended by an object key.
    pub fn key(&self, k: &str) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Key(k.to_string()));
        JsonPath(segs)
    }

    /// This path extended by an array index.
    pub fn index(&self, i: usize) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Index(i));
        JsonPath(segs)
    }

    /// True when `other` starts with every segment of `self` (a path is a prefix of itself).
    pub fn is_prefix_of(&self, other: &JsonPath) -> bool {
        other.0.starts_with(&self.0)
    }

    /// Parse the `Display` form back into a path (`a.b[2]["x y"]`); `None` if malformed.
    pub fn parse(s: &str) -> Option<JsonPath> {
        let bytes = s.as_bytes();
        let mut segs = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'[' => {
                    i += 1;
                    if bytes.get(i) == Some(&b'"') {
                        // Find the closing quote, skipping escaped characters. Escapes are
                        // ASCII and UTF-8 continuation bytes never equal `"` or `\`, so the
                        // slice below always lands on char boundaries.
                        let start = i;
                        let mut j = i + 1;
                        loop {
                            match bytes.get(j)? {
                                b'\\' => j += 2,
                                b'"' => break,
                                _ => j += 1,
                            }
                        }
                        let key: String = serde_json::from_str(s.get(start..=j)?).ok()?;
                        segs.push(Seg::Key(key));
                        i = j + 1;
                    } else {
                        let start = i;
                        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
                            i += 1;
                        }
                        let n: usize = s.get(start..i)?.parse().ok()?;
                        segs.push(Seg::Index(n));
                    }
                    if bytes.get(i) != Some(&b']') {
                        return None;
                    }
                    i += 1;
                }
                b'.' if !segs.is_empty() => {
                    let (key, next) = parse_ident(s, i + 1)?;
                    segs.push(Seg::Key(key));
                    i = next;
                }
                _ if segs.is_empty() => {
                    let (key, next) = parse_ident(s, i)?;
                    segs.push(Seg::Key(key));
                    i = next;
                }
                _ => return None,
            }
        }
        Some(JsonPath(segs))
    }
}

/// Read a plain identifier starting at byte `start`; returns it and the byte after it.
fn parse_ident(s: &str, start: usize) -> Option<(String, usize)> {
    let bytes = s.as_bytes();
    let mut end = start;
    while bytes
        .get(end)
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
    {
        end += 1;
    }
    let ident = s.get(start..end)?;
    is_ident(ident).then(|| (ident.to_string(), end))
}

/// Whether a key can be shown bare (`.key`) rather than quoted (`["key"]`).
fn is_ident(k: &str) -> bool {
    let mut chars = k.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Write `k` as a JSON string literal. Controls are escaped so a key never smuggles raw
/// control bytes into the UI; everything else stays readable (the UI makes it inert).
fn write_quoted(f: &mut impl fmt::Write, k: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in k.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if c.is_control() => write!(f, "\\u{:04x}", u32::from(c))?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(k) if is_ident(k) => {
                    if i > 0 {
                        f.write_char('.')?;
                    }
                    f.write_str(k)?;
                }
                Seg::Key(k) => {
                    f.write_char('[')?;
                    write_quoted(f, k)?;
                    f.write_char(']')?;
                }
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// What happened at one path.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The value exists only in the variant.
    Added {
        /// The variant's value.
        after: Value,
    },
    /// The value exists only in the source.
    Removed {
        /// The source's value.
        before: Value,
    },
    /// Both sides have a value here and they differ.
    Changed {
        /// The source's value.
        before: Value,
        /// The variant's value.
        after: Value,
    },
    /// An object's keys in another order, with the same values: canonical JSON does not
    /// order keys, so this is not a change of facts. Lists the keys in each order.
    Reordered {
        /// Keys in source order.
        before: Vec<String>,
        /// Keys in variant order.
        after: Vec<String>,
    },
    /// An array whose elements are matched by `id` holds the elements both sides share in
    /// another order. Array order is part of the value (seed 001), so this is a change,
    /// reported beside any change inside the elements. Lists the `id`s in each order.
    Moved {
        /// Ids in source order.
        before: Vec<String>,
        /// Ids in variant order.
        after: Vec<String>,
    },
}

/// One difference: where it is (an `Added` path locates the value in the variant, every other kind's in the source) and what happened there.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffEntry {
    /// Where the change is.
    pub path: JsonPath,
    /// What the change is.
    pub change: Change,
}

/// Structural diff of `a` (source) against `b` (variant) rooted at `root`.
pub fn diff_values(root: &JsonPath, a: &Value, b: &Value) -> Vec<DiffEntry> {
    diff_trees(root, a, b, true)
}

/// Whether a value is an object, an array, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Object,
    Array,
    Other,
}

/// A JSON value as the diff reads it: a [`Value`], or a value the loader
/// located in a line and diffs without building it (see `fast/raw_diff.rs`).
pub(crate) trait Tree<'a>: Copy {
    fn class(self) -> Class;
    /// An object's members in order; nothing for any other value.
    fn members(self) -> impl Iterator<Item = (&'a str, Self)>;
    /// An object's member.
    fn get(self, key: &str) -> Option<Self>;
    /// An array's elements in order; nothing for any other value.
    fn elements(self) -> impl Iterator<Item = Self>;
    /// How many members (object) or elements (array); 0 for the rest.
    fn len(self) -> usize;
    /// A shortcut: true only when the diff of the two is certainly empty.
    fn same(self, other: Self) -> bool;
    /// [`canon_eq`] of the two values.
    fn canon_eq(self, other: Self) -> bool;
    /// [`canon_text`] of the value.
    fn canon_text(self) -> String;
    /// The value as an element `id` (a string or a number).
    fn as_id(self) -> Option<ElementId<'a>>;
    /// The value itself, for the entries that carry it.
    fn value(self) -> Value;
}

impl<'a> Tree<'a> for &'a Value {
    fn class(self) -> Class {
        match self {
            Value::Object(_) => Class::Object,
            Value::Array(_) => Class::Array,
            _ => Class::Other,
        }
    }

    fn members(self) -> impl Iterator<Item = (&'a str, Self)> {
        self.as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v))
    }

    fn get(self, key: &str) -> Option<Self> {
        self.as_object()?.get(key)
    }

    fn elements(self) -> impl Iterator<Item = Self> {
        self.as_array().into_iter().flatten()
    }

    fn len(self) -> usize {
        match self {
            Value::Object(m) => m.len(),
            Value::Array(xs) => xs.len(),
            _ => 0,
        }
    }

    fn same(self, other: Self) -> bool {
        // Equal scalars have nothing to report (objects and arrays may
        // still differ in key order below).
        !self.is_object() && !self.is_array() && self == other
    }

    fn canon_eq(self, other: Self) -> bool {
        canon_eq(self, other)
    }

    fn canon_text(self) -> String {
        canon_text(self)
    }

    fn as_id(self) -> Option<ElementId<'a>> {
        match self {
            Value::String(s) => Some(ElementId::string(Cow::Borrowed(s))),
            Value::Number(n) => Some(ElementId::number(n)),
            _ => None,
        }
    }

    fn value(self) -> Value {
        self.clone()
    }
}

/// [`diff_values`] over any [`Tree`]. Without `values`, the entries carry
/// only where and what kind of change (their values are `null`, a reorder
/// or a move lists nothing): what the loader's index needs, built for less.
pub(crate) fn diff_trees<'a, T: Tree<'a>>(
    root: &JsonPath,
    a: T,
    b: T,
    values: bool,
) -> Vec<DiffEntry> {
    diff_trees_at(root, None, a, b, values)
}

/// [`diff_trees`] of two values found under `key` at `root` on both sides
/// (`root.key(key)` without building it first).
pub(crate) fn diff_trees_at<'a, T: Tree<'a>>(
    root: &JsonPath,
    key: Option<&'a str>,
    a: T,
    b: T,
    values: bool,
) -> Vec<DiffEntry> {
    let steps = || key.map(Step::Key).into_iter().collect::<Vec<_>>();
    let mut walk = Walk {
        root,
        a: steps(),
        b: steps(),
        values,
        out: Vec::new(),
    };
    walk.diff(a, b, usize::from(key.is_some()));
    walk.out
}

/// One step below the root, borrowed from the values being diffed.
#[derive(Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The diff's walk: where it is on both sides (array elements matched
/// across sides can sit at different indices, and an `Added` entry must
/// resolve in the variant), and what it found.
struct Walk<'a, 'r> {
    root: &'r JsonPath,
    a: Vec<Step<'a>>,
    b: Vec<Step<'a>>,
    values: bool,
    out: Vec<DiffEntry>,
}

impl<'a> Walk<'a, '_> {
    /// The path on one side (`variant`: the variant's), one step further
    /// when `then` is given.
    fn path(&self, variant: bool, then: Option<Step<'a>>) -> JsonPath {
        let steps = if variant { &self.b } else { &self.a };
        let mut segs = Vec::with_capacity(self.root.0.len() + steps.len() + 1);
        segs.extend(self.root.0.iter().cloned());
        segs.extend(steps.iter().chain(then.as_ref()).map(|s| match *s {
            Step::Key(k) => Seg::Key(k.to_string()),
            Step::Index(i) => Seg::Index(i),
        }));
        JsonPath(segs)
    }

    fn value<T: Tree<'a>>(&self, v: T) -> Value {
        if self.values { v.value() } else { Value::Null }
    }

    fn push(&mut self, path: JsonPath, change: Change) {
        self.out.push(DiffEntry { path, change });
    }

    fn changed<T: Tree<'a>>(&mut self, a: T, b: T) {
        let change = Change::Changed {
            before: self.value(a),
            after: self.value(b),
        };
        self.push(self.path(false, None), change);
    }

    fn removed<T: Tree<'a>>(&mut self, at: Step<'a>, v: T) {
        let change = Change::Removed {
            before: self.value(v),
        };
        self.push(self.path(false, Some(at)), change);
    }

    fn added<T: Tree<'a>>(&mut self, at: Step<'a>, v: T) {
        let change = Change::Added {
            after: self.value(v),
        };
        self.push(self.path(true, Some(at)), change);
    }

    fn reordered(
        &mut self,
        before: impl Iterator<Item = String>,
        after: impl Iterator<Item = String>,
    ) {
        let change = if self.values {
            Change::Reordered {
                before: before.collect(),
                after: after.collect(),
            }
        } else {
            Change::Reordered {
                before: Vec::new(),
                after: Vec::new(),
            }
        };
        self.push(self.path(false, None), change);
    }

    fn moved(&mut self, before: impl Iterator<Item = String>, after: impl Iterator<Item = String>) {
        let change = if self.values {
            Change::Moved {
                before: before.collect(),
                after: after.collect(),
            }
        } else {
            Change::Moved {
                before: Vec::new(),
                after: Vec::new(),
            }
        };
        self.push(self.path(false, None), change);
    }

    /// Diff `a` and `b`, which sit at the current steps.
    fn diff<T: Tree<'a>>(&mut self, a: T, b: T, depth: usize) {
        if depth >= MAX_DEPTH {
            // Bounded recursion: hostile or pathological input must not blow the stack.
            if !a.canon_eq(b) {
                self.changed(a, b);
            }
            return;
        }
        match (a.class(), b.class()) {
            (Class::Object, Class::Object) => self.objects(a, b, depth),
            (Class::Array, Class::Array) => self.arrays(a, b, depth),
            _ => {
                if !a.canon_eq(b) {
                    self.changed(a, b);
                }
            }
        }
    }

    /// Diff the two values one step further on both sides.
    fn below<T: Tree<'a>>(&mut self, sa: Step<'a>, sb: Step<'a>, a: T, b: T, depth: usize) {
        self.a.push(sa);
        self.b.push(sb);
        self.diff(a, b, depth + 1);
        self.a.pop();
        self.b.pop();
    }

    fn objects<T: Tree<'a>>(&mut self, x: T, y: T, depth: usize) {
        // A reorder is only worth reporting when it is the whole story at this level; when
        // anything else changed, the real changes are what the reviewer needs to see. The
        // cheap order check goes first so the common unreordered case skips the deep compare.
        let reordered_only = !x.members().map(|m| m.0).eq(y.members().map(|m| m.0))
            && x.len() == y.len()
            && x.members()
                .all(|(k, v)| y.get(k).is_some_and(|w| v.canon_eq(w)));
        if reordered_only {
            let keys = |t: T| t.members().map(|(k, _)| k.to_string());
            self.reordered(keys(x), keys(y));
            return;
        }
        // Otherwise recurse, even when canonically equal: children may differ in key order.
        for (k, v) in x.members() {
            match y.get(k) {
                Some(w) if v.same(w) => {}
                Some(w) => self.below(Step::Key(k), Step::Key(k), v, w, depth),
                None => self.removed(Step::Key(k), v),
            }
        }
        for (k, w) in y.members() {
            if x.get(k).is_none() {
                self.added(Step::Key(k), w);
            }
        }
    }

    fn arrays<T: Tree<'a>>(&mut self, a: T, b: T, depth: usize) {
        let x: Vec<T> = a.elements().collect();
        let y: Vec<T> = b.elements().collect();
        match (element_ids(&x), element_ids(&y)) {
            (Some(ix), Some(iy)) => self.by_id(&x, &y, &ix, &iy, depth),
            _ => self.by_lcs(&x, &y, depth),
        }
    }

    fn by_id<T: Tree<'a>>(
        &mut self,
        x: &[T],
        y: &[T],
        ix: &[ElementId<'_>],
        iy: &[ElementId<'_>],
        depth: usize,
    ) {
        let pos_x = Positions::of(ix);
        let pos_y = Positions::of(iy);

        // Array order is part of the value (seed 001): when the elements both
        // sides share sit in another order, that is a change, reported beside
        // whatever else changed.
        let mut last = None;
        let moved = !ix.iter().filter_map(|id| pos_y.get(id.key())).all(|j| {
            let ascending = last.is_none_or(|l| j > l);
            last = Some(j);
            ascending
        });
        if moved {
            self.moved(
                ix.iter().map(|id| id.label.to_string()),
                iy.iter().map(|id| id.label.to_string()),
            );
        }
        for (i, (id, v)) in ix.iter().zip(x).enumerate() {
            match pos_y.get(id.key()).and_then(|j| Some((j, y.get(j)?))) {
                Some((j, w)) => self.below(Step::Index(i), Step::Index(j), *v, *w, depth),
                None => self.removed(Step::Index(i), *v),
            }
        }
        for (j, (id, w)) in iy.iter().zip(y).enumerate() {
            if pos_x.get(id.key()).is_none() {
                self.added(Step::Index(j), *w);
            }
        }
    }

    fn by_lcs<T: Tree<'a>>(&mut self, x: &[T], y: &[T], depth: usize) {
        let tx: Vec<String> = x.iter().map(|v| v.canon_text()).collect();
        let ty: Vec<String> = y.iter().map(|v| v.canon_text()).collect();
        if tx == ty {
            return;
        }
        // Myers breaks ties by direction, so diff(a, b) and diff(b, a) could align equal
        // elements differently. Always running it in one canonical direction and mirroring
        // the result keeps "swap the sides" a pure swap of Added and Removed.
        let deadline = Instant::now().checked_add(ARRAY_DIFF_BUDGET);
        let flip = tx > ty;
        let ops = if flip {
            similar::capture_diff_slices_deadline(Algorithm::Myers, &ty, &tx, deadline)
        } else {
            similar::capture_diff_slices_deadline(Algorithm::Myers, &tx, &ty, deadline)
        };

        // Every stretch between two equal runs is one region: pair its elements up position by
        // position (so an edited element reads as a change, not as remove + add) and report
        // the leftovers as removed / added.
        let mut region: Option<(std::ops::Range<usize>, std::ops::Range<usize>)> = None;
        for op in &ops {
            let (ra, rb) = if flip {
                (op.new_range(), op.old_range())
            } else {
                (op.old_range(), op.new_range())
            };
            if op.tag() == DiffTag::Equal {
                if let Some((ga, gb)) = region.take() {
                    self.region(x, y, ga, gb, depth);
                }
                continue;
            }
            region = Some(match region.take() {
                None => (ra, rb),
                Some((ga, gb)) => (
                    ga.start.min(ra.start)..ga.end.max(ra.end),
                    gb.start.min(rb.start)..gb.end.max(rb.end),
                ),
            });
        }
        if let Some((ga, gb)) = region {
            self.region(x, y, ga, gb, depth);
        }
    }

    fn region<T: Tree<'a>>(
        &mut self,
        x: &[T],
        y: &[T],
        ra: std::ops::Range<usize>,
        rb: std::ops::Range<usize>,
        depth: usize,
    ) {
        let paired = ra.len().min(rb.len());
        for k in 0..paired {
            let (i, j) = (ra.start + k, rb.start + k);
            if let (Some(v), Some(w)) = (x.get(i), y.get(j)) {
                self.below(Step::Index(i), Step::Index(j), *v, *w, depth);
            }
        }
        for i in ra.start + paired..ra.end {
            if let Some(v) = x.get(i) {
                self.removed(Step::Index(i), *v);
            }
        }
        for j in rb.start + paired..rb.end {
            if let Some(w) = y.get(j) {
                self.added(Step::Index(j), *w);
            }
        }
    }
}

/// An element's `id`: its key matches across sides (1 and 1.0 match, "1" and 1 do not),
/// `label` is what a reorder lists.
pub(crate) struct ElementId<'a> {
    number: bool,
    /// A string id's text, a number's canonical text.
    text: Cow<'a, str>,
    label: Cow<'a, str>,
}

impl<'a> ElementId<'a> {
    pub(crate) fn string(s: Cow<'a, str>) -> ElementId<'a> {
        ElementId {
            number: false,
            label: s.clone(),
            text: s,
        }
    }

    pub(crate) fn number(n: &Number) -> ElementId<'a> {
        ElementId {
            number: true,
            text: Cow::Owned(canon_number(n)),
            label: Cow::Owned(n.to_string()),
        }
    }

    fn key(&self) -> (bool, &str) {
        (self.number, &self.text)
    }
}

/// Where each id sits in its array: found by a walk in a short array, by a
/// table in a long one.
enum Positions<'i> {
    Few(&'i [ElementId<'i>]),
    Many(HashMap<(bool, &'i str), usize>),
}

impl<'i> Positions<'i> {
    const FEW: usize = 16;

    fn of(ids: &'i [ElementId<'i>]) -> Self {
        if ids.len() <= Self::FEW {
            Positions::Few(ids)
        } else {
            Positions::Many(
                ids.iter()
                    .enumerate()
                    .map(|(i, id)| (id.key(), i))
                    .collect(),
            )
        }
    }

    fn get(&self, key: (bool, &str)) -> Option<usize> {
        match self {
            Positions::Few(ids) => ids.iter().position(|id| id.key() == key),
            Positions::Many(m) => m.get(&key).copied(),
        }
    }
}

/// The ids of an array whose elements are all objects with a unique string or numeric
/// `id`; `None` when id matching would be ambiguous or impossible.
fn element_ids<'a, T: Tree<'a>>(xs: &[T]) -> Option<Vec<ElementId<'a>>> {
    let mut ids: Vec<ElementId<'a>> = Vec::with_capacity(xs.len());
    let mut seen: Option<HashSet<(bool, Cow<'a, str>)>> = None;
    for x in xs {
        if x.class() != Class::Object {
            return None;
        }
        let id = x.get("id")?.as_id()?;
        let repeated = if ids.len() < Positions::FEW {
            ids.iter().any(|p| p.key() == id.key())
        } else {
            let seen = seen
                .get_or_insert_with(|| ids.iter().map(|p| (p.number, p.text.clone())).collect());
            !seen.insert((id.number, id.text.clone()))
        };
        if repeated {
            return None;
        }
        ids.push(id);
    }
    Some(ids)
}

/// Canonical equality, ignoring object key order and comparing numbers by value (`1` equals `1.0`).
pub fn canon_eq(a: &Value, b: &Value) -> bool {
    // An explicit stack rather than recursion: any depth is safe.
    let mut stack = vec![(a, b)];
    while let Some((a, b)) = stack.pop() {
        match (a, b) {
            (Value::Null, Value::Null) => {}
            (Value::Bool(p), Value::Bool(q)) if p == q => {}
            (Value::Number(p), Value::Number(q)) if number_eq(p, q) => {}
            (Value::String(p), Value::String(q)) if p == q => {}
            (Value::Array(p), Value::Array(q)) if p.len() == q.len() => {
                stack.extend(p.iter().zip(q));
            }
            (Value::Object(p), Value::Object(q)) if p.len() == q.len() => {
                // Keys are unique, so equal sizes plus every key of `p` in `q` means
                // equal key sets.
                for (k, v) in p {
                    match q.get(k) {
                        Some(w) => stack.push((v, w)),
                        None => return false,
                    }
                }
            }
            _ => return false,
        }
    }
    true
}

pub(crate) fn number_eq(p: &Number, q: &Number) -> bool {
    match (p.as_f64(), q.as_f64()) {
        (Some(x), Some(y)) if p.is_f64() || q.is_f64() => x == y,
        _ => p == q,
    }
}

/// A number's canonical text: integral values print as integers whatever their JSON
/// spelling, so `1` and `1.0` get the same text.
fn canon_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    match n.as_f64() {
        // Below 1e20 an integral f64 converts to i128 exactly.
        Some(f) if f.fract() == 0.0 && f.abs() < 1e20 => (f as i128).to_string(),
        Some(f) => format!("{f:?}"),
        None => n.to_string(),
    }
}

/// Canonical text of a value (sorted keys, canonical numbers), the same for two values only if they are canonically equal.
pub fn canon_text(v: &Value) -> String {
    // An explicit stack rather than recursion: any depth is safe.
    enum Tok<'a> {
        Val(&'a Value),
        Lit(&'static str),
        Key(&'a str),
    }
    let mut out = String::new();
    let mut stack = vec![Tok::Val(v)];
    while let Some(tok) = stack.pop() {
        match tok {
            Tok::Lit(s) => out.push_str(s),
            // Debug escaping is reversible, which is all a canonical key needs.
            Tok::Key(k) => {
                let _ = write!(out, "{k:?}:");
            }
            Tok::Val(Value::Null) => out.push_str("null"),
            Tok::Val(Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
            Tok::Val(Value::Number(n)) => out.push_str(&canon_number(n)),
            Tok::Val(Value::String(s)) => {
                let _ = write!(out, "{s:?}");
            }
            Tok::Val(Value::Array(xs)) => {
                out.push('[');
                stack.push(Tok::Lit("]"));
                for (i, x) in xs.iter().enumerate().rev() {
                    stack.push(Tok::Val(x));
                    if i > 0 {
                        stack.push(Tok::Lit(","));
                    }
                }
            }
            Tok::Val(Value::Object(m)) => {
                out.push('{');
                stack.push(Tok::Lit("}"));
                let mut entries: Vec<(&String, &Value)> = m.iter().collect();
                entries.sort_by(|p, q| p.0.cmp(q.0));
                for (i, (k, x)) in entries.into_iter().enumerate().rev() {
                    stack.push(Tok::Val(x));
                    stack.push(Tok::Key(k));
                    if i > 0 {
                        stack.push(Tok::Lit(","));
                    }
                }
            }
        }
    }
    out
}

/// Resolve a path inside a value whose own root is `root` (the first segments of `path` must equal `root`).
pub fn resolve<'a>(root: &JsonPath, v: &'a Value, path: &JsonPath) -> Option<&'a Value> {
    let rest = path.0.strip_prefix(root.0.as_slice())?;
    let mut cur = v;
    for seg in rest {
        cur = match (seg, cur) {
            (Seg::Key(k), Value::Object(m)) => m.get(k)?,
            (Seg::Index(i), Value::Array(xs)) => xs.get(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// A piece of an inline word diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WordKind {
    /// Present in both strings.
    Same,
    /// Only in the source string.
    Removed,
    /// Only in the variant string.
    Added,
}

/// A run of text with one [`WordKind`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordSeg {
    /// Whether the text is shared, removed or added.
    pub kind: WordKind,
    /// The text itself (never empty).
    pub text: String,
}

/// Inline word diff of two strings (similar's TextDiff::from_words or configured equivalent); concatenating Same+Removed gives `a`, Same+Added gives `b`; adjacent segments of the same kind are merged.
pub fn word_diff(a: &str, b: &str) -> Vec<WordSeg> {
    // Raw token diffs read badly: "What is" → "Estimate" comes out as two edits around a
    // shared space. So each changed stretch is emitted as removed text then added text, a
    // whitespace-only equal token between two changes is folded into the edit, and
    // whitespace common to both sides of an edit is moved back out of it.
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(WORD_DIFF_BUDGET)
        .diff_words(a, b);
    let raw: Vec<(ChangeTag, &str)> = diff
        .iter_all_changes()
        .map(|c| (c.tag(), c.value()))
        .collect();

    // Collect alternating (same, removed, added) stretches. A whitespace-only equal token
    // sandwiched between changes belongs to both sides of the surrounding edit.
    let mut out: Vec<WordSeg> = Vec::new();
    let mut removed = String::new();
    let mut added = String::new();
    for (i, &(tag, text)) in raw.iter().enumerate() {
        match tag {
            ChangeTag::Delete => removed.push_str(text),
            ChangeTag::Insert => added.push_str(text),
            ChangeTag::Equal => {
                let sandwiched = i > 0
                    && raw[i - 1].0 != ChangeTag::Equal
                    && raw.get(i + 1).is_some_and(|n| n.0 != ChangeTag::Equal)
                    && text.chars().all(char::is_whitespace);
                if sandwiched {
                    removed.push_str(text);
                    added.push_str(text);
                } else {
                    flush_edit(&mut out, &mut removed, &mut added);
                    push_word(&mut out, WordKind::Same, text);
                }
            }
        }
    }
    flush_edit(&mut out, &mut removed, &mut added);
    out
}

/// Emit one edit (removed then added), moving whitespace both sides share out of it.
fn flush_edit(out: &mut Vec<WordSeg>, removed: &mut String, added: &mut String) {
    let r = std::mem::take(removed);
    let a = std::mem::take(added);
    if r.is_empty() && a.is_empty() {
        return;
    }
    let lead = common_ws(r.chars(), a.chars());
    let trail = common_ws(r[lead..].chars().rev(), a[lead..].chars().rev());
    push_word(out, WordKind::Same, &r[..lead]);
    push_word(out, WordKind::Removed, &r[lead..r.len() - trail]);
    push_word(out, WordKind::Added, &a[lead..a.len() - trail]);
    push_word(out, WordKind::Same, &r[r.len() - trail..]);
}

/// Byte length of the whitespace run both iterators start with.
fn common_ws(x: impl Iterator<Item = char>, y: impl Iterator<Item = char>) -> usize {
    x.zip(y)
        .take_while(|(p, q)| p == q && p.is_whitespace())
        .map(|(p, _)| p.len_utf8())
        .sum()
}

fn push_word(out: &mut Vec<WordSeg>, kind: WordKind, text: &str) {
    if text.is_empty() {
        return;
    }
    match out.last_mut() {
        Some(last) if last.kind == kind => last.text.push_str(text),
        _ => out.push(WordSeg {
            kind,
            text: text.to_string(),
        }),
    }
}

/// The words that changed, as "removed → added" snippets, for one-line summaries like `"What is" → "Estimate"`.
pub fn changed_words(a: &str, b: &str) -> Vec<(String, String)> {
    // One snippet pair per edit; a pure insertion has an empty removed side and vice
    // versa. Surrounding whitespace is trimmed unless the edit is whitespace only.
    let mut out = Vec::new();
    let mut edit: Option<(String, String)> = None;
    for seg in word_diff(a, b) {
        match seg.kind {
            WordKind::Same => out.extend(edit.take().map(trim_edit)),
            WordKind::Removed => edit.get_or_insert_default().0.push_str(&seg.text),
            WordKind::Added => edit.get_or_insert_default().1.push_str(&seg.text),
        }
    }
    out.extend(edit.map(trim_edit));
    out
}

fn trim_edit((r, a): (String, String)) -> (String, String) {
    let (tr, ta) = (r.trim(), a.trim());
    if tr.is_empty() && ta.is_empty() {
        (r, a)
    } else {
        (tr.to_string(), ta.to_string())
    }
}

#[cfg(test)]
pub(crate) mod tests;
