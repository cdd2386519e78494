//! The query language of the pair list: parse, print and evaluate filters.
//!
//! A query is a list of whitespace-separated terms that must all hold; `-term`
//! negates one. A term is a field match (`family:question|state-noise`,
//! `transformation:add-*`), a number comparison (`dp<-0.1`, `|dc|>0.15`), or
//! text (`timeout`, `"payment step"`) searched case-insensitively in the pair's
//! raw line. The user-facing description, with examples, is `docs/query.md`.
//!
//! [`parse`] turns text into a [`Query`] (or a [`QueryError`] with the 0-based
//! character position of the problem); `Display` prints the canonical text, and
//! `parse(&q.to_string()) == Ok(q)` for every query. [`Query::filter`] compiles
//! the query once per call: enumerated fields become bit masks, string values
//! become globs whose verdict is memoised per interned [`Sym`], annotations
//! are looked up in a map keyed by a cheap hasher, and text terms run last so
//! that a line is read only for rows every other term accepts. Nothing is
//! allocated per row unless a text term has to read the row's line.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

use memchr::memmem;

use super::annotations::{Annotation, AnnotationSource, AnnotationStore};
use super::derive::{Status, ValidityCode};
use super::index::{Codes, RunIndex};
use super::key::RecordKey;
use super::model::Route;
use super::row::{ExpKind, NO_SYM, OutcomeCode, PairRow, Sym, flags};

/// The field names, for completion and error messages (`tr` is an alias of `transformation`).
pub const FIELDS: &[&str] = &[
    "status",
    "family",
    "transformation",
    "case",
    "variant",
    "contract",
    "schema",
    "model",
    "expectation",
    "validity",
    "flip",
    "route",
    "outcome",
    "near",
    "dp",
    "dc",
    "|dp|",
    "|dc|",
    "margin",
    "vmargin",
    "latency",
    "rep",
    "category",
    "suggested",
    "reviewer",
    "note",
    "stale",
    "source",
];

/// A field a term can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    Status,
    Family,
    Transformation,
    Case,
    Variant,
    Contract,
    Schema,
    Model,
    Expectation,
    Validity,
    Flip,
    Route,
    Outcome,
    Near,
    Dp,
    Dc,
    /// `|dp|`: the magnitude of the probability drift.
    AbsDp,
    /// `|dc|`: the magnitude of the confidence drift.
    AbsDc,
    Margin,
    Vmargin,
    Latency,
    Rep,
    Category,
    Suggested,
    Reviewer,
    Note,
    Stale,
    Source,
}

impl Field {
    /// Every field, in the order of [`FIELDS`].
    pub const ALL: [Field; 28] = [
        Field::Status,
        Field::Family,
        Field::Transformation,
        Field::Case,
        Field::Variant,
        Field::Contract,
        Field::Schema,
        Field::Model,
        Field::Expectation,
        Field::Validity,
        Field::Flip,
        Field::Route,
        Field::Outcome,
        Field::Near,
        Field::Dp,
        Field::Dc,
        Field::AbsDp,
        Field::AbsDc,
        Field::Margin,
        Field::Vmargin,
        Field::Latency,
        Field::Rep,
        Field::Category,
        Field::Suggested,
        Field::Reviewer,
        Field::Note,
        Field::Stale,
        Field::Source,
    ];

    /// The canonical name, as printed.
    pub fn name(self) -> &'static str {
        match self {
            Field::Status => "status",
            Field::Family => "family",
            Field::Transformation => "transformation",
            Field::Case => "case",
            Field::Variant => "variant",
            Field::Contract => "contract",
            Field::Schema => "schema",
            Field::Model => "model",
            Field::Expectation => "expectation",
            Field::Validity => "validity",
            Field::Flip => "flip",
            Field::Route => "route",
            Field::Outcome => "outcome",
            Field::Near => "near",
            Field::Dp => "dp",
            Field::Dc => "dc",
            Field::AbsDp => "|dp|",
            Field::AbsDc => "|dc|",
            Field::Margin => "margin",
            Field::Vmargin => "vmargin",
            Field::Latency => "latency",
            Field::Rep => "rep",
            Field::Category => "category",
            Field::Suggested => "suggested",
            Field::Reviewer => "reviewer",
            Field::Note => "note",
            Field::Stale => "stale",
            Field::Source => "source",
        }
    }

    /// The field with this name or alias, in any letter case.
    pub fn from_name(name: &str) -> Option<Field> {
        if name.eq_ignore_ascii_case("tr") {
            return Some(Field::Transformation);
        }
        Field::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }

    /// Whether the field is compared with `<`, `<=`, `>`, `>=` or `=` rather than matched with `:`.
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            Field::Dp
                | Field::Dc
                | Field::AbsDp
                | Field::AbsDc
                | Field::Margin
                | Field::Vmargin
                | Field::Latency
                | Field::Rep
        )
    }

    /// The values an enumerated field accepts (for messages and completion); empty for free text.
    pub fn values(self) -> &'static [&'static str] {
        match self {
            Field::Status => &["fail", "pass", "invalid", "error", "unchecked", "failure"],
            Field::Expectation => &[
                "invariant",
                "not-less-urgent",
                "not-more-urgent",
                "allowed-routes",
                "none",
                "unknown",
            ],
            Field::Validity => &["valid", "invalid", "undeclared", "not-recorded"],
            Field::Flip | Field::Near | Field::Stale => &["yes", "no"],
            Field::Outcome => &[
                "ok",
                "timeout",
                "error",
                "invalid-response",
                "other",
                "not-recorded",
            ],
            Field::Note => &["has", "none"],
            Field::Source => &["manual", "suggestion"],
            Field::Route => &["pass", "review", "action"],
            _ => &[],
        }
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl Op {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "=",
        }
    }

    fn holds(self, x: f64, y: f64) -> bool {
        match self {
            Op::Lt => x < y,
            Op::Le => x <= y,
            Op::Gt => x > y,
            Op::Ge => x >= y,
            Op::Eq => x == y,
        }
    }
}

/// One term of a query.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    /// Written with a leading `-`: the term must not hold.
    pub negated: bool,
    pub kind: TermKind,
}

/// What a term tests.
#[derive(Debug, Clone, PartialEq)]
pub enum TermKind {
    /// `field:a|b`: the field matches any of the values (as typed; `*` globs).
    Match { field: Field, values: Vec<String> },
    /// `field<x` and friends, on a numeric field.
    Compare { field: Field, op: Op, value: f64 },
    /// A bare word or a quoted phrase, searched in the record's raw text.
    Text(String),
}

/// A parsed query: every term must hold. The empty query matches everything.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Query {
    terms: Vec<Term>,
}

/// A syntax error, at a 0-based character index into the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    pub pos: usize,
    pub message: String,
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at {})", self.message, self.pos)
    }
}

impl std::error::Error for QueryError {}

/// What a query may look at besides the row itself.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub index: &'a RunIndex,
    pub store: Option<&'a AnnotationStore>,
}

// ---------------------------------------------------------------------------
// Parsing

/// Parse a query; `""` (or only blanks) is the empty query.
pub fn parse(input: &str) -> Result<Query, QueryError> {
    let chars: Vec<char> = input.chars().collect();
    let mut p = Parser { c: &chars, i: 0 };
    let mut terms = Vec::new();
    loop {
        p.skip_ws();
        if p.peek().is_none() {
            break;
        }
        terms.push(p.term()?);
    }
    Ok(Query { terms })
}

struct Parser<'a> {
    c: &'a [char],
    i: usize,
}

fn err<T>(pos: usize, message: impl Into<String>) -> Result<T, QueryError> {
    Err(QueryError {
        pos,
        message: message.into(),
    })
}

fn field_list() -> String {
    format!("{} (tr is short for transformation)", FIELDS.join(", "))
}

fn is_op_char(c: char) -> bool {
    matches!(c, '<' | '>' | '=')
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.c.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.i += 1;
        }
    }

    fn at_break(&self) -> bool {
        self.peek().is_none_or(char::is_whitespace)
    }

    /// Read while `keep` holds.
    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> String {
        let start = self.i;
        while self.peek().is_some_and(&keep) {
            self.i += 1;
        }
        self.c[start..self.i].iter().collect()
    }

    fn term(&mut self) -> Result<Term, QueryError> {
        let start = self.i;
        let negated = self.peek() == Some('-');
        if negated {
            self.i += 1;
            if self.at_break() {
                return err(
                    start,
                    "`-` must be followed by the term to exclude, as in -status:pass",
                );
            }
        }
        let kind = self.term_body()?;
        Ok(Term { negated, kind })
    }

    fn term_body(&mut self) -> Result<TermKind, QueryError> {
        let start = self.i;
        match self.peek() {
            Some('"') => {
                let s = self.quoted()?;
                if s.is_empty() {
                    return err(
                        start,
                        "empty phrase; put the words to search between the quotes",
                    );
                }
                if !self.at_break() {
                    return err(
                        self.i,
                        "expected a space after the closing quote; quote the whole phrase",
                    );
                }
                return Ok(TermKind::Text(s));
            }
            Some('|') => {
                self.i += 1;
                let inner = self.take_while(|c| {
                    !c.is_whitespace() && !is_op_char(c) && !matches!(c, ':' | '"' | '|')
                });
                if self.peek() != Some('|') {
                    return err(
                        start,
                        "`|` starts a magnitude, as in |dp|>0.1 or |dc|>0.15; quote a phrase that contains `|`",
                    );
                }
                self.i += 1;
                let head = format!("|{inner}|");
                let Some(field) = Field::from_name(&head) else {
                    return err(
                        start,
                        format!("unknown field `{head}`; fields: {}", field_list()),
                    );
                };
                return self.field_term(field, &head);
            }
            _ => {}
        }
        let head = self
            .take_while(|c| !c.is_whitespace() && !is_op_char(c) && !matches!(c, ':' | '"' | '|'));
        match self.peek() {
            None => Ok(TermKind::Text(head)),
            Some(c) if c.is_whitespace() => Ok(TermKind::Text(head)),
            Some(c @ (':' | '<' | '>' | '=')) => {
                if head.is_empty() {
                    return err(
                        start,
                        format!(
                            "`{c}` needs a field name before it; fields: {}",
                            field_list()
                        ),
                    );
                }
                let Some(field) = Field::from_name(&head) else {
                    return err(
                        start,
                        format!("unknown field `{head}`; fields: {}", field_list()),
                    );
                };
                self.field_term(field, &head)
            }
            Some('"') => err(
                self.i,
                "a quote inside a word; quote the whole phrase, as in \"payment step\"",
            ),
            Some(_) => err(
                self.i,
                "`|` separates a field's values, as in family:question|state-noise; quote a phrase that contains `|`",
            ),
        }
    }

    fn field_term(&mut self, field: Field, head: &str) -> Result<TermKind, QueryError> {
        let op_pos = self.i;
        let name = field.name();
        if self.peek() == Some(':') {
            self.i += 1;
            if field.is_numeric() {
                return err(
                    op_pos,
                    format!(
                        "`{name}` is a number; compare it with <, <=, >, >= or =, as in {name}>0.1"
                    ),
                );
            }
            let values = self.values(field)?;
            return Ok(TermKind::Match { field, values });
        }
        let op_text = self.take_while(is_op_char);
        let op = match op_text.as_str() {
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "=" => Op::Eq,
            _ => {
                return err(
                    op_pos,
                    format!("bad operator `{op_text}`; use <, <=, >, >= or = (or : for a value)"),
                );
            }
        };
        if !field.is_numeric() {
            return err(
                op_pos,
                format!("`{name}` is not a number; match it with `:`, as in {name}:value"),
            );
        }
        let vpos = self.i;
        let text = self.take_while(|c| !c.is_whitespace());
        if text.is_empty() {
            return err(
                vpos,
                format!(
                    "empty value after `{head}{op_text}`; expected a number, as in {name}{op_text}0.1"
                ),
            );
        }
        match parse_number(&text) {
            Some(value) => Ok(TermKind::Compare { field, op, value }),
            None => err(
                vpos,
                format!("bad number `{text}`; expected a number such as 0.1, -0.05 or 30000"),
            ),
        }
    }

    fn values(&mut self, field: Field) -> Result<Vec<String>, QueryError> {
        let mut values = Vec::new();
        loop {
            let vpos = self.i;
            let v = if self.peek() == Some('"') {
                self.quoted()?
            } else {
                self.take_while(|c| !c.is_whitespace() && !matches!(c, '|' | '"'))
            };
            if v.is_empty() {
                return err(vpos, empty_value_message(field));
            }
            if let Err(m) = check_value(field, &v) {
                return err(vpos, m);
            }
            values.push(v);
            match self.peek() {
                Some('|') => self.i += 1,
                None => break,
                Some(c) if c.is_whitespace() => break,
                Some(c) => {
                    return err(
                        self.i,
                        format!(
                            "unexpected `{c}` in a value; quote the whole value, as in case:\"two words\""
                        ),
                    );
                }
            }
        }
        Ok(values)
    }

    /// A `"..."` string at the cursor. JSON's escapes work (`\"`, `\\`, `\/`,
    /// `\n`, `\t`, `\r`, `\b`, `\f`, `\uXXXX`, surrogate pairs included);
    /// any other backslash is literal.
    fn quoted(&mut self) -> Result<String, QueryError> {
        let open = self.i;
        self.i += 1;
        let mut s = String::new();
        loop {
            match self.peek() {
                None => return err(open, "unterminated quote; close it with `\"`"),
                Some('"') => {
                    self.i += 1;
                    return Ok(s);
                }
                Some('\\') => match self.escape() {
                    Some((c, len)) => {
                        s.push(c);
                        self.i += len;
                    }
                    None => {
                        s.push('\\');
                        self.i += 1;
                    }
                },
                Some(c) => {
                    s.push(c);
                    self.i += 1;
                }
            }
        }
    }

    /// The escape at the cursor (a backslash) and its length in chars, if it is one.
    fn escape(&self) -> Option<(char, usize)> {
        let c = match self.c.get(self.i + 1)? {
            '"' => '"',
            '\\' => '\\',
            '/' => '/',
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'u' => {
                let hi = self.hex4(self.i + 2)?;
                if let Some(c) = char::from_u32(hi) {
                    return Some((c, 6));
                }
                // A high surrogate must be followed by a low one.
                if !(0xD800..0xDC00).contains(&hi)
                    || self.c.get(self.i + 6) != Some(&'\\')
                    || self.c.get(self.i + 7) != Some(&'u')
                {
                    return None;
                }
                let lo = self.hex4(self.i + 8)?;
                if !(0xDC00..0xE000).contains(&lo) {
                    return None;
                }
                let c = char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?;
                return Some((c, 12));
            }
            _ => return None,
        };
        Some((c, 2))
    }

    /// Four hex digits at `at`.
    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.c.get(at..at + 4)?;
        digits
            .iter()
            .try_fold(0u32, |n, d| Some(n * 16 + d.to_digit(16)?))
    }
}

fn empty_value_message(field: Field) -> String {
    let name = field.name();
    let hint = match field {
        Field::Route => {
            "give a route (pass, review, action) or a transition such as action->pass".to_string()
        }
        Field::Category => "give none, any or a category id such as boundary".to_string(),
        Field::Suggested => "give none or a category id such as boundary".to_string(),
        _ if !field.values().is_empty() => format!("values: {}", field.values().join(", ")),
        _ => "write the value after the colon (quote values with spaces)".to_string(),
    };
    format!("empty value for `{name}`; {hint}")
}

/// A finite decimal number; no `inf`, `nan` or hex.
fn parse_number(s: &str) -> Option<f64> {
    if !s
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '+' | '-' | '.' | 'e' | 'E'))
    {
        return None;
    }
    s.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// Whether a value is acceptable for a field (non-empty values only).
fn check_value(field: Field, v: &str) -> Result<(), String> {
    let ok = match field {
        Field::Route => return route_mask(v).map(|_| ()),
        Field::Status
        | Field::Expectation
        | Field::Validity
        | Field::Flip
        | Field::Near
        | Field::Stale
        | Field::Outcome
        | Field::Note
        | Field::Source => enum_mask(field, v) != 0,
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "unknown {} `{v}`; values: {}",
            field.name(),
            field.values().join(", ")
        ))
    }
}

// Value names in the order of the enums' bit positions.
const STATUS_BITS: [&str; 5] = ["invalid", "error", "fail", "unchecked", "pass"];
const EXP_BITS: [&str; 6] = [
    "none",
    "invariant",
    "not-less-urgent",
    "not-more-urgent",
    "allowed-routes",
    "unknown",
];
const VALIDITY_BITS: [&str; 4] = ["valid", "invalid", "undeclared", "not-recorded"];
const OUTCOME_BITS: [&str; 6] = [
    "not-recorded",
    "ok",
    "timeout",
    "error",
    "invalid-response",
    "other",
];
const YES_NO_BITS: [&str; 2] = ["yes", "no"];
const NOTE_BITS: [&str; 2] = ["has", "none"];
const SOURCE_BITS: [&str; 2] = ["manual", "suggestion"];
const ROUTE_BITS: [&str; 3] = ["pass", "review", "action"];

fn glob_mask(pattern: &str, names: &[&str]) -> u64 {
    let g = Glob::new(pattern);
    names
        .iter()
        .enumerate()
        .filter(|(_, n)| g.matches_lower(n.as_bytes()))
        .fold(0, |m, (i, _)| m | 1 << i)
}

/// The bits of an enumerated field's values that one value (maybe a glob) selects.
fn enum_mask(field: Field, v: &str) -> u64 {
    match field {
        Field::Status if v.eq_ignore_ascii_case("failure") => 0b111,
        Field::Status => glob_mask(v, &STATUS_BITS),
        Field::Expectation => glob_mask(v, &EXP_BITS),
        Field::Validity => glob_mask(v, &VALIDITY_BITS),
        Field::Flip | Field::Near | Field::Stale if v.eq_ignore_ascii_case("true") => 0b01,
        Field::Flip | Field::Near | Field::Stale if v.eq_ignore_ascii_case("false") => 0b10,
        Field::Flip | Field::Near | Field::Stale => glob_mask(v, &YES_NO_BITS),
        Field::Outcome => glob_mask(v, &OUTCOME_BITS),
        Field::Note => glob_mask(v, &NOTE_BITS),
        Field::Source => glob_mask(v, &SOURCE_BITS),
        _ => 0,
    }
}

/// Bit `3 * source + variant` for each route transition a value selects.
fn route_mask(v: &str) -> Result<u16, String> {
    let bad = |part: &str| {
        format!(
            "unknown route `{part}`; routes: pass, review, action, or a transition such as action->pass or *->pass"
        )
    };
    let side = |part: &str| -> Result<u64, String> {
        if part.is_empty() {
            return Err(format!(
                "route `{v}` has an empty side; write both, as in action->pass or action->*"
            ));
        }
        match glob_mask(part, &ROUTE_BITS) {
            0 => Err(bad(part)),
            m => Ok(m),
        }
    };
    let mut mask = 0u16;
    if let Some((l, r)) = v.split_once("->") {
        let (lm, rm) = (side(l)?, side(r)?);
        for s in 0..3 {
            for t in 0..3 {
                if lm & (1 << s) != 0 && rm & (1 << t) != 0 {
                    mask |= 1 << (s * 3 + t);
                }
            }
        }
    } else {
        let m = side(v)?;
        for s in 0..3 {
            for t in 0..3 {
                if m & (1 << s) != 0 || m & (1 << t) != 0 {
                    mask |= 1 << (s * 3 + t);
                }
            }
        }
    }
    Ok(mask)
}

/// Bit `6 * source + variant` for each pair of outcomes a value selects.
fn outcome_mask(v: &str) -> u64 {
    let names = enum_mask(Field::Outcome, v);
    let ok = 1; // OUTCOME_BITS index of "ok"
    let mut mask = 0u64;
    for n in 0..OUTCOME_BITS.len() {
        if names & (1 << n) == 0 {
            continue;
        }
        for s in 0..6 {
            for t in 0..6 {
                let hit = if n == ok {
                    s == ok && t == ok
                } else {
                    s == n || t == n
                };
                if hit {
                    mask |= 1 << (s * 6 + t);
                }
            }
        }
    }
    mask
}

// ---------------------------------------------------------------------------
// Printing

/// A text term that parses back as itself without quotes.
fn bare_text_ok(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && !s.chars().any(|c| {
            c.is_whitespace() || c.is_control() || is_op_char(c) || matches!(c, ':' | '"' | '|')
        })
}

/// A field value that parses back as itself without quotes.
fn bare_value_ok(s: &str) -> bool {
    !s.is_empty()
        && !s
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | '|'))
}

/// Quote a string, escaping quotes, backslashes and control characters as JSON does.
fn write_quoted(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("\"")?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\t' => f.write_str("\\t")?,
            '\r' => f.write_str("\\r")?,
            c if c.is_control() => write!(f, "\\u{:04x}", u32::from(c))?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("\"")
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negated {
            f.write_str("-")?;
        }
        match &self.kind {
            TermKind::Match { field, values } => {
                write!(f, "{}:", field.name())?;
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str("|")?;
                    }
                    if bare_value_ok(v) {
                        f.write_str(v)?;
                    } else {
                        write_quoted(f, v)?;
                    }
                }
                Ok(())
            }
            TermKind::Compare { field, op, value } => {
                write!(f, "{}{}{}", field.name(), op.symbol(), value)
            }
            TermKind::Text(s) if bare_text_ok(s) => f.write_str(s),
            TermKind::Text(s) => write_quoted(f, s),
        }
    }
}

impl fmt::Display for Query {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Query {
    type Err = QueryError;

    fn from_str(s: &str) -> Result<Query, QueryError> {
        parse(s)
    }
}

// ---------------------------------------------------------------------------
// Evaluation

impl Query {
    /// Whether the query has no terms (and so matches every row).
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether evaluating needs each row's line read from disk (bare words or phrases).
    pub fn needs_text(&self) -> bool {
        self.terms
            .iter()
            .any(|t| matches!(t.kind, TermKind::Text(_)))
    }

    /// The terms, in the order written.
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    /// Whether one row matches. Text terms read the row's line; a read error counts as no match.
    ///
    /// This compiles the query for the one row; use [`Query::filter`] for many.
    pub fn matches(&self, ctx: &Context, row: &PairRow) -> bool {
        if self.is_empty() {
            return true;
        }
        let env = AnnEnv {
            store: ctx.store,
            map: None,
            any: ctx.store.is_some(),
            seen: Vec::new(),
            cases: None,
        };
        let mut compiled = Compiled::new(self, ctx.index, false);
        compiled.eval(ctx.index, &env, row, 0)
    }

    /// Filter row indices (into `ctx.index.rows`), preserving order.
    ///
    /// Indices past the end of the index are dropped. Large inputs are split
    /// over the available cores.
    pub fn filter(&self, ctx: &Context, rows: &[u32]) -> Vec<u32> {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(8);
        self.filter_on(ctx, rows, threads)
    }

    /// [`Query::filter`] on at most `threads` threads.
    fn filter_on(&self, ctx: &Context, rows: &[u32], threads: usize) -> Vec<u32> {
        let index = ctx.index;
        if self.is_empty() {
            return rows
                .iter()
                .copied()
                .filter(|&r| (r as usize) < index.rows.len())
                .collect();
        }
        let env = AnnEnv::for_filter(ctx.store, self);
        let compiled = Compiled::new(self, index, true);
        // Threads pay off only on large inputs; text terms wait on I/O, so split those sooner.
        let per_thread = if compiled.has_text { 2_000 } else { 100_000 };
        let chunks = threads.min(rows.len() / per_thread).max(1);
        if chunks == 1 {
            let mut c = compiled;
            return c.run(index, &env, rows);
        }
        let size = rows.len().div_ceil(chunks);
        let env = &env;
        std::thread::scope(|scope| {
            let mut parts = rows.chunks(size);
            let first = parts.next().unwrap_or_default();
            // A part whose thread cannot start runs here instead.
            let spawned: Vec<_> = parts
                .map(|part| {
                    let mut c = compiled.clone();
                    let job = std::thread::Builder::new()
                        .name("triage-query".into())
                        .spawn_scoped(scope, move || c.run(index, env, part));
                    (part, job)
                })
                .collect();
            let mut c = compiled;
            let mut out = c.run(index, env, first);
            for (part, job) in spawned {
                match job {
                    Ok(h) => match h.join() {
                        Ok(found) => out.extend(found),
                        Err(p) => std::panic::resume_unwind(p),
                    },
                    Err(_) => out.extend(c.run(index, env, part)),
                }
            }
            out
        })
    }
}

/// Annotations as the evaluator sees them.
struct AnnEnv<'a> {
    store: Option<&'a AnnotationStore>,
    /// Every live annotation by key (built for [`Query::filter`]); `None` means ask the store.
    map: Option<FastMap<RecordKey, &'a Annotation>>,
    /// Whether there may be any annotation at all.
    any: bool,
    /// One bit per value of a key's first two bytes: most unannotated keys
    /// are ruled out here without hashing (keys are digests, so this is even).
    seen: Vec<u64>,
    /// The case ids that have annotations (built for [`Query::filter`] when `stale` is used).
    cases: Option<FastSet<&'a str>>,
}

impl<'a> AnnEnv<'a> {
    fn for_filter(store: Option<&'a AnnotationStore>, q: &Query) -> AnnEnv<'a> {
        let uses = q.terms.iter().any(|t| {
            matches!(
                t.kind,
                TermKind::Match {
                    field: Field::Category
                        | Field::Reviewer
                        | Field::Note
                        | Field::Stale
                        | Field::Source,
                    ..
                }
            )
        });
        let Some(s) = store.filter(|_| uses) else {
            return AnnEnv {
                store,
                map: None,
                any: false,
                seen: Vec::new(),
                cases: None,
            };
        };
        let map: FastMap<RecordKey, &Annotation> =
            s.all().into_iter().map(|a| (a.key, a)).collect();
        let stale = q.terms.iter().any(|t| {
            matches!(
                t.kind,
                TermKind::Match {
                    field: Field::Stale,
                    ..
                }
            )
        });
        let cases = stale.then(|| map.values().map(|a| a.case_id.as_str()).collect());
        let mut seen = vec![0u64; 1 << 10];
        for k in map.keys() {
            let b = key_bucket(k);
            seen[b >> 6] |= 1 << (b & 63);
        }
        AnnEnv {
            store,
            any: !map.is_empty(),
            seen,
            map: Some(map),
            cases,
        }
    }

    /// The annotation of a row under its current key.
    fn row(&self, index: &RunIndex, r: &PairRow) -> Option<&'a Annotation> {
        if !self.any {
            return None;
        }
        self.get(&index.current_key(self.store?, r)?)
    }

    fn get(&self, key: &RecordKey) -> Option<&'a Annotation> {
        if !self.any {
            return None;
        }
        match (&self.map, self.store) {
            (Some(m), _) => {
                let b = key_bucket(key);
                if self
                    .seen
                    .get(b >> 6)
                    .is_some_and(|w| w & (1 << (b & 63)) == 0)
                {
                    return None;
                }
                m.get(key).copied()
            }
            (None, Some(s)) => s.get(key),
            (None, None) => None,
        }
    }
}

/// A key's bucket in [`AnnEnv::seen`]: its first two bytes.
fn key_bucket(k: &RecordKey) -> usize {
    usize::from(u16::from_le_bytes([k.0[0], k.0[1]]))
}

/// A cheap hasher for record keys (already digests) and short ids.
#[derive(Default, Clone, Copy)]
struct FastHasher(u64);

impl FastHasher {
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(b));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;
type FastSet<K> = HashSet<K, BuildHasherDefault<FastHasher>>;

/// A case-insensitive pattern where `*` matches any run of characters.
#[derive(Debug, Clone)]
struct Glob {
    /// The lowercased pattern split at `*`; one part means an exact match.
    parts: Vec<Vec<u8>>,
}

impl Glob {
    fn new(pattern: &str) -> Glob {
        Glob {
            parts: pattern
                .to_lowercase()
                .split('*')
                .map(|s| s.as_bytes().to_vec())
                .collect(),
        }
    }

    /// Match an already lowercased text.
    fn matches_lower(&self, t: &[u8]) -> bool {
        let n = self.parts.len();
        let (first, last) = (&self.parts[0], &self.parts[n - 1]);
        if n == 1 {
            return t == first.as_slice();
        }
        if t.len() < first.len() + last.len() || !t.starts_with(first) || !t.ends_with(last) {
            return false;
        }
        let mut rest = &t[first.len()..t.len() - last.len()];
        for p in &self.parts[1..n - 1] {
            if p.is_empty() {
                continue;
            }
            match memmem::find(rest, p) {
                Some(i) => rest = &rest[i + p.len()..],
                None => return false,
            }
        }
        true
    }
}

/// Several globs; a text matches if any does.
#[derive(Debug, Clone, Default)]
struct Globs {
    globs: Vec<Glob>,
    scratch: Vec<u8>,
}

impl Globs {
    fn matches(&mut self, text: &str) -> bool {
        self.scratch.clear();
        if text.is_ascii() {
            self.scratch
                .extend(text.bytes().map(|b| b.to_ascii_lowercase()));
        } else {
            self.scratch
                .extend_from_slice(text.to_lowercase().as_bytes());
        }
        let t = &self.scratch;
        self.globs.iter().any(|g| g.matches_lower(t))
    }
}

/// Which interned string of a row a sym term reads.
#[derive(Debug, Clone, Copy)]
enum SymField {
    Family,
    Transformation,
    Case,
    Variant,
    Contract,
    Schema,
    Model,
    Suggested,
}

impl SymField {
    /// The row's string id; the suggested category is not interned (see
    /// [`SymSet::test_row`]), so it gives [`NO_SYM`].
    fn get(self, r: &PairRow, index: &RunIndex) -> Sym {
        match self {
            SymField::Family => r.family,
            SymField::Transformation => r.transformation,
            SymField::Case => r.case,
            SymField::Variant => r.variant,
            SymField::Contract => index.contract(r),
            SymField::Schema => index.schema(r),
            SymField::Model => index.model(r),
            SymField::Suggested => NO_SYM,
        }
    }
}

/// Globs over interned strings, with each sym's verdict memoised (0 unknown, 1 yes, 2 no).
#[derive(Debug, Clone)]
struct SymSet {
    globs: Globs,
    /// What [`NO_SYM`] (not recorded) gives.
    none: bool,
    memo: Vec<u8>,
    /// The verdict on each suggested category, by its code (0 unknown, 1 yes, 2 no).
    suggested_memo: [u8; 64],
}

impl SymSet {
    /// Test the field `f` of row `r`.
    fn test_row(&mut self, f: SymField, r: &PairRow, index: &RunIndex) -> bool {
        if let SymField::Suggested = f {
            let Some(s) = r.suggestion() else {
                return self.none;
            };
            let code = usize::from(r.codes.suggestion_code());
            return match self.suggested_memo.get(code).copied() {
                Some(1) => true,
                Some(2) => false,
                _ => {
                    let hit = self.globs.matches(s);
                    if let Some(m) = self.suggested_memo.get_mut(code) {
                        *m = if hit { 1 } else { 2 };
                    }
                    hit
                }
            };
        }
        self.test(f.get(r, index), index)
    }

    fn test(&mut self, sym: Sym, index: &RunIndex) -> bool {
        if sym == NO_SYM {
            return self.none;
        }
        match self.memo.get(sym as usize).copied() {
            Some(1) => true,
            Some(2) => false,
            Some(_) => {
                let hit = self.globs.matches(index.str(sym));
                self.memo[sym as usize] = if hit { 1 } else { 2 };
                hit
            }
            None => self.globs.matches(index.str(sym)),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum NumField {
    Dp,
    Dc,
    AbsDp,
    AbsDc,
    Margin,
    Vmargin,
    Latency,
    Rep,
}

impl NumField {
    /// The row's value; NaN when not recorded.
    fn get(self, r: &PairRow) -> f64 {
        match self {
            NumField::Dp => f64::from(r.dp),
            NumField::Dc => f64::from(r.dc),
            NumField::AbsDp => f64::from(r.dp.abs()),
            NumField::AbsDc => f64::from(r.dc.abs()),
            NumField::Margin => f64::from(r.margin),
            NumField::Vmargin => f64::from(r.variant_margin),
            NumField::Latency => f64::from(r.latency),
            NumField::Rep if r.repetition == u32::MAX => f64::NAN,
            NumField::Rep => f64::from(r.repetition),
        }
    }
}

/// A test on a pair's annotation (absent when the pair has none).
#[derive(Debug, Clone)]
enum AnnCond {
    Category { none: bool, any: bool, globs: Globs },
    Reviewer(Globs),
    Note { has: bool, none: bool },
    Source { manual: bool, suggestion: bool },
}

impl AnnCond {
    fn eval(&mut self, ann: Option<&Annotation>) -> bool {
        match self {
            AnnCond::Category { none, any, globs } => {
                match ann.and_then(|a| a.category.as_deref()) {
                    None => *none,
                    Some(c) => *any || globs.matches(c),
                }
            }
            AnnCond::Reviewer(globs) => ann.is_some_and(|a| globs.matches(&a.reviewer)),
            AnnCond::Note { has, none } => {
                if ann.is_some_and(|a| a.note.as_deref().is_some_and(|n| !n.is_empty())) {
                    *has
                } else {
                    *none
                }
            }
            AnnCond::Source { manual, suggestion } => match ann {
                Some(a) if a.category.is_some() => match a.source {
                    AnnotationSource::Manual => *manual,
                    AnnotationSource::Suggestion => *suggestion,
                },
                _ => false,
            },
        }
    }
}

/// One compiled term.
#[derive(Debug, Clone)]
enum Cond {
    Status(u8),
    Sym(SymField, SymSet),
    Flag { flag: u8, yes: bool, no: bool },
    Expectation(u8),
    Validity(u8),
    Route(u16),
    Outcome(u64),
    Num(NumField, Op, f64),
    Ann { cond: AnnCond, on_none: bool },
    Stale { yes: bool, no: bool, memo: Vec<u8> },
    Text(Box<Needle>),
}

impl Cond {
    /// Evaluation order: cheapest first, text (I/O) last. Terms on the
    /// one-byte columns (status, family, transformation) go before terms
    /// that read whole rows, so those read only the rows left.
    fn cost(&self) -> u8 {
        match self {
            Cond::Status(_) | Cond::Sym(SymField::Family | SymField::Transformation, _) => 0,
            Cond::Sym(..) => 1,
            Cond::Ann { .. } => 2,
            Cond::Stale { .. } => 3,
            Cond::Text(_) => TEXT_COST,
            // Codes and numbers read from the row.
            _ => 1,
        }
    }
}

/// The cost of a text term: the only kind evaluated row by row in [`Compiled::run`].
const TEXT_COST: u8 = 4;

/// A text needle, lowercased.
#[derive(Debug, Clone)]
struct Needle {
    ascii: bool,
    finder: memmem::Finder<'static>,
}

fn status_bit(s: Status) -> u8 {
    match s {
        Status::Invalid => 0,
        Status::ServiceError => 1,
        Status::Fail => 2,
        Status::Unchecked => 3,
        Status::Pass => 4,
    }
}

fn exp_bit(e: ExpKind) -> u8 {
    match e {
        ExpKind::None => 0,
        ExpKind::Invariant => 1,
        ExpKind::NotLessUrgent => 2,
        ExpKind::NotMoreUrgent => 3,
        ExpKind::AllowedRoutes => 4,
        ExpKind::Unknown => 5,
    }
}

fn validity_bit(v: ValidityCode) -> u8 {
    match v {
        ValidityCode::Valid => 0,
        ValidityCode::Invalid => 1,
        ValidityCode::Undeclared => 2,
        ValidityCode::NotRecorded => 3,
    }
}

fn outcome_bit(o: OutcomeCode) -> u32 {
    match o {
        OutcomeCode::NotRecorded => 0,
        OutcomeCode::Ok => 1,
        OutcomeCode::Timeout => 2,
        OutcomeCode::Error => 3,
        OutcomeCode::InvalidResponse => 4,
        OutcomeCode::Other => 5,
    }
}

fn route_bit(r: Route) -> u16 {
    match r {
        Route::Pass => 0,
        Route::Review => 1,
        Route::Action => 2,
    }
}

fn globs_of<'v>(values: impl Iterator<Item = &'v String>) -> Globs {
    Globs {
        globs: values.map(|v| Glob::new(v)).collect(),
        scratch: Vec::new(),
    }
}

/// Compile one term; `memo_len` sizes the per-sym memo tables (0: no memo).
fn compile_term(kind: &TermKind, memo_len: usize) -> Cond {
    let (field, values) = match kind {
        TermKind::Text(s) => {
            let lower = s.to_lowercase();
            return Cond::Text(Box::new(Needle {
                ascii: lower.is_ascii(),
                finder: memmem::Finder::new(lower.as_bytes()).into_owned(),
            }));
        }
        TermKind::Compare { field, op, value } => {
            let (nf, exact) = match field {
                Field::Dp => (NumField::Dp, false),
                Field::Dc => (NumField::Dc, false),
                Field::AbsDp => (NumField::AbsDp, false),
                Field::AbsDc => (NumField::AbsDc, false),
                Field::Margin => (NumField::Margin, false),
                Field::Vmargin => (NumField::Vmargin, false),
                Field::Latency => (NumField::Latency, false),
                Field::Rep => (NumField::Rep, true),
                // The parser never builds this; a comparison on a text field holds nowhere.
                _ => return Cond::Status(0),
            };
            // The index stores these numbers as f32: round the threshold the
            // same way, so `dp<-0.1` does not match a recorded -0.1.
            let v = if exact {
                *value
            } else {
                f64::from(*value as f32)
            };
            return Cond::Num(nf, *op, v);
        }
        TermKind::Match { field, values } => (*field, values),
    };
    let mask = || values.iter().fold(0u64, |m, v| m | enum_mask(field, v));
    let sym = |f: SymField, special_none: bool| {
        let none = special_none && values.iter().any(|v| v.eq_ignore_ascii_case("none"));
        Cond::Sym(
            f,
            SymSet {
                globs: globs_of(
                    values
                        .iter()
                        .filter(|v| !(special_none && v.eq_ignore_ascii_case("none"))),
                ),
                none,
                memo: vec![0; memo_len],
                suggested_memo: [0; 64],
            },
        )
    };
    match field {
        Field::Status => Cond::Status(mask() as u8),
        Field::Expectation => Cond::Expectation(mask() as u8),
        Field::Validity => Cond::Validity(mask() as u8),
        Field::Flip | Field::Near => {
            let m = mask();
            Cond::Flag {
                flag: if field == Field::Flip {
                    flags::FLIP
                } else {
                    flags::NEAR_BOUNDARY
                },
                yes: m & 1 != 0,
                no: m & 2 != 0,
            }
        }
        Field::Stale => {
            let m = mask();
            Cond::Stale {
                yes: m & 1 != 0,
                no: m & 2 != 0,
                memo: vec![0; memo_len],
            }
        }
        Field::Route => Cond::Route(values.iter().fold(0, |m, v| m | route_mask(v).unwrap_or(0))),
        Field::Outcome => Cond::Outcome(values.iter().fold(0, |m, v| m | outcome_mask(v))),
        Field::Note => {
            let m = mask();
            Cond::Ann {
                cond: AnnCond::Note {
                    has: m & 1 != 0,
                    none: m & 2 != 0,
                },
                on_none: false,
            }
        }
        Field::Source => {
            let m = mask();
            Cond::Ann {
                cond: AnnCond::Source {
                    manual: m & 1 != 0,
                    suggestion: m & 2 != 0,
                },
                on_none: false,
            }
        }
        Field::Category => {
            let is = |w: &str| values.iter().any(|v| v.eq_ignore_ascii_case(w));
            Cond::Ann {
                cond: AnnCond::Category {
                    none: is("none"),
                    any: is("any"),
                    globs: globs_of(values.iter().filter(|v| {
                        !v.eq_ignore_ascii_case("none") && !v.eq_ignore_ascii_case("any")
                    })),
                },
                on_none: false,
            }
        }
        Field::Reviewer => Cond::Ann {
            cond: AnnCond::Reviewer(globs_of(values.iter())),
            on_none: false,
        },
        Field::Suggested => sym(SymField::Suggested, true),
        Field::Family => sym(SymField::Family, false),
        Field::Transformation => sym(SymField::Transformation, false),
        Field::Case => sym(SymField::Case, false),
        Field::Variant => sym(SymField::Variant, false),
        Field::Contract => sym(SymField::Contract, false),
        Field::Schema => sym(SymField::Schema, false),
        Field::Model => sym(SymField::Model, false),
        // The parser never builds these: a number field matched with `:` holds nowhere.
        Field::Dp
        | Field::Dc
        | Field::AbsDp
        | Field::AbsDc
        | Field::Margin
        | Field::Vmargin
        | Field::Latency
        | Field::Rep => Cond::Status(0),
    }
}

/// Whether a pair has no annotation under its key but one under an older key.
fn is_stale(
    env: &AnnEnv,
    current: Option<&Annotation>,
    memo: &mut [u8],
    index: &RunIndex,
    row: &PairRow,
) -> bool {
    if current.is_some() || !env.any {
        return false;
    }
    let Some(store) = env.store else {
        return false;
    };
    // Most pairs share no case id with any annotation: rule them out per
    // sym (resolved keys already carry that flag per sym; see `rowkeys`).
    if let Some(cases) = env.cases.as_ref().filter(|_| !index.keys_resolved(store)) {
        let known = match memo.get(row.case as usize).copied() {
            Some(1) => true,
            Some(2) => false,
            other => {
                let hit = cases.contains(index.str(row.case));
                if other.is_some() {
                    memo[row.case as usize] = if hit { 1 } else { 2 };
                }
                hit
            }
        };
        if !known {
            return false;
        }
    }
    let Some(key) = index.current_key(store, row) else {
        return false;
    };
    store
        .stale_for(index.str(row.case), index.str(row.variant), &key)
        .is_some()
}

#[inline]
fn status_in(m: u8, r: &PairRow) -> bool {
    m & (1 << status_bit(r.status())) != 0
}

#[inline]
fn flag_in(flag: u8, yes: bool, no: bool, r: &PairRow) -> bool {
    if r.has(flag) { yes } else { no }
}

#[inline]
fn expectation_in(m: u8, r: &PairRow) -> bool {
    m & (1 << exp_bit(r.expectation())) != 0
}

#[inline]
fn validity_in(m: u8, r: &PairRow) -> bool {
    m & (1 << validity_bit(r.validity())) != 0
}

#[inline]
fn route_in(m: u16, r: &PairRow) -> bool {
    match (r.source_route(), r.variant_route()) {
        (Some(s), Some(t)) => m & (1 << (route_bit(s) * 3 + route_bit(t))) != 0,
        _ => false,
    }
}

#[inline]
fn outcome_in(m: u64, r: &PairRow) -> bool {
    m & (1 << (outcome_bit(r.source_outcome()) * 6 + outcome_bit(r.variant_outcome()))) != 0
}

/// Keep the indices in `sel` whose row satisfies `keep` (indices past the end go).
///
/// Written to be branch-free on the verdict: every index is stored and the
/// write position advances only on a hit.
#[inline]
fn retain_rows(sel: &mut Vec<u32>, rows: &[PairRow], mut keep: impl FnMut(&PairRow) -> bool) {
    let mut n = 0;
    for k in 0..sel.len() {
        let i = sel[k];
        let hit = rows.get(i as usize).is_some_and(&mut keep);
        sel[n] = i;
        n += usize::from(hit);
    }
    sel.truncate(n);
}

/// One pass of an indexed term over the selection, with the term's kind decided once.
fn sweep(cond: &mut Cond, negated: bool, index: &RunIndex, env: &AnnEnv, sel: &mut Vec<u32>) {
    let rows = &index.rows;
    match cond {
        Cond::Status(m) => {
            let m = *m;
            match index.statuses() {
                // One byte per row instead of the whole row.
                Some(col) => {
                    let mut n = 0;
                    for k in 0..sel.len() {
                        let i = sel[k];
                        let hit = col
                            .get(i as usize)
                            .is_some_and(|&s| (m & (1 << status_bit(s)) != 0) != negated);
                        sel[n] = i;
                        n += usize::from(hit);
                    }
                    sel.truncate(n);
                }
                None => retain_rows(sel, rows, |r| status_in(m, r) != negated),
            }
        }
        Cond::Sym(f, set) => {
            let f = *f;
            let codes = match f {
                SymField::Family => index.family_codes(),
                SymField::Transformation => index.transformation_codes(),
                _ => None,
            };
            match codes {
                Some(codes) => {
                    // Test each distinct value once, then scan one byte per row.
                    let mut verdict = [false; 256];
                    for (v, &sym) in verdict.iter_mut().zip(&codes.values) {
                        *v = set.test(sym, index) != negated;
                    }
                    let mut n = 0;
                    for k in 0..sel.len() {
                        let i = sel[k];
                        let hit = match codes.codes.get(i as usize) {
                            None => false,
                            Some(&Codes::OTHER) => {
                                set.test_row(f, &rows[i as usize], index) != negated
                            }
                            Some(&c) => verdict[usize::from(c)],
                        };
                        sel[n] = i;
                        n += usize::from(hit);
                    }
                    sel.truncate(n);
                }
                None => retain_rows(sel, rows, |r| set.test_row(f, r, index) != negated),
            }
        }
        Cond::Flag { flag, yes, no } => {
            let (flag, yes, no) = (*flag, *yes, *no);
            retain_rows(sel, rows, |r| flag_in(flag, yes, no, r) != negated);
        }
        Cond::Expectation(m) => {
            let m = *m;
            retain_rows(sel, rows, |r| expectation_in(m, r) != negated);
        }
        Cond::Validity(m) => {
            let m = *m;
            retain_rows(sel, rows, |r| validity_in(m, r) != negated);
        }
        Cond::Route(m) => {
            let m = *m;
            retain_rows(sel, rows, |r| route_in(m, r) != negated);
        }
        Cond::Outcome(m) => {
            let m = *m;
            retain_rows(sel, rows, |r| outcome_in(m, r) != negated);
        }
        Cond::Num(f, op, v) => {
            let (f, op, v) = (*f, *op, *v);
            retain_rows(sel, rows, |r| op.holds(f.get(r), v) != negated);
        }
        Cond::Ann { cond, on_none } => {
            let on_none = *on_none;
            retain_rows(sel, rows, |r| {
                let hit = match env.row(index, r) {
                    None => on_none,
                    Some(a) => cond.eval(Some(a)),
                };
                hit != negated
            });
        }
        Cond::Stale { yes, no, memo } => {
            let (yes, no) = (*yes, *no);
            retain_rows(sel, rows, |r| {
                let stale = is_stale(env, env.row(index, r), memo, index, r);
                (if stale { yes } else { no }) != negated
            });
        }
        // Needs I/O: [`Compiled::eval`] handles it row by row.
        Cond::Text(_) => {}
    }
}

/// A query ready to evaluate.
#[derive(Debug, Clone)]
struct Compiled {
    conds: Vec<(bool, Cond)>,
    has_text: bool,
    needs_unicode: bool,
}

impl Compiled {
    /// `memo` sizes per-sym memo tables (worth it for many rows only).
    fn new(q: &Query, index: &RunIndex, memo: bool) -> Compiled {
        let memo_len = if memo { index.strings().len() } else { 0 };
        let mut conds: Vec<(bool, Cond)> = q
            .terms
            .iter()
            .map(|t| (t.negated, compile_term(&t.kind, memo_len)))
            .collect();
        for (_, c) in &mut conds {
            if let Cond::Ann { cond, on_none } = c {
                *on_none = cond.eval(None);
            }
        }
        conds.sort_by_key(|(_, c)| c.cost());
        let has_text = conds.iter().any(|(_, c)| matches!(c, Cond::Text(_)));
        let needs_unicode = conds
            .iter()
            .any(|(_, c)| matches!(c, Cond::Text(n) if !n.ascii));
        Compiled {
            conds,
            has_text,
            needs_unicode,
        }
    }

    /// Filter `rows`, a block at a time: one tight pass per term over the
    /// block (its rows stay in cache between passes), then the text terms row
    /// by row on what is left, reading each line once.
    fn run(&mut self, index: &RunIndex, env: &AnnEnv, rows: &[u32]) -> Vec<u32> {
        const BLOCK: usize = 1024;
        let slow = self
            .conds
            .iter()
            .position(|(_, c)| c.cost() >= TEXT_COST)
            .unwrap_or(self.conds.len());
        let mut out = Vec::new();
        let mut sel = Vec::with_capacity(BLOCK);
        for block in rows.chunks(BLOCK) {
            sel.clear();
            sel.extend_from_slice(block);
            if slow == 0 {
                // Drop indices past the end; the passes below do it otherwise.
                retain_rows(&mut sel, &index.rows, |_| true);
            }
            for (negated, cond) in &mut self.conds[..slow] {
                if sel.is_empty() {
                    break;
                }
                sweep(cond, *negated, index, env, &mut sel);
            }
            if slow < self.conds.len() && !sel.is_empty() {
                retain_rows(&mut sel, &index.rows, |r| self.eval(index, env, r, slow));
            }
            out.extend_from_slice(&sel);
        }
        out
    }

    /// Evaluate one row against the terms from `from` on.
    fn eval(&mut self, index: &RunIndex, env: &AnnEnv, row: &PairRow, from: usize) -> bool {
        let needs_unicode = self.needs_unicode;
        // The annotation, looked up once per row when a term needs it.
        let mut ann: Option<Option<&Annotation>> = None;
        // The line, ASCII-lowercased, and fully lowercased when a needle is not ASCII.
        let mut line: Option<(Vec<u8>, Option<String>)> = None;
        for (negated, cond) in self.conds.iter_mut().skip(from) {
            let hit = match cond {
                Cond::Status(m) => status_in(*m, row),
                Cond::Sym(f, set) => set.test_row(*f, row, index),
                Cond::Flag { flag, yes, no } => flag_in(*flag, *yes, *no, row),
                Cond::Expectation(m) => expectation_in(*m, row),
                Cond::Validity(m) => validity_in(*m, row),
                Cond::Route(m) => route_in(*m, row),
                Cond::Outcome(m) => outcome_in(*m, row),
                Cond::Num(f, op, v) => op.holds(f.get(row), *v),
                Cond::Ann { cond, on_none } => {
                    match *ann.get_or_insert_with(|| env.row(index, row)) {
                        None => *on_none,
                        Some(a) => cond.eval(Some(a)),
                    }
                }
                Cond::Stale { yes, no, memo } => {
                    let a = *ann.get_or_insert_with(|| env.row(index, row));
                    if is_stale(env, a, memo, index, row) {
                        *yes
                    } else {
                        *no
                    }
                }
                Cond::Text(needle) => {
                    let (ascii, uni) = match &mut line {
                        Some(l) => l,
                        None => {
                            let Ok(mut bytes) = index.read_line(row.loc) else {
                                return false;
                            };
                            let uni = (needs_unicode && !bytes.is_ascii())
                                .then(|| String::from_utf8_lossy(&bytes).to_lowercase());
                            bytes.make_ascii_lowercase();
                            line.insert((bytes, uni))
                        }
                    };
                    match (needle.ascii, uni) {
                        (false, Some(u)) => needle.finder.find(u.as_bytes()).is_some(),
                        _ => needle.finder.find(ascii).is_some(),
                    }
                }
            };
            if hit == *negated {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::annotations::Change;
    use crate::core::index::{OpenOptions, load_run};
    use crate::core::load::batch::Batch;
    use crate::core::row::Loc;
    use proptest::prelude::*;
    use std::io::Write;
    use std::time::Instant;

    use crate::core::index::sample::{SAMPLE, sample};

    fn all_rows(index: &RunIndex) -> Vec<u32> {
        (0..index.rows.len() as u32).collect()
    }

    /// The rows a query selects, checking that `filter` and `matches` agree.
    fn select(ctx: &Context, q: &str) -> Vec<u32> {
        let query = parse(q).unwrap_or_else(|e| panic!("{q}: {e}"));
        let rows = all_rows(ctx.index);
        let got = query.filter(ctx, &rows);
        let one_by_one: Vec<u32> = rows
            .iter()
            .copied()
            .filter(|&i| query.matches(ctx, &ctx.index.rows[i as usize]))
            .collect();
        assert_eq!(got, one_by_one, "filter and matches disagree on {q}");
        got
    }

    fn count(ctx: &Context, q: &str) -> usize {
        select(ctx, q).len()
    }

    #[test]
    fn coded_columns_agree_with_the_rows_past_255_values() {
        // 600 rows with 300 distinct transformations (past the one-byte
        // codes) and families, some not recorded, added over two batches.
        let base = sample();
        let mut strings: Vec<Box<str>> = base.strings().to_vec();
        let first = strings.len() as Sym;
        strings.extend((0..300).map(|i| format!("t-{i:03}").into_boxed_str()));
        let rows: Vec<PairRow> = (0..600)
            .map(|i| {
                let mut r = base.rows[i % base.rows.len()];
                r.transformation = if i % 9 == 0 {
                    NO_SYM
                } else {
                    first + ((i * 7) % 300) as Sym
                };
                r.family = if i % 11 == 0 { NO_SYM } else { r.family };
                r
            })
            .collect();
        let mut index = RunIndex::default();
        let (a, b) = rows.split_at(250);
        index.apply(Batch {
            strings,
            rows: a.to_vec(),
            ..Batch::default()
        });
        index.apply(Batch {
            rows: b.to_vec(),
            ..Batch::default()
        });
        let codes = index
            .transformation_codes()
            .expect("the column covers every row");
        assert!(codes.codes.contains(&Codes::OTHER));
        assert!(index.family_codes().is_some());
        let ctx = Context {
            index: &index,
            store: None,
        };
        for (q, pred) in [
            (
                "tr:t-29*",
                &(|r: &PairRow| index.str(r.transformation).starts_with("t-29"))
                    as &dyn Fn(&PairRow) -> bool,
            ),
            ("-tr:t-0*", &|r: &PairRow| {
                !index.str(r.transformation).starts_with("t-0")
            }),
            ("tr:t-299", &|r: &PairRow| {
                index.str(r.transformation) == "t-299"
            }),
            ("family:state-noise", &|r: &PairRow| {
                index.str(r.family) == "state-noise"
            }),
            ("-family:question", &|r: &PairRow| {
                index.str(r.family) != "question"
            }),
        ] {
            let want = expected(&index, pred);
            assert!(want > 0, "{q} selects something");
            assert_eq!(count(&ctx, q), want, "{q}");
        }
    }

    fn expected(index: &RunIndex, pred: impl Fn(&PairRow) -> bool) -> usize {
        index.rows.iter().filter(|r| pred(r)).count()
    }

    fn lines_containing(needle: &str) -> usize {
        let text = std::fs::read_to_string(SAMPLE).expect("read the sample");
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .filter(|l| l.to_lowercase().contains(needle))
            .count()
    }

    #[test]
    fn pair_and_decision_fields_count_like_the_rows_say() {
        let index = sample();
        assert_eq!(index.rows.len(), 72);
        let ctx = Context {
            index: &index,
            store: None,
        };
        let s = |sym| index.str(sym).to_ascii_lowercase();
        let cases: Vec<(&str, usize)> = vec![
            (
                "status:fail",
                expected(&index, |r| r.status() == Status::Fail),
            ),
            (
                "status:failure",
                expected(&index, |r| r.status().is_failure()),
            ),
            (
                "status:FAIL|pass",
                expected(&index, |r| {
                    matches!(r.status(), Status::Fail | Status::Pass)
                }),
            ),
            (
                "-status:pass",
                expected(&index, |r| r.status() != Status::Pass),
            ),
            (
                "family:state-noise",
                expected(&index, |r| s(r.family) == "state-noise"),
            ),
            (
                "family:question|state-noise",
                expected(&index, |r| {
                    matches!(s(r.family).as_str(), "question" | "state-noise")
                }),
            ),
            (
                "flip:yes",
                expected(&index, |r| r.flags() & flags::FLIP != 0),
            ),
            (
                "flip:no",
                expected(&index, |r| r.flags() & flags::FLIP == 0),
            ),
            (
                "flip:true",
                expected(&index, |r| r.flags() & flags::FLIP != 0),
            ),
            (
                "flip:False",
                expected(&index, |r| r.flags() & flags::FLIP == 0),
            ),
            (
                "near:yes",
                expected(&index, |r| r.flags() & flags::NEAR_BOUNDARY != 0),
            ),
            (
                "route:action->pass",
                expected(&index, |r| {
                    r.source_route() == Some(Route::Action)
                        && r.variant_route() == Some(Route::Pass)
                }),
            ),
            (
                "route:*->pass",
                expected(&index, |r| {
                    r.source_route().is_some() && r.variant_route() == Some(Route::Pass)
                }),
            ),
            (
                "route:review",
                expected(&index, |r| {
                    r.source_route().is_some()
                        && r.variant_route().is_some()
                        && (r.source_route() == Some(Route::Review)
                            || r.variant_route() == Some(Route::Review))
                }),
            ),
            (
                "transformation:add-*",
                expected(&index, |r| s(r.transformation).starts_with("add-")),
            ),
            (
                "tr:*evidence",
                expected(&index, |r| s(r.transformation).ends_with("evidence")),
            ),
            ("margin<0.05", expected(&index, |r| r.margin < 0.05f32)),
            (
                "-margin<0.05",
                expected(&index, |r| r.margin.is_nan() || r.margin >= 0.05f32),
            ),
            ("|dp|>0.1", expected(&index, |r| r.dp.abs() > 0.1f32)),
            ("dp<-0.1", expected(&index, |r| r.dp < -0.1f32)),
            ("|dc|>=0.15", expected(&index, |r| r.dc.abs() >= 0.15f32)),
            (
                "outcome:timeout",
                expected(&index, |r| {
                    r.source_outcome() == OutcomeCode::Timeout
                        || r.variant_outcome() == OutcomeCode::Timeout
                }),
            ),
            (
                "outcome:ok",
                expected(&index, |r| {
                    r.source_outcome() == OutcomeCode::Ok && r.variant_outcome() == OutcomeCode::Ok
                }),
            ),
            (
                "expectation:invariant",
                expected(&index, |r| r.expectation() == ExpKind::Invariant),
            ),
            (
                "validity:invalid",
                expected(&index, |r| r.validity() == ValidityCode::Invalid),
            ),
            (
                "suggested:none",
                expected(&index, |r| r.suggestion().is_none()),
            ),
            (
                "suggested:bound*",
                expected(&index, |r| {
                    r.suggestion().unwrap_or("").starts_with("bound")
                }),
            ),
            (
                "status:failure -family:question latency>=0",
                expected(&index, |r| {
                    r.status().is_failure() && s(r.family) != "question" && r.latency >= 0.0
                }),
            ),
            // With no annotation store every pair is uncategorised.
            ("category:none", 72),
            ("category:any", 0),
            ("", 72),
        ];
        for (q, want) in cases {
            assert_eq!(count(&ctx, q), want, "{q}");
        }
        // The counts that say something about the sample.
        for q in [
            "status:fail",
            "flip:yes",
            "route:action->pass",
            "transformation:add-*",
            "margin<0.05",
            "|dp|>0.1",
            "outcome:timeout",
        ] {
            let n = count(&ctx, q);
            assert!(n > 0 && n < 72, "{q} selects {n} of 72");
        }
        assert!(count(&ctx, "status:failure") > count(&ctx, "status:fail"));
    }

    #[test]
    fn text_terms_search_the_raw_line() {
        let index = sample();
        let ctx = Context {
            index: &index,
            store: None,
        };
        let once = lines_containing("attention");
        assert_eq!(once, 1);
        assert_eq!(count(&ctx, "attention"), once);
        assert_eq!(count(&ctx, "ATTENTION"), once);
        assert_eq!(count(&ctx, "-attention"), 72 - once);
        let phrase = lines_containing("payment step");
        assert!(phrase > 1 && phrase < 72);
        assert_eq!(count(&ctx, "\"payment step\""), phrase);
        assert_eq!(count(&ctx, "\"Payment STEP\" attention"), {
            let text = std::fs::read_to_string(SAMPLE).expect("read the sample");
            text.lines()
                .map(str::to_lowercase)
                .filter(|l| l.contains("payment step") && l.contains("attention"))
                .count()
        });
        // Ids are part of the text too.
        let id = index.str(index.rows[5].case).to_string();
        assert_eq!(
            count(&ctx, &format!("\"{id}\"")),
            lines_containing(&id.to_lowercase())
        );
        assert!(parse("attention").is_ok_and(|q| q.needs_text()));
        assert!(parse("status:fail dp<0").is_ok_and(|q| !q.needs_text()));
    }

    #[test]
    fn unicode_text_and_unreadable_lines() {
        let mut f = tempfile::NamedTempFile::new().expect("temp file");
        writeln!(
            f,
            r#"{{"case_id":"c1","variant_id":"v1","label":"ÄRGER im Büro","passed":false}}"#
        )
        .expect("write");
        writeln!(
            f,
            r#"{{"case_id":"c2","variant_id":"v1","label":"calm","passed":true}}"#
        )
        .expect("write");
        let path = f.path().to_string_lossy().to_string();
        let index = load_run(&[path], &OpenOptions::default()).expect("opens");
        let ctx = Context {
            index: &index,
            store: None,
        };
        assert_eq!(select(&ctx, "ärger"), vec![0]);
        assert_eq!(select(&ctx, "\"im büro\""), vec![0]);
        assert_eq!(select(&ctx, "CALM"), vec![1]);
        assert_eq!(select(&ctx, "case:C*"), vec![0, 1]);
        // A line that can no longer be read matches no text term, negated or not.
        f.as_file().set_len(0).expect("truncate");
        assert!(select(&ctx, "calm").is_empty());
        assert!(select(&ctx, "-calm").is_empty());
        assert_eq!(select(&ctx, "case:c2"), vec![1]);
        // Indices past the end are dropped, order is kept.
        let q = parse("case:c*").expect("parses");
        assert_eq!(q.filter(&ctx, &[1, 7, 0, 1]), vec![1, 0, 1]);
    }

    #[test]
    fn triage_fields_follow_the_annotation_store() {
        let mut index = sample();
        // Every row's key, from its line (the index learns keys only where needed).
        let keys: HashMap<u64, RecordKey> = index
            .rows
            .iter()
            .map(|r| {
                let line = index.read_line(r.loc).expect("the line reads");
                (
                    r.loc.id(),
                    crate::core::index::keys::line_key(&line).expect("a key"),
                )
            })
            .collect();
        let key = |r: &PairRow| keys[&r.loc.id()];
        let dir = tempfile::tempdir().expect("temp dir");
        let mut store =
            AnnotationStore::open(&dir.path().join("run.triage.jsonl"), "alice").expect("store");
        let rows = index.rows.clone();
        let row = |i: usize| &rows[i];
        let id_list: Vec<(String, String)> = rows
            .iter()
            .map(|r| {
                (
                    index.str(r.case).to_string(),
                    index.str(r.variant).to_string(),
                )
            })
            .collect();
        let ids = |i: usize| id_list[i].clone();
        let change = |key: RecordKey, i: usize, cat: Option<&str>, note: Option<&str>| Change {
            key,
            case_id: ids(i).0,
            variant_id: ids(i).1,
            category: cat.map(str::to_string),
            note: note.map(str::to_string),
            source: AnnotationSource::Manual,
        };
        let old_key = RecordKey([0xab; 16]);
        assert!(index.rows.iter().all(|r| key(r) != old_key));
        let mut suggested = change(key(row(1)), 1, Some("distractor"), None);
        suggested.source = AnnotationSource::Suggestion;
        store
            .apply(vec![
                change(key(row(0)), 0, Some("boundary"), Some("right on the line")),
                suggested,
                change(key(row(2)), 2, None, Some("look again")),
                // An annotation made on an older version of pair 40.
                change(old_key, 40, Some("boundary"), None),
            ])
            .expect("annotations saved");
        index.resolve_keys(&store);
        let ctx = Context {
            index: &index,
            store: Some(&store),
        };
        // Expected counts from the changes just made, not from the store.
        type Made<'a> = (RecordKey, (String, String), Option<&'a str>, bool);
        let annotated: Vec<Made> = vec![
            (key(row(0)), ids(0), Some("boundary"), true),
            (key(row(1)), ids(1), Some("distractor"), false),
            (key(row(2)), ids(2), None, true),
            (old_key, ids(40), Some("boundary"), false),
        ];
        let mine = |r: &PairRow| annotated.iter().find(|a| a.0 == key(r));
        let cat = |r: &PairRow| mine(r).and_then(|a| a.2);
        let stale = |r: &PairRow| {
            let rid = (
                index.str(r.case).to_string(),
                index.str(r.variant).to_string(),
            );
            mine(r).is_none() && annotated.iter().any(|a| a.0 != key(r) && a.1 == rid)
        };
        let n_stale = expected(&index, stale);
        assert!(n_stale >= 1);
        let cases: Vec<(&str, usize)> = vec![
            ("category:none", expected(&index, |r| cat(r).is_none())),
            (
                "category:boundary",
                expected(&index, |r| cat(r) == Some("boundary")),
            ),
            ("category:any", expected(&index, |r| cat(r).is_some())),
            ("category:BOUND*|distractor", 2),
            ("-category:none", 2),
            (
                "note:has",
                expected(&index, |r| mine(r).is_some_and(|a| a.3)),
            ),
            (
                "note:none",
                72 - expected(&index, |r| mine(r).is_some_and(|a| a.3)),
            ),
            ("source:suggestion", 1),
            ("source:manual", 1),
            ("reviewer:alice", 3),
            ("reviewer:bob", 0),
            ("-reviewer:al*", 69),
            ("stale:yes", n_stale),
            ("stale:no", 72 - n_stale),
            ("stale:yes category:none", n_stale),
        ];
        for (q, want) in cases {
            assert_eq!(count(&ctx, q), want, "{q}");
        }
        assert_eq!(select(&ctx, "category:boundary"), vec![0]);
        assert_eq!(select(&ctx, "note:has category:none"), vec![2]);
    }

    #[test]
    fn value_bits_follow_the_index_names() {
        use Status as S;
        for st in [S::Invalid, S::ServiceError, S::Fail, S::Unchecked, S::Pass] {
            assert_eq!(enum_mask(Field::Status, st.name()), 1 << status_bit(st));
        }
        use ExpKind as E;
        for e in [
            E::None,
            E::Invariant,
            E::NotLessUrgent,
            E::NotMoreUrgent,
            E::AllowedRoutes,
            E::Unknown,
        ] {
            assert_eq!(enum_mask(Field::Expectation, e.name()), 1 << exp_bit(e));
        }
        use ValidityCode as V;
        for v in [V::Valid, V::Invalid, V::Undeclared, V::NotRecorded] {
            assert_eq!(enum_mask(Field::Validity, v.name()), 1 << validity_bit(v));
        }
        use OutcomeCode as O;
        for o in [
            O::NotRecorded,
            O::Ok,
            O::Timeout,
            O::Error,
            O::InvalidResponse,
            O::Other,
        ] {
            assert_eq!(enum_mask(Field::Outcome, o.name()), 1 << outcome_bit(o));
        }
        for r in Route::ALL {
            let m = route_mask(&format!("{}->{}", r.name(), r.name())).expect("a route");
            assert_eq!(m, 1 << (route_bit(r) * 4));
        }
    }

    #[test]
    fn canonical_text_round_trips_byte_for_byte() {
        for s in [
            "family:state-noise flip:yes category:none",
            "-status:pass dp<-0.1 \"checkout outage\"",
            "transformation:add-* |dp|>0.1 |dc|>=0.15 latency>=30000",
            "route:*->pass route:action->* route:review outcome:ok|timeout",
            "case:\"checkout outage\"|c-1 note:has stale:no source:suggestion",
            "\"say \\\"hi\\\"\" \"-x\" \"a:b\" rep=3 margin<=0.05 vmargin>0",
            "case:\"tab\\there\\u001b\" \"C:\\\\new\" \"line\\nbreak\"",
            "",
        ] {
            let q = parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(q.to_string(), s);
        }
        // JSON escapes read as JSON does; other backslashes are literal.
        let q = parse(r#"case:"\u00e9\ud83d\ude00\/\x" "\ud800""#).expect("parses");
        let want = [
            Term {
                negated: false,
                kind: TermKind::Match {
                    field: Field::Case,
                    values: vec!["\u{e9}\u{1f600}/\\x".to_string()],
                },
            },
            Term {
                negated: false,
                kind: TermKind::Text("\\ud800".to_string()),
            },
        ];
        assert_eq!(q.terms(), want);
        // Outside quotes a backslash is just a character.
        assert_eq!(q.to_string(), "case:\u{e9}\u{1f600}/\\x \\ud800");
        assert_eq!(parse(&q.to_string()), Ok(q));
        // Aliases, letter case and extra blanks print canonically.
        let q = parse("  TR:Add-*   Flip:YES\t-\"two words\" ").expect("parses");
        assert_eq!(
            q.to_string(),
            "transformation:Add-* flip:YES -\"two words\""
        );
        assert_eq!(parse("").expect("empty"), Query::default());
        assert!(parse(" \t ").expect("blank").is_empty());
        assert_eq!(FIELDS.len(), Field::ALL.len());
        for (name, f) in FIELDS.iter().zip(Field::ALL) {
            assert_eq!(*name, f.name());
            assert_eq!(Field::from_name(name), Some(f));
        }
    }

    #[test]
    fn errors_say_where_and_what_is_allowed() {
        let e = |s: &str| parse(s).expect_err(s);
        let x = e("famly:x");
        assert_eq!(x.pos, 0);
        assert!(x.message.contains("unknown field `famly`"), "{x}");
        assert!(x.message.contains("status, family"), "{x}");
        assert_eq!(x.to_string(), format!("{} (at 0)", x.message));
        let x = e("dp<abc");
        assert_eq!(x.pos, 3);
        assert!(x.message.contains("bad number `abc`"), "{x}");
        let x = e("\"open");
        assert_eq!(x.pos, 0);
        assert!(x.message.contains("unterminated quote"), "{x}");
        let x = e("family:");
        assert_eq!(x.pos, 7);
        assert!(x.message.contains("empty value"), "{x}");
        let table: [(&str, usize, &str); 17] = [
            ("status:fail -famly:x", 13, "unknown field"),
            (
                "status:nope",
                7,
                "unknown status `nope`; values: fail, pass",
            ),
            ("route:act->pass", 6, "unknown route `act`"),
            ("route:->pass", 6, "empty side"),
            ("family:a|", 9, "empty value"),
            ("dp=<3", 2, "bad operator `=<`"),
            ("dp<", 3, "empty value"),
            ("dp<inf", 3, "bad number"),
            ("dp:0.1", 2, "is a number"),
            ("family>3", 6, "not a number"),
            ("ok -", 3, "must be followed"),
            ("\"\"", 0, "empty phrase"),
            ("\"a\"b", 3, "after the closing quote"),
            ("a\"b\"", 1, "quote inside a word"),
            ("a|b", 1, "separates"),
            (":x", 0, "needs a field name"),
            ("é case:\"x", 7, "unterminated quote"),
        ];
        for (s, pos, msg) in table {
            let x = e(s);
            assert_eq!(x.pos, pos, "{s}: {x}");
            assert!(x.message.contains(msg), "{s}: {x}");
        }
    }

    // -- Property: printing then parsing gives the same query -----------------

    fn arb_text() -> impl Strategy<Value = String> {
        let special = prop_oneof![
            Just('"'),
            Just('\\'),
            Just(' '),
            Just('|'),
            Just(':'),
            Just('-'),
            Just('*'),
            Just('<'),
            Just('='),
            Just('é'),
            Just('\u{3000}'),
            Just('\n'),
            any::<char>(),
        ];
        prop_oneof![
            "[a-zA-Z0-9_.*-]{1,10}",
            "[a-z]{1,5} [a-z]{1,5}",
            "\\PC{1,12}",
            proptest::collection::vec(special, 1..8).prop_map(|v| v.into_iter().collect()),
        ]
    }

    fn enum_value(field: Field) -> BoxedStrategy<String> {
        let mut opts: Vec<String> = field.values().iter().map(|s| s.to_string()).collect();
        opts.extend(field.values().iter().map(|s| s.to_uppercase()));
        opts.push("*".to_string());
        if field == Field::Route {
            opts.extend(
                ["action->pass", "*->pass", "action->*", "Rev*->*", "*->*"].map(String::from),
            );
        }
        prop::sample::select(opts).boxed()
    }

    fn arb_term() -> impl Strategy<Value = Term> {
        let text_fields = prop::sample::select(vec![
            Field::Family,
            Field::Transformation,
            Field::Case,
            Field::Variant,
            Field::Contract,
            Field::Schema,
            Field::Model,
            Field::Category,
            Field::Suggested,
            Field::Reviewer,
        ]);
        let enum_fields = prop::sample::select(vec![
            Field::Status,
            Field::Expectation,
            Field::Validity,
            Field::Flip,
            Field::Route,
            Field::Outcome,
            Field::Near,
            Field::Note,
            Field::Stale,
            Field::Source,
        ]);
        let num_fields = prop::sample::select(
            Field::ALL
                .into_iter()
                .filter(|f| f.is_numeric())
                .collect::<Vec<_>>(),
        );
        let ops = prop::sample::select(vec![Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::Eq]);
        let number = prop_oneof![
            any::<f64>().prop_filter("finite", |x| x.is_finite()),
            (-100_000i32..100_000).prop_map(|x| f64::from(x) / 1000.0),
        ];
        let kind = prop_oneof![
            (text_fields, proptest::collection::vec(arb_text(), 1..4))
                .prop_map(|(field, values)| TermKind::Match { field, values }),
            enum_fields.prop_flat_map(|field| {
                proptest::collection::vec(enum_value(field), 1..3)
                    .prop_map(move |values| TermKind::Match { field, values })
            }),
            (num_fields, ops, number).prop_map(|(field, op, value)| TermKind::Compare {
                field,
                op,
                value
            }),
            arb_text().prop_map(TermKind::Text),
        ];
        (any::<bool>(), kind).prop_map(|(negated, kind)| Term { negated, kind })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn printed_queries_parse_back(terms in proptest::collection::vec(arb_term(), 0..6)) {
            let q = Query { terms };
            let text = q.to_string();
            prop_assert_eq!(parse(&text), Ok(q), "text: {}", text);
        }

        #[test]
        fn parse_never_panics_and_reprints_stably(s in "\\PC{0,40}") {
            if let Ok(q) = parse(&s) {
                prop_assert_eq!(parse(&q.to_string()), Ok(q));
            }
        }
    }

    // -- Benchmark ---------------------------------------------------------------

    /// A synthetic index of `n` rows cloned from the sample, with 1 case id per 10 rows.
    fn synthetic(n: usize) -> RunIndex {
        let base = sample();
        let mut strings: Vec<Box<str>> = base.strings().to_vec();
        let first_case = strings.len() as Sym;
        strings.extend((0..n.div_ceil(10)).map(|i| format!("case-{i:07}").into_boxed_str()));
        let rows: Vec<PairRow> = (0..n)
            .map(|i| {
                let mut r = base.rows[i % base.rows.len()];
                r.case = first_case + (i / 10) as Sym;
                // A place of its own, for a key of its own.
                r.loc = Loc::new(0, i as u32 + 1, i as u64 * 4096, r.loc.len);
                r
            })
            .collect();
        let keys: Vec<(PairRow, RecordKey)> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| (*r, RecordKey((i as u128).to_le_bytes())))
            .collect();
        let mut index = RunIndex::default();
        index.apply(Batch {
            strings,
            rows,
            ..Batch::default()
        });
        for (r, k) in keys {
            index.remember_key(&r, k);
        }
        index
    }

    /// CPU time of this thread, in ms (steadier than wall time on a busy machine).
    fn thread_cpu_ms() -> f64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec for the call to fill.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as f64 * 1000.0 + ts.tv_nsec as f64 / 1e6
    }

    /// Best of 7: wall ms on all cores, wall and CPU ms on one thread.
    fn time_queries(ctx: &Context, queries: &[&str]) {
        let rows = all_rows(ctx.index);
        println!("     rows   all cores: wall ms   1 thread: wall ms, cpu ms       hits  query");
        for q in queries {
            let query = parse(q).unwrap_or_else(|e| panic!("{q}: {e}"));
            let (mut wall, mut wall1, mut cpu1) = (f64::MAX, f64::MAX, f64::MAX);
            let mut hits = 0;
            for _ in 0..7 {
                let t = Instant::now();
                hits = query.filter(ctx, &rows).len();
                wall = wall.min(t.elapsed().as_secs_f64() * 1000.0);
                let (t, c) = (Instant::now(), thread_cpu_ms());
                let one = query.filter_on(ctx, &rows, 1).len();
                cpu1 = cpu1.min(thread_cpu_ms() - c);
                wall1 = wall1.min(t.elapsed().as_secs_f64() * 1000.0);
                assert_eq!(one, hits);
            }
            println!(
                "{:>9}   {wall:8.2}             {wall1:8.2} {cpu1:8.2}      {hits:>8}  {q}",
                rows.len()
            );
        }
    }

    /// `cargo test --release --lib query::tests::bench_filter -- --ignored --nocapture`
    #[test]
    #[ignore = "benchmark"]
    fn bench_filter() {
        let n = 1_000_000;
        let t = Instant::now();
        let index = synthetic(n);
        println!("built {n} synthetic rows in {:?}", t.elapsed());
        let dir = tempfile::tempdir().expect("temp dir");
        let mut store =
            AnnotationStore::open(&dir.path().join("run.triage.jsonl"), "alice").expect("store");
        let changes = (0..200)
            .map(|i| {
                let r = &index.rows[i * 997];
                Change {
                    key: match index.key(r) {
                        Some(k) if i % 4 != 0 => k,
                        _ => RecordKey([i as u8; 16]),
                    },
                    case_id: index.str(r.case).to_string(),
                    variant_id: index.str(r.variant).to_string(),
                    category: Some("boundary".to_string()),
                    note: None,
                    source: AnnotationSource::Manual,
                }
            })
            .collect();
        store.apply(changes).expect("annotate");
        // As the viewer does once rows arrive or the journal changes.
        let mut index = index;
        index.resolve_keys(&store);
        let ctx = Context {
            index: &index,
            store: Some(&store),
        };
        // The floor: hand-written loops over the same rows.
        let rows = all_rows(&index);
        let (mut one, mut two) = (f64::MAX, f64::MAX);
        for _ in 0..7 {
            let t = thread_cpu_ms();
            let hits: Vec<u32> = rows
                .iter()
                .copied()
                .filter(|&i| index.rows[i as usize].status() == Status::Fail)
                .collect();
            one = one.min(thread_cpu_ms() - t);
            assert!(!hits.is_empty());
            let t = thread_cpu_ms();
            let hits: Vec<u32> = rows
                .iter()
                .copied()
                .filter(|&i| {
                    let r = &index.rows[i as usize];
                    r.dp.abs() > 0.1 && r.margin < 0.05
                })
                .collect();
            two = two.min(thread_cpu_ms() - t);
            assert!(!hits.is_empty());
        }
        println!(
            "PairRow is {} bytes; hand-written loops take {one:.2} ms (status:fail) and {two:.2} ms (|dp|>0.1 margin<0.05) of CPU",
            std::mem::size_of::<PairRow>()
        );
        time_queries(
            &ctx,
            &[
                "status:fail",
                "status:failure",
                "family:state-noise flip:yes",
                "transformation:add-*",
                "-status:pass dp<-0.1",
                "|dp|>0.1 margin<0.05",
                "route:*->pass outcome:ok",
                "case:case-00012*",
                "category:none",
                "category:boundary",
                "stale:yes",
            ],
        );
    }

    /// Time a real run: `TRIAGE_BENCH_RUN=/tmp/big.jsonl cargo test --release --lib
    /// query::tests::bench_real_run -- --ignored --nocapture`.
    #[test]
    #[ignore = "benchmark"]
    fn bench_real_run() {
        let Ok(path) = std::env::var("TRIAGE_BENCH_RUN") else {
            println!("set TRIAGE_BENCH_RUN to a run file");
            return;
        };
        let t = Instant::now();
        let index = load_run(&[path], &OpenOptions::default()).expect("opens");
        println!("indexed {} rows in {:?}", index.rows.len(), t.elapsed());
        let ctx = Context {
            index: &index,
            store: None,
        };
        time_queries(
            &ctx,
            &[
                "status:fail",
                "status:failure family:question",
                "transformation:add-*",
                "-status:pass dp<-0.1",
                "|dp|>0.1 margin<0.05",
                "route:*->pass",
                "category:none",
                "status:failure timeout",
            ],
        );
    }
}
