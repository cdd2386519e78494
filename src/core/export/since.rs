//! The "Since the last run" section of the Markdown report, and the
//! Markdown of `triage compare --format markdown`: the counts of each
//! change, the new failures first, then the fixed pairs and the other
//! failing movements, and the failure rate per transformation with
//! Newcombe's interval (see [`crate::core::compare`]).

use std::io::{self, Write};

use super::{capped, md_escape};
use crate::core::compare::report::{LIST_MAX, listed, movement_cells, title, verdict};
use crate::core::compare::{ChangeKind, Comparison, Runs};
use crate::core::text::plural;

fn md_cell(s: &str) -> String {
    md_escape(&capped(s, 80))
}

/// The section: `heading` is its level (`##`); its lists are a level below.
pub fn write_section(
    out: &mut dyn Write,
    cmp: &Comparison,
    runs: Runs<'_>,
    heading: &str,
) -> io::Result<()> {
    writeln!(out, "{heading} Since the last run\n")?;
    writeln!(
        out,
        "Compared with {} ({}); pairs matched by case, variant and repetition.\n",
        md_cell(&runs.old.display_name()),
        plural(runs.old.rows.len() as u64, "pair", "pairs")
    )?;
    writeln!(out, "| Change | Pairs |\n| --- | ---: |")?;
    for c in ChangeKind::ALL {
        writeln!(out, "| `{}` | {} |", c.name(), cmp.count(c))?;
    }
    writeln!(out)?;
    for l in listed(cmp, runs) {
        writeln!(out, "{heading}# {} ({})\n", title(l.change), l.count)?;
        writeln!(
            out,
            "| Pair | Status | Δp | Decision |\n| --- | --- | --- | --- |"
        )?;
        for p in &l.pairs {
            writeln!(
                out,
                "| {} | {} | {} | {} |",
                md_cell(&p.pair),
                p.status,
                p.dp,
                md_cell(&p.decision)
            )?;
        }
        if l.count as usize > LIST_MAX {
            writeln!(
                out,
                "\n… and {} more (`triage compare --format json` lists every pair).",
                l.count as usize - LIST_MAX
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The failure rate per transformation in both runs and the difference.
pub fn write_movement(
    out: &mut dyn Write,
    cmp: &Comparison,
    runs: Runs<'_>,
    heading: &str,
) -> io::Result<()> {
    writeln!(out, "{heading} Failure rate by transformation\n")?;
    writeln!(
        out,
        "Failures out of pairs with their Wilson 95% intervals; the difference is NEW − OLD with Newcombe's 95% interval (negative: fewer failures).\n"
    )?;
    writeln!(
        out,
        "| Transformation | OLD | NEW | Difference | |\n| --- | --- | --- | --- | --- |"
    )?;
    for m in cmp.movement(runs.old, runs.new) {
        let [t, o, n, d] = movement_cells(&m);
        writeln!(
            out,
            "| {} | {o} | {n} | {d} | {} |",
            md_cell(&t),
            verdict(&m)
        )?;
    }
    writeln!(out)
}

/// The comparison as a Markdown document.
pub fn write_markdown(out: &mut dyn Write, cmp: &Comparison, runs: Runs<'_>) -> io::Result<()> {
    writeln!(
        out,
        "# {} compared with {}\n",
        md_cell(&runs.new.display_name()),
        md_cell(&runs.old.display_name())
    )?;
    write_section(out, cmp, runs, "##")?;
    write_movement(out, cmp, runs, "##")
}
