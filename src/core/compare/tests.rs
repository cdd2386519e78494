use super::*;
use crate::core::annotations::{AnnotationSource, AnnotationStore};
use crate::core::index::{OpenOptions, load_run};
use serde_json::{Value, json};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// What a hand-made pair shows.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    /// p 0.30 → 0.31: within the 0.1 drift, far from a threshold.
    Pass,
    /// p 0.30 → 0.45: drift 0.15 breaks the invariant.
    Fail,
    /// The variant timed out: a service error.
    Error,
    /// The variant changed `state.a`, which it did not declare.
    Invalid,
    /// The source sits 0.02 from the review threshold and nothing else broke.
    Boundary,
    /// No verdict and no expectation.
    Unchecked,
}

fn pair(case: &str, variant: &str, rep: u32, kind: Kind) -> Value {
    let pv = if kind == Kind::Fail { 0.45 } else { 0.31 };
    let mut v = json!({
        "case_id": case,
        "variant_id": variant,
        "repetition": rep,
        "family": "question",
        "transformation": format!("t-{variant}"),
        "policy": {"review_threshold": 0.55, "action_threshold": 0.9},
        "expectation": {"kind": "invariant", "max_probability_drift": 0.1,
                        "max_confidence_drift": 0.15, "require_same_route": true},
        "minimum_boundary_margin": 0.05,
        "allowed_changes": ["question"],
        "source": {"question": "q", "state": {"a": 1, "b": [1, 2]},
                   "response": {"probability": 0.30, "confidence": 0.8}},
        "variant": {"question": "q, reworded", "state": {"a": 1, "b": [1, 2]},
                    "response": {"probability": pv, "confidence": 0.8}},
    });
    match kind {
        Kind::Error => {
            v["variant"].as_object_mut().map(|o| o.remove("response"));
            v["variant"]["outcome"] = json!("timeout");
        }
        Kind::Invalid => v["variant"]["state"] = json!({"a": 2, "b": [1, 2]}),
        Kind::Boundary => {
            v["source"]["response"]["probability"] = json!(0.53);
            v["variant"]["response"]["probability"] = json!(0.535);
        }
        Kind::Unchecked => {
            v.as_object_mut().map(|o| o.remove("expectation"));
        }
        Kind::Pass | Kind::Fail => {}
    }
    v
}

fn write(dir: &Path, name: &str, lines: &[Value]) -> PathBuf {
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    path
}

fn load(path: &Path) -> RunIndex {
    load_run(&[path.display().to_string()], &OpenOptions::default()).unwrap()
}

fn statuses(kind: Kind) -> Status {
    let dir = tempfile::tempdir().unwrap();
    let idx = load(&write(dir.path(), "r.jsonl", &[pair("c", "v", 0, kind)]));
    idx.rows[0].status()
}

#[test]
fn the_hand_made_pairs_have_the_statuses_they_are_named_for() {
    for (k, s) in [
        (Kind::Pass, Status::Pass),
        (Kind::Fail, Status::Fail),
        (Kind::Error, Status::ServiceError),
        (Kind::Invalid, Status::Invalid),
        (Kind::Boundary, Status::Boundary),
        (Kind::Unchecked, Status::Unchecked),
    ] {
        assert_eq!(statuses(k), s, "{k:?}");
    }
}

#[test]
fn every_pair_of_statuses_gets_one_change() {
    use Status::*;
    let all = [Invalid, ServiceError, Fail, Boundary, Unchecked, Pass];
    for a in all {
        for b in all {
            let c = change_of(a, b);
            let expect = match (a.is_failure(), b.is_failure()) {
                (false, false) => ChangeKind::UnchangedPass,
                (false, true) => ChangeKind::NewFailures,
                (true, false) => ChangeKind::Fixed,
                (true, true) if a == b => ChangeKind::StillFailing,
                (true, true) => ChangeKind::StatusChanged,
            };
            assert_eq!(c, expect, "{a:?} → {b:?}");
        }
    }
    // Boundary is a kind of its own: fail → boundary moved.
    assert_eq!(change_of(Fail, Boundary), ChangeKind::StatusChanged);
    // Unchecked passes: nothing failed.
    assert_eq!(change_of(Fail, Unchecked), ChangeKind::Fixed);
}

#[test]
fn change_names_are_the_documented_ones_and_parse_back() {
    let names: Vec<&str> = ChangeKind::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(
        names,
        [
            "new_failures",
            "fixed",
            "still_failing",
            "status_changed",
            "content_changed",
            "added",
            "removed",
            "unchanged_pass"
        ]
    );
    for c in ChangeKind::ALL {
        assert_eq!(ChangeKind::parse(c.name()), Some(c));
        assert_eq!(serde_json::to_value(c).unwrap(), json!(c.name()));
    }
    assert_eq!(ChangeKind::parse("FIXED"), None);
}

/// OLD and NEW with one or more pairs of every change.
fn two_runs(dir: &Path) -> (RunIndex, RunIndex) {
    use Kind::*;
    let mut reworded = pair("inputs", "v", 0, Fail);
    reworded["variant"]["question"] = json!("q, reworded again");
    let old = vec![
        pair("fixed", "v", 0, Fail),
        pair("new", "v", 0, Pass),
        pair("still", "v", 0, Fail),
        pair("kind", "v", 0, Fail),
        pair("kind", "w", 0, Fail),
        pair("inputs", "v", 0, Fail),
        pair("gone", "v", 0, Fail),
        pair("same", "v", 0, Pass),
        pair("same", "v", 1, Unchecked),
    ];
    let new = vec![
        pair("same", "v", 1, Unchecked),
        pair("same", "v", 0, Pass),
        pair("fixed", "v", 0, Pass),
        pair("new", "v", 0, Fail),
        pair("still", "v", 0, Fail),
        pair("kind", "v", 0, Error),
        pair("kind", "w", 0, Boundary),
        reworded,
        pair("added", "v", 0, Invalid),
    ];
    (
        load(&write(dir, "old.jsonl", &old)),
        load(&write(dir, "new.jsonl", &new)),
    )
}

#[test]
fn every_change_is_found_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = two_runs(dir.path());
    let cmp = compare(&old, &new).unwrap();
    let got: Vec<(String, ChangeKind)> = cmp
        .entries()
        .map(|e| {
            let (idx, row) = match e.new_row {
                Some(i) => (&new, i),
                None => (&old, e.old_row.unwrap()),
            };
            let r = &idx.rows[row as usize];
            (
                format!(
                    "{}/{}#{}",
                    idx.str(r.case),
                    idx.str(r.variant),
                    idx.repetition(row as usize).expect("a recorded repetition")
                ),
                e.change,
            )
        })
        .collect();
    use ChangeKind::*;
    assert_eq!(
        got,
        [
            ("same/v#1".to_string(), UnchangedPass),
            ("same/v#0".to_string(), UnchangedPass),
            ("fixed/v#0".to_string(), Fixed),
            ("new/v#0".to_string(), NewFailures),
            ("still/v#0".to_string(), StillFailing),
            ("kind/v#0".to_string(), StatusChanged),
            ("kind/w#0".to_string(), StatusChanged),
            ("inputs/v#0".to_string(), ContentChanged),
            ("added/v#0".to_string(), Added),
            ("gone/v#0".to_string(), Removed),
        ]
    );
    assert_eq!(cmp.counts(), [1, 1, 1, 2, 1, 1, 1, 2]);
    assert_eq!(cmp.old_row(2), Some(0));
    assert_eq!(cmp.old_row(8), None);
    assert_eq!(cmp.removed(), &[6]);
}

#[test]
fn a_state_written_in_another_key_order_is_the_same_input() {
    let dir = tempfile::tempdir().unwrap();
    let a = pair("c", "v", 0, Kind::Fail);
    // The same values, keys in another order and 1 written 1.0.
    let text = a.to_string().replace(
        r#""state":{"a":1,"b":[1,2]}"#,
        r#""state":{"b":[1,2],"a":1.0}"#,
    );
    assert_ne!(text, a.to_string());
    let path = dir.path().join("new.jsonl");
    std::fs::write(&path, format!("{text}\n")).unwrap();
    let old = load(&write(dir.path(), "old.jsonl", &[a]));
    let new = load(&path);
    let cmp = compare(&old, &new).unwrap();
    assert_eq!(cmp.change(0), Some(ChangeKind::StillFailing));
    // A declared change that differs is another input.
    let mut b = pair("c", "v", 0, Kind::Fail);
    b["allowed_changes"] = json!(["question", "state.a"]);
    let changed = load(&write(dir.path(), "changed.jsonl", &[b]));
    let cmp = compare(&old, &changed).unwrap();
    assert_eq!(cmp.change(0), Some(ChangeKind::ContentChanged));
}

#[test]
fn repeated_ids_meet_in_order_and_the_surplus_is_added_or_removed() {
    let dir = tempfile::tempdir().unwrap();
    // No repetition recorded: three OLD trials, two NEW ones.
    let bare = |k| {
        let mut p = pair("c", "v", 0, k);
        p.as_object_mut().map(|o| o.remove("repetition"));
        p
    };
    let old = load(&write(
        dir.path(),
        "old.jsonl",
        &[bare(Kind::Fail), bare(Kind::Pass), bare(Kind::Pass)],
    ));
    let new = load(&write(
        dir.path(),
        "new.jsonl",
        &[bare(Kind::Pass), bare(Kind::Fail)],
    ));
    let cmp = compare(&old, &new).unwrap();
    assert_eq!(cmp.changes(), &[ChangeKind::Fixed, ChangeKind::NewFailures]);
    assert_eq!(cmp.removed(), &[2]);
}

#[test]
fn a_run_compared_with_itself_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (old, _) = two_runs(dir.path());
    let cmp = compare(&old, &old).unwrap();
    assert_eq!(cmp.count(ChangeKind::Added), 0);
    assert_eq!(cmp.count(ChangeKind::Removed), 0);
    assert_eq!(cmp.count(ChangeKind::ContentChanged), 0);
    assert_eq!(cmp.count(ChangeKind::NewFailures), 0);
    assert_eq!(cmp.count(ChangeKind::Fixed), 0);
    assert_eq!(
        cmp.count(ChangeKind::StillFailing) + cmp.count(ChangeKind::UnchangedPass),
        old.rows.len() as u64
    );
}

/// Identical inputs are told from the digests the loader took: no line is
/// read (both files are emptied by the time the runs are compared), while a
/// record converted from another tool's file, which has no digest, is.
#[test]
fn identical_inputs_are_told_without_reading_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [pair("c", "v", 0, Kind::Fail), pair("c", "w", 0, Kind::Pass)];
    let old = load(&write(dir.path(), "old.jsonl", &lines));
    let new = load(&write(
        dir.path(),
        "new.jsonl",
        &[pair("c", "v", 0, Kind::Pass), lines[1].clone()],
    ));
    std::fs::write(dir.path().join("old.jsonl"), "").unwrap();
    std::fs::write(dir.path().join("new.jsonl"), "").unwrap();
    let cmp = compare(&old, &new).unwrap();
    assert_eq!(
        cmp.changes(),
        &[ChangeKind::Fixed, ChangeKind::UnchangedPass]
    );

    let mut converted = pair("c", "v", 0, Kind::Fail);
    converted["format"] = json!("promptfoo");
    let old = load(&write(dir.path(), "old.jsonl", &[converted.clone()]));
    let new = load(&write(dir.path(), "new.jsonl", &[converted]));
    assert_eq!(
        compare(&old, &new).unwrap().changes(),
        &[ChangeKind::StillFailing]
    );
    std::fs::write(dir.path().join("old.jsonl"), "").unwrap();
    assert!(
        compare(&old, &new).is_err(),
        "a converted record's line is read"
    );
}

#[test]
fn a_line_changed_on_disk_since_indexing_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = two_runs(dir.path());
    std::fs::write(dir.path().join("new.jsonl"), "").unwrap();
    let e = compare(&old, &new).unwrap_err();
    assert!(e.run.ends_with("new.jsonl"), "{e}");
    assert!(e.to_string().contains("compare again"), "{e}");
}

fn decide(store: &mut AnnotationStore, index: &mut RunIndex, row: u32, category: &str) {
    let key = index.key_of(row).unwrap();
    let r = index.rows[row as usize];
    store
        .apply(vec![Change {
            key,
            case_id: index.str(r.case).into(),
            variant_id: index.str(r.variant).into(),
            category: Some(category.into()),
            note: Some(format!("note on {category}")),
            source: AnnotationSource::Manual,
        }])
        .unwrap();
}

#[test]
fn decisions_are_carried_when_the_inputs_hold_and_stale_when_they_changed() {
    let dir = tempfile::tempdir().unwrap();
    let (mut old, mut new) = two_runs(dir.path());
    let old_journal = dir.path().join("old.jsonl.triage.jsonl");
    let mut old_store = AnnotationStore::open(&old_journal, "ana").unwrap();
    // still (2), inputs (5), fixed (0), gone (6), kind/v (3).
    for (row, cat) in [
        (2, "distractor"),
        (5, "ambiguous-contract"),
        (0, "boundary"),
        (6, "service-error"),
        (3, "missing-evidence"),
    ] {
        decide(&mut old_store, &mut old, row, cat);
    }
    let new_journal = dir.path().join("new.jsonl.triage.jsonl");
    let mut new_store = AnnotationStore::open(&new_journal, "bo").unwrap();
    // NEW already decided kind/v (its row 5): its own decision wins.
    decide(&mut new_store, &mut new, 5, "service-error");
    old.resolve_keys(&old_store);
    new.resolve_keys(&new_store);
    let cmp = compare(&old, &new).unwrap();
    let runs = Runs {
        old: &old,
        old_store: Some(&old_store),
        new: &new,
        new_store: Some(&new_store),
    };
    let decided: Vec<(ChangeKind, &str, &str)> = cmp
        .entries()
        .filter_map(|e| {
            let d = cmp.decision(runs, e)?;
            let kind = match d {
                Decision::Own(_) => "own",
                Decision::Carried(_) => "carried",
                Decision::Stale(_) => "stale",
                Decision::Removed(_) => "removed",
            };
            Some((e.change, kind, d.annotation().category.as_deref()?))
        })
        .collect();
    assert_eq!(
        decided,
        [
            (ChangeKind::Fixed, "carried", "boundary"),
            (ChangeKind::StillFailing, "carried", "distractor"),
            (ChangeKind::StatusChanged, "own", "service-error"),
            (ChangeKind::ContentChanged, "stale", "ambiguous-contract"),
            (ChangeKind::Removed, "removed", "service-error"),
        ]
    );
    // Only the pair that still fails with identical inputs and no decision
    // of its own is worth copying.
    let plan = cmp.carry_plan(runs);
    assert_eq!(plan.len(), 1, "{plan:#?}");
    assert_eq!(plan[0].new_row, 4);
    assert_eq!(plan[0].category.as_deref(), Some("distractor"));
    assert_eq!(plan[0].provenance.reviewer, "ana");
    assert!(plan[0].provenance.run.ends_with("old.jsonl"));

    // Copied through the journal, with its provenance, and read back.
    let changes = Comparison::carry_changes(&mut new, &plan).unwrap();
    new_store.carry(changes, &|_| Vec::new()).unwrap();
    drop(new_store);
    let reread = AnnotationStore::read(&new_journal).unwrap();
    let key = new.key_of(4).unwrap();
    let a = reread.get(&key).unwrap();
    assert_eq!(a.category.as_deref(), Some("distractor"));
    assert_eq!(a.note.as_deref(), Some("note on distractor"));
    assert_eq!(a.reviewer, "bo");
    let from = a.carried_from.as_ref().unwrap();
    assert_eq!(from.reviewer, "ana");
    assert!(from.run.ends_with("old.jsonl"));
    assert!(!from.at.is_empty());
    // The OLD journal is untouched by carrying.
    let old_lines = std::fs::read_to_string(&old_journal).unwrap();
    assert_eq!(old_lines.lines().count(), 5);
    assert!(!old_lines.contains("carried_from"));
}

#[test]
fn movement_gives_each_transformation_both_rates_and_their_difference() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = two_runs(dir.path());
    let cmp = compare(&old, &new).unwrap();
    let m = cmp.movement(&old, &new);
    let v = m.iter().find(|m| m.transformation == "t-v").unwrap();
    // OLD t-v: fixed, still, kind, inputs, gone fail; new, same pass (unchecked too).
    let (o, n) = (v.old.unwrap(), v.new.unwrap());
    assert_eq!((o.successes, o.trials), (5, 8));
    assert_eq!((n.successes, n.trials), (5, 8));
    let d = v.difference.unwrap();
    assert_eq!(d, newcombe(&n, &o));
    assert_eq!(v.counts[ChangeKind::Removed as usize], 1);
    assert_eq!(v.counts[ChangeKind::Added as usize], 1);
}

#[test]
fn the_sample_runs_show_every_change() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-runs");
    let old = load(&root.join("compare-before.jsonl"));
    let new = load(&root.join("compare-after.jsonl"));
    let cmp = compare(&old, &new).unwrap();
    let counts: Vec<(&str, u64)> = ChangeKind::ALL
        .iter()
        .map(|&c| (c.name(), cmp.count(c)))
        .collect();
    assert_eq!(
        counts,
        [
            ("new_failures", 2),
            ("fixed", 2),
            ("still_failing", 4),
            ("status_changed", 1),
            ("content_changed", 1),
            ("added", 1),
            ("removed", 1),
            ("unchanged_pass", 7),
        ]
    );
    assert!(old.problems.is_empty() && new.problems.is_empty());
    let store = AnnotationStore::read(&root.join("compare-before.jsonl.triage.jsonl")).unwrap();
    let mut old = old;
    old.resolve_keys(&store);
    let runs = Runs {
        old: &old,
        old_store: Some(&store),
        new: &new,
        new_store: None,
    };
    let kinds: Vec<(ChangeKind, bool)> = cmp
        .entries()
        .filter_map(|e| Some((e.change, cmp.decision(runs, e)?.is_stale())))
        .collect();
    assert_eq!(
        kinds,
        [
            (ChangeKind::StillFailing, false),
            (ChangeKind::ContentChanged, true),
            (ChangeKind::Fixed, false),
            (ChangeKind::StillFailing, false),
        ]
    );
    assert_eq!(cmp.carry_plan(runs).len(), 2);
}

#[test]
fn change_queries_select_by_change_and_hold_nowhere_without_a_baseline() {
    use crate::core::query::{Context, parse};
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = two_runs(dir.path());
    let cmp = compare(&old, &new).unwrap();
    let all: Vec<u32> = (0..new.rows.len() as u32).collect();
    let run = |q: &str, changes: Option<&[ChangeKind]>| {
        let ctx = Context {
            index: &new,
            store: None,
            changes,
        };
        let q = parse(q).unwrap();
        let filtered = q.filter(&ctx, &all);
        // The one-row path agrees with the filter.
        let one: Vec<u32> = all
            .iter()
            .copied()
            .filter(|&i| q.matches(&ctx, i))
            .collect();
        assert_eq!(filtered, one);
        filtered
    };
    let c = Some(cmp.changes());
    assert_eq!(run("change:fixed", c), [2]);
    assert_eq!(run("change:new_failures|fixed", c), [2, 3]);
    assert_eq!(run("change:status_*", c), [5, 6]);
    assert_eq!(run("-change:unchanged_pass status:fail", c), [3, 4, 7]);
    assert_eq!(run("change:added", c), [8]);
    assert!(run("change:removed", c).is_empty());
    assert!(run("change:fixed", None).is_empty());
    assert!(parse("change:").is_err());
    let e = parse("change:fixd").unwrap_err();
    assert!(e.message.contains("new_failures, fixed"), "{}", e.message);
}
