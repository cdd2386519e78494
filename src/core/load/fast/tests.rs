//! Tests of a whole line read the fast way: records given back, keys and
//! numbers read as on a fresh reader and as the slow path reads them.

use std::cell::RefCell;

use super::*;

/// A record written over the line before's keeps none of its fields.
#[test]
fn a_recycled_record_keeps_nothing_of_the_line_before() {
    let full = r#"{"case_id":"c","variant_id":"v","family":"f","transformation":"t","minimum_boundary_margin":0.1,"allowed_changes":["state.a"],"passed":false,"reasons":["r1","r2"],"repetition":2,"policy":{"review_threshold":0.5,"action_threshold":0.9},"expectation":{"kind":"invariant","max_probability_drift":0.1},"source":{"question":"q","state":{"a":1},"probability":0.2,"confidence":0.9,"route":"pass","outcome":"ok","error":"e","latency_ms":5,"decision":"hold"},"variant":{"question":"q2","state":{"a":2},"probability":0.6,"confidence":1.5,"route":"review","error":"e2","decision":"x"}}"#;
    let mut reader = LineReader::new();
    for bare in [
        r#"{"case_id":"c","variant_id":"v2"}"#,
        r#"{"case_id":"c","variant_id":"v3","source":{"probability":0.1},"variant":{"probability":0.2}}"#,
        r#"{"case_id":"c","variant_id":"v4","reasons":"one","source":{"question":"q"},"variant":{"question":"q"}}"#,
    ] {
        reader.scratch.spare = None;
        let want = format!("{:?}", reader.parse(bare).expect(bare).record);
        let f = reader.parse(full).expect("full");
        f.recycle();
        let got = format!("{:?}", reader.parse(bare).expect(bare).record);
        assert_eq!(got, want, "{bare}");
    }
}

/// A key taken whole because the line before wrote the same bytes after
/// the same key reads as it reads on a fresh reader: any other key, a
/// blank before the colon, an escape, a repeat is seen for what it is,
/// and a field more or less leaves the keys after it known.
#[test]
fn keys_taken_from_the_line_before_are_those_keys() {
    let before = r#"{"case_id":"c","variant_id":"v","label":"l","x":1,"y":2,"family":"f","minimum_boundary_margin":0.1,"policy":{"review_threshold":0.5,"action_threshold":0.9},"expectation":{"kind":"invariant","max_probability_drift":0.1},"source":{"question":"q","state":{"a":1},"response":{"probability":0.2,"confidence":0.9},"route":"pass"},"variant":{"question":"q","state":{"a":2},"response":{"probability":0.6,"confidence":0.8},"route":"review"},"repetition":2}"#;
    // Each line, and whether it reads otherwise than `before` (the
    // label is not read; `review` is a spelling of `review_threshold`).
    let lines = [
        (before.to_string(), false),
        (before.replace(r#""label":"#, r#""labelx":"#), false),
        (before.replace(r#""label":"#, r#""labe":"#), false),
        (before.replace(r#""label":"#, r#""label" :"#), false),
        (before.replace(r#""label":"l","#, ""), false),
        (
            before.replace(r#""label":"l","#, r#""label":"l","z":0,"#),
            false,
        ),
        (
            before.replace(r#""review_threshold""#, r#""review""#),
            false,
        ),
        (before.replace(r#""case_id":"#, r#""case\u005fid":"#), true),
        (
            before.replace(r#""variant_id":"v""#, r#""case_id":"c""#),
            true,
        ),
        (before.replace(r#""y":2"#, r#""x":2"#), true),
        (
            before.replace("minimum_boundary_margin", "minimum_boundary_margix"),
            true,
        ),
        (
            before.replace("minimum_boundary_margin", "minimum_boundary_marginal"),
            true,
        ),
        (
            before.replace("max_probability_drift", "max_confidence_drift"),
            true,
        ),
        (
            before.replace(r#""probability":0.6"#, r#""probabilitx":0.6"#),
            true,
        ),
        (
            before.replace(
                r#""confidence":0.8"#,
                r#""confidence":0.8,"confidence":0.8"#,
            ),
            true,
        ),
        (
            before.replace(r#""repetition":2}"#, r#""repetitiom":2}"#),
            true,
        ),
        (before.replace(r#","repetition":2}"#, "}"), true),
    ];
    let reader = RefCell::new(LineReader::new());
    let read = |line: &str| {
        let mut reader = reader.borrow_mut();
        format!("{:?}", reader.parse(line).map(|f| (f.record, f.diff)))
    };
    let forget_states = || reader.borrow_mut().forget();
    forget_states();
    let base = read(before);
    for (line, differs) in &lines {
        forget_states();
        let fresh = read(line);
        assert_eq!(fresh != base, *differs, "{line}");
        forget_states();
        read(before);
        assert_eq!(read(line), fresh, "{line}");
        // And the other way about: the changed line teaches, the
        // line before is read after it.
        forget_states();
        read(line);
        assert_eq!(read(before), base, "after {line}");
    }
}

#[test]
fn numbers_are_read_as_serde_json_reads_them() {
    let line = |x: &str| format!(r#"{{"case_id":"c","variant_id":"v","repetition":{x}}}"#);
    let mut reader = LineReader::new();
    for x in ["0", "-0", "7", "3e0", "0.5e1", "1E2", "123456789", "1e-400"] {
        let fast = reader.parse(&line(x)).expect(x).record.repetition;
        let slow = crate::core::record::map_record(serde_json::from_str(&line(x)).unwrap())
            .unwrap()
            .repetition;
        assert_eq!(fast, slow, "{x}");
    }
    for x in ["01", "1.", ".5", "-", "1e", "1e400", "--1", "0x10", "1e301"] {
        assert!(reader.parse(&line(x)).is_none(), "{x}");
    }
}
