//! promptfoo: `promptfoo eval -o results.json` (one JSON document) or
//! `-o results.jsonl` (one result per line).
//!
//! Rows pair through the test metadata: `metadata.case_id` names the case,
//! `metadata.variant_id` (or `id`) the row, `metadata.base_id` the row it is
//! a variant of, and `metadata.relation` (`invariant` or `counterfactual`)
//! the expectation. A base and its variant pair when they ran on the same
//! provider and prompt. Rows with no relation are listed unpaired.

use serde_json::{Map, Value, json};

use super::{
    ConvertError, Format, Row, Sink, Sniff, as_text, json_lines, pick, pick_str, write_paired,
};

pub(super) fn sniff(s: &Sniff) -> Result<(), String> {
    if let Some(o) = s.line_object() {
        return if is_result(o) {
            Ok(())
        } else {
            Err("the first line is not a promptfoo result (testCase, provider, success)".into())
        };
    }
    if s.starts_document()
        && (s.has_key("evalId") || (s.has_key("results") && s.has_key("promptIdx")))
    {
        return Ok(());
    }
    // `results` alone is a common name: its entries must be promptfoo's.
    if let Some(Value::Object(o)) = &s.document
        && (o.contains_key("evalId")
            || results_of(o).is_some_and(|a| {
                a.first()
                    .is_none_or(|r| r.as_object().is_some_and(is_result))
            }))
    {
        return Ok(());
    }
    Err(format!(
        "needs a results file with evalId and results, or result lines; found {}",
        s.describe()
    ))
}

fn is_result(o: &Map<String, Value>) -> bool {
    o.contains_key("testCase")
        && (o.contains_key("provider") || o.contains_key("success") || o.contains_key("promptIdx"))
}

/// The results array of a results document (`results.results`, or
/// `results` itself in old files).
fn results_of(o: &Map<String, Value>) -> Option<&Vec<Value>> {
    match o.get("results")? {
        Value::Object(r) => r.get("results")?.as_array(),
        Value::Array(a) => Some(a),
        _ => None,
    }
}

pub(super) fn convert(text: &str, sink: &mut Sink) -> Result<(), ConvertError> {
    let trimmed = text.trim_start();
    let results: Vec<Map<String, Value>> = match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Object(mut o)) if !is_result(&o) => {
            if results_of(&o).is_none() {
                return Err(
                    "expected a promptfoo results file: an object with results.results".into(),
                );
            }
            // Taken out of the document rather than copied: a results file can be large.
            let list = match o.remove("results") {
                Some(Value::Object(mut r)) => r.remove("results"),
                other => other,
            };
            match list {
                Some(Value::Array(a)) => a
                    .into_iter()
                    .filter_map(|v| match v {
                        Value::Object(o) => Some(o),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            }
        }
        Ok(Value::Array(a)) => a
            .into_iter()
            .filter_map(|v| match v {
                Value::Object(o) => Some(o),
                _ => None,
            })
            .collect(),
        _ => json_lines(text, sink).into_iter().map(|(_, o)| o).collect(),
    };
    let results: Vec<_> = results.into_iter().filter(is_result).collect();
    if results.is_empty() {
        return Err("no promptfoo results (objects with testCase and provider)".into());
    }
    sink.report.rows = results.len();
    let rows = results.into_iter().map(row).collect();
    write_paired(rows, Format::Promptfoo, sink)
}

fn row(o: Map<String, Value>) -> Row {
    let test = o.get("testCase").and_then(Value::as_object);
    let empty = Map::new();
    let meta = test
        .and_then(|t| t.get("metadata"))
        .and_then(Value::as_object)
        .or_else(|| o.get("metadata").and_then(Value::as_object))
        .unwrap_or(&empty);
    let test_idx = o.get("testIdx").and_then(Value::as_u64);
    let description = test.and_then(|t| pick_str(t, &["description"]));
    let id = pick_str(
        meta,
        &["variant_id", "variantId", "id", "test_id", "testId"],
    )
    .or_else(|| description.clone())
    .unwrap_or_else(|| format!("test-{}", test_idx.unwrap_or(0)));
    let provider = o.get("provider").and_then(|p| match p {
        Value::String(s) => Some(s.clone()),
        // An empty label (promptfoo writes "" when none is set) names nothing.
        Value::Object(p) => pick_str(p, &["label"])
            .filter(|l| !l.trim().is_empty())
            .or_else(|| pick_str(p, &["id"])),
        _ => None,
    });
    let prompt = o.get("prompt").and_then(Value::as_object);
    let prompt_label = prompt.and_then(|p| pick_str(p, &["label", "id"]));
    let prompt_idx = o.get("promptIdx").and_then(Value::as_u64);
    let group = format!(
        "{} / prompt {}",
        provider.clone().unwrap_or_default(),
        prompt_idx.unwrap_or(0)
    );
    let response = o.get("response").and_then(Value::as_object);
    let output = response.and_then(|r| r.get("output")).cloned();
    let grading = o.get("gradingResult").and_then(Value::as_object);
    let success = o.get("success").and_then(Value::as_bool);
    // failureReason: 0 none, 1 assertion, 2 error.
    let failure_reason = o.get("failureReason").and_then(Value::as_u64);
    let error_text =
        pick_str(&o, &["error"]).or_else(|| response.and_then(|r| pick_str(r, &["error"])));
    let error = if failure_reason == Some(2) || (error_text.is_some() && output.is_none()) {
        Some((
            "error".to_string(),
            error_text
                .clone()
                .unwrap_or_else(|| "the provider failed".into()),
        ))
    } else {
        None
    };
    let mut reasons = Vec::new();
    if success == Some(false) && error.is_none() {
        if let Some(components) = grading
            .and_then(|g| g.get("componentResults"))
            .and_then(Value::as_array)
        {
            for c in components.iter().filter_map(Value::as_object) {
                if c.get("pass").and_then(Value::as_bool) == Some(false)
                    && let Some(r) = pick_str(c, &["reason"])
                {
                    reasons.push(r);
                }
            }
        }
        if reasons.is_empty()
            && let Some(r) = grading
                .and_then(|g| pick_str(g, &["reason"]))
                .or_else(|| error_text.clone())
        {
            reasons.push(r);
        }
    }
    let mut scores = Map::new();
    if let Some(s) = o.get("score") {
        scores.insert("score".into(), s.clone());
    }
    if let Some(n) = o
        .get("namedScores")
        .filter(|n| n.as_object().is_some_and(|m| !m.is_empty()))
    {
        scores.insert("named".into(), n.clone());
    }
    let vars = test
        .and_then(|t| t.get("vars"))
        .or_else(|| o.get("vars"))
        .filter(|v| v.is_object())
        .cloned();
    let expected = pick(meta, &["expected", "expected_output"])
        .or_else(|| {
            vars.as_ref()
                .and_then(|v| v.as_object())
                .and_then(|v| pick(v, &["expected", "expected_output"]))
        })
        .cloned()
        .or_else(|| expected_from_asserts(test));
    let mut r = Row {
        id,
        case_id: pick_str(meta, &["case_id", "caseId"]),
        base_id: pick_str(meta, &["base_id", "baseId", "variant_of", "variantOf"]),
        relation: pick_str(meta, &["relation", "expectation"]),
        transformation: pick_str(meta, &["transformation"]),
        family: pick_str(meta, &["family"]),
        allowed_changes: pick(meta, &["allowed_changes", "allowedChanges"]).cloned(),
        label: description,
        group,
        repetition: None,
        input: prompt.and_then(|p| pick(p, &["raw"])).map(as_text),
        vars,
        expected,
        output,
        passed: if error.is_some() { None } else { success },
        reasons,
        error,
        latency_ms: o.get("latencyMs").and_then(Value::as_f64),
        model_id: provider,
        settings_id: prompt_label,
        scores: (!scores.is_empty()).then_some(Value::Object(scores)),
        raw: Value::Null,
    };
    // The row itself becomes the origin: moved, not copied.
    r.raw = Value::Object(o);
    r
}

/// The expected answer from the first string-valued assertion, as
/// `{"type": ..., "value": ...}` when it is not an equality.
fn expected_from_asserts(test: Option<&Map<String, Value>>) -> Option<Value> {
    let asserts = test?.get("assert")?.as_array()?;
    let a = asserts
        .iter()
        .filter_map(Value::as_object)
        .find(|a| a.get("value").is_some())?;
    let kind = pick_str(a, &["type"]).unwrap_or_default();
    let value = a.get("value")?.clone();
    Some(if kind == "equals" {
        value
    } else {
        json!({"type": kind, "value": value})
    })
}
