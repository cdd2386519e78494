//! Inspect AI: an eval log in Inspect's JSON log format (`--log-format
//! json`), or its `.eval` archive (a zip of `header.json` and one
//! `samples/*.json` per sample, zstd-compressed), unpacked into the same log
//! shape first.
//!
//! A sample's verdict is the value of its verdict scorer: the first scorer
//! whose values are verdicts (`C`/`I`, correct/incorrect, true/false, 1/0),
//! in the order Inspect lists them, or the one `--scorer NAME` names. Every
//! other scorer's value (a float such as `confidence_on_target`) is kept
//! beside the pair as a metric. The verdict scorer's parsed answer is the
//! side's decision.
//!
//! Samples pair through their metadata: `base_id` names the sample this one
//! is a variant of, `variant`/`transformation` what was done, `group`/
//! `family` the kind of change, `relation` the expectation. A base and its
//! variant pair within the same epoch; the epoch becomes the repetition
//! (epoch 1 is repetition 0). A log without samples is refused.

use serde_json::{Map, Value, json};

use super::stream::Spilled;
use super::stream::Top;
use super::{
    ConvertError, ConvertOptions, Format, Pairing, Row, Sink, Sniff, as_text, pick, pick_id,
    pick_str, write_paired,
};
use crate::core::text::inert_line;

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

/// Read an Inspect JSON log as a stream: each sample is set aside as it
/// is read, then converted once the verdict scorer is known.
pub(super) fn convert(
    reader: &mut dyn std::io::BufRead,
    opts: &ConvertOptions,
    sink: &mut Sink,
) -> Result<(), ConvertError> {
    let mut samples = Samples::default();
    let top = super::stream::each_element(reader, &["samples"], &mut |v| samples.add(v, sink))
        .map_err(|e| match e {
            ConvertError::Content(why) => {
                ConvertError::Content(format!("{why}; expected an Inspect JSON log"))
            }
            other => other,
        })?;
    let Top::Object(log) = top else {
        return Err("expected an Inspect JSON log (an object with eval and samples)".into());
    };
    convert_log(log, samples, opts, sink)
}

/// Where a sample sorts among the others: its place in a JSON log, or its
/// epoch and id in an `.eval` archive (whose members come in any order):
/// integer ids by their value, as Inspect orders them (2 before 11), then
/// any others by their text.
type Place = (u64, u64, String);

/// A log's samples, set aside as they are read, with what choosing the
/// verdict scorer and ordering them reads.
#[derive(Default)]
struct Samples {
    /// Each sample object's place and where it was set aside.
    at: Vec<(Place, Spilled)>,
    /// Every element of `samples`, objects or not.
    total: usize,
    /// What the samples' scores hold, by scorer.
    seen: Vec<Seen>,
    /// Whether places are epochs and ids (an archive) rather than the order read.
    by_id: bool,
}

/// What the samples hold of one scorer.
struct Seen {
    name: String,
    /// The first place (and the key's position in that sample) it was met.
    first: (Place, usize),
    /// Whether it gave any value, and whether every value was a verdict.
    any: bool,
    verdicts: bool,
    /// The first value that is not a verdict, and its place.
    example: Option<(Place, String)>,
}

impl Samples {
    /// Set a sample aside and note its scores.
    fn add(&mut self, v: Value, sink: &mut Sink) -> Result<(), ConvertError> {
        self.total += 1;
        let Value::Object(o) = v else { return Ok(()) };
        let place: Place = if self.by_id {
            let epoch = o.get("epoch").and_then(Value::as_u64).unwrap_or(0);
            match o.get("id") {
                Some(Value::Number(n)) if n.is_u64() => {
                    (epoch, n.as_u64().unwrap_or(0), String::new())
                }
                id => (epoch, u64::MAX, id.map(as_text).unwrap_or_default()),
            }
        } else {
            (self.total as u64, 0, String::new())
        };
        if let Some(Value::Object(sc)) = o.get("scores") {
            for (pos, (name, score)) in sc.iter().enumerate() {
                let at = match self.seen.iter().position(|s| s.name == *name) {
                    Some(k) => k,
                    None => {
                        self.seen.push(Seen {
                            name: name.clone(),
                            first: (place.clone(), pos),
                            any: false,
                            verdicts: true,
                            example: None,
                        });
                        self.seen.len() - 1
                    }
                };
                let seen = &mut self.seen[at];
                if (&place, pos) < (&seen.first.0, seen.first.1) {
                    seen.first = (place.clone(), pos);
                }
                if let Some(v) = score.get("value").filter(|v| !v.is_null()) {
                    seen.any = true;
                    if verdict_of(v).is_none() {
                        seen.verdicts = false;
                        if seen.example.as_ref().is_none_or(|(p, _)| place < *p) {
                            // (On one line: a structured value compactly.)
                            let text = match v {
                                Value::String(t) => t.clone(),
                                other => other.to_string(),
                            };
                            seen.example = Some((place.clone(), inert_line(&text)));
                        }
                    }
                }
            }
        }
        let at = sink.put(&o)?;
        self.at.push((place, at));
        Ok(())
    }
}

/// The most one member of an `.eval` archive may unpack to.
const MAX_MEMBER_BYTES: u64 = 1 << 30;

/// The member an `.eval` archive holds from its start: the eval and its plan.
const START: &str = "_journal/start.json";

/// Whether bytes start like a zip archive (an `.eval` log).
pub(super) fn is_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04")
}

/// Convert an `.eval` archive: `header.json` is the log without its
/// samples, each `samples/*.json` one sample. They are put together in the
/// JSON log's order (by epoch, then id) and converted like a JSON log.
pub(super) fn convert_archive(
    archive: impl std::io::Read + std::io::Seek,
    opts: &ConvertOptions,
    sink: &mut Sink,
) -> Result<(), ConvertError> {
    let bad = |e: zip::result::ZipError| format!("not a readable .eval archive ({e})");
    let mut zip = zip::ZipArchive::new(archive).map_err(bad)?;
    let mut header: Option<Map<String, Value>> = None;
    // An eval still running (or stopped short) has no header yet: what it
    // started with (`_journal/start.json`: the eval and its plan) stands in.
    let mut start: Option<Map<String, Value>> = None;
    let mut samples = Samples {
        by_id: true,
        ..Samples::default()
    };
    for i in 0..zip.len() {
        let mut member = zip.by_index_raw(i).map_err(bad)?;
        let name = member.name().map_err(bad)?.to_string();
        let is_sample = name.starts_with("samples/") && name.ends_with(".json");
        if name != "header.json" && name != START && !is_sample {
            continue;
        }
        let shown = crate::core::text::inert_line(&name);
        if let Some(p) = &opts.progress {
            p.0.fetch_add(
                member.compressed_size(),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        let method = member.compression();
        let data = unpack(&mut member, method)
            .map_err(|e| format!("cannot unpack {shown} from the .eval archive: {e}"))?;
        let v: Value = serde_json::from_slice(&data)
            .map_err(|e| format!("{shown} in the .eval archive is not JSON ({e})"))?;
        match v {
            v if is_sample => samples.add(v, sink)?,
            Value::Object(o) if name == START => start = Some(o),
            Value::Object(o) => header = Some(o),
            _ => {}
        }
    }
    let mut log = match (header, start) {
        (Some(header), _) => header,
        (None, Some(mut start)) => {
            // As Inspect reads such a log: its status is "started".
            start.insert("status".into(), Value::from("started"));
            start
        }
        (None, None) => {
            return Err(
                "the .eval archive has neither header.json nor _journal/start.json; is it an Inspect log?"
                    .into(),
            );
        }
    };
    log.remove("samples");
    samples.at.sort_by(|(a, _), (b, _)| a.cmp(b));
    convert_log(log, samples, opts, sink)
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

fn convert_log(
    log: Map<String, Value>,
    samples: Samples,
    opts: &ConvertOptions,
    sink: &mut Sink,
) -> Result<(), ConvertError> {
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
    if samples.total == 0 {
        return Err(ConvertError::Refused(no_samples(&log)));
    }
    sink.report.rows = samples.total;
    let scorers =
        Scorers::of(&log, &samples.seen, opts.scorer.as_deref()).map_err(ConvertError::Refused)?;
    if let Some(w) = scorers.note() {
        sink.warn(w);
    }
    let mut pairing = Pairing::default();
    for (_, at) in samples.at {
        let s: Map<String, Value> = sink.get(at)?;
        let r = row(
            &s,
            &scorers,
            model.clone(),
            settings.clone(),
            task.as_deref(),
        );
        drop(s);
        pairing.set_aside(&r, sink)?;
    }
    write_paired(pairing, Format::Inspect, sink)
}

/// Why a log without samples cannot be read, with what it does hold.
fn no_samples(log: &Map<String, Value>) -> String {
    let results = log.get("results").and_then(Value::as_object);
    let total = results
        .and_then(|r| r.get("total_samples"))
        .and_then(Value::as_u64);
    let metrics: Vec<String> = results
        .and_then(|r| r.get("scores"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|sc| {
            let name = sc.get("name").and_then(Value::as_str)?;
            let (metric, m) = sc.get("metrics")?.as_object()?.iter().next()?;
            let value = m.get("value").and_then(Value::as_f64)?;
            Some(format!(
                "{name} {metric} {}",
                (value * 1000.0).round() / 1000.0
            ))
        })
        .collect();
    let mut held = String::new();
    if let Some(n) = total {
        held.push_str(&format!("{n} samples were run"));
    }
    if !metrics.is_empty() {
        held.push_str(if held.is_empty() { "" } else { ": " });
        held.push_str(&metrics.join(", "));
    }
    let without = log
        .get("eval")
        .and_then(|e| e.get("config"))
        .and_then(|c| c.get("log_samples"))
        == Some(&Value::Bool(false));
    let why = if without {
        "it was written with --no-log-samples"
    } else {
        "it holds no samples"
    };
    let held = if held.is_empty() {
        String::new()
    } else {
        format!(" (only the summary: {})", inert_line(&held))
    };
    format!(
        "this Inspect log has no samples to pair: {why}{held}; re-run the eval with samples logged (the default) and open that log"
    )
}

/// The log's scorers, in Inspect's order, and the one whose value is a
/// sample's verdict.
#[derive(Debug)]
struct Scorers {
    /// Every scorer's name, in the order Inspect lists them.
    names: Vec<String>,
    /// The verdict scorer, when one gives verdicts.
    verdict: Option<String>,
    /// Scorers whose values are verdicts (`C`/`I`, true/false, 1/0, ...).
    verdicts: Vec<String>,
    /// Whether the verdict scorer was named by `--scorer`.
    chosen: bool,
}

impl Scorers {
    /// Inspect's order is the task's: `eval.scorers`, then `results.scores`,
    /// then any other name a sample's scores hold. The verdict scorer is
    /// the one `--scorer` names, else the first that gives verdicts.
    fn of(
        log: &Map<String, Value>,
        seen: &[Seen],
        wanted: Option<&str>,
    ) -> Result<Scorers, String> {
        let mut names: Vec<String> = Vec::new();
        let mut add = |n: &str| {
            if !names.iter().any(|m| m == n) {
                names.push(n.to_string());
            }
        };
        let listed = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|s| s.get("name").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        };
        let eval = log.get("eval");
        for n in listed(eval.and_then(|e| e.get("scorers"))) {
            add(&n);
        }
        for n in listed(log.get("results").and_then(|r| r.get("scores"))) {
            add(&n);
        }
        let mut met: Vec<&Seen> = seen.iter().collect();
        met.sort_by(|a, b| a.first.cmp(&b.first));
        for s in &met {
            add(&s.name);
        }
        let of = |n: &str| seen.iter().find(|s| s.name == n);
        // A scorer gives verdicts when every value it gave is one.
        let verdicts: Vec<String> = names
            .iter()
            .filter(|n| of(n).is_some_and(|s| s.any && s.verdicts))
            .cloned()
            .collect();
        let shown = |list: &[String]| {
            list.iter()
                .map(|n| inert_line(n))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let verdict = match wanted {
            None => verdicts.first().cloned(),
            Some(w) if verdicts.iter().any(|n| n == w) => Some(w.to_string()),
            Some(w) if names.iter().any(|n| n == w) => {
                let example = of(w)
                    .and_then(|s| s.example.as_ref())
                    .map(|(_, e)| e.clone())
                    .unwrap_or_default();
                let others = if verdicts.is_empty() {
                    "no scorer of this log gives verdicts".to_string()
                } else {
                    format!("scorers that give verdicts: {}", shown(&verdicts))
                };
                return Err(format!(
                    "scorer {} gives values such as {example}, not verdicts (C/I, correct/incorrect, true/false, 1/0); {others}",
                    inert_line(w)
                ));
            }
            Some(w) => {
                return Err(format!(
                    "no scorer named {} in this Inspect log; its scorers: {}",
                    inert_line(w),
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        shown(&names)
                    }
                ));
            }
        };
        Ok(Scorers {
            names,
            verdict,
            verdicts,
            chosen: wanted.is_some(),
        })
    }

    /// A note for the reader: which scorer gives the verdicts and why.
    fn note(&self) -> Option<String> {
        let shown = |list: &[String]| {
            list.iter()
                .map(|n| inert_line(n))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match &self.verdict {
            None if !self.names.is_empty() => Some(format!(
                "no scorer gives verdicts (C/I, correct/incorrect, true/false, 1/0), so no pair is checked; the scores ({}) are shown beside each pair",
                shown(&self.names)
            )),
            Some(v) if !self.chosen && (self.verdicts.len() > 1 || self.names[0] != *v) => {
                let others: Vec<String> =
                    self.verdicts.iter().filter(|n| *n != v).cloned().collect();
                let first = if self.names[0] == *v {
                    "the first scorer".to_string()
                } else {
                    format!(
                        "the first scorer that gives verdicts ({} gives other values)",
                        inert_line(&self.names[0])
                    )
                };
                let mut note = format!("verdicts come from scorer {}, {first}", inert_line(v));
                if !others.is_empty() {
                    note.push_str(&format!(
                        "; --scorer {} reads another's",
                        others
                            .iter()
                            .map(|n| inert_line(n))
                            .collect::<Vec<_>>()
                            .join(" or --scorer ")
                    ));
                }
                Some(note)
            }
            _ => None,
        }
    }
}

fn row(
    s: &Map<String, Value>,
    scorers: &Scorers,
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
    let scores = s.get("scores").and_then(Value::as_object);
    let judged = verdict(scores, scorers, completion.as_deref());
    // The metadata names words for what a variant is; a flag is not one.
    let word = |names: &[&str]| {
        pick(meta, names).and_then(|v| match v {
            Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
            _ => None,
        })
    };
    let mut side_extra = Map::new();
    // The model's parsed answer is its decision; a pass/fail verdict is not.
    side_extra.insert(
        "decision".into(),
        judged
            .answer
            .as_ref()
            .filter(|a| !a.contains('\n') && a.chars().count() <= 80)
            .map_or(Value::Null, |a| json!(a)),
    );
    if let Some(a) = &judged.answer {
        side_extra.insert("answer".into(), json!(a));
    }
    // The side's own verdict, and the scorer it came from.
    if let (Some(p), None) = (judged.passed, &error) {
        side_extra.insert("verdict".into(), json!(if p { "pass" } else { "fail" }));
    }
    if let Some(v) = &scorers.verdict {
        side_extra.insert("verdict_scorer".into(), json!(v));
    }
    Row {
        // Ids may be numbers, as Inspect's sample ids often are.
        id: pick_id(meta, &["variant_id", "variantId"]).unwrap_or_else(|| sample_id.clone()),
        case_id: pick_id(meta, &["case_id", "caseId"]),
        base_id: pick_id(
            meta,
            &[
                "base_id",
                "baseId",
                "variant_of",
                "variantOf",
                "parent_id",
                "parentId",
                "original_id",
            ],
        ),
        relation: word(&["relation", "expectation"]),
        transformation: word(&[
            "transformation",
            "variant",
            "variant_type",
            "perturbation",
            "mutation",
            "transform",
        ]),
        family: word(&["family", "group", "variant_group", "variant_family"]),
        allowed_changes: pick(meta, &["allowed_changes", "allowedChanges"]).cloned(),
        label: task.map(|t| format!("{t} sample {sample_id}")),
        // One column: the epoch is the repetition (a pair's id the same in
        // every epoch, so that its epochs are its repeated trials).
        group: String::new(),
        repetition: Some(epoch.saturating_sub(1)),
        input: s.get("input").map(input_text),
        vars: None,
        expected: s.get("target").cloned(),
        output: completion.map(Value::String),
        passed: if error.is_some() { None } else { judged.passed },
        reasons: judged.reasons,
        error,
        latency_ms: s
            .get("total_time")
            .and_then(Value::as_f64)
            .map(|t| (t * 1000.0).round()),
        model_id: output.and_then(|o| pick_str(o, &["model"])).or(model),
        settings_id: settings,
        scores: judged.scores,
        side_extra,
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

/// What a sample's scores say.
#[derive(Debug, Default, PartialEq)]
struct Judged {
    /// The verdict scorer's verdict; none without a verdict scorer or its score.
    passed: Option<bool>,
    reasons: Vec<String>,
    /// The verdict scorer's parsed answer (else the first scorer's).
    answer: Option<String>,
    /// Every scorer's value, by name.
    scores: Option<Value>,
}

/// A sample's verdict is its verdict scorer's value; every other scorer's
/// value (a float such as `confidence_on_target`, or another verdict) is
/// kept as a score beside it, never a failure.
fn verdict(
    scores: Option<&Map<String, Value>>,
    scorers: &Scorers,
    completion: Option<&str>,
) -> Judged {
    let Some(scores) = scores.filter(|s| !s.is_empty()) else {
        return Judged::default();
    };
    let answer_of = |sc: &Value| {
        sc.get("answer")
            .filter(|a| !a.is_null())
            .map(as_text)
            .filter(|a| !a.is_empty())
    };
    let mut judged = Judged {
        scores: Some(Value::Object(
            scores
                .iter()
                .map(|(n, sc)| (n.clone(), sc.get("value").cloned().unwrap_or(Value::Null)))
                .collect(),
        )),
        ..Judged::default()
    };
    let chosen = scorers
        .verdict
        .as_deref()
        .and_then(|n| Some((n, scores.get(n)?)));
    judged.answer = chosen
        .and_then(|(_, sc)| answer_of(sc))
        .or_else(|| scores.values().find_map(answer_of));
    let Some((name, sc)) = chosen else {
        return judged;
    };
    let value = sc.get("value").cloned().unwrap_or(Value::Null);
    judged.passed = verdict_of(&value);
    if judged.passed == Some(false) {
        let mut r = format!("Scorer {name} gave {}", as_text(&value));
        if let Some(a) = answer_of(sc) {
            r.push_str(&format!(" for the answer {a:?}"));
        }
        if let Some(e) = sc.get("explanation").and_then(Value::as_str)
            && !e.trim().is_empty()
            && Some(e) != answer_of(sc).as_deref()
            && Some(e.trim()) != completion.map(str::trim)
        {
            r.push_str(&format!(": {e}"));
        }
        r.push('.');
        judged.reasons.push(r);
    }
    judged
}

/// A score value as a verdict: `C`, `correct`, `true`, `yes`, `pass` and 1
/// pass; `I`, `incorrect`, `false`, `no`, `fail`, 0, and Inspect's `P`
/// (partial) and `N` (no answer) fail. Any other value (a float such as
/// 0.9, a dict of values) is a metric, not a verdict.
fn verdict_of(v: &Value) -> Option<bool> {
    match v {
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "c" | "correct" | "true" | "yes" | "pass" | "passed" => Some(true),
            "i" | "incorrect" | "false" | "no" | "fail" | "failed" | "p" | "partial" | "n"
            | "noanswer" => Some(false),
            _ => None,
        },
        Value::Bool(b) => Some(*b),
        Value::Number(n) => match n.as_f64() {
            Some(1.0) => Some(true),
            Some(0.0) => Some(false),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log of two samples (a base and its typo variant) scored by the
    /// given scorers, `scores[i]` being sample i's `{name: value}`.
    fn log(names: &[&str], scores: [Value; 2]) -> String {
        let [base, variant] = scores;
        let sample = |id: &str, meta: Value, sc: Value| {
            let sc: Map<String, Value> = sc
                .as_object()
                .expect("scores")
                .iter()
                .map(|(k, v)| (k.clone(), json!({"value": v, "answer": "urgent"})))
                .collect();
            json!({"id": id, "epoch": 1, "input": format!("ticket {id}"), "target": "urgent",
                   "output": {"completion": "ANSWER: urgent"}, "scores": sc, "metadata": meta})
        };
        json!({
            "status": "success",
            "eval": {"task": "t", "model": "m",
                     "scorers": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()},
            "samples": [
                sample("q1", json!({}), base),
                sample("q1-typo", json!({"base_id": "q1", "variant": "typo", "group": "question"}), variant),
            ],
        })
        .to_string()
    }

    fn run(text: &str, scorer: Option<&str>) -> Result<(Vec<Value>, Vec<String>), ConvertError> {
        let opts = ConvertOptions {
            scorer: scorer.map(str::to_string),
            ..ConvertOptions::default()
        };
        let (records, report) = super::super::convert_text(text, Format::Inspect, &opts)?;
        Ok((records, report.warnings))
    }

    #[test]
    fn verdict_values_and_metrics() {
        for (v, want) in [
            (json!("C"), Some(true)),
            (json!("correct"), Some(true)),
            (json!(true), Some(true)),
            (json!(1), Some(true)),
            (json!(1.0), Some(true)),
            (json!("I"), Some(false)),
            (json!("incorrect"), Some(false)),
            (json!(false), Some(false)),
            (json!(0), Some(false)),
            (json!("P"), Some(false)),
            (json!("N"), Some(false)),
            (json!(0.9), None),
            (json!(0.5), None),
            (json!({"a": 1}), None),
            (json!("maybe"), None),
        ] {
            assert_eq!(verdict_of(&v), want, "{v}");
        }
    }

    #[test]
    fn a_float_scorer_alone_gives_no_verdict() {
        let (records, warnings) = run(
            &log(
                &["confidence"],
                [json!({"confidence": 0.9}), json!({"confidence": 0.2})],
            ),
            None,
        )
        .expect("convert");
        assert_eq!(records.len(), 1);
        let r = &records[0];
        assert!(r.get("passed").is_none(), "{r}");
        assert_eq!(r["variant"]["scores"]["confidence"], 0.2);
        assert!(r["variant"].get("verdict").is_none());
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("no scorer gives verdicts")),
            "{warnings:?}"
        );
    }

    #[test]
    fn the_first_scorer_that_gives_verdicts_decides_and_the_note_says_why() {
        let text = log(
            &["confidence", "exact", "loose"],
            [
                json!({"confidence": 0.9, "exact": "C", "loose": "C"}),
                json!({"confidence": 0.4, "exact": "I", "loose": 1}),
            ],
        );
        let (records, warnings) = run(&text, None).expect("convert");
        let r = &records[0];
        assert_eq!(r["passed"], false);
        assert_eq!(r["variant"]["verdict_scorer"], "exact");
        assert_eq!(r["transformation"], "typo");
        assert_eq!(r["family"], "question");
        assert_eq!(r["variant"]["decision"], "urgent");
        assert!(r["reasons"].to_string().contains("Scorer exact gave I"));
        let note = warnings.join("\n");
        assert!(
            note.contains("verdicts come from scorer exact")
                && note.contains("(confidence gives other values)")
                && note.contains("--scorer loose"),
            "{note}"
        );
        let (records, warnings) = run(&text, Some("loose")).expect("convert");
        assert_eq!(records[0]["passed"], true);
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn no_samples_says_what_the_summary_holds() {
        let text = json!({
            "status": "success",
            "eval": {"task": "t", "config": {"log_samples": false}},
            "results": {"total_samples": 4,
                        "scores": [{"name": "match", "metrics": {"accuracy": {"value": 0.5}}}]},
        })
        .to_string();
        let e = run(&text, None).expect_err("refused");
        assert!(e.is_refusal());
        let ConvertError::InFile { error, .. } = e else {
            panic!("not about the file: {e}")
        };
        assert_eq!(
            error.to_string(),
            "this Inspect log has no samples to pair: it was written with --no-log-samples (only the summary: 4 samples were run: match accuracy 0.5); re-run the eval with samples logged (the default) and open that log"
        );
    }
}
