//! Time the interactive operations on a real run, as `bench/compare.sh` reports them.
//!
//! ```text
//! cargo run --release --example ops_time -- bench/data/run-1m.jsonl
//! ```
//!
//! Loads the run fully into an app sized for a 200×50 terminal (as
//! `triage::tui::testing` does), shows every pair (not only failures), then
//! measures: a query keystroke (the query re-parsed and the view rebuilt for
//! each prefix of a typed query), a sort of all pairs on several keys, a frame
//! render into a ratatui `TestBackend`, and moving to the next pair with its
//! detail and diff loaded. Prints one `name value` line per figure, in ms,
//! plus the resident memory after loading.

use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use triage::tui::action::Action;
use triage::tui::app;
use triage::tui::keymap::Keymap;
use triage::tui::listing::{Sort, SortKey, sort_rows};
use triage::tui::style::Theme;
use triage::tui::{testing, ui};

const QUERY: &str = "status:fail family:state-noise dp<-0.05";

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v.get(i).copied().unwrap_or(f64::NAN)
}

fn proc_status(field: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .map(|l| l[field.len()..].trim().to_string())
        })
        .unwrap_or_else(|| "?".into())
}

fn main() {
    let Some(run) = std::env::args().nth(1) else {
        eprintln!("usage: ops_time RUN");
        std::process::exit(2);
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let journal = dir.path().join("journal.triage.jsonl");
    let theme = Theme::dark();
    let t = Instant::now();
    let mut app = testing::app_for_size(&[run.as_str()], &journal, "bench", 200, 50, &theme);
    println!("load_ms {:.0}", ms(t.elapsed()));
    println!("pairs {}", app.index.rows.len());
    println!("rss_after_load {}", proc_status("VmRSS:"));
    println!("rss_anon_after_load {}", proc_status("RssAnon:"));
    if app.view.len() < app.index.rows.len() {
        let work = app::update(&mut app, Action::ToggleAllPairs);
        testing::run_effects(&mut app, work, &theme);
    }
    println!("view {}", app.view.len());

    // A query typed one key at a time: each prefix re-filters every pair.
    let mut keys = Vec::new();
    for end in 1..=QUERY.len() {
        let t = Instant::now();
        let _ = app.set_query(&QUERY[..end]);
        keys.push(ms(t.elapsed()));
    }
    if let Some((i, worst)) = keys.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)) {
        println!("query_worst_prefix {:?} {worst:.1}", &QUERY[..=i]);
    }
    println!("query_keystroke_p50 {:.2}", pct(&mut keys.clone(), 0.5));
    println!("query_keystroke_max {:.2}", pct(&mut keys, 1.0));
    println!("query_matches {}", app.view.len());
    let _ = app.set_query("");

    // Sorting every pair on each key.
    let all: Vec<u32> = (0..app.index.rows.len() as u32).collect();
    let mut sorts = Vec::new();
    for key in [
        SortKey::Status,
        SortKey::Case,
        SortKey::Transformation,
        SortKey::Drift,
        SortKey::Margin,
        SortKey::Route,
    ] {
        let mut view = all.clone();
        let t = Instant::now();
        sort_rows(
            &app.index,
            &app.store,
            &mut view,
            Sort {
                key,
                descending: false,
            },
        );
        let d = ms(t.elapsed());
        println!("sort_{key:?}_ms {d:.1}");
        sorts.push(d);
    }
    println!("sort_max {:.1}", pct(&mut sorts, 1.0));

    // Frames at 200×50.
    let keymap = Keymap::load("default").expect("default keymap");
    let mut terminal = Terminal::new(TestBackend::new(200, 50)).expect("test terminal");
    let mut frames = Vec::new();
    for i in 0..400 {
        if i % 4 == 0 {
            let work = app::update(&mut app, Action::NextPair);
            testing::run_effects(&mut app, work, &theme);
        }
        let t = Instant::now();
        terminal
            .draw(|f| ui::render(f, &app, &keymap, &theme))
            .expect("draw");
        frames.push(ms(t.elapsed()));
    }
    println!("render_p50 {:.3}", pct(&mut frames.clone(), 0.5));
    println!("render_p99 {:.3}", pct(&mut frames, 0.99));

    // Next pair, with its line read again, parsed, derived and diffed.
    let mut next = Vec::new();
    for _ in 0..300 {
        let t = Instant::now();
        let work = app::update(&mut app, Action::NextPair);
        testing::run_effects(&mut app, work, &theme);
        next.push(ms(t.elapsed()));
    }
    println!("next_pair_p50 {:.3}", pct(&mut next.clone(), 0.5));
    println!("next_pair_p99 {:.3}", pct(&mut next, 0.99));
}
