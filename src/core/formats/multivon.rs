//! multivon-eval: variant validation records
//! (`multivon.variant-validation/v1`, one per line or one document) and case
//! manifests (`multivon.case-manifest/v1`).
//!
//! A validation record is a pair: `base` is the source, `candidate` the
//! variant, their inputs are diffed, the relation is the expectation; its
//! status is written as `validation_status`, so `invalid` stays an invalid
//! pair and `unknown` is its own validity whatever the diff shows. A
//! manifest's cases pair through the parent-case link of their robustness
//! metadata (`metadata.multivon_robustness.parent_case_id`). Eval reports
//! (`multivon.report/v2`) pair the same way, through the case snapshot each
//! result's trial records, and carry the model's output and verdict; a
//! skipped variant, or one with no output, has none.
//!
//! multivon's own rules (seed 004) are checked, and a record that breaks
//! one is a problem of the converted run: a digest that is not the SHA-256
//! of the record's [canonical JSON](canonical_json) (the record is then not
//! trusted as valid), base and variant without the same explicit source id
//! and distinct case ids, one base case under two case ids, and a variant
//! in another split than its base.

use serde_json::{Map, Value, json};

use super::stream::Top;
use super::{
    ConvertError, Format, Layout, Pairing, Row, Sink, Sniff, as_text, each_record,
    expectation_kind, pick, pick_str, records_layout, write_paired,
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

/// Read multivon records as a stream: JSON lines, a JSON array of records,
/// a document holding them in a member, or one document (a manifest or a
/// report). A validation record becomes its pair as soon as it is read;
/// the cases of manifests and reports are paired once all are read.
pub(super) fn convert(
    reader: &mut dyn std::io::BufRead,
    head: &str,
    sink: &mut Sink,
) -> Result<(), ConvertError> {
    let schema = |o: &Map<String, Value>| pick_str(o, &["schema"]).unwrap_or_default();
    let layout = records_layout(head, Format::Multivon);
    let mut validations = 0usize;
    let mut sources = Sources::default();
    let mut manifest_rows = Vec::new();
    // One record: a validation becomes its pair now; a manifest's or a
    // report's cases wait for pairing. `false`: not a multivon record.
    let mut take =
        |sc: &str, d: Map<String, Value>, sink: &mut Sink| -> Result<bool, ConvertError> {
            if sc.starts_with(VALIDATION) {
                validations += 1;
                let (rec, mut problems) = validation(d)?;
                problems.extend(sources.note_base(&rec, validations));
                sink.record_with_problems(rec, problems)?;
            } else if sc.starts_with(MANIFEST) {
                manifest_rows.extend(manifest(&d));
            } else if sc.starts_with(REPORT) {
                manifest_rows.extend(report(&d, sink));
            } else {
                return Ok(false);
            }
            Ok(true)
        };
    let top = each_record(reader, &layout, sink, &mut |_, d, sink| {
        let sc = schema(&d);
        if !take(&sc, d, sink)? {
            sink.warn(format!(
                "a record with schema {:?} is not a multivon validation or manifest; skipped",
                crate::core::text::inert_line(&sc)
            ));
        }
        Ok(())
    })?;
    if let Top::Object(d) = top
        && layout == Layout::Document(Vec::new())
    {
        // One document: the record itself.
        take(&schema(&d), d, sink)?;
    }
    if validations == 0 && manifest_rows.is_empty() {
        return Err(
            "expected multivon.variant-validation/v1 records, a multivon.case-manifest/v1 or a multivon.report/v2 with cases".into(),
        );
    }
    sink.report.rows = validations + manifest_rows.len();
    if !manifest_rows.is_empty() {
        check_parents(&mut manifest_rows);
        let mut pairing = Pairing::default();
        for r in manifest_rows {
            pairing.set_aside(&r, sink)?;
        }
        write_paired(pairing, Format::Multivon, sink)?;
    }
    Ok(())
}

/// What the records of one file say about each base case, to find the same
/// source under two case ids, and one case id naming two different cases.
#[derive(Default)]
struct Sources {
    /// A base's content digest → its case id and the record that first had it.
    by_content: std::collections::BTreeMap<String, (String, usize)>,
    /// A base case id → its content digest and the record that first had it.
    by_id: std::collections::BTreeMap<String, (String, usize)>,
}

impl Sources {
    /// Check the base of validation record `n` (1-based) against the earlier ones.
    fn note_base(&mut self, rec: &Value, n: usize) -> Vec<String> {
        let Some(base) = rec
            .get("origin")
            .and_then(|o| o.get("base"))
            .and_then(Value::as_object)
        else {
            return Vec::new();
        };
        let Some(id) = pick_str(base, &["case_id"]) else {
            return Vec::new();
        };
        let content = content_digest(base);
        let mut out = Vec::new();
        let shown = crate::core::text::inert_line(&id);
        match self.by_content.get(&content) {
            Some((other, first)) if *other != id => out.push(format!(
                "the base case {shown} has the same content as the base case {} of record {first}: one source under two case ids counts twice as independent (seed 004); give it one case id",
                crate::core::text::inert_line(other)
            )),
            Some(_) => {}
            None => {
                self.by_content.insert(content.clone(), (id.clone(), n));
            }
        }
        match self.by_id.get(&id) {
            Some((other, first)) if *other != content => out.push(format!(
                "the base case id {shown} names different content here than in record {first}: one case id, two cases (seed 004); give each case its own id"
            )),
            Some(_) => {}
            None => {
                self.by_id.insert(id, (content, n));
            }
        }
        out
    }
}

/// multivon's content identity of a case: the digest of the case without
/// its id and its reference output (`case_identity` in `case_manifest.py`).
fn content_digest(case: &Map<String, Value>) -> String {
    let mut c = case.clone();
    c.remove("case_id");
    c.remove("reference_output");
    digest(&Value::Object(c))
}

/// Problems of manifest and report rows: a variant whose source or case id
/// does not keep to its parent's (seed 004: the same explicit `source_id`,
/// distinct explicit case ids), or that sits in another split.
fn check_parents(rows: &mut [Row]) {
    let by_id: std::collections::BTreeMap<String, (Option<String>, Option<String>)> = rows
        .iter()
        .map(|r| (r.id.clone(), (r.case_id.clone(), r.split.clone())))
        .collect();
    for r in rows.iter_mut() {
        let Some(parent) = r.base_id.clone() else {
            continue;
        };
        let Some((source, split)) = by_id.get(&parent) else {
            continue;
        };
        let (id, parent_shown) = (
            crate::core::text::inert_line(&r.id),
            crate::core::text::inert_line(&parent),
        );
        if parent == r.id {
            r.problems.push(format!(
                "the variant {id} names itself as its parent; a variant and its base need distinct case ids (seed 004)"
            ));
        }
        if r.case_id.is_none() || source.is_none() || *source != r.case_id {
            r.problems.push(format!(
                "the variant {id} has source_id {} but its base {parent_shown} has {}; a variant keeps its base's explicit source_id (seed 004)",
                shown_opt(r.case_id.as_deref()),
                shown_opt(source.as_deref())
            ));
        }
        if let (Some(mine), Some(theirs)) = (&r.split, split)
            && mine != theirs
        {
            r.problems.push(format!(
                "the variant {id} is in split {} but its base {parent_shown} is in split {}; variants stay in their source's split (seed 004): move it back",
                crate::core::text::inert_line(mine),
                crate::core::text::inert_line(theirs)
            ));
        }
    }
}

fn shown_opt(s: Option<&str>) -> String {
    s.map_or_else(|| "(none)".to_string(), crate::core::text::inert_line)
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

/// A validation record as a pair, and the problems multivon's own rules
/// find with it (a digest that does not match, source or case ids that do
/// not keep to seed 004).
fn validation(v: Map<String, Value>) -> Result<(Value, Vec<String>), String> {
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
    let recorded = pick_str(&v, &["status"]).unwrap_or_else(|| "unknown".into());
    let mut problems = Vec::new();
    let digest_ok = match pick_str(&v, &["digest"]) {
        Some(claimed) => {
            let mut body = v.clone();
            body.remove("digest");
            let actual = digest(&Value::Object(body));
            if claimed.eq_ignore_ascii_case(&actual) {
                true
            } else {
                problems.push(format!(
                    "the record's digest {} is not the SHA-256 of its content ({actual}): it was changed after validation, so it is not trusted as valid (seed 004); validate the variant again",
                    crate::core::text::inert_line(&claimed)
                ));
                false
            }
        }
        None => {
            problems.push(
                "the record has no digest, so its content cannot be checked and it is not trusted as valid (seed 004); write it with multivon's validate_variant".to_string(),
            );
            false
        }
    };
    // A record whose content cannot be trusted is no evidence of validity;
    // an invalid one stays invalid.
    let status = if digest_ok || recorded == "invalid" {
        recorded.clone()
    } else {
        "unknown".to_string()
    };
    let relation = pick_str(&v, &["relation"]).unwrap_or_else(|| "invariant".into());
    let base_id = pick_str(base, &["case_id"]).unwrap_or_else(|| "base".into());
    let cand_id = pick_str(cand, &["case_id"]).unwrap_or_else(|| "candidate".into());
    let case_id = pick_str(base, &["source_id"]).unwrap_or_else(|| base_id.clone());
    let (base_source, cand_source) = (
        pick_str(base, &["source_id"]),
        pick_str(cand, &["source_id"]),
    );
    if base_source.is_none() || base_source != cand_source {
        problems.push(format!(
            "the base {} has source_id {} and the candidate {} has {}; both keep the same explicit source_id (seed 004)",
            crate::core::text::inert_line(&base_id),
            shown_opt(base_source.as_deref()),
            crate::core::text::inert_line(&cand_id),
            shown_opt(cand_source.as_deref())
        ));
    }
    if pick_str(base, &["case_id"]).is_none()
        || pick_str(cand, &["case_id"]).is_none()
        || base_id == cand_id
    {
        problems.push(format!(
            "the base and the candidate need distinct explicit case ids (seed 004); found {} and {}",
            crate::core::text::inert_line(&base_id),
            crate::core::text::inert_line(&cand_id)
        ));
    }
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
    if status != recorded {
        reasons.push(format!(
            "Recorded as {recorded}, but the digest does not match the record: not trusted as valid."
        ));
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
    Ok((Value::Object(r), problems))
}

/// The cases of a manifest as rows, paired through their parent-case link.
///
/// The manifest's digest covers the whole snapshot and each case's digest
/// its content: when one does not match, the rows it covers are not trusted
/// as valid (`validation_status: unknown`) and carry a problem.
fn manifest(m: &Map<String, Value>) -> Vec<Row> {
    let cases = m.get("cases").and_then(Value::as_array);
    let name = pick_str(m, &["name"]);
    let shown_name = shown_opt(name.as_deref());
    let whole = match pick_str(m, &["digest"]) {
        Some(claimed) => {
            let mut body = m.clone();
            body.remove("digest");
            let actual = digest(&Value::Object(body));
            (!claimed.eq_ignore_ascii_case(&actual)).then(|| format!(
                "the digest of manifest {shown_name} is not the SHA-256 of its content ({actual}): the manifest was changed after export, so its pairs are not trusted as valid (seed 004); export it again"
            ))
        }
        None => Some(format!(
            "manifest {shown_name} has no digest, so its content cannot be checked and its pairs are not trusted as valid (seed 004)"
        )),
    };
    let mut split_of: std::collections::BTreeMap<String, String> = Default::default();
    if let Some(splits) = m.get("splits").and_then(Value::as_object) {
        for (split, ids) in splits {
            for id in ids.as_array().into_iter().flatten() {
                split_of.insert(as_text(id), split.clone());
            }
        }
    }
    let mut told = false;
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
            let mut problems = Vec::new();
            // The manifest's own fault is told once, with its first case.
            if let Some(w) = &whole
                && !std::mem::replace(&mut told, true)
            {
                problems.push(w.clone());
            }
            if let Some(claimed) = pick_str(entry.as_object()?, &["digest"]) {
                let actual = content_digest(c);
                if !claimed.eq_ignore_ascii_case(&actual) {
                    problems.push(format!(
                        "the digest of case {} is not the SHA-256 of its content ({actual}): the case was changed after export, so it is not trusted as valid (seed 004)",
                        crate::core::text::inert_line(&id)
                    ));
                }
            }
            let trusted = whole.is_none() && problems.is_empty();
            let allowed = validated_changes(rob);
            Some(Row {
                id: id.clone(),
                case_id: pick_str(c, &["source_id"]),
                base_id: rob.and_then(|r| pick_str(r, &["parent_case_id"])),
                relation: rob.and_then(|r| pick_str(r, &["relation"])),
                validation_status: (!trusted && allowed.is_some()).then(|| "unknown".to_string()),
                allowed_changes: allowed,
                label: name.clone(),
                input: case_input(c),
                vars: Some(case_state(c, c.get("expected_output"))),
                expected: c.get("expected_output").filter(|e| !e.is_null()).cloned(),
                split: split_of.get(&id).cloned(),
                problems,
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
        let output = c.get("output").filter(|o| !o.is_null()).cloned();
        // A skipped case, or one with no output, has no verdict: it is not
        // a pass (seed 004: no skipped or error verdict becomes a score).
        let passed = match status.as_str() {
            "skipped" => None,
            _ if output.is_none() && error.is_none() => None,
            "passed" => Some(true),
            "" => c.get("passed").and_then(Value::as_bool),
            _ => Some(false),
        };
        if status == "skipped" {
            reasons.push("skipped: no verdict".to_string());
        } else if output.is_none() && error.is_none() {
            reasons.push(format!(
                "no output, so no verdict (recorded status {})",
                if status.is_empty() { "none" } else { &status }
            ));
        }
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
            output,
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

/// multivon's digest: the SHA-256, in lowercase hex, of [`canonical_json`].
pub fn digest(v: &Value) -> String {
    use sha2::{Digest, Sha256};
    let mut text = String::new();
    canonical_json(v, &mut text);
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The canonical JSON multivon hashes, byte for byte as Python writes it
/// with `json.dumps(value, sort_keys=True, separators=(",", ":"),
/// ensure_ascii=False, allow_nan=False)` (`canonical_json` in
/// `multivon_eval/case_manifest.py`): keys sorted by code point, no
/// spaces, text left unescaped but for `"`, `\` and control characters,
/// floats as Python's `repr` writes them (`1e-05`, `1e+16`, `0.1`, `2.0`).
pub fn canonical_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => out.push_str(&u.to_string()),
            (_, Some(i), _) => out.push_str(&i.to_string()),
            (_, _, Some(f)) => out.push_str(&python_float(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => python_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // UTF-8 byte order is code point order, which Python sorts by.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                python_string(k, out);
                out.push(':');
                canonical_json(&map[k.as_str()], out);
            }
            out.push('}');
        }
    }
}

/// A JSON string as Python's encoder writes it with `ensure_ascii=False`.
fn python_string(s: &str, out: &mut String) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A float as Python's `repr` writes it: the shortest digits that read back
/// the same, in positional notation when the decimal exponent is from -4
/// to 15 (with at least one decimal, `2.0`), else as `1.5e+16`, `1e-05`.
fn python_float(x: f64) -> String {
    if !x.is_finite() {
        // Not JSON, and multivon refuses it (allow_nan=False).
        return x.to_string();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    // Rust's `{:e}` writes the shortest round-trip digits: "1.2345e-5".
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    // The decimal point sits after `point` digits: x = 0.DIGITS × 10^point.
    let point = exp + 1;
    if !(-3..=16).contains(&point) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.abs());
    }
    let n = digits.len() as i32;
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else if point < n {
        let (a, b) = digits.split_at(point as usize);
        format!("{a}.{b}")
    } else {
        format!("{digits}{}.0", "0".repeat((point - n) as usize))
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::derive::{Status, Validity, ValidityCode, derive};
    use crate::core::record::map_record;

    #[test]
    fn floats_are_written_as_python_repr_writes_them() {
        // Each right-hand side is Python 3.11's repr() of the same float.
        for (x, py) in [
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (1.0, "1.0"),
            (2.5, "2.5"),
            (0.1, "0.1"),
            (1e22, "1e+22"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (12345.678, "12345.678"),
            (9999999999999998.0, "9999999999999998.0"),
            (-123456789.125, "-123456789.125"),
        ] {
            assert_eq!(python_float(x), py, "{x:e}");
        }
    }

    #[test]
    fn canonical_json_matches_pythons_bytes() {
        // json.dumps({'b':1,'a':'é\u2028\x7f\x01"\\','A':[1.0,2,-3,None,True]},
        //   sort_keys=True, separators=(',',':'), ensure_ascii=False)
        let v =
            json!({"b": 1, "a": "é\u{2028}\u{7f}\u{1}\"\\\n\u{8}", "A": [1.0, 2, -3, null, true]});
        let mut out = String::new();
        canonical_json(&v, &mut out);
        assert_eq!(
            out,
            "{\"A\":[1.0,2,-3,null,true],\"a\":\"é\u{2028}\u{7f}\\u0001\\\"\\\\\\n\\b\",\"b\":1}"
        );
    }

    /// A validation record as multivon writes it, with a digest made here.
    fn record(status: &str, base_input: &str, cand_input: &str) -> Map<String, Value> {
        let case = |id: &str, input: &str| {
            json!({"case_id": id, "source_id": "s-1", "input": input,
                "expected_output": "5", "metadata": {}})
        };
        let mut v = json!({
            "schema": "multivon.variant-validation/v1",
            "relation": "invariant",
            "contract": "c/v1",
            "base": case("s:base", base_input),
            "candidate": case("s:variant", cand_input),
            "status": status,
            "issues": [],
            "verdict": {"reason": "checked", "base_expected": "5", "variant_expected": "5"},
        });
        let d = digest(&v);
        v["digest"] = json!(d);
        match v {
            Value::Object(o) => o,
            _ => unreachable!(),
        }
    }

    fn derived(rec: &Value) -> crate::core::derive::Derived {
        derive(&map_record(rec.clone()).expect("record"))
    }

    #[test]
    fn an_invalid_validation_stays_invalid_with_unchanged_inputs() {
        let (rec, problems) = validation(record("invalid", "2 + 3", "2 + 3")).expect("pair");
        assert!(problems.is_empty(), "{problems:?}");
        let d = derived(&rec);
        assert_eq!(d.validity, Validity::Invalid { unexpected: vec![] });
        assert_eq!(d.status, Status::Invalid);
        assert!(
            d.why.contains("validator recorded the variant as invalid"),
            "{}",
            d.why
        );
    }

    #[test]
    fn an_unknown_validation_is_its_own_validity() {
        for (input, changes) in [("2 + 3", false), ("2  + 3", true)] {
            let (rec, _) = validation(record("unknown", "2 + 3", input)).expect("pair");
            let d = derived(&rec);
            assert_eq!(d.validity, Validity::Unknown, "changed: {changes}");
            assert_eq!(d.validity.code(), ValidityCode::Unknown);
            assert_eq!(d.status, Status::Unchecked);
        }
        // A valid one is judged from the diff as before.
        let (rec, _) = validation(record("valid", "2 + 3", "2  + 3")).expect("pair");
        assert_eq!(derived(&rec).validity, Validity::Valid);
    }

    #[test]
    fn a_digest_that_does_not_match_is_a_problem_and_not_valid() {
        let mut v = record("valid", "2 + 3", "2  + 3");
        v["candidate"]["input"] = json!("2 + 30");
        let (rec, problems) = validation(v).expect("pair");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("not the SHA-256 of its content"),
            "{problems:?}"
        );
        assert_eq!(rec["validation_status"], "unknown");
        assert_eq!(derived(&rec).validity, Validity::Unknown);
        // An invalid record stays invalid, digest or not.
        let mut v = record("invalid", "2 + 3", "2 + 3");
        v.remove("digest");
        let (rec, problems) = validation(v).expect("pair");
        assert!(problems[0].contains("has no digest"), "{problems:?}");
        assert_eq!(derived(&rec).status, Status::Invalid);
    }

    #[test]
    fn source_and_case_ids_keep_to_the_seed() {
        let mut v = record("valid", "2 + 3", "2  + 3");
        v["candidate"]["source_id"] = json!("s-2");
        v["candidate"]["case_id"] = json!("s:base");
        let d = digest(&Value::Object({
            let mut b = v.clone();
            b.remove("digest");
            b
        }));
        v["digest"] = json!(d);
        let (_, problems) = validation(v).expect("pair");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains("same explicit source_id"),
            "{problems:?}"
        );
        assert!(
            problems[1].contains("distinct explicit case ids"),
            "{problems:?}"
        );
    }
}
