//! The context-probe harness: one JSONL row per trial.
//!
//! Each non-baseline presentation condition (wording index, evidence order)
//! is paired with the baseline condition (first wording, original order) of
//! the same case and repetition. The decision (`approve`, `hold`,
//! `insufficient_evidence`) is kept as `source.decision` / `variant.decision`;
//! the converter writes the verdict and its reasons itself. See
//! `docs/formats.md` for every field accepted.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{
    ConvertError, Format, Sink, Sniff, Unpaired, json_lines, json_num, pick, pick_bool, pick_str,
};

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
}

impl Trial {
    fn condition(&self) -> String {
        format!(
            "wording-{}/{}",
            self.wording,
            if self.reversed {
                "reversed"
            } else {
                "original"
            }
        )
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

pub(super) fn convert(text: &str, sink: &mut Sink) -> Result<(), ConvertError> {
    let rows = json_lines(text, sink);
    if rows.is_empty() {
        return Err("no trial rows; expected one JSON object per trial line".into());
    }
    sink.report.rows = rows.len();
    let mut trials = Vec::new();
    for (line, o) in rows {
        match read_trial(line, o) {
            Ok(t) => trials.push(t),
            Err(e) => sink.warn(format!("line {line}: {e}; skipped")),
        }
    }
    if trials.is_empty() {
        return Err("no row is a context-probe trial (case, wording index, evidence order)".into());
    }
    super::warn_mixed(
        sink,
        "model_id",
        &trials
            .iter()
            .map(|t| t.model_id.clone())
            .collect::<Vec<_>>(),
    );
    super::warn_mixed(
        sink,
        "settings_id",
        &trials
            .iter()
            .map(|t| t.settings_id.clone())
            .collect::<Vec<_>>(),
    );
    let mut hashes = BTreeMap::new();
    for t in &trials {
        if let (Some(h), Some(p)) = (pick_str(&t.raw, PROMPT_HASH), pick(&t.raw, PROMPT))
            && let Some(p) = p.as_str()
        {
            let actual = sha256_hex(p);
            if !h.eq_ignore_ascii_case(&actual) {
                hashes.insert(t.id.clone(), ());
            }
        }
    }
    if !hashes.is_empty() {
        sink.warn(format!(
            "{} trials have a prompt hash that is not the SHA-256 of their prompt",
            hashes.len()
        ));
    }

    // Group by case and repetition; conditions sorted by (wording, order).
    type Group = BTreeMap<(u64, bool), Trial>;
    let mut groups: BTreeMap<(String, u64), Group> = BTreeMap::new();
    for t in trials {
        let g = groups.entry((t.case.clone(), t.repetition)).or_default();
        let key = (t.wording, t.reversed);
        if let Some(first) = g.get(&key) {
            sink.warn(format!(
                "line {}: a second trial of case {} repetition {} {}; the one on line {} is kept",
                t.line,
                crate::core::text::inert_line(&t.case),
                t.repetition,
                t.condition(),
                first.line
            ));
            continue;
        }
        g.insert(key, t);
    }
    for ((case, rep), mut group) in groups {
        let baseline = group.remove(&(0, false));
        match baseline {
            Some(base) if !group.is_empty() => {
                for t in group.values() {
                    sink.record(pair(&case, rep, &base, t))?;
                }
            }
            Some(base) => {
                sink.warn(format!(
                    "case {} repetition {rep} has only its baseline trial; listed unpaired",
                    crate::core::text::inert_line(&case)
                ));
                sink.record(unpaired(&base))?;
            }
            None => {
                sink.warn(format!(
                    "case {} repetition {rep} has no baseline trial (wording 0, original order); its {} trials are listed unpaired",
                    crate::core::text::inert_line(&case),
                    group.len()
                ));
                for t in group.values() {
                    sink.record(unpaired(t))?;
                }
            }
        }
    }
    Ok(())
}

fn pair(case: &str, rep: u64, base: &Trial, t: &Trial) -> Value {
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
    let mut reasons = Vec::new();
    let base_service = base.service_failure().is_some();
    let var_service = t.service_failure().is_some();
    if !base_service
        && !var_service
        && let (Some(a), Some(b)) = (&base.decision, &t.decision)
        && a != b
    {
        reasons.push(format!("The decision changed from {a} to {b}."));
    }
    reasons.extend(t.own_failures("variant"));
    let unsafe_approval = t.unsafe_approval() && !var_service;
    if unsafe_approval {
        reasons.push("unsafe: approved where approval was not allowed.".to_string());
    }
    let mut mismatch = Vec::new();
    for (what, a, b) in [
        ("model_id", &base.model_id, &t.model_id),
        ("settings_id", &base.settings_id, &t.settings_id),
    ] {
        if let (Some(a), Some(b)) = (a, b)
            && a != b
        {
            mismatch.push(format!("{what} {a} → {b}"));
        }
    }
    if !mismatch.is_empty() {
        reasons.push(format!(
            "The configuration changed between baseline and variant: {}.",
            mismatch.join(", ")
        ));
    }
    let base_fail = base.own_failures("baseline");
    if !base_fail.is_empty() {
        reasons.extend(base_fail);
    }
    let mut r = Map::new();
    r.insert("case_id".into(), json!(case));
    r.insert("variant_id".into(), json!(t.condition()));
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
    r.insert("source".into(), base.side());
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
    if let Some(e) = &t.expected {
        r.insert("expected_decision".into(), json!(e));
    }
    r.insert("unsafe_approval".into(), json!(unsafe_approval));
    r.insert("config_mismatch".into(), json!(!mismatch.is_empty()));
    if let Some(g) = pick_str(&t.raw, GRADER) {
        r.insert("grader_version".into(), json!(g));
    }
    r.insert(
        "origin".into(),
        json!({"baseline": base.raw, "variant": t.raw}),
    );
    Value::Object(r)
}

fn unpaired(t: &Trial) -> Value {
    let mut u = Unpaired::new(t.case.clone(), t.condition());
    u.input = t.question.clone();
    u.expected = t.expected.clone().map(Value::String);
    u.actual = t.decision.clone().map(Value::String);
    let reasons = t.own_failures("trial");
    u.passed = Some(reasons.is_empty());
    u.reasons = reasons;
    if t.unsafe_approval() {
        u.reasons
            .push("unsafe: approved where approval was not allowed.".to_string());
        u.passed = Some(false);
    }
    u.outcome = t.service_failure().map(|(o, e)| (o.to_string(), e));
    u.latency_ms = t.latency_ms;
    u.model_id = t.model_id.clone();
    u.settings_id = t.settings_id.clone();
    u.repetition = Some(t.repetition);
    u.extra
        .insert("unsafe_approval".into(), json!(t.unsafe_approval()));
    u.into_record(Format::ContextProbe, Value::Object(t.raw.clone()))
}

fn sha256_hex(s: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(s.as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}
