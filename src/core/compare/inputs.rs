//! Whether a matched pair's inputs changed between the two runs.
//!
//! A pair's inputs are what was sent and what the variant declared: each
//! side's question and state, and the `allowed_changes`. Two results are
//! comparable only when these are identical; responses, routes, verdicts,
//! times and the policy may differ (that is what a comparison shows).
//!
//! The loader took each line's inputs digest as written in its first pass
//! ([`InputsDigest`]), which is what a runner that resends recorded inputs
//! produces: two equal digests are the same inputs, and no line is read.
//! Only when the two digests differ, or one was not taken (a record
//! converted from another tool's file), are both lines read again and
//! digested in canonical form (object keys sorted, `1` and `1.0` alike, see
//! [`crate::core::key`]), so a runner that writes the same state with its
//! keys in another order is not reported as a content change.

use std::hash::{Hash, Hasher};

use rustc_hash::FxHasher;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::CompareError;
use crate::core::index::RunIndex;
use crate::core::key::canonical_bytes;
use crate::core::schema::{
    RawMembers, S_QUESTION, S_STATE, SIDE, T_ALLOWED, T_SOURCE, T_VARIANT, TOP,
};

/// How a value enters the digest.
#[derive(Clone, Copy)]
enum Form {
    /// Its text as written.
    Written,
    /// Its canonical bytes.
    Canonical,
}

fn feed(h: &mut FxHasher, value: Option<&RawValue>, form: Form) {
    match (value, form) {
        (None, _) => 0u8.hash(h),
        (Some(v), Form::Written) => (1u8, v.get()).hash(h),
        (Some(v), Form::Canonical) => match serde_json::from_str::<serde_json::Value>(v.get()) {
            Ok(parsed) => (1u8, canonical_bytes(&parsed)).hash(h),
            Err(_) => (2u8, v.get()).hash(h),
        },
    }
}

/// The digest of a line's inputs; `None` when the line is not a JSON object.
fn digest(line: &[u8], form: Form) -> Option<u64> {
    let top: RawMembers = serde_json::from_slice(line).ok()?;
    let mut h = FxHasher::default();
    for side in [T_SOURCE, T_VARIANT] {
        let members: Option<RawMembers> = top
            .get(&TOP[side])
            .and_then(|raw| serde_json::from_str(raw.get()).ok());
        for field in [S_QUESTION, S_STATE] {
            let value = members.as_ref().and_then(|m| m.get(&SIDE[field]));
            feed(&mut h, value, form);
        }
    }
    feed(&mut h, top.get(&TOP[T_ALLOWED]), form);
    Some(h.finish())
}

/// The inputs of a line read in one pass, each as written: the common
/// case, a line with at most one spelling of each field. A line that
/// spells a field twice (`question` and `prompt`) is refused here and read
/// by [`digest`], which takes the first spelling as the loader does. The
/// spellings are [`SIDE`]'s and [`TOP`]'s (a test checks they agree).
#[derive(Deserialize)]
struct OnePass<'a> {
    #[serde(borrow, default)]
    source: Option<SideInputs<'a>>,
    #[serde(borrow, default)]
    variant: Option<SideInputs<'a>>,
    #[serde(borrow, default, alias = "allowedChanges", alias = "allowed")]
    allowed_changes: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct SideInputs<'a> {
    #[serde(borrow, default, alias = "prompt")]
    question: Option<&'a RawValue>,
    #[serde(borrow, default, alias = "payload")]
    state: Option<&'a RawValue>,
}

/// A value that is not JSON null: a null counts as not recorded.
fn not_null(v: Option<&RawValue>) -> Option<&RawValue> {
    v.filter(|v| v.get() != "null")
}

/// The digest of the inputs as written (see [`digest`]): one pass over
/// the line when it allows, else [`digest`].
pub fn written(line: &[u8]) -> Option<u64> {
    let Ok(top) = serde_json::from_slice::<OnePass>(line) else {
        return digest(line, Form::Written);
    };
    let mut h = FxHasher::default();
    for side in [&top.source, &top.variant] {
        feed(
            &mut h,
            not_null(side.as_ref().and_then(|s| s.question)),
            Form::Written,
        );
        feed(
            &mut h,
            not_null(side.as_ref().and_then(|s| s.state)),
            Form::Written,
        );
    }
    feed(&mut h, not_null(top.allowed_changes), Form::Written);
    Some(h.finish())
}

/// The digest of the inputs in canonical form (see [`digest`]).
pub fn canonical(line: &[u8]) -> Option<u64> {
    digest(line, Form::Canonical)
}

fn read(index: &RunIndex, row: usize) -> Result<Vec<u8>, CompareError> {
    let loc = index.loc(row);
    index.read_line(loc).map_err(|e| CompareError {
        run: index.display_name(),
        line: loc.line,
        reason: format!("cannot read the line again ({e})"),
    })
}

fn parse_error(index: &RunIndex, row: usize) -> CompareError {
    CompareError {
        run: index.display_name(),
        line: index.loc(row).line,
        reason: "the line no longer parses".to_string(),
    }
}

/// Whether the inputs of OLD's row `oi` and NEW's row `ni` differ.
pub fn differ(old: &RunIndex, oi: u32, new: &RunIndex, ni: u32) -> Result<bool, CompareError> {
    let (d_old, d_new) = (old.inputs_digest(oi), new.inputs_digest(ni));
    let both_taken = d_old.taken() && d_new.taken();
    if both_taken && d_old == d_new {
        return Ok(false);
    }
    let (old_row, new_row) = (oi as usize, ni as usize);
    let (a, b) = (read(old, old_row)?, read(new, new_row)?);
    // Two taken digests that differ are inputs written differently; else
    // the lines are digested as written here first.
    if !both_taken {
        let da = written(&a).ok_or_else(|| parse_error(old, old_row))?;
        let db = written(&b).ok_or_else(|| parse_error(new, new_row))?;
        if da == db {
            return Ok(false);
        }
    }
    let ca = canonical(&a).ok_or_else(|| parse_error(old, old_row))?;
    let cb = canonical(&b).ok_or_else(|| parse_error(new, new_row))?;
    Ok(ca != cb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_pass_reader_knows_the_schema_spellings() {
        assert_eq!(SIDE[S_QUESTION].spellings, ["question", "prompt"]);
        assert_eq!(SIDE[S_STATE].spellings, ["state", "payload"]);
        assert_eq!(TOP[T_SOURCE].spellings, ["source"]);
        assert_eq!(TOP[T_VARIANT].spellings, ["variant"]);
        assert_eq!(
            TOP[T_ALLOWED].spellings,
            ["allowed_changes", "allowedChanges", "allowed"]
        );
    }

    #[test]
    fn one_pass_and_the_general_reader_agree() {
        let lines = [
            r#"{"case_id":"c","source":{"question":"q","state":{"a":1}},"variant":{"prompt":"q2","payload":{"a":1}},"allowed_changes":["question"]}"#,
            r#"{"source":{"question":"q","response":{"probability":0.2}},"variant":{"question":null},"allowedChanges":[]}"#,
            r#"{"case_id":"c","variant_id":"v"}"#,
            r#"{"source":{"question":"q","prompt":"p"},"variant":{}}"#,
            r#"{"format":"promptfoo","source":{"state":[1,2]},"allowed":["state"]}"#,
        ];
        for l in lines {
            assert_eq!(
                written(l.as_bytes()),
                digest(l.as_bytes(), Form::Written),
                "{l}"
            );
        }
        // Whitespace inside a value is part of what was written.
        let a = br#"{"source":{"state":{"a":1}}}"#;
        let b = br#"{"source":{"state":{"a": 1}}}"#;
        assert_ne!(written(a), written(b));
        assert_eq!(canonical(a), canonical(b));
        assert_eq!(written(b"[1]"), None);
    }
}
