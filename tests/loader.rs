//! The loader at scale: the fast path agrees with the slow path, and indexed
//! counts agree with a full slow parse, on generated runs.
//!
//! The generator is `examples/gen_run.rs`, compiled in here as a module.

use std::io::Write;

use triage::core::derive::{Status, derive};
use triage::core::index::{self, OpenOptions, RunIndex, load_run_with};
use triage::core::load::line::ParseMode;
use triage::core::record::map_record;

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/gen_run.rs"]
mod gen_run;

/// A generated bulk run of `pairs` pairs in a temporary file.
fn generated(pairs: u64, seed: u64) -> tempfile::NamedTempFile {
    let mut buf = Vec::new();
    gen_run::write_bulk(&mut buf, pairs, seed, 0.25).expect("generate");
    let mut f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .expect("temp file");
    f.write_all(&buf).expect("write");
    f
}

fn load(path: &str, mode: ParseMode) -> RunIndex {
    load_run_with(&[path.to_string()], &OpenOptions::default(), mode).expect("load")
}

/// Rows, strings and problems of two indexes are identical (NaN equals NaN).
fn assert_same(fast: &RunIndex, slow: &RunIndex, what: &str) {
    assert_eq!(fast.rows.len(), slow.rows.len(), "{what}: row count");
    for (i, (a, b)) in fast.rows.iter().zip(&slow.rows).enumerate() {
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "{what}: row {i}");
    }
    assert_eq!(fast.strings(), slow.strings(), "{what}: interned strings");
    // The same lines and messages; the file names may differ.
    let problems = |i: &RunIndex| -> Vec<_> {
        i.problems
            .iter()
            .map(|p| (p.line, p.kind, p.message.clone()))
            .collect()
    };
    assert_eq!(problems(fast), problems(slow), "{what}: problems");
    assert_eq!(fast.failures, slow.failures, "{what}: failures");
    assert_eq!(fast.skipped_lines, slow.skipped_lines, "{what}: skipped");
}

#[test]
fn fast_path_matches_slow_path_on_a_generated_run() {
    let f = generated(3000, 11);
    let p = f.path().to_string_lossy().to_string();
    assert_same(
        &load(&p, ParseMode::Fast),
        &load(&p, ParseMode::Slow),
        "generated",
    );
}

#[test]
fn gzip_input_indexes_like_the_plain_file() {
    let f = generated(400, 5);
    let plain = std::fs::read(f.path()).expect("read");
    let mut gz = tempfile::Builder::new()
        .suffix(".jsonl.gz")
        .tempfile()
        .expect("temp file");
    {
        let mut enc = flate2::write::GzEncoder::new(&mut gz, flate2::Compression::fast());
        enc.write_all(&plain).expect("compress");
        enc.finish().expect("compress");
    }
    let a = load(&f.path().to_string_lossy(), ParseMode::Fast);
    let b = load(&gz.path().to_string_lossy(), ParseMode::Fast);
    assert_same(&b, &a, "gzip");
    assert!(b.done);
    assert_eq!(b.bytes_read, plain.len() as u64);
    // The detail view reads lines back from the decompressed copy.
    let last = b.rows.len() - 1;
    assert_eq!(
        b.read_line(b.loc(last)).expect("read back"),
        a.read_line(a.loc(a.rows.len() - 1)).expect("read back")
    );
    assert!(b.load_pair(last).is_ok());
}

/// Counts from the index against a full slow-path parse of every line.
#[test]
fn indexed_counts_match_a_full_parse_at_scale() {
    let pairs = 10_000;
    let f = generated(pairs, 20_261_128);
    let p = f.path().to_string_lossy().to_string();
    let idx = index::load_run(std::slice::from_ref(&p), &OpenOptions::default()).expect("load");
    // The status column covers every row, in row order.
    let statuses: Vec<_> = idx.rows.iter().map(|r| r.status()).collect();
    assert_eq!(idx.statuses().map(|c| c.to_vec()), Some(statuses));

    let text = std::fs::read_to_string(&p).expect("read");
    let (mut rows, mut failures, mut flips) = (0usize, 0usize, 0usize);
    let mut statuses = std::collections::BTreeMap::<&str, usize>::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(v) = serde_json::from_str(line) else {
            continue;
        };
        let Ok(rec) = map_record(v) else { continue };
        let d = derive(&rec);
        rows += 1;
        failures += usize::from(d.status.is_failure());
        flips += usize::from(d.flip == Some(true));
        *statuses.entry(d.status.name()).or_default() += 1;
    }
    assert_eq!(idx.rows.len(), rows);
    assert_eq!(rows as u64, pairs);
    assert_eq!(idx.failures, failures);
    let idx_flips = idx
        .rows
        .iter()
        .filter(|r| r.has(triage::core::row::flags::FLIP))
        .count();
    assert_eq!(idx_flips, flips);
    for st in [
        Status::Invalid,
        Status::ServiceError,
        Status::Fail,
        Status::Unchecked,
        Status::Pass,
    ] {
        let n = idx.rows.iter().filter(|r| r.status() == st).count();
        assert_eq!(
            n,
            statuses.get(st.name()).copied().unwrap_or(0),
            "{}",
            st.name()
        );
    }
    assert!(idx.done);
}

/// A recorded `validation_status` decides validity by both parse paths (an
/// `invalid` pair with unchanged inputs stays invalid; `unknown` is its own
/// validity), and `unsafe_approval` is counted with its denominator.
#[test]
fn recorded_validity_and_unsafe_approval_by_both_paths() {
    let side = |q: &str| format!(r#"{{"question":"{q}","state":{{"a":1}}}}"#);
    let line = |id: &str, extra: &str| {
        format!(
            r#"{{"case_id":"c","variant_id":"{id}","allowed_changes":[],"source":{},"variant":{},{extra}}}"#,
            side("q"),
            side("q")
        )
    };
    let text = [
        line("copy", r#""validation_status":"invalid""#),
        line("undecided", r#""validationStatus":"unknown","passed":true"#),
        line("checked", r#""validation_status":"valid""#),
        line("approved", r#""unsafe_approval":true,"passed":false"#),
        line("held", r#""unsafeApproval":false,"passed":true"#),
        line("allowed", r#""passed":true"#),
    ]
    .join("\n");
    let mut f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .expect("temp file");
    f.write_all(text.as_bytes()).expect("write");
    let path = f.path().to_string_lossy().to_string();
    for mode in [ParseMode::Fast, ParseMode::Slow] {
        let idx = load(&path, mode);
        let got: Vec<(&str, &str)> = idx
            .rows
            .iter()
            .map(|r| (r.validity().name(), r.status().name()))
            .collect();
        assert_eq!(
            got,
            [
                ("invalid", "invalid"),
                ("unknown", "pass"),
                ("valid", "unchecked"),
                ("valid", "fail"),
                ("valid", "pass"),
                ("valid", "pass"),
            ],
            "{mode:?}"
        );
        let rows: Vec<u32> = (0..idx.rows.len() as u32).collect();
        let s = triage::core::stats::summarize(
            &idx,
            &rows,
            None,
            triage::core::stats::GroupBy::Transformation,
        );
        assert_eq!(
            s.unsafe_approvals,
            Some(triage::core::stats::UnsafeApprovals { count: 1, of: 2 }),
            "{mode:?}"
        );
    }
    let d =
        derive(&map_record(serde_json::from_str(text.lines().next().unwrap()).unwrap()).unwrap());
    assert_eq!(d.status, Status::Invalid);
    assert!(
        d.why.contains("validator recorded the variant as invalid"),
        "{}",
        d.why
    );
}
