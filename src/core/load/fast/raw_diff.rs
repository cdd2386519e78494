//! The raw diff of the two states: their members compared as text where
//! they lie in the line, and those that differ laid out in place ([`Raw`])
//! and walked by the same diff as parsed values ([`diff::Tree`]).

use std::borrow::Cow;
use std::cell::Cell;

use serde_json::Value;

use crate::core::diff::{self, Change, DiffEntry, JsonPath};

use super::scan::{number_token, string_content, string_end};
use super::span::{Kind, Member, NONE, Span, Val};

/// The two states, and their diff when it was computed here: raw-equal
/// states have none; two objects that differ are left for
/// [`Parsed::state_diff`](super::Parsed::state_diff) (`Diff::Later`).
/// `None` when a state cannot be parsed.
type States = (Option<Value>, Option<Value>, Diff);

/// The diff of the two states, as the fast path leaves it.
#[derive(Debug)]
pub enum Diff {
    /// Made here (the entries), or left to the derivation, which diffs the
    /// parsed states (`None`).
    Done(Option<Vec<DiffEntry>>),
    /// Two objects that differ, to be diffed member by member by
    /// [`Parsed::state_diff`](super::Parsed::state_diff) if something reads
    /// the diff. `covered`: every member that differs is permitted whole by
    /// the record's `allowed_changes`.
    Later { covered: bool },
}

pub(super) fn diff_states(
    line: &str,
    a: Option<Val>,
    b: Option<Val>,
    members: [Option<Members<'_>>; 2],
    permitted: impl Fn(&str) -> bool,
) -> Option<States> {
    let both_null = || (Some(Value::Null), Some(Value::Null));
    let text = |v: Val| v.span.of(line);
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

/// [`diff::diff_values`] of two `state` objects, from their members' raw
/// text: the same paths and kinds of change, in the same order, as the
/// diff of the parsed objects (see `diff::Walk::objects`), with no value
/// built: members whose text is equal are skipped, the others are diffed
/// where they lie in the line (see [`Raw`]), and the entries carry no
/// values, which the index does not keep. `nodes` is a buffer kept for
/// the reader's next line.
pub(super) fn diff_members(
    x: Members<'_>,
    y: Members<'_>,
    nodes: &Cell<Vec<Node>>,
) -> Option<Vec<DiffEntry>> {
    let mut buf = nodes.take();
    let out = diff_members_in(x, y, &mut buf);
    buf.clear();
    nodes.set(buf);
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
pub(super) struct Members<'a> {
    pub(super) line: &'a str,
    pub(super) spans: &'a [Member],
    pub(super) twins: &'a [u32],
}

impl<'a> Members<'a> {
    fn key(&self, i: usize) -> &'a str {
        self.spans[i].key.of(self.line)
    }

    fn value(&self, i: usize) -> &'a str {
        self.spans[i].value.of(self.line)
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

/// Past these, a value is parsed for the diff rather than laid out: the
/// raw diff finds a member by walking its object, which is only cheap for
/// objects of a modest size.
const MAX_CHILDREN: u32 = 256;
const MAX_NODES: usize = 16_384;

/// A value of a scanned text, laid out for the diff: its type, its span
/// (and its key's, as an object member) in the text, its first child and
/// the next child of its parent.
#[derive(Debug, Clone, Copy)]
pub(super) struct Node {
    kind: Kind,
    span: Span,
    key: Span,
    first: u32,
    next: u32,
    len: u32,
}

/// Lay out the value `text` (scanned, so valid) in `nodes`: the index of
/// its node, or `None` past [`MAX_CHILDREN`] or [`MAX_NODES`].
fn lay_out(text: &str, nodes: &mut Vec<Node>) -> Option<u32> {
    lay_out_at(text.as_bytes(), &mut 0, nodes, Span::default())
}

fn skip_ws(b: &[u8], i: &mut usize) {
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = b.get(*i) {
        *i += 1;
    }
}

fn lay_out_at(b: &[u8], i: &mut usize, nodes: &mut Vec<Node>, key: Span) -> Option<u32> {
    if nodes.len() >= MAX_NODES {
        return None;
    }
    skip_ws(b, i);
    let start = *i;
    let me = u32::try_from(nodes.len()).ok()?;
    let mut node = Node {
        kind: Kind::Null,
        span: Span::new(start, 0),
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
                let key = Span::new(*i + 1, end - 1);
                *i = end;
                skip_ws(b, i);
                *i += 1; // the colon
                key
            } else {
                Span::default()
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
    node.span.end = *i as u32;
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
        self.node().span.of(self.text)
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
            Some((n.key.of(self.text), child))
        })
    }

    /// A string's content, decoded.
    fn string(self) -> Option<Cow<'a, str>> {
        string_content(self.raw(), self.node().kind)
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
#[path = "raw_diff_tests.rs"]
mod tests;
