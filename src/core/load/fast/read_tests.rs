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
