//! Warnings across the pairs of one case (seed 000, section 7).
//!
//! Two things make the pairs of a case incomparable, and seed 000 warns
//! against both:
//!
//! - **two policies mixed within one case**: "do not first adjust the action
//!   threshold"; when some pairs of a case were routed by other thresholds
//!   than the rest, their routes and margins cannot be compared, and a flip
//!   may be a threshold change;
//! - **repetitions whose inputs were regenerated**: "rerun the same,
//!   already-recorded source and variant pair several times. Preserve the
//!   exact inputs. … Do not regenerate the paraphrase on every retry, or you
//!   will be testing a different input each time."
//!
//! A row's policy comes with its versions id from the loader
//! ([`RunIndex::policy`]). Its inputs (each side's question and state) are
//! read again from its line, only for the trials that repeat — the same
//! (case, variant, model) more than once — and only once per line
//! ([`RunIndex::check_inputs`]). [`RunIndex::input_warnings`] finds both
//! kinds over any selection of rows; [`RunIndex::check_inputs`] keeps those
//! of the whole run among its problems, where `triage check --strict`
//! fails on them.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::RunIndex;
use crate::core::model::{Policy, fmt_num};
use crate::core::problem::{Problem, ProblemKind};
use crate::core::row::{NO_SYM, PairRow, Sym};
use crate::core::schema::{S_QUESTION, S_STATE, SIDE, T_SOURCE, T_VARIANT, TOP};
use crate::core::text::inert_line;

/// One policy of a case that mixes several, with how many of its pairs it routed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PolicyUse {
    pub review_threshold: f64,
    pub action_threshold: f64,
    pub pairs: u64,
}

/// A warning about the pairs of one case (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum InputWarning {
    /// The pairs of one case were routed by more than one policy, in the
    /// order first seen. `file` and `line` are where the second one first
    /// appears.
    MixedPolicies {
        case: String,
        policies: Vec<PolicyUse>,
        file: String,
        line: u32,
    },
    /// The trials of one (case, variant, model) were sent with `inputs`
    /// different inputs over `trials` trials. `file` and `line` are the
    /// first trial whose inputs differ from the first one's.
    RegeneratedInputs {
        case: String,
        variant: String,
        model: Option<String>,
        trials: u64,
        inputs: u64,
        file: String,
        line: u32,
    },
}

impl InputWarning {
    /// The warning in one sentence, with what to do; names from the run are made inert.
    pub fn message(&self) -> String {
        match self {
            InputWarning::MixedPolicies { case, policies, .. } => {
                let uses: Vec<String> = policies
                    .iter()
                    .map(|p| {
                        format!(
                            "review {} / action {} ({} {})",
                            fmt_num(p.review_threshold),
                            fmt_num(p.action_threshold),
                            p.pairs,
                            if p.pairs == 1 { "pair" } else { "pairs" }
                        )
                    })
                    .collect();
                format!(
                    "case {} mixes {} policies: {}; its routes and margins are not comparable across them — route every pair of a case by one policy, and do not move a threshold to hide a flip (seed 000, section 7)",
                    inert_line(case),
                    policies.len(),
                    uses.join(", ")
                )
            }
            InputWarning::RegeneratedInputs {
                case,
                variant,
                model,
                trials,
                inputs,
                ..
            } => format!(
                "{} / {}{} was sent with {inputs} different inputs over {trials} trials; a repetition must resend the exact recorded question and state, or it tests another input (seed 000, section 7)",
                inert_line(case),
                inert_line(variant),
                model
                    .as_deref()
                    .map(|m| format!(" ({})", inert_line(m)))
                    .unwrap_or_default()
            ),
        }
    }

    /// Where the warning points: a file and a line.
    fn at(&self) -> (&str, u32) {
        match self {
            InputWarning::MixedPolicies { file, line, .. }
            | InputWarning::RegeneratedInputs { file, line, .. } => (file, *line),
        }
    }
}

/// A JSON object whose members are kept as written.
#[derive(Deserialize)]
struct Members<'a>(#[serde(borrow)] BTreeMap<Cow<'a, str>, &'a RawValue>);

impl<'a> Members<'a> {
    /// The first spelling of a field that is present, as written.
    fn get(&self, spellings: &[&str]) -> Option<&'a RawValue> {
        spellings
            .iter()
            .find_map(|k| self.0.get(*k).copied())
            .filter(|v| v.get() != "null")
    }
}

/// A digest of the inputs a line records: each side's question and state,
/// as written (a repetition resends the exact recorded inputs, so they are
/// written alike). None when the line records neither, or is not an object,
/// or was converted from another tool's file (it names its `format`): a
/// converter may carry context there, such as a context-probe baseline's
/// answer, that differs between trials by design.
pub fn inputs_digest(line: &[u8]) -> Option<u64> {
    let top: Members = serde_json::from_slice(line).ok()?;
    if top.get(&["format"]).is_some() {
        return None;
    }
    let mut h = FxHasher::default();
    let mut any = false;
    for side in [T_SOURCE, T_VARIANT] {
        let Some(raw) = top.get(TOP[side].spellings) else {
            side.hash(&mut h);
            continue;
        };
        let members: Option<Members> = serde_json::from_str(raw.get()).ok();
        for field in [S_QUESTION, S_STATE] {
            let value = members.as_ref().and_then(|m| m.get(SIDE[field].spellings));
            (side, field, value.map(RawValue::get)).hash(&mut h);
            any |= value.is_some();
        }
    }
    any.then(|| h.finish())
}

/// A case's policies in the order first seen, with how many pairs each
/// routed, and the row where the second first appears.
type CasePolicies = (Vec<(Policy, u64)>, Option<u32>);

/// The (case, variant, model) of a trial.
type Trial = (Sym, Sym, Sym);

impl RunIndex {
    fn trial(&self, row: &PairRow) -> Trial {
        (row.case, row.variant, self.model(row))
    }

    /// The rows of the trials that repeat, grouped by trial, in row order.
    fn repeated_trials(&self, rows: &[u32]) -> Vec<Vec<u32>> {
        let mut by: FxHashMap<Trial, Vec<u32>> = FxHashMap::default();
        for &i in rows {
            if let Some(r) = self.rows.get(i as usize) {
                by.entry(self.trial(r)).or_default().push(i);
            }
        }
        let mut out: Vec<Vec<u32>> = by.into_values().filter(|v| v.len() > 1).collect();
        out.sort_unstable_by_key(|v| v[0]);
        out
    }

    /// Read the inputs of every row of a trial that repeats, once per line.
    /// A line that cannot be read again has no digest (and no warning).
    fn learn_inputs(&mut self, trials: &[Vec<u32>]) {
        use rayon::prelude::*;
        let locs: Vec<_> = trials
            .iter()
            .flatten()
            .map(|&i| self.rows[i as usize].loc)
            .filter(|loc| !self.inputs.contains_key(&loc.id()))
            .collect();
        // Each line is read and digested on its own: spread over the pool.
        let this = &*self;
        let digests: Vec<_> = locs
            .par_iter()
            .map(|&loc| {
                let digest = this
                    .read_line(loc)
                    .ok()
                    .and_then(|bytes| inputs_digest(&bytes));
                (loc.id(), digest)
            })
            .collect();
        self.inputs.extend(digests);
    }

    /// The digest of a row's inputs, when [`RunIndex::check_inputs`] read it.
    pub fn inputs_of(&self, row: &PairRow) -> Option<u64> {
        self.inputs.get(&row.loc.id()).copied().flatten()
    }

    fn file_of(&self, row: &PairRow) -> String {
        self.files
            .get(row.loc.file() as usize)
            .map(|f| f.display.clone())
            .unwrap_or_default()
    }

    fn name(&self, s: Sym) -> String {
        if s == NO_SYM {
            String::new()
        } else {
            self.str(s).to_string()
        }
    }

    /// The warnings of seed 000, section 7 over `rows` (out-of-range ones
    /// are skipped): each case that mixes policies, then each repeated
    /// trial whose inputs were regenerated, in the order first seen.
    pub fn input_warnings(&self, rows: &[u32]) -> Vec<InputWarning> {
        let mut out = self.mixed_policies(rows);
        // Without two digests of one trial there is nothing to compare.
        if self.inputs.values().flatten().nth(1).is_none() {
            return out;
        }
        out.extend(self.regenerated(&self.repeated_trials(rows)));
        out
    }

    /// Each of `trials` (the rows of one repeated trial each) whose lines
    /// record more than one set of inputs.
    fn regenerated(&self, trials: &[Vec<u32>]) -> Vec<InputWarning> {
        let mut out = Vec::new();
        for trial in trials {
            let digests: Vec<(u32, u64)> = trial
                .iter()
                .filter_map(|&i| Some((i, self.inputs_of(&self.rows[i as usize])?)))
                .collect();
            let Some(&(_, first)) = digests.first() else {
                continue;
            };
            let mut distinct: Vec<u64> = digests.iter().map(|d| d.1).collect();
            distinct.sort_unstable();
            distinct.dedup();
            if distinct.len() < 2 {
                continue;
            }
            let Some(&(at, _)) = digests.iter().find(|d| d.1 != first) else {
                continue;
            };
            let r = &self.rows[at as usize];
            let model = self.model(r);
            out.push(InputWarning::RegeneratedInputs {
                case: self.name(r.case),
                variant: self.name(r.variant),
                model: (model != NO_SYM).then(|| self.name(model)),
                trials: trial.len() as u64,
                inputs: distinct.len() as u64,
                file: self.file_of(r),
                line: r.loc.line,
            });
        }
        out
    }

    /// Each case of `rows` whose pairs were routed by more than one policy.
    fn mixed_policies(&self, rows: &[u32]) -> Vec<InputWarning> {
        // A run routed by one policy (the usual case) mixes none.
        let mut policies = self.policies.iter().flatten();
        let Some(first) = policies.next() else {
            return Vec::new();
        };
        if policies.all(|p| p == first) {
            return Vec::new();
        }
        let mut cases: FxHashMap<Sym, CasePolicies> = FxHashMap::default();
        let mut order: Vec<Sym> = Vec::new();
        for &i in rows {
            let Some(r) = self.rows.get(i as usize) else {
                continue;
            };
            let Some(p) = self.policy(r) else {
                continue;
            };
            let (uses, second) = cases.entry(r.case).or_insert_with(|| {
                order.push(r.case);
                (Vec::new(), None)
            });
            match uses.iter_mut().find(|(q, _)| *q == p) {
                Some((_, n)) => *n += 1,
                None => {
                    if !uses.is_empty() && second.is_none() {
                        *second = Some(i);
                    }
                    uses.push((p, 1));
                }
            }
        }
        order
            .into_iter()
            .filter_map(|case| {
                let (uses, second) = cases.remove(&case)?;
                let r = &self.rows[second? as usize];
                Some(InputWarning::MixedPolicies {
                    case: self.name(case),
                    policies: uses
                        .into_iter()
                        .map(|(p, pairs)| PolicyUse {
                            review_threshold: p.review_threshold,
                            action_threshold: p.action_threshold,
                            pairs,
                        })
                        .collect(),
                    file: self.file_of(r),
                    line: r.loc.line,
                })
            })
            .collect()
    }

    /// Learn the inputs of the trials that repeat and keep the run's
    /// warnings among its problems (kind [`ProblemKind::Inconsistent`]),
    /// replacing the ones an earlier check left (a followed run grows);
    /// nothing to do when no row came since the last check.
    pub fn check_inputs(&mut self) {
        // Nothing new since the last check: its problems stand.
        if self.inputs_checked == self.rows.len() && self.inputs_checked > 0 {
            return;
        }
        self.inputs_checked = self.rows.len();
        let all: Vec<u32> = (0..self.rows.len() as u32).collect();
        // The trials are grouped once, for the reading and for the warnings.
        let trials = self.repeated_trials(&all);
        self.learn_inputs(&trials);
        let mut warnings = self.mixed_policies(&all);
        warnings.extend(self.regenerated(&trials));
        self.problems
            .retain(|p| p.kind != ProblemKind::Inconsistent);
        self.problems.extend(warnings.iter().map(|w| {
            let (file, line) = w.at();
            Problem {
                file: file.to_string(),
                line: u64::from(line),
                kind: ProblemKind::Inconsistent,
                message: w.message(),
            }
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_of_the_questions_and_states_as_written() {
        let a = br#"{"case_id":"c","variant_id":"v","source":{"question":"q","state":{"a":1},"response":{"probability":0.2}},"variant":{"question":"q2","state":{"a":1}}}"#;
        // Another answer, latency and time: the same inputs.
        let b = br#"{"timestamp":"t","case_id":"c","variant_id":"v","source":{"latency_ms":5,"question":"q","state":{"a":1},"response":{"probability":0.9}},"variant":{"state":{"a":1},"question":"q2"}}"#;
        assert_eq!(inputs_digest(a), inputs_digest(b));
        assert!(inputs_digest(a).is_some());
        // A regenerated paraphrase, an edited state, a side's question moved to `prompt`.
        for other in [
            &br#"{"source":{"question":"q","state":{"a":1}},"variant":{"question":"q3","state":{"a":1}}}"#[..],
            br#"{"source":{"question":"q","state":{"a":2}},"variant":{"question":"q2","state":{"a":1}}}"#,
            br#"{"source":{"question":"q","state":{"a":1}},"variant":{"question":"q2"}}"#,
        ] {
            assert_ne!(inputs_digest(a), inputs_digest(other));
        }
        let prompt = br#"{"source":{"prompt":"q","payload":{"a":1}},"variant":{"prompt":"q2","payload":{"a":1}}}"#;
        assert_eq!(inputs_digest(a), inputs_digest(prompt));
        // Nothing to compare: no digest.
        assert_eq!(
            inputs_digest(br#"{"source":{"noul":0.9},"variant":{}}"#),
            None
        );
        assert_eq!(inputs_digest(b"[1, 2]"), None);
        assert_eq!(inputs_digest(b"{not json"), None);
    }

    /// Checking again keeps one problem per warning: a followed run is
    /// checked as it grows, and a check with no new row changes nothing.
    #[test]
    fn checking_again_does_not_repeat_a_warning() {
        use crate::core::index::{OpenOptions, load_run};
        let path = format!(
            "{}/tests/fixtures/stats/mixed-policy.jsonl",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut index = load_run(&[path], &OpenOptions::default()).unwrap();
        let warnings = |i: &RunIndex| {
            i.problems
                .iter()
                .filter(|p| p.kind == ProblemKind::Inconsistent)
                .count()
        };
        assert_eq!(warnings(&index), 1);
        index.check_inputs();
        assert_eq!(warnings(&index), 1);
        // A row more (as a followed run grows) is a new check, replacing the old.
        let again = index.rows[0];
        index.rows.push(again);
        index.check_inputs();
        assert_eq!(warnings(&index), 1);
        assert_eq!(index.problems.len(), 1);
    }
}
