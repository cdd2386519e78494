//! Several reviewers on one run, end to end with the real binary:
//! `triage import` (every kind of problem, `--partial`, success),
//! `triage agreement`, the `--min-kappa` gate of `triage check`, the
//! resolved category in exports, and two reviewers' journals merged by
//! `git merge` with nothing lost.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use tempfile::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_triage");
const RUN: &str = "run.jsonl";

struct Fixture {
    dir: TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        fs::copy("sample-runs/support-urgency.jsonl", dir.path().join(RUN)).expect("copy");
        for d in ["config", "data"] {
            fs::create_dir_all(dir.path().join(d)).expect("a folder");
        }
        Fixture { dir }
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, text: &str) {
        fs::write(self.path(name), text).expect("write");
    }

    fn run_in(&self, cwd: &Path, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .current_dir(cwd)
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.path("config"))
            .env("XDG_DATA_HOME", self.path("data"))
            .output()
            .expect("run triage")
    }

    /// Run; assert the exit code; return stdout, then stderr.
    #[track_caller]
    fn exits(&self, code: i32, args: &[&str]) -> (String, String) {
        let out = self.run_in(self.dir.path(), args);
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert_eq!(out.status.code(), Some(code), "{args:?}\n{o}{e}");
        (o, e)
    }

    fn journal(&self) -> String {
        fs::read_to_string(self.path("run.jsonl.triage.jsonl")).unwrap_or_default()
    }
}

/// Six failures of the sample run, with the categories ana gives them.
const ANA: &str = "case_id,variant_id,repetition,category,note\n\
login-failures-002,question-typo,,boundary,on the line\n\
checkout-outage-001,question-paraphrase,1,distractor,\n\
password-reset-delay-006,question-paraphrase,,boundary,\n\
vague-ticket-010,question-paraphrase,,boundary,\n\
account-lockout-014,question-paraphrase,,boundary,\n\
api-rate-limiting-008,question-paraphrase,,ambiguous-contract,\n";

/// Bob agrees on four, disagrees on two.
const BOB: &str = "{\"case_id\":\"login-failures-002\",\"variant_id\":\"question-typo\",\"category\":\"boundary\"}\n\
{\"case_id\":\"checkout-outage-001\",\"variant_id\":\"question-paraphrase\",\"repetition\":1,\"category\":\"ambiguous-contract\",\"note\":\"the wording\"}\n\
{\"case_id\":\"password-reset-delay-006\",\"variant_id\":\"question-paraphrase\",\"category\":\"boundary\"}\n\
{\"case_id\":\"vague-ticket-010\",\"variant_id\":\"question-paraphrase\",\"category\":\"ambiguous-contract\"}\n\
{\"case_id\":\"account-lockout-014\",\"variant_id\":\"question-paraphrase\",\"category\":\"boundary\"}\n\
{\"case_id\":\"api-rate-limiting-008\",\"variant_id\":\"question-paraphrase\",\"category\":\"ambiguous-contract\"}\n";

fn ids_present(fx: &Fixture) {
    // The fixture's rows must be pairs of the sample run, or every test here is moot.
    let run = fs::read_to_string(fx.path(RUN)).unwrap();
    for line in ANA.lines().skip(1) {
        let mut f = line.split(',');
        let (c, v) = (f.next().unwrap(), f.next().unwrap());
        assert!(
            run.contains(&format!("\"case_id\":\"{c}\",\"variant_id\":\"{v}\"")),
            "{c}/{v} is not in the sample run"
        );
    }
}

#[test]
fn an_import_with_any_problem_imports_nothing_and_names_each_line() {
    let fx = Fixture::new();
    ids_present(&fx);
    fx.write(
        "labels.csv",
        "case_id,variant_id,repetition,category\n\
         login-failures-002,question-typo,,boundary\n\
         nobody,question-typo,,boundary\n\
         login-failures-002,question-typo,,not-a-category\n\
         checkout-outage-001,question-paraphrase,,distractor\n\
         login-failures-002,question-typo,,distractor\n\
         login-failures-002,question-typo,x,boundary\n\
         ,question-typo,,boundary\n",
    );
    let (out, err) = fx.exits(2, &["import", RUN, "labels.csv", "--reviewer", "judge"]);
    assert_eq!(out, "");
    for expected in [
        "labels.csv:3: no pair of the run is nobody / question-typo",
        "labels.csv:4: `not-a-category` is not a category id",
        "labels.csv:5: checkout-outage-001 / question-paraphrase is 2 repeated trials in the run; give a repetition column to say which",
        "labels.csv:6: line 2 already decides this pair",
        "labels.csv:7: repetition `x` is not a whole number from 0",
        "labels.csv:8: `case_id` is empty",
        "nothing imported: 6 rows have a problem in labels.csv; fix them, or pass --partial to import the other 1 row",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in\n{err}");
    }
    assert!(
        !fx.path("run.jsonl.triage.jsonl").exists(),
        "nothing written"
    );

    // A header without a required column is a problem of line 1.
    fx.write("bad.csv", "case,variant_id,category\nx,y,boundary\n");
    let (_, err) = fx.exits(2, &["import", RUN, "bad.csv", "--reviewer", "judge"]);
    assert!(
        err.contains("bad.csv:1: the header has no `case_id` column"),
        "{err}"
    );
    // `suggestions` is the suggestion engine's name.
    let (_, err) = fx.exits(
        2,
        &["import", RUN, "labels.csv", "--reviewer", "suggestions"],
    );
    assert!(
        err.contains("stands for triage's suggestion engine"),
        "{err}"
    );
    // A file that is not there.
    let (_, err) = fx.exits(2, &["import", RUN, "missing.csv", "--reviewer", "judge"]);
    assert!(err.contains("cannot read missing.csv"), "{err}");

    // --partial imports the good row and still names the others.
    let (out, err) = fx.exits(
        0,
        &[
            "import",
            RUN,
            "labels.csv",
            "--reviewer",
            "judge",
            "--partial",
        ],
    );
    assert!(
        out.starts_with(
            "imported 1 decision by judge into run.jsonl.triage.jsonl; 6 rows skipped (--partial)"
        ),
        "{out}"
    );
    assert!(err.contains("labels.csv:3:"), "{err}");
    let journal = fx.journal();
    assert_eq!(journal.lines().count(), 1);
    assert!(journal.contains("\"reviewer\":\"judge\""), "{journal}");
}

#[test]
fn imports_agreement_gate_and_exports_with_two_reviewers() {
    let fx = Fixture::new();
    fx.write("ana.csv", ANA);
    fx.write("bob.jsonl", BOB);
    let (out, _) = fx.exits(0, &["import", RUN, "ana.csv", "--reviewer", "ana"]);
    assert_eq!(
        out,
        "imported 6 decisions by ana into run.jsonl.triage.jsonl\n"
    );
    let (out, _) = fx.exits(0, &["import", RUN, "bob.jsonl", "--reviewer", "bob"]);
    assert_eq!(
        out,
        "imported 6 decisions by bob into run.jsonl.triage.jsonl\n"
    );
    // Importing again writes nothing.
    let (out, _) = fx.exits(0, &["import", RUN, "bob.jsonl", "--reviewer", "bob"]);
    assert!(
        out.contains("imported 0 decisions") && out.contains("6 already recorded"),
        "{out}"
    );
    assert_eq!(fx.journal().lines().count(), 12);

    // Agreement: 4 of 6 agree. Categories (boundary, ambiguous-contract,
    // distractor): ana 4/1/1, bob 3/3/0; p_o = 4/6, p_e = (4·3 + 1·3)/36.
    let (out, _) = fx.exits(
        0,
        &["agreement", RUN, "--between", "ana,bob", "--format", "json"],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["pairs"], 6);
    let po = 4.0 / 6.0;
    let pe = 15.0 / 36.0;
    let kappa = (po - pe) / (1.0 - pe);
    assert!((v["observed"].as_f64().unwrap() - po).abs() < 1e-12);
    assert!((v["chance"].as_f64().unwrap() - pe).abs() < 1e-12);
    assert!((v["kappa"]["value"].as_f64().unwrap() - kappa).abs() < 1e-12);
    assert!(v["kappa"]["low"].as_f64().unwrap() < kappa);
    assert!(v["kappa"]["high"].as_f64().unwrap() > kappa);
    // Without --between: every pair of reviewers, the same comparison.
    let (out, _) = fx.exits(0, &["agreement", RUN, "--format", "json"]);
    let all: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(all["comparisons"][0], v);
    let (text, _) = fx.exits(0, &["agreement", RUN]);
    assert!(
        text.starts_with("ana vs bob: 6 pairs decided by both"),
        "{text}"
    );
    let (md, _) = fx.exits(0, &["agreement", RUN, "--format", "markdown"]);
    assert!(md.starts_with("## ana vs bob"), "{md}");
    // The suggestion engine as a rater.
    let (out, _) = fx.exits(
        0,
        &[
            "agreement",
            RUN,
            "--between",
            "suggestions,bob",
            "--format",
            "json",
        ],
    );
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(s["a"], "suggestions");
    assert!(s["pairs"].as_u64().unwrap() > 0);

    // The gate: exit 1 when the lower bound is under X or too few pairs, 0 otherwise, 2 when it cannot be checked.
    let (out, _) = fx.exits(
        1,
        &["check", RUN, "--min-kappa", "0.7", "--between", "ana,bob"],
    );
    assert!(
        out.contains("FAIL  --min-kappa 0.7 --between ana,bob"),
        "{out}"
    );
    let (out, _) = fx.exits(
        0,
        &["check", RUN, "--min-kappa", "-1", "--between", "ana,bob"],
    );
    assert!(
        out.contains("PASS  --min-kappa -1 --between ana,bob"),
        "{out}"
    );
    let (out, _) = fx.exits(
        1,
        &[
            "check",
            RUN,
            "--min-kappa",
            "-1",
            "--between",
            "ana,bob",
            "--min-pairs",
            "7",
        ],
    );
    assert!(
        out.contains("FAIL  --min-pairs 7 (compared by ana and bob)  6 pairs decided by both"),
        "{out}"
    );
    let (_, err) = fx.exits(2, &["check", RUN, "--min-kappa", "0.7"]);
    assert!(err.contains("--min-kappa needs the two reviewers"), "{err}");
    let (_, err) = fx.exits(2, &["check", RUN, "--min-kappa", "1.5", "--between", "a,b"]);
    assert!(err.contains("is not a kappa"), "{err}");
    let (_, err) = fx.exits(2, &["check", RUN, "--between", "ana,bob"]);
    assert!(err.contains("add --min-kappa"), "{err}");
    let (out, _) = fx.exits(
        1,
        &["check", RUN, "--min-kappa", "0", "--between", "ana,nobody"],
    );
    assert!(
        out.contains("kappa undefined (no pair decided by both)"),
        "{out}"
    );

    // Disagreements have no resolved category: unclassified to the gate.
    let (out, _) = fx.exits(0, &["check", RUN]);
    assert!(
        out.contains("(1 of them disagreed on by reviewers, with no resolution)"),
        "{out}"
    );

    // apply: the resolved category in the copy, with who said what.
    fx.exits(0, &["apply", RUN, "-o", "applied.jsonl"]);
    let applied = fs::read_to_string(fx.path("applied.jsonl")).unwrap();
    let split: serde_json::Value = applied
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["case_id"] == "vague-ticket-010" && v["variant_id"] == "question-paraphrase")
        .unwrap();
    assert_eq!(split["triage"]["category"], serde_json::Value::Null);
    assert_eq!(split["triage"]["agreement"], "disagree");
    assert_eq!(split["triage"]["decisions"].as_array().unwrap().len(), 2);

    // The Markdown report says who said what on a pair two reviewers decided.
    let (md, _) = fx.exits(0, &["export", RUN]);
    assert!(
        md.contains("- **Reviewers:** ana `boundary` · bob `ambiguous-contract` (they disagree, with no resolution)"),
        "{md}"
    );

    // JSON export: the resolved category, and every reviewer's decision.
    let (out, _) = fx.exits(0, &["export", RUN, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let pair = |c: &str, vid: &str| {
        v["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["case_id"] == c && p["variant_id"] == vid)
            .cloned()
            .unwrap()
    };
    let agreed = pair("login-failures-002", "question-typo");
    assert_eq!(agreed["category"], "boundary");
    assert_eq!(agreed["agreement"], "agreed");
    assert_eq!(agreed["decisions"].as_array().unwrap().len(), 2);
    let split = pair("vague-ticket-010", "question-paraphrase");
    assert_eq!(split["category"], serde_json::Value::Null);
    assert_eq!(split["agreement"], "disagree");
    assert_eq!(
        split["decisions"],
        serde_json::json!([
            {"reviewer": "ana", "category": "boundary", "note": null, "at": split["decisions"][0]["at"], "source": "manual"},
            {"reviewer": "bob", "category": "ambiguous-contract", "note": null, "at": split["decisions"][1]["at"], "source": "manual"},
        ])
    );
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Two reviewers classify on two branches (on different machines, in
/// effect), one journal compacted by triage on the way (a rewrite of the
/// file, not an append), and `git merge` joins them with `triage
/// merge-journal` installed as the docs say: every decision of both is
/// there, the older decision a compaction replaced does not come back, and
/// triage reads the result without a single unreadable line.
#[test]
fn two_reviewers_journals_merge_in_git_without_loss() {
    if Command::new("git").arg("--version").output().is_err() {
        eprintln!("skipped: no git");
        return;
    }
    let fx = Fixture::new();
    let repo = fx.path("repo");
    fs::create_dir_all(&repo).unwrap();
    fs::copy(fx.path(RUN), repo.join(RUN)).unwrap();
    fs::write(
        repo.join(".gitattributes"),
        "*.triage.jsonl merge=triage-journal\n",
    )
    .unwrap();
    fs::write(repo.join(".gitignore"), "*.triage.jsonl.lock\n").unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(
        &repo,
        &[
            "config",
            "merge.triage-journal.driver",
            &format!("'{BIN}' merge-journal %O %A %B"),
        ],
    );
    // A decision both branches start from, changed on one of them later.
    fs::write(
        repo.join("start.csv"),
        "case_id,variant_id,category\nlogin-failures-002,question-typo,distractor\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        let out = fx.run_in(&repo, args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&["import", RUN, "start.csv", "--reviewer", "ana"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "start"]);

    git(&repo, &["checkout", "-qb", "ana"]);
    fs::write(repo.join("ana.csv"), ANA).unwrap();
    run(&["import", RUN, "ana.csv", "--reviewer", "ana"]);
    // Opening the journal to write compacts it: ana's first decision on
    // the shared pair is gone from the file, replaced by her later one.
    run(&["import", RUN, "ana.csv", "--reviewer", "ana"]);
    let compacted = fs::read_to_string(repo.join("run.jsonl.triage.jsonl")).unwrap();
    assert_eq!(compacted.lines().count(), 6, "{compacted}");
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "ana"]);

    git(&repo, &["checkout", "-q", "main"]);
    git(&repo, &["checkout", "-qb", "bob"]);
    fs::write(repo.join("bob.jsonl"), BOB).unwrap();
    run(&["import", RUN, "bob.jsonl", "--reviewer", "bob"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "bob"]);

    git(&repo, &["checkout", "-q", "ana"]);
    git(&repo, &["merge", "-q", "--no-edit", "bob"]);
    let merged = fs::read_to_string(repo.join("run.jsonl.triage.jsonl")).unwrap();
    assert!(!merged.contains("<<<<<<<"), "{merged}");

    let (out, err) = {
        let o = fx.run_in(&repo, &["export", RUN, "--format", "json", "--all"]);
        assert!(o.status.success());
        (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    assert!(!err.contains("could not be read"), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut said: Vec<(String, String, String)> = Vec::new();
    for p in v["pairs"].as_array().unwrap() {
        for d in p["decisions"].as_array().into_iter().flatten() {
            said.push((
                p["case_id"].as_str().unwrap().to_string(),
                d["reviewer"].as_str().unwrap().to_string(),
                d["category"].as_str().unwrap().to_string(),
            ));
        }
    }
    said.sort();
    let mut want: Vec<(String, String, String)> = Vec::new();
    for line in ANA.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        want.push((f[0].into(), "ana".into(), f[3].into()));
    }
    for line in BOB.lines() {
        let j: serde_json::Value = serde_json::from_str(line).unwrap();
        want.push((
            j["case_id"].as_str().unwrap().into(),
            "bob".into(),
            j["category"].as_str().unwrap().into(),
        ));
    }
    want.sort();
    assert_eq!(
        said, want,
        "every decision of both reviewers, ana's latest on the shared pair"
    );
    assert_eq!(
        merged.lines().count(),
        12,
        "one event per reviewer and pair:\n{merged}"
    );
    let o = fx.run_in(
        &repo,
        &["agreement", RUN, "--between", "ana,bob", "--format", "json"],
    );
    let a: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(a["pairs"], 6);
}
