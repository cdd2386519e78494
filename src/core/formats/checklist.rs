//! CheckList (marcotcr/checklist): behavioural test suites of three types.
//!
//! CheckList writes no results file of its own. It reads two things:
//!
//! - **the viewer's data**: per test, `form_test_info()` (name, `type`
//!   `mft`/`inv`/`dir`, capability, description, `stats`) with the test cases
//!   of `form_testcases()`, dumped as JSON. Each test case holds examples,
//!   each with `new` (and, in INV and DIR tests, `old`) as `{text, pred,
//!   conf}` and `succeed`. An INV or DIR example is a pair: `old` is the
//!   source, `new` the variant, the test type the expectation (INV
//!   invariant, DIR directional) and the test name the transformation. An
//!   MFT example is an unpaired result with its own pass or fail.
//! - **the text of `TestSuite.summary()`**: per test, its counts and a sample
//!   of failing test cases, which become failing records; the counts become
//!   notes, because the passing test cases are not in the text.
//!
//! `docs/formats.md` maps every field.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{ConvertError, Format, Sink, Sniff, Unpaired, as_text, pick, pick_str};

/// The three test types, as `form_test_info()` spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Type {
    /// Minimum functionality test: each example has its own expected answer.
    Mft,
    /// Invariance: the prediction must not change under the perturbation.
    Inv,
    /// Directional expectation: the prediction must move one way (or not the other).
    Dir,
}

impl Type {
    fn parse(s: &str) -> Option<Type> {
        match s.trim().to_ascii_lowercase().as_str() {
            "mft" => Some(Type::Mft),
            "inv" => Some(Type::Inv),
            "dir" => Some(Type::Dir),
            _ => None,
        }
    }

    fn upper(self) -> &'static str {
        match self {
            Type::Mft => "MFT",
            Type::Inv => "INV",
            Type::Dir => "DIR",
        }
    }

    /// The pair's `relation` and expectation kind. Neither is a kind the
    /// native re-check evaluates, so CheckList's verdict stands as written.
    fn relation(self) -> (&'static str, &'static str) {
        match self {
            Type::Inv => ("invariant", "prediction-invariant"),
            _ => ("directional", "directional"),
        }
    }
}

pub(super) fn sniff(s: &Sniff) -> Result<(), String> {
    if let Some(doc) = &s.document {
        return if tests_of(doc).is_some_and(|t| t.iter().any(|x| test_type(x).is_some())) {
            Ok(())
        } else {
            Err("the JSON holds no CheckList tests (type mft, inv or dir, with testcases)".into())
        };
    }
    let json_head = s.text.starts_with('{') || s.text.starts_with('[');
    if json_head
        && s.has_key("testcases")
        && s.has_key("type")
        && (s.has_key("nfailed") || s.has_key("examples"))
    {
        // A long dump whose head is cut.
        return Ok(());
    }
    if !json_head && summary_tests(s.text).next().is_some() {
        return Ok(());
    }
    Err(format!(
        "needs CheckList tests (form_test_info() with form_testcases(), as JSON) or the text of TestSuite.summary(); found {}",
        s.describe()
    ))
}

/// Read CheckList's data as a stream, one test at a time: each test's
/// records are written as soon as it is read. The text of
/// `TestSuite.summary()` (a short report by design) is read whole.
pub(super) fn convert(
    reader: &mut dyn std::io::BufRead,
    head: &str,
    sink: &mut Sink,
) -> Result<(), ConvertError> {
    let trimmed = head.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        let mut text = String::new();
        reader
            .read_to_string(&mut text)
            .map_err(ConvertError::Unreadable)?;
        return convert_summary(&text, sink);
    }
    // The model is named before the tests (as the dump is written), so
    // that each test's records carry it as they are written.
    let model = model_in_head(trimmed);
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    let mut n = 0usize;
    let mut one = |t: Value, sink: &mut Sink| -> Result<(), ConvertError> {
        n += 1;
        write_one(n, &t, model.as_deref(), &mut names, sink)
    };
    let top = super::stream::each_element(reader, &["tests"], &mut |t| one(t, sink)).map_err(
        |e| match e {
            ConvertError::Content(why) => ConvertError::Content(format!(
                "{why}; expected CheckList tests (form_test_info() with form_testcases())"
            )),
            other => other,
        },
    )?;
    if let super::stream::Top::Object(o) = top {
        if o.contains_key("testcases") && !o.contains_key("tests") {
            // One test on its own.
            one(Value::Object(o), sink)?;
        } else if model.is_none()
            && let Some(m) = pick_str(&o, &["model", "model_id", "modelId"])
        {
            sink.warn(format!(
                "the dump names its model ({}) after its tests, so the records do not carry it; write \"model\" before \"tests\"",
                crate::core::text::inert_line(&m)
            ));
        }
    }
    if sink.report.records == 0 {
        return Err(NO_TESTS.into());
    }
    Ok(())
}

/// The model a dump names before its tests, read from its head.
fn model_in_head(text: &str) -> Option<String> {
    let mut rest = text.strip_prefix('{')?;
    loop {
        rest = rest.trim_start();
        let mut keys = serde_json::Deserializer::from_str(rest).into_iter::<String>();
        let key = keys.next()?.ok()?;
        if key == "tests" {
            return None;
        }
        rest = rest[keys.byte_offset()..]
            .trim_start()
            .strip_prefix(':')?
            .trim_start();
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let value = values.next()?.ok()?;
        if ["model", "model_id", "modelId"].contains(&key.as_str())
            && let Some(m) = pick_str(&Map::from_iter([("m".to_string(), value)]), &["m"])
        {
            return Some(m);
        }
        rest = rest[values.byte_offset()..]
            .trim_start()
            .strip_prefix(',')?;
    }
}

/// Write the `n`th test of a dump.
fn write_one(
    n: usize,
    t: &Value,
    model: Option<&str>,
    names: &mut BTreeMap<String, usize>,
    sink: &mut Sink,
) -> Result<(), ConvertError> {
    let Some(info) = info_of(t) else {
        sink.warn(format!("test {n}: not an object; skipped"));
        return Ok(());
    };
    let name = pick_str(info, &["name"]).unwrap_or_else(|| format!("test {n}"));
    let count = names.entry(name.clone()).or_default();
    *count += 1;
    let name = if *count > 1 {
        format!("{name} ({count})")
    } else {
        name
    };
    let Some(ty) = test_type(t) else {
        sink.warn(format!(
            "test {}: type {} is not mft, inv or dir; skipped",
            shown(&name),
            info.get("type").map_or_else(|| "missing".into(), as_text)
        ));
        return Ok(());
    };
    let Some(cases) = t.get("testcases").and_then(Value::as_array) else {
        sink.warn(format!(
            "test {}: no testcases; dump form_testcases() beside form_test_info() to see its examples",
            shown(&name)
        ));
        return Ok(());
    };
    let test = Test {
        name,
        ty,
        capability: pick_str(info, &["capability"]).filter(|c| !c.trim().is_empty()),
        description: pick_str(info, &["description"]).filter(|c| !c.trim().is_empty()),
        model: model.map(str::to_string),
    };
    let failed_cases = write_test(&test, cases, sink)?;
    check_stats(&test, info, cases.len(), failed_cases, sink);
    Ok(())
}

const NO_TESTS: &str = "no CheckList test cases: expected tests with type mft, inv or dir and their testcases (form_test_info() plus form_testcases(), dumped as JSON)";

fn shown(s: &str) -> String {
    format!("'{}'", crate::core::text::inert_line(s))
}

/// The tests of a dump: `{"tests": [...]}`, an array of tests, or one test.
fn tests_of(doc: &Value) -> Option<Vec<&Value>> {
    match doc {
        Value::Array(a) => Some(a.iter().collect()),
        Value::Object(o) => match o.get("tests") {
            Some(Value::Array(a)) => Some(a.iter().collect()),
            Some(Value::Object(m)) => Some(m.values().collect()),
            _ if o.contains_key("testcases") => Some(vec![doc]),
            _ => None,
        },
        _ => None,
    }
}

/// A test's `form_test_info()` fields: the test itself, or its `info`.
fn info_of(t: &Value) -> Option<&Map<String, Value>> {
    let o = t.as_object()?;
    Some(
        ["info", "test_info"]
            .iter()
            .find_map(|k| o.get(*k).and_then(Value::as_object))
            .unwrap_or(o),
    )
}

fn test_type(t: &Value) -> Option<Type> {
    info_of(t)?
        .get("type")
        .and_then(Value::as_str)
        .and_then(Type::parse)
}

struct Test {
    name: String,
    ty: Type,
    capability: Option<String>,
    description: Option<String>,
    model: Option<String>,
}

/// One side of an example: `{text, pred, conf}`.
struct Said {
    text: String,
    pred: Option<String>,
    conf: Option<f64>,
}

impl Said {
    fn of(v: Option<&Value>) -> Option<Said> {
        let o = v?.as_object()?;
        Some(Said {
            text: o.get("text").map(as_text).unwrap_or_default(),
            pred: pick(o, &["pred"]).map(as_text),
            conf: o.get("conf").and_then(Value::as_f64),
        })
    }

    /// `1 (conf 0.7)`, as a reason quotes it.
    fn quoted(&self) -> String {
        let pred = self.pred.as_deref().unwrap_or("no prediction");
        match self.conf {
            Some(c) => format!("{pred} (conf {})", crate::core::model::fmt_num(c)),
            None => pred.to_string(),
        }
    }

    fn side(&self) -> Value {
        let mut s = Map::new();
        s.insert("question".into(), json!(self.text));
        if let Some(p) = &self.pred {
            s.insert("decision".into(), json!(p));
        }
        if let Some(c) = self.conf {
            s.insert("scores".into(), json!({ "conf": c }));
        }
        Value::Object(s)
    }
}

/// Write a test's examples; returns how many of its test cases failed.
fn write_test(test: &Test, cases: &[Value], sink: &mut Sink) -> Result<usize, ConvertError> {
    let mut failed_cases = 0;
    let mut unlisted = 0;
    for (i, case) in cases.iter().enumerate() {
        let n = i + 1;
        let examples = case
            .get("examples")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let case_passed = case.get("succeed").and_then(succeed);
        let mut any_failed = false;
        for ex in examples {
            sink.report.rows += 1;
            let passed = ex.get("succeed").and_then(succeed);
            any_failed |= passed == Some(false);
            let origin =
                json!({ "test": test.name, "type": test.ty.upper(), "testcase": n, "example": ex });
            let new = Said::of(ex.get("new"));
            let old = Said::of(ex.get("old"));
            let rec = match (test.ty, old, new) {
                (Type::Inv | Type::Dir, Some(old), Some(new)) => {
                    pair(test, n, case_passed, &old, &new, passed, origin)
                }
                (_, _, Some(new)) => unpaired(test, n, &new, ex.get("label"), passed, origin),
                (_, _, None) => {
                    sink.warn(format!(
                        "test {}, test case {n}: an example without new.text; skipped",
                        shown(&test.name)
                    ));
                    continue;
                }
            };
            sink.record(rec)?;
        }
        match case_passed {
            Some(false) => {
                failed_cases += 1;
                if !any_failed {
                    unlisted += 1;
                }
            }
            None if any_failed => failed_cases += 1,
            _ => {}
        }
    }
    if unlisted > 0 {
        sink.warn(format!(
            "test {}: {unlisted} failing test cases have no failing example in the dump (form_testcases() was given too small an n_per_testcase)",
            shown(&test.name)
        ));
    }
    Ok(failed_cases)
}

/// `succeed` as CheckList writes it: 1/0 (or true/false).
fn succeed(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_f64().map(|x| x > 0.0),
        _ => None,
    }
}

fn pair(
    test: &Test,
    n: usize,
    case_passed: Option<bool>,
    old: &Said,
    new: &Said,
    passed: Option<bool>,
    origin: Value,
) -> Value {
    let (relation, kind) = test.ty.relation();
    let mut reasons = Vec::new();
    if passed == Some(false) {
        reasons.push(match test.ty {
            Type::Inv if old.pred != new.pred => format!(
                "The prediction changed from {} to {}; an INV test expects the same prediction.",
                old.quoted(),
                new.quoted()
            ),
            Type::Inv => format!(
                "CheckList failed this INV example: {} → {}.",
                old.quoted(),
                new.quoted()
            ),
            _ => match &test.description {
                Some(d) => format!(
                    "CheckList failed this DIR example: {} → {}; the test expects: {}",
                    old.quoted(),
                    new.quoted(),
                    d
                ),
                None => format!(
                    "CheckList failed this DIR example: {} → {}.",
                    old.quoted(),
                    new.quoted()
                ),
            },
        });
    }
    let mut r = Map::new();
    r.insert("case_id".into(), json!(old.text));
    r.insert("variant_id".into(), json!(new.text));
    if let Some(d) = &test.description {
        r.insert("label".into(), json!(d));
    }
    r.insert(
        "family".into(),
        json!(test.capability.as_deref().unwrap_or("checklist")),
    );
    r.insert("transformation".into(), json!(test.name));
    r.insert("expectation".into(), json!({ "kind": kind }));
    // The perturbation of the text is the change the test declares.
    r.insert("allowed_changes".into(), json!(["question"]));
    r.insert("source".into(), old.side());
    r.insert("variant".into(), new.side());
    if let Some(p) = passed {
        r.insert("passed".into(), json!(p));
        r.insert("reasons".into(), json!(reasons));
    }
    if let Some(m) = &test.model {
        r.insert("model_id".into(), json!(m));
    }
    r.insert("format".into(), json!(Format::CheckList.name()));
    r.insert("relation".into(), json!(relation));
    r.insert("checklist".into(), checklist_fields(test, n, case_passed));
    r.insert("origin".into(), origin);
    Value::Object(r)
}

fn unpaired(
    test: &Test,
    n: usize,
    new: &Said,
    label: Option<&Value>,
    passed: Option<bool>,
    origin: Value,
) -> Value {
    let label = label.filter(|l| !l.is_null());
    let mut u = Unpaired::new(format!("{} #{n}", test.name), new.text.clone());
    u.label = Some(test.name.clone());
    u.input = Some(new.text.clone());
    u.expected = label.cloned();
    u.actual = new.pred.as_ref().map(|p| json!(p));
    u.passed = passed;
    if passed == Some(false) {
        u.reasons.push(match label {
            Some(l) => format!(
                "The prediction is {}; the {} test expects {}.",
                new.quoted(),
                test.ty.upper(),
                as_text(l)
            ),
            None => format!(
                "CheckList failed this {} example: the prediction is {}.",
                test.ty.upper(),
                new.quoted()
            ),
        });
    }
    u.model_id = test.model.clone();
    if let Some(c) = new.conf {
        u.extra.insert("scores".into(), json!({ "conf": c }));
    }
    if let Some(cap) = &test.capability {
        u.extra.insert("capability".into(), json!(cap));
    }
    u.extra
        .insert("checklist".into(), checklist_fields(test, n, None));
    u.into_record(Format::CheckList, origin)
}

fn checklist_fields(test: &Test, n: usize, case_passed: Option<bool>) -> Value {
    let mut c = Map::new();
    c.insert("test".into(), json!(test.name));
    c.insert("type".into(), json!(test.ty.upper()));
    c.insert("testcase".into(), json!(n));
    if let Some(p) = case_passed {
        c.insert("testcase_passed".into(), json!(p));
    }
    Value::Object(c)
}

/// Compare the test cases written with the test's own `stats`.
fn check_stats(
    test: &Test,
    info: &Map<String, Value>,
    listed: usize,
    failed: usize,
    sink: &mut Sink,
) {
    let Some(stats) = info.get("stats").and_then(Value::as_object) else {
        return;
    };
    let num = |k: &str| stats.get(k).and_then(Value::as_u64);
    if let Some(f) = num("nfiltered").filter(|f| *f > 0) {
        sink.warn(format!(
            "test {}: CheckList filtered out {f} test cases (their expectation could not apply); they are not listed",
            shown(&test.name)
        ));
    }
    let (Some(nf), Some(np)) = (num("nfailed"), num("npassed")) else {
        return;
    };
    if nf as usize != failed || (nf + np) as usize != listed {
        sink.warn(format!(
            "test {}: CheckList's stats say {nf} failed and {np} passed test cases; the dump lists {listed} test cases, {failed} failing",
            shown(&test.name)
        ));
    }
}

// ------------------------------------------------------------ summary text

/// One test as `TestSuite.summary()` prints it.
#[derive(Debug, Default)]
struct SummaryTest<'a> {
    capability: Option<&'a str>,
    name: &'a str,
    /// `Test cases:`, `Test cases run:`, `After filtering:`, `Fails (rate):`.
    testcases: Option<u64>,
    run: Option<u64>,
    after_filtering: Option<u64>,
    fails: Option<u64>,
    /// The example fails: each group is one test case's printed lines.
    groups: Vec<Vec<&'a str>>,
}

/// The number after `prefix` on `line` (`Test cases:      6` → 6).
fn count_after(line: &str, prefix: &str) -> Option<u64> {
    line.strip_prefix(prefix)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

const STATS_PREFIXES: [&str; 4] = [
    "Test cases:",
    "Test cases run:",
    "After filtering:",
    "Fails (rate):",
];

/// The tests of a `TestSuite.summary()` text, in order.
fn summary_tests(text: &str) -> impl Iterator<Item = SummaryTest<'_>> {
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    let starts: Vec<usize> = (1..lines.len())
        .filter(|&i| {
            count_after(lines[i], "Test cases:").is_some() && !lines[i - 1].trim().is_empty()
        })
        .collect();
    let mut capability: Option<&str> = None;
    let mut out = Vec::with_capacity(starts.len());
    for (k, &i) in starts.iter().enumerate() {
        // A capability heading: a line, one blank line, then the test name;
        // a test's own block ends in `----` or a count instead.
        if i >= 3 && lines[i - 2].trim().is_empty() {
            let l = lines[i - 3].trim();
            if !l.is_empty() && l != "----" && !STATS_PREFIXES.iter().any(|p| l.starts_with(p)) {
                capability = Some(l);
            }
        }
        let end = starts.get(k + 1).map_or(lines.len(), |&j| j - 1);
        let mut t = SummaryTest {
            capability,
            name: lines[i - 1].trim(),
            ..SummaryTest::default()
        };
        let mut group: Vec<&str> = Vec::new();
        let mut in_fails = false;
        for &l in &lines[i..end] {
            if let Some(n) = count_after(l, "Test cases run:") {
                t.run = Some(n);
            } else if let Some(n) = count_after(l, "Test cases:") {
                t.testcases = Some(n);
            } else if let Some(n) = count_after(l, "After filtering:") {
                t.after_filtering = Some(n);
            } else if let Some(n) = count_after(l, "Fails (rate):") {
                t.fails = Some(n);
            } else if l.trim() == "Example fails:" {
                in_fails = true;
            } else if l.trim() == "----" {
                if !group.is_empty() {
                    t.groups.push(std::mem::take(&mut group));
                }
            } else if in_fails && !l.trim().is_empty() {
                group.push(l.trim());
            }
        }
        // Lines after the last `----` belong to the next capability heading.
        out.push(t);
    }
    out.into_iter()
}

/// One printed example: the prediction as printed and the text.
struct Printed<'a> {
    shown: String,
    text: &'a str,
}

/// How many leading tokens of every line in `groups` are printed
/// probabilities (`%.1f`), or `None` when the lines print `pred (conf)`
/// or a bare prediction.
fn leading_probabilities(groups: &[Vec<&str>]) -> usize {
    let is_prob = |t: &str| {
        t.split_once('.').is_some_and(|(a, b)| {
            !a.is_empty()
                && a.bytes().all(|c| c.is_ascii_digit())
                && b.len() == 1
                && b.bytes().all(|c| c.is_ascii_digit())
        })
    };
    groups
        .iter()
        .flatten()
        .map(|l| l.split_whitespace().take_while(|t| is_prob(t)).count())
        .min()
        .unwrap_or(0)
}

/// Split a printed line into its prediction and its text: `k` leading
/// probabilities; else `pred (conf) text`; else `pred text`.
fn printed(line: &str, k: usize) -> Printed<'_> {
    let mut rest = line;
    let take = |rest: &mut &str| -> String {
        let t = rest.trim_start();
        let end = t.find(char::is_whitespace).unwrap_or(t.len());
        let (tok, after) = t.split_at(end);
        *rest = after;
        tok.to_string()
    };
    let shown = if k > 0 {
        (0..k)
            .map(|_| take(&mut rest))
            .collect::<Vec<_>>()
            .join(" ")
    } else {
        let pred = take(&mut rest);
        let t = rest.trim_start();
        if t.starts_with('(')
            && t.split_whitespace()
                .next()
                .is_some_and(|c| c.ends_with(')'))
        {
            let conf = take(&mut rest);
            format!("{pred} {conf}")
        } else {
            pred
        }
    };
    Printed {
        shown,
        text: rest.trim(),
    }
}

fn convert_summary(text: &str, sink: &mut Sink) -> Result<(), ConvertError> {
    let tests: Vec<SummaryTest> = summary_tests(text).collect();
    if tests.is_empty() {
        return Err("not a CheckList TestSuite.summary() text (no 'Test cases:' lines) and not JSON; expected CheckList tests".into());
    }
    for t in &tests {
        let judged = t.after_filtering.or(t.run).or(t.testcases).unwrap_or(0);
        let fails = t.fails.map_or_else(|| "no".to_string(), |f| f.to_string());
        sink.warn(format!(
            "test {}: CheckList judged {judged} test cases and {fails} failed; the summary prints {} of the failures and none of the passes (dump form_test_info() and form_testcases() as JSON for every test case)",
            shown(t.name),
            t.groups.len()
        ));
        let k = leading_probabilities(&t.groups);
        for (g, group) in t.groups.iter().enumerate() {
            let n = g + 1;
            let lines: Vec<Printed> = group.iter().map(|l| printed(l, k)).collect();
            sink.report.rows += lines.len();
            let origin = |line: &str| json!({ "test": t.name, "printed_fail": n, "line": line });
            match lines.split_first() {
                Some((only, [])) => {
                    let mut u = Unpaired::new(format!("{} #{n}", t.name), only.text.to_string());
                    u.label = Some(t.name.to_string());
                    u.input = Some(only.text.to_string());
                    u.actual = Some(json!(only.shown));
                    u.passed = Some(false);
                    u.reasons.push(format!(
                        "Printed among the example fails of TestSuite.summary(): {}.",
                        only.shown
                    ));
                    if let Some(c) = t.capability {
                        u.extra.insert("capability".into(), json!(c));
                    }
                    sink.record(u.into_record(Format::CheckList, origin(group[0])))?;
                }
                Some((base, variants)) => {
                    for (v, line) in variants.iter().zip(&group[1..]) {
                        sink.record(summary_pair(t, base, v, origin(line)))?;
                    }
                }
                None => {}
            }
        }
    }
    Ok(())
}

/// A printed perturbation failure: the first line of the group is the base.
fn summary_pair(t: &SummaryTest, base: &Printed, v: &Printed, origin: Value) -> Value {
    let side = |p: &Printed| json!({ "question": p.text, "decision": p.shown });
    let mut r = Map::new();
    r.insert("case_id".into(), json!(base.text));
    r.insert("variant_id".into(), json!(v.text));
    r.insert("family".into(), json!(t.capability.unwrap_or("checklist")));
    r.insert("transformation".into(), json!(t.name));
    r.insert("expectation".into(), json!({ "kind": "perturbation" }));
    r.insert("allowed_changes".into(), json!(["question"]));
    r.insert("source".into(), side(base));
    r.insert("variant".into(), side(v));
    r.insert("passed".into(), json!(false));
    r.insert(
        "reasons".into(),
        json!([format!(
            "Printed among the example fails of TestSuite.summary(): {} → {}.",
            base.shown, v.shown
        )]),
    );
    r.insert("format".into(), json!(Format::CheckList.name()));
    r.insert("relation".into(), json!("perturbation"));
    r.insert("origin".into(), origin);
    Value::Object(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_lines_split_prediction_and_text() {
        let p = printed("0.7 The food was good.", 1);
        assert_eq!((p.shown.as_str(), p.text), ("0.7", "The food was good."));
        let p = printed("0.2 0.2 0.6 I was billed twice.", 3);
        assert_eq!(
            (p.shown.as_str(), p.text),
            ("0.2 0.2 0.6", "I was billed twice.")
        );
        let p = printed("4 (0.9) five classes", 0);
        assert_eq!((p.shown.as_str(), p.text), ("4 (0.9)", "five classes"));
        let p = printed("positive what a day", 0);
        assert_eq!((p.shown.as_str(), p.text), ("positive", "what a day"));
        // A text that starts with a number keeps it: the count is the
        // smallest over the test's lines.
        let groups = vec![vec!["0.5 3.5 stars", "0.2 fine"]];
        assert_eq!(leading_probabilities(&groups), 1);
    }

    #[test]
    fn summary_headings_and_counts() {
        let text = "Vocabulary\n\nsimple\nTest cases:      6\nFails (rate):    1 (16.7%)\n\nExample fails:\n0.5 An amazing trip.\n----\n\n\nsecond\nTest cases:      4\nTest cases run:  3\nAfter filtering: 2 (66.7%)\nFails (rate):    0 (0.0%)\n\n\n\n\nRobustness\n\ntypos\nTest cases:      5\nFails (rate):    2 (40.0%)\n\nExample fails:\n0.7 a good day\n0.5 a goood day\n\n----\n";
        let tests: Vec<SummaryTest> = summary_tests(text).collect();
        let got: Vec<_> = tests
            .iter()
            .map(|t| (t.capability, t.name, t.testcases, t.fails, t.groups.len()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Some("Vocabulary"), "simple", Some(6), Some(1), 1),
                (Some("Vocabulary"), "second", Some(4), Some(0), 0),
                (Some("Robustness"), "typos", Some(5), Some(2), 1),
            ]
        );
        assert_eq!((tests[1].run, tests[1].after_filtering), (Some(3), Some(2)));
        assert_eq!(
            tests[2].groups[0],
            vec!["0.7 a good day", "0.5 a goood day"]
        );
    }

    #[test]
    fn types_parse_in_any_case() {
        assert_eq!(Type::parse("INV"), Some(Type::Inv));
        assert_eq!(Type::parse(" dir"), Some(Type::Dir));
        assert_eq!(Type::parse("mft"), Some(Type::Mft));
        assert_eq!(Type::parse("mfts"), None);
    }
}
