//! Tests of the state memo.

use super::*;

#[test]
fn huge_states_are_not_kept_from_line_to_line() {
    let small = br#"{"a":1}"#;
    let mut m = StateMemo::default();
    m.keep(small, (0, small.len()), 3, &[(2, 3, 5, 6).into()]);
    let mut out = Vec::new();
    assert_eq!(m.recall(br#"xx{"a":1}"#, 2, 3, &mut out), Some(small.len()));
    assert_eq!(out, [(4, 5, 7, 8)]);
    // Not at another depth.
    assert_eq!(m.recall(small, 0, 4, &mut out), None);
    let big = format!(r#"{{"a":"{}"}}"#, "x".repeat(MEMO_MAX));
    m.keep(big.as_bytes(), (0, big.len()), 3, &[]);
    assert_eq!(m.text.capacity(), 0, "the small one is let go too");
    assert_eq!(m.recall(big.as_bytes(), 0, 3, &mut out), None);
}

#[test]
fn a_memo_that_keeps_missing_rests_then_tries_again() {
    let (a, b) = (br#"{"a":1}"#, br#"{"a":2}"#);
    let mut m = StateMemo::default();
    let mut out = Vec::new();
    // Each line keeps a state the next one does not repeat.
    for i in 0..MEMO_MISSES {
        m.keep(if i % 2 == 0 { a } else { b }, (0, 7), 3, &[]);
        let next = if i % 2 == 0 { b } else { a };
        assert_eq!(m.recall(next, 0, 3, &mut out), None);
    }
    // Resting: the repeat is not seen, and nothing is kept.
    m.keep(a, (0, 7), 3, &[]);
    assert!(m.text.is_empty());
    for _ in 0..MEMO_REST {
        assert_eq!(m.recall(a, 0, 3, &mut out), None);
    }
    // Then it keeps and recalls again; a hit clears the misses.
    m.keep(a, (0, 7), 3, &[]);
    assert_eq!(m.recall(a, 0, 3, &mut out), Some(7));
    assert_eq!(m.misses, 0);
    assert!(out.is_empty());
}
