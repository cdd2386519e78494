//! The Markdown report: escaping a run's strings for Markdown, and the
//! report [`write`](super::write) writes in [`Format::Markdown`].

use super::*;

// ---------------------------------------------------------------------------
// Markdown: escaping

/// A run string made inert, on one line, and cut to `max` characters with `…`.
pub fn capped(s: &str, max: usize) -> String {
    let s = text::inert_line(s);
    if s.chars().count() > max {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    } else {
        s
    }
}

/// Escape text for Markdown, so that it renders as written (in a table cell too):
/// no emphasis, code, links, HTML, entities or cell breaks. Backslash escapes
/// of ASCII punctuation are CommonMark, so `\<` renders as `<`.
pub fn md_escape(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 8);
    let alnum = |i: Option<usize>| {
        i.and_then(|i| chars.get(i))
            .is_some_and(|c| c.is_alphanumeric())
    };
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\\' | '`' | '*' | '~' | '|' | '<' | '>' | '&' => {
                out.push('\\');
                out.push(c);
            }
            // An underscore inside a word cannot start or end emphasis.
            '_' if alnum(i.checked_sub(1)) && alnum(Some(i + 1)) => out.push('_'),
            '_' => out.push_str("\\_"),
            // Without a link reference definition (none can start a line here),
            // `[text]` is plain text; only `](` and `][` make a link, and what
            // follows the end of the string is not known here.
            ']' if matches!(chars.get(i + 1), None | Some('(' | '[')) => out.push_str("\\]"),
            _ => out.push(c),
        }
    }
    out
}

/// The most lines of a note the report quotes before "(N more lines)".
const NOTE_LINES: usize = 20;

/// A note: on the bullet's line when it has one line, else as a quote of its
/// lines under the bullet. Each line is inert, capped and escaped, and cannot
/// start a heading, a list, a code block or a nested quote.
fn md_note(out: &mut dyn Write, note: &str) -> io::Result<()> {
    let lines: Vec<&str> = note.trim_end().lines().collect();
    if let [one] = lines.as_slice() {
        return writeln!(
            out,
            "- **Note:** {}",
            md_escape(&capped(one.trim(), 4 * CAP))
        );
    }
    writeln!(out, "- **Note:**")?;
    for line in lines.iter().take(NOTE_LINES) {
        let line = md_line_start(&md_escape(&capped(line.trim(), 4 * CAP)));
        if line.is_empty() {
            writeln!(out, "  >")?;
        } else {
            writeln!(out, "  > {line}")?;
        }
    }
    if lines.len() > NOTE_LINES {
        let more = lines.len() - NOTE_LINES;
        writeln!(
            out,
            "  >\n  > *({})*",
            plural(more as u64, "more line", "more lines")
        )?;
    }
    Ok(())
}

/// Escape what would make an escaped line start a block: `#` (heading), `-`,
/// `+` or `=` (list, thematic break, setext underline), `1.` or `1)` (ordered list).
fn md_line_start(line: &str) -> String {
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    let starts_block = matches!(line.chars().next(), Some('#' | '-' | '+' | '='))
        || (digits > 0 && matches!(line[digits..].chars().next(), Some('.' | ')')));
    if !starts_block {
        return line.to_string();
    }
    if digits > 0 {
        format!("{}\\{}", &line[..digits], &line[digits..])
    } else {
        format!("\\{line}")
    }
}

/// A run string as Markdown text: inert, capped, escaped.
pub(super) fn md(s: &str) -> String {
    md_escape(&capped(s, CAP))
}

/// A run string as a Markdown code span (inert and capped); `table` escapes `|` for a cell.
pub(super) fn code(s: &str, table: bool) -> String {
    code_capped(s, CAP, table)
}

fn code_capped(s: &str, max: usize, table: bool) -> String {
    let s = capped(s, max);
    if s.trim().is_empty() {
        return if s.is_empty() {
            "*(empty)*".to_string()
        } else {
            format!("*({} blank)*", s.chars().count())
        };
    }
    if table && s.contains('|') {
        // A pipe in a code span inside a cell is fragile across renderers: use plain text.
        return md_escape(&s);
    }
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') || (s.starts_with(' ') && s.ends_with(' '))
    {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

pub(super) fn signed3(x: f64) -> String {
    let s = format!("{x:+.3}");
    if s == "-0.000" { "+0.000".into() } else { s }
}

/// "and 1 more edit", "and 3 more edits".
fn more(n: usize, one: &str, many: &str) -> String {
    format!("and {n} more {}", if n == 1 { one } else { many })
}

/// "Threshold-boundary sensitivity" → "threshold-boundary sensitivity", but "SSO bug" stays.
pub(super) fn lower_first(name: &str) -> String {
    let mut cs = name.chars();
    match (cs.next(), cs.next()) {
        (Some(a), Some(b)) if a.is_uppercase() && !b.is_uppercase() => {
            let mut s: String = a.to_lowercase().collect();
            s.push_str(&name[a.len_utf8()..]);
            s
        }
        _ => name.to_string(),
    }
}

// ---------------------------------------------------------------------------
// Markdown: the report

/// Distinct values of an interned field over all rows, sorted, with counts, and how many lack it.
fn distinct(index: &RunIndex, f: fn(&RunIndex, usize) -> Sym) -> (BTreeMap<&str, u64>, u64) {
    let mut m = BTreeMap::new();
    let mut missing = 0;
    for i in 0..index.rows.len() {
        match f(index, i) {
            NO_SYM => missing += 1,
            s => *m.entry(index.str(s)).or_insert(0) += 1,
        }
    }
    (m, missing)
}

fn versions_line(index: &RunIndex, f: fn(&RunIndex, usize) -> Sym) -> String {
    let (m, missing) = distinct(index, f);
    let mut parts: Vec<String> = if m.len() == 1 {
        m.keys().map(|v| code(v, false)).collect()
    } else {
        m.iter()
            .take(6)
            .map(|(v, n)| format!("{} ({})", code(v, false), plural(*n, "pair", "pairs")))
            .collect()
    };
    if m.len() > 6 {
        parts.push(format!("and {} more", m.len() - 6));
    }
    match (parts.is_empty(), missing) {
        (true, _) => "not recorded".to_string(),
        (false, 0) => parts.join(", "),
        (false, n) => format!(
            "{}; not recorded for {}",
            parts.join(", "),
            plural(n, "pair", "pairs")
        ),
    }
}

/// The group's name cell; "not recorded" and the like are ours, the rest is from the run.
fn group_cell(g: &GroupStats) -> String {
    if g.name == stats::NOT_RECORDED && g.pairs > 0 {
        "*not recorded*".to_string()
    } else {
        code(&g.name, true)
    }
}

/// The per-group statistics tables (shared by the report and `triage
/// summary --format markdown`): each of [`table::TABLES`], with its note.
pub(super) fn md_summary_table(out: &mut dyn Write, s: &Summary) -> io::Result<()> {
    let head = match s.by {
        GroupBy::Transformation => "Transformation",
        GroupBy::Family => "Family",
        GroupBy::Category => "Category",
        GroupBy::Case => "Case",
        GroupBy::Model => "Model",
    };
    for (i, t) in table::TABLES.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(out, "**{}.** {}\n", t.title, md_escape(t.note))?;
        let mut line = format!("| {head} |");
        let mut rule = String::from("| --- |");
        for c in t.columns {
            line.push_str(&format!(" {} |", md_escape(c.title)));
            rule.push_str(if c.rate { " --- |" } else { " ---: |" });
        }
        writeln!(out, "{line}\n{rule}")?;
        for g in table::rows(s) {
            let mut line = if std::ptr::eq(g, &s.overall) {
                "| **All pairs** |".to_string()
            } else {
                format!("| {} |", group_cell(g))
            };
            // The cells are ours (digits, `/`, `[`, `]`, `—`): nothing to escape.
            for c in t.columns {
                line.push_str(&format!(" {} |", (c.cell)(g)));
            }
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

pub(super) const RATES_NOTE: &str = "Each rate is written `k/n rate [low, high]`: k out of n, the observed proportion and its Wilson 95% interval; `—` means there was nothing to count. Each table's note says what its n counts.";

struct Sections<'a> {
    /// Category id → failures, in taxonomy order then unknown ids by name.
    classified: Vec<(&'a str, Vec<u32>)>,
    unclassified: Vec<u32>,
    others: Vec<u32>,
}

fn sections<'a>(input: &ExportInput<'a>, rows: &[u32]) -> Sections<'a> {
    let mut by_cat: BTreeMap<&'a str, Vec<u32>> = BTreeMap::new();
    let mut unclassified = Vec::new();
    let mut others = Vec::new();
    for &i in rows {
        let Some(row) = input.index.rows.get(i as usize) else {
            continue;
        };
        if !row.status().is_failure() {
            others.push(i);
        } else if let Some(c) = input.index.failure_category(input.store, row) {
            by_cat.entry(c).or_default().push(i);
        } else {
            unclassified.push(i);
        }
    }
    let mut classified = Vec::new();
    for c in &input.taxonomy.categories {
        if let Some((id, v)) = by_cat.remove_entry(c.id.as_str()) {
            classified.push((id, v));
        }
    }
    classified.extend(by_cat);
    Sections {
        classified,
        unclassified,
        others,
    }
}

/// The heading of one category: its name, or its id marked unknown.
fn category_title(taxonomy: &Taxonomy, id: &str) -> String {
    match taxonomy.by_id(id) {
        Some(c) => md_escape(&capped(&c.name, CAP)),
        None => format!("Unknown category {}", code(id, false)),
    }
}

fn route_phrase(d: &crate::core::derive::Derived) -> String {
    let name = |r: Option<Route>| r.map(Route::name).unwrap_or("no route");
    match (d.source_route, d.variant_route) {
        (None, None) => "routes not recorded".to_string(),
        (a, b) if a.is_some() && a == b => format!("{} → {} (kept)", name(a), name(b)),
        (a, b) if a.is_some() && b.is_some() => format!("{} → {} (route flip)", name(a), name(b)),
        (a, b) => format!("{} → {}", name(a), name(b)),
    }
}

/// A JSON value, compact, for one side of a change.
fn compact(v: &Value) -> String {
    match v {
        Value::String(x) => serde_json::to_string(x).unwrap_or_default(),
        other => other.to_string(),
    }
}

/// The changed words of two strings, as "`a` → `b`", "inserted `x`", "removed `y`".
fn word_edits(a: &str, b: &str) -> String {
    let edits = diff::changed_words(a, b);
    let mut parts: Vec<String> = edits
        .iter()
        .take(MAX_EDITS)
        .map(|(x, y)| match (x.is_empty(), y.is_empty()) {
            (false, false) => format!(
                "{} → {}",
                code_capped(x, 48, false),
                code_capped(y, 48, false)
            ),
            (true, false) => format!("inserted {}", code_capped(y, 48, false)),
            (false, true) => format!("removed {}", code_capped(x, 48, false)),
            (true, true) => "whitespace".to_string(),
        })
        .collect();
    if edits.len() > MAX_EDITS {
        parts.push(more(edits.len() - MAX_EDITS, "edit", "edits"));
    }
    if parts.is_empty() {
        "changed".to_string()
    } else {
        parts.join(", ")
    }
}

/// The sub-bullets of what the variant changed.
fn change_lines(lp: &LoadedPair) -> Vec<String> {
    let r = &lp.record;
    let d = &lp.derived;
    let mut out = Vec::new();
    let undeclared = |path: &str| {
        if d.changes.unexpected.iter().any(|u| u == path) {
            " **(undeclared)**"
        } else {
            ""
        }
    };
    if d.changes.question_changed {
        let edits = match (&r.source.question, &r.variant.question) {
            (Some(a), Some(b)) => word_edits(a, b),
            (Some(_), None) => "missing in the variant".to_string(),
            _ => "missing in the source".to_string(),
        };
        out.push(format!("`question`{}: {edits}", undeclared("question")));
    }
    let v = |x: &Value| code_capped(&compact(x), 60, false);
    for e in d.changes.state.iter().take(MAX_CHANGES) {
        let path = e.path.to_string();
        let flag = undeclared(&path);
        let p = code(&path, false);
        out.push(match &e.change {
            Change::Added { after } => format!("{p}{flag} added: {}", v(after)),
            Change::Removed { before } => format!("{p}{flag} removed (was {})", v(before)),
            Change::Changed {
                before: Value::String(x),
                after: Value::String(y),
            } if x.chars().count() + y.chars().count() > 60 => {
                format!("{p}{flag}: {}", word_edits(x, y))
            }
            Change::Changed { before, after } => format!("{p}{flag}: {} → {}", v(before), v(after)),
            Change::Reordered { .. } => format!("{p}: same entries in another order"),
            Change::Moved { before, after } => format!(
                "{p}{flag}: elements in another order ({} → {})",
                code_capped(&before.join(", "), 60, false),
                code_capped(&after.join(", "), 60, false)
            ),
        });
    }
    if d.changes.state.len() > MAX_CHANGES {
        out.push(more(
            d.changes.state.len() - MAX_CHANGES,
            "changed path",
            "changed paths",
        ));
    }
    out
}

fn state_recorded(lp: &LoadedPair) -> bool {
    let r = &lp.record;
    r.source.state.is_some()
        || r.variant.state.is_some()
        || r.source.question.is_some()
        || r.variant.question.is_some()
}

struct Md<'a, 'o> {
    input: ExportInput<'a>,
    out: &'o mut dyn Write,
    /// (case, variant) ids that occur more than once, so their headings name the repetition.
    repeated: HashSet<(Sym, Sym)>,
}

impl Md<'_, '_> {
    fn pair_block(&mut self, i: u32, unclassified: bool) -> io::Result<()> {
        let p = load(&self.input, i)?;
        let r = &p.lp.record;
        let d = &p.lp.derived;
        let mut title = format!(
            "### {} / {}",
            code(&r.case_id, false),
            code(&r.variant_id, false)
        );
        if self.repeated.contains(&(p.row.case, p.row.variant)) {
            if let Some(n) = r.repetition {
                title.push_str(&format!(" (repetition {n})"));
            }
            if let Some(m) = &r.model_id {
                title.push_str(&format!(" · {}", code(m, false)));
            }
        }
        let out = &mut *self.out;
        writeln!(out, "{title}\n")?;

        let mut facts = vec![format!("**{}**", status_label(d.status)), route_phrase(d)];
        if let Some(x) = d.dp {
            facts.push(format!("Δp {}", signed3(x)));
        }
        if let Some(x) = d.dc {
            facts.push(format!("Δc {}", signed3(x)));
        }
        if let Some(m) = d.source_margin {
            let mut s = format!("margin {m:.3}");
            if let Some(min) = r.minimum_boundary_margin {
                s.push_str(&format!(
                    " ({} the minimum {})",
                    if crate::core::derive::under_margin(m, min) {
                        "under"
                    } else {
                        "over"
                    },
                    crate::core::model::fmt_num(min)
                ));
            }
            facts.push(s);
        }
        writeln!(out, "- {}", facts.join(" · "))?;
        writeln!(out, "- **Why:** {}", md_escape(&capped(&d.why, 2 * CAP)))?;
        if unclassified {
            match &p.sug {
                Some(s) => {
                    let name = self
                        .input
                        .taxonomy
                        .by_id(s.category)
                        .map(|c| format!(" ({})", md_escape(&c.name)))
                        .unwrap_or_default();
                    writeln!(
                        out,
                        "- **Suggested:** {}{name}: {}",
                        code(s.category, false),
                        md(&s.reason)
                    )?;
                }
                None => writeln!(out, "- **Suggested:** none")?,
            }
        }
        let changes = change_lines(&p.lp);
        if changes.is_empty() {
            let what = if state_recorded(&p.lp) {
                "nothing (source and variant payloads are equal)"
            } else {
                "not recorded (no question or state in the record)"
            };
            writeln!(out, "- **Changed:** {what}")?;
        } else {
            writeln!(out, "- **Changed:**")?;
            for c in changes {
                writeln!(out, "  - {c}")?;
            }
        }
        if !r.reasons.is_empty() {
            let reasons: Vec<String> = r.reasons.iter().take(6).map(|x| md(x)).collect();
            let more = if r.reasons.len() > 6 {
                format!(" (and {} more)", r.reasons.len() - 6)
            } else {
                String::new()
            };
            writeln!(out, "- **Recorded reasons:** {}{more}", reasons.join(" · "))?;
        }
        if let Some(a) = p.ann {
            if let Some(n) = a.note.as_deref().filter(|n| !n.trim().is_empty()) {
                md_note(out, n)?;
            }
            let how = match (a.category.is_some(), a.source) {
                (false, _) => "",
                (true, AnnotationSource::Manual) => "",
                (true, AnnotationSource::Suggestion) => ", accepted suggestion",
            };
            if p.decisions.len() > 1 || p.resolution.is_some() {
                let said: Vec<String> = p
                    .decisions
                    .iter()
                    .map(|d| match &d.category {
                        Some(c) => format!("{} {}", md(&d.reviewer), code(c, false)),
                        None => format!("{} (a note only)", md(&d.reviewer)),
                    })
                    .collect();
                let stand = match (p.agreement, p.resolution) {
                    (Some(crate::core::annotations::Agreement::Resolved), Some(r)) => {
                        format!("resolved by {}, {}", md(&r.ann.reviewer), md(&r.ann.at))
                    }
                    (Some(crate::core::annotations::Agreement::Disagree), _) => {
                        "they disagree, with no resolution".to_string()
                    }
                    _ => "they agree".to_string(),
                };
                writeln!(out, "- **Reviewers:** {} ({stand})", said.join(" · "))?;
            } else {
                writeln!(
                    out,
                    "- **Reviewer:** {}, {}{how}",
                    md(&a.reviewer),
                    md(&a.at)
                )?;
            }
        }
        let mut from = vec![code(&format!("{}:{}", p.file, p.line), false)];
        if let Some((f, inferred)) = crate::core::derive::family_of(r, &d.transformation) {
            let inferred = if inferred { " (inferred)" } else { "" };
            from.push(format!("family {}{inferred}", code(f, false)));
        }
        let inferred = if d.transformation.inferred {
            " (inferred)"
        } else {
            ""
        };
        match transformation(&p.lp) {
            Some(t) => from.push(format!("transformation {}{inferred}", code(t, false))),
            None => from.push("transformation not recorded".to_string()),
        }
        if let Some(e) = &r.expectation {
            from.push(md(&e.describe()));
        }
        writeln!(out, "- **Where:** {}", from.join(" · "))?;
        writeln!(out)?;
        Ok(())
    }
}

/// Writes the Markdown report of `rows`: header, summaries, failures by category, other pairs, problems and conclusion.
pub(super) fn write_markdown(
    input: &ExportInput,
    rows: &[u32],
    opts: &ExportOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    let index = input.index;
    let all = all_rows(index);
    let summary = stats::summarize(index, &all, input.store, GroupBy::Transformation);
    let secs = sections(input, rows);
    let listed_failures = rows.len() - secs.others.len();

    let selection = selection_phrase(opts, rows.len(), secs.others.len());
    write_header(out, index, &summary, opts, &selection)?;
    write_transformation_summary(out, &summary)?;
    if let (Some(b), Some(runs)) = (input.baseline, input.runs()) {
        super::since::write_section(out, b.comparison, runs, "##")?;
    }

    // Categories × transformations.
    writeln!(out, "## Failures by category and transformation\n")?;
    md_category_table(out, input, &summary)?;

    // One section per category, then the unclassified.
    let mut w = Md {
        input: *input,
        out,
        repeated: repeated_pairs(index),
    };
    for (id, list) in &secs.classified {
        w.category_section(id, list)?;
    }
    if !secs.unclassified.is_empty() {
        w.unclassified_section(&secs.unclassified)?;
    }
    if listed_failures == 0 {
        writeln!(w.out, "No failures to list.\n")?;
    }
    if !secs.others.is_empty() {
        w.other_pairs(&secs.others)?;
    }
    let out = w.out;

    write_problems(out, index)?;
    write_conclusion(out, input, &all, &summary)
}

/// What the report lists below its header: every failure, a filter's matches, or all pairs.
fn selection_phrase(opts: &ExportOptions, listed: usize, others: usize) -> String {
    let listed_failures = listed - others;
    match (&opts.filter, opts.all) {
        (None, false) => format!("every failure ({listed_failures})"),
        (None, true) => format!(
            "all {} pairs: the {} by category, then the other {}",
            listed,
            plural(listed_failures as u64, "failure", "failures"),
            others
        ),
        (Some(q), false) => format!(
            "the {} matching {}",
            plural(listed_failures as u64, "failure", "failures"),
            code(&q.to_string(), false)
        ),
        (Some(q), true) => format!(
            "the {} matching {} ({} of them failures)",
            plural(listed as u64, "pair", "pairs"),
            code(&q.to_string(), false),
            listed_failures
        ),
    }
}

/// Writes the title and the bullet list of files, counts, problems, versions and selection.
fn write_header(
    out: &mut dyn Write,
    index: &RunIndex,
    summary: &Summary,
    opts: &ExportOptions,
    selection: &str,
) -> io::Result<()> {
    writeln!(out, "# Triage report: {}\n", md(&index.display_name()))?;
    writeln!(out, "- **Files:** {}", files_phrase(index))?;
    writeln!(out, "- **Read as:** {}", index.format_name())?;
    writeln!(
        out,
        "- **Pairs:** {} · **Failures:** {}{} · **Classified:** {} of {}",
        summary.pairs,
        summary.failures,
        failure_kinds(index),
        summary.classified,
        summary.failures
    )?;
    writeln!(out, "- **Problems:** {}", problems_phrase(index))?;
    writeln!(
        out,
        "- **Contract version:** {}",
        versions_line(index, RunIndex::contract)
    )?;
    writeln!(
        out,
        "- **State schema version:** {}",
        versions_line(index, RunIndex::schema)
    )?;
    writeln!(
        out,
        "- **Model:** {}",
        versions_line(index, RunIndex::model)
    )?;
    writeln!(out, "- **Listed below:** {selection}")?;
    if let Some(at) = &opts.generated_at {
        writeln!(out, "- **Generated:** {}", md(at))?;
    }
    writeln!(out)
}

/// The run's files, comma-separated; another tool's results say which tool.
fn files_phrase(index: &RunIndex) -> String {
    let files: Vec<String> = index
        .files
        .iter()
        .map(|f| {
            // Another tool's results say which tool, and that lines count converted records.
            if f.format == crate::core::formats::Format::Native {
                code(&f.display, false)
            } else {
                format!(
                    "{} ({} results; line numbers count converted records)",
                    code(&f.display, false),
                    f.format.name()
                )
            }
        })
        .collect();
    files.join(", ")
}

/// The kinds of failure in the run, as " (2 failed expectations, 1 service error)", or "".
fn failure_kinds(index: &RunIndex) -> String {
    let count = |s: Status| index.rows.iter().filter(|r| r.status() == s).count() as u64;
    let mut kinds = Vec::new();
    for (s, one, many) in [
        (Status::Fail, "failed expectation", "failed expectations"),
        (
            Status::Boundary,
            "boundary observation",
            "boundary observations",
        ),
        (Status::ServiceError, "service error", "service errors"),
        (Status::Invalid, "invalid pair", "invalid pairs"),
    ] {
        let n = count(s);
        if n > 0 {
            kinds.push(plural(n, one, many));
        }
    }
    if kinds.is_empty() {
        String::new()
    } else {
        format!(" ({})", kinds.join(", "))
    }
}

/// The header's count of unreadable lines and field warnings, or "none".
fn problems_phrase(index: &RunIndex) -> String {
    let counts = index.problem_counts();
    if counts.total() == 0 {
        return "none".to_string();
    }
    let skipped = counts.skipped();
    let cases = counts.get(crate::core::problem::ProblemKind::Inconsistent);
    let warned = counts.total() - skipped - cases;
    let mut v = Vec::new();
    if skipped > 0 {
        v.push(plural(skipped, "unreadable line", "unreadable lines"));
    }
    if warned > 0 {
        v.push(plural(warned, "field warning", "field warnings"));
    }
    if cases > 0 {
        v.push(plural(cases, "case warning", "case warnings"));
    }
    format!("{}, listed under Problems", v.join(", "))
}

/// Writes the summary per transformation, over every pair of the run.
fn write_transformation_summary(out: &mut dyn Write, summary: &Summary) -> io::Result<()> {
    writeln!(out, "## Summary by transformation\n")?;
    writeln!(
        out,
        "Over all {} of the run, not only those listed below. {RATES_NOTE}\n",
        plural(summary.pairs, "pair", "pairs")
    )?;
    md_summary_table(out, summary)?;
    writeln!(out)
}

/// The (case, variant) ids that occur more than once in the run.
fn repeated_pairs(index: &RunIndex) -> HashSet<(Sym, Sym)> {
    let mut seen = HashSet::new();
    let mut twice = HashSet::new();
    for r in &index.rows {
        if !seen.insert((r.case, r.variant)) {
            twice.insert((r.case, r.variant));
        }
    }
    twice
}

impl Md<'_, '_> {
    /// Writes one category's heading, its description and its failures.
    fn category_section(&mut self, id: &str, list: &[u32]) -> io::Result<()> {
        let taxonomy = self.input.taxonomy;
        let out = &mut *self.out;
        writeln!(
            out,
            "## {} ({})\n",
            category_title(taxonomy, id),
            list.len()
        )?;
        match taxonomy.by_id(id) {
            Some(c) if !c.description.trim().is_empty() => writeln!(
                out,
                "{}: {}.\n",
                code(id, false),
                md_escape(&capped(c.description.trim_end_matches('.'), 2 * CAP))
            )?,
            Some(_) => {}
            None => writeln!(
                out,
                "{} is not in the taxonomy in effect; it is listed as the reviewer recorded it.\n",
                code(id, false)
            )?,
        }
        for &i in list {
            self.pair_block(i, false)?;
        }
        Ok(())
    }

    /// Writes the section of failures no reviewer has classified, each with its suggestion.
    fn unclassified_section(&mut self, list: &[u32]) -> io::Result<()> {
        let out = &mut *self.out;
        writeln!(out, "## Unclassified failures ({})\n", list.len())?;
        writeln!(
            out,
            "No reviewer has given these a category yet, or their reviewers disagree and nobody resolved it. Each shows the category triage suggests and why.\n"
        )?;
        for &i in list {
            self.pair_block(i, true)?;
        }
        Ok(())
    }

    /// Writes the table of listed pairs that are not failures.
    fn other_pairs(&mut self, others: &[u32]) -> io::Result<()> {
        let index = self.input.index;
        let out = &mut *self.out;
        writeln!(out, "## Other pairs ({})\n", others.len())?;
        writeln!(
            out,
            "| Pair | Status | Transformation | Route | Δp | Line |"
        )?;
        writeln!(out, "| --- | --- | --- | --- | ---: | --- |")?;
        for &i in others {
            let Some(r) = index.rows.get(i as usize) else {
                continue;
            };
            let name = |r: Option<Route>| r.map(Route::name).unwrap_or("—");
            let route = if r.source_route().is_none() && r.variant_route().is_none() {
                "—".to_string()
            } else {
                format!("{} → {}", name(r.source_route()), name(r.variant_route()))
            };
            let dp = if r.dp.is_finite() {
                signed3(f64::from(r.dp))
            } else {
                "—".into()
            };
            let rep = match index.repetition(i as usize) {
                Some(n) if self.repeated.contains(&(r.case, r.variant)) => {
                    format!(" (repetition {n})")
                }
                _ => String::new(),
            };
            writeln!(
                out,
                "| {} / {}{rep} | {} | {} | {route} | {dp} | {} |",
                code(index.str(r.case), true),
                code(index.str(r.variant), true),
                status_label(r.status()),
                match index.str(index.transformation(i as usize)) {
                    crate::core::derive::NOT_RECORDED => "*not recorded*".to_string(),
                    t => code(t, true),
                },
                code(
                    &format!("{}:{}", file_name(index, r), index.loc(i as usize).line),
                    true
                ),
            )?;
        }
        writeln!(out)
    }
}

/// Writes the Problems section: the run's problems (at most [`MAX_PROBLEMS`]), or that there were none.
fn write_problems(out: &mut dyn Write, index: &RunIndex) -> io::Result<()> {
    writeln!(out, "## Problems\n")?;
    if index.problem_total() == 0 {
        return writeln!(out, "None: every line of the run was read.\n");
    }
    writeln!(out, "| Where | Problem | Detail |")?;
    writeln!(out, "| --- | --- | --- |")?;
    for p in index.problems.iter().take(MAX_PROBLEMS) {
        writeln!(
            out,
            "| {} | {} | {} |",
            code(&format!("{}:{}", p.file, p.line), true),
            p.kind.label(),
            md(&p.message)
        )?;
    }
    let listed = index.problems.len().min(MAX_PROBLEMS);
    let total = index.problem_total();
    if total > listed {
        let lists = if index.unlisted.total() > 0 {
            format!(
                "`triage RUN` lists the first {} of each kind (`p`)",
                crate::core::problem::KEPT_PER_KIND
            )
        } else {
            "`triage RUN` lists them all (`p`)".to_string()
        };
        writeln!(out, "\n…and {} more; {lists}.", total - listed)?;
    }
    writeln!(out)
}

/// Writes the Conclusion section: the sentences from the numbers, then the triage so far.
fn write_conclusion(
    out: &mut dyn Write,
    input: &ExportInput,
    all: &[u32],
    summary: &Summary,
) -> io::Result<()> {
    writeln!(out, "## Conclusion\n")?;
    for sentence in stats::conclusion(input.index, all, summary) {
        writeln!(out, "- {}", md_escape(&sentence))?;
    }
    writeln!(out)?;
    let triage = triage_sentences(input, summary);
    if !triage.is_empty() {
        writeln!(out, "Triage so far:\n")?;
        for s in triage {
            writeln!(out, "- {s}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Failures per reviewer category over the whole run, most first, in Markdown.
fn triage_sentences(input: &ExportInput, summary: &Summary) -> Vec<String> {
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &input.index.rows {
        if let Some(c) = input.index.failure_category(input.store, r) {
            *counts.entry(c).or_default() += 1;
        }
    }
    let order = |id: &str| input.taxonomy.position(id).unwrap_or(usize::MAX);
    let mut v: Vec<(&str, u64)> = counts.into_iter().collect();
    v.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| order(a.0).cmp(&order(b.0)))
            .then_with(|| a.0.cmp(b.0))
    });
    let total = summary.failures;
    v.into_iter()
        .map(|(id, n)| {
            let what = match input.taxonomy.by_id(id) {
                Some(c) => format!(
                    "{} ({})",
                    md_escape(&lower_first(&capped(&c.name, CAP))),
                    code(id, false)
                ),
                None => format!("{} (not in the taxonomy)", code(id, false)),
            };
            format!(
                "{n} of {} {} {what}.",
                plural(total, "failure", "failures"),
                if n == 1 { "is" } else { "are" }
            )
        })
        .collect()
}

/// Transformations (rows) × categories (columns) of the failures of the whole run.
fn md_category_table(out: &mut dyn Write, input: &ExportInput, s: &Summary) -> io::Result<()> {
    if s.categories_by_transformation.is_empty() {
        writeln!(out, "No failures.\n")?;
        return Ok(());
    }
    let present: HashSet<&str> = s
        .categories_by_transformation
        .iter()
        .flat_map(|(_, cats)| cats.iter().map(|(c, _)| c.as_str()))
        .collect();
    let mut cols: Vec<&str> = input
        .taxonomy
        .categories
        .iter()
        .map(|c| c.id.as_str())
        .filter(|id| present.contains(id))
        .collect();
    let mut unknown: Vec<&str> = present
        .iter()
        .copied()
        .filter(|c| *c != stats::UNCLASSIFIED && input.taxonomy.by_id(c).is_none())
        .collect();
    unknown.sort_unstable();
    cols.extend(unknown);
    let has_unclassified = present.contains(stats::UNCLASSIFIED);
    let mut head = String::from("| Transformation |");
    let mut rule = String::from("| --- |");
    for c in &cols {
        head.push_str(&format!(" {} |", code(c, true)));
        rule.push_str(" ---: |");
    }
    if has_unclassified {
        head.push_str(" *unclassified* |");
        rule.push_str(" ---: |");
    }
    head.push_str(" Total |");
    rule.push_str(" ---: |");
    writeln!(out, "{head}\n{rule}")?;
    let mut totals = vec![0u64; cols.len() + 1];
    let cell = |n: u64| {
        if n == 0 {
            "·".to_string()
        } else {
            n.to_string()
        }
    };
    for (t, cats) in &s.categories_by_transformation {
        let get = |id: &str| cats.iter().find(|(c, _)| c == id).map(|x| x.1).unwrap_or(0);
        let name = if t == stats::NOT_RECORDED {
            "*not recorded*".to_string()
        } else {
            code(t, true)
        };
        let mut line = format!("| {name} |");
        for (k, c) in cols.iter().enumerate() {
            let n = get(c);
            totals[k] += n;
            line.push_str(&format!(" {} |", cell(n)));
        }
        if has_unclassified {
            let n = get(stats::UNCLASSIFIED);
            totals[cols.len()] += n;
            line.push_str(&format!(" {} |", cell(n)));
        }
        let total: u64 = cats.iter().map(|x| x.1).sum();
        line.push_str(&format!(" **{total}** |"));
        writeln!(out, "{line}")?;
    }
    let mut line = String::from("| **Total** |");
    for n in &totals[..cols.len()] {
        line.push_str(&format!(" **{n}** |"));
    }
    if has_unclassified {
        line.push_str(&format!(" **{}** |", totals[cols.len()]));
    }
    line.push_str(&format!(" **{}** |", s.failures));
    writeln!(out, "{line}\n")?;
    let names: Vec<String> = cols
        .iter()
        .filter_map(|id| {
            input
                .taxonomy
                .by_id(id)
                .map(|c| format!("{} {}", code(id, false), md_escape(&lower_first(&c.name))))
        })
        .collect();
    if !names.is_empty() {
        writeln!(
            out,
            "The reviewers' categories: {}. Counts are over every failure of the run.\n",
            names.join(", ")
        )?;
    }
    Ok(())
}
