//! Parsing a query's text, and printing a query back as its canonical text.

use std::fmt;

use super::*;

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
        | Field::Disagree
        | Field::Outcome
        | Field::Note
        | Field::Source => enum_mask(field, v) != 0,
        Field::Change => super::change_mask(v) != 0,
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
const STATUS_BITS: [&str; 6] = ["invalid", "error", "fail", "unchecked", "pass", "boundary"];
const EXP_BITS: [&str; 6] = [
    "none",
    "invariant",
    "not-less-urgent",
    "not-more-urgent",
    "allowed-routes",
    "unknown",
];
const VALIDITY_BITS: [&str; 5] = ["valid", "invalid", "undeclared", "not-recorded", "unknown"];
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
pub(super) fn enum_mask(field: Field, v: &str) -> u64 {
    match field {
        Field::Status if v.eq_ignore_ascii_case("failure") => 0b10_0111,
        Field::Status => glob_mask(v, &STATUS_BITS),
        Field::Expectation => glob_mask(v, &EXP_BITS),
        Field::Validity => glob_mask(v, &VALIDITY_BITS),
        Field::Flip | Field::Near | Field::Stale | Field::Disagree
            if v.eq_ignore_ascii_case("true") =>
        {
            0b01
        }
        Field::Flip | Field::Near | Field::Stale | Field::Disagree
            if v.eq_ignore_ascii_case("false") =>
        {
            0b10
        }
        Field::Flip | Field::Near | Field::Stale | Field::Disagree => glob_mask(v, &YES_NO_BITS),
        Field::Outcome => glob_mask(v, &OUTCOME_BITS),
        Field::Note => glob_mask(v, &NOTE_BITS),
        Field::Source => glob_mask(v, &SOURCE_BITS),
        _ => 0,
    }
}

/// Bit `3 * source + variant` for each route transition a value selects.
pub(super) fn route_mask(v: &str) -> Result<u16, String> {
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
pub(super) fn outcome_mask(v: &str) -> u64 {
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
