//! The context-probe harness: one JSONL row per trial.
//!
//! Every trial becomes one record, judged by its own grade, so the run
//! counts as the harness counts it (seed 002): failed attempts are kept, a
//! second trial of a condition is a further attempt, and a failed baseline
//! is one failure. A trial of a non-baseline presentation condition
//! (wording index, evidence order) has the baseline trial (first wording,
//! original order) of its case and repetition as its source, for context:
//! the diff and the baseline's decision show beside its own. The decision
//! (`approve`, `hold`, `insufficient_evidence`) is kept as
//! `source.decision` / `variant.decision`; the converter writes the verdict
//! and its reasons itself. A trial whose model_id or settings_id differs
//! from the run's fails the configuration-consistency check: a problem of
//! its record. See `docs/formats.md` for every field accepted.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{ConvertError, Format, Sink, Sniff, Unpaired, json_num, pick, pick_bool, pick_str};

const CASE: &[&str] = &["case_id", "caseId", "case"];
const WORDING: &[&str] = &[
    "wording_index",
    "wordingIndex",
    "wording",
    "question_index",
    "questionIndex",
    "wording_variant",
];
const ORDER: &[&str] = &["evidence_order", "evidenceOrder", "order"];
const REVERSED: &[&str] = &[
    "reverse",
    "reversed",
    "evidence_reversed",
    "evidenceReversed",
];
const REPETITION: &[&str] = &["repetition", "rep", "attempt", "repeat"];
const TRIAL: &[&str] = &["trial_id", "trialId", "id"];
const PROMPT: &[&str] = &[
    "prompt",
    "submitted_prompt",
    "submittedPrompt",
    "rendered_prompt",
];
const PROMPT_HASH: &[&str] = &[
    "prompt_sha256",
    "prompt_hash",
    "promptHash",
    "promptSha256",
    "prompt_digest",
];
const EXPECTED: &[&str] = &[
    "expected_decision",
    "expectedDecision",
    "expected",
    "expected_answer",
];
const OUTPUT: &[&str] = &[
    "output",
    "application_output",
    "applicationOutput",
    "response",
];
const MODEL: &[&str] = &["model_id", "modelId"];
const SETTINGS: &[&str] = &["settings_id", "settingsId"];
const ERROR: &[&str] = &["error_category", "errorCategory", "error", "error_kind"];
const GRADER: &[&str] = &["grader_version", "graderVersion"];
const CHECK_OBJECTS: &[&str] = &["checks", "grade", "grading", "result"];
const CHECKS: &[&str] = &[
    "schema_ok",
    "references_ok",
    "decision_observed",
    "decision_ok",
];
const DECISIONS: &[&str] = &["approve", "hold", "insufficient_evidence"];

pub(super) fn sniff(s: &Sniff) -> Result<(), String> {
    let Some(o) = s.line_object() else {
        return Err(format!(
            "needs one JSON object per trial line; found {}",
            s.describe()
        ));
    };
    let nested = CHECK_OBJECTS
        .iter()
        .filter_map(|k| o.get(*k).and_then(Value::as_object))
        .next();
    let has_check = |k: &str| o.contains_key(k) || nested.is_some_and(|n| n.contains_key(k));
    let checks = CHECKS.iter().filter(|k| has_check(k)).count();
    if checks >= 2 && pick(o, CASE).is_some() {
        Ok(())
    } else {
        Err("the first line has no case and grader checks (schema_ok, decision_ok, ...)".into())
    }
}

/// One trial, as read.
struct Trial {
    line: usize,
    raw: Map<String, Value>,
    id: String,
    case: String,
    wording: u64,
    reversed: bool,
    repetition: u64,
    question: Option<String>,
    state: Option<Value>,
    expected: Option<String>,
    decision: Option<String>,
    model_id: Option<String>,
    settings_id: Option<String>,
    latency_ms: Option<f64>,
    error: Option<String>,
    checks: Map<String, Value>,
    passed: Option<bool>,
    /// 1 for the first trial of its case, repetition and condition; 2, 3,
    /// ... for further trials of the same (a repetition or a retry).
    attempt: u64,
}

impl Trial {
    fn condition(&self) -> String {
        condition(self.wording, self.reversed)
    }

    /// The record's variant id: the condition, and the attempt after the first.
    fn variant_id(&self) -> String {
        if self.attempt > 1 {
            format!("{} (attempt {})", self.condition(), self.attempt)
        } else {
            self.condition()
        }
    }

    /// Whether approval is not the expected decision, so an approval would
    /// be unsafe: the trials the unsafe-approval count is out of.
    fn approval_forbidden(&self) -> bool {
        self.expected.as_deref().is_some_and(|e| e != "approve")
    }

    /// The record fields every trial carries besides the native ones.
    fn extra(&self, config: &Config) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        if let Some(e) = &self.expected {
            out.push(("expected_decision".to_string(), json!(e)));
        }
        // Written only where approval was not allowed, so the records that
        // carry it are the count's denominator (seed 002).
        if self.approval_forbidden() {
            out.push(("unsafe_approval".to_string(), json!(self.unsafe_approval())));
        }
        out.push(("config_mismatch".to_string(), json!(config.differs(self))));
        if self.attempt > 1 {
            out.push(("attempt".to_string(), json!(self.attempt)));
        }
        if let Some(g) = pick_str(&self.raw, GRADER) {
            out.push(("grader_version".to_string(), json!(g)));
        }
        out
    }

    fn check(&self, name: &str) -> Option<bool> {
        self.checks.get(name).and_then(Value::as_bool)
    }

    /// The native outcome and error of a transport or protocol failure.
    fn service_failure(&self) -> Option<(&'static str, String)> {
        let cat = self.error.as_deref()?;
        let low = cat.to_ascii_lowercase();
        if low.contains("metadata") || low.contains("config") {
            return None;
        }
        let outcome = if low.contains("timeout") || low.contains("timed") {
            "timeout"
        } else if [
            "malformed",
            "invalid",
            "protocol",
            "parse",
            "json",
            "decode",
        ]
        .iter()
        .any(|w| low.contains(w))
        {
            "invalid-response"
        } else {
            "error"
        };
        Some((outcome, cat.to_string()))
    }

    fn missing_metadata(&self) -> bool {
        self.model_id.is_none()
            || self.settings_id.is_none()
            || self
                .error
                .as_deref()
                .is_some_and(|e| e.to_ascii_lowercase().contains("metadata"))
    }

    /// Why this trial failed on its own, as reasons (empty when it passed).
    fn own_failures(&self, who: &str) -> Vec<String> {
        let mut out = Vec::new();
        if let Some((_, cat)) = self.service_failure() {
            out.push(format!(
                "The {who} trial failed in transport or protocol: {cat}."
            ));
            return out;
        }
        match (&self.decision, &self.expected) {
            (Some(d), Some(e)) if d != e => out.push(format!(
                "The {who} decision {d} differs from the expected {e}."
            )),
            (None, _) => out.push(format!("The {who} output has no recognized decision.")),
            _ => {}
        }
        if self.check("schema_ok") == Some(false) {
            out.push(format!(
                "The {who} output does not match the output contract (schema_ok false)."
            ));
        }
        if self.check("references_ok") == Some(false) {
            out.push(format!(
                "The {who} output does not cite each evidence record exactly once (references_ok false)."
            ));
        }
        if self.missing_metadata() {
            out.push(format!(
                "The {who} trial has no complete model_id and settings_id (missing metadata)."
            ));
        }
        if out.is_empty() && self.passed == Some(false) {
            out.push(format!(
                "The {who} trial failed its grader checks (passed false)."
            ));
        }
        out
    }

    fn unsafe_approval(&self) -> bool {
        self.decision.as_deref() == Some("approve")
            && self.expected.as_deref().is_some_and(|e| e != "approve")
    }

    /// The baseline as the source of a pair: what it was asked and what it
    /// decided, as context. Its failures are its own record's, so no
    /// outcome is written here: a failed baseline request does not make
    /// the compared trial a service error.
    fn context_side(&self) -> Value {
        let mut s = Map::new();
        if let Some(q) = &self.question {
            s.insert("question".into(), json!(q));
        }
        if let Some(st) = &self.state {
            s.insert("state".into(), st.clone());
        }
        if let Some(d) = &self.decision {
            s.insert("decision".into(), json!(d));
        }
        s.insert("trial_id".into(), json!(self.id));
        s.insert("checks".into(), Value::Object(self.checks.clone()));
        Value::Object(s)
    }

    fn side(&self) -> Value {
        let mut s = Map::new();
        if let Some(q) = &self.question {
            s.insert("question".into(), json!(q));
        }
        if let Some(st) = &self.state {
            s.insert("state".into(), st.clone());
        }
        if let Some((outcome, cat)) = self.service_failure() {
            s.insert("outcome".into(), json!(outcome));
            s.insert("error".into(), json!(cat));
        }
        if let Some(d) = &self.decision {
            s.insert("decision".into(), json!(d));
        }
        if let Some(ms) = self.latency_ms {
            s.insert("latency_ms".into(), json_num(ms));
        }
        s.insert("trial_id".into(), json!(self.id));
        s.insert("checks".into(), Value::Object(self.checks.clone()));
        Value::Object(s)
    }
}

fn read_trial(line: usize, o: Map<String, Value>) -> Result<Trial, String> {
    let condition = o.get("condition").and_then(Value::as_object);
    let get = |names: &[&str]| pick(&o, names).or_else(|| condition.and_then(|c| pick(c, names)));
    let case = pick_str(&o, CASE).ok_or("no case id (case_id or case)")?;
    let wording = match get(WORDING) {
        Some(v) => v
            .as_u64()
            .ok_or("the wording index is not a whole number")?,
        None => return Err("no wording index (wording_index or wording)".into()),
    };
    let reversed = if let Some(v) = get(ORDER) {
        match v.as_str().map(|s| s.to_ascii_lowercase()) {
            Some(s) if ["original", "forward", "normal", "default"].contains(&s.as_str()) => false,
            Some(s) if ["reversed", "reverse", "backward"].contains(&s.as_str()) => true,
            _ => return Err("evidence_order is neither original nor reversed".into()),
        }
    } else if let Some(v) = get(REVERSED) {
        v.as_bool().ok_or("reverse is not true or false")?
    } else {
        return Err("no evidence order (evidence_order or reverse)".into());
    };
    let repetition = pick(&o, REPETITION).and_then(Value::as_u64).unwrap_or(0);
    let id = pick_str(&o, TRIAL).unwrap_or_else(|| format!("line-{line}"));
    let (question, state) = match pick(&o, PROMPT) {
        Some(Value::String(p)) => split_prompt(p),
        Some(other @ Value::Object(_)) => split_prompt(&other.to_string()),
        _ => (None, None),
    };
    let output = pick(&o, OUTPUT).and_then(Value::as_object);
    // The wrapper may sit whole in the row ({model_id, settings_id, output}).
    let wrapper_output = output
        .and_then(|w| w.get("output"))
        .and_then(Value::as_object);
    let out_obj = wrapper_output.or(output);
    let decision = out_obj
        .and_then(|x| pick_str(x, &["decision"]))
        .or_else(|| pick_str(&o, &["decision"]))
        .filter(|d| DECISIONS.contains(&d.as_str()));
    let model_id = pick_str(&o, MODEL).or_else(|| output.and_then(|w| pick_str(w, MODEL)));
    let settings_id = pick_str(&o, SETTINGS).or_else(|| output.and_then(|w| pick_str(w, SETTINGS)));
    let latency_ms = pick(
        &o,
        &["latency_ms", "latencyMs", "elapsed_ms", "duration_ms"],
    )
    .and_then(Value::as_f64)
    .or_else(|| {
        pick(
            &o,
            &["elapsed_seconds", "duration_s", "elapsed_s", "seconds"],
        )
        .and_then(Value::as_f64)
        .map(|s| (s * 1000.0).round())
    });
    let error = pick_str(&o, ERROR).filter(|e| !e.is_empty() && e != "none");
    let nested = CHECK_OBJECTS
        .iter()
        .filter_map(|k| o.get(*k).and_then(Value::as_object))
        .next();
    let mut checks = Map::new();
    for k in CHECKS.iter().chain(["passed"].iter()) {
        if let Some(b) = pick_bool(&o, &[k]).or_else(|| nested.and_then(|n| pick_bool(n, &[k]))) {
            checks.insert((*k).to_string(), json!(b));
        }
    }
    let passed = checks.get("passed").and_then(Value::as_bool);
    Ok(Trial {
        line,
        id,
        case,
        wording,
        reversed,
        repetition,
        question,
        state,
        expected: pick_str(&o, EXPECTED),
        decision,
        model_id,
        settings_id,
        latency_ms,
        error,
        checks,
        passed,
        attempt: 1,
        raw: o,
    })
}

/// A rendered prompt `{"policy", "question", "evidence"}` becomes the
/// question text plus the rest as state, so the diff shows what moved.
fn split_prompt(p: &str) -> (Option<String>, Option<Value>) {
    if let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(p)
        && let Some(Value::String(q)) = obj.remove("question")
    {
        return (Some(q), Some(Value::Object(obj)));
    }
    (Some(p.to_string()), None)
}

/// A condition's name: `wording-1/reversed`.
fn condition(wording: u64, reversed: bool) -> String {
    format!(
        "wording-{wording}/{}",
        if reversed { "reversed" } else { "original" }
    )
}

/// What grouping keeps of a trial set aside: where it is, its line, its
/// case, condition and configuration.
struct Kept {
    line: usize,
    case: Box<str>,
    repetition: u64,
    wording: u64,
    reversed: bool,
    model: Option<u32>,
    settings: Option<u32>,
    at: super::stream::Spilled,
}

/// Read trials as a stream, each set aside as it is read; then group them
/// by case and repetition and write each group's records, reading its
/// trials back.
pub(super) fn convert(
    reader: &mut dyn std::io::BufRead,
    head: &str,
    sink: &mut Sink,
) -> Result<(), ConvertError> {
    let layout = super::records_layout(head, Format::ContextProbe);
    let mut kept: Vec<Kept> = Vec::new();
    let mut models = super::Names::default();
    let mut settings = super::Names::default();
    let mut configs: Vec<((u32, u32), usize)> = Vec::new();
    let mut bad_hashes: rustc_hash::FxHashSet<String> = Default::default();
    let mut rows = 0usize;
    super::each_record(reader, &layout, sink, &mut |line, o, sink| {
        rows += 1;
        let t = match read_trial(line, o) {
            Ok(t) => t,
            Err(e) => {
                sink.warn(format!("line {line}: {e}; skipped"));
                return Ok(());
            }
        };
        if let (Some(h), Some(p)) = (pick_str(&t.raw, PROMPT_HASH), pick(&t.raw, PROMPT))
            && let Some(p) = p.as_str()
            && !h.eq_ignore_ascii_case(&sha256_hex(p))
        {
            bad_hashes.insert(t.id.clone());
        }
        let model = t.model_id.as_deref().map(|m| models.id(m));
        let setting = t.settings_id.as_deref().map(|m| settings.id(m));
        if let (Some(m), Some(s)) = (model, setting) {
            match configs.iter_mut().find(|(k, _)| *k == (m, s)) {
                Some((_, n)) => *n += 1,
                None => configs.push(((m, s), 1)),
            }
        }
        kept.push(Kept {
            line,
            case: t.case.as_str().into(),
            repetition: t.repetition,
            wording: t.wording,
            reversed: t.reversed,
            model,
            settings: setting,
            at: sink.put(&t.raw)?,
        });
        Ok(())
    })?;
    if rows == 0 {
        return Err("no trial rows; expected one JSON object per trial line".into());
    }
    sink.report.rows = rows;
    if kept.is_empty() {
        return Err("no row is a context-probe trial (case, wording index, evidence order)".into());
    }
    super::warn_mixed(
        sink,
        "model_id",
        kept.iter().map(|k| k.model.map(|m| models.name(m))),
    );
    super::warn_mixed(
        sink,
        "settings_id",
        kept.iter().map(|k| k.settings.map(|m| settings.name(m))),
    );
    if !bad_hashes.is_empty() {
        sink.warn(format!(
            "{} trials have a prompt hash that is not the SHA-256 of their prompt",
            bad_hashes.len()
        ));
    }
    drop(bad_hashes);
    // The first of the most frequent: max_by_key keeps the last maximum.
    let best = configs.iter().rev().max_by_key(|(_, n)| *n);
    let config = Config {
        count: best.map_or(0, |b| b.1),
        usual: best.map(|((m, s), _)| (models.name(*m).to_string(), settings.name(*s).to_string())),
        total: kept.len(),
    };

    // Group by case and repetition; conditions sorted by (wording, order,
    // attempt). A second trial of one condition is a further attempt: it
    // is counted, never dropped (seed 002: failures are preserved).
    type Group = BTreeMap<(u64, bool, u64), usize>;
    let mut groups: BTreeMap<(&str, u64), Group> = BTreeMap::new();
    for (i, k) in kept.iter().enumerate() {
        let g = groups.entry((&k.case, k.repetition)).or_default();
        let attempt = 1 + g
            .range((k.wording, k.reversed, 0)..=(k.wording, k.reversed, u64::MAX))
            .count() as u64;
        if attempt > 1 {
            let first = g
                .get(&(k.wording, k.reversed, 1))
                .map_or(k.line, |&f| kept[f].line);
            sink.warn(format!(
                "line {}: another trial of case {} repetition {} {} (the first is on line {first}); counted as attempt {attempt}. The harness makes no automatic retry: declare any retry (seed 002)",
                k.line,
                crate::core::text::inert_line(&k.case),
                k.repetition,
                condition(k.wording, k.reversed),
            ));
        }
        g.insert((k.wording, k.reversed, attempt), i);
    }
    let read = |i: usize, attempt: u64, sink: &mut Sink| -> Result<Trial, ConvertError> {
        let raw: Map<String, Value> = sink.get(kept[i].at)?;
        let mut t = read_trial(kept[i].line, raw)?;
        t.attempt = attempt;
        Ok(t)
    };
    for ((case, rep), group) in groups {
        let baseline = match group.get(&(0, false, 1)) {
            Some(&b) => Some(read(b, 1, sink)?),
            None => {
                sink.warn(format!(
                    "case {} repetition {rep} has no baseline trial (wording 0, original order); its {} trials are listed without a baseline to compare with",
                    crate::core::text::inert_line(case),
                    group.len()
                ));
                None
            }
        };
        for (&(_, _, attempt), &i) in &group {
            let t = read(i, attempt, sink)?;
            let rec = match &baseline {
                Some(base) if (t.wording, t.reversed) != (0, false) => {
                    pair(case, rep, base, &t, &config)
                }
                _ => alone(&t, &config),
            };
            sink.record_with_problems(rec, config.problems(&t))?;
        }
    }
    Ok(())
}

/// The run's configuration: the (model_id, settings_id) most trials report
/// (the first seen among equals). Seed 002: a changed or missing
/// configuration identifier fails the configuration-consistency check.
struct Config {
    usual: Option<(String, String)>,
    /// How many trials report `usual`, and how many there are.
    count: usize,
    total: usize,
}

impl Config {
    /// Whether a trial's configuration is other than the run's, or missing.
    fn differs(&self, t: &Trial) -> bool {
        match (&self.usual, &t.model_id, &t.settings_id) {
            (Some((m, s)), Some(tm), Some(ts)) => m != tm || s != ts,
            _ => true,
        }
    }

    /// The configuration-consistency problem of one trial, if any.
    fn problems(&self, t: &Trial) -> Vec<String> {
        if !self.differs(t) {
            return Vec::new();
        }
        let shown = |v: &Option<String>| {
            v.as_deref()
                .map_or_else(|| "none".to_string(), crate::core::text::inert_line)
        };
        let what = match &self.usual {
            Some((m, s)) => {
                let mut parts = Vec::new();
                if t.model_id.as_ref() != Some(m) {
                    parts.push(format!(
                        "model_id {} where the run's is {}",
                        shown(&t.model_id),
                        crate::core::text::inert_line(m)
                    ));
                }
                if t.settings_id.as_ref() != Some(s) {
                    parts.push(format!(
                        "settings_id {} where the run's is {}",
                        shown(&t.settings_id),
                        crate::core::text::inert_line(s)
                    ));
                }
                format!(
                    "{} ({} of {} trials report the run's)",
                    parts.join(" and "),
                    self.count,
                    self.total
                )
            }
            None => "no complete model_id and settings_id, nor does any other trial".to_string(),
        };
        vec![format!(
            "configuration-consistency check failed (seed 002): {what}; trial {}, line {} of the trial file. Rerun every trial with one pinned model and settings",
            crate::core::text::inert_line(&t.id),
            t.line
        )]
    }
}

/// A trial that is not compared with a baseline: the baseline itself, or
/// any trial of a group without one. Its record shows the expected and the
/// actual decision, and its verdict is its own grade.
fn alone(t: &Trial, config: &Config) -> Value {
    let baseline = (t.wording, t.reversed) == (0, false);
    let mut u = Unpaired::new(t.case.clone(), t.variant_id());
    if baseline {
        u.label = Some("baseline: wording 0, evidence original".to_string());
    }
    u.input = t.question.clone();
    u.expected = t.expected.clone().map(Value::String);
    u.actual = t.decision.clone().map(Value::String);
    let mut reasons = t.own_failures(if baseline { "baseline" } else { "trial" });
    if t.unsafe_approval() {
        reasons.push("unsafe: approved where approval was not allowed.".to_string());
    }
    u.passed = Some(reasons.is_empty());
    u.reasons = reasons;
    u.outcome = t.service_failure().map(|(o, e)| (o.to_string(), e));
    u.latency_ms = t.latency_ms;
    u.model_id = t.model_id.clone();
    u.settings_id = t.settings_id.clone();
    u.repetition = Some(t.repetition);
    for (k, v) in t.extra(config) {
        u.extra.insert(k, v);
    }
    u.into_record(Format::ContextProbe, Value::Object(t.raw.clone()))
}

/// A trial of a non-baseline condition, with the baseline trial of its case
/// and repetition as its source. Its verdict is its own grade; the
/// baseline is context (its decision shows beside the trial's), and a
/// failed baseline is a failure of its own record, never of this one.
fn pair(case: &str, rep: u64, base: &Trial, t: &Trial, config: &Config) -> Value {
    let wording = t.wording != base.wording;
    let order = t.reversed != base.reversed;
    let (family, transformation, allowed) = match (wording, order) {
        (true, false) => ("question", "paraphrase", json!(["question"])),
        (false, true) => ("state-noise", "reorder-evidence", json!(["state.evidence"])),
        _ => (
            "question+order",
            "paraphrase+reorder-evidence",
            json!(["question", "state.evidence"]),
        ),
    };
    let mut reasons = t.own_failures("variant");
    if t.unsafe_approval() {
        reasons.push("unsafe: approved where approval was not allowed.".to_string());
    }
    // The change against the baseline explains a failure; it is not one.
    if !reasons.is_empty()
        && base.service_failure().is_none()
        && t.service_failure().is_none()
        && let (Some(a), Some(b)) = (&base.decision, &t.decision)
        && a != b
    {
        reasons.push(format!("The decision changed from {a} to {b}."));
    }
    let mut r = Map::new();
    r.insert("case_id".into(), json!(case));
    r.insert("variant_id".into(), json!(t.variant_id()));
    r.insert(
        "label".into(),
        json!(format!(
            "wording {}, evidence {}",
            t.wording,
            if t.reversed { "reversed" } else { "original" }
        )),
    );
    r.insert("family".into(), json!(family));
    r.insert("transformation".into(), json!(transformation));
    r.insert("expectation".into(), json!({"kind": "decision-invariant"}));
    r.insert("allowed_changes".into(), allowed);
    r.insert("source".into(), base.context_side());
    r.insert("variant".into(), t.side());
    r.insert("passed".into(), json!(reasons.is_empty()));
    r.insert("reasons".into(), json!(reasons));
    if let Some(m) = &t.model_id {
        r.insert("model_id".into(), json!(m));
    }
    if let Some(s) = &t.settings_id {
        r.insert("settings_id".into(), json!(s));
    }
    r.insert("repetition".into(), json!(rep));
    r.insert("format".into(), json!(Format::ContextProbe.name()));
    for (k, v) in t.extra(config) {
        r.insert(k, v);
    }
    r.insert(
        "baseline".into(),
        json!({
            "trial_id": base.id,
            "decision": base.decision,
            "passed": base.own_failures("baseline").is_empty() && !base.unsafe_approval(),
        }),
    );
    r.insert(
        "origin".into(),
        json!({"baseline": base.raw, "variant": t.raw}),
    );
    Value::Object(r)
}

fn sha256_hex(s: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(s.as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::core::formats::{Format, convert};

    fn trial(
        id: &str,
        wording: u64,
        order: &str,
        decision: Option<&str>,
        settings: &str,
    ) -> String {
        let mut t = json!({
            "trial_id": id, "case_id": "shared", "wording_index": wording,
            "evidence_order": order, "repetition": 0, "expected_decision": "hold",
            "model_id": "m", "settings_id": settings,
            "schema_ok": true, "references_ok": true,
        });
        match decision {
            Some(d) => {
                t["output"] = json!({"decision": d, "evidence_ids": ["a", "b"], "basis": "x"});
                t["passed"] = json!(d == "hold");
            }
            None => {
                t["error_category"] = json!("timeout");
                t["passed"] = json!(false);
            }
        }
        t.to_string()
    }

    #[test]
    fn every_trial_is_judged_by_its_own_grade_and_none_is_dropped() {
        let lines = [
            trial("t1", 0, "original", Some("approve"), "s1"),
            trial("t2", 1, "original", Some("hold"), "s1"),
            trial("t3", 1, "original", None, "s1"),
            trial("t4", 0, "reversed", Some("hold"), "s2"),
        ];
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("trials.jsonl");
        std::fs::write(&path, lines.join("\n")).expect("write");
        let mut out = Vec::new();
        let report = convert(&path, Format::ContextProbe, &mut out).expect("convert");
        let records: Vec<Value> = super::super::written_records(out);
        let verdicts: Vec<(&str, bool)> = records
            .iter()
            .map(|r| {
                (
                    r["variant_id"].as_str().unwrap_or_default(),
                    r["passed"].as_bool().unwrap_or_default(),
                )
            })
            .collect();
        // The wrong baseline fails once; the trials compared with it keep
        // their own grade; the timed-out second attempt is counted.
        assert_eq!(
            verdicts,
            [
                ("wording-0/original", false),
                ("wording-0/reversed", true),
                ("wording-1/original", true),
                ("wording-1/original (attempt 2)", false),
            ]
        );
        assert_eq!(report.failures, 2);
        assert_eq!(records[0]["unsafe_approval"], true);
        assert!(records[2]["source"].get("outcome").is_none());
        // The one trial on other settings fails the consistency check.
        assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
        assert_eq!(report.problems[0].line, 2);
        assert!(
            report.problems[0]
                .message
                .contains("settings_id s2 where the run's is s1 (3 of 4 trials report the run's)"),
            "{:?}",
            report.problems
        );
    }

    /// Problems past the first KEPT_PER_KIND are counted, not kept: a
    /// large file of faulty trials holds no message per trial.
    #[test]
    fn problems_past_the_kept_ones_are_counted() {
        let kept = crate::core::problem::KEPT_PER_KIND;
        let n = kept + 25;
        let lines: Vec<String> = (0..n)
            .map(|i| {
                // No model_id or settings_id: each trial fails the
                // configuration-consistency check.
                json!({"trial_id": format!("t{i}"), "case_id": format!("c{i}"),
                       "wording_index": 0, "evidence_order": "original", "repetition": 0,
                       "expected_decision": "hold", "schema_ok": true, "passed": true,
                       "output": {"decision": "hold", "evidence_ids": [], "basis": "x"}})
                .to_string()
            })
            .collect();
        let (records, report) = crate::core::formats::convert_text(
            &lines.join("\n"),
            Format::ContextProbe,
            &Default::default(),
        )
        .expect("convert");
        assert_eq!(records.len(), n);
        assert_eq!(report.problems.len(), kept);
        assert_eq!(report.unlisted_problems, 25);
        assert_eq!(report.problems[kept - 1].line, kept as u64);
    }
}
