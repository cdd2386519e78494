//! One line's path: trimmed, checked as UTF-8, read by the fast path, then
//! by the slow path when the fast one declines it, and made a row or a
//! problem.
//!
//! `process_line` is the whole step. The fast path (`fast_row`) reads the
//! line with the typed, borrowing scanner of [`super::fast`] and the
//! lean derivation; its strings stay spans of the chunk. The slow path
//! (`slow_row`) reads a whole [`Value`], maps it with [`map_record`] and
//! names a problem when it cannot ([`ProblemKind`]). Either gives the same
//! `RowData`: the fuzz target `lines` and the tests in `tests/line.rs`
//! check that ([`line_both_ways`]).

use std::borrow::Cow;

use serde_json::Value;

use crate::core::model::{PairRecord, Policy};
use crate::core::problem::ProblemKind;
use crate::core::record::{RecordError, map_record};
use crate::core::row::{ExpKind, InputsDigest, OutcomeCode, RowCodes, flags};
use crate::core::schema::{
    CONVERTED_FROM, RawMembers, S_QUESTION, S_STATE, SIDE, T_ALLOWED, T_SOURCE, T_VARIANT, TOP,
};

use super::fast::{Diff, LineReader};

/// How lines are read: the typed fast path with the slow path as fallback,
/// or the slow path alone (kept for tests that compare the two).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseMode {
    Fast,
    Slow,
}

/// One line found in a chunk.
pub(crate) struct Line {
    /// 1-based line number.
    pub(super) no: u64,
    /// Where the line starts in the file.
    pub(super) offset: u64,
    /// Its bytes in the chunk (without the newline).
    start: usize,
    end: usize,
    terminated: bool,
    /// Longer than the limit: reported, not parsed. `len` is its full length.
    overlong: Option<u64>,
}

/// What one line gave. Nearly every line is a row, so the row is held in
/// place: boxing it would cost an allocation per line to save space on the
/// rare blank or problem.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum LineOut {
    Blank,
    Problem(ProblemKind, String),
    Row(RowData),
}

/// A string of a row: a span of the chunk it was read from, or its own copy
/// (when it had escapes, or came from the slow path).
#[derive(Debug)]
pub(super) enum Text {
    Span(u32, u32),
    Owned(String),
    Static(&'static str),
}

impl Text {
    /// `s` as a span of `buf` when it lies inside it.
    fn of(buf: &[u8], s: Cow<'_, str>) -> Text {
        match s {
            Cow::Borrowed(b) => {
                let start = (b.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize);
                match (u32::try_from(start), u32::try_from(b.len())) {
                    (Ok(st), Ok(len)) if start + b.len() <= buf.len() => Text::Span(st, len),
                    _ => Text::Owned(b.to_string()),
                }
            }
            Cow::Owned(o) => Text::Owned(o),
        }
    }

    fn get<'a>(&'a self, buf: &'a [u8]) -> &'a str {
        std::str::from_utf8(self.bytes(buf)).unwrap_or("")
    }

    /// Its bytes; a span lies in a line that was validated as UTF-8.
    #[inline]
    pub(super) fn bytes<'a>(&'a self, buf: &'a [u8]) -> &'a [u8] {
        match self {
            Text::Span(s, l) => buf.get(*s as usize..(*s + *l) as usize).unwrap_or(b""),
            Text::Owned(o) => o.as_bytes(),
            Text::Static(s) => s.as_bytes(),
        }
    }
}

/// A pair's row before its strings are interned.
#[derive(Debug)]
pub(crate) struct RowData {
    /// Bytes trimmed from the start of the line (BOM, blanks), and the body's length.
    pub(super) trim_start: usize,
    pub(super) body_len: usize,
    pub(super) case: Text,
    pub(super) variant: Text,
    pub(super) transformation: Text,
    pub(super) family: Option<Text>,
    pub(super) suggestion: Option<&'static str>,
    pub(super) contract: Option<Text>,
    pub(super) schema: Option<Text>,
    pub(super) model: Option<Text>,
    /// The thresholds that route the pair, kept beside its versions (the
    /// summary warns when one case mixes two).
    pub(super) policy: Option<Policy>,
    pub(super) summary: Summary,
    /// Field warnings, as problem messages.
    pub(super) warnings: Vec<String>,
    /// Each side's question and state and the declared changes, digested
    /// as written.
    pub(super) inputs: InputsDigest,
}

/// The numbers and codes of a row.
#[derive(Debug, Clone, Copy)]
pub(super) struct Summary {
    /// The codes, without the suggestion (kept in [`RowData`]).
    pub(super) codes: RowCodes,
    pub(super) dp: f32,
    pub(super) dc: f32,
    pub(super) margin: f32,
    pub(super) variant_margin: f32,
    pub(super) latency: f32,
    /// The recorded repetition (one of `u32::MAX` or more is not kept).
    pub(super) repetition: Option<u32>,
}

/// Everything a row needs from a record and its derivation.
fn summarize(record: &PairRecord, d: &crate::core::derive::Lean) -> Summary {
    use crate::core::model::Expectation;
    let mut fl = 0u8;
    if d.flip == Some(true) {
        fl |= flags::FLIP;
    }
    if d.inferred {
        fl |= flags::INFERRED;
    }
    if d.near_boundary == Some(true) {
        fl |= flags::NEAR_BOUNDARY;
    }
    if d.warnings {
        fl |= flags::WARNINGS;
    }
    if d.passed_mismatch {
        fl |= flags::PASSED_MISMATCH;
    }
    if d.route_mismatch {
        fl |= flags::ROUTE_MISMATCH;
    }
    if let Some(unsafe_approval) = record.unsafe_approval {
        fl |= flags::APPROVAL_FORBIDDEN;
        if unsafe_approval {
            fl |= flags::UNSAFE_APPROVAL;
        }
    }
    let validity = d.validity;
    let expectation = match &record.expectation {
        None => ExpKind::None,
        Some(Expectation::Invariant { .. }) => ExpKind::Invariant,
        Some(Expectation::NotLessUrgent { .. }) => ExpKind::NotLessUrgent,
        Some(Expectation::NotMoreUrgent { .. }) => ExpKind::NotMoreUrgent,
        Some(Expectation::AllowedRoutes { .. }) => ExpKind::AllowedRoutes,
        Some(Expectation::Unknown { .. }) => ExpKind::Unknown,
    };
    let latency = match (record.source.latency_ms, record.variant.latency_ms) {
        (Some(a), Some(b)) => a.max(b) as f32,
        (Some(a), None) | (None, Some(a)) => a as f32,
        (None, None) => f32::NAN,
    };
    Summary {
        codes: RowCodes {
            status: d.status,
            flags: fl,
            source_route: d.source_route,
            variant_route: d.variant_route,
            expectation,
            source_outcome: OutcomeCode::of(record.source.effective_outcome().as_ref()),
            variant_outcome: OutcomeCode::of(record.variant.effective_outcome().as_ref()),
            validity,
            suggestion: None,
        },
        dp: d.dp.map(|x| x as f32).unwrap_or(f32::NAN),
        dc: d.dc.map(|x| x as f32).unwrap_or(f32::NAN),
        margin: d.source_margin.map(|x| x as f32).unwrap_or(f32::NAN),
        variant_margin: d.variant_margin.map(|x| x as f32).unwrap_or(f32::NAN),
        latency,
        repetition: record
            .repetition
            .and_then(|r| u32::try_from(r).ok())
            .filter(|&r| r != u32::MAX),
    }
}

/// A line over the limit, `len` bytes long, reported without being read.
#[inline]
pub(super) fn overlong_line(no: u64, offset: u64, len: u64) -> Line {
    Line {
        no,
        offset,
        start: 0,
        end: 0,
        terminated: true,
        overlong: Some(len),
    }
}

/// The line `no` at `buf[start..end]` of a chunk read from file offset
/// `base`; `terminated` when a newline ends it.
#[inline]
pub(crate) fn line_at(
    no: u64,
    base: u64,
    start: usize,
    end: usize,
    terminated: bool,
    max: usize,
) -> Line {
    let len = end - start;
    Line {
        no,
        offset: base + start as u64,
        start,
        end,
        terminated,
        overlong: (len > max).then_some(len as u64),
    }
}

/// Parse one line: fast path first unless told otherwise, slow path on any doubt.
pub(crate) fn process_line(buf: &[u8], line: &Line, max_line: usize, mode: ParseMode) -> LineOut {
    if let Some(len) = line.overlong {
        return LineOut::Problem(
            ProblemKind::TooLong,
            format!(
                "the line is {} long, over the {} limit; if it is genuine, raise the limit with --max-line-bytes or max_line_bytes in the config",
                human_bytes(len),
                human_bytes(max_line as u64)
            ),
        );
    }
    let raw = &buf[line.start..line.end];
    // Trim what is not content: a BOM on the first line, CR of CRLF, blanks.
    let mut start = 0usize;
    let mut end = raw.len();
    if line.no == 1 && raw.starts_with(&[0xEF, 0xBB, 0xBF]) {
        start = 3;
    }
    while end > start && matches!(raw[end - 1], b'\r' | b' ' | b'\t') {
        end -= 1;
    }
    while start < end && matches!(raw[start], b' ' | b'\t') {
        start += 1;
    }
    if start == end {
        return LineOut::Blank;
    }
    // Validated sixteen or thirty-two bytes a step; the standard library
    // finds the position of the first bad byte for the message.
    let bytes = &raw[start..end];
    let body = match simdutf8::basic::from_utf8(bytes).or_else(|_| std::str::from_utf8(bytes)) {
        Ok(s) => s,
        Err(e) => {
            return LineOut::Problem(
                ProblemKind::InvalidUtf8,
                format!(
                    "invalid UTF-8 at byte {} of the line; re-encode the file as UTF-8",
                    e.valid_up_to() + 1
                ),
            );
        }
    };
    let out = match mode {
        ParseMode::Fast => fast_row(buf, body).map(LineOut::Row),
        ParseMode::Slow => None,
    };
    let mut out = out.unwrap_or_else(|| slow_row(body, line.terminated));
    if let LineOut::Row(d) = &mut out {
        d.trim_start = start;
        d.body_len = end - start;
    }
    out
}

/// One line read by the fast path and by the slow path, each described as
/// text (`None` when the fast path declines the line and hands it on). The
/// loader uses the fast path when it accepts a line, so wherever it does the
/// two descriptions must be equal: the fuzz target `lines` checks this.
#[doc(hidden)]
pub fn line_both_ways(bytes: &[u8], max_line: usize) -> (Option<String>, String) {
    let line = line_at(1, 0, 0, bytes.len(), true, max_line);
    let describe = |out: &LineOut| match out {
        LineOut::Row(d) => describe_row(d, bytes),
        other => format!("{other:?}"),
    };
    let slow = describe(&process_line(bytes, &line, max_line, ParseMode::Slow));
    let fast = match process_line(bytes, &line, max_line, ParseMode::Fast) {
        out @ LineOut::Row(_) => Some(describe(&out)),
        _ => None,
    };
    (fast, slow)
}

/// Whether the fast path makes a row of `line` (read, derived, suggested
/// and summarised as the loader keeps it), for `examples/stages.rs`.
#[doc(hidden)]
pub fn fast_row_of(line: &str) -> bool {
    fast_row(line.as_bytes(), line).is_some()
}

/// A row with its strings resolved, for [`line_both_ways`].
fn describe_row(d: &RowData, buf: &[u8]) -> String {
    let opt = |t: &Option<Text>| t.as_ref().map(|t| t.get(buf).to_string());
    format!(
        "trim {} len {} case {:?} variant {:?} transformation {:?} family {:?} \
         suggestion {:?} contract {:?} schema {:?} model {:?} policy {:?} summary {:?} warnings {:?} \
         inputs {:?}",
        d.trim_start,
        d.body_len,
        d.case.get(buf),
        d.variant.get(buf),
        d.transformation.get(buf),
        opt(&d.family),
        d.suggestion,
        opt(&d.contract),
        opt(&d.schema),
        opt(&d.model),
        d.policy,
        d.summary,
        d.warnings,
        d.inputs,
    )
}

thread_local! {
    /// The thread's fast-path reader. It keeps its memos from line to line
    /// across a rayon worker's lines: the lines of a case, read one after
    /// another, recall the state they share.
    static READER: std::cell::RefCell<LineReader> = Default::default();
}

/// Forget what this thread's reader keeps from line to line, so that what
/// follows reads as on a fresh thread (for the fuzz targets, whose inputs
/// must each reproduce alone).
#[doc(hidden)]
pub fn forget_states() {
    READER.with_borrow_mut(LineReader::forget);
}

/// The fast path: one scan of the line, by the thread's reader.
/// [`LineReader::parse`] validates the line on its own (it declines
/// repeated keys, bad numbers, deep nesting...); the record key is not
/// computed here (see `index::keys`).
fn fast_row(buf: &[u8], body: &str) -> Option<RowData> {
    READER.with_borrow_mut(|reader| read_row(reader, buf, body))
}

fn read_row(reader: &mut LineReader, buf: &[u8], body: &str) -> Option<RowData> {
    let mut f = reader.parse(body)?;
    // The reader leaves ids out of the record; the derivation may infer a
    // transformation from the variant id, and the suggestion the family of
    // a pair that records neither side's question or state, whatever
    // transformation it records.
    f.record.variant_id.clear();
    f.record.variant_id.push_str(&f.variant_id);
    // Two states that differ are diffed only if the derivation reads it.
    let failed = std::cell::Cell::new(false);
    let d = match f.diff {
        Diff::Done(_) => crate::core::derive::lean(&f.record, f.diff_entries()),
        Diff::Later { covered } => crate::core::derive::lean_on(&f.record, covered, || {
            let d = f.state_diff();
            failed.set(d.is_none());
            d
        }),
    };
    if failed.get() {
        f.recycle();
        return None;
    }
    let suggestion = crate::core::suggest::lean_category(&f.record, &d);
    let summary = summarize(&f.record, &d);
    // The record's strings are spans of the line here: the record goes back
    // to the reader, whose buffers the next line reuses.
    let transformation = transformation_name(
        &d,
        Text::of(buf, f.transformation.take().unwrap_or_default()),
    );
    let warnings = f
        .record
        .field_warnings
        .iter()
        .map(|w| format!("{} / {}: {w}", f.case_id, f.variant_id))
        .collect();
    let row = RowData {
        trim_start: 0,
        body_len: 0,
        case: Text::of(buf, std::mem::take(&mut f.case_id)),
        variant: Text::of(buf, std::mem::take(&mut f.variant_id)),
        transformation,
        family: f
            .family
            .take()
            .map(|s| Text::of(buf, s))
            .or_else(|| inferred_family(&d)),
        suggestion,
        contract: f.contract.take().map(|s| Text::of(buf, s)),
        schema: f.schema.take().map(|s| Text::of(buf, s)),
        model: f.model.take().map(|s| Text::of(buf, s)),
        policy: f.record.policy,
        summary,
        warnings,
        inputs: f.inputs(),
    };
    f.recycle();
    Some(row)
}

/// The transformation name of a row: the one `recorded`, else the inferred
/// one, which needs no copy.
fn transformation_name(d: &crate::core::derive::Lean, recorded: Text) -> Text {
    match d.inferred_transformation {
        Some(name) => Text::Static(name),
        None => recorded,
    }
}

/// The family of a row that records neither family nor transformation:
/// the inferred transformation's (see [`crate::core::derive::family_of`]).
fn inferred_family(d: &crate::core::derive::Lean) -> Option<Text> {
    d.inferred_transformation
        .filter(|_| d.inferred)
        .and_then(crate::core::derive::family_of_transformation)
        .map(Text::Static)
}

/// The slow path: a whole [`Value`], [`map_record`] and [`derive`].
fn slow_row(body: &str, terminated: bool) -> LineOut {
    let value: Value = match serde_json::from_str(body) {
        Ok(v) => v,
        Err(e) => {
            let (kind, msg) = classify_json_error(&e, terminated);
            return LineOut::Problem(kind, msg);
        }
    };
    let mut record = match map_record(value) {
        Ok(r) => r,
        Err(e) => {
            let kind = match e {
                RecordError::NotAnObject(_) => ProblemKind::NotAnObject,
                RecordError::MissingId(_) => ProblemKind::MissingField,
                RecordError::WrongIdType(..) => ProblemKind::WrongType,
            };
            return LineOut::Problem(kind, e.to_string());
        }
    };
    let d = crate::core::derive::lean(&record, None);
    let suggestion = crate::core::suggest::lean_category(&record, &d);
    let mut warnings: Vec<String> = record
        .field_warnings
        .iter()
        .map(|w| format!("{} / {}: {w}", record.case_id, record.variant_id))
        .collect();
    // The fast path declines any line with a repeated key (its scanner
    // refuses them), so only this path needs to look.
    if let Some(dup) = first_duplicate_key(body) {
        warnings.push(format!(
            "{} / {}: the key `{dup}` appears more than once; the last value is used (as jq does) — remove the others",
            record.case_id, record.variant_id
        ));
    }
    let summary = summarize(&record, &d);
    let recorded = Text::Owned(record.transformation.take().unwrap_or_default());
    let transformation = transformation_name(&d, recorded);
    LineOut::Row(RowData {
        trim_start: 0,
        body_len: 0,
        case: Text::Owned(std::mem::take(&mut record.case_id)),
        variant: Text::Owned(std::mem::take(&mut record.variant_id)),
        transformation,
        family: record
            .family
            .take()
            .map(Text::Owned)
            .or_else(|| inferred_family(&d)),
        suggestion,
        contract: record.contract_version.take().map(Text::Owned),
        schema: record.state_schema_version.take().map(Text::Owned),
        model: record.model_id.take().map(Text::Owned),
        policy: record.policy,
        summary,
        warnings,
        inputs: slow_inputs(body),
    })
}

/// The slow path's [`InputsDigest`] of a line that parses: each side's
/// question and state and the declared changes as written, read again as
/// raw text (the record keeps them parsed); none for a record converted
/// from another tool's file. The fast path reads a line it accepts alike,
/// from its spans ([`super::fast::Parsed::inputs`]).
fn slow_inputs(body: &str) -> InputsDigest {
    let Ok(top) = serde_json::from_str::<RawMembers>(body) else {
        return InputsDigest::NONE;
    };
    let converted = top.0.get(CONVERTED_FROM).is_some_and(|v| v.get() != "null");
    if converted {
        return InputsDigest::NONE;
    }
    let side = |slot: usize| {
        let members = top
            .get(&TOP[slot])
            .and_then(|raw| serde_json::from_str::<RawMembers>(raw.get()).ok());
        let field = |f: usize| {
            let value = members.as_ref().and_then(|m| m.get(&SIDE[f]));
            value.map(|v| v.get().as_bytes())
        };
        [field(S_QUESTION), field(S_STATE)]
    };
    let allowed = top.get(&TOP[T_ALLOWED]).map(|v| v.get().as_bytes());
    InputsDigest::of([side(T_SOURCE), side(T_VARIANT)], allowed)
}

/// The path of the first key an object of `json` repeats (`source.state.a`,
/// `reasons[2].id`), if any. `json` is known to parse.
fn first_duplicate_key(json: &str) -> Option<String> {
    use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use std::cell::RefCell;

    struct Seek<'a> {
        path: String,
        found: &'a RefCell<Option<String>>,
    }

    impl<'de> DeserializeSeed<'de> for Seek<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Seek<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            let mut i = 0usize;
            loop {
                if self.found.borrow().is_some() {
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                    return Ok(());
                }
                let seed = Seek {
                    path: format!("{}[{i}]", self.path),
                    found: self.found,
                };
                if seq.next_element_seed(seed)?.is_none() {
                    return Ok(());
                }
                i += 1;
            }
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut keys: Vec<String> = Vec::new();
            while let Some(k) = map.next_key::<String>()? {
                let path = if self.path.is_empty() {
                    k.clone()
                } else {
                    format!("{}.{k}", self.path)
                };
                if self.found.borrow().is_some() {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
                if keys.contains(&k) {
                    *self.found.borrow_mut() = Some(path);
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
                map.next_value_seed(Seek {
                    path,
                    found: self.found,
                })?;
                keys.push(k);
            }
            Ok(())
        }
    }

    let found = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(json);
    let seek = Seek {
        path: String::new(),
        found: &found,
    };
    seek.deserialize(&mut de).ok()?;
    found.into_inner()
}

fn classify_json_error(e: &serde_json::Error, terminated: bool) -> (ProblemKind, String) {
    let msg = e.to_string();
    if msg.contains("recursion limit") {
        return (
            ProblemKind::TooDeep,
            "nesting is deeper than 128 levels; flatten the record".to_string(),
        );
    }
    if e.is_eof() && !terminated {
        return (
            ProblemKind::Truncated,
            "the last line stops mid-record with no final newline; the writer may still be running or was interrupted".to_string(),
        );
    }
    (
        ProblemKind::Malformed,
        format!("{}; fix or remove this line", strip_line_info(&msg)),
    )
}

/// serde_json says "at line 1 column 57"; within one line only the column matters.
fn strip_line_info(msg: &str) -> String {
    match msg.find(" at line 1 column ") {
        Some(i) => format!(
            "{} at column {}",
            &msg[..i],
            &msg[i + " at line 1 column ".len()..]
        ),
        None => msg.to_string(),
    }
}

/// Bytes for people: "512 B", "10.0 MB".
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut x = n as f64 / 1000.0;
    let mut u = 0;
    while x >= 1000.0 && u < UNITS.len() - 1 {
        x /= 1000.0;
        u += 1;
    }
    format!("{x:.1} {}", UNITS[u])
}

#[cfg(test)]
#[path = "tests/line.rs"]
mod tests;

/// The index's lean derivation against the full one: for every record, the
/// row facts, the suggested category and the transformation name must be
/// exactly what `derive` + `suggest` give.
#[cfg(test)]
#[path = "tests/lean.rs"]
mod lean_tests;
