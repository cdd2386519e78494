use super::*;
use crate::core::annotations::{Change, Name};
use crate::core::index::{OpenOptions, load_run};
use crate::core::load::batch::Batch;
use crate::core::row::{Pos, RowLabels};
use proptest::prelude::*;
use std::collections::HashMap;
use std::io::Write;
use std::time::Instant;

use crate::core::index::sample::{SAMPLE, sample};

fn all_rows(index: &RunIndex) -> Vec<u32> {
    (0..index.rows.len() as u32).collect()
}

/// The rows a query selects, checking that `filter` and `matches` agree.
fn select(ctx: &Context, q: &str) -> Vec<u32> {
    let query = parse(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    let rows = all_rows(ctx.index);
    let got = query.filter(ctx, &rows);
    let one_by_one: Vec<u32> = rows
        .iter()
        .copied()
        .filter(|&i| query.matches(ctx, i))
        .collect();
    assert_eq!(got, one_by_one, "filter and matches disagree on {q}");
    // Split in several parts (a few rows each in tests), the same rows.
    let parts = query.filter_on(ctx, &rows, 4);
    assert_eq!(
        parts, one_by_one,
        "filter in parts and matches disagree on {q}"
    );
    // Candidates picked by the statuses the query allows (one byte a row,
    // as the viewer picks them) lose no match.
    if let Some(allowed) = query.statuses() {
        let mut picked = Vec::new();
        if ctx
            .index
            .rows_with_status(|s| allowed.admits(s), &mut picked)
        {
            assert!(picked.windows(2).all(|w| w[0] < w[1]), "{q}: out of order");
            assert_eq!(
                query.filter(ctx, &picked),
                one_by_one,
                "candidates by status lose matches of {q}"
            );
        }
    }
    got
}

#[test]
fn the_statuses_a_query_allows_follow_its_status_terms() {
    let allowed = |q: &str| {
        parse(q).unwrap().statuses().map(|m| {
            Status::ALL
                .into_iter()
                .filter(|&s| m.admits(s))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(allowed("dp<0 family:question"), None);
    assert_eq!(allowed("status:fail"), Some(vec![Status::Fail]));
    assert_eq!(
        allowed("status:failure -status:boundary dp<0"),
        Some(vec![Status::Invalid, Status::ServiceError, Status::Fail])
    );
    assert_eq!(
        allowed("-status:pass"),
        Some(
            Status::ALL
                .into_iter()
                .filter(|&s| s != Status::Pass)
                .collect()
        )
    );
    assert_eq!(allowed("status:pass status:fail"), Some(vec![]));
}

fn count(ctx: &Context, q: &str) -> usize {
    select(ctx, q).len()
}

#[test]
fn coded_columns_agree_with_the_rows_past_255_values() {
    // 600 rows with 300 distinct transformations (past the one-byte
    // codes) and families, some not recorded, added over two batches.
    let base = sample();
    let mut strings: Vec<Box<str>> = base.strings().to_vec();
    let first = strings.len() as Sym;
    strings.extend((0..300).map(|i| format!("t-{i:03}").into_boxed_str()));
    let (rows, labels): (Vec<PairRow>, Vec<RowLabels>) = (0..600)
        .map(|i| {
            let k = i % base.rows.len();
            let mut l = base.labels(k);
            l.transformation = if i % 9 == 0 {
                NO_SYM
            } else {
                first + ((i * 7) % 300) as Sym
            };
            l.family = if i % 11 == 0 { NO_SYM } else { l.family };
            (base.rows[k], l)
        })
        .unzip();
    let mut index = RunIndex::default();
    index.apply(Batch {
        strings,
        rows: rows[..250].to_vec(),
        labels: labels[..250].to_vec(),
        ..Batch::default()
    });
    index.apply(Batch {
        rows: rows[250..].to_vec(),
        labels: labels[250..].to_vec(),
        ..Batch::default()
    });
    // Past 255 distinct values the codes take two bytes.
    let codes = index.label_sets();
    assert!(codes.sets().len() > 255);
    assert!(codes.capacity_bytes() >= 2 * 600);
    assert_eq!(codes.len(), 600);
    for (i, l) in labels.iter().enumerate() {
        assert_eq!(index.labels(i), *l, "row {i}");
    }
    let ctx = Context {
        index: &index,
        store: None,
        changes: None,
    };
    for (q, pred) in [
        (
            "tr:t-29*",
            &(|i: usize| index.str(index.transformation(i)).starts_with("t-29"))
                as &dyn Fn(usize) -> bool,
        ),
        ("-tr:t-0*", &|i: usize| {
            !index.str(index.transformation(i)).starts_with("t-0")
        }),
        ("tr:t-299", &|i: usize| {
            index.str(index.transformation(i)) == "t-299"
        }),
        ("family:state-noise", &|i: usize| {
            index.str(index.family(i)) == "state-noise"
        }),
        ("-family:question", &|i: usize| {
            index.str(index.family(i)) != "question"
        }),
    ] {
        let want = expected_at(&index, |i, _| pred(i));
        assert!(want > 0, "{q} selects something");
        assert_eq!(count(&ctx, q), want, "{q}");
    }
}

fn expected(index: &RunIndex, pred: impl Fn(&PairRow) -> bool) -> usize {
    expected_at(index, |_, r| pred(r))
}

/// [`expected`] for a predicate that reads the row's number too.
fn expected_at(index: &RunIndex, pred: impl Fn(usize, &PairRow) -> bool) -> usize {
    index
        .rows
        .iter()
        .enumerate()
        .filter(|&(i, r)| pred(i, r))
        .count()
}

fn lines_containing(needle: &str) -> usize {
    let text = std::fs::read_to_string(SAMPLE).expect("read the sample");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| l.to_lowercase().contains(needle))
        .count()
}

#[test]
fn pair_and_decision_fields_count_like_the_rows_say() {
    let index = sample();
    assert_eq!(index.rows.len(), 72);
    let ctx = Context {
        index: &index,
        store: None,
        changes: None,
    };
    let s = |sym| index.str(sym).to_ascii_lowercase();
    let cases: Vec<(&str, usize)> = vec![
        (
            "status:fail",
            expected(&index, |r| r.status() == Status::Fail),
        ),
        (
            "status:failure",
            expected(&index, |r| r.status().is_failure()),
        ),
        (
            "status:FAIL|pass",
            expected(&index, |r| {
                matches!(r.status(), Status::Fail | Status::Pass)
            }),
        ),
        (
            "-status:pass",
            expected(&index, |r| r.status() != Status::Pass),
        ),
        (
            "family:state-noise",
            expected_at(&index, |i, _| s(index.family(i)) == "state-noise"),
        ),
        (
            "family:question|state-noise",
            expected_at(&index, |i, _| {
                matches!(s(index.family(i)).as_str(), "question" | "state-noise")
            }),
        ),
        (
            "flip:yes",
            expected(&index, |r| r.flags() & flags::FLIP != 0),
        ),
        (
            "flip:no",
            expected(&index, |r| r.flags() & flags::FLIP == 0),
        ),
        (
            "flip:true",
            expected(&index, |r| r.flags() & flags::FLIP != 0),
        ),
        (
            "flip:False",
            expected(&index, |r| r.flags() & flags::FLIP == 0),
        ),
        (
            "near:yes",
            expected(&index, |r| r.flags() & flags::NEAR_BOUNDARY != 0),
        ),
        (
            "route:action->pass",
            expected(&index, |r| {
                r.source_route() == Some(Route::Action) && r.variant_route() == Some(Route::Pass)
            }),
        ),
        (
            "route:*->pass",
            expected(&index, |r| {
                r.source_route().is_some() && r.variant_route() == Some(Route::Pass)
            }),
        ),
        (
            "route:review",
            expected(&index, |r| {
                r.source_route().is_some()
                    && r.variant_route().is_some()
                    && (r.source_route() == Some(Route::Review)
                        || r.variant_route() == Some(Route::Review))
            }),
        ),
        (
            "transformation:add-*",
            expected_at(&index, |i, _| {
                s(index.transformation(i)).starts_with("add-")
            }),
        ),
        (
            "tr:*evidence",
            expected_at(&index, |i, _| {
                s(index.transformation(i)).ends_with("evidence")
            }),
        ),
        ("margin<0.05", expected(&index, |r| r.margin < 0.05f32)),
        (
            "-margin<0.05",
            expected(&index, |r| r.margin.is_nan() || r.margin >= 0.05f32),
        ),
        ("|dp|>0.1", expected(&index, |r| r.dp.abs() > 0.1f32)),
        ("dp<-0.1", expected(&index, |r| r.dp < -0.1f32)),
        ("|dc|>=0.15", expected(&index, |r| r.dc.abs() >= 0.15f32)),
        (
            "outcome:timeout",
            expected(&index, |r| {
                r.source_outcome() == OutcomeCode::Timeout
                    || r.variant_outcome() == OutcomeCode::Timeout
            }),
        ),
        (
            "outcome:ok",
            expected(&index, |r| {
                r.source_outcome() == OutcomeCode::Ok && r.variant_outcome() == OutcomeCode::Ok
            }),
        ),
        (
            "expectation:invariant",
            expected(&index, |r| r.expectation() == ExpKind::Invariant),
        ),
        (
            "validity:invalid",
            expected(&index, |r| r.validity() == ValidityCode::Invalid),
        ),
        (
            "suggested:none",
            expected(&index, |r| r.suggestion().is_none()),
        ),
        (
            "suggested:bound*",
            expected(&index, |r| {
                r.suggestion().unwrap_or("").starts_with("bound")
            }),
        ),
        (
            "status:failure -family:question latency>=0",
            expected_at(&index, |i, r| {
                r.status().is_failure() && s(index.family(i)) != "question" && r.latency >= 0.0
            }),
        ),
        // With no annotation store every pair is uncategorised.
        ("category:none", 72),
        ("category:any", 0),
        ("", 72),
    ];
    for (q, want) in cases {
        assert_eq!(count(&ctx, q), want, "{q}");
    }
    // The counts that say something about the sample.
    for q in [
        "status:fail",
        "flip:yes",
        "route:action->pass",
        "transformation:add-*",
        "margin<0.05",
        "|dp|>0.1",
        "outcome:timeout",
    ] {
        let n = count(&ctx, q);
        assert!(n > 0 && n < 72, "{q} selects {n} of 72");
    }
    assert!(count(&ctx, "status:failure") > count(&ctx, "status:fail"));
}

#[test]
fn text_terms_search_the_raw_line() {
    let index = sample();
    let ctx = Context {
        index: &index,
        store: None,
        changes: None,
    };
    let once = lines_containing("attention");
    assert_eq!(once, 1);
    assert_eq!(count(&ctx, "attention"), once);
    assert_eq!(count(&ctx, "ATTENTION"), once);
    assert_eq!(count(&ctx, "-attention"), 72 - once);
    let phrase = lines_containing("payment step");
    assert!(phrase > 1 && phrase < 72);
    assert_eq!(count(&ctx, "\"payment step\""), phrase);
    assert_eq!(count(&ctx, "\"Payment STEP\" attention"), {
        let text = std::fs::read_to_string(SAMPLE).expect("read the sample");
        text.lines()
            .map(str::to_lowercase)
            .filter(|l| l.contains("payment step") && l.contains("attention"))
            .count()
    });
    // Ids are part of the text too.
    let id = index.str(index.rows[5].case).to_string();
    assert_eq!(
        count(&ctx, &format!("\"{id}\"")),
        lines_containing(&id.to_lowercase())
    );
    assert!(parse("attention").is_ok_and(|q| q.needs_text()));
    assert!(parse("status:fail dp<0").is_ok_and(|q| !q.needs_text()));
}

/// A text search on rows named out of file order (a sorted view), some
/// twice, some past the end, split in parts, through the page cache or
/// around it: the rows that match, in the order they were named.
#[test]
fn a_text_search_keeps_the_order_of_the_view() {
    for direct in [false, true] {
        // (A fresh index: how its spans are read is settled at the first.)
        let index = sample();
        if direct {
            for file in &index.files {
                file.read_spans_direct();
            }
        }
        let ctx = Context {
            index: &index,
            store: None,
            changes: None,
        };
        let n = index.rows.len() as u32;
        let mut rows: Vec<u32> = (0..n).map(|i| (i * 37) % n).rev().collect();
        rows.extend([3, n + 5, 3, 0]);
        for q in [
            "payment",
            "-payment",
            "status:fail \"payment step\"",
            "attention",
        ] {
            let query = parse(q).unwrap();
            let want: Vec<u32> = rows
                .iter()
                .copied()
                .filter(|&i| i < n && query.matches(&ctx, i))
                .collect();
            assert!(!want.is_empty(), "{q} matches something");
            for parts in [1, 2, 4] {
                assert_eq!(
                    query.filter_on(&ctx, &rows, parts),
                    want,
                    "{q}, {parts} parts, direct {direct}"
                );
            }
        }
    }
}

#[test]
fn unicode_text_and_unreadable_lines() {
    let mut f = tempfile::NamedTempFile::new().expect("temp file");
    writeln!(
        f,
        r#"{{"case_id":"c1","variant_id":"v1","label":"ÄRGER im Büro","passed":false}}"#
    )
    .expect("write");
    writeln!(
        f,
        r#"{{"case_id":"c2","variant_id":"v1","label":"calm","passed":true}}"#
    )
    .expect("write");
    let path = f.path().to_string_lossy().to_string();
    let index = load_run(&[path], &OpenOptions::default()).expect("opens");
    let ctx = Context {
        index: &index,
        store: None,
        changes: None,
    };
    assert_eq!(select(&ctx, "ärger"), vec![0]);
    assert_eq!(select(&ctx, "\"im büro\""), vec![0]);
    assert_eq!(select(&ctx, "CALM"), vec![1]);
    assert_eq!(select(&ctx, "case:C*"), vec![0, 1]);
    // A line that can no longer be read matches no text term, negated or not.
    f.as_file().set_len(0).expect("truncate");
    assert!(select(&ctx, "calm").is_empty());
    assert!(select(&ctx, "-calm").is_empty());
    assert_eq!(select(&ctx, "case:c2"), vec![1]);
    // Indices past the end are dropped, order is kept.
    let q = parse("case:c*").expect("parses");
    assert_eq!(q.filter(&ctx, &[1, 7, 0, 1]), vec![1, 0, 1]);
}

#[test]
fn triage_fields_follow_the_annotation_store() {
    let mut index = sample();
    // Every row's key, from its line (the index learns keys only where needed).
    let keys: HashMap<u64, RecordKey> = index
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let line = index.read_line(index.loc(i)).expect("the line reads");
            (
                r.pos.id(),
                crate::core::index::keys::line_key(&line).expect("a key"),
            )
        })
        .collect();
    let key = |r: &PairRow| keys[&r.pos.id()];
    let dir = tempfile::tempdir().expect("temp dir");
    let mut store =
        AnnotationStore::open(&dir.path().join("run.triage.jsonl"), "alice").expect("store");
    let rows = index.rows.clone();
    let row = |i: usize| &rows[i];
    let id_list: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            (
                index.str(r.case).to_string(),
                index.str(r.variant).to_string(),
            )
        })
        .collect();
    let ids = |i: usize| id_list[i].clone();
    let change = |key: RecordKey, i: usize, cat: Option<&str>, note: Option<&str>| Change {
        key,
        case_id: ids(i).0.into(),
        variant_id: ids(i).1.into(),
        category: cat.map(Name::new),
        note: note.map(str::to_string),
        source: AnnotationSource::Manual,
    };
    let old_key = RecordKey([0xab; 16]);
    assert!(index.rows.iter().all(|r| key(r) != old_key));
    let mut suggested = change(key(row(1)), 1, Some("distractor"), None);
    suggested.source = AnnotationSource::Suggestion;
    store
        .apply(vec![
            change(key(row(0)), 0, Some("boundary"), Some("right on the line")),
            suggested,
            change(key(row(2)), 2, None, Some("look again")),
            // An annotation made on an older version of pair 40.
            change(old_key, 40, Some("boundary"), None),
        ])
        .expect("annotations saved");
    index.resolve_keys(&store);
    let ctx = Context {
        index: &index,
        store: Some(&store),
        changes: None,
    };
    // Expected counts from the changes just made, not from the store.
    type Made<'a> = (RecordKey, (String, String), Option<&'a str>, bool);
    let annotated: Vec<Made> = vec![
        (key(row(0)), ids(0), Some("boundary"), true),
        (key(row(1)), ids(1), Some("distractor"), false),
        (key(row(2)), ids(2), None, true),
        (old_key, ids(40), Some("boundary"), false),
    ];
    let mine = |r: &PairRow| annotated.iter().find(|a| a.0 == key(r));
    let cat = |r: &PairRow| mine(r).and_then(|a| a.2);
    let stale = |r: &PairRow| {
        let rid = (
            index.str(r.case).to_string(),
            index.str(r.variant).to_string(),
        );
        mine(r).is_none() && annotated.iter().any(|a| a.0 != key(r) && a.1 == rid)
    };
    let n_stale = expected(&index, stale);
    assert!(n_stale >= 1);
    let cases: Vec<(&str, usize)> = vec![
        ("category:none", expected(&index, |r| cat(r).is_none())),
        (
            "category:boundary",
            expected(&index, |r| cat(r) == Some("boundary")),
        ),
        ("category:any", expected(&index, |r| cat(r).is_some())),
        ("category:BOUND*|distractor", 2),
        ("-category:none", 2),
        (
            "note:has",
            expected(&index, |r| mine(r).is_some_and(|a| a.3)),
        ),
        (
            "note:none",
            72 - expected(&index, |r| mine(r).is_some_and(|a| a.3)),
        ),
        ("source:suggestion", 1),
        ("source:manual", 1),
        ("reviewer:alice", 3),
        ("reviewer:bob", 0),
        ("-reviewer:al*", 69),
        ("stale:yes", n_stale),
        ("stale:no", 72 - n_stale),
        ("stale:yes category:none", n_stale),
    ];
    for (q, want) in cases {
        assert_eq!(count(&ctx, q), want, "{q}");
    }
    assert_eq!(select(&ctx, "category:boundary"), vec![0]);
    assert_eq!(select(&ctx, "note:has category:none"), vec![2]);
}

#[test]
fn value_bits_follow_the_index_names() {
    for st in Status::ALL {
        assert_eq!(enum_mask(Field::Status, st.name()), 1 << status_bit(st));
    }
    use ExpKind as E;
    for e in [
        E::None,
        E::Invariant,
        E::NotLessUrgent,
        E::NotMoreUrgent,
        E::AllowedRoutes,
        E::Unknown,
    ] {
        assert_eq!(enum_mask(Field::Expectation, e.name()), 1 << exp_bit(e));
    }
    use ValidityCode as V;
    for v in [
        V::Valid,
        V::Invalid,
        V::Undeclared,
        V::NotRecorded,
        V::Unknown,
    ] {
        assert_eq!(enum_mask(Field::Validity, v.name()), 1 << validity_bit(v));
    }
    use OutcomeCode as O;
    for o in [
        O::NotRecorded,
        O::Ok,
        O::Timeout,
        O::Error,
        O::InvalidResponse,
        O::Other,
    ] {
        assert_eq!(enum_mask(Field::Outcome, o.name()), 1 << outcome_bit(o));
    }
    for r in Route::ALL {
        let m = route_mask(&format!("{}->{}", r.name(), r.name())).expect("a route");
        assert_eq!(m, 1 << (route_bit(r) * 4));
    }
}

#[test]
fn canonical_text_round_trips_byte_for_byte() {
    for s in [
        "family:state-noise flip:yes category:none",
        "-status:pass dp<-0.1 \"checkout outage\"",
        "transformation:add-* |dp|>0.1 |dc|>=0.15 latency>=30000",
        "route:*->pass route:action->* route:review outcome:ok|timeout",
        "case:\"checkout outage\"|c-1 note:has stale:no source:suggestion",
        "\"say \\\"hi\\\"\" \"-x\" \"a:b\" rep=3 margin<=0.05 vmargin>0",
        "case:\"tab\\there\\u001b\" \"C:\\\\new\" \"line\\nbreak\"",
        "",
    ] {
        let q = parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(q.to_string(), s);
    }
    // JSON escapes read as JSON does; other backslashes are literal.
    let q = parse(r#"case:"\u00e9\ud83d\ude00\/\x" "\ud800""#).expect("parses");
    let want = [
        Term {
            negated: false,
            kind: TermKind::Match {
                field: Field::Case,
                values: vec!["\u{e9}\u{1f600}/\\x".to_string()],
            },
        },
        Term {
            negated: false,
            kind: TermKind::Text("\\ud800".to_string()),
        },
    ];
    assert_eq!(q.terms(), want);
    // Outside quotes a backslash is just a character.
    assert_eq!(q.to_string(), "case:\u{e9}\u{1f600}/\\x \\ud800");
    assert_eq!(parse(&q.to_string()), Ok(q));
    // Aliases, letter case and extra blanks print canonically.
    let q = parse("  TR:Add-*   Flip:YES\t-\"two words\" ").expect("parses");
    assert_eq!(
        q.to_string(),
        "transformation:Add-* flip:YES -\"two words\""
    );
    assert_eq!(parse("").expect("empty"), Query::default());
    assert!(parse(" \t ").expect("blank").is_empty());
    assert_eq!(FIELDS.len(), Field::ALL.len());
    for (name, f) in FIELDS.iter().zip(Field::ALL) {
        assert_eq!(*name, f.name());
        assert_eq!(Field::from_name(name), Some(f));
    }
}

#[test]
fn errors_say_where_and_what_is_allowed() {
    let e = |s: &str| parse(s).expect_err(s);
    let x = e("famly:x");
    assert_eq!(x.pos, 0);
    assert!(x.message.contains("unknown field `famly`"), "{x}");
    assert!(x.message.contains("status, family"), "{x}");
    assert_eq!(x.to_string(), format!("{} (at 0)", x.message));
    let x = e("dp<abc");
    assert_eq!(x.pos, 3);
    assert!(x.message.contains("bad number `abc`"), "{x}");
    let x = e("\"open");
    assert_eq!(x.pos, 0);
    assert!(x.message.contains("unterminated quote"), "{x}");
    let x = e("family:");
    assert_eq!(x.pos, 7);
    assert!(x.message.contains("empty value"), "{x}");
    let table: [(&str, usize, &str); 17] = [
        ("status:fail -famly:x", 13, "unknown field"),
        (
            "status:nope",
            7,
            "unknown status `nope`; values: fail, pass",
        ),
        ("route:act->pass", 6, "unknown route `act`"),
        ("route:->pass", 6, "empty side"),
        ("family:a|", 9, "empty value"),
        ("dp=<3", 2, "bad operator `=<`"),
        ("dp<", 3, "empty value"),
        ("dp<inf", 3, "bad number"),
        ("dp:0.1", 2, "is a number"),
        ("family>3", 6, "not a number"),
        ("ok -", 3, "must be followed"),
        ("\"\"", 0, "empty phrase"),
        ("\"a\"b", 3, "after the closing quote"),
        ("a\"b\"", 1, "quote inside a word"),
        ("a|b", 1, "separates"),
        (":x", 0, "needs a field name"),
        ("é case:\"x", 7, "unterminated quote"),
    ];
    for (s, pos, msg) in table {
        let x = e(s);
        assert_eq!(x.pos, pos, "{s}: {x}");
        assert!(x.message.contains(msg), "{s}: {x}");
    }
}

// -- Property: printing then parsing gives the same query -----------------

fn arb_text() -> impl Strategy<Value = String> {
    let special = prop_oneof![
        Just('"'),
        Just('\\'),
        Just(' '),
        Just('|'),
        Just(':'),
        Just('-'),
        Just('*'),
        Just('<'),
        Just('='),
        Just('é'),
        Just('\u{3000}'),
        Just('\n'),
        any::<char>(),
    ];
    prop_oneof![
        "[a-zA-Z0-9_.*-]{1,10}",
        "[a-z]{1,5} [a-z]{1,5}",
        "\\PC{1,12}",
        proptest::collection::vec(special, 1..8).prop_map(|v| v.into_iter().collect()),
    ]
}

fn enum_value(field: Field) -> BoxedStrategy<String> {
    let mut opts: Vec<String> = field.values().iter().map(|s| s.to_string()).collect();
    opts.extend(field.values().iter().map(|s| s.to_uppercase()));
    opts.push("*".to_string());
    if field == Field::Route {
        opts.extend(["action->pass", "*->pass", "action->*", "Rev*->*", "*->*"].map(String::from));
    }
    prop::sample::select(opts).boxed()
}

fn arb_term() -> impl Strategy<Value = Term> {
    let text_fields = prop::sample::select(vec![
        Field::Family,
        Field::Transformation,
        Field::Case,
        Field::Variant,
        Field::Contract,
        Field::Schema,
        Field::Model,
        Field::Category,
        Field::Suggested,
        Field::Reviewer,
    ]);
    let enum_fields = prop::sample::select(vec![
        Field::Status,
        Field::Expectation,
        Field::Validity,
        Field::Flip,
        Field::Route,
        Field::Outcome,
        Field::Near,
        Field::Note,
        Field::Stale,
        Field::Source,
        Field::Disagree,
    ]);
    let num_fields = prop::sample::select(
        Field::ALL
            .into_iter()
            .filter(|f| f.is_numeric())
            .collect::<Vec<_>>(),
    );
    let ops = prop::sample::select(vec![Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::Eq]);
    let number = prop_oneof![
        any::<f64>().prop_filter("finite", |x| x.is_finite()),
        (-100_000i32..100_000).prop_map(|x| f64::from(x) / 1000.0),
    ];
    let kind = prop_oneof![
        (text_fields, proptest::collection::vec(arb_text(), 1..4))
            .prop_map(|(field, values)| TermKind::Match { field, values }),
        enum_fields.prop_flat_map(|field| {
            proptest::collection::vec(enum_value(field), 1..3)
                .prop_map(move |values| TermKind::Match { field, values })
        }),
        (num_fields, ops, number).prop_map(|(field, op, value)| TermKind::Compare {
            field,
            op,
            value
        }),
        arb_text().prop_map(TermKind::Text),
    ];
    (any::<bool>(), kind).prop_map(|(negated, kind)| Term { negated, kind })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn printed_queries_parse_back(terms in proptest::collection::vec(arb_term(), 0..6)) {
        let q = Query { terms };
        let text = q.to_string();
        prop_assert_eq!(parse(&text), Ok(q), "text: {}", text);
    }

    #[test]
    fn parse_never_panics_and_reprints_stably(s in "\\PC{0,40}") {
        if let Ok(q) = parse(&s) {
            prop_assert_eq!(parse(&q.to_string()), Ok(q));
        }
    }
}

// -- Benchmark ---------------------------------------------------------------

/// A synthetic index of `n` rows cloned from the sample, with 1 case id per 10 rows.
fn synthetic(n: usize) -> RunIndex {
    let base = sample();
    let mut strings: Vec<Box<str>> = base.strings().to_vec();
    let first_case = strings.len() as Sym;
    strings.extend((0..n.div_ceil(10)).map(|i| format!("case-{i:07}").into_boxed_str()));
    let rows: Vec<PairRow> = (0..n)
        .map(|i| {
            let mut r = base.rows[i % base.rows.len()];
            r.case = first_case + (i / 10) as Sym;
            // A place of its own, for a key of its own.
            r.pos = Pos::new(0, i as u64 * 4096);
            r
        })
        .collect();
    let keys: Vec<(PairRow, RecordKey)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (*r, RecordKey((i as u128).to_le_bytes())))
        .collect();
    let mut index = RunIndex::default();
    index.apply(Batch {
        strings,
        rows,
        ..Batch::default()
    });
    for (r, k) in keys {
        index.remember_key(&r, k);
    }
    index
}

/// CPU time of this thread, in ms (steadier than wall time on a busy machine).
fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1000.0 + ts.tv_nsec as f64 / 1e6
}

/// Best of 7: wall ms on all cores, wall and CPU ms on one thread.
fn time_queries(ctx: &Context, queries: &[&str]) {
    let rows = all_rows(ctx.index);
    println!("     rows   all cores: wall ms   1 thread: wall ms, cpu ms       hits  query");
    for q in queries {
        let query = parse(q).unwrap_or_else(|e| panic!("{q}: {e}"));
        let (mut wall, mut wall1, mut cpu1) = (f64::MAX, f64::MAX, f64::MAX);
        let mut hits = 0;
        for _ in 0..7 {
            let t = Instant::now();
            hits = query.filter(ctx, &rows).len();
            wall = wall.min(t.elapsed().as_secs_f64() * 1000.0);
            let (t, c) = (Instant::now(), thread_cpu_ms());
            let one = query.filter_on(ctx, &rows, 1).len();
            cpu1 = cpu1.min(thread_cpu_ms() - c);
            wall1 = wall1.min(t.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(one, hits);
        }
        println!(
            "{:>9}   {wall:8.2}             {wall1:8.2} {cpu1:8.2}      {hits:>8}  {q}",
            rows.len()
        );
    }
}

/// `cargo test --release --lib query::tests::bench_filter -- --ignored --nocapture`
#[test]
#[ignore = "benchmark"]
fn bench_filter() {
    let n = 1_000_000;
    let t = Instant::now();
    let index = synthetic(n);
    println!("built {n} synthetic rows in {:?}", t.elapsed());
    let dir = tempfile::tempdir().expect("temp dir");
    let mut store =
        AnnotationStore::open(&dir.path().join("run.triage.jsonl"), "alice").expect("store");
    let changes = (0..200)
        .map(|i| {
            let r = &index.rows[i * 997];
            Change {
                key: match index.key(r) {
                    Some(k) if i % 4 != 0 => k,
                    _ => RecordKey([i as u8; 16]),
                },
                case_id: index.str(r.case).into(),
                variant_id: index.str(r.variant).into(),
                category: Some("boundary".into()),
                note: None,
                source: AnnotationSource::Manual,
            }
        })
        .collect();
    store.apply(changes).expect("annotate");
    // As the viewer does once rows arrive or the journal changes.
    let mut index = index;
    index.resolve_keys(&store);
    let ctx = Context {
        index: &index,
        store: Some(&store),
        changes: None,
    };
    // The floor: hand-written loops over the same rows.
    let rows = all_rows(&index);
    let (mut one, mut two) = (f64::MAX, f64::MAX);
    for _ in 0..7 {
        let t = thread_cpu_ms();
        let hits: Vec<u32> = rows
            .iter()
            .copied()
            .filter(|&i| index.rows[i as usize].status() == Status::Fail)
            .collect();
        one = one.min(thread_cpu_ms() - t);
        assert!(!hits.is_empty());
        let t = thread_cpu_ms();
        let hits: Vec<u32> = rows
            .iter()
            .copied()
            .filter(|&i| {
                let r = &index.rows[i as usize];
                r.dp.abs() > 0.1 && r.margin < 0.05
            })
            .collect();
        two = two.min(thread_cpu_ms() - t);
        assert!(!hits.is_empty());
    }
    println!(
        "PairRow is {} bytes; hand-written loops take {one:.2} ms (status:fail) and {two:.2} ms (|dp|>0.1 margin<0.05) of CPU",
        std::mem::size_of::<PairRow>()
    );
    time_queries(
        &ctx,
        &[
            "status:fail",
            "status:failure",
            "family:state-noise flip:yes",
            "transformation:add-*",
            "-status:pass dp<-0.1",
            "|dp|>0.1 margin<0.05",
            "route:*->pass outcome:ok",
            "case:case-00012*",
            "category:none",
            "category:boundary",
            "stale:yes",
        ],
    );
}

/// Time a real run: `TRIAGE_BENCH_RUN=/tmp/big.jsonl cargo test --release --lib
/// query::tests::bench_real_run -- --ignored --nocapture`.
#[test]
#[ignore = "benchmark"]
fn bench_real_run() {
    let Ok(path) = std::env::var("TRIAGE_BENCH_RUN") else {
        println!("set TRIAGE_BENCH_RUN to a run file");
        return;
    };
    let t = Instant::now();
    let index = load_run(&[path], &OpenOptions::default()).expect("opens");
    println!("indexed {} rows in {:?}", index.rows.len(), t.elapsed());
    let ctx = Context {
        index: &index,
        store: None,
        changes: None,
    };
    time_queries(
        &ctx,
        &[
            "status:fail",
            "status:failure family:question",
            "transformation:add-*",
            "-status:pass dp<-0.1",
            "|dp|>0.1 margin<0.05",
            "route:*->pass",
            "category:none",
            "status:failure timeout",
        ],
    );
}

#[test]
fn disagree_selects_the_pairs_reviewers_differ_on_until_resolved() {
    let mut index = sample();
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("run.triage.jsonl");
    let mut ana = AnnotationStore::open(&path, "ana").expect("store");
    let mut bob = AnnotationStore::open(&path, "bob").expect("store");
    let keys: Vec<RecordKey> = (0..3).map(|i| index.key_of(i).expect("a key")).collect();
    let ids: Vec<(String, String)> = (0..3)
        .map(|i| {
            let r = &index.rows[i];
            (
                index.str(r.case).to_string(),
                index.str(r.variant).to_string(),
            )
        })
        .collect();
    let change = |i: usize, cat: &str| Change {
        key: keys[i],
        case_id: ids[i].0.clone().into(),
        variant_id: ids[i].1.clone().into(),
        category: Some(cat.into()),
        note: None,
        source: AnnotationSource::Manual,
    };
    ana.apply(vec![
        change(0, "boundary"),
        change(1, "boundary"),
        change(2, "distractor"),
    ])
    .expect("saved");
    bob.apply(vec![change(0, "boundary"), change(1, "distractor")])
        .expect("saved");
    ana.refresh().expect("refresh");
    index.resolve_keys(&ana);
    let ctx = Context {
        index: &index,
        store: Some(&ana),
        changes: None,
    };
    let all = index.rows.len();
    assert_eq!(select(&ctx, "disagree:yes"), vec![1]);
    assert_eq!(select(&ctx, "disagree:no").len(), all - 1);
    assert_eq!(select(&ctx, "-disagree:yes").len(), all - 1);
    assert_eq!(select(&ctx, "disagree:yes category:none"), vec![1]);
    // A resolution settles it.
    ana.resolve(vec![change(1, "distractor")])
        .expect("resolved");
    index.resolve_keys(&ana);
    let ctx = Context {
        index: &index,
        store: Some(&ana),
        changes: None,
    };
    assert!(select(&ctx, "disagree:yes").is_empty());
    assert_eq!(select(&ctx, "category:distractor"), vec![1, 2]);
    assert!(parse("disagree:maybe").is_err());
}
