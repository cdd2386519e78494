//! The fast path against the slow path, line by line and over whole runs:
//! wherever the fast path reads a line, it reads it as the slow path does.

use super::*;
use crate::core::index::{OpenOptions, load_run_with};
use std::io::Write;
use std::path::Path;

const GOOD: &str = r#"{"case_id":"c1","variant_id":"v1","passed":false,"reasons":["x"]}"#;

/// Every sample in sample-runs/, read both ways: identical rows, strings and problems.
#[test]
fn fast_path_matches_slow_path_on_every_sample() {
    let n = runs_read_both_ways_alike("sample-runs");
    assert!(n >= 4, "samples found: {n}");
}

/// Every fixture of the seeds' rules (unusable answers, boundary
/// observations, array order, recorded routes, service errors), read both
/// ways alike; and the fast path reads most of their lines itself, so the
/// comparison is not only of the slow path with itself.
#[test]
fn fast_path_matches_slow_path_on_every_fidelity_fixture() {
    let n = runs_read_both_ways_alike("tests/fixtures/fidelity");
    assert!(n >= 6, "fixtures found: {n}");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fidelity");
    let (mut lines, mut fast) = (0, 0);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                lines += 1;
                fast += usize::from(assert_agrees(line));
            }
        }
    }
    assert!(
        fast * 4 >= lines * 3,
        "{fast} of {lines} lines read the fast way"
    );
}

/// Load every run in `dir` (relative to the crate) the fast way and the
/// slow way and compare rows, strings and problems; how many runs.
fn runs_read_both_ways_alike(dir: &str) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.to_string_lossy().to_string();
        if !name.ends_with(".jsonl") || name.ends_with(".triage.jsonl") {
            continue;
        }
        let fast = load_run_with(
            std::slice::from_ref(&name),
            &OpenOptions::default(),
            ParseMode::Fast,
        )
        .unwrap();
        let slow = load_run_with(
            std::slice::from_ref(&name),
            &OpenOptions::default(),
            ParseMode::Slow,
        )
        .unwrap();
        assert_eq!(fast.rows.len(), slow.rows.len(), "{name}");
        for (a, b) in fast.rows.iter().zip(&slow.rows) {
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{name}");
        }
        assert_eq!(fast.strings(), slow.strings(), "{name}");
        assert_eq!(fast.problems, slow.problems, "{name}");
        n += 1;
    }
    n
}

/// Odd lines the fast path must hand to the slow path, or read the same.
#[test]
fn fast_path_falls_back_on_anything_unusual() {
    let lines = [
        GOOD,
        r#"{"case_id":"c","caseId":"d","variant_id":"v"}"#,
        r#"{"case_id":"c","variant_id":"v","passed":"no"}"#,
        r#"{"case_id":"c","variant_id":"v","timestamp":5,"label":true}"#,
        r#"{"case_id":"c","variant_id":"v","source":{"response":{"probability":1.5},"probability":0.4}}"#,
        r#"{"case_id":"c","variant_id":"v","source":{"response":{"probability":0.5},"probability":7}}"#,
        r#"{"case_id":"c","variant_id":"v","policy":{"review_threshold":0.9,"action_threshold":0.5}}"#,
        r#"{"case_id":"c","variant_id":"v","policy":{"review":0.5}}"#,
        r#"{"case_id":"c","variant_id":"v","review_threshold":0.5,"actionThreshold":0.9,"source":{"p":0.7},"variant":{"p":0.95}}"#,
        r#"{"case_id":"c","variant_id":"v","sourceRoute":"ACT","variantRoute":"nope"}"#,
        r#"{"case_id":"c","variant_id":"v","expectation":{"type":"allowed_routes","allowedRoutes":["pass","x"]}}"#,
        r#"{"case_id":"c","variant_id":"v","expectation":{"kind":"Not_Less_Urgent"},"source":{"p":0.7},"variant":{"p":0.2}}"#,
        r#"{"case_id":"c","variant_id":"v","expectation":{"kind":"mystery"}}"#,
        r#"{"case_id":"c","variant_id":"v","source":{"question":{"q":1}}}"#,
        r#"{"case_id":"c","variant_id":"v","source":{"question":"a\u00e9","state":{"a":1,"b":[1,2]}},"variant":{"question":"a\u00e9","state":{"b":[1,2],"a":1}},"allowed_changes":[]}"#,
        r#"{"case_id":"c","variant_id":"v","source":{"state":{"a":1,"a":2}},"variant":{"state":{"a":2}}}"#,
        r#"{"case_id":"c","variant_id":"v","source":{"state":{"evidence":[{"id":1},{"id":2}],"x":1e400}},"variant":{"state":{}}}"#,
        r#"{"case_id":"c","variant_id":"v","source":{"state":[1,2,3]},"variant":{"state":[1,3]},"family":"evidence-ablation"}"#,
        r#"{"case_id":"c","variant_id":"v","source":{"state":{"k":1}},"variant":{"payload":{"k":1.0,"j":null}}}"#,
        r#"{"case_id":"c","variant_id":"v","source":{"outcome":"TIMED_OUT","latencyMs":3e4},"variant":{"status":"weird","error_message":"boom"}}"#,
        r#"{"case_id":"c\"q","variant_id":"v\n","repetition":2.5,"model_id":"m","contractVersion":"k"}"#,
        r#"{"case_id":"c","variant_id":"v","repetition":3,"minimum_boundary_margin":0.1,"policy":{"reviewThreshold":0.55,"actionThreshold":0.9},"source":{"noul":0.56,"c":0.5},"variant":{"noul":0.54,"c":0.5},"passed":true,"reasons":"x"}"#,
        r#"{"case_id":"c","variant_id":"v","reasons":["Source is too close to a decision boundary."],"passed":false}"#,
        r#"{"case_id":"c","variant_id":"v","source":null,"variant":{"state":null,"question":null}}"#,
        r#"{"case_id":"c","variant_id":"v","allowed_changes":"state.x"}"#,
        r#"{"case_id":"c","variant_id":"v","source":{"latency":"slow"}}"#,
    ];
    let text = lines.join("\n");
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    let p = f.path().to_string_lossy().to_string();
    let fast = load_run_with(
        std::slice::from_ref(&p),
        &OpenOptions::default(),
        ParseMode::Fast,
    )
    .unwrap();
    let slow = load_run_with(&[p], &OpenOptions::default(), ParseMode::Slow).unwrap();
    assert_eq!(fast.rows.len(), slow.rows.len());
    for (i, (a, b)) in fast.rows.iter().zip(&slow.rows).enumerate() {
        assert_eq!(fast.loc(i), slow.loc(i));
        assert_eq!(
            format!("{a:?}"),
            format!("{b:?}"),
            "line {}",
            fast.loc(i).line
        );
    }
    assert_eq!(fast.strings(), slow.strings());
    assert_eq!(fast.problems, slow.problems);
}

/// One line through the fast path, with nothing validating it first,
/// and through the slow path: the fast description is `None` when the
/// fast path declines the line.
fn both_ways_unkeyed(line: &str) -> (Option<String>, String) {
    let buf = line.as_bytes();
    let slow = match slow_row(line, true) {
        LineOut::Row(d) => describe_row(&d, buf),
        other => format!("{other:?}"),
    };
    let fast = fast_row(buf, line).map(|d| describe_row(&d, buf));
    (fast, slow)
}

/// The fast path reads `line` as the slow path does, or declines it.
fn assert_agrees(line: &str) -> bool {
    let (fast, slow) = both_ways_unkeyed(line);
    if let Some(fast) = &fast {
        assert_eq!(fast, &slow, "{line}");
    }
    fast.is_some()
}

/// Policies and expectations are recalled from earlier lines' when
/// written alike, and read as the slow path reads them whatever came
/// before: alike, differing in a digit, with a brace in a string, read
/// twice, declined.
#[test]
fn repeated_policies_and_expectations_read_as_the_slow_path() {
    let line = |policy: &str, expectation: &str| {
        format!(
            r#"{{"case_id":"c","variant_id":"v","policy":{policy},"expectation":{expectation},"source":{{"probability":0.5,"route":"review"}},"variant":{{"probability":0.95,"route":"action"}}}}"#
        )
    };
    let p = r#"{"review_threshold":0.55,"action_threshold":0.9}"#;
    let invariant = r#"{"kind":"invariant","max_probability_drift":0.1}"#;
    // Each line is read twice in a row: kept, then recalled.
    let lines = [
        (line(p, invariant), true),
        (
            line(p, r#"{"kind":"invariant","max_probability_drift":0.5}"#),
            true,
        ),
        (line(p, invariant), true),
        (
            line(
                r#"{"review_threshold":0.55,"action_threshold":0.95}"#,
                r#"{"kind":"invariant"}"#,
            ),
            true,
        ),
        (
            line(
                r#"{"review_threshold":0.95,"action_threshold":0.9}"#,
                r#"{"kind":"invariant"}"#,
            ),
            false,
        ),
        // Two policies, the second with the other threshold only.
        (
            line(r#"{"review_threshold":0.55}"#, r#"{"kind":"invariant"}"#).replace(
                r#""expectation""#,
                r#""policy":{"action_threshold":0.9},"expectation""#,
            ),
            false,
        ),
        (
            line(r#"{"action_threshold":0.9}"#, r#"{"kind":"invariant"}"#),
            false,
        ),
        (
            line(
                p,
                r#"{"kind":"allowed-routes","allowed_routes":["review","action"]}"#,
            ),
            true,
        ),
        (
            line(
                p,
                r#"{"kind":"allowed-routes","allowed_routes":["review","zzz"]}"#,
            ),
            false,
        ),
        (
            line(p, r#"{"kind":"odd}kind","max_probability_drift":0.1}"#),
            true,
        ),
        (
            line(
                p,
                r#"{"kind":"invariant","max_probability_drift":0.1,"kind":"invariant"}"#,
            ),
            false,
        ),
        (
            line(p, invariant).replace(
                r#""source""#,
                &format!(r#""expectation":{invariant},"source""#),
            ),
            false,
        ),
        (line(p, invariant), true),
    ];
    super::forget_states();
    for (line, accepted) in &lines {
        for _ in 0..2 {
            assert_eq!(assert_agrees(line), *accepted, "{line}");
        }
    }
}

/// A variant state whose text begins as the source's reads its leading
/// members from the source's: each state below, as the variant's, is
/// read as the slow path reads it, or declined where it must be.
#[test]
fn a_variant_state_that_begins_as_the_source_reads_as_the_slow_path() {
    let source = r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1},"t":true}"#;
    for (variant, accepted) in [
        (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1},"t":false}"#, true),
        (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":2},"t":true}"#, true),
        (r#"{"a":1,"b":"x","c":[1,2,3],"d":{"e":1},"t":true}"#, true),
        (
            r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1},"t":true,"f":0}"#,
            true,
        ),
        (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1}}"#, true),
        (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1} }"#, true),
        (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1} ,"t":true}"#, true),
        (
            r#"{"a":1,"b":"x","g":null,"c":[1,2],"d":{"e":1},"t":true}"#,
            true,
        ),
        (r#"{"a":12,"b":"x","c":[1,2],"d":{"e":1},"t":true}"#, true),
        (r#"{"a":1.5,"b":"x"}"#, true),
        (r#"{"a":1,"b":"xy","c":[1,2]}"#, true),
        (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1},"t":true1}"#, false),
        (r#"{"a":1,"b":"x","c":[1,2],"a":2}"#, false),
        (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1},"b":"x"}"#, false),
        (r#"{"a":1,"b":"x","c":[1,2],"d":{"e":1},"t":true,}"#, false),
        (r#"{"a":1,"b":"x","c":[1,2]"#, false),
    ] {
        for allowed in ["", r#","allowed_changes":["state.t","state.f"]"#] {
            let line = format!(
                r#"{{"case_id":"c","variant_id":"v"{allowed},"source":{{"state":{source}}},"variant":{{"state":{variant}}}}}"#
            );
            super::forget_states();
            assert_eq!(assert_agrees(&line), accepted, "{line}");
        }
    }
}

/// A side with two spellings of its state (the slow path reads one, the
/// fast path declines the line): the state kept for the next line is
/// the one scanned last, with its own members only, and a later line
/// whose state repeats it reads as the slow path reads it.
#[test]
fn a_side_with_two_states_keeps_only_the_last() {
    let two = r#"{"case_id":"c","variant_id":"v","source":{"state":{"a":1,"b":2},"payload":{"c":3}},"variant":{"state":{"c":4}}}"#;
    assert!(!assert_agrees(two), "declined: two spellings of one field");
    let again = r#"{"case_id":"c","variant_id":"v","allowed_changes":["state.c"],"source":{"state":{"c":3}},"variant":{"state":{"c":4,"d":5}}}"#;
    assert!(assert_agrees(again), "declined: {again}");
}

/// A variant state member whose text begins with the source's is read
/// in full, not stepped over: the fast path takes these lines and agrees.
#[test]
fn state_members_that_only_begin_alike() {
    for (a, b) in [
        (r#"{"n":1,"t":true}"#, r#"{"n":17,"t":true}"#),
        (r#"{"n":1.5,"t":true}"#, r#"{"n":1.5e3,"t":true}"#),
        (r#"{"n":-2}"#, r#"{"n":-2.25}"#),
        (r#"{"n":0,"m":"x"}"#, r#"{"m":"x","n":0.5}"#),
        (
            r#"{"n":"ab","o":{"k":[1]}}"#,
            r#"{"n":"ab","o":{"k":[1]},"p":null}"#,
        ),
        (r#"{"n":1,"o":[1,2]}"#, r#"{"n":1 ,"o":[1,2] }"#),
    ] {
        for (x, y) in [(a, b), (b, a)] {
            let line = format!(
                r#"{{"case_id":"c","variant_id":"v","allowed_changes":["n"],"source":{{"state":{x}}},"variant":{{"state":{y}}}}}"#
            );
            assert!(assert_agrees(&line), "declined: {line}");
        }
    }
}

/// Lines the scanner must decline by itself: serde_json refuses them, or
/// the slow path warns about them, or they are past what it models.
#[test]
fn fast_path_declines_on_its_own() {
    let head = r#"{"case_id":"c","variant_id":"v""#;
    let deep = |n: usize| format!("{head},\"x\":{}{}}}", "[".repeat(n), "]".repeat(n));
    let mut lines: Vec<String> = [
        // Repeated keys, at every level, and two spellings of one field.
        r#","x":1,"x":2}"#,
        r#","source":{"state":{"a":{"b":1,"b":1}}},"variant":{"state":{"a":{"b":1,"b":1}}}}"#,
        r#","variant":{"state":{"a":1}},"source":{"state":{"a":1,"a":1}}}"#,
        r#","runner":[{"k":1,"k":1}]}"#,
        r#","source":{"route":"pass","route":"pass"}}"#,
        r#","policy":{"review":0.5,"review":0.5,"action":0.9}}"#,
        r#","expectation":{"kind":"invariant","kind":"invariant"}}"#,
        r#","source":{"response":{"p":0.5,"p":0.5}}}"#,
        r#","caseId":"c"}"#,
        r#","source":{"probability":0.5,"noul":0.5}}"#,
        r#","source":{"p":null,"noul":0.5}}"#,
        r#","family":"a","family":"a"}"#,
        r#","\u0078":1,"x":2}"#,
        // Numbers serde_json refuses, and one the fast path leaves alone.
        r#","x":1e400}"#,
        r#","x":-1e400}"#,
        r#","x":01}"#,
        r#","x":1.}"#,
        r#","x":.5}"#,
        r#","x":+1}"#,
        r#","x":1e}"#,
        r#","x":-}"#,
        r#","x":NaN}"#,
        r#","x":Infinity}"#,
        r#","x":1e301}"#,
        // Strings serde_json refuses.
        r#","x":"\ud800"}"#,
        r#","x":"\udc00\ud800"}"#,
        r#","x":"\ud800\u0041"}"#,
        r#","x":"\x"}"#,
        r#","x":"\u12"}"#,
        ",\"x\":\"a\u{1}b\"}",
        ",\"x\":\"a\tb\"}",
        // Broken structure.
        r#"}x"#,
        r#"}{}"#,
        r#","x":[1,]}"#,
        r#","x":{"a":1,}}"#,
        r#","x":{"a" 1}}"#,
        r#","x":[1 2]}"#,
        r#","x":tru}"#,
        r#","#,
        r#","x":"unterminated}"#,
        // Values of the wrong kind.
        r#","passed":"no"}"#,
        r#","family":5}"#,
        r#","source":{"state":{"a":1}},"variant":"x"}"#,
        r#","policy":{"review":0.5}}"#,
        r#","reasons":[1]}"#,
    ]
    .iter()
    .map(|tail| format!("{head}{tail}"))
    .collect();
    lines.push(deep(127));
    lines.push(r#"[{"case_id":"c","variant_id":"v"}]"#.to_string());
    lines.push(r#"{"case_id":null,"variant_id":"v"}"#.to_string());
    lines.push(r#"{"case_id":1,"variant_id":"v"}"#.to_string());
    for line in &lines {
        assert!(
            super::READER.with_borrow_mut(|r| r.parse(line).is_none()),
            "accepted: {line}"
        );
        assert!(!assert_agrees(line));
    }
    // What serde_json accepts and the fast path models, it reads.
    let accepted: Vec<String> = [
        r#","x":[{"k":1},{"k":1}],"y":{"k":{"k":1}}}"#,
        r#","x":"\ud83d\ude00 caf\u00e9 \"q\" \\ \/ \b\f\n\r\t","y":-0,"z":1e-400,"w":1E2}"#,
        r#","label":5,"timestamp":1.5,"reasons":"one reason","passed":null}"#,
        r#","policy":{"review":0.5,"action":0.9},"review_threshold":"ignored"}"#,
        r#","expectation":{"kind":"not_less_urgent","max_probability_drift":"unread"}}"#,
        r#","source":{"response":{"p":0.5},"p":"unread","state":"s"},"variant":{"state":"s"}}"#,
        " , \"source\" : { \"state\" : { \"a\" : [ 1 , 2 ] } } , \"variant\" : { \"state\" : { \"a\" : [ 1 , 3 ] } } }",
        // Probabilities and confidences outside [0, 1]: not recorded,
        // with a warning each, the side's own fields read instead.
        r#","source":{"response":{"probability":1.5}}}"#,
        r#","source":{"response":{"noul":-0.25,"c":7},"probability":0.4,"confidence":2},"variant":{"response":{"p" : 1e3}}}"#,
        " ,\"variant\":{\"probability\"\t:\r 1.0000001,\"confidence\":-0}}",
    ]
    .iter()
    .map(|tail| format!("{head}{tail}"))
    .chain([deep(126)])
    .collect();
    for line in &accepted {
        assert!(
            super::READER.with_borrow_mut(|r| r.parse(line).is_some()),
            "declined: {line}"
        );
        assert!(assert_agrees(line));
    }
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    /// Small JSON texts, mostly valid: the values odd runs hold.
    fn leaf() -> impl Strategy<Value = String> {
        let good: &[&str] = &[
            "null",
            "true",
            "false",
            "0",
            "-0",
            "1",
            "0.5",
            "1.0",
            "0.55",
            "0.9",
            "2",
            "-1",
            "3e0",
            "0.25",
            "1E-400",
            "1e300",
            "123456789012345678901234567890",
            r#""x""#,
            r#""pass""#,
            r#""ACT""#,
            r#""review""#,
            r#""nope""#,
            r#""ok""#,
            r#""timeout""#,
            r#""invariant""#,
            r#""not_less_urgent""#,
            r#""allowed-routes""#,
            r#""mystery""#,
            r#""a\u00e9""#,
            r#""\ud83d\ude00""#,
            r#""t\tab""#,
            r#""evidence-ablation""#,
            r#""state.a""#,
            r#""question""#,
            r#""Source is too close to a decision boundary.""#,
            "[]",
            "{}",
            r#"["pass","review"]"#,
            r#"["state.a","b"]"#,
            r#"[1,"x"]"#,
        ];
        let bad: &[&str] = &[
            "1e400",
            "01",
            "1.",
            "2e301",
            r#""\ud800""#,
            "\"ctl\u{1}\"",
            r#""bad\x""#,
        ];
        prop_oneof![
            12 => proptest::sample::select(good).prop_map(str::to_string),
            1 => proptest::sample::select(bad).prop_map(str::to_string),
        ]
    }

    /// Top-level members of the right type, in either spelling.
    fn top_member() -> impl Strategy<Value = (String, String)> {
        let typed: &[(&str, &str)] = &[
            ("family", r#""evidence-ablation""#),
            ("family", r#""state-noise""#),
            ("transformation", r#""paraphrase""#),
            ("contractVersion", r#""q/3""#),
            ("model_id", r#""m\n1""#),
            (
                "policy",
                r#"{"review_threshold":0.55,"action_threshold":0.9}"#,
            ),
            (
                "policy",
                r#"{"reviewThreshold":0.5,"action":0.8,"note":[1]}"#,
            ),
            ("reviewThreshold", "0.5"),
            ("action_threshold", "0.9"),
            (
                "expectation",
                r#"{"kind":"invariant","max_probability_drift":0.1,"maxConfidenceDrift":0.2}"#,
            ),
            (
                "expectation",
                r#"{"type":"allowed_routes","allowedRoutes":["pass","review"]}"#,
            ),
            (
                "expectation",
                r#"{"kind":"not-more-urgent","permittedProbabilityMovement":0.05}"#,
            ),
            ("allowed_changes", r#"["state.a","question"]"#),
            ("allowedChanges", r#""b""#),
            ("passed", "false"),
            ("passed", "true"),
            (
                "reasons",
                r#"["Source is too close to a decision boundary."]"#,
            ),
            ("sourceRoute", r#""pass""#),
            ("variant_route", r#""Action""#),
            ("minimum_boundary_margin", "0.1"),
            ("repetition", "2"),
        ];
        prop_oneof![
            4 => proptest::sample::select(typed).prop_map(|(k, v)| (k.to_string(), v.to_string())),
            1 => (key(), value()),
        ]
    }

    /// Side members of the right type, in either spelling.
    fn side_member() -> impl Strategy<Value = (String, String)> {
        let typed: &[(&str, &str)] = &[
            ("question", r#""q""#),
            ("prompt", r#""q\u00e9""#),
            ("response", r#"{"probability":0.5,"confidence":0.8}"#),
            ("assessment", r#"{"noul":0.93,"c":0.7}"#),
            ("noul", "0.56"),
            ("p", "0.2"),
            ("confidence", "0.9"),
            ("route", r#""ACT""#),
            ("route", r#""pass""#),
            ("outcome", r#""timeout""#),
            ("status", r#""ok""#),
            ("latencyMs", "3e4"),
            ("error_message", r#""boom""#),
            ("decision", r#""approve""#),
        ];
        prop_oneof![
            4 => proptest::sample::select(typed).prop_map(|(k, v)| (k.to_string(), v.to_string())),
            1 => (key(), value()),
        ]
    }

    /// Keys of every level in both spellings, a few others, and escapes.
    fn key() -> impl Strategy<Value = String> {
        let keys: &[&str] = &[
            "case_id",
            "caseId",
            "variant_id",
            "variantId",
            "label",
            "family",
            "transformation",
            "contract_version",
            "modelId",
            "policy",
            "review_threshold",
            "actionThreshold",
            "expectation",
            "minimum_boundary_margin",
            "allowed_changes",
            "allowedChanges",
            "sourceRoute",
            "variant_route",
            "passed",
            "reasons",
            "repetition",
            "question",
            "prompt",
            "state",
            "payload",
            "response",
            "assessment",
            "probability",
            "noul",
            "p",
            "confidence",
            "c",
            "route",
            "outcome",
            "status",
            "error",
            "latency_ms",
            "decision",
            "kind",
            "type",
            "review",
            "action",
            "max_probability_drift",
            "maximumNoulDrift",
            "require_same_route",
            "permitted_probability_movement",
            "allowed_routes",
            "a",
            "b",
            "evidence",
            "x",
            "\\u0061",
            "é",
        ];
        proptest::sample::select(keys).prop_map(str::to_string)
    }

    fn object(members: Vec<(String, String)>, spaced: bool) -> String {
        let sep = if spaced { " , " } else { "," };
        let body: Vec<String> = members
            .iter()
            .map(|(k, v)| {
                if spaced {
                    format!("\"{k}\" : {v}")
                } else {
                    format!("\"{k}\":{v}")
                }
            })
            .collect();
        format!("{{{}}}", body.join(sep))
    }

    /// JSON texts nested a few levels, with any key at any level.
    fn value() -> impl Strategy<Value = String> {
        leaf().prop_recursive(3, 24, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                (
                    proptest::collection::vec((key(), inner), 0..5),
                    any::<bool>()
                )
                    .prop_map(|(m, spaced)| object(m, spaced)),
            ]
        })
    }

    /// A side: its state (shared with the other side or not) and members.
    fn side(state: String) -> impl Strategy<Value = String> {
        (proptest::collection::vec(side_member(), 0..5), 0..6usize).prop_map(move |(mut m, at)| {
            m.insert(at.min(m.len()), ("state".to_string(), state.clone()));
            object(m, false)
        })
    }

    fn line() -> impl Strategy<Value = String> {
        (value(), value(), any::<bool>())
            .prop_flat_map(|(a, b, same)| {
                let b = if same { a.clone() } else { b };
                (
                    side(a),
                    side(b),
                    proptest::collection::vec(top_member(), 0..6),
                    any::<bool>(),
                    any::<bool>(),
                )
            })
            .prop_map(|(src, var, top, swap, spaced)| {
                let mut m = vec![
                    ("case_id".to_string(), "\"c\\u00e9\"".to_string()),
                    ("variant_id".to_string(), "\"v\"".to_string()),
                ];
                let sides = [("source", src), ("variant", var)];
                for (k, v) in if swap {
                    [sides[1].clone(), sides[0].clone()]
                } else {
                    sides
                } {
                    m.push((k.to_string(), v));
                }
                m.extend(top);
                object(m, spaced)
            })
    }

    /// A variant state made from the source's members, each kept,
    /// replaced, extended by text that may or may not stay valid (a
    /// digit after a number, junk after a literal, a second closing
    /// brace), dropped or repeated, in the same order or rotated: the
    /// scanner steps over members whose text repeats the source's.
    fn edited_states() -> impl Strategy<Value = (String, String)> {
        let members = proptest::collection::vec((key(), value()), 0..6);
        let edits = proptest::collection::vec((0..8u8, value()), 6);
        (members, edits, 0..6usize, any::<bool>()).prop_map(|(m, edits, rotate, spaced)| {
            let mut n = Vec::new();
            for ((k, v), (op, other)) in m.iter().zip(edits) {
                match op {
                    0..=2 => n.push((k.clone(), v.clone())),
                    3 => n.push((k.clone(), other)),
                    4 => n.push((k.clone(), format!("{v}7"))),
                    5 => n.push((k.clone(), format!("{v}x"))),
                    6 => n.push((k.clone(), format!("{v}}}"))),
                    _ => {
                        n.push((k.clone(), v.clone()));
                        n.push((k.clone(), v.clone()));
                    }
                }
            }
            if !n.is_empty() {
                let at = rotate % n.len();
                n.rotate_left(at);
            }
            (object(m, spaced), object(n, !spaced))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]
        /// Repeated keys, odd numbers, escapes, nesting, wrong types and
        /// both spellings: the fast path agrees or declines by itself.
        #[test]
        fn fast_path_agrees_or_declines(line in line()) {
            assert_agrees(&line);
        }

        /// Lines that repeat earlier lines' states, at other offsets and
        /// on either side: read on one thread, one after another, as the
        /// loader reads a case's lines, a state recalled from an earlier
        /// line reads as the slow path reads it.
        #[test]
        fn states_repeated_from_line_to_line_read_as_the_slow_path_reads_them(
            (a, b) in edited_states(),
            steps in proptest::collection::vec((0..4u8, 0..40usize, any::<bool>()), 1..6),
        ) {
            for (pick, pad, swap) in steps {
                let (src, var) = match pick {
                    0 => (&a, &a),
                    1 => (&a, &b),
                    2 => (&b, &a),
                    _ => (&b, &b),
                };
                let case = "c".repeat(pad + 1);
                let sides = if swap {
                    format!(r#""variant":{{"state":{var}}},"source":{{"state":{src}}}"#)
                } else {
                    format!(r#""source":{{"state":{src}}},"variant":{{"state":{var}}}"#)
                };
                let line = format!(
                    r#"{{"case_id":"{case}","variant_id":"v","allowed_changes":["state.a"],{sides}}}"#
                );
                assert_agrees(&line);
            }
        }

        /// A variant state that repeats some of the source's members.
        #[test]
        fn shared_state_members_read_as_the_slow_path_reads_them(
            (a, b) in edited_states(),
            swap in any::<bool>(),
        ) {
            let (first, second) = if swap { ("variant", "source") } else { ("source", "variant") };
            let line = format!(
                r#"{{"case_id":"c","variant_id":"v","allowed_changes":["state.a"],"{first}":{{"state":{a}}},"{second}":{{"state":{b}}}}}"#
            );
            assert_agrees(&line);
        }
    }
}

/// A bare `question` in `allowed_changes` names the question, so it does
/// not cover a state field that happens to be called `question`; a bare
/// key that is not a root does.
#[test]
fn a_bare_question_entry_does_not_cover_a_state_field_of_that_name() {
    let line = |key: &str, allowed: &str| {
        format!(
            r#"{{"case_id":"c","variant_id":"v","source":{{"state":{{"{key}":[-1]}}}},"variant":{{"state":{{}}}},"allowed_changes":["state.a","{allowed}"]}}"#
        )
    };
    for (key, allowed, invalid) in [
        ("question", "question", true),
        ("question", "state.question", false),
        ("b", "b", false),
        ("b", "question", true),
    ] {
        let line = line(key, allowed);
        let (_, slow) = both_ways_unkeyed(&line);
        assert_eq!(slow.contains("validity: Invalid"), invalid, "{line}");
        assert_agrees(&line);
    }
}

/// The inputs digest of `line` as the slow path makes it, checked against
/// the fast path's where it accepts the line.
fn inputs_of(line: &str) -> InputsDigest {
    assert_agrees(line);
    match slow_row(line, true) {
        LineOut::Row(d) => d.inputs,
        other => panic!("{other:?}"),
    }
}

/// Each side's question and state as written: another answer, latency,
/// time or key order is the same inputs; a regenerated paraphrase, an
/// edited state, a question left out is not; `prompt` and `payload` are
/// the question and the state.
#[test]
fn a_digest_is_of_the_questions_and_states_as_written() {
    let a = r#"{"case_id":"c","variant_id":"v","source":{"question":"q","state":{"a":1},"response":{"probability":0.2}},"variant":{"question":"q2","state":{"a":1}}}"#;
    let b = r#"{"timestamp":"t","case_id":"c","variant_id":"v","source":{"latency_ms":5,"question":"q","state":{"a":1},"response":{"probability":0.9}},"variant":{"state":{"a":1},"question":"q2"}}"#;
    assert!(assert_agrees(a) && assert_agrees(b));
    assert_eq!(inputs_of(a), inputs_of(b));
    assert!(inputs_of(a).get().is_some());
    for other in [
        r#"{"case_id":"c","variant_id":"v","source":{"question":"q","state":{"a":1}},"variant":{"question":"q3","state":{"a":1}}}"#,
        r#"{"case_id":"c","variant_id":"v","source":{"question":"q","state":{"a":2}},"variant":{"question":"q2","state":{"a":1}}}"#,
        r#"{"case_id":"c","variant_id":"v","source":{"question":"q","state":{"a":1}},"variant":{"question":"q2"}}"#,
        r#"{"case_id":"c","variant_id":"v","source":{"question":"q","state":{"a": 1}},"variant":{"question":"q2","state":{"a":1}}}"#,
    ] {
        assert_ne!(inputs_of(a), inputs_of(other), "{other}");
    }
    let prompt = r#"{"case_id":"c","variant_id":"v","source":{"prompt":"q","payload":{"a":1}},"variant":{"prompt":"q2","payload":{"a":1}}}"#;
    assert_eq!(inputs_of(a), inputs_of(prompt));
    // The declared changes are inputs too.
    let declared = r#"{"case_id":"c","variant_id":"v","allowed_changes":["question"],"source":{"question":"q","state":{"a":1}},"variant":{"question":"q2","state":{"a":1}}}"#;
    let declared_more = r#"{"case_id":"c","variant_id":"v","allowedChanges":["question","state.a"],"source":{"question":"q","state":{"a":1}},"variant":{"question":"q2","state":{"a":1}}}"#;
    assert_ne!(inputs_of(a), inputs_of(declared));
    assert_ne!(inputs_of(declared), inputs_of(declared_more));
    let declared_again = r#"{"allowed":["question"],"case_id":"c","variant_id":"v","source":{"question":"q","state":{"a":1}},"variant":{"question":"q2","state":{"a":1}},"passed":true}"#;
    assert_eq!(inputs_of(declared), inputs_of(declared_again));
    // A null is not recorded; nothing recorded is the empty digest.
    let null = r#"{"case_id":"c","variant_id":"v","source":{"question":"q","state":{"a":1},"error":null},"variant":{"question":"q2","state":{"a":1},"decision":null}}"#;
    assert_eq!(inputs_of(a), inputs_of(null));
    for none in [
        r#"{"case_id":"c","variant_id":"v","source":{"noul":0.9},"variant":{}}"#,
        r#"{"case_id":"c","variant_id":"v","source":{"question":null},"variant":{"state":null}}"#,
        r#"{"case_id":"c","variant_id":"v","source":"q","variant":[1]}"#,
    ] {
        assert_eq!(inputs_of(none), InputsDigest::EMPTY, "{none}");
        assert_eq!(inputs_of(none).get(), None, "{none}");
    }
}

/// A record converted from another tool's file (it names the tool in
/// `format`) has no inputs digest on either path; a `null` there names none.
#[test]
fn a_converted_record_has_no_inputs_digest() {
    let line = |format: &str| {
        format!(
            r#"{{"case_id":"c","variant_id":"v",{format}"source":{{"question":"q","state":{{"a":1}}}},"variant":{{"question":"q2","state":{{"a":1}}}}}}"#
        )
    };
    let native = inputs_of(&line(""));
    assert!(native.get().is_some());
    assert_eq!(
        inputs_of(&line(r#""format":"context-probe","#)),
        InputsDigest::NONE
    );
    assert!(!inputs_of(&line(r#""format":"context-probe","#)).taken());
    assert!(native.taken());
    assert!(assert_agrees(&line(r#""format":"context-probe","#)));
    assert_eq!(inputs_of(&line(r#""format":null,"#)), native);
}

/// A failed pair that records a transformation but neither side's
/// question or state: its family comes from the variant id, so the fast
/// path must keep the id in the record it suggests from (the fuzz target
/// `lines` found it without: no suggestion, where the slow path gives the
/// family's).
#[test]
fn a_bare_pair_with_a_recorded_transformation_is_suggested_from_its_variant_id() {
    for (variant, transformation, family) in [
        ("question-typo", "typo", r#""family":"questi[on","#),
        ("question-typo", "typo", ""),
        (
            "state-noise-extra-field",
            "extra-field",
            r#""family":"unknown","#,
        ),
    ] {
        let line = format!(
            r#"{{"case_id":"c","variant_id":"{variant}",{family}"transformation":"{transformation}","siant":{{"question":"q"}},"passed":false}}"#
        );
        assert!(assert_agrees(&line), "the fast path reads {line}");
    }
    let (fast, _) = both_ways_unkeyed(
        r#"{"case_id":"c","variant_id":"question-typo","transformation":"typo","passed":false}"#,
    );
    assert!(
        fast.is_some_and(|f| f.contains(r#"suggestion Some("ambiguous-contract")"#)),
        "the variant id names a question transformation"
    );
}
