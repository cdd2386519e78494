//! promptfoo: `promptfoo eval -o results.json` (one JSON document) or
//! `-o results.jsonl` (one result per line).
//!
//! Results arrive in completion order; each names its test (`testIdx`) and
//! its column (`promptIdx`: one prompt on one provider). Rows pair within a
//! column through the test metadata: a row whose `metadata.base_id` names
//! an id pairs with the row of the same column whose `variant_id`, else
//! `case_id`, else test description is that id. A test repeated (`repeat`)
//! pairs repetition by repetition. Rows with no relation are listed
//! unpaired. promptfoo's CSV, YAML and XML exports keep no test metadata,
//! so they are refused with the file to open instead.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value, json};

use super::stream::Top;
use super::{
    ConvertError, Format, Layout, Pairing, Row, Sink, Sniff, as_text, each_record, pick, pick_id,
    pick_str, write_paired,
};

pub(super) fn sniff(s: &Sniff) -> Result<(), String> {
    // (A results document written on one line, as `jq -c` leaves it, is
    // a document, not a result line.)
    if let Some(o) = s.line_object()
        && !o.contains_key("evalId")
        && !o.contains_key("results")
    {
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
    // promptfoo's other exports: recognised, so that they are refused
    // with a clear message rather than read as lines.
    if export_kind(s.text).is_some() {
        return Ok(());
    }
    Err(format!(
        "needs a results file with evalId and results, or result lines; found {}",
        s.describe()
    ))
}

/// Which of promptfoo's table exports the text starts like, if any:
/// `-o results.csv`, `-o results.yaml` or `-o results.xml`.
fn export_kind(text: &str) -> Option<&'static str> {
    let text = text.trim_start_matches('\u{feff}').trim_start();
    let first = text.lines().next().unwrap_or_default();
    let starts_xml = text.starts_with("<?xml") || text.starts_with('<');
    if starts_xml && text.contains("<promptfoo>") {
        return Some("XML");
    }
    let yaml_key = |k: &str| {
        text.lines()
            .any(|l| l.starts_with(k) && l[k.len()..].starts_with(':'))
    };
    if !text.starts_with('{')
        && !text.starts_with('[')
        && yaml_key("evalId")
        && (yaml_key("results") || text.contains("promptIdx:"))
    {
        return Some("YAML");
    }
    // The CSV table: one column per prompt and provider (`[provider] prompt`)
    // followed by its Status, Score, Named Scores and Grader Reason.
    let cols: Vec<&str> = first.split(',').map(str::trim).collect();
    if cols.contains(&"Grader Reason") && cols.contains(&"Status") {
        return Some("CSV");
    }
    None
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

pub(super) fn convert(
    reader: &mut dyn std::io::BufRead,
    head: &str,
    sink: &mut Sink,
) -> Result<(), ConvertError> {
    if let Some(kind) = export_kind(head) {
        let why = if kind == "CSV" {
            "a table for reading that keeps no test metadata, test or column indexes, so its rows cannot be paired"
        } else {
            "which triage does not read"
        };
        return Err(ConvertError::Refused(format!(
            "this is promptfoo's {kind} export, {why}; open the results.json (or results.jsonl) of the same run instead (promptfoo eval -o results.json)"
        )));
    }
    // results.jsonl holds one result a line (after any line that is not
    // one); results.json is one document, the results in results.results.
    let sniff = Sniff::new(head, b"");
    let lines = sniff
        .line_object()
        .is_some_and(|o| is_result(o) || !(o.contains_key("results") || o.contains_key("evalId")));
    let layout = if lines {
        Layout::Lines
    } else {
        Layout::Document(vec!["results".into(), "results".into()])
    };
    let mut pairing = Pairing::default();
    let mut keys: Vec<Keys> = Vec::new();
    // Each column's provider and prompt label, to name it once all are read.
    let mut columns: BTreeMap<u64, (String, Option<String>)> = BTreeMap::new();
    let top = each_record(reader, &layout, sink, &mut |_, o, sink| {
        if is_result(&o) {
            let r = row(o);
            let k = Keys::of(&r);
            if let Some(c) = k.column {
                columns.entry(c).or_insert_with(|| {
                    (
                        r.model_id.clone().unwrap_or_default(),
                        r.settings_id.clone(),
                    )
                });
            }
            keys.push(k);
            pairing.set_aside(&r, sink)?;
        }
        Ok(())
    })?;
    for (c, name) in column_names(&columns) {
        let read = column_as_read(&columns[&c].0, c);
        pairing.groups.rename(&read, &name);
    }
    if let Top::Object(o) = &top
        && keys.is_empty()
        && !o.contains_key("evalId")
    {
        return Err("expected a promptfoo results file: an object with results.results".into());
    }
    if let Top::Other = top {
        return Err("expected a promptfoo results file: an object with results.results".into());
    }
    // Done growing: what is held until pairing ends takes no more room than it needs.
    pairing.rows.shrink_to_fit();
    keys.shrink_to_fit();
    pair_and_write(pairing, keys, sink)
}

/// A column's name as its rows are read: its provider and its `promptIdx`
/// (unique in the run, but counted across providers).
fn column_as_read(provider: &str, prompt_idx: u64) -> String {
    format!("{provider} / prompt {prompt_idx}")
}

/// The longest prompt label a column is named by; a longer one (promptfoo
/// labels a prompt given inline by its whole text) is numbered instead.
const LABEL_MAX: usize = 40;

/// Each column's name, `provider / prompt`, from its provider and its
/// prompt's label (`columns`: by `promptIdx`, which numbers each prompt on
/// each provider in turn). The prompt is its label when that is one short
/// line and no template, else `prompt N`, N its place among the run's prompts (in column
/// order). A column whose name another column would have too, or that is
/// another column's name as read, keeps the `prompt <promptIdx>` it was
/// read with, so that no two share one.
fn column_names(columns: &BTreeMap<u64, (String, Option<String>)>) -> Vec<(u64, String)> {
    let mut prompts: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for (&c, (provider, label)) in columns {
        let Some(label) = label.as_deref().filter(|l| !l.trim().is_empty()) else {
            continue;
        };
        let n = match prompts.iter().position(|p| *p == label) {
            Some(n) => n,
            None => {
                prompts.push(label);
                prompts.len() - 1
            }
        };
        // (Without a label of its own, a prompt is labelled by its text:
        // a template, `{{var}}` and all, is numbered.)
        let short = label.chars().count() <= LABEL_MAX
            && !label.contains(['\n', '\r'])
            && !label.contains("{{");
        let name = match short {
            true => format!("{provider} / {}", label.trim()),
            false => format!("{provider} / prompt {n}"),
        };
        out.push((c, name));
    }
    // A name several columns would share is none of theirs, and one that
    // is another column's as read stays that column's.
    let mut uses: HashMap<String, usize> = HashMap::new();
    for (_, name) in &out {
        *uses.entry(name.clone()).or_default() += 1;
    }
    let read: HashSet<String> = columns
        .iter()
        .map(|(&c, (provider, _))| column_as_read(provider, c))
        .collect();
    out.retain(|(c, name)| {
        uses[name] == 1 && (*name == column_as_read(&columns[c].0, *c) || !read.contains(name))
    });
    out
}

/// What pairing reads of a result besides its [`super::Slim`] (whose case
/// id is its metadata's): its test and column indexes, its test's
/// description, and a digest of its whole test case (the repetitions of
/// a test are the rows whose test case is the same).
struct Keys {
    test: Option<u64>,
    column: Option<u64>,
    description: Option<Box<str>>,
    test_case: u64,
    /// A digest of each var (its name and value), sorted: which vars two
    /// tests share.
    each_var: Box<[u64]>,
}

impl Keys {
    fn of(r: &Row) -> Keys {
        use std::hash::{Hash, Hasher};
        let idx = |k: &str| r.raw.get(k).and_then(Value::as_u64);
        let digest = |v: &dyn Fn(&mut std::hash::DefaultHasher)| {
            let mut h = std::hash::DefaultHasher::new();
            v(&mut h);
            h.finish()
        };
        let mut each_var: Vec<u64> = r
            .vars
            .as_ref()
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, v)| {
                digest(&|h| {
                    k.hash(h);
                    v.to_string().hash(h);
                })
            })
            .collect();
        each_var.sort_unstable();
        Keys {
            test: idx("testIdx"),
            column: idx("promptIdx"),
            description: description_of(&r.raw).map(Into::into),
            // The whole test (vars, assertions, options...): a test copied
            // with other assertions is another test, not a repetition.
            test_case: digest(&|h| {
                r.raw
                    .get("testCase")
                    .map(Value::to_string)
                    .or_else(|| r.vars.as_ref().map(Value::to_string))
                    .hash(h)
            }),
            each_var: each_var.into(),
        }
    }

    /// How many vars (name and value) these tests share.
    fn shared_vars(&self, other: &Keys) -> usize {
        let (mut a, mut b) = (
            self.each_var.iter().peekable(),
            other.each_var.iter().peekable(),
        );
        let mut n = 0;
        while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
            match x.cmp(y) {
                std::cmp::Ordering::Less => _ = a.next(),
                std::cmp::Ordering::Greater => _ = b.next(),
                std::cmp::Ordering::Equal => {
                    n += 1;
                    a.next();
                    b.next();
                }
            }
        }
        n
    }
}

/// Order the rows by column and test, pair them and write the records.
fn pair_and_write(
    mut p: Pairing,
    mut keys: Vec<Keys>,
    sink: &mut Sink,
) -> Result<(), ConvertError> {
    if p.rows.is_empty() {
        return Err("no promptfoo results (objects with testCase and provider)".into());
    }
    sink.report.rows = p.rows.len();
    // Completion order says nothing: records follow the columns and tests.
    // The order is found on the keys and the rows moved in place, so that
    // sorting needs no second copy of the rows.
    let mut order: Vec<usize> = (0..p.rows.len()).collect();
    order.sort_by_key(|&i| {
        (
            keys[i].column.unwrap_or(u64::MAX),
            keys[i].test.unwrap_or(u64::MAX),
        )
    });
    permute(&mut p.rows, &order);
    permute(&mut keys, &order);
    drop(order);
    link(&mut p, &keys, sink);
    drop(keys);
    write_paired(p, Format::Promptfoo, sink)
}

/// Reorder `v` in place so that its `k`th element is the one that was at
/// `order[k]` (a permutation of its indexes), following each cycle with swaps.
fn permute<T>(v: &mut [T], order: &[usize]) {
    let mut done = vec![false; v.len()];
    for start in 0..v.len() {
        let mut k = start;
        while !done[k] {
            done[k] = true;
            let from = order[k];
            if from == start {
                break;
            }
            v.swap(k, from);
            k = from;
        }
    }
}

fn description_of(raw: &Value) -> Option<String> {
    raw.get("testCase")
        .and_then(Value::as_object)
        .and_then(|t| pick_str(t, &["description"]))
}

/// Pair rows within their column: number the repetitions of each test,
/// then point every `base_id` at the id of the row it names, matched by
/// `variant_id`, else `case_id`, else test description, in the same column
/// and repetition. A matched variant takes its base's case.
fn link(p: &mut Pairing, keys: &[Keys], sink: &mut Sink) {
    let Pairing { rows, .. } = p;
    let test = |i: usize| keys[i].test.unwrap_or(u64::MAX);
    // Repetitions (`repeat`): rows of one column with the same test (id,
    // description and vars), numbered in test order.
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&i| test(i));
    let mut reps = vec![0u64; rows.len()];
    let mut repeated = false;
    {
        let mut seen: rustc_hash::FxHashMap<(u32, &str, Option<&str>, u64), u64> =
            Default::default();
        for &i in &order {
            let k = &keys[i];
            let n = seen
                .entry((
                    rows[i].group,
                    &rows[i].id,
                    k.description.as_deref(),
                    k.test_case,
                ))
                .or_insert(0);
            reps[i] = *n;
            repeated |= *n > 0;
            *n += 1;
        }
    }
    drop(order);
    // (The column stays the group: a pair's id is the same in every
    // repetition, so that its repetitions are its repeated trials.)
    for (r, rep) in rows.iter_mut().zip(reps) {
        r.repetition = repeated.then_some(rep);
    }
    // Distinct tests that share an id in one column (and repetition) keep
    // it apart by their place among them, in test order: `id (2 of 3)`,
    // the same in every repetition. A `base_id` still names them by the
    // id their test gave (below).
    let given: Vec<Box<str>> = rows.iter().map(|r| r.id.clone()).collect();
    // Each such test's place among them and how many they are.
    let mut ordinal: Vec<Option<(usize, usize)>> = vec![None; rows.len()];
    let renamed: Vec<(usize, String)> = {
        let mut sharing: rustc_hash::FxHashMap<(u32, Option<u64>, &str), Vec<usize>> =
            Default::default();
        for (i, r) in rows.iter().enumerate() {
            sharing
                .entry((r.group, r.repetition, &r.id))
                .or_default()
                .push(i);
        }
        // The ids that stay, where a new name must not land (a test may
        // be called `t (1 of 2)` already): such a name takes its test's
        // index too.
        let mut taken: rustc_hash::FxHashSet<(u32, Option<u64>, String)> = sharing
            .iter()
            .filter(|(_, v)| v.len() == 1)
            .map(|(&(g, rep, id), _)| (g, rep, id.to_string()))
            .collect();
        let mut shared: Vec<Vec<usize>> = sharing.into_values().filter(|v| v.len() > 1).collect();
        shared.sort_by_key(|v| v[0]);
        let mut renamed = Vec::new();
        for mut those in shared {
            those.sort_by_key(|&i| (test(i), i));
            let n = those.len();
            for (k, &i) in those.iter().enumerate() {
                ordinal[i] = Some((k, n));
                let (g, rep) = (rows[i].group, rows[i].repetition);
                let mut name = format!("{} ({} of {n})", rows[i].id, k + 1);
                if taken.contains(&(g, rep, name.clone())) {
                    name = format!("{name} · test {}", test(i));
                }
                while taken.contains(&(g, rep, name.clone())) {
                    name.push('\'');
                }
                taken.insert((g, rep, name.clone()));
                renamed.push((i, name));
            }
        }
        renamed
    };
    for (i, id) in renamed {
        rows[i].id = id.into();
    }
    // Each key names rows of a column: by the id their test gave (rank 0),
    // their case (1) or their description (2). The names are numbered (row
    // times four plus rank) and sorted by the key they stand for, to be
    // looked up. (The case ids are still the metadata's: only linking
    // changes them.)
    let key = |e: u64| -> Option<&str> {
        let i = (e >> 2) as usize;
        match e & 3 {
            0 => Some(&*given[i]),
            1 => rows[i].case_id.as_deref(),
            _ => keys[i].description.as_deref(),
        }
    };
    let place = |i: usize| (rows[i].group, rows[i].repetition);
    let sort_key = |e: u64| (place((e >> 2) as usize), key(e), e & 3, e >> 2);
    let mut names: Vec<u64> = (0..rows.len() as u64)
        .flat_map(|i| [i << 2, (i << 2) | 1, (i << 2) | 2])
        .filter(|&e| key(e).is_some())
        .collect();
    names.sort_unstable_by(|&a, &b| sort_key(a).cmp(&sort_key(b)));
    let mut linked: Vec<(usize, usize)> = Vec::new();
    let mut ambiguous = 0usize;
    for (i, r) in rows.iter().enumerate() {
        let Some(b) = r.base_id.as_deref() else {
            continue;
        };
        let at = |e: &u64| (place((*e >> 2) as usize), key(*e).unwrap_or_default());
        let from = names.partition_point(|e| at(e) < (place(i), b));
        let to = names.partition_point(|e| at(e) <= (place(i), b));
        // The best name first; a base (a row with no base of its own)
        // before a variant. Among tests that share the name: the one in
        // this test's place when the variant's id is shared by as many
        // tests (a test whose vars list several values runs once for each,
        // the metadata the same: the Nth variant goes with the Nth base);
        // then the one that shares the most vars with it (promptfoo's
        // `scenarios` run the same tests once per configuration); then the
        // nearest test before it, else the first after it.
        let row_of = |e: u64| (e >> 2) as usize;
        let rank_of = |e: u64| {
            let j = row_of(e);
            let other_place = ordinal[i].is_none() || ordinal[j] != ordinal[i];
            let near = match test(j) < test(i) {
                true => (false, test(i) - test(j)),
                false => (true, test(j)),
            };
            let unshared = usize::MAX - keys[i].shared_vars(&keys[j]);
            (
                e & 3,
                rows[j].base_id.is_some(),
                other_place,
                unshared,
                near,
                j,
            )
        };
        let Some(best) = names[from..to]
            .iter()
            .copied()
            .filter(|&e| row_of(e) != i)
            .min_by_key(|&e| rank_of(e))
        else {
            continue;
        };
        let level = |e: u64| (e & 3, rows[row_of(e)].base_id.is_some());
        if names[from..to]
            .iter()
            .filter(|&&e| row_of(e) != i && level(e) == level(best))
            .count()
            > 1
        {
            ambiguous += 1;
        }
        linked.push((i, row_of(best)));
    }
    drop(names);
    if ambiguous > 0 {
        sink.warn(format!(
            "{} a base_id that several rows of their column carry; each pairs with the one in its own place among as many, else the one that shares the most vars with it, else the nearest test before it (or the first after it)",
            super::rows_name(ambiguous)
        ));
    }
    for (i, j) in linked {
        let (id, case) = (rows[j].id.clone(), rows[j].case_id.clone());
        rows[i].case_id = Some(case.unwrap_or_else(|| id.clone()));
        rows[i].base_id = Some(id);
    }
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
    // (A blank name names nothing: the next one is taken.)
    let name = |names: &[&str]| pick_id(meta, names);
    let id = name(&["variant_id", "variantId", "id", "test_id", "testId"])
        .or_else(|| name(&["case_id", "caseId"]))
        .or_else(|| description.clone().filter(|s| !s.trim().is_empty()))
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
    // The column: promptIdx numbers each prompt on each provider.
    let group = match o.get("promptIdx").and_then(Value::as_u64) {
        Some(i) => column_as_read(provider.as_deref().unwrap_or_default(), i),
        None => format!(
            "{} / {}",
            provider.clone().unwrap_or_default(),
            prompt_label.clone().unwrap_or_default()
        ),
    };
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
                .as_deref()
                .map(first_line)
                .unwrap_or_else(|| "the provider failed".into()),
        ))
    } else {
        None
    };
    let components: Vec<&Map<String, Value>> = grading
        .and_then(|g| g.get("componentResults"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .collect();
    let mut reasons = Vec::new();
    if success == Some(false) && error.is_none() {
        for c in &components {
            if c.get("pass").and_then(Value::as_bool) == Some(false)
                && let Some(r) = pick_str(c, &["reason"])
            {
                reasons.push(component_reason(c, &r));
            }
        }
        if reasons.is_empty()
            && let Some(r) = grading
                .and_then(|g| pick_str(g, &["reason"]))
                .or_else(|| error_text.clone())
        {
            reasons.push(first_line(&r));
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
        .or_else(|| expected_from_asserts(&components, test));
    let mut r = Row {
        id,
        case_id: name(&["case_id", "caseId"]),
        base_id: name(&["base_id", "baseId", "variant_of", "variantOf"]),
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
        side_extra: Map::new(),
        raw: Value::Null,
        ..Row::default()
    };
    // The row itself becomes the origin: moved, not copied.
    r.raw = Value::Object(o);
    r
}

/// The first line of a message: promptfoo appends stack traces and the
/// assertion's source to some reasons; the origin keeps them whole.
fn first_line(s: &str) -> String {
    s.trim()
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// A failed assertion as a reason: its metric (or type), then the first
/// line of promptfoo's reason, as in `label (javascript): Custom function
/// returned false`.
fn component_reason(c: &Map<String, Value>, reason: &str) -> String {
    let a = c.get("assertion").and_then(Value::as_object);
    let kind = a.and_then(|a| pick_str(a, &["type"]));
    let metric = a.and_then(|a| pick_str(a, &["metric"]));
    let head = match (metric, kind) {
        (Some(m), Some(k)) => format!("{m} ({k}): "),
        (Some(m), None) => format!("{m}: "),
        (None, Some(k)) => format!("{k}: "),
        (None, None) => String::new(),
    };
    format!("{head}{}", first_line(reason))
}

/// Assertions whose value is an answer the output is compared with. Code,
/// rubrics and similarity checks hold no answer.
const ANSWER_ASSERTIONS: [&str; 10] = [
    "equals",
    "contains",
    "icontains",
    "starts-with",
    "contains-any",
    "icontains-any",
    "contains-all",
    "icontains-all",
    "regex",
    "is-json",
];

/// The expected answer from the first assertion that compares the output
/// with a value, as rendered for this test (`{{expected}}` filled in), and
/// as `{"type": ..., "value": ...}` when it is not an equality. A
/// javascript, python or rubric assertion's source is never an answer.
fn expected_from_asserts(
    components: &[&Map<String, Value>],
    test: Option<&Map<String, Value>>,
) -> Option<Value> {
    let rendered = components.iter().find_map(|c| {
        let a = c.get("assertion")?.as_object()?;
        let kind = pick_str(a, &["type"])?;
        if !ANSWER_ASSERTIONS.contains(&kind.as_str()) {
            return None;
        }
        let value = c
            .get("metadata")
            .and_then(|m| m.get("renderedAssertionValue"))
            .or_else(|| a.get("value"))?
            .clone();
        Some((kind, value))
    });
    let (kind, value) = rendered.or_else(|| {
        test?
            .get("assert")?
            .as_array()?
            .iter()
            .filter_map(Value::as_object)
            .find_map(|a| {
                let kind = pick_str(a, &["type"])?;
                ANSWER_ASSERTIONS
                    .contains(&kind.as_str())
                    .then(|| Some((kind, a.get("value")?.clone())))?
            })
    })?;
    Some(if kind == "equals" {
        value
    } else {
        json!({"type": kind, "value": value})
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn component(kind: &str, value: &str, rendered: Option<&str>) -> Map<String, Value> {
        let mut c =
            json!({"pass": false, "reason": "no", "assertion": {"type": kind, "value": value}});
        if let Some(r) = rendered {
            c["metadata"] = json!({"renderedAssertionValue": r});
        }
        c.as_object().expect("object").clone()
    }

    #[test]
    fn the_expected_answer_is_a_rendered_value_never_code() {
        let js = component("javascript", "JSON.parse(output).label === 'x'", None);
        let rubric = component("llm-rubric", "is polite", None);
        let contains = component("icontains", "{{expected}}", Some("urgent"));
        assert_eq!(expected_from_asserts(&[&js, &rubric], None), None);
        assert_eq!(
            expected_from_asserts(&[&js, &contains], None),
            Some(json!({"type": "icontains", "value": "urgent"}))
        );
        let equals = component("equals", "Hello", None);
        assert_eq!(
            expected_from_asserts(&[&equals], None),
            Some(json!("Hello"))
        );
        // No grading result yet: the test's own assertions, code skipped.
        let test = json!({"assert": [{"type": "javascript", "value": "1"}, {"type": "equals", "value": "Hi"}]});
        assert_eq!(
            expected_from_asserts(&[], test.as_object()),
            Some(json!("Hi"))
        );
    }

    #[test]
    fn promptfoos_table_exports_are_recognised() {
        let csv = "Description,ticket,[echo] Ticket: {{ticket}},Status,Score,Named Scores,Grader Reason,Comment\n";
        assert_eq!(export_kind(csv), Some("CSV"));
        assert_eq!(export_kind("id,input,output,expected\n1,a,b,c\n"), None);
        assert_eq!(
            export_kind("evalId: eval-x\nresults:\n  version: 3\n"),
            Some("YAML")
        );
        assert_eq!(
            export_kind("<promptfoo>\n  <evalId>x</evalId>\n"),
            Some("XML")
        );
        assert_eq!(export_kind("{\"evalId\": \"x\", \"results\": {}}"), None);
        assert_eq!(export_kind("<html><body>promptfoo</body></html>"), None);
    }

    /// A result row of column `column` for test `test`.
    fn result(test: u64, column: u64, description: &str, meta: Value, success: bool) -> Value {
        json!({
            "testIdx": test, "promptIdx": column, "success": success,
            "provider": {"id": "p", "label": ""},
            "prompt": {"raw": description, "label": "t"},
            "response": {"output": description},
            "testCase": {"description": description, "metadata": meta},
        })
    }

    #[test]
    fn permute_moves_each_element_to_its_place() {
        for order in [
            vec![2, 0, 1],
            vec![0, 1, 2, 3],
            vec![3, 2, 1, 0],
            vec![1, 0, 3, 4, 2],
            vec![],
        ] {
            let mut v: Vec<usize> = (0..order.len()).map(|i| i * 10).collect();
            super::permute(&mut v, &order);
            let want: Vec<usize> = order.iter().map(|i| i * 10).collect();
            assert_eq!(v, want, "{order:?}");
        }
    }

    /// Each record's variant id and repetition.
    fn ids_and_repetitions(records: &[Value]) -> Vec<(&str, Option<u64>)> {
        records
            .iter()
            .map(|r| {
                (
                    r["variant_id"].as_str().expect("id"),
                    r["repetition"].as_u64(),
                )
            })
            .collect()
    }

    fn run(results: Vec<Value>) -> (Vec<Value>, Vec<String>) {
        let text = json!({"evalId": "e", "results": {"results": results}}).to_string();
        let (records, report) =
            super::super::convert_text(&text, Format::Promptfoo, &Default::default())
                .expect("convert");
        (records, report.warnings)
    }

    #[test]
    fn a_base_is_named_by_its_case_id_else_its_description_within_its_column() {
        let (records, warnings) = run(vec![
            result(
                1,
                1,
                "Typo",
                json!({"case_id": "a-typo", "base_id": "a"}),
                false,
            ),
            result(0, 0, "First", json!({"case_id": "a"}), true),
            result(2, 0, "breach", json!({}), true),
            result(3, 0, "Synonym", json!({"base_id": "breach"}), true),
            result(
                1,
                0,
                "Typo",
                json!({"case_id": "a-typo", "base_id": "a"}),
                false,
            ),
            result(0, 1, "First", json!({"case_id": "a"}), true),
            result(2, 1, "breach", json!({}), true),
            result(3, 1, "Synonym", json!({"base_id": "breach"}), true),
        ]);
        assert!(warnings.is_empty(), "{warnings:?}");
        let ids: Vec<&str> = records
            .iter()
            .map(|r| r["variant_id"].as_str().expect("id"))
            .collect();
        assert_eq!(
            ids,
            [
                "a-typo @ p / prompt 0",
                "Synonym @ p / prompt 0",
                "a-typo @ p / prompt 1",
                "Synonym @ p / prompt 1",
            ]
        );
        for r in &records {
            assert_eq!(
                r["origin"]["base"]["promptIdx"],
                r["origin"]["variant"]["promptIdx"]
            );
            assert!(r.get("repetition").is_none());
        }
        assert_eq!(records[0]["case_id"], "a");
        assert_eq!(records[0]["passed"], false);
        assert_eq!(records[1]["case_id"], "breach");
        assert_eq!(records[1]["passed"], true);
    }

    #[test]
    fn a_base_id_several_rows_carry_pairs_with_the_nearest_before_it_and_says_so() {
        let (records, warnings) = run(vec![
            result(0, 0, "one", json!({"case_id": "a"}), true),
            result(1, 0, "two", json!({"case_id": "a"}), false),
            result(
                2,
                0,
                "variant",
                json!({"case_id": "v", "base_id": "a"}),
                true,
            ),
        ]);
        assert_eq!(records.len(), 2, "{records:?}");
        let pair = records
            .iter()
            .find(|r| r["variant_id"] == "v")
            .expect("pair");
        // Named by the id their test gave, though the two are told apart.
        assert_eq!(pair["origin"]["base"]["testIdx"], 1);
        assert_eq!(pair["case_id"], "a");
        let lone = records
            .iter()
            .find(|r| r["variant_id"] == "a (1 of 2)")
            .expect("the first row named a, unpaired");
        assert_eq!(lone["transformation"], super::super::UNPAIRED);
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with("1 row names a base_id that several rows of their column")),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_name_given_to_tests_that_share_an_id_never_takes_another_tests_id() {
        // (Distinct tests: the same test twice would be a repetition.)
        let named = |t: u64, id: &str| {
            let meta = json!({"case_id": "c", "variant_id": id});
            result(t, 0, &format!("test {t}"), meta, true)
        };
        let (records, _) = run(vec![
            named(0, "t (1 of 2)"),
            named(1, "t"),
            named(2, "t"),
            result(
                3,
                0,
                "v",
                json!({"case_id": "c", "variant_id": "v", "base_id": "t (1 of 2)"}),
                true,
            ),
        ]);
        let pair = records
            .iter()
            .find(|r| r["variant_id"] == "v")
            .expect("the pair");
        assert_eq!(pair["origin"]["base"]["testIdx"], 0, "{records:?}");
        let mut ids: Vec<&str> = records
            .iter()
            .map(|r| r["variant_id"].as_str().expect("id"))
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, ["t (1 of 2) · test 1", "t (2 of 2)", "v"]);
    }

    #[test]
    fn a_list_of_vars_pairs_the_nth_variant_with_the_nth_base() {
        // `vars: {ticket: [...]}` on the base and on its variant: each runs
        // once per value, the metadata the same; no two share a var.
        let with = |mut r: Value, ticket: &str| {
            r["testCase"]["vars"] = json!({ "ticket": ticket });
            r
        };
        let base = |t, ticket| {
            let meta = json!({"case_id": "c", "variant_id": "b"});
            with(result(t, 0, "base", meta, true), ticket)
        };
        let shout = |t, ticket| {
            let meta = json!({"case_id": "c", "variant_id": "v", "base_id": "b"});
            with(result(t, 0, "shout", meta, true), ticket)
        };
        let (records, _) = run(vec![
            base(0, "db outage"),
            base(1, "printer jam"),
            shout(2, "DB OUTAGE"),
            shout(3, "PRINTER JAM"),
        ]);
        let pairs: Vec<(u64, u64)> = records
            .iter()
            .map(|r| {
                (
                    r["origin"]["base"]["testIdx"].as_u64().expect("a pair"),
                    r["origin"]["variant"]["testIdx"].as_u64().expect("a pair"),
                )
            })
            .collect();
        assert_eq!(pairs, [(0, 2), (1, 3)], "{records:?}");
    }

    #[test]
    fn scenarios_pair_each_variant_with_the_base_of_its_own_configuration() {
        // promptfoo's `scenarios`: each configuration's tests in turn,
        // the same metadata in each; a variant named before its base
        // pairs with the first after it.
        // (Their vars differ: the same test with the same vars is a repetition.)
        let place = |mut r: Value, at: &str| {
            r["testCase"]["vars"] = json!({ "place": at });
            r
        };
        let base = |t, at| {
            let meta = json!({"case_id": "net", "variant_id": "b"});
            place(result(t, 0, "base", meta, true), at)
        };
        let typo = |t, at, ok| {
            let meta = json!({"case_id": "net", "variant_id": "t", "base_id": "b"});
            place(result(t, 0, "typo", meta, ok), at)
        };
        let (records, _) = run(vec![
            base(0, "office"),
            typo(1, "office", true),
            base(2, "lab"),
            typo(3, "lab", false),
            typo(4, "home", true),
            base(5, "home"),
        ]);
        let pairs: Vec<(u64, u64, &str)> = records
            .iter()
            .map(|r| {
                (
                    r["origin"]["base"]["testIdx"].as_u64().expect("a pair"),
                    r["origin"]["variant"]["testIdx"].as_u64().expect("a pair"),
                    r["variant_id"].as_str().expect("id"),
                )
            })
            .collect();
        assert_eq!(
            pairs,
            [
                (0, 1, "t (1 of 3)"),
                (2, 3, "t (2 of 3)"),
                (5, 4, "t (3 of 3)")
            ],
            "{records:?}"
        );
    }

    #[test]
    fn a_repeated_test_keeps_its_id_in_every_repetition_and_a_blank_id_names_nothing() {
        // `repeat: 2`: the same tests again, later test indexes.
        let (records, _) = run(vec![
            result(
                0,
                0,
                "base",
                json!({"case_id": "c", "variant_id": "b"}),
                true,
            ),
            result(
                1,
                0,
                "typo",
                json!({"case_id": "c", "variant_id": "t", "base_id": "b"}),
                true,
            ),
            result(
                2,
                0,
                "blank",
                json!({"case_id": "g", "variant_id": " "}),
                true,
            ),
            result(
                3,
                0,
                "base",
                json!({"case_id": "c", "variant_id": "b"}),
                true,
            ),
            result(
                4,
                0,
                "typo",
                json!({"case_id": "c", "variant_id": "t", "base_id": "b"}),
                false,
            ),
            result(
                5,
                0,
                "blank",
                json!({"case_id": "g", "variant_id": " "}),
                true,
            ),
        ]);
        assert_eq!(
            ids_and_repetitions(&records),
            [
                ("t", Some(0)),
                ("g", Some(0)),
                ("t", Some(1)),
                ("g", Some(1))
            ],
            "{records:?}"
        );
    }

    #[test]
    fn a_test_copied_with_other_assertions_is_another_test_not_a_repetition() {
        let mut rows = vec![
            result(
                0,
                0,
                "base",
                json!({"case_id": "c", "variant_id": "b"}),
                true,
            ),
            result(
                1,
                0,
                "typo",
                json!({"case_id": "c", "variant_id": "t", "base_id": "b"}),
                true,
            ),
            result(
                2,
                0,
                "typo",
                json!({"case_id": "c", "variant_id": "t", "base_id": "b"}),
                false,
            ),
        ];
        rows[1]["testCase"]["assert"] = json!([{"type": "contains", "value": "a"}]);
        rows[2]["testCase"]["assert"] = json!([{"type": "contains", "value": "z"}]);
        let (records, _) = run(rows);
        // No repetition at all: each pairs with the base once.
        assert_eq!(
            ids_and_repetitions(&records),
            [("t (1 of 2)", None), ("t (2 of 2)", None)],
            "{records:?}"
        );
    }

    #[test]
    fn a_column_is_named_by_its_provider_and_its_prompts_label_or_place() {
        let cols = |list: &[(u64, &str, Option<&str>)]| -> BTreeMap<u64, (String, Option<String>)> {
            list.iter()
                .map(|&(c, p, l)| (c, (p.to_string(), l.map(str::to_string))))
                .collect()
        };
        let names = |list: &[(u64, &str, Option<&str>)]| super::column_names(&cols(list));
        // Two prompts on two providers: promptIdx runs on across providers,
        // the names do not.
        assert_eq!(
            names(&[
                (0, "a", Some("plain")),
                (1, "a", Some("instructed")),
                (2, "b", Some("plain")),
                (3, "b", Some("instructed")),
            ]),
            [
                (0, "a / plain".to_string()),
                (1, "a / instructed".to_string()),
                (2, "b / plain".to_string()),
                (3, "b / instructed".to_string()),
            ]
        );
        // A prompt labelled by its template, or by a long text, is numbered
        // by its place among the prompts.
        let long = "Classify the ticket urgency as urgent or routine";
        assert_eq!(
            names(&[
                (0, "a", Some("Ticket: {{ticket}}")),
                (1, "a", Some(long)),
                (2, "b", Some("Ticket: {{ticket}}")),
                (3, "b", Some(long)),
            ]),
            [
                (0, "a / prompt 0".to_string()),
                (1, "a / prompt 1".to_string()),
                (2, "b / prompt 0".to_string()),
                (3, "b / prompt 1".to_string()),
            ]
        );
        // Without a label, or when two columns would share a name, a column
        // keeps the name it was read with (`prompt <promptIdx>`).
        assert_eq!(names(&[(0, "a", None), (1, "a", Some(" "))]), []);
        assert_eq!(names(&[(0, "a", Some("same")), (1, "a", Some("same"))]), []);
        // A name that is another column's as read is not taken from it.
        assert_eq!(
            names(&[
                (0, "a", Some("{{x}}")),
                (1, "a", Some("{{y}}")),
                (2, "a", None)
            ]),
            [
                (0, "a / prompt 0".to_string()),
                (1, "a / prompt 1".to_string())
            ]
        );
        assert_eq!(
            names(&[
                (0, "a", None),
                (1, "a", Some("{{y}}")),
                (2, "a", Some("{{z}}"))
            ]),
            []
        );
    }
}
