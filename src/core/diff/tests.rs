use super::*;
use proptest::prelude::*;
use serde_json::json;

fn state() -> JsonPath {
    JsonPath::root("state")
}

fn p(s: &str) -> JsonPath {
    JsonPath::parse(s).unwrap_or_else(|| panic!("bad path {s}"))
}

fn entry(path: &str, change: Change) -> DiffEntry {
    DiffEntry {
        path: p(path),
        change,
    }
}

#[test]
fn map_equality_ignores_key_order() {
    let a = json!({"x": 1, "y": 2});
    let b = json!({"y": 2, "x": 1});
    // preserve_order keeps the order observable...
    assert!(
        !a.as_object()
            .unwrap()
            .keys()
            .eq(b.as_object().unwrap().keys())
    );
    // ...but Map equality (IndexMap semantics) ignores it, as canon_eq does.
    assert_eq!(a, b);
    assert!(canon_eq(&a, &b));
    assert_eq!(canon_text(&a), canon_text(&b));
}

#[test]
fn numbers_compare_canonically() {
    assert!(canon_eq(&json!(1), &json!(1.0)));
    assert!(canon_eq(&json!(-0.0), &json!(0)));
    assert!(!canon_eq(&json!(1), &json!(1.5)));
    assert!(!canon_eq(&json!(1), &json!("1")));
    assert_eq!(canon_text(&json!([1, 2.0])), canon_text(&json!([1.0, 2])));
    assert!(diff_values(&state(), &json!({"n": 1}), &json!({"n": 1.0})).is_empty());
    let d = diff_values(&state(), &json!({"n": 1}), &json!({"n": 2.5}));
    assert_eq!(
        d,
        vec![entry(
            "state.n",
            Change::Changed {
                before: json!(1),
                after: json!(2.5)
            }
        )]
    );
}

#[test]
fn added_removed_changed_keys() {
    let a = json!({"keep": 1, "gone": true, "edit": "old", "nested": {"x": 1}});
    let b = json!({"keep": 1, "edit": "new", "nested": {"x": 2}, "fresh": [1]});
    let d = diff_values(&state(), &a, &b);
    assert_eq!(
        d,
        vec![
            entry(
                "state.gone",
                Change::Removed {
                    before: json!(true)
                }
            ),
            entry(
                "state.edit",
                Change::Changed {
                    before: json!("old"),
                    after: json!("new")
                }
            ),
            entry(
                "state.nested.x",
                Change::Changed {
                    before: json!(1),
                    after: json!(2)
                }
            ),
            entry("state.fresh", Change::Added { after: json!([1]) }),
        ]
    );
}

#[test]
fn type_change_is_changed() {
    let d = diff_values(&state(), &json!({"v": {"a": 1}}), &json!({"v": [1]}));
    assert_eq!(
        d,
        vec![entry(
            "state.v",
            Change::Changed {
                before: json!({"a": 1}),
                after: json!([1])
            }
        )]
    );
    let d = diff_values(&state(), &json!(null), &json!(false));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].path, state());
}

#[test]
fn key_reorder_only() {
    let a = json!({"a": 1, "b": {"c": 1, "d": 2}});
    let b = json!({"b": {"d": 2, "c": 1}, "a": 1});
    let d = diff_values(&state(), &a, &b);
    assert_eq!(
        d,
        vec![entry(
            "state",
            Change::Reordered {
                before: vec!["a".into(), "b".into()],
                after: vec!["b".into(), "a".into()]
            }
        )]
    );
}

#[test]
fn nested_reorder_reported_at_its_own_level() {
    let a = json!({"a": 1, "b": {"c": 1, "d": 2}});
    let b = json!({"a": 1, "b": {"d": 2, "c": 1}});
    let d = diff_values(&state(), &a, &b);
    assert_eq!(
        d,
        vec![entry(
            "state.b",
            Change::Reordered {
                before: vec!["c".into(), "d".into()],
                after: vec!["d".into(), "c".into()]
            }
        )]
    );
}

#[test]
fn reorder_plus_change_reports_only_the_change() {
    let a = json!({"a": 1, "b": 2});
    let b = json!({"b": 3, "a": 1});
    let d = diff_values(&state(), &a, &b);
    assert_eq!(
        d,
        vec![entry(
            "state.b",
            Change::Changed {
                before: json!(2),
                after: json!(3)
            }
        )]
    );
    // A key added alongside a reorder: the addition only.
    let d = diff_values(
        &state(),
        &json!({"a": 1, "b": 2}),
        &json!({"b": 2, "a": 1, "c": 0}),
    );
    assert_eq!(d, vec![entry("state.c", Change::Added { after: json!(0) })]);
}

fn evidence() -> Value {
    json!([
        {"id": "e1", "status": "open"},
        {"id": "e2", "status": "open"},
        {"id": "e3", "status": "closed"}
    ])
}

#[test]
fn id_matched_removal() {
    let a = json!({"evidence": evidence()});
    let mut b = a.clone();
    b["evidence"].as_array_mut().unwrap().remove(1);
    let d = diff_values(&state(), &a, &b);
    assert_eq!(
        d,
        vec![entry(
            "state.evidence[1]",
            Change::Removed {
                before: json!({"id": "e2", "status": "open"})
            }
        )]
    );
}

#[test]
fn id_matched_change_uses_source_index() {
    let a = json!({"evidence": evidence()});
    let b = json!({"evidence": [
        {"id": "e3", "status": "closed"},
        {"id": "e2", "status": "rejected"},
        {"id": "e4", "status": "new"}
    ]});
    let d = diff_values(&state(), &a, &b);
    assert_eq!(
        d,
        vec![
            // e2 came before e3 and now comes after it: array order is a fact.
            entry(
                "state.evidence",
                Change::Moved {
                    before: vec!["e1".into(), "e2".into(), "e3".into()],
                    after: vec!["e3".into(), "e2".into(), "e4".into()]
                }
            ),
            entry(
                "state.evidence[0]",
                Change::Removed {
                    before: json!({"id": "e1", "status": "open"})
                }
            ),
            entry(
                "state.evidence[1].status",
                Change::Changed {
                    before: json!("open"),
                    after: json!("rejected")
                }
            ),
            entry(
                "state.evidence[2]",
                Change::Added {
                    after: json!({"id": "e4", "status": "new"})
                }
            ),
        ]
    );
    assert_eq!(d[2].path.to_string(), "state.evidence[1].status");
}

#[test]
fn id_matched_elements_that_keep_their_order_are_not_moved() {
    // e1 removed and e4 added, e2 and e3 still in the same order: no move.
    let a = json!({"evidence": evidence()});
    let b = json!({"evidence": [
        {"id": "e2", "status": "open"},
        {"id": "e3", "status": "closed"},
        {"id": "e4", "status": "new"}
    ]});
    let d = diff_values(&state(), &a, &b);
    assert!(
        d.iter().all(|e| !matches!(e.change, Change::Moved { .. })),
        "{d:?}"
    );
    assert_eq!(d.len(), 2, "{d:?}");
}

#[test]
fn id_matched_reorder_with_an_edit_reports_both() {
    // The reorder is not hidden by the edit inside an element.
    let a = json!({"steps": [{"id": "s1", "do": "restart"}, {"id": "s2", "do": "notify"}]});
    let b = json!({"steps": [{"id": "s2", "do": "notify all"}, {"id": "s1", "do": "restart"}]});
    let d = diff_values(&state(), &a, &b);
    assert_eq!(
        d,
        vec![
            entry(
                "state.steps",
                Change::Moved {
                    before: vec!["s1".into(), "s2".into()],
                    after: vec!["s2".into(), "s1".into()]
                }
            ),
            entry(
                "state.steps[1].do",
                Change::Changed {
                    before: json!("notify"),
                    after: json!("notify all")
                }
            ),
        ]
    );
}

#[test]
fn id_matched_nested_addition_resolves_in_variant() {
    let a = json!([{"id": 1}, {"id": 2}]);
    let b = json!([{"id": 2, "note": "x"}]);
    let d = diff_values(&state(), &a, &b);
    assert_eq!(
        d,
        vec![
            entry(
                "state[0]",
                Change::Removed {
                    before: json!({"id": 1})
                }
            ),
            entry("state[0].note", Change::Added { after: json!("x") }),
        ]
    );
    assert_eq!(resolve(&state(), &b, &d[1].path), Some(&json!("x")));
}

#[test]
fn id_matched_reorder() {
    let a = json!({"evidence": evidence()});
    let mut b = a.clone();
    b["evidence"].as_array_mut().unwrap().reverse();
    let d = diff_values(&state(), &a, &b);
    // Array order is part of the value (seed 001): a reorder of id-matched
    // elements is a move, which validity counts as a change.
    assert_eq!(
        d,
        vec![entry(
            "state.evidence",
            Change::Moved {
                before: vec!["e1".into(), "e2".into(), "e3".into()],
                after: vec!["e3".into(), "e2".into(), "e1".into()]
            }
        )]
    );
    // Numeric ids are listed as their text, and 1 matches 1.0.
    let d = diff_values(
        &state(),
        &json!([{"id": 1}, {"id": 2}]),
        &json!([{"id": 2}, {"id": 1.0}]),
    );
    assert_eq!(
        d,
        vec![entry(
            "state",
            Change::Moved {
                before: vec!["1".into(), "2".into()],
                after: vec!["2".into(), "1.0".into()]
            }
        )]
    );
}

#[test]
fn duplicate_ids_fall_back_to_lcs() {
    let a = json!([{"id": 1, "v": 1}, {"id": 1, "v": 2}]);
    let b = json!([{"id": 1, "v": 2}]);
    let d = diff_values(&state(), &a, &b);
    assert_eq!(
        d,
        vec![entry(
            "state[0]",
            Change::Removed {
                before: json!({"id": 1, "v": 1})
            }
        )]
    );
}

#[test]
fn lcs_removed_middle_element() {
    let a = json!({"evidence": ["first", {"k": "second"}, "third"]});
    let b = json!({"evidence": ["first", "third"]});
    let d = diff_values(&state(), &a, &b);
    assert_eq!(
        d,
        vec![entry(
            "state.evidence[1]",
            Change::Removed {
                before: json!({"k": "second"})
            }
        )]
    );
    let back = diff_values(&state(), &b, &a);
    assert_eq!(
        back,
        vec![entry(
            "state.evidence[1]",
            Change::Added {
                after: json!({"k": "second"})
            }
        )]
    );
}

#[test]
fn lcs_replace_pairs_and_leftovers() {
    let a = json!(["same", {"k": 1}, "x", "tail"]);
    let b = json!(["same", {"k": 2}, "tail"]);
    let d = diff_values(&state(), &a, &b);
    assert_eq!(
        d,
        vec![
            entry(
                "state[1].k",
                Change::Changed {
                    before: json!(1),
                    after: json!(2)
                }
            ),
            entry("state[2]", Change::Removed { before: json!("x") }),
        ]
    );
    // Elements equal up to key order and number spelling align as equal, and equal
    // runs produce nothing (an element-internal key reorder is not a change of the array).
    let d = diff_values(
        &state(),
        &json!([{"a": 1, "b": 2}]),
        &json!([{"b": 2, "a": 1.0}]),
    );
    assert!(d.is_empty());
}

#[test]
fn path_display() {
    assert_eq!(
        state().key("affectedUsers").to_string(),
        "state.affectedUsers"
    );
    assert_eq!(
        state().key("evidence").index(1).key("status").to_string(),
        "state.evidence[1].status"
    );
    assert_eq!(state().key("a b").to_string(), "state[\"a b\"]");
    assert_eq!(state().key("x-y_2").to_string(), "state.x-y_2");
    assert_eq!(state().key("2x").to_string(), "state[\"2x\"]");
    assert_eq!(state().key("q\"\\\n").to_string(), r#"state["q\"\\\n"]"#);
    assert_eq!(JsonPath::default().index(0).key("a").to_string(), "[0].a");
    assert_eq!(JsonPath::root("odd key").to_string(), "[\"odd key\"]");
}

#[test]
fn path_parse() {
    assert_eq!(
        JsonPath::parse("a.b[2][\"x y\"]"),
        Some(JsonPath(vec![
            Seg::Key("a".into()),
            Seg::Key("b".into()),
            Seg::Index(2),
            Seg::Key("x y".into())
        ]))
    );
    assert_eq!(JsonPath::parse(""), Some(JsonPath::default()));
    for bad in [
        ".a", "a..b", "a.", "a[", "a[x]", "a[\"x]", "a b", "a[1", "[-1]", "a.\"b\"", "é",
    ] {
        assert_eq!(JsonPath::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn prefix_and_resolve() {
    let root = state();
    let deep = p("state.evidence[1].status");
    assert!(root.is_prefix_of(&deep));
    assert!(deep.is_prefix_of(&deep));
    assert!(!deep.is_prefix_of(&root));
    assert!(!p("question").is_prefix_of(&deep));
    let v = json!({"evidence": [{}, {"status": "open"}]});
    assert_eq!(resolve(&root, &v, &deep), Some(&json!("open")));
    assert_eq!(resolve(&root, &v, &root), Some(&v));
    assert_eq!(resolve(&root, &v, &p("question.evidence")), None);
    assert_eq!(resolve(&root, &v, &p("state.evidence[5]")), None);
    assert_eq!(resolve(&root, &v, &p("state.evidence.x")), None);
}

#[test]
fn control_char_difference_is_seen() {
    let d = diff_values(
        &state(),
        &json!({"s": "rejected\rAPPROVED"}),
        &json!({"s": "rejectedAPPROVED"}),
    );
    assert_eq!(d.len(), 1);
    let w = word_diff("rejected\rAPPROVED", "rejectedAPPROVED");
    assert!(w.iter().any(|s| s.kind != WordKind::Same));
    assert!(!changed_words("rejected\rAPPROVED", "rejectedAPPROVED").is_empty());
    // Also inside arrays, where alignment runs on canonical text.
    let d = diff_values(&state(), &json!(["a\rb"]), &json!(["ab"]));
    assert_eq!(d.len(), 1);
}

#[test]
fn changed_words_summary() {
    assert_eq!(
        changed_words("What is the probability", "Estimate the probability"),
        vec![("What is".to_string(), "Estimate".to_string())]
    );
    assert_eq!(
        changed_words("the cat sat down", "the dog ran down"),
        vec![("cat sat".to_string(), "dog ran".to_string())]
    );
    assert_eq!(
        changed_words("a b", "a b c"),
        vec![(String::new(), "c".to_string())]
    );
    assert_eq!(
        changed_words("same", "same"),
        Vec::<(String, String)>::new()
    );
    // Whitespace-only edits keep their whitespace (trimming would leave nothing).
    assert_eq!(
        changed_words("a b", "a  b"),
        vec![(String::new(), " ".to_string())]
    );
}

#[test]
fn word_diff_shape() {
    let w = word_diff("What is the probability", "Estimate the probability");
    let seg = |kind, text: &str| WordSeg {
        kind,
        text: text.to_string(),
    };
    assert_eq!(
        w,
        vec![
            seg(WordKind::Removed, "What is"),
            seg(WordKind::Added, "Estimate"),
            seg(WordKind::Same, " the probability"),
        ]
    );
    assert!(word_diff("", "").is_empty());
    assert_eq!(word_diff("", "x"), vec![seg(WordKind::Added, "x")]);
}

fn nest(depth: usize, leaf: Value) -> Value {
    let mut v = leaf;
    for i in 0..depth {
        v = if i % 2 == 0 {
            json!([v])
        } else {
            json!({ "k": v })
        };
    }
    v
}

#[test]
fn deep_values_stop_at_max_depth() {
    let a = nest(400, json!(1));
    let b = nest(400, json!(2));
    let d = diff_values(&state(), &a, &b);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].path.0.len(), 1 + MAX_DEPTH);
    assert!(matches!(d[0].change, Change::Changed { .. }));
    assert!(resolve(&state(), &a, &d[0].path).is_some());
    assert!(diff_values(&state(), &a, &a.clone()).is_empty());
    // Shallow enough: the exact leaf is reported.
    let d = diff_values(&state(), &nest(100, json!(1)), &nest(100, json!(2)));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].path.0.len(), 101);
}

// ---------- property tests ----------

fn arb_string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ab \r\n\t\u{1b}\u{7f}\u{85}\u{202e}\u{200b}é日]{0,5}",
        any::<String>(),
    ]
}

fn arb_key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-d]",
        1 => Just("id".to_string()),
        1 => Just("odd key".to_string()),
        1 => "[\"\\\\.\\[\\] \u{1}é]{0,3}",
    ]
}

fn arb_scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..4).prop_map(|n| json!(n)),
        prop::sample::select(vec![0.0, 1.0, 1.5, -2.0]).prop_map(|f| json!(f)),
        arb_string().prop_map(Value::String),
    ]
}

fn arb_id() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0i64..4).prop_map(|n| json!(n)),
        "[a-c]".prop_map(Value::String)
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    arb_scalar().prop_recursive(4, 40, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((arb_key(), inner.clone()), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            prop::collection::vec(
                (arb_id(), prop::collection::vec((arb_key(), inner), 0..3)),
                0..4
            )
            .prop_map(|els| {
                Value::Array(
                    els.into_iter()
                        .map(|(id, kv)| {
                            let mut m = serde_json::Map::new();
                            m.insert("id".to_string(), id);
                            m.extend(kv.into_iter().filter(|(k, _)| k != "id"));
                            Value::Object(m)
                        })
                        .collect(),
                )
            }),
        ]
    })
}

/// A small deterministic generator so `mutate` can make related pairs.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

/// Edit a copy of `v` in place: change scalars, drop / insert / swap elements and keys.
fn mutate(v: &mut Value, rng: &mut Lcg, extra: &Value) {
    match v {
        Value::Array(xs) => {
            match rng.next(6) {
                0 if !xs.is_empty() => {
                    let i = rng.next(xs.len() as u64) as usize;
                    xs.remove(i);
                }
                1 => {
                    let i = rng.next(xs.len() as u64 + 1) as usize;
                    xs.insert(i, extra.clone());
                }
                2 if xs.len() > 1 => {
                    let i = rng.next(xs.len() as u64) as usize;
                    let j = rng.next(xs.len() as u64) as usize;
                    xs.swap(i, j);
                }
                _ => {}
            }
            for x in xs.iter_mut() {
                if rng.next(2) == 0 {
                    mutate(x, rng, extra);
                }
            }
        }
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = std::mem::take(m).into_iter().collect();
            match rng.next(6) {
                0 if !entries.is_empty() => {
                    let i = rng.next(entries.len() as u64) as usize;
                    entries.remove(i);
                }
                1 => {
                    let k = format!("k{}", rng.next(3));
                    entries.retain(|(e, _)| *e != k);
                    let i = rng.next(entries.len() as u64 + 1) as usize;
                    entries.insert(i, (k, extra.clone()));
                }
                2 if entries.len() > 1 => {
                    let i = rng.next(entries.len() as u64) as usize;
                    let j = rng.next(entries.len() as u64) as usize;
                    entries.swap(i, j);
                }
                _ => {}
            }
            for (_, x) in entries.iter_mut() {
                if rng.next(2) == 0 {
                    mutate(x, rng, extra);
                }
            }
            m.extend(entries);
        }
        _ => {
            if rng.next(3) == 0 {
                *v = extra.clone();
            }
        }
    }
}

pub(crate) fn arb_pair() -> impl Strategy<Value = (Value, Value)> {
    prop_oneof![
        (arb_json(), arb_json()),
        (arb_json(), any::<u64>(), arb_json()).prop_map(|(a, seed, extra)| {
            let mut b = a.clone();
            mutate(&mut b, &mut Lcg(seed), &extra);
            (a, b)
        }),
    ]
}

fn arb_path() -> impl Strategy<Value = JsonPath> {
    let seg = prop_oneof![
        "[A-Za-z_][A-Za-z0-9_-]{0,4}".prop_map(Seg::Key),
        "[ .\\[\\]\"'\\\\a0-9é日\u{202e}\u{0}\u{7f}\u{85}-]{0,5}".prop_map(Seg::Key),
        any::<String>().prop_map(Seg::Key),
        any::<usize>().prop_map(Seg::Index),
    ];
    prop::collection::vec(seg, 0..6).prop_map(JsonPath)
}

fn contains_array(v: &Value) -> bool {
    match v {
        Value::Array(_) => true,
        Value::Object(m) => m.values().any(contains_array),
        _ => false,
    }
}

/// An entry as (kind, side-specific path or none, rendered values), swapped so that
/// the diff of (b, a) should produce the same multiset.
fn swapped_key(e: &DiffEntry, with_path: bool) -> (u8, String, String, String) {
    let path = |keep: bool| {
        if keep {
            e.path.to_string()
        } else {
            String::new()
        }
    };
    match &e.change {
        Change::Added { after } => (1, e.path.to_string(), canon_text(after), String::new()),
        Change::Removed { before } => (0, e.path.to_string(), canon_text(before), String::new()),
        Change::Changed { before, after } => {
            (2, path(with_path), canon_text(after), canon_text(before))
        }
        Change::Reordered { before, after } => (
            3,
            path(with_path),
            after.join("\u{0}"),
            before.join("\u{0}"),
        ),
        Change::Moved { before, after } => (
            4,
            path(with_path),
            after.join("\u{0}"),
            before.join("\u{0}"),
        ),
    }
}

fn plain_key(e: &DiffEntry, with_path: bool) -> (u8, String, String, String) {
    let path = |keep: bool| {
        if keep {
            e.path.to_string()
        } else {
            String::new()
        }
    };
    match &e.change {
        Change::Added { after } => (0, e.path.to_string(), canon_text(after), String::new()),
        Change::Removed { before } => (1, e.path.to_string(), canon_text(before), String::new()),
        Change::Changed { before, after } => {
            (2, path(with_path), canon_text(before), canon_text(after))
        }
        Change::Reordered { before, after } => (
            3,
            path(with_path),
            before.join("\u{0}"),
            after.join("\u{0}"),
        ),
        Change::Moved { before, after } => (
            4,
            path(with_path),
            before.join("\u{0}"),
            after.join("\u{0}"),
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn prop_self_diff_is_empty(a in arb_json()) {
        prop_assert!(diff_values(&state(), &a, &a).is_empty());
        prop_assert!(diff_values(&state(), &a, &a.clone()).is_empty());
    }

    #[test]
    fn prop_paths_resolve((a, b) in arb_pair()) {
        let root = state();
        for e in diff_values(&root, &a, &b) {
            prop_assert!(root.is_prefix_of(&e.path));
            match &e.change {
                Change::Added { after } => {
                    prop_assert_eq!(resolve(&root, &b, &e.path), Some(after), "{}", e.path);
                }
                Change::Removed { before } | Change::Changed { before, .. } => {
                    prop_assert_eq!(resolve(&root, &a, &e.path), Some(before), "{}", e.path);
                }
                Change::Reordered { .. } => {
                    let v = resolve(&root, &a, &e.path);
                    prop_assert!(v.is_some_and(Value::is_object), "{}", e.path);
                }
                Change::Moved { .. } => {
                    let v = resolve(&root, &a, &e.path);
                    prop_assert!(v.is_some_and(Value::is_array), "{}", e.path);
                }
            }
            // Displayed paths can be parsed back (the UI uses them as jump targets).
            prop_assert_eq!(JsonPath::parse(&e.path.to_string()), Some(e.path.clone()));
        }
    }

    #[test]
    fn prop_swap_sides((a, b) in arb_pair()) {
        let root = state();
        let fwd = diff_values(&root, &a, &b);
        let back = diff_values(&root, &b, &a);
        // Paths of Changed / Reordered are in source coordinates, which only coincide
        // across a swap when no array indices can shift.
        let with_path = !contains_array(&a) && !contains_array(&b);
        let mut x: Vec<_> = fwd.iter().map(|e| swapped_key(e, with_path)).collect();
        let mut y: Vec<_> = back.iter().map(|e| plain_key(e, with_path)).collect();
        x.sort();
        y.sort();
        prop_assert_eq!(x, y);
    }

    #[test]
    fn prop_empty_diff_iff_canon_equal_modulo_order((a, b) in arb_pair()) {
        // No entries means canonically equal; canonically equal means at most
        // reorders are reported.
        let d = diff_values(&state(), &a, &b);
        if d.is_empty() {
            prop_assert!(canon_eq(&a, &b));
        }
        if canon_eq(&a, &b) {
            let only_reorders = d.iter().all(|e| matches!(e.change, Change::Reordered { .. }));
            prop_assert!(only_reorders);
        }
    }

    #[test]
    fn prop_path_roundtrip(path in arb_path()) {
        prop_assert_eq!(JsonPath::parse(&path.to_string()), Some(path));
    }

    #[test]
    fn prop_word_diff_reconstructs(
        a in prop_oneof!["[ab ,.\r\n\t]{0,12}", any::<String>()],
        b in prop_oneof!["[ab ,.\r\n\t]{0,12}", any::<String>()],
    ) {
        let w = word_diff(&a, &b);
        let side = |skip: WordKind| -> String {
            w.iter().filter(|s| s.kind != skip).map(|s| s.text.as_str()).collect()
        };
        prop_assert_eq!(side(WordKind::Added), a.clone());
        prop_assert_eq!(side(WordKind::Removed), b.clone());
        prop_assert!(w.iter().all(|s| !s.text.is_empty()));
        prop_assert!(w.windows(2).all(|p| p[0].kind != p[1].kind));
        prop_assert_eq!(changed_words(&a, &b).is_empty(), a == b);
    }
}
