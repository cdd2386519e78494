//! multivon-eval: variant validation records
//! (`multivon.variant-validation/v1`, one per line or one document) and case
//! manifests (`multivon.case-manifest/v1`).
//!
//! A validation record is a pair: `base` is the source, `candidate` the
//! variant, their inputs are diffed, the relation is the expectation;
//! status `invalid` makes an invalid pair, `unknown` an unvalidated one
//! (no declared changes). A manifest's cases pair through the parent-case
//! link of their robustness metadata
//! (`metadata.multivon_robustness.parent_case_id`). Eval reports
//! (`multivon.report/v2`) pair the same way, through the case snapshot each
//! result's trial records, and carry the model's output and verdict.

use serde_json::{Map, Value, json};

use super::{
    ConvertError, Format, Row, Sink, Sniff, as_text, expectation_kind, json_lines, pick, pick_str,
    write_paired,
};

const VALIDATION: &str = "multivon.variant-validation/";
const MANIFEST: &str = "multivon.case-manifest/";
const REPORT: &str = "multivon.report/";

pub(super) fn sniff(s: &Sniff) -> Result<(), String> {
    let schema_of = |v: &Value| v.get("schema").and_then(Value::as_str).map(str::to_string);
    let schema = s
        .line_object()
        .and_then(|o| o.get("schema"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| s.document.as_ref().and_then(schema_of));
    let known = |sc: &str| {
        [VALIDATION, MANIFEST, REPORT]
            .iter()
            .any(|p| sc.starts_with(p))
    };
    if let Some(sc) = schema {
        return if known(&sc) {
            Ok(())
        } else {
            Err(format!(
                "schema {} is not a multivon variant validation, case manifest or report",
                crate::core::text::inert_line(&sc)
            ))
        };
    }
    // A long document whose head is cut: look for the schema string.
    if s.starts_document()
        && [VALIDATION, MANIFEST, REPORT]
            .iter()
            .any(|p| s.text.contains(&format!("\"{p}")))
    {
        return Ok(());
    }
    Err("no multivon schema (multivon.variant-validation/v1, multivon.case-manifest/v1, multivon.report/v2)".into())
}

pub(super) fn convert(text: &str, sink: &mut Sink) -> Result<(), ConvertError> {
    let docs: Vec<Map<String, Value>> = match serde_json::from_str::<Value>(text.trim_start()) {
        Ok(Value::Object(o)) => vec![o],
        Ok(Value::Array(a)) => a
            .into_iter()
            .filter_map(|v| match v {
                Value::Object(o) => Some(o),
                _ => None,
            })
            .collect(),
        _ => json_lines(text, sink).into_iter().map(|(_, o)| o).collect(),
    };
    let schema = |o: &Map<String, Value>| pick_str(o, &["schema"]).unwrap_or_default();
    let mut validations = Vec::new();
    let mut manifest_rows = Vec::new();
    for d in docs {
        let sc = schema(&d);
        if sc.starts_with(VALIDATION) {
            validations.push(d);
        } else if sc.starts_with(MANIFEST) {
            manifest_rows.extend(manifest(&d));
        } else if sc.starts_with(REPORT) {
            manifest_rows.extend(report(&d, sink));
        } else {
            sink.warn(format!(
                "a record with schema {:?} is not a multivon validation or manifest; skipped",
                crate::core::text::inert_line(&sc)
            ));
        }
    }
    if validations.is_empty() && manifest_rows.is_empty() {
        return Err(
            "expected multivon.variant-validation/v1 records, a multivon.case-manifest/v1 or a multivon.report/v2 with cases".into(),
        );
    }
    sink.report.rows = validations.len() + manifest_rows.len();
    for v in validations {
        let rec = validation(v)?;
        sink.record(rec)?;
    }
    if !manifest_rows.is_empty() {
        write_paired(manifest_rows, Format::Multivon, sink)?;
    }
    Ok(())
}

/// The input of an EvalCase as text: `input`, then any `context` and
/// `conversation` as JSON.
fn case_input(c: &Map<String, Value>) -> Option<String> {
    c.get("input").map(as_text)
}

/// Context and conversation of a case, when present, as state.
fn case_state(c: &Map<String, Value>, expected: Option<&Value>) -> Value {
    let mut s = Map::new();
    for k in ["context", "conversation"] {
        if let Some(v) = c.get(k).filter(|v| !v.is_null()) {
            s.insert(k.into(), v.clone());
        }
    }
    s.insert("expected".into(), expected.cloned().unwrap_or(Value::Null));
    Value::Object(s)
}

fn validation(v: Map<String, Value>) -> Result<Value, String> {
    let empty = Map::new();
    let base = v
        .get("base")
        .and_then(Value::as_object)
        .ok_or("a multivon.variant-validation record has no base case object")?;
    let cand = v
        .get("candidate")
        .and_then(Value::as_object)
        .ok_or("a multivon.variant-validation record has no candidate case object")?;
    let verdict = v
        .get("verdict")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let status = pick_str(&v, &["status"]).unwrap_or_else(|| "unknown".into());
    let relation = pick_str(&v, &["relation"]).unwrap_or_else(|| "invariant".into());
    let base_id = pick_str(base, &["case_id"]).unwrap_or_else(|| "base".into());
    let cand_id = pick_str(cand, &["case_id"]).unwrap_or_else(|| "candidate".into());
    let case_id = pick_str(base, &["source_id"]).unwrap_or_else(|| base_id.clone());
    let base_expected =
        pick(verdict, &["base_expected"]).or_else(|| pick(base, &["expected_output"]));
    let cand_expected =
        pick(verdict, &["variant_expected"]).or_else(|| pick(cand, &["expected_output"]));
    let side = |c: &Map<String, Value>, exp: Option<&Value>, id: &str| {
        let mut s = Map::new();
        if let Some(q) = case_input(c) {
            s.insert("question".into(), json!(q));
        }
        s.insert("state".into(), case_state(c, exp));
        s.insert("row_id".into(), json!(id));
        Value::Object(s)
    };
    let mut reasons: Vec<String> = v
        .get("issues")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(as_text).collect())
        .unwrap_or_default();
    if let Some(r) = pick_str(verdict, &["reason"]) {
        reasons.push(format!("Validator: {r}"));
    }
    let mut r = Map::new();
    r.insert("case_id".into(), json!(case_id));
    r.insert("variant_id".into(), json!(cand_id));
    if let Some(c) = pick_str(&v, &["contract"]) {
        r.insert("label".into(), json!(c));
    }
    r.insert("family".into(), json!(relation));
    let transformation = cand
        .get("metadata")
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_object)
        .and_then(|g| pick_str(g, &["transformation", "transform", "mutator", "name"]));
    if let Some(t) = transformation {
        r.insert("transformation".into(), json!(t));
    }
    r.insert(
        "expectation".into(),
        json!({"kind": expectation_kind(&relation)}),
    );
    match status.as_str() {
        // The validator accepted the change: any input change is declared.
        "valid" => {
            r.insert("allowed_changes".into(), json!(["question", "state"]));
        }
        // The validator rejected the change: no change is permitted, so the
        // diff's paths become the pair's unexpected changes.
        "invalid" => {
            r.insert("allowed_changes".into(), json!([]));
        }
        // Unvalidated: changes are undeclared.
        _ => {}
    }
    r.insert("source".into(), side(base, base_expected, &base_id));
    r.insert("variant".into(), side(cand, cand_expected, &cand_id));
    if status == "invalid" {
        r.insert("passed".into(), json!(false));
    }
    r.insert("reasons".into(), json!(reasons));
    r.insert("format".into(), json!(Format::Multivon.name()));
    r.insert("relation".into(), json!(relation));
    r.insert("validation_status".into(), json!(status));
    if let Some(d) = pick_str(&v, &["digest"]) {
        r.insert("validation_digest".into(), json!(d));
    }
    r.insert("origin".into(), Value::Object(v));
    Ok(Value::Object(r))
}

/// The cases of a manifest as rows, paired through their parent-case link.
fn manifest(m: &Map<String, Value>) -> Vec<Row> {
    let cases = m.get("cases").and_then(Value::as_array);
    let name = pick_str(m, &["name"]);
    cases
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let c = entry.get("case").and_then(Value::as_object)?;
            let id = pick_str(c, &["case_id"]).or_else(|| entry.get("id").map(as_text))?;
            let rob = c
                .get("metadata")
                .and_then(|x| x.get("multivon_robustness"))
                .and_then(Value::as_object);
            Some(Row {
                id: id.clone(),
                case_id: pick_str(c, &["source_id"]),
                base_id: rob.and_then(|r| pick_str(r, &["parent_case_id"])),
                relation: rob.and_then(|r| pick_str(r, &["relation"])),
                allowed_changes: validated_changes(rob),
                label: name.clone(),
                input: case_input(c),
                vars: Some(case_state(c, c.get("expected_output"))),
                expected: c.get("expected_output").filter(|e| !e.is_null()).cloned(),
                raw: entry.clone(),
                ..Row::default()
            })
        })
        .collect()
}

/// The case results of an eval report as rows. Each result's first trial
/// keeps a snapshot of the case it ran, with its robustness metadata; a
/// variant pairs with the result of its parent case.
fn report(m: &Map<String, Value>, sink: &mut Sink) -> Vec<Row> {
    let model = pick_str(m, &["model"]).filter(|s| !s.is_empty());
    let suite = pick_str(m, &["suite"]).filter(|s| !s.is_empty());
    if let Some(issues) = m.get("evidence_issues").and_then(Value::as_array) {
        for i in issues {
            sink.warn(format!("report evidence issue: {}", as_text(i)));
        }
    }
    let empty = Map::new();
    let mut rows = Vec::new();
    let cases = m.get("cases").and_then(Value::as_array);
    for (n, entry) in cases.into_iter().flatten().enumerate() {
        let Some(c) = entry.as_object() else {
            sink.warn(format!("case {}: not an object; skipped", n + 1));
            continue;
        };
        // The case as it ran: from its first trial, else the result itself.
        let snap = c
            .get("trials")
            .and_then(Value::as_array)
            .and_then(|t| t.first())
            .and_then(|t| t.get("case").or_else(|| t.get("evaluation_case")))
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let id = pick_str(c, &["case_id"])
            .or_else(|| pick_str(snap, &["case_id"]))
            .unwrap_or_else(|| format!("case-{}", n + 1));
        let rob = snap
            .get("metadata")
            .and_then(|x| x.get("multivon_robustness"))
            .and_then(Value::as_object);
        let expected = snap.get("expected_output").filter(|e| !e.is_null());
        let status = pick_str(c, &["status"]).unwrap_or_default();
        let mut reasons = Vec::new();
        for ev in c
            .get("evaluators")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if ev.get("passed") == Some(&Value::Bool(false)) {
                let name = ev.get("name").map(as_text).unwrap_or_default();
                let why = ev.get("reason").map(as_text).unwrap_or_default();
                reasons.push(format!("{name}: {why}"));
            }
        }
        for k in ["judge_error", "evaluator_error", "evidence_error"] {
            if let Some(e) = pick_str(c, &[k]) {
                reasons.push(format!("{}: {e}", k.replace('_', " ")));
            }
        }
        let error = match status.as_str() {
            "model_error" => Some((
                "error".to_string(),
                pick_str(c, &["model_error"]).unwrap_or_else(|| "model error".into()),
            )),
            "timeout" => Some((
                "timeout".to_string(),
                pick_str(c, &["model_error"]).unwrap_or_else(|| "timed out".into()),
            )),
            _ => None,
        };
        let passed = match status.as_str() {
            "skipped" => None,
            "passed" => Some(true),
            "" => c.get("passed").and_then(Value::as_bool),
            _ => Some(false),
        };
        let mut scores = Map::new();
        if let Some(sc) = c.get("score") {
            scores.insert("score".into(), sc.clone());
        }
        for ev in c
            .get("evaluators")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let (Some(name), Some(sc)) = (ev.get("name"), ev.get("score")) {
                scores.insert(as_text(name), sc.clone());
            }
        }
        rows.push(Row {
            id,
            case_id: pick_str(snap, &["source_id"]),
            base_id: rob.and_then(|r| pick_str(r, &["parent_case_id"])),
            relation: rob.and_then(|r| pick_str(r, &["relation"])),
            allowed_changes: validated_changes(rob),
            label: suite.clone(),
            input: c.get("input").or_else(|| snap.get("input")).map(as_text),
            vars: Some(case_state(snap, expected)),
            expected: expected.cloned(),
            output: c.get("output").filter(|o| !o.is_null()).cloned(),
            passed,
            reasons,
            error,
            latency_ms: c.get("latency_ms").and_then(Value::as_f64),
            model_id: model.clone(),
            scores: (!scores.is_empty()).then_some(Value::Object(scores)),
            raw: entry.clone(),
            ..Row::default()
        });
    }
    rows
}

/// A variant exported from a validation record was checked by a validator
/// (only valid variants become cases): its input changes are declared.
fn validated_changes(rob: Option<&Map<String, Value>>) -> Option<Value> {
    rob.filter(|r| r.contains_key("validation_digest"))
        .map(|_| json!(["question", "state"]))
}
