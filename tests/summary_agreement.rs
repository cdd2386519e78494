//! The summary's three faces agree: `triage summary` as text and as
//! Markdown, and the summary screen, show the numbers `triage summary
//! --format json` computes, on the sample runs and the stats fixtures.
//!
//! Each group's cells are written here from the JSON, independently of the
//! code that lays the tables out (`k/n rate [low, high]` at two decimals,
//! drift at three, milliseconds as recorded), and each face's rows are read
//! back from what it prints: every table, every group, every sentence of
//! the conclusion, by transformation and by family.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use triage::tui::action::Action;
use triage::tui::app::overlay::summary;
use triage::tui::app::{self, Overlay};
use triage::tui::style::Theme;
use triage::tui::testing;

const BIN: &str = env!("CARGO_BIN_EXE_triage");

/// The runs compared: the four samples and the stats fixtures.
const RUNS: [&str; 10] = [
    "sample-runs/support-urgency.jsonl",
    "sample-runs/bare-camelcase.jsonl",
    "sample-runs/camelcase-full.jsonl",
    "sample-runs/with-problems.jsonl",
    "tests/fixtures/stats/invalid-flips.jsonl",
    "tests/fixtures/stats/undeclared.jsonl",
    "tests/fixtures/stats/service-errors.jsonl",
    "tests/fixtures/stats/seed-names.jsonl",
    "tests/fixtures/stats/mixed-policy.jsonl",
    "tests/fixtures/stats/regenerated.jsonl",
];

/// The four tables, in the order every face shows them.
const TABLES: [&str; 4] = ["Pairs", "Model metrics", "Drift", "Service"];

fn summary(run: &str, by: &str, format: &str) -> String {
    let out = Command::new(BIN)
        .args(["summary", run, "--by", by, "--format", format])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run triage");
    assert!(out.status.success(), "{run}: {out:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn rate(r: &Value) -> String {
    if r.is_null() {
        return "—".to_string();
    }
    format!(
        "{}/{} {:.2} [{:.2}, {:.2}]",
        r["successes"],
        r["trials"],
        f(&r["value"]),
        f(&r["low"]),
        f(&r["high"])
    )
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

fn num3(v: &Value) -> String {
    if v.is_null() {
        "—".to_string()
    } else {
        format!("{:.3}", f(v))
    }
}

/// Milliseconds as recorded: at most three decimals, no trailing zeros.
fn ms(v: &Value) -> String {
    if v.is_null() {
        return "—".to_string();
    }
    let s = format!("{:.3}", f(v));
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A group's expected cells, table by table.
fn cells(g: &Value) -> [Vec<String>; 4] {
    let n = |k: &str| {
        g[k].as_u64()
            .unwrap_or_else(|| panic!("{k}: {g}"))
            .to_string()
    };
    let latency = &g["latency"];
    let lat = |k: &str| {
        if latency.is_null() {
            "—".to_string()
        } else {
            ms(&latency[k])
        }
    };
    [
        vec![
            n("pairs"),
            rate(&g["failure_rate"]),
            n("failed"),
            n("boundary_observations"),
            n("invalid_pairs"),
            n("undeclared_pairs"),
        ],
        vec![
            n("model_pairs"),
            rate(&g["invariant_violation_rate"]),
            rate(&g["route_flip_rate"]),
            rate(&g["boundary_flip_rate"]),
        ],
        vec![
            num3(&g["median_abs_dp"]),
            num3(&g["max_abs_dp"]),
            num3(&g["median_abs_dc"]),
            num3(&g["max_abs_dc"]),
        ],
        vec![rate(&g["service_error_rate"]), lat("p50_ms"), lat("p95_ms")],
    ]
}

/// Every group of a JSON summary, then every pair ("all"), with its cells.
fn expected(json: &Value) -> Vec<(String, [Vec<String>; 4])> {
    let groups = json["groups"].as_array().expect("groups");
    groups
        .iter()
        .chain(std::iter::once(&json["overall"]))
        .map(|g| (g["name"].as_str().expect("name").to_string(), cells(g)))
        .collect()
}

/// Whether a shown name is the group's, whole or cut with `…`.
fn same_name(shown: &str, name: &str) -> bool {
    shown == name
        || shown
            .strip_suffix('…')
            .is_some_and(|cut| !cut.is_empty() && name.starts_with(cut))
}

/// The rows of one table in a text layout (text, or the screen's lines):
/// the lines after its title and header, up to its note. Cells are
/// separated by two spaces or more; the first is the name.
fn text_rows<'a>(lines: &[&'a str], title: &str) -> Vec<Vec<&'a str>> {
    let at = lines
        .iter()
        .position(|l| l.trim_end() == title)
        .unwrap_or_else(|| panic!("no table {title:?} in\n{}", lines.join("\n")));
    lines[at + 2..]
        .iter()
        .take_while(|l| !l.starts_with("  ") && !l.trim().is_empty())
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect()
}

/// Each group's row of every table of a text layout is the JSON's.
#[track_caller]
fn check_text(
    face: &str,
    lines: &[&str],
    titles: [String; 4],
    want: &[(String, [Vec<String>; 4])],
) {
    for (t, title) in titles.iter().enumerate() {
        let rows = text_rows(lines, title);
        assert_eq!(rows.len(), want.len(), "{face}: {title}: {rows:#?}");
        for (row, (name, cells)) in rows.iter().zip(want) {
            let shown_name = row[0];
            assert!(
                same_name(shown_name, name),
                "{face}: {title}: {shown_name:?} is not {name:?}"
            );
            assert_eq!(&row[1..], cells[t].as_slice(), "{face}: {title}: {name}");
        }
    }
}

/// Each group's row of every Markdown table is the JSON's.
#[track_caller]
fn check_markdown(md: &str, want: &[(String, [Vec<String>; 4])]) {
    let lines: Vec<&str> = md.lines().collect();
    for (t, title) in TABLES.iter().enumerate() {
        let at = lines
            .iter()
            .position(|l| l.starts_with(&format!("**{title}.**")))
            .unwrap_or_else(|| panic!("markdown: no table {title}\n{md}"));
        let rows: Vec<Vec<&str>> = lines[at + 4..]
            .iter()
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                l.trim_matches('|')
                    .split(" | ")
                    .map(str::trim)
                    .collect::<Vec<&str>>()
            })
            .collect();
        assert_eq!(rows.len(), want.len(), "markdown: {title}: {rows:#?}");
        for (row, (name, cells)) in rows.iter().zip(want) {
            let shown = row[0].trim_matches(['`', '*']);
            assert!(
                shown == name.replace('|', "\\|")
                    || (name == "all" && shown == "All pairs")
                    || (name == "not recorded" && shown == "not recorded"),
                "markdown: {title}: {shown:?} is not {name:?}"
            );
            assert_eq!(&row[1..], cells[t].as_slice(), "markdown: {title}: {name}");
        }
    }
}

/// The sentences of a list whose items start with `bullet` and go on in
/// lines that start with `more`, each joined back into one line.
fn sentences(lines: &[&str], bullet: &str, more: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in lines {
        // A continuation may start with the bullet's own prefix: look for it first.
        if let (Some(s), Some(last)) = (l.strip_prefix(more), out.last_mut()) {
            last.push(' ');
            last.push_str(s.trim());
        } else if let Some(s) = l.strip_prefix(bullet) {
            out.push(s.trim_end().to_string());
        }
    }
    out
}

/// The summary screen's lines as text, for a run grouped by transformation
/// and by family.
fn screen(run: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(run);
    let mut app = testing::app_for(
        &[path.to_str().expect("UTF-8 path")],
        &dir.path().join("journal.jsonl"),
        "tester",
    );
    let theme = Theme::dark();
    let effects = app::update(&mut app, Action::ShowSummary);
    testing::run_effects(&mut app, effects, &theme);
    let Overlay::Summary(v) = &app.overlay else {
        panic!("{run}: the summary is not open");
    };
    summary::lines(v, &theme, 400)
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        })
        .collect()
}

#[test]
fn text_markdown_and_the_screen_show_the_numbers_of_the_json() {
    for run in RUNS {
        let screen = screen(run);
        let screen: Vec<&str> = screen.iter().map(String::as_str).collect();
        for by in ["transformation", "family"] {
            let json: Value =
                serde_json::from_str(&summary(run, by, "json")).expect("the JSON summary");
            let want = expected(&json);
            assert!(want.len() >= 2, "{run}: {want:?}");

            let text = summary(run, by, "text");
            let lines: Vec<&str> = text.lines().collect();
            check_text(
                &format!("{run} text by {by}"),
                &lines,
                TABLES.map(str::to_string),
                &want,
            );

            let md = summary(run, by, "markdown");
            check_markdown(&md, &want);

            let prefix = if by == "family" {
                "Per family"
            } else {
                "Per transformation"
            };
            check_text(
                &format!("{run} screen by {by}"),
                &screen,
                TABLES.map(|t| format!("{prefix} · {t}")),
                &want,
            );

            // Every sentence of the conclusion, in all three.
            let conclusion: Vec<String> = json["conclusion"]
                .as_array()
                .expect("conclusion")
                .iter()
                .map(|s| s.as_str().expect("a sentence").to_string())
                .collect();
            assert!(!conclusion.is_empty());
            assert_eq!(sentences(&lines, "- ", "  "), conclusion, "{run} text");
            let md_lines: Vec<&str> = md.lines().collect();
            let unescaped: Vec<String> = sentences(&md_lines, "- ", "  ")
                .iter()
                .map(|s| s.replace('\\', ""))
                .collect();
            assert_eq!(unescaped, conclusion, "{run} markdown");
            if by == "transformation" {
                let at = screen
                    .iter()
                    .position(|l| *l == "Conclusion")
                    .expect("the screen's conclusion");
                assert_eq!(
                    sentences(&screen[at + 1..], "  ", "    "),
                    conclusion,
                    "{run} screen"
                );
            }
        }
    }
}
