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
//! ([`RunIndex::policy`]), and so does the digest of its inputs, each
//! side's question and state and the declared changes as written
//! ([`InputsDigest`](crate::core::row::InputsDigest)), made in the first
//! pass: no line is read again. The trials that repeat are the same (case,
//! variant, model) more than once. [`RunIndex::input_warnings`]
//! finds both kinds over any selection of rows; [`RunIndex::check_inputs`]
//! keeps those of the whole run among its problems, where `triage check
//! --strict` fails on them.

use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::RunIndex;
use crate::core::model::{Policy, fmt_num};
use crate::core::problem::{KEPT_PER_KIND, Problem, ProblemKind};
use crate::core::row::{InputsDigest, NO_SYM, PairRow, Sym};
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
                "{} / {}{} was sent with {inputs} different inputs over {trials} trials; a repetition must resend the exact recorded question, state and declared changes, or it tests another input (seed 000, section 7)",
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

/// The warnings of a selection of rows, as [`RunIndex::input_warnings`]
/// found them: the cases that mix policies in words, and each regenerated
/// trial as its rows and counts (16 bytes), put in words only when read.
/// At ten million pairs a run can hold hundreds of thousands of such
/// trials; a summary shows a few and counts the rest, and the summary of
/// every pair shares the list the load's check made.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputWarnings {
    /// Each case that mixes policies, in the order first seen.
    mixed: Vec<InputWarning>,
    /// Each regenerated trial, in the order first seen.
    regenerated: Arc<[Regenerated]>,
}

impl InputWarnings {
    /// How many warnings there are.
    pub fn len(&self) -> usize {
        self.mixed.len() + self.regenerated.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each warning in words, in order: the cases that mix policies, then
    /// the regenerated trials. `index` is the one they were found in (a
    /// trial whose row it does not hold is left out).
    pub fn named<'a>(&'a self, index: &'a RunIndex) -> impl Iterator<Item = InputWarning> + 'a {
        self.mixed.iter().cloned().chain(
            self.regenerated
                .iter()
                .filter_map(|r| index.regenerated_warning(r)),
        )
    }
}

/// A case's policies in the order first seen, with how many pairs each
/// routed, and the row where the second first appears.
type CasePolicies = (Vec<(Policy, u64)>, Option<u32>);

/// A set of case ids, one bit each: the cases the last check of the whole
/// run warned about.
#[derive(Debug, Clone, Default)]
pub(crate) struct CaseSet {
    bits: Vec<u64>,
}

impl CaseSet {
    pub(crate) fn insert(&mut self, case: Sym) {
        let (word, bit) = (case as usize / 64, case % 64);
        if word >= self.bits.len() {
            self.bits.resize(word + 1, 0);
        }
        self.bits[word] |= 1 << bit;
    }

    pub(crate) fn contains(&self, case: Sym) -> bool {
        self.bits
            .get(case as usize / 64)
            .is_some_and(|w| w & (1 << (case % 64)) != 0)
    }

    fn is_empty(&self) -> bool {
        self.bits.is_empty()
    }
}

/// The (case, variant, model) of a trial.
type Trial = (Sym, Sym, Sym);

/// The rows the check of repeated trials sorts at once, about: the rows
/// are taken in parts, by case, so that the check holds four bytes for
/// each row of one part, not of the whole run (it runs once the whole
/// run is indexed, at the load's peak).
const PART_ROWS: usize = 1 << 20;

/// A repeated trial whose lines record more than one set of inputs: its
/// first row, the first whose inputs differ from that one's, its number of
/// trials and of distinct inputs (16 bytes: a generated run may regenerate
/// a trial in ten).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Regenerated {
    first: u32,
    at: u32,
    trials: u32,
    inputs: u32,
}

impl RunIndex {
    fn trial(&self, i: u32) -> Trial {
        let row = &self.rows[i as usize];
        (row.case, row.variant, self.model(i as usize))
    }

    /// The digest of row `i`'s inputs; `None` when its line records none,
    /// or was converted from another tool's file (see
    /// [`CONVERTED_FROM`](crate::core::schema::CONVERTED_FROM)).
    pub fn inputs_of(&self, i: u32) -> Option<u32> {
        self.inputs.get(i as usize).and_then(|d| d.get())
    }

    /// Row `i`'s inputs digest as the loader took it ([`InputsDigest::NONE`]
    /// past the rows).
    pub fn inputs_digest(&self, i: u32) -> InputsDigest {
        self.inputs.get(i as usize).copied().unwrap_or_default()
    }

    fn file_of(&self, row: &PairRow) -> String {
        self.files
            .get(row.pos.file() as usize)
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
    ///
    /// Once [`Self::check_inputs`] has checked every row, only the rows of
    /// the cases it warned about are looked at: a part of the rows cannot
    /// mix policies in a case, or record two sets of inputs for a trial,
    /// that the whole run does not; and every row is answered with the
    /// trials that check found, shared, not sorted again.
    pub fn input_warnings(&self, rows: &[u32]) -> InputWarnings {
        if self.inputs_checked == self.rows.len() && self.inputs_checked > 0 {
            // Only the cases the whole run's check warned about can warn.
            let warned = &self.warned_cases;
            if warned.is_empty() {
                return InputWarnings::default();
            }
            if self.is_every_row(rows) {
                // The whole run: its check found them already.
                return InputWarnings {
                    mixed: self.mixed_warnings(rows.iter().copied()),
                    regenerated: Arc::clone(&self.regenerated),
                };
            }
            let rows = rows.iter().copied().filter(|&i| {
                self.rows
                    .get(i as usize)
                    .is_some_and(|r| warned.contains(r.case))
            });
            self.warnings_of(rows)
        } else {
            self.warnings_of(rows.iter().copied())
        }
    }

    /// [`Self::input_warnings`], found by looking at every row of `rows`.
    fn warnings_of(&self, rows: impl Iterator<Item = u32> + Clone) -> InputWarnings {
        InputWarnings {
            mixed: self.mixed_warnings(rows.clone()),
            regenerated: self.regenerated_in_parts(rows, PART_ROWS).into(),
        }
    }

    /// The warnings of the cases of `rows` that mix policies.
    fn mixed_warnings(&self, rows: impl Iterator<Item = u32>) -> Vec<InputWarning> {
        let mixed = self.mixed_policies(rows).into_iter();
        mixed.map(|(_, w)| w).collect()
    }

    /// Whether `rows` is every row, in order (a summary without a query).
    fn is_every_row(&self, rows: &[u32]) -> bool {
        rows.len() == self.rows.len() && rows.iter().enumerate().all(|(i, &r)| r as usize == i)
    }

    /// The warning of a regenerated trial; `None` if its row is not among
    /// the rows (it was found in another index).
    fn regenerated_warning(&self, r: &Regenerated) -> Option<InputWarning> {
        let at = r.at;
        let row = self.rows.get(at as usize)?;
        let model = self.model(at as usize);
        Some(InputWarning::RegeneratedInputs {
            case: self.name(row.case),
            variant: self.name(row.variant),
            model: (model != NO_SYM).then(|| self.name(model)),
            trials: u64::from(r.trials),
            inputs: u64::from(r.inputs),
            file: self.file_of(row),
            line: self.loc(at as usize).line,
        })
    }

    /// The repeated trials of `rows` whose lines record more than one set
    /// of inputs, by first row, sorting about `part_rows` rows at once: the
    /// rows of each part (the cases whose id leaves one remainder) are
    /// sorted by trial, in place rather than hashed; a trial's rows are all
    /// in one part.
    fn regenerated_in_parts(
        &self,
        rows: impl Iterator<Item = u32> + Clone,
        part_rows: usize,
    ) -> Vec<Regenerated> {
        use rayon::prelude::*;
        let digest = |i: u32| self.inputs_of(i).unwrap_or_default();
        // Rows past the rows or that record no inputs are left out.
        let case = |i: u32| {
            self.inputs_of(i)?;
            self.rows.get(i as usize).map(|r| r.case)
        };
        let recorded = rows.clone().filter(|&i| case(i).is_some()).count();
        let parts = recorded.div_ceil(part_rows.max(1)).max(1) as u32;
        // Counted first, so that the part's vector holds no growth slack.
        let mut sizes = vec![0usize; parts as usize];
        for c in rows.clone().filter_map(case) {
            sizes[(c % parts) as usize] += 1;
        }
        let mut part: Vec<u32> = Vec::with_capacity(sizes.iter().copied().max().unwrap_or(0));
        let trial = |i: u32| self.trial(i);
        let mut found = Vec::new();
        for p in 0..parts {
            part.clear();
            part.extend(
                rows.clone()
                    .filter(|&i| case(i).is_some_and(|c| c % parts == p)),
            );
            part.par_sort_unstable_by_key(|&i| (trial(i), i));
            for same in part.chunk_by(|&a, &b| trial(a) == trial(b)) {
                let first = digest(same[0]);
                // The first trial whose inputs differ from the first one's.
                let Some(&at) = same.iter().find(|&&i| digest(i) != first) else {
                    continue;
                };
                let mut distinct: Vec<u32> = same.iter().map(|&i| digest(i)).collect();
                distinct.sort_unstable();
                distinct.dedup();
                found.push(Regenerated {
                    first: same[0],
                    at,
                    trials: same.len() as u32,
                    inputs: distinct.len() as u32,
                });
            }
        }
        drop(part);
        found.sort_unstable_by_key(|r| r.first);
        found
    }

    /// Each case of `rows` whose pairs were routed by more than one policy.
    fn mixed_policies(&self, rows: impl Iterator<Item = u32>) -> Vec<(Sym, InputWarning)> {
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
        for i in rows {
            let Some(r) = self.rows.get(i as usize) else {
                continue;
            };
            let Some(p) = self.policy(i as usize) else {
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
                let second = second? as usize;
                let r = &self.rows[second];
                Some((
                    case,
                    InputWarning::MixedPolicies {
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
                        line: self.loc(second).line,
                    },
                ))
            })
            .collect()
    }

    /// Keep the run's warnings among its problems (kind [`ProblemKind::Inconsistent`]),
    /// replacing the ones an earlier check left (a followed run grows);
    /// nothing to do when no row came since the last check.
    pub fn check_inputs(&mut self) {
        // Nothing new since the last check: its problems stand.
        if self.inputs_checked == self.rows.len() && self.inputs_checked > 0 {
            return;
        }
        self.inputs_checked = self.rows.len();
        // As the loader's problems: the first KEPT_PER_KIND kept with their
        // line and message, the rest only counted (a run whose every
        // trial was regenerated has a warning per trial).
        let mut problems = std::mem::take(&mut self.problems);
        problems.retain(|p| p.kind != ProblemKind::Inconsistent);
        let mut unlisted = 0u64;
        let mut kept = 0usize;
        let mut warned = CaseSet::default();
        // Only the warnings listed are put in words; the trials are kept
        // for a summary of the whole run.
        let mut keep = |make: &dyn Fn() -> Option<InputWarning>| {
            if kept == KEPT_PER_KIND {
                unlisted += 1;
                return;
            }
            let Some(w) = make() else {
                return;
            };
            kept += 1;
            let (file, line) = w.at();
            problems.push(Problem {
                file: file.to_string(),
                line: u64::from(line),
                kind: ProblemKind::Inconsistent,
                message: w.message(),
            });
        };
        let all = 0..self.rows.len() as u32;
        for (case, w) in self.mixed_policies(all.clone()) {
            warned.insert(case);
            keep(&|| Some(w.clone()));
        }
        let regenerated = self.regenerated_in_parts(all, PART_ROWS);
        for r in &regenerated {
            warned.insert(self.rows[r.at as usize].case);
            keep(&|| self.regenerated_warning(r));
        }
        self.problems = problems;
        self.warned_cases = warned;
        self.regenerated = regenerated.into();
        self.unlisted.clear(ProblemKind::Inconsistent);
        self.unlisted.add(ProblemKind::Inconsistent, unlisted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        index.push_row(again, index.labels(0));
        index.check_inputs();
        assert_eq!(warnings(&index), 1);
        assert_eq!(index.problems.len(), 1);
    }

    /// A run checked and found clean answers every part of its rows with
    /// no warning and without looking; a run with warnings still finds each
    /// part's own, looking only at the cases it warned about, as a check of
    /// that part alone does.
    #[test]
    fn a_clean_run_skips_the_check_of_its_parts() {
        use crate::core::index::{OpenOptions, load_run};
        use std::io::Write;
        // Every row of the part looked at.
        let slow = |index: &RunIndex, rows: &[u32]| index.warnings_of(rows.iter().copied());
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for t in 0..4 {
            for rep in 0..3 {
                // Trial 2 is sent with other inputs on its last repetition.
                let q = if t == 2 && rep == 2 { "other" } else { "q" };
                writeln!(
                    f,
                    r#"{{"case_id":"c{t}","variant_id":"v","repetition":{rep},"source":{{"question":"q","state":{{"a":1}}}},"variant":{{"question":"{q}","state":{{"a":1}}}}}}"#
                )
                .unwrap();
            }
        }
        f.flush().unwrap();
        let path = f.path().to_string_lossy().to_string();
        // Loading checks the whole run.
        let index = load_run(&[path], &OpenOptions::default()).unwrap();
        assert!(!index.warned_cases.is_empty());
        let parts: [&[u32]; 4] = [
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
            &[6, 7, 8],
            &[6, 7],
            &[0, 8],
        ];
        for part in parts {
            assert_eq!(index.input_warnings(part), slow(&index, part), "{part:?}");
        }
        // Every part of the twelve rows, in file order.
        for mask in 0u32..1 << 12 {
            let part: Vec<u32> = (0..12).filter(|i| mask & (1 << i) != 0).collect();
            assert_eq!(index.input_warnings(&part), slow(&index, &part), "{part:?}");
        }
        assert_eq!(index.input_warnings(&[6, 8]).len(), 1);

        let mut f = tempfile::NamedTempFile::new().unwrap();
        for t in 0..4 {
            for rep in 0..3 {
                writeln!(
                    f,
                    r#"{{"case_id":"c{t}","variant_id":"v","repetition":{rep},"source":{{"question":"q","state":{{"a":1}}}},"variant":{{"question":"q","state":{{"a":1}}}}}}"#
                )
                .unwrap();
            }
        }
        f.flush().unwrap();
        let path = f.path().to_string_lossy().to_string();
        let mut index = load_run(&[path], &OpenOptions::default()).unwrap();
        assert!(index.warned_cases.is_empty());
        for part in parts {
            assert!(index.input_warnings(part).is_empty());
            assert!(slow(&index, part).is_empty());
        }
        // Rows the check has not seen (a followed run grows) are looked at.
        let again = index.rows[0];
        index.rows.push(again);
        assert_ne!(index.inputs_checked, index.rows.len());
        index.check_inputs();
        assert!(index.warned_cases.is_empty());
    }

    /// Sorting the rows in parts, by case, finds the same regenerated
    /// trials in the same order as sorting them at once, whatever the part
    /// size.
    #[test]
    fn trials_checked_in_parts_warn_as_checked_at_once() {
        use crate::core::index::{OpenOptions, load_run};
        use std::io::Write;
        let mut f = tempfile::NamedTempFile::new().unwrap();
        // Three rounds over seven cases of two variants: a trial's rows are
        // far apart; some trials get other inputs in a later round.
        for round in 0..3 {
            for t in 0..7 {
                for v in 0..2 {
                    let q = if (t + v) % 3 == 0 && round == 2 {
                        format!("other{t}")
                    } else if t == 5 && round == 1 {
                        "again".to_string()
                    } else {
                        "q".to_string()
                    };
                    writeln!(
                        f,
                        r#"{{"case_id":"c{t}","variant_id":"v{v}","repetition":{round},"source":{{"question":"q","state":{{"a":1}}}},"variant":{{"question":"{q}","state":{{"a":1}}}}}}"#
                    )
                    .unwrap();
                }
            }
        }
        f.flush().unwrap();
        let path = f.path().to_string_lossy().to_string();
        let index = load_run(&[path], &OpenOptions::default()).unwrap();
        let rows = 0..index.rows.len() as u32;
        let warnings = |part_rows: usize| {
            let mut out = Vec::new();
            for r in index.regenerated_in_parts(rows.clone(), part_rows) {
                out.extend(index.regenerated_warning(&r));
            }
            out
        };
        let at_once = warnings(usize::MAX);
        // (t + v) % 3 == 0 for five trials, one of them c5's, and c5's other.
        assert_eq!(at_once.len(), 6);
        // In the order first seen, each at its first line with other inputs.
        let seen: Vec<(String, u32)> = at_once
            .iter()
            .map(|w| match w {
                InputWarning::RegeneratedInputs { case, variant, .. } => {
                    (format!("{case}/{variant}"), w.at().1)
                }
                InputWarning::MixedPolicies { .. } => unreachable!("one policy"),
            })
            .collect();
        let want = [
            ("c0/v0", 29),
            ("c2/v1", 34),
            ("c3/v0", 35),
            ("c5/v0", 25),
            ("c5/v1", 26),
            ("c6/v0", 41),
        ];
        assert_eq!(seen, want.map(|(t, l)| (t.to_string(), l)));
        for part_rows in [1, 2, 3, 5, 8, 13, 40] {
            assert_eq!(warnings(part_rows), at_once, "parts of {part_rows}");
        }
        // Every row: the trials the load's check kept, as found again.
        let all: Vec<u32> = rows.clone().collect();
        assert!(index.is_every_row(&all));
        assert_eq!(index.regenerated.len(), 6);
        let named = |w: InputWarnings| w.named(&index).collect::<Vec<_>>();
        assert_eq!(named(index.input_warnings(&all)), at_once);
        // Shared with the check, not sorted again.
        assert!(Arc::ptr_eq(
            &index.input_warnings(&all).regenerated,
            &index.regenerated
        ));
        // Rows left out, or every row but in another order: found again.
        let mut shuffled = all.clone();
        shuffled.swap(0, 1);
        assert!(!index.is_every_row(&shuffled));
        assert_eq!(named(index.input_warnings(&shuffled)), at_once);
        let some: Vec<u32> = (0..index.rows.len() as u32 / 2).collect();
        assert!(!index.is_every_row(&some));
        let want = index.warnings_of(some.iter().copied());
        assert_eq!(index.input_warnings(&some), want);
        assert!(want.len() < at_once.len(), "{want:?}");
    }

    /// Past [`KEPT_PER_KIND`] case warnings, the rest are counted, not
    /// kept; checking again counts them again rather than twice.
    #[test]
    fn case_warnings_past_the_bound_are_counted() {
        use crate::core::index::{OpenOptions, load_run};
        use std::io::Write;
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let trials = KEPT_PER_KIND + 5;
        for t in 0..trials {
            for rep in 0..2 {
                writeln!(
                    f,
                    r#"{{"case_id":"c{t}","variant_id":"v","repetition":{rep},"source":{{"question":"q","state":{{"a":1}}}},"variant":{{"question":"q{rep}","state":{{"a":1}}}}}}"#
                )
                .unwrap();
            }
        }
        let path = f.path().to_string_lossy().to_string();
        let mut index = load_run(&[path], &OpenOptions::default()).unwrap();
        let kept = |i: &RunIndex| {
            i.problems
                .iter()
                .filter(|p| p.kind == ProblemKind::Inconsistent)
                .count()
        };
        assert_eq!(kept(&index), KEPT_PER_KIND);
        assert_eq!(index.unlisted.get(ProblemKind::Inconsistent), 5);
        assert_eq!(
            index
                .input_warnings(&(0..index.rows.len() as u32).collect::<Vec<_>>())
                .len(),
            trials
        );
        let again = index.rows[0];
        index.push_row(again, index.labels(0));
        index.check_inputs();
        assert_eq!(kept(&index), KEPT_PER_KIND);
        assert_eq!(index.unlisted.get(ProblemKind::Inconsistent), 5);
    }
}
