use super::*;
use crate::core::index::sample::sample;

fn csv(text: &str) -> (Vec<Row>, Vec<Problem>) {
    read(text.as_bytes(), FileFormat::Csv)
}

fn kinds(problems: &[Problem]) -> Vec<(u64, String)> {
    problems
        .iter()
        .map(|p| (p.line, p.kind.to_string()))
        .collect()
}

#[test]
fn the_format_comes_from_the_extension_else_the_first_byte() {
    let p = Path::new;
    assert_eq!(FileFormat::detect(p("a.csv"), b"{"), FileFormat::Csv);
    assert_eq!(FileFormat::detect(p("a.JSONL"), b"c"), FileFormat::Jsonl);
    assert_eq!(
        FileFormat::detect(p("a.txt"), b"  \n{\"a\":1}"),
        FileFormat::Jsonl
    );
    assert_eq!(
        FileFormat::detect(p("labels"), b"case_id,"),
        FileFormat::Csv
    );
}

#[test]
fn csv_rows_are_read_by_header_name_in_any_order() {
    let (rows, problems) = csv("note,category,variant_id,case_id,repetition,extra\n\
         \"a note, with a comma\",boundary,v1,c1,1,x\n\
         ,distractor,v2,c2,,\n\
         \n");
    assert_eq!(problems, vec![]);
    assert_eq!(
        rows,
        vec![
            Row {
                line: 2,
                case_id: "c1".into(),
                variant_id: "v1".into(),
                repetition: Some(1),
                category: "boundary".into(),
                note: Some("a note, with a comma".into()),
            },
            Row {
                line: 3,
                case_id: "c2".into(),
                variant_id: "v2".into(),
                repetition: None,
                category: "distractor".into(),
                note: None,
            },
        ]
    );
}

#[test]
fn a_header_without_a_required_column_is_a_problem_on_line_1() {
    let (rows, problems) = csv("case_id,variant,category\nc1,v1,boundary\n");
    assert!(rows.is_empty());
    assert_eq!(
        kinds(&problems),
        vec![(
            1,
            "the header has no `variant_id` column (needed: case_id, variant_id, category; optional: repetition, note)".to_string()
        )]
    );
}

#[test]
fn rows_that_cannot_be_read_are_problems_with_their_line() {
    let (rows, problems) = csv("case_id,variant_id,repetition,category\n\
         c1,v1,0,boundary\n\
         ,v1,0,boundary\n\
         c1,,0,boundary\n\
         c1,v1,0,\n\
         c1,v1,-1,boundary\n\
         c1,v1,two,boundary\n");
    assert_eq!(rows.len(), 1);
    assert_eq!(
        kinds(&problems),
        vec![
            (3, "`case_id` is empty".to_string()),
            (4, "`variant_id` is empty".to_string()),
            (5, "`category` is empty".to_string()),
            (
                6,
                "repetition `-1` is not a whole number from 0".to_string()
            ),
            (
                7,
                "repetition `two` is not a whole number from 0".to_string()
            ),
        ]
    );
}

#[test]
fn jsonl_rows_and_their_problems() {
    let text = "{\"case_id\":\"c1\",\"variant_id\":\"v1\",\"repetition\":2,\"category\":\"boundary\",\"note\":\"n\"}\n\
                \n\
                {\"case_id\":\"c2\",\"variant_id\":\"v2\",\"category\":\"distractor\",}\n\
                [1,2]\n\
                {\"case_id\":\"c3\",\"variant_id\":[\"v\"],\"category\":\"x\"}\n";
    let (rows, problems) = read(text.as_bytes(), FileFormat::Jsonl);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].repetition, Some(2));
    assert_eq!(rows[0].note.as_deref(), Some("n"));
    let lines: Vec<u64> = problems.iter().map(|p| p.line).collect();
    assert_eq!(lines, vec![3, 4, 5]);
    assert!(
        problems[0]
            .kind
            .to_string()
            .starts_with("cannot read the row: not JSON")
    );
    assert_eq!(
        problems[1].kind.to_string(),
        "cannot read the row: a list is not a JSON object"
    );
    assert_eq!(
        problems[2].kind.to_string(),
        "cannot read the row: a field is a list, not text"
    );
}

#[test]
fn rows_are_matched_to_the_runs_pairs_and_every_mismatch_is_a_problem() {
    let mut index = sample();
    let taxonomy = Taxonomy::default();
    let (rows, problems) = csv("case_id,variant_id,repetition,category,note\n\
         login-failures-002,question-typo,,boundary,on the line\n\
         checkout-outage-001,question-paraphrase,1,distractor,\n\
         checkout-outage-001,question-paraphrase,,distractor,\n\
         nobody,question-typo,,boundary,\n\
         login-failures-002,question-typo,7,boundary,\n\
         login-failures-002,question-typo,,not-a-category,\n\
         login-failures-002,question-typo,,distractor,\n");
    assert_eq!(problems, vec![]);
    let (changes, problems) = plan(&mut index, &taxonomy, &rows);
    assert_eq!(
        changes
            .iter()
            .map(|c| (&*c.case_id, c.category.as_deref(), c.note.as_deref()))
            .collect::<Vec<_>>(),
        vec![
            ("login-failures-002", Some("boundary"), Some("on the line")),
            ("checkout-outage-001", Some("distractor"), None),
        ]
    );
    // The repetition picks the second trial's key, not the first's.
    let second = (0..index.rows.len())
        .position(|i| {
            let r = &index.rows[i];
            index.str(r.case) == "checkout-outage-001"
                && index.str(r.variant) == "question-paraphrase"
                && index.repetition(i) == Some(1)
        })
        .unwrap();
    assert_eq!(changes[1].key, index.key_of(second as u32).unwrap());
    let got = kinds(&problems);
    assert_eq!(got.len(), 5, "{got:?}");
    assert_eq!(
        got[0],
        (
            4,
            "checkout-outage-001 / question-paraphrase is 2 repeated trials in the run; give a repetition column to say which".to_string()
        )
    );
    assert_eq!(
        got[1],
        (
            5,
            "no pair of the run is nobody / question-typo".to_string()
        )
    );
    assert_eq!(
        got[2],
        (
            6,
            "no pair of the run is login-failures-002 / question-typo repetition 7".to_string()
        )
    );
    assert_eq!(got[3].0, 7);
    assert!(got[3].1.starts_with(
        "`not-a-category` is not a category id; the valid ids are: ambiguous-contract, distractor"
    ));
    assert_eq!(got[4], (8, "line 2 already decides this pair".to_string()));
}

#[test]
fn hostile_text_in_a_problem_is_shown_inert() {
    let mut index = sample();
    let (rows, _) = csv("case_id,variant_id,category\n\"\x1b[31mred\",v,boundary\n");
    let (_, problems) = plan(&mut index, &Taxonomy::default(), &rows);
    let shown = problems[0].kind.to_string();
    assert!(!shown.contains('\x1b'), "{shown:?}");
}
