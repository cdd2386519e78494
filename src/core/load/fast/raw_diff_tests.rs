//! Tests of the raw diff: laid-out texts diff as their parsed values do.

use super::*;

/// Whether every key in `v` is written without escapes (the scanner
/// declines lines with escaped keys, so the raw diff never sees one).
fn plain_keys(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().all(|(k, x)| {
            serde_json::to_string(k).is_ok_and(|t| t.len() == k.len() + 2) && plain_keys(x)
        }),
        Value::Array(xs) => xs.iter().all(plain_keys),
        _ => true,
    }
}

/// Where and what kind each change is, in order.
fn shape(d: &[DiffEntry]) -> Vec<(String, &'static str)> {
    d.iter()
        .map(|e| {
            let kind = match e.change {
                Change::Added { .. } => "added",
                Change::Removed { .. } => "removed",
                Change::Changed { .. } => "changed",
                Change::Reordered { .. } => "reordered",
                Change::Moved { .. } => "moved",
            };
            (e.path.to_string(), kind)
        })
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]
    /// The diff of two texts laid out in place finds what the diff of
    /// their parsed values finds, in the same order, and compares them
    /// as it does; whitespace in either text changes nothing.
    #[test]
    fn laid_out_texts_diff_as_their_values_do(
        (a, b) in diff::tests::arb_pair(),
        pretty in proptest::prelude::any::<(bool, bool)>(),
    ) {
        proptest::prop_assume!(plain_keys(&a) && plain_keys(&b));
        let text = |v: &Value, pretty: bool| {
            if pretty {
                serde_json::to_string_pretty(v).unwrap()
            } else {
                serde_json::to_string(v).unwrap()
            }
        };
        let (ta, tb) = (text(&a, pretty.0), text(&b, pretty.1));
        let mut nodes = Vec::new();
        proptest::prop_assert!(lay_out(&ta, &mut nodes).is_some());
        let root = JsonPath::root("state");
        let want = diff::diff_values(&root, &a, &b);
        let got = diff_texts(&root, None, &ta, &tb, &mut nodes).unwrap();
        proptest::prop_assert_eq!(shape(&got), shape(&want));
        // One member of a state, as the fast path diffs them.
        let below = diff_texts(&root, Some("member"), &ta, &tb, &mut nodes).unwrap();
        let want = diff::diff_values(&root.key("member"), &a, &b);
        proptest::prop_assert_eq!(shape(&below), shape(&want));
        proptest::prop_assert_eq!(
            texts_equal(&ta, &tb, &mut nodes),
            Some(diff::canon_eq(&a, &b))
        );
    }
}

/// Texts that differ but spell one value: numbers by value, strings by
/// what their escapes mean, objects in any key order, ids matched
/// across spellings.
#[test]
fn spellings_of_one_value_are_equal() {
    let root = JsonPath::root("state");
    for (a, b, changes) in [
        ("1", "1.0", 0),
        ("[1, 2]", "[1.0,2e0]", 0),
        ("-0.5", "-5e-1", 0),
        (r#""Ab""#, r#""Ab""#, 0),
        (r#""Ab""#, r#""Ac""#, 1),
        (r#"{"x":1,"y":"\/"}"#, r#"{"y":"/","x":1.0}"#, 1),
        (r#"[{"id":1,"v":2}]"#, r#"[{"id":1.0,"v":2.0}]"#, 0),
        (r#"[{"id":1,"v":2}]"#, r#"[{"id":1.0,"v":3}]"#, 1),
        ("2", "3", 1),
        (r#"{"x":[1,{"y":true}]}"#, r#"{"x":[1,{"y":false}]}"#, 1),
    ] {
        let (va, vb): (Value, Value) = (full(a).unwrap(), full(b).unwrap());
        let mut nodes = Vec::new();
        assert_eq!(
            texts_equal(a, b, &mut nodes),
            Some(diff::canon_eq(&va, &vb)),
            "{a} {b}"
        );
        let got = diff_texts(&root, None, a, b, &mut nodes).unwrap();
        assert_eq!(
            shape(&got),
            shape(&diff::diff_values(&root, &va, &vb)),
            "{a} {b}"
        );
        assert_eq!(got.len(), changes, "{a} {b}");
    }
}

/// Past the sizes laid out in place, the values are parsed instead,
/// with the same result.
#[test]
fn large_values_are_diffed_as_values() {
    let wide = |n: usize, changed: usize| {
        let m: serde_json::Map<String, Value> = (0..n)
            .map(|i| {
                (
                    format!("k{i}"),
                    Value::from(if i == changed { 1 } else { 0 }),
                )
            })
            .collect();
        Value::Object(m)
    };
    let (a, b) = (wide(300, 7), wide(300, 250));
    let (ta, tb) = (a.to_string(), b.to_string());
    let mut nodes = Vec::new();
    assert!(lay_out(&ta, &mut nodes).is_none());
    let root = JsonPath::root("state");
    let got = diff_texts(&root, None, &ta, &tb, &mut nodes).unwrap();
    assert_eq!(shape(&got), shape(&diff::diff_values(&root, &a, &b)));
    assert_eq!(shape(&got).len(), 2);
}
