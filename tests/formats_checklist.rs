//! multivon validations written as one JSON array, and other JSON documents
//! that hold records of a known format. The multivon fixtures are written by
//! the real tool (see `make_array.py` beside them).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use triage::core::derive::derive;
use triage::core::formats::{self, ConvertReport, Format, RecordsAt};
use triage::core::index::{self, OpenOptions};
use triage::core::record::map_record;

const BIN: &str = env!("CARGO_BIN_EXE_triage");

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(rel: &str) -> PathBuf {
    root().join("tests/fixtures/formats").join(rel)
}

fn detection(path: &Path) -> formats::Detection {
    let bytes = std::fs::read(path).expect("fixture");
    formats::detect(&bytes[..bytes.len().min(formats::DETECT_HEAD_BYTES)])
}

/// Convert twice (byte-identical), load the records through the index (no
/// problems) and return them.
fn convert(path: &Path, format: Format) -> (ConvertReport, Vec<Value>) {
    let mut out = Vec::new();
    let report = formats::convert(path, format, &mut out).expect("convert");
    let mut again = Vec::new();
    formats::convert(path, format, &mut again).expect("convert again");
    assert_eq!(out, again, "converting twice must be byte-identical");
    let text = String::from_utf8(out).expect("utf-8");
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a converted line is JSON"))
        .collect();
    assert_eq!(records.len(), report.records);
    let mut tmp = tempfile::NamedTempFile::new().expect("temp");
    tmp.write_all(text.as_bytes()).expect("write");
    let p = tmp.path().to_string_lossy().to_string();
    let idx = index::load_run(&[p], &OpenOptions::default()).expect("load the converted run");
    assert_eq!(idx.rows.len(), records.len());
    assert!(idx.problems.is_empty(), "{:?}", idx.problems);
    (report, records)
}

fn run(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .env("XDG_CONFIG_HOME", cwd.join("config"))
        .env("XDG_DATA_HOME", cwd.join("data"))
        .output()
        .expect("run triage")
}

/// `triage summary` (plus `extra`) on `path`; its standard output.
fn summary(path: &Path, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let p = path.to_string_lossy();
    let mut args = vec!["summary", &p];
    args.extend_from_slice(extra);
    let out = run(&args, dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{args:?}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn pairs_and_failures(records: usize, failures: usize) -> String {
    let pairs = if records == 1 { "pair" } else { "pairs" };
    let fails = if failures == 1 { "failure" } else { "failures" };
    format!(": {records} {pairs}, {failures} {fails},")
}

// ------------------------------------------------------------ JSON arrays

#[test]
fn multivons_validations_json_array_is_detected() {
    let mut converted = Vec::new();
    for (file, at) in [
        ("validations.json", Some(RecordsAt::Array)),
        ("validations-indented.json", Some(RecordsAt::Array)),
        // A document that holds them: multivon's own sniff finds its schema.
        ("validations-wrapped.json", None),
    ] {
        let path = fixture(&format!("multivon/{file}"));
        let found = detection(&path);
        assert_eq!(found.format, Some(Format::Multivon), "{file}");
        assert_eq!(found.records, at, "{file}");
        let (report, records) = convert(&path, Format::Multivon);
        assert_eq!(report.pairs, 6, "{file}");
        let mut statuses = BTreeMap::new();
        for r in &records {
            let d = derive(&map_record(r.clone()).unwrap());
            *statuses.entry(d.status.name()).or_insert(0) += 1;
        }
        assert_eq!(
            statuses,
            BTreeMap::from([("invalid", 2), ("unchecked", 4)]),
            "{file}"
        );
        let head = summary(&path, &[]);
        assert!(
            head.lines()
                .next()
                .unwrap_or_default()
                .contains(&pairs_and_failures(6, 2)),
            "{file}: {head}"
        );
        converted.push(records);
    }
    assert_eq!(converted[0], converted[1]);
    assert_eq!(converted[0], converted[2]);
}

/// The lines of a JSONL fixture as JSON values.
fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("fixture")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

#[test]
fn json_documents_holding_native_records_open_as_their_lines() {
    let bare = root().join("sample-runs/bare-camelcase.jsonl");
    let rows = jsonl(&bare);
    let dir = tempfile::tempdir().expect("temp dir");
    let array = dir.path().join("pairs.json");
    std::fs::write(&array, serde_json::to_string_pretty(&rows).unwrap()).unwrap();
    let wrapped = dir.path().join("wrapped.json");
    let doc = json!({"runner": "runInvariantSensitivityCase", "results": rows});
    std::fs::write(&wrapped, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    assert_eq!(
        detection(&array).records.map(|r| (r, Format::Native)),
        Some((RecordsAt::Array, Format::Native))
    );
    let found = detection(&wrapped);
    assert_eq!(found.format, Some(Format::Native));
    assert_eq!(found.records, Some(RecordsAt::Member("results".into())));
    let native = summary(&bare, &[]);
    let native_head = native.lines().next().unwrap().split_once(':').unwrap().1;
    for p in [&array, &wrapped] {
        let out = summary(p, &[]);
        assert_eq!(
            out.lines().next().unwrap().split_once(':').unwrap().1,
            native_head
        );
        assert!(
            native_head.contains("12 pairs, 7 failures"),
            "{native_head}"
        );
        // --run-format native reads the same document the same way.
        let out = summary(p, &["--run-format", "native"]);
        assert_eq!(
            out.lines().next().unwrap().split_once(':').unwrap().1,
            native_head
        );
    }
}

#[test]
fn json_arrays_of_trial_rows_convert_as_the_rows_do() {
    let jsonl_path = fixture("context-probe/demo-results.jsonl");
    let dir = tempfile::tempdir().expect("temp dir");
    let array = dir.path().join("trials.json");
    std::fs::write(&array, serde_json::to_string(&jsonl(&jsonl_path)).unwrap()).unwrap();
    let found = detection(&array);
    assert_eq!(found.format, Some(Format::ContextProbe));
    assert_eq!(found.records, Some(RecordsAt::Array));
    let (_, from_lines) = convert(&jsonl_path, Format::ContextProbe);
    let (_, from_array) = convert(&array, Format::ContextProbe);
    assert_eq!(from_lines, from_array);

    // An array of objects no format knows is still not detected.
    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"[{"a": 1}, {"a": 2}]"#).unwrap();
    let found = detection(&other);
    assert_eq!((found.format, found.records), (None, None));
}
