//! The summary screen: statistics of the pairs in view, with intervals.
//!
//! Per transformation and per family, the tables `triage summary` prints
//! ([`table::TABLES`]: pairs and failures, the model metrics with their
//! Wilson 95% intervals, drift and latency); then the route transition
//! matrix, a |Δp| histogram, categories by transformation, triage progress,
//! per-case rates and repeated trials, and a conclusion in plain words. All
//! numbers come from `core::stats`, computed when the screen opens
//! ([`SummaryView`]); this module only lays them out.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::core::compare::{ChangeKind, Movement};
use crate::core::stats::{GroupStats, Rate, Summary, table};
use crate::core::text;

use crate::tui::action::Action;
use crate::tui::app::{App, Effect, Overlay};
use crate::tui::doc::wrap;
use crate::tui::style::Theme;

use super::scrolled;

/// The movement since the baseline run (`--baseline`), over both whole runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Since {
    /// The baseline run's name.
    pub old: String,
    /// Pairs of each change, in [`ChangeKind::ALL`] order.
    pub counts: [u64; 8],
    pub by_transformation: Vec<Movement>,
    /// The pairs only the baseline has, which no query of this run shows.
    pub removed: crate::core::compare::report::Listed,
}

/// What the summary screen shows, computed when it opens.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryView {
    pub since: Option<Since>,
    pub by_transformation: crate::core::stats::Summary,
    pub by_family: crate::core::stats::Summary,
    pub conclusion: Vec<String>,
    /// The query it covers, as text.
    pub query: Option<String>,
    /// Cohen's kappa of every pair of reviewers, then of each reviewer
    /// against the suggestions, over the pairs both decided.
    pub agreement: Vec<crate::core::agreement::Report>,
    /// Blind review: the categories counted are only those of the pairs
    /// this reviewer decided, and the reviewers' agreement is not shown.
    pub blind: bool,
    pub scroll: u16,
    /// Columns scrolled sideways, for tables wider than the screen.
    pub hscroll: u16,
}

/// How far one sideways step scrolls.
const HSTEP: u16 = 8;

impl Eq for SummaryView {}

/// Apply an action while the summary is open: scroll, close.
pub fn handle(app: &mut App, action: Action) -> Vec<Effect> {
    let page = app.viewport.detail_rows.max(3) as i32;
    let Overlay::Summary(v) = &mut app.overlay else {
        return vec![];
    };
    if let Some(next) = scrolled(action, v.scroll, page) {
        v.scroll = next;
        return vec![];
    }
    match action {
        // Clamped to the widest line when drawn.
        Action::ScrollLeft => v.hscroll = v.hscroll.saturating_sub(HSTEP),
        Action::ScrollRight => v.hscroll = v.hscroll.saturating_add(HSTEP).min(2000),
        Action::Close | Action::Cancel | Action::ShowSummary => app.overlay = Overlay::None,
        Action::Quit => app.request_quit(),
        _ => {}
    }
    vec![]
}

fn rate(r: &Option<Rate>) -> String {
    table::cell(r)
}

fn cell(s: &str, w: usize) -> String {
    let cut = text::truncate_cols(s, w);
    format!("{cut}{}", " ".repeat(w.saturating_sub(text::width(&cut))))
}

fn rcell(s: &str, w: usize) -> String {
    format!("{}{s}", " ".repeat(w.saturating_sub(text::width(s))))
}

/// The per-group tables of one grouping ([`table::TABLES`]: pairs, model
/// metrics, drift and latency), each with a row per group, one for every
/// pair, and its note: the same cells as `triage summary` and the report.
fn tables(title: &str, s: &Summary, t: &Theme, width: usize, out: &mut Vec<Line<'static>>) {
    let name_w = table::rows(s)
        .map(|g| text::width(&text::inert_line(&g.name)))
        .max()
        .unwrap_or(8)
        .clamp(8, 28);
    for (i, tab) in table::TABLES.iter().enumerate() {
        if i > 0 {
            out.push(Line::default());
        }
        out.push(Line::from(Span::styled(
            format!("{title} · {}", tab.title),
            t.heading,
        )));
        let body: Vec<(&GroupStats, Vec<String>)> = table::rows(s)
            .map(|g| (g, tab.columns.iter().map(|c| (c.cell)(g)).collect()))
            .collect();
        let widths = table::widths(tab, body.iter().map(|(_, cells)| cells));
        let mut head = cell("", name_w);
        for (c, w) in tab.columns.iter().zip(&widths) {
            head.push_str("  ");
            head.push_str(&if c.rate {
                cell(c.head, *w)
            } else {
                rcell(c.head, *w)
            });
        }
        out.push(Line::from(Span::styled(head, t.dim)));
        for (g, cells) in &body {
            let strong = std::ptr::eq(*g, &s.overall);
            let st = if strong { t.title } else { t.base };
            let mut l = vec![Span::styled(cell(&text::inert_line(&g.name), name_w), st)];
            for ((c, w), v) in tab.columns.iter().zip(&widths).zip(cells) {
                l.push(Span::styled("  ", st));
                l.push(Span::styled(
                    if c.rate { cell(v, *w) } else { rcell(v, *w) },
                    st,
                ));
            }
            out.push(Line::from(l));
        }
        out.extend(wrap(
            vec![Span::styled(format!("  {}", tab.note), t.dim)],
            width,
            2,
        ));
    }
}

/// Reviewer agreement: one line per pair of raters, kappa with its interval.
fn agreement_lines(v: &SummaryView, t: &Theme, width: usize, out: &mut Vec<Line<'static>>) {
    use crate::core::agreement::kappa_text;
    out.push(Line::from(Span::styled(
        "Reviewer agreement (Cohen's kappa, 95% interval; d jumps to a disagreement)",
        t.heading,
    )));
    let names: Vec<String> = v
        .agreement
        .iter()
        .map(|r| format!("{} vs {}", text::inert_line(&r.a), text::inert_line(&r.b)))
        .collect();
    let w = names.iter().map(|n| text::width(n)).max().unwrap_or(0);
    for (name, r) in names.iter().zip(&v.agreement) {
        let style = match r.kappa {
            // An interval of no width proves nothing either way.
            Some(k) if k.degenerate() => t.warn,
            Some(k) if k.low >= 0.7 => t.pass,
            Some(k) if k.value < 0.4 => t.fail,
            Some(_) => t.warn,
            None => t.dim,
        };
        let mut spans = vec![
            Span::styled(format!("  {}", cell(name, w)), t.base),
            Span::styled(format!("  κ {}", kappa_text(r)), style),
            Span::styled(
                format!("  over {}", text::plural(r.pairs, "pair", "pairs")),
                t.dim,
            ),
        ];
        if r.pairs > 0 {
            spans.push(Span::styled(
                format!(" · observed {:.3} · chance {:.3}", r.observed, r.chance),
                t.dim,
            ));
        }
        out.extend(wrap(spans, width, 6));
    }
    out.extend(wrap(
        vec![Span::styled(
            "  Seed 003 asks an automated judge for kappa ≥ 0.70 against senior engineers before it gates releases: triage check --min-kappa 0.7 --between A,B gates on the interval's lower bound.",
            t.dim,
        )],
        width,
        4,
    ));
}

/// The movement since the baseline: the changes, then each
/// transformation's failure rate in both runs and the Newcombe interval of
/// the difference, with a word on whether it is more than noise.
fn since_lines(v: &Since, t: &Theme, width: usize, out: &mut Vec<Line<'static>>) {
    out.push(Line::from(Span::styled(
        format!("Since the baseline · {}", text::inert_line(&v.old)),
        t.heading,
    )));
    let mut l = Vec::new();
    for c in ChangeKind::ALL {
        if !l.is_empty() {
            l.push(Span::styled(" · ", t.dim));
        }
        let n = v.counts[c as usize];
        let style = match c {
            ChangeKind::NewFailures if n > 0 => t.fail,
            ChangeKind::Fixed if n > 0 => t.pass,
            _ => t.base,
        };
        l.push(Span::styled(format!("{} {n}", c.name()), style));
    }
    out.extend(wrap(l, width, 2));
    let rows: Vec<[String; 4]> = v
        .by_transformation
        .iter()
        .map(|m| {
            [
                text::inert_line(&m.transformation),
                rate(&m.old),
                rate(&m.new),
                m.difference.map_or("—".to_string(), |d| d.display()),
            ]
        })
        .collect();
    let head = [
        "transformation",
        "failures then",
        "failures now",
        "now − then",
    ];
    let mut w = head.map(text::width);
    for r in &rows {
        for (k, c) in r.iter().enumerate() {
            w[k] = w[k].max(text::width(c)).min(28);
        }
    }
    out.push(Line::from(Span::styled(
        format!(
            "{}  {}  {}  {}",
            cell(head[0], w[0]),
            cell(head[1], w[1]),
            cell(head[2], w[2]),
            cell(head[3], w[3])
        ),
        t.dim,
    )));
    for (m, r) in v.by_transformation.iter().zip(&rows) {
        let (word, style) = match m.difference {
            Some(d) if d.high < 0.0 => ("fewer failures", t.pass),
            Some(d) if d.low > 0.0 => ("more failures", t.fail),
            Some(_) => ("within noise", t.dim),
            None => ("", t.dim),
        };
        out.push(Line::from(vec![
            Span::styled(
                format!(
                    "{}  {}  {}  {}  ",
                    cell(&r[0], w[0]),
                    cell(&r[1], w[1]),
                    cell(&r[2], w[2]),
                    cell(&r[3], w[3])
                ),
                t.base,
            ),
            Span::styled(word, style),
        ]));
    }
    out.extend(wrap(
        vec![Span::styled(
            "  Failures out of all pairs of each run with Wilson 95% intervals; the difference has Newcombe's hybrid score 95% interval: an interval that holds 0 is within noise.",
            t.dim,
        )],
        width,
        2,
    ));
    let removed = &v.removed;
    if removed.count > 0 {
        out.push(Line::from(Span::styled(
            format!(
                "Removed: {} only the baseline has (no query of this run shows them)",
                text::plural(removed.count, "pair", "pairs")
            ),
            t.heading,
        )));
        for p in &removed.pairs {
            out.extend(wrap(
                vec![
                    Span::styled(format!("  {}", text::inert_line(&p.pair)), t.base),
                    Span::styled(
                        format!(
                            "  was {} · Δp {}",
                            p.status.trim_end_matches(" → —"),
                            p.dp.trim_end_matches(" → —")
                        ),
                        t.dim,
                    ),
                    Span::styled(format!("  {}", text::inert_line(&p.decision)), t.dim),
                ],
                width,
                4,
            ));
        }
        let more = removed.count.saturating_sub(removed.pairs.len() as u64);
        if more > 0 {
            out.push(Line::from(Span::styled(
                format!("  and {more} more: triage compare lists them all (--format json)"),
                t.dim,
            )));
        }
    }
}

/// Every line of the summary, its notes and sentences wrapped to `width`.
pub fn lines(v: &SummaryView, t: &Theme, width: usize) -> Vec<Line<'static>> {
    let s = &v.by_transformation;
    let mut out = Vec::new();
    let scope = match &v.query {
        Some(q) => format!("pairs matching /{}", text::inert_line(q)),
        None => "every pair".to_string(),
    };
    out.push(Line::from(vec![
        Span::styled(format!("{scope}: "), t.dim),
        Span::styled(
            format!(
                "{} pairs · {} failures · {} problems · {} classified",
                s.pairs, s.failures, s.problems, s.classified
            ),
            t.title,
        ),
    ]));
    out.extend(wrap(
        vec![Span::styled(
            "Rates are successes/trials, the rate and its Wilson 95% interval; each table's note says what it counts. Invalid pairs and service errors are left out of the model metrics.",
            t.dim,
        )],
        width,
        0,
    ));
    if v.blind {
        out.extend(wrap(
            vec![Span::styled(
                "Blind review: classified pairs, categories and notes count only the pairs you have decided; the other reviewers' decisions on the rest, the suggestions and the reviewers' agreement (kappa) stay hidden until you open the run without --blind.",
                t.warn,
            )],
            width,
            0,
        ));
    }
    out.push(Line::default());
    if let Some(since) = &v.since {
        since_lines(since, t, width, &mut out);
        out.push(Line::default());
    }
    if !v.agreement.is_empty() {
        agreement_lines(v, t, width, &mut out);
        out.push(Line::default());
    }
    tables("Per transformation", s, t, width, &mut out);
    out.push(Line::default());
    tables("Per family", &v.by_family, t, width, &mut out);
    out.push(Line::default());

    // Route transitions.
    out.push(Line::from(Span::styled(
        "Route transitions of the model pairs (source ↓ × variant →)",
        t.heading,
    )));
    let names = ["pass", "review", "action"];
    out.push(Line::from(Span::styled(
        format!("{:>10}{:>9}{:>9}{:>9}", "", names[0], names[1], names[2]),
        t.dim,
    )));
    for (i, name) in names.iter().enumerate() {
        let mut l = vec![Span::styled(format!("{name:>10}"), t.dim)];
        for j in 0..3 {
            let n = s.route_matrix[i][j];
            let style = if i == j {
                t.base
            } else if n > 0 {
                t.fail
            } else {
                t.dim
            };
            l.push(Span::styled(format!("{n:>9}"), style));
        }
        out.push(Line::from(l));
    }
    out.push(Line::default());

    // Histogram of |Δp|.
    out.push(Line::from(Span::styled(
        "|Δp| histogram of the model pairs",
        t.heading,
    )));
    let max = s
        .dp_histogram
        .iter()
        .map(|b| b.count)
        .max()
        .unwrap_or(0)
        .max(1);
    for b in &s.dp_histogram {
        let label = match b.high {
            Some(h) => format!("{:.2}–{:.2}", b.low, h),
            None => format!("≥ {:.2}", b.low),
        };
        let bar = (b.count as f64 / max as f64 * 40.0).round() as usize;
        out.push(Line::from(vec![
            Span::styled(format!("  {label:<11}"), t.dim),
            Span::styled("█".repeat(bar), t.key),
            Span::styled(format!(" {}", b.count), t.base),
        ]));
    }
    out.push(Line::default());

    // Categories by transformation.
    out.push(Line::from(Span::styled(
        "Failures by category and transformation",
        t.heading,
    )));
    for (tr, cats) in &s.categories_by_transformation {
        let mut l = vec![Span::styled(
            format!("  {}: ", text::inert_line(tr)),
            t.base,
        )];
        for (i, (c, n)) in cats.iter().enumerate() {
            if i > 0 {
                l.push(Span::styled(", ", t.dim));
            }
            l.push(Span::styled(
                format!("{} {n}", text::inert_line(c)),
                t.category,
            ));
        }
        out.push(Line::from(l));
    }
    out.push(Line::default());

    // Triage progress.
    let done = s.classified;
    let total = s.failures.max(1);
    let w = 40usize;
    let filled = ((done as f64 / total as f64) * w as f64).round() as usize;
    out.push(Line::from(vec![
        Span::styled("Triage progress  ", t.heading),
        Span::styled("█".repeat(filled.min(w)), t.pass),
        Span::styled("░".repeat(w - filled.min(w)), t.dim),
        Span::styled(
            format!("  {done}/{} failures classified", s.failures),
            t.base,
        ),
    ]));
    out.push(Line::default());

    // Per case and repeated trials.
    let c = &s.case_level;
    out.push(Line::from(Span::styled("Per source case", t.heading)));
    out.extend(wrap(
        vec![Span::styled(
            format!(
            "  {} cases, {} of them test the model · an expectation broke in {} · rate {} · with a route flip {} · rate {}",
            c.cases,
            c.model_cases,
            c.failing_cases,
            rate(&c.failing_case_rate),
            c.flipping_cases,
            rate(&c.flipping_case_rate)
        ),
            t.base,
        )],
        width,
        4,
    ));
    out.extend(wrap(
        vec![Span::styled(
            "  Variants of one case are correlated; the per-case rate does not count them as independent evidence.",
            t.dim,
        )],
        width,
        4,
    ));
    if let Some(r) = &s.repetition {
        out.extend(wrap(
            vec![Span::styled(
                format!(
                    "  Repeated trials: {} pairs record a repetition (up to {}); {} pair ids repeat, {} disagree with themselves.",
                    r.pairs_with_repetition, r.max_repetition, r.repeated_pair_ids, r.inconsistent_pair_ids
                ),
                t.warn,
            )],
            width,
            4,
        ));
    }
    out.push(Line::default());
    out.push(Line::from(Span::styled("Conclusion", t.heading)));
    for sentence in &v.conclusion {
        out.extend(wrap(
            vec![Span::styled(
                format!("  {}", text::inert_line(sentence)),
                t.base,
            )],
            width,
            4,
        ));
    }
    out
}

/// Draw the summary over the whole screen but the status bar. Text wraps
/// to the width; a table wider than the screen scrolls sideways (←/→), and
/// the bottom line says so and how far it is scrolled.
pub fn draw(f: &mut Frame, area: Rect, v: &SummaryView, t: &Theme) {
    let r = Rect {
        height: area.height.saturating_sub(1),
        ..area
    };
    f.render_widget(Clear, r);
    let inner_w = r.width.saturating_sub(2);
    let all = lines(v, t, inner_w as usize);
    let widest = all.iter().map(Line::width).max().unwrap_or(0) as u16;
    let hmax = widest.saturating_sub(inner_w);
    let h = v.hscroll.min(hmax);
    let hint = if hmax == 0 {
        " j/k scroll · esc closes ".to_string()
    } else if h == 0 {
        " j/k scroll · ←/→ scroll sideways: the tables go on → · esc closes ".to_string()
    } else {
        format!(
            " j/k scroll · ←/→ scroll sideways (from column {}) · esc closes ",
            h + 1
        )
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.border_focused)
        .title(Span::styled(" summary ", t.title))
        .title_bottom(Line::from(Span::styled(hint, t.dim)));
    let inner = block.inner(r);
    f.render_widget(block, r);
    let max = all.len().saturating_sub(inner.height as usize);
    let s = (v.scroll as usize).min(max);
    f.render_widget(
        Paragraph::new(all.into_iter().skip(s).collect::<Vec<_>>()).scroll((0, h)),
        inner,
    );
}
