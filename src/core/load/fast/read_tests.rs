//! Tests of the reading of scanned values.

use super::*;

#[test]
fn usual_spellings_read_as_the_model_reads_them() {
    for s in [
        "action", "act", "review", "pass", "Action", " pass ", "REVIEW", "nope", "",
    ] {
        assert_eq!(route(s), Route::parse(s), "{s:?}");
    }
    for s in [
        "ok",
        "success",
        "succeeded",
        "completed",
        "timeout",
        "timed-out",
        "time-out",
        "error",
        "failed",
        "failure",
        "service-error",
        "invalid-response",
        "invalid",
        "malformed",
        "parse-error",
        "TIMED_OUT",
        " Ok",
        "weird",
    ] {
        assert_eq!(outcome(s), Outcome::parse(s), "{s:?}");
    }
}

/// What a side's answer records, read the fast way, is what the slow path
/// reads: whether an answer is there at all, and the first unusable
/// probability or confidence when no spelling of it is usable.
#[test]
fn unusable_answers_read_as_the_model_reads_them() {
    let sides = [
        r#"{"response":{"probability":1.4,"confidence":0.8}}"#,
        r#"{"response":{"probability":0.4,"confidence":-0.1},"outcome":"ok"}"#,
        r#"{"response":{"probability":1.5},"probability":0.4,"confidence":2}"#,
        r#"{"response":{"noul":3},"noul":-1}"#,
        r#"{"response":{}}"#,
        r#"{"noul":0.3}"#,
        r#"{"outcome":"ok"}"#,
        r#"{"question":"q"}"#,
        r#"{"response":{"probability":null,"confidence":0.5}}"#,
    ];
    let mut reader = super::super::LineReader::default();
    for side in sides {
        let line =
            format!(r#"{{"case_id":"c","variant_id":"v","source":{side},"variant":{side}}}"#);
        let slow = crate::core::record::map_record(serde_json::from_str(&line).unwrap()).unwrap();
        let fast = reader.parse(&line).expect("read the fast way");
        for (f, s) in [
            (&fast.record.source, &slow.source),
            (&fast.record.variant, &slow.variant),
        ] {
            assert_eq!(
                (f.answered, f.probability, f.bad_probability),
                (s.answered, s.probability, s.bad_probability),
                "{side}"
            );
            assert_eq!(
                (f.confidence, f.bad_confidence, f.answer_fault()),
                (s.confidence, s.bad_confidence, s.answer_fault()),
                "{side}"
            );
        }
        assert_eq!(fast.record.field_warnings, slow.field_warnings, "{side}");
        fast.recycle();
    }
}
