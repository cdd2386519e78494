//! The written conclusion: a few plain sentences from a [`Summary`], for a
//! report. Each sentence states only what the counts show, in a fixed
//! order (see [`conclusion`]); `docs/statistics.md` lists them.

use rustc_hash::FxHashMap;

use super::{
    GroupStats, Latency, MICRO, Repetition, SMALL_N, Summary, both_routes, by_count_then_name,
    micros, show, sym_name, tests_model,
};
use crate::core::derive::Status;
use crate::core::index::RunIndex;
use crate::core::index::inputs::InputWarnings;
use crate::core::model::fmt_num;
use crate::core::row::{Sym, flags};
use crate::core::text::inert_line;

/// "1 pair", "3 pairs".
fn count_of(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The margins [`conclusion`] may claim flips lie within, smallest first, in millionths.
const WITHIN: [u64; 4] = [10_000, 20_000, 50_000, 100_000];

/// A margin in millionths as a short number: 50 000 → "0.05".
fn fmt_micros(m: u64) -> String {
    fmt_num(m as f64 / MICRO)
}

/// The route flips of one transformation, for [`conclusion`].
#[derive(Debug, Default)]
pub(super) struct Flips {
    pub(super) n: u64,
    pub(super) failed: u64,
    pub(super) passed: u64,
    /// Source margins in millionths, where recorded.
    pub(super) margins: Vec<u64>,
}

impl Flips {
    /// Add what `o` counted.
    fn add(&mut self, o: Flips) {
        self.n += o.n;
        self.failed += o.failed;
        self.passed += o.passed;
        self.margins.extend(o.margins);
    }
}

/// Add `(pairs, failing or flipped pairs)` to `into`.
fn add_pairs(into: &mut (u64, u64), (n, bad): (u64, u64)) {
    into.0 += n;
    into.1 += bad;
}

/// The clause about how near the flipping sources sat to a threshold, if the margins support one.
pub(super) fn margin_clause(f: &Flips) -> Option<String> {
    let all_known = f.margins.len() as u64 == f.n;
    let widest = WITHIN[WITHIN.len() - 1];
    if all_known && let Some(&top) = f.margins.iter().max() {
        if let Some(x) = WITHIN.iter().find(|&&x| top <= x) {
            let lead = match f.n {
                1 => "",
                2 => "both ",
                _ => "all ",
            };
            return Some(format!("{lead}within {} of a threshold", fmt_micros(*x)));
        }
        if f.margins.iter().all(|&m| m > widest) {
            let lead = if f.n == 1 { "not" } else { "none" };
            return Some(format!(
                "{lead} within {} of a threshold",
                fmt_micros(widest)
            ));
        }
    }
    let near = f.margins.iter().filter(|&&m| m <= widest).count();
    (near > 0).then(|| {
        format!(
            "{near} of them within {} of a threshold",
            fmt_micros(widest)
        )
    })
}

/// The clause about whether the flips broke their expectations.
pub(super) fn verdict_clause(f: &Flips) -> String {
    match (f.n, f.failed == f.n, f.passed == f.n) {
        (1, true, _) => "it broke its expectation".to_string(),
        (2, true, _) => "both broke their expectation".to_string(),
        (_, true, _) => "all broke their expectation".to_string(),
        (1, _, true) => "it was allowed by its expectation".to_string(),
        (2, _, true) => "both were allowed by their expectation".to_string(),
        (_, _, true) => "all were allowed by their expectation".to_string(),
        _ => format!("{} of them broke their expectation", f.failed),
    }
}

/// A few plain sentences written from the numbers, for a report.
///
/// `s` must summarise `rows` of `index` (the route-flip sentences read the
/// rows' source margins). Every sentence states only what the counts show;
/// names from the run are made inert. The order is fixed: overview, the
/// pairs left out of the model metrics, small-sample caution, invariant
/// violations, pairs whose validity is not judged, route flips per
/// transformation (at most three), transformations without failures,
/// boundary cases, service errors, invalid pairs, latency, source cases,
/// repeated trials, cases that mix policies or regenerated their inputs,
/// classification, unreadable lines.
///
/// Every sentence about the model (invariant violations, route flips,
/// stable transformations, boundary cases, failing cases) counts only the
/// pairs that test it ([`super::tests_model`]): an invalid pair or a service
/// error is named in its own sentence and in no other.
pub fn conclusion(index: &RunIndex, rows: &[u32], s: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    if s.pairs == 0 {
        out.push("No pairs to summarise.".to_string());
        if s.problems > 0 {
            out.push(unreadable(s.problems));
        }
        return out;
    }
    overview_sentences(&mut out, s);
    let tally = tally_transformations(index, rows);
    flip_sentences(&mut out, tally.flips);
    out.extend(stable_sentence(&tally.per_transformation));
    out.extend(boundary_sentence(&s.overall));
    error_sentences(&mut out, &s.overall);
    out.extend(s.overall.latency.as_ref().map(latency_sentence));
    out.extend(case_sentence(s));
    out.extend(s.repetition.as_ref().map(repetition_sentence));
    out.extend(s.unsafe_approvals.map(|u| {
        format!(
            "Unsafe approvals: {} of {} where approval was not allowed decided approve.",
            u.count,
            count_of(u.of, "pair", "pairs")
        )
    }));
    warning_sentences(&mut out, index, &s.input_warnings);
    out.extend(classification_sentence(s));
    if s.problems > 0 {
        out.push(unreadable(s.problems));
    }
    out
}

/// Writes the overview, the pairs left out of the model metrics, the
/// small-sample caution, the invariant violation rate and the pairs whose
/// validity is not judged.
fn overview_sentences(out: &mut Vec<String>, s: &Summary) {
    let o = &s.overall;
    out.push(format!(
        "{}, {}: failure rate {}.",
        count_of(s.pairs, "pair", "pairs"),
        count_of(s.failures, "failure", "failures"),
        show(&o.failure_rate)
    ));
    out.extend(left_out_sentence(o));
    if s.pairs < SMALL_N {
        out.push(format!(
            "With only {} the intervals are wide: read their bounds, not just the rates.",
            count_of(s.pairs, "pair", "pairs")
        ));
    }
    if let Some(r) = &o.invariant_violation_rate {
        out.push(format!(
            "Invariant violation rate: {} of {} valid invariant {} broke the expected relation ({}).",
            r.successes,
            r.trials,
            if r.trials == 1 { "pair" } else { "pairs" },
            r.display()
        ));
    }
    if o.undeclared_pairs > 0 {
        out.push(format!(
            "{}: {} validity is not judged, so {} not among the valid invariant pairs.",
            if o.undeclared_pairs == 1 {
                "1 pair declares no allowed changes".to_string()
            } else {
                format!("{} pairs declare no allowed changes", o.undeclared_pairs)
            },
            if o.undeclared_pairs == 1 {
                "its"
            } else {
                "their"
            },
            if o.undeclared_pairs == 1 {
                "it is"
            } else {
                "they are"
            }
        ));
    }
}

/// The sentence naming the pairs the model metrics leave out, if any.
fn left_out_sentence(o: &GroupStats) -> Option<String> {
    if o.model_pairs == o.pairs {
        return None;
    }
    let mut out = Vec::new();
    if o.invalid_pairs > 0 {
        out.push(count_of(o.invalid_pairs, "invalid pair", "invalid pairs"));
    }
    if o.service_errors > 0 {
        out.push(count_of(
            o.service_errors,
            "service error",
            "service errors",
        ));
    }
    Some(format!(
        "The model metrics count the {} that {} the model; {} {} left out.",
        count_of(o.model_pairs, "pair", "pairs"),
        if o.model_pairs == 1 { "tests" } else { "test" },
        out.join(" and "),
        if o.pairs - o.model_pairs == 1 {
            "is"
        } else {
            "are"
        }
    ))
}

/// What [`conclusion`] counts per transformation name.
struct Tally<'a> {
    /// The route flips of each transformation that has any.
    flips: FxHashMap<&'a str, Flips>,
    /// (pairs, pairs that failed or flipped route) of each transformation,
    /// among the pairs that test the model.
    per_transformation: FxHashMap<&'a str, (u64, u64)>,
}

/// [`Tally`] by interned transformation id.
#[derive(Default)]
struct TallyById {
    flips: FxHashMap<Sym, Flips>,
    /// (pairs, failing or flipped pairs).
    per: FxHashMap<Sym, (u64, u64)>,
}

impl TallyById {
    /// Count the rows that test the model.
    fn count(&mut self, index: &RunIndex, rows: &[u32]) {
        for (i, row) in rows
            .iter()
            .filter_map(|&i| Some((i as usize, index.rows.get(i as usize)?)))
            .filter(|(_, r)| tests_model(r))
        {
            let transformation = index.transformation(i);
            let flip = both_routes(row) && row.has(flags::FLIP);
            let t = self.per.entry(transformation).or_default();
            t.0 += 1;
            if flip || row.status().is_failure() {
                t.1 += 1;
            }
            if flip {
                let f = self.flips.entry(transformation).or_default();
                f.n += 1;
                f.failed += u64::from(matches!(row.status(), Status::Fail | Status::Boundary));
                f.passed += u64::from(row.status() == Status::Pass);
                f.margins.extend(micros(row.margin));
            }
        }
    }

    /// Add what `other` counted.
    fn merge(mut self, other: TallyById) -> TallyById {
        for (id, f) in other.flips {
            self.flips.entry(id).or_default().add(f);
        }
        for (id, p) in other.per {
            add_pairs(self.per.entry(id).or_default(), p);
        }
        self
    }
}

/// Route flips and (pairs, failing or flipped pairs) per transformation
/// name, read from the rows that test the model.
fn tally_transformations<'a>(index: &'a RunIndex, rows: &[u32]) -> Tally<'a> {
    use rayon::prelude::*;
    // Counted by interned id, in chunks on rayon's threads, then by name.
    let TallyById {
        flips: flips_by_id,
        per: per_id,
    } = rows
        .par_chunks(super::REST_CHUNK)
        .fold(TallyById::default, |mut t, chunk| {
            t.count(index, chunk);
            t
        })
        .reduce(TallyById::default, TallyById::merge);
    let mut flips: FxHashMap<&str, Flips> = FxHashMap::default();
    for (id, f) in flips_by_id {
        flips.entry(sym_name(index, id)).or_default().add(f);
    }
    let mut per_transformation: FxHashMap<&str, (u64, u64)> = FxHashMap::default();
    for (id, p) in per_id {
        add_pairs(
            per_transformation.entry(sym_name(index, id)).or_default(),
            p,
        );
    }
    Tally {
        flips,
        per_transformation,
    }
}

/// Writes one sentence per transformation with the most route flips (at most three), then how many more.
fn flip_sentences(out: &mut Vec<String>, flips: FxHashMap<&str, Flips>) {
    let mut flips: Vec<(&str, Flips)> = flips.into_iter().collect();
    flips.sort_by(|a, b| b.1.n.cmp(&a.1.n).then_with(|| a.0.cmp(b.0)));
    for (name, f) in flips.iter().take(3) {
        let mut sentence = format!(
            "{} came from {}",
            count_of(f.n, "route flip", "route flips"),
            inert_line(name)
        );
        if let Some(c) = margin_clause(f) {
            sentence.push_str(", ");
            sentence.push_str(&c);
        }
        sentence.push_str("; ");
        sentence.push_str(&verdict_clause(f));
        sentence.push('.');
        out.push(sentence);
    }
    if flips.len() > 3 {
        let more = flips.len() - 3;
        out.push(format!(
            "Route flips also came from {more} more {}.",
            if more == 1 {
                "transformation"
            } else {
                "transformations"
            }
        ));
    }
}

/// The sentence naming the transformations whose pairs that test the model
/// neither failed nor flipped route, if any.
fn stable_sentence(per_transformation: &FxHashMap<&str, (u64, u64)>) -> Option<String> {
    let mut stable: Vec<(&str, u64)> = per_transformation
        .iter()
        .filter(|(_, (_, bad))| *bad == 0)
        .map(|(name, (n, _))| (*name, *n))
        .collect();
    by_count_then_name(&mut stable);
    if stable.is_empty() {
        return None;
    }
    let shown: Vec<String> = stable
        .iter()
        .take(5)
        .map(|(name, n)| format!("{} ({})", inert_line(name), count_of(*n, "pair", "pairs")))
        .collect();
    let rest = stable.len().saturating_sub(5);
    Some(format!(
        "Among the pairs that test the model, no failures or route flips in {}{}.",
        shown.join(", "),
        if rest > 0 {
            format!(" and {rest} more")
        } else {
            String::new()
        }
    ))
}

/// The sentence about boundary cases and how many of them flipped route, if there are any.
fn boundary_sentence(o: &GroupStats) -> Option<String> {
    if o.boundary_pairs == 0 {
        return None;
    }
    let flipped = match &o.boundary_flip_rate {
        Some(r) => format!(
            "{} of the {} with both routes known flipped route ({})",
            r.successes,
            r.trials,
            r.display()
        ),
        None => "none has both routes known".to_string(),
    };
    Some(format!(
        "{}; {flipped}.",
        if o.boundary_pairs == 1 {
            "1 pair has a source closer to a threshold than its minimum boundary margin".to_string()
        } else {
            format!(
                "{} pairs have sources closer to a threshold than their minimum boundary margin",
                o.boundary_pairs
            )
        }
    ))
}

/// Writes the sentences about service errors and invalid pairs, where there are any.
fn error_sentences(out: &mut Vec<String>, o: &GroupStats) {
    if o.service_errors > 0 {
        out.push(format!(
            "Service errors ({}) are counted apart from robustness failures.",
            o.service_errors
        ));
    }
    if o.invalid_pairs > 0 {
        out.push(format!(
            "{} changed undeclared facts: fix the test, not the model.",
            count_of(o.invalid_pairs, "invalid pair", "invalid pairs")
        ));
    }
}

/// The sentence about how many source cases the broken expectations touch,
/// if any expectation broke.
fn case_sentence(s: &Summary) -> Option<String> {
    let cl = &s.case_level;
    (cl.failing_cases > 0).then(|| {
        format!(
            "Broken expectations touch {} of {} source cases that test the model ({}); variants of one case are correlated, so cases, not pairs, are the independent evidence.",
            cl.failing_cases,
            cl.model_cases,
            show(&cl.failing_case_rate)
        )
    })
}

/// The sentence about the latency percentiles.
fn latency_sentence(l: &Latency) -> String {
    format!(
        "Latency of a pair (the slower of its two requests): p50 {} ms, p95 {} ms, over {} with a recorded latency (nearest rank).",
        fmt_num(l.p50_ms),
        fmt_num(l.p95_ms),
        count_of(l.pairs, "pair", "pairs")
    )
}

/// The sentence about whether repeated trials agree with themselves.
fn repetition_sentence(r: &Repetition) -> String {
    if r.inconsistent_pair_ids > 0 {
        format!(
            "Repeated trials: {} across repetitions.",
            if r.inconsistent_pair_ids == 1 {
                "1 pair disagrees with itself".to_string()
            } else {
                format!("{} pairs disagree with themselves", r.inconsistent_pair_ids)
            }
        )
    } else if r.repeated_pair_ids > 0 {
        format!(
            "Repeated trials: none of the {} changed between pass and fail.",
            count_of(r.repeated_pair_ids, "repeated pair", "repeated pairs")
        )
    } else {
        "Repetitions are recorded, but no pair appears more than once in this selection."
            .to_string()
    }
}

/// How many warnings of seed 000, section 7 the sentences name; the rest are counted.
const WARNINGS_SHOWN: usize = 5;

/// Writes one sentence per case that mixes policies or repetition sent with
/// regenerated inputs (at most [`WARNINGS_SHOWN`]), then how many more.
pub(super) fn warning_sentences(out: &mut Vec<String>, index: &RunIndex, warnings: &InputWarnings) {
    for w in warnings.named(index).take(WARNINGS_SHOWN) {
        out.push(format!("Warning: {}.", w.message()));
    }
    if warnings.len() > WARNINGS_SHOWN {
        out.push(format!(
            "{} more warnings of cases that mix policies or repetitions sent with regenerated inputs; the problems list names them all.",
            warnings.len() - WARNINGS_SHOWN
        ));
    }
}

/// The sentence about how many failures are classified, if there are failures.
fn classification_sentence(s: &Summary) -> Option<String> {
    if s.failures == 0 {
        return None;
    }
    Some(if s.classified >= s.failures {
        format!(
            "All {} classified.",
            if s.failures == 1 {
                "1 failure is".to_string()
            } else {
                format!("{} failures are", s.failures)
            }
        )
    } else if s.classified == 0 {
        format!(
            "None of the {} is classified yet.",
            count_of(s.failures, "failure", "failures")
        )
    } else {
        format!(
            "{} of {} {} classified; {} still {} a category.",
            s.classified,
            count_of(s.failures, "failure", "failures"),
            if s.classified == 1 { "is" } else { "are" },
            s.failures - s.classified,
            if s.failures - s.classified == 1 {
                "needs"
            } else {
                "need"
            }
        )
    })
}

/// The sentence about lines that could not be read.
fn unreadable(n: u64) -> String {
    if n == 1 {
        "1 line could not be read and is left out of every count.".to_string()
    } else {
        format!("{n} lines could not be read and are left out of every count.")
    }
}
