//! Reports, exports and CI gates: `triage export`, `triage summary`, `triage check`.
//!
//! Every test works on copies of the samples in a temp dir and runs the real
//! binary there with relative paths, so outputs name `support-urgency.jsonl`
//! and never a temp path, and no journal lands beside `sample-runs/`. The
//! rich sample gets a journal written here with fixed times and reviewer
//! "ana"; golden outputs are insta snapshots (`tests/snapshots/export__*`).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use tempfile::TempDir;

use triage::core::index::{OpenOptions, load_run};
use triage::core::query::{self, Context};

const BIN: &str = env!("CARGO_BIN_EXE_triage");
const RICH: &str = "support-urgency.jsonl";
const BARE: &str = "bare-camelcase.jsonl";
const FULL: &str = "camelcase-full.jsonl";
const PROBLEMS: &str = "with-problems.jsonl";

/// One annotation: (line, expected case id, category, note, source).
type Ann = (
    u32,
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
    &'static str,
);

/// The rich sample's journal.
const ANNOTATIONS: &[Ann] = &[
    (
        3,
        "checkout-outage-001",
        Some("distractor"),
        Some("UI theme moved p by 0.44 | check `state` <diagnosticUiTheme> *before* release"),
        "manual",
    ),
    (
        8,
        "checkout-outage-001",
        Some("missing-evidence"),
        Some("without the monitor evidence the scope is unknown; action is not allowed"),
        "manual",
    ),
    (
        10,
        "login-failures-002",
        Some("boundary"),
        Some("source sits 0.030 above the review threshold"),
        "manual",
    ),
    (
        17,
        "billing-double-charge-003",
        Some("conflicting-evidence"),
        None,
        "manual",
    ),
    (
        23,
        "slow-dashboard-004",
        Some("service-error"),
        None,
        "suggestion",
    ),
    (
        36,
        "feature-request-007",
        Some("ambiguous-contract"),
        Some("\"important\" was read as \"urgent\""),
        "manual",
    ),
    (
        40,
        "api-rate-limiting-008",
        Some("rate-limit-semantics"),
        Some("a team category that is not in the default taxonomy"),
        "manual",
    ),
    (48, "vague-ticket-010", Some("boundary"), None, "suggestion"),
    (
        54,
        "mobile-app-crash-011",
        None,
        Some("ask the runner team whether review is allowed here"),
        "manual",
    ),
    (
        61,
        "webhook-delivery-012",
        Some("invalid-pair"),
        Some("the variant also changed durationMinutes from 120 to 15"),
        "manual",
    ),
    (
        69,
        "account-lockout-014",
        Some("boundary"),
        Some("exactly on the action threshold"),
        "manual",
    ),
];

/// A temp dir with copies of every sample; the rich one has a journal.
struct Fixture {
    dir: TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        for f in [RICH, BARE, FULL, PROBLEMS] {
            fs::copy(Path::new("sample-runs").join(f), dir.path().join(f)).expect("copy a sample");
        }
        fs::create_dir_all(dir.path().join("config")).expect("config dir");
        fs::create_dir_all(dir.path().join("data")).expect("data dir");
        let fx = Fixture { dir };
        fx.write_journal();
        fx
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write_journal(&self) {
        let run = self.path(RICH);
        let index = load_run(
            &[run.to_string_lossy().to_string()],
            &OpenOptions::default(),
        )
        .expect("load the rich sample");
        let mut lines = String::new();
        for (k, (line, case, category, note, source)) in ANNOTATIONS.iter().enumerate() {
            let i = (0..index.rows.len())
                .find(|&i| index.loc(i).line == *line)
                .expect("an annotated line");
            let row = &index.rows[i];
            assert_eq!(index.str(row.case), *case, "line {line}");
            let bytes = index.read_line(index.loc(i)).expect("the line reads");
            let key = triage::core::index::keys::line_key(&bytes).expect("a key");
            let event = json!({
                "v": 1,
                "key": key.to_string(),
                "case_id": index.str(row.case),
                "variant_id": index.str(row.variant),
                "category": category,
                "note": note,
                "reviewer": "ana",
                "at": format!("2026-11-29T13:{:02}:00Z", 5 + 4 * k),
                "source": source,
                "prev": null,
            });
            lines.push_str(&event.to_string());
            lines.push('\n');
        }
        fs::write(self.path(&format!("{RICH}.triage.jsonl")), lines).expect("write the journal");
    }

    /// Run the binary in the fixture's folder, isolated from the user's config and data.
    fn run(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.path("config"))
            .env("XDG_DATA_HOME", self.path("data"))
            .env_remove("NO_COLOR")
            .output()
            .expect("run triage")
    }

    /// Run and return stdout, asserting the exit code.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "triage {args:?}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("UTF-8 output")
    }
}

fn code(out: &Output) -> Option<i32> {
    out.status.code()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// ---------------------------------------------------------------------------
// Golden outputs

/// Parse the report as GitHub would (CommonMark + tables + strikethrough) and
/// check that it holds no HTML, link, image or strikethrough, and that every
/// table keeps its header's cell count; return the rendered text.
fn renders_safely(md: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut text = String::new();
    let mut cells = 0usize;
    let mut head_cells = 0usize;
    for ev in Parser::new_ext(md, opts) {
        match ev {
            Event::Html(h) | Event::InlineHtml(h) => panic!("HTML in the report: {h}"),
            Event::Start(Tag::Link { dest_url, .. }) => panic!("a link to {dest_url}"),
            Event::Start(Tag::Image { dest_url, .. }) => panic!("an image {dest_url}"),
            Event::Start(Tag::Strikethrough) => panic!("strikethrough"),
            Event::TaskListMarker(_) => panic!("a task list marker"),
            Event::Start(Tag::TableHead) | Event::Start(Tag::TableRow) => cells = 0,
            Event::Start(Tag::TableCell) => cells += 1,
            Event::End(TagEnd::TableHead) => head_cells = cells,
            Event::End(TagEnd::TableRow) => assert_eq!(cells, head_cells, "a ragged table row"),
            Event::Text(t) | Event::Code(t) => text.push_str(&t),
            Event::SoftBreak | Event::HardBreak | Event::End(_) => text.push('\n'),
            _ => {}
        }
    }
    text
}

#[test]
fn markdown_report_of_the_rich_sample() {
    let fx = Fixture::new();
    let md = fx.ok(&["export", RICH, "--format", "markdown"]);
    let text = renders_safely(&md);
    // The note's Markdown-like characters are shown as written.
    assert!(
        text.contains(
            "UI theme moved p by 0.44 | check `state` <diagnosticUiTheme> *before* release"
        ),
        "{text}"
    );
    insta::assert_snapshot!("markdown_rich", md);
}

#[test]
fn markdown_report_of_the_bare_sample() {
    let fx = Fixture::new();
    let md = fx.ok(&["export", BARE]);
    renders_safely(&md);
    insta::assert_snapshot!("markdown_bare", md);
    let all = fx.ok(&["export", BARE, "--all"]);
    renders_safely(&all);
    assert!(all.contains("## Other pairs (5)"), "{all}");
    insta::assert_snapshot!("markdown_bare_all", all);
}

#[test]
fn markdown_report_of_a_run_with_problems_lists_them() {
    let fx = Fixture::new();
    let md = fx.ok(&["export", PROBLEMS, "--filter", "case:checkout*"]);
    insta::assert_snapshot!("markdown_problems", md);
}

#[test]
fn csv_of_the_rich_sample() {
    let fx = Fixture::new();
    insta::assert_snapshot!("csv_rich", fx.ok(&["export", RICH, "--format", "csv"]));
}

#[test]
fn csv_of_the_bare_sample() {
    let fx = Fixture::new();
    insta::assert_snapshot!(
        "csv_bare",
        fx.ok(&["export", BARE, "--format", "csv", "--all"])
    );
}

#[test]
fn json_of_the_rich_sample() {
    let fx = Fixture::new();
    let out = fx.ok(&["export", RICH, "--format", "json"]);
    let v: Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(v["pairs"].as_array().map(Vec::len), Some(29));
    insta::assert_snapshot!("json_rich", out);
}

#[test]
fn json_of_the_bare_sample() {
    let fx = Fixture::new();
    let out = fx.ok(&["export", BARE, "--format", "json"]);
    serde_json::from_str::<Value>(&out).expect("one JSON document");
    insta::assert_snapshot!("json_bare", out);
}

#[test]
fn fixtures_of_the_rich_sample() {
    let fx = Fixture::new();
    let out = fx.ok(&[
        "export",
        RICH,
        "--format",
        "fixtures",
        "--filter",
        "category:boundary|distractor",
    ]);
    assert_eq!(out.lines().count(), 4);
    insta::assert_snapshot!("fixtures_rich", out);
}

#[test]
fn fixtures_of_the_bare_sample() {
    let fx = Fixture::new();
    insta::assert_snapshot!(
        "fixtures_bare",
        fx.ok(&["export", BARE, "--format", "fixtures"])
    );
}

#[test]
fn fixtures_are_snake_case_even_from_camel_case() {
    let fx = Fixture::new();
    let out = fx.ok(&["export", FULL, "--format", "fixtures", "--all"]);
    assert_eq!(out.lines().count(), 6);
    for line in out.lines() {
        for camel in [
            "caseId",
            "reviewThreshold",
            "maximumNoulDrift",
            "minimumBoundaryMargin",
            "allowedChanges",
            "noul",
        ] {
            assert!(!line.contains(&format!("\"{camel}\"")), "{camel} in {line}");
        }
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        for key in [
            "case_id",
            "variant_id",
            "policy",
            "expectation",
            "minimum_boundary_margin",
            "allowed_changes",
            "source",
            "variant",
            "expected",
            "triage",
        ] {
            assert!(v.get(key).is_some(), "{key} missing in {line}");
        }
    }
    let first: Value = serde_json::from_str(out.lines().next().unwrap_or("")).expect("JSON");
    assert_eq!(first["policy"]["review_threshold"], json!(0.55));
    assert_eq!(first["expectation"]["max_probability_drift"], json!(0.1));
    assert_eq!(first["source"]["response"]["probability"], json!(0.96));
    insta::assert_snapshot!("fixtures_camelcase_full", out);
}

#[test]
fn summary_text_and_json() {
    let fx = Fixture::new();
    let text = fx.ok(&["summary", RICH]);
    for line in text.lines() {
        assert!(
            triage::core::text::width(line) <= 100,
            "wider than 100 columns: {line}"
        );
    }
    insta::assert_snapshot!("summary_text_rich", text);
    insta::assert_snapshot!(
        "summary_text_by_category",
        fx.ok(&["summary", RICH, "--by", "category"])
    );
    let json = fx.ok(&["summary", RICH, "--format", "json", "--by", "family"]);
    let v: Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["pairs"], json!(72));
    let g = &v["groups"][0];
    for key in ["name", "pairs", "failures", "route_flips", "service_errors"] {
        assert!(g.get(key).is_some(), "{key} missing");
    }
    for key in ["value", "low", "high"] {
        assert!(g["failure_rate"].get(key).is_some(), "failure_rate.{key}");
    }
    insta::assert_snapshot!("summary_json_rich", json);
    insta::assert_snapshot!(
        "summary_markdown_bare",
        fx.ok(&["summary", BARE, "--format", "markdown"])
    );
}

#[test]
fn summary_filter_narrows_the_statistics() {
    let fx = Fixture::new();
    let json = fx.ok(&[
        "summary",
        RICH,
        "--format",
        "json",
        "--filter",
        "family:state-noise",
    ]);
    let v: Value = serde_json::from_str(&json).expect("JSON");
    let expected = query_rows(&fx.path(RICH), "family:state-noise", true).len();
    assert_eq!(v["pairs"], json!(expected));
}

#[test]
fn check_output_names_each_gate() {
    let fx = Fixture::new();
    let out = fx.run(&[
        "check",
        RICH,
        "--max-unclassified",
        "20",
        "--fail-on",
        "boundary",
        "--max-failure-rate",
        "0.5",
        "--strict",
    ]);
    assert_eq!(code(&out), Some(1));
    insta::assert_snapshot!("check_rich", stdout(&out));
    let out = fx.run(&["check", PROBLEMS, "--strict"]);
    assert_eq!(code(&out), Some(1));
    insta::assert_snapshot!("check_problems_strict", stdout(&out));
}

// ---------------------------------------------------------------------------
// Behaviour

#[test]
fn markdown_is_deterministic_and_o_writes_the_same_bytes() {
    let fx = Fixture::new();
    let a = fx.ok(&["export", RICH]);
    let b = fx.ok(&["export", RICH]);
    assert_eq!(a, b);
    let out = fx.run(&["export", RICH, "-o", "report.md"]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
    assert_eq!(fs::read_to_string(fx.path("report.md")).expect("report"), a);
    // An existing report is replaced.
    let out = fx.run(&["export", RICH, "--all", "-o", "report.md"]);
    assert_eq!(code(&out), Some(0), "{}", stderr(&out));
    assert_ne!(fs::read_to_string(fx.path("report.md")).expect("report"), a);
    // `-o -` is standard output, not a file named `-`.
    assert_eq!(fx.ok(&["export", RICH, "-o", "-"]), a);
    assert!(!fx.path("-").exists());
    // No clock unless asked for.
    assert!(!a.contains("Generated"));
    let stamped = fx.ok(&["export", RICH, "--timestamp"]);
    assert!(stamped.contains("- **Generated:** 20"), "{stamped}");
}

#[test]
fn export_refuses_to_overwrite_the_run_or_the_journal() {
    let fx = Fixture::new();
    let before = fs::read(fx.path(RICH)).expect("run");
    let out = fx.run(&["export", RICH, "-o", RICH]);
    assert_eq!(code(&out), Some(2));
    assert!(
        stderr(&out).contains("is the run file itself"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read(fx.path(RICH)).expect("run"), before);
    let journal = format!("{RICH}.triage.jsonl");
    let out = fx.run(&["export", RICH, "-o", &journal]);
    assert_eq!(code(&out), Some(2));
    assert!(stderr(&out).contains("journal"), "{}", stderr(&out));
}

#[test]
fn check_exit_codes() {
    let fx = Fixture::new();
    let exit = |args: &[&str]| code(&fx.run(args));
    // Gates that hold.
    assert_eq!(
        exit(&[
            "check",
            RICH,
            "--max-unclassified",
            "100",
            "--max-failure-rate",
            "0.9"
        ]),
        Some(0)
    );
    assert_eq!(
        exit(&[
            "check",
            RICH,
            "--fail-on",
            "distractor",
            "--fail-on",
            "missing-evidence"
        ]),
        Some(1)
    );
    assert_eq!(exit(&["check", BARE]), Some(0));
    // Gates that fail.
    assert_eq!(exit(&["check", RICH, "--max-unclassified", "0"]), Some(1));
    assert_eq!(exit(&["check", RICH, "--fail-on", "boundary"]), Some(1));
    assert_eq!(exit(&["check", RICH, "--max-failure-rate", "0.1"]), Some(1));
    assert_eq!(exit(&["check", PROBLEMS, "--strict"]), Some(1));
    // Problems alone do not fail a check without --strict, and it says so.
    let out = fx.run(&["check", PROBLEMS]);
    assert_eq!(code(&out), Some(0));
    assert!(stdout(&out).contains("no gates given"), "{}", stdout(&out));
    assert!(stdout(&out).contains("problems"), "{}", stdout(&out));
    // Unusable input or arguments.
    let out = fx.run(&["check", "missing.jsonl"]);
    assert_eq!(code(&out), Some(2));
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
    let out = fx.run(&["check", RICH, "--fail-on", "boundry"]);
    assert_eq!(code(&out), Some(2));
    let err = stderr(&out);
    assert!(err.contains("`boundry` is not a category id"), "{err}");
    assert!(err.contains("ambiguous-contract, distractor"), "{err}");
    assert_eq!(exit(&["check", RICH, "--max-failure-rate", "1.5"]), Some(2));
    assert_eq!(exit(&["check", RICH, "--max-unclassified", "-1"]), Some(2));
}

#[test]
fn a_bad_filter_is_exit_2_with_its_position() {
    let fx = Fixture::new();
    let out = fx.run(&["export", RICH, "--filter", "status:fail famly:question"]);
    assert_eq!(code(&out), Some(2));
    let err = stderr(&out);
    assert!(err.starts_with("triage: --filter: "), "{err}");
    assert!(err.contains("at character 13"), "{err}");
    assert!(err.contains("\n              ^"), "{err}");
    assert!(stdout(&out).is_empty());
    let out = fx.run(&["summary", RICH, "--filter", "dp<"]);
    assert_eq!(code(&out), Some(2), "{}", stderr(&out));
    let out = fx.run(&["export", "nope.jsonl"]);
    assert_eq!(code(&out), Some(2));
}

/// The rows the query language itself selects, in run order.
fn query_rows(run: &Path, q: &str, all: bool) -> Vec<(String, u32)> {
    let index = load_run(
        &[run.to_string_lossy().to_string()],
        &OpenOptions::default(),
    )
    .expect("load");
    let journal = PathBuf::from(format!("{}.triage.jsonl", run.display()));
    let store = triage::core::annotations::AnnotationStore::read(&journal).ok();
    let rows: Vec<u32> = (0..index.rows.len() as u32)
        .filter(|&i| all || index.rows[i as usize].status().is_failure())
        .collect();
    let q = query::parse(q).expect("a valid query");
    let hits = q.filter(
        &Context {
            index: &index,
            store: store.as_ref(),
            changes: None,
        },
        &rows,
    );
    hits.iter()
        .map(|&i| {
            let r = &index.rows[i as usize];
            (index.str(r.case).to_string(), index.loc(i as usize).line)
        })
        .collect()
}

fn csv_records(text: &str) -> (Vec<String>, Vec<HashMap<String, String>>) {
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = rdr
        .headers()
        .expect("a header")
        .iter()
        .map(str::to_string)
        .collect();
    let rows = rdr
        .records()
        .map(|r| {
            let r = r.expect("an RFC 4180 record");
            header
                .iter()
                .cloned()
                .zip(r.iter().map(str::to_string))
                .collect()
        })
        .collect();
    (header, rows)
}

#[test]
fn the_filter_selects_exactly_what_the_query_selects() {
    let fx = Fixture::new();
    for (q, all) in [
        ("family:state-noise", false),
        ("family:state-noise", true),
        ("category:boundary", false),
        ("flip:yes dp<-0.1", true),
    ] {
        let mut args = vec!["export", RICH, "--format", "csv", "--filter", q];
        if all {
            args.push("--all");
        }
        let (_, rows) = csv_records(&fx.ok(&args));
        let got: Vec<(String, u32)> = rows
            .iter()
            .map(|r| {
                (
                    r["case_id"].clone(),
                    r["line"].parse().expect("a line number"),
                )
            })
            .collect();
        let want = query_rows(&fx.path(RICH), q, all);
        assert!(!want.is_empty(), "{q} selects nothing");
        assert_eq!(got, want, "{q} (all: {all})");
    }
}

#[test]
fn csv_round_trips_and_agrees_with_json() {
    let fx = Fixture::new();
    let csv_text = fx.ok(&["export", RICH, "--format", "csv", "--all"]);
    let (header, rows) = csv_records(&csv_text);
    assert_eq!(
        header,
        triage::core::export::CSV_COLUMNS
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    );
    assert_eq!(header.first().map(String::as_str), Some("file"));
    assert_eq!(header.last().map(String::as_str), Some("record_key"));
    assert_eq!(rows.len(), 72);
    let json: Value =
        serde_json::from_str(&fx.ok(&["export", RICH, "--format", "json", "--all"])).expect("JSON");
    let pairs = json["pairs"].as_array().expect("pairs");
    assert_eq!(pairs.len(), rows.len());
    let text = |v: &Value| match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    for (row, pair) in rows.iter().zip(pairs) {
        assert_eq!(row["case_id"], text(&pair["case_id"]));
        assert_eq!(row["variant_id"], text(&pair["variant_id"]));
        assert_eq!(row["line"], text(&pair["line"]));
        assert_eq!(row["status"], text(&pair["status"]));
        assert_eq!(row["passed"], text(&pair["passed"]));
        let num = |s: &str| s.parse::<f64>().ok();
        assert_eq!(num(&row["dp"]), pair["dp"].as_f64());
        assert_eq!(num(&row["source_margin"]), pair["source_margin"].as_f64());
        assert_eq!(row["source_route"], text(&pair["source"]["route"]));
        assert_eq!(row["category"], text(&pair["category"]));
        assert_eq!(row["note"], text(&pair["note"]));
        assert_eq!(row["record_key"], text(&pair["record_key"]));
        assert_eq!(
            row["suggested_category"],
            text(&pair["suggestion"]["category"])
        );
    }
    // A multi-line, comma- and quote-bearing note survives the round trip (inert, on one line).
    let noted = rows
        .iter()
        .find(|r| r["case_id"] == "feature-request-007" && !r["note"].is_empty())
        .expect("the annotated pair");
    assert_eq!(noted["note"], "\"important\" was read as \"urgent\"");
    assert_eq!(noted["category"], "ambiguous-contract");
    assert_eq!(noted["reviewer"], "ana");
    assert_eq!(noted["category_source"], "manual");
    let accepted = rows.iter().find(|r| r["line"] == "23").expect("line 23");
    assert_eq!(accepted["category_source"], "suggestion");
    assert_eq!(accepted["status"], "error");
}

#[test]
fn hostile_strings_are_inert_and_escaped_in_markdown() {
    let fx = Fixture::new();
    let evil = json!({
        "case_id": "pipe|case`tick` <script>alert(1)</script>",
        "variant_id": "\u{1b}[31mred\u{202e}txt\nnext",
        "family": "*bold* [link](http://x) &amp;",
        "transformation": "a|b",
        "passed": false,
        "reasons": ["| break the table", "<img src=x onerror=alert(1)>"],
        "source": {"question": "What is `it`?", "response": {"probability": 0.9, "confidence": 0.8}},
        "variant": {"question": "What is <b>it</b>?", "response": {"probability": 0.2, "confidence": 0.8}},
    });
    let long = json!({
        "case_id": "x".repeat(500),
        "variant_id": "v",
        "passed": false,
        "reasons": ["y".repeat(1000)],
    });
    fs::write(fx.path("evil.jsonl"), format!("{evil}\n{long}\n")).expect("write");
    let md = fx.ok(&["export", "evil.jsonl"]);
    assert!(!md.contains('\u{1b}'), "raw ESC in the report");
    assert!(!md.contains('\u{202e}'), "raw bidi override in the report");
    let text = renders_safely(&md);
    // The hostile text is shown, as text.
    assert!(text.contains("<script>alert(1)</script>"), "{text}");
    assert!(text.contains("<img src=x onerror=alert(1)>"), "{text}");
    assert!(text.contains("[link](http://x)"), "{text}");
    assert!(md.contains("\\x1b[31mred\\u202etxt\\nnext"), "{md}");
    assert!(md.contains("\\| break the table"), "{md}");
    assert!(!md.contains(&"x".repeat(200)), "an uncapped value");
    assert!(md.contains('…'));
    // Every table row keeps its column count.
    for block in md.split("\n\n") {
        let rows: Vec<&str> = block.lines().filter(|l| l.starts_with('|')).collect();
        if rows.len() < 2 {
            continue;
        }
        let cells = |l: &str| {
            let mut n = 0;
            let mut prev = ' ';
            for c in l.chars() {
                if c == '|' && prev != '\\' {
                    n += 1;
                }
                prev = c;
            }
            n
        };
        let want = cells(rows[0]);
        for r in &rows {
            assert_eq!(cells(r), want, "a broken table row: {r}");
        }
    }
    insta::assert_snapshot!("markdown_hostile", md);
    // CSV: inert and never a formula.
    let csv_out = fx.ok(&["export", "evil.jsonl", "--format", "csv"]);
    assert!(!csv_out.contains('\u{1b}'));
    let (_, rows) = csv_records(&csv_out);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["variant_id"], "\\x1b[31mred\\u202etxt\\nnext");
    // JSON keeps the exact strings.
    let json: Value =
        serde_json::from_str(&fx.ok(&["export", "evil.jsonl", "--format", "json"])).expect("JSON");
    assert_eq!(json["pairs"][0]["variant_id"], evil["variant_id"]);
}

/// A note of several lines is a quote of those lines in the report: no
/// literal `\n`, and no line of it can open a heading, a list or a code block.
#[test]
fn a_multi_line_note_is_a_multi_line_quote_in_the_report() {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let fx = Fixture::new();
    let journal = fx.path(&format!("{RICH}.triage.jsonl"));
    let text = fs::read_to_string(&journal).expect("journal");
    let mut first: Value =
        serde_json::from_str(text.lines().next().expect("a line")).expect("JSON");
    let note = "first line\n\n# not a heading\n- not a list\n2. not a list either\n    not code\n> not nested\n---\nlast *line*\n";
    first["note"] = json!(note);
    let rest: String = text.lines().skip(1).map(|l| format!("{l}\n")).collect();
    fs::write(&journal, format!("{first}\n{rest}")).expect("write the journal");
    let md = fx.ok(&["export", RICH]);
    assert!(
        !md.contains("first line\\n"),
        "a literal \\n in the report:\n{md}"
    );
    assert!(
        md.contains("- **Note:**\n  > first line\n  >\n  > \\# not a heading\n"),
        "{md}"
    );
    renders_safely(&md);
    // Parsed as GitHub would: one quote, its lines as text, no block inside but paragraphs.
    let mut depth = 0;
    let mut quoted = String::new();
    let mut quotes = 0;
    for ev in Parser::new(&md) {
        match ev {
            Event::Start(Tag::BlockQuote(_)) => {
                depth += 1;
                quotes += 1;
                assert_eq!(depth, 1, "a nested quote");
            }
            Event::End(TagEnd::BlockQuote(_)) => depth -= 1,
            Event::Start(t) if depth > 0 => assert!(
                matches!(t, Tag::Paragraph | Tag::Emphasis),
                "a block inside the note's quote: {t:?}"
            ),
            Event::Text(t) if depth > 0 => quoted.push_str(&t),
            Event::SoftBreak if depth > 0 => quoted.push('\n'),
            Event::End(TagEnd::Paragraph) if depth > 0 => quoted.push('\n'),
            _ => {}
        }
    }
    assert_eq!(quotes, 1, "{md}");
    assert_eq!(
        quoted,
        "first line\n# not a heading\n- not a list\n2. not a list either\nnot code\n> not nested\n---\nlast *line*\n"
    );
    // A one-line note stays on the bullet's line.
    assert!(
        md.contains("- **Note:** without the monitor evidence"),
        "{md}"
    );
}

/// Journal fields (category, note, reviewer) and run strings with C1 controls
/// and bidi overrides: JSON and fixtures write them as JSON escapes, so that
/// printing the file is safe, and a JSON reader gets the exact strings back.
#[test]
fn json_outputs_escape_c1_and_bidi_from_the_journal_and_the_run() {
    let fx = Fixture::new();
    let journal = fx.path(&format!("{RICH}.triage.jsonl"));
    let text = fs::read_to_string(&journal).expect("journal");
    let mut first: Value =
        serde_json::from_str(text.lines().next().expect("a line")).expect("JSON");
    let note = "ok\u{9b}2J\u{202e}txt\u{85}\nsecond line\u{2066}";
    let reviewer = "ana\u{202e}\u{9d}0;title\u{9c}";
    let category = "made\u{202e}up\u{9b}";
    first["note"] = json!(note);
    first["reviewer"] = json!(reviewer);
    first["category"] = json!(category);
    fs::write(&journal, format!("{first}\n")).expect("write the journal");
    let raw = |s: &str| {
        s.chars().any(|c| {
            ('\u{80}'..='\u{9f}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)
                || ('\u{202a}'..='\u{202e}').contains(&c)
        })
    };

    let out = fx.ok(&["export", RICH, "--format", "json", "--all"]);
    assert!(!raw(&out), "a raw C1 or bidi control in the JSON export");
    assert!(
        out.contains(r"ok\u009b2J\u202etxt\u0085\nsecond line\u2066"),
        "{out}"
    );
    let doc: Value = serde_json::from_str(&out).expect("JSON");
    let pair = doc["pairs"]
        .as_array()
        .expect("pairs")
        .iter()
        .find(|p| p["note"] == json!(note))
        .expect("the annotated pair, its note read back exactly");
    assert_eq!(pair["reviewer"], json!(reviewer));
    assert_eq!(pair["category"], json!(category));

    // A run string gets the same treatment, in JSON and in fixtures.
    let evil = json!({
        "case_id": "c\u{9b}1", "variant_id": "v\u{202e}", "passed": false,
        "reasons": ["why\u{85}"],
        "source": {"question": "q\u{2067}?", "response": {"probability": 0.9, "confidence": 0.8}},
        "variant": {"question": "q?", "response": {"probability": 0.2, "confidence": 0.8}},
    });
    fs::write(fx.path("evil.jsonl"), format!("{evil}\n")).expect("write");
    for format in ["json", "fixtures"] {
        let out = fx.ok(&["export", "evil.jsonl", "--format", format]);
        assert!(!raw(&out), "a raw control in the {format} export: {out}");
        assert!(out.contains(r"v\u202e"), "{out}");
        let first = out.lines().next().expect("a line");
        if format == "fixtures" {
            let v: Value = serde_json::from_str(first).expect("a JSON line");
            assert_eq!(v["variant_id"], evil["variant_id"]);
            assert_eq!(v["source"]["question"], evil["source"]["question"]);
        }
    }
    let summary = fx.ok(&["summary", "evil.jsonl", "--format", "json"]);
    assert!(!raw(&summary), "{summary}");
}

#[test]
fn a_run_without_a_journal_has_no_annotations() {
    let fx = Fixture::new();
    let md = fx.ok(&["export", BARE]);
    assert!(md.contains("## Unclassified failures (7)"), "{md}");
    assert!(!fx.path(&format!("{BARE}.triage.jsonl")).exists());
    // An explicit journal is used as given.
    let out = fx.ok(&[
        "check",
        BARE,
        "--annotations",
        "support-urgency.jsonl.triage.jsonl",
        "--max-unclassified",
        "7",
    ]);
    assert!(out.contains("PASS"), "{out}");
    // A journal named with --annotations must exist: a typo must not pass a gate.
    let out = fx.run(&[
        "check",
        RICH,
        "--annotations",
        "typo.jsonl",
        "--fail-on",
        "boundary",
    ]);
    assert_eq!(code(&out), Some(2));
    assert!(
        stderr(&out).contains("typo.jsonl does not exist"),
        "{}",
        stderr(&out)
    );
    // An output folder that does not exist is a one-line error.
    let out = fx.run(&["export", RICH, "-o", "no/such/dir/report.md"]);
    assert_eq!(code(&out), Some(2));
    assert!(
        stderr(&out).starts_with("triage: cannot write 'no/such/dir/report.md'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn completions_and_man_page() {
    let fx = Fixture::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = fx.ok(&["completions", shell]);
        for cmd in ["export", "summary", "check"] {
            assert!(out.contains(cmd), "{shell} completion lacks {cmd}");
        }
    }
    let man = fx.ok(&["man"]);
    assert!(man.starts_with(".ie") || man.contains(".TH"), "{man}");
    assert!(man.contains("export"));
    // No page it names is missing: subcommands point at their --help.
    assert!(!man.contains("(1)"), "{man}");
    for section in [
        ".SH SUBCOMMANDS",
        ".SH KEYS",
        ".SH FILES",
        ".SH ENVIRONMENT",
    ] {
        assert!(man.contains(section), "the man page lacks {section}");
    }
    assert!(man.contains("NO_COLOR") && man.contains("config.toml"));
    let out = fx.run(&["completions", "tcsh"]);
    assert_eq!(code(&out), Some(2));
}

#[test]
fn a_bare_command_name_is_not_taken_for_a_run() {
    let fx = Fixture::new();
    let out = fx.run(&[RICH, "summary"]);
    assert_eq!(code(&out), Some(2));
    assert!(
        stderr(&out).contains("`summary` is a command"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn export_library_matches_the_cli() {
    use triage::core::export::{self, ExportInput, ExportOptions, Format};
    let fx = Fixture::new();
    let run = fx.path(RICH);
    let index = load_run(
        &[run.to_string_lossy().to_string()],
        &OpenOptions::default(),
    )
    .expect("load");
    let journal = fx.path(&format!("{RICH}.triage.jsonl"));
    let store = triage::core::annotations::AnnotationStore::read(&journal).expect("journal");
    let taxonomy = triage::core::taxonomy::Taxonomy::default();
    let input = ExportInput {
        index: &index,
        store: Some(&store),
        taxonomy: &taxonomy,
        baseline: None,
    };
    let opts = ExportOptions::default();
    let rows = export::select_rows(&input, &opts);
    assert_eq!(rows.len(), index.failures);
    let mut buf = Vec::new();
    export::write(&input, &rows, Format::Csv, &opts, &mut buf).expect("write");
    let cli = fx.ok(&["export", RICH, "--format", "csv"]);
    // The library was given an absolute path; the CLI a relative one.
    let lib = String::from_utf8(buf).expect("UTF-8");
    assert_eq!(
        lib.lines().count(),
        cli.lines().count(),
        "same number of rows"
    );
    let strip = |s: &str| {
        s.lines()
            .map(|l| {
                l.split_once(',')
                    .map(|x| x.1.to_string())
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&lib), strip(&cli));
}

#[test]
fn the_config_taxonomy_applies() {
    let fx = Fixture::new();
    fs::write(
        fx.path("team.toml"),
        "[taxonomy]\nmode = \"extend\"\n[[taxonomy.categories]]\nid = \"rate-limit-semantics\"\nname = \"Rate-limit semantics\"\nkey = \"8\"\ndescription = \"the model misreads what a rate limit implies\"\n",
    )
    .expect("write the config");
    let md = fx.ok(&["export", RICH, "--config", "team.toml"]);
    assert!(md.contains("## Rate-limit semantics (1)"), "{md}");
    assert!(!md.contains("Unknown category"), "{md}");
    let out = fx.run(&[
        "check",
        RICH,
        "--config",
        "team.toml",
        "--fail-on",
        "rate-limit-semantics",
    ]);
    assert_eq!(code(&out), Some(1), "{}", stderr(&out));
    // Without the config the id is not in the taxonomy.
    let out = fx.run(&["check", RICH, "--fail-on", "rate-limit-semantics"]);
    assert_eq!(code(&out), Some(2));
    // A broken config is unusable input.
    fs::write(fx.path("broken.toml"), "[taxonomy\n").expect("write");
    let out = fx.run(&["summary", RICH, "--config", "broken.toml"]);
    assert_eq!(code(&out), Some(2));
    assert!(stderr(&out).contains("broken.toml"), "{}", stderr(&out));
}
