//! A comparison written out: the text `triage compare` prints and its
//! JSON, whose names are stable (docs/compare.md), and the pairs each
//! change lists ([`listed`]), which the Markdown (`export::since`) lays
//! out too.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{ChangeKind, Comparison, Entry, Movement, Runs};
use crate::core::index::RunIndex;
use crate::core::row::PairRow;
use crate::core::stats::table::cell;
use crate::core::text::{fit, inert_line, plural, width};

/// Pairs listed per change in the text and Markdown; JSON lists every one.
pub const LIST_MAX: usize = 50;

/// The changes the text and Markdown list pair by pair, in this order.
/// Removed pairs are listed too: only the baseline has them, so no query
/// of NEW can show them.
pub const LISTED: [ChangeKind; 6] = [
    ChangeKind::NewFailures,
    ChangeKind::Fixed,
    ChangeKind::StatusChanged,
    ChangeKind::ContentChanged,
    ChangeKind::Removed,
    ChangeKind::StillFailing,
];

/// A heading for a change.
pub fn title(c: ChangeKind) -> &'static str {
    match c {
        ChangeKind::NewFailures => "New failures",
        ChangeKind::Fixed => "Fixed",
        ChangeKind::StillFailing => "Still failing",
        ChangeKind::StatusChanged => "Failing another way",
        ChangeKind::ContentChanged => "Inputs changed (not comparable)",
        ChangeKind::Added => "Added",
        ChangeKind::Removed => "Removed (in the baseline only)",
        ChangeKind::UnchangedPass => "Passing in both",
    }
}

/// One pair's facts as every format shows them.
struct PairFacts {
    case_id: String,
    variant_id: String,
    repetition: Option<u32>,
    old_status: Option<&'static str>,
    new_status: Option<&'static str>,
    dp_old: Option<f64>,
    dp_new: Option<f64>,
    category: Option<String>,
    category_stale: bool,
    category_from: Option<&'static str>,
}

fn round6(x: f32) -> Option<f64> {
    let v = f64::from(x);
    v.is_finite().then(|| {
        let r = (v * 1e6).round() / 1e6;
        if r == 0.0 { 0.0 } else { r }
    })
}

fn row(index: &RunIndex, i: Option<u32>) -> Option<&PairRow> {
    index.rows.get(i? as usize)
}

/// An entry's facts; `None` when neither run has its row any more (a run
/// reloaded since the comparison).
fn facts(cmp: &Comparison, runs: Runs<'_>, e: Entry) -> Option<PairFacts> {
    let old = row(runs.old, e.old_row);
    let new = row(runs.new, e.new_row);
    let (index, r, i) = match (new, old) {
        (Some(n), _) => (runs.new, n, e.new_row.unwrap_or_default()),
        (None, Some(o)) => (runs.old, o, e.old_row.unwrap_or_default()),
        (None, None) => return None,
    };
    let decision = cmp.decision(runs, e);
    Some(PairFacts {
        case_id: index.str(r.case).to_string(),
        variant_id: index.str(r.variant).to_string(),
        repetition: index.repetition(i as usize),
        old_status: old.map(|o| o.status().name()),
        new_status: new.map(|n| n.status().name()),
        dp_old: old.and_then(|o| round6(o.dp)),
        dp_new: new.and_then(|n| round6(n.dp)),
        category: decision.and_then(|d| d.annotation().category.map(String::from)),
        category_stale: decision.is_some_and(|d| d.is_stale()),
        category_from: decision.map(|d| d.from()),
    })
}

fn counts_object(counts: &[u64; 8]) -> Value {
    let mut m = Map::new();
    for c in ChangeKind::ALL {
        m.insert(c.name().to_string(), json!(counts[c as usize]));
    }
    Value::Object(m)
}

#[derive(Serialize)]
struct JsonMovement<'a> {
    transformation: &'a str,
    counts: Value,
    old: &'a Option<crate::core::stats::Rate>,
    new: &'a Option<crate::core::stats::Rate>,
    difference: &'a Option<crate::core::stats::Difference>,
}

/// One entry of the JSON's `pairs`, in the order its names are written.
#[derive(Serialize)]
struct JsonPair {
    case_id: String,
    variant_id: String,
    repetition: Option<u32>,
    change: &'static str,
    old_status: Option<&'static str>,
    new_status: Option<&'static str>,
    dp_old: Option<f64>,
    dp_new: Option<f64>,
    category: Option<String>,
    category_stale: bool,
    category_from: Option<&'static str>,
}

/// The `pairs` array, each entry made as it is written: a comparison of a
/// million pairs is not held as a million JSON objects.
struct JsonPairs<'a> {
    cmp: &'a Comparison,
    runs: Runs<'a>,
}

impl Serialize for JsonPairs<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (cmp, runs) = (self.cmp, self.runs);
        s.collect_seq(cmp.entries().filter_map(|e| {
            let f = facts(cmp, runs, e)?;
            Some(JsonPair {
                case_id: f.case_id,
                variant_id: f.variant_id,
                repetition: f.repetition,
                change: e.change.name(),
                old_status: f.old_status,
                new_status: f.new_status,
                dp_old: f.dp_old,
                dp_new: f.dp_new,
                category: f.category,
                category_stale: f.category_stale,
                category_from: f.category_from,
            })
        }))
    }
}

/// The JSON document, in the order its names are written.
#[derive(Serialize)]
struct JsonComparison<'a> {
    old: String,
    new: String,
    counts: Value,
    pairs: JsonPairs<'a>,
    by_transformation: Vec<JsonMovement<'a>>,
}

/// The comparison as one JSON document (see docs/compare.md), written as
/// it is made.
pub fn write_json(out: &mut dyn Write, cmp: &Comparison, runs: Runs<'_>) -> io::Result<()> {
    let movement = cmp.movement(runs.old, runs.new);
    let doc = JsonComparison {
        old: runs.old.display_name(),
        new: runs.new.display_name(),
        counts: counts_object(&cmp.counts()),
        pairs: JsonPairs { cmp, runs },
        by_transformation: movement
            .iter()
            .map(|m| JsonMovement {
                transformation: &m.transformation,
                counts: counts_object(&m.counts),
                old: &m.old,
                new: &m.new,
                difference: &m.difference,
            })
            .collect(),
    };
    crate::core::json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}

fn status_move(f: &PairFacts) -> String {
    format!(
        "{} → {}",
        f.old_status.unwrap_or("—"),
        f.new_status.unwrap_or("—")
    )
}

fn dp_move(f: &PairFacts) -> String {
    let dp = |x: Option<f64>| x.map_or("—".to_string(), |v| format!("{v:+.3}"));
    format!("{} → {}", dp(f.dp_old), dp(f.dp_new))
}

/// The decision's category and where it stands: stale, carried (the pair
/// still fails), or the baseline's (the pair passes or is gone now).
fn decision_text(f: &PairFacts, change: ChangeKind) -> String {
    let still_fails = matches!(
        change,
        ChangeKind::NewFailures | ChangeKind::StillFailing | ChangeKind::StatusChanged
    );
    match (&f.category, f.category_from, f.category_stale) {
        (Some(c), _, true) => format!("{c} (stale: inputs changed)"),
        (Some(c), Some("old"), false) if still_fails => format!("{c} (carried)"),
        (Some(c), Some("old"), false) => format!("{c} (the baseline's)"),
        (Some(c), _, _) => c.clone(),
        (None, _, _) => String::new(),
    }
}

fn pair_name(f: &PairFacts) -> String {
    let rep = f.repetition.map(|r| format!(" #{r}")).unwrap_or_default();
    format!("{} / {}{rep}", f.case_id, f.variant_id)
}

/// The entries of one change, in order.
fn of_change(cmp: &Comparison, c: ChangeKind) -> impl Iterator<Item = Entry> + '_ {
    cmp.entries().filter(move |e| e.change == c)
}

/// A transformation's row: its name (as recorded), the rates then and
/// now, and the difference.
pub fn movement_cells(m: &Movement) -> [String; 4] {
    [
        m.transformation.clone(),
        cell(&m.old),
        cell(&m.new),
        m.difference.map_or("—".to_string(), |d| d.display()),
    ]
}

/// The one-line verdict on a transformation's difference.
pub fn verdict(m: &Movement) -> &'static str {
    match m.difference {
        Some(d) if d.high < 0.0 => "fewer failures",
        Some(d) if d.low > 0.0 => "more failures",
        Some(_) => "within noise",
        None => "",
    }
}

/// One pair as the text and Markdown list it: strings from the run as
/// recorded (each renderer makes them safe).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedPair {
    /// `case / variant #repetition`.
    pub pair: String,
    /// `fail → pass`.
    pub status: String,
    /// `-0.440 → +0.000`.
    pub dp: String,
    /// The decision and where it stands: `boundary (stale: inputs changed)`.
    pub decision: String,
}

/// The pairs of one change, at most [`LIST_MAX`], and how many there are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub change: ChangeKind,
    pub count: u64,
    pub pairs: Vec<ListedPair>,
}

/// The changes worth listing pair by pair ([`LISTED`]: new failures
/// first, then the fixed ones), each that has pairs.
pub fn listed(cmp: &Comparison, runs: Runs<'_>) -> Vec<Listed> {
    LISTED
        .iter()
        .filter(|&&c| cmp.count(c) > 0)
        .map(|&c| listed_of(cmp, runs, c))
        .collect()
}

/// The pairs of change `c`, at most [`LIST_MAX`].
pub fn listed_of(cmp: &Comparison, runs: Runs<'_>, c: ChangeKind) -> Listed {
    Listed {
        change: c,
        count: cmp.count(c),
        pairs: of_change(cmp, c)
            .take(LIST_MAX)
            .filter_map(|e| facts(cmp, runs, e))
            .map(|f| ListedPair {
                pair: pair_name(&f),
                status: status_move(&f),
                dp: dp_move(&f),
                decision: decision_text(&f, c),
            })
            .collect(),
    }
}

/// The comparison as aligned text.
pub fn write_text(out: &mut dyn Write, cmp: &Comparison, runs: Runs<'_>) -> io::Result<()> {
    writeln!(
        out,
        "Comparing {} ({}) with {} ({})\n",
        inert_line(&runs.old.display_name()),
        plural(runs.old.rows.len() as u64, "pair", "pairs"),
        inert_line(&runs.new.display_name()),
        plural(runs.new.rows.len() as u64, "pair", "pairs"),
    )?;
    for c in ChangeKind::ALL {
        writeln!(out, "  {:<16}{:>8}", c.name(), cmp.count(c))?;
    }
    let movement = cmp.movement(runs.old, runs.new);
    writeln!(
        out,
        "\nBy transformation: failures / pairs in OLD and NEW with Wilson 95% intervals;\nthe difference is NEW − OLD with Newcombe's 95% interval (negative: fewer failures).\n"
    )?;
    let head = ["transformation", "old", "new", "difference"];
    let rows: Vec<[String; 4]> = movement
        .iter()
        .map(|m| movement_cells(m).map(|c| inert_line(&c)))
        .collect();
    let mut w = head.map(width);
    for r in &rows {
        for (k, c) in r.iter().enumerate() {
            w[k] = w[k].max(width(c)).min(40);
        }
    }
    let line = |cells: [&str; 4], extra: &str| {
        format!(
            "  {}  {}  {}  {}  {extra}",
            fit(cells[0], w[0]),
            fit(cells[1], w[1]),
            fit(cells[2], w[2]),
            fit(cells[3], w[3])
        )
    };
    writeln!(out, "{}", line(head, "").trim_end())?;
    for (m, r) in movement.iter().zip(&rows) {
        let cells = [&*r[0], &*r[1], &*r[2], &*r[3]];
        writeln!(out, "{}", line(cells, verdict(m)).trim_end())?;
    }
    for l in listed(cmp, runs) {
        writeln!(out, "\n{} ({})", title(l.change), l.count)?;
        for p in &l.pairs {
            let line = format!(
                "  {}  {}  Δp {}  {}",
                inert_line(&p.pair),
                p.status,
                p.dp,
                inert_line(&p.decision)
            );
            writeln!(out, "{}", line.trim_end())?;
        }
        if l.count as usize > LIST_MAX {
            writeln!(
                out,
                "  … and {} more (--format json lists every pair)",
                l.count as usize - LIST_MAX
            )?;
        }
    }
    let stale = cmp
        .entries()
        .filter(|&e| cmp.decision(runs, e).is_some_and(|d| d.is_stale()))
        .count();
    let carry = cmp.carry_plan(runs).len();
    writeln!(out)?;
    if carry > 0 {
        writeln!(
            out,
            "{} from {} can be carried into {}'s journal: triage compare --carry, or B in triage NEW --baseline OLD.",
            plural(carry as u64, "decision", "decisions"),
            inert_line(&runs.old.display_name()),
            inert_line(&runs.new.display_name()),
        )?;
    }
    if stale > 0 {
        writeln!(
            out,
            "{} made on inputs that changed since {} stale and will not be carried.",
            plural(stale as u64, "decision", "decisions"),
            if stale == 1 { "is" } else { "are" }
        )?;
    }
    Ok(())
}
