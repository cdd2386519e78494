//! `triage check` end to end: the gates decided on Wilson bounds, over
//! judged pairs, per group and per subset, and the exit code 2 for input
//! that cannot be gated. The runs are in `tests/fixtures/check/` (see its
//! README); each test copies what it needs into a temp dir and runs the
//! real binary there, isolated from the user's config and data.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_triage");
const TWO: &str = "two-of-twenty.jsonl";
const RUNNER: &str = "runner-27-of-30.jsonl";

struct Fixture {
    dir: TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        for f in [TWO, RUNNER] {
            fs::copy(
                Path::new("tests/fixtures/check").join(f),
                dir.path().join(f),
            )
            .expect("copy a fixture");
        }
        fs::copy(
            Path::new("sample-runs/with-problems.jsonl"),
            dir.path().join("with-problems.jsonl"),
        )
        .expect("copy a sample");
        fs::copy(
            Path::new("tests/fixtures/hostile/not-jsonl.csv"),
            dir.path().join("results.csv"),
        )
        .expect("copy a fixture");
        for d in ["config", "data"] {
            fs::create_dir_all(dir.path().join(d)).expect("a folder");
        }
        Fixture { dir }
    }

    fn write(&self, name: &str, text: &str) {
        fs::write(self.dir.path().join(name), text).expect("write");
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .arg("check")
            .args(args)
            .current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .output()
            .expect("run triage check")
    }

    /// Run; assert the exit code; return stdout (and stderr after it).
    #[track_caller]
    fn exits(&self, code: i32, args: &[&str]) -> String {
        let out = self.run(args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(code), "check {args:?}\n{text}");
        text
    }
}

#[test]
fn max_failure_rate_is_decided_on_the_upper_bound() {
    let fx = Fixture::new();
    // 2 of 20 judged pairs: observed 0.100, upper bound 0.301 > 0.3.
    let out = fx.exits(1, &[TWO, "--max-failure-rate", "0.3"]);
    assert!(
        out.contains(
            "FAIL  --max-failure-rate 0.3  failure rate 0.100 (2 of 20 judged pairs), 95% upper bound 0.301 > 0.3"
        ),
        "{out}"
    );
    // The service errors and invalid pairs are counted, but not judged.
    assert!(
        out.contains("25 pairs, 7 failures: 2 failed, 0 boundary, 3 service errors, 2 invalid"),
        "{out}"
    );
    assert!(out.contains("20 judged pairs"), "{out}");
    let out = fx.exits(0, &[TWO, "--max-failure-rate", "0.31"]);
    assert!(out.contains("95% upper bound 0.301 <= 0.31"), "{out}");
}

#[test]
fn min_pass_rate_is_decided_on_the_lower_bound() {
    let fx = Fixture::new();
    // 27 of 30 pass: observed 0.900, lower bound 0.744 < 0.85.
    let out = fx.exits(1, &[RUNNER, "--min-pass-rate", "0.85"]);
    assert!(
        out.contains(
            "FAIL  --min-pass-rate 0.85  pass rate 0.900 (27 of 30 judged pairs), 95% lower bound 0.744 < 0.85"
        ),
        "{out}"
    );
    let out = fx.exits(0, &[RUNNER, "--min-pass-rate", "0.74"]);
    assert!(out.contains("PASS  --min-pass-rate 0.74"), "{out}");
}

#[test]
fn a_rate_gate_of_zero_points_to_max_failures() {
    let fx = Fixture::new();
    for args in [
        ["--max-failure-rate", "0"],
        ["--min-pass-rate", "1"],
        ["--max-case-failure-rate", "0"],
    ] {
        let out = fx.exits(2, &[RUNNER, args[0], args[1]]);
        assert!(out.contains("can never pass"), "{out}");
        assert!(out.contains("use --max-failures 0"), "{out}");
    }
    // --max-failures gates the count itself.
    fx.exits(1, &[RUNNER, "--max-failures", "0"]);
    fx.exits(1, &[RUNNER, "--max-failures", "2"]);
    let out = fx.exits(0, &[RUNNER, "--max-failures", "3"]);
    assert!(
        out.contains("3 of 30 judged pairs failed (at most 3 allowed)"),
        "{out}"
    );
    // Only judged failures count: the 3 service errors and 2 invalid pairs do not.
    fx.exits(0, &[TWO, "--max-failures", "2"]);
    fx.exits(2, &[TWO, "--min-pass-rate", "1.5"]);
}

#[test]
fn min_pairs_and_the_floor_of_25() {
    let fx = Fixture::new();
    let out = fx.exits(1, &[TWO, "--min-pairs", "25"]);
    assert!(
        out.contains("FAIL  --min-pairs 25  20 judged pairs (at least 25 required)"),
        "{out}"
    );
    fx.exits(0, &[RUNNER, "--min-pairs", "25"]);
    // A rate gate over fewer than 25 judged pairs carries the seed's floor as a note.
    let out = fx.exits(0, &[TWO, "--max-failure-rate", "0.5"]);
    assert!(out.contains("seed 003 asks for at least 25"), "{out}");
    let help = fx.exits(0, &["--help"]);
    assert!(
        help.contains("Seed 003 gives 25 as the floor for gating"),
        "{help}"
    );
}

#[test]
fn by_names_the_groups_that_fail() {
    let fx = Fixture::new();
    // Over all 20 judged pairs the upper bound is 0.301 <= 0.35; but
    // add-irrelevant-field fails 2 of 5, whose upper bound is 0.769.
    fx.exits(0, &[TWO, "--max-failure-rate", "0.35"]);
    let out = fx.exits(
        1,
        &[TWO, "--max-failure-rate", "0.35", "--by", "transformation"],
    );
    assert!(
        out.contains("by transformation: 1 of 2 transformations fail"),
        "{out}"
    );
    assert!(
        out.contains("add-irrelevant-field: failure rate 0.400 (2 of 5 judged pairs), 95% upper bound 0.769 > 0.35"),
        "{out}"
    );
    assert!(!out.contains("paraphrase: failure rate"), "{out}");
    let out = fx.exits(1, &[TWO, "--min-pass-rate", "0.5", "--by", "family"]);
    assert!(out.contains("by family: 1 of 2 families fail"), "{out}");
    assert!(out.contains("state-noise: pass rate 0.600"), "{out}");
    // By case, each failing case is named: 1 of 3 has an upper bound of
    // 0.792, 0 of 3 one of 0.561.
    let out = fx.exits(1, &[RUNNER, "--max-failure-rate", "0.7", "--by", "case"]);
    assert!(out.contains("by case: 3 of 10 cases fail"), "{out}");
    for c in ["case-002", "case-005", "case-008"] {
        assert!(out.contains(&format!("{c}: failure rate 0.333")), "{out}");
    }
    fx.exits(2, &[TWO, "--max-failure-rate", "0.5", "--by", "category"]);
}

#[test]
fn filter_gates_a_subset() {
    let fx = Fixture::new();
    // The question family alone: 0 failures of 15, upper bound 0.204.
    let out = fx.exits(
        0,
        &[
            TWO,
            "--max-failure-rate",
            "0.25",
            "--filter",
            "family:question",
        ],
    );
    assert!(
        out.contains("filter: family:question (18 of 25 pairs)"),
        "{out}"
    );
    assert!(
        out.contains("failure rate 0.000 (0 of 15 judged pairs), 95% upper bound 0.204 <= 0.25"),
        "{out}"
    );
    fx.exits(
        1,
        &[
            TWO,
            "--max-failure-rate",
            "0.25",
            "--filter",
            "family:state-noise",
        ],
    );
    let out = fx.exits(2, &[TWO, "--max-failures", "0", "--filter", "famly:x"]);
    assert!(out.contains("--filter"), "{out}");
}

#[test]
fn max_case_failure_rate_counts_cases() {
    let fx = Fixture::new();
    // 3 of 10 cases have a failing pair: upper bound 0.603.
    let out = fx.exits(1, &[RUNNER, "--max-case-failure-rate", "0.6"]);
    assert!(
        out.contains("case failure rate 0.300 (3 of 10 judged cases), 95% upper bound 0.603 > 0.6"),
        "{out}"
    );
    fx.exits(0, &[RUNNER, "--max-case-failure-rate", "0.61"]);
    // The same run per pair: 3 of 30, upper bound 0.256.
    fx.exits(0, &[RUNNER, "--max-failure-rate", "0.3"]);
}

#[test]
fn input_that_cannot_be_gated_exits_2() {
    let fx = Fixture::new();
    fx.write("empty.jsonl", "");
    let out = fx.exits(2, &["empty.jsonl", "--max-failure-rate", "0.5"]);
    assert!(out.contains("empty.jsonl: it is empty"), "{out}");
    assert!(!out.contains("PASS"), "{out}");
    let out = fx.exits(2, &["results.csv"]);
    assert!(out.contains("results.csv: no pair could be read"), "{out}");
    fx.write("junk.jsonl", "{\"foo\": 1}\nnot json\n");
    let out = fx.exits(2, &["junk.jsonl", "--max-unclassified", "0"]);
    assert!(
        out.contains("junk.jsonl: no pair could be read from it: 2 of its lines are unreadable"),
        "{out}"
    );
    // One unusable file among good ones is still unusable input.
    let out = fx.exits(2, &[RUNNER, "empty.jsonl"]);
    assert!(out.contains("empty.jsonl: it is empty"), "{out}");
    // A file from which some lines were read is gated, its problems named.
    let out = fx.exits(0, &["with-problems.jsonl", "--max-failure-rate", "0.9"]);
    assert!(out.contains("5 problems (5 unreadable lines"), "{out}");
    assert!(
        out.contains("with-problems.jsonl:4: malformed JSON"),
        "{out}"
    );
    fx.exits(
        1,
        &[
            "with-problems.jsonl",
            "--max-failure-rate",
            "0.9",
            "--strict",
        ],
    );
}

/// Bad lines past the first 1000 of their kind are counted, not kept: the
/// index holds 1000 of each kind, and `check`, the report and the JSON
/// export count every one and say how many were not listed.
#[test]
fn bad_lines_past_the_first_thousand_of_a_kind_are_counted_not_kept() {
    let fx = Fixture::new();
    let good = fs::read_to_string("sample-runs/support-urgency.jsonl").expect("sample");
    let first = good.lines().next().expect("a line");
    let mut text = format!("{first}\n");
    for _ in 0..2500 {
        text.push_str("junk\n");
    }
    for _ in 0..1200 {
        text.push_str("[1]\n");
    }
    fx.write("junk.jsonl", &text);
    let index = triage::core::index::load_run(
        &[fx.dir
            .path()
            .join("junk.jsonl")
            .to_string_lossy()
            .into_owned()],
        &triage::core::index::OpenOptions::default(),
    )
    .expect("load");
    use triage::core::problem::{KEPT_PER_KIND, ProblemKind};
    assert_eq!(index.rows.len(), 1);
    assert_eq!(index.problems.len(), 2 * KEPT_PER_KIND);
    assert_eq!(index.unlisted.get(ProblemKind::Malformed), 1500);
    assert_eq!(index.unlisted.get(ProblemKind::NotAnObject), 200);
    assert_eq!(index.skipped_lines, 3700);
    assert_eq!(index.problem_total(), 3700);
    // The kept ones are the first lines of each kind.
    let last_malformed = index
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::Malformed)
        .map(|p| p.line)
        .max();
    assert_eq!(last_malformed, Some(1001));

    let out = fx.run(&["junk.jsonl", "--strict"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("3700 problems (3700 unreadable lines, 0 field warnings)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("FAIL  --strict  3700 problems in the run"),
        "{stdout}"
    );
    assert!(
        stdout.contains("… and 3695 more (1700 of them only counted: the first 1000 of each kind are kept with their lines)"),
        "{stdout}"
    );

    let md = Command::new(BIN)
        .args(["export", "junk.jsonl"])
        .current_dir(fx.dir.path())
        .env("XDG_CONFIG_HOME", fx.dir.path().join("config"))
        .output()
        .expect("export");
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("3700 unreadable lines"), "{md}");
    assert!(
        md.contains("…and 3600 more; `triage RUN` lists the first 1000 of each kind"),
        "{md}"
    );
    let json = Command::new(BIN)
        .args(["export", "junk.jsonl", "--format", "json"])
        .current_dir(fx.dir.path())
        .env("XDG_CONFIG_HOME", fx.dir.path().join("config"))
        .output()
        .expect("export");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(v["problems"].as_array().map(Vec::len), Some(2000));
    assert_eq!(v["problems_not_listed"]["malformed"], 1500);
    assert_eq!(v["problems_not_listed"]["not-an-object"], 200);
    assert_eq!(v["summary"]["problems"], 3700);
}
