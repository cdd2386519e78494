//! Inspect AI: an eval log in Inspect's JSON log format (`--log-format json`).
//!
//! Samples pair through their metadata, as promptfoo rows do:
//! `metadata.case_id`, `metadata.variant_id` (or the sample id),
//! `metadata.base_id` and `metadata.relation`. A base and its variant pair
//! within the same epoch; the epoch becomes the repetition (epoch 1 is
//! repetition 0). `.eval` archives (a zip of `header.json` and one
//! `samples/*.json` per sample, zstd-compressed) are unpacked into the same
//! log shape first.

use serde_json::{Map, Value, json};

use super::{ConvertError, Format, Row, Sink, Sniff, as_text, pick, pick_str, write_paired};

pub(super) fn sniff(s: &Sniff) -> Result<(), String> {
    if s.zip {
        // Member names are plain text in the local headers.
        return if ["_journal/start.json", "header.json", "samples/"]
            .iter()
            .any(|n| s.text.contains(n))
        {
            Ok(())
        } else {
            Err(
                "a zip archive that is not an Inspect .eval log (no header.json or samples/)"
                    .into(),
            )
        };
    }
    if let Some(Value::Object(o)) = &s.document {
        return if is_log(o) {
            Ok(())
        } else {
            Err("the JSON document has no eval.task and samples".into())
        };
    }
    if s.starts_document() && s.has_key("eval") && s.has_key("task") && s.has_key("status") {
        return Ok(());
    }
    Err(format!(
        "needs an Inspect JSON log (version, status, eval, samples); found {}",
        s.describe()
    ))
}

fn is_log(o: &Map<String, Value>) -> bool {
    o.get("eval")
        .and_then(Value::as_object)
        .is_some_and(|e| e.contains_key("task"))
        && (o.contains_key("samples") || o.contains_key("status"))
}

pub(super) fn convert(text: &str, sink: &mut Sink) -> Result<(), ConvertError> {
    let doc: Value = serde_json::from_str(text.trim_start())
        .map_err(|e| format!("not a JSON document ({e}); expected an Inspect JSON log"))?;
    let Value::Object(log) = doc else {
        return Err("expected an Inspect JSON log (an object with eval and samples)".into());
    };
    convert_log(log, sink)
}

/// The most one member of an `.eval` archive may unpack to.
const MAX_MEMBER_BYTES: u64 = 1 << 30;

/// Whether bytes start like a zip archive (an `.eval` log).
pub(super) fn is_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04")
}

/// Convert an `.eval` archive: `header.json` is the log without its
/// samples, each `samples/*.json` one sample. They are put together in the
/// JSON log's order (by epoch, then id) and converted like a JSON log.
pub(super) fn convert_archive(bytes: &[u8], sink: &mut Sink) -> Result<(), ConvertError> {
    let bad = |e: zip::result::ZipError| format!("not a readable .eval archive ({e})");
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(bad)?;
    let mut header: Option<Map<String, Value>> = None;
    let mut samples: Vec<Value> = Vec::new();
    for i in 0..zip.len() {
        let mut member = zip.by_index_raw(i).map_err(bad)?;
        let name = member.name().to_string();
        let is_sample = name.starts_with("samples/") && name.ends_with(".json");
        if name != "header.json" && !is_sample {
            continue;
        }
        let shown = crate::core::text::inert_line(&name);
        let method = member.compression();
        let data = unpack(&mut member, method)
            .map_err(|e| format!("cannot unpack {shown} from the .eval archive: {e}"))?;
        let v: Value = serde_json::from_slice(&data)
            .map_err(|e| format!("{shown} in the .eval archive is not JSON ({e})"))?;
        if is_sample {
            samples.push(v);
        } else if let Value::Object(o) = v {
            header = Some(o);
        }
    }
    let mut log = header.ok_or("the .eval archive has no header.json; is it an Inspect log?")?;
    samples.sort_by(|a, b| {
        let epoch = |v: &Value| v.get("epoch").and_then(Value::as_u64).unwrap_or(0);
        let id = |v: &Value| v.get("id").map(as_text).unwrap_or_default();
        epoch(a).cmp(&epoch(b)).then_with(|| id(a).cmp(&id(b)))
    });
    if !samples.is_empty() {
        log.insert("samples".into(), Value::Array(samples));
    }
    convert_log(log, sink)
}

/// One member's bytes: stored, deflated or zstd-compressed (what Inspect writes).
fn unpack(
    member: &mut dyn std::io::Read,
    method: zip::CompressionMethod,
) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let reader: Box<dyn Read + '_> = if method == zip::CompressionMethod::Stored {
        Box::new(member)
    } else if method == zip::CompressionMethod::DEFLATE {
        Box::new(flate2::read::DeflateDecoder::new(member))
    } else if method == zip::CompressionMethod::ZSTD {
        Box::new(
            ruzstd::decoding::StreamingDecoder::new(member)
                .map_err(|e| format!("not zstd data ({e})"))?,
        )
    } else {
        return Err(format!("compression method {method} is not supported"));
    };
    let mut out = Vec::new();
    reader
        .take(MAX_MEMBER_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    if out.len() as u64 > MAX_MEMBER_BYTES {
        return Err("it unpacks to more than 1 GiB".into());
    }
    Ok(out)
}

fn convert_log(log: Map<String, Value>, sink: &mut Sink) -> Result<(), ConvertError> {
    if !is_log(&log) {
        return Err("expected an Inspect JSON log: no eval.task".into());
    }
    let eval = log.get("eval").and_then(Value::as_object);
    let model = eval.and_then(|e| pick_str(e, &["model"]));
    let task = eval.and_then(|e| pick_str(e, &["task"]));
    let settings = eval
        .and_then(|e| e.get("model_generate_config"))
        .filter(|c| c.as_object().is_some_and(|m| !m.is_empty()))
        .map(|c| c.to_string());
    if let Some(st) = log.get("status").and_then(Value::as_str)
        && st != "success"
    {
        sink.warn(format!("the eval's status is {st}, not success"));
    }
    let samples = match log.get("samples") {
        Some(Value::Array(a)) => a,
        _ => {
            return Err(
                "the log has no samples (written with --no-log-samples?); nothing to triage".into(),
            );
        }
    };
    sink.report.rows = samples.len();
    let rows = samples
        .iter()
        .filter_map(Value::as_object)
        .map(|s| row(s, model.clone(), settings.clone(), task.as_deref()))
        .collect();
    write_paired(rows, Format::Inspect, sink)
}

fn row(
    s: &Map<String, Value>,
    model: Option<String>,
    settings: Option<String>,
    task: Option<&str>,
) -> Row {
    let empty = Map::new();
    let meta = s
        .get("metadata")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let sample_id = pick_str(s, &["id"]).unwrap_or_else(|| "sample".into());
    let epoch = s.get("epoch").and_then(Value::as_u64).unwrap_or(1);
    let output = s.get("output").and_then(Value::as_object);
    let completion = output.and_then(|o| {
        pick_str(o, &["completion"])
            .filter(|c| !c.is_empty())
            .or_else(|| {
                o.get("choices")?
                    .as_array()?
                    .first()?
                    .get("message")?
                    .get("content")
                    .map(content_text)
            })
    });
    let error = s
        .get("error")
        .filter(|e| !e.is_null())
        .map(|e| match e {
            Value::Object(o) => pick_str(o, &["message"]).unwrap_or_else(|| e.to_string()),
            other => as_text(other),
        })
        .map(|m| ("error".to_string(), m));
    let (passed, reasons, scores) = verdict(s.get("scores"));
    Row {
        id: pick_str(meta, &["variant_id", "variantId"]).unwrap_or_else(|| sample_id.clone()),
        case_id: pick_str(meta, &["case_id", "caseId"]),
        base_id: pick_str(meta, &["base_id", "baseId", "variant_of", "variantOf"]),
        relation: pick_str(meta, &["relation", "expectation"]),
        transformation: pick_str(meta, &["transformation"]),
        family: pick_str(meta, &["family"]),
        allowed_changes: pick(meta, &["allowed_changes", "allowedChanges"]).cloned(),
        label: task.map(|t| format!("{t} sample {sample_id}")),
        group: format!("epoch {epoch}"),
        repetition: Some(epoch.saturating_sub(1)),
        input: s.get("input").map(input_text),
        vars: None,
        expected: s.get("target").cloned(),
        output: completion.map(Value::String),
        passed: if error.is_some() { None } else { passed },
        reasons,
        error,
        latency_ms: s
            .get("total_time")
            .and_then(Value::as_f64)
            .map(|t| (t * 1000.0).round()),
        model_id: output.and_then(|o| pick_str(o, &["model"])).or(model),
        settings_id: settings,
        scores,
        raw: Value::Object(s.clone()),
        ..Row::default()
    }
}

/// Text of a message content: a string, or a list of content parts.
fn content_text(c: &Value) -> String {
    match c {
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        other => as_text(other),
    }
}

/// A sample input: a string, or chat messages written `role: content`.
fn input_text(v: &Value) -> String {
    match v {
        Value::Array(msgs) => msgs
            .iter()
            .map(|m| {
                let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
                let content = m.get("content").map(content_text).unwrap_or_default();
                format!("{role}: {content}")
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => as_text(other),
    }
}

/// Pass when every scorer's value counts as correct: `C`, `true`, `yes` or
/// a number ≥ 1. `I`, `P` (partial), `N` (no answer), `false` and numbers
/// below 1 fail. No scores: no verdict.
fn verdict(scores: Option<&Value>) -> (Option<bool>, Vec<String>, Option<Value>) {
    let Some(Value::Object(scores)) = scores else {
        return (None, Vec::new(), None);
    };
    if scores.is_empty() {
        return (None, Vec::new(), None);
    }
    let mut all = true;
    let mut reasons = Vec::new();
    let mut kept = Map::new();
    for (name, sc) in scores {
        let value = sc.get("value").cloned().unwrap_or(Value::Null);
        let ok = score_passes(&value);
        if !ok {
            all = false;
            let answer = sc
                .get("answer")
                .filter(|a| !a.is_null())
                .map(as_text)
                .unwrap_or_default();
            let mut r = format!("Scorer {name} gave {}", as_text(&value));
            if !answer.is_empty() {
                r.push_str(&format!(" for the answer {answer:?}"));
            }
            if let Some(e) = sc.get("explanation").and_then(Value::as_str)
                && !e.is_empty()
                && e != answer
            {
                r.push_str(&format!(": {e}"));
            }
            r.push('.');
            reasons.push(r);
        }
        kept.insert(name.clone(), json!({"value": value}));
    }
    (Some(all), reasons, Some(Value::Object(kept)))
}

fn score_passes(v: &Value) -> bool {
    match v {
        Value::String(s) => matches!(
            s.to_ascii_lowercase().as_str(),
            "c" | "correct" | "true" | "yes" | "pass"
        ),
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x >= 1.0),
        Value::Object(m) => !m.is_empty() && m.values().all(score_passes),
        _ => false,
    }
}
