use super::*;
use proptest::prelude::*;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

/// Fleiss, Levin and Paik, *Statistical Methods for Rates and Proportions*
/// (3rd ed., 2003), §18.1, Table 18.1: two raters, 100 subjects, three
/// diagnostic categories, proportions .75 .01 .04 / .05 .04 .01 / .00 .00
/// .10. The book gives p_o = .89, p_e = .66 and κ = .68. The standard error
/// checked here, 0.0877, is the 1969 formula worked by hand from that table
/// (A = 0.29519, B = 0.00806, C = 0.21432), independently of this code.
#[test]
fn kappa_of_the_fleiss_levin_paik_example() {
    let m = vec![vec![75, 1, 4], vec![5, 4, 1], vec![0, 0, 10]];
    let (po, pe, k) = cohen(&m);
    let k = k.unwrap();
    assert!(close(po, 0.89, 1e-12));
    assert!(close(pe, 0.66, 1e-12));
    assert!(close(k.value, 0.68, 0.005), "{}", k.value);
    assert!(close(k.value, 0.23 / 0.34, 1e-12));
    assert!(close(k.se, 0.0877, 0.0001), "{}", k.se);
    assert!(
        close(k.low, 0.505, 0.001) && close(k.high, 0.848, 0.001),
        "{k:?}"
    );
}

/// Fleiss, Cohen and Everitt (1969), the paper whose standard error this
/// is: 200 subjects, proportions .53 .05 .02 / .11 .14 .05 / .01 .06 .03;
/// κ = .429. Its standard error, 0.0537, worked independently of this code.
#[test]
fn kappa_of_the_fleiss_cohen_everitt_example() {
    let m = vec![vec![106, 10, 4], vec![22, 28, 10], vec![2, 12, 6]];
    let (po, pe, k) = cohen(&m);
    let k = k.unwrap();
    assert!(close(po, 0.70, 1e-12) && close(pe, 0.475, 1e-12));
    assert!(close(k.value, 0.429, 0.0005), "{}", k.value);
    assert!(close(k.se, 0.0537, 0.0001), "{}", k.se);
}

/// Cohen (1968), Psychological Bulletin 70(4), Table 1 (Cohen's 1960
/// example): 200 subjects, proportions .44 .07 .09 / .05 .20 .05 / .01 .03
/// .06; unweighted κ = .492.
#[test]
fn kappa_of_cohens_example() {
    let m = vec![vec![88, 14, 18], vec![10, 40, 10], vec![2, 6, 12]];
    let (po, pe, k) = cohen(&m);
    assert!(close(po, 0.70, 1e-12) && close(pe, 0.41, 1e-12));
    assert!(close(k.unwrap().value, 0.492, 0.0005));
}

#[test]
fn kappa_is_undefined_without_pairs_or_with_one_category() {
    assert_eq!(cohen(&[]).2, None);
    assert_eq!(cohen(&[vec![0, 0], vec![0, 0]]).2, None);
    let (po, pe, k) = cohen(&[vec![7]]);
    assert_eq!((po, pe, k), (1.0, 1.0, None));
}

#[test]
fn the_report_counts_categories_and_the_matrix_in_taxonomy_order() {
    let tax = Taxonomy::default();
    let labels = [
        ("boundary", "boundary"),
        ("boundary", "distractor"),
        ("distractor", "distractor"),
        ("made-up", "boundary"),
    ];
    let r = compare_labels("ana", "bob", &labels, &tax, 0);
    assert_eq!(r.pairs, 4);
    assert_eq!(r.categories, vec!["distractor", "boundary", "made-up"]);
    assert_eq!(r.matrix, vec![vec![1, 0, 0], vec![1, 1, 0], vec![0, 1, 0]]);
    let boundary = &r.per_category[1];
    assert_eq!((boundary.a, boundary.b, boundary.both), (2, 2, 1));
    assert!(close(boundary.agreement, 0.5, 1e-12));
    assert!(close(r.observed, 0.5, 1e-12));
}

#[test]
fn between_takes_two_different_names() {
    assert_eq!(
        parse_between("ana, suggestions"),
        Ok(("ana".to_string(), "suggestions".to_string()))
    );
    assert!(parse_between("ana").is_err());
    assert!(parse_between("ana,ana").unwrap_err().contains("twice"));
    assert!(parse_between("ana,").is_err());
    assert!(parse_between("a,b,c").is_err());
}

#[test]
fn the_text_and_json_reports_say_the_same() {
    let tax = Taxonomy::default();
    let labels = [
        ("boundary", "boundary"),
        ("distractor", "boundary"),
        ("distractor", "distractor"),
    ];
    let r = compare_labels("ana", "bob", &labels, &tax, 0);
    let json: serde_json::Value =
        serde_json::from_str(&render(std::slice::from_ref(&r), Format::Json, true)).unwrap();
    assert_eq!(json["pairs"], 3);
    let k = r.kappa.unwrap();
    assert_eq!(json["kappa"]["value"], k.value);
    assert_eq!(json["kappa"]["low"], k.low);
    assert_eq!(json["kappa"]["high"], k.high);
    assert_eq!(
        json["matrix"]["counts"],
        serde_json::json!([[1, 1], [0, 1]])
    );
    let text = render(std::slice::from_ref(&r), Format::Text, true);
    assert!(
        text.contains(&format!("{:.3} [{:.3}, {:.3}]", k.value, k.low, k.high)),
        "{text}"
    );
    let many: serde_json::Value =
        serde_json::from_str(&render(&[r.clone(), r], Format::Json, false)).unwrap();
    assert_eq!(many["comparisons"].as_array().unwrap().len(), 2);
}

/// Two raters who agree on every pair, or who each give every pair one
/// category, have a standard error of 0: the reports say the interval has
/// no width rather than let `[1.000, 1.000]` read as certainty.
#[test]
fn an_interval_of_no_width_is_named_in_every_report() {
    let tax = Taxonomy::default();
    let agree = compare_labels(
        "ana",
        "bob",
        &[("boundary", "boundary"), ("distractor", "distractor")],
        &tax,
        0,
    );
    let apart = compare_labels("ana", "bob", &[("boundary", "distractor")], &tax, 0);
    let spread = compare_labels(
        "ana",
        "bob",
        &[
            ("boundary", "boundary"),
            ("distractor", "boundary"),
            ("distractor", "distractor"),
        ],
        &tax,
        0,
    );
    for r in [&agree, &apart] {
        let k = r.kappa.unwrap();
        assert!(k.degenerate(), "{k:?}");
        assert_eq!((k.low, k.high), (k.value, k.value));
        assert!(kappa_text(r).ends_with("an interval of no width"));
        for format in [Format::Text, Format::Markdown] {
            let out = render(std::slice::from_ref(r), format, true);
            assert!(out.contains(DEGENERATE), "{out}");
        }
    }
    assert!(!spread.kappa.unwrap().degenerate());
    assert!(!render(std::slice::from_ref(&spread), Format::Text, true).contains(DEGENERATE));
}

#[test]
fn hostile_names_are_inert_in_every_format() {
    let tax = Taxonomy::default();
    let r = compare_labels(
        "\x1b]0;x\x07ana",
        "b|*o*",
        &[("\x1b[2Jc", "\x1b[2Jc"), ("d", "d")],
        &tax,
        0,
    );
    for f in [Format::Text, Format::Markdown] {
        let out = render(std::slice::from_ref(&r), f, true);
        assert!(!out.contains('\x1b') && !out.contains('\x07'), "{out:?}");
    }
    assert!(render(std::slice::from_ref(&r), Format::Markdown, true).contains("b\\|\\*o\\*"));
    // JSON escapes what a terminal would obey (serde_json leaves bidi
    // overrides and C1 controls raw), and reads back the name.
    let r = compare_labels("an\u{202e}a\u{9b}", "bob", &[("d", "d")], &tax, 0);
    let json = render(std::slice::from_ref(&r), Format::Json, true);
    assert!(
        !json.contains('\u{202e}') && !json.contains('\u{9b}'),
        "{json}"
    );
    assert!(json.contains("an\\u202ea\\u009b"), "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["a"], "an\u{202e}a\u{9b}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn identical_labels_give_kappa_one(labels in prop::collection::vec(0usize..5, 2..200)) {
        prop_assume!(labels.iter().any(|&l| l != labels[0]));
        let k = 5;
        let mut m = vec![vec![0u64; k]; k];
        for &l in &labels {
            m[l][l] += 1;
        }
        let (po, _, kappa) = cohen(&m);
        let kappa = kappa.unwrap();
        prop_assert!(close(po, 1.0, 1e-12));
        prop_assert!(close(kappa.value, 1.0, 1e-12));
        prop_assert!(close(kappa.low, 1.0, 1e-6) && close(kappa.high, 1.0, 1e-6));
    }

    #[test]
    fn independent_labels_give_kappa_about_zero(
        a in prop::collection::vec(0usize..4, 3000),
        b in prop::collection::vec(0usize..4, 3000),
    ) {
        let mut m = vec![vec![0u64; 4]; 4];
        for (x, y) in a.iter().zip(&b) {
            m[*x][*y] += 1;
        }
        let kappa = cohen(&m).2.unwrap();
        // The standard error here is about 0.012: 0.06 is five of them.
        prop_assert!(kappa.value.abs() < 0.06, "{kappa:?}");
        prop_assert!(kappa.low <= kappa.value && kappa.value <= kappa.high);
    }

    #[test]
    fn kappa_is_the_same_with_the_raters_swapped(cells in prop::collection::vec(0u64..20, 9)) {
        let m: Vec<Vec<u64>> = cells.chunks(3).map(<[u64]>::to_vec).collect();
        let t: Vec<Vec<u64>> = (0..3).map(|j| (0..3).map(|i| m[i][j]).collect()).collect();
        let (a, b) = (cohen(&m).2, cohen(&t).2);
        match (a, b) {
            (Some(a), Some(b)) => {
                prop_assert!(close(a.value, b.value, 1e-12));
                prop_assert!(close(a.se, b.se, 1e-9));
            }
            (a, b) => prop_assert_eq!(a, b),
        }
    }
}
