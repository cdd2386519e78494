//! Whether a matched pair's inputs changed between the two runs.
//!
//! A pair's inputs are what was sent and what the variant declared: each
//! side's question and state, and the `allowed_changes`. Two results are
//! comparable only when these are identical; responses, routes, verdicts,
//! times and the policy may differ (that is what a comparison shows).
//!
//! Each line is read once and its inputs digested as written, which is
//! what a runner that resends recorded inputs produces. Only when the two
//! digests differ are both lines digested again in canonical form (object
//! keys sorted, `1` and `1.0` alike, see [`crate::core::key`]), so a runner
//! that writes the same state with its keys in another order is not
//! reported as a content change.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use rustc_hash::FxHasher;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::CompareError;
use crate::core::index::RunIndex;
use crate::core::key::canonical_bytes;
use crate::core::row::PairRow;
use crate::core::schema::{S_QUESTION, S_STATE, SIDE, T_ALLOWED, T_SOURCE, T_VARIANT, TOP};

/// A JSON object whose members are kept as written.
#[derive(Deserialize)]
struct Members<'a>(#[serde(borrow)] BTreeMap<Cow<'a, str>, &'a RawValue>);

impl<'a> Members<'a> {
    /// The first spelling of a field that is present and not null, as written.
    fn get(&self, spellings: &[&str]) -> Option<&'a RawValue> {
        spellings
            .iter()
            .find_map(|k| self.0.get(*k).copied())
            .filter(|v| v.get() != "null")
    }
}

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
    let top: Members = serde_json::from_slice(line).ok()?;
    let mut h = FxHasher::default();
    for side in [T_SOURCE, T_VARIANT] {
        let members: Option<Members> = top
            .get(TOP[side].spellings)
            .and_then(|raw| serde_json::from_str(raw.get()).ok());
        for field in [S_QUESTION, S_STATE] {
            let value = members.as_ref().and_then(|m| m.get(SIDE[field].spellings));
            feed(&mut h, value, form);
        }
    }
    feed(&mut h, top.get(TOP[T_ALLOWED].spellings), form);
    Some(h.finish())
}

/// The digest of the inputs as written (see [`digest`]).
pub fn written(line: &[u8]) -> Option<u64> {
    digest(line, Form::Written)
}

/// The digest of the inputs in canonical form (see [`digest`]).
pub fn canonical(line: &[u8]) -> Option<u64> {
    digest(line, Form::Canonical)
}

fn read(index: &RunIndex, row: &PairRow) -> Result<Vec<u8>, CompareError> {
    index.read_line(row.loc).map_err(|e| CompareError {
        run: index.display_name(),
        line: row.loc.line,
        reason: format!("cannot read the line again ({e})"),
    })
}

fn parse_error(index: &RunIndex, row: &PairRow) -> CompareError {
    CompareError {
        run: index.display_name(),
        line: row.loc.line,
        reason: "the line no longer parses".to_string(),
    }
}

/// Whether the inputs of an OLD row and a NEW row differ.
pub fn differ(
    old: &RunIndex,
    old_row: &PairRow,
    new: &RunIndex,
    new_row: &PairRow,
) -> Result<bool, CompareError> {
    let (a, b) = (read(old, old_row)?, read(new, new_row)?);
    let da = written(&a).ok_or_else(|| parse_error(old, old_row))?;
    let db = written(&b).ok_or_else(|| parse_error(new, new_row))?;
    if da == db {
        return Ok(false);
    }
    Ok(canonical(&a) != canonical(&b))
}
